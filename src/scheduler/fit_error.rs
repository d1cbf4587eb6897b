//! Why a pod fits nowhere, in upstream's words (`framework.FitError`, `types.go`).

use std::collections::BTreeMap;
use std::fmt;

use crate::framework::{NodeToStatus, Status};

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
/// Displays like upstream: `0/5 nodes are available: 3 Insufficient cpu, 2 node(s)
/// had untolerated taint {gpu: true}.` — reasons counted per node, sorted as strings.
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
        let mut h: BTreeMap<String, usize> = BTreeMap::new();
        let nts = &self.diagnosis.node_to_status;
        for (_, s) in &nts.statuses {
            count(&mut h, s, 1);
        }
        if let Some(absent) = &nts.absent {
            let n = self.num_all_nodes.saturating_sub(nts.statuses.len());
            if n > 0 {
                count(&mut h, absent, n);
            }
        }
        h
    }
}

fn count(h: &mut BTreeMap<String, usize>, s: &Status, n: usize) {
    for r in s.reasons() {
        *h.entry(r.to_string()).or_default() += n;
    }
}

impl fmt::Display for FitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "0/{} nodes are available:", self.num_all_nodes)?;
        if let Some(msg) = &self.diagnosis.pre_filter_msg {
            write!(f, " {msg}.")?;
        } else {
            let mut parts: Vec<String> = self.reason_histogram().into_iter().map(|(r, n)| format!("{n} {r}")).collect();
            parts.sort();
            if !parts.is_empty() {
                write!(f, " {}.", parts.join(", "))?;
            }
        }
        if let Some(msg) = &self.diagnosis.post_filter_msg {
            write!(f, " {msg}.")?;
        }
        Ok(())
    }
}

impl std::error::Error for FitError {}
