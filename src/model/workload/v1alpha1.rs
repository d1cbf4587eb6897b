//! The v1.35 `scheduling.k8s.io/v1alpha1` Workload (pod groups embedded in the
//! Workload, pods pointing at them with `spec.workloadRef`) and its conversion to the
//! v1.36 shape: a `v1alpha2` [`Workload`](super::Workload) of templates plus one
//! [`PodGroup`] object per group and replica key.
//!
//! Upstream has no such conversion: v1alpha1 was removed when v1alpha2 split the
//! PodGroup out (kubernetes/api v0.36.0), so a v1.36 cluster never serves both. The
//! conversion, and in particular how PodGroup objects are named
//! ([`pod_group_name`]), is schedkit's choice, so that v1.35 manifests and traces keep
//! working with the v1.36 scheduler.

use serde::{Deserialize, Serialize};

use super::{
    PodGroup, PodGroupSchedulingPolicy, PodGroupSpec, PodGroupTemplate, PodGroupTemplateReference,
    TypedLocalObjectReference, WORKLOAD_MAX_POD_GROUP_TEMPLATES, WorkloadError, WorkloadPodGroupTemplateReference,
    WorkloadSpec,
};
use crate::model::ObjectMeta;
use crate::model::validation::{FieldError, dns1123_label, dns1123_subdomain};

/// `scheduling.k8s.io/v1alpha1` `Workload` (Kubernetes v1.35).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Workload {
    /// Name, namespace, labels.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The pod groups.
    pub spec: WorkloadSpecV1Alpha1,
}

/// v1alpha1 `WorkloadSpec`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadSpecV1Alpha1 {
    /// The controlling object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub controller_ref: Option<TypedLocalObjectReference>,
    /// At most 8 groups, keyed by name.
    #[serde(default)]
    pub pod_groups: Vec<PodGroupV1Alpha1>,
}

/// v1alpha1 `PodGroup`: an entry of the Workload, not an object of its own.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodGroupV1Alpha1 {
    /// A DNS label.
    #[serde(default)]
    pub name: String,
    /// Basic or gang (the same union as v1alpha2's `schedulingPolicy`).
    #[serde(default)]
    pub policy: PodGroupSchedulingPolicy,
}

/// A v1.35 pod's `spec.workloadRef` (core/v1 `WorkloadReference`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadReference {
    /// The Workload.
    #[serde(default)]
    pub name: String,
    /// The group in it.
    #[serde(default)]
    pub pod_group: String,
    /// Which replica of the group (each replica is gang-scheduled on its own).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub pod_group_replica_key: String,
}

/// The PodGroup object a v1.35 reference becomes (schedkit's naming):
/// `<workload>-<podGroup>`, or `<workload>-<podGroup>-<replicaKey>` when the pod names
/// a replica key.
///
/// ```
/// use schedkit::model::workload::v1alpha1::{WorkloadReference, pod_group_name};
/// let r = WorkloadReference { name: "train".into(), pod_group: "workers".into(), pod_group_replica_key: "2".into() };
/// assert_eq!(pod_group_name(&r), "train-workers-2");
/// ```
pub fn pod_group_name(r: &WorkloadReference) -> String {
    if r.pod_group_replica_key.is_empty() {
        format!("{}-{}", r.name, r.pod_group)
    } else {
        format!("{}-{}-{}", r.name, r.pod_group, r.pod_group_replica_key)
    }
}

/// A v1.35 Workload in the v1.36 shape.
#[derive(Debug, Clone, PartialEq)]
pub struct Converted {
    /// The templates, one per v1alpha1 group.
    pub workload: super::Workload,
    /// One PodGroup per group and replica key, in group order then in the order the
    /// replica keys were given.
    pub pod_groups: Vec<PodGroup>,
}

impl Workload {
    /// The v1alpha2 spec this Workload's groups become (`podGroups[i]` to
    /// `podGroupTemplates[i]`, `policy` to `schedulingPolicy`).
    pub fn templates(&self) -> WorkloadSpec {
        WorkloadSpec {
            controller_ref: self.spec.controller_ref.clone(),
            pod_group_templates: self
                .spec
                .pod_groups
                .iter()
                .map(|g| PodGroupTemplate {
                    name: g.name.clone(),
                    scheduling_policy: g.policy.clone(),
                    ..PodGroupTemplate::default()
                })
                .collect(),
        }
    }

    /// Converts to a v1alpha2 Workload and PodGroup objects. `refs` are the
    /// `spec.workloadRef`s of the Workload's pods: each distinct (group, replica key)
    /// among those naming this Workload gets a PodGroup named by [`pod_group_name`]; a
    /// group no pod names gets one PodGroup without a replica key. PodGroups carry the
    /// group's policy and a `podGroupTemplateRef` back to the template.
    ///
    /// ```
    /// use schedkit::model::workload::v1alpha1::{Workload, WorkloadReference};
    /// let w: Workload = serde_json::from_str(r#"{"metadata": {"name": "train", "namespace": "ml"},
    ///   "spec": {"podGroups": [{"name": "workers", "policy": {"gang": {"minCount": 4}}}]}}"#).unwrap();
    /// let r = |k: &str| WorkloadReference { name: "train".into(), pod_group: "workers".into(), pod_group_replica_key: k.into() };
    /// let c = w.convert(&[r("0"), r("1"), r("0")]).unwrap();
    /// let names: Vec<&str> = c.pod_groups.iter().map(|p| p.name()).collect();
    /// assert_eq!(names, ["train-workers-0", "train-workers-1"]);
    /// assert_eq!(c.pod_groups[1].min_count(), Some(4));
    /// ```
    ///
    /// # Errors
    ///
    /// [`WorkloadError`] when the v1alpha1 object is invalid (the v1.35 API server's
    /// rules: at most 8 groups, DNS-label names, one policy, `minCount` ≥ 1) or a
    /// PodGroup name formed is not a DNS subdomain (a replica key with characters a name
    /// cannot hold); a reference to a group the Workload lacks is reported at `refs[i]`.
    pub fn convert(&self, refs: &[WorkloadReference]) -> Result<Converted, WorkloadError> {
        let mut errs = Vec::new();
        let groups = &self.spec.pod_groups;
        if groups.is_empty() {
            errs.push(FieldError::required("spec.podGroups", ""));
        }
        if groups.len() > WORKLOAD_MAX_POD_GROUP_TEMPLATES {
            errs.push(FieldError::too_many("spec.podGroups", groups.len(), WORKLOAD_MAX_POD_GROUP_TEMPLATES));
        }
        for (i, g) in groups.iter().enumerate() {
            if let Some(msg) = dns1123_label(&g.name).into_iter().next() {
                errs.push(FieldError::invalid(format!("spec.podGroups[{i}].name"), &g.name, msg));
            }
        }
        let workload = super::Workload { metadata: self.metadata.clone(), spec: self.templates() };
        if let Err(e) = workload.validate(crate::framework::FeatureGates::default()) {
            // Report v1alpha1 paths for the groups' policies.
            errs.extend(e.errors.into_iter().filter(|f| f.path.contains(".schedulingPolicy")).map(|mut f| {
                f.path =
                    f.path.replace("spec.podGroupTemplates", "spec.podGroups").replace(".schedulingPolicy", ".policy");
                f
            }));
        }
        let mut pod_groups: Vec<PodGroup> = Vec::new();
        for (gi, g) in groups.iter().enumerate() {
            if !dns1123_label(&g.name).is_empty() {
                continue; // reported above
            }
            let mut keys: Vec<&str> = Vec::new();
            for r in refs.iter().filter(|r| r.name == self.metadata.name && r.pod_group == g.name) {
                if !keys.contains(&r.pod_group_replica_key.as_str()) {
                    keys.push(&r.pod_group_replica_key);
                }
            }
            if keys.is_empty() {
                keys.push("");
            }
            for key in keys {
                let r = WorkloadReference {
                    name: self.metadata.name.clone(),
                    pod_group: g.name.clone(),
                    pod_group_replica_key: key.to_owned(),
                };
                let name = pod_group_name(&r);
                if let Some(msg) = dns1123_subdomain(&name).into_iter().next() {
                    errs.push(FieldError::invalid(format!("spec.podGroups[{gi}]"), &name, msg));
                    continue;
                }
                let mut metadata = ObjectMeta {
                    name,
                    namespace: self.metadata.namespace.clone(),
                    labels: self.metadata.labels.clone(),
                    ..ObjectMeta::default()
                };
                metadata.annotations.clear();
                pod_groups.push(PodGroup {
                    metadata,
                    spec: PodGroupSpec {
                        pod_group_template_ref: Some(PodGroupTemplateReference {
                            workload: Some(WorkloadPodGroupTemplateReference {
                                workload_name: self.metadata.name.clone(),
                                pod_group_template_name: g.name.clone(),
                            }),
                        }),
                        scheduling_policy: g.policy.clone(),
                        ..PodGroupSpec::default()
                    },
                    status: super::PodGroupStatus::default(),
                });
            }
        }
        for (i, r) in refs.iter().enumerate() {
            if r.name == self.metadata.name && !groups.iter().any(|g| g.name == r.pod_group) {
                errs.push(FieldError::invalid(
                    format!("refs[{i}].podGroup"),
                    &r.pod_group,
                    "no such pod group in the Workload",
                ));
            }
        }
        if errs.is_empty() {
            Ok(Converted { workload, pod_groups })
        } else {
            let ns = if self.metadata.namespace.is_empty() { "default" } else { &self.metadata.namespace };
            Err(WorkloadError { kind: "Workload", name: format!("{ns}/{}", self.metadata.name), errors: errs })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversion_errors_name_v1alpha1_paths() {
        let w: Workload = serde_json::from_str(
            r#"{"metadata": {"name": "w"}, "spec": {"podGroups": [
                {"name": "a", "policy": {"gang": {"minCount": 0}}},
                {"name": "B", "policy": {"basic": {}}}]}}"#,
        )
        .unwrap();
        let r = WorkloadReference { name: "w".into(), pod_group: "a".into(), pod_group_replica_key: "Key_1".into() };
        let missing = WorkloadReference { name: "w".into(), pod_group: "zz".into(), ..WorkloadReference::default() };
        let e = w.convert(&[r, missing]).unwrap_err();
        let paths: Vec<&str> = e.errors.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "spec.podGroups[1].name",
                "spec.podGroups[0].policy.gang.minCount",
                "spec.podGroups[0]",
                "refs[1].podGroup"
            ]
        );
    }

    #[test]
    fn groups_without_pods_get_one_pod_group() {
        let w: Workload = serde_json::from_str(
            r#"{"metadata": {"name": "w", "namespace": "ns"}, "spec": {"podGroups": [
                {"name": "a", "policy": {"gang": {"minCount": 2}}}, {"name": "b", "policy": {"basic": {}}}]}}"#,
        )
        .unwrap();
        let c = w.convert(&[]).unwrap();
        let names: Vec<(&str, &str)> = c.pod_groups.iter().map(|p| (p.namespace(), p.name())).collect();
        assert_eq!(names, [("ns", "w-a"), ("ns", "w-b")]);
        assert_eq!(c.workload.spec.pod_group_templates.len(), 2);
        assert!(c.pod_groups[1].spec.scheduling_policy.basic.is_some());
    }
}
