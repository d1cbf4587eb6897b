//! A pod with what every cycle would otherwise recompute: requests, ports, affinity flags.

use std::sync::Arc;

use smallvec::SmallVec;

use crate::model::{HeldSymbol, Pod, PodError, PodRequestOptions, Protocol, Resources, Symbol};

/// A host port a pod occupies: `(ip, protocol, port)`; ip `0.0.0.0` is every address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HostPort {
    /// Host IP, interned; `0.0.0.0` when the manifest leaves it empty.
    pub ip: Symbol,
    /// Protocol.
    pub protocol: Protocol,
    /// Port number.
    pub port: i32,
}

impl HostPort {
    /// The wildcard address.
    pub fn any_ip() -> Symbol {
        Symbol::intern("0.0.0.0")
    }

    /// Whether two host ports conflict, as upstream `HostPortInfo.CheckConflict`: the same
    /// protocol and port, and the same IP or either IP being the wildcard.
    #[inline]
    pub fn conflicts(&self, other: &HostPort) -> bool {
        if self.port != other.port || self.protocol != other.protocol {
            return false;
        }
        let any = HostPort::any_ip();
        self.ip == other.ip || self.ip == any || other.ip == any
    }
}

/// A validated pod plus derived facts, shared by `Arc` between the queue, the cache
/// and every snapshot (upstream `framework.PodInfo`).
#[derive(Debug, Clone)]
pub struct PodInfo {
    /// The pod.
    pub pod: Arc<Pod>,
    /// Uid (or namespace/name).
    pub uid: Arc<str>,
    /// Effective requests ([`Pod::requests`]), pod-level resources included (the
    /// `PodLevelResources` gate's v1.36 default); see [`PodInfo::requests_for`].
    pub requests: Resources,
    /// Requests with the scoring defaults as a node counts the pod
    /// ([`Pod::non_zero_requests`]); see [`PodInfo::non_zero_requests_for`].
    pub non_zero_requests: Resources,
    /// The other variants, only for a pod that sets pod-level requests (for all other
    /// pods every variant equals the two above).
    pod_level: Option<Box<PodLevelVariants>>,
    /// Host ports requested.
    pub host_ports: SmallVec<[HostPort; 2]>,
    /// Interned namespace.
    pub namespace: Symbol,
    /// Has pod affinity or anti-affinity terms of any kind.
    pub has_affinity: bool,
    /// Has required anti-affinity terms.
    pub has_required_anti_affinity: bool,
    /// The node the scheduler assumed the pod on (see [`PodInfo::node_name`]). Kept
    /// here so assuming a pod shares its object instead of copying it to set
    /// `spec.nodeName`. Held (not pinned), so a removed node's name is freed once no
    /// pod assumed on it remains, and never names another node while one does.
    assumed_node: Option<HeldSymbol>,
}

/// A pod with pod-level requests: what the scorers weigh with the gate on, and every
/// request with the `PodLevelResources` gate off.
#[derive(Debug, Clone, PartialEq)]
struct PodLevelVariants {
    scoring: Resources,
    requests_off: Resources,
    non_zero_off: Resources,
}

impl PodInfo {
    /// Validates the pod and derives its facts.
    ///
    /// ```
    /// use schedkit::model::Pod;
    /// use schedkit::snapshot::PodInfo;
    /// let mut pod = Pod::default();
    /// assert!(PodInfo::new(pod.clone()).is_err(), "a pod needs a name");
    /// pod.metadata.name = "p".into();
    /// let info = PodInfo::new(pod).unwrap();
    /// assert_eq!(&*info.uid, "default/p");
    /// ```
    pub fn new(mut pod: Pod) -> Result<PodInfo, PodError> {
        pod.validate()?;
        Ok(PodInfo::from_validated(Arc::new(pod)))
    }

    /// Derives facts of a pod already validated.
    pub fn from_validated(pod: Arc<Pod>) -> PodInfo {
        let any = HostPort::any_ip();
        let host_ports = pod
            .host_ports()
            .map(|p| HostPort {
                ip: if p.host_ip.is_empty() { any } else { Symbol::intern(&p.host_ip) },
                protocol: p.protocol,
                port: p.host_port,
            })
            .collect();
        let aff = pod.spec.affinity.as_ref();
        let has_affinity = aff.is_some_and(|a| {
            a.pod_affinity.as_ref().is_some_and(|p| !p.required.is_empty() || !p.preferred.is_empty())
                || a.pod_anti_affinity.as_ref().is_some_and(|p| !p.required.is_empty() || !p.preferred.is_empty())
        });
        let has_required_anti_affinity =
            aff.and_then(|a| a.pod_anti_affinity.as_ref()).is_some_and(|p| !p.required.is_empty());
        let pod_level = pod.has_pod_level_requests().then(|| {
            Box::new(PodLevelVariants {
                scoring: pod.scoring_requests_for(true),
                requests_off: pod
                    .requests_with(PodRequestOptions { pod_level_resources: false, ..PodRequestOptions::default() }),
                non_zero_off: pod.non_zero_requests_for(false),
            })
        });
        PodInfo {
            uid: pod.uid().into(),
            requests: pod.requests(),
            non_zero_requests: pod.non_zero_requests(),
            pod_level,
            host_ports,
            namespace: Symbol::intern(pod.namespace()),
            has_affinity,
            has_required_anti_affinity,
            assumed_node: None,
            pod,
        }
    }

    /// The node this pod is assigned to: the node the scheduler assumed it on, else the
    /// object's `spec.nodeName` (empty for a pending pod).
    ///
    /// Upstream assumes a deep copy of the pod with `spec.nodeName` set. schedkit
    /// shares the pod object instead and records the node here, which keeps a copy of
    /// every container, toleration and affinity term off each cycle. So for a pod the
    /// scheduler assumed (in the cache, a [`NodeInfo`](crate::snapshot::NodeInfo), a
    /// binding cycle or an assigned-pod event) read the node from this method, not
    /// from `pod.spec.node_name`.
    ///
    /// ```
    /// use schedkit::snapshot::PodInfo;
    /// use schedkit::testing::PodBuilder;
    /// let pending = PodInfo::new(PodBuilder::new("p").build()).unwrap();
    /// assert_eq!(pending.node_name(), "");
    /// let assumed = pending.assumed_on("node-1");
    /// assert_eq!(assumed.node_name(), "node-1");
    /// assert!(assumed.is_assigned());
    /// assert!(assumed.pod.spec.node_name.is_empty(), "the object is shared, not copied");
    /// assert_eq!(assumed.bound_pod().spec.node_name, "node-1");
    /// ```
    pub fn node_name(&self) -> &str {
        match &self.assumed_node {
            Some(node) => node.as_str(),
            None => &self.pod.spec.node_name,
        }
    }

    /// The node the scheduler assumed this pod on, if it did (not the bound node).
    #[inline]
    pub(crate) fn assumed_node(&self) -> Option<Symbol> {
        self.assumed_node.as_ref().map(HeldSymbol::symbol)
    }

    /// Whether the pod is assigned to a node (assumed by the scheduler or bound).
    #[inline]
    pub fn is_assigned(&self) -> bool {
        self.assumed_node.is_some() || !self.pod.spec.node_name.is_empty()
    }

    /// This pod assumed on `node`: the same object and facts, with
    /// [`PodInfo::node_name`] answering `node`. Cheap: the pod is shared, not copied.
    #[must_use]
    pub fn assumed_on(&self, node: &str) -> PodInfo {
        // The cache's NodeInfo already holds the name: this takes one more reference.
        self.assumed_on_held(HeldSymbol::new(node))
    }

    /// [`PodInfo::assumed_on`] with a reference the caller already has (e.g. a copy of
    /// the node's own), which spares the lookup of the name.
    pub(crate) fn assumed_on_held(&self, node: HeldSymbol) -> PodInfo {
        let mut info = self.clone();
        info.assumed_node = Some(node);
        info
    }

    /// This pod with the assumption undone: pending again, as the API object says.
    pub(crate) fn unassumed(&self) -> PodInfo {
        let mut info = self.clone();
        info.assumed_node = None;
        if !info.pod.spec.node_name.is_empty() {
            Arc::make_mut(&mut info.pod).spec.node_name.clear();
        }
        info
    }

    /// The pod object as its binding makes it: `spec.nodeName` set to
    /// [`PodInfo::node_name`]. Copies the pod when the scheduler assumed it.
    pub fn bound_pod(&self) -> std::borrow::Cow<'_, Pod> {
        match &self.assumed_node {
            Some(node) if self.pod.spec.node_name != node.as_str() => {
                let mut pod = (*self.pod).clone();
                pod.spec.node_name = node.as_str().to_owned();
                std::borrow::Cow::Owned(pod)
            }
            _ => std::borrow::Cow::Borrowed(&*self.pod),
        }
    }

    /// Priority.
    pub fn priority(&self) -> i32 {
        self.pod.priority()
    }

    /// Whether the pod sets pod-level requests ([`Pod::has_pod_level_requests`]).
    #[inline]
    pub fn has_pod_level_requests(&self) -> bool {
        self.pod_level.is_some()
    }

    /// Effective requests with the `PodLevelResources` gate on or off
    /// ([`Pod::requests_with`]; upstream `SkipPodLevelResources: !enabled`).
    ///
    /// ```
    /// use schedkit::model::{ResourceList, ResourceRequirements};
    /// use schedkit::snapshot::PodInfo;
    /// use schedkit::testing::PodBuilder;
    /// let pod = PodBuilder::new("p").cpu("1").pod_request("cpu", "2").build();
    /// let info = PodInfo::new(pod).unwrap();
    /// assert_eq!(info.requests_for(true).milli_cpu, 2000);
    /// assert_eq!(info.requests_for(false).milli_cpu, 1000);
    /// ```
    #[inline]
    pub fn requests_for(&self, pod_level_resources: bool) -> &Resources {
        match &self.pod_level {
            Some(v) if !pod_level_resources => &v.requests_off,
            _ => &self.requests,
        }
    }

    /// Requests with the scoring defaults as a node counts the pod, with the gate on or
    /// off ([`Pod::non_zero_requests_for`]).
    #[inline]
    pub fn non_zero_requests_for(&self, pod_level_resources: bool) -> &Resources {
        match &self.pod_level {
            Some(v) if !pod_level_resources => &v.non_zero_off,
            _ => &self.non_zero_requests,
        }
    }

    /// Requests as the resource scorers weigh the incoming pod, with the gate on or off
    /// ([`Pod::scoring_requests_for`]).
    #[inline]
    pub fn scoring_requests_for(&self, pod_level_resources: bool) -> &Resources {
        match &self.pod_level {
            Some(v) if pod_level_resources => &v.scoring,
            Some(v) => &v.non_zero_off,
            None => &self.non_zero_requests,
        }
    }
}
