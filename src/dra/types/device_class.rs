//! `DeviceClass`: the selectors and configuration a claim's request inherits by
//! naming the class.

use serde::{Deserialize, Serialize};

use super::ObjectMeta;

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
    /// [`DraStore::device_class_for_resource`](crate::dra::DraStore::device_class_for_resource).
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
