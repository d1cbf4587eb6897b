//! Score plugins with a uniform score this cycle (`ScorePlugin::uniform_score`:
//! TaintToleration when no node has a `PreferNoSchedule` taint, ImageLocality when
//! no node has the pod's images, DynamicResources without prioritized lists) leave
//! the per-node loops: the totals must be the ones every plugin's Score,
//! NormalizeScore and weighted sum give node by node.

use std::sync::Arc;

use proptest::prelude::*;

use super::{Scheduler, SchedulerConfig};
use crate::dra::DraStore;
use crate::framework::{CycleState, Handle, NodeScore, Profile, runtime};
use crate::model::TaintEffect;
use crate::plugins::dynamic_resources::DynamicResources;
use crate::plugins::image_locality::ImageLocality;
use crate::plugins::inter_pod_affinity::{InterPodAffinity, InterPodAffinityArgs};
use crate::plugins::node_affinity::NodeAffinity;
use crate::plugins::node_resources::{BalancedAllocation, BalancedAllocationArgs, Fit, FitArgs};
use crate::plugins::pod_topology_spread::{PodTopologySpread, PodTopologySpreadArgs};
use crate::plugins::taint_toleration::TaintToleration;
use crate::snapshot::{Cache, NodeList, PodInfo, Snapshot};
use crate::testing::{NodeBuilder, PodBuilder};

/// One random node: CPU cores, CPU in use (millicores), a PreferNoSchedule taint, a
/// NoSchedule taint, the image `app:1.0` pulled.
type NodeShape = (u8, u16, bool, bool, bool);

fn snapshot(nodes: &[NodeShape]) -> Snapshot {
    let mut cache = Cache::new();
    for (i, &(cpu, used, prefer, hard, image)) in nodes.iter().enumerate() {
        let name = format!("n{i:04}");
        let mut b = NodeBuilder::new(&name).cpu(&cpu.to_string()).memory("32Gi").pods(110).zone("zone-a");
        if prefer {
            b = b.taint("spot", "yes", TaintEffect::PreferNoSchedule);
        }
        if hard {
            b = b.taint("dedicated", "infra", TaintEffect::NoSchedule);
        }
        if image {
            b = b.image("app:1.0", 300 << 20);
        }
        cache.add_node(b.build()).unwrap();
        if used > 0 {
            let p = PodBuilder::new(&format!("used-{i}")).cpu(&format!("{used}m")).node_name(&name);
            cache.add_pod(Arc::new(PodInfo::new(p.build()).unwrap())).unwrap();
        }
    }
    let mut snap = Snapshot::default();
    cache.update_snapshot(&mut snap);
    snap
}

fn profile(handle: &Handle) -> Profile {
    Profile::builder("p")
        .weighted(TaintToleration, 3)
        .weighted(NodeAffinity::default(), 2)
        .plugin(Fit::new(&FitArgs::default()).unwrap())
        .weighted(PodTopologySpread::new(PodTopologySpreadArgs::default(), handle).unwrap(), 2)
        .weighted(InterPodAffinity::new(InterPodAffinityArgs::default(), handle).unwrap(), 2)
        .weighted(DynamicResources::new(Arc::new(DraStore::new())), 1)
        .plugin(BalancedAllocation::new(&BalancedAllocationArgs::default()).unwrap())
        .weighted(ImageLocality::new(handle.clone()), 1)
        .build()
        .unwrap()
}

/// The pod: a CPU request, maybe the image `app:1.0`, maybe tolerating the spot taint.
fn pod(milli_cpu: u32, image: bool, tolerates: bool) -> PodInfo {
    let mut b = PodBuilder::new("p").cpu(&format!("{milli_cpu}m")).memory("1Gi");
    if image {
        b = b.image("app:1.0");
    }
    if tolerates {
        b = b.toleration("spot", Some("yes"), Some(TaintEffect::PreferNoSchedule));
    }
    PodInfo::new(b.build()).unwrap()
}

/// PreFilter and PreScore over every node.
fn prepared(profile: &Profile, pod: &PodInfo, snap: &Snapshot, feasible: &[usize]) -> CycleState {
    let mut state = CycleState::new();
    runtime::run_pre_filter(profile, &mut state, pod, snap).unwrap();
    assert!(runtime::run_pre_score(profile, &mut state, pod, NodeList::new(snap, feasible), None).is_success());
    state
}

/// The scheduler's Score phase on one thread: the totals and the plugins it scored
/// node by node.
fn scored(profile: &Profile, pod: &PodInfo, snap: &Snapshot) -> (Vec<i64>, Vec<usize>) {
    let cfg = SchedulerConfig { parallelism: 1, ..Default::default() };
    let mut s = Scheduler::builder().profile(profile.clone()).config(cfg).build();
    s.bufs.feasible = (0..snap.len()).collect();
    let state = prepared(profile, pod, snap, &s.bufs.feasible);
    s.score(profile, &state, pod, snap, None).unwrap();
    (std::mem::take(&mut s.bufs.totals), std::mem::take(&mut s.bufs.active_score))
}

/// Every plugin PreScore did not skip through Score, NormalizeScore (with the range
/// check) and the weighted sum, node by node; also checks each `uniform_score`
/// against the scores it stands for. The totals, and the plugins whose
/// `uniform_score` answered.
fn plain(profile: &Profile, pod: &PodInfo, snap: &Snapshot) -> Result<(Vec<i64>, Vec<usize>), TestCaseError> {
    let feasible: Vec<usize> = (0..snap.len()).collect();
    let state = prepared(profile, pod, snap, &feasible);
    let nodes = NodeList::new(snap, &feasible);
    let mut totals = vec![0i64; feasible.len()];
    let mut uniform = Vec::new();
    for (pi, sp) in profile.score.iter().enumerate() {
        if state.skips_score(pi) {
            continue;
        }
        let mut scores: Vec<NodeScore> =
            feasible.iter().map(|&i| NodeScore { name: snap.nodes()[i].name(), score: 0 }).collect();
        runtime::run_score_plugin(sp, &state, pod, nodes, &mut scores, None).unwrap();
        runtime::run_normalize(sp, &state, pod, &mut scores, None).unwrap();
        if let Some(v) = sp.plugin.uniform_score(&state, pod, nodes) {
            uniform.push(pi);
            for s in &scores {
                prop_assert_eq!(s.score, v, "{} on {}: uniform score", sp.name, s.name);
            }
        }
        for (t, s) in totals.iter_mut().zip(&scores) {
            *t = t.wrapping_add(s.score.wrapping_mul(sp.weight));
        }
    }
    Ok((totals, uniform))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Random clusters (with and without PreferNoSchedule taints and the pod's
    /// image) and pods: the Score phase's totals equal the node-by-node sums, and
    /// a plugin leaves the node loops exactly when its uniform score holds.
    #[test]
    fn uniform_scores_give_the_node_by_node_totals(
        prefer_share in prop_oneof![Just(0.0f64), Just(0.3)],
        image_share in prop_oneof![Just(0.0f64), Just(0.4)],
        seeds in proptest::collection::vec((1u8..=16, 0u16..4000, 0.0f64..1.0, proptest::bool::weighted(0.1), 0.0f64..1.0), 2..200),
        milli_cpu in 100u32..4000,
        image in any::<bool>(),
        tolerates in any::<bool>(),
    ) {
        let nodes: Vec<NodeShape> =
            seeds.iter().map(|&(c, u, p, h, i)| (c, u, p < prefer_share, h, i < image_share)).collect();
        let snap = Arc::new(snapshot(&nodes));
        let handle = Handle::default();
        // ImageLocality reads the image spread from the handle's snapshot.
        handle.put_snapshot(snap.clone());
        let profile = profile(&handle);
        let pod = pod(milli_cpu, image, tolerates);
        let (want, uniform) = plain(&profile, &pod, &snap)?;
        let (got, active) = scored(&profile, &pod, &snap);
        prop_assert_eq!(got, want);
        for pi in uniform {
            prop_assert!(!active.contains(&pi), "{} stayed in the node loop", profile.score[pi].name);
        }
    }
}

/// The typical pod on a cluster without PreferNoSchedule taints or the pod's images:
/// TaintToleration, DynamicResources and ImageLocality leave the node loops, and
/// the totals are unchanged.
#[test]
fn typical_cycle_leaves_three_plugins_out_of_the_node_loops() {
    let nodes: Vec<NodeShape> = (0..100).map(|i| (8, (i * 37 % 3000) as u16, false, i % 10 == 5, false)).collect();
    let snap = Arc::new(snapshot(&nodes));
    let handle = Handle::default();
    handle.put_snapshot(snap.clone());
    let profile = profile(&handle);
    let pod = pod(500, true, true);
    let (want, uniform) = plain(&profile, &pod, &snap).unwrap();
    let (got, active) = scored(&profile, &pod, &snap);
    assert_eq!(got, want);
    let names = |ps: &[usize]| ps.iter().map(|&pi| profile.score[pi].name).collect::<Vec<_>>();
    assert_eq!(names(&uniform), ["TaintToleration", "DynamicResources", "ImageLocality"]);
    let active = names(&active);
    assert!(active.contains(&"NodeResourcesFit") && active.contains(&"NodeResourcesBalancedAllocation"), "{active:?}");
    assert!(!active.iter().any(|n| ["TaintToleration", "DynamicResources", "ImageLocality"].contains(n)), "{active:?}");
}
