//! The `resource.k8s.io/v1` objects the scheduler reads and writes, in their exact
//! serialized shape (camelCase, the same field names), so real manifests load as they
//! are (upstream `k8s.io/api/resource/v1/types.go`).
//!
//! These are plain data: validation and compilation happen when an object is added to a
//! [`DraStore`](super::DraStore), which returns a typed [`DraError`](super::DraError).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::model::{NodeSelector, Quantity, Toleration};

/// The API version these types serialize as.
pub const API_VERSION: &str = "resource.k8s.io/v1";

/// Object metadata as the API server returns it: the fields DRA reads are typed, every
/// other field (`resourceVersion`, `ownerReferences`, timestamps, ...) is kept as JSON so
/// a manifest round-trips unchanged.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectMeta {
    /// Name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Namespace (claims and templates; empty means `default`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Uid.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// Labels.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Annotations.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// Every other metadata field, carried as is.
    #[serde(flatten)]
    pub other: BTreeMap<String, serde_json::Value>,
}

/// `ResourceSlice`: devices one driver publishes for one pool (or a part of it).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceSlice {
    /// `resource.k8s.io/v1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// `ResourceSlice`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Metadata (the name identifies the slice).
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// Spec.
    pub spec: ResourceSliceSpec,
}

/// `ResourceSliceSpec`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceSliceSpec {
    /// The driver publishing the devices (a DNS subdomain, e.g. `gpu.nvidia.com`).
    pub driver: String,
    /// The pool this slice belongs to.
    pub pool: ResourcePool,
    /// The node the devices are local to (exactly one of nodeName, nodeSelector,
    /// allNodes, perDeviceNodeSelection is set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_name: Option<String>,
    /// The nodes that can reach the devices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<NodeSelector>,
    /// Every node can reach the devices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub all_nodes: Option<bool>,
    /// Each device names its own node(s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_device_node_selection: Option<bool>,
    /// The devices.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub devices: Vec<DeviceSpec>,
    /// Counter sets that partitionable devices consume from.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shared_counters: Vec<CounterSet>,
    /// Fields schedkit carries but does not interpret (newer or alpha API fields), kept
    /// so objects round-trip.
    #[serde(flatten)]
    pub other: BTreeMap<String, serde_json::Value>,
}

/// `ResourcePool`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourcePool {
    /// Pool name, unique per driver.
    pub name: String,
    /// Only slices with the highest generation of a pool count.
    #[serde(default)]
    pub generation: i64,
    /// How many slices the pool has at this generation; fewer seen means incomplete.
    #[serde(default)]
    pub resource_slice_count: i64,
}

/// `Device` (called `DeviceSpec` here to keep it apart from the selector's
/// [`Device`](crate::selector::Device)).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceSpec {
    /// Unique within the pool.
    pub name: String,
    /// Attributes by qualified name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub attributes: BTreeMap<String, DeviceAttribute>,
    /// Capacities by qualified name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub capacity: BTreeMap<String, DeviceCapacity>,
    /// Counters consumed from the pool's shared counter sets.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub consumes_counters: Vec<DeviceCounterConsumption>,
    /// With perDeviceNodeSelection: the node the device is local to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_name: Option<String>,
    /// With perDeviceNodeSelection: the nodes that can reach it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<NodeSelector>,
    /// With perDeviceNodeSelection: every node can reach it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub all_nodes: Option<bool>,
    /// Taints; requests must tolerate NoSchedule/NoExecute ones.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub taints: Vec<DeviceTaint>,
    /// The device may be allocated to several claims at once (consumable capacity).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_multiple_allocations: Option<bool>,
    /// Device status conditions that must all be `True` before a pod using the device
    /// is bound (device binding conditions, KEP-5007): the allocation result copies them
    /// and the DynamicResources plugin's PreBind waits for them (upstream
    /// `dynamicresources.go`, `isClaimReadyForBinding`). A store with binding conditions
    /// switched off never allocates such a device (upstream `isSelectable`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub binding_conditions: Vec<String>,
    /// Device status conditions of which any `True` one fails the binding.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub binding_failure_conditions: Vec<String>,
    /// Pins an allocation of this device to the node it was made for: the allocation's
    /// node selector names that node (upstream `createNodeSelector`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binds_to_node: Option<bool>,
    /// Fields schedkit carries but does not interpret (newer or alpha API fields), kept
    /// so objects round-trip.
    #[serde(flatten)]
    pub other: BTreeMap<String, serde_json::Value>,
}

/// `DeviceAttribute`: exactly one of the values is set.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceAttribute {
    /// Integer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub int: Option<i64>,
    /// Boolean.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bool: Option<bool>,
    /// String.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub string: Option<String>,
    /// Semantic version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// `DeviceCapacity`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceCapacity {
    /// The capacity.
    pub value: Quantity,
    /// Consumable-capacity request policy (`default`, `validRange`, `validValues`; kept as
    /// JSON, validated and applied by the store for `allowMultipleAllocations` devices).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_policy: Option<serde_json::Value>,
}

/// `CounterSet`: named counters a pool's partitionable devices draw from.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CounterSet {
    /// Unique within the pool.
    pub name: String,
    /// Counters by name.
    #[serde(default)]
    pub counters: BTreeMap<String, Counter>,
}

/// `Counter`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Counter {
    /// Amount.
    pub value: Quantity,
}

/// `DeviceCounterConsumption`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceCounterConsumption {
    /// The counter set consumed from.
    pub counter_set: String,
    /// Amounts by counter name.
    #[serde(default)]
    pub counters: BTreeMap<String, Counter>,
}

/// `DeviceTaintEffect`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum DeviceTaintEffect {
    /// Requests that don't tolerate it are not allocated the device.
    NoSchedule,
    /// Like NoSchedule; pods already using the device are evicted (by the eviction
    /// controller, not the scheduler).
    NoExecute,
    /// Informational: the allocator ignores it.
    None,
}

impl DeviceTaintEffect {
    /// The Kubernetes spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            DeviceTaintEffect::NoSchedule => "NoSchedule",
            DeviceTaintEffect::NoExecute => "NoExecute",
            DeviceTaintEffect::None => "None",
        }
    }
}

/// `DeviceTaint`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceTaint {
    /// Key.
    pub key: String,
    /// Value.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub value: String,
    /// `NoSchedule` and `NoExecute` must be tolerated; `None` is informational.
    pub effect: DeviceTaintEffect,
    /// When the taint was added (RFC 3339, carried).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_added: Option<String>,
}

/// `DeviceClass`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceClass {
    /// `resource.k8s.io/v1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// `DeviceClass`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Metadata (the name is what requests refer to).
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// Spec.
    #[serde(default)]
    pub spec: DeviceClassSpec,
}

/// `DeviceClassSpec`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceClassSpec {
    /// Every selector must match a device of this class.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub selectors: Vec<DeviceSelector>,
    /// Configuration passed to drivers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub config: Vec<DeviceClassConfiguration>,
    /// The extended resource name (e.g. `example.com/gpu`) pods may request in
    /// `resources.requests` to get devices of this class (KEP-5004); every class also
    /// serves its implicit name `deviceclass.resource.kubernetes.io/<class name>`. See
    /// [`DraStore::device_class_for_resource`](super::DraStore::device_class_for_resource).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extended_resource_name: Option<String>,
}

/// `DeviceSelector`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceSelector {
    /// A CEL expression.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cel: Option<CelDeviceSelector>,
}

impl DeviceSelector {
    /// A selector with a CEL expression.
    pub fn cel(expression: &str) -> DeviceSelector {
        DeviceSelector { cel: Some(CelDeviceSelector { expression: expression.to_owned() }) }
    }
}

/// `CELDeviceSelector`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CelDeviceSelector {
    /// The expression (see [`crate::selector`]).
    pub expression: String,
}

/// `DeviceClassConfiguration`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceClassConfiguration {
    /// Opaque driver parameters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opaque: Option<OpaqueDeviceConfiguration>,
}

/// `OpaqueDeviceConfiguration`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OpaqueDeviceConfiguration {
    /// The driver the parameters are for.
    pub driver: String,
    /// Any JSON object.
    #[serde(default)]
    pub parameters: serde_json::Value,
}

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

/// `DeviceTaintRule` (`resource.k8s.io/v1alpha3`, later `v1beta2`): adds a taint to every
/// device its selector matches, on top of the taints the slices publish (upstream
/// `staging/src/k8s.io/dynamic-resource-allocation/resourceslice/tracker/tracker.go`,
/// `applyPatches`). Upstream gates rules behind `DRADeviceTaintRules` (beta, off by
/// default in v1.36); a [`DraStore`](super::DraStore) likewise ignores rules until
/// [`set_device_taint_rules(true)`](super::DraStore::set_device_taint_rules).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceTaintRule {
    /// `resource.k8s.io/v1alpha3`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// `DeviceTaintRule`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Metadata (cluster-scoped: the name identifies the rule).
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// Spec.
    pub spec: DeviceTaintRuleSpec,
    /// Status (carried).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<serde_json::Value>,
}

/// `DeviceTaintRuleSpec`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceTaintRuleSpec {
    /// Which devices get the taint; absent means every device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_selector: Option<DeviceTaintSelector>,
    /// The taint added.
    pub taint: DeviceTaint,
}

impl Default for DeviceTaintRuleSpec {
    fn default() -> Self {
        DeviceTaintRuleSpec {
            device_selector: None,
            taint: DeviceTaint {
                key: String::new(),
                value: String::new(),
                effect: DeviceTaintEffect::NoSchedule,
                time_added: None,
            },
        }
    }
}

/// `DeviceTaintSelector`: every field set must match.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceTaintSelector {
    /// Devices the class's selectors match (a missing class matches nothing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_class_name: Option<String>,
    /// Devices of this driver.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver: Option<String>,
    /// Devices of this pool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool: Option<String>,
    /// The device of this name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// CEL selectors; a device on which one fails at run time is not matched.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub selectors: Vec<DeviceSelector>,
}

/// The label a namespace needs before claims in it may ask for `adminAccess`
/// (upstream `pkg/registry/resource/utils.go`, `AuthorizedForAdmin`).
pub const ADMIN_ACCESS_NAMESPACE_LABEL: &str = "resource.kubernetes.io/admin-access";

/// The annotation marking the claim the scheduler makes for a pod's extended
/// resources backed by DRA (upstream `resourceapi.ExtendedResourceClaimAnnotation`).
pub const EXTENDED_RESOURCE_CLAIM_ANNOTATION: &str = "resource.kubernetes.io/extended-resource-claim";

/// The prefix of every class's implicit extended resource name (upstream
/// `resourceapi.ResourceDeviceClassPrefix`).
pub const IMPLICIT_EXTENDED_RESOURCE_PREFIX: &str = "deviceclass.resource.kubernetes.io/";

/// `ContainerExtendedResourceRequest`: which claim request serves a container's
/// extended resource.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerExtendedResourceRequest {
    /// The container.
    pub container_name: String,
    /// The extended resource.
    pub resource_name: String,
    /// The request of the claim.
    pub request_name: String,
}

/// `PodExtendedResourceClaimStatus`: what the scheduler records in the pod's status
/// after it made the claim for the pod's extended resources.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodExtendedResourceClaimStatus {
    /// One entry per container and resource.
    pub request_mappings: Vec<ContainerExtendedResourceRequest>,
    /// The claim's name.
    pub resource_claim_name: String,
}
