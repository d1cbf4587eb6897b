//! Device binding conditions (KEP-5007): the allocator copies a device's binding and
//! binding failure conditions into the result and pins `bindsToNode` allocations to the
//! node; PreBind waits for the conditions on the scheduler's clock, fails on a failure
//! condition, and times out after the binding timeout (upstream
//! `pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go`, `PreBind`,
//! `isClaimReadyForBinding`, `isClaimTimeout`; `allocator_experimental.go`, `Allocate`,
//! `isSelectable`, `createNodeSelector`).

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

#[path = "support/dra.rs"]
mod dra_support;
use dra_support::driver_class;

use schedkit::dra::{
    AllocatedDeviceStatus, BindingState, Condition, DraStore, NodeResult, ResourceClaim, ResourceSlice, binding_state,
};
use schedkit::framework::{Handle, PluginRef, VirtualClock};
use schedkit::model::{Labels, Pod, PodResourceClaim};
use schedkit::plugins::dynamic_resources::DEFAULT_BINDING_TIMEOUT;
use schedkit::plugins::{default_profile_config, default_registry};
use schedkit::scheduler::{BindingCycle, Scheduler};
use schedkit::testing::{NodeBuilder, PodBuilder};

const DRIVER: &str = "fabric.example.com";

/// A fabric-attached GPU reachable from every node, which binds to the node it is
/// allocated for and needs attaching first (upstream's `device-binding-conditions` device
/// in `allocator_test.go`: conditions `condition-1`, `condition-2`, failure conditions
/// `failure-condition-1`, `failure-condition-2`, `bindsToNode: true`).
fn fabric_slice() -> ResourceSlice {
    serde_json::from_value(json!({
        "metadata": {"name": "fabric"},
        "spec": {"driver": DRIVER, "allNodes": true,
            "pool": {"name": "fabric", "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": "device-binding-conditions",
                "bindingConditions": ["condition-1", "condition-2"],
                "bindingFailureConditions": ["failure-condition-1", "failure-condition-2"],
                "bindsToNode": true}]}
    }))
    .unwrap()
}

fn store() -> Arc<DraStore> {
    let store = Arc::new(DraStore::new());
    store.add_class(driver_class("fabric", DRIVER)).unwrap();
    store.add_slice(fabric_slice()).unwrap();
    store
        .add_claim(
            serde_json::from_value(json!({"metadata": {"name": "claim", "namespace": "default"},
                "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "fabric"}}]}}}))
            .unwrap(),
        )
        .unwrap();
    store
}

#[test]
fn allocation_copies_conditions_and_binds_to_the_node() {
    let store = store();
    let res = store.allocate_claims(&[("default", "claim")], "node-1", &Labels::default()).unwrap();
    let NodeResult::Fit(list) = res else { panic!("no fit: {res:?}") };
    let a = &list[0].1;
    let r = &a.devices.results[0];
    assert_eq!(r.binding_conditions, ["condition-1", "condition-2"]);
    assert_eq!(r.binding_failure_conditions, ["failure-condition-1", "failure-condition-2"]);
    // An allNodes device alone gives no node selector; bindsToNode pins it to node-1.
    let sel = serde_json::to_value(a.node_selector.as_ref().expect("bindsToNode sets a node selector")).unwrap();
    assert_eq!(
        sel,
        json!({"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}]})
    );
}

#[test]
fn with_the_feature_off_devices_with_binding_conditions_are_not_allocated() {
    // upstream `isSelectable`: "Devices with binding conditions are not supported, feature
    // is off."
    let store = store();
    store.set_binding_conditions(false);
    let res = store.allocate_claims(&[("default", "claim")], "node-1", &Labels::default()).unwrap();
    let NodeResult::NoFit(d) = res else { panic!("allocated a device with binding conditions") };
    assert!(d.to_string().contains("0 of 1 requested devices available (0 match)"), "{d}");
    store.set_binding_conditions(true);
    assert!(matches!(
        store.allocate_claims(&[("default", "claim")], "node-1", &Labels::default()).unwrap(),
        NodeResult::Fit(_)
    ));
}

fn status(conditions: &[(&str, &str)]) -> Vec<AllocatedDeviceStatus> {
    vec![AllocatedDeviceStatus {
        driver: DRIVER.into(),
        pool: "fabric".into(),
        device: "device-binding-conditions".into(),
        conditions: conditions
            .iter()
            .map(|(k, s)| Condition { reason: "Attach".into(), message: format!("{k} is {s}"), ..Condition::new(k, s) })
            .collect(),
        ..AllocatedDeviceStatus::default()
    }]
}

fn pod(name: &str) -> Pod {
    PodBuilder::new(name)
        .cpu("1")
        .with(|p| {
            p.spec.resource_claims.push(PodResourceClaim {
                name: "gpu".into(),
                resource_claim_name: Some("claim".into()),
                resource_claim_template_name: None,
                pod_group_resource_claim: None,
            });
        })
        .build()
}

/// The default profile plus DynamicResources on a virtual clock.
fn scheduler(store: &Arc<DraStore>, clock: &VirtualClock) -> Scheduler {
    let handle = Handle::new(Arc::new(clock.clone()));
    handle.set_shared(store.clone());
    let mut cfg = default_profile_config();
    cfg.plugins.multi_point.enabled.push(PluginRef { name: "DynamicResources".into(), weight: None });
    let profile = default_registry().build_profile(&cfg, &handle).unwrap();
    let sched = Scheduler::builder().profile(profile).handle(handle).build();
    for i in 0..2 {
        sched.add_node(NodeBuilder::new(&format!("node-{i}")).cpu("8").memory("32Gi").pods(110).build()).unwrap();
    }
    sched
}

/// Runs the binding cycle on another thread (PreBind blocks while it waits).
fn bind_in_background(b: BindingCycle) -> std::thread::JoinHandle<Result<String, String>> {
    std::thread::spawn(move || b.run().map(|p| p.node_name().to_owned()).map_err(|e| e.to_string()))
}

/// Advances the clock in `step`s until the binding thread finishes or `limit` passes.
fn drive(clock: &VirtualClock, h: &std::thread::JoinHandle<Result<String, String>>, step: Duration, limit: Duration) {
    let mut waited = Duration::ZERO;
    while !h.is_finished() && waited < limit {
        std::thread::sleep(Duration::from_millis(2));
        clock.advance(step);
        waited += step;
    }
}

#[test]
fn pre_bind_waits_until_every_binding_condition_is_true() {
    let store = store();
    let clock = VirtualClock::new();
    let mut sched = scheduler(&store, &clock);
    let b = sched.schedule_pod(pod("p")).unwrap();
    let h = bind_in_background(b);
    // The allocation is recorded before the wait (upstream writes it, then polls).
    std::thread::sleep(Duration::from_millis(20));
    assert!(!h.is_finished(), "PreBind must wait for the binding conditions");
    let claim = store.claim("default", "claim").unwrap();
    assert!(claim.status.as_ref().unwrap().allocation.is_some());
    assert_eq!(binding_state(&claim), BindingState::Pending);
    // One condition true is not enough; a False failure condition does not fail it.
    store
        .update_device_status("default", "claim", status(&[("condition-1", "True"), ("failure-condition-1", "False")]))
        .unwrap();
    clock.advance(Duration::from_secs(5));
    std::thread::sleep(Duration::from_millis(20));
    assert!(!h.is_finished(), "condition-2 is not True yet");
    store
        .update_device_status("default", "claim", status(&[("condition-1", "True"), ("condition-2", "True")]))
        .unwrap();
    drive(&clock, &h, Duration::from_secs(1), Duration::from_secs(30));
    let node = h.join().unwrap().expect("binds once the conditions are true");
    assert!(node.starts_with("node-"));
    assert_eq!(binding_state(&store.claim("default", "claim").unwrap()), BindingState::Ready);
}

#[test]
fn a_true_failure_condition_fails_the_binding_and_frees_the_claim_for_another_try() {
    let store = store();
    let clock = VirtualClock::new();
    let mut sched = scheduler(&store, &clock);
    let b = sched.schedule_pod(pod("p")).unwrap();
    let h = bind_in_background(b);
    std::thread::sleep(Duration::from_millis(20));
    store
        .update_device_status("default", "claim", status(&[("condition-1", "True"), ("failure-condition-2", "True")]))
        .unwrap();
    drive(&clock, &h, Duration::from_secs(1), Duration::from_secs(30));
    let err = h.join().unwrap().expect_err("a failure condition fails PreBind");
    // upstream: "claim %s binding failed: reason=%s, message=%q"
    assert!(err.contains("claim default/claim binding failed: reason=Attach"), "{err}");
    assert!(err.contains("failure-condition-2 is True"), "{err}");
    // The next attempt finds the claim unavailable on every node and PostFilter
    // deallocates it (upstream Filter + PostFilter).
    let err = sched.schedule_pod(pod("p")).unwrap_err().to_string();
    assert!(err.contains("resourceclaim not available on the node"), "{err}");
    assert!(err.contains("deallocation of ResourceClaim completed"), "{err}");
    assert!(store.claim("default", "claim").unwrap().status.is_none());
}

#[test]
fn binding_times_out_after_the_binding_timeout() {
    let store = store();
    let clock = VirtualClock::new();
    let mut sched = scheduler(&store, &clock);
    let b = sched.schedule_pod(pod("p")).unwrap();
    let h = bind_in_background(b);
    std::thread::sleep(Duration::from_millis(20));
    // Just before the timeout it still waits.
    clock.advance(DEFAULT_BINDING_TIMEOUT.saturating_sub(Duration::from_secs(10)));
    std::thread::sleep(Duration::from_millis(20));
    assert!(!h.is_finished(), "still inside the 600 s binding timeout");
    drive(&clock, &h, Duration::from_secs(5), Duration::from_mins(1));
    let err = h.join().unwrap().expect_err("times out");
    assert!(err.contains("binding timeout"), "{err}");
    assert!(err.contains("600s"), "{err}");
}

#[test]
fn a_timed_out_allocation_is_unavailable_in_the_next_cycle() {
    // upstream Filter: an allocated claim not ready and past its allocation time plus the
    // binding timeout is unavailable, and PostFilter deallocates it.
    let store = store();
    let clock = VirtualClock::new();
    let mut sched = scheduler(&store, &clock);
    let b = sched.schedule_pod(pod("p")).unwrap();
    let plugin_wait = bind_in_background(b);
    std::thread::sleep(Duration::from_millis(20));
    drive(&clock, &plugin_wait, Duration::from_secs(30), Duration::from_mins(15));
    assert!(plugin_wait.join().unwrap().is_err());
    // The claim stays allocated (upstream leaves it to the next attempt).
    let claim: Arc<ResourceClaim> = store.claim("default", "claim").unwrap();
    assert!(claim.status.as_ref().unwrap().allocation.is_some());
    let err = sched.schedule_pod(pod("p")).unwrap_err().to_string();
    assert!(err.contains("resourceclaim not available on the node"), "{err}");
    assert!(store.claim("default", "claim").unwrap().status.is_none(), "deallocated by PostFilter");
    // Attached this time: binds.
    let b = sched.schedule_pod(pod("p")).unwrap();
    let h = bind_in_background(b);
    std::thread::sleep(Duration::from_millis(20));
    store
        .update_device_status("default", "claim", status(&[("condition-1", "True"), ("condition-2", "True")]))
        .unwrap();
    drive(&clock, &h, Duration::from_secs(1), Duration::from_secs(30));
    h.join().unwrap().unwrap();
}

#[test]
fn binding_fields_round_trip_as_yaml() {
    use serde::Deserialize;
    let text = r"
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata:
  name: fabric
spec:
  driver: fabric.example.com
  allNodes: true
  pool:
    name: fabric
    generation: 3
    resourceSliceCount: 1
  devices:
  - name: gpu-0
    bindingConditions:
    - fabric.example.com/Attached
    bindingFailureConditions:
    - fabric.example.com/AttachFailed
    bindsToNode: true
    taints:
    - key: fabric.example.com/unhealthy
      effect: None
";
    let doc = serde_json::Value::deserialize(serde_norway::Deserializer::from_str(text)).unwrap();
    let s: ResourceSlice = serde_json::from_value(doc.clone()).unwrap();
    assert_eq!(serde_json::to_value(&s).unwrap(), doc);
    let d = &s.spec.devices[0];
    assert_eq!(d.binding_conditions, ["fabric.example.com/Attached"]);
    assert_eq!(d.binds_to_node, Some(true));
    assert_eq!(d.taints[0].effect, schedkit::dra::DeviceTaintEffect::None);
    let back: ResourceSlice = serde_norway::from_str(&serde_norway::to_string(&s).unwrap()).unwrap();
    assert_eq!(back, s);
    // The informational taint does not block allocation.
    let store = DraStore::new();
    store.add_slice(s).unwrap();
    assert!(store.device_taints(DRIVER, "fabric", "gpu-0").unwrap().is_empty());
}

fn stamped(store: &DraStore) -> Option<String> {
    let p = pod("stamp");
    assert!(matches!(store.reserve(&p, "uid-stamp", "node-1", &Labels::default()).unwrap(), NodeResult::Fit(_)));
    store.commit_at(&p, "uid-stamp", Some(Duration::from_secs(1)));
    let claim = store.claim("default", "claim").unwrap();
    claim.status.as_ref().and_then(|s| s.allocation.as_ref()).and_then(|a| a.allocation_timestamp.clone())
}

#[test]
fn prebind_writes_the_allocation_timestamp_with_binding_conditions_on() {
    // upstream `bindClaim`: with DRADeviceBindingConditions on, PreBind sets
    // status.allocation.allocationTimestamp (`time.Now()`) when it is unset; the binding
    // timeout runs from that moment ("bound-claim-with-timed-out-binding").
    let on = store();
    let ts = stamped(&on).expect("timestamp written");
    let before = ts.clone();
    assert!(ts.ends_with('Z') && ts.len() >= 20 && ts.as_bytes()[10] == b'T', "{ts}");
    assert!(ts.as_str() > "2020-01-01T00:00:00Z", "{ts}");
    // YAML round trip of the allocation with the timestamp.
    let claim = on.claim("default", "claim").unwrap();
    let a = claim.status.as_ref().unwrap().allocation.clone().unwrap();
    let yaml = serde_norway::to_string(&a).unwrap();
    assert!(
        yaml.contains(&format!("allocationTimestamp: {before}")) || yaml.contains("allocationTimestamp: '"),
        "{yaml}"
    );
    let back: schedkit::dra::AllocationResult = serde_norway::from_str(&yaml).unwrap();
    assert_eq!(back, a);
    // Off: the field is not written (and devices with binding conditions are not
    // allocated, so use a plain device).
    let off = Arc::new(DraStore::new());
    off.set_binding_conditions(false);
    off.add_class(driver_class("fabric", DRIVER)).unwrap();
    off.add_slice(
        serde_json::from_value(json!({"metadata": {"name": "plain"},
            "spec": {"driver": DRIVER, "allNodes": true,
                "pool": {"name": "plain", "generation": 1, "resourceSliceCount": 1},
                "devices": [{"name": "gpu-0"}]}}))
        .unwrap(),
    )
    .unwrap();
    off.add_claim(
        serde_json::from_value(json!({"metadata": {"name": "claim", "namespace": "default"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "fabric"}}]}}}))
        .unwrap(),
    )
    .unwrap();
    assert_eq!(stamped(&off), None);
}

/// A clock standing still at `now`, whose zero is `epoch` seconds after the Unix epoch.
#[derive(Debug)]
struct WallClock {
    epoch: i128,
    now: Duration,
}

impl schedkit::framework::Clock for WallClock {
    fn now(&self) -> Duration {
        self.now
    }

    fn unix_epoch_nanos(&self) -> Option<i128> {
        Some(self.epoch * 1_000_000_000)
    }
}

/// 2026-01-01T00:00:00Z in seconds since the Unix epoch.
const ALLOCATED: i128 = 1_767_225_600;

/// Filter's verdict for a pod whose claim was allocated (waiting for its binding
/// conditions) at 2026-01-01T00:00:00Z before the store saw it.
fn filter_loaded_allocation(clock: Arc<dyn schedkit::framework::Clock>) -> schedkit::framework::Status {
    use schedkit::framework::{CycleState, FilterPlugin, PreFilterPlugin};
    use schedkit::snapshot::{NodeInfo, PodInfo, Snapshot};
    let store = store();
    let mut claim = (*store.claim("default", "claim").unwrap()).clone();
    claim.status = Some(
        serde_json::from_value(json!({"allocation": {
            "devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": "fabric",
                "device": "device-binding-conditions",
                "bindingConditions": ["condition-1", "condition-2"],
                "bindingFailureConditions": ["failure-condition-1", "failure-condition-2"]}]},
            "allocationTimestamp": "2026-01-01T00:00:00Z"}}))
        .unwrap(),
    );
    store.add_claim(claim).unwrap();
    let plugin = schedkit::plugins::dynamic_resources::DynamicResources::new(store).with_clock(clock);
    let node = NodeInfo::new(Arc::new(NodeBuilder::new("node-1").cpu("8").build()));
    let pod = PodInfo::new(pod("p")).unwrap();
    let mut state = CycleState::new();
    let (_, status) = plugin.pre_filter(&mut state, &pod, &Snapshot::from_nodes([node.clone()]));
    assert!(status.is_success(), "{status:?}");
    plugin.filter(&state, &pod, &node)
}

#[test]
fn a_loaded_allocation_times_out_from_its_allocation_timestamp() {
    // upstream `isClaimTimeout`: allocationTimestamp + bindingTimeout (600 s) before
    // time.Now(). schedkit places the timestamp on the plugin's clock through the clock's
    // wall-clock epoch: 601 s later the claim is unavailable, 599 s later it is not.
    let late = Arc::new(WallClock { epoch: ALLOCATED + 600, now: Duration::from_secs(1) });
    assert_eq!(filter_loaded_allocation(late).message(), "resourceclaim not available on the node");
    let early = Arc::new(WallClock { epoch: ALLOCATED + 598, now: Duration::from_secs(1) });
    assert!(filter_loaded_allocation(early).is_success());
    // A virtual clock has no wall-clock epoch: the timestamp can't be placed, no timeout.
    let clock = VirtualClock::new();
    clock.advance(Duration::from_secs(100_000));
    assert!(filter_loaded_allocation(Arc::new(clock)).is_success());
}
