//! NodeResourceTopologyMatch through the public API: manifest round-trip, the
//! registry and profile config, and proptests over Filter, Score and Reserve.

use std::sync::Arc;

use proptest::prelude::*;
use schedkit::framework::{CycleState, FilterPlugin, Handle, ReservePlugin, ScorePlugin};
use schedkit::model::ResourceList;
use schedkit::plugins::node_resource_topology::{
    NodeResourceTopology, NodeResourceTopologyMatch, NodeResourceTopologyMatchArgs, NrtStore, ResourceInfo, TmPolicy,
    TmScope, Zone,
};
use schedkit::snapshot::{NodeInfo, PodInfo};
use schedkit::testing::{NodeBuilder, PodBuilder};

const FIXTURE: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/nrt/worker-0.json"));

#[test]
fn manifest_round_trips_exactly() {
    let nrt = NodeResourceTopology::from_json(FIXTURE).unwrap();
    let back = serde_json::to_value(&nrt).unwrap();
    let orig: serde_json::Value = serde_json::from_str(FIXTURE).unwrap();
    assert_eq!(back, orig);
    let tm = nrt.topology_manager();
    // Attributes override the legacy policy field.
    assert_eq!((tm.policy, tm.scope), (TmPolicy::SingleNumaNode, TmScope::Pod));
    assert_eq!(nrt.metadata.annotations.len(), 1);
}

#[test]
fn malformed_manifests_name_the_field() {
    let e = NodeResourceTopology::from_json(&FIXTURE.replace("\"NodeResourceTopology\"", "\"Node\"")).unwrap_err();
    assert!(e.to_string().contains("kind"), "{e}");
    let e = NodeResourceTopology::from_json(&FIXTURE.replace("\"120Gi\"", "\"12 0Gi\"")).unwrap_err();
    assert!(e.to_string().contains("invalid manifest"), "{e}");
    let e = NodeResourceTopology::from_json(&FIXTURE.replace("\"available\": \"24\"", "\"available\": \"-1\""))
        .unwrap_err();
    assert!(e.to_string().contains("zones[0].resources[0].available"), "{e}");
}

#[test]
fn registry_builds_it_from_plugin_config() {
    let handle = Handle::default();
    let store = Arc::new(NrtStore::new());
    store.upsert(NodeResourceTopology::from_json(FIXTURE).unwrap()).unwrap();
    handle.set_shared(store);
    let r = schedkit::plugins::default_registry();
    assert!(r.contains("NodeResourceTopologyMatch"));
    let args = serde_json::json!({"scoringStrategy": {"type": "LeastNUMANodes"}, "cacheResyncPeriodSeconds": 5});
    let p = NodeResourceTopologyMatch::from_config(Some(&args), &handle).unwrap();
    assert_eq!(p.cache().store().len(), 1);
    let bad = serde_json::json!({"scoringStrategy": {"type": "Nope"}});
    assert!(NodeResourceTopologyMatch::from_config(Some(&bad), &handle).is_err());
}

fn two_zone_store(avail: [(i64, i64, i64); 2], scope: &str) -> Arc<NrtStore> {
    let store = Arc::new(NrtStore::new());
    let mut n = NodeResourceTopology::new("n");
    n.attributes = vec![
        schedkit::plugins::node_resource_topology::AttributeInfo {
            name: "topologyManagerPolicy".into(),
            value: "single-numa-node".into(),
        },
        schedkit::plugins::node_resource_topology::AttributeInfo {
            name: "topologyManagerScope".into(),
            value: scope.into(),
        },
    ];
    for (i, (cpu, mem_gi, gpu)) in avail.into_iter().enumerate() {
        let r = |name: &str, q: String| {
            let q = q.parse().unwrap();
            ResourceInfo { name: name.into(), capacity: q, allocatable: q, available: q }
        };
        n.zones.push(Zone {
            name: format!("node-{i}"),
            zone_type: "Node".into(),
            parent: String::new(),
            costs: vec![],
            attributes: vec![],
            resources: vec![
                r("cpu", cpu.to_string()),
                r("memory", format!("{mem_gi}Gi")),
                r("nvidia.com/gpu", gpu.to_string()),
            ],
        });
    }
    store.upsert(n).unwrap();
    store
}

fn node_info() -> NodeInfo {
    NodeInfo::new(Arc::new(
        NodeBuilder::new("n").allocatables(&[("cpu", "256"), ("memory", "2Ti"), ("nvidia.com/gpu", "16")]).build(),
    ))
}

fn guaranteed(containers: &[(i64, i64, i64)]) -> PodInfo {
    let lists: Vec<ResourceList> = containers
        .iter()
        .map(|(c, m, g)| {
            ResourceList::parse([
                ("cpu", c.to_string().as_str()),
                ("memory", format!("{m}Gi").as_str()),
                ("nvidia.com/gpu", g.to_string().as_str()),
            ])
            .unwrap()
        })
        .collect();
    let mut b = PodBuilder::new("p");
    for i in 1..lists.len() {
        b = b.container(&format!("c{i}"));
    }
    PodInfo::new(
        b.with(move |p| {
            for (c, l) in p.spec.containers.iter_mut().zip(lists) {
                c.resources.requests = l.clone();
                c.resources.limits = l;
            }
        })
        .build(),
    )
    .unwrap()
}

fn strategy() -> impl Strategy<Value = &'static str> {
    prop_oneof![Just("MostAllocated"), Just("LeastAllocated"), Just("BalancedAllocation"), Just("LeastNUMANodes")]
}

proptest! {
    /// Scores stay within 0..=100 for every strategy and scope.
    #[test]
    fn scores_in_range(
        z in prop::array::uniform2((0i64..64, 0i64..256, 0i64..8)),
        reqs in prop::collection::vec((1i64..64, 1i64..256, 0i64..8), 1..4),
        s in strategy(), pod_scope in any::<bool>(),
    ) {
        let store = two_zone_store(z, if pod_scope { "pod" } else { "container" });
        let args = serde_json::json!({"scoringStrategy": {"type": s}});
        let p = NodeResourceTopologyMatch::new(serde_json::from_value(args).unwrap(), store).unwrap();
        let score = p.score(&CycleState::default(), &guaranteed(&reqs), &node_info()).unwrap();
        prop_assert!((0..=100).contains(&score), "{score}");
    }

    /// A Guaranteed single-container pod that no single zone can hold is never admitted.
    #[test]
    fn never_admits_unalignable_guaranteed(
        z in prop::array::uniform2((0i64..64, 0i64..256, 0i64..8)),
        req in (1i64..64, 1i64..256, 0i64..8), pod_scope in any::<bool>(),
    ) {
        let store = two_zone_store(z, if pod_scope { "pod" } else { "container" });
        let p = NodeResourceTopologyMatch::new(NodeResourceTopologyMatchArgs::default(), store).unwrap();
        let fits_one = z.iter().any(|&(c, m, g)| c >= req.0 && m >= req.1 && g >= req.2);
        let admitted = p.filter(&CycleState::default(), &guaranteed(&[req]), &node_info()).is_success();
        prop_assert_eq!(admitted, fits_one);
    }

    /// Reserve then Unreserve leaves the over-reserve cache's view exactly as before.
    #[test]
    fn reserve_unreserve_restores(
        z in prop::array::uniform2((0i64..64, 0i64..256, 0i64..8)),
        pods in prop::collection::vec((1i64..64, 1i64..256, 0i64..8), 1..5),
    ) {
        let store = two_zone_store(z, "container");
        let args = serde_json::json!({"cacheResyncPeriodSeconds": 10});
        let p = NodeResourceTopologyMatch::new(serde_json::from_value(args).unwrap(), store).unwrap();
        let key = schedkit::model::Symbol::intern("n");
        let before = p.cache().view(key);
        let infos: Vec<PodInfo> = pods.iter().enumerate().map(|(i, r)| {
            let mut pi = guaranteed(&[*r]);
            let mut pod = (*pi.pod).clone();
            pod.metadata.name = format!("p{i}");
            pod.metadata.uid = format!("u{i}");
            pi = PodInfo::new(pod).unwrap();
            pi
        }).collect();
        let mut st = CycleState::default();
        for pi in &infos {
            prop_assert!(p.reserve(&mut st, pi, "n").is_success());
        }
        for pi in infos.iter().rev() {
            p.unreserve(&mut st, pi, "n");
        }
        prop_assert_eq!(p.cache().view(key), before);
    }
}
