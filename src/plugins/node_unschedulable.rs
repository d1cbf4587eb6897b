//! NodeUnschedulable: cordoned nodes take only pods that tolerate the unschedulable
//! taint (upstream `plugins/nodeunschedulable/node_unschedulable.go`).

use std::sync::Arc;

use crate::framework::{CycleState, ExtensionPoints, FilterPlugin, Plugin, Status};
use crate::model::{Taint, TaintEffect};
use crate::plugins::names;
use crate::snapshot::{NodeInfo, NodeList, PodInfo};

/// The taint key a cordoned node implies.
pub const TAINT_NODE_UNSCHEDULABLE: &str = "node.kubernetes.io/unschedulable";
/// Upstream `ErrReasonUnschedulable`.
pub const ERR_REASON_UNSCHEDULABLE: &str = "node(s) were unschedulable";

/// The NodeUnschedulable plugin.
#[derive(Debug, Clone, Default)]
pub struct NodeUnschedulable;

impl Plugin for NodeUnschedulable {
    fn name(&self) -> &str {
        names::NODE_UNSCHEDULABLE
    }
    fn register(self: Arc<Self>, p: &mut ExtensionPoints) {
        p.filter(self.clone()).sign(self);
    }
}

impl FilterPlugin for NodeUnschedulable {
    fn filter(&self, _: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        if !node.node().spec.unschedulable {
            return Status::SUCCESS;
        }
        let taint = Taint::new(TAINT_NODE_UNSCHEDULABLE, "", TaintEffect::NoSchedule);
        if pod.pod.spec.tolerations.iter().any(|t| t.tolerates(&taint)) {
            Status::SUCCESS
        } else {
            Status::unresolvable(ERR_REASON_UNSCHEDULABLE)
        }
    }

    /// [`FilterPlugin::filter`] over a chunk: whether the pod tolerates the
    /// unschedulable taint is worked out once, at the first cordoned node.
    fn filter_nodes(&self, _: &CycleState, pod: &PodInfo, nodes: NodeList<'_>, statuses: &mut [Status]) -> u64 {
        let mut tolerated = None;
        crate::plugins::helper::filter_flagged(nodes, statuses, crate::snapshot::node_flags::UNSCHEDULABLE, |_| {
            let ok = *tolerated.get_or_insert_with(|| {
                let taint = Taint::new(TAINT_NODE_UNSCHEDULABLE, "", TaintEffect::NoSchedule);
                pod.pod.spec.tolerations.iter().any(|t| t.tolerates(&taint))
            });
            (!ok).then(|| Status::unresolvable(ERR_REASON_UNSCHEDULABLE))
        })
    }
}

/// Upstream `NodeUnschedulable.SignPod`: Filter reads only the tolerations.
impl crate::framework::SignPlugin for NodeUnschedulable {
    fn sign_pod(&self, pod: &PodInfo, fragments: &mut crate::framework::SignFragments) -> Status {
        fragments.add(crate::framework::TOLERATIONS_SIGNER, |w| {
            w.tolerations(&pod.pod.spec.tolerations);
        });
        Status::SUCCESS
    }
}
