//! HAMi in the FGD trace replay ([`crate::sim`]): how a trace's milli-GPU requests and
//! GPU nodes become HAMi requests and registered devices, the profile of a HAMi policy
//! ([`profile`]), and [`GpuShareMirror`], which books HAMi's choice in the replay's
//! [`GpuState`] so allocation and fragmentation are measured as for the other policies.
//!
//! # The mapping
//!
//! - A node with `n` GPUs of model `M` registers `n` devices `<node>-GPU-<i>` of type
//!   `NVIDIA-M`, each with [`SPLIT_COUNT`] time slices (HAMi's chart default
//!   `deviceSplitCount`), 100 cores and [`DEVICE_MEMORY_MIB`] MiB.
//! - A pod asking for `count` GPUs of `milli` milli-GPU each asks HAMi for
//!   `nvidia.com/gpu = count`, `nvidia.com/gpucores = ceil(milli / 10)` and
//!   `nvidia.com/gpumem-percentage = ceil(milli / 10)` (a whole GPU is 100% of memory
//!   and 100 cores, which HAMi treats as exclusive); the trace's allowed models become
//!   `nvidia.com/use-gputype` (HAMi matches them as substrings of the card type).
//!   Every trace request is a multiple of 10 milli, so nothing is rounded on the bundled
//!   traces. Memory and cores are given as shares, so the device's memory size doesn't
//!   change which pods fit.
//!
//! What differs from the milli-GPU model besides the policies: a GPU holds at most
//! [`SPLIT_COUNT`] pods, and both memory and cores must fit.

use std::sync::Arc;

use smallvec::SmallVec;

use super::{
    DeviceInfo, GPU_SCHEDULER_POLICY, HamiConfig, HamiReserved, HamiState, HamiVgpu, NODE_SCHEDULER_POLICY,
    USE_GPU_TYPE, register,
};
use crate::framework::{ConfigError, CycleState, ExtensionPoints, Handle, Plugin, Profile, ReservePlugin, Status};
use crate::model::{Node, Pod, Quantity, Symbol};
use crate::plugins::gpu_share::{GPU_COUNT_RESOURCE, GPU_MODEL_LABEL, GpuRequest, GpuState, ReservedDevices};
use crate::snapshot::PodInfo;

/// Time slices per replayed GPU (HAMi's chart default `deviceSplitCount`).
pub const SPLIT_COUNT: i32 = 10;
/// Memory per replayed GPU, MiB (320 MiB per percent).
pub const DEVICE_MEMORY_MIB: i32 = 32_000;

/// Registers the GPUs of a replay node (allocatable [`GPU_COUNT_RESOURCE`], label
/// [`GPU_MODEL_LABEL`]) in its `hami.io/node-nvidia-register` annotation.
///
/// ```
/// use schedkit::plugins::hami::{node_devices, replay::register_gpu_share_node};
/// let mut n = schedkit::trace::TraceNode { name: "n0".into(), cpu_milli: 8000, memory_mib: 1024, gpus: 2, model: Some("T4".into()) }.to_node();
/// register_gpu_share_node(&mut n);
/// let d = node_devices(&n).unwrap();
/// assert_eq!((d.len(), d[1].id.as_str(), d[1].kind.as_str()), (2, "n0-GPU-1", "NVIDIA-T4"));
/// ```
pub fn register_gpu_share_node(node: &mut Node) {
    let count = node.status.allocatable.get_str(GPU_COUNT_RESOURCE).map_or(0, Quantity::value).clamp(0, 64);
    if count == 0 {
        return;
    }
    let model = node.metadata.labels.get_str(GPU_MODEL_LABEL).unwrap_or("GPU");
    let devices: Vec<DeviceInfo> = (0..count as u32)
        .map(|i| {
            DeviceInfo::gpu(&format!("{}-GPU-{i}", node.name()), &format!("NVIDIA-{model}"), DEVICE_MEMORY_MIB)
                .with_index(i)
                .with_count(SPLIT_COUNT)
        })
        .collect();
    register(node, &devices);
}

/// Adds the HAMi request of a replay pod (its gpu_share labels, see the module docs)
/// as container limits and annotations; `policies` are the pod's GPU and node policy.
///
/// ```
/// use schedkit::plugins::hami::{HamiConfig, PodRequests, replay::add_gpu_share_request};
/// let pods = schedkit::trace::parse_pods("p", "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\np,1000,1024,1,250,T4\n").unwrap();
/// let mut p = pods[0].to_pod();
/// add_gpu_share_request(&mut p, ("binpack", "spread"));
/// let r = PodRequests::of(&p, &HamiConfig::default()).containers[0].unwrap();
/// assert_eq!((r.nums, r.mem_percentage, r.coresreq), (1, 25, 25));
/// assert_eq!(p.metadata.annotations["nvidia.com/use-gputype"], "T4");
/// ```
pub fn add_gpu_share_request(pod: &mut Pod, policies: (&str, &str)) {
    let Ok(Some(req)) = GpuRequest::from_pod(pod) else { return };
    let share = i64::from(req.milli.div_ceil(10));
    if let Some(c) = pod.spec.containers.first_mut() {
        let l = &mut c.resources.limits;
        l.set(Symbol::intern("nvidia.com/gpu"), Quantity::from_int(i64::from(req.count)));
        l.set(Symbol::intern("nvidia.com/gpucores"), Quantity::from_int(share));
        l.set(Symbol::intern("nvidia.com/gpumem-percentage"), Quantity::from_int(share));
    }
    let a = &mut pod.metadata.annotations;
    if !req.models.is_empty() {
        let models: Vec<&str> = req.models.iter().map(|m| m.as_str()).collect();
        a.insert(USE_GPU_TYPE.to_owned(), models.join(","));
    }
    a.insert(GPU_SCHEDULER_POLICY.to_owned(), policies.0.to_owned());
    a.insert(NODE_SCHEDULER_POLICY.to_owned(), policies.1.to_owned());
}

/// Books what [`HamiVgpu`]'s Reserve took in the replay's [`GpuState`] (the devices,
/// with the pod's milli-GPU from its labels) and records it as [`ReservedDevices`];
/// Unreserve gives it back. Runs after HamiVgpu in the profile.
pub struct GpuShareMirror {
    gpus: Arc<GpuState>,
    hami: Arc<HamiState>,
    handle: Handle,
}

impl std::fmt::Debug for GpuShareMirror {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuShareMirror").finish_non_exhaustive()
    }
}

impl GpuShareMirror {
    /// The mirror of `hami`'s bookings into `gpus`.
    pub fn new(gpus: Arc<GpuState>, hami: Arc<HamiState>, handle: Handle) -> GpuShareMirror {
        GpuShareMirror { gpus, hami, handle }
    }
}

impl Plugin for GpuShareMirror {
    fn name(&self) -> &str {
        "GpuShareMirror"
    }
    fn register(self: Arc<Self>, points: &mut ExtensionPoints) {
        points.reserve(self);
    }
}

impl ReservePlugin for GpuShareMirror {
    fn reserve(&self, state: &mut CycleState, pod: &PodInfo, node: &str) -> Status {
        let Some(HamiReserved(a)) = state.read::<HamiReserved>() else { return Status::SUCCESS };
        let Ok(Some(req)) = GpuRequest::from_pod(&pod.pod) else { return Status::SUCCESS };
        let devices: Option<SmallVec<[u8; 8]>> = self
            .hami
            .with_node(Symbol::lookup(node).unwrap_or_default(), |devs, _| {
                a.containers
                    .iter()
                    .flatten()
                    .map(|u| devs.iter().position(|d| d.id == u.uuid).map(|i| i as u8))
                    .collect()
            })
            .flatten();
        let snap = self.handle.snapshot();
        let (Some(devices), Some(info)) = (devices, snap.get(node)) else {
            return Status::error(format!("replay: HAMi's devices on {node} are not in the GPU table"));
        };
        if let Err(e) = self.gpus.allocate(&pod.uid, info.node(), &req, &devices) {
            return Status::error(format!("replay: {e}"));
        }
        state.write(ReservedDevices { node: node.to_owned(), devices });
        Status::SUCCESS
    }

    fn unreserve(&self, state: &mut CycleState, pod: &PodInfo, _: &str) {
        if state.remove::<ReservedDevices>().is_some() {
            self.gpus.release(&pod.uid);
        }
    }
}

/// The replay profile of a HAMi policy: [`HamiVgpu`] (its GPU and node policies set on
/// each pod by [`add_gpu_share_request`]), [`GpuShareMirror`], and `filters` with their
/// Score disabled.
pub fn profile(
    name: &str,
    gpus: &Arc<GpuState>,
    handle: &Handle,
    filters: Vec<Arc<dyn Plugin>>,
) -> Result<Profile, ConfigError> {
    let hami = HamiState::new();
    let mut b = Profile::builder(name)
        .plugin(HamiVgpu::new(HamiConfig::default(), hami.clone(), handle.clone()))
        .plugin(GpuShareMirror::new(gpus.clone(), hami, handle.clone()));
    for f in filters {
        let n = f.name().to_owned();
        b = b
            .plugin_arc(f, 1)
            .disable(&n, crate::framework::ExtensionPoint::PreScore)
            .disable(&n, crate::framework::ExtensionPoint::Score);
    }
    b.percentage_of_nodes_to_score(100).build()
}
