//! Trimaran: load-aware scoring from measured node load, as scheduler-plugins
//! `pkg/trimaran` (release-1.34, v0.34.7): [`TargetLoadPacking`],
//! [`LoadVariationRiskBalancing`] and [`LowRiskOverCommitment`].
//!
//! The plugins read node metrics in load-watcher's [`WatcherMetrics`] shape through a
//! [`LoadMetricsSource`]:
//!
//! - [`InMemoryLoadMetrics`], set by the caller (a simulator, a test), shared on the
//!   [`Handle`] as [`SharedLoadMetrics`] and used when the args name no
//!   `watcherAddress`;
//! - `LoadWatcherClient` (feature `load-watcher`), which polls a load-watcher service
//!   at `watcherAddress` every 30 s on a background thread.
//!
//! A node the metrics don't cover scores 0 with success, as upstream. Upstream's
//! library mode (load-watcher embedded, talking to a metrics server, Prometheus or
//! SignalFx) is not built in: its `metricProvider.type` is validated as upstream and a
//! shared source stands in for it.
//!
//! ```
//! use std::sync::Arc;
//! use schedkit::framework::{CycleState, Handle, ScorePlugin};
//! use schedkit::plugins::trimaran::*;
//! use schedkit::snapshot::{NodeInfo, PodInfo};
//! use schedkit::testing::{NodeBuilder, PodBuilder};
//!
//! let metrics = InMemoryLoadMetrics::new();
//! let handle = Handle::default();
//! handle.set_shared(Arc::new(SharedLoadMetrics(Arc::new(metrics.clone()))));
//! let tlp = TargetLoadPacking::from_config(None, &handle).unwrap();
//! let node = NodeInfo::new(Arc::new(NodeBuilder::new("n1").cpu("1").memory("1Gi").build()));
//! let pod = PodInfo::new(PodBuilder::new("p").cpu("100m").build()).unwrap();
//! assert_eq!(tlp.score(&CycleState::new(), &pod, &node).unwrap(), 0); // no metrics yet
//! metrics.set(WatcherMetrics::with_nodes([("n1", vec![Metric::new(CPU, AVERAGE, 20.0)])]));
//! // 20 % measured + 150m predicted = 35 % of 1 core, below the 40 % target.
//! assert_eq!(tlp.score(&CycleState::new(), &pod, &node).unwrap(), 93);
//! ```

mod args;
mod beta;
mod handler;
mod load_variation_risk_balancing;
mod low_risk_over_commitment;
mod metrics;
mod resource_stats;
mod target_load_packing;
#[cfg(feature = "load-watcher")]
mod watcher_client;

use std::sync::Arc;

pub use args::{
    DEFAULT_REQUESTS_MILLI_CORES, DEFAULT_REQUESTS_MULTIPLIER, DEFAULT_RISK_LIMIT_WEIGHT, DEFAULT_SAFE_VARIANCE_MARGIN,
    DEFAULT_SAFE_VARIANCE_SENSITIVITY, DEFAULT_SMOOTHING_WINDOW_SIZE, DEFAULT_TARGET_UTILIZATION_PERCENT,
    KUBERNETES_METRICS_SERVER, LoadVariationRiskBalancingArgs, LowRiskOverCommitmentArgs, MetricProviderSpec,
    PROMETHEUS, SIGNAL_FX, TargetLoadPackingArgs, TrimaranError, TrimaranSpec,
};
pub use beta::{BetaDistribution, compute_probability, max_variance, regularized_incomplete};
pub use handler::{CACHE_CLEANUP_INTERVAL, METRICS_AGENT_REPORTING_INTERVAL, ScheduledPod, ScheduledPods};
pub use load_variation_risk_balancing::{LoadVariationRiskBalancing, risk_score};
pub use low_risk_over_commitment::{LowRiskOverCommitment, MAX_VARIANCE_ALLOWANCE};
pub use metrics::{
    AVERAGE, BANDWIDTH, BASE_URL, CPU, Data, ENERGY, InMemoryLoadMetrics, LATEST, LoadMetricsSource, LoadSnapshot,
    MEMORY, Metadata, Metric, MetricsError, NodeLoad, NodeMetrics, ResourceData, STD, STORAGE, SharedLoadMetrics, Tags,
    WatcherMetrics, Window,
};
pub use resource_stats::{
    CpuMem, MEGA_FACTOR, NodeRequestsAndLimits, Resource, ResourceStats, pod_limits, pod_requests,
    pod_requests_and_limits,
};
pub use target_load_packing::{TargetLoadPacking, target_load_score};
#[cfg(feature = "load-watcher")]
pub use watcher_client::{
    DEFAULT_MAX_BODY_BYTES, DEFAULT_REFRESH_INTERVAL, DEFAULT_TIMEOUT, LoadWatcherClient, LoadWatcherOptions,
    WatcherError, WatcherStatus,
};

use crate::framework::Handle;

/// The plugin's metrics source (upstream `NewCollector`): the load-watcher service at
/// `watcherAddress` when set, else the handle's [`SharedLoadMetrics`]; upstream's
/// provider-type check first.
fn resolve_source(
    plugin: &'static str,
    spec: &TrimaranSpec,
    handle: &Handle,
) -> Result<Arc<dyn LoadMetricsSource>, TrimaranError> {
    spec.check(plugin)?;
    if let Some(address) = spec.watcher() {
        #[cfg(feature = "load-watcher")]
        {
            let options = LoadWatcherOptions::default();
            let client = LoadWatcherClient::start(address, options);
            // Upstream populates the metrics before New returns; a failure only logs.
            client.wait_for_fetches(1, options.timeout);
            return Ok(Arc::new(client));
        }
        #[cfg(not(feature = "load-watcher"))]
        return Err(TrimaranError::FeatureDisabled { plugin, address: address.to_owned() });
    }
    match handle.shared::<SharedLoadMetrics>() {
        Some(s) => Ok(s.0.clone()),
        None => Err(TrimaranError::NoMetricsSource { plugin, provider: spec.metric_provider.provider_type.clone() }),
    }
}
