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
//! No CLI, progress-bar or plotting crate: the flags are few, the bar is one line of
//! stderr and the plot a handful of SVG elements, so the example adds nothing to the
//! build.

use std::fmt::Write as _;
use std::io::{IsTerminal, Write as _};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use schedkit::framework::{LatencyRecorder, LatencyReport};
use schedkit::plugins::gpu_share::{Policy, TypicalPods};
use schedkit::sim::{Replay, Step, binned, prefixed_names, tuned_arrivals};
use schedkit::snapshot::PodInfo;
use schedkit::trace::{TraceNode, TracePod, gpu_capacity_milli, load_nodes, load_pods};

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

/// The paper's published means over seeds 42..51 (default trace, tune 1.3), % of GPU
/// capacity allocated when arrivals reach 130% (and 100% where the paper gives it).
fn paper(policy: Policy) -> (Option<f64>, f64) {
    match policy {
        Policy::Random => (None, 87.47),
        Policy::DotProduct => (None, 90.85),
        Policy::GpuClustering => (None, 91.88),
        Policy::GpuPacking => (None, 92.00),
        Policy::BestFit => (Some(92.86), 93.08),
        Policy::Fgd => (Some(95.23), 95.39),
    }
}

struct Args {
    nodes: String,
    pods: String,
    policies: Vec<Policy>,
    seeds: Vec<u64>,
    tune: f64,
    profile_every: u64,
    plot: Option<String>,
    quiet: bool,
}

impl Args {
    /// Whether this is the paper's setup (bundled default trace and GPU nodes, 130%), the
    /// only one its published figures apply to.
    fn paper_setup(&self) -> bool {
        self.nodes.ends_with("/examples/data/openb_node_list_gpu_node.csv")
            && self.pods.ends_with("/examples/data/openb_pod_list_default.csv")
            && (self.tune - 1.3).abs() < 1e-9
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
        seeds: vec![42],
        tune: 1.3,
        profile_every: 10,
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
                a.seeds = parse_seeds(&v).ok_or_else(|| format!("bad --seeds {v:?} (try 42, 42,43 or 42-51)"))?;
            }
            "--tune" => {
                let v = value("--tune")?;
                a.tune = v
                    .parse()
                    .ok()
                    .filter(|t: &f64| t.is_finite() && *t > 0.0 && *t <= 10.0)
                    .ok_or_else(|| format!("bad --tune {v:?} (a ratio in (0, 10])"))?;
            }
            "--profile-every" => {
                let v = value("--profile-every")?;
                a.profile_every = v.parse().map_err(|_| format!("bad --profile-every {v:?}"))?;
            }
            "--plot" => a.plot = Some(value("--plot")?),
            "--quiet" => a.quiet = true,
            other => return Err(format!("unknown argument {other:?}; see --help")),
        }
    }
    Ok(Some(a))
}

/// One policy's results over the seeds.
struct PolicyResult {
    policy: Policy,
    scheduled: f64,
    failed: f64,
    alloc_100: f64,
    alloc_130: f64,
    alloc_end: f64,
    frag_ratio_end: f64,
    pods_per_sec: f64,
    pods_per_cpu_sec: Option<f64>,
    curve: Vec<f64>,
    latency: LatencyReport,
    /// Wall time of the cycles the recorder sampled.
    sampled: Duration,
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

fn run_policy(
    args: &Args,
    nodes: &[TraceNode],
    pods: &[TracePod],
    typical: &Arc<TypicalPods>,
    policy: Policy,
    progress: &mut Progress,
) -> Result<PolicyResult, String> {
    let capacity = gpu_capacity_milli(nodes);
    let recorder = Arc::new(LatencyRecorder::sampling(args.profile_every.max(1)));
    let (mut scheduled, mut failed, mut a100, mut a130, mut aend, mut fend) = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
    let (mut timed_pods, mut timed, mut sampled) = (0usize, Duration::ZERO, Duration::ZERO);
    let (mut all_pods, mut cpu) = (0usize, Some(Duration::ZERO));
    let mut curve = vec![0.0; 131];
    for &seed in &args.seeds {
        let arrivals = tuned_arrivals(pods, capacity, args.tune, seed);
        let infos: Vec<(PodInfo, i64)> = arrivals
            .iter()
            .map(|a| {
                let p = &pods[a.pod];
                PodInfo::new(p.to_pod_named(&a.name)).map(|i| (i, p.gpu_demand())).map_err(|e| e.to_string())
            })
            .collect::<Result<_, _>>()?;
        let rec = recorder.clone();
        let profiling = args.profile_every > 0;
        let names = prefixed_names(nodes, seed);
        let mut replay = Replay::with_builder(nodes, Some(&names), typical.clone(), policy, seed, |b| {
            if profiling { b.latency_recorder(rec) } else { b }
        })
        .map_err(|e| e.to_string())?;
        let mut steps: Vec<Step> = Vec::with_capacity(infos.len());
        let chunk = (infos.len() / 200).max(1);
        let label = format!("{} seed {seed}", policy.name());
        let cpu_start = thread_cpu_time();
        for (k, (info, demand)) in infos.iter().enumerate() {
            let step = replay.step_info(info, *demand);
            if replay.scheduler().last_cycle_sampled() {
                sampled += step.elapsed;
            } else {
                timed_pods += 1;
                timed += step.elapsed;
            }
            if step.node.is_some() {
                scheduled += 1.0;
            } else {
                failed += 1.0;
            }
            steps.push(step);
            if (k + 1) % chunk == 0 {
                progress.tick(&label, chunk);
            }
        }
        cpu = match (cpu, cpu_start, thread_cpu_time()) {
            (Some(c), Some(a), Some(b)) => Some(c + b.saturating_sub(a)),
            _ => None,
        };
        all_pods += infos.len();
        progress.tick(&label, infos.len() % chunk);
        let cap = capacity as f64;
        let alloc = binned(&steps, capacity, 131, |s| s.used_milli as f64 * 100.0 / cap);
        for (c, v) in curve.iter_mut().zip(&alloc) {
            *c += v;
        }
        a100 += alloc[100];
        a130 += alloc[130];
        let last = steps.last().ok_or("empty workload")?;
        aend += last.used_milli as f64 * 100.0 / cap;
        let idle = (capacity - last.used_milli) as f64;
        fend += if idle > 0.0 { last.frag_milli * 100.0 / idle } else { 0.0 };
    }
    let n = args.seeds.len() as f64;
    for c in &mut curve {
        *c /= n;
    }
    Ok(PolicyResult {
        policy,
        scheduled: scheduled / n,
        failed: failed / n,
        alloc_100: a100 / n,
        alloc_130: a130 / n,
        alloc_end: aend / n,
        frag_ratio_end: fend / n,
        pods_per_sec: timed_pods as f64 / timed.as_secs_f64().max(1e-9),
        pods_per_cpu_sec: cpu
            .filter(|c| !c.is_zero() && args.profile_every == 0)
            .map(|c| all_pods as f64 / c.as_secs_f64()),
        curve,
        latency: recorder.report(),
        sampled,
    })
}

/// CPU time of this thread so far (Linux `/proc/thread-self/schedstat`), which a busy
/// shared machine doesn't inflate the way it does wall-clock time.
fn thread_cpu_time() -> Option<Duration> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    s.split_whitespace().next()?.parse().ok().map(Duration::from_nanos)
}

fn us(d: Duration) -> String {
    format!("{:.2}", d.as_nanos() as f64 / 1000.0)
}

fn print_summary(args: &Args, nodes: usize, pods: usize, results: &[PolicyResult]) {
    println!(
        "\n{nodes} nodes, {pods} trace pods, tuned to {:.0}% of GPU capacity, seeds {:?}\n",
        args.tune * 100.0,
        args.seeds
    );
    println!(
        "{:<14} {:>9} {:>7} {:>10} {:>10} {:>10} {:>10} {:>10} {:>9} {:>10} {:>10}",
        "policy",
        "scheduled",
        "failed",
        "alloc@100",
        "paper@100",
        "alloc@130",
        "paper@130",
        "alloc end",
        "frag end",
        "pods/s",
        "pods/cpu-s"
    );
    for r in results {
        let (p100, p130) = if args.paper_setup() { paper(r.policy) } else { (None, f64::NAN) };
        println!(
            "{:<14} {:>9.0} {:>7.0} {:>9.2}% {:>10} {:>9.2}% {:>10} {:>9.2}% {:>8.2}% {:>10.0} {:>10}",
            r.policy.name(),
            r.scheduled,
            r.failed,
            r.alloc_100,
            p100.map_or_else(|| "-".to_owned(), |v| format!("{v:.2}%")),
            r.alloc_130,
            if p130.is_nan() { "-".to_owned() } else { format!("{p130:.2}%") },
            r.alloc_end,
            r.frag_ratio_end,
            r.pods_per_sec,
            r.pods_per_cpu_sec.map_or_else(|| "-".to_owned(), |v| format!("{v:.0}"))
        );
    }
    println!("\nalloc: allocated GPU as % of capacity, mean over the events whose arrived demand rounds to");
    println!("100% / 130% of capacity (the paper's bins); frag end: % of idle GPU that is fragmented;");
    println!("paper: the authors' published means over seeds 42-51; pods/s: scheduling + binding cycle,");
    println!("one thread, wall clock, cycles not sampled by the latency recorder; pods/cpu-s: the whole");
    println!("replay loop (cycle + bookkeeping) per second of this thread's CPU time, shown with");
    println!("--profile-every 0 (Linux only).");
    if results.iter().any(|r| !r.latency.entries.is_empty()) {
        println!("\nwhere a sampled cycle's time goes (Filter: every Filter call; Score: PreScore, Score,");
        println!("NormalizeScore; the rest: snapshot, selection, assume, Reserve, binding, timing itself):");
        for r in results {
            let total = r.sampled.as_secs_f64();
            if total <= 0.0 {
                continue;
            }
            let sum = |points: &[&str]| -> f64 {
                r.latency
                    .entries
                    .iter()
                    .filter(|e| points.contains(&e.point))
                    .map(|e| e.mean.as_secs_f64() * e.count as f64)
                    .sum()
            };
            let filter = sum(&["PreFilter", "Filter"]) / total * 100.0;
            let score = sum(&["PreScore", "Score", "NormalizeScore"]) / total * 100.0;
            println!(
                "{:<14} Filter {filter:>5.1}%  Score {score:>5.1}%  rest {:>5.1}%",
                r.policy.name(),
                100.0 - filter - score
            );
        }
        println!("\nper-plugin latency (µs, sampled cycles; Score is one call per cycle over all feasible nodes):");
        println!("{:<14} {:<20} {:<15} {:>10} {:>8} {:>8}", "policy", "plugin", "point", "calls", "p50", "p99");
        for r in results {
            for e in &r.latency.entries {
                println!(
                    "{:<14} {:<20} {:<15} {:>10} {:>8} {:>8}",
                    r.policy.name(),
                    e.plugin,
                    e.point,
                    e.count,
                    us(e.p50),
                    us(e.p99)
                );
            }
        }
    }
}

const COLORS: [&str; 6] = ["#7f7f7f", "#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#d62728"];

fn svg(results: &[PolicyResult]) -> String {
    let (width, height, left, right, top, bottom) = (720.0, 480.0, 60.0, 170.0, 20.0, 50.0);
    let (pw, ph) = (width - left - right, height - top - bottom);
    let px = |v: f64| left + v / 130.0 * pw;
    let py = |v: f64| top + ph - v / 100.0 * ph;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="{width}" height="{height}" fill="white"/>"#);
    for v in (0..=130).step_by(10) {
        let xv = px(f64::from(v));
        let _ = writeln!(s, r##"<line x1="{xv}" y1="{top}" x2="{xv}" y2="{}" stroke="#eee"/>"##, top + ph);
        let _ = writeln!(s, r#"<text x="{xv}" y="{}" text-anchor="middle">{v}</text>"#, top + ph + 16.0);
    }
    for v in (0..=100).step_by(10) {
        let yv = py(f64::from(v));
        let _ = writeln!(s, r##"<line x1="{left}" y1="{yv}" x2="{}" y2="{yv}" stroke="#eee"/>"##, left + pw);
        let _ = writeln!(s, r#"<text x="{}" y="{}" text-anchor="end">{v}</text>"#, left - 6.0, yv + 4.0);
    }
    let _ = writeln!(
        s,
        r##"<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="#bbb" stroke-dasharray="4 4"/>"##,
        px(0.0),
        py(0.0),
        px(100.0),
        py(100.0)
    );
    let _ = writeln!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle">arrived GPU demand (% of capacity)</text>"#,
        left + pw / 2.0,
        height - 10.0
    );
    let _ = writeln!(
        s,
        r#"<text transform="translate(16 {}) rotate(-90)" text-anchor="middle">allocated GPU (% of capacity)</text>"#,
        top + ph / 2.0
    );
    for (i, res) in results.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let pts: Vec<String> =
            res.curve.iter().enumerate().map(|(k, v)| format!("{:.1},{:.1}", px(k as f64), py(*v))).collect();
        let _ = writeln!(s, r#"<polyline fill="none" stroke="{color}" stroke-width="2" points="{}"/>"#, pts.join(" "));
        let ly = top + 20.0 + i as f64 * 20.0;
        let _ = writeln!(
            s,
            r#"<line x1="{}" y1="{ly}" x2="{}" y2="{ly}" stroke="{color}" stroke-width="3"/><text x="{}" y="{}">{} ({:.1}%)</text>"#,
            left + pw + 15.0,
            left + pw + 40.0,
            left + pw + 46.0,
            ly + 4.0,
            res.policy.name(),
            res.alloc_130
        );
    }
    s.push_str("</svg>\n");
    s
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
    let per_run = tuned_arrivals(&pods, gpu_capacity_milli(&nodes), args.tune, args.seeds[0]).len();
    let mut progress = Progress {
        on: !args.quiet && std::io::stderr().is_terminal(),
        total: per_run * args.seeds.len() * args.policies.len(),
        done: 0,
    };
    let mut results = Vec::new();
    for &policy in &args.policies {
        match run_policy(&args, &nodes, &pods, &typical, policy, &mut progress) {
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
    print_summary(&args, nodes.len(), pods.len(), &results);
    if let Some(path) = &args.plot {
        if let Err(e) = std::fs::write(path, svg(&results)) {
            eprintln!("simulate: writing {path}: {e}");
            return ExitCode::FAILURE;
        }
        println!("\nwrote {path}");
    }
    ExitCode::SUCCESS
}
