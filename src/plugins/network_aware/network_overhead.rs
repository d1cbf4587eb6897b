//! NetworkOverhead, the network-aware PreFilter/Filter/Score plugin (scheduler-plugins
//! `pkg/networkaware/networkoverhead/networkoverhead.go`).

use std::sync::Arc;

use ahash::AHashMap;

use super::network_topology::{NETPERF_COSTS, TOPOLOGY_KEY_REGION, TOPOLOGY_KEY_ZONE};
use super::store::{CompiledTopology, NetworkAwareStore};
use super::{APP_GROUP_LABEL, APP_GROUP_SELECTOR_LABEL, NetworkAwareError, NetworkOverheadArgs};
use crate::framework::{
    CycleState, ExtensionPoints, FilterPlugin, Handle, MAX_NODE_SCORE, NodeScore, Plugin, PreFilterPlugin,
    PreFilterResult, ScorePlugin, Status,
};
use crate::model::{Node, Symbol};
use crate::plugins::names;
use crate::snapshot::{NodeInfo, NodeList, PodInfo, Snapshot};

/// Cost of a dependency on a node with neither region nor zone, or with no cost
/// listed (upstream `MaxCost`).
pub const MAX_COST: i64 = 100;
/// Cost of a dependency on the same node (upstream `SameHostname`).
pub const SAME_HOSTNAME_COST: i64 = 0;
/// Cost of a dependency in the same zone (upstream `SameZone`).
pub const SAME_ZONE_COST: i64 = 1;

/// Filters and scores nodes by the network cost to the already-placed pods of the
/// workloads a pod depends on (its AppGroup's `dependencies`).
///
/// PreFilter does the work, once per pod: it finds the pod's AppGroup and the
/// NetworkTopology (the first of `namespaces` holding each), the pod's dependencies and
/// the placed pods of its AppGroup, and for each (region, zone) of the cluster counts
/// the dependencies met and violated and sums their costs, as upstream
/// `checkMaxNetworkCostRequirements` and `getAccumulatedCost` do per node:
///
/// | where the placed pod is                 | counts as            | cost                  |
/// |-----------------------------------------|----------------------|-----------------------|
/// | this node                               | met                  | 0                     |
/// | a node without region and zone labels   | violated             | 100                   |
/// | same region, same zone                  | met                  | 1                     |
/// | same region, other zone                 | zone cost <= max: met, else violated; no cost listed: neither | zone cost, or 100 |
/// | other region                            | likewise with the region cost | region cost, or 100 |
///
/// Filter rejects a node (Unschedulable) when more dependencies are violated than met;
/// Score is the summed cost and NormalizeScore turns it around so the cheapest node
/// gets 100. A pod outside an AppGroup, without dependencies, or whose AppGroup has no
/// placed pods yet passes every node with score 0. Filter and Score are two hash
/// lookups per node and allocate nothing.
///
/// Differences from upstream, where upstream crashes or cannot be followed: a missing
/// AppGroup or NetworkTopology is an `Error` status naming it (upstream dereferences
/// nil); placed pods are those on the snapshot's nodes, assumed pods included (upstream
/// lists bound pods from an informer); an object in the store counts whatever its
/// `uid` (upstream's client returns empty objects for misses and checks the uid).
#[derive(Debug)]
pub struct NetworkOverhead {
    store: Arc<NetworkAwareStore>,
    namespaces: Vec<Symbol>,
    args: NetworkOverheadArgs,
    topology_name: Symbol,
    sort_costs: bool,
    keys: Keys,
}

/// Interned label keys.
#[derive(Debug, Clone, Copy)]
struct Keys {
    app_group: Symbol,
    selector: Symbol,
    region: Symbol,
    zone: Symbol,
}

/// Counts and cost for one node, or one (region, zone) before same-host corrections.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Outcome {
    satisfied: i64,
    violated: i64,
    cost: i64,
}

/// What PreFilter leaves for Filter and Score.
#[derive(Debug, Clone)]
enum PreFilterState {
    /// Every node passes with score 0.
    ScoreEqually,
    /// Outcomes by the node's (region, zone), and corrections for the nodes that host
    /// dependency pods.
    Computed(Arc<Computed>),
}

#[derive(Debug, Default)]
struct Computed {
    by_domain: AHashMap<(Symbol, Symbol), Outcome>,
    by_host: AHashMap<Symbol, Outcome>,
}

/// One placed pod of a dependency, with the requirement it is checked against.
#[derive(Debug, Clone, Copy)]
struct Peer {
    region: Symbol,
    zone: Symbol,
    max_cost: i64,
}

impl NetworkOverhead {
    /// The plugin over `store`.
    pub fn new(store: Arc<NetworkAwareStore>, args: NetworkOverheadArgs) -> NetworkOverhead {
        NetworkOverhead {
            store,
            namespaces: args.namespaces.iter().map(|n| Symbol::intern(n)).collect(),
            topology_name: Symbol::intern(&args.network_topology_name),
            sort_costs: args.weights_name != NETPERF_COSTS,
            args,
            keys: Keys {
                app_group: Symbol::intern(APP_GROUP_LABEL),
                selector: Symbol::intern(APP_GROUP_SELECTOR_LABEL),
                region: Symbol::intern(TOPOLOGY_KEY_REGION),
                zone: Symbol::intern(TOPOLOGY_KEY_ZONE),
            },
        }
    }

    /// From a profile's args, over the [`NetworkAwareStore`] shared on the handle.
    pub fn from_config(args: Option<&serde_json::Value>, handle: &Handle) -> Result<Self, NetworkAwareError> {
        let args = NetworkOverheadArgs::from_config(args)?;
        let store = handle
            .shared::<NetworkAwareStore>()
            .ok_or(NetworkAwareError::NoStore { plugin: names::NETWORK_OVERHEAD })?;
        Ok(NetworkOverhead::new(store, args))
    }

    /// The args in force.
    pub fn args(&self) -> &NetworkOverheadArgs {
        &self.args
    }

    fn domain(&self, node: &Node) -> (Symbol, Symbol) {
        let l = &node.metadata.labels;
        (l.get(self.keys.region).unwrap_or(Symbol::EMPTY), l.get(self.keys.zone).unwrap_or(Symbol::EMPTY))
    }

    /// Upstream `populateCostMap` for a node in `region`/`zone`: `(origin, destination)`
    /// -> cost, zone entries written after region entries, weight by weight.
    fn cost_map(&self, topology: &CompiledTopology, region: Symbol, zone: Symbol) -> AHashMap<(Symbol, Symbol), i64> {
        let mut map = AHashMap::new();
        for lists in topology.weights(&self.args.weights_name, self.sort_costs) {
            if !region.is_empty()
                && let Some(o) = lists.region_costs(region.as_str())
            {
                map.extend(o.costs.iter().map(|&(dest, cost)| ((o.origin_symbol, dest), cost)));
            }
            if !zone.is_empty()
                && let Some(o) = lists.zone_costs(zone.as_str())
            {
                map.extend(o.costs.iter().map(|&(dest, cost)| ((o.origin_symbol, dest), cost)));
            }
        }
        map
    }

    /// The outcome for a node in `region`/`zone` of every peer on another node.
    fn domain_outcome(&self, topology: &CompiledTopology, (region, zone): (Symbol, Symbol), peers: &[Peer]) -> Outcome {
        let costs = self.cost_map(topology, region, zone);
        let mut out = Outcome::default();
        for p in peers {
            let listed = if p.region.is_empty() && p.zone.is_empty() {
                out.violated += 1;
                out.cost = out.cost.saturating_add(MAX_COST);
                continue;
            } else if region == p.region {
                if zone == p.zone {
                    out.satisfied += 1;
                    out.cost = out.cost.saturating_add(SAME_ZONE_COST);
                    continue;
                }
                costs.get(&(zone, p.zone))
            } else {
                costs.get(&(region, p.region))
            };
            match listed {
                Some(&c) => {
                    if c <= p.max_cost {
                        out.satisfied += 1;
                    } else {
                        out.violated += 1;
                    }
                    out.cost = out.cost.saturating_add(c);
                }
                None => out.cost = out.cost.saturating_add(MAX_COST),
            }
        }
        out
    }

    /// The node's outcome from the PreFilter state.
    #[inline]
    fn outcome(&self, computed: &Computed, node: &NodeInfo) -> Outcome {
        let Some(base) = computed.by_domain.get(&self.domain(node.node())) else {
            // Not in PreFilter's snapshot: upstream's maps give zeros.
            return Outcome::default();
        };
        match computed.by_host.get(&node.name()) {
            None => *base,
            Some(fix) => Outcome {
                satisfied: base.satisfied + fix.satisfied,
                violated: base.violated + fix.violated,
                cost: base.cost.saturating_add(fix.cost),
            },
        }
    }

    fn compute(&self, pod: &PodInfo, snapshot: &Snapshot, app_group: Symbol) -> Result<Option<Computed>, Status> {
        let Some(ag) = self.store.find_app_group(&self.namespaces, app_group) else {
            return Err(Status::error(format!(
                "AppGroup {} not found in namespaces {:?}",
                app_group.as_str(),
                self.args.namespaces
            )));
        };
        let Some(topology) = self.store.find_topology(&self.namespaces, self.topology_name) else {
            return Err(Status::error(format!(
                "NetworkTopology {} not found in namespaces {:?}",
                self.args.network_topology_name, self.args.namespaces
            )));
        };
        let selector = pod.pod.metadata.labels.get(self.keys.selector).unwrap_or(Symbol::EMPTY);
        let mut deps = Vec::new();
        ag.dependencies(selector, &mut deps);
        if deps.is_empty() {
            return Ok(None);
        }
        // Placed pods of the AppGroup, and for each the dependencies it serves.
        let mut peers: Vec<Peer> = Vec::new();
        let mut by_host: AHashMap<Symbol, Outcome> = AHashMap::new();
        let mut any_placed = false;
        for node in snapshot.nodes() {
            let mut on_host = 0_i64;
            let (region, zone) = self.domain(node.node());
            for p in node.pods() {
                let labels = &p.pod.metadata.labels;
                if labels.get(self.keys.app_group) != Some(app_group) {
                    continue;
                }
                any_placed = true;
                let sel = labels.get(self.keys.selector).unwrap_or(Symbol::EMPTY);
                for &(_, max_cost) in deps.iter().filter(|(d, _)| *d == sel) {
                    peers.push(Peer { region, zone, max_cost });
                    on_host += 1;
                }
            }
            if on_host > 0 {
                // The domain outcome counted these as "same zone" (or, on a node without
                // labels, as violated at MaxCost); on this very node they are met at cost 0.
                let fix = if region.is_empty() && zone.is_empty() {
                    Outcome { satisfied: on_host, violated: -on_host, cost: on_host * (SAME_HOSTNAME_COST - MAX_COST) }
                } else {
                    Outcome { satisfied: 0, violated: 0, cost: on_host * (SAME_HOSTNAME_COST - SAME_ZONE_COST) }
                };
                by_host.insert(node.name(), fix);
            }
        }
        if !any_placed {
            return Ok(None);
        }
        let mut by_domain: AHashMap<(Symbol, Symbol), Outcome> = AHashMap::new();
        for node in snapshot.nodes() {
            let domain = self.domain(node.node());
            if !by_domain.contains_key(&domain) {
                by_domain.insert(domain, self.domain_outcome(&topology, domain, &peers));
            }
        }
        Ok(Some(Computed { by_domain, by_host }))
    }
}

impl Plugin for NetworkOverhead {
    fn name(&self) -> &str {
        names::NETWORK_OVERHEAD
    }
    fn register(self: Arc<Self>, points: &mut ExtensionPoints) {
        points.pre_filter(self.clone()).filter(self.clone()).score(self);
    }
}

impl PreFilterPlugin for NetworkOverhead {
    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        state.write(PreFilterState::ScoreEqually);
        let app_group = pod.pod.metadata.labels.get(self.keys.app_group).unwrap_or(Symbol::EMPTY);
        if app_group.is_empty() {
            return (None, Status::SUCCESS);
        }
        match self.compute(pod, snapshot, app_group) {
            Err(status) => (None, status),
            Ok(None) => (None, Status::SUCCESS),
            Ok(Some(computed)) => {
                state.write(PreFilterState::Computed(Arc::new(computed)));
                (None, Status::SUCCESS)
            }
        }
    }
}

impl FilterPlugin for NetworkOverhead {
    fn filter(&self, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> Status {
        let Some(s) = state.read::<PreFilterState>() else {
            return Status::error("not eligible due to failed to read from cycleState");
        };
        let PreFilterState::Computed(computed) = s else { return Status::SUCCESS };
        let o = self.outcome(computed, node);
        if o.violated > o.satisfied {
            return Status::unschedulable(format!(
                "Node {} does not meet several network requirements from Workload dependencies: Satisfied: {} Violated: {}",
                node.node().name(),
                o.satisfied,
                o.violated
            ));
        }
        Status::SUCCESS
    }
}

fn read_error() -> Status {
    Status::error("not eligible due to failed to read from cycleState, return min score")
}

impl ScorePlugin for NetworkOverhead {
    fn score(&self, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        match state.read::<PreFilterState>().ok_or_else(read_error)? {
            PreFilterState::ScoreEqually => Ok(0),
            PreFilterState::Computed(c) => Ok(self.outcome(c, node).cost),
        }
    }

    fn score_nodes(
        &self,
        state: &CycleState,
        _pod: &PodInfo,
        nodes: NodeList<'_>,
        scores: &mut [NodeScore],
    ) -> Result<(), Status> {
        match state.read::<PreFilterState>().ok_or_else(read_error)? {
            PreFilterState::ScoreEqually => scores.iter_mut().for_each(|s| s.score = 0),
            PreFilterState::Computed(c) => {
                for (slot, node) in scores.iter_mut().zip(nodes.iter()) {
                    slot.score = self.outcome(c, node).cost;
                }
            }
        }
        Ok(())
    }

    fn normalize(&self, _state: &CycleState, _pod: &PodInfo, scores: &mut [NodeScore]) -> Status {
        NetworkOverhead::normalize_costs(scores);
        Status::SUCCESS
    }
}

impl NetworkOverhead {
    /// NormalizeScore's arithmetic (upstream `NormalizeScore`): costs to scores, the
    /// cheapest node 100. All zeros stay zeros; otherwise each becomes
    /// `100 - trunc(100 * (cost - min) / (max - min))`, computed in float64 as upstream,
    /// or 100 for every node when all costs are equal.
    ///
    /// ```
    /// use schedkit::framework::NodeScore;
    /// use schedkit::model::Symbol;
    /// use schedkit::plugins::network_aware::NetworkOverhead;
    /// let mut s: Vec<NodeScore> = [20, 0, 1, 10].iter().map(|&score| NodeScore { name: Symbol::EMPTY, score }).collect();
    /// NetworkOverhead::normalize_costs(&mut s);
    /// assert_eq!(s.iter().map(|s| s.score).collect::<Vec<_>>(), [0, 100, 95, 50]);
    /// ```
    pub fn normalize_costs(scores: &mut [NodeScore]) {
        let (mut min, mut max) = (i64::MAX, i64::MIN);
        for s in scores.iter() {
            max = max.max(s.score);
            min = min.min(s.score);
        }
        if min == 0 && max == 0 {
            return;
        }
        let span = (i128::from(max) - i128::from(min)) as f64;
        for s in scores.iter_mut() {
            let above = (i128::from(s.score) - i128::from(min)) as f64;
            let norm = if max == min { above } else { MAX_NODE_SCORE as f64 * above / span };
            s.score = MAX_NODE_SCORE - norm as i64;
        }
    }
}
