//! The `networktopology.diktyo.x-k8s.io/v1alpha1` NetworkTopology object in its exact
//! serialized shape, and its validation.
//!
//! Types follow diktyo-io/networktopology-api v1.0.1-alpha
//! (`pkg/apis/networktopology/v1alpha1/types.go`, pinned by scheduler-plugins v0.34.7) and
//! the CRD in scheduler-plugins `manifests/networktopology/crd.yaml` (required fields,
//! `networkCost >= 0`, `nodeCount >= 0`).

use serde::{Deserialize, Serialize};

use super::{NetworkAwareError, object_id};
use crate::dra::ObjectMeta;
use crate::model::Quantity;

/// The API version NetworkTopologies serialize as.
pub const NETWORK_TOPOLOGY_API_VERSION: &str = "networktopology.diktyo.x-k8s.io/v1alpha1";
/// Topology key of region costs (upstream `NetworkTopologyRegion`).
pub const TOPOLOGY_KEY_REGION: &str = "topology.kubernetes.io/region";
/// Topology key of zone costs (upstream `NetworkTopologyZone`).
pub const TOPOLOGY_KEY_ZONE: &str = "topology.kubernetes.io/zone";
/// The weights the network-topology controller measures (upstream
/// `NetworkTopologyNetperfCosts`): their lists are taken as already sorted.
pub const NETPERF_COSTS: &str = "NetperfCosts";

#[expect(clippy::trivially_copy_pass_by_ref, reason = "serde's skip_serializing_if passes a reference")]
fn is_zero_i64(v: &i64) -> bool {
    *v == 0
}

/// Network costs between regions and between zones, under one or more weight names.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NetworkTopology {
    /// `networktopology.diktyo.x-k8s.io/v1alpha1` (empty when built in code).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// `NetworkTopology` (empty when built in code).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Metadata; namespaced (an empty namespace means `default`).
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The costs.
    #[serde(default)]
    pub spec: NetworkTopologySpec,
    /// What the controller last measured.
    #[serde(default, skip_serializing_if = "NetworkTopologyStatus::is_empty")]
    pub status: NetworkTopologyStatus,
}

/// `NetworkTopologySpec`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NetworkTopologySpec {
    /// Cost tables by weight name (e.g. `UserDefined`, `NetperfCosts`).
    pub weights: Vec<WeightInfo>,
    /// ConfigMap the controller reads measurements from.
    pub configmap_name: String,
}

/// `NetworkTopologyStatus`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NetworkTopologyStatus {
    /// Nodes in the cluster when the weights were computed.
    #[serde(default, skip_serializing_if = "is_zero_i64")]
    pub node_count: i64,
    /// When the weights were computed (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight_calculation_time: Option<String>,
}

impl NetworkTopologyStatus {
    fn is_empty(&self) -> bool {
        *self == NetworkTopologyStatus::default()
    }
}

/// `WeightInfo`: one named cost table.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WeightInfo {
    /// The name plugins select with `weightsName`.
    pub name: String,
    /// Costs per topology key.
    pub topology_list: Vec<TopologyInfo>,
}

/// `TopologyInfo`: the costs between domains of one topology key.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TopologyInfo {
    /// [`TOPOLOGY_KEY_REGION`] or [`TOPOLOGY_KEY_ZONE`] (others are kept, never read).
    pub topology_key: String,
    /// Costs by origin domain.
    pub origin_list: Vec<OriginInfo>,
}

/// `OriginInfo`: costs from one domain.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OriginInfo {
    /// The origin domain (a region or zone label value).
    pub origin: String,
    /// Costs to other domains.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cost_list: Vec<CostInfo>,
}

/// `CostInfo`: the link from an origin to one destination.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CostInfo {
    /// The destination domain.
    pub destination: String,
    /// Link bandwidth (not read by the scheduler plugins).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bandwidth_capacity: Option<Quantity>,
    /// Bandwidth in use (not read by the scheduler plugins).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bandwidth_allocated: Option<Quantity>,
    /// The cost NetworkOverhead compares with `maxNetworkCost` and sums for Score.
    pub network_cost: i64,
}

impl NetworkTopology {
    /// Decodes a NetworkTopology from JSON, then [validates](NetworkTopology::validate)
    /// it. Errors name the object and the field.
    ///
    /// ```
    /// use schedkit::plugins::network_aware::NetworkTopology;
    /// let err = NetworkTopology::from_json(&serde_json::json!({
    ///     "metadata": {"name": "nt", "namespace": "default"},
    ///     "spec": {"configMapName": "x", "weights": []}
    /// })).unwrap_err();
    /// assert!(err.to_string().contains("NetworkTopology default/nt"), "{err}");
    /// assert!(err.to_string().contains("configMapName"), "{err}");
    /// ```
    pub fn from_json(value: &serde_json::Value) -> Result<NetworkTopology, NetworkAwareError> {
        let nt: NetworkTopology = serde_json::from_value(value.clone()).map_err(|e| NetworkAwareError::Decode {
            kind: "NetworkTopology",
            object: object_id(value),
            message: e.to_string(),
        })?;
        nt.validate()?;
        Ok(nt)
    }

    /// `namespace/name`, the namespace defaulted.
    pub fn id(&self) -> String {
        format!("{}/{}", self.namespace(), self.metadata.name)
    }

    /// The namespace (`default` when empty).
    pub fn namespace(&self) -> &str {
        if self.metadata.namespace.is_empty() { "default" } else { &self.metadata.namespace }
    }

    /// Checks what the CRD's schema checks (a name, `networkCost >= 0`,
    /// `nodeCount >= 0`) and the apiVersion and kind when given.
    pub fn validate(&self) -> Result<(), NetworkAwareError> {
        let bad = |field: String, reason: String| {
            Err(NetworkAwareError::Invalid { kind: "NetworkTopology", object: self.id(), field, reason })
        };
        if !self.api_version.is_empty() && self.api_version != NETWORK_TOPOLOGY_API_VERSION {
            return bad(
                "apiVersion".into(),
                format!("must be {NETWORK_TOPOLOGY_API_VERSION}, got {:?}", self.api_version),
            );
        }
        if !self.kind.is_empty() && self.kind != "NetworkTopology" {
            return bad("kind".into(), format!("must be NetworkTopology, got {:?}", self.kind));
        }
        if self.metadata.name.is_empty() {
            return bad("metadata.name".into(), "must not be empty".into());
        }
        for (w, weight) in self.spec.weights.iter().enumerate() {
            for (t, topo) in weight.topology_list.iter().enumerate() {
                for (o, origin) in topo.origin_list.iter().enumerate() {
                    for (c, cost) in origin.cost_list.iter().enumerate() {
                        if cost.network_cost < 0 {
                            return bad(
                                format!(
                                    "spec.weights[{w}].topologyList[{t}].originList[{o}].costList[{c}].networkCost"
                                ),
                                format!("must not be negative, got {}", cost.network_cost),
                            );
                        }
                    }
                }
            }
        }
        if self.status.node_count < 0 {
            return bad("status.nodeCount".into(), format!("must not be negative, got {}", self.status.node_count));
        }
        Ok(())
    }
}
