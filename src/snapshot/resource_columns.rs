//! Resource columns of a [`Snapshot`](super::Snapshot): per node by snapshot position,
//! the totals NodeResourcesFit's Filter and the Fit / BalancedAllocation scorers read
//! (upstream `noderesources/fit.go` `fitsRequest`, `resource_allocation.go`
//! `calculateResourceAllocatableRequest`), packed into one 64-byte row per node so a
//! chunk of Filter or Score reads a flat array instead of each node's `NodeInfo`
//! (a separate heap object per node).
//!
//! The rows hold the totals with the `PodLevelResources` gate on
//! ([`NodeInfo::requested`], [`NodeInfo::non_zero_requested`]); with the gate off, and
//! for extended resources, the plugins read the `NodeInfo` as before.

use std::sync::Arc;

use super::NodeInfo;
use crate::model::TaintEffect;

/// One node's resource totals, as the Fit and BalancedAllocation column paths read
/// them: one cache line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(C, align(64))]
pub(crate) struct ResourceRow {
    /// Allocatable milli-CPU.
    pub alloc_cpu: i64,
    /// Allocatable memory (bytes).
    pub alloc_memory: i64,
    /// Milli-CPU requested by the node's pods.
    pub requested_cpu: i64,
    /// Memory requested by the node's pods.
    pub requested_memory: i64,
    /// Milli-CPU requested with scoring defaults for pods that request none.
    pub non_zero_cpu: i64,
    /// Memory requested with scoring defaults.
    pub non_zero_memory: i64,
    /// Allocatable pod count minus the pods on the node (saturating): the node takes
    /// another pod exactly when this is positive (upstream `len(Pods)+1 > AllowedPodNumber`).
    pub pod_room: i64,
    /// Allocatable minus requested ephemeral storage (wrapping, as the per-node check
    /// computes it in a release build).
    pub ephemeral_free: i64,
}

impl ResourceRow {
    /// The row of `node`.
    #[inline]
    pub(crate) fn of(node: &NodeInfo) -> ResourceRow {
        let a = node.allocatable();
        let r = node.requested();
        let nz = node.non_zero_requested();
        ResourceRow {
            alloc_cpu: a.milli_cpu,
            alloc_memory: a.memory,
            requested_cpu: r.milli_cpu,
            requested_memory: r.memory,
            non_zero_cpu: nz.milli_cpu,
            non_zero_memory: nz.memory,
            pod_room: a.allowed_pod_number.saturating_sub(node.pods().len() as i64),
            ephemeral_free: a.ephemeral_storage.wrapping_sub(r.ephemeral_storage),
        }
    }
}

/// `[allocatable, requested]` ephemeral storage of `node`: read only by pods that
/// request it, so kept out of the hot row.
#[inline]
fn ephemeral_of(node: &NodeInfo) -> [i64; 2] {
    [node.allocatable().ephemeral_storage, node.requested().ephemeral_storage]
}

/// Bits of [`ResourceColumns::flags`]: facts of a node object that Filter and Score
/// test on every node, read from one byte instead of the node's spec.
pub(crate) mod flag {
    /// `spec.unschedulable` (NodeUnschedulable's Filter).
    pub(crate) const UNSCHEDULABLE: u8 = 1;
    /// A `NoSchedule` or `NoExecute` taint (TaintToleration's Filter).
    pub(crate) const HARD_TAINTS: u8 = 2;
    /// A `PreferNoSchedule` taint (TaintToleration's Score).
    pub(crate) const PREFER_TAINTS: u8 = 4;
}

/// The [`flag`] bits of `node`.
#[inline]
fn flags_of(node: &NodeInfo) -> u8 {
    let spec = &node.node().spec;
    let mut f = if spec.unschedulable { flag::UNSCHEDULABLE } else { 0 };
    for t in &spec.taints {
        f |= match t.effect {
            TaintEffect::NoSchedule | TaintEffect::NoExecute => flag::HARD_TAINTS,
            TaintEffect::PreferNoSchedule => flag::PREFER_TAINTS,
        };
    }
    f
}

/// The columns: a row, the ephemeral-storage pair, the [`flag`] bits and the
/// balance without a new pod of every node, by position.
#[derive(Debug, Clone, Default)]
pub(crate) struct ResourceColumns {
    rows: Vec<ResourceRow>,
    ephemeral: Vec<[i64; 2]>,
    flags: Vec<u8>,
    /// How many entries of `flags` have [`flag::PREFER_TAINTS`].
    prefer_taint_nodes: usize,
    /// NodeResourcesBalancedAllocation's default `[cpu, memory]` balance of the node
    /// as it is (its `before` score: a function of the row alone), by position.
    balance: Vec<i64>,
}

impl ResourceColumns {
    /// The rows, by snapshot position.
    #[inline]
    pub(crate) fn rows(&self) -> &[ResourceRow] {
        &self.rows
    }

    /// `[allocatable, requested]` ephemeral storage, by snapshot position.
    #[inline]
    pub(crate) fn ephemeral(&self) -> &[[i64; 2]] {
        &self.ephemeral
    }

    /// Every node's [`flag`] bits, by snapshot position.
    #[inline]
    pub(crate) fn flags(&self) -> &[u8] {
        &self.flags
    }

    /// How many nodes have a `PreferNoSchedule` taint.
    #[inline]
    pub(crate) fn prefer_taint_nodes(&self) -> usize {
        self.prefer_taint_nodes
    }

    /// Every node's default `[cpu, memory]` balance as it is, by snapshot position
    /// ([`balance_alone`]).
    #[inline]
    pub(crate) fn balance(&self) -> &[i64] {
        &self.balance
    }

    /// Appends `node` (the node list grew by one at the end).
    pub(crate) fn push(&mut self, node: &NodeInfo) {
        let row = ResourceRow::of(node);
        let f = flags_of(node);
        self.prefer_taint_nodes += usize::from(f & flag::PREFER_TAINTS != 0);
        self.rows.push(row);
        self.ephemeral.push(ephemeral_of(node));
        self.flags.push(f);
        self.balance.push(balance_alone(&row));
    }

    /// The node at `pos` changed (pods or node object).
    #[inline]
    pub(crate) fn set(&mut self, pos: usize, node: &NodeInfo) {
        if let (Some(row), Some(e), Some(f), Some(b)) =
            (self.rows.get_mut(pos), self.ephemeral.get_mut(pos), self.flags.get_mut(pos), self.balance.get_mut(pos))
        {
            *row = ResourceRow::of(node);
            *e = ephemeral_of(node);
            *b = balance_alone(row);
            let new = flags_of(node);
            if (*f ^ new) & flag::PREFER_TAINTS != 0 {
                if new & flag::PREFER_TAINTS != 0 {
                    self.prefer_taint_nodes += 1;
                } else {
                    self.prefer_taint_nodes -= 1;
                }
            }
            *f = new;
        }
    }

    /// The node list was rebuilt: recomputes every entry from `nodes` (reusing the
    /// buffers).
    pub(crate) fn rebuild(&mut self, nodes: &[Arc<NodeInfo>]) {
        self.rows.clear();
        self.ephemeral.clear();
        self.flags.clear();
        self.balance.clear();
        self.rows.extend(nodes.iter().map(|n| ResourceRow::of(n)));
        self.ephemeral.extend(nodes.iter().map(|n| ephemeral_of(n)));
        self.flags.extend(nodes.iter().map(|n| flags_of(n)));
        self.balance.extend(self.rows.iter().map(balance_alone));
        self.prefer_taint_nodes = self.flags.iter().filter(|&&f| f & flag::PREFER_TAINTS != 0).count();
    }
}

/// The default `[cpu, memory]` balance of a node with its pods as they are, from its
/// row: NodeResourcesBalancedAllocation's `before` score under v1.36's
/// change-in-balance scoring (kubernetes/kubernetes#135573), which does not depend
/// on the pod being scheduled, so it is computed once per node change instead of
/// once per node and cycle. Same float operations as the plugin's per-node path.
#[inline]
fn balance_alone(r: &ResourceRow) -> i64 {
    crate::plugins::node_resources::cpu_memory_balance_alone(
        [r.alloc_cpu, r.alloc_memory],
        [r.requested_cpu, r.requested_memory],
    )
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::super::{Cache, PodInfo, Snapshot};
    use super::*;
    use crate::testing::{NodeBuilder, PodBuilder};

    #[test]
    fn a_row_is_one_cache_line() {
        assert_eq!(std::mem::size_of::<ResourceRow>(), 64);
        assert_eq!(std::mem::align_of::<ResourceRow>(), 64);
    }

    /// The columns equal a recomputation from the snapshot's nodes.
    fn check(snap: &Snapshot) -> Result<(), TestCaseError> {
        let cols = &snap.resources;
        prop_assert_eq!(cols.rows().len(), snap.len());
        prop_assert_eq!(cols.ephemeral().len(), snap.len());
        for (p, n) in snap.nodes().iter().enumerate() {
            prop_assert_eq!(cols.rows()[p], ResourceRow::of(n), "row of {}", n.name());
            prop_assert_eq!(cols.ephemeral()[p], ephemeral_of(n), "ephemeral storage of {}", n.name());
            // And the row says what the NodeInfo says, field by field.
            let r = &cols.rows()[p];
            prop_assert_eq!(r.alloc_cpu, n.allocatable().milli_cpu);
            prop_assert_eq!(r.requested_memory, n.requested().memory);
            prop_assert_eq!(r.non_zero_cpu, n.non_zero_requested().milli_cpu);
            prop_assert_eq!(r.pod_room > 0, (n.pods().len() as i64) < n.allocatable().allowed_pod_number);
            // The flags say what the node object says.
            let spec = &n.node().spec;
            let f = cols.flags()[p];
            prop_assert_eq!(f & flag::UNSCHEDULABLE != 0, spec.unschedulable);
            prop_assert_eq!(
                f & flag::HARD_TAINTS != 0,
                spec.taints.iter().any(|t| t.effect != TaintEffect::PreferNoSchedule)
            );
            prop_assert_eq!(
                f & flag::PREFER_TAINTS != 0,
                spec.taints.iter().any(|t| t.effect == TaintEffect::PreferNoSchedule)
            );
            prop_assert_eq!(cols.balance()[p], balance_alone(&ResourceRow::of(n)));
        }
        prop_assert_eq!(cols.flags().len(), snap.len());
        prop_assert_eq!(cols.balance().len(), snap.len());
        let prefer = snap.nodes().iter().filter(|n| flags_of(n) & flag::PREFER_TAINTS != 0).count();
        prop_assert_eq!(cols.prefer_taint_nodes(), prefer);
        Ok(())
    }

    #[derive(Debug, Clone)]
    enum Op {
        /// Add the node, or update it when present: (node, cpu cores, memory GiB,
        /// pods, zone, taints and unschedulable bits).
        Put(u8, u8, u8, u8, u8, u8),
        Remove(u8),
        /// A pod with (cpu millis, memory MiB, ephemeral MiB) is assumed onto a node.
        Assume(u8, u16, u16, u8),
        /// A bound pod (informer add) lands on a node.
        Bind(u8, u16, u16),
        /// An assumed pod is forgotten; a bound one deleted.
        Drop(u8),
        /// The snapshot assumes a pod in place and restores the node afterwards
        /// (a pod-group cycle); `keep` leaves the assumption until the next sync.
        InPlace(u8, u16, bool),
        Sync,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            3 => (0u8..10, 0u8..8, 0u8..16, 0u8..6, 0u8..3, 0u8..16)
                .prop_map(|(n, c, m, p, z, t)| Op::Put(n, c, m, p, z, t)),
            1 => (0u8..10).prop_map(Op::Remove),
            3 => (0u8..10, 0u16..3000, 0u16..4096, 0u8..3).prop_map(|(n, c, m, e)| Op::Assume(n, c, m, e)),
            2 => (0u8..10, 0u16..3000, 0u16..4096).prop_map(|(n, c, m)| Op::Bind(n, c, m)),
            2 => (0u8..40).prop_map(Op::Drop),
            1 => (0u8..10, 0u16..3000, any::<bool>()).prop_map(|(n, c, k)| Op::InPlace(n, c, k)),
            2 => Just(Op::Sync),
        ]
    }

    fn pod(uid: usize, cpu: u16, mem: u16, eph: u8) -> PodBuilder {
        let mut b = PodBuilder::new(&format!("p{uid}"));
        if cpu > 0 {
            b = b.cpu(&format!("{cpu}m"));
        }
        if mem > 0 {
            b = b.memory(&format!("{mem}Mi"));
        }
        if eph > 0 {
            b = b.request("ephemeral-storage", &format!("{eph}Gi"));
        }
        // Every third pod also has pod-level requests (the totals with the
        // `PodLevelResources` gate on and off part ways).
        if uid.is_multiple_of(3) {
            b = b.pod_request("cpu", &format!("{}m", u32::from(cpu) + 100));
        }
        b
    }

    proptest! {
        /// After any sequence of node adds, updates (allocatable, zone: the list is
        /// reordered), removals, pods assumed, bound, forgotten and deleted, and
        /// in-place assumptions of a pod-group cycle, the resource columns equal a
        /// recomputation from the snapshot's NodeInfos, and so do a clone's and a
        /// restricted view's.
        #[test]
        fn resource_columns_equal_a_recomputation(ops in proptest::collection::vec(op(), 1..50)) {
            let mut cache = Cache::new();
            let mut snap = Snapshot::default();
            let mut present = [false; 10];
            // (uid, assumed) of pods placed so far.
            let mut pods: Vec<(String, bool)> = Vec::new();
            let mut uid = 0;
            for op in ops {
                match op {
                    Op::Put(n, cpu, mem, p, zone, t) => {
                        let mut b = NodeBuilder::new(&format!("n{n}"))
                            .cpu(&cpu.to_string())
                            .memory(&format!("{mem}Gi"))
                            .allocatable("ephemeral-storage", "20Gi")
                            .pods(i64::from(p))
                            .label("topology.kubernetes.io/zone", &format!("z{zone}"));
                        for (bit, effect) in
                            [TaintEffect::NoSchedule, TaintEffect::PreferNoSchedule, TaintEffect::NoExecute]
                                .into_iter()
                                .enumerate()
                        {
                            if t >> bit & 1 != 0 {
                                b = b.taint(&format!("t{bit}"), "", effect);
                            }
                        }
                        let mut node = b.build();
                        node.spec.unschedulable = t & 8 != 0;
                        let i = usize::from(n);
                        if present[i] {
                            cache.update_node(node).unwrap();
                        } else {
                            cache.add_node(node).unwrap();
                            present[i] = true;
                        }
                    }
                    Op::Remove(n) => {
                        if std::mem::take(&mut present[usize::from(n)]) {
                            cache.remove_node(&format!("n{n}")).unwrap();
                        }
                    }
                    Op::Assume(n, c, m, e) => {
                        if present[usize::from(n)] {
                            uid += 1;
                            let p = PodInfo::new(pod(uid, c, m, e).build()).unwrap();
                            pods.push((p.uid.to_string(), true));
                            cache.assume_pod(Arc::new(p), &format!("n{n}")).unwrap();
                        }
                    }
                    Op::Bind(n, c, m) => {
                        if present[usize::from(n)] {
                            uid += 1;
                            let p = PodInfo::new(pod(uid, c, m, 0).node_name(&format!("n{n}")).build()).unwrap();
                            pods.push((p.uid.to_string(), false));
                            cache.add_pod(Arc::new(p)).unwrap();
                        }
                    }
                    Op::Drop(k) => {
                        if !pods.is_empty() {
                            let (uid, assumed) = pods.swap_remove(usize::from(k) % pods.len());
                            // The pod may be gone with its node.
                            let _ = if assumed { cache.forget_pod(&uid) } else { cache.remove_pod(&uid).map(drop) };
                        }
                    }
                    Op::InPlace(n, c, keep) => {
                        if let Some(pos) = Symbol::lookup(&format!("n{n}")).and_then(|s| snap.index_of(s)) {
                            uid += 1;
                            let before = snap.nodes()[pos].clone();
                            let mark = snap.assume_mark();
                            let p = PodInfo::new(pod(uid, c, 128, 1).build()).unwrap();
                            snap.assume_pod_at(pos, Arc::new(p));
                            check(&snap)?;
                            if !keep {
                                snap.restore_node_at(pos, before);
                                snap.assumptions_undone(mark);
                                check(&snap)?;
                            }
                        }
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
            let some: Vec<usize> = (0..snap.len()).rev().step_by(2).collect();
            check(&snap.restricted(&some))?;
        }
    }

    use crate::model::Symbol;

    /// `Snapshot::from_nodes` fills the columns too.
    #[test]
    fn from_nodes_fills_the_columns() {
        let nodes = (0..3).map(|i| {
            let mut info =
                NodeInfo::new(Arc::new(NodeBuilder::new(&format!("n{i}")).cpu("4").memory("8Gi").pods(2).build()));
            for k in 0..i {
                let p = PodInfo::new(PodBuilder::new(&format!("p{i}-{k}")).cpu("1").build()).unwrap();
                info.add_pod(Arc::new(p));
            }
            info
        });
        let snap = Snapshot::from_nodes(nodes);
        let rows = snap.resources.rows();
        assert_eq!(rows.iter().map(|r| r.requested_cpu).collect::<Vec<_>>(), [0, 1000, 2000]);
        assert_eq!(rows.iter().map(|r| r.pod_room).collect::<Vec<_>>(), [2, 1, 0]);
        assert_eq!(rows[0].alloc_memory, 8 << 30);
        // Scoring defaults: a pod without a memory request counts 200Mi (upstream).
        assert_eq!(rows[2].non_zero_memory, 2 * 200 * 1024 * 1024);
    }
}
