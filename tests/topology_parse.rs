//! The `nvidia-smi topo -m` parser on real outputs (tests/fixtures/topology) and
//! on truncated or garbled matrices.

use proptest::prelude::*;
use schedkit::topology::{
    HopClass, ParseErrorKind, ParseOptions, SearchOptions, TopologyError, best_subset, machines, parse_topo,
};

fn fixture(name: &str) -> String {
    let path = format!("{}/../tests/fixtures/topology/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

const COMPLETE: [&str; 5] = [
    "rtx4090_8gpu_sys.txt",
    "h100_4gpu_nv6.txt",
    "l40s_4gpu_node.txt",
    "rtx4090_5gpu_phb_node.txt",
    "rtx5090_2gpu_phb.txt",
];

#[test]
fn every_complete_fixture_parses() {
    let expected_gpus = [8, 4, 4, 5, 2];
    let expected_nics = [2, 4, 2, 0, 0];
    for ((name, gpus), nics) in COMPLETE.iter().zip(expected_gpus).zip(expected_nics) {
        let p = parse_topo(&fixture(name), &ParseOptions::default()).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(p.matrix.len(), gpus, "{name}");
        assert_eq!(p.matrix.nics().len(), nics, "{name}");
        assert_eq!(p.cpu_affinity.len(), gpus, "{name}");
        assert!(p.cpu_affinity.iter().all(|r| !r.is_empty()), "{name}: every GPU row has a CPU affinity");
        for a in 0..gpus {
            assert_eq!(p.matrix.class(a, a).expect("in range"), HopClass::SelfLink);
            for b in 0..gpus {
                assert_eq!(p.matrix.class(a, b).expect("in range"), p.matrix.class(b, a).expect("in range"), "{name}");
            }
        }
        // Every fixture can place a 2-GPU job (or 1 on a 2-GPU box) and the
        // search is exact on it.
        let k = gpus.min(2);
        let placed = best_subset(&p.matrix, p.matrix.all(), k, &SearchOptions::default())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(placed.exact);
    }
}

#[test]
fn rtx4090_fixture_facts() {
    let p = parse_topo(&fixture("rtx4090_8gpu_sys.txt"), &ParseOptions::default()).expect("parses");
    let m = &p.matrix;
    assert_eq!(m.class(0, 7).expect("in range"), HopClass::Sys);
    assert_eq!(m.nic_class(6, 0), Some(HopClass::Phb));
    assert_eq!(m.nearest_nic(6).map(|(j, _)| j), Some(0));
    assert_eq!(p.numa_affinity[0], Some(0));
    assert_eq!(p.numa_affinity[4], Some(1));
    assert_eq!(p.cpu_affinity[4], vec![56..=111, 168..=223]);
    assert_eq!(m.gpu(5).map(|g| g.gpu.numa_node), Some(1));
    // All SYS: no NVLink domain.
    assert_eq!(m.gpu(0).and_then(|g| g.nvlink_domain), None);
    // With every pair SYS, 4 GPUs on one NUMA node win on closeness ties?
    // They cannot: SYS is SYS. Bandwidth and closeness tie, the lowest set wins.
    let placed = best_subset(m, m.all(), 4, &SearchOptions::default()).expect("fits");
    assert_eq!(placed.gpus.len(), 4);
}

#[test]
fn h100_fixture_nvlink_and_nics() {
    let p = parse_topo(&fixture("h100_4gpu_nv6.txt"), &ParseOptions::default()).expect("parses");
    let m = &p.matrix;
    assert_eq!(m.class(1, 2).expect("in range"), HopClass::NvLink(6));
    assert_eq!(m.bandwidth_mbps(1, 2).expect("in range"), 6 * 25_000);
    assert_eq!(p.numa_affinity, vec![Some(3), Some(1), Some(7), Some(5)]);
    assert_eq!(p.cpu_affinity[0], vec![6..=6, 14..=14, 22..=22, 30..=30]);
    for g in 0..4 {
        assert_eq!(m.nic_class(g, g), Some(HopClass::Pix));
        assert_eq!(m.local_nics(g), 1 << g);
        assert_eq!(m.gpu(g).and_then(|f| f.nvlink_clique), Some(0));
    }
    let opts = SearchOptions { nic_aligned: true, ..SearchOptions::default() };
    let placed = best_subset(m, m.all(), 4, &opts).expect("every GPU has its NIC");
    assert_eq!(placed.nics.as_slice(), &[(0, 0), (1, 1), (2, 2), (3, 3)]);
}

#[test]
fn l40s_fixture_uses_nic_legend_names() {
    let p = parse_topo(&fixture("l40s_4gpu_node.txt"), &ParseOptions::default()).expect("parses");
    let names: Vec<&str> = p.matrix.nics().iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["mlx5_0", "mlx5_1"]);
    assert_eq!(p.matrix.class(0, 1).expect("in range"), HopClass::Node);
    // Two GPUs: the same-NUMA pair beats the cross-socket one on closeness.
    let placed = best_subset(&p.matrix, p.matrix.all(), 2, &SearchOptions::default()).expect("fits");
    assert!(placed.gpus.0 == 0b0011 || placed.gpus.0 == 0b1100);
}

#[test]
fn phb_pairs_share_a_pcie_root() {
    let p = parse_topo(&fixture("rtx4090_5gpu_phb_node.txt"), &ParseOptions::default()).expect("parses");
    let root = |g: usize| p.matrix.gpu(g).map(|f| f.gpu.pcie_root.clone());
    assert_eq!(root(1), root(2));
    assert_eq!(root(3), root(4));
    assert_ne!(root(1), root(3));
    let placed = best_subset(&p.matrix, p.matrix.all(), 2, &SearchOptions::default()).expect("fits");
    assert!(placed.gpus.0 == 0b00110 || placed.gpus.0 == 0b11000);
}

#[test]
fn truncated_real_outputs_are_errors_with_positions() {
    let a100 = parse_topo(&fixture("dgx_a100_truncated.txt"), &ParseOptions::default())
        .expect_err("truncated in the GPU6 row");
    assert_eq!(a100.line, 9);
    assert!(matches!(a100.kind, ParseErrorKind::RowLength { expected: 18, found: 2, .. }));

    let h100 = parse_topo(&fixture("dgx_h100_truncated.txt"), &ParseOptions::default())
        .expect_err("truncated in the GPU6 row");
    assert_eq!(h100.line, 8);
    assert!(matches!(h100.kind, ParseErrorKind::RowLength { found: 1, .. }));

    let dgx2 =
        parse_topo(&fixture("dgx2_16gpu_truncated.txt"), &ParseOptions::default()).expect_err("truncated after GPU3");
    assert_eq!(dgx2.line, 7);
    assert!(matches!(dgx2.kind, ParseErrorKind::Truncated { expected: 26, found: 4 }));
}

#[test]
fn garbled_real_output_names_the_glued_header_cell() {
    let e =
        parse_topo(&fixture("dgx_h100_garbled.txt"), &ParseOptions::default()).expect_err("NIC8NIC9 is not a device");
    assert_eq!(e.line, 3);
    assert_eq!(e.kind, ParseErrorKind::BadHeader("NIC8NIC9".to_owned()));
    // The column points at the glued cell (tabs count as one character).
    let header = fixture("dgx_h100_garbled.txt");
    let line = header.lines().nth(2).expect("line 3");
    let col: usize = line
        .char_indices()
        .find(|(i, _)| line[*i..].starts_with("NIC8NIC9"))
        .map(|(i, _)| line[..i].chars().count() + 1)
        .expect("present");
    assert_eq!(e.column, col);
}

const SMALL: &str = "\tGPU0\tGPU1\tGPU2\tNIC0\tCPU Affinity\tNUMA Affinity
GPU0\t X \tNV4\tSYS\tPIX\t0-7\t0
GPU1\tNV4\t X \tSYS\tPIX\t0-7\t0
GPU2\tSYS\tSYS\t X \tSYS\t8-15\t1
NIC0\tPIX\tPIX\tSYS\t X
";

#[test]
fn small_matrix_round_trip() {
    let p = parse_topo(SMALL, &ParseOptions::default()).expect("valid");
    assert_eq!(p.matrix.class(0, 1).expect("in range"), HopClass::NvLink(4));
    assert_eq!(p.matrix.pair(0, 1).expect("in range").host, Some(HopClass::Node));
    assert_eq!(p.matrix.class(0, 2).expect("in range"), HopClass::Sys);
    // Render and parse again: same classes.
    let again = parse_topo(&p.matrix.to_topo_string(), &ParseOptions::default()).expect("valid");
    for a in 0..3 {
        for b in 0..3 {
            assert_eq!(again.matrix.class(a, b).expect("in range"), p.matrix.class(a, b).expect("in range"));
        }
        assert_eq!(again.matrix.nic_class(a, 0), p.matrix.nic_class(a, 0));
    }
}

#[test]
fn builder_matrices_round_trip_through_the_parser() {
    for g in [machines::dgx_h100(), machines::dgx_a100(), machines::dgx1_v100(), machines::pcie_l40s_8()] {
        let m = g.matrix().expect("valid shape");
        let p =
            parse_topo(&m.to_topo_string(), &ParseOptions::default()).unwrap_or_else(|e| panic!("{}: {e}", m.name()));
        assert_eq!(p.matrix.len(), m.len());
        for a in 0..m.len() {
            assert_eq!(p.numa_affinity[a], Some(m.gpus()[a].gpu.numa_node));
            for b in 0..m.len() {
                assert_eq!(p.matrix.class(a, b).expect("in range"), m.class(a, b).expect("in range"), "{}", m.name());
            }
            for j in 0..m.nics().len() {
                assert_eq!(p.matrix.nic_class(a, j), m.nic_class(a, j), "{}", m.name());
            }
        }
    }
}

fn parse_err(text: &str) -> schedkit::topology::ParseError {
    parse_topo(text, &ParseOptions::default()).expect_err("must fail")
}

#[test]
fn malformed_matrices_name_line_and_column() {
    // A cell that is not a class.
    let e = parse_err(&SMALL.replace("GPU1\tNV4\t X \tSYS", "GPU1\tNV4\t X \tSYX"));
    assert_eq!((e.line, e.column), (3, 14));
    assert_eq!(e.kind, ParseErrorKind::BadCell("SYX".to_owned()));

    // Asymmetric: GPU2 says PHB to GPU0, GPU0 says SYS.
    let e = parse_err(&SMALL.replace("GPU2\tSYS\tSYS", "GPU2\tPHB\tSYS"));
    assert_eq!(e.line, 4);
    assert!(matches!(e.kind, ParseErrorKind::Asymmetric { .. }));

    // A missing cell.
    let e = parse_err(&SMALL.replace("GPU1\tNV4\t X \tSYS\tPIX", "GPU1\tNV4\t X \tSYS"));
    assert_eq!(e.line, 3);
    assert!(matches!(e.kind, ParseErrorKind::RowLength { .. }));

    // An X off the diagonal.
    let e = parse_err(&SMALL.replace("GPU0\t X \tNV4", "GPU0\t X \tX"));
    assert_eq!(e.line, 2);
    assert!(matches!(e.kind, ParseErrorKind::Diagonal(_)));

    // Rows out of order.
    let swapped = SMALL.replace("GPU1\tNV4", "GPU7\tNV4");
    let e = parse_err(&swapped);
    assert_eq!((e.line, e.column), (3, 1));
    assert!(matches!(e.kind, ParseErrorKind::RowLabel { .. }));

    // Cut after two rows.
    let cut = SMALL.lines().take(3).collect::<Vec<_>>().join("\n") + "\n";
    let e = parse_err(&cut);
    assert_eq!(e.line, 4);
    assert_eq!(e.kind, ParseErrorKind::Truncated { expected: 4, found: 2 });

    // A bad CPU list.
    let e = parse_err(&SMALL.replace("0-7\t0\nGPU1", "7-0\t0\nGPU1"));
    assert_eq!(e.line, 2);
    assert_eq!(e.kind, ParseErrorKind::BadAffinity("7-0".to_owned()));

    // No header at all.
    assert_eq!(parse_err("hello\nworld\n").kind, ParseErrorKind::MissingHeader);
    assert_eq!(parse_err("").kind, ParseErrorKind::MissingHeader);

    // Header GPUs out of order.
    let e = parse_err("\tGPU0\tGPU2\nGPU0\t X \tSYS\nGPU2\tSYS\t X\n");
    assert_eq!(e.kind, ParseErrorKind::BadHeader("GPU2".to_owned()));

    // NV0 is not a class.
    let e = parse_err("\tGPU0\tGPU1\nGPU0\t X \tNV0\nGPU1\tNV0\t X\n");
    assert_eq!(e.kind, ParseErrorKind::BadCell("NV0".to_owned()));
}

#[test]
fn a_gpu_with_a_single_row_is_fine_and_k_checks_apply() {
    let p = parse_topo("\tGPU0\tCPU Affinity\nGPU0\t X \t0-3\n", &ParseOptions::default()).expect("one GPU");
    assert_eq!(p.matrix.len(), 1);
    let err = best_subset(&p.matrix, p.matrix.all(), 2, &SearchOptions::default()).expect_err("only one GPU");
    assert_eq!(err, TopologyError::NotEnoughFree { requested: 2, free: 1 });
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    /// Any cut or byte-level damage of a real fixture parses or errors; never panics.
    #[test]
    fn damaged_fixtures_never_panic(which in 0usize..5, cut in 0usize..2000, pos in 0usize..2000, byte in any::<u8>()) {
        let text = fixture(COMPLETE[which]);
        let mut bytes = text.into_bytes();
        if !bytes.is_empty() {
            let p = pos % bytes.len();
            bytes[p] = byte;
            bytes.truncate(cut.max(1).min(bytes.len()));
        }
        let damaged = String::from_utf8_lossy(&bytes);
        match parse_topo(&damaged, &ParseOptions::default()) {
            Err(e) => {
                prop_assert!(e.line >= 1 && e.column >= 1);
                prop_assert!(e.line <= damaged.lines().count() + 1);
            }
            Ok(p) => {
                // What parses renders back to the same classes.
                let again = parse_topo(&p.matrix.to_topo_string(), &ParseOptions::default());
                prop_assert!(again.is_ok());
                if let Ok(again) = again {
                    for a in 0..p.matrix.len() {
                        for b in 0..p.matrix.len() {
                            prop_assert_eq!(again.matrix.class(a, b).expect("in range"), p.matrix.class(a, b).expect("in range"));
                        }
                    }
                }
            }
        }
    }

    /// Arbitrary text never panics.
    #[test]
    fn arbitrary_text_never_panics(s in "(GPU[0-9]|NIC[0-9]|NV[0-9]{1,2}|X|SYS|PIX|CPU Affinity|\t| |\n|[a-z0-9,-]){0,80}") {
        let _ = parse_topo(&s, &ParseOptions::default());
    }
}
