//! The column paths of NodeResourcesFit's Filter and of the Fit / BalancedAllocation
//! scorers (the snapshot's resource columns) against the per-node `filter` and
//! `score` paths (each node's `NodeInfo`), on random clusters and pods.

use std::sync::Arc;

use proptest::prelude::*;

use super::*;
use crate::framework::{
    CycleState, Feature, FeatureGates, FilterPlugin, NodeScore, PreFilterPlugin, PreScorePlugin, ScorePlugin, Status,
};
use crate::snapshot::{Cache, NodeList, PodInfo, Snapshot};
use crate::testing::{NodeBuilder, PodBuilder};

/// A node: cpu cores, memory GiB, ephemeral GiB, allowed pods (0 in a field:
/// not listed, so allocatable 0).
type NodeSpec = (u8, u8, u8, u8);
/// A pod: cpu millis, memory MiB, ephemeral GiB, pod-level cpu millis on top of the
/// containers' (0: none).
type PodSpec = (u16, u16, u8, u16);

fn node_spec() -> impl Strategy<Value = NodeSpec> {
    (0u8..6, 0u8..10, 0u8..4, 0u8..5)
}

fn pod_spec() -> impl Strategy<Value = PodSpec> {
    (
        prop_oneof![Just(0u16), 1u16..4000],
        prop_oneof![Just(0u16), 1u16..6000],
        prop_oneof![3 => Just(0u8), 1 => 1u8..3],
        prop_oneof![3 => Just(0u16), 1 => 1u16..1000],
    )
}

fn pod(name: &str, (cpu, mem, eph, pod_cpu): PodSpec) -> PodBuilder {
    let mut b = PodBuilder::new(name);
    if cpu > 0 {
        b = b.cpu(&format!("{cpu}m"));
    }
    if mem > 0 {
        b = b.memory(&format!("{mem}Mi"));
    }
    if eph > 0 {
        b = b.request("ephemeral-storage", &format!("{eph}Gi"));
    }
    if pod_cpu > 0 {
        b = b.pod_request("cpu", &format!("{}m", u32::from(cpu) + u32::from(pod_cpu)));
    }
    b
}

/// The cluster through a cache (so the snapshot's columns come from its updates),
/// with `pods[i]` bound onto node `i % nodes`.
fn cluster(nodes: &[NodeSpec], pods: &[PodSpec]) -> Snapshot {
    let mut cache = Cache::new();
    for (i, &(cpu, mem, eph, allowed)) in nodes.iter().enumerate() {
        let mut b = NodeBuilder::new(&format!("n{i}")).pods(i64::from(allowed));
        if cpu > 0 {
            b = b.cpu(&cpu.to_string());
        }
        if mem > 0 {
            b = b.memory(&format!("{mem}Gi"));
        }
        if eph > 0 {
            b = b.allocatable("ephemeral-storage", &format!("{eph}Gi"));
        }
        cache.add_node(b.build()).unwrap();
    }
    let mut snap = Snapshot::default();
    // Half the pods before a first snapshot, half after (an incremental update).
    let half = pods.len() / 2;
    for (k, &spec) in pods.iter().enumerate() {
        if k == half {
            cache.update_snapshot(&mut snap);
        }
        let node = format!("n{}", k % nodes.len());
        let p = PodInfo::new(pod(&format!("q{k}"), spec).node_name(&node).build()).unwrap();
        cache.add_pod(Arc::new(p)).unwrap();
    }
    cache.update_snapshot(&mut snap);
    snap
}

fn gates(pod_level: bool) -> FeatureGates {
    FeatureGates::default().with(Feature::PodLevelResources, pod_level)
}

/// `filter_nodes` over `positions` (in chunks of 64) equals `filter` node by node.
fn check_filter(fit: &Fit, snap: &Snapshot, pod: &PodInfo, positions: &[usize]) -> Result<(), TestCaseError> {
    let mut state = CycleState::new();
    let _ = fit.pre_filter(&mut state, pod, snap);
    for chunk in positions.chunks(64) {
        let mut statuses = vec![Status::SUCCESS; chunk.len()];
        let failed = fit.filter_nodes(&state, pod, NodeList::new(snap, chunk), &mut statuses);
        for (j, &p) in chunk.iter().enumerate() {
            let want = fit.filter(&state, pod, &snap.nodes()[p]);
            prop_assert_eq!(failed >> j & 1 == 1, !want.is_success(), "mask at node {}", p);
            if !want.is_success() {
                prop_assert_eq!(&statuses[j], &want, "status of node {}", p);
            }
        }
    }
    Ok(())
}

/// `score_nodes` over `positions` equals `score` node by node.
fn check_score<P: PreScorePlugin + ScorePlugin>(
    plugin: &P,
    snap: &Snapshot,
    pod: &PodInfo,
    positions: &[usize],
) -> Result<(), TestCaseError> {
    let mut state = CycleState::new();
    let _ = plugin.pre_score(&mut state, pod, NodeList::new(snap, positions));
    let mut scores: Vec<NodeScore> =
        positions.iter().map(|&p| NodeScore { name: snap.nodes()[p].name(), score: -1 }).collect();
    plugin.score_nodes(&state, pod, NodeList::new(snap, positions), &mut scores).unwrap();
    for (s, &p) in scores.iter().zip(positions) {
        let want = plugin.score(&state, pod, &snap.nodes()[p]).unwrap();
        prop_assert_eq!(s.score, want, "score of node {}", p);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Fit's Filter (verdicts, reasons in upstream's order, codes), Fit's Score under
    /// LeastAllocated, MostAllocated and RequestedToCapacityRatio with random cpu and
    /// memory weights, and BalancedAllocation's two scorings give the same answers
    /// from the resource columns as from each node's `NodeInfo`, with the
    /// `PodLevelResources` gate on (columns) and off (per node), over every node and
    /// over a subset in a shuffled order.
    #[test]
    fn column_paths_equal_per_node_paths(
        nodes in proptest::collection::vec(node_spec(), 1..40),
        placed in proptest::collection::vec(pod_spec(), 0..60),
        incoming in pod_spec(),
        weights in (1i64..4, 1i64..4),
        pod_level in any::<bool>(),
        stride in 1usize..5,
    ) {
        let snap = cluster(&nodes, &placed);
        let pod = PodInfo::new(pod("incoming", incoming).build()).unwrap();
        let all: Vec<usize> = (0..snap.len()).collect();
        let some: Vec<usize> = (0..snap.len()).rev().step_by(stride).collect();
        let g = gates(pod_level);
        let shape = RequestedToCapacityRatioParam {
            shape: vec![UtilizationShapePoint { utilization: 0, score: 2 }, UtilizationShapePoint { utilization: 70, score: 9 },
                UtilizationShapePoint { utilization: 100, score: 4 }],
        };
        for kind in [ScoringStrategyType::LeastAllocated, ScoringStrategyType::MostAllocated,
            ScoringStrategyType::RequestedToCapacityRatio]
        {
            let args = FitArgs {
                scoring_strategy: ScoringStrategy {
                    kind,
                    resources: vec![ResourceSpec::new("cpu", weights.0), ResourceSpec::new("memory", weights.1)],
                    requested_to_capacity_ratio: Some(shape.clone()),
                },
                ..FitArgs::default()
            };
            let fit = Fit::new(&args).unwrap().with_feature_gates(g);
            check_score(&fit, &snap, &pod, &all)?;
            check_score(&fit, &snap, &pod, &some)?;
            if kind == ScoringStrategyType::LeastAllocated {
                check_filter(&fit, &snap, &pod, &all)?;
                check_filter(&fit, &snap, &pod, &some)?;
            }
        }
        for scoring in [BalancedScoring::ChangeInBalance, BalancedScoring::BalanceAfterPlacement] {
            let args = BalancedAllocationArgs { scoring, ..BalancedAllocationArgs::default() };
            let ba = BalancedAllocation::new(&args).unwrap().with_feature_gates(g);
            check_score(&ba, &snap, &pod, &all)?;
            check_score(&ba, &snap, &pod, &some)?;
        }
    }
}

/// A chunk of the column Filter with every kind of shortage, against upstream's
/// reasons as `fitsRequest` orders them (`noderesources/fit.go`).
#[test]
fn column_filter_gives_upstream_reasons() {
    let nodes: [NodeSpec; 4] = [(4, 8, 2, 3), (1, 8, 2, 3), (4, 8, 2, 0), (1, 1, 0, 1)];
    // Node 1 is 1 core; node 3 holds a pod already (no pod room) and has 1 core, 1Gi.
    let snap = cluster(&nodes, &[(0, 0, 0, 0), (0, 0, 0, 0), (0, 0, 0, 0), (0, 0, 0, 0)]);
    let pod = PodInfo::new(pod("p", (2000, 2048, 1, 0)).build()).unwrap();
    let fit = Fit::new(&FitArgs::default()).unwrap();
    let mut state = CycleState::new();
    let _ = fit.pre_filter(&mut state, &pod, &snap);
    let all: Vec<usize> = (0..snap.len()).collect();
    let mut statuses = vec![Status::SUCCESS; all.len()];
    let failed = fit.filter_nodes(&state, &pod, NodeList::new(&snap, &all), &mut statuses);
    let at = |name: &str| snap.index_of(crate::model::Symbol::intern(name)).unwrap();
    assert_eq!(failed, (1 << at("n1")) | (1 << at("n2")) | (1 << at("n3")));
    assert!(statuses[at("n0")].is_success());
    let reasons = |n: &str| statuses[at(n)].reasons().iter().map(ToString::to_string).collect::<Vec<_>>();
    assert_eq!(reasons("n1"), ["Insufficient cpu"]);
    assert_eq!(statuses[at("n1")].code(), crate::framework::Code::UnschedulableAndUnresolvable);
    assert_eq!(reasons("n2"), ["Too many pods"]);
    assert_eq!(statuses[at("n2")].code(), crate::framework::Code::Unschedulable);
    assert_eq!(
        reasons("n3"),
        ["Too many pods", "Insufficient cpu", "Insufficient memory", "Insufficient ephemeral-storage"]
    );
    assert_eq!(statuses[at("n3")].code(), crate::framework::Code::UnschedulableAndUnresolvable);
}
