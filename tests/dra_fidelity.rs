//! Allocator fidelity cases of issue 15 (items 5, 7, 8), ported from upstream's
//! `staging/src/k8s.io/dynamic-resource-allocation/structured/internal/allocatortesting/
//! allocator_testing.go` (`TestAllocator`; each test names its upstream case) plus the
//! list-attribute semantics of KEP-5491 (kubernetes#137190: `matchAttribute` is a
//! non-empty intersection, `distinctAttribute` pairwise disjoint, a scalar a set of one).

use serde_json::{Value, json};

use schedkit::dra::{
    AllocError, DeviceClass, DraError, DraStore, GatherError, NodeResult, ResourceClaim, ResourceSlice,
};
use schedkit::framework::Feature;
use schedkit::model::Labels;

const DRIVER_A: &str = "driver-a";

fn class_with_config(name: &str, driver: &str, config: Option<&str>) -> DeviceClass {
    let mut spec = json!({"selectors": [{"cel": {"expression": format!("device.driver == \"{driver}\"")}}]});
    if let Some(c) = config {
        spec["config"] = json!([{"opaque": {"driver": driver, "parameters": {"value": c}}}]);
    }
    serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec})).unwrap()
}

fn slice(devices: Vec<Value>) -> ResourceSlice {
    serde_json::from_value(json!({
        "metadata": {"name": "slice-1"},
        "spec": {"driver": DRIVER_A, "nodeName": "node-1",
                 "pool": {"name": "pool-1", "generation": 1, "resourceSliceCount": 1},
                 "devices": Value::Array(devices)}
    }))
    .unwrap()
}

fn dev(name: &str, attributes: Value) -> Value {
    let mut d = json!({"name": name});
    d["attributes"] = attributes;
    d
}

fn devices(n: usize) -> Vec<Value> {
    (0..n).map(|i| dev(&format!("device-{i}"), json!({}))).collect()
}

fn request(name: &str, class: &str, count: i64) -> Value {
    json!({"name": name, "exactly": {"deviceClassName": class, "count": count}})
}

fn all_request(name: &str, class: &str) -> Value {
    json!({"name": name, "exactly": {"deviceClassName": class, "allocationMode": "All"}})
}

fn claim(requests: Vec<Value>, constraints: Vec<Value>) -> ResourceClaim {
    serde_json::from_value(json!({
        "metadata": {"name": "claim-0", "namespace": "default"},
        "spec": {"devices": {"requests": Value::Array(requests), "constraints": Value::Array(constraints)}}
    }))
    .unwrap()
}

fn store(lists: bool, classes: &[DeviceClass], slices: Vec<ResourceSlice>) -> DraStore {
    let s = DraStore::new();
    s.set_feature_gates(s.feature_gates().with(Feature::DRAListTypeAttributes, lists));
    for c in classes {
        s.add_class(c.clone()).unwrap();
    }
    for sl in slices {
        s.add_slice(sl).unwrap();
    }
    s
}

fn run(s: &DraStore, c: ResourceClaim) -> Result<NodeResult, GatherError> {
    s.add_claim(c).unwrap();
    s.allocate_claims(&[("default", "claim-0")], "node-1", &Labels::default())
}

fn devices_picked(r: &Result<NodeResult, GatherError>) -> Option<Vec<String>> {
    match r.as_ref().expect("no allocation error") {
        NodeResult::Fit(list) => Some(list[0].1.devices.results.iter().map(|d| d.device.clone()).collect()),
        NodeResult::NoFit(_) => None,
    }
}

fn class_a() -> Vec<DeviceClass> {
    vec![class_with_config("class-a", DRIVER_A, None)]
}

#[test]
fn all_mode_constraint_violation_is_an_error() {
    // upstream "with-constraint-not-matching-int-attribute-all-devices"
    let s = store(
        false,
        &class_a(),
        vec![slice(vec![dev("device-1", json!({"numa": {"int": 1}})), dev("device-2", json!({"numa": {"int": 2}}))])],
    );
    let err = run(&s, claim(vec![all_request("req-0", "class-a")], vec![json!({"matchAttribute": "driver-a/numa"})]))
        .unwrap_err();
    assert!(matches!(err, GatherError::Alloc(AllocError::ConstraintViolated { .. })), "{err:?}");
    assert_eq!(
        err.to_string(),
        "claim default/claim-0, request req-0: cannot add device driver-a/pool-1/device-2 because a claim constraint would not be satisfied"
    );
}

#[test]
fn exact_count_constraint_violation_is_unschedulable() {
    // upstream "with-constraint-not-matching-int-attribute": not an error, no fit.
    let s = store(
        false,
        &class_a(),
        vec![slice(vec![dev("device-1", json!({"numa": {"int": 1}})), dev("device-2", json!({"numa": {"int": 2}}))])],
    );
    let r = run(&s, claim(vec![request("req-0", "class-a", 2)], vec![json!({"matchAttribute": "driver-a/numa"})]));
    assert_eq!(devices_picked(&r), None);
}

#[test]
fn too_many_devices_single_request() {
    // upstream "too-many-devices-single-request": fails before looking at devices.
    let s = store(false, &class_a(), vec![]);
    let err = run(&s, claim(vec![request("req-0", "class-a", 500)], vec![])).unwrap_err();
    assert_eq!(err.to_string(), "claim default/claim-0: number of requested devices 500 exceeds the claim limit of 32");
}

#[test]
fn many_devices_okay() {
    // upstream "many-devices-okay": 32 is allowed (here no devices, so no fit).
    let s = store(false, &class_a(), vec![]);
    let r = run(&s, claim(vec![request("req-0", "class-a", 32)], vec![]));
    assert_eq!(devices_picked(&r), None);
    let s = store(false, &class_a(), vec![slice(devices(32))]);
    let r = run(&s, claim(vec![request("req-0", "class-a", 32)], vec![]));
    assert_eq!(devices_picked(&r).map(|d| d.len()), Some(32));
}

#[test]
fn too_many_devices_total() {
    // upstream "too-many-devices-total": 32 + 1 over two requests.
    let s = store(false, &class_a(), vec![slice(devices(33))]);
    let err =
        run(&s, claim(vec![request("req-0", "class-a", 32), request("req-1", "class-a", 1)], vec![])).unwrap_err();
    assert!(matches!(err, GatherError::Alloc(AllocError::TooManyDevices { requested: 33, limit: 32, .. })), "{err:?}");
    assert!(err.to_string().contains("exceeds the claim limit"), "{err}");
}

#[test]
fn all_mode_counts_matching_devices_against_the_limit() {
    // upstream `Allocate`: an All request counts the devices it matches on the node.
    let s = store(false, &class_a(), vec![slice(devices(33))]);
    let err = run(&s, claim(vec![all_request("req-0", "class-a")], vec![])).unwrap_err();
    assert!(err.to_string().contains("number of requested devices 33 exceeds the claim limit of 32"), "{err}");
    let s = store(false, &class_a(), vec![slice(devices(32))]);
    assert_eq!(
        devices_picked(&run(&s, claim(vec![all_request("req-0", "class-a")], vec![]))).map(|d| d.len()),
        Some(32)
    );
}

#[test]
fn class_config_is_one_entry_per_class() {
    // upstream "with-class-device-config", and two requests of one class: one entry
    // listing both.
    let classes = vec![class_with_config("class-a", DRIVER_A, Some("classAttribute"))];
    let s = store(false, &classes, vec![slice(devices(2))]);
    let r = run(&s, claim(vec![request("req-0", "class-a", 1), request("req-1", "class-a", 1)], vec![]));
    let NodeResult::Fit(list) = r.unwrap() else { panic!("expected a fit") };
    let config = &list[0].1.devices.config;
    assert_eq!(config.len(), 1, "{config:?}");
    assert_eq!(config[0].source, "FromClass");
    assert_eq!(config[0].requests, vec!["req-0".to_owned(), "req-1".to_owned()]);

    let s = store(false, &classes, vec![slice(devices(1))]);
    let r = run(&s, claim(vec![request("req-0", "class-a", 1)], vec![]));
    let NodeResult::Fit(list) = r.unwrap() else { panic!("expected a fit") };
    assert_eq!(list[0].1.devices.config.len(), 1);
    assert_eq!(list[0].1.devices.config[0].requests, vec!["req-0".to_owned()]);
}

#[test]
fn tainted_devices_count_as_matching() {
    // Item 8: a tainted device matches the selector but is not available.
    let mut d = dev("device-1", json!({}));
    d["taints"] = json!([{"key": "k", "effect": "NoSchedule"}]);
    let s = store(false, &class_a(), vec![slice(vec![d])]);
    let r = run(&s, claim(vec![request("req-0", "class-a", 1)], vec![]));
    let NodeResult::NoFit(diag) = r.unwrap() else { panic!("expected no fit") };
    assert!(diag.to_string().contains("0 of 1 requested devices available (1 match)"), "{diag}");
}

fn strings(v: &[&str]) -> Value {
    json!({"strings": v})
}

#[test]
fn list_attributes_refused_while_the_gate_is_off() {
    let s = store(false, &class_a(), vec![]);
    let err = s.add_slice(slice(vec![dev("device-1", json!({"roots": strings(&["a"])}))])).unwrap_err();
    assert!(matches!(err, DraError::InvalidSlice { .. }), "{err:?}");
    assert!(err.to_string().contains("DRAListTypeAttributes"), "{err}");
}

#[test]
fn list_attribute_validation() {
    let s = store(true, &class_a(), vec![]);
    // Empty list.
    assert!(s.add_slice(slice(vec![dev("d", json!({"roots": {"ints": []}}))])).is_err());
    // Two values set.
    assert!(s.add_slice(slice(vec![dev("d", json!({"roots": {"ints": [1], "int": 1}}))])).is_err());
    // 49 values in all on one device (48 allowed).
    let many: Vec<i64> = (0..48).collect();
    assert!(s.add_slice(slice(vec![dev("d", json!({"roots": {"ints": many}}))])).is_ok());
    let err = s.add_slice(slice(vec![dev("d", json!({"roots": {"ints": many}, "x": {"int": 1}}))])).unwrap_err();
    assert!(err.to_string().contains("49 attribute values, more than 48"), "{err}");
}

#[test]
fn match_attribute_on_lists_is_a_non_empty_intersection() {
    let s = store(
        true,
        &class_a(),
        vec![slice(vec![
            dev("device-1", json!({"roots": strings(&["pci-0", "pci-1"])})),
            dev("device-2", json!({"roots": strings(&["pci-2"])})),
            dev("device-3", json!({"roots": {"string": "pci-1"}})),
        ])],
    );
    let r = run(&s, claim(vec![request("req-0", "class-a", 2)], vec![json!({"matchAttribute": "driver-a/roots"})]));
    assert_eq!(devices_picked(&r), Some(vec!["device-1".to_owned(), "device-3".to_owned()]));
}

#[test]
fn match_attribute_needs_one_value_common_to_all() {
    // {a,b}, {b,c}, {a,c}: pairwise intersecting, but no value common to all three.
    let s = store(
        true,
        &class_a(),
        vec![slice(vec![
            dev("device-1", json!({"r": strings(&["a", "b"])})),
            dev("device-2", json!({"r": strings(&["b", "c"])})),
            dev("device-3", json!({"r": strings(&["a", "c"])})),
        ])],
    );
    let r = run(&s, claim(vec![request("req-0", "class-a", 3)], vec![json!({"matchAttribute": "driver-a/r"})]));
    assert_eq!(devices_picked(&r), None);
}

#[test]
fn distinct_attribute_on_lists_is_pairwise_disjoint() {
    let s = store(
        true,
        &class_a(),
        vec![slice(vec![
            dev("device-1", json!({"r": {"ints": [0, 1]}})),
            dev("device-2", json!({"r": {"int": 1}})),
            dev("device-3", json!({"r": {"ints": [2, 3]}})),
        ])],
    );
    let r = run(&s, claim(vec![request("req-0", "class-a", 2)], vec![json!({"distinctAttribute": "driver-a/r"})]));
    assert_eq!(devices_picked(&r), Some(vec!["device-1".to_owned(), "device-3".to_owned()]));
}

#[test]
fn values_of_different_types_never_match() {
    // A string "1" and an int 1 are different values.
    let s = store(
        true,
        &class_a(),
        vec![slice(vec![dev("device-1", json!({"r": strings(&["1"])})), dev("device-2", json!({"r": {"ints": [1]}}))])],
    );
    let r = run(&s, claim(vec![request("req-0", "class-a", 2)], vec![json!({"matchAttribute": "driver-a/r"})]));
    assert_eq!(devices_picked(&r), None);
}

#[test]
fn selectors_see_list_attributes() {
    // compile_test.go "includes-function-on-string-list-positive", "macro-on-list-of-int"
    // and "in-operator-on-list", through a class's selector.
    let class = |name: &str, expr: &str| -> DeviceClass {
        serde_json::from_value(
            json!({"metadata": {"name": name}, "spec": {"selectors": [{"cel": {"expression": expr}}]}}),
        )
        .unwrap()
    };
    let classes = vec![
        class("inc", r#"device.attributes["driver-a"].names.includes("fish")"#),
        class("mac", r#"device.attributes["driver-a"].ids.exists(x, x > 1)"#),
        class("in", r#"1 in device.attributes["driver-a"].ids"#),
    ];
    let s = store(
        true,
        &classes,
        vec![slice(vec![
            dev("device-1", json!({"names": strings(&["bird"]), "ids": {"ints": [0]}})),
            dev("device-2", json!({"names": strings(&["fish", "bird"]), "ids": {"ints": [1, 2]}})),
        ])],
    );
    for c in ["inc", "mac", "in"] {
        let mut cl = claim(vec![request("req-0", c, 1)], vec![]);
        cl.metadata.name = format!("claim-{c}");
        s.add_claim(cl).unwrap();
        let r = s.allocate_claims(&[("default", &format!("claim-{c}"))], "node-1", &Labels::default());
        assert_eq!(devices_picked(&r), Some(vec!["device-2".to_owned()]), "class {c}");
    }
}

#[test]
fn exhausted_consumable_capacity_is_reported_as_capacity() {
    // Item 8: two requests of one claim each ask 6Gi of a shared device's 10Gi.
    let classes = class_a();
    let s = store(false, &classes, vec![]);
    let sl: ResourceSlice = serde_json::from_value(json!({
        "metadata": {"name": "slice-1"},
        "spec": {"driver": DRIVER_A, "nodeName": "node-1",
                 "pool": {"name": "pool-1", "generation": 1, "resourceSliceCount": 1},
                 "devices": [{"name": "gpu-0", "allowMultipleAllocations": true,
                              "capacity": {"memory": {"value": "10Gi"}}}]}
    }))
    .unwrap();
    s.add_slice(sl).unwrap();
    let req = |name: &str| json!({"name": name, "exactly": {"deviceClassName": "class-a", "capacity": {"requests": {"memory": "6Gi"}}}});
    let r = run(&s, claim(vec![req("req-0"), req("req-1")], vec![]));
    let NodeResult::NoFit(diag) = r.unwrap() else { panic!("expected no fit") };
    let text = diag.to_string();
    assert!(text.contains("claim default/claim-0: capacity not satisfiable"), "{text}");
    assert!(!text.contains("shared counters"), "{text}");
}
