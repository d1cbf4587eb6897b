//! The resource-allocation scorers: LeastAllocated, MostAllocated,
//! RequestedToCapacityRatio and the balanced-allocation score
//! (upstream `noderesources/{least_allocated,most_allocated,requested_to_capacity_ratio,resource_allocation}.go`).

use serde::{Deserialize, Serialize};
use smallvec::SmallVec;

use super::ArgsError;
use crate::dra::ExtendedDeviceCounts;
use crate::framework::{MAX_NODE_SCORE, NodeScore};
use crate::model::{Symbol, native_names};
use crate::snapshot::{NodeInfo, NodeList, PodInfo, ResourceRow};

/// A resource and its weight in a score.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceSpec {
    /// Resource name (`cpu`, `memory`, `nvidia.com/gpu`...).
    pub name: String,
    /// Weight 1..=100 (default 1).
    #[serde(default = "one")]
    pub weight: i64,
}

fn one() -> i64 {
    1
}

impl ResourceSpec {
    /// A resource with a weight.
    pub fn new(name: &str, weight: i64) -> Self {
        ResourceSpec { name: name.to_owned(), weight }
    }
}

/// The default scored resources: cpu and memory, weight 1 each.
pub fn default_resources() -> Vec<ResourceSpec> {
    vec![ResourceSpec::new("cpu", 1), ResourceSpec::new("memory", 1)]
}

/// Upstream's defaulting of a configured resource list (`pkg/scheduler/apis/config/v1/defaults.go`,
/// `SetDefaults_NodeResourcesFitArgs` and `SetDefaults_NodeResourcesBalancedAllocationArgs`):
/// empty becomes [`default_resources`]; a weight of 0 becomes 1.
pub(crate) fn default_resource_specs(resources: &mut Vec<ResourceSpec>) {
    if resources.is_empty() {
        *resources = default_resources();
    }
    for r in resources {
        if r.weight == 0 {
            r.weight = 1;
        }
    }
}

/// A point of the RequestedToCapacityRatio function.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct UtilizationShapePoint {
    /// Utilization 0..=100 (percent).
    pub utilization: i64,
    /// Score 0..=10 (scaled to 0..=100).
    pub score: i64,
}

/// Strategy names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum ScoringStrategyType {
    /// Prefer nodes with the most free capacity (the default).
    #[default]
    LeastAllocated,
    /// Prefer the fullest nodes (bin packing).
    MostAllocated,
    /// A piecewise-linear function of utilization.
    RequestedToCapacityRatio,
}

/// `NodeResourcesFitArgs.scoringStrategy`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScoringStrategy {
    /// The strategy.
    #[serde(default, rename = "type")]
    pub kind: ScoringStrategyType,
    /// Resources and weights (default cpu and memory, 1 each).
    #[serde(default = "default_resources")]
    pub resources: Vec<ResourceSpec>,
    /// Shape for RequestedToCapacityRatio.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_to_capacity_ratio: Option<RequestedToCapacityRatioParam>,
}

/// `requestedToCapacityRatio` parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestedToCapacityRatioParam {
    /// The function's points.
    pub shape: Vec<UtilizationShapePoint>,
}

impl Default for ScoringStrategy {
    fn default() -> Self {
        ScoringStrategy {
            kind: ScoringStrategyType::LeastAllocated,
            resources: default_resources(),
            requested_to_capacity_ratio: None,
        }
    }
}

/// Upstream `MaxCustomPriorityScore`: shape scores are 0..=10.
const MAX_CUSTOM_PRIORITY_SCORE: i64 = 10;
const MAX_UTILIZATION: i64 = 100;

pub(crate) fn validate_resources(path: &str, resources: &[ResourceSpec]) -> Result<(), ArgsError> {
    if resources.len() > MAX_SCORED_RESOURCES {
        return Err(ArgsError::TooManyResources { path: path.to_owned(), count: resources.len() });
    }
    for (i, r) in resources.iter().enumerate() {
        if !(1..=100).contains(&r.weight) {
            return Err(ArgsError::Weight {
                path: format!("{path}[{i}].weight"),
                resource: r.name.clone(),
                weight: r.weight,
            });
        }
    }
    Ok(())
}

pub(crate) fn validate_shape(shape: &[UtilizationShapePoint]) -> Result<(), ArgsError> {
    let path = "scoringStrategy.requestedToCapacityRatio.shape";
    if shape.is_empty() {
        return Err(ArgsError::Shape { path: path.into(), message: "at least one point is required".into() });
    }
    for (i, p) in shape.iter().enumerate() {
        if !(0..=MAX_UTILIZATION).contains(&p.utilization) {
            return Err(ArgsError::Shape {
                path: format!("{path}[{i}].utilization"),
                message: format!("must be in 0..=100, got {}", p.utilization),
            });
        }
        if !(0..=MAX_CUSTOM_PRIORITY_SCORE).contains(&p.score) {
            return Err(ArgsError::Shape {
                path: format!("{path}[{i}].score"),
                message: format!("must be in 0..=10, got {}", p.score),
            });
        }
        if i > 0 && p.utilization <= shape[i - 1].utilization {
            return Err(ArgsError::Shape {
                path: format!("{path}[{i}].utilization"),
                message: format!(
                    "utilization values must be sorted in increasing order, got {} after {}",
                    p.utilization,
                    shape[i - 1].utilization
                ),
            });
        }
    }
    Ok(())
}

/// Most resources one score may weigh: enough for any real node, and lets the hot
/// path keep per-node values in fixed arrays instead of allocating.
pub const MAX_SCORED_RESOURCES: usize = 8;

/// What a scored resource is, resolved once so Score doesn't compare names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Cpu,
    Memory,
    EphemeralStorage,
    Scalar(Symbol),
}

/// A compiled resource list: kinds and weights.
#[derive(Debug, Clone)]
pub(crate) struct Resources {
    pub kinds: SmallVec<[Kind; 4]>,
    pub weights: SmallVec<[i64; 4]>,
    /// Exactly `[cpu, memory]`, the default of both scorers: served by a
    /// straight-line path instead of the general loop.
    pub cpu_memory: bool,
    /// The `PodLevelResources` gate: whether pod-level requests count, for the pod
    /// and for the pods on each node.
    pub pod_level: bool,
}

impl Resources {
    pub fn new(specs: &[ResourceSpec]) -> Self {
        let n = native_names();
        let kind = |name: &str| {
            let s = Symbol::intern(name);
            if s == n.cpu {
                Kind::Cpu
            } else if s == n.memory {
                Kind::Memory
            } else if s == n.ephemeral_storage {
                Kind::EphemeralStorage
            } else {
                Kind::Scalar(s)
            }
        };
        let kinds: SmallVec<[Kind; 4]> = specs.iter().map(|r| kind(&r.name)).collect();
        let cpu_memory = kinds.as_slice() == [Kind::Cpu, Kind::Memory];
        Resources { kinds, weights: specs.iter().map(|r| r.weight).collect(), cpu_memory, pod_level: true }
    }

    /// Whether the pod requests any scored resource other than cpu, memory and
    /// ephemeral-storage (never with the default `[cpu, memory]`).
    pub fn requests_scalar(&self, pod_requests: &[i64]) -> bool {
        self.kinds.iter().zip(pod_requests).any(|(k, &r)| r != 0 && matches!(k, Kind::Scalar(_)))
    }

    /// The names of all scored resources, in order.
    pub fn names(&self) -> SmallVec<[&'static str; 4]> {
        let n = native_names();
        self.kinds
            .iter()
            .map(|k| match *k {
                Kind::Cpu => n.cpu.as_str(),
                Kind::Memory => n.memory.as_str(),
                Kind::EphemeralStorage => n.ephemeral_storage.as_str(),
                Kind::Scalar(s) => s.as_str(),
            })
            .collect()
    }

    /// The pod's request of each resource, with the scoring defaults unless
    /// `use_requested` (upstream `calculatePodResourceRequestList`, which passes
    /// `SkipPodLevelResources: !PodLevelResources`).
    pub fn pod_requests(&self, pod: &PodInfo, use_requested: bool) -> SmallVec<[i64; 4]> {
        let reqs =
            if use_requested { pod.requests_for(self.pod_level) } else { pod.scoring_requests_for(self.pod_level) };
        self.kinds
            .iter()
            .map(|k| match *k {
                Kind::Cpu => reqs.milli_cpu,
                Kind::Memory => reqs.memory,
                Kind::EphemeralStorage => reqs.ephemeral_storage,
                Kind::Scalar(s) => reqs.scalar(s),
            })
            .collect()
    }
}

/// `(allocatable, requested-including-the-pod)` of one resource on a node, or `(0, 0)`
/// to leave it out (upstream `calculateResourceAllocatableRequest`). `dra` is the
/// cycle's device view and this resource's index in it: an extended resource the node
/// does not list (or lists as 0) but a device class maps is scored by devices, with
/// allocatable the class's devices the node reaches and requested those allocated
/// plus the pod's request (KEP-5004, upstream `calculateDRAExtendedResourceAllocatableRequest`).
#[inline]
pub(crate) fn allocatable_and_requested(
    node: &NodeInfo,
    kind: Kind,
    pod_request: i64,
    use_requested: bool,
    pod_level: bool,
    dra: Option<(&ExtendedDeviceCounts, usize)>,
) -> (i64, i64) {
    let all = node.requested_for(pod_level);
    let requested = if use_requested { all } else { node.non_zero_requested_for(pod_level) };
    let alloc = node.allocatable();
    match kind {
        Kind::Cpu => (alloc.milli_cpu, requested.milli_cpu + pod_request),
        Kind::Memory => (alloc.memory, requested.memory + pod_request),
        Kind::EphemeralStorage => (alloc.ephemeral_storage, all.ephemeral_storage + pod_request),
        // A scalar resource the pod doesn't ask for is left out of the score.
        Kind::Scalar(_) if pod_request == 0 => (0, 0),
        Kind::Scalar(name) => {
            let listed = alloc.scalar.iter().find(|(k, _)| *k == name).map(|&(_, a)| a);
            if listed.unwrap_or(0) == 0
                && let Some((view, i)) = dra
                && let Some((devices, allocated)) = view.counts(i, node.name(), &node.node().metadata.labels)
                && devices > 0
            {
                return (devices, allocated + pod_request);
            }
            match listed {
                Some(a) => (a, all.scalar(name) + pod_request),
                None => (0, 0),
            }
        }
    }
}

impl Resources {
    /// Calls `f(allocatable, requested, pod_request, weight)` for each scored resource
    /// the node has (allocatable > 0), in order, reading the node in place: the
    /// scorers stream over it instead of copying per-node arrays.
    #[expect(clippy::inline_always, reason = "measured: the scorers' per-node closures must inline into their loops")]
    #[inline(always)]
    pub fn for_each_present(
        &self,
        pod_requests: &[i64],
        node: &NodeInfo,
        use_requested: bool,
        dra: Option<&ExtendedDeviceCounts>,
        mut f: impl FnMut(i64, i64, i64, i64),
    ) {
        if self.cpu_memory
            && let ([pc, pm, ..], [wc, wm, ..]) = (pod_requests, self.weights.as_slice())
        {
            let requested = if use_requested {
                node.requested_for(self.pod_level)
            } else {
                node.non_zero_requested_for(self.pod_level)
            };
            let alloc = node.allocatable();
            let present = CpuMemory {
                alloc: [alloc.milli_cpu, alloc.memory],
                requested: [requested.milli_cpu, requested.memory],
            };
            present.each([*pc, *pm], [*wc, *wm], f);
            return;
        }
        for (i, ((kind, &pr), &w)) in self.kinds.iter().zip(pod_requests).zip(&self.weights).enumerate() {
            let (a, r) = allocatable_and_requested(node, *kind, pr, use_requested, self.pod_level, dra.map(|v| (v, i)));
            if a != 0 {
                f(a, r, pr, w);
            }
        }
    }
}

/// A node's cpu and memory as the default `[cpu, memory]` scores read them, from its
/// `NodeInfo` or from the snapshot's resource columns.
#[derive(Debug, Clone, Copy)]
struct CpuMemory {
    /// Allocatable `[cpu, memory]`.
    alloc: [i64; 2],
    /// Requested `[cpu, memory]` (plain or with scoring defaults) without the pod.
    requested: [i64; 2],
}

impl CpuMemory {
    /// The node's entry of the resource columns: requested with scoring defaults
    /// unless `use_requested`.
    #[expect(clippy::inline_always, reason = "read once per node in the column loops")]
    #[inline(always)]
    fn of_row(r: &ResourceRow, use_requested: bool) -> CpuMemory {
        let requested =
            if use_requested { [r.requested_cpu, r.requested_memory] } else { [r.non_zero_cpu, r.non_zero_memory] };
        CpuMemory { alloc: [r.alloc_cpu, r.alloc_memory], requested }
    }

    /// [`Resources::for_each_present`] for `[cpu, memory]`: `f(allocatable,
    /// requested + pod, pod, weight)` for each with allocatable > 0, cpu first.
    #[expect(clippy::inline_always, reason = "the scorers' per-node closures must inline into their loops")]
    #[inline(always)]
    fn each(self, pod: [i64; 2], weights: [i64; 2], mut f: impl FnMut(i64, i64, i64, i64)) {
        let CpuMemory { alloc: [ac, am], requested: [rc, rm] } = self;
        if ac != 0 {
            f(ac, rc + pod[0], pod[0], weights[0]);
        }
        if am != 0 {
            f(am, rm + pod[1], pod[1], weights[1]);
        }
    }
}

/// `sum(f(requested, allocatable) * weight) / sum(weight)` over resources with
/// allocatable > 0, integer division (upstream least/most allocated scorers).
#[expect(clippy::inline_always, reason = "measured: the scorers' per-node closures must inline into their loops")]
#[inline(always)]
fn weighted_mean(
    res: &Resources,
    pod_requests: &[i64],
    node: &NodeInfo,
    use_requested: bool,
    dra: Option<&ExtendedDeviceCounts>,
    f: impl Fn(i64, i64) -> i64,
) -> i64 {
    let mut score = 0;
    let mut weight_sum = 0;
    res.for_each_present(pod_requests, node, use_requested, dra, |a, r, _, w| {
        score += f(r, a) * w;
        weight_sum += w;
    });
    if weight_sum == 0 { 0 } else { score / weight_sum }
}

/// `((capacity - requested) * 100) / capacity`, 0 when over capacity.
#[inline]
pub(crate) fn least_requested_score(requested: i64, capacity: i64) -> i64 {
    if capacity == 0 || requested > capacity {
        return 0;
    }
    (capacity - requested) * MAX_NODE_SCORE / capacity
}

/// `(requested * 100) / capacity`, with requested capped at capacity.
#[inline]
pub(crate) fn most_requested_score(requested: i64, capacity: i64) -> i64 {
    if capacity == 0 {
        return 0;
    }
    requested.min(capacity) * MAX_NODE_SCORE / capacity
}

/// The piecewise-linear function (upstream `helper.BuildBrokenLinearFunction`), shape
/// scores already scaled to 0..=100.
#[inline]
pub(crate) fn broken_linear(shape: &[(i64, i64)], p: i64) -> i64 {
    for (i, &(u, s)) in shape.iter().enumerate() {
        if p <= u {
            if i == 0 {
                return s;
            }
            let (pu, ps) = shape[i - 1];
            return ps + (s - ps) * (p - pu) / (u - pu);
        }
    }
    shape.last().map_or(0, |&(_, s)| s)
}

/// A compiled strategy.
#[derive(Debug, Clone)]
pub(crate) enum Scorer {
    Least,
    Most,
    Ratio(Vec<(i64, i64)>),
}

impl Scorer {
    pub fn new(s: &ScoringStrategy) -> Self {
        match s.kind {
            ScoringStrategyType::LeastAllocated => Scorer::Least,
            ScoringStrategyType::MostAllocated => Scorer::Most,
            ScoringStrategyType::RequestedToCapacityRatio => Scorer::Ratio(
                s.requested_to_capacity_ratio
                    .as_ref()
                    .map(|r| {
                        r.shape
                            .iter()
                            .map(|p| (p.utilization, p.score * (MAX_NODE_SCORE / MAX_CUSTOM_PRIORITY_SCORE)))
                            .collect()
                    })
                    .unwrap_or_default(),
            ),
        }
    }

    /// The node's score for a pod requesting `pod_requests` (in `res` order).
    #[inline]
    pub fn score_node(
        &self,
        res: &Resources,
        pod_requests: &[i64],
        node: &NodeInfo,
        use_requested: bool,
        dra: Option<&ExtendedDeviceCounts>,
    ) -> i64 {
        match self {
            Scorer::Least => weighted_mean(res, pod_requests, node, use_requested, dra, least_requested_score),
            Scorer::Most => weighted_mean(res, pod_requests, node, use_requested, dra, most_requested_score),
            Scorer::Ratio(shape) => {
                let mut acc = RatioSum::default();
                res.for_each_present(pod_requests, node, use_requested, dra, |a, r, _, w| acc.add(shape, a, r, w));
                acc.score()
            }
        }
    }
}

/// RequestedToCapacityRatio's weighted sum over a node's resources (upstream
/// `requested_to_capacity_ratio.go`).
#[derive(Debug, Default)]
struct RatioSum {
    node_score: i64,
    weight_sum: i64,
}

impl RatioSum {
    #[inline]
    fn add(&mut self, shape: &[(i64, i64)], alloc: i64, requested: i64, weight: i64) {
        let utilization = if requested > alloc { MAX_UTILIZATION } else { requested * MAX_UTILIZATION / alloc };
        let score = broken_linear(shape, utilization);
        // Upstream counts a resource only when its score is positive.
        if score > 0 {
            self.node_score += score * weight;
            self.weight_sum += weight;
        }
    }

    #[inline]
    fn score(&self) -> i64 {
        if self.weight_sum == 0 { 0 } else { (self.node_score as f64 / self.weight_sum as f64).round() as i64 }
    }
}

impl Scorer {
    /// [`Scorer::score_node`] over a batch of nodes into `scores` (same order). The
    /// default `[cpu, memory]` with LeastAllocated or MostAllocated runs a loop with
    /// the strategy and the resource list resolved once for the batch, and with the
    /// `PodLevelResources` gate on it (and RequestedToCapacityRatio) reads the
    /// snapshot's resource columns instead of each node's `NodeInfo`; every other
    /// case scores node by node. Same integers either way.
    pub fn score_nodes(
        &self,
        res: &Resources,
        pod_requests: &[i64],
        nodes: NodeList<'_>,
        scores: &mut [NodeScore],
        use_requested: bool,
        dra: Option<&ExtendedDeviceCounts>,
    ) {
        if res.cpu_memory
            && let ([pc, pm, ..], [wc, wm, ..]) = (pod_requests, res.weights.as_slice())
            && *wc > 0
            && *wm > 0
        {
            let mean = CpuMemoryMean { pc: *pc, pm: *pm, wc: *wc, wm: *wm, pod_level: res.pod_level, use_requested };
            match self {
                Scorer::Least => return mean.score_nodes(nodes, scores, least_requested_score),
                Scorer::Most => return mean.score_nodes(nodes, scores, most_requested_score),
                Scorer::Ratio(_) => {}
            }
        }
        if res.cpu_memory
            && res.pod_level
            && let Scorer::Ratio(shape) = self
            && let ([pc, pm, ..], [wc, wm, ..]) = (pod_requests, res.weights.as_slice())
        {
            let rows = nodes.snapshot().resource_rows();
            for (slot, &p) in scores.iter_mut().zip(nodes.indices()) {
                let mut acc = RatioSum::default();
                CpuMemory::of_row(&rows[p], use_requested).each([*pc, *pm], [*wc, *wm], |a, r, _, w| {
                    acc.add(shape, a, r, w);
                });
                slot.score = acc.score();
            }
            return;
        }
        for (slot, node) in scores.iter_mut().zip(nodes.iter()) {
            slot.score = self.score_node(res, pod_requests, node, use_requested, dra);
        }
    }
}

/// The weighted mean of LeastAllocated / MostAllocated over the default
/// `[cpu, memory]`, with the pod's requests and the weights read once per batch:
/// the same arithmetic as [`weighted_mean`] through [`Resources::for_each_present`].
struct CpuMemoryMean {
    pc: i64,
    pm: i64,
    wc: i64,
    wm: i64,
    pod_level: bool,
    use_requested: bool,
}

impl CpuMemoryMean {
    /// With the `PodLevelResources` gate on, the node totals are the ones the
    /// snapshot's resource columns hold: the loop reads one row per node.
    #[expect(clippy::inline_always, reason = "the per-node function must inline into the loop")]
    #[inline(always)]
    fn score_nodes(&self, nodes: NodeList<'_>, scores: &mut [NodeScore], f: impl Fn(i64, i64) -> i64) {
        let same_weight = self.wc == self.wm;
        if self.pod_level {
            let (rows, idx) = (nodes.snapshot().resource_rows(), nodes.indices());
            // The two loop-invariant choices as constants: one loop body each.
            match (self.use_requested, same_weight) {
                (false, true) => self.rows_loop::<false, true>(rows, idx, scores, &f),
                (false, false) => self.rows_loop::<false, false>(rows, idx, scores, &f),
                (true, true) => self.rows_loop::<true, true>(rows, idx, scores, &f),
                (true, false) => self.rows_loop::<true, false>(rows, idx, scores, &f),
            }
            return;
        }
        for (slot, node) in scores.iter_mut().zip(nodes.iter()) {
            let requested = if self.use_requested {
                node.requested_for(self.pod_level)
            } else {
                node.non_zero_requested_for(self.pod_level)
            };
            let alloc = node.allocatable();
            let v = CpuMemory {
                alloc: [alloc.milli_cpu, alloc.memory],
                requested: [requested.milli_cpu, requested.memory],
            };
            slot.score = self.mean(v, same_weight, &f);
        }
    }

    /// [`Self::score_nodes`] over the resource columns, with `use_requested` and
    /// `same_weight` fixed.
    #[expect(clippy::inline_always, reason = "the per-node function must inline into the loop")]
    #[inline(always)]
    fn rows_loop<const USE_REQUESTED: bool, const SAME_WEIGHT: bool>(
        &self,
        rows: &[ResourceRow],
        idx: &[usize],
        scores: &mut [NodeScore],
        f: &impl Fn(i64, i64) -> i64,
    ) {
        for (slot, &p) in scores.iter_mut().zip(idx) {
            slot.score = self.mean(CpuMemory::of_row(&rows[p], USE_REQUESTED), SAME_WEIGHT, f);
        }
    }

    /// One node's weighted mean.
    #[expect(clippy::inline_always, reason = "the per-node function must inline into the loop")]
    #[expect(clippy::manual_midpoint, reason = "upstream's truncating division, kept as written")]
    #[inline(always)]
    fn mean(&self, v: CpuMemory, same_weight: bool, f: &impl Fn(i64, i64) -> i64) -> i64 {
        let ([ac, am], [rc, rm]) = (v.alloc, v.requested);
        match (ac != 0, am != 0) {
            (true, true) => {
                let c = f(rc + self.pc, ac);
                let m = f(rm + self.pm, am);
                // `(c*w + m*w) / 2w` is exactly `(c + m) / 2`, and both are
                // non-negative: a shift instead of a 64-bit division.
                if same_weight { (c + m) / 2 } else { (c * self.wc + m * self.wm) / (self.wc + self.wm) }
            }
            // One resource present: `s*w / w` is `s`.
            (true, false) => f(rc + self.pc, ac),
            (false, true) => f(rm + self.pm, am),
            (false, false) => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broken_linear_interpolates_like_upstream() {
        // Upstream TestBrokenLinearFunction cases (plugins/helper/shape_score_test.go).
        let shape = [(10, 1), (90, 9)];
        for (p, want) in
            [(-10, 1), (0, 1), (9, 1), (10, 1), (15, 1), (19, 1), (20, 2), (89, 8), (90, 9), (99, 9), (100, 9)]
        {
            assert_eq!(broken_linear(&shape, p), want, "p={p}");
        }
        let shape = [(0, 2), (40, 10), (100, 0)];
        for (p, want) in [(-10, 2), (0, 2), (20, 6), (30, 8), (40, 10), (70, 5), (100, 0), (110, 0)] {
            assert_eq!(broken_linear(&shape, p), want, "p={p}");
        }
    }

    #[test]
    fn least_and_most() {
        assert_eq!(least_requested_score(3000, 4000), 25);
        assert_eq!(least_requested_score(5000, 4000), 0);
        assert_eq!(most_requested_score(3000, 4000), 75);
        assert_eq!(most_requested_score(5000, 4000), 100);
        assert_eq!(least_requested_score(1, 0), 0);
    }
}
