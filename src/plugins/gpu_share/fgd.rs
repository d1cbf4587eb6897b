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

use std::cell::RefCell;

use ahash::AHashMap;
use parking_lot::Mutex;
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
    /// Memos not lent to a batch: one per batch scoring at the same time (one in a
    /// single-threaded scheduler), so parallel batches never wait for each other.
    memos: Mutex<Vec<Memo>>,
}

/// What FGD remembers between cycles: fragmentation by node state, and per table entry
/// the last results for it.
#[derive(Default)]
struct Memo {
    frag: AHashMap<FragKey, f64>,
    nodes: Vec<NodeMemo>,
}

/// Scores a [`NodeMemo`] keeps: the last few pod shapes scored on the node.
const SHAPES: usize = 4;

/// One table entry's last results, valid while the entry keeps its stamp and the node
/// its free CPU: its fragmentation at `cpu` free millicores, and the scores of the last
/// [`SHAPES`] pod shapes scored there.
#[derive(Debug, Clone, Copy, Default)]
struct NodeMemo {
    /// The entry's stamp then (0: nothing remembered; stamps start at 1).
    stamp: u64,
    cpu: i64,
    before: f64,
    /// `(shape, score)`, the first `filled` valid; `next` is the one to overwrite.
    scores: [(Shape, i64); SHAPES],
    filled: usize,
    next: usize,
}

impl NodeMemo {
    fn score(&self, shape: Shape) -> Option<i64> {
        self.scores[..self.filled].iter().find(|(s, _)| *s == shape).map(|&(_, v)| v)
    }

    fn remember(&mut self, shape: Shape, score: i64) {
        self.scores[self.next] = (shape, score);
        self.next = (self.next + 1) % SHAPES;
        self.filled = (self.filled + 1).min(SHAPES);
    }
}

/// What a node's FGD score depends on besides the node (its devices and free CPU):
/// the pod's GPU shape, whether its CPU fits, and the [rank](TypicalPods::cpu_rank) of
/// the CPU left after it (fragmentation reads CPU only through that rank), so pods of
/// different CPU share a score where it can't differ.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Shape {
    cpu_rank_after: usize,
    cpu_fits: bool,
    milli: u32,
    count: u32,
}

impl Memo {
    /// `node_frag`, memoised (nodes with more than 8 devices are computed directly).
    fn frag(&mut self, typical: &TypicalPods, model: Symbol, cpu: i64, free: &[u32]) -> f64 {
        let Some(packed) = FragKey::pack(free) else {
            return node_frag(typical, model, cpu, free);
        };
        let key = FragKey { free: packed, cpu, model };
        if let Some(&f) = self.frag.get(&key) {
            return f;
        }
        let f = node_frag(typical, model, cpu, free);
        if self.frag.len() >= MEMO_LIMIT {
            self.frag.clear();
        }
        self.frag.insert(key, f);
        f
    }
}

impl Fgd {
    /// FGD over `state`, for the workload `typical`.
    pub fn new(state: Arc<GpuState>, typical: Arc<TypicalPods>) -> Fgd {
        Fgd { state, typical, memos: Mutex::new(Vec::new()) }
    }
}

/// What FGD reads once per batch of nodes: the device table and request, and a memo
/// lent to the batch (so each node's lookups take no lock), given back when it ends.
pub struct FgdBatch<'a> {
    table: TableBatch<'a>,
    memo: RefCell<Memo>,
    home: &'a Mutex<Vec<Memo>>,
}

impl Drop for FgdBatch<'_> {
    fn drop(&mut self) {
        self.home.lock().push(std::mem::take(self.memo.get_mut()));
    }
}

impl std::fmt::Debug for FgdBatch<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FgdBatch").field("table", &self.table).finish_non_exhaustive()
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
    mut frag: impl FnMut(Symbol, i64, &[u32]) -> f64,
    gpus: &NodeGpus,
    before: f64,
    cpu_after: i64,
    req: &GpuRequest,
) -> Option<(usize, i64)> {
    let mut best: Option<(usize, i64)> = None;
    // Devices with the same free milli give the same node state: score each value once.
    let mut seen: SmallVec<[(u32, i64); 8]> = SmallVec::new();
    // A copy to try each device on: on the stack for up to 8 devices.
    let (mut small, mut large) = ([0u32; 8], Vec::new());
    let free: &mut [u32] = if let Some(s) = small.get_mut(..gpus.free.len()) {
        s.copy_from_slice(&gpus.free);
        s
    } else {
        large.extend_from_slice(&gpus.free);
        &mut large
    };
    for (i, &f) in gpus.free.iter().enumerate() {
        if f < req.milli {
            continue;
        }
        let score = if let Some(&(_, s)) = seen.iter().find(|(v, _)| *v == f) {
            s
        } else {
            free[i] = f - req.milli;
            let after = frag(gpus.model, cpu_after, free);
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

/// The node's FGD score for a pod of `pod_cpu` millicores (`req` as the pod asks, `None`: no GPU)
/// given its fragmentation `before` at `cpu` free millicores.
fn score_gpus(
    memo: &mut Memo,
    typical: &TypicalPods,
    gpus: &NodeGpus,
    cpu: i64,
    before: f64,
    pod_cpu: i64,
    req: Option<&GpuRequest>,
) -> i64 {
    match req {
        Some(r) if r.is_share() => {
            best_share_device_with(|m, c, f| memo.frag(typical, m, c, f), gpus, before, cpu - pod_cpu, r)
                .map_or(0, |(_, s)| s)
        }
        _ => {
            // `NodeResource.Sub`: unchanged when the pod doesn't fit.
            let no_gpu = GpuRequest::default();
            let r = req.unwrap_or(&no_gpu);
            let after = match free_after(&gpus.free, r) {
                Some(free) if cpu >= pod_cpu => memo.frag(typical, gpus.model, cpu - pod_cpu, &free),
                _ => before,
            };
            frag_score(before, after)
        }
    }
}

impl PolicyScore for Fgd {
    const NAME: &'static str = NAME;
    type Batch<'a> = FgdBatch<'a>;

    fn batch<'a>(&'a self, state: &CycleState, pod: &PodInfo) -> FgdBatch<'a> {
        let memo = self.memos.lock().pop().unwrap_or_default();
        FgdBatch { table: TableBatch::new(&self.state, state, pod), memo: RefCell::new(memo), home: &self.memos }
    }

    /// Remembers per table entry (until the entry or the node's free CPU changes) its
    /// fragmentation and the scores of the last few pod shapes, so a node that changed
    /// neither since it last scored a pod of this shape costs a few comparisons; the
    /// values are the ones computed afresh, bit for bit.
    fn score_node(&self, b: &FgdBatch<'_>, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        let (view, req) = (&b.table.view, b.table.req.as_ref());
        let typical = &*self.typical;
        let cpu = cpu_left(node);
        let pod_cpu = pod.non_zero_requests.milli_cpu;
        let shape = Shape {
            cpu_rank_after: typical.cpu_rank(cpu - pod_cpu),
            cpu_fits: cpu >= pod_cpu,
            milli: req.map_or(0, |r| r.milli),
            count: req.map_or(0, |r| r.count),
        };
        let wrong_model = |gpus: &NodeGpus| {
            req.is_some_and(|r| !r.accepts_model(gpus.model))
                .then(|| Status::error(format!("node {} has no GPU model the pod accepts", node.node().name())))
        };
        let memo = &mut *b.memo.borrow_mut();
        let Some((i, stamp, gpus)) = view.entry(node) else {
            let gpus = NodeGpus::from_node(node.node());
            if let Some(e) = wrong_model(&gpus) {
                return Err(e);
            }
            let before = memo.frag(typical, gpus.model, cpu, &gpus.free);
            return Ok(score_gpus(memo, typical, &gpus, cpu, before, pod_cpu, req));
        };
        if let Some(e) = wrong_model(gpus) {
            return Err(e);
        }
        if memo.nodes.len() <= i {
            memo.nodes.resize(view.len().max(i + 1), NodeMemo::default());
        }
        let m = &memo.nodes[i];
        if m.stamp == stamp && m.cpu == cpu {
            if let Some(score) = m.score(shape) {
                return Ok(score);
            }
        } else {
            let before = memo.frag(typical, gpus.model, cpu, &gpus.free);
            memo.nodes[i] = NodeMemo { stamp, cpu, before, ..NodeMemo::default() };
        }
        let before = memo.nodes[i].before;
        let score = score_gpus(memo, typical, gpus, cpu, before, pod_cpu, req);
        memo.nodes[i].remember(shape, score);
        Ok(score)
    }
}

#[cfg(test)]
mod tests {
    use super::FragKey;
    use crate::plugins::gpu_share::TypicalPods;
    use crate::plugins::gpu_share::frag::node_frag;
    use proptest::prelude::*;

    proptest! {
        /// Fragmentation reads free CPU only through its rank among the typical pods'
        /// CPU requests (what lets FGD's per-node memory key scores by that rank).
        #[test]
        fn frag_depends_on_cpu_only_through_its_rank(
            a in -2_000i64..20_000,
            b in -2_000i64..20_000,
            free in prop::collection::vec(0u32..=1000, 0..9),
        ) {
            let t = TypicalPods::from_shapes(
                [(4000, 500, 1, ""), (8000, 1000, 1, ""), (2000, 0, 0, ""), (1000, 250, 1, "T4"), (16000, 1000, 2, "")],
                95.0,
            );
            let model = crate::model::Symbol::intern("T4");
            if t.cpu_rank(a) == t.cpu_rank(b) {
                prop_assert_eq!(node_frag(&t, model, a, &free).to_bits(), node_frag(&t, model, b, &free).to_bits());
            }
            prop_assert_eq!(t.cpu_rank(a) <= t.cpu_rank(b), a <= b || t.cpu_rank(a) == t.cpu_rank(b));
        }
    }

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
