//! NodeResourcesFit and NodeResourcesBalancedAllocation against upstream's tables
//! (`pkg/scheduler/framework/plugins/noderesources/*_test.go`).
#![expect(clippy::type_complexity, reason = "table tests keep each case in a tuple, as upstream's tables do")]

mod support;

use schedkit::framework::{Code, Status};
use schedkit::model::Node;
use schedkit::plugins::node_resources::{
    BalancedAllocation, BalancedAllocationArgs, BalancedScoring, Fit, FitArgs, ResourceSpec, ScoringStrategy,
    ScoringStrategyType,
};
use schedkit::testing::{NodeBuilder, PodBuilder};
use support::plugins::*;

fn node(name: &str, cpu: &str, mem: &str) -> Node {
    NodeBuilder::new(name).cpu(cpu).memory(mem).build()
}

fn on(node: &str, containers: &[&[(&str, &str)]]) -> schedkit::model::Pod {
    let mut p = upod(containers);
    p.spec.node_name = node.into();
    p
}

fn fit(kind: ScoringStrategyType, resources: &[(&str, i64)]) -> Fit {
    Fit::new(&FitArgs {
        scoring_strategy: ScoringStrategy {
            kind,
            resources: resources.iter().map(|&(n, w)| ResourceSpec::new(n, w)).collect(),
            requested_to_capacity_ratio: None,
        },
        ..FitArgs::default()
    })
    .unwrap()
}

const CPU_MEM: &[(&str, i64)] = &[("cpu", 1), ("memory", 1)];

/// [`run_filter`], asserting that the batched Filter the scheduler runs
/// (`filter_nodes` over all nodes in one chunk) gives every node the same status.
fn run_filter_batched(
    p: &Fit,
    pod: &schedkit::model::Pod,
    snap: &schedkit::snapshot::Snapshot,
) -> Vec<(String, Status)> {
    use schedkit::framework::{CycleState, FilterPlugin, PreFilterPlugin};
    let per_node = run_filter(p, pod, snap);
    let info = schedkit::snapshot::PodInfo::new(pod.clone()).unwrap();
    let mut state = CycleState::new();
    let _ = p.pre_filter(&mut state, &info, snap);
    let all: Vec<usize> = (0..snap.len()).collect();
    let mut statuses = vec![Status::SUCCESS; all.len()];
    p.filter_nodes(&state, &info, schedkit::snapshot::NodeList::new(snap, &all), &mut statuses);
    for ((name, want), got) in per_node.iter().zip(&statuses) {
        assert_eq!(got, want, "filter_nodes on {name}");
    }
    per_node
}

/// Upstream `TestLeastAllocatedScoringStrategy` (least_allocated_test.go).
#[test]
fn least_allocated_upstream_table() {
    let least = fit(ScoringStrategyType::LeastAllocated, CPU_MEM);
    let two = |c1: &str, c2: &str| vec![node("node1", c1, "10000"), node("node2", c2, "10000")];
    let req: &[&[(&str, &str)]] = &[&[("cpu", "1000"), ("memory", "2000")], &[("cpu", "2000"), ("memory", "3000")]];
    let cases: Vec<(&str, schedkit::model::Pod, Vec<Node>, Vec<schedkit::model::Pod>, [i64; 2])> = vec![
        ("nothing scheduled, nothing requested", upod(&[]), two("4000", "4000"), vec![], [100, 100]),
        (
            "nothing scheduled, resources requested, differently sized nodes",
            upod(req),
            two("4000", "6000"),
            vec![],
            [37, 50],
        ),
        (
            "no resources requested, pods scheduled",
            upod(&[]),
            two("4000", "4000"),
            vec![on("node1", &[]), on("node1", &[]), on("node2", &[]), on("node2", &[])],
            [100, 100],
        ),
        (
            "no resources requested, pods scheduled with resources",
            upod(&[]),
            vec![node("node1", "10000", "20000"), node("node2", "10000", "20000")],
            vec![
                on("node1", &[&[("cpu", "3000"), ("memory", "0")]]),
                on("node1", &[&[("cpu", "3000"), ("memory", "0")]]),
                on("node2", &[&[("cpu", "3000"), ("memory", "0")]]),
                on("node2", &[&[("cpu", "3000"), ("memory", "5000")]]),
            ],
            [70, 57],
        ),
        (
            "resources requested, pods scheduled with resources",
            upod(req),
            vec![node("node1", "10000", "20000"), node("node2", "10000", "20000")],
            vec![
                on("node1", &[&[("cpu", "3000"), ("memory", "0")]]),
                on("node2", &[&[("cpu", "3000"), ("memory", "5000")]]),
            ],
            [57, 45],
        ),
        (
            "resources requested, pods scheduled with resources, differently sized nodes",
            upod(req),
            vec![node("node1", "10000", "20000"), node("node2", "10000", "50000")],
            vec![
                on("node1", &[&[("cpu", "3000"), ("memory", "0")]]),
                on("node2", &[&[("cpu", "3000"), ("memory", "5000")]]),
            ],
            [57, 60],
        ),
        (
            "requested resources exceed node capacity",
            upod(&[&[("cpu", "3000"), ("memory", "0")]]),
            two("4000", "4000"),
            vec![
                on("node1", &[&[("cpu", "3000"), ("memory", "0")]]),
                on("node2", &[&[("cpu", "3000"), ("memory", "5000")]]),
            ],
            [50, 25],
        ),
        (
            "zero node resources, pods scheduled with resources",
            upod(&[]),
            vec![NodeBuilder::new("node1").build(), NodeBuilder::new("node2").build()],
            vec![
                on("node1", &[&[("cpu", "3000"), ("memory", "0")]]),
                on("node2", &[&[("cpu", "3000"), ("memory", "5000")]]),
            ],
            [0, 0],
        ),
    ];
    for (name, pod, nodes, existing, want) in cases {
        let snap = snapshot(nodes, existing);
        let got = run_score(&least, &pod, &snap).unwrap();
        assert_eq!([got[0].1, got[1].1], want, "{name}");
    }
    // "nothing scheduled, resources requested with different weight on CPU and memory"
    let weighted = fit(ScoringStrategyType::LeastAllocated, &[("memory", 2), ("cpu", 1)]);
    let got = run_score(&weighted, &upod(req), &snapshot(two("4000", "6000"), vec![])).unwrap();
    assert_eq!([got[0].1, got[1].1], [41, 50]);
}

/// Upstream `TestLeastAllocatedScoringStrategy`: weights outside 1..=100 are rejected.
#[test]
fn scoring_weights_are_validated() {
    for (w, field) in [
        (-1, "scoringStrategy.resources[0].weight"),
        (0, "scoringStrategy.resources[0].weight"),
        (101, "scoringStrategy.resources[0].weight"),
    ] {
        let args = FitArgs {
            scoring_strategy: ScoringStrategy {
                resources: vec![ResourceSpec::new("memory", w)],
                ..ScoringStrategy::default()
            },
            ..FitArgs::default()
        };
        let err = Fit::new(&args).unwrap_err().to_string();
        assert!(err.starts_with(field), "{err}");
    }
}

/// After upstream `TestMostAllocatedScoringStrategy` (most_allocated_test.go).
#[test]
fn most_allocated() {
    let most = fit(ScoringStrategyType::MostAllocated, CPU_MEM);
    let req: &[&[(&str, &str)]] = &[&[("cpu", "1000"), ("memory", "2000")], &[("cpu", "2000"), ("memory", "3000")]];
    let snap = snapshot(vec![node("node1", "4000", "10000"), node("node2", "6000", "10000")], vec![]);
    // node1: cpu 3000/4000 = 75, mem 5000/10000 = 50 -> 62; node2: 50, 50 -> 50.
    let got = run_score(&most, &upod(req), &snap).unwrap();
    assert_eq!([got[0].1, got[1].1], [62, 50]);
    // Over capacity counts as full: cpu 6000/4000 -> 100, mem 0 -> 0 => 50.
    let snap =
        snapshot(vec![node("node1", "4000", "10000")], vec![on("node1", &[&[("cpu", "3000"), ("memory", "0")]])]);
    let got = run_score(&most, &upod(&[&[("cpu", "3000"), ("memory", "0")]]), &snap).unwrap();
    assert_eq!(got[0].1, 50);
}

/// After upstream `TestRequestedToCapacityRatioScoringStrategy`: shape (0,10),(100,0)
/// is "least allocated" on a 0..=10 scale scaled by 10, averaged with rounding.
#[test]
fn requested_to_capacity_ratio() {
    let args: FitArgs = serde_json::from_str(
        r#"{"scoringStrategy": {"type": "RequestedToCapacityRatio",
            "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}],
            "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]}}}"#,
    )
    .unwrap();
    let p = Fit::new(&args).unwrap();
    let snap = snapshot(vec![node("node1", "4000", "10000"), node("node2", "6000", "10000")], vec![]);
    let pod = upod(&[&[("cpu", "3000"), ("memory", "5000")]]);
    // node1: cpu 75% -> 25, mem 50% -> 50: round(75/2) = 38. node2: 50, 50 -> 50.
    let got = run_score(&p, &pod, &snap).unwrap();
    assert_eq!([got[0].1, got[1].1], [38, 50]);

    // Bin packing shape (0,0),(100,10): resources with score 0 are left out of the average.
    let args: FitArgs = serde_json::from_str(
        r#"{"scoringStrategy": {"type": "RequestedToCapacityRatio",
            "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]}}}"#,
    )
    .unwrap();
    let p = Fit::new(&args).unwrap();
    let pod = upod(&[&[("cpu", "2000"), ("memory", "0")]]);
    let snap = snapshot(vec![node("node1", "4000", "10000")], vec![]);
    // cpu 50% -> 50, memory 0% -> 0 (left out): 50.
    assert_eq!(run_score(&p, &pod, &snap).unwrap()[0].1, 50);
}

#[test]
fn requested_to_capacity_ratio_shapes_are_validated() {
    for (shape, want) in [
        ("[]", "at least one point"),
        (r#"[{"utilization": 50, "score": 1}, {"utilization": 50, "score": 2}]"#, "sorted in increasing order"),
        (r#"[{"utilization": 101, "score": 1}]"#, "must be in 0..=100"),
        (r#"[{"utilization": 10, "score": 11}]"#, "must be in 0..=10"),
        (r#"[{"utilization": -1, "score": 1}]"#, "must be in 0..=100"),
    ] {
        let args: FitArgs = serde_json::from_str(&format!(
            r#"{{"scoringStrategy": {{"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {{"shape": {shape}}}}}}}"#
        ))
        .unwrap();
        let err = Fit::new(&args).unwrap_err().to_string();
        assert!(err.contains(want), "{shape}: {err}");
    }
}

/// After upstream `TestEnoughRequests` (fit_test.go): reasons, their order, and the
/// v1.36 unresolvable code when the request exceeds the node's allocatable.
#[test]
fn filter_reasons_like_upstream() {
    let p = Fit::new(&FitArgs::default()).unwrap();
    let n = || NodeBuilder::new("n").cpu("10").memory("20").pods(32).allocatable("example.com/aaa", "5").build();
    let existing = vec![on("n", &[&[("cpu", "5"), ("memory", "5")]])];
    let cases: Vec<(&str, schedkit::model::Pod, Code, Vec<&str>)> = vec![
        ("no resources requested always fits", upod(&[]), Code::Success, vec![]),
        ("equal edge case", upod(&[&[("cpu", "5"), ("memory", "15")]]), Code::Success, vec![]),
        (
            "too many resources fails",
            upod(&[&[("cpu", "6"), ("memory", "16")]]),
            Code::Unschedulable,
            vec!["Insufficient cpu", "Insufficient memory"],
        ),
        (
            "one resource fails",
            upod(&[&[("cpu", "1"), ("memory", "16")]]),
            Code::Unschedulable,
            vec!["Insufficient memory"],
        ),
        (
            "larger than the node is unresolvable",
            upod(&[&[("cpu", "11"), ("memory", "1")]]),
            Code::UnschedulableAndUnresolvable,
            vec!["Insufficient cpu"],
        ),
        ("extended resource fits", upod(&[&[("example.com/aaa", "5")]]), Code::Success, vec![]),
        (
            "extended resource absent on node",
            upod(&[&[("example.com/bbb", "1")]]),
            Code::UnschedulableAndUnresolvable,
            vec!["Insufficient example.com/bbb"],
        ),
        (
            "init container larger",
            {
                let mut p = upod(&[&[("cpu", "1")]]);
                p.spec.init_containers.push(upod(&[&[("cpu", "6")]]).spec.containers.remove(0));
                p
            },
            Code::Unschedulable,
            vec!["Insufficient cpu"],
        ),
    ];
    for (name, pod, code, reasons) in cases {
        let snap = snapshot(vec![n()], existing.clone());
        let got = &run_filter_batched(&p, &pod, &snap)[0].1;
        assert_eq!(got.code(), code, "{name}: {got:?}");
        assert_eq!(got.reasons(), reasons, "{name}");
    }
    // Too many pods (upstream "even without specified resources, predicate fails when there's no space for additional pod").
    let snap = snapshot(vec![NodeBuilder::new("n").cpu("10").pods(1).build()], vec![on("n", &[])]);
    let got = &run_filter_batched(&p, &upod(&[]), &snap)[0].1;
    assert_eq!((got.code(), got.message()), (Code::Unschedulable, "Too many pods".to_string()));
}

/// Upstream `TestEnoughRequests` "skip checking ignored extended resource" and
/// "skip checking ignored resource groups".
#[test]
fn ignored_resources_and_groups() {
    let n = || NodeBuilder::new("n").cpu("10").memory("20").build();
    let pod = upod(&[&[("example.com/aaa", "5"), ("kubernetes.io/bbb", "1")]]);
    let ignored =
        Fit::new(&FitArgs { ignored_resources: vec!["example.com/aaa".into()], ..FitArgs::default() }).unwrap();
    let got = &run_filter_batched(&ignored, &pod, &snapshot(vec![n()], vec![]))[0].1;
    // kubernetes.io/ names are native: never ignorable.
    assert_eq!(got.reasons(), ["Insufficient kubernetes.io/bbb"]);
    let group =
        Fit::new(&FitArgs { ignored_resource_groups: vec!["example.com".into()], ..FitArgs::default() }).unwrap();
    let got = &run_filter_batched(&group, &upod(&[&[("example.com/aaa", "5")]]), &snapshot(vec![n()], vec![]))[0].1;
    assert!(got.is_success());
    assert!(
        Fit::new(&FitArgs { ignored_resource_groups: vec!["example.com/aaa".into()], ..FitArgs::default() }).is_err()
    );
}

/// Balanced allocation, both scores. Values computed by hand from upstream's formula
/// (`balanced_allocation.go`), and the v1.36 change-in-balance from
/// kubernetes/kubernetes#135573.
#[test]
fn balanced_allocation_both_scores() {
    let nodes = || vec![node("node1", "4000", "10000"), node("node2", "6000", "10000")];
    let pod = upod(&[&[("cpu", "3000"), ("memory", "5000")]]);
    let legacy = BalancedAllocation::new(&BalancedAllocationArgs {
        scoring: BalancedScoring::BalanceAfterPlacement,
        ..Default::default()
    })
    .unwrap();
    // node1: cpu .75 mem .5 -> std .125 -> 87; node2: .5 .5 -> 100.
    let got = run_score(&legacy, &pod, &snapshot(nodes(), vec![])).unwrap();
    assert_eq!([got[0].1, got[1].1], [87, 100]);
    let change = BalancedAllocation::new(&BalancedAllocationArgs::default()).unwrap();
    // Empty nodes are perfectly balanced before (100): node1 50 + (50 + 87 - 100)/2 = 68;
    // node2 50 + (50 + 100 - 100)/2 = 75.
    let got = run_score(&change, &pod, &snapshot(nodes(), vec![])).unwrap();
    assert_eq!([got[0].1, got[1].1], [68, 75]);
    // A pod that repairs an imbalance scores above 75: node1 has cpu 3000/4000 used,
    // memory 0; the pod asks only memory 7500 -> before std .375 (62), after .0 (100).
    let existing = vec![on("node1", &[&[("cpu", "3000"), ("memory", "0")]])];
    let got = run_score(
        &change,
        &upod(&[&[("cpu", "0"), ("memory", "7500")]]),
        &snapshot(vec![node("node1", "4000", "10000")], existing),
    )
    .unwrap();
    assert_eq!(got[0].1, 50 + (50 + 100 - 62) / 2);
    // Best-effort pods skip the plugin (upstream issue #129138).
    assert!(run_score(&change, &upod(&[&[]]), &snapshot(nodes(), vec![])).is_none());
    assert!(run_score(&change, &PodBuilder::new("be").build(), &snapshot(nodes(), vec![])).is_none());
}

mod props {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// NodeResourcesFit never admits a pod to a node where any requested resource
        /// exceeds allocatable minus requested; scores stay in 0..=100.
        #[test]
        fn fit_is_sound(
            alloc in proptest::collection::vec(0i64..64, 3),
            used in proptest::collection::vec(0i64..64, 3),
            req in proptest::collection::vec(0i64..64, 3),
            kind in 0usize..2,
        ) {
            let n = NodeBuilder::new("n").cpu(&alloc[0].to_string()).memory(&alloc[1].to_string())
                .allocatable("example.com/gpu", &alloc[2].to_string()).build();
            let existing = vec![on("n", &[&[("cpu", &used[0].to_string()), ("memory", &used[1].to_string()), ("example.com/gpu", &used[2].to_string())]])];
            let pod = upod(&[&[("cpu", &req[0].to_string()), ("memory", &req[1].to_string()), ("example.com/gpu", &req[2].to_string())]]);
            let snap = snapshot(vec![n], existing);
            let p = fit([ScoringStrategyType::LeastAllocated, ScoringStrategyType::MostAllocated][kind], &[("cpu", 1), ("memory", 2), ("example.com/gpu", 3)]);
            let admitted = run_filter_batched(&p, &pod, &snap)[0].1.is_success();
            let fits = (0..3).all(|i| req[i] == 0 || req[i] <= alloc[i] - used[i]);
            prop_assert_eq!(admitted, fits);
            let s = run_score(&p, &pod, &snap).unwrap()[0].1;
            prop_assert!((0..=100).contains(&s));
            let b = BalancedAllocation::new(&BalancedAllocationArgs::default()).unwrap();
            if let Some(v) = run_score(&b, &pod, &snap) {
                prop_assert!((0..=100).contains(&v[0].1));
            }
        }

        /// The batched Filter (`filter_nodes`, with its one-pass path for pods without
        /// extended resources) gives every node of a cluster the per-node `filter`
        /// status (code, reasons and their order), on empty, full, overfull,
        /// pod-limited and allocatable-0 nodes.
        #[test]
        fn batched_filter_equals_per_node_filter(
            nodes in proptest::collection::vec((0i64..5, 0i64..5, 0i64..6, 0i64..6, 1i64..4, 0usize..4), 1..8),
            req in (0i64..4, 0i64..4, 0i64..3),
            extended in 0i64..3,
        ) {
            let mut list = Vec::new();
            let mut existing = Vec::new();
            for (i, &(ac, am, uc, um, max_pods, pods)) in nodes.iter().enumerate() {
                let name = format!("n{i}");
                list.push(NodeBuilder::new(&name).cpu(&(ac * 1000).to_string()).memory(&(am * 1000).to_string())
                    .pods(max_pods).allocatable("example.com/gpu", &ac.to_string()).build());
                existing.push(on(&name, &[&[("cpu", &(uc * 500).to_string()), ("memory", &(um * 500).to_string())]]));
                for _ in 0..pods {
                    existing.push(on(&name, &[&[]]));
                }
            }
            let snap = snapshot(list, existing);
            let mut c = vec![("cpu".to_owned(), (req.0 * 700).to_string()), ("memory".to_owned(), (req.1 * 700).to_string())];
            if req.2 > 0 {
                c.push(("ephemeral-storage".to_owned(), (req.2 * 100).to_string()));
            }
            if extended > 0 {
                c.push(("example.com/gpu".to_owned(), extended.to_string()));
            }
            let c: Vec<(&str, &str)> = c.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
            let p = Fit::new(&FitArgs::default()).unwrap();
            run_filter_batched(&p, &upod(&[&c]), &snap);
        }

        /// The batched Score the scheduler runs (`score_nodes`, with a straight loop for
        /// the default `[cpu, memory]`) gives exactly the per-node `score` of
        /// NodeResourcesFit (all three strategies, random weights) and of
        /// BalancedAllocation (both scorings), on clusters with empty, full, overfull
        /// and allocatable-0 nodes, with the `PodLevelResources` gate on and off.
        /// `run_score` asserts the agreement for every node.
        #[test]
        fn batched_resource_scores_equal_per_node_scores(
            nodes in proptest::collection::vec((0i64..5, 0i64..5, 0i64..6, 0i64..6, any::<bool>()), 1..6),
            req in (0i64..4, 0i64..4),
            weights in (1i64..=100, 1i64..=100),
            kind in 0usize..3,
            extended in any::<bool>(),
            pod_level in any::<bool>(),
        ) {
            let gates = schedkit::framework::FeatureGates::default()
                .with(schedkit::framework::Feature::PodLevelResources, pod_level);
            let mut list = Vec::new();
            let mut existing = Vec::new();
            for (i, &(ac, am, uc, um, defaults)) in nodes.iter().enumerate() {
                let name = format!("n{i}");
                list.push(NodeBuilder::new(&name).cpu(&(ac * 1000).to_string()).memory(&(am * 1000).to_string())
                    .allocatable("example.com/gpu", &ac.to_string()).build());
                existing.push(on(&name, &[&[("cpu", &(uc * 500).to_string()), ("memory", &(um * 500).to_string())]]));
                if defaults {
                    // No requests: the scoring defaults (100m, 200Mi) count in Fit's score.
                    existing.push(on(&name, &[&[]]));
                }
            }
            let snap = snapshot(list, existing);
            let pod = upod(&[&[("cpu", &(req.0 * 700).to_string()), ("memory", &(req.1 * 700).to_string()),
                ("example.com/gpu", &u8::from(extended).to_string())]]);
            let mut resources = vec![("cpu", weights.0), ("memory", weights.1)];
            if extended {
                resources.push(("example.com/gpu", 3));
            }
            let mut args = FitArgs {
                scoring_strategy: ScoringStrategy {
                    kind: [ScoringStrategyType::LeastAllocated, ScoringStrategyType::MostAllocated,
                        ScoringStrategyType::RequestedToCapacityRatio][kind],
                    resources: resources.iter().map(|&(n, w)| ResourceSpec::new(n, w)).collect(),
                    requested_to_capacity_ratio: None,
                },
                ..FitArgs::default()
            };
            if kind == 2 {
                args.scoring_strategy.requested_to_capacity_ratio = Some(serde_json::from_str(
                    r#"{"shape": [{"utilization": 0, "score": 10}, {"utilization": 60, "score": 3}, {"utilization": 100, "score": 0}]}"#,
                ).unwrap());
            }
            let fit = Fit::new(&args).unwrap().with_feature_gates(gates);
            let got = run_score(&fit, &pod, &snap).unwrap();
            prop_assert!(got.iter().all(|(_, s)| (0..=100).contains(s)));
            for scoring in [BalancedScoring::ChangeInBalance, BalancedScoring::BalanceAfterPlacement] {
                let b = BalancedAllocation::new(&BalancedAllocationArgs {
                    resources: resources.iter().map(|&(n, w)| ResourceSpec::new(n, w)).collect(),
                    scoring,
                })
                .unwrap()
                .with_feature_gates(gates);
                if let Some(got) = run_score(&b, &pod, &snap) {
                    prop_assert!(got.iter().all(|(_, s)| (0..=100).contains(s)));
                }
            }
        }

        /// Filter's rejection (built from fixed reason lists when the pod asks for no
        /// extended resource) has exactly the reasons, order and code of upstream's
        /// `fitsRequest` as `insufficient_resources` reports them: pods, cpu, memory,
        /// ephemeral-storage, then extended resources; UnschedulableAndUnresolvable when
        /// a request exceeds allocatable.
        #[test]
        fn rejection_reasons_are_those_of_fits_request(
            alloc in proptest::collection::vec(0i64..8, 4),
            used in proptest::collection::vec(0i64..8, 4),
            req in proptest::collection::vec(0i64..8, 4),
            max_pods in 1i64..3,
            existing_pods in 0usize..3,
            extended in any::<bool>(),
        ) {
            let n = NodeBuilder::new("n").cpu(&alloc[0].to_string()).memory(&alloc[1].to_string())
                .allocatable("ephemeral-storage", &alloc[2].to_string())
                .allocatable("example.com/gpu", &alloc[3].to_string()).pods(max_pods).build();
            let mut existing = vec![on("n", &[&[("cpu", &used[0].to_string()), ("memory", &used[1].to_string()),
                ("ephemeral-storage", &used[2].to_string()), ("example.com/gpu", &used[3].to_string())]])];
            existing.extend((1..existing_pods).map(|_| on("n", &[&[]])));
            let mut amounts = vec![("cpu", req[0].to_string()), ("memory", req[1].to_string()),
                ("ephemeral-storage", req[2].to_string())];
            if extended {
                amounts.push(("example.com/gpu", req[3].to_string()));
            }
            let amounts: Vec<(&str, &str)> = amounts.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let pod = upod(&[&amounts]);
            let snap = snapshot(vec![n], existing);
            let p = Fit::new(&FitArgs::default()).unwrap();
            let got = run_filter(&p, &pod, &snap).remove(0).1;
            let info = schedkit::snapshot::PodInfo::new(pod.clone()).unwrap();
            let short = p.insufficient_resources(&info, &snap.nodes()[0]);
            if short.is_empty() {
                prop_assert!(got.is_success());
            } else {
                let code = if short.iter().any(|i| i.unresolvable) { Code::UnschedulableAndUnresolvable } else { Code::Unschedulable };
                prop_assert_eq!(got.code(), code);
                let want: Vec<&str> = short.iter().map(|i| &*i.reason).collect();
                prop_assert_eq!(got.reasons(), want.as_slice());
            }
        }
    }
}

/// Upstream `TestPluginArgsDefaults` (pkg/scheduler/apis/config/v1/defaults_test.go),
/// the NodeResourcesFit and BalancedAllocation cases, plus its weight rule (0 becomes 1).
#[test]
fn args_defaults_like_upstream() {
    let defaults = vec![ResourceSpec::new("cpu", 1), ResourceSpec::new("memory", 1)];
    let cases: [(&str, &str, ScoringStrategyType, Vec<ResourceSpec>); 4] = [
        ("NodeResourcesFitArgs not set", "{}", ScoringStrategyType::LeastAllocated, defaults.clone()),
        (
            "NodeResourcesFitArgs Resources empty",
            r#"{"scoringStrategy": {"type": "MostAllocated"}}"#,
            ScoringStrategyType::MostAllocated,
            defaults.clone(),
        ),
        (
            "NodeResourcesFitArgs Resources explicitly empty",
            r#"{"scoringStrategy": {"type": "MostAllocated", "resources": []}}"#,
            ScoringStrategyType::MostAllocated,
            defaults.clone(),
        ),
        (
            "NodeResourcesFitArgs weight 0 becomes 1",
            r#"{"scoringStrategy": {"resources": [{"name": "cpu", "weight": 0}, {"name": "nvidia.com/gpu", "weight": 3}]}}"#,
            ScoringStrategyType::LeastAllocated,
            vec![ResourceSpec::new("cpu", 1), ResourceSpec::new("nvidia.com/gpu", 3)],
        ),
    ];
    for (name, json, kind, want) in cases {
        let mut args: FitArgs = serde_json::from_str(json).unwrap();
        args.set_defaults();
        assert_eq!(args.scoring_strategy.kind, kind, "{name}");
        assert_eq!(args.scoring_strategy.resources, want, "{name}");
        let v: serde_json::Value = serde_json::from_str(json).unwrap();
        assert!(Fit::from_config(Some(&v)).is_ok(), "{name}: builds from config");
    }
    let mut ba: BalancedAllocationArgs = serde_json::from_str(r#"{"resources": []}"#).unwrap();
    ba.set_defaults();
    assert_eq!(ba.resources, defaults, "NodeResourcesBalancedAllocationArgs resources empty");
    let mut ba: BalancedAllocationArgs =
        serde_json::from_str(r#"{"resources": [{"name": "cpu", "weight": 0}]}"#).unwrap();
    ba.set_defaults();
    assert_eq!(ba.resources, [ResourceSpec::new("cpu", 1)]);
}

/// An explicitly empty resource list: from a configuration it defaults and scores as
/// `[cpu, memory]`; built directly (upstream `NewFit` on internal args) it builds, and
/// Score fails with upstream's "resources not found" (`resource_allocation.go`).
#[test]
fn empty_scored_resources() {
    use schedkit::framework::{PreScorePlugin, ScorePlugin};
    let nodes = vec![node("n1", "4", "8Gi"), node("n2", "8", "8Gi")];
    let snap = snapshot(nodes, vec![]);
    let pod = upod(&[&[("cpu", "1"), ("memory", "1Gi")]]);
    let v: serde_json::Value = serde_json::from_str(r#"{"scoringStrategy": {"resources": []}}"#).unwrap();
    let configured = Fit::from_config(Some(&v)).unwrap();
    let default = Fit::from_config(None).unwrap();
    assert_eq!(run_score(&configured, &pod, &snap), run_score(&default, &pod, &snap));

    let direct = fit(ScoringStrategyType::LeastAllocated, &[]);
    let info = schedkit::snapshot::PodInfo::new(pod).unwrap();
    let mut state = schedkit::framework::CycleState::new();
    let idx = [0usize, 1];
    assert!(direct.pre_score(&mut state, &info, schedkit::snapshot::NodeList::new(&snap, &idx)).is_success());
    let err = direct.score(&state, &info, &snap.nodes()[0]).unwrap_err();
    assert_eq!((err.code(), err.message()), (Code::Error, "resources not found".to_owned()));
    let mut scores: Vec<_> =
        snap.nodes().iter().map(|n| schedkit::framework::NodeScore { name: n.name(), score: 0 }).collect();
    let err =
        direct.score_nodes(&state, &info, schedkit::snapshot::NodeList::new(&snap, &idx), &mut scores).unwrap_err();
    assert_eq!(err.code(), Code::Error);
}
