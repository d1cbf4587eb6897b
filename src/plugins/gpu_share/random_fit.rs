//! RandomScore (simulator `pkg/simulator/plugin/random_score.go`): PreScore picks one
//! feasible node uniformly at random (seeded); Score gives it 100 and every other node
//! 0. With GpuShareFit's random device choice this is the paper's "Random" baseline.

use parking_lot::Mutex;

use super::PolicyScore;
use crate::framework::{CycleState, MAX_NODE_SCORE, MIN_NODE_SCORE, Status};
use crate::model::Symbol;
use crate::rng::SplitMix64;
use crate::snapshot::{NodeInfo, NodeList, PodInfo};

/// Name of [`RandomScore`].
pub const NAME: &str = "RandomScore";

/// The node PreScore picked.
#[derive(Debug, Clone, Copy)]
struct Picked(Symbol);

/// The RandomScore plugin (PreScore + Score).
pub struct RandomScore {
    rng: Mutex<SplitMix64>,
}

impl RandomScore {
    /// Random picks from `seed`.
    pub fn new(seed: u64) -> RandomScore {
        RandomScore { rng: Mutex::new(SplitMix64(seed)) }
    }
}

impl PolicyScore for RandomScore {
    const NAME: &'static str = NAME;
    const PRE_SCORE: bool = true;
    /// The node PreScore picked (`None`: PreScore did not run).
    type Batch<'a> = Option<Symbol>;

    fn prepare(&self, state: &mut CycleState, _: &PodInfo, nodes: NodeList<'_>) -> Status {
        let i = self.rng.lock().below(nodes.len() as u64) as usize;
        if let Some(n) = nodes.get(i) {
            state.write(Picked(n.name()));
        }
        Status::SUCCESS
    }

    fn batch(&self, state: &CycleState, _: &PodInfo) -> Option<Symbol> {
        state.read::<Picked>().map(|p| p.0)
    }

    fn score_node(&self, picked: &Option<Symbol>, _: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        match picked {
            Some(p) if *p == node.name() => Ok(MAX_NODE_SCORE),
            Some(_) => Ok(MIN_NODE_SCORE),
            None => Err(Status::error("RandomScore: PreScore did not run")),
        }
    }
}
