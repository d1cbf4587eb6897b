//! Node names are held, not pinned: a removed node's name is freed once nothing that
//! names it remains (the cache, snapshots, pods assumed on it, nominations), and until
//! then its slot is never reused, so a stale holder can't name the node that joins next.
//!
//! The tests share the process-wide interner and check which slot a new string takes,
//! so they run one at a time (`SERIAL`).

use std::sync::{Arc, Mutex};

use schedkit::framework::Nominator;
use schedkit::model::{HeldSymbol, Symbol};
use schedkit::snapshot::{Cache, CacheError, PodInfo, Snapshot};
use schedkit::testing::{NodeBuilder, PodBuilder};

static SERIAL: Mutex<()> = Mutex::new(());

fn node(name: &str) -> schedkit::model::Node {
    NodeBuilder::new(name).cpu("8").memory("16Gi").build()
}

fn pending(name: &str) -> PodInfo {
    PodInfo::new(PodBuilder::new(name).uid(name).cpu("1").build()).unwrap()
}

#[test]
fn a_pod_assumed_on_a_removed_node_never_counts_on_a_node_reusing_its_slot() {
    let _serial = SERIAL.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut cache = Cache::new();
    let mut snap = Snapshot::default();
    cache.add_node(node("names-a")).unwrap();
    cache.update_snapshot(&mut snap);
    let a = snap.get("names-a").unwrap().name();

    // A binding in flight keeps the pod assumed on node A while A leaves.
    let pod = pending("names-p");
    let assumed = Arc::new(pod.assumed_on("names-a"));
    cache.assume_pod(assumed.clone(), "names-a").unwrap();
    cache.remove_node("names-a").unwrap();
    cache.update_snapshot(&mut snap);
    assert!(snap.get("names-a").is_none());
    assert_eq!(Symbol::lookup("names-a"), Some(a), "the assumed pod still holds A's name");

    // Nodes join (and some leave) while the pod lives: none takes A's slot.
    for i in 0..50 {
        cache.add_node(node(&format!("names-b{i}"))).unwrap();
        if i % 2 == 0 {
            cache.remove_node(&format!("names-b{i}")).unwrap();
        }
        cache.update_snapshot(&mut snap);
    }
    for n in snap.nodes() {
        assert_ne!(n.name(), a, "{} took the slot of a node a pod still names", n.node().name());
        assert!(n.pods().is_empty(), "{} counts a pod", n.node().name());
        assert_eq!(n.requested().milli_cpu, 0);
    }
    assert_eq!(assumed.node_name(), "names-a");
    assert_eq!(assumed.bound_pod().spec.node_name, "names-a");
    // The informer's confirmation comes late: the node is gone, so the pod lands nowhere.
    assert_eq!(
        cache.add_pod(assumed.clone()),
        Err(CacheError::PodNodeNotFound { pod: "names-p".into(), node: "names-a".into() })
    );

    // The last holder goes: A's name is freed and its slot is the next one reused.
    drop(pod);
    drop(assumed);
    assert_eq!(Symbol::lookup("names-a"), None, "freed with its last holder");
    let fresh = HeldSymbol::new("names-fresh");
    assert_eq!(fresh.symbol(), a, "the freed slot is reused by the next new string");
    assert_eq!(fresh.as_str(), "names-fresh");
}

#[test]
fn a_nomination_to_a_removed_node_holds_its_name_until_dropped() {
    let _serial = SERIAL.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut cache = Cache::new();
    let mut snap = Snapshot::default();
    cache.add_node(node("names-nom-a")).unwrap();
    cache.update_snapshot(&mut snap);
    let a = snap.get("names-nom-a").unwrap().name();
    let nominator = Nominator::default();
    nominator.add(Arc::new(pending("names-nom-p")), "names-nom-a");

    cache.remove_node("names-nom-a").unwrap();
    cache.update_snapshot(&mut snap);
    cache.add_node(node("names-nom-b")).unwrap();
    cache.update_snapshot(&mut snap);
    let b = snap.get("names-nom-b").unwrap().name();
    assert_ne!(a, b, "B can't take the slot a nomination holds");
    let table = nominator.snapshot().unwrap();
    assert!(table.on_node(b).is_empty(), "the pod nominated to A does not count on B");
    assert_eq!(table.on_node(a).len(), 1);
    assert_eq!(nominator.nominated_node("names-nom-p").unwrap().to_string(), "names-nom-a");
    drop(table);

    let held = nominator.remove("names-nom-p").unwrap();
    assert_eq!(held.as_str(), "names-nom-a");
    assert_eq!(Symbol::lookup("names-nom-a"), Some(a), "the caller still holds it");
    drop(held);
    assert_eq!(Symbol::lookup("names-nom-a"), None);
}

#[test]
fn a_snapshot_keeps_a_removed_nodes_name_until_it_is_updated() {
    let _serial = SERIAL.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let before = Symbol::interner_stats();
    let mut cache = Cache::new();
    for i in 0..20 {
        cache.add_node(node(&format!("names-snap-{i}"))).unwrap();
    }
    let mut snap = Snapshot::default();
    cache.update_snapshot(&mut snap);
    // A second snapshot, taken now and kept (a binding cycle's).
    let old = snap.clone();
    for i in 0..20 {
        cache.remove_node(&format!("names-snap-{i}")).unwrap();
    }
    cache.update_snapshot(&mut snap);
    assert!(snap.is_empty());
    assert!(Symbol::lookup("names-snap-7").is_some(), "the old snapshot's NodeInfo copies hold the names");
    assert_eq!(old.get("names-snap-7").unwrap().node().name(), "names-snap-7");
    drop(old);
    for i in 0..20 {
        assert_eq!(Symbol::lookup(&format!("names-snap-{i}")), None, "names-snap-{i}");
    }
    let after = Symbol::interner_stats();
    assert_eq!((after.live, after.bytes), (before.live, before.bytes), "the interner is back where it was");
}

#[test]
fn plugin_registries_hold_node_names_until_the_node_is_removed() {
    use schedkit::plugins::gpu_domain::NvLinkDomains;
    use schedkit::plugins::gpu_topology::GpuTopologyRegistry;
    use schedkit::plugins::hami::HamiState;
    let _serial = SERIAL.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let topo = GpuTopologyRegistry::default();
    topo.set_node("names-gpu-a", Arc::new(schedkit::topology::machines::dgx_h100().matrix().unwrap()));
    let domains = NvLinkDomains::default();
    domains.set_node("names-gpu-a", "names-rack/nvlink-0");
    let hami = HamiState::new();
    hami.set_devices("names-gpu-a", Vec::new()).unwrap();
    // A pod's GPUs outlive the node in the registry: its assignment keeps naming it.
    let set = schedkit::topology::GpuSet(0b11);
    assert!(topo.mark_busy("names-gpu-a", set, "names-gpu-p"));
    assert!(!topo.mark_busy("names-gpu-unknown", set, "names-gpu-q"), "an unknown node takes nothing");

    topo.remove_node("names-gpu-a");
    domains.remove_node("names-gpu-a");
    hami.remove_node("names-gpu-a");
    assert!(Symbol::lookup("names-gpu-a").is_some(), "the pod's assignment still holds the name");
    assert_eq!(topo.assignment("names-gpu-p"), Some(("names-gpu-a".to_owned(), set)));
    assert!(topo.release("names-gpu-p"));
    assert_eq!(Symbol::lookup("names-gpu-a"), None, "no registry pins a removed node's name");
    assert!(domains.domain_of("names-gpu-a").is_none());
    assert!(Symbol::lookup("names-gpu-unknown").is_none(), "a lookup of an unknown node interns nothing");
}
