//! Result tables: the summary of a set of [`PolicyResult`]s as text, beside the FGD
//! paper's published figures ([`paper_means`]).

use std::fmt::Write as _;
use std::time::Duration;

use super::experiment::{Experiment, PolicyResult};
use crate::plugins::gpu_share::Policy;

/// A bundled trace whose results the FGD paper's authors published: the pod lists in
/// `examples/data/` (see its README) run on the 1,213 GPU nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PaperTrace {
    /// `openb_pod_list_default`: the pods as observed.
    Default,
    /// `openb_pod_list_gpuspec20`: 20% of GPU pods constrain the GPU model.
    GpuSpec20,
    /// `openb_pod_list_multigpu20`: more multi-GPU pods.
    MultiGpu20,
}

impl PaperTrace {
    /// The three, in the order the summary prints them.
    pub const ALL: [PaperTrace; 3] = [PaperTrace::Default, PaperTrace::GpuSpec20, PaperTrace::MultiGpu20];

    /// Short name: `default`, `gpuspec20`, `multigpu20`.
    pub fn name(self) -> &'static str {
        match self {
            PaperTrace::Default => "default",
            PaperTrace::GpuSpec20 => "gpuspec20",
            PaperTrace::MultiGpu20 => "multigpu20",
        }
    }

    /// The pod list's file name (`openb_pod_list_<name>.csv`).
    pub fn file_name(self) -> &'static str {
        match self {
            PaperTrace::Default => "openb_pod_list_default.csv",
            PaperTrace::GpuSpec20 => "openb_pod_list_gpuspec20.csv",
            PaperTrace::MultiGpu20 => "openb_pod_list_multigpu20.csv",
        }
    }

    /// The trace by short name (case-insensitive) or by its file's name or path.
    ///
    /// ```
    /// use schedkit::sim::PaperTrace;
    /// assert_eq!(PaperTrace::parse("GpuSpec20"), Some(PaperTrace::GpuSpec20));
    /// assert_eq!(PaperTrace::parse("data/openb_pod_list_default.csv"), Some(PaperTrace::Default));
    /// assert_eq!(PaperTrace::parse("mine.csv"), None);
    /// ```
    pub fn parse(s: &str) -> Option<PaperTrace> {
        let base = s.rsplit(['/', '\\']).next().unwrap_or(s);
        PaperTrace::ALL.into_iter().find(|t| base.eq_ignore_ascii_case(t.name()) || base == t.file_name())
    }
}

/// The FGD paper's published means over seeds 42..51 (a trace tuned to 130% of the
/// 6,212-GPU cluster): % of GPU capacity allocated when arrivals reach 100% and 130% of
/// capacity.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PaperMeans {
    /// At 100% of capacity.
    pub at_100: Option<f64>,
    /// At 130% of capacity.
    pub at_130: f64,
}

/// The paper's published means for `policy` on the default trace
/// (`paper_means_for(PaperTrace::Default, policy)`).
///
/// ```
/// use schedkit::plugins::gpu_share::Policy;
/// assert_eq!(schedkit::sim::paper_means(Policy::Fgd).at_130, 95.39);
/// ```
pub fn paper_means(policy: Policy) -> PaperMeans {
    paper_means_for(PaperTrace::Default, policy)
}

/// The authors' published means for `policy` on `trace`: the mean over seeds 42..51 of
/// the bins at 100% and 130% of `analysis_allo_discrete.csv` in the authors' simulator
/// repository (hkust-adsl/kubernetes-scheduler-simulator,
/// `experiments/analysis/expected_results`, the results behind the ATC'23 paper's
/// figures), rounded to two decimals.
///
/// ```
/// use schedkit::plugins::gpu_share::Policy;
/// use schedkit::sim::{PaperTrace, paper_means_for};
/// assert_eq!(paper_means_for(PaperTrace::GpuSpec20, Policy::BestFit).at_100, Some(88.46));
/// assert_eq!(paper_means_for(PaperTrace::MultiGpu20, Policy::Fgd).at_130, 95.65);
/// ```
pub fn paper_means_for(trace: PaperTrace, policy: Policy) -> PaperMeans {
    use PaperTrace::{Default, GpuSpec20, MultiGpu20};
    let (at_100, at_130) = match (trace, policy) {
        // Not in the paper: no figures (NaN at 130%).
        (_, Policy::HamiBinpack | Policy::HamiSpread | Policy::Hami) => {
            return PaperMeans { at_100: None, at_130: f64::NAN };
        }
        (Default, Policy::Random) => (86.30, 87.47),
        (Default, Policy::DotProduct) => (90.62, 90.85),
        (Default, Policy::GpuClustering) => (91.65, 91.88),
        (Default, Policy::GpuPacking) => (91.78, 92.00),
        (Default, Policy::BestFit) => (92.86, 93.08),
        (Default, Policy::Fgd) => (95.23, 95.39),
        (GpuSpec20, Policy::Random) => (85.90, 87.24),
        (GpuSpec20, Policy::DotProduct) => (88.29, 89.97),
        (GpuSpec20, Policy::GpuClustering) => (89.11, 92.25),
        (GpuSpec20, Policy::GpuPacking) => (89.28, 92.94),
        (GpuSpec20, Policy::BestFit) => (88.46, 93.30),
        (GpuSpec20, Policy::Fgd) => (94.66, 94.84),
        (MultiGpu20, Policy::Random) => (86.92, 88.69),
        (MultiGpu20, Policy::DotProduct) => (91.85, 92.06),
        (MultiGpu20, Policy::GpuClustering) => (93.34, 93.56),
        (MultiGpu20, Policy::GpuPacking) => (93.50, 93.71),
        (MultiGpu20, Policy::BestFit) => (93.73, 93.93),
        (MultiGpu20, Policy::Fgd) => (95.53, 95.65),
    };
    PaperMeans { at_100: Some(at_100), at_130 }
}

/// What the summary says about the run besides the results.
#[derive(Debug, Clone, Copy)]
pub struct SummaryContext<'a> {
    /// The run's settings.
    pub experiment: &'a Experiment,
    /// The trace's label (e.g. `default` or the pod list's file name).
    pub trace: &'a str,
    /// Nodes in the cluster.
    pub nodes: usize,
    /// Pods in the trace (before tuning).
    pub pods: usize,
    /// The published trace this run reproduces, when it is the paper's setup (a bundled
    /// trace on the bundled GPU nodes, tuned to 130%), the only one its figures apply
    /// to: then the table shows them.
    pub paper: Option<PaperTrace>,
}

fn us(d: Duration) -> String {
    format!("{:.2}", d.as_nanos() as f64 / 1000.0)
}

/// The summary table of `results` (one row per policy, with the paper's figures when
/// `SummaryContext::paper` is set), a legend, and where each sampled cycle's time went,
/// as the `simulate` example prints it.
pub fn summary(cx: &SummaryContext<'_>, results: &[PolicyResult]) -> String {
    let mut s = String::new();
    // Writing to a String cannot fail.
    let _ = write_summary(&mut s, cx, results);
    s
}

fn write_summary(s: &mut String, cx: &SummaryContext<'_>, results: &[PolicyResult]) -> std::fmt::Result {
    writeln!(
        s,
        "\ntrace {}: {} nodes, {} trace pods, tuned to {:.0}% of GPU capacity, seeds {:?}\n",
        cx.trace,
        cx.nodes,
        cx.pods,
        cx.experiment.tune * 100.0,
        cx.experiment.seeds
    )?;
    writeln!(
        s,
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
    )?;
    for r in results {
        let (p100, p130) = match cx.paper {
            Some(t) => {
                let p = paper_means_for(t, r.policy);
                (p.at_100, p.at_130)
            }
            None => (None, f64::NAN),
        };
        writeln!(
            s,
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
        )?;
    }
    writeln!(s, "\nalloc: allocated GPU as % of capacity, mean over the events whose arrived demand rounds to")?;
    writeln!(s, "100% / 130% of capacity (the paper's bins); frag end: % of idle GPU that is fragmented;")?;
    writeln!(s, "paper: the authors' published means over seeds 42-51; pods/s: scheduling + binding cycle,")?;
    writeln!(s, "one thread, wall clock, cycles not sampled by the latency recorder; pods/cpu-s: the whole")?;
    writeln!(s, "replay loop (cycle + bookkeeping) per second of this thread's CPU time, shown with")?;
    writeln!(s, "--profile-every 0 (Linux only).")?;
    if results.iter().any(|r| !r.latency.entries.is_empty()) {
        write_latency(s, results)?;
    }
    Ok(())
}

/// The share of each sampled cycle spent in Filter and Score, and the per-plugin table.
fn write_latency(s: &mut String, results: &[PolicyResult]) -> std::fmt::Result {
    writeln!(s, "\nwhere a sampled cycle's time goes (Filter: every Filter call; Score: PreScore, Score,")?;
    writeln!(s, "NormalizeScore; the rest: snapshot, selection, assume, Reserve, binding, timing itself):")?;
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
        writeln!(
            s,
            "{:<14} Filter {filter:>5.1}%  Score {score:>5.1}%  rest {:>5.1}%",
            r.policy.name(),
            100.0 - filter - score
        )?;
    }
    writeln!(s, "\nper-plugin latency (µs, sampled cycles; Score is one call per cycle over all feasible nodes):")?;
    writeln!(s, "{:<14} {:<20} {:<15} {:>10} {:>8} {:>8}", "policy", "plugin", "point", "calls", "p50", "p99")?;
    for r in results {
        for e in &r.latency.entries {
            writeln!(
                s,
                "{:<14} {:<20} {:<15} {:>10} {:>8} {:>8}",
                r.policy.name(),
                e.plugin,
                e.point,
                e.count,
                us(e.p50),
                us(e.p99)
            )?;
        }
    }
    Ok(())
}
