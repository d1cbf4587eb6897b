//! NodeResourcesFit's Score of extended resources backed by DRA device classes
//! (KEP-5004, kubernetes/kubernetes#134058): on a node that does not list the resource,
//! allocatable is the number of the class's devices the node reaches and requested is
//! those already allocated plus the pod's request. Cases after upstream
//! `TestCalculateResourceAllocatableRequest` (`noderesources/resource_allocation_test.go`).

use std::sync::Arc;

use serde_json::{Value, json};

use schedkit::dra::{DraStore, ResourceClaim};
use schedkit::framework::{CycleState, Profile, ScorePlugin};
use schedkit::model::{Labels, Node, Symbol};
use schedkit::plugins::default_binder::DefaultBinder;
use schedkit::plugins::dynamic_resources::DynamicResources;
use schedkit::plugins::node_resources::{Fit, FitArgs, ResourceSpec, ScoringStrategy, ScoringStrategyType};
use schedkit::plugins::priority_sort::PrioritySort;
use schedkit::scheduler::Scheduler;
use schedkit::snapshot::{NodeInfo, PodInfo};
use schedkit::testing::{NodeBuilder, PodBuilder};

const DRIVER: &str = "test-driver";
const CLASS: &str = "device-class-name";
const EXPLICIT: &str = "example.com/gpu";
const IMPLICIT: &str = "deviceclass.resource.kubernetes.io/device-class-name";
const NODE: &str = "resource-node";

fn class(selectors: &[&str]) -> Value {
    let sel: Vec<Value> = selectors.iter().map(|e| json!({"cel": {"expression": e}})).collect();
    json!({"metadata": {"name": CLASS}, "spec": {"extendedResourceName": EXPLICIT, "selectors": sel}})
}

fn slice(node: &str, devices: &[Value]) -> Value {
    json!({"metadata": {"name": format!("{node}-slice")},
        "spec": {"driver": DRIVER, "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1}, "devices": devices}})
}

fn named(n: &str) -> Value {
    json!({"name": n})
}

fn shared(n: &str) -> Value {
    json!({"name": n, "allowMultipleAllocations": true})
}

/// A claim of the class holding `device` (of pool `pool`), optionally one share of it.
fn allocated(name: &str, pool: &str, device: &str, share: Option<&str>) -> ResourceClaim {
    let mut result = json!({"request": "req-1", "driver": DRIVER, "pool": pool, "device": device});
    if let Some(s) = share {
        result["shareID"] = json!(s);
    }
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "req-1", "exactly": {"deviceClassName": CLASS}}]}},
        "status": {"allocation": {"devices": {"results": [result]}}}
    }))
    .unwrap()
}

fn store(class: Option<Value>, slices: Vec<Value>, claims: Vec<ResourceClaim>) -> Arc<DraStore> {
    let s = Arc::new(DraStore::new());
    if let Some(c) = class {
        s.add_class(serde_json::from_value(c).unwrap()).unwrap();
    }
    for sl in slices {
        s.add_slice(serde_json::from_value(sl).unwrap()).unwrap();
    }
    for c in claims {
        s.add_claim(c).unwrap();
    }
    s
}

fn fit(kind: ScoringStrategyType, resource: &str) -> Fit {
    Fit::new(&FitArgs {
        scoring_strategy: ScoringStrategy {
            kind,
            resources: vec![ResourceSpec::new(resource, 1)],
            requested_to_capacity_ratio: None,
        },
        ..FitArgs::default()
    })
    .unwrap()
}

fn score(fit: &Fit, resource: &str, request: &str, node: Node) -> i64 {
    let pod = PodInfo::new(PodBuilder::new("p").request(resource, request).build()).unwrap();
    fit.score(&CycleState::new(), &pod, &NodeInfo::new(Arc::new(node))).unwrap()
}

/// `(allocatable, requested)` as NodeResourcesFit scores them, read off MostAllocated
/// (`requested * 100 / allocatable`) and LeastAllocated (`(allocatable - requested) * 100
/// / allocatable`) of a one-resource strategy, plus the store's device counts.
fn check(name: &str, s: Option<&Arc<DraStore>>, resource: &str, node: &Node, want: (i64, i64)) {
    let (alloc, req) = want;
    let with = |kind| {
        let f = fit(kind, resource);
        let f = match s {
            Some(s) => f.with_device_classes(s.clone()),
            None => f,
        };
        score(&f, resource, "1", node.clone())
    };
    let (most, least) = if alloc == 0 {
        (0, 0)
    } else {
        (req.min(alloc) * 100 / alloc, if req > alloc { 0 } else { (alloc - req) * 100 / alloc })
    };
    assert_eq!(with(ScoringStrategyType::MostAllocated), most, "{name}: MostAllocated");
    assert_eq!(with(ScoringStrategyType::LeastAllocated), least, "{name}: LeastAllocated");
}

fn plain_node() -> Node {
    NodeBuilder::new(NODE).cpu("8").memory("8Gi").pods(10).build()
}

/// Upstream `TestCalculateResourceAllocatableRequest`, case by case.
#[test]
fn allocatable_and_requested_like_upstream() {
    let listed = || NodeBuilder::new(NODE).cpu("8").memory("8Gi").pods(10).allocatable(EXPLICIT, "4").build();
    // "device-plugin-resource-feature-disabled": the node's listed 4, the pod's 1.
    check("device-plugin-resource-feature-disabled", None, EXPLICIT, &listed(), (4, 1));
    // "device-plugin-resource-feature-enabled": a node listing the resource keeps its
    // device-plugin numbers even with a class and devices around.
    let s = store(Some(class(&[])), vec![slice(NODE, &[named("device-1")])], vec![]);
    check("device-plugin-resource-feature-enabled", Some(&s), EXPLICIT, &listed(), (4, 1));
    // "DRA-backed-resource-explicit": one device, none allocated.
    check("DRA-backed-resource-explicit", Some(&s), EXPLICIT, &plain_node(), (1, 1));
    // "DRA-backed-resource-implicit": the class's implicit name.
    check("DRA-backed-resource-implicit", Some(&s), IMPLICIT, &plain_node(), (1, 1));
    // "DRA-backed-resource-no-slices": nothing to count, the resource is left out.
    let s = store(Some(class(&[])), vec![], vec![]);
    check("DRA-backed-resource-no-slices", Some(&s), EXPLICIT, &plain_node(), (0, 0));
    // "DRA-backed-resource-with-allocated-device": 2 devices, 1 held by a claim.
    let s = store(
        Some(class(&[])),
        vec![slice(NODE, &[named("device-1"), named("device-2")])],
        vec![allocated("test-claim", NODE, "device-1", None)],
    );
    check("DRA-backed-resource-with-allocated-device", Some(&s), EXPLICIT, &plain_node(), (2, 2));
    // "DRA-backed-resource-with-shared-device-allocation": a share counts the device.
    let s = store(
        Some(class(&[])),
        vec![slice(NODE, &[shared("device-1"), shared("device-2")])],
        vec![allocated("test-claim", NODE, "device-1", Some("share-123"))],
    );
    check("DRA-backed-resource-with-shared-device-allocation", Some(&s), EXPLICIT, &plain_node(), (2, 2));
    // "DRA-backed-resource-multiple-devices-mixed-allocation": one whole, one shared, one free.
    let s = store(
        Some(class(&[])),
        vec![slice(NODE, &[named("device-1"), shared("device-2"), named("device-3")])],
        vec![
            allocated("test-claim-1", NODE, "device-1", None),
            allocated("test-claim-2", NODE, "device-2", Some("share-456")),
        ],
    );
    check("DRA-backed-resource-multiple-devices-mixed-allocation", Some(&s), EXPLICIT, &plain_node(), (3, 3));
}

/// Upstream case "DRA-backed-resource-with-per-device-node-selection": a slice with
/// per-device node selection, a class selecting on attributes and capacity; the node
/// reaches device-1 by name and device-3 by label, not device-2.
#[test]
fn per_device_node_selection_and_class_selectors() {
    let dev = |name: &str, model: &str, mem: &str, reach: Value| {
        let mut d = json!({"name": name, "attributes": {"model": {"string": model}},
            "capacity": {"memory": {"value": mem}}});
        for (k, v) in reach.as_object().unwrap() {
            d[k] = v.clone();
        }
        d
    };
    let zone = json!({"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "zone", "operator": "In", "values": ["us-east-1a"]}]}]});
    let slice = json!({"metadata": {"name": "per-device-slice"},
    "spec": {"driver": DRIVER, "perDeviceNodeSelection": true,
        "pool": {"name": "per-device-pool", "generation": 1, "resourceSliceCount": 1},
        "devices": [
            dev("device-1", "SOME-XYZ", "16Gi", json!({"nodeName": NODE})),
            dev("device-2", "SOME-ZYX", "12Gi", json!({"nodeName": "other-node"})),
            dev("device-3", "SOME-XZY", "24Gi", json!({"nodeSelector": zone})),
        ]}});
    let expr = format!(
        "device.driver == \"{DRIVER}\" && device.capacity[\"{DRIVER}\"].memory.compareTo(quantity(\"8Gi\")) >= 0 \
         && device.attributes[\"{DRIVER}\"].model.startsWith(\"SOME-\")"
    );
    let s =
        store(Some(class(&[&expr])), vec![slice], vec![allocated("test-claim", "per-device-pool", "device-1", None)]);
    let node = NodeBuilder::new(NODE).cpu("8").memory("8Gi").pods(10).label("zone", "us-east-1a").build();
    let view = s.extended_device_counts(&[EXPLICIT]).expect("a class maps the resource");
    let labels = node.metadata.labels.clone();
    assert_eq!(view.counts(0, Symbol::intern(NODE), &labels), Some((2, 1)));
    check("DRA-backed-resource-with-per-device-node-selection", Some(&s), EXPLICIT, &node, (2, 2));
    // Without the label the node reaches only device-1.
    assert_eq!(view.counts(0, Symbol::intern(NODE), &Labels::default()), Some((1, 1)));
}

#[test]
fn no_view_without_a_backed_resource() {
    let s = store(Some(class(&[])), vec![slice(NODE, &[named("device-1")])], vec![]);
    assert!(s.extended_device_counts(&["cpu", "memory"]).is_none());
    assert!(s.extended_device_counts(&["example.com/fpga"]).is_none());
    let view = s.extended_device_counts(&["cpu", EXPLICIT]).unwrap();
    assert_eq!(view.counts(0, Symbol::intern(NODE), &Labels::default()), None);
    assert_eq!(view.counts(1, Symbol::intern(NODE), &Labels::default()), Some((1, 0)));
    // A pod not requesting the resource leaves it out (score 0 with nothing else scored).
    let f = fit(ScoringStrategyType::MostAllocated, EXPLICIT).with_device_classes(s.clone());
    let pod = PodInfo::new(PodBuilder::new("p").cpu("1").build()).unwrap();
    assert_eq!(f.score(&CycleState::new(), &pod, &NodeInfo::new(Arc::new(plain_node()))).unwrap(), 0);
}

/// A class selector failing at run time on a device the node reaches: upstream logs the
/// error and scores the resource as absent on that node.
#[test]
fn a_failing_selector_leaves_the_resource_out() {
    let s = store(
        Some(class(&["device.attributes[\"test-driver\"].missing == \"x\""])),
        vec![slice(
            NODE,
            &[named("device-1"), json!({"name": "device-2", "attributes": {"missing": {"string": "x"}}})],
        )],
        vec![],
    );
    // device-2 matches, device-1 has no such attribute: an error, not a mismatch.
    let view = s.extended_device_counts(&[EXPLICIT]).unwrap();
    assert_eq!(view.counts(0, Symbol::intern(NODE), &Labels::default()), Some((0, 0)));
    check("failing selector", Some(&s), EXPLICIT, &plain_node(), (0, 0));
    // Without device-1 the same class counts device-2.
    let s = store(
        Some(class(&["device.attributes[\"test-driver\"].missing == \"x\""])),
        vec![slice(NODE, &[json!({"name": "device-2", "attributes": {"missing": {"string": "x"}}})])],
        vec![],
    );
    let view = s.extended_device_counts(&[EXPLICIT]).unwrap();
    assert_eq!(view.counts(0, Symbol::intern(NODE), &Labels::default()), Some((1, 0)));
}

/// Two nodes without the device plugin resource: `node-a` has 4 devices of which 2 are
/// allocated, `node-b` 8 free ones. A one-GPU pod scores 75 vs 12 with MostAllocated
/// (`3/4`, `1/8`) and 25 vs 87 with LeastAllocated, and the scheduler places it
/// accordingly.
#[test]
fn most_and_least_allocated_pick_nodes_by_device_counts() {
    let devices = |n: usize| (0..n).map(|i| named(&format!("gpu-{i}"))).collect::<Vec<_>>();
    let build = || {
        store(
            Some(class(&[])),
            vec![slice("node-a", &devices(4)), slice("node-b", &devices(8))],
            vec![allocated("held-0", "node-a", "gpu-0", None), allocated("held-1", "node-a", "gpu-1", None)],
        )
    };
    let node = |n: &str| NodeBuilder::new(n).cpu("8").memory("8Gi").pods(10).build();
    for (kind, want_scores, want_node) in [
        (ScoringStrategyType::MostAllocated, [75, 12], "node-a"),
        (ScoringStrategyType::LeastAllocated, [25, 87], "node-b"),
    ] {
        let s = build();
        let f = fit(kind, EXPLICIT).with_device_classes(s.clone());
        assert_eq!(
            [score(&f, EXPLICIT, "1", node("node-a")), score(&f, EXPLICIT, "1", node("node-b"))],
            want_scores,
            "{kind:?}"
        );
        let profile = Profile::builder("default-scheduler")
            .plugin(PrioritySort)
            .plugin(f)
            .plugin(DynamicResources::new(s.clone()))
            .plugin(DefaultBinder::default())
            .build()
            .unwrap();
        let mut sched = Scheduler::builder().profile(profile).build();
        sched.add_node(node("node-a")).unwrap();
        sched.add_node(node("node-b")).unwrap();
        let b = sched.schedule_pod(PodBuilder::new("p").cpu("1").request(EXPLICIT, "1").build()).unwrap();
        assert_eq!(b.node(), want_node, "{kind:?}");
    }
}

/// BalancedAllocation counts devices the same way (upstream's scorer is shared): with
/// `[cpu, example.com/gpu]`, a pod of 1 CPU (of 8) and 1 GPU balances 1/8 CPU against
/// 3/4 GPUs on `node-a` (4 devices, 2 allocated), `(1 - 0.3125) * 100`, and 1/8 against
/// 1/8 on `node-b` (8 free). Without the resolver the GPU is left out and both score 100.
#[test]
fn balanced_allocation_balances_device_counts() {
    use schedkit::plugins::node_resources::{BalancedAllocation, BalancedAllocationArgs, BalancedScoring};
    let devices = |n: usize| (0..n).map(|i| named(&format!("gpu-{i}"))).collect::<Vec<_>>();
    let s = store(
        Some(class(&[])),
        vec![slice("node-a", &devices(4)), slice("node-b", &devices(8))],
        vec![allocated("held-0", "node-a", "gpu-0", None), allocated("held-1", "node-a", "gpu-1", None)],
    );
    let args = BalancedAllocationArgs {
        resources: vec![ResourceSpec::new("cpu", 1), ResourceSpec::new(EXPLICIT, 1)],
        scoring: BalancedScoring::BalanceAfterPlacement,
    };
    let pod = PodInfo::new(PodBuilder::new("p").cpu("1").request(EXPLICIT, "1").build()).unwrap();
    let node = |n: &str| NodeInfo::new(Arc::new(NodeBuilder::new(n).cpu("8").memory("8Gi").pods(10).build()));
    let scores = |ba: &BalancedAllocation| {
        [node("node-a"), node("node-b")].map(|n| ba.score(&CycleState::new(), &pod, &n).unwrap())
    };
    let with = BalancedAllocation::new(&args).unwrap().with_device_classes(s.clone());
    assert_eq!(scores(&with), [68, 100]);
    let without = BalancedAllocation::new(&args).unwrap();
    assert_eq!(scores(&without), [100, 100]);
}
