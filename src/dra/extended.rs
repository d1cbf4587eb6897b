//! Extended resources backed by DRA (KEP-5004): the claim the scheduler makes for a
//! pod's extended resources that a DeviceClass serves.
//!
//! A pod asking for `example.com/gpu: 2`
//! in `resources.requests`, where a DeviceClass names `example.com/gpu` as its
//! `extendedResourceName` (or the pod asks for the class's implicit name
//! `deviceclass.resource.kubernetes.io/<class>`), gets devices of that class through a
//! claim the scheduler makes for it on nodes whose allocatable lacks the resource
//! (upstream `pkg/scheduler/framework/plugins/dynamicresources/extendeddynamicresources.go`).

use smallvec::SmallVec;

use super::types::{
    ContainerExtendedResourceRequest, DeviceClaim, DeviceRequest, ExactDeviceRequest,
    IMPLICIT_EXTENDED_RESOURCE_PREFIX, ResourceClaimSpec,
};
use crate::model::{Container, Pod, Quantity, Symbol, is_extended_resource_name};

/// The most DRA-backed extended resources one pod may request: Filter keeps one claim
/// variant per subset a node may have to provide through DRA (2^4 = 16). Upstream has no
/// such limit; more fail PreFilter with an error.
pub const MAX_EXTENDED_RESOURCES: usize = 4;

/// Whether a resource name may be backed by DRA (upstream `IsDRAExtendedResourceName`):
/// an extended resource name (qualified, outside `kubernetes.io`, not `requests.*`) or a
/// class's implicit name.
pub fn is_dra_extended_resource_name(name: &str) -> bool {
    is_extended_resource_name(name) || name.starts_with(IMPLICIT_EXTENDED_RESOURCE_PREFIX)
}

/// A container's integral request for `resource` (upstream `AsInt64`; fractional or zero
/// requests ask for nothing).
fn container_request(c: &Container, resource: Symbol) -> Option<i64> {
    let q: &Quantity = c.resources.requests.get(resource)?;
    let milli = q.milli_value();
    (milli > 0 && milli % 1000 == 0).then_some(milli / 1000)
}

/// A container's request for `resource` beyond what `reusable` requests already cover,
/// and the mappings from the container to the requests serving it (upstream
/// `createResourceRequestAndMappings`). The request is named
/// `container-<index>-request-<position of the resource among the container's sorted
/// request names>`.
fn request_and_mappings(
    index: usize,
    c: &Container,
    resource: Symbol,
    class: &str,
    reusable: &[Option<DeviceRequest>],
) -> (Option<DeviceRequest>, Vec<ContainerExtendedResourceRequest>) {
    let mut mappings = Vec::new();
    let Some(want) = container_request(c, resource) else { return (None, mappings) };
    let mapping = |request: &str| ContainerExtendedResourceRequest {
        container_name: c.name.clone(),
        resource_name: resource.as_str().to_owned(),
        request_name: request.to_owned(),
    };
    let mut sum = 0;
    for r in reusable.iter().flatten() {
        sum += r.exactly.as_ref().and_then(|e| e.count).unwrap_or(1);
        mappings.push(mapping(&r.name));
        if sum >= want {
            return (None, mappings);
        }
    }
    let mut names: Vec<&str> = c.resources.requests.iter().map(|(n, _)| n.as_str()).collect();
    names.sort_unstable();
    let position = names.iter().position(|n| *n == resource.as_str()).unwrap_or(0);
    let name = format!("container-{index}-request-{position}");
    mappings.push(mapping(&name));
    let request = DeviceRequest {
        name,
        exactly: Some(ExactDeviceRequest {
            device_class_name: class.to_owned(),
            count: Some(want - sum),
            ..ExactDeviceRequest::default()
        }),
        first_available: Vec::new(),
    };
    (Some(request), mappings)
}

/// The claim spec asking for `resources` (each with its class) for `pod`, and which
/// request serves each container (upstream `createRequestsAndMappings`): regular and
/// sidecar containers get a request each; the init containers that run before them
/// reuse later long-lived requests first and share the largest remaining one.
pub(crate) fn claim_spec(
    pod: &Pod,
    resources: &[(Symbol, &str)],
) -> (ResourceClaimSpec, Vec<ContainerExtendedResourceRequest>) {
    let containers: Vec<&Container> = pod.spec.init_containers.iter().chain(pod.spec.containers.iter()).collect();
    let n_init = pod.spec.init_containers.len();
    let is_short = |i: usize| i < n_init && containers[i].restart_policy.as_deref() != Some("Always");
    let mut sorted: SmallVec<[(Symbol, &str); 2]> = resources.iter().copied().collect();
    sorted.sort_by(|a, b| a.0.as_str().cmp(b.0.as_str()));
    let mut requests = Vec::new();
    let mut mappings = Vec::new();
    for (resource, class) in sorted {
        let mut long: Vec<Option<DeviceRequest>> = vec![None; containers.len()];
        let mut long_mappings = Vec::new();
        for (i, c) in containers.iter().enumerate().filter(|(i, _)| !is_short(*i)) {
            let (r, m) = request_and_mappings(i, c, resource, class, &[]);
            long[i] = r;
            long_mappings.extend(m);
        }
        let mut short_mappings = Vec::new();
        let mut largest: Option<DeviceRequest> = None;
        let mut short_names = Vec::new();
        for (i, c) in containers.iter().enumerate().filter(|(i, _)| is_short(*i)) {
            let (r, m) = request_and_mappings(i, c, resource, class, &long[i..]);
            short_mappings.extend(m);
            if let Some(r) = r {
                short_names.push(r.name.clone());
                let count = |x: &DeviceRequest| x.exactly.as_ref().and_then(|e| e.count).unwrap_or(1);
                if largest.as_ref().is_none_or(|l| count(l) < count(&r)) {
                    largest = Some(r);
                }
            }
        }
        if let Some(l) = &largest
            && short_names.len() > 1
        {
            for m in &mut short_mappings {
                if short_names.contains(&m.request_name) {
                    m.request_name.clone_from(&l.name);
                }
            }
        }
        requests.extend(largest);
        requests.extend(long.into_iter().flatten());
        mappings.extend(long_mappings);
        mappings.extend(short_mappings);
    }
    requests.sort_by(|a, b| a.name.cmp(&b.name));
    (ResourceClaimSpec { devices: DeviceClaim { requests, ..DeviceClaim::default() } }, mappings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::PodBuilder;

    fn container(name: &str, gpus: &str, restart: Option<&str>) -> Container {
        let mut c = Container { name: name.into(), ..Container::default() };
        c.resources.requests = crate::model::ResourceList::parse([("example.com/gpu", gpus), ("cpu", "1")]).unwrap();
        c.restart_policy = restart.map(str::to_owned);
        c
    }

    #[test]
    fn names_follow_upstream() {
        assert!(is_dra_extended_resource_name("example.com/gpu"));
        assert!(is_dra_extended_resource_name("deviceclass.resource.kubernetes.io/gpu"));
        assert!(!is_dra_extended_resource_name("cpu"));
        assert!(!is_dra_extended_resource_name("kubernetes.io/foo"));
        assert!(!is_dra_extended_resource_name("requests.example.com/gpu"));
    }

    #[test]
    fn requests_and_mappings_as_upstream() {
        // upstream extendeddynamicresources_test.go "init containers reuse the requests of
        // later long-lived containers; the largest remaining init request is shared".
        let gpu = Symbol::intern("example.com/gpu");
        let pod = PodBuilder::new("p")
            .with(|p| {
                p.spec.init_containers = vec![container("init-a", "3", None), container("init-b", "1", None)];
                p.spec.containers = vec![container("main", "2", None)];
            })
            .build();
        let (spec, mappings) = claim_spec(&pod, &[(gpu, "gpu-class")]);
        let reqs: Vec<(String, i64)> = spec
            .devices
            .requests
            .iter()
            .map(|r| (r.name.clone(), r.exactly.as_ref().unwrap().count.unwrap()))
            .collect();
        // Container indices: init-a 0, init-b 1, main 2; "example.com/gpu" sorts before
        // "cpu"? No: "cpu" < "example.com/gpu", so the resource is request 1.
        assert_eq!(reqs, [("container-0-request-1".to_owned(), 1), ("container-2-request-1".to_owned(), 2)]);
        let m: Vec<(&str, &str)> =
            mappings.iter().map(|m| (m.container_name.as_str(), m.request_name.as_str())).collect();
        assert_eq!(
            m,
            [
                ("main", "container-2-request-1"),
                ("init-a", "container-2-request-1"),
                ("init-a", "container-0-request-1"),
                ("init-b", "container-2-request-1"),
            ]
        );
    }
}
