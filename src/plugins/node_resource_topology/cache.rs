//! Where the plugin gets NodeResourceTopology objects: the [`NrtStore`] a user or
//! simulator fills (shared through the [`Handle`](crate::framework::Handle)), and the
//! caches upstream puts in front of it (scheduler-plugins
//! `pkg/noderesourcetopology/cache/`: `passthrough.go`, `discardreserved.go`,
//! `overreserve.go`, `store.go`).

use std::sync::Arc;

use ahash::AHashMap;
use parking_lot::RwLock;

use super::api::{NodeResourceTopology, NrtError};
use super::numa::{NodeTopology, ResList};
use crate::model::{HeldSymbol, Quantity, Symbol};

#[derive(Debug, Clone)]
struct Entry {
    object: Arc<NodeResourceTopology>,
    topology: Arc<NodeTopology>,
}

/// The NodeResourceTopology objects of the cluster by node name: what the API server
/// holds upstream. Share one through the handle
/// ([`Handle::set_shared`](crate::framework::Handle::set_shared)) before building
/// profiles; the plugin then reads it, and the caller adds, updates and removes
/// objects at any time. The store holds each object's node name until the object is
/// removed (it does not pin it).
///
/// ```
/// use std::sync::Arc;
/// use schedkit::framework::Handle;
/// use schedkit::plugins::node_resource_topology::{NodeResourceTopology, NrtStore};
/// let store = Arc::new(NrtStore::new());
/// store.upsert(NodeResourceTopology::new("n1"))?;
/// let handle = Handle::default();
/// handle.set_shared(store.clone());
/// assert!(handle.shared::<NrtStore>().unwrap().get("n1").is_some());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Default)]
pub struct NrtStore {
    objects: RwLock<AHashMap<HeldSymbol, Entry>>,
}

impl NrtStore {
    /// An empty store.
    pub fn new() -> Self {
        NrtStore::default()
    }

    /// Adds or replaces the object named as its node, after validating it.
    pub fn upsert(&self, nrt: NodeResourceTopology) -> Result<(), NrtError> {
        nrt.validate()?;
        let topology = Arc::new(NodeTopology::from_nrt(&nrt));
        let key = HeldSymbol::new(nrt.name());
        self.objects.write().insert(key, Entry { object: Arc::new(nrt), topology });
        Ok(())
    }

    /// Removes a node's object; returns it if there was one.
    pub fn remove(&self, node: &str) -> Option<Arc<NodeResourceTopology>> {
        let key = Symbol::lookup(node)?;
        self.objects.write().remove(&key).map(|e| e.object)
    }

    /// A node's object.
    pub fn get(&self, node: &str) -> Option<Arc<NodeResourceTopology>> {
        let key = Symbol::lookup(node)?;
        self.objects.read().get(&key).map(|e| e.object.clone())
    }

    /// A node's digested topology.
    #[inline]
    pub fn topology(&self, node: Symbol) -> Option<Arc<NodeTopology>> {
        self.objects.read().get(&node).map(|e| e.topology.clone())
    }

    /// Runs `f` on a node's digested topology under the read lock (no reference count
    /// traffic: the Filter and Score hot path).
    #[inline]
    pub fn with_topology<R>(&self, node: Symbol, f: impl FnOnce(Option<&NodeTopology>) -> R) -> R {
        let g = self.objects.read();
        f(g.get(&node).map(|e| &*e.topology))
    }

    /// How many objects the store holds.
    pub fn len(&self) -> usize {
        self.objects.read().len()
    }

    /// Whether the store is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// What a cache returns for a node (upstream `GetCachedNRTCopy`'s object and `Fresh`).
#[derive(Debug, Clone, PartialEq)]
pub enum NrtView {
    /// The data is stale (Fresh = false): Filter rejects, Score gives 0.
    Stale,
    /// No object for the node: Filter admits, Score gives 0.
    Missing,
    /// The node's topology, with the cache's deductions applied (shared: reading it
    /// copies nothing).
    Present(Arc<NodeTopology>),
}

/// Which cache the args select.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheKind {
    /// `cacheResyncPeriodSeconds <= 0`: read the store every time.
    Passthrough,
    /// `discardReservedNodes: true`: a node with a pod between Reserve and
    /// PostBind/Unreserve is stale.
    DiscardReserved,
    /// `cacheResyncPeriodSeconds > 0`: keep copies, deduct assumed pods from every zone.
    OverReserve,
}

/// An assumed pod on a node: its `namespace/name` key and effective request.
type Assumed = Vec<(String, ResList)>;

/// Per-node state keyed by the node's name, held (not pinned) while the entry lives and
/// searched with a plain [`Symbol`].
type ByNode<V> = AHashMap<HeldSymbol, V>;

/// Inserts `node`'s entry if absent (holding its name) and returns it; `None` for a
/// symbol no holder keeps (no node has that name now).
fn entry_of<V: Default>(map: &mut ByNode<V>, node: Symbol) -> Option<&mut V> {
    if !map.contains_key(&node) {
        map.insert(HeldSymbol::hold(node)?, V::default());
    }
    map.get_mut(&node)
}

#[derive(Debug, Default, Clone)]
struct OverReserveState {
    /// Node copies as of the last flush (first read from the store when first seen).
    copies: ByNode<Option<Arc<NodeTopology>>>,
    /// The copy minus the assumed pods, recomputed on Reserve/Unreserve/flush so a
    /// read is a reference-count bump.
    adjusted: ByNode<Option<Arc<NodeTopology>>>,
    assumed: ByNode<Assumed>,
    maybe_over_reserved: ByNode<u32>,
    foreign_pods: ByNode<u32>,
    generation: u64,
}

impl OverReserveState {
    fn copy(&self, node: Symbol) -> Option<&Arc<NodeTopology>> {
        self.copies.get(&node)?.as_ref()
    }

    fn adjusted_or_copy(&self, node: Symbol) -> Option<&Arc<NodeTopology>> {
        self.adjusted.get(&node).and_then(Option::as_ref).or_else(|| self.copy(node))
    }
}

/// The plugin's view of the store, as upstream's `cache.Interface`.
///
/// Its per-node state (reservations, over-reserve copies and marks) holds the node's
/// name; [`NrtCache::forget_node`] drops it when the node leaves (the plugin calls it
/// as a [`NodeObserver`](crate::framework::NodeObserver)).
#[derive(Debug)]
pub struct NrtCache {
    store: Arc<NrtStore>,
    kind: CacheKind,
    discard: RwLock<ByNode<Vec<Arc<str>>>>,
    over: RwLock<OverReserveState>,
}

impl NrtCache {
    /// A cache of `kind` over `store`.
    pub fn new(store: Arc<NrtStore>, kind: CacheKind) -> Self {
        NrtCache { store, kind, discard: RwLock::default(), over: RwLock::default() }
    }

    /// Which kind this is.
    pub fn kind(&self) -> CacheKind {
        self.kind
    }

    /// The store behind the cache.
    pub fn store(&self) -> &Arc<NrtStore> {
        &self.store
    }

    /// The node's topology for this cycle (upstream `GetCachedNRTCopy`). Over-reserve:
    /// every assumed pod's effective request is taken from every zone that lists the
    /// resource, clamped at zero.
    pub fn view(&self, node: Symbol) -> NrtView {
        match self.kind {
            CacheKind::Passthrough => self.store.topology(node).map_or(NrtView::Missing, NrtView::Present),
            CacheKind::DiscardReserved => {
                if self.discard.read().get(&node).is_some_and(|v| !v.is_empty()) {
                    return NrtView::Stale;
                }
                self.store.topology(node).map_or(NrtView::Missing, NrtView::Present)
            }
            CacheKind::OverReserve => {
                let st = self.over.read();
                if st.foreign_pods.contains_key(&node) {
                    return NrtView::Stale;
                }
                if let Some(t) = st.adjusted_or_copy(node) {
                    return NrtView::Present(t.clone());
                }
                self.store.topology(node).map_or(NrtView::Missing, NrtView::Present)
            }
        }
    }

    /// Recomputes the node's copy minus its assumed pods: each assumed pod's effective
    /// request is taken from every zone that lists the resource, clamped at zero
    /// (upstream `resourceStore.UpdateNRT`, run by `GetCachedNRTCopy`).
    fn readjust(st: &mut OverReserveState, node: Symbol) {
        let pods = st.assumed.get(&node).filter(|p| !p.is_empty());
        let (Some(copy), Some(pods)) = (st.copy(node), pods) else {
            st.adjusted.remove(&node);
            return;
        };
        let mut t = (**copy).clone();
        for (_, req) in pods {
            for zone in &mut t.zones {
                for (name, avail) in &mut zone.resources {
                    let Some((_, q)) = req.iter().find(|(n, _)| n == name) else { continue };
                    *avail = if *avail < *q { Quantity::ZERO } else { avail.checked_sub(q).unwrap_or(Quantity::ZERO) };
                }
            }
        }
        if let Some(slot) = entry_of(&mut st.adjusted, node) {
            *slot = Some(Arc::new(t));
        }
    }

    /// [`NrtCache::view`] without copying or counting references: `f` gets `None` for
    /// stale data, `Some(None)` for a missing object, `Some(Some(t))` otherwise.
    #[inline]
    pub fn with_view<R>(&self, node: Symbol, f: impl FnOnce(Option<Option<&NodeTopology>>) -> R) -> R {
        match self.kind {
            CacheKind::Passthrough => self.store.with_topology(node, |t| f(Some(t))),
            CacheKind::DiscardReserved => {
                if self.discard.read().get(&node).is_some_and(|v| !v.is_empty()) {
                    return f(None);
                }
                self.store.with_topology(node, |t| f(Some(t)))
            }
            CacheKind::OverReserve => {
                let st = self.over.read();
                if st.foreign_pods.contains_key(&node) {
                    return f(None);
                }
                if let Some(t) = st.adjusted_or_copy(node) {
                    return f(Some(Some(t)));
                }
                self.store.with_topology(node, |t| f(Some(t)))
            }
        }
    }

    /// Filter rejected a pod on `node` (upstream `NodeMaybeOverReserved`).
    pub fn node_maybe_over_reserved(&self, node: Symbol) {
        if self.kind == CacheKind::OverReserve
            && let Some(n) = entry_of(&mut self.over.write().maybe_over_reserved, node)
        {
            *n += 1;
        }
    }

    /// A pod this scheduler didn't place runs on `node` (upstream `NodeHasForeignPods`):
    /// over-reserve marks the node stale until it is flushed, if it has an object.
    pub fn node_has_foreign_pods(&self, node: Symbol) {
        if self.kind == CacheKind::OverReserve
            && self.store.topology(node).is_some()
            && let Some(n) = entry_of(&mut self.over.write().foreign_pods, node)
        {
            *n += 1;
        }
    }

    /// Reserve (upstream `ReserveNodeResources`).
    pub fn reserve(&self, node: Symbol, pod_key: &str, uid: &Arc<str>, request: ResList) {
        match self.kind {
            CacheKind::Passthrough => {}
            CacheKind::DiscardReserved => {
                let mut d = self.discard.write();
                let Some(v) = entry_of(&mut d, node) else { return };
                if !v.contains(uid) {
                    v.push(uid.clone());
                }
            }
            CacheKind::OverReserve => {
                let mut st = self.over.write();
                if st.copy(node).is_none()
                    && let Some(t) = self.store.topology(node)
                    && let Some(slot) = entry_of(&mut st.copies, node)
                {
                    *slot = Some(t);
                }
                let Some(pods) = entry_of(&mut st.assumed, node) else { return };
                match pods.iter_mut().find(|(k, _)| k == pod_key) {
                    Some(e) => e.1 = request,
                    None => pods.push((pod_key.to_owned(), request)),
                }
                st.maybe_over_reserved.remove(&node);
                Self::readjust(&mut st, node);
            }
        }
    }

    /// Unreserve (upstream `UnreserveNodeResources`).
    pub fn unreserve(&self, node: Symbol, pod_key: &str, uid: &str) {
        match self.kind {
            CacheKind::Passthrough => {}
            CacheKind::DiscardReserved => self.release(node, uid),
            CacheKind::OverReserve => {
                let mut st = self.over.write();
                if let Some(pods) = st.assumed.get_mut(&node) {
                    pods.retain(|(k, _)| k != pod_key);
                    if pods.is_empty() {
                        st.assumed.remove(&node);
                    }
                }
                Self::readjust(&mut st, node);
            }
        }
    }

    /// PostBind: discard-reserved forgets the reservation; the others do nothing.
    pub fn post_bind(&self, node: Symbol, uid: &str) {
        if self.kind == CacheKind::DiscardReserved {
            self.release(node, uid);
        }
    }

    fn release(&self, node: Symbol, uid: &str) {
        let mut d = self.discard.write();
        if let Some(v) = d.get_mut(&node) {
            v.retain(|u| &**u != uid);
            if v.is_empty() {
                d.remove(&node);
            }
        }
    }

    /// Drops everything the cache keeps for a node that left the cluster (its
    /// reservations, over-reserve copy, assumed pods and marks), giving back its name.
    /// Beyond upstream, whose caches are keyed by garbage-collected strings.
    pub fn forget_node(&self, name: &str) {
        let Some(node) = Symbol::lookup(name) else { return };
        self.discard.write().remove(&node);
        let mut st = self.over.write();
        st.copies.remove(&node);
        st.adjusted.remove(&node);
        st.assumed.remove(&node);
        st.maybe_over_reserved.remove(&node);
        st.foreign_pods.remove(&node);
    }

    /// Nodes an over-reserve resync would look at: those with foreign pods or marked
    /// maybe-over-reserved (upstream `GetDesyncedNodes`), sorted by name.
    pub fn desynced_nodes(&self) -> Vec<String> {
        let st = self.over.read();
        let mut v: Vec<String> =
            st.foreign_pods.keys().chain(st.maybe_over_reserved.keys()).map(|s| s.as_str().to_owned()).collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Over-reserve flush (upstream `FlushNodes`): for each named node, take the
    /// store's object as the new copy, drop its assumed pods and clear its marks; the
    /// generation goes up by one when any node was named. Upstream's resync flushes a
    /// desynced node once the object's pod fingerprint matches the node's pods; here
    /// the caller, which feeds the store, decides when the object is current and
    /// flushes (see [`NrtCache::desynced_nodes`]). Returns the generation.
    pub fn flush_nodes<'a>(&self, nodes: impl IntoIterator<Item = &'a str>) -> u64 {
        let mut st = self.over.write();
        let mut any = false;
        for name in nodes {
            any = true;
            // A name nothing holds has no store object and no state here.
            let Some(key) = Symbol::lookup(name) else { continue };
            match self.store.topology(key) {
                Some(t) => {
                    if let Some(slot) = entry_of(&mut st.copies, key) {
                        *slot = Some(t);
                    }
                }
                None => {
                    st.copies.remove(&key);
                }
            }
            st.assumed.remove(&key);
            st.adjusted.remove(&key);
            st.maybe_over_reserved.remove(&key);
            st.foreign_pods.remove(&key);
        }
        if any {
            st.generation += 1;
        }
        st.generation
    }

    /// The over-reserve generation (0 for the other kinds).
    pub fn generation(&self) -> u64 {
        self.over.read().generation
    }

    /// The pods assumed on `node` (over-reserve), as `namespace/name` keys.
    pub fn assumed_pods(&self, node: &str) -> Vec<String> {
        let Some(key) = Symbol::lookup(node) else { return Vec::new() };
        self.over.read().assumed.get(&key).map(|v| v.iter().map(|(k, _)| k.clone()).collect()).unwrap_or_default()
    }
}
