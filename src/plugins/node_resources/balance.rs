//! The balanced-allocation score over the scored resources' requested fractions
//! (upstream `noderesources/balanced_allocation.go`, `balancedResourceScorer`), for
//! one node and for a batch.

use super::scoring::{MAX_SCORED_RESOURCES, Resources};
use crate::dra::ExtendedDeviceCounts;
use crate::framework::{MAX_NODE_SCORE, NodeScore};
use crate::snapshot::{NodeInfo, NodeList};

/// Requested fractions (capped at 1) of the resources a node has, with and without
/// the pod, on the stack.
struct Fractions {
    n: usize,
    after: [f64; MAX_SCORED_RESOURCES],
    before: [f64; MAX_SCORED_RESOURCES],
    total_after: f64,
    total_before: f64,
}

impl Fractions {
    #[expect(clippy::inline_always, reason = "measured: the scorers' per-node closures must inline into their loops")]
    #[inline(always)]
    fn of(res: &Resources, pod_requests: &[i64], node: &NodeInfo, dra: Option<&ExtendedDeviceCounts>) -> Fractions {
        let mut fr = Fractions {
            n: 0,
            after: [0.0; MAX_SCORED_RESOURCES],
            before: [0.0; MAX_SCORED_RESOURCES],
            total_after: 0.0,
            total_before: 0.0,
        };
        res.for_each_present(pod_requests, node, true, dra, |a, r, p, _| {
            if fr.n == MAX_SCORED_RESOURCES {
                return;
            }
            let af = a as f64;
            let fa = (r as f64 / af).min(1.0);
            let fb = ((r - p) as f64 / af).min(1.0);
            fr.after[fr.n] = fa;
            fr.before[fr.n] = fb;
            fr.total_after += fa;
            fr.total_before += fb;
            fr.n += 1;
        });
        fr
    }
}

/// `int64((1 - std) * 100)` over the requested fractions with the pod placed
/// (capped at 1), as upstream `balancedResourceScorer` up to v1.35.
#[inline]
pub(crate) fn balanced_score(
    res: &Resources,
    pod_requests: &[i64],
    node: &NodeInfo,
    dra: Option<&ExtendedDeviceCounts>,
) -> i64 {
    if let Some((_, after)) = cpu_memory_balance(res, pod_requests, node) {
        return after;
    }
    let fr = Fractions::of(res, pod_requests, node, dra);
    std_score(&fr.after[..fr.n], fr.total_after)
}

/// Balanced scores `(without the pod, with it)` in one pass over the node.
#[inline]
pub(crate) fn balanced_before_after(
    res: &Resources,
    pod_requests: &[i64],
    node: &NodeInfo,
    dra: Option<&ExtendedDeviceCounts>,
) -> (i64, i64) {
    if let Some(scores) = cpu_memory_balance(res, pod_requests, node) {
        return scores;
    }
    let fr = Fractions::of(res, pod_requests, node, dra);
    (std_score(&fr.before[..fr.n], fr.total_before), std_score(&fr.after[..fr.n], fr.total_after))
}

/// The default `[cpu, memory]` balance `(without the pod, with it)` in closed form:
/// the standard deviation of two fractions is half their difference, and of fewer
/// than two it is 0 (score 100). Same float operations as [`std_score`].
#[inline]
fn cpu_memory_balance(res: &Resources, pod_requests: &[i64], node: &NodeInfo) -> Option<(i64, i64)> {
    let [pc, pm, ..] = *pod_requests else { return None };
    if !res.cpu_memory {
        return None;
    }
    Some(cpu_memory_balance_at(pc, pm, res.pod_level, node))
}

/// [`cpu_memory_balance`] with the pod's cpu and memory requests given.
#[expect(clippy::inline_always, reason = "the per-node function must inline into the batch loop")]
#[inline(always)]
fn cpu_memory_balance_at(pc: i64, pm: i64, pod_level: bool, node: &NodeInfo) -> (i64, i64) {
    let (alloc, req) = (node.allocatable(), node.requested_for(pod_level));
    cpu_memory_balance_of(pc, pm, [alloc.milli_cpu, alloc.memory], [req.milli_cpu, req.memory])
}

/// [`cpu_memory_balance_at`] from the node's allocatable and requested `[cpu,
/// memory]` (its `NodeInfo`'s or its resource-column row's).
#[expect(clippy::inline_always, reason = "the per-node function must inline into the batch loop")]
#[inline(always)]
fn cpu_memory_balance_of(pc: i64, pm: i64, [ac, am]: [i64; 2], [req_c, req_m]: [i64; 2]) -> (i64, i64) {
    if ac == 0 || am == 0 {
        return (MAX_NODE_SCORE, MAX_NODE_SCORE);
    }
    let (rc, rm) = (req_c + pc, req_m + pm);
    (two_score(frac(rc - pc, ac), frac(rm - pm, am)), two_score(frac(rc, ac), frac(rm, am)))
}

/// A requested fraction, capped at 1: `(r / a).min(1.0)` for every value, NaN
/// included (`f64::min` returns 1 for NaN, as the compare does), written as a
/// compare so it compiles to one `minsd` instead of `f64::min`'s NaN handling.
#[expect(clippy::inline_always, reason = "the per-node function must inline into the batch loop")]
#[inline(always)]
fn frac(r: i64, a: i64) -> f64 {
    let x = r as f64 / a as f64;
    if x < 1.0 { x } else { 1.0 }
}

/// [`std_score`] of two fractions: their standard deviation is half their difference.
#[expect(clippy::inline_always, reason = "the per-node function must inline into the batch loop")]
#[inline(always)]
fn two_score(a: f64, b: f64) -> i64 {
    ((1.0 - ((a - b) / 2.0).abs()) * MAX_NODE_SCORE as f64) as i64
}

/// The `before` half of [`cpu_memory_balance_of`]: the node's default `[cpu, memory]`
/// balance with its pods as they are, from its allocatable and requested totals. A
/// function of the node alone (`(requested + pod) - pod` is `requested`), so the
/// snapshot's resource columns keep it per node.
#[inline]
pub(crate) fn cpu_memory_balance_alone([ac, am]: [i64; 2], [req_c, req_m]: [i64; 2]) -> i64 {
    if ac == 0 || am == 0 {
        return MAX_NODE_SCORE;
    }
    two_score(frac(req_c, ac), frac(req_m, am))
}

/// The `after` half of [`cpu_memory_balance_of`]: the balance with the pod placed.
#[expect(clippy::inline_always, reason = "the per-node function must inline into the batch loop")]
#[inline(always)]
fn cpu_memory_balance_with(pc: i64, pm: i64, [ac, am]: [i64; 2], [req_c, req_m]: [i64; 2]) -> i64 {
    if ac == 0 || am == 0 {
        return MAX_NODE_SCORE;
    }
    two_score(frac(req_c + pc, ac), frac(req_m + pm, am))
}

/// Balanced scores over a batch of nodes: `combine(before, after)` per node into
/// `scores` (same order), where `before`/`after` are [`balanced_before_after`]'s. The
/// default `[cpu, memory]` runs the closed form in one loop with the pod's requests
/// read once (from the snapshot's resource columns with the `PodLevelResources`
/// gate on); other resource lists go node by node.
#[expect(clippy::inline_always, reason = "the combining closure must inline into the loop")]
#[inline(always)]
pub(crate) fn balanced_nodes(
    res: &Resources,
    pod_requests: &[i64],
    nodes: NodeList<'_>,
    scores: &mut [NodeScore],
    dra: Option<&ExtendedDeviceCounts>,
    combine: impl Fn(i64, i64) -> i64,
) {
    if res.cpu_memory
        && let [pc, pm, ..] = *pod_requests
    {
        if res.pod_level {
            // The `before` score is the node's own, kept in the columns per node.
            let snap = nodes.snapshot();
            let (rows, alone) = (snap.resource_rows(), snap.resource_balance());
            for (slot, &p) in scores.iter_mut().zip(nodes.indices()) {
                let r = &rows[p];
                let after = cpu_memory_balance_with(
                    pc,
                    pm,
                    [r.alloc_cpu, r.alloc_memory],
                    [r.requested_cpu, r.requested_memory],
                );
                slot.score = combine(alone[p], after);
            }
            return;
        }
        for (slot, node) in scores.iter_mut().zip(nodes.iter()) {
            let (before, after) = cpu_memory_balance_at(pc, pm, res.pod_level, node);
            slot.score = combine(before, after);
        }
        return;
    }
    for (slot, node) in scores.iter_mut().zip(nodes.iter()) {
        let (before, after) = balanced_before_after(res, pod_requests, node, dra);
        slot.score = combine(before, after);
    }
}

/// `int64((1 - std) * 100)` of the given fractions.
#[inline]
fn std_score(fractions: &[f64], total: f64) -> i64 {
    let std = match fractions {
        [a, b] => ((a - b) / 2.0).abs(),
        f if f.len() > 2 => {
            let n = f.len() as f64;
            let mean = total / n;
            (f.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n).sqrt()
        }
        _ => 0.0,
    };
    ((1.0 - std) * MAX_NODE_SCORE as f64) as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The compare in [`frac`] is `f64::min(1.0)` on every kind of value.
    #[test]
    fn frac_caps_like_f64_min() {
        let cap = |x: f64| if x < 1.0 { x } else { 1.0 };
        for x in
            [f64::NAN, -f64::NAN, 0.0, -0.0, 0.5, 1.0, 1.5, f64::INFINITY, f64::NEG_INFINITY, -3.0, f64::MIN_POSITIVE]
        {
            assert_eq!(cap(x).to_bits(), x.min(1.0).to_bits(), "{x}");
        }
        for (r, a) in [(0, 0), (1, 0), (-1, 0), (3, 4), (5, 4), (-5, 4), (i64::MAX, 1), (7, -2)] {
            assert_eq!(frac(r, a).to_bits(), (r as f64 / a as f64).min(1.0).to_bits(), "{r}/{a}");
        }
    }

    #[test]
    fn balanced() {
        let fr = |f: &[f64]| std_score(f, f.iter().sum());
        assert_eq!(fr(&[0.75, 0.5]), 87); // |0.75-0.5|/2 = .125
        assert_eq!(fr(&[]), 100);
        assert_eq!(fr(&[1.0, 0.0]), 50);
    }
}
