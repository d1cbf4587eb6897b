//! Builders for tests, examples and benches, in the spirit of upstream's
//! `st.MakePod()` / `st.MakeNode()`, so plugin authors can test their plugins the
//! same way.
//!
//! Builder methods take quantities as text. [`PodBuilder::try_build`] and
//! [`NodeBuilder::try_build`] report the first bad quantity; `build` is the test
//! convenience that panics on one.
//!
//! [`ClusterBuilder`] places pods on nodes and yields a snapshot or a cache;
//! [`InUseDevices`] marks DRA devices taken for what-if runs; run a profile's
//! extension points on the result with [`FrameworkRunner`](crate::framework::FrameworkRunner).

mod cluster;
mod in_use;
mod more;
pub mod soak;

pub use cluster::{ClusterBuilder, ClusterError};
pub use in_use::InUseDevices;

use crate::model::{
    Container, ContainerImage, ContainerPort, Node, Pod, Protocol, Quantity, QuantityError, Symbol, Taint, TaintEffect,
    Toleration, TolerationOperator,
};

/// Builds a [`Node`].
///
/// ```
/// use schedkit::testing::NodeBuilder;
/// let n = NodeBuilder::new("n1").cpu("8").memory("32Gi").gpus(4).zone("z1").build();
/// assert_eq!(n.status.allocatable.to_resources().milli_cpu, 8000);
/// assert!(NodeBuilder::new("bad").cpu("eight").try_build().is_err());
/// ```
#[derive(Debug, Clone)]
pub struct NodeBuilder {
    node: Node,
    error: Option<QuantityError>,
}

impl NodeBuilder {
    /// A node with 110 allocatable pods and nothing else.
    pub fn new(name: &str) -> Self {
        let mut node = Node::default();
        node.metadata.name = name.to_owned();
        node.status.allocatable.set(Symbol::intern("pods"), Quantity::from_int(110));
        NodeBuilder { node, error: None }
    }

    /// Sets an allocatable (and capacity) amount.
    #[must_use]
    pub fn allocatable(mut self, resource: &str, amount: &str) -> Self {
        match Quantity::parse(amount) {
            Ok(q) => {
                self.node.status.allocatable.set(Symbol::intern(resource), q);
                self.node.status.capacity.set(Symbol::intern(resource), q);
            }
            Err(e) => {
                self.error.get_or_insert(e);
            }
        }
        self
    }

    /// Allocatable CPU.
    #[must_use]
    pub fn cpu(self, amount: &str) -> Self {
        self.allocatable("cpu", amount)
    }

    /// Allocatable memory.
    #[must_use]
    pub fn memory(self, amount: &str) -> Self {
        self.allocatable("memory", amount)
    }

    /// Allocatable pod count.
    #[must_use]
    pub fn pods(self, n: i64) -> Self {
        self.allocatable("pods", &n.to_string())
    }

    /// Allocatable `nvidia.com/gpu`.
    #[must_use]
    pub fn gpus(self, n: i64) -> Self {
        self.allocatable("nvidia.com/gpu", &n.to_string())
    }

    /// Adds a label.
    #[must_use]
    pub fn label(mut self, key: &str, value: &str) -> Self {
        self.node.metadata.labels.insert_str(key, value);
        self
    }

    /// Sets `topology.kubernetes.io/zone`.
    #[must_use]
    pub fn zone(self, zone: &str) -> Self {
        self.label("topology.kubernetes.io/zone", zone)
    }

    /// Adds a taint.
    #[must_use]
    pub fn taint(mut self, key: &str, value: &str, effect: TaintEffect) -> Self {
        self.node.spec.taints.push(Taint::new(key, value, effect));
        self
    }

    /// Cordons the node.
    #[must_use]
    pub fn unschedulable(mut self) -> Self {
        self.node.spec.unschedulable = true;
        self
    }

    /// Adds an image present on the node.
    #[must_use]
    pub fn image(mut self, name: &str, size_bytes: i64) -> Self {
        self.node.status.images.push(ContainerImage { names: vec![name.to_owned()], size_bytes });
        self
    }

    /// The node, or the first bad quantity.
    pub fn try_build(self) -> Result<Node, QuantityError> {
        match self.error {
            Some(e) => Err(e),
            None => Ok(self.node),
        }
    }

    /// The node.
    ///
    /// # Panics
    /// On a bad quantity; use [`NodeBuilder::try_build`] for input you don't control.
    pub fn build(self) -> Node {
        self.try_build().unwrap_or_else(|e| panic!("NodeBuilder: {e}"))
    }
}

/// Builds a [`Pod`] with one container (more with [`PodBuilder::container`]).
///
/// ```
/// use schedkit::testing::PodBuilder;
/// let p = PodBuilder::new("p").namespace("ml").cpu("500m").gpus(2).priority(10).build();
/// assert_eq!(p.requests().milli_cpu, 500);
/// assert_eq!(p.priority(), 10);
/// ```
#[derive(Debug, Clone)]
pub struct PodBuilder {
    pod: Pod,
    error: Option<QuantityError>,
}

impl PodBuilder {
    /// A pod with one empty container.
    pub fn new(name: &str) -> Self {
        let mut pod = Pod::default();
        pod.metadata.name = name.to_owned();
        pod.spec.containers.push(Container { name: "main".into(), ..Container::default() });
        PodBuilder { pod, error: None }
    }

    /// Namespace.
    #[must_use]
    pub fn namespace(mut self, ns: &str) -> Self {
        self.pod.metadata.namespace = ns.to_owned();
        self
    }

    /// Uid.
    #[must_use]
    pub fn uid(mut self, uid: &str) -> Self {
        self.pod.metadata.uid = uid.to_owned();
        self
    }

    /// A request on the last container.
    #[must_use]
    pub fn request(mut self, resource: &str, amount: &str) -> Self {
        match Quantity::parse(amount) {
            Ok(q) => {
                if let Some(c) = self.pod.spec.containers.last_mut() {
                    c.resources.requests.set(Symbol::intern(resource), q);
                }
            }
            Err(e) => {
                self.error.get_or_insert(e);
            }
        }
        self
    }

    /// A pod-level request (`spec.resources.requests`, the PodLevelResources feature):
    /// cpu, memory and `hugepages-*` replace the containers' aggregate.
    ///
    /// ```
    /// use schedkit::testing::PodBuilder;
    /// let p = PodBuilder::new("p").cpu("1").container("side").cpu("1").pod_request("cpu", "3").build();
    /// assert_eq!(p.requests().milli_cpu, 3000);
    /// ```
    #[must_use]
    pub fn pod_request(mut self, resource: &str, amount: &str) -> Self {
        match Quantity::parse(amount) {
            Ok(q) => {
                self.pod.spec.resources.get_or_insert_with(Default::default).requests.set(Symbol::intern(resource), q);
            }
            Err(e) => {
                self.error.get_or_insert(e);
            }
        }
        self
    }

    /// CPU request.
    #[must_use]
    pub fn cpu(self, amount: &str) -> Self {
        self.request("cpu", amount)
    }

    /// Memory request.
    #[must_use]
    pub fn memory(self, amount: &str) -> Self {
        self.request("memory", amount)
    }

    /// `nvidia.com/gpu` request.
    #[must_use]
    pub fn gpus(self, n: i64) -> Self {
        self.request("nvidia.com/gpu", &n.to_string())
    }

    /// Starts another container.
    #[must_use]
    pub fn container(mut self, name: &str) -> Self {
        self.pod.spec.containers.push(Container { name: name.to_owned(), ..Container::default() });
        self
    }

    /// Sets the last container's image.
    #[must_use]
    pub fn image(mut self, image: &str) -> Self {
        if let Some(c) = self.pod.spec.containers.last_mut() {
            c.image = image.to_owned();
        }
        self
    }

    /// Adds a host port (TCP, all addresses) to the last container.
    #[must_use]
    pub fn host_port(mut self, port: i32) -> Self {
        if let Some(c) = self.pod.spec.containers.last_mut() {
            c.ports.push(ContainerPort {
                container_port: port,
                host_port: port,
                protocol: Protocol::Tcp,
                host_ip: String::new(),
            });
        }
        self
    }

    /// Adds a label.
    #[must_use]
    pub fn label(mut self, key: &str, value: &str) -> Self {
        self.pod.metadata.labels.insert_str(key, value);
        self
    }

    /// Priority.
    #[must_use]
    pub fn priority(mut self, p: i32) -> Self {
        self.pod.spec.priority = Some(p);
        self
    }

    /// Adds a `nodeSelector` entry.
    #[must_use]
    pub fn node_selector(mut self, key: &str, value: &str) -> Self {
        self.pod.spec.node_selector.insert(Symbol::intern(key), Symbol::intern(value));
        self
    }

    /// Adds an `Equal` toleration (or `Exists` when `value` is `None`).
    #[must_use]
    pub fn toleration(mut self, key: &str, value: Option<&str>, effect: Option<TaintEffect>) -> Self {
        self.pod.spec.tolerations.push(Toleration {
            key: Symbol::intern(key),
            operator: if value.is_some() { TolerationOperator::Equal } else { TolerationOperator::Exists },
            value: Symbol::intern(value.unwrap_or("")),
            effect,
            toleration_seconds: None,
        });
        self
    }

    /// `schedulerName`.
    #[must_use]
    pub fn scheduler_name(mut self, name: &str) -> Self {
        self.pod.spec.scheduler_name = name.to_owned();
        self
    }

    /// `nodeName` (an assigned pod).
    #[must_use]
    pub fn node_name(mut self, node: &str) -> Self {
        self.pod.spec.node_name = node.to_owned();
        self
    }

    /// Edits the pod directly for anything the builder lacks.
    #[must_use]
    pub fn with(mut self, f: impl FnOnce(&mut Pod)) -> Self {
        f(&mut self.pod);
        self
    }

    /// The pod, or the first bad quantity.
    pub fn try_build(self) -> Result<Pod, QuantityError> {
        match self.error {
            Some(e) => Err(e),
            None => Ok(self.pod),
        }
    }

    /// The pod.
    ///
    /// # Panics
    /// On a bad quantity; use [`PodBuilder::try_build`] for input you don't control.
    pub fn build(self) -> Pod {
        self.try_build().unwrap_or_else(|e| panic!("PodBuilder: {e}"))
    }
}

pub mod fuzz;
