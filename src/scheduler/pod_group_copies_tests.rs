//! The pod-group cycle works on one snapshot in place: members are assumed into it
//! and undone in it, so scheduling a group copies no whole snapshot, however many
//! members it has (a cycle that copied the snapshot per member or per placement was
//! quadratic in the group size).

use super::{Scheduler, SchedulerConfig};
use crate::framework::{FeatureGates, Handle, Profile};
use crate::model::workload::PodGroup;
use crate::snapshot::copies_on_this_thread;
use crate::testing::{NodeBuilder, PodBuilder};

const RACK: &str = "example.com/rack";

/// Every `(pod, node)` pair bound on the given nodes, sorted: the placements the
/// memo-on and memo-off runs of these tests compare.
pub(super) fn placed_pods(s: &Scheduler, nodes: impl Iterator<Item = String>) -> Vec<(String, String)> {
    let cache = s.cache().lock();
    let mut out: Vec<(String, String)> = nodes
        .flat_map(|node| {
            let pods = cache.node_info(&node).map(|n| n.pods().to_vec()).unwrap_or_default();
            pods.into_iter().map(move |p| (p.pod.metadata.name.clone(), node.clone()))
        })
        .collect();
    out.sort();
    out
}

fn cluster(gates: &str, nodes: usize) -> Scheduler {
    let handle = Handle::default();
    handle.set_feature_gates(gates.parse::<FeatureGates>().unwrap());
    let profile = Profile::kube_default(&handle);
    let cfg = SchedulerConfig { parallelism: 1, ..SchedulerConfig::default() };
    let s = Scheduler::builder().handle(handle).profile(profile).config(cfg).build();
    for i in 0..nodes {
        let node = NodeBuilder::new(&format!("node-{i:03}"))
            .cpu("4")
            .memory("16Gi")
            .pods(110)
            .label(RACK, &format!("rack-{}", i / 8));
        s.add_node(node.build()).unwrap();
    }
    s
}

/// Schedules one gang of `members` 1-cpu pods (optionally in one rack) and returns
/// how many whole snapshots were copied meanwhile.
fn copies_for_gang(gates: &str, members: usize, rack: bool) -> u64 {
    let mut s = cluster(gates, 32);
    let mut pg = PodGroup::gang("default", "g", i32::try_from(members).unwrap());
    if rack {
        pg = pg.with_topology(RACK);
    }
    let ev = s.events();
    ev.add_pod_group(pg);
    for i in 0..members {
        ev.add_pod(PodBuilder::new(&format!("g-{i}")).cpu("1").pod_group_name("g").build()).unwrap();
    }
    let before = copies_on_this_thread();
    let run = s.run_until_idle();
    let copies = copies_on_this_thread() - before;
    assert_eq!(run.bound, members, "{run:?}");
    copies
}

#[test]
fn group_cycle_copies_no_snapshot_per_member() {
    let gates = "GenericWorkload=true,GangScheduling=true";
    for members in [2, 8, 24] {
        assert_eq!(copies_for_gang(gates, members, false), 0, "{members} members");
    }
}

#[test]
fn placement_cycle_copies_no_snapshot_per_member_or_placement() {
    // Four racks of 8 nodes (32 cpu): every rack is a placement.
    let gates = "GenericWorkload=true,GangScheduling=true,TopologyAwareWorkloadScheduling=true";
    for members in [2, 6, 12] {
        assert_eq!(copies_for_gang(gates, members, true), 0, "{members} members");
    }
}

#[test]
fn placement_cycle_signs_each_member_once() {
    // Four racks of 8 nodes, a 6-pod gang: 4 placements run every member, but each
    // member's memo keys (Filter and Score) are computed once for the whole cycle.
    let gates = "GenericWorkload=true,GangScheduling=true,TopologyAwareWorkloadScheduling=true";
    let mut s = cluster(gates, 32);
    let ev = s.events();
    ev.add_pod_group(PodGroup::gang("default", "g", 6).with_topology(RACK));
    for i in 0..6 {
        ev.add_pod(PodBuilder::new(&format!("g-{i}")).cpu("1").pod_group_name("g").build()).unwrap();
    }
    let run = s.run_until_idle();
    assert_eq!(run.bound, 6, "{run:?}");
    let stats = s.group_memo_stats;
    assert!(stats.filter_hits > 0, "{stats:?}");
    assert!(stats.keys_signed > 0 && stats.keys_signed <= 2 * 6, "{stats:?}");
}

/// Where every member of each gang landed, and each gang's status, after scheduling
/// `gangs` on a cluster of mixed node sizes and already busy nodes, with or without
/// the group memo.
fn placements(gates: &str, rack: bool, memo: bool) -> (Vec<(String, String)>, super::group_memo::MemoStats) {
    let handle = Handle::default();
    handle.set_feature_gates(gates.parse::<FeatureGates>().unwrap());
    let profile = Profile::kube_default(&handle);
    let cfg = SchedulerConfig { parallelism: 1, ..SchedulerConfig::default() };
    let mut s = Scheduler::builder().handle(handle).profile(profile).config(cfg).build();
    s.group_switches.memo = memo;
    s.group_switches.placement_early_stop = false;
    for i in 0..48 {
        let cpu = ["2", "4", "8"][i % 3];
        let node = NodeBuilder::new(&format!("node-{i:03}"))
            .cpu(cpu)
            .memory("16Gi")
            .pods(110)
            .zone(["a", "b"][i % 2])
            .label(RACK, &format!("rack-{}", i / 12));
        s.add_node(node.build()).unwrap();
    }
    let ev = s.events();
    // Some nodes already busy, unevenly.
    for i in 0..10 {
        let p = PodBuilder::new(&format!("busy-{i}"))
            .cpu("1")
            .memory(&format!("{}Gi", 1 + i % 4))
            .node_name(&format!("node-{:03}", i * 3))
            .build();
        ev.add_pod(p).unwrap();
    }
    // Gangs of different shapes: identical members within a gang, and one gang whose
    // members differ (two request sizes).
    let shapes: [(&str, usize, &str); 4] = [("a", 12, "1"), ("b", 20, "500m"), ("c", 6, "2"), ("d", 30, "1")];
    for (name, n, cpu) in shapes {
        let mut pg = PodGroup::gang("default", name, i32::try_from(n).unwrap());
        if rack {
            pg = pg.with_topology(RACK);
        }
        ev.add_pod_group(pg);
        for i in 0..n {
            let cpu = if name == "c" && i % 2 == 1 { "1500m" } else { cpu };
            ev.add_pod(PodBuilder::new(&format!("{name}-{i}")).cpu(cpu).memory("1Gi").pod_group_name(name).build())
                .unwrap();
        }
    }
    s.run_until_idle();
    let out = placed_pods(&s, (0..48).map(|i| format!("node-{i:03}")));
    (out, s.group_memo_stats)
}

/// The memo changes nothing: the same placements with and without it, for gangs
/// without and with a rack constraint; and it is used.
#[test]
fn group_memo_gives_the_same_placements() {
    for (gates, rack) in [
        ("GenericWorkload=true,GangScheduling=true", false),
        ("GenericWorkload=true,GangScheduling=true,TopologyAwareWorkloadScheduling=true", true),
    ] {
        let (with, stats) = placements(gates, rack, true);
        let (without, none) = placements(gates, rack, false);
        assert!(!with.is_empty());
        assert_eq!(with, without, "{gates}");
        assert!(stats.filter_hits > 0 && stats.score_hits > 0, "{gates}: {stats:?}");
        assert_eq!(none, super::group_memo::MemoStats::default());
    }
}

/// Random small clusters and gangs: the memo never changes where a member lands or
/// whether its gang is scheduled.
mod memo_property {
    use proptest::prelude::*;

    use super::*;

    /// `(cpu per node, pods already on it)` per node; `(members, milli-cpu)` per gang.
    fn run(nodes: &[(u8, u8)], gangs: &[(u8, u16)], rack: bool, memo: bool) -> Vec<(String, String)> {
        let gates = if rack {
            "GenericWorkload=true,GangScheduling=true,TopologyAwareWorkloadScheduling=true"
        } else {
            "GenericWorkload=true,GangScheduling=true"
        };
        let handle = Handle::default();
        handle.set_feature_gates(gates.parse::<FeatureGates>().unwrap());
        let profile = Profile::kube_default(&handle);
        let cfg = SchedulerConfig { parallelism: 1, ..SchedulerConfig::default() };
        let mut s = Scheduler::builder().handle(handle).profile(profile).config(cfg).build();
        s.group_switches.memo = memo;
        s.group_switches.placement_early_stop = false;
        for (i, &(cpu, _)) in nodes.iter().enumerate() {
            let node = NodeBuilder::new(&format!("n{i:02}"))
                .cpu(&cpu.to_string())
                .memory("8Gi")
                .pods(110)
                .label(RACK, &format!("r{}", i % 3));
            s.add_node(node.build()).unwrap();
        }
        let ev = s.events();
        for (i, &(_, busy)) in nodes.iter().enumerate() {
            for b in 0..busy {
                let p = PodBuilder::new(&format!("busy-{i}-{b}")).cpu("300m").node_name(&format!("n{i:02}")).build();
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
        placed_pods(&s, (0..nodes.len()).map(|i| format!("n{i:02}")))
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
        #[test]
        fn memo_never_changes_a_placement(
            nodes in proptest::collection::vec((1u8..=6, 0u8..=3), 3..14),
            gangs in proptest::collection::vec((1u8..=9, 200u16..=2500), 1..4),
            rack in any::<bool>(),
        ) {
            prop_assert_eq!(run(&nodes, &gangs, rack, true), run(&nodes, &gangs, rack, false));
        }
    }
}
