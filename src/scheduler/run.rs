//! The scheduler loop: pods come from the [`SchedulingQueue`], each attempt runs the
//! scheduling cycle, and binding cycles held at Permit are parked and resumed
//! (upstream `scheduleOne` / `ScheduleOne` in `pkg/scheduler/schedule_one.go` and
//! the event handlers of `pkg/scheduler/eventhandlers.go`).
//!
//! ## Why waiting pods are parked, not run on threads
//!
//! Upstream runs every binding cycle on its own goroutine, which blocks in
//! `WaitOnPermit`. A single-threaded [`Scheduler::run_until_idle`] that blocked there
//! would deadlock on a gang: the first member waits for siblings that can only be
//! scheduled by the loop it is blocking. So the loop never blocks: a binding cycle
//! whose pod a Permit plugin holds is *parked*, and after every attempt the loop
//! polls the parked cycles (a lock and a clock read each) and runs those whose wait
//! is over — allowed, rejected, or timed out on the scheduler's clock. That keeps
//! simulations deterministic on a virtual clock and needs no threads or async
//! runtime. Callers who want upstream's concurrency can still take the
//! [`crate::scheduler::BindingCycle`] from [`Scheduler::schedule_one`] and run it on
//! a thread of their own.
//!
//! ## Where a pod is
//!
//! A pod the scheduler knows is in exactly one [`PodState`]: active, backoff,
//! unschedulable (or gated), waiting at Permit, or bound. (`Scheduling` is only
//! observable from another thread while a cycle runs.)

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use super::pending::BindingFinisher;
pub use super::pending::{PendingBind, PendingBinding};
use super::{BindError, BindingCycle, ScheduleError, Scheduler};
use crate::framework::{ClusterEvent, EventObject, EventResource, Handle, Profile, VirtualClock};
use crate::model::{Node, Pod, PodError};
use crate::queue::{QueueError, QueueLocation, SchedulingQueue, events};
use crate::snapshot::{Cache, CacheError, PodInfo};

/// The name under which the scheduler itself rejects a waiting pod (its node or the
/// pod was deleted). Such a pod is retried after backoff, like an error, since no
/// plugin's events could bring it back.
pub const SCHEDULER_REJECTOR: &str = "schedkit";

/// Where a pod the scheduler knows is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PodState {
    /// In the active queue.
    Active,
    /// In the backoff queue.
    Backoff,
    /// In the unschedulable pool.
    Unschedulable,
    /// In the unschedulable pool, held by a PreEnqueue plugin.
    Gated,
    /// Popped, its cycle running right now (seen only from other threads).
    Scheduling,
    /// Held at Permit; its binding cycle is parked.
    Waiting,
    /// Bound (assumed with its binding finished, or confirmed by the caller).
    Bound,
}

/// What one attempt did.
#[derive(Debug)]
#[non_exhaustive]
pub enum AttemptOutcome {
    /// Scheduled and bound to the node.
    Bound(String),
    /// Scheduled to the node and held at Permit (parked).
    Waiting(String),
    /// The scheduling cycle failed; the pod went back to the queue.
    Failed {
        /// Where it went.
        location: QueueLocation,
        /// Why.
        error: ScheduleError,
    },
    /// The binding cycle failed; the pod was unreserved and requeued.
    BindFailed {
        /// Where it went.
        location: QueueLocation,
        /// Why.
        error: BindError,
    },
    /// Skipped: the pod is being deleted, or was deleted meanwhile.
    Dropped,
}

/// One pod's attempt (or the completion of a parked binding).
#[derive(Debug)]
pub struct Attempt {
    /// The pod.
    pub pod: Arc<PodInfo>,
    /// What happened.
    pub outcome: AttemptOutcome,
}

/// What [`Scheduler::run_until_idle`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunSummary {
    /// Scheduling cycles run.
    pub attempts: usize,
    /// Pods bound.
    pub bound: usize,
    /// Scheduling cycles that failed.
    pub failed: usize,
    /// Binding cycles that failed (rejected at Permit, timed out, bind errors).
    pub bind_failed: usize,
    /// Pods parked at Permit when the run ended.
    pub waiting: usize,
}

impl RunSummary {
    fn record(&mut self, a: &Attempt) {
        match a.outcome {
            AttemptOutcome::Bound(_) => self.bound += 1,
            AttemptOutcome::Failed { .. } => self.failed += 1,
            AttemptOutcome::BindFailed { .. } => self.bind_failed += 1,
            AttemptOutcome::Waiting(_) | AttemptOutcome::Dropped => {}
        }
    }
}

/// An event the scheduler could not apply. Nothing changed when one is returned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EventError {
    /// The pod is invalid.
    #[error(transparent)]
    Pod(#[from] PodError),
    /// The cache refused it (unknown node or pod, duplicates).
    #[error(transparent)]
    Cache(#[from] CacheError),
    /// The queue refused it (unknown profile, duplicates).
    #[error(transparent)]
    Queue(#[from] QueueError),
    /// No pod with this uid is known.
    #[error("pod {0} is not known to the scheduler")]
    UnknownPod(String),
}

/// Feeds cluster events to a scheduler from any thread: node and pod changes go to
/// the cache and the queue (moving unschedulable pods whose rejecting plugins'
/// queueing hints say the event may help), and to plugins that observe pods.
///
/// Cheap to clone; `Send + Sync`. Each call takes the cache lock, then the queue
/// lock, one after the other (never both at once).
#[derive(Clone)]
pub struct SchedulerEvents {
    cache: Arc<Mutex<Cache>>,
    queue: Arc<Mutex<SchedulingQueue>>,
    handle: Handle,
    profiles: Arc<[Arc<Profile>]>,
}

impl std::fmt::Debug for SchedulerEvents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SchedulerEvents").finish_non_exhaustive()
    }
}

impl SchedulerEvents {
    fn event(&self, event: ClusterEvent, obj: &EventObject) -> usize {
        self.queue.lock().on_event(event, obj)
    }

    fn observe(&self, f: impl Fn(&dyn crate::framework::PodObserver)) {
        for p in self.profiles.iter() {
            for o in p.pod_observers() {
                let _ = crate::framework::runtime::guard(o.name, "PodObserver", || f(&*o.plugin));
            }
        }
    }

    /// Tells every plugin observing nodes (in every profile) that `name` left, each
    /// call guarded as a PodObserver's is.
    fn node_removed(&self, name: &str) {
        for p in self.profiles.iter() {
            for o in p.node_observers() {
                let _ = crate::framework::runtime::guard(o.name, "NodeObserver", || o.plugin.node_removed(name));
            }
        }
    }

    /// Adds a node.
    pub fn add_node(&self, node: Node) -> Result<(), CacheError> {
        let arc = Arc::new(node);
        self.cache.lock().add_shared_node(arc.clone())?;
        self.event(events::NODE_ADD, &EventObject::Node { old: None, new: Some(arc) });
        Ok(())
    }

    /// Replaces a node (labels, taints, allocatable, schedulability).
    pub fn update_node(&self, node: Node) -> Result<(), CacheError> {
        let new = Arc::new(node.clone());
        let old = {
            let mut c = self.cache.lock();
            let old = c.node_info(node.name()).map(|n| n.node_arc().clone());
            c.update_node(node)?;
            old
        };
        let action = old.as_ref().map_or(crate::framework::ActionType::UPDATE_OTHER, |o| events::node_update(o, &new));
        if action.0 != 0 {
            let e = ClusterEvent { resource: EventResource::Node, action };
            self.event(e, &EventObject::Node { old, new: Some(new) });
        }
        Ok(())
    }

    /// Removes a node. Bound pods on it leave the cache with it (deleting them is
    /// the caller's business, as a controller's upstream); pods waiting at Permit
    /// for it are rejected, so the loop unreserves and requeues them. Plugins that
    /// keep per-node state hear of it ([`NodeObserver`](crate::framework::NodeObserver))
    /// and drop it.
    pub fn remove_node(&self, name: &str) -> Result<(), CacheError> {
        let old = {
            let mut c = self.cache.lock();
            let old = c.node_info(name).map(|n| n.node_arc().clone());
            c.remove_node(name)?;
            old
        };
        self.handle.waiting_pods().for_each(|wp| {
            if wp.node() == name {
                wp.reject(SCHEDULER_REJECTOR, "node deleted");
            }
        });
        self.node_removed(name);
        self.event(events::NODE_DELETE, &EventObject::Node { old, new: None });
        Ok(())
    }

    /// Adds a pod: an unscheduled one is queued (or gated by PreEnqueue); one with
    /// `spec.nodeName` goes to the cache (confirming it if the scheduler had
    /// assumed it) and is an assigned-pod-added event.
    pub fn add_pod(&self, pod: Pod) -> Result<(), EventError> {
        let info = Arc::new(PodInfo::new(pod)?);
        if info.pod.spec.node_name.is_empty() {
            {
                let mut c = self.cache.lock();
                if c.pod_node(&info.uid).is_some() {
                    // Already placed (assumed or bound): scheduling it again would double-book.
                    return Err(CacheError::PodExists(info.uid.to_string()).into());
                }
                // A v1.36 pod-group member counts before PreEnqueue sees it.
                c.add_pod_group_member(&info);
            }
            if let Err(e) = self.queue.lock().add(info.clone()) {
                self.cache.lock().remove_pod_group_member(&info);
                return Err(e.into());
            }
            self.observe(|o| o.pod_added(&info));
            // Gated pods may be waiting for a sibling (e.g. a gang's minMember).
            let obj = EventObject::Pod { old: None, new: Some(info.clone()) };
            self.queue.lock().on_event_except(events::UNSCHEDULED_POD_ADD, &obj, &info.uid);
            return Ok(());
        }
        self.cache.lock().add_pod(info.clone())?;
        // Bound by someone else while queued: it is no longer ours to schedule.
        self.queue.lock().delete(&info.uid);
        self.observe(|o| o.pod_added(&info));
        self.event(events::ASSIGNED_POD_ADD, &EventObject::Pod { old: None, new: Some(info) });
        Ok(())
    }

    /// Updates a pod in place (queued, or bound). An unscheduled pod that now has a
    /// node name moves from the queue to the cache.
    pub fn update_pod(&self, pod: Pod) -> Result<(), EventError> {
        let new = Arc::new(PodInfo::new(pod)?);
        let old = self.known_pod(&new.uid);
        if new.pod.spec.node_name.is_empty() {
            self.queue.lock().update(new.clone())?;
        } else {
            {
                let mut c = self.cache.lock();
                if c.pod_node(&new.uid).is_some() {
                    c.update_pod(new.clone())?;
                } else {
                    c.add_pod(new.clone())?;
                }
            }
            self.queue.lock().delete(&new.uid);
            let action = old.as_ref().map_or(crate::framework::ActionType::ADD, |o| events::pod_update(o, &new));
            let e = ClusterEvent { resource: EventResource::AssignedPod, action };
            self.event(e, &EventObject::Pod { old: old.clone(), new: Some(new.clone()) });
        }
        match &old {
            Some(o) => self.observe(|ob| ob.pod_updated(o, &new)),
            None => self.observe(|ob| ob.pod_added(&new)),
        }
        Ok(())
    }

    fn known_pod(&self, uid: &str) -> Option<Arc<PodInfo>> {
        if let Some(q) = self.queue.lock().get(uid) {
            return Some(q.pod.clone());
        }
        let c = self.cache.lock();
        let node = c.pod_node(uid)?;
        c.node_info(node)?.pods().iter().find(|p| &*p.uid == uid).cloned()
    }

    /// Deletes a pod wherever it is: a pod waiting at Permit is rejected (its
    /// reservation released when the loop next polls it), a queued pod is dropped,
    /// a bound or assumed pod leaves the cache (an assigned-pod-deleted event).
    pub fn delete_pod(&self, uid: &str) -> Result<(), EventError> {
        let known = self.known_pod(uid);
        let waiting = self.handle.waiting_pods().reject(uid, SCHEDULER_REJECTOR, "pod deleted");
        let queued = self.queue.lock().delete(uid);
        self.handle.preemption().nominator().remove(uid);
        let removed = {
            let mut c = self.cache.lock();
            let removed = c.remove_pod(uid).ok();
            if removed.is_none()
                && let Some(p) = &known
            {
                c.remove_pod_group_member(p);
            }
            removed
        };
        if let Some(p) = &known {
            self.observe(|o| o.pod_deleted(p));
        }
        if let Some(p) = removed {
            self.event(events::ASSIGNED_POD_DELETE, &EventObject::Pod { old: Some(p), new: None });
        } else if queued
            && !waiting
            && let Some(p) = &known
        {
            let obj = EventObject::Pod { old: Some(p.clone()), new: None };
            self.queue.lock().on_event(events::UNSCHEDULED_POD_DELETE, &obj);
        }
        if known.is_none() && !queued && !waiting {
            return Err(EventError::UnknownPod(uid.to_owned()));
        }
        Ok(())
    }

    /// A custom event (e.g. a pod group or claim changed); returns how many pods moved.
    pub fn custom(&self, event: ClusterEvent, obj: &EventObject) -> usize {
        self.event(event, obj)
    }

    /// Adds or replaces a v1.36 PodGroup (`scheduling.k8s.io/v1alpha2`): the framework's
    /// [`PodGroupManager`](crate::framework::PodGroupManager) holds it, and pods waiting
    /// for it (GangScheduling's PreEnqueue, queueing hints) may move. Returns how many
    /// pods moved. The object is not validated here: call
    /// [`PodGroup::validate`](crate::model::workload::PodGroup::validate) first.
    pub fn add_pod_group(&self, group: crate::model::workload::PodGroup) -> usize {
        let new = Arc::new(group.clone());
        let old = self.handle.pod_groups().set_pod_group(group);
        let action =
            if old.is_some() { crate::framework::ActionType::UPDATE } else { crate::framework::ActionType::ADD };
        let e = ClusterEvent { resource: EventResource::PodGroup, action };
        let obj = EventObject::PodGroup { old, new: Some(new) };
        self.event(e, &obj)
    }

    /// Removes a v1.36 PodGroup; its pods then wait for it again at PreEnqueue.
    pub fn delete_pod_group(&self, namespace: &str, name: &str) -> bool {
        let Some(old) = self.handle.pod_groups().remove_pod_group(namespace, name) else { return false };
        let e = ClusterEvent { resource: EventResource::PodGroup, action: crate::framework::ActionType::DELETE };
        self.event(e, &EventObject::PodGroup { old: Some(old), new: None });
        true
    }

    /// Moves pods from backoff or the unschedulable pool to the active queue.
    pub fn activate<'a>(&self, uids: impl IntoIterator<Item = &'a str>) -> usize {
        self.queue.lock().activate(uids)
    }
}

impl Scheduler {
    /// A handle to feed node and pod events from any thread.
    pub fn events(&self) -> SchedulerEvents {
        SchedulerEvents {
            cache: self.cache.clone(),
            queue: self.queue.clone(),
            handle: self.handle.clone(),
            profiles: self.profiles.clone().into(),
        }
    }

    /// The scheduling queue (for inspection; feed events through [`Scheduler::events`]).
    pub fn queue(&self) -> &Arc<Mutex<SchedulingQueue>> {
        &self.queue
    }

    /// Adds a pod (see [`SchedulerEvents::add_pod`]).
    pub fn add_pod(&self, pod: Pod) -> Result<(), EventError> {
        self.events().add_pod(pod)
    }

    /// Where a pod is, or `None` if the scheduler doesn't know it.
    pub fn pod_state(&self, uid: &str) -> Option<PodState> {
        if self.parked.iter().any(|b| &*b.pod().uid == uid) {
            return Some(PodState::Waiting);
        }
        if let Some(loc) = self.queue.lock().location(uid) {
            return Some(match loc {
                QueueLocation::Active => PodState::Active,
                QueueLocation::Backoff => PodState::Backoff,
                QueueLocation::Unschedulable => PodState::Unschedulable,
                QueueLocation::Gated => PodState::Gated,
                QueueLocation::InFlight => PodState::Scheduling,
            });
        }
        self.cache.lock().pod_node(uid).map(|_| PodState::Bound)
    }

    /// Pods parked at Permit.
    pub fn waiting_count(&self) -> usize {
        self.parked.len()
    }

    /// Pops the next ready pod and runs its scheduling cycle; binds it at once unless
    /// a Permit plugin holds it (then it is parked). `None` when no pod is ready.
    pub fn schedule_next(&mut self) -> Option<Attempt> {
        self.schedule_next_deferred().map(|next| match next {
            Next::Attempt(a) => a,
            Next::Bind(b) => b.run(),
        })
    }

    /// As [`Scheduler::schedule_next`], but a binding cycle ready to run is handed back
    /// ([`Next::Bind`]) instead of run, so the caller can run it on a thread of its
    /// own while the next pod is scheduled (upstream runs each binding cycle on a
    /// goroutine). Its pod stays assumed in the cache until it runs.
    pub fn schedule_next_deferred(&mut self) -> Option<Next> {
        if let Some(a) = self.pending_attempts.pop_front() {
            return Some(Next::Attempt(a));
        }
        let queued = self.queue.lock().pop()?;
        if queued.pod.pod.metadata.deletion_timestamp.is_some() {
            let _ = self.queue.lock().done(&queued.pod.uid);
            return Some(Next::Attempt(Attempt { pod: queued.pod, outcome: AttemptOutcome::Dropped }));
        }
        if self.handle.feature_gates().enabled(crate::framework::Feature::GenericWorkload)
            && queued.pod.pod.scheduling_group_name().is_some()
        {
            // One cycle for the whole group; its pods' attempts are reported one by one.
            self.schedule_pod_group(queued);
            return self.pending_attempts.pop_front().map(Next::Attempt);
        }
        let pod = queued.pod;
        let result = self.schedule_signed(&pod, super::Signed::ByQueue(queued.signature));
        self.activate_requested();
        let outcome = match result {
            Ok(binding) if binding.is_waiting() => {
                let node = binding.node().to_owned();
                if let Some(d) = binding.permit_deadline() {
                    self.parked_deadline = Some(self.parked_deadline.map_or(d, |p| p.min(d)));
                }
                // Another pod's Permit may already have allowed or rejected it.
                self.parked_dirty = true;
                self.parked.push(binding);
                AttemptOutcome::Waiting(node)
            }
            Ok(binding) => {
                let finisher = BindingFinisher::new(self.queue.clone(), self.handle.clone());
                return Some(Next::Bind(Box::new(PendingBinding::new(pod, binding, finisher))));
            }
            Err(error) => self.cycle_failed(&pod, error),
        };
        Some(Next::Attempt(Attempt { pod, outcome }))
    }

    pub(super) fn activate_requested(&self) {
        let uids = self.handle.take_pods_to_activate();
        if !uids.is_empty() {
            self.queue.lock().activate(uids.iter().map(|u| &**u));
        }
    }

    pub(super) fn cycle_failed(&self, pod: &Arc<PodInfo>, error: ScheduleError) -> AttemptOutcome {
        let rejectors: Vec<&'static str> = match &error {
            ScheduleError::Unschedulable(fit) => fit.diagnosis.unschedulable_plugins.clone(),
            ScheduleError::Plugin { status, .. } if status.is_rejected() => status.plugin().into_iter().collect(),
            _ => Vec::new(),
        };
        // A nomination from PostFilter is already on the handle's nominator.
        let mut q = self.queue.lock();
        match q.requeue_failed(&pod.uid, &rejectors) {
            Ok(location) => AttemptOutcome::Failed { location, error },
            Err(_) => AttemptOutcome::Dropped,
        }
    }

    /// Runs a binding cycle that won't block, and files the pod accordingly.
    pub(super) fn finish(&self, binding: BindingCycle) -> AttemptOutcome {
        BindingFinisher::new(self.queue.clone(), self.handle.clone()).finish(binding)
    }

    /// Runs every parked binding whose Permit wait is over. Returns the attempts.
    ///
    /// Polls the parked bindings only when a waiting pod was allowed or rejected
    /// since the last poll, a binding was parked, or a Permit deadline passed, so a
    /// large gang waiting at Permit costs nothing per attempt.
    pub fn resume_waiting(&mut self) -> Vec<Attempt> {
        let mut out = Vec::new();
        if !self.parked_due() {
            return out;
        }
        let mut i = 0;
        while i < self.parked.len() {
            if self.parked[i].permit_resolved() {
                let b = self.parked.swap_remove(i);
                let pod = b.pod().clone();
                let outcome = self.finish(b);
                out.push(Attempt { pod, outcome });
            } else {
                i += 1;
            }
        }
        self.parked_deadline = self.parked.iter().filter_map(BindingCycle::permit_deadline).min();
        out
    }

    /// [`Scheduler::resume_waiting`] for a loop that runs binding cycles elsewhere (as
    /// [`Scheduler::schedule_next_deferred`] hands them out): the parked bindings whose
    /// Permit wait is over, unrun. Running one binds an allowed pod, or unreserves and
    /// requeues a rejected or timed-out one.
    pub fn resume_waiting_deferred(&mut self) -> Vec<PendingBinding> {
        self.take_resolved()
            .into_iter()
            .map(|binding| {
                let finisher = BindingFinisher::new(self.queue.clone(), self.handle.clone());
                PendingBinding::new(binding.pod().clone(), binding, finisher)
            })
            .collect()
    }

    /// Whether the parked bindings need a poll: a waiting pod was allowed or rejected
    /// since the last one, a binding was parked, or a Permit deadline passed. Marks
    /// the poll as done.
    fn parked_due(&mut self) -> bool {
        if self.parked.is_empty() {
            return false;
        }
        let epoch = self.handle.waiting_pods().epoch();
        let now = self.handle.clock().now();
        let due = self.parked_dirty || epoch != self.parked_epoch || self.parked_deadline.is_some_and(|d| now >= d);
        if due {
            self.parked_dirty = false;
            self.parked_epoch = epoch;
        }
        due
    }

    /// The parked bindings whose Permit wait is over, taken out of the parked list (as
    /// [`Scheduler::resume_waiting`] polls them; a binding resolved by running these is
    /// found at the next poll, since the waiting pods' epoch has moved).
    fn take_resolved(&mut self) -> Vec<BindingCycle> {
        let mut out = Vec::new();
        if !self.parked_due() {
            return out;
        }
        let mut i = 0;
        while i < self.parked.len() {
            if self.parked[i].permit_resolved() {
                out.push(self.parked.swap_remove(i));
            } else {
                i += 1;
            }
        }
        self.parked_deadline = self.parked.iter().filter_map(BindingCycle::permit_deadline).min();
        out
    }

    /// Schedules until nothing is ready: the active queue is empty and no parked
    /// binding can go on. Pods in backoff or the unschedulable pool, and bindings
    /// waiting for a timeout, wait for the clock (see [`Scheduler::next_wakeup`]).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use schedkit::framework::{Clock, FilterFn, Profile, Status, VirtualClock};
    /// use schedkit::scheduler::{PodState, Scheduler};
    /// use schedkit::testing::{NodeBuilder, PodBuilder};
    ///
    /// let fits = FilterFn::new("CpuFits", |_, pod, node| {
    ///     let free = node.allocatable().milli_cpu - node.requested().milli_cpu;
    ///     if pod.requests.milli_cpu <= free { Status::SUCCESS } else { Status::unschedulable("Insufficient cpu") }
    /// });
    /// let clock = VirtualClock::new();
    /// let profile = Profile::builder("default-scheduler").plugin(fits).build().unwrap();
    /// let mut s = Scheduler::builder().profile(profile).clock(Arc::new(clock.clone())).build();
    /// let events = s.events(); // Send + Sync: feed it from an informer thread
    /// events.add_node(NodeBuilder::new("n1").cpu("4").build()).unwrap();
    /// for i in 0..3 {
    ///     events.add_pod(PodBuilder::new(&format!("p{i}")).cpu("2").build()).unwrap();
    /// }
    /// let run = s.run_until_idle();
    /// assert_eq!((run.bound, run.failed), (2, 1));
    /// // The third waits in the unschedulable pool. A closure plugin declares no
    /// // events, so (as upstream) any event may help: a new node moves it to backoff,
    /// // and a simulation jumps the clock past the backoff.
    /// assert_eq!(s.pod_state("default/p2"), Some(PodState::Unschedulable));
    /// events.add_node(NodeBuilder::new("n2").cpu("4").build()).unwrap();
    /// assert_eq!(s.pod_state("default/p2"), Some(PodState::Backoff));
    /// let run = s.run_until_settled(&clock, Duration::from_secs(600));
    /// assert_eq!(run.bound, 1);
    /// assert_eq!(clock.now(), Duration::from_secs(1), "one backoff later");
    /// ```
    pub fn run_until_idle(&mut self) -> RunSummary {
        let mut summary = RunSummary::default();
        loop {
            let resumed = self.resume_waiting();
            for a in &resumed {
                summary.record(a);
            }
            let attempt = self.schedule_next();
            if let Some(a) = &attempt {
                summary.attempts += 1;
                summary.record(a);
            }
            if resumed.is_empty() && attempt.is_none() {
                break;
            }
        }
        summary.waiting = self.parked.len();
        summary
    }

    /// When, on the scheduler's clock, something next becomes ready by time alone:
    /// a backoff ending, a pod overstaying in the unschedulable pool, or a Permit
    /// timeout.
    pub fn next_wakeup(&self) -> Option<Duration> {
        let q = self.queue.lock().next_wakeup();
        let p = self.parked.iter().filter_map(BindingCycle::permit_deadline).min();
        match (q, p) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// For simulations on a virtual clock: runs until idle, then jumps `clock` to the
    /// next wake-up and repeats, until nothing is pending before `horizon` (clock
    /// time). `clock` must be the scheduler's clock.
    pub fn run_until_settled(&mut self, clock: &VirtualClock, horizon: Duration) -> RunSummary {
        let mut total = RunSummary::default();
        loop {
            let s = self.run_until_idle();
            total.attempts += s.attempts;
            total.bound += s.bound;
            total.failed += s.failed;
            total.bind_failed += s.bind_failed;
            match self.next_wakeup() {
                Some(t) if t <= horizon => clock.set(t),
                _ => break,
            }
        }
        total.waiting = self.parked.len();
        total
    }
}

/// What [`Scheduler::schedule_next_deferred`] gives: an attempt that is over, or a
/// binding cycle to run.
#[derive(Debug)]
pub enum Next {
    /// An attempt that is over (failed, parked at Permit, dropped, or a pod group's).
    Attempt(Attempt),
    /// A binding cycle ready to run (PreBind, Bind, PostBind); boxed, being large.
    Bind(Box<PendingBinding>),
}
