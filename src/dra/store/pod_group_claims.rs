//! Claims shared by a PodGroup (KEP-5729, gate `DRAWorkloadResourceClaims`): resolving a
//! pod's `podGroupResourceClaim` through its PodGroup, the PodGroup as the claim's
//! consumer, and one allocation per group claim that later members reuse.
//!
//! Upstream: `k8s.io/dynamic-resource-allocation/resourceclaim/resourceclaim.go`
//! (v1.36, `scheduling/v1alpha2`): `Name`, `IsReservedForPod`, `BindTo`.

use std::sync::Arc;

use super::{DraStore, GatherError, Inner};
use crate::dra::compiled::ns_or_default;
use crate::dra::error::DraError;
use crate::dra::types::{AllocationResult, ResourceClaim, ResourceClaimConsumerReference};
use crate::framework::Feature;
use crate::model::workload::PodGroup;
use crate::model::{Pod, PodResourceClaim};

/// `apiGroup` of a PodGroup in a claim's `status.reservedFor` (upstream
/// `schedulingapi.GroupName`).
pub const POD_GROUP_CONSUMER_API_GROUP: &str = "scheduling.k8s.io";
/// `resource` of a PodGroup in a claim's `status.reservedFor`.
pub const POD_GROUP_CONSUMER_RESOURCE: &str = "podgroups";

/// Where the store looks up PodGroups and how many of a group's members are scheduled
/// (assumed or bound). The DynamicResources plugin built from a profile hands it the
/// scheduler's pod-group manager; without a source, `podGroupResourceClaim` references
/// don't resolve.
pub trait PodGroupSource: Send + Sync {
    /// The PodGroup `namespace/name`, if it exists.
    fn pod_group(&self, namespace: &str, name: &str) -> Option<Arc<PodGroup>>;
    /// How many members of `namespace/name` are assumed or assigned (upstream
    /// `PodGroupState.ScheduledPodsCount`).
    fn scheduled_members(&self, namespace: &str, name: &str) -> usize;
}

/// The source, with a `Debug` the store's derive needs.
#[derive(Clone)]
pub(crate) struct GroupSource(pub Arc<dyn PodGroupSource>);

impl std::fmt::Debug for GroupSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PodGroupSource")
    }
}

/// What one of a pod's claim references resolves to.
#[derive(Debug, Clone)]
pub struct ResolvedClaim {
    /// The ResourceClaim's name in the pod's namespace.
    pub name: String,
    /// The PodGroup the claim is shared through (`podGroupResourceClaim`), which is the
    /// claim's consumer in `reservedFor` instead of the pod (upstream `BindTo`).
    pub group: Option<Arc<PodGroup>>,
}

impl ResolvedClaim {
    /// The entry this claim's `status.reservedFor` gets for `pod` (upstream `BindTo`):
    /// the PodGroup for a group claim, else the pod.
    pub fn consumer(&self, pod: &Pod, pod_uid: &str) -> ResourceClaimConsumerReference {
        match &self.group {
            Some(g) => pod_group_consumer(g),
            None => ResourceClaimConsumerReference {
                api_group: String::new(),
                resource: "pods".into(),
                name: pod.metadata.name.clone(),
                uid: pod_uid.to_owned(),
            },
        }
    }
}

/// The `reservedFor` entry naming a PodGroup.
pub fn pod_group_consumer(group: &PodGroup) -> ResourceClaimConsumerReference {
    ResourceClaimConsumerReference {
        api_group: POD_GROUP_CONSUMER_API_GROUP.into(),
        resource: POD_GROUP_CONSUMER_RESOURCE.into(),
        name: group.name().to_owned(),
        uid: group.metadata.uid.clone(),
    }
}

/// Whether `claim` is reserved for the pod (by uid) or, with `accept_pod_group` (the
/// `DRAWorkloadResourceClaims` gate), for the PodGroup the pod names: a `podgroups`
/// entry of that name (upstream `resourceclaim.IsReservedForPod`; KEP-5729 "only the
/// name in the reference must match the Pod's PodGroup name").
pub fn is_reserved_for_pod(pod: &Pod, pod_uid: &str, accept_pod_group: bool, claim: &ResourceClaim) -> bool {
    let group = pod.scheduling_group_name().filter(|_| accept_pod_group);
    claim.status.as_ref().is_some_and(|s| {
        s.reserved_for.iter().any(|r| {
            r.uid == pod_uid
                || group.is_some_and(|g| {
                    r.resource == POD_GROUP_CONSUMER_RESOURCE
                        && r.api_group == POD_GROUP_CONSUMER_API_GROUP
                        && r.name == g
                })
        })
    })
}

/// The claim a template reference of a PodGroup stands for when the group's status
/// names none: `<podgroup>-<claim>` (upstream's controller generates a name and records
/// it in `status.resourceClaimStatuses`, which wins when set).
pub fn pod_group_claim_name(group: &PodGroup, claim: &str) -> String {
    format!("{}-{claim}", group.name())
}

impl DraStore {
    /// Where `podGroupResourceClaim` references are looked up (see [`PodGroupSource`]).
    pub fn set_pod_group_source(&self, source: Arc<dyn PodGroupSource>) {
        self.inner.write().pod_groups = Some(GroupSource(source));
    }

    /// The pod's PodGroup when `DRAWorkloadResourceClaims` is on and a source is set.
    pub fn pod_group_of(&self, pod: &Pod) -> Option<Arc<PodGroup>> {
        let inner = self.inner.read();
        Self::group_of_locked(&inner, pod)
    }

    fn group_of_locked(inner: &Inner, pod: &Pod) -> Option<Arc<PodGroup>> {
        if !inner.features.enabled(Feature::DRAWorkloadResourceClaims) {
            return None;
        }
        inner.pod_groups.as_ref()?.0.pod_group(&pod.metadata.namespace, pod.scheduling_group_name()?)
    }

    /// How many members of the PodGroup are scheduled (0 without a source).
    pub fn pod_group_scheduled_members(&self, group: &PodGroup) -> usize {
        let source = self.inner.read().pod_groups.clone();
        source.map_or(0, |s| s.0.scheduled_members(group.namespace(), group.name()))
    }

    /// What the pod's claim reference resolves to (upstream `resourceclaim.Name` with the
    /// pod's PodGroup when `DRAWorkloadResourceClaims` is on): a `resourceClaimName`; a
    /// template's claim (`<pod>-<claim>`, see [`super::claim_name_for`]); or through
    /// `podGroupResourceClaim` the PodGroup's claim of that name — its
    /// `resourceClaimName`, or for a template the claim the group's
    /// `status.resourceClaimStatuses` names, else [`pod_group_claim_name`].
    ///
    /// Errors (the pod waits, UnschedulableAndUnresolvable): the reference sets no
    /// supported field (also a `podGroupResourceClaim` with the gate off or the pod in no
    /// group, as upstream without a PodGroup), the PodGroup is missing, or it has no such
    /// claim.
    pub fn resolve_claim(&self, pod: &Pod, pc: &PodResourceClaim) -> Result<ResolvedClaim, GatherError> {
        let inner = self.inner.read();
        Self::resolve_locked(&inner, pod, pc)
    }

    pub(super) fn resolve_locked(
        inner: &Inner,
        pod: &Pod,
        pc: &PodResourceClaim,
    ) -> Result<ResolvedClaim, GatherError> {
        if pc.resource_claim_name.is_some() || pc.resource_claim_template_name.is_some() {
            return Ok(ResolvedClaim { name: super::claim_name_for(pod, pc), group: None });
        }
        let ns = ns_or_default(&pod.metadata.namespace);
        let unsupported = || {
            GatherError::PodGroupClaim(format!(
                "Pod {}/{}, spec.resourceClaim {}: none of the supported fields are set",
                ns, pod.metadata.name, pc.name
            ))
        };
        let Some(wanted) = pc.pod_group_resource_claim.as_deref() else { return Err(unsupported()) };
        if !inner.features.enabled(Feature::DRAWorkloadResourceClaims) || inner.pod_groups.is_none() {
            return Err(unsupported());
        }
        let Some(group_name) = pod.scheduling_group_name() else {
            return Err(GatherError::PodGroupClaim(format!(
                "Pod {ns}/{} does not belong to a PodGroup",
                pod.metadata.name
            )));
        };
        let Some(group) = Self::group_of_locked(inner, pod) else {
            return Err(GatherError::PodGroupClaim(format!(
                "waiting for PodGroup {ns}/{group_name} of Pod {}",
                pod.metadata.name
            )));
        };
        let Some(gc) = group.spec.resource_claims.iter().find(|c| c.name == wanted) else {
            return Err(GatherError::PodGroupClaim(format!(
                "PodGroup {ns}/{} does not have claim {wanted} requested by Pod {}",
                group.name(),
                pod.metadata.name
            )));
        };
        let name = match (&gc.resource_claim_name, &gc.resource_claim_template_name) {
            (Some(n), _) => n.clone(),
            (None, Some(_)) => group
                .status
                .resource_claim_statuses
                .iter()
                .find(|s| s.name == wanted)
                .and_then(|s| s.resource_claim_name.clone())
                .unwrap_or_else(|| pod_group_claim_name(&group, wanted)),
            (None, None) => {
                return Err(GatherError::PodGroupClaim(format!(
                    "PodGroup {ns}/{}, spec.resourceClaim {wanted}: none of the supported fields are set",
                    group.name()
                )));
            }
        };
        Ok(ResolvedClaim { name, group: Some(group) })
    }

    /// Makes the claim a PodGroup's template reference stands for, as the resourceclaim
    /// controller does for a group (one claim per PodGroup, named by its status or
    /// [`pod_group_claim_name`]). Returns the claim's name.
    pub fn instantiate_pod_group_template(&self, group: &PodGroup, claim: &str) -> Result<String, DraError> {
        let ns = ns_or_default(group.namespace());
        let gc = group.spec.resource_claims.iter().find(|c| c.name == claim).ok_or_else(|| DraError::InvalidClaim {
            claim: claim.to_owned(),
            reason: format!("not a claim of PodGroup {ns}/{}", group.name()),
        })?;
        let Some(t) = gc.resource_claim_template_name.as_ref() else {
            return Err(DraError::InvalidClaim {
                claim: claim.to_owned(),
                reason: "no resourceClaimTemplateName".into(),
            });
        };
        let template = self.template(ns, t)?;
        let name = group
            .status
            .resource_claim_statuses
            .iter()
            .find(|s| s.name == claim)
            .and_then(|s| s.resource_claim_name.clone())
            .unwrap_or_else(|| pod_group_claim_name(group, claim));
        let mut c = ResourceClaim { spec: template.spec.spec.clone(), ..ResourceClaim::default() };
        c.metadata.name = name.clone();
        c.metadata.namespace = ns.to_owned();
        self.add_claim(c)?;
        Ok(name)
    }

    /// The allocation another member of the same PodGroup holds in flight for the group
    /// claim `key` (the first member allocates it; later members reuse it).
    pub(super) fn group_inflight(inner: &Inner, key: &str, pod_uid: Option<&str>) -> Option<Arc<AllocationResult>> {
        let (holder, a) = inner.group_inflight.get(key)?;
        (Some(holder.as_str()) != pod_uid).then(|| a.clone())
    }
}

#[cfg(test)]
mod tests {
    //! Port of `resourceclaim_test.go` `TestIsReservedForPod`
    //! (`k8s.io/dynamic-resource-allocation/resourceclaim`, v1.36 era).

    use super::*;
    use crate::dra::types::ResourceClaimStatus;
    use crate::model::PodSchedulingGroup;

    fn pod(name: &str, uid: &str, group: Option<&str>) -> (Pod, String) {
        let mut p = Pod::default();
        p.metadata.namespace = "kube-system".into();
        p.metadata.name = name.into();
        p.spec.scheduling_group = group.map(|g| PodSchedulingGroup { pod_group_name: Some(g.into()) });
        (p, uid.into())
    }

    fn reference(group: Option<&str>, uid: &str) -> ResourceClaimConsumerReference {
        match group {
            Some(g) => ResourceClaimConsumerReference {
                api_group: POD_GROUP_CONSUMER_API_GROUP.into(),
                resource: POD_GROUP_CONSUMER_RESOURCE.into(),
                name: g.into(),
                uid: uid.into(),
            },
            None => ResourceClaimConsumerReference { uid: uid.into(), ..Default::default() },
        }
    }

    fn claim(refs: Vec<ResourceClaimConsumerReference>) -> ResourceClaim {
        ResourceClaim {
            status: Some(ResourceClaimStatus { reserved_for: refs, ..Default::default() }),
            ..Default::default()
        }
    }

    /// Name, (pod, uid), claim, accept PodGroup, expected.
    type Case<'a> = (&'a str, (Pod, String), &'a ResourceClaim, bool, bool);

    #[test]
    fn is_reserved_for_pod_table() {
        // uids: podNotReserved 1, podGroupNotReserved 2, podReserved 3, podGroupReserved 4,
        // podOtherReserved 5, podGroupOtherReserved 6.
        let no_reservation = claim(vec![]);
        let with_reservation = claim(vec![reference(None, "3")]);
        let with_group = claim(vec![reference(Some("podGroupReserved"), "4")]);
        let multiple = claim(vec![reference(None, "3"), reference(None, "5")]);
        let multiple_groups =
            claim(vec![reference(Some("podGroupReserved"), "4"), reference(Some("podGroupOtherReserved"), "6")]);
        let pod_and_group = claim(vec![reference(None, "3"), reference(None, "4")]);
        let cases: Vec<Case> = vec![
            ("not-reserved", pod("podNotReserved", "1", None), &no_reservation, false, false),
            ("reserved-for-pod", pod("podReserved", "3", None), &with_reservation, false, true),
            ("reserved-for-other-pod", pod("podNotReserved", "1", None), &with_reservation, false, false),
            ("multiple-reservations-including-pod", pod("podReserved", "3", None), &multiple, false, true),
            ("multiple-reservations-excluding-pod", pod("podNotReserved", "1", None), &multiple, false, false),
            ("reserved-for-podgroup", pod("podNotReserved", "1", Some("podGroupReserved")), &with_group, true, true),
            ("podgroup-disabled", pod("podNotReserved", "1", Some("podGroupReserved")), &with_group, false, false),
            (
                "reserved-for-pod-and-podgroup",
                pod("podReserved", "3", Some("podGroupReserved")),
                &pod_and_group,
                true,
                true,
            ),
            (
                "reserved-for-other-podgroup",
                pod("podNotReserved", "1", Some("podGroupNotReserved")),
                &with_reservation,
                true,
                false,
            ),
            (
                "multiple-reservations-including-podgroup",
                pod("podNotReserved", "1", Some("podGroupReserved")),
                &multiple_groups,
                true,
                true,
            ),
            (
                "multiple-reservations-excluding-podgroup",
                pod("podNotReserved", "1", Some("podGroupNotReserved")),
                &multiple_groups,
                true,
                false,
            ),
        ];
        for (name, (p, uid), c, accept, want) in cases {
            assert_eq!(is_reserved_for_pod(&p, &uid, accept, c), want, "{name}");
        }
    }
}
