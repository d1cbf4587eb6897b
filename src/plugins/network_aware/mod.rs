//! Network-aware scheduling, as scheduler-plugins `pkg/networkaware` (release-1.34, tag
//! v0.34.7): the [`AppGroup`] and [`NetworkTopology`] objects, the
//! [`NetworkAwareStore`] that holds them, and two plugins.
//!
//! - [`TopologicalSort`] (QueueSort) orders the pods of one AppGroup by the
//!   AppGroup's `status.topologyOrder` and everything else as PrioritySort does.
//! - [`NetworkOverhead`] (PreFilter, Filter, Score) keeps a pod of an AppGroup away from
//!   nodes where more of its dependencies' `maxNetworkCost` would be violated than met,
//!   and favours the nodes with the lowest network cost to the pods it depends on.
//!
//! Pods join an AppGroup with two labels: [`APP_GROUP_LABEL`] (the AppGroup's name) and
//! [`APP_GROUP_SELECTOR_LABEL`] (the workload's `selector`). Nodes are placed by the
//! well-known `topology.kubernetes.io/region` and `topology.kubernetes.io/zone` labels.
//!
//! Upstream reads the objects through a Kubernetes client; here the caller keeps a
//! [`NetworkAwareStore`] up to date and shares it on the handle. Upstream's AppGroup
//! controller computes `status.topologyOrder`; [`AppGroup::with_topology_order`] does
//! the same here (with the sorting algorithms KahnSort, TarjanSort and their Reverse and
//! Alternate forms).
//!
//! ```
//! use std::sync::Arc;
//! use schedkit::framework::Handle;
//! use schedkit::plugins::{default_registry, names};
//! use schedkit::plugins::network_aware::NetworkAwareStore;
//!
//! let handle = Handle::default();
//! handle.set_shared(Arc::new(NetworkAwareStore::new()));
//! let registry = default_registry();
//! assert!(registry.contains(names::TOPOLOGICAL_SORT) && registry.contains(names::NETWORK_OVERHEAD));
//! ```

mod appgroup;
mod network_overhead;
mod network_topology;
mod store;
mod topological_sort;

use serde::Deserialize;
use thiserror::Error;

pub use appgroup::{
    APP_GROUP_API_VERSION, APP_GROUP_LABEL, APP_GROUP_SELECTOR_LABEL, AppGroup, AppGroupSpec, AppGroupStatus,
    AppGroupTopologyInfo, AppGroupWorkload, AppGroupWorkloadInfo, DependenciesInfo, MAX_NETWORK_COST_LIMIT,
    TopologySortingAlgorithm,
};
pub use network_overhead::{MAX_COST, NetworkOverhead, SAME_HOSTNAME_COST, SAME_ZONE_COST};
pub use network_topology::{
    CostInfo, NETPERF_COSTS, NETWORK_TOPOLOGY_API_VERSION, NetworkTopology, NetworkTopologySpec, NetworkTopologyStatus,
    OriginInfo, TOPOLOGY_KEY_REGION, TOPOLOGY_KEY_ZONE, TopologyInfo, WeightInfo,
};
pub use store::NetworkAwareStore;
pub use topological_sort::TopologicalSort;

/// What is wrong with an AppGroup, a NetworkTopology or a plugin's args.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum NetworkAwareError {
    /// The JSON is not an object of that kind (a missing required field, an unknown
    /// field, a wrong type); `message` names the field.
    #[error("{kind} {object}: cannot decode: {message}")]
    Decode {
        /// `AppGroup` or `NetworkTopology`.
        kind: &'static str,
        /// `namespace/name` as far as the JSON says.
        object: String,
        /// The decoder's message.
        message: String,
    },
    /// A field breaks a rule of the CRD's schema.
    #[error("{kind} {object}: {field}: {reason}")]
    Invalid {
        /// `AppGroup` or `NetworkTopology`.
        kind: &'static str,
        /// `namespace/name`.
        object: String,
        /// The field's path, e.g. `spec.workloads[1].dependencies[0].maxNetworkCost`.
        field: String,
        /// What is wrong.
        reason: String,
    },
    /// The AppGroup's dependencies are not a DAG, so they have no topological order.
    #[error("AppGroup {object}: spec.workloads: the dependencies form a cycle involving {}", involving.join(", "))]
    Cycle {
        /// `namespace/name`.
        object: String,
        /// The workloads (selectors) on or behind the cycle, as the algorithm reports them.
        involving: Vec<String>,
    },
    /// A plugin's args are malformed.
    #[error("{plugin} args: {message}")]
    Args {
        /// The plugin.
        plugin: &'static str,
        /// What is wrong.
        message: String,
    },
    /// The plugins read their objects from a [`NetworkAwareStore`] shared on the handle.
    #[error("{plugin} needs a NetworkAwareStore shared on the Handle (Handle::set_shared)")]
    NoStore {
        /// The plugin.
        plugin: &'static str,
    },
}

/// `namespace/name` of an object given as JSON, as far as it says.
fn object_id(value: &serde_json::Value) -> String {
    let meta = &value["metadata"];
    let ns = meta["namespace"].as_str().filter(|s| !s.is_empty()).unwrap_or("default");
    let name = meta["name"].as_str().unwrap_or("<unnamed>");
    format!("{ns}/{name}")
}

/// Decodes plugin args: `apiVersion` and `kind` are allowed and ignored, other unknown
/// fields are errors.
fn decode_args<T: serde::de::DeserializeOwned + Default>(
    plugin: &'static str,
    args: Option<&serde_json::Value>,
) -> Result<T, NetworkAwareError> {
    let Some(v) = args else { return Ok(T::default()) };
    let mut v = v.clone();
    if let Some(obj) = v.as_object_mut() {
        obj.remove("apiVersion");
        obj.remove("kind");
    }
    serde_json::from_value(v).map_err(|e| NetworkAwareError::Args { plugin, message: e.to_string() })
}

/// Default of both plugins' `namespaces` (upstream `metav1.NamespaceDefault`).
pub const DEFAULT_NAMESPACE: &str = "default";
/// Default `weightsName` (upstream `DefaultWeightsName`).
pub const DEFAULT_WEIGHTS_NAME: &str = "UserDefined";
/// Default `networkTopologyName` (upstream `DefaultNetworkTopologyName`).
pub const DEFAULT_NETWORK_TOPOLOGY_NAME: &str = "nt-default";

/// TopologicalSort's args (scheduler-plugins `TopologicalSortArgs`), defaults applied
/// as upstream `SetDefaults_TopologicalSortArgs`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopologicalSortArgs {
    /// Namespaces searched for the AppGroup, in order (default: `["default"]`).
    pub namespaces: Vec<String>,
}

impl Default for TopologicalSortArgs {
    fn default() -> Self {
        TopologicalSortArgs { namespaces: vec![DEFAULT_NAMESPACE.to_owned()] }
    }
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawTopologicalSortArgs {
    #[serde(default)]
    namespaces: Option<Vec<String>>,
}

impl TopologicalSortArgs {
    /// From a profile's `pluginConfig` args (`None`: the defaults). An empty or absent
    /// `namespaces` becomes `["default"]`.
    ///
    /// ```
    /// use schedkit::plugins::network_aware::TopologicalSortArgs;
    /// assert_eq!(TopologicalSortArgs::from_config(None).unwrap().namespaces, ["default"]);
    /// let a = TopologicalSortArgs::from_config(Some(&serde_json::json!({"namespaces": ["n1"]}))).unwrap();
    /// assert_eq!(a.namespaces, ["n1"]);
    /// assert!(TopologicalSortArgs::from_config(Some(&serde_json::json!({"namespace": ["n1"]}))).is_err());
    /// ```
    pub fn from_config(args: Option<&serde_json::Value>) -> Result<Self, NetworkAwareError> {
        let raw: RawTopologicalSortArgs = decode_args(super::names::TOPOLOGICAL_SORT, args)?;
        Ok(TopologicalSortArgs {
            namespaces: raw.namespaces.filter(|n| !n.is_empty()).unwrap_or_else(|| vec![DEFAULT_NAMESPACE.to_owned()]),
        })
    }
}

/// NetworkOverhead's args (scheduler-plugins `NetworkOverheadArgs`), defaults applied as
/// upstream `SetDefaults_NetworkOverheadArgs`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetworkOverheadArgs {
    /// Namespaces searched for the AppGroup and the NetworkTopology, in order
    /// (default: `["default"]`).
    pub namespaces: Vec<String>,
    /// The weight of the NetworkTopology to read costs from (default `UserDefined`).
    pub weights_name: String,
    /// The NetworkTopology's name (default `nt-default`).
    pub network_topology_name: String,
}

impl Default for NetworkOverheadArgs {
    fn default() -> Self {
        NetworkOverheadArgs {
            namespaces: vec![DEFAULT_NAMESPACE.to_owned()],
            weights_name: DEFAULT_WEIGHTS_NAME.to_owned(),
            network_topology_name: DEFAULT_NETWORK_TOPOLOGY_NAME.to_owned(),
        }
    }
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawNetworkOverheadArgs {
    #[serde(default)]
    namespaces: Option<Vec<String>>,
    #[serde(default)]
    weights_name: Option<String>,
    #[serde(default)]
    network_topology_name: Option<String>,
}

impl NetworkOverheadArgs {
    /// From a profile's `pluginConfig` args (`None`: the defaults). An empty or absent
    /// `namespaces` becomes `["default"]`; an absent `weightsName` or
    /// `networkTopologyName` gets its default (upstream's fields are pointers, so an
    /// explicit empty string is kept).
    ///
    /// ```
    /// use schedkit::plugins::network_aware::NetworkOverheadArgs;
    /// let a = NetworkOverheadArgs::from_config(Some(&serde_json::json!({
    ///     "namespaces": ["n2"], "weightsName": "latency", "networkTopologyName": "nt-latency-costs"
    /// }))).unwrap();
    /// assert_eq!((a.weights_name.as_str(), a.network_topology_name.as_str()), ("latency", "nt-latency-costs"));
    /// ```
    pub fn from_config(args: Option<&serde_json::Value>) -> Result<Self, NetworkAwareError> {
        let raw: RawNetworkOverheadArgs = decode_args(super::names::NETWORK_OVERHEAD, args)?;
        let d = NetworkOverheadArgs::default();
        Ok(NetworkOverheadArgs {
            namespaces: raw.namespaces.filter(|n| !n.is_empty()).unwrap_or(d.namespaces),
            weights_name: raw.weights_name.unwrap_or(d.weights_name),
            network_topology_name: raw.network_topology_name.unwrap_or(d.network_topology_name),
        })
    }
}
