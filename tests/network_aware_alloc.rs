//! NetworkOverhead allocates nothing per node: PreFilter precomputes, Filter and Score
//! only look up. One test per binary: the counting allocator is process-wide.

use std::alloc::System;
use std::sync::Arc;

use serde_json::json;
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

use schedkit::framework::{CycleState, FilterPlugin, NodeScore, PreFilterPlugin, ScorePlugin};
use schedkit::plugins::network_aware::{
    APP_GROUP_LABEL, APP_GROUP_SELECTOR_LABEL, AppGroup, NetworkAwareStore, NetworkOverhead, NetworkOverheadArgs,
    NetworkTopology, TOPOLOGY_KEY_REGION, TOPOLOGY_KEY_ZONE,
};
use schedkit::snapshot::PodInfo;
use schedkit::testing::{ClusterBuilder, NodeBuilder, PodBuilder};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

#[test]
fn filter_and_score_allocate_nothing_per_node() {
    let store = Arc::new(NetworkAwareStore::new());
    let dep = |s: &str| json!({"workload": {"kind": "D", "name": s, "selector": s}, "maxNetworkCost": 60});
    store
        .add_app_group(
            AppGroup::from_json(&json!({"metadata": {"name": "g"}, "spec": {"numMembers": 3,
                "topologySortingAlgorithm": "KahnSort", "workloads": [
                    {"workload": {"kind": "D", "name": "a", "selector": "a"}, "dependencies": [dep("b"), dep("c")]}]}}))
            .unwrap(),
        )
        .unwrap();
    let origins = |prefix: &str, n: usize, cost: i64| {
        (0..n)
            .map(|o| {
                json!({"origin": format!("{prefix}{o}"), "costList": (0..n).filter(|&d| d != o)
                .map(|d| json!({"destination": format!("{prefix}{d}"), "networkCost": cost})).collect::<Vec<_>>()})
            })
            .collect::<Vec<_>>()
    };
    store
        .add_network_topology(
            NetworkTopology::from_json(&json!({"metadata": {"name": "nt-default"}, "spec": {"configmapName": "",
                "weights": [{"name": "UserDefined", "topologyList": [
                    {"topologyKey": TOPOLOGY_KEY_REGION, "originList": origins("r", 3, 50)},
                    {"topologyKey": TOPOLOGY_KEY_ZONE, "originList": origins("z", 6, 10)}]}]}}))
            .unwrap(),
        )
        .unwrap();
    let member =
        |sel: &str, name: &str| PodBuilder::new(name).label(APP_GROUP_LABEL, "g").label(APP_GROUP_SELECTOR_LABEL, sel);
    let snap = ClusterBuilder::new()
        .nodes(2000, |i| {
            NodeBuilder::new(&format!("n{i}"))
                .cpu("8")
                .label(TOPOLOGY_KEY_REGION, &format!("r{}", i % 3))
                .label(TOPOLOGY_KEY_ZONE, &format!("z{}", i % 6))
        })
        .pod_on("n1", member("b", "b0"))
        .pod_on("n4", member("c", "c0"))
        .pod_on("n7", member("b", "b1"))
        .build()
        .unwrap();
    let plugin = NetworkOverhead::new(store, NetworkOverheadArgs::default());
    let pod = PodInfo::new(member("a", "a0").build()).unwrap();
    let mut state = CycleState::new();
    assert!(plugin.pre_filter(&mut state, &pod, &snap).1.is_success());
    let mut scores: Vec<NodeScore> = snap.nodes().iter().map(|n| NodeScore { name: n.name(), score: 0 }).collect();

    let region = Region::new(GLOBAL);
    let mut feasible = 0;
    for (slot, node) in scores.iter_mut().zip(snap.nodes()) {
        feasible += usize::from(plugin.filter(&state, &pod, node).is_success());
        slot.score = plugin.score(&state, &pod, node).unwrap();
    }
    let _ = plugin.normalize(&state, &pod, &mut scores);
    let allocations = region.change().allocations;

    assert_eq!(feasible, 2000);
    assert!(scores.iter().any(|s| s.score == 100) && scores.iter().any(|s| s.score < 100));
    assert_eq!(allocations, 0, "Filter + Score + NormalizeScore over 2000 nodes");
}
