//! The `topology.node.k8s.io/v1alpha2` NodeResourceTopology object (noderesourcetopology-api
//! v0.1.2, `pkg/apis/topology/v1alpha2/types.go`) with exact serde, and the kubelet
//! Topology Manager configuration read from it (scheduler-plugins
//! `pkg/noderesourcetopology/nodeconfig/topologymanager.go`).

use serde::{Deserialize, Serialize};

use crate::model::Quantity;

/// The API group and version of the object.
pub const API_VERSION: &str = "topology.node.k8s.io/v1alpha2";
/// The object's kind.
pub const KIND: &str = "NodeResourceTopology";
/// The zone type of a NUMA node (upstream `helper.ZoneTypeNUMANode`).
pub const ZONE_TYPE_NUMA_NODE: &str = "Node";
/// Attribute naming the Topology Manager scope.
pub const ATTRIBUTE_SCOPE: &str = "topologyManagerScope";
/// Attribute naming the Topology Manager policy.
pub const ATTRIBUTE_POLICY: &str = "topologyManagerPolicy";
/// Attribute naming the Topology Manager's NUMA node limit.
pub const ATTRIBUTE_MAX_NUMA_NODES: &str = "topologyManagerMaxNUMANodes";
/// The kubelet's default NUMA node limit (upstream `DefaultMaxNUMANodes`).
pub const DEFAULT_MAX_NUMA_NODES: usize = 8;
/// The cap on `topologyManagerMaxNUMANodes` (upstream `LimitNUMANodes`).
pub const LIMIT_NUMA_NODES: usize = 1024;

/// Why a NodeResourceTopology manifest was rejected.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NrtError {
    /// The text is not a valid object of this shape.
    #[error("NodeResourceTopology: invalid manifest: {0}")]
    Json(#[from] serde_json::Error),
    /// `apiVersion` or `kind` name another type.
    #[error("NodeResourceTopology {name:?}: field {field} is {found:?}, expected {expected:?}")]
    WrongType {
        /// `metadata.name`.
        name: String,
        /// `apiVersion` or `kind`.
        field: &'static str,
        /// What the manifest says.
        found: String,
        /// What it must say.
        expected: &'static str,
    },
    /// `metadata.name` is empty: it must be the node's name.
    #[error("NodeResourceTopology: field metadata.name is empty (it must name the node)")]
    MissingName,
    /// A zone resource has a negative quantity.
    #[error("NodeResourceTopology {name:?}: field zones[{zone}].resources[{resource}].{field} is negative ({value})")]
    NegativeQuantity {
        /// `metadata.name`.
        name: String,
        /// Index of the zone.
        zone: usize,
        /// Index of the resource in the zone.
        resource: usize,
        /// `capacity`, `allocatable` or `available`.
        field: &'static str,
        /// The value.
        value: String,
    },
}

/// `metadata`: the name (equal to the node's) and annotations; every other field is
/// kept as it came so a manifest round-trips.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct NrtMeta {
    /// The node's name.
    #[serde(default)]
    pub name: String,
    /// Annotations (the legacy pod fingerprint lives here).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub annotations: std::collections::BTreeMap<String, String>,
    /// Every other metadata field, untouched.
    #[serde(flatten)]
    pub other: serde_json::Map<String, serde_json::Value>,
}

/// A `{name, value}` attribute (upstream `AttributeInfo`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttributeInfo {
    /// Name.
    pub name: String,
    /// Value.
    pub value: String,
}

/// A `{name, value}` distance to another zone (upstream `CostInfo`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CostInfo {
    /// The other zone, e.g. `node-1`.
    pub name: String,
    /// The distance (SLIT-like: 10 local, 20+ remote).
    pub value: i64,
}

/// One resource of a zone (upstream `ResourceInfo`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResourceInfo {
    /// Resource name, e.g. `cpu`, `nvidia.com/gpu`.
    pub name: String,
    /// Total in the zone.
    pub capacity: Quantity,
    /// What pods may use.
    pub allocatable: Quantity,
    /// What is free now: the only figure the plugin reads.
    pub available: Quantity,
}

/// A zone: a NUMA node (`type: Node`) or another level (upstream `Zone`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Zone {
    /// Name; NUMA nodes are `node-<id>`.
    pub name: String,
    /// Type; only `Node` zones count.
    #[serde(rename = "type")]
    pub zone_type: String,
    /// Parent zone, if any.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub parent: String,
    /// Distances to other zones.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub costs: Vec<CostInfo>,
    /// Zone attributes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attributes: Vec<AttributeInfo>,
    /// Resources of the zone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<ResourceInfo>,
}

/// The NodeResourceTopology object: one per node, named as the node.
///
/// ```
/// use schedkit::plugins::node_resource_topology::NodeResourceTopology;
/// let nrt = NodeResourceTopology::from_json(r#"{
///   "apiVersion": "topology.node.k8s.io/v1alpha2", "kind": "NodeResourceTopology",
///   "metadata": {"name": "n1"},
///   "attributes": [{"name": "topologyManagerPolicy", "value": "single-numa-node"}],
///   "zones": [{"name": "node-0", "type": "Node",
///              "resources": [{"name": "cpu", "capacity": "8", "allocatable": "8", "available": "6"}]}]
/// }"#)?;
/// assert_eq!(nrt.topology_manager().policy.as_str(), "single-numa-node");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeResourceTopology {
    /// `topology.node.k8s.io/v1alpha2`.
    #[serde(default = "default_api_version")]
    pub api_version: String,
    /// `NodeResourceTopology`.
    #[serde(default = "default_kind")]
    pub kind: String,
    /// Name and annotations.
    #[serde(default)]
    pub metadata: NrtMeta,
    /// Deprecated: only element 0 is read; attributes override it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub topology_policies: Vec<String>,
    /// Zones.
    #[serde(default)]
    pub zones: Vec<Zone>,
    /// Node-level attributes (`topologyManagerPolicy`, `topologyManagerScope`, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attributes: Vec<AttributeInfo>,
}

fn default_api_version() -> String {
    API_VERSION.to_owned()
}
fn default_kind() -> String {
    KIND.to_owned()
}

impl NodeResourceTopology {
    /// An empty object for `node` with the right type fields.
    pub fn new(node: &str) -> Self {
        NodeResourceTopology {
            api_version: default_api_version(),
            kind: default_kind(),
            metadata: NrtMeta { name: node.to_owned(), ..NrtMeta::default() },
            topology_policies: Vec::new(),
            zones: Vec::new(),
            attributes: Vec::new(),
        }
    }

    /// The node's name.
    pub fn name(&self) -> &str {
        &self.metadata.name
    }

    /// Parses and validates a JSON manifest.
    pub fn from_json(text: &str) -> Result<Self, NrtError> {
        let nrt: NodeResourceTopology = serde_json::from_str(text)?;
        nrt.validate()?;
        Ok(nrt)
    }

    /// Checks the type fields, the name and that no quantity is negative.
    pub fn validate(&self) -> Result<(), NrtError> {
        let name = &self.metadata.name;
        if self.api_version != API_VERSION {
            return Err(NrtError::WrongType {
                name: name.clone(),
                field: "apiVersion",
                found: self.api_version.clone(),
                expected: API_VERSION,
            });
        }
        if self.kind != KIND {
            return Err(NrtError::WrongType {
                name: name.clone(),
                field: "kind",
                found: self.kind.clone(),
                expected: KIND,
            });
        }
        if name.is_empty() {
            return Err(NrtError::MissingName);
        }
        for (zi, z) in self.zones.iter().enumerate() {
            for (ri, r) in z.resources.iter().enumerate() {
                for (field, q) in [("capacity", r.capacity), ("allocatable", r.allocatable), ("available", r.available)]
                {
                    if q.sign() < 0 {
                        return Err(NrtError::NegativeQuantity {
                            name: name.clone(),
                            zone: zi,
                            resource: ri,
                            field,
                            value: q.to_string(),
                        });
                    }
                }
            }
        }
        Ok(())
    }

    /// The Topology Manager configuration the object describes (upstream
    /// `TopologyManagerFromNodeResourceTopology`): defaults, then `topologyPolicies[0]`,
    /// then the attributes, which win.
    pub fn topology_manager(&self) -> TopologyManager {
        let mut tm = TopologyManager::default();
        if let Some(p) = self.topology_policies.first() {
            tm.apply_legacy_policy(p);
        }
        tm.apply_attributes(&self.attributes);
        tm
    }

    /// An attribute's value by name.
    pub fn attribute(&self, name: &str) -> Option<&str> {
        self.attributes.iter().find(|a| a.name == name).map(|a| a.value.as_str())
    }
}

/// The kubelet Topology Manager policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TmPolicy {
    /// `none` (the default).
    #[default]
    None,
    /// `best-effort`.
    BestEffort,
    /// `restricted`.
    Restricted,
    /// `single-numa-node`: the only policy the plugin filters on.
    SingleNumaNode,
}

impl TmPolicy {
    /// The kubelet spelling.
    pub const fn as_str(self) -> &'static str {
        match self {
            TmPolicy::None => "none",
            TmPolicy::BestEffort => "best-effort",
            TmPolicy::Restricted => "restricted",
            TmPolicy::SingleNumaNode => "single-numa-node",
        }
    }
    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "none" => TmPolicy::None,
            "best-effort" => TmPolicy::BestEffort,
            "restricted" => TmPolicy::Restricted,
            "single-numa-node" => TmPolicy::SingleNumaNode,
            _ => return None,
        })
    }
}

/// The kubelet Topology Manager scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TmScope {
    /// `container` (the default): each container is aligned on its own.
    #[default]
    Container,
    /// `pod`: the whole pod is aligned on one NUMA node.
    Pod,
}

impl TmScope {
    /// The kubelet spelling.
    pub const fn as_str(self) -> &'static str {
        match self {
            TmScope::Container => "container",
            TmScope::Pod => "pod",
        }
    }
}

/// A node's Topology Manager configuration (upstream `nodeconfig.TopologyManager`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TopologyManager {
    /// Scope.
    pub scope: TmScope,
    /// Policy.
    pub policy: TmPolicy,
    /// The NUMA node limit, 2..=1024 (default 8); LeastNUMANodes scores by it.
    pub max_numa_nodes: usize,
}

impl Default for TopologyManager {
    fn default() -> Self {
        TopologyManager { scope: TmScope::Container, policy: TmPolicy::None, max_numa_nodes: DEFAULT_MAX_NUMA_NODES }
    }
}

impl TopologyManager {
    /// Applies a legacy `topologyPolicies` value (`SingleNUMANodePodLevel`, ...); values
    /// without a level suffix (`None`, `Restricted`, ...) change nothing, as upstream.
    fn apply_legacy_policy(&mut self, p: &str) {
        let (policy, scope) = match p {
            "SingleNUMANodePodLevel" => (TmPolicy::SingleNumaNode, TmScope::Pod),
            "SingleNUMANodeContainerLevel" => (TmPolicy::SingleNumaNode, TmScope::Container),
            "BestEffortPodLevel" => (TmPolicy::BestEffort, TmScope::Pod),
            "BestEffortContainerLevel" => (TmPolicy::BestEffort, TmScope::Container),
            "RestrictedPodLevel" => (TmPolicy::Restricted, TmScope::Pod),
            "RestrictedContainerLevel" => (TmPolicy::Restricted, TmScope::Container),
            _ => return,
        };
        self.policy = policy;
        self.scope = scope;
    }

    /// Applies the attributes in order; invalid values are ignored.
    fn apply_attributes(&mut self, attrs: &[AttributeInfo]) {
        for a in attrs {
            match a.name.as_str() {
                ATTRIBUTE_SCOPE => match a.value.as_str() {
                    "container" => self.scope = TmScope::Container,
                    "pod" => self.scope = TmScope::Pod,
                    _ => {}
                },
                ATTRIBUTE_POLICY => {
                    if let Some(p) = TmPolicy::parse(&a.value) {
                        self.policy = p;
                    }
                }
                ATTRIBUTE_MAX_NUMA_NODES => {
                    // Go's strconv.Atoi: optional sign, decimal digits.
                    if let Ok(v) = a.value.parse::<i64>()
                        && v > 1
                    {
                        self.max_numa_nodes =
                            usize::try_from(v.min(LIMIT_NUMA_NODES as i64)).unwrap_or(LIMIT_NUMA_NODES);
                    }
                }
                _ => {}
            }
        }
    }
}

impl std::fmt::Display for TopologyManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "policy={} scope={} maxNUMANodes={}", self.policy.as_str(), self.scope.as_str(), self.max_numa_nodes)
    }
}

/// The NUMA id in a zone or cost name: exactly `node-<int>` (upstream
/// `numanode.NameToID`); `Node-1`, `node_1` and `node-5-1` are rejected.
pub fn numa_id_from_name(name: &str) -> Option<i64> {
    let mut parts = name.split('-');
    let (Some("node"), Some(id), None) = (parts.next(), parts.next(), parts.next()) else { return None };
    id.parse::<i64>().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nrt(policies: &[&str], attrs: &[(&str, &str)]) -> NodeResourceTopology {
        let mut n = NodeResourceTopology::new("node");
        n.topology_policies = policies.iter().map(|s| (*s).to_owned()).collect();
        n.attributes = attrs.iter().map(|(k, v)| AttributeInfo { name: (*k).into(), value: (*v).into() }).collect();
        n
    }

    fn tm(policy: TmPolicy, scope: TmScope, max: usize) -> TopologyManager {
        TopologyManager { scope, policy, max_numa_nodes: max }
    }

    /// scheduler-plugins `nodeconfig/topologymanager_test.go`: the cases of
    /// `TestConfigFromAttributes`, `TestConfigFromPolicies` and `TestConfigFromNRT`,
    /// applied on the defaults.
    #[test]
    fn topology_manager_from_nrt() {
        use TmPolicy as P;
        use TmScope as S;
        let cases: &[(&str, NodeResourceTopology, TopologyManager)] = &[
            ("empty", nrt(&[], &[]), TopologyManager::default()),
            ("policies single pod", nrt(&["SingleNUMANodePodLevel"], &[]), tm(P::SingleNumaNode, S::Pod, 8)),
            (
                "policies single container",
                nrt(&["SingleNUMANodeContainerLevel"], &[]),
                tm(P::SingleNumaNode, S::Container, 8),
            ),
            ("policies restricted pod", nrt(&["RestrictedPodLevel"], &[]), tm(P::Restricted, S::Pod, 8)),
            (
                "policies best-effort container",
                nrt(&["BestEffortContainerLevel"], &[]),
                tm(P::BestEffort, S::Container, 8),
            ),
            ("policies without level", nrt(&["Restricted"], &[]), TopologyManager::default()),
            ("policies only first read", nrt(&["None", "SingleNUMANodePodLevel"], &[]), TopologyManager::default()),
            ("attr policy", nrt(&[], &[(ATTRIBUTE_POLICY, "restricted")]), tm(P::Restricted, S::Container, 8)),
            ("attr scope", nrt(&[], &[(ATTRIBUTE_SCOPE, "pod")]), tm(P::None, S::Pod, 8)),
            ("attr invalid policy", nrt(&[], &[(ATTRIBUTE_POLICY, "single-numa")]), TopologyManager::default()),
            ("attr invalid scope", nrt(&[], &[(ATTRIBUTE_SCOPE, "node")]), TopologyManager::default()),
            (
                "attrs override policies",
                nrt(&["SingleNUMANodePodLevel"], &[(ATTRIBUTE_POLICY, "best-effort"), (ATTRIBUTE_SCOPE, "container")]),
                tm(P::BestEffort, S::Container, 8),
            ),
            (
                "partial attrs keep policies",
                nrt(&["SingleNUMANodePodLevel"], &[(ATTRIBUTE_SCOPE, "container")]),
                tm(P::SingleNumaNode, S::Container, 8),
            ),
            ("max numa", nrt(&[], &[(ATTRIBUTE_MAX_NUMA_NODES, "16")]), tm(P::None, S::Container, 16)),
            ("max numa 1 invalid", nrt(&[], &[(ATTRIBUTE_MAX_NUMA_NODES, "1")]), TopologyManager::default()),
            ("max numa negative", nrt(&[], &[(ATTRIBUTE_MAX_NUMA_NODES, "-2")]), TopologyManager::default()),
            ("max numa text", nrt(&[], &[(ATTRIBUTE_MAX_NUMA_NODES, "A")]), TopologyManager::default()),
            ("max numa capped", nrt(&[], &[(ATTRIBUTE_MAX_NUMA_NODES, "65535")]), tm(P::None, S::Container, 1024)),
            ("max numa zero", nrt(&[], &[(ATTRIBUTE_MAX_NUMA_NODES, "0")]), TopologyManager::default()),
            (
                "error-case-1: scope is case sensitive",
                nrt(&[], &[(ATTRIBUTE_SCOPE, "Pod"), (ATTRIBUTE_POLICY, "single-numa-node")]),
                tm(P::SingleNumaNode, S::Container, 8),
            ),
        ];
        for (name, n, want) in cases {
            assert_eq!(n.topology_manager(), *want, "{name}");
        }
    }

    /// noderesourcetopology-api `numanode.NameToID` cases as the seed notes list them.
    #[test]
    fn numa_names() {
        assert_eq!(numa_id_from_name("node-0"), Some(0));
        assert_eq!(numa_id_from_name("node-12"), Some(12));
        for bad in ["Node-1", "node_1", "node-5-1", "node-", "node-x", "numa-1", ""] {
            assert_eq!(numa_id_from_name(bad), None, "{bad}");
        }
    }

    #[test]
    fn validation_names_the_field() {
        let mut n = NodeResourceTopology::new("n1");
        n.kind = "Node".into();
        assert!(n.validate().unwrap_err().to_string().contains("field kind"));
        let mut n = NodeResourceTopology::new("");
        assert!(matches!(n.validate(), Err(NrtError::MissingName)));
        n.metadata.name = "n1".into();
        n.zones.push(Zone {
            name: "node-0".into(),
            zone_type: "Node".into(),
            parent: String::new(),
            costs: vec![],
            attributes: vec![],
            resources: vec![ResourceInfo {
                name: "cpu".into(),
                capacity: Quantity::from_int(4),
                allocatable: Quantity::from_int(4),
                available: Quantity::from_int(-1),
            }],
        });
        let e = n.validate().unwrap_err().to_string();
        assert!(e.contains("zones[0].resources[0].available"), "{e}");
    }
}
