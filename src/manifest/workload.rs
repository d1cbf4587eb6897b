//! Loading the workload API: `scheduling.k8s.io/v1alpha2` Workload and PodGroup, the
//! v1.35 `v1alpha1` Workload (read as itself, or converted to v1alpha2's templates),
//! and a v1.35 pod's `spec.workloadRef` converted to `spec.schedulingGroup` when
//! `GenericWorkload` is on (reported as an ignored field otherwise).

use serde_json::Value;

use super::{Manifest, ManifestError, relevance};
use crate::framework::{Feature, FeatureGates};
use crate::model::workload::{PodGroup, Workload, v1alpha1};

const V1ALPHA2: &str = "scheduling.k8s.io/v1alpha2";
const V1ALPHA1: &str = "scheduling.k8s.io/v1alpha1";

impl Manifest for Workload {
    const KIND: &'static str = "Workload";
    const API_VERSIONS: &'static [&'static str] = &[V1ALPHA2, V1ALPHA1];

    /// v1alpha1 to v1alpha2: `spec.podGroups[i]` becomes `spec.podGroupTemplates[i]`
    /// with `policy` renamed `schedulingPolicy` (the PodGroup objects are made by
    /// [`v1alpha1::Workload::convert`], which needs the pods' replica keys).
    fn convert(_from: &str, obj: &mut Value) -> Result<(), ManifestError> {
        let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else { return Ok(()) };
        let Some(groups) = spec.remove("podGroups") else { return Ok(()) };
        let Value::Array(mut groups) = groups else {
            return Err(ManifestError::Conversion {
                kind: "Workload",
                api_version: V1ALPHA1.to_owned(),
                path: "spec.podGroups".to_owned(),
                message: "expected a list".to_owned(),
            });
        };
        for g in &mut groups {
            if let Some(m) = g.as_object_mut()
                && let Some(p) = m.remove("policy")
            {
                m.insert("schedulingPolicy".to_owned(), p);
            }
        }
        spec.insert("podGroupTemplates".to_owned(), Value::Array(groups));
        Ok(())
    }

    fn affects_scheduling(path: &str, value: &Value) -> bool {
        relevance::spec_matters(path, value)
    }
}

impl Manifest for PodGroup {
    const KIND: &'static str = "PodGroup";
    const API_VERSIONS: &'static [&'static str] = &[V1ALPHA2];
    fn affects_scheduling(path: &str, value: &Value) -> bool {
        relevance::spec_matters(path, value)
    }
}

impl Manifest for v1alpha1::Workload {
    const KIND: &'static str = "Workload";
    const API_VERSIONS: &'static [&'static str] = &[V1ALPHA1];
    fn affects_scheduling(path: &str, value: &Value) -> bool {
        relevance::spec_matters(path, value)
    }
}

/// With `GenericWorkload` on, a v1.35 pod's `spec.workloadRef` becomes
/// `spec.schedulingGroup.podGroupName` (named by [`v1alpha1::pod_group_name`]) unless
/// the pod already names a group; the reference itself is then dropped from the text,
/// having been converted. With the gate off it stays and is reported as ignored.
pub(super) fn convert_pod_workload_ref(obj: &mut Value, gates: FeatureGates) {
    if !gates.enabled(Feature::GenericWorkload) {
        return;
    }
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else { return };
    let Some(r) = spec.get("workloadRef") else { return };
    let Ok(r) = serde_json::from_value::<v1alpha1::WorkloadReference>(r.clone()) else { return };
    if r.name.is_empty() || r.pod_group.is_empty() {
        return;
    }
    if spec.get("schedulingGroup").is_none() {
        let name = v1alpha1::pod_group_name(&r);
        spec.insert("schedulingGroup".to_owned(), serde_json::json!({ "podGroupName": name }));
    }
    spec.remove("workloadRef");
}
