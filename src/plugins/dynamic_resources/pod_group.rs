//! DynamicResources and PodGroups (KEP-5729): the scheduler's PodGroups as the store's
//! source, and releasing a group's reservation of a claim when no member is scheduled.

use std::sync::Arc;

use super::DynamicResources;
use crate::dra::PodGroupSource;
use crate::framework::{Handle, Status};
use crate::model::Pod;
use crate::model::workload::PodGroup;

/// The scheduler's PodGroups as the store's [`PodGroupSource`].
pub(super) struct HandlePodGroups(pub(super) Handle);

impl PodGroupSource for HandlePodGroups {
    fn pod_group(&self, namespace: &str, name: &str) -> Option<Arc<PodGroup>> {
        self.0.pod_groups().pod_group(namespace, name)
    }

    fn scheduled_members(&self, namespace: &str, name: &str) -> usize {
        self.0
            .pod_groups()
            .states()
            .with(namespace, name, |s| s.map_or(0, crate::snapshot::PodGroupState::scheduled_pods_count))
    }
}

impl DynamicResources {
    /// For a claim `name` shared through `group`: when no member of the group is
    /// scheduled (assumed or bound) and the claim is reserved for the group, removes the
    /// group from `reservedFor` (KEP-5729 deallocation: a claim whose `reservedFor` names
    /// a PodGroup is never deallocated directly; once the group's entry is gone, the next
    /// PostFilter deallocates it like any claim reserved for nobody). `Some(status)` when
    /// it did.
    pub(super) fn release_idle_group(&self, p: &Pod, group: &PodGroup, name: &str) -> Option<Status> {
        let claim = self.store.claim(&p.metadata.namespace, name)?;
        let uid = &group.metadata.uid;
        let reserved = claim.status.as_ref().is_some_and(|s| s.reserved_for.iter().any(|r| &r.uid == uid));
        if !reserved || self.store.pod_group_scheduled_members(group) > 0 {
            return None;
        }
        let mut updated = (*claim).clone();
        if let Some(s) = updated.status.as_mut() {
            s.reserved_for.retain(|r| &r.uid != uid);
        }
        if let Err(e) = self.writer.update_status(&updated) {
            return Some(Status::error(format!("removing PodGroup reservation of ResourceClaim {name}: {e}")));
        }
        self.store.release(&p.metadata.namespace, name, uid);
        Some(Status::unschedulable(format!(
            "removed reservation of ResourceClaim {name} for PodGroup {}",
            group.name()
        )))
    }
}
