//! The precomputed GPU-to-GPU matrix: bottleneck bandwidth and hop class of
//! every pair, GPU-to-NIC affinity, and the pair weights the search reads.

use core::fmt;
use core::str::FromStr;

use petgraph::Direction;
use petgraph::stable_graph::NodeIndex;
use petgraph::visit::{EdgeRef, IntoEdgeReferences};

use super::error::TopologyError;
use super::graph::{Edge, Gpu, Nic, Node, TopologyGraph};

/// Most GPUs one matrix (and one search mask) can hold.
pub const MAX_GPUS: usize = 128;
/// Most NICs one matrix can hold.
pub const MAX_NICS: usize = 128;

/// How two devices are connected, in the categories `nvidia-smi topo -m` prints.
///
/// Ordered from closest to farthest: `X < NV# (more links first) < PIX < PXB
/// < PHB < NODE < SYS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HopClass {
    /// The device itself (`X`).
    SelfLink,
    /// A bonded set of this many NVLinks, directly or through NVSwitches (`NV#`).
    NvLink(u8),
    /// At most one PCIe bridge between them (`PIX`).
    Pix,
    /// Several PCIe bridges, no host bridge (`PXB`).
    Pxb,
    /// Through a PCIe host bridge, typically the CPU (`PHB`).
    Phb,
    /// Between host bridges inside one NUMA node (`NODE`).
    Node,
    /// Across the SMP interconnect between NUMA nodes, QPI/UPI/xGMI (`SYS`).
    Sys,
}

impl HopClass {
    /// Closeness of a host (non-NVLink) path: PIX 5, PXB 4, PHB 3, NODE 2, SYS 1;
    /// 0 for NVLink and self. Used as the low bits of a pair weight.
    pub const fn host_closeness(self) -> u8 {
        match self {
            Self::Pix => 5,
            Self::Pxb => 4,
            Self::Phb => 3,
            Self::Node => 2,
            Self::Sys => 1,
            Self::SelfLink | Self::NvLink(_) => 0,
        }
    }

    /// Whether a NIC at this class from a GPU counts as local for GPUDirect RDMA
    /// (behind the same PCIe switch tree, not through a host bridge).
    pub const fn is_pcie_local(self) -> bool {
        matches!(self, Self::Pix | Self::Pxb)
    }
}

impl fmt::Display for HopClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::SelfLink => f.write_str("X"),
            Self::NvLink(n) => write!(f, "NV{n}"),
            Self::Pix => f.write_str("PIX"),
            Self::Pxb => f.write_str("PXB"),
            Self::Phb => f.write_str("PHB"),
            Self::Node => f.write_str("NODE"),
            Self::Sys => f.write_str("SYS"),
        }
    }
}

/// The text is not a hop class.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a topo link class: {0:?}")]
pub struct HopClassParseError(pub String);

impl FromStr for HopClass {
    type Err = HopClassParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "X" => Ok(Self::SelfLink),
            "PIX" => Ok(Self::Pix),
            "PXB" => Ok(Self::Pxb),
            "PHB" => Ok(Self::Phb),
            "NODE" => Ok(Self::Node),
            // `SOC` is what older drivers printed for the same thing.
            "SYS" | "SOC" => Ok(Self::Sys),
            _ => s
                .strip_prefix("NV")
                .and_then(|n| n.parse::<u8>().ok())
                .filter(|n| *n > 0)
                .map(Self::NvLink)
                .ok_or_else(|| HopClassParseError(s.to_owned())),
        }
    }
}

/// What the matrix knows about one GPU pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PairLink {
    /// Bandwidth per direction in MB/s: the NVLink bandwidth if the pair has any
    /// NVLink (direct links plus, for each shared NVSwitch, the smaller of the two
    /// GPUs' bundles to it), else the bottleneck of the host (PCIe/CPU) path.
    pub bandwidth_mbps: u32,
    /// The class `nvidia-smi topo -m` would print for the pair.
    pub class: HopClass,
    /// The class of the host path alone, `None` for GPUs on different hosts.
    pub host: Option<HopClass>,
}

impl PairLink {
    /// The search weight: bandwidth in the high bits, host closeness in the low
    /// 16, so that comparing weights compares bandwidth first and, between equal
    /// bandwidths, prefers the closer host path (same switch over same socket
    /// over cross-socket). Sums of up to 8128 pairs (128 GPUs) stay exact in both
    /// parts, since closeness is at most 5.
    pub const fn weight(self) -> u64 {
        let closeness = match self.host {
            Some(h) => h.host_closeness() as u64,
            None => 0,
        };
        ((self.bandwidth_mbps as u64) << 16) | closeness
    }
}

/// Per-GPU facts carried by the matrix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuFacts {
    /// The GPU as declared.
    pub gpu: Gpu,
    /// NVLink domain: GPUs that reach each other over NVLink share it; `None`
    /// when the GPU has no NVLink.
    pub nvlink_domain: Option<u32>,
    /// Clique id: set when every pair in the GPU's NVLink domain is directly
    /// connected (through NVSwitches or links); equals the domain id then.
    pub nvlink_clique: Option<u32>,
}

/// The precomputed matrix of a machine: everything the search reads.
#[derive(Debug, Clone)]
pub struct GpuMatrix {
    name: String,
    gpus: Vec<GpuFacts>,
    nics: Vec<Nic>,
    pairs: Vec<PairLink>,
    weights: Vec<u64>,
    nic_class: Vec<Option<HopClass>>,
    nic_local: Vec<u128>,
}

impl GpuMatrix {
    /// Assembles a matrix from its parts, checking sizes; used by the graph
    /// builder and the topo parser.
    pub(crate) fn assemble(
        name: String,
        gpus: Vec<Gpu>,
        nics: Vec<Nic>,
        pairs: Vec<PairLink>,
        nic_class: Vec<Option<HopClass>>,
    ) -> Result<Self, TopologyError> {
        let n = gpus.len();
        if n == 0 {
            return Err(TopologyError::NoGpus);
        }
        if n > MAX_GPUS {
            return Err(TopologyError::TooManyGpus { count: n, max: MAX_GPUS });
        }
        if nics.len() > MAX_NICS {
            return Err(TopologyError::TooManyNics { count: nics.len() });
        }
        debug_assert_eq!(pairs.len(), n * n);
        debug_assert_eq!(nic_class.len(), n * nics.len());
        let gpus = nvlink_domains(gpus, &pairs);
        let weights = pairs.iter().map(|p| p.weight()).collect();
        let nic_local = (0..n)
            .map(|g| {
                let mut mask = 0u128;
                for (j, c) in nic_class[g * nics.len()..(g + 1) * nics.len()].iter().enumerate() {
                    if c.is_some_and(HopClass::is_pcie_local) {
                        mask |= 1 << j;
                    }
                }
                mask
            })
            .collect();
        Ok(Self { name, gpus, nics, pairs, weights, nic_class, nic_local })
    }

    /// The machine shape's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Number of GPUs.
    pub fn len(&self) -> usize {
        self.gpus.len()
    }

    /// Always false: a matrix has at least one GPU.
    pub fn is_empty(&self) -> bool {
        self.gpus.is_empty()
    }

    /// Mask with every GPU set.
    pub fn all(&self) -> u128 {
        if self.gpus.len() == MAX_GPUS { u128::MAX } else { (1u128 << self.gpus.len()) - 1 }
    }

    /// Facts about GPU `i`, `None` if out of range.
    pub fn gpu(&self, i: usize) -> Option<&GpuFacts> {
        self.gpus.get(i)
    }

    /// All GPUs in index order.
    pub fn gpus(&self) -> &[GpuFacts] {
        &self.gpus
    }

    /// The NICs, in column order.
    pub fn nics(&self) -> &[Nic] {
        &self.nics
    }

    /// The link between GPUs `a` and `b` (self for `a == b`), `None` if either
    /// index is out of range.
    pub fn pair(&self, a: usize, b: usize) -> Option<PairLink> {
        let n = self.gpus.len();
        (a < n && b < n).then(|| self.pairs[a * n + b])
    }

    /// The `nvidia-smi` class of the pair (see [`GpuMatrix::pair`]).
    pub fn class(&self, a: usize, b: usize) -> Option<HopClass> {
        self.pair(a, b).map(|p| p.class)
    }

    /// Bottleneck bandwidth of the pair in MB/s per direction.
    pub fn bandwidth_mbps(&self, a: usize, b: usize) -> Option<u32> {
        self.pair(a, b).map(|p| p.bandwidth_mbps)
    }

    /// The search weight of the pair (see [`PairLink::weight`]).
    #[inline]
    pub(crate) fn weight(&self, a: usize, b: usize) -> u64 {
        self.weights[a * self.gpus.len() + b]
    }

    /// Row of weights for GPU `a`.
    #[inline]
    pub(crate) fn weight_row(&self, a: usize) -> &[u64] {
        let n = self.gpus.len();
        &self.weights[a * n..(a + 1) * n]
    }

    /// The class between GPU `g` and NIC `nic`; `None` if they are on different
    /// hosts or an index is out of range.
    pub fn nic_class(&self, g: usize, nic: usize) -> Option<HopClass> {
        if g >= self.gpus.len() || nic >= self.nics.len() {
            return None;
        }
        self.nic_class[g * self.nics.len() + nic]
    }

    /// Mask of the NICs local to GPU `g` for GPUDirect RDMA (PIX or PXB); empty
    /// if `g` is out of range.
    pub fn local_nics(&self, g: usize) -> u128 {
        self.nic_local.get(g).copied().unwrap_or(0)
    }

    /// The closest NIC to GPU `g` (lowest class, then lowest column), if any.
    pub fn nearest_nic(&self, g: usize) -> Option<(usize, HopClass)> {
        let row = self.nic_class.get(g * self.nics.len()..(g + 1) * self.nics.len())?;
        row.iter().enumerate().filter_map(|(j, c)| c.map(|c| (j, c))).min_by_key(|(j, c)| (nic_rank(*c), *j))
    }

    /// Renders the GPU and NIC part of the matrix the way `nvidia-smi topo -m` does
    /// (tab separated, with NUMA affinity), so it can be parsed back.
    pub fn to_topo_string(&self) -> String {
        use fmt::Write as _;
        let n = self.gpus.len();
        let mut s = String::new();
        for i in 0..n {
            let _ = write!(s, "\tGPU{i}");
        }
        for j in 0..self.nics.len() {
            let _ = write!(s, "\tNIC{j}");
        }
        s.push_str("\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n");
        for i in 0..n {
            let _ = write!(s, "GPU{i}");
            for j in 0..n {
                let _ = write!(s, "\t{}", self.pairs[i * n + j].class);
            }
            for j in 0..self.nics.len() {
                let c = self.nic_class(i, j).unwrap_or(HopClass::Sys);
                let _ = write!(s, "\t{c}");
            }
            let _ = writeln!(s, "\tN/A\t{}\tN/A", self.gpus[i].gpu.numa_node);
        }
        for a in 0..self.nics.len() {
            let _ = write!(s, "NIC{a}");
            for i in 0..n {
                let c = self.nic_class(i, a).unwrap_or(HopClass::Sys);
                let _ = write!(s, "\t{c}");
            }
            for b in 0..self.nics.len() {
                let c = if a == b { HopClass::SelfLink } else { HopClass::Sys };
                let _ = write!(s, "\t{c}");
            }
            s.push('\n');
        }
        if !self.nics.is_empty() {
            s.push_str("\nNIC Legend:\n\n");
            for (j, nic) in self.nics.iter().enumerate() {
                let _ = writeln!(s, "  NIC{j}: {}", nic.name);
            }
        }
        s
    }
}

/// Fills in NVLink domains (components of the NVLink relation) and cliques
/// (domains where every pair has NVLink).
fn nvlink_domains(gpus: Vec<Gpu>, pairs: &[PairLink]) -> Vec<GpuFacts> {
    let count = gpus.len();
    let nv = |a: usize, b: usize| matches!(pairs[a * count + b].class, HopClass::NvLink(_));
    let mut domain: Vec<Option<u32>> = vec![None; count];
    let mut next = 0u32;
    for i in 0..count {
        if domain[i].is_some() || !(0..count).any(|j| nv(i, j)) {
            continue;
        }
        domain[i] = Some(next);
        let mut stack = vec![i];
        while let Some(x) = stack.pop() {
            for (y, d) in domain.iter_mut().enumerate() {
                if d.is_none() && nv(x, y) {
                    *d = Some(next);
                    stack.push(y);
                }
            }
        }
        next += 1;
    }
    let clique: Vec<bool> = (0..next)
        .map(|d| {
            let members: Vec<usize> = (0..count).filter(|&x| domain[x] == Some(d)).collect();
            members.iter().all(|&a| members.iter().all(|&b| a == b || nv(a, b)))
        })
        .collect();
    gpus.into_iter()
        .zip(domain)
        .map(|(gpu, d)| GpuFacts { gpu, nvlink_domain: d, nvlink_clique: d.filter(|d| clique[*d as usize]) })
        .collect()
}

const fn nic_rank(c: HopClass) -> u8 {
    match c {
        HopClass::SelfLink => 0,
        HopClass::NvLink(_) => 1,
        HopClass::Pix => 2,
        HopClass::Pxb => 3,
        HopClass::Phb => 4,
        HopClass::Node => 5,
        HopClass::Sys => 6,
    }
}

/// A device's chain up the host fabric to its CPU.
#[derive(Debug, Clone, Default)]
struct Chain {
    /// Ancestors from the direct parent up to the CPU (inclusive).
    nodes: Vec<NodeIndex>,
    /// `min_bw[i]`: the narrowest edge between the device and `nodes[i]`.
    min_bw: Vec<u32>,
}

impl Chain {
    fn cpu(&self) -> Option<NodeIndex> {
        self.nodes.last().copied()
    }
}

fn node_label(g: &TopologyGraph, n: NodeIndex) -> String {
    match g.graph().node_weight(n) {
        Some(Node::Gpu(gpu)) => format!("GPU{}", gpu.index),
        Some(Node::Nic(nic)) => nic.name.clone(),
        Some(Node::PcieSwitch { id }) => format!("pcie-switch-{id}"),
        Some(Node::NvSwitch { id }) => format!("nvswitch-{id}"),
        Some(Node::HostBridge { name }) => name.clone(),
        Some(Node::Cpu { numa_node, .. }) => format!("numa{numa_node}"),
        None => format!("node{}", n.index()),
    }
}

fn chain_of(g: &TopologyGraph, dev: NodeIndex) -> Result<Chain, TopologyError> {
    let graph = g.graph();
    let mut chain = Chain::default();
    let mut cur = dev;
    let mut narrow = u32::MAX;
    // A tree deeper than the node count would be a cycle.
    for _ in 0..=graph.node_count() {
        let mut ups = graph
            .edges_directed(cur, Direction::Incoming)
            .filter(|e| matches!(e.weight(), Edge::Pcie { .. } | Edge::C2c { .. }));
        let Some(up) = ups.next() else {
            return if chain.nodes.is_empty() {
                Ok(chain)
            } else {
                Err(TopologyError::DanglingPcie { node: node_label(g, dev) })
            };
        };
        if ups.next().is_some() {
            return Err(TopologyError::PcieNotATree { node: node_label(g, cur) });
        }
        narrow = narrow.min(up.weight().mbps());
        cur = up.source();
        chain.nodes.push(cur);
        chain.min_bw.push(narrow);
        if matches!(graph.node_weight(cur), Some(Node::Cpu { .. })) {
            return Ok(chain);
        }
    }
    Err(TopologyError::PcieNotATree { node: node_label(g, dev) })
}

/// The host-path class and bottleneck between two devices, given their chains.
fn host_path(
    g: &TopologyGraph,
    a: &Chain,
    b: &Chain,
    cpu_bw: &dyn Fn(NodeIndex, NodeIndex) -> u32,
) -> Option<(HopClass, u32)> {
    let graph = g.graph();
    for (ia, na) in a.nodes.iter().enumerate() {
        if let Some(ib) = b.nodes.iter().position(|nb| nb == na) {
            let bw = a.min_bw[ia].min(b.min_bw[ib]);
            let class = match graph.node_weight(*na) {
                Some(Node::PcieSwitch { .. }) if ia == 0 && ib == 0 => HopClass::Pix,
                Some(Node::PcieSwitch { .. }) => HopClass::Pxb,
                Some(Node::HostBridge { .. }) => HopClass::Phb,
                _ => HopClass::Node,
            };
            return Some((class, bw));
        }
    }
    let (ca, cb) = (a.cpu()?, b.cpu()?);
    let link = cpu_bw(ca, cb);
    if link == 0 {
        return None;
    }
    let bw = a.min_bw.last()?.min(b.min_bw.last()?).min(&link);
    Some((HopClass::Sys, *bw))
}

impl TopologyGraph {
    /// Precomputes the GPU matrix: per pair the NVLink or host-path bandwidth and
    /// class, per GPU its NUMA node, PCIe root, host, NVLink domain and clique, and
    /// the GPU-to-NIC classes. Done once per machine shape.
    #[expect(clippy::too_many_lines, reason = "one pass: index the graph, then fill the pair and NIC tables")]
    pub fn matrix(&self) -> Result<GpuMatrix, TopologyError> {
        if let Some(index) = self.unknown_node() {
            return Err(TopologyError::UnknownNode { index });
        }
        let graph = self.graph();
        let mut gpu_nodes: Vec<(u32, NodeIndex)> = Vec::new();
        let mut nic_nodes: Vec<NodeIndex> = Vec::new();
        let mut cpus: Vec<NodeIndex> = Vec::new();
        let mut switches: Vec<NodeIndex> = Vec::new();
        for n in graph.node_indices() {
            match graph.node_weight(n) {
                Some(Node::Gpu(gpu)) => gpu_nodes.push((gpu.index, n)),
                Some(Node::Nic(_)) => nic_nodes.push(n),
                Some(Node::Cpu { .. }) => cpus.push(n),
                Some(Node::NvSwitch { .. }) => switches.push(n),
                _ => {}
            }
        }
        let count = gpu_nodes.len();
        if count == 0 {
            return Err(TopologyError::NoGpus);
        }
        if count > MAX_GPUS {
            return Err(TopologyError::TooManyGpus { count, max: MAX_GPUS });
        }
        if nic_nodes.len() > MAX_NICS {
            return Err(TopologyError::TooManyNics { count: nic_nodes.len() });
        }
        gpu_nodes.sort_unstable_by_key(|(i, _)| *i);
        if let Some(w) = gpu_nodes.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(TopologyError::DuplicateGpuIndex { index: w[0].0 });
        }
        if let Some(&(index, _)) = gpu_nodes.iter().find(|(i, _)| *i as usize >= count) {
            return Err(TopologyError::GpuIndexGap { index, count });
        }
        let mut ids: Vec<&str> = gpu_nodes
            .iter()
            .filter_map(|(_, n)| match graph.node_weight(*n) {
                Some(Node::Gpu(g)) => Some(g.id.as_str()),
                _ => None,
            })
            .collect();
        ids.sort_unstable();
        if let Some(w) = ids.windows(2).find(|w| w[0] == w[1]) {
            return Err(TopologyError::DuplicateGpuId { id: w[0].to_owned() });
        }

        // Widest path between CPU/NUMA nodes of one host over inter-socket links.
        let ncpu = cpus.len();
        let mut cpu_w = vec![0u32; ncpu * ncpu];
        for (i, &ci) in cpus.iter().enumerate() {
            cpu_w[i * ncpu + i] = u32::MAX;
            for e in graph.edges_directed(ci, Direction::Outgoing) {
                if let Edge::InterSocket { mbps } = e.weight()
                    && let Some(j) = cpus.iter().position(|&x| x == e.target())
                {
                    // (built before the dense lookup; the CPU count is small)
                    cpu_w[i * ncpu + j] = cpu_w[i * ncpu + j].max(*mbps);
                    cpu_w[j * ncpu + i] = cpu_w[j * ncpu + i].max(*mbps);
                }
            }
        }
        for k in 0..ncpu {
            for i in 0..ncpu {
                for j in 0..ncpu {
                    let via = cpu_w[i * ncpu + k].min(cpu_w[k * ncpu + j]);
                    if via > cpu_w[i * ncpu + j] {
                        cpu_w[i * ncpu + j] = via;
                    }
                }
            }
        }
        // Dense lookups from node index to position, instead of linear scans.
        let bound = graph.node_indices().map(NodeIndex::index).max().unwrap_or(0) + 1;
        let mut cpu_at = vec![usize::MAX; bound];
        for (i, n) in cpus.iter().enumerate() {
            cpu_at[n.index()] = i;
        }
        let mut gpu_at = vec![usize::MAX; bound];
        for (i, (_, n)) in gpu_nodes.iter().enumerate() {
            gpu_at[n.index()] = i;
        }
        let mut switch_at = vec![usize::MAX; bound];
        for (i, n) in switches.iter().enumerate() {
            switch_at[n.index()] = i;
        }
        let widest_cpu_path = |a: NodeIndex, b: NodeIndex| -> u32 {
            let (i, j) = (cpu_at[a.index()], cpu_at[b.index()]);
            if i == usize::MAX || j == usize::MAX { 0 } else { cpu_w[i * ncpu + j] }
        };

        let gpu_chains = gpu_nodes.iter().map(|(_, n)| chain_of(self, *n)).collect::<Result<Vec<_>, _>>()?;
        let nic_chains = nic_nodes.iter().map(|n| chain_of(self, *n)).collect::<Result<Vec<_>, _>>()?;

        let cpu_facts = |chain: &Chain| -> (u32, u32) {
            match chain.cpu().and_then(|c| graph.node_weight(c)) {
                Some(Node::Cpu { numa_node, host, .. }) => (*numa_node, *host),
                _ => (0, 0),
            }
        };

        // NVLink: direct bundles and per-switch bundles.
        let nsw = switches.len();
        let mut direct = vec![(0u32, 0u32); count * count]; // (links, mbps)
        let mut to_switch = vec![(0u32, 0u32); count * nsw];
        let gpu_pos = |n: NodeIndex| Some(gpu_at[n.index()]).filter(|&i| i != usize::MAX);
        for e in graph.edge_references() {
            let Edge::NvLink { links, .. } = *e.weight() else {
                continue;
            };
            let (src, dst) = (e.source(), e.target());
            let mbps = e.weight().mbps();
            match (gpu_pos(src), gpu_pos(dst)) {
                (Some(gi), Some(gj)) if gi != gj => {
                    for (from, to) in [(gi, gj), (gj, gi)] {
                        let bundle = &mut direct[from * count + to];
                        bundle.0 += u32::from(links);
                        bundle.1 += mbps;
                    }
                }
                (Some(gi), None) | (None, Some(gi)) => {
                    let other = if gpu_pos(src).is_some() { dst } else { src };
                    let sw = switch_at[other.index()];
                    if sw != usize::MAX {
                        let bundle = &mut to_switch[gi * nsw + sw];
                        bundle.0 += u32::from(links);
                        bundle.1 += mbps;
                    }
                }
                _ => {}
            }
        }

        let mut pairs = Vec::with_capacity(count * count);
        for i in 0..count {
            for j in 0..count {
                if i == j {
                    pairs.push(PairLink {
                        bandwidth_mbps: 0,
                        class: HopClass::SelfLink,
                        host: Some(HopClass::SelfLink),
                    });
                    continue;
                }
                let (mut links, mut nv) = direct[i * count + j];
                for k in 0..nsw {
                    let (la, ba) = to_switch[i * nsw + k];
                    let (lb, bb) = to_switch[j * nsw + k];
                    links += la.min(lb);
                    nv += ba.min(bb);
                }
                let host = host_path(self, &gpu_chains[i], &gpu_chains[j], &widest_cpu_path);
                let link = if nv > 0 {
                    PairLink {
                        bandwidth_mbps: nv,
                        class: HopClass::NvLink(links.min(255) as u8),
                        host: host.map(|h| h.0),
                    }
                } else if let Some((class, bw)) = host {
                    PairLink { bandwidth_mbps: bw, class, host: Some(class) }
                } else {
                    return Err(TopologyError::UnreachableGpu { a: gpu_nodes[i].0, b: gpu_nodes[j].0 });
                };
                pairs.push(link);
            }
        }

        let mut nic_class = Vec::with_capacity(count * nic_nodes.len());
        for gc in &gpu_chains {
            for nc in &nic_chains {
                nic_class.push(host_path(self, gc, nc, &widest_cpu_path).map(|h| h.0));
            }
        }

        let mut gpus = Vec::with_capacity(count);
        for (pos, (_, n)) in gpu_nodes.iter().enumerate() {
            let Some(Node::Gpu(gpu)) = graph.node_weight(*n) else {
                continue;
            };
            let chain = &gpu_chains[pos];
            let (numa, host) = cpu_facts(chain);
            let root = chain
                .nodes
                .iter()
                .find_map(|x| match graph.node_weight(*x) {
                    Some(Node::HostBridge { name }) => Some(name.clone()),
                    _ => None,
                })
                .unwrap_or_else(|| format!("host{host}-numa{numa}"));
            let mut gpu = gpu.clone();
            gpu.numa_node = numa;
            gpu.host = host;
            gpu.pcie_root = root;
            gpus.push(gpu);
        }
        let nics = nic_nodes
            .iter()
            .zip(&nic_chains)
            .filter_map(|(n, chain)| match graph.node_weight(*n) {
                Some(Node::Nic(nic)) => {
                    let (numa, host) = cpu_facts(chain);
                    Some(Nic { name: nic.name.clone(), numa_node: numa, host })
                }
                _ => None,
            })
            .collect();
        GpuMatrix::assemble(self.name().to_owned(), gpus, nics, pairs, nic_class)
    }
}

#[cfg(test)]
mod tests {
    use super::HopClass;

    #[test]
    fn hop_class_text_round_trips() {
        for s in ["X", "NV1", "NV18", "PIX", "PXB", "PHB", "NODE", "SYS"] {
            let c: HopClass = s.parse().expect("a class");
            assert_eq!(c.to_string(), s);
        }
        assert_eq!("SOC".parse::<HopClass>(), Ok(HopClass::Sys));
        for bad in ["", "NV", "NV0", "NV256", "nv4", "PIXX", "X "] {
            assert!(bad.parse::<HopClass>().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn closeness_orders_host_paths() {
        let order = [HopClass::Pix, HopClass::Pxb, HopClass::Phb, HopClass::Node, HopClass::Sys];
        for w in order.windows(2) {
            assert!(w[0].host_closeness() > w[1].host_closeness());
        }
        assert!(HopClass::Pxb.is_pcie_local() && !HopClass::Phb.is_pcie_local());
    }
}
