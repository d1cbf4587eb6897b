//! GPU fragmentation as the FGD paper measures it (simulator `pkg/utils/frag.go`).
//!
//! The target workload is a list of "typical" pods with their popularity. A node's
//! fragment amount measured by one typical pod is all the node's idle GPU milli when the
//! pod cannot run there (too little CPU, no fitting GPUs, a GPU model it doesn't accept)
//! or needs no GPU; otherwise the idle milli of the GPUs too small for it. The node's
//! fragmentation is the popularity-weighted sum (`NodeGpuShareFragAmountScore`). The
//! sums are done in the simulator's order (per category, categories in their index
//! order) so results match it bit for bit, which matters where FGD truncates scores.

use smallvec::SmallVec;

use super::{GpuRequest, NodeGpus};
use crate::model::Symbol;

/// A typical pod: CPU, GPU request and models, with its popularity (0..=1).
#[derive(Debug, Clone, PartialEq)]
pub struct TypicalPod {
    /// CPU in millicores (non-zero request).
    pub cpu_milli: i64,
    /// The GPU request (count 0: a CPU-only pod).
    pub gpu: GpuRequest,
    /// Popularity, 0..=1; the list sums to 1.
    pub freq: f64,
}

/// The target workload FGD optimises for.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TypicalPods {
    pods: Vec<TypicalPod>,
    /// The distinct GPU milli of the pods (so a node's devices are scanned once per
    /// distinct value, not once per pod), and each pod's index into it.
    millis: Vec<u32>,
    slot: Vec<usize>,
    /// The distinct CPU of the pods, ascending: fragmentation reads free CPU only
    /// through "at least this", so it depends only on the [rank](TypicalPods::cpu_rank).
    cpus: Vec<i64>,
    /// [`TypicalPods::cpu_rank`] at the start of each [`RANK_BUCKET`]-millicore bucket
    /// of free CPU up to the largest of `cpus` (empty when that would be over
    /// [`RANK_BUCKETS_MAX`] buckets): a rank is a lookup and a step or two, not a
    /// binary search.
    rank_at: Vec<u32>,
}

/// Width, as a power of two, of the free-CPU buckets of [`TypicalPods::cpu_rank`]'s
/// table (1,024 millicores).
const RANK_BUCKET: u32 = 10;

/// Most buckets in that table (the largest typical CPU it covers is 64 Mi millicores).
const RANK_BUCKETS_MAX: usize = 1 << 16;

/// Key of a pod's resource shape, ordered as the simulator's `PodResource.Less`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Shape {
    cpu: i64,
    milli: u32,
    count: u32,
    models: String,
}

impl TypicalPods {
    /// A target workload from its pods (popularities should sum to 1).
    pub fn new(pods: Vec<TypicalPod>) -> TypicalPods {
        let mut millis: Vec<u32> = pods.iter().map(|p| p.gpu.milli).filter(|&m| m > 0).collect();
        millis.sort_unstable();
        millis.dedup();
        let slot = pods.iter().map(|p| millis.binary_search(&p.gpu.milli).unwrap_or(usize::MAX)).collect();
        let mut cpus: Vec<i64> = pods.iter().map(|p| p.cpu_milli).collect();
        cpus.sort_unstable();
        cpus.dedup();
        let buckets = cpus.last().map_or(0, |&max| usize::try_from((max >> RANK_BUCKET) + 1).unwrap_or(0));
        let rank_at = if buckets <= RANK_BUCKETS_MAX {
            (0..buckets).map(|b| cpus.partition_point(|&c| c <= (b as i64) << RANK_BUCKET) as u32).collect()
        } else {
            Vec::new()
        };
        TypicalPods { pods, millis, slot, cpus, rank_at }
    }

    /// How many distinct typical-pod CPU requests `cpu_left` free millicores covers.
    /// [`node_frag`] compares free CPU only with those requests, so two CPU amounts of
    /// the same rank give the same fragmentation for the same devices.
    #[inline]
    pub(crate) fn cpu_rank(&self, cpu_left: i64) -> usize {
        if cpu_left >= 0 && !self.rank_at.is_empty() {
            // The rank at the bucket's start counts every CPU up to there; the few in
            // the bucket below `cpu_left` are counted on from it.
            let Some(&from) = self.rank_at.get((cpu_left >> RANK_BUCKET) as usize) else {
                // Past the last bucket, which holds the largest CPU: every one is covered.
                return self.cpus.len();
            };
            let mut r = from as usize;
            while r < self.cpus.len() && self.cpus[r] <= cpu_left {
                r += 1;
            }
            return r;
        }
        self.cpus.partition_point(|&c| c <= cpu_left)
    }

    /// The pods, most popular first.
    pub fn pods(&self) -> &[TypicalPod] {
        &self.pods
    }

    /// The typical pods of a workload, as the simulator's `GetTypicalPods` with the
    /// paper's settings (CPU-only pods included, popularity threshold 95%, step 1, no
    /// GPU weighting): shapes `(cpu, gpu milli, gpu count, models)` counted, sorted by
    /// count (ties: larger shape first), taken until they cover `threshold_pct` of the
    /// pods, and renormalised. `pods` yields `(cpu_milli, gpu_milli, num_gpu, models)`,
    /// models as written (`|`-separated, empty for any).
    ///
    /// ```
    /// use schedkit::plugins::gpu_share::TypicalPods;
    /// let pods = [(4000, 500, 1, ""), (4000, 500, 1, ""), (8000, 1000, 1, ""), (2000, 0, 0, "")];
    /// let t = TypicalPods::from_shapes(pods.iter().map(|&(c, m, n, s)| (c, m, n, s)), 95.0);
    /// assert_eq!(t.pods().len(), 3);
    /// assert_eq!(t.pods()[0].gpu.milli, 500);
    /// assert!((t.pods()[0].freq - 0.5).abs() < 1e-12);
    /// ```
    pub fn from_shapes<'a>(
        pods: impl IntoIterator<Item = (i64, u32, u32, &'a str)>,
        threshold_pct: f64,
    ) -> TypicalPods {
        let mut counts: ahash::AHashMap<Shape, f64> = ahash::AHashMap::new();
        let mut total = 0.0;
        for (cpu, milli, count, models) in pods {
            let (milli, count) = if milli == 0 || count == 0 { (0, 0) } else { (milli, count) };
            *counts.entry(Shape { cpu, milli, count, models: models.to_owned() }).or_insert(0.0) += 1.0;
            total += 1.0;
        }
        let mut list: Vec<(Shape, f64)> = counts.into_iter().collect();
        // sort.Reverse over (count, shape) ascending = count descending, larger shape first.
        list.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| b.0.cmp(&a.0)));
        let expected = threshold_pct * total / 100.0;
        let mut cum = 0.0;
        let mut i = 0;
        let mut freqs: Vec<f64> = list.iter().map(|e| e.1).collect();
        while cum < expected && i < list.len() {
            cum += freqs[i];
            freqs[i] /= total;
            i += 1;
        }
        let keep = if i >= list.len() {
            list.len()
        } else {
            for f in &mut freqs[..i] {
                *f /= cum / total;
            }
            i
        };
        let pods = list
            .into_iter()
            .zip(freqs)
            .take(keep)
            .map(|((s, _), freq)| TypicalPod {
                cpu_milli: s.cpu,
                gpu: GpuRequest {
                    count: s.count,
                    milli: s.milli,
                    models: s.models.split('|').filter(|m| !m.is_empty()).map(Symbol::intern).collect(),
                },
                freq,
            })
            .collect();
        TypicalPods::new(pods)
    }
}

// Categories of `FragRatioDataMap`, in index order.
const Q1_LACK_BOTH: usize = 0;
const Q2_LACK_GPU: usize = 1;
const Q3_SATISFIED: usize = 2;
const Q4_LACK_CPU: usize = 3;
const XL_SATISFIED: usize = 4;
const XR_LACK_CPU: usize = 5;
const NO_ACCESS: usize = 6;

/// A node's GPU fragmentation in milli-GPU under `typical` (simulator
/// `NodeGpuShareFragAmountScore`): `cpu_left` free millicores, `model` the node's GPU
/// model, `free` the free milli of each device.
///
/// ```
/// use schedkit::plugins::gpu_share::frag::node_frag;
/// use schedkit::plugins::gpu_share::TypicalPods;
/// use schedkit::model::Symbol;
/// // One typical pod wanting half a GPU: a device with 300 free is a fragment.
/// let t = TypicalPods::from_shapes([(1000, 500, 1, "")], 95.0);
/// assert_eq!(node_frag(&t, Symbol::intern("T4"), 8000, &[300, 1000]), 300.0);
/// // Not enough CPU: every idle milli is a fragment.
/// assert_eq!(node_frag(&t, Symbol::intern("T4"), 500, &[300, 1000]), 1300.0);
/// ```
pub fn node_frag(typical: &TypicalPods, model: Symbol, cpu_left: i64, free: &[u32]) -> f64 {
    let total: i64 = free.iter().map(|&f| i64::from(f)).sum();
    if total == 0 {
        return 0.0;
    }
    // Per distinct milli m: devices with at least m free, and free milli on the others.
    let mut fit: SmallVec<[(usize, i64); 16]> = SmallVec::new();
    for &m in &typical.millis {
        let (mut n, mut small) = (0usize, 0i64);
        for &f in free {
            if f >= m {
                n += 1;
            } else {
                small += i64::from(f);
            }
        }
        fit.push((n, small));
    }
    let mut data = [0.0f64; 7];
    for (t, &slot) in typical.pods.iter().zip(&typical.slot) {
        let weight = t.freq;
        if !(0.0..=1.0).contains(&weight) {
            continue;
        }
        let cpu_ok = cpu_left >= t.cpu_milli;
        let kind = if t.gpu.milli == 0 {
            if cpu_ok { XL_SATISFIED } else { XR_LACK_CPU }
        } else if !t.gpu.accepts_model(model) {
            NO_ACCESS
        } else {
            let fits = fit[slot].0 >= t.gpu.count as usize;
            match (fits, cpu_ok) {
                (true, true) => Q3_SATISFIED,
                (true, false) => Q4_LACK_CPU,
                (false, true) => Q2_LACK_GPU,
                (false, false) => Q1_LACK_BOTH,
            }
        };
        if kind == Q3_SATISFIED {
            let frag = fit[slot].1;
            data[Q2_LACK_GPU] += weight * frag as f64;
            data[Q3_SATISFIED] += weight * (total - frag) as f64;
        } else {
            data[kind] += weight * total as f64;
        }
    }
    let mut out = 0.0;
    for (i, v) in data.iter().enumerate() {
        if i != Q3_SATISFIED {
            out += v;
        }
    }
    out
}

/// The node's devices after `req` is placed as the simulator's `NodeResource.Sub`
/// (least sufficient devices first, stable by index); `None` if it doesn't fit.
pub fn free_after(free: &[u32], req: &GpuRequest) -> Option<SmallVec<[u32; 8]>> {
    let mut out: SmallVec<[u32; 8]> = SmallVec::from_slice(free);
    if req.count == 0 {
        return Some(out);
    }
    if free.len() < req.count as usize {
        return None;
    }
    let mut idx: SmallVec<[usize; 8]> = (0..free.len()).collect();
    idx.sort_by_key(|&i| free[i]);
    let mut left = req.count;
    for i in idx {
        if req.milli <= out[i] {
            out[i] -= req.milli;
            left -= 1;
            if left == 0 {
                return Some(out);
            }
        }
    }
    None
}

/// Fragmentation of a whole node table entry.
pub fn gpus_frag(typical: &TypicalPods, gpus: &NodeGpus, cpu_left: i64) -> f64 {
    node_frag(typical, gpus.model, cpu_left, &gpus.free)
}
