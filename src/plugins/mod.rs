//! Built-in plugins, one module each, named as upstream (see [`names`]).

pub mod inter_pod_affinity;
pub mod names;
pub mod pod_topology_spread;
