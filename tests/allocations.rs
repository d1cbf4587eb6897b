//! Steady-state allocations of a scheduling cycle do not grow with the node count.
//!
//! One test per binary: the counting allocator is process-wide.

use std::alloc::System;

use schedkit::framework::{FilterFn, Profile, ScoreFn, Status};
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

#[test]
fn cycle_allocations_do_not_grow_with_nodes() {
    let small = allocations_per_cycle(100);
    let large = allocations_per_cycle(5000);
    let median = |mut v: Vec<usize>| {
        v.sort_unstable();
        v[v.len() / 2]
    };
    let (s, l) = (median(small.clone()), median(large.clone()));
    assert_eq!(s, l, "per-cycle allocations: 100 nodes {small:?}, 5000 nodes {large:?}");
    assert!(s < 64, "a cycle should allocate a small constant amount, got {s}");
    println!("allocations per cycle: {s} (100 and 5000 nodes)");
}
