//! NodeResourcesBalancedAllocation: favour nodes whose resource usage stays balanced
//! (upstream `noderesources/balanced_allocation.go`).

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use smallvec::SmallVec;

use super::ArgsError;
use super::balance;
use super::fit::DeviceClassResolver;
use super::scoring::{self, ResourceSpec, Resources as ScoredResources, default_resources};
use crate::framework::{
    CycleState, ExtensionPoints, Feature, FeatureGates, MAX_NODE_SCORE, NodeScore, Plugin, PreScorePlugin, ScorePlugin,
    Status,
};
use crate::plugins::helper::with_state;
use crate::plugins::names;
use crate::snapshot::{NodeInfo, NodeList, PodInfo};

/// Which balance score to compute.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum BalancedScoring {
    /// Kubernetes v1.36 (kubernetes/kubernetes#135573): score the change in balance
    /// the pod causes, `50 + (50 + after - before) / 2`, where `before`/`after` are
    /// the standard-deviation scores without and with the pod. 75 means no change.
    #[default]
    ChangeInBalance,
    /// Releases up to v1.35: the standard-deviation score with the pod placed,
    /// `(1 - std) * 100`.
    BalanceAfterPlacement,
}

/// `NodeResourcesBalancedAllocationArgs`, plus the scoring choice.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct BalancedAllocationArgs {
    /// Resources to balance (default cpu and memory); weights are ignored, as upstream.
    pub resources: Vec<ResourceSpec>,
    /// v1.36 change-in-balance (default) or the older absolute score.
    pub scoring: BalancedScoring,
}

impl Default for BalancedAllocationArgs {
    fn default() -> Self {
        BalancedAllocationArgs { resources: default_resources(), scoring: BalancedScoring::default() }
    }
}

impl BalancedAllocationArgs {
    /// Upstream's defaulting of args read from a configuration
    /// (`SetDefaults_NodeResourcesBalancedAllocationArgs`, `pkg/scheduler/apis/config/v1/defaults.go`):
    /// empty `resources` become `cpu` and `memory`, and a weight of 0 becomes 1.
    /// [`BalancedAllocation::from_config`] applies it.
    pub fn set_defaults(&mut self) {
        scoring::default_resource_specs(&mut self.resources);
    }
}

/// The NodeResourcesBalancedAllocation plugin.
#[derive(Debug, Clone)]
pub struct BalancedAllocation {
    scored: ScoredResources,
    scoring: BalancedScoring,
    /// Resolves extended resources backed by DRA device classes (KEP-5004).
    device_classes: Option<Arc<dyn DeviceClassResolver>>,
    /// The `DRAExtendedResource` gate: while on, pods are not signed (upstream).
    dra_extended: bool,
}

/// The pod's requests (with no defaults) in the order of the balanced resources, and
/// the cycle's device view when a class maps one of them the pod requests.
#[derive(Debug, Clone)]
struct BalancedState(SmallVec<[i64; 4]>, Option<crate::dra::ExtendedDeviceCounts>);

impl BalancedAllocation {
    /// Builds the plugin, validating resource weights.
    pub fn new(args: &BalancedAllocationArgs) -> Result<Self, ArgsError> {
        scoring::validate_resources("resources", &args.resources)?;
        Ok(BalancedAllocation {
            scored: ScoredResources::new(&args.resources),
            scoring: args.scoring,
            device_classes: None,
            dra_extended: true,
        })
    }

    /// Applies the feature gates the plugin reads: `PodLevelResources` (on by default)
    /// decides whether pod-level requests count, for the pod and the pods on each node.
    #[must_use]
    pub fn with_feature_gates(mut self, gates: FeatureGates) -> Self {
        self.scored.pod_level = gates.enabled(Feature::PodLevelResources);
        self.dra_extended = gates.enabled(Feature::DRAExtendedResource);
        self
    }

    /// Balances extended resources backed by a DRA device class by device counts on
    /// nodes that do not list them, as [`Fit::with_device_classes`](super::Fit::with_device_classes)
    /// scores them (upstream BalancedAllocation with `DRAExtendedResource`,
    /// kubernetes/kubernetes#134058).
    #[must_use]
    pub fn with_device_classes(mut self, resolver: Arc<dyn DeviceClassResolver>) -> Self {
        self.device_classes = Some(resolver);
        self
    }

    fn state(&self, pod: &PodInfo) -> BalancedState {
        let reqs = self.scored.pod_requests(pod, true);
        let dra = match &self.device_classes {
            Some(d) if self.scored.requests_scalar(&reqs) => d.extended_device_counts(&self.scored.names()),
            _ => None,
        };
        BalancedState(reqs, dra)
    }

    /// From config args (absent means defaults), defaulted as upstream defaults a
    /// configuration ([`BalancedAllocationArgs::set_defaults`]).
    pub fn from_config(args: Option<&serde_json::Value>) -> Result<Self, ArgsError> {
        let mut a = match args {
            Some(v) => BalancedAllocationArgs::deserialize(v).map_err(|e| ArgsError::Decode(e.to_string()))?,
            None => BalancedAllocationArgs::default(),
        };
        a.set_defaults();
        BalancedAllocation::new(&a)
    }

    /// [`Self::score_with`] over a batch, with the best-effort check and the scoring
    /// choice made once.
    fn score_batch(&self, s: &BalancedState, nodes: NodeList<'_>, scores: &mut [NodeScore]) {
        if s.0.iter().all(|&r| r == 0) {
            for slot in scores.iter_mut() {
                slot.score = 0;
            }
            return;
        }
        let (reqs, dra) = (&s.0, s.1.as_ref());
        match self.scoring {
            BalancedScoring::BalanceAfterPlacement => {
                balance::balanced_nodes(&self.scored, reqs, nodes, scores, dra, |_, after| after);
            }
            BalancedScoring::ChangeInBalance => {
                balance::balanced_nodes(&self.scored, reqs, nodes, scores, dra, change_in_balance);
            }
        }
    }

    fn score_with(&self, s: &BalancedState, node: &NodeInfo) -> i64 {
        let (reqs, dra) = (&s.0, s.1.as_ref());
        match self.scoring {
            BalancedScoring::BalanceAfterPlacement => balance::balanced_score(&self.scored, reqs, node, dra),
            BalancedScoring::ChangeInBalance => {
                let (before, after) = balance::balanced_before_after(&self.scored, reqs, node, dra);
                change_in_balance(before, after)
            }
        }
    }
}

/// The v1.36 score from the balance without and with the pod: `50 + (50 + after -
/// before) / 2` (kubernetes/kubernetes#135573).
#[inline]
fn change_in_balance(before: i64, after: i64) -> i64 {
    MAX_NODE_SCORE / 2 + (MAX_NODE_SCORE / 2 + after - before) / 2
}

impl Plugin for BalancedAllocation {
    fn name(&self) -> &str {
        names::NODE_RESOURCES_BALANCED_ALLOCATION
    }
    fn register(self: Arc<Self>, p: &mut ExtensionPoints) {
        p.pre_score(self.clone()).score(self.clone()).sign(self);
    }
}

impl PreScorePlugin for BalancedAllocation {
    /// Skips best-effort pods (nothing requested), as upstream does since
    /// kubernetes/kubernetes#129138, so they don't pile onto one node.
    fn pre_score(&self, state: &mut CycleState, pod: &PodInfo, _: NodeList<'_>) -> Status {
        let s = self.state(pod);
        if s.0.iter().all(|&r| r == 0) {
            return Status::SKIP;
        }
        state.write(s);
        Status::SUCCESS
    }

    /// The pod's requests are a function of the pod; the device view read from the DRA
    /// store (a scored extended resource with device classes) is not.
    fn pre_score_reuse(&self, pod: &PodInfo) -> crate::framework::PreReuse {
        if self.device_classes.is_none() || !self.scored.requests_scalar(&self.scored.pod_requests(pod, true)) {
            crate::framework::PreReuse::Pod
        } else {
            crate::framework::PreReuse::Never
        }
    }
}

impl ScorePlugin for BalancedAllocation {
    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        if let Some(s) = state.read::<BalancedState>() {
            return Ok(self.score_with(s, node));
        }
        let s = self.state(pod);
        if s.0.iter().all(|&r| r == 0) {
            return Ok(0);
        }
        Ok(self.score_with(&s, node))
    }

    fn score_nodes(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: NodeList<'_>,
        scores: &mut [NodeScore],
    ) -> Result<(), Status> {
        with_state(state, || self.state(pod), |s: &BalancedState| self.score_batch(s, nodes, scores));
        Ok(())
    }

    /// BalancedAllocation has no NormalizeScore (upstream `noderesources/balanced_allocation.go`).
    fn normalize_reuse(&self) -> crate::framework::NormalizeReuse {
        crate::framework::NormalizeReuse::PerNode
    }
}

/// Upstream `BalancedAllocation.SignPod`: as [`super::Fit`]'s (same key, so one
/// fragment serves both), unsignable while `DRAExtendedResource` is on.
impl crate::framework::SignPlugin for BalancedAllocation {
    fn sign_pod(&self, pod: &PodInfo, fragments: &mut crate::framework::SignFragments) -> Status {
        if self.dra_extended {
            return Status::unschedulable("signature disabled when dra extended resources enabled");
        }
        super::sign_requests(pod, self.scored.pod_level, fragments);
        Status::SUCCESS
    }

    /// As [`super::Fit`]'s: a pod without extended resource requests signs them.
    fn sign_pod_in_group(&self, pod: &PodInfo, fragments: &mut crate::framework::SignFragments) -> Status {
        if self.dra_extended && !pod.requests_for(self.scored.pod_level).scalar.is_empty() {
            return self.sign_pod(pod, fragments);
        }
        super::sign_requests(pod, self.scored.pod_level, fragments);
        Status::SUCCESS
    }
}
