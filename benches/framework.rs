//! Framework overhead: CycleState reads, and a whole cycle with one trivial Filter and
//! one trivial Score plugin over every node.
//!
//! `cargo bench --bench framework`
#![expect(missing_docs, reason = "criterion_group! generates an undocumented pub fn")]

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use schedkit::framework::{CycleState, FilterFn, Profile, ScoreFn, Status};
use schedkit::scheduler::{Scheduler, TieBreak};
use schedkit::snapshot::{Cache, PodInfo, Snapshot};
use schedkit::testing::PodBuilder;
use schedkit::trace::synthetic_nodes;

#[derive(Clone)]
struct A;
#[derive(Clone)]
struct B;
#[derive(Clone)]
struct C;
#[derive(Clone)]
struct D(u64);

fn cycle_state(c: &mut Criterion) {
    let mut g = c.benchmark_group("framework/cycle_state");
    let mut s = CycleState::new();
    s.write(A);
    s.write(B);
    s.write(C);
    s.write(D(4));
    g.bench_function("read_present_4th_of_4", |b| b.iter(|| black_box(&s).read::<D>().map(|d| d.0)));
    g.bench_function("read_missing", |b| b.iter(|| black_box(&s).read::<u32>().is_some()));
    g.bench_function("clone_4_entries", |b| b.iter(|| black_box(&s).clone()));
    g.finish();
}

fn trivial_scheduler(nodes: usize, threads: usize) -> Scheduler {
    let profile = Profile::builder("default-scheduler")
        .plugin(FilterFn::new("TrivialFilter", |_, _, node| {
            if node.allocatable().milli_cpu > 0 { Status::SUCCESS } else { Status::unschedulable("no cpu") }
        }))
        .plugin(ScoreFn::new("TrivialScore", |_, _, node| (node.allocatable().milli_cpu / 1000) % 101))
        .percentage_of_nodes_to_score(100)
        .build()
        .unwrap();
    let s = Scheduler::builder().profile(profile).parallelism(threads).tie_break(TieBreak::First).build();
    for n in synthetic_nodes(nodes) {
        s.add_node(n).unwrap();
    }
    s
}

fn cycle_overhead(c: &mut Criterion) {
    let mut g = c.benchmark_group("framework/cycle_trivial_plugins");
    g.sample_size(30);
    let pod = PodInfo::new(PodBuilder::new("p").cpu("1").build()).unwrap();
    for &(nodes, threads) in &[(1000, 1), (5000, 1), (15000, 1), (5000, 2)] {
        let mut s = trivial_scheduler(nodes, threads);
        g.throughput(Throughput::Elements(nodes as u64));
        g.bench_with_input(BenchmarkId::new(format!("{threads}_thread"), nodes), &nodes, |b, _| {
            b.iter(|| drop(s.schedule_one(&pod).unwrap().abort("bench")));
        });
    }
    g.finish();
}

fn snapshot_update(c: &mut Criterion) {
    let mut g = c.benchmark_group("snapshot/update_one_changed");
    let mut cache = Cache::new();
    for n in synthetic_nodes(5000) {
        cache.add_node(n).unwrap();
    }
    let mut snap = Snapshot::default();
    cache.update_snapshot(&mut snap);
    let pod = std::sync::Arc::new(PodInfo::new(PodBuilder::new("p").cpu("1").build()).unwrap());
    g.bench_function("5000_nodes", |b| {
        b.iter(|| {
            cache.assume_pod(pod.clone(), "node-00042").unwrap();
            cache.update_snapshot(&mut snap);
            cache.forget_pod("default/p").unwrap();
            cache.update_snapshot(&mut snap)
        });
    });
    g.finish();
}

criterion_group!(benches, cycle_state, cycle_overhead, snapshot_update);
criterion_main!(benches);
