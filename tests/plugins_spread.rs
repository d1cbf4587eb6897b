//! PodTopologySpread: Filter and Score tables ported from upstream
//! `pkg/scheduler/framework/plugins/podtopologyspread/{filtering,scoring}_test.go`
//! (and the minDomains/inclusion-policy cases of
//! `test/integration/scheduler/filters/filters_test.go`), the AddPod/RemovePod
//! extensions, args validation, and a skew property.

use std::alloc::System;
use std::sync::Arc;

use proptest::prelude::*;
use schedkit::framework::{
    Code, CycleState, FilterPlugin, Handle, MAX_NODE_SCORE, NodeScore, PreFilterPlugin, PreScorePlugin, ScorePlugin,
};
use schedkit::model::{
    Affinity, LabelOperator, LabelSelector, LabelSelectorRequirement, Labels, Node, NodeAffinity, NodeInclusionPolicy,
    NodeSelector, NodeSelectorOperator, NodeSelectorRequirement, NodeSelectorTerm, Pod, Symbol, TaintEffect,
    TopologySpreadConstraint, UnsatisfiableConstraintAction,
};
use schedkit::plugins::pod_topology_spread::{
    DefaultingType, PodTopologySpread, PodTopologySpreadArgs, PodTopologySpreadArgsError, WorkloadKind,
    WorkloadSelectors,
};
use schedkit::snapshot::{NodeInfo, NodeList, PodInfo, Snapshot};
use schedkit::testing::{NodeBuilder, PodBuilder};
use smallvec::SmallVec;
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

use UnsatisfiableConstraintAction::{DoNotSchedule, ScheduleAnyway};

const HOST: &str = "kubernetes.io/hostname";

// ---- builders in the spirit of upstream's st.MakeNode()/st.MakePod() ----

fn node(name: &str, labels: &[(&str, &str)]) -> Node {
    labels.iter().fold(NodeBuilder::new(name), |b, (k, v)| b.label(k, v)).build()
}

/// `node` with upstream's `taints` fixture (`node.kubernetes.io/unschedulable:NoSchedule`).
fn tainted(name: &str, labels: &[(&str, &str)]) -> Node {
    let mut n = node(name, labels);
    n.spec.taints.push(schedkit::model::Taint::new("node.kubernetes.io/unschedulable", "", TaintEffect::NoSchedule));
    n
}

/// A pod named `name` on `node`, labelled `foo=""` (upstream's most common existing pod).
fn foo_on(name: &str, node: &str) -> Pod {
    PodBuilder::new(name).node_name(node).label("foo", "").build()
}

fn exists(key: &str) -> LabelSelector {
    let req =
        LabelSelectorRequirement { key: Symbol::intern(key), operator: LabelOperator::Exists, values: SmallVec::new() };
    LabelSelector::new(Labels::new(), vec![req]).unwrap()
}

fn spread(
    max_skew: i32,
    key: &str,
    action: UnsatisfiableConstraintAction,
    selector: Option<LabelSelector>,
) -> TopologySpreadConstraint {
    TopologySpreadConstraint {
        max_skew,
        topology_key: Symbol::intern(key),
        when_unsatisfiable: action,
        label_selector: selector,
        min_domains: None,
        node_affinity_policy: None,
        node_taints_policy: None,
        match_label_keys: Vec::new(),
    }
}

/// Incoming pod `p` with `labels` and `constraints`.
fn incoming(labels: &[(&str, &str)], constraints: Vec<TopologySpreadConstraint>) -> PodBuilder {
    labels
        .iter()
        .fold(PodBuilder::new("p"), |b, (k, v)| b.label(k, v))
        .with(move |p| p.spec.topology_spread_constraints = constraints)
}

fn node_affinity_in(key: &str, values: &[&str]) -> impl FnOnce(&mut Pod) {
    let term = NodeSelectorTerm {
        match_expressions: vec![NodeSelectorRequirement::new(key, NodeSelectorOperator::In, values)],
        match_fields: vec![],
    };
    move |p: &mut Pod| {
        p.spec.affinity = Some(Affinity {
            node_affinity: Some(NodeAffinity {
                required: Some(NodeSelector::new(vec![term]).unwrap()),
                preferred: vec![],
            }),
            ..Default::default()
        });
    }
}

fn node_affinity_not_in(key: &str, values: &[&str]) -> impl FnOnce(&mut Pod) {
    let term = NodeSelectorTerm {
        match_expressions: vec![NodeSelectorRequirement::new(key, NodeSelectorOperator::NotIn, values)],
        match_fields: vec![],
    };
    move |p: &mut Pod| {
        p.spec.affinity = Some(Affinity {
            node_affinity: Some(NodeAffinity {
                required: Some(NodeSelector::new(vec![term]).unwrap()),
                preferred: vec![],
            }),
            ..Default::default()
        });
    }
}

/// Upstream `cache.NewSnapshot(existingPods, nodes)`: pods placed by `nodeName`.
fn snapshot(nodes: &[Node], pods: &[Pod]) -> Snapshot {
    Snapshot::from_nodes(nodes.iter().map(|n| {
        let mut info = NodeInfo::new(Arc::new(n.clone()));
        for p in pods.iter().filter(|p| p.spec.node_name == n.name()) {
            info.add_pod(Arc::new(PodInfo::new(p.clone()).unwrap()));
        }
        info
    }))
}

fn plugin() -> PodTopologySpread {
    PodTopologySpread::new(PodTopologySpreadArgs::default(), &Handle::default()).unwrap()
}

/// Runs PreFilter then Filter on every node; returns each node's code.
fn filter_codes(pl: &PodTopologySpread, pod: &Pod, nodes: &[Node], pods: &[Pod]) -> Vec<(String, Code)> {
    let snap = snapshot(nodes, pods);
    let pod = PodInfo::new(pod.clone()).unwrap();
    let mut state = CycleState::new();
    let (_, st) = pl.pre_filter(&mut state, &pod, &snap);
    assert!(st.is_success(), "{st:?}");
    snap.nodes().iter().map(|n| (n.node().name().to_owned(), pl.filter(&state, &pod, n).code())).collect()
}

fn codes(want: &[(&str, Code)]) -> Vec<(String, Code)> {
    want.iter().map(|(n, c)| ((*n).to_owned(), *c)).collect()
}

fn four_nodes() -> Vec<Node> {
    vec![
        node("node-a", &[("zone", "zone1"), ("node", "node-a")]),
        node("node-b", &[("zone", "zone1"), ("node", "node-b")]),
        node("node-x", &[("zone", "zone2"), ("node", "node-x")]),
        node("node-y", &[("zone", "zone2"), ("node", "node-y")]),
    ]
}

/// 2/1/0/3 matching pods on node-a/b/x/y.
fn spread_2103() -> Vec<Pod> {
    vec![
        foo_on("p-a1", "node-a"),
        foo_on("p-a2", "node-a"),
        foo_on("p-b1", "node-b"),
        foo_on("p-y1", "node-y"),
        foo_on("p-y2", "node-y"),
        foo_on("p-y3", "node-y"),
    ]
}

use Code::{Success as S, Unschedulable as U, UnschedulableAndUnresolvable as UU};

// ---- Filter: upstream TestSingleConstraint ----

/// One row of a Filter table: per-node expected codes.
struct Case {
    name: &'static str,
    pod: Pod,
    nodes: Vec<Node>,
    pods: Vec<Pod>,
    want: Vec<(&'static str, Code)>,
}

#[test]
#[expect(clippy::too_many_lines, reason = "one upstream table, case by case")]
fn single_constraint_table() {
    let pl = plugin();
    let zone1 = || spread(1, "zone", DoNotSchedule, Some(exists("foo")));
    let cases = vec![
        Case {
            name: "no existing pods",
            pod: incoming(&[("foo", "")], vec![zone1()]).build(),
            nodes: four_nodes(),
            pods: vec![],
            want: vec![("node-a", S), ("node-b", S), ("node-x", S), ("node-y", S)],
        },
        Case {
            name: "no existing pods, incoming pod doesn't match itself",
            pod: incoming(&[("foo", "")], vec![spread(1, "zone", DoNotSchedule, Some(exists("bar")))]).build(),
            nodes: four_nodes(),
            pods: vec![],
            want: vec![("node-a", S), ("node-b", S), ("node-x", S), ("node-y", S)],
        },
        Case {
            name: "existing pods in a different namespace do not count",
            pod: incoming(&[("foo", "")], vec![zone1()]).build(),
            nodes: four_nodes(),
            pods: vec![
                PodBuilder::new("p-a1").namespace("ns1").node_name("node-a").label("foo", "").build(),
                PodBuilder::new("p-b1").namespace("ns2").node_name("node-a").label("foo", "").build(),
                foo_on("p-x1", "node-x"),
                foo_on("p-y1", "node-y"),
            ],
            want: vec![("node-a", S), ("node-b", S), ("node-x", U), ("node-y", U)],
        },
        Case {
            name: "pods spread across zones as 3/3, all nodes fit",
            pod: incoming(&[("foo", "")], vec![zone1()]).build(),
            nodes: four_nodes(),
            pods: spread_2103(),
            want: vec![("node-a", S), ("node-b", S), ("node-x", S), ("node-y", S)],
        },
        Case {
            name: "pods spread across zones as 1/2 due to absence of label 'zone' on node-b",
            pod: incoming(&[("foo", "")], vec![zone1()]).build(),
            nodes: vec![
                node("node-a", &[("zone", "zone1"), ("node", "node-a")]),
                node("node-b", &[("zon", "zone1"), ("node", "node-b")]),
                node("node-x", &[("zone", "zone2"), ("node", "node-x")]),
                node("node-y", &[("zone", "zone2"), ("node", "node-y")]),
            ],
            pods: vec![
                foo_on("p-a1", "node-a"),
                foo_on("p-b1", "node-b"),
                foo_on("p-x1", "node-x"),
                foo_on("p-y1", "node-y"),
            ],
            want: vec![("node-a", S), ("node-b", UU), ("node-x", U), ("node-y", U)],
        },
        Case {
            name: "pod cannot be scheduled as all nodes don't have label 'rack'",
            pod: incoming(&[("foo", "")], vec![spread(1, "rack", DoNotSchedule, Some(exists("foo")))]).build(),
            nodes: vec![
                node("node-a", &[("zone", "zone1"), ("node", "node-a")]),
                node("node-x", &[("zone", "zone2"), ("node", "node-x")]),
            ],
            pods: vec![],
            want: vec![("node-a", UU), ("node-x", UU)],
        },
        Case {
            name: "pods spread across nodes as 2/1/0/3, only node-x fits",
            pod: incoming(&[("foo", "")], vec![spread(1, "node", DoNotSchedule, Some(exists("foo")))]).build(),
            nodes: four_nodes(),
            pods: spread_2103(),
            want: vec![("node-a", U), ("node-b", U), ("node-x", S), ("node-y", U)],
        },
        Case {
            name: "pods spread across nodes as 2/1/0/3, maxSkew is 2, node-b and node-x fit",
            pod: incoming(&[("foo", "")], vec![spread(2, "node", DoNotSchedule, Some(exists("foo")))]).build(),
            nodes: four_nodes(),
            pods: spread_2103(),
            want: vec![("node-a", U), ("node-b", S), ("node-x", S), ("node-y", U)],
        },
        Case {
            name: "pods spread across nodes as 2/1/0/3, but pod doesn't match itself",
            pod: incoming(&[("bar", "")], vec![spread(1, "node", DoNotSchedule, Some(exists("foo")))]).build(),
            nodes: four_nodes(),
            pods: spread_2103(),
            want: vec![("node-a", U), ("node-b", S), ("node-x", S), ("node-y", U)],
        },
        Case {
            name: "incoming pod has nodeAffinity, pods spread as 2/~1~/~0~/3, hence node-a fits",
            pod: incoming(&[("foo", "")], vec![spread(1, "node", DoNotSchedule, Some(exists("foo")))])
                .with(node_affinity_in("node", &["node-a", "node-y"]))
                .build(),
            nodes: four_nodes(),
            pods: spread_2103(),
            // node-b and node-x pass here; upstream's NodeAffinity filter rejects them.
            want: vec![("node-a", S), ("node-b", S), ("node-x", S), ("node-y", U)],
        },
        Case {
            name: "terminating Pods should be excluded",
            pod: incoming(&[("foo", "")], vec![spread(1, "node", DoNotSchedule, Some(exists("foo")))]).build(),
            nodes: vec![node("node-a", &[("node", "node-a")]), node("node-b", &[("node", "node-b")])],
            pods: vec![
                PodBuilder::new("p-a")
                    .node_name("node-a")
                    .label("foo", "")
                    .with(|p| p.metadata.deletion_timestamp = Some(1.0))
                    .build(),
                foo_on("p-b", "node-b"),
            ],
            want: vec![("node-a", S), ("node-b", U)],
        },
    ];
    for c in cases {
        assert_eq!(filter_codes(&pl, &c.pod, &c.nodes, &c.pods), codes(&c.want), "{}", c.name);
    }
}

// ---- Filter: upstream TestMultipleConstraints ----

#[test]
fn multiple_constraints_zone_and_node() {
    // "two Constraints on zone and node, spreads = [3/3, 2/1/0/3]": only node-x
    // satisfies both.
    let pod = incoming(
        &[("foo", "")],
        vec![
            spread(1, "zone", DoNotSchedule, Some(exists("foo"))),
            spread(1, "node", DoNotSchedule, Some(exists("foo"))),
        ],
    )
    .build();
    let want = codes(&[("node-a", U), ("node-b", U), ("node-x", S), ("node-y", U)]);
    assert_eq!(filter_codes(&plugin(), &pod, &four_nodes(), &spread_2103()), want);
}

// ---- Filter: minDomains and node inclusion policies, after upstream
// test/integration/scheduler/filters TestPodTopologySpreadFilter ----

/// Upstream's `defaultNodes` of that test: node-0..3, zones zone-0 (node-0, node-1)
/// and zone-1 (node-2, node-3).
fn default_nodes() -> Vec<Node> {
    (0..4)
        .map(|i| node(&format!("node-{i}"), &[("node", &format!("node-{i}")), ("zone", &format!("zone-{}", i / 2))]))
        .collect()
}

fn min_domains(mut c: TopologySpreadConstraint, n: i32) -> TopologySpreadConstraint {
    c.min_domains = Some(n);
    c
}

/// Nodes passing this plugin's Filter.
fn passing(pl: &PodTopologySpread, pod: &Pod, nodes: &[Node], pods: &[Pod]) -> Vec<String> {
    filter_codes(pl, pod, nodes, pods).into_iter().filter(|(_, c)| *c == S).map(|(n, _)| n).collect()
}

#[test]
fn min_domains_table() {
    let pl = plugin();
    let pods_node_221 = vec![
        foo_on("p1a", "node-1"),
        foo_on("p1b", "node-1"),
        foo_on("p2a", "node-2"),
        foo_on("p2b", "node-2"),
        foo_on("p3", "node-3"),
    ];
    // "pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains <
    // minDomains, then the third node fits" (node-0 is excluded by NodeAffinity).
    let pod = incoming(&[("foo", "")], vec![min_domains(spread(2, "node", DoNotSchedule, Some(exists("foo"))), 4)])
        .with(node_affinity_not_in("node", &["node-0"]))
        .build();
    assert_eq!(passing(&pl, &pod, &default_nodes(), &pods_node_221), ["node-0", "node-3"]);
    // "... the number of domains > minDomains, then the all nodes fit"
    let pod = incoming(&[("foo", "")], vec![min_domains(spread(2, "node", DoNotSchedule, Some(exists("foo"))), 2)])
        .with(node_affinity_not_in("node", &["node-0"]))
        .build();
    assert_eq!(passing(&pl, &pod, &default_nodes(), &pods_node_221), ["node-0", "node-1", "node-2", "node-3"]);
    // "pods spread across zone as 2/1, maxSkew is 2 and the number of domains <
    // minDomains, then the third and fourth nodes fit"
    let pods_zone_21 = vec![foo_on("p1a", "node-0"), foo_on("p2a", "node-1"), foo_on("p3a", "node-2")];
    let pod =
        incoming(&[("foo", "")], vec![min_domains(spread(2, "zone", DoNotSchedule, Some(exists("foo"))), 3)]).build();
    assert_eq!(passing(&pl, &pod, &default_nodes(), &pods_zone_21), ["node-2", "node-3"]);
    // "... the number of domains < minDomains, then the all nodes fit" (minDomains 1)
    let pods_zone_12 = vec![foo_on("p1a", "node-1"), foo_on("p2a", "node-2"), foo_on("p3a", "node-3")];
    let pod =
        incoming(&[("foo", "")], vec![min_domains(spread(2, "zone", DoNotSchedule, Some(exists("foo"))), 1)]).build();
    assert_eq!(passing(&pl, &pod, &default_nodes(), &pods_zone_12), ["node-0", "node-1", "node-2", "node-3"]);
}

fn policy_nodes(taint_node_2: bool, taint_node_3: bool) -> Vec<Node> {
    let mk = |name: &str, zone: &str, has_foo: bool, taint: bool| {
        let mut labels = vec![("node", name), ("zone", zone)];
        if has_foo {
            labels.push(("foo", ""));
        }
        if taint { tainted(name, &labels) } else { node(name, &labels) }
    };
    vec![
        mk("node-1", "zone-1", true, false),
        mk("node-2", "zone-1", true, taint_node_2),
        mk("node-3", "zone-2", false, taint_node_3),
        mk("node-4", "zone-2", true, false),
    ]
}

fn with_policies(
    mut c: TopologySpreadConstraint,
    affinity: Option<NodeInclusionPolicy>,
    taints: Option<NodeInclusionPolicy>,
) -> TopologySpreadConstraint {
    c.node_affinity_policy = affinity;
    c.node_taints_policy = taints;
    c
}

#[test]
fn node_inclusion_policies_table() {
    use NodeInclusionPolicy::{Honor, Ignore};
    let pl = plugin();
    let four = vec![foo_on("p1a", "node-1"), foo_on("p2a", "node-2"), foo_on("p3a", "node-3"), foo_on("p4a", "node-4")];
    let node_selector_foo = |p: &mut Pod| {
        p.spec.node_selector.insert(Symbol::intern("foo"), Symbol::intern(""));
    };
    // "NodeAffinityPolicy honored with labelSelectors, pods spread across zone as 2/1":
    // candidates node-4 (node-3 is rejected by NodeAffinity).
    let pod = incoming(&[("foo", "")], vec![spread(1, "zone", DoNotSchedule, Some(exists("foo")))])
        .with(node_selector_foo)
        .build();
    assert_eq!(passing(&pl, &pod, &policy_nodes(false, false), &four), ["node-3", "node-4"]);
    // "NodeAffinityPolicy ignored with nodeAffinity, pods spread across zone as 1/~2~":
    // candidates node-1, node-2.
    let pods = vec![foo_on("p1a", "node-1"), foo_on("p3a", "node-3"), foo_on("p4a", "node-4")];
    let pod = incoming(
        &[("foo", "")],
        vec![with_policies(spread(1, "zone", DoNotSchedule, Some(exists("foo"))), Some(Ignore), None)],
    )
    .with(node_affinity_in("foo", &[""]))
    .build();
    assert_eq!(passing(&pl, &pod, &policy_nodes(false, false), &pods), ["node-1", "node-2"]);
    // "NodeTaintsPolicy honored, pods spread across zone as 2/1": candidates node-4
    // (node-3 is rejected by TaintToleration).
    let pod = incoming(
        &[("foo", "")],
        vec![with_policies(spread(1, "zone", DoNotSchedule, Some(exists("foo"))), None, Some(Honor))],
    )
    .build();
    assert_eq!(passing(&pl, &pod, &policy_nodes(false, true), &four), ["node-3", "node-4"]);
    // "NodeTaintsPolicy ignored, pods spread across zone as 2/2": candidates
    // node-1, node-2, node-4 (node-3 is rejected by TaintToleration).
    let pod = incoming(&[("foo", "")], vec![spread(1, "zone", DoNotSchedule, Some(exists("foo")))]).build();
    assert_eq!(passing(&pl, &pod, &policy_nodes(false, true), &four), ["node-1", "node-2", "node-3", "node-4"]);
    // "two node inclusion Constraints, zone: honor/ignore, node: honor/ignore":
    // candidates node-4 (node-2 tainted, node-3 rejected by NodeAffinity).
    let pod = incoming(
        &[("foo", "")],
        vec![
            spread(1, "zone", DoNotSchedule, Some(exists("foo"))),
            spread(1, "node", DoNotSchedule, Some(exists("foo"))),
        ],
    )
    .with(node_selector_foo)
    .build();
    assert_eq!(passing(&pl, &pod, &policy_nodes(true, false), &four), ["node-3", "node-4"]);
}

// ---- Score: upstream TestPodTopologySpreadScore ----

/// Runs PreScore over `candidates` (a prefix-free subset of `all`), Score on each
/// candidate, then NormalizeScore; returns `(node, score)`.
fn scores(pl: &PodTopologySpread, pod: &Pod, candidates: &[Node], failed: &[Node], pods: &[Pod]) -> Vec<(String, i64)> {
    let all: Vec<Node> = candidates.iter().chain(failed).cloned().collect();
    let snap = snapshot(&all, pods);
    let pod = PodInfo::new(pod.clone()).unwrap();
    let idx: Vec<usize> = (0..candidates.len()).collect();
    let mut state = CycleState::new();
    let st = pl.pre_score(&mut state, &pod, NodeList::new(&snap, &idx));
    assert!(st.is_success(), "{st:?}");
    let mut out: Vec<NodeScore> = idx
        .iter()
        .map(|&i| {
            let n = &snap.nodes()[i];
            NodeScore { name: n.name(), score: pl.score(&state, &pod, n).unwrap() }
        })
        .collect();
    // The batch entry point gives the same raw scores.
    let mut batch: Vec<NodeScore> = out.iter().map(|s| NodeScore { name: s.name, score: -1 }).collect();
    pl.score_nodes(&state, &pod, NodeList::new(&snap, &idx), &mut batch).unwrap();
    assert_eq!(batch, out);
    assert!(pl.normalize(&state, &pod, &mut out).is_success());
    out.into_iter().map(|s| (s.name.as_str().to_owned(), s.score)).collect()
}

fn host_nodes(names: &[&str]) -> Vec<Node> {
    names.iter().map(|n| node(n, &[(HOST, n)])).collect()
}

fn foo_pods(spec: &[(&str, usize)]) -> Vec<Pod> {
    spec.iter().flat_map(|&(node, n)| (0..n).map(move |i| foo_on(&format!("p-{node}-{i}"), node))).collect()
}

fn want(v: &[(&str, i64)]) -> Vec<(String, i64)> {
    v.iter().map(|(n, s)| ((*n).to_owned(), *s)).collect()
}

#[test]
fn score_table() {
    let pl = plugin();
    let host = |skew| incoming(&[("foo", "")], vec![spread(skew, HOST, ScheduleAnyway, Some(exists("foo")))]).build();
    let abcd = host_nodes(&["node-a", "node-b", "node-c", "node-d"]);

    // "one constraint on node, no existing pods"
    assert_eq!(
        scores(&pl, &host(1), &host_nodes(&["node-a", "node-b"]), &[], &[]),
        want(&[("node-a", 100), ("node-b", 100)])
    );
    // "one constraint on node, only one node is candidate"
    let pods = foo_pods(&[("node-a", 2), ("node-b", 1)]);
    assert_eq!(
        scores(&pl, &host(1), &host_nodes(&["node-a"]), &host_nodes(&["node-b"]), &pods),
        want(&[("node-a", 100)])
    );
    // "one constraint on node, all nodes have the same number of matching pods"
    let pods = foo_pods(&[("node-a", 1), ("node-b", 1)]);
    assert_eq!(
        scores(&pl, &host(1), &host_nodes(&["node-a", "node-b"]), &[], &pods),
        want(&[("node-a", 100), ("node-b", 100)])
    );
    // "one constraint on node, all 4 nodes are candidates" (2/1/0/3)
    let pods = foo_pods(&[("node-a", 2), ("node-b", 1), ("node-d", 3)]);
    assert_eq!(
        scores(&pl, &host(1), &abcd, &[], &pods),
        want(&[("node-a", 20), ("node-b", 60), ("node-c", 100), ("node-d", 0)])
    );
    // "one constraint on node, null selector"
    let null = incoming(&[("foo", "")], vec![spread(1, HOST, ScheduleAnyway, None)]).build();
    assert_eq!(
        scores(&pl, &null, &abcd, &[], &pods),
        want(&[("node-a", 100), ("node-b", 100), ("node-c", 100), ("node-d", 100)])
    );
    // "one constraint on node, all 4 nodes are candidates, maxSkew=2"
    assert_eq!(
        scores(&pl, &host(2), &abcd, &[], &pods),
        want(&[("node-a", 33), ("node-b", 66), ("node-c", 100), ("node-d", 16)])
    );
    // "one constraint on node, all 4 nodes are candidates, maxSkew=3" (4/3/2/1)
    let pods_4321 = foo_pods(&[("node-a", 4), ("node-b", 3), ("node-c", 2), ("node-d", 1)]);
    assert_eq!(
        scores(&pl, &host(3), &abcd, &[], &pods_4321),
        want(&[("node-a", 44), ("node-b", 66), ("node-c", 77), ("node-d", 100)])
    );
    // "one constraint on node, 3 out of 4 nodes are candidates" (4/2/1/~3~)
    let pods = foo_pods(&[("node-a", 4), ("node-b", 2), ("node-x", 1), ("node-y", 3)]);
    assert_eq!(
        scores(&pl, &host(1), &host_nodes(&["node-a", "node-b", "node-x"]), &host_nodes(&["node-y"]), &pods),
        want(&[("node-a", 33), ("node-b", 83), ("node-x", 100)])
    );
    // "... one node doesn't match topology key" (4/?2?/1/~3~)
    let cands = vec![
        node("node-a", &[(HOST, "node-a")]),
        node("node-b", &[("n", "node-b")]),
        node("node-x", &[(HOST, "node-x")]),
    ];
    assert_eq!(
        scores(&pl, &host(1), &cands, &host_nodes(&["node-y"]), &pods),
        want(&[("node-a", 16), ("node-b", 0), ("node-x", 100)])
    );
    // "one constraint on zone, 3 out of 4 nodes are candidates" (4/2/1/~3~)
    let zone = incoming(&[("foo", "")], vec![spread(1, "zone", ScheduleAnyway, Some(exists("foo")))]).build();
    let zn = |n: &str, z: &str| node(n, &[("zone", z), (HOST, n)]);
    assert_eq!(
        scores(
            &pl,
            &zone,
            &[zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-x", "zone2")],
            &[zn("node-y", "zone2")],
            &pods
        ),
        want(&[("node-a", 75), ("node-b", 75), ("node-x", 100)])
    );
}

#[test]
fn system_defaulting_uses_service_selectors() {
    // "system defaulting, nodes don't have zone, pods match service": same scores as
    // one hostname constraint with maxSkew 3.
    let workloads = WorkloadSelectors::default();
    workloads.set(
        "default",
        "svc",
        WorkloadKind::Service,
        LabelSelector::from_labels(Labels::from_pairs([("foo", "")])),
    );
    let pl = plugin().with_workloads(workloads);
    let pod = PodBuilder::new("p").label("foo", "").build();
    let pods = foo_pods(&[("node-a", 4), ("node-b", 3), ("node-c", 2), ("node-d", 1)]);
    let abcd = host_nodes(&["node-a", "node-b", "node-c", "node-d"]);
    assert_eq!(
        scores(&pl, &pod, &abcd, &[], &pods),
        want(&[("node-a", 44), ("node-b", 66), ("node-c", 77), ("node-d", 100)])
    );
    // Without a matching workload the system defaults don't apply: Skip.
    let snap = snapshot(&abcd, &pods);
    let idx = [0, 1, 2, 3];
    let lone = PodInfo::new(PodBuilder::new("lone").label("other", "").build()).unwrap();
    assert!(pl.pre_score(&mut CycleState::new(), &lone, NodeList::new(&snap, &idx)).is_skip());
    // System defaults are all ScheduleAnyway, so PreFilter always skips such pods.
    assert!(pl.pre_filter(&mut CycleState::new(), &PodInfo::new(pod).unwrap(), &snap).1.is_skip());
}

#[test]
fn pods_without_constraints_are_skipped() {
    let pl = PodTopologySpread::new(
        PodTopologySpreadArgs { defaulting_type: DefaultingType::List, default_constraints: vec![] },
        &Handle::default(),
    )
    .unwrap();
    let snap = snapshot(&four_nodes(), &spread_2103());
    let pod = PodInfo::new(PodBuilder::new("p").label("foo", "").build()).unwrap();
    let mut state = CycleState::new();
    assert!(pl.pre_filter(&mut state, &pod, &snap).1.is_skip());
    assert!(pl.pre_score(&mut state, &pod, NodeList::new(&snap, &[0, 1])).is_skip());
    assert!(state.is_empty(), "nothing is written for skipped pods");
}

// ---- AddPod / RemovePod (upstream TestPreFilterStateAddPod / RemovePod) ----

#[test]
fn add_and_remove_pod_update_the_counts() {
    let pl = plugin();
    let nodes = four_nodes();
    let snap = snapshot(&nodes, &spread_2103());
    let pod =
        PodInfo::new(incoming(&[("foo", "")], vec![spread(1, "node", DoNotSchedule, Some(exists("foo")))]).build())
            .unwrap();
    let mut state = CycleState::new();
    assert!(pl.pre_filter(&mut state, &pod, &snap).1.is_success());
    let x = snap.get("node-x").unwrap();
    let b = snap.get("node-b").unwrap();
    assert_eq!(pl.filter(&state, &pod, x).code(), S);
    assert_eq!(pl.filter(&state, &pod, b).code(), U);

    // A dry run adds a matching pod on node-x: 2/1/1/3, min 1 -> node-b and
    // node-x fit (1 + 1 - 1 <= 1), node-a doesn't.
    let a = snap.get("node-a").unwrap();
    let mut dry = state.clone();
    let added = PodInfo::new(foo_on("new", "node-x")).unwrap();
    let ext = pl.extensions().unwrap();
    assert!(ext.add_pod(&mut dry, &pod, &added, x).is_success());
    assert_eq!(pl.filter(&dry, &pod, x).code(), S);
    assert_eq!(pl.filter(&dry, &pod, b).code(), S);
    assert_eq!(pl.filter(&dry, &pod, a).code(), U);
    // A second one on node-x: 2/1/2/3, min 1 -> node-x no longer fits.
    let added2 = PodInfo::new(foo_on("new2", "node-x")).unwrap();
    assert!(ext.add_pod(&mut dry, &pod, &added2, x).is_success());
    assert_eq!(pl.filter(&dry, &pod, x).code(), U);
    assert!(ext.remove_pod(&mut dry, &pod, &added2, x).is_success());
    // The original state is untouched (copy-on-write).
    assert_eq!(pl.filter(&state, &pod, b).code(), U);

    // Removing it again restores the verdicts.
    assert!(ext.remove_pod(&mut dry, &pod, &added, x).is_success());
    assert_eq!(pl.filter(&dry, &pod, x).code(), S);
    assert_eq!(pl.filter(&dry, &pod, b).code(), U);

    // Pods of another namespace or not matching the selector change nothing.
    let other_ns =
        PodInfo::new(PodBuilder::new("o").namespace("ns1").node_name("node-x").label("foo", "").build()).unwrap();
    let no_match = PodInfo::new(PodBuilder::new("n").node_name("node-x").label("bar", "").build()).unwrap();
    assert!(ext.add_pod(&mut dry, &pod, &other_ns, x).is_success());
    assert!(ext.add_pod(&mut dry, &pod, &no_match, x).is_success());
    assert_eq!(pl.filter(&dry, &pod, x).code(), S);

    // Removing a pod from node-y (3 -> 2) doesn't make node-y fit (2+1-0 > 1).
    let y = snap.get("node-y").unwrap();
    let victim = snap.get("node-y").unwrap().pods()[0].clone();
    assert!(ext.remove_pod(&mut dry, &pod, &victim, y).is_success());
    assert_eq!(pl.filter(&dry, &pod, y).code(), U);
}

#[test]
fn match_label_keys_narrow_the_selector() {
    // After upstream TestSingleConstraint's matchLabelKeys cases: pods of other
    // revisions don't count.
    let mut c = spread(1, "node", DoNotSchedule, Some(exists("foo")));
    c.match_label_keys = vec![Symbol::intern("rev")];
    let pod = incoming(&[("foo", ""), ("rev", "2")], vec![c]).build();
    let old = |n: &str, node: &str| PodBuilder::new(n).node_name(node).label("foo", "").label("rev", "1").build();
    let pods = vec![old("o1", "node-a"), old("o2", "node-a"), old("o3", "node-b")];
    // All existing pods are rev 1: every node is empty for rev 2, so all fit.
    let got = passing(&plugin(), &pod, &four_nodes(), &pods);
    assert_eq!(got, ["node-a", "node-b", "node-x", "node-y"]);
}

// ---- Args ----

#[test]
fn args_validation_rejects_bad_defaults() {
    let h = Handle::default();
    let bad = |c: TopologySpreadConstraint| PodTopologySpreadArgs {
        default_constraints: vec![c],
        defaulting_type: DefaultingType::List,
    };
    let err = PodTopologySpread::new(bad(spread(0, "zone", ScheduleAnyway, None)), &h).unwrap_err();
    assert_eq!(err, PodTopologySpreadArgsError::MaxSkew { index: 0, got: 0 });
    assert!(matches!(
        PodTopologySpread::new(bad(spread(1, "", ScheduleAnyway, None)), &h),
        Err(PodTopologySpreadArgsError::EmptyTopologyKey { index: 0 })
    ));
    assert!(matches!(
        PodTopologySpread::new(bad(spread(1, "zone", ScheduleAnyway, Some(exists("foo")))), &h),
        Err(PodTopologySpreadArgsError::SelectorSet { index: 0 })
    ));
    let dup = PodTopologySpreadArgs {
        default_constraints: vec![spread(1, "zone", ScheduleAnyway, None), spread(2, "zone", ScheduleAnyway, None)],
        defaulting_type: DefaultingType::List,
    };
    assert!(matches!(PodTopologySpread::new(dup, &h), Err(PodTopologySpreadArgsError::Duplicate { index: 1, .. })));
    let sys = PodTopologySpreadArgs {
        default_constraints: vec![spread(1, "zone", ScheduleAnyway, None)],
        defaulting_type: DefaultingType::System,
    };
    assert_eq!(PodTopologySpread::new(sys, &h).unwrap_err(), PodTopologySpreadArgsError::SystemWithConstraints);
    // Through config: errors are strings for the registry.
    let v =
        serde_json::json!({"defaultingType": "List", "defaultConstraints": [{"maxSkew": 0, "topologyKey": "zone"}]});
    let msg = PodTopologySpread::factory(Some(&v), &h).err().unwrap();
    assert!(msg.contains("maxSkew"), "{msg}");
    assert!(PodTopologySpread::factory(Some(&serde_json::json!({"defaultingType": "Bogus"})), &h).is_err());
    assert!(PodTopologySpread::factory(None, &h).is_ok());
}

#[test]
fn list_defaulting_applies_configured_constraints() {
    // A DoNotSchedule default constraint filters a pod that has none of its own,
    // counted with its ReplicaSet's selector.
    let args = PodTopologySpreadArgs {
        defaulting_type: DefaultingType::List,
        default_constraints: vec![spread(1, "node", DoNotSchedule, None)],
    };
    let workloads = WorkloadSelectors::default();
    workloads.set("default", "rs", WorkloadKind::ReplicaSet, exists("foo"));
    let pl = PodTopologySpread::new(args, &Handle::default()).unwrap().with_workloads(workloads);
    let pod = PodBuilder::new("p").label("foo", "").build();
    assert_eq!(passing(&pl, &pod, &four_nodes(), &spread_2103()), ["node-x"]);
}

// ---- Property: a DoNotSchedule pod never lands where it would break maxSkew ----

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// For random clusters (domains with random matching-pod counts, some nodes
    /// without the key), every node the Filter admits keeps
    /// `count(domain) + 1 - min(domain counts) <= maxSkew` after placement, and every
    /// node it rejects would break it (or lacks the key).
    #[test]
    fn filter_never_exceeds_max_skew(
        counts in proptest::collection::vec(0usize..6, 1..6),
        keyless in 0usize..3,
        max_skew in 1i32..4,
    ) {
        let mut nodes = Vec::new();
        let mut pods = Vec::new();
        for (d, &n) in counts.iter().enumerate() {
            let name = format!("n{d}");
            nodes.push(node(&name, &[("zone", &format!("z{d}"))]));
            for i in 0..n {
                pods.push(foo_on(&format!("p{d}-{i}"), &name));
            }
        }
        for k in 0..keyless {
            nodes.push(node(&format!("k{k}"), &[]));
        }
        let pod = incoming(&[("foo", "")], vec![spread(max_skew, "zone", DoNotSchedule, Some(exists("foo")))]).build();
        let min = *counts.iter().min().unwrap() as i64;
        for (name, code) in filter_codes(&plugin(), &pod, &nodes, &pods) {
            if let Some(d) = name.strip_prefix('n') {
                let c = counts[d.parse::<usize>().unwrap()] as i64;
                let ok = c + 1 - min <= i64::from(max_skew);
                prop_assert_eq!(code == S, ok, "node {} count {} min {}", name, c, min);
            } else {
                prop_assert_eq!(code, UU);
            }
        }
    }

    /// Normalized scores always lie in 0..=MAX_NODE_SCORE.
    #[test]
    fn normalized_scores_in_range(
        counts in proptest::collection::vec(0usize..8, 1..8),
        max_skew in 1i32..5,
        zones in 1usize..4,
    ) {
        let mut nodes = Vec::new();
        let mut pods = Vec::new();
        for (i, &n) in counts.iter().enumerate() {
            let name = format!("n{i}");
            nodes.push(node(&name, &[("zone", &format!("z{}", i % zones)), (HOST, &name)]));
            for j in 0..n {
                pods.push(foo_on(&format!("p{i}-{j}"), &name));
            }
        }
        let pod = incoming(&[("foo", "")], vec![
            spread(max_skew, "zone", ScheduleAnyway, Some(exists("foo"))),
            spread(max_skew, HOST, ScheduleAnyway, Some(exists("foo"))),
        ]).build();
        for (_, s) in scores(&plugin(), &pod, &nodes, &[], &pods) {
            prop_assert!((0..=MAX_NODE_SCORE).contains(&s), "{}", s);
        }
    }
}

// ---- Filter and Score allocate nothing per node ----

/// Allocations while `f` runs, the smallest of several tries: other tests of this
/// binary allocate concurrently, but a plugin that allocated per node would show at
/// least one allocation per node in every try.
fn fewest_allocations(mut f: impl FnMut()) -> usize {
    let mut fewest = usize::MAX;
    for _ in 0..300 {
        let region = Region::new(GLOBAL);
        f();
        fewest = fewest.min(region.change().allocations);
        if fewest == 0 {
            break;
        }
        // Let the tests running beside this one finish.
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    fewest
}

#[test]
fn filter_and_score_do_not_allocate_per_node() {
    let nodes = schedkit::trace::synthetic_nodes(500);
    let pods: Vec<Pod> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| PodBuilder::new(&format!("p{i}")).node_name(n.name()).label("foo", "").build())
        .collect();
    let snap = snapshot(&nodes, &pods);
    let pl = plugin();
    let pod = PodInfo::new(
        incoming(
            &[("foo", "")],
            vec![
                spread(5, "topology.kubernetes.io/zone", DoNotSchedule, Some(exists("foo"))),
                spread(1, HOST, ScheduleAnyway, Some(exists("foo"))),
            ],
        )
        .build(),
    )
    .unwrap();
    let idx: Vec<usize> = (0..snap.len()).collect();
    let mut state = CycleState::new();
    assert!(pl.pre_filter(&mut state, &pod, &snap).1.is_success());
    assert!(pl.pre_score(&mut state, &pod, NodeList::new(&snap, &idx)).is_success());
    let mut passed = 0;
    let filter =
        fewest_allocations(|| passed = snap.nodes().iter().filter(|n| pl.filter(&state, &pod, n).is_success()).count());
    assert_eq!(passed, 500, "every node passes, so every call takes the success path");
    let mut total = 0;
    let score =
        fewest_allocations(|| total = snap.nodes().iter().map(|n| pl.score(&state, &pod, n).unwrap()).sum::<i64>());
    assert!(total > 0);
    assert_eq!((filter, score), (0, 0), "allocations over 500 Filter / Score calls");
}

// ---- Both plugins in a real scheduling cycle ----

/// Binds by doing nothing, so assumed pods stay in the cache.
struct NoopBinder;

impl schedkit::framework::Plugin for NoopBinder {
    fn name(&self) -> &str {
        "NoopBinder"
    }
    fn register(self: Arc<Self>, points: &mut schedkit::framework::ExtensionPoints) {
        points.bind(self);
    }
}

impl schedkit::framework::BindPlugin for NoopBinder {
    fn bind(&self, _: &mut CycleState, _: &PodInfo, _: &str) -> schedkit::framework::Status {
        schedkit::framework::Status::SUCCESS
    }
}

#[test]
fn scheduler_keeps_spread_and_anti_affinity() {
    use schedkit::plugins::inter_pod_affinity::{
        ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH, InterPodAffinity, InterPodAffinityArgs,
    };
    let h = Handle::default();
    let profile = schedkit::framework::Profile::builder("default-scheduler")
        .weighted(plugin(), 2)
        .weighted(InterPodAffinity::new(InterPodAffinityArgs::default(), &h).unwrap(), 2)
        .plugin(NoopBinder)
        .build()
        .unwrap();
    let mut s = schedkit::scheduler::Scheduler::builder().profile(profile).parallelism(1).build();
    for i in 0..9 {
        let name = format!("n{i}");
        s.add_node(node(&name, &[("topology.kubernetes.io/zone", &format!("z{}", i % 3)), (HOST, &name)])).unwrap();
    }
    let zone_of = |n: &str| n[1..].parse::<usize>().unwrap() % 3;

    // Zone spread, maxSkew 1: after every placement the zones differ by at most one.
    let mut per_zone = [0i64; 3];
    for i in 0..12 {
        let pod = incoming(
            &[("app", "web")],
            vec![spread(1, "topology.kubernetes.io/zone", DoNotSchedule, Some(exists("app")))],
        )
        .with(|p| p.metadata.name = format!("web-{i}"))
        .build();
        let b = s.schedule_pod(pod).unwrap();
        per_zone[zone_of(b.node())] += 1;
        b.run().unwrap();
        assert!(per_zone.iter().max().unwrap() - per_zone.iter().min().unwrap() <= 1, "{per_zone:?}");
    }

    // Required anti-affinity per host: nine db pods on nine hosts, the tenth fits nowhere.
    let db = |i: usize| {
        PodBuilder::new(&format!("db-{i}"))
            .label("role", "db")
            .with(|p| {
                p.spec.affinity = Some(Affinity {
                    pod_anti_affinity: Some(schedkit::model::PodAffinity {
                        required: vec![schedkit::model::PodAffinityTerm {
                            label_selector: Some(exists("role")),
                            topology_key: Symbol::intern(HOST),
                            ..Default::default()
                        }],
                        preferred: vec![],
                    }),
                    ..Default::default()
                });
            })
            .build()
    };
    let mut hosts = Vec::new();
    for i in 0..9 {
        let b = s.schedule_pod(db(i)).unwrap();
        hosts.push(b.node().to_owned());
        b.run().unwrap();
    }
    hosts.sort();
    hosts.dedup();
    assert_eq!(hosts.len(), 9);
    let err = s.schedule_pod(db(9)).err().unwrap();
    let reasons = err.fit_error().unwrap().reason_histogram();
    assert_eq!(reasons.get(ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH), Some(&9), "{reasons:?}");
}

#[test]
fn score_table_two_constraints_and_policies() {
    use NodeInclusionPolicy::{Honor, Ignore};
    let pl = plugin();
    let zh = |n: &str, z: &str| node(n, &[("zone", z), (HOST, n)]);
    let abxy = || vec![zh("node-a", "zone1"), zh("node-b", "zone1"), zh("node-x", "zone2"), zh("node-y", "zone2")];
    let two = incoming(
        &[("foo", ""), ("bar", "")],
        vec![
            spread(1, "zone", ScheduleAnyway, Some(exists("foo"))),
            spread(1, HOST, ScheduleAnyway, Some(exists("bar"))),
        ],
    )
    .build();
    let with = |name: &str, n: &str, labels: &[&str]| {
        labels.iter().fold(PodBuilder::new(name).node_name(n), |b, l| b.label(l, "")).build()
    };
    // "two Constraints on zone and node, with different labelSelectors"
    let pods = vec![
        with("p-a1", "node-a", &["foo"]),
        with("p-b1", "node-b", &["foo", "bar"]),
        with("p-y1", "node-y", &["foo"]),
        with("p-y2", "node-y", &["bar"]),
    ];
    assert_eq!(
        scores(&pl, &two, &abxy(), &[], &pods),
        want(&[("node-a", 60), ("node-b", 20), ("node-x", 100), ("node-y", 60)])
    );
    // "two Constraints on zone and node, with different labelSelectors, 3 out of 4
    // nodes are candidates"
    let cands = vec![zh("node-a", "zone1"), zh("node-b", "zone1"), zh("node-x", "zone2")];
    assert_eq!(
        scores(&pl, &two, &cands, &[zh("node-y", "zone2")], &pods),
        want(&[("node-a", 50), ("node-b", 25), ("node-x", 100)])
    );
    // "two Constraints on zone and node, with different labelSelectors, some nodes
    // have 0 pods"
    let pods = vec![
        with("p-b1", "node-b", &["bar"]),
        with("p-x1", "node-x", &["foo"]),
        with("p-y1", "node-y", &["foo", "bar"]),
    ];
    assert_eq!(
        scores(&pl, &two, &abxy(), &[], &pods),
        want(&[("node-a", 100), ("node-b", 60), ("node-x", 40), ("node-y", 0)])
    );
    // "existing pods in a different namespace do not count"
    let host = incoming(&[("foo", "")], vec![spread(1, HOST, ScheduleAnyway, Some(exists("foo")))]).build();
    let pods = vec![
        PodBuilder::new("p-a1").namespace("ns1").node_name("node-a").label("foo", "").build(),
        foo_on("p-a2", "node-a"),
        foo_on("p-b1", "node-b"),
        foo_on("p-b2", "node-b"),
    ];
    assert_eq!(
        scores(&pl, &host, &host_nodes(&["node-a", "node-b"]), &[], &pods),
        want(&[("node-a", 100), ("node-b", 33)])
    );
    // "terminating Pods should be excluded"
    let pods = vec![
        PodBuilder::new("p-a")
            .node_name("node-a")
            .label("foo", "")
            .with(|p| p.metadata.deletion_timestamp = Some(1.0))
            .build(),
        foo_on("p-b", "node-b"),
    ];
    assert_eq!(
        scores(&pl, &host, &host_nodes(&["node-a", "node-b"]), &[], &pods),
        want(&[("node-a", 100), ("node-b", 0)])
    );
    // "minDomains has no effect when ScheduleAnyway"
    let abc = || {
        vec![
            node("node-a", &[("node", "node-a")]),
            node("node-b", &[("node", "node-b")]),
            node("node-c", &[("node", "node-c")]),
        ]
    };
    let pod =
        incoming(&[("foo", "")], vec![min_domains(spread(2, "node", ScheduleAnyway, Some(exists("foo"))), 10)]).build();
    let pods = foo_pods(&[("node-a", 2), ("node-b", 2), ("node-c", 1)]);
    assert_eq!(scores(&pl, &pod, &abc(), &[], &pods), want(&[("node-a", 75), ("node-b", 75), ("node-c", 100)]));

    // Node inclusion policies: node-c lacks foo (or is tainted); pods spread 2/1/1.
    let pods = foo_pods(&[("node-a", 2), ("node-b", 1), ("node-c", 1)]);
    let foo_nodes = vec![
        node("node-a", &[("node", "node-a"), ("foo", "")]),
        node("node-b", &[("node", "node-b"), ("foo", "")]),
        node("node-c", &[("node", "node-c")]),
    ];
    let selector_foo = |p: &mut Pod| {
        p.spec.node_selector.insert(Symbol::intern("foo"), Symbol::intern(""));
    };
    let c = |aff, taint| with_policies(spread(1, "node", ScheduleAnyway, Some(exists("foo"))), aff, taint);
    // "NodeAffinityPolicy honoed with labelSelectors"
    let pod = incoming(&[("foo", "")], vec![c(None, None)]).with(selector_foo).build();
    assert_eq!(scores(&pl, &pod, &foo_nodes, &[], &pods), want(&[("node-a", 0), ("node-b", 33), ("node-c", 100)]));
    // "NodeAffinityPolicy ignored with labelSelectors"
    let pod = incoming(&[("foo", "")], vec![c(Some(Ignore), None)]).with(selector_foo).build();
    assert_eq!(scores(&pl, &pod, &foo_nodes, &[], &pods), want(&[("node-a", 66), ("node-b", 100), ("node-c", 100)]));
    // "NodeAffinityPolicy honoed with nodeAffinity"
    let pod = incoming(&[("foo", "")], vec![c(None, None)]).with(node_affinity_in("foo", &[""])).build();
    assert_eq!(scores(&pl, &pod, &foo_nodes, &[], &pods), want(&[("node-a", 0), ("node-b", 33), ("node-c", 100)]));
    // "NodeAffinityPolicy ignored with nodeAffinity"
    let pod = incoming(&[("foo", "")], vec![c(Some(Ignore), None)]).with(node_affinity_in("foo", &[""])).build();
    assert_eq!(scores(&pl, &pod, &foo_nodes, &[], &pods), want(&[("node-a", 66), ("node-b", 100), ("node-c", 100)]));
    let tainted_c = vec![
        node("node-a", &[("node", "node-a")]),
        node("node-b", &[("node", "node-b")]),
        tainted("node-c", &[("node", "node-c")]),
    ];
    // "NodeTaintsPolicy honored"
    let pod = incoming(&[("foo", "")], vec![c(None, Some(Honor))]).build();
    assert_eq!(scores(&pl, &pod, &tainted_c, &[], &pods), want(&[("node-a", 0), ("node-b", 33), ("node-c", 100)]));
    // "NodeTaintsPolicy ignored"
    let pod = incoming(&[("foo", "")], vec![c(None, None)]).build();
    assert_eq!(scores(&pl, &pod, &tainted_c, &[], &pods), want(&[("node-a", 66), ("node-b", 100), ("node-c", 100)]));
}
