//! The scheduling queue (upstream `pkg/scheduler/backend/queue/scheduling_queue.go`):
//! an active queue ordered by the profile's QueueSort plugin, a backoff queue with
//! per-pod exponential backoff, an unschedulable pool whose pods come back on
//! relevant cluster events (queueing hints) or after a maximum stay, and PreEnqueue
//! gating.
//!
//! Every pod the queue holds is in exactly one [`QueueLocation`]. A pod handed out
//! by [`SchedulingQueue::pop`] is *in flight* until the scheduler reports back with
//! [`SchedulingQueue::requeue_failed`] or [`SchedulingQueue::done`]; events that
//! arrive meanwhile are remembered and considered when it fails, as upstream's
//! in-flight event list, so an event that raced a failing cycle isn't lost.
//!
//! Differences from upstream, on purpose:
//! - Backoff and the unschedulable max stay are checked whenever the queue is
//!   popped, flushed or asked for its next wake-up, instead of by 1 s / 30 s
//!   background loops, so on a virtual clock a pod leaves backoff at exactly its
//!   expiry.
//! - The backoff queue is never popped early when the active queue is empty
//!   (upstream's `SchedulerPopFromBackoffQ`): a backoff is always served in full.
//! - `Pending` rejections are treated like `Unschedulable` ones (no separate
//!   "queue immediately" strategy).
//! - [`SchedulingQueue::activate`] (plugins' "pods to activate") moves pods out of
//!   the unschedulable pool but never cuts a backoff short, so a single-threaded
//!   loop can't keep re-activating pods without the clock moving.
//! - Pods with equal sort keys and timestamps pop first-in first-out.
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//! use schedkit::framework::{Profile, VirtualClock};
//! use schedkit::plugins::priority_sort::PrioritySort;
//! use schedkit::queue::{QueueConfig, QueueLocation, SchedulingQueue};
//! use schedkit::snapshot::PodInfo;
//! use schedkit::testing::PodBuilder;
//!
//! let profile = Arc::new(Profile::builder("default-scheduler").plugin(PrioritySort).build().unwrap());
//! let clock = VirtualClock::new();
//! let mut q = SchedulingQueue::new(&[profile], Arc::new(clock.clone()), QueueConfig::default()).unwrap();
//! q.add(Arc::new(PodInfo::new(PodBuilder::new("low").build()).unwrap())).unwrap();
//! q.add(Arc::new(PodInfo::new(PodBuilder::new("high").priority(10).build()).unwrap())).unwrap();
//! let first = q.pop().unwrap();
//! assert_eq!(first.pod.pod.name(), "high");
//! // It fails, rejected by a plugin: it waits in the unschedulable pool.
//! assert_eq!(q.requeue_failed(&first.pod.uid, &["NodeResourcesFit"]).unwrap(), QueueLocation::Unschedulable);
//! // Five minutes later it comes back (after its 1 s backoff, long expired).
//! clock.advance(Duration::from_secs(301));
//! q.flush();
//! assert_eq!(q.location(&first.pod.uid), Some(QueueLocation::Active));
//! ```

mod active;
mod backoff;
mod config;
pub mod events;
mod gating;
mod heap;
mod hints;
mod unschedulable;

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use ahash::AHashMap;
use smallvec::SmallVec;

pub use self::config::{
    DEFAULT_INITIAL_BACKOFF, DEFAULT_MAX_BACKOFF, DEFAULT_MAX_UNSCHEDULABLE_STAY, QueueConfig, QueueError,
};
use self::gating::ProfileHooks;
use self::heap::IndexedHeap;
use crate::framework::{
    Clock, ClusterEvent, DEFAULT_SCHEDULER_NAME, EventObject, EventResource, Profile, QueueSortPlugin, QueuedPodInfo,
    QueueingHint, Status,
};
use crate::snapshot::PodInfo;

/// Where a queued pod is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QueueLocation {
    /// Ready to be popped.
    Active,
    /// Waiting out its backoff.
    Backoff,
    /// Rejected; waiting for a relevant event or the max stay.
    Unschedulable,
    /// Held by a PreEnqueue plugin (upstream keeps these in the unschedulable pool).
    Gated,
    /// Popped and being scheduled (or held at Permit, or binding).
    InFlight,
}

/// A pod a PreEnqueue plugin holds back, with the plugin and its reason.
#[derive(Debug, Clone)]
pub struct GatedPod {
    /// The pod.
    pub pod: Arc<PodInfo>,
    /// The gating plugin.
    pub plugin: &'static str,
    /// Its status (reasons say why).
    pub status: Status,
}

/// How many pods are where.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueCounts {
    /// Active queue.
    pub active: usize,
    /// Backoff queue.
    pub backoff: usize,
    /// Unschedulable pool (not counting gated pods).
    pub unschedulable: usize,
    /// Gated by PreEnqueue.
    pub gated: usize,
    /// Popped and not yet reported back.
    pub in_flight: usize,
}

struct Entry {
    info: QueuedPodInfo,
    profile: u32,
    loc: QueueLocation,
    /// Plugins that rejected the pod last time (upstream `UnschedulablePlugins`).
    rejectors: SmallVec<[&'static str; 2]>,
    /// The gating status, while gated.
    gate: Option<Status>,
    pool_pos: usize,
    /// Bumped on every move into backoff or the pool, for the lazily cleaned heaps.
    seq: u64,
    /// Event-log position when popped.
    in_flight_from: usize,
    /// Deleted while in flight: dropped when it reports back.
    deleted: bool,
    /// Events it might have needed were dropped from the log while it was in flight.
    saw_overflow: bool,
}

/// Stale entries a lazily cleaned heap (backoff, the pool's stay order) may hold
/// beyond twice its live ones before it is compacted.
const STALE_SLACK: usize = 1024;

fn entry(slots: &[Option<Entry>], s: u32) -> &Entry {
    slots[s as usize].as_ref().expect("queued slots are live")
}

/// The scheduling queue. Not synchronized itself: the scheduler keeps it behind a
/// mutex shared with its event handle.
pub struct SchedulingQueue {
    clock: Arc<dyn Clock>,
    config: QueueConfig,
    profiles: Vec<ProfileHooks>,
    sort: Option<Arc<dyn QueueSortPlugin>>,
    slots: Vec<Option<Entry>>,
    free: Vec<u32>,
    by_uid: AHashMap<Arc<str>, u32>,
    active: IndexedHeap,
    /// Heap position of each slot (meaningful while the slot is active).
    positions: Vec<u32>,
    /// Whether the QueueSort plugin gave a sort key for every pod so far.
    keyed: bool,
    /// Insertion counter for FIFO tie-breaks among equal keys and timestamps.
    push_seq: u32,
    /// (expiry, seq, slot), min first; stale entries skipped.
    backoff: BinaryHeap<Reverse<(Duration, u64, u32)>>,
    backoff_len: usize,
    /// Unschedulable and gated slots.
    pool: Vec<u32>,
    /// (entered pool at, seq, slot), min first; stale entries skipped.
    pool_since: BinaryHeap<Reverse<(Duration, u64, u32)>>,
    gated_len: usize,
    in_flight: usize,
    /// Events received while pods were in flight; index `i` is absolute `events_base + i`.
    /// Events older than every pod in flight are dropped, so a long Permit wait
    /// doesn't make the log grow without bound.
    events: VecDeque<(ClusterEvent, EventObject)>,
    events_base: usize,
    /// `in_flight_from` of each pod in flight, in pop order (so the oldest is first).
    flight_starts: VecDeque<usize>,

    seq: u64,
    /// Reused buffers for signing pods.
    sign_scratch: crate::framework::SignFragments,
}

impl std::fmt::Debug for SchedulingQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SchedulingQueue")
            .field("counts", &self.counts())
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl SchedulingQueue {
    /// A queue for pods of `profiles`, ordered by the first profile's QueueSort plugin
    /// (upstream requires every profile to use the same one; without any, pods are
    /// ordered as PrioritySort would).
    pub fn new(profiles: &[Arc<Profile>], clock: Arc<dyn Clock>, config: QueueConfig) -> Result<Self, QueueError> {
        config.validate()?;
        let hooks = profiles.iter().map(ProfileHooks::of).collect();
        Ok(SchedulingQueue {
            clock,
            config,
            profiles: hooks,
            sort: profiles.first().and_then(|p| p.queue_sort().cloned()),
            slots: Vec::new(),
            free: Vec::new(),
            by_uid: AHashMap::new(),
            active: IndexedHeap::default(),
            positions: Vec::new(),
            keyed: true,
            push_seq: 0,
            backoff: BinaryHeap::new(),
            backoff_len: 0,
            pool: Vec::new(),
            pool_since: BinaryHeap::new(),
            gated_len: 0,
            in_flight: 0,
            events: VecDeque::new(),
            events_base: 0,
            flight_starts: VecDeque::new(),

            seq: 0,
            sign_scratch: crate::framework::SignFragments::new(),
        })
    }

    /// The timings.
    pub fn config(&self) -> &QueueConfig {
        &self.config
    }

    fn now(&self) -> Duration {
        self.clock.now()
    }

    fn e(&self, slot: u32) -> &Entry {
        entry(&self.slots, slot)
    }

    fn e_mut(&mut self, slot: u32) -> &mut Entry {
        self.slots[slot as usize].as_mut().expect("live slot")
    }

    fn slot_of(&self, uid: &str) -> Option<u32> {
        self.by_uid.get(uid).copied()
    }

    fn profile_index(&self, pod: &PodInfo) -> Result<u32, QueueError> {
        let want = &pod.pod.spec.scheduler_name;
        let want = if want.is_empty() { DEFAULT_SCHEDULER_NAME } else { want.as_str() };
        self.profiles
            .iter()
            .position(|p| p.name == want)
            .map(|i| i as u32)
            .ok_or_else(|| QueueError::NoProfile { pod: pod.pod.key(), scheduler_name: want.to_owned() })
    }

    /// Signs pods of the profiles at `on` (by position) as they enter the queue or
    /// are updated (opportunistic batching; the scheduler sets this from the
    /// `OpportunisticBatching` gate and each profile's setting).
    pub fn set_signing(&mut self, on: &[bool]) {
        for (h, &on) in self.profiles.iter_mut().zip(on) {
            h.signing = on;
        }
    }

    fn sign(&mut self, profile: u32, pod: &PodInfo) -> Option<crate::framework::PodSignature> {
        let h = &self.profiles[profile as usize];
        if !h.signing {
            return None;
        }
        crate::framework::sign_pod_with(h.signer.as_deref()?, pod, &mut self.sign_scratch)
    }

    /// Adds a new unscheduled pod: to the active queue, or gated if a PreEnqueue
    /// plugin says no. Returns where it went.
    pub fn add(&mut self, pod: Arc<PodInfo>) -> Result<QueueLocation, QueueError> {
        if pod.is_assigned() {
            return Err(QueueError::Assigned(pod.uid.to_string()));
        }
        let profile = self.profile_index(&pod)?;
        let now = self.now();
        // One hash of the uid: reserve the map entry first, fill the slot after.
        let next = self.free.last().copied().unwrap_or(self.slots.len() as u32);
        match self.by_uid.entry(pod.uid.clone()) {
            std::collections::hash_map::Entry::Occupied(_) => {
                return Err(QueueError::AlreadyQueued(pod.uid.to_string()));
            }
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(next);
            }
        }
        let signature = self.sign(profile, &pod);
        let e = Entry {
            info: QueuedPodInfo { pod, timestamp: now, attempts: 0, initial_attempt_timestamp: now, signature },
            profile,
            loc: QueueLocation::InFlight,
            rejectors: SmallVec::new(),
            gate: None,
            pool_pos: 0,
            seq: 0,
            in_flight_from: 0,
            deleted: false,
            saw_overflow: false,
        };
        let slot = if let Some(s) = self.free.pop() {
            self.slots[s as usize] = Some(e);
            s
        } else {
            self.slots.push(Some(e));
            self.positions.push(0);
            (self.slots.len() - 1) as u32
        };
        debug_assert_eq!(slot, next);
        Ok(self.enqueue_or_gate(slot))
    }

    /// Takes a slot out of wherever it is (leaving it detached, location unchanged).
    fn detach(&mut self, slot: u32) {
        let (loc, pool_pos) = {
            let e = self.e(slot);
            (e.loc, e.pool_pos)
        };
        match loc {
            QueueLocation::Active => self.remove_active(slot),
            QueueLocation::Backoff => self.remove_backoff(slot),
            QueueLocation::Unschedulable | QueueLocation::Gated => self.remove_pool(slot, loc, pool_pos),
            QueueLocation::InFlight => {}
        }
    }

    fn free_slot(&mut self, slot: u32) -> Option<Entry> {
        let e = self.slots[slot as usize].take()?;
        self.by_uid.remove(&e.info.pod.uid);
        self.free.push(slot);
        Some(e)
    }

    /// Updates a pod in place (upstream `Update`). An active or backing-off pod keeps
    /// its place (re-sorted); an unschedulable or gated pod is requeued if the change
    /// is an event its rejecting plugins' hints say may help; a pod in flight gets the
    /// new object when it reports back. An unknown pod is added.
    pub fn update(&mut self, pod: Arc<PodInfo>) -> Result<QueueLocation, QueueError> {
        let Some(slot) = self.slot_of(&pod.uid) else {
            return self.add(pod);
        };
        if pod.is_assigned() {
            return Err(QueueError::Assigned(pod.uid.to_string()));
        }
        let signature = self.sign(self.e(slot).profile, &pod);
        self.e_mut(slot).info.signature = signature;
        let old = std::mem::replace(&mut self.e_mut(slot).info.pod, pod.clone());
        let loc = self.e(slot).loc;
        let event = ClusterEvent { resource: EventResource::UnscheduledPod, action: events::pod_update(&old, &pod) };
        let obj = EventObject::Pod { old: Some(old), new: Some(pod) };
        match loc {
            QueueLocation::Active => {
                self.rekey_active(slot);
                Ok(loc)
            }
            QueueLocation::Backoff => Ok(loc),
            QueueLocation::InFlight => {
                self.record_event(event, &obj);
                Ok(loc)
            }
            QueueLocation::Unschedulable | QueueLocation::Gated => {
                if self.worth_requeuing(slot, &event, &obj) == QueueingHint::Queue {
                    self.detach(slot);
                    Ok(self.requeue(slot))
                } else {
                    Ok(loc)
                }
            }
        }
    }

    /// Removes a pod from the queue (a pod in flight is dropped when it reports back).
    /// Returns whether the queue held it.
    pub fn delete(&mut self, uid: &str) -> bool {
        let Some(slot) = self.slot_of(uid) else { return false };
        if self.e(slot).loc == QueueLocation::InFlight {
            self.e_mut(slot).deleted = true;
            return true;
        }
        self.detach(slot);
        self.free_slot(slot);
        true
    }

    /// Whether the pod is in flight and was deleted meanwhile (it is dropped when it
    /// reports back; the scheduler won't assume it).
    pub fn deleted_in_flight(&self, uid: &str) -> bool {
        self.slot_of(uid).is_some_and(|s| self.e(s).loc == QueueLocation::InFlight && self.e(s).deleted)
    }

    /// Pops the pod to schedule next (after moving pods whose backoff or max stay
    /// ended), or `None` when nothing is ready. The pod is in flight until
    /// [`SchedulingQueue::requeue_failed`] or [`SchedulingQueue::done`].
    pub fn pop(&mut self) -> Option<QueuedPodInfo> {
        self.flush();
        let slot = self.pop_active()?;
        Some(self.start_flight(slot))
    }

    /// Takes one pod out of the active queue, backoff or the unschedulable pool (not
    /// a gated pod) and puts it in flight, as [`SchedulingQueue::pop`] does: the
    /// pod-group cycle pulls a popped member's siblings this way (upstream
    /// `PopSpecificPod`). `None` when the queue holds no such pod there.
    pub fn pop_specific(&mut self, uid: &str) -> Option<QueuedPodInfo> {
        let slot = self.slot_of(uid)?;
        match self.e(slot).loc {
            QueueLocation::Active | QueueLocation::Backoff | QueueLocation::Unschedulable => {}
            QueueLocation::Gated | QueueLocation::InFlight => return None,
        }
        self.detach(slot);
        Some(self.start_flight(slot))
    }

    fn start_flight(&mut self, slot: u32) -> QueuedPodInfo {
        let from = self.events_base + self.events.len();
        self.in_flight += 1;
        self.flight_starts.push_back(from);
        let e = self.e_mut(slot);
        e.loc = QueueLocation::InFlight;
        e.in_flight_from = from;
        e.saw_overflow = false;
        e.info.attempts = e.info.attempts.saturating_add(1);
        e.info.clone()
    }

    /// The pod at the head of the active queue, without popping it.
    pub fn peek(&self) -> Option<&QueuedPodInfo> {
        self.active.peek().map(|s| &self.e(s).info)
    }

    /// A pod in flight was bound (or is otherwise finished with): forget it.
    pub fn done(&mut self, uid: &str) -> Result<(), QueueError> {
        let slot = self.in_flight_slot(uid)?;
        self.end_flight(slot);
        self.free_slot(slot);
        Ok(())
    }

    fn in_flight_slot(&self, uid: &str) -> Result<u32, QueueError> {
        let slot = self.slot_of(uid).ok_or_else(|| QueueError::NotFound(uid.to_owned()))?;
        if self.e(slot).loc != QueueLocation::InFlight {
            return Err(QueueError::NotInFlight(uid.to_owned()));
        }
        Ok(slot)
    }

    /// A pod in flight failed, rejected by `rejectors` (empty for an error): back to
    /// the unschedulable pool, or to backoff/active if an event that arrived while it
    /// was in flight may help it (upstream `AddUnschedulableIfNotPresent`). A pod
    /// deleted meanwhile is dropped and reported as [`QueueError::NotFound`].
    pub fn requeue_failed(&mut self, uid: &str, rejectors: &[&'static str]) -> Result<QueueLocation, QueueError> {
        let slot = self.in_flight_slot(uid)?;
        if self.e(slot).deleted {
            self.end_flight(slot);
            self.free_slot(slot);
            return Err(QueueError::NotFound(uid.to_owned()));
        }
        let now = self.now();
        let e = self.e_mut(slot);
        e.info.timestamp = now;
        e.rejectors = rejectors.iter().copied().collect();
        e.rejectors.sort_unstable();
        e.rejectors.dedup();
        // Upstream `determineSchedulingHintForInFlightPod`: no rejector means an
        // error, retried after backoff; else any event since the pop may help.
        let start = self.e(slot).in_flight_from.saturating_sub(self.events_base);
        let hint = if self.e(slot).rejectors.is_empty()
            || self.e(slot).saw_overflow
            || self
                .events
                .range(start.min(self.events.len())..)
                .any(|(ev, obj)| self.worth_requeuing(slot, ev, obj) == QueueingHint::Queue)
        {
            QueueingHint::Queue
        } else {
            QueueingHint::Skip
        };
        self.end_flight(slot);
        Ok(match hint {
            QueueingHint::Queue => self.requeue(slot),
            QueueingHint::Skip => {
                self.push_pool(slot, QueueLocation::Unschedulable);
                QueueLocation::Unschedulable
            }
        })
    }

    /// Requeues a detached slot a hint said Queue for (upstream
    /// `requeuePodViaQueueingHint`): a gated pod re-runs PreEnqueue; else backoff if
    /// it's still backing off, else active.
    fn requeue(&mut self, slot: u32) -> QueueLocation {
        if self.e(slot).gate.is_some() {
            return self.enqueue_or_gate(slot);
        }
        if self.backoff_expiry(slot) > self.now() {
            self.push_backoff(slot);
            QueueLocation::Backoff
        } else {
            self.push_active(slot);
            QueueLocation::Active
        }
    }

    /// Moves pods whose backoff ended to the active queue, and pods that stayed in
    /// the unschedulable pool longer than the max stay to backoff/active (upstream
    /// `flushBackoffQCompleted` and `flushUnschedulablePodsLeftover`).
    pub fn flush(&mut self) {
        let now = self.now();
        self.flush_backoff(now);
        self.flush_leftovers(now);
    }

    /// Where `slot` is, if it has not moved since the move numbered `seq` (a heap
    /// entry pushed then is live only while this answers its location).
    fn loc_since(&self, slot: u32, seq: u64) -> Option<QueueLocation> {
        self.slots.get(slot as usize).and_then(Option::as_ref).filter(|e| e.seq == seq).map(|e| e.loc)
    }

    fn live(&self, slot: u32, seq: u64, loc: QueueLocation) -> bool {
        self.loc_since(slot, seq) == Some(loc)
    }

    /// When, on the queue's clock, something next becomes ready by time alone: a
    /// backoff ending or a pod overstaying in the unschedulable pool. `None` when
    /// nothing is waiting on time.
    pub fn next_wakeup(&mut self) -> Option<Duration> {
        let b = self.backoff_wakeup();
        let u = self.pool_wakeup();
        match (b, u) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Where a pod is, if the queue holds it.
    pub fn location(&self, uid: &str) -> Option<QueueLocation> {
        self.slot_of(uid).map(|s| self.e(s).loc)
    }

    /// The queued pod, if the queue holds it.
    pub fn get(&self, uid: &str) -> Option<&QueuedPodInfo> {
        self.slot_of(uid).map(|s| &self.e(s).info)
    }

    /// Plugins that rejected a pod in its last attempt (or its gating plugin).
    pub fn unschedulable_plugins(&self, uid: &str) -> Vec<&'static str> {
        self.slot_of(uid).map(|s| self.e(s).rejectors.to_vec()).unwrap_or_default()
    }

    /// How many pods are where.
    pub fn counts(&self) -> QueueCounts {
        QueueCounts {
            active: self.active.len(),
            backoff: self.backoff_len,
            unschedulable: self.pool.len() - self.gated_len,
            gated: self.gated_len,
            in_flight: self.in_flight,
        }
    }

    /// Pods held, in any location.
    pub fn len(&self) -> usize {
        self.by_uid.len()
    }

    /// Whether the queue holds no pod.
    pub fn is_empty(&self) -> bool {
        self.by_uid.is_empty()
    }
}
