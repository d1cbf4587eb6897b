//! NodeResourceTopologyMatch: NUMA-aware Filter and Score from NodeResourceTopology
//! objects, as scheduler-plugins `pkg/noderesourcetopology` (release-1.34, v0.34.7).
//!
//! - **Filter** only acts on nodes whose Topology Manager policy is
//!   `single-numa-node`: pod scope needs the pod's effective request in one NUMA
//!   zone ("cannot align pod"); container scope places init containers one by one
//!   ("cannot align init container" / "cannot align sidecar container") and then app
//!   containers, each taken from the zone it fits ("cannot align container").
//!   BestEffort pods without non-native requests pass; for non-Guaranteed pods cpu,
//!   memory and hugepages count as available anywhere; ephemeral-storage, storage and
//!   non-native resources no zone reports are served by the host. A node without an
//!   object passes; a stale one fails with "invalid node topology data".
//! - **Score** (no NormalizeScore): non-Guaranteed pods score 100; MostAllocated,
//!   LeastAllocated and BalancedAllocation need `single-numa-node` and take the
//!   lowest non-zero zone score (container scope: the mean over containers);
//!   LeastNUMANodes scores by how few zones the pod needs, with a bonus when they are
//!   the closest set.
//! - **Reserve/Unreserve/PostBind** forward to the cache the args select
//!   ([`CacheKind`]).
//!
//! Objects come from an [`NrtStore`] shared through the handle; without one the
//! registry's factory creates an empty store and shares it.

mod api;
mod cache;
pub mod derive;
mod numa;
mod score;

use std::sync::Arc;

use serde::Deserialize;

pub use api::{
    API_VERSION, ATTRIBUTE_MAX_NUMA_NODES, ATTRIBUTE_POLICY, ATTRIBUTE_SCOPE, AttributeInfo, CostInfo, KIND,
    NodeResourceTopology, NrtError, NrtMeta, ResourceInfo, TmPolicy, TmScope, TopologyManager, Zone, numa_id_from_name,
};
pub use cache::{CacheKind, NrtCache, NrtStore, NrtView};
pub use numa::{NodeTopology, NumaZone, QosClass, effective_request, pod_qos};
pub use score::{ScoringStrategyType, normalize_numa_count};

use crate::framework::{
    ActionType, ClusterEvent, ClusterEventWithHint, CycleState, EnqueueExtensions, EventResource, ExtensionPoints,
    FilterPlugin, Handle, MAX_NODE_SCORE, Plugin, PostBindPlugin, ReservePlugin, ScorePlugin, Status,
};
use crate::model::Symbol;
use crate::plugins::names;
use crate::snapshot::{NodeInfo, PodInfo};
use numa::{FilterFailure, align_containers, align_pod, includes_non_native};
use score::{Weights, numa_nodes_required, only_non_numa, score_for_each_zone, subtract_from_numas};

/// `scoringStrategy.resources[]` entry.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceSpec {
    /// Resource name.
    pub name: String,
    /// Weight; 0 becomes 1.
    #[serde(default)]
    pub weight: i64,
}

/// `scoringStrategy`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScoringStrategy {
    /// `MostAllocated`, `LeastAllocated`, `BalancedAllocation` or `LeastNUMANodes`.
    #[serde(rename = "type", default)]
    pub strategy_type: String,
    /// Weights; empty means cpu:1, memory:1.
    #[serde(default)]
    pub resources: Vec<ResourceSpec>,
}

/// `cache` fine tuning (kept for config compatibility; schedkit's over-reserve cache
/// is flushed by the caller, see [`NrtCache::flush_nodes`]).
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize, serde::Serialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NodeResourceTopologyCacheArgs {
    /// `None`, `All` (default) or `OnlyExclusiveResources`.
    pub foreign_pods_detect: Option<String>,
    /// `Autodetect` (default), `All` or `OnlyExclusiveResources`.
    pub resync_method: Option<String>,
    /// `Shared` or `Dedicated` (default).
    pub informer_mode: Option<String>,
    /// `All` (default) or `OnlyResources`.
    pub resync_scope: Option<String>,
}

/// `NodeResourceTopologyMatchArgs` (scheduler-plugins `apis/config/v1/types.go`), with
/// the v1 defaults (`defaults.go`) applied by [`NodeResourceTopologyMatchArgs::defaulted`].
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize, serde::Serialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NodeResourceTopologyMatchArgs {
    /// How nodes are scored; default LeastAllocated over cpu:1, memory:1.
    pub scoring_strategy: Option<ScoringStrategy>,
    /// `> 0` selects the over-reserve cache; `<= 0` or absent the passthrough.
    pub cache_resync_period_seconds: Option<i64>,
    /// Takes precedence over the resync period: the discard-reserved cache.
    pub discard_reserved_nodes: bool,
    /// Cache tuning.
    pub cache: Option<NodeResourceTopologyCacheArgs>,
}

/// Bad plugin args.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ArgsError {
    /// Not `NodeResourceTopologyMatchArgs` JSON.
    #[error("NodeResourceTopologyMatchArgs: {0}")]
    Json(#[from] serde_json::Error),
    /// Unknown strategy (upstream validation message).
    #[error("NodeResourceTopologyMatchArgs: scoringStrategy.type: Invalid value: {0:?}: invalid ScoringStrategyType")]
    ScoringStrategyType(String),
}

impl NodeResourceTopologyMatchArgs {
    /// Upstream `SetDefaults_NodeResourceTopologyMatchArgs`.
    #[must_use]
    pub fn defaulted(mut self) -> Self {
        let default_resources =
            || vec![ResourceSpec { name: "cpu".into(), weight: 1 }, ResourceSpec { name: "memory".into(), weight: 1 }];
        let s = self
            .scoring_strategy
            .get_or_insert_with(|| ScoringStrategy { strategy_type: "LeastAllocated".into(), resources: Vec::new() });
        if s.resources.is_empty() {
            s.resources = default_resources();
        }
        for r in &mut s.resources {
            if r.weight == 0 {
                r.weight = 1;
            }
        }
        let c = self.cache.get_or_insert_with(NodeResourceTopologyCacheArgs::default);
        c.foreign_pods_detect.get_or_insert_with(|| "All".into());
        c.resync_method.get_or_insert_with(|| "Autodetect".into());
        c.informer_mode.get_or_insert_with(|| "Dedicated".into());
        self
    }

    /// The strategy after validation (upstream `ValidateNodeResourceTopologyMatchArgs`).
    pub fn strategy(&self) -> Result<ScoringStrategyType, ArgsError> {
        let t = self.scoring_strategy.as_ref().map_or("LeastAllocated", |s| s.strategy_type.as_str());
        Ok(match t {
            "MostAllocated" => ScoringStrategyType::MostAllocated,
            "LeastAllocated" => ScoringStrategyType::LeastAllocated,
            "BalancedAllocation" => ScoringStrategyType::BalancedAllocation,
            "LeastNUMANodes" => ScoringStrategyType::LeastNUMANodes,
            other => return Err(ArgsError::ScoringStrategyType(other.to_owned())),
        })
    }

    /// The cache the args select (upstream `initNodeTopologyInformer`).
    pub fn cache_kind(&self) -> CacheKind {
        if self.discard_reserved_nodes {
            CacheKind::DiscardReserved
        } else if self.cache_resync_period_seconds.unwrap_or(0) <= 0 {
            CacheKind::Passthrough
        } else {
            CacheKind::OverReserve
        }
    }
}

/// The NodeResourceTopologyMatch plugin.
#[derive(Debug)]
pub struct NodeResourceTopologyMatch {
    cache: NrtCache,
    strategy: ScoringStrategyType,
    weights: Weights,
}

impl NodeResourceTopologyMatch {
    /// A plugin over `store` with `args` (defaults applied here).
    pub fn new(args: NodeResourceTopologyMatchArgs, store: Arc<NrtStore>) -> Result<Self, ArgsError> {
        let args = args.defaulted();
        let strategy = args.strategy()?;
        let weights = Weights(
            args.scoring_strategy
                .iter()
                .flat_map(|s| &s.resources)
                .map(|r| (Symbol::intern(&r.name), r.weight))
                .collect(),
        );
        Ok(NodeResourceTopologyMatch { cache: NrtCache::new(store, args.cache_kind()), strategy, weights })
    }

    /// From `pluginConfig` args and the handle: uses the handle's [`NrtStore`], or
    /// shares a new empty one.
    pub fn from_config(args: Option<&serde_json::Value>, handle: &Handle) -> Result<Self, ArgsError> {
        let a: NodeResourceTopologyMatchArgs = match args {
            None => NodeResourceTopologyMatchArgs::default(),
            Some(v) => NodeResourceTopologyMatchArgs::deserialize(v)?,
        };
        let store = handle.shared::<NrtStore>().unwrap_or_else(|| {
            let s = Arc::new(NrtStore::new());
            handle.set_shared(s.clone());
            s
        });
        NodeResourceTopologyMatch::new(a, store)
    }

    /// The cache (to flush over-reserved nodes, mark foreign pods, inspect).
    pub fn cache(&self) -> &NrtCache {
        &self.cache
    }

    /// The scoring strategy.
    pub fn strategy(&self) -> ScoringStrategyType {
        self.strategy
    }
}

impl Plugin for NodeResourceTopologyMatch {
    fn name(&self) -> &str {
        names::NODE_RESOURCE_TOPOLOGY_MATCH
    }
    fn register(self: Arc<Self>, points: &mut ExtensionPoints) {
        points
            .filter(self.clone())
            .score(self.clone())
            .reserve(self.clone())
            .post_bind(self.clone())
            .enqueue(self.clone())
            .node_observer(self);
    }
}

impl FilterPlugin for NodeResourceTopologyMatch {
    fn filter(&self, _: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        let p = &pod.pod;
        let qos = pod_qos(p);
        if qos == QosClass::BestEffort && !includes_non_native(p) {
            return Status::SUCCESS;
        }
        let name = node.name();
        let verdict = self.cache.with_view(name, |view| {
            let Some(view) = view else { return Err(None) };
            let Some(topo) = view else { return Ok(()) };
            let tm = topo.topology_manager;
            if tm.policy != TmPolicy::SingleNumaNode {
                return Ok(());
            }
            let alloc = node.allocatable();
            match tm.scope {
                TmScope::Pod => align_pod(p, alloc, &topo.zones, qos),
                TmScope::Container => align_containers(p, alloc, &topo.zones, qos),
            }
            .map_err(Some)
        });
        match verdict {
            Ok(()) => Status::SUCCESS,
            Err(None) => Status::unschedulable("invalid node topology data"),
            Err(Some(f)) => {
                self.cache.node_maybe_over_reserved(name);
                match f {
                    FilterFailure::Pod => Status::unschedulable("cannot align pod"),
                    FilterFailure::Init(kind) => Status::unschedulable(format!("cannot align {kind} container")),
                    FilterFailure::Container => Status::unschedulable("cannot align container"),
                    FilterFailure::Accounting(e) => Status::error(format!("inconsistent resource accounting: {e}")),
                }
            }
        }
    }
}

impl ScorePlugin for NodeResourceTopologyMatch {
    fn score(&self, _: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        let p = &pod.pod;
        let qos = pod_qos(p);
        if qos != QosClass::Guaranteed {
            return Ok(MAX_NODE_SCORE);
        }
        Ok(self.cache.with_view(node.name(), |view| match view {
            Some(Some(topo)) => self.score_topology(p, qos, topo),
            _ => 0,
        }))
    }
}

impl NodeResourceTopologyMatch {
    /// Score on a present topology (upstream `Score` after the cache read).
    fn score_topology(&self, p: &crate::model::Pod, qos: QosClass, topo: &NodeTopology) -> i64 {
        let tm = topo.topology_manager;
        let containers = || p.spec.init_containers.iter().chain(&p.spec.containers);
        if self.strategy == ScoringStrategyType::LeastNUMANodes {
            return match tm.scope {
                TmScope::Pod => {
                    let req = effective_request(p);
                    if only_non_numa(&topo.zones, &req) {
                        MAX_NODE_SCORE
                    } else {
                        match numa_nodes_required(qos, &topo.zones, &req) {
                            None => 0,
                            Some((c, min)) => normalize_numa_count(c.len(), min, tm.max_numa_nodes),
                        }
                    }
                }
                TmScope::Container => {
                    // Containers see earlier ones' subtraction: work on a copy.
                    let mut zones = topo.zones.clone();
                    let (mut max_count, mut all_min) = (0usize, true);
                    for c in containers() {
                        let req: numa::ResList = c.resources.requests.iter().map(|(n, q)| (n, *q)).collect();
                        if only_non_numa(&zones, &req) {
                            continue;
                        }
                        let Some((combo, min)) = numa_nodes_required(qos, &zones, &req) else { return 0 };
                        all_min &= min;
                        max_count = max_count.max(combo.len());
                        // Upstream hands NUMA ids (the bitmask's bits) to a function
                        // that indexes the zone list with them.
                        let ids: smallvec::SmallVec<[usize; 8]> = {
                            let mut v: smallvec::SmallVec<[usize; 8]> = combo.iter().map(|&i| zones[i].id).collect();
                            v.sort_unstable();
                            v
                        };
                        subtract_from_numas(&req, &mut zones, &ids);
                    }
                    if max_count == 0 {
                        MAX_NODE_SCORE
                    } else {
                        normalize_numa_count(max_count, all_min, tm.max_numa_nodes)
                    }
                }
            };
        }
        if tm.policy != TmPolicy::SingleNumaNode {
            return 0;
        }
        match tm.scope {
            TmScope::Pod => {
                let req = effective_request(p);
                score_for_each_zone(self.strategy, || req.iter().map(|(n, q)| (*n, q)), &topo.zones, &self.weights)
            }
            TmScope::Container => {
                let (mut sum, mut n) = (0.0f64, 0usize);
                for c in containers() {
                    sum +=
                        score_for_each_zone(self.strategy, || c.resources.requests.iter(), &topo.zones, &self.weights)
                            as f64;
                    n += 1;
                }
                // gonum stat.Mean of no values is NaN; int64(NaN) is platform-defined
                // upstream. A Guaranteed pod has containers, so this is 0 only in theory.
                if n == 0 { 0 } else { (sum / n as f64) as i64 }
            }
        }
    }
}

// The node's name is live at these points (the cycle's snapshot, or the assumed pod,
// holds it); the cache takes its own hold on it, so nothing here pins it.
impl ReservePlugin for NodeResourceTopologyMatch {
    fn reserve(&self, _: &mut CycleState, pod: &PodInfo, node: &str) -> Status {
        if let Some(node) = Symbol::lookup(node) {
            self.cache.reserve(node, &pod.pod.key(), &pod.uid, effective_request(&pod.pod));
        }
        Status::SUCCESS
    }
    fn unreserve(&self, _: &mut CycleState, pod: &PodInfo, node: &str) {
        if let Some(node) = Symbol::lookup(node) {
            self.cache.unreserve(node, &pod.pod.key(), &pod.uid);
        }
    }
}

impl PostBindPlugin for NodeResourceTopologyMatch {
    fn post_bind(&self, _: &CycleState, pod: &PodInfo, node: &str) {
        if let Some(node) = Symbol::lookup(node) {
            self.cache.post_bind(node, &pod.uid);
        }
    }
}

impl crate::framework::NodeObserver for NodeResourceTopologyMatch {
    /// Drops the cache's state for the node ([`NrtCache::forget_node`]). The store's
    /// object is the caller's: it mirrors the API server, where the object outlives
    /// the node until it is deleted.
    fn node_removed(&self, name: &str) {
        self.cache.forget_node(name);
    }
}

impl EnqueueExtensions for NodeResourceTopologyMatch {
    /// Upstream `EventsToRegister`: pod deletions, node adds and allocatable updates,
    /// and NodeResourceTopology adds and updates.
    fn events_to_register(&self) -> Vec<ClusterEventWithHint> {
        vec![
            ClusterEventWithHint {
                event: ClusterEvent { resource: EventResource::AssignedPod, action: ActionType::DELETE },
                hint: None,
            },
            ClusterEventWithHint {
                event: ClusterEvent {
                    resource: EventResource::Node,
                    action: ActionType::ADD | ActionType::UPDATE_NODE_ALLOCATABLE,
                },
                hint: None,
            },
            ClusterEventWithHint {
                event: ClusterEvent {
                    resource: EventResource::Custom("noderesourcetopologies.v1alpha2.topology.node.k8s.io"),
                    action: ActionType::ADD | ActionType::UPDATE,
                },
                hint: None,
            },
        ]
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_tables;
