//! DynamicResources Filter allocates nothing on the heap on the success path (8- and
//! 1-GPU claims with a model selector and matchAttribute). One test in this binary: the
//! counting allocator (`stats_alloc`) is process-wide.

use std::alloc::System;
use std::sync::Arc;

use serde_json::json;
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

use schedkit::dra::DraStore;
use schedkit::framework::{CycleState, FilterPlugin, PreFilterPlugin};
use schedkit::model::PodResourceClaim;
use schedkit::plugins::dynamic_resources::DynamicResources;
use schedkit::snapshot::{NodeInfo, PodInfo, Snapshot};
use schedkit::testing::{NodeBuilder, PodBuilder};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

#[test]
fn filter_allocates_nothing_when_claims_fit() {
    let store = Arc::new(DraStore::new());
    store
        .add_class(
            serde_json::from_value(json!({"metadata": {"name": "gpu"},
                "spec": {"selectors": [{"cel": {"expression": "device.driver == \"gpu.nvidia.com\""}}]}}))
            .unwrap(),
        )
        .unwrap();
    let devices: Vec<_> = (0..8)
        .map(|g| json!({"name": format!("gpu-{g}"), "attributes": {"productName": {"string": "H100"}, "nvlinkDomain": {"int": 0}}}))
        .collect();
    store
        .add_slice(
            serde_json::from_value(
                json!({"metadata": {"name": "s"}, "spec": {"driver": "gpu.nvidia.com", "nodeName": "node-0",
                "pool": {"name": "node-0", "generation": 1, "resourceSliceCount": 1}, "devices": devices}}),
            )
            .unwrap(),
        )
        .unwrap();
    for (name, count) in [("c8", 8), ("c1", 1)] {
        store
            .add_claim(
                serde_json::from_value(json!({"metadata": {"name": name}, "spec": {"devices": {
                    "requests": [{"name": "g", "exactly": {"deviceClassName": "gpu", "count": count,
                        "selectors": [{"cel": {"expression": "device.attributes[\"gpu.nvidia.com\"].productName == \"H100\""}}]}}],
                    "constraints": [{"matchAttribute": "gpu.nvidia.com/nvlinkDomain"}]}}}))
                .unwrap(),
            )
            .unwrap();
    }
    let plugin = DynamicResources::new(store);
    let node = NodeInfo::new(Arc::new(NodeBuilder::new("node-0").build()));
    let snapshot = Snapshot::from_nodes([node.clone()]);
    for claim in ["c8", "c1"] {
        let pod = PodInfo::new(
            PodBuilder::new("p")
                .with(|p| {
                    p.spec.resource_claims.push(PodResourceClaim {
                        name: "g".into(),
                        resource_claim_name: Some(claim.into()),
                        resource_claim_template_name: None,
                        pod_group_resource_claim: None,
                    });
                })
                .build(),
        )
        .unwrap();
        let mut state = CycleState::new();
        assert!(plugin.pre_filter(&mut state, &pod, &snapshot).1.is_success());
        // The count is process-wide: the test harness's main thread allocates once
        // when it first blocks waiting for this test, at a moment that depends on
        // scheduling. A one-time allocation elsewhere can spoil one attempt, never
        // three; Filter allocating would spoil every one.
        let fewest = (0..3)
            .map(|_| {
                let region = Region::new(GLOBAL);
                for _ in 0..100 {
                    assert!(plugin.filter(&state, &pod, &node).is_success());
                }
                let change = region.change();
                change.allocations + change.reallocations
            })
            .min();
        assert_eq!(fewest, Some(0), "{claim}: Filter allocated in every attempt");
    }
}
