//! Real manifests (tests/fixtures/dra, sources in its README) load into the v1 types,
//! serialize back to the same document, and load into a store.

use serde::Deserialize;
use serde_json::Value;

use schedkit::dra::{DeviceClass, DraError, DraStore, ResourceClaim, ResourceClaimTemplate, ResourceSlice};

fn docs(file: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(format!("{}/../tests/fixtures/dra/{file}", env!("CARGO_MANIFEST_DIR"))).unwrap();
    serde_norway::Deserializer::from_str(&text)
        .map(|d| Value::deserialize(d).unwrap())
        .filter(|v| !v.is_null())
        .collect()
}

/// Deserializes `doc` as `T`, serializes it back and checks nothing was lost or added.
fn round_trip<T: serde::de::DeserializeOwned + serde::Serialize>(doc: &Value) -> T {
    let typed: T = serde_json::from_value(doc.clone()).unwrap();
    let back = serde_json::to_value(&typed).unwrap();
    assert_eq!(&back, doc, "round trip changed the document");
    typed
}

fn of_kind<'a>(docs: &'a [Value], kind: &'a str) -> impl Iterator<Item = &'a Value> {
    docs.iter().filter(move |d| d["kind"] == kind)
}

#[test]
fn resource_slices_round_trip_and_load() {
    let list = docs("dra-example-driver-resourceslice-list.yaml");
    let items = list[0]["items"].as_array().unwrap();
    let slice: ResourceSlice = round_trip(&items[0]);
    assert_eq!(slice.spec.devices.len(), 8);
    assert_eq!(slice.metadata.other["resourceVersion"], "530");
    let store = DraStore::new();
    store.add_slice(slice).unwrap();

    let part = docs("openshift-partitionable-slices.yaml");
    let slices: Vec<ResourceSlice> = of_kind(&part, "ResourceSlice").map(round_trip).collect();
    assert_eq!(slices.len(), 2);
    assert_eq!(slices[1].spec.devices[1].consumes_counters[0].counter_set, "gpu-0-counter-set");
    for s in slices {
        store.add_slice(s).unwrap();
    }
}

#[test]
fn classes_templates_and_claims_round_trip() {
    let class: DeviceClass = round_trip(&docs("k8s-website-deviceclass.yaml")[0]);
    let store = DraStore::new();
    store.add_class(class).unwrap();

    let t: ResourceClaimTemplate = round_trip(&docs("k8s-website-resourceclaimtemplate.yaml")[0]);
    let claim = ResourceClaim {
        metadata: serde_json::from_value(serde_json::json!({"name": "from-template"})).unwrap(),
        spec: t.spec.spec.clone(),
        ..ResourceClaim::default()
    };
    store.add_claim(claim).unwrap();

    for (file, n) in [
        ("dra-example-driver-admin-access.yaml", 1),
        ("dra-example-driver-partitionable-devices.yaml", 1),
        ("dra-example-driver-prioritized-alternatives.yaml", 2),
    ] {
        let d = docs(file);
        let templates: Vec<ResourceClaimTemplate> = of_kind(&d, "ResourceClaimTemplate").map(round_trip).collect();
        assert_eq!(templates.len(), n, "{file}");
    }
    let d = docs("dra-example-driver-prioritized-alternatives.yaml");
    let t: ResourceClaimTemplate =
        serde_json::from_value(d.iter().find(|v| v["kind"] == "ResourceClaimTemplate").unwrap().clone()).unwrap();
    assert_eq!(t.spec.spec.devices.requests[0].first_available.len(), 3);
}

#[test]
fn website_claim_with_misindented_selector_is_rejected_with_its_name() {
    // The docs example indents `expression:` beside `cel:`, so the selector has no CEL
    // expression; the store says so as the API server does, naming the claim and the
    // field (upstream `validateSelector`: `field.Required`).
    let doc = &docs("k8s-website-resourceclaim.yaml")[0];
    assert!(doc["spec"]["devices"]["requests"][0]["exactly"]["selectors"][0]["cel"].is_null());
    let claim: ResourceClaim = serde_json::from_value(doc.clone()).unwrap();
    let store = DraStore::new();
    store.add_class(serde_json::from_value(docs("k8s-website-deviceclass.yaml")[0].clone()).unwrap()).unwrap();
    let err = store.add_claim(claim).unwrap_err();
    assert!(matches!(err, DraError::Invalid { .. }), "{err}");
    assert_eq!(
        err.to_string(),
        "ResourceClaim default/example-resource-claim: spec.devices.requests[0].exactly.selectors[0].cel: Required value"
    );
}

#[test]
fn live_claim_status_fields_round_trip() {
    // Fields schedkit does not interpret (timestamps, device data) and the typed
    // consumable capacity, binding conditions and per-device status survive a load and
    // save.
    let doc = serde_json::json!({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": "shared-gpu-claim", "namespace": "default", "resourceVersion": "77"},
        "spec": {"devices": {"requests": [{"name": "gpu-request",
            "exactly": {"deviceClassName": "gpu.example.com", "capacity": {"requests": {"memory": "4Gi"}}}}]}},
        "status": {
            "allocation": {
                "allocationTimestamp": "2026-01-01T00:00:00Z",
                "devices": {"results": [{"request": "gpu-request", "driver": "gpu.example.com", "pool": "worker-1",
                    "device": "gpu-0", "consumedCapacity": {"memory": "4Gi"}, "shareID": "1a2b3c",
                    "bindingConditions": ["DeviceAttached"]}]},
                "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["worker-1"]}]}]}
            },
            "reservedFor": [{"resource": "pods", "name": "pod0", "uid": "u-1"}],
            "devices": [{"driver": "gpu.example.com", "pool": "worker-1", "device": "gpu-0",
                "conditions": [{"type": "DeviceAttached", "status": "True", "reason": "Attached",
                    "lastTransitionTime": "2026-01-01T00:00:05Z"}], "data": {"pci": "0000:3b:00.0"}}]
        }
    });
    let claim: ResourceClaim = round_trip(&doc);
    let a = claim.status.as_ref().unwrap().allocation.as_ref().unwrap();
    assert_eq!(a.devices.results[0].share_id.as_deref(), Some("1a2b3c"));
    assert_eq!(a.devices.results[0].consumed_capacity["memory"].to_string(), "4Gi");
    assert_eq!(a.devices.results[0].binding_conditions, ["DeviceAttached"]);
    assert!(claim.status.as_ref().unwrap().devices[0].condition("DeviceAttached").unwrap().is_true());
    assert_eq!(schedkit::dra::binding_state(&claim), schedkit::dra::BindingState::Ready);
}
