//! The Score phase of a pod-group member the group memo serves (schedkit's own): raw
//! scores of unchanged nodes come from the memo, and normalized columns and weighted
//! totals are carried over from the previous identical member where each plugin's
//! [`NormalizeReuse`] allows, so a member that changes one node re-normalizes one node.
//!
//! Why this is exact: within one snapshot view and one memo score key (members that
//! sign alike), a node's raw scores change only when its `NodeInfo` changed (a member
//! was assumed onto it). The previous member's columns are kept in its feasible order;
//! when the current member has the same feasible nodes in the same order, only the
//! nodes the memo misses can have new raw scores: a node the memo knows has the very
//! `NodeInfo` whose row the memo holds, and no Score ran since the previous member
//! read or wrote that row (a new `NodeInfo`, from an assumption, has no row yet). So
//! the previous member's columns are updated on the missed rows only: a plugin whose
//! raw column did not change and that promises [`NormalizeReuse::Column`] keeps its
//! normalized column, one that promises [`NormalizeReuse::PerNode`] re-normalizes the
//! changed rows, and every other runs NormalizeScore over the whole column as before.
//! Host selection is untouched: the totals are the same numbers in the same order, so
//! its random draws are too.
//!
//! The missed rows are the feasible positions the snapshot's change log lists since the
//! previous member scored ([`Snapshot::changed_since`]: every in-place replacement is
//! logged, so a position not listed holds the `NodeInfo` its row was computed on), found
//! through a position-to-row index kept with the columns; only when the log does not
//! reach back is every feasible node looked up in the memo.

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
    /// One plugin's changed rows (indices into the feasible nodes).
    changed: Vec<usize>,
    /// The snapshot generation the columns were computed at.
    generation: u64,
    /// By snapshot position: its row among the feasible nodes ([`NO_ROW`]: none).
    row_of: Vec<u32>,
    /// This member's weight per Score plugin, 0 for those PreScore skipped.
    weights: Vec<i64>,
}

/// A position that is not among the feasible nodes (in [`LastColumns::row_of`]).
const NO_ROW: u32 = u32::MAX;

impl LastColumns {
    /// Forgets the previous member's columns (another view or score key).
    pub(super) fn invalidate(&mut self) {
        self.valid = false;
    }

    /// Makes `feasible` (positions among `positions` nodes) the columns' rows and keeps
    /// [`LastColumns::row_of`] its inverse. Only the previous rows are unset: when the
    /// feasible lists are short against the view, refilling the whole index per member
    /// costs more than the rows it saves (a 20 KB memset per member of a 5,000-pod group).
    pub(super) fn set_feasible(&mut self, feasible: &[usize], positions: usize) {
        if self.row_of.len() == positions {
            for &i in &self.feasible {
                self.row_of[i] = NO_ROW;
            }
        } else {
            self.row_of.clear();
            self.row_of.resize(positions, NO_ROW);
        }
        for (k, &i) in feasible.iter().enumerate() {
            self.row_of[i] = u32::try_from(k).unwrap_or(NO_ROW);
        }
        self.feasible.clear();
        self.feasible.extend_from_slice(feasible);
    }

    /// The row of snapshot position `p` among the feasible nodes, if it is one.
    pub(super) fn row_of(&self, p: usize) -> Option<usize> {
        self.row_of.get(p).copied().filter(|&k| k != NO_ROW).map(|k| k as usize)
    }
}

/// [`super::Scheduler::score`] for a pod-group member whose raw scores may come from
/// the [`GroupMemo`]: only nodes not remembered are scored, by every plugin at once;
/// with the previous member's feasible nodes, its columns are updated on those rows
/// (see the module doc), otherwise every column is normalized afresh.
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
    let same_nodes = memo.columns.valid && memo.columns.feasible == bufs.feasible;
    memo.columns.valid = false;
    bufs.memo_miss.clear();
    bufs.memo_miss_at.clear();
    if same_nodes {
        if let Some(changed) = snap.changed_since(memo.columns.generation) {
            // Only the positions replaced since the previous member scored have new
            // rows (module doc); a position may be listed more than once.
            for p in changed {
                if let Some(k) = memo.columns.row_of(p)
                    && !bufs.memo_miss.contains(&p)
                {
                    bufs.memo_miss.push(p);
                    bufs.memo_miss_at.push(k);
                }
            }
            memo.stats.score_hits += (n - bufs.memo_miss.len()) as u64;
        } else {
            // Rows the memo knows are the previous member's: only the misses are read.
            for (k, &i) in bufs.feasible.iter().enumerate() {
                if !memo.knows_scores(i, &nodes[i]) {
                    bufs.memo_miss.push(i);
                    bufs.memo_miss_at.push(k);
                }
            }
        }
        incremental(memo, bufs, profile, state, pod, snap)?;
    } else {
        // Every cell read below is written first (a remembered row, or this member's
        // own Score for a missed node; skipped plugins' cells are never read), so the
        // buffer only grows and is not cleared per member.
        let mut rows = std::mem::take(&mut memo.columns.raw);
        if rows.len() < n * plugins {
            rows.resize(n * plugins, 0);
        }
        for (k, &i) in bufs.feasible.iter().enumerate() {
            if let Some(r) = memo.scores(i, &nodes[i]) {
                rows[k * plugins..(k + 1) * plugins].copy_from_slice(r);
            } else {
                bufs.memo_miss.push(i);
                bufs.memo_miss_at.push(k);
            }
        }
        memo.columns.raw = rows;
        afresh(memo, bufs, profile, state, pod, snap)?;
        memo.columns.set_feasible(&bufs.feasible, nodes.len());
    }
    let last = &mut memo.columns;
    bufs.totals.copy_from_slice(&last.totals[..n]);
    last.generation = snap.generation();
    last.valid = true;
    let raw = std::mem::take(&mut last.raw);
    for (&i, &k) in bufs.memo_miss.iter().zip(&bufs.memo_miss_at) {
        memo.store_scores(i, &nodes[i], &raw[k * plugins..(k + 1) * plugins]);
    }
    memo.columns.raw = raw;
    Ok(())
}

/// Raw scores of the missed nodes into `last.raw`, normalized columns into
/// `last.norm`, every total into `last.totals`.
fn afresh(
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
    let last = &mut memo.columns;
    if last.norm.len() < n * plugins {
        last.norm.resize(n * plugins, 0);
    }
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
                last.raw[k * plugins + pi] = ns.score;
            }
        }
        normalize_column(sp, state, pod, bufs, last, pi, plugins)?;
    }
    active_weights(profile, state, &mut last.weights);
    last.totals.clear();
    last.totals.extend((0..n).map(|k| total(&last.norm[k * plugins..(k + 1) * plugins], &last.weights)));
    Ok(())
}

/// The previous member's columns updated on the missed rows.
fn incremental(
    memo: &mut GroupMemo,
    bufs: &mut Buffers,
    profile: &Profile,
    state: &CycleState,
    pod: &PodInfo,
    snap: &Snapshot,
) -> Result<(), Status> {
    let plugins = profile.score.len();
    let last = &mut memo.columns;
    let mut all_rows = false;
    let mut reused = 0u64;
    for (pi, sp) in profile.score.iter().enumerate() {
        if state.skips_score(pi) {
            continue;
        }
        // The missed rows' new raw scores, and which of them differ from before.
        last.changed.clear();
        if !bufs.memo_miss.is_empty() {
            bufs.scores.clear();
            bufs.scores.extend(bufs.memo_miss.iter().map(|&i| NodeScore { name: snap.nodes()[i].name(), score: 0 }));
            let missing = NodeList::new(snap, &bufs.memo_miss);
            runtime::run_score_plugin(sp, state, pod, missing, &mut bufs.scores, None)?;
            for (ns, &k) in bufs.scores.iter().zip(&bufs.memo_miss_at) {
                let cell = &mut last.raw[k * plugins + pi];
                if *cell != ns.score {
                    *cell = ns.score;
                    last.changed.push(k);
                }
            }
        }
        let reuse = sp.plugin.normalize_reuse();
        match reuse {
            _ if last.changed.is_empty() && reuse != NormalizeReuse::Never => reused += 1,
            NormalizeReuse::PerNode => {
                bufs.scores.clear();
                bufs.scores.extend(
                    last.changed.iter().map(|&k| NodeScore { name: bufs.names[k], score: last.raw[k * plugins + pi] }),
                );
                runtime::run_normalize(sp, state, pod, &mut bufs.scores, None)?;
                for (ns, &k) in bufs.scores.iter().zip(&last.changed) {
                    last.norm[k * plugins + pi] = ns.score;
                }
            }
            _ => {
                normalize_column(sp, state, pod, bufs, last, pi, plugins)?;
                all_rows = true;
            }
        }
    }
    active_weights(profile, state, &mut last.weights);
    if all_rows {
        for k in 0..bufs.feasible.len() {
            last.totals[k] = total(&last.norm[k * plugins..(k + 1) * plugins], &last.weights);
        }
    } else {
        for &k in &bufs.memo_miss_at {
            last.totals[k] = total(&last.norm[k * plugins..(k + 1) * plugins], &last.weights);
        }
    }
    memo.stats.columns_reused += reused;
    Ok(())
}

/// NormalizeScore of plugin `pi` over its whole raw column (`last.raw`), into `last.norm`.
fn normalize_column(
    sp: &crate::framework::WeightedScore,
    state: &CycleState,
    pod: &PodInfo,
    bufs: &mut Buffers,
    last: &mut LastColumns,
    pi: usize,
    plugins: usize,
) -> Result<(), Status> {
    bufs.scores.clear();
    bufs.scores
        .extend(bufs.names.iter().enumerate().map(|(k, &name)| NodeScore { name, score: last.raw[k * plugins + pi] }));
    runtime::run_normalize(sp, state, pod, &mut bufs.scores, None)?;
    for (k, ns) in bufs.scores.iter().enumerate() {
        last.norm[k * plugins + pi] = ns.score;
    }
    Ok(())
}

/// Each Score plugin's weight for this member, 0 for the plugins PreScore skipped:
/// their cells are not written this cycle, and a zero weight drops whatever they hold
/// (an earlier member's normalized score, always in range).
fn active_weights(profile: &Profile, state: &CycleState, weights: &mut Vec<i64>) {
    weights.clear();
    weights.extend(profile.score.iter().enumerate().map(|(pi, sp)| if state.skips_score(pi) { 0 } else { sp.weight }));
}

/// One node's weighted total, from its normalized row and [`active_weights`]: the
/// per-node filter over skipped plugins was most of a 5,000-pod group's Score cost.
fn total(norm: &[i64], weights: &[i64]) -> i64 {
    norm.iter().zip(weights).map(|(score, weight)| score * weight).sum()
}
