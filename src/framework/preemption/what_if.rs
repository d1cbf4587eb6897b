//! What-if helpers for tests, simulators and benches: a pod's PreFilter state and
//! every node's Filter status, as a cycle would compute them.

use std::sync::Arc;

use super::RunningProfile;
use crate::framework::runtime;
use crate::framework::{CycleState, NodeToStatus, Profile, Status};
use crate::snapshot::{PodInfo, Snapshot};

/// Runs the profile's PreFilter for `pod` as the scheduler does and returns the
/// state with its status (`Unschedulable` leaves a usable state, as upstream runs
/// the remaining PreFilters for preemption's sake). Also writes the
/// [`RunningProfile`], so the state is ready for a PostFilter call.
pub fn pre_filter_state(profile: &Arc<Profile>, pod: &PodInfo, snapshot: &Snapshot) -> (CycleState, Status) {
    let mut state = CycleState::new();
    let s = match runtime::run_pre_filter(profile, &mut state, pod, snapshot) {
        Ok(_) => Status::SUCCESS,
        Err(s) => s,
    };
    RunningProfile::write(&mut state, profile.clone());
    (state, s)
}

/// Filter statuses of every node that rejects `pod` (no sampling, nominated pods
/// not counted): the [`NodeToStatus`] a PostFilter would get when no node fits.
pub fn filter_statuses(profile: &Profile, state: &CycleState, pod: &PodInfo, snapshot: &Snapshot) -> NodeToStatus {
    let current = std::cell::Cell::new(0);
    let statuses = snapshot
        .nodes()
        .iter()
        .enumerate()
        .filter_map(|(i, n)| {
            let s = runtime::run_filters(profile, state, pod, n, &current);
            (!s.is_success()).then_some((i, s))
        })
        .collect();
    NodeToStatus { statuses, absent: None }
}
