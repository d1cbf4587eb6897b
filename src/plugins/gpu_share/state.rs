//! The device state table: [`GpuState`] (free milli-GPU per device of every node,
//! behind one lock, with a per-node summary for Filter), its read view [`GpuView`],
//! a node's devices [`NodeGpus`] and a pod's [`Allocation`].

use std::sync::Arc;

use ahash::AHashMap;
use parking_lot::RwLock;
use smallvec::SmallVec;

use super::free_index::FreeIndex;
use super::{GPU_COUNT_RESOURCE, GPU_MODEL_LABEL, GpuRequest, MILLI};
use crate::model::{HeldSymbol, Node, Symbol};
use crate::snapshot::{NodeInfo, Snapshot};

/// One node's GPU devices.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NodeGpus {
    /// GPU model (empty: none).
    pub model: Symbol,
    /// Free milli-GPU per device, by device index.
    pub free: SmallVec<[u32; 8]>,
    /// GPU pods on the node per affinity tag (see [`GpuRequest::affinity_tag`]).
    pub tags: SmallVec<[(u8, u32); 4]>,
}

impl NodeGpus {
    /// All devices of `node` free.
    pub fn from_node(node: &Node) -> NodeGpus {
        let (count_key, model_key) = *KEYS;
        let count = node.status.allocatable.get(count_key).map_or(0, crate::model::Quantity::value);
        let model = node.metadata.labels.get(model_key).unwrap_or_default();
        NodeGpus {
            model,
            free: std::iter::repeat_n(MILLI, count.clamp(0, 64) as usize).collect(),
            tags: SmallVec::new(),
        }
    }

    /// Number of devices.
    pub fn count(&self) -> usize {
        self.free.len()
    }

    /// Free milli-GPU over all devices.
    pub fn total_free(&self) -> i64 {
        self.free.iter().map(|&f| i64::from(f)).sum()
    }

    /// Devices with all 1000 milli free.
    pub fn fully_free(&self) -> usize {
        self.free.iter().filter(|&&f| f == MILLI).count()
    }

    /// Whether the devices can serve `req` (ignoring the model): `count` devices with
    /// at least `milli` free each (the simulator's `CanNodeHostPodOnGpuMemory`).
    pub fn can_host(&self, req: &GpuRequest) -> bool {
        self.free.iter().filter(|&&f| f >= req.milli).count() >= req.count as usize
    }

    /// The first `count` fully free devices (the simulator's `AllocateExclusiveGpuId`).
    pub fn exclusive_devices(&self, count: u32) -> Option<SmallVec<[u8; 8]>> {
        let d: SmallVec<[u8; 8]> = self
            .free
            .iter()
            .enumerate()
            .filter(|&(_, &f)| f == MILLI)
            .map(|(i, _)| i as u8)
            .take(count as usize)
            .collect();
        (d.len() == count as usize).then_some(d)
    }
}

/// Interned [`GPU_COUNT_RESOURCE`] and [`GPU_MODEL_LABEL`].
static KEYS: std::sync::LazyLock<(Symbol, Symbol)> =
    std::sync::LazyLock::new(|| (Symbol::intern(GPU_COUNT_RESOURCE), Symbol::intern(GPU_MODEL_LABEL)));

/// A pod's recorded allocation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allocation {
    /// Node. The table holds its name while it lists the allocation; a copy kept after
    /// the node is removed ([`GpuState::remove_node`]) may name another string.
    pub node: Symbol,
    /// Devices taken.
    pub devices: SmallVec<[u8; 8]>,
    /// Milli-GPU taken on each device.
    pub milli: u32,
    tag: u8,
}

/// Why an allocation was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GpuError {
    /// The pod already holds devices.
    #[error("pod {0} already holds GPU devices")]
    AlreadyAllocated(String),
    /// A device index is out of range, repeated, or lacks free milli-GPU.
    #[error("node {node}: device {device} cannot give {milli} milli-GPU")]
    DoesNotFit {
        /// Node.
        node: String,
        /// Device index.
        device: usize,
        /// Milli asked.
        milli: u32,
    },
    /// The devices given don't match the request's GPU count.
    #[error("request wants {want} device(s), got {got}")]
    WrongCount {
        /// Wanted.
        want: u32,
        /// Given.
        got: usize,
    },
}

/// What Filter and the policies' totals need of one node's devices, kept beside its
/// entry and refreshed on every change, so a Filter call reads a few bytes instead of
/// walking the devices.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Summary {
    model: Symbol,
    /// Devices.
    count: u32,
    /// Devices with at least [`MILLI`] free.
    full: u32,
    /// Most free milli-GPU on one device (0 without devices).
    max_free: u32,
    /// Free milli-GPU over all devices.
    total_free: i64,
}

impl Summary {
    fn of(g: &NodeGpus) -> Summary {
        Summary {
            model: g.model,
            count: g.free.len() as u32,
            full: g.free.iter().filter(|&&f| f >= MILLI).count() as u32,
            max_free: g.free.iter().copied().max().unwrap_or(0),
            total_free: g.total_free(),
        }
    }

    /// [`NodeGpus::can_host`] of `g` (whose summary this is) without walking the
    /// devices for the requests GpuRequest allows: one device, or whole devices.
    #[inline]
    fn can_host(&self, g: &NodeGpus, req: &GpuRequest) -> bool {
        match req.count {
            0 => true,
            1 => self.count > 0 && self.max_free >= req.milli,
            _ if req.milli == MILLI => self.full >= req.count,
            _ => g.can_host(req),
        }
    }

    /// Whether the node may serve `req`: it has GPUs, of an allowed model, with room.
    #[inline]
    fn fits(&self, g: &NodeGpus, req: &GpuRequest) -> bool {
        self.count > 0 && req.accepts_model(self.model) && self.can_host(g, req)
    }

    /// Model, device count, fully free devices and most free milli-GPU on one device.
    pub(super) fn parts(&self) -> (Symbol, u32, u32, u32) {
        (self.model, self.count, self.full, self.max_free)
    }

    /// Whether the summary alone answers [`NodeGpus::can_host`] for `req` (every
    /// request [`GpuRequest::from_pod`] accepts).
    pub(super) fn answers(req: &GpuRequest) -> bool {
        req.count <= 1 || req.milli == MILLI
    }

    /// [`Summary::fits`] for a request the summary [answers](Summary::answers).
    #[inline]
    pub(super) fn fits_exactly(&self, req: &GpuRequest) -> bool {
        self.count > 0
            && req.accepts_model(self.model)
            && match req.count {
                0 => true,
                1 => self.max_free >= req.milli,
                _ => self.full >= req.count,
            }
    }
}

/// Node name -> entry index: a slot array indexed by the name's symbol id (node names
/// are interned when nodes are added, so their ids are small; larger ids go through a
/// hash map). The table holds each listed name ([`HeldSymbol`]), so an id here never
/// names another string. Shared by `Arc` with the cycles' Filter views; adding a node copies it
/// only while a cycle still holds it.
#[derive(Default, Clone)]
pub(super) struct NodeIndex {
    slots: Vec<u32>,
    overflow: AHashMap<Symbol, u32>,
}

impl NodeIndex {
    #[inline]
    fn get(&self, name: Symbol) -> Option<usize> {
        let id = name.id() as usize;
        let i = if id < DIRECT_SLOTS { *self.slots.get(id)? } else { *self.overflow.get(&name)? };
        (i != u32::MAX).then_some(i as usize)
    }

    fn insert(&mut self, name: Symbol, i: usize) {
        let id = name.id() as usize;
        if id < DIRECT_SLOTS {
            if self.slots.len() <= id {
                self.slots.resize(id + 1, u32::MAX);
            }
            self.slots[id] = i as u32;
        } else {
            self.overflow.insert(name, i as u32);
        }
    }

    fn remove(&mut self, name: Symbol) {
        let id = name.id() as usize;
        if id < DIRECT_SLOTS {
            if let Some(slot) = self.slots.get_mut(id) {
                *slot = u32::MAX;
            }
        } else {
            self.overflow.remove(&name);
        }
    }
}

/// Node GPU entries stored densely in insertion order, found through a [`NodeIndex`].
/// Filter walks the nodes in snapshot order, which is insertion order here, so lookups
/// stay in cache. Each entry has a [`Summary`]; entries change only through
/// [`NodeTable::modify`], which refreshes it. The summaries are shared by `Arc` with
/// the cycles' Filter views, like the index: a change copies them only while a view
/// still holds them (GpuShareFit's Reserve drops its cycle's view before it allocates,
/// so the scheduler's own cycles never copy). A [`FreeIndex`] buckets the entries by
/// model and free capacity, refreshed with each summary. Each entry also has a stamp,
/// unique over the table's life and renewed by every change, so a policy may cache
/// what it derives from an entry (FGD's fragmentation) until the entry changes.
///
/// A removed node's entry is emptied (no devices, out of the [`FreeIndex`] and the
/// index) and its index goes on a free list for the next node added, so the table is
/// as long as the most nodes it held at once.
#[derive(Default)]
struct NodeTable {
    index: Arc<NodeIndex>,
    entries: Vec<NodeGpus>,
    summaries: Arc<Vec<Summary>>,
    /// Each entry's node, held while listed; `None` for a free entry.
    names: Vec<Option<HeldSymbol>>,
    free: FreeIndex,
    stamps: Vec<u64>,
    /// The last stamp given (stamps start at 1).
    last_stamp: u64,
    /// Entries of removed nodes, reused first.
    vacant: Vec<usize>,
    /// Bumped when a node is added or removed: which nodes the table lists changed.
    membership: u64,
    /// `(stamp, entry)` of every summary change with a stamp above `log_after`,
    /// oldest first (at most [`CHANGE_LOG`] kept).
    changes: Vec<(u64, u32)>,
    log_after: u64,
}

/// Summary changes the table remembers for [`GpuView::update_fitting`].
const CHANGE_LOG: usize = 8192;

/// Symbol ids below this get a direct slot (4 bytes each).
const DIRECT_SLOTS: usize = 1 << 20;

impl NodeTable {
    #[inline]
    fn index(&self, name: Symbol) -> Option<usize> {
        self.index.get(name)
    }

    #[inline]
    fn get(&self, name: Symbol) -> Option<&NodeGpus> {
        self.index(name).map(|i| &self.entries[i])
    }

    /// Changes entry `i` and refreshes its summary.
    fn modify<R>(&mut self, i: usize, f: impl FnOnce(&mut NodeGpus) -> R) -> R {
        let r = f(&mut self.entries[i]);
        let s = Summary::of(&self.entries[i]);
        Arc::make_mut(&mut self.summaries)[i] = s;
        self.free.set(i, &s);
        self.last_stamp += 1;
        self.stamps[i] = self.last_stamp;
        if self.changes.len() >= CHANGE_LOG {
            self.log_after = self.changes[CHANGE_LOG / 2 - 1].0;
            self.changes.drain(..CHANGE_LOG / 2);
        }
        self.changes.push((self.last_stamp, i as u32));
        r
    }

    /// The index of `name`'s entry, inserting `f()` first if there is none (in a
    /// removed node's entry when there is one).
    fn index_or_insert_with(&mut self, name: &str, f: impl FnOnce() -> NodeGpus) -> usize {
        if let Some(i) = Symbol::lookup(name).and_then(|s| self.index(s)) {
            return i;
        }
        let held = HeldSymbol::new(name);
        let sym = held.symbol();
        let g = f();
        let s = Summary::of(&g);
        self.last_stamp += 1;
        let i = if let Some(i) = self.vacant.pop() {
            Arc::make_mut(&mut self.summaries)[i] = s;
            self.entries[i] = g;
            self.names[i] = Some(held);
            self.stamps[i] = self.last_stamp;
            i
        } else {
            Arc::make_mut(&mut self.summaries).push(s);
            self.entries.push(g);
            self.names.push(Some(held));
            self.stamps.push(self.last_stamp);
            self.entries.len() - 1
        };
        self.free.set(i, &s);
        Arc::make_mut(&mut self.index).insert(sym, i);
        self.membership += 1;
        i
    }

    /// Drops `name`'s entry (its index is reused by the next node added) and gives
    /// its name back; `false` when the table doesn't list it.
    fn remove(&mut self, name: &str) -> bool {
        let Some((sym, i)) = Symbol::lookup(name).and_then(|s| Some((s, self.index(s)?))) else { return false };
        Arc::make_mut(&mut self.index).remove(sym);
        self.modify(i, |g| *g = NodeGpus::default());
        self.names[i] = None;
        self.vacant.push(i);
        self.membership += 1;
        true
    }

    /// Entries, free ones included (an upper bound on the entry indexes).
    fn len(&self) -> usize {
        self.entries.len()
    }
}

/// What GpuShareFit's Filter reads in a cycle, written by its PreFilter: the request
/// and the device summaries as the table stood then (shared, not copied), so each
/// Filter call is a lookup in data the cycle holds instead of a lock of the shared
/// table. Every node is judged against the same table state, as every node is judged
/// against the same snapshot; Reserve then allocates against the live table, which
/// refuses what no longer fits.
#[derive(Clone)]
pub(super) enum FilterView {
    /// The pod asks for no GPU.
    NoGpu,
    /// PreFilter narrowed the cycle's nodes to exactly those this Filter accepts (a
    /// [`PreFilterResult`](crate::framework::PreFilterResult) node set): the cycle
    /// filters no node outside the set, and every node inside it fits, so Filter has
    /// nothing left to check.
    Narrowed,
    /// The pod's request (one the summaries answer exactly) and the summaries.
    Table { req: GpuRequest, index: Arc<NodeIndex>, summaries: Arc<Vec<Summary>> },
}

impl FilterView {
    #[inline]
    pub(super) fn fits(&self, node: &NodeInfo) -> bool {
        match self {
            FilterView::NoGpu | FilterView::Narrowed => true,
            FilterView::Table { req, index, summaries } => {
                if let Some(i) = index.get(node.name()) {
                    summaries.get(i).is_some_and(|s| s.fits_exactly(req))
                } else {
                    let g = NodeGpus::from_node(node.node());
                    Summary::of(&g).fits(&g, req)
                }
            }
        }
    }
}

#[derive(Default)]
struct Inner {
    nodes: NodeTable,
    allocs: AHashMap<Arc<str>, Allocation>,
    used_milli: i64,
}

/// The per-node GPU device table shared by GpuShareFit and the policy plugins.
#[derive(Default)]
pub struct GpuState {
    inner: RwLock<Inner>,
}

impl std::fmt::Debug for GpuState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let i = self.inner.read();
        f.debug_struct("GpuState").field("nodes", &i.nodes.len()).field("allocations", &i.allocs.len()).finish()
    }
}

impl GpuState {
    /// An empty table (every node's GPUs free).
    pub fn new() -> Arc<GpuState> {
        Arc::new(GpuState::default())
    }

    /// Runs `f` on the node's devices (all free when the table hasn't seen the node).
    #[inline]
    pub fn with_node<R>(&self, node: &NodeInfo, f: impl FnOnce(&NodeGpus) -> R) -> R {
        self.view().with_node(node, f)
    }

    /// A read view of the table, for looking at many nodes under one lock (Score
    /// batches). Don't hold it across Reserve.
    pub fn view(&self) -> GpuView<'_> {
        GpuView(self.inner.read())
    }

    /// Adds `node` with all its devices free, or refreshes its count and model (keeping
    /// allocations when the count is unchanged). Optional, since a node the table hasn't
    /// seen counts as all free, but it spares Filter and Score reading the node's GPU
    /// count and model on every call. The table holds the node's name until
    /// [`GpuState::remove_node`].
    pub fn add_node(&self, node: &Node) {
        let fresh = NodeGpus::from_node(node);
        let mut inner = self.inner.write();
        if let Some(i) = Symbol::lookup(node.name()).and_then(|s| inner.nodes.index(s)) {
            inner.nodes.modify(i, |g| {
                g.model = fresh.model;
                if g.free.len() != fresh.free.len() {
                    g.free = fresh.free;
                }
            });
        } else {
            inner.nodes.index_or_insert_with(node.name(), || fresh);
        }
    }

    /// Forgets a node that left the cluster: its entry, and the allocations of the pods
    /// on it (they left with it, as bound pods leave the scheduler's cache with their
    /// node; releasing one later finds nothing). Gives the node's name back to the
    /// interner. [`GpuShareFit`](super::GpuShareFit) calls this when the scheduler's
    /// events remove the node; call it yourself when you feed the table directly.
    /// Returns whether the table listed the node.
    pub fn remove_node(&self, name: &str) -> bool {
        let mut guard = self.inner.write();
        let inner = &mut *guard;
        if let Some(sym) = Symbol::lookup(name) {
            let mut freed = 0i64;
            inner.allocs.retain(|_, a| {
                let keep = a.node != sym;
                if !keep {
                    freed += i64::from(a.milli) * a.devices.len() as i64;
                }
                keep
            });
            inner.used_milli -= freed;
        }
        inner.nodes.remove(name)
    }

    /// A copy of a node's devices, if the table has seen the node.
    pub fn node(&self, name: &str) -> Option<NodeGpus> {
        self.inner.read().nodes.get(Symbol::lookup(name)?).cloned()
    }

    /// The pod's allocation.
    pub fn allocation(&self, uid: &str) -> Option<Allocation> {
        self.inner.read().allocs.get(uid).cloned()
    }

    /// Milli-GPU allocated over all nodes.
    pub fn used_milli(&self) -> i64 {
        self.inner.read().used_milli
    }

    /// Records that pod `uid` takes `req.milli` on each of `devices` of `node`. Refuses
    /// (changing nothing) a device out of range or repeated, or with too little free,
    /// so no device ever goes below 0 free or above 1000 used.
    pub fn allocate(&self, uid: &str, node: &Node, req: &GpuRequest, devices: &[u8]) -> Result<(), GpuError> {
        if devices.len() != req.count as usize {
            return Err(GpuError::WrongCount { want: req.count, got: devices.len() });
        }
        let mut inner = self.inner.write();
        if inner.allocs.contains_key(uid) {
            return Err(GpuError::AlreadyAllocated(uid.to_owned()));
        }
        let i = inner.nodes.index_or_insert_with(node.name(), || NodeGpus::from_node(node));
        let name = inner.nodes.names[i].as_ref().map_or(Symbol::EMPTY, HeldSymbol::symbol);
        let gpus = &inner.nodes.entries[i];
        for (k, &d) in devices.iter().enumerate() {
            let ok = gpus.free.get(d as usize).is_some_and(|&f| f >= req.milli) && !devices[..k].contains(&d);
            if !ok {
                return Err(GpuError::DoesNotFit {
                    node: node.name().to_owned(),
                    device: d as usize,
                    milli: req.milli,
                });
            }
        }
        let tag = req.affinity_tag();
        inner.nodes.modify(i, |gpus| {
            for &d in devices {
                gpus.free[d as usize] -= req.milli;
            }
            match gpus.tags.iter_mut().find(|(t, _)| *t == tag) {
                Some(e) => e.1 += 1,
                None => gpus.tags.push((tag, 1)),
            }
        });
        inner.used_milli += req.total_milli();
        inner.allocs.insert(uid.into(), Allocation { node: name, devices: devices.into(), milli: req.milli, tag });
        Ok(())
    }

    /// Gives back what pod `uid` holds; `None` if it holds nothing.
    pub fn release(&self, uid: &str) -> Option<Allocation> {
        let mut inner = self.inner.write();
        let a = inner.allocs.remove(uid)?;
        inner.used_milli -= i64::from(a.milli) * a.devices.len() as i64;
        if let Some(i) = inner.nodes.index(a.node) {
            inner.nodes.modify(i, |g| {
                for &d in &a.devices {
                    g.free[d as usize] += a.milli;
                }
                if let Some(i) = g.tags.iter().position(|(t, _)| *t == a.tag) {
                    g.tags[i].1 -= 1;
                    if g.tags[i].1 == 0 {
                        g.tags.swap_remove(i);
                    }
                }
            });
        }
        Some(a)
    }
}

/// A read view of a [`GpuState`].
pub struct GpuView<'a>(parking_lot::RwLockReadGuard<'a, Inner>);

impl std::fmt::Debug for GpuView<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuView").field("nodes", &self.0.nodes.len()).finish()
    }
}

impl GpuView<'_> {
    /// What GpuShareFit's Filter reads for `req` this cycle: the table's summaries as
    /// they stand (shared, not copied), or `None` when they can't answer `req` alone.
    pub(super) fn filter_view(&self, req: &GpuRequest) -> Option<FilterView> {
        let t = &self.0.nodes;
        Summary::answers(req).then(|| FilterView::Table {
            req: req.clone(),
            index: t.index.clone(),
            summaries: t.summaries.clone(),
        })
    }

    /// Number of entries in the table (removed nodes' free entries included): an upper
    /// bound on the entry indexes.
    pub(super) fn len(&self) -> usize {
        self.0.nodes.len()
    }

    /// Changes whenever a node is added to or removed from the table.
    pub(super) fn membership(&self) -> u64 {
        self.0.nodes.membership
    }

    /// Whether every node of `snapshot` is in the table, so that the table alone says
    /// which of them GpuShareFit's Filter accepts.
    pub(super) fn covers(&self, snapshot: &Snapshot) -> bool {
        snapshot.nodes().iter().all(|n| self.0.nodes.index(n.name()).is_some())
    }

    /// The table's nodes whose summary fits `req` (one the summaries
    /// [answer](Summary::answers)): exactly the table nodes the Filter view of `req`
    /// taken under this same view accepts. From the [`FreeIndex`], visiting only
    /// buckets with room.
    #[cfg(test)]
    pub(super) fn fitting_names(&self, req: &GpuRequest) -> ahash::AHashSet<Symbol> {
        let t = &self.0.nodes;
        // Sized once: growing it as it fills cost as much as the inserts.
        let mut out = ahash::AHashSet::with_capacity(t.free.fitting_bound(req));
        self.for_each_fitting(req, |i| {
            if let Some(name) = &t.names[i] {
                out.insert(name.symbol());
            }
        });
        out
    }

    /// Calls `f` with the index of each listed entry whose summary fits `req` (the
    /// entries of [`GpuView::fitting_names`]).
    pub(super) fn for_each_fitting(&self, req: &GpuRequest, mut f: impl FnMut(usize)) {
        let t = &self.0.nodes;
        t.free.fitting(req, |i| {
            // Indexed entries are listed ones: removal unindexes an entry first.
            if t.names[i].is_some() {
                f(i);
            }
        });
    }

    /// The table's last stamp, for a later [`GpuView::update_fitting`].
    pub(super) fn last_stamp(&self) -> u64 {
        self.0.nodes.last_stamp
    }

    /// Brings `set`, [`GpuView::fitting_names`] of `req` when the table's last stamp
    /// was `since` and its membership the same as now, up to this view: each entry
    /// changed since then goes in or out by its summary. `false` (set untouched) when
    /// the change log no longer reaches back to `since`.
    #[cfg(test)]
    pub(super) fn update_fitting(&self, req: &GpuRequest, since: u64, set: &mut ahash::AHashSet<Symbol>) -> bool {
        let t = &self.0.nodes;
        self.for_each_changed(req, since, |i, fits| {
            // Same membership: a changed entry is still listed under the same name.
            if let Some(name) = &t.names[i] {
                if fits {
                    set.insert(name.symbol());
                } else {
                    set.remove(&name.symbol());
                }
            }
        })
    }

    /// Calls `f(entry, fits)` for each listed entry changed since the table's stamp
    /// `since` (with repeats), `fits` saying whether its summary now fits `req`: what
    /// brings a set of fitting entries taken then up to this view. `false` (no call)
    /// when the change log no longer reaches back to `since`.
    pub(super) fn for_each_changed(&self, req: &GpuRequest, since: u64, mut f: impl FnMut(usize, bool)) -> bool {
        let t = &self.0.nodes;
        if since < t.log_after {
            return false;
        }
        let from = t.changes.partition_point(|&(stamp, _)| stamp <= since);
        for &(_, i) in &t.changes[from..] {
            let i = i as usize;
            if t.names[i].is_some() {
                f(i, t.summaries[i].fits_exactly(req));
            }
        }
        true
    }

    /// Each table entry's position in `snapshot` ([`u32::MAX`]: a free entry, or a
    /// node the snapshot doesn't hold), valid while the table's membership and the
    /// snapshot's node list stay the same.
    pub(super) fn entry_positions(&self, snapshot: &Snapshot) -> Vec<u32> {
        self.0
            .nodes
            .names
            .iter()
            .map(|n| {
                n.as_ref()
                    .and_then(|n| snapshot.index_of(n.symbol()))
                    .and_then(|i| u32::try_from(i).ok())
                    .unwrap_or(u32::MAX)
            })
            .collect()
    }

    /// The node's table entry: its index, its stamp (renewed by every change of the
    /// entry, never reused) and its devices; `None` when the table hasn't seen the node.
    #[inline]
    pub(super) fn entry(&self, node: &NodeInfo) -> Option<(usize, u64, &NodeGpus)> {
        let t = &self.0.nodes;
        t.index(node.name()).map(|i| (i, t.stamps[i], &t.entries[i]))
    }

    /// Runs `f` on the node's devices (all free when the table hasn't seen the node).
    #[inline]
    pub fn with_node<R>(&self, node: &NodeInfo, f: impl FnOnce(&NodeGpus) -> R) -> R {
        match self.0.nodes.get(node.name()) {
            Some(g) => f(g),
            None => f(&NodeGpus::from_node(node.node())),
        }
    }

    /// Whether `node` may serve `req` (GpuShareFit's Filter): it has GPUs, of a model
    /// `req` accepts, and room by [`NodeGpus::can_host`].
    #[inline]
    pub fn fits(&self, node: &NodeInfo, req: &GpuRequest) -> bool {
        let t = &self.0.nodes;
        if let Some(i) = t.index(node.name()) {
            t.summaries[i].fits(&t.entries[i], req)
        } else {
            let g = NodeGpus::from_node(node.node());
            Summary::of(&g).fits(&g, req)
        }
    }

    /// The node's free milli-GPU over all devices ([`NodeGpus::total_free`]).
    #[inline]
    pub fn total_free(&self, node: &NodeInfo) -> i64 {
        let t = &self.0.nodes;
        match t.index(node.name()) {
            Some(i) => t.summaries[i].total_free,
            None => NodeGpus::from_node(node.node()).total_free(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::NodeBuilder;

    fn gpu_node(name: &str, gpus: &str) -> Node {
        NodeBuilder::new(name).cpu("32").allocatable(super::super::GPU_COUNT_RESOURCE, gpus).build()
    }

    fn whole(count: u32) -> GpuRequest {
        GpuRequest { count, milli: MILLI, models: SmallVec::new() }
    }

    /// A kept fitting set is brought up to date from the change log while the log
    /// reaches back to it, and refused (to be listed afresh) once it doesn't.
    #[test]
    fn fitting_sets_follow_the_change_log_until_it_wraps() {
        let (a, b) = (gpu_node("gpu-state-log-a", "2"), gpu_node("gpu-state-log-b", "1"));
        let state = GpuState::new();
        state.add_node(&a);
        state.add_node(&b);
        let (stamp, mut kept) = {
            let view = state.view();
            (view.last_stamp(), view.fitting_names(&whole(2)))
        };
        assert_eq!(kept.len(), 1, "only a has two free GPUs");
        state.allocate("p1", &a, &whole(1), &[0]).unwrap();
        {
            let view = state.view();
            assert!(view.update_fitting(&whole(2), stamp, &mut kept));
            assert!(kept.is_empty(), "a has one GPU left");
            assert_eq!(kept, view.fitting_names(&whole(2)));
        }
        // Enough changes to drop the oldest half of the log twice over.
        for i in 0..CHANGE_LOG {
            let uid = format!("log{i}");
            state.allocate(&uid, &b, &whole(1), &[0]).unwrap();
            state.release(&uid).unwrap();
        }
        let view = state.view();
        assert!(!view.update_fitting(&whole(2), stamp, &mut kept), "the log no longer reaches back");
        let recent = view.last_stamp() - 1;
        let mut one = view.fitting_names(&whole(1));
        assert!(view.update_fitting(&whole(1), recent, &mut one));
        assert_eq!(one, view.fitting_names(&whole(1)));
    }

    #[test]
    fn removing_a_node_frees_its_entry_allocations_and_name() {
        let state = GpuState::new();
        state.add_node(&gpu_node("gpu-state-rm-a", "4"));
        state.add_node(&gpu_node("gpu-state-rm-b", "2"));
        state.allocate("p1", &gpu_node("gpu-state-rm-a", "4"), &whole(2), &[0, 1]).unwrap();
        state.allocate("p2", &gpu_node("gpu-state-rm-b", "2"), &whole(1), &[0]).unwrap();
        assert_eq!(state.used_milli(), 3000);
        let membership = state.view().membership();

        assert!(state.remove_node("gpu-state-rm-a"));
        assert!(!state.remove_node("gpu-state-rm-a"), "already gone");
        assert!(!state.remove_node("gpu-state-rm-never"), "never listed");
        assert_ne!(state.view().membership(), membership);
        assert!(state.node("gpu-state-rm-a").is_none());
        assert_eq!(Symbol::lookup("gpu-state-rm-a"), None, "the table gave the name back");
        assert_eq!(state.allocation("p1"), None, "the pod's devices left with the node");
        assert_eq!(state.release("p1"), None);
        assert_eq!(state.used_milli(), 1000, "only b's allocation is left");

        // The next node takes the free entry; the table does not grow.
        let len = state.view().len();
        state.add_node(&gpu_node("gpu-state-rm-c", "8"));
        assert_eq!(state.view().len(), len);
        assert_eq!(state.node("gpu-state-rm-c").unwrap().fully_free(), 8);
        // The free index lists c (8 whole GPUs free) and b (1), never a.
        let view = state.view();
        let names: Vec<String> = view.fitting_names(&whole(1)).iter().map(ToString::to_string).collect();
        assert_eq!(names.len(), 2, "{names:?}");
        assert!(names.contains(&"gpu-state-rm-b".to_owned()) && names.contains(&"gpu-state-rm-c".to_owned()));
        let names = view.fitting_names(&whole(3));
        assert_eq!(names.len(), 1);
        drop(view);

        assert_eq!(state.release("p2").unwrap().devices.as_slice(), [0]);
        assert!(state.remove_node("gpu-state-rm-b") && state.remove_node("gpu-state-rm-c"));
        assert_eq!(state.used_milli(), 0);
        assert_eq!(Symbol::lookup("gpu-state-rm-b"), None);
        assert_eq!(Symbol::lookup("gpu-state-rm-c"), None);
    }
}
