//! The cluster objects a scheduler reads besides pods and nodes: `PriorityClass`
//! (`scheduling.k8s.io/v1`) and `Namespace` (`v1`), in the API's shape.

use serde::{Deserialize, Serialize};

use super::{ObjectMeta, PreemptionPolicy};

/// A `scheduling.k8s.io/v1` PriorityClass: the priority admission resolves a pod's
/// `priorityClassName` into `spec.priority` and `spec.preemptionPolicy` with it.
///
/// ```
/// use schedkit::model::{PreemptionPolicy, PriorityClass};
/// let pc: PriorityClass = serde_json::from_str(r#"{
///   "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
///   "metadata": {"name": "high", "creationTimestamp": "2024-12-09T16:17:09Z"},
///   "value": 1000000, "globalDefault": false, "description": "for critical jobs"
/// }"#).unwrap();
/// assert_eq!(pc.value, 1_000_000);
/// assert_eq!(pc.preemption_policy(), PreemptionPolicy::PreemptLowerPriority);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PriorityClass {
    /// Name (what pods put in `priorityClassName`).
    pub metadata: ObjectMeta,
    /// The priority pods of this class get.
    pub value: i32,
    /// Whether pods without a class get this one (at most one class should say so).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub global_default: bool,
    /// Preemption policy for pods of this class (API default `PreemptLowerPriority`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preemption_policy: Option<PreemptionPolicy>,
    /// Free text.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub description: String,
}

impl PriorityClass {
    /// The preemption policy, `PreemptLowerPriority` when unset (the API default).
    pub fn preemption_policy(&self) -> PreemptionPolicy {
        self.preemption_policy.unwrap_or_default()
    }
}

/// A `v1` Namespace: its labels feed namespace selectors of pod (anti-)affinity terms.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Namespace {
    /// Name and labels.
    pub metadata: ObjectMeta,
    /// Status.
    #[serde(skip_serializing_if = "NamespaceStatus::is_empty")]
    pub status: NamespaceStatus,
}

/// Namespace status.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NamespaceStatus {
    /// `Active` or `Terminating` (API default `Active`).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub phase: String,
}

impl NamespaceStatus {
    fn is_empty(&self) -> bool {
        self.phase.is_empty()
    }
}
