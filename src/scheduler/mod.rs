//! The scheduling cycle (upstream `pkg/scheduler/schedule_one.go`) and the binding
//! cycle it hands back.
//!
//! [`Scheduler::schedule_one`] runs PreFilter -> Filter (sampled, maybe in parallel)
//! -> PostFilter on no fit -> PreScore -> Score -> NormalizeScore -> weighted sum ->
//! select host -> assume -> Reserve -> Permit, and returns a [`BindingCycle`] the
//! caller runs on any thread: wait at Permit -> PreBind -> Bind -> PostBind.

mod binding;
mod fit_error;
mod run;

use std::sync::Arc;

use parking_lot::Mutex;

pub use binding::{BindError, BindingCycle};
pub use fit_error::{Diagnosis, FitError};
pub use run::{Attempt, AttemptOutcome, EventError, PodState, RunSummary, SCHEDULER_REJECTOR, SchedulerEvents};

use crate::framework::metrics::{ProfileTimers, timed};
use crate::framework::preemption::run_filters_with_nominated;
use crate::framework::runtime::{self, PermitOutcome};
use crate::framework::{
    Clock, Code, CycleState, Handle, LatencyRecorder, MAX_NODE_SCORE, MIN_NODE_SCORE, NodeScore, NominatedPods,
    Profile, RealClock, RunningProfile, Status, WaitingPod,
};
use crate::model::{Pod, PodError};
use crate::queue::{QueueConfig, QueueError, SchedulingQueue};
use crate::snapshot::{Cache, CacheError, NodeList, PodInfo, Snapshot};

/// Upstream `minFeasibleNodesToFind`: below this many nodes, all are checked.
pub const MIN_FEASIBLE_NODES_TO_FIND: usize = 100;
/// Upstream `minFeasibleNodesPercentageToFind`: the adaptive percentage's floor.
pub const MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND: usize = 5;

/// How many nodes to find feasible before scoring, as upstream
/// `numFeasibleNodesToFind`: all below 100 nodes; else `percentage` of them (0 =
/// adaptive: `50 - nodes/125`, at least 5%), and never fewer than 100.
///
/// ```
/// use schedkit::scheduler::num_feasible_nodes_to_find;
/// assert_eq!(num_feasible_nodes_to_find(0, 50), 50);
/// assert_eq!(num_feasible_nodes_to_find(0, 5000), 500);   // 50 - 40 = 10%
/// assert_eq!(num_feasible_nodes_to_find(0, 15000), 750);  // floor of 5%
/// assert_eq!(num_feasible_nodes_to_find(100, 5000), 5000);
/// assert_eq!(num_feasible_nodes_to_find(1, 1000), 100);
/// ```
pub fn num_feasible_nodes_to_find(percentage: u32, num_all_nodes: usize) -> usize {
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND {
        return num_all_nodes;
    }
    let mut pct = percentage as usize;
    if pct == 0 {
        pct = 50usize.saturating_sub(num_all_nodes / 125).max(MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND);
    }
    if pct >= 100 {
        return num_all_nodes;
    }
    (num_all_nodes * pct / 100).max(MIN_FEASIBLE_NODES_TO_FIND)
}

/// How a host is picked among nodes with the same top score.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TieBreak {
    /// Uniformly at random (reservoir sampling, as upstream `selectHost`), from the
    /// scheduler's seeded generator.
    #[default]
    Random,
    /// The first in snapshot order (deterministic).
    First,
    /// The lexicographically smallest node name (what trace simulators use).
    SmallestName,
}

/// Scheduler-wide settings.
#[derive(Debug, Clone)]
pub struct SchedulerConfig {
    /// Global `percentageOfNodesToScore` (0 = adaptive); a profile's own wins.
    pub percentage_of_nodes_to_score: u32,
    /// Threads for Filter and Score (1 = never parallel).
    pub parallelism: usize,
    /// Run Filter/Score in parallel only when at least this many nodes are evaluated.
    pub parallel_min_nodes: usize,
    /// Tie-break among equal top scores.
    pub tie_break: TieBreak,
    /// Seed of the tie-break generator.
    pub seed: u64,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            percentage_of_nodes_to_score: 0,
            parallelism: std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
            parallel_min_nodes: 1000,
            tie_break: TieBreak::Random,
            seed: 0x5eed,
        }
    }
}

/// Why a scheduling cycle did not produce a binding.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ScheduleError {
    /// No node fits (PostFilter may have nominated one).
    #[error(transparent)]
    Unschedulable(Box<FitError>),
    /// The cluster has no nodes.
    #[error("no nodes available to schedule pods")]
    NoNodes,
    /// A plugin failed with an `Error` (or panicked), or Reserve/Permit rejected.
    #[error("pod {pod}: {status}")]
    Plugin {
        /// `namespace/name`.
        pod: String,
        /// The failing status, with the plugin's name.
        status: Status,
    },
    /// No profile serves the pod's `schedulerName`.
    #[error("no profile for scheduler name {0:?}")]
    NoProfile(String),
    /// The pod is invalid.
    #[error(transparent)]
    InvalidPod(#[from] PodError),
    /// The cache refused the assumption (e.g. the pod is already there).
    #[error(transparent)]
    Cache(#[from] CacheError),
}

impl ScheduleError {
    /// The fit error, when the pod fits nowhere.
    pub fn fit_error(&self) -> Option<&FitError> {
        match self {
            ScheduleError::Unschedulable(f) => Some(f),
            _ => None,
        }
    }
}

/// SplitMix64: tiny, seeded, good enough for tie-breaks.
#[derive(Debug, Clone)]
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Per-cycle buffers, kept between cycles so steady-state cycles don't allocate per node.
#[derive(Debug, Default)]
struct Buffers {
    candidates: Vec<usize>,
    feasible: Vec<usize>,
    failed: Vec<(usize, Status)>,
    scores: Vec<NodeScore>,
    /// Names of the feasible nodes, gathered once per cycle for every Score plugin.
    names: Vec<crate::model::Symbol>,
    totals: Vec<i64>,
    /// Pods nominated by preemption, taken once per cycle (`None`: none nominated).
    nominated: Option<Arc<NominatedPods>>,
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
    rng: Rng,
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
    metrics: Option<(Arc<LatencyRecorder>, Vec<Arc<ProfileTimers>>)>,
    /// The histograms of the cycle in progress, when it is sampled.
    timers: Option<Arc<ProfileTimers>>,
}

impl std::fmt::Debug for Scheduler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scheduler")
            .field("profiles", &self.profiles.iter().map(|p| p.name()).collect::<Vec<_>>())
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// Builds a [`Scheduler`].
pub struct SchedulerBuilder {
    profiles: Vec<Profile>,
    config: SchedulerConfig,
    clock: Option<Arc<dyn Clock>>,
    handle: Option<Handle>,
    queue: QueueConfig,
    metrics: Option<Arc<LatencyRecorder>>,
}

impl std::fmt::Debug for SchedulerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SchedulerBuilder").field("config", &self.config).finish_non_exhaustive()
    }
}

impl SchedulerBuilder {
    /// Adds a profile (pods choose one by `schedulerName`).
    #[must_use]
    pub fn profile(mut self, p: Profile) -> Self {
        self.profiles.push(p);
        self
    }
    /// Replaces the settings.
    #[must_use]
    pub fn config(mut self, c: SchedulerConfig) -> Self {
        self.config = c;
        self
    }
    /// Sets `percentageOfNodesToScore`.
    #[must_use]
    pub fn percentage_of_nodes_to_score(mut self, pct: u32) -> Self {
        self.config.percentage_of_nodes_to_score = pct.min(100);
        self
    }
    /// Sets the number of Filter/Score threads (1 = single-threaded).
    #[must_use]
    pub fn parallelism(mut self, threads: usize) -> Self {
        self.config.parallelism = threads.max(1);
        self
    }
    /// Sets the tie-break.
    #[must_use]
    pub fn tie_break(mut self, t: TieBreak) -> Self {
        self.config.tie_break = t;
        self
    }
    /// Sets the tie-break seed.
    #[must_use]
    pub fn seed(mut self, seed: u64) -> Self {
        self.config.seed = seed;
        self
    }
    /// Uses `clock` (ignored when [`SchedulerBuilder::handle`] is given).
    #[must_use]
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = Some(clock);
        self
    }
    /// Uses an existing handle (the one the profile's plugins were built with).
    #[must_use]
    pub fn handle(mut self, handle: Handle) -> Self {
        self.handle = Some(handle);
        self
    }

    /// Sets the queue's backoff and max-stay timings, checked here.
    pub fn queue_config(mut self, c: QueueConfig) -> Result<Self, QueueError> {
        c.validate()?;
        self.queue = c;
        Ok(self)
    }

    /// Records per-plugin latencies into `recorder` (see [`LatencyRecorder`]).
    #[must_use]
    pub fn latency_recorder(mut self, recorder: Arc<LatencyRecorder>) -> Self {
        self.metrics = Some(recorder);
        self
    }

    /// Builds the scheduler.
    pub fn build(self) -> Scheduler {
        let handle =
            self.handle.unwrap_or_else(|| Handle::new(self.clock.unwrap_or_else(|| Arc::new(RealClock::default()))));
        #[cfg(feature = "parallel")]
        let pool = (self.config.parallelism > 1)
            .then(|| rayon::ThreadPoolBuilder::new().num_threads(self.config.parallelism).build().ok())
            .flatten();
        let profiles: Vec<Arc<Profile>> = self.profiles.into_iter().map(Arc::new).collect();
        let queue = SchedulingQueue::new(&profiles, handle.clock_arc(), self.queue)
            .or_else(|_| SchedulingQueue::new(&profiles, handle.clock_arc(), QueueConfig::default()))
            .expect("the default queue config is valid");
        let metrics = self.metrics.map(|r| {
            let timers = profiles.iter().map(|p| Arc::new(r.timers(p))).collect();
            (r, timers)
        });
        Scheduler {
            cache: Arc::new(Mutex::new(Cache::new())),
            handle,
            profiles,
            queue: Arc::new(Mutex::new(queue)),
            parked: Vec::new(),
            parked_epoch: 0,
            parked_deadline: None,
            parked_dirty: false,
            metrics,
            timers: None,
            rng: Rng(self.config.seed),
            config: self.config,
            next_start: 0,
            bufs: Buffers::default(),
            #[cfg(feature = "parallel")]
            pool,
        }
    }
}

impl Scheduler {
    /// Starts building a scheduler.
    pub fn builder() -> SchedulerBuilder {
        SchedulerBuilder {
            profiles: Vec::new(),
            config: SchedulerConfig::default(),
            clock: None,
            handle: None,
            queue: QueueConfig::default(),
            metrics: None,
        }
    }

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
        self.metrics.as_ref().map(|m| &m.0)
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
        let profile = self
            .profile_for(&pod.pod)
            .cloned()
            .ok_or_else(|| ScheduleError::NoProfile(pod.pod.spec.scheduler_name.clone()))?;
        self.timers = match &self.metrics {
            Some((rec, timers)) if rec.sample() => {
                self.profiles.iter().position(|p| Arc::ptr_eq(p, &profile)).and_then(|i| timers.get(i).cloned())
            }
            _ => None,
        };
        // Take the snapshot out of the handle so the in-place update doesn't copy it,
        // then publish it again for plugins that read it through the handle.
        let mut snap = self.handle.take_snapshot();
        self.cache.lock().update_snapshot(Arc::make_mut(&mut snap));
        self.handle.put_snapshot(snap.clone());
        let result = self.cycle(&profile, &snap, pod);
        drop(snap);
        let (mut state, node) = result?;
        let (pod, waiting) = self.assume_reserve_permit(&profile, &mut state, pod, &node)?;
        // Assumed: its nomination (if preemption made one) has served its purpose.
        self.handle.preemption().nominator().remove(&pod.uid);
        Ok(BindingCycle::new(profile, self.cache.clone(), self.handle.clone(), state, pod, node, waiting))
    }

    /// Assumes the pod on `node`, then Reserve and Permit; undoes both on failure.
    fn assume_reserve_permit(
        &self,
        profile: &Profile,
        state: &mut CycleState,
        pod: &PodInfo,
        node: &str,
    ) -> Result<(Arc<PodInfo>, Option<Arc<WaitingPod>>), ScheduleError> {
        let mut assumed_pod = (*pod.pod).clone();
        assumed_pod.spec.node_name = node.to_owned();
        // Only the node name changes: keep the derived facts (requests, ports, ...)
        // instead of recomputing them from the containers.
        let mut assumed = pod.clone();
        assumed.pod = Arc::new(assumed_pod);
        let assumed = Arc::new(assumed);
        self.cache.lock().assume_pod(assumed.clone(), node)?;
        let undo = |state: &mut CycleState, status: Status| {
            runtime::run_unreserve(profile, state, &assumed, node);
            let _ = self.cache.lock().forget_pod(&assumed.uid);
            ScheduleError::Plugin { pod: assumed.pod.key(), status }
        };
        let timers = self.timers.as_deref();
        let s = runtime::run_reserve(profile, state, &assumed, node, timers.map(|t| &t.reserve));
        if !s.is_success() {
            return Err(undo(state, s));
        }
        match runtime::run_permit(profile, state, &assumed, node, timers.map(|t| &t.permit)) {
            PermitOutcome::Allow => Ok((assumed, None)),
            PermitOutcome::Wait(plugins) => {
                let now = self.handle.clock().now();
                let wp = self.handle.waiting_pods().add(&assumed, node, &plugins, now);
                Ok((assumed, Some(wp)))
            }
            PermitOutcome::Reject(s) => Err(undo(state, s)),
        }
    }

    /// PreFilter -> Filter -> (PostFilter) -> PreScore -> Score -> select.
    fn cycle(
        &mut self,
        profile: &Arc<Profile>,
        snap: &Snapshot,
        pod: &PodInfo,
    ) -> Result<(CycleState, String), ScheduleError> {
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
        let pre = match timers {
            None => runtime::run_pre_filter(profile, &mut state, pod, snap),
            Some(t) => runtime::run_pre_filter_timed(profile, &mut state, pod, snap, Some(&t.pre_filter)),
        };
        let pre = match pre {
            Ok(p) => p,
            Err(s) if s.is_rejected() => {
                let mut d = Diagnosis {
                    pre_filter_msg: Some(s.message()),
                    unschedulable_plugins: s.plugin().into_iter().collect(),
                    ..Diagnosis::default()
                };
                d.node_to_status.absent = Some(s);
                return Err(post_filter(profile, &mut state, pod, snap, &self.handle, fit_error(d)));
            }
            Err(s) => return Err(ScheduleError::Plugin { pod: pod.pod.key(), status: s }),
        };

        // A pod nominated by an earlier preemption tries its nominated node first
        // (upstream `evaluateNominatedNode`): if it passes Filter there, it goes there.
        if let Some(node) = self.nominated_node_fits(profile, &state, pod, snap, pre.result.node_names.as_ref()) {
            return Ok((state, node));
        }

        // Candidate nodes: all, or those PreFilter narrowed to (in snapshot order).
        let bufs = &mut self.bufs;
        bufs.feasible.clear();
        bufs.failed.clear();
        let narrowed = pre.result.node_names.as_ref();
        if let Some(names) = narrowed {
            bufs.candidates.clear();
            bufs.candidates
                .extend(snap.nodes().iter().enumerate().filter(|(_, n)| names.contains(&n.name())).map(|(i, _)| i));
        }
        let n_cand = narrowed.map_or(n_all, |_| bufs.candidates.len());
        bufs.nominated = self.handle.preemption().nominator().snapshot();
        let pct = profile.percentage_of_nodes_to_score().unwrap_or(self.config.percentage_of_nodes_to_score);
        let to_find = num_feasible_nodes_to_find(pct, n_cand);
        let start = self.next_start % n_all;
        let processed = self.find_feasible(profile, &state, pod, snap, narrowed.is_some(), n_cand, to_find, start);
        self.next_start = (start + processed) % n_all;

        if let Some((_, s)) = self.bufs.failed.iter().find(|(_, s)| s.code() == Code::Error) {
            return Err(ScheduleError::Plugin { pod: pod.pod.key(), status: s.clone() });
        }
        if self.bufs.feasible.is_empty() {
            // The statuses go out with the error; the buffer keeps its capacity so the
            // next cycle doesn't regrow it node by node.
            let cap = self.bufs.failed.capacity();
            let statuses = std::mem::replace(&mut self.bufs.failed, Vec::with_capacity(cap));
            let mut d = Diagnosis { unschedulable_plugins: rejecting_plugins(&statuses), ..Diagnosis::default() };
            if narrowed.is_some() {
                d.node_to_status.absent =
                    Some(Status::unresolvable(format!("node(s) didn't satisfy plugin(s) {:?}", pre.narrowing_plugins)));
            }
            d.node_to_status.statuses = statuses;
            return Err(post_filter(profile, &mut state, pod, snap, &self.handle, fit_error(d)));
        }
        if self.bufs.feasible.len() == 1 {
            let node = snap.nodes()[self.bufs.feasible[0]].node().name().to_owned();
            return Ok((state, node));
        }
        let s = {
            let nodes = NodeList::new(snap, &self.bufs.feasible);
            runtime::run_pre_score(profile, &mut state, pod, nodes, timers.map(|t| &t.pre_score))
        };
        if !s.is_success() {
            return Err(ScheduleError::Plugin { pod: pod.pod.key(), status: s });
        }
        self.score(profile, &state, pod, snap).map_err(|s| ScheduleError::Plugin { pod: pod.pod.key(), status: s })?;
        let best = self.select_host(snap);
        Ok((state, snap.nodes()[best].node().name().to_owned()))
    }

    /// The pod's nominated node (the nominator's record, else
    /// `status.nominatedNodeName`) if it is in the snapshot, allowed by PreFilter, and
    /// passes Filter counting other nominated pods.
    fn nominated_node_fits(
        &mut self,
        profile: &Profile,
        state: &CycleState,
        pod: &PodInfo,
        snap: &Snapshot,
        narrowed: Option<&ahash::AHashSet<crate::model::Symbol>>,
    ) -> Option<String> {
        let nominator = self.handle.preemption().nominator();
        let name = nominator.nominated_node(&pod.uid).or_else(|| {
            let n = &pod.pod.status.nominated_node_name;
            if n.is_empty() { None } else { crate::model::Symbol::lookup(n) }
        })?;
        let idx = snap.index_of(name)?;
        if narrowed.is_some_and(|n| !n.contains(&name)) {
            return None;
        }
        let nominated = nominator.snapshot();
        let guard = runtime::FilterGuard::new(profile);
        let ok = guard
            .run(|current| {
                run_filters_with_nominated(profile, state, pod, &snap.nodes()[idx], nominated.as_deref(), current)
                    .is_success()
            })
            .unwrap_or(false);
        ok.then(|| name.as_str().to_owned())
    }

    /// Fills `bufs.feasible`/`bufs.failed`; returns how many nodes were processed.
    #[expect(clippy::too_many_arguments, reason = "internal; the cycle's pieces")]
    fn find_feasible(
        &mut self,
        profile: &Profile,
        state: &CycleState,
        pod: &PodInfo,
        snap: &Snapshot,
        narrowed: bool,
        n_cand: usize,
        to_find: usize,
        start: usize,
    ) -> usize {
        let bufs = &mut self.bufs;
        let cand = |i: usize, candidates: &[usize]| {
            let k = (start + i) % n_cand;
            if narrowed { candidates[k] } else { k }
        };
        if !profile.has_filter_plugins() {
            for i in 0..to_find.min(n_cand) {
                bufs.feasible.push(cand(i, &bufs.candidates));
            }
            return bufs.feasible.len();
        }
        #[cfg(feature = "parallel")]
        if let Some(pool) = &self.pool
            && n_cand >= self.config.parallel_min_nodes
        {
            let timers = self.timers.as_deref().map(|t| &t.filter);
            return parallel::find_feasible(
                pool, profile, state, pod, snap, bufs, narrowed, n_cand, to_find, start, timers,
            );
        }
        let nodes = snap.nodes();
        let timers = self.timers.as_deref().map(|t| &t.filter);
        let mut processed = 0;
        let mut at = 0;
        let nominated = bufs.nominated.as_deref();
        let guard = runtime::FilterGuard::new(profile);
        let candidates = &bufs.candidates;
        let active = runtime::ActiveFilters::new(profile, state);
        let outcome = guard.run(|current| {
            // Walk the candidates from `start`, wrapping once, without a division per node.
            let mut k = start % n_cand;
            for _ in 0..n_cand {
                if bufs.feasible.len() >= to_find {
                    break;
                }
                let idx = if narrowed { candidates[k] } else { k };
                k += 1;
                if k == n_cand {
                    k = 0;
                }
                at = idx;
                processed += 1;
                let s = filter_node(&active, profile, state, pod, &nodes[idx], current, timers, nominated);
                if s.is_success() {
                    bufs.feasible.push(idx);
                } else {
                    bufs.failed.push((idx, s));
                }
            }
        });
        if let Err(s) = outcome {
            bufs.failed.push((at, s));
        }
        processed
    }

    /// Runs Score + NormalizeScore for every plugin, accumulating weighted totals.
    fn score(&mut self, profile: &Profile, state: &CycleState, pod: &PodInfo, snap: &Snapshot) -> Result<(), Status> {
        let bufs = &mut self.bufs;
        let n = bufs.feasible.len();
        bufs.totals.clear();
        if !profile.has_score_plugins() {
            bufs.totals.resize(n, 1);
            return Ok(());
        }
        bufs.totals.resize(n, 0);
        let nodes = snap.nodes();
        bufs.names.clear();
        bufs.names.extend(bufs.feasible.iter().map(|&i| nodes[i].name()));
        let timers = self.timers.as_deref();
        for (pi, sp) in profile.score.iter().enumerate() {
            let score_timer = timers.and_then(|t| t.score.get(pi)).map(|h| &**h);
            if state.skips_score(pi) {
                continue;
            }
            bufs.scores.clear();
            bufs.scores.extend(bufs.names.iter().map(|&name| NodeScore { name, score: 0 }));
            #[cfg(feature = "parallel")]
            let done = if let Some(pool) = &self.pool
                && n >= self.config.parallel_min_nodes
            {
                parallel::score(pool, sp, state, pod, snap, &bufs.feasible, &mut bufs.scores, score_timer)?;
                true
            } else {
                false
            };
            #[cfg(not(feature = "parallel"))]
            let done = false;
            if !done {
                let nodes = NodeList::new(snap, &bufs.feasible);
                timed(score_timer, || {
                    runtime::guard(sp.name, "Score", || sp.plugin.score_nodes(state, pod, nodes, &mut bufs.scores))
                })
                .and_then(|r| r)
                .map_err(|s| s.with_plugin(sp.name))?;
            }
            let norm_timer = timers.and_then(|t| t.normalize.get(pi)).map(|h| &**h);
            let s = timed(norm_timer, || {
                runtime::guard(sp.name, "NormalizeScore", || sp.plugin.normalize(state, pod, &mut bufs.scores))
            })
            .unwrap_or_else(|s| s);
            if !s.is_success() {
                return Err(s.with_plugin(sp.name));
            }
            for (t, ns) in bufs.totals.iter_mut().zip(&bufs.scores) {
                if !(MIN_NODE_SCORE..=MAX_NODE_SCORE).contains(&ns.score) {
                    return Err(Status::error(format!(
                        "plugin {:?} returns an invalid score {}, it should in the range of [{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing",
                        sp.name, ns.score
                    ))
                    .with_plugin(sp.name));
                }
                *t += ns.score * sp.weight;
            }
        }
        Ok(())
    }

    /// Index (in the snapshot) of the chosen node among the top scores.
    fn select_host(&mut self, snap: &Snapshot) -> usize {
        let bufs = &self.bufs;
        let nodes = snap.nodes();
        let mut best = 0;
        let mut count = 0u64;
        for (k, &t) in bufs.totals.iter().enumerate() {
            let top = bufs.totals[best];
            if k == 0 || t > top {
                best = k;
                count = 1;
            } else if t == top {
                count += 1;
                match self.config.tie_break {
                    TieBreak::Random => {
                        if self.rng.below(count) == 0 {
                            best = k;
                        }
                    }
                    TieBreak::First => {}
                    TieBreak::SmallestName => {
                        if nodes[bufs.feasible[k]].node().name() < nodes[bufs.feasible[best]].node().name() {
                            best = k;
                        }
                    }
                }
            }
        }
        bufs.feasible[best]
    }
}

/// The plugins named by `statuses`, sorted and deduplicated. A few plugins reject
/// thousands of nodes, so this collects the distinct names first (by address, then by
/// text) instead of sorting one name per node.
fn rejecting_plugins(statuses: &[(usize, Status)]) -> Vec<&'static str> {
    let mut plugins: Vec<&'static str> = Vec::new();
    let mut last: Option<&'static str> = None;
    for p in statuses.iter().filter_map(|(_, s)| s.plugin()) {
        if last.is_some_and(|l| std::ptr::eq(l, p)) {
            continue;
        }
        last = Some(p);
        if !plugins.iter().any(|&q| std::ptr::eq(q, p) || q == p) {
            plugins.push(p);
        }
    }
    plugins.sort_unstable();
    plugins
}

/// Runs PostFilter (e.g. preemption) for a pod that fits nowhere. The running
/// profile is written into the state first ([`RunningProfile`]) so preemption can
/// run dry-run Filters. A nominated node in the result is recorded in the handle's
/// nominator — also when PostFilter then failed (e.g. an eviction error), so the pod
/// keeps its claim on the room while it is retried.
fn post_filter(
    profile: &Arc<Profile>,
    state: &mut CycleState,
    pod: &PodInfo,
    snap: &Snapshot,
    handle: &Handle,
    mut err: FitError,
) -> ScheduleError {
    if !profile.post_filter.is_empty() {
        RunningProfile::write(state, profile.clone());
        let (r, s) = runtime::run_post_filter(profile, state, pod, snap, &err.diagnosis.node_to_status);
        state.remove::<RunningProfile>();
        let nominated = r.and_then(|r| r.nominated_node_name);
        if let Some(node) = &nominated {
            handle.preemption().nominator().add(Arc::new(pod.clone()), node);
        }
        if s.code() == Code::Error {
            return ScheduleError::Plugin { pod: pod.pod.key(), status: s };
        }
        if !s.is_success() && !s.reasons().is_empty() {
            err.diagnosis.post_filter_msg = Some(s.message());
        }
        err.nominated_node = nominated;
    }
    ScheduleError::Unschedulable(Box::new(err))
}

/// One node through the cycle's Filters: the plain path, the timed path of a
/// sampled cycle, or (rare) the path that first adds nominated pods.
#[expect(clippy::inline_always, reason = "runs once per node in the serial and parallel Filter loops")]
#[expect(clippy::too_many_arguments, reason = "internal; the cycle's pieces")]
#[inline(always)]
fn filter_node(
    active: &runtime::ActiveFilters<'_>,
    profile: &Profile,
    state: &CycleState,
    pod: &PodInfo,
    node: &crate::snapshot::NodeInfo,
    current: &std::cell::Cell<usize>,
    timers: Option<&crate::framework::metrics::PointTimers>,
    nominated: Option<&crate::framework::preemption::NominatedPods>,
) -> Status {
    match (timers, nominated) {
        (None, None) => runtime::run_active_filters(active, state, pod, node, current),
        (Some(t), None) => runtime::run_filters_timed(profile, state, pod, node, current, t),
        _ => run_filters_with_nominated(profile, state, pod, node, nominated, current),
    }
}

#[cfg(feature = "parallel")]
mod parallel {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use rayon::prelude::*;

    use super::{Buffers, runtime};
    use crate::framework::metrics::{Histogram, PointTimers, timed};
    use crate::framework::{CycleState, NodeScore, Profile, Status, WeightedScore};
    use crate::snapshot::{NodeList, PodInfo, Snapshot};

    /// One chunk's feasible nodes, failures, and nodes processed.
    type ChunkResult = (Vec<usize>, Vec<(usize, Status)>, usize);

    fn chunk_len(n: usize, threads: usize) -> usize {
        (n / (threads * 4)).max(64)
    }

    #[expect(clippy::too_many_arguments, reason = "internal; mirrors the serial path")]
    pub(super) fn find_feasible(
        pool: &rayon::ThreadPool,
        profile: &Profile,
        state: &CycleState,
        pod: &PodInfo,
        snap: &Snapshot,
        bufs: &mut Buffers,
        narrowed: bool,
        n_cand: usize,
        to_find: usize,
        start: usize,
        timers: Option<&PointTimers>,
    ) -> usize {
        let found = AtomicUsize::new(0);
        let chunk = chunk_len(n_cand, pool.current_num_threads());
        let n_chunks = n_cand.div_ceil(chunk);
        let candidates = &bufs.candidates;
        let nominated = bufs.nominated.as_deref();
        let nodes = snap.nodes();
        let active = runtime::ActiveFilters::new(profile, state);
        let results: Vec<ChunkResult> = pool.install(|| {
            (0..n_chunks)
                .into_par_iter()
                .map(|c| {
                    let mut ok = Vec::with_capacity(chunk);
                    let mut bad = Vec::new();
                    let mut processed = 0;
                    let mut at = 0;
                    // Publish to the shared counter only every few nodes: an atomic add
                    // per feasible node makes the threads fight over one cache line.
                    let early_stop = to_find < n_cand;
                    let mut unpublished = 0;
                    let guard = runtime::FilterGuard::new(profile);
                    let outcome = guard.run(|current| {
                        let mut k = (start + c * chunk) % n_cand;
                        for _ in c * chunk..((c + 1) * chunk).min(n_cand) {
                            if early_stop && processed % 16 == 0 {
                                let total = found.fetch_add(unpublished, Ordering::Relaxed) + unpublished;
                                unpublished = 0;
                                if total >= to_find {
                                    break;
                                }
                            }
                            let idx = if narrowed { candidates[k] } else { k };
                            k += 1;
                            if k == n_cand {
                                k = 0;
                            }
                            at = idx;
                            processed += 1;
                            let s = super::filter_node(
                                &active,
                                profile,
                                state,
                                pod,
                                &nodes[idx],
                                current,
                                timers,
                                nominated,
                            );
                            if s.is_success() {
                                unpublished += 1;
                                ok.push(idx);
                            } else {
                                bad.push((idx, s));
                            }
                        }
                    });
                    if let Err(s) = outcome {
                        bad.push((at, s));
                    }
                    (ok, bad, processed)
                })
                .collect()
        });
        let mut processed = 0;
        for (ok, bad, p) in results {
            processed += p;
            bufs.feasible.extend(ok);
            bufs.failed.extend(bad);
        }
        bufs.feasible.truncate(to_find);
        processed
    }

    #[expect(clippy::too_many_arguments, reason = "internal; mirrors the serial path")]
    pub(super) fn score(
        pool: &rayon::ThreadPool,
        sp: &WeightedScore,
        state: &CycleState,
        pod: &PodInfo,
        snap: &Snapshot,
        feasible: &[usize],
        out: &mut [NodeScore],
        timer: Option<&Histogram>,
    ) -> Result<(), Status> {
        let chunk = chunk_len(feasible.len(), pool.current_num_threads());
        pool.install(|| {
            out.par_chunks_mut(chunk).zip(feasible.par_chunks(chunk)).try_for_each(|(o, f)| {
                let nodes = NodeList::new(snap, f);
                timed(timer, || runtime::guard(sp.name, "Score", || sp.plugin.score_nodes(state, pod, nodes, o)))
                    .and_then(|r| r)
                    .map_err(|s| s.with_plugin(sp.name))
            })
        })
    }
}
