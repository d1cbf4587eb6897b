//! Publishing MIG-capable GPUs as `ResourceSlice`s of partitionable devices: one counter
//! set per GPU, the full GPU and one device per (profile, placement) drawing from it.
//!
//! The shape follows NVIDIA's DRA driver (`NVIDIA/k8s-dra-driver-gpu`,
//! `cmd/gpu-kubelet-plugin/partitions.go` and `mig.go`, KEP-4815 "partitionable devices"):
//! - counter set `gpu-<index>-counter-set` holds one counter per capacity
//!   (`multiprocessors`, `copy-engines`, `decoders`, `encoders`, `jpeg-engines`,
//!   `ofa-engines`, `memory` in bytes) sized by the full profile, plus `memory-slice-<i>`
//!   (value 1) for each of the eight memory slices;
//! - the full GPU `gpu-<index>` consumes all of them, so it excludes every instance;
//! - an instance `gpu-<index>-mig-<profile without dots>-<profile id>-<start>` consumes
//!   its capacities and the memory slices of its placement, so overlapping placements
//!   exclude each other and the engines bound the rest (one `+me` instance per GPU).
//!
//! schedkit adds a `compute-slices` counter (7 per GPU; an instance consumes its `Ng`)
//! and the `index`, `placementStart`, `memorySlices` and `computeSlices` attributes, so
//! selectors can pin a GPU or a placement.

use std::collections::BTreeMap;

use super::table::{COMPUTE_SLICES, GpuModel, MEMORY_SLICES, MigProfile, MigTable};
use crate::dra::types::{
    Counter, CounterSet, DeviceAttribute, DeviceCapacity, DeviceClass, DeviceCounterConsumption, DeviceSpec,
    ObjectMeta, ResourcePool, ResourceSlice, ResourceSliceSpec,
};
use crate::dra::validation::RESOURCE_SLICE_MAX_COUNTER_SETS;
use crate::model::Quantity;

/// The NVIDIA DRA driver's name, the default driver of published slices.
pub const NVIDIA_GPU_DRIVER: &str = "gpu.nvidia.com";

/// How an instance's placements are ordered in the slice. The allocator takes the first
/// device that fits, so the order is the placement policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PlacementOrder {
    /// HAMi v2.10.0's "balanced packing" (`pkg/device/nvidia/mig_topology.go`,
    /// `orderedMigPlacements`): `1g.*` and `3g.*` profiles from the highest start down,
    /// the others from the lowest up, so small instances leave room for a `4g` at 0.
    #[default]
    Balanced,
    /// Every profile from the lowest start up (NVML's order).
    Ascending,
}

impl PlacementOrder {
    /// The starts of `profile` in this order.
    pub fn starts(self, profile: &MigProfile) -> impl Iterator<Item = u32> + '_ {
        let high = self == PlacementOrder::Balanced && prefers_high(profile.name);
        let n = profile.starts.len();
        (0..n).map(move |i| profile.starts[if high { n - 1 - i } else { i }])
    }
}

/// HAMi's `preferHighMigPlacement`: profiles named `1g.*` or `3g.*`.
pub(crate) fn prefers_high(profile: &str) -> bool {
    profile.starts_with("1g.") || profile.starts_with("3g.")
}

/// One MIG-capable GPU of a node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigGpu {
    /// The GPU's index (minor number) on its node, unique per node.
    pub index: u32,
    /// The GPU's UUID.
    pub uuid: String,
    /// The model, which picks the profile table.
    pub model: GpuModel,
}

/// What a published device name says (NVIDIA's canonical names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MigDeviceRef {
    /// The whole GPU `gpu-<index>`.
    Full {
        /// The GPU's index.
        gpu: u32,
    },
    /// An instance `gpu-<index>-mig-<profile>-<profile id>-<start>`.
    Instance {
        /// The GPU's index.
        gpu: u32,
        /// The GPU-instance profile id.
        profile_id: u32,
        /// The placement's first memory slice.
        start: u32,
    },
}

impl MigDeviceRef {
    /// Parses a device name published by [`MigNodeBuilder`] (NVIDIA's
    /// `NewMigSpecTupleFromCanonicalName` for instances). `None` for any other name.
    pub fn parse(name: &str) -> Option<MigDeviceRef> {
        let rest = name.strip_prefix("gpu-")?;
        let num = |s: &str| if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) { None } else { s.parse().ok() };
        let Some((gpu, mig)) = rest.split_once("-mig-") else {
            return Some(MigDeviceRef::Full { gpu: num(rest)? });
        };
        let (head, start) = mig.rsplit_once('-')?;
        let (profile, id) = head.rsplit_once('-')?;
        if profile.is_empty() {
            return None;
        }
        Some(MigDeviceRef::Instance { gpu: num(gpu)?, profile_id: num(id)?, start: num(start)? })
    }

    /// The GPU's index.
    pub fn gpu(self) -> u32 {
        match self {
            MigDeviceRef::Full { gpu } | MigDeviceRef::Instance { gpu, .. } => gpu,
        }
    }

    /// The memory slices the device covers, as a bit mask, looked up in `table`
    /// (all eight for the full GPU); `None` for an unknown profile id.
    pub fn mask(self, table: &MigTable) -> Option<u32> {
        match self {
            MigDeviceRef::Full { .. } => Some((1 << MEMORY_SLICES) - 1),
            MigDeviceRef::Instance { profile_id, start, .. } => {
                table.profile_by_id(profile_id).filter(|p| p.is_valid_start(start)).map(|p| p.mask(start))
            }
        }
    }
}

/// The name of the full GPU device.
pub fn full_device_name(gpu: u32) -> String {
    format!("gpu-{gpu}")
}

/// The name of an instance device: NVIDIA's `ToCanonicalName` (the profile lower-cased,
/// dots dropped, other characters outside `[a-z0-9-]` turned into `-`).
pub fn instance_device_name(gpu: u32, profile: &MigProfile, start: u32) -> String {
    let mut p = String::with_capacity(profile.name.len());
    for c in profile.name.chars().filter(|&c| c != '.') {
        let c = c.to_ascii_lowercase();
        p.push(if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' { c } else { '-' });
    }
    format!("gpu-{gpu}-mig-{}-{}-{start}", p.trim_matches('-'), profile.profile_id)
}

/// The name of a GPU's counter set.
pub fn counter_set_name(gpu: u32) -> String {
    format!("gpu-{gpu}-counter-set")
}

/// The `mig.nvidia.com` device class of NVIDIA's chart: MIG instances of `driver`.
pub fn mig_device_class(driver: &str) -> DeviceClass {
    device_class("mig.nvidia.com", driver, "mig")
}

/// The `gpu.nvidia.com` device class of NVIDIA's chart: whole GPUs of `driver`.
pub fn gpu_device_class(driver: &str) -> DeviceClass {
    device_class("gpu.nvidia.com", driver, "gpu")
}

fn device_class(name: &str, driver: &str, kind: &str) -> DeviceClass {
    let expression = format!("device.driver == \"{driver}\" && device.attributes[\"{driver}\"].type == \"{kind}\"");
    let value = serde_json::json!({"metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": expression}}]}});
    // The JSON above is a fixed, valid DeviceClass.
    serde_json::from_value(value).unwrap_or_default()
}

fn string(s: &str) -> DeviceAttribute {
    DeviceAttribute { string: Some(s.to_owned()), ..DeviceAttribute::default() }
}

fn int(i: u32) -> DeviceAttribute {
    DeviceAttribute { int: Some(i64::from(i)), ..DeviceAttribute::default() }
}

fn version(v: &str) -> DeviceAttribute {
    // Semantic versions need three parts (`8.0` -> `8.0.0`), as NVIDIA's semver parse.
    let full = if v.matches('.').count() == 1 { format!("{v}.0") } else { v.to_owned() };
    DeviceAttribute { version: Some(full), ..DeviceAttribute::default() }
}

/// The capacities of a profile, keyed as NVIDIA's `CommonCapacitiesMig` (memory in bytes).
fn capacities(p: &MigProfile) -> [(&'static str, i64); 7] {
    let bytes = i64::try_from(p.memory_mib).unwrap_or(i64::MAX / (1 << 20)) * (1 << 20);
    [
        ("multiprocessors", i64::from(p.multiprocessors)),
        ("copyEngines", i64::from(p.copy_engines)),
        ("decoders", i64::from(p.decoders)),
        ("encoders", i64::from(p.encoders)),
        ("jpegEngines", i64::from(p.jpeg_engines)),
        ("ofaEngines", i64::from(p.ofa_engines)),
        ("memory", bytes),
    ]
}

/// NVIDIA's `camelToDNSName` for the capacity names above.
fn counter_name(capacity: &str) -> String {
    let mut out = String::with_capacity(capacity.len() + 2);
    for c in capacity.chars() {
        if c.is_ascii_uppercase() {
            out.push('-');
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

fn counters(p: &MigProfile, start: u32, memory_slices: u32) -> BTreeMap<String, Counter> {
    let mut m: BTreeMap<String, Counter> = capacities(p)
        .into_iter()
        .map(|(name, v)| (counter_name(name), Counter { value: Quantity::from_int(v) }))
        .collect();
    m.insert("compute-slices".to_owned(), Counter { value: Quantity::from_int(i64::from(p.compute_slices)) });
    for i in start..start + memory_slices {
        m.insert(format!("memory-slice-{i}"), Counter { value: Quantity::from_int(1) });
    }
    m
}

fn capacity_map(p: &MigProfile) -> BTreeMap<String, DeviceCapacity> {
    capacities(p)
        .into_iter()
        .map(|(name, v)| (name.to_owned(), DeviceCapacity { value: Quantity::from_int(v), request_policy: None }))
        .collect()
}

impl MigGpu {
    /// The GPU's counter set (the full profile's capacities, all memory slices, and
    /// schedkit's `compute-slices`).
    pub fn counter_set(&self) -> CounterSet {
        let full = self.model.table().full();
        let mut c = counters(full, 0, MEMORY_SLICES);
        c.insert("compute-slices".to_owned(), Counter { value: Quantity::from_int(i64::from(COMPUTE_SLICES)) });
        CounterSet { name: counter_set_name(self.index), counters: c }
    }

    fn common_attributes(&self, kind: &str) -> BTreeMap<String, DeviceAttribute> {
        let t = self.model.table();
        let mut a = BTreeMap::new();
        a.insert("type".to_owned(), string(kind));
        a.insert("productName".to_owned(), string(t.product_name));
        a.insert("brand".to_owned(), string("Nvidia"));
        a.insert("architecture".to_owned(), string(t.architecture));
        a.insert("cudaComputeCapability".to_owned(), version(t.cuda_compute_capability));
        a.insert("index".to_owned(), int(self.index));
        a
    }

    /// The full-GPU device: NVIDIA's attributes (`type: gpu`, `uuid`, `productName`, ...)
    /// and the full profile's capacities; it consumes the whole counter set.
    pub fn full_device(&self) -> DeviceSpec {
        let full = self.model.table().full();
        let mut attributes = self.common_attributes("gpu");
        attributes.insert("uuid".to_owned(), string(&self.uuid));
        let set = self.counter_set();
        DeviceSpec {
            name: full_device_name(self.index),
            attributes,
            capacity: capacity_map(full),
            consumes_counters: vec![DeviceCounterConsumption { counter_set: set.name, counters: set.counters }],
            ..DeviceSpec::default()
        }
    }

    /// The device of `profile` placed at `start`.
    pub fn instance_device(&self, profile: &MigProfile, start: u32) -> DeviceSpec {
        let mut attributes = self.common_attributes("mig");
        attributes.insert("parentUUID".to_owned(), string(&self.uuid));
        attributes.insert("profile".to_owned(), string(profile.name));
        attributes.insert("placementStart".to_owned(), int(start));
        attributes.insert("memorySlices".to_owned(), int(profile.memory_slices));
        attributes.insert("computeSlices".to_owned(), int(profile.compute_slices));
        DeviceSpec {
            name: instance_device_name(self.index, profile, start),
            attributes,
            capacity: capacity_map(profile),
            consumes_counters: vec![DeviceCounterConsumption {
                counter_set: counter_set_name(self.index),
                counters: counters(profile, start, profile.memory_slices),
            }],
            ..DeviceSpec::default()
        }
    }

    /// Every device of the GPU: each profile's placements in `order` (profiles as the
    /// table lists them, smallest first), then the full GPU.
    pub fn devices(&self, order: PlacementOrder) -> Vec<DeviceSpec> {
        let t = self.model.table();
        let mut out: Vec<DeviceSpec> =
            t.profiles.iter().flat_map(|p| order.starts(p).map(move |s| self.instance_device(p, s))).collect();
        out.push(self.full_device());
        out
    }
}

/// A builder error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MigError {
    /// Two GPUs of one node share an index.
    #[error("node {node}: GPU index {index} appears twice")]
    DuplicateGpuIndex {
        /// The node.
        node: String,
        /// The index.
        index: u32,
    },
    /// The node name is empty.
    #[error("MIG slices need a node name")]
    EmptyNode,
    /// A HAMi MIG profile allowlist entry is invalid (HAMi's `ValidateMigProfileAllowlist`).
    #[error("{0}")]
    InvalidAllowlist(String),
    /// HAMi's `hami.io/vgpu-mig-allocations` annotation is malformed.
    #[error("hami.io/vgpu-mig-allocations: {0}")]
    InvalidAllocations(String),
}

/// Builds the `ResourceSlice`s of one node's MIG-capable GPUs, in one pool named after the
/// node: slices `<node>-mig-counters-<k>` (at most eight counter sets each, the API's
/// limit) and one `<node>-mig-gpu-<index>` per GPU with its devices (26 with the tables here,
/// within the 64 a slice with counter consumers may hold).
#[derive(Debug, Clone)]
pub struct MigNodeBuilder {
    node: String,
    driver: String,
    generation: i64,
    order: PlacementOrder,
    gpus: Vec<MigGpu>,
}

impl MigNodeBuilder {
    /// A node with no GPUs yet, publishing for [`NVIDIA_GPU_DRIVER`].
    pub fn new(node: &str) -> MigNodeBuilder {
        MigNodeBuilder {
            node: node.to_owned(),
            driver: NVIDIA_GPU_DRIVER.to_owned(),
            generation: 1,
            order: PlacementOrder::default(),
            gpus: Vec::new(),
        }
    }

    /// The driver name the slices carry.
    #[must_use]
    pub fn driver(mut self, driver: &str) -> Self {
        driver.clone_into(&mut self.driver);
        self
    }

    /// The pool generation.
    #[must_use]
    pub fn generation(mut self, generation: i64) -> Self {
        self.generation = generation;
        self
    }

    /// The placement order of instances.
    #[must_use]
    pub fn order(mut self, order: PlacementOrder) -> Self {
        self.order = order;
        self
    }

    /// Adds one GPU.
    #[must_use]
    pub fn gpu(mut self, gpu: MigGpu) -> Self {
        self.gpus.push(gpu);
        self
    }

    /// Adds `count` GPUs of `model` after the existing ones, with the next indices and
    /// UUIDs `GPU-<node>-<index>`.
    #[must_use]
    pub fn gpus(mut self, model: GpuModel, count: u32) -> Self {
        let first = self.gpus.iter().map(|g| g.index + 1).max().unwrap_or(0);
        for index in first..first + count {
            let uuid = format!("GPU-{}-{index}", self.node);
            self.gpus.push(MigGpu { index, uuid, model });
        }
        self
    }

    /// The GPUs added so far.
    pub fn gpu_list(&self) -> &[MigGpu] {
        &self.gpus
    }

    /// The slices, ready for [`DraStore::add_slice`](crate::dra::DraStore::add_slice).
    ///
    /// # Errors
    /// [`MigError::EmptyNode`] or [`MigError::DuplicateGpuIndex`].
    pub fn build(&self) -> Result<Vec<ResourceSlice>, MigError> {
        if self.node.is_empty() {
            return Err(MigError::EmptyNode);
        }
        let mut seen = std::collections::BTreeSet::new();
        for g in &self.gpus {
            if !seen.insert(g.index) {
                return Err(MigError::DuplicateGpuIndex { node: self.node.clone(), index: g.index });
            }
        }
        let counter_slices = self.gpus.len().div_ceil(RESOURCE_SLICE_MAX_COUNTER_SETS);
        let total = i64::try_from(counter_slices + self.gpus.len()).unwrap_or(i64::MAX);
        let slice = |name: String, devices: Vec<DeviceSpec>, shared_counters: Vec<CounterSet>| ResourceSlice {
            api_version: crate::dra::API_VERSION.to_owned(),
            kind: "ResourceSlice".to_owned(),
            metadata: ObjectMeta { name, ..ObjectMeta::default() },
            spec: ResourceSliceSpec {
                driver: self.driver.clone(),
                pool: ResourcePool {
                    name: self.node.clone(),
                    generation: self.generation,
                    resource_slice_count: total,
                },
                node_name: Some(self.node.clone()),
                devices,
                shared_counters,
                ..ResourceSliceSpec::default()
            },
        };
        let mut out = Vec::with_capacity(counter_slices + self.gpus.len());
        for (k, chunk) in self.gpus.chunks(RESOURCE_SLICE_MAX_COUNTER_SETS).enumerate() {
            let sets = chunk.iter().map(MigGpu::counter_set).collect();
            out.push(slice(format!("{}-mig-counters-{k:02}", self.node), Vec::new(), sets));
        }
        for g in &self.gpus {
            out.push(slice(format!("{}-mig-gpu-{:03}", self.node, g.index), g.devices(self.order), Vec::new()));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h100(index: u32) -> MigGpu {
        MigGpu { index, uuid: format!("GPU-{index}"), model: GpuModel::H100_80GB }
    }

    #[test]
    fn names_follow_nvidia() {
        let t = GpuModel::H100_80GB.table();
        let p = t.profile("1g.10gb").unwrap();
        assert_eq!(instance_device_name(3, p, 6), "gpu-3-mig-1g10gb-19-6");
        let me = t.profile("1g.10gb+me").unwrap();
        assert_eq!(instance_device_name(0, me, 2), "gpu-0-mig-1g10gb-me-20-2");
        assert_eq!(counter_name("copyEngines"), "copy-engines");
        assert_eq!(counter_name("ofaEngines"), "ofa-engines");
        assert_eq!(
            MigDeviceRef::parse("gpu-3-mig-1g10gb-19-6"),
            Some(MigDeviceRef::Instance { gpu: 3, profile_id: 19, start: 6 })
        );
        assert_eq!(
            MigDeviceRef::parse("gpu-0-mig-1g10gb-me-20-2"),
            Some(MigDeviceRef::Instance { gpu: 0, profile_id: 20, start: 2 })
        );
        assert_eq!(MigDeviceRef::parse("gpu-12"), Some(MigDeviceRef::Full { gpu: 12 }));
        for bad in ["gpu-", "gpu-x", "cpu-1", "gpu-1-mig--19-0", "gpu-1-mig-1g-x-0", "gpu-1-mig-19"] {
            assert_eq!(MigDeviceRef::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn balanced_order_as_hami() {
        let t = GpuModel::A100_40GB.table();
        let order = |name: &str, o: PlacementOrder| o.starts(t.profile(name).unwrap()).collect::<Vec<_>>();
        assert_eq!(order("1g.5gb", PlacementOrder::Balanced), [6, 5, 4, 3, 2, 1, 0]);
        assert_eq!(order("3g.20gb", PlacementOrder::Balanced), [4, 0]);
        assert_eq!(order("2g.10gb", PlacementOrder::Balanced), [0, 2, 4]);
        assert_eq!(order("1g.5gb", PlacementOrder::Ascending), [0, 1, 2, 3, 4, 5, 6]);
    }

    #[test]
    fn slices_validate_and_respect_api_limits() {
        let store = crate::dra::DraStore::new();
        let slices = MigNodeBuilder::new("node-a").gpus(GpuModel::H100_80GB, 9).build().unwrap();
        // Two counter slices (8 + 1 sets) and nine device slices of 26 devices.
        assert_eq!(slices.len(), 11);
        assert_eq!(slices[0].spec.shared_counters.len(), 8);
        assert_eq!(slices[2].spec.devices.len(), 26);
        for s in slices {
            store.add_slice(s).unwrap();
        }
        let dup = MigNodeBuilder::new("n").gpu(h100(0)).gpu(h100(0)).build();
        assert_eq!(dup, Err(MigError::DuplicateGpuIndex { node: "n".into(), index: 0 }));
        assert_eq!(MigNodeBuilder::new("").build(), Err(MigError::EmptyNode));
    }

    #[test]
    fn full_gpu_consumes_every_counter() {
        let g = h100(0);
        let set = g.counter_set();
        let full = g.full_device();
        assert_eq!(full.consumes_counters[0].counters, set.counters);
        assert_eq!(set.counters.len(), 7 + 8 + 1);
        assert_eq!(set.counters["memory"].value, Quantity::from_int(81152 * 1024 * 1024));
        let one = g.instance_device(GpuModel::H100_80GB.table().profile("1g.20gb").unwrap(), 4);
        let names: Vec<_> =
            one.consumes_counters[0].counters.keys().filter(|k| k.starts_with("memory-slice")).collect();
        assert_eq!(names, ["memory-slice-4", "memory-slice-5"]);
    }
}
