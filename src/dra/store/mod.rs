//! The shared DRA store: its types and settings; loading, gathering, the claim
//! lifecycle and allocation live in the sibling files.
//!
//! The store holds slices, classes, claims and in-flight allocations, updated by the
//! caller and read by the DynamicResources plugin (upstream keeps these in informers plus
//! the scheduler's `AssumeCache` and in-flight allocation map).

mod gather;
mod lifecycle;
mod objects;
mod pod_claims;
mod pod_group_claims;

pub use pod_group_claims::{
    POD_GROUP_CONSUMER_API_GROUP, POD_GROUP_CONSUMER_RESOURCE, PodGroupSource, ResolvedClaim, is_reserved_for_pod,
    pod_group_claim_name, pod_group_consumer,
};

use std::collections::BTreeMap;
use std::sync::Arc;

use ahash::AHashMap;
use parking_lot::{Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};
use smallvec::SmallVec;

use super::allocator::{self, ClaimPlan, DEFAULT_STEP_BUDGET, DeviceChooser, Diagnosis, InUse, SelectorMatches};
use super::compiled::{CompiledClaim, CompiledClass, CompiledTaintRule, ns_or_default};
use super::error::{AllocError, BindingError, DraError};
use super::extended::{MAX_EXTENDED_RESOURCES, is_dra_extended_resource_name};
#[expect(deprecated, reason = "DraStore::set_features/features keep taking DraFeatures for one release")]
use super::features::DraFeatures;
use super::types::{
    ADMIN_ACCESS_NAMESPACE_LABEL, AllocationResult, ContainerExtendedResourceRequest, DeviceTaintRule,
    PodExtendedResourceClaimStatus, ResourceClaim, ResourceClaimSpec, ResourceClaimTemplate, ResourceSlice,
};
use super::world::{self, DeviceId, World};
use crate::framework::{Feature, FeatureGates};
use crate::model::{Labels, Pod, PodResourceClaim, Symbol};

/// Upstream `resourceapi.FirstAvailableDeviceRequestMaxSize`: at most 8 subrequests.
const FIRST_AVAILABLE_MAX: i64 = 8;

/// Where a pod's claim stands.
#[derive(Debug, Clone)]
pub(crate) struct ClaimEntry {
    pub compiled: Arc<CompiledClaim>,
    /// When PreBind recorded the allocation, on the scheduler's clock (upstream
    /// `status.allocation.allocationTimestamp`, which starts the binding timeout).
    pub allocated_at: Option<std::time::Duration>,
}

#[derive(Debug, Default)]
struct Inner {
    slices: BTreeMap<String, Arc<ResourceSlice>>,
    classes: AHashMap<String, Arc<CompiledClass>>,
    claims: AHashMap<String, ClaimEntry>,
    templates: AHashMap<String, Arc<ResourceClaimTemplate>>,
    /// Pod uid -> (claim key, allocation) reserved in flight.
    inflight: AHashMap<String, Vec<(String, Arc<AllocationResult>)>>,
    world: Arc<World>,
    /// The slices, classes, taint rules or feature gates changed since `world` was
    /// built: the next access through [`DraStore::read`]/[`DraStore::write`] rebuilds it.
    /// Loading many slices (an informer's initial list) thus builds the world once, not
    /// once per slice.
    stale: bool,
    alloc_gen: u64,
    in_use: Option<(u64, u64, Arc<InUse>)>,
    chooser: Option<Arc<dyn DeviceChooser>>,
    budget: u64,
    /// Device taint rules by name (upstream applies them in informer order, which is
    /// unspecified; only the order of a device's taints differs).
    rules: BTreeMap<String, Arc<CompiledTaintRule>>,
    /// The feature switches (upstream feature gates).
    features: FeatureGates,
    /// Namespace labels (for the admin access check).
    namespaces: AHashMap<String, BTreeMap<String, String>>,
    /// Extended resource name -> class (explicit `extendedResourceName`s and implicit
    /// `deviceclass.resource.kubernetes.io/<class>` names; the class added last wins, as
    /// upstream's cache follows informer events).
    extended_names: AHashMap<String, String>,
    /// Pod uid -> the extended-resource claim Reserve allocated for it, and its mappings.
    extended_inflight: AHashMap<String, (Arc<CompiledClaim>, Vec<ContainerExtendedResourceRequest>)>,
    /// Pod uid -> what PreBind recorded in the pod's status about its extended-resource claim.
    extended_status: AHashMap<String, PodExtendedResourceClaimStatus>,
    /// Where `podGroupResourceClaim` references are looked up.
    pod_groups: Option<pod_group_claims::GroupSource>,
    /// Group claim key -> (uid of the member that allocated it in flight, allocation):
    /// later members of the group reuse it.
    group_inflight: AHashMap<String, (String, Arc<AllocationResult>)>,
}

/// The DRA objects the scheduler needs, behind one lock. Cheap to share (`Arc`).
///
/// ```
/// use schedkit::dra::{DraStore, DeviceClass, ResourceSlice};
/// let store = DraStore::new();
/// let class: DeviceClass = serde_json::from_str(r#"{"metadata":{"name":"gpu"},
///   "spec":{"selectors":[{"cel":{"expression":"device.driver == \"gpu.example.com\""}}]}}"#).unwrap();
/// store.add_class(class).unwrap();
/// let bad: DeviceClass = serde_json::from_str(r#"{"metadata":{"name":"bad"},
///   "spec":{"selectors":[{"cel":{"expression":"device.driver =="}}]}}"#).unwrap();
/// assert!(store.add_class(bad).unwrap_err().to_string().contains("DeviceClass bad"));
/// ```
#[derive(Debug)]
pub struct DraStore {
    inner: RwLock<Inner>,
    /// Selector results per (world generation, class + request selectors).
    match_cache: Mutex<MatchCache>,
}

impl Default for DraStore {
    fn default() -> Self {
        DraStore::new()
    }
}

/// Selector match bitsets per class + request selectors, for one world generation.
type MatchCache = (u64, AHashMap<String, Arc<SelectorMatches>>);

/// A pod's claims resolved for one cycle (what PreFilter stores in the cycle state).
#[derive(Debug, Clone)]
#[expect(clippy::struct_excessive_bools, reason = "one switch per upstream feature gate it reads")]
pub struct PodClaims {
    pub(crate) world: Arc<World>,
    pub(crate) in_use: Arc<InUse>,
    pub(crate) plans: Vec<ClaimPlan>,
    pub(crate) slots: Vec<(u16, u16)>,
    /// Claims already allocated.
    pub(crate) allocated: Vec<AllocatedClaim>,
    /// Whether binding conditions are enabled.
    pub(crate) binding: bool,
    /// The pod's extended resources backed by DRA, if any.
    pub(crate) extended: Option<Arc<ExtendedPlan>>,
    /// Whether Score has anything to rank: a claim to allocate has a `firstAvailable`
    /// request, or an allocated claim used a subrequest.
    pub(crate) prioritized: bool,
    /// What the pod's claims allocated in earlier cycles add to every node's Score
    /// ([`PodClaims::prioritized_list_score`]).
    pub(crate) allocated_score: i64,
    /// `namespace/name` of a claim made for the pod's extended resources in an earlier
    /// attempt: it fails Filter on every node until PostFilter deletes it.
    pub(crate) stale_extended: Option<String>,
    pub(crate) chooser: Option<Arc<dyn DeviceChooser>>,
    pub(crate) budget: u64,
    /// A claim uses a feature that is switched off where upstream's allocator refuses
    /// it (admin access): Filter fails with this error on every node.
    pub(crate) disabled: Option<AllocError>,
    /// Whether the DynamicResources `filterTimeout` applies (`DRASchedulerFilterTimeout`).
    pub(crate) filter_timeout: bool,
    /// Whether constraints compare list-valued attributes as sets
    /// (`DRAListTypeAttributes`).
    pub(crate) list_attributes: bool,
    /// Whether Filter may first ask the quick search
    /// ([`allocator::quick`](crate::dra::allocator::quick)), decided once per cycle.
    pub(crate) quick: Option<Arc<crate::dra::allocator::quick::QuickSets>>,
}

/// The pod's extended resources backed by DRA (KEP-5004), resolved in PreFilter: which
/// resources a node provides through DRA depends on its allocatable, so there is one
/// claim variant per subset of `backed`.
#[derive(Debug)]
pub(crate) struct ExtendedPlan {
    /// `namespace/name` of the claim the scheduler makes (`<pod>-extended-resources`;
    /// upstream uses a generated name).
    pub key: String,
    /// DRA-backed resources the pod requests, in bit order.
    pub backed: SmallVec<[Symbol; 2]>,
    /// Other DRA-style extended resource names the pod requests: a node must list them.
    pub unbacked: SmallVec<[Symbol; 2]>,
    /// Per mask of `backed` provided through DRA (index 0: none).
    pub variants: Vec<Option<ExtVariant>>,
}

/// One claim variant.
#[derive(Debug)]
pub(crate) struct ExtVariant {
    pub claim: Arc<CompiledClaim>,
    pub mappings: Vec<ContainerExtendedResourceRequest>,
    /// The pod's other plans plus this claim's, and their slots.
    pub plans: Vec<ClaimPlan>,
    pub slots: Vec<(u16, u16)>,
}

/// The name of the claim the scheduler makes for a pod's extended resources.
pub fn extended_claim_name(pod: &Pod) -> String {
    format!("{}-extended-resources", pod.metadata.name)
}

/// An allocated claim of the pod.
#[derive(Debug, Clone)]
pub(crate) struct AllocatedClaim {
    pub key: String,
    /// Where the allocation is usable (None: any node).
    pub node_selector: Option<crate::model::NodeSelector>,
    /// Where its device binding conditions stand.
    pub binding: BindingState,
    /// When the allocation was recorded (clock time).
    pub allocated_at: Option<std::time::Duration>,
    /// `status.allocation.allocationTimestamp` (nanoseconds since the Unix epoch), for
    /// claims allocated before the store saw them.
    pub allocation_timestamp: Option<i128>,
}

/// Where an allocated claim's device binding conditions stand (upstream
/// `dynamicresources.go`, `isClaimReadyForBinding`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BindingState {
    /// Every result's binding conditions are `True` in `status.devices` (trivially, when
    /// no result has binding conditions).
    Ready,
    /// Some binding condition is not `True` yet (or the claim is not allocated).
    Pending,
    /// A binding failure condition is `True`.
    Failed(BindingError),
}

/// Where `claim`'s device binding conditions stand: for each allocated device with
/// binding conditions, its `status.devices` entry (matched by driver, pool and device,
/// not share id, as upstream's `getAllocatedDeviceStatus`) must exist, no failure
/// condition may be `True`, and every binding condition must be `True`.
pub fn binding_state(claim: &ResourceClaim) -> BindingState {
    let Some(status) = claim.status.as_ref() else { return BindingState::Pending };
    let Some(allocation) = status.allocation.as_ref() else { return BindingState::Pending };
    for r in &allocation.devices.results {
        if r.binding_conditions.is_empty() {
            continue;
        }
        let Some(dev) =
            status.devices.iter().find(|d| d.device == r.device && d.driver == r.driver && d.pool == r.pool)
        else {
            return BindingState::Pending;
        };
        for f in &r.binding_failure_conditions {
            if let Some(c) = dev.condition(f).filter(|c| c.is_true()) {
                return BindingState::Failed(BindingError::Failed {
                    claim: claim_key(&claim.metadata.namespace, &claim.metadata.name),
                    reason: c.reason.clone(),
                    message: c.message.clone(),
                });
            }
        }
        if !r.binding_conditions.iter().all(|b| dev.condition(b).is_some_and(super::types::Condition::is_true)) {
            return BindingState::Pending;
        }
    }
    BindingState::Ready
}

fn has_binding_conditions(claim: &ResourceClaim) -> bool {
    claim
        .status
        .as_ref()
        .and_then(|s| s.allocation.as_ref())
        .is_some_and(|a| a.devices.results.iter().any(|r| !r.binding_conditions.is_empty()))
}

/// Why a pod's claims can't be gathered.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum GatherError {
    /// A claim the pod names isn't in the store yet.
    #[error("waiting for ResourceClaim {0}")]
    MissingClaim(String),
    /// A claim the pod names is being deleted (upstream `foreachPodResourceClaim`,
    /// UnschedulableAndUnresolvable); the claim's name.
    #[error("resourceclaim {0:?} is being deleted")]
    BeingDeleted(String),
    /// A class a claim needs was removed.
    #[error(transparent)]
    Alloc(#[from] AllocError),
    /// A claim to allocate has a `firstAvailable` request while `DRAPrioritizedList` is
    /// off ([`Feature::DRAPrioritizedList`]; upstream PreFilter, Unschedulable).
    #[error(
        "resource claim {claim}, request {request}: has subrequests, but the DRAPrioritizedList feature is disabled"
    )]
    PrioritizedListDisabled {
        /// `namespace/name`.
        claim: String,
        /// The request.
        request: String,
    },
    /// The pod requests more DRA-backed extended resources than schedkit handles.
    #[error(
        "pod {pod} requests {count} extended resources backed by DRA; schedkit handles at most {MAX_EXTENDED_RESOURCES}"
    )]
    TooManyExtendedResources {
        /// `namespace/name`.
        pod: String,
        /// How many.
        count: usize,
    },
    /// A `podGroupResourceClaim` reference does not resolve (upstream
    /// `resourceclaim.Name` with the pod's PodGroup): the gate is off, the pod is in no
    /// group, the PodGroup is missing or lacks the claim.
    #[error("{0}")]
    PodGroupClaim(String),
}

/// What a node run returned.
#[derive(Debug)]
pub enum NodeResult {
    /// The claims fit; allocations in claim order (only claims that needed one).
    Fit(Vec<(String, AllocationResult)>),
    /// They don't, and why.
    NoFit(Diagnosis),
}

/// Audit of the store's invariants (tests and debugging).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Audit {
    /// Devices held by more than one non-admin allocation (their IDs pin their names:
    /// an audit that finds any has found a bug).
    pub double_allocated: Vec<DeviceId>,
    /// Counters consumed beyond their capacity (`driver/pool/set/counter`), and
    /// consumable capacities of shared devices consumed beyond their value
    /// (`driver/pool/device/capacity/name`).
    pub overdrawn_counters: Vec<String>,
}

/// The claim name a pod's claim resolves to: `resourceClaimName`, or for a template the
/// claim [`DraStore::instantiate_template`] makes (`<pod>-<claim>`; upstream's controller
/// uses a generated name recorded in the pod status).
pub fn claim_name_for(pod: &Pod, pc: &PodResourceClaim) -> String {
    match &pc.resource_claim_name {
        Some(n) => n.clone(),
        None => format!("{}-{}", pod.metadata.name, pc.name),
    }
}

/// What a result on a multi-allocatable device consumes, from its `consumedCapacity`.
fn consumed_capacity(e: &world::DevEntry, r: &super::types::DeviceRequestAllocationResult) -> Vec<(usize, i128)> {
    let mut out = Vec::new();
    for (name, q) in &r.consumed_capacity {
        let key = crate::selector::AttributeKey::qualified(name, e.device.driver());
        if let Some(si) = e.shares.iter().position(|s| s.key == key) {
            out.push((si, super::slice::milli(q)));
        }
    }
    out
}

/// What an allocated claim adds to the DynamicResources Score: `8 - i` for each
/// `firstAvailable` request whose allocation used its subrequest `i` (upstream
/// `dynamicresources.go`, `computeScore`, which reads `status.allocation` for claims
/// allocated in an earlier cycle).
fn subrequest_score(claim: &ResourceClaim, allocation: &AllocationResult) -> i64 {
    let mut score = 0;
    for req in &claim.spec.devices.requests {
        for (i, sub) in req.first_available.iter().enumerate() {
            let used = allocation.devices.results.iter().any(|r| {
                r.request.split_once('/').is_some_and(|(parent, child)| parent == req.name && child == sub.name)
            });
            if used {
                score += FIRST_AVAILABLE_MAX - i as i64;
            }
        }
    }
    score
}

fn claim_key(ns: &str, name: &str) -> String {
    format!("{}/{name}", ns_or_default(ns))
}

/// Which of the world's devices pass a class's selectors and then `extra` (a request's),
/// stopping at the first false or error as upstream's `isSelectable`; devices with
/// binding conditions are left out unless `binding`.
fn selector_bits(
    world: &World,
    class: &CompiledClass,
    extra: &[Arc<crate::selector::Selector>],
    binding: bool,
) -> SelectorMatches {
    let mut m = SelectorMatches { bits: vec![0u64; world.devices.len().div_ceil(64)], errors: Vec::new() };
    let class_n = class.selectors.len();
    for (i, e) in world.devices.iter().enumerate() {
        if !binding && e.binding.is_some() {
            continue;
        }
        let mut ok = true;
        for (j, sel) in class.selectors.iter().chain(extra.iter()).enumerate() {
            match sel.matches(&e.device) {
                Ok(true) => {}
                Ok(false) => {
                    ok = false;
                    break;
                }
                Err(err) => {
                    let whose = if j < class_n {
                        format!("class {}: selector #{j}", class.class.metadata.name)
                    } else {
                        format!("selector #{}", j - class_n)
                    };
                    m.errors.push((i as u32, format!("{whose}: CEL runtime error: {err}")));
                    ok = false;
                    break;
                }
            }
        }
        if ok {
            m.bits[i / 64] |= 1 << (i % 64);
        }
    }
    m
}

/// Per-cycle view of the devices behind extended resources, for NodeResourcesFit's
/// Score (KEP-5004; upstream `calculateDRAResourceTotals`): for each scored resource a
/// device class maps, which devices the class's selectors match, and which devices
/// are allocated or reserved. Built once per cycle by
/// [`DraStore::extended_device_counts`]; reading it takes no lock.
#[derive(Debug, Clone)]
pub struct ExtendedDeviceCounts {
    world: Arc<World>,
    in_use: Arc<InUse>,
    classes: SmallVec<[Option<Arc<SelectorMatches>>; 4]>,
}

impl ExtendedDeviceCounts {
    /// `(devices, allocated)` of the class behind resource `index` (in the order given to
    /// [`DraStore::extended_device_counts`]) reachable from `node`: every device of every
    /// slice that reaches the node and matches the class's selectors counts (taints and
    /// binding conditions do not matter), and one counts as allocated when a claim or an
    /// in-flight reservation holds it or a share of it. `None` when no class maps the
    /// resource; `(0, 0)` when a selector fails at run time on a device the node reaches,
    /// which upstream logs and scores as if the node had none.
    pub fn counts(&self, index: usize, node: Symbol, labels: &Labels) -> Option<(i64, i64)> {
        let m = self.classes.get(index)?.as_ref()?;
        let (mut devices, mut allocated, mut failed) = (0i64, 0i64, false);
        self.world.for_each_on_node(node, labels, |d| {
            if allocator::bit(&m.bits, d) {
                devices += 1;
                if self.in_use.contains(d) || self.in_use.shared_in_use(d) {
                    allocated += 1;
                }
            } else if !failed && m.errors.iter().any(|&(e, _)| e == d) {
                failed = true;
            }
        });
        Some(if failed { (0, 0) } else { (devices, allocated) })
    }
}

impl DraStore {
    /// An empty store.
    pub fn new() -> DraStore {
        DraStore {
            inner: RwLock::new(Inner {
                budget: DEFAULT_STEP_BUDGET,
                world: Arc::new(World::default()),
                features: FeatureGates::new(),
                ..Inner::default()
            }),
            match_cache: Mutex::new((0, AHashMap::new())),
        }
    }

    /// Sets the chooser that orders candidates (default: upstream order).
    pub fn set_chooser(&self, chooser: Option<Arc<dyn DeviceChooser>>) {
        self.write().chooser = chooser;
    }

    /// Sets the feature gates the store reads (default: v1.36's): the DRA ones switch the
    /// allocator's optional features, the others are kept for whoever reads them.
    ///
    /// ```
    /// use schedkit::dra::DraStore;
    /// use schedkit::framework::Feature;
    /// let store = DraStore::new();
    /// let gates = store.feature_gates();
    /// assert!(gates.enabled(Feature::DRAPrioritizedList) && !gates.enabled(Feature::DRADeviceTaintRules));
    /// store.set_feature_gates(gates.with(Feature::DRAPrioritizedList, false));
    /// assert!(!store.feature_gates().enabled(Feature::DRAPrioritizedList));
    /// ```
    pub fn set_feature_gates(&self, gates: FeatureGates) {
        let mut inner = self.inner.write();
        if inner.features != gates {
            inner.features = gates;
            Self::rebuild(&mut inner);
        }
    }

    /// The feature gates in effect ([`DraStore::set_feature_gates`]).
    pub fn feature_gates(&self) -> FeatureGates {
        self.read().features
    }

    /// Switches the optional DRA features.
    ///
    /// Deprecated: moved to [`DraStore::set_feature_gates`].
    #[deprecated(since = "0.2.0", note = "moved to DraStore::set_feature_gates")]
    #[expect(deprecated, reason = "takes the deprecated DraFeatures")]
    pub fn set_features(&self, features: DraFeatures) {
        let gates = features.onto(self.feature_gates());
        self.set_feature_gates(gates);
    }

    /// The DRA feature switches in effect.
    ///
    /// Deprecated: moved to [`DraStore::feature_gates`].
    #[deprecated(since = "0.2.0", note = "moved to DraStore::feature_gates")]
    #[expect(deprecated, reason = "returns the deprecated DraFeatures")]
    pub fn features(&self) -> DraFeatures {
        DraFeatures::from(self.feature_gates())
    }

    /// Sets the per-node search step budget (default [`DEFAULT_STEP_BUDGET`]).
    pub fn set_step_budget(&self, budget: u64) {
        self.write().budget = budget.max(1);
    }

    /// Marks the device world out of date; it is rebuilt on the next access.
    fn rebuild(inner: &mut Inner) {
        inner.stale = true;
    }

    /// Builds the device world from the slices, classes and rules if they changed.
    fn refresh(inner: &mut Inner) {
        if !inner.stale {
            return;
        }
        let generation = inner.world.generation + 1;
        let rules: Vec<Arc<CompiledTaintRule>> = if inner.features.enabled(Feature::DRADeviceTaintRules) {
            inner.rules.values().cloned().collect()
        } else {
            Vec::new()
        };
        inner.world = Arc::new(world::build(&inner.slices, generation, &rules, &inner.classes, inner.features));
        inner.in_use = None;
        inner.stale = false;
    }

    /// The store for reading, its device world up to date.
    fn read(&self) -> RwLockReadGuard<'_, Inner> {
        let r = self.inner.read();
        if !r.stale {
            return r;
        }
        drop(r);
        RwLockWriteGuard::downgrade(self.write())
    }

    /// The store for writing, its device world up to date.
    fn write(&self) -> RwLockWriteGuard<'_, Inner> {
        let mut w = self.inner.write();
        Self::refresh(&mut w);
        w
    }

    /// Switches [`DeviceTaintRule`]s on or off (upstream feature gate
    /// `DRADeviceTaintRules`, beta and off by default in v1.36, which schedkit follows:
    /// a new store ignores rules until this is called with `true`). Rules added while off
    /// are kept, validated, and apply as soon as the switch is on; switching off removes
    /// their taints from the next cycle on, the slices' own taints stay.
    pub fn set_device_taint_rules(&self, enabled: bool) {
        let mut inner = self.inner.write();
        if inner.features.enabled(Feature::DRADeviceTaintRules) != enabled {
            inner.features.set_enabled(Feature::DRADeviceTaintRules, enabled);
            Self::rebuild(&mut inner);
        }
    }

    /// Whether taint rules apply (see [`DraStore::set_device_taint_rules`]).
    pub fn device_taint_rules_enabled(&self) -> bool {
        self.read().features.enabled(Feature::DRADeviceTaintRules)
    }

    /// Adds or replaces a [`DeviceTaintRule`] (by name), compiling its selectors; with
    /// taint rules switched on ([`DraStore::set_device_taint_rules`], off by default as
    /// upstream's `DRADeviceTaintRules` gate in v1.36) its taint applies to matching
    /// devices from the next cycle on.
    ///
    /// ```
    /// use schedkit::dra::{DeviceTaintRule, DraStore, ResourceSlice};
    /// let store = DraStore::new();
    /// store.set_device_taint_rules(true);
    /// let slice: ResourceSlice = serde_json::from_str(r#"{"metadata":{"name":"s"},"spec":{
    ///   "driver":"gpu.example.com","nodeName":"n1","pool":{"name":"n1","resourceSliceCount":1},
    ///   "devices":[{"name":"gpu-0"},{"name":"gpu-1"}]}}"#).unwrap();
    /// store.add_slice(slice).unwrap();
    /// let rule: DeviceTaintRule = serde_json::from_str(r#"{"metadata":{"name":"maintenance"},
    ///   "spec":{"deviceSelector":{"device":"gpu-1"},
    ///           "taint":{"key":"example.com/maintenance","effect":"NoSchedule"}}}"#).unwrap();
    /// store.add_taint_rule(rule).unwrap();
    /// assert!(store.device_taints("gpu.example.com", "n1", "gpu-0").unwrap().is_empty());
    /// assert_eq!(store.device_taints("gpu.example.com", "n1", "gpu-1").unwrap().len(), 1);
    /// ```
    pub fn add_taint_rule(&self, rule: DeviceTaintRule) -> Result<(), DraError> {
        let compiled = CompiledTaintRule::new(rule)?;
        let mut inner = self.inner.write();
        inner.rules.insert(compiled.rule.metadata.name.clone(), Arc::new(compiled));
        if inner.features.enabled(Feature::DRADeviceTaintRules) {
            Self::rebuild(&mut inner);
        }
        Ok(())
    }

    /// Removes a taint rule.
    pub fn remove_taint_rule(&self, name: &str) -> bool {
        let mut inner = self.inner.write();
        let removed = inner.rules.remove(name).is_some();
        if removed && inner.features.enabled(Feature::DRADeviceTaintRules) {
            Self::rebuild(&mut inner);
        }
        removed
    }

    /// The taints the allocator sees on a device: the slice's own, then those of
    /// matching taint rules (`NoSchedule`/`NoExecute` only).
    pub fn device_taints(&self, driver: &str, pool: &str, device: &str) -> Option<Vec<crate::model::Taint>> {
        let inner = self.read();
        let w = &inner.world;
        let d = *w.index.get(&DeviceId::lookup(driver, pool, device)?)?;
        Some(w.devices[d as usize].taints.to_vec())
    }

    /// Records a namespace's labels (what the admin access check reads; a namespace
    /// never recorded has none).
    pub fn set_namespace_labels(&self, namespace: &str, labels: BTreeMap<String, String>) {
        self.write().namespaces.insert(namespace.to_owned(), labels);
    }

    /// The device class serving an extended resource name (its `extendedResourceName`,
    /// or the implicit `deviceclass.resource.kubernetes.io/<class>`), if any (upstream
    /// `DeviceClassResolver.GetDeviceClass`).
    ///
    /// ```
    /// use schedkit::dra::{DeviceClass, DraStore};
    /// let store = DraStore::new();
    /// let class: DeviceClass = serde_json::from_str(r#"{"metadata":{"name":"gpu"},
    ///   "spec":{"extendedResourceName":"example.com/gpu"}}"#).unwrap();
    /// store.add_class(class).unwrap();
    /// assert_eq!(store.device_class_for_resource("example.com/gpu").as_deref(), Some("gpu"));
    /// assert_eq!(
    ///     store.device_class_for_resource("deviceclass.resource.kubernetes.io/gpu").as_deref(),
    ///     Some("gpu")
    /// );
    /// ```
    pub fn device_class_for_resource(&self, resource: &str) -> Option<String> {
        let inner = self.read();
        if !inner.features.enabled(Feature::DRAExtendedResource) {
            return None;
        }
        inner.extended_names.get(resource).cloned()
    }

    /// The device view NodeResourcesFit's Score needs for `resources` (the scored ones, in
    /// order), or `None` when none of them is a DRA-style extended resource a class maps:
    /// upstream then skips the DRA state altogether (`getDRAPreScoredParams`).
    pub fn extended_device_counts(&self, resources: &[&str]) -> Option<ExtendedDeviceCounts> {
        let backed = |inner: &Inner, r: &str| {
            if !inner.features.enabled(Feature::DRAExtendedResource) || !is_dra_extended_resource_name(r) {
                return None;
            }
            inner.extended_names.get(r).and_then(|c| inner.classes.get(c)).cloned()
        };
        if !resources.iter().any(|r| backed(&self.read(), r).is_some()) {
            return None;
        }
        let mut inner = self.write();
        let in_use = Self::in_use(&mut inner, None);
        let world = inner.world.clone();
        let mut cache = self.match_cache.lock();
        if cache.0 != world.generation {
            *cache = (world.generation, AHashMap::new());
        }
        let classes = resources
            .iter()
            .map(|r| {
                let class = backed(&inner, r)?;
                let key = format!("{}\u{3}extended-score", class.key);
                Some(cache.1.entry(key).or_insert_with(|| Arc::new(selector_bits(&world, &class, &[], true))).clone())
            })
            .collect();
        Some(ExtendedDeviceCounts { world, in_use, classes })
    }

    /// What PreBind recorded in a pod's status about the claim made for its extended
    /// resources (upstream `pod.status.extendedResourceClaimStatus`).
    pub fn extended_resource_claim_status(&self, pod_uid: &str) -> Option<PodExtendedResourceClaimStatus> {
        self.read().extended_status.get(pod_uid).cloned()
    }

    /// Switches device binding conditions on (the default, as upstream's
    /// `DRADeviceBindingConditions` gate in v1.36) or off. Off, devices with binding
    /// conditions are never allocated and results carry no conditions.
    pub fn set_binding_conditions(&self, enabled: bool) {
        let mut inner = self.write();
        inner.features.set_enabled(Feature::DRADeviceBindingConditions, enabled);
        Self::rebuild(&mut inner);
    }

    /// Whether device binding conditions are enabled (see
    /// [`DraStore::set_binding_conditions`]).
    pub fn binding_conditions_enabled(&self) -> bool {
        self.read().features.enabled(Feature::DRADeviceBindingConditions)
    }

    fn check_admin_access(
        inner: &Inner,
        object: &str,
        namespace: &str,
        spec: &ResourceClaimSpec,
    ) -> Result<(), DraError> {
        let Some(index) =
            spec.devices.requests.iter().position(|r| r.exactly.as_ref().is_some_and(|e| e.admin_access == Some(true)))
        else {
            return Ok(());
        };
        let ns = ns_or_default(namespace);
        let allowed =
            inner.namespaces.get(ns).and_then(|l| l.get(ADMIN_ACCESS_NAMESPACE_LABEL)).is_some_and(|v| v == "true");
        if allowed {
            return Ok(());
        }
        Err(DraError::AdminAccessForbidden { object: object.to_owned(), index, namespace: ns.to_owned() })
    }
}
