//! NodeInfo, the immutable per-cycle [`Snapshot`], and the mutable [`Cache`] it is
//! taken from.

mod cache;
mod node_info;
mod pod_info;

use std::sync::Arc;

use ahash::AHashMap;

pub use cache::{Cache, CacheError, UpdateStats};
pub use node_info::{NodeInfo, normalized_image};
pub use pod_info::{HostPort, PodInfo};

use crate::model::Symbol;

/// The cluster as one scheduling cycle sees it: immutable, cheap to share.
///
/// Nodes are listed in upstream's node-tree order (round robin over zones), which is
/// the order node sampling walks.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    nodes: Vec<Arc<NodeInfo>>,
    index: AHashMap<Symbol, usize>,
    with_affinity: Vec<usize>,
    with_required_anti_affinity: Vec<usize>,
    image_nodes: Arc<AHashMap<Symbol, u32>>,
    generation: u64,
    structure_generation: u64,
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
