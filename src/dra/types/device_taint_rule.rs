//! `DeviceTaintRule`: taints an administrator adds to the devices a selector
//! matches, on top of the slices' own.

use serde::{Deserialize, Serialize};

use super::ObjectMeta;
use super::device_class::DeviceSelector;
use super::resource_slice::{DeviceTaint, DeviceTaintEffect};

/// `DeviceTaintRule` (`resource.k8s.io/v1alpha3`, later `v1beta2`): adds a taint to every
/// device its selector matches, on top of the taints the slices publish (upstream
/// `staging/src/k8s.io/dynamic-resource-allocation/resourceslice/tracker/tracker.go`,
/// `applyPatches`). Upstream gates rules behind `DRADeviceTaintRules` (beta, off by
/// default in v1.36); a [`DraStore`](crate::dra::DraStore) likewise ignores rules until
/// [`set_device_taint_rules(true)`](crate::dra::DraStore::set_device_taint_rules).
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
