//! GPU sharing: a node's GPUs are individual devices, each with free milli-GPU (1000 =
//! a whole GPU); a pod asks for `count` whole GPUs, or a share (`milli < 1000`, count
//! one) of one GPU, optionally restricted to GPU models. This is the model of the
//! USENIX ATC'23 paper "Beware of Fragmentation: Scheduling GPU-Sharing Workloads with
//! Fragmentation Gradient Descent" (Weng et al.) and of its public simulator
//! (`hkust-adsl/kubernetes-scheduler-simulator`, whose `Open-Gpu-Share` plugin this
//! module's [`GpuShareFit`] follows).
//!
//! # Where the device state lives
//!
//! Which device has how much free milli-GPU is plugin state: a [`NodeInfo`] has no slot
//! for it. It lives in a [`GpuState`], a table keyed by node name behind one lock, shared
//! (by `Arc`) by [`GpuShareFit`] and the policy Score plugins. [`GpuShareFit`]'s Reserve
//! picks the devices (by the profile's [`DeviceSelect`]) and records them in the table and
//! in the [`CycleState`] ([`ReservedDevices`]); Unreserve gives back exactly what Reserve
//! took. A node missing from the table has all its GPUs free (its count and model come
//! from the node: allocatable [`GPU_COUNT_RESOURCE`], label [`GPU_MODEL_LABEL`]);
//! [`GpuState::add_node`] registers nodes up front so Filter doesn't read them from the
//! node each time. Pods bound outside the scheduler are recorded with
//! [`GpuState::allocate`] and released with [`GpuState::release`] when they go (remove
//! or add them in the scheduler's cache at the same time).
//!
//! Filter reads no device lists: the table keeps a small summary per node (model, device
//! count, fully free devices, largest and total free milli-GPU), and GpuShareFit's
//! PreFilter hands Filter the summaries as they stand (shared by `Arc`, copied only if
//! the table changes while a cycle still holds them), so a cycle judges every node
//! against one state of the table without taking its lock per node.
//!
//! The alternative, an extension slot on `NodeInfo`, would put device state in the
//! snapshot's copy-on-write machinery for every user; this keeps the core unchanged and
//! the cost on the plugins that use it. The price: the table is the plugin's, so it is
//! not part of a preemption dry run's cloned state.
//!
//! # Pods
//!
//! A pod's request is read from its labels [`GPU_COUNT_LABEL`], [`GPU_MILLI_LABEL`] and
//! [`GPU_MODEL_LABEL`] (`|`-separated models) — the annotations the authors' simulator
//! reads; schedkit's model keeps them as labels. A pod without them needs no GPU.
//!
//! # Policies
//!
//! One Score plugin per policy of the paper: [`Fgd`], [`BestFit`], [`DotProduct`],
//! [`GpuPacking`], [`GpuClustering`], [`RandomScore`]; [`Policy`] builds the profile the
//! paper's experiments use (GpuShareFit + NodeResourcesFit's Filter + one policy, with
//! that policy's device selection). Each file cites the simulator file it follows; the
//! integer truncations and BestFit's min-max normalisation are the simulator's, and
//! `tests/trace_peer.rs` checks FGD against a run of the simulator pod by pod.

/// Declares a policy Score plugin over the shared [`GpuState`] whose node score is
/// its [`ViewScore::score_in`] with no normalization: the struct, its constructor
/// and the Plugin/ScorePlugin wiring (one request read and one table lock per batch).
macro_rules! view_score_plugin {
    ($(#[$doc:meta])* $ty:ident, $name:expr) => {
        $(#[$doc])*
        pub struct $ty {
            state: std::sync::Arc<super::GpuState>,
        }

        impl $ty {
            #[doc = concat!(stringify!($ty), " over `state`.")]
            pub fn new(state: std::sync::Arc<super::GpuState>) -> $ty {
                $ty { state }
            }
        }

        impl crate::framework::Plugin for $ty {
            fn name(&self) -> &str {
                $name
            }
            fn register(self: std::sync::Arc<Self>, points: &mut crate::framework::ExtensionPoints) {
                points.score(self);
            }
        }

        impl crate::framework::ScorePlugin for $ty {
            fn score(
                &self,
                state: &crate::framework::CycleState,
                pod: &crate::snapshot::PodInfo,
                node: &crate::snapshot::NodeInfo,
            ) -> Result<i64, crate::framework::Status> {
                super::score_one(self, state, pod, node)
            }

            fn score_nodes(
                &self,
                state: &crate::framework::CycleState,
                pod: &crate::snapshot::PodInfo,
                nodes: crate::snapshot::NodeList<'_>,
                scores: &mut [crate::framework::NodeScore],
            ) -> Result<(), crate::framework::Status> {
                super::score_batch(self, state, pod, nodes, scores)
            }
        }
    };
}

mod best_fit;
mod dot_product;
mod fgd;
mod fit;
pub mod frag;
mod gpu_clustering;
mod gpu_packing;
mod policy;
mod random_fit;
mod request;
mod state;

pub use best_fit::BestFit;
pub use dot_product::DotProduct;
pub use fgd::Fgd;
pub use fit::{DeviceSelect, GPU_SHARE_FIT, GpuShareFit, ReservedDevices};
pub use frag::{TypicalPod, TypicalPods};
pub use gpu_clustering::GpuClustering;
pub use gpu_packing::GpuPacking;
pub use policy::Policy;
pub use random_fit::RandomScore;
pub use request::{
    GPU_COUNT_LABEL, GPU_COUNT_RESOURCE, GPU_MILLI_LABEL, GPU_MODEL_LABEL, GpuRequest, GpuRequestState, request_of,
};
pub use state::{Allocation, GpuError, GpuState, GpuView, NodeGpus};

use crate::framework::{CycleState, Status};
use crate::snapshot::{NodeInfo, PodInfo};

/// Milli-GPU in one GPU.
pub const MILLI: u32 = 1000;
/// Largest CPU of a node in the paper's normalisations (`MaxSpecCpu`, millicores).
pub const MAX_SPEC_CPU: f64 = 128_000.0;
/// Largest GPU of a node in the paper's normalisations (`MaxSpecGpu`, milli-GPU).
pub const MAX_SPEC_GPU: f64 = 8_000.0;

/// A policy Score plugin scoring one node given a table view and the pod's request,
/// so `score` and the batched `score_nodes` share one body.
pub(crate) trait ViewScore {
    fn gpu_state(&self) -> &GpuState;
    fn score_in(
        &self,
        view: &GpuView<'_>,
        req: Option<&GpuRequest>,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> Result<i64, Status>;
}

/// `ScorePlugin::score` of a [`ViewScore`].
pub(crate) fn score_one<T: ViewScore>(
    p: &T,
    state: &CycleState,
    pod: &PodInfo,
    node: &NodeInfo,
) -> Result<i64, Status> {
    let req = request_of(state, pod);
    p.score_in(&p.gpu_state().view(), req.as_ref(), pod, node)
}

/// `ScorePlugin::score_nodes` of a [`ViewScore`]: the request read and the table locked
/// once per batch.
pub(crate) fn score_batch<T: ViewScore>(
    p: &T,
    state: &CycleState,
    pod: &PodInfo,
    nodes: crate::snapshot::NodeList<'_>,
    scores: &mut [crate::framework::NodeScore],
) -> Result<(), Status> {
    let req = request_of(state, pod);
    let view = p.gpu_state().view();
    for (slot, node) in scores.iter_mut().zip(nodes.iter()) {
        slot.score = p.score_in(&view, req.as_ref(), pod, node)?;
    }
    Ok(())
}

/// SplitMix64, seeded: for RandomScore and random device choice.
#[derive(Debug, Clone)]
pub(crate) struct Rng(pub u64);

impl Rng {
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }
}

/// Free CPU (millicores) of a node: allocatable minus requested, as the simulator's
/// `MilliCpuLeft`.
#[inline]
pub fn cpu_left(node: &NodeInfo) -> i64 {
    node.allocatable().milli_cpu - node.requested().milli_cpu
}
