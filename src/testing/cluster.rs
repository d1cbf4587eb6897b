//! [`ClusterBuilder`]: nodes and the pods already on them, as a [`Snapshot`] or a
//! [`Cache`], for plugin tests and what-if tools.

use std::sync::Arc;

use super::{NodeBuilder, PodBuilder};
use crate::model::{PodError, QuantityError};
use crate::snapshot::{Cache, CacheError, PodInfo, Snapshot};

/// A cluster that could not be built, saying which object.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ClusterError {
    /// A node builder held a bad quantity.
    #[error("node #{index}: {source}")]
    Node {
        /// Position of the node in the builder.
        index: usize,
        /// The quantity error.
        #[source]
        source: QuantityError,
    },
    /// A pod builder held a bad quantity.
    #[error("pod #{index} (on node {node:?}): {source}")]
    Pod {
        /// Position of the pod in the builder.
        index: usize,
        /// The node it was placed on.
        node: String,
        /// The quantity error.
        #[source]
        source: QuantityError,
    },
    /// A pod failed validation.
    #[error("pod #{index}: {source}")]
    InvalidPod {
        /// Position of the pod in the builder.
        index: usize,
        /// Why.
        #[source]
        source: PodError,
    },
    /// The cache refused an object (duplicate node or pod, unknown node).
    #[error(transparent)]
    Cache(#[from] CacheError),
}

/// Builds a cluster: nodes, and pods already running on them (upstream tests'
/// `existingPods` + `nodes`).
///
/// ```
/// use schedkit::testing::{ClusterBuilder, NodeBuilder, PodBuilder};
/// let snap = ClusterBuilder::new()
///     .nodes(3, |i| NodeBuilder::new(&format!("n{i}")).milli_cpu(4000).zone(if i < 2 { "a" } else { "b" }))
///     .pod_on("n0", PodBuilder::new("web").milli_cpu(1500))
///     .build()
///     .unwrap();
/// assert_eq!(snap.len(), 3);
/// assert_eq!(snap.get("n0").unwrap().requested().milli_cpu, 1500);
/// assert!(ClusterBuilder::new().pod_on("nowhere", PodBuilder::new("p")).build().is_err());
/// ```
#[derive(Debug, Clone, Default)]
pub struct ClusterBuilder {
    nodes: Vec<NodeBuilder>,
    pods: Vec<(String, PodBuilder)>,
}

impl ClusterBuilder {
    /// An empty cluster.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a node.
    #[must_use]
    pub fn node(mut self, node: NodeBuilder) -> Self {
        self.nodes.push(node);
        self
    }

    /// Adds `count` nodes, the `i`-th built by `make(i)`.
    #[must_use]
    pub fn nodes(mut self, count: usize, make: impl Fn(usize) -> NodeBuilder) -> Self {
        self.nodes.extend((0..count).map(make));
        self
    }

    /// Places a pod on `node` (sets its `nodeName`).
    #[must_use]
    pub fn pod_on(mut self, node: &str, pod: PodBuilder) -> Self {
        self.pods.push((node.to_owned(), pod));
        self
    }

    /// Places `count` pods on `node`, the `i`-th built by `make(i)` (give them
    /// distinct names).
    #[must_use]
    pub fn pods_on(mut self, node: &str, count: usize, make: impl Fn(usize) -> PodBuilder) -> Self {
        self.pods.extend((0..count).map(|i| (node.to_owned(), make(i))));
        self
    }

    /// The cluster as a cache (to keep changing it, or to feed a scheduler).
    pub fn build_cache(self) -> Result<Cache, ClusterError> {
        let mut cache = Cache::new();
        for (index, n) in self.nodes.into_iter().enumerate() {
            cache.add_node(n.try_build().map_err(|source| ClusterError::Node { index, source })?)?;
        }
        for (index, (node, p)) in self.pods.into_iter().enumerate() {
            let pod = p.node_name(&node).try_build().map_err(|source| ClusterError::Pod {
                index,
                node: node.clone(),
                source,
            })?;
            let info = PodInfo::new(pod).map_err(|source| ClusterError::InvalidPod { index, source })?;
            cache.add_pod(Arc::new(info))?;
        }
        Ok(cache)
    }

    /// The cluster as a snapshot.
    pub fn build(self) -> Result<Snapshot, ClusterError> {
        let cache = self.build_cache()?;
        let mut snap = Snapshot::default();
        cache.update_snapshot(&mut snap);
        Ok(snap)
    }
}
