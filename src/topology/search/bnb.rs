//! The branch and bound: the search state, the greedy incumbent, the proven upper
//! bound on the objective, and the depth-first search within the node budget.

use core::cmp::Ordering;

use super::nic::nic_matching;
use super::types::{GpuSet, Objective, SearchOptions};
use crate::topology::matrix::{GpuMatrix, MAX_GPUS};

#[derive(Clone, Copy)]
/// The incumbent: the best set found so far.
pub(super) struct Best {
    pub(super) set: u128,
    pub(super) obj: Objective,
    pub(super) frag: u64,
    pub(super) found: bool,
}

impl Best {
    pub(super) const NONE: Self =
        Self { set: 0, obj: Objective { min_weight: 0, sum_weight: 0 }, frag: u64::MAX, found: false };

    /// Whether `(obj, frag, set)` beats the incumbent.
    pub(super) fn beaten_by(&self, obj: Objective, frag: u64, set: u128, use_frag: bool) -> bool {
        if !self.found {
            return true;
        }
        match obj.cmp(&self.obj) {
            Ordering::Greater => true,
            Ordering::Less => false,
            Ordering::Equal => {
                let f = if use_frag { frag.cmp(&self.frag).reverse() } else { Ordering::Equal };
                match f {
                    Ordering::Greater => true,
                    Ordering::Less => false,
                    Ordering::Equal => lex_smaller(set, self.set),
                }
            }
        }
    }
}

/// Whether the sorted index list of `a` is lexicographically smaller than `b`'s.
pub(super) fn lex_smaller(a: u128, b: u128) -> bool {
    let diff = a ^ b;
    if diff == 0 {
        return false;
    }
    // The lowest index where they differ belongs to the smaller list.
    let low = diff.trailing_zeros();
    a & (1 << low) != 0
}

/// One search's state: the candidates, the incumbent, and the node budget.
pub(super) struct Ctx<'a> {
    pub(super) m: &'a GpuMatrix,
    pub(super) opts: &'a SearchOptions,
    pub(super) k: usize,
    pub(super) cand: [u8; MAX_GPUS],
    pub(super) nc: usize,
    pub(super) frag: [u64; MAX_GPUS],
    pub(super) wmax: u64,
    pub(super) chosen: [u8; MAX_GPUS],
    pub(super) best: Best,
    pub(super) nodes: u64,
    pub(super) budget: u64,
    pub(super) aborted: bool,
}

impl Ctx<'_> {
    /// Fills the candidate list, the largest candidate weight and, if asked, each
    /// GPU's total weight to the free pool (its fragmentation cost).
    pub(super) fn prepare(&mut self, eligible: u128, free: u128) {
        for (i, g) in GpuSet(eligible).iter().enumerate() {
            self.cand[i] = g as u8;
        }
        for i in 0..self.nc {
            let a = self.cand[i] as usize;
            let row = self.m.weight_row(a);
            for j in 0..self.nc {
                if i != j {
                    self.wmax = self.wmax.max(row[self.cand[j] as usize]);
                }
            }
            if self.opts.fragmentation_aware {
                self.frag[a] = GpuSet(free).iter().filter(|&b| b != a).map(|b| row[b]).sum();
            }
        }
    }

    /// Takes the GPUs of `fixed` out of the candidates and marks them chosen:
    /// returns the depth, objective and fragmentation cost the search starts from.
    pub(super) fn fix(&mut self, fixed: u128) -> (usize, Objective, u64) {
        let mut kept = 0;
        for i in 0..self.nc {
            let g = self.cand[i];
            if fixed & (1 << g) == 0 {
                self.cand[kept] = g;
                kept += 1;
            }
        }
        self.nc = kept;
        let mut obj = Objective { min_weight: u64::MAX, sum_weight: 0 };
        let mut frag = 0;
        for (depth, g) in GpuSet(fixed).iter().enumerate() {
            let row = self.m.weight_row(g);
            for &c in &self.chosen[..depth] {
                let w = row[c as usize];
                obj.min_weight = obj.min_weight.min(w);
                obj.sum_weight += w;
            }
            self.chosen[depth] = g as u8;
            frag += self.frag[g];
        }
        (fixed.count_ones() as usize, obj, frag)
    }

    pub(super) fn nic_ok(&self, set: u128) -> bool {
        !self.opts.nic_aligned || nic_matching(self.m, set, self.opts.free_nics).is_some()
    }

    pub(super) fn dfs(&mut self, start: usize, depth: usize, set: u128, cur: Objective, frag: u64) {
        if depth == self.k {
            if self.best.beaten_by(cur, frag, set, self.opts.fragmentation_aware) && self.nic_ok(set) {
                self.best = Best { set, obj: cur, frag, found: true };
            }
            return;
        }
        self.nodes += 1;
        if self.nodes > self.budget {
            self.aborted = true;
            return;
        }
        let need = self.k - depth;
        if self.nc < need {
            return;
        }
        let after = (need - 1) as u64;
        // Pairs still to come after adding one more GPU: it meets the `depth`
        // chosen ones now; the `after` later ones meet `depth + 1` and each other.
        let later_pairs = after * (depth as u64 + 1) + after * after.saturating_sub(1) / 2;
        let later_cap = later_pairs.saturating_mul(self.wmax);
        for idx in start..=(self.nc - need) {
            let g = self.cand[idx] as usize;
            let row = self.m.weight_row(g);
            let mut mn = cur.min_weight;
            let mut sm = cur.sum_weight;
            for &c in &self.chosen[..depth] {
                let w = row[c as usize];
                mn = mn.min(w);
                sm += w;
            }
            if self.best.found {
                let ub_min = if after > 0 { mn.min(self.wmax) } else { mn };
                let ub = Objective { min_weight: ub_min, sum_weight: sm.saturating_add(later_cap) };
                match ub.cmp(&self.best.obj) {
                    Ordering::Less => continue,
                    Ordering::Equal if !self.opts.fragmentation_aware => {
                        // Only a lexicographically smaller set could still win a
                        // full tie, and DFS order already visited those.
                        continue;
                    }
                    _ => {}
                }
            }
            self.chosen[depth] = g as u8;
            self.dfs(
                idx + 1,
                depth + 1,
                set | (1 << g),
                Objective { min_weight: mn, sum_weight: sm },
                frag + self.frag[g],
            );
            if self.aborted {
                return;
            }
        }
    }

    /// Greedy incumbent: from every seed (or, with `fixed` GPUs already chosen by
    /// [`Ctx::fix`], from them alone), repeatedly add the GPU that keeps the
    /// objective highest.
    pub(super) fn greedy(&mut self, fixed: u128) {
        let nc = self.nc;
        let k = self.k;
        let seeds = if fixed == 0 { nc } else { 1 };
        for s in 0..seeds {
            let mut gmin = [u64::MAX; MAX_GPUS];
            let mut gsum = [0u64; MAX_GPUS];
            let mut taken = [false; MAX_GPUS];
            let mut cur = Objective { min_weight: u64::MAX, sum_weight: 0 };
            let (mut set, mut frag) = if fixed == 0 {
                let seed = self.cand[s] as usize;
                taken[s] = true;
                (1u128 << seed, self.frag[seed])
            } else {
                let f = GpuSet(fixed);
                (fixed, f.iter().map(|g| self.frag[g]).sum())
            };
            // Fold every chosen GPU's row into the candidates' running min/sum.
            let fold = |g: usize, gmin: &mut [u64; MAX_GPUS], gsum: &mut [u64; MAX_GPUS], taken: &[bool; MAX_GPUS]| {
                let row = self.m.weight_row(g);
                for j in 0..nc {
                    if !taken[j] {
                        let w = row[self.cand[j] as usize];
                        gmin[j] = gmin[j].min(w);
                        gsum[j] += w;
                    }
                }
            };
            let mut pending: u128 = set;
            if fixed != 0 {
                let f = GpuSet(fixed);
                for a in f.iter() {
                    for b in f.iter().filter(|&b| b > a) {
                        let w = self.m.weight(a, b);
                        cur.min_weight = cur.min_weight.min(w);
                        cur.sum_weight += w;
                    }
                }
            }
            for _ in (set.count_ones() as usize)..k {
                for g in GpuSet(pending).iter() {
                    fold(g, &mut gmin, &mut gsum, &taken);
                }
                let mut pick: Option<(usize, Objective, u64)> = None;
                for j in 0..nc {
                    if taken[j] {
                        continue;
                    }
                    let obj =
                        Objective { min_weight: cur.min_weight.min(gmin[j]), sum_weight: cur.sum_weight + gsum[j] };
                    let f = self.frag[self.cand[j] as usize];
                    let better = match pick {
                        None => true,
                        Some((_, po, pf)) => obj > po || (obj == po && self.opts.fragmentation_aware && f < pf),
                    };
                    if better {
                        pick = Some((j, obj, f));
                    }
                }
                let Some((j, obj, f)) = pick else { break };
                taken[j] = true;
                let last = self.cand[j] as usize;
                pending = 1 << last;
                set |= pending;
                cur = obj;
                frag += f;
            }
            if set.count_ones() as usize == k
                && self.best.beaten_by(cur, frag, set, self.opts.fragmentation_aware)
                && self.nic_ok(set)
            {
                self.best = Best { set, obj: cur, frag, found: true };
            }
        }
    }

    /// A proven upper bound on the objective of any `k` candidates.
    pub(super) fn root_bound(&self) -> Objective {
        let k = self.k;
        let nc = self.nc;
        // Minimum: the largest threshold t for which the pairs of weight >= t
        // have a (k-1)-core of at least k GPUs.
        let mut t = self.wmax;
        let mut ub_min = 0;
        for _ in 0..64 {
            if self.core_survives(t) {
                ub_min = t;
                break;
            }
            // Next lower distinct weight.
            let mut next = None::<u64>;
            for a in 0..nc {
                let row = self.m.weight_row(self.cand[a] as usize);
                for b in 0..nc {
                    if a != b {
                        let w = row[self.cand[b] as usize];
                        if w < t && next.is_none_or(|n| w > n) {
                            next = Some(w);
                        }
                    }
                }
            }
            match next {
                Some(n) => t = n,
                None => break,
            }
            // If the loop gives up, the last failed threshold minus one is still
            // a valid (if loose) bound.
            ub_min = t;
        }
        // Sum: every chosen GPU meets at most its k-1 heaviest neighbours.
        let mut tops = [0u64; MAX_GPUS];
        let mut row_buf = [0u64; MAX_GPUS];
        for (a, top) in tops.iter_mut().enumerate().take(nc) {
            let row = self.m.weight_row(self.cand[a] as usize);
            let mut len = 0;
            for b in 0..nc {
                if a != b {
                    row_buf[len] = row[self.cand[b] as usize];
                    len += 1;
                }
            }
            let buf = &mut row_buf[..len];
            let take = (k - 1).min(len);
            if take > 0 && take < len {
                buf.select_nth_unstable_by(take - 1, |x, y| y.cmp(x));
            }
            *top = buf[..take].iter().sum();
        }
        let tops = &mut tops[..nc];
        if k < nc {
            tops.select_nth_unstable_by(k - 1, |x, y| y.cmp(x));
        }
        let ub_sum = tops[..k.min(nc)].iter().sum::<u64>() / 2;
        Objective { min_weight: if k == 1 { u64::MAX } else { ub_min }, sum_weight: ub_sum }
    }

    fn core_survives(&self, t: u64) -> bool {
        let nc = self.nc;
        let need = self.k - 1;
        let mut deg = [0usize; MAX_GPUS];
        let mut alive = [true; MAX_GPUS];
        for (a, d) in deg.iter_mut().enumerate().take(nc) {
            let row = self.m.weight_row(self.cand[a] as usize);
            *d = (0..nc).filter(|&b| b != a && row[self.cand[b] as usize] >= t).count();
        }
        let mut count = nc;
        let mut changed = true;
        while changed {
            changed = false;
            for a in 0..nc {
                if alive[a] && deg[a] < need {
                    alive[a] = false;
                    count -= 1;
                    changed = true;
                    let row = self.m.weight_row(self.cand[a] as usize);
                    for b in 0..nc {
                        if alive[b] && b != a && row[self.cand[b] as usize] >= t {
                            deg[b] -= 1;
                        }
                    }
                }
            }
        }
        count >= self.k
    }
}
