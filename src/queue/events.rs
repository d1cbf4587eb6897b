//! Cluster events the scheduler reacts to, and how an update is classified into
//! action flags (upstream `framework/events.go`, `PodSchedulingPropertiesChange` and
//! `NodeSchedulingPropertiesChange` in `pkg/scheduler/framework/events.go`).

use crate::framework::{ActionType, ClusterEvent, EventResource};
use crate::model::Node;
use crate::snapshot::PodInfo;

/// A node was added.
pub const NODE_ADD: ClusterEvent = ClusterEvent { resource: EventResource::Node, action: ActionType::ADD };
/// A node was deleted.
pub const NODE_DELETE: ClusterEvent = ClusterEvent { resource: EventResource::Node, action: ActionType::DELETE };
/// A pod bound (or assumed) to a node was added.
pub const ASSIGNED_POD_ADD: ClusterEvent =
    ClusterEvent { resource: EventResource::AssignedPod, action: ActionType::ADD };
/// A pod bound to a node was deleted (or a reservation was released).
pub const ASSIGNED_POD_DELETE: ClusterEvent =
    ClusterEvent { resource: EventResource::AssignedPod, action: ActionType::DELETE };
/// An unscheduled pod was added.
pub const UNSCHEDULED_POD_ADD: ClusterEvent =
    ClusterEvent { resource: EventResource::UnscheduledPod, action: ActionType::ADD };
/// An unscheduled pod was deleted.
pub const UNSCHEDULED_POD_DELETE: ClusterEvent =
    ClusterEvent { resource: EventResource::UnscheduledPod, action: ActionType::DELETE };
/// A pod group (gang) was added.
pub const POD_GROUP_ADD: ClusterEvent = ClusterEvent { resource: EventResource::PodGroup, action: ActionType::ADD };
/// A pod group (gang) was updated.
pub const POD_GROUP_UPDATE: ClusterEvent =
    ClusterEvent { resource: EventResource::PodGroup, action: ActionType::UPDATE_OTHER };
/// The unschedulable pool's max stay passed (upstream `UnschedulableTimeout`): a
/// wildcard every pod is requeued for.
pub const UNSCHEDULABLE_TIMEOUT: ClusterEvent = ClusterEvent { resource: EventResource::Any, action: ActionType::ALL };

/// Whether `e` is a wildcard event that requeues every pod regardless of plugins.
pub fn is_wildcard(e: &ClusterEvent) -> bool {
    e.resource == EventResource::Any && e.action == ActionType::ALL
}

/// The flags describing how a node changed; empty (`ActionType(0)`) when nothing a
/// scheduler cares about changed. Spec unschedulability has its own flag here
/// (upstream folds it into `UpdateNodeTaint`).
///
/// ```
/// use schedkit::framework::ActionType;
/// use schedkit::queue::events::node_update;
/// use schedkit::testing::NodeBuilder;
/// let old = NodeBuilder::new("n").cpu("4").build();
/// let new = NodeBuilder::new("n").cpu("8").label("a", "b").build();
/// let a = node_update(&old, &new);
/// assert!(a.intersects(ActionType::UPDATE_NODE_ALLOCATABLE) && a.intersects(ActionType::UPDATE_NODE_LABEL));
/// assert!(!a.intersects(ActionType::UPDATE_NODE_TAINT));
/// ```
pub fn node_update(old: &Node, new: &Node) -> ActionType {
    let mut a = 0;
    if old.status.allocatable != new.status.allocatable {
        a |= ActionType::UPDATE_NODE_ALLOCATABLE.0;
    }
    if old.metadata.labels != new.metadata.labels {
        a |= ActionType::UPDATE_NODE_LABEL.0;
    }
    if old.spec.taints != new.spec.taints {
        a |= ActionType::UPDATE_NODE_TAINT.0;
    }
    if old.spec.unschedulable != new.spec.unschedulable {
        a |= ActionType::UPDATE_NODE_SCHEDULABLE.0;
    }
    if a == 0 && old != new {
        a = ActionType::UPDATE_OTHER.0;
    }
    ActionType(a)
}

/// The flags describing how a pod changed (labels, requests scaled down,
/// tolerations, all scheduling gates removed, anything else).
pub fn pod_update(old: &PodInfo, new: &PodInfo) -> ActionType {
    let (o, n) = (&old.pod, &new.pod);
    let mut a = 0;
    if o.metadata.labels != n.metadata.labels {
        a |= ActionType::UPDATE_POD_LABEL.0;
    }
    if scaled_down(old, new) {
        a |= ActionType::UPDATE_POD_SCALE_DOWN.0;
    }
    if o.spec.tolerations != n.spec.tolerations {
        a |= ActionType::UPDATE_POD_TOLERATIONS.0;
    }
    if !o.spec.scheduling_gates.is_empty() && n.spec.scheduling_gates.is_empty() {
        a |= ActionType::UPDATE_POD_SCHEDULING_GATES.0;
    }
    if a == 0 {
        a = ActionType::UPDATE_OTHER.0;
    }
    ActionType(a)
}

fn scaled_down(old: &PodInfo, new: &PodInfo) -> bool {
    let (o, n) = (&old.requests, &new.requests);
    n.milli_cpu < o.milli_cpu
        || n.memory < o.memory
        || n.ephemeral_storage < o.ephemeral_storage
        || o.scalar.iter().any(|&(name, v)| n.scalar(name) < v)
}
