//! Results as data for plotting elsewhere: one row per trace × policy × seed with the
//! paper's columns, and each run's curves per percent of arrived demand, as CSV or JSON.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::experiment::{CURVE_BINS, PolicyResult};
use super::report::{PaperTrace, paper_means_for};

/// One trace's results, as the exporters take them.
#[derive(Debug, Clone, Copy)]
pub struct TraceResults<'a> {
    /// The trace's label (`default`, or the pod list's file name).
    pub trace: &'a str,
    /// The tune ratio the workload was tuned to.
    pub tune: f64,
    /// The published trace this run reproduces, if it is the paper's setup: adds the
    /// paper's means to each row.
    pub paper: Option<PaperTrace>,
    /// One result per policy.
    pub results: &'a [PolicyResult],
}

/// The columns of [`results_csv`], in order.
pub const RESULT_COLUMNS: [&str; 15] = [
    "trace",
    "policy",
    "seed",
    "tune",
    "arrivals",
    "scheduled",
    "failed",
    "alloc_100",
    "alloc_130",
    "alloc_end",
    "frag_ratio_130",
    "frag_ratio_end",
    "pods_per_sec",
    "paper_alloc_100",
    "paper_alloc_130",
];

/// The columns of [`curves_csv`], in order.
pub const CURVE_COLUMNS: [&str; 6] = ["trace", "policy", "seed", "arrived_pct", "alloc_pct", "frag_ratio_pct"];

/// Format of a results file, from its extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResultsFormat {
    /// `.csv`: [`results_csv`] in the file, [`curves_csv`] beside it ([`curves_path`]).
    Csv,
    /// `.json`: [`results_json`], curves included.
    Json,
}

impl ResultsFormat {
    /// `Csv` for `*.csv`, `Json` for `*.json` (case-insensitive), else `None`.
    pub fn from_path(path: &Path) -> Option<ResultsFormat> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "csv" => Some(ResultsFormat::Csv),
            "json" => Some(ResultsFormat::Json),
            _ => None,
        }
    }
}

/// Where the curves of a CSV results file go: `results.csv` -> `results.curves.csv`.
///
/// ```
/// use std::path::Path;
/// assert_eq!(schedkit::sim::curves_path(Path::new("out/r.csv")), Path::new("out/r.curves.csv"));
/// ```
pub fn curves_path(path: &Path) -> PathBuf {
    path.with_extension("curves.csv")
}

fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) { format!("\"{}\"", s.replace('"', "\"\"")) } else { s.to_owned() }
}

fn num(v: f64) -> String {
    if v.is_finite() { format!("{v:.4}") } else { String::new() }
}

/// One row per trace × policy × seed ([`RESULT_COLUMNS`]): the run's pod counts,
/// allocated GPU (% of capacity) when arrivals reach 100% and 130% of capacity and
/// after the last pod, the fragmented share of idle GPU (%) at 130% and at the end,
/// cycles per second, and the paper's means for the policy when the run is its setup
/// (empty otherwise). Numbers with four decimals; RFC 4180 quoting.
pub fn results_csv(traces: &[TraceResults<'_>]) -> String {
    let mut s = RESULT_COLUMNS.join(",");
    s.push('\n');
    for t in traces {
        for r in t.results {
            let paper = t.paper.map(|p| paper_means_for(p, r.policy));
            for run in &r.runs {
                let _ = writeln!(
                    s,
                    "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
                    field(t.trace),
                    r.policy.name(),
                    run.seed,
                    t.tune,
                    run.arrivals,
                    run.scheduled,
                    run.failed,
                    num(run.alloc_100),
                    num(run.alloc_130),
                    num(run.alloc_end),
                    num(run.frag_ratio_130),
                    num(run.frag_ratio_end),
                    num(run.pods_per_sec),
                    paper.and_then(|p| p.at_100).map_or_else(String::new, num),
                    paper.map_or_else(String::new, |p| num(p.at_130)),
                );
            }
        }
    }
    s
}

/// The curves in long form ([`CURVE_COLUMNS`]): for each trace × policy × seed, one row
/// per percent of arrived GPU demand (0..=130, [`CURVE_BINS`] rows) with the allocated
/// GPU (% of capacity) and the fragmented share of idle GPU (%), each the mean over the
/// events in that bin (empty bins carry the previous bin), as the paper's figures.
pub fn curves_csv(traces: &[TraceResults<'_>]) -> String {
    let mut s = CURVE_COLUMNS.join(",");
    s.push('\n');
    for t in traces {
        for r in t.results {
            for run in &r.runs {
                for b in 0..CURVE_BINS.min(run.curve.len()) {
                    let frag = run.frag_ratio_curve.get(b).copied().unwrap_or(f64::NAN);
                    let _ = writeln!(
                        s,
                        "{},{},{},{b},{},{}",
                        field(t.trace),
                        r.policy.name(),
                        run.seed,
                        num(run.curve[b]),
                        num(frag)
                    );
                }
            }
        }
    }
    s
}

/// The same data as one JSON document: `{"columns": [...], "runs": [{"trace", "policy",
/// "seed", ... , "paper_alloc_100", "paper_alloc_130", "curve": {"arrived_pct": [...],
/// "alloc_pct": [...], "frag_ratio_pct": [...]}}]}` (a number that is not finite is
/// `null`).
pub fn results_json(traces: &[TraceResults<'_>]) -> String {
    let mut runs = Vec::new();
    for t in traces {
        for r in t.results {
            let paper = t.paper.map(|p| paper_means_for(p, r.policy));
            for run in &r.runs {
                runs.push(serde_json::json!({
                    "trace": t.trace,
                    "policy": r.policy.name(),
                    "seed": run.seed,
                    "tune": t.tune,
                    "arrivals": run.arrivals,
                    "scheduled": run.scheduled,
                    "failed": run.failed,
                    "alloc_100": run.alloc_100,
                    "alloc_130": run.alloc_130,
                    "alloc_end": run.alloc_end,
                    "frag_ratio_130": run.frag_ratio_130,
                    "frag_ratio_end": run.frag_ratio_end,
                    "pods_per_sec": run.pods_per_sec,
                    "paper_alloc_100": paper.and_then(|p| p.at_100),
                    "paper_alloc_130": paper.map(|p| p.at_130),
                    "curve": {
                        "arrived_pct": (0..run.curve.len()).collect::<Vec<_>>(),
                        "alloc_pct": run.curve,
                        "frag_ratio_pct": run.frag_ratio_curve,
                    },
                }));
            }
        }
    }
    let doc = serde_json::json!({ "columns": RESULT_COLUMNS, "runs": runs });
    // A `Value` built from plain numbers and strings always serialises.
    serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n"
}

/// A results or plot file that could not be written.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {source}")]
pub struct ExportError {
    /// The file.
    pub path: String,
    /// The OS error.
    #[source]
    pub source: std::io::Error,
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> ExportError + '_ {
    move |source| ExportError { path: path.display().to_string(), source }
}

/// Checks that `path` can be written, before a long run: opens it for appending
/// (creating it) and removes it again if it did not exist.
pub fn check_writable(path: &Path) -> Result<(), ExportError> {
    let existed = path.exists();
    std::fs::OpenOptions::new().append(true).create(true).open(path).map_err(io_err(path))?;
    if !existed {
        std::fs::remove_file(path).map_err(io_err(path))?;
    }
    Ok(())
}

/// Writes `traces` to `path` in `format` (CSV: also the curves beside it); returns the
/// files written.
pub fn write_results(
    path: &Path,
    format: ResultsFormat,
    traces: &[TraceResults<'_>],
) -> Result<Vec<PathBuf>, ExportError> {
    match format {
        ResultsFormat::Csv => {
            let curves = curves_path(path);
            std::fs::write(path, results_csv(traces)).map_err(io_err(path))?;
            std::fs::write(&curves, curves_csv(traces)).map_err(io_err(&curves))?;
            Ok(vec![path.to_owned(), curves])
        }
        ResultsFormat::Json => {
            std::fs::write(path, results_json(traces)).map_err(io_err(path))?;
            Ok(vec![path.to_owned()])
        }
    }
}
