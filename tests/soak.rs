//! Short churn soaks in the test suite: the code `examples/soak.rs` runs, on a small
//! cluster, with every invariant checked (see `schedkit::testing::soak`), in each mode:
//! the default profile, DRA claims, Coscheduling gangs, and both. Each also checks that
//! the live heap, counted by the allocator below, stays flat once the cluster settled.

use std::alloc::System;

use parking_lot::Mutex;
use schedkit::testing::soak::{self, SoakConfig, SoakMode, SoakSummary};
use stats_alloc::{INSTRUMENTED_SYSTEM, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// The heap counter is process-wide: the soaks of this binary run one at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn live_heap() -> u64 {
    let s = GLOBAL.stats();
    s.bytes_allocated.saturating_sub(s.bytes_deallocated) as u64
}

fn soak(mode: SoakMode, seed: u64) -> SoakSummary {
    let _one = ONE_AT_A_TIME.lock();
    let attempts = if cfg!(debug_assertions) { 6_000 } else { 60_000 };
    let config = SoakConfig {
        attempts,
        nodes: 40,
        steady_pods: 280,
        workers: 2,
        check_every: 500,
        seed,
        mode,
        live_heap: Some(live_heap),
        // Once settled the heap holds the same cluster; what varies is the size of
        // maps and vectors around their high-water marks. A leak of a label set, a
        // pod, a claim or a gang's state per attempt would add far more over these
        // attempts. With gangs the backlog of pods waiting for siblings grows for
        // longer before it settles, so the floor still rises by up to ~0.5 MB here;
        // the gang leaks fixed with this test (groups' state kept, group names
        // pinned by the queue sort) are pinned down in tests/gang.rs.
        heap_growth_limit: Some(if mode.gangs() { 1024 * 1024 } else { 256 * 1024 }),
        ..SoakConfig::default()
    };
    let summary = soak::run(&config).unwrap_or_else(|e| panic!("{mode}: {e}"));
    println!("{summary}");
    assert_eq!(summary.attempts, attempts);
    assert!(summary.checks >= attempts / 500, "checks ran: {summary}");
    assert!(summary.bound > 0 && summary.deleted > 0 && summary.node_events > 0, "churn happened: {summary}");
    assert!(summary.heap_steady.is_some() && summary.heap_end.is_some(), "the heap was measured: {summary}");
    summary
}

#[test]
fn a_short_churn_soak_keeps_every_invariant() {
    let summary = soak(SoakMode::Default, 7);
    assert!(summary.unschedulable > 0 && summary.preempted > 0, "the cluster filled and preemption ran: {summary}");
}

#[test]
fn a_dra_soak_never_gives_a_gpu_twice() {
    let summary = soak(SoakMode::Dra, 11);
    assert!(summary.gpus_held > 0, "claims held GPUs: {summary}");
    assert!(summary.unschedulable > 0, "GPUs ran out: {summary}");
}

#[test]
fn a_gang_soak_binds_whole_gangs_only() {
    let summary = soak(SoakMode::Gangs, 13);
    assert!(summary.gang_binds > 0, "gangs bound: {summary}");
}

#[test]
fn a_full_soak_with_gangs_claiming_gpus_keeps_every_invariant() {
    let summary = soak(SoakMode::Full, 17);
    assert!(summary.gang_binds > 0 && summary.gpus_held > 0, "gangs bound and GPUs were held: {summary}");
}
