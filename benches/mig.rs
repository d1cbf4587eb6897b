//! MIG as DRA partitionable devices: the DynamicResources Filter of a `1g.10gb` claim on
//! one node of eight H100s published as MIG devices (26 devices and one counter set per
//! GPU), and a full scheduling cycle of that claim over 500 such nodes with the default
//! profile + DRA.
//!
//! `cargo bench --bench mig -- --warm-up-time 1 --measurement-time 3`
//! (ids: `mig/filter/8xh100/1g`, `mig/cycle/500x8/1g`)
#![expect(missing_docs, reason = "criterion_group! generates an undocumented pub fn")]

use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;

use schedkit::dra::mig::{GpuModel, MigNodeBuilder, NVIDIA_GPU_DRIVER, mig_device_class};
use schedkit::dra::{DraStore, ResourceClaim};
use schedkit::framework::{CycleState, FilterPlugin, Handle, PluginRef, PreFilterPlugin};
use schedkit::model::{Pod, PodResourceClaim};
use schedkit::plugins::dynamic_resources::DynamicResources;
use schedkit::plugins::{default_profile_config, default_registry};
use schedkit::scheduler::Scheduler;
use schedkit::snapshot::{NodeInfo, PodInfo, Snapshot};
use schedkit::testing::{NodeBuilder, PodBuilder};

fn store(nodes: usize) -> Arc<DraStore> {
    let store = Arc::new(DraStore::new());
    store.add_class(mig_device_class(NVIDIA_GPU_DRIVER)).expect("class compiles");
    for i in 0..nodes {
        for slice in MigNodeBuilder::new(&format!("node-{i}")).gpus(GpuModel::H100_80GB, 8).build().expect("slices") {
            store.add_slice(slice).expect("slice loads");
        }
    }
    let claim: ResourceClaim = serde_json::from_value(json!({"metadata": {"name": "c1g", "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "mig", "exactly": {"deviceClassName": "mig.nvidia.com",
            "selectors": [{"cel": {"expression": "device.attributes[\"gpu.nvidia.com\"].profile == \"1g.10gb\""}}]}}]}}}))
    .expect("valid claim");
    store.add_claim(claim).expect("claim loads");
    store
}

fn pod() -> Pod {
    PodBuilder::new("p")
        .cpu("1")
        .with(|p| {
            p.spec.resource_claims.push(PodResourceClaim {
                name: "mig".into(),
                resource_claim_name: Some("c1g".into()),
                resource_claim_template_name: None,
                pod_group_resource_claim: None,
            });
        })
        .build()
}

fn filter(c: &mut Criterion) {
    let plugin = DynamicResources::new(store(1));
    let node = NodeInfo::new(Arc::new(NodeBuilder::new("node-0").cpu("64").build()));
    let snapshot = Snapshot::from_nodes([node.clone()]);
    let p = PodInfo::new(pod()).expect("valid pod");
    let mut state = CycleState::new();
    let (_, s) = plugin.pre_filter(&mut state, &p, &snapshot);
    assert!(s.is_success());
    assert!(plugin.filter(&state, &p, &node).is_success());
    c.bench_function("mig/filter/8xh100/1g", |b| {
        b.iter(|| black_box(plugin.filter(&state, &p, black_box(&node))));
    });
}

fn cycle(c: &mut Criterion) {
    let nodes = 500;
    let store = store(nodes);
    let handle = Handle::default();
    handle.set_shared(store);
    let mut cfg = default_profile_config();
    cfg.plugins.multi_point.enabled.push(PluginRef { name: "DynamicResources".into(), weight: None });
    let profile = default_registry().build_profile(&cfg, &handle).expect("valid profile");
    let mut sched = Scheduler::builder().profile(profile).build();
    for i in 0..nodes {
        sched
            .add_node(NodeBuilder::new(&format!("node-{i}")).cpu("64").memory("512Gi").pods(110).build())
            .expect("node added");
    }
    let p = PodInfo::new(pod()).expect("valid pod");
    c.bench_function("mig/cycle/500x8/1g", |b| {
        b.iter(|| {
            let binding = sched.schedule_one(&p).expect("fits");
            black_box(binding.abort("bench"))
        });
    });
}

criterion_group!(benches, filter, cycle);
criterion_main!(benches);
