//! A pod's effective requests, computed as upstream's resource helpers compute them
//! (`k8s.io/component-helpers/resource/helpers.go`, `PodRequests`), with the options the
//! scheduler passes: pod-level resources, overhead and the non-zero scoring defaults.

use super::pod::{Container, Pod};
use super::resource_names::is_supported_pod_level_resource;
use super::resources::{DEFAULT_MEMORY_REQUEST, DEFAULT_MILLI_CPU_REQUEST, native_names};
use super::{Resources, Symbol};

/// What counts in [`Pod::requests_with`]: the fields of upstream's `PodResourcesOptions`
/// that the scheduler sets.
///
/// ```
/// use schedkit::model::{PodRequestOptions, ResourceList, ResourceRequirements};
/// use schedkit::testing::PodBuilder;
/// let mut pod = PodBuilder::new("p").cpu("1").build();
/// pod.spec.resources = Some(ResourceRequirements {
///     requests: ResourceList::parse([("cpu", "3")]).unwrap(),
///     ..Default::default()
/// });
/// assert_eq!(pod.requests().milli_cpu, 3000, "pod-level cpu overrides the containers'");
/// let without = PodRequestOptions { pod_level_resources: false, ..PodRequestOptions::default() };
/// assert_eq!(pod.requests_with(without).milli_cpu, 1000);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PodRequestOptions {
    /// Pod-level requests (`spec.resources.requests`) of cpu, memory and `hugepages-*`
    /// replace the containers' aggregate (upstream `!SkipPodLevelResources`; the
    /// `PodLevelResources` feature gate). Default true.
    pub pod_level_resources: bool,
    /// Leave `spec.overhead` out (upstream `ExcludeOverhead`). Default false.
    pub exclude_overhead: bool,
    /// CPU in millicores assumed for each container that does not list a cpu request
    /// (upstream `NonMissingContainerRequests`). Default none.
    pub missing_cpu: Option<i64>,
    /// Memory in bytes assumed for each container that does not list a memory request.
    pub missing_memory: Option<i64>,
}

impl Default for PodRequestOptions {
    fn default() -> Self {
        PodRequestOptions {
            pod_level_resources: true,
            exclude_overhead: false,
            missing_cpu: None,
            missing_memory: None,
        }
    }
}

impl PodRequestOptions {
    /// These options with upstream's scoring defaults (100m CPU, 200Mi memory) for
    /// every container that lists no cpu or memory request.
    #[must_use]
    pub const fn with_non_zero_defaults(mut self) -> Self {
        self.missing_cpu = Some(DEFAULT_MILLI_CPU_REQUEST);
        self.missing_memory = Some(DEFAULT_MEMORY_REQUEST);
        self
    }
}

impl Container {
    /// An init container with `restartPolicy: Always`: a sidecar that runs beside the
    /// app containers (upstream `isRestartableInitContainer`).
    pub fn is_restartable_init_container(&self) -> bool {
        self.restart_policy.as_deref() == Some("Always")
    }

    fn requests_with(&self, opts: PodRequestOptions) -> Resources {
        let names = native_names();
        let reqs = &self.resources.requests;
        let mut r = reqs.to_resources();
        if let Some(cpu) = opts.missing_cpu
            && reqs.get(names.cpu).is_none()
        {
            r.milli_cpu += cpu;
        }
        if let Some(mem) = opts.missing_memory
            && reqs.get(names.memory).is_none()
        {
            r.memory += mem;
        }
        r
    }
}

impl Pod {
    /// Effective requests, as upstream `resource.PodRequests`
    /// (`k8s.io/component-helpers/resource/helpers.go`) with the PodLevelResources
    /// gate on (the v1.36 default): the larger of the app containers' sum (plus
    /// sidecars) and the largest init container (plus the sidecars started before
    /// it); then pod-level requests of cpu, memory and `hugepages-*` replace that
    /// aggregate; then overhead is added.
    pub fn requests(&self) -> Resources {
        self.requests_with(PodRequestOptions::default())
    }

    /// Requests computed with `opts` (upstream `PodRequests` with
    /// `PodResourcesOptions`): see [`Pod::requests`] for the steps.
    pub fn requests_with(&self, opts: PodRequestOptions) -> Resources {
        // Containers (upstream `AggregateContainerRequests`): app containers and
        // sidecars add up; each regular init container runs beside the sidecars started
        // before it, and the largest such phase is a floor (KEP-753's formula).
        let mut reqs = Resources::default();
        for c in &self.spec.containers {
            reqs.add(&c.requests_with(opts));
        }
        let mut sidecars = Resources::default();
        let mut init_max = Resources::default();
        for c in &self.spec.init_containers {
            let mut r = c.requests_with(opts);
            if c.is_restartable_init_container() {
                reqs.add(&r);
                sidecars.add(&r);
                r = sidecars.clone();
            } else {
                r.add(&sidecars);
            }
            init_max.set_max(&r);
        }
        reqs.set_max(&init_max);
        if opts.pod_level_resources && self.has_pod_level_requests() {
            // Upstream `applyPodLevelResources`: only the supported names replace.
            if let Some(pl) = &self.spec.resources {
                for (name, q) in pl.requests.iter() {
                    if is_supported_pod_level_resource(name.as_str()) {
                        reqs.set_quantity(name, q);
                    }
                }
            }
        }
        if !opts.exclude_overhead {
            reqs.add(&self.spec.overhead.to_resources());
        }
        reqs
    }

    /// Whether `spec.resources.requests` names a resource pod-level resources support
    /// (cpu, memory, `hugepages-*`): upstream `IsPodLevelRequestsSet`.
    pub fn has_pod_level_requests(&self) -> bool {
        self.spec
            .resources
            .as_ref()
            .is_some_and(|r| r.requests.iter().any(|(n, _)| is_supported_pod_level_resource(n.as_str())))
    }

    /// Requests with the scoring defaults, as the scheduler counts an assigned pod on
    /// its node (upstream `PodInfo.CalculateResource`, `NonZeroRequested`), with the
    /// PodLevelResources gate on. See [`Pod::non_zero_requests_for`].
    pub fn non_zero_requests(&self) -> Resources {
        self.non_zero_requests_for(true)
    }

    /// Requests with the scoring defaults as a node counts them (upstream
    /// `getNonMissingContainerRequests`): without pod-level requests, each container
    /// that lists no cpu (memory) request counts 100m (200Mi); with pod-level requests
    /// (and `pod_level_resources`), the default applies only when no container, the
    /// pod level and the overhead all leave that resource out.
    pub fn non_zero_requests_for(&self, pod_level_resources: bool) -> Resources {
        let base = PodRequestOptions { pod_level_resources, ..PodRequestOptions::default() };
        if !(pod_level_resources && self.has_pod_level_requests()) {
            return self.requests_with(base.with_non_zero_defaults());
        }
        let names = native_names();
        let opts = PodRequestOptions {
            missing_cpu: (!self.lists_request(names.cpu)).then_some(DEFAULT_MILLI_CPU_REQUEST),
            missing_memory: (!self.lists_request(names.memory)).then_some(DEFAULT_MEMORY_REQUEST),
            ..base
        };
        self.requests_with(opts)
    }

    /// The incoming pod's requests as the resource scorers weigh them (upstream
    /// `resourceAllocationScorer.calculatePodResourceRequest` with `useRequested`
    /// false): every container missing cpu or memory gets the default, whether or not
    /// the pod sets pod-level requests, before the pod level replaces them. This
    /// differs from [`Pod::non_zero_requests_for`] (how a node counts its pods) for a
    /// pod with pod-level requests whose containers list a resource only in part:
    /// upstream computes the two differently and so does schedkit.
    pub fn scoring_requests_for(&self, pod_level_resources: bool) -> Resources {
        self.requests_with(
            PodRequestOptions { pod_level_resources, ..PodRequestOptions::default() }.with_non_zero_defaults(),
        )
    }

    /// Whether any container, the pod level or the overhead lists `name` (explicitly,
    /// even as zero): upstream checks the key of the computed request map.
    fn lists_request(&self, name: Symbol) -> bool {
        let spec = &self.spec;
        spec.containers.iter().chain(&spec.init_containers).any(|c| c.resources.requests.get(name).is_some())
            || spec.resources.as_ref().is_some_and(|r| r.requests.get(name).is_some())
            || spec.overhead.get(name).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ResourceList, ResourceRequirements};

    fn container(reqs: &[(&str, &str)], sidecar: bool) -> Container {
        Container {
            resources: ResourceRequirements {
                requests: ResourceList::parse(reqs.iter().copied()).unwrap(),
                ..Default::default()
            },
            restart_policy: sidecar.then(|| "Always".to_owned()),
            ..Default::default()
        }
    }

    /// Cases after upstream `TestPodRequests` (component-helpers/resource/helpers_test.go).
    #[test]
    fn effective_requests() {
        let mut pod = Pod::default();
        pod.spec.containers = vec![container(&[("cpu", "1")], false), container(&[("cpu", "2")], false)];
        pod.spec.init_containers = vec![container(&[("cpu", "4")], false)];
        assert_eq!(pod.requests().milli_cpu, 4000, "init container larger than the sum");

        pod.spec.init_containers = vec![container(&[("cpu", "2")], false)];
        assert_eq!(pod.requests().milli_cpu, 3000, "sum larger than init container");

        // Sidecar 1 + later init 2.5 -> init phase peak 3.5; app phase 1+2+1 = 4.
        pod.spec.init_containers = vec![container(&[("cpu", "1")], true), container(&[("cpu", "2.5")], false)];
        assert_eq!(pod.requests().milli_cpu, 4000);
        pod.spec.init_containers = vec![container(&[("cpu", "1")], true), container(&[("cpu", "3.5")], false)];
        assert_eq!(pod.requests().milli_cpu, 4500);

        pod.spec.overhead = ResourceList::parse([("cpu", "250m")]).unwrap();
        assert_eq!(pod.requests().milli_cpu, 4750);
        let no_overhead = PodRequestOptions { exclude_overhead: true, ..PodRequestOptions::default() };
        assert_eq!(pod.requests_with(no_overhead).milli_cpu, 4500);
    }

    #[test]
    fn non_zero_defaults_only_for_missing() {
        let mut pod = Pod::default();
        pod.spec.containers = vec![container(&[], false), container(&[("cpu", "0"), ("memory", "0")], false)];
        let nz = pod.non_zero_requests();
        assert_eq!(nz.milli_cpu, DEFAULT_MILLI_CPU_REQUEST);
        assert_eq!(nz.memory, DEFAULT_MEMORY_REQUEST);
        assert_eq!(pod.requests().milli_cpu, 0);
    }

    type Case<'a> = (
        &'a str,
        bool,                                   // SkipPodLevelResources
        &'a [(&'a str, &'a str)],               // pod-level requests
        &'a [&'a [(&'a str, &'a str)]],         // containers
        &'a [(&'a [(&'a str, &'a str)], bool)], // init containers (sidecar?)
        &'a [(&'a str, &'a str)],               // expected
    );

    /// Upstream `TestPodLevelResourceRequests` (component-helpers/resource/helpers_test.go),
    /// every case; `storage` is the unsupported resource upstream uses.
    #[test]
    fn pod_level_resource_requests() {
        let c32: &[(&str, &str)] = &[("memory", "3Mi"), ("cpu", "2m")];
        let c54: &[(&str, &str)] = &[("memory", "5Mi"), ("cpu", "4m")];
        let c68: &[(&str, &str)] = &[("memory", "6Mi"), ("cpu", "8m")];
        let cases: &[Case] = &[
            ("nil", false, &[], &[], &[], &[]),
            ("pod level memory, skip", true, &[("memory", "2Mi")], &[], &[], &[]),
            ("pod level memory", false, &[("memory", "2Mi")], &[], &[], &[("memory", "2Mi")]),
            (
                "pod level memory and container cpu",
                false,
                &[("memory", "2Mi")],
                &[&[("cpu", "2m")]],
                &[],
                &[("memory", "2Mi"), ("cpu", "2m")],
            ),
            (
                "unsupported at both levels",
                false,
                &[("storage", "2Mi")],
                &[&[("storage", "3Mi")]],
                &[],
                &[("storage", "3Mi")],
            ),
            (
                "unsupported at pod level",
                false,
                &[("storage", "2Mi")],
                &[&[("memory", "3Mi")]],
                &[],
                &[("memory", "3Mi")],
            ),
            ("only container level", false, &[], &[c32], &[], c32),
            (
                "both levels",
                false,
                &[("memory", "6Mi"), ("cpu", "8m")],
                &[c32],
                &[],
                &[("memory", "6Mi"), ("cpu", "8m")],
            ),
            ("container and init", false, &[], &[c32], &[(c54, false)], c54),
            ("container and init, skip", true, &[], &[c32], &[(c54, false)], c54),
            ("container and sidecar", false, &[], &[c32], &[(c54, true)], &[("memory", "8Mi"), ("cpu", "6m")]),
            (
                "container, sidecar and init",
                false,
                &[],
                &[c32],
                &[(c54, true), (c68, false)],
                &[("memory", "11Mi"), ("cpu", "12m")],
            ),
            (
                "pod level over container, sidecar and init",
                false,
                &[("memory", "15Mi"), ("cpu", "18m")],
                &[c32],
                &[(c54, true), (c68, false)],
                &[("memory", "15Mi"), ("cpu", "18m")],
            ),
            (
                "hugepages, one size",
                false,
                &[("memory", "10Mi"), ("hugepages-2Mi", "2Mi")],
                &[],
                &[],
                &[("memory", "10Mi"), ("hugepages-2Mi", "2Mi")],
            ),
            (
                "hugepages, two sizes",
                false,
                &[("cpu", "1"), ("hugepages-2Mi", "2Mi"), ("hugepages-1Gi", "1Gi")],
                &[],
                &[],
                &[("cpu", "1"), ("hugepages-2Mi", "2Mi"), ("hugepages-1Gi", "1Gi")],
            ),
            (
                "hugepages at both levels, one size",
                false,
                &[("cpu", "1"), ("hugepages-2Mi", "10Mi")],
                &[&[("hugepages-2Mi", "6Mi")]],
                &[],
                &[("cpu", "1"), ("hugepages-2Mi", "10Mi")],
            ),
            (
                "hugepages at both levels, two sizes",
                false,
                &[("cpu", "1"), ("hugepages-2Mi", "10Mi"), ("hugepages-1Gi", "2Gi")],
                &[&[("cpu", "1"), ("hugepages-1Gi", "2Gi")]],
                &[],
                &[("cpu", "1"), ("hugepages-2Mi", "10Mi"), ("hugepages-1Gi", "2Gi")],
            ),
            (
                "hugepages, sizes split between levels",
                false,
                &[("cpu", "1"), ("hugepages-2Mi", "10Mi")],
                &[&[("memory", "4Mi"), ("hugepages-1Gi", "1Gi")]],
                &[],
                &[("cpu", "1"), ("memory", "4Mi"), ("hugepages-2Mi", "10Mi"), ("hugepages-1Gi", "1Gi")],
            ),
        ];
        for &(name, skip, pod_level, containers, inits, want) in cases {
            let mut pod = Pod::default();
            if !pod_level.is_empty() {
                pod.spec.resources = Some(ResourceRequirements {
                    requests: ResourceList::parse(pod_level.iter().copied()).unwrap(),
                    ..Default::default()
                });
            }
            pod.spec.containers = containers.iter().map(|c| container(c, false)).collect();
            pod.spec.init_containers = inits.iter().map(|&(c, sidecar)| container(c, sidecar)).collect();
            let opts = PodRequestOptions { pod_level_resources: !skip, ..PodRequestOptions::default() };
            let got = pod.requests_with(opts);
            let want = ResourceList::parse(want.iter().copied()).unwrap().to_resources();
            assert_eq!((got.milli_cpu, got.memory), (want.milli_cpu, want.memory), "{name}");
            let mut g: Vec<_> = got.scalar.iter().filter(|&&(_, v)| v != 0).copied().collect();
            let mut w: Vec<_> = want.scalar.to_vec();
            g.sort_unstable_by_key(|&(n, _)| n.as_str());
            w.sort_unstable_by_key(|&(n, _)| n.as_str());
            assert_eq!(g, w, "{name}");
        }
    }

    /// The scheduler's non-zero defaults with pod-level requests (upstream
    /// `getNonMissingContainerRequests`, `pkg/scheduler/framework/types.go`) and the
    /// scorer's (`resource_allocation.go`), which differ when only some containers list
    /// a resource the pod level leaves out.
    #[test]
    fn non_zero_defaults_with_pod_level_requests() {
        let mut pod = Pod::default();
        pod.spec.containers = vec![container(&[("memory", "1Gi")], false), container(&[], false)];
        pod.spec.resources =
            Some(ResourceRequirements { requests: ResourceList::parse([("cpu", "2")]).unwrap(), ..Default::default() });
        let nz = pod.non_zero_requests();
        assert_eq!(nz.milli_cpu, 2000, "pod-level cpu replaces the defaults");
        assert_eq!(nz.memory, 1 << 30, "a container lists memory: no default anywhere");
        let scoring = pod.scoring_requests_for(true);
        assert_eq!(scoring.milli_cpu, 2000);
        assert_eq!(scoring.memory, (1 << 30) + DEFAULT_MEMORY_REQUEST, "the scorer defaults each container");
        // Nothing lists memory: both default each container.
        pod.spec.containers = vec![container(&[], false), container(&[], false)];
        assert_eq!(pod.non_zero_requests().memory, 2 * DEFAULT_MEMORY_REQUEST);
        // Overhead listing memory counts as listed.
        pod.spec.overhead = ResourceList::parse([("memory", "0")]).unwrap();
        assert_eq!(pod.non_zero_requests().memory, 0);
        // Gate off: the plain per-container defaults.
        assert_eq!(pod.non_zero_requests_for(false).milli_cpu, 2 * DEFAULT_MILLI_CPU_REQUEST);
    }
}
