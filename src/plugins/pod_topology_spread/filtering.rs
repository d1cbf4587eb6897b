//! PreFilter, Filter and the AddPod/RemovePod extensions (upstream
//! `pkg/scheduler/framework/plugins/podtopologyspread/filtering.go`).

use std::sync::Arc;

use smallvec::SmallVec;

use super::common::{Constraint, node_has_all_keys};
use super::{ERR_REASON_CONSTRAINTS_NOT_MATCH, ERR_REASON_NODE_LABEL_NOT_MATCH, PodTopologySpread};
use crate::framework::{CycleState, FilterPlugin, PreFilterExtensions, PreFilterPlugin, PreFilterResult, Status};
use crate::model::labels::{MASK_NODES, NO_VALUE};
use crate::model::{Pod, Symbol};
use crate::snapshot::{NodeInfo, NodeList, PodInfo, Snapshot};

/// The two domains with the fewest matching pods (upstream `criticalPaths`).
/// `paths[0]` always holds the minimum; `paths[1]` is at least as large but not
/// necessarily the second minimum. Two suffice because a preemption dry run only
/// changes pods of one node on its own copy of the state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CriticalPaths(pub(crate) [(Symbol, i64); 2]);

impl CriticalPaths {
    fn new() -> Self {
        CriticalPaths([(Symbol::EMPTY, i64::from(i32::MAX)); 2])
    }

    /// Upstream `criticalPaths.update`, same order of comparisons.
    fn update(&mut self, value: Symbol, num: i64) {
        let p = &mut self.0;
        let i = if value == p[0].0 {
            Some(0)
        } else if value == p[1].0 {
            Some(1)
        } else {
            None
        };
        match i {
            Some(i) => {
                p[i].1 = num;
                if p[0].1 > p[1].1 {
                    p.swap(0, 1);
                }
            }
            None => {
                if num < p[0].1 {
                    p[1] = p[0];
                    p[0] = (value, num);
                } else if num < p[1].1 {
                    p[1] = (value, num);
                }
            }
        }
    }
}

/// Matching pods per domain value, sorted by value: Filter looks a node's domain up
/// once per node, and a scan of a few zones (or a binary search of many hostnames)
/// beats hashing.
#[derive(Debug, Clone, Default)]
pub(crate) struct DomainCounts(Vec<(Symbol, i64)>);

impl DomainCounts {
    fn from_unsorted(mut v: Vec<(Symbol, i64)>) -> Self {
        v.sort_unstable_by_key(|&(k, _)| k);
        DomainCounts(v)
    }

    /// The count of `value`'s domain (0 when it has none).
    #[inline]
    pub(crate) fn get(&self, value: Symbol) -> i64 {
        let v = self.0.as_slice();
        if v.len() <= 8 {
            for &(k, n) in v {
                if k == value {
                    return n;
                }
            }
            0
        } else {
            v.binary_search_by_key(&value, |&(k, _)| k).map_or(0, |i| v[i].1)
        }
    }

    /// Adds `delta` to `value`'s count (inserting the domain), returning the new count.
    fn add(&mut self, value: Symbol, delta: i64) -> i64 {
        match self.0.binary_search_by_key(&value, |&(k, _)| k) {
            Ok(i) => {
                self.0[i].1 += delta;
                self.0[i].1
            }
            Err(i) => {
                self.0.insert(i, (value, delta));
                delta
            }
        }
    }

    /// Number of domains.
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    /// `(domain, count)` pairs.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&Symbol, &i64)> {
        self.0.iter().map(|(k, n)| (k, n))
    }
}

/// What Filter reads: per constraint, the matching-pod count of every domain and
/// the critical paths (upstream `preFilterState`).
#[derive(Debug, Clone)]
pub(crate) struct PreFilterState {
    pub(crate) constraints: Arc<[Constraint]>,
    /// Domain value -> matching pods, per constraint.
    pub(crate) counts: Vec<DomainCounts>,
    pub(crate) critical: Vec<CriticalPaths>,
    /// 1 when the incoming pod matches the constraint's selector, else 0.
    pub(crate) self_match: SmallVec<[i64; 4]>,
    /// Per constraint, what Filter reads per node: the topology key and the most
    /// matching pods a domain may hold (`maxSkew + minMatchNum - selfMatchNum`), so
    /// the per-node test is one lookup and one compare. Kept in step with `counts`
    /// and `critical` by [`PreFilterState::refresh_limits`].
    limits: SmallVec<[(Symbol, i64); 2]>,
    /// Per constraint: no domain holds more than its limit, and neither does a
    /// domain without matching pods (0), so only a node without the topology key
    /// fails it. Kept with `limits`.
    within: SmallVec<[bool; 2]>,
}

impl PreFilterState {
    /// Builds the state and its per-node limits.
    fn new(
        constraints: Arc<[Constraint]>,
        counts: Vec<DomainCounts>,
        critical: Vec<CriticalPaths>,
        self_match: SmallVec<[i64; 4]>,
    ) -> Self {
        let mut s = PreFilterState {
            constraints,
            counts,
            critical,
            self_match,
            limits: SmallVec::new(),
            within: SmallVec::new(),
        };
        s.refresh_limits();
        s
    }

    /// Recomputes [`PreFilterState::limits`]: upstream Filter rejects when
    /// `matchNum + selfMatchNum - minMatchNum > maxSkew`, that is when `matchNum`
    /// exceeds `maxSkew + minMatchNum - selfMatchNum` (same integers, rearranged).
    fn refresh_limits(&mut self) {
        let limits = self
            .constraints
            .iter()
            .enumerate()
            .map(|(i, c)| {
                (c.topology_key, i64::from(c.max_skew) + self.min_match(i, c.min_domains) - self.self_match[i])
            })
            .collect();
        self.limits = limits;
        self.within = self
            .limits
            .iter()
            .zip(&self.counts)
            .map(|(&(_, limit), counts)| limit >= 0 && counts.iter().all(|(_, &n)| n <= limit))
            .collect();
    }

    /// Upstream `minMatchNum`: the global minimum, 0 while fewer than minDomains
    /// domains are eligible.
    #[inline]
    fn min_match(&self, i: usize, min_domains: i32) -> i64 {
        if (self.counts[i].len() as i64) < i64::from(min_domains) { 0 } else { self.critical[i].0[0].1 }
    }

    /// Upstream `updateWithPod`.
    fn update_with_pod(
        &mut self,
        updated: &PodInfo,
        preemptor: &Pod,
        preemptor_ns: Symbol,
        node: &NodeInfo,
        delta: i64,
    ) {
        if updated.namespace != preemptor_ns {
            return;
        }
        let labels = &node.node().metadata.labels;
        if !node_has_all_keys(labels, &self.constraints) {
            return;
        }
        for (i, c) in self.constraints.iter().enumerate() {
            if !c.selects(&updated.pod.metadata.labels) || !c.includes_node(preemptor, node) {
                continue;
            }
            let value = labels.get(c.topology_key).unwrap_or(Symbol::EMPTY);
            let n = self.counts[i].add(value, delta);
            self.critical[i].update(value, n);
        }
        self.refresh_limits();
    }
}

impl PodTopologySpread {
    /// Upstream `calPreFilterState`; `None` when the pod has no DoNotSchedule constraints.
    pub(crate) fn pre_filter_state(&self, pod: &PodInfo, snapshot: &Snapshot) -> Option<PreFilterState> {
        let constraints = self.constraints(pod, crate::model::UnsatisfiableConstraintAction::DoNotSchedule);
        if constraints.is_empty() {
            return None;
        }
        let counts: Vec<DomainCounts> = self.memo.with_domains(pod, &constraints, snapshot, true, |d| {
            d.iter().map(|m| DomainCounts::from_unsorted(m.iter().map(|(&v, &(n, _))| (v, n)).collect())).collect()
        });
        // Upstream walks a Go map (random order); `update` keeps the minimum in any order.
        let critical = counts
            .iter()
            .map(|m| {
                let mut p = CriticalPaths::new();
                for (&v, &n) in m.iter() {
                    p.update(v, n);
                }
                p
            })
            .collect();
        let self_match = constraints.iter().map(|c| i64::from(c.selects(&pod.pod.metadata.labels))).collect();
        Some(PreFilterState::new(constraints.into(), counts, critical, self_match))
    }
}

impl PreFilterPlugin for PodTopologySpread {
    /// Counts matching pods per domain once for the cycle; Skip when the pod has no
    /// DoNotSchedule constraints (its own or default ones).
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

impl PreFilterExtensions for PodTopologySpread {
    fn add_pod(&self, state: &mut CycleState, pod: &PodInfo, pod_to_add: &PodInfo, node: &NodeInfo) -> Status {
        match state.get_mut::<PreFilterState>() {
            Some(s) => {
                s.update_with_pod(pod_to_add, &pod.pod, pod.namespace, node, 1);
                Status::SUCCESS
            }
            None => Status::error("reading \"PreFilterPodTopologySpread\" from cycleState: not found"),
        }
    }

    fn remove_pod(&self, state: &mut CycleState, pod: &PodInfo, pod_to_remove: &PodInfo, node: &NodeInfo) -> Status {
        match state.get_mut::<PreFilterState>() {
            Some(s) => {
                s.update_with_pod(pod_to_remove, &pod.pod, pod.namespace, node, -1);
                Status::SUCCESS
            }
            None => Status::error("reading \"PreFilterPodTopologySpread\" from cycleState: not found"),
        }
    }
}

impl FilterPlugin for PodTopologySpread {
    /// `matchNum + selfMatch - globalMin > maxSkew` rejects (Unschedulable); a node
    /// without a topology key is UnschedulableAndUnresolvable. Allocation-free.
    fn filter(&self, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> Status {
        let Some(s) = state.read::<PreFilterState>() else {
            return Status::error(ERR_STATE_NOT_FOUND);
        };
        filter_with(s, node)
    }

    /// [`FilterPlugin::filter`] over a chunk, reading the PreFilter state once and
    /// each constraint's topology values from the snapshot's label columns, a block
    /// of nodes at a time. Constraint-major: a node keeps the status of its first
    /// failing constraint, as the node-by-node check gives it.
    fn filter_nodes(&self, state: &CycleState, _pod: &PodInfo, nodes: NodeList<'_>, statuses: &mut [Status]) -> u64 {
        let Some(s) = state.read::<PreFilterState>() else {
            statuses.fill(Status::error(ERR_STATE_NOT_FOUND));
            return crate::plugins::helper::low_bits(statuses.len());
        };
        let snap = nodes.snapshot();
        let mut values = [NO_VALUE; MASK_NODES];
        let n = nodes.len().min(statuses.len()).min(MASK_NODES);
        let (idx, out) = (&nodes.indices()[..n], &mut statuses[..n]);
        let values = &mut values[..n];
        let mut failed = 0u64;
        for ((&(key, limit), counts), &within) in s.limits.iter().zip(&s.counts).zip(&s.within) {
            snap.label_values(key, idx, values);
            if within {
                // Only a missing key fails: a mask of those, no domain lookup.
                let mut missing = 0u64;
                for (i, &v) in values.iter().enumerate() {
                    missing |= u64::from(v == NO_VALUE) << i;
                }
                let mut new = missing & !failed;
                failed |= new;
                while new != 0 {
                    let i = new.trailing_zeros() as usize;
                    new &= new - 1;
                    out[i] = Status::unresolvable(ERR_REASON_NODE_LABEL_NOT_MATCH);
                }
                continue;
            }
            for (i, &v) in values.iter().enumerate() {
                if failed >> i & 1 != 0 {
                    continue;
                }
                if v == NO_VALUE {
                    out[i] = Status::unresolvable(ERR_REASON_NODE_LABEL_NOT_MATCH);
                } else if counts.get(Symbol::from_id(v)) > limit {
                    out[i] = Status::unschedulable(ERR_REASON_CONSTRAINTS_NOT_MATCH);
                } else {
                    continue;
                }
                failed |= 1 << i;
            }
        }
        failed
    }
}

/// The Error of a Filter that finds no PreFilter state.
const ERR_STATE_NOT_FOUND: &str = "reading \"PreFilterPodTopologySpread\" from cycleState: not found";

/// Filter against the PreFilter state: one label lookup and one compare per
/// constraint.
#[inline]
fn filter_with(s: &PreFilterState, node: &NodeInfo) -> Status {
    let labels = &node.node().metadata.labels;
    for (&(key, limit), counts) in s.limits.iter().zip(&s.counts) {
        let Some(value) = labels.get(key) else {
            return Status::unresolvable(ERR_REASON_NODE_LABEL_NOT_MATCH);
        };
        if counts.get(value) > limit {
            return Status::unschedulable(ERR_REASON_CONSTRAINTS_NOT_MATCH);
        }
    }
    Status::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    /// After upstream `TestPreFilterState` critical-path expectations: paths[0] is
    /// always the minimum as values change.
    #[test]
    fn critical_paths_keep_the_minimum() {
        let (a, b, c) = (Symbol::intern("a"), Symbol::intern("b"), Symbol::intern("c"));
        let mut p = CriticalPaths::new();
        p.update(a, 3);
        p.update(b, 1);
        p.update(c, 2);
        assert_eq!(p.0[0], (b, 1));
        assert_eq!(p.0[1], (c, 2));
        p.update(b, 4);
        assert_eq!(p.0[0], (c, 2));
        p.update(c, 0);
        assert_eq!(p.0[0], (c, 0));
    }
}
