//! Domain counts carried across cycles, so PreFilter recounts only nodes that
//! changed since the last pod with the same constraints. This is schedkit's own
//! addition; the counts it produces are exactly upstream `calPreFilterState`'s.
//!
//! A snapshot shares unchanged `NodeInfo`s with the previous one (the cache replaces
//! only nodes whose generation moved), so pointer identity of a node's `Arc` says
//! whether its pods or labels may have changed. The memo keeps a clone of each
//! node's `Arc` it counted, which also keeps the address from being reused.

use std::sync::Arc;

use ahash::AHashMap;
use parking_lot::Mutex;
use smallvec::SmallVec;

use super::common::{Constraint, node_has_all_keys};
use crate::model::{Labels, NodeSelector, Symbol, Toleration};
use crate::snapshot::{NodeInfo, PodInfo, Snapshot};

/// Pods of one workload share a key: the same namespace and constraints, and the
/// same node affinity / tolerations when a constraint honors them.
#[derive(Debug, Clone, PartialEq, Eq)]
struct MemoKey {
    namespace: Symbol,
    constraints: Vec<Constraint>,
    node_selector: Option<Labels>,
    /// Only set when affinity is honored (`node_selector` says whether it is).
    required_affinity: Option<NodeSelector>,
    tolerations: Option<Vec<Toleration>>,
    require_all: bool,
}

impl MemoKey {
    fn new(pod: &PodInfo, constraints: &[Constraint], require_all: bool) -> Self {
        let spec = &pod.pod.spec;
        let affinity = constraints.iter().any(|c| c.honor_node_affinity);
        let taints = constraints.iter().any(|c| c.honor_node_taints);
        MemoKey {
            namespace: pod.namespace,
            constraints: constraints.to_vec(),
            node_selector: affinity.then(|| spec.node_selector.clone()),
            required_affinity: if affinity { pod.pod.node_affinity().and_then(|a| a.required.clone()) } else { None },
            tolerations: taints.then(|| spec.tolerations.clone()),
            require_all,
        }
    }
}

/// Per constraint: the node's domain and matching-pod count, or `None` when the node
/// takes no part (missing keys or excluded by a node inclusion policy).
type Contribution = SmallVec<[Option<(Symbol, i64)>; 2]>;

#[derive(Debug)]
struct Entry {
    key: MemoKey,
    nodes: Vec<(Arc<NodeInfo>, Contribution)>,
    /// Per constraint: domain -> (matching pods, eligible nodes).
    domains: Vec<AHashMap<Symbol, (i64, u32)>>,
    last_used: u64,
    /// `(snapshot id, structure generation, generation)` last counted: with the
    /// same snapshot and list, only nodes it reports changed need a look.
    seen: Option<(u64, u64, u64)>,
}

impl Entry {
    /// Recounts the node at position `i` unless it is the very `NodeInfo` counted.
    fn refresh(
        &mut self,
        i: usize,
        node: &Arc<NodeInfo>,
        constraints: &[Constraint],
        pod: &PodInfo,
        require_all: bool,
    ) {
        if let Some((cached, old)) = self.nodes.get_mut(i) {
            if Arc::ptr_eq(cached, node) {
                return;
            }
            let old = std::mem::take(old);
            self.apply(&old, -1);
        }
        let new = contribution(constraints, pod, node, require_all);
        self.apply(&new, 1);
        if i < self.nodes.len() {
            self.nodes[i] = (node.clone(), new);
        } else {
            self.nodes.push((node.clone(), new));
        }
    }

    fn apply(&mut self, contribution: &Contribution, sign: i64) {
        for (i, c) in contribution.iter().enumerate() {
            let Some((value, count)) = *c else { continue };
            let d = self.domains[i].entry(value).or_insert((0, 0));
            d.0 += sign * count;
            if sign > 0 {
                d.1 += 1;
            } else {
                d.1 = d.1.saturating_sub(1);
                if d.1 == 0 {
                    self.domains[i].remove(&value);
                }
            }
        }
    }
}

fn contribution(constraints: &[Constraint], pod: &PodInfo, node: &NodeInfo, require_all: bool) -> Contribution {
    let labels = &node.node().metadata.labels;
    if require_all && !node_has_all_keys(labels, constraints) {
        return constraints.iter().map(|_| None).collect();
    }
    constraints
        .iter()
        .map(|c| {
            c.includes_node(&pod.pod, node)
                .then(|| (labels.get(c.topology_key).unwrap_or(Symbol::EMPTY), c.count_on(node, pod.namespace)))
        })
        .collect()
}

/// A few workloads' domain counts (least recently used evicted first).
#[derive(Default)]
pub(crate) struct CountMemo {
    entries: Mutex<(u64, Vec<Entry>)>,
}

impl std::fmt::Debug for CountMemo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CountMemo").field("workloads", &self.entries.lock().1.len()).finish()
    }
}

/// How many workloads' counts are kept.
const CAPACITY: usize = 4;

impl Clone for CountMemo {
    /// A clone starts empty (the counts are a cache, not state).
    fn clone(&self) -> Self {
        CountMemo::default()
    }
}

impl CountMemo {
    /// Calls `f` with, per constraint, domain -> (matching pods, eligible nodes) for
    /// `pod` over every node of `snapshot` (upstream `calPreFilterState`'s
    /// `TpValueToMatchNum`, or PreScore's all-node count with `require_all` false for
    /// system defaults), recounting only nodes whose `NodeInfo` changed since this
    /// workload's last cycle. A node without a constraint's key counts in the `""`
    /// domain when `require_all` is false, as upstream.
    pub(crate) fn with_domains<R>(
        &self,
        pod: &PodInfo,
        constraints: &[Constraint],
        snapshot: &Snapshot,
        require_all: bool,
        f: impl FnOnce(&[AHashMap<Symbol, (i64, u32)>]) -> R,
    ) -> R {
        let key = MemoKey::new(pod, constraints, require_all);
        let mut guard = self.entries.lock();
        let (clock, entries) = &mut *guard;
        *clock += 1;
        let idx = if let Some(i) = entries.iter().position(|e| e.key == key) {
            i
        } else {
            if entries.len() >= CAPACITY
                && let Some(lru) = entries.iter().enumerate().min_by_key(|(_, e)| e.last_used).map(|(i, _)| i)
            {
                entries.swap_remove(lru);
            }
            entries.push(Entry {
                key,
                nodes: Vec::with_capacity(snapshot.len()),
                domains: constraints.iter().map(|_| AHashMap::new()).collect(),
                last_used: 0,
                seen: None,
            });
            entries.len() - 1
        };
        let entry = &mut entries[idx];
        entry.last_used = *clock;
        let nodes = snapshot.nodes();
        let view = (snapshot.id(), snapshot.structure_generation());
        let changed = match entry.seen {
            Some((id, structure, generation)) if (id, structure) == view && entry.nodes.len() == nodes.len() => {
                snapshot.changed_since(generation)
            }
            _ => None,
        };
        if let Some(changed) = changed {
            for i in changed {
                entry.refresh(i, &nodes[i], constraints, pod, require_all);
            }
        } else {
            // Nodes gone from the end of the list.
            while entry.nodes.len() > nodes.len() {
                if let Some((_, old)) = entry.nodes.pop() {
                    entry.apply(&old, -1);
                }
            }
            for (i, node) in nodes.iter().enumerate() {
                entry.refresh(i, node, constraints, pod, require_all);
            }
        }
        entry.seen = Some((view.0, view.1, snapshot.generation()));
        f(&entry.domains)
    }
}
