//! The v1.36 workload API, `scheduling.k8s.io/v1alpha2`: [`Workload`] (pod group
//! templates) and the standalone [`PodGroup`] the scheduler schedules as a unit, with
//! the API server's validation ([`validation`]) and the v1.35 `v1alpha1` Workload and
//! its conversion ([`v1alpha1`]).
//!
//! Shapes follow upstream `k8s.io/api/scheduling/v1alpha2/types.go`; serde reads and
//! writes the Kubernetes JSON/YAML field names.

pub mod v1alpha1;
pub mod validation;

use serde::{Deserialize, Serialize};

use super::ObjectMeta;

pub use validation::WorkloadError;

/// Most pod group templates a Workload holds (upstream `WorkloadMaxPodGroupTemplates`).
pub const WORKLOAD_MAX_POD_GROUP_TEMPLATES: usize = 8;
/// Most resource claims a PodGroup or template holds (upstream `MaxPodGroupResourceClaims`).
pub const MAX_POD_GROUP_RESOURCE_CLAIMS: usize = 4;
/// Most topology constraints a PodGroup holds (`+k8s:maxItems=1` in v1alpha2).
pub const MAX_TOPOLOGY_CONSTRAINTS: usize = 1;
/// The `PodGroupScheduled` condition type (upstream `v1alpha2.PodGroupScheduled`).
pub const POD_GROUP_SCHEDULED: &str = "PodGroupScheduled";
/// The `DisruptionTarget` condition type.
pub const DISRUPTION_TARGET: &str = "DisruptionTarget";
/// `PodGroupScheduled` reason: the group does not fit.
pub const REASON_UNSCHEDULABLE: &str = "Unschedulable";
/// `PodGroupScheduled` reason: an internal error.
pub const REASON_SCHEDULER_ERROR: &str = "SchedulerError";
/// `PodGroupScheduled` reason when the group was placed (the scheduler's, upstream
/// `schedule_one_podgroup.go`).
pub const REASON_SCHEDULED: &str = "Scheduled";
/// `DisruptionTarget` reason: preempted by the scheduler.
pub const REASON_PREEMPTION_BY_SCHEDULER: &str = "PreemptionByScheduler";

/// `scheduling.k8s.io/v1alpha2` `Workload`: the scheduling shape of a workload, as
/// templates its controller stamps [`PodGroup`]s from. Namespaced, no status.
///
/// ```
/// use schedkit::model::workload::Workload;
/// let w: Workload = serde_json::from_str(r#"{
///   "metadata": {"name": "training", "namespace": "ml"},
///   "spec": {"podGroupTemplates": [{"name": "workers", "schedulingPolicy": {"gang": {"minCount": 4}}}]}
/// }"#).unwrap();
/// assert_eq!(w.spec.pod_group_templates[0].scheduling_policy.min_count(), Some(4));
/// w.validate(Default::default()).unwrap();
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Workload {
    /// Name, namespace, labels.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The templates.
    pub spec: WorkloadSpec,
}

/// `WorkloadSpec`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadSpec {
    /// The controlling object (a Job, a JobSet); immutable once set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub controller_ref: Option<TypedLocalObjectReference>,
    /// At most [`WORKLOAD_MAX_POD_GROUP_TEMPLATES`], keyed by name; immutable.
    #[serde(default)]
    pub pod_group_templates: Vec<PodGroupTemplate>,
}

/// A reference to an object in the same namespace (`TypedLocalObjectReference`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TypedLocalObjectReference {
    /// API group (empty: the core group).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_group: String,
    /// Kind.
    #[serde(default)]
    pub kind: String,
    /// Name.
    #[serde(default)]
    pub name: String,
}

/// One template of a [`Workload`] (`PodGroupTemplate`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodGroupTemplate {
    /// A DNS label, unique in the Workload.
    #[serde(default)]
    pub name: String,
    /// Basic or gang.
    #[serde(default)]
    pub scheduling_policy: PodGroupSchedulingPolicy,
    /// Topology constraints (gate `TopologyAwareWorkloadScheduling`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduling_constraints: Option<PodGroupSchedulingConstraints>,
    /// Claims shared by the group's pods (gate `DRAWorkloadResourceClaims`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resource_claims: Vec<PodGroupResourceClaim>,
    /// How the group is disrupted (gate `WorkloadAwarePreemption`; KEP-5710).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disruption_mode: Option<DisruptionMode>,
    /// The group's priority class (gate `WorkloadAwarePreemption`; KEP-5710).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub priority_class_name: String,
    /// The group's priority (gate `WorkloadAwarePreemption`; KEP-5710).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,
}

/// `PodGroupSchedulingPolicy`: a union, exactly one member set.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodGroupSchedulingPolicy {
    /// Standard scheduling, pod by pod (in one group cycle).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub basic: Option<BasicSchedulingPolicy>,
    /// All or nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gang: Option<GangSchedulingPolicy>,
}

impl PodGroupSchedulingPolicy {
    /// A basic policy.
    pub fn basic() -> PodGroupSchedulingPolicy {
        PodGroupSchedulingPolicy { basic: Some(BasicSchedulingPolicy {}), gang: None }
    }

    /// A gang of at least `min_count`.
    pub fn gang(min_count: i32) -> PodGroupSchedulingPolicy {
        PodGroupSchedulingPolicy { basic: None, gang: Some(GangSchedulingPolicy { min_count }) }
    }

    /// The gang's `minCount`, if this is a gang.
    pub fn min_count(&self) -> Option<i32> {
        self.gang.as_ref().map(|g| g.min_count)
    }
}

/// `BasicSchedulingPolicy`: empty; its presence selects standard scheduling.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BasicSchedulingPolicy {}

/// `GangSchedulingPolicy`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GangSchedulingPolicy {
    /// Pods that must be schedulable or scheduled together; at least 1.
    #[serde(default)]
    pub min_count: i32,
}

/// `PodGroupSchedulingConstraints`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodGroupSchedulingConstraints {
    /// At most one constraint in v1.36.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub topology: Vec<TopologyConstraint>,
}

/// `TopologyConstraint`: every pod of the group in one domain of this node label.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TopologyConstraint {
    /// A node label key, e.g. `topology.kubernetes.io/rack`.
    #[serde(default)]
    pub key: String,
}

/// `PodGroupResourceClaim`: one claim, by name or by template (exactly one).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodGroupResourceClaim {
    /// A DNS label, unique in the group.
    #[serde(default)]
    pub name: String,
    /// A ResourceClaim in the group's namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_claim_name: Option<String>,
    /// A ResourceClaimTemplate in the group's namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_claim_template_name: Option<String>,
}

/// `DisruptionMode` (KEP-5710): whether a group is disrupted pod by pod or whole.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum DisruptionMode {
    /// Pods may be disrupted one by one (the default).
    #[default]
    Pod,
    /// The whole group is disrupted together.
    PodGroup,
}

/// `scheduling.k8s.io/v1alpha2` `PodGroup`: one runtime instance of a group of pods,
/// which pods name in `spec.schedulingGroup.podGroupName`.
///
/// ```
/// use schedkit::model::workload::PodGroup;
/// let pg = PodGroup::gang("ml", "job-0", 8).with_topology("topology.kubernetes.io/rack");
/// assert_eq!(pg.topology_key(), Some("topology.kubernetes.io/rack"));
/// pg.validate(Default::default()).unwrap_err(); // the topology gate is off by default
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodGroup {
    /// Name, namespace, labels.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// Policy and constraints.
    pub spec: PodGroupSpec,
    /// Conditions and claim statuses.
    #[serde(default, skip_serializing_if = "PodGroupStatus::is_empty")]
    pub status: PodGroupStatus,
}

/// `PodGroupSpec`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodGroupSpec {
    /// The template this group was made from; immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_group_template_ref: Option<PodGroupTemplateReference>,
    /// Basic or gang; required, immutable.
    #[serde(default)]
    pub scheduling_policy: PodGroupSchedulingPolicy,
    /// Topology constraints; immutable (gate `TopologyAwareWorkloadScheduling`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduling_constraints: Option<PodGroupSchedulingConstraints>,
    /// Shared claims; immutable (gate `DRAWorkloadResourceClaims`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resource_claims: Vec<PodGroupResourceClaim>,
    /// How the group is disrupted; `Pod` when unset (gate `WorkloadAwarePreemption`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disruption_mode: Option<DisruptionMode>,
    /// Priority class (gate `WorkloadAwarePreemption`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub priority_class_name: String,
    /// Priority (gate `WorkloadAwarePreemption`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,
}

/// `PodGroupTemplateReference`: a union whose only member is `workload`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodGroupTemplateReference {
    /// A template of a Workload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<WorkloadPodGroupTemplateReference>,
}

/// `WorkloadPodGroupTemplateReference`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadPodGroupTemplateReference {
    /// The Workload's name.
    #[serde(default)]
    pub workload_name: String,
    /// The template's name in it.
    #[serde(default)]
    pub pod_group_template_name: String,
}

/// `PodGroupStatus`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodGroupStatus {
    /// `PodGroupScheduled`, `DisruptionTarget`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// Names of claims generated for the group.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resource_claim_statuses: Vec<PodGroupResourceClaimStatus>,
}

impl PodGroupStatus {
    /// Whether nothing is set.
    pub fn is_empty(&self) -> bool {
        self.conditions.is_empty() && self.resource_claim_statuses.is_empty()
    }
}

/// `PodGroupResourceClaimStatus`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodGroupResourceClaimStatus {
    /// The `spec.resourceClaims` entry.
    #[serde(default)]
    pub name: String,
    /// The generated claim (unset: none was needed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_claim_name: Option<String>,
}

/// `metav1.Condition`, as the API server prints it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    /// The condition type, e.g. [`POD_GROUP_SCHEDULED`].
    #[serde(rename = "type", default)]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    #[serde(default)]
    pub status: String,
    /// The `metadata.generation` the condition was set for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// RFC 3339 text, kept as written.
    #[serde(default)]
    pub last_transition_time: String,
    /// CamelCase reason.
    #[serde(default)]
    pub reason: String,
    /// Human-readable message.
    #[serde(default)]
    pub message: String,
}

impl PodGroup {
    /// A gang of `min_count` named `namespace/name`.
    pub fn gang(namespace: &str, name: &str, min_count: i32) -> PodGroup {
        PodGroup::with_policy(namespace, name, PodGroupSchedulingPolicy::gang(min_count))
    }

    /// A basic group named `namespace/name`.
    pub fn basic(namespace: &str, name: &str) -> PodGroup {
        PodGroup::with_policy(namespace, name, PodGroupSchedulingPolicy::basic())
    }

    fn with_policy(namespace: &str, name: &str, policy: PodGroupSchedulingPolicy) -> PodGroup {
        PodGroup {
            metadata: ObjectMeta { name: name.to_owned(), namespace: namespace.to_owned(), ..ObjectMeta::default() },
            spec: PodGroupSpec { scheduling_policy: policy, ..PodGroupSpec::default() },
            status: PodGroupStatus::default(),
        }
    }

    /// This group with one topology constraint on `key`.
    #[must_use]
    pub fn with_topology(mut self, key: &str) -> PodGroup {
        self.spec.scheduling_constraints =
            Some(PodGroupSchedulingConstraints { topology: vec![TopologyConstraint { key: key.to_owned() }] });
        self
    }

    /// The namespace (`default` when empty, as for pods).
    pub fn namespace(&self) -> &str {
        if self.metadata.namespace.is_empty() { "default" } else { &self.metadata.namespace }
    }

    /// The name.
    pub fn name(&self) -> &str {
        &self.metadata.name
    }

    /// The gang's `minCount` (`None` for a basic group).
    pub fn min_count(&self) -> Option<i32> {
        self.spec.scheduling_policy.min_count()
    }

    /// Whether the policy is gang.
    pub fn is_gang(&self) -> bool {
        self.spec.scheduling_policy.gang.is_some()
    }

    /// The first topology constraint's key, the only one v1.36 supports.
    pub fn topology_key(&self) -> Option<&str> {
        self.spec.scheduling_constraints.as_ref()?.topology.first().map(|t| t.key.as_str())
    }

    /// The `PodGroupScheduled` condition, if set.
    pub fn scheduled_condition(&self) -> Option<&Condition> {
        self.status.conditions.iter().find(|c| c.type_ == POD_GROUP_SCHEDULED)
    }
}
