//! NodeInfo, the immutable per-cycle [`Snapshot`], and the mutable [`Cache`] it is
//! taken from.

mod cache;
mod label_columns;
mod node_info;
pub(crate) mod pod_groups;
mod pod_info;
mod resource_columns;

use std::sync::Arc;

use ahash::AHashMap;

pub use cache::{Cache, CacheError, UpdateStats};
pub(crate) use label_columns::SnapshotBlock;
pub use node_info::{NodeInfo, normalized_image};
pub use pod_groups::{MemberState, PodGroupState, PodGroupStates};
pub use pod_info::{HostPort, PodInfo};
pub(crate) use resource_columns::{ResourceRow, flag as node_flags};

use crate::model::Symbol;

/// The cluster as one scheduling cycle sees it: immutable, cheap to share.
///
/// Nodes are listed in upstream's node-tree order (round robin over zones), which is
/// the order node sampling walks.
#[derive(Debug)]
pub struct Snapshot {
    nodes: Vec<Arc<NodeInfo>>,
    index: AHashMap<Symbol, usize>,
    with_affinity: Vec<usize>,
    with_required_anti_affinity: Vec<usize>,
    image_nodes: Arc<AHashMap<Symbol, u32>>,
    generation: u64,
    structure_generation: u64,
    /// Tells snapshot objects apart, so a cache of per-node results keyed by
    /// position knows whether [`Snapshot::changed_since`] speaks of its nodes.
    id: u64,
    /// `(generation, position)` of nodes replaced in place, oldest first; complete
    /// for every update after `log_start`.
    log: Vec<(u64, usize)>,
    log_start: u64,
    /// Label-value columns by key, built on first use and kept by updates.
    columns: label_columns::LabelColumns,
    /// Every node's resource totals by position, kept by every update.
    resources: resource_columns::ResourceColumns,
}

/// Most in-place replacements [`Snapshot::changed_since`] remembers; older
/// questions get `None` (rescan everything).
const CHANGE_LOG_CAPACITY: usize = 4096;

fn next_snapshot_id() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

impl Default for Snapshot {
    fn default() -> Self {
        Snapshot {
            nodes: Vec::new(),
            index: AHashMap::new(),
            with_affinity: Vec::new(),
            with_required_anti_affinity: Vec::new(),
            image_nodes: Arc::default(),
            generation: 0,
            structure_generation: 0,
            id: next_snapshot_id(),
            log: Vec::new(),
            log_start: 0,
            columns: label_columns::LabelColumns::default(),
            resources: resource_columns::ResourceColumns::default(),
        }
    }
}

thread_local! {
    /// Whole-snapshot copies made on this thread (clones and placement views).
    static COPIES: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many whole snapshots this thread has copied ([`Clone`] and placement views):
/// tests use it to check that a pod-group cycle works on one snapshot in place.
#[cfg(test)]
pub(crate) fn copies_on_this_thread() -> u64 {
    COPIES.with(std::cell::Cell::get)
}

fn count_copy() {
    COPIES.with(|c| c.set(c.get() + 1));
}

/// Where a pod-group cycle's in-place assumptions began ([`Snapshot::assume_mark`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct AssumeMark {
    generation: u64,
    log_len: usize,
    log_start: u64,
}

impl Clone for Snapshot {
    /// A clone is a new snapshot object (its own [`Snapshot::id`]): the two may be
    /// updated apart from here on.
    fn clone(&self) -> Self {
        count_copy();
        Snapshot {
            nodes: self.nodes.clone(),
            index: self.index.clone(),
            with_affinity: self.with_affinity.clone(),
            with_required_anti_affinity: self.with_required_anti_affinity.clone(),
            image_nodes: self.image_nodes.clone(),
            generation: self.generation,
            structure_generation: self.structure_generation,
            id: next_snapshot_id(),
            log: self.log.clone(),
            log_start: self.log_start,
            columns: self.columns.clone(),
            resources: self.resources.clone(),
        }
    }
}

impl Snapshot {
    /// Builds a snapshot from node infos directly (tests, simulations without a cache).
    pub fn from_nodes(nodes: impl IntoIterator<Item = NodeInfo>) -> Snapshot {
        let mut s = Snapshot::default();
        let mut images: AHashMap<Symbol, u32> = AHashMap::new();
        for n in nodes {
            for &(img, _) in n.images() {
                *images.entry(img).or_default() += 1;
            }
            s.index.insert(n.name(), s.nodes.len());
            s.resources.push(&n);
            s.nodes.push(Arc::new(n));
        }
        s.image_nodes = Arc::new(images);
        s.rebuild_affinity_lists();
        s
    }

    fn rebuild_affinity_lists(&mut self) {
        self.with_affinity.clear();
        self.with_required_anti_affinity.clear();
        for (i, n) in self.nodes.iter().enumerate() {
            if !n.pods_with_affinity().is_empty() {
                self.with_affinity.push(i);
            }
            if !n.pods_with_required_anti_affinity().is_empty() {
                self.with_required_anti_affinity.push(i);
            }
        }
    }

    /// All nodes, in sampling order.
    #[inline]
    pub fn nodes(&self) -> &[Arc<NodeInfo>] {
        &self.nodes
    }

    /// Number of nodes.
    #[inline]
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether there are no nodes.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// A node by name.
    pub fn get(&self, name: &str) -> Option<&Arc<NodeInfo>> {
        self.index_of(Symbol::lookup(name)?).map(|i| &self.nodes[i])
    }

    /// Position of a node in [`Snapshot::nodes`].
    #[inline]
    pub fn index_of(&self, name: Symbol) -> Option<usize> {
        self.index.get(&name).copied()
    }

    /// Writes into `out` (as long as `positions`) the [`Symbol::id`] of the value of
    /// label `key` on the node at each of `positions`, or `u32::MAX` where the node
    /// has no such label: one array read per node once the key's column is built
    /// (on first use; the snapshot's updates keep it).
    #[inline]
    pub(crate) fn label_values(&self, key: Symbol, positions: &[usize], out: &mut [u32]) {
        self.columns.gather(&self.nodes, key, positions, out);
    }

    /// Every node's resource totals by position ([`ResourceRow`]): what
    /// NodeResourcesFit's Filter and the Fit / BalancedAllocation scorers read, one
    /// cache line per node, with the `PodLevelResources` gate on.
    #[inline]
    pub(crate) fn resource_rows(&self) -> &[ResourceRow] {
        self.resources.rows()
    }

    /// Every node's default `[cpu, memory]` balance with its pods as they are, by
    /// position: NodeResourcesBalancedAllocation's pod-independent `before` score,
    /// from the same totals as [`Snapshot::resource_rows`].
    #[inline]
    pub(crate) fn resource_balance(&self) -> &[i64] {
        self.resources.balance()
    }

    /// Every node's `node_flags` bits by position: whether it is unschedulable and
    /// which kinds of taints it has, from its node object.
    #[inline]
    pub(crate) fn node_flags(&self) -> &[u8] {
        self.resources.flags()
    }

    /// How many nodes have a `PreferNoSchedule` taint.
    #[inline]
    pub(crate) fn prefer_taint_nodes(&self) -> usize {
        self.resources.prefer_taint_nodes()
    }

    /// Every node's `[allocatable, requested]` ephemeral storage by position (the
    /// gate on), beside [`Snapshot::resource_rows`].
    #[inline]
    pub(crate) fn ephemeral_storage(&self) -> &[[i64; 2]] {
        self.resources.ephemeral()
    }

    /// Nodes with at least one pod that has pod affinity or anti-affinity.
    pub fn nodes_with_affinity(&self) -> impl Iterator<Item = &Arc<NodeInfo>> {
        self.with_affinity.iter().map(|&i| &self.nodes[i])
    }

    /// Nodes with at least one pod that has required anti-affinity.
    pub fn nodes_with_required_anti_affinity(&self) -> impl Iterator<Item = &Arc<NodeInfo>> {
        self.with_required_anti_affinity.iter().map(|&i| &self.nodes[i])
    }

    /// On how many nodes an image (by reported name) is present.
    pub fn image_node_count(&self, image: Symbol) -> u32 {
        self.image_nodes.get(&image).copied().unwrap_or(0)
    }

    /// The cache generation this snapshot reflects.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Identifies this snapshot object (clones get their own).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Bumped whenever the node list is rebuilt (nodes added, removed or reordered);
    /// positions are stable while it stays the same.
    pub fn structure_generation(&self) -> u64 {
        self.structure_generation
    }

    /// Positions of the nodes replaced since this snapshot was at `generation`
    /// (with repeats), or `None` when that is unknown: the list was rebuilt since,
    /// or the change log no longer reaches back that far. Lets a plugin that keeps
    /// per-node results across cycles revisit only what changed instead of every
    /// node.
    ///
    /// ```
    /// use schedkit::snapshot::{Cache, PodInfo, Snapshot};
    /// use schedkit::testing::{NodeBuilder, PodBuilder};
    /// let mut cache = Cache::new();
    /// for n in ["a", "b", "c"] {
    ///     cache.add_node(NodeBuilder::new(n).cpu("4").build()).unwrap();
    /// }
    /// let mut snap = Snapshot::default();
    /// cache.update_snapshot(&mut snap);
    /// let before = snap.generation();
    /// let pod = std::sync::Arc::new(PodInfo::new(PodBuilder::new("p").build()).unwrap());
    /// cache.assume_pod(pod, "b").unwrap();
    /// cache.update_snapshot(&mut snap);
    /// let changed: Vec<usize> = snap.changed_since(before).unwrap().collect();
    /// assert_eq!(changed, [snap.index_of(schedkit::model::Symbol::intern("b")).unwrap()]);
    /// assert!(snap.changed_since(0).is_none(), "before the list was built");
    /// ```
    pub fn changed_since(&self, generation: u64) -> Option<impl Iterator<Item = usize> + '_> {
        if generation < self.log_start || generation > self.generation {
            return None;
        }
        let start = self.log.partition_point(|&(g, _)| g <= generation);
        Some(self.log[start..].iter().map(|&(_, pos)| pos))
    }

    /// Adds `pod` to the node at `pos` in this snapshot only (the pod-group cycle's
    /// assumption, upstream `Snapshot.AssumePod`): the node is copied on write, the
    /// generation bumped and the change logged, so per-node memos see it.
    pub(crate) fn assume_pod_at(&mut self, pos: usize, pod: Arc<PodInfo>) {
        let affinity = pod.has_affinity;
        let anti = pod.has_required_anti_affinity;
        self.replace_node(pos, |n| n.add_pod(pod));
        if affinity && !self.with_affinity.contains(&pos) {
            self.with_affinity.push(pos);
            self.with_affinity.sort_unstable();
        }
        if anti && !self.with_required_anti_affinity.contains(&pos) {
            self.with_required_anti_affinity.push(pos);
            self.with_required_anti_affinity.sort_unstable();
        }
    }

    /// Puts `node` back at `pos` (undoing [`Snapshot::assume_pod_at`] with the node as it
    /// was before), logged as a change.
    pub(crate) fn restore_node_at(&mut self, pos: usize, node: Arc<NodeInfo>) {
        self.generation += 1;
        let g = self.generation;
        if !self.nodes[pos].same_node_object(&node) {
            self.columns.set(pos, &node);
        }
        self.resources.set(pos, &node);
        self.nodes[pos] = node;
        self.log_change(g, pos);
        if self.nodes[pos].pods_with_affinity().is_empty() {
            self.with_affinity.retain(|&i| i != pos);
        }
        if self.nodes[pos].pods_with_required_anti_affinity().is_empty() {
            self.with_required_anti_affinity.retain(|&i| i != pos);
        }
    }

    fn replace_node(&mut self, pos: usize, f: impl FnOnce(&mut NodeInfo)) {
        self.generation += 1;
        let g = self.generation;
        let info = Arc::make_mut(&mut self.nodes[pos]);
        f(info);
        info.set_generation(g);
        self.resources.set(pos, info);
        self.log_change(g, pos);
    }

    /// Marks the start of in-place assumptions (a pod-group cycle), to be undone with
    /// [`Snapshot::assumptions_undone`].
    pub(crate) fn assume_mark(&self) -> AssumeMark {
        AssumeMark { generation: self.generation, log_len: self.log.len(), log_start: self.log_start }
    }

    /// Called once every assumption made since `mark` has been restored with
    /// [`Snapshot::restore_node_at`]: the nodes are the cache's again, so the
    /// generation goes back to the cache's (the cache's next incremental update reads
    /// its own change log from there) and the change log forgets the assumptions.
    /// The snapshot becomes a new object ([`Snapshot::id`]): a per-node memo that saw
    /// an assumed node must not take the restored one for unchanged.
    pub(crate) fn assumptions_undone(&mut self, mark: AssumeMark) {
        if self.generation == mark.generation {
            return;
        }
        self.generation = mark.generation;
        if self.log_start == mark.log_start && self.log.len() >= mark.log_len {
            self.log.truncate(mark.log_len);
        } else {
            // The log was compacted meanwhile: nothing before now is known.
            self.reset_log(mark.generation);
        }
        self.id = next_snapshot_id();
    }

    /// A snapshot of only the nodes at `positions` (a placement: upstream
    /// `AssumePlacement`), sharing their node infos; image counts stay the cluster's.
    /// Costs one step per placement node, not per cluster node.
    pub(crate) fn restricted(&self, positions: &[usize]) -> Snapshot {
        let mut s = Snapshot {
            image_nodes: self.image_nodes.clone(),
            generation: self.generation,
            structure_generation: self.structure_generation,
            log_start: self.generation,
            ..Snapshot::default()
        };
        for &p in positions {
            if let Some(n) = self.nodes.get(p) {
                s.index.insert(n.name(), s.nodes.len());
                s.resources.push(n);
                s.nodes.push(n.clone());
            }
        }
        s.rebuild_affinity_lists();
        s
    }

    /// Records an in-place replacement at `pos` (by the cache's incremental update).
    fn log_change(&mut self, generation: u64, pos: usize) {
        if self.log.len() >= CHANGE_LOG_CAPACITY {
            let drop = self.log.len() / 2;
            // Everything up to the newest dropped generation is no longer known.
            self.log_start = self.log[drop - 1].0;
            // Keep whole generations: drop the rest of that generation too.
            let keep_from = self.log.partition_point(|&(g, _)| g <= self.log_start);
            self.log.drain(..keep_from);
        }
        self.log.push((generation, pos));
    }

    /// Forgets the change log: positions changed meaning (list rebuilt).
    fn reset_log(&mut self, generation: u64) {
        self.log.clear();
        self.log_start = generation;
    }
}

/// Nodes that passed Filter, as PreScore sees them: a view into the snapshot.
#[derive(Debug, Clone, Copy)]
pub struct NodeList<'a> {
    snapshot: &'a Snapshot,
    indices: &'a [usize],
}

impl<'a> NodeList<'a> {
    /// The nodes of `snapshot` at `indices`.
    pub fn new(snapshot: &'a Snapshot, indices: &'a [usize]) -> Self {
        NodeList { snapshot, indices }
    }
    /// The snapshot the nodes belong to (every node of the cycle, as upstream
    /// plugins reach through the shared lister in PreScore).
    pub fn snapshot(&self) -> &'a Snapshot {
        self.snapshot
    }

    /// Positions of the nodes in [`Snapshot::nodes`].
    pub fn indices(&self) -> &'a [usize] {
        self.indices
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.indices.len()
    }
    /// Whether empty.
    pub fn is_empty(&self) -> bool {
        self.indices.is_empty()
    }
    /// The `i`-th node.
    pub fn get(&self, i: usize) -> Option<&'a NodeInfo> {
        self.indices.get(i).map(|&j| &*self.snapshot.nodes()[j])
    }
    /// Iterates over the nodes.
    pub fn iter(&self) -> impl Iterator<Item = &'a NodeInfo> + 'a {
        let s = self.snapshot;
        self.indices.iter().map(move |&j| &*s.nodes()[j])
    }
}
