//! The preemption evaluator that preemption plugins share (upstream
//! `pkg/scheduler/framework/preemption/preemption.go`), the nominated-pods table
//! later cycles consult (upstream `addNominatedPods` in
//! `pkg/scheduler/framework/runtime/framework.go`), and the [`Evictor`] the caller
//! implements.
//!
//! # How a preemption runs
//!
//! [`preempt`] is upstream's `Evaluator.Preempt` with the plugin-specific steps behind
//! [`PreemptionStrategy`] (upstream's `preemption.Interface`):
//!
//! 1. the pod must be eligible ([`PreemptionStrategy::pod_eligible_to_preempt_others`]);
//! 2. potential nodes are those whose Filter status was `Unschedulable` (never
//!    `UnschedulableAndUnresolvable`);
//! 3. starting at an offset, nodes are dry-run one by one until enough candidates are
//!    found ([`PreemptionStrategy::offset_and_num_candidates`]). A dry run is a
//!    [`DryRun`]: a clone of the cycle state (reference-count bumps; a plugin's value
//!    is copied only when its AddPod/RemovePod extension mutates it) and a copy of one
//!    [`NodeInfo`]. Nothing else is cloned;
//! 4. the best candidate is chosen by [`pick_one_node_for_preemption`];
//! 5. its victims are handed to the [`Evictor`], lower-priority pods nominated to the
//!    same node lose their nomination, and the pod's node is returned as the
//!    nominated node.
//!
//! Dry runs here are sequential (upstream runs them on 16 goroutines and stops when
//! enough candidates are found); the result is the same set of candidates upstream
//! finds when its workers finish in order.

use std::collections::BTreeMap;
use std::sync::Arc;

use ahash::AHashMap;
use parking_lot::RwLock;

use super::runtime;
use super::{Code, CycleState, Handle, NodeToStatus, PostFilterResult, Profile, Status};
use crate::model::{PdbError, PodDisruptionBudget, PreemptionPolicy, Symbol};
use crate::snapshot::{NodeInfo, PodInfo, Snapshot};

// ---------------------------------------------------------------------------------
// Nominated pods
// ---------------------------------------------------------------------------------

/// Pods nominated to nodes by preemption, as one cycle sees them (immutable; the
/// [`Nominator`] hands out a shared copy).
#[derive(Debug, Clone, Default)]
pub struct NominatedPods {
    by_node: AHashMap<Symbol, Vec<Arc<PodInfo>>>,
    node_of: AHashMap<Arc<str>, Symbol>,
}

impl NominatedPods {
    /// Pods nominated to `node`.
    pub fn on_node(&self, node: Symbol) -> &[Arc<PodInfo>] {
        self.by_node.get(&node).map_or(&[], Vec::as_slice)
    }

    /// The node a pod (by uid) is nominated to.
    pub fn node_of(&self, uid: &str) -> Option<Symbol> {
        self.node_of.get(uid).copied()
    }

    /// Number of nominated pods.
    pub fn len(&self) -> usize {
        self.node_of.len()
    }

    /// Whether no pod is nominated.
    pub fn is_empty(&self) -> bool {
        self.node_of.is_empty()
    }

    /// Every nominated pod (grouped by node, in no particular order of nodes).
    pub fn iter(&self) -> impl Iterator<Item = &Arc<PodInfo>> {
        self.by_node.values().flatten()
    }
}

/// Which pods are nominated to which nodes (upstream's `PodNominator`, kept here
/// until the scheduling queue owns it).
///
/// The scheduler records a nomination when PostFilter returns a nominated node and
/// drops it when the pod is assumed. Call [`Nominator::remove`] when a nominated pod is
/// deleted. Filter then treats a node's nominated pods of equal or higher priority as
/// already running there, so a lower-priority pod can't take the room preemption made.
///
/// ```
/// use std::sync::Arc;
/// use schedkit::framework::Nominator;
/// use schedkit::snapshot::PodInfo;
/// use schedkit::testing::PodBuilder;
/// let n = Nominator::default();
/// let p = Arc::new(PodInfo::new(PodBuilder::new("hi").priority(10).build()).unwrap());
/// n.add(p, "node-1");
/// assert_eq!(n.nominated_node("default/hi").map(|s| s.as_str()), Some("node-1"));
/// n.remove("default/hi");
/// assert!(n.snapshot().is_none());
/// ```
#[derive(Debug, Default)]
pub struct Nominator {
    inner: RwLock<Arc<NominatedPods>>,
}

impl Nominator {
    /// Nominates `pod` to `node`, replacing an earlier nomination of the same pod.
    pub fn add(&self, pod: Arc<PodInfo>, node: &str) {
        let node = Symbol::intern(node);
        let mut g = self.inner.write();
        let m = Arc::make_mut(&mut g);
        remove_from(m, &pod.uid);
        m.node_of.insert(pod.uid.clone(), node);
        m.by_node.entry(node).or_default().push(pod);
    }

    /// Drops a pod's nomination; returns the node it had.
    pub fn remove(&self, uid: &str) -> Option<Symbol> {
        let mut g = self.inner.write();
        if !g.node_of.contains_key(uid) {
            return None;
        }
        remove_from(Arc::make_mut(&mut g), uid)
    }

    /// The node a pod (by uid) is nominated to.
    pub fn nominated_node(&self, uid: &str) -> Option<Symbol> {
        self.inner.read().node_of(uid)
    }

    /// Pods nominated to `node`.
    pub fn pods_on(&self, node: &str) -> Vec<Arc<PodInfo>> {
        Symbol::lookup(node).map_or_else(Vec::new, |s| self.inner.read().on_node(s).to_vec())
    }

    /// A shared copy of the table for one cycle, or `None` when nothing is nominated
    /// (so the Filter hot path pays nothing then).
    pub fn snapshot(&self) -> Option<Arc<NominatedPods>> {
        let g = self.inner.read();
        (!g.is_empty()).then(|| g.clone())
    }

    /// Number of nominated pods.
    pub fn len(&self) -> usize {
        self.inner.read().len()
    }

    /// Whether no pod is nominated.
    pub fn is_empty(&self) -> bool {
        self.inner.read().is_empty()
    }
}

fn remove_from(m: &mut NominatedPods, uid: &str) -> Option<Symbol> {
    let node = m.node_of.remove(uid)?;
    if let Some(v) = m.by_node.get_mut(&node) {
        v.retain(|p| &*p.uid != uid);
        if v.is_empty() {
            m.by_node.remove(&node);
        }
    }
    Some(node)
}

// ---------------------------------------------------------------------------------
// Eviction
// ---------------------------------------------------------------------------------

/// Why preemption could not be carried out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PreemptionError {
    /// The caller's [`Evictor`] failed on a victim. Victims before it were evicted;
    /// the preemptor stays nominated, so a retry sees the evicted pods leave through
    /// the cache and evicts only what is still needed.
    #[error(
        "preempting for pod {preemptor} on node {node}: evicting {victim} failed after {evicted} eviction(s): {reason}"
    )]
    EvictionFailed {
        /// `namespace/name` of the preemptor.
        preemptor: String,
        /// The nominated node.
        node: String,
        /// `namespace/name` of the victim that failed.
        victim: String,
        /// Victims evicted before the failure.
        evicted: usize,
        /// The evictor's reason.
        reason: String,
    },
    /// No evictor was set on the handle ([`PreemptionServices::set_evictor`]): the
    /// pod is not nominated and PostFilter reports `Unschedulable` with this message.
    #[error("preemption found victims for pod {preemptor} on node {node} but no Evictor is configured")]
    NoEvictor {
        /// `namespace/name` of the preemptor.
        preemptor: String,
        /// The node.
        node: String,
    },
}

/// Evicts preemption victims; implemented by the caller (delete the pod through the
/// API server, or remove it from a simulation). Called on the scheduling thread, once
/// per victim, highest priority first. An `Err` stops the preemption: the pod stays
/// nominated and the scheduler reports an error so it is retried.
pub trait Evictor: Send + Sync {
    /// Evicts `victim` from `node` to make room for `preemptor`.
    fn evict(&self, preemptor: &PodInfo, node: &str, victim: &PodInfo) -> Result<(), String>;
}

/// An [`Evictor`] that only records what it was asked to evict (simulations, tests).
#[derive(Debug, Default)]
pub struct RecordingEvictor {
    evicted: parking_lot::Mutex<Vec<(String, String)>>,
}

impl RecordingEvictor {
    /// `(node, victim uid)` pairs in eviction order, draining the record.
    pub fn take(&self) -> Vec<(String, String)> {
        std::mem::take(&mut *self.evicted.lock())
    }
}

impl Evictor for RecordingEvictor {
    fn evict(&self, _preemptor: &PodInfo, node: &str, victim: &PodInfo) -> Result<(), String> {
        self.evicted.lock().push((node.to_owned(), victim.uid.to_string()));
        Ok(())
    }
}

/// What preemption plugins reach through the [`Handle`]: nominated pods, the
/// PodDisruptionBudgets, and the caller's evictor.
#[derive(Default)]
pub struct PreemptionServices {
    nominator: Nominator,
    pdbs: RwLock<Arc<Vec<PodDisruptionBudget>>>,
    evictor: RwLock<Option<Arc<dyn Evictor>>>,
}

impl std::fmt::Debug for PreemptionServices {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreemptionServices")
            .field("nominated", &self.nominator.len())
            .field("pdbs", &self.pdbs.read().len())
            .field("evictor", &self.evictor.read().is_some())
            .finish()
    }
}

impl PreemptionServices {
    /// The nominated pods.
    pub fn nominator(&self) -> &Nominator {
        &self.nominator
    }

    /// Replaces the budgets after validating each one.
    pub fn set_pod_disruption_budgets(&self, pdbs: Vec<PodDisruptionBudget>) -> Result<(), PdbError> {
        for p in &pdbs {
            p.validate()?;
        }
        *self.pdbs.write() = Arc::new(pdbs);
        Ok(())
    }

    /// The budgets.
    pub fn pod_disruption_budgets(&self) -> Arc<Vec<PodDisruptionBudget>> {
        self.pdbs.read().clone()
    }

    /// Sets the evictor victims are handed to.
    pub fn set_evictor(&self, evictor: Arc<dyn Evictor>) {
        *self.evictor.write() = Some(evictor);
    }

    /// The evictor, if set.
    pub fn evictor(&self) -> Option<Arc<dyn Evictor>> {
        self.evictor.read().clone()
    }
}

// ---------------------------------------------------------------------------------
// The running profile
// ---------------------------------------------------------------------------------

/// The profile running this cycle, written into the [`CycleState`] by the scheduler
/// before PostFilter so preemption plugins can run dry-run Filters with it. Call
/// [`RunningProfile::write`] yourself when invoking a PostFilter plugin outside the
/// scheduler.
#[derive(Clone)]
pub struct RunningProfile(pub Arc<Profile>);

impl RunningProfile {
    /// Stores `profile` in `state`.
    pub fn write(state: &mut CycleState, profile: Arc<Profile>) {
        state.write(RunningProfile(profile));
    }

    /// The profile in `state`, or an `Error` status naming `plugin`.
    pub fn read(state: &CycleState, plugin: &str) -> Result<Arc<Profile>, Status> {
        state.read::<RunningProfile>().map(|r| r.0.clone()).ok_or_else(|| {
            Status::error(format!("{plugin}: the cycle state has no running profile (RunningProfile::write)"))
        })
    }
}

// ---------------------------------------------------------------------------------
// Running Filter with extensions and nominated pods
// ---------------------------------------------------------------------------------

/// AddPod extensions of every PreFilter plugin whose Filter isn't skipped (upstream
/// `RunPreFilterExtensionAddPod`).
pub fn run_add_pod_extensions(
    profile: &Profile,
    state: &mut CycleState,
    pod: &PodInfo,
    to_add: &PodInfo,
    node: &NodeInfo,
) -> Status {
    run_extensions(profile, state, "AddPod", |ext, state| ext.add_pod(state, pod, to_add, node))
}

/// RemovePod extensions (upstream `RunPreFilterExtensionRemovePod`).
pub fn run_remove_pod_extensions(
    profile: &Profile,
    state: &mut CycleState,
    pod: &PodInfo,
    to_remove: &PodInfo,
    node: &NodeInfo,
) -> Status {
    run_extensions(profile, state, "RemovePod", |ext, state| ext.remove_pod(state, pod, to_remove, node))
}

/// Calls `call` on the extensions of every PreFilter plugin whose Filter isn't
/// skipped; the first failure becomes an `Error` naming `what` and the plugin.
fn run_extensions(
    profile: &Profile,
    state: &mut CycleState,
    what: &str,
    mut call: impl FnMut(&dyn super::PreFilterExtensions, &mut CycleState) -> Status,
) -> Status {
    for (i, p) in profile.pre_filter.iter().enumerate() {
        let Some(ext) = p.plugin.extensions() else { continue };
        if profile.pre_filter_to_filter[i].is_some_and(|f| state.skips_filter(f)) {
            continue;
        }
        let s = call(ext, state);
        if !s.is_success() {
            return Status::error(format!("running {what} on PreFilter plugin {:?}: {}", p.name, s.message()))
                .with_plugin(p.name);
        }
    }
    Status::SUCCESS
}

/// Filter on one node counting nominated pods, as upstream
/// `RunFilterPluginsWithNominatedPods`: if pods of equal or higher priority (other
/// than `pod`) are nominated to the node, Filter runs first with them added (on a
/// copy of the state and node) and then without them; the pod must pass both. With
/// no such pods this is one plain Filter pass and clones nothing.
pub(crate) fn run_filters_with_nominated(
    profile: &Profile,
    state: &CycleState,
    pod: &PodInfo,
    node: &NodeInfo,
    nominated: Option<&NominatedPods>,
    current: &std::cell::Cell<usize>,
) -> Status {
    if let Some(nom) = nominated {
        let prio = pod.priority();
        let on_node = nom.on_node(node.name());
        if on_node.iter().any(|p| p.priority() >= prio && p.uid != pod.uid) {
            let mut st = state.clone();
            let mut ni = node.clone();
            for p in on_node.iter().filter(|p| p.priority() >= prio && p.uid != pod.uid) {
                ni.add_pod(p.clone());
                let s = run_add_pod_extensions(profile, &mut st, pod, p, &ni);
                if !s.is_success() {
                    return s;
                }
            }
            let s = runtime::run_filters(profile, &st, pod, &ni, current);
            if !s.is_success() {
                return s;
            }
        }
    }
    runtime::run_filters(profile, state, pod, node, current)
}

// ---------------------------------------------------------------------------------
// Dry runs
// ---------------------------------------------------------------------------------

/// One node's what-if: a clone of the cycle state and a copy of the node, on which
/// pods are removed and added back while PreFilter extensions keep plugin state in
/// step. The one mechanism every preemption plugin uses.
pub struct DryRun<'a> {
    profile: &'a Profile,
    pod: &'a PodInfo,
    nominated: Option<&'a NominatedPods>,
    /// The state copy (shares unmutated values with the cycle's state).
    pub state: CycleState,
    /// The node copy.
    pub node: NodeInfo,
    filter_runs: usize,
}

impl std::fmt::Debug for DryRun<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DryRun").field("node", &self.node.name()).field("pods", &self.node.pods().len()).finish()
    }
}

impl<'a> DryRun<'a> {
    /// Starts a dry run of `pod` on a copy of `node`.
    pub fn new(
        profile: &'a Profile,
        state: &CycleState,
        pod: &'a PodInfo,
        node: &NodeInfo,
        nominated: Option<&'a NominatedPods>,
    ) -> DryRun<'a> {
        DryRun { profile, pod, nominated, state: state.clone(), node: node.clone(), filter_runs: 0 }
    }

    /// The preemptor.
    pub fn pod(&self) -> &'a PodInfo {
        self.pod
    }

    /// Removes `victim` from the node copy and runs RemovePod extensions.
    pub fn remove_pod(&mut self, victim: &Arc<PodInfo>) -> Result<(), Status> {
        if self.node.remove_pod_info(victim).is_none() {
            return Err(Status::error(format!(
                "dry run: pod {} is not on node {}",
                victim.pod.key(),
                self.node.node().name()
            )));
        }
        let s = run_remove_pod_extensions(self.profile, &mut self.state, self.pod, victim, &self.node);
        if s.is_success() { Ok(()) } else { Err(s) }
    }

    /// Adds `pod` to the node copy and runs AddPod extensions.
    pub fn add_pod(&mut self, pod: &Arc<PodInfo>) -> Result<(), Status> {
        self.node.add_pod(pod.clone());
        let s = run_add_pod_extensions(self.profile, &mut self.state, self.pod, pod, &self.node);
        if s.is_success() { Ok(()) } else { Err(s) }
    }

    /// Whether the preemptor passes Filter on the node copy, counting nominated pods.
    pub fn fits(&mut self) -> Status {
        self.filter_runs += 1;
        let current = std::cell::Cell::new(0);
        run_filters_with_nominated(self.profile, &self.state, self.pod, &self.node, self.nominated, &current)
    }

    /// How many times [`DryRun::fits`] ran.
    pub fn filter_runs(&self) -> usize {
        self.filter_runs
    }
}

// ---------------------------------------------------------------------------------
// Ordering and PDBs
// ---------------------------------------------------------------------------------

/// The pod's start time, or +infinity ("now", later than any started pod) when it
/// has none, as upstream `util.GetPodStartTime`.
pub fn pod_start_time(p: &PodInfo) -> f64 {
    p.pod.status.start_time.unwrap_or(f64::INFINITY)
}

/// Upstream `util.MoreImportantPod`: higher priority first, then the earlier start.
pub fn more_important(a: &PodInfo, b: &PodInfo) -> bool {
    let (pa, pb) = (a.priority(), b.priority());
    if pa != pb {
        return pa > pb;
    }
    pod_start_time(a) < pod_start_time(b)
}

/// Sorts by [`more_important`] (stable), reading each pod's priority and start time
/// once rather than once per comparison.
fn sort_most_important_first(pods: &mut Vec<Arc<PodInfo>>) {
    let mut keyed: Vec<(i32, f64, Arc<PodInfo>)> =
        pods.drain(..).map(|p| (p.priority(), pod_start_time(&p), p)).collect();
    keyed.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.total_cmp(&b.1)));
    pods.extend(keyed.into_iter().map(|(_, _, p)| p));
}

/// PodDisruptionBudgets with the disruptions each allows now.
#[derive(Debug, Clone, Default)]
pub struct PdbBudgets {
    pdbs: Arc<Vec<PodDisruptionBudget>>,
    allowed: Vec<i32>,
}

impl PdbBudgets {
    /// Computes each budget's allowed disruptions from the matching pods in the
    /// snapshot (terminating pods count as expected but not healthy).
    pub fn new(pdbs: Arc<Vec<PodDisruptionBudget>>, snapshot: &Snapshot) -> PdbBudgets {
        let mut healthy = vec![0i32; pdbs.len()];
        let mut expected = vec![0i32; pdbs.len()];
        if !pdbs.is_empty() {
            for n in snapshot.nodes() {
                for p in n.pods() {
                    for (i, b) in pdbs.iter().enumerate() {
                        if b.selects(p.pod.namespace(), &p.pod.metadata.labels) {
                            expected[i] += 1;
                            if p.pod.metadata.deletion_timestamp.is_none() {
                                healthy[i] += 1;
                            }
                        }
                    }
                }
            }
        }
        let allowed = pdbs.iter().enumerate().map(|(i, b)| b.disruptions_allowed(healthy[i], expected[i])).collect();
        PdbBudgets { pdbs, allowed }
    }

    /// Budgets with explicit allowed counts (tests; upstream's `Status.DisruptionsAllowed`).
    pub fn with_allowed(pdbs: Vec<PodDisruptionBudget>, allowed: Vec<i32>) -> PdbBudgets {
        PdbBudgets { pdbs: Arc::new(pdbs), allowed }
    }

    /// Splits pods (kept in order) into those whose eviction would violate a budget and
    /// the rest, as upstream `filterPodsWithPDBViolation`: each matching budget's
    /// allowance is used up pod by pod; pods already in a budget's `disruptedPods`
    /// don't use it.
    pub fn split(&self, pods: Vec<Arc<PodInfo>>) -> (Vec<Arc<PodInfo>>, Vec<Arc<PodInfo>>) {
        if self.pdbs.is_empty() {
            return (Vec::new(), pods);
        }
        let mut left = self.allowed.clone();
        let mut violating = Vec::new();
        let mut non = Vec::new();
        for p in pods {
            let mut violated = false;
            if !p.pod.metadata.labels.is_empty() {
                for (i, b) in self.pdbs.iter().enumerate() {
                    if !b.selects(p.pod.namespace(), &p.pod.metadata.labels) {
                        continue;
                    }
                    if b.status.disrupted_pods.iter().any(|n| n == p.pod.name()) {
                        continue;
                    }
                    left[i] -= 1;
                    if left[i] < 0 {
                        violated = true;
                    }
                }
            }
            if violated { violating.push(p) } else { non.push(p) }
        }
        (violating, non)
    }
}

// ---------------------------------------------------------------------------------
// Victim selection
// ---------------------------------------------------------------------------------

/// Victims chosen on one node.
#[derive(Debug, Clone, Default)]
pub struct Victims {
    /// The pods, most important first.
    pub pods: Vec<Arc<PodInfo>>,
    /// How many of them violate a PodDisruptionBudget.
    pub num_pdb_violations: usize,
}

/// Upstream DefaultPreemption's `SelectVictimsOnNode`: remove every pod `eligible`
/// accepts, check the preemptor fits, then reprieve (see [`reprieve`]).
///
/// `Err` statuses: `UnschedulableAndUnresolvable` when nothing is eligible, the
/// Filter status when the pod doesn't fit even with all of them gone, `Error` when
/// an extension fails.
pub fn select_victims_on_node(
    dry: &mut DryRun<'_>,
    pdbs: &PdbBudgets,
    eligible: impl Fn(&PodInfo) -> bool,
) -> Result<Victims, Status> {
    let potential: Vec<Arc<PodInfo>> = dry.node.pods().iter().filter(|p| eligible(p)).cloned().collect();
    if potential.is_empty() {
        return Err(Status::unresolvable("No preemption victims found for incoming pod"));
    }
    for p in &potential {
        dry.remove_pod(p)?;
    }
    let s = dry.fits();
    if !s.is_success() {
        return Err(s);
    }
    reprieve(dry, potential, pdbs, |_| true)
}

/// The reprieve loop shared by preemption plugins, after every potential victim was
/// removed from `dry` and the pod fits: sort the victims most important first, then
/// add each back — PDB-violating pods first, then the others — keeping it if the pod
/// still fits and `still_ok` agrees (a plugin's extra check, e.g. quotas), else
/// making it a victim.
pub fn reprieve(
    dry: &mut DryRun<'_>,
    mut potential: Vec<Arc<PodInfo>>,
    pdbs: &PdbBudgets,
    mut still_ok: impl FnMut(&DryRun<'_>) -> bool,
) -> Result<Victims, Status> {
    sort_most_important_first(&mut potential);
    let (violating, non_violating) = pdbs.split(potential);
    let mut out = Victims::default();
    let mixed = !violating.is_empty() && !non_violating.is_empty();
    for (is_violating, p) in
        violating.into_iter().map(|p| (true, p)).chain(non_violating.into_iter().map(|p| (false, p)))
    {
        dry.add_pod(&p)?;
        let fits = dry.fits().is_success() && still_ok(dry);
        if !fits {
            dry.remove_pod(&p)?;
            out.pods.push(p);
            if is_violating {
                out.num_pdb_violations += 1;
            }
        }
    }
    if mixed {
        sort_most_important_first(&mut out.pods);
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------
// Candidates and the pick
// ---------------------------------------------------------------------------------

/// A node where preemption would make the pod fit.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// Node name.
    pub node: Symbol,
    /// Position in the snapshot.
    pub node_index: usize,
    /// What would be evicted.
    pub victims: Victims,
}

/// Upstream `pickOneNodeForPreemption`: the candidate (by position) with, in order,
/// the fewest PDB violations, the lowest highest-victim priority, the smallest sum
/// of victim priorities (each shifted by 2^31 so negative priorities count), the
/// fewest victims, the latest earliest-start among the highest-priority victims;
/// then the first. Upstream's last tie-break is Go map order (random); schedkit's is
/// the candidates' order, so results are reproducible.
pub fn pick_one_node_for_preemption(candidates: &[Candidate]) -> Option<usize> {
    if candidates.is_empty() {
        return None;
    }
    let score_fns: [&dyn Fn(&Candidate) -> i128; 5] = [
        &|c| -(c.victims.num_pdb_violations as i128),
        &|c| -i128::from(c.victims.pods.first().map_or(i32::MIN, |p| p.priority())),
        &|c| -c.victims.pods.iter().map(|p| i128::from(p.priority()) + (i128::from(i32::MAX) + 1)).sum::<i128>(),
        &|c| -(c.victims.pods.len() as i128),
        // Nanoseconds, as upstream's UnixNano; `as` saturates (no start = latest).
        &|c| (earliest_start_of_highest_priority(&c.victims.pods) * 1e9) as i128,
    ];
    let mut pool: Vec<usize> = (0..candidates.len()).collect();
    for f in score_fns {
        let mut best = i128::MIN;
        let mut selected = Vec::new();
        for &i in &pool {
            let s = f(&candidates[i]);
            if s > best {
                best = s;
                selected.clear();
            }
            if s == best {
                selected.push(i);
            }
        }
        if selected.len() == 1 {
            return Some(selected[0]);
        }
        if !selected.is_empty() {
            pool = selected;
        }
    }
    pool.first().copied()
}

/// Upstream `util.GetEarliestPodStartTime`: the earliest start among the victims of
/// the highest priority (`-inf` with no victims, so such a node never wins on it).
fn earliest_start_of_highest_priority(pods: &[Arc<PodInfo>]) -> f64 {
    let Some(first) = pods.first() else { return f64::NEG_INFINITY };
    let mut max_p = first.priority();
    let mut earliest = pod_start_time(first);
    for p in pods {
        let pr = p.priority();
        if pr == max_p {
            earliest = earliest.min(pod_start_time(p));
        } else if pr > max_p {
            max_p = pr;
            earliest = pod_start_time(p);
        }
    }
    earliest
}

// ---------------------------------------------------------------------------------
// The evaluator
// ---------------------------------------------------------------------------------

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
            (!n.is_empty()).then(|| Symbol::intern(n))
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

    /// Chooses victims on the node of `dry` (see [`select_victims_on_node`]).
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
/// help (with upstream's per-node reasons) or when no [`Evictor`] is configured (so a
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
    let Some(best) = pick_one_node_for_preemption(&search.candidates) else {
        return (None, Status::unschedulable("no candidate node for preemption"));
    };
    let c = &search.candidates[best];
    let node = c.node.as_str();
    let result = Some(PostFilterResult { nominated_node_name: Some(node.to_owned()) });
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
    let node = c.node.as_str();
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

/// `0/N nodes are available: <count> <reason>, ...` over the dry-run failures, with
/// every other node "Preemption is not helpful for scheduling", as upstream.
fn no_candidates_message(num_nodes: usize, failed: &[(usize, Status)]) -> String {
    let mut h: BTreeMap<String, usize> = BTreeMap::new();
    for (_, s) in failed {
        for r in s.reasons() {
            *h.entry(r.to_string()).or_default() += 1;
        }
    }
    let rest = num_nodes.saturating_sub(failed.len());
    if rest > 0 {
        *h.entry("Preemption is not helpful for scheduling".to_owned()).or_default() += rest;
    }
    let mut parts: Vec<String> = h.into_iter().map(|(r, n)| format!("{n} {r}")).collect();
    parts.sort();
    format!("0/{num_nodes} nodes are available: {}.", parts.join(", "))
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

// ---------------------------------------------------------------------------------
// What-if helpers (tests, simulators, benches)
// ---------------------------------------------------------------------------------

/// Runs the profile's PreFilter for `pod` as the scheduler does and returns the
/// state with its status (`Unschedulable` leaves a usable state, as upstream runs
/// the remaining PreFilters for preemption's sake). Also writes the
/// [`RunningProfile`], so the state is ready for a PostFilter call.
pub fn pre_filter_state(profile: &Arc<Profile>, pod: &PodInfo, snapshot: &Snapshot) -> (CycleState, Status) {
    let mut state = CycleState::new();
    let s = match runtime::run_pre_filter(profile, &mut state, pod, snapshot) {
        Ok(_) => Status::SUCCESS,
        Err(s) => s,
    };
    RunningProfile::write(&mut state, profile.clone());
    (state, s)
}

/// Filter statuses of every node that rejects `pod` (no sampling, nominated pods
/// not counted): the [`NodeToStatus`] a PostFilter would get when no node fits.
pub fn filter_statuses(profile: &Profile, state: &CycleState, pod: &PodInfo, snapshot: &Snapshot) -> NodeToStatus {
    let current = std::cell::Cell::new(0);
    let statuses = snapshot
        .nodes()
        .iter()
        .enumerate()
        .filter_map(|(i, n)| {
            let s = runtime::run_filters(profile, state, pod, n, &current);
            (!s.is_success()).then_some((i, s))
        })
        .collect();
    NodeToStatus { statuses, absent: None }
}
