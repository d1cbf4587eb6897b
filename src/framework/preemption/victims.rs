//! Victim selection on one node: pod importance order, PodDisruptionBudget
//! accounting, and the reprieve loop.

use std::sync::Arc;

use super::DryRun;
use crate::framework::Status;
use crate::model::PodDisruptionBudget;
use crate::snapshot::{PodInfo, Snapshot};

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

    /// Whether there are no budgets at all.
    pub fn is_empty(&self) -> bool {
        self.pdbs.is_empty()
    }

    /// A fresh tally of the budgets' allowances, to use up pod by pod.
    pub fn tally(&self) -> PdbTally<'_> {
        PdbTally { budgets: self, left: self.allowed.clone() }
    }

    /// Splits pods (kept in order) into those whose eviction would violate a budget and
    /// the rest, as upstream `filterPodsWithPDBViolation`: each matching budget's
    /// allowance is used up pod by pod; pods already in a budget's `disruptedPods`
    /// don't use it.
    pub fn split(&self, pods: Vec<Arc<PodInfo>>) -> (Vec<Arc<PodInfo>>, Vec<Arc<PodInfo>>) {
        if self.pdbs.is_empty() {
            return (Vec::new(), pods);
        }
        let mut tally = self.tally();
        let mut violating = Vec::new();
        let mut non = Vec::new();
        for p in pods {
            if tally.take(&p) { violating.push(p) } else { non.push(p) }
        }
        (violating, non)
    }
}

/// The allowances left while victims are counted against the budgets one by one
/// (upstream's `pdbsAllowed` in `filterPodsWithPDBViolation`).
#[derive(Debug, Clone)]
pub struct PdbTally<'a> {
    budgets: &'a PdbBudgets,
    left: Vec<i32>,
}

impl PdbTally<'_> {
    /// Counts the eviction of `p` against every budget selecting it (except those
    /// that list it in `disruptedPods`); true when one of them goes below zero.
    pub fn take(&mut self, p: &PodInfo) -> bool {
        if p.pod.metadata.labels.is_empty() {
            return false;
        }
        let mut violated = false;
        for (i, b) in self.budgets.pdbs.iter().enumerate() {
            if !b.selects(p.pod.namespace(), &p.pod.metadata.labels) {
                continue;
            }
            if b.status.disrupted_pods.iter().any(|n| n == p.pod.name()) {
                continue;
            }
            self.left[i] -= 1;
            if self.left[i] < 0 {
                violated = true;
            }
        }
        violated
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
