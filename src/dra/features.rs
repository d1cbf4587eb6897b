//! Switches for the DRA features that upstream puts behind feature gates, with the
//! defaults of Kubernetes v1.36 (`pkg/features/kube_features.go`, versioned specs), read
//! where upstream reads them (`dynamicresources.go`, `AllocatorFeatures`, and the
//! structured allocator's `Features`).

/// Which optional DRA features are on ([`DraStore::set_features`](super::DraStore::set_features)).
///
/// ```
/// use schedkit::dra::{DraFeatures, DraStore};
/// let store = DraStore::new();
/// let mut features = store.features();
/// assert!(features.prioritized_list && !features.device_taint_rules);
/// features.prioritized_list = false;
/// store.set_features(features);
/// assert!(!store.features().prioritized_list);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
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
        DraFeatures {
            prioritized_list: true,
            admin_access: true,
            device_taints: true,
            device_taint_rules: false,
            partitionable_devices: true,
            device_binding_conditions: true,
            extended_resource: true,
            scheduler_filter_timeout: true,
            consumable_capacity: true,
        }
    }
}
