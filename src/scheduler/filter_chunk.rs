//! The batched, plugin-major Filter step the serial and the parallel Filter loops
//! share: a chunk of candidate nodes through every active plugin's `filter_nodes`.
//!
//! Upstream's `RunFilterPlugins` (`pkg/scheduler/framework/runtime/framework.go`)
//! runs the plugins node by node and records the first failing plugin's status.
//! Running them plugin by plugin over a chunk, each plugin seeing only the nodes
//! every earlier plugin passed, records the same status per node: a node's first
//! failing plugin is the first plugin (in profile order) that saw it and failed it.

use std::cell::Cell;

use super::group_memo::GroupMemo;
use crate::framework::{CycleState, Status, runtime};
use crate::snapshot::{NodeList, PodInfo, Snapshot};

/// Nodes per chunk: enough that a plugin's per-chunk setup (its CycleState read,
/// the virtual call) is spread thin, few enough that the chunk's nodes stay in cache
/// from one plugin to the next.
pub(crate) const CHUNK: usize = 64;

/// A chunk's scratch, reused from chunk to chunk (no allocation per chunk).
#[derive(Debug)]
pub(crate) struct ChunkBufs {
    /// Snapshot positions of the chunk's nodes still passing, compacted after each plugin.
    live: Vec<usize>,
    /// The chunk positions of `live`.
    at: Vec<u8>,
    /// The running plugin's answers for `live` (all `Success` between plugins).
    scratch: Vec<Status>,
    /// Per chunk position: the node's outcome (`Success`: every plugin passed it).
    /// The caller takes each entry, which leaves `Success` for the next chunk.
    pub(crate) outcome: Vec<Status>,
}

impl Default for ChunkBufs {
    fn default() -> Self {
        ChunkBufs {
            live: Vec::with_capacity(CHUNK),
            at: Vec::with_capacity(CHUNK),
            scratch: vec![Status::SUCCESS; CHUNK],
            outcome: vec![Status::SUCCESS; CHUNK],
        }
    }
}

/// Runs `nodes` (snapshot positions in walk order, at most [`CHUNK`]) through the
/// cycle's active Filter plugins; afterwards `bufs.outcome[j]` is node `nodes[j]`'s
/// status, as [`runtime::run_active_filters`] gives it. `bufs.outcome[..nodes.len()]`
/// must be `Success` on entry. Returns whether any node failed (`false`: every
/// outcome is `Success`). Not panic isolated: the caller's
/// [`runtime::FilterGuard`] is, and `current` names the plugin running.
pub(crate) fn filter_chunk(
    active: &runtime::ActiveFilters<'_>,
    state: &CycleState,
    pod: &PodInfo,
    snap: &Snapshot,
    nodes: &[usize],
    current: &Cell<usize>,
    bufs: &mut ChunkBufs,
) -> bool {
    debug_assert!(nodes.len() <= CHUNK);
    let ChunkBufs { live, at, scratch, outcome } = bufs;
    // Until a plugin fails a node every plugin sees the whole chunk (`nodes`): the
    // compacted lists of the nodes still passing are built at the first failure.
    let mut compacted = false;
    for &(i, plugin, name) in active.plugins() {
        let m = if compacted { live.len() } else { nodes.len() };
        if m == 0 {
            break;
        }
        current.set(i);
        let list = NodeList::new(snap, if compacted { live.as_slice() } else { nodes });
        let failed = plugin.filter_nodes(state, pod, list, &mut scratch[..m]) & low_bits(m);
        debug_assert!(
            scratch[..m].iter().enumerate().all(|(j, s)| s.is_success() != (failed >> j & 1 == 1)),
            "filter_nodes' failure mask disagrees with its statuses"
        );
        // Most chunks pass a plugin whole.
        if failed == 0 {
            continue;
        }
        if !compacted {
            compacted = true;
            live.clear();
            live.extend_from_slice(nodes);
            at.clear();
            // At most CHUNK (64) positions: each fits a byte.
            at.extend((0..nodes.len()).map(|j| j as u8));
        }
        let first = failed.trailing_zeros() as usize;
        let mut w = first;
        for j in first..m {
            if failed >> j & 1 == 0 {
                live[w] = live[j];
                at[w] = at[j];
                w += 1;
            } else {
                let s = std::mem::take(&mut scratch[j]);
                outcome[usize::from(at[j])] = runtime::filter_failure(s, name);
            }
        }
        live.truncate(w);
        at.truncate(w);
    }
    compacted
}

/// The mask of a chunk's first `m` nodes.
#[inline]
fn low_bits(m: usize) -> u64 {
    if m >= CHUNK { u64::MAX } else { (1u64 << m) - 1 }
}

impl ChunkBufs {
    /// Back to all-`Success` after a panic cut a chunk short.
    fn reset(&mut self) {
        self.scratch.iter_mut().chain(&mut self.outcome).for_each(|s| *s = Status::SUCCESS);
    }
}

/// Below this many nodes still wanted, a chunk is still this long: the tail of a
/// sampled walk would otherwise shrink to one node per chunk where most nodes fail.
/// The nodes past the one that completes the sample are filtered and then dropped.
const MIN_CHUNK: usize = 16;

/// What a batched walk over the candidates reads.
pub(super) struct Walk<'a, 'p> {
    /// The cycle's Filter plugins.
    pub active: &'a runtime::ActiveFilters<'p>,
    /// The cycle state.
    pub state: &'a CycleState,
    /// The pod.
    pub pod: &'a PodInfo,
    /// The snapshot.
    pub snap: &'a Snapshot,
    /// PreFilter's narrowing (snapshot positions), or every node.
    pub candidates: Option<&'a [usize]>,
    /// How many candidates.
    pub n_cand: usize,
}

impl Walk<'_, '_> {
    /// Writes the candidates at walk positions `k, k + 1, ...` (wrapping at
    /// `n_cand`) into `idx`; returns the walk position after them. Without a
    /// narrowing the candidates are the positions themselves: two runs of
    /// consecutive numbers, no lookup or wrap test per node.
    #[inline]
    fn fill(&self, idx: &mut [usize], mut k: usize) -> usize {
        let n = self.n_cand;
        match self.candidates {
            None => {
                let run = (n - k).min(idx.len());
                let (a, b) = idx.split_at_mut(run);
                for (j, slot) in a.iter_mut().enumerate() {
                    *slot = k + j;
                }
                for (j, slot) in b.iter_mut().enumerate() {
                    *slot = j;
                }
                k = if b.is_empty() { k + run } else { b.len() };
                if k == n { 0 } else { k }
            }
            Some(c) => {
                for slot in idx {
                    *slot = c[k];
                    k += 1;
                    if k == n {
                        k = 0;
                    }
                }
                k
            }
        }
    }

    /// Walks up to `count` candidates from walk position `k` (wrapping at
    /// `n_cand`) in chunks, pushing each node's outcome in walk order, until
    /// `room(found)` (given the feasible nodes this walk found) says no more are
    /// wanted. A chunk never yields more feasible nodes than `room` allowed when it
    /// began: the nodes after the last one wanted are dropped, so the nodes
    /// processed (the `Ok` count) are exactly those the node-by-node walk processes.
    ///
    /// With a pod-group `memo`, a node it remembers takes the remembered status and
    /// only the others go through the plugins; the statuses of the processed nodes
    /// that were filtered are stored back, as the node-by-node walk stores them.
    ///
    /// On a panic, returns `Err` with the nodes processed before the chunk that
    /// panicked: the caller re-walks from there node by node, which finds the node
    /// and the plugin to blame (Filter reads only its inputs, so it repeats).
    #[expect(clippy::too_many_arguments, reason = "internal; the walk's outputs and its stop rule")]
    pub(super) fn run(
        &self,
        guard: &runtime::FilterGuard<'_>,
        mut k: usize,
        count: usize,
        mut room: impl FnMut(usize) -> usize,
        bufs: &mut ChunkBufs,
        feasible: &mut Vec<usize>,
        failed: &mut Vec<(usize, Status)>,
        mut memo: Option<&mut GroupMemo>,
    ) -> Result<usize, usize> {
        let mut processed = 0;
        let mut found = 0;
        let mut idx = [0usize; CHUNK];
        // The memo's answers by chunk position, and which positions were filtered.
        let mut remembered: [Option<Status>; CHUNK] = std::array::from_fn(|_| None);
        let mut miss = [0usize; CHUNK];
        let mut miss_at = [0u8; CHUNK];
        let nodes = self.snap.nodes();
        let outcome = guard.run(|current| {
            while processed < count {
                let want = room(found);
                if want == 0 {
                    break;
                }
                let m = want.clamp(MIN_CHUNK, CHUNK).min(count - processed);
                k = self.fill(&mut idx[..m], k);
                let mut filtered = u64::MAX;
                if let Some(memo) = memo.as_deref_mut() {
                    // Remembered nodes take their status; the rest are filtered as one
                    // chunk, and every outcome goes back to its chunk position.
                    filtered = 0;
                    let mut n_miss = 0;
                    for (j, &node) in idx[..m].iter().enumerate() {
                        remembered[j] = memo.filter(node, &nodes[node]);
                        if remembered[j].is_none() {
                            miss[n_miss] = node;
                            // At most CHUNK (64) positions: each fits a byte.
                            miss_at[n_miss] = j as u8;
                            n_miss += 1;
                            filtered |= 1 << j;
                        }
                    }
                    filter_chunk(self.active, self.state, self.pod, self.snap, &miss[..n_miss], current, bufs);
                    for (i, &j) in miss_at[..n_miss].iter().enumerate() {
                        remembered[usize::from(j)] = Some(std::mem::take(&mut bufs.outcome[i]));
                    }
                    for (o, r) in bufs.outcome[..m].iter_mut().zip(&mut remembered[..m]) {
                        *o = r.take().unwrap_or_default();
                    }
                } else if !filter_chunk(self.active, self.state, self.pod, self.snap, &idx[..m], current, bufs) {
                    // Every node passed (the common chunk): the first `want` are
                    // feasible and processed, as node by node, the rest dropped.
                    let take = m.min(want);
                    feasible.extend_from_slice(&idx[..take]);
                    processed += take;
                    found += take;
                    if take == want {
                        break;
                    }
                    continue;
                }
                let mut got = 0;
                let mut done = false;
                for (j, &node) in idx[..m].iter().enumerate() {
                    // Taking a failure leaves `Success` for the next chunk; a success
                    // is left in place (nothing to drop or write per passing node).
                    let o = &mut bufs.outcome[j];
                    if done {
                        if !o.is_success() {
                            drop(std::mem::take(o));
                        }
                        continue;
                    }
                    processed += 1;
                    if filtered & (1 << j) != 0
                        && let Some(memo) = memo.as_deref_mut()
                    {
                        memo.store_filter(node, &nodes[node], o);
                    }
                    if o.is_success() {
                        feasible.push(node);
                        got += 1;
                        done = got == want;
                    } else {
                        failed.push((node, std::mem::take(o)));
                    }
                }
                found += got;
                if done {
                    break;
                }
            }
        });
        if outcome.is_ok() {
            Ok(processed)
        } else {
            bufs.reset();
            Err(processed)
        }
    }
}
