//! The evaluator: a preemption attempt's context, the plugin-specific
//! [`PreemptionStrategy`], the candidate search, and [`preempt`] itself.

use std::sync::Arc;

use super::{
    Candidate, DryRun, NominatedPods, PdbBudgets, PreemptionError, RunningProfile, Victims,
    pick_one_node_for_preemption,
};
use crate::framework::{Code, CycleState, Handle, NodeToStatus, PostFilterResult, Profile, Status};
use crate::model::{PreemptionPolicy, Symbol};
use crate::snapshot::{PodInfo, Snapshot};

/// Everything one preemption attempt reads.
pub struct PreemptionContext<'a> {
    /// The running profile (its Filters are the dry-run Filters).
    pub profile: &'a Profile,
    /// The cycle's state after PreFilter.
    pub state: &'a CycleState,
    /// The preemptor.
    pub pod: &'a PodInfo,
    /// The cycle's snapshot.
    pub snapshot: &'a Snapshot,
    /// Filter statuses per node.
    pub statuses: &'a NodeToStatus,
    /// The handle (nominator, budgets, evictor).
    pub handle: &'a Handle,
    /// Nominated pods for dry-run Filters (taken once per attempt).
    pub nominated: Option<Arc<NominatedPods>>,
}

impl std::fmt::Debug for PreemptionContext<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreemptionContext").field("pod", &self.pod.pod.key()).finish_non_exhaustive()
    }
}

impl PreemptionContext<'_> {
    /// The node the preemptor is nominated to: the nominator's record, else the
    /// pod's `status.nominatedNodeName`.
    pub fn nominated_node_name(&self) -> Option<Symbol> {
        self.handle.preemption().nominator().nominated_node(&self.pod.uid).or_else(|| {
            let n = &self.pod.pod.status.nominated_node_name;
            // A lookup, not `intern`: a name nobody interned is no node of the
            // snapshot, and interning would pin it.
            if n.is_empty() { None } else { Symbol::lookup(n) }
        })
    }

    /// The Filter status of a node, by name.
    pub fn status_of(&self, node: Symbol) -> Option<&Status> {
        self.snapshot.index_of(node).and_then(|i| self.statuses.get(i))
    }
}

/// The plugin-specific steps of preemption (upstream `preemption.Interface`).
pub trait PreemptionStrategy: Send + Sync {
    /// The plugin's name (for statuses).
    fn plugin_name(&self) -> &'static str;

    /// Where to start among `num_potential` nodes and how many candidates to find.
    fn offset_and_num_candidates(&self, num_potential: usize) -> (usize, usize);

    /// Whether the pod may preempt; `Err` carries the reason it may not.
    fn pod_eligible_to_preempt_others(
        &self,
        cx: &PreemptionContext<'_>,
        nominated_node_status: Option<&Status>,
    ) -> Result<(), String>;

    /// Chooses victims on the node of `dry` (see [`select_victims_on_node`](super::select_victims_on_node)).
    fn select_victims_on_node(
        &self,
        cx: &PreemptionContext<'_>,
        dry: &mut DryRun<'_>,
        pdbs: &PdbBudgets,
    ) -> Result<Victims, Status>;
}

/// Candidates found by [`find_candidates`], with the dry-run statuses of the nodes
/// that were not.
#[derive(Debug, Clone, Default)]
pub struct CandidateSearch {
    /// Candidates: PDB-respecting ones first, then violating ones (upstream order).
    pub candidates: Vec<Candidate>,
    /// Nodes that were dry-run without success, with why.
    pub failed: Vec<(usize, Status)>,
    /// Nodes whose Filter status allowed preemption.
    pub potential_nodes: usize,
    /// Dry-run Filter passes run (cost measure for tests and benches).
    pub filter_runs: usize,
}

/// Indices of nodes whose Filter status is `Unschedulable` (upstream
/// `NodesForStatusCode`), in snapshot order.
pub fn potential_nodes(snapshot: &Snapshot, statuses: &NodeToStatus) -> Vec<usize> {
    let mut code: Vec<Option<Code>> = vec![None; snapshot.len()];
    for (i, s) in &statuses.statuses {
        if let Some(c) = code.get_mut(*i) {
            *c = Some(s.code());
        }
    }
    let absent = statuses.absent.as_ref().map(Status::code);
    code.iter().enumerate().filter(|(_, c)| c.or(absent) == Some(Code::Unschedulable)).map(|(i, _)| i).collect()
}

/// Upstream `findCandidates` + `DryRunPreemption`: dry-runs potential nodes from
/// `offset` until `num_candidates` are found with at least one that violates no PDB.
pub fn find_candidates(strategy: &dyn PreemptionStrategy, cx: &PreemptionContext<'_>) -> CandidateSearch {
    let potential = potential_nodes(cx.snapshot, cx.statuses);
    let mut out = CandidateSearch { potential_nodes: potential.len(), ..CandidateSearch::default() };
    if potential.is_empty() {
        return out;
    }
    let pdbs = PdbBudgets::new(cx.handle.preemption().pod_disruption_budgets(), cx.snapshot);
    let (offset, wanted) = strategy.offset_and_num_candidates(potential.len());
    let nodes = cx.snapshot.nodes();
    let mut violating = Vec::new();
    for i in 0..potential.len() {
        let idx = potential[(offset + i) % potential.len()];
        let mut dry = DryRun::new(cx.profile, cx.state, cx.pod, &nodes[idx], cx.nominated.as_deref());
        let r = strategy.select_victims_on_node(cx, &mut dry, &pdbs);
        out.filter_runs += dry.filter_runs();
        match r {
            Ok(v) if !v.pods.is_empty() => {
                let c = Candidate { node: nodes[idx].name(), node_index: idx, victims: v };
                if c.victims.num_pdb_violations == 0 {
                    out.candidates.push(c);
                } else {
                    violating.push(c);
                }
                if !out.candidates.is_empty() && out.candidates.len() + violating.len() >= wanted {
                    break;
                }
            }
            Ok(_) => out.failed.push((
                idx,
                Status::error(format!("expected at least one victim pod on node {:?}", nodes[idx].node().name())),
            )),
            Err(s) => out.failed.push((idx, s)),
        }
    }
    out.candidates.extend(violating);
    out
}

/// A preemption plugin's whole PostFilter: reads the running profile `plugin` was
/// called from, takes the nominated pods once, and runs [`preempt`] with `strategy`.
pub fn post_filter_preempt(
    strategy: &dyn PreemptionStrategy,
    plugin: &str,
    handle: &Handle,
    state: &CycleState,
    pod: &PodInfo,
    snapshot: &Snapshot,
    statuses: &NodeToStatus,
) -> (Option<PostFilterResult>, Status) {
    let profile = match RunningProfile::read(state, plugin) {
        Ok(p) => p,
        Err(s) => return (None, s),
    };
    let cx = PreemptionContext {
        profile: &profile,
        state,
        pod,
        snapshot,
        statuses,
        handle,
        nominated: handle.preemption().nominator().snapshot(),
    };
    preempt(strategy, &cx)
}

/// Upstream `Evaluator.Preempt`: eligibility, candidates, the pick, eviction.
/// Returns the nominated node with `Success`; `Unschedulable` when preemption can't
/// help (with upstream's per-node reasons) or when no [`Evictor`](super::Evictor) is configured (so a
/// profile with a preemption plugin but no evictor behaves as one without, and says
/// so); `Error` when a dry run or the eviction fails — after a failed eviction the
/// result still names the node, and the scheduler keeps the pod nominated there.
pub fn preempt(strategy: &dyn PreemptionStrategy, cx: &PreemptionContext<'_>) -> (Option<PostFilterResult>, Status) {
    let nominator = cx.handle.preemption().nominator();
    let nominated_status = cx.nominated_node_name().and_then(|n| cx.status_of(n));
    if let Err(msg) = strategy.pod_eligible_to_preempt_others(cx, nominated_status) {
        return (None, Status::unschedulable(msg));
    }
    let search = find_candidates(strategy, cx);
    if search.potential_nodes == 0 {
        nominator.remove(&cx.pod.uid);
    }
    if search.candidates.is_empty() {
        if let Some((_, s)) = search.failed.iter().find(|(_, s)| s.code() == Code::Error) {
            return (None, s.clone());
        }
        return (None, Status::unschedulable(no_candidates_message(cx.snapshot.len(), &search.failed)));
    }
    // Extenders vet the candidates (upstream `callExtenders`).
    let candidates =
        match crate::framework::extender::preemption_candidates(cx.handle, cx.pod, cx.snapshot, search.candidates) {
            Ok(c) => c,
            Err(s) => return (None, s),
        };
    let Some(best) = pick_one_node_for_preemption(&candidates) else {
        return (None, Status::unschedulable("no candidate node for preemption"));
    };
    let c = &candidates[best];
    // Display, not `as_str`: node names are not pinned.
    let result = Some(PostFilterResult { nominated_node_name: Some(c.node.to_string()) });
    match prepare_candidate(cx, c) {
        Ok(()) => (result, Status::SUCCESS),
        // Nothing was evicted: don't nominate (the room would never come), say why.
        Err(e @ PreemptionError::NoEvictor { .. }) => (None, Status::unschedulable(e.to_string())),
        Err(e) => (result, Status::error(e.to_string())),
    }
}

/// Upstream `prepareCandidate`: evict the victims, then drop the nominations of
/// lower-priority pods on the node (they would not fit any more).
fn prepare_candidate(cx: &PreemptionContext<'_>, c: &Candidate) -> Result<(), PreemptionError> {
    let node = &*c.node.to_string();
    let services = cx.handle.preemption();
    let evictor = services
        .evictor()
        .ok_or_else(|| PreemptionError::NoEvictor { preemptor: cx.pod.pod.key(), node: node.to_owned() })?;
    for (k, v) in c.victims.pods.iter().enumerate() {
        evictor.evict(cx.pod, node, v).map_err(|reason| PreemptionError::EvictionFailed {
            preemptor: cx.pod.pod.key(),
            node: node.to_owned(),
            victim: v.pod.key(),
            evicted: k,
            reason,
        })?;
    }
    let prio = cx.pod.priority();
    for p in services.nominator().pods_on(node) {
        if p.priority() < prio {
            services.nominator().remove(&p.uid);
        }
    }
    Ok(())
}

/// Upstream `Preempt`'s FitError when no candidate is found: over all `num_nodes`,
/// the dry-run statuses of the nodes tried and "Preemption is not helpful for
/// scheduling" (`UnschedulableAndUnresolvable`) for every other node, rendered by
/// upstream's `FitError.Error()`.
fn no_candidates_message(num_nodes: usize, failed: &[(usize, Status)]) -> String {
    let statuses = NodeToStatus {
        statuses: failed.to_vec(),
        absent: Some(Status::unresolvable("Preemption is not helpful for scheduling")),
    };
    let mut out = String::new();
    let _ = crate::framework::write_fit_message(&mut out, num_nodes, &statuses, None, None);
    out
}

/// Whether a pod was deleted (is terminating), the closest schedkit has to
/// upstream's `podTerminatingByPreemption` (which also checks the DisruptionTarget
/// condition the scheduler sets; schedkit pods carry no conditions).
pub fn is_terminating(p: &PodInfo) -> bool {
    p.pod.metadata.deletion_timestamp.is_some()
}

/// Upstream DefaultPreemption's `PodEligibleToPreemptOthers`: never with
/// `preemptionPolicy: Never`; and not while the pod's nominated node still has a
/// terminating lower-priority pod (its room is on the way), unless that node is now
/// `UnschedulableAndUnresolvable`.
pub fn default_pod_eligible(cx: &PreemptionContext<'_>, nominated_node_status: Option<&Status>) -> Result<(), String> {
    if cx.pod.pod.spec.preemption_policy == Some(PreemptionPolicy::Never) {
        return Err("not eligible due to preemptionPolicy=Never.".to_owned());
    }
    if let Some(nom) = cx.nominated_node_name() {
        if nominated_node_status.is_some_and(|s| s.code() == Code::UnschedulableAndUnresolvable) {
            return Ok(());
        }
        if let Some(i) = cx.snapshot.index_of(nom) {
            let prio = cx.pod.priority();
            if cx.snapshot.nodes()[i].pods().iter().any(|p| p.priority() < prio && is_terminating(p)) {
                return Err("not eligible due to a terminating pod on the nominated node.".to_owned());
            }
        }
    }
    Ok(())
}
