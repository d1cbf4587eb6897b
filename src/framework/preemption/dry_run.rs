//! Running Filter with PreFilter extensions and nominated pods, and [`DryRun`]: one
//! node's what-if, the mechanism every preemption plugin uses.

use std::sync::Arc;

use super::NominatedPods;
use crate::framework::runtime;
use crate::framework::{CycleState, Profile, Status};
use crate::snapshot::{NodeInfo, PodInfo};

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
    mut call: impl FnMut(&dyn crate::framework::PreFilterExtensions, &mut CycleState) -> Status,
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
