//! Pod-by-pod differential test against a run of the FGD paper's own simulator
//! (`examples/data/peer_default_tune1.3_seed42/`, see its README): replaying the peer's
//! arrival order with its tie-break node names, schedkit's FGD must make the same
//! placement (node and GPU index) for every pod, and the cluster's allocated GPU and
//! fragmentation after each pod must match (fragmentation to within rounding).
//!
//! Slow in debug builds: `cargo test --release --test trace_peer -- --ignored`.

use std::sync::Arc;

use schedkit::plugins::gpu_share::{Policy, TypicalPods};
use schedkit::sim::Replay;
use schedkit::trace::{TracePod, load_nodes, load_pods};

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/data");

fn csv(path: &str) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines().skip(1).filter(|l| !l.is_empty()).map(|l| l.split(',').map(str::to_owned).collect()).collect()
}

#[test]
#[ignore = "release mode: cargo test --release --test trace_peer -- --ignored"]
fn fgd_matches_the_authors_simulator_pod_by_pod() {
    let nodes = load_nodes(format!("{DATA}/openb_node_list_gpu_node.csv")).unwrap();
    let trace = load_pods(format!("{DATA}/openb_pod_list_default.csv")).unwrap();
    let typical = Arc::new(TypicalPods::from_pods(&trace));
    assert_eq!(typical.pods().len(), 35, "the peer run's target workload has 35 typical pods");

    let prefix = csv(&format!("{DATA}/peer_default_tune1.3_seed42/node_name_prefix.csv"));
    let sim_name: std::collections::HashMap<String, String> =
        prefix.iter().map(|r| (r[0].clone(), r[2].clone())).collect();
    let names: Vec<String> = nodes.iter().map(|n| sim_name[&n.name].clone()).collect();

    let order = csv(&format!("{DATA}/peer_default_tune1.3_seed42/pod_order.csv"));
    let placements = csv(&format!("{DATA}/peer_default_tune1.3_seed42/placements_FGD.csv"));
    assert_eq!(order.len(), placements.len());

    let mut replay = Replay::new(&nodes, Some(&names), typical, Policy::Fgd, 42).unwrap();
    let mut mismatches = Vec::new();
    let mut worst_frag: f64 = 0.0;
    for (o, p) in order.iter().zip(&placements) {
        let pod = TracePod {
            name: o[1].clone(),
            cpu_milli: o[3].parse().unwrap(),
            memory_mib: o[4].parse().unwrap(),
            num_gpu: o[5].parse().unwrap(),
            gpu_milli: o[6].parse().unwrap(),
            gpu_spec: o
                .get(7)
                .filter(|s| !s.is_empty())
                .map(|s| s.split('|').map(str::to_owned).collect())
                .unwrap_or_default(),
            qos: None,
            phase: None,
            creation_time: None,
            deletion_time: None,
            scheduled_time: None,
        };
        let step = replay.step(&pod, &o[1]);
        let (outcome, node) = match step.node {
            Some(i) => ("scheduled", nodes[i].name.clone()),
            None => ("failed", String::new()),
        };
        let gpus = step.devices.iter().map(u8::to_string).collect::<Vec<_>>().join("-");
        let used: i64 = p[5].parse().unwrap();
        let arrived: i64 = p[6].parse().unwrap();
        let frag: f64 = p[7].parse().unwrap();
        worst_frag = worst_frag.max((step.frag_milli - frag).abs());
        if outcome != p[2] || node != p[3] || gpus != p[4] || step.used_milli != used || step.arrived_milli != arrived {
            mismatches.push(format!(
                "pod {} ({}): peer {} {} [{}] used {used}; schedkit {outcome} {node} [{gpus}] used {}",
                p[0], p[1], p[2], p[3], p[4], step.used_milli
            ));
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} of {} placements differ; first ones:\n{}",
        mismatches.len(),
        order.len(),
        mismatches.iter().take(10).cloned().collect::<Vec<_>>().join("\n")
    );
    assert!(worst_frag < 0.01, "fragmentation differs by up to {worst_frag} milli-GPU");
}
