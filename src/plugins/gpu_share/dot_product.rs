//! DotProduct, the Tetris packing heuristic (simulator
//! `pkg/simulator/plugin/dot_product_score.go`) with the paper's settings: dimensions
//! merged (`[cpu, total gpu]`), normalised by the max spec (128 cores, 8 GPUs).
//!
//! Score `int64(100 * (1 - (cpu_avail/128k * req_cpu/128k + gpu_avail/8k * req_gpu/8k) / 2))`:
//! the node whose free vector aligns least with the request is preferred, leaving
//! aligned capacity for later. A node with too little CPU scores 0. No normalisation.
//! Device: the fullest one that fits (`gpuSelMethod: best`).

use std::sync::Arc;

use super::{GpuRequest, GpuState, MAX_SPEC_CPU, MAX_SPEC_GPU, PolicyScore, TableBatch, cpu_left};
use crate::framework::{CycleState, MAX_NODE_SCORE, MIN_NODE_SCORE, Status};
use crate::snapshot::{NodeInfo, PodInfo};

/// Name of [`DotProduct`].
pub const NAME: &str = "DotProductScore";

/// The DotProduct Score plugin.
pub struct DotProduct {
    state: Arc<GpuState>,
}

impl DotProduct {
    /// DotProduct over `state`.
    pub fn new(state: Arc<GpuState>) -> DotProduct {
        DotProduct { state }
    }
}

impl PolicyScore for DotProduct {
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
