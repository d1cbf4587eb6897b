//! GPU sharing: a node's GPUs are individual devices, each with free milli-GPU (1000 =
//! a whole GPU); a pod asks for `count` whole GPUs, or a share (`milli < 1000`, count
//! one) of one GPU, optionally restricted to GPU models. This is the model of the
//! USENIX ATC'23 paper "Beware of Fragmentation: Scheduling GPU-Sharing Workloads with
//! Fragmentation Gradient Descent" (Weng et al.) and of its public simulator
//! (`hkust-adsl/kubernetes-scheduler-simulator`, whose `Open-Gpu-Share` plugin this
//! module's [`GpuShareFit`] follows).
//!
//! # Files
//!
//! `request.rs`: the pod's request and its labels; `state.rs`: the device table;
//! `free_index.rs`: its nodes by free capacity;
//! `fit.rs`: GpuShareFit and device choice; `score.rs`: [`PolicyScore`]; one file per
//! policy; `frag.rs`: fragmentation; `policy.rs`: the [`Policy`] profiles.
//!
//! # Where the device state lives
//!
//! Which device has how much free milli-GPU is plugin state: a [`NodeInfo`] has no slot
//! for it. It lives in a [`GpuState`], a table keyed by node name behind one lock, shared
//! (by `Arc`) by [`GpuShareFit`] and the policy Score plugins. [`GpuShareFit`]'s Reserve
//! picks the devices (by the profile's [`DeviceSelect`]) and records them in the table and
//! in the [`CycleState`] ([`ReservedDevices`]); Unreserve gives back exactly what
//! Reserve took. A node missing from the table has all its GPUs free (its count and model come
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
//! The table also indexes its nodes by GPU model, most free milli-GPU on one device and
//! number of fully free devices (`free_index.rs`). With
//! [`GpuShareFit::narrow_nodes`] on (as in every [`Policy`] profile), PreFilter lists
//! from it exactly the nodes Filter will accept, and the cycle walks only those (Filter
//! then checks nothing). The set of a request shape is kept between cycles and brought
//! up to date from the table's log of changed entries, so an allocation costs the next
//! cycle of that shape one entry's update instead of a new listing.
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
//! that policy's device selection). Every policy is declared the same way, as a
//! [`PolicyScore`]: its name, what it reads once per batch of nodes, one node's score,
//! and optionally a PreScore step and a normalisation; the Plugin and ScorePlugin
//! wiring comes with the trait. Each file cites the simulator file it follows; the
//! integer truncations and BestFit's min-max normalisation are the simulator's, and
//! `tests/trace_peer.rs` checks FGD against a run of the simulator pod by pod.
//!
//! [`CycleState`]: crate::framework::CycleState

mod best_fit;
mod dot_product;
mod fgd;
mod fit;
pub mod frag;
mod free_index;
mod gpu_clustering;
mod gpu_packing;
mod policy;
mod random_fit;
mod request;
mod score;
mod state;

pub use best_fit::BestFit;
pub use dot_product::DotProduct;
pub use fgd::{Fgd, FgdBatch};
pub use fit::{DeviceSelect, GPU_SHARE_FIT, GpuShareFit, ReservedDevices};
pub use frag::{TypicalPod, TypicalPods};
pub use gpu_clustering::GpuClustering;
pub use gpu_packing::GpuPacking;
pub use policy::Policy;
pub use random_fit::RandomScore;
pub use request::{
    GPU_COUNT_LABEL, GPU_COUNT_RESOURCE, GPU_MILLI_LABEL, GPU_MODEL_LABEL, GpuRequest, GpuRequestState, request_of,
};
pub use score::{PolicyScore, TableBatch};
pub use state::{Allocation, GpuError, GpuState, GpuView, NodeGpus};

use crate::snapshot::NodeInfo;

/// Milli-GPU in one GPU.
pub const MILLI: u32 = 1000;
/// Largest CPU of a node in the paper's normalisations (`MaxSpecCpu`, millicores).
pub const MAX_SPEC_CPU: f64 = 128_000.0;
/// Largest GPU of a node in the paper's normalisations (`MaxSpecGpu`, milli-GPU).
pub const MAX_SPEC_GPU: f64 = 8_000.0;

/// Free CPU (millicores) of a node: allocatable minus requested, as the simulator's
/// `MilliCpuLeft`.
#[inline]
pub fn cpu_left(node: &NodeInfo) -> i64 {
    node.allocatable().milli_cpu - node.requested().milli_cpu
}
