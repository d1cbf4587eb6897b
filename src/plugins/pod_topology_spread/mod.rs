//! PodTopologySpread: spread pods evenly across topology domains (PreFilter,
//! Filter, PreScore, Score), following upstream
//! `pkg/scheduler/framework/plugins/podtopologyspread/{plugin,common,filtering,scoring}.go`.
//!
//! * **Filter** (constraints with `whenUnsatisfiable: DoNotSchedule`): a node passes
//!   when, for every constraint, `matching pods in the node's domain + (1 if the pod
//!   matches its own selector) - global minimum <= maxSkew`. The global minimum is
//!   the smallest domain count, or 0 while fewer than `minDomains` domains exist.
//!   Domains and counts come from nodes that carry every topology key and pass the
//!   constraint's `nodeAffinityPolicy` (default Honor) and `nodeTaintsPolicy`
//!   (default Ignore). Reasons and codes are upstream's.
//! * **Score** (`ScheduleAnyway`): fewer matching pods in a node's domains is
//!   better, weighted by `ln(number of domains + 2)` and softened by `maxSkew - 1`,
//!   then normalized so the best node gets 100.
//! * A pod with no constraints gets the profile's default constraints (by default
//!   upstream's system defaults: hostname maxSkew 3 and zone maxSkew 5, both
//!   ScheduleAnyway), counted with the selector of the Services and controllers that
//!   select it ([`WorkloadSelectors`]); when nothing selects it, the plugin skips it.
//!
//! Cost: PreFilter and PreScore return Skip without touching any pod when the pod
//! has no constraints of their kind. Otherwise each walks the node list once per
//! cycle but recounts pods only on nodes whose `NodeInfo` changed since the last pod
//! with the same constraints (a small per-plugin memo of the last few workloads'
//! counts, beyond upstream; the counts are exactly upstream's), and PreScore counts
//! the candidates' own pods for hostname constraints. Filter and Score are
//! O(constraints) hash look-ups per node and allocate nothing.
//!
//! ```
//! use std::sync::Arc;
//! use schedkit::framework::{CycleState, FilterPlugin, Handle, PreFilterPlugin};
//! use schedkit::model::{LabelSelector, Labels, Symbol, TopologySpreadConstraint, UnsatisfiableConstraintAction};
//! use schedkit::plugins::pod_topology_spread::{PodTopologySpread, PodTopologySpreadArgs};
//! use schedkit::snapshot::{NodeInfo, PodInfo, Snapshot};
//! use schedkit::testing::{NodeBuilder, PodBuilder};
//!
//! let node = |name: &str, zone: &str| NodeInfo::new(Arc::new(NodeBuilder::new(name).zone(zone).build()));
//! let mut a = node("a1", "a");
//! a.add_pod(Arc::new(PodInfo::new(PodBuilder::new("web-0").label("app", "web").build()).unwrap()));
//! let snapshot = Snapshot::from_nodes([a, node("b1", "b")]);
//!
//! let spread = TopologySpreadConstraint {
//!     max_skew: 1,
//!     topology_key: Symbol::intern("topology.kubernetes.io/zone"),
//!     when_unsatisfiable: UnsatisfiableConstraintAction::DoNotSchedule,
//!     label_selector: Some(LabelSelector::from_labels(Labels::from_pairs([("app", "web")]))),
//!     min_domains: None,
//!     node_affinity_policy: None,
//!     node_taints_policy: None,
//!     match_label_keys: vec![],
//! };
//! let pod = PodInfo::new(PodBuilder::new("web-1").label("app", "web")
//!     .with(|p| p.spec.topology_spread_constraints = vec![spread]).build()).unwrap();
//!
//! let plugin = PodTopologySpread::new(PodTopologySpreadArgs::default(), &Handle::default()).unwrap();
//! let mut state = CycleState::new();
//! let (_, status) = plugin.pre_filter(&mut state, &pod, &snapshot);
//! assert!(status.is_success());
//! // Zone a already has one web pod: a second one there would make the skew 2.
//! assert!(!plugin.filter(&state, &pod, snapshot.get("a1").unwrap()).is_success());
//! assert!(plugin.filter(&state, &pod, snapshot.get("b1").unwrap()).is_success());
//! ```

mod common;
mod filtering;
mod hints;
mod memo;
mod scoring;
#[cfg(test)]
mod tests;
mod workloads;

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::framework::{ExtensionPoints, Handle, Plugin};
use crate::model::{Symbol, TopologySpreadConstraint, UnsatisfiableConstraintAction};
use crate::plugins::names;
use crate::snapshot::PodInfo;

use common::{Constraint, filter_constraints};
pub use workloads::{WorkloadKind, WorkloadSelectors};

/// Filter reason when a node would break a constraint's skew (upstream
/// `ErrReasonConstraintsNotMatch`).
pub const ERR_REASON_CONSTRAINTS_NOT_MATCH: &str = "node(s) didn't match pod topology spread constraints";
/// Filter reason when a node lacks a constraint's topology key (upstream
/// `ErrReasonNodeLabelNotMatch`).
pub const ERR_REASON_NODE_LABEL_NOT_MATCH: &str =
    "node(s) didn't match pod topology spread constraints (missing required label)";

/// The well-known hostname label (`v1.LabelHostname`).
pub const LABEL_HOSTNAME: &str = "kubernetes.io/hostname";
/// The well-known zone label (`v1.LabelTopologyZone`).
pub const LABEL_TOPOLOGY_ZONE: &str = "topology.kubernetes.io/zone";

/// How default constraints are chosen (upstream `PodTopologySpreadConstraintsDefaulting`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum DefaultingType {
    /// Upstream's built-in defaults ([`system_default_constraints`]); `defaultConstraints` must be empty.
    #[default]
    System,
    /// The constraints in `defaultConstraints` (possibly none).
    List,
}

/// Arguments of PodTopologySpread (upstream `PodTopologySpreadArgs`, config v1,
/// where `defaultingType` defaults to `System`).
///
/// ```
/// use schedkit::plugins::pod_topology_spread::{DefaultingType, PodTopologySpreadArgs};
/// let args: PodTopologySpreadArgs = serde_json::from_str(r#"{
///   "defaultingType": "List",
///   "defaultConstraints": [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
///                           "whenUnsatisfiable": "ScheduleAnyway"}]
/// }"#).unwrap();
/// assert_eq!(args.defaulting_type, DefaultingType::List);
/// assert!(args.validate().is_ok());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodTopologySpreadArgs {
    /// Constraints for pods that have none, with `defaultingType: List`. They must
    /// not set `labelSelector`: it is deduced per pod from Services and controllers.
    pub default_constraints: Vec<TopologySpreadConstraint>,
    /// System (upstream's defaults) or List (`defaultConstraints`).
    pub defaulting_type: DefaultingType,
}

/// Invalid [`PodTopologySpreadArgs`], after upstream `ValidatePodTopologySpreadArgs`
/// (`pkg/scheduler/apis/config/validation/validation_pluginargs.go`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PodTopologySpreadArgsError {
    /// The args are not valid JSON for [`PodTopologySpreadArgs`].
    #[error("PodTopologySpreadArgs: {0}")]
    Parse(String),
    /// `defaultingType: System` with a non-empty `defaultConstraints`.
    #[error("defaultConstraints: must be empty when defaultingType is System")]
    SystemWithConstraints,
    /// `maxSkew` not greater than 0.
    #[error("defaultConstraints[{index}].maxSkew: must be greater than zero, got {got}")]
    MaxSkew {
        /// Position in `defaultConstraints`.
        index: usize,
        /// The value given.
        got: i32,
    },
    /// `minDomains` set but not greater than 0.
    #[error("defaultConstraints[{index}].minDomains: must be greater than zero, got {got}")]
    MinDomains {
        /// Position in `defaultConstraints`.
        index: usize,
        /// The value given.
        got: i32,
    },
    /// An empty `topologyKey`.
    #[error("defaultConstraints[{index}].topologyKey: must not be empty")]
    EmptyTopologyKey {
        /// Position in `defaultConstraints`.
        index: usize,
    },
    /// A `labelSelector` on a default constraint.
    #[error("defaultConstraints[{index}].labelSelector: must not be set, the selector is deduced for each pod")]
    SelectorSet {
        /// Position in `defaultConstraints`.
        index: usize,
    },
    /// Two constraints with the same topology key and action.
    #[error("defaultConstraints[{index}]: duplicate {{topologyKey: {key}, whenUnsatisfiable: {action:?}}}")]
    Duplicate {
        /// Position of the second one.
        index: usize,
        /// The topology key.
        key: String,
        /// The action.
        action: UnsatisfiableConstraintAction,
    },
}

impl PodTopologySpreadArgs {
    /// Checks the args as upstream does when the profile is built.
    pub fn validate(&self) -> Result<(), PodTopologySpreadArgsError> {
        if self.defaulting_type == DefaultingType::System && !self.default_constraints.is_empty() {
            return Err(PodTopologySpreadArgsError::SystemWithConstraints);
        }
        for (index, c) in self.default_constraints.iter().enumerate() {
            if c.max_skew <= 0 {
                return Err(PodTopologySpreadArgsError::MaxSkew { index, got: c.max_skew });
            }
            if let Some(got) = c.min_domains
                && got <= 0
            {
                return Err(PodTopologySpreadArgsError::MinDomains { index, got });
            }
            if c.topology_key.is_empty() {
                return Err(PodTopologySpreadArgsError::EmptyTopologyKey { index });
            }
            if c.label_selector.is_some() {
                return Err(PodTopologySpreadArgsError::SelectorSet { index });
            }
            let dup = self.default_constraints[..index]
                .iter()
                .any(|d| d.topology_key == c.topology_key && d.when_unsatisfiable == c.when_unsatisfiable);
            if dup {
                return Err(PodTopologySpreadArgsError::Duplicate {
                    index,
                    key: c.topology_key.as_str().to_owned(),
                    action: c.when_unsatisfiable,
                });
            }
        }
        Ok(())
    }
}

/// Upstream's `systemDefaultConstraints` (`podtopologyspread/plugin.go`): hostname
/// with maxSkew 3 and zone with maxSkew 5, both ScheduleAnyway.
pub fn system_default_constraints() -> Vec<TopologySpreadConstraint> {
    let c = |key: &str, max_skew| TopologySpreadConstraint {
        max_skew,
        topology_key: Symbol::intern(key),
        when_unsatisfiable: UnsatisfiableConstraintAction::ScheduleAnyway,
        label_selector: None,
        min_domains: None,
        node_affinity_policy: None,
        node_taints_policy: None,
        match_label_keys: Vec::new(),
    };
    vec![c(LABEL_HOSTNAME, 3), c(LABEL_TOPOLOGY_ZONE, 5)]
}

/// The PodTopologySpread plugin. See the [module docs](self).
#[derive(Debug, Clone)]
pub struct PodTopologySpread {
    default_constraints: Vec<TopologySpreadConstraint>,
    system_defaulted: bool,
    workloads: WorkloadSelectors,
    hostname: Symbol,
    memo: memo::CountMemo,
}

impl PodTopologySpread {
    /// Builds the plugin from validated args (upstream `New`). Default constraints
    /// find pods through an empty [`WorkloadSelectors`] until one is attached with
    /// [`PodTopologySpread::with_workloads`].
    pub fn new(args: PodTopologySpreadArgs, _handle: &Handle) -> Result<Self, PodTopologySpreadArgsError> {
        args.validate()?;
        let system_defaulted = args.defaulting_type == DefaultingType::System;
        let default_constraints =
            if system_defaulted { system_default_constraints() } else { args.default_constraints };
        Ok(PodTopologySpread {
            default_constraints,
            system_defaulted,
            workloads: WorkloadSelectors::default(),
            hostname: Symbol::intern(LABEL_HOSTNAME),
            memo: memo::CountMemo::default(),
        })
    }

    /// Builds the plugin from config args (`None`: the defaults), for a
    /// [`Registry`](crate::framework::Registry) factory.
    pub fn from_config(args: Option<&serde_json::Value>, handle: &Handle) -> Result<Self, PodTopologySpreadArgsError> {
        let args = match args {
            Some(v) => {
                PodTopologySpreadArgs::deserialize(v).map_err(|e| PodTopologySpreadArgsError::Parse(e.to_string()))?
            }
            None => PodTopologySpreadArgs::default(),
        };
        PodTopologySpread::new(args, handle)
    }

    /// A registry factory: `registry.register(names::POD_TOPOLOGY_SPREAD, PodTopologySpread::factory)`.
    pub fn factory(args: Option<&serde_json::Value>, handle: &Handle) -> Result<Arc<dyn Plugin>, String> {
        PodTopologySpread::from_config(args, handle).map(|p| Arc::new(p) as Arc<dyn Plugin>).map_err(|e| e.to_string())
    }

    /// A registry factory whose plugins find default-constraint selectors in
    /// `workloads` (the registry the embedding program keeps current).
    ///
    /// ```
    /// use schedkit::framework::{Handle, ProfileConfig, Registry};
    /// use schedkit::plugins::{names, pod_topology_spread::{PodTopologySpread, WorkloadSelectors}};
    /// let mut registry = Registry::new();
    /// registry.register(names::POD_TOPOLOGY_SPREAD, PodTopologySpread::factory_with(WorkloadSelectors::default())).unwrap();
    /// let cfg: ProfileConfig = serde_json::from_str(r#"{
    ///     "plugins": {"multiPoint": {"enabled": [{"name": "PodTopologySpread", "weight": 2}]}},
    ///     "pluginConfig": [{"name": "PodTopologySpread", "args": {"defaultingType": "List"}}]
    /// }"#).unwrap();
    /// let profile = registry.build_profile(&cfg, &Handle::default()).unwrap();
    /// assert_eq!(profile.filter_plugins(), ["PodTopologySpread"]);
    /// ```
    pub fn factory_with(
        workloads: WorkloadSelectors,
    ) -> impl Fn(Option<&serde_json::Value>, &Handle) -> Result<Arc<dyn Plugin>, String> + Send + Sync + 'static {
        move |args, handle| {
            PodTopologySpread::from_config(args, handle)
                .map(|p| Arc::new(p.with_workloads(workloads.clone())) as Arc<dyn Plugin>)
                .map_err(|e| e.to_string())
        }
    }

    /// Uses `workloads` to find the selector of default constraints.
    #[must_use]
    pub fn with_workloads(mut self, workloads: WorkloadSelectors) -> Self {
        self.workloads = workloads;
        self
    }

    /// The workload registry default constraints read.
    pub fn workloads(&self) -> &WorkloadSelectors {
        &self.workloads
    }

    /// The pod's constraints with `action`, or the default constraints when it has
    /// none (upstream `getConstraints` / `buildDefaultConstraints`).
    fn constraints(&self, pod: &PodInfo, action: UnsatisfiableConstraintAction) -> Vec<Constraint> {
        let spec = &pod.pod.spec.topology_spread_constraints;
        let labels = &pod.pod.metadata.labels;
        if !spec.is_empty() {
            return filter_constraints(spec, labels, action);
        }
        if !self.default_constraints.iter().any(|c| c.when_unsatisfiable == action) {
            return Vec::new();
        }
        let mut constraints = filter_constraints(&self.default_constraints, labels, action);
        let selector = self.workloads.default_selector(pod);
        if selector.is_empty() {
            return Vec::new();
        }
        for c in &mut constraints {
            c.selector = Some(selector.clone());
        }
        constraints
    }
}

impl Plugin for PodTopologySpread {
    fn name(&self) -> &str {
        names::POD_TOPOLOGY_SPREAD
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

/// Upstream `PodTopologySpread.SignPod`: spreading depends on where the other pods
/// of the burst land, so a pod with constraints is not signable, and neither is any
/// pod while the plugin has default constraints (the system defaults included: set
/// `defaultingType: List` with no `defaultConstraints` to let pods batch, as
/// upstream's docs advise). Signable pods add no fragment.
impl crate::framework::SignPlugin for PodTopologySpread {
    fn sign_pod(
        &self,
        pod: &crate::snapshot::PodInfo,
        _: &mut crate::framework::SignFragments,
    ) -> crate::framework::Status {
        if !pod.pod.spec.topology_spread_constraints.is_empty() {
            return crate::framework::Status::unschedulable("pods with topology constraints are not signable");
        }
        if !self.default_constraints.is_empty() {
            return crate::framework::Status::unschedulable("pods with default topology constraints are not signable");
        }
        crate::framework::Status::SUCCESS
    }
}
