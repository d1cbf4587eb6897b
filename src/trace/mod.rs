//! Cluster data for examples, tests and benches: synthetic cluster generators and the
//! loader of the `openb` GPU cluster trace. Data only: replaying a trace through the
//! scheduler is [`crate::sim`].

mod openb;
/// Deprecated: moved to [`crate::sim`] (each item here is a deprecated alias).
pub mod replay;
mod synthetic;

pub use openb::{TraceError, TraceNode, TracePod, gpu_capacity_milli, load_nodes, load_pods, parse_nodes, parse_pods};
pub use synthetic::{SyntheticCluster, synthetic_nodes};
