//! Trace-driven simulation, the layer on top: replays a GPU cluster trace through the
//! [`Scheduler`](crate::scheduler::Scheduler) and the [`gpu_share`] policies.
//!
//! The FGD paper's method (Weng et al., USENIX ATC'23) and its simulator: [`Replay`]
//! drives one policy's scheduler pod by pod over a trace from [`crate::trace`];
//! [`tuned_arrivals`] and [`prefixed_names`] set up a run as the authors' simulator does;
//! [`binned`] turns a run's steps into the paper's curves. On top of that, an
//! [`Experiment`] runs a policy over several seeds into a [`PolicyResult`] (one
//! [`SeedRun`] per seed), [`summary`] tabulates results beside the authors' published
//! means for each bundled trace ([`paper_means_for`]), [`Experiment::run_grid`] runs
//! every trace × policy × seed on all cores with the same results, [`results_csv`], [`curves_csv`]
//! and [`results_json`] export them as data, and [`allocation_svg`] draws the figure.
//!
//! `sim` sits above `scheduler` and `plugins` and names them; nothing below names
//! `sim` (the loaders in [`crate::trace`] are data only). The `simulate` example is a
//! thin command line over this module.
//!
//! [`gpu_share`]: crate::plugins::gpu_share

mod convert;
mod experiment;
mod export;
mod grid;
mod plot;
mod replay;
mod report;

pub use experiment::{CURVE_BINS, Experiment, PolicyResult, RunError, SeedRun};
pub use export::{
    CURVE_COLUMNS, ExportError, RESULT_COLUMNS, ResultsFormat, TraceResults, check_writable, curves_csv, curves_path,
    results_csv, results_json, write_results,
};
pub use grid::{GridError, GridProgress, GridTrace, default_jobs};
pub use plot::{PlotContext, allocation_svg};
pub use replay::{
    Arrival, MAX_TUNED_ARRIVALS, Replay, ReplayError, Step, TuneError, binned, node_resources_fit, prefixed_names,
    tuned_arrivals,
};
pub use report::{PaperMeans, PaperTrace, SummaryContext, paper_means, paper_means_for, summary};
