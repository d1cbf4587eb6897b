//! Queueing hints (upstream `interpodaffinity/plugin.go`, `EventsToRegister`,
//! `isSchedulableAfterPodChange`, `isSchedulableAfterNodeChange`).

use std::sync::Arc;

use super::InterPodAffinity;
use super::terms::{required_affinity, required_anti_affinity};
use crate::framework::{
    ActionType, ClusterEvent, ClusterEventWithHint, EnqueueExtensions, EventObject, EventResource, QueueingHint,
};
use crate::model::{Labels, Node, PodAffinityTerm};
use crate::snapshot::PodInfo;

/// Upstream `podMatchesAllAffinityTerms` over the pod's own (unresolved) terms, with
/// no namespace labels, as the hint functions call it.
fn matches_all(owner: &PodInfo, terms: &[PodAffinityTerm], target: &PodInfo) -> bool {
    let none = Labels::new();
    !terms.is_empty() && terms.iter().all(|t| super::terms::existing_term_matches(owner, t, target, &none))
}

fn after_pod_change(pod: &PodInfo, old: Option<&PodInfo>, new: Option<&PodInfo>) -> QueueingHint {
    use QueueingHint::{Queue, Skip};
    let unassigned = |p: Option<&PodInfo>| p.is_some_and(|p| !p.is_assigned());
    if unassigned(new) || unassigned(old) {
        return Skip;
    }
    let (aff, anti) = (required_affinity(pod), required_anti_affinity(pod));
    match (old, new) {
        (Some(o), Some(n)) => {
            if (!matches_all(pod, aff, o) && matches_all(pod, aff, n))
                || (matches_all(pod, anti, o) && !matches_all(pod, anti, n))
            {
                Queue
            } else {
                Skip
            }
        }
        (None, Some(n)) => {
            if matches_all(pod, aff, n) {
                Queue
            } else {
                Skip
            }
        }
        // Beyond upstream: a deleted pod with required anti-affinity of its own may
        // have been what rejected the pod, so it requeues too.
        (Some(o), None) => {
            if matches_all(pod, anti, o) || o.has_required_anti_affinity {
                Queue
            } else {
                Skip
            }
        }
        (None, None) => Queue,
    }
}

fn after_node_change(pod: &PodInfo, new: Option<&Node>) -> QueueingHint {
    let Some(node) = new else { return QueueingHint::Queue };
    let labels = &node.metadata.labels;
    if required_affinity(pod).iter().chain(required_anti_affinity(pod)).any(|t| labels.contains_key(t.topology_key)) {
        QueueingHint::Queue
    } else {
        QueueingHint::Skip
    }
}

impl EnqueueExtensions for InterPodAffinity {
    /// Assigned pods added, relabelled or deleted; nodes added, relabelled or
    /// re-tainted; each with upstream's hint.
    fn events_to_register(&self) -> Vec<ClusterEventWithHint> {
        vec![
            ClusterEventWithHint {
                event: ClusterEvent {
                    resource: EventResource::AssignedPod,
                    action: ActionType::ADD | ActionType::UPDATE_POD_LABEL | ActionType::DELETE,
                },
                hint: Some(Arc::new(|pod: &PodInfo, ev: &EventObject| match ev {
                    EventObject::Pod { old, new } => after_pod_change(pod, old.as_deref(), new.as_deref()),
                    _ => QueueingHint::Queue,
                })),
            },
            ClusterEventWithHint {
                event: ClusterEvent {
                    resource: EventResource::Node,
                    action: ActionType::ADD | ActionType::UPDATE_NODE_LABEL | ActionType::UPDATE_NODE_TAINT,
                },
                hint: Some(Arc::new(|pod: &PodInfo, ev: &EventObject| match ev {
                    EventObject::Node { new, .. } => after_node_change(pod, new.as_deref()),
                    _ => QueueingHint::Queue,
                })),
            },
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::QueueingHint::{Queue, Skip};
    use crate::model::{Affinity, LabelSelector, PodAffinity, Symbol};
    use crate::testing::{NodeBuilder, PodBuilder};

    fn term(app: &str, key: &str) -> PodAffinityTerm {
        PodAffinityTerm {
            label_selector: Some(LabelSelector::from_labels(Labels::from_pairs([("app", app)]))),
            topology_key: Symbol::intern(key),
            ..Default::default()
        }
    }

    fn pod() -> PodInfo {
        PodInfo::new(
            PodBuilder::new("p")
                .with(|p| {
                    p.spec.affinity = Some(Affinity {
                        pod_affinity: Some(PodAffinity { required: vec![term("db", "zone")], preferred: vec![] }),
                        pod_anti_affinity: Some(PodAffinity { required: vec![term("web", "host")], preferred: vec![] }),
                        ..Default::default()
                    });
                })
                .build(),
        )
        .unwrap()
    }

    fn assigned(app: &str) -> PodInfo {
        PodInfo::new(PodBuilder::new(app).node_name("n").label("app", app).build()).unwrap()
    }

    /// After upstream `Test_isSchedulableAfterPodChange` (interpodaffinity).
    #[test]
    fn pod_change_hints() {
        let p = pod();
        // "add a pod which matches the pod affinity" / "add an un-scheduled pod"
        assert_eq!(after_pod_change(&p, None, Some(&assigned("db"))), Queue);
        let unscheduled = PodInfo::new(PodBuilder::new("u").label("app", "db").build()).unwrap();
        assert_eq!(after_pod_change(&p, None, Some(&unscheduled)), Skip);
        assert_eq!(after_pod_change(&p, None, Some(&assigned("other"))), Skip);
        // "update a pod from matching to not matching pod anti-affinity"
        assert_eq!(after_pod_change(&p, Some(&assigned("web")), Some(&assigned("other"))), Queue);
        // "update a pod from not matching to matching pod affinity"
        assert_eq!(after_pod_change(&p, Some(&assigned("other")), Some(&assigned("db"))), Queue);
        assert_eq!(after_pod_change(&p, Some(&assigned("db")), Some(&assigned("db"))), Skip);
        // "delete a pod which matches pod anti-affinity" / "... doesn't match"
        assert_eq!(after_pod_change(&p, Some(&assigned("web")), None), Queue);
        assert_eq!(after_pod_change(&p, Some(&assigned("db")), None), Skip);
    }

    /// After upstream `Test_isSchedulableAfterNodeChange` (interpodaffinity).
    #[test]
    fn node_change_hints() {
        let p = pod();
        let node = |k: &str| NodeBuilder::new("n").label(k, "v").build();
        assert_eq!(after_node_change(&p, Some(&node("zone"))), Queue);
        assert_eq!(after_node_change(&p, Some(&node("host"))), Queue);
        assert_eq!(after_node_change(&p, Some(&node("rack"))), Skip);
    }
}
