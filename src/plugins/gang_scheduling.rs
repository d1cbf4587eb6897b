//! GangScheduling, the in-tree v1.36 gang plugin (upstream
//! `pkg/scheduler/framework/plugins/gangscheduling/gangscheduling.go`, gate
//! `GangScheduling`): PreEnqueue holds a PodGroup's pods until the group exists and
//! `minCount` of them are known; Permit holds each pod until `minCount` are assumed or
//! bound, waking its siblings, and then lets every waiting member go.
//!
//! Unlike [`Coscheduling`](super::coscheduling) (scheduler-plugins, pod label
//! `scheduling.x-k8s.io/pod-group`, its own PodGroup CRD), this plugin reads the
//! `scheduling.k8s.io/v1alpha2` PodGroup a pod names in `spec.schedulingGroup`, through
//! the handle's [`PodGroupManager`](crate::framework::PodGroupManager).

use std::sync::Arc;
use std::time::Duration;

use crate::framework::{
    ClusterEventWithHint, CycleState, EnqueueExtensions, EventObject, ExtensionPoints, Handle, PermitDecision,
    PermitPlugin, Plugin, PreEnqueuePlugin, QueueingHint, Status,
};
use crate::plugins::names;
use crate::queue::events;
use crate::snapshot::PodInfo;

/// How long a gang member waits at Permit for the rest (upstream
/// `permitTimeoutDuration`), on the scheduler's clock.
pub const PERMIT_TIMEOUT: Duration = Duration::from_secs(5 * 60);

/// The GangScheduling plugin.
///
/// ```
/// use std::sync::Arc;
/// use schedkit::framework::{Code, Handle, PreEnqueuePlugin};
/// use schedkit::model::workload::PodGroup;
/// use schedkit::plugins::gang_scheduling::GangScheduling;
/// use schedkit::snapshot::{MemberState, PodInfo};
/// use schedkit::testing::PodBuilder;
/// let handle = Handle::default();
/// let plugin = GangScheduling::new(handle.clone());
/// let pod = Arc::new(PodInfo::new(PodBuilder::new("w0").pod_group_name("job").build()).unwrap());
/// let s = plugin.pre_enqueue(&pod);
/// assert_eq!(s.reasons(), ["waiting for pods's pod group \"job\" to appear in scheduling queue"]);
/// handle.pod_groups().set_pod_group(PodGroup::gang("default", "job", 2));
/// handle.pod_groups().states().set(&pod, MemberState::Unscheduled);
/// assert_eq!(plugin.pre_enqueue(&pod).code(), Code::UnschedulableAndUnresolvable);
/// ```
#[derive(Debug, Clone)]
pub struct GangScheduling {
    handle: Handle,
}

impl GangScheduling {
    /// The plugin reading PodGroups and member states from `handle`.
    pub fn new(handle: Handle) -> GangScheduling {
        GangScheduling { handle }
    }
}

impl Plugin for GangScheduling {
    fn name(&self) -> &str {
        names::GANG_SCHEDULING
    }
    fn register(self: Arc<Self>, points: &mut ExtensionPoints) {
        points.pre_enqueue(self.clone()).permit(self.clone()).enqueue(self);
    }
}

impl PreEnqueuePlugin for GangScheduling {
    fn pre_enqueue(&self, pod: &PodInfo) -> Status {
        let Some(group) = pod.pod.scheduling_group_name() else { return Status::SUCCESS };
        // The object and the member count under one key (the object's key and its
        // states' are both `namespace/name`, an empty namespace read as `default`).
        let Some((min, all)) = self.handle.pod_groups().quorum(&pod.pod.metadata.namespace, group) else {
            return Status::unresolvable(format!(
                "waiting for pods's pod group {group:?} to appear in scheduling queue"
            ));
        };
        let Some(min) = min else { return Status::SUCCESS };
        if all < usize::try_from(min).unwrap_or(0) {
            return Status::unresolvable("waiting for minCount pods from a gang to appear in scheduling queue");
        }
        Status::SUCCESS
    }
}

impl PermitPlugin for GangScheduling {
    fn permit(&self, _state: &mut CycleState, pod: &PodInfo, _node: &str) -> PermitDecision {
        let Some(group) = pod.pod.scheduling_group_name() else { return PermitDecision::Allow };
        let groups = self.handle.pod_groups();
        let ns = if pod.pod.metadata.namespace.is_empty() { "default" } else { &pod.pod.metadata.namespace };
        let Some(pg) = groups.pod_group(ns, group) else {
            // An error on purpose: the pod is retried when the PodGroup is added again.
            return PermitDecision::Reject(Status::error(format!(
                "failed to get podGroup {ns}/{group}: podgroup.scheduling.k8s.io {group:?} not found"
            )));
        };
        let Some(min) = pg.min_count() else { return PermitDecision::Allow };
        let states = groups.states();
        let (scheduled, generation) =
            states.with(ns, group, |s| s.map_or((0, 0), |s| (s.scheduled_pods_count(), s.unscheduled_generation())));
        if scheduled < usize::try_from(min).unwrap_or(0) {
            // Siblings waiting for this one may go now (listed once per pod-group
            // cycle while no member went back to unscheduled: the later lists are
            // subsets of the first).
            crate::snapshot::pod_groups::with_group_key(ns, group, |key| {
                self.handle.activate_pod_group_members(key, generation, || {
                    states.with(ns, group, |s| {
                        s.map(|s| (s.unscheduled_pods().map(|p| p.uid.clone()).collect(), s.unscheduled_generation()))
                            .unwrap_or_default()
                    })
                });
            });
            return PermitDecision::Wait(PERMIT_TIMEOUT);
        }
        let assumed: Vec<Arc<str>> = states
            .with(ns, group, |s| s.map(|s| s.assumed_pods().map(|p| p.uid.clone()).collect()).unwrap_or_default());
        // Quorum: let every assumed member waiting at Permit go.
        let waiting = self.handle.waiting_pods();
        for uid in &assumed {
            waiting.allow(uid, names::GANG_SCHEDULING);
        }
        PermitDecision::Allow
    }
}

fn ns(p: &PodInfo) -> &str {
    if p.pod.metadata.namespace.is_empty() { "default" } else { p.pod.metadata.namespace.as_str() }
}

fn same_group(pod: &PodInfo, other: &PodInfo) -> bool {
    match (pod.pod.scheduling_group_name(), other.pod.scheduling_group_name()) {
        (Some(a), Some(b)) => a == b && ns(pod) == ns(other),
        _ => false,
    }
}

/// Whether `pg` is the group `pod` names.
fn is_group_of(pod: &PodInfo, pg: &crate::model::workload::PodGroup) -> bool {
    pod.pod.scheduling_group_name() == Some(pg.name()) && ns(pod) == pg.namespace()
}

/// A pod of the same group was added (upstream `isSchedulableAfterPodAdded`).
pub fn hint_pod_added(pod: &PodInfo, obj: &EventObject) -> QueueingHint {
    match obj {
        EventObject::Pod { new: Some(added), .. } if same_group(pod, added) => QueueingHint::Queue,
        EventObject::Pod { .. } => QueueingHint::Skip,
        _ => QueueingHint::Queue,
    }
}

/// The pod's PodGroup was added (upstream `isSchedulableAfterPodGroupAdded`).
pub fn hint_pod_group_added(pod: &PodInfo, obj: &EventObject) -> QueueingHint {
    match obj {
        EventObject::PodGroup { new: Some(pg), .. } if is_group_of(pod, pg) => QueueingHint::Queue,
        EventObject::PodGroup { .. } => QueueingHint::Skip,
        _ => QueueingHint::Queue,
    }
}

/// The pod's PodGroup was updated with a smaller gang `minCount` (upstream
/// `isSchedulableAfterPodGroupUpdated`; `minCount` is immutable in v1alpha2, so this
/// matters for groups replaced through the API).
pub fn hint_pod_group_updated(pod: &PodInfo, obj: &EventObject) -> QueueingHint {
    let EventObject::PodGroup { old: Some(old), new: Some(new) } = obj else { return QueueingHint::Queue };
    if !is_group_of(pod, new) {
        return QueueingHint::Skip;
    }
    match (old.min_count(), new.min_count()) {
        (Some(o), Some(n)) if n < o => QueueingHint::Queue,
        _ => QueueingHint::Skip,
    }
}

impl EnqueueExtensions for GangScheduling {
    fn events_to_register(&self) -> Vec<ClusterEventWithHint> {
        vec![
            ClusterEventWithHint { event: events::UNSCHEDULED_POD_ADD, hint: Some(Arc::new(hint_pod_added)) },
            ClusterEventWithHint { event: events::ASSIGNED_POD_ADD, hint: Some(Arc::new(hint_pod_added)) },
            ClusterEventWithHint { event: events::POD_GROUP_ADD, hint: Some(Arc::new(hint_pod_group_added)) },
            ClusterEventWithHint { event: events::POD_GROUP_UPDATE, hint: Some(Arc::new(hint_pod_group_updated)) },
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::Code;
    use crate::model::workload::PodGroup;
    use crate::snapshot::MemberState;
    use crate::testing::PodBuilder;

    fn pod(name: &str, group: Option<&str>) -> Arc<PodInfo> {
        let mut b = PodBuilder::new(name).namespace("ns1").uid(name);
        if let Some(g) = group {
            b = b.pod_group_name(g);
        }
        Arc::new(PodInfo::new(b.build()).unwrap())
    }

    fn on_node(p: &Arc<PodInfo>) -> Arc<PodInfo> {
        let mut info = (**p).clone();
        Arc::make_mut(&mut info.pod).spec.node_name = "some-node".into();
        Arc::new(info)
    }

    struct Case {
        name: &'static str,
        pod: &'static str,
        initial: &'static [&'static str],
        groups: bool,
        waiting: &'static [&'static str],
        pre_enqueue: Option<&'static str>,
        permit_waits: bool,
        activated: &'static [&'static str],
        allowed: &'static [&'static str],
    }

    /// Upstream `gangscheduling_test.go` `TestGangSchedulingFlow` (v1alpha2 era): pg1 is
    /// a gang of 3 (p1..p3), pg2 a gang of 4 (p4, p5), pg3 basic.
    #[test]
    fn gang_scheduling_flow() {
        let cases = [
            Case {
                name: "non-gang pod succeeds immediately",
                pod: "non-gang",
                initial: &[],
                groups: true,
                waiting: &[],
                pre_enqueue: None,
                permit_waits: false,
                activated: &[],
                allowed: &[],
            },
            Case {
                name: "basic policy pod succeeds immediately",
                pod: "basic-pod",
                initial: &[],
                groups: true,
                waiting: &[],
                pre_enqueue: None,
                permit_waits: false,
                activated: &[],
                allowed: &[],
            },
            Case {
                name: "gang pod fails PreEnqueue when pod group is not yet created",
                pod: "p1",
                initial: &["p2", "p3", "p4", "p5"],
                groups: false,
                waiting: &[],
                pre_enqueue: Some("waiting for pods's pod group \"pg1\" to appear in scheduling queue"),
                permit_waits: false,
                activated: &[],
                allowed: &[],
            },
            Case {
                name: "gang pod fails PreEnqueue when quorum is not met",
                pod: "p1",
                initial: &["p2", "p4", "p5"],
                groups: true,
                waiting: &[],
                pre_enqueue: Some("waiting for minCount pods from a gang to appear in scheduling queue"),
                permit_waits: false,
                activated: &[],
                allowed: &[],
            },
            Case {
                name: "gang pod passes PreEnqueue, but waits at Permit",
                pod: "p1",
                initial: &["p2", "p3", "p4", "p5"],
                groups: true,
                waiting: &["p2", "p4", "p5"],
                pre_enqueue: None,
                permit_waits: true,
                activated: &["p3"],
                allowed: &[],
            },
            Case {
                name: "final gang pod arrives at Permit and allows all waiting pods from a gang",
                pod: "p1",
                initial: &["p2", "p3", "p4", "p5"],
                groups: true,
                waiting: &["p2", "p3", "p4", "p5"],
                pre_enqueue: None,
                permit_waits: false,
                activated: &[],
                allowed: &["p2", "p3"],
            },
        ];
        let group_of = |n: &str| match n {
            "p1" | "p2" | "p3" => Some("pg1"),
            "p4" | "p5" => Some("pg2"),
            "basic-pod" => Some("pg3"),
            _ => None,
        };
        for c in cases {
            let handle = Handle::default();
            let groups = handle.pod_groups();
            if c.groups {
                groups.set_pod_group(PodGroup::gang("ns1", "pg1", 3));
                groups.set_pod_group(PodGroup::gang("ns1", "pg2", 4));
                groups.set_pod_group(PodGroup::basic("ns1", "pg3"));
            }
            let pods: Vec<Arc<PodInfo>> = c.initial.iter().map(|n| pod(n, group_of(n))).collect();
            for p in &pods {
                groups.states().set(p, MemberState::Unscheduled);
            }
            let me = pod(c.pod, group_of(c.pod));
            groups.states().set(&me, MemberState::Unscheduled);
            let pl = GangScheduling::new(handle.clone());
            let s = pl.pre_enqueue(&me);
            match c.pre_enqueue {
                Some(msg) => {
                    assert_eq!(
                        (s.code(), s.message()),
                        (Code::UnschedulableAndUnresolvable, msg.to_owned()),
                        "{}",
                        c.name
                    );
                    continue;
                }
                None => assert!(s.is_success(), "{}: {s:?}", c.name),
            }
            // Others already hit Permit and wait there.
            for n in c.waiting {
                let p = on_node(&pods.iter().find(|p| &*p.uid == *n).unwrap().clone());
                groups.states().set(&p, MemberState::Assumed);
                let d = pl.permit(&mut CycleState::new(), &p, "some-node");
                assert_eq!(d, PermitDecision::Wait(PERMIT_TIMEOUT), "{}: {n}", c.name);
                handle.waiting_pods().add(&p, "some-node", &[(names::GANG_SCHEDULING, PERMIT_TIMEOUT)], Duration::ZERO);
            }
            handle.take_pods_to_activate();
            let mine = on_node(&me);
            groups.states().set(&mine, MemberState::Assumed);
            let d = pl.permit(&mut CycleState::new(), &mine, "some-node");
            if c.permit_waits {
                assert_eq!(d, PermitDecision::Wait(PERMIT_TIMEOUT), "{}", c.name);
                let activated: Vec<String> = handle.take_pods_to_activate().iter().map(ToString::to_string).collect();
                assert_eq!(activated, c.activated, "{}", c.name);
            } else {
                assert_eq!(d, PermitDecision::Allow, "{}", c.name);
            }
            for n in c.allowed {
                assert!(
                    handle.waiting_pods().get(n).is_none_or(|w| w.pending_plugins().is_empty()),
                    "{}: {n} allowed",
                    c.name
                );
            }
        }
    }

    #[test]
    fn permit_errors_when_the_pod_group_is_gone() {
        let handle = Handle::default();
        let d = GangScheduling::new(handle).permit(&mut CycleState::new(), &pod("p1", Some("pg1")), "n");
        let PermitDecision::Reject(s) = d else { panic!("{d:?}") };
        assert_eq!(s.code(), Code::Error);
        assert_eq!(s.message(), "failed to get podGroup ns1/pg1: podgroup.scheduling.k8s.io \"pg1\" not found");
    }

    /// Upstream `TestGangSchedulingFlow`'s neighbours: the queueing hints
    /// (`isSchedulableAfterPodAdded`, `...PodGroupAdded`, `...PodGroupUpdated`).
    #[test]
    fn queueing_hints() {
        let me = pod("p1", Some("pg1"));
        let sibling = pod("p2", Some("pg1"));
        let other = pod("p4", Some("pg2"));
        let added = |p: &Arc<PodInfo>| EventObject::Pod { old: None, new: Some(p.clone()) };
        assert_eq!(hint_pod_added(&me, &added(&sibling)), QueueingHint::Queue);
        assert_eq!(hint_pod_added(&me, &added(&other)), QueueingHint::Skip);
        assert_eq!(hint_pod_added(&pod("x", None), &added(&sibling)), QueueingHint::Skip);
        let pg = |name: &str, min: Option<i32>| {
            Arc::new(min.map_or_else(|| PodGroup::basic("ns1", name), |m| PodGroup::gang("ns1", name, m)))
        };
        let add = |g| EventObject::PodGroup { old: None, new: Some(g) };
        assert_eq!(hint_pod_group_added(&me, &add(pg("pg1", Some(3)))), QueueingHint::Queue);
        assert_eq!(hint_pod_group_added(&me, &add(pg("pg2", Some(3)))), QueueingHint::Skip);
        let upd = |o, n| EventObject::PodGroup { old: Some(o), new: Some(n) };
        assert_eq!(hint_pod_group_updated(&me, &upd(pg("pg1", Some(3)), pg("pg1", Some(2)))), QueueingHint::Queue);
        assert_eq!(hint_pod_group_updated(&me, &upd(pg("pg1", Some(3)), pg("pg1", Some(3)))), QueueingHint::Skip);
        assert_eq!(hint_pod_group_updated(&me, &upd(pg("pg1", Some(3)), pg("pg1", None))), QueueingHint::Skip);
        assert_eq!(hint_pod_group_updated(&me, &upd(pg("pg2", Some(3)), pg("pg2", Some(1)))), QueueingHint::Skip);
    }
}
