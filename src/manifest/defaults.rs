//! The API server's defaulting that changes scheduling decisions
//! (`pkg/apis/core/v1/defaults.go`), applied when a manifest is loaded, as the API
//! server applies it before any scheduler sees the object.
//!
//! Applied, in upstream's order:
//!
//! - **Pod** (`SetDefaults_Pod`): each container's and init container's missing
//!   requests are copied from its limits (a pod with only `limits: nvidia.com/gpu: 1`
//!   requests one GPU); with the `PodLevelResources` gate, pod-level hugepage limits
//!   from the containers' (`defaultHugePagePodLimits`) and pod-level requests from
//!   the containers' aggregate or the pod-level limits (`defaultPodRequests`); with
//!   `hostNetwork: true`, every container port without a `hostPort` gets its
//!   `containerPort` as `hostPort` (`defaultHostNetworkPorts`), which NodePorts reads.
//! - **Node** (`SetDefaults_NodeStatus`): no `status.allocatable` means the capacity.
//! - **Namespace** (`SetDefaults_Namespace`, `SetDefaults_NamespaceStatus`): the
//!   `kubernetes.io/metadata.name` label, phase `Active`.
//! - **PriorityClass**: `preemptionPolicy` `PreemptLowerPriority`.
//!
//! Not applied, because no scheduling decision reads them: `defaultPodLimits` (pod-level
//! cpu/memory limits from the containers'), and the defaults of fields schedkit does
//! not model (DNS policy, restart policy, probes...).

use serde_json::Value;

use crate::model::{Container, Namespace, Pod, PreemptionPolicy, PriorityClass, ResourceList, Symbol};

/// Pod defaulting that depends on whether a field is present (`limits` set,
/// `hostNetwork`), done on the object as the API sends it, before decoding.
pub(crate) fn pod_before_decode(obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else { return };
    let host_network = spec.get("hostNetwork").and_then(Value::as_bool) == Some(true);
    for list in ["containers", "initContainers"] {
        let Some(containers) = spec.get_mut(list).and_then(Value::as_array_mut) else { continue };
        for c in containers.iter_mut().filter_map(Value::as_object_mut) {
            if let Some(res) = c.get_mut("resources").and_then(Value::as_object_mut)
                && let Some(limits) = res.get("limits").and_then(Value::as_object).cloned()
            {
                let requests = res.entry("requests").or_insert_with(|| Value::Object(serde_json::Map::new()));
                if requests.is_null() {
                    *requests = Value::Object(serde_json::Map::new());
                }
                if let Some(req) = requests.as_object_mut() {
                    for (k, v) in limits {
                        req.entry(k).or_insert(v);
                    }
                }
            }
            if host_network && let Some(ports) = c.get_mut("ports").and_then(Value::as_array_mut) {
                for p in ports.iter_mut().filter_map(Value::as_object_mut) {
                    if p.get("hostPort").and_then(Value::as_i64).unwrap_or(0) == 0
                        && let Some(cp) = p.get("containerPort").cloned()
                    {
                        p.insert("hostPort".into(), cp);
                    }
                }
            }
        }
    }
}

/// `SetDefaults_NodeStatus`: a node without `status.allocatable` (absent or null)
/// can allocate its whole capacity.
pub(crate) fn node_before_decode(obj: &mut Value) {
    let Some(status) = obj.get_mut("status").and_then(Value::as_object_mut) else { return };
    if status.get("allocatable").is_none_or(Value::is_null)
        && let Some(cap) = status.get("capacity").filter(|c| c.is_object()).cloned()
    {
        status.insert("allocatable".into(), cap);
    }
}

/// The pod-level defaulting of `SetDefaults_Pod` with the `PodLevelResources` gate:
/// `defaultHugePagePodLimits`, then `defaultPodRequests`. Only when `spec.resources`
/// is set.
///
/// ```
/// use schedkit::manifest::default_pod_level_resources;
/// use schedkit::model::{Pod, ResourceList, ResourceRequirements};
/// use schedkit::testing::PodBuilder;
/// let mut pod = PodBuilder::new("p").cpu("1").build();
/// pod.spec.resources = Some(ResourceRequirements {
///     limits: ResourceList::parse([("cpu", "4"), ("memory", "8Gi")]).unwrap(),
///     ..Default::default()
/// });
/// default_pod_level_resources(&mut pod);
/// let req = &pod.spec.resources.as_ref().unwrap().requests;
/// // cpu from the containers' requests, memory (no container asks) from the limit.
/// assert_eq!(req.get_str("cpu").unwrap().to_string(), "1");
/// assert_eq!(req.get_str("memory").unwrap().to_string(), "8Gi");
/// ```
pub fn default_pod_level_resources(pod: &mut Pod) {
    let Some(pl) = &pod.spec.resources else { return };
    if pl.limits.is_empty() && pl.requests.is_empty() {
        return;
    }
    // defaultHugePagePodLimits
    let ctr_limits = aggregate(&pod.spec.containers, &pod.spec.init_containers, |c| &c.resources.limits);
    let ctr_requests = aggregate(&pod.spec.containers, &pod.spec.init_containers, |c| &c.resources.requests);
    let Some(pl) = &mut pod.spec.resources else { return };
    for (name, q) in ctr_limits.iter() {
        let n = name.as_str();
        if n.starts_with("hugepages-") && pl.requests.get(name).is_none() && pl.limits.get(name).is_none() {
            pl.limits.set(name, *q);
        }
    }
    // defaultPodRequests
    if pl.limits.is_empty() {
        return;
    }
    for (name, q) in ctr_requests.iter() {
        // cpu and memory are the supported names that may be overcommitted.
        if matches!(name.as_str(), "cpu" | "memory") && pl.requests.get(name).is_none() {
            pl.requests.set(name, *q);
        }
    }
    let limits = pl.limits.clone();
    for (name, q) in limits.iter() {
        if crate::model::is_supported_pod_level_resource(name.as_str()) && pl.requests.get(name).is_none() {
            pl.requests.set(name, *q);
        }
    }
}

/// Upstream `AggregateContainerRequests` (or the limits' counterpart) as quantities:
/// app containers and sidecars add up; each regular init container runs beside the
/// sidecars started before it; the larger per resource wins.
fn aggregate(containers: &[Container], init: &[Container], pick: fn(&Container) -> &ResourceList) -> ResourceList {
    fn add(to: &mut ResourceList, from: &ResourceList) {
        for (n, q) in from.iter() {
            let sum = match to.get(n) {
                Some(have) => have.checked_add(q).unwrap_or(*have),
                None => *q,
            };
            to.set(n, sum);
        }
    }
    fn max(to: &mut ResourceList, from: &ResourceList) {
        for (n, q) in from.iter() {
            if to.get(n).is_none_or(|have| q > have) {
                to.set(n, *q);
            }
        }
    }
    let mut total = ResourceList::new();
    for c in containers {
        add(&mut total, pick(c));
    }
    let mut sidecars = ResourceList::new();
    let mut init_max = ResourceList::new();
    for c in init {
        if c.is_restartable_init_container() {
            add(&mut total, pick(c));
            add(&mut sidecars, pick(c));
            max(&mut init_max, &sidecars);
        } else {
            let mut phase = pick(c).clone();
            add(&mut phase, &sidecars);
            max(&mut init_max, &phase);
        }
    }
    max(&mut total, &init_max);
    total
}

/// `SetDefaults_Namespace` and `SetDefaults_NamespaceStatus`.
pub(crate) fn namespace(ns: &mut Namespace) {
    if !ns.metadata.name.is_empty() {
        let name = ns.metadata.name.clone();
        ns.metadata.labels.insert(Symbol::intern("kubernetes.io/metadata.name"), Symbol::intern(&name));
    }
    if ns.status.phase.is_empty() {
        ns.status.phase = "Active".to_owned();
    }
}

/// The API default of `preemptionPolicy`.
pub(crate) fn priority_class(pc: &mut PriorityClass) {
    pc.preemption_policy.get_or_insert(PreemptionPolicy::PreemptLowerPriority);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Quantity, ResourceRequirements};

    fn q(s: &str) -> Quantity {
        Quantity::parse(s).unwrap()
    }

    #[test]
    fn aggregate_counts_sidecars_as_upstream() {
        let c = |cpu: &str, sidecar: bool| Container {
            resources: ResourceRequirements {
                requests: ResourceList::parse([("cpu", cpu)]).unwrap(),
                ..Default::default()
            },
            restart_policy: sidecar.then(|| "Always".to_owned()),
            ..Default::default()
        };
        // app 1 + sidecar 1 = 2; init phase 3 (after the sidecar: 3 + 1 = 4) wins.
        let total = aggregate(&[c("1", false)], &[c("1", true), c("3", false)], |c| &c.resources.requests);
        assert_eq!(total.get_str("cpu"), Some(&q("4")));
        // An init container before the sidecar runs alone: max(1 + 1, 3) = 3.
        let total = aggregate(&[c("1", false)], &[c("3", false), c("1", true)], |c| &c.resources.requests);
        assert_eq!(total.get_str("cpu"), Some(&q("3")));
    }
}
