//! Beyond upstream: a node's NodeResourceTopology derived from a schedkit
//! [`TopologyGraph`], so a simulated cluster gets
//! realistic NUMA zones (GPUs, NICs, CPUs and memory per NUMA node) without
//! hand-written objects.

use std::collections::BTreeMap;

use super::api::{
    ATTRIBUTE_POLICY, ATTRIBUTE_SCOPE, AttributeInfo, CostInfo, NodeResourceTopology, ResourceInfo, Zone,
};
use crate::model::Quantity;
use crate::topology::{Node, TopologyGraph};

/// What the graph doesn't say, and how to name things.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeriveOptions {
    /// Whole CPUs of the machine, split evenly over its NUMA nodes (remainder to the
    /// lowest ids).
    pub cpus: i64,
    /// Memory of the machine in bytes, split the same way.
    pub memory_bytes: i64,
    /// The GPU resource name (default `nvidia.com/gpu`).
    pub gpu_resource: String,
    /// The NIC resource name, if NICs are a resource (default `rdma/hca`).
    pub nic_resource: Option<String>,
    /// Topology Manager policy attribute (default `single-numa-node`).
    pub policy: String,
    /// Topology Manager scope attribute (default `container`).
    pub scope: String,
    /// Distance to the own NUMA node (SLIT: 10).
    pub local_distance: i64,
    /// Distance to another NUMA node (SLIT on two-socket servers: 21).
    pub remote_distance: i64,
}

impl Default for DeriveOptions {
    fn default() -> Self {
        DeriveOptions {
            cpus: 224,
            memory_bytes: 2 * 1024 * 1024 * 1024 * 1024,
            gpu_resource: "nvidia.com/gpu".into(),
            nic_resource: Some("rdma/hca".into()),
            policy: "single-numa-node".into(),
            scope: "container".into(),
            local_distance: 10,
            remote_distance: 21,
        }
    }
}

/// The NodeResourceTopology of node `node` built as `graph`: one `Node` zone per NUMA
/// node of the graph's CPUs (host 0), with `cpu`, `memory`, the GPUs and the NICs
/// attached there, all fully available; costs local/remote as the options say.
///
/// ```
/// use schedkit::plugins::node_resource_topology::derive::{nrt_from_graph, DeriveOptions};
/// use schedkit::topology::machines;
/// let nrt = nrt_from_graph("dgx-0", &machines::dgx_h100(), &DeriveOptions::default());
/// assert_eq!(nrt.zones.len(), 2);
/// let gpus = nrt.zones[0].resources.iter().find(|r| r.name == "nvidia.com/gpu").unwrap();
/// assert_eq!(gpus.available.value(), 4);
/// let gpus = nrt.zones[1].resources.iter().find(|r| r.name == "nvidia.com/gpu").unwrap();
/// assert_eq!(gpus.available.value(), 4);
/// ```
pub fn nrt_from_graph(node: &str, graph: &TopologyGraph, opts: &DeriveOptions) -> NodeResourceTopology {
    // NUMA id -> (gpus, nics). The NUMA node of a GPU or NIC is where its PCIe path
    // meets a CPU: the matrix resolves it; the graph's own fields are the fallback.
    let mut numa: BTreeMap<u32, (i64, i64)> = BTreeMap::new();
    let g = graph.graph();
    for n in g.node_indices().map(|i| &g[i]) {
        if let Node::Cpu { numa_node, host: 0, .. } = n {
            numa.entry(*numa_node).or_default();
        }
    }
    if let Ok(m) = graph.matrix() {
        for f in m.gpus().iter().filter(|f| f.gpu.host == 0) {
            numa.entry(f.gpu.numa_node).or_default().0 += 1;
        }
        for nic in m.nics().iter().filter(|n| n.host == 0) {
            numa.entry(nic.numa_node).or_default().1 += 1;
        }
    } else {
        for n in g.node_indices().map(|i| &g[i]) {
            match n {
                Node::Gpu(gpu) if gpu.host == 0 => numa.entry(gpu.numa_node).or_default().0 += 1,
                Node::Nic(nic) if nic.host == 0 => numa.entry(nic.numa_node).or_default().1 += 1,
                _ => {}
            }
        }
    }
    let count = i64::try_from(numa.len().max(1)).unwrap_or(1);
    let ids: Vec<u32> = numa.keys().copied().collect();
    let share = |total: i64, i: usize| {
        let i = i64::try_from(i).unwrap_or(0);
        total / count + i64::from(i < total % count)
    };
    let res =
        |name: &str, q: Quantity| ResourceInfo { name: name.to_owned(), capacity: q, allocatable: q, available: q };
    let mut out = NodeResourceTopology::new(node);
    out.attributes = vec![
        AttributeInfo { name: ATTRIBUTE_POLICY.into(), value: opts.policy.clone() },
        AttributeInfo { name: ATTRIBUTE_SCOPE.into(), value: opts.scope.clone() },
    ];
    for (i, (&id, &(gpus, nics))) in numa.iter().enumerate() {
        let mut resources = vec![
            res("cpu", Quantity::from_int(share(opts.cpus, i))),
            res("memory", Quantity::from_bytes(share(opts.memory_bytes, i))),
        ];
        if gpus > 0 {
            resources.push(res(&opts.gpu_resource, Quantity::from_int(gpus)));
        }
        if let Some(nic) = &opts.nic_resource
            && nics > 0
        {
            resources.push(res(nic, Quantity::from_int(nics)));
        }
        let costs = ids
            .iter()
            .map(|&j| CostInfo {
                name: format!("node-{j}"),
                value: if j == id { opts.local_distance } else { opts.remote_distance },
            })
            .collect();
        out.zones.push(Zone {
            name: format!("node-{id}"),
            zone_type: "Node".into(),
            parent: String::new(),
            costs,
            attributes: Vec::new(),
            resources,
        });
    }
    out
}
