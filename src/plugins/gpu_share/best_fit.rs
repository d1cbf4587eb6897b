//! BestFit (simulator `pkg/simulator/plugin/best_fit_score.go`).
//!
//! Raw score `int64((1 - Σ w_i (free_i - req_i) / maxSpec_i) * 100)` over CPU and GPU
//! (weights 0.5 each; maxSpec 128 cores and 8 GPUs; GPU free is the node's total free
//! milli), then min-max normalised to 0..=100 over the feasible nodes with integer
//! division (all 0 when every node scores the same). Device: the fullest one that fits.

use std::sync::Arc;

use super::{GpuRequest, GpuState, MAX_SPEC_CPU, MAX_SPEC_GPU, PolicyScore, TableBatch, cpu_left};
use crate::framework::{CycleState, MAX_NODE_SCORE, MIN_NODE_SCORE, NodeScore, Status};
use crate::snapshot::{NodeInfo, PodInfo};

/// Name of [`BestFit`].
pub const NAME: &str = "BestFitScore";

/// The BestFit Score plugin.
pub struct BestFit {
    state: Arc<GpuState>,
}

impl BestFit {
    /// BestFit over `state`.
    pub fn new(state: Arc<GpuState>) -> BestFit {
        BestFit { state }
    }
}

/// The simulator's `NormalizeScore`: min-max to 0..=100 with integer arithmetic.
pub(crate) fn min_max_normalize(scores: &mut [NodeScore]) {
    let hi = scores.iter().map(|s| s.score).max().unwrap_or(0);
    let lo = scores.iter().map(|s| s.score).min().unwrap_or(0);
    let range = hi - lo;
    for s in scores {
        s.score = if range == 0 {
            MIN_NODE_SCORE
        } else {
            (s.score - lo) * (MAX_NODE_SCORE - MIN_NODE_SCORE) / range + MIN_NODE_SCORE
        };
    }
}

impl PolicyScore for BestFit {
    const NAME: &'static str = NAME;
    type Batch<'a> = TableBatch<'a>;

    fn batch<'a>(&'a self, state: &CycleState, pod: &PodInfo) -> TableBatch<'a> {
        TableBatch::new(&self.state, state, pod)
    }

    fn score_node(&self, b: &TableBatch<'_>, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        let (view, req) = (&b.view, b.req.as_ref());
        let gpu_req = req.map_or(0, GpuRequest::total_milli);
        let cpu_avail = cpu_left(node);
        let pod_cpu = pod.non_zero_requests.milli_cpu;
        let gpu_avail = view.total_free(node);
        if cpu_avail < pod_cpu || gpu_avail < gpu_req {
            return Err(Status::error(format!("BestFit: pod does not fit node {}", node.node().name())));
        }
        let mut score = 0.0;
        score += (cpu_avail - pod_cpu) as f64 / MAX_SPEC_CPU * 0.5;
        score += (gpu_avail - gpu_req) as f64 / MAX_SPEC_GPU * 0.5;
        Ok(((1.0 - score) * MAX_NODE_SCORE as f64) as i64)
    }

    fn normalize_scores(&self, scores: &mut [NodeScore]) {
        min_max_normalize(scores);
    }
}
