//! Deprecated: the replay driver moved to [`crate::sim`]. These aliases keep the old
//! paths working, with a deprecation warning, for one release.

use std::sync::Arc;

use crate::framework::Plugin;
use crate::trace::{TraceNode, TracePod};

/// Deprecated: moved to [`crate::sim::Arrival`].
#[deprecated(since = "0.2.0", note = "moved to `schedkit::sim::Arrival`")]
pub type Arrival = crate::sim::Arrival;

/// Deprecated: moved to [`crate::sim::Replay`].
#[deprecated(since = "0.2.0", note = "moved to `schedkit::sim::Replay`")]
pub type Replay = crate::sim::Replay;

/// Deprecated: moved to [`crate::sim::ReplayError`].
#[deprecated(since = "0.2.0", note = "moved to `schedkit::sim::ReplayError`")]
pub type ReplayError = crate::sim::ReplayError;

/// Deprecated: moved to [`crate::sim::Step`].
#[deprecated(since = "0.2.0", note = "moved to `schedkit::sim::Step`")]
pub type Step = crate::sim::Step;

/// Deprecated: moved to [`crate::sim::tuned_arrivals`].
#[deprecated(since = "0.2.0", note = "moved to `schedkit::sim::tuned_arrivals`")]
pub fn tuned_arrivals(
    pods: &[TracePod],
    capacity_milli: i64,
    ratio: f64,
    seed: u64,
) -> Result<Vec<crate::sim::Arrival>, crate::sim::TuneError> {
    crate::sim::tuned_arrivals(pods, capacity_milli, ratio, seed)
}

/// Deprecated: moved to [`crate::sim::prefixed_names`].
#[deprecated(since = "0.2.0", note = "moved to `schedkit::sim::prefixed_names`")]
pub fn prefixed_names(nodes: &[TraceNode], seed: u64) -> Vec<String> {
    crate::sim::prefixed_names(nodes, seed)
}

/// Deprecated: moved to [`crate::sim::node_resources_fit`].
#[deprecated(since = "0.2.0", note = "moved to `schedkit::sim::node_resources_fit`")]
pub fn node_resources_fit() -> Arc<dyn Plugin> {
    crate::sim::node_resources_fit()
}

/// Deprecated: moved to [`crate::sim::binned`].
#[deprecated(since = "0.2.0", note = "moved to `schedkit::sim::binned`")]
pub fn binned(
    steps: &[crate::sim::Step],
    capacity_milli: i64,
    bins: usize,
    f: impl Fn(&crate::sim::Step) -> f64,
) -> Vec<f64> {
    crate::sim::binned(steps, capacity_milli, bins, f)
}
