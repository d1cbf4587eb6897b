//! NodePorts: a pod's host ports must be free on the node
//! (upstream `plugins/nodeports/node_ports.go`).

use std::sync::Arc;

use smallvec::SmallVec;

use crate::framework::{CycleState, ExtensionPoints, FilterPlugin, Plugin, PreFilterPlugin, PreFilterResult, Status};
use crate::plugins::names;
use crate::snapshot::{HostPort, NodeInfo, NodeList, PodInfo, Snapshot};

/// Upstream `ErrReason`.
pub const ERR_REASON: &str = "node(s) didn't have free ports for the requested pod ports";

/// The NodePorts plugin.
///
/// PreFilter records the pod's host ports and Skips pods without any (so Filter
/// doesn't run for them). Like upstream it has no AddPod/RemovePod extensions: its
/// state is the incoming pod's own ports, which other pods can't change; a dry run's
/// added or removed pods show up in the node's used ports directly.
#[derive(Debug, Clone, Default)]
pub struct NodePorts;

#[derive(Debug, Clone)]
struct WantedPorts(SmallVec<[HostPort; 2]>);

impl Plugin for NodePorts {
    fn name(&self) -> &str {
        names::NODE_PORTS
    }
    fn register(self: Arc<Self>, p: &mut ExtensionPoints) {
        p.pre_filter(self.clone()).filter(self.clone()).sign(self);
    }
}

impl PreFilterPlugin for NodePorts {
    fn pre_filter(&self, state: &mut CycleState, pod: &PodInfo, _: &Snapshot) -> (Option<PreFilterResult>, Status) {
        if pod.host_ports.is_empty() {
            return (None, Status::SKIP);
        }
        state.write(WantedPorts(pod.host_ports.clone()));
        (None, Status::SUCCESS)
    }

    /// PreFilter keeps the pod's host ports: a function of the pod.
    fn pre_filter_reuse(&self, _: &PodInfo) -> crate::framework::PreReuse {
        crate::framework::PreReuse::Pod
    }
}

/// Whether any wanted port conflicts with one in use (upstream `fitsPorts`).
pub fn fits_ports(wanted: &[HostPort], node: &NodeInfo) -> bool {
    !wanted.iter().any(|w| node.used_ports().iter().any(|u| u.conflicts(w)))
}

impl FilterPlugin for NodePorts {
    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        let wanted = state.read::<WantedPorts>().map_or(pod.host_ports.as_slice(), |w| w.0.as_slice());
        if fits_ports(wanted, node) { Status::SUCCESS } else { Status::unschedulable(ERR_REASON) }
    }

    /// [`FilterPlugin::filter`] over a chunk, reading the PreFilter state once.
    fn filter_nodes(&self, state: &CycleState, pod: &PodInfo, nodes: NodeList<'_>, statuses: &mut [Status]) -> u64 {
        let wanted = state.read::<WantedPorts>().map_or(pod.host_ports.as_slice(), |w| w.0.as_slice());
        crate::plugins::helper::filter_each(nodes, statuses, |node| {
            (!fits_ports(wanted, node)).then(|| Status::unschedulable(ERR_REASON))
        })
    }
}

/// Upstream `NodePorts.SignPod` (`HostPortsSigner`): the sorted unique host ports of
/// containers and init containers. Upstream signs the port numbers alone; here the
/// host IP and protocol take part too, since Filter compares them (stricter: two pods
/// equal here are equal upstream).
impl crate::framework::SignPlugin for NodePorts {
    fn sign_pod(&self, pod: &PodInfo, fragments: &mut crate::framework::SignFragments) -> Status {
        fragments.add(crate::framework::HOST_PORTS_SIGNER, |w| {
            w.sorted(pod.host_ports.iter(), true, |w, hp| {
                w.i32(hp.port).symbol(hp.ip).u8(hp.protocol as u8);
            });
        });
        Status::SUCCESS
    }
}
