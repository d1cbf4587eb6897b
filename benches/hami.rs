//! HamiVgpu Filter + Score per node on 8-GPU nodes (1,000 registered nodes, a third of
//! their GPUs partly used), for a pod asking for one GPU with 25% of its memory and
//! cores, under the chart's default policies and under binpack. Budget: 300 ns per
//! node for Filter + Score (at the 46 µs reference of
//! `plugins -- profile/default/adaptive_pct_1thread/5000`).
//!
//! `cargo bench --bench hami` (ids: `hami/<policy>/filter_score_8gpu`)
#![expect(missing_docs, reason = "criterion_group! generates an undocumented pub fn")]

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use schedkit::framework::{CycleState, FilterPlugin, Handle, PreFilterPlugin, ScorePlugin};
use schedkit::model::ResourceList;
use schedkit::plugins::hami::{DeviceInfo, HamiConfig, HamiState, HamiVgpu, Usage, register};
use schedkit::snapshot::{Cache, PodInfo, Snapshot};
use schedkit::testing::{NodeBuilder, PodBuilder};

const NODES: usize = 1000;

fn setup() -> (Snapshot, HamiVgpu) {
    let state = HamiState::new();
    let mut cache = Cache::new();
    for n in 0..NODES {
        let name = format!("node-{n:04}");
        let mut node = NodeBuilder::new(&name).cpu("64").memory("256Gi").build();
        let gpus: Vec<DeviceInfo> = (0..8)
            .map(|i| {
                DeviceInfo::gpu(&format!("{name}-GPU-{i}"), "NVIDIA-A100", 81920).with_index(i).with_numa(i as i32 / 4)
            })
            .collect();
        register(&mut node, &gpus);
        state.add_node(&node).unwrap();
        cache.add_node(node).unwrap();
        // A third of the GPUs hold a quarter-GPU pod.
        for i in (0..8).filter(|i| (n + i) % 3 == 0) {
            let alloc = schedkit::plugins::hami::PodAllocation {
                node: name.clone(),
                deltas: vec![schedkit::plugins::hami::DeviceDelta {
                    uuid: format!("{name}-GPU-{i}"),
                    usage: Usage::new(1, 20480, 25),
                }],
                containers: vec![],
                mig: vec![],
            };
            state.allocate(&format!("{name}-{i}"), alloc).unwrap();
        }
    }
    let mut snap = Snapshot::default();
    cache.update_snapshot(&mut snap);
    (snap, HamiVgpu::new(HamiConfig::default(), state, Handle::default()))
}

fn pod(policy: &str) -> PodInfo {
    let limits = ResourceList::parse([
        ("nvidia.com/gpu", "1"),
        ("nvidia.com/gpumem-percentage", "25"),
        ("nvidia.com/gpucores", "25"),
    ])
    .unwrap();
    let policy = policy.to_owned();
    PodInfo::new(
        PodBuilder::new("p")
            .with(move |p| {
                p.spec.containers[0].resources.limits = limits;
                p.metadata.annotations.insert("hami.io/gpu-scheduler-policy".into(), policy);
            })
            .build(),
    )
    .unwrap()
}

fn hami(c: &mut Criterion) {
    let (snap, plugin) = setup();
    for policy in ["spread", "binpack"] {
        let pod = pod(policy);
        let mut state = CycleState::new();
        let _ = plugin.pre_filter(&mut state, &pod, &snap);
        let mut g = c.benchmark_group(format!("hami/{policy}"));
        g.throughput(Throughput::Elements(snap.len() as u64));
        g.bench_function("filter_score_8gpu", |b| {
            b.iter(|| {
                let mut sum = 0i64;
                for n in snap.nodes() {
                    if plugin.filter(&state, &pod, n).is_success() {
                        sum = sum.wrapping_add(plugin.score(&state, &pod, n).unwrap_or(0));
                    }
                }
                black_box(sum)
            });
        });
        g.finish();
    }
}

criterion_group!(benches, hami);
criterion_main!(benches);
