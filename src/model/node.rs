//! Nodes: labels, taints, allocatable resources, images, schedulability.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::{Labels, ResourceList, Symbol};

/// Object metadata shared by pods and nodes (the fields the scheduler reads).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ObjectMeta {
    /// Object name.
    pub name: String,
    /// Namespace (pods only; empty means `default`).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Unique id; a pod without one is identified by namespace/name.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// Labels.
    #[serde(skip_serializing_if = "Labels::is_empty")]
    pub labels: Labels,
    /// Annotations: not read by the built-in plugins, kept for those that are steered
    /// by them (HAMi-style device plugins, extenders) and for round trips.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub annotations: std::collections::BTreeMap<String, String>,
    /// Seconds since the Unix epoch at creation; read from the API server's RFC 3339
    /// text (`2024-12-09T16:17:09Z`) or a number, written as a number.
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "super::timestamp::deserialize_opt")]
    pub creation_timestamp: Option<f64>,
    /// Seconds since the Unix epoch when deletion was requested (a terminating object);
    /// RFC 3339 text or a number, as `creation_timestamp`.
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "super::timestamp::deserialize_opt")]
    pub deletion_timestamp: Option<f64>,
}

/// Taint effects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TaintEffect {
    /// New pods that don't tolerate it are not scheduled.
    NoSchedule,
    /// The scheduler avoids the node for pods that don't tolerate it.
    PreferNoSchedule,
    /// Like NoSchedule, and running pods that don't tolerate it are evicted.
    NoExecute,
}

impl TaintEffect {
    /// The Kubernetes spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            TaintEffect::NoSchedule => "NoSchedule",
            TaintEffect::PreferNoSchedule => "PreferNoSchedule",
            TaintEffect::NoExecute => "NoExecute",
        }
    }
}

/// A node taint.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Taint {
    /// Key.
    pub key: Symbol,
    /// Value (may be empty).
    #[serde(default)]
    pub value: Symbol,
    /// Effect.
    pub effect: TaintEffect,
}

impl Taint {
    /// A taint.
    pub fn new(key: &str, value: &str, effect: TaintEffect) -> Taint {
        Taint { key: Symbol::intern(key), value: Symbol::intern(value), effect }
    }
}

impl std::fmt::Display for Taint {
    /// Upstream's `Taint.ToString`: `key=value:effect`, `key:effect` when the value is empty.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.value.is_empty() {
            write!(f, "{}:{}", self.key, self.effect.as_str())
        } else {
            write!(f, "{}={}:{}", self.key, self.value, self.effect.as_str())
        }
    }
}

/// A container image present on a node.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerImage {
    /// Names (tags and digests) of the image.
    #[serde(default)]
    pub names: Vec<String>,
    /// Size in bytes.
    #[serde(default)]
    pub size_bytes: i64,
}

/// Node spec.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NodeSpec {
    /// Cordoned: new pods are not scheduled here.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub unschedulable: bool,
    /// Taints.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub taints: Vec<Taint>,
}

/// Node status.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NodeStatus {
    /// Total resources.
    #[serde(skip_serializing_if = "ResourceList::is_empty")]
    pub capacity: ResourceList,
    /// What pods may use.
    #[serde(skip_serializing_if = "ResourceList::is_empty")]
    pub allocatable: ResourceList,
    /// Images present.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<ContainerImage>,
}

/// A node, in the shape of `v1.Node`.
///
/// ```
/// use schedkit::model::Node;
/// let node: Node = serde_json::from_str(r#"{
///   "metadata": {"name": "n1", "labels": {"topology.kubernetes.io/zone": "a"}},
///   "spec": {"taints": [{"key": "gpu", "effect": "NoSchedule"}]},
///   "status": {"allocatable": {"cpu": "32", "memory": "128Gi", "pods": "110"}}
/// }"#).unwrap();
/// assert_eq!(node.name(), "n1");
/// assert_eq!(node.status.allocatable.to_resources().milli_cpu, 32_000);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Node {
    /// Metadata.
    pub metadata: ObjectMeta,
    /// Spec.
    pub spec: NodeSpec,
    /// Status.
    pub status: NodeStatus,
}

impl Node {
    /// The node's name.
    pub fn name(&self) -> &str {
        &self.metadata.name
    }

    /// Wraps in an `Arc`, the form the cache stores.
    pub fn into_arc(self) -> Arc<Node> {
        Arc::new(self)
    }
}
