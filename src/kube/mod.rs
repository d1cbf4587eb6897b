//! The kube-rs scheduler runtime (feature `kube`): watches feed the scheduler's cache
//! and queue, the synchronous scheduling loop runs on a blocking thread, pods are
//! bound through pods/binding, failures are reported as kube-scheduler reports them.
//!
//! - **Watches**: nodes; all non-terminal pods (`status.phase!=Succeeded,
//!   status.phase!=Failed`, upstream's pod informer selector) — assigned pods into the
//!   cache, unassigned pods whose `schedulerName` one of the scheduler's profiles
//!   serves into the queue; namespaces (labels for `namespaceSelector`, when
//!   [`RunOptions::namespaces`] is set); PodDisruptionBudgets for preemption.
//!   PriorityClasses are not watched: admission has already resolved a pod's
//!   `spec.priority`, and kube-scheduler does not watch them either. A failed or
//!   expired watch (410 Gone) re-lists with backoff; objects missing from the new list
//!   are deleted. A malformed object is logged with its name and skipped.
//! - **Binding**: [`KubeBinder`] (put in the profile by [`registry`]) posts a
//!   Binding; a conflict or not-found fails the binding cycle, so the pod is
//!   unreserved, forgotten by the cache and requeued.
//! - **Failures**: a PodScheduled=False condition (reason `Unschedulable` or
//!   `SchedulerError`, message the FitError's text) with `status.nominatedNodeName`
//!   when preemption nominated a node, and a FailedScheduling Event; a binding gets a
//!   Scheduled Event.
//! - **Preemption**: victims go through the Eviction API ([`KubeEvictor`]).
//! - **Leader election** on a Lease ([`LeaderElection`]); **graceful shutdown** with
//!   [`Shutdown`]: the loop finishes its attempt, the watches stop, `run` returns.
//!
//! - **DRA**: when a [`DraStore`](crate::dra::DraStore) is shared on the scheduler's
//!   handle, ResourceSlices, DeviceClasses and ResourceClaims (resource.k8s.io/v1) are
//!   watched into it, each change told to the queue as the DynamicResources plugin's
//!   cluster event; claim status (allocation, `reservedFor`) is written back by
//!   [`KubeClaimWriter`] (put in the profile by [`registry`]).
//!
//! - **Workloads**: with the `GenericWorkload` gate on the scheduler's handle (and
//!   k8s-openapi v1_36 or newer), v1.36 PodGroups (`scheduling.k8s.io/v1alpha2`) are
//!   watched into the framework's pod-group manager.
//! - **Bindings run on their own tasks** ([`RunOptions::max_concurrent_bindings`]
//!   blocking tasks of the runtime, started once), as upstream runs each binding
//!   cycle on a goroutine: the loop schedules the next pod while the API server
//!   answers. Bindings held at Permit go to the same binding tasks once their wait
//!   is over. A binding task takes every queued binding it has room for, runs
//!   their PreBind, and keeps the pods/binding requests of [`KubeBinder`] in flight
//!   together, finishing each binding cycle (PostBind, filing the pod) as its answer
//!   comes; a binding that another Bind plugin or an extender decides runs whole
//!   on the task, as before.
//! - **Hand-overs are batched**, since each wake-up of a sleeping thread costs more
//!   than the work it hands over: the loop hands bindings to the tasks a batch at a
//!   time (when the batch is full or the loop runs out of work), waking one task;
//!   more tasks join when queued bindings wait over a millisecond (slow binds); the
//!   loop waits when as many bindings are queued as run at once. The tasks hand
//!   their Events back in batches to one publishing task, which also sends the
//!   failure status patches. A watch wakes the loop once for all the events it has
//!   decoded (a list page, a burst of changes), and the loop schedules every ready
//!   pod before it sleeps again.

mod direct;
mod dra;
mod events;
mod lean;
mod lease;
mod pool;
mod watch;
mod writer;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::policy::v1 as policy;
use kube::Api;
use kube::runtime::watcher;
use tokio::sync::Notify;

pub use dra::KubeClaimWriter;
pub use lease::LeaderElection;
pub use writer::{KubeBinder, KubeEvictor};

use crate::framework::Registry;
use crate::manifest::LoadOptions;
use crate::plugins::default_binder::DefaultBinder;
use crate::plugins::inter_pod_affinity::{InterPodAffinity, NamespaceLabels};
use crate::plugins::names;
use crate::scheduler::{AttemptOutcome, Next, ScheduleError, Scheduler};

/// Stops a running [`run`]; cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct Shutdown(Arc<(AtomicBool, Notify)>);

impl Shutdown {
    /// A handle not yet triggered.
    pub fn new() -> Self {
        Shutdown::default()
    }
    /// Asks the runtime to stop after the attempt in progress.
    pub fn trigger(&self) {
        self.0.0.store(true, Ordering::SeqCst);
        self.0.1.notify_waiters();
    }
    /// Whether [`Shutdown::trigger`] was called.
    pub fn is_triggered(&self) -> bool {
        self.0.0.load(Ordering::SeqCst)
    }
    async fn wait(&self) {
        let notified = self.0.1.notified();
        if !self.is_triggered() {
            notified.await;
        }
    }
}

/// How [`run`] runs.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// How objects are converted: by default unmodeled scheduling fields are logged at
    /// debug level and the object is used; `strict` skips such objects.
    pub load: LoadOptions,
    /// Where to write namespace labels (give the same value to [`registry`]); `None`
    /// does not watch namespaces.
    pub namespaces: Option<NamespaceLabels>,
    /// Elect a leader before scheduling; `None` schedules at once.
    pub leader_election: Option<LeaderElection>,
    /// Stops the runtime when triggered.
    pub shutdown: Shutdown,
    /// Binding cycles running at once (and bindings queued for them at most); 0
    /// means [`DEFAULT_MAX_CONCURRENT_BINDINGS`].
    pub max_concurrent_bindings: usize,
}

/// Binding cycles running at once when [`RunOptions::max_concurrent_bindings`] is 0.
///
/// Upstream runs each binding cycle in a goroutine of its own, with no limit. Here the
/// limit also bounds the bindings queued for the binding tasks, so it is how far the
/// scheduling loop may run ahead of the API server's answers: with 16, the loop waited
/// for room a fifth of the time in `benches/kube_runtime.rs` (10,000 pods), and
/// with 64 the run took about a fifth less. Against an API server answering in 5 ms,
/// 64 in flight allow some 12,800 bindings a second. The tasks start once and sleep
/// when there is nothing to bind.
pub const DEFAULT_MAX_CONCURRENT_BINDINGS: usize = 64;

/// The run's counters, shared with the binding tasks.
#[derive(Default)]
struct Counters {
    bound: AtomicUsize,
    failed: AtomicUsize,
    bind_failed: AtomicUsize,
}

impl Counters {
    fn stats(&self) -> RunStats {
        RunStats {
            bound: self.bound.load(Ordering::SeqCst),
            failed: self.failed.load(Ordering::SeqCst),
            bind_failed: self.bind_failed.load(Ordering::SeqCst),
        }
    }
}

/// What a run did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunStats {
    /// Pods bound.
    pub bound: usize,
    /// Scheduling attempts that failed (the pod was requeued).
    pub failed: usize,
    /// Binding cycles that failed (conflict, not found, Permit rejection).
    pub bind_failed: usize,
}

/// Why the runtime stopped with an error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// Not called inside a tokio runtime.
    #[error("schedkit::kube needs a tokio runtime")]
    NoRuntime,
    /// The lease could not be renewed within the renew deadline.
    #[error("lost the leader lease {0}")]
    LostLease(String),
    /// The scheduling thread panicked.
    #[error("the scheduling thread stopped: {0}")]
    SchedulingThread(String),
}

/// kube-scheduler's default plugins with DefaultBinder binding through `client`,
/// DynamicResources writing claim status through it ([`KubeClaimWriter`]) and
/// InterPodAffinity reading `namespaces` (fill it with [`RunOptions::namespaces`]).
/// Must be called inside a tokio runtime.
pub fn registry(client: &kube::Client, namespaces: &NamespaceLabels) -> Result<Registry, RunError> {
    let rt = tokio::runtime::Handle::try_current().map_err(|_| RunError::NoRuntime)?;
    let mut r = crate::plugins::default_registry();
    let claims: Arc<dyn crate::plugins::dynamic_resources::ClaimStatusWriter> =
        Arc::new(KubeClaimWriter::new(client.clone(), rt.clone()));
    r.replace(names::DYNAMIC_RESOURCES, move |args, handle| {
        crate::plugins::dynamic_resources::DynamicResources::from_config(args, handle)
            .map(|p| Arc::new(p.with_writer(claims.clone())) as Arc<dyn crate::framework::Plugin>)
            .map_err(|e| e.to_string())
    });
    let binder = KubeBinder::new(client.clone(), rt);
    r.replace(names::DEFAULT_BINDER, move |_, _| {
        Ok(Arc::new(DefaultBinder::new(binder.clone())) as Arc<dyn crate::framework::Plugin>)
    });
    r.replace(names::INTER_POD_AFFINITY, InterPodAffinity::factory_with(namespaces.clone()));
    Ok(r)
}

/// Runs `scheduler` against the API server behind `client` until
/// [`RunOptions::shutdown`] is triggered (or the leader lease is lost). The scheduler
/// should come from [`registry`] (or otherwise bind through [`KubeBinder`]).
pub async fn run(client: kube::Client, mut scheduler: Scheduler, options: RunOptions) -> Result<RunStats, RunError> {
    let rt = tokio::runtime::Handle::try_current().map_err(|_| RunError::NoRuntime)?;
    let shutdown = options.shutdown.clone();
    let lost = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::new();
    if let Some(le) = &options.leader_election {
        let lease = format!("{}/{}", le.namespace, le.name);
        loop {
            match le.try_acquire_or_renew(&client).await {
                Ok(true) => break,
                Ok(false) => {}
                Err(source) => log::warn!("leader election on lease {lease}: {source}"),
            }
            tokio::select! {
                () = tokio::time::sleep(le.retry_period) => {}
                () = shutdown.wait() => return Ok(RunStats::default()),
            }
        }
        log::info!("leading on lease {lease} as {}", le.identity);
        tasks.push(tokio::spawn(renew(client.clone(), le.clone(), shutdown.clone(), lost.clone())));
    }

    scheduler.handle().preemption().set_evictor(Arc::new(KubeEvictor::new(client.clone(), rt.clone())));
    let kick = Arc::new(Notify::new());
    let synced = Arc::new(watch::Synced::default());
    let events = scheduler.events();
    let scheduler_names: Vec<String> = scheduler.profiles().iter().map(|p| p.name().to_owned()).collect();
    let reporting =
        writer::Reporting::new(client.clone(), scheduler_names.first().map_or("schedkit", String::as_str), &rt);

    tasks.push(tokio::spawn(watch::drive(
        Api::<direct::Watched<crate::model::Node>>::all(client.clone()),
        watcher::Config::default(),
        watch::Nodes { events: events.clone(), load: options.load },
        kick.clone(),
        synced.register(),
    )));
    tasks.push(tokio::spawn(watch::drive(
        Api::<direct::Watched<crate::model::Pod>>::all(client.clone()),
        watcher::Config::default().fields("status.phase!=Succeeded,status.phase!=Failed"),
        watch::Pods { events: events.clone(), load: options.load, scheduler_names },
        kick.clone(),
        synced.register(),
    )));
    if let Some(ns) = &options.namespaces {
        tasks.push(tokio::spawn(watch::drive(
            Api::<core::Namespace>::all(client.clone()),
            watcher::Config::default(),
            watch::Namespaces { labels: ns.clone() },
            kick.clone(),
            synced.register(),
        )));
    }
    tasks.push(tokio::spawn(watch::drive(
        Api::<policy::PodDisruptionBudget>::all(client.clone()),
        watcher::Config::default(),
        watch::Budgets { handle: scheduler.handle().clone(), all: std::collections::BTreeMap::new() },
        kick.clone(),
        synced.register(),
    )));

    if let Some(store) = scheduler.handle().shared::<crate::dra::DraStore>() {
        use k8s_openapi::api::resource::v1 as resource;
        let shared = dra::Dra { store, events: events.clone(), load: options.load, waiting: Arc::default() };
        tasks.push(tokio::spawn(watch::drive(
            Api::<resource::DeviceClass>::all(client.clone()),
            watcher::Config::default(),
            dra::Classes(shared.clone()),
            kick.clone(),
            synced.register(),
        )));
        tasks.push(tokio::spawn(watch::drive(
            Api::<resource::ResourceSlice>::all(client.clone()),
            watcher::Config::default(),
            dra::Slices(shared.clone()),
            kick.clone(),
            synced.register(),
        )));
        tasks.push(tokio::spawn(watch::drive(
            Api::<resource::ResourceClaim>::all(client.clone()),
            watcher::Config::default(),
            dra::Claims(shared),
            kick.clone(),
            synced.register(),
        )));
    }

    k8s_openapi::k8s_if_ge_1_36! {
        let gates = scheduler.handle().feature_gates();
        if gates.enabled(crate::framework::Feature::GenericWorkload) {
            tasks.push(tokio::spawn(watch::drive(
                Api::<k8s_openapi::api::scheduling::v1alpha2::PodGroup>::all(client.clone()),
                watcher::Config::default(),
                watch::PodGroups { events: events.clone(), load: options.load, gates },
                kick.clone(),
                synced.register(),
            )));
        }
    }

    // Upstream waits for its informers' caches before the first cycle.
    tokio::select! {
        () = synced.wait() => {}
        () = shutdown.wait() => {
            tasks.iter().for_each(tokio::task::JoinHandle::abort);
            return Ok(RunStats::default());
        }
    }
    let stop = shutdown.clone();
    let lost_flag = lost.clone();
    let loop_kick = kick.clone();
    let waker = tokio::spawn({
        let (stop, kick) = (shutdown.clone(), kick.clone());
        async move {
            stop.wait().await;
            kick.notify_one();
        }
    });
    let slots = match options.max_concurrent_bindings {
        0 => DEFAULT_MAX_CONCURRENT_BINDINGS,
        n => n,
    };
    let joined = tokio::task::spawn_blocking(move || {
        let counters = Arc::new(Counters::default());
        let pool = pool::BindingPool::start(&rt, slots, &reporting, &counters, &loop_kick);
        // Bindings and reports are handed over in batches: when one is full, and
        // whenever the loop runs out of work (before it sleeps).
        let mut bindings: Vec<crate::scheduler::PendingBinding> = Vec::with_capacity(slots);
        let mut out: Vec<writer::Outgoing> = Vec::new();
        while !stop.is_triggered() && !lost_flag.load(Ordering::SeqCst) {
            let mut busy = true;
            match scheduler.schedule_next_deferred() {
                Some(Next::Attempt(a)) => report(&scheduler, &mut out, &a, &counters),
                Some(Next::Bind(b)) => bindings.push(*b),
                None => busy = false,
            }
            // Bindings whose Permit wait is over go to the same binding tasks.
            for b in scheduler.resume_waiting_deferred() {
                bindings.push(b);
                busy = true;
            }
            if (bindings.len() >= slots || !busy) && !pool.submit(&mut bindings) {
                break;
            }
            if out.len() >= slots || !busy {
                reporting.send(std::mem::take(&mut out));
            }
            if !busy {
                let mut wait = scheduler.next_wakeup().unwrap_or(IDLE).min(IDLE);
                if pool.nudge() {
                    wait = wait.min(pool::STALE);
                }
                rt.block_on(async {
                    let _ = tokio::time::timeout(wait, loop_kick.notified()).await;
                });
            }
        }
        // Graceful: the bindings handed out finish (their pods are assumed).
        let _ = pool.submit(&mut bindings);
        reporting.send(out);
        pool.finish(&rt);
        counters.stats()
    })
    .await;
    waker.abort();
    for t in tasks {
        t.abort();
    }
    let stats = joined.map_err(|e| RunError::SchedulingThread(e.to_string()))?;
    if lost.load(Ordering::SeqCst)
        && let Some(le) = &options.leader_election
    {
        return Err(RunError::LostLease(format!("{}/{}", le.namespace, le.name)));
    }
    Ok(stats)
}

/// The longest the loop sleeps without an event: backoff expiries and Permit
/// timeouts are re-checked at least this often.
const IDLE: Duration = Duration::from_millis(200);

fn report(scheduler: &Scheduler, out: &mut Vec<writer::Outgoing>, a: &crate::scheduler::Attempt, stats: &Counters) {
    let pod = &a.pod.pod;
    match &a.outcome {
        AttemptOutcome::Failed { error, .. } => {
            stats.failed.fetch_add(1, Ordering::SeqCst);
            let unschedulable = matches!(error, ScheduleError::Unschedulable(_) | ScheduleError::NoNodes);
            let nominated =
                scheduler.handle().preemption().nominator().nominated_node(&a.pod.uid).map(|s| s.to_string());
            writer::Reporting::failed(out, pod, unschedulable, &error.to_string(), nominated);
        }
        _ => report_binding(out, a, stats),
    }
}

/// The outcomes of a binding cycle (on its binding task), into `out`.
fn report_binding(out: &mut Vec<writer::Outgoing>, a: &crate::scheduler::Attempt, stats: &Counters) {
    let pod = &a.pod.pod;
    match &a.outcome {
        AttemptOutcome::Bound(node) => {
            stats.bound.fetch_add(1, Ordering::SeqCst);
            writer::Reporting::bound(out, pod, node);
        }
        AttemptOutcome::BindFailed { error, .. } => {
            stats.bind_failed.fetch_add(1, Ordering::SeqCst);
            writer::Reporting::failed(out, pod, false, &error.to_string(), None);
        }
        _ => {}
    }
}

/// Renews the lease every retry period; sets `lost` and triggers nothing else when a
/// renewal has not succeeded within the renew deadline.
async fn renew(client: kube::Client, le: LeaderElection, shutdown: Shutdown, lost: Arc<AtomicBool>) {
    let mut last_ok = tokio::time::Instant::now();
    loop {
        tokio::select! {
            () = tokio::time::sleep(le.retry_period) => {}
            () = shutdown.wait() => return,
        }
        match le.try_acquire_or_renew(&client).await {
            Ok(true) => last_ok = tokio::time::Instant::now(),
            Ok(false) => {
                lost.store(true, Ordering::SeqCst);
                return;
            }
            Err(e) => log::warn!("renewing lease {}/{}: {e}", le.namespace, le.name),
        }
        if last_ok.elapsed() > le.renew_deadline {
            lost.store(true, Ordering::SeqCst);
            return;
        }
    }
}

/// The watches' lean decoding (the private `kube::lean` module) of one Pod's JSON, for
/// tests that compare it with k8s-openapi's full decode. Not a stable API.
#[doc(hidden)]
pub fn lean_pod_from_json(text: &str) -> Result<core::Pod, serde_json::Error> {
    serde_json::from_str::<lean::Lean<core::Pod>>(text).map(|l| l.0)
}

/// [`lean_pod_from_json`] for a Node. Not a stable API.
#[doc(hidden)]
pub fn lean_node_from_json(text: &str) -> Result<core::Node, serde_json::Error> {
    serde_json::from_str::<lean::Lean<core::Node>>(text).map(|l| l.0)
}

/// The watches' decoding of one Pod's text (the private `kube::direct` module): whether
/// it was decoded straight into the model, and the converted object as the watch hands
/// it to the scheduler. For tests that compare it with k8s-openapi's full decode. Not a
/// stable API.
#[doc(hidden)]
pub fn watched_pod_from_json(
    text: &str,
    opts: LoadOptions,
) -> Result<(bool, crate::manifest::Loaded<crate::model::Pod>), String> {
    direct::pod_from_json(text, opts)
}

/// [`watched_pod_from_json`] for a Node. Not a stable API.
#[doc(hidden)]
pub fn watched_node_from_json(
    text: &str,
    opts: LoadOptions,
) -> Result<(bool, crate::manifest::Loaded<crate::model::Node>), String> {
    direct::node_from_json(text, opts)
}

/// One line of a pod watch decoded as the pod watch decodes it: whether its object was
/// decoded straight into the model, and the resource version kube's watcher resumes
/// from. Not a stable API.
#[doc(hidden)]
pub fn watched_pod_event_from_json(text: &str) -> Result<(bool, Option<String>), String> {
    direct::pod_event_from_json(text)
}
