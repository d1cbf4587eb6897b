//! NodeResourcesFit and NodeResourcesBalancedAllocation
//! (upstream `pkg/scheduler/framework/plugins/noderesources`).

mod balance;
mod balanced_allocation;
#[cfg(test)]
mod column_tests;
mod fit;
mod scoring;

pub(crate) use balance::cpu_memory_balance_alone;
pub use balanced_allocation::{BalancedAllocation, BalancedAllocationArgs, BalancedScoring};
pub use fit::{DeviceClassResolver, Fit, FitArgs, InsufficientResource};
pub use scoring::{
    MAX_SCORED_RESOURCES, RequestedToCapacityRatioParam, ResourceSpec, ScoringStrategy, ScoringStrategyType,
    UtilizationShapePoint,
};

/// Why plugin arguments were rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArgsError {
    /// A resource weight outside 1..=100.
    #[error("{path}: resource weight of {resource} must be in 1..=100, got {weight}")]
    Weight {
        /// Field path.
        path: String,
        /// Resource name.
        resource: String,
        /// Weight given.
        weight: i64,
    },
    /// RequestedToCapacityRatio shape points must be sorted and in range.
    #[error("{path}: {message}")]
    Shape {
        /// Field path.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// An ignored resource group contains `/`.
    #[error("ignoredResourceGroups[{index}]: {group:?} must not contain \"/\"")]
    ResourceGroup {
        /// Position.
        index: usize,
        /// The group.
        group: String,
    },
    /// More resources than a score supports.
    #[error("{path}: at most {max} resources may be scored, got {count}", max = scoring::MAX_SCORED_RESOURCES)]
    TooManyResources {
        /// Field path.
        path: String,
        /// How many were given.
        count: usize,
    },
    /// The args could not be read.
    #[error("{0}")]
    Decode(String),
}

/// The requests fragment Fit and BalancedAllocation share (upstream
/// `computePodResourceRequest` under `RESOURCES_SIGNER`): the requests Filter checks
/// and the requests Score weighs, with or without pod-level resources.
fn sign_requests(pod: &crate::snapshot::PodInfo, pod_level: bool, fragments: &mut crate::framework::SignFragments) {
    fragments.add(crate::framework::RESOURCES_SIGNER, |w| {
        w.resources(pod.requests_for(pod_level)).resources(pod.scoring_requests_for(pod_level));
        w.resources(pod.non_zero_requests_for(pod_level));
    });
}
