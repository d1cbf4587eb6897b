//! Deterministic synthetic clusters of any size (5,000 and 15,000 nodes are the
//! bench sizes): zones, hostnames, a mix of CPU and GPU machine shapes, some taints.

use crate::model::{Node, TaintEffect};
use crate::testing::NodeBuilder;

/// Shape of a synthetic cluster.
#[derive(Debug, Clone)]
pub struct SyntheticCluster {
    /// Number of nodes.
    pub nodes: usize,
    /// Number of zones (`zone-0`..).
    pub zones: usize,
    /// One node in this many has 8 GPUs (0: none).
    pub gpu_every: usize,
    /// One node in this many has a `dedicated=infra:NoSchedule` taint (0: none).
    pub taint_every: usize,
}

impl SyntheticCluster {
    /// `nodes` nodes in 3 zones, every 4th with GPUs, every 10th tainted.
    pub fn new(nodes: usize) -> Self {
        SyntheticCluster { nodes, zones: 3, gpu_every: 4, taint_every: 10 }
    }

    /// Generates the nodes (same input, same nodes).
    pub fn build(&self) -> Vec<Node> {
        (0..self.nodes)
            .map(|i| {
                let big = i % 3 == 0;
                let mut b = NodeBuilder::new(&format!("node-{i:05}"))
                    .cpu(if big { "64" } else { "32" })
                    .memory(if big { "256Gi" } else { "128Gi" })
                    .allocatable("ephemeral-storage", "500Gi")
                    .pods(110)
                    .zone(&format!("zone-{}", i % self.zones.max(1)))
                    .label("topology.kubernetes.io/region", "region-0")
                    .label("kubernetes.io/hostname", &format!("node-{i:05}"))
                    .label("node.kubernetes.io/instance-type", if big { "large" } else { "medium" });
                if self.gpu_every > 0 && i % self.gpu_every == 0 {
                    b = b.gpus(8).label("nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3");
                }
                if self.taint_every > 0 && i % self.taint_every == 5 {
                    b = b.taint("dedicated", "infra", TaintEffect::NoSchedule);
                }
                b.build()
            })
            .collect()
    }
}

/// Shorthand for `SyntheticCluster::new(n).build()`.
///
/// ```
/// let nodes = schedkit::trace::synthetic_nodes(5000);
/// assert_eq!(nodes.len(), 5000);
/// assert_eq!(nodes[0].name(), "node-00000");
/// ```
pub fn synthetic_nodes(n: usize) -> Vec<Node> {
    SyntheticCluster::new(n).build()
}
