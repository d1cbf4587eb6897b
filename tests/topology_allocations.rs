//! The best-subset search allocates nothing on the heap, on every path: the
//! exhaustive one (DGX H100, DGX-1 V100, with NIC and NUMA alignment), the
//! multi-host decomposition (GB200 NVL72) and the bounded general path.
//!
//! One test per binary: the counting allocator is process-wide.

use std::alloc::System;

use schedkit::topology::{
    Edge, GpuMatrix, GpuSet, NvLinkGen, PcieGen, SearchOptions, TopologyGraph, best_subset, machines,
};
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// A single host of 24 GPUs in three NV-linked islands: the general bounded path.
fn islands() -> GpuMatrix {
    let mut g = TopologyGraph::new("islands");
    let cpus: Vec<_> = (0..3).map(|s| g.add_cpu(s, s, 0)).collect();
    g.link(cpus[0], cpus[1], Edge::InterSocket { mbps: 40_000 });
    g.link(cpus[1], cpus[2], Edge::InterSocket { mbps: 40_000 });
    let mut gpus = Vec::new();
    for (s, &cpu) in cpus.iter().enumerate() {
        let hb = g.add_host_bridge(format!("pci{s:04x}:00"), cpu, PcieGen::Gen4, 16);
        for i in 0..8u32 {
            let idx = s as u32 * 8 + i;
            gpus.push(g.add_gpu(idx, format!("g{idx}"), "m", 1, hb, PcieGen::Gen4, 16));
        }
    }
    for island in 0..3 {
        for i in 0..8 {
            let a = gpus[island * 8 + i];
            let b = gpus[island * 8 + (i + 1) % 8];
            g.link(a, b, Edge::NvLink { generation: NvLinkGen::V3, links: 1 + (i % 3) as u8 });
        }
    }
    g.matrix().expect("valid")
}

#[test]
fn search_allocates_nothing() {
    let h100 = machines::dgx_h100().matrix().expect("valid");
    let v100 = machines::dgx1_v100().matrix().expect("valid");
    let a100 = machines::dgx_a100().matrix().expect("valid");
    let nvl72 = machines::gb200_nvl72().matrix().expect("valid");
    let general = islands();
    let default = SearchOptions::default();
    let nic = SearchOptions { nic_aligned: true, ..default };
    let numa = SearchOptions { numa_aligned: true, ..default };
    let budget = SearchOptions { node_budget: 64, ..default };
    let half_rack = GpuSet::from_indices((0..72).filter(|i| i % 3 != 0)).0;
    let cases: [(&GpuMatrix, u128, usize, &SearchOptions); 8] = [
        (&h100, h100.all(), 4, &default),
        (&h100, h100.all(), 4, &nic),
        (&v100, GpuSet::from_indices([0, 2, 3, 5, 6]).0, 2, &default),
        (&v100, v100.all(), 8, &default),
        (&a100, a100.all(), 2, &numa),
        (&nvl72, half_rack, 8, &default),
        (&general, general.all(), 6, &default),
        (&general, general.all(), 5, &budget),
    ];
    // The counter counts (a control, so a silent allocator cannot pass the test).
    let control = Region::new(GLOBAL);
    let v = std::hint::black_box(vec![1u8; 10]);
    assert_eq!(control.change().allocations, 1);
    drop(v);
    for (i, (m, free, k, opts)) in cases.into_iter().enumerate() {
        // Warm-up outside the region (lazy statics, first-touch effects).
        let _ = best_subset(m, free, k, opts);
        let region = Region::new(GLOBAL);
        let placed = best_subset(m, free, k, opts);
        let stats = region.change();
        assert!(placed.is_ok(), "case {i}");
        assert_eq!(stats.allocations, 0, "case {i} ({}) allocated: {stats:?}", m.name());
        drop(placed);
    }
}
