//! The exact decomposition for multi-host NVLink domains (an NVL72 rack): the
//! best single-host set, or a knapsack over hosts of each host's best subset.

use super::bnb::{Best, Ctx, lex_smaller};
use super::types::{GpuSet, Objective};
use crate::topology::matrix::MAX_GPUS;

/// Most free GPUs per host the multi-host solver enumerates (2^8 subsets).
const MAX_HOST: usize = 8;

impl Ctx<'_> {
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
    pub(super) fn by_hosts(&mut self) -> bool {
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
}
