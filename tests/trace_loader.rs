//! The openb trace loader: every bundled file loads with the documented row counts, and
//! malformed input is refused with the file, line and column.

use schedkit::trace::{TraceError, gpu_capacity_milli, load_nodes, load_pods, parse_nodes, parse_pods};

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/data");

#[test]
fn bundled_node_lists_load_with_their_row_counts() {
    let gpu = load_nodes(format!("{DATA}/openb_node_list_gpu_node.csv")).unwrap();
    assert_eq!(gpu.len(), 1213);
    assert_eq!(gpu_capacity_milli(&gpu), 6212 * 1000);
    assert!(gpu.iter().all(|n| n.gpus > 0 && n.model.is_some()));
    let all = load_nodes(format!("{DATA}/openb_node_list_all_node.csv")).unwrap();
    assert_eq!(all.len(), 1523);
    assert_eq!(all.iter().filter(|n| n.gpus == 0).count(), 310);
    assert!(all.iter().filter(|n| n.gpus == 0).all(|n| n.model.is_none()), "`nan` model means no GPU");
    assert_eq!(gpu_capacity_milli(&all), 6212 * 1000);
    let node = gpu[0].to_node();
    assert_eq!(node.name(), "openb-node-0000");
}

#[test]
fn bundled_pod_lists_load_with_their_row_counts() {
    for (file, rows) in [
        ("openb_pod_list_default.csv", 8152),
        ("openb_pod_list_gpuspec20.csv", 8152),
        ("openb_pod_list_multigpu20.csv", 8324),
    ] {
        let pods = load_pods(format!("{DATA}/{file}")).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(pods.len(), rows, "{file}");
        for p in &pods {
            assert!(p.gpu_milli <= 1000);
            assert!(p.gpu_milli == 1000 || p.num_gpu <= 1, "{file}: {}", p.name);
        }
    }
    let default = load_pods(format!("{DATA}/openb_pod_list_default.csv")).unwrap();
    assert_eq!(default[1].gpu_milli, 460);
    assert_eq!(default[0].qos.as_deref(), Some("LS"));
    assert_eq!(default[0].phase.as_deref(), Some("Running"));
    assert_eq!(default[1].creation_time, Some(427_061.0));
    assert!(default.iter().all(|p| p.gpu_spec.is_empty()), "the default trace has no GPU model constraints");
    let spec = load_pods(format!("{DATA}/openb_pod_list_gpuspec20.csv")).unwrap();
    assert!(spec.iter().filter(|p| !p.gpu_spec.is_empty()).count() > 500);
    let multi = load_pods(format!("{DATA}/openb_pod_list_multigpu20.csv")).unwrap();
    assert!(multi.iter().all(|p| p.qos.is_none() && p.creation_time.is_none()), "five columns only");
    // The peer run's arrival list has the pod-list columns it needs under other names;
    // a user's file with the same columns in another order loads too.
    let reordered = "gpu_milli,name,num_gpu,memory_mib,cpu_milli\n500,p,1,1024,2000\n";
    let p = &parse_pods("mine.csv", reordered).unwrap()[0];
    assert_eq!((p.name.as_str(), p.cpu_milli, p.num_gpu, p.gpu_milli), ("p", 2000, 1, 500));
}

fn parse_err(r: Result<impl std::fmt::Debug, TraceError>) -> (String, usize, usize, String) {
    match r.unwrap_err() {
        TraceError::Parse { file, line, column, message } => (file, line, column, message),
        e => panic!("expected a parse error, got {e}"),
    }
}

#[test]
fn malformed_rows_name_file_line_and_column() {
    const H: &str = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n";
    let ok = "p0,1000,1024,1,500,\n";
    let cases = [
        (format!("{H}{ok}p1,ten,1024,1,500,\n"), 3, 2, "cpu_milli"),
        (format!("{H}{ok}p1,1000,1024,1\n"), 3, 5, "expected 6 fields"),
        (format!("{H}p1,1000,1024,2,500,\n"), 2, 5, "needs num_gpu 1"),
        (format!("{H}p1,1000,1024,1,1500,\n"), 2, 5, "out of range"),
        (format!("{H}p1,-5,1024,1,500,\n"), 2, 2, "out of range"),
        (format!("{H}p1,1000,1024,1,0,\n"), 2, 5, "disagree"),
        (format!("{H},1000,1024,1,500,\n"), 2, 1, "empty pod name"),
        ("name,cpu_milli,num_gpu,gpu_milli\np,1,1,1\n".to_owned(), 1, 1, "missing column \"memory_mib\""),
        (String::new(), 1, 1, "empty file"),
    ];
    for (text, line, column, msg) in cases {
        let (file, l, c, m) = parse_err(parse_pods("pods.csv", &text));
        assert_eq!((file.as_str(), l, c), ("pods.csv", line, column), "{text:?}: {m}");
        assert!(m.contains(msg), "{m:?} should mention {msg:?}");
    }
    let (_, l, c, m) = parse_err(parse_nodes("nodes.csv", "sn,cpu_milli,memory_mib,gpu,model\nn0,1,1,eight,T4\n"));
    assert_eq!((l, c), (2, 4), "{m}");
    let e = parse_nodes("nodes.csv", "sn,cpu_milli,memory_mib,gpu,model\nn0,1,1,8,T4\n\n\nn1,1,1,x,T4\n").unwrap_err();
    assert_eq!(e.to_string(), "nodes.csv:5:4: gpu: \"x\" is not an integer", "blank lines still count");
    let e = load_pods(format!("{DATA}/no_such_file.csv")).unwrap_err();
    assert!(matches!(&e, TraceError::Io { file, .. } if file.ends_with("no_such_file.csv")), "{e}");
}

#[test]
fn quoted_fields_bom_and_crlf_are_read_as_csv() {
    // A quoted GPU model used to keep its quotes and match no node.
    let text = "\u{feff}name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\r\n\"p0\",1000,1024,1,500,\"V100M16|V100M32\"\r\np1,1000,1024,1,1000,\"V100\"\r\n";
    let pods = parse_pods("quoted.csv", text).unwrap();
    assert_eq!(pods[0].name, "p0");
    assert_eq!(pods[0].gpu_spec.as_slice(), ["V100M16", "V100M32"]);
    assert_eq!(pods[1].gpu_spec.as_slice(), ["V100"]);
    let nodes =
        parse_nodes("n.csv", "\u{feff}sn,cpu_milli,memory_mib,gpu,model\r\n\"n,0\",96000,786432,8,\"V100\"\r\n")
            .unwrap();
    assert_eq!((nodes[0].name.as_str(), nodes[0].model.as_deref()), ("n,0", Some("V100")));
    // Errors after CRLF lines and a quoted field that spans a line still name the right line.
    let e = parse_nodes(
        "n.csv",
        "sn,cpu_milli,memory_mib,gpu,model\r\nn0,1,1,8,T4\r\n\"n\n1\",1,1,8,T4\r\nn2,1,1,x,T4\r\n",
    )
    .unwrap_err();
    assert_eq!(e.to_string(), "n.csv:5:4: gpu: \"x\" is not an integer");
    // An unterminated quote is read to the end of the file, whose row is then short.
    let (_, l, c, m) = parse_err(parse_nodes("n.csv", "sn,cpu_milli,memory_mib,gpu,model\nn0,\"1,1,8,T4\n"));
    assert_eq!((l, c), (2, 3), "{m}");
    // A header-only file loads as an empty list; a blank one is an error.
    assert!(parse_pods("p.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n").unwrap().is_empty());
    let (_, l, c, m) = parse_err(parse_pods("p.csv", "\u{feff}\r\n"));
    assert_eq!((l, c), (1, 1));
    assert!(m.contains("empty file"), "{m}");
    // Invalid UTF-8 names the line and field.
    let bytes = b"sn,cpu_milli,memory_mib,gpu,model\nn0,1,1,8,T\xff4\n";
    let dir = std::env::temp_dir().join(format!("schedkit-utf8-{}.csv", std::process::id()));
    std::fs::write(&dir, bytes).unwrap();
    let e = load_nodes(&dir).unwrap_err();
    std::fs::remove_file(&dir).unwrap();
    assert!(matches!(&e, TraceError::Parse { line: 2, column: 5, .. }), "{e}");
}
