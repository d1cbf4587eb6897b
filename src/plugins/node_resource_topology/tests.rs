//! Ported upstream tables for the plugin (filter, score, cache).

use super::*;
use crate::model::{Pod, ResourceList};
use crate::snapshot::NodeInfo;
use crate::testing::{NodeBuilder, PodBuilder};

const NIC: &str = "vendor/nic1";

fn zone(id: u32, res: &[(&str, &str, &str)]) -> Zone {
    Zone {
        name: format!("node-{id}"),
        zone_type: "Node".into(),
        parent: String::new(),
        costs: Vec::new(),
        attributes: Vec::new(),
        resources: res
            .iter()
            .map(|(n, cap, avail)| ResourceInfo {
                name: (*n).into(),
                capacity: cap.parse().unwrap(),
                allocatable: cap.parse().unwrap(),
                available: avail.parse().unwrap(),
            })
            .collect(),
    }
}

/// The NRTs of filter_test.go `TestNodeResourceTopology`: node1 (container scope),
/// node2 (container scope, hugepages), node3 (pod scope).
fn filter_store() -> Arc<NrtStore> {
    let store = Arc::new(NrtStore::new());
    let mut n1 = NodeResourceTopology::new("node1");
    n1.topology_policies = vec!["SingleNUMANodeContainerLevel".into()];
    n1.zones = vec![
        zone(0, &[("cpu", "20", "4"), ("memory", "8Gi", "8Gi"), (NIC, "30", "10")]),
        zone(1, &[("cpu", "30", "8"), ("memory", "8Gi", "8Gi"), (NIC, "30", "10")]),
    ];
    let mut n2 = NodeResourceTopology::new("node2");
    n2.topology_policies = vec!["SingleNUMANodeContainerLevel".into()];
    n2.zones = vec![
        zone(0, &[("cpu", "20", "2"), ("memory", "8Gi", "4Gi"), ("hugepages-2Mi", "128Mi", "128Mi"), (NIC, "30", "5")]),
        zone(1, &[("cpu", "30", "4"), ("memory", "8Gi", "4Gi"), ("hugepages-2Mi", "128Mi", "128Mi"), (NIC, "30", "2")]),
    ];
    let mut n3 = NodeResourceTopology::new("node3");
    n3.topology_policies = vec!["SingleNUMANodePodLevel".into()];
    n3.zones = vec![
        zone(0, &[("cpu", "20", "2"), ("memory", "8Gi", "4Gi"), (NIC, "30", "5")]),
        zone(1, &[("cpu", "30", "4"), ("memory", "8Gi", "4Gi"), (NIC, "30", "2")]),
    ];
    for n in [n1, n2, n3] {
        store.upsert(n).unwrap();
    }
    store
}

fn node(name: &str) -> NodeInfo {
    NodeInfo::new(Arc::new(
        NodeBuilder::new(name)
            .allocatables(&[("cpu", "50"), ("memory", "16Gi"), ("hugepages-2Mi", "256Mi"), (NIC, "60")])
            .build(),
    ))
}

/// `makePodByResourceList`: requests = limits in one container.
fn pod_eq(res: &[(&str, &str)]) -> PodInfo {
    pod_req_lim(res, res)
}

/// `makePodWithReqAndLimitByResourceList`.
fn pod_req_lim(req: &[(&str, &str)], lim: &[(&str, &str)]) -> PodInfo {
    let req = ResourceList::parse(req.iter().copied()).unwrap();
    let lim = ResourceList::parse(lim.iter().copied()).unwrap();
    PodInfo::new(
        PodBuilder::new("p")
            .with(move |p: &mut Pod| {
                p.spec.containers[0].resources.requests = req;
                p.spec.containers[0].resources.limits = lim;
            })
            .build(),
    )
    .unwrap()
}

fn plugin(store: Arc<NrtStore>, args: serde_json::Value) -> NodeResourceTopologyMatch {
    NodeResourceTopologyMatch::new(serde_json::from_value(args).unwrap(), store).unwrap()
}

fn msg(s: &Status) -> Option<String> {
    (!s.is_success()).then(|| s.message())
}

/// scheduler-plugins `filter_test.go`, `TestNodeResourceTopology` (the cases over
/// nodes 1-3: QoS classes, scopes, devices, saturating and zero requests).
#[test]
fn filter_table() {
    let p = plugin(filter_store(), serde_json::json!({}));
    let (pod_align, cont_align) = (Some("cannot align pod"), Some("cannot align container"));
    let cases: Vec<(&str, PodInfo, &str, Option<&str>)> = vec![
        ("BE devices pod scope doesn't fit", pod_eq(&[(NIC, "20")]), "node3", pod_align),
        ("BE devices container scope fit", pod_eq(&[(NIC, "5")]), "node2", None),
        ("BE devices container scope doesn't fit", pod_eq(&[(NIC, "20")]), "node1", cont_align),
        (
            "BE cpu/mem enough, devices not enough, container scope",
            pod_req_lim(
                &[("cpu", "3"), ("memory", "3Gi"), (NIC, "11")],
                &[("cpu", "4"), ("memory", "4Gi"), (NIC, "11")],
            ),
            "node2",
            cont_align,
        ),
        (
            "burstable cpu/mem/devices pod scope doesn't fit",
            pod_req_lim(&[("cpu", "1"), ("memory", "1Gi"), (NIC, "6")], &[("cpu", "2"), ("memory", "2Gi"), (NIC, "6")]),
            "node3",
            pod_align,
        ),
        (
            "burstable cpu/mem enough, devices, pod scope fit",
            pod_req_lim(&[("cpu", "1"), ("memory", "1Gi"), (NIC, "5")], &[("cpu", "2"), ("memory", "2Gi"), (NIC, "5")]),
            "node3",
            None,
        ),
        (
            "burstable cpu/mem not enough on NUMA, pod scope fit",
            pod_req_lim(
                &[("cpu", "19"), ("memory", "5Gi"), (NIC, "5")],
                &[("cpu", "20"), ("memory", "6Gi"), (NIC, "5")],
            ),
            "node3",
            None,
        ),
        (
            "burstable cpu/mem not enough on NUMA, container scope fit",
            pod_req_lim(&[("cpu", "5"), ("memory", "5Gi"), (NIC, "5")], &[("cpu", "6"), ("memory", "6Gi"), (NIC, "5")]),
            "node2",
            None,
        ),
        ("guaranteed minimal fit", pod_eq(&[("cpu", "2"), ("memory", "2Gi")]), "node1", None),
        ("guaranteed saturating zone fit", pod_eq(&[("cpu", "8"), ("memory", "8Gi")]), "node1", None),
        (
            "guaranteed zero quantity of unavailable resource fit",
            pod_eq(&[("cpu", "2"), ("memory", "2Gi"), ("hugepages-2Mi", "0"), (NIC, "3")]),
            "node1",
            None,
        ),
        ("guaranteed cpu over every zone", pod_eq(&[("cpu", "9"), ("memory", "1Gi")]), "node1", cont_align),
        ("guaranteed pod scope cpu over every zone", pod_eq(&[("cpu", "5"), ("memory", "1Gi")]), "node3", pod_align),
        (
            "guaranteed hugepages fit",
            pod_eq(&[("cpu", "2"), ("memory", "2Gi"), ("hugepages-2Mi", "64Mi")]),
            "node2",
            None,
        ),
        ("best effort without devices passes", pod_eq(&[]), "node1", None),
        ("node without NRT passes", pod_eq(&[("cpu", "100"), ("memory", "1Gi")]), "node9", None),
    ];
    for (name, pod, n, want) in cases {
        let got = p.filter(&CycleState::default(), &pod, &node(n));
        assert_eq!(msg(&got).as_deref(), want, "{name}");
    }
}

/// A resource the node doesn't list at all fails at once, even when it would be
/// host-level (upstream `resourcesAvailableInAnyNUMANodes` early verdict).
#[test]
fn filter_resource_missing_on_node() {
    let p = plugin(filter_store(), serde_json::json!({}));
    let pod = pod_eq(&[("cpu", "1"), ("memory", "1Gi"), ("vendor/other", "1")]);
    assert_eq!(msg(&p.filter(&CycleState::default(), &pod, &node("node1"))).as_deref(), Some("cannot align container"));
    let ni = NodeInfo::new(Arc::new(
        NodeBuilder::new("node1")
            .allocatables(&[("cpu", "50"), ("memory", "16Gi"), (NIC, "60"), ("vendor/other", "4")])
            .build(),
    ));
    // Listed on the node, reported by no zone, non-native: served by the host.
    assert!(p.filter(&CycleState::default(), &pod, &ni).is_success());
}

fn score_store(policy: &str) -> Arc<NrtStore> {
    let store = Arc::new(NrtStore::new());
    for (name, avail) in [("node1", ["4", "50Gi", "2", "50Gi"]), ("node2", ["2", "6Gi", "2", "6Gi"])] {
        let mut n = NodeResourceTopology::new(name);
        n.topology_policies = vec![policy.into()];
        n.zones = vec![
            zone(0, &[("cpu", "4", avail[0]), ("memory", "50Gi", avail[1])]),
            zone(1, &[("cpu", "4", avail[2]), ("memory", "50Gi", avail[3])]),
        ];
        store.upsert(n).unwrap();
    }
    store
}

/// Strategy arithmetic on hand-computed values (the shapes of score_test.go
/// `TestNodeResourceScorePlugin`: two zones, cpu and memory weights 1).
#[test]
fn score_strategies() {
    let pod = pod_eq(&[("cpu", "2"), ("memory", "4Gi")]);
    let st = CycleState::default();
    let score = |t: &str, n: &str| {
        let p =
            plugin(score_store("SingleNUMANodeContainerLevel"), serde_json::json!({"scoringStrategy": {"type": t}}));
        p.score(&st, &pod, &node(n)).unwrap()
    };
    // node1: zone0 cpu 2/4, mem 4Gi/50Gi; zone1 cpu 2/2, mem 4Gi/50Gi.
    // LeastAllocated: zone0 (50 + 92)/2 = 71, zone1 (0 + 92)/2 = 46 -> min non-zero 46.
    assert_eq!(score("LeastAllocated", "node1"), 46);
    // MostAllocated: zone0 (50 + 8)/2 = 29, zone1 (100 + 8)/2 = 54 -> 29.
    assert_eq!(score("MostAllocated", "node1"), 29);
    // node2: mem 4Gi/6Gi: least 33, most 66; cpu 2/2: least 0, most 100.
    assert_eq!(score("LeastAllocated", "node2"), 16);
    assert_eq!(score("MostAllocated", "node2"), 83);
    // Balanced on node2: fractions 1.0 and 0.666..; variance 0.0555.. -> 94.
    assert_eq!(score("BalancedAllocation", "node2"), 94);
    // Non-Guaranteed pods get 100; other policies 0.
    let burst = PodInfo::new(PodBuilder::new("b").cpu("1").build()).unwrap();
    let p = plugin(score_store("SingleNUMANodeContainerLevel"), serde_json::json!({}));
    assert_eq!(p.score(&st, &burst, &node("node1")).unwrap(), 100);
    let p = plugin(score_store("BestEffortContainerLevel"), serde_json::json!({}));
    assert_eq!(p.score(&st, &pod, &node("node1")).unwrap(), 0);
    assert_eq!(p.score(&st, &pod, &node("nodeX")).unwrap(), 0);
}

/// least_numa_test.go `TestNUMANodesRequired` shapes: one zone when it fits, two when
/// only the sum fits, the closest pair wins with the distance bonus.
#[test]
fn least_numa_nodes() {
    let store = Arc::new(NrtStore::new());
    let mut n = NodeResourceTopology::new("node1");
    n.topology_policies = vec!["SingleNUMANodePodLevel".into()];
    let costs = |own: u32| -> Vec<CostInfo> {
        (0..4)
            .map(|j| CostInfo {
                name: format!("node-{j}"),
                value: if j == own {
                    10
                } else if j / 2 == own / 2 {
                    12
                } else {
                    20
                },
            })
            .collect()
    };
    for id in 0..4 {
        let mut z = zone(id, &[("cpu", "8", "4"), ("memory", "8Gi", "4Gi")]);
        z.costs = costs(id);
        n.zones.push(z);
    }
    store.upsert(n).unwrap();
    let p = plugin(store, serde_json::json!({"scoringStrategy": {"type": "LeastNUMANodes"}}));
    let st = CycleState::default();
    let one = pod_eq(&[("cpu", "2"), ("memory", "2Gi")]);
    assert_eq!(p.score(&st, &one, &node("node1")).unwrap(), 94);
    let two = pod_eq(&[("cpu", "6"), ("memory", "6Gi")]);
    // Two zones; the first fitting pair (0,1) is at the minimum distance (10+12+12+10)/4.
    assert_eq!(p.score(&st, &two, &node("node1")).unwrap(), 82);
    let none = pod_eq(&[("cpu", "20"), ("memory", "1Gi")]);
    assert_eq!(p.score(&st, &none, &node("node1")).unwrap(), 0);
}

/// overreserve_test.go `TestGetCachedNRTCopyReserve` / `TestGetCachedNRTCopyReserveRelease`:
/// a reserved pod is taken from every zone; unreserve restores the copy exactly;
/// a filter failure marks the node and a reserve clears it (`TestDirtyNodesUnmarkedOnReserve`).
#[test]
fn over_reserve_cache() {
    let store = filter_store();
    let p = plugin(store, serde_json::json!({"cacheResyncPeriodSeconds": 5}));
    assert_eq!(p.cache().kind(), CacheKind::OverReserve);
    let key = Symbol::intern("node1");
    let before = p.cache().view(key);
    let pod = pod_eq(&[("cpu", "2"), ("memory", "2Gi"), (NIC, "3")]);
    let mut st = CycleState::default();
    assert!(p.reserve(&mut st, &pod, "node1").is_success());
    let NrtView::Present(t) = p.cache().view(key) else { panic!("present") };
    let cpu = Symbol::intern("cpu");
    assert_eq!(t.zones[0].get(cpu).unwrap().value(), 2);
    assert_eq!(t.zones[1].get(cpu).unwrap().value(), 6);
    assert_eq!(t.zones[0].get(Symbol::intern(NIC)).unwrap().value(), 7);
    // Over-reserve: another pod wanting 5 cpus fails, marking the node.
    let big = pod_eq(&[("cpu", "7"), ("memory", "1Gi")]);
    assert!(!p.filter(&st, &big, &node("node1")).is_success());
    assert_eq!(p.cache().desynced_nodes(), vec!["node1".to_owned()]);
    p.unreserve(&mut st, &pod, "node1");
    assert_eq!(p.cache().view(key), before);
    assert!(p.reserve(&mut st, &pod, "node1").is_success());
    assert!(p.cache().desynced_nodes().is_empty());
    assert_eq!(p.cache().flush_nodes(["node1"]), 1);
    assert_eq!(p.cache().view(key), before);
    // Foreign pods make the node stale until flushed.
    p.cache().node_has_foreign_pods(key);
    assert_eq!(msg(&p.filter(&st, &big, &node("node1"))).as_deref(), Some("invalid node topology data"));
    p.cache().flush_nodes(["node1"]);
    assert_eq!(p.cache().view(key), before);
}

/// discardreserved_test.go: a node with a reservation is stale until PostBind.
#[test]
fn discard_reserved_cache() {
    let p = plugin(filter_store(), serde_json::json!({"discardReservedNodes": true, "cacheResyncPeriodSeconds": 5}));
    assert_eq!(p.cache().kind(), CacheKind::DiscardReserved);
    let pod = pod_eq(&[("cpu", "1"), ("memory", "1Gi")]);
    let mut st = CycleState::default();
    p.reserve(&mut st, &pod, "node1");
    assert_eq!(msg(&p.filter(&st, &pod, &node("node1"))).as_deref(), Some("invalid node topology data"));
    p.post_bind(&st, &pod, "node1");
    assert!(p.filter(&st, &pod, &node("node1")).is_success());
}

/// passthrough_test.go `TestPassthroughGetCachedNRTCopy`: fresh, straight from the store.
#[test]
fn passthrough_cache() {
    let store = filter_store();
    let p = plugin(store.clone(), serde_json::json!({}));
    assert_eq!(p.cache().kind(), CacheKind::Passthrough);
    assert_eq!(p.cache().view(Symbol::intern("nodeX")), NrtView::Missing);
    let NrtView::Present(t) = p.cache().view(Symbol::intern("node1")) else { panic!("present") };
    assert!(
        Arc::ptr_eq(&t, &store.topology(Symbol::intern("node1")).unwrap()),
        "passthrough shares the stored topology"
    );
}

/// apis/config/v1 `defaults_test.go` (NodeResourceTopologyMatchArgs) and validation.
#[test]
fn args_defaults() {
    let a = NodeResourceTopologyMatchArgs::default().defaulted();
    let s = a.scoring_strategy.as_ref().unwrap();
    assert_eq!(s.strategy_type, "LeastAllocated");
    assert_eq!(
        s.resources,
        vec![ResourceSpec { name: "cpu".into(), weight: 1 }, ResourceSpec { name: "memory".into(), weight: 1 }]
    );
    assert_eq!(a.cache.as_ref().unwrap().foreign_pods_detect.as_deref(), Some("All"));
    assert_eq!(a.cache.as_ref().unwrap().resync_method.as_deref(), Some("Autodetect"));
    assert_eq!(a.cache.as_ref().unwrap().informer_mode.as_deref(), Some("Dedicated"));
    let a: NodeResourceTopologyMatchArgs = serde_json::from_value(
        serde_json::json!({"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu"}]}}),
    )
    .unwrap();
    assert_eq!(a.defaulted().scoring_strategy.unwrap().resources[0].weight, 1);
    let bad: NodeResourceTopologyMatchArgs =
        serde_json::from_value(serde_json::json!({"scoringStrategy": {"type": "Foo"}})).unwrap();
    let e = NodeResourceTopologyMatch::new(bad, Arc::new(NrtStore::new())).unwrap_err().to_string();
    assert!(e.contains("scoringStrategy.type") && e.contains("invalid ScoringStrategyType"), "{e}");
}

/// scheduler-plugins `score_test.go`, `TestNodeResourceScorePlugin`: the three
/// `defaultNUMANodes` (container-level policy), a Guaranteed pod of 2 cpus and
/// 20Mi; the best node and its score per strategy.
#[test]
fn score_table_upstream() {
    let store = Arc::new(NrtStore::new());
    for (name, cpu, mem) in [("Node1", "4", "500Mi"), ("Node2", "2", "50Mi"), ("Node3", "6", "60Mi")] {
        let mut n = NodeResourceTopology::new(name);
        n.topology_policies = vec!["SingleNUMANodeContainerLevel".into()];
        n.zones = vec![
            zone(0, &[("cpu", cpu, cpu), ("memory", mem, mem)]),
            zone(1, &[("cpu", cpu, cpu), ("memory", mem, mem)]),
        ];
        store.upsert(n).unwrap();
    }
    let pod = pod_eq(&[("cpu", "2"), ("memory", "20971520")]);
    for (strategy, want_node, want_score) in
        [("MostAllocated", "Node2", 70), ("BalancedAllocation", "Node3", 100), ("LeastAllocated", "Node1", 73)]
    {
        let p = plugin(store.clone(), serde_json::json!({"scoringStrategy": {"type": strategy}}));
        let best = ["Node1", "Node2", "Node3"]
            .into_iter()
            .map(|n| (p.score(&CycleState::default(), &pod, &node(n)).unwrap(), n))
            .max_by_key(|&(s, n)| (s, std::cmp::Reverse(n)))
            .unwrap();
        assert_eq!(best, (want_score, want_node), "{strategy}");
    }
}

/// Beyond upstream: the store and the caches hold node names, not pin them; a node's
/// name goes once its object is removed and the cache forgets the node.
#[test]
fn caches_give_node_names_back() {
    use crate::framework::NodeObserver;
    let name = "nrt-names-over";
    let store = Arc::new(NrtStore::new());
    let mut nrt = NodeResourceTopology::new(name);
    nrt.topology_policies = vec!["SingleNUMANodeContainerLevel".into()];
    nrt.zones = vec![zone(0, &[("cpu", "20", "4"), ("memory", "8Gi", "8Gi")])];
    store.upsert(nrt.clone()).unwrap();
    let p = plugin(store.clone(), serde_json::json!({"cacheResyncPeriodSeconds": 5}));
    let info = node(name);
    let key = info.name();
    let pod = pod_eq(&[("cpu", "2"), ("memory", "1Gi")]);
    let mut st = CycleState::default();
    assert!(p.reserve(&mut st, &pod, name).is_success());
    assert!(!p.filter(&st, &pod_eq(&[("cpu", "9"), ("memory", "1Gi")]), &info).is_success());
    p.cache().node_has_foreign_pods(key);
    assert_eq!(p.cache().desynced_nodes(), vec![name.to_owned()]);
    assert_eq!(p.cache().assumed_pods(name).len(), 1);
    // The node leaves: its NodeInfo, its object, then the cache's state.
    drop(info);
    assert!(store.remove(name).is_some());
    assert!(Symbol::lookup(name).is_some(), "the over-reserve state still holds the name");
    p.node_removed(name);
    assert_eq!(Symbol::lookup(name), None, "nothing holds {name}");
    assert!(p.cache().desynced_nodes().is_empty() && p.cache().assumed_pods(name).is_empty());
    // Unreserve and PostBind for a forgotten node change nothing.
    p.unreserve(&mut st, &pod, name);
    p.post_bind(&st, &pod, name);
    assert_eq!(Symbol::lookup(name), None);

    // Discard-reserved: a reservation holds the name until PostBind releases it.
    let name = "nrt-names-discard";
    nrt.metadata.name = name.into();
    store.upsert(nrt).unwrap();
    let p = plugin(store.clone(), serde_json::json!({"discardReservedNodes": true, "cacheResyncPeriodSeconds": 5}));
    let info = node(name);
    p.reserve(&mut st, &pod, name);
    drop(info);
    store.remove(name);
    assert!(Symbol::lookup(name).is_some(), "the reservation holds the name");
    p.post_bind(&st, &pod, name);
    assert_eq!(Symbol::lookup(name), None, "released with the last reservation");
}
