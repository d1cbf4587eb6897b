//! A [`DeviceChooser`] that prefers the best-connected GPUs (schedkit extension beyond
//! upstream, which takes devices in published order).

use super::allocator::{CandidateView, DeviceChooser};
use crate::selector::{AttributeKey, AttributeValue};
use crate::topology::{GpuMatrix, SearchOptions, best_subset};

/// Orders a request's candidates so that the GPU set [`best_subset`] finds for the
/// machine comes first; the allocator then takes it when it also satisfies the claim's
/// constraints (and falls back to the remaining order otherwise).
///
/// Each candidate's position in the matrix is read from an int attribute (for example
/// `gpu.nvidia.com/index`, as the NVIDIA DRA driver publishes it). One matrix serves every
/// node, so use it for clusters of one machine shape. The search may allocate, so a
/// profile using this chooser gives up the allocation-free Filter for multi-GPU claims.
#[derive(Debug, Clone)]
pub struct TopologyChooser {
    matrix: GpuMatrix,
    index: AttributeKey,
    options: SearchOptions,
}

impl TopologyChooser {
    /// A chooser for machines shaped like `matrix`, reading the GPU index from the
    /// fully qualified attribute `index_attribute` (`domain/name`).
    pub fn new(matrix: GpuMatrix, index_attribute: &str) -> TopologyChooser {
        TopologyChooser {
            matrix,
            index: AttributeKey::qualified(index_attribute, ""),
            options: SearchOptions::default(),
        }
    }

    /// Overrides the search options.
    #[must_use]
    pub fn with_options(mut self, options: SearchOptions) -> TopologyChooser {
        self.options = options;
        self
    }

    fn gpu_index(&self, view: CandidateView<'_>, c: u32) -> Option<usize> {
        match view.device(c).attribute(self.index) {
            Some(AttributeValue::Int(i)) if (0..128).contains(i) && (*i as usize) < self.matrix.len() => {
                Some(*i as usize)
            }
            _ => None,
        }
    }
}

impl DeviceChooser for TopologyChooser {
    fn reorder(&self, _request: &str, count: Option<u32>, candidates: &mut [u32], view: CandidateView<'_>) {
        let Some(k) = count.filter(|&k| k > 1) else { return };
        let mut free = 0u128;
        for &c in candidates.iter() {
            if let Some(i) = self.gpu_index(view, c) {
                free |= 1 << i;
            }
        }
        let Ok(best) = best_subset(&self.matrix, free, k as usize, &self.options) else { return };
        let chosen = best.gpus.0;
        // Stable: the chosen set first (in upstream order), then the rest.
        candidates.sort_by_key(|&c| self.gpu_index(view, c).is_none_or(|i| chosen & (1 << i) == 0));
    }
}
