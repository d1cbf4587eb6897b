//! PreEnqueue gating: each profile's PreEnqueue plugins and event registrations,
//! resolved once, and the step that sends a pod to the active queue or holds it.

use std::sync::Arc;

use super::{GatedPod, QueueLocation, SchedulingQueue};
use crate::framework::runtime::guard;
use crate::framework::{ClusterEventWithHint, Named, PreEnqueuePlugin, Profile};

/// One profile's PreEnqueue plugins and queueing-hint registrations.
pub(super) struct ProfileHooks {
    pub(super) name: String,
    pub(super) pre_enqueue: Vec<Named<dyn PreEnqueuePlugin>>,
    pub(super) hints: Vec<(&'static str, ClusterEventWithHint)>,
    /// Plugins that can reject a pod but don't implement EnqueueExtensions: as
    /// upstream, they count as interested in every event.
    pub(super) no_events: Vec<&'static str>,
    /// The profile, to sign its pods while it batches (set by the scheduler).
    pub(super) signer: Option<Arc<Profile>>,
    /// Whether the profile batches: its pods are signed on entry.
    pub(super) signing: bool,
}

impl ProfileHooks {
    /// A profile's hooks, as the queue needs them.
    pub(super) fn of(p: &Arc<Profile>) -> ProfileHooks {
        ProfileHooks {
            signer: Some(p.clone()),
            signing: false,
            name: p.name().to_owned(),
            pre_enqueue: p.pre_enqueue().to_vec(),
            hints: p
                .enqueue_extensions()
                .iter()
                .flat_map(|e| {
                    guard(e.name, "EventsToRegister", || e.plugin.events_to_register())
                        .unwrap_or_default()
                        .into_iter()
                        .map(move |h| (e.name, h))
                })
                .collect(),
            no_events: {
                let with: Vec<&'static str> = p.enqueue_extensions().iter().map(|e| e.name).collect();
                let mut v: Vec<&'static str> = [
                    p.pre_enqueue_plugins(),
                    p.pre_filter_plugins(),
                    p.filter_plugins(),
                    p.reserve_plugins(),
                    p.permit_plugins(),
                    p.pre_bind_plugins(),
                    p.bind_plugins(),
                ]
                .concat()
                .into_iter()
                .filter(|n| !with.contains(n))
                .collect();
                v.sort_unstable();
                v.dedup();
                v
            },
        }
    }
}

impl SchedulingQueue {
    /// Runs PreEnqueue; moves the (detached) slot to active or gated.
    pub(super) fn enqueue_or_gate(&mut self, slot: u32) -> QueueLocation {
        let e = self.e(slot);
        let hooks = &self.profiles[e.profile as usize];
        let mut gate = None;
        for p in &hooks.pre_enqueue {
            let pod = &e.info.pod;
            let s = guard(p.name, "PreEnqueue", || p.plugin.pre_enqueue(pod)).unwrap_or_else(|s| s);
            if !s.is_success() {
                gate = Some(s.with_plugin(p.name));
                break;
            }
        }
        match gate {
            None => {
                self.e_mut(slot).gate = None;
                self.push_active(slot);
                QueueLocation::Active
            }
            Some(s) => {
                let plugin = s.plugin().unwrap_or("PreEnqueue");
                let e = self.e_mut(slot);
                e.rejectors = smallvec::smallvec![plugin];
                e.gate = Some(s);
                self.push_pool(slot, QueueLocation::Gated);
                QueueLocation::Gated
            }
        }
    }

    /// Pods held by PreEnqueue plugins, with the plugin and reason.
    pub fn gated_pods(&self) -> Vec<GatedPod> {
        self.pool
            .iter()
            .map(|&s| self.e(s))
            .filter_map(|e| {
                let s = e.gate.as_ref()?;
                (e.loc == QueueLocation::Gated).then(|| GatedPod {
                    pod: e.info.pod.clone(),
                    plugin: s.plugin().unwrap_or("PreEnqueue"),
                    status: s.clone(),
                })
            })
            .collect()
    }
}
