//! Why a pod fits nowhere, in upstream's words (`framework.FitError`, `types.go`).

use std::collections::BTreeMap;
use std::fmt;

use crate::framework::NodeToStatus;

/// What the cycle learned about each node, for PostFilter and the error message.
#[derive(Debug, Clone, Default)]
pub struct Diagnosis {
    /// Per-node Filter outcomes (and the status of nodes not evaluated).
    pub node_to_status: NodeToStatus,
    /// Plugins that rejected the pod somewhere (sorted, deduplicated).
    pub unschedulable_plugins: Vec<&'static str>,
    /// A PreFilter rejection's message, which replaces the per-node histogram.
    pub pre_filter_msg: Option<String>,
    /// What PostFilter (e.g. preemption) said.
    pub post_filter_msg: Option<String>,
}

/// A pod fits no node.
///
/// Displays exactly as upstream's `FitError.Error()` (`pkg/scheduler/framework/types.go`):
/// `0/5 nodes are available: 2 node(s) had untolerated taint {gpu: true}, 3
/// Insufficient cpu. preemption: 0/5 nodes are available: 5 Preemption is not helpful
/// for scheduling.` — reasons counted per node and sorted as strings, a PreFilter
/// rejection's message instead of the histogram, then the PostFilter message as it
/// came (see `write_fit_message` in `framework/fit_message.rs` for the rules).
#[derive(Debug, Clone)]
pub struct FitError {
    /// `namespace/name` of the pod.
    pub pod: String,
    /// Nodes in the snapshot.
    pub num_all_nodes: usize,
    /// Details.
    pub diagnosis: Diagnosis,
    /// Node nominated by PostFilter, if preemption made room.
    pub nominated_node: Option<String>,
}

impl FitError {
    /// Reason -> number of nodes that gave it.
    pub fn reason_histogram(&self) -> BTreeMap<String, usize> {
        crate::framework::reason_histogram(&self.diagnosis.node_to_status, self.num_all_nodes)
    }
}

impl fmt::Display for FitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = &self.diagnosis;
        crate::framework::write_fit_message(
            f,
            self.num_all_nodes,
            &d.node_to_status,
            d.pre_filter_msg.as_deref(),
            d.post_filter_msg.as_deref(),
        )
    }
}

impl std::error::Error for FitError {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::{Code, Status};

    fn fit(n: usize, statuses: &[(usize, &str)], pre: &str, post: &str) -> FitError {
        let mut d = Diagnosis {
            pre_filter_msg: (!pre.is_empty()).then(|| pre.to_owned()),
            post_filter_msg: (!post.is_empty()).then(|| post.to_owned()),
            ..Diagnosis::default()
        };
        d.node_to_status.statuses =
            statuses.iter().map(|(i, r)| (*i, Status::new(Code::Unschedulable, (*r).to_owned()))).collect();
        d.node_to_status.absent = Some(Status::from_code(Code::UnschedulableAndUnresolvable));
        FitError { pod: "default/p".to_owned(), num_all_nodes: n, diagnosis: d, nominated_node: None }
    }

    /// Upstream `TestFitError_Error` (pkg/scheduler/framework/types_test.go), every case.
    #[test]
    fn upstream_fit_error_messages() {
        let pf = "Node(s) failed PreFilter plugin FalsePreFilter";
        let f1 = "Node(s) failed Filter plugin FalseFilter-1";
        let f2 = "Node(s) failed Filter plugin FalseFilter-2";
        let post = "Error running PostFilter plugin FailedPostFilter";
        let cases: [(&str, FitError, &str); 8] = [
            (
                "nodes failed Prefilter plugin",
                fit(3, &[(0, pf), (1, pf), (2, pf)], pf, ""),
                "0/3 nodes are available: Node(s) failed PreFilter plugin FalsePreFilter.",
            ),
            (
                "nodes failed Prefilter plugin and the preemption also failed",
                fit(3, &[(0, pf), (1, pf), (2, pf)], pf, post),
                "0/3 nodes are available: Node(s) failed PreFilter plugin FalsePreFilter. Error running PostFilter plugin FailedPostFilter",
            ),
            (
                "nodes failed one Filter plugin with an empty PostFilterMsg",
                fit(3, &[(0, f1), (1, f1), (2, f1)], "", ""),
                "0/3 nodes are available: 3 Node(s) failed Filter plugin FalseFilter-1.",
            ),
            (
                "nodes failed one Filter plugin with a non-empty PostFilterMsg",
                fit(3, &[(0, f1), (1, f1), (2, f1)], "", post),
                "0/3 nodes are available: 3 Node(s) failed Filter plugin FalseFilter-1. Error running PostFilter plugin FailedPostFilter",
            ),
            (
                "nodes failed two Filter plugins with an empty PostFilterMsg",
                fit(3, &[(0, f1), (1, f1), (2, f2)], "", ""),
                "0/3 nodes are available: 1 Node(s) failed Filter plugin FalseFilter-2, 2 Node(s) failed Filter plugin FalseFilter-1.",
            ),
            (
                "nodes failed two Filter plugins with a non-empty PostFilterMsg",
                fit(3, &[(0, f1), (1, f1), (2, f2)], "", post),
                "0/3 nodes are available: 1 Node(s) failed Filter plugin FalseFilter-2, 2 Node(s) failed Filter plugin FalseFilter-1. Error running PostFilter plugin FailedPostFilter",
            ),
            (
                "failed to Permit on node",
                fit(1, &[(0, "Node failed Permit plugin Permit-1")], "", ""),
                "0/1 nodes are available: 1 Node failed Permit plugin Permit-1.",
            ),
            (
                "failed to Reserve on node",
                fit(1, &[(0, "Node failed Reserve plugin Reserve-1")], "", ""),
                "0/1 nodes are available: 1 Node failed Reserve plugin Reserve-1.",
            ),
        ];
        for (name, f, want) in cases {
            assert_eq!(f.to_string(), want, "{name}");
        }
    }

    /// The absent-nodes status counts once per node not listed; the preemption
    /// message keeps its own single period.
    #[test]
    fn absent_nodes_and_the_preemption_message() {
        let mut f = fit(5, &[(0, "Insufficient cpu"), (3, "Insufficient cpu")], "", "");
        f.diagnosis.node_to_status.absent =
            Some(Status::unresolvable("node(s) didn't match Pod's node affinity/selector"));
        f.diagnosis.post_filter_msg =
            Some("preemption: 0/5 nodes are available: 5 Preemption is not helpful for scheduling.".to_owned());
        assert_eq!(
            f.to_string(),
            "0/5 nodes are available: 2 Insufficient cpu, 3 node(s) didn't match Pod's node affinity/selector. \
             preemption: 0/5 nodes are available: 5 Preemption is not helpful for scheduling."
        );
        assert!(!f.to_string().contains(".."));
    }
}
