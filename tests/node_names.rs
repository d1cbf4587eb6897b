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

/// Runs `warmup` rounds, then `rounds` more, and returns the interner's live strings
/// and text bytes after each part. Every round adds and removes a node with a name
/// never seen before (fixed width, so bytes compare): a plugin that keeps the names of
/// gone nodes makes the second figure grow by one string a round.
fn interner_over_rounds(
    warmup: usize,
    rounds: usize,
    mut round: impl FnMut(usize),
) -> ((usize, usize), (usize, usize)) {
    for i in 0..warmup {
        round(i);
    }
    let before = Symbol::interner_stats();
    for i in warmup..warmup + rounds {
        round(i);
    }
    let after = Symbol::interner_stats();
    ((before.live, before.bytes), (after.live, after.bytes))
}

/// One pod through the scheduler: added, scheduled and bound (asserting where).
fn place(s: &mut schedkit::scheduler::Scheduler, pod: schedkit::model::Pod, node: &str) {
    let uid = pod.metadata.uid.clone();
    s.events().add_pod(pod).unwrap();
    let summary = s.run_until_idle();
    assert_eq!(summary.bound, 1, "{uid} bound: {summary:?}");
    assert_eq!(s.cache().lock().pod_node(&uid), Some(node));
}

#[test]
fn gpu_share_node_churn_leaves_no_names() {
    use schedkit::plugins::gpu_share::{GPU_COUNT_LABEL, GPU_MILLI_LABEL, GpuState, Policy, TypicalPods};
    let _serial = SERIAL.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let state = GpuState::new();
    let handle = schedkit::framework::Handle::default();
    let typical = Arc::new(TypicalPods::from_shapes([(1000, 500, 1, "")], 95.0));
    let profile = Policy::Fgd
        .profile("default-scheduler", &state, &handle, &typical, 1, vec![schedkit::sim::node_resources_fit()])
        .unwrap();
    let mut s = schedkit::scheduler::Scheduler::builder().profile(profile).handle(handle).parallelism(1).build();
    let ((live0, bytes0), (live1, bytes1)) = interner_over_rounds(3, 40, |i| {
        let name = format!("names-gs-{i:06}");
        let node = NodeBuilder::new(&name)
            .cpu("16")
            .memory("64Gi")
            .allocatable(schedkit::plugins::gpu_share::GPU_COUNT_RESOURCE, "4")
            .build();
        state.add_node(&node);
        s.events().add_node(node).unwrap();
        let uid = format!("names-gs-pod-{i:06}");
        let pod = PodBuilder::new(&uid).uid(&uid).cpu("1").label(GPU_COUNT_LABEL, "1").label(GPU_MILLI_LABEL, "500");
        place(&mut s, pod.build(), &name);
        assert!(state.allocation(&uid).is_some());
        s.events().delete_pod(&uid).unwrap();
        s.events().remove_node(&name).unwrap();
    });
    assert_eq!((live1, bytes1), (live0, bytes0), "gpu_share kept the names of removed nodes");
    assert_eq!(state.used_milli(), 0, "the removed nodes' allocations went with them");
}

#[test]
fn nrt_node_churn_leaves_no_names() {
    use schedkit::plugins::node_resource_topology::{
        NodeResourceTopology, NodeResourceTopologyMatch, NrtStore, ResourceInfo, Zone,
    };
    let _serial = SERIAL.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let store = Arc::new(NrtStore::new());
    let handle = schedkit::framework::Handle::default();
    handle.set_shared(store.clone());
    // Over-reserve: Reserve records the pod against the node's copy.
    let args = serde_json::json!({"cacheResyncPeriodSeconds": 5});
    let nrt = NodeResourceTopologyMatch::from_config(Some(&args), &handle).unwrap();
    let profile = schedkit::framework::Profile::builder("default-scheduler").plugin(nrt).build().unwrap();
    let mut s = schedkit::scheduler::Scheduler::builder().profile(profile).handle(handle).parallelism(1).build();
    let ((live0, bytes0), (live1, bytes1)) = interner_over_rounds(3, 40, |i| {
        let name = format!("names-nrt-{i:06}");
        let mut obj = NodeResourceTopology::new(&name);
        obj.topology_policies = vec!["SingleNUMANodeContainerLevel".into()];
        let res = |n: &str, q: &str| {
            let q = q.parse().unwrap();
            ResourceInfo { name: n.into(), capacity: q, allocatable: q, available: q }
        };
        obj.zones = vec![Zone {
            name: "node-0".into(),
            zone_type: "Node".into(),
            parent: String::new(),
            costs: vec![],
            attributes: vec![],
            resources: vec![res("cpu", "8"), res("memory", "16Gi")],
        }];
        store.upsert(obj).unwrap();
        s.events().add_node(node(&name)).unwrap();
        let uid = format!("names-nrt-pod-{i:06}");
        // Guaranteed: requests equal limits.
        let pod = PodBuilder::new(&uid).uid(&uid).cpu("1").memory("1Gi").with(|p| {
            let c = &mut p.spec.containers[0].resources;
            c.limits = c.requests.clone();
        });
        place(&mut s, pod.build(), &name);
        s.events().delete_pod(&uid).unwrap();
        s.events().remove_node(&name).unwrap();
        assert!(store.remove(&name).is_some());
    });
    assert_eq!((live1, bytes1), (live0, bytes0), "NodeResourceTopology kept the names of removed nodes");
}

#[test]
fn dra_slice_churn_leaves_no_names() {
    use schedkit::dra::DraStore;
    use schedkit::framework::PluginRef;
    use schedkit::plugins::dynamic_resources::ClaimStatusWriter;
    use serde_json::json;
    struct Accept;
    impl ClaimStatusWriter for Accept {
        fn update_status(&self, _: &schedkit::dra::ResourceClaim) -> Result<(), String> {
            Ok(())
        }
    }
    let _serial = SERIAL.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let store = Arc::new(DraStore::new());
    store
        .add_class(
            serde_json::from_value(json!({"metadata": {"name": "names.example.com"},
                "spec": {"selectors": [{"cel": {"expression": "device.driver == \"names.example.com\""}}]}}))
            .unwrap(),
        )
        .unwrap();
    let handle = schedkit::framework::Handle::default();
    handle.set_shared(store.clone());
    handle.set_shared(Arc::new(Arc::new(Accept) as Arc<dyn ClaimStatusWriter>));
    let mut cfg = schedkit::plugins::default_profile_config();
    cfg.plugins.multi_point.enabled.push(PluginRef { name: "DynamicResources".into(), weight: None });
    let profile = schedkit::plugins::default_registry().build_profile(&cfg, &handle).unwrap();
    let mut s = schedkit::scheduler::Scheduler::builder().profile(profile).handle(handle).parallelism(1).build();
    let ((live0, bytes0), (live1, bytes1)) = interner_over_rounds(3, 40, |i| {
        // A node-local driver: one slice per node, its pool named apart from the node.
        let name = format!("names-dra-{i:06}");
        let slice = format!("names-dra-slice-{i:06}");
        store
            .add_slice(
                serde_json::from_value(json!({
                    "metadata": {"name": slice},
                    "spec": {"driver": "names.example.com", "nodeName": name,
                             "pool": {"name": format!("names-dra-pool-{i:06}"), "generation": 1, "resourceSliceCount": 1},
                             "devices": [{"name": format!("gpu-{i:06}"), "attributes": {"index": {"int": 0}}}]}}))
                .unwrap(),
            )
            .unwrap();
        s.events().add_node(node(&name)).unwrap();
        let claim = format!("names-dra-claim-{i:06}");
        store
            .add_claim(
                serde_json::from_value(json!({
                    "metadata": {"name": claim, "namespace": "default"},
                    "spec": {"devices": {"requests": [{"name": "gpu",
                        "exactly": {"deviceClassName": "names.example.com"}}]}}}))
                .unwrap(),
            )
            .unwrap();
        let uid = format!("names-dra-pod-{i:06}");
        let pod = PodBuilder::new(&uid).uid(&uid).cpu("1").with(|p| {
            p.spec.resource_claims.push(schedkit::model::PodResourceClaim {
                name: "gpu".into(),
                resource_claim_name: Some(claim.clone()),
                resource_claim_template_name: None,
                pod_group_resource_claim: None,
            });
        });
        place(&mut s, pod.build(), &name);
        let held = store.claim("default", &claim).unwrap();
        let result = &held.status.as_ref().unwrap().allocation.as_ref().unwrap().devices.results[0];
        assert_eq!(result.pool, format!("names-dra-pool-{i:06}"));
        drop(held);
        s.events().delete_pod(&uid).unwrap();
        assert!(store.remove_claim("default", &claim));
        assert!(store.remove_slice(&slice));
        s.events().remove_node(&name).unwrap();
    });
    assert_eq!(store.audit().double_allocated, Vec::new());
    assert_eq!((live1, bytes1), (live0, bytes0), "the DRA world kept the names of gone nodes, pools or devices");
}

#[test]
fn unique_gang_names_are_not_pinned() {
    let _serial = SERIAL.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let ((live0, bytes0), (live1, bytes1)) = interner_over_rounds(3, 200, |i| {
        let gang = format!("names-gang-{i:06}");
        let pod = PodBuilder::new("names-gang-member").label(schedkit::model::POD_GROUP_LABEL, &gang).build();
        assert_eq!(pod.pod_group().map(|g| g.to_string()), Some(gang));
    });
    assert_eq!((live1, bytes1), (live0, bytes0), "Pod::pod_group pinned the gang names it read");
}
