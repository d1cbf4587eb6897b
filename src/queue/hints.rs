//! Cluster events and queueing hints: which pooled pods an event may help, and the
//! log of events seen while pods are in flight, consulted when one fails.

use super::{QueueLocation, SchedulingQueue, events};
use crate::framework::runtime::guard;
use smallvec::SmallVec;

use crate::framework::{ClusterEvent, EventObject, QueueingHint};

/// In-flight event-log length at which it is trimmed. Events older than every pod
/// in flight are dropped; if more than half the limit remain, the pods in flight
/// are marked to be requeued (after backoff) whatever they fail on, and the log is
/// cleared: conservative (never a missed event), and bounded while a gang waits at
/// Permit for minutes of busy cluster events.
pub(super) const EVENT_LOG_LIMIT: usize = 4096;

impl SchedulingQueue {
    pub(super) fn end_flight(&mut self, slot: u32) {
        self.in_flight -= 1;
        let from = self.e(slot).in_flight_from;
        let oldest_left = match self.flight_starts.iter().position(|&f| f == from) {
            Some(i) => {
                self.flight_starts.remove(i);
                i == 0
            }
            None => false,
        };
        if self.in_flight == 0 {
            self.events_base += self.events.len();
            self.events.clear();
            self.flight_starts.clear();
        } else if oldest_left {
            // As upstream's in-flight list: events older than every pod still in
            // flight can help no one, and they hold the pods they name.
            let oldest = self.flight_starts.front().copied().unwrap_or(self.events_base + self.events.len());
            let drop = oldest.saturating_sub(self.events_base).min(self.events.len());
            self.events.drain(..drop);
            self.events_base += drop;
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

    /// Upstream `isPodWorthRequeuing`: a pod no plugin rejected is always worth it, as
    /// is any pod on a wildcard event, or one rejected by a plugin of the profile that
    /// doesn't implement EnqueueExtensions (upstream registers every event for those);
    /// otherwise only if a plugin that rejected it registered for the event and its
    /// hint (if any) says Queue. A panicking hint counts as Queue, as an erroring one
    /// does upstream.
    pub(super) fn worth_requeuing(&self, slot: u32, event: &ClusterEvent, obj: &EventObject) -> QueueingHint {
        self.worth_requeuing_with(slot, event, obj, &mut HintPlan::new(event))
    }

    /// [`SchedulingQueue::worth_requeuing`] with what `plan` already knows about the
    /// event: one event visits every pooled pod, and a gang's gated members share one
    /// profile and one rejector, so which registrations apply is worked out once.
    fn worth_requeuing_with(
        &self,
        slot: u32,
        event: &ClusterEvent,
        obj: &EventObject,
        plan: &mut HintPlan,
    ) -> QueueingHint {
        let e = self.e(slot);
        if e.rejectors.is_empty() || plan.wildcard {
            return QueueingHint::Queue;
        }
        let hooks = &self.profiles[e.profile as usize];
        let known = plan.last.as_ref().filter(|l| l.profile == e.profile && same_names(&l.rejectors, &e.rejectors));
        if known.is_none() {
            let applies = if e.rejectors.iter().any(|r| hooks.no_events.contains(r)) {
                None
            } else {
                let applies = hooks.hints.iter().enumerate();
                let applies =
                    applies.filter(|(_, (plugin, reg))| event.matches(&reg.event) && e.rejectors.contains(plugin));
                Some(applies.map(|(i, _)| i).collect())
            };
            plan.last = Some(Verdicts { profile: e.profile, rejectors: e.rejectors.clone(), applies });
        }
        let Some(applies) = plan.last.as_ref().and_then(|l| l.applies.as_ref()) else { return QueueingHint::Queue };
        for &i in applies {
            let (plugin, reg) = &hooks.hints[i];
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

    pub(super) fn record_event(&mut self, event: ClusterEvent, obj: &EventObject) {
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
        let mut plan = HintPlan::new(&event);
        for slot in candidates {
            if self.worth_requeuing_with(slot, &event, obj, &mut plan) == QueueingHint::Queue {
                let before = self.e(slot).loc;
                self.detach(slot);
                if self.requeue(slot) != before {
                    moved += 1;
                }
            }
        }
        moved
    }
}

/// What one event's requeuing checks reuse from pod to pod.
struct HintPlan {
    wildcard: bool,
    /// The registrations that apply to the last profile and rejector set seen.
    last: Option<Verdicts>,
}

struct Verdicts {
    profile: u32,
    rejectors: SmallVec<[&'static str; 2]>,
    /// Indices into the profile's hints that the event matches and a rejector
    /// registered, in registration order; `None` when a rejector has no
    /// EnqueueExtensions (the pod is requeued whatever the event).
    applies: Option<SmallVec<[usize; 4]>>,
}

impl HintPlan {
    fn new(event: &ClusterEvent) -> HintPlan {
        HintPlan { wildcard: events::is_wildcard(event), last: None }
    }
}

/// Whether two rejector lists are the same names from the same `'static` strings
/// (plugin names are constants, so the same plugin's name is the same pointer; a
/// miss only means the registrations are worked out again).
fn same_names(a: &[&'static str], b: &[&'static str]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| std::ptr::eq(*x, *y))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::framework::{Profile, VirtualClock};
    use crate::queue::{QueueConfig, SchedulingQueue};
    use crate::snapshot::PodInfo;
    use crate::testing::PodBuilder;

    fn pod(name: &str) -> Arc<PodInfo> {
        Arc::new(PodInfo::new(PodBuilder::new(name).build()).unwrap())
    }

    /// One event's plan is reused from pod to pod only for the same profile and
    /// rejectors: pods rejected by different plugins, interleaved in the pool, are each
    /// moved exactly when the per-pod check says so.
    #[test]
    fn one_events_plan_gives_every_pod_its_own_verdict() {
        use crate::plugins::names;
        let handle = crate::framework::Handle::default();
        let profile = Arc::new(Profile::kube_default(&handle));
        let mut q = SchedulingQueue::new(&[profile], Arc::new(VirtualClock::new()), QueueConfig::default()).unwrap();
        let sets: [&[&'static str]; 5] = [
            &[names::NODE_RESOURCES_FIT],
            &["NotInTheProfile"],
            &[names::NODE_RESOURCES_FIT, "NotInTheProfile"],
            &[names::NODE_AFFINITY],
            &[names::NODE_RESOURCES_FIT],
        ];
        let label = crate::framework::ClusterEvent {
            resource: crate::framework::EventResource::Node,
            action: crate::framework::ActionType::UPDATE_NODE_LABEL,
        };
        for event in [events::NODE_ADD, label, events::ASSIGNED_POD_DELETE] {
            let obj = EventObject::Custom("x".into());
            let uids: Vec<_> = (0..2 * sets.len())
                .map(|i| {
                    let p = pod(&format!("p{i}"));
                    let uid = p.uid.clone();
                    q.add(p).unwrap();
                    let popped = q.pop().unwrap();
                    q.requeue_failed(&popped.pod.uid, sets[i % sets.len()]).unwrap();
                    uid
                })
                .collect();
            let expected: Vec<bool> = uids
                .iter()
                .map(|u| q.worth_requeuing(q.slot_of(u).unwrap(), &event, &obj) == QueueingHint::Queue)
                .collect();
            q.on_event(event, &obj);
            let moved: Vec<bool> = uids.iter().map(|u| q.location(u) != Some(QueueLocation::Unschedulable)).collect();
            assert_eq!(moved, expected, "{event:?}");
            assert!(expected.contains(&true) && expected.contains(&false), "{event:?}: {expected:?}");
            for u in &uids {
                q.delete(u);
            }
        }
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
