//! The binding cycle: wait at Permit -> PreBind -> Bind -> PostBind
//! (upstream `bindingCycle` in `schedule_one.go`), as a value the caller runs.

use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;

use crate::framework::metrics::ProfileTimers;
use crate::framework::runtime;
use crate::framework::scheduler_metrics::{AttemptResult, MetricPoint, ProfileMetrics, time_point};
use crate::framework::{Code, CycleState, Handle, Profile, Status, WaitingPod};
use crate::model::Node;
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
    node: ChosenNode,
    waiting: Option<Arc<WaitingPod>>,
    metrics: Option<BindingMetrics>,
}

/// The node a binding goes to: the node object the scheduling cycle chose (shared,
/// so handing it over copies nothing), or a name.
pub(crate) enum ChosenNode {
    Node(Arc<Node>),
    Name(String),
}

impl ChosenNode {
    fn as_str(&self) -> &str {
        match self {
            ChosenNode::Node(n) => n.name(),
            ChosenNode::Name(n) => n,
        }
    }
}

impl From<Arc<Node>> for ChosenNode {
    fn from(n: Arc<Node>) -> Self {
        ChosenNode::Node(n)
    }
}

impl From<String> for ChosenNode {
    fn from(n: String) -> Self {
        ChosenNode::Name(n)
    }
}

/// What the binding cycle records when the scheduler has a latency recorder: the
/// profile's extension-point and attempt metrics, the plugin timers when the cycle
/// was sampled, and when the attempt started (upstream's attempt duration covers
/// the scheduling and the binding cycle).
pub(crate) struct BindingMetrics {
    profile: Arc<ProfileMetrics>,
    timers: Option<Arc<ProfileTimers>>,
    started: Instant,
}

impl BindingMetrics {
    pub(crate) fn new(profile: Arc<ProfileMetrics>, timers: Option<Arc<ProfileTimers>>, started: Instant) -> Self {
        BindingMetrics { profile, timers, started }
    }
}

impl std::fmt::Debug for BindingCycle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.inner {
            Some(i) => f
                .debug_struct("BindingCycle")
                .field("pod", &i.pod.uid)
                .field("node", &i.node.as_str())
                .field("waiting", &i.waiting.is_some())
                .finish(),
            None => f.write_str("BindingCycle(done)"),
        }
    }
}

impl BindingCycle {
    #[expect(clippy::too_many_arguments, reason = "internal; the scheduling cycle's hand-over")]
    pub(crate) fn new(
        profile: Arc<Profile>,
        cache: Arc<Mutex<Cache>>,
        handle: Handle,
        state: CycleState,
        pod: Arc<PodInfo>,
        node: impl Into<ChosenNode>,
        waiting: Option<Arc<WaitingPod>>,
        metrics: Option<BindingMetrics>,
    ) -> BindingCycle {
        let node = node.into();
        BindingCycle { inner: Some(Inner { profile, cache, handle, state, pod, node, waiting, metrics }) }
    }

    fn inner(&self) -> &Inner {
        self.inner.as_ref().expect("a BindingCycle is consumed by run or abort")
    }

    /// The node chosen.
    pub fn node(&self) -> &str {
        self.inner().node.as_str()
    }

    /// The pod as assumed: [`PodInfo::node_name`] is the node (the object itself is
    /// shared with the queued pod, so `spec.nodeName` is as the API object has it).
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

    /// How the Permit wait ended, without blocking: `None` while still held, else
    /// [`Status::SUCCESS`] (not held, or every waiting plugin allowed it) or the
    /// rejection or timeout [`BindingCycle::run`] would fail with. A driver that runs
    /// bindings on other threads can thus undo a rejected one on its own thread.
    pub fn permit_outcome(&self) -> Option<Status> {
        let i = self.inner();
        match &i.waiting {
            None => Some(Status::SUCCESS),
            Some(wp) => wp.poll(i.handle.clock()),
        }
    }

    /// The earliest Permit timeout still pending (clock time), while held at Permit.
    pub fn permit_deadline(&self) -> Option<std::time::Duration> {
        self.inner().waiting.as_ref().and_then(|wp| wp.next_deadline())
    }

    /// Waits at Permit if needed, then PreBind, Bind and PostBind. On success the
    /// cache marks the binding finished; on failure every Reserve plugin's Unreserve
    /// runs in reverse order and the assumed pod is forgotten.
    pub fn run(self) -> Result<Arc<PodInfo>, BindError> {
        self.pre_bind()?.bind()
    }

    /// The binding cycle up to its Bind step: waits at Permit if needed, then runs
    /// PreBind. On failure the pod is unreserved and forgotten, as by
    /// [`BindingCycle::run`]. A driver that sends bindings itself (many at once, see
    /// [`ReadyToBind::delegate`]) goes on with [`ReadyToBind::bound`]; anyone else
    /// with [`ReadyToBind::bind`].
    pub fn pre_bind(mut self) -> Result<ReadyToBind, BindError> {
        let mut i = self.inner.take().expect("a BindingCycle is consumed by run or abort");
        if let Some(wp) = i.waiting.take() {
            let s = wp.wait(i.handle.clock());
            i.handle.waiting_pods().remove(&i.pod.uid);
            if !s.is_success() {
                return Err(fail(&mut i, s));
            }
        }
        let m = i.metrics.as_ref().map(|m| &*m.profile);
        let t = i.metrics.as_ref().and_then(|m| m.timers.as_deref());
        let s = time_point(
            m,
            MetricPoint::PreBind,
            || runtime::run_pre_bind(&i.profile, &mut i.state, &i.pod, i.node.as_str(), t.map(|t| &t.pre_bind)),
            Status::code,
        );
        if !s.is_success() {
            return Err(fail(&mut i, s));
        }
        let since = i.metrics.as_ref().map(|_| Instant::now());
        Ok(ReadyToBind { inner: Some(i), since })
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

/// A binding cycle past PreBind, at its Bind step (from [`BindingCycle::pre_bind`]).
/// Dropping it aborts the binding, as dropping a [`BindingCycle`] does.
#[must_use = "a binding cycle holds a reservation until it is bound or aborted"]
pub struct ReadyToBind {
    inner: Option<Inner>,
    /// When Bind started, when metrics are recorded.
    since: Option<Instant>,
}

impl std::fmt::Debug for ReadyToBind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.inner {
            Some(i) => f
                .debug_struct("ReadyToBind")
                .field("pod", &i.pod.uid)
                .field("node", &i.node.as_str())
                .finish_non_exhaustive(),
            None => f.write_str("ReadyToBind(done)"),
        }
    }
}

impl ReadyToBind {
    fn inner(&self) -> &Inner {
        self.inner.as_ref().expect("a ReadyToBind is consumed by bind or bound")
    }

    /// The pod as assumed.
    pub fn pod(&self) -> &Arc<PodInfo> {
        &self.inner().pod
    }

    /// The node chosen.
    pub fn node(&self) -> &str {
        self.inner().node.as_str()
    }

    /// What the Bind plugin that will decide offers a driver that binds for it
    /// ([`BindPlugin::delegate`](crate::framework::BindPlugin::delegate)): `Some` only
    /// when no extender is an interested binder for the pod (upstream
    /// `extendersBinding` comes first) and the profile's first Bind plugin delegates
    /// (it never skips, so it decides). The kube runtime recognises its own
    /// `KubeBinder` here and sends the binding itself, many at once, then reports
    /// with [`ReadyToBind::bound`].
    pub fn delegate(&self) -> Option<&dyn std::any::Any> {
        let i = self.inner();
        if crate::framework::Extenders::of(&i.handle).is_some_and(|e| e.binds(&i.pod)) {
            return None;
        }
        i.profile.bind.first().and_then(|p| p.plugin.delegate())
    }

    /// Runs Bind (extenders first, then the Bind plugins) and finishes the cycle:
    /// PostBind on success, Unreserve and forget on failure.
    pub fn bind(mut self) -> Result<Arc<PodInfo>, BindError> {
        let mut i = self.inner.take().expect("a ReadyToBind is consumed by bind or bound");
        let m = i.metrics.as_ref().map(|m| &*m.profile);
        let t = i.metrics.as_ref().and_then(|m| m.timers.as_deref());
        let s = time_point(
            m,
            MetricPoint::Bind,
            // Extenders bind first (upstream `extendersBinding`); the Bind plugins run
            // when none is an interested binder.
            || match crate::framework::Extenders::of(&i.handle).and_then(|e| e.bind(&i.pod, i.node.as_str())) {
                Some(s) => s,
                None => runtime::run_bind(&i.profile, &mut i.state, &i.pod, i.node.as_str(), t.map(|t| &t.bind)),
            },
            Status::code,
        );
        after_bind(i, s)
    }

    /// Finishes the cycle with the outcome of a Bind the caller did on behalf of
    /// [`ReadyToBind::delegate`]'s plugin (`status` as that plugin would have
    /// returned it; a failure is attributed to it). The Bind metric covers the time
    /// since PreBind ended.
    pub fn bound(mut self, status: Status) -> Result<Arc<PodInfo>, BindError> {
        let i = self.inner.take().expect("a ReadyToBind is consumed by bind or bound");
        let status = match i.profile.bind.first() {
            Some(p) if !status.is_success() => status.with_plugin(p.name),
            _ => status,
        };
        if let (Some(m), Some(since)) = (&i.metrics, self.since) {
            m.profile.observe_point(MetricPoint::Bind, status.code(), since.elapsed());
        }
        after_bind(i, status)
    }
}

impl Drop for ReadyToBind {
    fn drop(&mut self) {
        if let Some(mut i) = self.inner.take() {
            fail(&mut i, Status::unschedulable("binding cycle dropped"));
        }
    }
}

/// The end of a binding cycle whose Bind returned `s`.
fn after_bind(mut i: Inner, s: Status) -> Result<Arc<PodInfo>, BindError> {
    if !s.is_success() {
        return Err(fail(&mut i, s));
    }
    let m = i.metrics.as_ref().map(|m| &*m.profile);
    let t = i.metrics.as_ref().and_then(|m| m.timers.as_deref());
    let _ = i.cache.lock().finish_binding(&i.pod.uid);
    time_point(
        m,
        MetricPoint::PostBind,
        || runtime::run_post_bind(&i.profile, &i.state, &i.pod, i.node.as_str(), t.map(|t| &t.post_bind)),
        |()| Code::Success,
    );
    if let Some(m) = &i.metrics {
        m.profile.observe_attempt(AttemptResult::Scheduled, m.started.elapsed());
    }
    Ok(i.pod)
}

fn fail(i: &mut Inner, status: Status) -> BindError {
    if let Some(wp) = i.waiting.take() {
        i.handle.waiting_pods().remove(&wp.pod().uid);
    }
    let m = i.metrics.as_ref().map(|m| &*m.profile);
    let t = i.metrics.as_ref().and_then(|m| m.timers.as_deref());
    time_point(
        m,
        MetricPoint::Unreserve,
        || runtime::run_unreserve_timed(&i.profile, &mut i.state, &i.pod, i.node.as_str(), t.map(|t| &t.unreserve)),
        |()| Code::Success,
    );
    let _ = i.cache.lock().forget_pod(&i.pod.uid);
    // As upstream `handleBindingCycleError` -> `handleSchedulingFailure`.
    if let Some(m) = &i.metrics {
        m.profile.observe_attempt(AttemptResult::of_failure(status.is_rejected()), m.started.elapsed());
    }
    BindError { pod: i.pod.pod.key(), node: i.node.as_str().to_owned(), status }
}
