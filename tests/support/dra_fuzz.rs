//! What the DRA fuzz target does with one input; shared by `fuzz/fuzz_targets/dra.rs`
//! (cargo-fuzz, nightly) and the stable replay test `tests/dra_fuzz_corpus.rs`.
//!
//! The input is JSON: one Kubernetes object, a `List`, or an array of objects
//! (`ResourceSlice`, `DeviceClass`, `ResourceClaim`, `ResourceClaimTemplate`,
//! `DeviceTaintRule`, `Namespace`, `Pod`). Everything is loaded into a `DraStore` (load
//! errors are the expected answer to bad objects), then every pod is gathered, filtered,
//! allocated, reserved, bound and released on every node the slices name. A panic, or
//! a device held twice / a counter overdrawn afterwards ([`DraStore::audit`]), is a bug.

use schedkit::dra::{Audit, DeviceClass, DeviceTaintRule, DraStore, NodeResult, ResourceClaim, ResourceSlice};
use schedkit::dra::{ResourceClaimTemplate, claim_name_for};
use schedkit::model::{Labels, Pod, Symbol};
use serde_json::Value;

/// Loads and schedules `data`; returns how many pods were reserved on some node.
/// Panics only on a bug.
pub fn exercise(data: &[u8]) -> usize {
    let Ok(value) = serde_json::from_slice::<Value>(data) else { return 0 };
    let mut objects = Vec::new();
    flatten(value, &mut objects, 0);
    let store = DraStore::new();
    store.set_device_taint_rules(true);
    let mut pods: Vec<Pod> = Vec::new();
    let mut nodes: Vec<String> = vec!["node-0".into()];
    for object in objects {
        let kind = object.get("kind").and_then(Value::as_str).unwrap_or_default().to_owned();
        match kind.as_str() {
            "ResourceSlice" => {
                if let Ok(slice) = serde_json::from_value::<ResourceSlice>(object) {
                    if let Some(node) = slice.spec.node_name.clone()
                        && !nodes.contains(&node)
                        && nodes.len() < 8
                    {
                        nodes.push(node);
                    }
                    let _ = store.add_slice(slice);
                }
            }
            "DeviceClass" => {
                if let Ok(class) = serde_json::from_value::<DeviceClass>(object) {
                    let _ = store.add_class(class);
                }
            }
            "ResourceClaim" => {
                if let Ok(claim) = serde_json::from_value::<ResourceClaim>(object) {
                    let _ = store.add_claim(claim);
                }
            }
            "ResourceClaimTemplate" => {
                if let Ok(template) = serde_json::from_value::<ResourceClaimTemplate>(object) {
                    let _ = store.add_template(template);
                }
            }
            "DeviceTaintRule" => {
                if let Ok(rule) = serde_json::from_value::<DeviceTaintRule>(object) {
                    let _ = store.add_taint_rule(rule);
                }
            }
            "Namespace" => {
                let name = object.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
                let labels = object
                    .pointer("/metadata/labels")
                    .and_then(Value::as_object)
                    .map(|m| m.iter().filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned()))).collect())
                    .unwrap_or_default();
                store.set_namespace_labels(name, labels);
            }
            "Pod" => {
                if let Ok(pod) = serde_json::from_value::<Pod>(object)
                    && pods.len() < 8
                {
                    pods.push(pod);
                }
            }
            _ => {}
        }
    }
    let labels = Labels::default();
    let mut reserved = 0;
    for (i, pod) in pods.iter().enumerate() {
        for pc in &pod.spec.resource_claims {
            if pc.resource_claim_template_name.is_some()
                && store.claim(&pod.metadata.namespace, &claim_name_for(pod, pc)).is_none()
            {
                let _ = store.instantiate_template(pod, pc);
            }
        }
        let uid = format!("uid-{i}");
        if let Ok(Some(claims)) = store.gather(pod) {
            for node in &nodes {
                let _ = claims.fits(Symbol::intern(node), &labels);
                let _ = claims.allocate(node, &labels);
            }
        }
        for node in &nodes {
            if let Ok(NodeResult::Fit(_)) = store.reserve(pod, &uid, node, &labels) {
                reserved += 1;
                break;
            }
        }
        assert_eq!(store.audit(), Audit::default(), "after reserving pod {i}");
        if i % 2 == 0 {
            store.commit(pod, &uid);
        } else {
            store.unreserve(&uid);
        }
        assert_eq!(store.audit(), Audit::default(), "after binding or unreserving pod {i}");
    }
    for (i, pod) in pods.iter().enumerate().step_by(4) {
        for pc in &pod.spec.resource_claims {
            store.release(&pod.metadata.namespace, &claim_name_for(pod, pc), &format!("uid-{i}"));
        }
    }
    assert_eq!(store.audit(), Audit::default(), "after releasing");
    reserved
}

/// Objects of a `List` or an array, a bounded number of levels deep.
fn flatten(value: Value, out: &mut Vec<Value>, depth: usize) {
    if depth > 4 || out.len() >= 64 {
        return;
    }
    match value {
        Value::Array(items) => items.into_iter().for_each(|v| flatten(v, out, depth + 1)),
        Value::Object(mut map) if map.get("kind").and_then(Value::as_str) == Some("List") => {
            if let Some(items) = map.remove("items") {
                flatten(items, out, depth + 1);
            }
        }
        v @ Value::Object(_) => out.push(v),
        _ => {}
    }
}
