//! Label-value columns of a [`Snapshot`](super::Snapshot): for a label key, the value id
//! of every node by snapshot position, so a per-node label lookup in Filter and Score
//! is one array read instead of a scan of the node's label pairs.

use std::sync::Arc;

use ahash::AHashMap;
use parking_lot::{RwLock, RwLockUpgradableReadGuard};

use super::{NodeInfo, Snapshot};
use crate::model::Symbol;
use crate::model::labels::{BlockSource, MASK_NODES, NO_VALUE};

/// Most columns a snapshot keeps. Each costs 4 bytes per node and one label lookup
/// per node whose object changed in a snapshot update; keys asked for after this
/// many are looked up in the node's labels instead (the same answers, slower).
pub(crate) const MAX_COLUMNS: usize = 16;

/// One key's column.
#[derive(Debug, Clone)]
struct Column {
    key: Symbol,
    values: Vec<u32>,
}

/// The value id of `key` on `node`, or [`NO_VALUE`].
#[inline]
fn value_of(node: &NodeInfo, key: Symbol) -> u32 {
    node.node().metadata.labels.get(key).map_or(NO_VALUE, Symbol::id)
}

/// `out[i] = values[positions[i]]` (`out` as long as `positions`).
#[inline]
fn copy_at(values: &[u32], positions: &[usize], out: &mut [u32]) {
    for (o, &p) in out.iter_mut().zip(positions) {
        *o = values[p];
    }
}

/// The columns built so far. A column is built the first time a cycle asks for its
/// key (under `&` access: Filter may run on several threads) and kept up to date by
/// the snapshot's updates from then on.
#[derive(Debug, Default)]
pub(crate) struct LabelColumns {
    cols: RwLock<Vec<Column>>,
}

impl Clone for LabelColumns {
    fn clone(&self) -> Self {
        LabelColumns { cols: RwLock::new(self.cols.read().clone()) }
    }
}

impl LabelColumns {
    /// Writes the value id of `key` (or [`NO_VALUE`]) of the node at each of
    /// `positions` into `out` (as long as `positions`). Builds the key's column from
    /// `nodes` on first use; past [`MAX_COLUMNS`] keys, reads the nodes' labels.
    pub(crate) fn gather(&self, nodes: &[Arc<NodeInfo>], key: Symbol, positions: &[usize], out: &mut [u32]) {
        let out = &mut out[..positions.len()];
        {
            let cols = self.cols.read();
            if let Some(c) = cols.iter().find(|c| c.key == key) {
                copy_at(&c.values, positions, out);
                return;
            }
            if cols.len() >= MAX_COLUMNS {
                drop(cols);
                for (o, &p) in out.iter_mut().zip(positions) {
                    *o = value_of(&nodes[p], key);
                }
                return;
            }
        }
        let cols = self.cols.upgradable_read();
        // Another thread may have built it meanwhile.
        let at = match cols.iter().position(|c| c.key == key) {
            Some(at) => at,
            None if cols.len() >= MAX_COLUMNS => {
                drop(cols);
                for (o, &p) in out.iter_mut().zip(positions) {
                    *o = value_of(&nodes[p], key);
                }
                return;
            }
            None => {
                let mut w = RwLockUpgradableReadGuard::upgrade(cols);
                w.push(Column { key, values: nodes.iter().map(|n| value_of(n, key)).collect() });
                let at = w.len() - 1;
                let r = parking_lot::RwLockWriteGuard::downgrade(w);
                copy_at(&r[at].values, positions, out);
                return;
            }
        };
        copy_at(&cols[at].values, positions, out);
    }

    /// The node at `pos` was replaced by `node` (a different node object: its labels
    /// may have changed).
    pub(crate) fn set(&mut self, pos: usize, node: &NodeInfo) {
        for c in self.cols.get_mut() {
            c.values[pos] = value_of(node, c.key);
        }
    }

    /// The node list was rebuilt: `nodes` is the new list, and `old` gives, by node
    /// name, the position a node had in the previous list and whether it is the same
    /// node object as before (then its entry is copied instead of looked up).
    pub(crate) fn rebuild(&mut self, nodes: &[Arc<NodeInfo>], old: &AHashMap<Symbol, (u64, usize)>) {
        let cols = self.cols.get_mut();
        if cols.is_empty() {
            return;
        }
        let mut fresh = vec![NO_VALUE; nodes.len()];
        for c in cols.iter_mut() {
            for (f, n) in fresh.iter_mut().zip(nodes) {
                *f = match old.get(&n.name()) {
                    Some(&(g, p)) if g == n.generation() && p < c.values.len() => c.values[p],
                    _ => value_of(n, c.key),
                };
            }
            std::mem::swap(&mut c.values, &mut fresh);
            fresh.resize(nodes.len(), NO_VALUE);
        }
    }

    /// The keys that have a column, in the order they were built.
    #[cfg(test)]
    pub(crate) fn keys(&self) -> Vec<Symbol> {
        self.cols.read().iter().map(|c| c.key).collect()
    }

    /// A copy of `key`'s column, if built.
    #[cfg(test)]
    pub(crate) fn column(&self, key: Symbol) -> Option<Vec<u32>> {
        self.cols.read().iter().find(|c| c.key == key).map(|c| c.values.clone())
    }
}

/// Up to [`MASK_NODES`] nodes of a snapshot as a [`NodeBlock`](crate::model::labels::NodeBlock)
/// source: label values come from the snapshot's columns.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SnapshotBlock<'a> {
    /// The snapshot.
    pub snap: &'a Snapshot,
    /// The block's nodes (snapshot positions; only the first [`MASK_NODES`] count).
    pub positions: &'a [usize],
}

impl BlockSource for SnapshotBlock<'_> {
    fn len(&self) -> usize {
        self.positions.len().min(MASK_NODES)
    }
    fn values(&self, key: Symbol, out: &mut [u32; MASK_NODES]) {
        let n = BlockSource::len(self);
        self.snap.label_values(key, &self.positions[..n], &mut out[..n]);
    }
    fn name(&self, i: usize) -> Symbol {
        self.snap.nodes()[self.positions[i]].name()
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::super::{Cache, PodInfo, Snapshot};
    use super::*;
    use crate::testing::{NodeBuilder, PodBuilder};

    /// Keys the nodes carry: the zone key also reorders the node list (node tree).
    const KEYS: [&str; 3] = ["topology.kubernetes.io/zone", "k1", "k2"];

    #[derive(Debug, Clone)]
    enum Op {
        /// Add the node, or update it when present, with these `(key, value)` labels.
        Put(u8, Vec<(u8, u8)>),
        Remove(u8),
        /// A pod lands on the node (the node object stays).
        Pod(u8),
        /// A cycle asks for a key's values (builds its column).
        Ask(u8),
        Sync,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            3 => (0u8..12, proptest::collection::vec((0u8..3, 0u8..3), 0..4)).prop_map(|(n, l)| Op::Put(n, l)),
            1 => (0u8..12).prop_map(Op::Remove),
            1 => (0u8..12).prop_map(Op::Pod),
            1 => (0u8..3).prop_map(Op::Ask),
            2 => Just(Op::Sync),
        ]
    }

    fn check(snap: &Snapshot) -> Result<(), TestCaseError> {
        for key in snap.columns.keys() {
            let col = snap.columns.column(key).unwrap();
            let scan: Vec<u32> = snap.nodes().iter().map(|n| value_of(n, key)).collect();
            prop_assert_eq!(col, scan, "column of {}", key);
        }
        Ok(())
    }

    proptest! {
        /// After any sequence of node adds, updates, removals and pod changes, each
        /// built column equals a scan of the nodes' labels, and a gather reads it.
        #[test]
        fn label_column_equals_a_scan(ops in proptest::collection::vec(op(), 1..40)) {
            let mut cache = Cache::new();
            let mut snap = Snapshot::default();
            let mut present = [false; 12];
            let mut pods = 0;
            for op in ops {
                match op {
                    Op::Put(n, labels) => {
                        let mut b = NodeBuilder::new(&format!("n{n}")).cpu("8").pods(100);
                        for (k, v) in labels {
                            b = b.label(KEYS[usize::from(k)], &format!("v{v}"));
                        }
                        let i = usize::from(n);
                        if present[i] {
                            cache.update_node(b.build()).unwrap();
                        } else {
                            cache.add_node(b.build()).unwrap();
                            present[i] = true;
                        }
                    }
                    Op::Remove(n) => {
                        if std::mem::take(&mut present[usize::from(n)]) {
                            cache.remove_node(&format!("n{n}")).unwrap();
                        }
                    }
                    Op::Pod(n) => {
                        if present[usize::from(n)] {
                            pods += 1;
                            let pod = PodInfo::new(PodBuilder::new(&format!("p{pods}")).build()).unwrap();
                            cache.assume_pod(Arc::new(pod), &format!("n{n}")).unwrap();
                        }
                    }
                    Op::Ask(k) => {
                        let key = Symbol::intern(KEYS[usize::from(k)]);
                        let all: Vec<usize> = (0..snap.len()).collect();
                        let mut out = vec![0; all.len()];
                        snap.label_values(key, &all, &mut out);
                        let scan: Vec<u32> = snap.nodes().iter().map(|n| value_of(n, key)).collect();
                        prop_assert_eq!(out, scan);
                    }
                    Op::Sync => {
                        cache.update_snapshot(&mut snap);
                        check(&snap)?;
                    }
                }
            }
            cache.update_snapshot(&mut snap);
            check(&snap)?;
            check(&snap.clone())?;
        }
    }

    /// Keys past [`MAX_COLUMNS`] get no column but the same answers.
    #[test]
    fn keys_past_the_limit_are_scanned() {
        let nodes = (0..3).map(|i| {
            let mut b = NodeBuilder::new(&format!("n{i}"));
            for k in 0..MAX_COLUMNS + 2 {
                b = b.label(&format!("key{k}"), &format!("v{}", (i + k) % 2));
            }
            crate::snapshot::NodeInfo::new(Arc::new(b.build()))
        });
        let snap = Snapshot::from_nodes(nodes);
        let mut out = [0; 3];
        for k in 0..MAX_COLUMNS + 2 {
            let key = Symbol::intern(&format!("key{k}"));
            snap.label_values(key, &[2, 0, 1], &mut out);
            let want: Vec<u32> = [2, 0, 1].iter().map(|&i| Symbol::intern(&format!("v{}", (i + k) % 2)).id()).collect();
            assert_eq!(out.as_slice(), want.as_slice(), "key{k}");
        }
        assert_eq!(snap.columns.keys().len(), MAX_COLUMNS);
        let missing = Symbol::intern("no-such-key");
        snap.label_values(missing, &[0], &mut out[..1]);
        assert_eq!(out[0], NO_VALUE);
    }
}
