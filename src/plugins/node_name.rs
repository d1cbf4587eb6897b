//! NodeName: a pod naming a node in `spec.nodeName` fits only there
//! (upstream `plugins/nodename/node_name.go`).

use std::sync::Arc;

use crate::framework::{CycleState, ExtensionPoints, FilterPlugin, Plugin, Status};
use crate::plugins::names;
use crate::snapshot::{NodeInfo, PodInfo};

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
        p.filter(self);
    }
}

impl FilterPlugin for NodeName {
    fn filter(&self, _: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        let want = &pod.pod.spec.node_name;
        if want.is_empty() || want == node.node().name() { Status::SUCCESS } else { Status::unresolvable(ERR_REASON) }
    }
}
