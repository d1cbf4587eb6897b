//! Properties of the DRA store and allocator under random clusters and operation sequences:
//! no device is ever held by two claims (admin access excepted), shared counters never go
//! negative (never overdrawn), an `All` request gets every matching device, and Filter's
//! answer (its quick path first) agrees with the allocation on every node.

use std::collections::BTreeSet;

use proptest::prelude::*;
use serde_json::{Value, json};

#[path = "support/dra.rs"]
mod dra_support;
use dra_support::driver_class;

use schedkit::dra::{AllocError, Audit, DraStore, GatherError, NodeResult, ResourceClaim, ResourceSlice};
use schedkit::model::{Labels, Pod, PodResourceClaim, Symbol};

const DRIVER: &str = "gpu.example.com";

#[derive(Debug, Clone)]
struct NodeSpec {
    gpus: Vec<i64>, // attribute "kind" per device
    partitioned: bool,
    /// Devices allow multiple allocations with 8Gi of consumable memory (when not
    /// partitioned).
    shared: bool,
}

#[derive(Debug, Clone)]
struct ClaimSpec {
    count: i64,
    all: bool,
    admin: bool,
    kind: Option<i64>,
    match_kind: bool,
    /// Consumable memory asked for, in Gi.
    memory: Option<u8>,
}

#[derive(Debug, Clone)]
enum Op {
    Reserve(usize, usize),
    Unreserve(usize),
    Bind(usize),
    Deallocate(usize),
}

fn node_spec() -> impl Strategy<Value = NodeSpec> {
    (prop::collection::vec(0i64..3, 1..6), any::<bool>(), any::<bool>())
        .prop_map(|(gpus, partitioned, shared)| NodeSpec { gpus, partitioned, shared: shared && !partitioned })
}

fn claim_spec() -> impl Strategy<Value = ClaimSpec> {
    (
        1i64..4,
        prop::bool::weighted(0.15),
        prop::bool::weighted(0.15),
        prop::option::of(0i64..3),
        any::<bool>(),
        prop::option::of(1u8..7),
    )
        .prop_map(|(count, all, admin, kind, match_kind, memory)| ClaimSpec {
            count,
            all,
            admin,
            kind,
            match_kind,
            memory,
        })
}

fn op(pods: usize, nodes: usize) -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..pods, 0..nodes).prop_map(|(p, n)| Op::Reserve(p, n)),
        1 => (0..pods).prop_map(Op::Unreserve),
        2 => (0..pods).prop_map(Op::Bind),
        1 => (0..pods).prop_map(Op::Deallocate),
    ]
}

/// Node `i`'s slices: devices `gpu-j` with a `kind`; partitioned nodes add two halves
/// per GPU, all drawing "memory" from one counter set per GPU, published in a second
/// slice of the pool (a slice holds counter sets or devices, not both).
fn slices(i: usize, n: &NodeSpec) -> Vec<ResourceSlice> {
    let mut devices: Vec<Value> = Vec::new();
    let mut sets = Vec::new();
    for (j, kind) in n.gpus.iter().enumerate() {
        let consumes = |m: &str| json!([{"counterSet": format!("gpu-{j}"), "counters": {"memory": {"value": m}}}]);
        if n.partitioned {
            sets.push(json!({"name": format!("gpu-{j}"), "counters": {"memory": {"value": "8Gi"}}}));
            devices.push(json!({"name": format!("gpu-{j}"), "attributes": {"kind": {"int": kind}}, "consumesCounters": consumes("8Gi")}));
            for h in 0..2 {
                devices.push(json!({"name": format!("gpu-{j}-half-{h}"), "attributes": {"kind": {"int": kind}},
                    "consumesCounters": consumes("4Gi")}));
            }
        } else if n.shared {
            devices.push(json!({"name": format!("gpu-{j}"), "attributes": {"kind": {"int": kind}},
                "allowMultipleAllocations": true, "capacity": {"memory": {"value": "8Gi"}}}));
        } else {
            devices.push(json!({"name": format!("gpu-{j}"), "attributes": {"kind": {"int": kind}}}));
        }
    }
    let count = if sets.is_empty() { 1 } else { 2 };
    let pool = json!({"name": format!("node-{i}"), "generation": 1, "resourceSliceCount": count});
    let mut out = vec![
        serde_json::from_value(json!({"metadata": {"name": format!("node-{i}")}, "spec": {"driver": DRIVER,
            "nodeName": format!("node-{i}"), "pool": pool, "devices": devices}}))
        .unwrap(),
    ];
    if !sets.is_empty() {
        out.push(
            serde_json::from_value(
                json!({"metadata": {"name": format!("node-{i}-counters")}, "spec": {"driver": DRIVER,
                "nodeName": format!("node-{i}"), "pool": pool, "sharedCounters": sets}}),
            )
            .unwrap(),
        );
    }
    out
}

fn claim(i: usize, c: &ClaimSpec) -> ResourceClaim {
    let mut exactly = json!({"deviceClassName": "gpu"});
    if c.all {
        exactly["allocationMode"] = json!("All");
    } else {
        exactly["count"] = json!(c.count);
    }
    if c.admin {
        exactly["adminAccess"] = json!(true);
    }
    if let Some(gi) = c.memory {
        exactly["capacity"] = json!({"requests": {"memory": format!("{gi}Gi")}});
    }
    if let Some(k) = c.kind {
        exactly["selectors"] = json!([{"cel": {"expression": format!("device.attributes[\"{DRIVER}\"].kind == {k}")}}]);
    }
    let constraints = if c.match_kind { json!([{"matchAttribute": format!("{DRIVER}/kind")}]) } else { json!([]) };
    serde_json::from_value(json!({"metadata": {"name": format!("claim-{i}"), "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "r", "exactly": exactly}], "constraints": constraints}}}))
    .unwrap()
}

fn pod(i: usize) -> Pod {
    let mut p = Pod::default();
    p.metadata.name = format!("pod-{i}");
    p.metadata.namespace = "default".into();
    p.spec.resource_claims.push(PodResourceClaim {
        name: "c".into(),
        resource_claim_name: Some(format!("claim-{i}")),
        resource_claim_template_name: None,
        pod_group_resource_claim: None,
    });
    p
}

fn store(nodes: &[NodeSpec], claims: &[ClaimSpec]) -> DraStore {
    let s = DraStore::new();
    s.set_namespace_labels("default", [(schedkit::dra::ADMIN_ACCESS_NAMESPACE_LABEL.into(), "true".into())].into());
    s.add_class(driver_class("gpu", DRIVER)).unwrap();
    for (i, n) in nodes.iter().enumerate() {
        for slice in slices(i, n) {
            s.add_slice(slice).unwrap();
        }
    }
    for (i, c) in claims.iter().enumerate() {
        s.add_claim(claim(i, c)).unwrap();
    }
    s
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn no_device_twice_and_counters_hold(
        nodes in prop::collection::vec(node_spec(), 1..4),
        claims in prop::collection::vec(claim_spec(), 1..7),
        ops in prop::collection::vec(op(6, 3), 1..40),
    ) {
        let s = store(&nodes, &claims);
        for o in ops {
            match o {
                Op::Reserve(p, n) if p < claims.len() && n < nodes.len() => {
                    // An All request with matchAttribute over devices of several kinds is
                    // an error upstream (`allocateDevice` with `must`); nothing is reserved.
                    match s.reserve(&pod(p), &format!("uid-{p}"), &format!("node-{n}"), &Labels::default()) {
                        Ok(_) | Err(GatherError::Alloc(AllocError::ConstraintViolated { .. })) => {}
                        Err(e) => prop_assert!(false, "reserve failed: {e}"),
                    }
                }
                Op::Unreserve(p) => s.unreserve(&format!("uid-{p}")),
                Op::Bind(p) if p < claims.len() && !s.inflight(&format!("uid-{p}")).is_empty() => {
                    s.commit(&pod(p), &format!("uid-{p}"));
                }
                Op::Deallocate(p) if p < claims.len() => {
                    s.deallocate("default", &format!("claim-{p}"));
                }
                _ => {}
            }
            prop_assert_eq!(s.audit(), Audit::default());
        }
    }

    /// Filter (`PodClaims::fits`, which asks the quick search first) says "fits" on a
    /// node exactly when the allocation (the full search) finds devices there, and fails
    /// with the same error, whatever is already reserved or bound.
    #[test]
    fn filter_agrees_with_allocation(
        nodes in prop::collection::vec(node_spec(), 1..4),
        claims in prop::collection::vec(claim_spec(), 1..6),
        ops in prop::collection::vec(op(5, 3), 0..8),
    ) {
        let s = store(&nodes, &claims);
        for o in ops {
            match o {
                Op::Reserve(p, n) if p < claims.len() && n < nodes.len() => {
                    let _ = s.reserve(&pod(p), &format!("uid-{p}"), &format!("node-{n}"), &Labels::default());
                }
                Op::Bind(p) if p < claims.len() && !s.inflight(&format!("uid-{p}")).is_empty() => {
                    s.commit(&pod(p), &format!("uid-{p}"));
                }
                _ => {}
            }
        }
        let labels = Labels::default();
        for p in 0..claims.len() {
            let Some(pc) = s.gather(&pod(p)).unwrap() else { continue };
            for n in 0..nodes.len() {
                let node = format!("node-{n}");
                let filter = pc.fits(Symbol::intern(&node), &labels);
                let alloc = s.allocate_claims(&[("default", &format!("claim-{p}"))], &node, &labels);
                match (&filter, &alloc) {
                    (Ok(Ok(())), Ok(NodeResult::Fit(_))) | (Ok(Err(_)), Ok(NodeResult::NoFit(_))) => {}
                    (Err(e), Err(GatherError::Alloc(a))) => prop_assert_eq!(e, a),
                    _ => prop_assert!(false, "claim-{p} on {node}: Filter {filter:?}, allocation {alloc:?}"),
                }
            }
        }
    }

    #[test]
    fn all_gets_every_matching_device(node in node_spec(), kind in 0i64..3, taken in prop::option::of(0usize..5)) {
        let node = NodeSpec { shared: false, ..node };
        let mut claims = vec![ClaimSpec { count: 1, all: true, admin: false, kind: Some(kind), match_kind: false, memory: None }];
        if taken.is_some() {
            claims.push(ClaimSpec { count: 1, all: false, admin: false, kind: None, match_kind: false, memory: None });
        }
        let s = store(std::slice::from_ref(&node), &claims);
        let mut held: BTreeSet<String> = BTreeSet::new();
        if taken.is_some()
            && let NodeResult::Fit(l) = s.reserve(&pod(1), "uid-1", "node-0", &Labels::default()).unwrap() {
            held.extend(l[0].1.devices.results.iter().map(|r| r.device.clone()));
        }
        let matching: BTreeSet<String> = slices(0, &node)[0]
            .spec
            .devices
            .iter()
            .filter(|d| d.attributes["kind"].int == Some(kind))
            .map(|d| d.name.clone())
            .collect();
        let res = s.allocate_claims(&[("default", "claim-0")], "node-0", &Labels::default()).unwrap();
        // Partitioned nodes: a whole GPU and its halves can't all be taken (counters), so
        // All fails there unless nothing matches... which also fails. Only plain nodes
        // can satisfy All.
        let blocked = node.partitioned || matching.is_empty() || matching.iter().any(|m| held.contains(m));
        match res {
            NodeResult::Fit(l) => {
                prop_assert!(!blocked, "All succeeded although blocked");
                let got: BTreeSet<String> = l[0].1.devices.results.iter().map(|r| r.device.clone()).collect();
                prop_assert_eq!(got, matching);
            }
            NodeResult::NoFit(_) => prop_assert!(blocked, "All failed although every matching device was free"),
        }
    }
}
