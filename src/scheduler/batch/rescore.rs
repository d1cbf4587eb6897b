//! Batch rescoring (schedkit's opt-in take on KEP-5598's v1.37 "Rescoring"): the
//! raw scores a batch keeps and how the node chosen last is scored again and the
//! list normalized again over them.

use super::{LastNode, OpportunisticBatch, Scored};
use crate::framework::{NodeScore, PluginSet};
use crate::model::Symbol;

/// What rescoring needs from the cycle: the raw scores of one node and each Score
/// plugin's NormalizeScore. Errors are `false`/`None`: the batch is then flushed.
pub(crate) trait Rescorer {
    /// Runs the Filter plugins on the node chosen last (as [`OpportunisticBatch::node_hint`]'s
    /// `last_node`).
    fn last_node(&mut self, node: Symbol) -> LastNode;
    /// Runs PreScore (on `node` alone) and every Score plugin on `node`, writing
    /// raw scores into `raw` (one per Score plugin) and the plugins PreScore
    /// skipped into `skipped`.
    fn score_node(&mut self, node: Symbol, raw: &mut [i64], skipped: &mut PluginSet) -> bool;
    /// NormalizeScore of Score plugin `plugin` over `scores`; its weight.
    fn normalize(&mut self, plugin: usize, scores: &mut [NodeScore]) -> Option<i64>;
}

/// The raw per-plugin scores of a batch's nodes, for rescoring.
#[derive(Debug, Default)]
pub(crate) struct RawScores {
    /// Node-major: row `r`, plugin `p` at `r * plugins + p`.
    pub(crate) values: Vec<i64>,
    /// Score plugins in the profile.
    pub(crate) plugins: usize,
    /// Plugins skipped by PreScore when the scores were taken.
    pub(crate) skipped: PluginSet,
}

impl OpportunisticBatch {
    /// Puts the last chosen node back with fresh raw scores (when `fits`), then
    /// normalizes every plugin again over the cached raw scores and recomputes the
    /// weighted totals. `false` when a plugin fails or skips differently.
    pub(super) fn rescore(&mut self, r: &mut dyn Rescorer, fits: bool) -> bool {
        let Some(s) = self.state.as_mut() else { return false };
        let Some(raw) = s.raw.as_mut() else { return false };
        let p = raw.plugins;
        if fits {
            let row = self.last.row as usize;
            let Some(cells) = raw.values.get_mut(row * p..(row + 1) * p) else { return false };
            let mut skipped = PluginSet::default();
            if !r.score_node(self.last.chosen, cells, &mut skipped) || skipped != raw.skipped {
                return false;
            }
            s.nodes.push(Scored { total: 0, pos: self.last.pos, name: self.last.chosen, row: self.last.row });
        }
        for n in &mut s.nodes {
            n.total = 0;
        }
        if p == 0 {
            // No Score plugin: every total is 1 in a full evaluation.
            for n in &mut s.nodes {
                n.total = 1;
            }
        }
        for pi in 0..p {
            if raw.skipped.contains(pi) {
                continue;
            }
            self.scratch.clear();
            self.scratch
                .extend(s.nodes.iter().map(|n| NodeScore { name: n.name, score: raw.values[n.row as usize * p + pi] }));
            let Some(w) = r.normalize(pi, &mut self.scratch) else { return false };
            for (n, ns) in s.nodes.iter_mut().zip(&self.scratch) {
                n.total += ns.score * w;
            }
        }
        s.sorted = false;
        true
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::super::tests::sig;
    use super::super::{BatchAttempt, FlushReason};
    use super::*;
    use crate::framework::PodSignature;

    /// A rescorer over fixed raw scores (one plugin, upstream's
    /// `DefaultNormalizeScore`: scaled so the highest is 100, weight 2).
    struct Fake {
        last: LastNode,
        raw: i64,
        skip: bool,
        fail_normalize: bool,
    }
    impl Rescorer for Fake {
        fn last_node(&mut self, _: Symbol) -> LastNode {
            self.last
        }
        fn score_node(&mut self, _: Symbol, raw: &mut [i64], skipped: &mut PluginSet) -> bool {
            raw[0] = self.raw;
            if self.skip {
                skipped.insert(0);
            }
            true
        }
        fn normalize(&mut self, _: usize, scores: &mut [NodeScore]) -> Option<i64> {
            if self.fail_normalize {
                return None;
            }
            let max = scores.iter().map(|s| s.score).max().unwrap_or(0);
            for s in scores.iter_mut() {
                s.score = if max == 0 { 0 } else { s.score * 100 / max };
            }
            Some(2)
        }
    }

    fn fake(last: LastNode, raw: i64) -> Fake {
        Fake { last, raw, skip: false, fail_normalize: false }
    }

    /// A rescoring batch after a full evaluation of n0..n3 (raw 10, 5, 2, 1) that chose n0.
    fn rescoring_batch(s: &PodSignature) -> OpportunisticBatch {
        let mut b = OpportunisticBatch::new(false, false).with_rescoring(true);
        let mut raw = b.take_raw_buffer();
        raw.plugins = 1;
        raw.values.extend([10, 5, 2, 1]);
        b.put_raw_buffer(raw);
        let names = ["n0", "n1", "n2", "n3"];
        let totals = [200, 100, 40, 20];
        let mut others =
            (1..4).map(|k| Scored { total: totals[k], pos: k as u32, name: Symbol::intern(names[k]), row: k as u32 });
        b.store_rescoring(Some(s), None, Symbol::intern("n0"), Some(&mut others), 1, Duration::ZERO, (0, 0), true);
        b
    }

    /// The last node still fits: it is scored again, the list normalized again, and
    /// the best is popped, whether that is the last node itself or another.
    #[test]
    fn rescoring_puts_the_last_node_back() {
        let s = sig("x");
        let n = |x: &str| Symbol::intern(x);
        // n0 now scores 7 raw: still the best (7 > 5), so it is the hint again.
        let mut b = rescoring_batch(&s);
        let h = b.node_hint_rescoring(Some(&s), false, 2, Duration::ZERO, &mut fake(LastNode::Fits, 7));
        assert_eq!(h, Some(n("n0")));
        assert_eq!(b.stats.rescores, 1);
        assert_eq!(
            b.store_rescoring(Some(&s), h, n("n0"), None, 2, Duration::ZERO, (9, 9), false),
            BatchAttempt::HintUsed
        );
        // n0 now scores 3 raw: n1 (5) leads; normalized over {n1, n2, n3, n0}: 100, 40, 20, 60.
        let h = b.node_hint_rescoring(Some(&s), false, 3, Duration::ZERO, &mut fake(LastNode::Fits, 3));
        assert_eq!(h, Some(n("n1")));
        let totals: Vec<(&str, i64)> =
            b.state.as_ref().unwrap().nodes.iter().rev().map(|x| (x.name.as_str(), x.total)).collect();
        assert_eq!(totals, [("n0", 120), ("n2", 80), ("n3", 40)]);
        b.store_rescoring(Some(&s), h, n("n1"), None, 3, Duration::ZERO, (9, 9), false);
        // n1 is now full: dropped, the rest normalized again over {n0, n2, n3} (max 3).
        let h = b.node_hint_rescoring(Some(&s), false, 4, Duration::ZERO, &mut fake(LastNode::Rejected, 0));
        assert_eq!(h, Some(n("n0")));
        // n2: 2 * 100 / 3 = 66, n3: 33, each weighted 2.
        let totals: Vec<(&str, i64)> =
            b.state.as_ref().unwrap().nodes.iter().rev().map(|x| (x.name.as_str(), x.total)).collect();
        assert_eq!(totals, [("n2", 132), ("n3", 66)]);
        assert_eq!(b.stats.rescores, 2);
        assert_eq!(b.stats.flushes.iter().sum::<u64>(), 0);
        assert_eq!(b.stats.batched_pods, 2);
    }

    /// A rescoring that cannot be trusted (PreScore skips differently, NormalizeScore
    /// fails, a Filter plugin errs) flushes as `node_not_full`; a missing node as
    /// `node_missing`; without rescoring a node that fits flushes as upstream.
    #[test]
    fn rescoring_failures_flush() {
        let s = sig("x");
        let cases = [
            (Fake { skip: true, ..fake(LastNode::Fits, 1) }, FlushReason::NodeNotFull),
            (Fake { fail_normalize: true, ..fake(LastNode::Fits, 1) }, FlushReason::NodeNotFull),
            (fake(LastNode::Errored, 1), FlushReason::NodeNotFull),
            (fake(LastNode::Missing, 1), FlushReason::NodeMissing),
        ];
        for (mut f, reason) in cases {
            let mut b = rescoring_batch(&s);
            assert_eq!(b.node_hint_rescoring(Some(&s), false, 2, Duration::ZERO, &mut f), None);
            assert_eq!(b.stats.flushes(reason), 1, "{}", reason.as_str());
            assert_eq!(b.stats.rescores, 0);
        }
        let mut b = rescoring_batch(&s);
        b.rescoring = false;
        assert_eq!(b.node_hint_rescoring(Some(&s), false, 2, Duration::ZERO, &mut fake(LastNode::Fits, 1)), None);
        assert_eq!(b.stats.flushes(FlushReason::NodeNotFull), 1);
    }
}
