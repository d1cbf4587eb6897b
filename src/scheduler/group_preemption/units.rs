//! Preemption units for workload-aware preemption (KEP-5710 §"Preemption unit"):
//! which running pods are evicted together, their priority and their importance
//! order.
//!
//! Upstream (v1.36, `scheduling.k8s.io/v1alpha2`):
//! `pkg/scheduler/framework/preemption/candidate.go` (`newDomainForWorkloadPreemption`,
//! `victim`) and `podgrouppreemption.go` (`moreImportantVictim`):
//!
//! - the pods of a PodGroup with `disruptionMode: PodGroup` form one unit, at the
//!   group's priority; every other pod is a unit of its own, at its own priority
//!   (a member of a `disruptionMode: Pod` group included);
//! - a unit "is a pod group" when its pods name a scheduling group — so a lone
//!   member of a `Pod`-mode group ranks with groups, as upstream's `IsPodGroup`
//!   (which looks at the first pod's `spec.schedulingGroup`) does;
//! - importance: higher priority first; at equal priority groups before pods;
//!   between pods the earlier start; between groups the larger one, then the
//!   earlier start of its oldest pod.
//!
//! schedkit's choices where upstream differs or leaves room: a group without
//! `spec.priority` (upstream's admission fills it from `priorityClassName`, so
//! upstream's `PodGroupPriority` falls back to 0) takes the lowest priority of its
//! pods; units are built in node order, then pod order (upstream iterates a map),
//! and equally important units keep that order.

use std::cmp::Ordering;
use std::sync::Arc;

use ahash::AHashMap;

use crate::framework::preemption::{PdbBudgets, pod_start_time};
use crate::model::workload::{DisruptionMode, PodGroup};
use crate::snapshot::{PodInfo, Snapshot};

/// A preemption unit (upstream `victim`): evicted, reprieved and counted whole.
#[derive(Debug, Clone)]
pub(crate) struct Unit {
    /// Each pod with the position of its node in the snapshot.
    pub pods: Vec<(usize, Arc<PodInfo>)>,
    /// The unit's priority: the group's for a `PodGroup`-mode group, else the pod's.
    pub priority: i32,
    /// Whether its pods belong to a scheduling group (upstream `IsPodGroup`).
    pub in_group: bool,
    /// The earliest start time of its pods (`+inf` for none started).
    pub earliest_start: f64,
}

impl Unit {
    fn single(pos: usize, p: &Arc<PodInfo>) -> Unit {
        Unit {
            pods: vec![(pos, p.clone())],
            priority: p.priority(),
            in_group: p.pod.scheduling_group_name().is_some(),
            earliest_start: pod_start_time(p),
        }
    }

    fn push(&mut self, pos: usize, p: &Arc<PodInfo>) {
        self.earliest_start = self.earliest_start.min(pod_start_time(p));
        self.pods.push((pos, p.clone()));
    }
}

/// The preemption units of the pods running in `snapshot`, skipping the pods `skip`
/// accepts; `group_of` finds a pod's PodGroup object.
pub(crate) fn build_units(
    snapshot: &Snapshot,
    group_of: impl Fn(&PodInfo) -> Option<Arc<PodGroup>>,
    skip: impl Fn(&PodInfo) -> bool,
) -> Vec<Unit> {
    let mut units: Vec<Unit> = Vec::new();
    // Unit index and explicit priority of each PodGroup-mode group, by (namespace, name).
    let mut whole: AHashMap<(&str, &str), (usize, Option<i32>)> = AHashMap::new();
    for (pos, n) in snapshot.nodes().iter().enumerate() {
        for p in n.pods() {
            if skip(p) {
                continue;
            }
            let Some(name) = p.pod.scheduling_group_name() else {
                units.push(Unit::single(pos, p));
                continue;
            };
            let key = (p.pod.namespace(), name);
            if let Some(&(i, _)) = whole.get(&key) {
                units[i].push(pos, p);
                continue;
            }
            match group_of(p) {
                Some(g) if g.spec.disruption_mode == Some(DisruptionMode::PodGroup) => {
                    whole.insert(key, (units.len(), g.spec.priority));
                    units.push(Unit::single(pos, p));
                }
                _ => units.push(Unit::single(pos, p)),
            }
        }
    }
    for (i, explicit) in whole.into_values() {
        let u = &mut units[i];
        u.priority = explicit.unwrap_or_else(|| u.pods.iter().map(|(_, p)| p.priority()).min().unwrap_or(0));
    }
    units
}

/// Upstream `moreImportantVictim` as an ordering: `Less` when `a` is more important.
pub(crate) fn importance(a: &Unit, b: &Unit) -> Ordering {
    b.priority
        .cmp(&a.priority)
        .then_with(|| b.in_group.cmp(&a.in_group))
        .then_with(|| if a.in_group { b.pods.len().cmp(&a.pods.len()) } else { Ordering::Equal })
        .then_with(|| a.earliest_start.total_cmp(&b.earliest_start))
}

/// Splits units, kept in order, into those whose eviction would violate a
/// PodDisruptionBudget and the rest (upstream `filterVictimsWithPDBViolation` over
/// units): every pod of every unit uses up the budgets selecting it, in order; a
/// unit violates when any of its pods does.
pub(crate) fn split_by_pdb(units: Vec<Unit>, pdbs: &PdbBudgets) -> (Vec<Unit>, Vec<Unit>) {
    if pdbs.is_empty() {
        return (Vec::new(), units);
    }
    let mut tally = pdbs.tally();
    let mut violating = Vec::new();
    let mut non = Vec::new();
    for u in units {
        let mut violates = false;
        for (_, p) in &u.pods {
            violates |= tally.take(p);
        }
        if violates { violating.push(u) } else { non.push(u) }
    }
    (violating, non)
}

#[cfg(test)]
#[path = "units_tests.rs"]
mod tests;
