//! DynamicResources Score: nodes whose allocation uses earlier `firstAvailable`
//! subrequests score higher (upstream `pkg/scheduler/framework/plugins/dynamicresources/
//! dynamicresources.go`, `Score`/`computeScore`: `8 - i` per request allocated from
//! subrequest `i`, 8 being `FirstAvailableDeviceRequestMaxSize`; `NormalizeScore` is
//! `DefaultNormalizeScore(MaxNodeScore, false)`).

use std::sync::Arc;

use serde_json::json;

#[path = "support/dra.rs"]
mod dra_support;
use dra_support::driver_class;

use schedkit::dra::{DraStore, ResourceClaim, ResourceSlice};
use schedkit::framework::{CycleState, NodeScore, PreFilterPlugin, ScorePlugin};
use schedkit::model::{Pod, PodResourceClaim, Symbol};
use schedkit::plugins::dynamic_resources::DynamicResources;
use schedkit::snapshot::{NodeInfo, PodInfo, Snapshot};
use schedkit::testing::NodeBuilder;

const DRIVER: &str = "driver-a";

fn slice(node: &str, devices: &[(&str, &str)]) -> ResourceSlice {
    let devices: Vec<_> =
        devices.iter().map(|(name, size)| json!({"name": name, "attributes": {"size": {"string": size}}})).collect();
    serde_json::from_value(json!({"metadata": {"name": node},
        "spec": {"driver": DRIVER, "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1}, "devices": devices}}))
    .unwrap()
}

fn sub(name: &str, size: &str) -> serde_json::Value {
    json!({"name": name, "deviceClassName": "class-a",
        "selectors": [{"cel": {"expression": format!("device.attributes[\"{DRIVER}\"].size == \"{size}\"")}}]})
}

fn setup(claim_requests: &serde_json::Value) -> (DynamicResources, PodInfo, Snapshot) {
    setup_with(Some(claim_requests), &[])
}

/// The three nodes plus `claim` (when given) and `allocated`: claims already allocated in
/// an earlier cycle, as `(name, requests, result request names)`, on a device of a pool
/// no node publishes (no node selector, so every node can use them).
fn setup_with(
    claim_requests: Option<&serde_json::Value>,
    allocated: &[(&str, serde_json::Value, &[&str])],
) -> (DynamicResources, PodInfo, Snapshot) {
    let store = Arc::new(DraStore::new());
    store.add_class(driver_class("class-a", DRIVER)).unwrap();
    store.add_slice(slice("node-big", &[("gpu-0", "big")])).unwrap();
    store.add_slice(slice("node-medium", &[("gpu-0", "medium")])).unwrap();
    store.add_slice(slice("node-small", &[("gpu-0", "small")])).unwrap();
    let mut pod = Pod::default();
    pod.metadata.name = "p".into();
    pod.metadata.namespace = "default".into();
    for (name, requests, used) in allocated {
        let results: Vec<_> = used
            .iter()
            .enumerate()
            .map(|(i, r)| json!({"request": r, "driver": DRIVER, "pool": "elsewhere", "device": format!("dev-{name}-{i}")}))
            .collect();
        let claim: ResourceClaim = serde_json::from_value(json!({"metadata": {"name": name, "namespace": "default"},
            "spec": {"devices": {"requests": requests}},
            "status": {"allocation": {"devices": {"results": results}}}}))
        .unwrap();
        store.add_claim(claim).unwrap();
        pod.spec.resource_claims.push(PodResourceClaim {
            name: (*name).into(),
            resource_claim_name: Some((*name).into()),
            resource_claim_template_name: None,
            pod_group_resource_claim: None,
        });
    }
    if let Some(claim_requests) = claim_requests {
        let claim: ResourceClaim =
            serde_json::from_value(json!({"metadata": {"name": "claim", "namespace": "default"},
            "spec": {"devices": {"requests": claim_requests}}}))
            .unwrap();
        store.add_claim(claim).unwrap();
        pod.spec.resource_claims.push(PodResourceClaim {
            name: "c".into(),
            resource_claim_name: Some("claim".into()),
            resource_claim_template_name: None,
            pod_group_resource_claim: None,
        });
    }
    let snapshot = Snapshot::from_nodes(
        ["node-big", "node-medium", "node-small", "node-none"]
            .into_iter()
            .map(|n| NodeInfo::new(Arc::new(NodeBuilder::new(n).cpu("8").build()))),
    );
    (DynamicResources::new(store), PodInfo::new(pod).unwrap(), snapshot)
}

/// Raw and normalized scores of the four nodes.
fn scores(requests: &serde_json::Value) -> (Vec<i64>, Vec<i64>) {
    scores_of(setup(requests))
}

fn scores_of((plugin, pod, snapshot): (DynamicResources, PodInfo, Snapshot)) -> (Vec<i64>, Vec<i64>) {
    let mut state = CycleState::new();
    let (_, status) = plugin.pre_filter(&mut state, &pod, &snapshot);
    assert!(status.is_success(), "{status:?}");
    let mut list: Vec<NodeScore> = ["node-big", "node-medium", "node-small", "node-none"]
        .iter()
        .map(|n| {
            let info = snapshot.get(n).unwrap();
            NodeScore { name: Symbol::intern(n), score: plugin.score(&state, &pod, info).unwrap() }
        })
        .collect();
    let raw = list.iter().map(|s| s.score).collect();
    assert!(plugin.normalize(&state, &pod, &mut list).is_success());
    (raw, list.iter().map(|s| s.score).collect())
}

#[test]
fn earlier_subrequests_score_higher() {
    // One request preferring big over medium over small: 8, 7, 6; a node where nothing
    // fits scores 0. Normalized against the best: 100, 87, 75, 0.
    let (raw, normalized) = scores(&json!([{"name": "req-0", "firstAvailable": [
        sub("big", "big"), sub("medium", "medium"), sub("small", "small")]}]));
    assert_eq!(raw, [8, 7, 6, 0]);
    assert_eq!(normalized, [100, 87, 75, 0]);
}

#[test]
fn requests_without_first_available_score_nothing() {
    let (raw, normalized) = scores(&json!([{"name": "req-0", "exactly": {"deviceClassName": "class-a"}}]));
    assert_eq!(raw, [0, 0, 0, 0]);
    assert_eq!(normalized, [0, 0, 0, 0]);
}

/// A claim allocated in an earlier cycle from its second subrequest (`8 - 1 = 7`).
fn allocated_from_medium() -> (&'static str, serde_json::Value, &'static [&'static str]) {
    (
        "earlier",
        json!([{"name": "req-0", "firstAvailable": [sub("big", "big"), sub("medium", "medium")]}]),
        &["req-0/medium"],
    )
}

#[test]
fn claims_allocated_earlier_count_in_score() {
    // Upstream `computeScore` reads `status.allocation` for claims allocated in an
    // earlier cycle (the fix that indexes only claims needing allocation into
    // Filter's results): 7 from the allocated claim on every node where the pod's
    // other claim gets allocated, plus that claim's 8, 7, 6.
    let requests = json!([{"name": "req-0", "firstAvailable": [
        sub("big", "big"), sub("medium", "medium"), sub("small", "small")]}]);
    let (raw, normalized) = scores_of(setup_with(Some(&requests), &[allocated_from_medium()]));
    assert_eq!(raw, [15, 14, 13, 0]);
    assert_eq!(normalized, [100, 93, 86, 0]);

    // The other claim has no subrequests: the allocated claim's 7 alone, on every node.
    let exact = json!([{"name": "req-0", "exactly": {"deviceClassName": "class-a"}}]);
    let (raw, _) = scores_of(setup_with(Some(&exact), &[allocated_from_medium()]));
    assert_eq!(raw, [7, 7, 7, 0]);
}

#[test]
fn only_allocated_claims_score_nothing() {
    // Nothing left to allocate: upstream Filter runs no allocator, keeps no per-node
    // allocation, and Score returns 0.
    let (raw, normalized) = scores_of(setup_with(None, &[allocated_from_medium()]));
    assert_eq!(raw, [0, 0, 0, 0]);
    assert_eq!(normalized, [0, 0, 0, 0]);
}
