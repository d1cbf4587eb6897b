//! Best-subset search: which `k` of the free GPUs to give a request.
//!
//! # Objective
//!
//! A set `S` is scored by `(min, sum)` over its pairs' weights
//! ([`PairLink::weight`](super::PairLink::weight)), compared lexicographically:
//! first the smallest pairwise bottleneck bandwidth (the slowest link a
//! collective must cross), then the sum of pairwise bandwidths. Inside each,
//! between equal bandwidths, the closer host path wins (PIX > PXB > PHB > NODE >
//! SYS), because the weight carries the host closeness in its low bits.
//!
//! Ties on the objective are broken by, in order:
//! 1. with [`SearchOptions::fragmentation_aware`]: the set whose GPUs are least
//!    connected to the rest of the free pool, i.e. the one that leaves the
//!    remaining free GPUs with the largest total pairwise weight (so the next
//!    large request still finds a well-connected group);
//! 2. the lexicographically smallest list of GPU indices (determinism).
//!
//! # Exactness
//!
//! Up to [`SearchOptions::exact_up_to`] eligible GPUs (16 by default) the search
//! is an exhaustive depth-first branch and bound and always returns an optimal
//! set.
//!
//! Larger domains are tried first with an exact decomposition: in a
//! multi-host NVLink domain (a GB200 NVL72 rack) where every candidate pair has
//! the same bandwidth and GPUs on different hosts share no host path, the
//! objective splits by host, and a knapsack over hosts of each host's best
//! `c`-subset is exact (hosts of up to 8 free GPUs).
//!
//! Otherwise the search builds a greedy incumbent from every seed, proves an
//! upper bound on the objective (a k-core test on each weight threshold for the
//! minimum; half the sum of the `k` best per-GPU "top k-1 weights" rows for the
//! sum), and runs the branch and bound within [`SearchOptions::node_budget`].
//! [`Placement::exact`] says whether the result is proven optimal;
//! [`Placement::bound`] is the proven upper bound either way. In that path the
//! fragmentation tie-break only ranks the sets actually visited.
//!
//! The search allocates nothing on the heap (checked with a counting allocator
//! in `tests/topology_allocations.rs`): masks are `u128`, scratch arrays live on
//! the stack (a few kilobytes) and the matrix is precomputed. Only a NIC
//! assignment of more than 8 GPUs spills its `SmallVec`.
mod bnb;
mod hosts;
mod nic;
mod types;

use smallvec::SmallVec;

use self::bnb::{Best, Ctx};
use self::nic::nic_matching;
use super::error::TopologyError;
use super::matrix::{GpuMatrix, MAX_GPUS};
pub use types::{GpuSet, Objective, Placement, SearchOptions};

/// Chooses `k` of the `free` GPUs of `m` maximizing the objective (see the module docs).
///
/// ```
/// use schedkit::topology::{machines, best_subset, GpuSet, SearchOptions};
/// let m = machines::dgx1_v100().matrix().unwrap();
/// let p = best_subset(&m, m.all(), 4, &SearchOptions::default()).unwrap();
/// assert!(p.exact);
/// assert_eq!(p.objective.min_bandwidth_mbps(), Some(25_000)); // every pair NVLinked
/// ```
pub fn best_subset(m: &GpuMatrix, free: u128, k: usize, opts: &SearchOptions) -> Result<Placement, TopologyError> {
    if k == 0 {
        return Err(TopologyError::ZeroRequest);
    }
    let extra = free & !m.all();
    if extra != 0 {
        return Err(TopologyError::FreeMaskOutOfRange { index: extra.trailing_zeros(), count: m.len() });
    }
    // go-gpuallocator's refusals, in its order: too few free GPUs, then more
    // required than requested, then a required GPU that is not available.
    let fixed = opts.must_include.0;
    let free_count = free.count_ones() as usize;
    if k > free_count {
        return Err(TopologyError::NotEnoughFree { requested: k, free: free_count });
    }
    if fixed.count_ones() as usize > k {
        return Err(TopologyError::MustIncludeExceedsRequest { required: fixed.count_ones() as usize, requested: k });
    }
    let missing = fixed & !free;
    if missing != 0 {
        return Err(TopologyError::MustIncludeNotFree { index: missing.trailing_zeros() });
    }
    let mut eligible = free;
    if opts.nic_aligned {
        for g in GpuSet(free).iter() {
            if m.local_nics(g) & opts.free_nics == 0 {
                eligible &= !(1 << g);
            }
        }
        if fixed & !eligible != 0 {
            return Err(TopologyError::NoNicAlignedSet { requested: k });
        }
    }
    let nc = eligible.count_ones() as usize;
    if k > nc {
        return Err(if opts.nic_aligned && k <= free.count_ones() as usize {
            TopologyError::NoNicAlignedSet { requested: k }
        } else {
            TopologyError::NotEnoughFree { requested: k, free: nc }
        });
    }
    let outcome = if opts.numa_aligned {
        // One search per (host, NUMA node) group that can hold the request.
        let mut groups: SmallVec<[(u32, u32, u128); 16]> = SmallVec::new();
        for g in GpuSet(eligible).iter() {
            let facts = &m.gpus()[g].gpu;
            let key = (facts.host, facts.numa_node);
            match groups.iter_mut().find(|e| (e.0, e.1) == key) {
                Some(e) => e.2 |= 1 << g,
                None => groups.push((key.0, key.1, 1 << g)),
            }
        }
        let mut merged: Option<Outcome> = None;
        for &(_, _, mask) in &groups {
            if (mask.count_ones() as usize) < k || fixed & !mask != 0 {
                continue;
            }
            let Some(o) = run(m, mask, free, k, opts) else {
                continue;
            };
            merged = Some(match merged {
                None => o,
                Some(cur) => {
                    let take = cur.best.beaten_by(o.best.obj, o.best.frag, o.best.set, opts.fragmentation_aware);
                    Outcome {
                        best: if take { o.best } else { cur.best },
                        exact: cur.exact && o.exact,
                        bound: cur.bound.max(o.bound),
                        nodes: cur.nodes + o.nodes,
                    }
                }
            });
        }
        merged.ok_or(TopologyError::NoNumaAlignedSet { requested: k })?
    } else {
        run(m, eligible, free, k, opts).ok_or(TopologyError::NoNicAlignedSet { requested: k })?
    };
    let best = outcome.best;
    let nics =
        if opts.nic_aligned { nic_matching(m, best.set, opts.free_nics).unwrap_or_default() } else { SmallVec::new() };
    Ok(Placement {
        gpus: GpuSet(best.set),
        objective: best.obj,
        bound: if outcome.exact { best.obj } else { outcome.bound },
        exact: outcome.exact,
        nics,
        nodes_visited: outcome.nodes,
    })
}

/// What one search over a candidate set found.
struct Outcome {
    best: Best,
    exact: bool,
    bound: Objective,
    nodes: u64,
}

/// Searches `k` of the `eligible` GPUs (fragmentation measured against `free`);
/// `None` when no eligible set passes the NIC check.
fn run(m: &GpuMatrix, eligible: u128, free: u128, k: usize, opts: &SearchOptions) -> Option<Outcome> {
    let mut ctx = Ctx {
        m,
        opts,
        k,
        cand: [0; MAX_GPUS],
        nc: eligible.count_ones() as usize,
        frag: [0; MAX_GPUS],
        wmax: 0,
        chosen: [0; MAX_GPUS],
        best: Best::NONE,
        nodes: 0,
        budget: u64::MAX,
        aborted: false,
    };
    ctx.prepare(eligible, free);
    let fixed = opts.must_include.0 & eligible;
    if fixed == 0 {
        let start = Objective { min_weight: u64::MAX, sum_weight: 0 };
        let (exact, bound) = if ctx.nc <= opts.exact_up_to {
            ctx.dfs(0, 0, 0, start, 0);
            (true, None)
        } else if ctx.by_hosts() {
            (true, None)
        } else {
            ctx.greedy(0);
            let bound = ctx.root_bound();
            if ctx.best.found && ctx.best.obj == bound {
                (true, Some(bound))
            } else {
                ctx.budget = opts.node_budget;
                ctx.dfs(0, 0, 0, start, 0);
                (!ctx.aborted, Some(bound))
            }
        };
        return outcome(&ctx, exact, bound);
    }
    // With GPUs that must be included: the bound over every k-set of the
    // eligible GPUs also bounds the sets holding them; the search starts from
    // them already chosen and picks the rest among the other candidates.
    let bound = (ctx.nc > opts.exact_up_to + fixed.count_ones() as usize).then(|| ctx.root_bound());
    let (depth, start, frag) = ctx.fix(fixed);
    let exact = if bound.is_none() {
        ctx.dfs(0, depth, fixed, start, frag);
        true
    } else {
        ctx.greedy(fixed);
        ctx.budget = opts.node_budget;
        ctx.dfs(0, depth, fixed, start, frag);
        !ctx.aborted
    };
    outcome(&ctx, exact, bound)
}

fn outcome(ctx: &Ctx<'_>, exact: bool, bound: Option<Objective>) -> Option<Outcome> {
    ctx.best.found.then(|| Outcome {
        best: ctx.best,
        exact,
        bound: if exact { ctx.best.obj } else { bound.unwrap_or(ctx.best.obj) },
        nodes: ctx.nodes,
    })
}

/// The objective of an arbitrary set (for tests, brute force and callers that
/// want to compare their own choice). `None` for an empty set or out-of-range GPUs.
pub fn objective_of(m: &GpuMatrix, set: GpuSet) -> Option<Objective> {
    if set.is_empty() || set.0 & !m.all() != 0 {
        return None;
    }
    let mut obj = Objective { min_weight: u64::MAX, sum_weight: 0 };
    for a in set.iter() {
        for b in set.iter().filter(|&b| b > a) {
            let w = m.weight(a, b);
            obj.min_weight = obj.min_weight.min(w);
            obj.sum_weight += w;
        }
    }
    Some(obj)
}

#[cfg(test)]
mod tests {
    use super::GpuSet;
    use super::bnb::lex_smaller;

    #[test]
    fn gpu_set_basics() {
        let s = GpuSet::from_indices([3, 0, 127, 200]);
        assert_eq!(s.iter().collect::<Vec<_>>(), [0, 3, 127]);
        assert_eq!(s.len(), 3);
        assert!(s.contains(127) && !s.contains(1) && !s.contains(500));
        assert!(GpuSet::EMPTY.is_empty());
    }

    #[test]
    fn lexicographic_order_of_index_lists() {
        let set = |v: &[usize]| GpuSet::from_indices(v.iter().copied()).0;
        assert!(lex_smaller(set(&[0, 5]), set(&[1, 2])));
        assert!(lex_smaller(set(&[0, 1, 7]), set(&[0, 2, 3])));
        assert!(!lex_smaller(set(&[1, 2]), set(&[0, 5])));
        assert!(!lex_smaller(set(&[1, 2]), set(&[1, 2])));
    }
}
