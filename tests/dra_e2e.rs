//! DynamicResources end to end: the default profile + DynamicResources over 100 nodes x 8
//! GPUs published as ResourceSlices; pods with claims for 1, 2, 4 and 8 GPUs with model
//! selectors and matchAttribute constraints; every allocation checked afterwards. Plus
//! in-flight reservations, PreBind's writer, PostFilter deallocation and PreEnqueue.

use std::collections::HashSet;
use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::json;

use schedkit::dra::{DraStore, ResourceClaim, ResourceSlice};
use schedkit::framework::{Code, Handle, PluginRef, PreEnqueuePlugin};
use schedkit::model::{Pod, PodResourceClaim};
use schedkit::plugins::dynamic_resources::{ClaimStatusWriter, DynamicResources};
use schedkit::plugins::{default_profile_config, default_registry};
use schedkit::scheduler::Scheduler;
use schedkit::snapshot::PodInfo;
use schedkit::testing::{NodeBuilder, PodBuilder};

const DRIVER: &str = "gpu.nvidia.com";
const H100: &str = "NVIDIA H100 80GB HBM3";
const A100: &str = "NVIDIA A100-SXM4-40GB";

/// H100 nodes (even) are one NVLink domain of 8; A100 nodes (odd) two domains of 4.
fn node_slice(i: usize) -> ResourceSlice {
    let h100 = i.is_multiple_of(2);
    let devices: Vec<_> = (0..8)
        .map(|g| {
            json!({"name": format!("gpu-{g}"),
                "attributes": {
                    "productName": {"string": if h100 { H100 } else { A100 }},
                    "nvlinkDomain": {"int": if h100 { 0 } else { g / 4 }},
                    "index": {"int": g}},
                "capacity": {"memory": {"value": if h100 { "80Gi" } else { "40Gi" }}}})
        })
        .collect();
    serde_json::from_value(json!({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "metadata": {"name": format!("node-{i}-gpu")},
        "spec": {"driver": DRIVER, "nodeName": format!("node-{i}"),
                 "pool": {"name": format!("node-{i}"), "generation": 1, "resourceSliceCount": 1},
                 "devices": devices}
    }))
    .unwrap()
}

fn gpu_claim(name: &str, count: i64, model: &str, match_domain: bool) -> ResourceClaim {
    let constraints = if match_domain { json!([{"matchAttribute": "gpu.nvidia.com/nvlinkDomain"}]) } else { json!([]) };
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"devices": {
            "requests": [{"name": "gpus", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": count,
                "selectors": [{"cel": {"expression": format!("device.attributes[\"gpu.nvidia.com\"].productName == \"{model}\"")}}]}}],
            "constraints": constraints}}
    }))
    .unwrap()
}

fn pod_with_claim(name: &str, claim: &str) -> Pod {
    PodBuilder::new(name)
        .cpu("1")
        .with(|p| {
            p.spec.resource_claims.push(PodResourceClaim {
                name: "gpus".into(),
                resource_claim_name: Some(claim.into()),
                resource_claim_template_name: None,
                pod_group_resource_claim: None,
            });
        })
        .build()
}

#[derive(Default)]
struct Recorder(Mutex<Vec<ResourceClaim>>);

impl ClaimStatusWriter for Recorder {
    fn update_status(&self, claim: &ResourceClaim) -> Result<(), String> {
        self.0.lock().push(claim.clone());
        Ok(())
    }
}

fn store_with_class() -> Arc<DraStore> {
    let store = Arc::new(DraStore::new());
    store
        .add_class(
            serde_json::from_value(json!({"metadata": {"name": "gpu.nvidia.com"},
                "spec": {"selectors": [{"cel": {"expression": "device.driver == \"gpu.nvidia.com\""}}]}}))
            .unwrap(),
        )
        .unwrap();
    store
}

/// The default profile plus DynamicResources, built through the registry like a
/// KubeSchedulerConfiguration that enables the plugin.
fn scheduler<W: ClaimStatusWriter + 'static>(store: &Arc<DraStore>, writer: Arc<W>, nodes: usize) -> Scheduler {
    // The store and the writer are shared on the handle, where the registry's
    // DynamicResources (and NodeResourcesFit's device-class lookup) find them.
    let handle = Handle::default();
    handle.set_shared(store.clone());
    handle.set_shared(Arc::new(writer as Arc<dyn ClaimStatusWriter>));
    let mut cfg = default_profile_config();
    cfg.plugins.multi_point.enabled.push(PluginRef { name: "DynamicResources".into(), weight: None });
    let profile = default_registry().build_profile(&cfg, &handle).unwrap();
    assert!(profile.filter_plugins().contains(&"DynamicResources"));
    let sched = Scheduler::builder().profile(profile).build();
    for i in 0..nodes {
        sched.add_node(NodeBuilder::new(&format!("node-{i}")).cpu("64").memory("512Gi").pods(110).build()).unwrap();
        store.add_slice(node_slice(i)).unwrap();
    }
    sched
}

#[test]
fn hundred_nodes_eight_gpus_mixed_claims() {
    let store = store_with_class();
    let writer = Arc::new(Recorder::default());
    let mut sched = scheduler(&store, writer.clone(), 100);
    let counts = [1i64, 2, 4, 8];
    let mut placed = Vec::new();
    // Largest first: without a DRA Score plugin (upstream has none either) the default
    // profile spreads pods, and 8-GPU claims need whole nodes.
    let mut pods: Vec<(i64, &str)> =
        (0..100).map(|i| (counts[i % 4], if (i / 4) % 2 == 0 { H100 } else { A100 })).collect();
    pods.sort_by_key(|(c, _)| std::cmp::Reverse(*c));
    for (i, &(count, model)) in pods.iter().enumerate() {
        // A100 domains hold 4 GPUs: an 8-GPU A100 claim can't match the domain.
        let match_domain = count > 1 && !(model == A100 && count == 8);
        let claim = format!("claim-{i}");
        store.add_claim(gpu_claim(&claim, count, model, match_domain)).unwrap();
        let b =
            sched.schedule_pod(pod_with_claim(&format!("pod-{i}"), &claim)).unwrap_or_else(|e| panic!("pod-{i}: {e}"));
        let node = b.node().to_owned();
        b.run().unwrap();
        placed.push((claim, node, count, model, match_domain));
    }
    assert_eq!(store.audit(), schedkit::dra::Audit::default());
    let mut seen = HashSet::new();
    for (claim, node, count, model, match_domain) in &placed {
        let c = store.claim("default", claim).unwrap();
        let status = c.status.as_ref().unwrap();
        assert_eq!(status.reserved_for.len(), 1, "{claim}");
        let a = status.allocation.as_ref().unwrap();
        assert_eq!(a.devices.results.len() as i64, *count, "{claim}");
        let n: usize = node.trim_start_matches("node-").parse().unwrap();
        assert_eq!(n.is_multiple_of(2), *model == H100, "{claim} on {node} has the wrong model");
        let mut domains = HashSet::new();
        for r in &a.devices.results {
            assert_eq!(r.pool, *node, "{claim}: device from another node");
            assert!(seen.insert((r.pool.clone(), r.device.clone())), "{claim}: {}/{} given twice", r.pool, r.device);
            let g: i64 = r.device.trim_start_matches("gpu-").parse().unwrap();
            domains.insert(if n.is_multiple_of(2) { 0 } else { g / 4 });
        }
        if *match_domain {
            assert_eq!(domains.len(), 1, "{claim}: matchAttribute nvlinkDomain violated");
        }
        let sel = serde_json::to_value(a.node_selector.as_ref().unwrap()).unwrap();
        assert_eq!(sel["nodeSelectorTerms"][0]["matchFields"][0]["values"][0], json!(node));
    }
    // Every claim went through the writer in PreBind.
    assert_eq!(writer.0.lock().len(), 100);

    // An 8-GPU A100 claim in one NVLink domain fits nowhere; the reasons say why.
    store.add_claim(gpu_claim("impossible", 8, A100, true)).unwrap();
    let err = sched.schedule_pod(pod_with_claim("impossible", "impossible")).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("cannot allocate all claims"), "{text}");
    assert!(text.contains("constraint matchAttribute gpu.nvidia.com/nvlinkDomain not satisfiable"), "{text}");
}

#[test]
fn two_pods_in_flight_never_share_a_device() {
    let store = store_with_class();
    let mut sched = scheduler(&store, Arc::new(Recorder::default()), 1);
    store.add_claim(gpu_claim("a", 8, H100, false)).unwrap();
    store.add_claim(gpu_claim("b", 1, H100, false)).unwrap();
    let first = sched.schedule_pod(pod_with_claim("pod-a", "a")).unwrap();
    assert_eq!(store.inflight("default/pod-a").len(), 1);
    // pod-a holds all 8 GPUs in flight (Reserve), not yet bound.
    let err = sched.schedule_pod(pod_with_claim("pod-b", "b")).unwrap_err();
    assert!(err.to_string().contains("0 of 1 requested devices available (8 match)"), "{err}");
    assert_eq!(store.audit(), schedkit::dra::Audit::default());
    // Unreserve (abort) frees them.
    let _ = first.abort("test");
    assert!(store.inflight("default/pod-a").is_empty());
    sched.schedule_pod(pod_with_claim("pod-b", "b")).unwrap().run().unwrap();
}

#[test]
fn post_filter_deallocates_a_claim_stuck_on_a_lost_node() {
    // upstream PostFilter: an allocated claim reserved for no other pod is deallocated so
    // the pod can be retried.
    let store = store_with_class();
    let writer = Arc::new(Recorder::default());
    let mut sched = scheduler(&store, writer.clone(), 2);
    let mut c = gpu_claim("stuck", 1, H100, false);
    c.status = Some(
        serde_json::from_value(json!({"allocation": {
            "devices": {"results": [{"request": "gpus", "driver": DRIVER, "pool": "node-9", "device": "gpu-0"}]},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-9"]}]}]}}}))
        .unwrap(),
    );
    store.add_claim(c).unwrap();
    let err = sched.schedule_pod(pod_with_claim("pod", "stuck")).unwrap_err();
    assert!(err.to_string().contains("deallocation of ResourceClaim completed"), "{err}");
    assert!(store.claim("default", "stuck").unwrap().status.is_none());
    assert!(writer.0.lock().last().unwrap().status.is_none(), "the writer saw the deallocation");
    let b = sched.schedule_pod(pod_with_claim("pod", "stuck")).unwrap();
    assert_eq!(b.node(), "node-0", "H100s are on even nodes");
    b.run().unwrap();
}

#[test]
fn pre_enqueue_waits_for_claims_and_templates_instantiate() {
    let store = store_with_class();
    let plugin = DynamicResources::new(store.clone());
    let pod = PodInfo::new(pod_with_claim("p", "later")).unwrap();
    let s = plugin.pre_enqueue(&pod);
    assert!(!s.is_success());
    assert!(s.reasons()[0].contains("waiting for ResourceClaim default/later"));
    store.add_claim(gpu_claim("later", 1, H100, false)).unwrap();
    assert!(plugin.pre_enqueue(&pod).is_success());

    // A template reference resolves to the claim made from it.
    store.add_template(
        serde_json::from_value(json!({"metadata": {"name": "one-gpu", "namespace": "default"},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}}}}))
        .unwrap(),
    )
    .unwrap();
    let tpod = PodBuilder::new("t")
        .with(|p| {
            p.spec.resource_claims.push(PodResourceClaim {
                name: "gpu".into(),
                resource_claim_name: None,
                resource_claim_template_name: Some("one-gpu".into()),
                pod_group_resource_claim: None,
            });
        })
        .build();
    let info = PodInfo::new(tpod.clone()).unwrap();
    assert!(!plugin.pre_enqueue(&info).is_success());
    let name = store.instantiate_template(&tpod, &tpod.spec.resource_claims[0]).unwrap();
    assert_eq!(name, "t-gpu");
    assert!(plugin.pre_enqueue(&info).is_success());
}

#[test]
fn pods_without_claims_skip_the_plugin() {
    let store = store_with_class();
    let mut sched = scheduler(&store, Arc::new(Recorder::default()), 2);
    let b = sched.schedule_pod(PodBuilder::new("plain").cpu("1").build()).unwrap();
    b.run().unwrap();
}

#[test]
fn diagnose_reports_each_node() {
    let store = store_with_class();
    for i in 0..3 {
        store.add_slice(node_slice(i)).unwrap();
    }
    store.add_claim(gpu_claim("big", 8, A100, true)).unwrap();
    let plugin = DynamicResources::new(store.clone());
    let snap = schedkit::snapshot::Snapshot::from_nodes(
        (0..3).map(|i| schedkit::snapshot::NodeInfo::new(Arc::new(NodeBuilder::new(&format!("node-{i}")).build()))),
    );
    let pod = PodInfo::new(pod_with_claim("p", "big")).unwrap();
    let d = plugin.diagnose(&pod, &snap).unwrap();
    let text: Vec<String> = d.iter().map(ToString::to_string).collect();
    assert_eq!(
        text,
        vec![
            "node-0: cannot allocate all claims; claim default/big, request gpus: 0 of 8 requested devices available (0 match)",
            "node-1: cannot allocate all claims; claim default/big: constraint matchAttribute gpu.nvidia.com/nvlinkDomain not satisfiable",
            "node-2: cannot allocate all claims; claim default/big, request gpus: 0 of 8 requested devices available (0 match)",
        ]
    );
}

#[test]
fn claim_events_requeue_only_pods_using_the_claim() {
    use schedkit::framework::{EnqueueExtensions, EventObject, EventResource, QueueingHint};
    use schedkit::plugins::dynamic_resources::claim_event_hint;
    let pod = PodInfo::new(pod_with_claim("p", "mine")).unwrap();
    assert_eq!(claim_event_hint(&pod, &EventObject::Custom("default/mine".into())), QueueingHint::Queue);
    assert_eq!(claim_event_hint(&pod, &EventObject::Custom("default/other".into())), QueueingHint::Skip);
    assert_eq!(claim_event_hint(&pod, &EventObject::Custom("team-a/mine".into())), QueueingHint::Skip);
    let plugin = DynamicResources::new(store_with_class());
    let events = plugin.events_to_register();
    let resources: Vec<_> = events.iter().map(|e| e.event.resource).collect();
    // upstream also registers Node events (labels for node-selector devices; schedkit adds
    // allocatable for extended resources backed by DRA).
    assert_eq!(
        resources,
        [EventResource::Node, EventResource::ResourceClaim, EventResource::ResourceSlice, EventResource::DeviceClass]
    );
    assert!(events[1].hint.is_some());
}

#[test]
fn invalid_pool_makes_filter_unschedulable_with_upstreams_message() {
    // upstream Filter: `ErrFailedAllocationOnNode` ("invalid resource pools were
    // encountered", allocator case "duplicate-slice") is Unschedulable, not an Error, so
    // other nodes may still fit.
    use schedkit::framework::{Code, CycleState, FilterPlugin, PreFilterPlugin};
    use schedkit::snapshot::{NodeInfo, Snapshot};
    let store = store_with_class();
    for name in ["dup-a", "dup-b"] {
        let slice: ResourceSlice = serde_json::from_value(json!({"metadata": {"name": name},
            "spec": {"driver": DRIVER, "nodeName": "node-0",
                "pool": {"name": "node-0", "generation": 1, "resourceSliceCount": 2},
                "devices": [{"name": "gpu-0", "attributes": {"productName": {"string": H100}}}]}}))
        .unwrap();
        store.add_slice(slice).unwrap();
    }
    store.add_claim(gpu_claim("c", 1, H100, false)).unwrap();
    let plugin = DynamicResources::new(store);
    let node = NodeInfo::new(Arc::new(NodeBuilder::new("node-0").cpu("8").build()));
    let pod = PodInfo::new(pod_with_claim("p", "c")).unwrap();
    let mut state = CycleState::new();
    let (_, status) = plugin.pre_filter(&mut state, &pod, &Snapshot::from_nodes([node.clone()]));
    assert!(status.is_success(), "{status:?}");
    let status = plugin.filter(&state, &pod, &node);
    assert_eq!(status.code(), Code::Unschedulable);
    assert!(
        status.message().starts_with(
            "invalid resource pools were encountered; resource pool gpu.nvidia.com/node-0 is invalid: duplicate device name gpu-0"
        ),
        "{}",
        status.message()
    );
}

/// What PreBind asked the writer for: `("allocate" | "update_status", claim)`.
#[derive(Default)]
struct Calls(Mutex<Vec<(&'static str, ResourceClaim)>>);

impl ClaimStatusWriter for Calls {
    fn update_status(&self, claim: &ResourceClaim) -> Result<(), String> {
        self.0.lock().push(("update_status", claim.clone()));
        Ok(())
    }
    fn allocate(&self, claim: &ResourceClaim) -> Result<(), String> {
        self.0.lock().push(("allocate", claim.clone()));
        Ok(())
    }
}

/// Upstream `dynamicresources.go`: a claim being deleted is refused before scheduling
/// (`foreachPodResourceClaim`: `resourceclaim "going" is being deleted`,
/// UnschedulableAndUnresolvable); PreBind (`bindClaim`) writes an allocation it made
/// through [`ClaimStatusWriter::allocate`] (where an API-server writer first adds the
/// delete-protection finalizer) and only adds a reservation to a claim already
/// allocated.
#[test]
fn claims_being_deleted_are_refused_and_new_allocations_go_through_allocate() {
    let store = store_with_class();
    let plugin = DynamicResources::new(store.clone());
    let mut going = gpu_claim("going", 1, H100, false);
    going.metadata.other.insert("deletionTimestamp".into(), json!("2025-03-01T10:00:05Z"));
    going.metadata.other.insert("finalizers".into(), json!(["example.com/keep"]));
    assert!(going.is_being_deleted() && going.has_finalizer("example.com/keep"));
    store.add_claim(going).unwrap();
    let s = plugin.pre_enqueue(&PodInfo::new(pod_with_claim("p", "going")).unwrap());
    assert_eq!(s.code(), Code::UnschedulableAndUnresolvable);
    assert_eq!(s.reasons(), [r#"resourceclaim "going" is being deleted"#]);

    let writer = Arc::new(Calls::default());
    let mut sched = scheduler(&store, writer.clone(), 2);
    store.add_claim(gpu_claim("shared", 1, H100, false)).unwrap();
    let b = sched.schedule_pod(pod_with_claim("first", "shared")).unwrap();
    b.run().unwrap();
    {
        let calls = writer.0.lock();
        let [("allocate", claim)] = calls.as_slice() else {
            panic!("{:?}", calls.iter().map(|c| c.0).collect::<Vec<_>>())
        };
        let status = claim.status.as_ref().unwrap();
        assert!(status.allocation.is_some());
        assert_eq!(status.reserved_for.len(), 1);
        // The writer decides about the finalizer; the claim is handed over as the store has it.
        assert!(!claim.has_finalizer(schedkit::dra::DELETE_PROTECTION_FINALIZER));
    }
    // A second pod on the allocated claim: a reservation only.
    let b = sched.schedule_pod(pod_with_claim("second", "shared")).unwrap();
    b.run().unwrap();
    let calls = writer.0.lock();
    assert_eq!(calls.iter().map(|c| c.0).collect::<Vec<_>>(), ["allocate", "update_status"]);
    assert_eq!(calls[1].1.status.as_ref().unwrap().reserved_for.len(), 2);
}

#[test]
fn finalizers_are_added_once() {
    let mut claim = gpu_claim("c", 1, H100, false);
    assert!(!claim.has_finalizer(schedkit::dra::DELETE_PROTECTION_FINALIZER));
    claim.add_finalizer(schedkit::dra::DELETE_PROTECTION_FINALIZER);
    claim.add_finalizer(schedkit::dra::DELETE_PROTECTION_FINALIZER);
    assert_eq!(claim.metadata.other["finalizers"], json!(["resource.kubernetes.io/delete-protection"]));
    assert!(!claim.is_being_deleted());
}
