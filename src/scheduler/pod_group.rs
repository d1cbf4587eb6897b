//! The v1.36 pod-group scheduling cycle (upstream `pkg/scheduler/schedule_one_podgroup.go`):
//! one popped member pulls its unscheduled siblings out of the queue, they are tried
//! in order against one snapshot, each assumed into it, reserved and Permit-evaluated
//! without parking; the group is feasible when a pod's Permit allows (a gang's pod
//! reaching `minCount`, a basic group's first fitting pod). Every assumption is then
//! reverted, so the snapshot ends as it began; on success the fitting pods go through
//! the ordinary assume → Reserve → Permit (parked while a gang waits) → binding.
//!
//! The placement algorithm (`TopologyAwareWorkloadScheduling`) lives in `placement.rs`,
//! workload-aware preemption (`WorkloadAwarePreemption`: one group PostFilter when the
//! group is unschedulable) in `group_preemption.rs`.
//!
//! # This cycle or Coscheduling?
//!
//! Use this native cycle (gates `GenericWorkload` + `GangScheduling`) when pods name a
//! v1.36 `PodGroup` in `spec.schedulingGroup`: the whole group is tried against one
//! snapshot and nothing is assumed unless enough members fit, placements keep a group
//! in one topology domain, shared DRA claims are made once per group
//! (`DRAWorkloadResourceClaims`) and preemption can be planned for the whole group.
//! Use the scheduler-plugins `Coscheduling` plugin for pods labelled with a
//! `scheduling.x-k8s.io/pod-group` and its `PodGroup` CRD (`minMember`):
//! members are scheduled one by one and held at Permit until
//! enough arrive, which is what clusters running scheduler-plugins today rely on. The
//! two do not mix for one pod: a pod with `spec.schedulingGroup` always takes this
//! cycle while the gate is on.

use std::sync::Arc;

use super::run::{Attempt, AttemptOutcome};
use super::{BindingCycle, CycleBatch, ScheduleError, Scheduler};
use crate::framework::runtime::{self, PermitOutcome};
use crate::framework::{Code, CycleState, Feature, PodGroupInfo, Profile, QueuedPodInfo, Status};
use crate::snapshot::{MemberState, NodeInfo, PodInfo};

/// Name the cycle's own rejections carry so GangScheduling's queueing hints (PodGroup
/// added) bring the pods back.
const GANG_PLUGIN: &str = "GangScheduling";

/// Group status at the end of one algorithm run (upstream `podGroupAlgorithmStatus`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum GroupStatus {
    /// The group may be scheduled.
    Feasible,
    /// Feasible only after preemption: the pods wait with their nominations.
    WaitingOnPreemption,
    /// Not feasible; the status says why.
    Unschedulable(Status),
    /// A plugin failed; the status says how.
    Error(Status),
}

/// One pod's outcome in an algorithm run (upstream `algorithmResult`).
#[derive(Debug)]
pub(crate) struct PodResult {
    /// The pod.
    pub pod: Arc<PodInfo>,
    /// The node it fits on (or was nominated for after preemption).
    pub node: Option<String>,
    /// Its cycle state, when it got a node.
    pub state: Option<CycleState>,
    /// Why it did not fit (`None` when it fits).
    pub error: Option<ScheduleError>,
    /// Its Permit evaluation (`Success`, `Wait` or the rejection), when evaluated.
    pub permit: Option<Status>,
    /// It fits only after preemption (PostFilter nominated `node`).
    pub requires_preemption: bool,
}

/// An algorithm run's outcome.
#[derive(Debug)]
pub(crate) struct GroupResult {
    pub status: GroupStatus,
    pub pods: Vec<PodResult>,
}

/// One assumption made into the working snapshot, to undo at the end.
struct Assumed {
    pod: usize,
    pos: usize,
    before: Arc<NodeInfo>,
    info: Arc<PodInfo>,
}

impl Scheduler {
    /// Runs one pod-group cycle for `first` and its siblings and queues every pod's
    /// attempt in `pending_attempts`.
    pub(super) fn schedule_pod_group(&mut self, first: QueuedPodInfo) {
        self.cycle_count += 1;
        self.timers = None;
        self.cycle_metrics = None;
        let groups = self.handle.pod_groups();
        let ns = first.pod.pod.metadata.namespace.clone();
        let name = first.pod.pod.scheduling_group_name().unwrap_or_default().to_owned();
        let mut members = vec![first];
        let siblings: Vec<Arc<str>> = groups
            .states()
            .with(&ns, &name, |s| s.map(|s| s.unscheduled_pods().map(|p| p.uid.clone()).collect()).unwrap_or_default());
        {
            let mut q = self.queue.lock();
            let first_uid = members[0].pod.uid.clone();
            for uid in siblings.iter().filter(|u| **u != first_uid) {
                if let Some(q) = q.pop_specific(uid) {
                    members.push(q);
                }
            }
        }
        // Upstream order: priority descending, then first enqueue time.
        members.sort_by(|a, b| {
            b.pod.priority().cmp(&a.pod.priority()).then(a.initial_attempt_timestamp.cmp(&b.initial_attempt_timestamp))
        });
        let mut pods = Vec::with_capacity(members.len());
        let mut signatures = Vec::with_capacity(members.len());
        for m in members {
            if m.pod.pod.metadata.deletion_timestamp.is_some() {
                let _ = self.queue.lock().done(&m.pod.uid);
                self.pending_attempts.push_back(Attempt { pod: m.pod, outcome: AttemptOutcome::Dropped });
            } else {
                pods.push(m.pod);
                signatures.push(m.signature);
            }
        }
        if pods.is_empty() {
            return;
        }
        let Some(group) = self.handle.pod_groups().pod_group(&ns, &name) else {
            let status =
                Status::unresolvable(format!("waiting for pods's pod group {name:?} to appear in scheduling queue"))
                    .with_plugin(GANG_PLUGIN);
            self.fail_all(&pods, &status);
            return;
        };
        let scheduler_name = &pods[0].pod.spec.scheduler_name;
        if pods.iter().any(|p| &p.pod.spec.scheduler_name != scheduler_name) {
            let status = Status::error("all pods in a single pod group should have the same .spec.schedulerName set");
            self.fail_all(&pods, &status);
            return;
        }
        let Some(profile) = self.profile_for(&pods[0].pod).cloned() else {
            for p in pods {
                let e = ScheduleError::NoProfile(p.pod.spec.scheduler_name.clone());
                let outcome = self.cycle_failed(&p, e);
                self.pending_attempts.push_back(Attempt { pod: p, outcome });
            }
            return;
        };
        self.seed_group_signs(&profile, &pods, signatures);
        let info = PodGroupInfo { pod_group: group, unscheduled_pods: pods };
        // One snapshot for the whole group, held by the handle alone so members are
        // assumed into it in place (and undone in place), never copied.
        let mut snap = self.handle.take_snapshot();
        self.cache.lock().update_snapshot(Arc::make_mut(&mut snap));
        let mark = snap.assume_mark();
        self.handle.put_snapshot(snap);
        if self.group_switches.memo {
            let mut memo = std::mem::take(&mut self.group_memo_spare);
            memo.start(&profile);
            if self.handle.feature_gates().enabled(Feature::WorkloadAwarePreemption) {
                // Preemption may try the whole group again.
                memo.pre.keep();
            }
            self.group_memo = Some(memo);
        }
        let mut result = if self.handle.feature_gates().enabled(Feature::TopologyAwareWorkloadScheduling) {
            self.placement_algorithm(&profile, &info)
        } else {
            self.group_algorithm(&profile, &info, None)
        };
        // Upstream `podGroupCycle`: an Unschedulable group tries workload-aware preemption.
        if self.handle.feature_gates().enabled(Feature::WorkloadAwarePreemption) {
            let base = self.handle.snapshot();
            self.apply_group_preemption(&profile, &info, &base, &mut result);
        }
        if let Some(mut memo) = self.group_memo.take() {
            self.group_memo_stats.filter_hits += memo.stats.filter_hits;
            self.group_memo_stats.score_hits += memo.stats.score_hits;
            self.group_memo_stats.keys_signed += memo.stats.keys_signed;
            self.group_memo_stats.columns_reused += memo.stats.columns_reused;
            self.group_memo_stats.members_plain += memo.stats.members_plain;
            self.group_memo_stats.walks_replayed += memo.stats.walks_replayed;
            self.group_memo_stats.pre_reused += memo.stats.pre_reused;
            memo.end_cycle();
            self.group_memo_spare = memo;
        }
        self.group_signs.clear();
        // The snapshot as it was before the cycle (every assumption was undone).
        let mut snap = self.handle.take_snapshot();
        Arc::make_mut(&mut snap).assumptions_undone(mark);
        self.handle.put_snapshot(snap);
        // The cycle's reference to the PodGroup goes first, so recording its condition
        // does not copy the object.
        drop(info);
        self.submit(&profile, &ns, &name, result);
        self.activate_requested();
    }

    fn fail_all(&mut self, pods: &[Arc<PodInfo>], status: &Status) {
        for p in pods {
            let e = ScheduleError::Plugin { pod: p.pod.key(), status: status.clone() };
            let outcome = self.cycle_failed(p, e);
            self.pending_attempts.push_back(Attempt { pod: p.clone(), outcome });
        }
    }

    /// The default algorithm (upstream `podGroupSchedulingDefaultAlgorithm`) on the
    /// handle's snapshot, restricted to `placement` (positions in it) when given.
    /// Members are assumed into the snapshot in place and every assumption is
    /// reverted in place before it returns, so the snapshot's nodes end as they
    /// began; the caller holds no other reference to it, so nothing is copied but
    /// the nodes a member lands on.
    pub(crate) fn group_algorithm(
        &mut self,
        profile: &Arc<Profile>,
        info: &PodGroupInfo,
        placement: Option<&[usize]>,
    ) -> GroupResult {
        // Upstream `AssumePlacement`: a view of the placement's nodes (one step per
        // placement node), the full snapshot put back at the end.
        let full = placement.map(|p| {
            let full = self.handle.take_snapshot();
            self.handle.put_snapshot(Arc::new(full.restricted(p)));
            full
        });
        let mut status = GroupStatus::Unschedulable(Status::unschedulable("pod group is unschedulable"));
        let mut waiting_plugin: Option<&'static str> = None;
        let mut any_preemption = false;
        let mut results: Vec<PodResult> = Vec::with_capacity(info.unscheduled_pods.len());
        let mut assumed: Vec<Assumed> = Vec::new();
        // Opportunistic batching as in every cycle: the members share this cycle's
        // count, so one member's scored nodes hint the next identical member's node
        // (upstream `GetNodeHint` with `GenericWorkload`).
        let pi = self.profiles.iter().position(|p| Arc::ptr_eq(p, profile));
        let batching = pi.filter(|&i| self.batches.get(i).is_some_and(Option::is_some));
        for (i, pod) in info.unscheduled_pods.iter().enumerate() {
            if let Some(memo) = self.group_memo.as_mut() {
                memo.members_left = info.unscheduled_pods.len() - i;
                memo.set_member(i, pod);
            }
            let batch = batching.map(|profile_index| CycleBatch {
                profile: profile_index,
                signature: self.member_signature(profile, i, pod),
                hint: None,
            });
            let snap = self.handle.snapshot();
            // The chosen node by name, and by its position in the view with the node's
            // own reference on its name (no lookup by text).
            let outcome = self.cycle_at(profile, &snap, pod, batch).map(|(state, at)| {
                let info = &snap.nodes()[at];
                (state, info.node().name().to_owned(), (at, info.held_name().clone()))
            });
            drop(snap);
            let (state, node, at, requires_preemption, error) = match outcome {
                Ok((state, node, at)) => (Some(state), Some(node), Some(at), false, None),
                Err(ScheduleError::Unschedulable(fit)) if fit.nominated_node.is_some() => {
                    let node = fit.nominated_node.clone();
                    (Some(CycleState::new()), node, None, true, Some(ScheduleError::Unschedulable(fit)))
                }
                Err(e) => {
                    let is_error = match &e {
                        ScheduleError::Unschedulable(_) => false,
                        ScheduleError::Plugin { status, .. } => !status.is_rejected(),
                        _ => true,
                    };
                    if is_error {
                        let s = match &e {
                            ScheduleError::Plugin { status, .. } => status.clone(),
                            other => Status::error(other.to_string()),
                        };
                        status = GroupStatus::Error(Status::error(format!(
                            "failed to schedule other pod from a pod group: {}",
                            s.message()
                        )));
                        any_preemption = false;
                        results.push(PodResult {
                            pod: pod.clone(),
                            node: None,
                            state: None,
                            error: Some(e),
                            permit: None,
                            requires_preemption: false,
                        });
                        break;
                    }
                    results.push(PodResult {
                        pod: pod.clone(),
                        node: None,
                        state: None,
                        error: Some(e),
                        permit: None,
                        requires_preemption: false,
                    });
                    continue;
                }
            };
            let (mut state, node) = (state.unwrap_or_default(), node.unwrap_or_default());
            // Assume into the snapshot, Reserve, then evaluate Permit without parking.
            let ai = Arc::new(match &at {
                Some((_, held)) => pod.assumed_on_held(held.clone()),
                None => pod.assumed_on(&node),
            });
            let pos = {
                let mut snap = self.handle.take_snapshot();
                let s = Arc::make_mut(&mut snap);
                let pos = match at {
                    Some((at, _)) => Some(at),
                    None => crate::model::Symbol::lookup(&node).and_then(|n| s.index_of(n)),
                };
                if let Some(pos) = pos {
                    assumed.push(Assumed { pod: i, pos, before: s.nodes()[pos].clone(), info: ai.clone() });
                    s.assume_pod_at(pos, ai.clone());
                }
                self.handle.put_snapshot(snap);
                pos
            };
            self.handle.pod_groups().states().set(&ai, MemberState::Assumed);
            let reserve = runtime::run_reserve(profile, &mut state, &ai, &node, None);
            let permit = if reserve.is_success() {
                match runtime::run_permit(profile, &mut state, &ai, &node, None) {
                    PermitOutcome::Allow => Status::SUCCESS,
                    PermitOutcome::Wait(plugins) => {
                        let plugin = plugins.first().map_or(GANG_PLUGIN, |(p, _)| *p);
                        waiting_plugin.get_or_insert(plugin);
                        Status::new(Code::Wait, "waiting at Permit").with_plugin(plugin)
                    }
                    PermitOutcome::Reject(s) => s,
                }
            } else {
                reserve
            };
            if !matches!(permit.code(), Code::Success | Code::Wait) {
                // Rejected: revert this pod now.
                runtime::run_unreserve_timed(profile, &mut state, &ai, &node, None);
                if pos.is_some()
                    && let Some(a) = assumed.pop()
                {
                    self.restore(&a);
                }
                self.handle.pod_groups().states().set(pod, MemberState::Unscheduled);
                // The rejection is the pod's own status (upstream records no permit status).
                let error = ScheduleError::Plugin { pod: pod.pod.key(), status: permit };
                results.push(PodResult {
                    pod: pod.clone(),
                    node: None,
                    state: None,
                    error: Some(error),
                    permit: None,
                    requires_preemption: false,
                });
                continue;
            }
            any_preemption |= requires_preemption;
            if permit.is_success() && matches!(status, GroupStatus::Unschedulable(_)) {
                status = GroupStatus::Feasible;
            }
            results.push(PodResult {
                pod: pod.clone(),
                node: Some(node),
                state: Some(state),
                error,
                permit: Some(permit),
                requires_preemption,
            });
        }
        if status == GroupStatus::Feasible && any_preemption {
            status = GroupStatus::WaitingOnPreemption;
        }
        if let (GroupStatus::Unschedulable(s), Some(p)) = (&mut status, waiting_plugin) {
            *s = s.clone().with_plugin(p);
        }
        // Deferred reverts, newest first: Unreserve, forget from the snapshot.
        for a in assumed.iter().rev() {
            let r = &mut results[a.pod];
            if let (Some(state), Some(node)) = (r.state.as_mut(), r.node.as_deref()) {
                runtime::run_unreserve_timed(profile, state, &a.info, node, None);
            }
            self.restore(a);
            self.handle.pod_groups().states().set(&r.pod, MemberState::Unscheduled);
        }
        if let Some(full) = full {
            self.handle.put_snapshot(full);
        }
        GroupResult { status, pods: results }
    }

    /// Member `i`'s batching signature, signed in the first placement that runs it.
    fn member_signature(
        &mut self,
        profile: &Arc<Profile>,
        i: usize,
        pod: &Arc<PodInfo>,
    ) -> Option<crate::framework::PodSignature> {
        if let Some(Some((pr, p, sig))) = self.group_signs.get(i)
            && Arc::ptr_eq(p, pod)
            && Arc::ptr_eq(pr, profile)
        {
            return sig.clone();
        }
        let sig = crate::framework::sign_pod_with(profile, pod, &mut self.bufs.sign);
        if self.group_signs.len() <= i {
            self.group_signs.resize_with(i + 1, || None);
        }
        self.group_signs[i] = Some((profile.clone(), pod.clone(), sig.clone()));
        sig
    }

    /// Takes the members' batching signatures from the queue, which signed each pod
    /// under its profile as it entered (upstream v1.36 `QueuedPodInfo.PodSignature`),
    /// so no member is signed again in the cycle. Only while the profile batches: the
    /// queue signs exactly then, with the same profile.
    fn seed_group_signs(
        &mut self,
        profile: &Arc<Profile>,
        pods: &[Arc<PodInfo>],
        signatures: Vec<Option<crate::framework::PodSignature>>,
    ) {
        self.group_signs.clear();
        let pi = self.profiles.iter().position(|p| Arc::ptr_eq(p, profile));
        if !pi.is_some_and(|i| self.batches.get(i).is_some_and(Option::is_some)) {
            return;
        }
        self.group_signs
            .extend(pods.iter().zip(signatures).map(|(pod, sig)| Some((profile.clone(), pod.clone(), sig))));
    }

    fn restore(&self, a: &Assumed) {
        let mut snap = self.handle.take_snapshot();
        Arc::make_mut(&mut snap).restore_node_at(a.pos, a.before.clone());
        self.handle.put_snapshot(snap);
    }

    /// Hands each pod to binding or back to the queue (upstream
    /// `submitPodGroupAlgorithmResult`) and records the `PodGroupScheduled` condition
    /// of the PodGroup `namespace/name`.
    pub(super) fn submit(&mut self, profile: &Arc<Profile>, namespace: &str, name: &str, result: GroupResult) {
        let now = self.handle.clock().now();
        let groups = self.handle.pod_groups();
        match &result.status {
            GroupStatus::Feasible => groups.set_scheduled_condition(namespace, name, None, now),
            GroupStatus::Unschedulable(s) => groups.set_scheduled_condition(
                namespace,
                name,
                Some((crate::model::workload::REASON_UNSCHEDULABLE, s.message())),
                now,
            ),
            GroupStatus::WaitingOnPreemption => groups.set_scheduled_condition(
                namespace,
                name,
                Some((
                    crate::model::workload::REASON_UNSCHEDULABLE,
                    "pod group is waiting for preemption to complete".to_owned(),
                )),
                now,
            ),
            GroupStatus::Error(s) => groups.set_scheduled_condition(
                namespace,
                name,
                Some((crate::model::workload::REASON_SCHEDULER_ERROR, s.message())),
                now,
            ),
        }
        for r in result.pods {
            let pod = r.pod.clone();
            // Upstream `submitPodGroupAlgorithmResult`: while the group waits on
            // preemption every member with a node keeps it as its nominated node
            // (`ModeOverride`); any other failed member loses its nomination.
            if !matches!(result.status, GroupStatus::Feasible) {
                let nominator = self.handle.preemption().nominator();
                match (&result.status, &r.node) {
                    (GroupStatus::WaitingOnPreemption, Some(node)) => nominator.add(pod.clone(), node),
                    _ => {
                        nominator.remove(&pod.uid);
                    }
                }
            }
            let outcome = match (&result.status, r.error, r.node, r.state) {
                (GroupStatus::Feasible, None, Some(node), Some(mut state)) => {
                    match self.assume_reserve_permit(profile, &mut state, &pod, crate::model::HeldSymbol::new(&node)) {
                        Ok((assumed, waiting)) => {
                            self.handle.preemption().nominator().remove(&assumed.uid);
                            let b = BindingCycle::new(
                                profile.clone(),
                                self.cache.clone(),
                                self.handle.clone(),
                                state,
                                assumed,
                                node,
                                waiting,
                                None,
                            );
                            self.park_or_finish(b)
                        }
                        Err(e) => self.cycle_failed(&pod, e),
                    }
                }
                (GroupStatus::Error(s), error, _, _) => {
                    let own_error =
                        error.filter(|e| matches!(e, ScheduleError::Plugin { status, .. } if !status.is_rejected()));
                    let e =
                        own_error.unwrap_or_else(|| ScheduleError::Plugin { pod: pod.pod.key(), status: s.clone() });
                    self.cycle_failed(&pod, e)
                }
                (_, Some(e), _, _) if !r.requires_preemption => self.cycle_failed(&pod, e),
                (GroupStatus::WaitingOnPreemption, Some(e), _, _) => self.cycle_failed(&pod, e),
                (status, _, _, _) => {
                    let mut s = match status {
                        GroupStatus::Unschedulable(s) => s.clone(),
                        _ => Status::unschedulable("pod group is waiting for preemption to complete"),
                    };
                    // The plugin that held this pod at Permit is the one whose events
                    // may bring it back.
                    if let Some(p) = r.permit.as_ref().filter(|p| p.code() == Code::Wait).and_then(Status::plugin) {
                        s = s.with_plugin(p);
                    }
                    self.cycle_failed(&pod, ScheduleError::Plugin { pod: pod.pod.key(), status: s })
                }
            };
            self.pending_attempts.push_back(Attempt { pod, outcome });
        }
    }

    /// Parks a binding held at Permit, or runs it (what `schedule_next` does).
    fn park_or_finish(&mut self, binding: BindingCycle) -> AttemptOutcome {
        if binding.is_waiting() {
            let node = binding.node().to_owned();
            if let Some(d) = binding.permit_deadline() {
                self.parked_deadline = Some(self.parked_deadline.map_or(d, |p| p.min(d)));
            }
            self.parked_dirty = true;
            self.parked.push(binding);
            AttemptOutcome::Waiting(node)
        } else {
            self.finish(binding)
        }
    }
}
