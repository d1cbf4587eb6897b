//! GpuClustering (simulator `pkg/simulator/plugin/gpu_clustering_score.go`): keep pods
//! of the same GPU shape (`share-gpu`, `1-gpu`, `2-gpu`...) together. With
//! `used = 25 * (8000 - free_milli) / 8000` (integer):
//!
//! - node holds only pods of the pod's shape: `used + 75`;
//! - node holds that shape and others: `used + 50`;
//! - node holds no GPU pod: `used + 25`;
//! - node holds only other shapes: `used`.
//!
//! A pod without GPU request scores 0. Device: the fullest one that fits.

use std::sync::Arc;

use super::{GpuState, MAX_SPEC_GPU, PolicyScore, TableBatch};
use crate::framework::{CycleState, MAX_NODE_SCORE, MIN_NODE_SCORE, Status};
use crate::snapshot::{NodeInfo, PodInfo};

/// Name of [`GpuClustering`].
pub const NAME: &str = "GpuClusteringScore";

/// The GpuClustering Score plugin.
pub struct GpuClustering {
    state: Arc<GpuState>,
}

impl GpuClustering {
    /// GpuClustering over `state`.
    pub fn new(state: Arc<GpuState>) -> GpuClustering {
        GpuClustering { state }
    }
}

impl PolicyScore for GpuClustering {
    const NAME: &'static str = NAME;
    type Batch<'a> = TableBatch<'a>;

    fn batch<'a>(&'a self, state: &CycleState, pod: &PodInfo) -> TableBatch<'a> {
        TableBatch::new(&self.state, state, pod)
    }

    fn score_node(&self, b: &TableBatch<'_>, _pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        let (view, req) = (&b.view, b.req.as_ref());
        let Some(req) = req else { return Ok(MIN_NODE_SCORE) };
        let tag = req.affinity_tag();
        let max_gpu = MAX_SPEC_GPU as i64;
        Ok(view.with_node(node, |g| {
            let used = MAX_NODE_SCORE / 4 * (max_gpu - g.total_free()) / max_gpu;
            let same = g.tags.iter().any(|&(t, n)| t == tag && n > 0);
            let kinds = g.tags.iter().filter(|&&(_, n)| n > 0).count();
            match (same, kinds) {
                (true, 1) => used + MAX_NODE_SCORE * 3 / 4,
                (true, _) => used + MAX_NODE_SCORE * 2 / 4,
                (false, 0) => used + MAX_NODE_SCORE / 4,
                (false, _) => used,
            }
        }))
    }
}
