//! The API server's validation of DRA objects, applied when they are loaded into a
//! `DraStore`: upstream's test tables, each case's first expected error (upstream
//! reports every error; schedkit stops at the first, in upstream's order, with the same
//! field path and message).
//!
//! Upstream: `pkg/apis/resource/validation/validation_resourceslice_test.go`
//! (`TestValidateResourceSlice`), `validation_resourceclaim_test.go`
//! (`TestValidateClaim`), `validation_deviceclass_test.go` (`TestValidateClass`),
//! `validation_resourceclaimtemplate_test.go` (`TestValidateClaimTemplate`),
//! `validation_devicetaintrule_test.go` (`TestValidateDeviceTaint`).

use serde_json::{Value, json};

use schedkit::dra::validation::{
    DEVICE_CONFIG_MAX_SIZE, DEVICE_CONSTRAINTS_MAX_SIZE, DEVICE_REQUESTS_MAX_SIZE, DEVICE_SELECTORS_MAX_SIZE,
    DEVICE_TAINTS_MAX_LENGTH, DEVICE_TOLERATIONS_MAX_LENGTH, FIRST_AVAILABLE_DEVICE_REQUEST_MAX_SIZE,
    OPAQUE_PARAMETERS_MAX_LENGTH, POOL_NAME_MAX_LENGTH, RESOURCE_SLICE_MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE,
    RESOURCE_SLICE_MAX_COUNTER_SETS, RESOURCE_SLICE_MAX_COUNTERS_PER_COUNTER_SET, RESOURCE_SLICE_MAX_DEVICES,
    RESOURCE_SLICE_MAX_DEVICES_WITH_ADVANCED_FEATURES,
};
use schedkit::dra::{DraError, DraStore};
use schedkit::framework::Feature;
use schedkit::model::{FieldError, FieldErrorKind};

const GOOD: &str = "foo";
const BAD: &str = "!@#$%^";
const DRIVER: &str = "test.example.com";
const SUBDOMAIN: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const LABEL: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const C_IDENT: &str = "a valid C identifier must start with alphabetic character or '_', followed by a string of alphanumeric characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName', regex used for validation is '[A-Za-z_][A-Za-z0-9_]*')";
const LABEL_VALUE: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

/// Upstream's `testResourceSlice(name, nodeName, driverName, numDevices)`: devices with
/// four attributes and a capacity, the pool named after the node.
fn test_slice(name: &str, node: &str, driver: &str, devices: usize) -> Value {
    let devs: Vec<Value> = (0..devices)
        .map(|d| {
            json!({"name": format!("device-{d}"),
                "attributes": {"int": {"int": 42}, "string": {"string": "hello world"},
                    "version": {"version": "1.2.3"}, "bool": {"bool": true}},
                "capacity": {"memory": {"value": "1Gi"}}})
        })
        .collect();
    json!({"metadata": {"name": name},
        "spec": {"nodeName": node, "driver": driver,
            "pool": {"name": node, "resourceSliceCount": 1}, "devices": devs}})
}

fn store() -> DraStore {
    let s = DraStore::new();
    s.set_feature_gates(s.feature_gates().with(Feature::DRAListTypeAttributes, true));
    s
}

fn slice_result(v: Value) -> Result<(), DraError> {
    store().add_slice(serde_json::from_value(v).expect("the test object deserializes"))
}

/// The field error of an `Invalid` DRA error.
fn field(err: DraError) -> FieldError {
    match err {
        DraError::Invalid { error, .. } => error,
        other => panic!("expected an API validation error, got {other:?}: {other}"),
    }
}

fn too_many(path: &str, found: usize, limit: usize) -> FieldError {
    FieldError::too_many(path, found, limit)
}

fn with_taints(mut v: Value) -> Value {
    for d in v["spec"]["devices"].as_array_mut().unwrap() {
        d["taints"] = json!([{"key": "example.com/taint", "effect": "NoExecute"}]);
    }
    v
}

#[test]
fn validate_resource_slice() {
    // TestValidateResourceSlice: (name, slice, first expected error or None).
    let mut cases: Vec<(&str, Value, Option<FieldError>)> = vec![
        ("good", test_slice(GOOD, GOOD, DRIVER, RESOURCE_SLICE_MAX_DEVICES), None),
        (
            "too-large",
            test_slice(GOOD, GOOD, GOOD, RESOURCE_SLICE_MAX_DEVICES + 1),
            Some(too_many("spec.devices", 129, 128)),
        ),
        (
            "good-taints",
            with_taints(test_slice(GOOD, GOOD, GOOD, RESOURCE_SLICE_MAX_DEVICES_WITH_ADVANCED_FEATURES)),
            None,
        ),
        (
            "too-large-taints",
            with_taints(test_slice(GOOD, GOOD, GOOD, RESOURCE_SLICE_MAX_DEVICES_WITH_ADVANCED_FEATURES + 1)),
            Some(too_many("spec.devices", 65, 64)),
        ),
        (
            "missing-name",
            test_slice("", GOOD, DRIVER, 1),
            Some(FieldError::required("metadata.name", "name or generateName is required")),
        ),
        ("bad-name", test_slice(BAD, GOOD, DRIVER, 1), Some(FieldError::invalid("metadata.name", BAD, SUBDOMAIN))),
        ("bad-nodename", test_slice(GOOD, BAD, DRIVER, 1), Some(FieldError::invalid("spec.pool.name", BAD, SUBDOMAIN))),
        (
            "bad-multi-pool-name",
            test_slice(GOOD, &format!("{BAD}/{BAD}"), DRIVER, 1),
            Some(FieldError::invalid("spec.pool.name", BAD, SUBDOMAIN)),
        ),
        ("bad-drivername", test_slice(GOOD, GOOD, BAD, 1), Some(FieldError::invalid("spec.driver", BAD, SUBDOMAIN))),
    ];
    let mut v = test_slice(GOOD, GOOD, DRIVER, 1);
    v["metadata"]["labels"] = json!({"hello-world": "spaces not allowed"});
    cases.push((
        "bad-labels",
        v,
        Some(FieldError::invalid("metadata.labels[hello-world]", "spaces not allowed", LABEL_VALUE)),
    ));
    let mut v = test_slice(GOOD, GOOD, DRIVER, 1);
    v["spec"]["pool"]["name"] = json!("x".repeat(POOL_NAME_MAX_LENGTH));
    cases.push(("good-pool-name", v, None));
    // "bad-pool": the name too long, the slice count 0, the generation -1 (one at a time,
    // in upstream's order).
    let mut v = test_slice(GOOD, GOOD, DRIVER, 1);
    v["spec"]["pool"]["name"] = json!(format!("{}xy", "x/".repeat(POOL_NAME_MAX_LENGTH / 2)));
    v["spec"]["pool"]["resourceSliceCount"] = json!(0);
    v["spec"]["pool"]["generation"] = json!(-1);
    cases.push(("bad-pool", v.clone(), Some(FieldError::too_long("spec.pool.name", POOL_NAME_MAX_LENGTH))));
    v["spec"]["pool"]["name"] = json!(GOOD);
    cases.push((
        "bad-pool (count)",
        v.clone(),
        Some(FieldError::invalid_number("spec.pool.resourceSliceCount", 0, "must be greater than zero")),
    ));
    v["spec"]["pool"]["resourceSliceCount"] = json!(1);
    cases.push((
        "bad-pool (generation)",
        v,
        Some(FieldError::invalid_number("spec.pool.generation", -1, "must be greater than or equal to zero")),
    ));
    let mut v = test_slice(GOOD, GOOD, DRIVER, 1);
    v["spec"]["pool"]["name"] = json!("");
    cases.push(("missing-pool-name", v, Some(FieldError::required("spec.pool.name", ""))));
    let mut v = test_slice(GOOD, GOOD, GOOD, 3);
    v["spec"]["devices"][1]["name"] = json!(BAD);
    cases.push(("bad-devices", v, Some(FieldError::invalid("spec.devices[1].name", BAD, LABEL))));
    let mut v = test_slice(GOOD, GOOD, GOOD, 5);
    v["spec"]["devices"][1]["attributes"] = json!({BAD: {"int": 1}});
    cases.push(("bad-attribute", v, Some(FieldError::invalid("spec.devices[1].attributes", BAD, C_IDENT))));
    // The list-attribute limits: 64 devices with list attributes load, 65 do not.
    for kind in [
        ("ints", json!([1, 2, 3])),
        ("bools", json!([true, false, true])),
        ("strings", json!(["a", "b", "c"])),
        ("versions", json!(["1.0.0", "2.0.0", "3.0.0"])),
    ] {
        let mut v = test_slice(GOOD, GOOD, GOOD, RESOURCE_SLICE_MAX_DEVICES_WITH_ADVANCED_FEATURES);
        for d in v["spec"]["devices"].as_array_mut().unwrap() {
            d["attributes"][kind.0] = json!({kind.0: kind.1});
        }
        cases.push(("max-devices-with-list-attributes", v, None));
        let mut v = test_slice(GOOD, GOOD, GOOD, RESOURCE_SLICE_MAX_DEVICES_WITH_ADVANCED_FEATURES + 1);
        v["spec"]["devices"][0]["attributes"][kind.0] = json!({kind.0: kind.1});
        cases.push(("too-many-devices-with-list-attributes", v, Some(too_many("spec.devices", 65, 64))));
    }
    let mut v = test_slice(GOOD, GOOD, GOOD, 2);
    v["spec"]["devices"][1]["attributes"] = json!({
        "x".repeat(32): {"string": "y"},
        format!("{}/{}", "x".repeat(63), "y".repeat(32)): {"string": "z"},
    });
    cases.push(("good-attribute-names", v, None));
    let mut v = test_slice(GOOD, GOOD, GOOD, 2);
    v["spec"]["devices"][1]["attributes"] = json!({".".repeat(33): {"string": "y"}});
    cases.push(("bad-attribute-c-identifier", v, Some(FieldError::too_long("spec.devices[1].attributes", 32))));
    let mut v = test_slice(GOOD, GOOD, GOOD, 2);
    v["spec"]["devices"][1]["attributes"] = json!({format!("{}/y", "_".repeat(64)): {"string": "z"}});
    cases.push(("bad-attribute-domain", v, Some(FieldError::too_long("spec.devices[1].attributes", 63))));
    let mut v = test_slice(GOOD, GOOD, GOOD, 2);
    v["spec"]["devices"][1]["attributes"] = json!({format!("{}/{}", "x".repeat(64), "y".repeat(33)): {"string": "z"}});
    cases.push(("bad-key-too-long", v, Some(FieldError::too_long("spec.devices[1].attributes", 63))));
    let mut v = test_slice(GOOD, GOOD, GOOD, 2);
    v["spec"]["devices"][1]["attributes"] = json!({"/": {"string": "z"}});
    cases.push((
        "bad-attribute-empty-domain-and-c-identifier",
        v,
        Some(FieldError::invalid("spec.devices[1].attributes", "", "the domain must not be empty")),
    ));
    // "combined-attributes-capacity-length": 32 attributes load, 32 capacities load, 32
    // attributes and one capacity do not.
    let mut v = test_slice(GOOD, GOOD, GOOD, 5);
    let attrs: serde_json::Map<String, Value> = (0..RESOURCE_SLICE_MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE)
        .map(|i| (format!("attr_{i}"), json!({"string": "x"})))
        .collect();
    let caps: serde_json::Map<String, Value> = (0..RESOURCE_SLICE_MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE)
        .map(|i| (format!("cap_{i}"), json!({"value": "1Gi"})))
        .collect();
    v["spec"]["devices"][0]["attributes"] = Value::Object(attrs.clone());
    v["spec"]["devices"][0]["capacity"] = json!({});
    v["spec"]["devices"][1]["attributes"] = json!({});
    v["spec"]["devices"][1]["capacity"] = Value::Object(caps);
    v["spec"]["devices"][3]["attributes"] = Value::Object(attrs);
    v["spec"]["devices"][3]["capacity"] = json!({"cap": {"value": "1Gi"}});
    cases.push((
        "combined-attributes-capacity-length",
        v,
        Some(FieldError::invalid_number(
            "spec.devices[3]",
            33,
            "the total number of attributes and capacities must not exceed 32",
        )),
    ));
    // "taints": an empty taint key, then a bad key and value.
    let mut v = test_slice(GOOD, GOOD, GOOD, 3);
    v["spec"]["devices"][0]["taints"] = json!([
        {"key": "example.com/taint", "effect": "NoExecute"},
        {"key": "taint", "value": "tainted", "effect": "NoSchedule"},
        {"key": "", "effect": "NoSchedule"},
    ]);
    cases.push((
        "taints",
        v.clone(),
        Some(FieldError::invalid("spec.devices[0].taints[2].key", "", "name part must be non-empty")),
    ));
    v["spec"]["devices"][0]["taints"][2] = json!({"key": BAD, "value": BAD, "effect": "NoSchedule"});
    cases.push((
        "taints (bad strings)",
        v.clone(),
        Some(FieldError::invalid("spec.devices[0].taints[2].key", BAD, "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")),
    ));
    v["spec"]["devices"][0]["taints"][2]["key"] = json!("taint");
    cases.push((
        "taints (bad value)",
        v,
        Some(FieldError::invalid("spec.devices[0].taints[2].value", BAD, LABEL_VALUE)),
    ));
    let mut v = test_slice(GOOD, GOOD, DRIVER, 1);
    v["spec"]["devices"][0]["taints"] =
        json!(vec![json!({"key": "example.com/taint", "effect": "NoExecute"}); DEVICE_TAINTS_MAX_LENGTH + 1]);
    cases.push(("too-many-taints", v, Some(too_many("spec.devices[0].taints", 17, 16))));
    let mut v = test_slice(GOOD, GOOD, DRIVER, 1);
    v["spec"]["perDeviceNodeSelection"] = json!(false);
    cases.push((
        "invalid-false-PerDeviceNodeSelection",
        v,
        Some(FieldError {
            path: "spec.perDeviceNodeSelection".into(),
            kind: FieldErrorKind::Invalid {
                value: "false".into(),
                detail: "must be either unset or set to true".into(),
            },
        }),
    ));
    let mut v = test_slice(GOOD, GOOD, DRIVER, 1);
    v["spec"]["allNodes"] = json!(false);
    cases.push((
        "invalid-false-AllNodes",
        v,
        Some(FieldError {
            path: "spec.allNodes".into(),
            kind: FieldErrorKind::Invalid {
                value: "false".into(),
                detail: "must be either unset or set to true".into(),
            },
        }),
    ));
    let mut v = test_slice(GOOD, GOOD, DRIVER, 1);
    v["spec"]["nodeName"] = json!("");
    v["spec"]["allNodes"] = json!(true);
    cases.push((
        "invalid-empty-NodeName",
        v,
        Some(FieldError::invalid("spec.nodeName", "", "must be either unset or set to a non-empty string")),
    ));
    let mut v = test_slice(GOOD, GOOD, DRIVER, 1);
    v["spec"]["perDeviceNodeSelection"] = json!(true);
    v["spec"]["nodeName"] = Value::Null;
    v["spec"]["devices"][0]["nodeName"] = json!("");
    v["spec"]["devices"][0]["allNodes"] = json!(false);
    cases.push((
        "invalid-node-selector-in-basicdevice",
        v,
        Some(FieldError::invalid("spec.devices[0].nodeName", "", "must not be empty")),
    ));
    // Shared counters (upstream's "bad-countername", "too-many-counter-sets",
    // "too-many-counters" and "missing-counters" cases).
    let counters = |n: usize| -> Value {
        Value::Object((0..n).map(|i| (format!("memory-{i}"), json!({"value": "1Gi"}))).collect())
    };
    let counter_slice = |sets: Vec<Value>| -> Value {
        let mut v = test_slice(GOOD, GOOD, DRIVER, 0);
        v["spec"]["devices"] = json!([]);
        v["spec"]["sharedCounters"] = json!(sets);
        v
    };
    cases.push((
        "good-shared-counters",
        counter_slice(
            (0..RESOURCE_SLICE_MAX_COUNTER_SETS)
                .map(|i| json!({"name": format!("counterset-{i}"), "counters": counters(1)}))
                .collect(),
        ),
        None,
    ));
    cases.push((
        "too-many-counter-sets",
        counter_slice(
            (0..=RESOURCE_SLICE_MAX_COUNTER_SETS)
                .map(|i| json!({"name": format!("counterset-{i}"), "counters": counters(1)}))
                .collect(),
        ),
        Some(too_many("spec.sharedCounters", 9, 8)),
    ));
    cases.push((
        "too-many-counters",
        counter_slice(vec![
            json!({"name": "counterset", "counters": counters(RESOURCE_SLICE_MAX_COUNTERS_PER_COUNTER_SET + 1)}),
        ]),
        Some(too_many("spec.sharedCounters[0].counters", 33, 32)),
    ));
    cases.push((
        "bad-countername",
        counter_slice(vec![json!({"name": "counterset", "counters": {BAD: {"value": "1Gi"}}})]),
        Some(FieldError::invalid("spec.sharedCounters[0].counters", BAD, LABEL)),
    ));
    cases.push((
        "missing-counters",
        counter_slice(vec![json!({"name": "counterset", "counters": {}})]),
        Some(FieldError::required("spec.sharedCounters[0].counters", "")),
    ));
    cases.push((
        "missing-counterset-name",
        counter_slice(vec![json!({"name": "", "counters": counters(1)})]),
        Some(FieldError::required("spec.sharedCounters[0].name", "")),
    ));
    for (name, slice, want) in cases {
        match (slice_result(slice), want) {
            (Ok(()), None) => {}
            (Err(e), Some(want)) => {
                let got = field(e);
                assert_eq!(got, want, "{name}: {got}");
            }
            (Ok(()), Some(want)) => panic!("{name}: loaded, expected {want}"),
            (Err(e), None) => panic!("{name}: refused with {e}"),
        }
    }
}

#[test]
fn oversized_slices_are_refused_before_any_device_is_read() {
    // Issue 22: a 5,000-device slice used to load. The size check comes first, so the
    // error is the limit, not a problem of device 4,999.
    let mut v = test_slice(GOOD, GOOD, DRIVER, 5000);
    v["spec"]["devices"][4999]["name"] = json!(BAD);
    let err = slice_result(v).unwrap_err();
    assert_eq!(err.to_string(), "ResourceSlice foo: spec.devices: Too many: 5000: must have at most 128 items");
}

fn claim(devices: Value) -> Value {
    let mut v = json!({"metadata": {"name": "claim", "namespace": "kube-system"}, "spec": {}});
    v["spec"]["devices"] = devices;
    v
}

fn class_store() -> DraStore {
    let s = store();
    s.add_class(serde_json::from_value(json!({"metadata": {"name": "class"}})).unwrap()).unwrap();
    s
}

fn claim_result(v: Value) -> Result<(), DraError> {
    class_store().add_claim(serde_json::from_value(v).expect("the test claim deserializes"))
}

fn exact(name: &str) -> Value {
    json!({"name": name, "exactly": {"deviceClassName": "class"}})
}

#[test]
fn validate_claim() {
    // TestValidateClaim (v1 shapes, `exactly` requests): (name, claim, first error).
    let requests = |n: usize| -> Value { json!((0..n).map(|i| exact(&format!("req-{i}"))).collect::<Vec<_>>()) };
    let selector = json!({"cel": {"expression": "device.driver == \"dra.example.com\""}});
    let mut cases: Vec<(&str, Value, Option<FieldError>)> = vec![
        ("good-claim", claim(json!({"requests": [exact("req-0")]})), None),
        ("max-requests", claim(json!({"requests": requests(DEVICE_REQUESTS_MAX_SIZE)})), None),
        (
            "too-many-requests",
            claim(json!({"requests": requests(DEVICE_REQUESTS_MAX_SIZE + 1)})),
            Some(too_many("spec.devices.requests", 33, 32)),
        ),
        (
            "bad-request-name",
            claim(json!({"requests": [exact(BAD)]})),
            Some(FieldError::invalid("spec.devices.requests[0].name", BAD, LABEL)),
        ),
        (
            "bad-class-name",
            claim(json!({"requests": [{"name": "req-0", "exactly": {"deviceClassName": BAD}}]})),
            Some(FieldError::invalid("spec.devices.requests[0].exactly.deviceClassName", BAD, SUBDOMAIN)),
        ),
        (
            "missing-class-name",
            claim(json!({"requests": [{"name": "req-0", "exactly": {"deviceClassName": ""}}]})),
            Some(FieldError::required("spec.devices.requests[0].exactly.deviceClassName", "")),
        ),
        (
            "too-many-selectors",
            claim(json!({"requests": [{"name": "req-0", "exactly": {"deviceClassName": "class",
                "selectors": vec![selector.clone(); DEVICE_SELECTORS_MAX_SIZE + 1]}}]})),
            Some(too_many("spec.devices.requests[0].exactly.selectors", 33, 32)),
        ),
        (
            "missing-cel",
            claim(json!({"requests": [{"name": "req-0", "exactly": {"deviceClassName": "class", "selectors": [{}]}}]})),
            Some(FieldError::required("spec.devices.requests[0].exactly.selectors[0].cel", "")),
        ),
        (
            "all-mode-with-count",
            claim(json!({"requests": [{"name": "req-0", "exactly": {"deviceClassName": "class",
                "allocationMode": "All", "count": 5}}]})),
            Some(FieldError::invalid_number(
                "spec.devices.requests[0].exactly.count",
                5,
                "must not be specified when allocationMode is 'All'",
            )),
        ),
        (
            "too-many-tolerations",
            claim(json!({"requests": [{"name": "req-0", "exactly": {"deviceClassName": "class",
                "tolerations": vec![json!({"key": "k", "operator": "Exists"}); DEVICE_TOLERATIONS_MAX_LENGTH + 1]}}]})),
            Some(too_many("spec.devices.requests[0].exactly.tolerations", 17, 16)),
        ),
        (
            "too-many-subrequests",
            claim(json!({"requests": [{"name": "req-0", "firstAvailable":
                (0..=FIRST_AVAILABLE_DEVICE_REQUEST_MAX_SIZE).map(|i| json!({"name": format!("sub-{i}"), "deviceClassName": "class"})).collect::<Vec<_>>()}]})),
            Some(too_many("spec.devices.requests[0].firstAvailable", 9, 8)),
        ),
        (
            "bad-subrequest-name",
            claim(
                json!({"requests": [{"name": "req-0", "firstAvailable": [{"name": BAD, "deviceClassName": "class"}]}]}),
            ),
            Some(FieldError::invalid("spec.devices.requests[0].firstAvailable[0].name", BAD, LABEL)),
        ),
        (
            "too-many-constraints",
            claim(json!({"requests": [exact("req-0")], "constraints":
                vec![json!({"matchAttribute": "dra.example.com/numa"}); DEVICE_CONSTRAINTS_MAX_SIZE + 1]})),
            Some(too_many("spec.devices.constraints", 33, 32)),
        ),
        (
            "bad-constraint-attribute",
            claim(json!({"requests": [exact("req-0")], "constraints": [{"matchAttribute": "dra.example.com/!@#"}]})),
            Some(FieldError::invalid("spec.devices.constraints[0].matchAttribute", "!@#", C_IDENT)),
        ),
        (
            "duplicate-constraint-request",
            claim(json!({"requests": [exact("req-0")], "constraints": [{"matchAttribute": "dra.example.com/numa",
                "requests": ["req-0", "req-0"]}]})),
            Some(FieldError::duplicate("spec.devices.constraints[0].requests[1]", "req-0")),
        ),
        (
            "bad-constraint-request-ref",
            claim(json!({"requests": [exact("req-0")], "constraints": [{"matchAttribute": "dra.example.com/numa",
                "requests": ["a/b/c"]}]})),
            Some(FieldError::invalid(
                "spec.devices.constraints[0].requests[0]",
                "a/b/c",
                "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'",
            )),
        ),
        (
            "too-many-configs",
            claim(json!({"requests": [exact("req-0")], "config":
                vec![json!({"opaque": {"driver": "dra.example.com", "parameters": {}}}); DEVICE_CONFIG_MAX_SIZE + 1]})),
            Some(too_many("spec.devices.config", 33, 32)),
        ),
        (
            "missing-opaque",
            claim(json!({"requests": [exact("req-0")], "config": [{}]})),
            Some(FieldError::required("spec.devices.config[0].opaque", "")),
        ),
        (
            "bad-opaque-driver",
            claim(json!({"requests": [exact("req-0")], "config": [{"opaque": {"driver": BAD, "parameters": {}}}]})),
            Some(FieldError::invalid("spec.devices.config[0].opaque.driver", BAD, SUBDOMAIN)),
        ),
        (
            "opaque-parameters-not-an-object",
            claim(
                json!({"requests": [exact("req-0")], "config": [{"opaque": {"driver": "dra.example.com", "parameters": [1]}}]}),
            ),
            Some(FieldError::invalid(
                "spec.devices.config[0].opaque.parameters",
                "<value omitted>",
                "must be a valid JSON object",
            )),
        ),
        (
            "opaque-parameters-too-large",
            claim(json!({"requests": [exact("req-0")], "config": [{"opaque": {"driver": "dra.example.com",
                "parameters": {"x": "y".repeat(OPAQUE_PARAMETERS_MAX_LENGTH)}}}]})),
            Some(FieldError::too_long("spec.devices.config[0].opaque.parameters", OPAQUE_PARAMETERS_MAX_LENGTH)),
        ),
    ];
    let mut v = claim(json!({"requests": [exact("req-0")]}));
    v["status"] = json!({"reservedFor": (0..257).map(|i| json!({"resource": "pods", "name": format!("p{i}"), "uid": format!("u{i}")})).collect::<Vec<_>>()});
    cases.push(("too-many-reserved-for", v, Some(too_many("status.reservedFor", 257, 256))));
    for (name, v, want) in cases {
        match (claim_result(v), want) {
            (Ok(()), None) => {}
            (Err(e), Some(want)) => assert_eq!(field(e), want, "{name}"),
            (Ok(()), Some(want)) => panic!("{name}: loaded, expected {want}"),
            (Err(e), None) => panic!("{name}: refused with {e}"),
        }
    }
}

#[test]
fn validate_claim_template() {
    // TestValidateClaimTemplate: the spec is validated under `spec.spec`.
    let s = class_store();
    let t = |devices: Value| {
        serde_json::from_value(
            json!({"metadata": {"name": "t", "namespace": "ns"}, "spec": {"spec": {"devices": devices}}}),
        )
        .unwrap()
    };
    s.add_template(t(json!({"requests": [exact("req-0")]}))).unwrap();
    let err = s.add_template(t(json!({"requests": [exact(BAD)]}))).unwrap_err();
    assert_eq!(field(err.clone()), FieldError::invalid("spec.spec.devices.requests[0].name", BAD, LABEL));
    assert!(
        err.to_string().starts_with("ResourceClaimTemplate ns/t: spec.spec.devices.requests[0].name: Invalid value"),
        "{err}"
    );
}

#[test]
fn validate_class() {
    // TestValidateClass: (name, class, first error).
    let selector = json!({"cel": {"expression": "device.driver == \"dra.example.com\""}});
    let cases: Vec<(&str, Value, Option<FieldError>)> = vec![
        ("good-class", json!({"metadata": {"name": GOOD}, "spec": {"selectors": [selector.clone()]}}), None),
        ("bad-name", json!({"metadata": {"name": BAD}}), Some(FieldError::invalid("metadata.name", BAD, SUBDOMAIN))),
        (
            "too-many-selectors",
            json!({"metadata": {"name": GOOD}, "spec": {"selectors": vec![selector; DEVICE_SELECTORS_MAX_SIZE + 1]}}),
            Some(too_many("spec.selectors", 33, 32)),
        ),
        (
            "too-many-configs",
            json!({"metadata": {"name": GOOD}, "spec": {"config":
                vec![json!({"opaque": {"driver": "dra.example.com", "parameters": {}}}); DEVICE_CONFIG_MAX_SIZE + 1]}}),
            Some(too_many("spec.config", 33, 32)),
        ),
        (
            "missing-opaque-driver",
            json!({"metadata": {"name": GOOD}, "spec": {"config": [{"opaque": {"driver": "", "parameters": {}}}]}}),
            Some(FieldError::required("spec.config[0].opaque.driver", "")),
        ),
    ];
    for (name, v, want) in cases {
        let r = store().add_class(serde_json::from_value(v).unwrap());
        match (r, want) {
            (Ok(()), None) => {}
            (Err(e), Some(want)) => assert_eq!(field(e), want, "{name}"),
            (Ok(()), Some(want)) => panic!("{name}: loaded, expected {want}"),
            (Err(e), None) => panic!("{name}: refused with {e}"),
        }
    }
}

/// The qualified-name message of a bad name part (`metav1validation.ValidateLabelName`),
/// upstream's `conditionValidationErrMessage` for binding conditions.
const NAME_PART: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

/// `field.Invalid` of a missing list, which upstream prints as Go's `[]string(nil)`.
fn invalid_nil_list(path: &str, detail: &str) -> FieldError {
    FieldError {
        path: path.into(),
        kind: FieldErrorKind::Invalid { value: "[]string(nil)".into(), detail: detail.into() },
    }
}

/// Upstream's `testResourceSliceWithBindingConditions`: every device with these lists.
fn binding_slice(conditions: &[&str], failure: &[&str]) -> Value {
    let mut v = test_slice(GOOD, GOOD, DRIVER, 1);
    for d in v["spec"]["devices"].as_array_mut().unwrap() {
        d["bindingConditions"] = json!(conditions);
        d["bindingFailureConditions"] = json!(failure);
    }
    v
}

#[test]
fn validate_binding_conditions() {
    // TestValidateResourceSlice, the binding-condition cases (validateDeviceBindingParameters).
    let dev = "spec.devices[0]";
    let cases: Vec<(&str, Value, Option<FieldError>)> = vec![
        (
            "good-binding-conditions",
            binding_slice(&["example.com/condition1", "condition2"], &["example.com/condition3", "condition4"]),
            None,
        ),
        (
            "too-many-binding-conditions",
            binding_slice(
                &["condition1", "condition2", "condition3", "condition4", "condition5"],
                &["condition6", "condition7"],
            ),
            Some(too_many(&format!("{dev}.bindingConditions"), 5, 4)),
        ),
        (
            "too-many-binding-failure-conditions",
            binding_slice(
                &["condition1", "condition2"],
                &["condition3", "condition4", "condition5", "condition6", "condition7"],
            ),
            Some(too_many(&format!("{dev}.bindingFailureConditions"), 5, 4)),
        ),
        (
            "invalid-binding-conditions",
            binding_slice(&["condition1", "condition2!"], &["condition3", "condition4"]),
            Some(FieldError::invalid(format!("{dev}.bindingConditions[1]"), "condition2!", NAME_PART)),
        ),
        (
            "invalid-binding-failure-conditions",
            binding_slice(&["condition1", "condition2"], &["condition3!", "condition4"]),
            Some(FieldError::invalid(format!("{dev}.bindingFailureConditions[0]"), "condition3!", NAME_PART)),
        ),
        (
            "invalid-slice-has-binding-failure-but-no-binding-conditions",
            binding_slice(&[], &["condition1", "condition2"]),
            Some(invalid_nil_list(
                &format!("{dev}.bindingConditions"),
                "bindingConditions are required to use bindingFailureConditions",
            )),
        ),
        (
            "invalid-slice-has-binding-conditions-but-no-binding-failure-conditions",
            binding_slice(&["condition1", "condition2"], &[]),
            Some(invalid_nil_list(
                &format!("{dev}.bindingFailureConditions"),
                "bindingFailureConditions are required to use bindingConditions",
            )),
        ),
        (
            "duplicate-binding-conditions",
            binding_slice(&["condition1", "condition1"], &["condition2", "condition3"]),
            Some(FieldError::duplicate(format!("{dev}.bindingConditions[1]"), "condition1")),
        ),
        (
            "duplicate-binding-failure-conditions",
            binding_slice(&["condition1", "condition2"], &["condition3", "condition3"]),
            Some(FieldError::duplicate(format!("{dev}.bindingFailureConditions[1]"), "condition3")),
        ),
        (
            "overlapping-binding-conditions",
            binding_slice(&["condition1", "condition2"], &["condition1", "condition3"]),
            Some(FieldError::invalid(
                format!("{dev}.bindingFailureConditions[0]"),
                "condition1",
                "bindingFailureConditions must not overlap with bindingConditions",
            )),
        ),
    ];
    for (name, slice, want) in cases {
        match (slice_result(slice), want) {
            (Ok(()), None) => {}
            (Err(e), Some(want)) => assert_eq!(field(e), want, "{name}"),
            (Ok(()), Some(want)) => panic!("{name}: loaded, expected {want}"),
            (Err(e), None) => panic!("{name}: refused with {e}"),
        }
    }

    // The same rules on an allocation result (validateDeviceRequestAllocationResult).
    let with_result = |conditions: &[&str], failure: &[&str]| {
        let mut v = claim(json!({"requests": [exact("req-0")]}));
        v["status"] = json!({"allocation": {"devices": {"results": [{"request": "req-0", "driver": DRIVER,
            "pool": GOOD, "device": "device-0", "bindingConditions": conditions,
            "bindingFailureConditions": failure}]}}});
        v
    };
    claim_result(with_result(&["ready"], &["failed"])).unwrap();
    let err = claim_result(with_result(&["ready", "bad!"], &["failed"])).unwrap_err();
    assert_eq!(
        field(err),
        FieldError::invalid("status.allocation.devices.results[0].bindingConditions[1]", "bad!", NAME_PART)
    );
    let err = claim_result(with_result(&["ready"], &[])).unwrap_err();
    assert_eq!(
        field(err),
        invalid_nil_list(
            "status.allocation.devices.results[0].bindingFailureConditions",
            "bindingFailureConditions are required to use bindingConditions"
        )
    );
}

/// Upstream's `validDeviceTaintRuleSpec` under `name`, with `edit` applied.
fn taint_rule(name: &str, edit: impl FnOnce(&mut Value)) -> Value {
    let mut v = json!({"metadata": {"name": name}, "spec": {
        "deviceSelector": {"deviceClassName": GOOD, "driver": DRIVER, "pool": GOOD, "device": GOOD},
        "taint": {"key": "example.com/taint", "value": "tainted", "effect": "NoSchedule"}}});
    edit(&mut v);
    v
}

#[test]
fn validate_device_taint_rule() {
    // TestValidateDeviceTaint (validation_devicetaintrule_test.go): (name, rule, first error).
    // Its metadata-only cases (generate-name, uid, labels, ...) need fields schedkit's
    // ObjectMeta does not validate; the CEL cases are covered by the selector tests.
    let cases: Vec<(&str, Value, Option<FieldError>)> = vec![
        ("good", taint_rule(GOOD, |_| {}), None),
        (
            "missing-name",
            taint_rule("", |_| {}),
            Some(FieldError::required("metadata.name", "name or generateName is required")),
        ),
        ("bad-name", taint_rule(BAD, |_| {}), Some(FieldError::invalid("metadata.name", BAD, SUBDOMAIN))),
        (
            "bad-class",
            taint_rule(GOOD, |v| v["spec"]["deviceSelector"]["deviceClassName"] = json!(BAD)),
            Some(FieldError::invalid("spec.deviceSelector.deviceClassName", BAD, SUBDOMAIN)),
        ),
        (
            "bad-driver",
            taint_rule(GOOD, |v| v["spec"]["deviceSelector"]["driver"] = json!(BAD)),
            Some(FieldError::invalid("spec.deviceSelector.driver", BAD, SUBDOMAIN)),
        ),
        (
            "bad-pool",
            taint_rule(GOOD, |v| v["spec"]["deviceSelector"]["pool"] = json!(BAD)),
            Some(FieldError::invalid("spec.deviceSelector.pool", BAD, SUBDOMAIN)),
        ),
        (
            "bad-device",
            taint_rule(GOOD, |v| v["spec"]["deviceSelector"]["device"] = json!(BAD)),
            Some(FieldError::invalid("spec.deviceSelector.device", BAD, LABEL)),
        ),
        (
            "valid-taint",
            taint_rule(GOOD, |v| v["spec"]["taint"] = json!({"key": GOOD, "value": GOOD, "effect": "NoExecute"})),
            None,
        ),
        // Beyond upstream's table, the rest of validateDeviceTaint and the selector list.
        (
            "empty-taint-key",
            taint_rule(GOOD, |v| v["spec"]["taint"]["key"] = json!("")),
            Some(FieldError::invalid("spec.taint.key", "", "name part must be non-empty")),
        ),
        (
            "bad-taint-key",
            taint_rule(GOOD, |v| v["spec"]["taint"]["key"] = json!(BAD)),
            Some(FieldError::invalid("spec.taint.key", BAD, NAME_PART)),
        ),
        (
            "bad-taint-value",
            taint_rule(GOOD, |v| v["spec"]["taint"]["value"] = json!("spaces not allowed")),
            Some(FieldError::invalid("spec.taint.value", "spaces not allowed", LABEL_VALUE)),
        ),
        (
            "empty-driver",
            taint_rule(GOOD, |v| v["spec"]["deviceSelector"]["driver"] = json!("")),
            Some(FieldError::required("spec.deviceSelector.driver", "")),
        ),
        (
            "selector-without-cel",
            taint_rule(GOOD, |v| v["spec"]["deviceSelector"]["selectors"] = json!([{}])),
            Some(FieldError::required("spec.deviceSelector.selectors[0].cel", "")),
        ),
        (
            "too-many-selectors",
            taint_rule(GOOD, |v| {
                v["spec"]["deviceSelector"]["selectors"] =
                    json!(vec![json!({"cel": {"expression": "true"}}); DEVICE_SELECTORS_MAX_SIZE + 1]);
            }),
            Some(too_many("spec.deviceSelector.selectors", 33, 32)),
        ),
    ];
    for (name, v, want) in cases {
        let r = store().add_taint_rule(serde_json::from_value(v).unwrap());
        match (r, want) {
            (Ok(()), None) => {}
            (Err(e), Some(want)) => {
                assert!(e.to_string().starts_with("DeviceTaintRule "), "{name}: {e}");
                assert_eq!(field(e), want, "{name}");
            }
            (Ok(()), Some(want)) => panic!("{name}: loaded, expected {want}"),
            (Err(e), None) => panic!("{name}: refused with {e}"),
        }
    }
}
