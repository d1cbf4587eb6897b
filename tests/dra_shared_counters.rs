//! Shared counters of devices with `allowMultipleAllocations` (KEP-5075 together with
//! partitionable devices, KEP-4815): such a device charges the counters it consumes once,
//! with its first share; later shares only consume capacity. Cases after upstream
//! `structured/internal/allocatortesting/allocator_testing.go`
//! ("consumable-capacity-with-partitionable-device-multiple-capacity-pools",
//! kubernetes#134103) and the fixes kubernetes#139040 (committed shares keep their counters
//! charged in later cycles), #140437 (a committed share is not charged again) and #140431
//! (backtracking releases what a first share charged).

use serde_json::{Value, json};

use schedkit::dra::{Audit, DraStore, NodeResult, ResourceClaim};
use schedkit::model::{Labels, Pod, PodResourceClaim};

const DRIVER: &str = "driver-a";

fn store(devices: &Value) -> DraStore {
    let s = DraStore::new();
    s.add_class(
        serde_json::from_value(json!({"metadata": {"name": "class-a"},
            "spec": {"selectors": [{"cel": {"expression": "device.driver == \"driver-a\""}}]}}))
        .unwrap(),
    )
    .unwrap();
    // The counter set and the devices consuming it in two slices of one pool (the API
    // server rejects a slice with both since v1.35).
    let counters = json!({"metadata": {"name": "slice-0"},
        "spec": {"nodeName": "node-1", "driver": DRIVER,
                 "pool": {"name": "pool-1", "generation": 1, "resourceSliceCount": 2},
                 "sharedCounters": [{"name": "counter-set-0", "counters": {"memory": {"value": "4"}}}]}});
    let slice = json!({"metadata": {"name": "slice-1"},
        "spec": {"nodeName": "node-1", "driver": DRIVER,
                 "pool": {"name": "pool-1", "generation": 1, "resourceSliceCount": 2},
                 "devices": devices}});
    s.add_slice(serde_json::from_value(counters).unwrap()).unwrap();
    s.add_slice(serde_json::from_value(slice).unwrap()).unwrap();
    s
}

/// A device drawing `consumes` from counter-set-0's `memory`.
fn device(name: &str, consumes: &str, multi: bool, capacity: Option<&str>) -> Value {
    let mut d = json!({"name": name, "attributes": {"name": {"string": name}},
        "consumesCounters": [{"counterSet": "counter-set-0", "counters": {"memory": {"value": consumes}}}]});
    if multi {
        d["allowMultipleAllocations"] = json!(true);
    }
    if let Some(c) = capacity {
        d["capacity"] = json!({"capacity0": {"value": c}});
    }
    d
}

/// A request: `exactly` with optional selector and capacity, or `firstAvailable` of those.
fn exactly(selector: Option<&str>, capacity: Option<&str>) -> Value {
    let mut r = json!({"deviceClassName": "class-a"});
    if let Some(sel) = selector {
        r["selectors"] = json!([{"cel": {"expression": sel}}]);
    }
    if let Some(c) = capacity {
        r["capacity"] = json!({"requests": {"capacity0": c}});
    }
    r
}

fn claim(name: &str, requests: &Value) -> ResourceClaim {
    serde_json::from_value(json!({"metadata": {"name": name, "namespace": "default"},
        "spec": {"devices": {"requests": requests}}}))
    .unwrap()
}

fn pod(claim: &str) -> Pod {
    let mut p = Pod::default();
    p.metadata.name = format!("pod-{claim}");
    p.metadata.namespace = "default".into();
    p.spec.resource_claims.push(PodResourceClaim {
        name: "c".into(),
        resource_claim_name: Some(claim.into()),
        resource_claim_template_name: None,
        pod_group_resource_claim: None,
    });
    p
}

/// Reserves `claim` on node-1 for its pod: `(request, device)` per result, or None.
fn reserve(s: &DraStore, claim: &str) -> Option<Vec<(String, String)>> {
    match s.reserve(&pod(claim), &format!("uid-{claim}"), "node-1", &Labels::default()).unwrap() {
        NodeResult::Fit(list) => {
            Some(list[0].1.devices.results.iter().map(|r| (r.request.clone(), r.device.clone())).collect())
        }
        NodeResult::NoFit(_) => None,
    }
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter().map(|(a, b)| ((*a).to_owned(), (*b).to_owned())).collect()
}

#[test]
fn consumable_capacity_with_partitionable_device_multiple_capacity_pools() {
    // counter-set-0 holds 4. device-1 (2 of the counter) serves req-0; req-2 doesn't fit
    // device-1's remaining capacity, device-2 would need 4 counters with 2 charged, so it
    // gets device-3; req-1 prefers device-2 (counters exhausted) and falls back to the
    // rest of device-1, whose counters were charged by its first share.
    let s = store(&json!([
        device("device-1", "2", true, Some("2")),
        device("device-2", "4", true, Some("2")),
        device("device-3", "2", true, Some("2")),
    ]));
    s.add_claim(claim(
        "claim-0",
        &json!([
            {"name": "req-0", "exactly": exactly(None, Some("1"))},
            {"name": "req-2", "exactly": exactly(None, Some("2"))},
            {"name": "req-1", "firstAvailable": [
                {"name": "sub-0", "deviceClassName": "class-a",
                 "selectors": [{"cel": {"expression": "device.attributes[\"driver-a\"].name == \"device-2\""}}],
                 "capacity": {"requests": {"capacity0": "1"}}},
                {"name": "sub-1", "deviceClassName": "class-a", "capacity": {"requests": {"capacity0": "1"}}}]},
        ]),
    ))
    .unwrap();
    assert_eq!(
        reserve(&s, "claim-0"),
        Some(pairs(&[("req-0", "device-1"), ("req-2", "device-3"), ("req-1/sub-1", "device-1")]))
    );
    s.commit(&pod("claim-0"), "uid-claim-0");
    assert_eq!(s.audit(), Audit::default());
}

#[test]
fn a_committed_share_keeps_its_counters_and_is_not_charged_again() {
    // device-1 (multi, 4 of 4) and partition-1 (exclusive, 4 of 4) exclude each other.
    let s = store(&json!([device("device-1", "4", true, Some("4")), device("partition-1", "4", false, None)]));
    let on = |dev: &str| exactly(Some(&format!("device.attributes[\"driver-a\"].name == \"{dev}\"")), None);
    let share = |dev: &str| {
        let mut r = on(dev);
        r["capacity"] = json!({"requests": {"capacity0": "1"}});
        r
    };
    s.add_claim(claim("first", &json!([{"name": "req-0", "exactly": share("device-1")}]))).unwrap();
    s.add_claim(claim("second", &json!([{"name": "req-0", "exactly": share("device-1")}]))).unwrap();
    s.add_claim(claim("partition", &json!([{"name": "req-0", "exactly": on("partition-1")}]))).unwrap();
    assert_eq!(reserve(&s, "first"), Some(pairs(&[("req-0", "device-1")])));
    s.commit(&pod("first"), "uid-first");
    // kubernetes#139040: the committed share still holds the counters in a later cycle.
    assert_eq!(reserve(&s, "partition"), None);
    // kubernetes#140437: a second share of the same device is not charged again.
    assert_eq!(reserve(&s, "second"), Some(pairs(&[("req-0", "device-1")])));
    s.commit(&pod("second"), "uid-second");
    assert_eq!(s.audit(), Audit::default());
    // Releasing one share keeps the counters charged; releasing both frees them.
    s.deallocate("default", "first");
    assert_eq!(reserve(&s, "partition"), None);
    s.deallocate("default", "second");
    assert_eq!(reserve(&s, "partition"), Some(pairs(&[("req-0", "partition-1")])));
    assert_eq!(s.audit(), Audit::default());
}

#[test]
fn backtracking_releases_the_counters_a_first_share_charged() {
    // kubernetes#140431: req-0 first takes device-1 (multi, charging all 4), req-1 then
    // can't have partition-2; the search backs out of device-1, which must release the
    // counters so that req-0 on partition-3 and req-1 on partition-2 fit together.
    let s = store(&json!([
        device("device-1", "4", true, Some("1")),
        device("partition-3", "0", false, None),
        device("partition-2", "4", false, None),
    ]));
    s.add_claim(claim(
        "claim-0",
        &json!([
            {"name": "req-0", "exactly": exactly(Some("device.attributes[\"driver-a\"].name != \"partition-2\""), None)},
            {"name": "req-1", "exactly": exactly(Some("device.attributes[\"driver-a\"].name == \"partition-2\""), None)},
        ]),
    ))
    .unwrap();
    assert_eq!(reserve(&s, "claim-0"), Some(pairs(&[("req-0", "partition-3"), ("req-1", "partition-2")])));
}
