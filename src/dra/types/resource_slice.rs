//! `ResourceSlice`: the devices a driver publishes for a pool, their attributes,
//! capacities, shared counters and taints.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::ObjectMeta;
use crate::model::{NodeSelector, Quantity};

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
    /// Integers (alpha `DRAListTypeAttributes`, KEP-5491): a non-empty list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ints: Option<Vec<i64>>,
    /// Booleans (alpha `DRAListTypeAttributes`): a non-empty list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bools: Option<Vec<bool>>,
    /// Strings of at most 64 characters each (alpha `DRAListTypeAttributes`): a
    /// non-empty list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strings: Option<Vec<String>>,
    /// Semantic versions (alpha `DRAListTypeAttributes`): a non-empty list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub versions: Option<Vec<String>>,
}

impl DeviceAttribute {
    /// Whether a list field (`ints`, `bools`, `strings`, `versions`) is set.
    pub fn is_list(&self) -> bool {
        self.ints.is_some() || self.bools.is_some() || self.strings.is_some() || self.versions.is_some()
    }

    /// How many values the attribute holds: one for a scalar, the length of a list.
    /// A device holds at most [`RESOURCE_SLICE_MAX_ATTRIBUTE_VALUES_PER_DEVICE`] in all.
    pub fn value_count(&self) -> usize {
        self.ints
            .as_ref()
            .map(Vec::len)
            .or(self.bools.as_ref().map(Vec::len))
            .or(self.strings.as_ref().map(Vec::len))
            .or(self.versions.as_ref().map(Vec::len))
            .unwrap_or(1)
    }
}

/// The most attribute values one device may publish, a list counting each of its items
/// (upstream `resourceapi.ResourceSliceMaxAttributeValuesPerDevice`); also the longest
/// list DRA's `includes` looks through.
pub const RESOURCE_SLICE_MAX_ATTRIBUTE_VALUES_PER_DEVICE: usize = 48;

/// The longest string attribute value (upstream `resourceapi.DeviceAttributeMaxValueLength`).
pub const DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH: usize = 64;

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
