//! Network-aware scheduling: real AppGroup and NetworkTopology manifests round-trip
//! (tests/fixtures/networkaware, sources in its README), the AppGroup controller's
//! sorting algorithms, and upstream's test tables for TopologicalSort and
//! NetworkOverhead (scheduler-plugins release-1.34, `pkg/networkaware`).

use std::sync::Arc;
use std::time::Duration;

use proptest::prelude::*;
use serde::Deserialize;
use serde_json::{Value, json};

use schedkit::framework::{
    Code, CycleState, FilterPlugin, Handle, NodeScore, PreFilterPlugin, ProfileConfig, QueueSortPlugin, QueuedPodInfo,
    ScorePlugin, Status,
};
use schedkit::model::Symbol;
use schedkit::plugins::network_aware::*;
use schedkit::plugins::{default_registry, names};
use schedkit::snapshot::{PodInfo, Snapshot};
use schedkit::testing::{ClusterBuilder, NodeBuilder, PodBuilder};

fn fixture(file: &str) -> Vec<Value> {
    let path = format!("{}/../tests/fixtures/networkaware/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(path).unwrap();
    serde_norway::Deserializer::from_str(&text)
        .map(|d| Value::deserialize(d).unwrap())
        .filter(|v| !v.is_null())
        .collect()
}

/// Deserializes `doc` as `T`, serializes it back and checks nothing was lost or added.
fn round_trip<T: serde::de::DeserializeOwned + serde::Serialize>(doc: &Value) -> T {
    let typed: T = serde_json::from_value(doc.clone()).unwrap();
    assert_eq!(&serde_json::to_value(&typed).unwrap(), doc, "round trip changed the document");
    typed
}

#[test]
fn app_group_manifests_round_trip_and_validate() {
    let a1: AppGroup = round_trip(&fixture("scheduler-plugins-appGroup-example.yaml")[0]);
    a1.validate().unwrap();
    assert_eq!(a1.spec.workloads[1].dependencies[0].max_network_cost, 20);
    assert_eq!(a1.spec.workloads[1].dependencies[0].min_bandwidth.as_ref().unwrap().to_string(), "250Mi");
    let redis: AppGroup = round_trip(&fixture("appgroup-api-redis-appGroup-example.yaml")[0]);
    assert_eq!(redis.spec.algorithm(), TopologySortingAlgorithm::AlternateKahn);
    let boutique: AppGroup = round_trip(&fixture("appgroup-api-onlineBoutique-appGroup-example.yaml")[0]);
    assert_eq!(boutique.spec.workloads.len(), 11);
    let store = NetworkAwareStore::new();
    for ag in [a1, redis, boutique] {
        store.add_app_group(ag).unwrap();
    }
    assert_eq!(store.app_group("default", "online-boutique").unwrap().spec.num_members, 11);
    // Status and times survive a round trip too.
    let with_status = json!({
        "apiVersion": APP_GROUP_API_VERSION, "kind": "AppGroup",
        "metadata": {"name": "basic", "namespace": "default", "uid": "fake-uid", "resourceVersion": "7"},
        "spec": {"numMembers": 1, "topologySortingAlgorithm": "KahnSort", "workloads": [
            {"workload": {"kind": "Deployment", "name": "p1-deployment", "selector": "p1"}}]},
        "status": {"runningWorkloads": 3, "scheduleStartTime": "2026-01-02T03:04:05Z",
            "topologyCalculationTime": "2026-01-02T03:04:06Z",
            "topologyOrder": [{"workload": {"kind": "Deployment", "name": "p1-deployment", "selector": "p1"}, "index": 1}]}
    });
    round_trip::<AppGroup>(&with_status);
}

#[test]
fn network_topology_manifests_round_trip_or_are_refused_by_field() {
    let mut doc = fixture("networktopology-api-example.yaml").remove(0);
    // The example still names the API group by its old name: refused, naming the field.
    let err = NetworkTopology::from_json(&doc).unwrap_err();
    assert!(matches!(&err, NetworkAwareError::Invalid { field, .. } if field == "apiVersion"), "{err}");
    assert!(err.to_string().starts_with("NetworkTopology default/net-topology-test: apiVersion"), "{err}");
    doc["apiVersion"] = json!(NETWORK_TOPOLOGY_API_VERSION);
    let nt: NetworkTopology = round_trip(&doc);
    assert_eq!(NetworkTopology::from_json(&doc).unwrap(), nt);
    assert_eq!(nt.spec.weights[0].topology_list[1].origin_list[2].cost_list[0].network_cost, 10);
    NetworkAwareStore::new().add_network_topology(nt).unwrap();

    // scheduler-plugins' own example uses field names the type never had.
    let stale = fixture("scheduler-plugins-networktopology-example.yaml").remove(0);
    let err = NetworkTopology::from_json(&stale).unwrap_err();
    assert!(matches!(err, NetworkAwareError::Decode { kind: "NetworkTopology", .. }), "{err}");
    assert!(
        err.to_string().contains("default/net-topology-test") && err.to_string().contains("configMapName"),
        "{err}"
    );
}

#[test]
fn malformed_objects_name_the_object_and_field() {
    let ag = |spec: Value| json!({"metadata": {"name": "g", "namespace": "ns1"}, "spec": spec});
    let cases = [
        (ag(json!({"numMembers": 0, "topologySortingAlgorithm": "KahnSort", "workloads": []})), "spec.numMembers"),
        (
            ag(json!({"numMembers": 1, "topologySortingAlgorithm": "KahnSort", "workloads": [
                {"workload": {"kind": "D", "name": "a", "selector": "a"}},
                {"workload": {"kind": "D", "name": "b", "selector": "b"},
                 "dependencies": [{"workload": {"kind": "D", "name": "a", "selector": "a"}, "maxNetworkCost": 10001}]}]})),
            "spec.workloads[1].dependencies[0].maxNetworkCost",
        ),
        (
            ag(json!({"numMembers": 1, "topologySortingAlgorithm": "KahnSort", "workloads": [
                {"workload": {"kind": "D", "name": "a", "selector": "a"},
                 "dependencies": [{"workload": {"kind": "D", "name": "b", "selector": "b"}, "maxNetworkCost": -1}]}]})),
            "spec.workloads[0].dependencies[0].maxNetworkCost",
        ),
    ];
    for (doc, field) in cases {
        let err = AppGroup::from_json(&doc).unwrap_err();
        assert!(
            matches!(&err, NetworkAwareError::Invalid { field: f, object, .. } if f == field && object == "ns1/g"),
            "{err}"
        );
    }
    // Decoding errors name the field serde met.
    let missing = ag(json!({"numMembers": 1, "workloads": []}));
    let err = AppGroup::from_json(&missing).unwrap_err();
    assert!(
        err.to_string().contains("AppGroup ns1/g") && err.to_string().contains("topologySortingAlgorithm"),
        "{err}"
    );
    let wrong_type = ag(json!({"numMembers": "three", "topologySortingAlgorithm": "KahnSort", "workloads": []}));
    assert!(AppGroup::from_json(&wrong_type).unwrap_err().to_string().contains("invalid type"));
    let nt = json!({"metadata": {"name": "nt"}, "spec": {"configmapName": "", "weights": [{"name": "UserDefined",
        "topologyList": [{"topologyKey": TOPOLOGY_KEY_ZONE, "originList": [{"origin": "z1",
        "costList": [{"destination": "z2", "networkCost": -5}]}]}]}]}});
    let err = NetworkTopology::from_json(&nt).unwrap_err();
    assert!(
        err.to_string().contains(
            "default/nt: spec.weights[0].topologyList[0].originList[0].costList[0].networkCost: must not be negative"
        ),
        "{err}"
    );
    // The store refuses them too, and so does it a nameless object.
    assert!(NetworkAwareStore::new().add_app_group(AppGroup::default()).is_err());
}

fn app_group_of(workloads: &[(&str, &[&str])], algorithm: &str) -> AppGroup {
    let w: Vec<Value> = workloads
        .iter()
        .map(|(sel, deps)| {
            let deps: Vec<Value> = deps
                .iter()
                .map(|d| json!({"workload": {"kind": "Deployment", "name": format!("{d}-deployment"), "selector": d}}))
                .collect();
            json!({"workload": {"kind": "Deployment", "name": format!("{sel}-deployment"), "selector": sel},
                   "dependencies": deps})
        })
        .collect();
    AppGroup::from_json(&json!({"metadata": {"name": "g"},
        "spec": {"numMembers": workloads.len(), "topologySortingAlgorithm": algorithm, "workloads": w}}))
    .unwrap()
}

#[test]
fn sorting_algorithms_as_the_app_group_controller() {
    // A chain P1 -> P2 -> P3 (the a1 example) has one topological order, whatever the
    // visiting order, so these are upstream's answers too.
    let a1 = AppGroup::from_json(&fixture("scheduler-plugins-appGroup-example.yaml")[0]).unwrap();
    let sorted = |alg: &str| {
        let mut ag = a1.clone();
        ag.spec.topology_sorting_algorithm = alg.into();
        ag.sorted_workloads().unwrap()
    };
    assert_eq!(sorted("KahnSort"), ["P1", "P2", "P3"]);
    assert_eq!(sorted("TarjanSort"), ["P1", "P2", "P3"]);
    assert_eq!(sorted("ReverseKahn"), ["P3", "P2", "P1"]);
    assert_eq!(sorted("ReverseTarjan"), ["P3", "P2", "P1"]);
    assert_eq!(sorted("AlternateKahn"), ["P1", "P3", "P2"]);
    assert_eq!(sorted("AlternateTarjan"), ["P1", "P3", "P2"]);
    assert_eq!(sorted("NoSuchSort"), ["P1", "P2", "P3"], "unknown names default to KahnSort");
    let order = a1.calculate_topology_order();
    let got: Vec<(&str, i32)> = order.iter().map(|t| (t.workload.selector.as_str(), t.index)).collect();
    assert_eq!(got, [("P1", 1), ("P2", 2), ("P3", 3)]);

    // Alternate on four: [s0, s3, s1, s2].
    let four = app_group_of(&[("a", &["b"]), ("b", &["c"]), ("c", &["d"]), ("d", &[])], "AlternateKahn");
    assert_eq!(four.sorted_workloads().unwrap(), ["a", "d", "b", "c"]);

    // Only workloads with or in a dependency take part; others are not in the order.
    let lone = app_group_of(&[("a", &["b"]), ("b", &[]), ("z", &[])], "KahnSort");
    assert_eq!(lone.sorted_workloads().unwrap(), ["a", "b"]);
    let order = lone.with_topology_order().status.topology_order;
    assert_eq!(order.iter().map(|t| t.workload.selector.as_str()).collect::<Vec<_>>(), ["a", "b"]);

    // A cycle: KahnSort names what is left, TarjanSort where it was found; the status
    // order falls back to the spec order, sorted by selector (upstream defaultTopologyOrder).
    let boutique = AppGroup::from_json(&fixture("appgroup-api-onlineBoutique-appGroup-example.yaml")[0]).unwrap();
    let err = boutique.sorted_workloads().unwrap_err();
    assert!(matches!(&err, NetworkAwareError::Cycle { involving, .. } if involving.len() == 11), "{err}");
    let order = boutique.calculate_topology_order();
    let got: Vec<(&str, i32)> = order.iter().map(|t| (t.workload.selector.as_str(), t.index)).collect();
    assert_eq!(got[0], ("adservice", 10));
    assert_eq!(got[3], ("currencyservice", 4));
    assert!(order.windows(2).all(|w| w[0].workload.selector < w[1].workload.selector));
    let mut tarjan = boutique.clone();
    tarjan.spec.topology_sorting_algorithm = "TarjanSort".into();
    assert!(
        matches!(tarjan.sorted_workloads().unwrap_err(), NetworkAwareError::Cycle { involving, .. } if involving.len() == 1)
    );
    // A dependency on a workload the spec doesn't list: the spec order.
    let dangling = app_group_of(&[("b", &["x"]), ("a", &[])], "KahnSort");
    let idx: Vec<(String, i32)> =
        dangling.calculate_topology_order().into_iter().map(|t| (t.workload.selector, t.index)).collect();
    assert_eq!(idx, [("a".to_owned(), 2), ("b".to_owned(), 1)]);
}

// ---------------------------------------------------------------------------------
// Upstream test objects (networkoverhead_test.go / topologicalsort_test.go).

fn workload(sel: &str) -> Value {
    json!({"kind": "Deployment", "name": format!("{sel}-deployment"), "selector": sel,
           "apiVersion": "apps/v1", "namespace": "default"})
}

/// `GetAppGroupCRBasic`: p1 -> p2 -> p3, order p1 1, p2 2, p3 3.
fn basic_app_group() -> AppGroup {
    AppGroup::from_json(&json!({
        "metadata": {"name": "basic", "namespace": "default", "uid": "fake-uid"},
        "spec": {"numMembers": 3, "topologySortingAlgorithm": "KahnSort", "workloads": [
            {"workload": workload("p1"), "dependencies": [{"workload": workload("p2")}]},
            {"workload": workload("p2"), "dependencies": [{"workload": workload("p3")}]},
            {"workload": workload("p3")}]},
        "status": {"runningWorkloads": 3, "topologyOrder": [
            {"workload": workload("p1"), "index": 1}, {"workload": workload("p2"), "index": 2},
            {"workload": workload("p3"), "index": 3}]}
    }))
    .unwrap()
}

/// `GetAppGroupCROnlineBoutique` (topologicalsort_test.go): its status order.
fn online_boutique_app_group() -> AppGroup {
    let order = [
        ("p1", 1),
        ("p10", 2),
        ("p9", 3),
        ("p8", 4),
        ("p7", 5),
        ("p6", 6),
        ("p5", 7),
        ("p4", 8),
        ("p3", 9),
        ("p2", 10),
        ("p11", 11),
    ];
    let workloads: Vec<Value> = (1..=11).map(|i| json!({"workload": workload(&format!("p{i}"))})).collect();
    AppGroup::from_json(&json!({
        "metadata": {"name": "onlineboutique", "namespace": "default"},
        "spec": {"numMembers": 11, "topologySortingAlgorithm": "KahnSort", "workloads": workloads},
        "status": {"topologyOrder": order.iter().map(|(s, i)| json!({"workload": workload(s), "index": i})).collect::<Vec<_>>()}
    }))
    .unwrap()
}

/// `GetNetworkTopologyCRBasic`: us-west-1 <-> us-east-1 cost 20; Z1 <-> Z2 5; Z3 <-> Z4 10.
fn basic_topology() -> NetworkTopology {
    let origin = |o: &str, d: &str, c: i64| json!({"origin": o, "costList": [{"destination": d, "networkCost": c}]});
    NetworkTopology::from_json(&json!({
        "metadata": {"name": "nt-test", "namespace": "default", "uid": "fake-uid"},
        "spec": {"configmapName": "", "weights": [{"name": "UserDefined", "topologyList": [
            {"topologyKey": TOPOLOGY_KEY_REGION, "originList": [origin("us-west-1", "us-east-1", 20), origin("us-east-1", "us-west-1", 20)]},
            {"topologyKey": TOPOLOGY_KEY_ZONE, "originList": [
                origin("Z1", "Z2", 5), origin("Z2", "Z1", 5), origin("Z3", "Z4", 10), origin("Z4", "Z3", 10)]}]}]}
    }))
    .unwrap()
}

/// Nodes n-1..n-8: us-west-1 (Z1: n-1, n-2; Z2: n-3, n-4), us-east-1 (Z3: n-5, n-6; Z4: n-7, n-8).
fn basic_nodes() -> ClusterBuilder {
    let place = [
        ("us-west-1", "Z1"),
        ("us-west-1", "Z1"),
        ("us-west-1", "Z2"),
        ("us-west-1", "Z2"),
        ("us-east-1", "Z3"),
        ("us-east-1", "Z3"),
        ("us-east-1", "Z4"),
        ("us-east-1", "Z4"),
    ];
    ClusterBuilder::new().nodes(8, |i| {
        NodeBuilder::new(&format!("n-{}", i + 1))
            .cpu("8")
            .memory("16Gi")
            .label(TOPOLOGY_KEY_REGION, place[i].0)
            .label(TOPOLOGY_KEY_ZONE, place[i].1)
    })
}

/// Upstream `makePod(selector, podName, priority, appGroup)`.
fn make_pod(selector: &str, name: &str, app_group: &str) -> PodBuilder {
    PodBuilder::new(name).priority(0).label(APP_GROUP_LABEL, app_group).label(APP_GROUP_SELECTOR_LABEL, selector)
}

fn store_with(ags: Vec<AppGroup>, nts: Vec<NetworkTopology>) -> Arc<NetworkAwareStore> {
    let store = Arc::new(NetworkAwareStore::new());
    for ag in ags {
        store.add_app_group(ag).unwrap();
    }
    for nt in nts {
        store.add_network_topology(nt).unwrap();
    }
    store
}

fn overhead(store: Arc<NetworkAwareStore>) -> NetworkOverhead {
    let args = NetworkOverheadArgs { network_topology_name: "nt-test".into(), ..NetworkOverheadArgs::default() };
    NetworkOverhead::new(store, args)
}

fn info(p: PodBuilder) -> PodInfo {
    PodInfo::new(p.build()).unwrap()
}

/// Upstream pods of the Score test: p1 on n-2, p2 on n-5, p3 on `p3_host`.
fn cluster_basic(p3_host: &str) -> Snapshot {
    basic_nodes()
        .pod_on("n-2", make_pod("p1", "p1-deployment", "basic"))
        .pod_on("n-5", make_pod("p2", "p2-deployment", "basic"))
        .pod_on(p3_host, make_pod("p3", "p3-deployment", "basic"))
        .build()
        .unwrap()
}

/// networkoverhead_test.go `TestNetworkOverheadScore`.
#[test]
fn network_overhead_score_upstream_table() {
    let snapshot = cluster_basic("n-1");
    let plugin = overhead(store_with(vec![basic_app_group()], vec![basic_topology()]));
    let cases: [(&str, &str, [i64; 8], [i64; 8]); 3] = [
        ("p1 to allocate", "p1", [20, 20, 20, 20, 0, 1, 10, 10], [0, 0, 0, 0, 100, 95, 50, 50]),
        ("p2 to allocate", "p2", [0, 1, 5, 5, 20, 20, 20, 20], [100, 95, 75, 75, 0, 0, 0, 0]),
        ("p3 to allocate, no dependency", "p3", [0; 8], [0; 8]),
    ];
    for (name, sel, before, after) in cases {
        let pod = info(make_pod(sel, &format!("{sel}-deployment"), "basic"));
        let mut state = CycleState::new();
        let (_, status) = plugin.pre_filter(&mut state, &pod, &snapshot);
        assert_eq!(status.code(), Code::Success, "{name}");
        let mut scores: Vec<NodeScore> = (1..=8)
            .map(|i| {
                let node = snapshot.get(&format!("n-{i}")).unwrap();
                NodeScore { name: node.name(), score: plugin.score(&state, &pod, node).unwrap() }
            })
            .collect();
        assert_eq!(scores.iter().map(|s| s.score).collect::<Vec<_>>(), before, "{name}: scores");
        assert!(plugin.normalize(&CycleState::new(), &pod, &mut scores).is_success());
        assert_eq!(scores.iter().map(|s| s.score).collect::<Vec<_>>(), after, "{name}: normalized");
    }
}

/// networkoverhead_test.go `TestNetworkOverheadFilter` (p3 on n-8).
#[test]
fn network_overhead_filter_upstream_table() {
    let snapshot = cluster_basic("n-8");
    let plugin = overhead(store_with(vec![basic_app_group()], vec![basic_topology()]));
    let unsat = |n: &str| {
        Status::unschedulable(format!(
            "Node {n} does not meet several network requirements from Workload dependencies: Satisfied: 0 Violated: 1"
        ))
    };
    let cases = [
        ("p1, n-1 does not meet network requirements", "p1", "basic", "n-1", unsat("n-1")),
        ("p1, n-6 meets network requirements", "p1", "basic", "n-6", Status::SUCCESS),
        ("p2, n-5 does not meet network requirements", "p2", "basic", "n-5", unsat("n-5")),
        ("p2, n-7 meets network requirements", "p2", "basic", "n-7", Status::SUCCESS),
        ("p3, no dependencies, n-1 meets network requirements", "p3", "basic", "n-1", Status::SUCCESS),
        ("p10, different AppGroup, n-1 meets network requirements", "p10", "", "n-1", Status::SUCCESS),
        ("p1, n-1, multiple dependencies: does not meet", "p1", "basic", "n-1", unsat("n-1")),
        ("p1, n-6, multiple dependencies: meets", "p1", "basic", "n-6", Status::SUCCESS),
    ];
    for (name, sel, ag, node, want) in cases {
        let pod = info(make_pod(sel, &format!("{sel}-deployment"), ag));
        let mut state = CycleState::new();
        assert!(plugin.pre_filter(&mut state, &pod, &snapshot).1.is_success(), "{name}");
        let got = plugin.filter(&state, &pod, snapshot.get(node).unwrap());
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn network_overhead_edges() {
    let snapshot = cluster_basic("n-1");
    let pod = info(make_pod("p1", "p1-deployment", "basic"));
    // Without PreFilter: upstream's messages, code Error.
    let plugin = overhead(store_with(vec![basic_app_group()], vec![basic_topology()]));
    let n1 = snapshot.get("n-1").unwrap();
    let empty = CycleState::new();
    assert_eq!(plugin.filter(&empty, &pod, n1), Status::error("not eligible due to failed to read from cycleState"));
    assert_eq!(
        plugin.score(&empty, &pod, n1).unwrap_err(),
        Status::error("not eligible due to failed to read from cycleState, return min score")
    );
    // A missing AppGroup or NetworkTopology is an Error naming it (upstream: nil dereference).
    for (store, what) in [
        (store_with(vec![], vec![basic_topology()]), "AppGroup basic not found"),
        (store_with(vec![basic_app_group()], vec![]), "NetworkTopology nt-test not found"),
    ] {
        let mut state = CycleState::new();
        let (_, status) = overhead(store).pre_filter(&mut state, &pod, &snapshot);
        assert_eq!(status.code(), Code::Error);
        assert!(status.reasons()[0].starts_with(what), "{status:?}");
    }
    // No placed pods of the AppGroup yet: every node passes with score 0.
    let bare = basic_nodes().build().unwrap();
    let mut state = CycleState::new();
    assert!(plugin.pre_filter(&mut state, &pod, &bare).1.is_success());
    for n in bare.nodes() {
        assert!(plugin.filter(&state, &pod, n).is_success());
        assert_eq!(plugin.score(&state, &pod, n), Ok(0));
    }
    // A node without region and zone labels hosting the dependency: violated elsewhere
    // (cost 100), met on itself (cost 0).
    let snap = ClusterBuilder::new()
        .node(NodeBuilder::new("bare").cpu("8"))
        .node(NodeBuilder::new("n-1").cpu("8").label(TOPOLOGY_KEY_REGION, "us-west-1").label(TOPOLOGY_KEY_ZONE, "Z1"))
        .pod_on("bare", make_pod("p2", "p2-deployment", "basic"))
        .build()
        .unwrap();
    let mut state = CycleState::new();
    assert!(plugin.pre_filter(&mut state, &pod, &snap).1.is_success());
    let (bare_node, n1) = (snap.get("bare").unwrap(), snap.get("n-1").unwrap());
    assert!(plugin.filter(&state, &pod, bare_node).is_success());
    assert_eq!(plugin.score(&state, &pod, bare_node), Ok(0));
    assert_eq!(plugin.filter(&state, &pod, n1).code(), Code::Unschedulable);
    assert_eq!(plugin.score(&state, &pod, n1), Ok(MAX_COST));
    // A zone pair without a listed cost: neither met nor violated, cost MaxCost.
    let snap = basic_nodes()
        .node(NodeBuilder::new("z9").cpu("8").label(TOPOLOGY_KEY_REGION, "us-east-1").label(TOPOLOGY_KEY_ZONE, "Z9"))
        .pod_on("z9", make_pod("p2", "p2-deployment", "basic"))
        .build()
        .unwrap();
    let mut state = CycleState::new();
    assert!(plugin.pre_filter(&mut state, &pod, &snap).1.is_success());
    let n5 = snap.get("n-5").unwrap();
    assert!(plugin.filter(&state, &pod, n5).is_success());
    assert_eq!(plugin.score(&state, &pod, n5), Ok(MAX_COST));
}

/// topologicalsort_test.go `TestTopologicalSortLess`.
#[test]
fn topological_sort_less_upstream_table() {
    let store = store_with(vec![basic_app_group(), online_boutique_app_group()], vec![]);
    let plugin = TopologicalSort::new(store, &TopologicalSortArgs::default());
    let q = |p: PodBuilder| QueuedPodInfo::new(Arc::new(info(p)), Duration::ZERO);
    let cases = [
        ("basic, same AppGroup, p1 order lower than p2", ("p1", "basic"), ("p2", "basic"), true),
        (
            "onlineboutique, same AppGroup, p5 order higher than p1",
            ("p5", "onlineboutique"),
            ("p1", "onlineboutique"),
            false,
        ),
        ("pods from different AppGroups...", ("p1", "basic"), ("p5", "other"), false),
    ];
    for (name, (s1, g1), (s2, g2), want) in cases {
        let a = q(make_pod(s1, &format!("{s1}-deployment"), g1));
        let b = q(make_pod(s2, &format!("{s2}-deployment"), g2));
        assert_eq!(plugin.less(&a, &b), want, "{name}");
    }
    // Beyond the table: as upstream, a workload missing from the order is -1 (first), and
    // one workload's pods are each "less" than the other (`<=`).
    let unknown = q(make_pod("px", "px", "basic"));
    let p3 = q(make_pod("p3", "p3-deployment", "basic"));
    assert!(plugin.less(&unknown, &p3) && !plugin.less(&p3, &unknown));
    assert!(plugin.less(&p3, &p3.clone()));
    // A missing AppGroup or no AppGroup: PrioritySort (priority, then the earlier).
    let high = QueuedPodInfo { pod: Arc::new(info(make_pod("p2", "a", "nope").priority(10))), ..p3.clone() };
    let low = q(make_pod("p1", "b", "nope"));
    assert!(plugin.less(&high, &low) && !plugin.less(&low, &high));
    let early = q(PodBuilder::new("e"));
    let late = QueuedPodInfo { timestamp: Duration::from_secs(1), ..q(PodBuilder::new("l")) };
    assert!(plugin.less(&early, &late) && !plugin.less(&late, &early));
}

/// apis/config/v1/defaults_test.go: the TopologicalSortArgs and NetworkOverheadArgs rows.
#[test]
fn args_defaults_upstream_table() {
    assert_eq!(TopologicalSortArgs::from_config(Some(&json!({}))).unwrap().namespaces, ["default"]);
    assert_eq!(TopologicalSortArgs::from_config(Some(&json!({"namespaces": ["n1"]}))).unwrap().namespaces, ["n1"]);
    assert_eq!(
        NetworkOverheadArgs::from_config(Some(&json!({}))).unwrap(),
        NetworkOverheadArgs {
            namespaces: vec!["default".into()],
            weights_name: "UserDefined".into(),
            network_topology_name: "nt-default".into()
        }
    );
    let set = json!({"namespaces": ["n2"], "weightsName": "latency", "networkTopologyName": "nt-latency-costs",
                     "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "NetworkOverheadArgs"});
    assert_eq!(
        NetworkOverheadArgs::from_config(Some(&set)).unwrap(),
        NetworkOverheadArgs {
            namespaces: vec!["n2".into()],
            weights_name: "latency".into(),
            network_topology_name: "nt-latency-costs".into()
        }
    );
    let err = NetworkOverheadArgs::from_config(Some(&json!({"weightName": "x"}))).unwrap_err();
    assert!(err.to_string().starts_with("NetworkOverhead args: unknown field `weightName`"), "{err}");
}

/// scheduler-plugins' network-aware scheduler config builds with the default registry.
#[test]
fn upstream_scheduler_config_builds_a_profile() {
    let cfg = fixture("scheduler-plugins-networktopology-scheduler-config.yaml").remove(0);
    let profile_cfg: ProfileConfig = serde_json::from_value(cfg["profiles"][0].clone()).unwrap();
    let handle = Handle::default();
    let err = default_registry().build_profile(&profile_cfg, &handle).unwrap_err();
    assert!(err.to_string().contains("needs a NetworkAwareStore"), "{err}");
    handle.set_shared(Arc::new(NetworkAwareStore::new()));
    let profile = default_registry().build_profile(&profile_cfg, &handle).unwrap();
    assert_eq!(profile.name(), "network-aware-scheduler");
    assert_eq!(profile.queue_sort_plugin(), Some(names::TOPOLOGICAL_SORT));
    assert_eq!(profile.filter_plugins(), [names::NETWORK_OVERHEAD]);
    assert!(profile.score_plugins().contains(&(names::NETWORK_OVERHEAD, 5)));
}

// ---------------------------------------------------------------------------------
// Properties.

/// Upstream's per-node procedure (`checkMaxNetworkCostRequirements`,
/// `getAccumulatedCost`), written straight from networkoverhead.go for unique region and
/// zone origins: the plugin's grouped computation must agree node by node.
fn reference(
    nodes: &[(String, String, String)],
    placed: &[(usize, usize)],
    deps: &[(usize, i64)],
    region_cost: &dyn Fn(&str, &str) -> Option<i64>,
    zone_cost: &dyn Fn(&str, &str) -> Option<i64>,
) -> Vec<(i64, i64, i64)> {
    nodes
        .iter()
        .map(|(name, r, z)| {
            let (mut sat, mut vio, mut cost) = (0, 0, 0);
            // The node's cost map: region entries, then zone entries written over them.
            let listed = |f: &dyn Fn(&str, &str) -> Option<i64>, o: &str, d: &str| {
                if o.is_empty() || d.is_empty() || o == d { None } else { f(o, d) }
            };
            let lookup = |origin: &str, dest: &str| {
                let zone = if *z == origin { listed(zone_cost, z, dest) } else { None };
                zone.or(if *r == origin { listed(region_cost, r, dest) } else { None })
            };
            for &(host, sel) in placed {
                for &(_, max) in deps.iter().filter(|(d, _)| *d == sel) {
                    let (hname, hr, hz) = &nodes[host];
                    if hname == name {
                        sat += 1;
                        continue;
                    }
                    let c = if hr.is_empty() && hz.is_empty() {
                        vio += 1;
                        cost += MAX_COST;
                        continue;
                    } else if r == hr {
                        if z == hz {
                            sat += 1;
                            cost += SAME_ZONE_COST;
                            continue;
                        }
                        lookup(z, hz)
                    } else {
                        lookup(r, hr)
                    };
                    match c {
                        Some(c) if c <= max => {
                            sat += 1;
                            cost += c;
                        }
                        Some(c) => {
                            vio += 1;
                            cost += c;
                        }
                        None => cost += MAX_COST,
                    }
                }
            }
            (sat, vio, cost)
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// NormalizeScore leaves every score in 0..=100, and the cheapest node at 100 unless
    /// every cost is 0.
    #[test]
    fn normalized_scores_within_0_to_100(costs in prop::collection::vec(0_i64..1_000_000, 1..64)) {
        let mut scores: Vec<NodeScore> = costs.iter().map(|&score| NodeScore { name: Symbol::EMPTY, score }).collect();
        NetworkOverhead::normalize_costs(&mut scores);
        prop_assert!(scores.iter().all(|s| (0..=100).contains(&s.score)), "{scores:?}");
        if costs.iter().any(|&c| c != 0) {
            let min = costs.iter().min().unwrap();
            let i = costs.iter().position(|c| c == min).unwrap();
            prop_assert_eq!(scores[i].score, 100);
        }
    }

    /// Filter and Score agree with upstream's per-node procedure on random clusters.
    #[test]
    fn grouped_outcomes_match_upstream_per_node(
        labels in prop::collection::vec((0_usize..3, 0_usize..4), 2..14),
        placed in prop::collection::vec((0_usize..14, 0_usize..3), 1..6),
        deps in prop::collection::vec((0_usize..3, 0_i64..30), 1..4),
        costs in prop::collection::vec(prop::option::of(0_i64..40), 16),
    ) {
        let regions = ["", "r1", "r2"];
        let zones = ["", "z1", "z2", "z3"];
        let nodes: Vec<(String, String, String)> = labels
            .iter()
            .enumerate()
            .map(|(i, &(r, z))| (format!("n{i}"), regions[r].to_owned(), zones[z].to_owned()))
            .collect();
        let placed: Vec<(usize, usize)> = placed.into_iter().map(|(h, s)| (h % nodes.len(), s)).collect();
        let region_cost = |o: &str, d: &str| {
            let (i, j) = (regions.iter().position(|r| *r == o)?, regions.iter().position(|r| *r == d)?);
            costs[i * 3 + j]
        };
        let zone_cost = |o: &str, d: &str| {
            let (i, j) = (zones.iter().position(|r| *r == o)?, zones.iter().position(|r| *r == d)?);
            costs[(i * 4 + j) % 16].map(|c| c + 1)
        };
        // The NetworkTopology with those costs (zone list first: upstream sorts by key).
        let origin_list = |names: &[&str], f: &dyn Fn(&str, &str) -> Option<i64>| -> Value {
            names.iter().filter(|o| !o.is_empty()).map(|o| {
                let cl: Vec<Value> = names.iter().filter(|d| !d.is_empty() && *d != o)
                    .filter_map(|d| f(o, d).map(|c| json!({"destination": d, "networkCost": c}))).collect();
                json!({"origin": o, "costList": cl})
            }).collect::<Vec<_>>().into()
        };
        let nt = NetworkTopology::from_json(&json!({"metadata": {"name": "nt-test"}, "spec": {"configmapName": "",
            "weights": [{"name": "UserDefined", "topologyList": [
                {"topologyKey": TOPOLOGY_KEY_ZONE, "originList": origin_list(&zones, &zone_cost)},
                {"topologyKey": TOPOLOGY_KEY_REGION, "originList": origin_list(&regions, &region_cost)}]}]}})).unwrap();
        let sels = ["a", "b", "c"];
        let ag_deps: Vec<Value> = deps.iter().map(|&(s, max)| json!({"workload": {"kind": "D", "name": sels[s], "selector": sels[s]}, "maxNetworkCost": max})).collect();
        let ag = AppGroup::from_json(&json!({"metadata": {"name": "g"}, "spec": {"numMembers": 1, "topologySortingAlgorithm": "KahnSort",
            "workloads": [{"workload": {"kind": "D", "name": "me", "selector": "me"}, "dependencies": ag_deps}]}})).unwrap();
        let mut cluster = ClusterBuilder::new();
        for (name, r, z) in &nodes {
            let mut n = NodeBuilder::new(name).cpu("64");
            if !r.is_empty() { n = n.label(TOPOLOGY_KEY_REGION, r); }
            if !z.is_empty() { n = n.label(TOPOLOGY_KEY_ZONE, z); }
            cluster = cluster.node(n);
        }
        for (i, &(host, sel)) in placed.iter().enumerate() {
            cluster = cluster.pod_on(&nodes[host].0, make_pod(sels[sel], &format!("peer{i}"), "g"));
        }
        let snapshot = cluster.build().unwrap();
        let plugin = overhead(store_with(vec![ag], vec![nt]));
        let pod = info(make_pod("me", "me", "g"));
        let mut state = CycleState::new();
        prop_assert!(plugin.pre_filter(&mut state, &pod, &snapshot).1.is_success());
        let want = reference(&nodes, &placed, &deps, &region_cost, &zone_cost);
        for (i, (name, _, _)) in nodes.iter().enumerate() {
            let node = snapshot.get(name).unwrap();
            let (sat, vio, cost) = want[i];
            prop_assert_eq!(plugin.score(&state, &pod, node).unwrap(), cost, "cost of {}", name);
            prop_assert_eq!(plugin.filter(&state, &pod, node).is_success(), vio <= sat, "filter of {} ({} met, {} violated)", name, sat, vio);
        }
    }
}
