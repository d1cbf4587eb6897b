//! How DynamicResources takes part in queueing: which cluster events requeue a pod
//! (with the claim-event hint) and how it signs pods for opportunistic batching.

use std::sync::Arc;

use super::DynamicResources;
use crate::dra::claim_name_for;
use crate::framework::{
    ActionType, ClusterEvent, ClusterEventWithHint, EnqueueExtensions, EventObject, EventResource, QueueingHint,
    QueueingHintFn,
};
use crate::snapshot::PodInfo;

/// Queueing hint for ResourceClaim events (upstream `isSchedulableAfterClaimChange`):
/// a claim event requeues only pods that use the claim. The caller names the claim in
/// `EventObject::Custom("namespace/name")`; any other object requeues.
pub fn claim_event_hint(pod: &PodInfo, event: &EventObject) -> QueueingHint {
    let EventObject::Custom(key) = event else { return QueueingHint::Queue };
    let p = &pod.pod;
    let ns = if p.metadata.namespace.is_empty() { "default" } else { p.metadata.namespace.as_str() };
    let uses = p.spec.resource_claims.iter().any(|pc| {
        // A group claim's name needs the PodGroup; such a pod is requeued by any claim
        // event (the hint errs towards another attempt, as upstream's).
        if pc.pod_group_resource_claim.is_some() {
            return true;
        }
        let name = claim_name_for(p, pc);
        key.strip_prefix(ns).and_then(|rest| rest.strip_prefix('/')) == Some(name.as_str())
    });
    if uses { QueueingHint::Queue } else { QueueingHint::Skip }
}

impl EnqueueExtensions for DynamicResources {
    /// Node add / label / allocatable updates, ResourceClaim add/update (hinted by
    /// [`claim_event_hint`]), ResourceSlice and DeviceClass add/update (always requeue,
    /// as upstream for slices).
    fn events_to_register(&self) -> Vec<ClusterEventWithHint> {
        let ev = |resource, hint| ClusterEventWithHint {
            event: ClusterEvent { resource, action: ActionType::ADD | ActionType::UPDATE },
            hint,
        };
        vec![
            // Node labels matter for devices reachable through node selectors, node
            // allocatable for extended resources backed by DRA (upstream registers Node
            // Add | UpdateNodeLabel; schedkit adds UpdateNodeAllocatable for KEP-5004).
            ClusterEventWithHint {
                event: ClusterEvent {
                    resource: EventResource::Node,
                    action: ActionType::ADD | ActionType::UPDATE_NODE_LABEL | ActionType::UPDATE_NODE_ALLOCATABLE,
                },
                hint: None,
            },
            ev(EventResource::ResourceClaim, Some(Arc::new(claim_event_hint) as QueueingHintFn)),
            ev(EventResource::ResourceSlice, None),
            ev(EventResource::DeviceClass, None),
        ]
    }
}

/// Upstream `DynamicResources.SignPod`: a pod with resource claims is not signable
/// ("pods with dra resource claims are not signable"); others add no fragment.
impl crate::framework::SignPlugin for DynamicResources {
    fn sign_pod(
        &self,
        pod: &crate::snapshot::PodInfo,
        _: &mut crate::framework::SignFragments,
    ) -> crate::framework::Status {
        if pod.pod.spec.resource_claims.is_empty() {
            crate::framework::Status::SUCCESS
        } else {
            crate::framework::Status::unschedulable("pods with dra resource claims are not signable")
        }
    }
}
