//! [`ExtenderService`]: one schedkit profile answering the extender verbs, as plain
//! functions of a request body (the HTTP server in `server.rs` only moves bytes).

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use parking_lot::Mutex;

use super::{borrowed, wire};
use crate::framework::extender::MAX_EXTENDER_PRIORITY;
use crate::framework::runtime::{self, PermitOutcome};
use crate::framework::{Code, CycleState, MAX_NODE_SCORE, NodeScore, Profile, Status};
use crate::model::Node;
use crate::scheduler::filter_chunk::{CHUNK, ChunkBufs, filter_chunk};
use crate::snapshot::{Cache, NodeInfo, NodeList, PodInfo, Snapshot};

/// Pods remembered between Filter and Bind (Bind's arguments name the pod only).
pub const SEEN_PODS: usize = 4096;

/// What a verb answers: an HTTP status and a JSON (or text, for 4xx) body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// HTTP status: 200, 400 (bad body), 404 (unknown verb), 405.
    pub status: u16,
    /// The body.
    pub body: Vec<u8>,
}

impl Reply {
    fn json(v: &impl serde::Serialize) -> Reply {
        match serde_json::to_vec(v) {
            Ok(body) => Reply { status: 200, body },
            Err(e) => Reply { status: 500, body: e.to_string().into_bytes() },
        }
    }

    fn bad(message: impl Into<String>) -> Reply {
        Reply { status: 400, body: message.into().into_bytes() }
    }
}

/// A schedkit profile served as a scheduler extender.
///
/// The embedder keeps `cache` up to date (nodes and bound pods, as for a
/// [`Scheduler`](crate::scheduler::Scheduler)); every request evaluates the profile
/// against a snapshot of it. In node-cache-capable mode (`NodeNames` in the request)
/// the nodes are the cache's; otherwise the request's `Nodes` are the candidates, each
/// with the pods the cache has on a node of that name, in a snapshot that also holds
/// the cache's other nodes, so PreFilter and Filter count pods cluster-wide (affinity,
/// topology spread) as in node-cache-capable mode, while only the sent nodes are
/// judged.
///
/// - `filter`: PreFilter, then Filter on every named node (no sampling); passing
///   nodes are returned, failing ones in `FailedNodes` (`Unschedulable`) or
///   `FailedAndUnresolvableNodes` with the plugins' messages; an `Error` status is
///   the result's `Error`.
/// - `prioritize`: PreScore, Score and NormalizeScore with the profile's weights;
///   each node's weighted total is scaled to 0..=10 as `total × 10 / (100 × Σweights)`.
/// - `bind`: the pod (remembered from its last filter or prioritize call) is assumed
///   on the node, then Reserve, Permit (a Wait is refused), PreBind, Bind, PostBind;
///   any failure unreserves and forgets it, so nothing stays reserved.
/// - `preempt`: keeps the nodes where the pod passes Filter once the victims are
///   gone, with their victims.
pub struct ExtenderService {
    profile: Arc<Profile>,
    cache: Arc<Mutex<Cache>>,
    snapshot: Mutex<Arc<Snapshot>>,
    seen: Mutex<VecDeque<Arc<PodInfo>>>,
}

impl std::fmt::Debug for ExtenderService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExtenderService").field("profile", &self.profile.name()).finish_non_exhaustive()
    }
}

impl ExtenderService {
    /// Serves `profile` over the nodes and pods in `cache`.
    pub fn new(profile: Arc<Profile>, cache: Arc<Mutex<Cache>>) -> ExtenderService {
        ExtenderService {
            profile,
            cache,
            snapshot: Mutex::new(Arc::new(Snapshot::default())),
            seen: Mutex::new(VecDeque::new()),
        }
    }

    /// The profile served.
    pub fn profile(&self) -> &Arc<Profile> {
        &self.profile
    }

    /// Answers `POST /<verb>` with `body`: `filter`, `prioritize`, `bind`, `preempt`;
    /// `healthz` answers `ok` to any method.
    pub fn handle(&self, verb: &str, body: &[u8]) -> Reply {
        match verb {
            "healthz" => Reply { status: 200, body: b"ok".to_vec() },
            "filter" => self.filter_reply(body),
            "prioritize" => Self::decoded(body, |a| self.prioritize(a)),
            "bind" => Self::decoded(body, |a| Ok(self.bind(&a))),
            "preempt" => Self::decoded(body, |a| self.preempt(a)),
            _ => Reply { status: 404, body: format!("unknown extender verb {verb:?}").into_bytes() },
        }
    }

    fn decoded<A: serde::de::DeserializeOwned, R: serde::Serialize>(
        body: &[u8],
        f: impl FnOnce(A) -> Result<R, String>,
    ) -> Reply {
        match wire::decode::<A>(body) {
            Ok(a) => match f(a) {
                Ok(r) => Reply::json(&r),
                Err(m) => Reply::bad(m),
            },
            Err(m) => Reply::bad(format!("malformed request body: {m}")),
        }
    }

    /// The cache's current snapshot (updated in place when no request holds it).
    pub fn snapshot(&self) -> Arc<Snapshot> {
        let mut snap = self.snapshot.lock();
        self.cache.lock().update_snapshot(Arc::make_mut(&mut snap));
        snap.clone()
    }

    fn remember(&self, pod: &Arc<PodInfo>) {
        let mut seen = self.seen.lock();
        seen.retain(|p| p.uid != pod.uid);
        if seen.len() >= SEEN_PODS {
            seen.pop_front();
        }
        seen.push_back(pod.clone());
    }

    /// The pod, and the snapshot with the candidate nodes' positions in it.
    fn candidates(&self, args: wire::ExtenderArgs) -> Result<Candidates, String> {
        self.candidates_of(args.pod, args.nodes, args.node_names.as_deref())
    }

    /// [`Self::candidates`] from the request's parts, with names owned or borrowed.
    fn candidates_of<N: AsRef<str>>(
        &self,
        pod: Option<wire::Object<crate::model::Pod>>,
        nodes: Option<wire::NodeList>,
        node_names: Option<&[N]>,
    ) -> Result<Candidates, String> {
        let pod = pod.ok_or("ExtenderArgs.Pod is required")?.0;
        let pod = Arc::new(PodInfo::new(pod).map_err(|e| format!("Pod: {e}"))?);
        self.remember(&pod);
        if let Some(names) = node_names {
            let snap = self.snapshot();
            let mut idx = Vec::with_capacity(names.len());
            let mut unknown = Vec::new();
            for name in names {
                let name = name.as_ref();
                match crate::model::Symbol::lookup(name).and_then(|s| snap.index_of(s)) {
                    Some(i) => idx.push(i),
                    None => unknown.push(name.to_owned()),
                }
            }
            return Ok(Candidates { pod, snap, idx, unknown, cache_capable: true });
        }
        let Some(list) = nodes else {
            return Err("ExtenderArgs needs Nodes or NodeNames".to_owned());
        };
        let cached = self.snapshot();
        let sent = list.items.len();
        let mut infos: Vec<NodeInfo> = Vec::with_capacity(sent + cached.len());
        let mut names: ahash::AHashSet<String> = ahash::AHashSet::with_capacity(sent);
        for n in list.items {
            let node: Node = n.0;
            names.insert(node.name().to_owned());
            let mut info = NodeInfo::new(Arc::new(node));
            if let Some(c) = cached.get(info.node().name()) {
                for p in c.pods() {
                    info.add_pod(p.clone());
                }
            }
            infos.push(info);
        }
        // The rest of the cluster, for what PreFilter and Filter count over all nodes
        // (inter-pod affinity, topology spread), as kube-scheduler's snapshot holds
        // every node while the extender is sent only the feasible ones.
        infos.extend(cached.nodes().iter().filter(|c| !names.contains(c.node().name())).map(|c| (**c).clone()));
        let snap = Arc::new(Snapshot::from_nodes(infos));
        let idx = (0..sent).collect();
        Ok(Candidates { pod, snap, idx, unknown: Vec::new(), cache_capable: false })
    }

    /// The `filter` verb.
    pub fn filter(&self, args: wire::ExtenderArgs) -> Result<wire::ExtenderFilterResult, String> {
        let (c, passed, out) = self.run_filter(self.candidates(args)?);
        if !out.error.is_empty() {
            return Ok(wire::ExtenderFilterResult { error: out.error, ..wire::ExtenderFilterResult::default() });
        }
        let nodes = c.snap.nodes();
        let mut out = out;
        if c.cache_capable {
            out.node_names = Some(passed.iter().map(|&i| nodes[i].node().name().to_owned()).collect());
        } else {
            let items = passed.iter().map(|&i| wire::Object(nodes[i].node().clone())).collect();
            out.nodes = Some(wire::NodeList { items });
        }
        Ok(out)
    }

    /// `POST /filter`: as [`Self::filter`], with node names read from and written to
    /// the bytes without a `String` each (`borrowed.rs`); the same reply bytes.
    fn filter_reply(&self, body: &[u8]) -> Reply {
        let args = match borrowed::decode_args(body) {
            Ok(a) => a,
            Err(m) => return Reply::bad(format!("malformed request body: {m}")),
        };
        let c = match self.candidates_of(args.pod, args.nodes, args.node_names.as_deref()) {
            Ok(c) => c,
            Err(m) => return Reply::bad(m),
        };
        let (c, passed, out) = self.run_filter(c);
        let reply = borrowed::FilterReply {
            passed: borrowed::Passed { snap: &c.snap, idx: &passed },
            by_name: c.cache_capable,
            failed_nodes: &out.failed_nodes,
            failed_and_unresolvable_nodes: &out.failed_and_unresolvable_nodes,
            error: &out.error,
        };
        match reply.to_json() {
            Ok(body) => Reply { status: 200, body },
            Err(e) => Reply { status: 500, body: e.to_string().into_bytes() },
        }
    }

    /// PreFilter and Filter over the candidates: the passing positions, and the
    /// failures (or the error) in a result whose node lists are left empty.
    fn run_filter(&self, c: Candidates) -> (Candidates, Vec<usize>, wire::ExtenderFilterResult) {
        let mut out = wire::ExtenderFilterResult::default();
        for name in &c.unknown {
            out.failed_and_unresolvable_nodes.insert(name.clone(), "node not found in the extender's cache".to_owned());
        }
        let mut passed: Vec<usize> = Vec::with_capacity(c.idx.len());
        let mut state = CycleState::new();
        let nodes = c.snap.nodes();
        match runtime::run_pre_filter(&self.profile, &mut state, &c.pod, &c.snap) {
            Err(s) if s.code() == Code::Error => out.error = s.message(),
            Err(s) => {
                for &i in &c.idx {
                    fail(&mut out, nodes[i].node().name(), &s);
                }
            }
            Ok(pre) => {
                let guard = runtime::FilterGuard::new(&self.profile);
                let active = runtime::ActiveFilters::new(&self.profile, &state);
                let mut bufs = ChunkBufs::default();
                let mut chunk: Vec<usize> = Vec::with_capacity(CHUNK);
                let mut rest = c.idx.as_slice();
                // Plugin by plugin over chunks of nodes, as the scheduler's Filter
                // runs: each node gets the status of its first failing plugin, as
                // node by node (see `scheduler::filter_chunk`).
                let outcome = guard.run(|current| {
                    while !rest.is_empty() {
                        let mut taken = 0;
                        chunk.clear();
                        for &i in rest {
                            if chunk.len() == CHUNK {
                                break;
                            }
                            taken += 1;
                            if pre.result.admits(&c.snap, i) {
                                chunk.push(i);
                            } else {
                                let s = Status::unresolvable(format!(
                                    "node(s) didn't satisfy plugin(s) {}",
                                    runtime::go_string_list(&pre.narrowing_plugins)
                                ));
                                fail(&mut out, nodes[i].node().name(), &s);
                            }
                        }
                        rest = &rest[taken..];
                        filter_chunk(&active, &state, &c.pod, &c.snap, &chunk, current, &mut bufs);
                        for (j, &i) in chunk.iter().enumerate() {
                            let s = std::mem::take(&mut bufs.outcome[j]);
                            if s.is_success() {
                                passed.push(i);
                            } else if s.code() == Code::Error {
                                out.error = s.message();
                                return;
                            } else {
                                fail(&mut out, nodes[i].node().name(), &s);
                            }
                        }
                    }
                });
                if let Err(s) = outcome {
                    out.error = s.message();
                }
            }
        }
        (c, passed, out)
    }

    /// The `prioritize` verb.
    pub fn prioritize(&self, args: wire::ExtenderArgs) -> Result<wire::HostPriorityList, String> {
        let c = self.candidates(args)?;
        let nodes = c.snap.nodes();
        let zero = || c.idx.iter().map(|&i| wire::HostPriority { host: nodes[i].node().name().to_owned(), score: 0 });
        let mut state = CycleState::new();
        // Score plugins read what their PreFilter wrote; a rejecting PreFilter scores nothing.
        if runtime::run_pre_filter(&self.profile, &mut state, &c.pod, &c.snap).is_err() {
            return Ok(zero().collect());
        }
        let list = NodeList::new(&c.snap, &c.idx);
        if !runtime::run_pre_score(&self.profile, &mut state, &c.pod, list, None).is_success() {
            return Ok(zero().collect());
        }
        let mut totals = vec![0i64; c.idx.len()];
        let mut weights = 0i64;
        let mut scores: Vec<NodeScore> = Vec::with_capacity(c.idx.len());
        for (pi, sp) in self.profile.score.iter().enumerate() {
            if state.skips_score(pi) {
                continue;
            }
            scores.clear();
            scores.extend(c.idx.iter().map(|&i| NodeScore { name: nodes[i].name(), score: 0 }));
            let list = NodeList::new(&c.snap, &c.idx);
            if runtime::run_score_plugin(sp, &state, &c.pod, list, &mut scores, None).is_err()
                || runtime::run_normalize(sp, &state, &c.pod, &mut scores, None).is_err()
            {
                continue;
            }
            weights += sp.weight;
            for (t, s) in totals.iter_mut().zip(&scores) {
                *t += s.score * sp.weight;
            }
        }
        let scale = |t: i64| if weights == 0 { 0 } else { t * MAX_EXTENDER_PRIORITY / (MAX_NODE_SCORE * weights) };
        Ok(c.idx
            .iter()
            .zip(&totals)
            .map(|(&i, &t)| wire::HostPriority { host: nodes[i].node().name().to_owned(), score: scale(t) })
            .collect())
    }

    /// The `bind` verb: never leaves the pod assumed or reserved when it fails.
    pub fn bind(&self, args: &wire::ExtenderBindingArgs) -> wire::ExtenderBindingResult {
        let err = |m: String| wire::ExtenderBindingResult { error: m };
        let pod = {
            let seen = self.seen.lock();
            seen.iter().rev().find(|p| *p.uid == *args.pod_uid).cloned()
        };
        let Some(pod) = pod else {
            return err(format!(
                "pod {}/{} (uid {:?}) was not seen by filter or prioritize",
                args.pod_namespace, args.pod_name, args.pod_uid
            ));
        };
        let snap = self.snapshot();
        if snap.get(&args.node).is_none() {
            return err(format!("node {:?} not found in the extender's cache", args.node));
        }
        let mut assumed = (*pod).clone();
        let mut p = (*assumed.pod).clone();
        p.spec.node_name.clone_from(&args.node);
        assumed.pod = Arc::new(p);
        let assumed = Arc::new(assumed);
        if let Err(e) = self.cache.lock().assume_pod(assumed.clone(), &args.node) {
            return err(e.to_string());
        }
        let node = args.node.as_str();
        let profile = &*self.profile;
        let mut state = CycleState::new();
        let undo = |state: &mut CycleState, s: Status| {
            runtime::run_unreserve_timed(profile, state, &assumed, node, None);
            let _ = self.cache.lock().forget_pod(&assumed.uid);
            err(s.message())
        };
        if let Err(s) = runtime::run_pre_filter(profile, &mut state, &assumed, &snap)
            && s.code() == Code::Error
        {
            let _ = self.cache.lock().forget_pod(&assumed.uid);
            return err(s.message());
        }
        let s = runtime::run_reserve(profile, &mut state, &assumed, node, None);
        if !s.is_success() {
            return undo(&mut state, s);
        }
        match runtime::run_permit(profile, &mut state, &assumed, node, None) {
            PermitOutcome::Allow => {}
            PermitOutcome::Wait(_) => {
                return undo(
                    &mut state,
                    Status::unschedulable("a Permit plugin asked to wait; the extender cannot hold pods"),
                );
            }
            PermitOutcome::Reject(s) => return undo(&mut state, s),
        }
        let s = runtime::run_pre_bind(profile, &mut state, &assumed, node, None);
        if !s.is_success() {
            return undo(&mut state, s);
        }
        let s = runtime::run_bind(profile, &mut state, &assumed, node, None);
        if !s.is_success() {
            return undo(&mut state, s);
        }
        let _ = self.cache.lock().finish_binding(&assumed.uid);
        runtime::run_post_bind(profile, &state, &assumed, node, None);
        self.seen.lock().retain(|q| q.uid != assumed.uid);
        wire::ExtenderBindingResult::default()
    }

    /// The `preempt` verb.
    pub fn preempt(&self, args: wire::ExtenderPreemptionArgs) -> Result<wire::ExtenderPreemptionResult, String> {
        let pod = args.pod.ok_or("ExtenderPreemptionArgs.Pod is required")?.0;
        let pod = PodInfo::new(pod).map_err(|e| format!("Pod: {e}"))?;
        let meta: BTreeMap<String, wire::MetaVictims> =
            match (args.node_name_to_meta_victims, args.node_name_to_victims) {
                (Some(m), _) => m,
                (None, Some(full)) => full
                    .into_iter()
                    .map(|(n, v)| {
                        let pods = v.pods.into_iter().map(|p| wire::MetaPod { uid: p.0.metadata.uid }).collect();
                        (n, wire::MetaVictims { pods, num_pdb_violations: v.num_pdb_violations })
                    })
                    .collect(),
                (None, None) => BTreeMap::new(),
            };
        let snap = self.snapshot();
        let mut state = CycleState::new();
        let mut out = wire::ExtenderPreemptionResult::default();
        if runtime::run_pre_filter(&self.profile, &mut state, &pod, &snap).is_err() {
            return Ok(out);
        }
        let guard = runtime::FilterGuard::new(&self.profile);
        for (node, victims) in meta {
            let Some(info) = snap.get(&node) else { continue };
            let mut trial: NodeInfo = (**info).clone();
            for v in &victims.pods {
                trial.remove_pod(&v.uid);
            }
            let fits = guard
                .run(|current| runtime::run_filters(&self.profile, &state, &pod, &trial, current).is_success())
                .unwrap_or(false);
            if fits {
                out.node_name_to_meta_victims.insert(node, victims);
            }
        }
        Ok(out)
    }
}

/// The candidates of one Filter or Prioritize request.
struct Candidates {
    pod: Arc<PodInfo>,
    snap: Arc<Snapshot>,
    /// Positions in `snap` of the nodes to evaluate, in request order.
    idx: Vec<usize>,
    /// Requested names the cache does not know.
    unknown: Vec<String>,
    cache_capable: bool,
}

/// Records a failed node under the map its code belongs to.
fn fail(out: &mut wire::ExtenderFilterResult, node: &str, s: &Status) {
    let map = if s.code() == Code::UnschedulableAndUnresolvable {
        &mut out.failed_and_unresolvable_nodes
    } else {
        &mut out.failed_nodes
    };
    map.insert(node.to_owned(), s.message());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::Handle;
    use crate::testing::{NodeBuilder, PodBuilder};

    /// Full-node mode (not node-cache-capable): the pod's required anti-affinity
    /// counts the pod on a node the request does not send, as kube-scheduler's
    /// PreFilter counts over the whole snapshot; node-cache-capable mode agrees.
    #[test]
    fn full_node_mode_prefilter_sees_the_cluster() {
        let cache = Arc::new(Mutex::new(Cache::new()));
        for (n, zone) in [("a", "z1"), ("b", "z1"), ("c", "z2")] {
            cache.lock().add_node(NodeBuilder::new(n).cpu("8").memory("16Gi").zone(zone).build()).unwrap();
        }
        let web = PodBuilder::new("web").uid("web").label("app", "web").node_name("a").cpu("1").build();
        cache.lock().add_pod(Arc::new(PodInfo::new(web).unwrap())).unwrap();
        let service = ExtenderService::new(Arc::new(Profile::kube_default(&Handle::default())), cache.clone());
        let pod = serde_json::json!({
            "metadata": {"name": "p", "namespace": "default", "uid": "p"},
            "spec": {
                "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
                "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
                    "labelSelector": {"matchLabels": {"app": "web"}},
                    "topologyKey": "topology.kubernetes.io/zone"
                }]}}
            }
        });
        let sent: Vec<serde_json::Value> = ["b", "c"]
            .iter()
            .map(|n| serde_json::to_value(cache.lock().node_info(n).unwrap().node()).unwrap())
            .collect();
        let body = serde_json::json!({"Pod": pod, "Nodes": {"items": sent}, "NodeNames": null});
        let r = service.handle("filter", &serde_json::to_vec(&body).unwrap());
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
        let out: wire::ExtenderFilterResult = wire::decode(&r.body).unwrap();
        let passed: Vec<&str> = out.nodes.as_ref().unwrap().items.iter().map(|n| n.0.name()).collect();
        assert_eq!(passed, ["c"]);
        assert!(out.failed_nodes.contains_key("b") && !out.failed_nodes.contains_key("a"), "{out:?}");
        let body = serde_json::json!({"Pod": pod, "Nodes": null, "NodeNames": ["b", "c"]});
        let out: wire::ExtenderFilterResult =
            wire::decode(&service.handle("filter", &serde_json::to_vec(&body).unwrap()).body).unwrap();
        assert_eq!(out.node_names.unwrap(), ["c"]);
        // A sent node the cache lacks is judged too, with no pods.
        let mut d = serde_json::to_value(cache.lock().node_info("c").unwrap().node()).unwrap();
        d["metadata"]["name"] = "d".into();
        let body = serde_json::json!({"Pod": pod, "Nodes": {"items": [d]}, "NodeNames": null});
        let out: wire::ExtenderFilterResult =
            wire::decode(&service.handle("filter", &serde_json::to_vec(&body).unwrap()).body).unwrap();
        assert_eq!(out.nodes.unwrap().items.len(), 1);
    }
}
