//! Criterion benches for NodeResourceTopologyMatch: Filter (container scope) and Score
//! on a node with 2 NUMA zones, per node.
//!
//! Run: `cargo bench --bench nrt -- --warm-up-time 1 --measurement-time 3`

#![expect(missing_docs, reason = "criterion_group! generates an undocumented function")]

use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use schedkit::framework::{CycleState, FilterPlugin, ScorePlugin};
use schedkit::model::ResourceList;
use schedkit::plugins::node_resource_topology::derive::{DeriveOptions, nrt_from_graph};
use schedkit::plugins::node_resource_topology::{NodeResourceTopologyMatch, NrtStore};
use schedkit::snapshot::{NodeInfo, PodInfo};
use schedkit::testing::{NodeBuilder, PodBuilder};
use schedkit::topology::machines;

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

criterion_group!(benches, nrt);
criterion_main!(benches);
