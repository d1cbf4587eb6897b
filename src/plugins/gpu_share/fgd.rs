//! FGD: fragmentation gradient descent (simulator `pkg/simulator/plugin/fgd_score.go`).
//!
//! Score = `int64(sigmoid((frag_before - frag_after) / 1000) * 100)`, where frag is the
//! node's fragmentation under the typical pods ([`super::frag::node_frag`]) before and
//! after placing the pod. A sharing pod is tried on every device with room and scores
//! the best one (the first on ties), which is also the device Reserve takes. No
//! normalisation (scores are already 0..=100).
//!
//! Fragmentation is a pure function of (GPU model, free CPU, multiset of free device
//! milli) for a given workload, and many nodes share a state (a cluster has hundreds of
//! idle nodes of one shape), so results are memoised by that key: most Score calls are
//! two hash lookups. The memo is cleared when it reaches [`MEMO_LIMIT`] entries.

use std::sync::Arc;

use ahash::AHashMap;
use parking_lot::RwLock;
use smallvec::SmallVec;

use super::frag::{free_after, node_frag};
use super::{GpuRequest, GpuState, NodeGpus, PolicyScore, TableBatch, TypicalPods, cpu_left};
use crate::framework::{CycleState, MAX_NODE_SCORE, Status};
use crate::model::Symbol;
use crate::snapshot::{NodeInfo, PodInfo};

/// Name of [`Fgd`].
pub const NAME: &str = "FGDScore";

/// Entries the fragmentation memo may hold before it is cleared.
pub const MEMO_LIMIT: usize = 1 << 20;

/// A node state as fragmentation sees it: model, free CPU, and the free milli per device
/// sorted and packed [`FREE_BITS`] bits each above the device count
/// ([`FragKey::pack`]), so the key hashes and compares as three integers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct FragKey {
    free: u128,
    cpu: i64,
    model: Symbol,
}

/// Bits per device in [`FragKey::free`]: free milli-GPU is at most [`super::MILLI`].
const FREE_BITS: u32 = 11;

impl FragKey {
    /// The packed key of up to 8 devices of at most `2^FREE_BITS - 1` free milli each;
    /// `None` for other nodes (computed without the memo).
    #[inline]
    fn pack(free: &[u32]) -> Option<u128> {
        if free.len() > 8 {
            return None;
        }
        let mut sorted = [0u32; 8];
        let sorted = &mut sorted[..free.len()];
        sorted.copy_from_slice(free);
        sorted.sort_unstable();
        let mut packed = free.len() as u128;
        for &f in sorted.iter() {
            if f >= 1 << FREE_BITS {
                return None;
            }
            packed = (packed << FREE_BITS) | u128::from(f);
        }
        Some(packed)
    }
}

/// The FGD Score plugin.
pub struct Fgd {
    state: Arc<GpuState>,
    typical: Arc<TypicalPods>,
    memo: RwLock<AHashMap<FragKey, f64>>,
}

impl Fgd {
    /// FGD over `state`, for the workload `typical`.
    pub fn new(state: Arc<GpuState>, typical: Arc<TypicalPods>) -> Fgd {
        Fgd { state, typical, memo: RwLock::new(AHashMap::new()) }
    }

    /// `node_frag`, memoised (nodes with more than 8 devices are computed directly).
    fn frag(&self, model: Symbol, cpu: i64, free: &[u32]) -> f64 {
        let Some(packed) = FragKey::pack(free) else {
            return node_frag(&self.typical, model, cpu, free);
        };
        let key = FragKey { free: packed, cpu, model };
        if let Some(&f) = self.memo.read().get(&key) {
            return f;
        }
        let f = node_frag(&self.typical, model, cpu, free);
        let mut memo = self.memo.write();
        if memo.len() >= MEMO_LIMIT {
            memo.clear();
        }
        memo.insert(key, f);
        f
    }
}

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// The simulator's score for a fragmentation change (truncated toward zero).
pub(crate) fn frag_score(before: f64, after: f64) -> i64 {
    (sigmoid((before - after) / 1000.0) * MAX_NODE_SCORE as f64) as i64
}

/// The best device for a sharing pod and its score, given the node's fragmentation now.
fn best_share_device_with(
    frag: impl Fn(Symbol, i64, &[u32]) -> f64,
    gpus: &NodeGpus,
    before: f64,
    cpu_after: i64,
    req: &GpuRequest,
) -> Option<(usize, i64)> {
    let mut best: Option<(usize, i64)> = None;
    // Devices with the same free milli give the same node state: score each value once.
    let mut seen: SmallVec<[(u32, i64); 8]> = SmallVec::new();
    let mut free: SmallVec<[u32; 8]> = gpus.free.clone();
    for (i, &f) in gpus.free.iter().enumerate() {
        if f < req.milli {
            continue;
        }
        let score = if let Some(&(_, s)) = seen.iter().find(|(v, _)| *v == f) {
            s
        } else {
            free[i] = f - req.milli;
            let after = frag(gpus.model, cpu_after, &free);
            free[i] = f;
            let s = frag_score(before, after);
            seen.push((f, s));
            s
        };
        if best.is_none_or(|(_, b)| score > b) {
            best = Some((i, score));
        }
    }
    best
}

/// FGD's device choice for a sharing pod on a node (the simulator's
/// `allocateGpuIdBasedOnFGDScore`).
pub(crate) fn best_share_device(
    typical: &TypicalPods,
    gpus: &NodeGpus,
    cpu_left: i64,
    pod_cpu: i64,
    req: &GpuRequest,
) -> Option<(usize, i64)> {
    let before = node_frag(typical, gpus.model, cpu_left, &gpus.free);
    best_share_device_with(|m, c, f| node_frag(typical, m, c, f), gpus, before, cpu_left - pod_cpu, req)
}

impl PolicyScore for Fgd {
    const NAME: &'static str = NAME;
    type Batch<'a> = TableBatch<'a>;

    fn batch<'a>(&'a self, state: &CycleState, pod: &PodInfo) -> TableBatch<'a> {
        TableBatch::new(&self.state, state, pod)
    }

    fn score_node(&self, b: &TableBatch<'_>, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        let (view, req) = (&b.view, b.req.as_ref());
        let pod_cpu = pod.non_zero_requests.milli_cpu;
        let cpu = cpu_left(node);
        view.with_node(node, |gpus| {
            if let Some(r) = req
                && !r.accepts_model(gpus.model)
            {
                return Err(Status::error(format!("node {} has no GPU model the pod accepts", node.node().name())));
            }
            let before = self.frag(gpus.model, cpu, &gpus.free);
            match req {
                Some(r) if r.is_share() => {
                    Ok(best_share_device_with(|m, c, f| self.frag(m, c, f), gpus, before, cpu - pod_cpu, r)
                        .map_or(0, |(_, s)| s))
                }
                _ => {
                    // `NodeResource.Sub`: unchanged when the pod doesn't fit.
                    let no_gpu = GpuRequest::default();
                    let r = req.unwrap_or(&no_gpu);
                    let after = match free_after(&gpus.free, r) {
                        Some(free) if cpu >= pod_cpu => self.frag(gpus.model, cpu - pod_cpu, &free),
                        _ => before,
                    };
                    Ok(frag_score(before, after))
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::FragKey;

    /// The memo key is the multiset of free milli per device: any order of the same
    /// devices packs alike, a different count or value doesn't, and what can't be
    /// packed is left to direct computation.
    #[test]
    fn packed_keys_are_device_multisets() {
        let k = |f: &[u32]| FragKey::pack(f);
        assert_eq!(k(&[1000, 0, 250]), k(&[0, 250, 1000]));
        assert_ne!(k(&[1000, 0, 250]), k(&[1000, 250]));
        assert_ne!(k(&[0]), k(&[]));
        assert_ne!(k(&[0, 0]), k(&[0]));
        assert_ne!(k(&[1000; 8]), k(&[1000; 7]));
        assert_ne!(k(&[999, 1000]), k(&[1000, 1000]));
        assert_eq!(k(&[1000; 9]), None);
        assert_eq!(k(&[2048]), None);
        let all: std::collections::HashSet<u128> = (0..=8usize)
            .flat_map(|n| (0..=1000u32).step_by(125).map(move |v| (n, v)))
            .filter_map(|(n, v)| k(&vec![v; n]))
            .collect();
        assert_eq!(all.len(), 1 + 8 * 9, "every (count, value) distinct, and the empty node");
    }
}
