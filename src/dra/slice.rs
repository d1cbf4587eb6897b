//! A published slice on its own: load-time validation, each device's selector view,
//! and capacity request policies in milli-units (consumable capacity, KEP-5075).

use super::error::DraError;
use super::types::{
    DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH, DeviceAttribute, DeviceSpec, RESOURCE_SLICE_MAX_ATTRIBUTE_VALUES_PER_DEVICE,
    ResourceSlice,
};
use crate::model::Quantity;
use crate::selector::{AttributeValue, Device};

/// `CapacityRequestPolicy`, in milli-units.
#[derive(Debug, Clone, Default)]
pub(crate) struct Policy {
    pub default: Option<i128>,
    pub min: Option<i128>,
    pub max: Option<i128>,
    pub step: Option<i128>,
    pub values: Vec<i128>,
}

impl Policy {
    /// The amount a request consumes, or `None` when it violates the policy (upstream
    /// `CapacityRequestPolicy` semantics: below `min` rounds up to `min`, then up to the
    /// next `step`; above `max` violates; with `validValues`, the smallest value at least
    /// the request, none violates).
    pub fn apply(&self, requested: Option<i128>, full: i128) -> Option<i128> {
        let Some(req) = requested.or(self.default) else { return Some(full) };
        if !self.values.is_empty() {
            return self.values.iter().copied().find(|&v| v >= req);
        }
        let mut amount = req;
        if let Some(min) = self.min {
            amount = amount.max(min);
            if let Some(step) = self.step.filter(|&s| s > 0) {
                let over = amount - min;
                amount = min + (over + step - 1) / step * step;
            }
        }
        if self.max.is_some_and(|max| amount > max) {
            return None;
        }
        Some(amount)
    }
}

fn parse_milli(v: &serde_json::Value) -> Option<i128> {
    let text = match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Number(n) => n.to_string(),
        _ => return None,
    };
    Quantity::parse(&text).ok().map(|q| milli(&q))
}

/// Parses a `requestPolicy` (JSON) into a [`Policy`].
pub(crate) fn parse_policy(v: &serde_json::Value) -> Result<Policy, String> {
    let q = |field: &serde_json::Value, what: &str| {
        parse_milli(field).ok_or_else(|| format!("requestPolicy.{what}: not a quantity"))
    };
    let mut p = Policy::default();
    if let Some(d) = v.get("default") {
        p.default = Some(q(d, "default")?);
    }
    if let Some(r) = v.get("validRange") {
        if let Some(x) = r.get("min") {
            p.min = Some(q(x, "validRange.min")?);
        }
        if let Some(x) = r.get("max") {
            p.max = Some(q(x, "validRange.max")?);
        }
        if let Some(x) = r.get("step") {
            p.step = Some(q(x, "validRange.step")?);
        }
    }
    if let Some(vals) = v.get("validValues").and_then(|x| x.as_array()) {
        for x in vals {
            p.values.push(q(x, "validValues")?);
        }
    }
    // API validation rejects these; a non-positive step would otherwise never round.
    if p.step.is_some_and(|s| s <= 0) {
        return Err("requestPolicy.validRange.step must be positive".to_owned());
    }
    if p.min.is_some_and(|m| m < 0) {
        return Err("requestPolicy.validRange.min must not be negative".to_owned());
    }
    if let (Some(min), Some(max)) = (p.min, p.max)
        && max < min
    {
        return Err("requestPolicy.validRange.max must not be less than min".to_owned());
    }
    if p.values.windows(2).any(|w| w[0] >= w[1]) {
        return Err("requestPolicy.validValues must be sorted ascending without duplicates".to_owned());
    }
    Ok(p)
}

/// A quantity in milli-units, widened so sums never overflow.
pub(crate) fn milli(q: &Quantity) -> i128 {
    i128::from(q.milli_value())
}

fn attribute_value(slice: &str, device: &str, name: &str, a: &DeviceAttribute) -> Result<AttributeValue, DraError> {
    let bad = |reason: String| DraError::InvalidSlice { slice: slice.to_owned(), reason };
    let set = usize::from(a.int.is_some())
        + usize::from(a.bool.is_some())
        + usize::from(a.string.is_some())
        + usize::from(a.version.is_some())
        + usize::from(a.ints.is_some())
        + usize::from(a.bools.is_some())
        + usize::from(a.strings.is_some())
        + usize::from(a.versions.is_some());
    if set != 1 {
        return Err(bad(format!(
            "device {device}: attribute {name}: exactly one of int, bool, string, version, ints, bools, strings, versions must be set"
        )));
    }
    let string = |s: &str| {
        if s.chars().count() > DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH {
            return Err(bad(format!(
                "device {device}: attribute {name}: string value longer than {DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH} characters"
            )));
        }
        Ok(AttributeValue::String(s.into()))
    };
    let version = |v: &str| {
        AttributeValue::version(v)
            .map_err(|e| bad(format!("device {device}: attribute {name}: bad version {v:?}: {e}")))
    };
    let list = |items: Result<Vec<AttributeValue>, DraError>, len: usize| {
        if len == 0 {
            return Err(bad(format!("device {device}: attribute {name}: a list value must not be empty")));
        }
        Ok(AttributeValue::List(items?.into_boxed_slice()))
    };
    if let Some(i) = a.int {
        return Ok(AttributeValue::Int(i));
    }
    if let Some(b) = a.bool {
        return Ok(AttributeValue::Bool(b));
    }
    if let Some(s) = &a.string {
        return string(s);
    }
    if let Some(v) = &a.version {
        return version(v);
    }
    if let Some(l) = &a.ints {
        return list(Ok(l.iter().map(|&i| AttributeValue::Int(i)).collect()), l.len());
    }
    if let Some(l) = &a.bools {
        return list(Ok(l.iter().map(|&b| AttributeValue::Bool(b)).collect()), l.len());
    }
    if let Some(l) = &a.strings {
        return list(l.iter().map(|s| string(s)).collect(), l.len());
    }
    let l = a.versions.as_deref().unwrap_or_default();
    list(l.iter().map(|v| version(v)).collect(), l.len())
}

/// Refuses list-valued attributes while `DRAListTypeAttributes` is off: the API server
/// drops the alpha list fields of a new object then, which leaves such an attribute
/// without a value and the slice invalid.
pub(crate) fn refuse_list_attributes(s: &ResourceSlice) -> Result<(), DraError> {
    for d in &s.spec.devices {
        if let Some((name, _)) = d.attributes.iter().find(|(_, a)| a.is_list()) {
            return Err(DraError::InvalidSlice {
                slice: s.metadata.name.clone(),
                reason: format!(
                    "device {}: attribute {name}: list values (ints, bools, strings, versions) need the DRAListTypeAttributes feature gate",
                    d.name
                ),
            });
        }
    }
    Ok(())
}

/// Builds the selector's view of one published device.
pub(crate) fn selector_device(slice: &str, driver: &str, d: &DeviceSpec) -> Result<Device, DraError> {
    let mut dev =
        Device::new(&d.name, driver).with_allow_multiple_allocations(d.allow_multiple_allocations == Some(true));
    let values: usize = d.attributes.values().map(DeviceAttribute::value_count).sum();
    if values > RESOURCE_SLICE_MAX_ATTRIBUTE_VALUES_PER_DEVICE {
        return Err(DraError::InvalidSlice {
            slice: slice.to_owned(),
            reason: format!(
                "device {}: {values} attribute values, more than {RESOURCE_SLICE_MAX_ATTRIBUTE_VALUES_PER_DEVICE}",
                d.name
            ),
        });
    }
    for (name, a) in &d.attributes {
        dev.set_attribute(name, attribute_value(slice, &d.name, name, a)?);
    }
    for (name, c) in &d.capacity {
        dev.set_capacity(name, c.value);
    }
    Ok(dev)
}

/// Validates one slice on its own (load-time errors).
pub(crate) fn validate_slice(s: &ResourceSlice) -> Result<(), DraError> {
    // The API server's limits and formats first, as it orders them, and before any
    // per-device work; the checks below are what it does not cover.
    super::validation::validate_slice(s)?;
    let name = &s.metadata.name;
    let bad = |reason: &str| DraError::InvalidSlice { slice: name.clone(), reason: reason.to_owned() };
    if name.is_empty() {
        return Err(bad("metadata.name is empty"));
    }
    let spec = &s.spec;
    if spec.driver.is_empty() {
        return Err(bad("spec.driver is empty"));
    }
    if spec.pool.name.is_empty() {
        return Err(bad("spec.pool.name is empty"));
    }
    if spec.pool.resource_slice_count < 1 {
        return Err(bad("spec.pool.resourceSliceCount must be at least 1"));
    }
    let selections = usize::from(spec.node_name.as_deref().is_some_and(|n| !n.is_empty()))
        + usize::from(spec.node_selector.is_some())
        + usize::from(spec.all_nodes == Some(true))
        + usize::from(spec.per_device_node_selection == Some(true));
    // Every slice, counter-set slices included (upstream `validateResourceSliceSpec`).
    match selections {
        0 => {
            return Err(bad(
                "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required",
            ));
        }
        1 => {}
        _ => {
            return Err(bad(
                "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required, but multiple fields are set",
            ));
        }
    }
    // Since v1.35 a slice publishes either counter sets or devices, never both (upstream
    // `pkg/apis/resource/validation/validation.go`, `validateResourceSliceSpec`, for every
    // served version); the allocator would treat such a slice as a counter-set slice and
    // skip its devices (`buildPool`).
    if !spec.shared_counters.is_empty() && !spec.devices.is_empty() {
        return Err(DraError::CountersWithDevices { slice: name.clone() });
    }
    let mut seen = ahash::AHashSet::new();
    for d in &spec.devices {
        if !seen.insert(d.name.as_str()) {
            return Err(DraError::DuplicateDevice {
                slice: name.clone(),
                pool: spec.pool.name.clone(),
                device: d.name.clone(),
            });
        }
        selector_device(name, &spec.driver, d)?;
        for (cname, c) in &d.capacity {
            if let Some(rp) = &c.request_policy {
                if d.allow_multiple_allocations != Some(true) {
                    return Err(bad(&format!(
                        "device {}: capacity {cname}: requestPolicy needs allowMultipleAllocations: true",
                        d.name
                    )));
                }
                parse_policy(rp).map_err(|e| bad(&format!("device {}: capacity {cname}: {e}", d.name)))?;
            }
        }
        if spec.per_device_node_selection == Some(true) {
            let n = usize::from(d.node_name.is_some())
                + usize::from(d.node_selector.is_some())
                + usize::from(d.all_nodes == Some(true));
            if n != 1 {
                return Err(bad(&format!(
                    "device {}: with perDeviceNodeSelection exactly one of nodeName, nodeSelector, allNodes must be set",
                    d.name
                )));
            }
        }
    }
    let mut sets = ahash::AHashSet::new();
    for cs in &spec.shared_counters {
        if !sets.insert(cs.name.as_str()) {
            return Err(bad(&format!("duplicate counter set {:?}", cs.name)));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn apply(policy: &serde_json::Value, requested: Option<&str>, capacity: &str) -> Option<i128> {
        let p = parse_policy(policy).unwrap();
        let m = |t: &str| milli(&Quantity::parse(t).unwrap());
        p.apply(requested.map(m), m(capacity))
    }

    #[test]
    fn consumed_capacity_as_upstream() {
        // upstream consumable_capacity_test.go, testCalculateConsumedCapacity and
        // testViolateCapacityRequestPolicy (DRAFractionalCapacityRange off).
        let range = |d: &str, min: &str| json!({"default": d, "validRange": {"min": min}});
        assert_eq!(apply(&json!({}), None, "1"), Some(1000), "empty");
        assert_eq!(apply(&range("1", "1"), None, "2"), Some(1000), "min in range");
        assert_eq!(apply(&json!({"default": "1", "validValues": ["1"]}), None, "2"), Some(1000), "default in set");
        assert_eq!(apply(&range("1", "1"), Some("2"), "2"), Some(2000), "more than min in range");
        assert_eq!(apply(&range("1", "2"), Some("1"), "2"), Some(2000), "less than min in range");
        let step = |s: &str| json!({"default": "1", "validRange": {"min": "1", "step": s}});
        assert_eq!(apply(&step("2"), Some("2"), "3"), Some(3000), "with step (round up)");
        assert_eq!(apply(&step("1"), Some("2"), "2"), Some(2000), "with step (no remaining)");
        assert_eq!(
            apply(&step("1"), Some("1.0000001"), "3"),
            Some(2000),
            "integer-step-sub-milli-request-rounds-up-without-fractional-range"
        );
        let gi = json!({"default": "1Gi", "validRange": {"min": "1Gi", "step": "1Gi"}});
        assert_eq!(apply(&gi, Some("3Gi"), "3Gi"), Some(3 * 1024 * 1024 * 1024 * 1000), "positive-binary-step");
        let set = |v: serde_json::Value| json!({"default": "1", "validValues": v});
        assert_eq!(apply(&set(json!(["1", "2", "3"])), Some("2"), "3"), Some(2000), "valid value in set");
        assert_eq!(apply(&set(json!(["1", "3"])), Some("2"), "3"), Some(3000), "set (round up)");
        assert_eq!(apply(&set(json!(["1", "2"])), Some("3"), "3"), None, "larger than set: violates the policy");
        assert_eq!(apply(&set(json!(["1"])), Some("2"), "2"), None, "not in set");
        let max = json!({"default": "1", "validRange": {"min": "1", "max": "1"}});
        assert_eq!(apply(&max, Some("2"), "2"), None, "more than maximum");
        let below = json!({"default": "10", "validRange": {"min": "10", "step": "5"}});
        assert_eq!(apply(&below, Some("5"), "15"), Some(10_000), "request below min returns min");
    }

    #[test]
    fn invalid_policies_are_load_errors() {
        // upstream rejects a negative step at run time ("negative-step-request-above-min-
        // is-rejected"); schedkit rejects it when the slice is loaded.
        for bad in [
            json!({"validRange": {"min": "10", "step": "-1"}}),
            json!({"validRange": {"min": "-1"}}),
            json!({"validRange": {"min": "2", "max": "1"}}),
            json!({"validValues": ["2", "1"]}),
        ] {
            assert!(parse_policy(&bad).is_err(), "{bad}");
        }
    }
}
