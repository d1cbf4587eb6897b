//! The scheduling cycle (upstream `pkg/scheduler/schedule_one.go`) and the binding
//! cycle it hands back.
//!
//! [`Scheduler::schedule_one`] runs PreFilter -> Filter (sampled, maybe in parallel)
//! -> PostFilter on no fit -> PreScore -> Score -> NormalizeScore -> weighted sum ->
//! select host -> assume -> Reserve -> Permit, and returns a [`BindingCycle`] the
//! caller runs on any thread: wait at Permit -> PreBind -> Bind -> PostBind.

mod batch;
mod batching;
mod binding;
mod builder;
mod config;
mod filter;
pub(crate) mod filter_chunk;
#[cfg(test)]
mod filter_chunk_tests;
mod fit_error;
mod group_memo;
mod group_preemption;
mod group_prescore;
#[cfg(test)]
mod group_prescore_tests;
mod group_score;
#[cfg(test)]
mod group_score_tests;
mod group_select;
#[cfg(test)]
mod group_sign_tests;
mod group_walk;
#[cfg(test)]
mod group_walk_tests;
mod node_filter;
#[cfg(feature = "parallel")]
mod parallel;
mod pending;
mod placement;
#[cfg(test)]
mod placement_tests;
mod pod_group;
#[cfg(test)]
mod pod_group_copies_tests;
#[cfg(test)]
mod pod_group_tests;
mod run;
mod score;
#[cfg(all(test, feature = "parallel"))]
mod score_parallel_tests;
#[cfg(test)]
mod score_uniform_tests;
#[cfg(test)]
mod submit_tests;

use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;

use batch::OpportunisticBatch;
pub use batch::{BatchAttempt, BatchStats, FlushReason, MAX_BATCH_AGE};
use binding::BindingMetrics;
pub use binding::{BindError, BindingCycle, ReadyToBind};
pub use builder::SchedulerBuilder;
pub use config::{
    MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND, MIN_FEASIBLE_NODES_TO_FIND, ScheduleError, SchedulerConfig, TieBreak,
    num_feasible_nodes_to_find,
};
pub use fit_error::{Diagnosis, FitError};
pub use group_preemption::{MSG_NO_CANDIDATES, MSG_NO_VICTIMS, MSG_NOT_REGISTERED, MSG_TOPOLOGY};
pub use run::{
    Attempt, AttemptOutcome, EventError, Next, PendingBind, PendingBinding, PodState, RunSummary, SCHEDULER_REJECTOR,
    SchedulerEvents,
};

use self::filter::{post_filter, rejecting_plugins};
use crate::framework::metrics::ProfileTimers;
use crate::framework::runtime::{self, PermitOutcome};
use crate::framework::scheduler_metrics::{AttemptResult, MetricPoint, ProfileMetrics, time_point};
use crate::framework::{
    Code, CycleState, Handle, LatencyRecorder, NodeScore, NominatedPods, Profile, Status, WaitingPod,
};
use crate::model::{HeldSymbol, Pod};
use crate::queue::SchedulingQueue;
use crate::rng::SplitMix64;
use crate::snapshot::{Cache, CacheError, NodeList, PodInfo, Snapshot};
/// Per-cycle buffers, kept between cycles so steady-state cycles don't allocate per node.
#[derive(Debug, Default)]
struct Buffers {
    candidates: Vec<usize>,
    /// One bit per snapshot position: the narrowed candidates, marked to restore
    /// snapshot order without sorting.
    marks: Vec<u64>,
    feasible: Vec<usize>,
    failed: Vec<(usize, Status)>,
    scores: Vec<NodeScore>,
    /// Names of the feasible nodes, gathered once per cycle for the pod-group
    /// memo's Score phase (the plain phases write names straight from the nodes).
    names: Vec<crate::model::Symbol>,
    totals: Vec<i64>,
    /// The Score plugins (by position) this cycle runs: those PreScore did not skip.
    active_score: Vec<usize>,
    /// The parallel Score phase's scores: one row of the feasible nodes per active
    /// plugin, filled in one parallel region.
    #[cfg_attr(not(feature = "parallel"), allow(dead_code))]
    plugin_scores: Vec<NodeScore>,
    /// Pods nominated by preemption, taken once per cycle (`None`: none nominated).
    nominated: Option<Arc<NominatedPods>>,
    /// Fragments of the signature being computed for a pod that skipped the queue.
    sign: crate::framework::SignFragments,
    /// Feasible nodes the group memo did not know: snapshot positions, and their
    /// places among the feasible nodes.
    memo_miss: Vec<usize>,
    memo_miss_at: Vec<usize>,
    /// The batched Filter loop's chunk scratch.
    chunk: filter_chunk::ChunkBufs,
}

/// The recorder and, per profile (by position), its plugin timers and its
/// kube-scheduler metrics.
struct MetricsState {
    recorder: Arc<LatencyRecorder>,
    timers: Vec<Arc<ProfileTimers>>,
    profiles: Vec<Arc<ProfileMetrics>>,
}

/// Pod-group cycle shortcuts, on by default; tests compare with them off.
#[derive(Debug, Clone, Copy)]
struct GroupSwitches {
    /// Whether pod-group cycles use the memo.
    memo: bool,
    /// Whether the placement loop may stop at a placement reaching every score bound
    /// (tests of reuse across placements turn it off to run every placement).
    placement_early_stop: bool,
}

/// The scheduler: a cache, one or more profiles, and the cycle.
///
/// ```
/// use schedkit::framework::{Profile, ScoreFn};
/// use schedkit::scheduler::Scheduler;
/// use schedkit::testing::{NodeBuilder, PodBuilder};
///
/// let profile = Profile::builder("default-scheduler")
///     .plugin(ScoreFn::new("MostCpu", |_, _, n| n.allocatable().milli_cpu / 1000))
///     .build()
///     .unwrap();
/// let mut sched = Scheduler::builder().profile(profile).build();
/// sched.add_node(NodeBuilder::new("small").cpu("4").build()).unwrap();
/// sched.add_node(NodeBuilder::new("big").cpu("64").build()).unwrap();
/// let binding = sched.schedule_pod(PodBuilder::new("p").cpu("1").build()).unwrap();
/// assert_eq!(binding.node(), "big");
/// binding.run().unwrap();
/// ```
pub struct Scheduler {
    cache: Arc<Mutex<Cache>>,
    handle: Handle,
    profiles: Vec<Arc<Profile>>,
    config: SchedulerConfig,
    next_start: usize,
    rng: SplitMix64,
    bufs: Buffers,
    #[cfg(feature = "parallel")]
    pool: Option<rayon::ThreadPool>,
    queue: Arc<Mutex<SchedulingQueue>>,
    /// Binding cycles held at Permit, resumed by the loop once resolved.
    parked: Vec<BindingCycle>,
    /// Waiting-pods epoch at the last poll of `parked`.
    parked_epoch: u64,
    /// Earliest Permit deadline among `parked` at the last poll (or since added).
    parked_deadline: Option<std::time::Duration>,
    /// A poll is due regardless of epoch and deadline.
    parked_dirty: bool,
    /// The opt-in latency recorder, with each profile's histograms resolved once.
    metrics: Option<MetricsState>,
    /// The plugin timers of the cycle in progress, when it is sampled.
    timers: Option<Arc<ProfileTimers>>,
    /// The extension-point and attempt metrics of the cycle's profile (every cycle,
    /// when a recorder is set).
    cycle_metrics: Option<Arc<ProfileMetrics>>,
    /// Opportunistic batching, per profile (by position); `None` where it is off.
    batches: Vec<Option<OpportunisticBatch>>,
    /// Scheduling cycles so far (upstream `SchedulingQueue.SchedulingCycle`).
    cycle_count: u64,
    /// Attempts of a pod-group cycle not yet reported by `schedule_next`.
    pending_attempts: std::collections::VecDeque<Attempt>,
    /// Set while workload-aware preemption runs the group algorithm as its feasibility
    /// oracle: PostFilter plugins are skipped (upstream `SetSkipAllPostFilterPlugins`).
    skip_post_filters: bool,
    /// Filter and Score results shared by the members of the pod-group cycle in
    /// progress (`None` outside one).
    group_memo: Option<group_memo::GroupMemo>,
    /// The memo's buffers between pod-group cycles.
    group_memo_spare: group_memo::GroupMemo,
    /// Pod-group cycle shortcuts that tests turn off.
    group_switches: GroupSwitches,
    /// What the memos of past pod-group cycles answered (tests).
    group_memo_stats: group_memo::MemoStats,
    /// The batching signature of each member of the pod-group cycle in progress, by
    /// its index: a member signs the same in every placement, so it is signed once.
    group_signs: Vec<Option<GroupSign>>,
}

/// A pod-group member's batching signature under a profile.
type GroupSign = (Arc<Profile>, Arc<PodInfo>, Option<crate::framework::PodSignature>);

/// Whether the queue signed the pod (and with what), or the cycle must.
enum Signed {
    /// Signed as it entered the queue (`None`: unsigned or not signable).
    ByQueue(Option<crate::framework::PodSignature>),
    /// Not through the queue: sign now if the profile batches.
    NotYet,
}

/// The cycle's batching context: the profile's batch and the pod's signature.
struct CycleBatch {
    profile: usize,
    signature: Option<crate::framework::PodSignature>,
    hint: Option<crate::model::Symbol>,
}

impl std::fmt::Debug for Scheduler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scheduler")
            .field("profiles", &self.profiles.iter().map(|p| p.name()).collect::<Vec<_>>())
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}
impl Scheduler {
    /// The shared cache (the caller feeds node and pod events through it).
    pub fn cache(&self) -> &Arc<Mutex<Cache>> {
        &self.cache
    }

    /// The plugins' handle.
    pub fn handle(&self) -> &Handle {
        &self.handle
    }

    /// The latency recorder, if one was given.
    pub fn latency_recorder(&self) -> Option<&Arc<LatencyRecorder>> {
        self.metrics.as_ref().map(|m| &m.recorder)
    }

    /// Whether the last cycle was timed by the latency recorder.
    pub fn last_cycle_sampled(&self) -> bool {
        self.timers.is_some()
    }

    /// The settings.
    pub fn config(&self) -> &SchedulerConfig {
        &self.config
    }

    /// The profiles.
    pub fn profiles(&self) -> &[Arc<Profile>] {
        &self.profiles
    }

    /// Adds a node to the cache and tells the queue (a node-added event).
    pub fn add_node(&self, node: crate::model::Node) -> Result<(), CacheError> {
        self.events().add_node(node)
    }

    /// The profile serving `pod`.
    pub fn profile_for(&self, pod: &Pod) -> Option<&Arc<Profile>> {
        let name = if pod.spec.scheduler_name.is_empty() {
            crate::framework::DEFAULT_SCHEDULER_NAME
        } else {
            pod.spec.scheduler_name.as_str()
        };
        self.profiles.iter().find(|p| p.name() == name)
    }

    /// Opportunistic batching's counts for the profile named `profile`: `None` when
    /// no such profile batches (the gate or its own setting is off, or a plugin it
    /// enables does not sign).
    pub fn batch_stats(&self, profile: &str) -> Option<BatchStats> {
        let i = self.profiles.iter().position(|p| p.name() == profile)?;
        self.batches.get(i)?.as_ref().map(|b| b.stats)
    }

    /// Validates `pod` and schedules it.
    pub fn schedule_pod(&mut self, pod: Pod) -> Result<BindingCycle, ScheduleError> {
        let info = PodInfo::new(pod)?;
        self.schedule_one(&info)
    }

    /// One scheduling cycle for `pod`. On success the pod is assumed on the chosen
    /// node, reserved and permitted (or waiting at Permit); run the returned
    /// [`BindingCycle`] to bind it, or [`BindingCycle::abort`] it to undo. On failure
    /// nothing is left reserved and the cache is as before.
    pub fn schedule_one(&mut self, pod: &PodInfo) -> Result<BindingCycle, ScheduleError> {
        self.schedule_signed(pod, Signed::NotYet)
    }

    /// [`Scheduler::schedule_one`] with the signature the queue computed, if it did
    /// (`None`: sign now when the profile batches).
    fn schedule_signed(&mut self, pod: &PodInfo, signed: Signed) -> Result<BindingCycle, ScheduleError> {
        self.cycle_count += 1;
        let profile = self
            .profile_for(&pod.pod)
            .cloned()
            .ok_or_else(|| ScheduleError::NoProfile(pod.pod.spec.scheduler_name.clone()))?;
        let pi = self.profiles.iter().position(|p| Arc::ptr_eq(p, &profile)).unwrap_or(0);
        let batch = self.batches.get(pi).is_some_and(Option::is_some).then(|| CycleBatch {
            profile: pi,
            signature: match signed {
                Signed::ByQueue(s) => s,
                Signed::NotYet => crate::framework::sign_pod_with(&profile, pod, &mut self.bufs.sign),
            },
            hint: None,
        });
        let started = self.metrics.as_ref().map(|_| Instant::now());
        let (timers, cycle_metrics) = match &self.metrics {
            Some(m) => {
                let i = self.profiles.iter().position(|p| Arc::ptr_eq(p, &profile));
                let timers = if m.recorder.sample() { i.and_then(|i| m.timers.get(i).cloned()) } else { None };
                (timers, i.and_then(|i| m.profiles.get(i).cloned()))
            }
            None => (None, None),
        };
        self.timers = timers;
        self.cycle_metrics = cycle_metrics;
        let result = self.schedule_one_inner(&profile, pod, started, batch);
        if let (Err(e), Some(m), Some(t)) = (&result, &self.cycle_metrics, started) {
            let rejected = match e {
                ScheduleError::Unschedulable(_) => true,
                ScheduleError::Plugin { status, .. } => status.is_rejected(),
                _ => false,
            };
            m.observe_attempt(AttemptResult::of_failure(rejected), t.elapsed());
        }
        result
    }

    fn schedule_one_inner(
        &mut self,
        profile: &Arc<Profile>,
        pod: &PodInfo,
        started: Option<Instant>,
        batch: Option<CycleBatch>,
    ) -> Result<BindingCycle, ScheduleError> {
        let profile = profile.clone();
        // Take the snapshot out of the handle so the in-place update doesn't copy it,
        // then publish it again for plugins that read it through the handle.
        let mut snap = self.handle.take_snapshot();
        self.cache.lock().update_snapshot(Arc::make_mut(&mut snap));
        self.handle.put_snapshot(snap.clone());
        let result = self.cycle_at(&profile, &snap, pod, batch);
        // The node object is shared with the binding cycle: no copy of its name.
        // The name's reference is copied from the node's, with no lookup by text.
        let result = result.map(|(state, i)| {
            let info = &snap.nodes()[i];
            (state, info.node_arc().clone(), info.held_name().clone())
        });
        drop(snap);
        let (mut state, node, name) = result?;
        let (pod, waiting) = self.assume_reserve_permit(&profile, &mut state, pod, name)?;
        // Assumed: its nomination (if preemption made one) has served its purpose.
        self.handle.preemption().nominator().remove(&pod.uid);
        let metrics =
            started.and_then(|t| self.cycle_metrics.clone().map(|m| BindingMetrics::new(m, self.timers.clone(), t)));
        Ok(BindingCycle::new(profile, self.cache.clone(), self.handle.clone(), state, pod, node, waiting, metrics))
    }

    /// Assumes the pod on `node`, then Reserve and Permit; undoes both on failure.
    fn assume_reserve_permit(
        &self,
        profile: &Profile,
        state: &mut CycleState,
        pod: &PodInfo,
        held: HeldSymbol,
    ) -> Result<(Arc<PodInfo>, Option<Arc<WaitingPod>>), ScheduleError> {
        // The pod object is shared, not copied: the node is recorded beside it
        // (`PodInfo::node_name`), and the derived facts are kept.
        let assumed = Arc::new(pod.assumed_on_held(held));
        let node = assumed.node_name();
        {
            // A pod deleted while its cycle ran (the queue marked it) is not assumed:
            // its delete event has passed, so nothing would take it out of the cache
            // again. The queue lock is held across the assume so a delete can't slip
            // between the check and the assume (event handlers never hold both locks).
            let queue = self.queue.lock();
            if queue.deleted_in_flight(&assumed.uid) {
                return Err(CacheError::PodNotFound(assumed.uid.to_string()).into());
            }
            self.cache.lock().assume_assumed(assumed.clone())?;
        }
        let timers = self.timers.as_deref();
        let m = self.cycle_metrics.as_deref();
        let undo = |state: &mut CycleState, status: Status| {
            time_point(
                m,
                MetricPoint::Unreserve,
                || runtime::run_unreserve_timed(profile, state, &assumed, node, timers.map(|t| &t.unreserve)),
                |()| Code::Success,
            );
            let _ = self.cache.lock().forget_pod(&assumed.uid);
            ScheduleError::Plugin { pod: assumed.pod.key(), status }
        };
        let s = time_point(
            m,
            MetricPoint::Reserve,
            || runtime::run_reserve(profile, state, &assumed, node, timers.map(|t| &t.reserve)),
            Status::code,
        );
        if !s.is_success() {
            return Err(undo(state, s));
        }
        let permit = time_point(
            m,
            MetricPoint::Permit,
            || runtime::run_permit(profile, state, &assumed, node, timers.map(|t| &t.permit)),
            |o| match o {
                PermitOutcome::Allow => Code::Success,
                PermitOutcome::Wait(_) => Code::Wait,
                PermitOutcome::Reject(s) => s.code(),
            },
        );
        match permit {
            PermitOutcome::Allow => Ok((assumed, None)),
            PermitOutcome::Wait(plugins) => {
                let now = self.handle.clock().now();
                let wp = self.handle.waiting_pods().add(&assumed, node, &plugins, now);
                Ok((assumed, Some(wp)))
            }
            PermitOutcome::Reject(s) => Err(undo(state, s)),
        }
    }

    /// PreFilter -> Filter -> (PostFilter) -> PreScore -> Score -> select; the chosen
    /// node by its position in `snap`.
    fn cycle_at(
        &mut self,
        profile: &Arc<Profile>,
        snap: &Snapshot,
        pod: &PodInfo,
        mut batch: Option<CycleBatch>,
    ) -> Result<(CycleState, usize), ScheduleError> {
        let mut state = CycleState::new();
        let n_all = snap.len();
        if n_all == 0 {
            return Err(ScheduleError::NoNodes);
        }
        let fit_error = |diagnosis: Diagnosis| FitError {
            pod: pod.pod.key(),
            num_all_nodes: n_all,
            diagnosis,
            nominated_node: None,
        };
        let timers = self.timers.clone();
        let timers = timers.as_deref();
        let cycle_metrics = self.cycle_metrics.clone();
        let m = cycle_metrics.as_deref();
        // A pod-group member's PreFilters and PreScores kept from its first placement
        // (see `group_prescore.rs`); not while the plugins are timed.
        let pre = time_point(
            m,
            MetricPoint::PreFilter,
            || match (timers, self.group_memo.as_mut()) {
                (None, Some(memo)) => group_prescore::run_pre_filter(memo, profile, &mut state, pod, snap),
                (None, None) => runtime::run_pre_filter(profile, &mut state, pod, snap),
                (Some(t), _) => runtime::run_pre_filter_timed(profile, &mut state, pod, snap, Some(&t.pre_filter)),
            },
            |r| r.as_ref().map_or_else(Status::code, |_| Code::Success),
        );
        let pre = match pre {
            Ok(p) => p,
            Err(s) if s.is_rejected() => {
                let mut d = Diagnosis {
                    pre_filter_msg: Some(s.message()),
                    unschedulable_plugins: s.plugin().into_iter().collect(),
                    ..Diagnosis::default()
                };
                d.node_to_status.absent = Some(s);
                if self.skip_post_filters {
                    return Err(ScheduleError::Unschedulable(Box::new(fit_error(d))));
                }
                return Err(post_filter(profile, &mut state, pod, snap, &self.handle, fit_error(d), m, timers));
            }
            Err(s) => return Err(ScheduleError::Plugin { pod: pod.pod.key(), status: s }),
        };

        // Scheduler extenders (upstream `findNodesThatPassExtenders`, `prioritizeNodes`).
        let extenders = crate::framework::Extenders::of(&self.handle);
        // A pod-group member reuses the Filter results of identical members on nodes
        // that did not change (see `group_memo.rs`).
        if let Some(memo) = self.group_memo.as_mut() {
            memo.filter_on = false;
            memo.score_on = false;
            if extenders.is_none() && timers.is_none() {
                memo.begin_filter(snap.id());
            }
        }
        let extenders_accept = |i: usize| extenders.as_ref().is_none_or(|e| e.accept(pod, snap, i));

        // Opportunistic batching: a hint from the last cycle's scored nodes.
        if let Some(cb) = batch.as_mut() {
            self.batch_hint(profile, &mut state, pod, snap, cb);
        }

        // A pod nominated by an earlier preemption tries its nominated node first
        // (upstream `evaluateNominatedNode`): if it passes Filter there, it goes there.
        if let Some(i) = self.nominated_node_fits(profile, &state, pod, snap, &pre.result)
            && extenders_accept(i)
        {
            if let Some(cb) = &batch {
                self.batch_store(cb, snap, i, false);
            }
            return Ok((state, i));
        }
        // The hinted node alone: if it passes Filter it is the only feasible node.
        if let Some(cb) = &batch
            && let Some(i) = self.batch_try_hint(profile, &state, pod, snap, &pre.result, cb)
            && extenders_accept(i)
        {
            self.batch_store(cb, snap, i, false);
            return Ok((state, i));
        }

        // Candidate nodes: all, or those PreFilter narrowed to (in snapshot order).
        let bufs = &mut self.bufs;
        bufs.feasible.clear();
        bufs.failed.clear();
        let narrowed = !pre.result.all_nodes();
        if narrowed {
            bufs.candidates.clear();
            match (&pre.result.node_names, &pre.result.node_positions) {
                // By position (GpuShareFit's capacity narrowing): the set is the
                // candidate list, in snapshot order, with no lookup per node.
                (None, Some(positions)) => positions.for_each(|i| {
                    if i < n_all {
                        bufs.candidates.push(i);
                    }
                }),
                (Some(names), positions) if names.len() * 8 < n_all => {
                    // A few names (NodeName, a matchFields pin): look each up and
                    // restore snapshot order, so the cycle costs nothing per node of
                    // the cluster.
                    bufs.candidates.extend(
                        names
                            .iter()
                            .filter_map(|&name| snap.index_of(name))
                            .filter(|&i| positions.as_ref().is_none_or(|p| p.contains(i))),
                    );
                    bufs.candidates.sort_unstable();
                }
                (names, positions) => {
                    // Many names (a capacity narrowing by name): look each up and mark
                    // its position, then read the marks in order — a lookup per name,
                    // not per node.
                    bufs.marks.clear();
                    bufs.marks.resize(n_all.div_ceil(64), 0);
                    for i in names.iter().flatten().filter_map(|&name| snap.index_of(name)) {
                        bufs.marks[i / 64] |= 1 << (i % 64);
                    }
                    for (w, &word) in bufs.marks.iter().enumerate() {
                        let mut word = word;
                        while word != 0 {
                            let i = w * 64 + word.trailing_zeros() as usize;
                            if positions.as_ref().is_none_or(|p| p.contains(i)) {
                                bufs.candidates.push(i);
                            }
                            word &= word - 1;
                        }
                    }
                }
            }
        }
        let n_cand = if narrowed { bufs.candidates.len() } else { n_all };
        bufs.nominated = self.handle.preemption().nominator().snapshot();
        if bufs.nominated.is_some()
            && let Some(memo) = self.group_memo.as_mut()
        {
            memo.decline();
        }
        let pct = profile.percentage_of_nodes_to_score().unwrap_or(self.config.percentage_of_nodes_to_score);
        let to_find = num_feasible_nodes_to_find(pct, n_cand);
        if let Some(memo) = self.group_memo.as_mut() {
            memo.plan(profile, pod, &state, to_find, n_cand);
        }
        let start = self.next_start % n_all;
        let processed = self.find_feasible_or_replay(profile, &state, pod, snap, narrowed, n_cand, to_find, start);
        self.next_start = (start + processed) % n_all;

        if let Some((_, s)) = self.bufs.failed.iter().find(|(_, s)| s.code() == Code::Error) {
            return Err(ScheduleError::Plugin { pod: pod.pod.key(), status: s.clone() });
        }
        let extenders_removed = match &extenders {
            Some(e) => e
                .filter(pod, snap, &mut self.bufs.feasible, &mut self.bufs.failed)
                .map_err(|status| ScheduleError::Plugin { pod: pod.pod.key(), status })?,
            None => false,
        };
        if self.bufs.feasible.is_empty() {
            // The statuses go out with the error; the buffer keeps its capacity so the
            // next cycle doesn't regrow it node by node.
            let cap = self.bufs.failed.capacity();
            let statuses = std::mem::replace(&mut self.bufs.failed, Vec::with_capacity(cap));
            let mut d = Diagnosis { unschedulable_plugins: rejecting_plugins(&statuses), ..Diagnosis::default() };
            if extenders_removed {
                crate::framework::extender::add_extender_name(&mut d.unschedulable_plugins);
            }
            if narrowed {
                d.node_to_status.absent = Some(Status::unresolvable(format!(
                    "node(s) didn't satisfy plugin(s) {}",
                    runtime::go_string_list(&pre.narrowing_plugins)
                )));
            }
            d.node_to_status.statuses = statuses;
            if self.skip_post_filters {
                return Err(ScheduleError::Unschedulable(Box::new(fit_error(d))));
            }
            return Err(post_filter(profile, &mut state, pod, snap, &self.handle, fit_error(d), m, timers));
        }
        if self.bufs.feasible.len() == 1 {
            let i = self.bufs.feasible[0];
            if let Some(cb) = &batch {
                self.batch_store(cb, snap, i, false);
            }
            return Ok((state, i));
        }
        let s = {
            let nodes = NodeList::new(snap, &self.bufs.feasible);
            let memo = self.group_memo.as_mut().filter(|_| timers.is_none());
            time_point(
                m,
                MetricPoint::PreScore,
                || match memo {
                    Some(memo) => group_prescore::run_pre_score(memo, profile, &mut state, pod, nodes),
                    None => runtime::run_pre_score(profile, &mut state, pod, nodes, timers.map(|t| &t.pre_score)),
                },
                Status::code,
            )
        };
        if !s.is_success() {
            return Err(ScheduleError::Plugin { pod: pod.pod.key(), status: s });
        }
        if let Some(memo) = self.group_memo.as_mut()
            && memo.filter_on
        {
            memo.begin_score(profile, pod, &state);
        }
        // Batch rescoring keeps the raw scores of this evaluation.
        let rescoring =
            batch.as_ref().and_then(|cb| self.batches.get_mut(cb.profile)?.as_mut()).filter(|b| b.rescoring());
        let mut raw = rescoring.map(batch::OpportunisticBatch::take_raw_buffer);
        let scored = time_point(
            m,
            MetricPoint::Score,
            || self.score(profile, &state, pod, snap, raw.as_mut()),
            |r| r.as_ref().map_or_else(Status::code, |()| Code::Success),
        );
        if let Some(r) = raw
            && let Some(b) = batch.as_ref().and_then(|cb| self.batches.get_mut(cb.profile)?.as_mut())
        {
            b.put_raw_buffer(r);
        }
        scored.map_err(|s| ScheduleError::Plugin { pod: pod.pod.key(), status: s })?;
        if let Some(e) = &extenders {
            e.prioritize(pod, snap, &self.bufs.feasible, &mut self.bufs.totals, profile.has_score_plugins());
        }
        // The same choice and generator stream as upstream's walk, computing only the
        // draws that can decide it (see `group_select.rs`): many feasible nodes tie
        // (a pod-group member's on most of a placement, any pod's on equal nodes).
        let best = self.select_host_group(snap);
        if let Some(cb) = &batch {
            self.batch_store(cb, snap, best, true);
        }
        Ok((state, best))
    }
}
