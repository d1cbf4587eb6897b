//! DefaultBinder: binds through the embedding scheduler's [`Binder`]
//! (upstream `plugins/defaultbinder/default_binder.go` posts a Binding to the API
//! server; here the caller decides what binding means).

use std::sync::Arc;

use parking_lot::Mutex;

use crate::framework::{BindPlugin, CycleState, ExtensionPoints, Plugin, Status};
use crate::model::Pod;
use crate::plugins::names;
use crate::snapshot::PodInfo;

/// What the embedding scheduler does to bind a pod (an API call, a message, a no-op).
pub trait Binder: Send + Sync + 'static {
    /// Binds `pod` to `node`; an `Err` fails the binding cycle (the pod is unreserved
    /// and retried).
    fn bind(&self, pod: &Pod, node: &str) -> Result<(), String>;

    /// Lets a driver recognise this binder (by downcasting) and bind for it, e.g.
    /// many bindings at once ([`DefaultBinder`] hands it out as its
    /// [`BindPlugin::delegate`]); the driver reports the outcome through
    /// [`DefaultBinder::outcome`]. `None` (the default): always call `bind`.
    fn delegate(&self) -> Option<&dyn std::any::Any> {
        None
    }
}

/// A binder that records bindings in memory (tests, simulations).
///
/// ```
/// use schedkit::plugins::default_binder::{Binder, RecordingBinder};
/// let b = RecordingBinder::default();
/// b.bind(&Default::default(), "n1").unwrap();
/// assert_eq!(b.bindings(), [("default/".to_string(), "n1".to_string())]);
/// ```
#[derive(Debug, Default)]
pub struct RecordingBinder {
    bindings: Mutex<Vec<(String, String)>>,
}

impl RecordingBinder {
    /// `(namespace/name, node)` in binding order.
    pub fn bindings(&self) -> Vec<(String, String)> {
        self.bindings.lock().clone()
    }
}

impl Binder for RecordingBinder {
    fn bind(&self, pod: &Pod, node: &str) -> Result<(), String> {
        self.bindings.lock().push((pod.key(), node.to_owned()));
        Ok(())
    }
}

/// A binder that accepts every binding and keeps nothing: the default, since an
/// embedding learns of each binding from the binding cycle's result.
///
/// ```
/// use schedkit::plugins::default_binder::{Binder, NoopBinder};
/// assert_eq!(NoopBinder.bind(&Default::default(), "n1"), Ok(()));
/// ```
#[derive(Debug, Default, Clone, Copy)]
pub struct NoopBinder;

impl Binder for NoopBinder {
    fn bind(&self, _pod: &Pod, _node: &str) -> Result<(), String> {
        Ok(())
    }
}

impl<B: Binder> Binder for Arc<B> {
    fn bind(&self, pod: &Pod, node: &str) -> Result<(), String> {
        (**self).bind(pod, node)
    }
    fn delegate(&self) -> Option<&dyn std::any::Any> {
        (**self).delegate()
    }
}

/// The DefaultBinder plugin.
pub struct DefaultBinder {
    binder: Box<dyn Binder>,
}

impl std::fmt::Debug for DefaultBinder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DefaultBinder").finish_non_exhaustive()
    }
}

impl DefaultBinder {
    /// Binds through `binder`.
    pub fn new(binder: impl Binder) -> Self {
        DefaultBinder { binder: Box::new(binder) }
    }

    /// The Bind status for a [`Binder`]'s result, as [`BindPlugin::bind`] returns it
    /// (for a driver that bound on the binder's behalf, see [`Binder::delegate`]).
    pub fn outcome(result: Result<(), String>) -> Status {
        match result {
            Ok(()) => Status::SUCCESS,
            Err(e) => Status::error(format!("binding rejected: {e}")),
        }
    }
}

impl Default for DefaultBinder {
    /// Accepts every binding ([`NoopBinder`]). It used to record each binding in a
    /// list nobody could read, which grew by about a hundred bytes per bound pod for
    /// the life of the scheduler; give [`DefaultBinder::new`] a [`RecordingBinder`]
    /// behind an `Arc` to keep that record where you can read it.
    fn default() -> Self {
        DefaultBinder::new(NoopBinder)
    }
}

impl Plugin for DefaultBinder {
    fn name(&self) -> &str {
        names::DEFAULT_BINDER
    }
    fn register(self: Arc<Self>, p: &mut ExtensionPoints) {
        p.bind(self);
    }
}

impl BindPlugin for DefaultBinder {
    fn bind(&self, _: &mut CycleState, pod: &PodInfo, node: &str) -> Status {
        DefaultBinder::outcome(self.binder.bind(&pod.pod, node))
    }
    fn delegate(&self) -> Option<&dyn std::any::Any> {
        self.binder.delegate()
    }
}
