//! SchedulingGates, a PreEnqueue plugin (upstream
//! `pkg/scheduler/framework/plugins/schedulinggates/scheduling_gates.go`): a pod
//! with any `spec.schedulingGates` stays out of the active queue until they are all
//! removed.

use std::sync::Arc;

use crate::framework::{
    ActionType, ClusterEvent, ClusterEventWithHint, EnqueueExtensions, EventObject, EventResource, ExtensionPoints,
    Plugin, PreEnqueuePlugin, QueueingHint, Status,
};
use crate::plugins::names;
use crate::snapshot::PodInfo;

/// Holds pods that still have scheduling gates.
///
/// ```
/// use schedkit::framework::{Code, PreEnqueuePlugin};
/// use schedkit::model::SchedulingGate;
/// use schedkit::plugins::scheduling_gates::SchedulingGates;
/// use schedkit::snapshot::PodInfo;
/// use schedkit::testing::PodBuilder;
/// let gated = PodBuilder::new("p")
///     .with(|p| p.spec.scheduling_gates.push(SchedulingGate { name: "example.com/quota".into() }))
///     .build();
/// let s = SchedulingGates.pre_enqueue(&PodInfo::new(gated).unwrap());
/// assert_eq!(s.code(), Code::UnschedulableAndUnresolvable);
/// assert_eq!(s.reasons(), ["waiting for scheduling gates: [example.com/quota]"]);
/// assert!(SchedulingGates.pre_enqueue(&PodInfo::new(PodBuilder::new("q").build()).unwrap()).is_success());
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct SchedulingGates;

impl Plugin for SchedulingGates {
    fn name(&self) -> &str {
        names::SCHEDULING_GATES
    }
    fn register(self: Arc<Self>, points: &mut ExtensionPoints) {
        points.pre_enqueue(self.clone()).enqueue(self);
    }
}

impl PreEnqueuePlugin for SchedulingGates {
    fn pre_enqueue(&self, pod: &PodInfo) -> Status {
        let gates = &pod.pod.spec.scheduling_gates;
        if gates.is_empty() {
            return Status::SUCCESS;
        }
        let names: Vec<&str> = gates.iter().map(|g| g.name.as_str()).collect();
        Status::unresolvable(format!("waiting for scheduling gates: [{}]", names.join(" ")))
    }
}

impl EnqueueExtensions for SchedulingGates {
    /// Only the gated pod's own update that removes its last gate can help it (upstream
    /// `isSchedulableAfterUpdatePodSchedulingGatesEliminated`).
    fn events_to_register(&self) -> Vec<ClusterEventWithHint> {
        vec![ClusterEventWithHint {
            event: ClusterEvent {
                resource: EventResource::UnscheduledPod,
                action: ActionType::UPDATE_POD_SCHEDULING_GATES,
            },
            hint: Some(Arc::new(|pod: &PodInfo, obj: &EventObject| match obj {
                EventObject::Pod { new: Some(new), .. } if new.uid == pod.uid => QueueingHint::Queue,
                _ => QueueingHint::Skip,
            })),
        }]
    }
}
