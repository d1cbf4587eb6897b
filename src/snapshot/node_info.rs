//! Per-node aggregate state (upstream `framework.NodeInfo`).

use std::sync::Arc;

use smallvec::SmallVec;

use super::{HostPort, PodInfo};
use crate::model::{HeldSymbol, Node, Resources, Symbol};

/// A node with its pods and running totals, as the scheduler sees it in one cycle.
///
/// Totals are kept as pods come and go, so Filter and Score read them in O(1).
#[derive(Debug)]
pub struct NodeInfo {
    node: Arc<Node>,
    /// Held, not pinned: the name is freed once the node is gone and no copy of this
    /// NodeInfo (in a snapshot, say) remains.
    name: HeldSymbol,
    pods: Vec<Arc<PodInfo>>,
    pods_with_affinity: Vec<Arc<PodInfo>>,
    pods_with_required_anti_affinity: Vec<Arc<PodInfo>>,
    used_ports: SmallVec<[HostPort; 4]>,
    requested: Resources,
    non_zero_requested: Resources,
    /// `[requested, non_zero_requested]` with the PodLevelResources gate off, kept from
    /// the first pod with pod-level requests on (until then they equal the totals).
    without_pod_level: Option<Box<[Resources; 2]>>,
    allocatable: Resources,
    /// Shared between copies: it changes only with the node object.
    images: Arc<[(Symbol, i64)]>,
    generation: u64,
}

/// A copy is made on write (the cache's node shared with a snapshot), and the write
/// is nearly always a pod added: the copy's pod list gets room for one more, so the
/// add that follows does not grow it again.
impl Clone for NodeInfo {
    fn clone(&self) -> NodeInfo {
        let NodeInfo {
            node,
            name,
            pods,
            pods_with_affinity,
            pods_with_required_anti_affinity,
            used_ports,
            requested,
            non_zero_requested,
            without_pod_level,
            allocatable,
            images,
            generation,
        } = self;
        let mut pods_copy = Vec::with_capacity(pods.len() + 1);
        pods_copy.extend(pods.iter().cloned());
        NodeInfo {
            node: node.clone(),
            name: name.clone(),
            pods: pods_copy,
            pods_with_affinity: pods_with_affinity.clone(),
            pods_with_required_anti_affinity: pods_with_required_anti_affinity.clone(),
            used_ports: used_ports.clone(),
            requested: requested.clone(),
            non_zero_requested: non_zero_requested.clone(),
            without_pod_level: without_pod_level.clone(),
            allocatable: allocatable.clone(),
            images: images.clone(),
            generation: *generation,
        }
    }
}

impl NodeInfo {
    /// A node with no pods.
    pub fn new(node: Arc<Node>) -> NodeInfo {
        let mut n = NodeInfo {
            name: HeldSymbol::new(node.name()),
            allocatable: Resources::default(),
            node: node.clone(),
            pods: Vec::new(),
            pods_with_affinity: Vec::new(),
            pods_with_required_anti_affinity: Vec::new(),
            used_ports: SmallVec::new(),
            requested: Resources::default(),
            non_zero_requested: Resources::default(),
            without_pod_level: None,
            images: Arc::from([]),
            generation: 0,
        };
        n.set_node(node);
        n
    }

    /// Replaces the node object, keeping the pods.
    pub fn set_node(&mut self, node: Arc<Node>) {
        self.allocatable = node.status.allocatable.to_resources();
        let mut images: Vec<(Symbol, i64)> = node
            .status
            .images
            .iter()
            .flat_map(|img| img.names.iter().map(move |n| (Symbol::intern(n), img.size_bytes)))
            .collect();
        images.sort_unstable_by_key(|&(n, _)| n);
        images.dedup_by_key(|&mut (n, _)| n);
        self.images = images.into();
        if self.name.as_str() != node.name() {
            self.name = HeldSymbol::new(node.name());
        }
        self.node = node;
    }

    /// The node.
    #[inline]
    pub fn node(&self) -> &Node {
        &self.node
    }

    /// Whether `other` shares this one's node object (so its labels are the same).
    #[inline]
    pub(crate) fn same_node_object(&self, other: &NodeInfo) -> bool {
        Arc::ptr_eq(&self.node, &other.node)
    }

    /// The node as shared.
    pub fn node_arc(&self) -> &Arc<Node> {
        &self.node
    }

    /// The node's name, interned (for `matchFields` and maps keyed by node). The
    /// symbol names this node while the node (or a copy of this NodeInfo) lives: keep
    /// it beyond that with [`NodeInfo::held_name`], never as a bare `Symbol`.
    #[inline]
    pub fn name(&self) -> Symbol {
        self.name.symbol()
    }

    /// The node's name as a counted reference, for state that outlives the node.
    pub fn held_name(&self) -> &HeldSymbol {
        &self.name
    }

    /// Pods on the node (bound and assumed).
    #[inline]
    pub fn pods(&self) -> &[Arc<PodInfo>] {
        &self.pods
    }

    /// Pods with any pod affinity or anti-affinity.
    pub fn pods_with_affinity(&self) -> &[Arc<PodInfo>] {
        &self.pods_with_affinity
    }

    /// Pods with required anti-affinity.
    pub fn pods_with_required_anti_affinity(&self) -> &[Arc<PodInfo>] {
        &self.pods_with_required_anti_affinity
    }

    /// Host ports in use.
    #[inline]
    pub fn used_ports(&self) -> &[HostPort] {
        &self.used_ports
    }

    /// Sum of the pods' requests.
    #[inline]
    pub fn requested(&self) -> &Resources {
        &self.requested
    }

    /// Sum of the pods' requests with scoring defaults.
    #[inline]
    pub fn non_zero_requested(&self) -> &Resources {
        &self.non_zero_requested
    }

    /// Sum of the pods' requests with the `PodLevelResources` gate on (as
    /// [`NodeInfo::requested`]) or off ([`PodInfo::requests_for`]).
    #[inline]
    pub fn requested_for(&self, pod_level_resources: bool) -> &Resources {
        match &self.without_pod_level {
            Some(off) if !pod_level_resources => &off[0],
            _ => &self.requested,
        }
    }

    /// Sum of the pods' requests with scoring defaults, with the gate on or off.
    #[inline]
    pub fn non_zero_requested_for(&self, pod_level_resources: bool) -> &Resources {
        match &self.without_pod_level {
            Some(off) if !pod_level_resources => &off[1],
            _ => &self.non_zero_requested,
        }
    }

    /// What pods may use.
    #[inline]
    pub fn allocatable(&self) -> &Resources {
        &self.allocatable
    }

    /// Size of an image present on the node (by one of its reported names), if any.
    pub fn image_size(&self, image: Symbol) -> Option<i64> {
        self.images.binary_search_by_key(&image, |&(n, _)| n).ok().map(|i| self.images[i].1)
    }

    /// Images on the node: every reported name with the image's size, sorted by symbol.
    pub fn images(&self) -> &[(Symbol, i64)] {
        &self.images
    }

    /// Bumped by the cache whenever this node or its pods change.
    #[inline]
    pub fn generation(&self) -> u64 {
        self.generation
    }

    pub(crate) fn set_generation(&mut self, g: u64) {
        self.generation = g;
    }

    /// Adds a pod and its requests and ports (no checks: the cache and plugins decide
    /// whether it fits). Used by the cache and by dry runs such as preemption.
    pub fn add_pod(&mut self, pod: Arc<PodInfo>) {
        if self.without_pod_level.is_none() && pod.has_pod_level_requests() {
            self.without_pod_level = Some(Box::new([self.requested.clone(), self.non_zero_requested.clone()]));
        }
        if let Some(off) = &mut self.without_pod_level {
            off[0].add(pod.requests_for(false));
            off[0].allowed_pod_number += 1;
            off[1].add(pod.non_zero_requests_for(false));
        }
        self.requested.add(&pod.requests);
        self.requested.allowed_pod_number += 1;
        self.non_zero_requested.add(&pod.non_zero_requests);
        self.used_ports.extend(pod.host_ports.iter().copied());
        if pod.has_affinity {
            self.pods_with_affinity.push(pod.clone());
        }
        if pod.has_required_anti_affinity {
            self.pods_with_required_anti_affinity.push(pod.clone());
        }
        self.pods.push(pod);
    }

    /// Removes a pod by uid, undoing [`NodeInfo::add_pod`]; returns it if present.
    pub fn remove_pod(&mut self, uid: &str) -> Option<Arc<PodInfo>> {
        let i = self.pods.iter().position(|p| &*p.uid == uid)?;
        Some(self.remove_at(i))
    }

    /// Removes the very pod object `pod` (found by pointer, so no uid string is read:
    /// what preemption's dry runs use on node copies), else the pod with its uid.
    pub fn remove_pod_info(&mut self, pod: &Arc<PodInfo>) -> Option<Arc<PodInfo>> {
        match self.pods.iter().position(|p| Arc::ptr_eq(p, pod)) {
            Some(i) => Some(self.remove_at(i)),
            None => self.remove_pod(&pod.uid),
        }
    }

    fn remove_at(&mut self, i: usize) -> Arc<PodInfo> {
        let pod = self.pods.swap_remove(i);
        if let Some(off) = &mut self.without_pod_level {
            off[0].sub(pod.requests_for(false));
            off[0].allowed_pod_number -= 1;
            off[1].sub(pod.non_zero_requests_for(false));
        }
        self.requested.sub(&pod.requests);
        self.requested.allowed_pod_number -= 1;
        self.non_zero_requested.sub(&pod.non_zero_requests);
        for hp in &pod.host_ports {
            if let Some(j) = self.used_ports.iter().position(|u| u == hp) {
                self.used_ports.swap_remove(j);
            }
        }
        if pod.has_affinity {
            self.pods_with_affinity.retain(|p| p.uid != pod.uid);
        }
        if pod.has_required_anti_affinity {
            self.pods_with_required_anti_affinity.retain(|p| p.uid != pod.uid);
        }
        pod
    }
}

/// The normalized image name (`repo` -> `repo:latest`), as upstream ImageLocality's
/// `normalizedImageName` applies to a pod's images before looking them up on nodes.
pub fn normalized_image(name: &str) -> std::borrow::Cow<'_, str> {
    let last = name.rsplit('/').next().unwrap_or(name);
    if last.contains(':') || last.contains('@') {
        std::borrow::Cow::Borrowed(name)
    } else {
        std::borrow::Cow::Owned(format!("{name}:latest"))
    }
}
