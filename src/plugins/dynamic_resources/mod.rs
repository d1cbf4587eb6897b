//! DynamicResources: schedules pods with ResourceClaims through the structured allocator
//! (upstream `pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go`).
//!
//! The DRA objects live in a shared [`DraStore`] that the caller keeps up to date; the
//! plugin reads it once per cycle in PreFilter and holds devices for pods in flight from
//! Reserve until PreBind hands the allocation to the caller's [`ClaimStatusWriter`].
//!
//! | Point | What it does |
//! |---|---|
//! | PreEnqueue | waits until every claim the pod names is in the store |
//! | PreFilter | gathers claims, classes and devices; Skip for pods without claims |
//! | Filter | runs the allocator on the node; on failure, a per-node [`Diagnosis`] |
//! | PostFilter | deallocates an allocated claim reserved for no other pod (upstream) |
//! | Reserve / Unreserve | holds / releases the devices in flight, so two pods in flight never share one |
//! | PreBind | writes each claim's allocation and `reservedFor` through the writer, commits, then waits for device binding conditions |
//! | events | ResourceClaim, ResourceSlice, DeviceClass add/update requeue the pod |
//!
//! # Claims shared by a PodGroup (`DRAWorkloadResourceClaims`)
//!
//! A pod's claim reference may name a claim of its PodGroup
//! (`podGroupResourceClaim`, KEP-5729): it resolves through the group's
//! `spec.resourceClaims` to one ResourceClaim per group
//! ([`DraStore::resolve_claim`]; the store finds PodGroups through the scheduler's
//! handle when the plugin is built by [`DynamicResources::from_config`], else through
//! [`DraStore::set_pod_group_source`]). The first member allocates it; later members of
//! the group reuse that allocation, also while it is still in flight in the same
//! pod-group cycle. PreBind reserves it for the PodGroup, not the pod (upstream
//! `BindTo`). Such a claim is never deallocated while a PodGroup holds it: PostFilter
//! and Unreserve first drop the group from `reservedFor` when none of its members is
//! scheduled (assumed or bound), and the next PostFilter deallocates the claim reserved
//! for nobody. With the gate off a `podGroupResourceClaim` reference does not resolve
//! and the pod waits at PreEnqueue, as upstream's `resourceclaim.Name` without a
//! PodGroup.
//!
//! # Device binding conditions
//!
//! A device may publish binding conditions (KEP-5007): the allocation result copies
//! them, and PreBind, after recording the allocation, waits until the driver reports
//! every one `True` in the claim's `status.devices` (the caller feeds driver updates in
//! with [`DraStore::update_device_status`]). A `True` binding failure condition fails
//! the binding at once; conditions not met within the binding timeout (upstream
//! `DynamicResourcesArgs.bindingTimeout`, default 600 s) fail it too. As upstream, the
//! wait checks at once and then every 5 s of the plugin's [`Clock`] (set it with
//! [`DynamicResources::with_clock`]; on a [`VirtualClock`](crate::framework::VirtualClock)
//! the wait moves as the test advances time). The next attempt's PreFilter sees the failed or timed-out
//! claim as unavailable, Filter rejects every node, and PostFilter deallocates it.

mod pod_group;
mod queueing;

use std::sync::Arc;
use std::time::Duration;

use pod_group::HandlePodGroups;
pub use queueing::claim_event_hint;

use crate::dra::{
    AllocError, BindingError, BindingState, Diagnosis, DraStore, EXTENDED_RESOURCE_CLAIM_ANNOTATION, GatherError,
    NodeResult, PodClaims, PodExtendedResourceClaimStatus, ResourceClaim, extended_claim_name,
};
use crate::framework::{
    Clock, Code, CycleState, ExtensionPoints, FilterPlugin, Handle, NodeScore, NodeToStatus, Plugin, PostFilterPlugin,
    PostFilterResult, PreBindPlugin, PreEnqueuePlugin, PreFilterPlugin, PreFilterResult, RealClock, ReservePlugin,
    ScorePlugin, Status,
};
use crate::model::{Node, Pod, Symbol};
use crate::plugins::names;
use crate::snapshot::{NodeInfo, PodInfo, Snapshot};

/// Receives claim status updates, as upstream's plugin writes them to the API server.
/// Called from PreBind (allocation + `reservedFor`) and PostFilter (deallocation), on
/// the binding or scheduling thread; an error fails the pod's binding (it is retried).
pub trait ClaimStatusWriter: Send + Sync {
    /// Persists `claim` (its `status` is the new one). The store is updated only after
    /// this returns `Ok`.
    fn update_status(&self, claim: &ResourceClaim) -> Result<(), String>;

    /// Persists the allocation PreBind makes (`claim` carries it and `reservedFor` in its
    /// `status`). Upstream's `bindClaim` (`dynamicresources.go`) first adds the
    /// [`DELETE_PROTECTION_FINALIZER`](crate::dra::DELETE_PROTECTION_FINALIZER) with a
    /// normal update of the object when `claim` lacks it, so the claim cannot vanish while
    /// allocated, and then writes the status to the object that update returned. Default:
    /// [`update_status`](Self::update_status) (nothing to protect without an API server).
    fn allocate(&self, claim: &ResourceClaim) -> Result<(), String> {
        self.update_status(claim)
    }

    /// Creates the claim PreBind makes for a pod's extended resources backed by DRA,
    /// already allocated and reserved for the pod (upstream creates it, then updates its
    /// status). Default: accepted.
    fn create_claim(&self, _claim: &ResourceClaim) -> Result<(), String> {
        Ok(())
    }

    /// Deletes that claim again (Unreserve after a failed binding, or PostFilter).
    /// Default: accepted.
    fn delete_claim(&self, _namespace: &str, _name: &str) -> Result<(), String> {
        Ok(())
    }

    /// Records in the pod's status which claim and requests serve its extended resources
    /// (upstream `pod.status.extendedResourceClaimStatus`). Default: accepted.
    fn update_pod_extended_resource_claim_status(
        &self,
        _pod: &Pod,
        _status: &PodExtendedResourceClaimStatus,
    ) -> Result<(), String> {
        Ok(())
    }
}

/// A writer that accepts every update (the store alone is the source of truth).
#[derive(Debug, Clone, Copy, Default)]
pub struct StoreOnly;

impl ClaimStatusWriter for StoreOnly {
    fn update_status(&self, _claim: &ResourceClaim) -> Result<(), String> {
        Ok(())
    }
}

/// Why [`DynamicResources::from_config`] can't build the plugin.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DynamicResourcesArgsError {
    /// No [`DraStore`] is shared on the handle (no longer returned:
    /// [`DynamicResources::from_config`] shares one).
    #[error("DynamicResources needs a DraStore shared on the Handle (Handle::set_shared)")]
    NoStore,
    /// The args are not a JSON object.
    #[error("DynamicResourcesArgs: expected an object")]
    NotAnObject,
    /// A field upstream's `DynamicResourcesArgs` doesn't have.
    #[error("DynamicResourcesArgs: unknown field {0:?}")]
    UnknownField(String),
    /// A timeout that is not a Go duration string.
    #[error("DynamicResourcesArgs.{field}: {message}")]
    BadDuration {
        /// `bindingTimeout` or `filterTimeout`.
        field: &'static str,
        /// What is wrong.
        message: String,
    },
    /// `bindingTimeout` is zero or negative.
    #[error("DynamicResourcesArgs.bindingTimeout: must be positive")]
    NonPositiveBindingTimeout,
    /// `filterTimeout` is negative.
    #[error("DynamicResourcesArgs.filterTimeout: must not be negative")]
    NegativeFilterTimeout,
}

/// The DynamicResources plugin.
///
/// ```
/// use std::sync::Arc;
/// use schedkit::dra::DraStore;
/// use schedkit::plugins::dynamic_resources::DynamicResources;
/// use schedkit::prelude::*;
/// let store = Arc::new(DraStore::new());
/// let profile = Profile::builder("dra").plugin(DynamicResources::new(store)).build().unwrap();
/// assert!(profile.filter_plugins().contains(&"DynamicResources"));
/// ```
pub struct DynamicResources {
    store: Arc<DraStore>,
    writer: Arc<dyn ClaimStatusWriter>,
    clock: Arc<dyn Clock>,
    binding_timeout: Duration,
    /// Zero: no timeout.
    filter_timeout: Duration,
}

/// Upstream's default `bindingTimeout` (`pkg/scheduler/apis/config/v1/defaults.go`).
pub const DEFAULT_BINDING_TIMEOUT: Duration = Duration::from_secs(600);

/// Upstream's default `filterTimeout` (`DynamicResourcesFilterTimeoutDefault` in
/// `pkg/scheduler/apis/config/types_pluginargs.go`).
pub const DEFAULT_FILTER_TIMEOUT: Duration = Duration::from_secs(10);

/// Upstream PreBind's poll interval for binding conditions (`dynamicresources.go`).
const BINDING_POLL: Duration = Duration::from_secs(5);

impl std::fmt::Debug for DynamicResources {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DynamicResources").finish_non_exhaustive()
    }
}

/// What PreFilter leaves for Filter (cloned by reference count only).
#[derive(Debug, Clone)]
struct DraState {
    claims: Arc<PodClaims>,
    /// The snapshot's nodes, when Reserve needs their labels.
    nodes: Option<Arc<ahash::AHashMap<Symbol, Arc<Node>>>>,
    /// Allocated claims whose binding failed or timed out, with why (`None`: none).
    unavailable: Option<Arc<[(String, String)]>>,
}

impl DynamicResources {
    /// The plugin over a shared store, writing statuses only to the store.
    pub fn new(store: Arc<DraStore>) -> DynamicResources {
        DynamicResources {
            store,
            writer: Arc::new(StoreOnly),
            clock: Arc::new(RealClock::default()),
            binding_timeout: DEFAULT_BINDING_TIMEOUT,
            filter_timeout: DEFAULT_FILTER_TIMEOUT,
        }
    }

    /// Builds the plugin from a profile's `pluginConfig` args (upstream
    /// `DynamicResourcesArgs`) over the [`DraStore`] shared on the handle
    /// ([`Handle::set_shared`](crate::framework::Handle::set_shared)); a new one is
    /// shared first when there is none ([`shared_dra_store`](crate::plugins::shared_dra_store):
    /// upstream's framework always has a DRA manager, and DynamicResources is a default
    /// plugin since v1.36's gates), on the handle's
    /// clock, writing through the `Arc<dyn ClaimStatusWriter>` shared on the handle if
    /// there is one (upstream writes through the handle's client set), else only to the
    /// store. Feature gates set on the handle
    /// ([`Handle::set_feature_gates`](crate::framework::Handle::set_feature_gates)) are
    /// handed to the store ([`DraStore::set_feature_gates`]); without them the store
    /// keeps its own. `bindingTimeout` (a Go duration such as `"10m0s"`, positive) sets
    /// [`DynamicResources::with_binding_timeout`]; `filterTimeout` (not negative, `"0s"`
    /// switches it off) sets [`DynamicResources::with_filter_timeout`].
    ///
    /// ```
    /// use std::sync::Arc;
    /// use schedkit::dra::DraStore;
    /// use schedkit::framework::Handle;
    /// use schedkit::plugins::dynamic_resources::DynamicResources;
    /// let handle = Handle::default();
    /// assert!(DynamicResources::from_config(None, &handle).is_ok());
    /// assert!(handle.shared::<DraStore>().is_some(), "a store is shared when none was");
    /// let args = serde_json::json!({"bindingTimeout": "5m"});
    /// assert!(DynamicResources::from_config(Some(&args), &handle).is_ok());
    /// ```
    pub fn from_config(
        args: Option<&serde_json::Value>,
        handle: &Handle,
    ) -> Result<DynamicResources, DynamicResourcesArgsError> {
        type E = DynamicResourcesArgsError;
        let store = crate::plugins::shared_dra_store(handle);
        if let Some(gates) = handle.feature_gates_if_set() {
            store.set_feature_gates(gates);
        }
        // Group claims (KEP-5729) resolve through the scheduler's PodGroups.
        store.set_pod_group_source(Arc::new(HandlePodGroups(handle.clone())));
        let mut plugin = DynamicResources::new(store).with_clock(handle.clock_arc());
        if let Some(writer) = handle.shared::<Arc<dyn ClaimStatusWriter>>() {
            plugin = plugin.with_writer(Arc::clone(&writer));
        }
        let Some(args) = args else { return Ok(plugin) };
        let obj = args.as_object().ok_or(E::NotAnObject)?;
        if let Some(key) =
            obj.keys().find(|k| !matches!(k.as_str(), "apiVersion" | "kind" | "bindingTimeout" | "filterTimeout"))
        {
            return Err(E::UnknownField(key.clone()));
        }
        let duration = |field: &'static str| -> Result<Option<i64>, E> {
            match obj.get(field) {
                None | Some(serde_json::Value::Null) => Ok(None),
                Some(serde_json::Value::String(s)) => {
                    crate::selector::parse_go_duration(s).map(Some).map_err(|message| E::BadDuration { field, message })
                }
                Some(other) => {
                    Err(E::BadDuration { field, message: format!("expected a duration string, got {other}") })
                }
            }
        };
        if let Some(ns) = duration("filterTimeout")? {
            let ns = u64::try_from(ns).map_err(|_| E::NegativeFilterTimeout)?;
            plugin = plugin.with_filter_timeout(Duration::from_nanos(ns));
        }
        if let Some(ns) = duration("bindingTimeout")? {
            let ns = u64::try_from(ns).ok().filter(|&n| n > 0).ok_or(E::NonPositiveBindingTimeout)?;
            plugin = plugin.with_binding_timeout(Duration::from_nanos(ns));
        }
        Ok(plugin)
    }

    /// The clock PreBind's binding-condition wait and the binding timeout run on (give it
    /// the scheduler's, `Handle::clock_arc`). Default: a real clock.
    #[must_use]
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> DynamicResources {
        self.clock = clock;
        self
    }

    /// How long PreBind waits for device binding conditions (default
    /// [`DEFAULT_BINDING_TIMEOUT`]).
    #[must_use]
    pub fn with_binding_timeout(mut self, timeout: Duration) -> DynamicResources {
        self.binding_timeout = timeout;
        self
    }

    /// How long Filter's allocator may search on one node (upstream
    /// `DynamicResourcesArgs.filterTimeout`, default [`DEFAULT_FILTER_TIMEOUT`]; zero
    /// switches it off). Past it the node is Unschedulable with "timed out trying to
    /// allocate devices", as upstream. The search looks at the plugin's clock
    /// ([`DynamicResources::with_clock`]) once every 1024 devices it tries, never per
    /// device, so it overshoots by at most that much work; the store's step budget
    /// ([`DraStore::set_step_budget`]) still bounds the search when the timeout is off.
    #[must_use]
    pub fn with_filter_timeout(mut self, timeout: Duration) -> DynamicResources {
        self.filter_timeout = timeout;
        self
    }

    /// The plugin with a writer that persists claim statuses.
    #[must_use]
    pub fn with_writer(mut self, writer: Arc<dyn ClaimStatusWriter>) -> DynamicResources {
        self.writer = writer;
        self
    }

    /// The store.
    pub fn store(&self) -> &Arc<DraStore> {
        &self.store
    }

    /// Why the pod's claims don't fit, node by node (schedkit extension): one
    /// [`Diagnosis`] per node that can't take them, e.g. `node-7: cannot allocate all
    /// claims; claim ns/c, request gpus: 3 of 8 requested devices available (3 match)`.
    /// Empty when the pod has no claims or they fit everywhere.
    pub fn diagnose(&self, pod: &PodInfo, snapshot: &Snapshot) -> Result<Vec<Diagnosis>, GatherError> {
        let Some(claims) = self.store.gather(&pod.pod)? else { return Ok(Vec::new()) };
        let mut out = Vec::new();
        for n in snapshot.nodes() {
            if let Err(d) = claims.fits_on(n.name(), &n.node().metadata.labels, n.allocatable())? {
                out.push(d);
            }
        }
        Ok(out)
    }
}

impl Plugin for DynamicResources {
    fn name(&self) -> &str {
        names::DYNAMIC_RESOURCES
    }

    fn register(self: Arc<Self>, points: &mut ExtensionPoints) {
        points
            .pre_enqueue(self.clone())
            .pre_filter(self.clone())
            .filter(self.clone())
            .post_filter(self.clone())
            .score(self.clone())
            .reserve(self.clone())
            .pre_bind(self.clone())
            .enqueue(self.clone())
            .sign(self);
    }
}

impl PreEnqueuePlugin for DynamicResources {
    fn pre_enqueue(&self, pod: &PodInfo) -> Status {
        match self.store.claims_ready(&pod.pod) {
            Ok(()) => Status::SUCCESS,
            Err(GatherError::MissingClaim(key)) => Status::unresolvable(format!("waiting for ResourceClaim {key}")),
            Err(e) => Status::unresolvable(e.to_string()),
        }
    }
}

/// An allocator error as upstream Filter reports it: a timeout makes the node
/// Unschedulable, anything else is an Error that aborts the pod's attempt.
fn alloc_error(e: &AllocError) -> Status {
    match e {
        AllocError::FilterTimeout => Status::unschedulable(e.to_string()),
        _ => Status::error(e.to_string()),
    }
}

impl PreFilterPlugin for DynamicResources {
    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        match self.store.gather_with_requests(&pod.pod, Some(&pod.requests)) {
            Ok(None) => (None, Status::SKIP),
            Ok(Some(claims)) => {
                // Reserve only gets a node name; when devices are reachable through node
                // selectors it needs the node's labels, and for extended resources its
                // allocatable, so keep the nodes (by reference).
                let nodes = (claims.needs_node_labels() || claims.has_extended_resources())
                    .then(|| Arc::new(snapshot.nodes().iter().map(|n| (n.name(), n.node_arc().clone())).collect()));
                let unavailable = if claims.already_allocated().next().is_some() {
                    let u = claims.unavailable_claims_on(
                        self.clock.now(),
                        self.clock.unix_epoch_nanos(),
                        self.binding_timeout,
                    );
                    (!u.is_empty()).then(|| u.into())
                } else {
                    None
                };
                state.write(DraState { claims: Arc::new(claims), nodes, unavailable });
                (None, Status::SUCCESS)
            }
            Err(GatherError::MissingClaim(key)) => {
                (None, Status::unresolvable(format!("waiting for ResourceClaim {key}")))
            }
            Err(GatherError::Alloc(e)) => (None, Status::unresolvable(e.to_string())),
            Err(e @ (GatherError::PodGroupClaim(_) | GatherError::BeingDeleted(_))) => {
                (None, Status::unresolvable(e.to_string()))
            }
            Err(e @ GatherError::PrioritizedListDisabled { .. }) => (None, Status::unschedulable(e.to_string())),
            Err(e) => (None, Status::error(e.to_string())),
        }
    }
}

/// Upstream's Filter reason, first, so the "0/N nodes are available" histogram groups nodes.
pub const REASON_CANNOT_ALLOCATE: &str = "cannot allocate all claims";

/// Filter's verdict for one node: upstream's reason, then one reason per problem (without
/// the node name, so identical nodes share a histogram line; the node is the status's key).
///
/// With invalid pools on the node, upstream reports only "invalid resource pools were
/// encountered"; that text comes first then, and the details after it.
fn diagnosis_status(d: &Diagnosis) -> Status {
    let mut reasons = Vec::with_capacity(d.problems.len() + 1);
    let invalid = matches!(d.problems.first(), Some(crate::dra::Problem::InvalidPools { .. }));
    if !invalid {
        reasons.push(REASON_CANNOT_ALLOCATE.to_owned());
    }
    reasons.extend(d.problems.iter().map(ToString::to_string));
    Status::with_reasons(Code::Unschedulable, reasons)
}

impl FilterPlugin for DynamicResources {
    fn filter(&self, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> Status {
        let Some(DraState { claims, unavailable, .. }) = state.read::<DraState>() else {
            return Status::SUCCESS;
        };
        if unavailable.is_some() {
            // Upstream: a claim whose binding failed or timed out is unavailable on every
            // node, so PostFilter can deallocate it.
            return Status::unschedulable("resourceclaim not available on the node");
        }
        if claims.stale_extended_claim().is_some() {
            // Upstream `filterExtendedResources`: the claim is from a prior cycle;
            // PostFilter deletes it and the next attempt starts afresh.
            return Status::unresolvable("cannot schedule extended resource claim");
        }
        let timeout = (claims.filter_timeout_enabled() && !self.filter_timeout.is_zero())
            .then(|| crate::dra::Timeout { clock: &*self.clock, limit: self.filter_timeout });
        let fits = if claims.has_extended_resources() {
            claims.fits_on_timed(node.name(), &node.node().metadata.labels, node.allocatable(), timeout)
        } else {
            claims.fits_timed(node.name(), &node.node().metadata.labels, timeout)
        };
        match fits {
            Ok(Ok(())) => Status::SUCCESS,
            Ok(Err(d)) => diagnosis_status(&d),
            Err(e) => alloc_error(&e),
        }
    }
}

impl ScorePlugin for DynamicResources {
    /// Upstream Score (`computeScore`): nodes whose allocation uses earlier
    /// `firstAvailable` subrequests score higher, and the pod's claims allocated in an
    /// earlier cycle add what their allocation's subrequests are worth; 0 for pods
    /// without such requests (no allocation is repeated for them).
    fn score(&self, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        let Some(DraState { claims, .. }) = state.read::<DraState>() else { return Ok(0) };
        if !claims.has_prioritized_lists() {
            return Ok(0);
        }
        claims
            .prioritized_list_score(node.name(), &node.node().metadata.labels, node.allocatable())
            .map_err(|e| alloc_error(&e))
    }

    /// [`ScorePlugin::score`] for a chunk of nodes, reading the cycle state once: a pod
    /// whose claims score nothing (no claims, or none with `firstAvailable`
    /// subrequests) gets 0 everywhere without a call per node. Upstream's plugin has no
    /// PreScore, so none is added here either: the plugin sits at the same points.
    fn score_nodes(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: crate::snapshot::NodeList<'_>,
        scores: &mut [NodeScore],
    ) -> Result<(), Status> {
        match state.read::<DraState>() {
            Some(DraState { claims, .. }) if claims.has_prioritized_lists() => {
                for (slot, node) in scores.iter_mut().zip(nodes.iter()) {
                    slot.score = self.score(state, pod, node)?;
                }
            }
            _ => scores.iter_mut().for_each(|slot| slot.score = 0),
        }
        Ok(())
    }

    /// A pod whose claims score nothing (no claims, or none with `firstAvailable`
    /// subrequests) scores 0 on every node, which NormalizeScore leaves 0.
    fn uniform_score(&self, state: &CycleState, _pod: &PodInfo, _nodes: crate::snapshot::NodeList<'_>) -> Option<i64> {
        match state.read::<DraState>() {
            Some(DraState { claims, .. }) if claims.has_prioritized_lists() => None,
            _ => Some(0),
        }
    }

    /// Upstream `NormalizeScore`: `helper.DefaultNormalizeScore(MaxNodeScore, false)`.
    fn normalize(&self, _state: &CycleState, _pod: &PodInfo, scores: &mut [NodeScore]) -> Status {
        crate::plugins::helper::default_normalize_score(crate::framework::MAX_NODE_SCORE, false, scores);
        Status::SUCCESS
    }

    /// Upstream `dynamicresources/dynamicresources.go` NormalizeScore is `DefaultNormalizeScore(MaxNodeScore,
    /// false)`: a function of the column alone.
    fn normalize_reuse(&self) -> crate::framework::NormalizeReuse {
        crate::framework::NormalizeReuse::Column
    }
}

impl PostFilterPlugin for DynamicResources {
    /// Upstream: when no node fits, an allocated claim of the pod that no other pod uses
    /// is deallocated so the next attempt can allocate it elsewhere.
    fn post_filter(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        _snapshot: &Snapshot,
        _statuses: &NodeToStatus,
    ) -> (Option<PostFilterResult>, Status) {
        // Upstream's fast path for a pod without claims: Unschedulable, so the next
        // PostFilter plugin (DefaultPreemption) still runs.
        let Some(DraState { unavailable, .. }) = state.read::<DraState>() else {
            return (None, Status::unschedulable("no new claims to deallocate"));
        };
        let p = &pod.pod;
        let ns = if p.metadata.namespace.is_empty() { "default" } else { p.metadata.namespace.as_str() };
        // Claims whose binding failed or timed out first (upstream considers only those
        // it recorded as unavailable; schedkit then falls back to any allocated claim of
        // the pod used by no other pod).
        let mut order: Vec<String> = unavailable
            .iter()
            .flat_map(|u| u.iter())
            .filter_map(|(k, _)| k.strip_prefix(ns).and_then(|r| r.strip_prefix('/')).map(str::to_owned))
            .collect();
        for pc in &p.spec.resource_claims {
            let Ok(r) = self.store.resolve_claim(p, pc) else { continue };
            if let Some(group) = &r.group
                && let Some(status) = self.release_idle_group(p, group, &r.name)
            {
                return (None, status);
            }
            if !order.contains(&r.name) {
                order.push(r.name);
            }
        }
        for name in order {
            let Some(claim) = self.store.claim(&p.metadata.namespace, &name) else { continue };
            let Some(status) = claim.status.as_ref() else { continue };
            if status.allocation.is_none() {
                continue;
            }
            let only_us = status.reserved_for.is_empty()
                || (status.reserved_for.len() == 1 && status.reserved_for[0].uid == *pod.uid);
            if !only_us {
                continue;
            }
            let mut cleared = (*claim).clone();
            cleared.status = None;
            if let Err(e) = self.writer.update_status(&cleared) {
                return (None, Status::error(format!("deallocating ResourceClaim {name}: {e}")));
            }
            self.store.deallocate(&p.metadata.namespace, &name);
            return (None, Status::unschedulable("deallocation of ResourceClaim completed"));
        }
        // A claim made for the pod's extended resources in an earlier attempt is deleted
        // so the next attempt can make a fresh one (upstream PostFilter).
        if let Some(status) = self.delete_extended_claim(p) {
            return (None, status);
        }
        (None, Status::unschedulable("still not schedulable"))
    }
}

impl ReservePlugin for DynamicResources {
    fn reserve(&self, state: &mut CycleState, pod: &PodInfo, node: &str) -> Status {
        let Some(DraState { nodes, .. }) = state.read::<DraState>() else {
            return Status::SUCCESS;
        };
        // A lookup: `intern` would pin the node's name for the process.
        let n = nodes.as_ref().zip(Symbol::lookup(node)).and_then(|(n, s)| n.get(&s));
        let node_labels = n.map(|n| n.metadata.labels.clone()).unwrap_or_default();
        let allocatable = n.map(|n| n.status.allocatable.to_resources());
        match self.store.reserve_on(&pod.pod, &pod.uid, node, &node_labels, allocatable.as_ref()) {
            Ok(NodeResult::Fit(_)) => Status::SUCCESS,
            Ok(NodeResult::NoFit(d)) => Status::unschedulable(d.to_string()),
            Err(GatherError::MissingClaim(key)) => Status::unresolvable(format!("waiting for ResourceClaim {key}")),
            Err(GatherError::Alloc(e)) => alloc_error(&e),
            Err(e) => Status::error(e.to_string()),
        }
    }

    fn unreserve(&self, state: &mut CycleState, pod: &PodInfo, _node: &str) {
        // Upstream returns at once when PreFilter found no claims (no state, or
        // `state.claims.empty()`); PreFilter writes `DraState` only for a pod with
        // claims, so this is the same test, and it keeps pods without claims (most
        // pods, and every member of a gang without claims) from formatting claim
        // names here.
        if state.read::<DraState>().is_none() {
            return;
        }
        self.store.unreserve(&pod.uid);
        // A claim PreBind made for the pod's extended resources is deleted again
        // (upstream `unreserveExtendedResourceClaim`).
        self.delete_extended_claim(&pod.pod);
        // Upstream also removes the pod from `reservedFor` of allocated claims (a failed
        // PreBind may have added it); the allocation itself stays for the next attempt.
        let p = &pod.pod;
        for pc in &p.spec.resource_claims {
            let Ok(resolved) = self.store.resolve_claim(p, pc) else { continue };
            let name = resolved.name;
            if let Some(group) = &resolved.group {
                // Upstream `unreservePodGroupClaims`: the group keeps its reservation
                // while another member is scheduled.
                let _ = self.release_idle_group(p, group, &name);
                continue;
            }
            let Some(claim) = self.store.claim(&p.metadata.namespace, &name) else { continue };
            let reserved = claim.status.as_ref().is_some_and(|s| s.reserved_for.iter().any(|r| r.uid == *pod.uid));
            if !reserved {
                continue;
            }
            let mut updated = (*claim).clone();
            if let Some(s) = updated.status.as_mut() {
                s.reserved_for.retain(|r| r.uid != *pod.uid);
            }
            // Upstream logs a failed patch and retries on the next attempt.
            if self.writer.update_status(&updated).is_ok() {
                self.store.release(&p.metadata.namespace, &name, &pod.uid);
            }
        }
    }
}

impl PreBindPlugin for DynamicResources {
    fn pre_bind(&self, state: &mut CycleState, pod: &PodInfo, _node: &str) -> Status {
        if state.read::<DraState>().is_none() {
            return Status::SUCCESS;
        }
        let p = &pod.pod;
        let inflight = self.store.inflight(&pod.uid);
        for pc in &p.spec.resource_claims {
            let resolved = match self.store.resolve_claim(p, pc) {
                Ok(r) => r,
                Err(e) => return Status::unresolvable(e.to_string()),
            };
            let consumer = resolved.consumer(p, &pod.uid);
            let name = resolved.name;
            let Some(claim) = self.store.claim(&p.metadata.namespace, &name) else {
                return Status::unresolvable(format!("ResourceClaim {name} was deleted"));
            };
            let key =
                format!("{}/{name}", if p.metadata.namespace.is_empty() { "default" } else { &p.metadata.namespace });
            let allocation = inflight.iter().find(|(k, _)| *k == key).map(|(_, a)| a);
            // Upstream calls `bindClaim` only for a claim not reserved for the pod yet.
            let reserved = claim.status.as_ref().is_some_and(|s| s.reserved_for.iter().any(|r| r.uid == consumer.uid));
            if reserved && allocation.is_none() {
                continue;
            }
            // Upstream `bindClaim`: a claim being deleted, or allocated by someone else
            // since Reserve, fails the binding cycle.
            if claim.is_being_deleted() {
                return Status::error(format!("claim {key} got deleted in the meantime"));
            }
            if allocation.is_some() && claim.status.as_ref().is_some_and(|s| s.allocation.is_some()) {
                return Status::error(format!("claim {key} got allocated elsewhere in the meantime"));
            }
            let mut updated = (*claim).clone();
            let status = updated.status.get_or_insert_with(Default::default);
            if let Some(a) = allocation {
                status.allocation = Some((**a).clone());
            }
            // Upstream `BindTo`: the pod, or for a group claim its PodGroup.
            if !status.reserved_for.iter().any(|r| r.uid == consumer.uid) {
                status.reserved_for.push(consumer);
            }
            let written = if allocation.is_some() {
                self.writer
                    .allocate(&updated)
                    .map_err(|e| format!("add allocation and reservation to claim {key}: {e}"))
            } else {
                self.writer.update_status(&updated).map_err(|e| format!("add reservation to claim {key}: {e}"))
            };
            if let Err(e) = written {
                return Status::error(e);
            }
        }
        if let Some((claim, ext_status)) = self.store.pending_extended_claim(p, &pod.uid) {
            if let Err(e) = self.writer.create_claim(&claim) {
                return Status::error(format!("create claim for extended resources {}: {e}", claim.metadata.name));
            }
            if let Err(e) = self.writer.update_pod_extended_resource_claim_status(p, &ext_status) {
                return Status::error(format!("update pod {} ExtendedResourceClaimStatus: {e}", p.key()));
            }
        }
        let committed = self.store.commit_at(p, &pod.uid, Some(self.clock.now()));
        let waits = committed.iter().any(|c| {
            c.status
                .as_ref()
                .and_then(|s| s.allocation.as_ref())
                .is_some_and(|a| a.devices.results.iter().any(|r| !r.binding_conditions.is_empty()))
        });
        // Upstream returns early when the binding-conditions feature is off.
        if !waits || !self.store.binding_conditions_enabled() {
            return Status::SUCCESS;
        }
        match self.wait_for_binding_conditions(&committed) {
            Ok(()) => Status::SUCCESS,
            Err(e) => Status::error(e.to_string()),
        }
    }
}

impl DynamicResources {
    /// Deletes the claim made for the pod's extended resources, if there is one.
    fn delete_extended_claim(&self, p: &Pod) -> Option<Status> {
        let name = extended_claim_name(p);
        let claim = self.store.claim(&p.metadata.namespace, &name)?;
        if claim.metadata.annotations.get(EXTENDED_RESOURCE_CLAIM_ANNOTATION).is_none_or(|v| v != "true") {
            return None;
        }
        if let Err(e) = self.writer.delete_claim(&claim.metadata.namespace, &name) {
            return Some(Status::error(format!("deleting ResourceClaim {name}: {e}")));
        }
        self.store.remove_claim(&p.metadata.namespace, &name);
        Some(Status::unschedulable("deletion of ResourceClaim completed"))
    }

    /// Waits until every claim is ready for binding (upstream PreBind's
    /// `PollUntilContextTimeout(5s, bindingTimeout, immediate)` over
    /// `isPodReadyForBinding`): checks at once, then each time the clock moves on.
    fn wait_for_binding_conditions(&self, claims: &[Arc<ResourceClaim>]) -> Result<(), BindingError> {
        let start = self.clock.now();
        let mut next_poll = start;
        loop {
            let now = self.clock.now();
            if now >= next_poll {
                next_poll = now + BINDING_POLL;
                let mut ready = true;
                for c in claims {
                    let (ns, name) = (&c.metadata.namespace, &c.metadata.name);
                    let key = format!("{}/{name}", if ns.is_empty() { "default" } else { ns });
                    let Some((state, allocated_at)) = self.store.claim_binding(ns, name) else {
                        return Err(BindingError::ClaimDeleted(key));
                    };
                    match state {
                        BindingState::Ready => {}
                        BindingState::Failed(e) => return Err(e),
                        BindingState::Pending => {
                            if allocated_at.is_some_and(|t| t + self.binding_timeout < now) {
                                return Err(BindingError::Timeout {
                                    claim: key,
                                    seconds: self.binding_timeout.as_secs(),
                                });
                            }
                            ready = false;
                        }
                    }
                }
                if ready {
                    return Ok(());
                }
            }
            let elapsed = now.saturating_sub(start);
            if elapsed >= self.binding_timeout {
                let claim = claims.first().map(|c| c.metadata.name.clone()).unwrap_or_default();
                return Err(BindingError::Timeout { claim, seconds: self.binding_timeout.as_secs() });
            }
            let until = next_poll.saturating_sub(now).min(self.binding_timeout.saturating_sub(elapsed));
            std::thread::sleep(self.clock.real_wait(until.max(Duration::from_millis(1))));
        }
    }
}
