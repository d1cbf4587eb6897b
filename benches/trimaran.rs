//! Trimaran Score per node over the 5,000-node synthetic cluster with a metrics
//! payload for every node (CPU and memory AVG and STD), and in-flight pods on a
//! tenth of the nodes for TargetLoadPacking. Budget: 40 ns per node for
//! TargetLoadPacking and LoadVariationRiskBalancing.
//!
//! `cargo bench --bench trimaran` (ids: `trimaran/<plugin>/score_5000_nodes`)
#![expect(missing_docs, reason = "criterion_group! generates an undocumented pub fn")]

mod support;
use support::{bench_score, cluster};

use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use schedkit::framework::{Handle, PodObserver};
use schedkit::plugins::trimaran::{
    AVERAGE, CPU, InMemoryLoadMetrics, LoadVariationRiskBalancing, LoadVariationRiskBalancingArgs,
    LowRiskOverCommitment, LowRiskOverCommitmentArgs, MEMORY, Metric, STD, TargetLoadPacking, TargetLoadPackingArgs,
    WatcherMetrics,
};
use schedkit::snapshot::{PodInfo, Snapshot};
use schedkit::testing::PodBuilder;

fn payload(snap: &Snapshot) -> WatcherMetrics {
    let names: Vec<String> = snap.nodes().iter().map(|n| n.name().as_str().to_owned()).collect();
    WatcherMetrics::with_nodes(names.iter().enumerate().map(|(i, n)| {
        let f = (i % 97) as f64;
        (
            n.as_str(),
            vec![
                Metric::new(CPU, AVERAGE, 10.0 + f * 0.5),
                Metric::new(CPU, STD, 5.0),
                Metric::new(MEMORY, AVERAGE, 20.0 + f * 0.3),
                Metric::new(MEMORY, STD, 3.0),
            ],
        )
    }))
}

fn trimaran(c: &mut Criterion) {
    let snap = cluster(5000);
    let metrics = InMemoryLoadMetrics::new();
    metrics.set(payload(&snap));
    let source = Arc::new(metrics);
    let pod = PodInfo::new(PodBuilder::new("p").cpu("500m").memory("1Gi").build()).unwrap();

    let tlp = TargetLoadPacking::new(TargetLoadPackingArgs::default(), source.clone(), Handle::default()).unwrap();
    for (i, n) in snap.nodes().iter().enumerate().step_by(10) {
        let bound = PodBuilder::new(&format!("bound-{i}"))
            .uid(&format!("bound-{i}"))
            .cpu("250m")
            .node_name(n.name().as_str())
            .build();
        tlp.pod_added(&PodInfo::new(bound).unwrap());
    }
    bench_score(c, "trimaran/target_load_packing", &tlp, &snap, &pod);

    let lvrb = LoadVariationRiskBalancing::new(LoadVariationRiskBalancingArgs::default(), source.clone());
    bench_score(c, "trimaran/load_variation_risk_balancing", &lvrb, &snap, &pod);

    let lroc = LowRiskOverCommitment::new(LowRiskOverCommitmentArgs::default(), source);
    bench_score(c, "trimaran/low_risk_over_commitment", &lroc, &snap, &pod);
}

criterion_group!(benches, trimaran);
criterion_main!(benches);
