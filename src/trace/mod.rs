//! Cluster data for examples, tests and benches: synthetic cluster generators, the
//! loader of the `openb` GPU cluster trace, and a replay engine for it.

mod openb;
pub mod replay;
mod synthetic;

pub use openb::{TraceError, TraceNode, TracePod, gpu_capacity_milli, load_nodes, load_pods, parse_nodes, parse_pods};
pub use synthetic::{SyntheticCluster, synthetic_nodes};
