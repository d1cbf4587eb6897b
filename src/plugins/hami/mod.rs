//! HAMi-compatible vGPU sharing (NVIDIA): pods share GPUs by device memory and core
//! percentage as with HAMi v2.10.0 (`Project-HAMi/HAMi`, tag `v2.10.0`), scheduled by a
//! native plugin instead of HAMi's HTTP extender, with the same requests, annotations,
//! Fit, policies and allocation annotations.
//!
//! # Files
//!
//! `request.rs`: [`ContainerRequest`] / [`PodRequests`] and [`HamiConfig`];
//! `steering.rs`: the pod annotations ([`Steering`]); `device.rs`: node registration
//! ([`DeviceInfo`]); `policy.rs`: GPU and node policies and scores; `fit.rs`: Fit;
//! `state.rs`: the device table [`HamiState`]; `allocation.rs`: the pod annotations
//! HAMi writes; `plugin.rs`: [`HamiVgpu`]; `webhook.rs`: [`mutate_pod`];
//! `replay.rs`: the trace replay's mapping.
//!
//! # Model
//!
//! A node registers devices in its `hami.io/node-nvidia-register` annotation (or
//! through [`HamiState::set_devices`]): each with a UUID, a type, memory (MiB), cores
//! (100 for a whole GPU), a number of time slices, a NUMA node and a health flag. A
//! container asks for `nvidia.com/gpu` devices, each with `nvidia.com/gpumem` MiB or
//! `nvidia.com/gpumem-percentage` of the device's memory and `nvidia.com/gpucores`
//! percent of its cores. Devices are shared until a slice, memory or cores run out; a
//! 100-core request takes a device alone.
//!
//! # Where upstream is followed, and where not
//!
//! Request parsing, the annotations, Fit's checks and reason texts, device and node
//! scores (float32), the GPU policies (`binpack`, `spread`, `mutex`, `numa` and comma
//! chains, numa-bind) and node policies, init-container peaks and the allocation
//! encoding follow v2.10.0's `pkg/device/nvidia/device.go`, `pkg/device/devices.go`,
//! `pkg/scheduler/score.go`, `pkg/scheduler/policy/*.go`, `pkg/util` and
//! `pkg/scheduler/webhook.go`; each function cites its source. MIG-mode devices follow
//! v2.10.0's dynamic MIG (`mig_topology.go`, `CustomFilterRule`, `AddResourceUsage`)
//! on the profiles a device registers ([`DeviceInfo::with_mig_profiles`], built from
//! the [`dra::mig`](crate::dra::mig) tables): the smallest profile holding the memory
//! request with a free placement, several instances per GPU for one container, the
//! profile's memory and cores booked, and the placement written in
//! `hami.io/vgpu-mig-allocations` and read back from bound pods. Not modelled: upstream
//! marking a MIG device unhealthy when a bound pod's reservation is missing, the pair
//! scores of
//! `topology-aware` (every pair counts 0), HAMi ResourceQuotas, and the webhook's
//! environment variables. The node choice, which HAMi's extender makes inside Filter by
//! sorting the fitting nodes and taking the last, is the plugin's Score and
//! NormalizeScore (see [`HamiVgpu`]); node ties go to the scheduler's tie-break where
//! upstream's order depends on goroutine timing.
//!
//! # Example
//!
//! ```
//! use std::sync::Arc;
//! use schedkit::framework::{Handle, Profile};
//! use schedkit::plugins::hami::{DeviceInfo, HamiConfig, HamiState, HamiVgpu, RecordingAnnotator, register};
//! use schedkit::scheduler::Scheduler;
//! use schedkit::testing::{NodeBuilder, PodBuilder};
//!
//! let handle = Handle::default();
//! let state = HamiState::new();
//! let written = Arc::new(RecordingAnnotator::default());
//! let profile = Profile::builder("hami-scheduler")
//!     .plugin(HamiVgpu::new(HamiConfig::default(), state.clone(), handle.clone()).with_annotator(written.clone()))
//!     .build()
//!     .unwrap();
//! let mut sched = Scheduler::builder().profile(profile).handle(handle).build();
//! for name in ["n1", "n2"] {
//!     let mut node = NodeBuilder::new(name).cpu("8").memory("32Gi").build();
//!     let gpus: Vec<_> = (0..2).map(|i| DeviceInfo::gpu(&format!("{name}-GPU-{i}"), "NVIDIA-A100", 40960).with_index(i)).collect();
//!     register(&mut node, &gpus);
//!     sched.add_node(node).unwrap();
//! }
//! // Half a GPU's memory and 30% of its cores.
//! let pod = PodBuilder::new("p").scheduler_name("hami-scheduler").with(|p| {
//!     p.spec.containers[0].resources.limits = schedkit::model::ResourceList::parse([
//!         ("nvidia.com/gpu", "1"), ("nvidia.com/gpumem-percentage", "50"), ("nvidia.com/gpucores", "30"),
//!     ]).unwrap();
//! }).build();
//! let info = schedkit::snapshot::PodInfo::new(pod).unwrap();
//! let binding = sched.schedule_one(&info).unwrap();
//! let node = binding.node().to_owned();
//! binding.run().unwrap();
//! let annotations = written.get("default/p").unwrap();
//! assert_eq!(annotations["hami.io/vgpu-node"], node);
//! assert!(annotations["hami.io/vgpu-devices-allocated"].ends_with(",NVIDIA,20480,30:;"));
//! let used: i32 = state.usage(&node).unwrap().iter().map(|(_, u)| u.usedmem).sum();
//! assert_eq!(used, 20480);
//! ```

mod allocation;
mod device;
mod fit;
mod plugin;
mod policy;
pub mod replay;
mod request;
mod state;
mod steering;
mod webhook;

#[cfg(test)]
#[path = "mig_tests.rs"]
mod mig_tests;

pub use allocation::{
    BIND_PHASE, BIND_TIME, ContainerDevice, NoopAnnotator, PodAnnotator, RecordingAnnotator, VGPU_DEVICES_ALLOCATED,
    VGPU_DEVICES_TO_ALLOCATE, VGPU_NODE, VGPU_TIME, decode_pod_devices, encode_pod_devices,
};
pub use device::{
    DEVICE_CORDON, DeviceInfo, HAMI_CORE_MODE, MIG_MODE, NODE_NVIDIA_REGISTER, cordoned, decode_registration,
    encode_registration, node_devices, register,
};
pub use fit::{Chosen, DeviceUsage, FitFailure, FitReason, MigPick, Pick, PodFit, ReasonCounts, Usage, fit, fit_pod};
pub use plugin::{HAMI_VGPU, HamiAnnotations, HamiReserved, HamiVgpu};
pub use policy::{GpuPolicy, NodePolicy, ScoreInput, SortKey, device_score, node_score};
pub use request::{ContainerRequest, HamiConfig, MEM_PERCENTAGE_UNSET, NVIDIA_GPU_DEVICE, PodRequests};
pub use state::{DeviceDelta, HamiState, PodAllocation, ReserveError};
pub use steering::{
    DEVICE_SCORING_WEIGHTS, GPU_SCHEDULER_POLICY, NODE_SCHEDULER_POLICY, NOUSE_GPU_TYPE, NOUSE_GPU_UUID, NUMA_BIND,
    ScoringWeights, Steering, USE_GPU_TYPE, USE_GPU_UUID, VGPU_MODE,
};
pub use webhook::{Admission, mutate_pod};

/// What went wrong reading HAMi input or booking devices.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HamiError {
    /// `hami.io/device-scoring-weights` is malformed (upstream's message).
    #[error("invalid hami.io/device-scoring-weights annotation {value:?}: {why}")]
    ScoringWeights {
        /// The annotation.
        value: String,
        /// What is wrong.
        why: String,
    },
    /// A node's device registration is missing or malformed.
    #[error("invalid device registration: {0}")]
    Registration(String),
    /// A pod's device annotation is malformed.
    #[error("invalid device annotation: {0}")]
    Annotation(String),
    /// The webhook refuses the pod.
    #[error("admission denied: {0}")]
    Denied(String),
    /// The webhook finds an invalid value (upstream answers 500 with this message).
    #[error("{0}")]
    Invalid(String),
    /// The pod already holds devices.
    #[error("pod {0} already holds vGPU devices")]
    AlreadyAllocated(String),
    /// The node is not in the table.
    #[error("node {0} has no registered vGPU devices")]
    UnknownNode(String),
    /// A device is not on the node.
    #[error("node {node} has no device {uuid}")]
    UnknownDevice {
        /// Node.
        node: String,
        /// Device UUID.
        uuid: String,
    },
    /// Booking would take a device past its slices, memory or cores.
    #[error("node {node}: device {uuid} would be over-committed")]
    OverCommit {
        /// Node.
        node: String,
        /// Device UUID.
        uuid: String,
    },
}
