//! PreScores kept across a pod-group cycle's placements (`group_prescore.rs`) against
//! running PreScore for every member in every placement (the group memo off): the
//! same placements with the default plugins (TaintToleration, NodeAffinity,
//! NodeResourcesFit and BalancedAllocation promise [`PreReuse::Pod`]), and a
//! plugin whose PreScore reads the placement's nodes changes placements when it
//! wrongly promises the same.

use std::sync::Arc;

use proptest::prelude::*;

use super::group_memo::MemoStats;
use super::{Scheduler, SchedulerConfig};
use crate::framework::{
    CycleState, ExtensionPoints, FeatureGates, Handle, NodeScore, Plugin, PluginRef, PreReuse, PreScorePlugin,
    ScorePlugin, SignFragments, SignPlugin, Status,
};
use crate::model::workload::PodGroup;
use crate::snapshot::{NodeInfo, NodeList, PodInfo};
use crate::testing::{NodeBuilder, PodBuilder};

const RACK: &str = "example.com/rack";

/// Pods on the nodes PreScore is given (the placement's feasible nodes).
#[derive(Clone)]
struct PlacementPods(i64);

/// Its PreScore counts the pods on the nodes it is given, and its NormalizeScore mixes
/// that count into every node's score: a PreScore that depends on the placement and on
/// the assumed siblings, which may promise nothing. `lies` makes it promise
/// [`PreReuse::Pod`] anyway.
struct PlacementDependent {
    lies: bool,
}

impl Plugin for PlacementDependent {
    fn name(&self) -> &str {
        "PlacementDependent"
    }
    fn register(self: Arc<Self>, p: &mut ExtensionPoints) {
        p.pre_score(self.clone()).score(self.clone()).sign(self);
    }
}

impl PreScorePlugin for PlacementDependent {
    fn pre_score(&self, state: &mut CycleState, _: &PodInfo, nodes: NodeList<'_>) -> Status {
        let pods = nodes.iter().map(|n| n.pods().len()).sum::<usize>();
        state.write(PlacementPods(i64::try_from(pods).unwrap_or(i64::MAX)));
        Status::SUCCESS
    }
    fn pre_score_reuse(&self, _: &PodInfo) -> PreReuse {
        if self.lies { PreReuse::Pod } else { PreReuse::Never }
    }
}

impl ScorePlugin for PlacementDependent {
    fn score(&self, _: &CycleState, _: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        // The node's own score reads the node only (so the plugin may sign every pod
        // alike); only its normalized score moves with the count.
        Ok(node.node().name().bytes().map(i64::from).sum::<i64>() % 7)
    }
    fn normalize(&self, state: &CycleState, _: &PodInfo, scores: &mut [NodeScore]) -> Status {
        let Some(PlacementPods(pods)) = state.read::<PlacementPods>() else {
            return Status::error("no PlacementPods");
        };
        // The count picks the one node that gets the top score.
        let hit = usize::try_from(*pods).unwrap_or(0) % scores.len().max(1);
        for (k, s) in scores.iter_mut().enumerate() {
            s.score = if k == hit { 100 } else { 0 };
        }
        Status::SUCCESS
    }
}

impl SignPlugin for PlacementDependent {
    fn sign_pod(&self, _: &PodInfo, _: &mut SignFragments) -> Status {
        Status::SUCCESS
    }
}

/// Where every pod landed after scheduling `gangs` (`(members, milli-cpu)`, one rack
/// each) on nodes of `(cpu, busy pods)` in three racks, the default profile plus
/// PlacementDependent (weight `weight`, 0: not enabled), with or without the memo.
fn run(
    nodes: &[(u8, u8)],
    gangs: &[(u8, u16)],
    weight: i64,
    lies: bool,
    memo: bool,
) -> (Vec<(String, String)>, MemoStats) {
    let gates: FeatureGates =
        "GenericWorkload=true,GangScheduling=true,TopologyAwareWorkloadScheduling=true".parse().unwrap();
    let handle = Handle::default();
    handle.set_feature_gates(gates);
    let mut cfg = crate::plugins::default_profile_config();
    crate::plugins::apply_feature_gates(&mut cfg.plugins, gates);
    let mut registry = crate::plugins::default_registry();
    registry
        .register("PlacementDependent", move |_, _| Ok(Arc::new(PlacementDependent { lies }) as Arc<dyn Plugin>))
        .unwrap();
    if weight > 0 {
        cfg.plugins.multi_point.enabled.push(PluginRef { name: "PlacementDependent".to_owned(), weight: Some(weight) });
    }
    let profile = registry.build_profile(&cfg, &handle).unwrap();
    let config = SchedulerConfig { parallelism: 1, ..SchedulerConfig::default() };
    let mut s = Scheduler::builder().handle(handle).profile(profile).config(config).build();
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
        ev.add_pod_group(PodGroup::gang("default", &name, i32::from(members)).with_topology(RACK));
        for m in 0..members {
            let p = PodBuilder::new(&format!("{name}-{m}")).cpu(&format!("{milli}m")).pod_group_name(&name).build();
            ev.add_pod(p).unwrap();
        }
    }
    s.run_until_idle();
    let out = super::pod_group_copies_tests::placed_pods(&s, (0..nodes.len()).map(|i| format!("n{i:02}")));
    (out, s.group_memo_stats)
}

const NODES: [(u8, u8); 12] =
    [(8, 0), (8, 1), (4, 0), (8, 2), (6, 0), (8, 0), (4, 1), (8, 0), (6, 3), (8, 1), (6, 0), (4, 2)];
const GANGS: [(u8, u16); 3] = [(6, 1000), (4, 700), (5, 1500)];

/// The default plugins' PreScores run once per member and are reused in its other
/// placements; the placements are those of running every PreScore every time, also
/// beside an honest plugin whose PreScore reads the placement.
#[test]
fn kept_pre_scores_give_the_same_placements() {
    for weight in [0, 3] {
        let (with, stats) = run(&NODES, &GANGS, weight, false, true);
        let (without, none) = run(&NODES, &GANGS, weight, false, false);
        let members = with.iter().filter(|(p, _)| p.starts_with('g')).count();
        assert_eq!(members, GANGS.iter().map(|g| usize::from(g.0)).sum::<usize>(), "{with:?}");
        assert_eq!(with, without, "weight {weight}");
        assert!(stats.pre_reused > 0, "{stats:?}");
        assert_eq!(none.pre_reused, 0);
    }
}

/// PlacementDependent (weighted to decide) wrongly promising [`PreReuse::Pod`], on
/// racks where only the second can hold the gang: the first two members reach PreScore
/// in the first rack, and the count kept from there (no pods) picks other nodes in the
/// second rack than its own count (one busy pod) does. So the equality above is not
/// vacuous and the default must stay `Never`.
#[test]
fn a_false_pre_score_promise_changes_placements() {
    // Racks by position % 3: r0 and r2 have three 1-cpu nodes (three members fit, the
    // gang of four does not), r1 three 8-cpu nodes, one with a busy pod.
    let nodes: Vec<(u8, u8)> = (0..9u8).map(|i| if i % 3 == 1 { (8, u8::from(i == 1)) } else { (1, 0) }).collect();
    let gangs = [(4, 1000)];
    let (lying, _) = run(&nodes, &gangs, 20, true, true);
    let (full, _) = run(&nodes, &gangs, 20, true, false);
    let (honest, _) = run(&nodes, &gangs, 20, false, true);
    assert_eq!(honest, full);
    assert_eq!(full.iter().filter(|(p, _)| p.starts_with('g')).count(), 4, "{full:?}");
    assert_ne!(lying, full);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
    /// Random clusters and rack gangs, with and without the honest placement-reading
    /// plugin: kept PreScores place every pod where running every PreScore does.
    #[test]
    fn kept_pre_scores_equal_running_every_pre_score(
        nodes in proptest::collection::vec((1u8..=8, 0u8..=3), 3..14),
        gangs in proptest::collection::vec((1u8..=9, 200u16..=2000), 1..4),
        weight in 0i64..=4,
    ) {
        prop_assert_eq!(run(&nodes, &gangs, weight, false, true).0, run(&nodes, &gangs, weight, false, false).0);
    }
}
