//! Builders for real machine shapes.
//!
//! Each builder follows NVIDIA's published description of the system; the
//! sources are cited per function. Numbers that vendors do not publish (CPU
//! interconnect bandwidth) are nominal and say so: they never decide a
//! placement on these shapes, because NVLink or the PCIe leaf links are the
//! bottleneck of every GPU pair.

use petgraph::stable_graph::NodeIndex;

use super::error::TopologyError;
use super::graph::{Edge, NvLinkGen, PcieGen, TopologyGraph};

/// A UUID-shaped, deterministic id for GPU `index` of a shape tagged `tag`.
fn gpu_id(tag: u32, index: u32) -> String {
    format!("GPU-{tag:08x}-0000-4000-8000-{index:012x}")
}

/// NVIDIA DGX H100: 8 H100 SXM5 80 GB, 4 third-generation NVSwitch chips,
/// 2 Intel Xeon Platinum 8480C sockets, 8 ConnectX-7 compute NICs (one per GPU,
/// behind the same PCIe Gen5 switch) and 2 dual-port storage NICs.
///
/// Sources: *NVIDIA DGX H100 User Guide*, "Hardware Overview" (8 GPUs, 4
/// NVSwitches, 18 NVLink connections per GPU = 900 GB/s bidirectional) and
/// "Network Modules" (the GPU-to-ConnectX pairing and RDMA names: GPU0
/// `mlx5_0`, GPU1 `mlx5_3`, GPU2 `mlx5_4`, GPU3 `mlx5_5` on CPU 0; GPU4
/// `mlx5_6`, GPU5 `mlx5_9`, GPU6 `mlx5_10`, GPU7 `mlx5_11` on CPU 1).
/// `nvidia-smi topo -m` on DGX H100 (public outputs, e.g. NVIDIA/nccl issue
/// 1363) shows NV18 for every GPU pair, GPUs 0–3 on NUMA node 0 and 4–7 on
/// node 1, each GPU PIX to one NIC and NODE to the others on its socket.
/// Assumption: the split of each GPU's 18 links over the four switches
/// (5, 4, 4, 5 here); any split shared by all GPUs yields NV18 for every pair.
pub fn dgx_h100() -> TopologyGraph {
    dgx_hopper("DGX H100", "NVIDIA H100 80GB HBM3", 81_559, 0x4810_0000)
}

/// NVIDIA DGX H200: the DGX H100 chassis and interconnect with H200 141 GB GPUs.
///
/// Source: *NVIDIA DGX H200 User Guide* / DGX H100/H200 User Guide, "Hardware
/// Overview" (same 4 NVSwitch, 18-link NVLink 4 fabric; 8 × 141 GB HBM3e).
pub fn dgx_h200() -> TopologyGraph {
    dgx_hopper("DGX H200", "NVIDIA H200 141GB HBM3e", 143_771, 0x4820_0000)
}

fn dgx_hopper(name: &str, model: &str, mem: u64, tag: u32) -> TopologyGraph {
    let mut g = TopologyGraph::new(name);
    let nvs: Vec<NodeIndex> = (0..4).map(|i| g.add_nvswitch(i)).collect();
    let links_per_switch = [5u8, 4, 4, 5];
    // Compute NIC per GPU, then the storage NIC functions per socket.
    let compute_nic = [0u32, 3, 4, 5, 6, 9, 10, 11];
    let storage_nic = [[1u32, 2], [7, 8]];
    let sockets: Vec<NodeIndex> = (0..2).map(|s| g.add_cpu(s, s, 0)).collect();
    // Nominal: four UPI links at 16 GT/s; never a GPU-pair bottleneck here.
    g.link(sockets[0], sockets[1], Edge::InterSocket { mbps: 64_000 });
    for (s, &cpu) in sockets.iter().enumerate() {
        for local in 0..4u32 {
            let idx = s as u32 * 4 + local;
            let hb = g.add_host_bridge(format!("pci{idx:04x}:00"), cpu, PcieGen::Gen5, 16);
            let sw = g.add_pcie_switch(idx, hb, PcieGen::Gen5, 16);
            let gpu = g.add_gpu(idx, gpu_id(tag, idx), model, mem, sw, PcieGen::Gen5, 16);
            g.add_nic(format!("mlx5_{}", compute_nic[idx as usize]), sw, PcieGen::Gen5, 16);
            for (k, &links) in links_per_switch.iter().enumerate() {
                g.link(gpu, nvs[k], Edge::NvLink { generation: NvLinkGen::V4, links });
            }
        }
    }
    for (s, &cpu) in sockets.iter().enumerate() {
        let hb = g.add_host_bridge(format!("pci{:04x}:00", 8 + s), cpu, PcieGen::Gen5, 16);
        for port in storage_nic[s] {
            g.add_nic(format!("mlx5_{port}"), hb, PcieGen::Gen5, 16);
        }
    }
    g
}

/// NVIDIA DGX A100: 8 A100 SXM4, 6 second-generation NVSwitch chips (12 NVLink 3
/// links per GPU, 2 to each switch = 600 GB/s bidirectional), 2 AMD EPYC 7742
/// sockets in NPS4 (8 NUMA nodes), 4 PCIe Gen4 switch complexes each holding 2
/// GPUs and 2 ConnectX-6 HDR NICs, plus a storage NIC.
///
/// Sources: *NVIDIA DGX A100 User Guide*, "Hardware Overview"; the DGX A100
/// System Architecture whitepaper (six NVSwitches, 12 links per GPU, PCIe
/// switch pairing of GPUs and NICs). The NUMA placement (GPUs 0–1 on node 3,
/// 2–3 on 1, 4–5 on 7, 6–7 on 5) and the PXB GPU/NIC class are as printed by
/// `nvidia-smi topo -m` on DGX A100 (NVIDIA/DCGM issue 149, NVIDIA/nccl issue 1505).
pub fn dgx_a100() -> TopologyGraph {
    let mut g = TopologyGraph::new("DGX A100");
    let tag = 0xa100_0000;
    let nvs: Vec<NodeIndex> = (0..6).map(|i| g.add_nvswitch(i)).collect();
    let numa: Vec<NodeIndex> = (0..8).map(|n| g.add_cpu(n / 4, n, 0)).collect();
    // Nominal fabric numbers: Infinity Fabric inside a socket, xGMI between.
    for s in 0..2 {
        for a in 0..4 {
            for b in (a + 1)..4 {
                g.link(numa[s * 4 + a], numa[s * 4 + b], Edge::InterSocket { mbps: 100_000 });
            }
        }
    }
    g.link(numa[0], numa[4], Edge::InterSocket { mbps: 64_000 });
    let complex_numa = [3usize, 1, 7, 5];
    let mut nic = 0;
    for (c, &nn) in complex_numa.iter().enumerate() {
        let hb = g.add_host_bridge(format!("pci{c:04x}:00"), numa[nn], PcieGen::Gen4, 16);
        let top = g.add_pcie_switch(c as u32 * 10, hb, PcieGen::Gen4, 16);
        for local in 0..2u32 {
            let idx = c as u32 * 2 + local;
            let leaf = g.add_pcie_switch(c as u32 * 10 + 1 + local, top, PcieGen::Gen4, 16);
            let gpu = g.add_gpu(idx, gpu_id(tag, idx), "NVIDIA A100-SXM4-80GB", 81_920, leaf, PcieGen::Gen4, 16);
            for &sw in &nvs {
                g.link(gpu, sw, Edge::NvLink { generation: NvLinkGen::V3, links: 2 });
            }
        }
        for local in 0..2u32 {
            let leaf = g.add_pcie_switch(c as u32 * 10 + 3 + local, top, PcieGen::Gen4, 16);
            g.add_nic(format!("mlx5_{nic}"), leaf, PcieGen::Gen4, 16);
            nic += 1;
        }
    }
    let hb = g.add_host_bridge("pci0008:00", numa[0], PcieGen::Gen4, 16);
    g.add_nic(format!("mlx5_{nic}"), hb, PcieGen::Gen4, 16);
    g
}

/// The NVLink bundles of a DGX-1 with V100 (hybrid cube-mesh): `(a, b, links)`.
///
/// Source: *NVIDIA DGX-1 With Tesla V100 System Architecture* whitepaper
/// (WP-08437-002), figure of the hybrid cube-mesh; the same bundles are the
/// DGX-1 Volta fixture of NVIDIA's go-gpuallocator tests.
pub const DGX1_V100_NVLINKS: [(u32, u32, u8); 12] = [
    (0, 1, 1),
    (0, 2, 1),
    (0, 3, 2),
    (0, 4, 2),
    (1, 2, 2),
    (1, 3, 1),
    (1, 5, 2),
    (2, 3, 2),
    (2, 6, 1),
    (3, 7, 1),
    (4, 5, 1),
    (4, 6, 1),
];

/// The remaining four bundles of the DGX-1 V100 cube-mesh (see [`DGX1_V100_NVLINKS`]).
const DGX1_V100_NVLINKS_REST: [(u32, u32, u8); 4] = [(4, 7, 2), (5, 6, 2), (5, 7, 1), (6, 7, 2)];

/// NVIDIA DGX-1 with V100: 8 V100 SXM2 in a hybrid cube-mesh of NVLink 2 (6
/// links per GPU; pairs with 1 or 2 links, some pairs none), 2 Intel Xeon
/// E5-2698 v4 sockets, 4 PCIe Gen3 switches each holding 2 GPUs and one
/// InfiniBand EDR NIC, two switches per socket under one host bridge.
///
/// Sources: *NVIDIA DGX-1 With Tesla V100 System Architecture* whitepaper
/// (WP-08437-002); PCIe classes as in NVIDIA go-gpuallocator's DGX-1 Volta
/// test node (0–1 same switch, 0–2 host bridge, 0–4 cross CPU).
pub fn dgx1_v100() -> TopologyGraph {
    let mut g = TopologyGraph::new("DGX-1 V100");
    let tag = 0x0100_0000;
    let sockets: Vec<NodeIndex> = (0..2).map(|s| g.add_cpu(s, s, 0)).collect();
    // Nominal: two QPI links at 9.6 GT/s.
    g.link(sockets[0], sockets[1], Edge::InterSocket { mbps: 38_400 });
    let mut gpus = Vec::new();
    for (s, &cpu) in sockets.iter().enumerate() {
        let hb = g.add_host_bridge(format!("pci{s:04x}:00"), cpu, PcieGen::Gen3, 16);
        for sw_local in 0..2u32 {
            let swi = s as u32 * 2 + sw_local;
            let sw = g.add_pcie_switch(swi, hb, PcieGen::Gen3, 16);
            for local in 0..2u32 {
                let idx = swi * 2 + local;
                gpus.push(g.add_gpu(idx, gpu_id(tag, idx), "Tesla V100-SXM2-32GB", 32_768, sw, PcieGen::Gen3, 16));
            }
            g.add_nic(format!("mlx5_{swi}"), sw, PcieGen::Gen3, 16);
        }
    }
    for &(a, b, links) in DGX1_V100_NVLINKS.iter().chain(&DGX1_V100_NVLINKS_REST) {
        g.link(gpus[a as usize], gpus[b as usize], Edge::NvLink { generation: NvLinkGen::V2, links });
    }
    g
}

/// An 8-GPU PCIe server in the NVIDIA L40S / OVX style: 2 sockets, 2 PCIe Gen4
/// switches per socket (each on its own root port), 2 L40S GPUs and one NIC per
/// switch, no NVLink.
///
/// Sources: *NVIDIA L40S* product brief / datasheet (48 GB GDDR6, PCIe Gen4 x16,
/// no NVLink); NVIDIA OVX / L40S reference server configurations (4 GPUs per CPU
/// behind PCIe switches, one ConnectX-7 or BlueField-3 per switch). The exact
/// switch layout varies by OEM; this is the symmetric layout the issue names.
pub fn pcie_l40s_8() -> TopologyGraph {
    let mut g = TopologyGraph::new("8x L40S PCIe");
    let tag = 0x4040_0000;
    let sockets: Vec<NodeIndex> = (0..2).map(|s| g.add_cpu(s, s, 0)).collect();
    g.link(sockets[0], sockets[1], Edge::InterSocket { mbps: 64_000 });
    for (s, &cpu) in sockets.iter().enumerate() {
        for sw_local in 0..2u32 {
            let swi = s as u32 * 2 + sw_local;
            let hb = g.add_host_bridge(format!("pci{swi:04x}:00"), cpu, PcieGen::Gen4, 16);
            let sw = g.add_pcie_switch(swi, hb, PcieGen::Gen4, 16);
            for local in 0..2u32 {
                let idx = swi * 2 + local;
                g.add_gpu(idx, gpu_id(tag, idx), "NVIDIA L40S", 46_068, sw, PcieGen::Gen4, 16);
            }
            g.add_nic(format!("mlx5_{swi}"), sw, PcieGen::Gen4, 16);
        }
    }
    g
}

/// One NVIDIA GB200 NVL72 rack as a single NVLink domain: 18 compute trays (hosts),
/// each with 2 Grace CPUs and 4 Blackwell GPUs (2 per Grace over NVLink-C2C,
/// 900 GB/s bidirectional), and 9 NVLink switch trays holding 18 NVSwitch chips;
/// every GPU has 18 NVLink 5 links, one to each switch chip (1.8 TB/s
/// bidirectional). Each tray has 4 NICs, 2 per Grace.
///
/// GPU `4t..4t+4` sit in tray `t` (host `t`); `4t, 4t+1` on the tray's first
/// Grace (NUMA 0), `4t+2, 4t+3` on its second (NUMA 1). GPUs of different trays
/// reach each other only over NVLink (their host path is `None`).
///
/// Sources: NVIDIA GB200 NVL72 product page and datasheet (72 Blackwell GPUs, 36
/// Grace CPUs, 130 TB/s NVLink domain, 18 compute trays, 9 switch trays);
/// NVIDIA NVLink/NVSwitch page (fifth-generation NVLink, 18 links and 1.8 TB/s
/// per GPU; 72-port NVSwitch chips). The Grace-to-Grace link inside a tray is
/// modelled as an inter-socket link with a nominal bandwidth (assumption).
pub fn gb200_nvl72() -> TopologyGraph {
    let mut g = TopologyGraph::new("GB200 NVL72");
    let tag = 0xb200_0000;
    let nvs: Vec<NodeIndex> = (0..18).map(|i| g.add_nvswitch(i)).collect();
    for tray in 0..18u32 {
        let graces = [g.add_cpu(0, 0, tray), g.add_cpu(1, 1, tray)];
        g.link(graces[0], graces[1], Edge::InterSocket { mbps: 300_000 });
        for (gi, &grace) in graces.iter().enumerate() {
            for local in 0..2u32 {
                let idx = tray * 4 + gi as u32 * 2 + local;
                let gpu = g.add_detached_gpu(idx, gpu_id(tag, idx), "NVIDIA GB200", 189_471);
                g.link(grace, gpu, Edge::C2c { mbps: 450_000 });
                for &sw in &nvs {
                    g.link(gpu, sw, Edge::NvLink { generation: NvLinkGen::V5, links: 1 });
                }
            }
            for local in 0..2u32 {
                let hb = g.add_host_bridge(format!("pci{:04x}:00", gi as u32 * 2 + local), grace, PcieGen::Gen5, 16);
                g.add_nic(format!("tray{tray}-mlx5_{}", gi as u32 * 2 + local), hb, PcieGen::Gen5, 16);
            }
        }
    }
    g
}

/// The NVLink pairs of a DGX-1 with P100 (hybrid cube-mesh, one NVLink 1 link
/// per pair, four per GPU).
///
/// Source: *NVIDIA DGX-1 System Architecture* whitepaper (WP-08437-001, P100
/// edition), figure of the hybrid cube-mesh; the same pairs are the DGX-1
/// Pascal fixture of NVIDIA's go-gpuallocator tests (`gpuallocator/common_test.go`).
pub const DGX1_P100_NVLINKS: [(u32, u32); 16] = [
    (0, 1),
    (0, 2),
    (0, 3),
    (0, 4),
    (1, 2),
    (1, 3),
    (1, 5),
    (2, 3),
    (2, 6),
    (3, 7),
    (4, 5),
    (4, 6),
    (4, 7),
    (5, 6),
    (5, 7),
    (6, 7),
];

/// NVIDIA DGX-1 with P100: 8 Tesla P100 SXM2 16 GB in a hybrid cube-mesh of
/// NVLink 1 (each GPU one link to each of four others), 2 Intel Xeon E5-2698 v4
/// sockets, 4 PCIe Gen3 switches each holding 2 GPUs and one InfiniBand EDR NIC,
/// two switches per socket under one host bridge.
///
/// Sources: *NVIDIA DGX-1 System Architecture* whitepaper (WP-08437-001); the
/// PCIe classes are those of go-gpuallocator's DGX-1 Pascal test node, where a
/// switch holds GPUs 0 and 2 (1 and 3, 4 and 6, 5 and 7): 0–2 same switch, 0–1
/// host bridge, 0–4 cross CPU.
pub fn dgx1_p100() -> TopologyGraph {
    let mut g = TopologyGraph::new("DGX-1 P100");
    let tag = 0x0100_0100;
    let sockets: Vec<NodeIndex> = (0..2).map(|s| g.add_cpu(s, s, 0)).collect();
    // Nominal: two QPI links at 9.6 GT/s.
    g.link(sockets[0], sockets[1], Edge::InterSocket { mbps: 38_400 });
    let mut gpus: Vec<(u32, NodeIndex)> = Vec::new();
    for (s, &cpu) in sockets.iter().enumerate() {
        let hb = g.add_host_bridge(format!("pci{s:04x}:00"), cpu, PcieGen::Gen3, 16);
        for sw_local in 0..2u32 {
            let swi = s as u32 * 2 + sw_local;
            let sw = g.add_pcie_switch(swi, hb, PcieGen::Gen3, 16);
            // Switch `sw_local` of socket `s` holds GPUs 4s+sw_local and 4s+sw_local+2.
            for idx in [s as u32 * 4 + sw_local, s as u32 * 4 + sw_local + 2] {
                let gpu = g.add_gpu(idx, gpu_id(tag, idx), "Tesla P100-SXM2-16GB", 16_280, sw, PcieGen::Gen3, 16);
                gpus.push((idx, gpu));
            }
            g.add_nic(format!("mlx5_{swi}"), sw, PcieGen::Gen3, 16);
        }
    }
    gpus.sort_unstable_by_key(|&(i, _)| i);
    for &(a, b) in &DGX1_P100_NVLINKS {
        g.link(gpus[a as usize].1, gpus[b as usize].1, Edge::NvLink { generation: NvLinkGen::V1, links: 1 });
    }
    g
}

/// A PCIe server whose GPUs are paired by NVLink bridges (workstation-class
/// cards such as Quadro RTX 8000 or RTX A6000): `sockets` CPUs, `gpus_per_socket`
/// GPUs on each, every GPU on its own root port (GPUs of one socket are NODE to
/// each other, of different sockets SYS), and an NVLink bridge of `links` links
/// between the two GPUs of each pair in `bridges`.
///
/// Fails with [`TopologyError::BridgeOutOfRange`] when a bridge names a GPU index
/// the machine does not have.
///
/// ```
/// use schedkit::topology::{machines, HopClass, NvLinkGen};
/// let g = machines::pcie_nvlink_bridged("NVIDIA RTX A6000", 49_140, 2, 2, &[(0, 1), (2, 3)], NvLinkGen::V3, 4).unwrap();
/// let m = g.matrix().unwrap();
/// assert_eq!(m.pair(0, 1).unwrap().class, HopClass::NvLink(4));
/// assert_eq!(m.pair(0, 2).unwrap().class, HopClass::Sys);
/// assert!(machines::pcie_nvlink_bridged("x", 1, 1, 2, &[(0, 2)], NvLinkGen::V2, 2).is_err());
/// ```
pub fn pcie_nvlink_bridged(
    model: &str,
    memory_mib: u64,
    sockets: u32,
    gpus_per_socket: u32,
    bridges: &[(u32, u32)],
    generation: NvLinkGen,
    links: u8,
) -> Result<TopologyGraph, TopologyError> {
    let count = sockets * gpus_per_socket;
    if let Some(&(a, b)) = bridges.iter().find(|&&(a, b)| a >= count || b >= count || a == b) {
        return Err(TopologyError::BridgeOutOfRange { a, b, count });
    }
    let mut g = TopologyGraph::new(format!("{count}x {model} PCIe, NVLink-bridged"));
    let tag = 0x8000_0000 | count;
    let cpus: Vec<NodeIndex> = (0..sockets).map(|s| g.add_cpu(s, s, 0)).collect();
    for pair in cpus.windows(2) {
        // Nominal: one UPI link.
        g.link(pair[0], pair[1], Edge::InterSocket { mbps: 41_600 });
    }
    let mut gpus = Vec::new();
    for (s, &cpu) in cpus.iter().enumerate() {
        for local in 0..gpus_per_socket {
            let idx = s as u32 * gpus_per_socket + local;
            let hb = g.add_host_bridge(format!("pci{idx:04x}:00"), cpu, PcieGen::Gen3, 16);
            gpus.push(g.add_gpu(idx, gpu_id(tag, idx), model, memory_mib, hb, PcieGen::Gen3, 16));
        }
    }
    for &(a, b) in bridges {
        g.link(gpus[a as usize], gpus[b as usize], Edge::NvLink { generation, links });
    }
    Ok(g)
}

/// Four Quadro RTX 8000 (48 GB, NVLink 2 bridges of two links: 100 GB/s
/// bidirectional per pair) in a two-socket PCIe server, GPUs 0–1 on the first
/// socket and 2–3 on the second, bridged 0–3 and 1–2 (across the sockets), as
/// go-gpuallocator's `New4xRTX8000Node` test node.
///
/// Sources: *NVIDIA Quadro RTX 8000* datasheet (48 GB GDDR6, NVLink bridge of 2
/// links, 100 GB/s); `gpuallocator/common_test.go` (bridges 0–3 and 1–2, 0–1
/// and 2–3 same CPU, the other pairs cross CPU).
pub fn rtx8000_4x() -> TopologyGraph {
    pcie_nvlink_bridged("Quadro RTX 8000", 48_601, 2, 2, &[(0, 3), (1, 2)], NvLinkGen::V2, 2)
        .unwrap_or_else(|e| unreachable!("fixed shape: {e}"))
}
