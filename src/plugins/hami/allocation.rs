//! A pod's device allocation as HAMi writes it on the pod: [`ContainerDevice`], the
//! `hami.io/vgpu-devices-allocated` encoding ([`encode_pod_devices`],
//! [`decode_pod_devices`], upstream `pkg/device/devices.go` `EncodePodSingleDevice` /
//! `DecodePodDevices`), the annotation keys, and the [`PodAnnotator`] the plugin's
//! PreBind writes them through.

use std::collections::BTreeMap;

use parking_lot::Mutex;

use super::HamiError;
use crate::model::Pod;

/// Pod annotation: the node HAMi chose.
pub const VGPU_NODE: &str = "hami.io/vgpu-node";
/// Pod annotation: when it chose it (Unix seconds).
pub const VGPU_TIME: &str = "hami.io/vgpu-time";
/// Pod annotation: the devices the device plugin is to allocate.
pub const VGPU_DEVICES_TO_ALLOCATE: &str = "hami.io/vgpu-devices-to-allocate";
/// Pod annotation: the devices allocated (same encoding).
pub const VGPU_DEVICES_ALLOCATED: &str = "hami.io/vgpu-devices-allocated";
/// Pod annotation: the bind phase (`allocating` when the binding starts).
pub const BIND_PHASE: &str = "hami.io/bind-phase";
/// Pod annotation: when the binding started (Unix seconds).
pub const BIND_TIME: &str = "hami.io/bind-time";

/// One device a container holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerDevice {
    /// Device UUID.
    pub uuid: String,
    /// Device type of the request (`NVIDIA`).
    pub kind: String,
    /// Memory, MiB.
    pub usedmem: i32,
    /// Cores, percent.
    pub usedcores: i32,
}

/// Encodes every container's devices, init containers first: `uuid,type,mem,cores:`
/// per device and `;` after each container, so containers without devices keep their
/// place (upstream `EncodePodSingleDevice`).
///
/// ```
/// use schedkit::plugins::hami::{ContainerDevice, decode_pod_devices, encode_pod_devices};
/// let d = ContainerDevice { uuid: "GPU-0".into(), kind: "NVIDIA".into(), usedmem: 1024, usedcores: 30 };
/// let text = encode_pod_devices(&[vec![], vec![d.clone()]]);
/// assert_eq!(text, ";GPU-0,NVIDIA,1024,30:;");
/// assert_eq!(decode_pod_devices(&text).unwrap(), vec![vec![], vec![d], vec![]]);
/// ```
pub fn encode_pod_devices(containers: &[Vec<ContainerDevice>]) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    for c in containers {
        for d in c {
            // Writing to a String cannot fail.
            let _ = write!(s, "{},{},{},{}:", d.uuid, d.kind, d.usedmem, d.usedcores);
        }
        s.push(';');
    }
    s
}

/// Decodes [`encode_pod_devices`]'s text (upstream `DecodePodDevices` for one type):
/// one entry per `;`-separated part, the trailing empty part included, as upstream;
/// fields after the fourth are ignored; errors with upstream's messages.
pub fn decode_pod_devices(text: &str) -> Result<Vec<Vec<ContainerDevice>>, HamiError> {
    let mut out = Vec::new();
    for part in text.split(';') {
        let mut devices = Vec::new();
        for entry in part.split(':').filter(|e| e.contains(',')) {
            let f: Vec<&str> = entry.split(',').collect();
            if f.len() < 4 {
                return Err(HamiError::Annotation(
                    "pod annotation format error, missing fields, do not use nodeName in task spec".into(),
                ));
            }
            let usedmem =
                f[2].parse::<i32>().map_err(|e| HamiError::Annotation(format!("invalid memory field: {e}")))?;
            let usedcores =
                f[3].parse::<i32>().map_err(|e| HamiError::Annotation(format!("invalid core field: {e}")))?;
            devices.push(ContainerDevice { uuid: f[0].to_owned(), kind: f[1].to_owned(), usedmem, usedcores });
        }
        out.push(devices);
    }
    Ok(out)
}

/// Where HAMi's PreBind writes the pod's annotations (an API patch, a message, a
/// record). An `Err` fails the binding cycle: the pod's devices are given back.
pub trait PodAnnotator: Send + Sync + 'static {
    /// Adds `annotations` to `pod`.
    fn annotate(&self, pod: &Pod, annotations: &BTreeMap<String, String>) -> Result<(), String>;
}

/// Keeps every pod's annotations in memory (tests, simulations).
#[derive(Debug, Default)]
pub struct RecordingAnnotator {
    written: Mutex<BTreeMap<String, BTreeMap<String, String>>>,
}

impl RecordingAnnotator {
    /// The annotations written for pod `namespace/name`.
    pub fn get(&self, key: &str) -> Option<BTreeMap<String, String>> {
        self.written.lock().get(key).cloned()
    }
}

impl PodAnnotator for RecordingAnnotator {
    fn annotate(&self, pod: &Pod, annotations: &BTreeMap<String, String>) -> Result<(), String> {
        self.written
            .lock()
            .entry(pod.key())
            .or_default()
            .extend(annotations.iter().map(|(k, v)| (k.clone(), v.clone())));
        Ok(())
    }
}

impl<A: PodAnnotator> PodAnnotator for std::sync::Arc<A> {
    fn annotate(&self, pod: &Pod, annotations: &BTreeMap<String, String>) -> Result<(), String> {
        (**self).annotate(pod, annotations)
    }
}

/// Writes nothing (the default: the caller reads the annotations from the cycle state).
#[derive(Debug, Default, Clone, Copy)]
pub struct NoopAnnotator;

impl PodAnnotator for NoopAnnotator {
    fn annotate(&self, _: &Pod, _: &BTreeMap<String, String>) -> Result<(), String> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(uuid: &str, mem: i32, cores: i32) -> ContainerDevice {
        ContainerDevice { uuid: uuid.into(), kind: "NVIDIA".into(), usedmem: mem, usedcores: cores }
    }

    /// Upstream `pkg/device/devices_test.go`, `TestEmptyContainerDevicesCoding`,
    /// `TestEmptyPodDeviceCoding`, `TestPodDevicesCoding`.
    #[test]
    fn pod_devices_coding() {
        assert_eq!(encode_pod_devices(&[]), "");
        assert_eq!(encode_pod_devices(&[vec![]]), ";");
        let pod = vec![vec![d("UUID1", 1000, 30)], vec![d("UUID2", 2000, 40), d("UUID3", 3000, 50)]];
        let text = encode_pod_devices(&pod);
        assert_eq!(text, "UUID1,NVIDIA,1000,30:;UUID2,NVIDIA,2000,40:UUID3,NVIDIA,3000,50:;");
        let mut back = decode_pod_devices(&text).unwrap();
        assert_eq!(back.pop(), Some(vec![]));
        assert_eq!(back, pod);
    }

    /// Upstream `Test_DecodePodDevices` and `TestDecodePodDevices_BadAnnotation`.
    #[test]
    fn decode_errors() {
        assert!(decode_pod_devices("a,b,1:").unwrap_err().to_string().contains("missing fields"));
        assert!(decode_pod_devices("a,NVIDIA,x,1:").unwrap_err().to_string().contains("invalid memory field"));
        assert!(decode_pod_devices("a,NVIDIA,1,99999999999:").unwrap_err().to_string().contains("invalid core field"));
        assert_eq!(decode_pod_devices(";;").unwrap().len(), 3);
        assert_eq!(decode_pod_devices("GPU-0,NVIDIA,1,2,extra:;").unwrap()[0], vec![d("GPU-0", 1, 2)]);
    }
}
