//! Criterion benches for `schedkit::topology`: the per-request search on real
//! shapes and the once-per-shape matrix build.
//!
//! Run: `cargo bench --bench topology -- --warm-up-time 1 --measurement-time 3`

#![expect(missing_docs, reason = "criterion_group! generates an undocumented function")]

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use schedkit::topology::{
    Edge, GpuMatrix, GpuSet, NvLinkGen, PcieGen, SearchOptions, TopologyGraph, best_subset, machines,
};

/// A fixed pseudo-random half of the NVL72 rack (xorshift), so runs compare.
fn nvl72_half_free() -> u128 {
    let mut x = 0x2545_f491_4f6c_dd1d_u64;
    let mut free = 0u128;
    while free.count_ones() < 36 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        free |= 1 << (x % 72);
    }
    free
}

/// A 32-GPU single-host machine that no special case covers: four DGX-1 style
/// cube-mesh islands on four sockets, so the general bounded path runs.
fn four_cube_meshes() -> GpuMatrix {
    let mut g = TopologyGraph::new("4 x cube mesh");
    let cpus: Vec<_> = (0..4).map(|s| g.add_cpu(s, s, 0)).collect();
    for a in 0..4 {
        for b in (a + 1)..4 {
            g.link(cpus[a], cpus[b], Edge::InterSocket { mbps: 40_000 });
        }
    }
    let mut gpus = Vec::new();
    for (s, &cpu) in cpus.iter().enumerate() {
        let hb = g.add_host_bridge(format!("hb{s}"), cpu, PcieGen::Gen3, 16);
        for sw in 0..4u32 {
            let switch = g.add_pcie_switch(s as u32 * 4 + sw, hb, PcieGen::Gen3, 16);
            for local in 0..2u32 {
                let idx = s as u32 * 8 + sw * 2 + local;
                gpus.push(g.add_gpu(idx, format!("g{idx}"), "V100", 1, switch, PcieGen::Gen3, 16));
            }
        }
    }
    let mesh = [
        (0, 1, 1),
        (0, 2, 1),
        (0, 3, 2),
        (0, 4, 2),
        (1, 2, 2),
        (1, 3, 1),
        (1, 5, 2),
        (2, 3, 2),
        (2, 6, 1),
        (3, 7, 1),
        (4, 5, 1),
        (4, 6, 1),
        (4, 7, 2),
        (5, 6, 2),
        (5, 7, 1),
        (6, 7, 2),
    ];
    for island in 0..4 {
        for &(a, b, links) in &mesh {
            g.link(gpus[island * 8 + a], gpus[island * 8 + b], Edge::NvLink { generation: NvLinkGen::V2, links });
        }
    }
    g.matrix().expect("valid shape")
}

fn search(c: &mut Criterion) {
    let opts = SearchOptions::default();
    let h100 = machines::dgx_h100().matrix().expect("valid shape");
    c.bench_function("topology/search/dgx_h100/4_of_8", |b| {
        b.iter(|| best_subset(black_box(&h100), black_box(h100.all()), 4, &opts));
    });
    let nic = SearchOptions { nic_aligned: true, ..opts };
    c.bench_function("topology/search/dgx_h100/4_of_8_nic_aligned", |b| {
        b.iter(|| best_subset(black_box(&h100), black_box(h100.all()), 4, &nic));
    });

    let v100 = machines::dgx1_v100().matrix().expect("valid shape");
    let five = GpuSet::from_indices([0, 2, 3, 5, 6]).0;
    c.bench_function("topology/search/dgx1_v100/2_of_5_free", |b| {
        b.iter(|| best_subset(black_box(&v100), black_box(five), 2, &opts));
    });
    c.bench_function("topology/search/dgx1_v100/4_of_8", |b| {
        b.iter(|| best_subset(black_box(&v100), black_box(v100.all()), 4, &opts));
    });

    let nvl72 = machines::gb200_nvl72().matrix().expect("valid shape");
    let alternate = GpuSet::from_indices((0..72).filter(|i| i % 2 == 1)).0;
    c.bench_function("topology/search/gb200_nvl72/8_of_36_alternate", |b| {
        b.iter(|| best_subset(black_box(&nvl72), black_box(alternate), 8, &opts));
    });
    let mesh = four_cube_meshes();
    let p = best_subset(&mesh, mesh.all(), 8, &opts).expect("fits");
    println!(
        "four_cube_meshes 8 of 32: exact {}, objective {:?}, bound {:?}, nodes {}",
        p.exact, p.objective, p.bound, p.nodes_visited
    );
    c.bench_function("topology/search/four_cube_meshes/8_of_32_general", |b| {
        b.iter(|| best_subset(black_box(&mesh), black_box(mesh.all()), 8, &opts));
    });
    let half = nvl72_half_free() & mesh.all();
    let p = best_subset(&mesh, half, 6, &opts).expect("fits");
    println!(
        "four_cube_meshes 6 of {} free: exact {}, objective {:?}, bound {:?}, nodes {}",
        half.count_ones(),
        p.exact,
        p.objective,
        p.bound,
        p.nodes_visited
    );
    c.bench_function("topology/search/four_cube_meshes/6_of_half_general", |b| {
        b.iter(|| best_subset(black_box(&mesh), black_box(half), 6, &opts));
    });
    let random = nvl72_half_free();
    c.bench_function("topology/search/gb200_nvl72/8_of_36_random", |b| {
        b.iter(|| best_subset(black_box(&nvl72), black_box(random), 8, &opts));
    });
}

fn matrix(c: &mut Criterion) {
    let g = machines::gb200_nvl72();
    c.bench_function("topology/matrix/gb200_nvl72", |b| {
        b.iter(|| black_box(&g).matrix());
    });
    let h = machines::dgx_h100();
    c.bench_function("topology/matrix/dgx_h100", |b| {
        b.iter(|| black_box(&h).matrix());
    });
}

criterion_group!(benches, search, matrix);
criterion_main!(benches);
