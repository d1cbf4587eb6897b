//! What several benches share: the typical pod of the performance budgets, the
//! synthetic cluster's snapshot, and a per-node Score loop.
#![allow(dead_code, reason = "each bench uses a part")]

use std::hint::black_box;

use criterion::{Criterion, Throughput};
use schedkit::framework::{CycleState, Handle, NodeScore, PreScorePlugin, Profile, ScorePlugin};
use schedkit::model::{Pod, TaintEffect};
use schedkit::scheduler::{Scheduler, TieBreak};
use schedkit::snapshot::{Cache, NodeList, PodInfo, Snapshot};
use schedkit::testing::PodBuilder;
use schedkit::trace::synthetic_nodes;

/// The pod the performance budgets describe: requests, a toleration, a node affinity
/// and a zone spread constraint.
pub fn typical_pod(name: &str) -> Pod {
    let mut pod: Pod = serde_json::from_str(
        r#"{"spec":{
          "affinity":{"nodeAffinity":{
            "requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[
              {"key":"node.kubernetes.io/instance-type","operator":"In","values":["medium","large"]}]}]},
            "preferredDuringSchedulingIgnoredDuringExecution":[{"weight":10,"preference":{"matchExpressions":[
              {"key":"node.kubernetes.io/instance-type","operator":"In","values":["large"]}]}}]}},
          "topologySpreadConstraints":[{"maxSkew":1,"topologyKey":"topology.kubernetes.io/zone",
            "whenUnsatisfiable":"DoNotSchedule","labelSelector":{"matchLabels":{"app":"web"}}}]}}"#,
    )
    .expect("valid pod");
    let built = PodBuilder::new(name)
        .label("app", "web")
        .cpu("500m")
        .memory("1Gi")
        .toleration("dedicated", Some("infra"), Some(TaintEffect::NoSchedule))
        .build();
    pod.metadata = built.metadata;
    pod.spec.containers = built.spec.containers;
    pod.spec.tolerations = built.spec.tolerations;
    pod
}

/// A snapshot of `n` nodes of the synthetic cluster.
pub fn cluster(n: usize) -> Snapshot {
    let mut cache = Cache::new();
    for node in synthetic_nodes(n) {
        cache.add_node(node).unwrap();
    }
    let mut snap = Snapshot::default();
    cache.update_snapshot(&mut snap);
    snap
}

/// `<group>/score_5000_nodes`: PreScore once, then Score on every node of `snap` and
/// NormalizeScore, per iteration.
pub fn bench_score<P: ScorePlugin + PreScorePlugin>(
    c: &mut Criterion,
    group: &str,
    p: &P,
    snap: &Snapshot,
    pod: &PodInfo,
) {
    let mut state = CycleState::new();
    let idx: Vec<usize> = (0..snap.len()).collect();
    let _ = p.pre_score(&mut state, pod, NodeList::new(snap, &idx));
    let mut scores: Vec<NodeScore> = snap.nodes().iter().map(|n| NodeScore { name: n.name(), score: 0 }).collect();
    let mut g = c.benchmark_group(group);
    g.throughput(Throughput::Elements(snap.len() as u64));
    g.bench_function("score_5000_nodes", |b| {
        b.iter(|| {
            for (s, n) in scores.iter_mut().zip(snap.nodes()) {
                s.score = p.score(&state, pod, n).unwrap_or(0);
            }
            let _ = p.normalize(&state, pod, &mut scores);
            black_box(scores[0].score)
        });
    });
    g.finish();
}

/// A DaemonSet's pod as its controller writes it: a required node affinity with one
/// `matchFields` term on `metadata.name`.
pub fn daemonset_pod(node: &str) -> Pod {
    let mut pod: Pod = serde_json::from_str(&format!(
        r#"{{"spec":{{"affinity":{{"nodeAffinity":{{"requiredDuringSchedulingIgnoredDuringExecution":
          {{"nodeSelectorTerms":[{{"matchFields":[
            {{"key":"metadata.name","operator":"In","values":["{node}"]}}]}}]}}}}}}}}}}"#
    ))
    .expect("valid pod");
    let built = PodBuilder::new("ds-pod").cpu("100m").memory("128Mi").build();
    pod.metadata = built.metadata;
    pod.spec.containers = built.spec.containers;
    pod
}

/// kube-scheduler's default profile on `handle` over `nodes` synthetic nodes, scoring
/// `pct` percent of them (0: upstream's adaptive sampling) on `threads` threads.
pub fn default_scheduler(handle: Handle, nodes: usize, pct: u32, threads: usize) -> Scheduler {
    let s = Scheduler::builder()
        .profile(Profile::kube_default(&handle))
        .handle(handle)
        .percentage_of_nodes_to_score(pct)
        .parallelism(threads)
        .tie_break(TieBreak::Random)
        .build();
    for n in synthetic_nodes(nodes) {
        s.add_node(n).unwrap();
    }
    s
}
