//! Which fields schedkit does not model can still change a scheduling decision: the
//! line between the warnings a default load returns and what a strict load refuses.
//!
//! A path is first normalized (`spec.containers[2].command` becomes
//! `spec.containers[].command`); then each kind lists the prefixes it may ignore
//! safely. Anything else under `spec` is taken to matter, so a field added by a newer
//! Kubernetes is reported rather than dropped silently.

use serde_json::Value;

/// `spec.containers[3].env[0].name` -> `spec.containers[].env[].name`.
pub(crate) fn normalize(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    let mut in_index = false;
    for ch in path.chars() {
        match ch {
            '[' => {
                in_index = true;
                out.push('[');
            }
            ']' => {
                in_index = false;
                out.push(']');
            }
            _ if in_index => {}
            _ => out.push(ch),
        }
    }
    out
}

/// Whether `path` is `prefix` or below it.
fn under(path: &str, prefix: &str) -> bool {
    path.strip_prefix(prefix).is_some_and(|rest| rest.is_empty() || rest.starts_with('.') || rest.starts_with('['))
}

/// Container fields no scheduling plugin reads.
const CONTAINER_IGNORABLE: &[&str] = &[
    "command",
    "args",
    "env",
    "envFrom",
    "volumeMounts",
    "volumeDevices",
    "livenessProbe",
    "readinessProbe",
    "startupProbe",
    "lifecycle",
    "terminationMessagePath",
    "terminationMessagePolicy",
    "imagePullPolicy",
    "securityContext",
    "stdin",
    "stdinOnce",
    "tty",
    "workingDir",
    "resizePolicy",
    "restartPolicyRules",
    "ports[].name",
    "resources.claims",
];

/// Pod spec fields no scheduling plugin reads, or that admission has already turned
/// into fields schedkit reads (`priorityClassName` into `priority`, `runtimeClassName`
/// into `overhead`, node selector and tolerations).
const POD_SPEC_IGNORABLE: &[&str] = &[
    "restartPolicy",
    "terminationGracePeriodSeconds",
    "activeDeadlineSeconds",
    "dnsPolicy",
    "dnsConfig",
    "serviceAccountName",
    "serviceAccount",
    "automountServiceAccountToken",
    "securityContext",
    "imagePullSecrets",
    "hostname",
    "hostnameOverride",
    "subdomain",
    "enableServiceLinks",
    "shareProcessNamespace",
    "readinessGates",
    "hostAliases",
    "hostPID",
    "hostIPC",
    "hostNetwork",
    "setHostnameAsFQDN",
    "priorityClassName",
    "runtimeClassName",
    "os",
    "hostUsers",
    "ephemeralContainers",
];

/// Volume sources the volume plugins (which schedkit does not have) read: a pod
/// using one is reported.
pub(crate) const SCHEDULING_VOLUMES: &[&str] = &[
    "persistentVolumeClaim",
    "ephemeral",
    "csi",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "azureDisk",
    "cinder",
    "iscsi",
    "rbd",
];

/// Pod: see the module docs. Status fields matter only for in-place resize
/// (`containerStatuses[].resources`, `allocatedResources`, `resize`), which upstream's
/// resource helpers read for assigned pods.
pub(crate) fn pod(path: &str, value: &Value) -> bool {
    let p = normalize(path);
    // The whole `volumes` list is unread: it matters when a volume has a source the
    // volume plugins read.
    if p == "spec.volumes" {
        return value
            .as_array()
            .is_some_and(|vols| vols.iter().any(|v| SCHEDULING_VOLUMES.iter().any(|k| v.get(k).is_some())));
    }
    if let Some(rest) = p.strip_prefix("status.") {
        return ["containerStatuses[].resources", "containerStatuses[].allocatedResources", "resize"]
            .iter()
            .chain(&["initContainerStatuses[].resources", "initContainerStatuses[].allocatedResources"])
            .any(|f| under(rest, f));
    }
    let Some(rest) = p.strip_prefix("spec.") else { return false };
    if POD_SPEC_IGNORABLE.iter().any(|f| under(rest, f)) {
        return false;
    }
    for list in ["containers[].", "initContainers[]."] {
        if let Some(field) = rest.strip_prefix(list) {
            return !CONTAINER_IGNORABLE.iter().any(|f| under(field, f));
        }
    }
    if let Some(vol) = rest.strip_prefix("volumes[].") {
        return SCHEDULING_VOLUMES.iter().any(|f| under(vol, f));
    }
    true
}

/// Node: spec and status fields no plugin reads are ignorable; anything else under
/// `spec` or `status` (e.g. `status.declaredFeatures`) is reported.
pub(crate) fn node(path: &str, _value: &Value) -> bool {
    const IGNORABLE: &[&str] = &[
        "spec.podCIDR",
        "spec.podCIDRs",
        "spec.providerID",
        "spec.externalID",
        "spec.configSource",
        "spec.taints[].timeAdded",
        "status.conditions",
        "status.addresses",
        "status.daemonEndpoints",
        "status.nodeInfo",
        "status.phase",
        "status.config",
        "status.runtimeHandlers",
        "status.features",
        "status.volumesInUse",
        "status.volumesAttached",
    ];
    let p = normalize(path);
    (p.starts_with("spec.") || p.starts_with("status.")) && !IGNORABLE.iter().any(|f| under(&p, f))
}

/// PodDisruptionBudget: preemption reads the selector, the budget and
/// `status.disruptionsAllowed`/`disruptedPods`; the rest is the disruption
/// controller's bookkeeping.
pub(crate) fn pdb(path: &str, _value: &Value) -> bool {
    let p = normalize(path);
    p.starts_with("spec.") && !under(&p, "spec.unhealthyPodEvictionPolicy")
}

/// Objects whose every scheduling-relevant field is modeled (PriorityClass,
/// Namespace): nothing ignored matters.
pub(crate) fn nothing(_path: &str, _value: &Value) -> bool {
    false
}

/// DRA objects: anything under `spec` that was not read matters (unknown fields the
/// types carry as JSON are kept, not ignored).
pub(crate) fn spec_matters(path: &str, _value: &Value) -> bool {
    path.starts_with("spec.") || path.starts_with("spec[")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(path: &str) -> bool {
        super::pod(path, &Value::Null)
    }
    fn node(path: &str) -> bool {
        super::node(path, &Value::Null)
    }

    #[test]
    fn pod_paths() {
        assert_eq!(normalize("spec.containers[12].env[0].name"), "spec.containers[].env[].name");
        assert!(!pod("spec.containers[0].command"));
        assert!(!pod("spec.containers[1].ports[0].name"));
        assert!(!pod("spec.volumes[0].configMap.name"));
        let vols = serde_json::json!([{"name": "a", "configMap": {"name": "x"}}, {"name": "b", "emptyDir": {}}]);
        assert!(!super::pod("spec.volumes", &vols));
        let vols = serde_json::json!([{"name": "a", "persistentVolumeClaim": {"claimName": "data"}}]);
        assert!(super::pod("spec.volumes", &vols));
        assert!(pod("spec.volumes[0].persistentVolumeClaim.claimName"));
        assert!(pod("spec.workloadRef"));
        assert!(pod("spec.resourceClaims[0].source"));
        assert!(!pod("metadata.managedFields"));
        assert!(!pod("status.conditions[0].type"));
        assert!(pod("status.containerStatuses[0].allocatedResources"));
        assert!(pod("spec.hostNetworkX"), "a prefix only matches whole segments");
        assert!(node("status.declaredFeatures"));
        assert!(!node("status.nodeInfo.kubeletVersion"));
        assert!(!node("metadata.annotations"));
    }
}
