//! DynamicResources: Filter on one 8-GPU node for claims of 8 GPUs (model selector +
//! matchAttribute) and 1 GPU, PreFilter (claim gathering, cached selector results), and a
//! full scheduling cycle on 1,000 nodes x 8 GPUs with the default profile + DRA, and
//! loading 5,000 per-node slices into a store up to the first query.
//!
//! `cargo bench --bench dra -- --warm-up-time 1 --measurement-time 3`
//! (ids: `dra/filter/8gpu`, `dra/filter/1gpu`, `dra/pre_filter/1000x8`, `dra/cycle/1000x8/..`,
//! `dra/load/5000x8`)
#![expect(missing_docs, reason = "criterion_group! generates an undocumented pub fn")]

use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;

use schedkit::dra::{DraStore, ResourceClaim, ResourceSlice};
use schedkit::framework::{CycleState, FilterPlugin, Handle, PluginRef, PreFilterPlugin};
use schedkit::model::{Pod, PodResourceClaim};
use schedkit::plugins::dynamic_resources::DynamicResources;
use schedkit::plugins::{default_profile_config, default_registry};
use schedkit::scheduler::Scheduler;
use schedkit::snapshot::{NodeInfo, PodInfo, Snapshot};
use schedkit::testing::{NodeBuilder, PodBuilder};

const H100: &str = "NVIDIA H100 80GB HBM3";

fn node_slice(i: usize) -> ResourceSlice {
    let devices: Vec<_> = (0..8)
        .map(|g| {
            json!({"name": format!("gpu-{g}"), "attributes": {
                "productName": {"string": H100}, "nvlinkDomain": {"int": 0}, "index": {"int": g}},
                "capacity": {"memory": {"value": "80Gi"}}})
        })
        .collect();
    serde_json::from_value(json!({"metadata": {"name": format!("node-{i}-gpu")}, "spec": {"driver": "gpu.nvidia.com",
        "nodeName": format!("node-{i}"), "pool": {"name": format!("node-{i}"), "generation": 1, "resourceSliceCount": 1},
        "devices": devices}}))
    .expect("valid slice")
}

fn claim(name: &str, count: i64) -> ResourceClaim {
    serde_json::from_value(json!({"metadata": {"name": name, "namespace": "default"}, "spec": {"devices": {
        "requests": [{"name": "gpus", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": count,
            "selectors": [{"cel": {"expression": format!("device.attributes[\"gpu.nvidia.com\"].productName == \"{H100}\"")}}]}}],
        "constraints": [{"matchAttribute": "gpu.nvidia.com/nvlinkDomain"}]}}}))
    .expect("valid claim")
}

fn pod(name: &str, claim: &str) -> Pod {
    PodBuilder::new(name)
        .cpu("1")
        .with(|p| {
            p.spec.resource_claims.push(PodResourceClaim {
                name: "gpus".into(),
                resource_claim_name: Some(claim.into()),
                resource_claim_template_name: None,
                pod_group_resource_claim: None,
            });
        })
        .build()
}

fn store(nodes: usize) -> Arc<DraStore> {
    let store = Arc::new(DraStore::new());
    store
        .add_class(
            serde_json::from_value(json!({"metadata": {"name": "gpu.nvidia.com"},
                "spec": {"selectors": [{"cel": {"expression": "device.driver == \"gpu.nvidia.com\""}}]}}))
            .expect("valid class"),
        )
        .expect("class compiles");
    for i in 0..nodes {
        store.add_slice(node_slice(i)).expect("slice loads");
    }
    store.add_claim(claim("c8", 8)).expect("claim loads");
    store.add_claim(claim("c1", 1)).expect("claim loads");
    store
}

fn filter(c: &mut Criterion) {
    let store = store(1);
    let plugin = DynamicResources::new(store);
    let node = NodeInfo::new(Arc::new(NodeBuilder::new("node-0").cpu("64").build()));
    let snapshot = Snapshot::from_nodes([node.clone()]);
    for (id, claim) in [("8gpu", "c8"), ("1gpu", "c1")] {
        let p = PodInfo::new(pod("p", claim)).expect("valid pod");
        let mut state = CycleState::new();
        let (_, s) = plugin.pre_filter(&mut state, &p, &snapshot);
        assert!(s.is_success());
        assert!(plugin.filter(&state, &p, &node).is_success());
        c.bench_function(&format!("dra/filter/{id}"), |b| {
            b.iter(|| black_box(plugin.filter(&state, &p, black_box(&node))));
        });
    }
}

fn cycle(c: &mut Criterion) {
    let nodes = 1000;
    let store = store(nodes);
    let plugin = DynamicResources::new(store.clone());
    let p8 = PodInfo::new(pod("p", "c8")).expect("valid pod");
    let snapshot = Snapshot::from_nodes(
        (0..nodes).map(|i| NodeInfo::new(Arc::new(NodeBuilder::new(&format!("node-{i}")).cpu("64").build()))),
    );
    c.bench_function("dra/pre_filter/1000x8", |b| {
        b.iter(|| {
            let mut state = CycleState::new();
            black_box(plugin.pre_filter(&mut state, &p8, &snapshot))
        });
    });

    let handle = Handle::default();
    handle.set_shared(store.clone());
    let mut cfg = default_profile_config();
    cfg.plugins.multi_point.enabled.push(PluginRef { name: "DynamicResources".into(), weight: None });
    let profile = default_registry().build_profile(&cfg, &handle).expect("valid profile");
    let mut sched = Scheduler::builder().profile(profile).build();
    for i in 0..nodes {
        sched
            .add_node(NodeBuilder::new(&format!("node-{i}")).cpu("64").memory("512Gi").pods(110).build())
            .expect("node added");
    }
    for (id, claim) in [("8gpu", "c8"), ("1gpu", "c1")] {
        let p = PodInfo::new(pod("p", claim)).expect("valid pod");
        c.bench_function(&format!("dra/cycle/1000x8/{id}"), |b| {
            b.iter(|| {
                let binding = sched.schedule_one(&p).expect("fits");
                black_box(binding.abort("bench"))
            });
        });
    }
}

/// An informer's initial list: 5,000 per-node slices added one by one, then the first
/// query (which sees every device, so a deferred world build is inside the timing).
fn load(c: &mut Criterion) {
    let slices: Vec<ResourceSlice> = (0..5000).map(node_slice).collect();
    let mut g = c.benchmark_group("dra/load");
    g.sample_size(10);
    g.bench_function("5000x8", |b| {
        b.iter_batched(
            || slices.clone(),
            |slices| {
                let store = DraStore::new();
                for s in slices {
                    store.add_slice(s).expect("slice loads");
                }
                black_box(store.device_taints("gpu.nvidia.com", "node-4999", "gpu-7").expect("device seen"))
            },
            criterion::BatchSize::PerIteration,
        );
    });
    g.finish();
}

criterion_group!(benches, filter, cycle, load);
criterion_main!(benches);
