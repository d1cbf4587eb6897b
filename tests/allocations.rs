//! Steady-state allocations of a scheduling cycle do not grow with the node count:
//! a pod searched across every node, and a DaemonSet's pod pinned to one node through
//! the whole loop (queue pop to bind).
//!
//! One test per binary: the counting allocator is process-wide.

use std::alloc::System;

use schedkit::framework::{FilterFn, Handle, Profile, ScoreFn, Status};
use schedkit::model::Pod;
use schedkit::scheduler::{Scheduler, TieBreak};
use schedkit::snapshot::PodInfo;
use schedkit::testing::PodBuilder;
use schedkit::trace::synthetic_nodes;
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Allocations of one steady-state cycle (schedule + abort) on `nodes` nodes.
fn allocations_per_cycle(nodes: usize) -> Vec<usize> {
    let profile = Profile::builder("default-scheduler")
        .plugin(FilterFn::new("Fits", |_, pod, node| {
            if node.allocatable().milli_cpu - node.requested().milli_cpu >= pod.requests.milli_cpu {
                Status::SUCCESS
            } else {
                Status::unschedulable("Insufficient cpu")
            }
        }))
        .plugin(ScoreFn::new("Spread", |_, _, node| 100 - node.pods().len().min(100) as i64))
        .percentage_of_nodes_to_score(100)
        .build()
        .unwrap();
    let mut s = Scheduler::builder().profile(profile).parallelism(1).tie_break(TieBreak::First).build();
    for n in synthetic_nodes(nodes) {
        s.add_node(n).unwrap();
    }
    let pod = PodInfo::new(PodBuilder::new("p").cpu("1").memory("1Gi").build()).unwrap();
    // Warm up: buffers reach their size, the snapshot is built, the log has capacity.
    for _ in 0..300 {
        drop(s.schedule_one(&pod).unwrap().abort("warm-up"));
    }
    (0..20)
        .map(|_| {
            let region = Region::new(GLOBAL);
            let err = s.schedule_one(&pod).unwrap().abort("measure");
            drop(err);
            region.change().allocations
        })
        .collect()
}

/// A DaemonSet's pod as its controller writes it: one `matchFields` term on
/// `metadata.name`.
fn daemonset_pod(node: &str) -> Pod {
    let mut pod: Pod = serde_json::from_str(&format!(
        r#"{{"spec":{{"affinity":{{"nodeAffinity":{{"requiredDuringSchedulingIgnoredDuringExecution":
          {{"nodeSelectorTerms":[{{"matchFields":[
            {{"key":"metadata.name","operator":"In","values":["{node}"]}}]}}]}}}}}}}}}}"#
    ))
    .expect("valid pod");
    let built = PodBuilder::new("ds-pod").cpu("100m").memory("128Mi").build();
    pod.metadata = built.metadata;
    pod.spec.containers = built.spec.containers;
    pod
}

/// Allocations and bytes allocated by one steady-state pass of a DaemonSet's pod
/// through the default profile's whole loop on `nodes` nodes: `run_until_idle` pops
/// it, schedules it on its one node and binds it (the pod is added before and
/// deleted after, outside the counted region).
fn daemonset_allocations(nodes: usize) -> Vec<(usize, usize)> {
    let handle = Handle::default();
    let mut s = Scheduler::builder()
        .profile(Profile::kube_default(&handle))
        .handle(handle)
        .parallelism(1)
        .tie_break(TieBreak::First)
        .build();
    for n in synthetic_nodes(nodes) {
        s.add_node(n).unwrap();
    }
    let pod = daemonset_pod("node-00002");
    let mut pass = || {
        s.add_pod(pod.clone()).unwrap();
        let region = Region::new(GLOBAL);
        let run = s.run_until_idle();
        let change = region.change();
        assert_eq!(run.bound, 1, "the DaemonSet pod binds on {nodes} nodes");
        s.events().delete_pod("default/ds-pod").unwrap();
        (change.allocations, change.bytes_allocated)
    };
    for _ in 0..50 {
        pass();
    }
    (0..20).map(|_| pass()).collect()
}

fn median<T: Ord + Copy>(mut v: Vec<T>) -> T {
    v.sort_unstable();
    v[v.len() / 2]
}

#[test]
fn cycle_allocations_do_not_grow_with_nodes() {
    let small = allocations_per_cycle(100);
    let large = allocations_per_cycle(5000);
    let (s, l) = (median(small.clone()), median(large.clone()));
    assert_eq!(s, l, "per-cycle allocations: 100 nodes {small:?}, 5000 nodes {large:?}");
    assert!(s < 64, "a cycle should allocate a small constant amount, got {s}");
    println!("allocations per cycle: {s} (100 and 5000 nodes)");

    // The pinned pod: the same count and the same bytes whatever the cluster size
    // (an allocation sized by the node count would show in the bytes).
    let small = daemonset_allocations(100);
    let large = daemonset_allocations(5000);
    let (s, l) = (median(small.clone()), median(large.clone()));
    assert_eq!(s, l, "DaemonSet pod (allocations, bytes): 100 nodes {small:?}, 5000 nodes {large:?}");
    println!("DaemonSet pod, queue pop to bind: {} allocations, {} bytes (100 and 5000 nodes)", s.0, s.1);
}
