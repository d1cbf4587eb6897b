//! Claims shared by a PodGroup (KEP-5729, gate `DRAWorkloadResourceClaims`) through the
//! scheduler: a pod's `podGroupResourceClaim` resolves through its PodGroup, the first
//! member allocates the one claim and later members reuse it, `reservedFor` names the
//! PodGroup, PostFilter releases the group's reservation when no member is scheduled and
//! then deallocates, and the gate off leaves such pods waiting with upstream's reason.
//!
//! Upstream references: `k8s.io/dynamic-resource-allocation/resourceclaim/resourceclaim.go`
//! (`Name`, `BindTo`, `IsReservedForPod`), KEP-5729 §"ResourceClaim Lifecycle" and
//! §"Finding Pods Using a ResourceClaim"; `pkg/controller/resourceclaim/controller_test.go`
//! `TestSyncHandler` rows "create for PodGroup" (one claim per group, named in the
//! group's status).

use std::sync::{Arc, Mutex};

use schedkit::dra::{
    DraStore, POD_GROUP_CONSUMER_API_GROUP, POD_GROUP_CONSUMER_RESOURCE, ResourceClaim, ResourceClaimTemplate,
    ResourceSlice,
};
use schedkit::framework::{Feature, FeatureGates, Handle, PluginRef};
use schedkit::model::workload::{PodGroup, PodGroupResourceClaim, PodGroupResourceClaimStatus};
use schedkit::model::{Pod, PodResourceClaim};
use schedkit::plugins::dynamic_resources::ClaimStatusWriter;
use schedkit::plugins::{default_profile_config, default_registry};
use schedkit::scheduler::{PodState, Scheduler};
use schedkit::testing::{NodeBuilder, PodBuilder};
use serde_json::json;

const DRIVER: &str = "gpu.nvidia.com";

fn node_slice(i: usize) -> ResourceSlice {
    let devices: Vec<_> = (0..2).map(|g| json!({"name": format!("gpu-{g}")})).collect();
    serde_json::from_value(json!({
        "metadata": {"name": format!("node-{i}-gpu")},
        "spec": {"driver": DRIVER, "nodeName": format!("node-{i}"),
                 "pool": {"name": format!("node-{i}"), "generation": 1, "resourceSliceCount": 1},
                 "devices": devices}
    }))
    .unwrap()
}

fn claim(name: &str) -> ResourceClaim {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": DRIVER, "count": 1}}]}}
    }))
    .unwrap()
}

#[derive(Default)]
struct Recorder(Mutex<Vec<ResourceClaim>>);

impl ClaimStatusWriter for Recorder {
    fn update_status(&self, claim: &ResourceClaim) -> Result<(), String> {
        self.0.lock().unwrap().push(claim.clone());
        Ok(())
    }
}

fn gates(on: bool) -> FeatureGates {
    FeatureGates::default()
        .with(Feature::GenericWorkload, true)
        .with(Feature::GangScheduling, true)
        .with(Feature::DRAWorkloadResourceClaims, on)
}

/// Default profile + DynamicResources from the registry (which hands the store the
/// scheduler's PodGroups), `nodes` nodes with two GPUs each.
fn scheduler(gates: FeatureGates, nodes: usize) -> (Scheduler, Arc<DraStore>, Arc<Recorder>) {
    let store = Arc::new(DraStore::new());
    store
        .add_class(
            serde_json::from_value(json!({"metadata": {"name": DRIVER},
                "spec": {"selectors": [{"cel": {"expression": "device.driver == \"gpu.nvidia.com\""}}]}}))
            .unwrap(),
        )
        .unwrap();
    let writer = Arc::new(Recorder::default());
    let handle = Handle::default();
    handle.set_feature_gates(gates);
    handle.set_shared(store.clone());
    handle.set_shared(Arc::new(writer.clone() as Arc<dyn ClaimStatusWriter>));
    let mut cfg = default_profile_config();
    cfg.plugins.multi_point.enabled.push(PluginRef { name: "DynamicResources".into(), weight: None });
    let profile = default_registry().build_profile(&cfg, &handle).unwrap();
    let sched = Scheduler::builder().handle(handle).profile(profile).build();
    for i in 0..nodes {
        sched.add_node(NodeBuilder::new(&format!("node-{i}")).cpu("8").memory("64Gi").pods(110).build()).unwrap();
        store.add_slice(node_slice(i)).unwrap();
    }
    (sched, store, writer)
}

fn group(min: i32, claim: PodGroupResourceClaim) -> PodGroup {
    let mut g = PodGroup::gang("default", "job", min);
    g.metadata.uid = "job-uid".into();
    g.spec.resource_claims = vec![claim];
    g
}

fn by_name(name: &str, claim: &str) -> PodGroupResourceClaim {
    PodGroupResourceClaim { name: name.into(), resource_claim_name: Some(claim.into()), ..Default::default() }
}

fn member(name: &str, group_claim: &str) -> Pod {
    PodBuilder::new(name)
        .uid(name)
        .cpu("1")
        .pod_group_name("job")
        .with(|p| {
            p.spec.resource_claims.push(PodResourceClaim {
                name: "gpu".into(),
                pod_group_resource_claim: Some(group_claim.into()),
                ..Default::default()
            });
        })
        .build()
}

fn is_group_ref(r: &schedkit::dra::ResourceClaimConsumerReference) -> bool {
    r.api_group == POD_GROUP_CONSUMER_API_GROUP
        && r.resource == POD_GROUP_CONSUMER_RESOURCE
        && r.name == "job"
        && r.uid == "job-uid"
}

#[test]
fn the_gang_shares_one_allocation_reserved_for_the_group() {
    let (mut s, store, writer) = scheduler(gates(true), 3);
    store.add_claim(claim("shared")).unwrap();
    s.events().add_pod_group(group(3, by_name("gpu", "shared")));
    for i in 0..3 {
        s.add_pod(member(&format!("w{i}"), "gpu")).unwrap();
    }
    let run = s.run_until_idle();
    assert_eq!((run.bound, run.failed, run.waiting), (3, 0, 0), "{run:?}");
    let c = store.claim("default", "shared").unwrap();
    let st = c.status.as_ref().unwrap();
    let a = st.allocation.as_ref().unwrap();
    assert_eq!(a.devices.results.len(), 1, "allocated once, by the first member");
    assert_eq!(st.reserved_for.len(), 1, "{:?}", st.reserved_for);
    assert!(is_group_ref(&st.reserved_for[0]), "reserved for the PodGroup, not a pod: {:?}", st.reserved_for);
    // Every member runs where the one device is.
    let pool = a.devices.results[0].pool.clone();
    for i in 0..3 {
        assert_eq!(s.cache().lock().pod_node(&format!("w{i}")), Some(pool.as_str()), "w{i}");
    }
    assert!(
        writer
            .0
            .lock()
            .unwrap()
            .iter()
            .all(|c| { c.status.as_ref().is_none_or(|s| s.reserved_for.iter().all(is_group_ref)) })
    );
    assert!(store.audit().double_allocated.is_empty());
}

#[test]
fn a_template_claim_is_made_once_per_group() {
    let (mut s, store, _) = scheduler(gates(true), 2);
    let template: ResourceClaimTemplate = serde_json::from_value(json!({
        "metadata": {"name": "gpu-template", "namespace": "default"},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": DRIVER}}]}}}
    }))
    .unwrap();
    store.add_template(template).unwrap();
    let mut g = group(
        2,
        PodGroupResourceClaim {
            name: "gpu".into(),
            resource_claim_template_name: Some("gpu-template".into()),
            ..Default::default()
        },
    );
    assert_eq!(store.instantiate_pod_group_template(&g, "gpu").unwrap(), "job-gpu");
    // A name the controller recorded in the group's status wins.
    g.status.resource_claim_statuses =
        vec![PodGroupResourceClaimStatus { name: "gpu".into(), resource_claim_name: Some("job-gpu-x7k2".into()) }];
    assert_eq!(store.instantiate_pod_group_template(&g, "gpu").unwrap(), "job-gpu-x7k2");
    s.events().add_pod_group(g);
    for i in 0..2 {
        s.add_pod(member(&format!("w{i}"), "gpu")).unwrap();
    }
    let run = s.run_until_idle();
    assert_eq!(run.bound, 2, "{run:?}");
    let c = store.claim("default", "job-gpu-x7k2").unwrap();
    assert!(c.status.as_ref().unwrap().reserved_for.iter().all(is_group_ref));
    assert!(store.claim("default", "job-gpu").unwrap().status.is_none(), "the unused one stays unallocated");
}

#[test]
fn with_the_gate_off_the_reference_is_unsupported() {
    let (mut s, store, _) = scheduler(gates(false), 1);
    store.add_claim(claim("shared")).unwrap();
    s.events().add_pod_group(group(1, by_name("gpu", "shared")));
    s.add_pod(member("w0", "gpu")).unwrap();
    assert_eq!(s.run_until_idle().bound, 0);
    assert_eq!(s.pod_state("w0"), Some(PodState::Gated));
    assert_eq!(s.queue().lock().unschedulable_plugins("w0"), ["DynamicResources"]);
    let why = store.claims_ready(&member("w0", "gpu")).unwrap_err().to_string();
    assert_eq!(why, "Pod default/w0, spec.resourceClaim gpu: none of the supported fields are set");
}

#[test]
fn a_claim_the_group_does_not_have_waits() {
    let (mut s, store, _) = scheduler(gates(true), 1);
    store.add_claim(claim("shared")).unwrap();
    s.events().add_pod_group(group(1, by_name("gpu", "shared")));
    s.add_pod(member("w0", "nic")).unwrap();
    assert_eq!(s.run_until_idle().bound, 0);
    assert_eq!(s.pod_state("w0"), Some(PodState::Gated));
    let why = store.claims_ready(&member("w0", "nic")).unwrap_err().to_string();
    assert_eq!(why, "PodGroup default/job does not have claim nic requested by Pod w0");
}

/// An allocated claim stuck on a node that is gone, reserved for the group.
fn stuck_claim() -> ResourceClaim {
    let mut c = claim("shared");
    c.status = Some(
        serde_json::from_value(json!({
            "allocation": {
                "devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": "node-9", "device": "gpu-0"}]},
                "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                    {"key": "metadata.name", "operator": "In", "values": ["node-9"]}]}]}},
            "reservedFor": [{"apiGroup": POD_GROUP_CONSUMER_API_GROUP, "resource": POD_GROUP_CONSUMER_RESOURCE,
                             "name": "job", "uid": "job-uid"}]
        }))
        .unwrap(),
    );
    c
}

#[test]
fn post_filter_releases_an_idle_group_then_deallocates() {
    let (mut s, store, writer) = scheduler(gates(true), 1);
    store.add_claim(stuck_claim()).unwrap();
    s.events().add_pod_group(group(1, by_name("gpu", "shared")));
    // No member is scheduled: the group's reservation goes first ...
    let err = s.schedule_pod(member("w0", "gpu")).unwrap_err();
    assert!(err.to_string().contains("removed reservation of ResourceClaim shared for PodGroup job"), "{err}");
    let st = store.claim("default", "shared").unwrap().status.clone().unwrap();
    assert!(st.reserved_for.is_empty() && st.allocation.is_some(), "{st:?}");
    assert!(writer.0.lock().unwrap().last().unwrap().status.as_ref().unwrap().reserved_for.is_empty());
    // ... then, reserved for nobody, it is deallocated like any claim ...
    let err = s.schedule_pod(member("w0", "gpu")).unwrap_err();
    assert!(err.to_string().contains("deallocation of ResourceClaim completed"), "{err}");
    assert!(store.claim("default", "shared").unwrap().status.is_none());
    // ... and the next attempt allocates it afresh.
    let b = s.schedule_pod(member("w0", "gpu")).unwrap();
    assert_eq!(b.node(), "node-0");
}

#[test]
fn a_scheduled_member_keeps_the_group_reservation() {
    let (mut s, store, _) = scheduler(gates(true), 1);
    store.add_claim(stuck_claim()).unwrap();
    s.events().add_pod_group(group(1, by_name("gpu", "shared")));
    // One member already runs (on the lost node, as far as the cache knows nothing).
    let mut running = member("w-running", "gpu");
    running.spec.node_name = "node-0".into();
    s.add_pod(running).unwrap();
    let err = s.schedule_pod(member("w0", "gpu")).unwrap_err();
    assert!(!err.to_string().contains("removed reservation"), "{err}");
    assert!(!err.to_string().contains("deallocation"), "KEP-5729: never deallocated while reserved for a group: {err}");
    let st = store.claim("default", "shared").unwrap().status.clone().unwrap();
    assert!(st.reserved_for.iter().any(is_group_ref) && st.allocation.is_some());
}
