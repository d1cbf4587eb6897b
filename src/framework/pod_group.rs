//! The v1.36 pod-group contract (upstream `k8s.io/kube-scheduler/framework` v0.36.0
//! `PodGroupInfo`, `Placement`, `PodGroupAssignments`, `PlacementGeneratePlugin`,
//! `PlacementScorePlugin`, and the scheduler's `PodGroupManager`): what the pod-group
//! scheduling cycle hands to placement plugins and what plugins read about groups.

use std::sync::Arc;

use ahash::AHashMap;
use parking_lot::RwLock;

use super::interface::Plugin;
use super::{CycleState, Status};
use crate::model::workload::PodGroup;
use crate::snapshot::{NodeList, PodGroupState, PodGroupStates, PodInfo, Snapshot};

/// Highest score a placement plugin may give after normalization (upstream `MaxScore`).
pub const MAX_PLACEMENT_SCORE: i64 = 100;
/// Lowest placement score (upstream `MinScore`).
pub const MIN_PLACEMENT_SCORE: i64 = 0;

/// The PodGroup objects the scheduler knows and their members' states (upstream
/// `fwk.PodGroupManager`: `PodGroups()` and `PodGroupStates()`). On the
/// [`Handle`](super::Handle); the scheduler's cache records member states in it.
///
/// ```
/// use std::sync::Arc;
/// use schedkit::framework::Handle;
/// use schedkit::model::workload::PodGroup;
/// use schedkit::snapshot::{MemberState, PodInfo};
/// use schedkit::testing::PodBuilder;
/// let handle = Handle::default();
/// let groups = handle.pod_groups();
/// groups.set_pod_group(PodGroup::gang("default", "job", 2));
/// let pod = Arc::new(PodInfo::new(PodBuilder::new("w0").pod_group_name("job").build()).unwrap());
/// groups.states().set(&pod, MemberState::Unscheduled);
/// assert_eq!(groups.state("default", "job").unwrap().all_pods_count(), 1);
/// assert_eq!(groups.pod_group("default", "job").unwrap().min_count(), Some(2));
/// ```
#[derive(Debug, Default)]
pub struct PodGroupManager {
    objects: RwLock<AHashMap<String, Arc<PodGroup>>>,
    states: Arc<PodGroupStates>,
}

fn key(namespace: &str, name: &str) -> String {
    format!("{}/{name}", if namespace.is_empty() { "default" } else { namespace })
}

impl PodGroupManager {
    /// The PodGroup object `namespace/name` (upstream `PodGroups().Get`).
    pub fn pod_group(&self, namespace: &str, name: &str) -> Option<Arc<PodGroup>> {
        crate::snapshot::pod_groups::with_group_key(namespace, name, |k| self.objects.read().get(k).cloned())
    }

    /// Whether the PodGroup `namespace/name` exists, with its gang `minCount` (`None`
    /// for a group without one) and how many members are known; the key is built
    /// once for both lookups: GangScheduling's PreEnqueue asks this of every gated
    /// sibling each time one more member is added.
    pub(crate) fn quorum(&self, namespace: &str, name: &str) -> Option<(Option<i32>, usize)> {
        crate::snapshot::pod_groups::with_group_key(namespace, name, |k| {
            // One lock at a time: the object lock is released before the states'.
            let min = self.objects.read().get(k).map(|pg| pg.min_count())?;
            Some((min, self.states.with_key(k, |s| s.map_or(0, PodGroupState::all_pods_count))))
        })
    }

    /// The PodGroup `pod` names in `spec.schedulingGroup`, if it exists.
    pub fn pod_group_of(&self, pod: &PodInfo) -> Option<Arc<PodGroup>> {
        self.pod_group(&pod.pod.metadata.namespace, pod.pod.scheduling_group_name()?)
    }

    /// Adds or replaces a PodGroup object; returns the one it replaced.
    pub fn set_pod_group(&self, group: PodGroup) -> Option<Arc<PodGroup>> {
        let k = key(group.namespace(), group.name());
        self.objects.write().insert(k, Arc::new(group))
    }

    /// Removes a PodGroup object; returns it.
    pub fn remove_pod_group(&self, namespace: &str, name: &str) -> Option<Arc<PodGroup>> {
        self.objects.write().remove(&key(namespace, name))
    }

    /// Number of PodGroup objects.
    pub fn len(&self) -> usize {
        self.objects.read().len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The member states (upstream `PodGroupStates()`), shared with the cache.
    pub fn states(&self) -> &Arc<PodGroupStates> {
        &self.states
    }

    /// A copy of group `namespace/name`'s member states.
    pub fn state(&self, namespace: &str, name: &str) -> Option<PodGroupState> {
        self.states.get(namespace, name)
    }
}

/// A pod group as the pod-group cycle hands it to plugins (upstream `PodGroupInfo`,
/// v1.36: a read-only input): the object and its unscheduled pods in the order the
/// cycle tries them (priority descending, then first enqueue time).
#[derive(Debug, Clone)]
pub struct PodGroupInfo {
    /// The PodGroup object.
    pub pod_group: Arc<PodGroup>,
    /// Its unscheduled pods in cycle order (upstream `GetUnscheduledPods`).
    pub unscheduled_pods: Vec<Arc<PodInfo>>,
}

impl PodGroupInfo {
    /// The group's namespace.
    pub fn namespace(&self) -> &str {
        self.pod_group.namespace()
    }
    /// The group's name.
    pub fn name(&self) -> &str {
        self.pod_group.name()
    }
}

/// State shared by the plugins of one pod-group cycle (upstream `PodGroupCycleState`):
/// a typed map like [`CycleState`], plus whether plugin metrics are recorded.
#[derive(Debug, Clone, Default)]
pub struct PodGroupCycleState {
    data: CycleState,
    record_plugin_metrics: bool,
}

impl PodGroupCycleState {
    /// An empty state.
    pub fn new() -> PodGroupCycleState {
        PodGroupCycleState::default()
    }
    /// The typed map (upstream `Read`).
    pub fn data(&self) -> &CycleState {
        &self.data
    }
    /// The typed map, to write or delete (upstream `Write`/`Delete`).
    pub fn data_mut(&mut self) -> &mut CycleState {
        &mut self.data
    }
    /// Whether the cycle records plugin metrics (upstream `ShouldRecordPluginMetrics`;
    /// the placement algorithm always does).
    pub fn should_record_plugin_metrics(&self) -> bool {
        self.record_plugin_metrics
    }
    /// Sets [`PodGroupCycleState::should_record_plugin_metrics`].
    pub fn set_record_plugin_metrics(&mut self, on: bool) {
        self.record_plugin_metrics = on;
    }
}

/// A set of nodes the whole group must fit in (upstream `Placement{Name, Nodes}`),
/// as positions in the cycle's snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// Its name (a topology domain's label value, or the parent's name).
    pub name: String,
    /// Node positions in [`Snapshot::nodes`], in snapshot order.
    pub nodes: Vec<usize>,
}

impl Placement {
    /// Every node of `snapshot`, the parent placement generators start from.
    pub fn all(snapshot: &Snapshot) -> Placement {
        Placement { name: String::new(), nodes: (0..snapshot.len()).collect() }
    }

    /// The placement's nodes in `snapshot`.
    pub fn node_list<'a>(&'a self, snapshot: &'a Snapshot) -> NodeList<'a> {
        NodeList::new(snapshot, &self.nodes)
    }
}

/// One pod's node in a feasible placement (upstream `ProposedAssignment`).
#[derive(Debug, Clone)]
pub struct ProposedAssignment {
    /// The pod.
    pub pod: Arc<PodInfo>,
    /// The node it would go to.
    pub node: String,
}

/// A feasible placement with the nodes the cycle found for the group's pods
/// (upstream `PodGroupAssignments`: only pods that got a node).
#[derive(Debug, Clone)]
pub struct PodGroupAssignments {
    /// The placement.
    pub placement: Arc<Placement>,
    /// The pods that fit, with their nodes.
    pub proposed: Vec<ProposedAssignment>,
}

/// A placement's score from one plugin (upstream `PlacementScore`), normalized in
/// place by [`PlacementScorePlugin::normalize_placement_score`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlacementScore {
    /// The placement's name.
    pub placement: String,
    /// The score.
    pub score: i64,
}

/// Proposes placements for a pod group (upstream `PlacementGeneratePlugin`), called
/// once per pod-group cycle when `TopologyAwareWorkloadScheduling` is on, on the
/// scheduling thread. Placements may overlap; an empty list means none is valid.
/// Codes: Success, Error (aborts the cycle), Unschedulable.
pub trait PlacementGeneratePlugin: Plugin {
    /// Placements within `parent` (all nodes, or a previous generator's placement).
    fn generate_placements(
        &self,
        state: &mut PodGroupCycleState,
        group: &PodGroupInfo,
        snapshot: &Snapshot,
        parent: &Placement,
    ) -> Result<Vec<Placement>, Status>;
}

/// Ranks feasible placements (upstream `PlacementScorePlugin`); called only when more
/// than one placement is feasible. `normalize_placement_score` runs once over all of
/// this plugin's scores and must leave each in
/// `MIN_PLACEMENT_SCORE..=MAX_PLACEMENT_SCORE`; the framework multiplies by the weight.
pub trait PlacementScorePlugin: Plugin {
    /// Scores one feasible placement.
    fn score_placement(
        &self,
        state: &PodGroupCycleState,
        group: &PodGroupInfo,
        assignments: &PodGroupAssignments,
    ) -> Result<i64, Status>;

    /// Rescales this plugin's scores in place (upstream `NormalizePlacementScore`;
    /// default: leave them).
    fn normalize_placement_score(
        &self,
        _state: &PodGroupCycleState,
        _group: &PodGroupInfo,
        _scores: &mut [PlacementScore],
    ) -> Status {
        Status::SUCCESS
    }

    /// The highest raw score this plugin can give any placement of this cycle, when
    /// it is known before the placements are evaluated (default: unknown). Not in
    /// upstream: it lets the cycle stop early without changing which placement can
    /// win.
    ///
    /// The promise: no placement scores above it, and whenever some placement
    /// reaches it, exactly the placements that reach it get the highest normalized
    /// score of the set, and normalizing that set succeeds. When every weighted
    /// plugin of the profile names a bound, the cycle evaluates placements in a
    /// random order and stops at the first feasible one that reaches every bound:
    /// that one is uniformly drawn from the placements upstream would tie-break
    /// between. Otherwise every placement is evaluated.
    fn max_placement_score(&self, _state: &PodGroupCycleState, _group: &PodGroupInfo) -> Option<i64> {
        None
    }
}

impl PodGroupManager {
    /// Sets the `PodGroupScheduled` condition of `namespace/name` (upstream sets it with
    /// a status patch after each pod-group cycle): `None` is `True` with reason
    /// `Scheduled`; `Some((reason, message))` is `False`. A `True` condition is never
    /// turned back to `False`. `now` (the scheduler's clock, since the Unix epoch) is
    /// written as `lastTransitionTime` when the status changes.
    pub fn set_scheduled_condition(
        &self,
        namespace: &str,
        name: &str,
        failure: Option<(&str, String)>,
        now: std::time::Duration,
    ) {
        crate::snapshot::pod_groups::with_group_key(namespace, name, |k| {
            let mut objects = self.objects.write();
            let Some(pg) = objects.get_mut(k) else { return };
            Self::write_scheduled_condition(pg, failure, now);
        });
    }

    /// [`PodGroupManager::set_scheduled_condition`] on the object `pg` (copied on write
    /// only while another reference to it is held).
    fn write_scheduled_condition(pg: &mut Arc<PodGroup>, failure: Option<(&str, String)>, now: std::time::Duration) {
        use crate::model::workload::{Condition, POD_GROUP_SCHEDULED, REASON_SCHEDULED};
        let (status, reason, message) = match failure {
            None => ("True", REASON_SCHEDULED.to_owned(), String::new()),
            Some((r, m)) => ("False", r.to_owned(), m),
        };
        let current = pg.scheduled_condition();
        if current.is_some_and(|c| c.status == "True") {
            return;
        }
        if current.is_some_and(|c| c.status == status && c.reason == reason && c.message == message) {
            return;
        }
        let time = crate::model::timestamp::format_rfc3339(now.as_secs());
        let pg = Arc::make_mut(pg);
        let transition = match pg.scheduled_condition() {
            Some(c) if c.status == status => c.last_transition_time.clone(),
            _ => time,
        };
        pg.status.conditions.retain(|c| c.type_ != POD_GROUP_SCHEDULED);
        pg.status.conditions.push(Condition {
            type_: POD_GROUP_SCHEDULED.to_owned(),
            status: status.to_owned(),
            observed_generation: None,
            last_transition_time: transition,
            reason,
            message,
        });
    }
}
