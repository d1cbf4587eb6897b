//! The DRA switches as they were before [`FeatureGates`]: a struct of booleans kept for
//! one release, converting to and from the framework's gates.

#![expect(deprecated, reason = "the deprecated DraFeatures' own definitions and conversions")]

use crate::framework::{Feature, FeatureGates};

/// Which optional DRA features are on.
///
/// Deprecated: moved to [`FeatureGates`] (one gate per [`Feature`]), which
/// [`DraStore::set_feature_gates`](super::DraStore::set_feature_gates) takes. Each field
/// is the gate named in its doc; `From` converts both ways.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
#[deprecated(since = "0.2.0", note = "moved to schedkit::framework::FeatureGates")]
#[allow(clippy::struct_excessive_bools, reason = "one switch per upstream feature gate")]
pub struct DraFeatures {
    /// `DRAPrioritizedList` (GA, on): `firstAvailable` requests. Off, PreFilter rejects a
    /// claim to allocate that has one ("has subrequests, but the DRAPrioritizedList
    /// feature is disabled") and Score adds nothing.
    pub prioritized_list: bool,
    /// `DRAAdminAccess` (GA, on): `adminAccess` requests. Off, Filter fails such a claim
    /// with an error ("admin access is requested, but the feature is disabled").
    pub admin_access: bool,
    /// `DRADeviceTaints` (beta, on): device taints block allocation unless tolerated.
    /// Off, taints (the slices' and the rules') are ignored.
    pub device_taints: bool,
    /// `DRADeviceTaintRules` (beta, off): [`DeviceTaintRule`](super::DeviceTaintRule)s add
    /// taints (also [`DraStore::set_device_taint_rules`](super::DraStore::set_device_taint_rules)).
    pub device_taint_rules: bool,
    /// `DRAPartitionableDevices` (beta, on): shared counters and per-device node
    /// selection. Off, pool gathering skips slices with shared counters or
    /// `perDeviceNodeSelection`, and devices consuming counters are never allocated.
    pub partitionable_devices: bool,
    /// `DRADeviceBindingConditions` (beta, on; with `DRAResourceClaimDeviceStatus`, on):
    /// devices with binding conditions (also
    /// [`DraStore::set_binding_conditions`](super::DraStore::set_binding_conditions)).
    pub device_binding_conditions: bool,
    /// `DRAExtendedResource` (beta, on): extended resources backed by device classes
    /// (KEP-5004). Off, no extended resource is backed by DRA: the pod's extended
    /// resources are left to the node's allocatable, as without DRA.
    pub extended_resource: bool,
    /// `DRASchedulerFilterTimeout` (beta, on): the DynamicResources `filterTimeout`
    /// applies. Off, Filter's allocation is bounded only by the step budget.
    pub scheduler_filter_timeout: bool,
    /// `DRAConsumableCapacity` (beta since v1.36, on): devices with
    /// `allowMultipleAllocations` are shared by allocations that consume their capacity
    /// (KEP-5075). Off, such a device is allocated exclusively like any other (an
    /// allocation with a share ID holds all of it), and Filter fails a claim to allocate
    /// whose request or subrequest asks for capacity with an error ("has capacity
    /// requests, but the DRAConsumableCapacity feature is disabled").
    pub consumable_capacity: bool,
}

impl Default for DraFeatures {
    fn default() -> Self {
        DraFeatures::from(FeatureGates::default())
    }
}

impl From<FeatureGates> for DraFeatures {
    fn from(g: FeatureGates) -> Self {
        DraFeatures {
            prioritized_list: g.enabled(Feature::DRAPrioritizedList),
            admin_access: g.enabled(Feature::DRAAdminAccess),
            device_taints: g.enabled(Feature::DRADeviceTaints),
            device_taint_rules: g.enabled(Feature::DRADeviceTaintRules),
            partitionable_devices: g.enabled(Feature::DRAPartitionableDevices),
            device_binding_conditions: g.enabled(Feature::DRADeviceBindingConditions),
            extended_resource: g.enabled(Feature::DRAExtendedResource),
            scheduler_filter_timeout: g.enabled(Feature::DRASchedulerFilterTimeout),
            consumable_capacity: g.enabled(Feature::DRAConsumableCapacity),
        }
    }
}

/// The defaults for the gates `DraFeatures` has no field for.
impl From<DraFeatures> for FeatureGates {
    fn from(f: DraFeatures) -> Self {
        f.onto(FeatureGates::default())
    }
}

impl DraFeatures {
    /// `gates` with the DRA gates switched as these fields say.
    pub(crate) fn onto(self, gates: FeatureGates) -> FeatureGates {
        gates
            .with(Feature::DRAPrioritizedList, self.prioritized_list)
            .with(Feature::DRAAdminAccess, self.admin_access)
            .with(Feature::DRADeviceTaints, self.device_taints)
            .with(Feature::DRADeviceTaintRules, self.device_taint_rules)
            .with(Feature::DRAPartitionableDevices, self.partitionable_devices)
            .with(Feature::DRADeviceBindingConditions, self.device_binding_conditions)
            .with(Feature::DRAExtendedResource, self.extended_resource)
            .with(Feature::DRASchedulerFilterTimeout, self.scheduler_filter_timeout)
            .with(Feature::DRAConsumableCapacity, self.consumable_capacity)
    }
}
