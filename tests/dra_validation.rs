//! Bad input: typed errors at load time, never a panic while scheduling.

use serde_json::{Value, json};

use schedkit::dra::{AllocError, DraError, DraStore, GatherError, ResourceClaim, ResourceSlice};
use schedkit::model::Labels;

fn store() -> DraStore {
    let s = DraStore::new();
    s.add_class(
        serde_json::from_value(json!({"metadata": {"name": "gpu"},
            "spec": {"selectors": [{"cel": {"expression": "device.driver == \"gpu.example.com\""}}]}}))
        .unwrap(),
    )
    .unwrap();
    s
}

fn claim(requests: Value, constraints: Value) -> ResourceClaim {
    let mut v = json!({"metadata": {"name": "c", "namespace": "ns"}, "spec": {"devices": {}}});
    v["spec"]["devices"]["requests"] = requests;
    v["spec"]["devices"]["constraints"] = constraints;
    serde_json::from_value(v).unwrap()
}

fn slice(spec: Value) -> ResourceSlice {
    let mut v = json!({"metadata": {"name": "s"}});
    v["spec"] = spec;
    serde_json::from_value(v).unwrap()
}

fn base_spec(devices: Value) -> Value {
    let mut v = json!({"driver": "gpu.example.com", "nodeName": "n",
        "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1}});
    v["devices"] = devices;
    v
}

#[test]
fn missing_device_class() {
    let err = store()
        .add_claim(claim(json!([{"name": "r", "exactly": {"deviceClassName": "nope"}}]), json!([])))
        .unwrap_err();
    assert_eq!(err, DraError::MissingDeviceClass { claim: "ns/c".into(), request: "r".into(), class: "nope".into() });
    assert_eq!(err.to_string(), "ResourceClaim ns/c: request r: DeviceClass \"nope\" not found");
}

#[test]
fn selector_that_fails_to_compile_names_the_claim_and_position() {
    let err = store()
        .add_claim(claim(
            json!([{"name": "r", "firstAvailable": [{"name": "s", "deviceClassName": "gpu",
                "selectors": [{"cel": {"expression": "device.attributes[\"x\"].y =="}}]}]}]),
            json!([]),
        ))
        .unwrap_err();
    let DraError::BadSelector { object, index, source, .. } = &err else { panic!("{err}") };
    assert_eq!(object, "ResourceClaim ns/c, request r/s");
    assert_eq!(*index, 0);
    assert!(source.position().is_some(), "the compiler's position is kept: {source:?}");
    assert!(err.to_string().starts_with("ResourceClaim ns/c, request r/s: selector #0"), "{err}");
    // A class with a bad selector says which class.
    let bad_class = serde_json::from_value(json!({"metadata": {"name": "bad"},
        "spec": {"selectors": [{"cel": {"expression": "device.nope"}}]}}))
    .unwrap();
    let err = store().add_class(bad_class).unwrap_err();
    assert!(err.to_string().starts_with("DeviceClass bad: selector #0"), "{err}");
}

#[test]
fn count_zero_and_negative() {
    for count in [0, -3] {
        let err = store()
            .add_claim(claim(json!([{"name": "r", "exactly": {"deviceClassName": "gpu", "count": count}}]), json!([])))
            .unwrap_err();
        assert_eq!(err, DraError::InvalidCount { claim: "ns/c".into(), request: "r".into(), count });
    }
}

#[test]
fn structural_claim_errors() {
    let s = store();
    let cases = [
        (json!([{"name": "r"}]), json!([]), "exactly one of exactly and firstAvailable"),
        (
            json!([{"name": "r", "exactly": {"deviceClassName": "gpu"}}, {"name": "r", "exactly": {"deviceClassName": "gpu"}}]),
            json!([]),
            "repeated",
        ),
        (
            json!([{"name": "r", "exactly": {"deviceClassName": "gpu"}}]),
            json!([{"matchAttribute": "gpu.example.com/numa", "requests": ["zz"]}]),
            "unknown request",
        ),
        (
            json!([{"name": "r", "exactly": {"deviceClassName": "gpu"}}]),
            json!([{"matchAttribute": "numa"}]),
            "fully qualified",
        ),
        (json!([{"name": "r", "exactly": {"deviceClassName": "gpu"}}]), json!([{}]), "exactly one of matchAttribute"),
    ];
    for (requests, constraints, want) in cases {
        let err = s.add_claim(claim(requests, constraints)).unwrap_err();
        assert!(matches!(err, DraError::InvalidClaim { .. }), "{err}");
        assert!(err.to_string().contains(want), "{err} lacks {want}");
    }
}

#[test]
fn duplicate_device_names_in_a_pool() {
    let s = store();
    let err = s.add_slice(slice(base_spec(json!([{"name": "gpu-0"}, {"name": "gpu-0"}])))).unwrap_err();
    assert_eq!(err, DraError::DuplicateDevice { slice: "s".into(), pool: "p".into(), device: "gpu-0".into() });
    // Across two slices of one pool the API server accepts them, and so does the store:
    // upstream pool gathering makes the pool invalid where both slices are seen
    // (`dra_allocator.rs`, "duplicate-slice").
    let mut a = slice(base_spec(json!([{"name": "gpu-0"}])));
    a.spec.pool.resource_slice_count = 2;
    s.add_slice(a.clone()).unwrap();
    let mut b = a;
    b.metadata.name = "s2".into();
    s.add_slice(b).unwrap();
}

#[test]
fn counter_sets_and_devices_in_one_slice() {
    // upstream `validation.go`, `validateResourceSliceSpec` ("only one of `sharedCounters`
    // or `devices` is allowed", since v1.35 for every served version): rejected with the
    // slice's name, whatever the devices consume.
    let mut spec = base_spec(json!([{"name": "gpu-0",
        "consumesCounters": [{"counterSet": "set", "counters": {"memory": {"value": "8Gi"}}}]}]));
    spec["sharedCounters"] = json!([{"name": "set", "counters": {"memory": {"value": "40Gi"}}}]);
    let s = store();
    let err = s.add_slice(slice(spec)).unwrap_err();
    assert_eq!(err, DraError::CountersWithDevices { slice: "s".into() });
    assert_eq!(err.to_string(), "ResourceSlice s: only one of sharedCounters and devices may be set");
    // Each on its own is fine.
    let mut counters = base_spec(json!([]));
    counters["sharedCounters"] = json!([{"name": "set", "counters": {"memory": {"value": "40Gi"}}}]);
    s.add_slice(slice(counters)).unwrap();
}

#[test]
fn bad_attributes_and_node_selection() {
    let s = store();
    let err = s
        .add_slice(slice(base_spec(json!([{"name": "g", "attributes": {"v": {"int": 1, "string": "x"}}}]))))
        .unwrap_err();
    assert!(err.to_string().contains("exactly one of int, bool, string, version"), "{err}");
    let err =
        s.add_slice(slice(base_spec(json!([{"name": "g", "attributes": {"v": {"version": "1.0"}}}])))).unwrap_err();
    assert!(err.to_string().contains("bad version"), "{err}");
    let mut spec = base_spec(json!([{"name": "g"}]));
    spec["allNodes"] = json!(true);
    let err = s.add_slice(slice(spec)).unwrap_err();
    // upstream validation_resourceslice_test.go "bad-node-selection-all-nodes".
    assert!(err.to_string().ends_with("exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required, but multiple fields are set"), "{err}");
    // A counter-set slice needs a node selection too (validateResourceSliceSpec checks
    // every slice).
    let err = s
        .add_slice(slice(json!({"driver": "gpu.example.com",
            "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
            "sharedCounters": [{"name": "set", "counters": {"mem": {"value": "1"}}}]})))
        .unwrap_err();
    assert!(
        err.to_string()
            .ends_with("exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"),
        "{err}"
    );
}

#[test]
fn class_removed_after_load_is_an_error_not_a_panic() {
    let s = store();
    s.add_slice(slice(base_spec(json!([{"name": "g"}])))).unwrap();
    s.add_claim(claim(json!([{"name": "r", "exactly": {"deviceClassName": "gpu"}}]), json!([]))).unwrap();
    s.remove_class("gpu");
    let err = s.allocate_claims(&[("ns", "c")], "n", &Labels::default()).unwrap_err();
    assert!(matches!(err, GatherError::Alloc(AllocError::MissingDeviceClass { .. })), "{err}");
}

#[test]
fn selector_runtime_errors_fail_allocation_as_upstream() {
    // upstream allocator.go: a selector that errors on a device (here: reading an
    // attribute the device lacks without has()) fails the allocation with the error.
    let s = store();
    s.add_slice(slice(base_spec(json!([{"name": "g"}])))).unwrap();
    s.add_claim(claim(
        json!([{"name": "r", "exactly": {"deviceClassName": "gpu",
            "selectors": [{"cel": {"expression": "device.attributes[\"gpu.example.com\"].model == \"x\""}}]}}]),
        json!([]),
    ))
    .unwrap();
    let err = s.allocate_claims(&[("ns", "c")], "n", &Labels::default()).unwrap_err();
    assert!(matches!(err, GatherError::Alloc(AllocError::SelectorRuntime { .. })), "{err}");
    assert!(err.to_string().starts_with("claim ns/c, request r: selector #0: CEL runtime error"), "{err}");
    // Guarded with has(), the same device is simply not selected.
    s.add_claim(claim(
        json!([{"name": "r", "exactly": {"deviceClassName": "gpu",
            "selectors": [{"cel": {"expression": "has(device.attributes[\"gpu.example.com\"].model) && device.attributes[\"gpu.example.com\"].model == \"x\""}}]}}]),
        json!([]),
    ))
    .unwrap();
    let res = s.allocate_claims(&[("ns", "c")], "n", &Labels::default()).unwrap();
    assert!(matches!(res, schedkit::dra::NodeResult::NoFit(_)));
}
