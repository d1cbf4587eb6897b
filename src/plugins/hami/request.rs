//! A container's vGPU request as HAMi v2.10.0 reads it ([`ContainerRequest`], upstream
//! `GenerateResourceRequests`), the pod's requests in container order
//! ([`PodRequests`], upstream `Resourcereqs`), and the settings they are read with
//! ([`HamiConfig`]).

use serde::{Deserialize, Serialize};
use smallvec::SmallVec;

use crate::model::{Container, Pod, Quantity, ResourceList, Symbol};

/// The device type of NVIDIA requests (upstream `NvidiaGPUDevice`).
pub const NVIDIA_GPU_DEVICE: &str = "NVIDIA";
/// `mem_percentage` when the container set no percentage (upstream's sentinel 101).
pub const MEM_PERCENTAGE_UNSET: i32 = 101;

/// HAMi's NVIDIA settings that shape requests and defaults (upstream `NvidiaConfig`
/// plus the scheduler's default policies), with the Helm chart's values as defaults.
/// As plugin args they are read in camelCase (`resourceCountName`, `defaultMemory`,
/// `gpuSchedulerPolicy`...).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct HamiConfig {
    /// Device count resource (`nvidia.com/gpu`).
    pub resource_count_name: String,
    /// Device memory resource, MiB (`nvidia.com/gpumem`).
    pub resource_memory_name: String,
    /// Device memory share resource, percent (`nvidia.com/gpumem-percentage`).
    pub resource_memory_percentage_name: String,
    /// Device core share resource, percent (`nvidia.com/gpucores`).
    pub resource_core_name: String,
    /// Memory per device when a container asks for neither memory nor a share (0:
    /// the whole device, as a 100% share).
    pub default_memory: i32,
    /// Cores per device when a container doesn't say (0).
    pub default_cores: i32,
    /// Devices the webhook adds when a container asks for memory or cores without a
    /// count (chart default 1).
    #[serde(rename = "defaultGPUNum")]
    pub default_gpu_num: i32,
    /// Multiplier applied to `gpumem` (1).
    pub memory_factor: i32,
    /// GPU policy when the pod doesn't name one (`spread`).
    pub gpu_scheduler_policy: String,
    /// Node policy when the pod doesn't name one (`binpack`).
    pub node_scheduler_policy: String,
    /// The scheduler name the webhook gives pods with a vGPU request
    /// (`hami-scheduler`; empty: leave it).
    pub scheduler_name: String,
    /// Whether the webhook also takes pods that name `default-scheduler` (false).
    pub force_overwrite_default_scheduler: bool,
}

impl Default for HamiConfig {
    fn default() -> HamiConfig {
        HamiConfig {
            resource_count_name: "nvidia.com/gpu".into(),
            resource_memory_name: "nvidia.com/gpumem".into(),
            resource_memory_percentage_name: "nvidia.com/gpumem-percentage".into(),
            resource_core_name: "nvidia.com/gpucores".into(),
            default_memory: 0,
            default_cores: 0,
            default_gpu_num: 1,
            memory_factor: 1,
            gpu_scheduler_policy: "spread".into(),
            node_scheduler_policy: "binpack".into(),
            scheduler_name: "hami-scheduler".into(),
            force_overwrite_default_scheduler: false,
        }
    }
}

/// The interned resource names of a [`HamiConfig`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct ResourceKeys {
    pub(super) count: Symbol,
    pub(super) memory: Symbol,
    pub(super) percentage: Symbol,
    pub(super) cores: Symbol,
}

impl HamiConfig {
    pub(super) fn keys(&self) -> ResourceKeys {
        let key = |s: &str| if s.is_empty() { Symbol::default() } else { Symbol::intern(s) };
        ResourceKeys {
            count: key(&self.resource_count_name),
            memory: key(&self.resource_memory_name),
            percentage: key(&self.resource_memory_percentage_name),
            cores: key(&self.resource_core_name),
        }
    }
}

/// One container's request for devices of one type (upstream `ContainerDeviceRequest`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContainerRequest {
    /// Devices wanted.
    pub nums: i32,
    /// Device type (`NVIDIA`).
    pub kind: &'static str,
    /// Memory per device, MiB (0: use `mem_percentage`).
    pub memreq: i32,
    /// Memory per device as a percentage of the device's, or [`MEM_PERCENTAGE_UNSET`].
    pub mem_percentage: i32,
    /// Cores per device, percent of a device.
    pub coresreq: i32,
}

impl ContainerRequest {
    /// An NVIDIA request.
    pub const fn nvidia(nums: i32, memreq: i32, mem_percentage: i32, coresreq: i32) -> ContainerRequest {
        ContainerRequest { nums, kind: NVIDIA_GPU_DEVICE, memreq, mem_percentage, coresreq }
    }

    /// The memory Fit books on a device with `totalmem` MiB: `memreq` when set, else
    /// `totalmem * mem_percentage / 100` unless the percentage is unset (upstream Fit,
    /// in int32 arithmetic, wrapping as Go does).
    #[inline]
    pub fn memory_on(&self, totalmem: i32) -> i32 {
        let mut m = 0;
        if self.memreq > 0 {
            m = self.memreq;
        }
        if self.mem_percentage != MEM_PERCENTAGE_UNSET && self.memreq == 0 {
            m = totalmem.wrapping_mul(self.mem_percentage) / 100;
        }
        m
    }

    /// Reads a container's NVIDIA request (upstream `GenerateResourceRequests`):
    /// `None` without a whole-number count, or when `gpumem` is not a whole number in
    /// `0..=i32::MAX / memoryFactor` (upstream rejects those rather than under-book).
    /// Each resource is read from limits, then requests. A percentage above 100 is
    /// clamped to 100 and one at or below 0 is unset (101); with neither memory nor a
    /// percentage, `defaultMemory` applies, else the percentage becomes 100. Cores
    /// default to `defaultCores`.
    ///
    /// ```
    /// use schedkit::model::Container;
    /// use schedkit::plugins::hami::{ContainerRequest, HamiConfig};
    /// let mut c = Container::default();
    /// c.resources.limits = schedkit::model::ResourceList::parse([("nvidia.com/gpu", "1"), ("nvidia.com/gpumem-percentage", "150")]).unwrap();
    /// let r = ContainerRequest::of(&c, &HamiConfig::default()).unwrap();
    /// assert_eq!((r.nums, r.memreq, r.mem_percentage, r.coresreq), (1, 0, 100, 0));
    /// ```
    pub fn of(c: &Container, cfg: &HamiConfig) -> Option<ContainerRequest> {
        ContainerRequest::with_keys(c, cfg, cfg.keys())
    }

    pub(super) fn with_keys(c: &Container, cfg: &HamiConfig, k: ResourceKeys) -> Option<ContainerRequest> {
        let n = lookup(c, k.count)?.as_i64_exact()?;
        let mut memnum: i64 = 0;
        if let Some(mem) = lookup(c, k.memory) {
            let factor = i64::from(cfg.memory_factor.max(1));
            match mem.as_i64_exact() {
                Some(m) if (0..=i64::from(i32::MAX) / factor).contains(&m) => memnum = m * factor,
                _ => return None,
            }
        }
        let mut pct = MEM_PERCENTAGE_UNSET;
        if let Some(p) = lookup(c, k.percentage).and_then(Quantity::as_i64_exact) {
            let p = p.min(100);
            pct = if p > 0 { p as i32 } else { MEM_PERCENTAGE_UNSET };
        }
        if pct == MEM_PERCENTAGE_UNSET && memnum == 0 {
            if cfg.default_memory == 0 {
                pct = 100;
            } else {
                memnum = i64::from(cfg.default_memory);
            }
        }
        let mut cores = cfg.default_cores;
        if let Some(v) = lookup(c, k.cores).and_then(Quantity::as_i64_exact) {
            // Go's int32(x): keep the low 32 bits.
            cores = v as i32;
        }
        Some(ContainerRequest {
            nums: n as i32,
            kind: NVIDIA_GPU_DEVICE,
            memreq: memnum as i32,
            mem_percentage: pct,
            coresreq: cores,
        })
    }
}

/// A resource's quantity on a container: limits first, then requests.
pub(super) fn lookup(c: &Container, name: Symbol) -> Option<&Quantity> {
    if name.is_empty() {
        return None;
    }
    c.resources.limits.get(name).or_else(|| c.resources.requests.get(name))
}

/// Whether `list` names `name` (empty names never).
pub(super) fn has(list: &ResourceList, name: Symbol) -> bool {
    !name.is_empty() && list.get(name).is_some()
}

/// A pod's requests in upstream's container order: init containers first, then the
/// app containers; `None` where a container asks for no device (`nums <= 0`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodRequests {
    /// One entry per container.
    pub containers: SmallVec<[Option<ContainerRequest>; 2]>,
    /// How many of them are init containers.
    pub init_containers: usize,
}

impl PodRequests {
    /// The pod's requests (upstream `Resourcereqs`).
    ///
    /// ```
    /// use schedkit::plugins::hami::{HamiConfig, PodRequests};
    /// use schedkit::testing::PodBuilder;
    /// let p = PodBuilder::new("p").request("nvidia.com/gpu", "2").build();
    /// let r = PodRequests::of(&p, &HamiConfig::default());
    /// assert_eq!(r.containers[0].unwrap().nums, 2);
    /// assert!(PodRequests::of(&PodBuilder::new("q").build(), &HamiConfig::default()).is_empty());
    /// ```
    pub fn of(pod: &Pod, cfg: &HamiConfig) -> PodRequests {
        PodRequests::with_keys(pod, cfg, cfg.keys())
    }

    pub(super) fn with_keys(pod: &Pod, cfg: &HamiConfig, k: ResourceKeys) -> PodRequests {
        let containers = pod
            .spec
            .init_containers
            .iter()
            .chain(&pod.spec.containers)
            .map(|c| ContainerRequest::with_keys(c, cfg, k).filter(|r| r.nums > 0))
            .collect();
        PodRequests { containers, init_containers: pod.spec.init_containers.len() }
    }

    /// Whether no container asks for a device (upstream: the extender passes every node).
    pub fn is_empty(&self) -> bool {
        self.containers.iter().all(Option::is_none)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Container;

    fn ctr(limits: &[(&str, &str)], requests: &[(&str, &str)]) -> Container {
        let mut c = Container::default();
        c.resources.limits = ResourceList::parse(limits.iter().copied()).unwrap();
        c.resources.requests = ResourceList::parse(requests.iter().copied()).unwrap();
        c
    }

    /// Upstream `pkg/device/nvidia/device_test.go`, `TestGenerateResourceRequests`.
    #[test]
    fn generate_resource_requests_table() {
        let cfg = HamiConfig::default();
        let n = |nums, mem, pct, cores| Some(ContainerRequest::nvidia(nums, mem, pct, cores));
        let big = ((1i64 << 32) + 50).to_string();
        let cases: Vec<(&str, Container, Option<ContainerRequest>)> = vec![
            ("count only: 100% memory", ctr(&[("nvidia.com/gpu", "1")], &[]), n(1, 0, 100, 0)),
            ("count + memory", ctr(&[("nvidia.com/gpu", "2"), ("nvidia.com/gpumem", "4096")], &[]), n(2, 4096, 101, 0)),
            (
                "count + percentage",
                ctr(&[("nvidia.com/gpu", "1"), ("nvidia.com/gpumem-percentage", "50")], &[]),
                n(1, 0, 50, 0),
            ),
            (
                "percentage above 100 clamped",
                ctr(&[("nvidia.com/gpu", "1"), ("nvidia.com/gpumem-percentage", "150")], &[]),
                n(1, 0, 100, 0),
            ),
            (
                "percentage beyond int32 clamped without wrapping",
                ctr(&[("nvidia.com/gpu", "1"), ("nvidia.com/gpumem-percentage", &big)], &[]),
                n(1, 0, 100, 0),
            ),
            (
                "percentage equal to the sentinel clamped",
                ctr(&[("nvidia.com/gpu", "1"), ("nvidia.com/gpumem-percentage", "101")], &[]),
                n(1, 0, 100, 0),
            ),
            ("count + cores", ctr(&[("nvidia.com/gpu", "1"), ("nvidia.com/gpucores", "50")], &[]), n(1, 0, 100, 50)),
            ("no gpu resource", ctr(&[], &[]), None),
            ("count in requests", ctr(&[], &[("nvidia.com/gpu", "1")]), n(1, 0, 100, 0)),
            (
                "percentage 0 is unset",
                ctr(&[("nvidia.com/gpu", "1"), ("nvidia.com/gpumem-percentage", "0")], &[]),
                n(1, 0, 100, 0),
            ),
            (
                "percentage 0 in requests is unset",
                ctr(&[], &[("nvidia.com/gpu", "1"), ("nvidia.com/gpumem-percentage", "0")]),
                n(1, 0, 100, 0),
            ),
            (
                "negative percentage is unset",
                ctr(&[("nvidia.com/gpu", "1"), ("nvidia.com/gpumem-percentage", "-1")], &[]),
                n(1, 0, 100, 0),
            ),
            (
                "percentage 0 + memory: memory wins",
                ctr(
                    &[("nvidia.com/gpu", "1"), ("nvidia.com/gpumem", "2000"), ("nvidia.com/gpumem-percentage", "0")],
                    &[],
                ),
                n(1, 2000, 101, 0),
            ),
            ("16Gi overflows int32", ctr(&[("nvidia.com/gpu", "1"), ("nvidia.com/gpumem", "16Gi")], &[]), None),
            ("16.0Gi rejected", ctr(&[("nvidia.com/gpu", "1"), ("nvidia.com/gpumem", "16.0Gi")], &[]), None),
        ];
        for (name, c, want) in cases {
            assert_eq!(ContainerRequest::of(&c, &cfg), want, "{name}");
        }
    }

    /// Upstream `TestGenerateResourceRequests_MemoryFactor`.
    #[test]
    fn memory_factor() {
        let cfg = HamiConfig { memory_factor: 2, ..HamiConfig::default() };
        let c = ctr(&[("nvidia.com/gpu", "1"), ("nvidia.com/gpumem", "1024")], &[]);
        assert_eq!(ContainerRequest::of(&c, &cfg).unwrap().memreq, 2048);
        let c = ctr(&[("nvidia.com/gpu", "1"), ("nvidia.com/gpumem", "1Gi")], &[]);
        assert_eq!(ContainerRequest::of(&c, &cfg), None);
    }

    /// Upstream `TestGenerateResourceRequests_DefaultMemory`.
    #[test]
    fn default_memory() {
        let cfg = HamiConfig { default_memory: 512, ..HamiConfig::default() };
        let r = ContainerRequest::of(&ctr(&[("nvidia.com/gpu", "1")], &[]), &cfg).unwrap();
        assert_eq!((r.memreq, r.mem_percentage), (512, 101));
        let pct0 =
            ContainerRequest::of(&ctr(&[("nvidia.com/gpu", "1"), ("nvidia.com/gpumem-percentage", "0")], &[]), &cfg);
        assert_eq!(pct0, Some(r));
        let mem0 = ContainerRequest::of(&ctr(&[("nvidia.com/gpu", "1"), ("nvidia.com/gpumem", "0")], &[]), &cfg);
        assert_eq!(mem0, pct0);
    }

    /// Upstream `pkg/device/devices_test.go`, `TestResourcereqs_WithInitContainers`
    /// (shape): init containers first, containers without a request kept as `None`.
    #[test]
    fn pod_requests_order() {
        let mut pod = Pod::default();
        pod.spec.init_containers.push(ctr(&[("nvidia.com/gpu", "1")], &[]));
        pod.spec.containers.push(ctr(&[], &[]));
        pod.spec.containers.push(ctr(&[("nvidia.com/gpu", "2"), ("nvidia.com/gpumem", "100")], &[]));
        let r = PodRequests::of(&pod, &HamiConfig::default());
        assert_eq!(r.init_containers, 1);
        assert_eq!(r.containers.len(), 3);
        assert_eq!(r.containers[0].unwrap().nums, 1);
        assert!(r.containers[1].is_none());
        assert_eq!(r.containers[2].unwrap().memreq, 100);
        assert!(!r.is_empty());
    }

    #[test]
    fn memory_on_rules() {
        assert_eq!(ContainerRequest::nvidia(1, 64, 0, 0).memory_on(128), 64);
        assert_eq!(ContainerRequest::nvidia(1, 0, 10, 0).memory_on(1280), 128);
        assert_eq!(ContainerRequest::nvidia(1, 0, 0, 0).memory_on(1280), 0);
        assert_eq!(ContainerRequest::nvidia(1, 0, MEM_PERCENTAGE_UNSET, 0).memory_on(1280), 0);
    }
}
