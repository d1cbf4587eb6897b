//! The batched, plugin-major Filter walk against the node-by-node walk upstream
//! runs (`findNodesThatPassFilters` in `pkg/scheduler/schedule_one.go`, with
//! `RunFilterPlugins` per node): the same feasible nodes in the same order, the same
//! status per rejected node, and the same number of nodes processed (the next
//! cycle's start).

use std::cell::Cell;
use std::sync::Arc;

use proptest::prelude::*;

use super::Scheduler;
use super::config::num_feasible_nodes_to_find;
use crate::framework::{CycleState, FilterFn, Handle, Profile, Status, runtime};
use crate::model::{Pod, TaintEffect};
use crate::plugins::inter_pod_affinity::{InterPodAffinity, InterPodAffinityArgs};
use crate::plugins::node_affinity::NodeAffinity;
use crate::plugins::node_name::NodeName;
use crate::plugins::node_ports::NodePorts;
use crate::plugins::node_resources::{Fit, FitArgs};
use crate::plugins::node_unschedulable::NodeUnschedulable;
use crate::plugins::pod_topology_spread::{PodTopologySpread, PodTopologySpreadArgs};
use crate::plugins::taint_toleration::TaintToleration;
use crate::snapshot::{Cache, PodInfo, Snapshot};
use crate::testing::{NodeBuilder, PodBuilder};

/// One random node: CPU cores, instance type, zone (none: no zone label), taints
/// (bits: the tolerable `NoSchedule`, a `NoExecute`, a `PreferNoSchedule`),
/// cordoned.
type NodeShape = (u8, u8, Option<u8>, u8, bool);

fn snapshot(nodes: &[NodeShape]) -> Snapshot {
    let mut cache = Cache::new();
    for (i, &(cpu, kind, zone, tainted, cordoned)) in nodes.iter().enumerate() {
        let mut b = NodeBuilder::new(&format!("n{i:04}"))
            .cpu(&cpu.to_string())
            .memory("16Gi")
            .pods(110)
            .label("type", ["small", "medium", "large"][usize::from(kind % 3)]);
        if let Some(z) = zone {
            b = b.zone(&format!("zone-{}", z % 3));
        }
        if tainted & 1 != 0 {
            b = b.taint("dedicated", "infra", TaintEffect::NoSchedule);
        }
        if tainted & 2 != 0 {
            b = b.taint("evicting", "", TaintEffect::NoExecute);
        }
        if tainted & 4 != 0 {
            b = b.taint("spot", "", TaintEffect::PreferNoSchedule);
        }
        if cordoned {
            b = b.unschedulable();
        }
        cache.add_node(b.build()).unwrap();
    }
    let mut snap = Snapshot::default();
    cache.update_snapshot(&mut snap);
    snap
}

/// The pod: a CPU request, maybe a toleration, a required node affinity and a zone
/// spread constraint.
fn pod(milli_cpu: u32, tolerates: bool, affinity: bool) -> PodInfo {
    let mut spec = String::from(r#"{"spec":{"#);
    if affinity {
        spec.push_str(
            r#""affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[
              {"matchExpressions":[{"key":"type","operator":"In","values":["medium","large"]}]}]}}},"#,
        );
    }
    spec.push_str(
        r#""topologySpreadConstraints":[{"maxSkew":1,"topologyKey":"topology.kubernetes.io/zone",
          "whenUnsatisfiable":"DoNotSchedule","labelSelector":{"matchLabels":{"app":"web"}}}]}}"#,
    );
    let mut p: Pod = serde_json::from_str(&spec).unwrap();
    let mut b = PodBuilder::new("p").label("app", "web").cpu(&format!("{milli_cpu}m"));
    if tolerates {
        b = b.toleration("dedicated", Some("infra"), Some(TaintEffect::NoSchedule));
    }
    let built = b.build();
    p.metadata = built.metadata;
    p.spec.containers = built.spec.containers;
    p.spec.tolerations = built.spec.tolerations;
    PodInfo::new(p).unwrap()
}

/// The default profile's Filter plugins with two user plugins (no `filter_nodes`)
/// between them: one rejects every `every`-th node, one returns an Error on node
/// `error_at`.
fn profile(every: usize, error_at: Option<usize>) -> Profile {
    let handle = Handle::default();
    let reject = FilterFn::new("EveryKth", move |_: &CycleState, _: &PodInfo, n: &crate::snapshot::NodeInfo| {
        let i: usize = n.name().as_str()[1..].parse().unwrap();
        if i.is_multiple_of(every) { Status::unschedulable("user plugin says no") } else { Status::SUCCESS }
    });
    let error = FilterFn::new("Failing", move |_: &CycleState, _: &PodInfo, n: &crate::snapshot::NodeInfo| {
        let i: usize = n.name().as_str()[1..].parse().unwrap();
        if Some(i) == error_at { Status::error("broken on this node") } else { Status::SUCCESS }
    });
    Profile::builder("p")
        .plugin(NodeUnschedulable)
        .plugin(NodeName)
        .plugin(TaintToleration)
        .plugin(reject)
        .plugin(NodeAffinity::default())
        .plugin(NodePorts)
        .plugin(Fit::new(&FitArgs::default()).unwrap())
        .plugin(error)
        .plugin(PodTopologySpread::new(PodTopologySpreadArgs::default(), &handle).unwrap())
        .plugin(InterPodAffinity::new(InterPodAffinityArgs::default(), &handle).unwrap())
        .build()
        .unwrap()
}

type Walked = (Vec<usize>, Vec<(usize, Status)>, usize);

/// Upstream's walk: node by node from `start`, each node through the plugins until
/// one fails, until `to_find` nodes passed.
fn node_by_node(
    profile: &Profile,
    state: &CycleState,
    pod: &PodInfo,
    snap: &Snapshot,
    cands: &[usize],
    to_find: usize,
    start: usize,
) -> Walked {
    let (mut feasible, mut failed, mut processed) = (Vec::new(), Vec::new(), 0);
    let current = Cell::new(0);
    for i in 0..cands.len() {
        if feasible.len() >= to_find {
            break;
        }
        let idx = cands[(start + i) % cands.len()];
        processed += 1;
        let s = runtime::run_filters(profile, state, pod, &snap.nodes()[idx], &current);
        if s.is_success() {
            feasible.push(idx);
        } else {
            failed.push((idx, s));
        }
    }
    (feasible, failed, processed)
}

/// The scheduler's Filter phase on `threads` threads.
#[expect(clippy::too_many_arguments, reason = "test; the walk's inputs")]
fn batched(
    profile: &Arc<Profile>,
    state: &CycleState,
    pod: &PodInfo,
    snap: &Snapshot,
    narrowed: Option<&[usize]>,
    to_find: usize,
    start: usize,
    threads: usize,
) -> Walked {
    let mut cfg = super::SchedulerConfig { parallelism: threads, ..Default::default() };
    cfg.parallel_min_nodes = 0;
    cfg.parallel_min_work = 0;
    let mut s = Scheduler::builder().profile((**profile).clone()).config(cfg).build();
    s.bufs.candidates = narrowed.map(<[usize]>::to_vec).unwrap_or_default();
    let n_cand = narrowed.map_or(snap.len(), <[usize]>::len);
    let processed = s.find_feasible(profile, state, pod, snap, narrowed.is_some(), n_cand, to_find, start);
    (std::mem::take(&mut s.bufs.feasible), std::mem::take(&mut s.bufs.failed), processed)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Random clusters, pods, sampling percentages, start positions and narrowings:
    /// the batched walk gives what the node-by-node walk gives.
    #[test]
    fn batched_filter_walks_like_node_by_node(
        nodes in proptest::collection::vec(
            (1u8..=8, any::<u8>(), proptest::option::weighted(0.95, any::<u8>()),
                prop_oneof![6 => Just(0u8), 3 => Just(1u8), 1 => 2u8..8], proptest::bool::weighted(0.05)),
            1..400,
        ),
        milli_cpu in 100u32..6000,
        tolerates in any::<bool>(),
        affinity in any::<bool>(),
        pct in prop_oneof![Just(0u32), 1u32..=100],
        start_seed in any::<usize>(),
        every in 2usize..40,
        error_at in proptest::option::weighted(0.1, 0usize..400),
        narrow in proptest::option::weighted(0.3, any::<u64>()),
    ) {
        let snap = snapshot(&nodes);
        let pod = pod(milli_cpu, tolerates, affinity);
        let profile = Arc::new(profile(every, error_at));
        let mut state = CycleState::new();
        let pre = runtime::run_pre_filter(&profile, &mut state, &pod, &snap);
        prop_assume!(pre.is_ok());
        let all: Vec<usize> = (0..snap.len()).collect();
        let cands: Vec<usize> = match narrow {
            // A narrowing keeps about half the nodes, in snapshot order.
            Some(seed) => all.iter().copied().filter(|&i| (seed >> (i % 64)) & 1 == 1).collect(),
            None => all.clone(),
        };
        prop_assume!(!cands.is_empty());
        let to_find = num_feasible_nodes_to_find(pct, cands.len());
        let start = start_seed % snap.len();
        // The node-by-node walk starts at `start` among the candidates (as the
        // scheduler does: `start` indexes the candidate list).
        let want = node_by_node(&profile, &state, &pod, &snap, &cands, to_find, start % cands.len());
        let got = batched(&profile, &state, &pod, &snap, narrow.map(|_| cands.as_slice()), to_find, start, 1);
        prop_assert_eq!(&got, &want);
        if to_find == cands.len() {
            // Without early stop the parallel walk is exact too.
            let par = batched(&profile, &state, &pod, &snap, narrow.map(|_| cands.as_slice()), to_find, start, 2);
            prop_assert_eq!(&par, &want);
        }
    }
}

/// A plugin that panics on one node: the batched walk re-walks that chunk node by
/// node, so the Error names the plugin and the node, and the nodes before it keep
/// their outcomes, as the node-by-node walk under one guard gives them.
#[test]
fn a_panic_is_blamed_on_its_node_and_plugin() {
    let nodes: Vec<NodeShape> = (0..300).map(|i| (4, 1, Some((i % 3) as u8), 0, false)).collect();
    let snap = snapshot(&nodes);
    let pod = pod(500, false, true);
    let boom = FilterFn::new("Boom", |_: &CycleState, _: &PodInfo, n: &crate::snapshot::NodeInfo| {
        assert!(n.name().as_str() != "n0150", "boom");
        Status::SUCCESS
    });
    let profile = Arc::new(
        Profile::builder("p")
            .plugin(NodeUnschedulable)
            .plugin(boom)
            .plugin(Fit::new(&FitArgs::default()).unwrap())
            .build()
            .unwrap(),
    );
    let mut state = CycleState::new();
    runtime::run_pre_filter(&profile, &mut state, &pod, &snap).unwrap();
    let (feasible, failed, processed) = batched(&profile, &state, &pod, &snap, None, 300, 100, 1);
    assert_eq!(processed, 51, "nodes 100..=150");
    assert_eq!(feasible, (100..150).collect::<Vec<_>>());
    let [(at, s)] = failed.as_slice() else { panic!("one failure: {failed:?}") };
    assert_eq!(*at, 150);
    assert_eq!(s.code(), crate::framework::Code::Error);
    assert_eq!(s.plugin(), Some("Boom"));
    assert!(s.message().contains("plugin Boom panicked in Filter: boom"), "{}", s.message());
}
