//! The search's public types: GPU sets as bitmasks, search options, the objective
//! a set is ranked by, and the placement a search returns.

use smallvec::SmallVec;

use crate::topology::matrix::MAX_GPUS;

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
    /// GPUs the chosen set must contain (go-gpuallocator's `required`, the
    /// kubelet device manager's `mustInclude` of `GetPreferredAllocation`): the
    /// search picks the rest around them. Empty by default.
    pub must_include: GpuSet,
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
            must_include: GpuSet::EMPTY,
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
