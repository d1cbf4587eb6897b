//! The interconnect graph of one machine (or one multi-host NVLink domain).
//!
//! Nodes are GPUs, NVSwitches, PCIe switches, PCIe host bridges, CPU/NUMA nodes
//! and NICs; edges are NVLink bundles, PCIe links, inter-socket links and
//! NVLink-C2C. The graph is the source of truth a builder or a user writes; the
//! search never walks it — it reads the [`GpuMatrix`](super::GpuMatrix) that
//! [`TopologyGraph::matrix`] precomputes from it once per machine shape.
//!
//! Direction carries meaning for the host fabric only: a [`Edge::Pcie`] or
//! [`Edge::C2c`] edge points from the upstream side (CPU, host bridge, switch)
//! to the downstream device, so each device's chain to its CPU is unambiguous.
//! NVLink and inter-socket edges are symmetric; their direction is ignored.

use petgraph::stable_graph::{NodeIndex, StableDiGraph};

/// NVLink generation; fixes the per-link bandwidth.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NvLinkGen {
    /// NVLink 1 (P100): 20 GB/s per link per direction.
    V1,
    /// NVLink 2 (V100): 25 GB/s per link per direction.
    V2,
    /// NVLink 3 (A100): 25 GB/s per link per direction.
    V3,
    /// NVLink 4 (H100/H200): 25 GB/s per link per direction.
    V4,
    /// NVLink 5 (B200/GB200): 50 GB/s per link per direction.
    V5,
}

impl NvLinkGen {
    /// Bandwidth of one link in one direction, in MB/s (10^6 bytes per second).
    ///
    /// Figures from NVIDIA's NVLink pages and DGX/HGX whitepapers: a V100 has 6
    /// links for 300 GB/s bidirectional, an A100 12 for 600 GB/s, an H100 18 for
    /// 900 GB/s, a Blackwell GPU 18 for 1.8 TB/s.
    pub const fn link_mbps(self) -> u32 {
        match self {
            Self::V1 => 20_000,
            Self::V2 | Self::V3 | Self::V4 => 25_000,
            Self::V5 => 50_000,
        }
    }
}

/// PCI Express generation; fixes the per-lane bandwidth.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PcieGen {
    /// 8 GT/s, 128b/130b: about 985 MB/s per lane per direction.
    Gen3,
    /// 16 GT/s: about 1969 MB/s per lane per direction.
    Gen4,
    /// 32 GT/s: about 3938 MB/s per lane per direction.
    Gen5,
    /// 64 GT/s (FLIT mode): about 7563 MB/s per lane per direction.
    Gen6,
}

impl PcieGen {
    /// Usable bandwidth of one lane in one direction, in MB/s, after line coding.
    pub const fn lane_mbps(self) -> u32 {
        match self {
            Self::Gen3 => 985,
            Self::Gen4 => 1969,
            Self::Gen5 => 3938,
            Self::Gen6 => 7563,
        }
    }
}

/// A GPU and the facts a scheduler or a DRA driver wants about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gpu {
    /// Index on its machine/domain, `0..n`; bit `index` of a [`GpuSet`](super::GpuSet).
    pub index: u32,
    /// A UUID-like id, unique in the graph.
    pub id: String,
    /// Product name, e.g. `NVIDIA H100 80GB HBM3`.
    pub model: String,
    /// Memory in MiB.
    pub memory_mib: u64,
    /// NUMA node the GPU is attached to.
    pub numa_node: u32,
    /// Name of the PCIe root (host bridge / root complex) above the GPU, e.g. `pci0000:00`.
    pub pcie_root: String,
    /// Host (OS instance / tray) the GPU belongs to; 0 for single-host machines.
    pub host: u32,
}

/// A network adapter (one RDMA device as `nvidia-smi` lists it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Nic {
    /// Name as the OS shows it, e.g. `mlx5_0`.
    pub name: String,
    /// NUMA node the NIC is attached to.
    pub numa_node: u32,
    /// Host the NIC belongs to.
    pub host: u32,
}

/// A node of the interconnect graph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    /// A GPU.
    Gpu(Gpu),
    /// An NVSwitch chip; GPUs linked to the same switches talk through it.
    NvSwitch {
        /// Free-form id, for debugging and DOT output.
        id: u32,
    },
    /// A PCIe switch (bridge) below a host bridge.
    PcieSwitch {
        /// Free-form id.
        id: u32,
    },
    /// A PCIe host bridge (root complex / root port) inside a CPU.
    HostBridge {
        /// Name used as the `pcieRoot` of the devices below it.
        name: String,
    },
    /// One NUMA node of a CPU socket (a socket with NPS4 is four of these).
    Cpu {
        /// Socket number.
        socket: u32,
        /// NUMA node id.
        numa_node: u32,
        /// Host (OS instance) this CPU belongs to.
        host: u32,
    },
    /// A NIC.
    Nic(Nic),
}

/// An edge of the interconnect graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Edge {
    /// A bonded set of NVLinks between a GPU and a GPU or NVSwitch.
    NvLink {
        /// Generation (per-link bandwidth).
        generation: NvLinkGen,
        /// Number of links in the bundle.
        links: u8,
    },
    /// A PCIe link, from the upstream side to the downstream device.
    Pcie {
        /// Generation.
        generation: PcieGen,
        /// Lane count (x16 = 16).
        width: u8,
    },
    /// A socket-to-socket / NUMA-to-NUMA link (UPI, xGMI, Infinity Fabric).
    InterSocket {
        /// Bandwidth per direction in MB/s.
        mbps: u32,
    },
    /// NVLink-C2C between a Grace CPU and a GPU, from the CPU to the GPU.
    C2c {
        /// Bandwidth per direction in MB/s.
        mbps: u32,
    },
}

impl Edge {
    /// Bandwidth of the edge per direction in MB/s.
    pub const fn mbps(self) -> u32 {
        match self {
            Self::NvLink { generation, links } => generation.link_mbps() * links as u32,
            Self::Pcie { generation, width } => generation.lane_mbps() * width as u32,
            Self::InterSocket { mbps } | Self::C2c { mbps } => mbps,
        }
    }
}

/// The interconnect graph of a machine, on petgraph's `StableDiGraph`.
///
/// ```
/// use schedkit::topology::{Edge, HopClass, NvLinkGen, PcieGen, TopologyGraph};
/// let mut g = TopologyGraph::new("two-gpu box");
/// let cpu = g.add_cpu(0, 0, 0);
/// let hb = g.add_host_bridge("pci0000:00", cpu, PcieGen::Gen4, 16);
/// let a = g.add_gpu(0, "GPU-a", "L4", 24_576, hb, PcieGen::Gen4, 16);
/// let b = g.add_gpu(1, "GPU-b", "L4", 24_576, hb, PcieGen::Gen4, 16);
/// g.link(a, b, Edge::NvLink { generation: NvLinkGen::V3, links: 4 });
/// let m = g.matrix().unwrap();
/// assert_eq!(m.class(0, 1), Some(HopClass::NvLink(4)));
/// ```
#[derive(Debug, Clone, Default)]
pub struct TopologyGraph {
    name: String,
    graph: StableDiGraph<Node, Edge>,
    /// The first node index passed in that this graph does not hold; reported by
    /// [`TopologyGraph::matrix`] so that building never panics.
    unknown_node: Option<usize>,
}

impl TopologyGraph {
    /// An empty graph with a name (the machine shape, e.g. `DGX H100`).
    pub fn new(name: impl Into<String>) -> Self {
        Self { name: name.into(), graph: StableDiGraph::new(), unknown_node: None }
    }

    /// The name given at construction.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The underlying petgraph graph, for traversal, DOT export or custom analyses.
    pub fn graph(&self) -> &StableDiGraph<Node, Edge> {
        &self.graph
    }

    /// Adds any node.
    pub fn add_node(&mut self, node: Node) -> NodeIndex {
        self.graph.add_node(node)
    }

    /// Adds an edge. For [`Edge::Pcie`] and [`Edge::C2c`], `from` is the upstream side.
    ///
    /// An index this graph does not hold is not added; [`TopologyGraph::matrix`]
    /// then fails with [`TopologyError::UnknownNode`](super::TopologyError::UnknownNode).
    pub fn link(&mut self, from: NodeIndex, to: NodeIndex, edge: Edge) {
        for n in [from, to] {
            if !self.graph.contains_node(n) {
                self.unknown_node.get_or_insert(n.index());
                return;
            }
        }
        self.graph.add_edge(from, to, edge);
    }

    /// The first unknown node index passed to a builder method, if any.
    pub(crate) fn unknown_node(&self) -> Option<usize> {
        self.unknown_node
    }

    /// Adds a CPU/NUMA node.
    pub fn add_cpu(&mut self, socket: u32, numa_node: u32, host: u32) -> NodeIndex {
        self.graph.add_node(Node::Cpu { socket, numa_node, host })
    }

    /// Adds a PCIe host bridge under `cpu`, linked with the given root port.
    pub fn add_host_bridge(
        &mut self,
        name: impl Into<String>,
        cpu: NodeIndex,
        generation: PcieGen,
        width: u8,
    ) -> NodeIndex {
        let hb = self.graph.add_node(Node::HostBridge { name: name.into() });
        self.link(cpu, hb, Edge::Pcie { generation, width });
        hb
    }

    /// Adds a PCIe switch under `parent` (a host bridge or another switch).
    pub fn add_pcie_switch(&mut self, id: u32, parent: NodeIndex, generation: PcieGen, width: u8) -> NodeIndex {
        let sw = self.graph.add_node(Node::PcieSwitch { id });
        self.link(parent, sw, Edge::Pcie { generation, width });
        sw
    }

    /// Adds an NVSwitch chip (link GPUs to it with [`TopologyGraph::link`]).
    pub fn add_nvswitch(&mut self, id: u32) -> NodeIndex {
        self.graph.add_node(Node::NvSwitch { id })
    }

    /// Adds a GPU under a PCIe parent. The GPU's NUMA node, host and PCIe root
    /// are filled in from its upstream chain when the matrix is built.
    #[expect(clippy::too_many_arguments, reason = "a GPU's facts plus its PCIe link")]
    pub fn add_gpu(
        &mut self,
        index: u32,
        id: impl Into<String>,
        model: impl Into<String>,
        memory_mib: u64,
        parent: NodeIndex,
        generation: PcieGen,
        width: u8,
    ) -> NodeIndex {
        let gpu = self.add_detached_gpu(index, id, model, memory_mib);
        self.link(parent, gpu, Edge::Pcie { generation, width });
        gpu
    }

    /// Adds a GPU without a host link (attach it with [`Edge::C2c`] or [`Edge::Pcie`]).
    pub fn add_detached_gpu(
        &mut self,
        index: u32,
        id: impl Into<String>,
        model: impl Into<String>,
        memory_mib: u64,
    ) -> NodeIndex {
        self.graph.add_node(Node::Gpu(Gpu {
            index,
            id: id.into(),
            model: model.into(),
            memory_mib,
            numa_node: 0,
            pcie_root: String::new(),
            host: 0,
        }))
    }

    /// Adds a NIC under a PCIe parent.
    pub fn add_nic(&mut self, name: impl Into<String>, parent: NodeIndex, generation: PcieGen, width: u8) -> NodeIndex {
        let nic = self.graph.add_node(Node::Nic(Nic { name: name.into(), numa_node: 0, host: 0 }));
        self.link(parent, nic, Edge::Pcie { generation, width });
        nic
    }
}
