//! Upstream allocator cases (`staging/src/k8s.io/dynamic-resource-allocation/structured/
//! internal/allocatortesting/allocator_testing.go`, `TestAllocator`), ported with the
//! upstream case name beside each test, plus schedkit cases (diagnosis, budget, chooser).

use serde_json::{Value, json};

use schedkit::dra::{
    AllocError, AllocationResult, CandidateView, DeviceChooser, DeviceClass, DraError, DraStore, GatherError,
    NodeResult, Problem, ResourceClaim, ResourceSlice,
};
use schedkit::model::{Labels, Pod, PodResourceClaim, Symbol};

const ADMIN_LABEL: &str = schedkit::dra::ADMIN_ACCESS_NAMESPACE_LABEL;
const DRIVER_A: &str = "driver-a";
const DRIVER_B: &str = "driver-b";

fn class(name: &str, driver: &str) -> DeviceClass {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": format!("device.driver == \"{driver}\"")}}]}
    }))
    .unwrap()
}

fn dev(name: &str) -> Value {
    json!({"name": name})
}

fn slice_on(name: &str, node: &str, pool: &str, driver: &str, devices: Vec<Value>) -> Value {
    json!({
        "metadata": {"name": name},
        "spec": {"driver": driver, "nodeName": node,
                 "pool": {"name": pool, "generation": 1, "resourceSliceCount": 1},
                 "devices": Value::Array(devices)}
    })
}

fn slice(v: Value) -> ResourceSlice {
    serde_json::from_value(v).unwrap()
}

fn request(name: &str, class: &str, count: i64) -> Value {
    json!({"name": name, "exactly": {"deviceClassName": class, "count": count}})
}

fn claim(name: &str, requests: Vec<Value>, constraints: Vec<Value>) -> ResourceClaim {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"devices": {"requests": Value::Array(requests), "constraints": Value::Array(constraints)}}
    }))
    .unwrap()
}

fn allocated(name: &str, devices: &[(&str, &str, &str)]) -> ResourceClaim {
    let mut c = claim(name, vec![request("req-0", "class-a", 1)], vec![]);
    let results: Vec<Value> =
        devices.iter().map(|(d, p, n)| json!({"request": "req-0", "driver": d, "pool": p, "device": n})).collect();
    c.status = Some(serde_json::from_value(json!({"allocation": {"devices": {"results": results}}})).unwrap());
    c
}

struct World {
    store: DraStore,
}

impl World {
    fn new(classes: &[DeviceClass], slices: Vec<Value>) -> World {
        let store = DraStore::new();
        // Admin access needs the namespace label (upstream checks it at admission; the
        // allocator cases assume admitted claims).
        store.set_namespace_labels("default", [(ADMIN_LABEL.to_owned(), "true".to_owned())].into());
        for c in classes {
            store.add_class(c.clone()).unwrap();
        }
        for s in slices {
            store.add_slice(slice(s)).unwrap();
        }
        World { store }
    }

    fn claims(self, claims: Vec<ResourceClaim>) -> (World, Vec<String>) {
        let names = claims.iter().map(|c| c.metadata.name.clone()).collect();
        for c in claims {
            self.store.add_claim(c).unwrap();
        }
        (self, names)
    }

    /// The allocation, after checking that Filter (`PodClaims::fits`, its quick path
    /// first) gives the same answer on the node for every case.
    fn run_on(&self, names: &[String], node: &str, labels: &Labels) -> Result<NodeResult, GatherError> {
        let pairs: Vec<(&str, &str)> = names.iter().map(|n| ("default", n.as_str())).collect();
        let result = self.store.allocate_claims(&pairs, node, labels);
        let mut pod = Pod::default();
        pod.metadata.name = "filter".into();
        pod.metadata.namespace = "default".into();
        for (i, n) in names.iter().enumerate() {
            pod.spec.resource_claims.push(PodResourceClaim {
                name: format!("c{i}"),
                resource_claim_name: Some(n.clone()),
                ..PodResourceClaim::default()
            });
        }
        if let Ok(Some(pc)) = self.store.gather(&pod) {
            let filter = pc.fits(Symbol::intern(node), labels);
            match (&filter, &result) {
                (Ok(Ok(())), Ok(NodeResult::Fit(_))) | (Ok(Err(_)), Ok(NodeResult::NoFit(_))) => {}
                (Err(e), Err(GatherError::Alloc(a))) => assert_eq!(e, a),
                _ => panic!("on {node}: Filter {filter:?}, allocation {result:?}"),
            }
        }
        result
    }

    fn run(&self, names: &[String]) -> Result<NodeResult, GatherError> {
        self.run_on(names, "node-1", &Labels::default())
    }
}

/// `(request, driver, pool, device)`.
type Row = (String, String, String, String);

/// One row per result, per claim; `None` when the claims don't fit.
fn picked(r: &Result<NodeResult, GatherError>) -> Option<Vec<Vec<Row>>> {
    match r.as_ref().expect("no allocation error") {
        NodeResult::Fit(list) => Some(
            list.iter()
                .map(|(_, a)| {
                    a.devices
                        .results
                        .iter()
                        .map(|d| (d.request.clone(), d.driver.clone(), d.pool.clone(), d.device.clone()))
                        .collect()
                })
                .collect(),
        ),
        NodeResult::NoFit(_) => None,
    }
}

fn r(req: &str, driver: &str, pool: &str, device: &str) -> (String, String, String, String) {
    (req.into(), driver.into(), pool.into(), device.into())
}

fn allocations(res: &Result<NodeResult, GatherError>) -> Vec<AllocationResult> {
    match res.as_ref().unwrap() {
        NodeResult::Fit(l) => l.iter().map(|(_, a)| a.clone()).collect(),
        NodeResult::NoFit(d) => panic!("expected a fit, got {d}"),
    }
}

fn classes_ab() -> Vec<DeviceClass> {
    vec![class("class-a", DRIVER_A), class("class-b", DRIVER_B)]
}

#[test]
fn simple() {
    // upstream "simple"
    let (w, names) =
        World::new(&classes_ab(), vec![slice_on("slice-1", "node-1", "pool-1", DRIVER_A, vec![dev("device-1")])])
            .claims(vec![claim("claim-0", vec![request("req-0", "class-a", 1)], vec![])]);
    let res = w.run(&names);
    assert_eq!(picked(&res), Some(vec![vec![r("req-0", DRIVER_A, "pool-1", "device-1")]]));
    // localNodeSelector(node1): pinned to the node by metadata.name.
    let sel = allocations(&res)[0].node_selector.clone().unwrap();
    let v = serde_json::to_value(&sel).unwrap();
    assert_eq!(
        v,
        json!({"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}]})
    );
}

#[test]
fn small_and_large_backtrack() {
    // upstream "small-and-large-backtrack-requests": the large device is listed first, so
    // the small request takes it and the search must undo that.
    let mem = |n: &str, m: &str| json!({"name": n, "capacity": {"memory": {"value": m}}});
    let sel = |q: &str| json!([{"cel": {"expression": format!("device.capacity[\"{DRIVER_A}\"].memory.compareTo(quantity(\"{q}\")) >= 0")}}]);
    let (w, names) = World::new(
        &classes_ab(),
        vec![slice_on("slice-1", "node-1", "pool-1", DRIVER_A, vec![mem("device-2", "2Gi"), mem("device-1", "1Gi")])],
    )
    .claims(vec![claim(
        "claim-0",
        vec![
            json!({"name": "req-0", "exactly": {"deviceClassName": "class-a", "selectors": sel("1Gi")}}),
            json!({"name": "req-1", "exactly": {"deviceClassName": "class-a", "selectors": sel("2Gi")}}),
        ],
        vec![],
    )]);
    assert_eq!(
        picked(&w.run(&names)),
        Some(vec![vec![r("req-0", DRIVER_A, "pool-1", "device-1"), r("req-1", DRIVER_A, "pool-1", "device-2")]])
    );
}

#[test]
fn devices_split_across_different_slices() {
    // upstream "devices-split-across-different-slices"
    let (w, names) = World::new(
        &classes_ab(),
        vec![
            slice_on("slice-1", "node-1", "pool-1", DRIVER_A, vec![dev("device-1")]),
            slice_on("slice-2", "node-1", "pool-2", DRIVER_A, vec![dev("device-1")]),
        ],
    )
    .claims(vec![claim("claim-0", vec![request("req-0", "class-a", 2)], vec![])]);
    assert_eq!(
        picked(&w.run(&names)),
        Some(vec![vec![r("req-0", DRIVER_A, "pool-1", "device-1"), r("req-0", DRIVER_A, "pool-2", "device-1")]])
    );
}

#[test]
fn not_enough_suitable_devices_and_no_slices() {
    // upstream "not-enough-suitable-devices" and "no-slices"
    let (w, names) =
        World::new(&classes_ab(), vec![slice_on("slice-1", "node-1", "pool-1", DRIVER_A, vec![dev("device-1")])])
            .claims(vec![
                claim("claim-0", vec![request("req-0", "class-a", 1)], vec![]),
                claim("claim-1", vec![request("req-1", "class-a", 1)], vec![]),
            ]);
    assert_eq!(picked(&w.run(&names)), None);
    let (w, names) =
        World::new(&classes_ab(), vec![]).claims(vec![claim("claim-0", vec![request("req-0", "class-a", 1)], vec![])]);
    assert_eq!(picked(&w.run(&names)), None);
}

#[test]
fn unknown_class_is_a_load_error() {
    // upstream "unknown-class" / "no-classes" (an allocation error upstream; a typed load
    // error here, so the claim never reaches a cycle).
    let store = DraStore::new();
    store.add_class(class("class-a", DRIVER_A)).unwrap();
    let err = store.add_claim(claim("claim-0", vec![request("req-0", "unknown-class", 1)], vec![])).unwrap_err();
    assert!(matches!(&err, DraError::MissingDeviceClass { class, .. } if class == "unknown-class"), "{err}");
    assert!(err.to_string().contains("default/claim-0"));
}

fn all_request(name: &str, class: &str) -> Value {
    json!({"name": name, "exactly": {"deviceClassName": class, "allocationMode": "All"}})
}

#[test]
fn all_devices_single_and_many() {
    // upstream "all-devices-single", "all-devices-many"
    let (w, names) = World::new(
        &classes_ab(),
        vec![
            slice_on("slice-1", "node-1", "pool-1", DRIVER_A, vec![dev("device-1")]),
            slice_on("slice-1b", "node-1", "pool-2", DRIVER_A, vec![dev("device-1")]),
        ],
    )
    .claims(vec![claim("claim-0", vec![all_request("req-0", "class-a")], vec![])]);
    assert_eq!(
        picked(&w.run(&names)),
        Some(vec![vec![r("req-0", DRIVER_A, "pool-1", "device-1"), r("req-0", DRIVER_A, "pool-2", "device-1")]])
    );
}

#[test]
fn all_devices_of_the_incomplete_pool() {
    // upstream "all-devices-of-the-incomplete-pool"
    let mut s = slice_on("slice-1", "node-1", "pool-1", DRIVER_A, vec![dev("device-1")]);
    s["spec"]["pool"]["resourceSliceCount"] = json!(2);
    let (w, names) = World::new(&classes_ab(), vec![s]).claims(vec![claim(
        "claim-0",
        vec![all_request("req-0", "class-a")],
        vec![],
    )]);
    let err = w.run(&names).unwrap_err();
    assert_eq!(
        err.to_string(),
        "claim default/claim-0, request req-0: asks for all devices, but resource pool driver-a/pool-1 is currently being updated"
    );
    assert!(matches!(err, GatherError::Alloc(AllocError::PoolIncomplete { .. })));
}

#[test]
fn no_allocation_from_incomplete_pools() {
    // upstream "no-allocation-from-incomplete-pools": an ExactCount request does not take
    // devices from an incomplete pool either; no allocation and no error.
    let mut s = slice_on("slice-1", "node-1", "pool-1", DRIVER_A, vec![dev("device-1")]);
    s["spec"]["pool"]["resourceSliceCount"] = json!(2);
    let (w, names) =
        World::new(&classes_ab(), vec![s]).claims(vec![claim("claim-0", vec![request("req-0", "class-a", 1)], vec![])]);
    assert_eq!(picked(&w.run(&names)), None);
}

#[test]
fn obsolete_slice_newest_variant() {
    // upstream "obsolete-slice" (newest variant; the older one is `obsolete_slice`): two slices both named "slice-1-obsolete" in a pool of
    // two, the second one generation newer. Upstream lists both; the store keys slices by
    // name as the API server does, so the second replaces the first (an update of the same
    // object). Either way the pool holds one slice of two on the newest generation, is
    // incomplete, and the ExactCount request gets nothing: no allocation, no error.
    let old = pool_state(slice_on("slice-1-obsolete", "node-1", "pool-1", DRIVER_A, vec![dev("device-1")]), 1, 2);
    let new = pool_state(slice_on("slice-1-obsolete", "node-1", "pool-1", DRIVER_A, vec![dev("device-2")]), 2, 2);
    let (w, names) = World::new(&classes_ab(), vec![old, new]).claims(vec![claim(
        "claim-0",
        vec![request("req-0", "class-a", 1)],
        vec![],
    )]);
    assert_eq!(picked(&w.run(&names)), None);
}

/// Sets a slice's pool generation and announced slice count.
fn pool_state(mut s: Value, generation: i64, count: i64) -> Value {
    s["spec"]["pool"]["generation"] = json!(generation);
    s["spec"]["pool"]["resourceSliceCount"] = json!(count);
    s
}

#[test]
fn pool_with_more_slices_than_it_announces_is_incomplete() {
    // upstream `pools_stable.go`, `GatherPools`: a pool is incomplete when its slice count
    // differs from the first slice's resourceSliceCount, in either direction.
    let s1 = slice_on("slice-1", "node-1", "pool-1", DRIVER_A, vec![dev("device-1")]);
    let s2 = slice_on("slice-2", "node-1", "pool-1", DRIVER_A, vec![dev("device-2")]);
    let (w, names) = World::new(&classes_ab(), vec![s1, s2]).claims(vec![claim(
        "claim-0",
        vec![all_request("req-0", "class-a")],
        vec![],
    )]);
    let err = w.run(&names).unwrap_err();
    assert!(matches!(err, GatherError::Alloc(AllocError::PoolIncomplete { .. })), "{err}");
}

#[test]
fn pool_completeness_follows_the_first_slice() {
    // upstream `pools_stable.go`, `GatherPools`: only the first slice's resourceSliceCount
    // is compared with the number of slices; the re-check over all the pool's slices
    // (`poolIsIncomplete`) runs only when that first comparison fails. Upstream's "first"
    // is the first in its input list; schedkit's is the first by slice name.
    let all = || vec![all_request("req-0", "class-a")];
    let s1 = pool_state(slice_on("slice-1", "node-1", "pool-1", DRIVER_A, vec![dev("device-1")]), 1, 2);
    let s2 = pool_state(slice_on("slice-2", "node-1", "pool-1", DRIVER_A, vec![dev("device-2")]), 1, 3);
    let (w, names) = World::new(&classes_ab(), vec![s1, s2]).claims(vec![claim("claim-0", all(), vec![])]);
    assert_eq!(
        picked(&w.run(&names)),
        Some(vec![vec![r("req-0", DRIVER_A, "pool-1", "device-1"), r("req-0", DRIVER_A, "pool-1", "device-2")]])
    );
    let s1 = pool_state(slice_on("slice-1", "node-1", "pool-1", DRIVER_A, vec![dev("device-1")]), 1, 3);
    let s2 = pool_state(slice_on("slice-2", "node-1", "pool-1", DRIVER_A, vec![dev("device-2")]), 1, 2);
    let (w, names) = World::new(&classes_ab(), vec![s1, s2]).claims(vec![claim("claim-0", all(), vec![])]);
    assert!(matches!(w.run(&names).unwrap_err(), GatherError::Alloc(AllocError::PoolIncomplete { .. })));
}

#[test]
fn incomplete_pool_is_judged_within_the_pool() {
    // upstream `GatherPools` (`checkSlicesInPool`): only a newer generation of the same
    // pool makes an incomplete pool's slices obsolete; a newer generation in another
    // pool changes nothing (the older `findLatestGenerationInPool` looked at every
    // slice). Pool-1 stays incomplete: no devices for ExactCount, an error for All.
    let incomplete = pool_state(slice_on("slice-1", "node-1", "pool-1", DRIVER_A, vec![dev("device-1")]), 1, 2);
    let other = pool_state(slice_on("slice-2", "node-1", "pool-2", DRIVER_B, vec![dev("device-1")]), 3, 1);
    let (w, names) = World::new(&classes_ab(), vec![incomplete.clone(), other.clone()]).claims(vec![claim(
        "claim-0",
        vec![request("req-0", "class-a", 1)],
        vec![],
    )]);
    assert_eq!(picked(&w.run(&names)), None);
    let (w, names) = World::new(&classes_ab(), vec![incomplete, other]).claims(vec![claim(
        "claim-0",
        vec![all_request("req-0", "class-a")],
        vec![],
    )]);
    assert!(matches!(w.run(&names).unwrap_err(), GatherError::Alloc(AllocError::PoolIncomplete { .. })));
}

#[test]
fn duplicate_slice() {
    // upstream "duplicate-slice": two identical slices under different names make a
    // complete pool of two slices with the same device twice: invalid, and allocation
    // fails with "invalid resource pools were encountered".
    let a = pool_state(slice_on("slice-1", "node-1", "pool-1", DRIVER_A, vec![dev("device-1")]), 1, 2);
    let b = pool_state(slice_on("slice-1-2", "node-1", "pool-1", DRIVER_A, vec![dev("device-1")]), 1, 2);
    let (w, names) = World::new(&classes_ab(), vec![a, b]).claims(vec![claim(
        "claim-0",
        vec![request("req-0", "class-a", 1)],
        vec![],
    )]);
    let NodeResult::NoFit(d) = w.run(&names).unwrap() else { panic!("must not fit") };
    assert_eq!(
        d.problems[0],
        Problem::InvalidPools {
            pools: vec![("driver-a/pool-1".to_owned(), "duplicate device name device-1".to_owned())]
        }
    );
    assert!(d.to_string().contains("invalid resource pools were encountered"), "{d}");
}

#[test]
fn all_mode_fails_on_any_bad_pool_of_the_node() {
    // upstream `validateDeviceRequest`: an All request fails when *any* pool gathered for
    // the node is incomplete ("is currently being updated") or invalid ("is currently
    // invalid"), even one without a device the request matches (here driver-b's pool and
    // a class-a request). A node that does not gather the bad pool is not affected.
    let good = slice_on("slice-1", "node-1", "pool-1", DRIVER_A, vec![dev("device-1")]);
    let good2 = slice_on("slice-3", "node-2", "pool-3", DRIVER_A, vec![dev("device-1")]);
    let incomplete = pool_state(slice_on("slice-2", "node-1", "pool-2", DRIVER_B, vec![dev("device-1")]), 1, 2);
    let (w, names) = World::new(&classes_ab(), vec![good.clone(), good2.clone(), incomplete]).claims(vec![claim(
        "claim-0",
        vec![all_request("req-0", "class-a")],
        vec![],
    )]);
    assert_eq!(
        w.run(&names).unwrap_err().to_string(),
        "claim default/claim-0, request req-0: asks for all devices, but resource pool driver-b/pool-2 is currently being updated"
    );
    assert_eq!(
        picked(&w.run_on(&names, "node-2", &Labels::default())),
        Some(vec![vec![r("req-0", DRIVER_A, "pool-3", "device-1")]])
    );
    let dup = |name: &str| pool_state(slice_on(name, "node-1", "pool-2", DRIVER_B, vec![dev("device-1")]), 1, 2);
    let (w, names) = World::new(&classes_ab(), vec![good, good2, dup("slice-2"), dup("slice-2b")]).claims(vec![claim(
        "claim-0",
        vec![all_request("req-0", "class-a")],
        vec![],
    )]);
    assert_eq!(
        w.run(&names).unwrap_err().to_string(),
        "claim default/claim-0, request req-0: asks for all devices, but resource pool driver-b/pool-2 is currently invalid"
    );
}

#[test]
fn pools_are_gathered_per_node() {
    // upstream `GatherPools` runs per node. Pool-1 has one slice for node-1 and one for
    // node-2, both publishing "device-1", and announces two slices: each node sees one
    // slice, the pool is complete (both exist), and no node sees a duplicate, so each
    // node may allocate its own device-1; they share one device ID, so once one is in
    // use the other is too.
    let s1 = pool_state(slice_on("slice-1", "node-1", "pool-1", DRIVER_A, vec![dev("device-1")]), 1, 2);
    let s2 = pool_state(slice_on("slice-2", "node-2", "pool-1", DRIVER_A, vec![dev("device-1")]), 1, 2);
    let (w, names) = World::new(&classes_ab(), vec![s1.clone(), s2.clone()]).claims(vec![claim(
        "claim-0",
        vec![request("req-0", "class-a", 1)],
        vec![],
    )]);
    for node in ["node-1", "node-2"] {
        assert_eq!(
            picked(&w.run_on(&names, node, &Labels::default())),
            Some(vec![vec![r("req-0", DRIVER_A, "pool-1", "device-1")]]),
            "{node}"
        );
    }
    let (w, names) = World::new(&classes_ab(), vec![s1, s2]).claims(vec![
        allocated("claim-held", &[(DRIVER_A, "pool-1", "device-1")]),
        claim("claim-0", vec![request("req-0", "class-a", 1)], vec![]),
    ]);
    let names = &names[1..];
    assert_eq!(picked(&w.run_on(names, "node-2", &Labels::default())), None);

    // A newer generation of a pool that a node does not see makes the node ignore the
    // pool's older slices (`checkSlicesInPool`: obsolete): All on node-1 succeeds with
    // its complete pool while node-2, which sees the incomplete newer generation, fails.
    let good = slice_on("slice-0", "node-1", "pool-0", DRIVER_A, vec![dev("device-1")]);
    let old = pool_state(slice_on("slice-1", "node-1", "pool-1", DRIVER_B, vec![dev("device-1")]), 1, 2);
    let new = pool_state(slice_on("slice-2", "node-2", "pool-1", DRIVER_B, vec![dev("device-1")]), 2, 2);
    let (w, names) = World::new(&classes_ab(), vec![good, old, new]).claims(vec![claim(
        "claim-0",
        vec![all_request("req-0", "class-a")],
        vec![],
    )]);
    assert_eq!(picked(&w.run(&names)), Some(vec![vec![r("req-0", DRIVER_A, "pool-0", "device-1")]]));
    assert!(matches!(
        w.run_on(&names, "node-2", &Labels::default()).unwrap_err(),
        GatherError::Alloc(AllocError::PoolIncomplete { .. })
    ));
}

#[test]
fn older_complete_generation_seen_by_a_node() {
    // upstream `GatherPools` (incubating `pools_incubating.go`): a node keeps the newest
    // generation among the slices *it* sees and, when those are as many as announced,
    // allocates from them without looking further. Pool-1 moved to generation 2 in a
    // slice for node-2 only; node-1 still sees its complete generation 1 and allocates
    // device-1 from it (ExactCount and All), node-2 gets device-2.
    let old = pool_state(slice_on("slice-1", "node-1", "pool-1", DRIVER_A, vec![dev("device-1")]), 1, 1);
    let new = pool_state(slice_on("slice-2", "node-2", "pool-1", DRIVER_A, vec![dev("device-2")]), 2, 1);
    for req in [request("req-0", "class-a", 1), all_request("req-0", "class-a")] {
        let (w, names) =
            World::new(&classes_ab(), vec![old.clone(), new.clone()]).claims(vec![claim("claim-0", vec![req], vec![])]);
        assert_eq!(picked(&w.run(&names)), Some(vec![vec![r("req-0", DRIVER_A, "pool-1", "device-1")]]));
        assert_eq!(
            picked(&w.run_on(&names, "node-2", &Labels::default())),
            Some(vec![vec![r("req-0", DRIVER_A, "pool-1", "device-2")]])
        );
    }
    // A device allocated under its ID is in use in every generation that publishes it.
    let old_same = pool_state(slice_on("slice-1", "node-1", "pool-1", DRIVER_A, vec![dev("device-1")]), 1, 1);
    let new_same = pool_state(slice_on("slice-2", "node-2", "pool-1", DRIVER_A, vec![dev("device-1")]), 2, 1);
    let (w, names) = World::new(&classes_ab(), vec![old_same, new_same]).claims(vec![
        allocated("claim-held", &[(DRIVER_A, "pool-1", "device-1")]),
        claim("claim-0", vec![request("req-0", "class-a", 1)], vec![]),
    ]);
    for node in ["node-1", "node-2"] {
        assert_eq!(picked(&w.run_on(&names[1..], node, &Labels::default())), None, "{node}");
    }
    // The older generation's own counter sets apply on node-1: one unit of memory for two
    // partitions (both nodes also see the counter-set slice, which keeps node-2 on
    // generation 2 where it is complete on its own).
    let counters = json!({"metadata": {"name": "slice-0"}, "spec": {"driver": DRIVER_A, "nodeName": "node-1",
        "pool": {"name": "pool-1", "generation": 1, "resourceSliceCount": 2},
        "sharedCounters": [{"name": "gpu-0", "counters": {"mem": {"value": "1"}}}]}});
    let part = |name: &str| {
        let mut d = dev(name);
        d["consumesCounters"] = json!([{"counterSet": "gpu-0", "counters": {"mem": {"value": "1"}}}]);
        d
    };
    let parts =
        pool_state(slice_on("slice-1", "node-1", "pool-1", DRIVER_A, vec![part("part-0"), part("part-1")]), 1, 2);
    for (count, fits) in [(1, true), (2, false)] {
        let (w, names) = World::new(&classes_ab(), vec![counters.clone(), parts.clone(), new.clone()])
            .claims(vec![claim("claim-0", vec![request("req-0", "class-a", count)], vec![])]);
        assert_eq!(picked(&w.run(&names)).is_some(), fits, "{count} partitions on node-1");
        assert_eq!(
            picked(&w.run_on(&names, "node-2", &Labels::default())).is_some(),
            count == 1,
            "{count} devices on node-2"
        );
    }
    // Generation 2 republishes the partitions (without counters) for node-2. A partition
    // allocated under its ID charges generation 1's counter too, so node-1 can't take
    // the other one; two such allocations overdraw it.
    let new_parts =
        pool_state(slice_on("slice-2", "node-2", "pool-1", DRIVER_A, vec![dev("part-0"), dev("part-1")]), 2, 1);
    let (w, names) = World::new(&classes_ab(), vec![counters.clone(), parts.clone(), new_parts.clone()]).claims(vec![
        allocated("claim-held", &[(DRIVER_A, "pool-1", "part-0")]),
        claim("claim-0", vec![request("req-0", "class-a", 1)], vec![]),
    ]);
    assert_eq!(picked(&w.run_on(&names[1..], "node-1", &Labels::default())), None);
    assert_eq!(
        picked(&w.run_on(&names[1..], "node-2", &Labels::default())),
        Some(vec![vec![r("req-0", DRIVER_A, "pool-1", "part-1")]])
    );
    let (w, _) = World::new(&classes_ab(), vec![counters, parts, new_parts]).claims(vec![
        allocated("held-0", &[(DRIVER_A, "pool-1", "part-0")]),
        allocated("held-1", &[(DRIVER_A, "pool-1", "part-1")]),
    ]);
    assert_eq!(w.store.audit().overdrawn_counters, ["driver-a/pool-1/gpu-0/mem"]);
}

#[test]
fn counter_set_problems_make_the_pool_invalid() {
    // upstream `buildPool`: "duplicate counter set name", "counter set ... not found".
    let counters = |name: &str, set: &str| {
        json!({"metadata": {"name": name}, "spec": {"driver": DRIVER_A, "nodeName": "node-1",
            "pool": {"name": "pool-1", "generation": 1, "resourceSliceCount": 2},
            "sharedCounters": [{"name": set, "counters": {"mem": {"value": "8"}}}]}})
    };
    let mut d = dev("device-1");
    d["consumesCounters"] = json!([{"counterSet": "other", "counters": {"mem": {"value": "1"}}}]);
    let devices = pool_state(slice_on("slice-1", "node-1", "pool-1", DRIVER_A, vec![d]), 1, 2);
    let (w, names) = World::new(&classes_ab(), vec![counters("slice-0", "gpu-0"), devices]).claims(vec![claim(
        "claim-0",
        vec![request("req-0", "class-a", 1)],
        vec![],
    )]);
    let NodeResult::NoFit(diag) = w.run(&names).unwrap() else { panic!("must not fit") };
    assert_eq!(
        diag.problems[0],
        Problem::InvalidPools { pools: vec![("driver-a/pool-1".to_owned(), "counter set other not found".to_owned())] }
    );
    let plain = pool_state(slice_on("slice-1", "node-1", "pool-1", DRIVER_A, vec![dev("device-1")]), 1, 3);
    let (w, names) = World::new(
        &classes_ab(),
        vec![pool_state(counters("slice-0", "gpu-0"), 1, 3), pool_state(counters("slice-0b", "gpu-0"), 1, 3), plain],
    )
    .claims(vec![claim("claim-0", vec![request("req-0", "class-a", 1)], vec![])]);
    let NodeResult::NoFit(diag) = w.run(&names).unwrap() else { panic!("must not fit") };
    assert_eq!(
        diag.problems[0],
        Problem::InvalidPools {
            pools: vec![("driver-a/pool-1".to_owned(), "duplicate counter set name gpu-0".to_owned())]
        }
    );
}

#[test]
fn all_devices_plus_another_and_reversed() {
    // upstream "all-devices-plus-another", "all-devices-plus-another-reversed"
    for reversed in [false, true] {
        let slices = vec![
            slice_on("slice-1", "node-1", "pool-1", DRIVER_A, vec![dev("device-1"), dev("device-2")]),
            slice_on("slice-1b", "node-1", "pool-1", DRIVER_B, vec![dev("device-1")]),
        ];
        let mut claims = vec![
            claim("claim-0", vec![all_request("req-0", "class-a")], vec![]),
            claim("claim-1", vec![request("req-0", "class-b", 1)], vec![]),
        ];
        if reversed {
            claims.reverse();
        }
        let (w, names) = World::new(&classes_ab(), slices).claims(claims);
        let mut got = picked(&w.run(&names)).unwrap();
        if reversed {
            got.reverse();
        }
        assert_eq!(
            got,
            vec![
                vec![r("req-0", DRIVER_A, "pool-1", "device-1"), r("req-0", DRIVER_A, "pool-1", "device-2")],
                vec![r("req-0", DRIVER_B, "pool-1", "device-1")],
            ]
        );
    }
}

#[test]
fn all_devices_no_solution_and_reversed() {
    // upstream "all-devices-no-solution", "all-devices-no-solution-reversed"
    for reversed in [false, true] {
        let mut claims = vec![
            claim("claim-1", vec![request("req-0", "class-a", 1)], vec![]),
            claim("claim-0", vec![all_request("req-0", "class-a")], vec![]),
        ];
        if reversed {
            claims.reverse();
        }
        let (w, names) =
            World::new(&classes_ab(), vec![slice_on("slice-1", "node-1", "pool-1", DRIVER_A, vec![dev("device-1")])])
                .claims(claims);
        assert_eq!(picked(&w.run(&names)), None);
    }
}

#[test]
fn all_devices_slice_without_devices_and_no_slices() {
    // upstream "all-devices-slice-without-devices", "all-devices-no-slices"
    let empty = json!({"metadata": {"name": "slice-1"}, "spec": {"driver": DRIVER_A, "nodeName": "node-1",
        "pool": {"name": "pool-1", "generation": 1, "resourceSliceCount": 1}}});
    let (w, names) = World::new(&classes_ab(), vec![empty]).claims(vec![claim(
        "claim-0",
        vec![all_request("req-0", "class-a")],
        vec![],
    )]);
    assert_eq!(picked(&w.run(&names)), None);
    let (w, names) =
        World::new(&classes_ab(), vec![]).claims(vec![claim("claim-0", vec![all_request("req-0", "class-a")], vec![])]);
    assert_eq!(picked(&w.run(&names)), None);
}

#[test]
fn all_devices_some_allocated() {
    // upstream "all-devices-some-allocated"
    let (w, names) = World::new(
        &classes_ab(),
        vec![slice_on("slice-1", "node-1", "pool-1", DRIVER_A, vec![dev("device-1"), dev("device-2")])],
    )
    .claims(vec![
        allocated("other", &[(DRIVER_A, "pool-1", "device-1")]),
        claim("claim-0", vec![all_request("req-0", "class-a")], vec![]),
    ]);
    assert_eq!(picked(&w.run(&names[1..])), None);
}

fn admin(mut req: Value) -> Value {
    req["exactly"]["adminAccess"] = json!(true);
    req
}

#[test]
fn admin_access_cases() {
    let two = || vec![slice_on("slice-1", "node-1", "pool-1", DRIVER_A, vec![dev("device-1"), dev("device-2")])];
    // upstream "all-devices-some-allocated-admin-access"
    let (w, names) = World::new(&classes_ab(), two()).claims(vec![
        allocated("other", &[(DRIVER_A, "pool-1", "device-1")]),
        claim("claim-0", vec![admin(all_request("req-0", "class-a"))], vec![]),
    ]);
    let res = w.run(&names[1..]);
    assert_eq!(
        picked(&res),
        Some(vec![vec![r("req-0", DRIVER_A, "pool-1", "device-1"), r("req-0", DRIVER_A, "pool-1", "device-2")]])
    );
    assert!(allocations(&res)[0].devices.results.iter().all(|d| d.admin_access == Some(true)));
    // upstream "count-devices-some-allocated-admin-access"
    let (w, names) = World::new(&classes_ab(), two()).claims(vec![
        allocated("other", &[(DRIVER_A, "pool-1", "device-1")]),
        claim("claim-0", vec![admin(request("req-0", "class-a", 2))], vec![]),
    ]);
    assert_eq!(
        picked(&w.run(&names[1..])),
        Some(vec![vec![r("req-0", DRIVER_A, "pool-1", "device-1"), r("req-0", DRIVER_A, "pool-1", "device-2")]])
    );
    // upstream "all-devices-some-allocating-admin-access": within one claim, the All
    // request can't also take the device the first request holds.
    let (w, names) = World::new(&classes_ab(), two()).claims(vec![claim(
        "claim-0",
        vec![admin(request("req-0", "class-a", 1)), admin(all_request("req-1", "class-a"))],
        vec![],
    )]);
    assert_eq!(picked(&w.run(&names)), None);
    // upstream "separate-claims-share-device-admin-access"
    let (w, names) = World::new(&classes_ab(), two()).claims(vec![
        claim("claim-0", vec![admin(request("req-0", "class-a", 1))], vec![]),
        claim("claim-1", vec![admin(request("req-0", "class-a", 1))], vec![]),
    ]);
    assert_eq!(
        picked(&w.run(&names)),
        Some(vec![vec![r("req-0", DRIVER_A, "pool-1", "device-1")], vec![r("req-0", DRIVER_A, "pool-1", "device-1")]])
    );
    // upstream "admin-access-claims-device-allocating-for-non-admin-access"
    let (w, names) = World::new(&classes_ab(), two()).claims(vec![
        claim("claim-0", vec![request("req-0", "class-a", 1)], vec![]),
        claim("claim-1", vec![admin(request("req-0", "class-a", 1))], vec![]),
    ]);
    assert_eq!(
        picked(&w.run(&names)),
        Some(vec![vec![r("req-0", DRIVER_A, "pool-1", "device-1")], vec![r("req-0", DRIVER_A, "pool-1", "device-1")]])
    );
    // upstream "admin-access-enabled": every device allocated, admin still gets one.
    let (w, names) =
        World::new(&classes_ab(), vec![slice_on("slice-1", "node-1", "pool-1", DRIVER_A, vec![dev("device-1")])])
            .claims(vec![
                allocated("other", &[(DRIVER_A, "pool-1", "device-1"), (DRIVER_A, "pool-1", "device-2")]),
                claim("claim-0", vec![admin(request("req-0", "class-a", 1))], vec![]),
            ]);
    assert_eq!(picked(&w.run(&names[1..])), Some(vec![vec![r("req-0", DRIVER_A, "pool-1", "device-1")]]));
}

#[test]
fn already_allocated_devices() {
    // upstream "already-allocated-devices"
    let (w, names) =
        World::new(&classes_ab(), vec![slice_on("slice-1", "node-1", "pool-1", DRIVER_A, vec![dev("device-1")])])
            .claims(vec![
                allocated("other", &[(DRIVER_A, "pool-1", "device-1"), (DRIVER_A, "pool-1", "device-2")]),
                claim("claim-0", vec![request("req-0", "class-a", 1)], vec![]),
            ]);
    let res = w.run(&names[1..]);
    assert_eq!(picked(&res), None);
    let NodeResult::NoFit(d) = res.unwrap() else { unreachable!() };
    assert_eq!(
        d.to_string(),
        "node-1: cannot allocate all claims; claim default/claim-0, request req-0: 0 of 1 requested devices available (1 match)"
    );
}

#[test]
fn network_attached_devices() {
    let region = |r: &str| json!({"nodeSelectorTerms": [{"matchExpressions": [{"key": "region", "operator": "In", "values": [r]}]}]});
    let net = |name: &str, pool: &str, sel: Value| {
        json!({"metadata": {"name": name}, "spec": {"driver": DRIVER_A, "nodeSelector": sel,
            "pool": {"name": pool, "generation": 1, "resourceSliceCount": 1}, "devices": [dev("device-1")]}})
    };
    let labels = |r: &str| -> Labels { serde_json::from_value(json!({"region": r})).unwrap() };
    // upstream "network-attached-device"
    let (w, names) = World::new(&classes_ab(), vec![net("slice-1", "pool-1", region("region-1"))]).claims(vec![claim(
        "claim-0",
        vec![request("req-0", "class-a", 1)],
        vec![],
    )]);
    let res = w.run_on(&names, "node-1", &labels("region-1"));
    assert_eq!(picked(&res), Some(vec![vec![r("req-0", DRIVER_A, "pool-1", "device-1")]]));
    assert_eq!(serde_json::to_value(allocations(&res)[0].node_selector.as_ref().unwrap()).unwrap(), region("region-1"));
    // upstream "unsuccessful-allocation-network-attached-device"
    assert_eq!(picked(&w.run_on(&names, "node-2", &labels("region-2"))), None);
    // upstream "local-and-network-attached-devices": any local device pins the node.
    let (w, names) = World::new(
        &classes_ab(),
        vec![
            net("slice-1", "pool-1", region("region-1")),
            slice_on("slice-2", "node-1", "pool-2", DRIVER_A, vec![dev("device-1")]),
        ],
    )
    .claims(vec![claim("claim-0", vec![request("req-0", "class-a", 2)], vec![])]);
    let res = w.run_on(&names, "node-1", &labels("region-1"));
    assert_eq!(
        picked(&res),
        Some(vec![vec![r("req-0", DRIVER_A, "pool-1", "device-1"), r("req-0", DRIVER_A, "pool-2", "device-1")]])
    );
    let sel = serde_json::to_value(allocations(&res)[0].node_selector.as_ref().unwrap()).unwrap();
    assert_eq!(sel["nodeSelectorTerms"][0]["matchFields"][0]["values"], json!(["node-1"]));
    // upstream "many-network-attached-devices" (without the local pool): selectors merged.
    let planet = json!({"nodeSelectorTerms": [{"matchExpressions": [{"key": "planet", "operator": "In", "values": ["earth"]}]}]});
    let all = json!({"metadata": {"name": "slice-all"}, "spec": {"driver": DRIVER_A, "allNodes": true,
        "pool": {"name": "pool-2", "generation": 1, "resourceSliceCount": 1}, "devices": [dev("device-1")]}});
    let (w, names) = World::new(
        &classes_ab(),
        vec![net("slice-1", "pool-1", region("region-1")), all, net("slice-3", "pool-3", planet)],
    )
    .claims(vec![claim("claim-0", vec![request("req-0", "class-a", 3)], vec![])]);
    let lbl: Labels = serde_json::from_value(json!({"region": "region-1", "planet": "earth"})).unwrap();
    let res = w.run_on(&names, "node-1", &lbl);
    let sel = serde_json::to_value(allocations(&res)[0].node_selector.as_ref().unwrap()).unwrap();
    assert_eq!(sel["nodeSelectorTerms"][0]["matchExpressions"].as_array().unwrap().len(), 2);
}

#[test]
fn several_different_drivers() {
    // upstream "several-different-drivers"
    let (w, names) = World::new(
        &classes_ab(),
        vec![
            slice_on("slice-1", "node-1", "pool-1", DRIVER_A, vec![dev("device-1"), dev("device-2")]),
            slice_on("slice-1b", "node-1", "pool-1", DRIVER_B, vec![dev("device-1")]),
        ],
    )
    .claims(vec![
        claim("claim-0", vec![request("req-0", "class-a", 1)], vec![]),
        claim("claim-1", vec![request("req-0", "class-b", 1)], vec![]),
    ]);
    assert_eq!(
        picked(&w.run(&names)),
        Some(vec![vec![r("req-0", DRIVER_A, "pool-1", "device-1")], vec![r("req-0", DRIVER_B, "pool-1", "device-1")]])
    );
}

fn attrs(name: &str, a: Value) -> Value {
    let mut d = json!({"name": name});
    d["attributes"] = a;
    d
}

#[test]
fn with_constraint() {
    // upstream "with-constraint": int, version, string and bool attributes all match.
    let a = json!({"driverVersion": {"version": "1.0.0"}, "numa": {"int": 1},
        "stringAttribute": {"string": "stringAttributeValue"}, "boolAttribute": {"bool": true}});
    let cons = ["numa", "driverVersion", "stringAttribute", "boolAttribute"]
        .iter()
        .map(|n| json!({"matchAttribute": format!("{DRIVER_A}/{n}")}))
        .collect();
    let (w, names) = World::new(
        &classes_ab(),
        vec![slice_on(
            "slice-1",
            "node-1",
            "pool-1",
            DRIVER_A,
            vec![attrs("device-1", a.clone()), attrs("device-2", a)],
        )],
    )
    .claims(vec![claim("claim-0", vec![request("req-0", "class-a", 1), request("req-1", "class-a", 1)], cons)]);
    assert_eq!(
        picked(&w.run(&names)),
        Some(vec![vec![r("req-0", DRIVER_A, "pool-1", "device-1"), r("req-1", DRIVER_A, "pool-1", "device-2")]])
    );
}

#[test]
fn with_constraint_non_existent_attribute() {
    // upstream "with-constraint-non-existent-attribute"
    let (w, names) =
        World::new(&classes_ab(), vec![slice_on("slice-1", "node-1", "pool-1", DRIVER_A, vec![dev("device-1")])])
            .claims(vec![claim(
                "claim-0",
                vec![request("req-0", "class-a", 1)],
                vec![json!({"matchAttribute": "driver-a/nonExistentAttribute"})],
            )]);
    let res = w.run(&names);
    assert_eq!(picked(&res), None);
    let NodeResult::NoFit(d) = res.unwrap() else { unreachable!() };
    assert!(d.to_string().contains("constraint matchAttribute driver-a/nonExistentAttribute not satisfiable"), "{d}");
}

#[test]
fn with_constraint_not_matching_int_attribute() {
    // upstream "with-constraint-not-matching-int-attribute" and "...-all-devices"
    let devices = vec![attrs("device-1", json!({"numa": {"int": 1}})), attrs("device-2", json!({"numa": {"int": 2}}))];
    let cons = vec![json!({"matchAttribute": "driver-a/numa"})];
    let (w, names) =
        World::new(&classes_ab(), vec![slice_on("slice-1", "node-1", "pool-1", DRIVER_A, devices.clone())])
            .claims(vec![claim("claim-0", vec![request("req-0", "class-a", 2)], cons.clone())]);
    assert_eq!(picked(&w.run(&names)), None);
    // In All mode upstream treats the violated constraint as an error.
    let (w, names) = World::new(&classes_ab(), vec![slice_on("slice-1", "node-1", "pool-1", DRIVER_A, devices)])
        .claims(vec![claim("claim-0", vec![all_request("req-0", "class-a")], cons)]);
    let err = w.run(&names).unwrap_err();
    assert!(err.to_string().contains("because a claim constraint would not be satisfied"), "{err}");
}

#[test]
fn with_constraint_backtracks_to_a_matching_set() {
    // schedkit: matchAttribute needs the search to skip the first device.
    let devices = vec![
        attrs("device-1", json!({"numa": {"int": 0}})),
        attrs("device-2", json!({"numa": {"int": 1}})),
        attrs("device-3", json!({"numa": {"int": 1}})),
    ];
    let (w, names) =
        World::new(&classes_ab(), vec![slice_on("slice-1", "node-1", "pool-1", DRIVER_A, devices)]).claims(vec![
            claim("claim-0", vec![request("req-0", "class-a", 2)], vec![json!({"matchAttribute": "driver-a/numa"})]),
        ]);
    assert_eq!(
        picked(&w.run(&names)),
        Some(vec![vec![r("req-0", DRIVER_A, "pool-1", "device-2"), r("req-0", DRIVER_A, "pool-1", "device-3")]])
    );
}

#[test]
fn distinct_attribute() {
    // upstream distinctAttribute (KEP-4815 era): every device a different value.
    let devices = vec![
        attrs("device-1", json!({"numa": {"int": 0}})),
        attrs("device-2", json!({"numa": {"int": 0}})),
        attrs("device-3", json!({"numa": {"int": 1}})),
    ];
    let (w, names) =
        World::new(&classes_ab(), vec![slice_on("slice-1", "node-1", "pool-1", DRIVER_A, devices)]).claims(vec![
            claim("claim-0", vec![request("req-0", "class-a", 2)], vec![json!({"distinctAttribute": "driver-a/numa"})]),
        ]);
    assert_eq!(
        picked(&w.run(&names)),
        Some(vec![vec![r("req-0", DRIVER_A, "pool-1", "device-1"), r("req-0", DRIVER_A, "pool-1", "device-3")]])
    );
}

fn first_available(name: &str, subs: Vec<Value>) -> Value {
    let mut r = json!({"name": name});
    r["firstAvailable"] = Value::Array(subs);
    r
}

fn sub(name: &str, class: &str, count: i64) -> Value {
    json!({"name": name, "deviceClassName": class, "count": count})
}

#[test]
fn prioritized_list_cases() {
    // upstream "all-devices-no-slices-prioritized-list"
    let mut s0 = sub("subreq-0", "class-a", 1);
    s0["allocationMode"] = json!("All");
    s0.as_object_mut().unwrap().remove("count");
    let (w, names) =
        World::new(&classes_ab(), vec![slice_on("slice-2", "node-1", "pool-2", DRIVER_B, vec![dev("device-1")])])
            .claims(vec![claim(
                "claim-0",
                vec![first_available("req-0", vec![s0.clone(), sub("subreq-1", "class-b", 1)])],
                vec![],
            )]);
    assert_eq!(picked(&w.run(&names)), Some(vec![vec![r("req-0/subreq-1", DRIVER_B, "pool-2", "device-1")]]));
    // upstream "all-devices-some-allocated-prioritized-list"
    let (w, names) = World::new(
        &classes_ab(),
        vec![
            slice_on("slice-1", "node-1", "pool-1", DRIVER_A, vec![dev("device-1"), dev("device-2")]),
            slice_on("slice-2", "node-1", "pool-2", DRIVER_B, vec![dev("device-1")]),
        ],
    )
    .claims(vec![
        allocated("other", &[(DRIVER_A, "pool-1", "device-1")]),
        claim("claim-0", vec![first_available("req-0", vec![s0, sub("subreq-1", "class-b", 1)])], vec![]),
    ]);
    assert_eq!(picked(&w.run(&names[1..])), Some(vec![vec![r("req-0/subreq-1", DRIVER_B, "pool-2", "device-1")]]));
    // upstream "prioritized-list-too-many-in-first-subrequest"
    let (w, names) =
        World::new(&classes_ab(), vec![slice_on("slice-1", "node-1", "pool-1", DRIVER_A, vec![dev("device-1")])])
            .claims(vec![claim(
                "claim-0",
                vec![first_available("req-0", vec![sub("subreq-0", "class-b", 500), sub("subreq-1", "class-a", 1)])],
                vec![],
            )]);
    assert_eq!(picked(&w.run(&names)), Some(vec![vec![r("req-0/subreq-1", DRIVER_A, "pool-1", "device-1")]]));
}

#[test]
fn prioritized_list_with_backtracking() {
    // upstream "prioritized-list-with-backtracking"
    let mem = |n: &str, m: &str| json!({"name": n, "capacity": {"memory": {"value": m}}});
    let sel = |q: &str| json!([{"cel": {"expression": format!("device.capacity[\"{DRIVER_A}\"].memory.compareTo(quantity(\"{q}\")) >= 0")}}]);
    let mut s0 = sub("subreq-0", "class-a", 1);
    s0["selectors"] = sel("8Gi");
    let mut s1 = sub("subreq-1", "class-a", 1);
    s1["selectors"] = sel("4Gi");
    let (w, names) = World::new(
        &classes_ab(),
        vec![
            slice_on("slice-1", "node-1", "pool-1", DRIVER_A, vec![mem("device-1", "8Gi")]),
            slice_on("slice-2", "node-1", "pool-2", DRIVER_A, vec![mem("device-2", "4Gi")]),
        ],
    )
    .claims(vec![claim(
        "claim-0",
        vec![
            first_available("req-0", vec![s0, s1]),
            json!({"name": "req-1", "exactly": {"deviceClassName": "class-a", "selectors": sel("8Gi")}}),
        ],
        vec![],
    )]);
    assert_eq!(
        picked(&w.run(&names)),
        Some(vec![vec![
            r("req-0/subreq-1", DRIVER_A, "pool-2", "device-2"),
            r("req-1", DRIVER_A, "pool-1", "device-1")
        ]])
    );
}

/// A pool with one counter set in its own slice (upstream `sliceWithCounterSets`).
fn counters_slice(memory: &str) -> Value {
    json!({"metadata": {"name": "slice-2"}, "spec": {"driver": DRIVER_A, "nodeName": "node-1",
        "pool": {"name": "pool-1", "generation": 1, "resourceSliceCount": 2},
        "sharedCounters": [{"name": "counter-set-1", "counters": {"memory": {"value": memory}}}]}})
}

fn partition(name: &str, memory: &str) -> Value {
    json!({"name": name, "capacity": {"memory": {"value": memory}},
        "consumesCounters": [{"counterSet": "counter-set-1", "counters": {"memory": {"value": memory}}}]})
}

fn partition_slice(devices: Vec<Value>) -> Value {
    let mut s = slice_on("slice-1", "node-1", "pool-1", DRIVER_A, devices);
    s["spec"]["pool"]["resourceSliceCount"] = json!(2);
    s
}

#[test]
fn partitionable_devices() {
    // upstream "partitionable-devices-single-device"
    let (w, names) =
        World::new(&classes_ab(), vec![partition_slice(vec![partition("device-1", "4Gi")]), counters_slice("8Gi")])
            .claims(vec![claim("claim-0", vec![request("req-0", "class-a", 1)], vec![])]);
    assert_eq!(picked(&w.run(&names)), Some(vec![vec![r("req-0", DRIVER_A, "pool-1", "device-1")]]));
    // upstream "partitionable-devices-prioritized-list": 4Gi + 6Gi exceed 8Gi, so the
    // second request falls back to the other 4Gi partition.
    let sel = |q: &str| json!([{"cel": {"expression": format!("device.capacity[\"{DRIVER_A}\"].memory.compareTo(quantity(\"{q}\")) >= 0")}}]);
    let mut s0 = sub("subreq-0", "class-a", 1);
    s0["selectors"] = sel("6Gi");
    let mut s1 = sub("subreq-1", "class-a", 1);
    s1["selectors"] = sel("4Gi");
    let (w, names) = World::new(
        &classes_ab(),
        vec![
            partition_slice(vec![
                partition("device-1", "4Gi"),
                partition("device-2", "6Gi"),
                partition("device-3", "4Gi"),
            ]),
            counters_slice("8Gi"),
        ],
    )
    .claims(vec![claim(
        "claim-0",
        vec![request("req-0", "class-a", 1), first_available("req-1", vec![s0, s1])],
        vec![],
    )]);
    assert_eq!(
        picked(&w.run(&names)),
        Some(vec![vec![
            r("req-0", DRIVER_A, "pool-1", "device-1"),
            r("req-1/subreq-1", DRIVER_A, "pool-1", "device-3")
        ]])
    );
}

#[test]
fn partitionable_devices_full_gpu_and_mig_exclusive() {
    // schedkit: a whole GPU and its MIG slices draw from one counter set; with the whole
    // GPU allocated, no slice fits, and the diagnosis names the counters.
    let (w, names) = World::new(
        &classes_ab(),
        vec![
            partition_slice(vec![
                partition("gpu-0", "8Gi"),
                partition("gpu-0-mig-0", "4Gi"),
                partition("gpu-0-mig-1", "4Gi"),
            ]),
            counters_slice("8Gi"),
        ],
    )
    .claims(vec![
        allocated("whole", &[(DRIVER_A, "pool-1", "gpu-0")]),
        claim("claim-0", vec![request("req-0", "class-a", 1)], vec![]),
        claim("claim-1", vec![request("req-0", "class-a", 2)], vec![]),
    ]);
    let res = w.run(&names[1..2]);
    let NodeResult::NoFit(d) = res.unwrap() else { panic!("MIG slice allocated beside its whole GPU") };
    assert!(d.to_string().contains("shared counters not satisfiable"), "{d}");
    w.store.remove_claim("default", "whole");
    // Two slices use all 8Gi; the whole GPU is then out of reach.
    assert_eq!(
        picked(&w.run(&names[2..])),
        Some(vec![vec![r("req-0", DRIVER_A, "pool-1", "gpu-0-mig-0"), r("req-0", DRIVER_A, "pool-1", "gpu-0-mig-1")]])
    );
}

fn tainted(name: &str, effect: &str) -> Value {
    json!({"name": name, "taints": [{"key": "example.com/taint", "value": "tainted", "effect": effect}]})
}

#[test]
fn device_taints() {
    // upstream "tainted-device" family (allocator_test: device taints): NoSchedule and
    // NoExecute block unless tolerated; the toleration is recorded in the result.
    let devices = vec![tainted("device-1", "NoSchedule"), tainted("device-2", "NoExecute")];
    let (w, names) =
        World::new(&classes_ab(), vec![slice_on("slice-1", "node-1", "pool-1", DRIVER_A, devices.clone())])
            .claims(vec![claim("claim-0", vec![request("req-0", "class-a", 1)], vec![])]);
    assert_eq!(picked(&w.run(&names)), None);
    let mut req = request("req-0", "class-a", 2);
    req["exactly"]["tolerations"] = json!([{"key": "example.com/taint", "operator": "Exists"}]);
    let (w, names) = World::new(&classes_ab(), vec![slice_on("slice-1", "node-1", "pool-1", DRIVER_A, devices)])
        .claims(vec![claim("claim-0", vec![req], vec![])]);
    let res = w.run(&names);
    assert_eq!(
        picked(&res),
        Some(vec![vec![r("req-0", DRIVER_A, "pool-1", "device-1"), r("req-0", DRIVER_A, "pool-1", "device-2")]])
    );
    assert_eq!(allocations(&res)[0].devices.results[0].tolerations.len(), 1);
}

#[test]
fn step_budget_stops_a_pathological_search() {
    // schedkit: 40 devices with pairwise different values and a matchAttribute over 8 of
    // them: C(40, 8) = 76,904,685 combinations; the budget stops it with an error.
    let devices: Vec<Value> = (0..40).map(|i| attrs(&format!("device-{i}"), json!({"numa": {"int": i}}))).collect();
    let (w, names) = World::new(&classes_ab(), vec![slice_on("slice-1", "node-1", "pool-1", DRIVER_A, devices)])
        .claims(vec![
            claim("claim-0", vec![request("req-0", "class-a", 1)], vec![]),
            claim("claim-1", vec![request("req-0", "class-a", 8)], vec![json!({"distinctAttribute": "driver-a/numa"})]),
            claim("claim-2", vec![request("req-0", "class-a", 8)], vec![json!({"matchAttribute": "driver-a/numa"})]),
        ]);
    w.store.set_step_budget(10_000);
    let err = w.run(&names).unwrap_err();
    assert_eq!(err, GatherError::Alloc(AllocError::BudgetExceeded { budget: 10_000 }));
}

#[derive(Debug)]
struct Reverse;

impl DeviceChooser for Reverse {
    fn reorder(&self, _request: &str, _count: Option<u32>, candidates: &mut [u32], view: CandidateView<'_>) {
        candidates.sort_by_key(|&c| std::cmp::Reverse(view.id(c).device.as_str()));
    }
}

#[test]
fn pluggable_chooser_reorders_candidates() {
    // schedkit: the chooser decides which of several fitting sets is taken.
    let (w, names) = World::new(
        &classes_ab(),
        vec![slice_on(
            "slice-1",
            "node-1",
            "pool-1",
            DRIVER_A,
            vec![dev("device-1"), dev("device-2"), dev("device-3")],
        )],
    )
    .claims(vec![claim("claim-0", vec![request("req-0", "class-a", 2)], vec![])]);
    w.store.set_chooser(Some(std::sync::Arc::new(Reverse)));
    assert_eq!(
        picked(&w.run(&names)),
        Some(vec![vec![r("req-0", DRIVER_A, "pool-1", "device-3"), r("req-0", DRIVER_A, "pool-1", "device-2")]])
    );
}

#[test]
fn diagnosis_counts_matching_devices() {
    // schedkit: "3 of 8 requested devices" on a node with 3 matching GPUs.
    let devices: Vec<Value> = (0..3).map(|i| dev(&format!("gpu-{i}"))).collect();
    let (w, names) = World::new(&classes_ab(), vec![slice_on("slice-1", "node-7", "pool-1", DRIVER_A, devices)])
        .claims(vec![claim("claim-0", vec![request("gpus", "class-a", 8)], vec![])]);
    let NodeResult::NoFit(d) = w.run_on(&names, "node-7", &Labels::default()).unwrap() else { panic!() };
    assert_eq!(d.node, "node-7");
    assert_eq!(
        d.problems,
        vec![Problem::TooFewDevices {
            claim: "default/claim-0".into(),
            request: "gpus".into(),
            matching: 3,
            available: 3,
            wanted: Some(8)
        }]
    );
    assert_eq!(
        d.to_string(),
        "node-7: cannot allocate all claims; claim default/claim-0, request gpus: 3 of 8 requested devices available (3 match)"
    );
}

#[test]
fn topology_chooser_takes_the_best_connected_set() {
    // schedkit: on a DGX-1 (hybrid cube-mesh) with GPU 1 taken, upstream order would take
    // 0, 2, 3, 4; the topology chooser takes the set best_subset proves best.
    use schedkit::topology::{GpuSet, SearchOptions, best_subset, machines, objective_of};
    let matrix = machines::dgx1_v100().matrix().unwrap();
    let devices: Vec<Value> = (0..8).map(|i| attrs(&format!("gpu-{i}"), json!({"index": {"int": i}}))).collect();
    let (w, names) = World::new(&classes_ab(), vec![slice_on("slice-1", "node-1", "pool-1", DRIVER_A, devices)])
        .claims(vec![
            allocated("taken", &[(DRIVER_A, "pool-1", "gpu-1")]),
            claim("claim-0", vec![request("req-0", "class-a", 4)], vec![]),
        ]);
    let upstream: Vec<String> = picked(&w.run(&names[1..])).unwrap()[0].iter().map(|r| r.3.clone()).collect();
    assert_eq!(upstream, ["gpu-0", "gpu-2", "gpu-3", "gpu-4"]);
    w.store
        .set_chooser(Some(std::sync::Arc::new(schedkit::dra::TopologyChooser::new(matrix.clone(), "driver-a/index"))));
    let got: Vec<usize> = picked(&w.run(&names[1..])).unwrap()[0]
        .iter()
        .map(|r| r.3.trim_start_matches("gpu-").parse().unwrap())
        .collect();
    let best = best_subset(&matrix, 0xff & !0b10, 4, &SearchOptions::default()).unwrap();
    let got_set = GpuSet::from_indices(got.iter().copied());
    assert_eq!(got_set, best.gpus);
    let up_set = GpuSet::from_indices([0, 2, 3, 4]);
    assert_ne!(got_set, up_set, "the chooser changed the pick");
    assert!(objective_of(&matrix, got_set) > objective_of(&matrix, up_set));
}

fn mem_sel(q: &str) -> Value {
    json!([{"cel": {"expression": format!("device.capacity[\"{DRIVER_A}\"].memory.compareTo(quantity(\"{q}\")) >= 0")}}])
}

fn mem_dev(name: &str, memory: &str, version: Option<&str>) -> Value {
    let mut d = json!({"name": name, "capacity": {"memory": {"value": memory}}});
    if let Some(v) = version {
        d["attributes"] = json!({"driverVersion": {"version": v}});
    }
    d
}

fn sub_sel(name: &str, count: i64, q: &str) -> Value {
    let mut s = sub(name, "class-a", count);
    s["selectors"] = mem_sel(q);
    s
}

#[test]
fn prioritized_list_subrequests_with_expressions() {
    // upstream "prioritized-list-subrequests-with-expressions"
    let (w, names) = World::new(
        &classes_ab(),
        vec![slice_on(
            "slice-1",
            "node-1",
            "pool-1",
            DRIVER_A,
            vec![mem_dev("device-1", "2Gi", None), mem_dev("device-2", "2Gi", None), mem_dev("device-3", "1Gi", None)],
        )],
    )
    .claims(vec![claim(
        "claim-0",
        vec![
            json!({"name": "req-0", "exactly": {"deviceClassName": "class-a", "selectors": mem_sel("1Gi")}}),
            first_available("req-1", vec![sub_sel("subreq-0", 1, "4Gi"), sub_sel("subreq-1", 2, "2Gi")]),
        ],
        vec![],
    )]);
    assert_eq!(
        picked(&w.run(&names)),
        Some(vec![vec![
            r("req-0", DRIVER_A, "pool-1", "device-3"),
            r("req-1/subreq-1", DRIVER_A, "pool-1", "device-1"),
            r("req-1/subreq-1", DRIVER_A, "pool-1", "device-2"),
        ]])
    );
}

#[test]
fn prioritized_list_subrequests_with_constraints_ref_parent_and_sub_request() {
    // upstream "prioritized-list-subrequests-with-constraints-ref-parent-request" and
    // "prioritized-list-subrequests-with-constraints-ref-sub-request"
    let version = json!({"matchAttribute": format!("{DRIVER_A}/driverVersion")});
    for (refs, pool2, want) in [
        (
            json!(["req-0", "req-1"]),
            vec![mem_dev("device-2", "2Gi", Some("2.0.0")), mem_dev("device-3", "1Gi", Some("1.0.0"))],
            r("req-1/subreq-1", DRIVER_A, "pool-2", "device-3"),
        ),
        (
            json!(["req-0", "req-1/subreq-0"]),
            vec![mem_dev("device-2", "2Gi", Some("2.0.0"))],
            r("req-1/subreq-1", DRIVER_A, "pool-2", "device-2"),
        ),
    ] {
        let mut c = version.clone();
        c["requests"] = refs;
        let (w, names) = World::new(
            &classes_ab(),
            vec![
                slice_on("slice-1", "node-1", "pool-1", DRIVER_A, vec![mem_dev("device-1", "8Gi", Some("1.0.0"))]),
                slice_on("slice-2", "node-1", "pool-2", DRIVER_A, pool2),
            ],
        )
        .claims(vec![claim(
            "claim-0",
            vec![
                json!({"name": "req-0", "exactly": {"deviceClassName": "class-a", "selectors": mem_sel("8Gi")}}),
                first_available("req-1", vec![sub_sel("subreq-0", 1, "2Gi"), sub_sel("subreq-1", 1, "1Gi")]),
            ],
            vec![c],
        )]);
        assert_eq!(picked(&w.run(&names)), Some(vec![vec![r("req-0", DRIVER_A, "pool-1", "device-1"), want]]));
    }
}

#[test]
fn prioritized_list_allocation_mode_all_multiple_requests() {
    // upstream "prioritized-list-allocation-mode-all-multiple-requests" and
    // "prioritized-list-subrequests-with-allocation-mode-all"
    let mut all = sub("subreq-0", "class-a", 1);
    all["allocationMode"] = json!("All");
    all.as_object_mut().unwrap().remove("count");
    let two = || vec![slice_on("slice-1", "node-1", "pool-1", DRIVER_A, vec![dev("device-1"), dev("device-2")])];
    let (w, names) = World::new(&classes_ab(), two()).claims(vec![claim(
        "claim-0",
        vec![
            request("req-0", "class-a", 1),
            first_available("req-1", vec![all.clone(), sub("subreq-1", "class-a", 1)]),
        ],
        vec![],
    )]);
    assert_eq!(
        picked(&w.run(&names)),
        Some(vec![vec![
            r("req-0", DRIVER_A, "pool-1", "device-1"),
            r("req-1/subreq-1", DRIVER_A, "pool-1", "device-2")
        ]])
    );
    let (w, names) = World::new(&classes_ab(), two()).claims(vec![
        allocated("other", &[(DRIVER_A, "pool-1", "device-1")]),
        claim("claim-0", vec![first_available("req-0", vec![all, sub("subreq-1", "class-a", 1)])], vec![]),
    ]);
    assert_eq!(picked(&w.run(&names[1..])), Some(vec![vec![r("req-0/subreq-1", DRIVER_A, "pool-1", "device-2")]]));
}

#[test]
fn prioritized_list_multi_request() {
    // upstream "prioritized-list-multi-request"
    let (w, names) = World::new(
        &classes_ab(),
        vec![
            slice_on("slice-1", "node-1", "pool-1", DRIVER_A, vec![mem_dev("device-1", "8Gi", None)]),
            slice_on("slice-2", "node-1", "pool-2", DRIVER_A, vec![mem_dev("device-2", "4Gi", None)]),
        ],
    )
    .claims(vec![claim(
        "claim-0",
        vec![
            json!({"name": "req-1", "exactly": {"deviceClassName": "class-a", "selectors": mem_sel("8Gi")}}),
            first_available("req-0", vec![sub_sel("subreq-0", 1, "8Gi"), sub_sel("subreq-1", 1, "4Gi")]),
        ],
        vec![],
    )]);
    assert_eq!(
        picked(&w.run(&names)),
        Some(vec![vec![
            r("req-1", DRIVER_A, "pool-1", "device-1"),
            r("req-0/subreq-1", DRIVER_A, "pool-2", "device-2")
        ]])
    );
}

#[test]
fn obsolete_slice() {
    // upstream "obsolete-slice" (allocator_testing.go, v1.3x variant): a slice of an older
    // pool generation is ignored; its device is not counted.
    let mut old = slice_on("slice-1-obsolete", "node-1", "pool-1", DRIVER_A, vec![dev("device-1"), dev("device-2")]);
    old["spec"]["pool"]["generation"] = json!(1);
    let mut new = slice_on("slice-1", "node-1", "pool-1", DRIVER_A, vec![dev("device-1")]);
    new["spec"]["pool"]["generation"] = json!(2);
    let (w, names) = World::new(&classes_ab(), vec![old, new]).claims(vec![claim(
        "claim-0",
        vec![request("req-0", "class-a", 1)],
        vec![],
    )]);
    assert_eq!(picked(&w.run(&names)), Some(vec![vec![r("req-0", DRIVER_A, "pool-1", "device-1")]]));
    // device-2 exists only in the obsolete generation: two devices don't fit.
    w.store.add_claim(claim("claim-1", vec![request("req-0", "class-a", 2)], vec![])).unwrap();
    assert_eq!(picked(&w.run(&["claim-1".to_owned()])), None);
}

fn pool_slice(name: &str, pool: &str, count: i64, devices: Vec<Value>) -> Value {
    let mut s = slice_on(name, "node-1", pool, DRIVER_A, devices);
    s["spec"]["pool"]["resourceSliceCount"] = json!(count);
    s
}

fn ready(name: &str) -> Value {
    // The API server requires failure conditions beside binding conditions
    // (`validateDeviceBindingParameters`); the allocator looks only at the former.
    json!({"name": name, "bindingConditions": ["Ready"], "bindingFailureConditions": ["Failed"]})
}

#[test]
fn lexicographical_sorting() {
    // upstream allocatortesting/lexicographical_test.go, TestLexicographicalAllocator.
    let two = || vec![claim("claim-0", vec![request("req-0", "class-a", 2)], vec![])];
    // "lexicographical-sorting-pools": pool-3, pool-2, pool-1 in input.
    let (w, names) = World::new(
        &classes_ab(),
        vec![
            pool_slice("slice-1", "pool-3", 1, vec![dev("device-1")]),
            pool_slice("slice-2", "pool-2", 1, vec![dev("device-1")]),
            pool_slice("slice-3", "pool-1", 1, vec![dev("device-1")]),
        ],
    )
    .claims(two());
    assert_eq!(
        picked(&w.run(&names)),
        Some(vec![vec![r("req-0", DRIVER_A, "pool-1", "device-1"), r("req-0", DRIVER_A, "pool-2", "device-1")]])
    );
    // "lexicographical-sorting-pools-with-binding-conditions": the pool whose slice has a
    // device with binding conditions goes last.
    let (w, names) = World::new(
        &classes_ab(),
        vec![
            pool_slice("slice-1", "pool-1", 1, vec![ready("device-1")]),
            pool_slice("slice-2", "pool-3", 1, vec![dev("device-2")]),
            pool_slice("slice-3", "pool-2", 1, vec![dev("device-3")]),
        ],
    )
    .claims(two());
    assert_eq!(
        picked(&w.run(&names)),
        Some(vec![vec![r("req-0", DRIVER_A, "pool-2", "device-3"), r("req-0", DRIVER_A, "pool-3", "device-2")]])
    );
    // "lexicographical-sorting-slices": slice-3, slice-2, slice-1 of one pool in input.
    let (w, names) = World::new(
        &classes_ab(),
        vec![
            pool_slice("slice-3", "pool-1", 3, vec![dev("device-3")]),
            pool_slice("slice-2", "pool-1", 3, vec![dev("device-2")]),
            pool_slice("slice-1", "pool-1", 3, vec![dev("device-1")]),
        ],
    )
    .claims(two());
    assert_eq!(
        picked(&w.run(&names)),
        Some(vec![vec![r("req-0", DRIVER_A, "pool-1", "device-1"), r("req-0", DRIVER_A, "pool-1", "device-2")]])
    );
    // "lexicographical-sorting-slices-with-binding-conditions": within the pool, the slice
    // with binding conditions goes last.
    let (w, names) = World::new(
        &classes_ab(),
        vec![
            pool_slice("slice-1", "pool-1", 3, vec![ready("device-1")]),
            pool_slice("slice-3", "pool-1", 3, vec![dev("device-3")]),
            pool_slice("slice-2", "pool-1", 3, vec![dev("device-2")]),
        ],
    )
    .claims(two());
    assert_eq!(
        picked(&w.run(&names)),
        Some(vec![vec![r("req-0", DRIVER_A, "pool-1", "device-2"), r("req-0", DRIVER_A, "pool-1", "device-3")]])
    );
}
