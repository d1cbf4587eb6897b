//! Constraint preparation shared by Filter and Score (upstream
//! `pkg/scheduler/framework/plugins/podtopologyspread/common.go`).

use smallvec::SmallVec;

use crate::model::{
    LabelOperator, LabelSelector, LabelSelectorRequirement, Labels, NodeInclusionPolicy, Pod, Symbol, TaintEffect,
    TopologySpreadConstraint, UnsatisfiableConstraintAction,
};
use crate::snapshot::{NodeInfo, PodInfo};

/// A spread constraint ready for matching: defaults applied and `matchLabelKeys`
/// merged into the selector (upstream's internal `topologySpreadConstraint`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Constraint {
    pub(crate) max_skew: i32,
    pub(crate) topology_key: Symbol,
    /// `None` selects nothing (a constraint without a `labelSelector`).
    pub(crate) selector: Option<LabelSelector>,
    pub(crate) min_domains: i32,
    pub(crate) honor_node_affinity: bool,
    pub(crate) honor_node_taints: bool,
}

impl Constraint {
    /// Upstream `Selector.Matches`: used for the incoming pod's self-match and for
    /// AddPod/RemovePod. An empty selector matches every pod here.
    #[inline]
    pub(crate) fn selects(&self, labels: &Labels) -> bool {
        self.selector.as_ref().is_some_and(|s| s.matches(labels))
    }

    /// Whether an existing pod counts towards its domain, as upstream
    /// `countPodsMatchSelector`: an empty selector counts nothing, terminating pods
    /// and pods of other namespaces are skipped.
    #[inline]
    pub(crate) fn counts(&self, existing: &PodInfo, namespace: Symbol) -> bool {
        let Some(sel) = &self.selector else { return false };
        !sel.is_empty()
            && existing.namespace == namespace
            && existing.pod.metadata.deletion_timestamp.is_none()
            && sel.matches(&existing.pod.metadata.labels)
    }

    /// Number of pods on `node` that count towards this constraint.
    pub(crate) fn count_on(&self, node: &NodeInfo, namespace: Symbol) -> i64 {
        match &self.selector {
            Some(sel) if !sel.is_empty() => node.pods().iter().filter(|p| self.counts(p, namespace)).count() as i64,
            _ => 0,
        }
    }

    /// Upstream `matchNodeInclusionPolicies`: whether `node` takes part in the
    /// domain counts under this constraint's nodeAffinityPolicy/nodeTaintsPolicy.
    #[inline]
    pub(crate) fn includes_node(&self, pod: &Pod, node: &NodeInfo) -> bool {
        (!self.honor_node_affinity || required_node_affinity_matches(pod, node))
            && (!self.honor_node_taints || tolerates_do_not_schedule_taints(pod, node))
    }
}

/// Upstream `nodeaffinity.GetRequiredNodeAffinity(pod).Match(node)`: the pod's
/// `nodeSelector` and its required node affinity terms.
#[inline]
pub(crate) fn required_node_affinity_matches(pod: &Pod, node: &NodeInfo) -> bool {
    let labels = &node.node().metadata.labels;
    if !pod.spec.node_selector.iter().all(|(k, v)| labels.get(k) == Some(v)) {
        return false;
    }
    match pod.node_affinity().and_then(|a| a.required.as_ref()) {
        Some(sel) => sel.matches(labels, node.name()),
        None => true,
    }
}

/// Upstream `FindMatchingUntoleratedTaint` with `DoNotScheduleTaintsFilterFunc`:
/// whether every NoSchedule and NoExecute taint of the node is tolerated.
#[inline]
pub(crate) fn tolerates_do_not_schedule_taints(pod: &Pod, node: &NodeInfo) -> bool {
    node.node()
        .spec
        .taints
        .iter()
        .filter(|t| matches!(t.effect, TaintEffect::NoSchedule | TaintEffect::NoExecute))
        .all(|t| pod.spec.tolerations.iter().any(|tol| tol.tolerates(t)))
}

/// Upstream `nodeLabelsMatchSpreadConstraints`: the node has every topology key.
#[inline]
pub(crate) fn node_has_all_keys(labels: &Labels, constraints: &[Constraint]) -> bool {
    constraints.iter().all(|c| labels.contains_key(c.topology_key))
}

/// Upstream `filterTopologySpreadConstraints`: the constraints with `action`,
/// with upstream's defaults (minDomains 1, nodeAffinityPolicy Honor,
/// nodeTaintsPolicy Ignore) and `matchLabelKeys` merged into the selector as `In`
/// requirements with the incoming pod's values (`mergeLabelSetWithSelector`; a
/// missing selector stays "select nothing").
pub(crate) fn filter_constraints(
    constraints: &[TopologySpreadConstraint],
    pod_labels: &Labels,
    action: UnsatisfiableConstraintAction,
) -> Vec<Constraint> {
    constraints
        .iter()
        .filter(|c| c.when_unsatisfiable == action)
        .map(|c| {
            let mut selector = c.label_selector.clone();
            if let Some(sel) = &mut selector {
                for &key in &c.match_label_keys {
                    if let Some(value) = pod_labels.get(key) {
                        sel.match_expressions.push(LabelSelectorRequirement {
                            key,
                            operator: LabelOperator::In,
                            values: SmallVec::from_slice(&[value]),
                        });
                    }
                }
            }
            Constraint {
                max_skew: c.max_skew,
                topology_key: c.topology_key,
                selector,
                min_domains: c.min_domains.unwrap_or(1),
                honor_node_affinity: c.node_affinity_policy.unwrap_or(NodeInclusionPolicy::Honor)
                    == NodeInclusionPolicy::Honor,
                honor_node_taints: c.node_taints_policy.unwrap_or(NodeInclusionPolicy::Ignore)
                    == NodeInclusionPolicy::Honor,
            }
        })
        .collect()
}
