//! Workload-aware preemption (gate `WorkloadAwarePreemption`, KEP-5710): when the
//! pod-by-pod group cycle finds the group unschedulable, one group-level PostFilter
//! chooses victims for the whole group on a copy of the cycle's snapshot, nominates
//! every member to its node and evicts the victims; the group then waits.
//!
//! Upstream: `pkg/scheduler/schedule_one_podgroup.go` (`podGroupCycle`,
//! `runWorkloadAwarePreemption`): it runs only for an Unschedulable group result, needs
//! DefaultPreemption registered, refuses groups with topology constraints, works on a
//! backed-up snapshot restored on exit, and uses the group algorithm *without
//! PostFilters* as the feasibility oracle. Success makes the group wait on preemption,
//! an Error replaces the group status, anything else is appended to its reason.
//!
//! The victim search follows upstream's v1.36 `PodGroupEvaluator`
//! (`pkg/scheduler/framework/preemption/podgrouppreemption.go`, `candidate.go`) for the
//! whole-cluster domain:
//!
//! 1. the members must be eligible: none with `preemptionPolicy: Never`, no
//!    terminating lower-priority pod on a member's nominated node;
//! 2. running pods are grouped into preemption units (`units`): all pods of a
//!    PodGroup with `disruptionMode: PodGroup` form one unit at the group's priority,
//!    every other pod is its own unit; units of lower priority than the group are the
//!    candidates (none: `UnschedulableAndUnresolvable`, [`MSG_NO_CANDIDATES`]);
//! 3. with every candidate removed the group must be feasible ([`MSG_NO_VICTIMS`]);
//! 4. candidates are sorted most important first (priority; groups before pods at
//!    equal priority; pods by earlier start; groups by size, then earlier start) and
//!    split into those whose eviction would violate a PodDisruptionBudget and the rest;
//! 5. each violating unit, then each other unit, is reprieved — added back whole —
//!    when the group stays feasible (the PDB reprieve is best effort: a violating unit
//!    the group needs is still evicted); the units left are evicted whole, most
//!    important first, every pod handed to the [`Evictor`](crate::framework::Evictor)
//!    (pods already terminating are skipped, as upstream skips their API call).
//!
//! So a `PodGroup`-mode group is evicted completely or not at all, while the pods of
//! a `Pod`-mode group are chosen one by one. For step 5 on the non-violating units,
//! schedkit first binary-searches their priority levels (KEP-5710 §"Preemption
//! algorithm"; an upstream variant of `selectVictimsOnDomain` does the same) to skip
//! one group run per unit the group clearly does not need; the victims are the same.
//! schedkit's choices where upstream differs: the group's priority is `spec.priority`
//! when set, else its lowest member priority (upstream takes 0: its admission fills
//! `spec.priority`); a group infeasible even with every candidate gone reports
//! [`MSG_NO_VICTIMS`] (upstream appends the group algorithm's status); members of the
//! preempting group are never candidates. Per-pod preemption (DefaultPreemption's
//! PostFilter) still treats every pod as its own victim, as upstream v1.36 does. The
//! `DisruptionTarget` condition (reason `PreemptionByScheduler`) upstream writes on
//! victims is the evictor's business here, as for per-pod preemption.

mod units;

use std::sync::Arc;

use super::Scheduler;
use super::pod_group::{GroupResult, GroupStatus, PodResult};
use crate::framework::preemption::{PdbBudgets, is_terminating};
use crate::framework::{PodGroupInfo, Profile, Status};
use crate::model::{PreemptionPolicy, Symbol};
use crate::plugins::names;
use crate::snapshot::{PodInfo, Snapshot};

/// Upstream's status when no PodGroupPostFilter plugin (DefaultPreemption) is enabled.
pub const MSG_NOT_REGISTERED: &str =
    "default preemption plugin is not registered, workload aware preemption is disabled";
/// Upstream's status for a group with topology constraints.
pub const MSG_TOPOLOGY: &str = "workload aware preemption is not supported for pod groups with scheduling constraints";
/// schedkit's status when even removing every lower-priority pod does not help
/// (upstream returns the group algorithm's own status there).
pub const MSG_NO_VICTIMS: &str = "pod group is unschedulable even after preempting all lower priority pods";
/// Upstream's status (`UnschedulableAndUnresolvable`) when no running pod has a
/// lower priority than the group.
pub const MSG_NO_CANDIDATES: &str = "No preemption victims found for incoming preemptor";

/// Each member with the node it is nominated to (`None`: it does not fit).
type Nominations = Vec<(Arc<PodInfo>, Option<String>)>;

impl Scheduler {
    /// Runs workload-aware preemption for an Unschedulable group `result` (upstream
    /// `podGroupCycle` after the algorithm): on success the result waits on preemption,
    /// every member nominated to its node; an Error replaces the status; otherwise the
    /// reason is appended to the group's Unschedulable status.
    pub(super) fn apply_group_preemption(
        &mut self,
        profile: &Arc<Profile>,
        info: &PodGroupInfo,
        base: &Arc<Snapshot>,
        result: &mut GroupResult,
    ) {
        let GroupStatus::Unschedulable(status) = &result.status else { return };
        let status = status.clone();
        match self.group_post_filter(profile, info, base) {
            Ok(nominations) => {
                let nominator = self.handle.preemption().nominator();
                result.pods = nominations
                    .into_iter()
                    .map(|(pod, node)| {
                        let wait = Status::unschedulable("pod group is waiting for preemption to complete");
                        if let Some(node) = &node {
                            nominator.add(pod.clone(), node);
                        }
                        PodResult {
                            error: Some(super::ScheduleError::Plugin { pod: pod.pod.key(), status: wait }),
                            requires_preemption: node.is_some(),
                            pod,
                            node,
                            state: None,
                            permit: None,
                        }
                    })
                    .collect();
                result.status = GroupStatus::WaitingOnPreemption;
            }
            Err(s) if s.code() == crate::framework::Code::Error => result.status = GroupStatus::Error(s),
            Err(s) => {
                let mut reasons: Vec<String> = status.reasons().iter().map(ToString::to_string).collect();
                reasons.push(s.message());
                let mut appended = Status::with_reasons(status.code(), reasons);
                if let Some(p) = status.plugin() {
                    appended = appended.with_plugin(p);
                }
                result.status = GroupStatus::Unschedulable(appended);
            }
        }
    }

    /// The group PostFilter (upstream `runWorkloadAwarePreemption` + DefaultPreemption's
    /// `PodGroupPostFilter`, `PodGroupEvaluator.Preempt`): the members with the node
    /// each is nominated to, after the victims were evicted. `base` is never changed;
    /// the handle's snapshot is left as the group algorithm leaves it (the caller
    /// restores `base`).
    fn group_post_filter(
        &mut self,
        profile: &Arc<Profile>,
        info: &PodGroupInfo,
        base: &Arc<Snapshot>,
    ) -> Result<Nominations, Status> {
        if !profile.post_filter_plugins().contains(&names::DEFAULT_PREEMPTION) {
            return Err(Status::unschedulable(MSG_NOT_REGISTERED));
        }
        if info.pod_group.topology_key().is_some() {
            return Err(Status::unschedulable(MSG_TOPOLOGY));
        }
        let group = &info.pod_group;
        let priority = group
            .spec
            .priority
            .unwrap_or_else(|| info.unscheduled_pods.iter().map(|p| p.priority()).min().unwrap_or(0));
        self.preemptor_eligible(info, base, priority)?;
        let mut units = {
            let manager = self.handle.pod_groups();
            let (ns, name) = (group.namespace(), group.name());
            let same_group = |p: &PodInfo| p.pod.scheduling_group_name() == Some(name) && p.pod.namespace() == ns;
            units::build_units(base, |p| manager.pod_group_of(p), same_group)
        };
        units.retain(|u| u.priority < priority);
        if units.is_empty() {
            return Err(Status::unresolvable(MSG_NO_CANDIDATES));
        }
        units.sort_by(units::importance);
        let pdbs = PdbBudgets::new(self.handle.preemption().pod_disruption_budgets(), base);
        let (violating, non_violating) = units::split_by_pdb(units, &pdbs);
        let n_violating = violating.len();
        let mut units = violating;
        units.extend(non_violating);

        let previous = std::mem::replace(&mut self.skip_post_filters, true);
        let outcome = self.choose_victims(profile, info, base, &units, n_violating);
        self.skip_post_filters = previous;
        let (mut victims, nominations) = outcome?;
        let evictor = self.handle.preemption().evictor().ok_or_else(|| {
            Status::error(format!("pod group {}/{}: no evictor to preempt pods with", group.namespace(), group.name()))
        })?;
        // Most important first, PDB-violating or not (upstream sorts `victimsToPreempt`).
        victims.sort_by(|&a, &b| units::importance(&units[a], &units[b]));
        for &v in &victims {
            for (pos, pod) in &units[v].pods {
                if is_terminating(pod) {
                    // Upstream skips the API call for a victim already being deleted.
                    continue;
                }
                let node = base.nodes()[*pos].node().name();
                let preemptor = nominations
                    .iter()
                    .find(|(_, n)| n.as_deref() == Some(node))
                    .or_else(|| nominations.iter().find(|(_, n)| n.is_some()))
                    .map(|(p, _)| p.clone());
                let Some(preemptor) = preemptor else { break };
                evictor.evict(&preemptor, node, pod).map_err(|e| {
                    Status::error(format!("preempting {} for pod group {}: {e}", pod.pod.key(), group.name()))
                })?;
            }
        }
        Ok(nominations)
    }

    /// Upstream `PodGroupEvaluator.preemptorEligibleToPreemptOthers`: no member may
    /// have `preemptionPolicy: Never`, and no member's nominated node may still hold a
    /// terminating lower-priority pod (the room it preempted for is on the way).
    fn preemptor_eligible(&self, info: &PodGroupInfo, base: &Snapshot, priority: i32) -> Result<(), Status> {
        if info.unscheduled_pods.iter().any(|p| p.pod.spec.preemption_policy == Some(PreemptionPolicy::Never)) {
            return Err(Status::unschedulable("not eligible due to preemptionPolicy=Never."));
        }
        let nominator = self.handle.preemption().nominator();
        for p in &info.unscheduled_pods {
            let node = nominator.nominated_node(&p.uid).or_else(|| {
                let n = &p.pod.status.nominated_node_name;
                (!n.is_empty()).then(|| Symbol::intern(n))
            });
            let Some(i) = node.and_then(|n| base.index_of(n)) else { continue };
            // A pod's priority here is its PodGroup's when it has one (upstream
            // `GetPodPriority`), so a terminating member of a higher-priority group
            // does not hold the preemptor back.
            let manager = self.handle.pod_groups();
            let priority_of =
                |v: &PodInfo| manager.pod_group_of(v).and_then(|g| g.spec.priority).unwrap_or_else(|| v.priority());
            if base.nodes()[i].pods().iter().any(|v| is_terminating(v) && priority_of(v) < priority) {
                return Err(Status::unschedulable("not eligible due to a terminating pod on the nominated node."));
            }
        }
        Ok(())
    }

    /// Victims (indices into `units`, whose first `n_violating` violate a PDB) and
    /// each member's node in the feasible run.
    ///
    /// Upstream `selectVictimsOnDomain` (v1.36): with every unit removed the group
    /// must be feasible; then each PDB-violating unit, most important first, is added
    /// back if the group stays feasible; then the others likewise. Re-adding the
    /// non-violating units one by one costs one group run each, so, as KEP-5710 and
    /// an upstream variant of this function do, a binary search over their priority
    /// levels first finds the lowest level whose removal (with everything below it)
    /// suffices and keeps every unit above it; when feasibility only grows as units
    /// are removed this keeps exactly the units the one-by-one pass keeps.
    fn choose_victims(
        &mut self,
        profile: &Arc<Profile>,
        info: &PodGroupInfo,
        base: &Arc<Snapshot>,
        units: &[units::Unit],
        n_violating: usize,
    ) -> Result<(Vec<usize>, Nominations), Status> {
        let mut removed = vec![true; units.len()];
        let Some(mut last) = self.feasible(profile, info, base, units, &removed)? else {
            return Err(Status::unschedulable(MSG_NO_VICTIMS));
        };
        for i in 0..n_violating {
            removed[i] = false;
            match self.feasible(profile, info, base, units, &removed)? {
                Some(n) => last = n,
                None => removed[i] = true,
            }
        }
        // Cut points among the non-violating units: the first unit of each lower
        // priority level, and the end. Keeping units[start..cut] and removing the
        // rest is feasible for cut = start; find the largest feasible cut.
        let start = n_violating;
        if start < units.len() {
            let mut cuts: Vec<usize> =
                (start + 1..units.len()).filter(|&i| units[i].priority != units[i - 1].priority).collect();
            cuts.push(units.len());
            let (mut lo, mut hi, mut safe) = (0, cuts.len(), start);
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                for (j, r) in removed.iter_mut().enumerate().skip(start) {
                    *r = j >= cuts[mid];
                }
                match self.feasible(profile, info, base, units, &removed)? {
                    Some(n) => {
                        safe = cuts[mid];
                        last = n;
                        lo = mid + 1;
                    }
                    None => hi = mid,
                }
            }
            for (j, r) in removed.iter_mut().enumerate().skip(start) {
                *r = j >= safe;
            }
            // The units below the cut, one by one, most important first.
            for j in safe..units.len() {
                removed[j] = false;
                match self.feasible(profile, info, base, units, &removed)? {
                    Some(n) => last = n,
                    None => removed[j] = true,
                }
            }
        }
        let victims = (0..units.len()).filter(|&i| removed[i]).collect();
        Ok((victims, last))
    }

    /// Runs the group algorithm (PostFilters skipped) on `base` without the pods of
    /// the `removed` units: `Some(nodes per member)` when the group is feasible.
    fn feasible(
        &mut self,
        profile: &Arc<Profile>,
        info: &PodGroupInfo,
        base: &Arc<Snapshot>,
        units: &[units::Unit],
        removed: &[bool],
    ) -> Result<Option<Nominations>, Status> {
        let mut gone: Vec<(usize, &str)> = units
            .iter()
            .zip(removed)
            .filter(|(_, r)| **r)
            .flat_map(|(u, _)| u.pods.iter().map(|(pos, p)| (*pos, &*p.uid)))
            .collect();
        gone.sort_unstable_by_key(|g| g.0);
        let mut trial = (**base).clone();
        for chunk in gone.chunk_by(|a, b| a.0 == b.0) {
            let pos = chunk[0].0;
            let mut node = (*trial.nodes()[pos]).clone();
            for (_, uid) in chunk {
                node.remove_pod(uid);
            }
            trial.restore_node_at(pos, Arc::new(node));
        }
        let saved = self.handle.take_snapshot();
        self.handle.put_snapshot(Arc::new(trial));
        let r = self.group_algorithm(profile, info, None);
        self.handle.put_snapshot(saved);
        match r.status {
            GroupStatus::Feasible => Ok(Some(r.pods.into_iter().map(|p| (p.pod, p.node)).collect())),
            GroupStatus::Error(s) => Err(s),
            GroupStatus::Unschedulable(_) | GroupStatus::WaitingOnPreemption => Ok(None),
        }
    }
}
