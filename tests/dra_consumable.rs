//! Consumable capacity (KEP-5075): devices with `allowMultipleAllocations` are shared by
//! allocations that each consume part of a capacity, following its `requestPolicy`
//! (field semantics from the `resource.k8s.io/v1` API reference). The device below is the
//! OpenShift DRA docs' "device that allows multiple allocations and has consumable
//! capacity" example.

use serde_json::{Value, json};

use schedkit::dra::{Audit, DraStore, NodeResult, ResourceClaim};
use schedkit::model::{Labels, Pod, PodResourceClaim};

/// A store with the example device class and no slices.
fn with_class() -> DraStore {
    let s = DraStore::new();
    s.add_class(
        serde_json::from_value(json!({"metadata": {"name": "example-device-class"},
            "spec": {"selectors": [{"cel": {"expression": "device.driver == \"dra.example.com\""}}]}}))
        .unwrap(),
    )
    .unwrap();
    s
}

fn store(device: Value) -> DraStore {
    let s = with_class();
    let mut slice = json!({"kind": "ResourceSlice", "apiVersion": "resource.k8s.io/v1",
        "metadata": {"name": "resourceslice"},
        "spec": {"nodeName": "worker-1", "pool": {"name": "pool", "generation": 1, "resourceSliceCount": 1},
                 "driver": "dra.example.com"}});
    slice["spec"]["devices"] = Value::Array(vec![device]);
    s.add_slice(serde_json::from_value(slice).unwrap()).unwrap();
    s
}

fn policy_device() -> Value {
    json!({"name": "gpu-0", "allowMultipleAllocations": true, "attributes": {"name": {"string": "gpu-0"}},
        "capacity": {"memory": {"requestPolicy": {"default": "6Gi",
            "validRange": {"min": "2Gi", "max": "8Gi", "step": "2Gi"}}, "value": "10Gi"}}})
}

fn claim(name: &str, memory: Option<&str>) -> ResourceClaim {
    let mut exactly = json!({"deviceClassName": "example-device-class"});
    if let Some(m) = memory {
        exactly["capacity"] = json!({"requests": {"memory": m}});
    }
    let mut c = json!({"metadata": {"name": name, "namespace": "default"}, "spec": {"devices": {}}});
    c["spec"]["devices"]["requests"] = json!([{"name": "req-0"}]);
    c["spec"]["devices"]["requests"][0]["exactly"] = exactly;
    serde_json::from_value(c).unwrap()
}

fn pod(name: &str, claim: &str) -> Pod {
    let mut p = Pod::default();
    p.metadata.name = name.into();
    p.metadata.namespace = "default".into();
    p.spec.resource_claims.push(PodResourceClaim {
        name: "c".into(),
        resource_claim_name: Some(claim.into()),
        resource_claim_template_name: None,
        pod_group_resource_claim: None,
    });
    p
}

/// Reserves and binds `claim` for a new pod; returns its consumedCapacity.memory.
fn bind(s: &DraStore, claim: &str) -> Option<String> {
    let p = pod(&format!("pod-{claim}"), claim);
    let uid = format!("uid-{claim}");
    match s.reserve(&p, &uid, "worker-1", &Labels::default()).unwrap() {
        NodeResult::Fit(list) => {
            s.commit(&p, &uid);
            let r = &list[0].1.devices.results[0];
            assert!(r.share_id.as_ref().is_some_and(|id| id.len() == 36));
            Some(r.consumed_capacity["memory"].to_string())
        }
        NodeResult::NoFit(_) => None,
    }
}

#[test]
fn request_policy_rounds_defaults_and_limits() {
    let s = store(policy_device());
    s.add_claim(claim("three", Some("3Gi"))).unwrap();
    s.add_claim(claim("unset", None)).unwrap();
    s.add_claim(claim("more", Some("2Gi"))).unwrap();
    s.add_claim(claim("too-big", Some("9Gi"))).unwrap();
    // 9Gi is above validRange.max: the device can't serve it even when empty.
    assert_eq!(bind(&s, "too-big"), None);
    // 3Gi rounds up to the next step above min: 4Gi.
    assert_eq!(bind(&s, "three").as_deref(), Some("4Gi"));
    // No request: the policy default, 6Gi. 10Gi are now consumed.
    assert_eq!(bind(&s, "unset").as_deref(), Some("6Gi"));
    assert_eq!(bind(&s, "more"), None, "the device is full");
    assert_eq!(s.audit(), Audit::default());
    // Releasing one share frees its capacity.
    s.deallocate("default", "unset");
    assert_eq!(bind(&s, "more").as_deref(), Some("2Gi"));
    assert_eq!(s.audit(), Audit::default());
}

#[test]
fn without_a_policy_an_unset_request_takes_the_whole_capacity() {
    let s = store(json!({"name": "nic-0", "allowMultipleAllocations": true,
        "capacity": {"bandwidth": {"value": "10Gi"}}}));
    let mut c = claim("whole", None);
    c.metadata.name = "whole".into();
    s.add_claim(c).unwrap();
    s.add_claim(claim("other", None)).unwrap();
    let p = pod("p", "whole");
    assert!(matches!(s.reserve(&p, "u1", "worker-1", &Labels::default()).unwrap(), NodeResult::Fit(_)));
    let q = pod("q", "other");
    assert!(matches!(s.reserve(&q, "u2", "worker-1", &Labels::default()).unwrap(), NodeResult::NoFit(_)));
    s.unreserve("u1");
    assert!(matches!(s.reserve(&q, "u2", "worker-1", &Labels::default()).unwrap(), NodeResult::Fit(_)));
}

#[test]
fn capacity_requests_on_exclusive_devices_only_filter() {
    // A device without allowMultipleAllocations serves a capacity request it can cover,
    // exclusively.
    let s = store(json!({"name": "gpu-0", "capacity": {"memory": {"value": "80Gi"}}}));
    s.add_claim(claim("fits", Some("40Gi"))).unwrap();
    s.add_claim(claim("too-big", Some("100Gi"))).unwrap();
    let res = s.allocate_claims(&[("default", "too-big")], "worker-1", &Labels::default()).unwrap();
    assert!(matches!(res, NodeResult::NoFit(_)));
    let NodeResult::Fit(list) = s.allocate_claims(&[("default", "fits")], "worker-1", &Labels::default()).unwrap()
    else {
        panic!("40Gi of an 80Gi device fits")
    };
    assert!(list[0].1.devices.results[0].other.is_empty(), "no share fields on exclusive devices");
}

#[test]
fn request_policy_needs_allow_multiple_allocations() {
    let s = DraStore::new();
    let err = s
        .add_slice(
            serde_json::from_value(json!({"metadata": {"name": "s"}, "spec": {"driver": "d", "nodeName": "n",
                "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
                "devices": [{"name": "g", "capacity": {"memory": {"value": "1Gi", "requestPolicy": {"default": "1Gi"}}}}]}}))
            .unwrap(),
        )
        .unwrap_err();
    assert!(err.to_string().contains("requestPolicy needs allowMultipleAllocations"), "{err}");
}

#[test]
fn a_device_named_twice_in_a_pool_is_one_device_to_share() {
    // Two slices of one pool, for different nodes, both name gpu-0 (the API server
    // allows it; the pool is invalid only where both are seen). Upstream tracks
    // consumed capacity by device ID, so a share taken through either entry counts
    // against both. Found by the DRA fuzz target: the second entry in slice order was
    // charged, the first stayed free, and gpu-0 was handed out twice in full.
    let s = with_class();
    for (slice, node) in [("a", "worker-2"), ("b", "worker-1")] {
        s.add_slice(
            serde_json::from_value(json!({"metadata": {"name": slice},
                "spec": {"nodeName": node, "pool": {"name": "pool", "generation": 1, "resourceSliceCount": 1},
                    "driver": "dra.example.com",
                    "devices": [{"name": "gpu-0", "allowMultipleAllocations": true,
                        "capacity": {"memory": {"value": "10Gi"}}}]}}))
            .unwrap(),
        )
        .unwrap();
    }
    s.add_claim(claim("first", None)).unwrap();
    s.add_claim(claim("second", None)).unwrap();
    let labels = Labels::default();
    let NodeResult::Fit(_) = s.reserve(&pod("p1", "first"), "uid-1", "worker-1", &labels).unwrap() else {
        panic!("the first claim takes all of gpu-0's memory on worker-1")
    };
    s.commit(&pod("p1", "first"), "uid-1");
    for node in ["worker-1", "worker-2"] {
        let res = s.reserve(&pod("p2", "second"), "uid-2", node, &labels).unwrap();
        assert!(matches!(res, NodeResult::NoFit(_)), "gpu-0 has no memory left on {node}: {res:?}");
        assert_eq!(s.audit(), Audit::default());
    }
}

#[test]
fn a_larger_older_generation_may_be_shared_beyond_a_smaller_newer_one() {
    // worker-1 sees only generation 1 of the pool (gpu-0 with 10Gi), worker-2 only
    // generation 2 (gpu-0 with 6Gi). Upstream lets each node allocate from the
    // generation it sees complete and tracks consumption by device ID: 8Gi taken on
    // worker-1 is legitimate, and leaves nothing on worker-2. The audit's bound is the
    // largest copy (found by the DRA fuzz target, which flagged the 6Gi copy).
    let s = with_class();
    for (slice, node, generation, memory) in [("old", "worker-1", 1, "10Gi"), ("new", "worker-2", 2, "6Gi")] {
        s.add_slice(
            serde_json::from_value(json!({"metadata": {"name": slice},
                "spec": {"nodeName": node, "pool": {"name": "pool", "generation": generation, "resourceSliceCount": 1},
                    "driver": "dra.example.com",
                    "devices": [{"name": "gpu-0", "allowMultipleAllocations": true,
                        "capacity": {"memory": {"value": memory}}}]}}))
            .unwrap(),
        )
        .unwrap();
    }
    s.add_claim(claim("big", Some("8Gi"))).unwrap();
    s.add_claim(claim("small", Some("1Gi"))).unwrap();
    let labels = Labels::default();
    let NodeResult::Fit(_) = s.reserve(&pod("p1", "big"), "uid-1", "worker-1", &labels).unwrap() else {
        panic!("worker-1 allocates 8Gi from generation 1's 10Gi")
    };
    s.commit(&pod("p1", "big"), "uid-1");
    assert_eq!(s.audit(), Audit::default());
    let res = s.reserve(&pod("p2", "small"), "uid-2", "worker-2", &labels).unwrap();
    assert!(matches!(res, NodeResult::NoFit(_)), "8Gi of gpu-0 are in use; generation 2 has 6Gi: {res:?}");
    let NodeResult::Fit(_) = s.reserve(&pod("p2", "small"), "uid-2", "worker-1", &labels).unwrap() else {
        panic!("1Gi more fits generation 1's 10Gi")
    };
    assert_eq!(s.audit(), Audit::default());
}
