//! schedkit: the Kubernetes Scheduling Framework as an embeddable library.
//!
//! Feed nodes and pods from anywhere, implement a few plugin traits, and have pods
//! placed through the full Kubernetes scheduling cycle — PreFilter, Filter, PostFilter,
//! PreScore, Score, Reserve, Permit, PreBind, Bind, PostBind — in microseconds.
//!
//! ```
//! use schedkit::prelude::*;
//! use schedkit::testing::{NodeBuilder, PodBuilder};
//!
//! // A Filter + Score plugin: only nodes with a free GPU, prefer the emptiest.
//! struct GpuFree;
//! impl Plugin for GpuFree {
//!     fn name(&self) -> &str { "GpuFree" }
//!     fn register(self: std::sync::Arc<Self>, points: &mut ExtensionPoints) {
//!         points.filter(self.clone()).score(self);
//!     }
//! }
//! impl FilterPlugin for GpuFree {
//!     fn filter(&self, _: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
//!         let gpu = Symbol::intern("nvidia.com/gpu");
//!         let free = node.allocatable().scalar(gpu) - node.requested().scalar(gpu);
//!         if free >= pod.requests.scalar(gpu) { Status::SUCCESS } else { Status::unschedulable("no free GPU") }
//!     }
//! }
//! impl ScorePlugin for GpuFree {
//!     fn score(&self, _: &CycleState, _: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
//!         Ok(100 - (node.pods().len() as i64).min(100))
//!     }
//! }
//!
//! let profile = Profile::builder("default-scheduler").plugin(GpuFree).build().unwrap();
//! let mut scheduler = Scheduler::builder().profile(profile).build();
//! for i in 0..4 {
//!     scheduler.add_node(NodeBuilder::new(&format!("node-{i}")).cpu("32").gpus(8).build()).unwrap();
//! }
//! let binding = scheduler.schedule_pod(PodBuilder::new("train-0").gpus(4).build()).unwrap();
//! println!("placed on {}", binding.node());
//! binding.run().unwrap();
//! ```
//!
//! Layers point down: [`model`] <- [`snapshot`] <- [`framework`] <- [`scheduler`].

/// Dynamic Resource Allocation: resource.k8s.io/v1 objects, the shared store, the structured allocator.
pub mod dra;
pub mod framework;
pub mod model;
pub mod plugins;
pub mod queue;
pub mod scheduler;
/// The CEL-compatible DRA device selector language: compile once, match devices in nanoseconds.
pub mod selector;
pub mod sim;
pub mod snapshot;
pub mod testing;
/// GPU topology graphs, `nvidia-smi topo -m` parsing and topology-aware GPU set selection.
pub mod topology;
pub mod trace;

/// The names most programs need.
pub mod prelude {
    pub use crate::framework::{
        Code, CycleState, ExtensionPoints, FilterPlugin, Handle, NodeScore, PermitDecision, PermitPlugin, Plugin,
        PreFilterPlugin, PreFilterResult, PreScorePlugin, Profile, Registry, ReservePlugin, ScorePlugin, Status,
    };
    pub use crate::model::{Node, Pod, Quantity, Resources, Symbol};
    pub use crate::scheduler::{BindingCycle, ScheduleError, Scheduler, TieBreak};
    pub use crate::snapshot::{Cache, NodeInfo, PodInfo, Snapshot};
}

/// The README's examples run as doctests, so the quickstart can't rot.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
