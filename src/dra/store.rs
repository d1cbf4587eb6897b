//! The shared DRA store: slices, classes, claims and in-flight allocations, updated by the
//! caller and read by the DynamicResources plugin (upstream keeps these in informers plus
//! the scheduler's `AssumeCache` and in-flight allocation map).

use std::collections::BTreeMap;
use std::sync::Arc;

use ahash::AHashMap;
use parking_lot::{Mutex, RwLock};
use smallvec::SmallVec;

use super::allocator::{
    self, ClaimPlan, DEFAULT_STEP_BUDGET, DeviceChooser, Diagnosis, InUse, Outcome, SelectorMatches,
};
use super::compiled::{CompiledClaim, CompiledClass, CompiledTaintRule, ns_or_default};
use super::error::{AllocError, BindingError, DraError};
use super::extended::{self, MAX_EXTENDED_RESOURCES, is_dra_extended_resource_name};
#[expect(deprecated, reason = "DraStore::set_features/features keep taking DraFeatures for one release")]
use super::features::DraFeatures;
use super::types::{
    ADMIN_ACCESS_NAMESPACE_LABEL, AllocatedDeviceStatus, AllocationResult, ContainerExtendedResourceRequest,
    DeviceClass, DeviceTaintRule, EXTENDED_RESOURCE_CLAIM_ANNOTATION, IMPLICIT_EXTENDED_RESOURCE_PREFIX,
    PodExtendedResourceClaimStatus, ResourceClaim, ResourceClaimConsumerReference, ResourceClaimSpec,
    ResourceClaimStatus, ResourceClaimTemplate, ResourceSlice,
};
use super::world::{self, DeviceId, World};
use crate::framework::{Feature, FeatureGates};
use crate::model::{Labels, Pod, PodResourceClaim, Resources, Symbol};

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
    /// Devices held by more than one non-admin allocation.
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
        self.inner.write().chooser = chooser;
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
        self.inner.read().features
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
        self.inner.write().budget = budget.max(1);
    }

    fn rebuild(inner: &mut Inner) {
        let generation = inner.world.generation + 1;
        let rules: Vec<Arc<CompiledTaintRule>> = if inner.features.enabled(Feature::DRADeviceTaintRules) {
            inner.rules.values().cloned().collect()
        } else {
            Vec::new()
        };
        inner.world = Arc::new(world::build(&inner.slices, generation, &rules, &inner.classes, inner.features));
        inner.in_use = None;
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
        self.inner.read().features.enabled(Feature::DRADeviceTaintRules)
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
        let inner = self.inner.read();
        let w = &inner.world;
        let d = *w.index.get(&DeviceId::new(driver, pool, device))?;
        Some(w.devices[d as usize].taints.to_vec())
    }

    /// Records a namespace's labels (what the admin access check reads; a namespace
    /// never recorded has none).
    pub fn set_namespace_labels(&self, namespace: &str, labels: BTreeMap<String, String>) {
        self.inner.write().namespaces.insert(namespace.to_owned(), labels);
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
        let inner = self.inner.read();
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
        if !resources.iter().any(|r| backed(&self.inner.read(), r).is_some()) {
            return None;
        }
        let mut inner = self.inner.write();
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
        self.inner.read().extended_status.get(pod_uid).cloned()
    }

    /// Switches device binding conditions on (the default, as upstream's
    /// `DRADeviceBindingConditions` gate in v1.36) or off. Off, devices with binding
    /// conditions are never allocated and results carry no conditions.
    pub fn set_binding_conditions(&self, enabled: bool) {
        let mut inner = self.inner.write();
        inner.features.set_enabled(Feature::DRADeviceBindingConditions, enabled);
        Self::rebuild(&mut inner);
    }

    /// Whether device binding conditions are enabled (see
    /// [`DraStore::set_binding_conditions`]).
    pub fn binding_conditions_enabled(&self) -> bool {
        self.inner.read().features.enabled(Feature::DRADeviceBindingConditions)
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

    /// Adds or replaces a slice (by name). Validates it first, on its own: a device name
    /// repeated within the slice is an error, one repeated in another slice of the pool
    /// makes the pool invalid where both are seen.
    pub fn add_slice(&self, slice: ResourceSlice) -> Result<(), DraError> {
        super::slice::validate_slice(&slice)?;
        let mut inner = self.inner.write();
        // Duplicate device names across slices of one pool are not a load error (the API
        // server accepts them): pool gathering makes the pool invalid for the nodes that
        // see both slices (upstream `validateDeviceNames`).
        inner.slices.insert(slice.metadata.name.clone(), Arc::new(slice));
        Self::rebuild(&mut inner);
        Ok(())
    }

    /// Removes a slice.
    pub fn remove_slice(&self, name: &str) -> bool {
        let mut inner = self.inner.write();
        let removed = inner.slices.remove(name).is_some();
        if removed {
            Self::rebuild(&mut inner);
        }
        removed
    }

    /// Adds or replaces a device class, compiling its selectors.
    pub fn add_class(&self, class: DeviceClass) -> Result<(), DraError> {
        let compiled = CompiledClass::new(class)?;
        let mut inner = self.inner.write();
        let name = compiled.class.metadata.name.clone();
        if let Some(ext) = &compiled.class.spec.extended_resource_name {
            if !is_dra_extended_resource_name(ext) || ext.starts_with(IMPLICIT_EXTENDED_RESOURCE_PREFIX) {
                return Err(DraError::InvalidClass {
                    class: name,
                    reason: format!("spec.extendedResourceName {ext:?} is not an extended resource name"),
                });
            }
        }
        inner.extended_names.retain(|_, c| *c != name);
        if let Some(ext) = &compiled.class.spec.extended_resource_name {
            inner.extended_names.insert(ext.clone(), name.clone());
        }
        inner.extended_names.insert(format!("{IMPLICIT_EXTENDED_RESOURCE_PREFIX}{name}"), name.clone());
        inner.classes.insert(name, Arc::new(compiled));
        if inner
            .rules
            .values()
            .any(|r| r.rule.spec.device_selector.as_ref().is_some_and(|s| s.device_class_name.is_some()))
        {
            Self::rebuild(&mut inner);
        }
        Ok(())
    }

    /// Removes a device class. Claims already loaded keep their compiled selectors but
    /// fail to schedule until the class is back.
    pub fn remove_class(&self, name: &str) -> bool {
        let mut inner = self.inner.write();
        let removed = inner.classes.remove(name).is_some();
        inner.extended_names.retain(|_, c| c != name);
        if removed
            && inner
                .rules
                .values()
                .any(|r| r.rule.spec.device_selector.as_ref().is_some_and(|s| s.device_class_name.is_some()))
        {
            Self::rebuild(&mut inner);
        }
        removed
    }

    /// Adds or replaces a claim: validates it, checks its classes exist and compiles its
    /// selectors. A claim with `status.allocation` counts as holding its devices.
    pub fn add_claim(&self, claim: ResourceClaim) -> Result<(), DraError> {
        let mut inner = self.inner.write();
        let object = format!("ResourceClaim {}", claim_key(&claim.metadata.namespace, &claim.metadata.name));
        Self::check_admin_access(&inner, &object, &claim.metadata.namespace, &claim.spec)?;
        let classes = &inner.classes;
        let compiled = CompiledClaim::new(claim, |c| classes.get(c).cloned())?;
        let key = compiled.key.clone();
        // Keep the allocation time while the allocation is the same one.
        let allocated_at = inner.claims.get(&key).and_then(|e| {
            let old = e.compiled.claim.status.as_ref().and_then(|s| s.allocation.as_ref());
            let new = compiled.claim.status.as_ref().and_then(|s| s.allocation.as_ref());
            if old.is_some() && old == new { e.allocated_at } else { None }
        });
        inner.claims.insert(key, ClaimEntry { compiled: Arc::new(compiled), allocated_at });
        inner.alloc_gen += 1;
        Ok(())
    }

    /// Removes a claim (its devices become free).
    pub fn remove_claim(&self, namespace: &str, name: &str) -> bool {
        let mut inner = self.inner.write();
        inner.alloc_gen += 1;
        inner.claims.remove(&claim_key(namespace, name)).is_some()
    }

    /// The claim as stored (with its current status).
    pub fn claim(&self, namespace: &str, name: &str) -> Option<Arc<ResourceClaim>> {
        self.inner.read().claims.get(&claim_key(namespace, name)).map(|e| e.compiled.claim.clone())
    }

    /// Adds a claim template. Like a claim, it may ask for admin access only in a
    /// namespace labelled for it.
    pub fn add_template(&self, template: ResourceClaimTemplate) -> Result<(), DraError> {
        let key = claim_key(&template.metadata.namespace, &template.metadata.name);
        let mut inner = self.inner.write();
        let object = format!("ResourceClaimTemplate {key}");
        Self::check_admin_access(&inner, &object, &template.metadata.namespace, &template.spec.spec)?;
        inner.templates.insert(key, Arc::new(template));
        Ok(())
    }

    /// Makes the claim a pod's template reference stands for, as the resourceclaim
    /// controller does, named [`claim_name_for`]. Returns the claim's name.
    pub fn instantiate_template(&self, pod: &Pod, pc: &PodResourceClaim) -> Result<String, DraError> {
        let ns = &pod.metadata.namespace;
        let Some(t) = pc.resource_claim_template_name.as_ref() else {
            return Err(DraError::InvalidClaim {
                claim: pc.name.clone(),
                reason: "no resourceClaimTemplateName".into(),
            });
        };
        let template = self
            .inner
            .read()
            .templates
            .get(&claim_key(ns, t))
            .cloned()
            .ok_or_else(|| DraError::ClaimNotFound(format!("template {}", claim_key(ns, t))))?;
        let name = claim_name_for(pod, pc);
        let mut claim = ResourceClaim { spec: template.spec.spec.clone(), ..ResourceClaim::default() };
        claim.metadata.name = name.clone();
        claim.metadata.namespace = ns.clone();
        self.add_claim(claim)?;
        Ok(name)
    }

    /// Whether every claim the pod names is in the store (PreEnqueue).
    pub fn missing_claim(&self, pod: &Pod) -> Option<String> {
        let inner = self.inner.read();
        pod.spec.resource_claims.iter().find_map(|pc| {
            let key = claim_key(&pod.metadata.namespace, &claim_name_for(pod, pc));
            (!inner.claims.contains_key(&key)).then_some(key)
        })
    }

    fn in_use(inner: &mut Inner, exclude_pod: Option<&str>) -> Arc<InUse> {
        if exclude_pod.is_none()
            && let Some((wg, ag, u)) = &inner.in_use
            && *wg == inner.world.generation
            && *ag == inner.alloc_gen
        {
            return u.clone();
        }
        let w = &inner.world;
        let mut u = InUse {
            devices: vec![0; w.devices.len().div_ceil(64)],
            counters: vec![0; w.counter_capacity.len()],
            shared: AHashMap::new(),
            shared_devices: vec![0; w.devices.len().div_ceil(64)],
        };
        let mut mark = |a: &AllocationResult| {
            for r in &a.devices.results {
                if r.admin_access == Some(true) {
                    continue;
                }
                let id = DeviceId::new(&r.driver, &r.pool, &r.device);
                let Some(&first) = w.index.get(&id) else { continue };
                // The same device in another generation of its pool (held for nodes that
                // still gather that generation) is charged too, against its own
                // generation's counters and capacities.
                let copies = w.older.get(&first).map_or(&[][..], |v| v.as_slice());
                for d in std::iter::once(first).chain(copies.iter().copied()) {
                    let e = &w.devices[d as usize];
                    if e.multi {
                        // Every entry with this device ID (twins: a duplicate name in
                        // another slice, or the device in an older generation) is the same
                        // device to upstream, which tracks consumption by device ID: each
                        // carries the share once, and an exclusive one is in use.
                        if d == first {
                            for t in std::iter::once(first).chain(w.twins.get(&first).into_iter().flatten().copied()) {
                                let te = &w.devices[t as usize];
                                if te.multi {
                                    for (si, amount) in consumed_capacity(te, r) {
                                        *u.shared.entry((t, si)).or_default() += amount;
                                    }
                                } else {
                                    u.devices[(t / 64) as usize] |= 1 << (t % 64);
                                }
                            }
                        }
                        // A shared device's counters are charged once per generation, by
                        // its first share.
                        if u.mark_shared(d) {
                            for &(c, amount) in &e.consumes {
                                u.counters[c as usize] += amount;
                            }
                        }
                        continue;
                    }
                    u.devices[(d / 64) as usize] |= 1 << (d % 64);
                    for &(c, amount) in &e.consumes {
                        u.counters[c as usize] += amount;
                    }
                }
                if let Some(twins) = w.twins.get(&first)
                    && !w.devices[first as usize].multi
                {
                    for &t in twins {
                        u.devices[(t / 64) as usize] |= 1 << (t % 64);
                    }
                }
            }
        };
        for e in inner.claims.values() {
            if let Some(a) = e.compiled.claim.status.as_ref().and_then(|s| s.allocation.as_ref()) {
                mark(a);
            }
        }
        for (pod, list) in &inner.inflight {
            if Some(pod.as_str()) == exclude_pod {
                continue;
            }
            for (_, a) in list {
                mark(a);
            }
        }
        let u = Arc::new(u);
        if exclude_pod.is_none() {
            inner.in_use = Some((inner.world.generation, inner.alloc_gen, u.clone()));
        }
        u
    }

    fn matches(
        &self,
        world: &World,
        classes: &AHashMap<String, Arc<CompiledClass>>,
        claim: &Arc<CompiledClaim>,
        binding: bool,
    ) -> Result<ClaimPlan, AllocError> {
        let mut cache = self.match_cache.lock();
        if cache.0 != world.generation {
            *cache = (world.generation, AHashMap::new());
        }
        let mut matches = Vec::with_capacity(claim.requests.len());
        let mut class_config = Vec::with_capacity(claim.requests.len());
        for r in &claim.requests {
            let mut per_alt = Vec::with_capacity(r.alternatives.len());
            let mut cfg_alt = Vec::with_capacity(r.alternatives.len());
            for alt in &r.alternatives {
                let Some(class) = classes.get(&alt.class) else {
                    return Err(AllocError::MissingDeviceClass {
                        claim: claim.key.clone(),
                        request: alt.result_name.clone(),
                        class: alt.class.clone(),
                    });
                };
                let key = format!("{}\u{2}{}", class.key, alt.cache_suffix);
                let set = cache
                    .1
                    .entry(key)
                    .or_insert_with(|| Arc::new(selector_bits(world, class, &alt.selectors, binding)))
                    .clone();
                per_alt.push(set);
                cfg_alt.push(class.class.spec.config.clone());
            }
            matches.push(per_alt);
            class_config.push(cfg_alt);
        }
        Ok(ClaimPlan { claim: claim.clone(), matches, class_config })
    }

    /// Resolves the pod's claims for a cycle: claims to allocate get compiled plans,
    /// allocated ones their node selector. `None` when the pod has no claims.
    pub fn gather(&self, pod: &Pod) -> Result<Option<PodClaims>, GatherError> {
        self.gather_with_requests(pod, None)
    }

    /// [`DraStore::gather`] with the pod's requests already computed (a `PodInfo`'s).
    pub fn gather_with_requests(
        &self,
        pod: &Pod,
        requests: Option<&Resources>,
    ) -> Result<Option<PodClaims>, GatherError> {
        // Pods without claims are the common case: decide on a read lock.
        if pod.spec.resource_claims.is_empty()
            && (!Self::requests_scalar(pod) || {
                let inner = self.inner.read();
                inner.extended_names.is_empty() || !inner.features.enabled(Feature::DRAExtendedResource)
            })
        {
            return Ok(None);
        }
        let mut inner = self.inner.write();
        let has_ext = !inner.extended_names.is_empty() && Self::requests_scalar(pod);
        let computed;
        let requests = match requests {
            Some(r) if has_ext => Some(r),
            None if has_ext => {
                computed = pod.requests();
                Some(&computed)
            }
            _ => None,
        };
        let claims = self.gather_locked(&mut inner, pod, None, requests)?;
        if claims.plans.is_empty()
            && claims.allocated.is_empty()
            && claims.extended.is_none()
            && claims.stale_extended.is_none()
        {
            return Ok(None);
        }
        Ok(Some(claims))
    }

    fn requests_scalar(pod: &Pod) -> bool {
        pod.spec
            .containers
            .iter()
            .chain(pod.spec.init_containers.iter())
            .any(|c| c.resources.requests.iter().any(|(n, _)| is_dra_extended_resource_name(n.as_str())))
    }

    /// Resolves the pod's extended resources backed by DRA (upstream
    /// `preFilterExtendedResources`): `None` when none of its requests maps to a class.
    fn extended_plan(
        &self,
        inner: &mut Inner,
        pod: &Pod,
        requests: &Resources,
        user_plans: &[ClaimPlan],
    ) -> Result<Option<ExtendedPlan>, GatherError> {
        let mut backed: SmallVec<[(Symbol, String); 2]> = SmallVec::new();
        let mut unbacked = SmallVec::new();
        for &(name, v) in &requests.scalar {
            if v == 0 || !is_dra_extended_resource_name(name.as_str()) {
                continue;
            }
            match inner.extended_names.get(name.as_str()) {
                Some(class) => backed.push((name, class.clone())),
                None => unbacked.push(name),
            }
        }
        if backed.is_empty() {
            return Ok(None);
        }
        backed.sort_by(|a, b| a.0.as_str().cmp(b.0.as_str()));
        let ns = ns_or_default(&pod.metadata.namespace).to_owned();
        let name = extended_claim_name(pod);
        let key = claim_key(&ns, &name);
        if backed.len() > MAX_EXTENDED_RESOURCES {
            return Err(GatherError::TooManyExtendedResources { pod: pod.key(), count: backed.len() });
        }
        let mut variants = Vec::with_capacity(1 << backed.len());
        variants.push(None);
        for mask in 1..(1usize << backed.len()) {
            let chosen: Vec<(Symbol, &str)> = backed
                .iter()
                .enumerate()
                .filter(|(i, _)| mask & (1 << i) != 0)
                .map(|(_, (n, c))| (*n, c.as_str()))
                .collect();
            let (spec, mappings) = extended::claim_spec(pod, &chosen);
            let mut claim = ResourceClaim { spec, ..ResourceClaim::default() };
            claim.metadata.name.clone_from(&name);
            claim.metadata.namespace.clone_from(&ns);
            claim.metadata.annotations.insert(EXTENDED_RESOURCE_CLAIM_ANNOTATION.to_owned(), "true".to_owned());
            claim.metadata.other.insert(
                "ownerReferences".to_owned(),
                serde_json::json!([{"apiVersion": "v1", "kind": "Pod", "name": pod.metadata.name,
                    "uid": pod.uid(), "controller": true}]),
            );
            let classes = &inner.classes;
            let compiled = CompiledClaim::new(claim, |c| classes.get(c).cloned()).map_err(|e| {
                GatherError::Alloc(AllocError::SelectorRuntime {
                    claim: key.clone(),
                    request: String::new(),
                    message: e.to_string(),
                })
            })?;
            let compiled = Arc::new(compiled);
            let plan = self.matches(
                &inner.world,
                &inner.classes,
                &compiled,
                inner.features.enabled(Feature::DRADeviceBindingConditions),
            )?;
            let mut plans = user_plans.to_vec();
            plans.push(plan);
            let slots = Self::slots(&plans);
            variants.push(Some(ExtVariant { claim: compiled, mappings, plans, slots }));
        }
        Ok(Some(ExtendedPlan { key, backed: backed.iter().map(|(n, _)| *n).collect(), unbacked, variants }))
    }

    fn slots(plans: &[ClaimPlan]) -> Vec<(u16, u16)> {
        let mut slots = Vec::new();
        for (c, p) in plans.iter().enumerate() {
            for r in 0..p.claim.requests.len() {
                slots.push((c as u16, r as u16));
            }
        }
        slots
    }

    fn gather_locked(
        &self,
        inner: &mut Inner,
        pod: &Pod,
        exclude: Option<&str>,
        requests: Option<&Resources>,
    ) -> Result<PodClaims, GatherError> {
        let in_use = Self::in_use(inner, exclude);
        let features = inner.features;
        let mut disabled = None;
        let mut plans = Vec::new();
        let mut allocated = Vec::new();
        let mut allocated_score = 0;
        for pc in &pod.spec.resource_claims {
            let key = claim_key(&pod.metadata.namespace, &claim_name_for(pod, pc));
            let entry = inner.claims.get(&key).ok_or_else(|| GatherError::MissingClaim(key.clone()))?;
            let claim = &entry.compiled.claim;
            if let Some(a) = claim.status.as_ref().and_then(|s| s.allocation.as_ref()) {
                let binding = if has_binding_conditions(claim) { binding_state(claim) } else { BindingState::Ready };
                if !allocated.iter().any(|x: &AllocatedClaim| x.key == key) {
                    allocated_score += subrequest_score(claim, a);
                }
                allocated.push(AllocatedClaim {
                    key,
                    node_selector: a.node_selector.clone(),
                    binding,
                    allocated_at: entry.allocated_at,
                    allocation_timestamp: a
                        .allocation_timestamp
                        .as_deref()
                        .and_then(|t| crate::selector::parse_timestamp(t).ok()),
                });
                continue;
            }
            if plans.iter().any(|p: &ClaimPlan| p.claim.key == key) {
                continue;
            }
            Self::check_features(features, &key, claim, &mut disabled)?;
            plans.push(self.matches(
                &inner.world,
                &inner.classes,
                &entry.compiled,
                inner.features.enabled(Feature::DRADeviceBindingConditions),
            )?);
        }
        let slots = Self::slots(&plans);
        // A claim made for the pod's extended resources in an earlier attempt counts as
        // one of its claims (upstream `findExtendedResourceClaim`).
        let mut extended = None;
        let ext_key = if requests.is_some() && features.enabled(Feature::DRAExtendedResource) {
            claim_key(&pod.metadata.namespace, &extended_claim_name(pod))
        } else {
            String::new()
        };
        // Upstream `filterExtendedResources`: a claim from a prior cycle has requests, so
        // Filter rejects every node ("cannot schedule extended resource claim") and
        // PostFilter deletes it; the next attempt makes a fresh one.
        let mut stale_extended = None;
        let requests = requests.filter(|_| features.enabled(Feature::DRAExtendedResource));
        if requests.is_some()
            && inner.claims.get(&ext_key).is_some_and(|e| {
                e.compiled
                    .claim
                    .metadata
                    .annotations
                    .get(EXTENDED_RESOURCE_CLAIM_ANNOTATION)
                    .is_some_and(|v| v == "true")
            })
        {
            stale_extended = Some(ext_key);
        } else if let Some(requests) = requests {
            extended = self.extended_plan(inner, pod, requests, &plans)?.map(Arc::new);
        }
        if !features.enabled(Feature::DRAPrioritizedList) {
            // Upstream Score returns 0 without `DRAPrioritizedList`.
            allocated_score = 0;
        }
        let prioritized = allocated_score > 0
            || plans
                .iter()
                .any(|p| p.claim.requests.iter().any(|r| r.alternatives.iter().any(|a| a.result_name != r.name)));
        Ok(PodClaims {
            world: inner.world.clone(),
            in_use,
            plans,
            slots,
            allocated,
            binding: inner.features.enabled(Feature::DRADeviceBindingConditions),
            prioritized,
            allocated_score,
            extended,
            stale_extended,
            chooser: inner.chooser.clone(),
            budget: inner.budget,
            disabled,
            filter_timeout: features.enabled(Feature::DRASchedulerFilterTimeout),
        })
    }

    /// Upstream's checks of a claim to allocate against switched-off features: PreFilter
    /// rejects `firstAvailable` without `DRAPrioritizedList`; the allocator (Filter)
    /// refuses capacity requests without `DRAConsumableCapacity` and `adminAccess`
    /// without `DRAAdminAccess`, which is kept in `disabled` (the first such request of
    /// the pod, in claim and request order; for one request, capacity first).
    fn check_features(
        features: FeatureGates,
        key: &str,
        claim: &ResourceClaim,
        disabled: &mut Option<AllocError>,
    ) -> Result<(), GatherError> {
        for req in &claim.spec.devices.requests {
            if !features.enabled(Feature::DRAPrioritizedList) && !req.first_available.is_empty() {
                return Err(GatherError::PrioritizedListDisabled { claim: key.to_owned(), request: req.name.clone() });
            }
            if disabled.is_some() {
                continue;
            }
            if !features.enabled(Feature::DRAConsumableCapacity) {
                let claim = key.to_owned();
                if req.exactly.as_ref().is_some_and(|e| e.capacity.is_some()) {
                    *disabled = Some(AllocError::ConsumableCapacityDisabled {
                        claim,
                        request: req.name.clone(),
                        subrequest: false,
                    });
                    continue;
                }
                if let Some(sub) = req.first_available.iter().find(|s| s.capacity.is_some()) {
                    *disabled = Some(AllocError::ConsumableCapacityDisabled {
                        claim,
                        request: sub.name.clone(),
                        subrequest: true,
                    });
                    continue;
                }
            }
            if features.enabled(Feature::DRAAdminAccess) {
                continue;
            }
            if req.exactly.as_ref().is_some_and(|e| e.admin_access == Some(true)) {
                *disabled = Some(AllocError::AdminAccessDisabled { claim: key.to_owned(), request: req.name.clone() });
            }
        }
        Ok(())
    }

    /// Allocates the pod's unallocated claims on `node` and holds the devices in flight
    /// for the pod (Reserve). Idempotent per pod: a second call replaces the first.
    pub fn reserve(&self, pod: &Pod, pod_uid: &str, node: &str, labels: &Labels) -> Result<NodeResult, GatherError> {
        self.reserve_on(pod, pod_uid, node, labels, None)
    }

    /// [`DraStore::reserve`] for a pod whose extended resources may be backed by DRA:
    /// `allocatable` is the node's (a resource it lists with a non-zero amount is served
    /// by its device plugin, not DRA); `None` means the node lists none.
    pub fn reserve_on(
        &self,
        pod: &Pod,
        pod_uid: &str,
        node: &str,
        labels: &Labels,
        allocatable: Option<&Resources>,
    ) -> Result<NodeResult, GatherError> {
        let mut inner = self.inner.write();
        inner.inflight.remove(pod_uid);
        inner.extended_inflight.remove(pod_uid);
        inner.alloc_gen += 1;
        let requests = (!inner.extended_names.is_empty() && Self::requests_scalar(pod)).then(|| pod.requests());
        let claims = self.gather_locked(&mut inner, pod, Some(pod_uid), requests.as_ref())?;
        let empty = Resources::default();
        let result = claims.allocate_on(node, labels, allocatable.unwrap_or(&empty))?;
        if let NodeResult::Fit(list) = &result {
            if let Some(ext) = &claims.extended
                && list.iter().any(|(k, _)| *k == ext.key)
            {
                let mask = claims.extended_mask(allocatable.unwrap_or(&empty)).unwrap_or(0);
                if let Some(Some(v)) = ext.variants.get(mask) {
                    inner.extended_inflight.insert(pod_uid.to_owned(), (v.claim.clone(), v.mappings.clone()));
                }
            }
            inner
                .inflight
                .insert(pod_uid.to_owned(), list.iter().map(|(k, a)| (k.clone(), Arc::new(a.clone()))).collect());
            inner.alloc_gen += 1;
        }
        Ok(result)
    }

    /// Drops the pod's in-flight allocations (Unreserve).
    pub fn unreserve(&self, pod_uid: &str) {
        let mut inner = self.inner.write();
        inner.extended_inflight.remove(pod_uid);
        if inner.inflight.remove(pod_uid).is_some() {
            inner.alloc_gen += 1;
        }
    }

    /// The pod's in-flight allocations.
    pub fn inflight(&self, pod_uid: &str) -> Vec<(String, Arc<AllocationResult>)> {
        self.inner.read().inflight.get(pod_uid).cloned().unwrap_or_default()
    }

    /// Records the pod's in-flight allocations in the claims' status and reserves every
    /// claim of the pod for it (PreBind after the caller accepted the update).
    pub fn commit(&self, pod: &Pod, pod_uid: &str) -> Vec<Arc<ResourceClaim>> {
        self.commit_at(pod, pod_uid, None)
    }

    /// Sets `status.allocation.allocationTimestamp` to the wall-clock time if the claim
    /// is allocated and has none yet (upstream `bindClaim`, `time.Now()`).
    fn stamp_allocation(claim: &mut ResourceClaim) {
        let Some(a) = claim.status.as_mut().and_then(|s| s.allocation.as_mut()) else { return };
        if a.allocation_timestamp.is_none() {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| i128::try_from(d.as_nanos()).unwrap_or(0));
            a.allocation_timestamp = Some(crate::selector::format_timestamp(nanos));
        }
    }

    /// [`DraStore::commit`], recording `now` (the scheduler's clock) as the allocation
    /// time of each newly allocated claim: the start of its binding timeout. With binding
    /// conditions enabled every allocated claim of the pod also gets
    /// `status.allocation.allocationTimestamp` (wall clock, RFC 3339) if it has none,
    /// written at the same moment, as upstream's PreBind does.
    pub fn commit_at(&self, pod: &Pod, pod_uid: &str, now: Option<std::time::Duration>) -> Vec<Arc<ResourceClaim>> {
        let mut inner = self.inner.write();
        let list = inner.inflight.remove(pod_uid).unwrap_or_default();
        let mut out = Vec::new();
        // Upstream `bindClaim` writes allocationTimestamp with binding conditions enabled.
        let stamp = inner.features.enabled(Feature::DRADeviceBindingConditions);
        if let Some((compiled, mappings)) = inner.extended_inflight.remove(pod_uid) {
            let key = compiled.key.clone();
            if let Some((_, a)) = list.iter().find(|(k, _)| *k == key) {
                let mut claim = Self::extended_claim_with_status(&compiled, a, pod, pod_uid);
                if stamp {
                    Self::stamp_allocation(&mut claim);
                }
                let claim = Arc::new(claim);
                let mut c = (*compiled).clone();
                c.claim = claim.clone();
                inner.claims.insert(key, ClaimEntry { compiled: Arc::new(c), allocated_at: now });
                inner.extended_status.insert(
                    pod_uid.to_owned(),
                    PodExtendedResourceClaimStatus {
                        request_mappings: mappings,
                        resource_claim_name: claim.metadata.name.clone(),
                    },
                );
                out.push(claim);
            }
        }
        for pc in &pod.spec.resource_claims {
            let key = claim_key(&pod.metadata.namespace, &claim_name_for(pod, pc));
            let Some(entry) = inner.claims.get_mut(&key) else { continue };
            let mut claim = (*entry.compiled.claim).clone();
            let status = claim.status.get_or_insert_with(ResourceClaimStatus::default);
            if let Some((_, a)) = list.iter().find(|(k, _)| *k == key) {
                status.allocation = Some((**a).clone());
                entry.allocated_at = now.or(entry.allocated_at);
            }
            if stamp {
                Self::stamp_allocation(&mut claim);
            }
            let status = claim.status.get_or_insert_with(ResourceClaimStatus::default);
            if !status.reserved_for.iter().any(|r| r.uid == pod_uid) {
                status.reserved_for.push(ResourceClaimConsumerReference {
                    api_group: String::new(),
                    resource: "pods".into(),
                    name: pod.metadata.name.clone(),
                    uid: pod_uid.to_owned(),
                });
            }
            let claim = Arc::new(claim);
            let mut compiled = (*entry.compiled).clone();
            compiled.claim = claim.clone();
            entry.compiled = Arc::new(compiled);
            out.push(claim);
        }
        inner.alloc_gen += 1;
        out
    }

    fn extended_claim_with_status(
        compiled: &CompiledClaim,
        allocation: &AllocationResult,
        pod: &Pod,
        pod_uid: &str,
    ) -> ResourceClaim {
        let mut claim = (*compiled.claim).clone();
        claim.status = Some(ResourceClaimStatus {
            allocation: Some(allocation.clone()),
            reserved_for: vec![ResourceClaimConsumerReference {
                api_group: String::new(),
                resource: "pods".into(),
                name: pod.metadata.name.clone(),
                uid: pod_uid.to_owned(),
            }],
            ..ResourceClaimStatus::default()
        });
        claim
    }

    /// The claim Reserve allocated for the pod's extended resources, with its allocation
    /// and `reservedFor` as PreBind creates it, and the pod status entry naming it
    /// (upstream `createExtendedResourceClaimInAPI`, `patchPodExtendedResourceClaimStatus`).
    pub fn pending_extended_claim(
        &self,
        pod: &Pod,
        pod_uid: &str,
    ) -> Option<(ResourceClaim, PodExtendedResourceClaimStatus)> {
        let inner = self.inner.read();
        let (compiled, mappings) = inner.extended_inflight.get(pod_uid)?;
        let (_, a) = inner.inflight.get(pod_uid)?.iter().find(|(k, _)| *k == compiled.key)?;
        let claim = Self::extended_claim_with_status(compiled, a, pod, pod_uid);
        let status = PodExtendedResourceClaimStatus {
            request_mappings: mappings.clone(),
            resource_claim_name: claim.metadata.name.clone(),
        };
        Some((claim, status))
    }

    /// Clears a claim's allocation and reservations (deallocation: the claim's devices
    /// become free). Returns the updated claim.
    pub fn deallocate(&self, namespace: &str, name: &str) -> Option<Arc<ResourceClaim>> {
        let mut inner = self.inner.write();
        let entry = inner.claims.get_mut(&claim_key(namespace, name))?;
        let mut claim = (*entry.compiled.claim).clone();
        claim.status = None;
        let claim = Arc::new(claim);
        let mut compiled = (*entry.compiled).clone();
        compiled.claim = claim.clone();
        entry.compiled = Arc::new(compiled);
        entry.allocated_at = None;
        inner.alloc_gen += 1;
        Some(claim)
    }

    /// Replaces a claim's `status.devices` (what a driver reports: device conditions,
    /// data), as a driver's status update would. Returns the updated claim.
    pub fn update_device_status(
        &self,
        namespace: &str,
        name: &str,
        devices: Vec<AllocatedDeviceStatus>,
    ) -> Result<Arc<ResourceClaim>, DraError> {
        let mut inner = self.inner.write();
        let key = claim_key(namespace, name);
        let entry = inner.claims.get_mut(&key).ok_or(DraError::ClaimNotFound(key))?;
        let mut claim = (*entry.compiled.claim).clone();
        claim.status.get_or_insert_with(ResourceClaimStatus::default).devices = devices;
        let claim = Arc::new(claim);
        let mut compiled = (*entry.compiled).clone();
        compiled.claim = claim.clone();
        entry.compiled = Arc::new(compiled);
        Ok(claim)
    }

    /// Where a claim's device binding conditions stand and when it was allocated (clock
    /// time, if recorded). `None` when the claim is not in the store.
    pub fn claim_binding(&self, namespace: &str, name: &str) -> Option<(BindingState, Option<std::time::Duration>)> {
        let inner = self.inner.read();
        let e = inner.claims.get(&claim_key(namespace, name))?;
        Some((binding_state(&e.compiled.claim), e.allocated_at))
    }

    /// Removes one pod from a claim's `reservedFor` (the pod finished); the allocation stays
    /// until [`DraStore::deallocate`], as upstream's controller deallocates separately.
    pub fn release(&self, namespace: &str, name: &str, pod_uid: &str) {
        let mut inner = self.inner.write();
        if let Some(entry) = inner.claims.get_mut(&claim_key(namespace, name)) {
            let mut claim = (*entry.compiled.claim).clone();
            if let Some(s) = claim.status.as_mut() {
                s.reserved_for.retain(|r| r.uid != pod_uid);
            }
            let mut compiled = (*entry.compiled).clone();
            compiled.claim = Arc::new(claim);
            entry.compiled = Arc::new(compiled);
        }
    }

    /// Checks that no device is held twice (admin access excepted) and no counter is
    /// overdrawn, across allocated claims and in-flight reservations.
    pub fn audit(&self) -> Audit {
        let inner = self.inner.read();
        let w = &inner.world;
        let mut count: AHashMap<DeviceId, u32> = AHashMap::new();
        let mut all: Vec<&AllocationResult> = inner
            .claims
            .values()
            .filter_map(|e| e.compiled.claim.status.as_ref().and_then(|s| s.allocation.as_ref()))
            .collect();
        all.extend(inner.inflight.values().flat_map(|l| l.iter().map(|(_, a)| &**a)));
        let mut counters = vec![0i128; w.counter_capacity.len()];
        let mut shared: AHashMap<(u32, usize), i128> = AHashMap::new();
        let mut shared_devices = InUse::default();
        for a in all {
            for r in a.devices.results.iter().filter(|r| r.admin_access != Some(true)) {
                let id = DeviceId::new(&r.driver, &r.pool, &r.device);
                let Some(&first) = w.index.get(&id) else {
                    *count.entry(id).or_default() += 1;
                    continue;
                };
                if !w.devices[first as usize].multi {
                    *count.entry(id).or_default() += 1;
                }
                // As in `in_use`: a share is charged to every entry with the device's
                // ID (twins, older generations among them), counters once per
                // generation's copy.
                if w.devices[first as usize].multi {
                    for t in std::iter::once(first).chain(w.twins.get(&first).into_iter().flatten().copied()) {
                        let te = &w.devices[t as usize];
                        if te.multi {
                            for (si, amount) in consumed_capacity(te, r) {
                                *shared.entry((t, si)).or_default() += amount;
                            }
                        }
                    }
                }
                let copies = w.older.get(&first).map_or(&[][..], |v| v.as_slice());
                for d in std::iter::once(first).chain(copies.iter().copied()) {
                    let e = &w.devices[d as usize];
                    if e.multi && !shared_devices.mark_shared(d) {
                        continue;
                    }
                    for &(c, amount) in &e.consumes {
                        counters[c as usize] += amount;
                    }
                }
            }
        }
        let mut double_allocated: Vec<DeviceId> = count.into_iter().filter(|(_, n)| *n > 1).map(|(d, _)| d).collect();
        double_allocated.sort();
        // A counter or capacity published in several generations of its pool (each
        // node allocating from the generation it sees) may legitimately be charged
        // beyond a smaller copy's value through a larger copy: the allocator checks
        // the copy it allocates from. So the bound is the largest copy's value.
        let mut by_name: std::collections::BTreeMap<String, (i128, i128)> = std::collections::BTreeMap::new();
        let mut bound = |name: String, used: i128, value: i128| {
            let (u, v) = by_name.entry(name).or_insert((used, value));
            *u = (*u).max(used);
            *v = (*v).max(value);
        };
        for (i, &used) in counters.iter().enumerate() {
            bound(w.counter_names[i].clone(), used, w.counter_capacity[i]);
        }
        for ((d, si), used) in shared {
            let e = &w.devices[d as usize];
            bound(format!("{}/capacity/{}", e.id, e.shares[si].name), used, e.shares[si].value);
        }
        let overdrawn_counters: Vec<String> =
            // Nothing consumed overdraws nothing, even a counter published with a
            // negative value (which no allocation can then consume).
            by_name.into_iter().filter(|(_, (used, value))| used > value && *used > 0).map(|(name, _)| name).collect();
        Audit { double_allocated, overdrawn_counters }
    }

    /// Allocates the named claims (namespace/name) on a node without reserving anything:
    /// the allocator on its own, as upstream's `Allocator.Allocate` (tests, what-if tools).
    pub fn allocate_claims(
        &self,
        claims: &[(&str, &str)],
        node: &str,
        labels: &Labels,
    ) -> Result<NodeResult, GatherError> {
        let mut pod = Pod::default();
        pod.metadata.name = "allocate".into();
        if let Some((ns, _)) = claims.first() {
            pod.metadata.namespace = (*ns).to_owned();
        }
        for (i, (_, name)) in claims.iter().enumerate() {
            pod.spec.resource_claims.push(PodResourceClaim {
                name: format!("c{i}"),
                resource_claim_name: Some((*name).to_owned()),
                resource_claim_template_name: None,
            });
        }
        let mut inner = self.inner.write();
        let pc = self.gather_locked(&mut inner, &pod, None, None)?;
        Ok(pc.allocate(node, labels)?)
    }
}

impl PodClaims {
    /// Whether every claim fits on a node, without building results (Filter). The
    /// success path allocates nothing on the heap for up to 16 devices per pod.
    pub fn fits(&self, node: Symbol, labels: &Labels) -> Result<Result<(), Diagnosis>, AllocError> {
        self.fits_timed(node, labels, None)
    }

    /// [`PodClaims::fits`] with the search bounded by `timeout`.
    pub(crate) fn fits_timed(
        &self,
        node: Symbol,
        labels: &Labels,
        timeout: Option<allocator::Timeout<'_>>,
    ) -> Result<Result<(), Diagnosis>, AllocError> {
        if self.extended.is_some() {
            return self.fits_on_timed(node, labels, &Resources::default(), timeout);
        }
        if let Some(e) = &self.disabled {
            return Err(e.clone());
        }
        if let Err(d) = self.fits_allocated(node, labels) {
            return Ok(Err(d));
        }
        if self.plans.is_empty() {
            return Ok(Ok(()));
        }
        match self.search(&self.plans, &self.slots, node, labels, timeout)? {
            Outcome::Fit(_) => Ok(Ok(())),
            Outcome::NoFit(d) => Ok(Err(d)),
        }
    }

    /// [`PodClaims::fits`] on a node with `allocatable`: the pod's extended resources
    /// backed by DRA that the node does not list (or lists as 0) are allocated through a
    /// claim; a DRA-style extended resource with no class that the node does not list
    /// at all does not fit (upstream `filterExtendedResources`).
    pub fn fits_on(
        &self,
        node: Symbol,
        labels: &Labels,
        allocatable: &Resources,
    ) -> Result<Result<(), Diagnosis>, AllocError> {
        self.fits_on_timed(node, labels, allocatable, None)
    }

    /// [`PodClaims::fits_on`] with the search bounded by `timeout`.
    pub(crate) fn fits_on_timed(
        &self,
        node: Symbol,
        labels: &Labels,
        allocatable: &Resources,
        timeout: Option<allocator::Timeout<'_>>,
    ) -> Result<Result<(), Diagnosis>, AllocError> {
        if let Some(e) = &self.disabled {
            return Err(e.clone());
        }
        if let Err(d) = self.fits_allocated(node, labels) {
            return Ok(Err(d));
        }
        let mask = match self.extended_mask(allocatable) {
            Ok(m) => m,
            Err(resource) => return Ok(Err(Self::not_on_node(node, resource))),
        };
        let (plans, slots) = self.plans_for(mask);
        if plans.is_empty() {
            return Ok(Ok(()));
        }
        match self.search(plans, slots, node, labels, timeout)? {
            Outcome::Fit(_) => Ok(Ok(())),
            Outcome::NoFit(d) => Ok(Err(d)),
        }
    }

    fn not_on_node(node: Symbol, resource: Symbol) -> Diagnosis {
        Diagnosis {
            node: node.as_str().to_owned(),
            problems: vec![allocator::Problem::ResourceNotOnNode { resource: resource.as_str().to_owned() }],
        }
    }

    /// Which backed extended resources `allocatable` lacks (bit per resource), or an
    /// unbacked one the node does not list.
    pub(crate) fn extended_mask(&self, allocatable: &Resources) -> Result<usize, Symbol> {
        let Some(ext) = &self.extended else { return Ok(0) };
        for &n in &ext.unbacked {
            if !allocatable.scalar.iter().any(|(k, _)| *k == n) {
                return Err(n);
            }
        }
        let mut mask = 0;
        for (i, &n) in ext.backed.iter().enumerate() {
            if allocatable.scalar(n) == 0 {
                mask |= 1 << i;
            }
        }
        Ok(mask)
    }

    fn plans_for(&self, mask: usize) -> (&[ClaimPlan], &[(u16, u16)]) {
        match self.extended.as_ref().and_then(|e| e.variants.get(mask)).and_then(Option::as_ref) {
            Some(v) => (&v.plans, &v.slots),
            None => (&self.plans, &self.slots),
        }
    }

    /// Allocates on a node and builds the results.
    pub fn allocate(&self, node: &str, labels: &Labels) -> Result<NodeResult, AllocError> {
        self.allocate_on(node, labels, &Resources::default())
    }

    /// [`PodClaims::allocate`] on a node with `allocatable` (see [`PodClaims::fits_on`]);
    /// the claim for extended resources, when the node needs one, comes last.
    pub fn allocate_on(&self, node: &str, labels: &Labels, allocatable: &Resources) -> Result<NodeResult, AllocError> {
        if let Some(e) = &self.disabled {
            return Err(e.clone());
        }
        let sym = Symbol::intern(node);
        if let Err(d) = self.fits_allocated(sym, labels) {
            return Ok(NodeResult::NoFit(d));
        }
        let mask = match self.extended_mask(allocatable) {
            Ok(m) => m,
            Err(resource) => return Ok(NodeResult::NoFit(Self::not_on_node(sym, resource))),
        };
        let (plans, slots) = self.plans_for(mask);
        match self.search(plans, slots, sym, labels, None)? {
            Outcome::Fit(picks) => {
                let results = allocator::results(&self.world, plans, &picks, sym, self.binding);
                Ok(NodeResult::Fit(plans.iter().map(|p| p.claim.key.clone()).zip(results).collect()))
            }
            Outcome::NoFit(d) => Ok(NodeResult::NoFit(d)),
        }
    }

    /// Whether Filter applies the DynamicResources `filterTimeout`
    /// ([`Feature::DRASchedulerFilterTimeout`] when PreFilter ran).
    pub fn filter_timeout_enabled(&self) -> bool {
        self.filter_timeout
    }

    /// Whether the pod requests extended resources backed by DRA (Filter then needs the
    /// node's allocatable: [`PodClaims::fits_on`]).
    pub fn has_extended_resources(&self) -> bool {
        self.extended.is_some()
    }

    /// Whether Score has anything to add up: a claim to allocate has a `firstAvailable`
    /// request, or a claim allocated earlier used a subrequest
    /// ([`PodClaims::prioritized_list_score`]).
    pub fn has_prioritized_lists(&self) -> bool {
        self.prioritized
    }

    /// The DynamicResources Score of a node (upstream `dynamicresources.go`,
    /// `computeScore`): allocates on the node as Filter does and, for every
    /// `firstAvailable` request, adds `8 - i` when the allocation uses its subrequest
    /// `i` (8 is upstream's `FirstAvailableDeviceRequestMaxSize`), so nodes serving
    /// earlier subrequests score higher. Claims allocated in an earlier cycle add the
    /// same for the subrequests their `status.allocation` names (upstream's fix that
    /// reads `claim.Status.Allocation` in `computeScore`), but only on nodes where the
    /// pod still has claims to allocate: upstream keeps no per-node allocation, and
    /// scores 0, when Filter ran no allocator. 0 when the claims don't fit.
    pub fn prioritized_list_score(
        &self,
        node: Symbol,
        labels: &Labels,
        allocatable: &Resources,
    ) -> Result<i64, AllocError> {
        if !self.prioritized {
            return Ok(0);
        }
        let Ok(mask) = self.extended_mask(allocatable) else { return Ok(0) };
        let (plans, slots) = self.plans_for(mask);
        if plans.is_empty() {
            // Only the extended-resource claim was to allocate and the node's device
            // plugin serves it: Filter still ran the allocator upstream.
            return Ok(if self.extended.is_some() { self.allocated_score } else { 0 });
        }
        let picks = match self.search(plans, slots, node, labels, None)? {
            Outcome::Fit(picks) => picks,
            Outcome::NoFit(_) => return Ok(0),
        };
        let mut score = self.allocated_score;
        let mut seen: SmallVec<[(u16, u16, u16); 8]> = SmallVec::new();
        for p in &picks {
            let req = &plans[p.claim as usize].claim.requests[p.request as usize];
            let Some(alt) = req.alternatives.get(p.alt as usize) else { continue };
            if alt.result_name == req.name || seen.contains(&(p.claim, p.request, p.alt)) {
                continue;
            }
            seen.push((p.claim, p.request, p.alt));
            score += FIRST_AVAILABLE_MAX - i64::from(p.alt);
        }
        Ok(score)
    }

    /// The claim (`namespace/name`) made for the pod's extended resources in an earlier
    /// attempt, if one exists: upstream fails Filter on every node with "cannot schedule
    /// extended resource claim" and deletes it in PostFilter.
    pub fn stale_extended_claim(&self) -> Option<&str> {
        self.stale_extended.as_deref()
    }

    /// One allocator search with this pod's world, devices in use, chooser and step
    /// budget.
    fn search(
        &self,
        plans: &[ClaimPlan],
        slots: &[(u16, u16)],
        node: Symbol,
        labels: &Labels,
        timeout: Option<allocator::Timeout<'_>>,
    ) -> Result<Outcome, AllocError> {
        allocator::run(
            &self.world,
            &self.in_use,
            plans,
            slots,
            node,
            labels,
            self.chooser.as_deref(),
            self.budget,
            timeout,
        )
    }

    fn fits_allocated(&self, node: Symbol, labels: &Labels) -> Result<(), Diagnosis> {
        for a in &self.allocated {
            if let Some(sel) = &a.node_selector
                && !sel.matches(labels, node)
            {
                return Err(Diagnosis {
                    node: node.as_str().to_owned(),
                    problems: vec![allocator::Problem::Unsatisfiable {
                        claim: a.key.clone(),
                        causes: vec!["allocated on other nodes: node selector".to_owned()],
                    }],
                });
            }
        }
        Ok(())
    }

    /// Whether allocation depends on node labels (some device is reachable through a
    /// node selector).
    pub fn needs_node_labels(&self) -> bool {
        (!self.plans.is_empty() || self.extended.is_some()) && self.world.has_selector_scoped()
    }

    /// Keys of claims the pod still needs allocated.
    pub fn to_allocate(&self) -> impl Iterator<Item = &str> {
        self.plans.iter().map(|p| p.claim.key.as_str())
    }

    /// Keys of the pod's claims that are already allocated.
    pub fn already_allocated(&self) -> impl Iterator<Item = &str> {
        self.allocated.iter().map(|a| a.key.as_str())
    }

    /// Allocated claims of the pod whose binding failed, or that waited longer than
    /// `timeout` since `allocated_at` for their binding conditions at clock time `now`
    /// (upstream Filter's `isClaimReadyForBinding` / `isClaimTimeout`): such claims are
    /// unavailable and PostFilter may deallocate them. Empty with binding conditions off.
    pub fn unavailable_claims(&self, now: std::time::Duration, timeout: std::time::Duration) -> Vec<(String, String)> {
        self.unavailable_claims_on(now, None, timeout)
    }

    /// [`PodClaims::unavailable_claims`] on a clock whose zero is `epoch_unix_nanos` of
    /// wall-clock time ([`Clock::unix_epoch_nanos`](crate::framework::Clock::unix_epoch_nanos)):
    /// a claim allocated before the store saw it (no recorded clock time) then starts its
    /// binding timeout at its `status.allocation.allocationTimestamp`, placed on the
    /// clock, as upstream's `isClaimTimeout` compares that timestamp with `time.Now()`.
    /// Without an epoch such claims never time out.
    pub fn unavailable_claims_on(
        &self,
        now: std::time::Duration,
        epoch_unix_nanos: Option<i128>,
        timeout: std::time::Duration,
    ) -> Vec<(String, String)> {
        if !self.binding {
            return Vec::new();
        }
        let mut out = Vec::new();
        for a in &self.allocated {
            match &a.binding {
                BindingState::Ready => {}
                BindingState::Failed(e) => out.push((a.key.clone(), e.to_string())),
                BindingState::Pending => {
                    let nanos = |d: std::time::Duration| i128::try_from(d.as_nanos()).unwrap_or(i128::MAX);
                    let start = a.allocated_at.map(nanos).or_else(|| Some(a.allocation_timestamp? - epoch_unix_nanos?));
                    if start.is_some_and(|t| t.saturating_add(nanos(timeout)) < nanos(now)) {
                        out.push((a.key.clone(), format!("claim {} timed out waiting for binding conditions", a.key)));
                    }
                }
            }
        }
        out
    }
}
