//! The pod annotations that steer HAMi's device choice ([`Steering`]): GPU type and
//! UUID allow/deny lists, vGPU mode, NUMA binding, the per-pod GPU and node policies
//! and the device-scoring weights (upstream `pkg/device/devices.go` `CheckType` /
//! `CheckUUID`, `pkg/device/nvidia/device.go` `checkType` / `assertNuma`,
//! `pkg/util/device_scoring_weights.go`).

use std::collections::BTreeMap;

use super::policy::{GpuPolicy, NodePolicy};
use super::{HamiConfig, HamiError};

/// Pod annotation: card types to use, comma-separated, matched as case-insensitive
/// substrings of the device type.
pub const USE_GPU_TYPE: &str = "nvidia.com/use-gputype";
/// Pod annotation: card types not to use.
pub const NOUSE_GPU_TYPE: &str = "nvidia.com/nouse-gputype";
/// Pod annotation: device UUIDs to use, comma-separated, exact.
pub const USE_GPU_UUID: &str = "nvidia.com/use-gpuuuid";
/// Pod annotation: device UUIDs not to use.
pub const NOUSE_GPU_UUID: &str = "nvidia.com/nouse-gpuuuid";
/// Pod annotation: allowed device modes; a device's mode must be a substring of it.
pub const VGPU_MODE: &str = "nvidia.com/vgpu-mode";
/// Pod annotation: `true` (Go `ParseBool`) keeps a container's devices on one NUMA node.
pub const NUMA_BIND: &str = "nvidia.com/numa-bind";
/// Pod annotation: the GPU policy (`binpack`, `spread`, `mutex`, `numa`, chains).
pub const GPU_SCHEDULER_POLICY: &str = "hami.io/gpu-scheduler-policy";
/// Pod annotation: the node policy (`binpack`, `spread`).
pub const NODE_SCHEDULER_POLICY: &str = "hami.io/node-scheduler-policy";
/// Pod annotation: device-scoring weights, `slot=a,core=b,memory=c`.
pub const DEVICE_SCORING_WEIGHTS: &str = "hami.io/device-scoring-weights";

/// Weights of the three terms of a device's score (upstream `DeviceScoringWeights`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScoringWeights {
    /// Weight of the slot (time-slice) term.
    pub slot: i64,
    /// Weight of the core term.
    pub core: i64,
    /// Weight of the memory term.
    pub memory: i64,
}

impl Default for ScoringWeights {
    /// 1, 1, 1.
    fn default() -> ScoringWeights {
        ScoringWeights { slot: 1, core: 1, memory: 1 }
    }
}

impl ScoringWeights {
    /// Parses `slot=a,core=b,memory=c` (any order, spaces allowed): exactly the three
    /// keys, integers `>= 0`, not all 0, with upstream's messages
    /// (`ParseDeviceScoringWeights`).
    ///
    /// ```
    /// use schedkit::plugins::hami::ScoringWeights;
    /// assert_eq!(ScoringWeights::parse(" memory = 3, slot = 1, core = 0 ").unwrap(), ScoringWeights { slot: 1, core: 0, memory: 3 });
    /// assert!(ScoringWeights::parse("slot=0,core=0,memory=0").unwrap_err().to_string().contains("at least one weight must be positive"));
    /// ```
    pub fn parse(value: &str) -> Result<ScoringWeights, HamiError> {
        let err = |why: String| HamiError::ScoringWeights { value: value.to_owned(), why };
        let parts: Vec<&str> = value.split(',').collect();
        if parts.len() != 3 {
            return Err(err("expected slot, core, and memory weights".into()));
        }
        let mut w = ScoringWeights { slot: 0, core: 0, memory: 0 };
        let mut seen: Vec<&str> = Vec::with_capacity(3);
        for part in parts {
            let Some((key, v)) = part.trim().split_once('=') else {
                return Err(err("expected key=value entries".into()));
            };
            let key = key.trim();
            if seen.contains(&key) {
                return Err(err(format!("duplicate {key:?} weight")));
            }
            let Ok(weight) = v.trim().parse::<i64>() else {
                return Err(err(format!("{key:?} weight must be an integer")));
            };
            if weight < 0 {
                return Err(err(format!("{key:?} weight must not be negative")));
            }
            match key {
                "slot" => w.slot = weight,
                "core" => w.core = weight,
                "memory" => w.memory = weight,
                _ => return Err(err(format!("unknown weight {key:?}"))),
            }
            seen.push(key);
        }
        if w.slot == 0 && w.core == 0 && w.memory == 0 {
            return Err(err("at least one weight must be positive".into()));
        }
        Ok(w)
    }
}

/// A comma list read from an annotation: `None` when absent or blank (no constraint).
fn list(annos: &BTreeMap<String, String>, key: &str, upper: bool) -> Option<Vec<String>> {
    let v = annos.get(key)?;
    if v.trim().is_empty() {
        return None;
    }
    Some(v.split(',').map(|s| if upper { s.trim().to_ascii_uppercase() } else { s.trim().to_owned() }).collect())
}

/// Go's `strconv.ParseBool`.
pub(super) fn parse_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// ASCII case-insensitive substring test, `needle` already upper-case.
#[inline]
pub(super) fn contains_upper(hay: &str, needle_upper: &str) -> bool {
    let (h, n) = (hay.as_bytes(), needle_upper.as_bytes());
    n.is_empty() || h.windows(n.len()).any(|w| w.iter().zip(n).all(|(a, b)| a.to_ascii_uppercase() == *b))
}

/// What a pod's annotations say about its devices, read once per cycle.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Steering {
    /// [`USE_GPU_TYPE`], upper-cased.
    pub use_types: Option<Vec<String>>,
    /// [`NOUSE_GPU_TYPE`], upper-cased.
    pub nouse_types: Option<Vec<String>>,
    /// [`USE_GPU_UUID`].
    pub use_uuids: Option<Vec<String>>,
    /// [`NOUSE_GPU_UUID`].
    pub nouse_uuids: Option<Vec<String>>,
    /// [`VGPU_MODE`].
    pub mode: Option<String>,
    /// [`NUMA_BIND`].
    pub numa_bind: bool,
    /// [`GPU_SCHEDULER_POLICY`] or the configured default.
    pub gpu_policy: GpuPolicy,
    /// [`NODE_SCHEDULER_POLICY`] or the configured default.
    pub node_policy: NodePolicy,
    /// [`DEVICE_SCORING_WEIGHTS`] or 1,1,1.
    pub weights: ScoringWeights,
}

impl Steering {
    /// Reads the annotations; only malformed scoring weights are an error (upstream
    /// fails the whole Filter call with it).
    ///
    /// ```
    /// use schedkit::plugins::hami::{HamiConfig, Steering, NodePolicy};
    /// let mut a = std::collections::BTreeMap::new();
    /// a.insert("hami.io/node-scheduler-policy".to_string(), "spread".to_string());
    /// a.insert("nvidia.com/use-gputype".to_string(), "a100".to_string());
    /// let s = Steering::from_annotations(&a, &HamiConfig::default()).unwrap();
    /// assert_eq!(s.node_policy, NodePolicy::Spread);
    /// assert!(s.type_allowed("NVIDIA-A100-SXM4-80GB") && !s.type_allowed("NVIDIA-V100"));
    /// ```
    pub fn from_annotations(annos: &BTreeMap<String, String>, cfg: &HamiConfig) -> Result<Steering, HamiError> {
        let weights = match annos.get(DEVICE_SCORING_WEIGHTS) {
            Some(v) => ScoringWeights::parse(v)?,
            None => ScoringWeights::default(),
        };
        let gpu = annos.get(GPU_SCHEDULER_POLICY).map_or(cfg.gpu_scheduler_policy.as_str(), String::as_str);
        let node = annos.get(NODE_SCHEDULER_POLICY).map_or(cfg.node_scheduler_policy.as_str(), String::as_str);
        Ok(Steering {
            use_types: list(annos, USE_GPU_TYPE, true),
            nouse_types: list(annos, NOUSE_GPU_TYPE, true),
            use_uuids: list(annos, USE_GPU_UUID, false),
            nouse_uuids: list(annos, NOUSE_GPU_UUID, false),
            mode: annos.get(VGPU_MODE).cloned(),
            numa_bind: annos.get(NUMA_BIND).and_then(|v| parse_bool(v)).unwrap_or(false),
            gpu_policy: GpuPolicy::parse(gpu),
            node_policy: NodePolicy::parse(node),
            weights,
        })
    }

    /// Whether a card of type `card` may be used (upstream `CheckType`: ASCII
    /// case-insensitive substrings; empty entries never match).
    #[inline]
    pub fn type_allowed(&self, card: &str) -> bool {
        let matches = |l: &[String]| l.iter().any(|t| !t.is_empty() && contains_upper(card, t));
        if let Some(l) = &self.use_types
            && !matches(l)
        {
            return false;
        }
        if let Some(l) = &self.nouse_types
            && matches(l)
        {
            return false;
        }
        true
    }

    /// Whether device `id` may be used (upstream `CheckUUID`: exact, trimmed entries).
    #[inline]
    pub fn uuid_allowed(&self, id: &str) -> bool {
        if let Some(l) = &self.use_uuids
            && !l.iter().any(|u| u == id)
        {
            return false;
        }
        if let Some(l) = &self.nouse_uuids
            && l.iter().any(|u| u == id)
        {
            return false;
        }
        true
    }

    /// Whether a device in `mode` may be used: the pod's [`VGPU_MODE`] must contain it.
    #[inline]
    pub fn mode_allowed(&self, mode: &str) -> bool {
        self.mode.as_deref().is_none_or(|m| m.contains(mode))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn annos(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    fn steer(pairs: &[(&str, &str)]) -> Steering {
        Steering::from_annotations(&annos(pairs), &HamiConfig::default()).unwrap()
    }

    /// Upstream `pkg/util/device_scoring_weights_test.go`, `TestParseDeviceScoringWeights`.
    #[test]
    fn parse_device_scoring_weights_table() {
        let ok = [
            ("slot=1,core=2,memory=3", ScoringWeights { slot: 1, core: 2, memory: 3 }),
            (" memory = 3, slot = 1, core = 0 ", ScoringWeights { slot: 1, core: 0, memory: 3 }),
        ];
        for (v, want) in ok {
            assert_eq!(ScoringWeights::parse(v).unwrap(), want, "{v}");
        }
        let bad = [
            ("", "expected slot, core, and memory weights"),
            ("slot=1,memory=3", "expected slot, core, and memory weights"),
            ("slot=1,core,memory=3", "expected key=value entries"),
            ("slot=1,core=high,memory=3", "\"core\" weight must be an integer"),
            ("slot=1,core=-1,memory=3", "\"core\" weight must not be negative"),
            ("slot=1,bandwidth=2,memory=3", "unknown weight \"bandwidth\""),
            ("slot=1,slot=2,memory=3", "duplicate \"slot\" weight"),
            ("slot=0,core=0,memory=0", "at least one weight must be positive"),
        ];
        for (v, want) in bad {
            let e = ScoringWeights::parse(v).unwrap_err().to_string();
            assert!(e.contains(want), "{v:?}: {e}");
            assert!(e.contains("invalid hami.io/device-scoring-weights annotation"), "{e}");
        }
    }

    /// Upstream `TestGetDeviceScoringWeightsByPod`: no annotation is 1,1,1; a bad one fails.
    #[test]
    fn weights_by_pod() {
        assert_eq!(steer(&[]).weights, ScoringWeights::default());
        let bad = Steering::from_annotations(&annos(&[(DEVICE_SCORING_WEIGHTS, "slot=1")]), &HamiConfig::default());
        assert!(matches!(bad, Err(HamiError::ScoringWeights { .. })));
    }

    /// Upstream `pkg/device/devices_test.go`, `TestCheckUUID`.
    #[test]
    #[expect(clippy::type_complexity, reason = "a table of annotation sets")]
    fn check_uuid_table() {
        let cases: [(&[(&str, &str)], &str, bool); 11] = [
            (&[], "abc", true),
            (&[(USE_GPU_UUID, "abc,123")], "abc", true),
            (&[(USE_GPU_UUID, "abc,123")], "1abc", false),
            (&[(NOUSE_GPU_UUID, "abc,123")], "abc", false),
            (&[(NOUSE_GPU_UUID, "abc,123")], "1abc", true),
            (&[(USE_GPU_UUID, "abc,123"), (NOUSE_GPU_UUID, "abc")], "abc", false),
            (&[(USE_GPU_UUID, "abc,123"), (NOUSE_GPU_UUID, "456")], "abc", true),
            (&[(USE_GPU_UUID, " abc , 123 ")], "abc", true),
            (&[(USE_GPU_UUID, "")], "abc", true),
            (&[(USE_GPU_UUID, "   ")], "abc", true),
            (&[(NOUSE_GPU_UUID, "")], "abc", true),
        ];
        for (a, id, want) in cases {
            assert_eq!(steer(a).uuid_allowed(id), want, "{a:?} {id}");
        }
    }

    /// Upstream `pkg/device/devices_test.go`, `TestCheckType`, and
    /// `pkg/device/nvidia/device_test.go` `TestCheckGPUtype_*`.
    #[test]
    #[expect(clippy::type_complexity, reason = "a table of annotation sets")]
    fn check_type_table() {
        let cases: [(&[(&str, &str)], &str, bool); 10] = [
            (&[], "NVIDIA-A100", true),
            (&[(USE_GPU_TYPE, "A100,V100")], "NVIDIA-A100", true),
            (&[(USE_GPU_TYPE, "V100")], "NVIDIA-A100", false),
            (&[(NOUSE_GPU_TYPE, "A100")], "NVIDIA-A100", false),
            (&[(NOUSE_GPU_TYPE, "V100")], "NVIDIA-A100", true),
            (&[(USE_GPU_TYPE, "")], "NVIDIA-A100", true),
            (&[(USE_GPU_TYPE, "a100")], "NVIDIA-A100", true),
            (&[(USE_GPU_TYPE, " , ")], "NVIDIA-A100", false),
            (&[(USE_GPU_TYPE, "A100"), (NOUSE_GPU_TYPE, "NVIDIA")], "NVIDIA-A100", false),
            (&[(NOUSE_GPU_TYPE, " ")], "NVIDIA-A100", true),
        ];
        for (a, card, want) in cases {
            assert_eq!(steer(a).type_allowed(card), want, "{a:?} {card}");
        }
    }

    /// Upstream `pkg/device/nvidia/device_test.go`, `TestAssertNuma` and
    /// `TestCheckType_AllocateMode`.
    #[test]
    fn numa_bind_and_mode() {
        assert!(steer(&[(NUMA_BIND, "true")]).numa_bind);
        assert!(steer(&[(NUMA_BIND, "1")]).numa_bind);
        assert!(!steer(&[(NUMA_BIND, "false")]).numa_bind);
        assert!(!steer(&[(NUMA_BIND, "yes")]).numa_bind);
        assert!(!steer(&[]).numa_bind);
        let s = steer(&[(VGPU_MODE, "hami-core")]);
        assert!(s.mode_allowed("hami-core") && !s.mode_allowed("mig"));
        assert!(steer(&[]).mode_allowed("mig"));
    }
}
