//! The v1.36 pod-group cycle end to end through the scheduler loop: gangs placed all
//! or nothing, PreEnqueue holding pods whose PodGroup is missing or short of
//! `minCount` (upstream's reasons), topology placements, "no placement" with a
//! diagnosis, the gates-off path unchanged, and properties over random capacities and
//! arrival orders (all-or-nothing; a failed group cycle leaves the cache and the
//! snapshot as they were).

use std::sync::Arc;

use proptest::prelude::*;
use schedkit::framework::{Clock, Feature, FeatureGates, Handle, Profile, VirtualClock};
use schedkit::model::workload::PodGroup;
use schedkit::model::{Node, Pod};
use schedkit::scheduler::{AttemptOutcome, PodState, Scheduler};
use schedkit::testing::{NodeBuilder, PodBuilder};

fn gates(topology: bool) -> FeatureGates {
    FeatureGates::default()
        .with(Feature::GenericWorkload, true)
        .with(Feature::GangScheduling, true)
        .with(Feature::TopologyAwareWorkloadScheduling, topology)
}

fn scheduler(gates: FeatureGates) -> (Scheduler, VirtualClock) {
    let clock = VirtualClock::new();
    let handle = Handle::new(Arc::new(clock.clone()));
    handle.set_feature_gates(gates);
    let profile = Profile::kube_default(&handle);
    (Scheduler::builder().handle(handle).profile(profile).build(), clock)
}

fn node(name: &str, cpu: &str) -> Node {
    NodeBuilder::new(name).cpu(cpu).memory("64Gi").pods(110).build()
}

fn member(name: &str, group: &str, cpu: &str) -> Pod {
    PodBuilder::new(name).uid(name).cpu(cpu).pod_group_name(group).build()
}

/// (node, requested milli-CPU, pod count) per node.
type NodeUse = Vec<(String, i64, usize)>;

/// [`NodeUse`] from the cache and from the handle's snapshot.
fn cluster_state(s: &Scheduler) -> (NodeUse, NodeUse) {
    let cache = s.cache().lock();
    let snap = s.handle().snapshot();
    let mut from_cache: Vec<_> = snap
        .nodes()
        .iter()
        .filter_map(|n| cache.node_info(n.node().name()))
        .map(|n| (n.node().name().to_owned(), n.requested().milli_cpu, n.pods().len()))
        .collect();
    from_cache.sort();
    let mut from_snap: Vec<_> =
        snap.nodes().iter().map(|n| (n.node().name().to_owned(), n.requested().milli_cpu, n.pods().len())).collect();
    from_snap.sort();
    (from_cache, from_snap)
}

#[test]
fn a_gang_is_bound_whole() {
    let (mut s, _) = scheduler(gates(false));
    for i in 0..3 {
        s.add_node(node(&format!("n{i}"), "4")).unwrap();
    }
    s.events().add_pod_group(PodGroup::gang("default", "job", 3));
    for i in 0..3 {
        s.add_pod(member(&format!("w{i}"), "job", "3")).unwrap();
    }
    let run = s.run_until_idle();
    assert_eq!((run.bound, run.failed, run.waiting), (3, 0, 0), "{run:?}");
    let pg = s.handle().pod_groups().pod_group("default", "job").unwrap();
    let c = pg.scheduled_condition().unwrap();
    assert_eq!((c.status.as_str(), c.reason.as_str()), ("True", "Scheduled"));
}

#[test]
fn a_gang_that_does_not_fit_takes_nothing() {
    let (mut s, _) = scheduler(gates(false));
    for i in 0..2 {
        s.add_node(node(&format!("n{i}"), "4")).unwrap();
    }
    s.events().add_pod_group(PodGroup::gang("default", "job", 3));
    for i in 0..3 {
        s.add_pod(member(&format!("w{i}"), "job", "3")).unwrap();
    }
    let run = s.run_until_idle();
    assert_eq!((run.bound, run.waiting), (0, 0), "{run:?}");
    assert_eq!(run.failed, 3);
    for i in 0..3 {
        // Back in the queue: GangScheduling's Permit asked for the siblings to be
        // activated (upstream `Activate`), so they retry after backoff.
        let state = s.pod_state(&format!("w{i}"));
        assert!(matches!(state, Some(PodState::Unschedulable | PodState::Backoff)), "{state:?}");
    }
    let (cache, snap) = cluster_state(&s);
    assert!(cache.iter().chain(&snap).all(|(_, cpu, pods)| *cpu == 0 && *pods == 0), "{cache:?} {snap:?}");
    let pg = s.handle().pod_groups().pod_group("default", "job").unwrap();
    let c = pg.scheduled_condition().unwrap();
    assert_eq!((c.status.as_str(), c.reason.as_str()), ("False", "Unschedulable"), "{c:?}");
}

#[test]
fn basic_groups_bind_what_fits() {
    let (mut s, _) = scheduler(gates(false));
    s.add_node(node("n0", "4")).unwrap();
    s.events().add_pod_group(PodGroup::basic("default", "svc"));
    for i in 0..3 {
        s.add_pod(member(&format!("w{i}"), "svc", "2")).unwrap();
    }
    let run = s.run_until_idle();
    assert_eq!((run.bound, run.failed), (2, 1), "{run:?}");
}

#[test]
fn missing_pod_group_waits_with_upstreams_reason() {
    let (mut s, _) = scheduler(gates(false));
    s.add_node(node("n0", "8")).unwrap();
    s.add_pod(member("w0", "job", "1")).unwrap();
    assert_eq!(s.pod_state("w0"), Some(PodState::Gated));
    assert_eq!(s.queue().lock().unschedulable_plugins("w0"), ["GangScheduling"]);
    assert_eq!(s.run_until_idle().attempts, 0);
    // The PodGroup appears: the gated pod re-runs PreEnqueue and is scheduled.
    assert_eq!(s.events().add_pod_group(PodGroup::gang("default", "job", 1)), 1);
    assert_eq!(s.run_until_idle().bound, 1);
}

#[test]
fn min_count_above_the_pods_waits_until_they_come() {
    let (mut s, _) = scheduler(gates(false));
    s.add_node(node("n0", "8")).unwrap();
    s.events().add_pod_group(PodGroup::gang("default", "job", 3));
    s.add_pod(member("w0", "job", "1")).unwrap();
    s.add_pod(member("w1", "job", "1")).unwrap();
    assert_eq!(s.pod_state("w0"), Some(PodState::Gated));
    assert_eq!(s.run_until_idle().attempts, 0);
    s.add_pod(member("w2", "job", "1")).unwrap();
    let run = s.run_until_idle();
    assert_eq!(run.bound, 3, "{run:?}");
}

#[test]
fn a_topology_constraint_keeps_the_gang_in_one_rack() {
    let (mut s, _) = scheduler(gates(true));
    for r in 0..3 {
        for i in 0..2 {
            let n =
                NodeBuilder::new(&format!("r{r}-n{i}")).cpu(if r == 1 { "8" } else { "4" }).memory("64Gi").pods(110);
            s.add_node(n.label("topology.kubernetes.io/rack", &format!("rack-{r}")).build()).unwrap();
        }
    }
    s.events().add_pod_group(PodGroup::gang("default", "job", 4).with_topology("topology.kubernetes.io/rack"));
    for i in 0..4 {
        s.add_pod(member(&format!("w{i}"), "job", "3")).unwrap();
    }
    let run = s.run_until_idle();
    assert_eq!(run.bound, 4, "{run:?}");
    let cache = s.cache().lock();
    let racks: Vec<&str> = (0..4).map(|i| cache.pod_node(&format!("w{i}")).unwrap()).map(|n| &n[..2]).collect();
    assert!(racks.iter().all(|r| *r == "r1"), "{racks:?}");
}

#[test]
fn an_absent_topology_key_means_no_placement_with_a_diagnosis() {
    let (mut s, _) = scheduler(gates(true));
    s.add_node(node("n0", "8")).unwrap();
    s.events().add_pod_group(PodGroup::gang("default", "job", 1).with_topology("example.com/nvlink-domain"));
    s.add_pod(member("w0", "job", "1")).unwrap();
    let a = s.schedule_next().unwrap();
    let AttemptOutcome::Failed { error, .. } = a.outcome else { panic!("{:?}", a.outcome) };
    let msg = error.to_string();
    assert!(msg.contains("0/0 placements are available"), "{msg}");
    assert!(msg.contains("no node has the topology label \"example.com/nvlink-domain\""), "{msg}");
}

#[test]
fn with_the_gates_off_group_pods_schedule_one_by_one() {
    let (mut s, _) = scheduler(FeatureGates::default());
    s.add_node(node("n0", "4")).unwrap();
    s.events().add_pod_group(PodGroup::gang("default", "job", 3));
    for i in 0..3 {
        s.add_pod(member(&format!("w{i}"), "job", "2")).unwrap();
    }
    let run = s.run_until_idle();
    // No gang semantics: two fit, one does not, as for any pods.
    assert_eq!((run.bound, run.failed), (2, 1), "{run:?}");
}

#[test]
fn a_gang_waits_at_permit_and_times_out_on_the_scheduler_clock() {
    // Members scheduled one by one by the ordinary cycle (schedule_pod bypasses the
    // queue): the first waits at Permit until its siblings come, or 5 minutes.
    let (mut s, clock) = scheduler(gates(false));
    s.add_node(node("n0", "8")).unwrap();
    s.events().add_pod_group(PodGroup::gang("default", "job", 2));
    s.add_pod(member("w0", "job", "1")).unwrap();
    s.add_pod(member("w1", "job", "1")).unwrap();
    // Take w1 out of the queue so only w0's cycle runs.
    let w1 = s.queue().lock().pop_specific("w1");
    assert!(w1.is_some());
    let b = s.schedule_pod(member("w0b", "job", "1")).unwrap();
    assert!(b.is_waiting());
    assert_eq!(b.permit_deadline(), Some(clock.now() + schedkit::plugins::gang_scheduling::PERMIT_TIMEOUT));
    b.abort("test over");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// A gang is placed all or nothing whatever the nodes' sizes and the order its
    /// members (and unrelated pods) arrive in; a failed group cycle leaves the cache
    /// and the snapshot exactly as before.
    #[test]
    fn gangs_are_all_or_nothing(
        caps in proptest::collection::vec(1u32..=6, 1..5),
        sizes in proptest::collection::vec(1u32..=4, 2..6),
        min_extra in 0usize..2,
        order in proptest::collection::vec(any::<u8>(), 8),
    ) {
        let (mut s, _) = scheduler(gates(false));
        for (i, c) in caps.iter().enumerate() {
            s.add_node(node(&format!("n{i}"), &c.to_string())).unwrap();
        }
        let n = sizes.len();
        let min = (n - min_extra.min(n - 1)) as i32;
        s.events().add_pod_group(PodGroup::gang("default", "job", min));
        let mut idx: Vec<usize> = (0..n).collect();
        idx.sort_by_key(|&i| order[i % order.len()].wrapping_add(i as u8));
        for &i in &idx {
            s.add_pod(member(&format!("w{i}"), "job", &sizes[i].to_string())).unwrap();
        }
        let run = s.run_until_idle();
        prop_assert_eq!(run.waiting, 0);
        let bound = (0..n).filter(|i| s.pod_state(&format!("w{i}")) == Some(PodState::Bound)).count();
        prop_assert!(bound == 0 || bound >= min as usize, "bound {} of min {}", bound, min);
        // Capacity respected.
        let (cache, _) = cluster_state(&s);
        for ((_, used, _), cap) in cache.iter().zip(&caps) {
            prop_assert!(*used <= i64::from(*cap) * 1000);
        }
        if bound == 0 {
            // Nothing else runs on these nodes: the cache and the snapshot are empty again.
            let (cache, snap) = cluster_state(&s);
            prop_assert!(cache.iter().chain(&snap).all(|(_, cpu, pods)| *cpu == 0 && *pods == 0), "{:?} {:?}", cache, snap);
            prop_assert_eq!(snap.len(), caps.len());
        }
    }
}
