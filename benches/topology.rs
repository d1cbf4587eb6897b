//! Criterion benches for `schedkit::topology`: the per-request search on real
//! shapes and the once-per-shape matrix build.
//!
//! Run: `cargo bench --bench topology -- --warm-up-time 1 --measurement-time 3`

#![expect(missing_docs, reason = "criterion_group! generates an undocumented function")]

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use schedkit::topology::{GpuSet, SearchOptions, best_subset, machines};

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

fn search(c: &mut Criterion) {
    let opts = SearchOptions::default();
    let h100 = machines::dgx_h100().matrix().expect("valid shape");
    c.bench_function("topology/search/dgx_h100/4_of_8", |b| {
        b.iter(|| best_subset(black_box(&h100), black_box(h100.all()), 4, &opts));
    });
    let nic = SearchOptions {
        nic_aligned: true,
        ..opts
    };
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
