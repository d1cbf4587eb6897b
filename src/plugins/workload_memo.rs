//! Cluster-wide counts carried across cycles for the last few workloads, so a
//! PreFilter or PreScore that sums over every node recounts only the nodes that
//! changed since the previous pod with the same terms. Schedkit's own addition,
//! shared by PodTopologySpread and InterPodAffinity; the sums are exactly what a
//! fresh count over the snapshot gives.
//!
//! A snapshot shares unchanged `NodeInfo`s with the previous one, so the `Arc`
//! identity of a node says whether its pods or labels may have changed; the memo
//! keeps a clone of every `Arc` it counted, which also keeps the address from being
//! reused. When the snapshot object and its node list are the ones last seen,
//! [`Snapshot::changed_since`] names the replaced nodes and nothing else is visited.

use std::sync::Arc;

use parking_lot::Mutex;

use crate::snapshot::{NodeInfo, Snapshot};

/// How many workloads a memo keeps.
const CAPACITY: usize = 4;

/// Each node's contribution `C` to a sum, as last counted.
#[derive(Debug)]
pub(crate) struct NodeContributions<C> {
    nodes: Vec<(Arc<NodeInfo>, C)>,
    /// `(snapshot id, structure generation, generation)` last synced with.
    seen: Option<(u64, u64, u64)>,
}

impl<C: Default> NodeContributions<C> {
    pub(crate) fn with_capacity(nodes: usize) -> Self {
        NodeContributions { nodes: Vec::with_capacity(nodes), seen: None }
    }

    /// Brings the contributions up to date with `snapshot`: for each node replaced
    /// (or added, or removed) since the last sync, `apply(old, -1)`, then
    /// `count(node)` and `apply(new, 1)`.
    pub(crate) fn sync(
        &mut self,
        snapshot: &Snapshot,
        mut count: impl FnMut(&NodeInfo) -> C,
        mut apply: impl FnMut(&C, i64),
    ) {
        let nodes = snapshot.nodes();
        let view = (snapshot.id(), snapshot.structure_generation());
        let changed = match self.seen {
            Some((id, structure, generation)) if (id, structure) == view && self.nodes.len() == nodes.len() => {
                snapshot.changed_since(generation)
            }
            _ => None,
        };
        if let Some(changed) = changed {
            for i in changed {
                self.refresh(i, &nodes[i], &mut count, &mut apply);
            }
        } else {
            while self.nodes.len() > nodes.len() {
                if let Some((_, old)) = self.nodes.pop() {
                    apply(&old, -1);
                }
            }
            for (i, node) in nodes.iter().enumerate() {
                self.refresh(i, node, &mut count, &mut apply);
            }
        }
        self.seen = Some((view.0, view.1, snapshot.generation()));
    }

    /// Recounts the node at position `i` unless it is the very `NodeInfo` counted.
    fn refresh(
        &mut self,
        i: usize,
        node: &Arc<NodeInfo>,
        count: &mut impl FnMut(&NodeInfo) -> C,
        apply: &mut impl FnMut(&C, i64),
    ) {
        if let Some((cached, old)) = self.nodes.get_mut(i) {
            if Arc::ptr_eq(cached, node) {
                return;
            }
            let old = std::mem::take(old);
            apply(&old, -1);
        }
        let new = count(node);
        apply(&new, 1);
        if i < self.nodes.len() {
            self.nodes[i] = (node.clone(), new);
        } else {
            self.nodes.push((node.clone(), new));
        }
    }
}

/// The entries `E` of the last few workloads, least recently used evicted first.
pub(crate) struct WorkloadMemo<E> {
    entries: Mutex<(u64, Vec<(u64, E)>)>,
}

impl<E> Default for WorkloadMemo<E> {
    fn default() -> Self {
        WorkloadMemo { entries: Mutex::new((0, Vec::new())) }
    }
}

impl<E> Clone for WorkloadMemo<E> {
    /// A clone starts empty (the entries are a cache, not state).
    fn clone(&self) -> Self {
        WorkloadMemo::default()
    }
}

impl<E> std::fmt::Debug for WorkloadMemo<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkloadMemo").field("workloads", &self.entries.lock().1.len()).finish()
    }
}

impl<E> WorkloadMemo<E> {
    /// Runs `f` on the entry `is_mine` picks, made by `make` (evicting the least
    /// recently used beyond [`CAPACITY`]) when there is none.
    pub(crate) fn with_entry<R>(
        &self,
        is_mine: impl Fn(&E) -> bool,
        make: impl FnOnce() -> E,
        f: impl FnOnce(&mut E) -> R,
    ) -> R {
        let mut guard = self.entries.lock();
        let (clock, entries) = &mut *guard;
        *clock += 1;
        let idx = if let Some(i) = entries.iter().position(|(_, e)| is_mine(e)) {
            i
        } else {
            if entries.len() >= CAPACITY
                && let Some(lru) = entries.iter().enumerate().min_by_key(|(_, (used, _))| *used).map(|(i, _)| i)
            {
                entries.swap_remove(lru);
            }
            entries.push((0, make()));
            entries.len() - 1
        };
        let (used, entry) = &mut entries[idx];
        *used = *clock;
        f(entry)
    }
}
