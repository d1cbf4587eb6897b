//! What preemption plugins reach through the handle: the caller's [`Evictor`], the
//! PodDisruptionBudgets, the nominator, and the profile running the cycle.

use std::sync::Arc;

use parking_lot::RwLock;

use super::Nominator;
use crate::framework::{CycleState, Profile, Status};
use crate::model::{PdbError, PodDisruptionBudget};
use crate::snapshot::PodInfo;

/// Why preemption could not be carried out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PreemptionError {
    /// The caller's [`Evictor`] failed on a victim. Victims before it were evicted;
    /// the preemptor stays nominated, so a retry sees the evicted pods leave through
    /// the cache and evicts only what is still needed.
    #[error(
        "preempting for pod {preemptor} on node {node}: evicting {victim} failed after {evicted} eviction(s): {reason}"
    )]
    EvictionFailed {
        /// `namespace/name` of the preemptor.
        preemptor: String,
        /// The nominated node.
        node: String,
        /// `namespace/name` of the victim that failed.
        victim: String,
        /// Victims evicted before the failure.
        evicted: usize,
        /// The evictor's reason.
        reason: String,
    },
    /// No evictor was set on the handle ([`PreemptionServices::set_evictor`]): the
    /// pod is not nominated and PostFilter reports `Unschedulable` with this message.
    #[error("preemption found victims for pod {preemptor} on node {node} but no Evictor is configured")]
    NoEvictor {
        /// `namespace/name` of the preemptor.
        preemptor: String,
        /// The node.
        node: String,
    },
}

/// Evicts preemption victims; implemented by the caller (delete the pod through the
/// API server, or remove it from a simulation). Called on the scheduling thread, once
/// per victim, highest priority first. An `Err` stops the preemption: the pod stays
/// nominated and the scheduler reports an error so it is retried.
pub trait Evictor: Send + Sync {
    /// Evicts `victim` from `node` to make room for `preemptor`.
    fn evict(&self, preemptor: &PodInfo, node: &str, victim: &PodInfo) -> Result<(), String>;
}

/// An [`Evictor`] that only records what it was asked to evict (simulations, tests).
#[derive(Debug, Default)]
pub struct RecordingEvictor {
    evicted: parking_lot::Mutex<Vec<(String, String)>>,
}

impl RecordingEvictor {
    /// `(node, victim uid)` pairs in eviction order, draining the record.
    pub fn take(&self) -> Vec<(String, String)> {
        std::mem::take(&mut *self.evicted.lock())
    }
}

impl Evictor for RecordingEvictor {
    fn evict(&self, _preemptor: &PodInfo, node: &str, victim: &PodInfo) -> Result<(), String> {
        self.evicted.lock().push((node.to_owned(), victim.uid.to_string()));
        Ok(())
    }
}

/// What preemption plugins reach through the [`Handle`](crate::framework::Handle): nominated pods, the
/// PodDisruptionBudgets, and the caller's evictor.
#[derive(Default)]
pub struct PreemptionServices {
    nominator: Nominator,
    pdbs: RwLock<Arc<Vec<PodDisruptionBudget>>>,
    evictor: RwLock<Option<Arc<dyn Evictor>>>,
}

impl std::fmt::Debug for PreemptionServices {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreemptionServices")
            .field("nominated", &self.nominator.len())
            .field("pdbs", &self.pdbs.read().len())
            .field("evictor", &self.evictor.read().is_some())
            .finish()
    }
}

impl PreemptionServices {
    /// The nominated pods.
    pub fn nominator(&self) -> &Nominator {
        &self.nominator
    }

    /// Replaces the budgets after validating each one.
    pub fn set_pod_disruption_budgets(&self, pdbs: Vec<PodDisruptionBudget>) -> Result<(), PdbError> {
        for p in &pdbs {
            p.validate()?;
        }
        *self.pdbs.write() = Arc::new(pdbs);
        Ok(())
    }

    /// The budgets.
    pub fn pod_disruption_budgets(&self) -> Arc<Vec<PodDisruptionBudget>> {
        self.pdbs.read().clone()
    }

    /// Sets the evictor victims are handed to.
    pub fn set_evictor(&self, evictor: Arc<dyn Evictor>) {
        *self.evictor.write() = Some(evictor);
    }

    /// The evictor, if set.
    pub fn evictor(&self) -> Option<Arc<dyn Evictor>> {
        self.evictor.read().clone()
    }
}

// ---------------------------------------------------------------------------------
// The running profile
// ---------------------------------------------------------------------------------

/// The profile running this cycle, written into the [`CycleState`] by the scheduler
/// before PostFilter so preemption plugins can run dry-run Filters with it. Call
/// [`RunningProfile::write`] yourself when invoking a PostFilter plugin outside the
/// scheduler.
#[derive(Clone)]
pub struct RunningProfile(pub Arc<Profile>);

impl RunningProfile {
    /// Stores `profile` in `state`.
    pub fn write(state: &mut CycleState, profile: Arc<Profile>) {
        state.write(RunningProfile(profile));
    }

    /// The profile in `state`, or an `Error` status naming `plugin`.
    pub fn read(state: &CycleState, plugin: &str) -> Result<Arc<Profile>, Status> {
        state.read::<RunningProfile>().map(|r| r.0.clone()).ok_or_else(|| {
            Status::error(format!("{plugin}: the cycle state has no running profile (RunningProfile::write)"))
        })
    }
}
