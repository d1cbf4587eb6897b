//! The placement loop's early stop (`placement.rs`): with every PlacementScore plugin
//! bounded, a cluster of racks that all fit runs one placement, the rack is drawn
//! uniformly from them, and an unbounded scorer or a group no rack holds whole runs
//! every placement as upstream does.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use parking_lot::Mutex;

use super::{Scheduler, SchedulerConfig};
use crate::framework::{
    CycleState, ExtensionPoints, FeatureGates, FilterPlugin, Handle, PlacementScorePlugin, Plugin, PluginRef,
    PodGroupAssignments, PodGroupCycleState, PodGroupInfo, Status,
};
use crate::model::workload::PodGroup;
use crate::snapshot::{NodeInfo, PodInfo};
use crate::testing::{NodeBuilder, PodBuilder};

const RACK: &str = "example.com/rack";

/// Records the nodes Filter saw: the placements that ran.
struct SeenNodes(Arc<Mutex<BTreeSet<String>>>);

impl Plugin for SeenNodes {
    fn name(&self) -> &str {
        "SeenNodes"
    }
    fn register(self: Arc<Self>, p: &mut ExtensionPoints) {
        p.filter(self);
    }
}

impl FilterPlugin for SeenNodes {
    fn filter(&self, _: &CycleState, _: &PodInfo, node: &NodeInfo) -> Status {
        self.0.lock().insert(node.node().name().to_owned());
        Status::SUCCESS
    }
}

/// A PlacementScore plugin that knows no bound and scores every placement alike.
struct Unbounded;

impl Plugin for Unbounded {
    fn name(&self) -> &str {
        "Unbounded"
    }
    fn register(self: Arc<Self>, p: &mut ExtensionPoints) {
        p.placement_score(self);
    }
}

impl PlacementScorePlugin for Unbounded {
    fn score_placement(
        &self,
        _: &PodGroupCycleState,
        _: &PodGroupInfo,
        _: &PodGroupAssignments,
    ) -> Result<i64, Status> {
        Ok(0)
    }
}

struct Run {
    /// Nodes whose Filter ran.
    seen: BTreeSet<String>,
    /// Where each pod of the group landed.
    placed: BTreeMap<String, String>,
}

/// `racks` racks of `per_rack` nodes with `cpu[r]` cpu on each node of rack `r`, one
/// group of `members` 1-cpu pods with a rack constraint (a gang of all its members,
/// or basic), under `seed`.
fn run(cpu: &[u32], per_rack: usize, members: usize, gang: bool, unbounded: bool, seed: u64) -> Run {
    let handle = Handle::default();
    handle.set_feature_gates(
        "GenericWorkload=true,GangScheduling=true,TopologyAwareWorkloadScheduling=true"
            .parse::<FeatureGates>()
            .unwrap(),
    );
    let filtered = Arc::new(Mutex::new(BTreeSet::new()));
    let mut cfg = crate::plugins::default_profile_config();
    crate::plugins::apply_feature_gates(&mut cfg.plugins, handle.feature_gates());
    let mut registry = crate::plugins::default_registry();
    let s2 = filtered.clone();
    registry.register("SeenNodes", move |_, _| Ok(Arc::new(SeenNodes(s2.clone())) as Arc<dyn Plugin>)).unwrap();
    cfg.plugins.multi_point.enabled.push(PluginRef { name: "SeenNodes".to_owned(), weight: None });
    if unbounded {
        registry.register("Unbounded", |_, _| Ok(Arc::new(Unbounded) as Arc<dyn Plugin>)).unwrap();
        cfg.plugins.multi_point.enabled.push(PluginRef { name: "Unbounded".to_owned(), weight: Some(1) });
    }
    let profile = registry.build_profile(&cfg, &handle).unwrap();
    let config = SchedulerConfig { parallelism: 1, seed, ..SchedulerConfig::default() };
    let mut s = Scheduler::builder().handle(handle).profile(profile).config(config).build();
    for (r, c) in cpu.iter().enumerate() {
        for n in 0..per_rack {
            let node = NodeBuilder::new(&format!("r{r}-n{n}"))
                .cpu(&c.to_string())
                .memory("64Gi")
                .pods(110)
                .label(RACK, &format!("rack-{r}"));
            s.add_node(node.build()).unwrap();
        }
    }
    let ev = s.events();
    let pg = if gang {
        PodGroup::gang("default", "g", i32::try_from(members).unwrap())
    } else {
        PodGroup::basic("default", "g")
    };
    ev.add_pod_group(pg.with_topology(RACK));
    for m in 0..members {
        ev.add_pod(PodBuilder::new(&format!("g-{m}")).cpu("1").memory("1Gi").pod_group_name("g").build()).unwrap();
    }
    s.run_until_idle();
    let nodes = cpu.iter().enumerate().flat_map(|(r, _)| (0..per_rack).map(move |n| format!("r{r}-n{n}")));
    let placed = super::pod_group_copies_tests::placed_pods(&s, nodes).into_iter().collect();
    Run { seen: std::mem::take(&mut *filtered.lock()), placed }
}

fn rack_of(node: &str) -> &str {
    node.split('-').next().unwrap_or(node)
}

/// The racks the group's pods landed in.
fn racks(r: &Run) -> BTreeSet<&str> {
    r.placed.values().map(|n| rack_of(n)).collect()
}

#[test]
fn racks_that_all_fit_run_one_placement() {
    // Six racks of two 4-cpu nodes; a 4-pod gang fits any rack.
    let r = run(&[4; 6], 2, 4, true, false, 7);
    assert_eq!(r.placed.len(), 4, "{:?}", r.placed);
    assert_eq!(racks(&r).len(), 1, "{:?}", r.placed);
    let seen_racks: BTreeSet<&str> = r.seen.iter().map(|n| rack_of(n)).collect();
    assert_eq!(seen_racks, racks(&r), "only the chosen rack ran: {:?}", r.seen);
}

#[test]
fn an_unbounded_scorer_runs_every_placement() {
    let r = run(&[4; 6], 2, 4, true, true, 7);
    assert_eq!(r.placed.len(), 4, "{:?}", r.placed);
    assert_eq!(racks(&r).len(), 1, "{:?}", r.placed);
    assert_eq!(r.seen.len(), 12, "every rack ran: {:?}", r.seen);
}

/// The first rack of a random order that holds the whole gang is a uniform draw among
/// the racks that do: over 200 seeds each of four feasible racks wins about 50 times,
/// and the rack that cannot hold the gang never does.
#[test]
fn the_rack_is_drawn_uniformly_among_those_that_fit() {
    let mut wins: BTreeMap<String, usize> = BTreeMap::new();
    for seed in 0..200 {
        let r = run(&[4, 4, 1, 4, 4], 1, 3, true, false, seed);
        let got = racks(&r);
        assert_eq!(got.len(), 1, "seed {seed}: {:?}", r.placed);
        *wins.entry(got.into_iter().next().unwrap().to_owned()).or_default() += 1;
    }
    assert!(!wins.contains_key("r2"), "{wins:?}");
    assert_eq!(wins.len(), 4, "{wins:?}");
    // Binomial(200, 1/4): mean 50, sd 6.1; 30..=70 is more than 3 sd either side.
    assert!(wins.values().all(|&w| (30..=70).contains(&w)), "{wins:?}");
}

/// A basic group no rack holds whole: no placement reaches the bound, so every rack
/// runs and the one holding the most members wins, as upstream.
#[test]
fn no_rack_holding_the_group_runs_them_all_and_the_fullest_wins() {
    for seed in 0..20 {
        // Racks of one node with 3, 1 and 2 cpu; five 1-cpu pods.
        let r = run(&[3, 1, 2], 1, 5, false, false, seed);
        assert_eq!(r.seen.len(), 3, "seed {seed}: {:?}", r.seen);
        assert_eq!(r.placed.len(), 3, "seed {seed}: {:?}", r.placed);
        assert_eq!(racks(&r), BTreeSet::from(["r0"]), "seed {seed}: {:?}", r.placed);
    }
}
