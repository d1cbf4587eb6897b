//! Replays the bundled production GPU cluster trace (Alibaba `openb`, the USENIX ATC'23
//! FGD paper's) through schedkit under each GPU-sharing policy, and reports how much GPU
//! capacity each one allocates before fragmentation stops it.
//!
//! ```text
//! cargo run --release --example simulate                  # every policy, seed 42
//! cargo run --release --example simulate -- --seeds 42-51 --plot alloc.svg --out results.csv
//! cargo run --release --example simulate -- --trace all --seeds 42-51   # the paper's grid
//! cargo run --release --example simulate -- --help
//! ```
//!
//! A thin command line over [`schedkit::sim`], which runs the policies, summarises the
//! results, runs the grid on every core, exports them and draws the plot. No CLI or progress-bar crate: the flags are
//! few and the bar is one line of stderr, so the example adds nothing to the build.

use std::io::{IsTerminal, Write as _};
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use schedkit::plugins::gpu_share::{Policy, TypicalPods};
use schedkit::sim::{
    Experiment, GridProgress, GridTrace, PaperTrace, PlotContext, ResultsFormat, SummaryContext, TraceResults,
    allocation_svg, check_writable, curves_path, default_jobs, summary, tuned_arrivals, write_results,
};
use schedkit::trace::{TraceNode, TracePod, gpu_capacity_milli, load_nodes, load_pods};

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/data");

const HELP: &str = "\
simulate: replay a GPU cluster trace through schedkit's GPU-sharing policies

The method of the FGD paper (Weng et al., USENIX ATC'23) and its simulator: pods are
shuffled with a seed; the workload is tuned to a multiple of the cluster's GPU capacity
(trace pods drawn with replacement and appended while the demand is below the target,
or random pods removed while it is above); pods arrive one at a time and are scheduled
at once or fail; every node is scored; ties go to the smallest node name (after the
simulator's seeded random renaming, so effectively a seeded node order); GpuShareFit and
a cpu/memory fit filter run beside exactly one policy. After every pod the allocated GPU
share and the cluster fragmentation are recorded, binned by arrived GPU demand.

USAGE:
    cargo run --release --example simulate -- [OPTIONS]

Every option takes its value as `--flag value` or `--flag=value`.

OPTIONS:
    --trace LIST        bundled pod lists to run, comma-separated: default, gpuspec20,
                        multigpu20, or all  [default: default]
    --pods FILE         your own pod list CSV instead of --trace
                        (name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec,...])
    --nodes FILE        node list CSV (sn,cpu_milli,memory_mib,gpu,model)
                        [default: the bundled 1,213 GPU nodes]
    --policy LIST       comma-separated, any case: random, dotproduct (dotprod),
                        gpuclustering, gpupacking, bestfit, fgd, and HAMi's hami-binpack,
                        hami-spread, hami (node binpack, GPU spread)  [default: the six
                        of the paper]
    --seeds LIST        seeds to average over: 42 | 42,43 | 42-51  [default: 42]
    --tune RATIO        target GPU demand as a multiple of capacity  [default: 1.3]
    --jobs N            runs at once, each on its own thread; the results do not
                        depend on it  [default: the machine's available parallelism]
    --profile-every N   time every plugin call in one cycle in N for the latency
                        columns (0: off)  [default: 10]
    --plot FILE         write an SVG figure: allocated GPU vs arrived demand per policy,
                        mean and min-max band across seeds, the paper's means marked
                        (with several traces: FILE.<trace>.svg for each)
    --out FILE          write the results as data; the format follows the extension:
                        FILE.csv: one row per trace x policy x seed (trace, policy, seed,
                          tune, arrivals, scheduled, failed, alloc_100, alloc_130,
                          alloc_end, frag_ratio_130, frag_ratio_end, pods_per_sec,
                          paper_alloc_100, paper_alloc_130), and beside it
                          FILE.curves.csv: per run, one row per percent of arrived demand
                          (trace, policy, seed, arrived_pct, alloc_pct, frag_ratio_pct)
                        FILE.json: the same runs, each with its curves as arrays
    --quiet             no progress bar (it counts the trace x policy x seed runs)
    -h, --help          this text

The paper's published means (seeds 42-51, tuned to 130%) are shown beside schedkit's
for the bundled traces on the bundled GPU nodes.
";

/// Where to get the data when the bundled copy is missing (the published crate does not
/// ship `examples/data/`: its terms allow research use, not redistribution).
const NO_DATA: &str = "\
the bundled trace data is not here (the published crate does not ship examples/data/).
Get the openb trace from the Alibaba cluster trace, repository alibaba/clusterdata on
GitHub, folder cluster-trace-gpu-v2023/csv (openb_node_list_gpu_node.csv and
openb_pod_list_*.csv), or clone the schedkit repository, then run e.g.
    cargo run --release --example simulate -- --nodes DIR/openb_node_list_gpu_node.csv --pods DIR/openb_pod_list_default.csv";

/// One pod list to run: its label, file, and the paper trace it is, if bundled.
struct TraceArg {
    label: String,
    file: String,
    paper: Option<PaperTrace>,
}

struct Args {
    nodes: String,
    nodes_given: bool,
    traces: Vec<TraceArg>,
    policies: Vec<Policy>,
    experiment: Experiment,
    plot: Option<PathBuf>,
    out: Option<(PathBuf, ResultsFormat)>,
    jobs: NonZeroUsize,
    quiet: bool,
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

fn bundled(t: PaperTrace) -> TraceArg {
    TraceArg { label: t.name().to_owned(), file: format!("{DATA}/{}", t.file_name()), paper: Some(t) }
}

/// Splits `--flag=value` into the flag and its value.
fn split_flag(arg: &str) -> (&str, Option<&str>) {
    match arg.split_once('=') {
        Some((f, v)) if f.starts_with("--") => (f, Some(v)),
        _ => (arg, None),
    }
}

fn parse_args(argv: impl IntoIterator<Item = String>) -> Result<Option<Args>, String> {
    let mut a = Args {
        nodes: format!("{DATA}/openb_node_list_gpu_node.csv"),
        nodes_given: false,
        traces: vec![bundled(PaperTrace::Default)],
        policies: Policy::ALL.to_vec(),
        experiment: Experiment { seeds: vec![42], tune: 1.3, profile_every: 10 },
        plot: None,
        out: None,
        jobs: default_jobs(),
        quiet: false,
    };
    let (mut trace_flag, mut pods_flag) = (false, false);
    let mut it = argv.into_iter();
    while let Some(arg) = it.next() {
        let (flag, inline) = split_flag(&arg);
        let flag = flag.to_owned();
        let inline = inline.map(str::to_owned);
        let mut value = || -> Result<String, String> {
            match &inline {
                Some(v) => Ok(v.clone()),
                None => it.next().ok_or_else(|| format!("{flag}: needs a value; see --help")),
            }
        };
        match flag.as_str() {
            "-h" | "--help" => return Ok(None),
            "--nodes" => {
                a.nodes = value()?;
                a.nodes_given = true;
            }
            "--pods" => {
                let file = value()?;
                let label = Path::new(&file).file_name().map_or(file.clone(), |f| f.to_string_lossy().into_owned());
                a.traces = vec![TraceArg { label, file, paper: None }];
                pods_flag = true;
            }
            "--trace" | "--traces" => {
                let v = value()?;
                a.traces = if v.eq_ignore_ascii_case("all") {
                    PaperTrace::ALL.into_iter().map(bundled).collect()
                } else {
                    v.split(',')
                        .map(|t| {
                            PaperTrace::parse(t.trim()).map(bundled).ok_or_else(|| {
                                format!("{flag}: unknown trace {t:?} (default, gpuspec20, multigpu20 or all)")
                            })
                        })
                        .collect::<Result<_, _>>()?
                };
                trace_flag = true;
            }
            "--policy" | "--policies" => {
                let v = value()?;
                a.policies = v
                    .split(',')
                    .map(|p| {
                        Policy::parse(p.trim()).ok_or_else(|| {
                            format!(
                                "{flag}: unknown policy {p:?} (random, dotproduct, gpuclustering, gpupacking, bestfit, fgd, hami-binpack, hami-spread, hami)"
                            )
                        })
                    })
                    .collect::<Result<_, _>>()?;
            }
            "--seed" | "--seeds" => {
                let v = value()?;
                a.experiment.seeds =
                    parse_seeds(&v).ok_or_else(|| format!("{flag}: bad value {v:?} (try 42, 42,43 or 42-51)"))?;
            }
            "--tune" => {
                let v = value()?;
                a.experiment.tune = v
                    .parse()
                    .ok()
                    .filter(|t: &f64| t.is_finite() && *t > 0.0 && *t <= 10.0)
                    .ok_or_else(|| format!("{flag}: bad value {v:?} (a ratio in (0, 10], e.g. 1.3)"))?;
            }
            "--profile-every" => {
                let v = value()?;
                a.experiment.profile_every =
                    v.parse().map_err(|_| format!("{flag}: bad value {v:?} (a whole number; 0 turns it off)"))?;
            }
            "--plot" => a.plot = Some(PathBuf::from(value()?)),
            "--out" => {
                let path = PathBuf::from(value()?);
                let format = ResultsFormat::from_path(&path)
                    .ok_or_else(|| format!("{flag}: {} should end in .csv or .json", path.display()))?;
                a.out = Some((path, format));
            }
            "--jobs" => {
                let v = value()?;
                a.jobs = v.parse().map_err(|_| format!("{flag}: bad value {v:?} (a whole number of at least 1)"))?;
            }
            "--quiet" => a.quiet = true,
            other => return Err(format!("unknown argument {other:?}; see --help")),
        }
    }
    if trace_flag && pods_flag {
        return Err("--trace and --pods: give one or the other".into());
    }
    Ok(Some(a))
}

/// The plot file of trace `i` of `n`: FILE itself for one trace, FILE.<trace>.svg for more.
fn plot_path(plot: &Path, trace: &str, n: usize) -> PathBuf {
    if n == 1 { plot.to_owned() } else { plot.with_extension(format!("{trace}.svg")) }
}

/// Checks every output can be written, before the run: fails at once, naming the flag.
fn check_outputs(a: &Args) -> Result<(), String> {
    if let Some(plot) = &a.plot {
        for t in &a.traces {
            check_writable(&plot_path(plot, &t.label, a.traces.len())).map_err(|e| format!("--plot: {e}"))?;
        }
    }
    if let Some((out, format)) = &a.out {
        check_writable(out).map_err(|e| format!("--out: {e}"))?;
        if *format == ResultsFormat::Csv {
            check_writable(&curves_path(out)).map_err(|e| format!("--out: {e}"))?;
        }
    }
    Ok(())
}

/// Loads the node list and the pod lists, with errors that name the flag or the file.
fn load(a: &Args) -> Result<(Vec<TraceNode>, Vec<Vec<TracePod>>), String> {
    let missing = |f: &str| !Path::new(f).exists();
    if (!a.nodes_given && missing(&a.nodes)) || a.traces.iter().any(|t| t.paper.is_some() && missing(&t.file)) {
        return Err(NO_DATA.into());
    }
    let nodes = load_nodes(&a.nodes).map_err(|e| format!("--nodes: {e}"))?;
    if nodes.is_empty() {
        return Err(format!("--nodes: {}: no node rows", a.nodes));
    }
    if gpu_capacity_milli(&nodes) == 0 {
        return Err(format!("--nodes: {}: no node has a GPU (column gpu is 0 on every row)", a.nodes));
    }
    let mut pods = Vec::new();
    for t in &a.traces {
        let p = load_pods(&t.file).map_err(|e| format!("--pods: {e}"))?;
        if p.is_empty() {
            return Err(format!("--pods: {}: no pod rows", t.file));
        }
        if p.iter().all(|p| p.gpu_demand() == 0) {
            return Err(format!("--pods: {}: no pod requests a GPU (num_gpu is 0 on every row)", t.file));
        }
        pods.push(p);
    }
    Ok((nodes, pods))
}

/// The bar: pods replayed over all runs fill it; the text counts finished runs.
struct Progress {
    on: bool,
    total: usize,
    done: usize,
    runs_total: usize,
    runs_done: usize,
}

impl Progress {
    fn tick(&mut self, label: &str, n: usize, run_done: bool) {
        self.done += n;
        self.runs_done += usize::from(run_done);
        if self.on {
            let pct = self.done as f64 / self.total.max(1) as f64;
            let filled = ((pct * 30.0) as usize).min(30);
            eprint!(
                "\r[{}{}] {:>5.1}% {}/{} runs {label:<32}",
                "=".repeat(filled),
                " ".repeat(30 - filled),
                pct * 100.0,
                self.runs_done,
                self.runs_total
            );
            let _ = std::io::stderr().flush();
        }
    }

    fn finish(&self) {
        if self.on {
            eprintln!();
        }
    }
}

fn fail(code: u8, msg: &str) -> ExitCode {
    eprintln!("simulate: {msg}");
    ExitCode::from(code)
}

fn main() -> ExitCode {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(Some(a)) => a,
        Ok(None) => {
            print!("{HELP}");
            return ExitCode::SUCCESS;
        }
        Err(e) => return fail(2, &e),
    };
    if let Err(e) = check_outputs(&args) {
        return fail(2, &e);
    }
    let (nodes, traces) = match load(&args) {
        Ok(x) => x,
        Err(e) => return fail(2, &e),
    };
    let capacity = gpu_capacity_milli(&nodes);
    let bundled_nodes = !args.nodes_given;
    let mut total = 0;
    for (t, pods) in args.traces.iter().zip(&traces) {
        match tuned_arrivals(pods, capacity, args.experiment.tune, args.experiment.seeds[0]) {
            Ok(a) => total += a.len() * args.experiment.seeds.len() * args.policies.len(),
            Err(e) => return fail(2, &format!("--tune: {}: {e}", t.file)),
        }
    }
    let runs_total = args.traces.len() * args.policies.len() * args.experiment.seeds.len();
    let on = !args.quiet && std::io::stderr().is_terminal();
    let progress = Mutex::new(Progress { on, total, done: 0, runs_total, runs_done: 0 });
    let typicals: Vec<Arc<TypicalPods>> = traces.iter().map(|p| Arc::new(TypicalPods::from_pods(p))).collect();
    let grid: Vec<GridTrace<'_>> =
        traces.iter().zip(&typicals).map(|(pods, typical)| GridTrace { pods, typical }).collect();
    let tick = |g: GridProgress<'_>| {
        let label = format!("{} {}", args.traces[g.trace].label, g.label);
        let mut p = progress.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        p.tick(&label, g.pods, g.run_done);
        if g.run_done && !p.on && !args.quiet {
            eprintln!("{label}: done");
        }
    };
    let all = match args.experiment.run_grid(&nodes, &grid, &args.policies, args.jobs, tick) {
        Ok(all) => all,
        Err(e) => {
            progress.lock().unwrap_or_else(std::sync::PoisonError::into_inner).finish();
            return fail(1, &format!("{}: {e}", args.traces[e.trace].file));
        }
    };
    let progress = progress.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
    progress.finish();
    let paper_of = |t: &TraceArg| t.paper.filter(|_| bundled_nodes && (args.experiment.tune - 1.3).abs() < 1e-9);
    for ((t, pods), results) in args.traces.iter().zip(&traces).zip(&all) {
        let cx = SummaryContext {
            experiment: &args.experiment,
            trace: &t.label,
            nodes: nodes.len(),
            pods: pods.len(),
            paper: paper_of(t),
        };
        print!("{}", summary(&cx, results));
    }
    if let Some(plot) = &args.plot {
        for (t, results) in args.traces.iter().zip(&all) {
            let path = plot_path(plot, &t.label, args.traces.len());
            let cx = PlotContext {
                trace: &t.label,
                seeds: &args.experiment.seeds,
                tune: args.experiment.tune,
                paper: paper_of(t),
            };
            if let Err(e) = std::fs::write(&path, allocation_svg(&cx, results)) {
                return fail(1, &format!("--plot: {}: {e}", path.display()));
            }
            println!("\nwrote {}", path.display());
        }
    }
    if let Some((out, format)) = &args.out {
        let data: Vec<TraceResults<'_>> = args
            .traces
            .iter()
            .zip(&all)
            .map(|(t, results)| TraceResults {
                trace: &t.label,
                tune: args.experiment.tune,
                paper: paper_of(t),
                results,
            })
            .collect();
        match write_results(out, *format, &data) {
            Ok(files) => {
                for f in files {
                    println!("wrote {}", f.display());
                }
            }
            Err(e) => return fail(1, &format!("--out: {e}")),
        }
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Option<Args>, String> {
        parse_args(args.iter().map(|s| (*s).to_owned()))
    }

    #[test]
    fn flags_take_values_with_or_without_equals() {
        let a = parse(&["--policy=FGD,dotprod", "--seeds", "42-44", "--tune=1.1", "--out=r.json", "--jobs", "3"])
            .unwrap()
            .unwrap();
        assert_eq!(a.jobs.get(), 3);
        assert_eq!(a.policies, [Policy::Fgd, Policy::DotProduct]);
        assert_eq!(a.experiment.seeds, [42, 43, 44]);
        assert!((a.experiment.tune - 1.1).abs() < 1e-12);
        assert_eq!(a.out.as_ref().map(|(_, f)| *f), Some(ResultsFormat::Json));
        let a = parse(&["--trace=all"]).unwrap().unwrap();
        assert_eq!(a.traces.len(), 3);
    }

    #[test]
    fn every_error_names_its_flag() {
        for (args, flag) in [
            (&["--policy=nope"][..], "--policy"),
            (&["--seeds", "x"], "--seeds"),
            (&["--tune=0"], "--tune"),
            (&["--tune"], "--tune"),
            (&["--profile-every=-1"], "--profile-every"),
            (&["--out=r.txt"], "--out"),
            (&["--jobs=0"], "--jobs"),
            (&["--trace=nope"], "--trace"),
            (&["--trace=default", "--pods=p.csv"], "--trace"),
        ] {
            let e = parse(args).err().unwrap_or_else(|| panic!("{args:?} should fail"));
            assert!(e.starts_with(flag), "{args:?}: {e}");
        }
    }

    #[test]
    fn unwritable_outputs_fail_before_the_run() {
        let a = parse(&["--plot=/nonexistent-dir/x.svg"]).unwrap().unwrap();
        assert!(check_outputs(&a).unwrap_err().starts_with("--plot: /nonexistent-dir/x.svg"));
        let a = parse(&["--out=/nonexistent-dir/r.csv"]).unwrap().unwrap();
        assert!(check_outputs(&a).unwrap_err().starts_with("--out: /nonexistent-dir/r.csv"));
    }
}
