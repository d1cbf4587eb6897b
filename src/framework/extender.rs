//! The scheduler-extender contract (upstream `framework.Extender`,
//! `k8s.io/kube-scheduler/framework`) and the three places the cycle calls extenders:
//! Filter after the plugins, Prioritize after the Score plugins, Bind before the Bind
//! plugins (`findNodesThatPassExtenders`, `prioritizeNodes` and `extendersBinding` in
//! `pkg/scheduler/schedule_one.go`).
//!
//! The contract is plain Rust so in-process extenders and tests need no network; the
//! HTTP client and server of the protocol live in `schedkit::extender` (feature
//! `extender`). Extenders are shared on the [`Handle`] as an [`Extenders`] set:
//! [`SchedulerBuilder::extender`](crate::scheduler::SchedulerBuilder::extender) puts
//! one there, and `KubeSchedulerConfiguration::build` does for `extenders[]`.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::framework::preemption::Candidate;
pub use crate::framework::preemption::Victims;
use crate::framework::{Code, Handle, Status};
use crate::model::Symbol;
use crate::snapshot::{NodeInfo, PodInfo, Snapshot};

/// The highest score an extender's Prioritize may give (`extenderv1.MaxExtenderPriority`).
pub const MAX_EXTENDER_PRIORITY: i64 = 10;
/// The lowest score an extender's Prioritize may give (`extenderv1.MinExtenderPriority`).
pub const MIN_EXTENDER_PRIORITY: i64 = 0;
/// The name the cycle records among a pod's unschedulable plugins when extenders
/// removed nodes (upstream `framework.ExtenderName`).
pub const EXTENDER_NAME: &str = "Extender";

/// What an extender's Filter returned: the nodes that pass, as positions in the list
/// it was given (in any order, each at most once), and why others failed, by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExtenderFilterResult {
    /// Positions (in the `nodes` passed to [`Extender::filter`]) of the nodes that pass.
    pub passed: Vec<usize>,
    /// Failed nodes whose failure another event may resolve (become Unschedulable).
    pub failed: BTreeMap<String, String>,
    /// Failed nodes no event resolves (become UnschedulableAndUnresolvable, and win
    /// over `failed` for the same node).
    pub failed_and_unresolvable: BTreeMap<String, String>,
}

/// One host's score from an extender's Prioritize (`extenderv1.HostPriority`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPriority {
    /// Node name.
    pub host: String,
    /// Score, between [`MIN_EXTENDER_PRIORITY`] and [`MAX_EXTENDER_PRIORITY`].
    pub score: i64,
}

/// What an extender binds (`v1.Binding`: the pod's namespace, name and uid, and the
/// target node).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtenderBinding {
    /// Pod namespace.
    pub namespace: String,
    /// Pod name.
    pub name: String,
    /// Pod uid.
    pub uid: String,
    /// Target node.
    pub node: String,
}

/// Why an extender call failed. The messages are upstream's where upstream has one
/// (`pkg/scheduler/extender.go`, `schedule_one.go`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ExtenderError {
    /// The request did not complete (connection refused, timeout, reset...), as Go's
    /// `url.Error` prints it.
    #[error("Post \"{url}\": {message}")]
    Transport {
        /// The verb's URL.
        url: String,
        /// What the transport said.
        message: String,
    },
    /// The extender answered with a status other than 200.
    #[error("failed {verb} with extender at URL {url}, code {code}")]
    Status {
        /// The verb.
        verb: String,
        /// The verb's URL.
        url: String,
        /// The HTTP status.
        code: u16,
    },
    /// The answer was not the verb's JSON result.
    #[error("decoding the {verb} result of extender at URL {url}: {message}")]
    Decode {
        /// The verb.
        verb: String,
        /// The verb's URL.
        url: String,
        /// The decoder's message.
        message: String,
    },
    /// The extender reported an error in its result (`result.Error`), verbatim.
    #[error("{0}")]
    Reported(String),
    /// Filter returned a node that was not sent to it.
    #[error("extender {extender:?} claims a filtered node {node:?} which is not found in the input node list")]
    UnknownNode {
        /// The extender's name (its URL prefix).
        extender: String,
        /// The node it claimed.
        node: String,
    },
    /// Preemption named a victim that is not on the node.
    #[error(
        "extender: {extender} claims to preempt pod (UID: {uid}) on node: {node}, but the pod is not found on that node"
    )]
    UnknownVictim {
        /// The extender's name.
        extender: String,
        /// The victim's uid.
        uid: String,
        /// The node.
        node: String,
    },
    /// A verb was called that the extender is not configured for.
    #[error("{0}")]
    NotSupported(String),
}

/// A scheduler extender: an external process (or in-process object) that filters,
/// scores, binds and vets preemption victims next to the profile's plugins (upstream
/// `framework.Extender`).
///
/// The cycle calls `filter` sequentially, once per interested extender, on the
/// shrinking feasible list; `prioritize` once per interested extender after the Score
/// plugins (an error only drops that extender's scores); `bind` for the first
/// interested binder. Calls come from the scheduling thread (Filter, Prioritize) and
/// from whichever thread runs the binding cycle (Bind).
pub trait Extender: Send + Sync {
    /// A name for messages and plugin scores (upstream: the URL prefix).
    fn name(&self) -> &str;

    /// The nodes among `nodes` that pass, and why the others failed.
    fn filter(&self, pod: &PodInfo, nodes: &[&NodeInfo]) -> Result<ExtenderFilterResult, ExtenderError>;

    /// Scores for `nodes` (0..=[`MAX_EXTENDER_PRIORITY`]) and the extender's weight.
    fn prioritize(&self, pod: &PodInfo, nodes: &[&NodeInfo]) -> Result<(Vec<HostPriority>, i64), ExtenderError>;

    /// Binds the pod ([`Extender::is_binder`] extenders only).
    fn bind(&self, _binding: &ExtenderBinding) -> Result<(), ExtenderError> {
        Err(ExtenderError::NotSupported(format!("unexpected empty bindVerb in extender {}", self.name())))
    }

    /// Given the victims the scheduler chose per node, the nodes (and victims) the
    /// extender agrees with ([`Extender::supports_preemption`] extenders only).
    fn process_preemption(
        &self,
        _pod: &PodInfo,
        _victims: &BTreeMap<String, Victims>,
        _snapshot: &Snapshot,
    ) -> Result<BTreeMap<String, Victims>, ExtenderError> {
        Err(ExtenderError::NotSupported(format!(
            "preempt verb is not defined for extender {} but run into ProcessPreemption",
            self.name()
        )))
    }

    /// Whether it binds pods.
    fn is_binder(&self) -> bool {
        false
    }

    /// Whether it filters (a filter verb is set).
    fn is_filter(&self) -> bool {
        true
    }

    /// Whether it scores (a prioritize verb is set).
    fn is_prioritizer(&self) -> bool {
        true
    }

    /// Whether it takes part in preemption.
    fn supports_preemption(&self) -> bool {
        false
    }

    /// Whether its errors are skipped instead of failing the cycle.
    fn is_ignorable(&self) -> bool {
        false
    }

    /// Whether the pod concerns it (upstream: it manages a resource the pod names).
    fn is_interested(&self, _pod: &PodInfo) -> bool {
        true
    }
}

/// Upstream `HTTPExtender.IsInterested` over a set of managed resource names: true
/// when the set is empty, or when a container's or init container's requests **or
/// limits** name one of them.
pub fn pod_names_managed_resource(pod: &PodInfo, managed: &[Symbol]) -> bool {
    if managed.is_empty() {
        return true;
    }
    let spec = &pod.pod.spec;
    spec.containers
        .iter()
        .chain(&spec.init_containers)
        .any(|c| c.resources.requests.iter().chain(c.resources.limits.iter()).any(|(name, _)| managed.contains(&name)))
}

/// The scheduler's extenders in call order: non-ignorable ones first, then the
/// ignorable ones, each group in configuration order (upstream `buildExtenders`).
#[derive(Clone, Default)]
pub struct Extenders {
    list: Vec<Arc<dyn Extender>>,
}

impl std::fmt::Debug for Extenders {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.list.iter().map(|e| e.name())).finish()
    }
}

impl Extenders {
    /// A set of extenders, ignorable ones moved to the end.
    pub fn new(extenders: impl IntoIterator<Item = Arc<dyn Extender>>) -> Extenders {
        let mut set = Extenders::default();
        for e in extenders {
            set.push(e);
        }
        set
    }

    /// Adds one, keeping the ignorable ones last.
    pub fn push(&mut self, e: Arc<dyn Extender>) {
        if e.is_ignorable() {
            self.list.push(e);
        } else {
            let at = self.list.iter().position(|x| x.is_ignorable()).unwrap_or(self.list.len());
            self.list.insert(at, e);
        }
    }

    /// The extenders in call order.
    pub fn list(&self) -> &[Arc<dyn Extender>] {
        &self.list
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// The handle's extenders, if any are set and the set is not empty.
    pub fn of(handle: &Handle) -> Option<Arc<Extenders>> {
        handle.shared::<Extenders>().filter(|e| !e.is_empty())
    }

    /// The Filter stage (upstream `findNodesThatPassExtenders`): interested extenders
    /// in order on the shrinking `feasible` list (snapshot indices), stopping when it
    /// is empty. Failed nodes go to `failed` (unresolvable ones win over resolvable
    /// ones of the same extender). An error of an ignorable extender skips it; any
    /// other error is returned as an Error status with the extender's message.
    /// Returns whether the extenders removed any node.
    pub fn filter(
        &self,
        pod: &PodInfo,
        snap: &Snapshot,
        feasible: &mut Vec<usize>,
        failed: &mut Vec<(usize, Status)>,
    ) -> Result<bool, Status> {
        let before = feasible.len();
        for e in &self.list {
            if feasible.is_empty() {
                break;
            }
            if !e.is_filter() || !e.is_interested(pod) {
                continue;
            }
            let nodes: Vec<&NodeInfo> = feasible.iter().map(|&i| &*snap.nodes()[i]).collect();
            let result = match e.filter(pod, &nodes) {
                Ok(r) => r,
                Err(_) if e.is_ignorable() => continue,
                Err(err) => return Err(Status::error(err.to_string())),
            };
            let mut next = Vec::with_capacity(result.passed.len());
            for &k in &result.passed {
                if let Some(&i) = feasible.get(k) {
                    next.push(i);
                } else {
                    if e.is_ignorable() {
                        next.clear();
                        break;
                    }
                    let err = ExtenderError::UnknownNode { extender: e.name().to_owned(), node: format!("#{k}") };
                    return Err(Status::error(err.to_string()));
                }
            }
            if next.is_empty() && result.passed.iter().any(|&k| k >= feasible.len()) {
                continue;
            }
            // Statuses go to any node the extender names, sent or not (upstream sets
            // them by name in NodeToStatus); names unknown to the snapshot are dropped.
            let index = |name: &str| Symbol::lookup(name).and_then(|s| snap.index_of(s));
            for (name, msg) in &result.failed_and_unresolvable {
                if let Some(i) = index(name) {
                    set_status(failed, i, Status::unresolvable(msg.clone()));
                }
            }
            for (name, msg) in &result.failed {
                if result.failed_and_unresolvable.contains_key(name) {
                    continue;
                }
                if let Some(i) = index(name) {
                    set_status(failed, i, Status::unschedulable(msg.clone()));
                }
            }
            *feasible = next;
        }
        Ok(feasible.len() != before)
    }

    /// Whether the extenders keep `node` for `pod` (the nominated-node and hinted-node
    /// fast paths; an error counts as no, as upstream's `evaluateNominatedNode` only
    /// logs it and falls back to the full search).
    pub fn accept(&self, pod: &PodInfo, snap: &Snapshot, node: usize) -> bool {
        let mut feasible = vec![node];
        let mut failed = Vec::new();
        self.filter(pod, snap, &mut feasible, &mut failed).is_ok() && !feasible.is_empty()
    }

    /// The Prioritize stage (the extender half of upstream `prioritizeNodes`): each
    /// interested extender scores the feasible nodes, and `score × weight ×
    /// (MaxNodeScore / MaxExtenderPriority)` is added to the node's total. An error
    /// only drops that extender's scores. `profile_scored` says whether the profile
    /// has Score plugins: when not, the totals (1 each for a profile without
    /// extenders) start from 0, as upstream's.
    pub fn prioritize(
        &self,
        pod: &PodInfo,
        snap: &Snapshot,
        feasible: &[usize],
        totals: &mut [i64],
        profile_scored: bool,
    ) {
        if !profile_scored {
            totals.fill(0);
        }
        let nodes: Vec<&NodeInfo> = feasible.iter().map(|&i| &*snap.nodes()[i]).collect();
        let position = |name: &str| {
            let i = snap.index_of(Symbol::lookup(name)?)?;
            feasible.iter().position(|&f| f == i)
        };
        for e in &self.list {
            if !e.is_interested(pod) {
                continue;
            }
            let Ok((scores, weight)) = e.prioritize(pod, &nodes) else { continue };
            for hp in scores {
                if let Some(k) = position(&hp.host) {
                    let final_score = hp
                        .score
                        .saturating_mul(weight)
                        .saturating_mul(crate::framework::MAX_NODE_SCORE / MAX_EXTENDER_PRIORITY);
                    totals[k] = totals[k].saturating_add(final_score);
                }
            }
        }
    }

    /// Whether an extender is an interested binder for `pod` (then the Bind stage is
    /// the extenders', [`Extenders::bind`]).
    pub fn binds(&self, pod: &PodInfo) -> bool {
        self.list.iter().any(|e| e.is_binder() && e.is_interested(pod))
    }

    /// The Bind stage (upstream `extendersBinding`): the first binder interested in
    /// the pod binds it; an ignorable binder's error passes to the next one. `None`
    /// when no extender bound (the Bind plugins run), else the outcome.
    pub fn bind(&self, pod: &PodInfo, node: &str) -> Option<Status> {
        for e in &self.list {
            if !e.is_binder() || !e.is_interested(pod) {
                continue;
            }
            let m = &pod.pod.metadata;
            let binding = ExtenderBinding {
                // The API server defaults an empty namespace to `default`.
                namespace: if m.namespace.is_empty() { "default".to_owned() } else { m.namespace.clone() },
                name: m.name.clone(),
                // The pod's identity in schedkit: its uid, or `namespace/name` without one.
                uid: pod.uid.to_string(),
                node: node.to_owned(),
            };
            match e.bind(&binding) {
                Err(_) if e.is_ignorable() => {}
                Err(err) => return Some(Status::error(err.to_string())),
                Ok(()) => return Some(Status::SUCCESS),
            }
        }
        None
    }

    /// Whether some extender filters (upstream `hasExtenderFilters`).
    pub fn has_filters(&self) -> bool {
        self.list.iter().any(|e| e.is_filter())
    }
}

/// Adds [`EXTENDER_NAME`] to a sorted list of unschedulable plugins (upstream inserts
/// it into the diagnosis's set when extenders removed nodes).
pub fn add_extender_name(plugins: &mut Vec<&'static str>) {
    if let Err(at) = plugins.binary_search(&EXTENDER_NAME) {
        plugins.insert(at, EXTENDER_NAME);
    }
}

/// Finds an extender's returned node names among the ones sent (for
/// [`ExtenderFilterResult::passed`]): a cursor for the usual answer (a
/// subset in the order sent), a hash map built on the first miss otherwise.
#[derive(Debug)]
pub struct NameFinder<'a> {
    nodes: &'a [&'a NodeInfo],
    cursor: usize,
    map: Option<ahash::AHashMap<&'a str, usize>>,
}

impl<'a> NameFinder<'a> {
    /// A finder over the nodes sent.
    pub fn new(nodes: &'a [&'a NodeInfo]) -> Self {
        NameFinder { nodes, cursor: 0, map: None }
    }

    /// While names come in the order sent (no map built yet): the position after
    /// the last one found, where the next is looked for first.
    #[cfg(feature = "extender")]
    pub(crate) fn cursor(&self) -> Option<usize> {
        self.map.is_none().then_some(self.cursor)
    }

    /// Moves the cursor to `k`, past names the caller matched itself from
    /// [`Self::cursor`] on.
    #[cfg(feature = "extender")]
    pub(crate) fn skip_to(&mut self, k: usize) {
        self.cursor = k.min(self.nodes.len());
    }

    /// Position of `name` among the sent nodes.
    pub fn find(&mut self, name: &str) -> Option<usize> {
        if self.map.is_none() {
            while self.cursor < self.nodes.len() {
                let k = self.cursor;
                self.cursor += 1;
                if self.nodes[k].held_name().as_str() == name {
                    return Some(k);
                }
            }
            let nodes = self.nodes;
            self.map = Some(nodes.iter().enumerate().map(|(k, n)| (n.node().name(), k)).collect());
        }
        self.map.as_ref().and_then(|m| m.get(name).copied())
    }

    /// [`Self::find`] for a name given as bytes (not yet checked to be UTF-8): equal
    /// bytes are a sent node's valid name; bytes that are not UTF-8 match nothing.
    pub fn find_bytes(&mut self, name: &[u8]) -> Option<usize> {
        if self.map.is_none() {
            while self.cursor < self.nodes.len() {
                let k = self.cursor;
                self.cursor += 1;
                if self.nodes[k].held_name().as_str().as_bytes() == name {
                    return Some(k);
                }
            }
        }
        std::str::from_utf8(name).ok().and_then(|n| self.find(n))
    }
}

/// Upstream `Evaluator.callExtenders`: each interested extender that supports
/// preemption vets the candidates' victims in turn (each sees the previous one's
/// answer); an ignorable extender's error skips it, and a node it answers with no
/// victims is dropped; a plain extender's error, or a node with no victims from it
/// (`expected at least one victim pod on node "<n>"`), fails preemption with an Error
/// status. The loop stops once no candidate is left. Candidates keep their order
/// (upstream rebuilds them from a map, in Go's random order).
pub fn preemption_candidates(
    handle: &Handle,
    pod: &PodInfo,
    snapshot: &Snapshot,
    candidates: Vec<Candidate>,
) -> Result<Vec<Candidate>, Status> {
    let Some(extenders) = Extenders::of(handle) else { return Ok(candidates) };
    let mut map: BTreeMap<String, Victims> =
        candidates.iter().map(|c| (c.node.to_string(), c.victims.clone())).collect();
    if map.is_empty() {
        return Ok(candidates);
    }
    for e in extenders.list() {
        if !e.supports_preemption() || !e.is_interested(pod) {
            continue;
        }
        let mut answer = match e.process_preemption(pod, &map, snapshot) {
            Ok(a) => a,
            Err(_) if e.is_ignorable() => continue,
            Err(err) => return Err(Status::new(Code::Error, err.to_string())),
        };
        let empty: Vec<String> = answer.iter().filter(|(_, v)| v.pods.is_empty()).map(|(n, _)| n.clone()).collect();
        for node in empty {
            if !e.is_ignorable() {
                return Err(Status::error(format!("expected at least one victim pod on node {node:?}")));
            }
            answer.remove(&node);
        }
        map = answer;
        if map.is_empty() {
            break;
        }
    }
    let mut out: Vec<Candidate> = Vec::with_capacity(map.len());
    for c in candidates {
        if let Some(v) = c.node.with_str(|n| map.remove(n)) {
            out.push(Candidate { victims: v, ..c });
        }
    }
    // Nodes an extender added that were not candidates (their victims as it said).
    for (node, victims) in map {
        let Some(node_index) = Symbol::lookup(&node).and_then(|s| snapshot.index_of(s)) else { continue };
        out.push(Candidate { node: snapshot.nodes()[node_index].name(), node_index, victims });
    }
    Ok(out)
}

/// Sets (replaces) the status of snapshot node `i`.
fn set_status(failed: &mut Vec<(usize, Status)>, i: usize, s: Status) {
    match failed.iter_mut().find(|(j, _)| *j == i) {
        Some(slot) => slot.1 = s,
        None => failed.push((i, s)),
    }
}
