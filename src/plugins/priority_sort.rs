//! PrioritySort, the default QueueSort plugin (upstream
//! `pkg/scheduler/framework/plugins/queuesort/priority_sort.go`): higher priority
//! first, then the pod that entered the queue earlier.

use std::sync::Arc;

use crate::framework::{ExtensionPoints, Plugin, QueueSortPlugin, QueuedPodInfo};
use crate::plugins::names;
use crate::snapshot::PodInfo;

/// Orders the active queue by priority (descending), then queue timestamp.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use schedkit::framework::{QueueSortPlugin, QueuedPodInfo};
/// use schedkit::plugins::priority_sort::PrioritySort;
/// use schedkit::snapshot::PodInfo;
/// use schedkit::testing::PodBuilder;
/// let q = |name: &str, prio: i32, t: u64| QueuedPodInfo {
///     pod: Arc::new(PodInfo::new(PodBuilder::new(name).priority(prio).build()).unwrap()),
///     timestamp: Duration::from_secs(t),
///     attempts: 0,
///     initial_attempt_timestamp: Duration::from_secs(t),
///     signature: None,
/// };
/// assert!(PrioritySort.less(&q("a", 10, 5), &q("b", 0, 1)), "priority wins");
/// assert!(PrioritySort.less(&q("a", 0, 1), &q("b", 0, 5)), "then the earlier");
/// assert!(!PrioritySort.less(&q("a", 0, 1), &q("b", 0, 1)), "a strict order");
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct PrioritySort;

impl Plugin for PrioritySort {
    fn name(&self) -> &str {
        names::PRIORITY_SORT
    }
    fn register(self: Arc<Self>, points: &mut ExtensionPoints) {
        points.queue_sort(self);
    }
}

impl QueueSortPlugin for PrioritySort {
    #[inline]
    fn less(&self, a: &QueuedPodInfo, b: &QueuedPodInfo) -> bool {
        let (pa, pb) = (a.pod.priority(), b.pod.priority());
        pa > pb || (pa == pb && a.timestamp < b.timestamp)
    }

    #[inline]
    fn sort_key(&self, pod: &PodInfo) -> Option<i64> {
        Some(-i64::from(pod.priority()))
    }
}
