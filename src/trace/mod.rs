//! Cluster data for examples, tests and benches: synthetic cluster generators (and,
//! later, loaders for real traces).

mod synthetic;

pub use synthetic::{SyntheticCluster, synthetic_nodes};
