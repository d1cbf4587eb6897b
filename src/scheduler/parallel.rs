//! The parallel Filter and Score loops (feature `parallel`): chunks of nodes on the
//! scheduler's rayon pool, the same results as the serial loops.

use std::sync::atomic::{AtomicUsize, Ordering};

use rayon::prelude::*;

use super::{Buffers, filter_chunk, runtime};
use crate::framework::metrics::{PointTimers, ProfileTimers};
use crate::framework::{CycleState, NodeScore, Profile, Status};
use crate::model::Symbol;
use crate::snapshot::{NodeList, PodInfo, Snapshot};

/// One chunk's feasible nodes, failures, and nodes processed.
type ChunkResult = (Vec<usize>, Vec<(usize, Status)>, usize);

fn chunk_len(n: usize, threads: usize) -> usize {
    (n / (threads * 4)).max(64)
}

#[expect(clippy::too_many_arguments, reason = "internal; mirrors the serial path")]
pub(super) fn find_feasible(
    pool: &rayon::ThreadPool,
    profile: &Profile,
    state: &CycleState,
    pod: &PodInfo,
    snap: &Snapshot,
    bufs: &mut Buffers,
    narrowed: bool,
    n_cand: usize,
    to_find: usize,
    start: usize,
    timers: Option<&PointTimers>,
) -> usize {
    let found = AtomicUsize::new(0);
    let chunk = chunk_len(n_cand, pool.current_num_threads());
    let n_chunks = n_cand.div_ceil(chunk);
    let candidates = &bufs.candidates;
    let nominated = bufs.nominated.as_deref();
    let nodes = snap.nodes();
    let active = runtime::ActiveFilters::new(profile, state);
    let results: Vec<ChunkResult> = pool.install(|| {
        (0..n_chunks)
            .into_par_iter()
            .map(|c| {
                let mut ok = Vec::with_capacity(chunk);
                let mut bad = Vec::new();
                let mut processed = 0;
                let mut at = 0;
                let first = c * chunk;
                let len = chunk.min(n_cand - first);
                // Publish to the shared counter only every few nodes: an atomic add
                // per feasible node makes the threads fight over one cache line.
                let early_stop = to_find < n_cand;
                let mut unpublished = 0;
                let guard = runtime::FilterGuard::new(profile);
                if timers.is_none() && nominated.is_none() {
                    // Plugin-major, as the serial loop: the counter is read and
                    // published once per chunk of nodes.
                    let walk = filter_chunk::Walk {
                        active: &active,
                        state,
                        pod,
                        snap,
                        candidates: narrowed.then_some(candidates.as_slice()),
                        n_cand,
                    };
                    let mut published = 0;
                    let room = |got: usize| {
                        if !early_stop {
                            return usize::MAX;
                        }
                        let total = found.fetch_add(got - published, Ordering::Relaxed) + (got - published);
                        published = got;
                        to_find.saturating_sub(total)
                    };
                    let mut bufs = filter_chunk::ChunkBufs::default();
                    match walk.run(&guard, (start + first) % n_cand, len, room, &mut bufs, &mut ok, &mut bad, None) {
                        Ok(p) => return (ok, bad, p),
                        // A plugin panicked: on node by node from that chunk to blame it.
                        Err(p) => processed = p,
                    }
                }
                let outcome = guard.run(|current| {
                    let mut k = (start + first + processed) % n_cand;
                    let left = len - processed;
                    for _ in 0..left {
                        if early_stop && processed % 16 == 0 {
                            let total = found.fetch_add(unpublished, Ordering::Relaxed) + unpublished;
                            unpublished = 0;
                            if total >= to_find {
                                break;
                            }
                        }
                        let idx = if narrowed { candidates[k] } else { k };
                        k += 1;
                        if k == n_cand {
                            k = 0;
                        }
                        at = idx;
                        processed += 1;
                        let s = super::node_filter::filter_node(
                            &active,
                            profile,
                            state,
                            pod,
                            &nodes[idx],
                            current,
                            timers,
                            nominated,
                        );
                        if s.is_success() {
                            unpublished += 1;
                            ok.push(idx);
                        } else {
                            bad.push((idx, s));
                        }
                    }
                });
                if let Err(s) = outcome {
                    bad.push((at, s));
                }
                (ok, bad, processed)
            })
            .collect()
    });
    let mut processed = 0;
    for (ok, bad, p) in results {
        processed += p;
        bufs.feasible.extend(ok);
        bufs.failed.extend(bad);
    }
    bufs.feasible.truncate(to_find);
    processed
}

/// Instructions one Filter plugin spends per node on the default profile (callgrind,
/// 5,000 nodes: ≈ 215 per node over seven active plugins, the walk included).
const FILTER_WORK_PER_NODE_PLUGIN: u64 = 30;

/// Whether filtering is estimated to reach `min_work` instructions: `nodes` (the
/// nodes the search needs: every candidate, or the sample size when it stops
/// early) × the Filter plugins PreFilter did not skip.
pub(super) fn filter_pays(nodes: usize, profile: &Profile, state: &CycleState, min_work: u64) -> bool {
    let plugins = (0..profile.filter.len()).filter(|&i| !state.skips_filter(i)).count() as u64;
    let work = (nodes as u64).saturating_mul(plugins).saturating_mul(FILTER_WORK_PER_NODE_PLUGIN);
    plugins > 0 && work >= min_work
}

/// Instructions one Score plugin spends per feasible node, Score, NormalizeScore and
/// the weighted total together (callgrind, default profile, 5,000 nodes: ≈ 380 per
/// node over six plugins).
const SCORE_WORK_PER_NODE_PLUGIN: u64 = 60;

/// Whether scoring `nodes` feasible nodes with `plugins` active Score plugins is
/// estimated to reach `min_work` instructions, enough to pay for waking the pool.
pub(super) fn score_pays(nodes: usize, plugins: usize, min_work: u64) -> bool {
    let work = (nodes as u64).saturating_mul(plugins as u64).saturating_mul(SCORE_WORK_PER_NODE_PLUGIN);
    plugins > 0 && work >= min_work
}

/// The parallel Score phase's buffers: the active plugins (by position in the
/// profile) and the rows to fill.
pub(super) struct ScoreRows<'b> {
    pub active: &'b [usize],
    pub out: &'b mut Vec<NodeScore>,
}

/// Score of every active plugin over the feasible nodes in one parallel region:
/// each chunk of nodes writes its nodes' names into its piece of every plugin's row
/// of `rows.out` (row `r` = `rows.active[r]`, the nodes in `feasible` order), zeroes
/// the scores and runs the plugins in profile order — so the caller's thread does
/// no per-node work before the region. The error, if any, is the serial loop's: the
/// first plugin that fails, and within it the first chunk, so the first failing
/// node. NormalizeScore and the totals follow on the caller's thread, as they need
/// every node's score.
#[expect(clippy::too_many_arguments, reason = "internal; mirrors the serial path")]
pub(super) fn score_all(
    pool: &rayon::ThreadPool,
    profile: &Profile,
    state: &CycleState,
    pod: &PodInfo,
    snap: &Snapshot,
    feasible: &[usize],
    rows: ScoreRows<'_>,
    timers: Option<&ProfileTimers>,
) -> Result<(), Status> {
    let n = feasible.len();
    let ScoreRows { active, out } = rows;
    // Every cell is overwritten in the region: only growth writes here.
    out.resize(n * active.len(), NodeScore { name: Symbol::EMPTY, score: 0 });
    if n == 0 || active.is_empty() {
        return Ok(());
    }
    let chunk = chunk_len(n, pool.current_num_threads());
    let nodes = snap.nodes();
    // Hand each chunk its piece of every row (allocations per chunk, not per node).
    let mut row_pieces: Vec<_> = out.chunks_mut(n).map(|row| row.chunks_mut(chunk)).collect();
    let pieces: Vec<(usize, Vec<&mut [NodeScore]>)> =
        (0..n.div_ceil(chunk)).map(|c| (c, row_pieces.iter_mut().filter_map(Iterator::next).collect())).collect();
    let failed = pool.install(|| {
        pieces
            .into_par_iter()
            .filter_map(|(c, mut plugin_rows)| {
                let f = &feasible[c * chunk..((c + 1) * chunk).min(n)];
                for (r, o) in plugin_rows.iter_mut().enumerate() {
                    for (slot, &i) in o.iter_mut().zip(f) {
                        *slot = NodeScore { name: nodes[i].name(), score: 0 };
                    }
                    let pi = active[r];
                    let timer = timers.and_then(|t| t.score.get(pi)).map(|h| &**h);
                    let list = NodeList::new(snap, f);
                    if let Err(s) = runtime::run_score_plugin(&profile.score[pi], state, pod, list, o, timer) {
                        return Some((r, c, s));
                    }
                }
                None
            })
            .min_by_key(|&(r, c, _)| (r, c))
    });
    match failed {
        Some((_, _, s)) => Err(s),
        None => Ok(()),
    }
}
