//! Machine builders produce the matrices their documentation describes; the
//! score and the DRA attribute export on top of them.

use schedkit::topology::{
    AttributeValue, GpuSet, HopClass, MAX_SCORE, NUMA_NODE_ATTRIBUTE, PCIE_ROOT_ATTRIBUTE, SearchOptions, best_subset,
    gpu_attributes, machines, score_against, topology_score,
};

#[test]
fn dgx_h100_matrix() {
    let m = machines::dgx_h100().matrix().expect("valid");
    assert_eq!(m.len(), 8);
    assert_eq!(m.nics().len(), 12);
    let compute = [0, 3, 4, 5, 6, 9, 10, 11];
    for (a, rdma) in compute.iter().enumerate() {
        for b in 0..8 {
            if a != b {
                assert_eq!(m.class(a, b).expect("in range"), HopClass::NvLink(18));
                // 18 links x 25 GB/s per direction = 450 GB/s (900 GB/s bidirectional).
                assert_eq!(m.bandwidth_mbps(a, b).expect("in range"), 450_000);
                let host = if a / 4 == b / 4 { HopClass::Node } else { HopClass::Sys };
                assert_eq!(m.pair(a, b).expect("in range").host, Some(host));
            }
        }
        // The user guide's GPU-to-ConnectX pairing, by RDMA name.
        let (nic, class) = m.nearest_nic(a).expect("a NIC");
        assert_eq!(class, HopClass::Pix);
        assert_eq!(m.nics()[nic].name, format!("mlx5_{rdma}"));
        assert_eq!(m.local_nics(a), 1 << nic);
        assert_eq!(m.gpus()[a].gpu.numa_node, (a / 4) as u32);
        assert_eq!(m.gpus()[a].nvlink_clique, Some(0));
    }
    let h200 = machines::dgx_h200().matrix().expect("valid");
    assert_eq!(h200.class(0, 7).expect("in range"), HopClass::NvLink(18));
    assert!(h200.gpus()[0].gpu.model.contains("H200"));
}

#[test]
fn dgx_a100_matrix() {
    let m = machines::dgx_a100().matrix().expect("valid");
    assert_eq!(m.class(0, 5).expect("in range"), HopClass::NvLink(12));
    assert_eq!(m.bandwidth_mbps(0, 5).expect("in range"), 300_000);
    // The NUMA layout and PXB NICs printed by nvidia-smi on DGX A100.
    let numa: Vec<u32> = m.gpus().iter().map(|g| g.gpu.numa_node).collect();
    assert_eq!(numa, [3, 3, 1, 1, 7, 7, 5, 5]);
    assert_eq!(m.pair(0, 1).expect("in range").host, Some(HopClass::Pxb));
    assert_eq!(m.nic_class(0, 0), Some(HopClass::Pxb));
    assert_eq!(m.nic_class(0, 1), Some(HopClass::Pxb));
    assert_eq!(m.nic_class(0, 2), Some(HopClass::Sys));
    assert_eq!(m.local_nics(2), 0b1100);
}

#[test]
fn dgx1_v100_matrix_matches_the_cube_mesh() {
    let m = machines::dgx1_v100().matrix().expect("valid");
    let nv = |a, b| match m.class(a, b).expect("in range") {
        HopClass::NvLink(n) => n,
        _ => 0,
    };
    // Six links per GPU, split 1/1/2/2 over four peers.
    for g in 0..8 {
        let links: u8 = (0..8).filter(|&o| o != g).map(|o| nv(g, o)).sum();
        assert_eq!(links, 6, "GPU{g}");
    }
    assert_eq!(nv(0, 3), 2);
    assert_eq!(nv(0, 5), 0);
    assert_eq!(m.class(0, 5).expect("in range"), HopClass::Sys);
    assert_eq!(m.class(2, 4).expect("in range"), HopClass::Sys);
    assert_eq!(m.pair(0, 1).expect("in range").host, Some(HopClass::Pix));
    assert_eq!(m.pair(0, 2).expect("in range").host, Some(HopClass::Phb));
    // PCIe Gen3 x16 for pairs without NVLink.
    assert_eq!(m.bandwidth_mbps(0, 5).expect("in range"), 985 * 16);
    assert_eq!(m.gpus()[0].nvlink_domain, Some(0));
    assert_eq!(m.gpus()[0].nvlink_clique, None, "not all-to-all");
}

#[test]
fn l40s_matrix_and_placement() {
    let m = machines::pcie_l40s_8().matrix().expect("valid");
    assert_eq!(m.class(0, 1).expect("in range"), HopClass::Pix);
    assert_eq!(m.class(0, 2).expect("in range"), HopClass::Node);
    assert_eq!(m.class(0, 4).expect("in range"), HopClass::Sys);
    assert_eq!(m.gpus()[0].nvlink_domain, None);
    let o = SearchOptions::default();
    assert_eq!(best_subset(&m, m.all(), 2, &o).expect("fits").gpus, GpuSet::from_indices([0, 1]));
    assert_eq!(best_subset(&m, m.all(), 4, &o).expect("fits").gpus, GpuSet::from_indices([0, 1, 2, 3]));
    // GPUs 1 and 3 busy: 0 and 2 are only NODE to each other, so a PIX pair
    // on socket 1 wins on closeness (4+5 before 6+7 by index).
    let free = m.all() & !GpuSet::from_indices([1, 3]).0;
    let p = best_subset(&m, free, 2, &o).expect("fits");
    assert_eq!(p.gpus, GpuSet::from_indices([4, 5]));
}

#[test]
fn fragmentation_tie_break_keeps_pairs_whole() {
    let m = machines::pcie_l40s_8().matrix().expect("valid");
    // Free: 0, 2, 3 (socket 0) and 4 (socket 1). For one GPU every choice ties
    // on the objective. Without the tie-break the lowest index (0) is taken;
    // with it, the GPU least connected to the rest of the pool: 4, the lone
    // GPU of socket 1, so socket 0 keeps three GPUs for a later request.
    let free = GpuSet::from_indices([0, 2, 3, 4]).0;
    let plain = SearchOptions { fragmentation_aware: false, ..SearchOptions::default() };
    assert_eq!(best_subset(&m, free, 1, &plain).expect("fits").gpus, GpuSet::from_indices([0]));
    let aware = SearchOptions::default();
    assert_eq!(best_subset(&m, free, 1, &aware).expect("fits").gpus, GpuSet::from_indices([4]));
}

#[test]
fn nvl72_matrix() {
    let m = machines::gb200_nvl72().matrix().expect("valid");
    assert_eq!(m.len(), 72);
    assert_eq!(m.nics().len(), 72);
    assert_eq!(m.class(0, 71).expect("in range"), HopClass::NvLink(18));
    assert_eq!(m.bandwidth_mbps(0, 71).expect("in range"), 900_000);
    assert_eq!(m.pair(0, 1).expect("in range").host, Some(HopClass::Node));
    assert_eq!(m.pair(0, 2).expect("in range").host, Some(HopClass::Sys));
    assert_eq!(m.pair(0, 4).expect("in range").host, None);
    assert_eq!(m.gpus()[70].gpu.host, 17);
    assert!(m.gpus().iter().all(|g| g.nvlink_clique == Some(0)));
    // A Grace-attached GPU reaches its tray's NICs through the CPU.
    assert_eq!(m.nic_class(0, 0), Some(HopClass::Node));
    assert_eq!(m.nic_class(0, 4), None);
}

#[test]
fn score_is_100_for_the_ideal_and_lower_for_worse() {
    let m = machines::dgx1_v100().matrix().expect("valid");
    let o = SearchOptions::default();
    assert_eq!(topology_score(&m, m.all(), 4, &o), Ok(MAX_SCORE));
    assert_eq!(topology_score(&m, m.all(), 1, &o), Ok(MAX_SCORE));
    // Only cross-socket, non-NVLinked GPUs left for a pair: 0 and 5.
    let poor = topology_score(&m, GpuSet::from_indices([0, 5]).0, 2, &o).expect("fits");
    // min 15.76 GB/s of 50 GB/s -> 70 * 15760 / 50000 = 22; sum likewise 6;
    // closeness SYS(1) of PIX(5) -> 2.
    assert_eq!(poor, 22 + 6 + 2);
    let fair = topology_score(&m, GpuSet::from_indices([4, 5]).0, 2, &o).expect("fits");
    assert!(poor < fair && fair < MAX_SCORE);
    // score_against on explicit placements.
    let best = best_subset(&m, m.all(), 2, &o).expect("fits");
    assert_eq!(score_against(&best, &best), MAX_SCORE);
    assert!(topology_score(&m, 0, 1, &o).is_err());
}

#[test]
fn dra_attributes() {
    let m = machines::dgx_h100().matrix().expect("valid");
    let attrs = gpu_attributes(&m, 5, "gpu.nvidia.com").expect("in range");
    let get = |name: &str| attrs.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone());
    assert_eq!(get("gpu.nvidia.com/index"), Some(AttributeValue::Int(5)));
    assert_eq!(get(NUMA_NODE_ATTRIBUTE), Some(AttributeValue::Int(1)));
    assert_eq!(get(PCIE_ROOT_ATTRIBUTE), Some(AttributeValue::String("pci0005:00".to_owned())));
    assert_eq!(get("gpu.nvidia.com/nvlinkDomain"), Some(AttributeValue::Int(0)));
    assert_eq!(get("gpu.nvidia.com/cliqueId"), Some(AttributeValue::Int(0)));
    assert_eq!(get("gpu.nvidia.com/nearestNic"), Some(AttributeValue::String("mlx5_9".to_owned())));
    assert_eq!(get("gpu.nvidia.com/nearestNicLink"), Some(AttributeValue::String("PIX".to_owned())));
    assert!(gpu_attributes(&m, 8, "gpu.nvidia.com").is_none());
    // No NVLink: no domain attributes.
    let l40s = machines::pcie_l40s_8().matrix().expect("valid");
    let attrs = gpu_attributes(&l40s, 0, "gpu.nvidia.com").expect("in range");
    assert!(attrs.iter().all(|(n, _)| !n.ends_with("nvlinkDomain")));
    // Synthesized roots (C2C-attached GB200 GPUs) are not published as pcieRoot.
    let nvl = machines::gb200_nvl72().matrix().expect("valid");
    let attrs = gpu_attributes(&nvl, 0, "gpu.nvidia.com").expect("in range");
    assert!(attrs.iter().all(|(n, _)| n != PCIE_ROOT_ATTRIBUTE));
    assert!(attrs.iter().any(|(n, v)| n == "gpu.nvidia.com/cliqueId" && *v == AttributeValue::Int(0)));
}

#[test]
fn four_of_eight_prunes() {
    let m = machines::dgx_h100().matrix().expect("valid");
    let p = best_subset(&m, m.all(), 4, &SearchOptions::default()).expect("fits");
    assert!(p.exact);
    // Operation count budget: 4 of 8 visits fewer nodes than C(8,4) = 70 leaves.
    assert!(p.nodes_visited < 70, "{}", p.nodes_visited);
}
