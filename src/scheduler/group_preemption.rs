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
//! The victim search follows KEP-5710 §"Preemption algorithm" for the whole-cluster
//! domain: every pod of lower priority is a candidate; if the group is infeasible even
//! without all of them, preemption fails; a binary search over the candidates' priority
//! levels finds the lowest level N whose removal (all candidates of priority ≤ N) makes
//! the group feasible; then candidates are reprieved one by one, most important first
//! (priority, then earlier start), while the group stays feasible. schedkit's choices
//! where the KEP leaves room: the group's priority is `spec.priority` when set, else its
//! lowest member priority (a member never preempts a pod it could not preempt alone);
//! PodDisruptionBudgets are not consulted and `disruptionMode: PodGroup` victims are
//! not evicted as a unit.

use std::sync::Arc;

use ahash::AHashSet;

use super::Scheduler;
use super::pod_group::{GroupResult, GroupStatus, PodResult};
use crate::framework::preemption::more_important;
use crate::framework::{PodGroupInfo, Profile, Status};
use crate::plugins::names;
use crate::snapshot::{PodInfo, Snapshot};

/// Upstream's status when no PodGroupPostFilter plugin (DefaultPreemption) is enabled.
pub const MSG_NOT_REGISTERED: &str =
    "default preemption plugin is not registered, workload aware preemption is disabled";
/// Upstream's status for a group with topology constraints.
pub const MSG_TOPOLOGY: &str = "workload aware preemption is not supported for pod groups with scheduling constraints";
/// schedkit's status when even removing every lower-priority pod does not help.
pub const MSG_NO_VICTIMS: &str = "pod group is unschedulable even after preempting all lower priority pods";

/// Each member with the node it is nominated to (`None`: it does not fit).
type Nominations = Vec<(Arc<PodInfo>, Option<String>)>;

/// A victim candidate: where it runs and the pod.
struct Candidate {
    pos: usize,
    pod: Arc<PodInfo>,
}

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
    /// `PodGroupPostFilter`): the members with the node each is nominated to, after the
    /// victims were evicted. `base` is never changed; the handle's snapshot is left as
    /// the group algorithm leaves it (the caller restores `base`).
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
        let mut candidates: Vec<Candidate> = Vec::new();
        for (pos, n) in base.nodes().iter().enumerate() {
            for p in n.pods() {
                let same_group = p.pod.metadata.namespace == group.metadata.namespace
                    && p.pod.scheduling_group_name() == Some(group.name());
                if p.priority() < priority && !same_group {
                    candidates.push(Candidate { pos, pod: p.clone() });
                }
            }
        }
        // Most important first: the reprieve order.
        candidates.sort_by(|a, b| {
            if more_important(&a.pod, &b.pod) {
                std::cmp::Ordering::Less
            } else if more_important(&b.pod, &a.pod) {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        });
        let previous = std::mem::replace(&mut self.skip_post_filters, true);
        let outcome = self.choose_victims(profile, info, base, &candidates);
        self.skip_post_filters = previous;
        let (victims, nominations) = outcome?;
        let evictor = self.handle.preemption().evictor().ok_or_else(|| {
            Status::error(format!("pod group {}/{}: no evictor to preempt pods with", group.namespace(), group.name()))
        })?;
        for &v in &victims {
            let c = &candidates[v];
            let node = base.nodes()[c.pos].node().name();
            let preemptor = nominations
                .iter()
                .find(|(_, n)| n.as_deref() == Some(node))
                .or(nominations.first())
                .map(|(p, _)| p.clone());
            let Some(preemptor) = preemptor else { break };
            evictor.evict(&preemptor, node, &c.pod).map_err(|e| {
                Status::error(format!("preempting {} for pod group {}: {e}", c.pod.pod.key(), group.name()))
            })?;
        }
        Ok(nominations)
    }

    /// Victims (indices into `candidates`) and each member's node in the feasible run.
    fn choose_victims(
        &mut self,
        profile: &Arc<Profile>,
        info: &PodGroupInfo,
        base: &Arc<Snapshot>,
        candidates: &[Candidate],
    ) -> Result<(Vec<usize>, Nominations), Status> {
        let mut levels: Vec<i32> = candidates.iter().map(|c| c.pod.priority()).collect();
        levels.sort_unstable();
        levels.dedup();
        let Some(&top) = levels.last() else { return Err(Status::unschedulable(MSG_NO_VICTIMS)) };
        let upto = |level: i32| -> Vec<usize> {
            (0..candidates.len()).filter(|&i| candidates[i].pod.priority() <= level).collect()
        };
        if self.feasible(profile, info, base, candidates, &upto(top))?.is_none() {
            return Err(Status::unschedulable(MSG_NO_VICTIMS));
        }
        // The lowest priority level whose removal makes the group feasible.
        let (mut lo, mut hi) = (0, levels.len() - 1);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.feasible(profile, info, base, candidates, &upto(levels[mid]))?.is_some() {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        let mut victims = upto(levels[lo]);
        // Reprieve, most important first, while the group stays feasible.
        let order = victims.clone();
        for v in order {
            let trial: Vec<usize> = victims.iter().copied().filter(|&x| x != v).collect();
            if self.feasible(profile, info, base, candidates, &trial)?.is_some() {
                victims = trial;
            }
        }
        let nominations = self
            .feasible(profile, info, base, candidates, &victims)?
            .ok_or_else(|| Status::error("workload aware preemption: the chosen victims no longer suffice"))?;
        Ok((victims, nominations))
    }

    /// Runs the group algorithm (PostFilters skipped) on `base` without `victims`:
    /// `Some(nodes per member)` when the group is feasible.
    fn feasible(
        &mut self,
        profile: &Arc<Profile>,
        info: &PodGroupInfo,
        base: &Arc<Snapshot>,
        candidates: &[Candidate],
        victims: &[usize],
    ) -> Result<Option<Nominations>, Status> {
        let mut trial = (**base).clone();
        let mut by_node: Vec<(usize, AHashSet<&str>)> = Vec::new();
        for &v in victims {
            let c = &candidates[v];
            match by_node.iter_mut().find(|(p, _)| *p == c.pos) {
                Some((_, set)) => {
                    set.insert(&c.pod.uid);
                }
                None => by_node.push((c.pos, std::iter::once(&*c.pod.uid).collect())),
            }
        }
        for (pos, uids) in by_node {
            let mut node = (*trial.nodes()[pos]).clone();
            for uid in uids {
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
