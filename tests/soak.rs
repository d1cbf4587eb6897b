//! A short churn soak in the test suite: the code `examples/soak.rs` runs, on a small
//! cluster, with every invariant checked (see `schedkit::testing::soak`).

use schedkit::testing::soak::{self, SoakConfig};

#[test]
fn a_short_churn_soak_keeps_every_invariant() {
    let attempts = if cfg!(debug_assertions) { 6_000 } else { 60_000 };
    let config = SoakConfig {
        attempts,
        nodes: 40,
        steady_pods: 280,
        workers: 2,
        check_every: 500,
        seed: 7,
        ..SoakConfig::default()
    };
    let summary = soak::run(&config).unwrap_or_else(|e| panic!("{e}"));
    println!("{summary}");
    assert_eq!(summary.attempts, attempts);
    assert!(summary.checks >= attempts / 500, "checks ran: {summary}");
    assert!(summary.bound > 0 && summary.deleted > 0 && summary.node_events > 0, "churn happened: {summary}");
    assert!(summary.unschedulable > 0 && summary.preempted > 0, "the cluster filled and preemption ran: {summary}");
}
