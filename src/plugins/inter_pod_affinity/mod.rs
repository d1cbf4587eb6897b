//! InterPodAffinity: pod affinity and anti-affinity (PreFilter, Filter, PreScore,
//! Score), following upstream
//! `pkg/scheduler/framework/plugins/interpodaffinity/{plugin,filtering,scoring}.go`.
//!
//! * **Filter**, in upstream's order: the incoming pod's required affinity (every
//!   term's topology key present on the node and, per term, some matching pod in the
//!   node's domain; a pod whose terms match only itself may go anywhere with the keys
//!   while no pod matches — UnschedulableAndUnresolvable otherwise); its required
//!   anti-affinity (Unschedulable); existing pods' required anti-affinity against
//!   the incoming pod (Unschedulable).
//! * **Score**: per topology domain, the sum of the incoming pod's preferred term
//!   weights matched by existing pods (anti-affinity subtracts), plus existing pods'
//!   preferred terms matched by the incoming pod, plus `hardPodAffinityWeight` for
//!   each existing pod's required affinity term the incoming pod matches; min-max
//!   normalized to 0..=100.
//! * Namespaces: a term with neither `namespaces` nor `namespaceSelector` means the
//!   term owner's namespace; `namespaceSelector` reads [`NamespaceLabels`], which the
//!   embedding program fills (upstream reads Namespace objects). `matchLabelKeys` and
//!   `mismatchLabelKeys` are applied here, since no API server merges them.
//!
//! Cost: PreFilter scans only pods with required anti-affinity when the incoming
//! pod has no required terms, and Skips when none of them applies; with required
//! terms it walks the node list once per cycle but recounts pods only on nodes whose
//! `NodeInfo` changed since the last pod with the same terms (a small memo of the
//! last few workloads' counts, beyond upstream; the counts are exactly upstream's).
//! PreScore scans only pods with affinity when the pod has no preferred terms; with
//! preferred terms it sums over every pod through the same kind of memo. Filter is
//! O(required terms + node labels) and Score O(topology keys), both
//! allocation-free.
//!
//! ```
//! use std::sync::Arc;
//! use schedkit::framework::{CycleState, FilterPlugin, Handle, PreFilterPlugin};
//! use schedkit::model::{Affinity, LabelSelector, Labels, PodAffinity, PodAffinityTerm, Symbol};
//! use schedkit::plugins::inter_pod_affinity::{InterPodAffinity, InterPodAffinityArgs};
//! use schedkit::snapshot::{NodeInfo, PodInfo, Snapshot};
//! use schedkit::testing::{NodeBuilder, PodBuilder};
//!
//! let node = |name: &str| NodeInfo::new(Arc::new(NodeBuilder::new(name).label("kubernetes.io/hostname", name).build()));
//! let mut n1 = node("n1");
//! n1.add_pod(Arc::new(PodInfo::new(PodBuilder::new("db-0").label("app", "db").build()).unwrap()));
//! let snapshot = Snapshot::from_nodes([n1, node("n2")]);
//!
//! // Never on the same host as a db pod.
//! let term = PodAffinityTerm {
//!     label_selector: Some(LabelSelector::from_labels(Labels::from_pairs([("app", "db")]))),
//!     topology_key: Symbol::intern("kubernetes.io/hostname"),
//!     ..Default::default()
//! };
//! let pod = PodInfo::new(PodBuilder::new("web").with(|p| p.spec.affinity = Some(Affinity {
//!     pod_anti_affinity: Some(PodAffinity { required: vec![term], preferred: vec![] }),
//!     ..Default::default()
//! })).build()).unwrap();
//!
//! let plugin = InterPodAffinity::new(InterPodAffinityArgs::default(), &Handle::default()).unwrap();
//! let mut state = CycleState::new();
//! assert!(plugin.pre_filter(&mut state, &pod, &snapshot).1.is_success());
//! assert!(!plugin.filter(&state, &pod, snapshot.get("n1").unwrap()).is_success());
//! assert!(plugin.filter(&state, &pod, snapshot.get("n2").unwrap()).is_success());
//! ```

mod filtering;
mod hints;
mod memo;
mod scoring;
mod terms;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::framework::{ExtensionPoints, Handle, Plugin};
use crate::plugins::names;

pub use terms::NamespaceLabels;

/// Filter reason when existing pods' anti-affinity rejects the pod (upstream
/// `ErrReasonExistingAntiAffinityRulesNotMatch`).
pub const ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH: &str =
    "node(s) didn't satisfy existing pods anti-affinity rules";
/// Filter reason for the pod's own affinity (upstream `ErrReasonAffinityRulesNotMatch`).
pub const ERR_REASON_AFFINITY_RULES_NOT_MATCH: &str = "node(s) didn't match pod affinity rules";
/// Filter reason for the pod's own anti-affinity (upstream `ErrReasonAntiAffinityRulesNotMatch`).
pub const ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH: &str = "node(s) didn't match pod anti-affinity rules";

/// Arguments of InterPodAffinity (upstream `InterPodAffinityArgs`, config v1).
///
/// ```
/// use schedkit::plugins::inter_pod_affinity::InterPodAffinityArgs;
/// let args: InterPodAffinityArgs = serde_json::from_str(r#"{"hardPodAffinityWeight": 5}"#).unwrap();
/// assert_eq!(args.hard_pod_affinity_weight, 5);
/// assert!(!args.ignore_preferred_terms_of_existing_pods);
/// assert_eq!(InterPodAffinityArgs::default().hard_pod_affinity_weight, 1);
/// let bad = InterPodAffinityArgs { hard_pod_affinity_weight: -1, ..Default::default() };
/// assert!(bad.validate().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct InterPodAffinityArgs {
    /// Score weight an existing pod's required affinity term gives nodes in its
    /// domain when the incoming pod matches it; 0..=100, default 1.
    pub hard_pod_affinity_weight: i32,
    /// Skip PreScore/Score for pods without preferred terms of their own, ignoring
    /// existing pods' preferences.
    pub ignore_preferred_terms_of_existing_pods: bool,
}

impl Default for InterPodAffinityArgs {
    fn default() -> Self {
        InterPodAffinityArgs { hard_pod_affinity_weight: 1, ignore_preferred_terms_of_existing_pods: false }
    }
}

/// Invalid [`InterPodAffinityArgs`] (upstream `ValidateInterPodAffinityArgs`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InterPodAffinityArgsError {
    /// The args are not valid JSON for [`InterPodAffinityArgs`].
    #[error("InterPodAffinityArgs: {0}")]
    Parse(String),
    /// `hardPodAffinityWeight` outside 0..=100.
    #[error("hardPodAffinityWeight: not in valid range [0-100], got {0}")]
    HardPodAffinityWeight(i32),
}

impl InterPodAffinityArgs {
    /// Checks the args as upstream does when the profile is built.
    pub fn validate(&self) -> Result<(), InterPodAffinityArgsError> {
        if !(0..=100).contains(&self.hard_pod_affinity_weight) {
            return Err(InterPodAffinityArgsError::HardPodAffinityWeight(self.hard_pod_affinity_weight));
        }
        Ok(())
    }
}

/// The InterPodAffinity plugin. See the [module docs](self).
#[derive(Debug, Clone)]
pub struct InterPodAffinity {
    args: InterPodAffinityArgs,
    namespaces: NamespaceLabels,
    memo: memo::TermMemo,
    score_memo: memo::ScoreMemo,
}

impl InterPodAffinity {
    /// Builds the plugin from validated args (upstream `New`), with an empty
    /// [`NamespaceLabels`] until one is attached with [`InterPodAffinity::with_namespaces`].
    pub fn new(args: InterPodAffinityArgs, _handle: &Handle) -> Result<Self, InterPodAffinityArgsError> {
        args.validate()?;
        Ok(InterPodAffinity {
            args,
            namespaces: NamespaceLabels::default(),
            memo: memo::TermMemo::default(),
            score_memo: memo::ScoreMemo::default(),
        })
    }

    /// Builds the plugin from config args (`None`: the defaults).
    pub fn from_config(args: Option<&serde_json::Value>, handle: &Handle) -> Result<Self, InterPodAffinityArgsError> {
        let args = match args {
            Some(v) => {
                InterPodAffinityArgs::deserialize(v).map_err(|e| InterPodAffinityArgsError::Parse(e.to_string()))?
            }
            None => InterPodAffinityArgs::default(),
        };
        InterPodAffinity::new(args, handle)
    }

    /// A registry factory: `registry.register(names::INTER_POD_AFFINITY, InterPodAffinity::factory)`.
    pub fn factory(args: Option<&serde_json::Value>, handle: &Handle) -> Result<Arc<dyn Plugin>, String> {
        InterPodAffinity::from_config(args, handle).map(|p| Arc::new(p) as Arc<dyn Plugin>).map_err(|e| e.to_string())
    }

    /// A registry factory whose plugins read `namespaces` (the registry the embedding
    /// program keeps current), for config-built profiles that use namespace selectors.
    ///
    /// ```
    /// use schedkit::framework::{Handle, ProfileConfig, Registry};
    /// use schedkit::model::Labels;
    /// use schedkit::plugins::{inter_pod_affinity::{InterPodAffinity, NamespaceLabels}, names};
    /// let namespaces = NamespaceLabels::default();
    /// let mut registry = Registry::new();
    /// registry.register(names::INTER_POD_AFFINITY, InterPodAffinity::factory_with(namespaces.clone())).unwrap();
    /// namespaces.set("team-a", Labels::from_pairs([("team", "a")]));
    /// let cfg: ProfileConfig = serde_json::from_str(r#"{
    ///     "plugins": {"multiPoint": {"enabled": [{"name": "InterPodAffinity", "weight": 2}]}},
    ///     "pluginConfig": [{"name": "InterPodAffinity", "args": {"hardPodAffinityWeight": 10}}]
    /// }"#).unwrap();
    /// let profile = registry.build_profile(&cfg, &Handle::default()).unwrap();
    /// assert_eq!(profile.score_plugins(), [("InterPodAffinity", 2)]);
    /// ```
    pub fn factory_with(
        namespaces: NamespaceLabels,
    ) -> impl Fn(Option<&serde_json::Value>, &Handle) -> Result<Arc<dyn Plugin>, String> + Send + Sync + 'static {
        move |args, handle| {
            InterPodAffinity::from_config(args, handle)
                .map(|p| Arc::new(p.with_namespaces(namespaces.clone())) as Arc<dyn Plugin>)
                .map_err(|e| e.to_string())
        }
    }

    /// Reads namespace labels for `namespaceSelector` from `namespaces`.
    #[must_use]
    pub fn with_namespaces(mut self, namespaces: NamespaceLabels) -> Self {
        self.namespaces = namespaces;
        self
    }

    /// The namespace-label registry.
    pub fn namespaces(&self) -> &NamespaceLabels {
        &self.namespaces
    }

    /// The args.
    pub fn args(&self) -> &InterPodAffinityArgs {
        &self.args
    }
}

impl Plugin for InterPodAffinity {
    fn name(&self) -> &str {
        names::INTER_POD_AFFINITY
    }

    fn register(self: Arc<Self>, points: &mut ExtensionPoints) {
        points
            .pre_filter(self.clone())
            .filter(self.clone())
            .pre_score(self.clone())
            .score(self.clone())
            .enqueue(self.clone());
        points.sign(self);
    }
}

/// Upstream `InterPodAffinity.SignPod`: a pod with pod affinity or anti-affinity
/// terms is not signable (its placement depends on the burst's own pods); otherwise
/// its labels are signed, since existing pods' terms select by them, unless
/// `ignorePreferredTermsOfExistingPods` is set (upstream's `TestPodAffinitySignature`).
impl crate::framework::SignPlugin for InterPodAffinity {
    fn sign_pod(
        &self,
        pod: &crate::snapshot::PodInfo,
        fragments: &mut crate::framework::SignFragments,
    ) -> crate::framework::Status {
        if pod.has_affinity {
            return crate::framework::Status::unschedulable("pods with pod affinity or anti-affinity are not signable");
        }
        if !self.args.ignore_preferred_terms_of_existing_pods {
            let labels = &pod.pod.metadata.labels;
            fragments.add(crate::framework::LABELS_SIGNER, |w| {
                w.u32(labels.len() as u32);
                for (k, v) in labels.iter() {
                    w.symbol(k).symbol(v);
                }
            });
        }
        crate::framework::Status::SUCCESS
    }
}
