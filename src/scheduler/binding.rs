//! The binding cycle: wait at Permit -> PreBind -> Bind -> PostBind
//! (upstream `bindingCycle` in `schedule_one.go`), as a value the caller runs.

use std::sync::Arc;

use parking_lot::Mutex;

use crate::framework::runtime;
use crate::framework::{CycleState, Handle, Profile, Status, WaitingPod};
use crate::snapshot::{Cache, PodInfo};

/// A binding that failed; the pod was unreserved and forgotten, so its node's
/// resources are free again and it can be retried.
#[derive(Debug, Clone, thiserror::Error)]
#[error("binding pod {pod} to node {node:?} failed: {status}")]
pub struct BindError {
    /// `namespace/name`.
    pub pod: String,
    /// The node it was headed to.
    pub node: String,
    /// Why, with the failing plugin.
    pub status: Status,
}

/// A pod assumed on a node, reserved and permitted (or waiting at Permit), ready to
/// bind. Run it on any thread with [`BindingCycle::run`], or undo it with
/// [`BindingCycle::abort`]. Dropping it without either aborts it too, so a binding
/// can't leak a reservation.
#[must_use = "a binding cycle holds a reservation until it is run or aborted"]
pub struct BindingCycle {
    inner: Option<Inner>,
}

struct Inner {
    profile: Arc<Profile>,
    cache: Arc<Mutex<Cache>>,
    handle: Handle,
    state: CycleState,
    pod: Arc<PodInfo>,
    node: String,
    waiting: Option<Arc<WaitingPod>>,
}

impl std::fmt::Debug for BindingCycle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.inner {
            Some(i) => f
                .debug_struct("BindingCycle")
                .field("pod", &i.pod.uid)
                .field("node", &i.node)
                .field("waiting", &i.waiting.is_some())
                .finish(),
            None => f.write_str("BindingCycle(done)"),
        }
    }
}

impl BindingCycle {
    pub(crate) fn new(
        profile: Arc<Profile>,
        cache: Arc<Mutex<Cache>>,
        handle: Handle,
        state: CycleState,
        pod: Arc<PodInfo>,
        node: String,
        waiting: Option<Arc<WaitingPod>>,
    ) -> BindingCycle {
        BindingCycle { inner: Some(Inner { profile, cache, handle, state, pod, node, waiting }) }
    }

    fn inner(&self) -> &Inner {
        self.inner.as_ref().expect("a BindingCycle is consumed by run or abort")
    }

    /// The node chosen.
    pub fn node(&self) -> &str {
        &self.inner().node
    }

    /// The pod (as assumed: `spec.nodeName` set).
    pub fn pod(&self) -> &Arc<PodInfo> {
        &self.inner().pod
    }

    /// The cycle state the scheduling cycle left (e.g. what Reserve recorded).
    pub fn cycle_state(&self) -> &CycleState {
        &self.inner().state
    }

    /// Whether a Permit plugin is holding the pod.
    pub fn is_waiting(&self) -> bool {
        self.inner().waiting.is_some()
    }

    /// Whether [`BindingCycle::run`] would go on without blocking: the pod isn't held
    /// at Permit, or every waiting plugin allowed it, or it was rejected, or a
    /// plugin's timeout passed on the scheduler's clock. Never blocks.
    pub fn permit_resolved(&self) -> bool {
        let i = self.inner();
        i.waiting.as_ref().is_none_or(|wp| wp.poll(i.handle.clock()).is_some())
    }

    /// The earliest Permit timeout still pending (clock time), while held at Permit.
    pub fn permit_deadline(&self) -> Option<std::time::Duration> {
        self.inner().waiting.as_ref().and_then(|wp| wp.next_deadline())
    }

    /// Waits at Permit if needed, then PreBind, Bind and PostBind. On success the
    /// cache marks the binding finished; on failure every Reserve plugin's Unreserve
    /// runs in reverse order and the assumed pod is forgotten.
    pub fn run(mut self) -> Result<Arc<PodInfo>, BindError> {
        let mut i = self.inner.take().expect("a BindingCycle is consumed by run or abort");
        if let Some(wp) = i.waiting.take() {
            let s = wp.wait(i.handle.clock());
            i.handle.waiting_pods().remove(&i.pod.uid);
            if !s.is_success() {
                return Err(fail(&mut i, s));
            }
        }
        let s = runtime::run_pre_bind(&i.profile, &mut i.state, &i.pod, &i.node);
        if !s.is_success() {
            return Err(fail(&mut i, s));
        }
        let s = runtime::run_bind(&i.profile, &mut i.state, &i.pod, &i.node);
        if !s.is_success() {
            return Err(fail(&mut i, s));
        }
        let _ = i.cache.lock().finish_binding(&i.pod.uid);
        runtime::run_post_bind(&i.profile, &i.state, &i.pod, &i.node);
        Ok(i.pod)
    }

    /// Gives up on the binding: unreserve in reverse order and forget the pod.
    pub fn abort(mut self, reason: &str) -> BindError {
        let mut i = self.inner.take().expect("a BindingCycle is consumed by run or abort");
        fail(&mut i, Status::unschedulable(reason.to_owned()))
    }
}

impl Drop for BindingCycle {
    fn drop(&mut self) {
        if let Some(mut i) = self.inner.take() {
            fail(&mut i, Status::unschedulable("binding cycle dropped"));
        }
    }
}

fn fail(i: &mut Inner, status: Status) -> BindError {
    if let Some(wp) = i.waiting.take() {
        i.handle.waiting_pods().remove(&wp.pod().uid);
    }
    runtime::run_unreserve(&i.profile, &mut i.state, &i.pod, &i.node);
    let _ = i.cache.lock().forget_pod(&i.pod.uid);
    BindError { pod: i.pod.pod.key(), node: i.node.clone(), status }
}
