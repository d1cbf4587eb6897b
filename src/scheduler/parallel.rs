//! The parallel Filter and Score loops (feature `parallel`): chunks of nodes on the
//! scheduler's rayon pool, the same results as the serial loops.

use std::sync::atomic::{AtomicUsize, Ordering};

use rayon::prelude::*;

use super::{Buffers, filter_chunk, runtime};
use crate::framework::metrics::{PointTimers, timed};
use crate::framework::scheduler_metrics::PluginTimer;
use crate::framework::{CycleState, NodeScore, Profile, Status, WeightedScore};
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

#[expect(clippy::too_many_arguments, reason = "internal; mirrors the serial path")]
pub(super) fn score(
    pool: &rayon::ThreadPool,
    sp: &WeightedScore,
    state: &CycleState,
    pod: &PodInfo,
    snap: &Snapshot,
    feasible: &[usize],
    out: &mut [NodeScore],
    timer: Option<&PluginTimer>,
) -> Result<(), Status> {
    let chunk = chunk_len(feasible.len(), pool.current_num_threads());
    pool.install(|| {
        out.par_chunks_mut(chunk).zip(feasible.par_chunks(chunk)).try_for_each(|(o, f)| {
            let nodes = NodeList::new(snap, f);
            timed(
                timer,
                || runtime::guard(sp.name, "Score", || sp.plugin.score_nodes(state, pod, nodes, o)),
                runtime::score_code,
            )
            .and_then(|r| r)
            .map_err(|s| s.with_plugin(sp.name))
        })
    })
}
