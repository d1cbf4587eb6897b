//! [`PolicyScore`], the one way a gpu_share policy is declared: implement it and the
//! type is a Score plugin (and a PreScore plugin if it asks) through the impls here.

use std::sync::Arc;

use super::{GpuRequest, GpuState, GpuView, request_of};
use crate::framework::{CycleState, ExtensionPoints, NodeScore, Plugin, PreScorePlugin, ScorePlugin, Status};
use crate::snapshot::{NodeInfo, NodeList, PodInfo};

/// A policy Score plugin of the paper's experiments. What a policy writes: its name,
/// what it reads once per batch of nodes ([`PolicyScore::Batch`], e.g. a
/// [`TableBatch`]), the score of one node given that, and optionally a PreScore step
/// and a normalisation. The impls of [`Plugin`], [`ScorePlugin`] and
/// [`PreScorePlugin`] for every `PolicyScore` do the wiring: `score` reads the batch
/// for one node, `score_nodes` reads it once per batch, and PreScore is registered
/// only when [`PolicyScore::PRE_SCORE`] is set.
///
/// ```
/// use schedkit::framework::{CycleState, Status};
/// use schedkit::plugins::gpu_share::{PolicyScore, TableBatch, GpuState};
/// use schedkit::snapshot::{NodeInfo, PodInfo};
/// use std::sync::Arc;
///
/// /// Prefers nodes with the most free milli-GPU.
/// struct MostFree(Arc<GpuState>);
/// impl PolicyScore for MostFree {
///     const NAME: &'static str = "MostFree";
///     type Batch<'a> = TableBatch<'a>;
///     fn batch<'a>(&'a self, state: &CycleState, pod: &PodInfo) -> TableBatch<'a> {
///         TableBatch::new(&self.0, state, pod)
///     }
///     fn score_node(&self, b: &TableBatch<'_>, _: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
///         Ok(b.view.total_free(node) / 80)
///     }
/// }
/// let profile = schedkit::framework::Profile::builder("p").plugin(MostFree(GpuState::new())).build().unwrap();
/// assert_eq!(profile.score_plugins(), [("MostFree", 1)]);
/// ```
pub trait PolicyScore: Send + Sync + 'static {
    /// The plugin's name.
    const NAME: &'static str;
    /// Whether the plugin also runs at PreScore ([`PolicyScore::prepare`]).
    const PRE_SCORE: bool = false;

    /// What scoring reads once per batch of nodes rather than once per node.
    type Batch<'a>;

    /// Reads the batch's inputs from the cycle.
    fn batch<'a>(&'a self, state: &CycleState, pod: &PodInfo) -> Self::Batch<'a>;

    /// The node's score (before normalisation).
    fn score_node(&self, batch: &Self::Batch<'_>, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status>;

    /// The PreScore step, run once per cycle when [`PolicyScore::PRE_SCORE`] is set.
    fn prepare(&self, _state: &mut CycleState, _pod: &PodInfo, _nodes: NodeList<'_>) -> Status {
        Status::SUCCESS
    }

    /// Rescales the cycle's scores in place (default: leaves them as they are).
    fn normalize_scores(&self, _scores: &mut [NodeScore]) {}
}

/// The batch of the policies over the device table: a read view of the table (one
/// lock per batch) and the pod's request (read once per batch).
#[derive(Debug)]
pub struct TableBatch<'a> {
    /// The pod's GPU request (`None`: it asks for no GPU).
    pub req: Option<GpuRequest>,
    /// The device table.
    pub view: GpuView<'a>,
}

impl<'a> TableBatch<'a> {
    /// The pod's request (from the cycle, else its labels) and a view of `table`.
    pub fn new(table: &'a GpuState, state: &CycleState, pod: &PodInfo) -> TableBatch<'a> {
        TableBatch { req: request_of(state, pod), view: table.view() }
    }
}

impl<T: PolicyScore> Plugin for T {
    fn name(&self) -> &str {
        T::NAME
    }

    fn register(self: Arc<Self>, points: &mut ExtensionPoints) {
        if T::PRE_SCORE {
            points.pre_score(self.clone());
        }
        points.score(self);
    }
}

impl<T: PolicyScore> PreScorePlugin for T {
    fn pre_score(&self, state: &mut CycleState, pod: &PodInfo, nodes: NodeList<'_>) -> Status {
        self.prepare(state, pod, nodes)
    }
}

impl<T: PolicyScore> ScorePlugin for T {
    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        self.score_node(&self.batch(state, pod), pod, node)
    }

    fn score_nodes(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: NodeList<'_>,
        scores: &mut [NodeScore],
    ) -> Result<(), Status> {
        let batch = self.batch(state, pod);
        for (slot, node) in scores.iter_mut().zip(nodes.iter()) {
            slot.score = self.score_node(&batch, pod, node)?;
        }
        Ok(())
    }

    fn normalize(&self, _: &CycleState, _: &PodInfo, scores: &mut [NodeScore]) -> Status {
        self.normalize_scores(scores);
        Status::SUCCESS
    }
}
