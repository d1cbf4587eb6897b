//! TopologicalSort, the network-aware QueueSort plugin (scheduler-plugins
//! `pkg/networkaware/topologicalsort/topologicalsort.go`).

use std::sync::Arc;

use super::store::NetworkAwareStore;
use super::{APP_GROUP_LABEL, APP_GROUP_SELECTOR_LABEL, NetworkAwareError, TopologicalSortArgs};
use crate::framework::{ExtensionPoints, Handle, Plugin, QueueSortPlugin, QueuedPodInfo};
use crate::model::Symbol;
use crate::plugins::names;
use crate::plugins::priority_sort::PrioritySort;
use crate::snapshot::PodInfo;

/// Orders the pods of one AppGroup by their workloads' places in the AppGroup's
/// `status.topologyOrder` (lower first); pods of different AppGroups, or of none, as
/// [`PrioritySort`] does.
///
/// As upstream, `less(a, b)` for two pods of the same AppGroup is `order(a) <= order(b)`
/// (so two pods of one workload are each "less" than the other, which the queue's heap
/// tolerates), and a workload missing from the order counts as -1, ahead of the rest.
/// Where upstream dereferences a missing AppGroup (a crash), this falls back to
/// PrioritySort.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use schedkit::framework::{Handle, QueueSortPlugin, QueuedPodInfo};
/// use schedkit::plugins::network_aware::{AppGroup, NetworkAwareStore, TopologicalSort, TopologicalSortArgs};
/// use schedkit::snapshot::PodInfo;
/// use schedkit::testing::PodBuilder;
///
/// let store = Arc::new(NetworkAwareStore::new());
/// let ag: AppGroup = serde_json::from_value(serde_json::json!({
///     "metadata": {"name": "basic"},
///     "spec": {"numMembers": 2, "topologySortingAlgorithm": "KahnSort", "workloads": [
///         {"workload": {"kind": "Deployment", "name": "p1", "selector": "p1"},
///          "dependencies": [{"workload": {"kind": "Deployment", "name": "p2", "selector": "p2"}}]},
///         {"workload": {"kind": "Deployment", "name": "p2", "selector": "p2"}}]}
/// })).unwrap();
/// store.add_app_group(ag.with_topology_order()).unwrap();
/// let plugin = TopologicalSort::new(store, &TopologicalSortArgs::default());
/// let q = |sel: &str| QueuedPodInfo {
///     pod: Arc::new(PodInfo::new(PodBuilder::new(sel)
///         .label("appgroup.diktyo.x-k8s.io", "basic")
///         .label("appgroup.diktyo.x-k8s.io.workload", sel).build()).unwrap()),
///     timestamp: Duration::ZERO, attempts: 0, initial_attempt_timestamp: Duration::ZERO, signature: None,
/// };
/// assert!(plugin.less(&q("p1"), &q("p2")), "p1 depends on p2: KahnSort puts p1 first");
/// assert!(!plugin.less(&q("p2"), &q("p1")));
/// ```
#[derive(Debug)]
pub struct TopologicalSort {
    store: Arc<NetworkAwareStore>,
    namespaces: Vec<Symbol>,
    label: Symbol,
    selector_label: Symbol,
}

impl TopologicalSort {
    /// The plugin over `store`.
    pub fn new(store: Arc<NetworkAwareStore>, args: &TopologicalSortArgs) -> TopologicalSort {
        TopologicalSort {
            store,
            namespaces: args.namespaces.iter().map(|n| Symbol::intern(n)).collect(),
            label: Symbol::intern(APP_GROUP_LABEL),
            selector_label: Symbol::intern(APP_GROUP_SELECTOR_LABEL),
        }
    }

    /// From a profile's args, over the [`NetworkAwareStore`] shared on the handle.
    pub fn from_config(args: Option<&serde_json::Value>, handle: &Handle) -> Result<Self, NetworkAwareError> {
        let args = TopologicalSortArgs::from_config(args)?;
        let store = handle
            .shared::<NetworkAwareStore>()
            .ok_or(NetworkAwareError::NoStore { plugin: names::TOPOLOGICAL_SORT })?;
        Ok(TopologicalSort::new(store, &args))
    }

    fn label(pod: &PodInfo, key: Symbol) -> Symbol {
        pod.pod.metadata.labels.get(key).unwrap_or(Symbol::EMPTY)
    }
}

impl Plugin for TopologicalSort {
    fn name(&self) -> &str {
        names::TOPOLOGICAL_SORT
    }
    fn register(self: Arc<Self>, points: &mut ExtensionPoints) {
        points.queue_sort(self);
    }
}

impl QueueSortPlugin for TopologicalSort {
    fn less(&self, a: &QueuedPodInfo, b: &QueuedPodInfo) -> bool {
        let (ga, gb) = (Self::label(&a.pod, self.label), Self::label(&b.pod, self.label));
        if ga != gb || ga.is_empty() {
            return PrioritySort.less(a, b);
        }
        let Some(ag) = self.store.find_app_group(&self.namespaces, ga) else {
            return PrioritySort.less(a, b);
        };
        let oa = ag.pod_order(Self::label(&a.pod, self.selector_label).as_str());
        let ob = ag.pod_order(Self::label(&b.pod, self.selector_label).as_str());
        oa <= ob
    }
}
