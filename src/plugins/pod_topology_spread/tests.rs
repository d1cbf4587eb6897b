//! PreFilter state (domain counts and critical paths) against upstream
//! `TestPreFilterState` (`podtopologyspread/filtering_test.go`).

use std::sync::Arc;

use smallvec::SmallVec;

use super::filtering::PreFilterState;
use super::{PodTopologySpread, PodTopologySpreadArgs};
use crate::framework::Handle;
use crate::model::{
    LabelOperator, LabelSelector, LabelSelectorRequirement, Labels, Node, NodeInclusionPolicy, NodeSelector,
    NodeSelectorOperator, NodeSelectorRequirement, NodeSelectorTerm, Pod, Symbol, Taint, TaintEffect,
    TopologySpreadConstraint, UnsatisfiableConstraintAction,
};
use crate::snapshot::{NodeInfo, PodInfo, Snapshot};
use crate::testing::{NodeBuilder, PodBuilder};

use NodeInclusionPolicy::{Honor, Ignore};
use UnsatisfiableConstraintAction::{DoNotSchedule, ScheduleAnyway};

fn exists(key: &str) -> Option<LabelSelector> {
    let req =
        LabelSelectorRequirement { key: Symbol::intern(key), operator: LabelOperator::Exists, values: SmallVec::new() };
    LabelSelector::new(Labels::new(), vec![req]).ok()
}

fn tsc(
    max_skew: i32,
    key: &str,
    action: UnsatisfiableConstraintAction,
    selector: Option<LabelSelector>,
    policies: (Option<NodeInclusionPolicy>, Option<NodeInclusionPolicy>),
) -> TopologySpreadConstraint {
    TopologySpreadConstraint {
        max_skew,
        topology_key: Symbol::intern(key),
        when_unsatisfiable: action,
        label_selector: selector,
        min_domains: None,
        node_affinity_policy: policies.0,
        node_taints_policy: policies.1,
        match_label_keys: Vec::new(),
    }
}

fn node(name: &str, labels: &[(&str, &str)], tainted: bool) -> Node {
    let mut n = labels.iter().fold(NodeBuilder::new(name), |b, (k, v)| b.label(k, v)).build();
    if tainted {
        n.spec.taints.push(Taint::new("node.kubernetes.io/unschedulable", "", TaintEffect::NoSchedule));
    }
    n
}

fn zoned(name: &str, zone: &str) -> Node {
    node(name, &[("zone", zone), ("node", name)], false)
}

fn on(name: &str, node: &str, labels: &[(&str, &str)]) -> Pod {
    labels.iter().fold(PodBuilder::new(name).node_name(node), |b, (k, v)| b.label(k, v)).build()
}

fn state(pod: &Pod, nodes: &[Node], pods: &[Pod]) -> PreFilterState {
    // The tables read the counts' domains after the nodes are dropped: pin the nodes'
    // label values so their text outlives them (label values and node names are
    // otherwise freed with their last holder).
    for n in nodes {
        for (_, v) in n.metadata.labels.texts() {
            crate::model::Symbol::intern(&v);
        }
    }
    let snap = Snapshot::from_nodes(nodes.iter().map(|n| {
        let mut info = NodeInfo::new(Arc::new(n.clone()));
        for p in pods.iter().filter(|p| p.spec.node_name == n.name()) {
            info.add_pod(Arc::new(PodInfo::new(p.clone()).unwrap()));
        }
        info
    }));
    let pl = PodTopologySpread::new(PodTopologySpreadArgs::default(), &Handle::default()).unwrap();
    pl.pre_filter_state(&PodInfo::new(pod.clone()).unwrap(), &snap).unwrap()
}

/// One constraint's domain counts (sorted) and its two critical match numbers.
type Summary = (Vec<(&'static str, i64)>, [i64; 2]);

/// Domain counts per constraint, sorted, and the two critical match numbers.
fn summary(s: &PreFilterState) -> Vec<Summary> {
    s.counts
        .iter()
        .zip(&s.critical)
        .map(|(m, p)| {
            let mut v: Vec<_> = m.iter().map(|(k, &n)| (k.as_str(), n)).collect();
            v.sort_unstable();
            (v, [p.0[0].1, p.0[1].1])
        })
        .collect()
}

fn incoming(constraints: Vec<TopologySpreadConstraint>) -> PodBuilder {
    PodBuilder::new("p").label("foo", "").with(move |p| p.spec.topology_spread_constraints = constraints)
}

fn foo_pods(spec: &[(&str, usize)]) -> Vec<Pod> {
    spec.iter().flat_map(|&(n, k)| (0..k).map(move |i| on(&format!("p-{n}-{i}"), n, &[("foo", "")]))).collect()
}

fn four() -> Vec<Node> {
    vec![zoned("node-a", "zone1"), zoned("node-b", "zone1"), zoned("node-x", "zone2"), zoned("node-y", "zone2")]
}

const NONE: (Option<NodeInclusionPolicy>, Option<NodeInclusionPolicy>) = (None, None);

#[test]
fn pre_filter_state_table() {
    let zone_foo = || tsc(1, "zone", DoNotSchedule, exists("foo"), NONE);
    let node_foo = || tsc(1, "node", DoNotSchedule, exists("foo"), NONE);
    let p_2102 = foo_pods(&[("node-a", 2), ("node-b", 1), ("node-y", 2)]);

    // "clean cluster with one spreadConstraint"
    let bar = LabelSelector::from_labels(Labels::from_pairs([("foo", "bar")]));
    let s = state(&incoming(vec![tsc(5, "zone", DoNotSchedule, Some(bar), NONE)]).build(), &four(), &[]);
    assert_eq!(summary(&s), [(vec![("zone1", 0), ("zone2", 0)], [0, 0])]);
    assert_eq!(s.constraints[0].min_domains, 1);
    assert!(s.constraints[0].honor_node_affinity && !s.constraints[0].honor_node_taints);

    // "normal case with one spreadConstraint"
    let s = state(&incoming(vec![zone_foo()]).build(), &four(), &p_2102);
    assert_eq!(summary(&s), [(vec![("zone1", 3), ("zone2", 2)], [2, 3])]);

    // "normal case with null label selector"
    let s = state(&incoming(vec![tsc(1, "zone", DoNotSchedule, None, NONE)]).build(), &four(), &p_2102);
    assert_eq!(summary(&s), [(vec![("zone1", 0), ("zone2", 0)], [0, 0])]);

    // "normal case with one spreadConstraint, on a 3-zone cluster"
    let mut six = four();
    six.extend([zoned("node-o", "zone3"), zoned("node-p", "zone3")]);
    let s = state(&incoming(vec![zone_foo()]).build(), &six, &p_2102);
    assert_eq!(summary(&s), [(vec![("zone1", 3), ("zone2", 2), ("zone3", 0)], [0, 2])]);

    // "namespace mismatch doesn't count"
    let mut pods = p_2102.clone();
    pods[1].metadata.namespace = "ns1".into();
    pods[3].metadata.namespace = "ns2".into();
    let s = state(&incoming(vec![zone_foo()]).build(), &four(), &pods);
    assert_eq!(summary(&s), [(vec![("zone1", 2), ("zone2", 1)], [1, 2])]);

    // "normal case with two spreadConstraints"
    let pods = foo_pods(&[("node-a", 2), ("node-b", 1), ("node-y", 4)]);
    let s = state(&incoming(vec![zone_foo(), node_foo()]).build(), &four(), &pods);
    assert_eq!(
        summary(&s),
        [
            (vec![("zone1", 3), ("zone2", 4)], [3, 4]),
            (vec![("node-a", 2), ("node-b", 1), ("node-x", 0), ("node-y", 4)], [0, 1]),
        ]
    );

    // "soft spreadConstraints should be bypassed"
    let three = vec![zoned("node-a", "zone1"), zoned("node-b", "zone1"), zoned("node-y", "zone2")];
    let soft = |k: &str| tsc(1, k, ScheduleAnyway, exists("foo"), NONE);
    let s = state(&incoming(vec![soft("zone"), zone_foo(), soft("node"), node_foo()]).build(), &three, &pods);
    assert_eq!(
        summary(&s),
        [(vec![("zone1", 3), ("zone2", 4)], [3, 4]), (vec![("node-a", 2), ("node-b", 1), ("node-y", 4)], [1, 2])]
    );
}

#[test]
fn node_inclusion_policy_table() {
    let bar = || exists("bar");
    let abc = |taint_c: bool| {
        vec![
            node("node-a", &[("node", "node-a"), ("foo", "")], false),
            node("node-b", &[("node", "node-b"), ("foo", "")], false),
            node("node-c", &[("node", "node-c"), ("bar", "")], taint_c),
        ]
    };
    let pods = vec![
        on("p-a", "node-a", &[("bar", "")]),
        on("p-b", "node-b", &[("bar", "")]),
        on("p-c", "node-b", &[("bar", "")]),
        on("p-d", "node-c", &[]),
    ];
    let node_selector = |p: &mut Pod| {
        p.spec.node_selector.insert(Symbol::intern("foo"), Symbol::intern(""));
    };
    let affinity_foo = |p: &mut Pod| {
        let term = NodeSelectorTerm {
            match_expressions: vec![NodeSelectorRequirement::new("foo", NodeSelectorOperator::In, &[""])],
            match_fields: vec![],
        };
        p.spec.affinity = Some(crate::model::Affinity {
            node_affinity: Some(crate::model::NodeAffinity {
                required: Some(NodeSelector::new(vec![term]).unwrap()),
                preferred: vec![],
            }),
            ..Default::default()
        });
    };
    let two = vec![("node-a", 1), ("node-b", 2)];
    let three = vec![("node-a", 1), ("node-b", 2), ("node-c", 0)];
    // (upstream name, pod, node-c tainted, expected summary)
    let cases: Vec<(&str, Pod, bool, Summary)> = vec![
        (
            "NodeAffinityPolicy honored with labelSelectors",
            incoming(vec![tsc(1, "node", DoNotSchedule, bar(), NONE)]).with(node_selector).build(),
            false,
            (two.clone(), [1, 2]),
        ),
        (
            "NodeAffinityPolicy ignored with labelSelectors",
            incoming(vec![tsc(1, "node", DoNotSchedule, bar(), (Some(Ignore), None))]).with(node_selector).build(),
            false,
            (three.clone(), [0, 1]),
        ),
        (
            "NodeAffinityPolicy honored with nodeAffinity",
            incoming(vec![tsc(1, "node", DoNotSchedule, bar(), NONE)]).with(affinity_foo).build(),
            false,
            (two.clone(), [1, 2]),
        ),
        (
            "NodeAffinityPolicy ignored with nodeAffinity",
            incoming(vec![tsc(1, "node", DoNotSchedule, bar(), (Some(Ignore), None))]).with(affinity_foo).build(),
            false,
            (three.clone(), [0, 1]),
        ),
        (
            "NodeTaintsPolicy ignored",
            incoming(vec![tsc(1, "node", DoNotSchedule, bar(), NONE)]).build(),
            true,
            (three.clone(), [0, 1]),
        ),
        (
            "NodeTaintsPolicy honored",
            incoming(vec![tsc(1, "node", DoNotSchedule, bar(), (None, Some(Honor)))]).build(),
            true,
            (two.clone(), [1, 2]),
        ),
        (
            "NodeTaintsPolicy honored with tolerated taints",
            incoming(vec![tsc(1, "node", DoNotSchedule, bar(), (None, Some(Honor)))])
                .toleration("node.kubernetes.io/unschedulable", None, None)
                .build(),
            true,
            (three.clone(), [0, 1]),
        ),
    ];
    for (name, pod, taint_c, want) in cases {
        let s = state(&pod, &abc(taint_c), &pods);
        assert_eq!(summary(&s), [want], "{name}");
    }

    // "two node inclusion Constraints, zone: honor/ignore, node: ignore/ignore"
    let nodes = vec![
        node("node-a", &[("zone", "zone1"), ("node", "node-a"), ("foo", "")], false),
        node("node-b", &[("zone", "zone1"), ("node", "node-b")], false),
        node("node-x", &[("zone", "zone2"), ("node", "node-x"), ("foo", "")], false),
    ];
    let pods = foo_pods(&[("node-b", 2), ("node-x", 1)]);
    let pod = incoming(vec![
        tsc(1, "zone", DoNotSchedule, exists("foo"), NONE),
        tsc(1, "node", DoNotSchedule, exists("foo"), (Some(Ignore), None)),
    ])
    .with(node_selector)
    .build();
    assert_eq!(
        summary(&state(&pod, &nodes, &pods)),
        [(vec![("zone1", 0), ("zone2", 1)], [0, 1]), (vec![("node-a", 0), ("node-b", 2), ("node-x", 1)], [0, 1])]
    );
}

/// PreScore's counts per constraint, ignored nodes and weights (as bits), sorted.
type ScoreSummary = (Vec<Vec<(&'static str, i64)>>, Vec<&'static str>, Vec<u64>);

/// PreScore's state, sorted for comparison.
fn score_summary(s: &super::scoring::PreScoreState) -> ScoreSummary {
    let counts = s
        .counts
        .iter()
        .map(|m| {
            let mut v: Vec<_> = m.iter().map(|(k, &n)| (k.as_str(), n)).collect();
            v.sort_unstable();
            v
        })
        .collect();
    let mut ignored: Vec<_> = s.ignored.iter().map(|k| k.as_str()).collect();
    ignored.sort_unstable();
    (counts, ignored, s.weights.iter().map(|w| w.to_bits()).collect())
}

/// The cross-cycle memo gives exactly the counts of a fresh plugin, for PreFilter
/// and PreScore, while pods come and go, nodes are relabelled, added and removed,
/// and more workloads than the memo holds take turns.
#[test]
#[expect(clippy::too_many_lines, reason = "one randomized scenario")]
fn memo_matches_a_fresh_count_after_changes() {
    use super::WorkloadSelectors;
    use crate::snapshot::{Cache, NodeList};
    let mut cache = Cache::new();
    let mk_node = |i: u64, zone: u64| {
        let name = format!("n{i}");
        let z = format!("z{zone}");
        let mut labels = vec![("zone", z.as_str()), ("node", name.as_str()), ("kubernetes.io/hostname", name.as_str())];
        if i.is_multiple_of(2) {
            labels.push(("topology.kubernetes.io/zone", z.as_str()));
        }
        node(&name, &labels, i.is_multiple_of(5))
    };
    for i in 0..12 {
        cache.add_node(mk_node(i, i % 3)).unwrap();
    }
    let honor_taints = (None, Some(Honor));
    let host = "kubernetes.io/hostname";
    let workloads: Vec<Pod> = vec![
        incoming(vec![
            tsc(1, "zone", DoNotSchedule, exists("foo"), NONE),
            tsc(1, "node", DoNotSchedule, exists("foo"), honor_taints),
        ])
        .build(),
        incoming(vec![
            tsc(1, "zone", DoNotSchedule, exists("bar"), NONE),
            tsc(2, "zone", ScheduleAnyway, exists("foo"), NONE),
        ])
        .build(),
        incoming(vec![
            tsc(1, "zone", ScheduleAnyway, exists("foo"), honor_taints),
            tsc(1, host, ScheduleAnyway, exists("foo"), NONE),
        ])
        .build(),
        incoming(vec![tsc(1, "node", DoNotSchedule, exists("foo"), NONE)])
            .with(|p| {
                p.spec.node_selector.insert(Symbol::intern("zone"), Symbol::intern("z1"));
            })
            .build(),
        // No constraints: the system defaults, through a Service selecting foo.
        PodBuilder::new("p").label("foo", "").build(),
        incoming(vec![
            tsc(1, "zone", DoNotSchedule, exists("foo"), honor_taints),
            tsc(1, "node", ScheduleAnyway, exists("bar"), NONE),
        ])
        .build(),
    ];
    let services = WorkloadSelectors::default();
    services.set(
        "default",
        "svc",
        super::WorkloadKind::Service,
        LabelSelector::from_labels(Labels::from_pairs([("foo", "")])),
    );
    let new_plugin = || {
        PodTopologySpread::new(PodTopologySpreadArgs::default(), &Handle::default())
            .unwrap()
            .with_workloads(services.clone())
    };
    let pl = new_plugin();
    let mut snap = Snapshot::default();
    let mut seed: u64 = 42;
    let mut next = |m: u64| {
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (seed >> 33) % m
    };
    let mut pods: Vec<String> = Vec::new();
    let mut nodes: Vec<u64> = (0..12).collect();
    let mut next_node = 12;
    for round in 0..300 {
        match next(6) {
            0..=2 => {
                let n = nodes[next(nodes.len() as u64) as usize];
                let label = if next(2) == 0 { "foo" } else { "bar" };
                let name = format!("p{round}");
                let p = on(&name, &format!("n{n}"), &[(label, "")]);
                cache.add_pod(Arc::new(PodInfo::new(p).unwrap())).unwrap();
                pods.push(format!("default/{name}"));
            }
            3 if !pods.is_empty() => {
                let uid = pods.swap_remove(next(pods.len() as u64) as usize);
                let _ = cache.remove_pod(&uid);
            }
            4 => {
                let n = nodes[next(nodes.len() as u64) as usize];
                cache.update_node(mk_node(n, next(4))).unwrap();
            }
            _ => {
                if next(2) == 0 && nodes.len() > 3 {
                    let n = nodes.swap_remove(next(nodes.len() as u64) as usize);
                    cache.remove_node(&format!("n{n}")).unwrap();
                } else {
                    cache.add_node(mk_node(next_node, next(3))).unwrap();
                    nodes.push(next_node);
                    next_node += 1;
                }
            }
        }
        cache.update_snapshot(&mut snap);
        // Mostly the first workloads (memo hits), sometimes others (misses, evictions).
        let w = if next(3) == 0 { next(6) } else { next(3) } as usize;
        let pod = PodInfo::new(workloads[w].clone()).unwrap();
        let fresh = new_plugin();
        let got = pl.pre_filter_state(&pod, &snap);
        let want = fresh.pre_filter_state(&pod, &snap);
        assert_eq!(got.as_ref().map(summary), want.as_ref().map(summary), "PreFilter, round {round}, workload {w}");
        let offset = next(3) as usize;
        let idx: Vec<usize> = (0..snap.len()).filter(|i| !(i + offset).is_multiple_of(3)).collect();
        let got = pl.pre_score_state(&pod, NodeList::new(&snap, &idx));
        let want = fresh.pre_score_state(&pod, NodeList::new(&snap, &idx));
        assert_eq!(
            got.as_ref().map(score_summary),
            want.as_ref().map(score_summary),
            "PreScore, round {round}, workload {w}"
        );
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    /// Filter over chunks (`filter_nodes`, from the label columns, with the
    /// no-domain-over-its-limit fast path) gives each node what `filter` gives it,
    /// on random zones (some nodes without one), matching pods spread over the
    /// nodes, skews and self-matching or not.
    #[test]
    fn filter_nodes_equals_filter(
        zones in proptest::collection::vec(proptest::option::weighted(0.9, 0u8..4), 1..150),
        pods in proptest::collection::vec((0usize..150, proptest::bool::weighted(0.7)), 0..40),
        max_skew in 1i32..3,
        self_match in proptest::bool::ANY,
        hostname in proptest::bool::ANY,
    ) {
        use crate::framework::{CycleState, FilterPlugin, PreFilterPlugin, Status};
        use crate::snapshot::NodeList;
        let nodes: Vec<Node> = zones
            .iter()
            .enumerate()
            .map(|(i, z)| {
                let name = format!("n{i}");
                let zone = z.map(|z| format!("zone{z}"));
                let mut labels = vec![("node", name.as_str())];
                if let Some(z) = &zone {
                    labels.push(("zone", z.as_str()));
                }
                node(&name, &labels, false)
            })
            .collect();
        let placed: Vec<Pod> = pods
            .iter()
            .enumerate()
            .map(|(k, &(n, matching))| {
                let labels: &[(&str, &str)] = if matching { &[("foo", "")] } else { &[("bar", "")] };
                on(&format!("q{k}"), &format!("n{}", n % nodes.len()), labels)
            })
            .collect();
        let snap = Snapshot::from_nodes(nodes.iter().map(|n| {
            let mut info = NodeInfo::new(Arc::new(n.clone()));
            for p in placed.iter().filter(|p| p.spec.node_name == n.name()) {
                info.add_pod(Arc::new(PodInfo::new(p.clone()).unwrap()));
            }
            info
        }));
        let mut constraints = vec![tsc(max_skew, "zone", DoNotSchedule, exists("foo"), NONE)];
        if hostname {
            constraints.push(tsc(max_skew, "node", DoNotSchedule, exists("foo"), NONE));
        }
        let mut b = PodBuilder::new("p").with(move |p| p.spec.topology_spread_constraints = constraints);
        if self_match {
            b = b.label("foo", "");
        }
        let pod = PodInfo::new(b.build()).unwrap();
        let pl = PodTopologySpread::new(PodTopologySpreadArgs::default(), &Handle::default()).unwrap();
        let mut state = CycleState::new();
        let (_, s) = pl.pre_filter(&mut state, &pod, &snap);
        proptest::prop_assert!(s.is_success());
        let all: Vec<usize> = (0..snap.len()).rev().collect();
        for chunk in all.chunks(64) {
            let mut statuses = vec![Status::SUCCESS; chunk.len()];
            let failed = pl.filter_nodes(&state, &pod, NodeList::new(&snap, chunk), &mut statuses);
            for (j, &p) in chunk.iter().enumerate() {
                let want = pl.filter(&state, &pod, &snap.nodes()[p]);
                proptest::prop_assert_eq!(failed >> j & 1 == 1, !want.is_success(), "mask at node {}", p);
                if !want.is_success() {
                    proptest::prop_assert_eq!(&statuses[j], &want, "status of node {}", p);
                }
            }
        }
    }
}
