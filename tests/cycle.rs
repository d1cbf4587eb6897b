//! The scheduling and binding cycles: order of extension points, Skip, narrowing,
//! unreserve on failure, panics, messages.

mod support;

use std::sync::Arc;
use std::time::Duration;

use schedkit::framework::*;
use schedkit::model::TaintEffect;
use schedkit::scheduler::{ScheduleError, Scheduler, TieBreak};
use schedkit::snapshot::{PodInfo, Snapshot};
use schedkit::testing::{NodeBuilder, PodBuilder};
use support::*;

/// A scheduler whose profile holds `recorders` in order; the last one binds (the
/// others Skip at Bind unless told otherwise).
fn scheduler_with(mut recorders: Vec<Recorder>, nodes: usize) -> Scheduler {
    if let Some(last) = recorders.last_mut()
        && last.bind.is_skip()
    {
        last.bind = Status::SUCCESS;
    }
    let mut b = Profile::builder("default-scheduler");
    for r in recorders {
        b = b.plugin(r);
    }
    let s = Scheduler::builder().profile(b.build().unwrap()).parallelism(1).tie_break(TieBreak::First).build();
    for i in 0..nodes {
        s.add_node(NodeBuilder::new(&format!("n{i}")).cpu("4").memory("8Gi").build()).unwrap();
    }
    s
}

fn pod(name: &str) -> schedkit::model::Pod {
    PodBuilder::new(name).cpu("1").memory("1Gi").build()
}

/// Snapshot of the cache's per-node requests, for "exactly as before" checks.
fn cache_state(s: &Scheduler) -> Vec<(String, i64, i64, usize)> {
    let mut snap = Snapshot::default();
    s.cache().lock().update_snapshot(&mut snap);
    let mut v: Vec<_> = snap
        .nodes()
        .iter()
        .map(|n| (n.node().name().to_owned(), n.requested().milli_cpu, n.requested().memory, n.pods().len()))
        .collect();
    v.sort();
    v
}

#[test]
fn extension_points_run_in_upstream_order() {
    let log = new_log();
    let mut a = Recorder::new("A", &log);
    a.prefer = Some("n1");
    let b = Recorder::new("B", &log);
    let mut s = scheduler_with(vec![a, b], 3);
    let binding = s.schedule_pod(pod("p")).unwrap();
    assert_eq!(binding.node(), "n1");
    binding.run().unwrap();
    // Filter runs plugin-major over a chunk of nodes: A on the three nodes, then B
    // on those A passed (each node still meets A before B, as upstream's
    // RunFilterPlugins; upstream's order across nodes is its parallel workers').
    let want = [
        "PreFilter:A",
        "PreFilter:B",
        "Filter:A",
        "Filter:B",
        "PreScore:A",
        "PreScore:B",
        "Score:A",
        "NormalizeScore:A",
        "Score:B",
        "NormalizeScore:B",
        "Reserve:A",
        "Reserve:B",
        "Permit:A",
        "Permit:B",
        "PreBind:A",
        "PreBind:B",
        "Bind:A",
        "Bind:B",
        "PostBind:A",
        "PostBind:B",
    ];
    assert_eq!(phases(&log), want);
    assert!(calls(&log, "Unreserve").is_empty());
    assert!(calls(&log, "PostFilter").is_empty());
}

#[test]
fn skip_from_pre_filter_skips_that_plugins_filter_and_pre_score_its_score() {
    let log = new_log();
    let mut a = Recorder::new("A", &log);
    a.pre_filter = Status::SKIP;
    a.pre_score = Status::SKIP;
    let b = Recorder::new("B", &log);
    let mut s = scheduler_with(vec![a, b], 3);
    s.schedule_pod(pod("p")).unwrap().run().unwrap();
    assert!(calls(&log, "Filter").iter().all(|c| c.starts_with("Filter:B")));
    assert_eq!(calls(&log, "Filter").len(), 3);
    assert!(calls(&log, "Score").iter().all(|c| c.starts_with("Score:B")));
    assert_eq!(calls(&log, "NormalizeScore"), ["NormalizeScore:B:3"]);
}

#[test]
fn pre_filter_result_narrows_the_nodes_filtered() {
    let log = new_log();
    let mut a = Recorder::new("A", &log);
    a.pre_filter_nodes = Some(vec!["n2", "n4"]);
    let mut b = Recorder::new("B", &log);
    b.pre_filter_nodes = Some(vec!["n2", "n3"]);
    let mut s = scheduler_with(vec![a, b], 5);
    let binding = s.schedule_pod(pod("p")).unwrap();
    assert_eq!(binding.node(), "n2");
    assert_eq!(calls(&log, "Filter"), ["Filter:A:n2", "Filter:B:n2"]);
    drop(binding);

    // Disjoint narrowings: unresolvable for every node, with upstream's message.
    let log = new_log();
    let mut a = Recorder::new("A", &log);
    a.pre_filter_nodes = Some(vec!["n1"]);
    let mut b = Recorder::new("B", &log);
    b.pre_filter_nodes = Some(vec!["n2"]);
    let mut s = scheduler_with(vec![a, b], 3);
    let err = s.schedule_pod(pod("p")).unwrap_err();
    // Both PostFilters reject: upstream `RunPostFilterPlugins` joins their reasons.
    assert_eq!(
        err.to_string(),
        "0/3 nodes are available: node(s) didn't satisfy plugin(s) [A B] simultaneously. A could not help, B could not help"
    );
    assert!(calls(&log, "Filter").is_empty());
}

#[test]
fn permit_reject_unreserves_in_reverse_order_and_restores_the_cache() {
    let log = new_log();
    let a = Recorder::new("A", &log);
    let b = Recorder::new("B", &log);
    let mut c = Recorder::new("C", &log);
    c.permit = PermitDecision::Reject(Status::unschedulable("not now"));
    let mut s = scheduler_with(vec![a, b, c], 3);
    let before = cache_state(&s);
    let err = s.schedule_pod(pod("p")).unwrap_err();
    match &err {
        ScheduleError::Plugin { status, .. } => {
            assert_eq!(status.plugin(), Some("C"));
            assert_eq!(status.reasons(), ["not now"]);
        }
        other => panic!("unexpected {other:?}"),
    }
    let un: Vec<String> = calls(&log, "Unreserve").iter().map(|c| c.split(':').nth(1).unwrap().to_owned()).collect();
    assert_eq!(un, ["C", "B", "A"]);
    assert_eq!(cache_state(&s), before);
    assert_eq!(s.cache().lock().pod_count(), 0);
}

#[test]
fn reserve_failure_unreserves_everything_and_restores_the_cache() {
    let log = new_log();
    let a = Recorder::new("A", &log);
    let mut b = Recorder::new("B", &log);
    b.reserve = Status::error("disk full");
    let c = Recorder::new("C", &log);
    let mut s = scheduler_with(vec![a, b, c], 3);
    let before = cache_state(&s);
    assert!(s.schedule_pod(pod("p")).is_err());
    assert_eq!(calls(&log, "Reserve").len(), 2, "C's Reserve never ran");
    let un: Vec<String> = calls(&log, "Unreserve").iter().map(|c| c.split(':').nth(1).unwrap().to_owned()).collect();
    assert_eq!(un, ["C", "B", "A"]);
    assert_eq!(cache_state(&s), before);
}

#[test]
fn bind_failure_unreserves_in_reverse_and_forgets_the_pod() {
    let log = new_log();
    let a = Recorder::new("A", &log);
    let mut b = Recorder::new("B", &log);
    b.bind = Status::error("api server down");
    let mut s = scheduler_with(vec![a, b], 2);
    let before = cache_state(&s);
    let binding = s.schedule_pod(pod("p")).unwrap();
    assert_ne!(cache_state(&s), before, "the pod is assumed while binding");
    let err = binding.run().unwrap_err();
    assert_eq!(err.status.plugin(), Some("B"));
    let un: Vec<String> = calls(&log, "Unreserve").iter().map(|c| c.split(':').nth(1).unwrap().to_owned()).collect();
    assert_eq!(un, ["B", "A"]);
    assert!(calls(&log, "PostBind").is_empty());
    assert_eq!(cache_state(&s), before);
}

#[test]
fn successful_binding_keeps_the_pod_assumed_and_counted() {
    let log = new_log();
    let mut s = scheduler_with(vec![Recorder::new("A", &log)], 1);
    let bound = s.schedule_pod(pod("p")).unwrap().run().unwrap();
    assert_eq!(bound.node_name(), "n0");
    assert_eq!(bound.bound_pod().spec.node_name, "n0");
    let cache = s.cache().lock();
    assert!(cache.is_assumed("default/p"));
    assert_eq!(cache.node_info("n0").unwrap().requested().milli_cpu, 1000);
}

#[test]
fn a_panicking_plugin_becomes_an_error_and_the_scheduler_keeps_going() {
    let log = new_log();
    let mut a = Recorder::new("Boom", &log);
    a.panic_in_filter = true;
    let mut s = scheduler_with(vec![a], 3);
    let before = cache_state(&s);
    let err = s.schedule_pod(pod("p")).unwrap_err();
    match err {
        ScheduleError::Plugin { status, .. } => {
            assert_eq!(status.code(), Code::Error);
            assert_eq!(status.plugin(), Some("Boom"));
            assert!(status.message().contains("panicked in Filter: filter exploded"), "{}", status.message());
        }
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(cache_state(&s), before);
    // Same scheduler, a different profile-free path: it still works.
    let ok = Profile::builder("other").plugin(FilterFn::new("Fine", |_, _, _| Status::SUCCESS)).build().unwrap();
    let mut s2 = Scheduler::builder().profile(ok).parallelism(1).build();
    s2.add_node(NodeBuilder::new("x").cpu("1").build()).unwrap();
    assert!(s2.schedule_pod(PodBuilder::new("q").scheduler_name("other").build()).is_ok());
    // And the first scheduler schedules the next pod once the plugin behaves.
    assert!(s.schedule_pod(pod("p2")).is_err());
}

#[test]
fn fit_error_counts_reasons_like_upstream() {
    let log = new_log();
    let mut a = Recorder::new("A", &log);
    a.reject_nodes = vec![
        ("n0", Status::unschedulable("Insufficient cpu")),
        ("n1", Status::unschedulable("Insufficient cpu")),
        ("n2", Status::unschedulable("Insufficient cpu")),
        ("n3", Status::unresolvable("node(s) had untolerated taint {gpu: true}")),
        ("n4", Status::unresolvable("node(s) had untolerated taint {gpu: true}")),
    ];
    let mut s = scheduler_with(vec![a], 5);
    let err = s.schedule_pod(pod("p")).unwrap_err();
    let fit = err.fit_error().expect("a fit error");
    assert_eq!(fit.num_all_nodes, 5);
    assert_eq!(
        err.to_string(),
        "0/5 nodes are available: 2 node(s) had untolerated taint {gpu: true}, 3 Insufficient cpu. A could not help"
    );
    assert_eq!(calls(&log, "PostFilter"), ["PostFilter:A"]);
    assert_eq!(fit.diagnosis.unschedulable_plugins, ["A"]);
}

#[test]
fn sampling_checks_the_adaptive_share_and_rotates_the_start() {
    let filtered = Arc::new(parking_lot::Mutex::new(Vec::<String>::new()));
    let f2 = filtered.clone();
    let p = Profile::builder("default-scheduler")
        .plugin(FilterFn::new("Count", move |_, _, n| {
            f2.lock().push(n.node().name().to_owned());
            Status::SUCCESS
        }))
        .build()
        .unwrap();
    let mut s = Scheduler::builder().profile(p).parallelism(1).build();
    for i in 0..1000 {
        s.add_node(NodeBuilder::new(&format!("n{i:04}")).cpu("4").build()).unwrap();
    }
    s.schedule_pod(PodBuilder::new("a").build()).unwrap().abort("test");
    // 50 - 1000/125 = 42% of 1000 nodes.
    assert_eq!(filtered.lock().len(), 420);
    let first_round: Vec<String> = filtered.lock().drain(..).collect();
    s.schedule_pod(PodBuilder::new("b").build()).unwrap().abort("test");
    let second = filtered.lock().clone();
    assert_eq!(second.len(), 420);
    assert!(!first_round.contains(&second[0]), "the second cycle starts where the first stopped");
}

#[test]
fn permit_wait_is_released_by_allow_from_another_thread() {
    struct Gate;
    impl Plugin for Gate {
        fn name(&self) -> &str {
            "Gate"
        }
        fn register(self: Arc<Self>, p: &mut ExtensionPoints) {
            p.permit(self);
        }
    }
    impl PermitPlugin for Gate {
        fn permit(&self, _: &mut CycleState, _: &PodInfo, _: &str) -> PermitDecision {
            PermitDecision::Wait(Duration::from_secs(30))
        }
    }
    let mut s =
        Scheduler::builder().profile(Profile::builder("default-scheduler").plugin(Gate).build().unwrap()).build();
    s.add_node(NodeBuilder::new("n").cpu("4").build()).unwrap();
    let binding = s.schedule_pod(pod("p")).unwrap();
    assert!(binding.is_waiting());
    let handle = s.handle().clone();
    let waiter = std::thread::spawn(move || binding.run());
    while handle.waiting_pods().is_empty() {
        std::thread::yield_now();
    }
    assert_eq!(handle.waiting_pods().get("default/p").unwrap().pending_plugins(), ["Gate"]);
    assert!(handle.waiting_pods().allow("default/p", "Gate"));
    assert!(waiter.join().unwrap().is_ok());
    assert!(handle.waiting_pods().is_empty());
}

#[test]
fn permit_timeout_on_the_virtual_clock_rejects_and_unreserves() {
    let log = new_log();
    let mut a = Recorder::new("A", &log);
    a.permit = PermitDecision::Wait(Duration::from_secs(10));
    let clock = VirtualClock::new();
    let mut s = Scheduler::builder()
        .profile(Profile::builder("default-scheduler").plugin(a).build().unwrap())
        .clock(Arc::new(clock.clone()))
        .build();
    s.add_node(NodeBuilder::new("n").cpu("4").build()).unwrap();
    let before = cache_state(&s);
    let binding = s.schedule_pod(pod("p")).unwrap();
    let waiter = std::thread::spawn(move || binding.run());
    clock.advance(Duration::from_secs(11));
    let err = waiter.join().unwrap().unwrap_err();
    assert!(err.status.message().contains("timeout"), "{}", err.status);
    assert_eq!(calls(&log, "Unreserve"), ["Unreserve:A:n"]);
    assert_eq!(cache_state(&s), before);
}

#[test]
fn zero_permit_timeout_is_an_error() {
    let log = new_log();
    let mut a = Recorder::new("A", &log);
    a.permit = PermitDecision::Wait(Duration::ZERO);
    let mut s = scheduler_with(vec![a], 1);
    let err = s.schedule_pod(pod("p")).unwrap_err();
    assert!(err.to_string().contains("zero timeout"), "{err}");
    assert_eq!(s.cache().lock().pod_count(), 0);
}

#[test]
fn dropping_a_binding_cycle_releases_its_reservation() {
    let log = new_log();
    let mut s = scheduler_with(vec![Recorder::new("A", &log)], 1);
    let before = cache_state(&s);
    drop(s.schedule_pod(pod("p")).unwrap());
    assert_eq!(cache_state(&s), before);
    assert_eq!(calls(&log, "Unreserve").len(), 1);
}

#[test]
fn score_out_of_range_is_an_error() {
    let p = Profile::builder("default-scheduler").plugin(ScoreFn::new("TooHigh", |_, _, _| 101)).build().unwrap();
    let mut s = Scheduler::builder().profile(p).build();
    s.add_node(NodeBuilder::new("a").build()).unwrap();
    s.add_node(NodeBuilder::new("b").build()).unwrap();
    let err = s.schedule_pod(pod("p")).unwrap_err();
    assert!(err.to_string().contains("invalid score 101"), "{err}");
}

#[test]
fn weights_multiply_scores() {
    let p = Profile::builder("default-scheduler")
        .weighted(ScoreFn::new("PreferA", |_, _, n| if n.node().name() == "a" { 10 } else { 0 }), 1)
        .weighted(ScoreFn::new("PreferB", |_, _, n| if n.node().name() == "b" { 10 } else { 0 }), 2)
        .build()
        .unwrap();
    let mut s = Scheduler::builder().profile(p).build();
    s.add_node(NodeBuilder::new("a").build()).unwrap();
    s.add_node(NodeBuilder::new("b").build()).unwrap();
    assert_eq!(s.schedule_pod(pod("p")).unwrap().node(), "b");
}

#[test]
fn unknown_scheduler_name_and_no_nodes_are_errors() {
    let log = new_log();
    let mut s = scheduler_with(vec![Recorder::new("A", &log)], 0);
    assert!(matches!(s.schedule_pod(pod("p")), Err(ScheduleError::NoNodes)));
    let e = s.schedule_pod(PodBuilder::new("q").scheduler_name("nope").build()).unwrap_err();
    assert_eq!(e.to_string(), "no profile for scheduler name \"nope\"");
}

#[test]
fn tainted_nodes_are_avoided_by_a_closure_filter() {
    let p = Profile::builder("default-scheduler")
        .plugin(FilterFn::new("NoTaints", |_, _, n| {
            if n.node().spec.taints.is_empty() { Status::SUCCESS } else { Status::unresolvable("tainted") }
        }))
        .build()
        .unwrap();
    let mut s = Scheduler::builder().profile(p).build();
    s.add_node(NodeBuilder::new("t").taint("k", "v", TaintEffect::NoSchedule).build()).unwrap();
    s.add_node(NodeBuilder::new("ok").build()).unwrap();
    for i in 0..5 {
        assert_eq!(s.schedule_pod(pod(&format!("p{i}"))).unwrap().node(), "ok");
    }
}

/// A pod pinned to a few nodes by name (a DaemonSet's `matchFields`) is filtered on
/// those nodes only, in snapshot order, whether the scheduler looks the names up or
/// scans the node list: names absent from the cluster are skipped, a pinned node that
/// fails Filter is reported, and the rest of the cluster counts as "didn't satisfy".
#[test]
fn a_pod_pinned_to_a_few_nodes_by_name_is_filtered_there_only() {
    let handle = Handle::default();
    let s = Scheduler::builder()
        .profile(Profile::kube_default(&handle))
        .handle(handle)
        .percentage_of_nodes_to_score(100)
        .tie_break(TieBreak::First)
        .build();
    for i in 0..100 {
        let mut n = NodeBuilder::new(&format!("n{i:03}")).cpu("4").memory("8Gi");
        if i == 10 {
            n = n.unschedulable();
        }
        s.add_node(n.build()).unwrap();
    }
    let pinned = |names: &[&str]| -> schedkit::model::Pod {
        let values = names.iter().map(|n| format!("{n:?}")).collect::<Vec<_>>().join(",");
        let mut pod: schedkit::model::Pod = serde_json::from_str(&format!(
            r#"{{"metadata":{{"name":"ds","namespace":"default"}},"spec":{{"containers":[{{"name":"c"}}],
              "affinity":{{"nodeAffinity":{{"requiredDuringSchedulingIgnoredDuringExecution":
              {{"nodeSelectorTerms":[{{"matchFields":[{{"key":"metadata.name","operator":"In","values":[{values}]}}]}}]}}}}}}}}}}"#
        ))
        .unwrap();
        pod.spec.containers = PodBuilder::new("ds").cpu("1").build().spec.containers;
        pod
    };
    let mut s = s;
    // n010 is cordoned; n070 fits; "gone" is no node. With TieBreak::First and equal
    // scores the first feasible node in snapshot order wins.
    let info = Arc::new(PodInfo::new(pinned(&["n070", "gone", "n010", "n080"])).unwrap());
    let (node, _) = s.schedule_one(&info).map(|b| (b.node().to_owned(), b.abort("test"))).unwrap();
    assert_eq!(node, "n070");
    // Only the cordoned node: unschedulable, with upstream's per-node reasons.
    let info = Arc::new(PodInfo::new(pinned(&["n010"])).unwrap());
    let Err(err) = s.schedule_one(&info) else { panic!("no node fits") };
    let msg = err.to_string();
    assert!(msg.contains("0/100 nodes are available"), "{msg}");
    assert!(msg.contains("1 node(s) were unschedulable"), "{msg}");
    assert!(msg.contains("99 node(s) didn't satisfy plugin(s) [NodeAffinity]"), "{msg}");
}
