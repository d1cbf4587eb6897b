//! The nominated-pods table later cycles consult (upstream `addNominatedPods` in
//! `pkg/scheduler/framework/runtime/framework.go`): pods preemption nominated to nodes.

use std::sync::Arc;

use ahash::AHashMap;
use parking_lot::RwLock;

use crate::model::{HeldSymbol, Symbol};
use crate::snapshot::PodInfo;

/// Pods nominated to nodes by preemption, as one cycle sees them (immutable; the
/// [`Nominator`] hands out a shared copy).
#[derive(Debug, Clone, Default)]
pub struct NominatedPods {
    by_node: AHashMap<Symbol, Vec<Arc<PodInfo>>>,
    /// Each nomination holds its node's name, so a `by_node` key never names another
    /// string (a removed node's freed slot reused) while a pod is nominated there.
    node_of: AHashMap<Arc<str>, HeldSymbol>,
}

impl NominatedPods {
    /// Pods nominated to `node`.
    pub fn on_node(&self, node: Symbol) -> &[Arc<PodInfo>] {
        self.by_node.get(&node).map_or(&[], Vec::as_slice)
    }

    /// The node a pod (by uid) is nominated to.
    pub fn node_of(&self, uid: &str) -> Option<Symbol> {
        self.node_of.get(uid).map(HeldSymbol::symbol)
    }

    /// Number of nominated pods.
    pub fn len(&self) -> usize {
        self.node_of.len()
    }

    /// Whether no pod is nominated.
    pub fn is_empty(&self) -> bool {
        self.node_of.is_empty()
    }

    /// Every nominated pod (grouped by node, in no particular order of nodes).
    pub fn iter(&self) -> impl Iterator<Item = &Arc<PodInfo>> {
        self.by_node.values().flatten()
    }
}

/// Which pods are nominated to which nodes (upstream's `PodNominator`, kept here
/// until the scheduling queue owns it).
///
/// The scheduler records a nomination when PostFilter returns a nominated node and
/// drops it when the pod is assumed. Call [`Nominator::remove`] when a nominated pod is
/// deleted. Filter then treats a node's nominated pods of equal or higher priority as
/// already running there, so a lower-priority pod can't take the room preemption made.
///
/// ```
/// use std::sync::Arc;
/// use schedkit::framework::Nominator;
/// use schedkit::snapshot::PodInfo;
/// use schedkit::testing::PodBuilder;
/// let n = Nominator::default();
/// let p = Arc::new(PodInfo::new(PodBuilder::new("hi").priority(10).build()).unwrap());
/// n.add(p, "node-1");
/// assert_eq!(n.nominated_node("default/hi").map(|s| s.to_string()).as_deref(), Some("node-1"));
/// n.remove("default/hi");
/// assert!(n.snapshot().is_none());
/// ```
#[derive(Debug, Default)]
pub struct Nominator {
    inner: RwLock<Arc<NominatedPods>>,
}

impl Nominator {
    /// Nominates `pod` to `node`, replacing an earlier nomination of the same pod.
    pub fn add(&self, pod: Arc<PodInfo>, node: &str) {
        let node = HeldSymbol::new(node);
        let mut g = self.inner.write();
        let m = Arc::make_mut(&mut g);
        remove_from(m, &pod.uid);
        let sym = node.symbol();
        m.node_of.insert(pod.uid.clone(), node);
        m.by_node.entry(sym).or_default().push(pod);
    }

    /// Drops a pod's nomination; returns the node it had (held: the name stays valid
    /// while the caller keeps it).
    pub fn remove(&self, uid: &str) -> Option<HeldSymbol> {
        let mut g = self.inner.write();
        if !g.node_of.contains_key(uid) {
            return None;
        }
        remove_from(Arc::make_mut(&mut g), uid)
    }

    /// The node a pod (by uid) is nominated to.
    pub fn nominated_node(&self, uid: &str) -> Option<Symbol> {
        self.inner.read().node_of(uid)
    }

    /// Pods nominated to `node`.
    pub fn pods_on(&self, node: &str) -> Vec<Arc<PodInfo>> {
        Symbol::lookup(node).map_or_else(Vec::new, |s| self.inner.read().on_node(s).to_vec())
    }

    /// A shared copy of the table for one cycle, or `None` when nothing is nominated
    /// (so the Filter hot path pays nothing then).
    pub fn snapshot(&self) -> Option<Arc<NominatedPods>> {
        let g = self.inner.read();
        (!g.is_empty()).then(|| g.clone())
    }

    /// Number of nominated pods.
    pub fn len(&self) -> usize {
        self.inner.read().len()
    }

    /// Whether no pod is nominated.
    pub fn is_empty(&self) -> bool {
        self.inner.read().is_empty()
    }
}

fn remove_from(m: &mut NominatedPods, uid: &str) -> Option<HeldSymbol> {
    let node = m.node_of.remove(uid)?;
    if let Some(v) = m.by_node.get_mut(&node.symbol()) {
        v.retain(|p| &*p.uid != uid);
        if v.is_empty() {
            m.by_node.remove(&node.symbol());
        }
    }
    Some(node)
}
