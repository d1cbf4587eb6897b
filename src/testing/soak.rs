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
//! - the resident set (and, given a counter, the live heap) stays flat once the
//!   cluster settled at its steady size.
//!
//! [`SoakMode::Dra`] adds GPUs: every node publishes a ResourceSlice, a quarter of the
//! pods claim 1, 2 or 4 GPUs through claim templates (made into claims before the pod
//! arrives and deleted with it, as the resourceclaim controller does), and the checks
//! add: no GPU held by two claims, every placed pod's claim allocated on its node with
//! the GPUs its template asks, bound pods in their claim's `reservedFor`, pending pods
//! in none. [`SoakMode::Gangs`] adds Coscheduling gangs of 2 to 4 pods that arrive and
//! leave whole; bindings held at Permit wait in the driver until their gang is
//! complete or times out, and a gang member may bind only with its whole gang placed.
//! [`SoakMode::Full`] is both.
//!
//! `examples/soak.rs` is the command line over it; a short run is in the test suite.

mod config;
mod dra;
mod gang;
mod model;

pub use self::config::{SoakConfig, SoakError, SoakMode, SoakSummary};

use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use self::gang::Gangs;
use self::model::{Model, PodSpec, PodWhere};
use crate::dra::DraStore;
use crate::framework::{Handle, Plugin, PluginRef, Profile, RecordingEvictor, VirtualClock};
use crate::model::Symbol;
use crate::plugins::coscheduling::{Coscheduling, CoschedulingArgs};
use crate::plugins::{default_profile_config, default_registry, names};
use crate::queue::SchedulingQueue;
use crate::rng::SplitMix64;
use crate::scheduler::{BindingCycle, ScheduleError, Scheduler, TieBreak};

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
    if config.heap_growth_limit.is_some() && config.live_heap.is_none() {
        return Err(SoakError::Config("heap_growth_limit needs a live_heap counter".into()));
    }
    let mut soak = Soak::new(config)?;
    let result = soak.run();
    soak.shutdown();
    result?;
    let (rss_end, rss_peak) = rss();
    soak.summary.rss_end = rss_end;
    soak.summary.rss_peak = rss_peak;
    soak.summary.interned = Symbol::interner_stats().live;
    let grew = |what: &str, steady: Option<u64>, end: Option<u64>, limit: Option<u64>| match (limit, steady, end) {
        (Some(limit), Some(steady), Some(end)) if end > steady + limit => Err(SoakError::Invariant {
            attempts: soak.summary.attempts,
            what: format!("the {what} grew from {steady} B once steady to {end} B at the end (limit {limit} B)"),
        }),
        _ => Ok(()),
    };
    grew("resident set", soak.summary.rss_steady, rss_end, config.rss_growth_limit)?;
    grew("live heap", soak.summary.heap_steady, soak.summary.heap_end, config.heap_growth_limit)?;
    Ok(soak.summary.clone())
}

struct Soak<'c> {
    config: &'c SoakConfig,
    sched: Scheduler,
    clock: VirtualClock,
    evictor: Arc<RecordingEvictor>,
    queue: Arc<Mutex<SchedulingQueue>>,
    model: Model,
    /// The DRA store (DRA modes).
    store: Option<Arc<DraStore>>,
    /// The gangs (gang modes).
    gangs: Option<Gangs>,
    /// Bindings held at Permit, waiting for their gang or their timeout.
    parked: Vec<BindingCycle>,
    /// Each node's slice generation (bumped when the node comes back).
    generations: Vec<i64>,
    rng: SplitMix64,
    to_workers: Option<mpsc::SyncSender<BindingCycle>>,
    results: mpsc::Receiver<Bound>,
    workers: Vec<std::thread::JoinHandle<()>>,
    in_flight: usize,
    next_pod: u64,
    /// Attempts run when the pod count first reached the steady size.
    steady_at: Option<u64>,
    /// Attempts run when the steady marks were taken.
    settled_at: Option<u64>,
    summary: SoakSummary,
    started: Instant,
}

/// How long a gang member waits at Permit for its siblings (virtual time; the soak's
/// clock advances 1 ms per step).
const GANG_PERMIT_WAIT: Duration = Duration::from_secs(3);

/// The profile for `mode`: kube-scheduler's default, plus DynamicResources (with the
/// store shared on the handle) and Coscheduling (which then sorts the queue).
fn profile(mode: SoakMode, handle: &Handle, gang: Option<Arc<Coscheduling>>) -> Result<Profile, SoakError> {
    if mode == SoakMode::Default {
        return Ok(Profile::kube_default(handle));
    }
    let mut registry = default_registry();
    let mut cfg = default_profile_config();
    if mode.dra() {
        cfg.plugins.multi_point.enabled.push(PluginRef { name: names::DYNAMIC_RESOURCES.into(), weight: None });
    }
    if let Some(gang) = gang {
        registry
            .register(names::COSCHEDULING, move |_, _| Ok(gang.clone() as Arc<dyn Plugin>))
            .map_err(|e| SoakError::Config(e.to_string()))?;
        cfg.plugins.multi_point.enabled.push(PluginRef { name: names::COSCHEDULING.into(), weight: None });
        cfg.plugins.queue_sort.disabled.push(PluginRef { name: names::PRIORITY_SORT.into(), weight: None });
    }
    registry.build_profile(&cfg, handle).map_err(|e| SoakError::Config(e.to_string()))
}

impl<'c> Soak<'c> {
    fn new(config: &'c SoakConfig) -> Result<Self, SoakError> {
        let clock = VirtualClock::new();
        let handle = Handle::new(Arc::new(clock.clone()));
        let evictor = Arc::new(RecordingEvictor::default());
        handle.preemption().set_evictor(evictor.clone());
        let store = if config.mode.dra() {
            let store = dra::store().map_err(|e| SoakError::Config(format!("the soak's DRA objects: {e}")))?;
            handle.set_shared(store.clone());
            Some(store)
        } else {
            None
        };
        let gang = if config.mode.gangs() {
            let args = CoschedulingArgs { permit_waiting_time: GANG_PERMIT_WAIT, ..CoschedulingArgs::default() };
            Some(Arc::new(Coscheduling::new(&handle, args).map_err(|e| SoakError::Config(e.to_string()))?))
        } else {
            None
        };
        let gangs = gang.as_ref().map(|g| Gangs::new(g.registry()));
        let profile = profile(config.mode, &handle, gang)?;
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
        let mut model = Model::default();
        model.gpus = config.mode.dra();
        let mut soak = Soak {
            config,
            sched,
            clock,
            evictor,
            queue,
            model,
            store,
            gangs,
            parked: Vec::new(),
            generations: vec![1; config.nodes],
            rng: SplitMix64(config.seed),
            to_workers: Some(to_workers),
            results,
            workers,
            in_flight: 0,
            next_pod: 0,
            steady_at: None,
            settled_at: None,
            summary: SoakSummary { mode: config.mode, ..SoakSummary::default() },
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
        self.sched.events().add_node(node).map_err(|e| self.refused(format!("adding node {index}: {e}")))?;
        if let Some(store) = &self.store {
            let n = &self.model.nodes[index];
            let added = dra::slice(&n.name, index, n.gpus, self.generations[index]).and_then(|s| store.add_slice(s));
            added.map_err(|e| self.refused(format!("the slice of node {index}: {e}")))?;
        }
        Ok(())
    }

    fn run(&mut self) -> Result<(), SoakError> {
        self.started = Instant::now();
        while self.summary.attempts < self.config.attempts {
            self.clock.advance(Duration::from_millis(1));
            self.churn()?;
            self.attempt()?;
            self.release_parked()?;
            self.collect(false)?;
            if self.steady_at.is_none() && self.model.pod_count() >= self.config.steady_pods {
                self.steady_at = Some(self.summary.attempts);
            }
            if self.summary.attempts.is_multiple_of(self.config.check_every) {
                self.collect(true)?;
                self.check()?;
                // The steady marks wait for one turnover of the steady population: when
                // the pod count first reaches it, the backlog is still being placed and
                // the heap has not reached its working size.
                if self.settled_at.is_none()
                    && self.steady_at.is_some_and(|at| self.summary.attempts >= at + self.config.steady_pods as u64)
                {
                    self.settled_at = Some(self.summary.attempts);
                    self.summary.rss_steady = rss().0;
                }
                self.heap_floor();
            }
        }
        self.collect(true)?;
        self.check()?;
        self.heap_floor();
        self.summary.elapsed = self.started.elapsed();
        Ok(())
    }

    /// Lowers the live heap's floor of the half of the settled run this check is in.
    fn heap_floor(&mut self) {
        let (Some(live), Some(settled)) = (self.config.live_heap, self.settled_at) else { return };
        let now = live();
        let second_half = self.summary.attempts - settled > self.config.attempts.saturating_sub(settled) / 2;
        let floor = if second_half { &mut self.summary.heap_end } else { &mut self.summary.heap_steady };
        *floor = Some(floor.map_or(now, |f| f.min(now)));
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
            if self.gangs.is_some() && self.rng.below(4) == 0 {
                let size = 2 + self.rng.below(3) as usize;
                self.add_gang(size)?;
            } else {
                for _ in 0..2 {
                    self.add_pod()?;
                }
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
        let spec = PodSpec::random(n, &mut self.rng, model::ZONES, self.config.mode.dra());
        self.add_spec(spec)
    }

    /// A gang of `size` pods, all needed, each claiming GPUs in the DRA modes one time
    /// in three (all members the same template).
    fn add_gang(&mut self, size: usize) -> Result<(), SoakError> {
        let Some(gangs) = self.gangs.as_mut() else { return Ok(()) };
        let group = gangs.create(size).map_err(|e| SoakError::Config(format!("a gang: {e}")))?;
        let gpu = (self.config.mode.dra() && self.rng.below(3) == 0)
            .then(|| self.rng.below(dra::TEMPLATES.len() as u64) as usize);
        for _ in 0..size {
            let n = self.next_pod;
            self.next_pod += 1;
            let spec = PodSpec::gang_member(n, group.clone(), gpu);
            if let Some(g) = self.gangs.as_mut() {
                g.add_member(&group, spec.uid.clone());
            }
            self.add_spec(spec)?;
        }
        Ok(())
    }

    /// Makes a pod's claim (as the resourceclaim controller does from its template),
    /// then adds the pod.
    fn add_spec(&mut self, spec: PodSpec) -> Result<(), SoakError> {
        let pod = spec.object();
        if let (Some(store), Some(pc)) = (&self.store, pod.spec.resource_claims.first()) {
            store
                .instantiate_template(&pod, pc)
                .map_err(|e| self.refused(format!("the claim of {}: {e}", spec.uid)))?;
        }
        let uid = spec.uid.clone();
        self.model.add_pod(spec);
        self.sched.events().add_pod(pod).map_err(|e| self.refused(format!("adding pod {uid}: {e}")))
    }

    /// Deletes a pod, and with it its whole gang (a gang's job fails as a unit).
    fn delete_pod(&mut self, uid: &str) -> Result<(), SoakError> {
        let group = self.model.spec(uid).and_then(|s| s.group.clone());
        match (group, self.gangs.as_mut()) {
            (Some(group), Some(gangs)) => {
                for member in gangs.remove(&group) {
                    self.delete_one(&member)?;
                }
                Ok(())
            }
            _ => self.delete_one(uid),
        }
    }

    fn delete_one(&mut self, uid: &str) -> Result<(), SoakError> {
        let Some(claim) = self.model.spec(uid).map(|s| s.gpu.is_some()) else { return Ok(()) };
        self.model.remove_pod(uid);
        self.sched.events().delete_pod(uid).map_err(|e| self.refused(format!("deleting pod {uid}: {e}")))?;
        // A binding held at Permit is undone here, and its pod (in flight in the queue,
        // marked deleted) leaves the queue.
        if let Some(i) = self.parked.iter().position(|b| &*b.pod().uid == uid) {
            let _ = self.parked.swap_remove(i).abort("pod deleted");
            let _ = self.queue.lock().done(uid);
        }
        if claim && let Some(store) = &self.store {
            store.remove_claim(dra::NAMESPACE, &dra::claim_name(uid));
        }
        Ok(())
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
                if let Some(store) = &self.store {
                    store.remove_slice(&dra::slice_name(&name));
                }
                self.model.node_removed(index);
                self.model.node_reset(index, &mut self.rng);
                self.generations[index] += 1;
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

    /// Pops a pod and runs its scheduling cycle; a binding goes to a worker, or waits
    /// in the driver while Permit holds it.
    fn attempt(&mut self) -> Result<(), SoakError> {
        let Some(queued) = self.queue.lock().pop() else { return Ok(()) };
        let pod = queued.pod;
        self.summary.attempts += 1;
        match self.sched.schedule_one(&pod) {
            Ok(binding) => {
                let node = binding.node().to_owned();
                self.model.check_fits(&pod.uid, &node).map_err(|what| self.broken(what))?;
                self.model.assume(&pod.uid, &node);
                if binding.permit_resolved() {
                    self.dispatch(binding)?;
                } else {
                    self.parked.push(binding);
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

    fn dispatch(&mut self, binding: BindingCycle) -> Result<(), SoakError> {
        self.in_flight += 1;
        let tx = self.to_workers.as_ref().expect("workers run until shutdown");
        if tx.send(binding).is_err() {
            return Err(self.refused("a binding: the workers stopped".into()));
        }
        Ok(())
    }

    /// Sends the bindings their gang completed to the workers; runs those rejected or
    /// timed out at Permit here, so the cache gives their room back before the next
    /// attempt (on a worker, the model would learn of it only later).
    fn release_parked(&mut self) -> Result<(), SoakError> {
        let mut i = 0;
        while i < self.parked.len() {
            match self.parked[i].permit_outcome() {
                None => i += 1,
                Some(s) if s.is_success() => {
                    let b = self.parked.swap_remove(i);
                    self.dispatch(b)?;
                }
                Some(_) => {
                    let b = self.parked.swap_remove(i);
                    let uid = b.pod().uid.clone();
                    if let Err(e) = b.run() {
                        let rejectors: Vec<&'static str> = e.status.plugin().into_iter().collect();
                        let _ = self.queue.lock().requeue_failed(&uid, &rejectors);
                    }
                    self.model.unassume(&uid);
                }
            }
        }
        Ok(())
    }

    /// Takes the workers' results; with `drain`, waits until none is in flight. A gang
    /// member that bound is checked against its whole gang.
    fn collect(&mut self, drain: bool) -> Result<(), SoakError> {
        loop {
            let next =
                if drain && self.in_flight > 0 { self.results.recv().ok() } else { self.results.try_recv().ok() };
            let Some(b) = next else { return Ok(()) };
            self.in_flight -= 1;
            if !b.ok {
                self.model.unassume(&b.uid);
                continue;
            }
            self.summary.bound += 1;
            if self.model.mark_bound(&b.uid)
                && let (Some(gangs), Some(group)) = (&self.gangs, self.model.spec(&b.uid).and_then(|s| s.group.clone()))
            {
                gangs.check_bind(&group, &b.uid, &self.model).map_err(|what| self.broken(what))?;
                self.summary.gang_binds += 1;
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
        // Parked pods are still in flight in the queue.
        let queued = self.queue.lock().len();
        let (pending, parked) = (self.model.pending_count(), self.parked.len());
        if queued != pending + parked {
            return Err(self.broken(format!(
                "the queue holds {queued} pods, the model has {pending} pending and {parked} held at Permit"
            )));
        }
        for (uid, place) in self.model.pods() {
            use crate::scheduler::PodState;
            let state = self.sched.pod_state(uid);
            let ok = match place {
                PodWhere::Pending => matches!(
                    state,
                    Some(PodState::Active | PodState::Backoff | PodState::Unschedulable | PodState::Gated)
                ),
                PodWhere::Placed(_) if self.parked.iter().any(|b| &*b.pod().uid == uid) => {
                    state == Some(PodState::Scheduling)
                }
                PodWhere::Placed(_) => state == Some(PodState::Bound),
            };
            if !ok {
                return Err(self.broken(format!("pod {uid} is {place:?} in the model but {state:?} in the scheduler")));
            }
        }
        if let Some(store) = &self.store {
            self.summary.gpus_held = dra::check(store, &self.model).map_err(|what| self.broken(what))?;
        }
        if let Some(gangs) = &self.gangs {
            gangs.check(&self.model).map_err(|what| self.broken(what))?;
        }
        self.summary.checks += 1;
        Ok(())
    }

    fn shutdown(&mut self) {
        // Held bindings are aborted (dropping one unreserves it).
        self.parked.clear();
        self.to_workers = None;
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}
