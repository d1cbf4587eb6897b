//! GPU sharing: a node's GPUs are individual devices, each with free milli-GPU (1000 =
//! a whole GPU); a pod asks for `count` whole GPUs, or a share (`milli < 1000`, count
//! one) of one GPU, optionally restricted to GPU models. This is the model of the
//! USENIX ATC'23 paper "Beware of Fragmentation: Scheduling GPU-Sharing Workloads with
//! Fragmentation Gradient Descent" (Weng et al.) and of its public simulator
//! (`hkust-adsl/kubernetes-scheduler-simulator`, whose `Open-Gpu-Share` plugin this
//! module's [`GpuShareFit`] follows).
//!
//! # Where the device state lives
//!
//! Which device has how much free milli-GPU is plugin state: a [`NodeInfo`] has no slot
//! for it. It lives in a [`GpuState`], a table keyed by node name behind one lock, shared
//! (by `Arc`) by [`GpuShareFit`] and the policy Score plugins. [`GpuShareFit`]'s Reserve
//! picks the devices (by the profile's [`DeviceSelect`]) and records them in the table and
//! in the [`CycleState`] ([`ReservedDevices`]); Unreserve gives back exactly what Reserve
//! took. A node missing from the table has all its GPUs free (its count and model come
//! from the node: allocatable [`GPU_COUNT_RESOURCE`], label [`GPU_MODEL_LABEL`]);
//! [`GpuState::add_node`] registers nodes up front so Filter doesn't read them from the
//! node each time. Pods bound outside the scheduler are recorded with
//! [`GpuState::allocate`] and released with [`GpuState::release`] when they go (remove
//! or add them in the scheduler's cache at the same time).
//!
//! Filter reads no device lists: the table keeps a small summary per node (model, device
//! count, fully free devices, largest and total free milli-GPU), and GpuShareFit's
//! PreFilter hands Filter the summaries as they stand (shared by `Arc`, copied only if
//! the table changes while a cycle still holds them), so a cycle judges every node
//! against one state of the table without taking its lock per node.
//!
//! The alternative, an extension slot on `NodeInfo`, would put device state in the
//! snapshot's copy-on-write machinery for every user; this keeps the core unchanged and
//! the cost on the plugins that use it. The price: the table is the plugin's, so it is
//! not part of a preemption dry run's cloned state.
//!
//! # Pods
//!
//! A pod's request is read from its labels [`GPU_COUNT_LABEL`], [`GPU_MILLI_LABEL`] and
//! [`GPU_MODEL_LABEL`] (`|`-separated models) — the annotations the authors' simulator
//! reads; schedkit's model keeps them as labels. A pod without them needs no GPU.
//!
//! # Policies
//!
//! One Score plugin per policy of the paper: [`Fgd`], [`BestFit`], [`DotProduct`],
//! [`GpuPacking`], [`GpuClustering`], [`RandomScore`]; [`Policy`] builds the profile the
//! paper's experiments use (GpuShareFit + NodeResourcesFit's Filter + one policy, with
//! that policy's device selection). Each file cites the simulator file it follows; the
//! integer truncations and BestFit's min-max normalisation are the simulator's, and
//! `tests/trace_peer.rs` checks FGD against a run of the simulator pod by pod.

/// Declares a policy Score plugin over the shared [`GpuState`] whose node score is
/// its [`ViewScore::score_in`] with no normalization: the struct, its constructor
/// and the Plugin/ScorePlugin wiring (one request read and one table lock per batch).
macro_rules! view_score_plugin {
    ($(#[$doc:meta])* $ty:ident, $name:expr) => {
        $(#[$doc])*
        pub struct $ty {
            state: std::sync::Arc<super::GpuState>,
        }

        impl $ty {
            #[doc = concat!(stringify!($ty), " over `state`.")]
            pub fn new(state: std::sync::Arc<super::GpuState>) -> $ty {
                $ty { state }
            }
        }

        impl crate::framework::Plugin for $ty {
            fn name(&self) -> &str {
                $name
            }
            fn register(self: std::sync::Arc<Self>, points: &mut crate::framework::ExtensionPoints) {
                points.score(self);
            }
        }

        impl crate::framework::ScorePlugin for $ty {
            fn score(
                &self,
                state: &crate::framework::CycleState,
                pod: &crate::snapshot::PodInfo,
                node: &crate::snapshot::NodeInfo,
            ) -> Result<i64, crate::framework::Status> {
                super::score_one(self, state, pod, node)
            }

            fn score_nodes(
                &self,
                state: &crate::framework::CycleState,
                pod: &crate::snapshot::PodInfo,
                nodes: crate::snapshot::NodeList<'_>,
                scores: &mut [crate::framework::NodeScore],
            ) -> Result<(), crate::framework::Status> {
                super::score_batch(self, state, pod, nodes, scores)
            }
        }
    };
}

mod best_fit;
mod dot_product;
mod fgd;
pub mod frag;
mod gpu_clustering;
mod gpu_packing;
mod random_fit;

use std::sync::Arc;

use ahash::AHashMap;
use parking_lot::{Mutex, RwLock};
use smallvec::SmallVec;

pub use best_fit::BestFit;
pub use dot_product::DotProduct;
pub use fgd::Fgd;
pub use frag::{TypicalPod, TypicalPods};
pub use gpu_clustering::GpuClustering;
pub use gpu_packing::GpuPacking;
pub use random_fit::RandomScore;

use crate::framework::{CycleState, ExtensionPoints, FilterPlugin, Handle, Plugin, PreFilterPlugin, PreFilterResult};
use crate::framework::{ReservePlugin, Status};
use crate::model::{Node, Pod, Symbol};
use crate::snapshot::{NodeInfo, PodInfo, Snapshot};

/// Pod label: number of GPUs (the authors' annotation `alibabacloud.com/gpu-count`).
pub const GPU_COUNT_LABEL: &str = "alibabacloud.com/gpu-count";
/// Pod label: milli-GPU per GPU, 1..=1000 (`alibabacloud.com/gpu-milli`).
pub const GPU_MILLI_LABEL: &str = "alibabacloud.com/gpu-milli";
/// Pod label: allowed GPU models, `|`-separated; node label: the node's GPU model.
pub const GPU_MODEL_LABEL: &str = "alibabacloud.com/gpu-card-model";
/// Node allocatable resource: how many GPU devices the node has.
pub const GPU_COUNT_RESOURCE: &str = "alibabacloud.com/gpu-count";
/// Milli-GPU in one GPU.
pub const MILLI: u32 = 1000;
/// Largest CPU of a node in the paper's normalisations (`MaxSpecCpu`, millicores).
pub const MAX_SPEC_CPU: f64 = 128_000.0;
/// Largest GPU of a node in the paper's normalisations (`MaxSpecGpu`, milli-GPU).
pub const MAX_SPEC_GPU: f64 = 8_000.0;

/// Name of [`GpuShareFit`] (the authors' `Open-Gpu-Share`).
pub const GPU_SHARE_FIT: &str = "GpuShareFit";

/// A pod's GPU request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GpuRequest {
    /// GPUs (1 for a sharing pod).
    pub count: u32,
    /// Milli-GPU per GPU (1000 = whole GPUs).
    pub milli: u32,
    /// Allowed models (empty: any).
    pub models: SmallVec<[Symbol; 2]>,
}

impl GpuRequest {
    /// Reads the request from the pod's labels; `Ok(None)` when it asks for no GPU.
    ///
    /// ```
    /// use schedkit::plugins::gpu_share::{GpuRequest, GPU_COUNT_LABEL, GPU_MILLI_LABEL};
    /// use schedkit::testing::PodBuilder;
    /// let p = PodBuilder::new("p").label(GPU_COUNT_LABEL, "1").label(GPU_MILLI_LABEL, "250").build();
    /// let r = GpuRequest::from_pod(&p).unwrap().unwrap();
    /// assert!(r.is_share());
    /// assert!(GpuRequest::from_pod(&PodBuilder::new("q").build()).unwrap().is_none());
    /// ```
    pub fn from_pod(pod: &Pod) -> Result<Option<GpuRequest>, String> {
        let labels = &pod.metadata.labels;
        let count = labels.get_str(GPU_COUNT_LABEL);
        let milli = labels.get_str(GPU_MILLI_LABEL);
        let (count, milli) = match (count, milli) {
            (None, None) => return Ok(None),
            (c, m) => {
                let c: u32 = c.unwrap_or("1").parse().map_err(|_| format!("label {GPU_COUNT_LABEL}: {c:?}"))?;
                let m: u32 = m.unwrap_or("1000").parse().map_err(|_| format!("label {GPU_MILLI_LABEL}: {m:?}"))?;
                (c, m)
            }
        };
        if count == 0 || milli == 0 {
            return Ok(None);
        }
        if milli > MILLI || (milli < MILLI && count != 1) || count > 64 {
            return Err(format!("invalid GPU request: {count} GPU(s) x {milli} milli"));
        }
        let models = labels
            .get_str(GPU_MODEL_LABEL)
            .map(|s| s.split('|').filter(|m| !m.is_empty()).map(Symbol::intern).collect())
            .unwrap_or_default();
        Ok(Some(GpuRequest { count, milli, models }))
    }

    /// A GPU-sharing request (a fraction of one GPU).
    pub fn is_share(&self) -> bool {
        self.count == 1 && self.milli < MILLI
    }

    /// Total milli-GPU asked for.
    pub fn total_milli(&self) -> i64 {
        i64::from(self.count) * i64::from(self.milli)
    }

    /// Whether a node of GPU model `model` (empty: no GPUs) may serve the request
    /// (the simulator's `IsNodeAccessibleToPodByType`).
    pub fn accepts_model(&self, model: Symbol) -> bool {
        self.models.is_empty() || (!model.is_empty() && self.models.contains(&model))
    }

    /// The GPU-affinity tag GpuClustering groups pods by: 0 for sharing pods, else the
    /// GPU count (the simulator's `share-gpu` / `N-gpu`).
    pub fn affinity_tag(&self) -> u8 {
        if self.is_share() { 0 } else { self.count.min(255) as u8 }
    }
}

/// The request of the pod in this cycle, written by [`GpuShareFit`]'s PreFilter.
#[derive(Debug, Clone, Default)]
pub struct GpuRequestState(pub Option<GpuRequest>);

/// The pod's GPU request: from the cycle state, else parsed from the pod.
pub fn request_of(state: &CycleState, pod: &PodInfo) -> Option<GpuRequest> {
    match state.read::<GpuRequestState>() {
        Some(r) => r.0.clone(),
        None => GpuRequest::from_pod(&pod.pod).ok().flatten(),
    }
}

/// Devices GpuShareFit's Reserve took for the pod in this cycle.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReservedDevices {
    /// Node.
    pub node: String,
    /// Device indexes.
    pub devices: SmallVec<[u8; 8]>,
}

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
    /// Node.
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
struct Summary {
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

    /// Whether the summary alone answers [`NodeGpus::can_host`] for `req` (every
    /// request [`GpuRequest::from_pod`] accepts).
    fn answers(req: &GpuRequest) -> bool {
        req.count <= 1 || req.milli == MILLI
    }

    /// [`Summary::fits`] for a request the summary [answers](Summary::answers).
    #[inline]
    fn fits_exactly(&self, req: &GpuRequest) -> bool {
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
/// hash map). Shared by `Arc` with the cycles' Filter views; adding a node copies it
/// only while a cycle still holds it.
#[derive(Default, Clone)]
struct NodeIndex {
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
}

/// Node GPU entries stored densely in insertion order, found through a [`NodeIndex`].
/// Filter walks the nodes in snapshot order, which is insertion order here, so lookups
/// stay in cache. Each entry has a [`Summary`]; entries change only through
/// [`NodeTable::modify`], which refreshes it. The summaries are shared by `Arc` with
/// the cycles' Filter views, like the index: a change copies them only while a view
/// still holds them (GpuShareFit's Reserve drops its cycle's view before it allocates,
/// so the scheduler's own cycles never copy).
#[derive(Default)]
struct NodeTable {
    index: Arc<NodeIndex>,
    entries: Vec<NodeGpus>,
    summaries: Arc<Vec<Summary>>,
}

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
        Arc::make_mut(&mut self.summaries)[i] = Summary::of(&self.entries[i]);
        r
    }

    /// The index of `name`'s entry, inserting `f()` first if there is none.
    fn index_or_insert_with(&mut self, name: Symbol, f: impl FnOnce() -> NodeGpus) -> usize {
        if let Some(i) = self.index(name) {
            return i;
        }
        let i = self.entries.len();
        let g = f();
        Arc::make_mut(&mut self.summaries).push(Summary::of(&g));
        self.entries.push(g);
        Arc::make_mut(&mut self.index).insert(name, i);
        i
    }

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
enum FilterView {
    /// The pod asks for no GPU.
    NoGpu,
    /// The pod's request (one the summaries answer exactly) and the summaries.
    Table { req: GpuRequest, index: Arc<NodeIndex>, summaries: Arc<Vec<Summary>> },
}

impl FilterView {
    #[inline]
    fn fits(&self, node: &NodeInfo) -> bool {
        match self {
            FilterView::NoGpu => true,
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
    /// count and model on every call.
    pub fn add_node(&self, node: &Node) {
        let fresh = NodeGpus::from_node(node);
        let mut inner = self.inner.write();
        let name = Symbol::intern(node.name());
        if let Some(i) = inner.nodes.index(name) {
            inner.nodes.modify(i, |g| {
                g.model = fresh.model;
                if g.free.len() != fresh.free.len() {
                    g.free = fresh.free;
                }
            });
        } else {
            inner.nodes.index_or_insert_with(name, || fresh);
        }
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
        let name = Symbol::intern(node.name());
        let i = inner.nodes.index_or_insert_with(name, || NodeGpus::from_node(node));
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

/// A policy Score plugin scoring one node given a table view and the pod's request,
/// so `score` and the batched `score_nodes` share one body.
pub(crate) trait ViewScore {
    fn gpu_state(&self) -> &GpuState;
    fn score_in(
        &self,
        view: &GpuView<'_>,
        req: Option<&GpuRequest>,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> Result<i64, Status>;
}

/// `ScorePlugin::score` of a [`ViewScore`].
pub(crate) fn score_one<T: ViewScore>(
    p: &T,
    state: &CycleState,
    pod: &PodInfo,
    node: &NodeInfo,
) -> Result<i64, Status> {
    let req = request_of(state, pod);
    p.score_in(&p.gpu_state().view(), req.as_ref(), pod, node)
}

/// `ScorePlugin::score_nodes` of a [`ViewScore`]: the request read and the table locked
/// once per batch.
pub(crate) fn score_batch<T: ViewScore>(
    p: &T,
    state: &CycleState,
    pod: &PodInfo,
    nodes: crate::snapshot::NodeList<'_>,
    scores: &mut [crate::framework::NodeScore],
) -> Result<(), Status> {
    let req = request_of(state, pod);
    let view = p.gpu_state().view();
    for (slot, node) in scores.iter_mut().zip(nodes.iter()) {
        slot.score = p.score_in(&view, req.as_ref(), pod, node)?;
    }
    Ok(())
}

/// SplitMix64, seeded: for RandomScore and random device choice.
#[derive(Debug, Clone)]
pub(crate) struct Rng(pub u64);

impl Rng {
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }
}

/// How GpuShareFit's Reserve picks devices for a sharing pod (whole-GPU pods always
/// take the first fully free devices, as the simulator's `AllocateExclusiveGpuId`).
#[derive(Debug)]
#[non_exhaustive]
pub enum DeviceSelect {
    /// The device with the least free milli that fits (first on ties): `best`.
    BestFit,
    /// The device with the most free milli (first on ties): `worst`.
    WorstFit,
    /// A uniformly random fitting device, seeded: `random`.
    Random(Mutex<u64>),
    /// The device whose use lowers the node's fragmentation most (FGD's own rule).
    Fgd(Arc<TypicalPods>),
}

impl DeviceSelect {
    /// Random device choice from `seed`.
    pub fn random(seed: u64) -> DeviceSelect {
        DeviceSelect::Random(Mutex::new(seed))
    }

    /// Devices for `req` on a node with `gpus` and `cpu_left` free millicores.
    pub fn choose(&self, gpus: &NodeGpus, cpu_left: i64, pod_cpu: i64, req: &GpuRequest) -> Option<SmallVec<[u8; 8]>> {
        if !req.is_share() {
            return gpus.exclusive_devices(req.count);
        }
        let fits = gpus.free.iter().enumerate().filter(|&(_, &f)| f >= req.milli);
        let pick = match self {
            DeviceSelect::BestFit => fits.min_by_key(|&(i, &f)| (f, i)).map(|(i, _)| i),
            DeviceSelect::WorstFit => fits.max_by_key(|&(i, &f)| (f, std::cmp::Reverse(i))).map(|(i, _)| i),
            DeviceSelect::Random(seed) => {
                let mut s = seed.lock();
                let mut rng = Rng(*s);
                let mut chosen = None;
                for (n, (i, _)) in fits.enumerate() {
                    if rng.below(n + 1) == 0 {
                        chosen = Some(i);
                    }
                }
                *s = rng.0;
                chosen
            }
            DeviceSelect::Fgd(typical) => fgd::best_share_device(typical, gpus, cpu_left, pod_cpu, req).map(|(i, _)| i),
        };
        pick.map(|i| SmallVec::from_slice(&[i as u8]))
    }
}

/// Filter + Reserve for GPU sharing (the simulator's `Open-Gpu-Share`).
///
/// Filter: a pod without GPU request passes; otherwise the node must have GPUs of an
/// allowed model and `count` devices with `milli` free each. Reserve: picks devices by
/// its [`DeviceSelect`] on the node as the cycle's snapshot saw it (through the
/// [`Handle`]: build the scheduler with the same handle), records them in the
/// [`GpuState`] and in [`ReservedDevices`]. Unreserve releases exactly those.
pub struct GpuShareFit {
    state: Arc<GpuState>,
    handle: Handle,
    select: DeviceSelect,
}

impl GpuShareFit {
    /// The plugin over `state`, reading nodes through `handle`.
    pub fn new(state: Arc<GpuState>, handle: Handle, select: DeviceSelect) -> GpuShareFit {
        GpuShareFit { state, handle, select }
    }
}

impl Plugin for GpuShareFit {
    fn name(&self) -> &str {
        GPU_SHARE_FIT
    }
    fn register(self: Arc<Self>, points: &mut ExtensionPoints) {
        points.pre_filter(self.clone()).filter(self.clone()).reserve(self);
    }
}

impl PreFilterPlugin for GpuShareFit {
    fn pre_filter(&self, state: &mut CycleState, pod: &PodInfo, _: &Snapshot) -> (Option<PreFilterResult>, Status) {
        match GpuRequest::from_pod(&pod.pod) {
            Ok(r) => {
                match &r {
                    None => state.write(FilterView::NoGpu),
                    Some(req) if Summary::answers(req) => {
                        let view = self.state.view();
                        let t = &view.0.nodes;
                        state.write(FilterView::Table {
                            req: req.clone(),
                            index: t.index.clone(),
                            summaries: t.summaries.clone(),
                        });
                    }
                    // Never from from_pod; Filter then reads the table itself.
                    Some(_) => {
                        state.remove::<FilterView>();
                    }
                }
                state.write(GpuRequestState(r));
                (None, Status::SUCCESS)
            }
            Err(e) => (None, Status::unresolvable(e)),
        }
    }
}

/// GpuShareFit's Filter rejection.
const INSUFFICIENT_GPU: Status = Status::from_static(crate::framework::Code::Unschedulable, "Insufficient GPU");

impl FilterPlugin for GpuShareFit {
    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        if let Some(view) = state.read::<FilterView>() {
            return if view.fits(node) { Status::SUCCESS } else { INSUFFICIENT_GPU };
        }
        let req = match state.read::<GpuRequestState>() {
            Some(GpuRequestState(None)) => return Status::SUCCESS,
            Some(GpuRequestState(Some(r))) => std::borrow::Cow::Borrowed(r),
            None => match GpuRequest::from_pod(&pod.pod) {
                Ok(None) => return Status::SUCCESS,
                Ok(Some(r)) => std::borrow::Cow::Owned(r),
                Err(e) => return Status::unresolvable(e),
            },
        };
        let ok = self.state.view().fits(node, &req);
        if ok { Status::SUCCESS } else { INSUFFICIENT_GPU }
    }
}

impl ReservePlugin for GpuShareFit {
    fn reserve(&self, state: &mut CycleState, pod: &PodInfo, node: &str) -> Status {
        // Filter is over: let go of the table's summaries so allocating doesn't copy them.
        state.remove::<FilterView>();
        let Some(req) = request_of(state, pod) else { return Status::SUCCESS };
        let snap = self.handle.snapshot();
        let Some(info) = snap.get(node) else {
            return Status::error(format!(
                "node {node} is not in the handle's snapshot: build the scheduler with the handle GpuShareFit was given"
            ));
        };
        let cpu_left = info.allocatable().milli_cpu - info.requested().milli_cpu;
        let pod_cpu = pod.non_zero_requests.milli_cpu;
        let Some(devices) = self.state.with_node(info, |g| self.select.choose(g, cpu_left, pod_cpu, &req)) else {
            return Status::unschedulable(format!("no GPU device on {node} fits the pod"));
        };
        if let Err(e) = self.state.allocate(&pod.uid, info.node(), &req, &devices) {
            return Status::unschedulable(e.to_string());
        }
        state.write(ReservedDevices { node: node.to_owned(), devices });
        Status::SUCCESS
    }

    fn unreserve(&self, state: &mut CycleState, pod: &PodInfo, _node: &str) {
        if state.remove::<ReservedDevices>().is_some() {
            self.state.release(&pod.uid);
        }
    }
}

/// Free CPU (millicores) of a node: allocatable minus requested, as the simulator's
/// `MilliCpuLeft`.
#[inline]
pub fn cpu_left(node: &NodeInfo) -> i64 {
    node.allocatable().milli_cpu - node.requested().milli_cpu
}

/// The scheduling policies of the paper's experiments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Policy {
    /// RandomScore + random device.
    Random,
    /// DotProduct (Tetris) on [cpu, gpu] normalised by the max spec, best-fit device.
    DotProduct,
    /// GpuClustering, best-fit device.
    GpuClustering,
    /// GpuPacking, best-fit device.
    GpuPacking,
    /// BestFit, best-fit device.
    BestFit,
    /// Fragmentation gradient descent, FGD's own device choice.
    Fgd,
}

impl Policy {
    /// All six, in the paper's order.
    pub const ALL: [Policy; 6] =
        [Policy::Random, Policy::DotProduct, Policy::GpuClustering, Policy::GpuPacking, Policy::BestFit, Policy::Fgd];

    /// Short name (`FGD`, `BestFit`...), as in the paper's figures.
    pub fn name(self) -> &'static str {
        match self {
            Policy::Random => "Random",
            Policy::DotProduct => "DotProd",
            Policy::GpuClustering => "GpuClustering",
            Policy::GpuPacking => "GpuPacking",
            Policy::BestFit => "BestFit",
            Policy::Fgd => "FGD",
        }
    }

    /// Parses a policy name (case-insensitive; `dotproduct` and `dotprod` both work).
    pub fn parse(s: &str) -> Option<Policy> {
        let l = s.to_ascii_lowercase();
        Some(match l.as_str() {
            "random" | "randomfit" | "randomscore" => Policy::Random,
            "dotprod" | "dotproduct" => Policy::DotProduct,
            "gpuclustering" | "clustering" => Policy::GpuClustering,
            "gpupacking" | "packing" => Policy::GpuPacking,
            "bestfit" => Policy::BestFit,
            "fgd" => Policy::Fgd,
            _ => return None,
        })
    }

    /// The profile of the paper's runs for this policy: GpuShareFit (with the policy's
    /// device choice) and `filters` (e.g. NodeResourcesFit; their PreScore and Score are
    /// disabled), then the policy as the only Score plugin. `seed` drives the random
    /// policy.
    pub fn profile(
        self,
        name: &str,
        state: &Arc<GpuState>,
        handle: &Handle,
        typical: &Arc<TypicalPods>,
        seed: u64,
        filters: Vec<Arc<dyn Plugin>>,
    ) -> Result<crate::framework::Profile, crate::framework::ConfigError> {
        let select = match self {
            Policy::Random => DeviceSelect::random(seed ^ 0xd1ce),
            Policy::Fgd => DeviceSelect::Fgd(typical.clone()),
            _ => DeviceSelect::BestFit,
        };
        let mut b =
            crate::framework::Profile::builder(name).plugin(GpuShareFit::new(state.clone(), handle.clone(), select));
        for f in filters {
            let name = f.name().to_owned();
            b = b
                .plugin_arc(f, 1)
                .disable(&name, crate::framework::ExtensionPoint::PreScore)
                .disable(&name, crate::framework::ExtensionPoint::Score);
        }
        b = match self {
            Policy::Random => b.plugin(RandomScore::new(seed)),
            Policy::DotProduct => b.plugin(DotProduct::new(state.clone())),
            Policy::GpuClustering => b.plugin(GpuClustering::new(state.clone())),
            Policy::GpuPacking => b.plugin(GpuPacking::new(state.clone())),
            Policy::BestFit => b.plugin(BestFit::new(state.clone())),
            Policy::Fgd => b.plugin(Fgd::new(state.clone(), typical.clone())),
        };
        b.percentage_of_nodes_to_score(100).build()
    }
}
