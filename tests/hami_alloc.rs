//! HamiVgpu's Filter and Score allocate nothing per node on 8-GPU nodes.
//!
//! One test per binary: the counting allocator is process-wide.

use std::alloc::System;

use schedkit::framework::{CycleState, FilterPlugin, Handle, PreFilterPlugin, ScorePlugin};
use schedkit::model::ResourceList;
use schedkit::plugins::hami::{DeviceInfo, HamiConfig, HamiState, HamiVgpu, register};
use schedkit::snapshot::{Cache, PodInfo, Snapshot};
use schedkit::testing::{NodeBuilder, PodBuilder};
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

#[test]
fn filter_and_score_allocate_nothing_per_node() {
    let state = HamiState::new();
    let mut cache = Cache::new();
    for n in 0..200 {
        let name = format!("node-{n}");
        let mut node = NodeBuilder::new(&name).build();
        let gpus: Vec<DeviceInfo> = (0..8)
            .map(|i| {
                DeviceInfo::gpu(&format!("{name}-GPU-{i}"), "NVIDIA-A100", 81920).with_index(i).with_numa(i as i32 / 4)
            })
            .collect();
        register(&mut node, &gpus);
        if n % 2 == 0 {
            node.metadata.annotations.insert("hami.io/device-cordon".into(), format!("{name}-GPU-7"));
        }
        state.add_node(&node).unwrap();
        cache.add_node(node).unwrap();
    }
    let mut snap = Snapshot::default();
    cache.update_snapshot(&mut snap);
    let plugin = HamiVgpu::new(HamiConfig::default(), state, Handle::default());
    let limits =
        ResourceList::parse([("nvidia.com/gpu", "2"), ("nvidia.com/gpumem", "4096"), ("nvidia.com/gpucores", "30")])
            .unwrap();
    let pod = PodInfo::new(
        PodBuilder::new("p")
            .with(move |p| {
                p.spec.containers[0].resources.limits = limits;
                p.metadata.annotations.insert("hami.io/gpu-scheduler-policy".into(), "binpack,numa".into());
                p.metadata.annotations.insert("nvidia.com/numa-bind".into(), "true".into());
            })
            .build(),
    )
    .unwrap();
    let mut state = CycleState::new();
    let _ = plugin.pre_filter(&mut state, &pod, &snap);
    let region = Region::new(GLOBAL);
    let mut fits = 0;
    for n in snap.nodes() {
        if plugin.filter(&state, &pod, n).is_success() {
            fits += 1;
            let _ = plugin.score(&state, &pod, n);
        }
    }
    let allocations = region.change().allocations;
    assert_eq!(fits, 200);
    assert_eq!(allocations, 0, "Filter + Score over 200 nodes with 8 GPUs each");
}
