//! Domain counts carried across cycles (see [`crate::plugins::workload_memo`]), so
//! PreFilter recounts only nodes that changed since the last pod with the same
//! constraints; the counts are exactly upstream `calPreFilterState`'s.

use ahash::AHashMap;
use smallvec::SmallVec;

use super::common::{Constraint, node_has_all_keys};
use crate::model::{Labels, NodeSelector, Symbol, Toleration};
use crate::plugins::workload_memo::{Contribution, WorkloadMemo};
use crate::snapshot::{NodeInfo, PodInfo, Snapshot};

/// Pods of one workload share a key: the same namespace and constraints, and the
/// same node affinity / tolerations when a constraint honors them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MemoKey {
    namespace: Symbol,
    constraints: Vec<Constraint>,
    node_selector: Option<Labels>,
    /// Only set when affinity is honored (`node_selector` says whether it is).
    required_affinity: Option<NodeSelector>,
    tolerations: Option<Vec<Toleration>>,
    require_all: bool,
}

impl MemoKey {
    fn new(pod: &PodInfo, constraints: &[Constraint], require_all: bool) -> Self {
        let spec = &pod.pod.spec;
        let affinity = constraints.iter().any(|c| c.honor_node_affinity);
        let taints = constraints.iter().any(|c| c.honor_node_taints);
        MemoKey {
            namespace: pod.namespace,
            constraints: constraints.to_vec(),
            node_selector: affinity.then(|| spec.node_selector.clone()),
            required_affinity: if affinity { pod.pod.node_affinity().and_then(|a| a.required.clone()) } else { None },
            tolerations: taints.then(|| spec.tolerations.clone()),
            require_all,
        }
    }

    /// Whether `MemoKey::new(pod, constraints, require_all)` would equal this key,
    /// field by field, without copying the pod's terms into a new key.
    fn is(&self, pod: &PodInfo, constraints: &[Constraint], require_all: bool) -> bool {
        let spec = &pod.pod.spec;
        let affinity = constraints.iter().any(|c| c.honor_node_affinity);
        let taints = constraints.iter().any(|c| c.honor_node_taints);
        let required = if affinity { pod.pod.node_affinity().and_then(|a| a.required.as_ref()) } else { None };
        self.namespace == pod.namespace
            && self.constraints.as_slice() == constraints
            && self.node_selector.as_ref() == affinity.then_some(&spec.node_selector)
            && self.required_affinity.as_ref() == required
            && self.tolerations.as_deref() == taints.then_some(spec.tolerations.as_slice())
            && self.require_all == require_all
    }
}

/// Per constraint: domain -> (matching pods, eligible nodes).
type Domains = Vec<AHashMap<Symbol, (i64, u32)>>;

/// One node's share: per constraint, the node's domain and matching-pod count, or
/// `None` when the node takes no part (missing keys or excluded by a node inclusion
/// policy).
#[derive(Debug, Default)]
pub(crate) struct DomainShare(SmallVec<[Option<(Symbol, i64)>; 2]>);

impl DomainShare {
    fn new(constraints: &[Constraint], pod: &PodInfo, node: &NodeInfo, require_all: bool) -> Self {
        let labels = &node.node().metadata.labels;
        if require_all && !node_has_all_keys(labels, constraints) {
            return DomainShare(constraints.iter().map(|_| None).collect());
        }
        DomainShare(
            constraints
                .iter()
                .map(|c| {
                    c.includes_node(&pod.pod, node)
                        .then(|| (labels.get(c.topology_key).unwrap_or(Symbol::EMPTY), c.count_on(node, pod.namespace)))
                })
                .collect(),
        )
    }

    fn apply(&self, domains: &mut Domains, sign: i64) {
        for (i, c) in self.0.iter().enumerate() {
            let Some((value, count)) = *c else { continue };
            let d = domains[i].entry(value).or_insert((0, 0));
            d.0 += sign * count;
            if sign > 0 {
                d.1 += 1;
            } else {
                d.1 = d.1.saturating_sub(1);
                if d.1 == 0 {
                    domains[i].remove(&value);
                }
            }
        }
    }
}

impl Contribution for DomainShare {
    type Key = MemoKey;
    type Totals = Domains;

    fn empty_totals(key: &MemoKey) -> Domains {
        key.constraints.iter().map(|_| AHashMap::new()).collect()
    }

    fn add_to(&self, _key: &MemoKey, domains: &mut Domains) {
        self.apply(domains, 1);
    }

    fn sub_from(&self, _key: &MemoKey, domains: &mut Domains) {
        self.apply(domains, -1);
    }
}

/// A few workloads' domain counts.
pub(crate) type CountMemo = WorkloadMemo<DomainShare>;

impl CountMemo {
    /// Calls `f` with, per constraint, domain -> (matching pods, eligible nodes) for
    /// `pod` over every node of `snapshot` (upstream `calPreFilterState`'s
    /// `TpValueToMatchNum`, or PreScore's all-node count with `require_all` false for
    /// system defaults), recounting only nodes whose `NodeInfo` changed since this
    /// workload's last cycle. A node without a constraint's key counts in the `""`
    /// domain when `require_all` is false, as upstream.
    pub(crate) fn with_domains<R>(
        &self,
        pod: &PodInfo,
        constraints: &[Constraint],
        snapshot: &Snapshot,
        require_all: bool,
        f: impl FnOnce(&[AHashMap<Symbol, (i64, u32)>]) -> R,
    ) -> R {
        self.with_totals_by(
            |k| k.is(pod, constraints, require_all),
            || MemoKey::new(pod, constraints, require_all),
            snapshot,
            |node| DomainShare::new(constraints, pod, node, require_all),
            |d| f(d),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{NodeInclusionPolicy, TaintEffect, TopologySpreadConstraint, UnsatisfiableConstraintAction};
    use crate::testing::PodBuilder;

    /// `MemoKey::is` answers what comparing two built keys answers, over pods that
    /// differ in namespace, node selector, required affinity and tolerations, under
    /// constraints that honor node affinity and taints or not.
    #[test]
    fn is_agrees_with_equal_keys() {
        let pods: Vec<PodInfo> = (0..16u32)
            .map(|bits| {
                let mut b = PodBuilder::new("p");
                if bits & 1 != 0 {
                    b = b.namespace("other");
                }
                if bits & 2 != 0 {
                    b = b.node_selector("disk", "ssd");
                }
                if bits & 4 != 0 {
                    b = b.toleration("k", None, Some(TaintEffect::NoSchedule));
                }
                let mut pod = b.build();
                if bits & 8 != 0 {
                    pod.spec.affinity = Some(
                        serde_json::from_str(
                            r#"{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":
                              [{"matchExpressions":[{"key":"zone","operator":"In","values":["a"]}]}]}}}"#,
                        )
                        .unwrap(),
                    );
                }
                PodInfo::new(pod).unwrap()
            })
            .collect();
        let constraint = |affinity: bool, taints: bool| {
            let policy = |on: bool| Some(if on { NodeInclusionPolicy::Honor } else { NodeInclusionPolicy::Ignore });
            let tsc = TopologySpreadConstraint {
                max_skew: 1,
                topology_key: Symbol::intern("zone"),
                when_unsatisfiable: UnsatisfiableConstraintAction::DoNotSchedule,
                label_selector: None,
                min_domains: None,
                node_affinity_policy: policy(affinity),
                node_taints_policy: policy(taints),
                match_label_keys: Vec::new(),
            };
            super::super::common::filter_constraints(
                &[tsc],
                &Labels::new(),
                UnsatisfiableConstraintAction::DoNotSchedule,
            )
        };
        let sets = [constraint(false, false), constraint(true, false), constraint(false, true), constraint(true, true)];
        let mut hits = 0;
        for a in &pods {
            for b in &pods {
                for ca in &sets {
                    for cb in &sets {
                        for (ra, rb) in [(true, true), (true, false)] {
                            let built = MemoKey::new(a, ca, ra);
                            let want = built == MemoKey::new(b, cb, rb);
                            hits += usize::from(want);
                            assert_eq!(built.is(b, cb, rb), want);
                        }
                    }
                }
            }
        }
        assert!(hits > 0);
    }
}
