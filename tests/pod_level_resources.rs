//! Pod-level resources (`spec.resources`, PodLevelResources) in NodeResourcesFit, the
//! resource scorers and BalancedAllocation, against upstream's tables
//! (`pkg/scheduler/framework/plugins/noderesources/fit_test.go`), with the gate on and off.
#![expect(clippy::type_complexity, reason = "table tests keep each case in a tuple, as upstream's tables do")]

mod support;

use std::sync::Arc;

use proptest::prelude::*;
use schedkit::framework::{Code, Feature, FeatureGates};
use schedkit::model::{Node, Pod, ResourceList, ResourceRequirements};
use schedkit::plugins::node_resources::{
    BalancedAllocation, BalancedAllocationArgs, BalancedScoring, Fit, FitArgs, InsufficientResource,
};
use schedkit::snapshot::{NodeInfo, PodInfo};
use schedkit::testing::NodeBuilder;
use support::plugins::*;

const HUGE: &str = "hugepages-2Mi";

fn gates(pod_level: bool) -> FeatureGates {
    FeatureGates::default().with(Feature::PodLevelResources, pod_level)
}

fn with_pod_level(mut pod: Pod, reqs: &[(&str, &str)]) -> Pod {
    pod.spec.resources = Some(ResourceRequirements {
        requests: ResourceList::parse(reqs.iter().copied()).unwrap(),
        ..Default::default()
    });
    pod
}

/// Upstream's `makeAllocatableResources(10, 20, 32, 5, 20, 5)`: 10m cpu, 20 bytes of
/// memory, 32 pods, 5 of an extended resource, 20 of ephemeral storage, 5 hugepages.
fn fit_node() -> Node {
    NodeBuilder::new("n")
        .allocatable("cpu", "10m")
        .allocatable("memory", "20")
        .pods(32)
        .allocatable("example.com/aaa", "5")
        .allocatable("ephemeral-storage", "20")
        .allocatable(HUGE, "5")
        .build()
}

fn on_node(cpu_m: i64, mem: i64) -> Pod {
    let mut p = upod(&[&[("cpu", &format!("{cpu_m}m")), ("memory", &mem.to_string())]]);
    p.spec.node_name = "n".into();
    p
}

/// The pod-level cases of upstream `TestEnoughRequests` (fit_test.go), gate on: the
/// Filter status and every insufficient resource `(name, requested, used, capacity)`.
#[test]
fn enough_requests_pod_level_cases() {
    let cm11: &[(&str, &str)] = &[("cpu", "1m"), ("memory", "1")];
    let cases: Vec<(&str, Pod, Option<(i64, i64)>, Option<(Code, &str)>, Vec<(&str, i64, i64, i64)>)> = vec![
        (
            "both pod-level and container-level resources fit",
            with_pod_level(upod(&[cm11]), &[("cpu", "1m"), ("memory", "2")]),
            Some((5, 5)),
            None,
            vec![],
        ),
        (
            "pod-level cpu resource not fit",
            with_pod_level(upod(&[cm11]), &[("cpu", "7m"), ("memory", "2")]),
            Some((5, 5)),
            Some((Code::Unschedulable, "Insufficient cpu")),
            vec![("cpu", 7, 5, 10)],
        ),
        (
            "pod-level memory resource not fit",
            with_pod_level(upod(&[cm11]), &[("cpu", "3m"), ("memory", "2")]),
            Some((5, 19)),
            Some((Code::Unschedulable, "Insufficient memory")),
            vec![("memory", 2, 19, 20)],
        ),
        (
            "pod-level hugepages resource fit",
            with_pod_level(upod(&[]), &[("cpu", "3m"), ("memory", "2"), (HUGE, "5")]),
            None,
            None,
            vec![],
        ),
        (
            "both pod-level and container-level hugepages resource fit",
            with_pod_level(
                upod(&[&[("cpu", "1m"), ("memory", "1"), (HUGE, "3")]]),
                &[("cpu", "3m"), ("memory", "2"), (HUGE, "5")],
            ),
            None,
            None,
            vec![],
        ),
        (
            "pod-level hugepages resource not fit",
            with_pod_level(upod(&[]), &[("cpu", "3m"), ("memory", "2"), (HUGE, "10")]),
            None,
            Some((Code::UnschedulableAndUnresolvable, "Insufficient hugepages-2Mi")),
            vec![(HUGE, 10, 0, 5)],
        ),
        (
            "one pod-level cpu resource fits and all init and non-init containers resources fit",
            {
                let mut p = with_pod_level(upod(&[cm11]), &[("cpu", "3m"), ("memory", "2")]);
                p.spec.init_containers = upod(&[cm11]).spec.containers;
                p
            },
            Some((5, 19)),
            Some((Code::Unschedulable, "Insufficient memory")),
            vec![("memory", 2, 19, 20)],
        ),
    ];
    let fit = Fit::new(&FitArgs::default()).unwrap().with_feature_gates(gates(true));
    for (name, pod, existing, want_status, want_insufficient) in cases {
        let snap = snapshot(vec![fit_node()], existing.map(|(c, m)| on_node(c, m)).into_iter().collect());
        let got = &run_filter(&fit, &pod, &snap)[0].1;
        match want_status {
            None => assert!(got.is_success(), "{name}: {got:?}"),
            Some((code, reason)) => {
                assert_eq!(got.code(), code, "{name}");
                assert_eq!(got.message(), reason, "{name}");
            }
        }
        let info = PodInfo::new(pod).unwrap();
        let got: Vec<(String, i64, i64, i64)> = fit
            .insufficient_resources(&info, &snap.nodes()[0])
            .into_iter()
            .map(|InsufficientResource { resource, requested, used, capacity, .. }| {
                (resource.as_str().to_owned(), requested, used, capacity)
            })
            .collect();
        let want: Vec<(String, i64, i64, i64)> =
            want_insufficient.into_iter().map(|(n, r, u, c)| (n.to_owned(), r, u, c)).collect();
        assert_eq!(got, want, "{name}");
    }
}

/// With the gate off (upstream `podLevelResourcesEnabled: false`), the pod-level
/// requests are skipped: the 7m pod-level cpu case fits on its 1m container request.
#[test]
fn gate_off_skips_pod_level_requests_in_filter() {
    let pod = with_pod_level(upod(&[&[("cpu", "1m"), ("memory", "1")]]), &[("cpu", "7m"), ("memory", "2")]);
    let snap = snapshot(vec![fit_node()], vec![on_node(5, 5)]);
    let on = Fit::new(&FitArgs::default()).unwrap().with_feature_gates(gates(true));
    let off = Fit::new(&FitArgs::default()).unwrap().with_feature_gates(gates(false));
    assert_eq!(run_filter(&on, &pod, &snap)[0].1.message(), "Insufficient cpu");
    assert!(run_filter(&off, &pod, &snap)[0].1.is_success());
}

/// A node already running a pod with pod-level requests counts them (gate on) or its
/// containers only (gate off), through adds and removes.
#[test]
fn node_totals_follow_the_gate() {
    let mut node = NodeInfo::new(Arc::new(NodeBuilder::new("n").cpu("4").memory("8Gi").build()));
    let plain = Arc::new(PodInfo::new(upod(&[&[("cpu", "500m")]])).unwrap());
    node.add_pod(plain.clone());
    let mut pl = with_pod_level(upod(&[&[("cpu", "1"), ("memory", "1Gi")]]), &[("cpu", "2")]);
    pl.metadata.name = "pl".into();
    let pl = Arc::new(PodInfo::new(pl).unwrap());
    node.add_pod(pl.clone());
    assert_eq!(node.requested_for(true).milli_cpu, 2500);
    assert_eq!(node.requested_for(false).milli_cpu, 1500);
    assert_eq!(node.non_zero_requested_for(true).milli_cpu, 2500);
    // The plain pod lists no memory: the 200Mi default, plus 1Gi from the other.
    assert_eq!(node.non_zero_requested_for(false).memory, (1 << 30) + 200 * 1024 * 1024);
    node.remove_pod_info(&pl);
    assert_eq!(node.requested_for(false), node.requested_for(true));
    assert_eq!(node.requested_for(false).milli_cpu, 500);
    assert_eq!(node.requested_for(false).allowed_pod_number, 1);
}

fn scoring_snapshot() -> schedkit::snapshot::Snapshot {
    // Existing pod: containers 1 cpu, 1Gi; pod level 2 cpu.
    let mut existing = with_pod_level(upod(&[&[("cpu", "1"), ("memory", "1Gi")]]), &[("cpu", "2")]);
    existing.spec.node_name = "n1".into();
    snapshot(vec![NodeBuilder::new("n1").cpu("4").memory("8Gi").build()], vec![existing])
}

fn scoring_pod() -> Pod {
    with_pod_level(upod(&[&[("cpu", "1"), ("memory", "3Gi")]]), &[("cpu", "3")])
}

/// LeastAllocated (upstream `leastResourceScorer`, least_allocated.go) over pod-level
/// requests, for the pod and the pod on the node: with the gate on, cpu is 2+3 of 4
/// (score 0) and memory 4Gi of 8Gi (50), mean 25; off, cpu 1+1 of 4 (50), mean 50.
#[test]
fn least_allocated_counts_pod_level_requests() {
    let snap = scoring_snapshot();
    let on = Fit::new(&FitArgs::default()).unwrap().with_feature_gates(gates(true));
    let off = Fit::new(&FitArgs::default()).unwrap().with_feature_gates(gates(false));
    assert_eq!(run_score(&on, &scoring_pod(), &snap).unwrap()[0].1, 25);
    assert_eq!(run_score(&off, &scoring_pod(), &snap).unwrap()[0].1, 50);
}

/// BalancedAllocation (balanced_allocation.go) over pod-level requests: gate on, the
/// fractions with the pod are cpu 1 (capped) and memory 0.5, std 0.25, score 75; off,
/// both 0.5, score 100.
#[test]
fn balanced_allocation_counts_pod_level_requests() {
    let snap = scoring_snapshot();
    let args = BalancedAllocationArgs { scoring: BalancedScoring::BalanceAfterPlacement, ..Default::default() };
    let on = BalancedAllocation::new(&args).unwrap().with_feature_gates(gates(true));
    let off = BalancedAllocation::new(&args).unwrap().with_feature_gates(gates(false));
    assert_eq!(run_score(&on, &scoring_pod(), &snap).unwrap()[0].1, 75);
    assert_eq!(run_score(&off, &scoring_pod(), &snap).unwrap()[0].1, 100);
}

proptest! {
    /// No pod-level request is ever ignored by Fit: a pod whose pod-level request of
    /// cpu, memory or hugepages exceeds the node's free amount never passes Filter,
    /// whatever its containers ask for and whatever runs on the node.
    #[test]
    fn fit_never_ignores_a_pod_level_request(
        alloc in (1i64..64, 1i64..64, 0i64..64),
        used in (0i64..32, 0i64..32, 0i64..32),
        used_pod_level in proptest::option::of((0i64..32, 0i64..32)),
        containers in proptest::collection::vec((0i64..16, 0i64..16, 0i64..16), 0..3),
        pod_level in (proptest::option::of(0i64..96), proptest::option::of(0i64..96), proptest::option::of(0i64..96)),
    ) {
        let node = NodeBuilder::new("n")
            .allocatable("cpu", &format!("{}m", alloc.0))
            .allocatable("memory", &alloc.1.to_string())
            .allocatable(HUGE, &alloc.2.to_string())
            .build();
        let mut existing = upod(&[&[
            ("cpu", &format!("{}m", used.0)),
            ("memory", &used.1.to_string()),
            (HUGE, &used.2.to_string()),
        ]]);
        if let Some((c, m)) = used_pod_level {
            existing = with_pod_level(existing, &[("cpu", &format!("{c}m")), ("memory", &m.to_string())]);
        }
        existing.spec.node_name = "n".into();
        let snap = snapshot(vec![node], vec![existing]);
        let n = &snap.nodes()[0];
        let free = |name: &str| {
            let s = schedkit::model::Symbol::intern(name);
            n.allocatable().get(s) - n.requested().get(s)
        };
        let texts: Vec<[String; 3]> =
            containers.iter().map(|(c, m, h)| [format!("{c}m"), m.to_string(), h.to_string()]).collect();
        let reqs: Vec<Vec<(&str, &str)>> =
            texts.iter().map(|t| vec![("cpu", t[0].as_str()), ("memory", t[1].as_str()), (HUGE, t[2].as_str())]).collect();
        let refs: Vec<&[(&str, &str)]> = reqs.iter().map(Vec::as_slice).collect();
        let mut levels: Vec<(&str, String)> = Vec::new();
        if let Some(c) = pod_level.0 { levels.push(("cpu", format!("{c}m"))); }
        if let Some(m) = pod_level.1 { levels.push(("memory", m.to_string())); }
        if let Some(h) = pod_level.2 { levels.push((HUGE, h.to_string())); }
        let level_refs: Vec<(&str, &str)> = levels.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let pod = with_pod_level(upod(&refs), &level_refs);
        let over = (pod_level.0.is_some_and(|c| c > 0 && c > free("cpu")))
            || (pod_level.1.is_some_and(|m| m > 0 && m > free("memory")))
            || (pod_level.2.is_some_and(|h| h > 0 && h > free(HUGE)));
        let fit = Fit::new(&FitArgs::default()).unwrap();
        let status = &run_filter(&fit, &pod, &snap)[0].1;
        if over {
            prop_assert!(!status.is_success(), "pod-level request over the free amount passed: {status:?}");
        }
    }
}
