//! The incremental Score of identical pod-group members (`group_score.rs`) against the
//! full recomputation (the group memo off): the same placements, with plugins that
//! promise each kind of [`NormalizeReuse`] and one whose NormalizeScore depends on the
//! view (and so promises nothing) in the profile beside the defaults.

use std::sync::Arc;

use proptest::prelude::*;

use super::group_score::LastColumns;
use super::{Scheduler, SchedulerConfig};
use crate::framework::{
    CycleState, ExtensionPoints, FeatureGates, Handle, NodeScore, NormalizeReuse, Plugin, PluginRef, PreScorePlugin,
    ScorePlugin, SignFragments, SignPlugin, Status,
};
use crate::model::workload::PodGroup;
use crate::snapshot::{NodeInfo, NodeList, PodInfo};
use crate::testing::{NodeBuilder, PodBuilder};

const RACK: &str = "example.com/rack";

/// Free cpu in tenths of a core, at most 100; no NormalizeScore ([`NormalizeReuse::PerNode`]).
struct Headroom;

impl Plugin for Headroom {
    fn name(&self) -> &str {
        "Headroom"
    }
    fn register(self: Arc<Self>, p: &mut ExtensionPoints) {
        p.score(self.clone()).sign(self);
    }
}

impl ScorePlugin for Headroom {
    fn score(&self, _: &CycleState, _: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        Ok(((node.allocatable().milli_cpu - node.requested().milli_cpu) / 100).clamp(0, 100))
    }
    fn normalize_reuse(&self) -> NormalizeReuse {
        NormalizeReuse::PerNode
    }
}

/// Pods on the node, min-max normalized over the column ([`NormalizeReuse::Column`]).
struct Crowd;

impl Plugin for Crowd {
    fn name(&self) -> &str {
        "Crowd"
    }
    fn register(self: Arc<Self>, p: &mut ExtensionPoints) {
        p.score(self.clone()).sign(self);
    }
}

impl ScorePlugin for Crowd {
    fn score(&self, _: &CycleState, _: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        Ok(i64::try_from(node.pods().len()).unwrap_or(i64::MAX) * 3)
    }
    fn normalize(&self, _: &CycleState, _: &PodInfo, scores: &mut [NodeScore]) -> Status {
        let min = scores.iter().map(|s| s.score).min().unwrap_or(0);
        let max = scores.iter().map(|s| s.score).max().unwrap_or(0);
        for s in scores.iter_mut() {
            s.score = if max > min { 100 * (max - s.score) / (max - min) } else { 0 };
        }
        Status::SUCCESS
    }
    fn normalize_reuse(&self) -> NormalizeReuse {
        NormalizeReuse::Column
    }
}

/// Pods in the whole view, counted at PreScore.
#[derive(Clone)]
struct ViewPods(i64);

/// Its NormalizeScore reads how many pods the view holds (PreScore counts them over
/// the feasible nodes), so assuming a member anywhere moves every node's normalized
/// score: it may promise nothing ([`NormalizeReuse::Never`], the default). `lies`
/// makes it promise [`NormalizeReuse::Column`] anyway, to show the promise matters.
struct ViewDependent {
    lies: bool,
}

impl Plugin for ViewDependent {
    fn name(&self) -> &str {
        "ViewDependent"
    }
    fn register(self: Arc<Self>, p: &mut ExtensionPoints) {
        p.pre_score(self.clone()).score(self.clone()).sign(self);
    }
}

impl PreScorePlugin for ViewDependent {
    fn pre_score(&self, state: &mut CycleState, _: &PodInfo, nodes: NodeList<'_>) -> Status {
        let pods = nodes.iter().map(|n| n.pods().len()).sum::<usize>();
        state.write(ViewPods(i64::try_from(pods).unwrap_or(i64::MAX)));
        Status::SUCCESS
    }
}

impl ScorePlugin for ViewDependent {
    fn score(&self, _: &CycleState, _: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        // The node's own score never changes; only its normalized score moves.
        Ok(node.node().name().bytes().map(i64::from).sum::<i64>() % 7)
    }
    fn normalize(&self, state: &CycleState, _: &PodInfo, scores: &mut [NodeScore]) -> Status {
        let Some(ViewPods(pods)) = state.read::<ViewPods>() else {
            return Status::error("no ViewPods");
        };
        for (k, s) in scores.iter_mut().enumerate() {
            let k = i64::try_from(k).unwrap_or(0);
            s.score = (s.score * 13 + k * pods) % 101;
        }
        Status::SUCCESS
    }
    fn normalize_reuse(&self) -> NormalizeReuse {
        if self.lies { NormalizeReuse::Column } else { NormalizeReuse::Never }
    }
}

/// Scores 100 on even-numbered nodes; PreScore skips it for pods asking more than one
/// cpu. In a gang whose members alternate between the two, the memo's columns hold the
/// previous member's normalized scores for it while the next member skips it: a stale
/// cell must not count.
struct Picky;

impl Plugin for Picky {
    fn name(&self) -> &str {
        "Picky"
    }
    fn register(self: Arc<Self>, p: &mut ExtensionPoints) {
        p.pre_score(self.clone()).score(self.clone()).sign(self);
    }
}

impl PreScorePlugin for Picky {
    fn pre_score(&self, _: &mut CycleState, pod: &PodInfo, _: NodeList<'_>) -> Status {
        if pod.requests_for(false).milli_cpu > 1000 { Status::SKIP } else { Status::SUCCESS }
    }
}

impl ScorePlugin for Picky {
    fn score(&self, _: &CycleState, _: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        Ok(if node.node().name().ends_with(['0', '2', '4', '6', '8']) { 100 } else { 0 })
    }
    fn normalize_reuse(&self) -> NormalizeReuse {
        NormalizeReuse::PerNode
    }
}

impl SignPlugin for Picky {
    fn sign_pod(&self, pod: &PodInfo, fragments: &mut SignFragments) -> Status {
        let big = pod.requests_for(false).milli_cpu > 1000;
        fragments.add("test/picky", |w| {
            w.bool(big);
        });
        Status::SUCCESS
    }
}

/// These three plugins sign every pod alike: their scores read only the node.
macro_rules! signs_everything {
    ($($t:ty),*) => {$(
        impl SignPlugin for $t {
            fn sign_pod(&self, _: &PodInfo, _: &mut SignFragments) -> Status {
                Status::SUCCESS
            }
        }
    )*};
}
signs_everything!(Headroom, Crowd, ViewDependent);

/// A scheduler with the default profile (gates for pod groups, optionally placements)
/// plus the three plugins above, with the given Score weights (ViewDependent honest
/// unless [`Extra::LyingViewDependent`]), and Picky with weight 5 with [`Extra::Picky`].
fn scheduler(rack: bool, weights: [i64; 3], memo: bool, extra: Extra) -> Scheduler {
    let lies = extra == Extra::LyingViewDependent;
    let gates = if rack {
        "GenericWorkload=true,GangScheduling=true,TopologyAwareWorkloadScheduling=true"
    } else {
        "GenericWorkload=true,GangScheduling=true"
    };
    let gates: FeatureGates = gates.parse().unwrap();
    let handle = Handle::default();
    handle.set_feature_gates(gates);
    let mut cfg = crate::plugins::default_profile_config();
    crate::plugins::apply_feature_gates(&mut cfg.plugins, gates);
    let mut registry = crate::plugins::default_registry();
    registry.register("Headroom", |_, _| Ok(Arc::new(Headroom) as Arc<dyn Plugin>)).unwrap();
    registry.register("Crowd", |_, _| Ok(Arc::new(Crowd) as Arc<dyn Plugin>)).unwrap();
    registry.register("ViewDependent", move |_, _| Ok(Arc::new(ViewDependent { lies }) as Arc<dyn Plugin>)).unwrap();
    for (name, w) in ["Headroom", "Crowd", "ViewDependent"].into_iter().zip(weights) {
        cfg.plugins.multi_point.enabled.push(PluginRef { name: name.to_owned(), weight: Some(w) });
    }
    if extra == Extra::Picky {
        registry.register("Picky", |_, _| Ok(Arc::new(Picky) as Arc<dyn Plugin>)).unwrap();
        cfg.plugins.multi_point.enabled.push(PluginRef { name: "Picky".to_owned(), weight: Some(5) });
    }
    let profile = registry.build_profile(&cfg, &handle).unwrap();
    let config = SchedulerConfig { parallelism: 1, ..SchedulerConfig::default() };
    let mut s = Scheduler::builder().handle(handle).profile(profile).config(config).build();
    s.group_switches.memo = memo;
    s.group_switches.placement_early_stop = false;
    s
}

/// A gang: members, milli-cpu each, and whether every other member asks 500m more
/// (so consecutive members sign differently).
type Gang = (u8, u16, bool);

/// Where every pod landed after scheduling `gangs` on nodes of `(cpu, busy pods)`,
/// and how many normalized columns the memo reused.
fn run(nodes: &[(u8, u8)], gangs: &[Gang], rack: bool, weights: [i64; 3], memo: bool) -> (Vec<(String, String)>, u64) {
    run_with(nodes, gangs, rack, weights, memo, Extra::None)
}

/// What [`run_with`] changes in the profile of [`run`].
#[derive(Clone, Copy, PartialEq, Eq)]
enum Extra {
    None,
    /// ViewDependent promises [`NormalizeReuse::Column`] falsely.
    LyingViewDependent,
    /// [`Picky`] is added with weight 5.
    Picky,
}

/// [`run`] with the profile changed as `extra` says.
fn run_with(
    nodes: &[(u8, u8)],
    gangs: &[Gang],
    rack: bool,
    weights: [i64; 3],
    memo: bool,
    extra: Extra,
) -> (Vec<(String, String)>, u64) {
    let mut s = scheduler(rack, weights, memo, extra);
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
    for (g, &(members, milli, mixed)) in gangs.iter().enumerate() {
        let name = format!("g{g}");
        let mut pg = PodGroup::gang("default", &name, i32::from(members));
        if rack {
            pg = pg.with_topology(RACK);
        }
        ev.add_pod_group(pg);
        for m in 0..members {
            let milli = if mixed && m % 2 == 1 { milli + 500 } else { milli };
            let p = PodBuilder::new(&format!("{name}-{m}")).cpu(&format!("{milli}m")).pod_group_name(&name).build();
            ev.add_pod(p).unwrap();
        }
    }
    s.run_until_idle();
    let out = super::pod_group_copies_tests::placed_pods(&s, (0..nodes.len()).map(|i| format!("n{i:02}")));
    (out, s.group_memo_stats.columns_reused)
}

/// A rack gang of identical members on roomy nodes: after the first member, each
/// member changes one node, so the column-promising plugins reuse whole columns and
/// the per-node ones re-normalize one node; the placements equal the full
/// recomputation's.
#[test]
fn identical_members_reuse_normalized_columns() {
    let nodes = [(8, 0), (8, 1), (4, 0), (8, 2), (6, 0), (8, 0), (4, 1), (8, 0), (6, 3)];
    let gangs = [(10, 1000, false), (6, 700, true)];
    for rack in [false, true] {
        let (with, reused) = run(&nodes, &gangs, rack, [1, 2, 3], true);
        let (without, none) = run(&nodes, &gangs, rack, [1, 2, 3], false);
        assert!(!with.is_empty());
        assert_eq!(with, without, "rack {rack}");
        assert!(reused > 0, "rack {rack}: no column was reused");
        assert_eq!(none, 0);
    }
}

/// The same cluster with ViewDependent wrongly promising [`NormalizeReuse::Column`]:
/// its stale normalized column moves members, so the equality above is not vacuous and
/// the default must stay `Never`.
#[test]
fn a_false_column_promise_changes_placements() {
    let nodes = [(8, 0), (8, 1), (4, 0), (8, 2), (6, 0), (8, 0), (4, 1), (8, 0), (6, 3)];
    let gangs = [(10, 1000, false), (6, 700, true)];
    let (lying, _) = run_with(&nodes, &gangs, false, [1, 2, 3], true, Extra::LyingViewDependent);
    let (full, _) = run_with(&nodes, &gangs, false, [1, 2, 3], false, Extra::LyingViewDependent);
    assert_ne!(lying, full);
}

/// A gang whose members alternate between running Picky and skipping it (0.8 and 1.3
/// cpu): the memo's placements equal the full recomputation's, and Picky's even-node
/// preference shows in the small members' placements, so it is not vacuous.
#[test]
fn a_skipped_plugins_stale_column_does_not_count() {
    let nodes = [(8, 2), (8, 0), (8, 2), (8, 0), (8, 2), (8, 0), (8, 2), (8, 0)];
    let gangs = [(8, 800, true)];
    let (with, _) = run_with(&nodes, &gangs, false, [1, 1, 1], true, Extra::Picky);
    let (without, _) = run_with(&nodes, &gangs, false, [1, 1, 1], false, Extra::Picky);
    assert_eq!(with, without);
    let (plain, _) = run_with(&nodes, &gangs, false, [1, 1, 1], false, Extra::None);
    assert_ne!(without, plain, "Picky moved no pod");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
    /// Random clusters, gangs (identical or alternating members), placements and
    /// weights: the incremental Score places every pod where the full recomputation does.
    #[test]
    fn incremental_score_equals_full_recomputation(
        nodes in proptest::collection::vec((1u8..=8, 0u8..=3), 3..14),
        gangs in proptest::collection::vec((1u8..=9, 200u16..=2000, any::<bool>()), 1..4),
        rack in any::<bool>(),
        weights in [1i64..=5, 1i64..=5, 1i64..=5],
    ) {
        let with = run(&nodes, &gangs, rack, weights, true).0;
        let without = run(&nodes, &gangs, rack, weights, false).0;
        prop_assert_eq!(with, without);
        // Members alternating between running and skipping a Score plugin.
        let with = run_with(&nodes, &gangs, rack, weights, true, Extra::Picky).0;
        let without = run_with(&nodes, &gangs, rack, weights, false, Extra::Picky).0;
        prop_assert_eq!(with, without);
    }
}

proptest! {
    /// Any sequence of feasible lists (sampled windows, shrinking lists, a changed node
    /// count): the position-to-row index is the inverse of the latest list, with no row
    /// left behind by an earlier one.
    #[test]
    fn row_index_is_the_inverse_of_the_latest_feasible_list(
        lists in proptest::collection::vec(
            (1usize..=40).prop_flat_map(|n| (Just(n), proptest::sample::subsequence((0..n).collect::<Vec<_>>(), 0..=n))),
            1..12,
        ),
    ) {
        let mut columns = LastColumns::default();
        for (positions, feasible) in &lists {
            columns.set_feasible(feasible, *positions);
            for p in 0..*positions + 2 {
                prop_assert_eq!(columns.row_of(p), feasible.iter().position(|&i| i == p));
            }
        }
    }
}
