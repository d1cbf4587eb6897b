//! Helpers shared by built-in plugins (upstream `framework/plugins/helper`).

use crate::framework::{CycleState, NodeScore, StateData, Status};
use crate::snapshot::{NodeInfo, NodeList};

/// Scales scores so the highest becomes `max` (and, with `reverse`, flips them so the
/// lowest raw score gets `max`), with upstream's integer arithmetic
/// (`helper.DefaultNormalizeScore`, `plugins/helper/normalize_score.go`). All-zero
/// scores stay 0, or all become `max` when reversed.
///
/// ```
/// use schedkit::framework::NodeScore;
/// use schedkit::model::Symbol;
/// use schedkit::plugins::helper::default_normalize_score;
/// let n = Symbol::intern("n");
/// let mut s = [NodeScore { name: n, score: 1 }, NodeScore { name: n, score: 3 }];
/// default_normalize_score(100, false, &mut s);
/// assert_eq!([s[0].score, s[1].score], [33, 100]);
/// default_normalize_score(100, true, &mut s);
/// assert_eq!([s[0].score, s[1].score], [67, 0]);
/// ```
pub fn default_normalize_score(max: i64, reverse: bool, scores: &mut [NodeScore]) {
    let max_count = scores.iter().map(|s| s.score).max().unwrap_or(0).max(0);
    if max_count == 0 {
        if reverse {
            for s in scores.iter_mut() {
                s.score = max;
            }
        }
        return;
    }
    // Few distinct raw scores (NodeAffinity's weight sums, counts of taints) on many
    // nodes: each `0..=max_count` score's result is worked out once, and a node's is
    // a table read (any other score, e.g. a negative one, is computed as written).
    if max_count < NORMALIZE_TABLE as i64 && scores.len() > 2 * max_count as usize {
        let mut table = [0i64; NORMALIZE_TABLE];
        for (raw, t) in table.iter_mut().enumerate().take(max_count as usize + 1) {
            let v = max * raw as i64 / max_count;
            *t = if reverse { max - v } else { v };
        }
        for s in scores.iter_mut() {
            // Every score is at most `max_count`; a negative one reads as a huge
            // index and misses.
            s.score = if let Some(&t) = table.get(s.score as u64 as usize) {
                t
            } else {
                let v = max * s.score / max_count;
                if reverse { max - v } else { v }
            };
        }
        return;
    }
    for s in scores.iter_mut() {
        let v = max * s.score / max_count;
        s.score = if reverse { max - v } else { v };
    }
}

/// Entries of [`default_normalize_score`]'s table of results by raw score.
const NORMALIZE_TABLE: usize = 64;

/// Whether a resource name is an extended resource.
///
/// Deprecated: moved to [`crate::model::is_extended_resource_name`], a fact about
/// resource names that the DRA allocator needs too.
#[deprecated(since = "0.2.0", note = "moved to schedkit::model::is_extended_resource_name")]
pub fn is_extended_resource_name(name: &str) -> bool {
    crate::model::is_extended_resource_name(name)
}

/// Filters a chunk of nodes with a plugin's PreFilter state `T`, read once for the
/// chunk: the body of a `FilterPlugin::filter_nodes` whose Filter needs the state.
/// Without the state every node gets the Error `missing` (upstream's
/// "reading … from cycleState" error); otherwise only failing nodes are written.
pub(crate) fn filter_batch<T: StateData>(
    state: &CycleState,
    nodes: NodeList<'_>,
    statuses: &mut [Status],
    missing: &'static str,
    filter: impl Fn(&T, &NodeInfo) -> Status,
) -> u64 {
    let Some(s) = state.read::<T>() else {
        statuses.fill(Status::error(missing));
        return low_bits(statuses.len());
    };
    filter_each(nodes, statuses, |node| {
        let r = filter(s, node);
        (!r.is_success()).then_some(r)
    })
}

/// A `filter_nodes` body: `fail(node)` for each node of the chunk (at most 64),
/// writing each `Some` status into its slot; returns the failure mask. One loop over
/// the chunk's positions: the iterator chain it replaces (zip, take and enumerate
/// over the mapped `NodeList`) cost about 20 instructions per node more.
#[inline]
pub(crate) fn filter_each(
    nodes: NodeList<'_>,
    statuses: &mut [Status],
    mut fail: impl FnMut(&NodeInfo) -> Option<Status>,
) -> u64 {
    let all = nodes.snapshot().nodes();
    let idx = nodes.indices();
    let n = idx.len().min(statuses.len()).min(64);
    let (idx, statuses) = (&idx[..n], &mut statuses[..n]);
    let mut failed = 0;
    for (i, &p) in idx.iter().enumerate() {
        if let Some(s) = fail(&all[p]) {
            statuses[i] = s;
            failed |= 1 << i;
        }
    }
    failed
}

/// A `filter_nodes` body for a Filter that passes every node without `flag` among
/// the snapshot's node flags (`crate::snapshot::node_flags`): the chunk's flags
/// are read into a mask, and `fail(node)` runs only for the flagged nodes, in chunk
/// order, writing each `Some` status into its slot; returns the failure mask.
#[inline]
pub(crate) fn filter_flagged(
    nodes: NodeList<'_>,
    statuses: &mut [Status],
    flag: u8,
    mut fail: impl FnMut(&NodeInfo) -> Option<Status>,
) -> u64 {
    let snap = nodes.snapshot();
    let flags = snap.node_flags();
    let idx = nodes.indices();
    let n = idx.len().min(statuses.len()).min(64);
    let idx = &idx[..n];
    let mut flagged = 0u64;
    for (i, &p) in idx.iter().enumerate() {
        flagged |= u64::from(flags[p] & flag != 0) << i;
    }
    let all = snap.nodes();
    let mut failed = 0;
    while flagged != 0 {
        let i = flagged.trailing_zeros() as usize;
        flagged &= flagged - 1;
        if let Some(s) = fail(&all[idx[i]]) {
            statuses[i] = s;
            failed |= 1 << i;
        }
    }
    failed
}

/// The mask of the first `n` (at most 64) nodes of a `filter_nodes` chunk.
#[inline]
pub(crate) fn low_bits(n: usize) -> u64 {
    if n >= 64 { u64::MAX } else { (1u64 << n) - 1 }
}

/// Runs `f` with a plugin's PreScore state `T`, read once (or built by `fallback`
/// when PreScore didn't run): for a `score_nodes` that scores the whole batch in
/// its own loop.
pub(crate) fn with_state<T: StateData, R>(
    state: &CycleState,
    fallback: impl FnOnce() -> T,
    f: impl FnOnce(&T) -> R,
) -> R {
    if let Some(s) = state.read::<T>() { f(s) } else { f(&fallback()) }
}

/// Scores a batch of nodes with a plugin's PreScore state `T`, read once for the
/// batch (or built by `fallback` when PreScore didn't run, e.g. a direct call).
/// The body of most built-ins' `ScorePlugin::score_nodes`.
pub fn score_batch<T: StateData>(
    state: &CycleState,
    nodes: NodeList<'_>,
    scores: &mut [NodeScore],
    fallback: impl FnOnce() -> T,
    score: impl Fn(&T, &NodeInfo) -> i64,
) {
    let computed;
    let s = if let Some(s) = state.read::<T>() {
        s
    } else {
        computed = fallback();
        &computed
    };
    for (slot, node) in scores.iter_mut().zip(nodes.iter()) {
        slot.score = score(s, node);
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::model::Symbol;

    /// Upstream's loop, node by node.
    fn plain(max: i64, reverse: bool, scores: &mut [NodeScore]) {
        let max_count = scores.iter().map(|s| s.score).max().unwrap_or(0).max(0);
        for s in scores.iter_mut() {
            if max_count == 0 {
                if reverse {
                    s.score = max;
                }
                continue;
            }
            let v = max * s.score / max_count;
            s.score = if reverse { max - v } else { v };
        }
    }

    proptest! {
        /// The table path gives upstream's integers, negative scores and long
        /// columns of few values included.
        #[test]
        fn default_normalize_equals_the_plain_loop(
            raw in proptest::collection::vec(prop_oneof![4 => 0i64..12, 1 => -5i64..80, 1 => any::<i32>().prop_map(i64::from)], 0..300),
            max in prop_oneof![Just(100i64), 1i64..1000],
            reverse in any::<bool>(),
        ) {
            let n = Symbol::intern("n");
            let mut got: Vec<NodeScore> = raw.iter().map(|&score| NodeScore { name: n, score }).collect();
            let mut want = got.clone();
            default_normalize_score(max, reverse, &mut got);
            plain(max, reverse, &mut want);
            prop_assert_eq!(got, want);
        }
    }
}
