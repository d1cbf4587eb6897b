//! Coscheduling: gang scheduling with scheduler-plugins' semantics
//! (`kubernetes-sigs/scheduler-plugins`, `pkg/coscheduling/coscheduling.go` and
//! `pkg/coscheduling/core/core.go`).
//!
//! - **QueueSort**: priority (higher first), then the group's creation time (a pod
//!   without a group uses the time it entered the queue), then the group's
//!   `namespace/name`, then the pod's — so a gang's pods leave the queue together.
//! - **PreEnqueue**: holds a pod until its group has at least `minMember` pods.
//! - **PreFilter**: rejects a pod whose group failed recently (with
//!   [`CoschedulingArgs::pod_group_backoff`]), has too few pods, or whose
//!   `minResources` the cluster's free resources (not counting the group's own
//!   pods) can't cover; a passing resource check is remembered for the group's
//!   schedule timeout, as upstream's `permittedPG`.
//! - **PostFilter**: when a pod fits nowhere and its gang is more than 10 % short of
//!   `minMember`, rejects every waiting sibling (releasing their reservations) and
//!   backs the group off.
//! - **Reserve/Unreserve**: counts the group's assigned pods; Unreserve rejects the
//!   waiting siblings.
//! - **Permit**: allows once `minMember` pods of the group are assumed or bound,
//!   allowing the waiting siblings too; otherwise waits for the group's schedule
//!   timeout, and the first member of a round asks the scheduler to activate its
//!   siblings (upstream's `ActivateSiblings`, which runs on every Wait).
//! - **PostBind**: counts bound pods for [`PodGroupStatus`].
//!
//! Beyond upstream: a pod naming an unregistered group is gated at PreEnqueue
//! (upstream lets it run into a Permit rejection), and pods this plugin rejected
//! are retried on capacity events (node added or allocatable changed, assigned pod
//! deleted) as well as on pod and PodGroup additions. Group membership is learned
//! through [`PodObserver`] rather than a pod informer.
//!
//! ```
//! use std::time::Duration;
//! use schedkit::framework::{Handle, Profile, VirtualClock};
//! use schedkit::plugins::coscheduling::{Coscheduling, CoschedulingArgs, PodGroup, PodGroupPhase};
//! use schedkit::scheduler::Scheduler;
//! use schedkit::testing::{NodeBuilder, PodBuilder};
//!
//! let clock = VirtualClock::new();
//! let handle = Handle::new(std::sync::Arc::new(clock.clone()));
//! let gang = Coscheduling::new(&handle, CoschedulingArgs::default()).unwrap();
//! let groups = gang.registry();
//! let profile = Profile::builder("default-scheduler").plugin(gang).build().unwrap();
//! let mut s = Scheduler::builder().profile(profile).handle(handle).build();
//! s.add_node(NodeBuilder::new("n").cpu("8").build()).unwrap();
//! groups.upsert(PodGroup::new("default", "train", 3)).unwrap();
//! for i in 0..3 {
//!     let pod = PodBuilder::new(&format!("w{i}")).cpu("1").label("scheduling.x-k8s.io/pod-group", "train");
//!     s.add_pod(pod.build()).unwrap();
//! }
//! let run = s.run_until_idle();
//! assert_eq!(run.bound, 3);
//! assert_eq!(groups.status("default", "train").unwrap().phase, PodGroupPhase::Scheduled);
//! ```

mod registry;

use std::cmp::Ordering;
use std::sync::Arc;
use std::time::Duration;

pub use registry::{GroupKey, PodGroup, PodGroupError, PodGroupPhase, PodGroupRegistry, PodGroupStatus};

use crate::framework::{
    ActionType, ClusterEvent, ClusterEventWithHint, CycleState, EnqueueExtensions, EventObject, EventResource,
    ExtensionPoints, Handle, MAX_PERMIT_TIMEOUT, NodeToStatus, PermitDecision, PermitPlugin, Plugin, PodObserver,
    PostBindPlugin, PostFilterPlugin, PostFilterResult, PreEnqueuePlugin, PreFilterPlugin, PreFilterResult,
    QueueSortPlugin, QueuedPodInfo, QueueingHint, QueueingHintFn, ReservePlugin, Status,
};
use crate::model::{Resources, Symbol};
use crate::plugins::names;
use crate::snapshot::{PodInfo, Snapshot};

/// Plugin arguments (scheduler-plugins `CoschedulingArgs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CoschedulingArgs {
    /// Default Permit wait for groups without a schedule timeout
    /// (`permitWaitingTimeSeconds`, upstream default 60 s).
    pub permit_waiting_time: Duration,
    /// How long a group that was rejected as a whole is refused in PreFilter
    /// (`podGroupBackoffSeconds`; upstream default 0 = off).
    pub pod_group_backoff: Option<Duration>,
}

impl Default for CoschedulingArgs {
    fn default() -> Self {
        CoschedulingArgs { permit_waiting_time: Duration::from_secs(60), pod_group_backoff: None }
    }
}

/// The Coscheduling plugin. Build it with the same [`Handle`] as the scheduler.
pub struct Coscheduling {
    handle: Handle,
    registry: Arc<PodGroupRegistry>,
    args: CoschedulingArgs,
}

impl std::fmt::Debug for Coscheduling {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Coscheduling").field("args", &self.args).finish_non_exhaustive()
    }
}

impl Coscheduling {
    /// A plugin with its own registry (see [`Coscheduling::registry`]).
    pub fn new(handle: &Handle, args: CoschedulingArgs) -> Result<Coscheduling, PodGroupError> {
        let registry = Arc::new(PodGroupRegistry::new(handle.clock_arc()));
        Coscheduling::with_registry(handle, registry, args)
    }

    /// A plugin sharing an existing registry.
    pub fn with_registry(
        handle: &Handle,
        registry: Arc<PodGroupRegistry>,
        args: CoschedulingArgs,
    ) -> Result<Coscheduling, PodGroupError> {
        let t = args.permit_waiting_time;
        if t.is_zero() || t > MAX_PERMIT_TIMEOUT {
            return Err(PodGroupError::InvalidTimeout { group: "(default permitWaitingTime)".into(), timeout: t });
        }
        Ok(Coscheduling { handle: handle.clone(), registry, args })
    }

    /// The groups, shared with the caller.
    pub fn registry(&self) -> Arc<PodGroupRegistry> {
        self.registry.clone()
    }

    fn reject_waiting_siblings(&self, key: GroupKey, reason: &str) {
        self.handle.waiting_pods().for_each(|wp| {
            if GroupKey::of(wp.pod()) == Some(key) {
                wp.reject(names::COSCHEDULING, reason);
            }
        });
    }

    /// Free resources across the cluster, not counting the group's own pods, cover
    /// `need` (upstream `CheckClusterResource`).
    fn cluster_fits(snapshot: &Snapshot, key: GroupKey, need: &Resources) -> Result<(), String> {
        let mut free = Resources::default();
        for n in snapshot.nodes() {
            let mut left = n.allocatable().clone();
            left.sub(n.requested());
            left.allowed_pod_number -= n.pods().len() as i64;
            for p in n.pods() {
                if GroupKey::of(p) == Some(key) {
                    left.add(&p.requests);
                    left.allowed_pod_number += 1;
                }
            }
            free.milli_cpu += left.milli_cpu.max(0);
            free.memory += left.memory.max(0);
            free.ephemeral_storage += left.ephemeral_storage.max(0);
            free.allowed_pod_number += left.allowed_pod_number.max(0);
            for &(name, v) in &left.scalar {
                free.add_scalar(name, v.max(0));
            }
        }
        let mut gaps = Vec::new();
        let mut gap = |name: &str, want: i64, have: i64| {
            if want > have {
                gaps.push(format!("{name}: {}", want - have));
            }
        };
        gap("cpu(m)", need.milli_cpu, free.milli_cpu);
        gap("memory", need.memory, free.memory);
        gap("ephemeral-storage", need.ephemeral_storage, free.ephemeral_storage);
        gap("pods", need.allowed_pod_number, free.allowed_pod_number);
        for &(name, v) in &need.scalar {
            gap(name.as_str(), v, free.scalar(name));
        }
        if gaps.is_empty() { Ok(()) } else { Err(format!("resource gap: {}", gaps.join(", "))) }
    }
}

impl Plugin for Coscheduling {
    fn name(&self) -> &str {
        names::COSCHEDULING
    }
    fn register(self: Arc<Self>, points: &mut ExtensionPoints) {
        points
            .queue_sort(self.clone())
            .pre_enqueue(self.clone())
            .pre_filter(self.clone())
            .post_filter(self.clone())
            .reserve(self.clone())
            .permit(self.clone())
            .post_bind(self.clone())
            .enqueue(self.clone())
            .pod_observer(self);
    }
}

impl QueueSortPlugin for Coscheduling {
    fn less(&self, a: &QueuedPodInfo, b: &QueuedPodInfo) -> bool {
        let (pa, pb) = (a.pod.priority(), b.pod.priority());
        if pa != pb {
            return pa > pb;
        }
        let (ka, kb) = (GroupKey::of(&a.pod), GroupKey::of(&b.pod));
        let time = |k: Option<GroupKey>, q: &QueuedPodInfo| {
            k.and_then(|k| self.registry.creation(k)).unwrap_or(q.initial_attempt_timestamp)
        };
        let (ta, tb) = (time(ka, a), time(kb, b));
        if ta != tb {
            return ta < tb;
        }
        // By namespace, then group name (none: ""), then pod name. Namespaces are
        // pinned; group names are label values, compared without pinning them (a
        // name pinned here would stay interned after its group is gone).
        let namespace = |k: Option<GroupKey>, q: &QueuedPodInfo| k.map_or(q.pod.namespace, |k| k.namespace);
        let (na, nb) = (namespace(ka, a), namespace(kb, b));
        let by_namespace = if na == nb { Ordering::Equal } else { na.as_str().cmp(nb.as_str()) };
        let by_group = || {
            let (ga, gb) = (ka.map(|k| k.name), kb.map(|k| k.name));
            if ga == gb {
                return Ordering::Equal;
            }
            let text = |g: Option<Symbol>| g.and_then(Symbol::text);
            text(ga).as_deref().unwrap_or("").cmp(text(gb).as_deref().unwrap_or(""))
        };
        match by_namespace.then_with(by_group) {
            Ordering::Less => true,
            Ordering::Greater => false,
            Ordering::Equal => a.pod.pod.name() < b.pod.pod.name(),
        }
    }
}

impl PreEnqueuePlugin for Coscheduling {
    fn pre_enqueue(&self, pod: &PodInfo) -> Status {
        let Some(key) = GroupKey::of(pod) else { return Status::SUCCESS };
        self.registry.with(key, |g| {
            g.members.insert(pod.uid.clone());
            let Some(spec) = &g.spec else {
                return Status::unresolvable(format!("pod group {key} not found"));
            };
            if g.members.len() < spec.min_member as usize {
                return Status::unresolvable(format!(
                    "pre-enqueue pod {} cannot find enough sibling pods, current pods number: {}, minMember of group: {}",
                    pod.pod.name(),
                    g.members.len(),
                    spec.min_member
                ));
            }
            Status::SUCCESS
        })
    }
}

impl PreFilterPlugin for Coscheduling {
    fn pre_filter(&self, _: &mut CycleState, pod: &PodInfo, snapshot: &Snapshot) -> (Option<PreFilterResult>, Status) {
        let Some(key) = GroupKey::of(pod) else { return (None, Status::SUCCESS) };
        let now = self.registry.now();
        let check = self.registry.with(key, |g| {
            let Some(spec) = &g.spec else {
                return Err(Status::unresolvable(format!("pod group {key} not found")));
            };
            if g.backoff_until.is_some_and(|t| now < t) {
                return Err(Status::unschedulable(format!("podGroup {key} failed recently")));
            }
            if g.members.len() < spec.min_member as usize {
                return Err(Status::unschedulable(format!(
                    "pre-filter pod {} cannot find enough sibling pods, current pods number: {}, minMember of group: {}",
                    pod.pod.name(),
                    g.members.len(),
                    spec.min_member
                )));
            }
            if g.permitted_until.is_some_and(|t| now < t) {
                return Ok(None);
            }
            let timeout = spec.schedule_timeout.unwrap_or(self.args.permit_waiting_time);
            Ok(g.min_resources.clone().map(|r| (r, timeout)))
        });
        let (need, timeout) = match check {
            Err(s) => return (None, s),
            Ok(None) => return (None, Status::SUCCESS),
            Ok(Some(x)) => x,
        };
        match Coscheduling::cluster_fits(snapshot, key, &need) {
            Ok(()) => {
                self.registry.with(key, |g| g.permitted_until = Some(now + timeout));
                (None, Status::SUCCESS)
            }
            Err(gap) => (None, Status::unschedulable(format!("pod group {key}: {gap}"))),
        }
    }
}

impl PostFilterPlugin for Coscheduling {
    fn post_filter(
        &self,
        _: &CycleState,
        pod: &PodInfo,
        _: &Snapshot,
        _: &NodeToStatus,
    ) -> (Option<PostFilterResult>, Status) {
        let Some(key) = GroupKey::of(pod) else {
            return (None, Status::unschedulable("pod does not belong to a pod group"));
        };
        let (assigned, min) = self.registry.with(key, |g| (g.assigned.len(), g.min_member() as usize));
        if min == 0 {
            return (None, Status::unschedulable(format!("pod group {key} not found")));
        }
        // Enough siblings placed, or the gap is within 10%: let later pods try.
        if assigned >= min || (min - assigned) * 10 <= min {
            return (Some(PostFilterResult::default()), Status::from_code(crate::framework::Code::Unschedulable));
        }
        self.reject_waiting_siblings(key, names::COSCHEDULING);
        let now = self.registry.now();
        let backoff = self.args.pod_group_backoff;
        self.registry.with(key, |g| {
            g.failures += 1;
            g.permitted_until = None;
            if let Some(b) = backoff {
                g.backoff_until = Some(now + b);
            }
        });
        (
            Some(PostFilterResult::default()),
            Status::unschedulable(format!(
                "PodGroup {key} gets rejected due to Pod {} is unschedulable even after PostFilter",
                pod.pod.name()
            )),
        )
    }
}

impl ReservePlugin for Coscheduling {
    fn reserve(&self, _: &mut CycleState, pod: &PodInfo, _: &str) -> Status {
        if let Some(key) = GroupKey::of(pod) {
            self.registry.with(key, |g| g.assigned.insert(pod.uid.clone()));
        }
        Status::SUCCESS
    }

    fn unreserve(&self, _: &mut CycleState, pod: &PodInfo, _: &str) {
        let Some(key) = GroupKey::of(pod) else { return };
        let known = self.registry.with(key, |g| {
            g.assigned.remove(&pod.uid);
            g.permitted_until = None;
            g.spec.is_some()
        });
        if known {
            self.reject_waiting_siblings(key, "rejection in Unreserve");
        }
    }
}

impl PermitPlugin for Coscheduling {
    fn permit(&self, _: &mut CycleState, pod: &PodInfo, _: &str) -> PermitDecision {
        let Some(key) = GroupKey::of(pod) else { return PermitDecision::Allow };
        let default_wait = self.args.permit_waiting_time;
        let decision = self.registry.with(key, |g| {
            let spec = g.spec.as_ref()?;
            let wait = spec.schedule_timeout.unwrap_or(default_wait);
            // Reserve already counted this pod (upstream adds 1 to the snapshot's count).
            if g.assigned.len() >= spec.min_member as usize {
                return Some(Ok(()));
            }
            // Upstream activates the siblings on every Wait; the first member of a
            // round is enough here (later ones would find them already moved), which
            // keeps a large gang's Permit O(1) per member instead of O(members).
            let siblings: Vec<Arc<str>> = if g.assigned.len() == 1 {
                g.members.iter().filter(|u| !g.assigned.contains(*u)).cloned().collect()
            } else {
                Vec::new()
            };
            Some(Err((wait, siblings)))
        });
        match decision {
            None => PermitDecision::Reject(Status::unschedulable("PodGroup not found")),
            Some(Ok(())) => {
                self.handle.waiting_pods().for_each(|wp| {
                    if GroupKey::of(wp.pod()) == Some(key) {
                        wp.allow(names::COSCHEDULING);
                    }
                });
                PermitDecision::Allow
            }
            Some(Err((wait, siblings))) => {
                if !siblings.is_empty() {
                    self.handle.activate_pods(siblings);
                }
                PermitDecision::Wait(wait)
            }
        }
    }
}

impl PostBindPlugin for Coscheduling {
    fn post_bind(&self, _: &CycleState, pod: &PodInfo, _: &str) {
        if let Some(key) = GroupKey::of(pod) {
            self.registry.with(key, |g| g.bound.insert(pod.uid.clone()));
        }
    }
}

impl EnqueueExtensions for Coscheduling {
    /// Pod additions (with a hint: only a sibling's arrival that brings the group to
    /// `minMember` helps), PodGroup changes, and capacity events.
    fn events_to_register(&self) -> Vec<ClusterEventWithHint> {
        let ev = |resource, action| ClusterEventWithHint { event: ClusterEvent { resource, action }, hint: None };
        let registry = self.registry.clone();
        let sibling_added: QueueingHintFn = Arc::new(move |pod: &PodInfo, obj: &EventObject| {
            let EventObject::Pod { new: Some(new), .. } = obj else { return QueueingHint::Queue };
            let Some(key) = GroupKey::of(pod) else { return QueueingHint::Queue };
            if GroupKey::of(new) != Some(key) {
                return QueueingHint::Skip;
            }
            let enough = registry.with(key, |g| g.spec.is_some() && g.members.len() >= g.min_member() as usize);
            if enough { QueueingHint::Queue } else { QueueingHint::Skip }
        });
        vec![
            ClusterEventWithHint {
                event: ClusterEvent { resource: EventResource::UnscheduledPod, action: ActionType::ADD },
                hint: Some(sibling_added),
            },
            ev(EventResource::AssignedPod, ActionType::ADD | ActionType::DELETE),
            ev(EventResource::PodGroup, ActionType::ADD | ActionType::UPDATE),
            ev(EventResource::Node, ActionType::ADD | ActionType::UPDATE_NODE_ALLOCATABLE),
        ]
    }
}

impl PodObserver for Coscheduling {
    fn pod_added(&self, pod: &PodInfo) {
        let Some(key) = GroupKey::of(pod) else { return };
        let assigned = pod.is_assigned();
        self.registry.with(key, |g| {
            g.members.insert(pod.uid.clone());
            if assigned {
                g.assigned.insert(pod.uid.clone());
                g.bound.insert(pod.uid.clone());
            }
        });
    }

    fn pod_updated(&self, old: &PodInfo, new: &PodInfo) {
        if GroupKey::of(old) != GroupKey::of(new) {
            self.pod_deleted(old);
        }
        self.pod_added(new);
    }

    fn pod_deleted(&self, pod: &PodInfo) {
        let Some(key) = GroupKey::of(pod) else { return };
        self.registry.with(key, |g| {
            g.members.remove(&pod.uid);
            g.assigned.remove(&pod.uid);
            g.bound.remove(&pod.uid);
        });
    }
}
