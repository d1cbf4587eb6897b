//! The soak's DRA side: a GPU ResourceSlice per node, the claim templates pods draw
//! from, and the check of every claim's allocation against the soak's own model.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::json;

use super::model::{Model, PodWhere};
use crate::dra::{AllocationResult, DraError, DraStore, ResourceSlice};

/// Namespace of the soak's pods, claims and gangs.
pub(super) const NAMESPACE: &str = "default";
/// The driver publishing the soak's GPUs (and its device class's name).
pub(super) const DRIVER: &str = "gpu.soak.schedkit.dev";
/// The name of a pod's claim entry (`spec.resourceClaims[0].name`).
pub(super) const CLAIM: &str = "gpu";
/// GPU products, by [`product_of`].
const PRODUCTS: [&str; 2] = ["soak-gpu-a", "soak-gpu-b"];

/// A claim template: GPUs per claim and, for some, the product its selector names.
#[derive(Debug, Clone, Copy)]
pub(super) struct Template {
    pub(super) name: &'static str,
    pub(super) count: i64,
    pub(super) product: Option<usize>,
}

/// The templates pods draw from.
pub(super) const TEMPLATES: [Template; 4] = [
    Template { name: "gpu-1", count: 1, product: None },
    Template { name: "gpu-2", count: 2, product: None },
    Template { name: "gpu-4", count: 4, product: None },
    Template { name: "gpu-2-a", count: 2, product: Some(0) },
];

/// GPUs node `index` publishes: 8 on every fourth node, 4 elsewhere.
pub(super) fn gpus_on(index: usize) -> i64 {
    if index.is_multiple_of(4) { 8 } else { 4 }
}

/// The product of node `index`'s GPUs.
pub(super) fn product_of(index: usize) -> usize {
    (index / 2) % PRODUCTS.len()
}

/// The claim a pod's template makes (`<pod name>-<claim entry>`; pods are named by uid).
pub(super) fn claim_name(uid: &str) -> String {
    format!("{uid}-{CLAIM}")
}

/// A store with the soak's device class and claim templates.
pub(super) fn store() -> Result<Arc<DraStore>, DraError> {
    let store = Arc::new(DraStore::new());
    let class = serde_json::from_value(json!({
        "metadata": {"name": DRIVER},
        "spec": {"selectors": [{"cel": {"expression": format!("device.driver == \"{DRIVER}\"")}}]}
    }))
    .map_err(|e| DraError::InvalidClaim { claim: DRIVER.into(), reason: e.to_string() })?;
    store.add_class(class)?;
    for t in TEMPLATES {
        let selectors = match t.product {
            Some(p) => json!([{"cel": {"expression":
                format!("device.attributes[\"{DRIVER}\"].productName == \"{}\"", PRODUCTS[p])}}]),
            None => json!([]),
        };
        let template = serde_json::from_value(json!({
            "metadata": {"name": t.name, "namespace": NAMESPACE},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpus", "exactly": {
                "deviceClassName": DRIVER, "count": t.count, "selectors": selectors}}]}}}
        }))
        .map_err(|e| DraError::InvalidClaim { claim: t.name.into(), reason: e.to_string() })?;
        store.add_template(template)?;
    }
    Ok(store)
}

/// Node `index`'s slice: `gpus` devices `gpu-<i>` in the pool named after the node.
pub(super) fn slice(node: &str, index: usize, gpus: i64, generation: i64) -> Result<ResourceSlice, DraError> {
    let devices: Vec<_> = (0..gpus)
        .map(|g| {
            json!({"name": format!("gpu-{g}"), "attributes": {
                "productName": {"string": PRODUCTS[product_of(index)]}, "index": {"int": g}}})
        })
        .collect();
    serde_json::from_value(json!({
        "metadata": {"name": slice_name(node)},
        "spec": {"driver": DRIVER, "nodeName": node,
                 "pool": {"name": node, "generation": generation, "resourceSliceCount": 1},
                 "devices": devices}
    }))
    .map_err(|e| DraError::InvalidClaim { claim: slice_name(node), reason: e.to_string() })
}

/// The name of a node's slice.
pub(super) fn slice_name(node: &str) -> String {
    format!("{node}-gpus")
}

/// Checks every claim against the model, independently of the store's own audit:
///
/// - every pod with a claim has it in the store;
/// - a placed pod's claim is allocated (in the store once bound, or in flight while
///   its binding is pending) with as many GPUs as its template asks, each one on the
///   pod's node, of the product the template selects, and existing there;
/// - a bound pod is in its claim's `reservedFor`, a pending pod in none;
/// - no GPU is held by two allocations.
///
/// Returns how many GPUs are held.
pub(super) fn check(store: &DraStore, model: &Model) -> Result<usize, String> {
    let mut holder: HashMap<(String, String), &str> = HashMap::new();
    for (uid, (spec, place, _)) in &model.pods {
        let Some(t) = spec.gpu.map(|t| TEMPLATES[t]) else { continue };
        let name = claim_name(uid);
        let Some(claim) = store.claim(NAMESPACE, &name) else {
            return Err(format!("pod {uid}'s claim {name} is missing from the store"));
        };
        let status = claim.status.as_ref();
        let reserved = status.is_some_and(|s| s.reserved_for.iter().any(|r| *r.uid == **uid));
        let stored = status.and_then(|s| s.allocation.clone());
        let inflight = store.inflight(uid).into_iter().map(|(_, a)| a).next();
        let allocation: Option<Arc<AllocationResult>> = stored.map(Arc::new).or(inflight.clone());
        match place {
            PodWhere::Pending => {
                if reserved || inflight.is_some() {
                    return Err(format!("pending pod {uid} holds claim {name} (reserved {reserved})"));
                }
            }
            PodWhere::Placed(index) => {
                let n = &model.nodes[*index];
                let Some(a) = &allocation else {
                    return Err(format!("pod {uid} is placed on {} but claim {name} is not allocated", n.name));
                };
                if model.bound.contains(uid) && (!reserved || status.and_then(|s| s.allocation.as_ref()).is_none()) {
                    return Err(format!("pod {uid} is bound but claim {name} is not allocated and reserved for it"));
                }
                let results = &a.devices.results;
                if results.len() as i64 != t.count {
                    return Err(format!("claim {name} holds {} GPUs, its template asks {}", results.len(), t.count));
                }
                for r in results {
                    let index_on_node = r.device.strip_prefix("gpu-").and_then(|g| g.parse::<i64>().ok());
                    if r.driver != DRIVER || r.pool != n.name || index_on_node.is_none_or(|g| g >= n.gpus) {
                        return Err(format!(
                            "claim {name} of pod {uid} on {} holds {}/{}/{}, not a GPU of that node",
                            n.name, r.driver, r.pool, r.device
                        ));
                    }
                    if t.product.is_some_and(|p| p != n.product) {
                        return Err(format!("claim {name} selects another product than {}'s GPUs", n.name));
                    }
                }
            }
        }
        for r in allocation.iter().flat_map(|a| a.devices.results.iter()) {
            if let Some(other) = holder.insert((r.pool.clone(), r.device.clone()), uid) {
                return Err(format!("GPU {}/{} is held by pods {other} and {uid}", r.pool, r.device));
            }
        }
    }
    Ok(holder.len())
}
