//! [`FrameworkRunner`]: a profile, a handle and a snapshot, with every extension
//! point runnable on its own, as upstream's `frameworkruntime.NewFramework` gives a
//! Go plugin's tests; and [`Profile::plugins_at`], the typed listing of a profile.

use std::sync::Arc;

use super::runtime::{self, FilterGuard};
use super::{
    ConfigError, CycleState, ExtensionPoint, Handle, NodeScore, NodeToStatus, PermitOutcome, PostFilterResult,
    PreFilterOutcome, Profile, ProfileConfig, Registry, RunningProfile, Status,
};
use crate::snapshot::{NodeInfo, NodeList, PodInfo, Snapshot};

/// A plugin as a profile runs it at one extension point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PluginAt {
    /// The plugin's name.
    pub name: &'static str,
    /// Its Score weight: `Some` at [`ExtensionPoint::Score`] only. The scheduler
    /// multiplies the plugin's normalized scores by it.
    pub weight: Option<i64>,
}

impl Profile {
    /// The plugins this profile runs at `point`, in the order it runs them, with
    /// weights at Score (upstream's `ListPlugins`, one point at a time).
    ///
    /// ```
    /// use schedkit::framework::{ExtensionPoint, FilterFn, PluginAt, Profile, ScoreFn, Status};
    /// let p = Profile::builder("p")
    ///     .plugin(FilterFn::new("Fits", |_, _, _| Status::SUCCESS))
    ///     .weighted(ScoreFn::new("Pack", |_, _, _| 10), 3)
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(p.plugins_at(ExtensionPoint::Filter), [PluginAt { name: "Fits", weight: None }]);
    /// assert_eq!(p.plugins_at(ExtensionPoint::Score), [PluginAt { name: "Pack", weight: Some(3) }]);
    /// assert!(p.plugins_at(ExtensionPoint::Permit).is_empty());
    /// ```
    pub fn plugins_at(&self, point: ExtensionPoint) -> Vec<PluginAt> {
        let plain = |names: Vec<&'static str>| names.into_iter().map(|name| PluginAt { name, weight: None }).collect();
        match point {
            ExtensionPoint::PreEnqueue => plain(self.pre_enqueue_plugins()),
            ExtensionPoint::QueueSort => plain(self.queue_sort_plugin().into_iter().collect()),
            ExtensionPoint::PreFilter => plain(self.pre_filter_plugins()),
            ExtensionPoint::Filter => plain(self.filter_plugins()),
            ExtensionPoint::PostFilter => plain(self.post_filter_plugins()),
            ExtensionPoint::PreScore => plain(self.pre_score_plugins()),
            ExtensionPoint::Score => {
                self.score.iter().map(|s| PluginAt { name: s.name, weight: Some(s.weight) }).collect()
            }
            ExtensionPoint::Reserve => plain(self.reserve_plugins()),
            ExtensionPoint::Permit => plain(self.permit_plugins()),
            ExtensionPoint::PreBind => plain(self.pre_bind_plugins()),
            ExtensionPoint::Bind => plain(self.bind_plugins()),
            ExtensionPoint::PostBind => plain(self.post_bind_plugins()),
            ExtensionPoint::PlacementGenerate => plain(self.placement_generate_plugins()),
            ExtensionPoint::PlacementScore => {
                self.placement_score.iter().map(|(n, w)| PluginAt { name: n.name, weight: Some(*w) }).collect()
            }
        }
    }

    /// Every extension point with at least one plugin, in cycle order, with its
    /// plugins as [`Profile::plugins_at`] lists them: a profile's summary for
    /// tooling and docs.
    pub fn summary(&self) -> Vec<(ExtensionPoint, Vec<PluginAt>)> {
        ExtensionPoint::ALL.iter().map(|&p| (p, self.plugins_at(p))).filter(|(_, v)| !v.is_empty()).collect()
    }
}

/// The nodes that passed Filter and the statuses of those that did not.
#[derive(Debug, Clone, Default)]
pub struct Feasible {
    /// Positions (in [`Snapshot::nodes`]) of the nodes that passed, in snapshot order.
    pub nodes: Vec<usize>,
    /// Why the others failed, by position; nodes PreFilter left out are covered by
    /// [`NodeToStatus::absent`].
    pub statuses: NodeToStatus,
}

/// One Score plugin's scores over the nodes, as the scheduler computed them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginScores {
    /// The plugin.
    pub name: &'static str,
    /// Its weight.
    pub weight: i64,
    /// Scores before NormalizeScore.
    pub raw: Vec<NodeScore>,
    /// Scores after NormalizeScore (in `0..=MAX_NODE_SCORE`), before the weight.
    pub normalized: Vec<NodeScore>,
}

/// Score + NormalizeScore over a set of nodes (upstream `RunScorePlugins` and the
/// weighted sum `prioritizeNodes` takes).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ScoreReport {
    /// Per plugin that ran (PreScore's Skips left out), in profile order.
    pub plugins: Vec<PluginScores>,
    /// Per node: the sum of normalized score × weight over the plugins. As in the
    /// scheduler, every node totals 1 when the profile has no Score plugin.
    pub totals: Vec<NodeScore>,
}

impl ScoreReport {
    /// The total of the node named `name`.
    pub fn total(&self, name: &str) -> Option<i64> {
        self.totals.iter().find(|s| s.name.as_str() == name).map(|s| s.score)
    }
}

/// A profile's plugins, run one extension point at a time on a snapshot, with the
/// real runtime's rules: PreFilter's Skip skips that plugin's Filter, PreScore's
/// Skip its Score, a narrowing PreFilter result limits the nodes, Score weights
/// apply to normalized scores, panics become `Error` statuses, Unreserve runs in
/// reverse. This is what upstream's `frameworkruntime.NewFramework` gives a Go
/// plugin author's tests; here it drives the same crate-private runtime the
/// scheduler runs.
///
/// ```
/// use schedkit::framework::{CycleState, FilterFn, FrameworkRunner, Profile, ScoreFn, Status};
/// use schedkit::snapshot::PodInfo;
/// use schedkit::testing::{ClusterBuilder, NodeBuilder, PodBuilder};
///
/// let profile = Profile::builder("default-scheduler")
///     .plugin(FilterFn::new("FitsCpu", |_, pod, node| {
///         let free = node.allocatable().milli_cpu - node.requested().milli_cpu;
///         if pod.requests.milli_cpu <= free { Status::SUCCESS } else { Status::unschedulable("Insufficient cpu") }
///     }))
///     .weighted(ScoreFn::new("MostCpu", |_, _, node| node.allocatable().milli_cpu / 1000), 2)
///     .build()
///     .unwrap();
/// let cluster = ClusterBuilder::new()
///     .node(NodeBuilder::new("small").milli_cpu(2000))
///     .node(NodeBuilder::new("big").milli_cpu(8000))
///     .build()
///     .unwrap();
/// let runner = FrameworkRunner::new(profile).with_snapshot(cluster);
/// let pod = PodInfo::new(PodBuilder::new("p").milli_cpu(3000).build()).unwrap();
///
/// let mut state = CycleState::new();
/// let pre = runner.run_pre_filter(&mut state, &pod).unwrap();
/// let feasible = runner.find_feasible(&state, &pod, &pre);
/// assert_eq!(feasible.nodes.len(), 1);
/// assert_eq!(runner.run_filter(&state, &pod, "small").reasons(), ["Insufficient cpu"]);
/// runner.run_pre_score(&mut state, &pod, &feasible.nodes);
/// let scores = runner.run_score(&state, &pod, &feasible.nodes).unwrap();
/// assert_eq!(scores.total("big"), Some(16)); // 8 × weight 2
/// ```
#[derive(Debug, Clone)]
pub struct FrameworkRunner {
    profile: Arc<Profile>,
    handle: Handle,
    snapshot: Arc<Snapshot>,
}

impl FrameworkRunner {
    /// A runner for `profile` on a fresh [`Handle`] with an empty snapshot.
    pub fn new(profile: Profile) -> Self {
        Self::with_handle(profile, Handle::default())
    }

    /// A runner for `profile` on `handle` (the one its plugins were built with),
    /// starting from the handle's current snapshot.
    pub fn with_handle(profile: Profile, handle: Handle) -> Self {
        let snapshot = handle.snapshot();
        FrameworkRunner { profile: Arc::new(profile), handle, snapshot }
    }

    /// Builds the profile from config through `registry` (user factories included)
    /// on `handle`, as the scheduler does from a `KubeSchedulerConfiguration` profile.
    pub fn from_config(registry: &Registry, cfg: &ProfileConfig, handle: Handle) -> Result<Self, ConfigError> {
        let profile = registry.build_profile(cfg, &handle)?;
        Ok(Self::with_handle(profile, handle))
    }

    /// Uses `snapshot` from now on and publishes it on the handle
    /// ([`Handle::set_snapshot`]), as the scheduler does at the start of a cycle.
    #[must_use]
    pub fn with_snapshot(mut self, snapshot: Snapshot) -> Self {
        self.set_snapshot(Arc::new(snapshot));
        self
    }

    /// [`FrameworkRunner::with_snapshot`] in place, for a shared snapshot.
    pub fn set_snapshot(&mut self, snapshot: Arc<Snapshot>) {
        self.handle.set_snapshot(snapshot.clone());
        self.snapshot = snapshot;
    }

    /// The profile.
    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    /// The handle the plugins see.
    pub fn handle(&self) -> &Handle {
        &self.handle
    }

    /// The snapshot the points run on.
    pub fn snapshot(&self) -> &Snapshot {
        &self.snapshot
    }

    /// Positions of every node of the snapshot (the node list PreScore and Score
    /// take when nothing was filtered).
    pub fn all_nodes(&self) -> Vec<usize> {
        (0..self.snapshot.len()).collect()
    }

    /// Positions of the named nodes in the snapshot, skipping unknown names.
    pub fn node_positions<'a>(&self, names: impl IntoIterator<Item = &'a str>) -> Vec<usize> {
        names.into_iter().filter_map(crate::model::Symbol::lookup).filter_map(|s| self.snapshot.index_of(s)).collect()
    }

    /// PreFilter (upstream `RunPreFilterPlugins`): the intersected node narrowing,
    /// or the status that ends the cycle. A Skip marks the plugin's Filter skipped
    /// in `state`; `Unschedulable` lets the remaining plugins run first.
    pub fn run_pre_filter(&self, state: &mut CycleState, pod: &PodInfo) -> Result<PreFilterOutcome, Status> {
        runtime::run_pre_filter(&self.profile, state, pod, &self.snapshot)
    }

    /// Filter on one node (upstream `RunFilterPlugins`): the first failing
    /// plugin's status, attributed to it, or success. Plugins PreFilter skipped
    /// don't run. `Error` when the snapshot has no node `node`.
    pub fn run_filter(&self, state: &CycleState, pod: &PodInfo, node: &str) -> Status {
        match self.snapshot.get(node) {
            Some(info) => self.run_filter_on(state, pod, info),
            None => Status::error(format!("node {node:?} is not in the runner's snapshot")),
        }
    }

    /// [`FrameworkRunner::run_filter`] on a node info directly.
    pub fn run_filter_on(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        let guard = FilterGuard::new(&self.profile);
        guard.run(|current| runtime::run_filters(&self.profile, state, pod, node, current)).unwrap_or_else(|s| s)
    }

    /// Filter on every node PreFilter left (all of them when `pre` doesn't
    /// narrow), in snapshot order, without sampling: the nodes that pass and the
    /// statuses of those that don't. Nodes outside `pre` get upstream's
    /// `UnschedulableAndUnresolvable` "node(s) didn't satisfy plugin(s)" status as
    /// [`NodeToStatus::absent`], naming the plugins that narrowed, as the scheduler.
    pub fn find_feasible(&self, state: &CycleState, pod: &PodInfo, pre: &PreFilterOutcome) -> Feasible {
        let narrowing = &pre.narrowing_plugins;
        let pre = &pre.result;
        let mut out = Feasible::default();
        let guard = FilterGuard::new(&self.profile);
        for (i, n) in self.snapshot.nodes().iter().enumerate() {
            if !pre.admits(&self.snapshot, i) {
                continue;
            }
            let s =
                guard.run(|current| runtime::run_filters(&self.profile, state, pod, n, current)).unwrap_or_else(|s| s);
            if s.is_success() {
                out.nodes.push(i);
            } else {
                out.statuses.statuses.push((i, s));
            }
        }
        if !pre.all_nodes() {
            out.statuses.absent = Some(Status::unresolvable(format!("node(s) didn't satisfy plugin(s) {narrowing:?}")));
        }
        out
    }

    /// PostFilter (upstream `RunPostFilterPlugins`): plugins run in order until one
    /// succeeds or errors. The profile is put in `state` for the duration
    /// ([`RunningProfile`]) so preemption can run its dry-run Filters, as in the
    /// scheduler.
    pub fn run_post_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        statuses: &NodeToStatus,
    ) -> (Option<PostFilterResult>, Status) {
        RunningProfile::write(state, self.profile.clone());
        let out = runtime::run_post_filter(&self.profile, state, pod, &self.snapshot, statuses, None);
        state.remove::<RunningProfile>();
        out
    }

    /// PreScore over the nodes at `nodes` (positions in the snapshot; upstream
    /// `RunPreScorePlugins`). A Skip marks the plugin's Score skipped in `state`.
    pub fn run_pre_score(&self, state: &mut CycleState, pod: &PodInfo, nodes: &[usize]) -> Status {
        let Some(nodes) = self.node_list(nodes) else { return self.out_of_range(nodes) };
        runtime::run_pre_score(&self.profile, state, pod, nodes, None)
    }

    /// Score and NormalizeScore of every Score plugin PreScore didn't skip over the
    /// nodes at `nodes`, with upstream's range check after normalizing and the
    /// weighted totals the scheduler picks the host by.
    pub fn run_score(&self, state: &CycleState, pod: &PodInfo, nodes: &[usize]) -> Result<ScoreReport, Status> {
        let Some(list) = self.node_list(nodes) else { return Err(self.out_of_range(nodes)) };
        let blank: Vec<NodeScore> = list.iter().map(|n| NodeScore { name: n.name(), score: 0 }).collect();
        let mut report = ScoreReport { plugins: Vec::new(), totals: blank.clone() };
        if !self.profile.has_score_plugins() {
            report.totals.iter_mut().for_each(|t| t.score = 1);
            return Ok(report);
        }
        for (pi, sp) in self.profile.score.iter().enumerate() {
            if state.skips_score(pi) {
                continue;
            }
            let mut scores = blank.clone();
            runtime::run_score_plugin(sp, state, pod, list, &mut scores, None)?;
            let raw = scores.clone();
            runtime::run_normalize(sp, state, pod, &mut scores, None)?;
            for (t, s) in report.totals.iter_mut().zip(&scores) {
                t.score += s.score * sp.weight;
            }
            report.plugins.push(PluginScores { name: sp.name, weight: sp.weight, raw, normalized: scores });
        }
        Ok(report)
    }

    /// Reserve on `node` (upstream `RunReservePluginsReserve`): stops at the first
    /// failure; the caller then runs [`FrameworkRunner::run_unreserve`], as the
    /// scheduler does.
    pub fn run_reserve(&self, state: &mut CycleState, pod: &PodInfo, node: &str) -> Status {
        runtime::run_reserve(&self.profile, state, pod, node, None)
    }

    /// Unreserve of every Reserve plugin, in reverse order (upstream
    /// `RunReservePluginsUnreserve`).
    pub fn run_unreserve(&self, state: &mut CycleState, pod: &PodInfo, node: &str) {
        runtime::run_unreserve_timed(&self.profile, state, pod, node, None);
    }

    /// Permit on `node` (upstream `RunPermitPlugins`): allow, wait (with each
    /// plugin's checked timeout) or reject. Waiting pods are not registered with
    /// the handle: that is the scheduler's business.
    pub fn run_permit(&self, state: &mut CycleState, pod: &PodInfo, node: &str) -> PermitOutcome {
        runtime::run_permit(&self.profile, state, pod, node, None)
    }

    /// The Filter plugins PreFilter's Skips left out for this cycle (upstream
    /// `CycleState.SkipFilterPlugins`), in profile order.
    pub fn skipped_filter_plugins(&self, state: &CycleState) -> Vec<&'static str> {
        let f = &self.profile.filter;
        f.iter().enumerate().filter(|&(i, _)| state.skips_filter(i)).map(|(_, p)| p.name).collect()
    }

    /// The Score plugins PreScore's Skips left out (upstream
    /// `CycleState.SkipScorePlugins`), in profile order.
    pub fn skipped_score_plugins(&self, state: &CycleState) -> Vec<&'static str> {
        let s = &self.profile.score;
        s.iter().enumerate().filter(|&(i, _)| state.skips_score(i)).map(|(_, p)| p.name).collect()
    }

    fn node_list<'a>(&'a self, nodes: &'a [usize]) -> Option<NodeList<'a>> {
        nodes.iter().all(|&i| i < self.snapshot.len()).then(|| NodeList::new(&self.snapshot, nodes))
    }

    fn out_of_range(&self, nodes: &[usize]) -> Status {
        let bad = nodes.iter().find(|&&i| i >= self.snapshot.len()).copied().unwrap_or_default();
        Status::error(format!("node position {bad} is outside the snapshot's {} nodes", self.snapshot.len()))
    }
}
