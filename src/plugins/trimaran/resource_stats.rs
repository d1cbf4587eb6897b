//! Resource figures shared by the Trimaran plugins (upstream
//! `pkg/trimaran/resourcestats.go`): a pod's effective CPU and memory, a node's
//! usage statistics from its metrics, and the requests and limits of a node's pods.

use std::sync::Arc;

use crate::model::{Pod, ResourceList, native_names};
use crate::snapshot::{NodeInfo, PodInfo};

use super::metrics::ResourceData;

/// Bytes to MiB (upstream `MegaFactor`).
pub const MEGA_FACTOR: f64 = 1.0 / 1024.0 / 1024.0;

/// `max(min(x, 1), 0)` with Go's builtins: NaN stays NaN.
#[inline]
pub(crate) fn clamp01(x: f64) -> f64 {
    if x.is_nan() { x } else { x.clamp(0.0, 1.0) }
}

/// `q.milli_value()` (rounded away from zero) without 128-bit division when the
/// quantity fits 64 bits (the hot path reads a node's capacity per Score).
#[inline]
pub(crate) fn milli_value(q: &crate::model::Quantity) -> i64 {
    match i64::try_from(q.nanos()) {
        Ok(n) => {
            let (d, r) = (n / 1_000_000, n % 1_000_000);
            if r == 0 {
                d
            } else if n > 0 {
                d + 1
            } else {
                d - 1
            }
        }
        Err(_) => q.milli_value(),
    }
}

/// CPU (millicores) and memory (bytes), the two resources Trimaran reasons about.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuMem {
    /// Millicores.
    pub milli_cpu: i64,
    /// Bytes.
    pub memory: i64,
}

impl CpuMem {
    /// Adds a resource list's cpu and memory (upstream `Resource.Add`).
    fn add_list(&mut self, list: &ResourceList) {
        let n = native_names();
        if let Some(q) = list.get(n.cpu) {
            self.milli_cpu = self.milli_cpu.saturating_add(q.milli_value());
        }
        if let Some(q) = list.get(n.memory) {
            self.memory = self.memory.saturating_add(q.value());
        }
    }

    /// Adds `other` (saturating: absurd quantities must not panic).
    pub fn add(&mut self, other: CpuMem) {
        self.milli_cpu = self.milli_cpu.saturating_add(other.milli_cpu);
        self.memory = self.memory.saturating_add(other.memory);
    }

    /// Raises each figure to at least `other`'s (upstream `SetMaxLimits`).
    pub fn set_max(&mut self, other: CpuMem) {
        self.milli_cpu = self.milli_cpu.max(other.milli_cpu);
        self.memory = self.memory.max(other.memory);
    }
}

/// Upstream `GetEffectiveResource`: the app containers' sum, raised per resource to
/// any init container's value, plus the pod overhead. Pod-level resources are not
/// read (upstream doesn't).
fn effective(pod: &Pod, pick: impl Fn(&crate::model::Container) -> &ResourceList) -> CpuMem {
    let mut r = CpuMem::default();
    for c in &pod.spec.containers {
        r.add_list(pick(c));
    }
    let n = native_names();
    for c in &pod.spec.init_containers {
        let l = pick(c);
        if let Some(q) = l.get(n.cpu) {
            r.milli_cpu = r.milli_cpu.max(q.milli_value());
        }
        if let Some(q) = l.get(n.memory) {
            r.memory = r.memory.max(q.value());
        }
    }
    r.add_list(&pod.spec.overhead);
    r
}

/// A pod's effective requests (upstream `GetResourceRequested`).
pub fn pod_requests(pod: &Pod) -> CpuMem {
    effective(pod, |c| &c.resources.requests)
}

/// A pod's effective limits (upstream `GetResourceLimits`); not raised to the
/// requests (see [`CpuMem::set_max`]).
pub fn pod_limits(pod: &Pod) -> CpuMem {
    effective(pod, |c| &c.resources.limits)
}

/// Requests and limits, limits raised to at least the requests (upstream
/// `CreatePodResourcesStateData`).
pub fn pod_requests_and_limits(pod: &Pod) -> (CpuMem, CpuMem) {
    let req = pod_requests(pod);
    let mut lim = pod_limits(pod);
    lim.set_max(req);
    (req, lim)
}

/// Which resource a statistic is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resource {
    /// CPU, in millicores.
    Cpu,
    /// Memory, in MiB.
    Memory,
}

/// Usage statistics of one resource on one node (upstream `ResourceStats`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ResourceStats {
    /// Average used, absolute.
    pub used_avg: f64,
    /// Standard deviation of the use, absolute.
    pub used_stdev: f64,
    /// The pod's request.
    pub req: f64,
    /// The node's capacity (allocatable).
    pub capacity: f64,
}

impl ResourceStats {
    /// Upstream `CreateResourceStats`: capacity is the node's allocatable (millicores,
    /// or MiB for memory), the request likewise, and the percentages become absolute.
    /// `None` when the metrics have nothing of the type.
    #[inline]
    pub fn new(data: ResourceData, node: &NodeInfo, pod_request: CpuMem, resource: Resource) -> Option<ResourceStats> {
        if !data.valid {
            return None;
        }
        let alloc = node.allocatable();
        let (capacity, req) = match resource {
            Resource::Cpu => (alloc.milli_cpu as f64, pod_request.milli_cpu as f64),
            Resource::Memory => (alloc.memory as f64 * MEGA_FACTOR, pod_request.memory as f64 * MEGA_FACTOR),
        };
        Some(ResourceStats {
            used_avg: data.avg * capacity / 100.0,
            used_stdev: data.std * capacity / 100.0,
            req,
            capacity,
        })
    }

    /// Upstream `GetMuSigma`: `(used + req) / capacity` and `stdev / capacity`, each
    /// clamped to `[0, 1]`; `(0, 0)` for a capacity `<= 0`.
    #[inline]
    pub fn mu_sigma(&self) -> (f64, f64) {
        if self.capacity <= 0.0 {
            return (0.0, 0.0);
        }
        let mu = clamp01((self.used_avg + self.req) / self.capacity);
        let sigma = clamp01(self.used_stdev / self.capacity);
        (mu, sigma)
    }
}

/// The requests and limits on a node with a pending pod (upstream
/// `NodeRequestsAndLimits`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NodeRequestsAndLimits {
    /// Sum of requests of the node's pods and the pending pod, capped at capacity.
    pub request: CpuMem,
    /// Sum of limits (each raised to its requests), not capped.
    pub limit: CpuMem,
    /// [`Self::request`] without the pending pod, capped at capacity.
    pub request_minus_pod: CpuMem,
    /// [`Self::limit`] without the pending pod.
    pub limit_minus_pod: CpuMem,
    /// The node's allocatable cpu and memory.
    pub capacity: CpuMem,
}

impl NodeRequestsAndLimits {
    /// Upstream `GetNodeRequestsAndLimits` over `pods` (the node's) and the pending pod's
    /// requests and limits (already raised, see [`pod_requests_and_limits`]).
    pub fn new(
        pods: &[Arc<PodInfo>],
        capacity: CpuMem,
        pod_requests: CpuMem,
        pod_limits: CpuMem,
    ) -> NodeRequestsAndLimits {
        let mut request = CpuMem::default();
        let mut limit = CpuMem::default();
        for p in pods {
            let (r, l) = pod_requests_and_limits(&p.pod);
            request.add(r);
            limit.add(l);
        }
        let mut request_minus_pod = request;
        let limit_minus_pod = limit;
        request.add(pod_requests);
        limit.add(pod_limits);
        for r in [&mut request, &mut request_minus_pod] {
            r.milli_cpu = r.milli_cpu.min(capacity.milli_cpu);
            r.memory = r.memory.min(capacity.memory);
        }
        NodeRequestsAndLimits { request, limit, request_minus_pod, limit_minus_pod, capacity }
    }
}

#[cfg(test)]
#[allow(clippy::float_cmp, reason = "upstream's test tables compare exact values")]
mod tests {
    use super::*;
    use crate::model::{Container, Quantity, Symbol};
    use crate::plugins::trimaran::metrics::{CPU, MEMORY, Metric};
    use crate::testing::NodeBuilder;

    fn list(cpu_milli: i64, mem: i64) -> ResourceList {
        let mut l = ResourceList::new();
        l.set(Symbol::intern("cpu"), Quantity::from_milli(cpu_milli));
        l.set(Symbol::intern("memory"), Quantity::from_int(mem));
        l
    }

    /// Upstream test helper `getPodWithContainersAndOverhead` (resourcestats_test.go):
    /// one init container with requests, app containers with requests = limits, cpu
    /// overhead.
    pub(crate) fn upstream_pod(overhead: i64, init_cpu: i64, init_mem: i64, cpu: &[i64], mem: &[i64]) -> Pod {
        let mut pod = Pod::default();
        pod.metadata.name = "p".into();
        pod.spec.overhead.set(Symbol::intern("cpu"), Quantity::from_milli(overhead));
        let mut init = Container { name: "test-init".into(), ..Container::default() };
        init.resources.requests = list(init_cpu, init_mem);
        pod.spec.init_containers.push(init);
        for (i, (&c, &m)) in cpu.iter().zip(mem).enumerate() {
            let mut ct = Container { name: format!("test-container-{i}"), ..Container::default() };
            ct.resources.requests = list(c, m);
            ct.resources.limits = list(c, m);
            pod.spec.containers.push(ct);
        }
        pod
    }

    /// Upstream `getPodWithLimits`: replaces the limits (only when the lengths match).
    fn with_limits(mut pod: Pod, init_cpu: i64, init_mem: i64, cpu: &[i64], mem: &[i64]) -> Pod {
        if cpu.len() != mem.len() || cpu.len() != pod.spec.containers.len() {
            return pod;
        }
        pod.spec.init_containers[0].resources.limits = list(init_cpu, init_mem);
        for (i, c) in pod.spec.containers.iter_mut().enumerate() {
            c.resources.limits = list(cpu[i], mem[i]);
        }
        pod
    }

    fn cm(milli_cpu: i64, memory: i64) -> CpuMem {
        CpuMem { milli_cpu, memory }
    }

    // resourcestats_test.go TestGetResourceRequested.
    #[test]
    fn get_resource_requested() {
        let pod = upstream_pod(10, 100, 512, &[1000, 500], &[2048, 1024]);
        assert_eq!(pod_requests(&pod), cm(1510, 3072));
        let pod = upstream_pod(10, 2000, 4096, &[1000, 500], &[2048, 1024]);
        assert_eq!(pod_requests(&pod), cm(2010, 4096));
        let pod = upstream_pod(0, 0, 0, &[0, 0, 1000], &[0, 200 * 1024 * 1024, 400 * 1024 * 1024]);
        assert_eq!(pod_requests(&pod), cm(1000, 600 * 1024 * 1024));
    }

    // resourcestats_test.go TestGetResourceLimits.
    #[test]
    fn get_resource_limits() {
        let pod = upstream_pod(10, 100, 512, &[1000, 500], &[2048, 1024]);
        let pod = with_limits(pod, 2000, 4096, &[1000, 500], &[2048, 1024]);
        assert_eq!(pod_limits(&pod), cm(2010, 4096));
        let pod = with_limits(pod, 2000, 4096, &[4000], &[2048, 1024]);
        assert_eq!(pod_limits(&pod), cm(2010, 4096));
        let pod = with_limits(pod, 2000, 4096, &[1000, 2500], &[4096, 2048]);
        assert_eq!(pod_limits(&pod), cm(3510, 6144));
        let pod0 = upstream_pod(0, 100, 512, &[1000, 500, 0], &[2048, 1024, 0]);
        let pod0 = with_limits(pod0, 2000, 4096, &[0, 0, 1000], &[0, 2048, 0]);
        assert_eq!(pod_limits(&pod0), cm(2000, 4096));
    }

    // resourcestats_test.go TestGetMuSigma.
    #[test]
    fn get_mu_sigma() {
        let rs = |capacity, req, used_avg, used_stdev| ResourceStats { used_avg, used_stdev, req, capacity };
        let cases = [
            ("proper arguments", rs(1000.0, 100.0, 400.0, 360.0), 0.5, 0.36),
            ("zero arguments", rs(0.0, 0.0, 0.0, 0.0), 0.0, 0.0),
            ("large used", rs(1000.0, 100.0, 1400.0, 300.0), 1.0, 0.3),
            ("large deviation", rs(1000.0, 100.0, 400.0, 1600.0), 0.5, 1.0),
            ("large arguments", rs(1000.0, 0.0, 1400.0, 1600.0), 1.0, 1.0),
            ("negative used", rs(1000.0, 0.0, -100.0, 200.0), 0.0, 0.2),
            ("negative deviation", rs(1000.0, 400.0, 0.0, -200.0), 0.4, 0.0),
        ];
        for (name, r, mu, sigma) in cases {
            assert_eq!(r.mu_sigma(), (mu, sigma), "{name}");
        }
    }

    // resourcestats_test.go TestCreateResourceStats.
    #[test]
    fn create_resource_stats() {
        let node = NodeInfo::new(Arc::new(NodeBuilder::new("node0").cpu("1000m").memory("1Gi").build()));
        let metrics = vec![
            Metric { name: "no_name".into(), ..Metric::new(CPU, "", 40.0) },
            Metric::new(CPU, "AVG", 40.0),
            Metric::new(CPU, "STD", 36.0),
            Metric::new(MEMORY, "AVG", 20.0),
            Metric::new(MEMORY, "STD", 10.0),
        ];
        let pr = cm(100, 1024 * 1024);
        let cpu = ResourceStats::new(ResourceData::from_metrics(&metrics, CPU), &node, pr, Resource::Cpu);
        assert_eq!(cpu, Some(ResourceStats { capacity: 1000.0, req: 100.0, used_avg: 400.0, used_stdev: 360.0 }));
        let missing = ResourceStats::new(ResourceData::from_metrics(&metrics[3..], CPU), &node, pr, Resource::Cpu);
        assert_eq!(missing, None);
        let mem = ResourceStats::new(ResourceData::from_metrics(&metrics, MEMORY), &node, pr, Resource::Memory);
        assert_eq!(mem, Some(ResourceStats { capacity: 1024.0, req: 1.0, used_avg: 204.8, used_stdev: 102.4 }));
    }

    // resourcestats_test.go TestGetNodeRequestsAndLimits.
    #[test]
    fn get_node_requests_and_limits() {
        let pod_of = |lim_cpu: &[i64], lim_mem: &[i64]| {
            with_limits(upstream_pod(0, 100, 2048, &[1000, 500], &[512, 1024]), 500, 2048, lim_cpu, lim_mem)
        };
        let info = |p: Pod| Arc::new(PodInfo::new(p).unwrap());
        let pod = pod_of(&[1500, 500], &[1024, 1024]);
        let (req, lim) = pod_requests_and_limits(&pod);
        let p1 = info(pod_of(&[1500, 500], &[1024, 1024]));
        let p2 = info(pod_of(&[1500, 500], &[1024, 1024]));
        let p3 = info(pod_of(&[1000, 1000], &[1024, 2048]));
        let big = cm(8000, 6 * 1024);
        let low = cm(1600, 6 * 1024);

        let got = NodeRequestsAndLimits::new(&[p1, p2], big, req, lim);
        assert_eq!(
            got,
            NodeRequestsAndLimits {
                request: cm(3 * 1500, 3 * 2048),
                limit: cm(3 * 2000, 3 * 2048),
                request_minus_pod: cm(2 * 1500, 2 * 2048),
                limit_minus_pod: cm(2 * 2000, 2 * 2048),
                capacity: big,
            },
            "test-0"
        );
        let got = NodeRequestsAndLimits::new(&[p3], big, req, lim);
        assert_eq!(
            got,
            NodeRequestsAndLimits {
                request: cm(2 * 1500, 2 * 2048),
                limit: cm(2 * 2000, 2 * 2048 + 1024),
                request_minus_pod: cm(1500, 2048),
                limit_minus_pod: cm(2000, 2048 + 1024),
                capacity: big,
            },
            "test-1"
        );
        let got = NodeRequestsAndLimits::new(&[], low, req, lim);
        let r = pod_requests(&pod);
        let l = pod_limits(&pod);
        assert_eq!(
            got,
            NodeRequestsAndLimits {
                request: cm(r.milli_cpu.min(1600), r.memory.min(6144)),
                limit: cm(r.milli_cpu.max(l.milli_cpu), r.memory.max(l.memory)),
                request_minus_pod: CpuMem::default(),
                limit_minus_pod: CpuMem::default(),
                capacity: low,
            },
            "test-2"
        );
        let pod4 = pod_of(&[1000, 400], &[1024, 2048]);
        let (r4, l4) = pod_requests_and_limits(&pod4);
        let got = NodeRequestsAndLimits::new(&[], low, r4, l4);
        let (r, l) = (pod_requests(&pod4), pod_limits(&pod4));
        assert_eq!(
            got,
            NodeRequestsAndLimits {
                request: cm(r.milli_cpu.min(1600), r.memory.min(6144)),
                limit: cm(r.milli_cpu.max(l.milli_cpu).min(1600), r.memory.max(l.memory).min(6144)),
                request_minus_pod: CpuMem::default(),
                limit_minus_pod: CpuMem::default(),
                capacity: low,
            },
            "test-3"
        );
        assert!(got.request.milli_cpu <= got.limit.milli_cpu && got.request.memory <= got.limit.memory);
    }
}
