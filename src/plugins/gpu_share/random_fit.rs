//! RandomScore (simulator `pkg/simulator/plugin/random_score.go`): PreScore picks one
//! feasible node uniformly at random (seeded); Score gives it 100 and every other node
//! 0. With GpuShareFit's random device choice this is the paper's "Random" baseline.

use std::sync::Arc;

use parking_lot::Mutex;

use super::Rng;
use crate::framework::{CycleState, ExtensionPoints, MAX_NODE_SCORE, MIN_NODE_SCORE, Plugin, PreScorePlugin};
use crate::framework::{ScorePlugin, Status};
use crate::model::Symbol;
use crate::snapshot::{NodeInfo, NodeList, PodInfo};

/// Name of [`RandomScore`].
pub const NAME: &str = "RandomScore";

/// The node PreScore picked.
#[derive(Debug, Clone, Copy)]
struct Picked(Symbol);

/// The RandomScore plugin (PreScore + Score).
pub struct RandomScore {
    rng: Mutex<Rng>,
}

impl RandomScore {
    /// Random picks from `seed`.
    pub fn new(seed: u64) -> RandomScore {
        RandomScore { rng: Mutex::new(Rng(seed)) }
    }
}

impl Plugin for RandomScore {
    fn name(&self) -> &str {
        NAME
    }
    fn register(self: Arc<Self>, points: &mut ExtensionPoints) {
        points.pre_score(self.clone()).score(self);
    }
}

impl PreScorePlugin for RandomScore {
    fn pre_score(&self, state: &mut CycleState, _: &PodInfo, nodes: NodeList<'_>) -> Status {
        let i = self.rng.lock().below(nodes.len());
        if let Some(n) = nodes.get(i) {
            state.write(Picked(n.name()));
        }
        Status::SUCCESS
    }
}

impl ScorePlugin for RandomScore {
    fn score(&self, state: &CycleState, _: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        match state.read::<Picked>() {
            Some(p) if p.0 == node.name() => Ok(MAX_NODE_SCORE),
            Some(_) => Ok(MIN_NODE_SCORE),
            None => Err(Status::error("RandomScore: PreScore did not run")),
        }
    }
}
