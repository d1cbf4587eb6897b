//! Pods: everything the built-in plugins read, in the shape of `v1.Pod`.

use serde::{Deserialize, Serialize};
use smallvec::SmallVec;

use super::labels::{LabelSelector, NodeSelector, NodeSelectorTerm, SelectorError};
use super::{Labels, ObjectMeta, ResourceList, Symbol, Taint, TaintEffect};

/// The label naming a pod's gang (scheduler-plugins coscheduling).
pub const POD_GROUP_LABEL: &str = "scheduling.x-k8s.io/pod-group";

/// Network protocols of a port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum Protocol {
    /// TCP (the default).
    #[default]
    #[serde(rename = "TCP")]
    Tcp,
    /// UDP.
    #[serde(rename = "UDP")]
    Udp,
    /// SCTP.
    #[serde(rename = "SCTP")]
    Sctp,
}

/// A container port; only those with a `hostPort` matter to scheduling.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ContainerPort {
    /// Port in the container.
    pub container_port: i32,
    /// Port on the host (0: none).
    #[serde(skip_serializing_if = "is_zero")]
    pub host_port: i32,
    /// Protocol.
    pub protocol: Protocol,
    /// Host IP to bind; empty means all (`0.0.0.0`).
    #[serde(rename = "hostIP", skip_serializing_if = "String::is_empty")]
    pub host_ip: String,
}

#[expect(clippy::trivially_copy_pass_by_ref, reason = "serde's skip_serializing_if passes a reference")]
fn is_zero(v: &i32) -> bool {
    *v == 0
}

/// Container resource requirements.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ResourceRequirements {
    /// Requests.
    #[serde(skip_serializing_if = "ResourceList::is_empty")]
    pub requests: ResourceList,
    /// Limits.
    #[serde(skip_serializing_if = "ResourceList::is_empty")]
    pub limits: ResourceList,
}

/// A container (or init container).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Container {
    /// Name.
    pub name: String,
    /// Image reference.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub image: String,
    /// Resources.
    pub resources: ResourceRequirements,
    /// Ports.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<ContainerPort>,
    /// `Always` on an init container makes it a sidecar that runs beside the app.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restart_policy: Option<String>,
}

/// Toleration operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum TolerationOperator {
    /// Key and value must equal the taint's (the default).
    #[default]
    Equal,
    /// Only the key must match; an empty key matches every taint.
    Exists,
}

/// A pod toleration.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Toleration {
    /// Taint key; empty with `Exists` tolerates everything.
    pub key: Symbol,
    /// Operator.
    pub operator: TolerationOperator,
    /// Value for `Equal`.
    pub value: Symbol,
    /// Effect; `None` tolerates every effect.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub effect: Option<TaintEffect>,
    /// For NoExecute: how long the pod stays bound after the taint appears.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub toleration_seconds: Option<i64>,
}

impl Toleration {
    /// Whether this toleration tolerates `taint`, as upstream `Toleration.ToleratesTaint`
    /// (`k8s.io/api/core/v1/toleration.go`).
    #[inline]
    pub fn tolerates(&self, taint: &Taint) -> bool {
        if self.effect.is_some_and(|e| e != taint.effect) {
            return false;
        }
        if !self.key.is_empty() && self.key != taint.key {
            return false;
        }
        match self.operator {
            TolerationOperator::Equal => self.value == taint.value,
            TolerationOperator::Exists => true,
        }
    }
}

/// A weighted preferred node selector term.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PreferredSchedulingTerm {
    /// Weight 1..=100.
    pub weight: i32,
    /// The term.
    pub preference: NodeSelectorTerm,
}

/// Node affinity.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NodeAffinity {
    /// Hard requirement.
    #[serde(rename = "requiredDuringSchedulingIgnoredDuringExecution", skip_serializing_if = "Option::is_none")]
    pub required: Option<NodeSelector>,
    /// Soft preferences.
    #[serde(rename = "preferredDuringSchedulingIgnoredDuringExecution", skip_serializing_if = "Vec::is_empty")]
    pub preferred: Vec<PreferredSchedulingTerm>,
}

/// A pod (anti-)affinity term.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodAffinityTerm {
    /// Which pods; `None` selects none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
    /// Namespaces to look in; empty with no selector means the pod's own.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub namespaces: Vec<Symbol>,
    /// Label key of the topology domain.
    pub topology_key: Symbol,
    /// Namespaces by label; an empty selector means all namespaces.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace_selector: Option<LabelSelector>,
    /// Keys whose values from the incoming pod are added as `In` requirements.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub match_label_keys: Vec<Symbol>,
    /// Keys whose values from the incoming pod are added as `NotIn` requirements.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub mismatch_label_keys: Vec<Symbol>,
}

/// A weighted pod (anti-)affinity term.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WeightedPodAffinityTerm {
    /// Weight 1..=100.
    pub weight: i32,
    /// The term.
    pub pod_affinity_term: PodAffinityTerm,
}

/// Pod affinity or anti-affinity.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodAffinity {
    /// Hard terms.
    #[serde(rename = "requiredDuringSchedulingIgnoredDuringExecution", skip_serializing_if = "Vec::is_empty")]
    pub required: Vec<PodAffinityTerm>,
    /// Soft terms.
    #[serde(rename = "preferredDuringSchedulingIgnoredDuringExecution", skip_serializing_if = "Vec::is_empty")]
    pub preferred: Vec<WeightedPodAffinityTerm>,
}

/// All affinity of a pod.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Affinity {
    /// Node affinity.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_affinity: Option<NodeAffinity>,
    /// Pod affinity.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_affinity: Option<PodAffinity>,
    /// Pod anti-affinity.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_anti_affinity: Option<PodAffinity>,
}

/// What a spread constraint does when it cannot be satisfied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum UnsatisfiableConstraintAction {
    /// Filter: nodes that would break the skew are rejected.
    #[default]
    DoNotSchedule,
    /// Score only.
    ScheduleAnyway,
}

/// Whether a spread constraint honours node affinity or taints when counting domains.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum NodeInclusionPolicy {
    /// Only nodes that pass the check count.
    Honor,
    /// All nodes count.
    Ignore,
}

/// A topology spread constraint.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TopologySpreadConstraint {
    /// Allowed difference between the fullest and the emptiest domain; > 0.
    pub max_skew: i32,
    /// Node label key of the domain.
    pub topology_key: Symbol,
    /// Filter or score.
    #[serde(default)]
    pub when_unsatisfiable: UnsatisfiableConstraintAction,
    /// Which pods count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
    /// Minimum number of eligible domains; > 0 when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_domains: Option<i32>,
    /// Default Honor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_affinity_policy: Option<NodeInclusionPolicy>,
    /// Default Ignore.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_taints_policy: Option<NodeInclusionPolicy>,
    /// Keys whose values from the incoming pod narrow the selector.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub match_label_keys: Vec<Symbol>,
}

/// A scheduling gate: while any remain, the pod is not scheduled.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SchedulingGate {
    /// Gate name.
    pub name: String,
}

/// A pod's reference to a DRA ResourceClaim.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodResourceClaim {
    /// Name within the pod.
    pub name: String,
    /// An existing claim in the pod's namespace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_claim_name: Option<String>,
    /// A template from which a claim is made for this pod.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_claim_template_name: Option<String>,
    /// The name of a claim in the pod's PodGroup (`spec.resourceClaims[].name`): the pod
    /// shares the one claim made for its group (KEP-5729, gate
    /// `DRAWorkloadResourceClaims`; upstream `PodResourceClaim.PodGroupResourceClaim`).
    /// Exactly one of the three references is set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_group_resource_claim: Option<String>,
}

/// Whether a pod may preempt others.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum PreemptionPolicy {
    /// May preempt lower-priority pods (the default).
    #[default]
    PreemptLowerPriority,
    /// Never preempts.
    Never,
}

/// Pod spec.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodSpec {
    /// App containers.
    pub containers: Vec<Container>,
    /// Init containers (sidecars have `restartPolicy: Always`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub init_containers: Vec<Container>,
    /// Runtime overhead added to the requests.
    #[serde(skip_serializing_if = "ResourceList::is_empty")]
    pub overhead: ResourceList,
    /// Pod-level resources (`spec.resources`, the PodLevelResources feature): requests
    /// of cpu, memory and `hugepages-*` here replace the containers' aggregate
    /// ([`Pod::requests`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
    /// The node the pod is bound (or assigned) to.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub node_name: String,
    /// Required node labels.
    #[serde(skip_serializing_if = "Labels::is_empty")]
    pub node_selector: Labels,
    /// Affinity.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub affinity: Option<Affinity>,
    /// Tolerations.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<Toleration>,
    /// Spread constraints.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub topology_spread_constraints: Vec<TopologySpreadConstraint>,
    /// Gates.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub scheduling_gates: Vec<SchedulingGate>,
    /// Which profile schedules it; empty means `default-scheduler`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub scheduler_name: String,
    /// Priority (resolved from the priority class); `None` is 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,
    /// Preemption policy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preemption_policy: Option<PreemptionPolicy>,
    /// DRA claims.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub resource_claims: Vec<PodResourceClaim>,
    /// The v1.36 pod group this pod belongs to (`spec.schedulingGroup`, gate
    /// `GenericWorkload`; immutable upstream). Upstream `core/v1` `PodSchedulingGroup`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scheduling_group: Option<PodSchedulingGroup>,
}

/// `spec.schedulingGroup` (core/v1 v1.36): a union whose only member names a
/// `scheduling.k8s.io/v1alpha2` `PodGroup` in the pod's namespace.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodSchedulingGroup {
    /// The `PodGroup` object's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_group_name: Option<String>,
}

/// Pod status fields the scheduler reads and writes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodStatus {
    /// Phase (`Pending`, `Running`, `Succeeded`, `Failed`).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub phase: String,
    /// Node nominated by preemption.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub nominated_node_name: String,
    /// Seconds since the Unix epoch when the kubelet started it (RFC 3339 text or a
    /// number when read).
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "super::timestamp::deserialize_opt")]
    pub start_time: Option<f64>,
}

/// A pod, in the shape of `v1.Pod`.
///
/// ```
/// use schedkit::model::Pod;
/// let pod: Pod = serde_json::from_str(r#"{
///   "metadata": {"name": "p", "namespace": "ml"},
///   "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "2", "nvidia.com/gpu": 1}}}]}
/// }"#).unwrap();
/// let req = pod.requests();
/// assert_eq!(req.milli_cpu, 2000);
/// assert_eq!(req.scalar_str("nvidia.com/gpu"), 1);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Pod {
    /// Metadata.
    pub metadata: ObjectMeta,
    /// Spec.
    pub spec: PodSpec,
    /// Status.
    pub status: PodStatus,
}

/// A pod that fails validation, with the field path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PodError {
    /// A selector inside the pod is invalid.
    #[error("pod {pod}: {source}")]
    Selector {
        /// namespace/name.
        pod: String,
        /// The selector error (it names the field path).
        #[source]
        source: SelectorError,
    },
    /// A numeric field is out of its range.
    #[error("pod {pod}: {field} must be {expected}, got {got}")]
    OutOfRange {
        /// namespace/name.
        pod: String,
        /// Field path.
        field: String,
        /// The allowed range.
        expected: &'static str,
        /// The value given.
        got: i64,
    },
    /// The pod has no name.
    #[error("pod has no name")]
    MissingName,
    /// A field the API server would refuse (upstream `ValidateLabels`' lengths: a label
    /// value or key name over 63 characters, a key prefix over 253).
    #[error("pod {pod}: {error}")]
    InvalidField {
        /// namespace/name.
        pod: String,
        /// The field path and what is wrong, as upstream words it.
        error: crate::model::FieldError,
    },
}

/// Something a pod carries that loads (the API server accepts it) but that upstream's
/// scheduler cannot parse, so it changes how the pod schedules: [`Pod::warnings`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("pod {pod}: {path}: {message}")]
pub struct PodWarning {
    /// namespace/name.
    pub pod: String,
    /// Field path of the requirement.
    pub path: String,
    /// What is wrong and what it does.
    pub message: String,
}

/// A pod's namespace from its metadata (`default` when empty).
fn namespace_of(meta: &ObjectMeta) -> &str {
    if meta.namespace.is_empty() { "default" } else { &meta.namespace }
}

/// A pod's `namespace/name` from its metadata.
fn key_of(meta: &ObjectMeta) -> String {
    format!("{}/{}", namespace_of(meta), meta.name)
}

impl Pod {
    /// The pod's name.
    pub fn name(&self) -> &str {
        &self.metadata.name
    }

    /// The namespace (`default` when empty).
    pub fn namespace(&self) -> &str {
        namespace_of(&self.metadata)
    }

    /// `namespace/name`, the key used when there is no uid.
    pub fn key(&self) -> String {
        key_of(&self.metadata)
    }

    /// Uid, or `namespace/name` when it has none: the identity the cache uses.
    pub fn uid(&self) -> String {
        if self.metadata.uid.is_empty() { self.key() } else { self.metadata.uid.clone() }
    }

    /// Priority, 0 when unset.
    pub fn priority(&self) -> i32 {
        self.spec.priority.unwrap_or(0)
    }

    /// The gang this pod belongs to (label [`POD_GROUP_LABEL`]), as a counted
    /// reference on the label's value: gang names that never repeat are freed with the
    /// last pod and handle that hold them, not pinned for the life of the process.
    ///
    /// ```
    /// use schedkit::model::POD_GROUP_LABEL;
    /// use schedkit::testing::PodBuilder;
    /// let pod = PodBuilder::new("p").label(POD_GROUP_LABEL, "train-7").build();
    /// assert_eq!(pod.pod_group().unwrap().as_str(), "train-7");
    /// assert!(PodBuilder::new("q").build().pod_group().is_none());
    /// ```
    pub fn pod_group(&self) -> Option<super::HeldSymbol> {
        let key = Symbol::lookup(POD_GROUP_LABEL)?;
        super::HeldSymbol::hold(self.metadata.labels.get(key)?)
    }

    /// The v1.36 `PodGroup` this pod names in `spec.schedulingGroup.podGroupName`
    /// (distinct from [`Pod::pod_group`], scheduler-plugins' label).
    pub fn scheduling_group_name(&self) -> Option<&str> {
        self.spec.scheduling_group.as_ref()?.pod_group_name.as_deref()
    }

    /// Host ports the pod occupies while it runs, as upstream `util.GetHostPorts`
    /// (`pkg/scheduler/util/utils.go`): those of restartable (sidecar) init containers,
    /// then of app containers. A regular init container's ports are not counted: it
    /// has exited before the app containers start.
    pub fn host_ports(&self) -> impl Iterator<Item = &ContainerPort> {
        let sidecars = self.spec.init_containers.iter().filter(|c| c.is_restartable_init_container());
        sidecars.chain(&self.spec.containers).flat_map(|c| &c.ports).filter(|p| p.host_port > 0)
    }

    /// Images of all containers.
    pub fn images(&self) -> impl Iterator<Item = &str> {
        self.spec.init_containers.iter().chain(&self.spec.containers).map(|c| c.image.as_str())
    }

    /// The node affinity, if any.
    pub fn node_affinity(&self) -> Option<&NodeAffinity> {
        self.spec.affinity.as_ref()?.node_affinity.as_ref()
    }

    /// What loads but upstream's scheduler cannot parse, and what it does: a required
    /// node affinity term with an unparsable requirement (a value that is not a label
    /// value, `Gt`/`Lt` with a non-integer) matches no node, the other terms still
    /// match (upstream's lazy-error node selector); an unparsable preferred term makes
    /// NodeAffinity's PreScore fail with an error, as upstream's
    /// `NewPreferredSchedulingTerms` does. Empty for almost every pod; read it after
    /// loading ([`PodInfo::new`](crate::snapshot::PodInfo::new) does not fail on these).
    ///
    /// ```
    /// use schedkit::model::Pod;
    /// let pod: Pod = serde_json::from_str(r#"{"metadata":{"name":"p"},"spec":{"affinity":{"nodeAffinity":{
    ///   "requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[
    ///     {"matchExpressions":[{"key":"zone","operator":"NotIn","values":["not valid!"]}]}]}}}}}"#).unwrap();
    /// let w = pod.warnings();
    /// assert_eq!(w.len(), 1);
    /// assert!(w[0].to_string().starts_with(
    ///     "pod default/p: spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0]: values[0]"));
    /// ```
    pub fn warnings(&self) -> Vec<PodWarning> {
        let Some(na) = self.node_affinity() else { return Vec::new() };
        let key = self.key();
        let mut out = Vec::new();
        if let Some(req) = &na.required {
            let base = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution";
            for (path, why) in req.parse_errors(base) {
                out.push(PodWarning { pod: key.clone(), path, message: format!("{why}; this term matches no node") });
            }
        }
        for (i, p) in na.preferred.iter().enumerate() {
            let base =
                format!("spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[{i}].preference");
            for (path, why) in p.preference.parse_errors(&base) {
                out.push(PodWarning {
                    pod: key.clone(),
                    path,
                    message: format!("{why}; NodeAffinity's PreScore fails for this pod"),
                });
            }
        }
        out
    }

    /// Checks every field a plugin would otherwise trip over at scheduling time, and
    /// prepares node selector terms built in code. Called by `PodInfo::new`.
    pub fn validate(&mut self) -> Result<(), PodError> {
        if self.metadata.name.is_empty() {
            return Err(PodError::MissingName);
        }
        // The key only for an error (the spec is borrowed mutably below, so from the
        // metadata alone): every pod queued is validated, and most are valid.
        let meta = &self.metadata;
        let key = || key_of(meta);
        crate::model::validation::validate_metadata_label_lengths(&meta.labels)
            .map_err(|error| PodError::InvalidField { pod: key(), error })?;
        let sel = |source| PodError::Selector { pod: key(), source };
        let range = |field: String, expected, got: i64| PodError::OutOfRange { pod: key(), field, expected, got };
        if let Some(aff) = &mut self.spec.affinity {
            if let Some(na) = &mut aff.node_affinity {
                if let Some(req) = &mut na.required {
                    for (i, t) in req.node_selector_terms.iter_mut().enumerate() {
                        t.validate_lazily(&|| {
                            format!(
                                "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[{i}]"
                            )
                        })
                        .map_err(sel)?;
                    }
                }
                for (i, p) in na.preferred.iter_mut().enumerate() {
                    let path =
                        || format!("spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[{i}]");
                    if !(1..=100).contains(&p.weight) {
                        return Err(range(format!("{}.weight", path()), "in 1..=100", i64::from(p.weight)));
                    }
                    p.preference.validate_lazily(&|| format!("{}.preference", path())).map_err(sel)?;
                }
            }
            for (kind, pa) in [("podAffinity", &aff.pod_affinity), ("podAntiAffinity", &aff.pod_anti_affinity)] {
                let Some(pa) = pa else { continue };
                for (i, w) in pa.preferred.iter().enumerate() {
                    if !(1..=100).contains(&w.weight) {
                        return Err(range(
                            format!("spec.affinity.{kind}.preferredDuringSchedulingIgnoredDuringExecution[{i}].weight"),
                            "in 1..=100",
                            i64::from(w.weight),
                        ));
                    }
                }
            }
        }
        for (i, c) in self.spec.topology_spread_constraints.iter().enumerate() {
            if c.max_skew <= 0 {
                return Err(range(
                    format!("spec.topologySpreadConstraints[{i}].maxSkew"),
                    "greater than 0",
                    i64::from(c.max_skew),
                ));
            }
            if let Some(m) = c.min_domains
                && m <= 0
            {
                return Err(range(
                    format!("spec.topologySpreadConstraints[{i}].minDomains"),
                    "greater than 0",
                    i64::from(m),
                ));
            }
        }
        Ok(())
    }
}

/// Small-vector alias used for per-pod lists on hot paths.
pub type SymbolVec = SmallVec<[Symbol; 4]>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toleration_matching() {
        use TolerationOperator::*;
        let t = Taint::new("gpu", "true", TaintEffect::NoSchedule);
        let tol = |key: &str, op, value: &str, effect| Toleration {
            key: Symbol::intern(key),
            operator: op,
            value: Symbol::intern(value),
            effect,
            toleration_seconds: None,
        };
        assert!(tol("gpu", Equal, "true", Some(TaintEffect::NoSchedule)).tolerates(&t));
        assert!(tol("gpu", Equal, "true", None).tolerates(&t));
        assert!(!tol("gpu", Equal, "false", None).tolerates(&t));
        assert!(tol("gpu", Exists, "", None).tolerates(&t));
        assert!(tol("", Exists, "", None).tolerates(&t), "empty key with Exists tolerates all");
        assert!(!tol("", Exists, "", Some(TaintEffect::NoExecute)).tolerates(&t));
        assert!(!tol("other", Exists, "", None).tolerates(&t));
    }

    #[test]
    fn validation_names_the_field() {
        let json = r#"{"metadata":{"name":"p"},"spec":{"topologySpreadConstraints":[
            {"maxSkew":0,"topologyKey":"zone","whenUnsatisfiable":"DoNotSchedule"}]}}"#;
        let mut pod: Pod = serde_json::from_str(json).unwrap();
        let err = pod.validate().unwrap_err();
        assert_eq!(
            err.to_string(),
            "pod default/p: spec.topologySpreadConstraints[0].maxSkew must be greater than 0, got 0"
        );
        let json = r#"{"metadata":{"name":"p"},"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":
            {"nodeSelectorTerms":[{"matchExpressions":[{"key":"a","operator":"Gt","values":["1","2"]}]}]}}}}}"#;
        assert!(serde_json::from_str::<Pod>(json).is_err(), "Gt with two values fails at load");
        // Gt with a non-integer passes API validation: it loads with a warning.
        let json = r#"{"metadata":{"name":"p"},"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":
            {"nodeSelectorTerms":[{"matchExpressions":[{"key":"a","operator":"Gt","values":["x"]}]}]}}}}}"#;
        let mut pod: Pod = serde_json::from_str(json).unwrap();
        pod.validate().unwrap();
        assert_eq!(pod.warnings().len(), 1);
        // The paths of preferred terms, written only for an error.
        let preferred = "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution";
        let pod = |weight: i32, operator: &str| {
            let json = format!(
                r#"{{"metadata":{{"name":"p"}},"spec":{{"affinity":{{"nodeAffinity":{{"preferredDuringSchedulingIgnoredDuringExecution":[
                    {{"weight":1,"preference":{{"matchExpressions":[{{"key":"a","operator":"Exists"}}]}}}},
                    {{"weight":{weight},"preference":{{"matchExpressions":[{{"key":"a","operator":"{operator}"}}]}}}}]}}}}}}}}"#
            );
            serde_json::from_str::<Pod>(&json)
        };
        let err = pod(0, "Exists").unwrap().validate().unwrap_err().to_string();
        assert!(err.contains(&format!("{preferred}[1].weight must be in 1..=100, got 0")), "{err}");
        let mut valid = pod(1, "Exists").unwrap();
        valid.validate().unwrap();
        // An `In` without values is refused when the pod is loaded, naming the term.
        let err = pod(1, "In").unwrap_err().to_string();
        assert!(err.contains("matchExpressions[0]"), "{err}");
    }
}
