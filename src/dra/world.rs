//! The world the allocator searches: every pool's devices flattened once per slice
//! change, and which pools each node may use.
//!
//! It holds the devices of every pool's newest generation (and of older ones some node
//! may still use) in the order the allocator searches, plus what each node's pool
//! gathering decides (upstream `structured/internal/incubating/pools_incubating.go`,
//! `GatherPools`, `buildPool`).
//!
//! Upstream order: pools sorted by driver then pool name; within a pool, slices of the
//! generation the node uses sorted by name; within a slice, devices in the order published.
//! Slices with binding conditions come after the other slices of their pool, and pools
//! with such slices after all other pools.
//!
//! # Pools per node
//!
//! Upstream gathers pools for each node from the slices that node can see: slices for
//! the node by name, by node selector or for all nodes, slices with per-device node
//! selection when any device reaches the node, and slices with shared counters always.
//! A pool is incomplete, invalid (duplicate device names, duplicate counter sets,
//! consumed counters that don't exist) or ignored (see below) *for that node*. Which pools are bad for which node is decided here,
//! once per slice change: pools whose slices all target one node by name, or all nodes,
//! are judged once; only pools mixing node selections are judged per Filter call
//! ([`World::node_problems`]).
//!
//! # Generations
//!
//! Each node keeps, per pool, only the newest generation among the slices *it* sees. When
//! those slices are as many as the first of them announces, the node allocates from
//! them, even if a newer generation exists in slices only other nodes see. Otherwise
//! upstream `checkSlicesInPool` looks at every slice of the pool: a newer generation
//! anywhere makes the node ignore the pool, else the pool is incomplete unless the
//! generation's slices across all nodes make up the announced count. So besides the
//! newest generation, the world holds the devices of older generations whenever some
//! node might see one of them as its newest ([`World::for_each_on_node`] offers such a
//! device only to a node that gathers its generation); one device ID is one device for
//! use tracking, whatever the generation.
//!
//! # Names
//!
//! The world holds the names its symbols stand for (drivers, pools, devices, the nodes
//! node-local slices name) while it lives, without pinning them: when slices go (a
//! node leaves, a driver is uninstalled) and the world is rebuilt, the names only they
//! used are freed. Look device IDs up with [`DeviceId::lookup`], which adds nothing.

use std::collections::BTreeMap;
use std::sync::Arc;

use ahash::AHashMap;
use smallvec::SmallVec;

use super::compiled::{CompiledClass, CompiledTaintRule};
use super::slice::{Policy, milli, parse_policy, selector_device};
use super::types::{DeviceSpec, DeviceTaint, DeviceTaintEffect, ResourceSlice};
use crate::model::intern::Holds;
use crate::model::{Labels, NodeSelector, Quantity, Symbol, Taint, TaintEffect};
use crate::selector::{AttributeKey, Device};

/// One device's identity: driver, pool, device name (upstream `DeviceID`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DeviceId {
    /// Driver.
    pub driver: Symbol,
    /// Pool.
    pub pool: Symbol,
    /// Device.
    pub device: Symbol,
}

impl DeviceId {
    /// Interns the three names, pinning them (see [`Symbol::intern`]): for a bounded
    /// set of IDs. To find a published device, use [`DeviceId::lookup`].
    pub fn new(driver: &str, pool: &str, device: &str) -> DeviceId {
        DeviceId { driver: Symbol::intern(driver), pool: Symbol::intern(pool), device: Symbol::intern(device) }
    }

    /// The ID if all three names are interned now; adds and pins nothing. A device the
    /// world publishes always has one (the world holds its names).
    pub fn lookup(driver: &str, pool: &str, device: &str) -> Option<DeviceId> {
        Some(DeviceId { driver: Symbol::lookup(driver)?, pool: Symbol::lookup(pool)?, device: Symbol::lookup(device)? })
    }
}

impl std::fmt::Display for DeviceId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Reads the texts without pinning them.
        write!(f, "{}/{}/{}", self.driver, self.pool, self.device)
    }
}

/// The names a world is built with, each held once for the world's life.
#[derive(Default)]
struct Names {
    seen: AHashMap<String, Symbol>,
    held: Holds,
}

impl Names {
    /// The symbol for `text`, held by the world.
    fn get(&mut self, text: &str) -> Symbol {
        if let Some(&s) = self.seen.get(text) {
            return s;
        }
        let s = self.held.push(text);
        self.seen.insert(text.to_owned(), s);
        s
    }

    fn device_id(&mut self, driver: &str, pool: &str, device: &str) -> DeviceId {
        DeviceId { driver: self.get(driver), pool: self.get(pool), device: self.get(device) }
    }
}

/// Which nodes can reach a device.
#[derive(Debug, Clone)]
pub(crate) enum Scope {
    Node(Symbol),
    Selector(Arc<NodeSelector>),
    All,
}

#[derive(Debug, Clone)]
pub(crate) struct DevEntry {
    pub id: DeviceId,
    pub pool: u32,
    pub device: Device,
    pub scope: Scope,
    pub taints: SmallVec<[Taint; 1]>,
    /// (counter index, amount in milli-units).
    pub consumes: SmallVec<[(u32, i128); 4]>,
    /// A consumed counter set is missing from the pool: the device can't be allocated.
    pub counters_missing: bool,
    /// `allowMultipleAllocations`: shared by allocations that consume its capacity.
    pub multi: bool,
    /// With `multi`: each capacity, its total and request policy (consumable capacity,
    /// KEP-5075).
    pub shares: SmallVec<[ShareCap; 2]>,
    /// Binding conditions and binding failure conditions (KEP-5007), when it has any.
    pub binding: Option<Arc<(Vec<String>, Vec<String>)>>,
    /// `bindsToNode`.
    pub binds_to_node: bool,
    /// The pool generation of the slice that publishes it.
    pub generation: i64,
}

/// One consumable capacity of a multi-allocatable device.
#[derive(Debug, Clone)]
pub(crate) struct ShareCap {
    pub key: AttributeKey,
    pub name: String,
    pub value: i128,
    pub policy: Option<Policy>,
}

#[derive(Debug, Clone)]
pub(crate) struct PoolEntry {
    pub driver: Symbol,
    pub name: Symbol,
    /// The newest generation among the pool's slices.
    pub newest: i64,
    /// Every slice of the pool, all generations, by slice name.
    pub slices: Vec<SliceMeta>,
    /// Per generation whose devices the world holds: why its counter sets make the pool
    /// invalid, when they do.
    pub counters_invalid: SmallVec<[(i64, Arc<str>); 1]>,
}

/// What pool gathering needs to know about one slice.
#[derive(Debug, Clone)]
pub(crate) struct SliceMeta {
    pub generation: i64,
    pub count: i64,
    pub reach: Reach,
    /// The slice publishes shared counters: a counter-set slice, not a device slice.
    pub counters: bool,
    pub devices: Vec<Symbol>,
}

/// For which nodes upstream `GatherPools` picks up a slice.
#[derive(Debug, Clone)]
pub(crate) enum Reach {
    /// Shared counters: every node.
    Always,
    /// `nodeName`, `nodeSelector` or `allNodes` of the slice.
    Slice(Scope),
    /// `perDeviceNodeSelection`: nodes some device reaches.
    PerDevice(Vec<Scope>),
    /// No node selection upstream knows: never.
    Never,
}

impl Scope {
    fn reaches(&self, node: Symbol, labels: &Labels) -> bool {
        match self {
            Scope::Node(n) => *n == node,
            Scope::Selector(s) => s.matches(labels, node),
            Scope::All => true,
        }
    }
}

impl Reach {
    fn reaches(&self, node: Symbol, labels: &Labels) -> bool {
        match self {
            Reach::Always => true,
            Reach::Slice(s) => s.reaches(node, labels),
            Reach::PerDevice(scopes) => scopes.iter().any(|s| s.reaches(node, labels)),
            Reach::Never => false,
        }
    }
}

/// Why a pool gathered for a node gives no devices there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PoolProblem {
    /// Fewer (or more) slices of its generation than it announces.
    Incomplete,
    /// Invalid, with upstream's reason.
    Invalid(Arc<str>),
}

/// How upstream `GatherPools` treats one pool for one node.
enum Gathered {
    /// Not gathered, or ignored: the node's newest generation is incomplete where it looks
    /// and a newer generation exists in slices it does not see (`checkSlicesInPool`).
    No,
    /// Gathered at this generation, complete.
    Complete(i64),
    /// Gathered, incomplete.
    Incomplete,
}

/// Upstream `GatherPools` for one pool and one node, given which slices the node sees:
/// the node keeps the newest generation among them and counts them against the first
/// one's `resourceSliceCount`; only when that falls short does it look at the pool's
/// other slices.
fn gather(pool: &PoolEntry, visible: impl Fn(&SliceMeta) -> bool) -> Gathered {
    let Some(g) = pool.slices.iter().filter(|s| visible(s)).map(|s| s.generation).max() else {
        return Gathered::No;
    };
    let seen = || pool.slices.iter().filter(|s| s.generation == g && visible(s));
    let count = seen().next().map_or(0, |s| s.count);
    if seen().count() as i64 != count {
        if pool.slices.iter().any(|s| s.generation > g) {
            return Gathered::No;
        }
        if pool.slices.iter().filter(|s| s.generation == g).count() as i64 != count {
            return Gathered::Incomplete;
        }
    }
    Gathered::Complete(g)
}

/// Upstream `GatherPools` for one pool and one node, given which slices the node sees:
/// `None` when the pool is not gathered, is ignored (a newer generation exists that the
/// node does not see: `checkSlicesInPool`), or is complete and valid.
fn pool_problem(pool: &PoolEntry, visible: impl Fn(&SliceMeta) -> bool) -> Option<PoolProblem> {
    let g = match gather(pool, &visible) {
        Gathered::No => return None,
        Gathered::Incomplete => return Some(PoolProblem::Incomplete),
        Gathered::Complete(g) => g,
    };
    let seen = || pool.slices.iter().filter(|s| s.generation == g && visible(s));
    let mut names = ahash::AHashSet::new();
    for s in seen().filter(|s| !s.counters) {
        for d in &s.devices {
            if !names.insert(*d) {
                return Some(PoolProblem::Invalid(format!("duplicate device name {d}").into()));
            }
        }
    }
    pool.counters_invalid.iter().find(|(h, _)| *h == g).map(|(_, why)| PoolProblem::Invalid(why.clone()))
}

impl PoolEntry {
    pub fn label(&self) -> String {
        format!("{}/{}", self.driver, self.name)
    }
}

/// Immutable device view shared by `Arc` with every cycle until the next slice change.
#[derive(Debug, Default)]
pub(crate) struct World {
    pub generation: u64,
    pub devices: Vec<DevEntry>,
    pub pools: Vec<PoolEntry>,
    /// Node-local devices per node, ascending.
    pub node_local: AHashMap<Symbol, SmallVec<[u32; 8]>>,
    /// Devices reachable through a node selector or from all nodes, ascending.
    pub shared: Vec<u32>,
    /// Counter capacities (milli-units) and names (`driver/pool/set/counter`).
    pub counter_capacity: Vec<i128>,
    pub counter_names: Vec<String>,
    pub index: AHashMap<DeviceId, u32>,
    /// Pools whose slices all target one node by name, and are bad there.
    pub bad_on_node: AHashMap<Symbol, SmallVec<[(u32, PoolProblem); 1]>>,
    /// Pools whose slices all reach every node, and are bad everywhere.
    pub bad_everywhere: Vec<(u32, PoolProblem)>,
    /// Pools mixing node selections: judged per node.
    pub per_node_pools: Vec<u32>,
    /// Devices published twice under one name in one pool (slices for different nodes):
    /// the first entry -> the later ones. Upstream tracks use by device ID, so one in use
    /// makes all of them in use.
    pub twins: AHashMap<u32, SmallVec<[u32; 1]>>,
    /// The first entry of a device ID -> its entries in other generations of the pool:
    /// each copy charges its own generation's counters and capacity.
    pub older: AHashMap<u32, SmallVec<[u32; 1]>>,
    /// Whether any device of an older generation is held.
    pub stale: bool,
    /// The names of the world's symbols, held while it lives.
    names: Holds,
    /// Bit per device that Filter's quick search may take on a selector match alone:
    /// exclusive, untainted, consuming no shared counters (built on first use).
    pub plain: std::sync::OnceLock<Vec<u64>>,
}

fn scope_of(names: &mut Names, slice: &ResourceSlice, d: &DeviceSpec) -> Scope {
    let (name, sel, all) = if slice.spec.per_device_node_selection == Some(true) {
        (d.node_name.as_deref(), d.node_selector.as_ref(), d.all_nodes == Some(true))
    } else {
        (slice.spec.node_name.as_deref(), slice.spec.node_selector.as_ref(), slice.spec.all_nodes == Some(true))
    };
    match (name, sel, all) {
        (Some(n), _, _) if !n.is_empty() => Scope::Node(names.get(n)),
        (_, Some(s), _) => Scope::Selector(Arc::new(s.clone())),
        _ => Scope::All,
    }
}

/// The taint as the allocator checks it; `None` for informational (`None`) taints.
fn blocking_taint(t: &DeviceTaint) -> Option<Taint> {
    let effect = match t.effect {
        DeviceTaintEffect::NoSchedule => TaintEffect::NoSchedule,
        DeviceTaintEffect::NoExecute => TaintEffect::NoExecute,
        DeviceTaintEffect::None => return None,
    };
    Some(Taint { key: Symbol::intern(&t.key), value: Symbol::intern(&t.value), effect })
}

/// Whether a taint rule applies to a device (upstream `tracker.go`, `applyPatches`):
/// driver, pool and device name must match when set; a named class must exist and its
/// selectors match; the rule's own selectors must match. A selector failing at run time
/// means no match.
fn rule_matches(
    rule: &CompiledTaintRule,
    classes: &AHashMap<String, Arc<CompiledClass>>,
    driver: &str,
    pool: &str,
    device: &Device,
) -> bool {
    let Some(sel) = rule.rule.spec.device_selector.as_ref() else { return true };
    if sel.driver.as_deref().is_some_and(|d| d != driver)
        || sel.pool.as_deref().is_some_and(|p| p != pool)
        || sel.device.as_deref().is_some_and(|d| d != device.name())
    {
        return false;
    }
    if let Some(class) = &sel.device_class_name {
        let Some(class) = classes.get(class) else { return false };
        if !class.selectors.iter().all(|s| s.matches(device).unwrap_or(false)) {
            return false;
        }
    }
    rule.selectors.iter().all(|s| s.matches(device).unwrap_or(false))
}

/// A pool's key, every slice of it (by name), the slices whose devices the world holds
/// in search order (newest generation first), and whether any newest-generation slice
/// has binding conditions.
type PoolSlices<'a> = ((String, String), Vec<&'a Arc<ResourceSlice>>, Vec<&'a Arc<ResourceSlice>>, bool);

/// Whether some node may gather an older generation of the pool: not when a slice of the
/// newest generation reaches every node (a counter-set slice or `allNodes`), nor when all
/// the pool's slices target the same node by name.
fn older_generations_matter(names: &mut Names, all: &[&Arc<ResourceSlice>], newest: i64) -> bool {
    let reaches: Vec<(i64, Reach)> = all.iter().map(|s| (s.spec.pool.generation, reach_of(names, s))).collect();
    let reaches = reaches.into_iter();
    if reaches.clone().any(|(g, r)| g == newest && matches!(r, Reach::Always | Reach::Slice(Scope::All))) {
        return false;
    }
    let mut nodes = reaches.filter_map(|(_, r)| match r {
        Reach::Never => None,
        Reach::Slice(Scope::Node(n)) => Some(Some(n)),
        _ => Some(None),
    });
    let first = nodes.next().flatten();
    !(first.is_some() && nodes.all(|n| n == first))
}

fn reach_of(names: &mut Names, s: &ResourceSlice) -> Reach {
    let spec = &s.spec;
    if !spec.shared_counters.is_empty() {
        Reach::Always
    } else if spec.node_name.as_deref().is_some_and(|n| !n.is_empty())
        || spec.all_nodes == Some(true)
        || spec.node_selector.is_some()
    {
        Reach::Slice(scope_of(names, s, &DeviceSpec::default()))
    } else if spec.per_device_node_selection == Some(true) {
        Reach::PerDevice(spec.devices.iter().map(|d| scope_of(names, s, d)).collect())
    } else {
        Reach::Never
    }
}

/// Why the counter sets of a pool's newest-generation slices make it invalid (upstream
/// `getAndValidateCounterSets`, `validateDeviceCounterConsumption`).
fn counters_invalid(current: &[&Arc<ResourceSlice>]) -> Option<Arc<str>> {
    let mut sets: AHashMap<&str, &super::types::CounterSet> = AHashMap::new();
    for s in current {
        for cs in &s.spec.shared_counters {
            if sets.insert(cs.name.as_str(), cs).is_some() {
                return Some(format!("duplicate counter set name {}", cs.name).into());
            }
        }
    }
    for s in current {
        for d in &s.spec.devices {
            for c in &d.consumes_counters {
                let Some(set) = sets.get(c.counter_set.as_str()) else {
                    return Some(format!("counter set {} not found", c.counter_set).into());
                };
                if let Some(name) = c.counters.keys().find(|k| !set.counters.contains_key(*k)) {
                    return Some(format!("counter {name} not found in counter set {}", set.name).into());
                }
            }
        }
    }
    None
}

/// Flattens validated slices (by name) into a [`World`], adding the taints of matching
/// [`DeviceTaintRule`](super::DeviceTaintRule)s after each device's own, in rule order.
pub(crate) fn build(
    slices: &BTreeMap<String, Arc<ResourceSlice>>,
    generation: u64,
    rules: &[Arc<CompiledTaintRule>],
    classes: &AHashMap<String, Arc<CompiledClass>>,
    features: crate::framework::FeatureGates,
) -> World {
    // Group by (driver, pool); keep only the newest generation. Without partitionable
    // devices, upstream `GatherPools` skips slices with shared counters or per-device
    // node selection.
    let mut pools: BTreeMap<(String, String), Vec<&Arc<ResourceSlice>>> = BTreeMap::new();
    for s in slices.values() {
        if !features.enabled(crate::framework::Feature::DRAPartitionableDevices)
            && (s.spec.per_device_node_selection.is_some() || !s.spec.shared_counters.is_empty())
        {
            continue;
        }
        pools.entry((s.spec.driver.clone(), s.spec.pool.name.clone())).or_default().push(s);
    }
    // The world holds the newest generation of each pool, and older ones that some node
    // may gather; per node, pool gathering decides below whether the node may use them.
    // Slices with a device that has binding conditions go after the others of their pool
    // (and generation), and such pools after all others, so the search prefers devices
    // that need no binding wait (upstream `structured/pools.go`, `GatherPools`; allocator
    // case "lexicographical-sorting-pools-with-binding-conditions").
    let has_binding = |s: &ResourceSlice| s.spec.devices.iter().any(|d| !d.binding_conditions.is_empty());
    let mut names = Names::default();
    let mut ordered: Vec<PoolSlices<'_>> = pools
        .into_iter()
        .map(|(key, all)| {
            let newest = all.iter().map(|s| s.spec.pool.generation).max().unwrap_or(0);
            let older = older_generations_matter(&mut names, &all, newest);
            let mut held: Vec<&Arc<ResourceSlice>> =
                all.iter().copied().filter(|s| older || s.spec.pool.generation == newest).collect();
            held.sort_by_key(|s| (std::cmp::Reverse(s.spec.pool.generation), has_binding(s)));
            let binding = held.iter().any(|s| s.spec.pool.generation == newest && has_binding(s));
            (key, all, held, binding)
        })
        .collect();
    ordered.sort_by_key(|(_, _, _, binding)| *binding);
    let mut w = World { generation, ..World::default() };
    for ((driver, pool), all, held, _) in ordered {
        let pool_idx = w.pools.len() as u32;
        let mut generations: SmallVec<[i64; 1]> = SmallVec::new();
        for s in &held {
            if generations.last() != Some(&s.spec.pool.generation) {
                generations.push(s.spec.pool.generation);
            }
        }
        let entry = PoolEntry {
            driver: names.get(&driver),
            name: names.get(&pool),
            newest: generations.first().copied().unwrap_or(0),
            slices: all
                .iter()
                .map(|s| SliceMeta {
                    generation: s.spec.pool.generation,
                    count: s.spec.pool.resource_slice_count,
                    reach: reach_of(&mut names, s),
                    counters: !s.spec.shared_counters.is_empty(),
                    devices: s.spec.devices.iter().map(|d| names.get(&d.name)).collect(),
                })
                .collect(),
            counters_invalid: if features.enabled(crate::framework::Feature::DRAPartitionableDevices) {
                generations
                    .iter()
                    .filter_map(|&g| {
                        let slices: Vec<_> = held.iter().copied().filter(|s| s.spec.pool.generation == g).collect();
                        counters_invalid(&slices).map(|why| (g, why))
                    })
                    .collect()
            } else {
                SmallVec::new()
            },
        };
        // Counter sets of the whole pool, per generation.
        let mut sets: AHashMap<(i64, &str, &str), u32> = AHashMap::new();
        for s in &held {
            let g = s.spec.pool.generation;
            for cs in &s.spec.shared_counters {
                for (cname, c) in &cs.counters {
                    let idx = w.counter_capacity.len() as u32;
                    sets.entry((g, cs.name.as_str(), cname.as_str())).or_insert(idx);
                    w.counter_capacity.push(milli(&c.value));
                    w.counter_names.push(format!("{driver}/{pool}/{}/{cname}", cs.name));
                }
            }
        }
        let set_names: ahash::AHashSet<(i64, &str)> = held
            .iter()
            .flat_map(|s| s.spec.shared_counters.iter().map(|c| (s.spec.pool.generation, c.name.as_str())))
            .collect();
        for s in &held {
            let g = s.spec.pool.generation;
            for d in &s.spec.devices {
                let Ok(device) = selector_device(&s.metadata.name, &driver, d) else { continue };
                let id = names.device_id(&driver, &pool, &d.name);
                let idx = w.devices.len() as u32;
                // A duplicate name makes the pool invalid where it is gathered; the index
                // keeps the first device.
                let first = *w.index.entry(id).or_insert(idx);
                if first != idx {
                    w.twins.entry(first).or_default().push(idx);
                    if w.devices[first as usize].generation != g {
                        w.older.entry(first).or_default().push(idx);
                    }
                }
                w.stale |= g != entry.newest;
                let mut consumes = SmallVec::new();
                let mut counters_missing = false;
                for c in &d.consumes_counters {
                    if !set_names.contains(&(g, c.counter_set.as_str())) {
                        counters_missing = true;
                    }
                    for (cname, amount) in &c.counters {
                        match sets.get(&(g, c.counter_set.as_str(), cname.as_str())) {
                            Some(&ci) => consumes.push((ci, milli(&amount.value))),
                            None => counters_missing = true,
                        }
                    }
                }
                // Without partitionable devices a device consuming counters is never
                // allocated (upstream `allocateDevice`).
                counters_missing |= !features.enabled(crate::framework::Feature::DRAPartitionableDevices)
                    && !d.consumes_counters.is_empty();
                // Without device taints, none applies (upstream checks them only with
                // `DRADeviceTaints`).
                let mut taints: SmallVec<[Taint; 1]> = if features.enabled(crate::framework::Feature::DRADeviceTaints) {
                    d.taints.iter().filter_map(blocking_taint).collect()
                } else {
                    SmallVec::new()
                };
                for rule in rules.iter().filter(|_| features.enabled(crate::framework::Feature::DRADeviceTaints)) {
                    if let Some(t) = &rule.taint
                        && rule_matches(rule, classes, &driver, &pool, &device)
                    {
                        taints.push(t.clone());
                    }
                }
                let binding = (!d.binding_conditions.is_empty() || !d.binding_failure_conditions.is_empty())
                    .then(|| Arc::new((d.binding_conditions.clone(), d.binding_failure_conditions.clone())));
                let scope = scope_of(&mut names, s, d);
                match &scope {
                    Scope::Node(n) => w.node_local.entry(*n).or_default().push(idx),
                    Scope::Selector(_) | Scope::All => w.shared.push(idx),
                }
                // Without consumable capacity a device is never shared (upstream
                // `allocateDevice` reads `allowMultipleAllocations` only with the feature).
                let multi = features.enabled(crate::framework::Feature::DRAConsumableCapacity)
                    && d.allow_multiple_allocations == Some(true);
                let shares = if multi {
                    d.capacity
                        .iter()
                        .map(|(cname, c)| ShareCap {
                            key: AttributeKey::qualified(cname, &driver),
                            name: cname.clone(),
                            value: milli(&c.value),
                            policy: c.request_policy.as_ref().and_then(|p| parse_policy(p).ok()),
                        })
                        .collect()
                } else {
                    SmallVec::new()
                };
                w.devices.push(DevEntry {
                    id,
                    pool: pool_idx,
                    device,
                    scope,
                    taints,
                    consumes,
                    counters_missing,
                    multi,
                    shares,
                    binding,
                    binds_to_node: d.binds_to_node == Some(true),
                    generation: g,
                });
            }
        }
        classify(&mut w, pool_idx, &entry);
        w.pools.push(entry);
    }
    w.names = names.held;
    w
}

/// Files a pool under the nodes it is bad for, when that does not depend on the node
/// beyond its name; otherwise leaves it to [`World::node_problems`].
fn classify(w: &mut World, idx: u32, pool: &PoolEntry) {
    // Counter-set slices reach every node and slices without a known node selection
    // none; what varies between nodes is the rest.
    let seen_anywhere = |s: &SliceMeta| !matches!(s.reach, Reach::Never);
    let always = |s: &SliceMeta| matches!(s.reach, Reach::Always);
    let mut varying = pool.slices.iter().filter(|s| seen_anywhere(s) && !always(s)).map(|s| &s.reach);
    let node_of = |r: &Reach| match r {
        Reach::Slice(Scope::Node(n)) => Some(*n),
        _ => None,
    };
    if !pool.slices.iter().any(seen_anywhere) {
        // Never gathered.
    } else if varying.clone().all(|r| matches!(r, Reach::Slice(Scope::All))) {
        if let Some(p) = pool_problem(pool, seen_anywhere) {
            w.bad_everywhere.push((idx, p));
        }
    } else if let Some(n) = varying.next().and_then(node_of)
        && varying.all(|r| node_of(r) == Some(n))
        // Other nodes see only the counter-set slices; when that view is bad too, the
        // pool is judged per node.
        && pool_problem(pool, always).is_none()
    {
        if let Some(p) = pool_problem(pool, seen_anywhere) {
            w.bad_on_node.entry(n).or_default().push((idx, p));
        }
    } else {
        w.per_node_pools.push(idx);
    }
}

impl World {
    /// The pools gathered for `node` that give it no devices, in pool order: incomplete
    /// or invalid there (upstream `GatherPools` for the node). Empty, without allocating,
    /// for the usual cluster of complete per-node pools.
    pub fn node_problems(&self, node: Symbol, labels: &Labels) -> SmallVec<[(u32, PoolProblem); 2]> {
        let mut out = SmallVec::new();
        if !self.bad_on_node.is_empty()
            && let Some(v) = self.bad_on_node.get(&node)
        {
            out.extend(v.iter().cloned());
        }
        out.extend(self.bad_everywhere.iter().cloned());
        for &p in &self.per_node_pools {
            if let Some(problem) = pool_problem(&self.pools[p as usize], |s| s.reach.reaches(node, labels)) {
                out.push((p, problem));
            }
        }
        if out.len() > 1 {
            out.sort_by_key(|(p, _)| *p);
        }
        out
    }

    /// Whether any device is reachable through a node selector.
    pub fn has_selector_scoped(&self) -> bool {
        self.shared.iter().any(|&d| matches!(self.devices[d as usize].scope, Scope::Selector(_)))
    }

    /// [`World::plain`], built on first use.
    pub fn plain_devices(&self) -> &[u64] {
        self.plain.get_or_init(|| {
            let mut bits = vec![0u64; self.devices.len().div_ceil(64)];
            for (d, e) in self.devices.iter().enumerate() {
                if !e.multi && e.consumes.is_empty() && !e.counters_missing && e.taints.is_empty() {
                    bits[d / 64] |= 1 << (d % 64);
                }
            }
            bits
        })
    }

    /// Whether a device can be reached from a node.
    #[inline]
    pub fn reachable(&self, dev: u32, node: Symbol, labels: &Labels) -> bool {
        match &self.devices[dev as usize].scope {
            Scope::Node(n) => *n == node,
            Scope::Selector(s) => s.matches(labels, node),
            Scope::All => true,
        }
    }

    /// Whether `node` gathers the generation that publishes device `d`: always for the
    /// newest generation of its pool, which a node reaching the device sees; for an older
    /// one, when that is the newest generation the node sees and complete there.
    fn gathers_generation_of(&self, d: u32, node: Symbol, labels: &Labels) -> bool {
        let e = &self.devices[d as usize];
        let pool = &self.pools[e.pool as usize];
        e.generation == pool.newest
            || matches!(gather(pool, |s| s.reach.reaches(node, labels)), Gathered::Complete(g) if g == e.generation)
    }

    /// Calls `f` for every device reachable from `node` in a generation the node
    /// gathers, in upstream order.
    #[inline]
    pub fn for_each_on_node(&self, node: Symbol, labels: &Labels, mut f: impl FnMut(u32)) {
        let local: &[u32] = self.node_local.get(&node).map_or(&[], |v| v.as_slice());
        if self.shared.is_empty() && !self.stale {
            for &d in local {
                f(d);
            }
            return;
        }
        let (mut i, mut j) = (0, 0);
        while i < local.len() || j < self.shared.len() {
            let take_local = j >= self.shared.len() || (i < local.len() && local[i] < self.shared[j]);
            let d = if take_local {
                i += 1;
                local[i - 1]
            } else {
                j += 1;
                let d = self.shared[j - 1];
                if !self.reachable(d, node, labels) {
                    continue;
                }
                d
            };
            if !self.stale || self.gathers_generation_of(d, node, labels) {
                f(d);
            }
        }
    }
}

impl DevEntry {
    /// What an allocation for a request asking `requests` consumes from each capacity of
    /// this multi-allocatable device (`(share index, milli-units)`), or `None` when the
    /// request violates a policy.
    pub fn consumption(&self, requests: &[(String, Quantity)]) -> Option<SmallVec<[(usize, i128); 2]>> {
        let mut out = SmallVec::new();
        for (i, sc) in self.shares.iter().enumerate() {
            let requested = requests
                .iter()
                .find(|(k, _)| AttributeKey::qualified(k, self.device.driver()) == sc.key)
                .map(|(_, q)| milli(q));
            let amount = match &sc.policy {
                Some(p) => p.apply(requested, sc.value)?,
                None => requested.unwrap_or(sc.value),
            };
            out.push((i, amount));
        }
        Some(out)
    }
}

/// Whether a taint blocks allocation: only NoSchedule and NoExecute do (upstream
/// `allocator.go`, device taints, KEP-5055).
#[inline]
pub(crate) fn taint_blocks(t: &Taint, tolerations: &[crate::model::Toleration]) -> bool {
    matches!(t.effect, TaintEffect::NoSchedule | TaintEffect::NoExecute)
        && !tolerations.iter().any(|tol| tol.tolerates(t))
}

#[cfg(test)]
#[path = "world_tests.rs"]
mod tests;
