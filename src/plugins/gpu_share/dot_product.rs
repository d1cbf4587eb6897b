//! DotProduct, the Tetris packing heuristic (simulator
//! `pkg/simulator/plugin/dot_product_score.go`) with the paper's settings: dimensions
//! merged (`[cpu, total gpu]`), normalised by the max spec (128 cores, 8 GPUs).
//!
//! Score `int64(100 * (1 - (cpu_avail/128k * req_cpu/128k + gpu_avail/8k * req_gpu/8k) / 2))`:
//! the node whose free vector aligns least with the request is preferred, leaving
//! aligned capacity for later. A node with too little CPU scores 0. No normalisation.
//! Device: the fullest one that fits (`gpuSelMethod: best`).

use super::{GpuRequest, GpuState, GpuView, MAX_SPEC_CPU, MAX_SPEC_GPU, ViewScore, cpu_left};
use crate::framework::{MAX_NODE_SCORE, MIN_NODE_SCORE, Status};
use crate::snapshot::{NodeInfo, PodInfo};

/// Name of [`DotProduct`].
pub const NAME: &str = "DotProductScore";

view_score_plugin!(
    /// The DotProduct Score plugin.
    DotProduct,
    NAME
);

impl ViewScore for DotProduct {
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
        if cpu_avail < pod_cpu {
            return Ok(MIN_NODE_SCORE);
        }
        let gpu_avail = view.total_free(node);
        let mut dot = 0.0;
        dot += (cpu_avail as f64 / MAX_SPEC_CPU) * (pod_cpu as f64 / MAX_SPEC_CPU);
        dot += (gpu_avail as f64 / MAX_SPEC_GPU) * (gpu_req as f64 / MAX_SPEC_GPU);
        let score = 1.0 - dot / 2.0;
        Ok((MAX_NODE_SCORE as f64 * score) as i64)
    }
}
