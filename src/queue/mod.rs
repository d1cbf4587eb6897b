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

pub mod events;
mod heap;

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use ahash::AHashMap;
use smallvec::SmallVec;

use self::heap::{IndexedHeap, Item, Order};
use crate::framework::runtime::guard;
use crate::framework::{
    Clock, ClusterEvent, ClusterEventWithHint, DEFAULT_SCHEDULER_NAME, EventObject, EventResource, Named,
    PreEnqueuePlugin, Profile, QueueSortPlugin, QueuedPodInfo, QueueingHint, Status,
};
use crate::snapshot::PodInfo;

/// In-flight event-log length at which it is trimmed. Events older than every pod
/// in flight are dropped; if more than half the limit remain, the pods in flight
/// are marked to be requeued (after backoff) whatever they fail on, and the log is
/// cleared: conservative (never a missed event), and bounded while a gang waits at
/// Permit for minutes of busy cluster events.
const EVENT_LOG_LIMIT: usize = 4096;

/// Upstream `DefaultPodInitialBackoffDuration`.
pub const DEFAULT_INITIAL_BACKOFF: Duration = Duration::from_secs(1);
/// Upstream `DefaultPodMaxBackoffDuration`.
pub const DEFAULT_MAX_BACKOFF: Duration = Duration::from_secs(10);
/// Upstream `DefaultPodMaxInUnschedulablePodsDuration`.
pub const DEFAULT_MAX_UNSCHEDULABLE_STAY: Duration = Duration::from_secs(5 * 60);

/// Queue timings (upstream `podInitialBackoffSeconds`, `podMaxBackoffSeconds` and
/// `podMaxInUnschedulablePodsDuration`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueConfig {
    /// Backoff after the first failed attempt; doubled per further attempt.
    pub initial_backoff: Duration,
    /// Backoff cap.
    pub max_backoff: Duration,
    /// Longest a pod stays in the unschedulable pool without a relevant event.
    pub max_unschedulable_stay: Duration,
}

impl Default for QueueConfig {
    fn default() -> Self {
        QueueConfig {
            initial_backoff: DEFAULT_INITIAL_BACKOFF,
            max_backoff: DEFAULT_MAX_BACKOFF,
            max_unschedulable_stay: DEFAULT_MAX_UNSCHEDULABLE_STAY,
        }
    }
}

impl QueueConfig {
    /// Checks that the initial backoff is positive and not above the maximum, and the
    /// max stay is positive (upstream's config validation).
    pub fn validate(&self) -> Result<(), QueueError> {
        if self.initial_backoff.is_zero() {
            return Err(QueueError::InvalidConfig("initial backoff must be positive".into()));
        }
        if self.max_backoff < self.initial_backoff {
            return Err(QueueError::InvalidConfig(format!(
                "max backoff {:?} is below the initial backoff {:?}",
                self.max_backoff, self.initial_backoff
            )));
        }
        if self.max_unschedulable_stay.is_zero() {
            return Err(QueueError::InvalidConfig("max unschedulable stay must be positive".into()));
        }
        Ok(())
    }

    /// Backoff after `attempts` attempts, as upstream `calculateBackoffDuration`: none
    /// before any attempt, then the initial backoff doubled per further attempt, capped.
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedkit::queue::QueueConfig;
    /// let c = QueueConfig::default();
    /// let secs: Vec<u64> = (0..7).map(|a| c.backoff(a).as_secs()).collect();
    /// assert_eq!(secs, [0, 1, 2, 4, 8, 10, 10]);
    /// ```
    pub fn backoff(&self, attempts: u32) -> Duration {
        if attempts == 0 {
            return Duration::ZERO;
        }
        let mut d = self.initial_backoff;
        for _ in 1..attempts {
            if d > self.max_backoff.saturating_sub(d) {
                return self.max_backoff;
            }
            d += d;
        }
        d.min(self.max_backoff)
    }
}

/// Why the queue refused an operation. The queue is unchanged when one is returned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum QueueError {
    /// A pod with this uid is already queued (use update).
    #[error("pod {0} is already in the scheduling queue")]
    AlreadyQueued(String),
    /// No queued pod with this uid.
    #[error("pod {0} is not in the scheduling queue")]
    NotFound(String),
    /// The pod was not handed out by `pop`.
    #[error("pod {0} is not being scheduled")]
    NotInFlight(String),
    /// No profile serves the pod's `schedulerName`.
    #[error("pod {pod}: no profile for scheduler name {scheduler_name:?}")]
    NoProfile {
        /// namespace/name.
        pod: String,
        /// The name asked for.
        scheduler_name: String,
    },
    /// The pod is already assigned to a node; it belongs in the cache, not the queue.
    #[error("pod {0} is assigned to a node and can't be queued")]
    Assigned(String),
    /// Bad timings.
    #[error("invalid queue config: {0}")]
    InvalidConfig(String),
}

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

struct ProfileHooks {
    name: String,
    pre_enqueue: Vec<Named<dyn PreEnqueuePlugin>>,
    hints: Vec<(&'static str, ClusterEventWithHint)>,
    /// Plugins that can reject a pod but don't implement EnqueueExtensions: as
    /// upstream, they count as interested in every event.
    no_events: Vec<&'static str>,
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

fn entry(slots: &[Option<Entry>], s: u32) -> &Entry {
    slots[s as usize].as_ref().expect("queued slots are live")
}

struct Ord<'a> {
    slots: &'a [Option<Entry>],
    sort: Option<&'a dyn QueueSortPlugin>,
    keyed: bool,
}

impl Order for Ord<'_> {
    #[inline]
    fn less(&self, a: &Item, b: &Item) -> bool {
        if self.keyed {
            // `seq` wraps after 2^32 pushes; only the FIFO tie-break could glitch then.
            return (a.key, a.ts, a.seq) < (b.key, b.ts, b.seq);
        }
        let (ia, ib) = (&entry(self.slots, a.slot).info, &entry(self.slots, b.slot).info);
        match self.sort {
            Some(sort) => guard("QueueSort", "QueueSort", || sort.less(ia, ib)).unwrap_or(false),
            None => (a.key, a.ts, a.seq) < (b.key, b.ts, b.seq),
        }
    }
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

    seq: u64,
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
        let hooks = profiles
            .iter()
            .map(|p| ProfileHooks {
                name: p.name().to_owned(),
                pre_enqueue: p.pre_enqueue().to_vec(),
                hints: p
                    .enqueue_extensions()
                    .iter()
                    .flat_map(|e| {
                        guard(e.name, "EventsToRegister", || e.plugin.events_to_register())
                            .unwrap_or_default()
                            .into_iter()
                            .map(move |h| (e.name, h))
                    })
                    .collect(),
                no_events: {
                    let with: Vec<&'static str> = p.enqueue_extensions().iter().map(|e| e.name).collect();
                    let mut v: Vec<&'static str> = [
                        p.pre_enqueue_plugins(),
                        p.pre_filter_plugins(),
                        p.filter_plugins(),
                        p.reserve_plugins(),
                        p.permit_plugins(),
                        p.pre_bind_plugins(),
                        p.bind_plugins(),
                    ]
                    .concat()
                    .into_iter()
                    .filter(|n| !with.contains(n))
                    .collect();
                    v.sort_unstable();
                    v.dedup();
                    v
                },
            })
            .collect();
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

            seq: 0,
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

    /// Adds a new unscheduled pod: to the active queue, or gated if a PreEnqueue
    /// plugin says no. Returns where it went.
    pub fn add(&mut self, pod: Arc<PodInfo>) -> Result<QueueLocation, QueueError> {
        if !pod.pod.spec.node_name.is_empty() {
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
        let e = Entry {
            info: QueuedPodInfo { pod, timestamp: now, attempts: 0, initial_attempt_timestamp: now },
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

    /// Runs PreEnqueue; moves the (detached) slot to active or gated.
    fn enqueue_or_gate(&mut self, slot: u32) -> QueueLocation {
        let e = self.e(slot);
        let hooks = &self.profiles[e.profile as usize];
        let mut gate = None;
        for p in &hooks.pre_enqueue {
            let pod = &e.info.pod;
            let s = guard(p.name, "PreEnqueue", || p.plugin.pre_enqueue(pod)).unwrap_or_else(|s| s);
            if !s.is_success() {
                gate = Some(s.with_plugin(p.name));
                break;
            }
        }
        match gate {
            None => {
                self.e_mut(slot).gate = None;
                self.push_active(slot);
                QueueLocation::Active
            }
            Some(s) => {
                let plugin = s.plugin().unwrap_or("PreEnqueue");
                let e = self.e_mut(slot);
                e.rejectors = smallvec::smallvec![plugin];
                e.gate = Some(s);
                self.push_pool(slot, QueueLocation::Gated);
                QueueLocation::Gated
            }
        }
    }

    /// The heap item for a slot: its QueueSort key (PrioritySort's `-priority` when
    /// there is no QueueSort plugin) and timestamp.
    fn item(&mut self, slot: u32) -> Item {
        let e = entry(&self.slots, slot);
        let key = match &self.sort {
            None => Some(-i64::from(e.info.pod.priority())),
            Some(s) => guard("QueueSort", "QueueSort", || s.sort_key(&e.info.pod)).ok().flatten(),
        };
        let ts = u64::try_from(e.info.timestamp.as_nanos()).unwrap_or(u64::MAX);
        if key.is_none() {
            self.keyed = false;
        }
        self.push_seq = self.push_seq.wrapping_add(1);
        Item { key: key.unwrap_or(0), ts, slot, seq: self.push_seq }
    }

    fn push_active(&mut self, slot: u32) {
        self.e_mut(slot).loc = QueueLocation::Active;
        let item = self.item(slot);
        let ord = Ord { slots: &self.slots, sort: self.sort.as_deref(), keyed: self.keyed };
        self.active.push(item, &ord, &mut self.positions);
    }

    fn push_backoff(&mut self, slot: u32) {
        self.seq += 1;
        let seq = self.seq;
        let expiry = self.backoff_expiry(slot);
        let e = self.e_mut(slot);
        e.loc = QueueLocation::Backoff;
        e.seq = seq;
        self.backoff.push(Reverse((expiry, seq, slot)));
        self.backoff_len += 1;
    }

    fn push_pool(&mut self, slot: u32, loc: QueueLocation) {
        self.seq += 1;
        let seq = self.seq;
        let since = self.e(slot).info.timestamp;
        let pos = self.pool.len();
        let e = self.e_mut(slot);
        e.loc = loc;
        e.seq = seq;
        e.pool_pos = pos;
        self.pool.push(slot);
        self.pool_since.push(Reverse((since, seq, slot)));
        if loc == QueueLocation::Gated {
            self.gated_len += 1;
        }
    }

    /// Takes a slot out of wherever it is (leaving it detached, location unchanged).
    fn detach(&mut self, slot: u32) {
        let (loc, pool_pos) = {
            let e = self.e(slot);
            (e.loc, e.pool_pos)
        };
        match loc {
            QueueLocation::Active => {
                let at = self.positions[slot as usize] as usize;
                let ord = Ord { slots: &self.slots, sort: self.sort.as_deref(), keyed: self.keyed };
                self.active.remove_at(at, &ord, &mut self.positions);
            }
            QueueLocation::Backoff => {
                // The heap entry goes stale: its seq no longer matches.
                self.backoff_len -= 1;
                self.e_mut(slot).seq = 0;
            }
            QueueLocation::Unschedulable | QueueLocation::Gated => {
                if loc == QueueLocation::Gated {
                    self.gated_len -= 1;
                }
                let pos = pool_pos;
                self.pool.swap_remove(pos);
                if let Some(&moved) = self.pool.get(pos) {
                    self.e_mut(moved).pool_pos = pos;
                }
                self.e_mut(slot).seq = 0;
            }
            QueueLocation::InFlight => {}
        }
    }

    fn free_slot(&mut self, slot: u32) -> Option<Entry> {
        let e = self.slots[slot as usize].take()?;
        self.by_uid.remove(&e.info.pod.uid);
        self.free.push(slot);
        Some(e)
    }

    fn backoff_expiry(&self, slot: u32) -> Duration {
        let i = &self.e(slot).info;
        i.timestamp + self.config.backoff(i.attempts)
    }

    /// Updates a pod in place (upstream `Update`). An active or backing-off pod keeps
    /// its place (re-sorted); an unschedulable or gated pod is requeued if the change
    /// is an event its rejecting plugins' hints say may help; a pod in flight gets the
    /// new object when it reports back. An unknown pod is added.
    pub fn update(&mut self, pod: Arc<PodInfo>) -> Result<QueueLocation, QueueError> {
        let Some(slot) = self.slot_of(&pod.uid) else {
            return self.add(pod);
        };
        if !pod.pod.spec.node_name.is_empty() {
            return Err(QueueError::Assigned(pod.uid.to_string()));
        }
        let old = std::mem::replace(&mut self.e_mut(slot).info.pod, pod.clone());
        let loc = self.e(slot).loc;
        let event = ClusterEvent { resource: EventResource::UnscheduledPod, action: events::pod_update(&old, &pod) };
        let obj = EventObject::Pod { old: Some(old), new: Some(pod) };
        match loc {
            QueueLocation::Active => {
                let at = self.positions[slot as usize] as usize;
                let item = self.item(slot);
                let ord = Ord { slots: &self.slots, sort: self.sort.as_deref(), keyed: self.keyed };
                self.active.rekey(at, item.key, item.ts, &ord, &mut self.positions);
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

    /// Pops the pod to schedule next (after moving pods whose backoff or max stay
    /// ended), or `None` when nothing is ready. The pod is in flight until
    /// [`SchedulingQueue::requeue_failed`] or [`SchedulingQueue::done`].
    pub fn pop(&mut self) -> Option<QueuedPodInfo> {
        self.flush();
        let ord = Ord { slots: &self.slots, sort: self.sort.as_deref(), keyed: self.keyed };
        let slot = self.active.pop(&ord, &mut self.positions)?;
        let from = self.events_base + self.events.len();
        self.in_flight += 1;
        let e = self.e_mut(slot);
        e.loc = QueueLocation::InFlight;
        e.in_flight_from = from;
        e.saw_overflow = false;
        e.info.attempts = e.info.attempts.saturating_add(1);
        Some(e.info.clone())
    }

    /// The pod at the head of the active queue, without popping it.
    pub fn peek(&self) -> Option<&QueuedPodInfo> {
        self.active.peek().map(|s| &self.e(s).info)
    }

    fn end_flight(&mut self, _slot: u32) {
        self.in_flight -= 1;
        if self.in_flight == 0 {
            self.events_base += self.events.len();
            self.events.clear();
        }
    }

    /// Keeps the in-flight event log under [`EVENT_LOG_LIMIT`] (see there). Scans
    /// the slots, at most once per `EVENT_LOG_LIMIT / 2` events.
    fn trim_events(&mut self) {
        let oldest = self
            .slots
            .iter()
            .flatten()
            .filter(|e| e.loc == QueueLocation::InFlight)
            .map(|e| e.in_flight_from)
            .min()
            .unwrap_or(self.events_base + self.events.len());
        let drop = oldest.saturating_sub(self.events_base).min(self.events.len());
        self.events.drain(..drop);
        self.events_base += drop;
        if self.events.len() > EVENT_LOG_LIMIT / 2 {
            for e in self.slots.iter_mut().flatten() {
                if e.loc == QueueLocation::InFlight {
                    e.saw_overflow = true;
                }
            }
            self.events_base += self.events.len();
            self.events.clear();
        }
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

    /// Upstream `isPodWorthRequeuing`: a pod no plugin rejected is always worth it, as
    /// is any pod on a wildcard event, or one rejected by a plugin of the profile that
    /// doesn't implement EnqueueExtensions (upstream registers every event for those);
    /// otherwise only if a plugin that rejected it registered for the event and its
    /// hint (if any) says Queue. A panicking hint counts as Queue, as an erroring one
    /// does upstream.
    fn worth_requeuing(&self, slot: u32, event: &ClusterEvent, obj: &EventObject) -> QueueingHint {
        let e = self.e(slot);
        if e.rejectors.is_empty() || events::is_wildcard(event) {
            return QueueingHint::Queue;
        }
        let hooks = &self.profiles[e.profile as usize];
        if e.rejectors.iter().any(|r| hooks.no_events.contains(r)) {
            return QueueingHint::Queue;
        }
        for (plugin, reg) in &hooks.hints {
            if !event.matches(&reg.event) || !e.rejectors.contains(plugin) {
                continue;
            }
            let hint = match &reg.hint {
                None => QueueingHint::Queue,
                Some(f) => guard(plugin, "QueueingHint", || f(&e.info.pod, obj)).unwrap_or(QueueingHint::Queue),
            };
            if hint == QueueingHint::Queue {
                return QueueingHint::Queue;
            }
        }
        QueueingHint::Skip
    }

    fn record_event(&mut self, event: ClusterEvent, obj: &EventObject) {
        if self.in_flight > 0 {
            self.events.push_back((event, obj.clone()));
            if self.events.len() > EVENT_LOG_LIMIT {
                self.trim_events();
            }
        }
    }

    /// A cluster event happened: unschedulable and gated pods it may help move to
    /// backoff or active (upstream `MoveAllToActiveOrBackoffQueue`), and pods in
    /// flight will consider it if they fail. Returns how many pods moved.
    pub fn on_event(&mut self, event: ClusterEvent, obj: &EventObject) -> usize {
        self.move_on_event(event, obj, None)
    }

    /// [`SchedulingQueue::on_event`], leaving one pod where it is (the pod whose
    /// failure caused the event).
    pub fn on_event_except(&mut self, event: ClusterEvent, obj: &EventObject, except: &str) -> usize {
        let skip = self.slot_of(except);
        self.move_on_event(event, obj, skip)
    }

    fn move_on_event(&mut self, event: ClusterEvent, obj: &EventObject, skip: Option<u32>) -> usize {
        self.record_event(event, obj);
        let candidates: Vec<u32> = self.pool.iter().copied().filter(|&s| Some(s) != skip).collect();
        let mut moved = 0;
        for slot in candidates {
            if self.worth_requeuing(slot, &event, obj) == QueueingHint::Queue {
                let before = self.e(slot).loc;
                self.detach(slot);
                if self.requeue(slot) != before {
                    moved += 1;
                }
            }
        }
        moved
    }

    /// Moves pods (by uid) out of the unschedulable pool, as upstream `Activate`
    /// (used by plugins through `Handle::activate_pods`): to the active queue, or to
    /// the backoff queue if their backoff hasn't ended; gated pods re-run PreEnqueue.
    /// Unlike upstream, activation never cuts a backoff short, so a single-threaded
    /// loop can't churn forever without the clock moving. Unknown uids and pods
    /// elsewhere are ignored. Returns how many moved.
    pub fn activate<'a>(&mut self, uids: impl IntoIterator<Item = &'a str>) -> usize {
        let mut moved = 0;
        for uid in uids {
            let Some(slot) = self.slot_of(uid) else { continue };
            let loc = self.e(slot).loc;
            if matches!(loc, QueueLocation::Unschedulable | QueueLocation::Gated) {
                self.detach(slot);
                if self.requeue(slot) != loc {
                    moved += 1;
                }
            }
        }
        moved
    }

    /// Moves pods whose backoff ended to the active queue, and pods that stayed in
    /// the unschedulable pool longer than the max stay to backoff/active (upstream
    /// `flushBackoffQCompleted` and `flushUnschedulablePodsLeftover`).
    pub fn flush(&mut self) {
        let now = self.now();
        while let Some(&Reverse((expiry, seq, slot))) = self.backoff.peek() {
            if !self.live(slot, seq, QueueLocation::Backoff) {
                self.backoff.pop();
                continue;
            }
            if expiry > now {
                break;
            }
            self.backoff.pop();
            self.detach(slot);
            self.push_active(slot);
        }
        let stay = self.config.max_unschedulable_stay;
        while let Some(&Reverse((since, seq, slot))) = self.pool_since.peek() {
            let loc = self.slots[slot as usize].as_ref().map(|e| e.loc);
            let live =
                matches!(loc, Some(QueueLocation::Unschedulable | QueueLocation::Gated)) && self.e(slot).seq == seq;
            if !live {
                self.pool_since.pop();
                continue;
            }
            // Upstream moves pods that stayed strictly longer than the max stay.
            if now.saturating_sub(since) <= stay {
                break;
            }
            self.pool_since.pop();
            self.detach(slot);
            self.requeue(slot);
        }
    }

    fn live(&self, slot: u32, seq: u64, loc: QueueLocation) -> bool {
        self.slots.get(slot as usize).and_then(Option::as_ref).is_some_and(|e| e.loc == loc && e.seq == seq)
    }

    /// When, on the queue's clock, something next becomes ready by time alone: a
    /// backoff ending or a pod overstaying in the unschedulable pool. `None` when
    /// nothing is waiting on time.
    pub fn next_wakeup(&mut self) -> Option<Duration> {
        while let Some(&Reverse((_, seq, slot))) = self.backoff.peek() {
            if self.live(slot, seq, QueueLocation::Backoff) {
                break;
            }
            self.backoff.pop();
        }
        while let Some(&Reverse((_, seq, slot))) = self.pool_since.peek() {
            if self.live(slot, seq, QueueLocation::Unschedulable) || self.live(slot, seq, QueueLocation::Gated) {
                break;
            }
            self.pool_since.pop();
        }
        let b = self.backoff.peek().map(|r| r.0.0);
        let u = self.pool_since.peek().map(|r| r.0.0 + self.config.max_unschedulable_stay + Duration::from_nanos(1));
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

    /// Pods held by PreEnqueue plugins, with the plugin and reason.
    pub fn gated_pods(&self) -> Vec<GatedPod> {
        self.pool
            .iter()
            .map(|&s| self.e(s))
            .filter_map(|e| {
                let s = e.gate.as_ref()?;
                (e.loc == QueueLocation::Gated).then(|| GatedPod {
                    pod: e.info.pod.clone(),
                    plugin: s.plugin().unwrap_or("PreEnqueue"),
                    status: s.clone(),
                })
            })
            .collect()
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::VirtualClock;
    use crate::testing::PodBuilder;

    fn pod(name: &str) -> Arc<PodInfo> {
        Arc::new(PodInfo::new(PodBuilder::new(name).build()).unwrap())
    }

    #[test]
    fn the_in_flight_event_log_keeps_only_what_pods_in_flight_can_see() {
        let profile = Arc::new(Profile::builder("default-scheduler").build().unwrap());
        let mut q = SchedulingQueue::new(&[profile], Arc::new(VirtualClock::new()), QueueConfig::default()).unwrap();
        let obj = EventObject::Custom("x".into());
        q.add(pod("long")).unwrap();
        q.add(pod("short")).unwrap();
        let long = q.pop().unwrap();
        q.on_event(events::NODE_ADD, &obj);
        q.on_event(events::NODE_ADD, &obj);
        let short = q.pop().unwrap();
        q.done(&long.pod.uid).unwrap();
        // `short` stays in flight (a long Permit wait) while events pour in: the
        // log stays bounded, and `short` is then requeued whatever it fails on.
        for _ in 0..10 * EVENT_LOG_LIMIT {
            q.on_event(events::NODE_ADD, &obj);
        }
        assert!(q.events.len() <= EVENT_LOG_LIMIT, "{}", q.events.len());
        // No plugin of that name registered for anything, yet it goes to backoff.
        assert_eq!(q.requeue_failed(&short.pod.uid, &["NoSuchPlugin"]), Ok(QueueLocation::Backoff));
        assert!(q.events.is_empty(), "nothing in flight: the log is cleared");
        q.on_event(events::NODE_ADD, &obj);
        assert!(q.events.is_empty(), "nothing in flight: nothing recorded");
    }
}
