//! Host selection (schedkit's own, first for pod-group members, now for every cycle):
//! the same choice and the same generator stream as [`Scheduler::select_host`] with
//! [`TieBreak::Random`], computing only the random draws that can decide the outcome.
//!
//! Upstream `selectHost` (`pkg/scheduler/schedule_one.go`) walks the totals keeping a
//! running top and draws on every tie with it (reservoir sampling). A draw made before
//! the last rise of the running top cannot matter: the rise replaces whatever it chose.
//! After the last rise (at position `m`) the top no longer changes, the ties with it
//! draw with counts 2, 3, … in order, and the winner is the *last* tie whose draw hit
//! (`m` when none did). SplitMix64 advances its state by a constant per draw, so draw
//! number `d` is a function of the starting state and `d` alone. So one pass counts the
//! draws and finds `m`; a second pass walks the final stretch from its end, computing
//! each tie's draw from its number, and stops at the first hit (on average halfway);
//! then the generator jumps past every draw the walk would have made. Identical members
//! of a group tie on most of a placement's nodes, which is where the draws went.

use super::{Scheduler, TieBreak};
use crate::rng::{GAMMA, SplitMix64, mix};

impl Scheduler {
    /// The chosen node (a snapshot position) among the cycle's feasible nodes and
    /// totals: [`Scheduler::select_host`]'s answer and generator stream, with only the
    /// deciding draws computed under [`TieBreak::Random`].
    pub(super) fn select_host_group(&mut self, snap: &crate::snapshot::Snapshot) -> usize {
        if self.config.tie_break != TieBreak::Random {
            return self.select_host(snap);
        }
        let bufs = &self.bufs;
        if bufs.totals.is_empty() {
            return bufs.feasible[0];
        }
        let k = select_random(&bufs.totals, &mut self.rng);
        bufs.feasible[k]
    }
}

/// Upstream `selectHost`'s reservoir sampling over `totals` (non-empty) with `rng`:
/// the index it picks, and `rng` left where the walk leaves it (see the module doc).
pub(super) fn select_random(totals: &[i64], rng: &mut SplitMix64) -> usize {
    // Pass 1: the top, where it was last raised, and how many draws came before that
    // and in all.
    let (mut top, mut rise, mut draws_before_rise, mut draws) = (totals[0], 0usize, 0u64, 0u64);
    for (k, &t) in totals.iter().enumerate().skip(1) {
        if t > top {
            top = t;
            rise = k;
            draws_before_rise = draws;
        } else if t == top {
            draws += 1;
        }
    }
    let start = rng.0;
    // Draw number `d` (1-based) reads the state `start + d * GAMMA`.
    let draw = |d: u64| mix(start.wrapping_add(d.wrapping_mul(GAMMA)));
    // Pass 2: the final stretch's ties from the last; tie `j` (1-based) drew with
    // count `j + 1`.
    let mut best = rise;
    let mut j = draws - draws_before_rise;
    for k in (rise + 1..totals.len()).rev() {
        if j == 0 {
            break;
        }
        if totals[k] == top {
            if draw(draws_before_rise + j) % (j + 1) == 0 {
                best = k;
                break;
            }
            j -= 1;
        }
    }
    rng.0 = start.wrapping_add(draws.wrapping_mul(GAMMA));
    best
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::select_random;
    use crate::rng::SplitMix64;

    /// Upstream `selectHost`'s walk as `Scheduler::select_host` does it: a draw on
    /// every tie with the running top.
    fn walk(totals: &[i64], rng: &mut SplitMix64) -> usize {
        let (mut best, mut top, mut count) = (0, totals[0], 1u64);
        for (k, &t) in totals.iter().enumerate().skip(1) {
            if t > top {
                best = k;
                top = t;
                count = 1;
            } else if t == top {
                count += 1;
                if rng.below(count) == 0 {
                    best = k;
                }
            }
        }
        best
    }

    #[test]
    fn hand_made_totals() {
        let cases: [&[i64]; 7] = [
            &[5],
            &[5, 5],
            &[1, 2, 3, 4],
            &[4, 3, 2, 1],
            &[5, 5, 7, 7, 7, 3, 7],
            &[0; 100],
            &[9, 9, 9, 1, 9, 10, 10, 2, 10, 10],
        ];
        for totals in cases {
            for seed in 0..64u64 {
                let (mut a, mut b) = (SplitMix64(seed), SplitMix64(seed));
                assert_eq!(select_random(totals, &mut a), walk(totals, &mut b), "{totals:?} seed {seed}");
                assert_eq!(a.0, b.0, "{totals:?} seed {seed}: the stream moved apart");
            }
        }
    }

    /// Every winner of a 4-way tie is reachable (the fast path is not biased to one end).
    #[test]
    fn every_tied_node_can_win() {
        let mut seen = [false; 4];
        for seed in 0..256u64 {
            seen[select_random(&[3, 3, 3, 3], &mut SplitMix64(seed))] = true;
        }
        assert_eq!(seen, [true; 4]);
    }

    proptest! {
        /// Random totals with many ties, and a random stream: the same pick and the
        /// generator in the same place as the full walk.
        #[test]
        fn same_pick_and_stream_as_the_walk(
            totals in proptest::collection::vec(0i64..4, 1..300),
            seed in any::<u64>(),
        ) {
            let (mut a, mut b) = (SplitMix64(seed), SplitMix64(seed));
            prop_assert_eq!(select_random(&totals, &mut a), walk(&totals, &mut b));
            prop_assert_eq!(a.0, b.0);
            prop_assert_eq!(a.next_u64(), b.next_u64());
        }
    }
}
