//! Criterion benches for NodeResourceTopologyMatch: Filter (container scope) and Score
//! on a node with 2 NUMA zones, per node; and the default profile with the plugin
//! added, per pod, on 5,000 nodes with adaptive sampling (compare with
//! `profile/default/adaptive_pct_1thread/5000` from `benches/plugins.rs`).
//!
//! Run: `cargo bench --bench nrt -- --warm-up-time 1 --measurement-time 3`

#![expect(missing_docs, reason = "criterion_group! generates an undocumented function")]

mod support;

use std::hint::black_box;
use std::sync::Arc;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use schedkit::framework::{CycleState, FilterPlugin, Handle, PluginRef, ScorePlugin};
use schedkit::model::{Node, Pod, ResourceList};
use schedkit::plugins::node_resource_topology::derive::{DeriveOptions, nrt_from_graph};
use schedkit::plugins::node_resource_topology::{
    AttributeInfo, NodeResourceTopology, NodeResourceTopologyMatch, NrtStore, ResourceInfo, Zone,
};
use schedkit::plugins::{default_profile_config, default_registry, names};
use schedkit::scheduler::{Scheduler, TieBreak};
use schedkit::snapshot::{NodeInfo, PodInfo};
use schedkit::testing::{NodeBuilder, PodBuilder};
use schedkit::topology::machines;
use schedkit::trace::synthetic_nodes;

fn setup(strategy: &str) -> (NodeResourceTopologyMatch, NodeInfo, PodInfo) {
    let store = Arc::new(NrtStore::new());
    store.upsert(nrt_from_graph("dgx-0", &machines::dgx_h100(), &DeriveOptions::default())).unwrap();
    let args = serde_json::json!({"scoringStrategy": {"type": strategy}});
    let p = NodeResourceTopologyMatch::new(serde_json::from_value(args).unwrap(), store).unwrap();
    let node = NodeInfo::new(Arc::new(
        NodeBuilder::new("dgx-0")
            .allocatables(&[("cpu", "224"), ("memory", "2Ti"), ("nvidia.com/gpu", "8"), ("rdma/hca", "12")])
            .build(),
    ));
    let rl =
        ResourceList::parse([("cpu", "32"), ("memory", "256Gi"), ("nvidia.com/gpu", "4"), ("rdma/hca", "1")]).unwrap();
    let pod = PodBuilder::new("train")
        .with(move |p| {
            p.spec.containers[0].resources.requests = rl.clone();
            p.spec.containers[0].resources.limits = rl;
        })
        .build();
    (p, node, PodInfo::new(pod).unwrap())
}

fn nrt(c: &mut Criterion) {
    let st = CycleState::default();
    let (p, node, pod) = setup("LeastAllocated");
    assert!(p.filter(&st, &pod, &node).is_success());
    c.bench_function("nrt/filter/container_scope/2_zones", |b| b.iter(|| black_box(p.filter(&st, &pod, &node))));
    c.bench_function("nrt/score/least_allocated/2_zones", |b| b.iter(|| black_box(p.score(&st, &pod, &node))));
    let (p, node, pod) = setup("LeastNUMANodes");
    c.bench_function("nrt/score/least_numa_nodes/2_zones", |b| b.iter(|| black_box(p.score(&st, &pod, &node))));
}

/// The pod of `benches/plugins.rs` `profile/default` (requests, a toleration, a node
/// affinity, a zone spread constraint); `guaranteed` also sets limits = requests so
/// NodeResourceTopologyMatch aligns and scores it instead of passing it through.
fn typical_pod(guaranteed: bool) -> Pod {
    let mut pod = support::typical_pod("p");
    if guaranteed {
        for c in &mut pod.spec.containers {
            c.resources.limits = c.resources.requests.clone();
        }
    }
    pod
}

/// A single-numa-node, container-scope NRT for `node`: two zones, each with half of
/// the node's cpu, memory and GPUs available.
fn two_zone_nrt(node: &Node) -> NodeResourceTopology {
    let mut nrt = NodeResourceTopology::new(node.name());
    nrt.attributes = vec![
        AttributeInfo { name: "topologyManagerPolicy".into(), value: "single-numa-node".into() },
        AttributeInfo { name: "topologyManagerScope".into(), value: "container".into() },
    ];
    let half: Vec<ResourceInfo> = node
        .status
        .allocatable
        .iter()
        .filter(|(n, _)| matches!(n.as_str(), "cpu" | "memory" | "nvidia.com/gpu"))
        .map(|(n, q)| {
            let h = format!("{}m", q.milli_value() / 2).parse().expect("valid quantity");
            ResourceInfo { name: n.as_str().to_owned(), capacity: h, allocatable: h, available: h }
        })
        .collect();
    nrt.zones = (0..2)
        .map(|i| Zone {
            name: format!("node-{i}"),
            zone_type: "Node".into(),
            parent: String::new(),
            costs: Vec::new(),
            attributes: Vec::new(),
            resources: half.clone(),
        })
        .collect();
    nrt
}

/// The default profile (from [`default_profile_config`] and [`default_registry`]) with
/// NodeResourceTopologyMatch added to `multiPoint` when `nrt`, adaptive sampling, one
/// thread; `batching` overrides the profile's `OpportunisticBatching`.
fn default_nrt_scheduler(nodes: usize, nrt: bool, batching: Option<bool>) -> Scheduler {
    let handle = Handle::default();
    let store = Arc::new(NrtStore::new());
    let nodes = synthetic_nodes(nodes);
    for n in &nodes {
        store.upsert(two_zone_nrt(n)).expect("valid NRT");
    }
    handle.set_shared(store);
    let mut cfg = default_profile_config();
    if nrt {
        cfg.plugins
            .multi_point
            .enabled
            .push(PluginRef { name: names::NODE_RESOURCE_TOPOLOGY_MATCH.into(), weight: None });
    }
    cfg.opportunistic_batching = batching;
    let profile = default_registry().build_profile(&cfg, &handle).expect("default profile + NRT builds");
    assert_eq!(profile.filter_plugins().contains(&names::NODE_RESOURCE_TOPOLOGY_MATCH), nrt);
    let s = Scheduler::builder()
        .profile(profile)
        .handle(handle)
        .percentage_of_nodes_to_score(0)
        .parallelism(1)
        .tie_break(TieBreak::Random)
        .build();
    for n in nodes {
        s.add_node(n).unwrap();
    }
    s
}

fn default_profile_with_nrt(c: &mut Criterion) {
    let mut g = c.benchmark_group("nrt/profile/default_nrt");
    g.sample_size(20);
    let mut s = default_nrt_scheduler(5000, true, None);
    for (id, guaranteed) in [("adaptive_pct_1thread_burstable", false), ("adaptive_pct_1thread_guaranteed", true)] {
        let pod = Arc::new(PodInfo::new(typical_pod(guaranteed)).unwrap());
        g.bench_with_input(BenchmarkId::new(id, 5000), &5000, |b, _| {
            b.iter(|| drop(s.schedule_one(&pod).unwrap().abort("bench")));
        });
    }
    g.finish();
    // Attribution: NodeResourceTopologyMatch does not sign pods (as upstream v0.34.7,
    // which predates KEP-5598), so it turns opportunistic batching off; the default
    // profile alone with batching off separates that from the plugin's own cost.
    let mut g = c.benchmark_group("nrt/profile/default_no_batching");
    g.sample_size(20);
    let mut s = default_nrt_scheduler(5000, false, Some(false));
    let pod = Arc::new(PodInfo::new(typical_pod(false)).unwrap());
    g.bench_with_input(BenchmarkId::new("adaptive_pct_1thread_burstable", 5000), &5000, |b, _| {
        b.iter(|| drop(s.schedule_one(&pod).unwrap().abort("bench")));
    });
    g.finish();
}

criterion_group!(benches, nrt, default_profile_with_nrt);
criterion_main!(benches);
