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
//! # Architecture
//!
//! One idea per module, in layers that only point down: a module may use the ones
//! on the lines below it, never those above.
//!
//! | layer | modules | holds |
//! | --- | --- | --- |
//! | edge | [`config`], [`manifest`] | `KubeSchedulerConfiguration` files built into profiles; Kubernetes objects as the API server prints them, converted and defaulted |
//! | on top | [`sim`], [`testing`], `metrics_server` (feature `metrics`), `extender` (feature `extender`: the HTTP scheduler-extender client and server) | the trace replay (the FGD paper's method); builders and fakes for tests; `/metrics` over HTTP on 127.0.0.1 |
//! | cycles | [`scheduler`] | `schedule_one` (sampling, Filter, Score, Reserve, Permit), the binding cycle as a value, the run loop |
//! | queue | [`queue`] | activeQ, backoffQ, the unschedulable pool, PreEnqueue gating, events and queueing hints |
//! | built-ins | [`plugins`] | kube-scheduler's default plugins, scheduler-plugins, DRA, GPU sharing and topology; one folder or file each |
//! | contract | [`framework`] | `Status`, `CycleState`, one trait per extension point, `Profile`, `Registry`, `Handle`, `FeatureGates`, the preemption evaluator, metrics |
//! | state | [`snapshot`] | `NodeInfo`, the copy-on-write `Cache` and the per-cycle `Snapshot` |
//! | pure libraries | [`dra`], [`selector`], [`topology`], [`trace`] | the DRA objects and allocator, the CEL device selector language, GPU interconnect graphs, trace loaders |
//! | data | [`model`] | `Quantity`, resources, `Pod`, `Node`, selectors, taints, affinity, the one interner (`Symbol`) |
//!
//! `plugins` sits beside `queue`: both use `framework` and below, neither names the
//! other. The pure libraries name `model`, each other (`dra` compiles selectors) and
//! `framework`'s `Clock` and `FeatureGates`, never a plugin or the scheduler; the one
//! exception is `trace`'s synthetic clusters, built with `testing`'s `NodeBuilder`.
//!
//! How a pod flows: the caller's events (nodes and pods added, updated, deleted) go to
//! the [`snapshot::Cache`] and the [`queue::SchedulingQueue`]; each cycle takes an
//! immutable [`snapshot::Snapshot`] (updated incrementally), pops a pod, and runs the
//! profile's plugins over it: PreFilter (`&mut CycleState`), Filter and Score on every
//! sampled node (`&CycleState`, in parallel when it pays), then Reserve and Permit on
//! the chosen node. The decision is assumed into the cache and handed back as a
//! [`scheduler::BindingCycle`] value that runs PreBind, Bind and PostBind on any
//! thread; a failure anywhere unreserves in reverse order and requeues the pod with its
//! reasons. Plugins never reach back into the cache or the scheduler: what they need
//! comes through the framework's [`framework::Handle`].

/// Plugin latency benches per extension point over synthetic clusters (feature `bench`).
#[cfg(feature = "bench")]
pub mod bench;
/// `KubeSchedulerConfiguration` files: strict decoding, upstream's defaults and validation, profiles built from them.
pub mod config;
/// Dynamic Resource Allocation: resource.k8s.io/v1 objects, the shared store, the structured allocator.
pub mod dra;
#[cfg(feature = "extender")]
pub mod extender;
pub mod framework;
#[cfg(feature = "k8s-openapi")]
pub mod k8s;
#[cfg(feature = "kube")]
pub mod kube;
/// Kubernetes objects as `kubectl get -o yaml` prints them: version checks and conversion, API defaulting, unread fields reported.
pub mod manifest;
#[cfg(feature = "metrics")]
pub mod metrics_server;
pub mod model;
pub mod plugins;
pub mod queue;
mod rng;
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
        PreFilterPlugin, PreFilterResult, PreScorePlugin, Profile, Registry, ReservePlugin, ScorePlugin, SignFragments,
        SignPlugin, Status,
    };
    pub use crate::model::{Node, Pod, Quantity, Resources, Symbol};
    pub use crate::scheduler::{BindingCycle, ScheduleError, Scheduler, TieBreak};
    pub use crate::snapshot::{Cache, NodeInfo, PodInfo, Snapshot};
}

/// The README's examples run as doctests, so the quickstart can't rot.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
