//! A node's vGPU devices as HAMi's device plugin registers them: [`DeviceInfo`] (one
//! entry of the `hami.io/node-nvidia-register` JSON list, upstream
//! `pkg/device/devices.go` `DeviceInfo`), its builder, reading and writing the
//! annotation, and the `hami.io/device-cordon` list.

use serde::{Deserialize, Serialize};

use super::HamiError;
use crate::dra::mig::HamiMigProfile;
use crate::model::Node;

/// Node annotation: the registered devices, a JSON list of [`DeviceInfo`].
pub const NODE_NVIDIA_REGISTER: &str = "hami.io/node-nvidia-register";
/// Node annotation: comma-separated UUIDs of devices that take no new allocations.
pub const DEVICE_CORDON: &str = "hami.io/device-cordon";
/// Device mode of HAMi's in-process sharing (the default).
pub const HAMI_CORE_MODE: &str = "hami-core";
/// Device mode of MIG devices.
pub const MIG_MODE: &str = "mig";

#[expect(clippy::trivially_copy_pass_by_ref, reason = "serde's skip_serializing_if passes a reference")]
fn is_zero(v: &i32) -> bool {
    *v == 0
}
#[expect(clippy::trivially_copy_pass_by_ref, reason = "serde's skip_serializing_if passes a reference")]
fn is_zero_u32(v: &u32) -> bool {
    *v == 0
}
#[expect(clippy::trivially_copy_pass_by_ref, reason = "serde's skip_serializing_if passes a reference")]
fn is_false(v: &bool) -> bool {
    !*v
}

/// One registered GPU. Field names and omission of zero values follow upstream's JSON
/// (`id`, `index`, `count`, `devmem`, `devcore`, `type`, `numa`, `mode`, `migProfiles`,
/// `health`); unknown fields (e.g. `custominfo`, the deprecated `migtemplate`) are
/// ignored.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct DeviceInfo {
    /// UUID.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub id: String,
    /// Index on the node.
    #[serde(skip_serializing_if = "is_zero_u32")]
    pub index: u32,
    /// Time slices (the device plugin's split count).
    #[serde(skip_serializing_if = "is_zero")]
    pub count: i32,
    /// Memory, MiB.
    #[serde(skip_serializing_if = "is_zero")]
    pub devmem: i32,
    /// Cores, percent (100 for a whole device).
    #[serde(skip_serializing_if = "is_zero")]
    pub devcore: i32,
    /// Card type, e.g. `NVIDIA-A100-SXM4-80GB`.
    #[serde(rename = "type", skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// NUMA node.
    #[serde(skip_serializing_if = "is_zero")]
    pub numa: i32,
    /// Mode: `hami-core`, `mig` or `mps`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub mode: String,
    /// The MIG profiles a device in `mig` mode offers (HAMi's `migProfiles`, see
    /// [`hami_mig_profiles`](crate::dra::mig::hami_mig_profiles)).
    #[serde(rename = "migProfiles", skip_serializing_if = "Vec::is_empty")]
    pub mig_profiles: Vec<HamiMigProfile>,
    /// Whether the device is healthy.
    #[serde(skip_serializing_if = "is_false")]
    pub health: bool,
}

impl DeviceInfo {
    /// A healthy `hami-core` GPU with 10 slices and 100 cores (the chart's defaults).
    ///
    /// ```
    /// use schedkit::plugins::hami::{DeviceInfo, decode_registration, encode_registration};
    /// let gpus: Vec<_> = (0..2).map(|i| DeviceInfo::gpu(&format!("GPU-{i}"), "NVIDIA-A100", 40960).with_index(i).with_numa(i as i32)).collect();
    /// let text = encode_registration(&gpus);
    /// assert_eq!(decode_registration(&text).unwrap(), gpus);
    /// ```
    pub fn gpu(id: &str, kind: &str, devmem: i32) -> DeviceInfo {
        DeviceInfo {
            id: id.to_owned(),
            index: 0,
            count: 10,
            devmem,
            devcore: 100,
            kind: kind.to_owned(),
            numa: 0,
            mode: HAMI_CORE_MODE.to_owned(),
            mig_profiles: Vec::new(),
            health: true,
        }
    }

    /// With index `i`.
    #[must_use]
    pub fn with_index(mut self, i: u32) -> DeviceInfo {
        self.index = i;
        self
    }

    /// With `n` time slices.
    #[must_use]
    pub fn with_count(mut self, n: i32) -> DeviceInfo {
        self.count = n;
        self
    }

    /// With `c` cores.
    #[must_use]
    pub fn with_cores(mut self, c: i32) -> DeviceInfo {
        self.devcore = c;
        self
    }

    /// On NUMA node `n`.
    #[must_use]
    pub fn with_numa(mut self, n: i32) -> DeviceInfo {
        self.numa = n;
        self
    }

    /// In mode `m`.
    #[must_use]
    pub fn with_mode(mut self, m: &str) -> DeviceInfo {
        m.clone_into(&mut self.mode);
        self
    }

    /// In `mig` mode with `profiles` and `count` time slices (HAMi's device plugin
    /// registers the largest instance count), as
    /// [`hami_mig_profiles`](crate::dra::mig::hami_mig_profiles) returns them.
    ///
    /// ```
    /// use schedkit::dra::mig::{GpuModel, default_mig_allowlist, hami_mig_profiles};
    /// use schedkit::plugins::hami::DeviceInfo;
    /// let t = GpuModel::A100_40GB.table();
    /// let (profiles, count) = hami_mig_profiles(t.product_name, t, &default_mig_allowlist());
    /// let d = DeviceInfo::gpu("GPU-0", "NVIDIA-A100-SXM4-40GB", 40960).with_mig_profiles(profiles, count);
    /// assert_eq!((d.mode.as_str(), d.count, d.mig_profiles.len()), ("mig", 7, 4));
    /// ```
    #[must_use]
    pub fn with_mig_profiles(mut self, profiles: Vec<HamiMigProfile>, count: u32) -> DeviceInfo {
        MIG_MODE.clone_into(&mut self.mode);
        self.mig_profiles = profiles;
        self.count = i32::try_from(count).unwrap_or(i32::MAX);
        self
    }

    /// Healthy or not.
    #[must_use]
    pub fn with_health(mut self, h: bool) -> DeviceInfo {
        self.health = h;
        self
    }
}

/// The registration annotation's text for `devices` (upstream `MarshalNodeDevices`).
pub fn encode_registration(devices: &[DeviceInfo]) -> String {
    // Serializing plain strings and integers cannot fail.
    serde_json::to_string(devices).unwrap_or_default()
}

/// Parses a registration annotation (upstream `UnMarshalNodeDevices`; field names are
/// matched exactly, where Go's decoder also takes other casings).
pub fn decode_registration(text: &str) -> Result<Vec<DeviceInfo>, HamiError> {
    serde_json::from_str(text).map_err(|e| HamiError::Registration(e.to_string()))
}

/// The devices `node` registers (upstream `GetNodeDevices`): errors when the annotation
/// is missing (`annos not found hami.io/node-nvidia-register`), malformed, or lists no
/// device (`no gpu found on node`).
pub fn node_devices(node: &Node) -> Result<Vec<DeviceInfo>, HamiError> {
    let Some(text) = node.metadata.annotations.get(NODE_NVIDIA_REGISTER) else {
        return Err(HamiError::Registration(format!("annos not found {NODE_NVIDIA_REGISTER}")));
    };
    let devices = decode_registration(text)?;
    if devices.is_empty() {
        return Err(HamiError::Registration("no gpu found on node".into()));
    }
    Ok(devices)
}

/// Sets `node`'s registration annotation to `devices`.
pub fn register(node: &mut Node, devices: &[DeviceInfo]) {
    node.metadata.annotations.insert(NODE_NVIDIA_REGISTER.to_owned(), encode_registration(devices));
}

/// Whether device `id` is in a `hami.io/device-cordon` list (entries trimmed, empty
/// ones skipped; upstream `cordonedDevices`).
#[inline]
pub fn cordoned(list: Option<&str>, id: &str) -> bool {
    list.is_some_and(|l| l.split(',').map(str::trim).any(|u| !u.is_empty() && u == id))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::NodeBuilder;

    /// Upstream `pkg/device/nvidia/device_test.go`, `Test_GetNodeDevices` and
    /// `TestGetNodeDevices_InvalidJSON`; `pkg/device/devices_test.go`
    /// `TestUnMarshalNodeDevices`.
    #[test]
    fn get_node_devices() {
        let mut n = NodeBuilder::new("n").build();
        assert_eq!(
            node_devices(&n).unwrap_err().to_string(),
            "invalid device registration: annos not found hami.io/node-nvidia-register"
        );
        n.metadata.annotations.insert(
            NODE_NVIDIA_REGISTER.into(),
            r#"[{"id":"GPU-0","count":10,"devmem":32768,"devcore":100,"type":"NVIDIA-Tesla V100","numa":0,"health":true,"index":0,"mode":"hami-core","custominfo":{"a":1}}]"#.into(),
        );
        let d = node_devices(&n).unwrap();
        assert_eq!(d, [DeviceInfo::gpu("GPU-0", "NVIDIA-Tesla V100", 32768)]);
        n.metadata.annotations.insert(NODE_NVIDIA_REGISTER.into(), "[]".into());
        assert!(node_devices(&n).unwrap_err().to_string().contains("no gpu found on node"));
        n.metadata.annotations.insert(NODE_NVIDIA_REGISTER.into(), "not json".into());
        assert!(matches!(node_devices(&n), Err(HamiError::Registration(_))));
        n.metadata.annotations.insert(NODE_NVIDIA_REGISTER.into(), r#"[{"count":1e99}]"#.into());
        assert!(node_devices(&n).is_err());
    }

    /// Upstream `TestMarshalNodeDevices`: zero values are left out.
    #[test]
    fn marshal_omits_zero_values() {
        let d = DeviceInfo { id: "GPU-0".into(), count: 2, ..DeviceInfo::default() };
        assert_eq!(encode_registration(&[d]), r#"[{"id":"GPU-0","count":2}]"#);
    }

    /// Upstream `TestFit_DeviceCordon` parsing: trimmed entries, empty ones skipped.
    #[test]
    fn cordon_list() {
        assert!(cordoned(Some("dev-1, "), "dev-1"));
        assert!(!cordoned(Some("dev-1, "), "dev-0"));
        assert!(cordoned(Some(" dev-0 ,dev-1"), "dev-0"));
        assert!(!cordoned(Some(""), ""));
        assert!(!cordoned(None, "dev-0"));
    }
}
