//! What a scheduler holds per node and per bound pod (issue 23, item 4): the
//! default profile over the synthetic cluster (the benches' nodes), then 30 bound
//! pods per node, with a snapshot taken after each step as a scheduling cycle takes
//! it. Bytes are the heap the scheduler keeps (node objects, `NodeInfo`s, the
//! snapshot, indexes, interned names), counted by a process-wide allocator, so the
//! figure does not depend on the machine's load or the allocator's page reuse.
//!
//! `cargo test --release --test memory_per_node -- --ignored --nocapture` prints the
//! same figures at 65,000 nodes (≈ 2 million pods).

use std::alloc::System;

use schedkit::framework::{Handle, Profile};
use schedkit::model::Pod;
use schedkit::scheduler::{Scheduler, TieBreak};
use schedkit::snapshot::PodInfo;
use schedkit::testing::PodBuilder;
use schedkit::trace::SyntheticCluster;
use stats_alloc::{INSTRUMENTED_SYSTEM, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

fn live_bytes() -> i64 {
    let s = GLOBAL.stats();
    s.bytes_allocated as i64 - s.bytes_deallocated as i64
}

/// Bound pods per node, as the issue asks (kubelet's default limit is 110).
const PODS_PER_NODE: usize = 30;

/// A bound pod as a ReplicaSet makes them: requests, an app label and the
/// template hash, owned by the node `node`.
fn bound_pod(i: usize, node: &str) -> Pod {
    let name = format!("web-{i:08}");
    let mut pod = PodBuilder::new(&name)
        .uid(&name)
        .cpu("250m")
        .memory("512Mi")
        .label("app", &format!("app-{}", i % 50))
        .label("pod-template-hash", &format!("h{:06x}", i % 500))
        .build();
    pod.spec.node_name = node.to_string();
    pod
}

/// Per-node and per-pod bytes for a cluster of `nodes` nodes.
struct PerNode {
    node_bytes: f64,
    pod_bytes: f64,
}

fn measure(nodes: usize) -> PerNode {
    let handle = Handle::default();
    let mut s = Scheduler::builder()
        .profile(Profile::kube_default(&handle))
        .handle(handle)
        .parallelism(1)
        .tie_break(TieBreak::Random)
        .build();
    let events = s.events();
    let probe = PodInfo::new(PodBuilder::new("probe").cpu("100m").build()).expect("valid pod");
    // One cycle before the first mark, so buffers every cycle reuses exist already.
    assert!(s.schedule_one(&probe).is_err(), "no nodes yet");
    let start = live_bytes();
    let cluster = SyntheticCluster::new(nodes);
    let mut names = Vec::with_capacity(nodes);
    for node in cluster.build() {
        names.push(node.metadata.name.clone());
        events.add_node(node).expect("node added");
    }
    // The names kept for placing pods are the test's, not the scheduler's.
    let names_bytes: i64 = names.iter().map(|n| n.capacity() as i64).sum::<i64>()
        + (names.capacity() * std::mem::size_of::<String>()) as i64;
    drop(s.schedule_one(&probe).expect("fits").abort("measured"));
    let with_nodes = live_bytes() - names_bytes;
    for (i, node) in (0..nodes * PODS_PER_NODE).map(|i| (i, &names[i % nodes])) {
        events.add_pod(bound_pod(i, node)).expect("bound pod added");
    }
    drop(s.schedule_one(&probe).expect("fits").abort("measured"));
    let with_pods = live_bytes() - names_bytes;
    PerNode {
        node_bytes: (with_nodes - start) as f64 / nodes as f64,
        pod_bytes: (with_pods - with_nodes) as f64 / (nodes * PODS_PER_NODE) as f64,
    }
}

fn report(nodes: usize) -> PerNode {
    let m = measure(nodes);
    println!(
        "{nodes} nodes: {:.0} B per node without pods, {:.0} B per bound pod ({PODS_PER_NODE} per node), \
         {:.0} B per node with its pods",
        m.node_bytes,
        m.pod_bytes,
        m.node_bytes + m.pod_bytes * PODS_PER_NODE as f64
    );
    m
}

/// The budget: ≤ 2 KiB per node, the pods excluded.
#[test]
fn a_node_costs_at_most_two_kib_and_a_pod_a_bounded_amount() {
    let m = report(2_000);
    assert!(m.node_bytes <= 2048.0, "{:.0} B per node, budget 2,048", m.node_bytes);
    // Not a budget of the issue: a ceiling that catches a pod suddenly costing
    // several times what it does today.
    assert!(m.pod_bytes <= 4096.0, "{:.0} B per bound pod", m.pod_bytes);
}

/// The 65,000-node figures (slow in a debug build; run with `--release`).
#[test]
#[ignore = "65,000 nodes and 1.95 million pods: run with --release -- --ignored"]
fn sixty_five_thousand_nodes() {
    let m = report(65_000);
    assert!(m.node_bytes <= 2048.0, "{:.0} B per node, budget 2,048", m.node_bytes);
}
