//! TargetLoadPacking (Score): best-fit packing of nodes around a target CPU
//! utilisation, from measured load plus predicted use (upstream
//! `pkg/trimaran/targetloadpacking/targetloadpacking.go`).

use std::sync::Arc;

use ahash::AHashMap;

use crate::framework::{
    CycleState, ExtensionPoints, Handle, Plugin, PodObserver, PostBindPlugin, PreScorePlugin, ScorePlugin, Status,
};
use crate::model::{Container, Pod, Symbol, native_names};
use crate::plugins::names;
use crate::snapshot::{NodeInfo, NodeList, PodInfo};

use super::args::{TargetLoadPackingArgs, TrimaranError, decode};
use super::handler::{ScheduledPods, unix_now};
use super::metrics::{LoadMetricsSource, LoadSnapshot};
use super::resource_stats::milli_value;

/// What PreScore pins for the cycle: one payload and the pod's predicted use.
#[derive(Clone)]
struct TlpCycle {
    snapshot: Option<Arc<LoadSnapshot>>,
    pod_milli_cpu: i64,
    /// In-flight millicores per node against this payload's window; `None` when no
    /// pod is in flight.
    missing: Option<Arc<AHashMap<Symbol, i64>>>,
}

/// Where Score finds the in-flight pods: pinned by PreScore, or the live cache.
#[derive(Clone, Copy)]
enum Missing<'a> {
    Pinned(Option<&'a AHashMap<Symbol, i64>>),
    Live,
}

/// The TargetLoadPacking plugin.
///
/// Score, per node: the CPU utilisation from the node's last `AVG`/`Latest` CPU
/// metric, times `status.capacity.cpu`, plus the pod's predicted use, plus the
/// predicted use of pods bound there that the metrics may not show yet ([`ScheduledPods`]),
/// as a percentage `p` of capacity; then with target `t`:
/// `p > 100` scores 0, `t < p <= 100` scores `round(t·(100-p)/(100-t))`, and
/// `p <= t` scores `round((100-t)·p/t + t)`. A node without metrics, or without a CPU
/// metric, scores 0 with success. NormalizeScore does nothing (as upstream).
///
/// Beyond upstream: a PreScore pins one metrics payload and the pod's prediction for
/// the whole cycle (Score without it reads the source directly), and PostBind records
/// the scheduler's own bindings (upstream learns them from its pod informer): enable
/// the plugin at `multiPoint` (or at `postBind` as well as `score`) so they count.
/// Pods bound by others count when the caller reports them through the scheduler's
/// events (the plugin is a [`PodObserver`]).
pub struct TargetLoadPacking {
    source: Arc<dyn LoadMetricsSource>,
    handle: Handle,
    scheduled: ScheduledPods,
    target: i64,
    default_milli_cpu: i64,
    multiplier: f64,
}

impl std::fmt::Debug for TargetLoadPacking {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TargetLoadPacking")
            .field("target", &self.target)
            .field("default_milli_cpu", &self.default_milli_cpu)
            .field("multiplier", &self.multiplier)
            .finish_non_exhaustive()
    }
}

impl TargetLoadPacking {
    /// A plugin over `source` with `args` (defaulted here, as upstream's v1 defaulting).
    pub fn new(
        mut args: TargetLoadPackingArgs,
        source: Arc<dyn LoadMetricsSource>,
        handle: Handle,
    ) -> Result<TargetLoadPacking, TrimaranError> {
        args.set_defaults();
        let text = args.default_requests_multiplier.clone().unwrap_or_default();
        let multiplier = text
            .parse::<f64>()
            .map_err(|_| TrimaranError::BadMultiplier { plugin: names::TARGET_LOAD_PACKING, value: text.clone() })?;
        let default_milli_cpu = args
            .default_requests
            .as_ref()
            .and_then(|l| l.get(native_names().cpu))
            .map_or(0, crate::model::Quantity::milli_value);
        Ok(TargetLoadPacking {
            source,
            handle,
            scheduled: ScheduledPods::new(),
            target: args.target_utilization.unwrap_or(super::args::DEFAULT_TARGET_UTILIZATION_PERCENT),
            default_milli_cpu,
            multiplier,
        })
    }

    /// From `pluginConfig` args (upstream `New`): the metrics come from
    /// `watcherAddress` (feature `load-watcher`) or from the handle's
    /// [`super::SharedLoadMetrics`].
    pub fn from_config(args: Option<&serde_json::Value>, handle: &Handle) -> Result<TargetLoadPacking, TrimaranError> {
        let name = names::TARGET_LOAD_PACKING;
        let mut a: TargetLoadPackingArgs =
            decode(name, args, &["defaultRequests", "defaultRequestsMultiplier", "targetUtilization"])?;
        a.set_defaults();
        let source = super::resolve_source(name, &a.trimaran, handle)?;
        TargetLoadPacking::new(a, source, handle.clone())
    }

    /// The recently bound pods this plugin counts as not yet measured.
    pub fn scheduled_pods(&self) -> &ScheduledPods {
        &self.scheduled
    }

    /// Upstream `PredictUtilisation`: the cpu limit if set, else
    /// `round(request · multiplier)` if a request is set, else the default.
    pub fn predict_utilisation(&self, c: &Container) -> i64 {
        let cpu = native_names().cpu;
        if let Some(l) = c.resources.limits.get(cpu) {
            l.milli_value()
        } else if let Some(r) = c.resources.requests.get(cpu) {
            (r.milli_value() as f64 * self.multiplier).round() as i64
        } else {
            self.default_milli_cpu
        }
    }

    /// The pod's predicted use: its app containers' predictions plus the cpu overhead
    /// (init containers are not counted, as upstream).
    pub fn predicted_pod_milli_cpu(&self, pod: &Pod) -> i64 {
        let overhead = pod.spec.overhead.get(native_names().cpu).map_or(0, crate::model::Quantity::milli_value);
        pod.spec.containers.iter().fold(overhead, |sum, c| sum.saturating_add(self.predict_utilisation(c)))
    }

    fn record(&self, pod: &PodInfo, node: &str) {
        let now = unix_now(self.handle.clock());
        self.scheduled.record(node, pod.uid.clone(), self.predicted_pod_milli_cpu(&pod.pod), now);
    }

    /// The score of `node` given a payload and the pod's predicted use.
    #[inline]
    fn score_with(
        &self,
        snapshot: Option<&LoadSnapshot>,
        pod_milli_cpu: i64,
        missing: Missing<'_>,
        node: &NodeInfo,
    ) -> i64 {
        let Some(snap) = snapshot else { return 0 };
        let Some(load) = snap.node(node.name()) else { return 0 };
        if !load.has_metrics {
            return 0;
        }
        let Some(util_pct) = load.cpu_utilization else { return 0 };
        let cap = node.node().status.capacity.get(native_names().cpu).map_or(0, milli_value) as f64;
        let util_milli = (util_pct / 100.0) * cap;
        let missing = match missing {
            Missing::Pinned(None) => 0,
            Missing::Pinned(Some(m)) => m.get(&node.name()).copied().unwrap_or(0),
            Missing::Live => self.scheduled.missing_milli_cpu(node.name(), snap.window_end()),
        };
        let predicted =
            if cap == 0.0 { 0.0 } else { 100.0 * (util_milli + pod_milli_cpu as f64 + missing as f64) / cap };
        target_load_score(self.target, predicted)
    }
}

/// The packing curve: 0 above 100 %, falling from `target` to 0 between the target
/// and 100 %, rising from `target` to 100 below the target (upstream's Score tail).
///
/// ```
/// use schedkit::plugins::trimaran::target_load_score;
/// assert_eq!(target_load_score(40, 0.0), 40);
/// assert_eq!(target_load_score(40, 40.0), 100);
/// assert_eq!(target_load_score(40, 50.0), 33);
/// assert_eq!(target_load_score(40, 100.5), 0);
/// ```
#[inline]
pub fn target_load_score(target: i64, predicted: f64) -> i64 {
    let t = target as f64;
    if predicted > t {
        if predicted > 100.0 {
            return 0;
        }
        return (t * (100.0 - predicted) / (100.0 - t)).round() as i64;
    }
    ((100.0 - t) * predicted / t + t).round() as i64
}

impl Plugin for TargetLoadPacking {
    fn name(&self) -> &str {
        names::TARGET_LOAD_PACKING
    }
    fn register(self: Arc<Self>, points: &mut ExtensionPoints) {
        points.pre_score(self.clone()).score(self.clone()).post_bind(self.clone()).pod_observer(self.clone());
        points.node_observer(self);
    }
}

impl crate::framework::NodeObserver for TargetLoadPacking {
    /// Forgets the pods listed on the node ([`ScheduledPods::remove_node`]).
    fn node_removed(&self, name: &str) {
        self.scheduled.remove_node(name);
    }
}

impl PreScorePlugin for TargetLoadPacking {
    fn pre_score(&self, state: &mut CycleState, pod: &PodInfo, _nodes: NodeList<'_>) -> Status {
        let snapshot = self.source.latest();
        let missing = snapshot.as_ref().and_then(|s| self.scheduled.missing_by_node(s.window_end())).map(Arc::new);
        state.write(TlpCycle { snapshot, pod_milli_cpu: self.predicted_pod_milli_cpu(&pod.pod), missing });
        Status::SUCCESS
    }
}

impl ScorePlugin for TargetLoadPacking {
    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        if let Some(c) = state.read::<TlpCycle>() {
            return Ok(self.score_with(
                c.snapshot.as_deref(),
                c.pod_milli_cpu,
                Missing::Pinned(c.missing.as_deref()),
                node,
            ));
        }
        let snap = self.source.latest();
        Ok(self.score_with(snap.as_deref(), self.predicted_pod_milli_cpu(&pod.pod), Missing::Live, node))
    }
}

impl PostBindPlugin for TargetLoadPacking {
    fn post_bind(&self, _state: &CycleState, pod: &PodInfo, node: &str) {
        self.record(pod, node);
    }
}

impl PodObserver for TargetLoadPacking {
    /// Upstream `OnAdd` of an assigned pod.
    fn pod_added(&self, pod: &PodInfo) {
        if pod.is_assigned() {
            self.record(pod, pod.node_name());
        }
    }
    /// Upstream `OnUpdate`: recorded again only when the node changed.
    fn pod_updated(&self, old: &PodInfo, new: &PodInfo) {
        if old.node_name() != new.node_name() && new.is_assigned() {
            self.record(new, new.node_name());
        }
    }
    /// Upstream `OnDelete`.
    fn pod_deleted(&self, pod: &PodInfo) {
        self.scheduled.remove(pod.node_name(), &pod.uid);
    }
}
