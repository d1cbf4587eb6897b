//! The preemption evaluator that preemption plugins share (upstream
//! `pkg/scheduler/framework/preemption/preemption.go`), the nominated-pods table
//! later cycles consult (upstream `addNominatedPods` in
//! `pkg/scheduler/framework/runtime/framework.go`), and the [`Evictor`] the caller
//! implements.
//!
//! # How a preemption runs
//!
//! [`preempt`] is upstream's `Evaluator.Preempt` with the plugin-specific steps behind
//! [`PreemptionStrategy`] (upstream's `preemption.Interface`):
//!
//! 1. the pod must be eligible ([`PreemptionStrategy::pod_eligible_to_preempt_others`]);
//! 2. potential nodes are those whose Filter status was `Unschedulable` (never
//!    `UnschedulableAndUnresolvable`);
//! 3. starting at an offset, nodes are dry-run one by one until enough candidates are
//!    found ([`PreemptionStrategy::offset_and_num_candidates`]). A dry run is a
//!    [`DryRun`]: a clone of the cycle state (reference-count bumps; a plugin's value
//!    is copied only when its AddPod/RemovePod extension mutates it) and a copy of one
//!    [`NodeInfo`](crate::snapshot::NodeInfo). Nothing else is cloned;
//! 4. the best candidate is chosen by [`pick_one_node_for_preemption`];
//! 5. its victims are handed to the [`Evictor`], lower-priority pods nominated to the
//!    same node lose their nomination, and the pod's node is returned as the
//!    nominated node.
//!
//! Dry runs here are sequential (upstream runs them on 16 goroutines and stops when
//! enough candidates are found); the result is the same set of candidates upstream
//! finds when its workers finish in order.

mod candidates;
mod dry_run;
mod evaluator;
mod nominated;
mod services;
mod victims;
mod what_if;

pub use candidates::{Candidate, pick_one_node_for_preemption};
pub(crate) use dry_run::run_filters_with_nominated;
pub use dry_run::{DryRun, run_add_pod_extensions, run_remove_pod_extensions};
pub use evaluator::{
    CandidateSearch, PreemptionContext, PreemptionStrategy, default_pod_eligible, find_candidates, is_terminating,
    post_filter_preempt, potential_nodes, preempt,
};
pub use nominated::{NominatedPods, Nominator};
pub use services::{Evictor, PreemptionError, PreemptionServices, RecordingEvictor, RunningProfile};
pub use victims::{PdbBudgets, PdbTally, Victims, more_important, pod_start_time, reprieve, select_victims_on_node};
pub use what_if::{filter_statuses, pre_filter_state};
