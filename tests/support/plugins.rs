//! Running a plugin's extension points directly, the way upstream's plugin tests do.

use std::sync::Arc;

use schedkit::framework::*;
use schedkit::model::{Pod, Symbol};
use schedkit::snapshot::{Cache, NodeList, PodInfo, Snapshot};
use schedkit::testing::PodBuilder;

/// A pod with one container per request map and nothing else (like `st.MakePod().Req(..)`).
pub fn upod(containers: &[&[(&str, &str)]]) -> Pod {
    let mut b = PodBuilder::new("p").with(|p| p.spec.containers.clear());
    for (i, reqs) in containers.iter().enumerate() {
        b = b.container(&format!("c{i}"));
        for (k, v) in *reqs {
            b = b.request(k, v);
        }
    }
    b.build()
}

/// A snapshot of `nodes` with `existing` pods bound (each pod's `nodeName` set).
pub fn snapshot(nodes: Vec<schedkit::model::Node>, existing: Vec<Pod>) -> Snapshot {
    let mut cache = Cache::new();
    for n in nodes {
        cache.add_node(n).unwrap();
    }
    for (i, mut p) in existing.into_iter().enumerate() {
        p.metadata.name = format!("existing-{i}");
        cache.add_pod(Arc::new(PodInfo::new(p).unwrap())).unwrap();
    }
    let mut snap = Snapshot::default();
    cache.update_snapshot(&mut snap);
    snap
}

/// Runs PreFilter (if any) then Filter on every node; returns each node's status.
pub fn run_filter<P>(plugin: &P, pod: &Pod, snap: &Snapshot) -> Vec<(String, Status)>
where
    P: FilterPlugin + PreFilterPlugin,
{
    let pod = PodInfo::new(pod.clone()).unwrap();
    let mut state = CycleState::new();
    let (_, s) = plugin.pre_filter(&mut state, &pod, snap);
    let skip = s.is_skip();
    assert!(s.is_success() || skip, "PreFilter: {s:?}");
    snap.nodes()
        .iter()
        .map(|n| {
            let st = if skip { Status::SUCCESS } else { plugin.filter(&state, &pod, n) };
            (n.node().name().to_owned(), st)
        })
        .collect()
}

/// Runs PreScore, Score on every node and NormalizeScore; `None` when PreScore skips.
pub fn run_score<P>(plugin: &P, pod: &Pod, snap: &Snapshot) -> Option<Vec<(String, i64)>>
where
    P: PreScorePlugin + ScorePlugin,
{
    let pod = PodInfo::new(pod.clone()).unwrap();
    let mut state = CycleState::new();
    let idx: Vec<usize> = (0..snap.len()).collect();
    let s = plugin.pre_score(&mut state, &pod, NodeList::new(snap, &idx));
    if s.is_skip() {
        return None;
    }
    assert!(s.is_success(), "PreScore: {s:?}");
    let mut scores: Vec<NodeScore> = snap
        .nodes()
        .iter()
        .map(|n| NodeScore { name: n.name(), score: plugin.score(&state, &pod, n).unwrap() })
        .collect();
    // The batched Score the scheduler calls gives the same scores as per node.
    let mut batch: Vec<NodeScore> = snap.nodes().iter().map(|n| NodeScore { name: n.name(), score: -1 }).collect();
    plugin.score_nodes(&state, &pod, NodeList::new(snap, &idx), &mut batch).unwrap();
    assert_eq!(batch, scores, "score_nodes disagrees with score");
    assert!(plugin.normalize(&state, &pod, &mut scores).is_success());
    Some(scores.iter().map(|s| (Symbol::as_str(s.name).to_owned(), s.score)).collect())
}
