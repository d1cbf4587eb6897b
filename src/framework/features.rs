//! Upstream's feature gates by their `pkg/features/kube_features.go` names, with the
//! defaults of Kubernetes v1.36: one `Copy` bitset that the framework, plugins and DRA read.

use std::fmt;
use std::str::FromStr;

/// One feature gate, named as upstream names it (`--feature-gates=DRAAdminAccess=false`).
///
/// Each variant's doc says what the gate does in schedkit when it is off. Gates that
/// nothing reads yet are kept so configurations written for kube-scheduler parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
#[repr(u8)]
pub enum Feature {
    /// `DRAPrioritizedList` (GA, on): `firstAvailable` requests. Off, PreFilter rejects a
    /// claim to allocate that has one ("has subrequests, but the DRAPrioritizedList
    /// feature is disabled") and Score adds nothing.
    DRAPrioritizedList,
    /// `DRAAdminAccess` (GA, on): `adminAccess` requests. Off, Filter fails such a claim
    /// with an error ("admin access is requested, but the feature is disabled").
    DRAAdminAccess,
    /// `DRADeviceTaints` (beta, on): device taints block allocation unless tolerated.
    /// Off, taints (the slices' and the rules') are ignored.
    DRADeviceTaints,
    /// `DRADeviceTaintRules` (beta, off): [`DeviceTaintRule`](crate::dra::DeviceTaintRule)s
    /// add taints (also [`DraStore::set_device_taint_rules`](crate::dra::DraStore::set_device_taint_rules)).
    DRADeviceTaintRules,
    /// `DRAPartitionableDevices` (beta, on): shared counters and per-device node
    /// selection. Off, pool gathering skips slices with shared counters or
    /// `perDeviceNodeSelection`, and devices consuming counters are never allocated.
    DRAPartitionableDevices,
    /// `DRADeviceBindingConditions` (beta, on; with `DRAResourceClaimDeviceStatus`, on):
    /// devices with binding conditions (also
    /// [`DraStore::set_binding_conditions`](crate::dra::DraStore::set_binding_conditions)).
    DRADeviceBindingConditions,
    /// `DRAExtendedResource` (beta, on): extended resources backed by device classes
    /// (KEP-5004). Off, no extended resource is backed by DRA: the pod's extended
    /// resources are left to the node's allocatable, as without DRA.
    DRAExtendedResource,
    /// `DRASchedulerFilterTimeout` (beta, on): the DynamicResources `filterTimeout`
    /// applies. Off, Filter's allocation is bounded only by the step budget.
    DRASchedulerFilterTimeout,
    /// `DRAConsumableCapacity` (beta since v1.36, on): devices with
    /// `allowMultipleAllocations` are shared by allocations that consume their capacity
    /// (KEP-5075). Off, such a device is allocated exclusively like any other (an
    /// allocation with a share ID holds all of it), and Filter fails a claim to allocate
    /// whose request or subrequest asks for capacity with an error ("has capacity
    /// requests, but the DRAConsumableCapacity feature is disabled").
    DRAConsumableCapacity,
    /// `DRAListTypeAttributes` (alpha in v1.36, off): list-typed device attributes.
    /// Not read by schedkit yet.
    DRAListTypeAttributes,
    /// `DRAWorkloadResourceClaims` (alpha in v1.36, off): claims reserved for a whole
    /// PodGroup. Not read by schedkit yet.
    DRAWorkloadResourceClaims,
    /// `GenericWorkload` (alpha, off): the v1.36 Workload/PodGroup API and the pod-group
    /// scheduling cycle. Off, pods naming a PodGroup (`spec.schedulingGroup`) are
    /// scheduled one by one like any other, and a manifest's v1.35 `spec.workloadRef`
    /// is reported, not converted. Coscheduling (label-based) does not read it.
    GenericWorkload,
    /// `GangScheduling` (alpha, off; needs `GenericWorkload`): the in-tree
    /// `GangScheduling` plugin joins the default profile.
    GangScheduling,
    /// `TopologyAwareWorkloadScheduling` (alpha in v1.36, off): PodGroup topology
    /// constraints, the placement algorithm, and the `TopologyPlacementGenerator` and
    /// `PodGroupPodsCount` plugins in the default profile. Off, a PodGroup carrying
    /// `schedulingConstraints` fails validation.
    TopologyAwareWorkloadScheduling,
    /// `OpportunisticBatching` (beta, on): reusing one pod's filtering results for the
    /// next equivalent pod. Not read by schedkit yet.
    OpportunisticBatching,
    /// `PodLevelResources` (beta since v1.34, on): pod-level requests
    /// (`spec.resources`) of cpu, memory and `hugepages-*` replace the containers'
    /// aggregate. Off, NodeResourcesFit, NodeResourcesBalancedAllocation and the
    /// resource scorers built with these gates count containers only (upstream
    /// `SkipPodLevelResources`), for the incoming pod and for the pods on each node.
    PodLevelResources,
    /// `WorkloadAwarePreemption` (alpha in v1.36, off; needs `GangScheduling`): PodGroup
    /// `disruptionMode`, `priorityClassName` and `priority` (KEP-5710). Off, those fields
    /// fail validation. schedkit's pod-group cycle does not run a group-level PostFilter
    /// yet: pods preempt one by one as with the gate off.
    WorkloadAwarePreemption,
    /// `DynamicResourceAllocation` (GA since v1.34, on): DRA. On, the default plugins
    /// include DynamicResources, right before DefaultPreemption (upstream
    /// `applyFeatureGates`), and the default profile shares a
    /// [`DraStore`](crate::dra::DraStore) on the handle when none is. Off, DynamicResources
    /// is not a default plugin (a profile may still enable it).
    DynamicResourceAllocation,
}

impl Feature {
    /// Every gate, in declaration order.
    pub const ALL: [Feature; 18] = [
        Feature::DRAPrioritizedList,
        Feature::DRAAdminAccess,
        Feature::DRADeviceTaints,
        Feature::DRADeviceTaintRules,
        Feature::DRAPartitionableDevices,
        Feature::DRADeviceBindingConditions,
        Feature::DRAExtendedResource,
        Feature::DRASchedulerFilterTimeout,
        Feature::DRAConsumableCapacity,
        Feature::DRAListTypeAttributes,
        Feature::DRAWorkloadResourceClaims,
        Feature::GenericWorkload,
        Feature::GangScheduling,
        Feature::TopologyAwareWorkloadScheduling,
        Feature::OpportunisticBatching,
        Feature::PodLevelResources,
        Feature::WorkloadAwarePreemption,
        Feature::DynamicResourceAllocation,
    ];

    /// Upstream's name for the gate.
    pub const fn name(self) -> &'static str {
        match self {
            Feature::DRAPrioritizedList => "DRAPrioritizedList",
            Feature::DRAAdminAccess => "DRAAdminAccess",
            Feature::DRADeviceTaints => "DRADeviceTaints",
            Feature::DRADeviceTaintRules => "DRADeviceTaintRules",
            Feature::DRAPartitionableDevices => "DRAPartitionableDevices",
            Feature::DRADeviceBindingConditions => "DRADeviceBindingConditions",
            Feature::DRAExtendedResource => "DRAExtendedResource",
            Feature::DRASchedulerFilterTimeout => "DRASchedulerFilterTimeout",
            Feature::DRAConsumableCapacity => "DRAConsumableCapacity",
            Feature::DRAListTypeAttributes => "DRAListTypeAttributes",
            Feature::DRAWorkloadResourceClaims => "DRAWorkloadResourceClaims",
            Feature::GenericWorkload => "GenericWorkload",
            Feature::GangScheduling => "GangScheduling",
            Feature::TopologyAwareWorkloadScheduling => "TopologyAwareWorkloadScheduling",
            Feature::OpportunisticBatching => "OpportunisticBatching",
            Feature::PodLevelResources => "PodLevelResources",
            Feature::WorkloadAwarePreemption => "WorkloadAwarePreemption",
            Feature::DynamicResourceAllocation => "DynamicResourceAllocation",
        }
    }

    /// The gate's default in Kubernetes v1.36 (upstream's versioned feature specs).
    pub const fn default_enabled(self) -> bool {
        match self {
            Feature::DRAPrioritizedList
            | Feature::DRAAdminAccess
            | Feature::DRADeviceTaints
            | Feature::DRAPartitionableDevices
            | Feature::DRADeviceBindingConditions
            | Feature::DRAExtendedResource
            | Feature::DRASchedulerFilterTimeout
            | Feature::DRAConsumableCapacity
            | Feature::OpportunisticBatching
            | Feature::PodLevelResources
            | Feature::DynamicResourceAllocation => true,
            Feature::DRADeviceTaintRules
            | Feature::DRAListTypeAttributes
            | Feature::DRAWorkloadResourceClaims
            | Feature::GenericWorkload
            | Feature::GangScheduling
            | Feature::TopologyAwareWorkloadScheduling
            | Feature::WorkloadAwarePreemption => false,
        }
    }

    /// The gate named `name` (exact, case-sensitive, as upstream).
    pub fn from_name(name: &str) -> Option<Feature> {
        Feature::ALL.into_iter().find(|f| f.name() == name)
    }

    const fn bit(self) -> u64 {
        1 << (self as u8)
    }
}

impl fmt::Display for Feature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A bad feature gate name or value ([`FeatureGates::set`], [`FeatureGates::apply`]);
/// the messages are upstream's (`component-base/featuregate`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FeatureGateError {
    /// No gate has this name.
    #[error("unrecognized feature gate: {name}")]
    Unknown {
        /// The name as given.
        name: String,
    },
    /// An entry of a `Name=value,...` list has no `=value`.
    #[error("missing bool value for {name}")]
    MissingValue {
        /// The gate's name.
        name: String,
    },
    /// The value is not a boolean (Go's `strconv.ParseBool` spellings).
    #[error("invalid value of {name}={value}: not a boolean")]
    InvalidValue {
        /// The gate's name.
        name: String,
        /// The value as given.
        value: String,
    },
}

/// Which feature gates are on: a bitset, so reading one is a mask test.
///
/// [`FeatureGates::default`] holds Kubernetes v1.36's defaults. Set gates by variant,
/// by upstream name, or from a `--feature-gates` style list; hand them to the
/// [`Handle`](super::Handle) ([`Handle::set_feature_gates`](super::Handle::set_feature_gates))
/// or a [`DraStore`](crate::dra::DraStore)
/// ([`DraStore::set_feature_gates`](crate::dra::DraStore::set_feature_gates)). Unlike
/// upstream, GA gates are not locked to their default, so tests can turn them off.
///
/// ```
/// use schedkit::framework::{Feature, FeatureGateError, FeatureGates};
/// let mut gates = FeatureGates::default();
/// assert!(gates.enabled(Feature::DRAAdminAccess) && !gates.enabled(Feature::DRADeviceTaintRules));
/// gates.set("DRAAdminAccess", false).unwrap();
/// assert!(!gates.enabled(Feature::DRAAdminAccess));
/// assert_eq!(
///     gates.set("NoSuchGate", true),
///     Err(FeatureGateError::Unknown { name: "NoSuchGate".into() })
/// );
/// let gates: FeatureGates = "DRADeviceTaintRules=true, DRAPrioritizedList=false".parse().unwrap();
/// assert!(gates.enabled(Feature::DRADeviceTaintRules) && !gates.enabled(Feature::DRAPrioritizedList));
/// assert_eq!(gates, FeatureGates::default().with(Feature::DRADeviceTaintRules, true).with(Feature::DRAPrioritizedList, false));
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct FeatureGates {
    on: u64,
}

impl Default for FeatureGates {
    fn default() -> Self {
        FeatureGates::new()
    }
}

impl FeatureGates {
    /// Kubernetes v1.36's defaults.
    pub const fn new() -> FeatureGates {
        let mut on = 0;
        let mut i = 0;
        while i < Feature::ALL.len() {
            let f = Feature::ALL[i];
            if f.default_enabled() {
                on |= f.bit();
            }
            i += 1;
        }
        FeatureGates { on }
    }

    /// Whether `feature` is on.
    #[inline]
    pub const fn enabled(self, feature: Feature) -> bool {
        self.on & feature.bit() != 0
    }

    /// These gates with `feature` switched `on` or off.
    #[must_use]
    pub const fn with(self, feature: Feature, on: bool) -> FeatureGates {
        FeatureGates { on: if on { self.on | feature.bit() } else { self.on & !feature.bit() } }
    }

    /// Switches `feature` on or off.
    pub fn set_enabled(&mut self, feature: Feature, on: bool) {
        *self = self.with(feature, on);
    }

    /// Switches the gate named `name` (upstream's name) on or off.
    ///
    /// # Errors
    ///
    /// [`FeatureGateError::Unknown`] when no gate has that name.
    pub fn set(&mut self, name: &str, on: bool) -> Result<(), FeatureGateError> {
        let feature = Feature::from_name(name).ok_or_else(|| FeatureGateError::Unknown { name: name.to_owned() })?;
        self.set_enabled(feature, on);
        Ok(())
    }

    /// Applies a `--feature-gates` style list, `Name=true,Other=false` (upstream
    /// `featuregate.Set`): entries and both sides of `=` are trimmed, empty entries are
    /// skipped, values are Go's `strconv.ParseBool` spellings. Nothing changes on error.
    ///
    /// # Errors
    ///
    /// [`FeatureGateError`] for the first bad entry.
    pub fn apply(&mut self, list: &str) -> Result<(), FeatureGateError> {
        let mut next = *self;
        for entry in list.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let Some((name, value)) = entry.split_once('=') else {
                return Err(FeatureGateError::MissingValue { name: entry.to_owned() });
            };
            let (name, value) = (name.trim(), value.trim());
            let on = parse_bool(value)
                .ok_or_else(|| FeatureGateError::InvalidValue { name: name.to_owned(), value: value.to_owned() })?;
            next.set(name, on)?;
        }
        *self = next;
        Ok(())
    }

    /// Every gate and whether it is on, in [`Feature::ALL`] order.
    pub fn iter(self) -> impl Iterator<Item = (Feature, bool)> {
        Feature::ALL.into_iter().map(move |f| (f, self.enabled(f)))
    }
}

/// Go's `strconv.ParseBool`.
fn parse_bool(v: &str) -> Option<bool> {
    match v {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

impl FromStr for FeatureGates {
    type Err = FeatureGateError;

    /// The defaults with a `--feature-gates` style list applied ([`FeatureGates::apply`]).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut gates = FeatureGates::default();
        gates.apply(s)?;
        Ok(gates)
    }
}

/// `Name=true,Other=false,...` for every gate, which [`FeatureGates::apply`] reads back.
impl fmt::Display for FeatureGates {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (feature, on)) in self.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{feature}={on}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for FeatureGates {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter().map(|(feature, on)| (feature.name(), on))).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_v1_36() {
        let gates = FeatureGates::default();
        let on: Vec<&str> = gates.iter().filter(|(_, on)| *on).map(|(f, _)| f.name()).collect();
        assert_eq!(
            on,
            [
                "DRAPrioritizedList",
                "DRAAdminAccess",
                "DRADeviceTaints",
                "DRAPartitionableDevices",
                "DRADeviceBindingConditions",
                "DRAExtendedResource",
                "DRASchedulerFilterTimeout",
                "DRAConsumableCapacity",
                "OpportunisticBatching",
                "PodLevelResources",
                "DynamicResourceAllocation",
            ]
        );
        for f in Feature::ALL {
            assert_eq!(Feature::from_name(f.name()), Some(f));
        }
    }

    #[test]
    fn lists_parse_like_feature_gates_flag() {
        let mut gates = FeatureGates::default();
        gates.apply(" GangScheduling = t ,, DRAAdminAccess=0 ").unwrap();
        assert!(gates.enabled(Feature::GangScheduling) && !gates.enabled(Feature::DRAAdminAccess));
        let before = gates;
        assert_eq!(
            gates.apply("GenericWorkload=true,DRAAdminAccess"),
            Err(FeatureGateError::MissingValue { name: "DRAAdminAccess".into() })
        );
        assert_eq!(
            gates.apply("GenericWorkload=yes"),
            Err(FeatureGateError::InvalidValue { name: "GenericWorkload".into(), value: "yes".into() })
        );
        assert_eq!(
            gates.apply("draadminaccess=true").unwrap_err().to_string(),
            "unrecognized feature gate: draadminaccess"
        );
        assert_eq!(gates, before, "a failed list changes nothing");
        assert_eq!(gates.to_string().parse::<FeatureGates>(), Ok(gates));
    }
}
