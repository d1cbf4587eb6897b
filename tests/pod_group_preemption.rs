//! Workload-aware preemption (gate `WorkloadAwarePreemption`) through the scheduler
//! loop: victims chosen for the whole gang on a copy of the snapshot, every member
//! nominated, the group waiting on preemption; groups with topology constraints and
//! profiles without DefaultPreemption refused with upstream's messages; a failed
//! attempt leaves the cache, the snapshot and the cluster untouched.
//!
//! Upstream: `pkg/scheduler/schedule_one_podgroup.go` (`podGroupCycle`,
//! `runWorkloadAwarePreemption`); the victim search follows KEP-5710 §"Preemption
//! algorithm" (see `scheduler::group_preemption`).

use std::sync::Arc;

use schedkit::framework::{Feature, FeatureGates, Handle, PluginRef, Profile, RecordingEvictor, VirtualClock};
use schedkit::model::Pod;
use schedkit::model::workload::PodGroup;
use schedkit::plugins::{default_profile_config, default_registry};
use schedkit::scheduler::{PodState, Scheduler};
use schedkit::testing::{NodeBuilder, PodBuilder};

fn gates() -> FeatureGates {
    FeatureGates::default()
        .with(Feature::GenericWorkload, true)
        .with(Feature::GangScheduling, true)
        .with(Feature::WorkloadAwarePreemption, true)
}

fn handle() -> (Handle, Arc<RecordingEvictor>) {
    let handle = Handle::new(Arc::new(VirtualClock::new()));
    handle.set_feature_gates(gates());
    let evictor = Arc::new(RecordingEvictor::default());
    handle.preemption().set_evictor(evictor.clone());
    (handle, evictor)
}

/// Two 4-CPU nodes; on each a 3-CPU pod of priority 0; on n1 also a 1-CPU pod of
/// priority 50.
fn scheduler(profile: impl FnOnce(&Handle) -> Profile) -> (Scheduler, Arc<RecordingEvictor>) {
    let (handle, evictor) = handle();
    let p = profile(&handle);
    let s = Scheduler::builder().handle(handle).profile(p).build();
    for n in ["n0", "n1"] {
        s.add_node(NodeBuilder::new(n).cpu("4").memory("64Gi").pods(110).build()).unwrap();
    }
    s.add_pod(PodBuilder::new("low-0").uid("low-0").cpu("3").priority(0).node_name("n0").build()).unwrap();
    s.add_pod(PodBuilder::new("low-1").uid("low-1").cpu("3").priority(0).node_name("n1").build()).unwrap();
    s.add_pod(PodBuilder::new("mid").uid("mid").cpu("1").priority(50).node_name("n1").build()).unwrap();
    (s, evictor)
}

fn member(name: &str, cpu: &str) -> Pod {
    PodBuilder::new(name).uid(name).cpu(cpu).priority(100).pod_group_name("job").build()
}

/// (node, requested milli-CPU, pods) per node.
type NodeUse = Vec<(String, i64, usize)>;

/// [`NodeUse`] from the cache, and from the handle's snapshot when a cycle has made one.
fn cluster_state(s: &Scheduler) -> (NodeUse, Option<NodeUse>) {
    let cache = s.cache().lock();
    let from_cache = ["n0", "n1"]
        .iter()
        .filter_map(|n| cache.node_info(n))
        .map(|n| (n.node().name().to_owned(), n.requested().milli_cpu, n.pods().len()))
        .collect();
    let snap = s.handle().snapshot();
    let mut from_snap: NodeUse =
        snap.nodes().iter().map(|n| (n.node().name().to_owned(), n.requested().milli_cpu, n.pods().len())).collect();
    from_snap.sort();
    (from_cache, (!from_snap.is_empty()).then_some(from_snap))
}

/// The cache as before, and the snapshot the same as the cache.
fn unchanged(s: &Scheduler, before: &(NodeUse, Option<NodeUse>)) {
    let (cache, snap) = cluster_state(s);
    assert_eq!(cache, before.0, "cache");
    assert_eq!(snap.as_ref(), Some(&before.0), "snapshot");
}

fn condition_message(s: &Scheduler) -> String {
    let pg = s.handle().pod_groups().pod_group("default", "job").unwrap();
    let c = pg.scheduled_condition().unwrap();
    assert_eq!((c.status.as_str(), c.reason.as_str()), ("False", "Unschedulable"), "{c:?}");
    c.message.clone()
}

#[test]
fn victims_are_chosen_for_the_whole_gang() {
    let (mut s, evictor) = scheduler(Profile::kube_default);
    s.events().add_pod_group(PodGroup::gang("default", "job", 2));
    s.add_pod(member("w0", "3")).unwrap();
    s.add_pod(member("w1", "3")).unwrap();
    let before = cluster_state(&s);
    let run = s.run_until_idle();
    assert_eq!(run.bound, 0, "{run:?}");
    // The lowest priority level suffices (the priority-50 pod stays), and neither
    // priority-0 pod can be reprieved: the gang needs both nodes.
    let mut evicted: Vec<String> = evictor.take().into_iter().map(|(_, victim)| victim).collect();
    evicted.sort();
    assert_eq!(evicted, ["low-0", "low-1"]);
    let nominator = s.handle().preemption().nominator();
    let mut nodes: Vec<String> =
        ["w0", "w1"].iter().map(|w| nominator.nominated_node(w).expect("nominated").as_str().to_owned()).collect();
    nodes.sort();
    assert_eq!(nodes, ["n0", "n1"], "one member per node");
    assert_eq!(condition_message(&s), "pod group is waiting for preemption to complete");
    // Eviction is the caller's: the cache (and the snapshot) are unchanged.
    unchanged(&s, &before);
    assert!(matches!(s.pod_state("w0"), Some(PodState::Unschedulable | PodState::Backoff | PodState::Active)));
}

#[test]
fn a_failed_attempt_changes_nothing() {
    let (mut s, evictor) = scheduler(Profile::kube_default);
    s.events().add_pod_group(PodGroup::gang("default", "job", 2));
    // 5 CPUs never fit a 4-CPU node, whatever is preempted.
    s.add_pod(member("w0", "5")).unwrap();
    s.add_pod(member("w1", "5")).unwrap();
    let before = cluster_state(&s);
    let run = s.run_until_idle();
    assert_eq!(run.bound, 0, "{run:?}");
    assert!(evictor.take().is_empty());
    assert!(s.handle().preemption().nominator().nominated_node("w0").is_none());
    unchanged(&s, &before);
    let msg = condition_message(&s);
    assert!(msg.contains(schedkit::scheduler::MSG_NO_VICTIMS), "{msg}");
}

#[test]
fn groups_with_topology_constraints_are_refused() {
    let (mut s, evictor) = scheduler(Profile::kube_default);
    s.events().add_pod_group(PodGroup::gang("default", "job", 2).with_topology("topology.kubernetes.io/rack"));
    s.add_pod(member("w0", "3")).unwrap();
    s.add_pod(member("w1", "3")).unwrap();
    let before = cluster_state(&s);
    assert_eq!(s.run_until_idle().bound, 0);
    assert!(evictor.take().is_empty());
    unchanged(&s, &before);
    let msg = condition_message(&s);
    assert!(
        msg.contains("workload aware preemption is not supported for pod groups with scheduling constraints"),
        "{msg}"
    );
}

#[test]
fn without_default_preemption_it_is_disabled() {
    let (mut s, evictor) = scheduler(|h| {
        let mut cfg = default_profile_config();
        cfg.plugins.post_filter.disabled.push(PluginRef { name: "DefaultPreemption".into(), weight: None });
        let p = default_registry().build_profile(&cfg, h).unwrap();
        assert!(!p.post_filter_plugins().contains(&"DefaultPreemption"), "{:?}", p.post_filter_plugins());
        p
    });
    s.events().add_pod_group(PodGroup::gang("default", "job", 2));
    s.add_pod(member("w0", "3")).unwrap();
    s.add_pod(member("w1", "3")).unwrap();
    assert_eq!(s.run_until_idle().bound, 0);
    assert!(evictor.take().is_empty());
    let msg = condition_message(&s);
    assert!(
        msg.contains("default preemption plugin is not registered, workload aware preemption is disabled"),
        "{msg}"
    );
}

#[test]
fn with_the_gate_off_members_preempt_one_by_one() {
    // The legacy path: each member's own PostFilter nominates and evicts; the group then
    // waits on preemption as well.
    let (handle, evictor) = handle();
    handle.set_feature_gates(gates().with(Feature::WorkloadAwarePreemption, false));
    let p = Profile::kube_default(&handle);
    let mut s = Scheduler::builder().handle(handle).profile(p).build();
    for n in ["n0", "n1"] {
        s.add_node(NodeBuilder::new(n).cpu("4").memory("64Gi").pods(110).build()).unwrap();
    }
    s.add_pod(PodBuilder::new("low-0").uid("low-0").cpu("3").priority(0).node_name("n0").build()).unwrap();
    s.add_pod(PodBuilder::new("low-1").uid("low-1").cpu("3").priority(0).node_name("n1").build()).unwrap();
    s.events().add_pod_group(PodGroup::gang("default", "job", 2));
    s.add_pod(member("w0", "3")).unwrap();
    s.add_pod(member("w1", "3")).unwrap();
    assert_eq!(s.run_until_idle().bound, 0);
    assert!(!evictor.take().is_empty());
    assert_eq!(condition_message(&s), "pod group is waiting for preemption to complete");
}
