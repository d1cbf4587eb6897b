//! GpuPacking (simulator `pkg/simulator/plugin/gpu_packing_score.go`): prefer, in
//! order, sharing already-used GPUs (the fuller the better), then fully free GPUs on a
//! used node (the fewer the better), then an idle node (the fewer GPUs the better):
//!
//! - all devices free: `max(33 - free_gpus, free_gpus)`;
//! - otherwise take the fitting devices, least free first; if any of them is fully
//!   free: `max(50 - fully_free_taken, 33)`;
//! - else `max(100 - Σ(free*100/1000)/10, 50)`.
//!
//! A pod without GPU request scores 0 everywhere. Device: the fullest one that fits.

use std::sync::Arc;

use super::{GpuState, MILLI, PolicyScore, TableBatch};
use crate::framework::{CycleState, MAX_NODE_SCORE, MIN_NODE_SCORE, Status};
use crate::snapshot::{NodeInfo, PodInfo};

/// Name of [`GpuPacking`].
pub const NAME: &str = "GpuPackingScore";

/// The GpuPacking Score plugin.
pub struct GpuPacking {
    state: Arc<GpuState>,
}

impl GpuPacking {
    /// GpuPacking over `state`.
    pub fn new(state: Arc<GpuState>) -> GpuPacking {
        GpuPacking { state }
    }
}

impl PolicyScore for GpuPacking {
    const NAME: &'static str = NAME;
    type Batch<'a> = TableBatch<'a>;

    fn batch<'a>(&'a self, state: &CycleState, pod: &PodInfo) -> TableBatch<'a> {
        TableBatch::new(&self.state, state, pod)
    }

    fn score_node(&self, b: &TableBatch<'_>, _pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        let (view, req) = (&b.view, b.req.as_ref());
        let Some(req) = req else { return Ok(MIN_NODE_SCORE) };
        view.with_node(node, |g| {
            let fully_free = g.fully_free() as i64;
            if fully_free == g.count() as i64 {
                return Ok((MAX_NODE_SCORE / 3 - fully_free).max(fully_free));
            }
            let mut idx: smallvec::SmallVec<[usize; 8]> = (0..g.count()).collect();
            idx.sort_by_key(|&i| g.free[i]);
            let mut want = req.count;
            let mut free_taken = 0i64;
            let mut ratio = 0i64;
            for i in idx {
                if want == 0 {
                    break;
                }
                if req.milli <= g.free[i] {
                    want -= 1;
                    ratio += i64::from(g.free[i]) * 100 / i64::from(MILLI);
                    if g.free[i] == MILLI {
                        free_taken += 1;
                    }
                }
            }
            if want != 0 {
                return Err(Status::error(format!("GpuPacking: pod does not fit node {}", node.node().name())));
            }
            if free_taken > 0 {
                return Ok((MAX_NODE_SCORE / 2 - free_taken).max(MAX_NODE_SCORE / 3));
            }
            Ok((MAX_NODE_SCORE - ratio / 10).max(MAX_NODE_SCORE / 2))
        })
    }
}
