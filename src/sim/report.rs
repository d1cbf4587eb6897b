//! Result tables: the summary of a set of [`PolicyResult`]s as text, beside the FGD
//! paper's published figures ([`paper_means`]).

use std::fmt::Write as _;
use std::time::Duration;

use super::experiment::{Experiment, PolicyResult};
use crate::plugins::gpu_share::Policy;

/// The FGD paper's published means over seeds 42..51 (default openb trace, tuned to
/// 130%): % of GPU capacity allocated when arrivals reach 100% and 130% of capacity.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PaperMeans {
    /// At 100% of capacity, where the paper gives it.
    pub at_100: Option<f64>,
    /// At 130% of capacity.
    pub at_130: f64,
}

/// The paper's published means for `policy`.
///
/// ```
/// use schedkit::plugins::gpu_share::Policy;
/// assert_eq!(schedkit::sim::paper_means(Policy::Fgd).at_130, 95.39);
/// ```
pub fn paper_means(policy: Policy) -> PaperMeans {
    let (at_100, at_130) = match policy {
        Policy::Random => (None, 87.47),
        Policy::DotProduct => (None, 90.85),
        Policy::GpuClustering => (None, 91.88),
        Policy::GpuPacking => (None, 92.00),
        Policy::BestFit => (Some(92.86), 93.08),
        Policy::Fgd => (Some(95.23), 95.39),
    };
    PaperMeans { at_100, at_130 }
}

/// What the summary says about the run besides the results.
#[derive(Debug, Clone, Copy)]
pub struct SummaryContext<'a> {
    /// The run's settings.
    pub experiment: &'a Experiment,
    /// Nodes in the cluster.
    pub nodes: usize,
    /// Pods in the trace (before tuning).
    pub pods: usize,
    /// Whether the run is the paper's setup (bundled default trace and GPU nodes, 130%),
    /// the only one its figures apply to: then the table shows them.
    pub paper_setup: bool,
}

fn us(d: Duration) -> String {
    format!("{:.2}", d.as_nanos() as f64 / 1000.0)
}

/// The summary table of `results` (one row per policy, with the paper's figures when
/// [`SummaryContext::paper_setup`]), a legend, and where each sampled cycle's time went,
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
        "\n{} nodes, {} trace pods, tuned to {:.0}% of GPU capacity, seeds {:?}\n",
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
        let (p100, p130) = if cx.paper_setup {
            let p = paper_means(r.policy);
            (p.at_100, p.at_130)
        } else {
            (None, f64::NAN)
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
