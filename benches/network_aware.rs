//! NetworkOverhead and TopologicalSort on upstream's benchmark shape
//! (scheduler-plugins `networkoverhead_test.go`, `BenchmarkNetworkOverhead*`): an
//! AppGroup of 10 workloads with 10 placed pods, 5 regions and 10 zones, 5,000 nodes.
//!
//! `cargo bench --bench network_aware` (ids: `network_aware/<plugin>/<what>`)
#![expect(missing_docs, reason = "criterion_group! generates an undocumented pub fn")]

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::{Value, json};

use schedkit::framework::{
    CycleState, FilterPlugin, NodeScore, PreFilterPlugin, QueueSortPlugin, QueuedPodInfo, ScorePlugin,
};
use schedkit::plugins::network_aware::{
    APP_GROUP_LABEL, APP_GROUP_SELECTOR_LABEL, AppGroup, NetworkAwareStore, NetworkOverhead, NetworkOverheadArgs,
    NetworkTopology, TOPOLOGY_KEY_REGION, TOPOLOGY_KEY_ZONE, TopologicalSort, TopologicalSortArgs,
};
use schedkit::snapshot::{PodInfo, Snapshot};
use schedkit::testing::{ClusterBuilder, NodeBuilder, PodBuilder};

const NODES: usize = 5000;

/// All-pairs costs: regions R1..R5 at 50, zones Z1..Z10 at 10 (upstream
/// `GetNetworkTopologyCR`, with its second list keyed by zone as intended).
fn topology() -> NetworkTopology {
    let list = |prefix: &str, n: usize, cost: i64| -> Vec<Value> {
        (1..=n)
            .map(|o| {
                let costs: Vec<Value> = (1..=n)
                    .filter(|&d| d != o)
                    .map(|d| json!({"destination": format!("{prefix}{d}"), "networkCost": cost}))
                    .collect();
                json!({"origin": format!("{prefix}{o}"), "costList": costs})
            })
            .collect()
    };
    NetworkTopology::from_json(&json!({"metadata": {"name": "nt-test"}, "spec": {"configmapName": "",
        "weights": [{"name": "UserDefined", "topologyList": [
            {"topologyKey": TOPOLOGY_KEY_REGION, "originList": list("R", 5, 50)},
            {"topologyKey": TOPOLOGY_KEY_ZONE, "originList": list("Z", 10, 10)}]}]}}))
    .unwrap()
}

/// Upstream's onlineboutique AppGroup without its 11th workload: p1 depends on seven,
/// p8 on six, p9 on one.
fn app_group(max_network_cost: i64) -> AppGroup {
    let deps = |sels: &[&str]| -> Vec<Value> {
        sels.iter()
            .map(|s| json!({"workload": {"kind": "Deployment", "name": s, "selector": s}, "maxNetworkCost": max_network_cost}))
            .collect()
    };
    let workloads: Vec<Value> = (1..=10)
        .map(|i| {
            let sel = format!("p{i}");
            let d = match i {
                1 => deps(&["p2", "p3", "p4", "p6", "p8", "p9", "p10"]),
                8 => deps(&["p2", "p3", "p4", "p5", "p6", "p7"]),
                9 => deps(&["p3"]),
                _ => Vec::new(),
            };
            json!({"workload": {"kind": "Deployment", "name": sel, "selector": sel}, "dependencies": d})
        })
        .collect();
    AppGroup::from_json(&json!({"metadata": {"name": "onlineboutique"},
        "spec": {"numMembers": 10, "topologySortingAlgorithm": "KahnSort", "workloads": workloads}}))
    .unwrap()
    .with_topology_order()
}

fn member(sel: &str, name: &str) -> PodBuilder {
    PodBuilder::new(name).label(APP_GROUP_LABEL, "onlineboutique").label(APP_GROUP_SELECTOR_LABEL, sel)
}

/// 5,000 nodes in pseudo-random regions and zones, the 10 pods of upstream's benchmark.
fn cluster() -> Snapshot {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let places: Vec<(u64, u64)> = (0..NODES).map(|_| (next() % 5 + 1, next() % 10 + 1)).collect();
    let hosts = ["n-2", "n-5", "n-1", "n-9", "n-5", "n-1", "n-2", "n-5", "n-1", "n-2"];
    let mut c = ClusterBuilder::new().nodes(NODES, |i| {
        NodeBuilder::new(&format!("n-{}", i + 1))
            .cpu("8")
            .memory("16Gi")
            .label(TOPOLOGY_KEY_REGION, &format!("R{}", places[i].0))
            .label(TOPOLOGY_KEY_ZONE, &format!("Z{}", places[i].1))
    });
    for (i, host) in hosts.iter().enumerate() {
        c = c.pod_on(host, member(&format!("p{}", i + 1), &format!("p{}-placed", i + 1)));
    }
    c.build().unwrap()
}

fn plugin(max_network_cost: i64) -> NetworkOverhead {
    let store = Arc::new(NetworkAwareStore::new());
    store.add_app_group(app_group(max_network_cost)).unwrap();
    store.add_network_topology(topology()).unwrap();
    NetworkOverhead::new(
        store,
        NetworkOverheadArgs { network_topology_name: "nt-test".into(), ..NetworkOverheadArgs::default() },
    )
}

/// Filter then Score on every node, then NormalizeScore; returns the feasible count.
fn filter_score(
    p: &NetworkOverhead,
    state: &CycleState,
    pod: &PodInfo,
    snap: &Snapshot,
    scores: &mut [NodeScore],
) -> usize {
    let mut feasible = 0;
    for (slot, node) in scores.iter_mut().zip(snap.nodes()) {
        if p.filter(state, pod, node).is_success() {
            feasible += 1;
        }
        slot.score = p.score(state, pod, node).unwrap();
    }
    let _ = p.normalize(state, pod, scores);
    feasible
}

fn network_overhead(c: &mut Criterion) {
    let snap = cluster();
    let pod = PodInfo::new(member("p1", "p1-new").build()).unwrap();
    let mut scores: Vec<NodeScore> = snap.nodes().iter().map(|n| NodeScore { name: n.name(), score: 0 }).collect();
    let mut g = c.benchmark_group("network_aware/network_overhead");
    g.throughput(Throughput::Elements(NODES as u64));
    // maxNetworkCost 60: every dependency is met, every node passes (no allocation).
    // maxNetworkCost 0 (upstream's tables): most nodes are rejected, each with its message.
    for (id, max) in [("5000_nodes", 60), ("5000_nodes_rejecting", 0)] {
        let p = plugin(max);
        let mut state = CycleState::new();
        assert!(p.pre_filter(&mut state, &pod, &snap).1.is_success());
        let feasible = filter_score(&p, &state, &pod, &snap, &mut scores);
        assert!(if max > 0 { feasible == NODES } else { feasible < NODES / 2 }, "{feasible} feasible");
        g.bench_function(format!("filter_score/{id}"), |b| {
            b.iter(|| black_box(filter_score(&p, &state, &pod, &snap, &mut scores)));
        });
        g.bench_function(format!("pre_filter/{id}"), |b| {
            b.iter(|| {
                let mut s = CycleState::new();
                black_box(p.pre_filter(&mut s, &pod, &snap).1.is_success())
            });
        });
    }
    g.finish();
}

fn topological_sort(c: &mut Criterion) {
    let store = Arc::new(NetworkAwareStore::new());
    store.add_app_group(app_group(0)).unwrap();
    let ts = TopologicalSort::new(store, &TopologicalSortArgs::default());
    let q = |sel: &str| QueuedPodInfo::new(Arc::new(PodInfo::new(member(sel, sel).build()).unwrap()), Duration::ZERO);
    let (a, b) = (q("p3"), q("p9"));
    c.bench_function("network_aware/topological_sort/less_same_app_group", |bch| {
        bch.iter(|| black_box(ts.less(black_box(&a), black_box(&b))));
    });
}

criterion_group!(benches, network_overhead, topological_sort);
criterion_main!(benches);
