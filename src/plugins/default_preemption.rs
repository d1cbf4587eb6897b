//! DefaultPreemption (PostFilter): evicts lower-priority pods to make room, as
//! upstream `pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go`
//! on the shared evaluator in [`crate::framework::preemption`].

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

use crate::framework::CycleState;
use crate::framework::preemption::{self, DryRun, PdbBudgets, PreemptionContext, PreemptionStrategy, Victims};
use crate::framework::{ExtensionPoints, Handle, NodeToStatus, Plugin, PostFilterPlugin, PostFilterResult, Status};
use crate::plugins::names;
use crate::snapshot::{PodInfo, Snapshot};

/// Upstream `DefaultPreemptionArgs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct DefaultPreemptionArgs {
    /// At least this percentage of potential nodes is dry-run (default 10, 0..=100).
    pub min_candidate_nodes_percentage: i32,
    /// At least this many nodes are dry-run (default 100, >= 0).
    pub min_candidate_nodes_absolute: i32,
}

impl Default for DefaultPreemptionArgs {
    fn default() -> Self {
        DefaultPreemptionArgs { min_candidate_nodes_percentage: 10, min_candidate_nodes_absolute: 100 }
    }
}

impl DefaultPreemptionArgs {
    /// Upstream `ValidateDefaultPreemptionArgs`: percentage in 0..=100, absolute >= 0,
    /// not both zero.
    pub fn validate(&self) -> Result<(), String> {
        if !(0..=100).contains(&self.min_candidate_nodes_percentage) {
            return Err(format!(
                "minCandidateNodesPercentage: must be in the range [0, 100], got {}",
                self.min_candidate_nodes_percentage
            ));
        }
        if self.min_candidate_nodes_absolute < 0 {
            return Err(format!(
                "minCandidateNodesAbsolute: must be non-negative, got {}",
                self.min_candidate_nodes_absolute
            ));
        }
        if self.min_candidate_nodes_percentage == 0 && self.min_candidate_nodes_absolute == 0 {
            return Err("minCandidateNodesPercentage and minCandidateNodesAbsolute: cannot both be zero".to_owned());
        }
        Ok(())
    }
}

/// Upstream `calculateNumCandidates`: `numNodes * pct / 100`, at least the absolute
/// minimum, at most `numNodes`.
///
/// ```
/// use schedkit::plugins::default_preemption::{DefaultPreemptionArgs, num_candidates};
/// let args = DefaultPreemptionArgs::default();
/// assert_eq!(num_candidates(&args, 5000), 500);
/// assert_eq!(num_candidates(&args, 300), 100);
/// assert_eq!(num_candidates(&args, 40), 40);
/// ```
pub fn num_candidates(args: &DefaultPreemptionArgs, num_nodes: usize) -> usize {
    let pct = args.min_candidate_nodes_percentage.max(0) as usize;
    let abs = args.min_candidate_nodes_absolute.max(0) as usize;
    (num_nodes * pct / 100).max(abs).min(num_nodes)
}

/// Where dry runs start among the potential nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Offset {
    /// Uniformly random, as upstream (`rand.Int31n`), from a seeded generator.
    #[default]
    Random,
    /// Always the first potential node (deterministic tests and traces).
    Zero,
    /// This position (modulo the number of potential nodes), as upstream's tests fix it.
    Fixed(usize),
}

/// The DefaultPreemption plugin.
///
/// Needs the running profile in the cycle state (the scheduler writes it) and an
/// [`crate::framework::Evictor`] on the handle
/// (`handle.preemption().set_evictor(..)`); PodDisruptionBudgets come from
/// `handle.preemption().set_pod_disruption_budgets(..)`.
pub struct DefaultPreemption {
    args: DefaultPreemptionArgs,
    handle: Handle,
    offset: Offset,
    rng: AtomicU64,
}

impl std::fmt::Debug for DefaultPreemption {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DefaultPreemption")
            .field("args", &self.args)
            .field("offset", &self.offset)
            .finish_non_exhaustive()
    }
}

impl DefaultPreemption {
    /// A plugin with validated args.
    pub fn new(args: DefaultPreemptionArgs, handle: Handle) -> Result<Self, String> {
        args.validate()?;
        Ok(DefaultPreemption { args, handle, offset: Offset::Random, rng: AtomicU64::new(0x005e_ed0f_d1ce) })
    }

    /// From config args (absent: upstream's defaults).
    pub fn from_config(args: Option<&serde_json::Value>, handle: &Handle) -> Result<Self, String> {
        let a = match args {
            None => DefaultPreemptionArgs::default(),
            Some(v) => serde_json::from_value(v.clone()).map_err(|e| e.to_string())?,
        };
        DefaultPreemption::new(a, handle.clone())
    }

    /// Sets how the start offset is chosen.
    #[must_use]
    pub fn with_offset(mut self, offset: Offset) -> Self {
        self.offset = offset;
        self
    }

    /// Seeds the offset generator.
    #[must_use]
    pub fn with_seed(self, seed: u64) -> Self {
        self.rng.store(seed, Ordering::Relaxed);
        self
    }

    /// The args.
    pub fn args(&self) -> &DefaultPreemptionArgs {
        &self.args
    }

    fn next_random(&self) -> u64 {
        // SplitMix64 over an atomic counter: lock-free and reproducible per seed.
        crate::rng::mix(self.rng.fetch_add(crate::rng::GAMMA, Ordering::Relaxed).wrapping_add(crate::rng::GAMMA))
    }
}

impl PreemptionStrategy for DefaultPreemption {
    fn plugin_name(&self) -> &'static str {
        names::DEFAULT_PREEMPTION
    }

    fn offset_and_num_candidates(&self, num_potential: usize) -> (usize, usize) {
        let offset = match self.offset {
            Offset::Zero => 0,
            _ if num_potential == 0 => 0,
            Offset::Fixed(k) => k % num_potential,
            Offset::Random => (self.next_random() % num_potential as u64) as usize,
        };
        (offset, num_candidates(&self.args, num_potential))
    }

    fn pod_eligible_to_preempt_others(
        &self,
        cx: &PreemptionContext<'_>,
        nominated_node_status: Option<&Status>,
    ) -> Result<(), String> {
        preemption::default_pod_eligible(cx, nominated_node_status)
    }

    fn select_victims_on_node(
        &self,
        cx: &PreemptionContext<'_>,
        dry: &mut DryRun<'_>,
        pdbs: &PdbBudgets,
    ) -> Result<Victims, Status> {
        let prio = cx.pod.priority();
        preemption::select_victims_on_node(dry, pdbs, |p: &PodInfo| p.priority() < prio)
    }
}

impl Plugin for DefaultPreemption {
    fn name(&self) -> &str {
        names::DEFAULT_PREEMPTION
    }
    fn register(self: Arc<Self>, points: &mut ExtensionPoints) {
        points.post_filter(self);
    }
}

/// DefaultPreemption's PostFilter status for a pod-group member when
/// `WorkloadAwarePreemption` is on (schedkit's text): the group is preempted for as a
/// whole after the pod-by-pod pass.
pub const POD_GROUP_PREEMPTION_DEFERRED: &str = "preemption for a pod group member is done for the whole group";

impl PostFilterPlugin for DefaultPreemption {
    fn post_filter(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
        statuses: &NodeToStatus,
    ) -> (Option<PostFilterResult>, Status) {
        // With workload-aware preemption a pod group's members are not preempted for one
        // by one: the pod-group cycle runs one PodGroupPostFilter for the whole group
        // (`scheduler::group_preemption`), so no victim is evicted before the group is
        // known to fit (KEP-5710).
        let gates = self.handle.feature_gates();
        if gates.enabled(crate::framework::Feature::WorkloadAwarePreemption)
            && gates.enabled(crate::framework::Feature::GenericWorkload)
            && pod.pod.scheduling_group_name().is_some()
        {
            return (None, Status::unschedulable(POD_GROUP_PREEMPTION_DEFERRED));
        }
        let (result, status) = preemption::post_filter_preempt(
            self,
            names::DEFAULT_PREEMPTION,
            &self.handle,
            state,
            pod,
            snapshot,
            statuses,
        );
        (result, with_preemption_prefix(status))
    }
}

/// Upstream `DefaultPreemption.PostFilter`: a non-empty message comes back as one
/// reason `"preemption: " + message` with the same code, so the scheduler's FitError
/// ends with e.g. `preemption: 0/3 nodes are available: 3 Preemption is not helpful
/// for scheduling.`
fn with_preemption_prefix(status: Status) -> Status {
    if status.reasons().is_empty() {
        return status;
    }
    let prefixed = Status::new(status.code(), format!("preemption: {}", status.message()));
    match status.plugin() {
        Some(p) => prefixed.with_plugin(p),
        None => prefixed,
    }
}
