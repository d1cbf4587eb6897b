//! The selectors default spread constraints use, in place of upstream's Service,
//! ReplicationController, ReplicaSet and StatefulSet listers
//! (`pkg/scheduler/framework/plugins/helper/spread.go`, `DefaultSelector`).

use std::sync::Arc;

use parking_lot::RwLock;
use smallvec::SmallVec;

use crate::model::{LabelOperator, LabelSelector, LabelSelectorRequirement, Labels, Symbol};
use crate::snapshot::PodInfo;

/// The kind of object a workload selector comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WorkloadKind {
    /// A Service: its `spec.selector` label set.
    Service,
    /// A ReplicationController: its `spec.selector` label set.
    ReplicationController,
    /// A ReplicaSet: its `spec.selector` label selector.
    ReplicaSet,
    /// A StatefulSet: its `spec.selector` label selector.
    StatefulSet,
}

#[derive(Debug, Clone)]
struct Workload {
    kind: WorkloadKind,
    namespace: Symbol,
    name: String,
    selector: LabelSelector,
}

/// Services and controllers whose selectors default spread constraints count pods
/// by, shared between the embedding program (which keeps it current) and the
/// PodTopologySpread plugin (which reads it once per cycle for pods that have no
/// constraints of their own). Cheap to clone; clones share the same registry.
///
/// Upstream builds the default selector from every Service in the pod's namespace
/// whose selector matches the pod, plus the selector of the pod's controller found
/// through its controller owner reference. schedkit's pods carry no owner
/// references, so the controller is the first ReplicationController, ReplicaSet or
/// StatefulSet registered in the pod's namespace whose selector matches the pod
/// (Kubernetes warns against overlapping controller selectors, so normally there
/// is exactly one).
///
/// ```
/// use schedkit::model::{LabelSelector, Labels};
/// use schedkit::plugins::pod_topology_spread::{WorkloadKind, WorkloadSelectors};
/// use schedkit::snapshot::PodInfo;
/// use schedkit::testing::PodBuilder;
/// let workloads = WorkloadSelectors::default();
/// workloads.set("default", "web", WorkloadKind::Service,
///     LabelSelector::from_labels(Labels::from_pairs([("app", "web")])));
/// let pod = PodInfo::new(PodBuilder::new("web-1").label("app", "web").build()).unwrap();
/// let sel = workloads.default_selector(&pod);
/// assert!(sel.matches(&Labels::from_pairs([("app", "web"), ("x", "y")])));
/// let lone = PodInfo::new(PodBuilder::new("lone").build()).unwrap();
/// assert!(workloads.default_selector(&lone).is_empty());
/// ```
#[derive(Debug, Clone, Default)]
pub struct WorkloadSelectors {
    inner: Arc<RwLock<Vec<Workload>>>,
}

impl WorkloadSelectors {
    /// Adds or replaces the selector of the workload `kind` `namespace/name`. For
    /// Services and ReplicationControllers only `matchLabels` is meaningful (their
    /// selectors are label sets); `matchExpressions` are kept as given.
    pub fn set(&self, namespace: &str, name: &str, kind: WorkloadKind, selector: LabelSelector) {
        let namespace = Symbol::intern(namespace);
        let mut w = self.inner.write();
        match w.iter_mut().find(|x| x.kind == kind && x.namespace == namespace && x.name == name) {
            Some(x) => x.selector = selector,
            None => w.push(Workload { kind, namespace, name: name.to_owned(), selector }),
        }
    }

    /// Removes a workload; returns whether it was present.
    pub fn remove(&self, namespace: &str, name: &str, kind: WorkloadKind) -> bool {
        let Some(namespace) = Symbol::lookup(namespace) else { return false };
        let mut w = self.inner.write();
        let before = w.len();
        w.retain(|x| !(x.kind == kind && x.namespace == namespace && x.name == name));
        w.len() != before
    }

    /// Number of workloads registered.
    pub fn len(&self) -> usize {
        self.inner.read().len()
    }

    /// Whether none are registered.
    pub fn is_empty(&self) -> bool {
        self.inner.read().is_empty()
    }

    /// The selector default constraints use for `pod`, as upstream
    /// `helper.DefaultSelector`: the merged label sets of matching Services (later
    /// ones win on a shared key), then the pod's controller's selector. Empty when
    /// nothing matches, in which case default constraints do not apply.
    pub fn default_selector(&self, pod: &PodInfo) -> LabelSelector {
        let labels = &pod.pod.metadata.labels;
        let mut set = Labels::new();
        let mut exprs: Vec<LabelSelectorRequirement> = Vec::new();
        let w = self.inner.read();
        let in_ns = || w.iter().filter(|x| x.namespace == pod.namespace);
        for svc in in_ns().filter(|x| x.kind == WorkloadKind::Service) {
            // Upstream skips Services without a selector; an empty one selects nothing here.
            if !svc.selector.is_empty() && svc.selector.matches(labels) {
                for (k, v) in svc.selector.match_labels.iter() {
                    set.insert(k, v);
                }
            }
        }
        let controller = in_ns().find(|x| x.kind != WorkloadKind::Service && x.selector.matches(labels));
        if let Some(c) = controller {
            if c.kind == WorkloadKind::ReplicationController {
                for (k, v) in c.selector.match_labels.iter() {
                    set.insert(k, v);
                }
            } else {
                exprs.extend(c.selector.match_labels.iter().map(|(key, v)| LabelSelectorRequirement {
                    key,
                    operator: LabelOperator::In,
                    values: SmallVec::from_slice(&[v]),
                }));
                exprs.extend(c.selector.match_expressions.iter().cloned());
            }
        }
        LabelSelector { match_labels: set, match_expressions: exprs }
    }
}
