//! InterPodAffinity: Filter and Score tables ported from upstream
//! `pkg/scheduler/framework/plugins/interpodaffinity/{filtering,scoring}_test.go`
//! (`TestRequiredAffinitySingleNode`, `TestRequiredAffinityMultipleNodes`,
//! `TestPreferredAffinity`, `TestPreferredAffinityWithHardPodAffinitySymmetricWeight`),
//! the AddPod/RemovePod extensions, namespace selectors, args, and a score-range
//! property.

use std::alloc::System;
use std::sync::Arc;

use proptest::prelude::*;
use schedkit::framework::{
    Code, CycleState, FilterPlugin, Handle, MAX_NODE_SCORE, NodeScore, PreFilterPlugin, PreScorePlugin, ScorePlugin,
};
use schedkit::model::{
    Affinity, LabelOperator, LabelSelector, LabelSelectorRequirement, Labels, Node, Pod, PodAffinity, PodAffinityTerm,
    Symbol, WeightedPodAffinityTerm,
};
use schedkit::plugins::inter_pod_affinity::{
    ERR_REASON_AFFINITY_RULES_NOT_MATCH, ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH, InterPodAffinity, InterPodAffinityArgs,
    InterPodAffinityArgsError, NamespaceLabels,
};
use schedkit::snapshot::{NodeInfo, NodeList, PodInfo, Snapshot};
use schedkit::testing::{NodeBuilder, PodBuilder};
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

use LabelOperator::{DoesNotExist, Exists, In, NotIn};

// ---- builders in the spirit of upstream's st.MakePod().PodAffinityIn(...) ----

fn req(key: &str, op: LabelOperator, values: &[&str]) -> LabelSelectorRequirement {
    LabelSelectorRequirement {
        key: Symbol::intern(key),
        operator: op,
        values: values.iter().map(|v| Symbol::intern(v)).collect(),
    }
}

fn sel(reqs: Vec<LabelSelectorRequirement>) -> LabelSelector {
    LabelSelector::new(Labels::new(), reqs).unwrap()
}

fn term(selector: LabelSelector, topology: &str) -> PodAffinityTerm {
    PodAffinityTerm { label_selector: Some(selector), topology_key: Symbol::intern(topology), ..Default::default() }
}

/// Upstream `PodAffinityIn(key, topologyKey, values)`.
fn term_in(key: &str, topology: &str, values: &[&str]) -> PodAffinityTerm {
    term(sel(vec![req(key, In, values)]), topology)
}

fn term_not_in(key: &str, topology: &str, values: &[&str]) -> PodAffinityTerm {
    term(sel(vec![req(key, NotIn, values)]), topology)
}

fn term_exists(key: &str, topology: &str) -> PodAffinityTerm {
    term(sel(vec![req(key, Exists, &[])]), topology)
}

fn with_ns_selector(mut t: PodAffinityTerm, selector: LabelSelector, namespaces: &[&str]) -> PodAffinityTerm {
    t.namespace_selector = Some(selector);
    t.namespaces = namespaces.iter().map(|n| Symbol::intern(n)).collect();
    t
}

fn weighted(weight: i32, t: PodAffinityTerm) -> WeightedPodAffinityTerm {
    WeightedPodAffinityTerm { weight, pod_affinity_term: t }
}

/// Sets the pod's affinity: required/preferred pod affinity, required/preferred anti-affinity.
fn affinity(
    req_aff: Vec<PodAffinityTerm>,
    pref_aff: Vec<WeightedPodAffinityTerm>,
    req_anti: Vec<PodAffinityTerm>,
    pref_anti: Vec<WeightedPodAffinityTerm>,
) -> impl FnOnce(&mut Pod) {
    move |p: &mut Pod| {
        let pa = |required: Vec<PodAffinityTerm>, preferred: Vec<WeightedPodAffinityTerm>| {
            (!required.is_empty() || !preferred.is_empty()).then_some(PodAffinity { required, preferred })
        };
        p.spec.affinity = Some(Affinity {
            node_affinity: None,
            pod_affinity: pa(req_aff, pref_aff),
            pod_anti_affinity: pa(req_anti, pref_anti),
        });
    }
}

fn required(terms: Vec<PodAffinityTerm>) -> impl FnOnce(&mut Pod) {
    affinity(terms, vec![], vec![], vec![])
}

fn required_anti(terms: Vec<PodAffinityTerm>) -> impl FnOnce(&mut Pod) {
    affinity(vec![], vec![], terms, vec![])
}

fn labelled(name: &str, ns: &str, labels: &[(&str, &str)]) -> PodBuilder {
    labels.iter().fold(PodBuilder::new(name).namespace(ns), |b, (k, v)| b.label(k, v))
}

fn node(name: &str, labels: &[(&str, &str)]) -> Node {
    labels.iter().fold(NodeBuilder::new(name), |b, (k, v)| b.label(k, v)).build()
}

fn snapshot(nodes: &[Node], pods: &[Pod]) -> Snapshot {
    Snapshot::from_nodes(nodes.iter().map(|n| {
        let mut info = NodeInfo::new(Arc::new(n.clone()));
        for p in pods.iter().filter(|p| p.spec.node_name == n.name()) {
            info.add_pod(Arc::new(PodInfo::new(p.clone()).unwrap()));
        }
        info
    }))
}

/// Upstream's fake namespace lister: two teams with two namespaces each.
fn team_namespaces() -> NamespaceLabels {
    let ns = NamespaceLabels::default();
    for (name, team) in [
        ("subteam1.team1", "team1"),
        ("subteam2.team1", "team1"),
        ("subteam1.team2", "team2"),
        ("subteam2.team2", "team2"),
    ] {
        ns.set(name, Labels::from_pairs([("team", team)]));
    }
    ns
}

fn plugin() -> InterPodAffinity {
    InterPodAffinity::new(InterPodAffinityArgs::default(), &Handle::default())
        .unwrap()
        .with_namespaces(team_namespaces())
}

/// PreFilter then Filter on every node: each node's status code (Skip counts as Success).
fn filter_codes(pl: &InterPodAffinity, pod: &Pod, nodes: &[Node], pods: &[Pod]) -> Vec<(String, Code)> {
    let snap = snapshot(nodes, pods);
    let pod = PodInfo::new(pod.clone()).unwrap();
    let mut state = CycleState::new();
    let (_, st) = pl.pre_filter(&mut state, &pod, &snap);
    snap.nodes()
        .iter()
        .map(|n| {
            let code = if st.is_skip() { Code::Success } else { pl.filter(&state, &pod, n).code() };
            (n.node().name().to_owned(), code)
        })
        .collect()
}

fn placed(pl: &InterPodAffinity, pod: &Pod, nodes: &[Node], pods: &[Pod]) -> Vec<String> {
    filter_codes(pl, pod, nodes, pods).into_iter().filter(|(_, c)| *c == Code::Success).map(|(n, _)| n).collect()
}

// ---- Filter: upstream TestRequiredAffinitySingleNode ----

#[test]
#[expect(clippy::too_many_lines, reason = "one upstream table, case by case")]
fn required_affinity_single_node() {
    let pl = plugin();
    let nodes = vec![node("node1", &[("region", "r1"), ("zone", "z11")])];
    let svc = [("service", "securityscan")];
    let sec = [("security", "S1")];
    let pod1 = || labelled("pod1", "ns1", &svc).node_name("node1");
    let pod1_default = || labelled("pod1", "default", &svc).node_name("node1");
    let cases: Vec<(&str, Pod, Vec<Pod>, bool)> = vec![
        (
            "A pod that has no required pod affinity scheduling rules can schedule onto a node with no existing pods",
            PodBuilder::new("p").build(),
            vec![],
            true,
        ),
        (
            "satisfies the pod with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using In operator that matches the existing pod",
            labelled("podToPlace", "ns1", &sec)
                .with(required(vec![term_in("service", "region", &["securityscan", "value2"])]))
                .build(),
            vec![pod1().build()],
            true,
        ),
        (
            "satisfies the pod with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using not in operator in labelSelector that matches the existing pod",
            labelled("podToPlace", "ns1", &sec)
                .with(required(vec![term_not_in("service", "region", &["securityscan3", "value3"])]))
                .build(),
            vec![pod1().build()],
            true,
        ),
        (
            "Does not satisfy the PodAffinity with labelSelector because of diff Namespace",
            labelled("podToPlace", "default", &sec)
                .with(required(vec![PodAffinityTerm {
                    namespaces: vec![Symbol::intern("DiffNameSpace")],
                    ..term_in("service", "", &["securityscan", "value2"])
                }]))
                .build(),
            vec![labelled("p", "ns", &svc).node_name("node1").build()],
            false,
        ),
        (
            "Doesn't satisfy the PodAffinity because of unmatching labelSelector with the existing pod",
            labelled("podToPlace", "default", &svc)
                .with(required(vec![term_in("service", "", &["antivirusscan", "value2"])]))
                .build(),
            vec![pod1().build()],
            false,
        ),
        (
            "satisfies the PodAffinity with different label Operators in multiple RequiredDuringSchedulingIgnoredDuringExecution",
            labelled("podToPlace", "ns1", &sec)
                .with(required(vec![
                    term(sel(vec![req("service", Exists, &[]), req("wrongkey", DoesNotExist, &[])]), "region"),
                    term(
                        sel(vec![req("service", In, &["securityscan"]), req("service", NotIn, &["WrongValue"])]),
                        "region",
                    ),
                ]))
                .build(),
            vec![pod1().build()],
            true,
        ),
        (
            "The labelSelector requirements(items of matchExpressions) are ANDed, the pod cannot schedule onto the node because one of the matchExpression item don't match.",
            labelled("podToPlace", "default", &sec)
                .with(required(vec![
                    term(sel(vec![req("service", Exists, &[]), req("wrongkey", DoesNotExist, &[])]), "region"),
                    term(
                        sel(vec![req("service", In, &["securityscan2"]), req("service", NotIn, &["WrongValue"])]),
                        "region",
                    ),
                ]))
                .build(),
            vec![pod1().build()],
            false,
        ),
        (
            "satisfies the PodAffinity and PodAntiAffinity with the existing pod",
            labelled("podToPlace", "ns1", &sec)
                .with(affinity(
                    vec![term_in("service", "region", &["securityscan", "value2"])],
                    vec![],
                    vec![term_in("service", "node", &["antivirusscan", "value2"])],
                    vec![],
                ))
                .build(),
            vec![pod1().build()],
            true,
        ),
        (
            "satisfies the PodAffinity and PodAntiAffinity and PodAntiAffinity symmetry with the existing pod",
            labelled("podToPlace", "default", &sec)
                .with(affinity(
                    vec![term_in("service", "region", &["securityscan", "value2"])],
                    vec![],
                    vec![term_in("service", "node", &["antivirusscan", "value2"])],
                    vec![],
                ))
                .build(),
            vec![
                pod1_default()
                    .with(required_anti(vec![term_in("service", "node", &["antivirusscan", "value2"])]))
                    .build(),
            ],
            true,
        ),
        (
            "satisfies the PodAffinity but doesn't satisfy the PodAntiAffinity with the existing pod",
            labelled("podToPlace", "default", &sec)
                .with(affinity(
                    vec![term_in("service", "region", &["securityscan", "value2"])],
                    vec![],
                    vec![term_in("service", "zone", &["securityscan", "value2"])],
                    vec![],
                ))
                .build(),
            vec![pod1().build()],
            false,
        ),
        (
            "satisfies the PodAffinity and PodAntiAffinity but doesn't satisfy PodAntiAffinity symmetry with the existing pod",
            labelled("podToPlace", "default", &svc)
                .with(affinity(
                    vec![term_in("service", "region", &["securityscan", "value2"])],
                    vec![],
                    vec![term_in("service", "node", &["antivirusscan", "value2"])],
                    vec![],
                ))
                .build(),
            vec![
                pod1_default()
                    .with(required_anti(vec![term_in("service", "zone", &["securityscan", "value2"])]))
                    .build(),
            ],
            false,
        ),
        (
            "pod matches its own Label in PodAffinity and that matches the existing pod Labels",
            labelled("podToPlace", "default", &svc)
                .with(required(vec![term_not_in("service", "region", &["securityscan", "value2"])]))
                .build(),
            // The existing pod is on node2, which is not in the snapshot.
            vec![labelled("pod1", "default", &svc).node_name("node2").build()],
            false,
        ),
        (
            "verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity constraints. doesn't satisfy PodAntiAffinity symmetry with the existing pod",
            labelled("podToPlace", "default", &svc).build(),
            vec![
                pod1_default()
                    .with(required_anti(vec![term_in("service", "zone", &["securityscan", "value2"])]))
                    .build(),
            ],
            false,
        ),
        (
            "verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity constraints. satisfy PodAntiAffinity symmetry with the existing pod",
            labelled("podToPlace", "default", &svc).build(),
            vec![
                pod1_default()
                    .with(required_anti(vec![term_not_in("service", "zone", &["securityscan", "value2"])]))
                    .build(),
            ],
            true,
        ),
        (
            "satisfies the PodAntiAffinity with existing pod but doesn't satisfy PodAntiAffinity symmetry with incoming pod",
            labelled("podToPlace", "default", &svc)
                .with(required_anti(vec![term_exists("service", "region"), term_exists("security", "region")]))
                .build(),
            vec![
                labelled("pod1", "default", &sec)
                    .node_name("node1")
                    .with(required_anti(vec![term_exists("security", "zone")]))
                    .build(),
            ],
            false,
        ),
        (
            "PodAntiAffinity symmetry check a1: incoming pod and existing pod partially match each other on AffinityTerms",
            labelled("podToPlace", "default", &svc)
                .with(required_anti(vec![term_exists("service", "zone"), term_exists("security", "zone")]))
                .build(),
            vec![
                labelled("pod1", "default", &sec)
                    .node_name("node1")
                    .with(required_anti(vec![term_exists("security", "zone")]))
                    .build(),
            ],
            false,
        ),
        (
            "PodAntiAffinity symmetry check a2: incoming pod and existing pod partially match each other on AffinityTerms",
            labelled("podToPlace", "default", &sec).with(required_anti(vec![term_exists("security", "zone")])).build(),
            vec![
                pod1_default()
                    .with(required_anti(vec![term_exists("service", "zone"), term_exists("security", "zone")]))
                    .build(),
            ],
            false,
        ),
        (
            "PodAntiAffinity symmetry check b1: incoming pod and existing pod partially match each other on AffinityTerms",
            labelled("podToPlace", "default", &[("abc", ""), ("xyz", "")])
                .with(required_anti(vec![term_exists("abc", "zone"), term_exists("def", "zone")]))
                .build(),
            vec![
                labelled("pod1", "default", &[("def", ""), ("xyz", "")])
                    .node_name("node1")
                    .with(required_anti(vec![term_exists("abc", "zone"), term_exists("def", "zone")]))
                    .build(),
            ],
            false,
        ),
        (
            "affinity with NamespaceSelector",
            labelled("podToPlace", "default", &sec)
                .with(required(vec![with_ns_selector(
                    term_in("service", "region", &["securityscan", "value2"]),
                    sel(vec![req("team", In, &["team1"])]),
                    &[],
                )]))
                .build(),
            vec![labelled("p", "subteam1.team1", &svc).node_name("node1").build()],
            true,
        ),
        (
            "affinity with non-matching NamespaceSelector",
            labelled("podToPlace", "ns1", &sec)
                .with(required(vec![with_ns_selector(
                    term_in("service", "region", &["securityscan", "value2"]),
                    sel(vec![req("team", In, &["team1"])]),
                    &[],
                )]))
                .build(),
            vec![labelled("p", "subteam1.team2", &svc).node_name("node1").build()],
            false,
        ),
        (
            "anti-affinity with matching NamespaceSelector",
            labelled("podToPlace", "subteam1.team1", &sec)
                .with(required_anti(vec![with_ns_selector(
                    term_in("service", "zone", &["securityscan", "value2"]),
                    sel(vec![req("team", In, &["team1"])]),
                    &[],
                )]))
                .build(),
            vec![labelled("pod1", "subteam2.team1", &svc).node_name("node1").build()],
            false,
        ),
        (
            "anti-affinity with matching all NamespaceSelector",
            labelled("podToPlace", "subteam1.team1", &sec)
                .with(required_anti(vec![with_ns_selector(
                    term_in("service", "zone", &["securityscan", "value2"]),
                    LabelSelector::default(),
                    &[],
                )]))
                .build(),
            vec![labelled("p", "subteam2.team1", &svc).node_name("node1").build()],
            false,
        ),
        (
            "anti-affinity with non-matching NamespaceSelector",
            labelled("podToPlace", "subteam1.team1", &sec)
                .with(required_anti(vec![with_ns_selector(
                    term_in("service", "zone", &["securityscan", "value2"]),
                    sel(vec![req("team", In, &["team1"])]),
                    &[],
                )]))
                .build(),
            vec![labelled("p", "subteam1.team2", &svc).node_name("node1").build()],
            true,
        ),
    ];
    for (name, pod, pods, want) in cases {
        let got = placed(&pl, &pod, &nodes, &pods);
        assert_eq!(!got.is_empty(), want, "{name}");
    }
}

// ---- Filter: upstream TestRequiredAffinityMultipleNodes ----

#[test]
fn required_affinity_multiple_nodes() {
    let pl = plugin();
    let china = [("region", "China")];
    let china_az1 = [("region", "China"), ("az", "az1")];
    let india = [("region", "India")];
    let foo_bar = [("foo", "bar")];

    // "A pod can be scheduled onto all the nodes that have the same topology key &
    // label value with one of them has an existing pod that matches the affinity rules"
    let nodes = vec![node("node1", &china), node("node2", &china_az1), node("node3", &india)];
    let pod = PodBuilder::new("podToPlace").with(required(vec![term_in("foo", "region", &["bar"])])).build();
    let pods = vec![labelled("p1", "default", &foo_bar).node_name("node1").build()];
    assert_eq!(placed(&pl, &pod, &nodes, &pods), ["node1", "node2"]);
    let codes = filter_codes(&pl, &pod, &nodes, &pods);
    assert_eq!(codes[2].1, Code::UnschedulableAndUnresolvable);

    // "The affinity rule is to schedule all of the pods of this collection to the same
    // zone. The first pod of the collection should not be blocked from being scheduled
    // onto any node, even there's no existing pod that matches the rule anywhere."
    let self_affine = labelled("podToPlace", "default", &[("foo", "bar"), ("service", "securityscan")])
        .with(required(vec![term_in("foo", "zone", &["bar"]), term_in("service", "zone", &["securityscan"])]))
        .build();
    let pods = vec![labelled("p1", "default", &foo_bar).node_name("nodeA").build()];
    let zoned = vec![
        node("nodeA", &[("zone", "az1"), ("hostname", "h1")]),
        node("nodeB", &[("zone", "az2"), ("hostname", "h2")]),
    ];
    assert_eq!(placed(&pl, &self_affine, &zoned, &pods), ["nodeA", "nodeB"]);

    // "The first pod of the collection can only be scheduled on nodes labelled with
    // the requested topology keys"
    let unzoned = vec![
        node("nodeA", &[("zoneLabel", "az1"), ("hostname", "h1")]),
        node("nodeB", &[("zoneLabel", "az2"), ("hostname", "h2")]),
    ];
    assert!(placed(&pl, &self_affine, &unzoned, &pods).is_empty());

    // "NodeA and nodeB have same topologyKey and label value. NodeA has an existing
    // pod that matches the inter pod affinity rule. The pod can not be scheduled onto
    // nodeA and nodeB."
    let r1 = vec![
        node("nodeA", &[("region", "r1"), ("hostname", "nodeA")]),
        node("nodeB", &[("region", "r1"), ("hostname", "nodeB")]),
    ];
    let anti = PodBuilder::new("podToPlace").with(required_anti(vec![term_in("foo", "region", &["abc"])])).build();
    let pods = vec![labelled("p", "default", &[("foo", "abc")]).node_name("nodeA").build()];
    assert!(placed(&pl, &anti, &r1, &pods).is_empty());
    let codes = filter_codes(&pl, &anti, &r1, &pods);
    assert_eq!(codes[0].1, Code::Unschedulable);

    // "... but can be scheduled onto nodeC (NodeC has an existing pod that match the
    // inter pod affinity rule but in different namespace)"
    let nodes = vec![node("nodeA", &china), node("nodeB", &china_az1), node("nodeC", &india)];
    let pod = labelled("podToPlace", "NS1", &[("foo", "123")])
        .with(required_anti(vec![term_in("foo", "region", &["bar"])]))
        .build();
    let pods = vec![
        labelled("a", "NS1", &foo_bar).node_name("nodeA").build(),
        PodBuilder::new("c")
            .namespace("NS2")
            .node_name("nodeC")
            .with(required_anti(vec![term_in("foo", "region", &["123"])]))
            .build(),
    ];
    assert_eq!(placed(&pl, &pod, &nodes, &pods), ["nodeC"]);

    // "Test existing pod's anti-affinity: if an existing pod has a term with invalid
    // topologyKey, labelSelector of the term is firstly checked, and then topologyKey
    // of the term is also checked"
    let z1 = vec![
        node("nodeA", &[("region", "r1"), ("zone", "z1"), ("hostname", "nodeA")]),
        node("nodeB", &[("region", "r1"), ("zone", "z1"), ("hostname", "nodeB")]),
    ];
    let pod = labelled("podToPlace", "default", &[("foo", "")]).build();
    let pods = vec![
        PodBuilder::new("e")
            .node_name("nodeA")
            .with(required_anti(vec![term_exists("foo", "invalid-node-label")]))
            .build(),
    ];
    assert_eq!(placed(&pl, &pod, &z1, &pods), ["nodeA", "nodeB"]);

    // "Test existing pod's anti-affinity: incoming pod wouldn't considered as a fit as
    // it violates each existingPod's terms on all nodes"
    let z12 = vec![
        node("nodeA", &[("region", "r1"), ("zone", "z1"), ("hostname", "nodeA")]),
        node("nodeB", &[("region", "r1"), ("zone", "z2"), ("hostname", "nodeB")]),
    ];
    let pod = labelled("podToPlace", "default", &[("foo", ""), ("bar", "")]).build();
    let pods = vec![
        PodBuilder::new("e1").node_name("nodeA").with(required_anti(vec![term_exists("foo", "zone")])).build(),
        PodBuilder::new("e2").node_name("nodeA").with(required_anti(vec![term_exists("bar", "region")])).build(),
    ];
    assert!(placed(&pl, &pod, &z12, &pods).is_empty());
    assert_eq!(filter_codes(&pl, &pod, &z12, &pods)[1].1, Code::Unschedulable);

    // "Test existing pod's anti-affinity: only when labelSelector and topologyKey both
    // match, it's counted as a single term match - case when one term has invalid
    // topologyKey"
    let pods = vec![
        PodBuilder::new("e")
            .node_name("nodeA")
            .with(required_anti(vec![term_exists("foo", "invalid-node-label"), term_exists("bar", "zone")]))
            .build(),
    ];
    assert_eq!(placed(&pl, &pod, &z12, &pods), ["nodeB"]);
}

#[test]
fn filter_reasons_are_upstreams() {
    let pl = plugin();
    let nodes = vec![node("n1", &[("zone", "a")]), node("n2", &[("zone", "b")])];
    let pods = vec![
        labelled("db", "default", &[("app", "db")]).node_name("n1").build(),
        labelled("lonely", "default", &[("app", "lonely")])
            .node_name("n2")
            .with(required_anti(vec![term_in("app", "zone", &["web"])]))
            .build(),
    ];
    let check = |pod: Pod, node: &str, code: Code, reason: &str| {
        let snap = snapshot(&nodes, &pods);
        let pod = PodInfo::new(pod).unwrap();
        let mut state = CycleState::new();
        assert!(pl.pre_filter(&mut state, &pod, &snap).1.is_success());
        let st = pl.filter(&state, &pod, snap.get(node).unwrap());
        assert_eq!((st.code(), st.message()), (code, reason.to_string()));
    };
    let wants_db = PodBuilder::new("w").with(required(vec![term_in("app", "zone", &["db"])])).build();
    check(wants_db, "n2", Code::UnschedulableAndUnresolvable, ERR_REASON_AFFINITY_RULES_NOT_MATCH);
    let avoids_db = PodBuilder::new("w").with(required_anti(vec![term_in("app", "zone", &["db"])])).build();
    check(avoids_db, "n1", Code::Unschedulable, ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH);
    let web = labelled("w", "default", &[("app", "web")]).build();
    check(web, "n2", Code::Unschedulable, ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH);
}

#[test]
fn pods_without_terms_skip_prefilter_and_prescore() {
    let pl = plugin();
    let nodes = vec![node("n1", &[("zone", "a")])];
    let pods = vec![labelled("x", "default", &[("app", "x")]).node_name("n1").build()];
    let snap = snapshot(&nodes, &pods);
    let pod = PodInfo::new(PodBuilder::new("p").build()).unwrap();
    let mut state = CycleState::new();
    assert!(pl.pre_filter(&mut state, &pod, &snap).1.is_skip());
    assert!(pl.pre_score(&mut state, &pod, NodeList::new(&snap, &[0])).is_skip());
    assert!(state.is_empty());
}

// ---- AddPod / RemovePod (upstream TestPreFilterStateAddRemovePod) ----

#[test]
fn add_and_remove_pod_update_the_counts() {
    let pl = plugin();
    let nodes = vec![node("n1", &[("zone", "a")]), node("n2", &[("zone", "b")])];
    let snap = snapshot(&nodes, &[]);
    let (n1, n2) = (snap.get("n1").unwrap(), snap.get("n2").unwrap());
    let pod = PodInfo::new(
        labelled("p", "default", &[("app", "web")])
            .with(affinity(
                vec![term_in("app", "zone", &["db"])],
                vec![],
                vec![term_in("app", "zone", &["cache"])],
                vec![],
            ))
            .build(),
    )
    .unwrap();
    let mut state = CycleState::new();
    assert!(pl.pre_filter(&mut state, &pod, &snap).1.is_success());
    // Nothing matches the affinity and the pod doesn't match itself: nowhere.
    assert_eq!(pl.filter(&state, &pod, n1).code(), Code::UnschedulableAndUnresolvable);
    let ext = pl.extensions().unwrap();

    let db = PodInfo::new(labelled("db", "default", &[("app", "db")]).build()).unwrap();
    let mut dry = state.clone();
    assert!(ext.add_pod(&mut dry, &pod, &db, n1).is_success());
    assert_eq!(pl.filter(&dry, &pod, n1).code(), Code::Success);
    assert_eq!(pl.filter(&dry, &pod, n2).code(), Code::UnschedulableAndUnresolvable);
    assert_eq!(pl.filter(&state, &pod, n1).code(), Code::UnschedulableAndUnresolvable, "clone untouched");

    let cache = PodInfo::new(labelled("cache", "default", &[("app", "cache")]).build()).unwrap();
    assert!(ext.add_pod(&mut dry, &pod, &cache, n1).is_success());
    assert_eq!(pl.filter(&dry, &pod, n1).code(), Code::Unschedulable);
    assert!(ext.remove_pod(&mut dry, &pod, &cache, n1).is_success());
    assert_eq!(pl.filter(&dry, &pod, n1).code(), Code::Success);

    // An added pod whose own anti-affinity rejects the incoming pod.
    let hater =
        PodInfo::new(PodBuilder::new("hater").with(required_anti(vec![term_in("app", "zone", &["web"])])).build())
            .unwrap();
    assert!(ext.add_pod(&mut dry, &pod, &hater, n1).is_success());
    assert_eq!(pl.filter(&dry, &pod, n1).code(), Code::Unschedulable);
    assert!(ext.remove_pod(&mut dry, &pod, &hater, n1).is_success());
    assert!(ext.remove_pod(&mut dry, &pod, &db, n1).is_success());
    assert_eq!(pl.filter(&dry, &pod, n1).code(), Code::UnschedulableAndUnresolvable);
}

#[test]
fn match_label_keys_and_mismatch_label_keys() {
    // Anti-affinity against other tenants in the same zone, keyed by the pod's own
    // labels (KEP-3633, applied by the API server upstream).
    let pl = plugin();
    let nodes = vec![node("n1", &[("zone", "a")]), node("n2", &[("zone", "b")])];
    let pods = vec![
        labelled("t1", "default", &[("app", "x"), ("tenant", "t1")]).node_name("n1").build(),
        labelled("t2", "default", &[("app", "x"), ("tenant", "t2")]).node_name("n2").build(),
    ];
    let mut t = term_exists("app", "zone");
    t.mismatch_label_keys = vec![Symbol::intern("tenant")];
    let pod = labelled("p", "default", &[("app", "x"), ("tenant", "t1")]).with(required_anti(vec![t])).build();
    assert_eq!(placed(&pl, &pod, &nodes, &pods), ["n1"]);
    let mut t = term_exists("app", "zone");
    t.match_label_keys = vec![Symbol::intern("tenant")];
    let pod = labelled("p", "default", &[("app", "x"), ("tenant", "t1")]).with(required(vec![t])).build();
    assert_eq!(placed(&pl, &pod, &nodes, &pods), ["n1"]);
}

// ---- Score: upstream TestPreferredAffinity ----

fn scores(pl: &InterPodAffinity, pod: &Pod, nodes: &[Node], pods: &[Pod]) -> Option<Vec<(String, i64)>> {
    let snap = snapshot(nodes, pods);
    let pod = PodInfo::new(pod.clone()).unwrap();
    let idx: Vec<usize> = (0..nodes.len()).collect();
    let mut state = CycleState::new();
    let st = pl.pre_score(&mut state, &pod, NodeList::new(&snap, &idx));
    if st.is_skip() {
        return None;
    }
    assert!(st.is_success(), "{st:?}");
    let mut out: Vec<NodeScore> =
        snap.nodes().iter().map(|n| NodeScore { name: n.name(), score: pl.score(&state, &pod, n).unwrap() }).collect();
    // The batch entry point gives the same raw scores.
    let mut batch: Vec<NodeScore> = out.iter().map(|s| NodeScore { name: s.name, score: -1 }).collect();
    pl.score_nodes(&state, &pod, NodeList::new(&snap, &idx), &mut batch).unwrap();
    assert_eq!(batch, out);
    assert!(pl.normalize(&state, &pod, &mut out).is_success());
    Some(out.into_iter().map(|s| (s.name.as_str().to_owned(), s.score)).collect())
}

fn want(v: &[(&str, i64)]) -> Vec<(String, i64)> {
    v.iter().map(|(n, s)| ((*n).to_owned(), *s)).collect()
}

#[test]
#[expect(clippy::too_many_lines, reason = "one upstream table, case by case")]
fn preferred_affinity_table() {
    let pl = plugin();
    let china = [("region", "China")];
    let india = [("region", "India")];
    let az1 = [("az", "az1")];
    let az2 = [("az", "az2")];
    let china_az1 = [("region", "China"), ("az", "az1")];
    let s1 = [("security", "S1")];
    let s2 = [("security", "S2")];
    let on = |name: &str, node: &str, labels: &[(&str, &str)]| labelled(name, "default", labels).node_name(node);
    let stay_s1_region = || weighted(5, term_in("security", "region", &["S1"]));
    let stay_s2_region = || weighted(6, term_in("security", "region", &["S2"]));
    let away_s1_az = || weighted(5, term_in("security", "az", &["S1"]));
    let away_s2_az = || weighted(5, term_in("security", "az", &["S2"]));
    let pref = |t: Vec<WeightedPodAffinityTerm>| affinity(vec![], t, vec![], vec![]);
    let pref_anti = |t: Vec<WeightedPodAffinityTerm>| affinity(vec![], vec![], vec![], t);
    let s1_region_away_s2_az =
        || affinity(vec![], vec![weighted(8, term_in("security", "region", &["S1"]))], vec![], vec![away_s2_az()]);
    let n3 = || vec![node("node1", &china), node("node2", &india), node("node3", &az1)];

    // "all nodes are same priority as Affinity is nil"
    assert_eq!(scores(&pl, &labelled("p", "default", &s1).build(), &n3(), &[]), None);
    // "Affinity: pod that matches topology key & pods in nodes will get high score
    // comparing to others which doesn't match either pods in nodes or in topology key"
    let pod = labelled("p", "default", &s1).with(pref(vec![stay_s1_region()])).build();
    let pods = vec![on("a", "node1", &s1).build(), on("b", "node2", &s2).build(), on("c", "node3", &s1).build()];
    assert_eq!(scores(&pl, &pod, &n3(), &pods), Some(want(&[("node1", 100), ("node2", 0), ("node3", 0)])));
    // "All the nodes that have the same topology key & label value with one of them
    // has an existing pod that match the affinity rules, have the same score"
    let pod = PodBuilder::new("p").with(pref(vec![stay_s1_region()])).build();
    let nodes = vec![node("node1", &china), node("node2", &china_az1), node("node3", &india)];
    assert_eq!(
        scores(&pl, &pod, &nodes, &[on("a", "node1", &s1).build()]),
        Some(want(&[("node1", 100), ("node2", 100), ("node3", 0)]))
    );
    // "Affinity: nodes in one region has more matching pods comparing to other
    // region, so the region which has more matches will get high score"
    let pod = labelled("p", "default", &s1).with(pref(vec![stay_s2_region()])).build();
    let nodes = vec![
        node("node1", &china),
        node("node2", &india),
        node("node3", &china),
        node("node4", &china),
        node("node5", &india),
    ];
    let pods: Vec<Pod> = ["node1", "node1", "node2", "node3", "node4", "node5"]
        .iter()
        .enumerate()
        .map(|(i, n)| on(&format!("p{i}"), n, &s2).build())
        .collect();
    assert_eq!(
        scores(&pl, &pod, &nodes, &pods),
        Some(want(&[("node1", 100), ("node2", 0), ("node3", 100), ("node4", 100), ("node5", 0)]))
    );
    // "Affinity: different Label operators and values for pod affinity scheduling
    // preference, including some match failures"
    let affinity3 = vec![
        weighted(8, term(sel(vec![req("security", NotIn, &["S1"]), req("security", In, &["S2"])]), "region")),
        weighted(2, term(sel(vec![req("security", Exists, &[]), req("wrongkey", DoesNotExist, &[])]), "region")),
    ];
    let pod = labelled("p", "default", &s1).with(pref(affinity3)).build();
    let pods = vec![on("a", "node1", &s1).build(), on("b", "node2", &s2).build(), on("c", "node3", &s1).build()];
    assert_eq!(scores(&pl, &pod, &n3(), &pods), Some(want(&[("node1", 20), ("node2", 100), ("node3", 0)])));
    // "Affinity symmetry: considered only the preferredDuringSchedulingIgnoredDuringExecution
    // in pod affinity symmetry"
    let pod = labelled("p", "default", &s2).build();
    let pods = vec![
        on("a", "node1", &s1).with(pref(vec![stay_s1_region()])).build(),
        on("b", "node2", &s2).with(pref(vec![stay_s2_region()])).build(),
    ];
    assert_eq!(scores(&pl, &pod, &n3(), &pods), Some(want(&[("node1", 0), ("node2", 100), ("node3", 0)])));
    // "Affinity symmetry with namespace selector"
    let ns_term = || {
        with_ns_selector(
            term_in("security", "region", &["S1"]),
            sel(vec![req("team", In, &["team1"])]),
            &["subteam2.team2"],
        )
    };
    let pod = labelled("p", "subteam1.team1", &s1).build();
    let pods = vec![
        on("a", "node1", &s1).with(pref(vec![weighted(5, ns_term())])).build(),
        on("b", "node2", &s2).with(pref(vec![stay_s2_region()])).build(),
    ];
    assert_eq!(scores(&pl, &pod, &n3(), &pods), Some(want(&[("node1", 100), ("node2", 0), ("node3", 0)])));
    // "AntiAffinity symmetry with namespace selector"
    let pods = vec![
        on("a", "node1", &s1).with(pref_anti(vec![weighted(5, ns_term())])).build(),
        on("b", "node2", &s2).with(pref(vec![stay_s2_region()])).build(),
    ];
    assert_eq!(scores(&pl, &pod, &n3(), &pods), Some(want(&[("node1", 0), ("node2", 100), ("node3", 100)])));
    // "Affinity symmetry: considered RequiredDuringSchedulingIgnoredDuringExecution in
    // pod affinity symmetry"
    let hard = || {
        required(vec![
            term_in("security", "region", &["S1", "value2"]),
            term(sel(vec![req("security", Exists, &[]), req("wrongkey", DoesNotExist, &[])]), "region"),
        ])
    };
    let pod = labelled("p", "default", &s1).build();
    let pods = vec![on("a", "node1", &s1).with(hard()).build(), on("b", "node2", &s2).with(hard()).build()];
    assert_eq!(scores(&pl, &pod, &n3(), &pods), Some(want(&[("node1", 100), ("node2", 100), ("node3", 0)])));
    // "Anti Affinity: pod that does not match existing pods in node will get high score"
    let pod = labelled("p", "default", &s1).with(pref_anti(vec![away_s1_az()])).build();
    let pods = vec![on("a", "node1", &s1).build(), on("b", "node2", &s2).build()];
    assert_eq!(
        scores(&pl, &pod, &[node("node1", &az1), node("node2", &china)], &pods),
        Some(want(&[("node1", 0), ("node2", 100)]))
    );
    // "Anti Affinity: one node has more matching pods comparing to other node, so the
    // node which has more unmatches will get high score"
    let pods = vec![on("a", "node1", &s1).build(), on("b", "node1", &s1).build(), on("c", "node2", &s2).build()];
    assert_eq!(
        scores(&pl, &pod, &[node("node1", &az1), node("node2", &india)], &pods),
        Some(want(&[("node1", 0), ("node2", 100)]))
    );
    // "Anti Affinity symmetry: the existing pods in node which has anti affinity match
    // will get high score"
    let pod = labelled("p", "default", &s2).build();
    let pods = vec![
        on("a", "node1", &s1).with(pref_anti(vec![away_s2_az()])).build(),
        on("b", "node2", &s2).with(pref_anti(vec![away_s1_az()])).build(),
    ];
    assert_eq!(
        scores(&pl, &pod, &[node("node1", &az1), node("node2", &az2)], &pods),
        Some(want(&[("node1", 0), ("node2", 100)]))
    );
    // "Affinity and Anti Affinity: considering both affinity and anti-affinity, the pod
    // to schedule and existing pods have the same labels"
    let pod = labelled("p", "default", &s1).with(s1_region_away_s2_az()).build();
    let nodes = vec![
        node("node1", &china_az1),
        node("node2", &india),
        node("node3", &china),
        node("node4", &china),
        node("node5", &india),
    ];
    let pods: Vec<Pod> = ["node1", "node1", "node2", "node3", "node3", "node4", "node5"]
        .iter()
        .enumerate()
        .map(|(i, n)| on(&format!("p{i}"), n, &s1).build())
        .collect();
    assert_eq!(
        scores(&pl, &pod, &nodes, &pods),
        Some(want(&[("node1", 100), ("node2", 0), ("node3", 100), ("node4", 100), ("node5", 0)]))
    );
    // "Affinity and Anti Affinity and symmetry: considered only preferredDuringSchedulingIgnoredDuringExecution
    // in both pod affinity & anti affinity & symmetry"
    let pods = vec![
        on("a", "node1", &s1).build(),
        on("b", "node2", &s2).build(),
        PodBuilder::new("c").node_name("node3").with(s1_region_away_s2_az()).build(),
        PodBuilder::new("d").node_name("node4").with(pref_anti(vec![away_s1_az()])).build(),
    ];
    let nodes = vec![node("node1", &china), node("node2", &az1), node("node3", &india), node("node4", &az2)];
    assert_eq!(
        scores(&pl, &pod, &nodes, &pods),
        Some(want(&[("node1", 100), ("node2", 0), ("node3", 100), ("node4", 0)]))
    );
    // "Avoid panic when partial nodes in a topology don't have pods with affinity"
    let pod = labelled("p", "default", &s1).build();
    let pods = vec![
        on("a", "node1", &s1).build(),
        PodBuilder::new("b").node_name("node2").with(s1_region_away_s2_az()).build(),
    ];
    assert_eq!(
        scores(&pl, &pod, &[node("node1", &china), node("node2", &china)], &pods),
        Some(want(&[("node1", 0), ("node2", 0)]))
    );
    // "Affinity with pods matching NamespaceSelector"
    let pod = labelled("p", "subteam1.team1", &s1).with(pref(vec![weighted(5, ns_term())])).build();
    let pods = vec![
        labelled("a", "subteam1.team1", &s1).node_name("node1").build(),
        labelled("b", "subteam1.team1", &s1).node_name("node1").build(),
        labelled("c", "subteam1.team2", &s1).node_name("node1").build(),
        labelled("d", "subteam2.team1", &s1).node_name("node2").build(),
    ];
    assert_eq!(
        scores(&pl, &pod, &[node("node1", &china), node("node2", &india)], &pods),
        Some(want(&[("node1", 100), ("node2", 0)]))
    );
}

// ---- Score: upstream TestPreferredAffinityWithHardPodAffinitySymmetricWeight ----

#[test]
fn hard_pod_affinity_symmetric_weight() {
    let china = [("region", "China")];
    let india = [("region", "India")];
    let az1 = [("az", "az1")];
    let nodes = vec![node("node1", &china), node("node2", &india), node("node3", &az1)];
    let hard = || required(vec![term_in("service", "region", &["S1"])]);
    let pods = vec![
        labelled("a", "default", &[]).node_name("node1").with(hard()).build(),
        labelled("b", "default", &[]).node_name("node2").with(hard()).build(),
    ];
    let pod = labelled("p", "default", &[("service", "S1")]).build();
    let with_weight = |w: i32| {
        InterPodAffinity::new(
            InterPodAffinityArgs { hard_pod_affinity_weight: w, ..Default::default() },
            &Handle::default(),
        )
        .unwrap()
    };
    // "with default weight": both hard-affine regions score.
    assert_eq!(
        scores(&with_weight(1), &pod, &nodes, &pods),
        Some(want(&[("node1", 100), ("node2", 100), ("node3", 0)]))
    );
    // "with zero weight": nothing scores, PreScore skips.
    assert_eq!(scores(&with_weight(0), &pod, &nodes, &pods), None);
    // "ignorePreferredTermsOfExistingPods": a pod without preferred terms of its own is skipped.
    let ignore = InterPodAffinity::new(
        InterPodAffinityArgs { ignore_preferred_terms_of_existing_pods: true, ..Default::default() },
        &Handle::default(),
    )
    .unwrap();
    assert_eq!(scores(&ignore, &pod, &nodes, &pods), None);
}

// ---- Args ----

#[test]
fn args_validation() {
    let h = Handle::default();
    assert_eq!(
        InterPodAffinity::new(InterPodAffinityArgs { hard_pod_affinity_weight: -1, ..Default::default() }, &h)
            .unwrap_err(),
        InterPodAffinityArgsError::HardPodAffinityWeight(-1)
    );
    assert!(
        InterPodAffinity::new(InterPodAffinityArgs { hard_pod_affinity_weight: 101, ..Default::default() }, &h)
            .is_err()
    );
    assert!(
        InterPodAffinity::new(InterPodAffinityArgs { hard_pod_affinity_weight: 100, ..Default::default() }, &h).is_ok()
    );
    let msg = InterPodAffinity::factory(Some(&serde_json::json!({"hardPodAffinityWeight": 200})), &h).err().unwrap();
    assert!(msg.contains("hardPodAffinityWeight"), "{msg}");
    assert!(InterPodAffinity::factory(Some(&serde_json::json!({"hardPodAffinityWeight": "x"})), &h).is_err());
    assert!(InterPodAffinity::factory(None, &h).is_ok());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Normalized scores always lie in 0..=MAX_NODE_SCORE, whatever the mix of
    /// preferred affinity and anti-affinity weights.
    #[test]
    fn normalized_scores_in_range(
        placement in proptest::collection::vec((0usize..5, 0usize..3), 1..12),
        w_aff in 1i32..=100,
        w_anti in 1i32..=100,
    ) {
        let nodes: Vec<Node> = (0..5).map(|i| node(&format!("n{i}"), &[("zone", &format!("z{}", i % 3))])).collect();
        let apps = ["a", "b", "c"];
        let pods: Vec<Pod> = placement
            .iter()
            .enumerate()
            .map(|(i, &(n, app))| labelled(&format!("p{i}"), "default", &[("app", apps[app])]).node_name(&format!("n{n}")).build())
            .collect();
        let pod = PodBuilder::new("in")
            .with(affinity(
                vec![],
                vec![weighted(w_aff, term_in("app", "zone", &["a"]))],
                vec![],
                vec![weighted(w_anti, term_in("app", "zone", &["b"]))],
            ))
            .build();
        if let Some(s) = scores(&plugin(), &pod, &nodes, &pods) {
            for (_, v) in s {
                prop_assert!((0..=MAX_NODE_SCORE).contains(&v), "{}", v);
            }
        }
    }
}

// ---- Filter and Score allocate nothing per node ----

/// Allocations while `f` runs, the smallest of several tries (other tests of this
/// binary allocate concurrently; per-node allocation would show in every try).
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
        .map(|(i, n)| {
            let b = labelled(&format!("p{i}"), "default", &[("app", if i % 2 == 0 { "a" } else { "b" })])
                .node_name(n.name());
            if i % 7 == 0 {
                b.with(required_anti(vec![term_in("app", "kubernetes.io/hostname", &["z"])])).build()
            } else {
                b.build()
            }
        })
        .collect();
    let snap = snapshot(&nodes, &pods);
    let pl = plugin();
    let pod = PodInfo::new(
        labelled("in", "default", &[("app", "c")])
            .with(affinity(
                vec![term_in("app", "topology.kubernetes.io/region", &["a"])],
                vec![weighted(10, term_in("app", "topology.kubernetes.io/zone", &["b"]))],
                vec![term_in("app", "kubernetes.io/hostname", &["none"])],
                vec![weighted(5, term_in("app", "kubernetes.io/hostname", &["a"]))],
            ))
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
    assert_ne!(total, 0);
    assert_eq!((filter, score), (0, 0), "allocations over 500 Filter / Score calls");
}
