//! GPU topology: interconnect graphs, the precomputed GPU matrix, builders for
//! real machines, an `nvidia-smi topo -m` parser, and the best-subset search.
//!
//! This module is a pure library (no framework types): a Score plugin and the
//! DRA allocator wrap it. The flow is
//!
//! 1. describe a machine as a [`TopologyGraph`](crate::topology::TopologyGraph) (by hand, with a builder from
//!    [`machines`](crate::topology::machines), or parse `nvidia-smi topo -m` with [`parse_topo`](crate::topology::parse_topo));
//! 2. precompute its [`GpuMatrix`](crate::topology::GpuMatrix) once per machine shape
//!    ([`TopologyGraph::matrix`](crate::topology::TopologyGraph::matrix));
//! 3. per request, call [`best_subset`](crate::topology::best_subset) with the free GPUs as a bitmask, and
//!    [`score_against`](crate::topology::score_against) / [`gpu_attributes`](crate::topology::gpu_attributes) for scheduling and DRA.
//!
//! ```
//! use schedkit::topology::{best_subset, machines, GpuSet, SearchOptions};
//!
//! let m = machines::dgx_h100().matrix()?;
//! // GPUs 0 and 5 are busy; place a 4-GPU job with one local NIC per GPU.
//! let free = m.all() & !GpuSet::from_indices([0, 5]).0;
//! let opts = SearchOptions { nic_aligned: true, ..SearchOptions::default() };
//! let p = best_subset(&m, free, 4, &opts)?;
//! assert!(p.exact);
//! assert_eq!(p.gpus.len(), 4);
//! assert_eq!(p.nics.len(), 4);
//! // Every pair is NV18 (450 GB/s per direction); same-socket pairs win the
//! // tie on host closeness, so the set is three GPUs of one socket and one of
//! // the other (lowest indices among equals).
//! assert_eq!(p.objective.min_bandwidth_mbps(), Some(450_000));
//! assert_eq!(p.gpus, GpuSet::from_indices([1, 2, 3, 4]));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Where schedkit goes beyond upstream: Kubernetes has no topology-aware GPU
//! placement in kube-scheduler; NVIDIA's device plugin uses go-gpuallocator's
//! best-effort policy on one node. The search here optimizes an explicit
//! objective (see [`search`](crate::topology::search)) exactly for up to 16 GPUs and with a proven bound
//! beyond.

#![expect(clippy::doc_markdown, reason = "NVLink, PCIe, NVSwitch and NUMA are product names, not code")]

pub mod attributes;
pub mod error;
pub mod graph;
pub mod machines;
pub mod matrix;
pub mod parse;
pub mod search;

pub use attributes::{
    AttributeValue, MAX_SCORE, NUMA_NODE_ATTRIBUTE, PCIE_ROOT_ATTRIBUTE, gpu_attributes, score_against, topology_score,
};
pub use error::{ParseError, ParseErrorKind, TopologyError};
pub use graph::{Edge, Gpu, Nic, Node, NvLinkGen, PcieGen, TopologyGraph};
pub use matrix::{GpuFacts, GpuMatrix, HopClass, HopClassParseError, MAX_GPUS, MAX_NICS, PairLink};
pub use parse::{ParseOptions, ParsedTopo, parse_topo};
pub use search::{GpuSet, Objective, Placement, SearchOptions, best_subset, objective_of};
