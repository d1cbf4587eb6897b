//! The plugin contract: one small trait per extension point
//! (upstream `pkg/scheduler/framework/interface.go`).
//!
//! A plugin is a struct implementing [`Plugin`] plus the extension-point traits it
//! needs; [`Plugin::register`] names those points once, and a profile places the
//! plugin at each of them. Calls happen on the scheduling thread except Filter and
//! Score, which may run on several threads at once for different nodes (hence
//! `&self`, `&CycleState` and `Send + Sync`). A panic inside any plugin call is
//! caught by the framework and becomes an `Error` status for that pod.

use std::sync::Arc;
use std::time::Duration;

use super::{CycleState, Status};
use crate::model::{Node, Symbol};
use crate::snapshot::{NodeInfo, NodeList, PodInfo, Snapshot};

/// What every plugin is: a name and the list of extension points it serves.
///
/// ```
/// use std::sync::Arc;
/// use schedkit::framework::*;
/// use schedkit::snapshot::{NodeInfo, PodInfo};
///
/// struct NoGpuNodes;
/// impl Plugin for NoGpuNodes {
///     fn name(&self) -> &str { "NoGpuNodes" }
///     fn register(self: Arc<Self>, points: &mut ExtensionPoints) { points.filter(self); }
/// }
/// impl FilterPlugin for NoGpuNodes {
///     fn filter(&self, _: &CycleState, _: &PodInfo, node: &NodeInfo) -> Status {
///         if node.allocatable().scalar_str("nvidia.com/gpu") > 0 {
///             Status::unresolvable("node has GPUs")
///         } else {
///             Status::SUCCESS
///         }
///     }
/// }
/// let profile = Profile::builder("default-scheduler").plugin(NoGpuNodes).build().unwrap();
/// assert_eq!(profile.filter_plugins(), ["NoGpuNodes"]);
/// ```
pub trait Plugin: Send + Sync + 'static {
    /// Unique name within a profile (upstream names for built-ins: see `plugins::names`).
    fn name(&self) -> &str;

    /// Hands the plugin, once per profile, to every extension point it implements,
    /// e.g. `points.pre_filter(self.clone()).filter(self)`.
    fn register(self: Arc<Self>, points: &mut ExtensionPoints);
}

/// Gates a pod's entry into the active queue (e.g. scheduling gates). Called when a
/// pod is added or updated; `Success` admits it, anything else keeps it waiting with
/// the status's reasons. Must be cheap: it runs on every pod event.
pub trait PreEnqueuePlugin: Plugin {
    /// Decides whether the pod may enter the active queue.
    fn pre_enqueue(&self, pod: &PodInfo) -> Status;
}

/// A pod waiting in the queue, with the facts queue ordering uses.
#[derive(Debug, Clone)]
pub struct QueuedPodInfo {
    /// The pod.
    pub pod: Arc<PodInfo>,
    /// When it was (last) added to the queue, by the scheduler's clock.
    pub timestamp: Duration,
    /// Scheduling attempts so far.
    pub attempts: u32,
    /// When it first entered the queue.
    pub initial_attempt_timestamp: Duration,
    /// Its signature under its profile, computed once as it enters the queue (and
    /// again when it is updated) while that profile batches; `None` otherwise
    /// (upstream `QueuedPodInfo.PodSignature`, v1.36).
    pub signature: Option<super::PodSignature>,
}

impl QueuedPodInfo {
    /// A pod entering the queue at `timestamp` for the first time, unsigned: what a
    /// QueueSort plugin's tests need.
    ///
    /// ```
    /// use std::{sync::Arc, time::Duration};
    /// use schedkit::{framework::QueuedPodInfo, snapshot::PodInfo, testing::PodBuilder};
    /// let pod = PodInfo::new(PodBuilder::new("p").build()).unwrap();
    /// let q = QueuedPodInfo::new(Arc::new(pod), Duration::from_secs(1));
    /// assert_eq!((q.attempts, q.initial_attempt_timestamp), (0, Duration::from_secs(1)));
    /// ```
    pub fn new(pod: Arc<PodInfo>, timestamp: Duration) -> QueuedPodInfo {
        QueuedPodInfo { pod, timestamp, attempts: 0, initial_attempt_timestamp: timestamp, signature: None }
    }
}

/// Orders the active queue. A profile has at most one.
pub trait QueueSortPlugin: Plugin {
    /// Whether `a` should be scheduled before `b`. Must be a strict weak order.
    fn less(&self, a: &QueuedPodInfo, b: &QueuedPodInfo) -> bool;

    /// An optional fast path: a key such that `less(a, b)` is exactly
    /// `(key(a), a.timestamp) < (key(b), b.timestamp)` for every pod. When a plugin
    /// returns `Some` for every pod, the queue orders by the cached keys and never
    /// calls `less` (PrioritySort returns `-priority`). The default, `None`, always
    /// uses `less`. Must not change while the pod is queued unless the pod is updated.
    fn sort_key(&self, _pod: &PodInfo) -> Option<i64> {
        None
    }
}

pub use super::pre_filter_result::PreFilterResult;

/// Runs once per cycle before Filter, with exclusive access to the cycle state.
///
/// Returns an optional node narrowing and a status: `Success`; `Skip` (this plugin's
/// Filter will not run for this pod); `Unschedulable`/`UnschedulableAndUnresolvable`
/// (the pod fits nowhere: the cycle ends); `Error`.
pub trait PreFilterPlugin: Plugin {
    /// Pre-computes what Filter needs.
    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status);

    /// Incremental updates of the PreFilter state when a dry run (preemption,
    /// nominated pods) adds or removes a pod on a node.
    fn extensions(&self) -> Option<&dyn PreFilterExtensions> {
        None
    }

    /// What [`PreFilterPlugin::pre_filter`] depends on for `pod`, so a pod-group
    /// member's PreFilter may be reused in the group's other placements (see
    /// [`PreReuse`](super::PreReuse)). Default:
    /// [`PreReuse::Never`](super::PreReuse::Never), always exact.
    fn pre_filter_reuse(&self, _pod: &PodInfo) -> super::PreReuse {
        super::PreReuse::Never
    }
}

/// Keeps a plugin's PreFilter state right while dry runs add or remove pods.
pub trait PreFilterExtensions: Send + Sync {
    /// `pod_to_add` is now on `node`.
    fn add_pod(&self, state: &mut CycleState, pod: &PodInfo, pod_to_add: &PodInfo, node: &NodeInfo) -> Status;
    /// `pod_to_remove` is no longer on `node`.
    fn remove_pod(&self, state: &mut CycleState, pod: &PodInfo, pod_to_remove: &PodInfo, node: &NodeInfo) -> Status;
}

/// Decides whether a pod may run on one node. Called for many nodes per cycle,
/// possibly in parallel: keep it allocation-free on success and read only `state`.
/// Legal codes: Success, Unschedulable, UnschedulableAndUnresolvable, Error.
pub trait FilterPlugin: Plugin {
    /// Checks one node.
    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status;

    /// Checks a chunk of at most 64 nodes at once: `statuses[i]` belongs to
    /// `nodes.get(i)`, and every entry is `Success` on entry. Leave the entries of
    /// the nodes that pass as they are, write the status of each node that fails (the
    /// same status [`FilterPlugin::filter`] returns for it), and return the mask of
    /// the nodes that failed: bit `i` set exactly when `statuses[i]` was written. The
    /// scheduler reads the statuses through the mask, so a chunk every node passes
    /// costs it nothing (debug builds check that the mask and the statuses agree).
    ///
    /// The scheduler's Filter loop runs the plugins plugin-major over chunks of the
    /// candidate nodes (each plugin sees only the nodes every earlier plugin
    /// passed), so one call here replaces up to 64 calls to `filter`: override it to
    /// read the plugin's [`CycleState`] entry and the pod once per chunk. The
    /// default calls `filter` for each node.
    fn filter_nodes(&self, state: &CycleState, pod: &PodInfo, nodes: NodeList<'_>, statuses: &mut [Status]) -> u64 {
        let all = nodes.snapshot().nodes();
        let n = nodes.len().min(statuses.len()).min(64);
        let mut failed = 0;
        for (i, &p) in nodes.indices()[..n].iter().enumerate() {
            let s = self.filter(state, pod, &all[p]);
            if !s.is_success() {
                statuses[i] = s;
                failed |= 1 << i;
            }
        }
        failed
    }
}

/// Per-node filter outcomes of a failed cycle, for PostFilter and error messages.
#[derive(Debug, Clone, Default)]
pub struct NodeToStatus {
    /// Statuses of nodes that were filtered out, by index in the snapshot.
    pub statuses: Vec<(usize, Status)>,
    /// The status of every node not listed (e.g. all nodes rejected by PreFilter).
    pub absent: Option<Status>,
}

impl NodeToStatus {
    /// The status of node `index`.
    pub fn get(&self, index: usize) -> Option<&Status> {
        self.statuses.iter().find(|(i, _)| *i == index).map(|(_, s)| s).or(self.absent.as_ref())
    }
}

/// What PostFilter achieved: usually a node nominated after preemption.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PostFilterResult {
    /// Node nominated for the pod.
    pub nominated_node_name: Option<String>,
}

/// Runs when no node passed Filter (e.g. preemption). `Success` with a nominated
/// node ends the PostFilter phase; `Unschedulable` lets the next one try.
pub trait PostFilterPlugin: Plugin {
    /// Tries to make room for the pod.
    fn post_filter(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
        statuses: &NodeToStatus,
    ) -> (Option<PostFilterResult>, Status);
}

/// Runs once per cycle before Score, with the feasible nodes; `Skip` skips its Score.
pub trait PreScorePlugin: Plugin {
    /// Pre-computes what Score needs.
    fn pre_score(&self, state: &mut CycleState, pod: &PodInfo, nodes: NodeList<'_>) -> Status;

    /// What [`PreScorePlugin::pre_score`] depends on for `pod`, so a pod-group member's
    /// PreScore may be reused in the group's other placements (see
    /// [`PreReuse`](super::PreReuse)). Default:
    /// [`PreReuse::Never`](super::PreReuse::Never), always exact.
    fn pre_score_reuse(&self, _pod: &PodInfo) -> super::PreReuse {
        super::PreReuse::Never
    }
}

/// A node's score from one plugin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeScore {
    /// Node name.
    pub name: Symbol,
    /// Score; after normalization it must be in `0..=MAX_NODE_SCORE`.
    pub score: i64,
}

/// Highest score a plugin may give after normalization (upstream `MaxNodeScore`).
pub const MAX_NODE_SCORE: i64 = 100;
/// Lowest score (upstream `MinNodeScore`).
pub const MIN_NODE_SCORE: i64 = 0;

/// Ranks feasible nodes. `score` runs per node (maybe in parallel); `normalize` runs
/// once per cycle over all of this plugin's scores and must leave each in
/// `0..=MAX_NODE_SCORE`; the framework multiplies by the plugin's weight.
pub trait ScorePlugin: Plugin {
    /// Scores one node.
    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status>;

    /// Scores a batch of nodes into `scores` (same order and length as `nodes`). The
    /// framework calls this, once per chunk of feasible nodes; the default calls
    /// [`ScorePlugin::score`] per node. Override it to read the cycle state once per
    /// batch instead of once per node — the same scores, fewer lookups.
    fn score_nodes(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: NodeList<'_>,
        scores: &mut [NodeScore],
    ) -> Result<(), Status> {
        for (slot, node) in scores.iter_mut().zip(nodes.iter()) {
            slot.score = self.score(state, pod, node)?;
        }
        Ok(())
    }

    /// `Some(v)` when every node of `nodes` gets `v` from Score and NormalizeScore this
    /// cycle (no node has what the plugin looks for): the scheduler adds `v` × weight to
    /// every total (range-checked) instead of calling [`ScorePlugin::score_nodes`] and
    /// [`ScorePlugin::normalize`], unless it keeps or times per-plugin scores. Default `None`.
    fn uniform_score(&self, _state: &CycleState, _pod: &PodInfo, _nodes: NodeList<'_>) -> Option<i64> {
        None
    }

    /// Rescales this plugin's scores in place (default: leave them as they are).
    fn normalize(&self, _state: &CycleState, _pod: &PodInfo, _scores: &mut [NodeScore]) -> Status {
        Status::SUCCESS
    }

    /// What [`ScorePlugin::normalize`] depends on, so identical pod-group members may
    /// reuse normalized scores (see [`NormalizeReuse`](super::NormalizeReuse)).
    /// Default: [`NormalizeReuse::Never`](super::NormalizeReuse::Never), always exact.
    fn normalize_reuse(&self) -> super::NormalizeReuse {
        super::NormalizeReuse::Never
    }
}

/// Claims plugin-side resources once a node is chosen, and releases them if any
/// later step fails. `unreserve` must be idempotent and must not fail: it runs for
/// every Reserve plugin, in reverse order, whenever the pod doesn't end up bound.
pub trait ReservePlugin: Plugin {
    /// Reserves for `pod` on `node`.
    fn reserve(&self, state: &mut CycleState, pod: &PodInfo, node: &str) -> Status;
    /// Undoes `reserve`.
    fn unreserve(&self, state: &mut CycleState, pod: &PodInfo, node: &str);
}

/// A Permit plugin's decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PermitDecision {
    /// Go ahead.
    Allow,
    /// Hold the pod until allowed through the waiting-pods registry, or rejected
    /// when the timeout passes (capped at 15 minutes, upstream `maxTimeout`).
    Wait(Duration),
    /// Don't bind; the status says why.
    Reject(Status),
}

/// The last gate before binding (e.g. gang scheduling holds pods here).
pub trait PermitPlugin: Plugin {
    /// Decides whether the pod may be bound to `node`.
    fn permit(&self, state: &mut CycleState, pod: &PodInfo, node: &str) -> PermitDecision;
}

/// Work before binding (e.g. attach volumes, publish device allocations). Runs in the
/// binding cycle, possibly on another thread; failure unreserves the pod.
pub trait PreBindPlugin: Plugin {
    /// Prepares the binding.
    fn pre_bind(&self, state: &mut CycleState, pod: &PodInfo, node: &str) -> Status;
}

/// Binds the pod to the node. `Skip` passes to the next Bind plugin.
pub trait BindPlugin: Plugin {
    /// Performs the binding.
    fn bind(&self, state: &mut CycleState, pod: &PodInfo, node: &str) -> Status;

    /// Something a driver may recognise (by downcasting) to do this plugin's binding
    /// itself, e.g. many bindings at once on an async task, instead of calling
    /// [`BindPlugin::bind`] (see [`crate::scheduler::ReadyToBind::delegate`]). Only
    /// for plugins that never skip. `None` (the default): always call `bind`.
    fn delegate(&self) -> Option<&dyn std::any::Any> {
        None
    }
}

/// Informational, after a successful bind.
pub trait PostBindPlugin: Plugin {
    /// Observes the binding.
    fn post_bind(&self, state: &CycleState, pod: &PodInfo, node: &str);
}

/// Kinds of objects cluster events are about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EventResource {
    /// Nodes.
    Node,
    /// Pods already assigned to nodes.
    AssignedPod,
    /// Pods not yet assigned.
    UnscheduledPod,
    /// Gangs: coscheduling's PodGroups, and v1.36 `scheduling.k8s.io` PodGroups.
    PodGroup,
    /// DRA claims.
    ResourceClaim,
    /// DRA slices.
    ResourceSlice,
    /// DRA device classes.
    DeviceClass,
    /// Elastic quotas.
    ElasticQuota,
    /// Anything a plugin defines, by name.
    Custom(&'static str),
    /// Every resource.
    Any,
}

/// What happened to the object, as bit flags (upstream `framework.ActionType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ActionType(pub u32);

impl ActionType {
    /// Created.
    pub const ADD: ActionType = ActionType(1);
    /// Deleted.
    pub const DELETE: ActionType = ActionType(1 << 1);
    /// Node allocatable changed.
    pub const UPDATE_NODE_ALLOCATABLE: ActionType = ActionType(1 << 2);
    /// Node labels changed.
    pub const UPDATE_NODE_LABEL: ActionType = ActionType(1 << 3);
    /// Node taints changed.
    pub const UPDATE_NODE_TAINT: ActionType = ActionType(1 << 4);
    /// Node schedulability (`unschedulable`) changed.
    pub const UPDATE_NODE_SCHEDULABLE: ActionType = ActionType(1 << 5);
    /// Pod labels changed.
    pub const UPDATE_POD_LABEL: ActionType = ActionType(1 << 6);
    /// Pod requests went down.
    pub const UPDATE_POD_SCALE_DOWN: ActionType = ActionType(1 << 7);
    /// Pod tolerations changed.
    pub const UPDATE_POD_TOLERATIONS: ActionType = ActionType(1 << 8);
    /// Pod scheduling gates changed.
    pub const UPDATE_POD_SCHEDULING_GATES: ActionType = ActionType(1 << 9);
    /// Any other update.
    pub const UPDATE_OTHER: ActionType = ActionType(1 << 10);
    /// Any update.
    pub const UPDATE: ActionType = ActionType(((1 << 11) - 1) & !0b11);
    /// Everything.
    pub const ALL: ActionType = ActionType(u32::MAX);

    /// Whether the two share any flag.
    pub fn intersects(self, other: ActionType) -> bool {
        self.0 & other.0 != 0
    }
}

impl std::ops::BitOr for ActionType {
    type Output = ActionType;
    fn bitor(self, rhs: ActionType) -> ActionType {
        ActionType(self.0 | rhs.0)
    }
}

/// An event that may make rejected pods schedulable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ClusterEvent {
    /// About what.
    pub resource: EventResource,
    /// What happened.
    pub action: ActionType,
}

impl ClusterEvent {
    /// Whether `self` (something that happened) is covered by `registered` (what a
    /// plugin said it cares about).
    pub fn matches(&self, registered: &ClusterEvent) -> bool {
        (registered.resource == EventResource::Any || registered.resource == self.resource)
            && registered.action.intersects(self.action)
    }
}

/// The objects an event carries, for queueing hints to inspect.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum EventObject {
    /// A node event.
    Node {
        /// Before (None on add).
        old: Option<Arc<Node>>,
        /// After (None on delete).
        new: Option<Arc<Node>>,
    },
    /// A pod event.
    Pod {
        /// Before (None on add).
        old: Option<Arc<PodInfo>>,
        /// After (None on delete).
        new: Option<Arc<PodInfo>>,
    },
    /// A v1.36 PodGroup event.
    PodGroup {
        /// Before (None on add).
        old: Option<Arc<crate::model::workload::PodGroup>>,
        /// After (None on delete).
        new: Option<Arc<crate::model::workload::PodGroup>>,
    },
    /// A custom event; the name says what changed.
    Custom(String),
}

/// A queueing hint's verdict on whether an event may help a rejected pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueingHint {
    /// Move the pod back to be retried.
    Queue,
    /// The event doesn't help this pod.
    Skip,
}

/// Decides, for a pod this plugin rejected, whether an event may make it schedulable.
pub type QueueingHintFn = Arc<dyn Fn(&PodInfo, &EventObject) -> QueueingHint + Send + Sync>;

/// An event a plugin registers for, with an optional hint (none means always Queue).
#[derive(Clone)]
pub struct ClusterEventWithHint {
    /// The event.
    pub event: ClusterEvent,
    /// The hint.
    pub hint: Option<QueueingHintFn>,
}

impl std::fmt::Debug for ClusterEventWithHint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterEventWithHint").field("event", &self.event).field("hint", &self.hint.is_some()).finish()
    }
}

/// Which events can make pods this plugin rejected schedulable again.
pub trait EnqueueExtensions: Plugin {
    /// The events, with optional hints.
    fn events_to_register(&self) -> Vec<ClusterEventWithHint>;
}

/// Told about every pod the scheduler learns of or forgets, scheduled or not.
///
/// Not an upstream extension point: upstream plugins that need to count pods (e.g.
/// Coscheduling counting a gang's members) watch them through informers; an
/// embedded library has no informers, so the scheduler's event handle calls these
/// instead, on the thread that fed the event. Calls must be cheap and must not call
/// back into the scheduler. Default methods do nothing.
pub trait PodObserver: Plugin {
    /// A pod was added (unscheduled, or already assigned to a node).
    fn pod_added(&self, _pod: &PodInfo) {}
    /// A pod changed.
    fn pod_updated(&self, _old: &PodInfo, _new: &PodInfo) {}
    /// A pod was deleted.
    fn pod_deleted(&self, _pod: &PodInfo) {}
}

/// Told when a node leaves the cluster, so a plugin that keeps state per node (a
/// device table, a per-node cache) drops it and the node's name is freed.
///
/// Not an upstream extension point: upstream plugins keep such state in informer
/// caches, which forget a deleted node by themselves. An embedded library has no
/// informers, so [`SchedulerEvents::remove_node`](crate::scheduler::SchedulerEvents::remove_node)
/// calls this, on the thread that fed the event, after the node has left the cache.
/// As for [`PodObserver`]: calls must be cheap and must not call back into the
/// scheduler. Default methods do nothing.
pub trait NodeObserver: Plugin {
    /// The node named `name` was removed.
    fn node_removed(&self, _name: &str) {}
}

/// The extension points one plugin serves, filled by [`Plugin::register`].
#[derive(Default, Clone)]
pub struct ExtensionPoints {
    pub(crate) pre_enqueue: Option<Arc<dyn PreEnqueuePlugin>>,
    pub(crate) queue_sort: Option<Arc<dyn QueueSortPlugin>>,
    pub(crate) pre_filter: Option<Arc<dyn PreFilterPlugin>>,
    pub(crate) filter: Option<Arc<dyn FilterPlugin>>,
    pub(crate) post_filter: Option<Arc<dyn PostFilterPlugin>>,
    pub(crate) pre_score: Option<Arc<dyn PreScorePlugin>>,
    pub(crate) score: Option<Arc<dyn ScorePlugin>>,
    pub(crate) reserve: Option<Arc<dyn ReservePlugin>>,
    pub(crate) permit: Option<Arc<dyn PermitPlugin>>,
    pub(crate) pre_bind: Option<Arc<dyn PreBindPlugin>>,
    pub(crate) bind: Option<Arc<dyn BindPlugin>>,
    pub(crate) post_bind: Option<Arc<dyn PostBindPlugin>>,
    pub(crate) enqueue: Option<Arc<dyn EnqueueExtensions>>,
    pub(crate) pod_observer: Option<Arc<dyn PodObserver>>,
    pub(crate) node_observer: Option<Arc<dyn NodeObserver>>,
    pub(crate) sign: Option<Arc<dyn super::SignPlugin>>,
    pub(crate) placement_generate: Option<Arc<dyn super::PlacementGeneratePlugin>>,
    pub(crate) placement_score: Option<Arc<dyn super::PlacementScorePlugin>>,
}

macro_rules! point_setters {
    ($($field:ident: $tr:ident, $doc:literal;)*) => {
        impl ExtensionPoints {
            $(
                #[doc = $doc]
                pub fn $field(&mut self, p: Arc<dyn $tr>) -> &mut Self {
                    self.$field = Some(p);
                    self
                }
            )*
        }
    };
}

point_setters! {
    pre_enqueue: PreEnqueuePlugin, "Serves PreEnqueue.";
    queue_sort: QueueSortPlugin, "Serves QueueSort.";
    pre_filter: PreFilterPlugin, "Serves PreFilter.";
    filter: FilterPlugin, "Serves Filter.";
    post_filter: PostFilterPlugin, "Serves PostFilter.";
    pre_score: PreScorePlugin, "Serves PreScore.";
    score: ScorePlugin, "Serves Score.";
    reserve: ReservePlugin, "Serves Reserve and Unreserve.";
    permit: PermitPlugin, "Serves Permit.";
    pre_bind: PreBindPlugin, "Serves PreBind.";
    bind: BindPlugin, "Serves Bind.";
    post_bind: PostBindPlugin, "Serves PostBind.";
    enqueue: EnqueueExtensions, "Declares cluster events (EnqueueExtensions).";
    pod_observer: PodObserver, "Observes pod additions, updates and deletions.";
    node_observer: NodeObserver, "Observes node removals.";
}

impl ExtensionPoints {
    /// Serves PlacementGenerate (v1.36 pod-group placements).
    pub fn placement_generate(&mut self, p: Arc<dyn super::PlacementGeneratePlugin>) -> &mut Self {
        self.placement_generate = Some(p);
        self
    }

    /// Serves PlacementScore and NormalizePlacementScore (v1.36 pod-group placements).
    pub fn placement_score(&mut self, p: Arc<dyn super::PlacementScorePlugin>) -> &mut Self {
        self.placement_score = Some(p);
        self
    }
}

impl ExtensionPoints {
    /// Signs pods for opportunistic batching ([`super::SignPlugin`]). Every plugin at
    /// PreFilter, Filter, PreScore and Score must sign, or the profile never batches.
    pub fn sign(&mut self, p: Arc<dyn super::SignPlugin>) -> &mut Self {
        self.sign = Some(p);
        self
    }
}

/// The extension points, for configuration and error messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ExtensionPoint {
    /// PreEnqueue.
    PreEnqueue,
    /// QueueSort.
    QueueSort,
    /// PreFilter.
    PreFilter,
    /// Filter.
    Filter,
    /// PostFilter.
    PostFilter,
    /// PreScore.
    PreScore,
    /// Score.
    Score,
    /// Reserve.
    Reserve,
    /// Permit.
    Permit,
    /// PreBind.
    PreBind,
    /// Bind.
    Bind,
    /// PostBind.
    PostBind,
    /// PlacementGenerate (v1.36 pod groups).
    PlacementGenerate,
    /// PlacementScore (v1.36 pod groups).
    PlacementScore,
}

impl ExtensionPoint {
    /// All points, in cycle order, then the pod-group points.
    pub const ALL: [ExtensionPoint; 14] = [
        ExtensionPoint::PreEnqueue,
        ExtensionPoint::QueueSort,
        ExtensionPoint::PreFilter,
        ExtensionPoint::Filter,
        ExtensionPoint::PostFilter,
        ExtensionPoint::PreScore,
        ExtensionPoint::Score,
        ExtensionPoint::Reserve,
        ExtensionPoint::Permit,
        ExtensionPoint::PreBind,
        ExtensionPoint::Bind,
        ExtensionPoint::PostBind,
        ExtensionPoint::PlacementGenerate,
        ExtensionPoint::PlacementScore,
    ];

    /// Upstream's spelling in configuration (`preFilter`, `score`...).
    pub fn config_name(self) -> &'static str {
        match self {
            ExtensionPoint::PreEnqueue => "preEnqueue",
            ExtensionPoint::QueueSort => "queueSort",
            ExtensionPoint::PreFilter => "preFilter",
            ExtensionPoint::Filter => "filter",
            ExtensionPoint::PostFilter => "postFilter",
            ExtensionPoint::PreScore => "preScore",
            ExtensionPoint::Score => "score",
            ExtensionPoint::Reserve => "reserve",
            ExtensionPoint::Permit => "permit",
            ExtensionPoint::PreBind => "preBind",
            ExtensionPoint::Bind => "bind",
            ExtensionPoint::PostBind => "postBind",
            ExtensionPoint::PlacementGenerate => "placementGenerate",
            ExtensionPoint::PlacementScore => "placementScore",
        }
    }
}

impl ExtensionPoints {
    /// Whether the plugin serves `point`.
    pub fn serves(&self, point: ExtensionPoint) -> bool {
        match point {
            ExtensionPoint::PreEnqueue => self.pre_enqueue.is_some(),
            ExtensionPoint::QueueSort => self.queue_sort.is_some(),
            ExtensionPoint::PreFilter => self.pre_filter.is_some(),
            ExtensionPoint::Filter => self.filter.is_some(),
            ExtensionPoint::PostFilter => self.post_filter.is_some(),
            ExtensionPoint::PreScore => self.pre_score.is_some(),
            ExtensionPoint::Score => self.score.is_some(),
            ExtensionPoint::Reserve => self.reserve.is_some(),
            ExtensionPoint::Permit => self.permit.is_some(),
            ExtensionPoint::PreBind => self.pre_bind.is_some(),
            ExtensionPoint::Bind => self.bind.is_some(),
            ExtensionPoint::PostBind => self.post_bind.is_some(),
            ExtensionPoint::PlacementGenerate => self.placement_generate.is_some(),
            ExtensionPoint::PlacementScore => self.placement_score.is_some(),
        }
    }

    /// Drops the plugin from `point`.
    pub fn remove(&mut self, point: ExtensionPoint) {
        match point {
            ExtensionPoint::PreEnqueue => self.pre_enqueue = None,
            ExtensionPoint::QueueSort => self.queue_sort = None,
            ExtensionPoint::PreFilter => self.pre_filter = None,
            ExtensionPoint::Filter => self.filter = None,
            ExtensionPoint::PostFilter => self.post_filter = None,
            ExtensionPoint::PreScore => self.pre_score = None,
            ExtensionPoint::Score => self.score = None,
            ExtensionPoint::Reserve => self.reserve = None,
            ExtensionPoint::Permit => self.permit = None,
            ExtensionPoint::PreBind => self.pre_bind = None,
            ExtensionPoint::Bind => self.bind = None,
            ExtensionPoint::PostBind => self.post_bind = None,
            ExtensionPoint::PlacementGenerate => self.placement_generate = None,
            ExtensionPoint::PlacementScore => self.placement_score = None,
        }
    }
}

/// A closure as a Filter plugin, for tests and examples (like bevy systems).
///
/// ```
/// use schedkit::framework::{FilterFn, Profile, Status};
/// let f = FilterFn::new("EvenCpu", |_, _, node| {
///     if node.allocatable().milli_cpu % 2000 == 0 { Status::SUCCESS } else { Status::unschedulable("odd") }
/// });
/// let profile = Profile::builder("p").plugin(f).build().unwrap();
/// assert_eq!(profile.filter_plugins(), ["EvenCpu"]);
/// ```
pub struct FilterFn<F> {
    name: &'static str,
    f: F,
}

impl<F> FilterFn<F>
where
    F: Fn(&CycleState, &PodInfo, &NodeInfo) -> Status + Send + Sync + 'static,
{
    /// Wraps `f` as a plugin named `name`.
    pub fn new(name: &str, f: F) -> Self {
        FilterFn { name: Symbol::intern(name).as_str(), f }
    }
}

impl<F> Plugin for FilterFn<F>
where
    F: Fn(&CycleState, &PodInfo, &NodeInfo) -> Status + Send + Sync + 'static,
{
    fn name(&self) -> &str {
        self.name
    }
    fn register(self: Arc<Self>, points: &mut ExtensionPoints) {
        points.filter(self);
    }
}

impl<F> FilterPlugin for FilterFn<F>
where
    F: Fn(&CycleState, &PodInfo, &NodeInfo) -> Status + Send + Sync + 'static,
{
    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        (self.f)(state, pod, node)
    }
}

/// A closure as a Score plugin (scores must already be in `0..=100`).
pub struct ScoreFn<F> {
    name: &'static str,
    f: F,
}

impl<F> ScoreFn<F>
where
    F: Fn(&CycleState, &PodInfo, &NodeInfo) -> i64 + Send + Sync + 'static,
{
    /// Wraps `f` as a plugin named `name`.
    pub fn new(name: &str, f: F) -> Self {
        ScoreFn { name: Symbol::intern(name).as_str(), f }
    }
}

impl<F> Plugin for ScoreFn<F>
where
    F: Fn(&CycleState, &PodInfo, &NodeInfo) -> i64 + Send + Sync + 'static,
{
    fn name(&self) -> &str {
        self.name
    }
    fn register(self: Arc<Self>, points: &mut ExtensionPoints) {
        points.score(self);
    }
}

impl<F> ScorePlugin for ScoreFn<F>
where
    F: Fn(&CycleState, &PodInfo, &NodeInfo) -> i64 + Send + Sync + 'static,
{
    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        Ok((self.f)(state, pod, node))
    }
}
