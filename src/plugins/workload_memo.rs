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
//!
//! The memo owns the lookup, the LRU and the recount; a plugin supplies only a
//! [`Contribution`]: its workload key, how one node counts, and how a count is added
//! to and taken away from the totals.

use std::sync::Arc;

use parking_lot::Mutex;

use crate::snapshot::{NodeInfo, Snapshot};

/// How many workloads a memo keeps.
const CAPACITY: usize = 4;

/// One node's share of a workload's cluster-wide totals: what differs between the
/// memos (a plugin's key, how a node is counted, what the sums are); the memo does
/// the rest. Implemented by each plugin's per-node type, so adding and taking away
/// a share is a static call with no allocation of its own.
pub(crate) trait Contribution: Default {
    /// What identifies a workload (pods with equal keys share the totals).
    type Key: PartialEq + Clone;
    /// The sums over every node.
    type Totals;

    /// Empty totals for a workload first seen.
    fn empty_totals(key: &Self::Key) -> Self::Totals;
    /// Adds this node's share to `totals`.
    fn add_to(&self, key: &Self::Key, totals: &mut Self::Totals);
    /// Takes this node's share, added earlier, away from `totals`.
    fn sub_from(&self, key: &Self::Key, totals: &mut Self::Totals);
}

/// Each node's contribution `C` to a sum, as last counted.
#[derive(Debug)]
struct NodeContributions<C> {
    nodes: Vec<(Arc<NodeInfo>, C)>,
    /// `(snapshot id, structure generation, generation)` last synced with.
    seen: Option<(u64, u64, u64)>,
}

impl<C: Contribution> NodeContributions<C> {
    fn with_capacity(nodes: usize) -> Self {
        NodeContributions { nodes: Vec::with_capacity(nodes), seen: None }
    }

    /// Brings `totals` up to date with `snapshot`: for each node replaced (or added,
    /// or removed) since the last sync, takes its old share away, then `count(node)`
    /// and adds the new one.
    fn sync(
        &mut self,
        snapshot: &Snapshot,
        key: &C::Key,
        totals: &mut C::Totals,
        mut count: impl FnMut(&NodeInfo) -> C,
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
                self.refresh(i, &nodes[i], key, totals, &mut count);
            }
        } else {
            while self.nodes.len() > nodes.len() {
                if let Some((_, old)) = self.nodes.pop() {
                    old.sub_from(key, totals);
                }
            }
            for (i, node) in nodes.iter().enumerate() {
                self.refresh(i, node, key, totals, &mut count);
            }
        }
        self.seen = Some((view.0, view.1, snapshot.generation()));
    }

    /// Recounts the node at position `i` unless it is the very `NodeInfo` counted.
    fn refresh(
        &mut self,
        i: usize,
        node: &Arc<NodeInfo>,
        key: &C::Key,
        totals: &mut C::Totals,
        count: &mut impl FnMut(&NodeInfo) -> C,
    ) {
        if let Some((cached, old)) = self.nodes.get_mut(i) {
            if Arc::ptr_eq(cached, node) {
                return;
            }
            let old = std::mem::take(old);
            old.sub_from(key, totals);
        }
        let new = count(node);
        new.add_to(key, totals);
        if i < self.nodes.len() {
            self.nodes[i] = (node.clone(), new);
        } else {
            self.nodes.push((node.clone(), new));
        }
    }
}

/// One workload: its key, each node's share as last counted, and the totals.
struct Entry<C: Contribution> {
    /// The memo's clock when last used.
    used: u64,
    key: C::Key,
    nodes: NodeContributions<C>,
    totals: C::Totals,
}

/// The totals of the last few workloads, least recently used evicted first.
pub(crate) struct WorkloadMemo<C: Contribution> {
    entries: Mutex<(u64, Vec<Entry<C>>)>,
}

impl<C: Contribution> Default for WorkloadMemo<C> {
    fn default() -> Self {
        WorkloadMemo { entries: Mutex::new((0, Vec::new())) }
    }
}

impl<C: Contribution> Clone for WorkloadMemo<C> {
    /// A clone starts empty (the entries are a cache, not state).
    fn clone(&self) -> Self {
        WorkloadMemo::default()
    }
}

impl<C: Contribution> std::fmt::Debug for WorkloadMemo<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkloadMemo").field("workloads", &self.entries.lock().1.len()).finish()
    }
}

impl<C: Contribution> WorkloadMemo<C> {
    /// Calls `f` with `key`'s totals over every node of `snapshot`, recounting with
    /// `count` only the nodes whose `NodeInfo` changed since this workload's last
    /// cycle. A workload first seen gets a new entry (a clone of `key`), evicting the
    /// least recently used beyond [`CAPACITY`].
    pub(crate) fn with_totals<R>(
        &self,
        key: &C::Key,
        snapshot: &Snapshot,
        count: impl FnMut(&NodeInfo) -> C,
        f: impl FnOnce(&C::Totals) -> R,
    ) -> R {
        self.with_totals_by(|k| k == key, || key.clone(), snapshot, count, f)
    }

    /// [`WorkloadMemo::with_totals`] for a key told by `is_key` (which must hold
    /// exactly for keys equal to the one `make_key` builds): the key is built only
    /// when the workload is new to the memo, so a hit copies nothing.
    pub(crate) fn with_totals_by<R>(
        &self,
        is_key: impl Fn(&C::Key) -> bool,
        make_key: impl FnOnce() -> C::Key,
        snapshot: &Snapshot,
        count: impl FnMut(&NodeInfo) -> C,
        f: impl FnOnce(&C::Totals) -> R,
    ) -> R {
        let mut guard = self.entries.lock();
        let (clock, entries) = &mut *guard;
        *clock += 1;
        let idx = if let Some(i) = entries.iter().position(|e| is_key(&e.key)) {
            i
        } else {
            let key = make_key();
            if entries.len() >= CAPACITY
                && let Some(lru) = entries.iter().enumerate().min_by_key(|(_, e)| e.used).map(|(i, _)| i)
            {
                entries.swap_remove(lru);
            }
            let totals = C::empty_totals(&key);
            entries.push(Entry { used: 0, key, nodes: NodeContributions::with_capacity(snapshot.len()), totals });
            entries.len() - 1
        };
        let entry = &mut entries[idx];
        entry.used = *clock;
        entry.nodes.sync(snapshot, &entry.key, &mut entry.totals, count);
        f(&entry.totals)
    }
}
