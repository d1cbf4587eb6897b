//! Cache and snapshot: incremental updates, assume/forget, copy-on-write isolation.

use std::sync::Arc;

use schedkit::snapshot::{Cache, CacheError, PodInfo, Snapshot};
use schedkit::testing::{NodeBuilder, PodBuilder};

fn cache_with(n: usize) -> Cache {
    let mut c = Cache::new();
    for i in 0..n {
        c.add_node(NodeBuilder::new(&format!("n{i}")).cpu("8").memory("16Gi").zone(&format!("z{}", i % 3)).build())
            .unwrap();
    }
    c
}

fn pod(name: &str, cpu: &str) -> Arc<PodInfo> {
    Arc::new(PodInfo::new(PodBuilder::new(name).cpu(cpu).build()).unwrap())
}

fn bound(name: &str, node: &str) -> Arc<PodInfo> {
    Arc::new(PodInfo::new(PodBuilder::new(name).cpu("1").node_name(node).build()).unwrap())
}

#[test]
fn incremental_update_copies_only_changed_nodes() {
    let mut cache = cache_with(100);
    let mut snap = Snapshot::default();
    let first = cache.update_snapshot(&mut snap);
    assert!(first.list_rebuilt);
    assert_eq!(first.nodes_updated, 100);
    assert_eq!(cache.update_snapshot(&mut snap).nodes_updated, 0, "nothing changed");

    cache.assume_pod(pod("a", "1"), "n5").unwrap();
    cache.add_pod(bound("b", "n7")).unwrap();
    cache.add_pod(bound("c", "n7")).unwrap();
    let stats = cache.update_snapshot(&mut snap);
    assert_eq!(stats.nodes_updated, 2);
    assert!(!stats.list_rebuilt);
    assert_eq!(snap.get("n7").unwrap().pods().len(), 2);

    // Many changes to one node still copy it once.
    for i in 0..50 {
        cache.add_pod(bound(&format!("x{i}"), "n9")).unwrap();
    }
    assert_eq!(cache.update_snapshot(&mut snap).nodes_updated, 1);

    cache.add_node(NodeBuilder::new("new").cpu("1").build()).unwrap();
    let stats = cache.update_snapshot(&mut snap);
    assert!(stats.list_rebuilt);
    assert_eq!(stats.nodes_updated, 1, "only the new node is new");
    assert_eq!(snap.len(), 101);
}

#[test]
fn many_updates_survive_log_compaction() {
    let mut cache = cache_with(10);
    let mut snap = Snapshot::default();
    cache.update_snapshot(&mut snap);
    for round in 0..20 {
        for i in 0..10 {
            cache.add_pod(bound(&format!("p{round}-{i}"), &format!("n{i}"))).unwrap();
        }
        if round % 3 == 0 {
            cache.update_snapshot(&mut snap);
        }
    }
    cache.update_snapshot(&mut snap);
    for i in 0..10 {
        assert_eq!(snap.get(&format!("n{i}")).unwrap().pods().len(), 20);
        assert_eq!(snap.get(&format!("n{i}")).unwrap().requested().milli_cpu, 20_000);
    }
}

#[test]
fn assumed_pods_are_visible_and_forget_removes_them() {
    let mut cache = cache_with(3);
    let mut snap = Snapshot::default();
    cache.update_snapshot(&mut snap);
    cache.assume_pod(pod("a", "2"), "n1").unwrap();
    cache.update_snapshot(&mut snap);
    let n1 = snap.get("n1").unwrap();
    assert_eq!(n1.requested().milli_cpu, 2000);
    assert_eq!(n1.requested().allowed_pod_number, 1);
    assert!(cache.is_assumed("default/a"));

    cache.forget_pod("default/a").unwrap();
    cache.update_snapshot(&mut snap);
    assert_eq!(snap.get("n1").unwrap().requested().milli_cpu, 0);
    assert_eq!(snap.get("n1").unwrap().pods().len(), 0);
    assert_eq!(cache.forget_pod("default/a"), Err(CacheError::PodNotFound("default/a".into())));
}

#[test]
fn confirmed_binding_replaces_the_assumption() {
    let mut cache = cache_with(2);
    cache.assume_pod(pod("a", "1"), "n0").unwrap();
    cache.finish_binding("default/a").unwrap();
    cache.add_pod(bound("a", "n0")).unwrap();
    assert!(!cache.is_assumed("default/a"));
    assert_eq!(cache.node_info("n0").unwrap().pods().len(), 1);
    assert_eq!(cache.forget_pod("default/a"), Err(CacheError::PodNotAssumed("default/a".into())));
}

#[test]
fn old_snapshots_are_isolated_from_later_changes() {
    let mut cache = cache_with(2);
    let mut snap = Snapshot::default();
    cache.update_snapshot(&mut snap);
    let frozen = snap.clone();
    cache.assume_pod(pod("a", "1"), "n0").unwrap();
    cache.update_snapshot(&mut snap);
    assert_eq!(frozen.get("n0").unwrap().requested().milli_cpu, 0);
    assert_eq!(snap.get("n0").unwrap().requested().milli_cpu, 1000);
}

#[test]
fn nodes_are_listed_round_robin_across_zones() {
    let mut cache = Cache::new();
    for (name, zone) in [("a1", "a"), ("a2", "a"), ("a3", "a"), ("b1", "b"), ("c1", "c"), ("b2", "b")] {
        cache.add_node(NodeBuilder::new(name).zone(zone).build()).unwrap();
    }
    let mut snap = Snapshot::default();
    cache.update_snapshot(&mut snap);
    let order: Vec<&str> = snap.nodes().iter().map(|n| n.node().name()).collect();
    assert_eq!(order, ["a1", "b1", "c1", "a2", "b2", "a3"]);
}

#[test]
fn bad_events_are_typed_errors_and_change_nothing() {
    let mut cache = cache_with(1);
    assert_eq!(
        cache.add_pod(bound("p", "ghost")),
        Err(CacheError::PodNodeNotFound { pod: "default/p".into(), node: "ghost".into() })
    );
    assert_eq!(cache.add_pod(pod("p", "1")).unwrap_err().to_string(), "pod default/p has no node name");
    assert_eq!(cache.add_node(NodeBuilder::new("n0").build()), Err(CacheError::NodeExists("n0".into())));
    assert_eq!(cache.remove_node("ghost"), Err(CacheError::NodeNotFound("ghost".into())));
    assert_eq!(cache.remove_pod("nope").unwrap_err(), CacheError::PodNotFound("nope".into()));
    cache.add_pod(bound("p", "n0")).unwrap();
    assert_eq!(cache.add_pod(bound("p", "n0")), Err(CacheError::PodExists("default/p".into())));
    assert_eq!(cache.pod_count(), 1);
    assert_eq!(cache.node_info("n0").unwrap().requested().milli_cpu, 1000);
}

#[test]
fn removing_a_node_drops_its_pods_and_rebuilds_the_list() {
    let mut cache = cache_with(4);
    cache.add_pod(bound("p", "n1")).unwrap();
    let mut snap = Snapshot::default();
    cache.update_snapshot(&mut snap);
    cache.remove_node("n1").unwrap();
    let stats = cache.update_snapshot(&mut snap);
    assert!(stats.list_rebuilt);
    assert_eq!(snap.len(), 3);
    assert!(snap.get("n1").is_none());
    assert_eq!(cache.pod_count(), 0);
    // The moved slot still updates incrementally.
    cache.add_pod(bound("q", "n3")).unwrap();
    assert_eq!(cache.update_snapshot(&mut snap).nodes_updated, 1);
    assert_eq!(snap.get("n3").unwrap().pods().len(), 1);
}

#[test]
fn image_counts_follow_nodes() {
    let mut cache = Cache::new();
    cache.add_node(NodeBuilder::new("a").image("nginx:1.25", 100).build()).unwrap();
    cache.add_node(NodeBuilder::new("b").image("nginx:1.25", 100).image("redis:7", 50).build()).unwrap();
    let mut snap = Snapshot::default();
    cache.update_snapshot(&mut snap);
    let nginx = schedkit::model::Symbol::intern("nginx:1.25");
    assert_eq!(snap.image_node_count(nginx), 2);
    assert_eq!(snap.get("b").unwrap().image_size(nginx), Some(100));
    cache.remove_node("a").unwrap();
    cache.update_snapshot(&mut snap);
    assert_eq!(snap.image_node_count(nginx), 1);
}

#[test]
fn host_ports_and_requests_follow_pods() {
    let mut cache = cache_with(1);
    let p = Arc::new(PodInfo::new(PodBuilder::new("web").cpu("1").host_port(8080).node_name("n0").build()).unwrap());
    cache.add_pod(p).unwrap();
    assert_eq!(cache.node_info("n0").unwrap().used_ports().len(), 1);
    cache.remove_pod("default/web").unwrap();
    let n0 = cache.node_info("n0").unwrap();
    assert!(n0.used_ports().is_empty());
    assert!(n0.requested().is_zero());
}
