//! HAMi's policies in the trace replay: pods mapped from milli-GPU to gpucores and
//! memory shares schedule, the replay's GPU table books exactly what HAMi chose, and
//! binpack and spread place pods the way their names say.

use std::fmt::Write as _;
use std::sync::Arc;

use schedkit::plugins::gpu_share::{Policy, TypicalPods};
use schedkit::sim::{Experiment, Replay};
use schedkit::trace::{parse_nodes, parse_pods};

const NODES: &str =
    "sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,2,T4\nn1,64000,262144,2,T4\nn2,64000,262144,1,V100M32\n";

#[test]
fn hami_policies_replay_and_book_the_gpu_table() {
    let nodes = parse_nodes("n", NODES).unwrap();
    let pods = parse_pods(
        "p",
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n\
         a,1000,1024,1,500,\nb,1000,1024,1,500,\nc,1000,1024,2,1000,\nd,1000,1024,1,250,V100M32\ne,1000,1024,1,1000,T4\n",
    )
    .unwrap();
    let typical = Arc::new(TypicalPods::from_pods(&pods));
    for policy in Policy::HAMI {
        let mut r = Replay::new(&nodes, None, typical.clone(), policy, 42).unwrap();
        let mut placed = Vec::new();
        let mut devices = Vec::new();
        for p in &pods {
            let s = r.step(p, &p.name);
            placed.push(s.node.map(|i| r.node_name(i)));
            devices.push(s.devices);
        }
        // The replay's GPU table holds exactly the placed pods' demand.
        let demand = [500, 500, 2000, 250, 1000];
        let booked: i64 = placed.iter().zip(demand).filter(|(n, _)| n.is_some()).map(|(_, d)| d).sum();
        assert_eq!(r.used_milli(), booked, "{policy:?}");
        // The V100-only pod went to the V100 node.
        assert_eq!(placed[3], Some("n2"), "{policy:?}");
        match policy {
            // Node binpack, GPU binpack: the second half-GPU pod shares the first's GPU,
            // which leaves whole GPUs for the rest: everything fits.
            Policy::HamiBinpack => {
                assert_eq!((placed[0], devices[0].clone()), (placed[1], devices[1].clone()));
                assert!(placed.iter().all(Option::is_some));
            }
            // Node spread: the second half-GPU pod goes to another node.
            Policy::HamiSpread => assert_ne!(placed[0], placed[1]),
            // Node binpack, GPU spread: same node, other GPU.
            _ => assert!(placed[0] == placed[1] && devices[0] != devices[1]),
        }
    }
}

#[test]
fn hami_time_slices_limit_sharing() {
    // Eleven 5% pods on one GPU: HAMi's default split count (10) refuses the eleventh,
    // which the milli-GPU model would take.
    let nodes = parse_nodes("n", "sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,1,T4\n").unwrap();
    let csv = (0..11).fold(String::from("name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"), |mut s, i| {
        let _ = writeln!(s, "p{i},100,128,1,50");
        s
    });
    let pods = parse_pods("p", &csv).unwrap();
    let typical = Arc::new(TypicalPods::from_pods(&pods));
    let mut r = Replay::new(&nodes, None, typical, Policy::Hami, 1).unwrap();
    let ok = pods.iter().filter(|p| r.step(p, &p.name).node.is_some()).count();
    assert_eq!(ok, 10);
    assert_eq!(r.used_milli(), 500);
}

#[test]
fn experiment_runs_hami_beside_fgd() {
    let nodes = parse_nodes("n", NODES).unwrap();
    let pods = parse_pods("p", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1000,1024,1,300\np1,1000,1024,1,700\n")
        .unwrap();
    let typical = Arc::new(TypicalPods::from_pods(&pods));
    let exp = Experiment { seeds: vec![42], tune: 1.0, profile_every: 0 };
    for policy in [Policy::Fgd, Policy::HamiBinpack, Policy::HamiSpread] {
        let r = exp.run(&nodes, &pods, &typical, policy, |_, _| {}).unwrap();
        assert!(r.scheduled > 0.0 && r.alloc_end > 0.0, "{policy:?}");
    }
    assert_eq!(Policy::parse("HAMi-Binpack"), Some(Policy::HamiBinpack));
    assert_eq!(Policy::HamiSpread.name(), "HAMi-spread");
    assert!(schedkit::sim::paper_means(Policy::Hami).at_130.is_nan());
}
