//! Building each claim's `AllocationResult` from the search's picks: devices, node
//! selector, configuration, binding conditions and consumed capacity.

use std::sync::Arc;

use smallvec::SmallVec;

use super::{ClaimPlan, Pick};
use crate::dra::types::{
    AllocationResult, DeviceAllocationConfiguration, DeviceAllocationResult, DeviceRequestAllocationResult,
};
use crate::dra::world::{Scope, World};
use crate::model::{NodeSelector, NodeSelectorOperator, NodeSelectorRequirement, NodeSelectorTerm, Symbol};

/// A class used by a claim's results: its name, the first `(request, alternative)` that
/// used it (whose class configs apply) and every result name that used it.
type ClassUse<'a> = (&'a str, u16, u16, Vec<String>);

/// A quantity in milli-units as Kubernetes would print it: the largest binary suffix
/// that divides it, else a plain integer, else milli-units.
fn quantity_text(milli: i128) -> String {
    if milli % 1000 != 0 {
        return format!("{milli}m");
    }
    let v = milli / 1000;
    for (suffix, shift) in [("Ei", 60), ("Pi", 50), ("Ti", 40), ("Gi", 30), ("Mi", 20), ("Ki", 10)] {
        let unit = 1i128 << shift;
        if v != 0 && v % unit == 0 {
            return format!("{}{suffix}", v / unit);
        }
    }
    v.to_string()
}

/// `consumedCapacity` and `shareID` for a result on a multi-allocatable device
/// (consumable capacity, KEP-5075); empty for exclusive devices and admin access.
fn share_fields(
    e: &crate::dra::world::DevEntry,
    alt: &crate::dra::compiled::Alternative,
    claim: &str,
    admin: bool,
) -> (std::collections::BTreeMap<String, crate::model::Quantity>, Option<String>) {
    let mut consumed = std::collections::BTreeMap::new();
    if !e.multi || admin {
        return (consumed, None);
    }
    let Some(amounts) = e.consumption(&alt.capacity) else { return (consumed, None) };
    for (si, milli) in amounts {
        let q = crate::model::Quantity::parse(&quantity_text(milli))
            .unwrap_or_else(|_| crate::model::Quantity::from_milli(i64::try_from(milli).unwrap_or(i64::MAX)));
        consumed.insert(e.shares[si].name.clone(), q);
    }
    // A stable UID-shaped id per (claim, request, device); upstream generates a random UID.
    let mut h = ahash::AHasher::default();
    std::hash::Hash::hash(&(claim, &alt.result_name, e.id.to_string()), &mut h);
    let a = std::hash::Hasher::finish(&h);
    std::hash::Hash::hash(&a, &mut h);
    let b = std::hash::Hasher::finish(&h);
    let id = format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xffff,
        b >> 48,
        b & 0xffff_ffff_ffff
    );
    (consumed, Some(id))
}

/// Builds each claim's `AllocationResult` from the picks (upstream
/// `allocator.go`, `createNodeSelector` for the node selector: any node-local device, or
/// with binding conditions enabled any device with `bindsToNode`, pins the allocation to
/// the node; otherwise the selectors of network-attached devices are merged into one
/// term; devices for all nodes add nothing). With binding conditions enabled each result
/// copies its device's binding and binding failure conditions
/// (`allocator_experimental.go`, `Allocate`).
pub(crate) fn results(
    world: &World,
    plans: &[ClaimPlan],
    picks: &[Pick],
    node: Symbol,
    binding: bool,
) -> Vec<AllocationResult> {
    let mut out = Vec::with_capacity(plans.len());
    for (c, plan) in plans.iter().enumerate() {
        let mut results = Vec::new();
        let mut local = false;
        let mut selectors: Vec<&Arc<NodeSelector>> = Vec::new();
        let mut config = Vec::new();
        // Class configuration, grouped per class in order of first use: each class's
        // configs once, listing every request (or subrequest) that used the class
        // (upstream `allocator.go`, `Allocate`, "Populate configs").
        let mut by_class: SmallVec<[ClassUse<'_>; 4]> = SmallVec::new();
        for p in picks.iter().filter(|p| p.claim as usize == c) {
            let alt = &plan.claim.requests[p.request as usize].alternatives[p.alt as usize];
            let e = &world.devices[p.dev as usize];
            match &e.scope {
                Scope::Node(_) => local = true,
                Scope::Selector(s) => {
                    if !selectors.iter().any(|x| x == &s) {
                        selectors.push(s);
                    }
                }
                Scope::All => {}
            }
            if binding && e.binds_to_node {
                local = true;
            }
            let (binding_conditions, binding_failure_conditions) = match (&e.binding, binding) {
                (Some(b), true) => (b.0.clone(), b.1.clone()),
                _ => (Vec::new(), Vec::new()),
            };
            let (consumed_capacity, share_id) = share_fields(e, alt, &plan.claim.key, p.admin);
            results.push(DeviceRequestAllocationResult {
                request: alt.result_name.clone(),
                // Read without pinning: the world holds these names.
                driver: e.id.driver.to_string(),
                pool: e.id.pool.to_string(),
                device: e.id.device.to_string(),
                admin_access: alt.admin.then_some(true),
                tolerations: alt.tolerations.clone(),
                binding_conditions,
                binding_failure_conditions,
                consumed_capacity,
                share_id,
                other: std::collections::BTreeMap::new(),
            });
            match by_class.iter_mut().find(|(class, ..)| *class == alt.class.as_str()) {
                Some((_, _, _, requests)) => {
                    if !requests.contains(&alt.result_name) {
                        requests.push(alt.result_name.clone());
                    }
                }
                None => by_class.push((alt.class.as_str(), p.request, p.alt, vec![alt.result_name.clone()])),
            }
        }
        for (_, request, alt, requests) in by_class {
            for cfg in &plan.class_config[request as usize][alt as usize] {
                config.push(DeviceAllocationConfiguration {
                    source: "FromClass".to_owned(),
                    requests: requests.clone(),
                    opaque: cfg.opaque.clone(),
                });
            }
        }
        for (reqs, opaque) in &plan.claim.config {
            config.push(DeviceAllocationConfiguration {
                source: "FromClaim".to_owned(),
                requests: reqs.clone(),
                opaque: opaque.clone(),
            });
        }
        let node_selector = if local {
            // The requirement holds the node's name (not pinned): freed with the last
            // claim status or pod that names it.
            let node = node.to_string();
            Some(NodeSelector {
                node_selector_terms: vec![NodeSelectorTerm {
                    match_expressions: Vec::new(),
                    match_fields: vec![NodeSelectorRequirement::new(
                        crate::model::FIELD_METADATA_NAME,
                        NodeSelectorOperator::In,
                        &[node.as_str()],
                    )],
                }],
            })
        } else {
            match selectors.as_slice() {
                [] => None,
                [one] => Some(NodeSelector::clone(one)),
                many => {
                    let mut term = NodeSelectorTerm::default();
                    for s in many {
                        if let Some(t) = s.node_selector_terms.first() {
                            term.match_expressions.extend(t.match_expressions.iter().cloned());
                            term.match_fields.extend(t.match_fields.iter().cloned());
                        }
                    }
                    Some(NodeSelector { node_selector_terms: vec![term] })
                }
            }
        };
        out.push(AllocationResult {
            devices: DeviceAllocationResult { results, config },
            node_selector,
            allocation_timestamp: None,
            other: std::collections::BTreeMap::new(),
        });
    }
    out
}
