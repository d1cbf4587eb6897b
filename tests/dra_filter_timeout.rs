//! DynamicResources `filterTimeout` (upstream `DynamicResourcesArgs.FilterTimeout`,
//! default 10 s, 0 disables; `dynamicresources.go` Filter wraps the allocator in
//! `context.WithTimeout` and turns `context.DeadlineExceeded` into Unschedulable
//! "timed out trying to allocate devices"). The tests drive the plugin with a clock that
//! moves one second per reading, so they are deterministic and also count how often the
//! search looks at the clock.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

#[path = "support/dra.rs"]
mod dra_support;
use dra_support::{driver_class, node_slice};

use schedkit::dra::{DraStore, ResourceClaim};
use schedkit::framework::{Clock, Code, CycleState, Feature, FilterPlugin, Handle, PreFilterPlugin};
use schedkit::model::{Pod, PodResourceClaim};
use schedkit::plugins::dynamic_resources::DynamicResources;
use schedkit::snapshot::{NodeInfo, PodInfo, Snapshot};
use schedkit::testing::NodeBuilder;

const DRIVER: &str = "driver-a";

/// Each reading is one second later than the one before.
#[derive(Debug, Default)]
struct Ticking(AtomicU64);

impl Clock for Ticking {
    fn now(&self) -> Duration {
        Duration::from_secs(self.0.fetch_add(1, Ordering::SeqCst) + 1)
    }
}

impl Ticking {
    fn readings(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}

/// A store with 40 devices on `node-1`, each with its own `numa` value, and the claims
/// `claim-0`, `claim-1`, ... with these requests and constraints.
fn store(claims: &[(Value, Value)]) -> Arc<DraStore> {
    let store = Arc::new(DraStore::new());
    store.add_class(driver_class("class-a", DRIVER)).unwrap();
    let devices: Value =
        (0..40).map(|i| json!({"name": format!("device-{i}"), "attributes": {"numa": {"int": i}}})).collect();
    store.add_slice(node_slice("slice-1", DRIVER, "node-1", &devices)).unwrap();
    for (i, (requests, constraints)) in claims.iter().enumerate() {
        let claim: ResourceClaim = serde_json::from_value(json!({
            "metadata": {"name": format!("claim-{i}"), "namespace": "default"},
            "spec": {"devices": {"requests": requests, "constraints": constraints}}}))
        .unwrap();
        store.add_claim(claim).unwrap();
    }
    store
}

fn eight() -> Value {
    json!([{"name": "req-0", "exactly": {"deviceClassName": "class-a", "count": 8}}])
}

/// The step-budget case of `dra_allocator.rs`: 8 devices with distinct `numa` values,
/// then 8 more sharing one value, which no two devices do; every one of the C(40, 8)
/// choices for the first claim is tried before the search gives up.
fn pathological() -> Arc<DraStore> {
    store(&[
        (eight(), json!([{"distinctAttribute": "driver-a/numa"}])),
        (eight(), json!([{"matchAttribute": "driver-a/numa"}])),
    ])
}

fn filter(plugin: &DynamicResources) -> schedkit::framework::Status {
    let mut pod = Pod::default();
    pod.metadata.name = "p".into();
    pod.metadata.namespace = "default".into();
    for i in 0..2 {
        pod.spec.resource_claims.push(PodResourceClaim {
            name: format!("c{i}"),
            resource_claim_name: Some(format!("claim-{i}")),
            resource_claim_template_name: None,
            pod_group_resource_claim: None,
        });
    }
    let pod = PodInfo::new(pod).unwrap();
    let node = NodeInfo::new(Arc::new(NodeBuilder::new("node-1").cpu("8").build()));
    let snapshot = Snapshot::from_nodes([node.clone()]);
    let mut state = CycleState::new();
    let (_, status) = plugin.pre_filter(&mut state, &pod, &snapshot);
    assert!(status.is_success(), "{status:?}");
    plugin.filter(&state, &pod, &node)
}

fn from_args(store: Arc<DraStore>, args: &Value) -> DynamicResources {
    let handle = Handle::default();
    handle.set_shared(store);
    DynamicResources::from_config(Some(args), &handle).unwrap()
}

#[test]
fn default_timeout_makes_the_node_unschedulable() {
    // Upstream default 10 s: the search reads the clock every 1024 steps, so with one
    // second per reading the 12th reading is 11 s past the first and stops it, long
    // before the step budget (1,000,000).
    let clock = Arc::new(Ticking::default());
    let plugin = DynamicResources::new(pathological()).with_clock(clock.clone());
    let status = filter(&plugin);
    assert_eq!(status.code(), Code::Unschedulable);
    assert_eq!(status.message(), "timed out trying to allocate devices");
    assert_eq!(clock.readings(), 12);
}

#[test]
fn configured_timeout_applies() {
    // `filterTimeout: 2s`: stopped at the 4th reading (3 s after the first).
    let clock = Arc::new(Ticking::default());
    let plugin = from_args(pathological(), &json!({"filterTimeout": "2s"})).with_clock(clock.clone());
    assert_eq!(filter(&plugin).message(), "timed out trying to allocate devices");
    assert_eq!(clock.readings(), 4);
}

#[test]
fn zero_timeout_disables_it() {
    // "Setting it to zero completely disables the timeout": only the step budget stops
    // the search, with an error, and the clock is never read.
    let store = pathological();
    store.set_step_budget(20_000);
    let clock = Arc::new(Ticking::default());
    let plugin = from_args(store, &json!({"filterTimeout": "0s"})).with_clock(clock.clone());
    let status = filter(&plugin);
    assert_eq!(status.code(), Code::Error);
    assert_eq!(status.message(), "allocation search exceeded its budget of 20000 steps");
    assert_eq!(clock.readings(), 0);
}

#[test]
fn short_searches_never_read_the_clock() {
    // A claim that fits at once takes a handful of steps: even a 1 ns timeout never
    // fires, because the clock is first read after 1024 steps.
    let store = store(&[(eight(), json!([])), (eight(), json!([]))]);
    let clock = Arc::new(Ticking::default());
    let plugin = DynamicResources::new(store).with_clock(clock.clone()).with_filter_timeout(Duration::from_nanos(1));
    assert!(filter(&plugin).is_success());
    assert_eq!(clock.readings(), 0);
}

#[test]
fn negative_timeout_is_rejected() {
    let handle = Handle::default();
    handle.set_shared(pathological());
    let err = DynamicResources::from_config(Some(&json!({"filterTimeout": "-1s"})), &handle).unwrap_err();
    assert_eq!(err.to_string(), "DynamicResourcesArgs.filterTimeout: must not be negative");
}

#[test]
fn feature_switch_off_disables_it() {
    // Upstream applies the timeout only with `DRASchedulerFilterTimeout` (beta, on).
    let store = pathological();
    store.set_step_budget(20_000);
    store.set_feature_gates(store.feature_gates().with(Feature::DRASchedulerFilterTimeout, false));
    let clock = Arc::new(Ticking::default());
    let plugin = DynamicResources::new(store).with_clock(clock.clone());
    assert_eq!(filter(&plugin).code(), Code::Error);
    assert_eq!(clock.readings(), 0);
}
