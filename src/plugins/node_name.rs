//! NodeName: a pod naming a node in `spec.nodeName` fits only there
//! (upstream `plugins/nodename/node_name.go`).

use std::sync::Arc;

use crate::framework::{CycleState, ExtensionPoints, FilterPlugin, Plugin, PreFilterPlugin, PreFilterResult, Status};
use crate::plugins::names;
use crate::snapshot::{NodeInfo, PodInfo, Snapshot};

/// Upstream `ErrReason`.
pub const ERR_REASON: &str = "node(s) didn't match the requested node name";

/// The NodeName plugin.
#[derive(Debug, Clone, Default)]
pub struct NodeName;

impl Plugin for NodeName {
    fn name(&self) -> &str {
        names::NODE_NAME
    }
    fn register(self: Arc<Self>, p: &mut ExtensionPoints) {
        p.pre_filter(self.clone()).filter(self.clone()).sign(self);
    }
}

/// Beyond upstream (which has no PreFilter here): a pod that names no node skips
/// the per-node Filter, which could only succeed. Placements and reasons are
/// unchanged; the scheduling cycle saves a call per node.
impl PreFilterPlugin for NodeName {
    fn pre_filter(&self, _: &mut CycleState, pod: &PodInfo, _: &Snapshot) -> (Option<PreFilterResult>, Status) {
        if pod.pod.spec.node_name.is_empty() { (None, Status::SKIP) } else { (None, Status::SUCCESS) }
    }

    /// PreFilter reads the pod's `spec.nodeName` only.
    fn pre_filter_reuse(&self, _: &PodInfo) -> crate::framework::PreReuse {
        crate::framework::PreReuse::Pod
    }
}

impl FilterPlugin for NodeName {
    fn filter(&self, _: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        let want = &pod.pod.spec.node_name;
        if want.is_empty() || want == node.node().name() { Status::SUCCESS } else { Status::unresolvable(ERR_REASON) }
    }
}

/// Upstream `NodeName.SignPod`: `spec.nodeName`.
impl crate::framework::SignPlugin for NodeName {
    fn sign_pod(&self, pod: &PodInfo, fragments: &mut crate::framework::SignFragments) -> Status {
        fragments.add(crate::framework::NODE_NAME_SIGNER, |w| {
            w.str(&pod.pod.spec.node_name);
        });
        Status::SUCCESS
    }
}
