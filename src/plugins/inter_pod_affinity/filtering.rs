//! PreFilter, Filter and the AddPod/RemovePod extensions (upstream
//! `pkg/scheduler/framework/plugins/interpodaffinity/filtering.go`).

use std::sync::Arc;

use ahash::AHashMap;

use super::terms::{ResolvedTerm, existing_term_matches, required_affinity, required_anti_affinity};
use super::{
    ERR_REASON_AFFINITY_RULES_NOT_MATCH, ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH, InterPodAffinity,
};
use crate::framework::{CycleState, FilterPlugin, PreFilterExtensions, PreFilterPlugin, PreFilterResult, Status};
use crate::model::{Labels, Symbol};
use crate::snapshot::{NodeInfo, NodeList, PodInfo, Snapshot};

/// `(topology key, value)` -> number of matching terms (upstream `topologyToMatchedTermCount`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct TopologyCounts(AHashMap<(Symbol, Symbol), i64>);

impl TopologyCounts {
    /// Upstream `topologyToMatchedTermCount.update`: add `value` to the node's domain
    /// of `key` (if it has one), dropping entries that fall to zero.
    fn update(&mut self, labels: &Labels, key: Symbol, value: i64) {
        if let Some(v) = labels.get(key) {
            let n = self.0.entry((key, v)).or_insert(0);
            *n += value;
            if *n == 0 {
                self.0.remove(&(key, v));
            }
        }
    }

    #[inline]
    fn get(&self, key: Symbol, value: Symbol) -> i64 {
        self.0.get(&(key, value)).copied().unwrap_or(0)
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Upstream `podMatchesAllAffinityTerms` (false for no terms).
fn matches_all(terms: &[ResolvedTerm], pod: &PodInfo) -> bool {
    !terms.is_empty() && terms.iter().all(|t| t.matches(pod))
}

/// What Filter reads (upstream `preFilterState`).
#[derive(Debug, Clone)]
pub(crate) struct PreFilterState {
    /// Domains holding existing pods whose required anti-affinity matches the pod.
    pub(crate) existing_anti: TopologyCounts,
    /// Domains with pods matching all of the pod's required affinity terms.
    pub(crate) affinity: TopologyCounts,
    /// Domains with pods matching the pod's required anti-affinity terms.
    pub(crate) anti: TopologyCounts,
    pub(crate) required: Arc<[ResolvedTerm]>,
    pub(crate) required_anti: Arc<[ResolvedTerm]>,
    /// The pod matches all of its own required affinity terms.
    pub(crate) self_affine: bool,
    /// Labels of the incoming pod's namespace.
    pub(crate) ns_labels: Arc<Labels>,
}

impl PreFilterState {
    /// Upstream `preFilterState.updateWithPod`.
    fn update_with_pod(&mut self, incoming: &PodInfo, updated: &PodInfo, node: &NodeInfo, multiplier: i64) {
        let labels = &node.node().metadata.labels;
        for t in required_anti_affinity(updated) {
            if existing_term_matches(updated, t, incoming, &self.ns_labels) {
                self.existing_anti.update(labels, t.topology_key, multiplier);
            }
        }
        if matches_all(&self.required, updated) {
            for t in self.required.iter() {
                self.affinity.update(labels, t.topology_key, multiplier);
            }
        }
        for t in self.required_anti.iter() {
            if t.matches(updated) {
                self.anti.update(labels, t.topology_key, multiplier);
            }
        }
    }
}

impl InterPodAffinity {
    /// Upstream PreFilter's state; `None` means Skip.
    pub(crate) fn pre_filter_state(&self, pod: &PodInfo, snapshot: &Snapshot) -> Option<PreFilterState> {
        // Nothing to enforce (upstream skips then too): decided before building any
        // state, so the common pod pays no allocation here.
        if required_affinity(pod).is_empty()
            && required_anti_affinity(pod).is_empty()
            && snapshot.nodes_with_required_anti_affinity().next().is_none()
        {
            return None;
        }
        let required: Arc<[ResolvedTerm]> =
            required_affinity(pod).iter().map(|t| ResolvedTerm::new(pod, t, 0, &self.namespaces)).collect();
        let required_anti: Arc<[ResolvedTerm]> =
            required_anti_affinity(pod).iter().map(|t| ResolvedTerm::new(pod, t, 0, &self.namespaces)).collect();
        let ns_labels = Arc::new(self.namespaces.labels_of(pod.namespace));

        // Existing pods' required anti-affinity against the incoming pod
        // (upstream `getExistingAntiAffinityCounts`): only pods that have some.
        let mut existing_anti = TopologyCounts::default();
        for node in snapshot.nodes_with_required_anti_affinity() {
            let labels = &node.node().metadata.labels;
            for existing in node.pods_with_required_anti_affinity() {
                for t in required_anti_affinity(existing) {
                    if existing_term_matches(existing, t, pod, &ns_labels) {
                        existing_anti.update(labels, t.topology_key, 1);
                    }
                }
            }
        }

        // Existing pods matching the incoming pod's terms (upstream
        // `getIncomingAffinityAntiAffinityCounts`): only if it has terms; the memo
        // recounts just the nodes that changed since this workload's last cycle.
        let (affinity, anti) = if required.is_empty() && required_anti.is_empty() {
            (TopologyCounts::default(), TopologyCounts::default())
        } else {
            let (a, b) = self.memo.counts(&required, &required_anti, snapshot);
            (TopologyCounts(a), TopologyCounts(b))
        };

        if existing_anti.is_empty() && required.is_empty() && required_anti.is_empty() {
            return None;
        }
        let self_affine = matches_all(&required, pod);
        Some(PreFilterState { existing_anti, affinity, anti, required, required_anti, self_affine, ns_labels })
    }
}

/// Upstream `satisfyPodAffinity`.
fn satisfies_affinity(s: &PreFilterState, labels: &Labels) -> bool {
    let mut pods_exist = true;
    for t in s.required.iter() {
        let Some(v) = labels.get(t.topology_key) else {
            // All topology labels must exist on the node.
            return false;
        };
        if s.affinity.get(t.topology_key, v) <= 0 {
            pods_exist = false;
        }
    }
    // The first pod of a group with affinity to itself may go anywhere with the
    // keys while no pod in the cluster matches its terms.
    pods_exist || (s.affinity.is_empty() && s.self_affine)
}

/// Upstream `satisfyPodAntiAffinity`.
fn satisfies_anti_affinity(s: &PreFilterState, labels: &Labels) -> bool {
    if s.anti.is_empty() {
        return true;
    }
    s.required_anti.iter().all(|t| labels.get(t.topology_key).is_none_or(|v| s.anti.get(t.topology_key, v) <= 0))
}

/// Upstream `satisfyExistingPodsAntiAffinity`.
fn satisfies_existing_anti_affinity(s: &PreFilterState, labels: &Labels) -> bool {
    s.existing_anti.is_empty() || labels.iter().all(|(k, v)| s.existing_anti.get(k, v) <= 0)
}

impl PreFilterPlugin for InterPodAffinity {
    /// Counts matching pods per topology domain once for the cycle; Skip when the
    /// pod has no required terms and no existing pod's anti-affinity matches it.
    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        match self.pre_filter_state(pod, snapshot) {
            Some(s) => {
                state.write(s);
                (None, Status::SUCCESS)
            }
            None => (None, Status::SKIP),
        }
    }

    fn extensions(&self) -> Option<&dyn PreFilterExtensions> {
        Some(self)
    }
}

impl PreFilterExtensions for InterPodAffinity {
    fn add_pod(&self, state: &mut CycleState, pod: &PodInfo, pod_to_add: &PodInfo, node: &NodeInfo) -> Status {
        match state.get_mut::<PreFilterState>() {
            Some(s) => {
                s.update_with_pod(pod, pod_to_add, node, 1);
                Status::SUCCESS
            }
            None => Status::error("reading \"PreFilterInterPodAffinity\" from cycleState: not found"),
        }
    }

    fn remove_pod(&self, state: &mut CycleState, pod: &PodInfo, pod_to_remove: &PodInfo, node: &NodeInfo) -> Status {
        match state.get_mut::<PreFilterState>() {
            Some(s) => {
                s.update_with_pod(pod, pod_to_remove, node, -1);
                Status::SUCCESS
            }
            None => Status::error("reading \"PreFilterInterPodAffinity\" from cycleState: not found"),
        }
    }
}

impl FilterPlugin for InterPodAffinity {
    /// Affinity (UnschedulableAndUnresolvable), then anti-affinity and existing
    /// pods' anti-affinity (Unschedulable), with upstream's reasons. Allocation-free.
    fn filter(&self, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> Status {
        let Some(s) = state.read::<PreFilterState>() else {
            return Status::error(ERR_STATE_NOT_FOUND);
        };
        filter_with(s, node)
    }

    /// [`FilterPlugin::filter`] over a chunk, reading the PreFilter state once.
    fn filter_nodes(&self, state: &CycleState, _pod: &PodInfo, nodes: NodeList<'_>, statuses: &mut [Status]) -> u64 {
        crate::plugins::helper::filter_batch::<PreFilterState>(state, nodes, statuses, ERR_STATE_NOT_FOUND, filter_with)
    }
}

/// The Error of a Filter that finds no PreFilter state.
const ERR_STATE_NOT_FOUND: &str = "reading \"PreFilterInterPodAffinity\" from cycleState: not found";

/// Filter against the PreFilter state: affinity (UnschedulableAndUnresolvable),
/// then anti-affinity and existing pods' anti-affinity (Unschedulable).
#[inline]
fn filter_with(s: &PreFilterState, node: &NodeInfo) -> Status {
    let labels = &node.node().metadata.labels;
    if !satisfies_affinity(s, labels) {
        return Status::unresolvable(ERR_REASON_AFFINITY_RULES_NOT_MATCH);
    }
    if !satisfies_anti_affinity(s, labels) {
        return Status::unschedulable(ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH);
    }
    if !satisfies_existing_anti_affinity(s, labels) {
        return Status::unschedulable(ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH);
    }
    Status::SUCCESS
}
