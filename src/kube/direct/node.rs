//! Nodes straight into the model (see the parent module).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde::Deserialize;

use super::{Pairs, Skip, Text, object, pairs_quantities};
use crate::k8s::fast;
use crate::manifest::relevance;
use crate::model::{ContainerImage, Node, NodeSpec, NodeStatus, Symbol, Taint};

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct NodeSpecDoc<'a> {
    unschedulable: Option<bool>,
    #[serde(borrow)]
    taints: Option<Vec<TaintDoc<'a>>>,
    config_source: Skip,
    #[serde(rename = "externalID")]
    external_id: Skip,
    #[serde(rename = "podCIDR")]
    pod_cidr: Skip,
    #[serde(rename = "podCIDRs")]
    pod_cidrs: Skip,
    #[serde(rename = "providerID")]
    provider_id: Skip,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct TaintDoc<'a> {
    #[serde(borrow)]
    key: Text<'a>,
    #[serde(borrow)]
    value: Option<Text<'a>>,
    #[serde(borrow)]
    effect: Text<'a>,
    time_added: Option<Time>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct NodeStatusDoc<'a> {
    #[serde(borrow)]
    capacity: Option<Pairs<'a>>,
    #[serde(borrow)]
    allocatable: Option<Pairs<'a>>,
    images: Option<Vec<ImageDoc>>,
    addresses: Skip,
    conditions: Skip,
    config: Skip,
    daemon_endpoints: Skip,
    declared_features: Skip,
    features: Skip,
    node_info: Skip,
    phase: Skip,
    runtime_handlers: Skip,
    volumes_attached: Skip,
    volumes_in_use: Skip,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ImageDoc {
    names: Option<Vec<String>>,
    size_bytes: Option<i64>,
}

fn node_spec(s: NodeSpecDoc<'_>) -> Option<NodeSpec> {
    let rule = relevance::node;
    skip!(rule, s.config_source.is_some(), "spec.configSource");
    skip!(rule, s.external_id.is_some(), "spec.externalID");
    skip!(rule, s.pod_cidr.is_some(), "spec.podCIDR");
    skip!(rule, s.pod_cidrs.is_some(), "spec.podCIDRs");
    skip!(rule, s.provider_id.is_some(), "spec.providerID");
    let taints_in = s.taints.unwrap_or_default();
    let mut taints = Vec::with_capacity(taints_in.len());
    for t in taints_in {
        skip!(rule, t.time_added.is_some(), "spec.taints[].timeAdded");
        taints.push(Taint {
            key: Symbol::intern(t.key.as_str()),
            value: Symbol::intern(t.value.as_ref().map_or("", Text::as_str)),
            effect: fast::spelled(t.effect.as_str())?,
        });
    }
    Some(NodeSpec { unschedulable: s.unschedulable.unwrap_or(false), taints })
}

fn node_status(s: NodeStatusDoc<'_>) -> Option<NodeStatus> {
    let rule = relevance::node;
    skip!(rule, s.addresses.is_some(), "status.addresses");
    skip!(rule, s.conditions.is_some(), "status.conditions");
    skip!(rule, s.config.is_some(), "status.config");
    skip!(rule, s.daemon_endpoints.is_some(), "status.daemonEndpoints");
    skip!(rule, s.declared_features.is_some(), "status.declaredFeatures");
    skip!(rule, s.features.is_some(), "status.features");
    skip!(rule, s.node_info.is_some(), "status.nodeInfo");
    skip!(rule, s.phase.is_some(), "status.phase");
    skip!(rule, s.runtime_handlers.is_some(), "status.runtimeHandlers");
    skip!(rule, s.volumes_attached.is_some(), "status.volumesAttached");
    skip!(rule, s.volumes_in_use.is_some(), "status.volumesInUse");
    let capacity = pairs_quantities(s.capacity.as_ref())?;
    // SetDefaults_NodeStatus: allocatable defaults to capacity.
    let allocatable = match (&s.allocatable, &s.capacity) {
        (None, Some(_)) => capacity.clone(),
        (a, _) => pairs_quantities(a.as_ref())?,
    };
    let images = s
        .images
        .unwrap_or_default()
        .into_iter()
        .map(|i| ContainerImage { names: i.names.unwrap_or_default(), size_bytes: i.size_bytes.unwrap_or(0) })
        .collect();
    Some(NodeStatus { capacity, allocatable, images })
}

/// A Node's text straight into the model; `None` hands over to the lean path.
pub(super) fn node(text: &str) -> Option<Node> {
    let (metadata, spec, status) =
        object::<NodeSpecDoc<'_>, NodeStatusDoc<'_>, _, _>(text, "Node", node_spec, node_status)?;
    Some(Node { metadata, spec, status })
}
