//! Extended resources backed by DRA (KEP-5004): a pod asking for `example.com/gpu` in
//! `resources.requests` gets GPUs of the class naming that resource on nodes without the
//! device plugin resource, through a claim the scheduler makes at PreBind, and
//! NodeResourcesFit leaves the resource to DynamicResources there (upstream
//! `extendeddynamicresources.go`, `noderesources/fit.go` `ShouldDelegateResourceToDRA`,
//! and `TestPlugin` cases "extended resource backed by DRA" in
//! `dynamicresources_test.go`).

use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::json;

use schedkit::dra::{
    DraStore, EXTENDED_RESOURCE_CLAIM_ANNOTATION, PodExtendedResourceClaimStatus, ResourceClaim, ResourceSlice,
};
use schedkit::framework::{Handle, PluginArgs, PluginRef, Profile};
use schedkit::model::Pod;
use schedkit::plugins::default_binder::{Binder, DefaultBinder};
use schedkit::plugins::dynamic_resources::{ClaimStatusWriter, DynamicResources};
use schedkit::plugins::node_resources::{Fit, FitArgs};
use schedkit::plugins::priority_sort::PrioritySort;
use schedkit::plugins::{default_profile_config, default_registry};
use schedkit::scheduler::Scheduler;
use schedkit::snapshot::PodInfo;
use schedkit::testing::{NodeBuilder, PodBuilder};

const DRIVER: &str = "gpu.example.com";

fn gpu_slice(node: &str, n: usize) -> ResourceSlice {
    let devices: Vec<_> = (0..n).map(|g| json!({"name": format!("gpu-{g}")})).collect();
    serde_json::from_value(json!({"metadata": {"name": format!("{node}-gpus")},
        "spec": {"driver": DRIVER, "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1}, "devices": devices}}))
    .unwrap()
}

fn store() -> Arc<DraStore> {
    let s = Arc::new(DraStore::new());
    s.add_class(
        serde_json::from_value(json!({"metadata": {"name": "gpu.example.com"},
            "spec": {"extendedResourceName": "example.com/gpu",
                "selectors": [{"cel": {"expression": format!("device.driver == \"{DRIVER}\"")}}]}}))
        .unwrap(),
    )
    .unwrap();
    s
}

#[derive(Default, Debug)]
struct Recorder {
    created: Mutex<Vec<ResourceClaim>>,
    deleted: Mutex<Vec<String>>,
    pod_status: Mutex<Vec<PodExtendedResourceClaimStatus>>,
}

impl ClaimStatusWriter for Recorder {
    fn update_status(&self, _claim: &ResourceClaim) -> Result<(), String> {
        Ok(())
    }
    fn create_claim(&self, claim: &ResourceClaim) -> Result<(), String> {
        self.created.lock().push(claim.clone());
        Ok(())
    }
    fn delete_claim(&self, _namespace: &str, name: &str) -> Result<(), String> {
        self.deleted.lock().push(name.to_owned());
        Ok(())
    }
    fn update_pod_extended_resource_claim_status(
        &self,
        _pod: &Pod,
        status: &PodExtendedResourceClaimStatus,
    ) -> Result<(), String> {
        self.pod_status.lock().push(status.clone());
        Ok(())
    }
}

fn scheduler(store: &Arc<DraStore>, writer: Arc<Recorder>, delegate: bool) -> Scheduler {
    scheduler_with_binder(store, writer, delegate, DefaultBinder::default())
}

fn scheduler_with_binder(
    store: &Arc<DraStore>,
    writer: Arc<Recorder>,
    delegate: bool,
    binder: DefaultBinder,
) -> Scheduler {
    let fit = Fit::new(&FitArgs::default()).unwrap();
    let fit = if delegate { fit.with_device_classes(store.clone()) } else { fit };
    let profile = Profile::builder("default-scheduler")
        .plugin(PrioritySort)
        .plugin(fit)
        .plugin(DynamicResources::new(store.clone()).with_writer(writer))
        .plugin(binder)
        .build()
        .unwrap();
    Scheduler::builder().profile(profile).build()
}

/// Fails every binding (after PreBind made the claim).
struct FailingBinder;

impl Binder for FailingBinder {
    fn bind(&self, _pod: &Pod, _node: &str) -> Result<(), String> {
        Err("apiserver unavailable".into())
    }
}

fn gpu_pod(name: &str, gpus: &str) -> Pod {
    PodBuilder::new(name).cpu("1").request("example.com/gpu", gpus).build()
}

#[test]
fn class_lookup_by_explicit_and_implicit_name() {
    let s = store();
    assert_eq!(s.device_class_for_resource("example.com/gpu").as_deref(), Some("gpu.example.com"));
    assert_eq!(
        s.device_class_for_resource("deviceclass.resource.kubernetes.io/gpu.example.com").as_deref(),
        Some("gpu.example.com")
    );
    assert_eq!(s.device_class_for_resource("example.com/fpga"), None);
    // A class naming a non-extended resource is rejected.
    let bad =
        serde_json::from_value(json!({"metadata": {"name": "bad"}, "spec": {"extendedResourceName": "cpu"}})).unwrap();
    assert!(s.add_class(bad).unwrap_err().to_string().contains("not an extended resource name"));
    assert!(s.remove_class("gpu.example.com"));
    assert_eq!(s.device_class_for_resource("example.com/gpu"), None);
}

#[test]
fn fit_leaves_backed_resources_to_dra_only_on_nodes_without_them() {
    let s = store();
    let pod = PodInfo::new(gpu_pod("p", "2")).unwrap();
    let plain = Fit::new(&FitArgs::default()).unwrap();
    let delegating = Fit::new(&FitArgs::default()).unwrap().with_device_classes(s.clone());
    let no_plugin = schedkit::snapshot::NodeInfo::new(Arc::new(NodeBuilder::new("n").cpu("8").pods(10).build()));
    assert_eq!(plain.insufficient_resources(&pod, &no_plugin).len(), 1, "Insufficient example.com/gpu");
    assert!(delegating.insufficient_resources(&pod, &no_plugin).is_empty(), "left to DynamicResources");
    // A node whose device plugin lists the resource is checked as usual.
    let small = schedkit::snapshot::NodeInfo::new(Arc::new(
        NodeBuilder::new("m").cpu("8").pods(10).allocatable("example.com/gpu", "1").build(),
    ));
    assert_eq!(delegating.insufficient_resources(&pod, &small).len(), 1);
}

#[test]
fn pods_get_devices_through_a_claim_made_for_their_extended_resources() {
    let s = store();
    let writer = Arc::new(Recorder::default());
    let mut sched = scheduler(&s, writer.clone(), true);
    // node-0: DRA GPUs; node-1: device plugin GPUs; node-2: neither.
    sched.add_node(NodeBuilder::new("node-0").cpu("8").memory("8Gi").pods(10).build()).unwrap();
    sched
        .add_node(
            NodeBuilder::new("node-1").cpu("8").memory("8Gi").pods(10).allocatable("example.com/gpu", "1").build(),
        )
        .unwrap();
    sched.add_node(NodeBuilder::new("node-2").cpu("8").memory("8Gi").pods(10).build()).unwrap();
    s.add_slice(gpu_slice("node-0", 2)).unwrap();

    // Two GPUs: only node-0 (DRA, 2 devices) fits; node-1's plugin has 1, node-2 none.
    let b = sched.schedule_pod(gpu_pod("p", "2")).unwrap();
    assert_eq!(b.node(), "node-0");
    b.run().unwrap();
    let claim = s.claim("default", "p-extended-resources").expect("the claim was created");
    assert_eq!(claim.metadata.annotations[EXTENDED_RESOURCE_CLAIM_ANNOTATION], "true");
    assert_eq!(claim.metadata.other["ownerReferences"][0]["kind"], "Pod");
    let req = &claim.spec.devices.requests[0];
    // "cpu" < "example.com/gpu": the GPU is the container's request 1.
    assert_eq!(req.name, "container-0-request-1");
    assert_eq!(req.exactly.as_ref().unwrap().device_class_name, "gpu.example.com");
    assert_eq!(req.exactly.as_ref().unwrap().count, Some(2));
    let status = claim.status.as_ref().unwrap();
    assert_eq!(status.allocation.as_ref().unwrap().devices.results.len(), 2);
    assert_eq!(status.reserved_for[0].name, "p");
    // The writer saw the creation and the pod status.
    assert_eq!(writer.created.lock().len(), 1);
    let mapping = &writer.pod_status.lock()[0];
    assert_eq!(mapping.resource_claim_name, "p-extended-resources");
    assert_eq!(mapping.request_mappings[0].request_name, "container-0-request-1");
    assert_eq!(s.extended_resource_claim_status("default/p").as_ref(), Some(mapping));
    assert_eq!(s.audit(), schedkit::dra::Audit::default());

    // One GPU: node-0's are taken, node-1's device plugin serves it (no claim).
    let b = sched.schedule_pod(gpu_pod("q", "1")).unwrap();
    assert_eq!(b.node(), "node-1");
    b.run().unwrap();
    assert!(s.claim("default", "q-extended-resources").is_none());

    // Nothing left anywhere.
    let err = sched.schedule_pod(gpu_pod("r", "1")).unwrap_err().to_string();
    assert!(err.contains("cannot allocate all claims"), "{err}");
}

#[test]
fn without_delegation_fit_rejects_nodes_lacking_the_resource() {
    // With NodeResourcesFit unaware of device classes, a node without the device plugin
    // resource is rejected before DRA can help (upstream's feature-off behaviour).
    let s = store();
    let mut sched = scheduler(&s, Arc::new(Recorder::default()), false);
    sched.add_node(NodeBuilder::new("node-0").cpu("8").memory("8Gi").pods(10).build()).unwrap();
    s.add_slice(gpu_slice("node-0", 2)).unwrap();
    let err = sched.schedule_pod(gpu_pod("p", "1")).unwrap_err().to_string();
    assert!(err.contains("Insufficient example.com/gpu"), "{err}");
}

#[test]
fn a_failed_binding_deletes_the_claim_again() {
    let s = store();
    let writer = Arc::new(Recorder::default());
    let mut sched = scheduler(&s, writer.clone(), true);
    sched.add_node(NodeBuilder::new("node-0").cpu("8").memory("8Gi").pods(10).build()).unwrap();
    s.add_slice(gpu_slice("node-0", 1)).unwrap();
    let b = sched.schedule_pod(gpu_pod("p", "1")).unwrap();
    assert_eq!(s.inflight("default/p").len(), 1, "Reserve holds the device");
    let _ = b.abort("test");
    assert!(s.inflight("default/p").is_empty());
    assert!(s.claim("default", "p-extended-resources").is_none(), "never created before PreBind");
    sched.schedule_pod(gpu_pod("p", "1")).unwrap().run().unwrap();
    assert!(s.claim("default", "p-extended-resources").is_some());
}

#[test]
fn a_claim_from_an_earlier_attempt_fails_filter_and_is_deleted() {
    // upstream `TestPlugin` "extended-resource-name-with-resources-has-claim": the pod's
    // extended-resource claim already exists with requests (made in a prior cycle), so
    // Filter rejects every node with "cannot schedule extended resource claim" and
    // PostFilter deletes the claim ("deletion of ResourceClaim completed"); the next
    // attempt makes a fresh claim.
    let s = store();
    let writer = Arc::new(Recorder::default());
    let mut sched = scheduler(&s, writer.clone(), true);
    sched.add_node(NodeBuilder::new("node-0").cpu("8").memory("8Gi").pods(10).build()).unwrap();
    s.add_slice(gpu_slice("node-0", 1)).unwrap();
    let leftover: ResourceClaim = serde_json::from_value(json!({
        "metadata": {"name": "p-extended-resources", "namespace": "default",
            "annotations": {EXTENDED_RESOURCE_CLAIM_ANNOTATION: "true"}},
        "spec": {"devices": {"requests": [{"name": "container-0-request-1",
            "exactly": {"deviceClassName": "gpu.example.com", "count": 1}}]}}}))
    .unwrap();
    s.add_claim(leftover).unwrap();
    let err = sched.schedule_pod(gpu_pod("p", "1")).unwrap_err().to_string();
    assert!(err.contains("cannot schedule extended resource claim"), "{err}");
    assert_eq!(*writer.deleted.lock(), ["p-extended-resources"]);
    assert!(s.claim("default", "p-extended-resources").is_none());
    let b = sched.schedule_pod(gpu_pod("p", "1")).unwrap();
    assert_eq!(b.node(), "node-0");
    b.run().unwrap();
    assert_eq!(writer.created.lock().len(), 1, "a fresh claim");
    assert_eq!(s.audit(), schedkit::dra::Audit::default());
}

#[test]
fn the_default_registry_wires_the_shared_store_into_fit_and_dynamic_resources() {
    // A profile built from config: with a DraStore shared on the handle, NodeResourcesFit
    // resolves DRA-backed extended resources (upstream NewFit takes the resolver from the
    // handle's SharedDRAManager) and DynamicResources is built over the same store.
    let s = store();
    let writer = Arc::new(Recorder::default());
    let handle = Handle::default();
    handle.set_shared(s.clone());
    handle.set_shared(Arc::new(writer.clone() as Arc<dyn ClaimStatusWriter>));
    let mut cfg = default_profile_config();
    cfg.plugins.multi_point.enabled.push(PluginRef { name: "DynamicResources".into(), weight: None });
    let profile = default_registry().build_profile(&cfg, &handle).unwrap();
    let mut sched = Scheduler::builder().profile(profile).handle(handle.clone()).build();
    sched.add_node(NodeBuilder::new("node-0").cpu("8").memory("8Gi").pods(10).build()).unwrap();
    s.add_slice(gpu_slice("node-0", 2)).unwrap();
    let b = sched.schedule_pod(gpu_pod("p", "2")).unwrap();
    assert_eq!(b.node(), "node-0");
    b.run().unwrap();
    assert_eq!(writer.created.lock().len(), 1, "the shared writer made the claim");
    assert!(s.claim("default", "p-extended-resources").is_some());

    // Args are upstream's DynamicResourcesArgs; bad ones are config errors.
    let mut bad = cfg.clone();
    bad.plugin_config.push(PluginArgs { name: "DynamicResources".into(), args: json!({"bindingTimeout": "0s"}) });
    let err = default_registry().build_profile(&bad, &handle).unwrap_err().to_string();
    assert!(err.contains("bindingTimeout: must be positive"), "{err}");
    // Without a shared store, one is shared on the handle (upstream always has a DRA
    // manager), so the plugin builds on any handle.
    let bare = Handle::default();
    default_registry().build_profile(&cfg, &bare).unwrap();
    assert!(bare.shared::<schedkit::dra::DraStore>().is_some());
}

#[test]
fn unreserve_deletes_the_claim_prebind_made() {
    // upstream `unreserveExtendedResourceClaim`: a binding failing after PreBind created
    // the claim deletes it again, so the devices are free for the retry.
    let s = store();
    let writer = Arc::new(Recorder::default());
    let mut sched = scheduler_with_binder(&s, writer.clone(), true, DefaultBinder::new(FailingBinder));
    sched.add_node(NodeBuilder::new("node-0").cpu("8").memory("8Gi").pods(10).build()).unwrap();
    s.add_slice(gpu_slice("node-0", 1)).unwrap();
    let err = sched.schedule_pod(gpu_pod("p", "1")).unwrap().run().unwrap_err();
    assert!(err.to_string().contains("apiserver unavailable"), "{err}");
    assert_eq!(writer.created.lock().len(), 1, "PreBind created the claim");
    assert_eq!(*writer.deleted.lock(), ["p-extended-resources"]);
    assert!(s.claim("default", "p-extended-resources").is_none());
    assert_eq!(s.audit(), schedkit::dra::Audit::default());
    // The device is free again.
    let b = sched.schedule_pod(gpu_pod("p", "1")).unwrap();
    assert_eq!(b.node(), "node-0");
}

#[test]
fn unreserve_leaves_claims_alone_for_a_pod_without_claims() {
    // upstream `Unreserve` returns at once when PreFilter found no claims
    // (`state.claims.empty()`): a pod asking for no device whose binding fails must not
    // delete a claim that merely carries its extended-resource name.
    let s = store();
    let writer = Arc::new(Recorder::default());
    let mut sched = scheduler_with_binder(&s, writer.clone(), true, DefaultBinder::new(FailingBinder));
    sched.add_node(NodeBuilder::new("node-0").cpu("8").memory("8Gi").pods(10).build()).unwrap();
    let stray: ResourceClaim = serde_json::from_value(json!({
        "metadata": {"name": "q-extended-resources", "namespace": "default",
            "annotations": {EXTENDED_RESOURCE_CLAIM_ANNOTATION: "true"}},
        "spec": {"devices": {"requests": []}}}))
    .unwrap();
    s.add_claim(stray).unwrap();
    let plain = PodBuilder::new("q").cpu("1").build();
    let err = sched.schedule_pod(plain).unwrap().run().unwrap_err();
    assert!(err.to_string().contains("apiserver unavailable"), "{err}");
    assert!(writer.deleted.lock().is_empty(), "Unreserve deleted {:?}", writer.deleted.lock());
    assert!(s.claim("default", "q-extended-resources").is_some());
}

#[test]
fn extended_resource_objects_round_trip_as_yaml() {
    use serde::Deserialize;
    let class = r#"
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: gpu.example.com
spec:
  extendedResourceName: example.com/gpu
  selectors:
  - cel:
      expression: device.driver == "gpu.example.com"
"#;
    let status = r"
requestMappings:
- containerName: main
  resourceName: example.com/gpu
  requestName: container-0-request-1
resourceClaimName: p-extended-resources-x7k2q
";
    let doc = serde_json::Value::deserialize(serde_norway::Deserializer::from_str(class)).unwrap();
    let c: schedkit::dra::DeviceClass = serde_json::from_value(doc.clone()).unwrap();
    assert_eq!(serde_json::to_value(&c).unwrap(), doc);
    assert_eq!(c.spec.extended_resource_name.as_deref(), Some("example.com/gpu"));
    let doc = serde_json::Value::deserialize(serde_norway::Deserializer::from_str(status)).unwrap();
    let st: PodExtendedResourceClaimStatus = serde_json::from_value(doc.clone()).unwrap();
    assert_eq!(serde_json::to_value(&st).unwrap(), doc);
    let back: PodExtendedResourceClaimStatus = serde_norway::from_str(&serde_norway::to_string(&st).unwrap()).unwrap();
    assert_eq!(back, st);
}

/// `testing::InUseDevices` marks devices taken the way an allocated claim does:
/// the extended-resource counts see them allocated until the set is released.
#[test]
fn in_use_devices_count_as_allocated_until_released() {
    use schedkit::model::Symbol;
    use schedkit::testing::InUseDevices;
    let s = store();
    s.add_slice(gpu_slice("n1", 4)).unwrap();
    let node = NodeBuilder::new("n1").build();
    let labels = &node.metadata.labels;
    let counts = || s.extended_device_counts(&["example.com/gpu"]).unwrap().counts(0, Symbol::intern("n1"), labels);
    assert_eq!(counts(), Some((4, 0)));
    let busy = InUseDevices::named("what-if").devices(DRIVER, "n1", ["gpu-0", "gpu-2"]);
    busy.apply(&s).unwrap();
    assert_eq!(counts(), Some((4, 2)));
    assert!(busy.release(&s));
    assert_eq!(counts(), Some((4, 0)));
}
