//! The API server's validation of DRA objects, applied when they are loaded: list
//! sizes, name formats and string lengths of ResourceSlices, ResourceClaims (and
//! templates), DeviceClasses and DeviceTaintRules, with upstream's limits and field paths.
//!
//! Upstream: `pkg/apis/resource/validation/validation.go` (`validateResourceSliceSpec`,
//! `validateDevice`, `validateDeviceClaim`, `validateDeviceRequest`,
//! `validateDeviceClassSpec`, `ValidateDeviceTaintRule`, `validateDeviceBindingParameters`,
//! ...) and the limits in `k8s.io/api/resource/v1/types.go`.
//! Size checks come first and stop the object's validation, as upstream's do ("DOS
//! protection"), so an oversized object costs one length comparison. Errors are
//! [`DraError::Invalid`] with upstream's [`FieldError`].

use super::error::DraError;
use super::types::{
    DeviceClaim, DeviceClass, DeviceSelector, DeviceSpec, DeviceTaint, DeviceTaintRule, OpaqueDeviceConfiguration,
    ResourceClaimStatus, ResourceSlice,
};
use crate::model::validation::{
    FieldError, check_format, dns1123_label, dns1123_subdomain, is_c_identifier, label_value, qualified_name,
    validate_labels,
};
use crate::model::{NodeSelector, Toleration};

/// Most devices in one ResourceSlice (`ResourceSliceMaxDevices`).
pub const RESOURCE_SLICE_MAX_DEVICES: usize = 128;
/// Most devices in one ResourceSlice when any of them has taints, consumes counters
/// or has a list-type attribute (`ResourceSliceMaxDevicesWithAdvancedFeatures`).
pub const RESOURCE_SLICE_MAX_DEVICES_WITH_ADVANCED_FEATURES: usize = 64;
/// Most attributes and capacities of one device together
/// (`ResourceSliceMaxAttributesAndCapacitiesPerDevice`).
pub const RESOURCE_SLICE_MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE: usize = 32;
/// Most counter sets in one slice (`ResourceSliceMaxCounterSets`).
pub const RESOURCE_SLICE_MAX_COUNTER_SETS: usize = 8;
/// Most counters in one counter set (`ResourceSliceMaxCountersPerCounterSet`).
pub const RESOURCE_SLICE_MAX_COUNTERS_PER_COUNTER_SET: usize = 32;
/// Most counter consumptions of one device
/// (`ResourceSliceMaxDeviceCounterConsumptionsPerDevice`).
pub const RESOURCE_SLICE_MAX_DEVICE_COUNTER_CONSUMPTIONS_PER_DEVICE: usize = 2;
/// Most counters in one consumption (`ResourceSliceMaxCountersPerDeviceCounterConsumption`).
pub const RESOURCE_SLICE_MAX_COUNTERS_PER_DEVICE_COUNTER_CONSUMPTION: usize = 32;
/// Longest pool name (`PoolNameMaxLength`, a DNS subdomain's limit).
pub const POOL_NAME_MAX_LENGTH: usize = 253;
/// Longest driver name (`DriverNameMaxLength`, as CSI driver names).
pub const DRIVER_NAME_MAX_LENGTH: usize = 63;
/// Longest domain of a qualified attribute or capacity name (`DeviceMaxDomainLength`).
pub const DEVICE_MAX_DOMAIN_LENGTH: usize = 63;
/// Longest identifier of an attribute or capacity name (`DeviceMaxIDLength`).
pub const DEVICE_MAX_ID_LENGTH: usize = 32;
/// Most taints of one device (`DeviceTaintsMaxLength`).
pub const DEVICE_TAINTS_MAX_LENGTH: usize = 16;
/// Most binding conditions of one device (`BindingConditionsMaxSize`).
pub const BINDING_CONDITIONS_MAX_SIZE: usize = 4;
/// Most binding failure conditions of one device (`BindingFailureConditionsMaxSize`).
pub const BINDING_FAILURE_CONDITIONS_MAX_SIZE: usize = 4;
/// Most requests in one claim (`DeviceRequestsMaxSize`, equal to
/// `AllocationResultsMaxSize`); also the most request names in a constraint or config.
pub const DEVICE_REQUESTS_MAX_SIZE: usize = 32;
/// Most subrequests of one `firstAvailable` request (`FirstAvailableDeviceRequestMaxSize`).
pub const FIRST_AVAILABLE_DEVICE_REQUEST_MAX_SIZE: usize = 8;
/// Most selectors of one request, subrequest or class (`DeviceSelectorsMaxSize`).
pub const DEVICE_SELECTORS_MAX_SIZE: usize = 32;
/// Most tolerations of one request or subrequest (`DeviceTolerationsMaxLength`).
pub const DEVICE_TOLERATIONS_MAX_LENGTH: usize = 16;
/// Most constraints of one claim (`DeviceConstraintsMaxSize`).
pub const DEVICE_CONSTRAINTS_MAX_SIZE: usize = 32;
/// Most configuration entries of one claim or class (`DeviceConfigMaxSize`).
pub const DEVICE_CONFIG_MAX_SIZE: usize = 32;
/// Longest opaque configuration parameters, in bytes of JSON (`OpaqueParametersMaxLength`).
pub const OPAQUE_PARAMETERS_MAX_LENGTH: usize = 10 * 1024;
/// Most consumers a claim may be reserved for (`ResourceClaimReservedForMaxSize`).
pub const RESOURCE_CLAIM_RESERVED_FOR_MAX_SIZE: usize = 256;

type Check = Result<(), FieldError>;

fn too_many(path: &str, found: usize, limit: usize) -> Check {
    if found > limit { Err(FieldError::too_many(path, found, limit)) } else { Ok(()) }
}

/// Upstream's `ValidateCSIDriverName`, which DRA uses for driver names and the domain
/// of qualified names: required, at most 63 bytes, a DNS subdomain once lowercased.
fn driver_name(path: &str, name: &str) -> Check {
    if name.is_empty() {
        return Err(FieldError::required(path, ""));
    }
    if name.len() > DRIVER_NAME_MAX_LENGTH {
        return Err(FieldError::too_long(path, DRIVER_NAME_MAX_LENGTH));
    }
    match dns1123_subdomain(&name.to_ascii_lowercase()).into_iter().next() {
        None => Ok(()),
        Some(msg) => Err(FieldError::invalid(path, name, msg)),
    }
}

/// Upstream's `validatePoolName`: required, at most 253 bytes, each `/`-separated part
/// a DNS subdomain.
fn pool_name(path: &str, name: &str) -> Check {
    if name.is_empty() {
        return Err(FieldError::required(path, ""));
    }
    if name.len() > POOL_NAME_MAX_LENGTH {
        return Err(FieldError::too_long(path, POOL_NAME_MAX_LENGTH));
    }
    name.split('/').try_for_each(|part| check_format(path, part, dns1123_subdomain))
}

/// Upstream's `validateCIdentifier`: at most 32 bytes, a C identifier.
fn c_identifier(path: &str, id: &str) -> Check {
    if id.len() > DEVICE_MAX_ID_LENGTH {
        return Err(FieldError::too_long(path, DEVICE_MAX_ID_LENGTH));
    }
    if is_c_identifier(id) { Ok(()) } else { check_format(path, id, crate::model::validation::c_identifier) }
}

/// Upstream's `validateQualifiedName` for attribute and capacity names: a C identifier,
/// or a driver-name domain, `/`, and a C identifier. (Upstream does not reject more than
/// one `/`, a gap its source notes; neither does schedkit.)
fn attribute_name(path: &str, name: &str) -> Check {
    let mut parts = name.split('/');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(id), None, _) => c_identifier(path, id),
        (Some(domain), Some(id), None) => {
            if domain.is_empty() {
                return Err(FieldError::invalid(path, "", "the domain must not be empty"));
            }
            driver_name(path, domain)?;
            if id.is_empty() {
                return Err(FieldError::invalid(path, "", "the name must not be empty"));
            }
            c_identifier(path, id)
        }
        _ => Ok(()),
    }
}

/// Upstream's `validateFullyQualifiedName`, the format part: a name without a domain
/// is [`DraError::InvalidClaim`] when the claim is compiled.
fn fully_qualified_name(path: &str, name: &str) -> Check {
    attribute_name(path, name)
}

fn node_selector(path: &str, sel: &NodeSelector) -> Check {
    if sel.node_selector_terms.len() == 1 {
        Ok(())
    } else {
        Err(FieldError {
            path: format!("{path}.nodeSelectorTerms"),
            kind: crate::model::FieldErrorKind::Invalid {
                value: format!("{} terms", sel.node_selector_terms.len()),
                detail: "must have exactly one node selector term".into(),
            },
        })
    }
}

fn optional_true(path: &str, v: Option<bool>) -> Check {
    match v {
        Some(false) => Err(FieldError {
            path: path.to_owned(),
            kind: crate::model::FieldErrorKind::Invalid {
                value: "false".into(),
                detail: "must be either unset or set to true".into(),
            },
        }),
        _ => Ok(()),
    }
}

/// Validates a ResourceSlice as upstream's `ValidateResourceSlice` (everything the
/// rest of schedkit's slice validation does not already check).
pub(crate) fn validate_slice(s: &ResourceSlice) -> Result<(), DraError> {
    slice_errors(s).map_err(|error| DraError::Invalid { object: format!("ResourceSlice {}", s.metadata.name), error })
}

fn object_name(name: &str) -> Check {
    if name.is_empty() {
        return Err(FieldError::required("metadata.name", "name or generateName is required"));
    }
    check_format("metadata.name", name, dns1123_subdomain)
}

fn slice_errors(s: &ResourceSlice) -> Check {
    object_name(&s.metadata.name)?;
    validate_labels("metadata.labels", s.metadata.labels.iter().map(|(k, v)| (k.as_str(), v.as_str())))?;
    let spec = &s.spec;
    driver_name("spec.driver", &spec.driver)?;
    pool_name("spec.pool.name", &spec.pool.name)?;
    if spec.pool.resource_slice_count <= 0 {
        return Err(FieldError::invalid_number(
            "spec.pool.resourceSliceCount",
            spec.pool.resource_slice_count,
            "must be greater than zero",
        ));
    }
    if spec.pool.generation < 0 {
        return Err(FieldError::invalid_number(
            "spec.pool.generation",
            spec.pool.generation,
            "must be greater than or equal to zero",
        ));
    }
    if let Some(n) = &spec.node_name {
        if n.is_empty() {
            return Err(FieldError::invalid("spec.nodeName", n, "must be either unset or set to a non-empty string"));
        }
        check_format("spec.nodeName", n, dns1123_subdomain)?;
    }
    if let Some(sel) = &spec.node_selector {
        node_selector("spec.nodeSelector", sel)?;
    }
    optional_true("spec.allNodes", spec.all_nodes)?;
    optional_true("spec.perDeviceNodeSelection", spec.per_device_node_selection)?;
    let advanced = spec.devices.iter().any(|d| {
        !d.taints.is_empty()
            || !d.consumes_counters.is_empty()
            || d.attributes.values().any(super::types::DeviceAttribute::is_list)
    });
    let max = if advanced { RESOURCE_SLICE_MAX_DEVICES_WITH_ADVANCED_FEATURES } else { RESOURCE_SLICE_MAX_DEVICES };
    too_many("spec.devices", spec.devices.len(), max)?;
    too_many("spec.sharedCounters", spec.shared_counters.len(), RESOURCE_SLICE_MAX_COUNTER_SETS)?;
    let per_device = spec.per_device_node_selection == Some(true);
    for (i, d) in spec.devices.iter().enumerate() {
        device(&format!("spec.devices[{i}]"), d, per_device)?;
    }
    for (i, cs) in spec.shared_counters.iter().enumerate() {
        let path = format!("spec.sharedCounters[{i}]");
        counter_map(&path, "name", &cs.name, cs.counters.keys(), RESOURCE_SLICE_MAX_COUNTERS_PER_COUNTER_SET)?;
    }
    Ok(())
}

/// A counter set or a device's consumption of one: its (set) name a DNS label, at least
/// one counter, at most `limit`, each named by a DNS label.
fn counter_map<'a>(
    path: &str,
    name_field: &str,
    name: &str,
    counters: impl ExactSizeIterator<Item = &'a String>,
    limit: usize,
) -> Check {
    let name_path = format!("{path}.{name_field}");
    if name.is_empty() {
        return Err(FieldError::required(name_path, ""));
    }
    check_format(&name_path, name, dns1123_label)?;
    let counters_path = format!("{path}.counters");
    if counters.len() == 0 {
        return Err(FieldError::required(counters_path, ""));
    }
    too_many(&counters_path, counters.len(), limit)?;
    // Upstream reports a bad key at the map's path.
    counters.into_iter().try_for_each(|c| check_format(&counters_path, c, dns1123_label))
}

fn device(path: &str, d: &DeviceSpec, per_device: bool) -> Check {
    check_format(&format!("{path}.name"), &d.name, dns1123_label)?;
    let n = d.attributes.len() + d.capacity.len();
    if n > RESOURCE_SLICE_MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE {
        return Err(FieldError::invalid_number(
            path,
            n as i64,
            format!(
                "the total number of attributes and capacities must not exceed {RESOURCE_SLICE_MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE}"
            ),
        ));
    }
    // Upstream reports a bad key at the map's path.
    let attributes = format!("{path}.attributes");
    d.attributes.keys().try_for_each(|name| attribute_name(&attributes, name))?;
    let capacity = format!("{path}.capacity");
    d.capacity.keys().try_for_each(|name| attribute_name(&capacity, name))?;
    too_many(&format!("{path}.taints"), d.taints.len(), DEVICE_TAINTS_MAX_LENGTH)?;
    for (i, t) in d.taints.iter().enumerate() {
        device_taint(&format!("{path}.taints[{i}]"), t)?;
    }
    let consumes = format!("{path}.consumesCounters");
    too_many(&consumes, d.consumes_counters.len(), RESOURCE_SLICE_MAX_DEVICE_COUNTER_CONSUMPTIONS_PER_DEVICE)?;
    for (i, c) in d.consumes_counters.iter().enumerate() {
        let cp = format!("{consumes}[{i}]");
        counter_map(
            &cp,
            "counterSet",
            &c.counter_set,
            c.counters.keys(),
            RESOURCE_SLICE_MAX_COUNTERS_PER_DEVICE_COUNTER_CONSUMPTION,
        )?;
        if d.consumes_counters[..i].iter().any(|o| o.counter_set == c.counter_set) {
            return Err(FieldError::duplicate(cp, &c.counter_set));
        }
    }
    if !per_device && (d.node_name.is_some() || d.node_selector.is_some() || d.all_nodes.is_some()) {
        return Err(FieldError {
            path: path.to_owned(),
            kind: crate::model::FieldErrorKind::Invalid {
                value: "null".into(),
                detail: "`nodeName`, `nodeSelector` and `allNodes` can only be set if `perDeviceNodeSelection` is set to true in the ResourceSlice spec".into(),
            },
        });
    }
    if per_device {
        if let Some(n) = &d.node_name {
            if n.is_empty() {
                return Err(FieldError::invalid(format!("{path}.nodeName"), n, "must not be empty"));
            }
            check_format(&format!("{path}.nodeName"), n, dns1123_subdomain)?;
        }
        optional_true(&format!("{path}.allNodes"), d.all_nodes)?;
    }
    binding_parameters(path, &d.binding_conditions, &d.binding_failure_conditions)
}

/// Upstream's `validateDeviceTaint`: the key a qualified name (so required), the value a
/// label value. The effect is an enum here: an unknown one fails to deserialize.
fn device_taint(path: &str, t: &DeviceTaint) -> Check {
    check_format(&format!("{path}.key"), &t.key, qualified_name)?;
    check_format(&format!("{path}.value"), &t.value, label_value)
}

/// Upstream's `validateDeviceBindingParameters`, for a device of a slice and for an
/// allocation result: at most 4 of each list, every entry a qualified name (as
/// `metav1validation.ValidateLabelName`), no entry twice in a list, no failure condition
/// that is also a binding condition, and each list only with the other.
fn binding_parameters(path: &str, conditions: &[String], failure: &[String]) -> Check {
    let cp = format!("{path}.bindingConditions");
    let fp = format!("{path}.bindingFailureConditions");
    too_many(&cp, conditions.len(), BINDING_CONDITIONS_MAX_SIZE)?;
    for (i, c) in conditions.iter().enumerate() {
        check_format(&format!("{cp}[{i}]"), c, qualified_name)?;
    }
    too_many(&fp, failure.len(), BINDING_FAILURE_CONDITIONS_MAX_SIZE)?;
    for (i, c) in failure.iter().enumerate() {
        check_format(&format!("{fp}[{i}]"), c, qualified_name)?;
    }
    for (i, c) in conditions.iter().enumerate() {
        if conditions[..i].contains(c) {
            return Err(FieldError::duplicate(format!("{cp}[{i}]"), c));
        }
    }
    for (i, c) in failure.iter().enumerate() {
        if failure[..i].contains(c) {
            return Err(FieldError::duplicate(format!("{fp}[{i}]"), c));
        }
        if conditions.contains(c) {
            return Err(FieldError::invalid(
                format!("{fp}[{i}]"),
                c,
                "bindingFailureConditions must not overlap with bindingConditions",
            ));
        }
    }
    // Upstream prints the missing list as Go does: `[]string(nil)`.
    let both = |p: String, detail: &str| FieldError {
        path: p,
        kind: crate::model::FieldErrorKind::Invalid { value: "[]string(nil)".into(), detail: detail.into() },
    };
    if conditions.is_empty() && !failure.is_empty() {
        return Err(both(cp, "bindingConditions are required to use bindingFailureConditions"));
    }
    if failure.is_empty() && !conditions.is_empty() {
        return Err(both(fp, "bindingFailureConditions are required to use bindingConditions"));
    }
    Ok(())
}

/// Validates a DeviceTaintRule as upstream's `ValidateDeviceTaintRule`: the name a DNS
/// subdomain; the selector's class name a DNS subdomain, its driver a driver name, its
/// pool a pool name and its device a DNS label; at most 32 selectors, each with a CEL
/// expression (compiled afterwards, as for claims); the taint as a slice's.
pub(crate) fn validate_taint_rule(rule: &DeviceTaintRule) -> Result<(), DraError> {
    taint_rule_errors(rule)
        .map_err(|error| DraError::Invalid { object: format!("DeviceTaintRule {}", rule.metadata.name), error })
}

fn taint_rule_errors(rule: &DeviceTaintRule) -> Check {
    object_name(&rule.metadata.name)?;
    if let Some(sel) = &rule.spec.device_selector {
        let sp = "spec.deviceSelector";
        if let Some(c) = &sel.device_class_name {
            class_name(&format!("{sp}.deviceClassName"), c)?;
        }
        if let Some(d) = &sel.driver {
            driver_name(&format!("{sp}.driver"), d)?;
        }
        if let Some(p) = &sel.pool {
            pool_name(&format!("{sp}.pool"), p)?;
        }
        if let Some(d) = &sel.device {
            check_format(&format!("{sp}.device"), d, dns1123_label)?;
        }
        selectors(&format!("{sp}.selectors"), &sel.selectors)?;
    }
    device_taint("spec.taint", &rule.spec.taint)
}

/// Validates a claim's (or template's) device claim as upstream's `validateDeviceClaim`,
/// under `path` (`spec.devices`, or `spec.spec.devices` for a template), and its status
/// list sizes. `object` names it in the error.
pub(crate) fn validate_claim(
    object: &str,
    path: &str,
    devices: &DeviceClaim,
    status: Option<&ResourceClaimStatus>,
) -> Result<(), DraError> {
    claim_errors(path, devices, status).map_err(|error| DraError::Invalid { object: object.to_owned(), error })
}

fn claim_errors(path: &str, devices: &DeviceClaim, status: Option<&ResourceClaimStatus>) -> Check {
    let requests = format!("{path}.requests");
    too_many(&requests, devices.requests.len(), DEVICE_REQUESTS_MAX_SIZE)?;
    for (i, r) in devices.requests.iter().enumerate() {
        let rp = format!("{requests}[{i}]");
        check_format(&format!("{rp}.name"), &r.name, dns1123_label)?;
        if let Some(e) = &r.exactly {
            let ep = format!("{rp}.exactly");
            class_name(&format!("{ep}.deviceClassName"), &e.device_class_name)?;
            selectors(&format!("{ep}.selectors"), &e.selectors)?;
            all_without_count(&ep, e.allocation_mode, e.count)?;
            tolerations(&format!("{ep}.tolerations"), &e.tolerations)?;
        }
        let subs = format!("{rp}.firstAvailable");
        too_many(&subs, r.first_available.len(), FIRST_AVAILABLE_DEVICE_REQUEST_MAX_SIZE)?;
        for (j, s) in r.first_available.iter().enumerate() {
            let sp = format!("{subs}[{j}]");
            check_format(&format!("{sp}.name"), &s.name, dns1123_label)?;
            class_name(&format!("{sp}.deviceClassName"), &s.device_class_name)?;
            selectors(&format!("{sp}.selectors"), &s.selectors)?;
            all_without_count(&sp, s.allocation_mode, s.count)?;
            tolerations(&format!("{sp}.tolerations"), &s.tolerations)?;
        }
    }
    let constraints = format!("{path}.constraints");
    too_many(&constraints, devices.constraints.len(), DEVICE_CONSTRAINTS_MAX_SIZE)?;
    for (i, c) in devices.constraints.iter().enumerate() {
        let cp = format!("{constraints}[{i}]");
        request_refs(&format!("{cp}.requests"), &c.requests)?;
        if let Some(a) = &c.match_attribute {
            fully_qualified_name(&format!("{cp}.matchAttribute"), a)?;
        } else if let Some(a) = &c.distinct_attribute {
            fully_qualified_name(&format!("{cp}.distinctAttribute"), a)?;
        }
    }
    let config = format!("{path}.config");
    too_many(&config, devices.config.len(), DEVICE_CONFIG_MAX_SIZE)?;
    for (i, c) in devices.config.iter().enumerate() {
        let cp = format!("{config}[{i}]");
        request_refs(&format!("{cp}.requests"), &c.requests)?;
        opaque(&cp, c.opaque.as_ref())?;
    }
    if let Some(st) = status {
        too_many("status.reservedFor", st.reserved_for.len(), RESOURCE_CLAIM_RESERVED_FOR_MAX_SIZE)?;
        if let Some(a) = &st.allocation {
            too_many(
                "status.allocation.devices.results",
                a.devices.results.len(),
                super::ALLOCATION_RESULTS_MAX_SIZE as usize,
            )?;
            for (i, r) in a.devices.results.iter().enumerate() {
                binding_parameters(
                    &format!("status.allocation.devices.results[{i}]"),
                    &r.binding_conditions,
                    &r.binding_failure_conditions,
                )?;
            }
            // Class and claim configuration.
            too_many("status.allocation.devices.config", a.devices.config.len(), 2 * DEVICE_CONFIG_MAX_SIZE)?;
        }
    }
    Ok(())
}

/// Request names in a constraint or config: at most 32, no repeats, each a request name
/// or `request/subrequest` of DNS labels (that they exist is checked when compiling).
fn request_refs(path: &str, names: &[String]) -> Check {
    too_many(path, names.len(), DEVICE_REQUESTS_MAX_SIZE)?;
    for (i, n) in names.iter().enumerate() {
        let np = format!("{path}[{i}]");
        let segments: Vec<&str> = n.split('/').collect();
        if segments.len() > 2 {
            return Err(FieldError::invalid(
                np,
                n,
                "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'",
            ));
        }
        for s in segments {
            check_format(&np, s, dns1123_label)?;
        }
        if names[..i].contains(n) {
            return Err(FieldError::duplicate(np, n));
        }
    }
    Ok(())
}

fn class_name(path: &str, name: &str) -> Check {
    if name.is_empty() {
        return Err(FieldError::required(path, ""));
    }
    check_format(path, name, dns1123_subdomain)
}

fn selectors(path: &str, list: &[DeviceSelector]) -> Check {
    too_many(path, list.len(), DEVICE_SELECTORS_MAX_SIZE)?;
    for (i, s) in list.iter().enumerate() {
        if s.cel.is_none() {
            return Err(FieldError::required(format!("{path}[{i}].cel"), ""));
        }
    }
    Ok(())
}

fn tolerations(path: &str, list: &[Toleration]) -> Check {
    too_many(path, list.len(), DEVICE_TOLERATIONS_MAX_LENGTH)
}

/// Upstream's `validateDeviceAllocationMode` for `All`: no count (a count below 1 with
/// `ExactCount` is [`DraError::InvalidCount`] when compiling).
fn all_without_count(path: &str, mode: Option<super::types::AllocationMode>, count: Option<i64>) -> Check {
    match (mode, count) {
        (Some(super::types::AllocationMode::All), Some(c)) if c != 0 => Err(FieldError::invalid_number(
            format!("{path}.count"),
            c,
            "must not be specified when allocationMode is 'All'",
        )),
        _ => Ok(()),
    }
}

/// Upstream's `validateOpaqueConfiguration`: a driver name, and parameters that are a
/// JSON object of at most [`OPAQUE_PARAMETERS_MAX_LENGTH`] bytes (measured here on the
/// compact JSON text, upstream on the bytes as sent).
fn opaque(path: &str, config: Option<&OpaqueDeviceConfiguration>) -> Check {
    let Some(o) = config else {
        return Err(FieldError::required(format!("{path}.opaque"), ""));
    };
    driver_name(&format!("{path}.opaque.driver"), &o.driver)?;
    let params = format!("{path}.opaque.parameters");
    if o.parameters.is_null() {
        return Err(FieldError::required(params, ""));
    }
    let len = serde_json::to_string(&o.parameters).map_or(0, |s| s.len());
    if len > OPAQUE_PARAMETERS_MAX_LENGTH {
        return Err(FieldError::too_long(params, OPAQUE_PARAMETERS_MAX_LENGTH));
    }
    if !o.parameters.is_object() {
        return Err(FieldError::invalid(params, "<value omitted>", "must be a valid JSON object"));
    }
    Ok(())
}

/// Validates a DeviceClass as upstream's `ValidateDeviceClass`: its name, selector and
/// config counts, configurations.
pub(crate) fn validate_class(class: &DeviceClass) -> Result<(), DraError> {
    class_errors(class)
        .map_err(|error| DraError::Invalid { object: format!("DeviceClass {}", class.metadata.name), error })
}

fn class_errors(class: &DeviceClass) -> Check {
    check_format("metadata.name", &class.metadata.name, dns1123_subdomain)?;
    selectors("spec.selectors", &class.spec.selectors)?;
    too_many("spec.config", class.spec.config.len(), DEVICE_CONFIG_MAX_SIZE)?;
    for (i, c) in class.spec.config.iter().enumerate() {
        opaque(&format!("spec.config[{i}]"), c.opaque.as_ref())?;
    }
    Ok(())
}
