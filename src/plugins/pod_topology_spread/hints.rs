//! Queueing hints: which cluster events may make a pod this plugin rejected
//! schedulable (upstream `podtopologyspread/plugin.go`, `EventsToRegister`,
//! `isSchedulableAfterPodChange`, `isSchedulableAfterNodeChange`).

use std::sync::Arc;

use super::PodTopologySpread;
use super::common::node_has_all_keys;
use crate::framework::{
    ActionType, ClusterEvent, ClusterEventWithHint, EnqueueExtensions, EventObject, EventResource, QueueingHint,
};
use crate::model::{Node, UnsatisfiableConstraintAction};
use crate::snapshot::PodInfo;

/// Upstream `involvedInTopologySpreading`: the changed pod is the pod itself, or an
/// assigned pod of its namespace.
fn involved(changed: &PodInfo, pod: &PodInfo) -> bool {
    changed.uid == pod.uid || (changed.is_assigned() && changed.namespace == pod.namespace)
}

impl PodTopologySpread {
    fn after_pod_change(&self, pod: &PodInfo, old: Option<&PodInfo>, new: Option<&PodInfo>) -> QueueingHint {
        if new.is_some_and(|p| !involved(p, pod)) || old.is_some_and(|p| !involved(p, pod)) {
            return QueueingHint::Skip;
        }
        let constraints = self.constraints(pod, UnsatisfiableConstraintAction::DoNotSchedule);
        let any_selects = |p: &PodInfo| constraints.iter().any(|c| c.selects(&p.pod.metadata.labels));
        match (old, new) {
            (Some(old), Some(new)) => {
                if new.uid == pod.uid
                    && new.pod.spec.tolerations != old.pod.spec.tolerations
                    && constraints.iter().any(|c| c.honor_node_taints)
                {
                    return QueueingHint::Queue;
                }
                let (ol, nl) = (&old.pod.metadata.labels, &new.pod.metadata.labels);
                if ol != nl && constraints.iter().any(|c| c.selects(ol) != c.selects(nl)) {
                    QueueingHint::Queue
                } else {
                    QueueingHint::Skip
                }
            }
            (None, Some(p)) | (Some(p), None) => {
                if any_selects(p) {
                    QueueingHint::Queue
                } else {
                    QueueingHint::Skip
                }
            }
            (None, None) => QueueingHint::Queue,
        }
    }

    fn after_node_change(&self, pod: &PodInfo, old: Option<&Node>, new: Option<&Node>) -> QueueingHint {
        let constraints = self.constraints(pod, UnsatisfiableConstraintAction::DoNotSchedule);
        let matching = |n: Option<&Node>| n.is_some_and(|n| node_has_all_keys(&n.metadata.labels, &constraints));
        let (old_matching, new_matching) = (matching(old), matching(new));
        match (old, new) {
            (Some(o), Some(n)) => {
                let keys_changed = constraints
                    .iter()
                    .any(|c| o.metadata.labels.get(c.topology_key) != n.metadata.labels.get(c.topology_key));
                if old_matching != new_matching || (new_matching && (keys_changed || o.spec.taints != n.spec.taints)) {
                    QueueingHint::Queue
                } else {
                    QueueingHint::Skip
                }
            }
            (None, Some(_)) => {
                if new_matching {
                    QueueingHint::Queue
                } else {
                    QueueingHint::Skip
                }
            }
            (Some(_), None) => {
                if old_matching {
                    QueueingHint::Queue
                } else {
                    QueueingHint::Skip
                }
            }
            (None, None) => QueueingHint::Queue,
        }
    }
}

impl EnqueueExtensions for PodTopologySpread {
    /// Assigned pods added, relabelled, re-tolerated or deleted, and nodes added,
    /// deleted, relabelled or re-tainted, each with upstream's hint.
    fn events_to_register(&self) -> Vec<ClusterEventWithHint> {
        let pl = Arc::new(self.clone());
        let pods = pl.clone();
        vec![
            ClusterEventWithHint {
                event: ClusterEvent {
                    resource: EventResource::AssignedPod,
                    action: ActionType::ADD
                        | ActionType::UPDATE_POD_LABEL
                        | ActionType::UPDATE_POD_TOLERATIONS
                        | ActionType::DELETE,
                },
                hint: Some(Arc::new(move |pod: &PodInfo, ev: &EventObject| match ev {
                    EventObject::Pod { old, new } => pods.after_pod_change(pod, old.as_deref(), new.as_deref()),
                    _ => QueueingHint::Queue,
                })),
            },
            ClusterEventWithHint {
                event: ClusterEvent {
                    resource: EventResource::Node,
                    action: ActionType::ADD
                        | ActionType::DELETE
                        | ActionType::UPDATE_NODE_LABEL
                        | ActionType::UPDATE_NODE_TAINT,
                },
                hint: Some(Arc::new(move |pod: &PodInfo, ev: &EventObject| match ev {
                    EventObject::Node { old, new } => pl.after_node_change(pod, old.as_deref(), new.as_deref()),
                    _ => QueueingHint::Queue,
                })),
            },
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::{Handle, QueueingHint::*};
    use crate::model::{LabelSelector, Labels, Symbol, TaintEffect, TopologySpreadConstraint};
    use crate::plugins::pod_topology_spread::PodTopologySpreadArgs;
    use crate::testing::{NodeBuilder, PodBuilder};

    fn info(b: PodBuilder) -> Arc<PodInfo> {
        Arc::new(PodInfo::new(b.build()).unwrap())
    }

    fn hints() -> (Vec<ClusterEventWithHint>, Arc<PodInfo>) {
        let pl = PodTopologySpread::new(PodTopologySpreadArgs::default(), &Handle::default()).unwrap();
        let pod = info(PodBuilder::new("p").uid("p").label("foo", "").with(|p| {
            p.spec.topology_spread_constraints = vec![TopologySpreadConstraint {
                max_skew: 1,
                topology_key: Symbol::intern("zone"),
                when_unsatisfiable: UnsatisfiableConstraintAction::DoNotSchedule,
                label_selector: Some(LabelSelector::from_labels(Labels::from_pairs([("foo", "")]))),
                min_domains: None,
                node_affinity_policy: None,
                node_taints_policy: None,
                match_label_keys: vec![],
            }];
        }));
        (pl.events_to_register(), pod)
    }

    fn run(h: &ClusterEventWithHint, pod: &PodInfo, ev: &EventObject) -> QueueingHint {
        (h.hint.as_ref().unwrap())(pod, ev)
    }

    /// After upstream `Test_isSchedulableAfterPodChange`.
    #[test]
    fn pod_change_hints() {
        let (events, pod) = hints();
        let assigned = |name: &str, label: &str| info(PodBuilder::new(name).node_name("n").label(label, ""));
        let ev = |old: Option<Arc<PodInfo>>, new: Option<Arc<PodInfo>>| EventObject::Pod { old, new };
        let h = &events[0];
        // "add pod with labels match topologySpreadConstraints selector"
        assert_eq!(run(h, &pod, &ev(None, Some(assigned("a", "foo")))), Queue);
        // "add un-scheduled pod"
        assert_eq!(run(h, &pod, &ev(None, Some(info(PodBuilder::new("u").label("foo", ""))))), Skip);
        // "add pod with different namespace"
        let other_ns = info(PodBuilder::new("o").namespace("ns1").node_name("n").label("foo", ""));
        assert_eq!(run(h, &pod, &ev(None, Some(other_ns))), Skip);
        // "add pod with labels don't match topologySpreadConstraints selector"
        assert_eq!(run(h, &pod, &ev(None, Some(assigned("a", "bar")))), Skip);
        // "delete pod with labels that match topologySpreadConstraints selector"
        assert_eq!(run(h, &pod, &ev(Some(assigned("a", "foo")), None)), Queue);
        // "update pod's non-related label" / "change pod's label to match"
        let a_foo_bar = info(PodBuilder::new("a").node_name("n").label("foo", "").label("bar", ""));
        assert_eq!(run(h, &pod, &ev(Some(assigned("a", "foo")), Some(a_foo_bar))), Skip);
        assert_eq!(run(h, &pod, &ev(Some(assigned("a", "bar")), Some(assigned("a", "foo")))), Queue);
    }

    /// After upstream `Test_isSchedulableAfterNodeChange`.
    #[test]
    fn node_change_hints() {
        let (events, pod) = hints();
        let h = &events[1];
        let n = |zone: Option<&str>, tainted: bool| {
            let mut b = NodeBuilder::new("n");
            if let Some(z) = zone {
                b = b.label("zone", z);
            }
            if tainted {
                b = b.taint("k", "v", TaintEffect::NoSchedule);
            }
            Some(Arc::new(b.build()))
        };
        let ev = |old, new| EventObject::Node { old, new };
        // "node updates label which matches topologyKey" / "node that doesn't match topologySpreadConstraints updates non-related label"
        assert_eq!(run(h, &pod, &ev(n(Some("a"), false), n(Some("b"), false))), Queue);
        assert_eq!(run(h, &pod, &ev(n(None, false), n(None, true))), Skip);
        // "create node with related labels" / "create node with non-related labels"
        assert_eq!(run(h, &pod, &ev(None, n(Some("a"), false))), Queue);
        assert_eq!(run(h, &pod, &ev(None, n(None, false))), Skip);
        // "delete node with related labels"
        assert_eq!(run(h, &pod, &ev(n(Some("a"), false), None)), Queue);
        // "node updates taint": matching node, taints changed
        assert_eq!(run(h, &pod, &ev(n(Some("a"), false), n(Some("a"), true))), Queue);
        assert_eq!(run(h, &pod, &ev(n(Some("a"), true), n(Some("a"), true))), Skip);
    }
}
