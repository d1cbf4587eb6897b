//! `resource.k8s.io/v1beta1` and `v1beta2` objects in the `v1` shape, as the API
//! server converts them (`pkg/apis/resource/v1beta1/conversion.go`; v1beta2 already
//! has v1's shape for every field schedkit reads).
//!
//! v1beta1 differs in two places:
//!
//! - a `DeviceRequest` carries the exact-request fields itself (`deviceClassName`,
//!   `selectors`, `allocationMode`, `count`, `adminAccess`, `tolerations`,
//!   `capacity`); when any of them is set they move under `exactly` (upstream
//!   `hasAnyMainRequestFieldsSet`), `firstAvailable` stays;
//! - a slice's `Device` wraps its fields in `basic`, which is flattened into the
//!   device; a slice's `nodeName: ""` and `allNodes: false` become unset.

use serde_json::{Map, Value};

use super::ManifestError;

const V1: &str = "resource.k8s.io/v1";
const V1BETA1: &str = "resource.k8s.io/v1beta1";

/// The exact-request fields of a v1beta1 `DeviceRequest`.
const EXACT_FIELDS: [&str; 7] =
    ["deviceClassName", "selectors", "allocationMode", "count", "adminAccess", "tolerations", "capacity"];

/// Whether a v1beta1 field counts as set: Go's zero values (empty string, 0, null)
/// do not.
fn is_set(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::String(s) => !s.is_empty(),
        Value::Number(n) => n.as_f64() != Some(0.0),
        _ => true,
    }
}

fn convert_requests(kind: &'static str, devices: Option<&mut Value>, base: &str) -> Result<(), ManifestError> {
    let Some(requests) = devices.and_then(|d| d.get_mut("requests")).and_then(Value::as_array_mut) else {
        return Ok(());
    };
    for (i, req) in requests.iter_mut().enumerate() {
        let Some(req) = req.as_object_mut() else {
            return Err(ManifestError::Conversion {
                kind,
                api_version: V1BETA1.to_owned(),
                path: format!("{base}.requests[{i}]"),
                message: "a request must be an object".to_owned(),
            });
        };
        let mut exact = Map::new();
        let mut any_set = false;
        for f in EXACT_FIELDS {
            if let Some(v) = req.remove(f) {
                any_set |= is_set(&v);
                if !v.is_null() {
                    exact.insert(f.to_owned(), v);
                }
            }
        }
        if any_set {
            if req.contains_key("exactly") {
                return Err(ManifestError::Conversion {
                    kind,
                    api_version: V1BETA1.to_owned(),
                    path: format!("{base}.requests[{i}].exactly"),
                    message: "v1beta1 has no `exactly`; the request's own fields are its exact request".to_owned(),
                });
            }
            req.insert("exactly".to_owned(), Value::Object(exact));
        }
    }
    Ok(())
}

fn set_v1(obj: &mut Value) {
    if let Some(m) = obj.as_object_mut() {
        m.insert("apiVersion".to_owned(), Value::String(V1.to_owned()));
    }
}

/// ResourceClaim: `spec.devices.requests[]`.
pub(crate) fn resource_claim(from: &str, obj: &mut Value) -> Result<(), ManifestError> {
    if from == V1BETA1 {
        let devices = obj.get_mut("spec").and_then(|s| s.get_mut("devices"));
        convert_requests("ResourceClaim", devices, "spec.devices")?;
    }
    set_v1(obj);
    Ok(())
}

/// ResourceClaimTemplate: `spec.spec.devices.requests[]`.
pub(crate) fn resource_claim_template(from: &str, obj: &mut Value) -> Result<(), ManifestError> {
    if from == V1BETA1 {
        let devices = obj.get_mut("spec").and_then(|s| s.get_mut("spec")).and_then(|s| s.get_mut("devices"));
        convert_requests("ResourceClaimTemplate", devices, "spec.spec.devices")?;
    }
    set_v1(obj);
    Ok(())
}

/// ResourceSlice: `basic` flattened; `nodeName: ""`/`allNodes: false` unset.
pub(crate) fn resource_slice(from: &str, obj: &mut Value) -> Result<(), ManifestError> {
    if from == V1BETA1
        && let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut)
    {
        if spec.get("nodeName").and_then(Value::as_str) == Some("") {
            spec.remove("nodeName");
        }
        if spec.get("allNodes").and_then(Value::as_bool) == Some(false) {
            spec.remove("allNodes");
        }
        if let Some(devices) = spec.get_mut("devices").and_then(Value::as_array_mut) {
            for (i, d) in devices.iter_mut().enumerate() {
                let Some(d) = d.as_object_mut() else { continue };
                match d.remove("basic") {
                    None | Some(Value::Null) => {}
                    Some(Value::Object(basic)) => {
                        for (k, v) in basic {
                            if d.contains_key(&k) {
                                return Err(ManifestError::Conversion {
                                    kind: "ResourceSlice",
                                    api_version: V1BETA1.to_owned(),
                                    path: format!("spec.devices[{i}].{k}"),
                                    message: "set both on the device and in `basic`".to_owned(),
                                });
                            }
                            d.insert(k, v);
                        }
                    }
                    Some(_) => {
                        return Err(ManifestError::Conversion {
                            kind: "ResourceSlice",
                            api_version: V1BETA1.to_owned(),
                            path: format!("spec.devices[{i}].basic"),
                            message: "must be an object".to_owned(),
                        });
                    }
                }
            }
        }
    }
    set_v1(obj);
    Ok(())
}

/// DeviceClass: the same fields in every version.
#[expect(clippy::unnecessary_wraps, reason = "the signature every kind's conversion shares")]
pub(crate) fn device_class(_from: &str, obj: &mut Value) -> Result<(), ManifestError> {
    set_v1(obj);
    Ok(())
}
