//! The best-subset search against brute force on random machines, its bound on
//! large domains, NIC alignment, and bad input.

#![expect(clippy::doc_markdown, reason = "NVLink, PCIe and product names in prose")]

use proptest::prelude::*;
use schedkit::topology::{
    Edge, GpuMatrix, GpuSet, NvLinkGen, Objective, PcieGen, SearchOptions, TopologyError, TopologyGraph, best_subset,
    machines, objective_of,
};

/// A random machine: sockets, host bridges, PCIe switches (some nested), GPUs
/// and NICs under them, random NVLink bundles and an optional NVSwitch.
#[derive(Debug, Clone)]
struct Shape {
    gpus: usize,
    sockets: u32,
    /// Per GPU: which leaf (0..leaves) it hangs under.
    gpu_leaf: Vec<usize>,
    /// Per leaf: (socket, host bridge in socket, nested under a parent switch, width).
    leaves: Vec<(u32, u32, bool, u8)>,
    /// NVLink bundles between GPU pairs.
    nvlinks: Vec<(usize, usize, u8)>,
    /// Per GPU links to one NVSwitch (0 = none).
    nvswitch: Vec<u8>,
    /// NICs per leaf (0 or 1).
    nic_leaf: Vec<bool>,
}

fn shape() -> impl Strategy<Value = Shape> {
    (2usize..=12, 1u32..=2, 1usize..=5).prop_flat_map(|(gpus, sockets, leaves)| {
        (
            Just(gpus),
            Just(sockets),
            proptest::collection::vec(0..leaves, gpus),
            proptest::collection::vec(
                (0..sockets, 0u32..2, any::<bool>(), prop_oneof![Just(4u8), Just(8), Just(16)]),
                leaves,
            ),
            proptest::collection::vec((0..gpus, 0..gpus, 1u8..=4), 0..=12),
            prop_oneof![Just(vec![0u8; gpus]), proptest::collection::vec(0u8..=3, gpus),],
            proptest::collection::vec(any::<bool>(), leaves),
        )
            .prop_map(|(gpus, sockets, gpu_leaf, leaves, nvlinks, nvswitch, nic_leaf)| Shape {
                gpus,
                sockets,
                gpu_leaf,
                leaves,
                nvlinks,
                nvswitch,
                nic_leaf,
            })
    })
}

fn build(s: &Shape) -> GpuMatrix {
    let mut g = TopologyGraph::new("random");
    let cpus: Vec<_> = (0..s.sockets).map(|i| g.add_cpu(i, i, 0)).collect();
    if s.sockets == 2 {
        g.link(cpus[0], cpus[1], Edge::InterSocket { mbps: 20_000 });
    }
    let mut bridges = std::collections::BTreeMap::new();
    let mut parents = std::collections::BTreeMap::new();
    let mut leaf_nodes = Vec::new();
    for (li, &(sock, hb, nested, width)) in s.leaves.iter().enumerate() {
        let bridge = *bridges
            .entry((sock, hb))
            .or_insert_with(|| g.add_host_bridge(format!("hb{sock}-{hb}"), cpus[sock as usize], PcieGen::Gen4, 16));
        let parent = if nested {
            *parents
                .entry((sock, hb))
                .or_insert_with(|| g.add_pcie_switch(100 + sock * 2 + hb, bridge, PcieGen::Gen4, 16))
        } else {
            bridge
        };
        let leaf = g.add_pcie_switch(li as u32, parent, PcieGen::Gen4, width);
        if s.nic_leaf[li] {
            g.add_nic(format!("mlx5_{li}"), leaf, PcieGen::Gen4, 16);
        }
        leaf_nodes.push(leaf);
    }
    let gpu_nodes: Vec<_> = (0..s.gpus)
        .map(|i| g.add_gpu(i as u32, format!("GPU-{i}"), "test", 1, leaf_nodes[s.gpu_leaf[i]], PcieGen::Gen4, 16))
        .collect();
    for &(a, b, links) in &s.nvlinks {
        if a != b {
            g.link(gpu_nodes[a], gpu_nodes[b], Edge::NvLink { generation: NvLinkGen::V3, links });
        }
    }
    if s.nvswitch.iter().any(|&l| l > 0) {
        let sw = g.add_nvswitch(0);
        for (i, &links) in s.nvswitch.iter().enumerate() {
            if links > 0 {
                g.link(gpu_nodes[i], sw, Edge::NvLink { generation: NvLinkGen::V4, links });
            }
        }
    }
    g.matrix().expect("random shapes are valid")
}

fn frag_cost(m: &GpuMatrix, free: u128, set: u128) -> u64 {
    GpuSet(set)
        .iter()
        .map(|a| GpuSet(free).iter().filter(|&b| b != a).map(|b| m.pair(a, b).expect("in range").weight()).sum::<u64>())
        .sum()
}

fn sorted(set: u128) -> Vec<usize> {
    GpuSet(set).iter().collect()
}

/// Whether `set` can get one distinct local NIC per GPU (tries every assignment).
fn nic_feasible(m: &GpuMatrix, set: u128) -> bool {
    fn go(m: &GpuMatrix, gpus: &[usize], used: u128) -> bool {
        let Some((&g, rest)) = gpus.split_first() else {
            return true;
        };
        let mut opts = m.local_nics(g) & !used;
        while opts != 0 {
            let j = opts.trailing_zeros();
            opts &= opts - 1;
            if go(m, rest, used | (1 << j)) {
                return true;
            }
        }
        false
    }
    go(m, &sorted(set), 0)
}

/// Brute force: every k-subset of `free`; returns the best set by (objective,
/// fragmentation if asked, lexicographic) among those passing `ok`.
fn brute(m: &GpuMatrix, free: u128, k: usize, frag: bool, ok: &dyn Fn(u128) -> bool) -> Option<(u128, Objective)> {
    let idx = sorted(free);
    let mut best: Option<(u128, Objective, u64)> = None;
    for bits in 0u32..(1 << idx.len()) {
        if bits.count_ones() as usize != k {
            continue;
        }
        let set =
            idx.iter().enumerate().filter(|(i, _)| bits & (1 << i) != 0).fold(0u128, |acc, (_, &g)| acc | (1 << g));
        if !ok(set) {
            continue;
        }
        let obj = objective_of(m, GpuSet(set)).expect("non-empty");
        let cost = if frag { frag_cost(m, free, set) } else { 0 };
        let better = match &best {
            None => true,
            Some((bs, bo, bc)) => {
                (obj, std::cmp::Reverse(cost)) > (*bo, std::cmp::Reverse(*bc))
                    || ((obj, cost) == (*bo, *bc) && sorted(set) < sorted(*bs))
            }
        };
        if better {
            best = Some((set, obj, cost));
        }
    }
    best.map(|(s, o, _)| (s, o))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Exactness: on random machines of up to 12 GPUs, the search returns the
    /// brute-force optimum, and with both tie-breaks the very same set.
    #[test]
    fn search_matches_brute_force(s in shape(), free_bits in any::<u16>(), k_seed in any::<u8>(), frag in any::<bool>()) {
        let m = build(&s);
        let free = u128::from(free_bits) & m.all();
        let nfree = free.count_ones() as usize;
        let opts = SearchOptions { fragmentation_aware: frag, ..SearchOptions::default() };
        prop_assert_eq!(
            best_subset(&m, free, nfree + 1, &opts),
            Err(TopologyError::NotEnoughFree { requested: nfree + 1, free: nfree })
        );
        prop_assume!(nfree > 0);
        let k = 1 + usize::from(k_seed) % nfree;
        let got = best_subset(&m, free, k, &opts).expect("fits");
        let (want_set, want_obj) = brute(&m, free, k, frag, &|_| true).expect("a set exists");
        prop_assert!(got.exact);
        prop_assert_eq!(got.objective, want_obj);
        prop_assert_eq!(got.bound, want_obj);
        prop_assert_eq!(got.gpus.0, want_set);
        prop_assert_eq!(got.gpus.0 & !free, 0);
        prop_assert_eq!(Some(got.objective), objective_of(&m, got.gpus));
    }

    /// NIC alignment: the optimum over the sets that can get one distinct local
    /// NIC per GPU, and a valid assignment.
    #[test]
    fn nic_aligned_search_matches_brute_force(s in shape(), free_bits in any::<u16>(), k in 1usize..=6) {
        // (k above the free count is part of the test: a typed error.)
        let m = build(&s);
        let free = u128::from(free_bits) & m.all();
        let opts = SearchOptions { nic_aligned: true, fragmentation_aware: false, ..SearchOptions::default() };
        let want = brute(&m, free, k, false, &|set| nic_feasible(&m, set));
        match (best_subset(&m, free, k, &opts), want) {
            (Ok(p), Some((set, obj))) => {
                prop_assert_eq!(p.objective, obj);
                prop_assert_eq!(p.gpus.0, set);
                prop_assert_eq!(p.nics.len(), k);
                let mut used = 0u128;
                for &(g, nic) in &p.nics {
                    prop_assert!(p.gpus.contains(g as usize));
                    prop_assert!(m.local_nics(g as usize) & (1 << nic) != 0);
                    prop_assert_eq!(used & (1 << nic), 0);
                    used |= 1 << nic;
                }
            }
            (Err(e), None) => {
                let typed = matches!(
                    e,
                    TopologyError::NoNicAlignedSet { .. } | TopologyError::NotEnoughFree { .. }
                );
                prop_assert!(typed);
            }
            (got, want) => prop_assert!(false, "search {:?} vs brute force {:?}", got, want),
        }
    }

    /// NUMA alignment: the optimum over the sets inside one NUMA node, with and
    /// without NIC alignment on top.
    #[test]
    fn numa_aligned_search_matches_brute_force(s in shape(), free_bits in any::<u16>(), k in 1usize..=6, nic in any::<bool>()) {
        let m = build(&s);
        let free = u128::from(free_bits) & m.all();
        let opts = SearchOptions { numa_aligned: true, nic_aligned: nic, fragmentation_aware: false, ..SearchOptions::default() };
        let numa = |g: usize| m.gpus()[g].gpu.numa_node;
        let want = brute(&m, free, k, false, &|set| {
            let first = set.trailing_zeros() as usize;
            GpuSet(set).iter().all(|g| numa(g) == numa(first)) && (!nic || nic_feasible(&m, set))
        });
        match (best_subset(&m, free, k, &opts), want) {
            (Ok(p), Some((_, obj))) => {
                prop_assert_eq!(p.objective, obj);
                let first = p.gpus.0.trailing_zeros() as usize;
                prop_assert!(p.gpus.iter().all(|g| numa(g) == numa(first)));
            }
            (Err(e), None) => {
                let typed = matches!(
                    e,
                    TopologyError::NoNumaAlignedSet { .. }
                        | TopologyError::NoNicAlignedSet { .. }
                        | TopologyError::NotEnoughFree { .. }
                );
                prop_assert!(typed);
            }
            (got, want) => prop_assert!(false, "search {:?} vs brute force {:?}", got, want),
        }
    }

    /// The large-domain path (forced here by `exact_up_to: 0`): the objective
    /// never exceeds the proven bound, the bound is never below the true optimum,
    /// and `exact` is only claimed for the optimum.
    #[test]
    fn bounded_search_is_sound(s in shape(), free_bits in any::<u16>(), k_seed in any::<u8>(), budget in 0u64..200) {
        let m = build(&s);
        let free = u128::from(free_bits) & m.all();
        let nfree = free.count_ones() as usize;
        prop_assume!(nfree > 0);
        let k = 1 + usize::from(k_seed) % nfree.min(8);
        let opts = SearchOptions { exact_up_to: 0, node_budget: budget, ..SearchOptions::default() };
        let p = best_subset(&m, free, k, &opts).expect("fits");
        let (_, opt) = brute(&m, free, k, false, &|_| true).expect("a set exists");
        prop_assert!(p.objective <= opt);
        prop_assert!(opt <= p.bound, "optimum {:?} above bound {:?}", opt, p.bound);
        if p.exact {
            prop_assert_eq!(p.objective, opt);
        }
        prop_assert_eq!(p.gpus.len(), k);
    }
}

/// A random multi-host NVLink domain: every GPU on one NVSwitch fabric with the
/// same bundle, hosts with random PCIe layouts (one or two sockets).
fn multi_host() -> impl Strategy<Value = Vec<Vec<(u32, bool)>>> {
    // Per host, per GPU: (socket, behind a shared switch).
    proptest::collection::vec(proptest::collection::vec((0u32..2, any::<bool>()), 1..=4), 2..=4)
}

fn build_multi_host(hosts: &[Vec<(u32, bool)>]) -> GpuMatrix {
    let mut g = TopologyGraph::new("multi-host");
    let sw = g.add_nvswitch(0);
    let mut index = 0u32;
    for (h, gpus) in hosts.iter().enumerate() {
        let cpus = [g.add_cpu(0, 0, h as u32), g.add_cpu(1, 1, h as u32)];
        g.link(cpus[0], cpus[1], Edge::InterSocket { mbps: 50_000 });
        let hbs = [
            g.add_host_bridge(format!("h{h}a"), cpus[0], PcieGen::Gen5, 16),
            g.add_host_bridge(format!("h{h}b"), cpus[1], PcieGen::Gen5, 16),
        ];
        let pcie_sw =
            [g.add_pcie_switch(0, hbs[0], PcieGen::Gen5, 16), g.add_pcie_switch(1, hbs[1], PcieGen::Gen5, 16)];
        for &(socket, shared) in gpus {
            let parent = if shared { pcie_sw[socket as usize] } else { hbs[socket as usize] };
            let gpu = g.add_gpu(index, format!("g{index}"), "m", 1, parent, PcieGen::Gen5, 16);
            g.link(gpu, sw, Edge::NvLink { generation: NvLinkGen::V5, links: 18 });
            index += 1;
        }
    }
    g.matrix().expect("valid")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// The multi-host decomposition (forced by `exact_up_to: 0`) is exact: same
    /// objective and same fragmentation cost as brute force.
    #[test]
    fn multi_host_path_matches_brute_force(hosts in multi_host(), free_bits in any::<u16>(), k_seed in any::<u8>(), frag in any::<bool>()) {
        let m = build_multi_host(&hosts);
        let free = u128::from(free_bits) & m.all();
        let nfree = free.count_ones() as usize;
        prop_assume!(nfree > 0);
        let k = 1 + usize::from(k_seed) % nfree;
        let opts = SearchOptions { exact_up_to: 0, node_budget: 0, fragmentation_aware: frag, ..SearchOptions::default() };
        let p = best_subset(&m, free, k, &opts).expect("fits");
        let (want_set, want_obj) = brute(&m, free, k, frag, &|_| true).expect("a set exists");
        prop_assert_eq!(p.objective, want_obj);
        // The decomposition needs free GPUs on two hosts at least; with one the
        // general path (here with no node budget) may stop at its bound.
        let hosts_with_free = (0..hosts.len())
            .filter(|&h| GpuSet(free).iter().any(|g| m.gpus()[g].gpu.host == h as u32))
            .count();
        if k > 1 && hosts_with_free > 1 {
            prop_assert!(p.exact);
        }
        prop_assert!(p.objective <= p.bound);
        if frag {
            prop_assert_eq!(frag_cost(&m, free, p.gpus.0), frag_cost(&m, free, want_set));
        }
    }
}

#[test]
fn nvl72_half_busy_is_proven_optimal() {
    let m = machines::gb200_nvl72().matrix().expect("valid");
    assert_eq!(m.len(), 72);
    // Every other GPU busy: one free GPU per Grace.
    let free = GpuSet::from_indices((0..72).filter(|i| i % 2 == 1)).0;
    let p = best_subset(&m, free, 8, &SearchOptions::default()).expect("fits");
    assert!(p.exact, "greedy meets the bound here: {p:?}");
    assert_eq!(p.objective, p.bound);
    assert_eq!(p.objective.min_bandwidth_mbps(), Some(900_000));
    // Four trays, both free GPUs of each (the pairs that share a host).
    for tray in GpuSet(p.gpus.0).iter().map(|g| g / 4) {
        assert_eq!(GpuSet(p.gpus.0).iter().filter(|g| g / 4 == tray).count(), 2);
    }
}

#[test]
fn nvl72_whole_trays_first() {
    let m = machines::gb200_nvl72().matrix().expect("valid");
    let p = best_subset(&m, m.all(), 8, &SearchOptions::default()).expect("fits");
    assert!(p.exact);
    // Two whole trays: 2 × 6 same-host pairs is the most host closeness 8 GPUs can have.
    let trays: std::collections::BTreeSet<usize> = p.gpus.iter().map(|g| g / 4).collect();
    assert_eq!(trays.len(), 2);
    let p4 = best_subset(&m, m.all(), 4, &SearchOptions::default()).expect("fits");
    let trays: std::collections::BTreeSet<usize> = p4.gpus.iter().map(|g| g / 4).collect();
    assert_eq!(trays.len(), 1, "a 4-GPU job fits in one tray");
}

#[test]
fn nvl72_random_half_busy_reports_a_sound_bound() {
    let m = machines::gb200_nvl72().matrix().expect("valid");
    // A fixed pseudo-random half of the rack busy.
    let mut x = 0x2545_f491_4f6c_dd1d_u64;
    let mut free = 0u128;
    while free.count_ones() < 36 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        free |= 1 << (x % 72);
    }
    let p = best_subset(&m, free, 8, &SearchOptions::default()).expect("fits");
    assert!(p.exact, "the rack decomposes by tray");
    assert_eq!(p.objective, p.bound);
    assert_eq!(p.gpus.0 & !free, 0);
    // Brute force is out of reach (C(36, 8) = 30 million), so check the answer
    // against the structure: the best tray contributes its whole free set.
    let full_trays = (0..18).filter(|t| (free >> (4 * t)) & 0xf == 0xf).count();
    let taken_full = (0..18).filter(|t| (free >> (4 * t)) & 0xf == 0xf && (p.gpus.0 >> (4 * t)) & 0xf == 0xf).count();
    assert_eq!(taken_full, full_trays.min(2));
}

#[test]
fn bad_requests_are_typed_errors() {
    let m = machines::dgx_h100().matrix().expect("valid");
    let o = SearchOptions::default();
    assert_eq!(best_subset(&m, m.all(), 0, &o), Err(TopologyError::ZeroRequest));
    assert_eq!(best_subset(&m, 0b111, 4, &o), Err(TopologyError::NotEnoughFree { requested: 4, free: 3 }));
    assert_eq!(best_subset(&m, 1 << 9, 1, &o), Err(TopologyError::FreeMaskOutOfRange { index: 9, count: 8 }));
    // NIC alignment with every NIC taken.
    let none = SearchOptions { nic_aligned: true, free_nics: 0, ..o };
    assert_eq!(best_subset(&m, m.all(), 2, &none), Err(TopologyError::NoNicAlignedSet { requested: 2 }));
    // DGX-1 V100: 2 NICs per 4 GPUs, so at most 4 aligned GPUs.
    let v = machines::dgx1_v100().matrix().expect("valid");
    let aligned = SearchOptions { nic_aligned: true, ..o };
    assert!(best_subset(&v, v.all(), 4, &aligned).is_ok());
    assert_eq!(best_subset(&v, v.all(), 5, &aligned), Err(TopologyError::NoNicAlignedSet { requested: 5 }));
}

#[test]
fn numa_alignment_on_dgx_a100() {
    let m = machines::dgx_a100().matrix().expect("valid");
    let opts = SearchOptions { numa_aligned: true, ..SearchOptions::default() };
    // Two GPUs per NUMA node (NPS4): a pair fits, four do not.
    let p = best_subset(&m, m.all(), 2, &opts).expect("a pair fits");
    let numa: Vec<u32> = p.gpus.iter().map(|g| m.gpus()[g].gpu.numa_node).collect();
    assert_eq!(numa[0], numa[1]);
    assert_eq!(best_subset(&m, m.all(), 4, &opts), Err(TopologyError::NoNumaAlignedSet { requested: 4 }));
    // Without alignment 4 GPUs are fine (all NV12).
    assert!(best_subset(&m, m.all(), 4, &SearchOptions::default()).is_ok());
}

#[test]
fn bad_graphs_are_typed_errors() {
    // A GPU with no link to anything.
    let mut g = TopologyGraph::new("island");
    let cpu = g.add_cpu(0, 0, 0);
    let hb = g.add_host_bridge("hb", cpu, PcieGen::Gen4, 16);
    g.add_gpu(0, "a", "m", 1, hb, PcieGen::Gen4, 16);
    g.add_detached_gpu(1, "b", "m", 1);
    assert_eq!(g.matrix().map(|_| ()), Err(TopologyError::UnreachableGpu { a: 0, b: 1 }));

    // Two sockets without an inter-socket link.
    let mut g = TopologyGraph::new("split");
    for s in 0..2 {
        let cpu = g.add_cpu(s, s, 0);
        let hb = g.add_host_bridge(format!("hb{s}"), cpu, PcieGen::Gen4, 16);
        g.add_gpu(s, format!("g{s}"), "m", 1, hb, PcieGen::Gen4, 16);
    }
    assert!(matches!(g.matrix(), Err(TopologyError::UnreachableGpu { .. })));

    // Duplicate ids and indices.
    let mut g = TopologyGraph::new("dup");
    let cpu = g.add_cpu(0, 0, 0);
    let hb = g.add_host_bridge("hb", cpu, PcieGen::Gen4, 16);
    g.add_gpu(0, "same", "m", 1, hb, PcieGen::Gen4, 16);
    g.add_gpu(1, "same", "m", 1, hb, PcieGen::Gen4, 16);
    assert_eq!(g.matrix().map(|_| ()), Err(TopologyError::DuplicateGpuId { id: "same".to_owned() }));
    let mut g = TopologyGraph::new("dup-index");
    let cpu = g.add_cpu(0, 0, 0);
    let hb = g.add_host_bridge("hb", cpu, PcieGen::Gen4, 16);
    g.add_gpu(0, "a", "m", 1, hb, PcieGen::Gen4, 16);
    g.add_gpu(0, "b", "m", 1, hb, PcieGen::Gen4, 16);
    assert_eq!(g.matrix().map(|_| ()), Err(TopologyError::DuplicateGpuIndex { index: 0 }));
    let mut g = TopologyGraph::new("gap");
    let cpu = g.add_cpu(0, 0, 0);
    let hb = g.add_host_bridge("hb", cpu, PcieGen::Gen4, 16);
    g.add_gpu(0, "a", "m", 1, hb, PcieGen::Gen4, 16);
    g.add_gpu(5, "b", "m", 1, hb, PcieGen::Gen4, 16);
    assert_eq!(g.matrix().map(|_| ()), Err(TopologyError::GpuIndexGap { index: 5, count: 2 }));

    // No GPUs; a PCIe device with two parents; a switch hanging in the air.
    assert_eq!(TopologyGraph::new("empty").matrix().map(|_| ()), Err(TopologyError::NoGpus));
    let mut g = TopologyGraph::new("two parents");
    let cpu = g.add_cpu(0, 0, 0);
    let hb = g.add_host_bridge("hb", cpu, PcieGen::Gen4, 16);
    let gpu = g.add_gpu(0, "a", "m", 1, hb, PcieGen::Gen4, 16);
    g.link(cpu, gpu, Edge::Pcie { generation: PcieGen::Gen4, width: 16 });
    assert!(matches!(g.matrix(), Err(TopologyError::PcieNotATree { .. })));
    let mut g2 = TopologyGraph::new("dangling2");
    let floating = g2.add_node(schedkit::topology::Node::PcieSwitch { id: 1 });
    g2.add_gpu(0, "a", "m", 1, floating, PcieGen::Gen4, 16);
    assert!(matches!(g2.matrix(), Err(TopologyError::DanglingPcie { .. })));

    // An index from another graph.
    let mut other = TopologyGraph::new("other");
    let foreign = other.add_nvswitch(0);
    let _ = other.add_nvswitch(1);
    let far = other.add_nvswitch(2);
    let mut g = TopologyGraph::new("foreign");
    let cpu = g.add_cpu(0, 0, 0);
    g.link(cpu, far, Edge::InterSocket { mbps: 1 });
    let _ = foreign;
    assert_eq!(g.matrix().map(|_| ()), Err(TopologyError::UnknownNode { index: far.index() }));
}
