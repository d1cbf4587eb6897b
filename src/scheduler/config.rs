//! Scheduler-wide settings (node sampling, tie-break, parallelism) and the errors
//! a scheduling cycle returns.

use super::FitError;
use crate::framework::Status;
use crate::model::PodError;
use crate::snapshot::CacheError;

/// Upstream `minFeasibleNodesToFind`: below this many nodes, all are checked.
pub const MIN_FEASIBLE_NODES_TO_FIND: usize = 100;
/// Upstream `minFeasibleNodesPercentageToFind`: the adaptive percentage's floor.
pub const MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND: usize = 5;

/// How many nodes to find feasible before scoring, as upstream
/// `numFeasibleNodesToFind`: all below 100 nodes; else `percentage` of them (0 =
/// adaptive: `50 - nodes/125`, at least 5%), and never fewer than 100.
///
/// ```
/// use schedkit::scheduler::num_feasible_nodes_to_find;
/// assert_eq!(num_feasible_nodes_to_find(0, 50), 50);
/// assert_eq!(num_feasible_nodes_to_find(0, 5000), 500);   // 50 - 40 = 10%
/// assert_eq!(num_feasible_nodes_to_find(0, 15000), 750);  // floor of 5%
/// assert_eq!(num_feasible_nodes_to_find(100, 5000), 5000);
/// assert_eq!(num_feasible_nodes_to_find(1, 1000), 100);
/// ```
pub fn num_feasible_nodes_to_find(percentage: u32, num_all_nodes: usize) -> usize {
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND {
        return num_all_nodes;
    }
    let mut pct = percentage as usize;
    if pct == 0 {
        pct = 50usize.saturating_sub(num_all_nodes / 125).max(MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND);
    }
    if pct >= 100 {
        return num_all_nodes;
    }
    (num_all_nodes * pct / 100).max(MIN_FEASIBLE_NODES_TO_FIND)
}

/// How a host is picked among nodes with the same top score.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TieBreak {
    /// Uniformly at random (reservoir sampling, as upstream `selectHost`), from the
    /// scheduler's seeded generator.
    #[default]
    Random,
    /// The first in snapshot order (deterministic).
    First,
    /// The lexicographically smallest node name (what trace simulators use).
    SmallestName,
}

/// Scheduler-wide settings.
#[derive(Debug, Clone)]
pub struct SchedulerConfig {
    /// Global `percentageOfNodesToScore` (0 = adaptive); a profile's own wins.
    pub percentage_of_nodes_to_score: u32,
    /// Threads for Filter and Score (1 = never parallel).
    pub parallelism: usize,
    /// Run Filter in parallel only when there are at least this many candidate
    /// nodes, and its estimated work reaches
    /// [`SchedulerConfig::parallel_min_work`] too.
    pub parallel_min_nodes: usize,
    /// Run a phase in parallel only when its estimated work reaches this many
    /// instructions. Score (every Score plugin in one region): feasible nodes ×
    /// Score plugins PreScore did not skip × 60, the instructions a plugin's Score,
    /// NormalizeScore and weighted total cost per node on the default profile.
    /// Filter: the nodes the search needs (all candidates, or the sample size when
    /// sampling stops it early) × Filter plugins PreFilter did not skip × 30.
    /// Waking the workers costs a fixed amount per region (a full halt exit on VMs
    /// that don't poll when idle), which a small phase does not earn back. Default
    /// 300,000: Score from about 830 feasible nodes with six Score plugins, Filter
    /// from about 1,430 nodes with seven Filter plugins (so upstream's adaptive
    /// sample of 5,000 nodes, 500, is filtered and scored on one thread).
    pub parallel_min_work: u64,
    /// Tie-break among equal top scores.
    pub tie_break: TieBreak,
    /// Seed of the tie-break generator.
    pub seed: u64,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            percentage_of_nodes_to_score: 0,
            parallelism: std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
            parallel_min_nodes: 1000,
            parallel_min_work: 300_000,
            tie_break: TieBreak::Random,
            seed: 0x5eed,
        }
    }
}

/// Why a scheduling cycle did not produce a binding.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ScheduleError {
    /// No node fits (PostFilter may have nominated one).
    #[error(transparent)]
    Unschedulable(Box<FitError>),
    /// The cluster has no nodes.
    #[error("no nodes available to schedule pods")]
    NoNodes,
    /// A plugin failed with an `Error` (or panicked), or Reserve/Permit rejected.
    #[error("pod {pod}: {status}")]
    Plugin {
        /// `namespace/name`.
        pod: String,
        /// The failing status, with the plugin's name.
        status: Status,
    },
    /// No profile serves the pod's `schedulerName`.
    #[error("no profile for scheduler name {0:?}")]
    NoProfile(String),
    /// The pod is invalid.
    #[error(transparent)]
    InvalidPod(#[from] PodError),
    /// The cache refused the assumption (e.g. the pod is already there).
    #[error(transparent)]
    Cache(#[from] CacheError),
}

impl ScheduleError {
    /// The fit error, when the pod fits nowhere.
    pub fn fit_error(&self) -> Option<&FitError> {
        match self {
            ScheduleError::Unschedulable(f) => Some(f),
            _ => None,
        }
    }
}
