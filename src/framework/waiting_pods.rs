//! Pods held at Permit (upstream `waitingPodsMap` in `framework/runtime`).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use ahash::{AHashMap, AHashSet};
use parking_lot::{Condvar, Mutex};

use super::{Clock, Code, Status};
use crate::snapshot::PodInfo;

/// The longest a Permit plugin may make a pod wait (upstream `maxTimeout`, 15 minutes).
pub const MAX_PERMIT_TIMEOUT: Duration = Duration::from_secs(15 * 60);

#[derive(Debug)]
struct WaitState {
    /// Plugins that said Wait and haven't allowed yet, with their deadlines.
    pending: AHashMap<&'static str, Duration>,
    rejected: Option<Status>,
}

/// One pod waiting at Permit. Any thread may allow or reject it.
#[derive(Debug)]
pub struct WaitingPod {
    pod: Arc<PodInfo>,
    node: String,
    state: Mutex<WaitState>,
    cond: Condvar,
    /// Shared with the registry: bumped whenever a decision is made.
    epoch: Arc<AtomicU64>,
}

impl WaitingPod {
    /// The pod.
    pub fn pod(&self) -> &Arc<PodInfo> {
        &self.pod
    }

    /// The node it is headed to.
    pub fn node(&self) -> &str {
        &self.node
    }

    /// Plugins it still waits for.
    pub fn pending_plugins(&self) -> Vec<&'static str> {
        let mut v: Vec<_> = self.state.lock().pending.keys().copied().collect();
        v.sort_unstable();
        v
    }

    /// `plugin` allows the pod; once every waiting plugin has, the pod goes on.
    pub fn allow(&self, plugin: &str) {
        let mut s = self.state.lock();
        let before = s.pending.len();
        s.pending.retain(|p, _| *p != plugin);
        if s.pending.is_empty() {
            if before > 0 {
                self.epoch.fetch_add(1, Ordering::Release);
            }
            self.cond.notify_all();
        }
    }

    /// Rejects the pod. The first decision wins, as upstream's one-slot signal: a
    /// second rejection, or a rejection after every plugin allowed, changes nothing.
    pub fn reject(&self, plugin: &'static str, reason: &str) {
        let mut s = self.state.lock();
        if s.rejected.is_none() && !s.pending.is_empty() {
            s.rejected = Some(Status::unschedulable(reason.to_owned()).with_plugin(plugin));
            self.epoch.fetch_add(1, Ordering::Release);
        }
        self.cond.notify_all();
    }

    /// The outcome so far without blocking: `None` while still waiting, else the
    /// final status (success once every plugin allowed; the rejection; or a timeout
    /// once a plugin's deadline has passed on `clock`). A resolved pod stays resolved.
    pub(crate) fn poll(&self, clock: &dyn Clock) -> Option<Status> {
        Self::resolve(&self.state.lock(), clock.now())
    }

    fn resolve(s: &WaitState, now: Duration) -> Option<Status> {
        if let Some(r) = &s.rejected {
            return Some(r.clone());
        }
        let Some((&plugin, &deadline)) = s.pending.iter().min_by_key(|(_, d)| **d) else {
            return Some(Status::SUCCESS);
        };
        (now >= deadline).then(|| {
            Status::unschedulable(format!(
                "rejected due to timeout after waiting until {deadline:?} at plugin {plugin}"
            ))
            .with_plugin(plugin)
        })
    }

    /// The earliest deadline still pending, while the pod is still waiting.
    pub(crate) fn next_deadline(&self) -> Option<Duration> {
        let s = self.state.lock();
        if s.rejected.is_some() {
            return None;
        }
        s.pending.values().min().copied()
    }

    /// Blocks until allowed, rejected, or a plugin's deadline passes on `clock`.
    pub(crate) fn wait(&self, clock: &dyn Clock) -> Status {
        let mut s = self.state.lock();
        loop {
            let now = clock.now();
            if let Some(r) = Self::resolve(&s, now) {
                return r;
            }
            let deadline = s.pending.values().min().copied().unwrap_or(now);
            self.cond.wait_for(&mut s, clock.real_wait(deadline.saturating_sub(now)));
        }
    }
}

/// All pods currently waiting at Permit, by uid. Shared through the [`super::Handle`].
#[derive(Debug, Default)]
pub struct WaitingPods {
    pods: Mutex<AHashMap<Arc<str>, Arc<WaitingPod>>>,
    epoch: Arc<AtomicU64>,
}

impl WaitingPods {
    /// Registers a pod waiting for `plugins` (name, timeout) from `now`.
    pub(crate) fn add(
        &self,
        pod: &Arc<PodInfo>,
        node: &str,
        plugins: &[(&'static str, Duration)],
        now: Duration,
    ) -> Arc<WaitingPod> {
        let pending: AHashMap<&'static str, Duration> = plugins.iter().map(|&(p, t)| (p, now + t)).collect();
        let wp = Arc::new(WaitingPod {
            node: node.to_owned(),
            state: Mutex::new(WaitState { pending, rejected: None }),
            cond: Condvar::new(),
            epoch: self.epoch.clone(),
            pod: pod.clone(),
        });
        self.pods.lock().insert(pod.uid.clone(), wp.clone());
        wp
    }

    /// Counts allow/reject decisions so far; the scheduler loop re-polls parked
    /// bindings only when it moved (or a deadline passed).
    pub(crate) fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Acquire)
    }

    pub(crate) fn remove(&self, uid: &str) {
        self.pods.lock().remove(uid);
    }

    /// A waiting pod by uid.
    pub fn get(&self, uid: &str) -> Option<Arc<WaitingPod>> {
        self.pods.lock().get(uid).cloned()
    }

    /// Uids of all waiting pods.
    pub fn uids(&self) -> AHashSet<Arc<str>> {
        self.pods.lock().keys().cloned().collect()
    }

    /// Calls `f` on each waiting pod.
    pub fn for_each(&self, mut f: impl FnMut(&Arc<WaitingPod>)) {
        let pods: Vec<_> = self.pods.lock().values().cloned().collect();
        for p in &pods {
            f(p);
        }
    }

    /// Allows a pod on behalf of `plugin`; false if no such pod waits.
    pub fn allow(&self, uid: &str, plugin: &str) -> bool {
        self.get(uid).map(|p| p.allow(plugin)).is_some()
    }

    /// Rejects a waiting pod; false if no such pod waits.
    pub fn reject(&self, uid: &str, plugin: &'static str, reason: &str) -> bool {
        self.get(uid).map(|p| p.reject(plugin, reason)).is_some()
    }

    /// Number of waiting pods.
    pub fn len(&self) -> usize {
        self.pods.lock().len()
    }

    /// Whether none wait.
    pub fn is_empty(&self) -> bool {
        self.pods.lock().is_empty()
    }
}

/// Validates a Permit timeout: zero or beyond [`MAX_PERMIT_TIMEOUT`] is an error status.
pub(crate) fn check_timeout(plugin: &'static str, t: Duration) -> Result<Duration, Status> {
    if t.is_zero() {
        return Err(
            Status::new(Code::Error, format!("plugin {plugin} asked to wait for a zero timeout")).with_plugin(plugin)
        );
    }
    Ok(t.min(MAX_PERMIT_TIMEOUT))
}
