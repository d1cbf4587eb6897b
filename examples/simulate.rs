//! Replays the bundled production GPU cluster trace (Alibaba `openb`, the USENIX ATC'23
//! FGD paper's) through schedkit under each GPU-sharing policy, and reports how much GPU
//! capacity each one allocates before fragmentation stops it.
//!
//! ```text
//! cargo run --release --example simulate                  # every policy, seed 42
//! cargo run --release --example simulate -- --seeds 42-51 --plot alloc.svg
//! cargo run --release --example simulate -- --help
//! ```
//!
//! A thin command line over [`schedkit::sim`], which runs the policies, summarises the
//! results and draws the plot. No CLI or progress-bar crate: the flags are few and the
//! bar is one line of stderr, so the example adds nothing to the build.

use std::io::{IsTerminal, Write as _};
use std::process::ExitCode;
use std::sync::Arc;

use schedkit::plugins::gpu_share::{Policy, TypicalPods};
use schedkit::sim::{Experiment, SummaryContext, allocation_svg, summary, tuned_arrivals};
use schedkit::trace::{gpu_capacity_milli, load_nodes, load_pods};

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/data");

const HELP: &str = "\
simulate: replay a GPU cluster trace through schedkit's GPU-sharing policies

The method of the FGD paper (Weng et al., USENIX ATC'23) and its simulator: pods are
shuffled with a seed; the workload is tuned to a multiple of the cluster's GPU capacity
by drawing trace pods with replacement; pods arrive one at a time and are scheduled at
once or fail; every node is scored; ties go to the smallest node name (after the
simulator's seeded random renaming, so effectively a seeded node order); GpuShareFit and
a cpu/memory fit filter run beside exactly one policy. After every pod the allocated GPU
share and the cluster fragmentation are recorded, binned by arrived GPU demand.

USAGE:
    cargo run --release --example simulate -- [OPTIONS]

OPTIONS:
    --nodes FILE        node list CSV (sn,cpu_milli,memory_mib,gpu,model)
                        [default: the bundled 1,213 GPU nodes]
    --pods FILE         pod list CSV (name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec,...])
                        [default: the bundled default trace, 8,152 pods]
    --policy LIST       comma-separated: random,dotprod,gpuclustering,gpupacking,bestfit,fgd
                        [default: all six]
    --seeds LIST        seeds to average over: 42 | 42,43 | 42-51  [default: 42]
    --tune RATIO        target GPU demand as a multiple of capacity  [default: 1.3]
    --profile-every N   time every plugin call in one cycle in N for the latency
                        columns (0: off)  [default: 10]
    --plot FILE         write an SVG plot: allocated GPU vs arrived demand per policy
    --quiet             no progress bar
    -h, --help          this text
";

struct Args {
    nodes: String,
    pods: String,
    policies: Vec<Policy>,
    experiment: Experiment,
    plot: Option<String>,
    quiet: bool,
}

impl Args {
    /// Whether this is the paper's setup (bundled default trace and GPU nodes, 130%), the
    /// only one its published figures apply to.
    fn paper_setup(&self) -> bool {
        self.nodes.ends_with("/examples/data/openb_node_list_gpu_node.csv")
            && self.pods.ends_with("/examples/data/openb_pod_list_default.csv")
            && (self.experiment.tune - 1.3).abs() < 1e-9
    }
}

fn parse_seeds(s: &str) -> Option<Vec<u64>> {
    let mut out = Vec::new();
    for part in s.split(',') {
        if let Some((a, b)) = part.split_once('-') {
            let (a, b): (u64, u64) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
            if b < a || b - a > 10_000 {
                return None;
            }
            out.extend(a..=b);
        } else {
            out.push(part.trim().parse().ok()?);
        }
    }
    (!out.is_empty()).then_some(out)
}

fn parse_args() -> Result<Option<Args>, String> {
    let mut a = Args {
        nodes: format!("{DATA}/openb_node_list_gpu_node.csv"),
        pods: format!("{DATA}/openb_pod_list_default.csv"),
        policies: Policy::ALL.to_vec(),
        experiment: Experiment { seeds: vec![42], tune: 1.3, profile_every: 10 },
        plot: None,
        quiet: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = |name: &str| it.next().ok_or_else(|| format!("{name} needs a value"));
        match flag.as_str() {
            "-h" | "--help" => return Ok(None),
            "--nodes" => a.nodes = value("--nodes")?,
            "--pods" => a.pods = value("--pods")?,
            "--policy" | "--policies" => {
                let v = value("--policy")?;
                a.policies = v
                    .split(',')
                    .map(|p| Policy::parse(p.trim()).ok_or_else(|| format!("unknown policy {p:?}")))
                    .collect::<Result<_, _>>()?;
            }
            "--seed" | "--seeds" => {
                let v = value("--seeds")?;
                a.experiment.seeds =
                    parse_seeds(&v).ok_or_else(|| format!("bad --seeds {v:?} (try 42, 42,43 or 42-51)"))?;
            }
            "--tune" => {
                let v = value("--tune")?;
                a.experiment.tune = v
                    .parse()
                    .ok()
                    .filter(|t: &f64| t.is_finite() && *t > 0.0 && *t <= 10.0)
                    .ok_or_else(|| format!("bad --tune {v:?} (a ratio in (0, 10])"))?;
            }
            "--profile-every" => {
                let v = value("--profile-every")?;
                a.experiment.profile_every = v.parse().map_err(|_| format!("bad --profile-every {v:?}"))?;
            }
            "--plot" => a.plot = Some(value("--plot")?),
            "--quiet" => a.quiet = true,
            other => return Err(format!("unknown argument {other:?}; see --help")),
        }
    }
    Ok(Some(a))
}

struct Progress {
    on: bool,
    total: usize,
    done: usize,
}

impl Progress {
    fn tick(&mut self, label: &str, n: usize) {
        self.done += n;
        if self.on {
            let pct = self.done as f64 / self.total.max(1) as f64;
            let filled = (pct * 30.0) as usize;
            eprint!("\r[{}{}] {:>5.1}% {label:<24}", "=".repeat(filled), " ".repeat(30 - filled.min(30)), pct * 100.0);
            let _ = std::io::stderr().flush();
        }
    }

    fn finish(&self) {
        if self.on {
            eprintln!();
        }
    }
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(Some(a)) => a,
        Ok(None) => {
            print!("{HELP}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("simulate: {e}");
            return ExitCode::from(2);
        }
    };
    let (nodes, pods) = match (load_nodes(&args.nodes), load_pods(&args.pods)) {
        (Ok(n), Ok(p)) => (n, p),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("simulate: {e}");
            return ExitCode::from(2);
        }
    };
    if nodes.is_empty() || gpu_capacity_milli(&nodes) == 0 || pods.is_empty() {
        eprintln!("simulate: the cluster needs GPU nodes and the trace needs pods");
        return ExitCode::from(2);
    }
    let typical = Arc::new(TypicalPods::from_pods(&pods));
    let per_run =
        tuned_arrivals(&pods, gpu_capacity_milli(&nodes), args.experiment.tune, args.experiment.seeds[0]).len();
    let mut progress = Progress {
        on: !args.quiet && std::io::stderr().is_terminal(),
        total: per_run * args.experiment.seeds.len() * args.policies.len(),
        done: 0,
    };
    let mut results = Vec::new();
    for &policy in &args.policies {
        match args.experiment.run(&nodes, &pods, &typical, policy, |label, n| progress.tick(label, n)) {
            Ok(r) => {
                if !progress.on && !args.quiet {
                    eprintln!("{}: done", policy.name());
                }
                results.push(r);
            }
            Err(e) => {
                progress.finish();
                eprintln!("simulate: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    progress.finish();
    let cx = SummaryContext {
        experiment: &args.experiment,
        nodes: nodes.len(),
        pods: pods.len(),
        paper_setup: args.paper_setup(),
    };
    print!("{}", summary(&cx, &results));
    if let Some(path) = &args.plot {
        if let Err(e) = std::fs::write(path, allocation_svg(&results)) {
            eprintln!("simulate: writing {path}: {e}");
            return ExitCode::FAILURE;
        }
        println!("\nwrote {path}");
    }
    ExitCode::SUCCESS
}
