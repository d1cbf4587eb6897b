//! BestFit (simulator `pkg/simulator/plugin/best_fit_score.go`).
//!
//! Raw score `int64((1 - Σ w_i (free_i - req_i) / maxSpec_i) * 100)` over CPU and GPU
//! (weights 0.5 each; maxSpec 128 cores and 8 GPUs; GPU free is the node's total free
//! milli), then min-max normalised to 0..=100 over the feasible nodes with integer
//! division (all 0 when every node scores the same). Device: the fullest one that fits.

use std::sync::Arc;

use super::{GpuRequest, GpuState, GpuView, MAX_SPEC_CPU, MAX_SPEC_GPU, ViewScore, cpu_left, score_batch, score_one};
use crate::framework::{
    CycleState, ExtensionPoints, MAX_NODE_SCORE, MIN_NODE_SCORE, NodeScore, Plugin, ScorePlugin, Status,
};
use crate::snapshot::{NodeInfo, NodeList, PodInfo};

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

impl Plugin for BestFit {
    fn name(&self) -> &str {
        NAME
    }
    fn register(self: Arc<Self>, points: &mut ExtensionPoints) {
        points.score(self);
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

impl ViewScore for BestFit {
    fn gpu_state(&self) -> &GpuState {
        &self.state
    }

    fn score_in(
        &self,
        view: &GpuView<'_>,
        req: Option<&GpuRequest>,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> Result<i64, Status> {
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
}

impl ScorePlugin for BestFit {
    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        score_one(self, state, pod, node)
    }

    fn score_nodes(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: NodeList<'_>,
        scores: &mut [NodeScore],
    ) -> Result<(), Status> {
        score_batch(self, state, pod, nodes, scores)
    }

    fn normalize(&self, _: &CycleState, _: &PodInfo, scores: &mut [NodeScore]) -> Status {
        min_max_normalize(scores);
        Status::SUCCESS
    }
}
