//! NIC assignment: one distinct free local NIC for every GPU of a set (bipartite
//! matching by augmenting paths).

use smallvec::SmallVec;

use super::types::GpuSet;
use crate::topology::matrix::{GpuMatrix, MAX_GPUS};

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
pub(super) fn nic_matching(m: &GpuMatrix, set: u128, free_nics: u128) -> Option<SmallVec<[(u8, u8); 8]>> {
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
