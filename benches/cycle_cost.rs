//! How one pod's cycle grows with the cluster (issue 23, items 1–3): a DaemonSet's
//! pod pinned to one node through the whole loop (`run_until_idle`: queue pop,
//! PreFilter, Filter, Reserve, Permit, bind) at 1,000, 5,000 and 15,000 nodes, beside
//! the typical pod of `benches/plugins.rs` with upstream's adaptive sampling and with
//! 100% of the nodes filtered and scored.
//!
//! Opportunistic batching is off throughout: the same pod is scheduled again and
//! again, which would otherwise measure the hint path (a one-node cycle) instead of
//! the search these ids name.
//!
//! `cargo bench --bench cycle_cost -- --warm-up-time 1 --measurement-time 3`
#![expect(missing_docs, reason = "criterion_group! generates an undocumented pub fn")]

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use schedkit::framework::Handle;
use schedkit::scheduler::Scheduler;
use schedkit::snapshot::PodInfo;
use schedkit::trace::synthetic_nodes;
use support::{daemonset_pod, typical_pod};

/// Opportunistic batching off (see the file's doc).
fn batching_off(handle: &Handle) {
    handle.set_feature_gates("OpportunisticBatching=false".parse().expect("a known gate"));
}

/// The default profile over the synthetic cluster.
fn default_scheduler(nodes: usize, pct: u32, threads: usize) -> Scheduler {
    let handle = Handle::default();
    batching_off(&handle);
    support::default_scheduler(handle, nodes, pct, threads)
}

/// The DaemonSet pod through the whole loop: added to the queue (not timed), popped,
/// scheduled and bound by `run_until_idle` (timed), then deleted again (not timed)
/// so every iteration meets the same cluster.
fn daemonset(c: &mut Criterion) {
    let mut g = c.benchmark_group("cycle/daemonset_run_until_idle");
    for nodes in [1000, 5000, 15000] {
        let mut s = default_scheduler(nodes, 0, 1);
        // An untainted node in the middle of the list, which the pod fits.
        let target = synthetic_nodes(nodes)
            .into_iter()
            .skip(nodes / 2)
            .find(|n| n.spec.taints.is_empty())
            .map(|n| n.metadata.name)
            .expect("an untainted node");
        let pod = daemonset_pod(&target);
        g.bench_with_input(BenchmarkId::from_parameter(nodes), &nodes, |b, _| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    s.add_pod(pod.clone()).unwrap();
                    let t = Instant::now();
                    let run = s.run_until_idle();
                    total += t.elapsed();
                    assert_eq!(run.bound, 1, "the pod binds");
                    s.events().delete_pod("default/ds-pod").unwrap();
                }
                total
            });
        });
    }
    g.finish();
}

/// The typical pod's scheduling cycle (`schedule_one`, then the binding cycle
/// aborted), with upstream's adaptive sampling (`0`) and with every node filtered
/// and scored (`100`).
fn typical(c: &mut Criterion) {
    let pod = Arc::new(PodInfo::new(typical_pod("p")).unwrap());
    let mut g = c.benchmark_group("cycle/typical");
    g.sample_size(20);
    for &(nodes, pct, threads) in &[(5000, 0, 1), (5000, 100, 1), (15000, 100, 1), (5000, 100, 2)] {
        let mut s = default_scheduler(nodes, pct, threads);
        let id = format!("{}_{threads}thread", if pct == 0 { "adaptive".to_string() } else { format!("{pct}pct") });
        g.bench_with_input(BenchmarkId::new(id, nodes), &nodes, |b, _| {
            b.iter(|| drop(s.schedule_one(&pod).unwrap().abort("bench")));
        });
    }
    g.finish();
}

criterion_group!(benches, daemonset, typical);
criterion_main!(benches);
