//! NodeResourcesFit: does the node have room for the pod's requests, and how good a
//! fit is it (upstream `noderesources/fit.go`, `resource_allocation.go`).

use std::sync::Arc;

use ahash::AHashSet;
use serde::{Deserialize, Serialize};
use smallvec::SmallVec;

use super::ArgsError;
use super::scoring::{self, Resources as ScoredResources, Scorer, ScoringStrategy, ScoringStrategyType};
use crate::framework::Reason;
use crate::framework::{
    ActionType, ClusterEvent, ClusterEventWithHint, CycleState, EnqueueExtensions, EventObject, EventResource,
    ExtensionPoints, Feature, FeatureGates, FilterPlugin, NodeScore, Plugin, PreFilterPlugin, PreFilterResult,
    PreScorePlugin, QueueingHint, ScorePlugin, Status,
};
use crate::model::{Symbol, is_extended_resource_name, native_names};
use crate::plugins::helper::with_state;
use crate::plugins::names;
use crate::snapshot::{NodeInfo, NodeList, PodInfo, Snapshot};

/// `NodeResourcesFitArgs`.
///
/// ```
/// use schedkit::plugins::node_resources::{Fit, FitArgs};
/// let args: FitArgs = serde_json::from_str(r#"{
///   "ignoredResources": ["example.com/foo"],
///   "scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu", "weight": 3}]}
/// }"#).unwrap();
/// assert!(Fit::new(&args).is_ok());
/// let bad: FitArgs = serde_json::from_str(r#"{"scoringStrategy": {"type": "RequestedToCapacityRatio",
///   "requestedToCapacityRatio": {"shape": [{"utilization": 50, "score": 1}, {"utilization": 10, "score": 5}]}}}"#).unwrap();
/// assert!(Fit::new(&bad).unwrap_err().to_string().contains("sorted in increasing order"));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct FitArgs {
    /// Extended resources Filter ignores.
    pub ignored_resources: Vec<String>,
    /// Extended resource groups (the part before `/`) Filter ignores.
    pub ignored_resource_groups: Vec<String>,
    /// How Score ranks nodes (default LeastAllocated on cpu and memory).
    pub scoring_strategy: ScoringStrategy,
}

impl FitArgs {
    /// Upstream's defaulting of args read from a configuration
    /// (`SetDefaults_NodeResourcesFitArgs`, `pkg/scheduler/apis/config/v1/defaults.go`):
    /// an empty `scoringStrategy.resources` becomes `cpu` and `memory` with weight 1, and
    /// a weight of 0 becomes 1. [`Fit::from_config`] applies it; [`Fit::new`] takes args
    /// as given (upstream `NewFit`), so a strategy with no resources builds and its
    /// Score fails with "resources not found".
    ///
    /// ```
    /// use schedkit::plugins::node_resources::{FitArgs, ResourceSpec};
    /// let mut args: FitArgs =
    ///     serde_json::from_str(r#"{"scoringStrategy": {"type": "MostAllocated", "resources": []}}"#).unwrap();
    /// args.set_defaults();
    /// assert_eq!(args.scoring_strategy.resources, [ResourceSpec::new("cpu", 1), ResourceSpec::new("memory", 1)]);
    /// ```
    pub fn set_defaults(&mut self) {
        scoring::default_resource_specs(&mut self.scoring_strategy.resources);
    }
}

/// A resource the node lacks for the pod (upstream `InsufficientResource`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InsufficientResource {
    /// Resource name.
    pub resource: Symbol,
    /// Upstream's reason text, e.g. `Insufficient cpu` (borrowed: no allocation).
    pub reason: Reason,
    /// Requested by the pod.
    pub requested: i64,
    /// Already used on the node.
    pub used: i64,
    /// Allocatable.
    pub capacity: i64,
    /// The pod asks for more than the node has at all: preemption can't help.
    pub unresolvable: bool,
}

/// The NodeResourcesFit plugin.
#[derive(Debug, Clone)]
pub struct Fit {
    ignored: AHashSet<Symbol>,
    ignored_groups: AHashSet<String>,
    scored: ScoredResources,
    scorer: Scorer,
    /// Resolves extended resources backed by DRA device classes (KEP-5004).
    device_classes: Option<Arc<dyn DeviceClassResolver>>,
    /// The `PodLevelResources` gate.
    pod_level: bool,
    /// The `DRAExtendedResource` gate: while on, pods are not signed (upstream).
    dra_extended: bool,
}

/// Maps an extended resource name to the device class that serves it (KEP-5004;
/// upstream `fwk.DeviceClassResolver`). [`DraStore`](crate::dra::DraStore) implements it.
pub trait DeviceClassResolver: Send + Sync + std::fmt::Debug {
    /// The class serving `resource`, if any.
    fn device_class_for(&self, resource: &str) -> Option<String>;

    /// The devices behind the scored `resources` (in order) for one scheduling cycle,
    /// so Score can count a node's devices of a class: `None` (the default) when no
    /// class maps any of them, and then they score as plain extended resources.
    fn extended_device_counts(&self, resources: &[&str]) -> Option<crate::dra::ExtendedDeviceCounts> {
        let _ = resources;
        None
    }
}

impl DeviceClassResolver for crate::dra::DraStore {
    fn device_class_for(&self, resource: &str) -> Option<String> {
        self.device_class_for_resource(resource)
    }

    fn extended_device_counts(&self, resources: &[&str]) -> Option<crate::dra::ExtendedDeviceCounts> {
        crate::dra::DraStore::extended_device_counts(self, resources)
    }
}

/// The pod's requests as Filter needs them (written in PreFilter).
#[derive(Debug, Clone)]
struct FitState {
    milli_cpu: i64,
    memory: i64,
    ephemeral_storage: i64,
    /// Scalar requests not ignored by args, non-zero only, with their interned
    /// `Insufficient <name>` reason so a rejection allocates nothing, and whether a
    /// device class backs them (then a node that doesn't list them leaves them to
    /// DynamicResources).
    scalar: SmallVec<[(Symbol, i64, &'static str, bool); 2]>,
    has_any: bool,
    /// The `PodLevelResources` gate: which node totals to compare with.
    pod_level: bool,
}

/// The pod's requests in the order of the scored resources, and the cycle's view of
/// devices behind scored extended resources when a device class maps one the pod
/// requests (written in PreScore).
#[derive(Debug, Clone)]
struct FitScoreState(SmallVec<[i64; 4]>, Option<crate::dra::ExtendedDeviceCounts>);

impl Fit {
    /// Builds the plugin, validating the args like upstream `ValidateNodeResourcesFitArgs`.
    pub fn new(args: &FitArgs) -> Result<Fit, ArgsError> {
        for (index, g) in args.ignored_resource_groups.iter().enumerate() {
            if g.contains('/') {
                return Err(ArgsError::ResourceGroup { index, group: g.clone() });
            }
        }
        scoring::validate_resources("scoringStrategy.resources", &args.scoring_strategy.resources)?;
        if args.scoring_strategy.kind == ScoringStrategyType::RequestedToCapacityRatio {
            let shape = args.scoring_strategy.requested_to_capacity_ratio.as_ref().map(|r| r.shape.as_slice());
            scoring::validate_shape(shape.unwrap_or(&[]))?;
        }
        Ok(Fit {
            ignored: args.ignored_resources.iter().map(|s| Symbol::intern(s)).collect(),
            ignored_groups: args.ignored_resource_groups.iter().cloned().collect(),
            scored: ScoredResources::new(&args.scoring_strategy.resources),
            scorer: Scorer::new(&args.scoring_strategy),
            device_classes: None,
            pod_level: true,
            dra_extended: true,
        })
    }

    /// Applies the feature gates the plugin reads: `PodLevelResources` (on by default),
    /// which decides whether pod-level requests count in Filter and Score, for the
    /// incoming pod and the pods on each node (upstream `fts.EnablePodLevelResources`).
    /// The default registry passes the [`Handle`](crate::framework::Handle)'s gates.
    #[must_use]
    pub fn with_feature_gates(mut self, gates: FeatureGates) -> Fit {
        self.pod_level = gates.enabled(Feature::PodLevelResources);
        self.scored.pod_level = self.pod_level;
        self.dra_extended = gates.enabled(Feature::DRAExtendedResource);
        self
    }

    /// Lets the plugin leave extended resources backed by a DRA device class to the
    /// DynamicResources plugin on nodes whose allocatable does not list them (or lists
    /// 0): upstream's `DRAExtendedResource` behaviour (`noderesources/fit.go`,
    /// `fitsRequest` with `ShouldDelegateResourceToDRA`). A node that lists the resource
    /// is checked as usual (its device plugin serves it).
    ///
    /// Score then counts devices for such a resource when it is scored (in
    /// `scoringStrategy.resources`) and the pod requests it: on a node that does not
    /// list it, allocatable is the class's devices the node reaches and requested the
    /// allocated ones plus the pod's request (upstream
    /// `calculateDRAExtendedResourceAllocatableRequest`, kubernetes/kubernetes#134058).
    #[must_use]
    pub fn with_device_classes(mut self, resolver: Arc<dyn DeviceClassResolver>) -> Fit {
        self.device_classes = Some(resolver);
        self
    }

    /// From config args (absent means defaults), defaulted as upstream defaults a
    /// configuration ([`FitArgs::set_defaults`]) before [`Fit::new`] validates them.
    pub fn from_config(args: Option<&serde_json::Value>) -> Result<Fit, ArgsError> {
        let mut a = match args {
            Some(v) => FitArgs::deserialize(v).map_err(|e| ArgsError::Decode(e.to_string()))?,
            None => FitArgs::default(),
        };
        a.set_defaults();
        Fit::new(&a)
    }

    fn state_for(&self, pod: &PodInfo) -> FitState {
        let r = pod.requests_for(self.pod_level);
        let scalar: SmallVec<[(Symbol, i64, &'static str, bool); 2]> = r
            .scalar
            .iter()
            .copied()
            .filter(|&(name, v)| {
                if v == 0 {
                    return false;
                }
                let s = name.as_str();
                if is_extended_resource_name(s) {
                    let group = s.split('/').next().unwrap_or("");
                    if self.ignored.contains(&name) || self.ignored_groups.contains(group) {
                        return false;
                    }
                }
                true
            })
            .map(|(name, v)| {
                let backed = self.device_classes.as_ref().is_some_and(|d| {
                    crate::dra::is_dra_extended_resource_name(name.as_str())
                        && d.device_class_for(name.as_str()).is_some()
                });
                (name, v, Symbol::intern(&format!("Insufficient {name}")).as_str(), backed)
            })
            .collect();
        FitState {
            milli_cpu: r.milli_cpu,
            memory: r.memory,
            ephemeral_storage: r.ephemeral_storage,
            has_any: r.milli_cpu != 0 || r.memory != 0 || r.ephemeral_storage != 0 || !r.scalar.is_empty(),
            scalar,
            pod_level: self.pod_level,
        }
    }

    /// Every resource `node` lacks for `pod`, as upstream `fitsRequest` (in its order:
    /// pods, cpu, memory, ephemeral-storage, then extended resources).
    pub fn insufficient_resources(&self, pod: &PodInfo, node: &NodeInfo) -> Vec<InsufficientResource> {
        let mut out = Vec::new();
        check(&self.state_for(pod), node, |i| out.push(i));
        out
    }
}

/// Reports each resource `node` lacks for the requests in `s` (upstream `fitsRequest`).
#[inline]
fn check(s: &FitState, node: &NodeInfo, mut report: impl FnMut(InsufficientResource)) {
    let alloc = node.allocatable();
    let used = node.requested_for(s.pod_level);
    let pods = node.pods().len() as i64;
    let names = native_names();
    if pods + 1 > alloc.allowed_pod_number {
        report(InsufficientResource {
            resource: names.pods,
            reason: Reason::Borrowed("Too many pods"),
            requested: 1,
            used: pods,
            capacity: alloc.allowed_pod_number,
            unresolvable: false,
        });
    }
    if !s.has_any {
        return;
    }
    let mut native = |resource: Symbol, reason: &'static str, req: i64, a: i64, u: i64| {
        if req > 0 && req > a - u {
            report(InsufficientResource {
                resource,
                reason: Reason::Borrowed(reason),
                requested: req,
                used: u,
                capacity: a,
                unresolvable: req > a,
            });
        }
    };
    native(names.cpu, "Insufficient cpu", s.milli_cpu, alloc.milli_cpu, used.milli_cpu);
    native(names.memory, "Insufficient memory", s.memory, alloc.memory, used.memory);
    native(
        names.ephemeral_storage,
        "Insufficient ephemeral-storage",
        s.ephemeral_storage,
        alloc.ephemeral_storage,
        used.ephemeral_storage,
    );
    for &(name, req, reason, backed) in &s.scalar {
        let a = alloc.scalar(name);
        if backed && a == 0 {
            continue;
        }
        let u = used.scalar(name);
        if req > a - u {
            native(name, reason, req, a, u);
        }
    }
}

impl Plugin for Fit {
    fn name(&self) -> &str {
        names::NODE_RESOURCES_FIT
    }
    fn register(self: Arc<Self>, p: &mut ExtensionPoints) {
        p.pre_filter(self.clone())
            .filter(self.clone())
            .pre_score(self.clone())
            .score(self.clone())
            .enqueue(self.clone());
        p.sign(self);
    }
}

impl PreFilterPlugin for Fit {
    fn pre_filter(&self, state: &mut CycleState, pod: &PodInfo, _: &Snapshot) -> (Option<PreFilterResult>, Status) {
        state.write(self.state_for(pod));
        (None, Status::SUCCESS)
    }

    /// The pod's requests are a function of the pod; whether a DRA device class backs
    /// an extended resource (read from the DRA store) is not.
    fn pre_filter_reuse(&self, pod: &PodInfo) -> crate::framework::PreReuse {
        if self.device_classes.is_none() || pod.requests_for(self.pod_level).scalar.is_empty() {
            crate::framework::PreReuse::Pod
        } else {
            crate::framework::PreReuse::Never
        }
    }
}

impl FilterPlugin for Fit {
    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        let computed;
        let s = if let Some(s) = state.read::<FitState>() {
            s
        } else {
            computed = self.state_for(pod);
            &computed
        };
        filter_with(s, node)
    }

    /// [`FilterPlugin::filter`] over a chunk, reading the PreFilter state once.
    fn filter_nodes(&self, state: &CycleState, pod: &PodInfo, nodes: NodeList<'_>, statuses: &mut [Status]) -> u64 {
        let computed;
        let s = if let Some(s) = state.read::<FitState>() {
            s
        } else {
            computed = self.state_for(pod);
            &computed
        };
        if s.scalar.is_empty() && s.pod_level {
            // Pods, cpu, memory and ephemeral-storage only, and the node totals the
            // snapshot's resource columns hold: one row read per node.
            return filter_rows(s, nodes, statuses);
        }
        if s.scalar.is_empty() {
            // Pods, cpu, memory and ephemeral-storage only (every pod of a trace
            // replay): one pass per node gives both the verdict and the reasons.
            return crate::plugins::helper::filter_each(nodes, statuses, |node| {
                let (short, unresolvable) = native_short(s, node);
                (short != 0).then(|| native_status(short, unresolvable))
            });
        }
        crate::plugins::helper::filter_each(nodes, statuses, |node| (!fits(s, node)).then(|| rejection(s, node)))
    }
}

/// Filter against the PreFilter state.
#[inline]
fn filter_with(s: &FitState, node: &NodeInfo) -> Status {
    if fits(s, node) { Status::SUCCESS } else { rejection(s, node) }
}

/// Whether the node has room for the pod: the fast path without allocation (most
/// nodes fit); [`rejection`] says why not.
#[inline]
fn fits(s: &FitState, node: &NodeInfo) -> bool {
    let alloc = node.allocatable();
    let used = node.requested_for(s.pod_level);
    (node.pods().len() as i64) < alloc.allowed_pod_number
        && (!s.has_any
            || ((s.milli_cpu == 0 || s.milli_cpu <= alloc.milli_cpu - used.milli_cpu)
                && (s.memory == 0 || s.memory <= alloc.memory - used.memory)
                && (s.ephemeral_storage == 0
                    || s.ephemeral_storage <= alloc.ephemeral_storage - used.ephemeral_storage)
                && s.scalar.iter().all(|&(n, r, _, backed)| {
                    let a = alloc.scalar(n);
                    (backed && a == 0) || r <= a - used.scalar(n)
                })))
}

/// The reasons a node doesn't fit: out of line, so the fitting path stays small
/// (not cold: on a full cluster most nodes take it).
#[inline(never)]
fn rejection(s: &FitState, node: &NodeInfo) -> Status {
    if s.scalar.is_empty() {
        return native_rejection(s, node);
    }
    let mut reasons: SmallVec<[Reason; 4]> = SmallVec::new();
    let mut unresolvable = false;
    check(s, node, |i| {
        unresolvable |= i.unresolvable;
        reasons.push(i.reason);
    });
    let code = if unresolvable {
        crate::framework::Code::UnschedulableAndUnresolvable
    } else {
        crate::framework::Code::Unschedulable
    };
    // One reason (the usual case) stays inline; several go to a list.
    if reasons.len() == 1 {
        Status::new(code, reasons.pop().unwrap_or_default())
    } else {
        Status::with_reason_list(code, reasons.into_vec())
    }
}

/// The reason lists [`native_rejection`] returns, by the set of short resources (bit 0
/// pods, 1 cpu, 2 memory, 3 ephemeral-storage), each in upstream `fitsRequest`'s order.
const NATIVE_SHORT: [&[Reason]; 16] = {
    const P: Reason = Reason::Borrowed("Too many pods");
    const C: Reason = Reason::Borrowed("Insufficient cpu");
    const M: Reason = Reason::Borrowed("Insufficient memory");
    const E: Reason = Reason::Borrowed("Insufficient ephemeral-storage");
    [
        &[],
        &[P],
        &[C],
        &[P, C],
        &[M],
        &[P, M],
        &[C, M],
        &[P, C, M],
        &[E],
        &[P, E],
        &[C, E],
        &[P, C, E],
        &[M, E],
        &[P, M, E],
        &[C, M, E],
        &[P, C, M, E],
    ]
};

/// [`rejection`] for a pod without extended resources: only pods, cpu, memory and
/// ephemeral-storage can be short, so the reasons are one of sixteen fixed lists and
/// the status is built without collecting them or allocating (the same reasons, in the
/// same order, and the same code as [`check`] gives).
#[inline]
fn native_rejection(s: &FitState, node: &NodeInfo) -> Status {
    let (short, unresolvable) = native_short(s, node);
    native_status(short, unresolvable)
}

/// The resources among pods, cpu, memory and ephemeral-storage that `node` lacks for
/// `s` (bits as [`NATIVE_SHORT`]'s index; 0: none), and whether the pod asks for more
/// of one than the node has at all. Upstream `fitsRequest`'s tests for these four:
/// a request counts only when positive, and is short when above allocatable minus
/// requested.
#[expect(clippy::inline_always, reason = "measured: plain #[inline] `fits` stayed an out-of-line call per node")]
#[inline(always)]
fn native_short(s: &FitState, node: &NodeInfo) -> (usize, bool) {
    let alloc = node.allocatable();
    let mut short = usize::from(node.pods().len() as i64 >= alloc.allowed_pod_number);
    let mut unresolvable = false;
    if s.has_any {
        let used = node.requested_for(s.pod_level);
        let mut native = |bit: usize, req: i64, a: i64, u: i64| {
            if req > 0 && req > a - u {
                short |= bit;
                unresolvable |= req > a;
            }
        };
        native(2, s.milli_cpu, alloc.milli_cpu, used.milli_cpu);
        native(4, s.memory, alloc.memory, used.memory);
        native(8, s.ephemeral_storage, alloc.ephemeral_storage, used.ephemeral_storage);
    }
    (short, unresolvable)
}

/// The status of a node short of the resources `short` ([`native_short`]).
#[inline]
fn native_status(short: usize, unresolvable: bool) -> Status {
    let code = if unresolvable {
        crate::framework::Code::UnschedulableAndUnresolvable
    } else {
        crate::framework::Code::Unschedulable
    };
    Status::from_static_list(code, NATIVE_SHORT[short])
}

/// [`native_short`] and [`native_status`] over a `filter_nodes` chunk, reading the
/// snapshot's resource columns instead of each node's `NodeInfo`: for a pod without
/// extended resources (after `ignoredResources`) with the `PodLevelResources` gate
/// on, whose node totals are the ones the columns hold. The same tests as upstream
/// `fitsRequest` in the same order (pods, cpu, memory, ephemeral-storage), so the
/// same verdicts, reasons and codes; `allocatable - requested` wraps as the per-node
/// path does in a release build. Returns the failure mask.
fn filter_rows(s: &FitState, nodes: NodeList<'_>, statuses: &mut [Status]) -> u64 {
    let snap = nodes.snapshot();
    let (rows, ephemeral) = (snap.resource_rows(), snap.ephemeral_storage());
    let idx = nodes.indices();
    let n = idx.len().min(statuses.len()).min(64);
    let (idx, statuses) = (&idx[..n], &mut statuses[..n]);
    let (cpu, memory, storage) = (s.milli_cpu, s.memory, s.ephemeral_storage);
    let mut failed = 0;
    for (i, &p) in idx.iter().enumerate() {
        let r = &rows[p];
        let mut short = usize::from(r.pod_room <= 0);
        let mut unresolvable = false;
        if cpu > 0 && cpu > r.alloc_cpu.wrapping_sub(r.requested_cpu) {
            short |= 2;
            unresolvable |= cpu > r.alloc_cpu;
        }
        if memory > 0 && memory > r.alloc_memory.wrapping_sub(r.requested_memory) {
            short |= 4;
            unresolvable |= memory > r.alloc_memory;
        }
        if storage > 0 && storage > r.ephemeral_free {
            short |= 8;
            unresolvable |= storage > ephemeral[p][0];
        }
        if short != 0 {
            statuses[i] = native_status(short, unresolvable);
            failed |= 1 << i;
        }
    }
    failed
}

impl PreScorePlugin for Fit {
    fn pre_score(&self, state: &mut CycleState, pod: &PodInfo, _: NodeList<'_>) -> Status {
        state.write(self.score_state(pod));
        Status::SUCCESS
    }

    /// The pod's scored requests are a function of the pod; the device view read from
    /// the DRA store (a scored extended resource with device classes) is not.
    fn pre_score_reuse(&self, pod: &PodInfo) -> crate::framework::PreReuse {
        if self.device_classes.is_none() || !self.scored.requests_scalar(&self.scored.pod_requests(pod, false)) {
            crate::framework::PreReuse::Pod
        } else {
            crate::framework::PreReuse::Never
        }
    }
}

impl Fit {
    /// The pod's scored requests, and the device view only when the plugin resolves
    /// device classes and the pod requests a scored extended resource: the default
    /// `[cpu, memory]` never touches the DRA store.
    fn score_state(&self, pod: &PodInfo) -> FitScoreState {
        let reqs = self.scored.pod_requests(pod, false);
        let dra = match &self.device_classes {
            Some(d) if self.scored.requests_scalar(&reqs) => d.extended_device_counts(&self.scored.names()),
            _ => None,
        };
        FitScoreState(reqs, dra)
    }

    fn score_one(&self, s: &FitScoreState, node: &NodeInfo) -> i64 {
        self.scorer.score_node(&self.scored, &s.0, node, false, s.1.as_ref())
    }
}

/// Upstream's Score error for a strategy with no resources (`resource_allocation.go`).
const ERR_NO_RESOURCES: &str = "resources not found";

impl ScorePlugin for Fit {
    /// Fails with an error ("resources not found", as upstream) when the scoring
    /// strategy has no resources: only args built in code can have none, since
    /// [`Fit::from_config`] defaults them.
    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        if self.scored.kinds.is_empty() {
            return Err(Status::error(ERR_NO_RESOURCES));
        }
        match state.read::<FitScoreState>() {
            Some(s) => Ok(self.score_one(s, node)),
            None => Ok(self.score_one(&self.score_state(pod), node)),
        }
    }

    fn score_nodes(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: NodeList<'_>,
        scores: &mut [NodeScore],
    ) -> Result<(), Status> {
        if self.scored.kinds.is_empty() {
            return Err(Status::error(ERR_NO_RESOURCES));
        }
        with_state(
            state,
            || self.score_state(pod),
            |s: &FitScoreState| self.scorer.score_nodes(&self.scored, &s.0, nodes, scores, false, s.1.as_ref()),
        );
        Ok(())
    }

    /// NodeResourcesFit has no NormalizeScore (upstream `noderesources/fit.go`): the raw score is the
    /// normalized one.
    fn normalize_reuse(&self) -> crate::framework::NormalizeReuse {
        crate::framework::NormalizeReuse::PerNode
    }
}

impl EnqueueExtensions for Fit {
    /// Upstream registers pod deletions (resources freed) and node additions or
    /// allocatable changes, with hints that skip events that can't help.
    fn events_to_register(&self) -> Vec<ClusterEventWithHint> {
        let this = self.clone();
        vec![
            ClusterEventWithHint {
                event: ClusterEvent { resource: EventResource::AssignedPod, action: ActionType::DELETE },
                hint: None,
            },
            ClusterEventWithHint {
                event: ClusterEvent {
                    resource: EventResource::Node,
                    action: ActionType::ADD | ActionType::UPDATE_NODE_ALLOCATABLE,
                },
                hint: Some(Arc::new(move |pod, ev| match ev {
                    EventObject::Node { new: Some(n), old } => {
                        let fresh = NodeInfo::new(n.clone());
                        if !this.insufficient_resources(pod, &fresh).is_empty() {
                            return QueueingHint::Skip;
                        }
                        match old {
                            None => QueueingHint::Queue,
                            Some(o) => {
                                let before = o.status.allocatable.to_resources();
                                let after = fresh.allocatable();
                                let r = pod.requests_for(this.pod_level);
                                let grew = after.allowed_pod_number > before.allowed_pod_number
                                    || (r.milli_cpu > 0 && after.milli_cpu > before.milli_cpu)
                                    || (r.memory > 0 && after.memory > before.memory)
                                    || (r.ephemeral_storage > 0 && after.ephemeral_storage > before.ephemeral_storage)
                                    || r.scalar.iter().any(|&(k, v)| v > 0 && after.scalar(k) > before.scalar(k));
                                if grew { QueueingHint::Queue } else { QueueingHint::Skip }
                            }
                        }
                    }
                    _ => QueueingHint::Queue,
                })),
            },
        ]
    }
}

/// Upstream `Fit.SignPod`: the computed requests (containers, init containers,
/// overhead, pod-level resources as the gate says), under the resources key; with the
/// `DRAExtendedResource` gate on (v1.36's default) no pod is signable, as upstream
/// ("signature disabled when dra extended resources enabled"). The requests scoring
/// counts (with non-zero defaults) are signed too: they follow from the containers,
/// not from the totals alone.
impl crate::framework::SignPlugin for Fit {
    fn sign_pod(&self, pod: &PodInfo, fragments: &mut crate::framework::SignFragments) -> Status {
        if self.dra_extended {
            return Status::unschedulable("signature disabled when dra extended resources enabled");
        }
        super::sign_requests(pod, self.pod_level, fragments);
        Status::SUCCESS
    }

    /// A pod that requests no extended resource never meets one backed by a
    /// DeviceClass, so `DRAExtendedResource` cannot make its fit depend on more than
    /// the pod and the node: such pods sign their requests.
    fn sign_pod_in_group(&self, pod: &PodInfo, fragments: &mut crate::framework::SignFragments) -> Status {
        if self.dra_extended && !pod.requests_for(self.pod_level).scalar.is_empty() {
            return self.sign_pod(pod, fragments);
        }
        super::sign_requests(pod, self.pod_level, fragments);
        Status::SUCCESS
    }
}
