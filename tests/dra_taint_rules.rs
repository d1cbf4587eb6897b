//! DeviceTaintRules add taints to the devices their selector matches, on top of the
//! slices' own taints, and the allocator honours them exactly like slice taints (upstream
//! `staging/src/k8s.io/dynamic-resource-allocation/resourceslice/tracker/tracker.go`,
//! `applyPatches`, and its `TestListPatchedResourceSlices` cases; the allocator's
//! `allTaintsTolerated`). Plus the admin access namespace check.

use serde::Deserialize;
use serde_json::{Value, json};

use schedkit::dra::{
    ADMIN_ACCESS_NAMESPACE_LABEL, DeviceTaintRule, DraError, DraStore, NodeResult, ResourceClaim, ResourceClaimTemplate,
};
use schedkit::model::{Labels, TaintEffect};

const DRIVER: &str = "driver-a";

fn store() -> DraStore {
    let s = DraStore::new();
    s.set_device_taint_rules(true);
    for (name, expr) in [
        ("class-a", format!("device.driver == \"{DRIVER}\"")),
        ("big", format!("device.driver == \"{DRIVER}\" && device.attributes[\"{DRIVER}\"].size > 10")),
    ] {
        s.add_class(
            serde_json::from_value(
                json!({"metadata": {"name": name}, "spec": {"selectors": [{"cel": {"expression": expr}}]}}),
            )
            .unwrap(),
        )
        .unwrap();
    }
    for (slice, pool) in [("slice-1", "pool-1"), ("slice-2", "pool-2")] {
        s.add_slice(
            serde_json::from_value(json!({"metadata": {"name": slice},
                "spec": {"driver": DRIVER, "nodeName": "node-1",
                    "pool": {"name": pool, "generation": 1, "resourceSliceCount": 1},
                    "devices": [
                        {"name": "device-1", "attributes": {"size": {"int": 1}}},
                        {"name": "device-2", "attributes": {"size": {"int": 20}},
                         "taints": [{"key": "slice-taint", "effect": "NoSchedule"}]}]}}))
            .unwrap(),
        )
        .unwrap();
    }
    s
}

fn rule(name: &str, selector: &Value, effect: &str) -> DeviceTaintRule {
    serde_json::from_value(json!({
        "apiVersion": "resource.k8s.io/v1alpha3", "kind": "DeviceTaintRule",
        "metadata": {"name": name},
        "spec": {"deviceSelector": selector, "taint": {"key": "example.com/taint", "value": "rule", "effect": effect}}
    }))
    .unwrap()
}

fn keys(s: &DraStore, pool: &str, device: &str) -> Vec<String> {
    s.device_taints(DRIVER, pool, device).unwrap().iter().map(|t| t.key.as_str().to_owned()).collect()
}

#[test]
fn rules_match_by_driver_pool_device_class_and_selector() {
    let s = store();
    // upstream "add-attribute-for-driver"-style cases: a driver-wide rule taints every
    // device, appended after the slice's own taints.
    s.add_taint_rule(rule("all", &json!({"driver": DRIVER}), "NoExecute")).unwrap();
    assert_eq!(keys(&s, "pool-1", "device-1"), ["example.com/taint"]);
    assert_eq!(keys(&s, "pool-2", "device-2"), ["slice-taint", "example.com/taint"]);
    assert_eq!(s.device_taints(DRIVER, "pool-1", "device-1").unwrap()[0].effect, TaintEffect::NoExecute);
    s.remove_taint_rule("all");
    assert!(keys(&s, "pool-1", "device-1").is_empty());

    // Pool + device name.
    s.add_taint_rule(rule("one", &json!({"pool": "pool-2", "device": "device-1"}), "NoSchedule")).unwrap();
    assert!(keys(&s, "pool-1", "device-1").is_empty());
    assert_eq!(keys(&s, "pool-2", "device-1"), ["example.com/taint"]);
    s.remove_taint_rule("one");

    // Another driver matches nothing.
    s.add_taint_rule(rule("other", &json!({"driver": "driver-b"}), "NoSchedule")).unwrap();
    assert!(keys(&s, "pool-1", "device-1").is_empty());
    s.remove_taint_rule("other");

    // Device class: the class's selectors must match; a missing class matches nothing.
    s.add_taint_rule(rule("by-class", &json!({"deviceClassName": "big"}), "NoSchedule")).unwrap();
    assert!(keys(&s, "pool-1", "device-1").is_empty());
    assert_eq!(keys(&s, "pool-1", "device-2"), ["slice-taint", "example.com/taint"]);
    s.remove_class("big");
    assert_eq!(keys(&s, "pool-1", "device-2"), ["slice-taint"], "the class is gone: the rule matches nothing");
    s.remove_taint_rule("by-class");

    // CEL selectors; a runtime error (missing attribute) means no match.
    s.add_taint_rule(rule(
        "cel",
        &json!({"selectors": [{"cel": {"expression": format!("device.attributes[\"{DRIVER}\"].size < 10")}}]}),
        "NoSchedule",
    ))
    .unwrap();
    assert_eq!(keys(&s, "pool-1", "device-1"), ["example.com/taint"]);
    assert_eq!(keys(&s, "pool-1", "device-2"), ["slice-taint"]);
    s.add_taint_rule(rule(
        "runtime-error",
        &json!({"selectors": [{"cel": {"expression": format!("device.attributes[\"{DRIVER}\"].missing == 1")}}]}),
        "NoSchedule",
    ))
    .unwrap();
    assert_eq!(keys(&s, "pool-1", "device-1"), ["example.com/taint"], "a runtime error matches nothing");

    // The informational effect None adds nothing the allocator checks.
    s.add_taint_rule(rule("info", &json!({"driver": DRIVER}), "None")).unwrap();
    assert_eq!(keys(&s, "pool-1", "device-1"), ["example.com/taint"]);
}

fn claim(name: &str, count: i64, tolerations: &Value) -> ResourceClaim {
    serde_json::from_value(json!({"metadata": {"name": name, "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "req-0",
            "exactly": {"deviceClassName": "class-a", "count": count, "tolerations": tolerations}}]}}}))
    .unwrap()
}

fn picked(s: &DraStore, name: &str) -> Option<Vec<String>> {
    match s.allocate_claims(&[("default", name)], "node-1", &Labels::default()).unwrap() {
        NodeResult::Fit(l) => Some(l[0].1.devices.results.iter().map(|r| format!("{}/{}", r.pool, r.device)).collect()),
        NodeResult::NoFit(_) => None,
    }
}

#[test]
fn the_allocator_honours_rule_taints_like_slice_taints() {
    let s = store();
    s.add_claim(claim("any", 1, &json!([]))).unwrap();
    assert_eq!(picked(&s, "any"), Some(vec!["pool-1/device-1".to_owned()]));
    // Taint every device-1: only the (slice-)tainted device-2s are left, and they are
    // tainted too: nothing fits without tolerations (upstream "tainted-two-devices").
    s.add_taint_rule(rule("no-device-1", &json!({"device": "device-1"}), "NoSchedule")).unwrap();
    assert_eq!(picked(&s, "any"), None);
    // Tolerating the rule's taint by key and value (operator Equal) is enough for device-1.
    s.add_claim(claim("equal", 2, &json!([{"key": "example.com/taint", "operator": "Equal", "value": "rule"}])))
        .unwrap();
    assert_eq!(picked(&s, "equal"), Some(vec!["pool-1/device-1".to_owned(), "pool-2/device-1".to_owned()]));
    // A toleration for another effect does not tolerate it.
    s.add_claim(claim(
        "wrong-effect",
        1,
        &json!([{"key": "example.com/taint", "operator": "Exists", "effect": "NoExecute"}]),
    ))
    .unwrap();
    assert_eq!(picked(&s, "wrong-effect"), None);
    // device-2 carries both taints: tolerating both (Exists without a key) makes all four
    // usable (upstream "tainted-one-device-two-taints-both-tolerated").
    s.add_claim(claim("all", 4, &json!([{"operator": "Exists"}]))).unwrap();
    assert_eq!(picked(&s, "all").map(|v| v.len()), Some(4));
    let res = s.allocate_claims(&[("default", "all")], "node-1", &Labels::default()).unwrap();
    let NodeResult::Fit(l) = res else { panic!() };
    assert_eq!(l[0].1.devices.results[0].tolerations.len(), 1, "the toleration is recorded");
    // Removing the rule frees device-1 again.
    s.remove_taint_rule("no-device-1");
    assert_eq!(picked(&s, "any"), Some(vec!["pool-1/device-1".to_owned()]));
}

#[test]
fn invalid_rules_are_typed_errors() {
    let s = store();
    let mut r = rule("", &json!({"driver": DRIVER}), "NoSchedule");
    assert!(matches!(s.add_taint_rule(r.clone()), Err(DraError::Invalid { .. })));
    r.metadata.name = "r".into();
    r.spec.taint.key.clear();
    let e = s.add_taint_rule(r).unwrap_err();
    assert!(e.to_string().starts_with("DeviceTaintRule r: spec.taint.key: Invalid value"), "{e}");
    let e = s
        .add_taint_rule(rule(
            "bad-cel",
            &json!({"selectors": [{"cel": {"expression": "device.driver =="}}]}),
            "NoSchedule",
        ))
        .unwrap_err();
    assert!(matches!(e, DraError::BadSelector { .. }), "{e}");
    assert!(e.to_string().contains("DeviceTaintRule bad-cel"), "{e}");
    let e = s.add_taint_rule(rule("empty-driver", &json!({"driver": ""}), "NoSchedule")).unwrap_err();
    assert!(e.to_string().contains("spec.deviceSelector.driver: Required value"), "{e}");
    // An unknown effect does not deserialize.
    assert!(
        serde_json::from_value::<DeviceTaintRule>(json!({"metadata": {"name": "x"},
            "spec": {"taint": {"key": "k", "effect": "PreferNoSchedule"}}}))
        .is_err()
    );
}

#[test]
fn device_taint_rule_yaml_round_trips() {
    let text = r#"
apiVersion: resource.k8s.io/v1alpha3
kind: DeviceTaintRule
metadata:
  name: gpu-maintenance
  resourceVersion: "12"
spec:
  deviceSelector:
    deviceClassName: gpu.example.com
    driver: gpu.example.com
    pool: worker-1
    device: gpu-3
    selectors:
    - cel:
        expression: device.attributes["gpu.example.com"].model == "LATEST-GPU-MODEL"
  taint:
    key: example.com/maintenance
    value: upgrade
    effect: NoExecute
    timeAdded: "2026-01-01T00:00:00Z"
status:
  conditions:
  - type: EvictionInProgress
    status: "False"
"#;
    let doc = Value::deserialize(serde_norway::Deserializer::from_str(text)).unwrap();
    let r: DeviceTaintRule = serde_json::from_value(doc.clone()).unwrap();
    assert_eq!(serde_json::to_value(&r).unwrap(), doc);
    assert_eq!(r.spec.device_selector.as_ref().unwrap().device.as_deref(), Some("gpu-3"));
    assert_eq!(r.metadata.other["resourceVersion"], "12");
    let yaml = serde_norway::to_string(&r).unwrap();
    let back: DeviceTaintRule = serde_norway::from_str(&yaml).unwrap();
    assert_eq!(back, r);
}

fn admin_claim(ns: &str) -> ResourceClaim {
    serde_json::from_value(json!({"metadata": {"name": "monitor", "namespace": ns},
        "spec": {"devices": {"requests": [
            {"name": "plain", "exactly": {"deviceClassName": "class-a"}},
            {"name": "admin", "exactly": {"deviceClassName": "class-a", "adminAccess": true}}]}}}))
    .unwrap()
}

#[test]
fn admin_access_needs_the_namespace_label() {
    // upstream `AuthorizedForAdmin` (pkg/registry/resource/utils.go) and its integration
    // test: "admin access to devices requires the `resource.kubernetes.io/admin-access:
    // true` label on the containing namespace".
    let s = store();
    let e = s.add_claim(admin_claim("team")).unwrap_err();
    assert!(matches!(&e, DraError::AdminAccessForbidden { index: 1, namespace, .. } if namespace == "team"), "{e:?}");
    assert!(
        e.to_string().contains(
            "admin access to devices requires the `resource.kubernetes.io/admin-access: true` label on the containing namespace"
        ),
        "{e}"
    );
    // A label with another value (case-sensitive) is not enough.
    s.set_namespace_labels("team", [(ADMIN_ACCESS_NAMESPACE_LABEL.to_owned(), "True".to_owned())].into());
    assert!(s.add_claim(admin_claim("team")).is_err());
    s.set_namespace_labels("team", [(ADMIN_ACCESS_NAMESPACE_LABEL.to_owned(), "true".to_owned())].into());
    s.add_claim(admin_claim("team")).unwrap();
    // Templates are checked the same way.
    let t: ResourceClaimTemplate = serde_json::from_value(json!({"metadata": {"name": "t", "namespace": "other"},
        "spec": {"spec": admin_claim("other").spec}}))
    .unwrap();
    let e = s.add_template(t).unwrap_err();
    assert!(e.to_string().starts_with("ResourceClaimTemplate other/t"), "{e}");
    // Claims without admin access need no label.
    s.add_claim(claim("plain", 1, &json!([]))).unwrap();
}

#[test]
fn rules_are_off_by_default_as_the_upstream_gate() {
    // Upstream `DRADeviceTaintRules` is beta and off by default in v1.36: without the
    // switch a rule is validated and kept, but taints nothing.
    let s = DraStore::new();
    assert!(!s.device_taint_rules_enabled());
    s.add_class(
        serde_json::from_value(json!({"metadata": {"name": "class-a"},
            "spec": {"selectors": [{"cel": {"expression": "device.driver == \"driver-a\""}}]}}))
        .unwrap(),
    )
    .unwrap();
    s.add_slice(
        serde_json::from_value(json!({"metadata": {"name": "slice-1"},
            "spec": {"driver": DRIVER, "nodeName": "node-1",
                "pool": {"name": "pool-1", "generation": 1, "resourceSliceCount": 1},
                "devices": [{"name": "device-1"}]}}))
        .unwrap(),
    )
    .unwrap();
    s.add_claim(claim("any", 1, &json!([]))).unwrap();
    s.add_taint_rule(rule("no-device-1", &json!({"device": "device-1"}), "NoSchedule")).unwrap();
    assert!(keys(&s, "pool-1", "device-1").is_empty());
    assert_eq!(picked(&s, "any"), Some(vec!["pool-1/device-1".to_owned()]));
    // A bad rule is still rejected while the gate is off.
    assert!(matches!(
        s.add_taint_rule(rule("empty-driver", &json!({"driver": ""}), "NoSchedule")),
        Err(DraError::Invalid { .. })
    ));
    // Switching on applies the rule kept meanwhile; switching off lifts it again.
    s.set_device_taint_rules(true);
    assert_eq!(keys(&s, "pool-1", "device-1"), ["example.com/taint"]);
    assert_eq!(picked(&s, "any"), None);
    s.set_device_taint_rules(false);
    assert!(keys(&s, "pool-1", "device-1").is_empty());
    assert_eq!(picked(&s, "any"), Some(vec!["pool-1/device-1".to_owned()]));
}
