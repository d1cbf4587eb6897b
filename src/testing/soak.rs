//! A churn soak: random pod and node churn through the default profile with binding
//! cycles on worker threads, checked against an independent model of the cluster.
//!
//! [`run`] drives a [`Scheduler`] the way an embedding does: pods and nodes come
//! through [`SchedulerEvents`](crate::scheduler::SchedulerEvents), the driver pops a pod
//! and runs its scheduling cycle, and the [`BindingCycle`] runs on a worker thread.
//! Every few attempts the workers are drained and the cluster is checked against a
//! model kept here from the soak's own choices (never from schedkit's bookkeeping):
//!
//! - no node holds more CPU, memory or pods than it allocates;
//! - no host port is taken twice on a node;
//! - every pod, when assumed, met its hard constraints on its node as the model knew
//!   it then (node exists and is schedulable, `nodeSelector`, `NoSchedule` taints
//!   tolerated, the port free);
//! - the cache's requested totals and pod counts equal the model's per node;
//! - every pod is in exactly one state (queued, or placed on one node) and the queue
//!   and cache hold no pod the model doesn't;
//! - the resident set stays flat once the cluster reached its steady size.
//!
//! `examples/soak.rs` is the command line over it; a short run is in the test suite.

mod model;

use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use self::model::{Model, PodSpec, PodWhere};
use crate::framework::{Handle, Profile, RecordingEvictor, VirtualClock};
use crate::model::Symbol;
use crate::queue::SchedulingQueue;
use crate::rng::SplitMix64;
use crate::scheduler::{BindingCycle, ScheduleError, Scheduler, TieBreak};

/// What the soak schedules.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum SoakMode {
    /// kube-scheduler's default profile on CPU/memory pods with host ports, node
    /// selectors, tolerations and priorities.
    #[default]
    Default,
}

impl std::str::FromStr for SoakMode {
    type Err = SoakError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "default" => Ok(SoakMode::Default),
            _ => Err(SoakError::Config(format!("unknown mode {s:?} (expected: default)"))),
        }
    }
}

/// How long and how big a soak is.
#[derive(Debug, Clone)]
pub struct SoakConfig {
    /// Scheduling attempts to run.
    pub attempts: u64,
    /// Nodes in the cluster (node churn keeps the count within a few of this).
    pub nodes: usize,
    /// Pods alive at the steady size (queued or placed).
    pub steady_pods: usize,
    /// Worker threads running binding cycles.
    pub workers: usize,
    /// Attempts between invariant checks.
    pub check_every: u64,
    /// Seed of the soak's random choices.
    pub seed: u64,
    /// What is scheduled.
    pub mode: SoakMode,
    /// Fail when the resident set at the end exceeds the one at the steady size by
    /// more than this many bytes (`None`: report only; RSS is not read off Linux).
    pub rss_growth_limit: Option<u64>,
}

impl Default for SoakConfig {
    fn default() -> Self {
        SoakConfig {
            attempts: 100_000,
            nodes: 5000,
            steady_pods: 5000 * 5,
            workers: 2,
            check_every: 10_000,
            seed: 1,
            mode: SoakMode::Default,
            rss_growth_limit: None,
        }
    }
}

/// What a soak did.
#[derive(Debug, Clone, Default)]
pub struct SoakSummary {
    /// Scheduling attempts.
    pub attempts: u64,
    /// Bindings that completed.
    pub bound: u64,
    /// Attempts that found no node.
    pub unschedulable: u64,
    /// Pods evicted by preemption.
    pub preempted: u64,
    /// Pods deleted by the soak's churn.
    pub deleted: u64,
    /// Node additions, removals and updates.
    pub node_events: u64,
    /// Invariant checks passed.
    pub checks: u64,
    /// Wall time.
    pub elapsed: Duration,
    /// Resident set when the cluster first reached its steady size, bytes.
    pub rss_steady: Option<u64>,
    /// Resident set at the end, bytes.
    pub rss_end: Option<u64>,
    /// Peak resident set (`VmHWM`), bytes.
    pub rss_peak: Option<u64>,
    /// Interned strings alive at the end.
    pub interned: usize,
}

impl std::fmt::Display for SoakSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mb = |b: Option<u64>| b.map_or_else(|| "n/a".to_owned(), |b| format!("{:.1} MB", b as f64 / 1e6));
        let secs = self.elapsed.as_secs_f64();
        write!(
            f,
            "soak: {} attempts in {secs:.1} s ({:.0} attempts/s), {} bound, {} unschedulable, {} preempted, \
             {} deleted, {} node events, {} checks passed; RSS steady {} end {} peak {}; {} interned strings",
            self.attempts,
            self.attempts as f64 / secs.max(1e-9),
            self.bound,
            self.unschedulable,
            self.preempted,
            self.deleted,
            self.node_events,
            self.checks,
            mb(self.rss_steady),
            mb(self.rss_end),
            mb(self.rss_peak),
            self.interned,
        )
    }
}

/// Why a soak stopped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SoakError {
    /// The configuration is unusable.
    #[error("soak configuration: {0}")]
    Config(String),
    /// An invariant broke.
    #[error("invariant broken after {attempts} attempts: {what}")]
    Invariant {
        /// Attempts run when it was found.
        attempts: u64,
        /// What broke, naming the pod or node.
        what: String,
    },
    /// The scheduler refused an event the soak considers valid.
    #[error("after {attempts} attempts the scheduler refused {what}")]
    Refused {
        /// Attempts run.
        attempts: u64,
        /// The event and the error.
        what: String,
    },
}

/// A binding cycle's result, sent back by a worker.
struct Bound {
    uid: Arc<str>,
    ok: bool,
}

/// The resident set and its peak from `/proc/self/status`, bytes (Linux only).
pub fn rss() -> (Option<u64>, Option<u64>) {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else { return (None, None) };
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map(|kb| kb * 1024)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// Runs a soak and checks its invariants; see the module docs.
pub fn run(config: &SoakConfig) -> Result<SoakSummary, SoakError> {
    if config.nodes == 0 || config.workers == 0 || config.check_every == 0 {
        return Err(SoakError::Config("nodes, workers and check_every must be at least 1".into()));
    }
    let mut soak = Soak::new(config)?;
    let result = soak.run();
    soak.shutdown();
    result?;
    let (rss_end, rss_peak) = rss();
    soak.summary.rss_end = rss_end;
    soak.summary.rss_peak = rss_peak;
    soak.summary.interned = Symbol::interner_stats().live;
    if let (Some(limit), Some(steady), Some(end)) = (config.rss_growth_limit, soak.summary.rss_steady, rss_end)
        && end > steady + limit
    {
        return Err(SoakError::Invariant {
            attempts: soak.summary.attempts,
            what: format!("resident set grew from {steady} B at the steady size to {end} B"),
        });
    }
    Ok(soak.summary.clone())
}

struct Soak<'c> {
    config: &'c SoakConfig,
    sched: Scheduler,
    clock: VirtualClock,
    evictor: Arc<RecordingEvictor>,
    queue: Arc<Mutex<SchedulingQueue>>,
    model: Model,
    rng: SplitMix64,
    to_workers: Option<mpsc::SyncSender<BindingCycle>>,
    results: mpsc::Receiver<Bound>,
    workers: Vec<std::thread::JoinHandle<()>>,
    in_flight: usize,
    next_pod: u64,
    summary: SoakSummary,
    started: Instant,
}

impl<'c> Soak<'c> {
    fn new(config: &'c SoakConfig) -> Result<Self, SoakError> {
        let handle = Handle::default();
        let clock = VirtualClock::new();
        let evictor = Arc::new(RecordingEvictor::default());
        handle.preemption().set_evictor(evictor.clone());
        let profile = match config.mode {
            SoakMode::Default => Profile::kube_default(&handle),
        };
        let sched = Scheduler::builder()
            .profile(profile)
            .handle(handle)
            .clock(Arc::new(clock.clone()))
            .parallelism(1)
            .tie_break(TieBreak::Random)
            .seed(config.seed)
            .build();
        let queue = sched.queue().clone();
        let (to_workers, from_driver) = mpsc::sync_channel::<BindingCycle>(64);
        let from_driver = Arc::new(Mutex::new(from_driver));
        let (results_tx, results) = mpsc::channel();
        let workers = (0..config.workers)
            .map(|_| {
                let rx = from_driver.clone();
                let tx = results_tx.clone();
                let queue = queue.clone();
                std::thread::spawn(move || {
                    loop {
                        let Ok(binding) = rx.lock().recv() else { return };
                        let uid = binding.pod().uid.clone();
                        let ok = match binding.run() {
                            Ok(_) => {
                                let _ = queue.lock().done(&uid);
                                true
                            }
                            Err(e) => {
                                let rejectors: Vec<&'static str> = e.status.plugin().into_iter().collect();
                                let _ = queue.lock().requeue_failed(&uid, &rejectors);
                                false
                            }
                        };
                        if tx.send(Bound { uid, ok }).is_err() {
                            return;
                        }
                    }
                })
            })
            .collect();
        let mut soak = Soak {
            config,
            sched,
            clock,
            evictor,
            queue,
            model: Model::default(),
            rng: SplitMix64(config.seed),
            to_workers: Some(to_workers),
            results,
            workers,
            in_flight: 0,
            next_pod: 0,
            summary: SoakSummary::default(),
            started: Instant::now(),
        };
        for i in 0..config.nodes {
            let node = soak.model.new_node(i, &mut soak.rng);
            soak.add_node(node)?;
        }
        Ok(soak)
    }

    fn refused(&self, what: String) -> SoakError {
        SoakError::Refused { attempts: self.summary.attempts, what }
    }

    fn broken(&self, what: String) -> SoakError {
        SoakError::Invariant { attempts: self.summary.attempts, what }
    }

    fn add_node(&mut self, index: usize) -> Result<(), SoakError> {
        let node = self.model.node_object(index);
        self.sched.events().add_node(node).map_err(|e| self.refused(format!("adding node {index}: {e}")))
    }

    fn run(&mut self) -> Result<(), SoakError> {
        self.started = Instant::now();
        while self.summary.attempts < self.config.attempts {
            self.clock.advance(Duration::from_millis(1));
            self.churn()?;
            self.attempt()?;
            self.collect(false);
            if self.summary.rss_steady.is_none() && self.model.pod_count() >= self.config.steady_pods {
                self.summary.rss_steady = rss().0;
            }
            if self.summary.attempts.is_multiple_of(self.config.check_every) {
                self.collect(true);
                self.check()?;
            }
        }
        self.collect(true);
        self.check()?;
        self.summary.elapsed = self.started.elapsed();
        Ok(())
    }

    /// One random cluster change: mostly pod arrivals until the steady size, then
    /// deletions to stay there; now and then a node event.
    fn churn(&mut self) -> Result<(), SoakError> {
        let r = self.rng.below(1000);
        if r < 5 {
            return self.node_event();
        }
        let pods = self.model.pod_count();
        let steady = self.config.steady_pods;
        if pods < steady || (pods < steady + steady / 20 && r < 600) {
            for _ in 0..2 {
                self.add_pod()?;
            }
        } else if let Some(uid) = self.model.random_pod(&mut self.rng) {
            self.delete_pod(&uid)?;
            self.summary.deleted += 1;
        }
        Ok(())
    }

    fn add_pod(&mut self) -> Result<(), SoakError> {
        let n = self.next_pod;
        self.next_pod += 1;
        let spec = PodSpec::random(n, &mut self.rng, model::ZONES);
        let pod = spec.object();
        self.model.add_pod(spec);
        self.sched.events().add_pod(pod).map_err(|e| self.refused(format!("adding pod {n}: {e}")))
    }

    fn delete_pod(&mut self, uid: &str) -> Result<(), SoakError> {
        self.model.remove_pod(uid);
        self.sched.events().delete_pod(uid).map_err(|e| self.refused(format!("deleting pod {uid}: {e}")))
    }

    fn node_event(&mut self) -> Result<(), SoakError> {
        self.summary.node_events += 1;
        let index = self.rng.below(self.config.nodes as u64) as usize;
        match self.rng.below(5) {
            0 => {
                // Drain and remove it, as a controller deletes a node's pods first;
                // it comes back under the same name (node names are a bounded vocabulary).
                for uid in self.model.pods_on(index) {
                    self.delete_pod(&uid)?;
                }
                let name = self.model.node_name(index);
                self.sched.events().remove_node(&name).map_err(|e| self.refused(format!("removing {name}: {e}")))?;
                self.model.node_removed(index);
                self.model.node_reset(index, &mut self.rng);
                self.add_node(index)
            }
            1 => self.update_node(index, |m, i, _| m.toggle_taint(i)),
            2 => self.update_node(index, |m, i, _| m.toggle_cordon(i)),
            _ => self.update_node(index, Model::resize),
        }
    }

    fn update_node(
        &mut self,
        index: usize,
        f: impl FnOnce(&mut Model, usize, &mut SplitMix64),
    ) -> Result<(), SoakError> {
        f(&mut self.model, index, &mut self.rng);
        let node = self.model.node_object(index);
        self.sched.events().update_node(node).map_err(|e| self.refused(format!("updating node {index}: {e}")))
    }

    /// Pops a pod and runs its scheduling cycle; a binding goes to a worker.
    fn attempt(&mut self) -> Result<(), SoakError> {
        let Some(queued) = self.queue.lock().pop() else { return Ok(()) };
        let pod = queued.pod;
        self.summary.attempts += 1;
        match self.sched.schedule_one(&pod) {
            Ok(binding) => {
                let node = binding.node().to_owned();
                self.model.check_fits(&pod.uid, &node).map_err(|what| self.broken(what))?;
                self.model.assume(&pod.uid, &node);
                self.in_flight += 1;
                let tx = self.to_workers.as_ref().expect("workers run until shutdown");
                if tx.send(binding).is_err() {
                    return Err(self.refused("a binding: the workers stopped".into()));
                }
            }
            Err(e) => {
                let rejectors: Vec<&'static str> = match &e {
                    ScheduleError::Unschedulable(fit) => fit.diagnosis.unschedulable_plugins.clone(),
                    ScheduleError::Plugin { status, .. } if status.is_rejected() => {
                        status.plugin().into_iter().collect()
                    }
                    _ => Vec::new(),
                };
                if matches!(e, ScheduleError::Unschedulable(_)) {
                    self.summary.unschedulable += 1;
                }
                let _ = self.queue.lock().requeue_failed(&pod.uid, &rejectors);
                for (_, victim) in self.evictor.take() {
                    if self.model.has_pod(&victim) {
                        self.delete_pod(&victim)?;
                        self.summary.preempted += 1;
                    }
                }
            }
        }
        Ok(())
    }

    /// Takes the workers' results; with `drain`, waits until none is in flight.
    fn collect(&mut self, drain: bool) {
        loop {
            let next =
                if drain && self.in_flight > 0 { self.results.recv().ok() } else { self.results.try_recv().ok() };
            let Some(b) = next else { return };
            self.in_flight -= 1;
            if b.ok {
                self.summary.bound += 1;
            } else {
                self.model.unassume(&b.uid);
            }
        }
    }

    /// The invariants of the module docs, against the model.
    fn check(&mut self) -> Result<(), SoakError> {
        {
            let cache = self.sched.cache().lock();
            for index in 0..self.config.nodes {
                let name = self.model.node_name(index);
                let Some(info) = cache.node_info(&name) else {
                    return Err(self.broken(format!("node {name} is missing from the cache")));
                };
                let want = self.model.node_totals(index);
                let r = info.requested();
                let got = (r.milli_cpu, r.memory, info.pods().len());
                if got != (want.milli_cpu, want.memory, want.pods) {
                    return Err(self.broken(format!(
                        "node {name}: cache has (cpu m, memory, pods) {got:?}, the model {:?}",
                        (want.milli_cpu, want.memory, want.pods)
                    )));
                }
                self.model.check_node(index).map_err(|what| self.broken(what))?;
            }
            if cache.pod_count() != self.model.placed_count() {
                let (c, m) = (cache.pod_count(), self.model.placed_count());
                return Err(self.broken(format!("the cache holds {c} pods, the model placed {m}")));
            }
        }
        let queued = self.queue.lock().len();
        if queued != self.model.pending_count() {
            let m = self.model.pending_count();
            return Err(self.broken(format!("the queue holds {queued} pods, the model has {m} pending")));
        }
        for (uid, place) in self.model.pods() {
            let state = self.sched.pod_state(uid);
            let ok = match place {
                PodWhere::Pending => matches!(
                    state,
                    Some(
                        crate::scheduler::PodState::Active
                            | crate::scheduler::PodState::Backoff
                            | crate::scheduler::PodState::Unschedulable
                    )
                ),
                PodWhere::Placed(_) => state == Some(crate::scheduler::PodState::Bound),
            };
            if !ok {
                return Err(self.broken(format!("pod {uid} is {place:?} in the model but {state:?} in the scheduler")));
            }
        }
        self.summary.checks += 1;
        Ok(())
    }

    fn shutdown(&mut self) {
        self.to_workers = None;
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}
