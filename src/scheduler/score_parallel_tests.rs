//! The parallel Score phase (every plugin in one region over chunks of nodes, then
//! NormalizeScore and the totals on one thread) against the serial loop: the same
//! weighted totals, and the same error when a plugin fails.

use std::sync::Arc;

use proptest::prelude::*;

use super::{Scheduler, SchedulerConfig};
use crate::framework::{CycleState, ExtensionPoints, Handle, Plugin, Profile, ScorePlugin, Status, runtime};
use crate::model::TaintEffect;
use crate::plugins::image_locality::ImageLocality;
use crate::plugins::inter_pod_affinity::{InterPodAffinity, InterPodAffinityArgs};
use crate::plugins::node_affinity::NodeAffinity;
use crate::plugins::node_resources::{BalancedAllocation, BalancedAllocationArgs, Fit, FitArgs};
use crate::plugins::pod_topology_spread::{PodTopologySpread, PodTopologySpreadArgs};
use crate::plugins::taint_toleration::TaintToleration;
use crate::snapshot::{Cache, NodeInfo, NodeList, PodInfo, Snapshot};
use crate::testing::{NodeBuilder, PodBuilder};

/// One random node: CPU cores, memory GiB, CPU in use (millicores), zone, a
/// PreferNoSchedule taint.
type NodeShape = (u8, u8, u16, u8, bool);

fn snapshot(nodes: &[NodeShape]) -> Snapshot {
    let mut cache = Cache::new();
    for (i, &(cpu, mem, used, zone, tainted)) in nodes.iter().enumerate() {
        let name = format!("n{i:04}");
        let mut b = NodeBuilder::new(&name)
            .cpu(&cpu.to_string())
            .memory(&format!("{mem}Gi"))
            .pods(110)
            .zone(&format!("zone-{}", zone % 3));
        if tainted {
            b = b.taint("spot", "yes", TaintEffect::PreferNoSchedule);
        }
        cache.add_node(b.build()).unwrap();
        if used > 0 {
            let p = PodBuilder::new(&format!("used-{i}")).label("app", "web").cpu(&format!("{used}m")).node_name(&name);
            cache.add_pod(Arc::new(PodInfo::new(p.build()).unwrap())).unwrap();
        }
    }
    let mut snap = Snapshot::default();
    cache.update_snapshot(&mut snap);
    snap
}

/// A Score plugin that fails on one node and scores the others by name.
struct Failing {
    name: &'static str,
    at: Option<usize>,
}

impl Plugin for Failing {
    fn name(&self) -> &str {
        self.name
    }
    fn register(self: Arc<Self>, p: &mut ExtensionPoints) {
        p.score(self);
    }
}

impl ScorePlugin for Failing {
    fn score(&self, _: &CycleState, _: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        let i: usize = node.name().as_str()[1..].parse().unwrap();
        if Some(i) == self.at {
            return Err(Status::error(format!("{} broken on node {i}", self.name)));
        }
        Ok((i % 101) as i64)
    }
}

fn profile(fail_a: Option<usize>, fail_b: Option<usize>) -> Profile {
    let handle = Handle::default();
    Profile::builder("p")
        .weighted(TaintToleration, 3)
        .weighted(NodeAffinity::default(), 2)
        .plugin(Fit::new(&FitArgs::default()).unwrap())
        .plugin(BalancedAllocation::new(&BalancedAllocationArgs::default()).unwrap())
        .plugin(Failing { name: "FailsFirst", at: fail_a })
        .weighted(ImageLocality::new(handle.clone()), 1)
        .weighted(PodTopologySpread::new(PodTopologySpreadArgs::default(), &handle).unwrap(), 2)
        .weighted(InterPodAffinity::new(InterPodAffinityArgs::default(), &handle).unwrap(), 2)
        .plugin(Failing { name: "FailsLater", at: fail_b })
        .build()
        .unwrap()
}

fn pod(milli_cpu: u32) -> PodInfo {
    let p = PodBuilder::new("p").label("app", "web").cpu(&format!("{milli_cpu}m")).memory("1Gi").toleration(
        "spot",
        Some("yes"),
        Some(TaintEffect::PreferNoSchedule),
    );
    PodInfo::new(p.build()).unwrap()
}

/// PreScore and Score over every node on `threads` threads: the totals, or the error.
fn scored(profile: &Arc<Profile>, pod: &PodInfo, snap: &Snapshot, threads: usize) -> Result<Vec<i64>, String> {
    let cfg =
        SchedulerConfig { parallelism: threads, parallel_min_nodes: 0, parallel_min_work: 0, ..Default::default() };
    let mut s = Scheduler::builder().profile((**profile).clone()).config(cfg).build();
    let mut state = CycleState::new();
    runtime::run_pre_filter(profile, &mut state, pod, snap).map_err(|e| e.to_string())?;
    s.bufs.feasible = (0..snap.len()).collect();
    let st = runtime::run_pre_score(profile, &mut state, pod, NodeList::new(snap, &s.bufs.feasible), None);
    if !st.is_success() {
        return Err(st.to_string());
    }
    s.score(profile, &state, pod, snap, None).map_err(|e| e.to_string())?;
    Ok(std::mem::take(&mut s.bufs.totals))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// Random clusters and pods, with one or two plugins failing on random nodes: two
    /// threads give the serial loop's totals, or its error.
    #[test]
    fn parallel_score_equals_serial(
        nodes in proptest::collection::vec((1u8..=16, 1u8..=64, 0u16..4000, any::<u8>(), proptest::bool::weighted(0.3)), 1..500),
        milli_cpu in 100u32..4000,
        fail_a in proptest::option::weighted(0.15, 0usize..500),
        fail_b in proptest::option::weighted(0.15, 0usize..500),
    ) {
        let snap = snapshot(&nodes);
        let pod = pod(milli_cpu);
        let profile = Arc::new(profile(fail_a, fail_b));
        let serial = scored(&profile, &pod, &snap, 1);
        let parallel = scored(&profile, &pod, &snap, 2);
        prop_assert_eq!(&parallel, &serial);
        if let Ok(t) = &serial {
            prop_assert_eq!(t.len(), snap.len());
        }
    }
}

/// The error of the first failing plugin wins even when a later plugin fails on an
/// earlier node, and within a plugin the first failing node's.
#[test]
fn first_failing_plugin_and_node_win() {
    let nodes: Vec<NodeShape> = (0..300).map(|i| (4, 8, 0, (i % 3) as u8, false)).collect();
    let snap = snapshot(&nodes);
    let pod = pod(500);
    let profile = Arc::new(profile(Some(250), Some(3)));
    for threads in [1, 2] {
        let err = scored(&profile, &pod, &snap, threads).unwrap_err();
        assert!(err.contains("FailsFirst broken on node 250"), "{threads} threads: {err}");
    }
    let profile = Arc::new(profile_failing_twice());
    for threads in [1, 2] {
        let err = scored(&profile, &pod, &snap, threads).unwrap_err();
        assert!(err.contains("FailsFirst broken on node 40"), "{threads} threads: {err}");
    }
    let ok = Arc::new(self::profile(None, None));
    assert_eq!(scored(&ok, &pod, &snap, 2).unwrap(), scored(&ok, &pod, &snap, 1).unwrap());
}

/// Two failing copies over the same plugin name: nodes 40 and 290 (two chunks).
fn profile_failing_twice() -> Profile {
    struct Twice;
    impl Plugin for Twice {
        fn name(&self) -> &str {
            "FailsFirst"
        }
        fn register(self: Arc<Self>, p: &mut ExtensionPoints) {
            p.score(self);
        }
    }
    impl ScorePlugin for Twice {
        fn score(&self, _: &CycleState, _: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
            let i: usize = node.name().as_str()[1..].parse().unwrap();
            if i == 40 || i == 290 {
                return Err(Status::error(format!("FailsFirst broken on node {i}")));
            }
            Ok(1)
        }
    }
    Profile::builder("p").plugin(Fit::new(&FitArgs::default()).unwrap()).plugin(Twice).build().unwrap()
}

/// The plain per-node path: PreScore, then each plugin's own per-node
/// [`ScorePlugin::score`] node by node, NormalizeScore with its range check, and the
/// weighted sum — none of the Score phase's batching, buffers or fused loops.
fn per_node(profile: &Profile, pod: &PodInfo, snap: &Snapshot) -> Vec<i64> {
    let mut state = CycleState::new();
    runtime::run_pre_filter(profile, &mut state, pod, snap).unwrap();
    let all: Vec<usize> = (0..snap.len()).collect();
    assert!(runtime::run_pre_score(profile, &mut state, pod, NodeList::new(snap, &all), None).is_success());
    let mut totals = vec![0i64; snap.len()];
    for (pi, sp) in profile.score.iter().enumerate() {
        if state.skips_score(pi) {
            continue;
        }
        let mut scores: Vec<crate::framework::NodeScore> = snap
            .nodes()
            .iter()
            .map(|n| crate::framework::NodeScore { name: n.name(), score: sp.plugin.score(&state, pod, n).unwrap() })
            .collect();
        runtime::run_normalize(sp, &state, pod, &mut scores, None).unwrap();
        for (t, s) in totals.iter_mut().zip(&scores) {
            *t += s.score * sp.weight;
        }
    }
    totals
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// The Score phase (batched `score_nodes`, names written from the nodes, the
    /// unrolled weighted sum; serial and on two threads) gives the plain per-node
    /// path's totals on random clusters and pods.
    #[test]
    fn score_phase_equals_per_node_path(
        nodes in proptest::collection::vec((1u8..=16, 1u8..=64, 0u16..4000, any::<u8>(), proptest::bool::weighted(0.3)), 1..300),
        milli_cpu in 100u32..4000,
    ) {
        let snap = snapshot(&nodes);
        let pod = pod(milli_cpu);
        let profile = Arc::new(profile(None, None));
        let want = per_node(&profile, &pod, &snap);
        prop_assert_eq!(scored(&profile, &pod, &snap, 1).unwrap(), want.clone());
        prop_assert_eq!(scored(&profile, &pod, &snap, 2).unwrap(), want);
    }

    /// The weighted sum with its range test: every total gains `weight × score`, and
    /// a score outside `0..=100` (anywhere, including the unrolled loop's tail) is
    /// the error naming the first such score.
    #[test]
    fn weighted_sum_adds_and_checks_the_range(
        scores in proptest::collection::vec(-3i64..=103, 0..23),
        weight in 1i64..=5,
    ) {
        let sp = crate::framework::WeightedScore { name: "W", plugin: Arc::new(Failing { name: "W", at: None }), weight };
        let name = crate::model::Symbol::intern("n");
        let ns: Vec<_> = scores.iter().map(|&score| crate::framework::NodeScore { name, score }).collect();
        let mut totals: Vec<i64> = (0..scores.len() as i64).collect();
        let r = runtime::add_weighted_scores(&sp, &ns, &mut totals);
        if let Some(bad) = scores.iter().find(|s| !(0..=100).contains(*s)) {
            let err = r.unwrap_err().to_string();
            prop_assert!(err.contains(&format!("invalid score {bad},")), "{}", err);
        } else {
            prop_assert!(r.is_ok());
            let want: Vec<i64> = scores.iter().enumerate().map(|(i, s)| i as i64 + s * weight).collect();
            prop_assert_eq!(totals, want);
        }
    }
}
