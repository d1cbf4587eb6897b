//! DRA feature gates ([`FeatureGates`]) as upstream's: defaults of
//! Kubernetes v1.36 (`pkg/features/kube_features.go`), and what each one turns off
//! (`dynamicresources.go` PreFilter/Filter/Score, the structured allocator's
//! `Features`, `GatherPools`).

use std::sync::Arc;

use serde_json::{Value, json};

#[path = "support/dra.rs"]
mod dra_support;
use dra_support::{driver_class, node_slice};

use schedkit::dra::{AllocError, DraStore, GatherError, NodeResult, ResourceClaim};
use schedkit::framework::{
    Code, CycleState, Feature, FeatureGates, FilterPlugin, Handle, PreFilterPlugin, ScorePlugin,
};
use schedkit::model::{Labels, Pod, PodResourceClaim};
use schedkit::plugins::dynamic_resources::DynamicResources;
use schedkit::snapshot::{NodeInfo, PodInfo, Snapshot};
use schedkit::testing::NodeBuilder;

const DRIVER: &str = "driver-a";
const ADMIN_LABEL: &str = schedkit::dra::ADMIN_ACCESS_NAMESPACE_LABEL;

fn store(devices: &Value) -> Arc<DraStore> {
    let store = Arc::new(DraStore::new());
    store.set_namespace_labels("default", [(ADMIN_LABEL.to_owned(), "true".to_owned())].into());
    store.add_class(driver_class("class-a", DRIVER)).unwrap();
    store.add_slice(node_slice("slice-1", DRIVER, "node-1", devices)).unwrap();
    store
}

fn add_claim(store: &DraStore, requests: &Value) {
    let claim: ResourceClaim = serde_json::from_value(json!({"metadata": {"name": "claim-0", "namespace": "default"},
        "spec": {"devices": {"requests": requests}}}))
    .unwrap();
    store.add_claim(claim).unwrap();
}

fn with(store: &DraStore, f: impl FnOnce(&mut FeatureGates)) {
    let mut gates = store.feature_gates();
    f(&mut gates);
    store.set_feature_gates(gates);
}

fn allocate(store: &DraStore) -> Result<NodeResult, GatherError> {
    store.allocate_claims(&[("default", "claim-0")], "node-1", &Labels::default())
}

/// The plugin's Filter status for `pod()` on `node()`, after a successful PreFilter.
fn filter(store: Arc<DraStore>) -> schedkit::framework::Status {
    let plugin = DynamicResources::new(store);
    let mut state = CycleState::new();
    let (_, status) = plugin.pre_filter(&mut state, &pod(), &Snapshot::from_nodes([node()]));
    assert!(status.is_success(), "{status:?}");
    plugin.filter(&state, &pod(), &node())
}

fn fits(store: &DraStore) -> bool {
    matches!(allocate(store).unwrap(), NodeResult::Fit(_))
}

fn pod() -> PodInfo {
    let mut pod = Pod::default();
    pod.metadata.name = "p".into();
    pod.metadata.namespace = "default".into();
    pod.spec.resource_claims.push(PodResourceClaim {
        name: "c".into(),
        resource_claim_name: Some("claim-0".into()),
        resource_claim_template_name: None,
        pod_group_resource_claim: None,
    });
    PodInfo::new(pod).unwrap()
}

fn node() -> NodeInfo {
    NodeInfo::new(Arc::new(NodeBuilder::new("node-1").cpu("8").build()))
}

#[test]
fn gates_default_to_v1_36() {
    let g = FeatureGates::default();
    assert!(g.enabled(Feature::DRAPrioritizedList), "DRAPrioritizedList: GA in 1.36");
    assert!(g.enabled(Feature::DRAAdminAccess), "DRAAdminAccess: GA in 1.36");
    assert!(g.enabled(Feature::DRADeviceTaints), "DRADeviceTaints: beta, on in 1.36");
    assert!(!g.enabled(Feature::DRADeviceTaintRules), "DRADeviceTaintRules: beta, off in 1.36");
    assert!(g.enabled(Feature::DRAPartitionableDevices), "DRAPartitionableDevices: beta, on in 1.36");
    assert!(g.enabled(Feature::DRADeviceBindingConditions), "DRADeviceBindingConditions: beta, on in 1.36");
    assert!(g.enabled(Feature::DRAExtendedResource), "DRAExtendedResource: beta, on in 1.36");
    assert!(g.enabled(Feature::DRASchedulerFilterTimeout), "DRASchedulerFilterTimeout: beta, on");
    assert!(g.enabled(Feature::DRAConsumableCapacity), "DRAConsumableCapacity: beta, on in 1.36");
    assert_eq!(DraStore::new().feature_gates(), g);
    // The older setters switch the same gates.
    let s = DraStore::new();
    s.set_device_taint_rules(true);
    s.set_binding_conditions(false);
    let g = s.feature_gates();
    assert!(g.enabled(Feature::DRADeviceTaintRules) && !g.enabled(Feature::DRADeviceBindingConditions));
}

#[test]
fn handle_gates_reach_the_store() {
    // Gates set on the handle are handed to the shared store when DynamicResources is
    // built from it; without them the store keeps its own.
    let handle = Handle::default();
    let store = Arc::new(DraStore::new());
    store.set_device_taint_rules(true);
    handle.set_shared(store.clone());
    DynamicResources::from_config(None, &handle).unwrap();
    assert!(store.device_taint_rules_enabled());
    handle.set_feature_gates("DRAAdminAccess=false".parse().unwrap());
    DynamicResources::from_config(None, &handle).unwrap();
    assert_eq!(store.feature_gates(), FeatureGates::default().with(Feature::DRAAdminAccess, false));
}

/// The deprecated `DraFeatures` and `DraStore::set_features`/`features` keep working for
/// one release.
#[test]
#[expect(deprecated, reason = "tests the deprecated DraFeatures path")]
fn defaults_are_v1_36() {
    use schedkit::dra::DraFeatures;
    let f = DraFeatures::default();
    assert!(f.prioritized_list, "DRAPrioritizedList: GA in 1.36");
    assert!(f.admin_access, "DRAAdminAccess: GA in 1.36");
    assert!(f.device_taints, "DRADeviceTaints: beta, on in 1.36");
    assert!(!f.device_taint_rules, "DRADeviceTaintRules: beta, off in 1.36");
    assert!(f.partitionable_devices, "DRAPartitionableDevices: beta, on in 1.36");
    assert!(f.device_binding_conditions, "DRADeviceBindingConditions: beta, on in 1.36");
    assert!(f.extended_resource, "DRAExtendedResource: beta, on in 1.36");
    assert!(f.scheduler_filter_timeout, "DRASchedulerFilterTimeout: beta, on");
    assert!(f.consumable_capacity, "DRAConsumableCapacity: beta, on in 1.36");
    assert_eq!(DraStore::new().features(), f);
    // The older setters switch the same features.
    let s = DraStore::new();
    s.set_device_taint_rules(true);
    s.set_binding_conditions(false);
    assert!(s.features().device_taint_rules && !s.features().device_binding_conditions);
}

#[test]
fn prioritized_list_off_fails_pre_filter() {
    // upstream PreFilter: Unschedulable "resource claim ..., request ...: has
    // subrequests, but the DRAPrioritizedList feature is disabled".
    let store = store(&json!([{"name": "device-1"}]));
    add_claim(&store, &json!([{"name": "req-0", "firstAvailable": [{"name": "sub-0", "deviceClassName": "class-a"}]}]));
    let plugin = DynamicResources::new(store.clone());
    let snapshot = Snapshot::from_nodes([node()]);
    let (_, status) = plugin.pre_filter(&mut CycleState::new(), &pod(), &snapshot);
    assert!(status.is_success(), "{status:?}");
    with(&store, |f| f.set_enabled(Feature::DRAPrioritizedList, false));
    let (_, status) = plugin.pre_filter(&mut CycleState::new(), &pod(), &snapshot);
    assert_eq!(status.code(), Code::Unschedulable);
    assert_eq!(
        status.message(),
        "resource claim default/claim-0, request req-0: has subrequests, but the DRAPrioritizedList feature is disabled"
    );
}

#[test]
fn prioritized_list_off_scores_nothing() {
    // upstream Score returns 0 without DRAPrioritizedList, also for claims allocated
    // earlier from a subrequest.
    let store = store(&json!([{"name": "device-1"}]));
    let earlier: ResourceClaim =
        serde_json::from_value(json!({"metadata": {"name": "earlier", "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "req-0", "firstAvailable": [
            {"name": "sub-0", "deviceClassName": "class-a"}]}]}},
        "status": {"allocation": {"devices": {"results": [
            {"request": "req-0/sub-0", "driver": DRIVER, "pool": "elsewhere", "device": "d"}]}}}}))
        .unwrap();
    store.add_claim(earlier).unwrap();
    add_claim(&store, &json!([{"name": "req-0", "exactly": {"deviceClassName": "class-a"}}]));
    let mut p = pod().pod.as_ref().clone();
    p.spec.resource_claims.push(PodResourceClaim {
        name: "e".into(),
        resource_claim_name: Some("earlier".into()),
        resource_claim_template_name: None,
        pod_group_resource_claim: None,
    });
    let p = PodInfo::new(p).unwrap();
    let plugin = DynamicResources::new(store.clone());
    let snapshot = Snapshot::from_nodes([node()]);
    let score_of = |plugin: &DynamicResources| {
        let mut state = CycleState::new();
        let (_, status) = plugin.pre_filter(&mut state, &p, &snapshot);
        assert!(status.is_success(), "{status:?}");
        plugin.score(&state, &p, &node()).unwrap()
    };
    assert_eq!(score_of(&plugin), 8);
    with(&store, |f| f.set_enabled(Feature::DRAPrioritizedList, false));
    assert_eq!(score_of(&plugin), 0);
}

#[test]
fn admin_access_off_fails_filter_with_an_error() {
    // upstream `validateDeviceRequest`: "claim ..., request ...: admin access is
    // requested, but the feature is disabled", an Error status from Filter.
    let store = store(&json!([{"name": "device-1"}]));
    add_claim(&store, &json!([{"name": "req-0", "exactly": {"deviceClassName": "class-a", "adminAccess": true}}]));
    assert!(fits(&store));
    with(&store, |f| f.set_enabled(Feature::DRAAdminAccess, false));
    assert_eq!(
        allocate(&store).unwrap_err(),
        GatherError::Alloc(AllocError::AdminAccessDisabled {
            claim: "default/claim-0".into(),
            request: "req-0".into()
        })
    );
    let status = filter(store);
    assert_eq!(status.code(), Code::Error);
    assert_eq!(
        status.message(),
        "claim default/claim-0, request req-0: admin access is requested, but the feature is disabled"
    );
}

/// A device shared by allocations that take one unit of "mem" each (by default).
fn shared_device() -> Value {
    json!([{"name": "device-1", "allowMultipleAllocations": true,
        "capacity": {"mem": {"value": "4", "requestPolicy": {"default": "1", "validRange": {"min": "1"}}}}}])
}

fn result_of(store: &DraStore) -> schedkit::dra::DeviceRequestAllocationResult {
    match allocate(store).unwrap() {
        NodeResult::Fit(list) => list[0].1.devices.results[0].clone(),
        NodeResult::NoFit(d) => panic!("expected a fit, got {d}"),
    }
}

#[test]
fn consumable_capacity_off_allocates_shared_devices_exclusively() {
    // upstream `allocateDevice` reads `allowMultipleAllocations` only with
    // DRAConsumableCapacity: off, the device is allocated whole, without a share ID or
    // consumed capacity.
    let store = store(&shared_device());
    add_claim(&store, &json!([{"name": "req-0", "exactly": {"deviceClassName": "class-a"}}]));
    let shared = result_of(&store);
    assert!(shared.share_id.is_some() && shared.consumed_capacity.contains_key("mem"), "{shared:?}");
    with(&store, |f| f.set_enabled(Feature::DRAConsumableCapacity, false));
    let whole = result_of(&store);
    assert!(whole.share_id.is_none() && whole.consumed_capacity.is_empty(), "{whole:?}");

    // upstream `dynamicresources.go` PreFilter (`ListAllAllocatedDevices` when the
    // feature is off): an existing allocation of a share holds the whole device.
    let held: ResourceClaim = serde_json::from_value(json!({"metadata": {"name": "held", "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "req-0", "exactly": {"deviceClassName": "class-a"}}]}},
        "status": {"allocation": {"devices": {"results": [{"request": "req-0", "driver": DRIVER, "pool": "pool-1",
            "device": "device-1", "shareID": "6a1c7a4e-0000-4000-8000-000000000001", "consumedCapacity": {"mem": "1"}}]}}}}))
    .unwrap();
    store.add_claim(held).unwrap();
    assert!(!fits(&store));
    with(&store, |f| f.set_enabled(Feature::DRAConsumableCapacity, true));
    assert!(fits(&store));
}

#[test]
fn consumable_capacity_off_fails_capacity_requests_with_an_error() {
    // upstream `Allocate`: "claim ..., request ...: has capacity requests, but the
    // DRAConsumableCapacity feature is disabled" (or "subrequest ..." for a
    // `firstAvailable` entry), an Error status from Filter; checked before admin access.
    let store = store(&shared_device());
    add_claim(
        &store,
        &json!([{"name": "req-0", "exactly": {"deviceClassName": "class-a", "adminAccess": true,
            "capacity": {"requests": {"mem": "2"}}}}]),
    );
    assert!(fits(&store));
    with(&store, |f| {
        f.set_enabled(Feature::DRAConsumableCapacity, false);
        f.set_enabled(Feature::DRAAdminAccess, false);
    });
    assert_eq!(
        allocate(&store).unwrap_err(),
        GatherError::Alloc(AllocError::ConsumableCapacityDisabled {
            claim: "default/claim-0".into(),
            request: "req-0".into(),
            subrequest: false
        })
    );
    let status = filter(store);
    assert_eq!(status.code(), Code::Error);
    assert_eq!(
        status.message(),
        "claim default/claim-0, request req-0: has capacity requests, but the DRAConsumableCapacity feature is disabled"
    );

    let store = self::store(&shared_device());
    add_claim(
        &store,
        &json!([{"name": "req-0", "firstAvailable": [{"name": "plain", "deviceClassName": "class-a"},
            {"name": "half", "deviceClassName": "class-a", "capacity": {"requests": {"mem": "2"}}}]}]),
    );
    assert!(fits(&store));
    with(&store, |f| f.set_enabled(Feature::DRAConsumableCapacity, false));
    assert_eq!(
        allocate(&store).unwrap_err().to_string(),
        "claim default/claim-0, subrequest half: has capacity requests, but the DRAConsumableCapacity feature is disabled"
    );
}

#[test]
fn device_taints_off_ignores_taints() {
    // upstream `allocateDevice`: taints are checked only with DRADeviceTaints.
    let store = store(&json!([{"name": "device-1", "taints": [{"key": "k", "effect": "NoSchedule"}]}]));
    add_claim(&store, &json!([{"name": "req-0", "exactly": {"deviceClassName": "class-a"}}]));
    assert!(!fits(&store));
    with(&store, |f| f.set_enabled(Feature::DRADeviceTaints, false));
    assert!(fits(&store));
}

#[test]
fn partitionable_devices_off() {
    // upstream `GatherPools` skips slices with shared counters or per-device node
    // selection, and `allocateDevice` refuses devices that consume counters.
    let store = store(&json!([{"name": "device-1",
        "consumesCounters": [{"counterSet": "set-0", "counters": {"mem": {"value": "1"}}}]}]));
    store
        .add_slice(
            serde_json::from_value(json!({"metadata": {"name": "counters"},
                "spec": {"driver": DRIVER, "nodeName": "node-1",
                    "pool": {"name": "pool-1", "generation": 1, "resourceSliceCount": 2},
                    "sharedCounters": [{"name": "set-0", "counters": {"mem": {"value": "4"}}}]}}))
            .unwrap(),
        )
        .unwrap();
    // The pool now has two slices: the device slice announces two as well.
    store
        .add_slice(
            serde_json::from_value(json!({"metadata": {"name": "slice-1"},
                "spec": {"driver": DRIVER, "nodeName": "node-1",
                    "pool": {"name": "pool-1", "generation": 1, "resourceSliceCount": 2},
                    "devices": [{"name": "device-1",
                        "consumesCounters": [{"counterSet": "set-0", "counters": {"mem": {"value": "1"}}}]}]}}))
            .unwrap(),
        )
        .unwrap();
    store
        .add_slice(
            serde_json::from_value(json!({"metadata": {"name": "per-device"},
                "spec": {"driver": DRIVER, "perDeviceNodeSelection": true,
                    "pool": {"name": "pool-2", "generation": 1, "resourceSliceCount": 1},
                    "devices": [{"name": "device-2", "nodeName": "node-1"}]}}))
            .unwrap(),
        )
        .unwrap();
    add_claim(&store, &json!([{"name": "req-0", "exactly": {"deviceClassName": "class-a", "count": 2}}]));
    assert!(fits(&store));
    with(&store, |f| f.set_enabled(Feature::DRAPartitionableDevices, false));
    // Both the counter slice and the per-device slice are skipped: pool-2 is gone and
    // pool-1, one of its two slices left, is incomplete; device-1 matches but is not
    // available (it also consumes counters, which alone would rule it out).
    let NodeResult::NoFit(d) = allocate(&store).unwrap() else { panic!("must not fit") };
    assert!(d.to_string().contains("0 of 2 requested devices available (1 match)"), "{d}");
}

#[test]
fn extended_resource_off_backs_nothing() {
    // Without DRAExtendedResource upstream neither maps extended resources to device
    // classes in PreFilter/Filter nor counts their devices in NodeResourcesFit.
    let store = store(&json!([{"name": "device-1"}]));
    let class: schedkit::dra::DeviceClass = serde_json::from_value(json!({"metadata": {"name": "gpu"},
        "spec": {"extendedResourceName": "example.com/gpu",
            "selectors": [{"cel": {"expression": format!("device.driver == \"{DRIVER}\"")}}]}}))
    .unwrap();
    store.add_class(class).unwrap();
    assert_eq!(store.device_class_for_resource("example.com/gpu").as_deref(), Some("gpu"));
    assert!(store.extended_device_counts(&["example.com/gpu"]).is_some());
    with(&store, |f| f.set_enabled(Feature::DRAExtendedResource, false));
    assert_eq!(store.device_class_for_resource("example.com/gpu"), None);
    assert!(store.extended_device_counts(&["example.com/gpu"]).is_none());
}
