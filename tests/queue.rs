//! The scheduling queue on the virtual clock: order, backoff, max stay, gating,
//! queueing hints, in-place updates, Permit through the loop, and bad input.

mod queue_support;

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use proptest::prelude::*;
use queue_support::*;
use schedkit::framework::*;
use schedkit::model::SchedulingGate;
use schedkit::plugins::priority_sort::PrioritySort;
use schedkit::plugins::scheduling_gates::SchedulingGates;
use schedkit::queue::{QueueConfig, QueueError, QueueLocation, SchedulingQueue, events};
use schedkit::scheduler::{AttemptOutcome, EventError, PodState};
use schedkit::snapshot::{CacheError, PodInfo};
use schedkit::testing::{NodeBuilder, PodBuilder};

fn queue(plugins: Vec<Arc<dyn Plugin>>) -> (SchedulingQueue, VirtualClock) {
    let mut b = Profile::builder("default-scheduler").plugin(PrioritySort);
    for p in plugins {
        b = b.plugin_arc(p, 1);
    }
    let clock = VirtualClock::new();
    let q =
        SchedulingQueue::new(&[Arc::new(b.build().unwrap())], Arc::new(clock.clone()), QueueConfig::default()).unwrap();
    (q, clock)
}

fn pod(name: &str, prio: i32) -> Arc<PodInfo> {
    Arc::new(PodInfo::new(PodBuilder::new(name).priority(prio).cpu("1").build()).unwrap())
}

fn names(q: &mut SchedulingQueue) -> Vec<String> {
    std::iter::from_fn(|| q.pop()).map(|p| p.pod.pod.name().to_owned()).collect()
}

#[test]
fn active_queue_orders_by_priority_then_arrival() {
    let (mut q, clock) = queue(vec![]);
    for (n, p) in [("a", 0), ("b", 5), ("c", 0), ("d", 5), ("e", 10)] {
        q.add(pod(n, p)).unwrap();
        clock.advance(Duration::from_millis(1));
    }
    assert_eq!(names(&mut q), ["e", "b", "d", "a", "c"]);
    assert_eq!(q.counts().in_flight, 5);
}

#[test]
fn pods_added_at_the_same_virtual_instant_pop_first_in_first_out() {
    let (mut q, _clock) = queue(vec![]);
    let order: Vec<String> = (0..50).map(|i| format!("p{i:02}")).collect();
    for n in &order {
        q.add(pod(n, 1)).unwrap();
    }
    assert_eq!(names(&mut q), order);
}

#[test]
fn backoff_doubles_from_one_second_to_ten_on_the_virtual_clock() {
    let (mut q, clock) = queue(vec![]);
    q.add(pod("p", 0)).unwrap();
    let mut waited = Vec::new();
    for _ in 0..6 {
        let p = q.pop().expect("ready");
        // No plugin rejected it (an error): straight to backoff.
        assert_eq!(q.requeue_failed(&p.pod.uid, &[]).unwrap(), QueueLocation::Backoff);
        let start = clock.now();
        let wake = q.next_wakeup().unwrap();
        clock.set(wake.saturating_sub(Duration::from_nanos(1)));
        assert!(q.pop().is_none(), "still backing off 1ns before expiry");
        assert_eq!(q.location(&p.pod.uid), Some(QueueLocation::Backoff));
        clock.set(wake);
        waited.push(wake.saturating_sub(start).as_secs());
        q.flush();
        assert_eq!(q.location(&p.pod.uid), Some(QueueLocation::Active));
    }
    assert_eq!(waited, [1, 2, 4, 8, 10, 10]);
}

#[test]
fn configured_backoff_is_used_and_bad_config_is_refused() {
    let c = QueueConfig {
        initial_backoff: Duration::from_millis(100),
        max_backoff: Duration::from_millis(250),
        ..QueueConfig::default()
    };
    assert_eq!(c.backoff(1), Duration::from_millis(100));
    assert_eq!(c.backoff(2), Duration::from_millis(200));
    assert_eq!(c.backoff(3), Duration::from_millis(250));
    assert_eq!(c.backoff(u32::MAX), Duration::from_millis(250));
    let bad = QueueConfig { max_backoff: Duration::from_millis(10), ..c };
    assert!(matches!(bad.validate(), Err(QueueError::InvalidConfig(_))));
    let zero = QueueConfig { initial_backoff: Duration::ZERO, ..c };
    assert!(schedkit::scheduler::Scheduler::builder().queue_config(zero).is_err());
}

#[test]
fn unschedulable_pods_return_after_the_max_stay() {
    let (mut q, clock) = queue(vec![]);
    q.add(pod("p", 0)).unwrap();
    let p = q.pop().unwrap();
    assert_eq!(q.requeue_failed(&p.pod.uid, &["SomePlugin"]).unwrap(), QueueLocation::Unschedulable);
    clock.advance(Duration::from_mins(5));
    q.flush();
    assert_eq!(q.location(&p.pod.uid), Some(QueueLocation::Unschedulable), "upstream moves strictly after 5 min");
    clock.advance(Duration::from_nanos(1));
    q.flush();
    // Its 1 s backoff is long over: straight to the active queue.
    assert_eq!(q.location(&p.pod.uid), Some(QueueLocation::Active));
    assert_eq!(q.unschedulable_plugins(&p.pod.uid), ["SomePlugin"]);
}

#[test]
fn events_requeue_only_pods_whose_rejecting_plugin_registered_for_them() {
    let (mut q, _clock) = queue(vec![Arc::new(Fit::new())]);
    q.add(pod("fit", 0)).unwrap();
    q.add(pod("other", 0)).unwrap();
    let a = q.pop().unwrap();
    let b = q.pop().unwrap();
    q.requeue_failed(&a.pod.uid, &["NodeResourcesFit"]).unwrap();
    q.requeue_failed(&b.pod.uid, &["SomethingElse"]).unwrap();
    let obj = EventObject::Pod { old: None, new: None };
    assert_eq!(q.on_event(events::ASSIGNED_POD_DELETE, &obj), 1);
    assert_eq!(q.location(&a.pod.uid), Some(QueueLocation::Backoff));
    assert_eq!(q.location(&b.pod.uid), Some(QueueLocation::Unschedulable));
}

#[test]
fn a_plugin_without_enqueue_extensions_counts_as_interested_in_every_event() {
    let closure = FilterFn::new("Closure", |_, _, _| Status::SUCCESS);
    let (mut q, _clock) = queue(vec![Arc::new(closure), Arc::new(Fit::new())]);
    q.add(pod("a", 0)).unwrap();
    q.add(pod("b", 0)).unwrap();
    let a = q.pop().unwrap();
    let b = q.pop().unwrap();
    q.requeue_failed(&a.pod.uid, &["Closure"]).unwrap();
    q.requeue_failed(&b.pod.uid, &["NodeResourcesFit"]).unwrap();
    // A label change: Fit's events don't cover it; the closure plugin's "all" do.
    let label = ClusterEvent { resource: EventResource::Node, action: ActionType::UPDATE_NODE_LABEL };
    assert_eq!(q.on_event(label, &EventObject::Custom("n".into())), 1);
    assert_eq!(q.location(&a.pod.uid), Some(QueueLocation::Backoff));
    assert_eq!(q.location(&b.pod.uid), Some(QueueLocation::Unschedulable));
}

#[test]
fn an_event_during_the_attempt_is_not_lost() {
    let (mut q, clock) = queue(vec![Arc::new(Fit::new())]);
    q.add(pod("p", 0)).unwrap();
    let p = q.pop().unwrap();
    // A pod was deleted while "p" was being scheduled; then "p" fails on resources.
    q.on_event(events::ASSIGNED_POD_DELETE, &EventObject::Pod { old: None, new: None });
    assert_eq!(q.requeue_failed(&p.pod.uid, &["NodeResourcesFit"]).unwrap(), QueueLocation::Backoff);
    // Without an event it would have waited in the pool.
    // Activation never cuts a backoff short; once it ends the pod is retried.
    assert_eq!(q.activate([&*p.pod.uid]), 0);
    assert!(q.pop().is_none());
    clock.advance(SEC);
    let p = q.pop().unwrap();
    assert_eq!(q.requeue_failed(&p.pod.uid, &["NodeResourcesFit"]).unwrap(), QueueLocation::Unschedulable);
}

#[test]
fn gated_pods_are_listed_and_released_when_their_gates_go() {
    let (mut q, _clock) = queue(vec![Arc::new(SchedulingGates)]);
    let gated = PodBuilder::new("g").with(|p| p.spec.scheduling_gates.push(SchedulingGate { name: "quota".into() }));
    let info = Arc::new(PodInfo::new(gated.clone().build()).unwrap());
    assert_eq!(q.add(info.clone()).unwrap(), QueueLocation::Gated);
    let listed = q.gated_pods();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].plugin, "SchedulingGates");
    assert_eq!(listed[0].status.reasons(), ["waiting for scheduling gates: [quota]"]);
    assert!(q.pop().is_none());
    // A label change doesn't help; removing the gate does.
    let relabeled = Arc::new(PodInfo::new(gated.clone().label("x", "y").build()).unwrap());
    assert_eq!(q.update(relabeled).unwrap(), QueueLocation::Gated);
    let ungated = Arc::new(PodInfo::new(gated.with(|p| p.spec.scheduling_gates.clear()).build()).unwrap());
    assert_eq!(q.update(ungated).unwrap(), QueueLocation::Active);
    assert_eq!(q.pop().unwrap().pod.uid, info.uid);
}

#[test]
fn updates_reorder_in_place_and_deletes_remove() {
    let (mut q, _clock) = queue(vec![]);
    for n in ["a", "b", "c"] {
        q.add(pod(n, 0)).unwrap();
    }
    q.update(pod("c", 100)).unwrap();
    assert!(q.delete("default/a"));
    assert!(!q.delete("default/a"));
    assert_eq!(names(&mut q), ["c", "b"]);
    // Deleted while in flight: dropped when it reports back.
    q.add(pod("d", 0)).unwrap();
    let d = q.pop().unwrap();
    assert!(q.delete(&d.pod.uid));
    assert_eq!(q.requeue_failed(&d.pod.uid, &[]), Err(QueueError::NotFound("default/d".into())));
    assert_eq!(q.location("default/d"), None);
}

#[test]
fn bad_queue_input_is_a_typed_error() {
    let (mut q, _clock) = queue(vec![]);
    q.add(pod("a", 0)).unwrap();
    assert_eq!(q.add(pod("a", 0)), Err(QueueError::AlreadyQueued("default/a".into())));
    let other = Arc::new(PodInfo::new(PodBuilder::new("o").scheduler_name("nope").build()).unwrap());
    assert!(matches!(q.add(other), Err(QueueError::NoProfile { .. })));
    let bound = Arc::new(PodInfo::new(PodBuilder::new("b").node_name("n1").build()).unwrap());
    assert!(matches!(q.add(bound), Err(QueueError::Assigned(_))));
    assert_eq!(q.done("default/a"), Err(QueueError::NotInFlight("default/a".into())));
    assert_eq!(q.requeue_failed("default/zzz", &[]), Err(QueueError::NotFound("default/zzz".into())));
    assert_eq!(q.len(), 1);
}

/// The hint test the issue asks for: a pod NodeResourcesFit rejected comes back on
/// a node-added or assigned-pod-deleted event, not on an unrelated label change.
#[test]
fn a_fit_rejected_pod_returns_on_node_add_or_pod_delete_not_on_a_label_change() {
    let (mut s, clock) = plain_scheduler(vec![Arc::new(Fit::new())]);
    let ev = s.events();
    ev.add_node(NodeBuilder::new("n1").cpu("2").memory("4Gi").build()).unwrap();
    ev.add_pod(PodBuilder::new("hog").cpu("2").build()).unwrap();
    assert_eq!(s.run_until_idle().bound, 1);
    ev.add_pod(PodBuilder::new("p").cpu("2").build()).unwrap();
    let run = s.run_until_idle();
    assert_eq!(run.failed, 1);
    assert_eq!(s.pod_state("default/p"), Some(PodState::Unschedulable));
    assert_eq!(s.queue().lock().unschedulable_plugins("default/p"), ["NodeResourcesFit"]);

    // An unrelated node label change: no.
    ev.update_node(NodeBuilder::new("n1").cpu("2").memory("4Gi").label("team", "ml").build()).unwrap();
    assert_eq!(s.pod_state("default/p"), Some(PodState::Unschedulable));
    // A node too small for it: the hint says Skip.
    ev.add_node(NodeBuilder::new("tiny").cpu("1").memory("4Gi").build()).unwrap();
    assert_eq!(s.pod_state("default/p"), Some(PodState::Unschedulable));
    // A node that could hold it: yes (backoff first, 1 s after the failure).
    ev.add_node(NodeBuilder::new("n2").cpu("4").memory("4Gi").build()).unwrap();
    assert_eq!(s.pod_state("default/p"), Some(PodState::Backoff));
    clock.advance(SEC);
    assert_eq!(s.run_until_idle().bound, 1);
    assert_eq!(s.pod_state("default/p"), Some(PodState::Bound));

    // Assigned pod deleted: a second starved pod comes back.
    ev.add_pod(PodBuilder::new("q").cpu("2").build()).unwrap();
    ev.add_pod(PodBuilder::new("r").cpu("3").build()).unwrap();
    s.run_until_idle();
    assert_eq!(s.pod_state("default/r"), Some(PodState::Unschedulable));
    ev.delete_pod("default/hog").unwrap();
    assert_eq!(s.pod_state("default/r"), Some(PodState::Backoff));
}

/// The same with the built-in NodeResourcesFit and its own hints.
#[test]
fn the_built_in_node_resources_fit_hints_requeue_on_capacity_only() {
    use schedkit::plugins::node_resources::{Fit as BuiltinFit, FitArgs};
    let fit = BuiltinFit::new(&FitArgs::default()).unwrap();
    let (mut s, clock) = plain_scheduler(vec![Arc::new(fit)]);
    let ev = s.events();
    ev.add_node(NodeBuilder::new("n1").cpu("2").memory("4Gi").build()).unwrap();
    ev.add_pod(PodBuilder::new("hog").cpu("2").build()).unwrap();
    ev.add_pod(PodBuilder::new("p").cpu("2").build()).unwrap();
    s.run_until_idle();
    let (hog, p) = (s.pod_state("default/hog"), s.pod_state("default/p"));
    let starved = if hog == Some(PodState::Bound) { "default/p" } else { "default/hog" };
    assert!(hog == Some(PodState::Bound) || p == Some(PodState::Bound));
    assert_eq!(s.pod_state(starved), Some(PodState::Unschedulable));
    assert_eq!(s.queue().lock().unschedulable_plugins(starved), ["NodeResourcesFit"]);
    ev.update_node(NodeBuilder::new("n1").cpu("2").memory("4Gi").label("team", "ml").build()).unwrap();
    assert_eq!(s.pod_state(starved), Some(PodState::Unschedulable), "a label change doesn't help");
    ev.add_node(NodeBuilder::new("n2").cpu("4").memory("4Gi").build()).unwrap();
    assert_eq!(s.pod_state(starved), Some(PodState::Backoff), "a node that fits does");
    clock.advance(SEC);
    assert_eq!(s.run_until_idle().bound, 1);
}

#[test]
fn the_loop_skips_pods_being_deleted_and_reports_states() {
    let (mut s, _clock) = plain_scheduler(vec![Arc::new(Fit::new())]);
    s.add_node(NodeBuilder::new("n").cpu("4").memory("4Gi").build()).unwrap();
    s.add_pod(PodBuilder::new("gone").with(|p| p.metadata.deletion_timestamp = Some(1.0)).build()).unwrap();
    s.add_pod(PodBuilder::new("ok").cpu("1").build()).unwrap();
    assert_eq!(s.pod_state("default/ok"), Some(PodState::Active));
    let run = s.run_until_idle();
    assert_eq!((run.attempts, run.bound), (2, 1));
    assert_eq!(s.pod_state("default/gone"), None);
    assert_eq!(s.pod_state("default/ok"), Some(PodState::Bound));
    // Re-adding a placed pod as unscheduled would double-book it.
    let e = s.add_pod(PodBuilder::new("ok").cpu("1").build()).unwrap_err();
    assert_eq!(e, EventError::Cache(CacheError::PodExists("default/ok".into())));
}

struct Gate {
    timeout: Duration,
    log: Arc<Mutex<Vec<String>>>,
}

impl Plugin for Gate {
    fn name(&self) -> &str {
        "Gate"
    }
    fn register(self: Arc<Self>, p: &mut ExtensionPoints) {
        p.permit(self.clone()).reserve(self);
    }
}

impl PermitPlugin for Gate {
    fn permit(&self, _: &mut CycleState, _: &PodInfo, _: &str) -> PermitDecision {
        PermitDecision::Wait(self.timeout)
    }
}

impl ReservePlugin for Gate {
    fn reserve(&self, _: &mut CycleState, p: &PodInfo, _: &str) -> Status {
        self.log.lock().push(format!("reserve {}", p.pod.name()));
        Status::SUCCESS
    }
    fn unreserve(&self, _: &mut CycleState, p: &PodInfo, _: &str) {
        self.log.lock().push(format!("unreserve {}", p.pod.name()));
    }
}

#[test]
fn permit_allow_from_another_thread_releases_a_parked_pod() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let gate = Arc::new(Gate { timeout: Duration::from_secs(30), log: log.clone() });
    let (mut s, _clock) = plain_scheduler(vec![Arc::new(Fit::new()), gate]);
    s.add_node(NodeBuilder::new("n").cpu("4").memory("4Gi").build()).unwrap();
    s.add_pod(PodBuilder::new("p").cpu("1").build()).unwrap();
    let run = s.run_until_idle();
    assert_eq!((run.attempts, run.waiting, run.bound), (1, 1, 0));
    assert_eq!(s.pod_state("default/p"), Some(PodState::Waiting));
    let handle = s.handle().clone();
    std::thread::spawn(move || assert!(handle.waiting_pods().allow("default/p", "Gate"))).join().unwrap();
    let run = s.run_until_idle();
    assert_eq!(run.bound, 1);
    assert_eq!(s.pod_state("default/p"), Some(PodState::Bound));
    assert_eq!(*log.lock(), ["reserve p"]);
}

#[test]
fn permit_timeout_rejects_unreserves_and_restores_the_cache_exactly() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let gate = Arc::new(Gate { timeout: Duration::from_secs(10), log: log.clone() });
    let (mut s, clock) = plain_scheduler(vec![Arc::new(Fit::new()), gate]);
    s.add_node(NodeBuilder::new("n").cpu("4").memory("4Gi").gpus(8).build()).unwrap();
    let before = cache_state(&s);
    s.add_pod(PodBuilder::new("p").cpu("1500m").memory("1Gi").gpus(2).build()).unwrap();
    s.run_until_idle();
    assert_ne!(cache_state(&s), before, "reserved while waiting");
    assert_eq!(s.next_wakeup(), Some(Duration::from_secs(10)));
    clock.advance(Duration::from_secs(9));
    assert_eq!(s.run_until_idle().bind_failed, 0);
    clock.advance(SEC);
    let run = s.run_until_idle();
    assert_eq!(run.bind_failed, 1);
    assert_eq!(cache_state(&s), before);
    assert_eq!(*log.lock(), ["reserve p", "unreserve p"]);
    // Rejected by Gate at Permit: unschedulable until an event for Gate, or the max stay.
    assert_eq!(s.pod_state("default/p"), Some(PodState::Unschedulable));
    assert!(s.handle().waiting_pods().is_empty());
}

#[test]
fn a_permit_wait_beyond_fifteen_minutes_is_capped_like_upstream() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let gate = Arc::new(Gate { timeout: Duration::from_hours(1), log });
    let (mut s, clock) = plain_scheduler(vec![Arc::new(Fit::new()), gate]);
    s.add_node(NodeBuilder::new("n").cpu("4").memory("4Gi").build()).unwrap();
    s.add_pod(PodBuilder::new("p").cpu("1").build()).unwrap();
    s.run_until_idle();
    assert_eq!(s.next_wakeup(), Some(MAX_PERMIT_TIMEOUT));
    clock.set(MAX_PERMIT_TIMEOUT);
    assert_eq!(s.run_until_idle().bind_failed, 1);
}

#[test]
fn deleting_a_waiting_pod_releases_its_reservation() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let gate = Arc::new(Gate { timeout: Duration::from_secs(10), log: log.clone() });
    let (mut s, _clock) = plain_scheduler(vec![Arc::new(Fit::new()), gate]);
    s.add_node(NodeBuilder::new("n").cpu("4").memory("4Gi").build()).unwrap();
    let before = cache_state(&s);
    s.add_pod(PodBuilder::new("p").cpu("1").build()).unwrap();
    s.run_until_idle();
    s.events().delete_pod("default/p").unwrap();
    let run = s.run_until_idle();
    assert_eq!(run.bind_failed + run.bound, 0, "dropped, not requeued");
    assert_eq!(s.pod_state("default/p"), None);
    assert_eq!(cache_state(&s), before);
    assert_eq!(*log.lock(), ["reserve p", "unreserve p"]);
}

#[test]
fn removing_the_node_a_pod_waits_for_requeues_the_pod() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let gate = Arc::new(Gate { timeout: Duration::from_secs(10), log: log.clone() });
    let (mut s, _clock) = plain_scheduler(vec![Arc::new(Fit::new()), gate]);
    s.add_node(NodeBuilder::new("n").cpu("4").memory("4Gi").build()).unwrap();
    s.add_pod(PodBuilder::new("p").cpu("1").build()).unwrap();
    s.run_until_idle();
    assert_eq!(s.pod_state("default/p"), Some(PodState::Waiting));
    s.events().remove_node("n").unwrap();
    let run = s.run_until_idle();
    assert_eq!(run.bind_failed, 1);
    // Retried after backoff, like an error: no plugin's event would bring it back.
    assert_eq!(s.pod_state("default/p"), Some(PodState::Backoff));
    assert_eq!(*log.lock(), ["reserve p", "unreserve p"]);
}

#[test]
fn events_for_unknown_objects_are_typed_errors_and_lose_nothing() {
    let (mut s, _clock) = plain_scheduler(vec![Arc::new(Fit::new())]);
    let ev = s.events();
    ev.add_node(NodeBuilder::new("n").cpu("1").memory("1Gi").build()).unwrap();
    assert_eq!(ev.update_node(NodeBuilder::new("ghost").build()), Err(CacheError::NodeNotFound("ghost".into())));
    assert_eq!(ev.remove_node("ghost"), Err(CacheError::NodeNotFound("ghost".into())));
    assert_eq!(ev.delete_pod("default/ghost"), Err(EventError::UnknownPod("default/ghost".into())));
    let e = ev.add_pod(PodBuilder::new("x").node_name("ghost").build()).unwrap_err();
    assert!(matches!(e, EventError::Cache(CacheError::PodNodeNotFound { .. })), "{e}");
    let e = ev.add_pod(PodBuilder::new("y").scheduler_name("other").build()).unwrap_err();
    assert!(matches!(e, EventError::Queue(QueueError::NoProfile { .. })), "{e}");
    ev.add_pod(PodBuilder::new("p").cpu("2").build()).unwrap();
    assert!(matches!(ev.add_pod(PodBuilder::new("p").build()), Err(EventError::Queue(QueueError::AlreadyQueued(_)))));
    let e = ev.add_pod(PodBuilder::new("").build()).unwrap_err();
    assert!(matches!(e, EventError::Pod(_)), "{e}");
    s.run_until_idle();
    assert_eq!(s.pod_state("default/p"), Some(PodState::Unschedulable), "still held, not lost");
}

#[test]
fn events_can_be_fed_from_another_thread_while_the_loop_runs() {
    let (mut s, clock) = plain_scheduler(vec![Arc::new(Fit::new())]);
    let ev = s.events();
    let feeder = std::thread::spawn(move || {
        for i in 0..50 {
            ev.add_node(NodeBuilder::new(&format!("n{i}")).cpu("2").memory("4Gi").build()).unwrap();
            ev.add_pod(PodBuilder::new(&format!("p{i}")).cpu("2").build()).unwrap();
        }
    });
    while !feeder.is_finished() {
        s.run_until_idle();
    }
    feeder.join().unwrap();
    let run = s.run_until_settled(&clock, Duration::from_mins(1));
    assert_eq!(run.waiting, 0);
    let bound = (0..50).filter(|i| s.pod_state(&format!("default/p{i}")) == Some(PodState::Bound)).count();
    assert_eq!(bound, 50);
}

#[test]
fn failed_scheduling_cycles_report_where_the_pod_went() {
    let (mut s, _clock) = plain_scheduler(vec![Arc::new(Fit::new())]);
    s.add_pod(PodBuilder::new("p").cpu("1").build()).unwrap();
    // No nodes at all: an error without a rejecting plugin, so backoff.
    match s.schedule_next().unwrap().outcome {
        AttemptOutcome::Failed { location, .. } => assert_eq!(location, QueueLocation::Backoff),
        other => panic!("unexpected {other:?}"),
    }
    assert!(s.schedule_next().is_none());
}

#[derive(Debug, Clone)]
enum Op {
    Add(u8, i8),
    PopFail(bool),
    PopDone,
    Event,
    Advance(u16),
    Delete(u8),
    Activate(u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0u8..20, -2i8..3).prop_map(|(n, p)| Op::Add(n, p)),
        any::<bool>().prop_map(Op::PopFail),
        Just(Op::PopDone),
        Just(Op::Event),
        (0u16..400).prop_map(Op::Advance),
        (0u8..20).prop_map(Op::Delete),
        (0u8..20).prop_map(Op::Activate),
    ]
}

proptest! {
    /// Whatever happens, every pod the queue holds is in exactly one place and the
    /// counts add up; popped pods come out in priority order among ready ones.
    #[test]
    fn every_pod_is_in_exactly_one_place(ops in proptest::collection::vec(op(), 1..120)) {
        let (mut q, clock) = queue(vec![Arc::new(Fit::new())]);
        let mut known = std::collections::BTreeSet::new();
        for o in ops {
            match o {
                Op::Add(n, p) => {
                    let r = q.add(pod(&format!("p{n}"), i32::from(p)));
                    if r.is_ok() { known.insert(format!("default/p{n}")); }
                }
                Op::PopFail(fit) => if let Some(p) = q.pop() {
                    let rej: &[&'static str] = if fit { &["NodeResourcesFit"] } else { &[] };
                    q.requeue_failed(&p.pod.uid, rej).unwrap();
                },
                Op::PopDone => if let Some(p) = q.pop() {
                    q.done(&p.pod.uid).unwrap();
                    known.remove(&*p.pod.uid);
                },
                Op::Event => { q.on_event(events::NODE_ADD, &EventObject::Node { old: None, new: Some(Arc::new(NodeBuilder::new("big").cpu("64").build())) }); }
                Op::Advance(ms) => clock.advance(Duration::from_millis(u64::from(ms) * 10)),
                Op::Delete(n) => { if q.delete(&format!("default/p{n}")) { known.remove(&format!("default/p{n}")); } }
                Op::Activate(n) => { q.activate([format!("default/p{n}").as_str()]); }
            }
            let c = q.counts();
            prop_assert_eq!(c.active + c.backoff + c.unschedulable + c.gated + c.in_flight, q.len());
            prop_assert_eq!(q.len(), known.len());
            for uid in &known {
                prop_assert!(q.location(uid).is_some());
            }
        }
        // Ready pods pop in priority order.
        clock.advance(Duration::from_hours(1));
        let mut last = i32::MAX;
        while let Some(p) = q.pop() {
            prop_assert!(p.pod.priority() <= last);
            last = p.pod.priority();
        }
    }
}
