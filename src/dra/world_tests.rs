//! Unit tests of the device world: pools whose slices share counter sets.

use super::*;
use serde_json::json;

fn slices(list: &[serde_json::Value]) -> BTreeMap<String, Arc<ResourceSlice>> {
    list.iter()
        .map(|v| {
            let s: ResourceSlice = serde_json::from_value(v.clone()).unwrap();
            (s.metadata.name.clone(), Arc::new(s))
        })
        .collect()
}

fn pool_slices(count: i64) -> BTreeMap<String, Arc<ResourceSlice>> {
    let pool = json!({"name": "pool-1", "generation": 1, "resourceSliceCount": count});
    slices(&[
        json!({"metadata": {"name": "counters"}, "spec": {"driver": "d", "nodeName": "node-1", "pool": pool,
            "sharedCounters": [{"name": "set", "counters": {"mem": {"value": "4"}}}]}}),
        json!({"metadata": {"name": "devices"}, "spec": {"driver": "d", "nodeName": "node-1", "pool": pool,
            "devices": [{"name": "dev", "consumesCounters": [{"counterSet": "set", "counters": {"mem": {"value": "1"}}}]}]}}),
    ])
}

#[test]
fn per_node_pools_with_counter_sets_are_judged_once() {
    // A node's partitionable pool (a counter-set slice, which every node gathers, and
    // a device slice for the node) is filed under its node at build time, so Filter
    // on other nodes does no per-call work for it.
    let w = build(&pool_slices(2), 1, &[], &AHashMap::new(), crate::framework::FeatureGates::default());
    assert!(w.per_node_pools.is_empty() && w.bad_on_node.is_empty() && w.bad_everywhere.is_empty());
    // Announcing three slices: incomplete on node-1 and, through the counter set,
    // everywhere else too, so judged per node.
    let w = build(&pool_slices(3), 1, &[], &AHashMap::new(), crate::framework::FeatureGates::default());
    assert_eq!(w.per_node_pools, [0]);
    let labels = Labels::default();
    assert_eq!(w.node_problems(Symbol::intern("node-2"), &labels).as_slice(), [(0, PoolProblem::Incomplete)]);
}
