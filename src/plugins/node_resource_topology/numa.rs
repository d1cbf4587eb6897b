//! NUMA zones as the plugin reads them, the pod's QoS class, and the single-numa-node
//! checks of the Filter (scheduler-plugins `pkg/noderesourcetopology/filter.go`,
//! `numaresources.go`, `pluginhelpers.go`, `pkg/util/resource.go`).
//!
//! Everything here works on small inline vectors: a node with up to 4 NUMA zones of
//! up to 8 resources each is copied and checked without touching the heap.

use smallvec::SmallVec;

use super::api::{NodeResourceTopology, TopologyManager, ZONE_TYPE_NUMA_NODE, numa_id_from_name};
use crate::model::{Container, Pod, Quantity, ResourceList, Resources, Symbol, native_names};

/// NUMA ids at or above this are skipped (upstream `maxNUMAId` = 64; upstream lets id 64
/// through its `> 64` check and then indexes out of range, schedkit skips it).
pub const MAX_NUMA_ID: i64 = 64;

/// A resource list on the stack: `(name, quantity)` pairs.
pub type ResList = SmallVec<[(Symbol, Quantity); 8]>;

/// One NUMA zone (upstream `NUMANode`): its id, its **available** resources and its
/// distances to other zones by NUMA id.
#[derive(Debug, Clone, PartialEq)]
pub struct NumaZone {
    /// The NUMA id from the zone name `node-<id>`.
    pub id: usize,
    /// `available` per resource.
    pub resources: ResList,
    /// Distance to each NUMA id named in the zone's costs.
    pub costs: SmallVec<[(usize, i64); 8]>,
}

impl NumaZone {
    /// The available amount of `name`, if the zone reports it.
    #[inline]
    pub fn get(&self, name: Symbol) -> Option<Quantity> {
        self.resources.iter().find(|(n, _)| *n == name).map(|&(_, q)| q)
    }
    fn get_mut(&mut self, name: Symbol) -> Option<&mut Quantity> {
        self.resources.iter_mut().find(|(n, _)| *n == name).map(|(_, q)| q)
    }
    /// The distance to NUMA id `other`, if the zone lists it.
    pub fn cost(&self, other: usize) -> Option<i64> {
        self.costs.iter().find(|(n, _)| *n == other).map(|&(_, c)| c)
    }
}

/// The NUMA zones of a node, in the order of the object's zone list.
pub type NumaList = SmallVec<[NumaZone; 4]>;

/// A node's NodeResourceTopology digested once when it is stored: the Topology
/// Manager configuration and the NUMA zones (upstream recomputes both per call from
/// the object; the result is the same).
#[derive(Debug, Clone, PartialEq)]
pub struct NodeTopology {
    /// Topology Manager configuration.
    pub topology_manager: TopologyManager,
    /// NUMA zones (`type: Node` with a valid `node-<id>` name, id < 64).
    pub zones: NumaList,
}

impl NodeTopology {
    /// Digests an object (upstream `createNUMANodeList` + `TopologyManagerFromNodeResourceTopology`).
    /// Costs come from the last zone with the same NUMA id, as upstream's index map does.
    pub fn from_nrt(nrt: &NodeResourceTopology) -> NodeTopology {
        let mut zones = NumaList::new();
        let mut last_zone_of = [usize::MAX; MAX_NUMA_ID as usize];
        for (i, z) in nrt.zones.iter().enumerate() {
            if z.zone_type != ZONE_TYPE_NUMA_NODE {
                continue;
            }
            let Some(id) = numa_id_from_name(&z.name).filter(|id| (0..MAX_NUMA_ID).contains(id)) else { continue };
            let id = usize::try_from(id).unwrap_or(0);
            last_zone_of[id] = i;
            let resources = z.resources.iter().map(|r| (Symbol::intern(&r.name), r.available)).collect();
            zones.push(NumaZone { id, resources, costs: SmallVec::new() });
        }
        for zone in &mut zones {
            let src = &nrt.zones[last_zone_of[zone.id]];
            for c in &src.costs {
                if let Some(j) = numa_id_from_name(&c.name).filter(|id| (0..MAX_NUMA_ID).contains(id)) {
                    let j = usize::try_from(j).unwrap_or(0);
                    match zone.costs.iter_mut().find(|(n, _)| *n == j) {
                        Some(e) => e.1 = c.value,
                        None => zone.costs.push((j, c.value)),
                    }
                }
            }
        }
        NodeTopology { topology_manager: nrt.topology_manager(), zones }
    }
}

/// A pod's QoS class (upstream `v1qos.GetPodQOS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QosClass {
    /// Every container has cpu and memory limits equal to its requests.
    Guaranteed,
    /// Some requests or limits, not Guaranteed.
    Burstable,
    /// No cpu or memory requests or limits at all.
    BestEffort,
}

/// The QoS class as Kubernetes computes it (`pkg/apis/core/v1/helper/qos/qos.go`):
/// cpu and memory only; requests and limits summed over init and app containers; with
/// pod-level resources set, those decide.
pub fn pod_qos(pod: &Pod) -> QosClass {
    let n = native_names();
    let supported = |s: Symbol| s == n.cpu || s == n.memory;
    // [cpu, memory] sums in nanos, and whether any entry was seen.
    let mut req = [None::<i128>; 2];
    let mut lim = [None::<i128>; 2];
    let slot = |s: Symbol| usize::from(s == n.memory);
    let mut guaranteed = true;
    let add = |list: &ResourceList, into: &mut [Option<i128>; 2]| -> [bool; 2] {
        let mut found = [false; 2];
        for (name, q) in list.iter() {
            if supported(name) && q.sign() > 0 {
                let e = &mut into[slot(name)];
                *e = Some(e.unwrap_or(0) + q.nanos());
                found[slot(name)] = true;
            }
        }
        found
    };
    if let Some(pl) = pod.spec.resources.as_ref().filter(|r| !r.requests.is_empty() || !r.limits.is_empty()) {
        add(&pl.requests, &mut req);
        let found = add(&pl.limits, &mut lim);
        guaranteed = found == [true, true];
    } else {
        for c in pod.spec.init_containers.iter().chain(&pod.spec.containers) {
            add(&c.resources.requests, &mut req);
            let found = add(&c.resources.limits, &mut lim);
            if found != [true, true] {
                guaranteed = false;
            }
        }
    }
    if req == [None, None] && lim == [None, None] {
        return QosClass::BestEffort;
    }
    if guaranteed {
        for i in 0..2 {
            if let Some(r) = req[i]
                && lim[i] != Some(r)
            {
                guaranteed = false;
            }
        }
    }
    let count = |a: &[Option<i128>; 2]| a.iter().filter(|x| x.is_some()).count();
    if guaranteed && count(&req) == count(&lim) { QosClass::Guaranteed } else { QosClass::Burstable }
}

/// Native resource: unprefixed or under `kubernetes.io/` (upstream `IsNativeResource`).
pub fn is_native(name: &str) -> bool {
    !name.contains('/') || name.contains("kubernetes.io/")
}

/// `hugepages-*`.
pub fn is_hugepages(name: &str) -> bool {
    name.starts_with("hugepages-")
}

/// cpu, memory and hugepages: NUMA-affine; non-Guaranteed pods don't get exclusive
/// amounts of them (upstream `isNUMAAffineResource`).
pub fn is_numa_affine(name: Symbol) -> bool {
    let n = native_names();
    name == n.cpu || name == n.memory || is_hugepages(name.as_str())
}

/// ephemeral-storage, storage and every non-native resource may be served from the
/// host when no zone reports them (upstream `isHostLevelResource`).
pub fn is_host_level(name: Symbol) -> bool {
    let s = name.as_str();
    name == native_names().ephemeral_storage || s == "storage" || !is_native(s)
}

/// Whether the pod requests any non-native resource (upstream `IncludeNonNative`).
pub fn includes_non_native(pod: &Pod) -> bool {
    pod.spec
        .init_containers
        .iter()
        .chain(&pod.spec.containers)
        .any(|c| c.resources.requests.iter().any(|(n, _)| !is_native(n.as_str())))
}

/// Upstream `isResourceSetSuitable`.
#[inline]
pub fn suitable(qos: QosClass, name: Symbol, request: Quantity, available: Quantity) -> bool {
    if qos != QosClass::Guaranteed && is_numa_affine(name) {
        return true;
    }
    available >= request
}

/// The pod's effective request (upstream `util.GetPodEffectiveRequest`): per resource,
/// max(sum of app containers, max of init containers), plus overhead.
pub fn effective_request(pod: &Pod) -> ResList {
    let mut out = ResList::new();
    for c in &pod.spec.containers {
        for (n, q) in c.resources.requests.iter() {
            match out.iter_mut().find(|(m, _)| *m == n) {
                Some(e) => e.1 = e.1.checked_add(q).unwrap_or(e.1),
                None => out.push((n, *q)),
            }
        }
    }
    let mut init = ResList::new();
    for c in &pod.spec.init_containers {
        for (n, q) in c.resources.requests.iter() {
            match init.iter_mut().find(|(m, _)| *m == n) {
                Some(e) => {
                    if *q > e.1 {
                        e.1 = *q;
                    }
                }
                None => init.push((n, *q)),
            }
        }
    }
    for (n, q) in init {
        match out.iter_mut().find(|(m, _)| *m == n) {
            Some(e) => {
                if q > e.1 {
                    e.1 = q;
                }
            }
            None => out.push((n, q)),
        }
    }
    for (n, q) in pod.spec.overhead.iter() {
        match out.iter_mut().find(|(m, _)| *m == n) {
            Some(e) => e.1 = e.1.checked_add(q).unwrap_or(e.1),
            None => out.push((n, *q)),
        }
    }
    out
}

/// Whether the node's allocatable lists `name`: cpu, memory, pods and
/// ephemeral-storage always, others when present (upstream `util.ResourceList`).
fn node_has(alloc: &Resources, name: Symbol) -> bool {
    let n = native_names();
    name == n.cpu
        || name == n.memory
        || name == n.pods
        || name == n.ephemeral_storage
        || alloc.scalar.iter().any(|(s, _)| *s == name)
}

/// Upstream `resourcesAvailableInAnyNUMANodes`: the lowest NUMA id that can hold
/// every non-zero request, or `None`.
pub fn available_in_any_numa<'a>(
    alloc: &Resources,
    zones: &[NumaZone],
    qos: QosClass,
    requests: impl IntoIterator<Item = (Symbol, &'a Quantity)>,
) -> Option<usize> {
    let mut mask = u64::MAX;
    for (name, q) in requests {
        if q.sign() == 0 {
            continue;
        }
        if !node_has(alloc, name) {
            return None;
        }
        let mut has_affinity = false;
        let mut res_mask = 0u64;
        for z in zones {
            let Some(avail) = z.get(name) else { continue };
            has_affinity = true;
            if suitable(qos, name, *q, avail) {
                res_mask |= 1 << z.id;
            }
        }
        if !has_affinity && is_host_level(name) {
            continue;
        }
        mask &= res_mask;
        if mask == 0 {
            return None;
        }
    }
    Some(mask.trailing_zeros() as usize)
}

/// Upstream `subtractResourcesFromNUMANodeList`: takes a container's requests from
/// zone `id` (skipping NUMA-affine resources of non-Guaranteed pods, zero requests and
/// resources the zone lacks). A negative result is an accounting error.
pub fn subtract_from_numa(
    zones: &mut [NumaZone],
    id: usize,
    qos: QosClass,
    requests: &ResourceList,
) -> Result<(), String> {
    check_subtract(zones, id, qos, requests)?;
    for z in zones.iter_mut().filter(|z| z.id == id) {
        for (name, q) in requests.iter() {
            if (qos != QosClass::Guaranteed && is_numa_affine(name)) || q.sign() == 0 {
                continue;
            }
            if let Some(avail) = z.get_mut(name) {
                *avail = avail.checked_sub(q).unwrap_or(Quantity::ZERO);
            }
        }
    }
    Ok(())
}

/// The accounting check of [`subtract_from_numa`] without the subtraction.
pub fn check_subtract(zones: &[NumaZone], id: usize, qos: QosClass, requests: &ResourceList) -> Result<(), String> {
    for z in zones.iter().filter(|z| z.id == id) {
        for (name, q) in requests.iter() {
            if qos != QosClass::Guaranteed && is_numa_affine(name) {
                continue;
            }
            if q.sign() == 0 {
                continue;
            }
            let Some(avail) = z.get(name) else { continue };
            if avail < *q {
                return Err(format!(
                    "resource {:?} request {} exceeds NUMA {} availability {}",
                    name.as_str(),
                    q,
                    id,
                    avail
                ));
            }
        }
    }
    Ok(())
}

/// Why the Filter rejected a pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FilterFailure {
    /// No zone holds the pod (pod scope): "cannot align pod".
    Pod,
    /// An init container (`"init"`) or sidecar (`"sidecar"`) fits no zone.
    Init(&'static str),
    /// An app container fits no zone: "cannot align container".
    Container,
    /// Subtraction went negative: "inconsistent resource accounting".
    Accounting(String),
}

/// Pod scope (upstream `singleNUMAPodLevelHandler`).
pub fn align_pod(pod: &Pod, alloc: &Resources, zones: &[NumaZone], qos: QosClass) -> Result<(), FilterFailure> {
    let req = effective_request(pod);
    available_in_any_numa(alloc, zones, qos, req.iter().map(|(n, q)| (*n, q))).map(|_| ()).ok_or(FilterFailure::Pod)
}

/// Container scope (upstream `singleNUMAContainerLevelHandler`): init containers one by
/// one with no subtraction, then app containers in order, each taken from the zone it
/// fits. The zones are copied (on the stack for small nodes) only when a later
/// container must see an earlier one's subtraction.
pub fn align_containers(pod: &Pod, alloc: &Resources, zones: &[NumaZone], qos: QosClass) -> Result<(), FilterFailure> {
    for c in &pod.spec.init_containers {
        if available_in_any_numa(alloc, zones, qos, c.resources.requests.iter()).is_none() {
            return Err(FilterFailure::Init(init_kind(c)));
        }
    }
    let mut owned: Option<NumaList> = None;
    let last = pod.spec.containers.len().saturating_sub(1);
    for (i, c) in pod.spec.containers.iter().enumerate() {
        let view: &[NumaZone] = owned.as_deref().unwrap_or(zones);
        let id =
            available_in_any_numa(alloc, view, qos, c.resources.requests.iter()).ok_or(FilterFailure::Container)?;
        if i == last {
            check_subtract(view, id, qos, &c.resources.requests).map_err(FilterFailure::Accounting)?;
        } else {
            let z = owned.get_or_insert_with(|| zones.iter().cloned().collect());
            subtract_from_numa(z, id, qos, &c.resources.requests).map_err(FilterFailure::Accounting)?;
        }
    }
    Ok(())
}

fn init_kind(c: &Container) -> &'static str {
    if c.restart_policy.as_deref() == Some("Always") { "sidecar" } else { "init" }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::PodBuilder;

    fn guaranteed(cpu: &str, mem: &str) -> Pod {
        PodBuilder::new("p")
            .with(|p| {
                let rl = ResourceList::parse([("cpu", cpu), ("memory", mem)]).unwrap();
                p.spec.containers[0].resources.requests = rl.clone();
                p.spec.containers[0].resources.limits = rl;
            })
            .build()
    }

    /// Kubernetes `pkg/apis/core/v1/helper/qos/qos_test.go`, `TestGetPodQOS` (a subset:
    /// guaranteed, burstable by mismatch or missing limit, best effort).
    #[test]
    fn qos_classes() {
        assert_eq!(pod_qos(&guaranteed("2", "1Gi")), QosClass::Guaranteed);
        let best = PodBuilder::new("b").build();
        assert_eq!(pod_qos(&best), QosClass::BestEffort);
        let burst = PodBuilder::new("b").cpu("1").build();
        assert_eq!(pod_qos(&burst), QosClass::Burstable);
        let mismatch = PodBuilder::new("m")
            .with(|p| {
                p.spec.containers[0].resources.requests =
                    ResourceList::parse([("cpu", "1"), ("memory", "1Gi")]).unwrap();
                p.spec.containers[0].resources.limits = ResourceList::parse([("cpu", "2"), ("memory", "1Gi")]).unwrap();
            })
            .build();
        assert_eq!(pod_qos(&mismatch), QosClass::Burstable);
        let only_gpu = PodBuilder::new("g").request("nvidia.com/gpu", "1").build();
        assert_eq!(pod_qos(&only_gpu), QosClass::BestEffort);
        assert!(includes_non_native(&only_gpu));
    }

    #[test]
    fn resource_classes() {
        assert!(is_native("cpu") && is_native("kubernetes.io/foo") && !is_native("nvidia.com/gpu"));
        assert!(is_numa_affine(Symbol::intern("hugepages-2Mi")));
        assert!(is_host_level(Symbol::intern("ephemeral-storage")) && is_host_level(Symbol::intern("vendor/x")));
        assert!(!is_host_level(Symbol::intern("cpu")));
    }
}
