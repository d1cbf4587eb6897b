//! A binding cycle handed out of the scheduling loop ([`PendingBinding`], from
//! [`Scheduler::schedule_next_deferred`](super::Scheduler::schedule_next_deferred)),
//! run whole or in two steps ([`PendingBind`]), and how its pod is filed afterwards.

use std::sync::Arc;

use parking_lot::Mutex;

use super::run::{Attempt, AttemptOutcome};
use super::{BindError, BindingCycle, ReadyToBind, SCHEDULER_REJECTOR};
use crate::framework::{EventObject, Handle, Status};
use crate::queue::{QueueLocation, SchedulingQueue, events};
use crate::snapshot::PodInfo;

/// A pod's binding cycle, taken out of the loop to run on another thread; running it
/// files the pod as [`Scheduler::schedule_next`](super::Scheduler::schedule_next)
/// would have (bound, or unreserved and requeued). Dropping it unrun aborts the binding (the pod is forgotten by the
/// cache but stays in the queue's in-flight set: run it).
#[must_use = "a pending binding holds a reservation until it is run"]
pub struct PendingBinding {
    pod: Arc<PodInfo>,
    binding: BindingCycle,
    finisher: BindingFinisher,
}

impl std::fmt::Debug for PendingBinding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PendingBinding")
            .field("pod", &self.pod.pod.key())
            .field("node", &self.binding.node())
            .finish_non_exhaustive()
    }
}

impl PendingBinding {
    pub(super) fn new(pod: Arc<PodInfo>, binding: BindingCycle, finisher: BindingFinisher) -> Self {
        PendingBinding { pod, binding, finisher }
    }

    /// The pod.
    pub fn pod(&self) -> &Arc<PodInfo> {
        &self.pod
    }

    /// The node it is assumed on.
    pub fn node(&self) -> &str {
        self.binding.node()
    }

    /// Runs the binding cycle and files the pod.
    pub fn run(self) -> Attempt {
        let outcome = self.finisher.finish(self.binding);
        Attempt { pod: self.pod, outcome }
    }

    /// Runs the binding cycle up to its Bind step ([`BindingCycle::pre_bind`]: the
    /// Permit wait, PreBind). `Err` is the attempt when that failed (the pod is
    /// filed as [`PendingBinding::run`] files it).
    pub fn pre_bind(self) -> Result<PendingBind, Box<Attempt>> {
        let PendingBinding { pod, binding, finisher } = self;
        let assumed = binding.pod().clone();
        match binding.pre_bind() {
            Ok(ready) => Ok(PendingBind { pod, ready, finisher }),
            Err(e) => {
                let outcome = finisher.file(assumed, Err(e));
                Err(Box::new(Attempt { pod, outcome }))
            }
        }
    }
}

/// A [`PendingBinding`] past PreBind ([`PendingBinding::pre_bind`]), at its Bind
/// step: run it ([`PendingBind::bind`]), or, when the caller does the binding for
/// the deciding plugin ([`PendingBind::delegate`]), report how it went
/// ([`PendingBind::bound`]). Either files the pod. Dropping it unrun aborts it, as
/// dropping a [`PendingBinding`] does.
#[must_use = "a pending binding holds a reservation until it is run"]
pub struct PendingBind {
    pod: Arc<PodInfo>,
    ready: ReadyToBind,
    finisher: BindingFinisher,
}

impl std::fmt::Debug for PendingBind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PendingBind")
            .field("pod", &self.pod.pod.key())
            .field("node", &self.ready.node())
            .finish_non_exhaustive()
    }
}

impl PendingBind {
    /// The pod.
    pub fn pod(&self) -> &Arc<PodInfo> {
        &self.pod
    }

    /// The node it is assumed on.
    pub fn node(&self) -> &str {
        self.ready.node()
    }

    /// [`ReadyToBind::delegate`]: what the deciding Bind plugin offers a caller that
    /// binds for it.
    pub fn delegate(&self) -> Option<&dyn std::any::Any> {
        self.ready.delegate()
    }

    /// Runs Bind and the rest of the cycle, and files the pod.
    pub fn bind(self) -> Attempt {
        let assumed = self.ready.pod().clone();
        let outcome = self.finisher.file(assumed, self.ready.bind());
        Attempt { pod: self.pod, outcome }
    }

    /// Finishes with the status of a Bind the caller did for the deciding plugin
    /// ([`ReadyToBind::bound`]), and files the pod.
    pub fn bound(self, status: Status) -> Attempt {
        let assumed = self.ready.pod().clone();
        let outcome = self.finisher.file(assumed, self.ready.bound(status));
        Attempt { pod: self.pod, outcome }
    }
}

/// What filing a finished binding needs, shareable with another thread.
pub(super) struct BindingFinisher {
    queue: Arc<Mutex<SchedulingQueue>>,
    handle: Handle,
}

impl BindingFinisher {
    pub(super) fn new(queue: Arc<Mutex<SchedulingQueue>>, handle: Handle) -> Self {
        BindingFinisher { queue, handle }
    }

    /// Runs a binding cycle that won't block, and files the pod accordingly.
    pub(super) fn finish(&self, binding: BindingCycle) -> AttemptOutcome {
        let assumed = binding.pod().clone();
        let result = binding.run();
        self.file(assumed, result)
    }

    /// Files the pod `assumed` after its binding cycle ended with `result`.
    fn file(&self, assumed: Arc<PodInfo>, result: Result<Arc<PodInfo>, BindError>) -> AttemptOutcome {
        let uid = assumed.uid.clone();
        let uids = self.handle.take_pods_to_activate();
        if !uids.is_empty() {
            self.queue.lock().activate(uids.iter().map(|u| &**u));
        }
        match result {
            Ok(pod) => {
                let mut q = self.queue.lock();
                let _ = q.done(&uid);
                // In an embedded loop the binding is the pod's arrival on its node
                // (upstream learns it from the informer): pods waiting for an
                // assigned pod (e.g. pod affinity) may move.
                q.on_event(events::ASSIGNED_POD_ADD, &EventObject::Pod { old: None, new: Some(pod.clone()) });
                AttemptOutcome::Bound(pod.node_name().to_owned())
            }
            Err(error) => {
                let rejectors: Vec<&'static str> = if error.status.is_rejected() {
                    error.status.plugin().into_iter().filter(|p| *p != SCHEDULER_REJECTOR).collect()
                } else {
                    Vec::new()
                };
                let mut q = self.queue.lock();
                let location = q.requeue_failed(&uid, &rejectors);
                // The reservation is gone: other pods may fit now (upstream moves
                // pods on `AssignedPodDelete` after a failed binding, but never the
                // failed pod itself).
                let obj = EventObject::Pod { old: Some(assumed), new: None };
                if let Ok(QueueLocation::Unschedulable) = location {
                    q.on_event_except(events::ASSIGNED_POD_DELETE, &obj, &uid);
                } else {
                    q.on_event(events::ASSIGNED_POD_DELETE, &obj);
                }
                match location {
                    Ok(location) => AttemptOutcome::BindFailed { location, error },
                    Err(_) => AttemptOutcome::Dropped,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::any::Any;

    use super::*;
    use crate::framework::Profile;
    use crate::model::Pod;
    use crate::plugins::default_binder::{Binder, DefaultBinder, NoopBinder};
    use crate::scheduler::{Next, PodState, Scheduler};
    use crate::testing::{NodeBuilder, PodBuilder};

    /// A binder whose bindings the caller does (its own `bind` would fail).
    struct Delegated;

    impl Binder for Delegated {
        fn bind(&self, _: &Pod, _: &str) -> Result<(), String> {
            Err("bound by the caller only".into())
        }
        fn delegate(&self) -> Option<&dyn Any> {
            Some(self)
        }
    }

    fn scheduler(binder: impl Binder) -> Scheduler {
        let profile = Profile::builder("default-scheduler").plugin(DefaultBinder::new(binder)).build().unwrap();
        let s = Scheduler::builder().profile(profile).build();
        s.add_node(NodeBuilder::new("n1").cpu("4").build()).unwrap();
        for name in ["a", "b"] {
            s.add_pod(PodBuilder::new(name).cpu("1").build()).unwrap();
        }
        s
    }

    fn next_binding(s: &mut Scheduler) -> PendingBinding {
        match s.schedule_next_deferred() {
            Some(Next::Bind(b)) => *b,
            other => panic!("expected a binding, got {other:?}"),
        }
    }

    #[test]
    fn a_delegated_bind_is_reported_by_the_caller_and_files_the_pod() {
        let mut s = scheduler(Delegated);
        let p = next_binding(&mut s).pre_bind().unwrap();
        assert!(p.delegate().is_some_and(<dyn Any>::is::<Delegated>));
        let a = p.bound(DefaultBinder::outcome(Ok(())));
        assert!(matches!(&a.outcome, AttemptOutcome::Bound(n) if n == "n1"), "{:?}", a.outcome);
        assert_eq!(s.pod_state("default/a"), Some(PodState::Bound));
        // A failure the caller reports is the DefaultBinder's, and requeues the pod.
        let p = next_binding(&mut s).pre_bind().unwrap();
        let a = p.bound(DefaultBinder::outcome(Err("409 Conflict".into())));
        match &a.outcome {
            AttemptOutcome::BindFailed { error, .. } => {
                assert_eq!(error.status.plugin(), Some("DefaultBinder"));
                assert!(
                    error.status.message().contains("binding rejected: 409 Conflict"),
                    "{}",
                    error.status.message()
                );
            }
            other => panic!("expected a failed binding, got {other:?}"),
        }
        assert!(
            matches!(s.pod_state("default/b"), Some(PodState::Backoff | PodState::Active)),
            "{:?}",
            s.pod_state("default/b")
        );
    }

    #[test]
    fn a_binder_that_does_not_delegate_binds_in_bind() {
        let mut s = scheduler(NoopBinder);
        let p = next_binding(&mut s).pre_bind().unwrap();
        assert!(p.delegate().is_none());
        let a = p.bind();
        assert!(matches!(&a.outcome, AttemptOutcome::Bound(n) if n == "n1"), "{:?}", a.outcome);
        assert_eq!(s.pod_state("default/a"), Some(PodState::Bound));
    }
}
