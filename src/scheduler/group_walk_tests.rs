//! The pod-group cycle's shortcuts against full recomputation (the group memo off):
//! members that run without the memo because it cannot answer them
//! (`GroupMemo::plan`, sampled walks over disjoint stretches of a large cluster), and
//! Filter walks replayed from the previous identical member (`group_walk.rs`). Each
//! must give the same placements, node by node, as every member walking and scoring
//! afresh.

use proptest::prelude::*;

use super::group_memo::MemoStats;
use super::{Scheduler, SchedulerConfig};
use crate::framework::{FeatureGates, Handle, Profile};
use crate::model::workload::PodGroup;
use crate::testing::{NodeBuilder, PodBuilder};

const RACK: &str = "example.com/rack";

/// A cluster of `nodes` (`(cpu, pods already on it)` each) in racks of `rack_size`,
/// scored over `pct` percent of the nodes (0: adaptive); `gangs` (`(members,
/// milli-cpu)`) scheduled with or without the memo, optionally one rack per gang.
/// Returns where every pod landed and the memo's counters.
fn run(
    nodes: &[(u8, u8)],
    rack_size: usize,
    pct: u32,
    gangs: &[(u8, u16)],
    rack: bool,
    memo: bool,
) -> (Vec<(String, String)>, MemoStats) {
    let gates = if rack {
        "GenericWorkload=true,GangScheduling=true,TopologyAwareWorkloadScheduling=true"
    } else {
        "GenericWorkload=true,GangScheduling=true"
    };
    let handle = Handle::default();
    handle.set_feature_gates(gates.parse::<FeatureGates>().unwrap());
    let profile = Profile::kube_default(&handle);
    let cfg = SchedulerConfig { parallelism: 1, percentage_of_nodes_to_score: pct, ..SchedulerConfig::default() };
    let mut s = Scheduler::builder().handle(handle).profile(profile).config(cfg).build();
    s.group_switches.memo = memo;
    s.group_switches.placement_early_stop = false;
    for (i, &(cpu, _)) in nodes.iter().enumerate() {
        let node = NodeBuilder::new(&format!("n{i:03}"))
            .cpu(&cpu.to_string())
            .memory("8Gi")
            .pods(110)
            .label(RACK, &format!("r{}", i / rack_size));
        s.add_node(node.build()).unwrap();
    }
    let ev = s.events();
    for (i, &(_, busy)) in nodes.iter().enumerate() {
        for b in 0..busy {
            let p = PodBuilder::new(&format!("busy-{i}-{b}")).cpu("400m").node_name(&format!("n{i:03}")).build();
            ev.add_pod(p).unwrap();
        }
    }
    for (g, &(members, milli)) in gangs.iter().enumerate() {
        let name = format!("g{g}");
        let mut pg = PodGroup::gang("default", &name, i32::from(members));
        if rack {
            pg = pg.with_topology(RACK);
        }
        ev.add_pod_group(pg);
        for m in 0..members {
            let p = PodBuilder::new(&format!("{name}-{m}")).cpu(&format!("{milli}m")).pod_group_name(&name).build();
            ev.add_pod(p).unwrap();
        }
    }
    s.run_until_idle();
    let out = super::pod_group_copies_tests::placed_pods(&s, (0..nodes.len()).map(|i| format!("n{i:03}")));
    (out, s.group_memo_stats)
}

/// 250 uniform nodes sampled 100 at a time: whether a 3-pod gang's members see
/// disjoint stretches or a 4-pod gang's come round to the first member's nodes, a
/// member whose walk samples runs without the memo (the batched paths cost less than
/// its lookups); with every node filtered the same 4-pod gang uses it. Placements
/// are those without the memo every time.
#[test]
fn sampled_members_run_without_the_memo() {
    let nodes = vec![(4, 0); 250];
    for members in [3u8, 4] {
        let (with, stats) = run(&nodes, 250, 10, &[(members, 1000)], false, true);
        let (without, _) = run(&nodes, 250, 10, &[(members, 1000)], false, false);
        assert_eq!(with.iter().filter(|(p, _)| p.starts_with("g0-")).count(), usize::from(members));
        assert_eq!(with, without);
        assert_eq!(stats.members_plain, u64::from(members), "{stats:?}");
        assert_eq!((stats.filter_hits, stats.score_hits, stats.walks_replayed), (0, 0, 0), "{stats:?}");
    }

    let (with, stats) = run(&nodes, 250, 100, &[(4, 1000)], false, true);
    let (without, _) = run(&nodes, 250, 100, &[(4, 1000)], false, false);
    assert_eq!(with, without);
    assert_eq!(stats.members_plain, 0, "{stats:?}");
    assert!(stats.filter_hits > 0 || stats.walks_replayed > 0, "{stats:?}");
}

/// Racks of 10 nodes, some full after a few members: every member after a rack's
/// first replays the walk (refiltering the nodes members were assumed onto), and
/// the placements are those of full recomputation.
#[test]
fn identical_members_replay_the_walk() {
    let nodes: Vec<(u8, u8)> = (0..40u8).map(|i| (1 + i % 3, i % 2)).collect();
    let gangs = [(8, 1000), (5, 600)];
    let (with, stats) = run(&nodes, 10, 0, &gangs, true, true);
    let (without, none) = run(&nodes, 10, 0, &gangs, true, false);
    assert_eq!(with.iter().filter(|(p, _)| p.starts_with('g')).count(), 13, "{with:?}");
    assert_eq!(with, without);
    assert!(stats.walks_replayed > 0 && stats.filter_hits > 0, "{stats:?}");
    assert_eq!(none, MemoStats::default());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// Large sampled clusters: gangs of 1 to 5 members with the memo (members that
    /// cannot hit skip it, the rest use it) place exactly as without it.
    #[test]
    fn skipping_the_memo_equals_full_recomputation(
        nodes in proptest::collection::vec((1u8..=4, 0u8..=2), 150..260),
        gangs in proptest::collection::vec((1u8..=5, 300u16..=2500), 1..4),
        pct in prop_oneof![Just(0u32), Just(10), Just(30)],
    ) {
        prop_assert_eq!(run(&nodes, 50, pct, &gangs, false, true).0, run(&nodes, 50, pct, &gangs, false, false).0);
    }

    /// Small racks, with and without a rack constraint, nodes filling up: replayed
    /// walks place exactly as full walks.
    #[test]
    fn replayed_walks_equal_full_recomputation(
        nodes in proptest::collection::vec((1u8..=4, 0u8..=3), 4..40),
        rack_size in 2usize..12,
        gangs in proptest::collection::vec((1u8..=10, 200u16..=2500), 1..4),
        rack in any::<bool>(),
    ) {
        prop_assert_eq!(
            run(&nodes, rack_size, 0, &gangs, rack, true).0,
            run(&nodes, rack_size, 0, &gangs, rack, false).0
        );
    }
}
