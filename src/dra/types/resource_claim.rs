//! `ResourceClaim` and `ResourceClaimTemplate`: what a pod asks for, and the
//! allocation and device status the scheduler and drivers write back.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::ObjectMeta;
use super::device_class::{DeviceSelector, OpaqueDeviceConfiguration};
use crate::model::{NodeSelector, Quantity, Toleration};

/// `ResourceClaim`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceClaim {
    /// `resource.k8s.io/v1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// `ResourceClaim`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Metadata (namespace + name identify the claim).
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// Spec.
    #[serde(default)]
    pub spec: ResourceClaimSpec,
    /// Status: the allocation and the pods using it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ResourceClaimStatus>,
}

/// The finalizer that keeps an allocated claim from being removed while it is in use
/// (upstream `resourceapi.Finalizer`, `k8s.io/api/resource/v1`): the scheduler adds it
/// before it writes an allocation, the resource claim controller removes it once the
/// claim is deallocated.
pub const DELETE_PROTECTION_FINALIZER: &str = "resource.kubernetes.io/delete-protection";

impl ResourceClaim {
    /// Whether deletion was requested (`metadata.deletionTimestamp` is set): a claim
    /// being deleted is neither allocated nor reserved any more.
    pub fn is_being_deleted(&self) -> bool {
        self.metadata.other.get("deletionTimestamp").is_some_and(|t| !t.is_null())
    }

    /// Whether `metadata.finalizers` lists `finalizer`.
    pub fn has_finalizer(&self, finalizer: &str) -> bool {
        self.metadata
            .other
            .get("finalizers")
            .and_then(serde_json::Value::as_array)
            .is_some_and(|f| f.iter().any(|v| v.as_str() == Some(finalizer)))
    }

    /// Appends `finalizer` to `metadata.finalizers` unless it is there already.
    pub fn add_finalizer(&mut self, finalizer: &str) {
        if self.has_finalizer(finalizer) {
            return;
        }
        let list = self.metadata.other.entry("finalizers".to_owned()).or_insert_with(|| serde_json::json!([]));
        match list.as_array_mut() {
            Some(items) => items.push(finalizer.into()),
            None => *list = serde_json::json!([finalizer]),
        }
    }
}

/// `ResourceClaimSpec`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceClaimSpec {
    /// The devices asked for.
    #[serde(default)]
    pub devices: DeviceClaim,
}

/// `DeviceClaim`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceClaim {
    /// Requests, all of which must be satisfied.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requests: Vec<DeviceRequest>,
    /// Constraints across requests.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub constraints: Vec<DeviceConstraint>,
    /// Configuration for drivers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub config: Vec<DeviceClaimConfiguration>,
}

/// `DeviceRequest`: exactly one of `exactly` and `firstAvailable`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceRequest {
    /// Unique within the claim.
    pub name: String,
    /// One kind of device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exactly: Option<ExactDeviceRequest>,
    /// Alternatives in order of preference.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub first_available: Vec<DeviceSubRequest>,
}

/// `DeviceAllocationMode`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum AllocationMode {
    /// `count` devices (default 1).
    #[default]
    ExactCount,
    /// Every matching device on the node; fails if any is unavailable.
    All,
}

/// `ExactDeviceRequest`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExactDeviceRequest {
    /// The class whose selectors and config apply.
    pub device_class_name: String,
    /// Further selectors (all must match).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub selectors: Vec<DeviceSelector>,
    /// ExactCount (default) or All.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocation_mode: Option<AllocationMode>,
    /// Devices wanted with ExactCount (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<i64>,
    /// Monitoring access: devices in use by others may be shared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admin_access: Option<bool>,
    /// Tolerations for device taints.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<Toleration>,
    /// Consumable capacity wanted from each device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<CapacityRequirements>,
    /// Fields schedkit carries but does not interpret (newer or alpha API fields), kept
    /// so objects round-trip.
    #[serde(flatten)]
    pub other: BTreeMap<String, serde_json::Value>,
}

/// `DeviceSubRequest`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceSubRequest {
    /// Unique within the request; results name it `request/subrequest`.
    pub name: String,
    /// The class.
    pub device_class_name: String,
    /// Further selectors.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub selectors: Vec<DeviceSelector>,
    /// ExactCount (default) or All.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocation_mode: Option<AllocationMode>,
    /// Devices wanted with ExactCount (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<i64>,
    /// Tolerations for device taints.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<Toleration>,
    /// Consumable capacity wanted from each device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<CapacityRequirements>,
    /// Fields schedkit carries but does not interpret (newer or alpha API fields), kept
    /// so objects round-trip.
    #[serde(flatten)]
    pub other: BTreeMap<String, serde_json::Value>,
}

/// `CapacityRequirements`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CapacityRequirements {
    /// Minimum capacity per device, by qualified name.
    #[serde(default)]
    pub requests: BTreeMap<String, Quantity>,
}

/// `DeviceConstraint`: exactly one of matchAttribute and distinctAttribute.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceConstraint {
    /// The requests it covers; empty means all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requests: Vec<String>,
    /// All devices have this attribute with one value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub match_attribute: Option<String>,
    /// All devices have this attribute with pairwise different values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distinct_attribute: Option<String>,
}

/// `DeviceClaimConfiguration`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceClaimConfiguration {
    /// The requests it applies to; empty means all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requests: Vec<String>,
    /// Opaque driver parameters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opaque: Option<OpaqueDeviceConfiguration>,
}

/// `ResourceClaimStatus`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceClaimStatus {
    /// Set once the claim is allocated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocation: Option<AllocationResult>,
    /// The pods using the claim.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reserved_for: Vec<ResourceClaimConsumerReference>,
    /// Per-device status written by drivers; its conditions are what device binding
    /// conditions wait for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub devices: Vec<AllocatedDeviceStatus>,
    /// Fields schedkit carries but does not interpret (newer or alpha API fields), kept
    /// so objects round-trip.
    #[serde(flatten)]
    pub other: BTreeMap<String, serde_json::Value>,
}

/// `ResourceClaimConsumerReference`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceClaimConsumerReference {
    /// API group (empty for pods).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_group: String,
    /// `pods`.
    pub resource: String,
    /// Name.
    pub name: String,
    /// UID.
    pub uid: String,
}

/// `AllocatedDeviceStatus`: what a driver reports about one allocated device.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AllocatedDeviceStatus {
    /// Driver.
    pub driver: String,
    /// Pool.
    pub pool: String,
    /// Device.
    pub device: String,
    /// The share, for a device allocated several times (consumable capacity).
    #[serde(rename = "shareID", default, skip_serializing_if = "Option::is_none")]
    pub share_id: Option<String>,
    /// Conditions (`metav1.Condition`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// Fields schedkit carries but does not interpret (`data`, `networkData`).
    #[serde(flatten)]
    pub other: BTreeMap<String, serde_json::Value>,
}

impl AllocatedDeviceStatus {
    /// The condition of a type, if reported.
    pub fn condition(&self, kind: &str) -> Option<&Condition> {
        self.conditions.iter().find(|c| c.kind == kind)
    }
}

/// `metav1.Condition`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    /// The condition type.
    #[serde(rename = "type")]
    pub kind: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// Machine-readable reason.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// Human-readable message.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// When the status last changed (RFC 3339, carried).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<String>,
    /// The generation the condition was set for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

impl Condition {
    /// A condition of `kind` with `status` (`True`, `False`, `Unknown`).
    pub fn new(kind: &str, status: &str) -> Condition {
        Condition { kind: kind.to_owned(), status: status.to_owned(), ..Condition::default() }
    }

    /// Whether the status is `True` (exactly, as `meta.IsStatusConditionTrue`).
    pub fn is_true(&self) -> bool {
        self.status == "True"
    }
}

/// `AllocationResult`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AllocationResult {
    /// The devices.
    #[serde(default)]
    pub devices: DeviceAllocationResult,
    /// The nodes where the allocation is usable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<NodeSelector>,
    /// When the scheduler recorded the allocation (RFC 3339), written at PreBind when
    /// device binding conditions are enabled (upstream `bindClaim`); the binding timeout
    /// runs from that moment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocation_timestamp: Option<String>,
    /// Fields schedkit carries but does not interpret (newer or alpha API fields), kept
    /// so objects round-trip.
    #[serde(flatten)]
    pub other: BTreeMap<String, serde_json::Value>,
}

/// `DeviceAllocationResult`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceAllocationResult {
    /// One entry per allocated device.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub results: Vec<DeviceRequestAllocationResult>,
    /// Class and claim configuration, in that order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub config: Vec<DeviceAllocationConfiguration>,
}

/// `DeviceRequestAllocationResult`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceRequestAllocationResult {
    /// The request (`request` or `request/subrequest`).
    pub request: String,
    /// Driver.
    pub driver: String,
    /// Pool.
    pub pool: String,
    /// Device.
    pub device: String,
    /// Set when the request asked for admin access.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admin_access: Option<bool>,
    /// The tolerations that applied.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<Toleration>,
    /// The device's binding conditions, copied at allocation.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub binding_conditions: Vec<String>,
    /// The device's binding failure conditions, copied at allocation.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub binding_failure_conditions: Vec<String>,
    /// What this allocation consumes of a device allocated several times
    /// (`allowMultipleAllocations`, KEP-5075), by capacity name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub consumed_capacity: BTreeMap<String, Quantity>,
    /// Identifies this allocation's share of such a device.
    #[serde(rename = "shareID", default, skip_serializing_if = "Option::is_none")]
    pub share_id: Option<String>,
    /// Fields schedkit carries but does not interpret (newer or alpha API fields), kept
    /// so objects round-trip.
    #[serde(flatten)]
    pub other: BTreeMap<String, serde_json::Value>,
}

/// `DeviceAllocationConfiguration`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceAllocationConfiguration {
    /// `FromClass` or `FromClaim`.
    pub source: String,
    /// The requests it applies to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requests: Vec<String>,
    /// Opaque driver parameters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opaque: Option<OpaqueDeviceConfiguration>,
}

/// `ResourceClaimTemplate`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceClaimTemplate {
    /// `resource.k8s.io/v1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// `ResourceClaimTemplate`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// Spec.
    pub spec: ResourceClaimTemplateSpec,
}

/// `ResourceClaimTemplateSpec`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceClaimTemplateSpec {
    /// Metadata copied to claims made from the template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<ObjectMeta>,
    /// The claim spec.
    pub spec: ResourceClaimSpec,
}
