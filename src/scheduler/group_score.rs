//! The Score phase of a pod-group member the group memo serves (schedkit's own): raw
//! scores of unchanged nodes come from the memo, and normalized columns and weighted
//! totals are carried over from the previous identical member where each plugin's
//! [`NormalizeReuse`] allows, so a member that changes one node re-normalizes one node.
//!
//! Why this is exact: within one snapshot view and one memo score key (members that
//! sign alike), a node's raw scores change only when its `NodeInfo` changed (a member
//! was assumed onto it). The previous member's columns are kept in its feasible order;
//! when the current member has the same feasible nodes in the same order, a plugin
//! whose raw column is identical and that promises [`NormalizeReuse::Column`] gets the
//! same normalized column, and one that promises [`NormalizeReuse::PerNode`] gets the
//! same normalized score on every node whose raw score is the same. Everything else
//! runs NormalizeScore over the whole column as before. Host selection is untouched:
//! the totals are the same numbers in the same order, so its random draws are too.

use super::Buffers;
use super::group_memo::GroupMemo;
use crate::framework::runtime;
use crate::framework::{CycleState, NodeScore, NormalizeReuse, Profile, Status};
use crate::snapshot::{NodeList, PodInfo, Snapshot};

/// The previous member's Score columns, in the order of its feasible nodes: valid for
/// the memo's current view and score key only (the memo invalidates them when either
/// changes).
#[derive(Default)]
pub(super) struct LastColumns {
    valid: bool,
    /// Snapshot positions of the feasible nodes.
    feasible: Vec<usize>,
    /// Raw and normalized scores, one row of `plugins` per feasible node.
    raw: Vec<i64>,
    norm: Vec<i64>,
    /// Weighted totals per feasible node.
    totals: Vec<i64>,
    /// The member in progress: its normalized scores (swapped into `norm` when done),
    /// which rows changed, and one plugin's changed rows.
    cur_norm: Vec<i64>,
    dirty: Vec<bool>,
    changed: Vec<usize>,
}

impl LastColumns {
    /// Forgets the previous member's columns (another view or score key).
    pub(super) fn invalidate(&mut self) {
        self.valid = false;
    }
}

/// [`super::Scheduler::score`] for a pod-group member whose raw scores may come from
/// the [`GroupMemo`]: only nodes not remembered are scored, by every plugin at once;
/// NormalizeScore runs over the whole column unless the previous member's columns
/// settle it (see the module doc); the weighted totals are recomputed on changed rows.
pub(super) fn memo_score(
    memo: &mut GroupMemo,
    bufs: &mut Buffers,
    profile: &Profile,
    state: &CycleState,
    pod: &PodInfo,
    snap: &Snapshot,
) -> Result<(), Status> {
    let nodes = snap.nodes();
    let plugins = profile.score.len();
    let n = bufs.feasible.len();
    // Every cell read below is written first (a remembered row, or this member's own
    // Score for a missed node; skipped plugins' cells are never read), so the buffer
    // only grows and is not cleared per member.
    let rows = &mut bufs.memo_rows;
    if rows.len() < n * plugins {
        rows.resize(n * plugins, 0);
    }
    bufs.memo_miss.clear();
    bufs.memo_miss_at.clear();
    for (k, &i) in bufs.feasible.iter().enumerate() {
        if let Some(r) = memo.scores(i, &nodes[i]) {
            rows[k * plugins..(k + 1) * plugins].copy_from_slice(r);
        } else {
            bufs.memo_miss.push(i);
            bufs.memo_miss_at.push(k);
        }
    }
    let last = &mut memo.columns;
    // The previous member's columns apply only to the very same feasible nodes in the
    // same order (the rotating start or a node filling up changes them).
    let same_nodes = last.valid && last.feasible == bufs.feasible;
    last.valid = false;
    last.cur_norm.clear();
    last.cur_norm.resize(n * plugins, 0);
    last.dirty.clear();
    last.dirty.resize(n, false);
    let mut all_dirty = !same_nodes;
    let mut reused = 0u64;
    for (pi, sp) in profile.score.iter().enumerate() {
        if state.skips_score(pi) {
            continue;
        }
        if !bufs.memo_miss.is_empty() {
            bufs.scores.clear();
            bufs.scores.extend(bufs.memo_miss.iter().map(|&i| NodeScore { name: nodes[i].name(), score: 0 }));
            let missing = NodeList::new(snap, &bufs.memo_miss);
            runtime::run_score_plugin(sp, state, pod, missing, &mut bufs.scores, None)?;
            for (ns, &k) in bufs.scores.iter().zip(&bufs.memo_miss_at) {
                rows[k * plugins + pi] = ns.score;
            }
        }
        let reuse = if same_nodes { sp.plugin.normalize_reuse() } else { NormalizeReuse::Never };
        let raw_same = |k: usize| rows[k * plugins + pi] == last.raw[k * plugins + pi];
        match reuse {
            NormalizeReuse::Column if (0..n).all(raw_same) => {
                for k in 0..n {
                    last.cur_norm[k * plugins + pi] = last.norm[k * plugins + pi];
                }
                reused += 1;
            }
            NormalizeReuse::PerNode => {
                bufs.scores.clear();
                last.changed.clear();
                for k in 0..n {
                    if raw_same(k) {
                        last.cur_norm[k * plugins + pi] = last.norm[k * plugins + pi];
                    } else {
                        last.changed.push(k);
                        bufs.scores.push(NodeScore { name: bufs.names[k], score: rows[k * plugins + pi] });
                    }
                }
                if last.changed.is_empty() {
                    reused += 1;
                } else {
                    runtime::run_normalize(sp, state, pod, &mut bufs.scores, None)?;
                    for (ns, &k) in bufs.scores.iter().zip(&last.changed) {
                        last.cur_norm[k * plugins + pi] = ns.score;
                        last.dirty[k] = true;
                    }
                }
            }
            _ => {
                bufs.scores.clear();
                bufs.scores.extend(
                    bufs.names.iter().enumerate().map(|(k, &name)| NodeScore { name, score: rows[k * plugins + pi] }),
                );
                runtime::run_normalize(sp, state, pod, &mut bufs.scores, None)?;
                for (k, ns) in bufs.scores.iter().enumerate() {
                    last.cur_norm[k * plugins + pi] = ns.score;
                }
                all_dirty = true;
            }
        }
    }
    // Weighted totals: the previous member's where no plugin's normalized score moved.
    for k in 0..n {
        bufs.totals[k] = if all_dirty || last.dirty[k] {
            let row = &last.cur_norm[k * plugins..(k + 1) * plugins];
            profile
                .score
                .iter()
                .enumerate()
                .filter(|&(pi, _)| !state.skips_score(pi))
                .map(|(pi, sp)| row[pi] * sp.weight)
                .sum()
        } else {
            last.totals[k]
        };
    }
    // This member's columns become the previous ones.
    last.feasible.clone_from(&bufs.feasible);
    last.raw.clear();
    last.raw.extend_from_slice(&rows[..n * plugins]);
    std::mem::swap(&mut last.norm, &mut last.cur_norm);
    last.totals.clone_from(&bufs.totals);
    last.valid = true;
    memo.stats.columns_reused += reused;
    for (&i, &k) in bufs.memo_miss.iter().zip(&bufs.memo_miss_at) {
        memo.store_scores(i, &nodes[i], &rows[k * plugins..(k + 1) * plugins]);
    }
    Ok(())
}
