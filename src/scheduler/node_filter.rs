//! One node through the cycle's Filter plugins, the step the serial and the parallel
//! Filter loops share (so neither loop's file depends on the other's).

use crate::framework::preemption::run_filters_with_nominated;
use crate::framework::{CycleState, Profile, Status, runtime};
use crate::snapshot::PodInfo;

/// One node through the cycle's Filters: the plain path, the timed path of a
/// sampled cycle, or (rare) the path that first adds nominated pods.
#[expect(clippy::inline_always, reason = "runs once per node in the serial and parallel Filter loops")]
#[expect(clippy::too_many_arguments, reason = "internal; the cycle's pieces")]
#[inline(always)]
pub(super) fn filter_node(
    active: &runtime::ActiveFilters<'_>,
    profile: &Profile,
    state: &CycleState,
    pod: &PodInfo,
    node: &crate::snapshot::NodeInfo,
    current: &std::cell::Cell<usize>,
    timers: Option<&crate::framework::metrics::PointTimers>,
    nominated: Option<&crate::framework::preemption::NominatedPods>,
) -> Status {
    match (timers, nominated) {
        (None, None) => runtime::run_active_filters(active, state, pod, node, current),
        (Some(t), None) => runtime::run_filters_timed(profile, state, pod, node, current, t),
        _ => run_filters_with_nominated(profile, state, pod, node, nominated, current),
    }
}
