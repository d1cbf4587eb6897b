//! The mutable cluster view: nodes, bound pods and assumed pods, and the incremental
//! snapshot update (upstream `pkg/scheduler/backend/cache/cache.go`).

use std::sync::Arc;

use ahash::AHashMap;

use super::{NodeInfo, PodInfo, Snapshot};
use crate::model::{Node, Symbol};

/// Why a cache operation was refused. The cache is unchanged when one is returned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CacheError {
    /// A node with this name is already present.
    #[error("node {0:?} already exists")]
    NodeExists(String),
    /// No node with this name.
    #[error("node {0:?} not found")]
    NodeNotFound(String),
    /// A pod names a node the cache doesn't have.
    #[error("pod {pod} names node {node:?}, which does not exist")]
    PodNodeNotFound {
        /// Pod uid.
        pod: String,
        /// Node name.
        node: String,
    },
    /// A pod with this uid is already present.
    #[error("pod {0} already exists")]
    PodExists(String),
    /// No pod with this uid.
    #[error("pod {0} not found")]
    PodNotFound(String),
    /// The pod has no node name.
    #[error("pod {0} has no node name")]
    PodNotAssigned(String),
    /// An operation for assumed pods was applied to a bound pod.
    #[error("pod {0} is not assumed")]
    PodNotAssumed(String),
    /// A node name is empty.
    #[error("node has no name")]
    MissingNodeName,
    /// A node field the API server would refuse (upstream `ValidateLabels`' lengths: a
    /// label value or key name over 63 characters, a key prefix over 253).
    #[error("node {node:?}: {error}")]
    InvalidNode {
        /// The node's name.
        node: String,
        /// The field path and what is wrong, as upstream words it.
        error: crate::model::FieldError,
    },
}

/// Upstream's checks on a node's metadata that schedkit applies when a node is added or
/// updated: the lengths of its labels ([`validate_label_lengths`](crate::model::validation::validate_label_lengths)).
fn validate_node(node: &Node) -> Result<(), CacheError> {
    crate::model::validation::validate_metadata_label_lengths(&node.metadata.labels)
        .map_err(|error| CacheError::InvalidNode { node: node.metadata.name.clone(), error })
}

#[derive(Debug, Clone)]
struct PodState {
    pod: Arc<PodInfo>,
    node: Symbol,
    assumed: bool,
    binding_finished: bool,
}

#[derive(Debug, Clone)]
struct NodeSlot {
    info: Arc<NodeInfo>,
    zone: Symbol,
}

/// What one snapshot update did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UpdateStats {
    /// NodeInfos replaced in the snapshot because their generation moved.
    pub nodes_updated: usize,
    /// Whether the node list was rebuilt (nodes added or removed).
    pub list_rebuilt: bool,
}

/// The cluster as the scheduler knows it, including pods it assumed but whose binding
/// hasn't been confirmed.
///
/// Each [`NodeInfo`] sits behind an `Arc` shared with snapshots; a mutation copies it
/// only if a snapshot still holds it (copy-on-write), and bumps its generation so
/// [`Cache::update_snapshot`] replaces just the nodes that moved.
///
/// ```
/// use schedkit::snapshot::{Cache, Snapshot, PodInfo};
/// use schedkit::testing::{NodeBuilder, PodBuilder};
/// let mut cache = Cache::new();
/// cache.add_node(NodeBuilder::new("n1").cpu("4").memory("8Gi").build()).unwrap();
/// let pod = PodInfo::new(PodBuilder::new("p").cpu("1").build()).unwrap();
/// cache.assume_pod(pod.into(), "n1").unwrap();
/// let mut snap = Snapshot::default();
/// cache.update_snapshot(&mut snap);
/// assert_eq!(snap.get("n1").unwrap().requested().milli_cpu, 1000);
/// ```
#[derive(Debug, Default)]
pub struct Cache {
    slots: Vec<NodeSlot>,
    by_name: AHashMap<Symbol, usize>,
    pods: AHashMap<Arc<str>, PodState>,
    generation: u64,
    /// Generation at which the node set last changed.
    structure_generation: u64,
    /// (generation, slot) per mutation, in generation order; compacted when long.
    log: Vec<(u64, usize)>,
    image_nodes: Arc<AHashMap<Symbol, u32>>,
    /// Pod-group membership, shared with the framework's `PodGroupManager`.
    pod_groups: Arc<super::PodGroupStates>,
}

impl Cache {
    /// An empty cache.
    pub fn new() -> Cache {
        Cache::default()
    }

    fn bump(&mut self, slot: usize) -> &mut NodeInfo {
        self.generation += 1;
        let g = self.generation;
        self.log.push((g, slot));
        if self.log.len() > 64 + 2 * self.slots.len() {
            self.compact_log();
        }
        let info = Arc::make_mut(&mut self.slots[slot].info);
        info.set_generation(g);
        info
    }

    /// Keeps only each slot's latest entry, in place (no allocation on the hot path).
    fn compact_log(&mut self) {
        self.log.sort_unstable_by_key(|&(g, slot)| (slot, std::cmp::Reverse(g)));
        self.log.dedup_by_key(|e| e.1);
        self.log.sort_unstable();
    }

    /// Rebuilds the log from the slots (after slot indices moved).
    fn rebuild_log(&mut self) {
        self.log.clear();
        self.log.extend(self.slots.iter().enumerate().map(|(i, s)| (s.info.generation(), i)));
        self.log.sort_unstable();
    }

    fn slot(&self, name: &str) -> Option<usize> {
        self.by_name.get(&Symbol::lookup(name)?).copied()
    }

    /// Number of nodes.
    pub fn node_count(&self) -> usize {
        self.slots.len()
    }

    /// Number of pods (bound and assumed).
    pub fn pod_count(&self) -> usize {
        self.pods.len()
    }

    /// The current NodeInfo of a node.
    pub fn node_info(&self, name: &str) -> Option<&Arc<NodeInfo>> {
        self.slot(name).map(|i| &self.slots[i].info)
    }

    /// Adds a node.
    pub fn add_node(&mut self, node: Node) -> Result<(), CacheError> {
        self.add_shared_node(Arc::new(node))
    }

    /// [`Cache::add_node`] of a node shared with its caller (the scheduler's add
    /// event carries the same `Arc`, so the node is not copied for it).
    pub(crate) fn add_shared_node(&mut self, node: Arc<Node>) -> Result<(), CacheError> {
        if node.name().is_empty() {
            return Err(CacheError::MissingNodeName);
        }
        validate_node(&node)?;
        if self.slot(node.name()).is_some() {
            return Err(CacheError::NodeExists(node.metadata.name.clone()));
        }
        let zone = zone_key(&node);
        // The NodeInfo holds the name (not pinned): it is freed when the node is
        // removed and no snapshot keeps a copy of its NodeInfo.
        let info = NodeInfo::new(node);
        let name = info.name();
        self.count_images(&info, 1);
        let slot = self.slots.len();
        self.slots.push(NodeSlot { info: Arc::new(info), zone });
        self.by_name.insert(name, slot);
        self.bump(slot);
        self.structure_generation = self.generation;
        Ok(())
    }

    fn count_images(&mut self, info: &NodeInfo, delta: i32) {
        if info.images().is_empty() {
            return;
        }
        let map = Arc::make_mut(&mut self.image_nodes);
        let mut last = None;
        for &(name, _) in info.images() {
            // Several names may denote one image; count each name once per node.
            if last == Some(name) {
                continue;
            }
            last = Some(name);
            let e = map.entry(name).or_insert(0);
            *e = e.saturating_add_signed(delta);
            if *e == 0 {
                map.remove(&name);
            }
        }
    }

    /// Replaces a node object (labels, taints, allocatable...), keeping its pods.
    pub fn update_node(&mut self, node: Node) -> Result<(), CacheError> {
        let slot = self.slot(node.name()).ok_or_else(|| CacheError::NodeNotFound(node.metadata.name.clone()))?;
        validate_node(&node)?;
        let zone = zone_key(&node);
        let old = self.slots[slot].info.clone();
        self.count_images(&old, -1);
        let info = self.bump(slot);
        info.set_node(Arc::new(node));
        let new = self.slots[slot].info.clone();
        self.count_images(&new, 1);
        if self.slots[slot].zone != zone {
            self.slots[slot].zone = zone;
            self.structure_generation = self.generation;
        }
        Ok(())
    }

    /// Removes a node and forgets every pod on it.
    pub fn remove_node(&mut self, name: &str) -> Result<(), CacheError> {
        let slot = self.slot(name).ok_or_else(|| CacheError::NodeNotFound(name.to_owned()))?;
        let removed = self.slots.swap_remove(slot);
        self.count_images(&removed.info, -1);
        self.by_name.remove(&removed.info.name());
        if slot < self.slots.len() {
            self.by_name.insert(self.slots[slot].info.name(), slot);
        }
        let node = removed.info.name();
        self.pods.retain(|_, p| p.node != node);
        self.generation += 1;
        self.structure_generation = self.generation;
        self.rebuild_log();
        Ok(())
    }

    /// Adds a pod bound to a node (`spec.nodeName` set), or confirms an assumed one.
    pub fn add_pod(&mut self, pod: Arc<PodInfo>) -> Result<(), CacheError> {
        let node_name = pod.node_name().to_owned();
        if node_name.is_empty() {
            return Err(CacheError::PodNotAssigned(pod.uid.to_string()));
        }
        let slot = self
            .slot(&node_name)
            .ok_or_else(|| CacheError::PodNodeNotFound { pod: pod.uid.to_string(), node: node_name.clone() })?;
        if let Some(state) = self.pods.get(&pod.uid) {
            if !state.assumed {
                return Err(CacheError::PodExists(pod.uid.to_string()));
            }
            // The informer confirms an assumed pod: move it if it landed elsewhere.
            self.remove_from_node(&pod.uid)?;
        }
        let node = self.slots[slot].info.name();
        self.bump(slot).add_pod(pod.clone());
        self.pod_groups.set(&pod, super::MemberState::Assigned);
        self.pods.insert(pod.uid.clone(), PodState { pod, node, assumed: false, binding_finished: false });
        Ok(())
    }

    /// Replaces a bound pod (e.g. its labels changed).
    pub fn update_pod(&mut self, pod: Arc<PodInfo>) -> Result<(), CacheError> {
        if !self.pods.contains_key(&pod.uid) {
            return Err(CacheError::PodNotFound(pod.uid.to_string()));
        }
        let node_name = pod.node_name().to_owned();
        if self.slot(&node_name).is_none() {
            return Err(CacheError::PodNodeNotFound { pod: pod.uid.to_string(), node: node_name });
        }
        self.remove_pod(&pod.uid)?;
        self.add_pod(pod)
    }

    /// Removes a pod (bound or assumed).
    pub fn remove_pod(&mut self, uid: &str) -> Result<Arc<PodInfo>, CacheError> {
        let pod = self.remove_from_node(uid)?;
        self.pods.remove(uid);
        self.pod_groups.remove(&pod);
        Ok(pod)
    }

    fn remove_from_node(&mut self, uid: &str) -> Result<Arc<PodInfo>, CacheError> {
        let state = self.pods.get(uid).ok_or_else(|| CacheError::PodNotFound(uid.to_owned()))?;
        let node = state.node;
        let pod = state.pod.clone();
        if let Some(&slot) = self.by_name.get(&node) {
            self.bump(slot).remove_pod(uid);
        }
        Ok(pod)
    }

    /// Records that the scheduler placed `pod` on `node` before the binding is
    /// confirmed, so the next cycles see the node's resources as taken.
    pub fn assume_pod(&mut self, pod: Arc<PodInfo>, node: &str) -> Result<(), CacheError> {
        let slot = self
            .slot(node)
            .ok_or_else(|| CacheError::PodNodeNotFound { pod: pod.uid.to_string(), node: node.to_owned() })?;
        if self.pods.contains_key(&pod.uid) {
            return Err(CacheError::PodExists(pod.uid.to_string()));
        }
        self.insert_assumed(slot, pod);
        Ok(())
    }

    /// [`Cache::assume_pod`] for a pod already marked with its node
    /// ([`PodInfo::assumed_on`]): the node is found by that symbol, with no lookup of
    /// the name in the interner.
    pub(crate) fn assume_assumed(&mut self, pod: Arc<PodInfo>) -> Result<(), CacheError> {
        let slot = pod.assumed_node().and_then(|n| self.by_name.get(&n).copied());
        let Some(slot) = slot else {
            let node = pod.node_name().to_owned();
            return self.assume_pod(pod, &node);
        };
        if self.pods.contains_key(&pod.uid) {
            return Err(CacheError::PodExists(pod.uid.to_string()));
        }
        self.insert_assumed(slot, pod);
        Ok(())
    }

    fn insert_assumed(&mut self, slot: usize, pod: Arc<PodInfo>) {
        let name = self.slots[slot].info.name();
        self.bump(slot).add_pod(pod.clone());
        self.pod_groups.set(&pod, super::MemberState::Assumed);
        self.pods.insert(pod.uid.clone(), PodState { pod, node: name, assumed: true, binding_finished: false });
    }

    /// Undoes [`Cache::assume_pod`] after a failed binding cycle.
    pub fn forget_pod(&mut self, uid: &str) -> Result<(), CacheError> {
        match self.pods.get(uid) {
            None => Err(CacheError::PodNotFound(uid.to_owned())),
            Some(s) if !s.assumed => Err(CacheError::PodNotAssumed(uid.to_owned())),
            Some(_) => {
                let pod = self.remove_pod(uid)?;
                // Still a member of its group, unscheduled again.
                if super::pod_groups::group_key(&pod).is_some() {
                    self.pod_groups.set(&Arc::new(pod.unassumed()), super::MemberState::Unscheduled);
                }
                Ok(())
            }
        }
    }

    /// Records an unscheduled pod naming a v1.36 PodGroup as a member of it (upstream
    /// `AddPodGroupMember`); the scheduler's event handle calls it as such a pod is
    /// queued. Pods naming no group are ignored.
    pub fn add_pod_group_member(&mut self, pod: &Arc<PodInfo>) {
        if !self.pods.contains_key(&pod.uid) {
            self.pod_groups.set(pod, super::MemberState::Unscheduled);
        }
    }

    /// Forgets an unscheduled member (the pod was deleted while queued).
    pub fn remove_pod_group_member(&mut self, pod: &PodInfo) {
        if !self.pods.contains_key(&pod.uid) {
            self.pod_groups.remove(pod);
        }
    }

    /// The pod groups' member states this cache keeps.
    pub fn pod_group_states(&self) -> &Arc<super::PodGroupStates> {
        &self.pod_groups
    }

    /// Keeps pod-group member states in `states` from now on (the scheduler shares its
    /// handle's, so plugins read what the cache records). Members recorded so far are
    /// carried over.
    pub fn share_pod_group_states(&mut self, states: Arc<super::PodGroupStates>) {
        for s in self.pods.values() {
            let state = if s.assumed { super::MemberState::Assumed } else { super::MemberState::Assigned };
            states.set(&s.pod, state);
        }
        self.pod_groups = states;
    }

    /// Marks an assumed pod's binding as done; it stays assumed until
    /// [`Cache::add_pod`] confirms it (upstream `FinishBinding`).
    pub fn finish_binding(&mut self, uid: &str) -> Result<(), CacheError> {
        match self.pods.get_mut(uid) {
            None => Err(CacheError::PodNotFound(uid.to_owned())),
            Some(s) if !s.assumed => Err(CacheError::PodNotAssumed(uid.to_owned())),
            Some(s) => {
                s.binding_finished = true;
                Ok(())
            }
        }
    }

    /// Whether the pod is assumed (placed, binding not confirmed).
    pub fn is_assumed(&self, uid: &str) -> bool {
        self.pods.get(uid).is_some_and(|s| s.assumed)
    }

    /// The node a pod is on (bound or assumed). Borrowed from the node's NodeInfo (node
    /// names are not pinned for the process).
    pub fn pod_node(&self, uid: &str) -> Option<&str> {
        let node = self.pods.get(uid)?.node;
        self.by_name.get(&node).map(|&slot| self.slots[slot].info.node().name())
    }

    /// Brings `snap` up to date, replacing only NodeInfos whose generation moved.
    pub fn update_snapshot(&self, snap: &mut Snapshot) -> UpdateStats {
        let mut stats = UpdateStats::default();
        if snap.generation == self.generation && snap.generation != 0 {
            return stats;
        }
        if snap.structure_generation != self.structure_generation || snap.nodes.len() != self.slots.len() {
            stats.list_rebuilt = true;
            let order = tree_order(&self.slots);
            let old: AHashMap<Symbol, (u64, usize)> =
                snap.nodes.iter().enumerate().map(|(p, n)| (n.name(), (n.generation(), p))).collect();
            snap.nodes.clear();
            snap.index.clear();
            for (pos, &slot) in order.iter().enumerate() {
                let info = &self.slots[slot].info;
                if old.get(&info.name()).map(|&(g, _)| g) != Some(info.generation()) {
                    stats.nodes_updated += 1;
                }
                snap.index.insert(info.name(), pos);
                snap.nodes.push(info.clone());
            }
            snap.columns.rebuild(&snap.nodes, &old);
            snap.resources.rebuild(&snap.nodes);
            snap.structure_generation = self.structure_generation;
            snap.rebuild_affinity_lists();
            snap.reset_log(self.generation);
        } else {
            let start = self.log.partition_point(|&(g, _)| g <= snap.generation);
            let mut affinity_changed = false;
            for &(_, slot) in &self.log[start..] {
                let info = &self.slots[slot].info;
                let Some(&pos) = snap.index.get(&info.name()) else { continue };
                let cur = &mut snap.nodes[pos];
                if cur.generation() != info.generation() {
                    affinity_changed |= !cur.pods_with_affinity().is_empty() || !info.pods_with_affinity().is_empty();
                    let relabel = !cur.same_node_object(info);
                    *cur = info.clone();
                    if relabel {
                        snap.columns.set(pos, info);
                    }
                    snap.resources.set(pos, info);
                    stats.nodes_updated += 1;
                    snap.log_change(self.generation, pos);
                }
            }
            if affinity_changed {
                snap.rebuild_affinity_lists();
            }
        }
        if !Arc::ptr_eq(&snap.image_nodes, &self.image_nodes) {
            snap.image_nodes = self.image_nodes.clone();
        }
        snap.generation = self.generation;
        stats
    }
}

/// Upstream's node tree key: region and zone labels (`pkg/scheduler/backend/cache/node_tree.go`).
fn zone_key(node: &Node) -> Symbol {
    let l = &node.metadata.labels;
    let region = l.get_str("topology.kubernetes.io/region").unwrap_or("");
    let zone = l.get_str("topology.kubernetes.io/zone").unwrap_or("");
    if region.is_empty() && zone.is_empty() {
        return Symbol::EMPTY;
    }
    Symbol::intern(&format!("{region}:\x00:{zone}"))
}

/// Node order of upstream's node tree: zones in order of first appearance, taking one
/// node from each zone in turn, so a sampled prefix spreads across zones.
fn tree_order(slots: &[NodeSlot]) -> Vec<usize> {
    let mut zones: Vec<(Symbol, Vec<usize>)> = Vec::new();
    for (i, s) in slots.iter().enumerate() {
        match zones.iter_mut().find(|(z, _)| *z == s.zone) {
            Some((_, v)) => v.push(i),
            None => zones.push((s.zone, vec![i])),
        }
    }
    if zones.len() <= 1 {
        return (0..slots.len()).collect();
    }
    let mut out = Vec::with_capacity(slots.len());
    let mut round = 0;
    while out.len() < slots.len() {
        for (_, v) in &zones {
            if let Some(&i) = v.get(round) {
                out.push(i);
            }
        }
        round += 1;
    }
    out
}
