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

use core::cmp::Ordering;

use smallvec::SmallVec;

use super::error::TopologyError;
use super::matrix::{GpuMatrix, MAX_GPUS};

/// A set of GPU indices as a bitmask: bit `i` is GPU `i`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct GpuSet(pub u128);

impl GpuSet {
    /// The empty set.
    pub const EMPTY: Self = Self(0);

    /// The set of the given indices; indices >= 128 are ignored.
    pub fn from_indices<I: IntoIterator<Item = usize>>(indices: I) -> Self {
        let mut m = 0u128;
        for i in indices {
            if i < MAX_GPUS {
                m |= 1 << i;
            }
        }
        Self(m)
    }

    /// Number of GPUs in the set.
    pub const fn len(self) -> usize {
        self.0.count_ones() as usize
    }

    /// Whether the set is empty.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Whether GPU `i` is in the set.
    pub const fn contains(self, i: usize) -> bool {
        i < MAX_GPUS && self.0 & (1 << i) != 0
    }

    /// The indices in ascending order.
    pub fn iter(self) -> impl Iterator<Item = usize> {
        let mut m = self.0;
        core::iter::from_fn(move || {
            if m == 0 {
                None
            } else {
                let i = m.trailing_zeros() as usize;
                m &= m - 1;
                Some(i)
            }
        })
    }
}

/// Options of the search.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SearchOptions {
    /// Require one distinct local NIC (PIX or PXB, i.e. behind the same PCIe
    /// switch tree) per chosen GPU, for GPUDirect RDMA. GPUs without a free local
    /// NIC are not eligible.
    pub nic_aligned: bool,
    /// NICs that may be assigned when `nic_aligned` is set (bit `j` = NIC column `j`).
    pub free_nics: u128,
    /// Require every chosen GPU on one NUMA node of one host (for CPU-memory
    /// locality); the best aligned set over all NUMA nodes is returned.
    pub numa_aligned: bool,
    /// Break objective ties in favour of leaving the remaining free GPUs well
    /// connected (see the module docs).
    pub fragmentation_aware: bool,
    /// Domains with at most this many eligible GPUs are searched exhaustively.
    /// Values above 16 are allowed but may be slow for mid-size `k`.
    pub exact_up_to: usize,
    /// Branch-and-bound nodes allowed for larger domains before returning the
    /// incumbent with its bound.
    pub node_budget: u64,
}

impl Default for SearchOptions {
    fn default() -> Self {
        Self {
            nic_aligned: false,
            free_nics: u128::MAX,
            numa_aligned: false,
            fragmentation_aware: true,
            exact_up_to: 16,
            node_budget: 4_096,
        }
    }
}

/// The objective of a set, compared lexicographically (min first, then sum).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Objective {
    /// Smallest pair weight; `u64::MAX` for a single GPU (no pairs).
    pub min_weight: u64,
    /// Sum of pair weights.
    pub sum_weight: u64,
}

impl Objective {
    /// Smallest pairwise bandwidth in MB/s per direction, `None` for one GPU.
    pub const fn min_bandwidth_mbps(self) -> Option<u64> {
        if self.min_weight == u64::MAX { None } else { Some(self.min_weight >> 16) }
    }

    /// Sum of pairwise bandwidths in MB/s per direction.
    pub const fn sum_bandwidth_mbps(self) -> u64 {
        self.sum_weight >> 16
    }

    /// Sum of the pairs' host closeness (5 = PIX … 1 = SYS, 0 = none/NVLink only).
    pub const fn sum_closeness(self) -> u64 {
        self.sum_weight & 0xffff
    }
}

/// The chosen set and what the search proved about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// The chosen GPUs.
    pub gpus: GpuSet,
    /// Their objective.
    pub objective: Objective,
    /// A proven upper bound on the objective of any eligible set of the same size
    /// (equal to `objective` when `exact`).
    pub bound: Objective,
    /// Whether `objective` is proven optimal.
    pub exact: bool,
    /// With NIC alignment: `(gpu, nic)` pairs, one distinct local NIC per GPU.
    pub nics: SmallVec<[(u8, u8); 8]>,
    /// Branch-and-bound nodes visited (an operation count for tests and tuning).
    pub nodes_visited: u64,
}

impl Placement {
    /// Whether the smallest pairwise bandwidth is proven optimal even if the sum
    /// is not.
    pub fn min_proven(&self) -> bool {
        self.exact || self.objective.min_weight == self.bound.min_weight
    }
}

#[derive(Clone, Copy)]
struct Best {
    set: u128,
    obj: Objective,
    frag: u64,
    found: bool,
}

impl Best {
    const NONE: Self = Self { set: 0, obj: Objective { min_weight: 0, sum_weight: 0 }, frag: u64::MAX, found: false };

    /// Whether `(obj, frag, set)` beats the incumbent.
    fn beaten_by(&self, obj: Objective, frag: u64, set: u128, use_frag: bool) -> bool {
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

/// Most free GPUs per host the multi-host solver enumerates (2^8 subsets).
const MAX_HOST: usize = 8;

/// Whether the sorted index list of `a` is lexicographically smaller than `b`'s.
fn lex_smaller(a: u128, b: u128) -> bool {
    let diff = a ^ b;
    if diff == 0 {
        return false;
    }
    // The lowest index where they differ belongs to the smaller list.
    let low = diff.trailing_zeros();
    a & (1 << low) != 0
}

struct Ctx<'a> {
    m: &'a GpuMatrix,
    opts: &'a SearchOptions,
    k: usize,
    cand: [u8; MAX_GPUS],
    nc: usize,
    frag: [u64; MAX_GPUS],
    wmax: u64,
    chosen: [u8; MAX_GPUS],
    best: Best,
    nodes: u64,
    budget: u64,
    aborted: bool,
}

impl Ctx<'_> {
    /// Fills the candidate list, the largest candidate weight and, if asked, each
    /// GPU's total weight to the free pool (its fragmentation cost).
    fn prepare(&mut self, eligible: u128, free: u128) {
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

    fn nic_ok(&self, set: u128) -> bool {
        !self.opts.nic_aligned || nic_matching(self.m, set, self.opts.free_nics).is_some()
    }

    fn dfs(&mut self, start: usize, depth: usize, set: u128, cur: Objective, frag: u64) {
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

    /// A copy of this search restricted to the candidates in `mask`, sharing the
    /// fragmentation costs (which stay relative to the whole free pool).
    fn restricted(&self, mask: u128) -> Self {
        let mut sub = Ctx {
            m: self.m,
            opts: self.opts,
            k: self.k,
            cand: [0; MAX_GPUS],
            nc: 0,
            frag: self.frag,
            wmax: self.wmax,
            chosen: [0; MAX_GPUS],
            best: Best::NONE,
            nodes: 0,
            budget: u64::MAX,
            aborted: false,
        };
        for g in GpuSet(mask).iter() {
            sub.cand[sub.nc] = g as u8;
            sub.nc += 1;
        }
        sub
    }

    /// Candidates grouped by host, if the domain has the shape [`Ctx::by_hosts`]
    /// needs: uniform pair bandwidth, no host path across hosts, at least two
    /// hosts, at most `MAX_HOST` candidates per host.
    fn host_groups(&self) -> Option<([u128; MAX_GPUS], usize)> {
        let count = self.nc;
        if self.opts.nic_aligned || count < 2 || self.k < 2 {
            return None;
        }
        let gpus = self.m.gpus();
        let bw = self.m.weight(self.cand[0] as usize, self.cand[1] as usize) >> 16;
        let mut host_ids = [0u32; MAX_GPUS];
        let mut host_mask = [0u128; MAX_GPUS];
        let mut nh = 0;
        for i in 0..count {
            let gpu = self.cand[i] as usize;
            let host = gpus[gpu].gpu.host;
            let row = self.m.weight_row(gpu);
            for j in (i + 1)..count {
                let other = self.cand[j] as usize;
                let w = row[other];
                if w >> 16 != bw || (gpus[other].gpu.host != host && w & 0xffff != 0) {
                    return None;
                }
            }
            if let Some(p) = host_ids[..nh].iter().position(|&x| x == host) {
                host_mask[p] |= 1 << gpu;
            } else {
                host_ids[nh] = host;
                host_mask[nh] = 1 << gpu;
                nh += 1;
            }
        }
        let too_big = host_mask[..nh].iter().any(|m| m.count_ones() as usize > MAX_HOST);
        (nh >= 2 && !too_big).then_some((host_mask, nh))
    }

    /// Exact solver for multi-host NVLink domains (an NVL72 rack): when every
    /// candidate pair has the same bandwidth and pairs on different hosts have
    /// no host path, the objective splits by host. A set inside one host beats
    /// any set spanning hosts on the minimum (its pairs keep a host path), so if
    /// a host can hold the request the answer is the best single-host set;
    /// otherwise every set's minimum is the same and the sum is the sum of
    /// per-host closeness, maximized by a knapsack over hosts of the best
    /// `c`-subset of each (hosts of up to 8 free GPUs, enumerated). Returns
    /// `false`, touching nothing, when the structure does not apply.
    fn by_hosts(&mut self) -> bool {
        let Some((host_mask, nh)) = self.host_groups() else {
            return false;
        };
        let hosts = &host_mask[..nh];
        let k = self.k;
        let use_frag = self.opts.fragmentation_aware;
        if hosts.iter().any(|m| m.count_ones() as usize >= k) {
            for &mask in hosts {
                if (mask.count_ones() as usize) < k {
                    continue;
                }
                let mut sub = self.restricted(mask);
                sub.dfs(0, 0, 0, Objective { min_weight: u64::MAX, sum_weight: 0 }, 0);
                self.nodes += sub.nodes;
                let b = sub.best;
                if b.found && self.best.beaten_by(b.obj, b.frag, b.set, use_frag) {
                    self.best = b;
                }
            }
            return true;
        }
        self.knapsack_hosts(hosts)
    }

    /// The spanning case of [`Ctx::by_hosts`]: best `c`-subset per host, then a
    /// knapsack over hosts on (closeness, fragmentation cost).
    fn knapsack_hosts(&mut self, hosts: &[u128]) -> bool {
        let k = self.k;
        let use_frag = self.opts.fragmentation_aware;
        // Candidates are (closeness sum, fragmentation cost, mask).
        let better = |a: (u64, u64, u128), b: (u64, u64, u128)| -> bool {
            a.0 > b.0
                || (a.0 == b.0 && use_frag && a.1 < b.1)
                || (a.0 == b.0 && (!use_frag || a.1 == b.1) && lex_smaller(a.2, b.2))
        };
        // Knapsack over hosts: dp[c] is the best way to take c GPUs from the
        // hosts folded in so far. Each host contributes its best c-subset.
        let mut dp = [None::<(u64, u64, u128)>; MAX_GPUS + 1];
        dp[0] = Some((0, 0, 0));
        for &mask in hosts {
            let mut members = [0usize; MAX_HOST];
            let mut len = 0;
            for g in GpuSet(mask).iter().take(MAX_HOST) {
                members[len] = g;
                len += 1;
            }
            let members = &members[..len];
            let mut row = [None::<(u64, u64, u128)>; MAX_HOST + 1];
            for bits in 0u32..(1 << len) {
                let mut set = 0u128;
                let (mut clos, mut frag) = (0u64, 0u64);
                for (i, &a) in members.iter().enumerate() {
                    if bits & (1 << i) == 0 {
                        continue;
                    }
                    set |= 1 << a;
                    frag += self.frag[a];
                    for (j, &b) in members.iter().enumerate().skip(i + 1) {
                        if bits & (1 << j) != 0 {
                            clos += self.m.weight(a, b) & 0xffff;
                        }
                    }
                }
                self.nodes += 1;
                let c = bits.count_ones() as usize;
                let cand = (clos, frag, set);
                if row[c].is_none_or(|cur| better(cand, cur)) {
                    row[c] = Some(cand);
                }
            }
            let mut next = [None::<(u64, u64, u128)>; MAX_GPUS + 1];
            for (c, cur) in dp.iter().enumerate().take(k + 1) {
                let Some(cur) = *cur else { continue };
                for (t, entry) in row.iter().enumerate() {
                    let Some(e) = *entry else { continue };
                    if c + t > k {
                        break;
                    }
                    let cand = (cur.0 + e.0, cur.1 + e.1, cur.2 | e.2);
                    if next[c + t].is_none_or(|n| better(cand, n)) {
                        next[c + t] = Some(cand);
                    }
                }
            }
            dp = next;
        }
        let Some((_, frag, set)) = dp[k] else {
            return false;
        };
        let mut obj = Objective { min_weight: u64::MAX, sum_weight: 0 };
        for a in GpuSet(set).iter() {
            for b in GpuSet(set).iter().filter(|&b| b > a) {
                let w = self.m.weight(a, b);
                obj.min_weight = obj.min_weight.min(w);
                obj.sum_weight += w;
            }
        }
        self.best = Best { set, obj, frag, found: true };
        true
    }

    /// Greedy incumbent: from every seed, repeatedly add the GPU that keeps the
    /// objective highest.
    fn greedy(&mut self) {
        let nc = self.nc;
        let k = self.k;
        for s in 0..nc {
            let seed = self.cand[s] as usize;
            let mut gmin = [u64::MAX; MAX_GPUS];
            let mut gsum = [0u64; MAX_GPUS];
            let mut taken = [false; MAX_GPUS];
            let mut set = 1u128 << seed;
            let mut cur = Objective { min_weight: u64::MAX, sum_weight: 0 };
            let mut frag = self.frag[seed];
            taken[s] = true;
            let mut last = seed;
            for _ in 1..k {
                let row = self.m.weight_row(last);
                let mut pick: Option<(usize, Objective, u64)> = None;
                for j in 0..nc {
                    if taken[j] {
                        continue;
                    }
                    let w = row[self.cand[j] as usize];
                    gmin[j] = gmin[j].min(w);
                    gsum[j] += w;
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
                last = self.cand[j] as usize;
                set |= 1 << last;
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
    fn root_bound(&self) -> Objective {
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

/// Kuhn's augmenting path step: tries to give GPU `g` a NIC, moving others.
fn augment(m: &GpuMatrix, g: usize, free: u128, owner: &mut [u8; 128], seen: &mut u128) -> bool {
    let mut opts = m.local_nics(g) & free & !*seen;
    while opts != 0 {
        let j = opts.trailing_zeros() as usize;
        opts &= opts - 1;
        *seen |= 1 << j;
        if owner[j] == u8::MAX || augment(m, owner[j] as usize, free, owner, seen) {
            owner[j] = g as u8;
            return true;
        }
    }
    false
}

/// Finds one distinct free local NIC for every GPU of `set` (bipartite matching).
fn nic_matching(m: &GpuMatrix, set: u128, free_nics: u128) -> Option<SmallVec<[(u8, u8); 8]>> {
    let mut owner = [u8::MAX; 128];
    let mut gpus = [0u8; MAX_GPUS];
    let mut n = 0;
    for g in GpuSet(set).iter() {
        gpus[n] = g as u8;
        n += 1;
    }
    for &g in &gpus[..n] {
        let mut seen = 0u128;
        if !augment(m, g as usize, free_nics, &mut owner, &mut seen) {
            return None;
        }
    }
    let mut out = SmallVec::new();
    for (j, &g) in owner.iter().enumerate() {
        if g != u8::MAX {
            out.push((g, j as u8));
        }
    }
    out.sort_unstable();
    Some(out)
}

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
    let mut eligible = free;
    if opts.nic_aligned {
        for g in GpuSet(free).iter() {
            if m.local_nics(g) & opts.free_nics == 0 {
                eligible &= !(1 << g);
            }
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
            if (mask.count_ones() as usize) < k {
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
    let nc = eligible.count_ones() as usize;
    let mut ctx = Ctx {
        m,
        opts,
        k,
        cand: [0; MAX_GPUS],
        nc,
        frag: [0; MAX_GPUS],
        wmax: 0,
        chosen: [0; MAX_GPUS],
        best: Best::NONE,
        nodes: 0,
        budget: u64::MAX,
        aborted: false,
    };
    ctx.prepare(eligible, free);
    let start = Objective { min_weight: u64::MAX, sum_weight: 0 };
    let (exact, bound) = if nc <= opts.exact_up_to {
        ctx.dfs(0, 0, 0, start, 0);
        (true, None)
    } else if ctx.by_hosts() {
        (true, None)
    } else {
        ctx.greedy();
        let bound = ctx.root_bound();
        if ctx.best.found && ctx.best.obj == bound {
            (true, Some(bound))
        } else {
            ctx.budget = opts.node_budget;
            ctx.dfs(0, 0, 0, start, 0);
            (!ctx.aborted, Some(bound))
        }
    };
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
    use super::{GpuSet, lex_smaller};

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
