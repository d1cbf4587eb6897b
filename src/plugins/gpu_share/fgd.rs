//! FGD: fragmentation gradient descent (simulator `pkg/simulator/plugin/fgd_score.go`).
//!
//! Score = `int64(sigmoid((frag_before - frag_after) / 1000) * 100)`, where frag is the
//! node's fragmentation under the typical pods ([`super::frag::node_frag`]) before and
//! after placing the pod. A sharing pod is tried on every device with room and scores
//! the best one (the first on ties), which is also the device Reserve takes. No
//! normalisation (scores are already 0..=100).
//!
//! Fragmentation is a pure function of (GPU model, free CPU, multiset of free device
//! milli) for a given workload, and reads free CPU only through its
//! [rank](TypicalPods::cpu_rank); many nodes share a state (a cluster has hundreds of
//! idle nodes of one shape), so results are memoised by (model, CPU rank, packed sorted
//! devices) in a direct-mapped table of [`MEMO_LIMIT`] slots: a lookup is a multiply
//! and one slot compare, and a collision only recomputes. A sharing pod's trials keep
//! the node's devices sorted (one device lowered and moved into place), so no trial
//! sorts.

use std::sync::Arc;

use std::cell::RefCell;

use parking_lot::Mutex;
use smallvec::SmallVec;

use super::frag::{free_after, node_frag};
use super::{GpuRequest, GpuState, NodeGpus, PolicyScore, TableBatch, TypicalPods, cpu_left};
use crate::framework::{CycleState, MAX_NODE_SCORE, Status};
use crate::model::Symbol;
use crate::snapshot::{NodeInfo, PodInfo};

/// Name of [`Fgd`].
pub const NAME: &str = "FGDScore";

/// Most entries the fragmentation memo holds: the slots of its direct-mapped table
/// (a new entry replaces the one in its slot).
pub const MEMO_LIMIT: usize = 1 << MEMO_BITS;

/// Bits of a [`Memo`] slot index.
const MEMO_BITS: u32 = 16;

/// Bits per device in a packed key ([`pack_sorted`]): free milli-GPU is at most
/// [`super::MILLI`].
const FREE_BITS: u32 = 11;

/// Sorts up to 8 device values in place (insertion sort: no call per element).
#[inline]
fn sort_small(v: &mut [u32]) {
    for i in 1..v.len() {
        let x = v[i];
        let mut j = i;
        while j > 0 && v[j - 1] > x {
            v[j] = v[j - 1];
            j -= 1;
        }
        v[j] = x;
    }
}

/// Free milli per device, sorted ascending, packed [`FREE_BITS`] bits each above the
/// device count, so a node state's device multiset is one integer; `None` for more
/// than 8 devices or a value that doesn't fit the bits (computed without the memo).
#[inline]
fn pack_sorted(sorted: &[u32]) -> Option<u128> {
    if sorted.len() > 8 {
        return None;
    }
    let mut packed = sorted.len() as u128;
    for &f in sorted {
        if f >= 1 << FREE_BITS {
            return None;
        }
        packed = (packed << FREE_BITS) | u128::from(f);
    }
    Some(packed)
}

/// [`pack_sorted`] of the devices in any order.
#[cfg(test)]
fn pack(free: &[u32]) -> Option<u128> {
    let mut sorted = [0u32; 8];
    let sorted = sorted.get_mut(..free.len())?;
    sorted.copy_from_slice(free);
    sort_small(sorted);
    pack_sorted(sorted)
}

/// One slot of the fragmentation memo: the key (packed devices, CPU rank, model id) and
/// the fragmentation; `rank == u32::MAX` marks an empty slot.
#[derive(Debug, Clone, Copy)]
struct FragSlot {
    free: u128,
    rank: u32,
    model: u32,
    frag: f64,
}

const EMPTY_SLOT: FragSlot = FragSlot { free: 0, rank: u32::MAX, model: 0, frag: 0.0 };

/// The slot of a key: the key folded to 64 bits, times a large odd constant, top bits.
#[inline]
fn slot_of(free: u128, rank: u32, model: u32) -> usize {
    let x = (free as u64) ^ ((free >> 64) as u64).rotate_left(29) ^ (u64::from(rank) << 44) ^ u64::from(model) << 20;
    (x.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - MEMO_BITS)) as usize
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
    /// Direct-mapped, [`MEMO_LIMIT`] slots once first used.
    frag: Vec<FragSlot>,
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
/// Packed into two words so that a lookup compares two integers per remembered shape.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Shape {
    /// The CPU rank after the pod, shifted left once, or 1 when the pod's CPU fits.
    cpu: u64,
    /// The pod's milli-GPU per device above its device count ([`gpu_shape`]).
    gpu: u64,
}

/// The GPU half of a [`Shape`]: the same for every node of a cycle.
fn gpu_shape(req: Option<&GpuRequest>) -> u64 {
    req.map_or(0, |r| (u64::from(r.milli) << 32) | u64::from(r.count))
}

impl Memo {
    /// `node_frag` of devices in any order, memoised (nodes with more than 8 devices
    /// are computed directly).
    fn frag(&mut self, typical: &TypicalPods, model: Symbol, cpu: i64, free: &[u32]) -> f64 {
        let mut sorted = [0u32; 8];
        let Some(sorted) = sorted.get_mut(..free.len()) else {
            return node_frag(typical, model, cpu, free);
        };
        sorted.copy_from_slice(free);
        sort_small(sorted);
        self.frag_sorted(typical, model, cpu, typical.cpu_rank(cpu), sorted)
    }

    /// `node_frag` of devices sorted ascending at `cpu` free millicores of rank `rank`,
    /// memoised. `node_frag` reads neither the devices' order nor CPU beyond its rank,
    /// so the memo's value is the one computed afresh, bit for bit.
    #[inline]
    fn frag_sorted(&mut self, typical: &TypicalPods, model: Symbol, cpu: i64, rank: usize, sorted: &[u32]) -> f64 {
        let (Some(packed), Ok(rank)) = (pack_sorted(sorted), u32::try_from(rank)) else {
            return node_frag(typical, model, cpu, sorted);
        };
        if self.frag.is_empty() {
            self.frag = vec![EMPTY_SLOT; MEMO_LIMIT];
        }
        let slot = &mut self.frag[slot_of(packed, rank, model.id())];
        if slot.rank == rank && slot.free == packed && slot.model == model.id() {
            return slot.frag;
        }
        let f = node_frag(typical, model, cpu, sorted);
        *slot = FragSlot { free: packed, rank, model: model.id(), frag: f };
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
    /// The pod's CPU request (non-zero default) and the GPU half of its [`Shape`],
    /// read once per batch.
    pod_cpu: i64,
    gpu: u64,
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

/// [`best_share_device_with`] through the memo: the node's devices are sorted once,
/// and each trial lowers one device of value `f` in that sorted copy and moves it into
/// place, so the trial's key needs no sort. Same devices tried in the same order, same
/// scores and tie-break.
fn best_share_device_memo(
    memo: &mut Memo,
    typical: &TypicalPods,
    gpus: &NodeGpus,
    before: f64,
    cpu_after: i64,
    req: &GpuRequest,
) -> Option<(usize, i64)> {
    let n = gpus.free.len();
    let mut base = [0u32; 8];
    let Some(sorted) = base.get_mut(..n) else {
        return best_share_device_with(|m, c, f| memo.frag(typical, m, c, f), gpus, before, cpu_after, req);
    };
    sorted.copy_from_slice(&gpus.free);
    sort_small(sorted);
    let rank = typical.cpu_rank(cpu_after);
    let mut best: Option<(usize, i64)> = None;
    let mut seen: SmallVec<[(u32, i64); 8]> = SmallVec::new();
    for (i, &f) in gpus.free.iter().enumerate() {
        if f < req.milli {
            continue;
        }
        let score = if let Some(&(_, s)) = seen.iter().find(|(v, _)| *v == f) {
            s
        } else {
            let mut trial = base;
            let t = &mut trial[..n];
            // `f` is one of the devices, so it is in the sorted copy.
            let mut p = t.iter().position(|&v| v == f).unwrap_or(0);
            t[p] = f - req.milli;
            while p > 0 && t[p - 1] > t[p] {
                t.swap(p - 1, p);
                p -= 1;
            }
            let after = memo.frag_sorted(typical, gpus.model, cpu_after, rank, t);
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
            best_share_device_memo(memo, typical, gpus, before, cpu - pod_cpu, r).map_or(0, |(_, s)| s)
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
        let table = TableBatch::new(&self.state, state, pod);
        let gpu = gpu_shape(table.req.as_ref());
        FgdBatch { table, pod_cpu: pod.non_zero_requests.milli_cpu, gpu, memo: RefCell::new(memo), home: &self.memos }
    }

    /// Remembers per table entry (until the entry or the node's free CPU changes) its
    /// fragmentation and the scores of the last few pod shapes, so a node that changed
    /// neither since it last scored a pod of this shape costs a few comparisons; the
    /// values are the ones computed afresh, bit for bit.
    fn score_node(&self, b: &FgdBatch<'_>, _pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        let (view, req) = (&b.table.view, b.table.req.as_ref());
        let typical = &*self.typical;
        let cpu = cpu_left(node);
        let pod_cpu = b.pod_cpu;
        let shape =
            Shape { cpu: ((typical.cpu_rank(cpu - pod_cpu) as u64) << 1) | u64::from(cpu >= pod_cpu), gpu: b.gpu };
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
    use super::{Memo, best_share_device, best_share_device_memo, pack};
    use crate::plugins::gpu_share::frag::node_frag;
    use crate::plugins::gpu_share::{GpuRequest, NodeGpus, TypicalPods};
    use proptest::prelude::*;

    proptest! {
        /// The memoised device choice (sorted trials, direct-mapped memo, CPU rank key)
        /// picks the device and score the direct computation does, on a fresh memo and
        /// on one warmed by the same and other nodes.
        #[test]
        fn memoised_share_choice_matches_direct(
            nodes in prop::collection::vec(
                (prop::collection::vec(prop::sample::select(vec![0u32, 100, 250, 300, 500, 750, 900, 1000]), 1..9),
                 -1_000i64..20_000),
                1..6,
            ),
            milli in prop::sample::select(vec![100u32, 250, 500, 750]),
            pod_cpu in 0i64..9_000,
        ) {
            let t = TypicalPods::from_shapes(
                [(4000, 500, 1, ""), (8000, 1000, 1, ""), (2000, 0, 0, ""), (1000, 250, 1, "T4"), (6000, 100, 1, "")],
                95.0,
            );
            let model = crate::model::Symbol::intern("T4");
            let req = GpuRequest { count: 1, milli, ..GpuRequest::default() };
            let mut memo = Memo::default();
            for _round in 0..2 {
                for (free, cpu) in &nodes {
                    let gpus = NodeGpus { model, free: free.as_slice().into(), ..NodeGpus::default() };
                    let direct = best_share_device(&t, &gpus, *cpu, pod_cpu, &req);
                    let before = memo.frag(&t, model, *cpu, free);
                    prop_assert_eq!(before.to_bits(), node_frag(&t, model, *cpu, free).to_bits());
                    let memoised = best_share_device_memo(&mut memo, &t, &gpus, before, cpu - pod_cpu, &req);
                    prop_assert_eq!(memoised, direct);
                }
            }
        }

        /// The CPU rank's bucket table counts exactly the distinct typical CPUs at or
        /// below the free CPU, as a binary search over them does: at bucket edges,
        /// past the largest, below zero, and for CPUs too large for a table.
        #[test]
        fn cpu_rank_counts_the_typical_cpus_covered(
            cpus in prop::collection::vec(prop_oneof![0i64..140_000, Just(1024), Just(2048), Just(1 << 40)], 1..40),
            probes in prop::collection::vec(prop_oneof![-3_000i64..150_000, Just(1023), Just(1024), Just(1 << 41)], 1..40),
        ) {
            use crate::plugins::gpu_share::frag::TypicalPod;
            let t = TypicalPods::new(cpus.iter().map(|&c| TypicalPod { cpu_milli: c, gpu: GpuRequest::default(), freq: 0.0 }).collect());
            let mut distinct = cpus.clone();
            distinct.sort_unstable();
            distinct.dedup();
            for v in probes.into_iter().chain(distinct.iter().flat_map(|&c| [c - 1, c, c + 1])) {
                prop_assert_eq!(t.cpu_rank(v), distinct.iter().filter(|&&c| c <= v).count(), "free cpu {}", v);
            }
        }

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
        let k = |f: &[u32]| pack(f);
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
