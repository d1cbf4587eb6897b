//! PreScore, Score and NormalizeScore (upstream
//! `pkg/scheduler/framework/plugins/podtopologyspread/scoring.go`).

use std::sync::Arc;

use ahash::{AHashMap, AHashSet};
use smallvec::SmallVec;

use super::PodTopologySpread;
use super::common::{Constraint, node_has_all_keys};
use crate::framework::{CycleState, MAX_NODE_SCORE, NodeScore, PreScorePlugin, ScorePlugin, Status};
use crate::model::{Symbol, UnsatisfiableConstraintAction};
use crate::snapshot::{NodeInfo, NodeList, PodInfo};

/// What Score reads (upstream `preScoreState`).
#[derive(Debug, Clone)]
pub(crate) struct PreScoreState {
    pub(crate) constraints: Arc<[Constraint]>,
    /// Filtered nodes missing a topology key: they score 0.
    pub(crate) ignored: AHashSet<Symbol>,
    /// Per constraint: domain value -> matching pods; for the hostname key, node
    /// name -> matching pods on that node (upstream counts those in Score; counting
    /// them here keeps Score O(constraints)).
    pub(crate) counts: Vec<AHashMap<Symbol, i64>>,
    /// Per constraint: `ln(domains + 2)` (upstream `topologyNormalizingWeight`).
    pub(crate) weights: SmallVec<[f64; 4]>,
    pub(crate) is_hostname: SmallVec<[bool; 4]>,
}

impl PreScoreState {
    /// Upstream `Score`: the weighted matching-pod count of the node's domains, rounded.
    #[inline]
    fn score(&self, node: &NodeInfo) -> i64 {
        if self.ignored.contains(&node.name()) {
            return 0;
        }
        let labels = &node.node().metadata.labels;
        let mut score = 0.0;
        for (i, c) in self.constraints.iter().enumerate() {
            let Some(value) = labels.get(c.topology_key) else { continue };
            let key = if self.is_hostname[i] { node.name() } else { value };
            let count = self.counts[i].get(&key).copied().unwrap_or(0);
            score += score_for_count(count, c.max_skew, self.weights[i]);
        }
        score.round() as i64
    }
}

/// Upstream `scoreForCount`: `count * weight + (maxSkew - 1)`.
#[inline]
fn score_for_count(count: i64, max_skew: i32, weight: f64) -> f64 {
    count as f64 * weight + f64::from(max_skew - 1)
}

impl PodTopologySpread {
    /// Upstream `initPreScoreState` plus the all-nodes count of `PreScore`; `None`
    /// when the pod has no ScheduleAnyway constraints (own or default).
    pub(crate) fn pre_score_state(&self, pod: &PodInfo, filtered: NodeList<'_>) -> Option<PreScoreState> {
        let all = filtered.snapshot();
        if all.is_empty() {
            return None;
        }
        let constraints = self.constraints(pod, UnsatisfiableConstraintAction::ScheduleAnyway);
        if constraints.is_empty() {
            return None;
        }
        // Only non-system-default rules need every topology key, so nodes without a
        // zone label still get hostname spreading.
        let require_all = !pod.pod.spec.topology_spread_constraints.is_empty() || !self.system_defaulted;
        let is_hostname: SmallVec<[bool; 4]> = constraints.iter().map(|c| c.topology_key == self.hostname).collect();
        let mut ignored = AHashSet::new();
        let mut counts: Vec<AHashMap<Symbol, i64>> = constraints.iter().map(|_| AHashMap::new()).collect();
        for node in filtered.iter() {
            let labels = &node.node().metadata.labels;
            if require_all && !node_has_all_keys(labels, &constraints) {
                ignored.insert(node.name());
                continue;
            }
            for (i, c) in constraints.iter().enumerate() {
                if is_hostname[i] {
                    counts[i].insert(node.name(), c.count_on(node, pod.namespace));
                } else {
                    counts[i].entry(labels.get(c.topology_key).unwrap_or(Symbol::EMPTY)).or_insert(0);
                }
            }
        }
        let weights = constraints
            .iter()
            .enumerate()
            .map(|(i, _)| {
                let size = if is_hostname[i] { filtered.len() - ignored.len() } else { counts[i].len() };
                // Upstream `topologyNormalizingWeight`.
                ((size + 2) as f64).ln()
            })
            .collect();
        // Matching pods of the candidates' domains over every node (hostname counts
        // were taken above, per candidate).
        self.memo.with_domains(pod, &constraints, all, require_all, |domains| {
            for (i, m) in counts.iter_mut().enumerate() {
                if is_hostname[i] {
                    continue;
                }
                for (value, n) in m.iter_mut() {
                    *n = domains[i].get(value).map_or(0, |d| d.0);
                }
            }
        });
        Some(PreScoreState { constraints: constraints.into(), ignored, counts, weights, is_hostname })
    }
}

impl PreScorePlugin for PodTopologySpread {
    /// Counts matching pods of the candidate nodes' domains over all nodes, once per
    /// cycle; Skip when the pod has no ScheduleAnyway constraints or there are no nodes.
    fn pre_score(&self, state: &mut CycleState, pod: &PodInfo, nodes: NodeList<'_>) -> Status {
        match self.pre_score_state(pod, nodes) {
            Some(s) => {
                state.write(s);
                Status::SUCCESS
            }
            None => Status::SKIP,
        }
    }
}

impl ScorePlugin for PodTopologySpread {
    /// The weighted matching-pod count of the node's domains, rounded (lower is
    /// better until normalized). Allocation-free.
    fn score(&self, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        let Some(s) = state.read::<PreScoreState>() else {
            return Err(Status::error("reading \"PreScorePodTopologySpread\" from cycleState: not found"));
        };
        Ok(s.score(node))
    }

    /// [`ScorePlugin::score`] for a batch, reading the PreScore state once.
    fn score_nodes(
        &self,
        state: &CycleState,
        _pod: &PodInfo,
        nodes: NodeList<'_>,
        scores: &mut [NodeScore],
    ) -> Result<(), Status> {
        let Some(s) = state.read::<PreScoreState>() else {
            return Err(Status::error("reading \"PreScorePodTopologySpread\" from cycleState: not found"));
        };
        for (slot, node) in scores.iter_mut().zip(nodes.iter()) {
            slot.score = s.score(node);
        }
        Ok(())
    }

    /// Upstream `NormalizeScore`: `100 * (max + min - score) / max` over the nodes
    /// not ignored (which get 0); all get 100 when the maximum is 0.
    fn normalize(&self, state: &CycleState, _pod: &PodInfo, scores: &mut [NodeScore]) -> Status {
        let Some(s) = state.read::<PreScoreState>() else {
            return Status::error("reading \"PreScorePodTopologySpread\" from cycleState: not found");
        };
        let mut min = i64::MAX;
        let mut max = 0;
        for sc in scores.iter() {
            if !s.ignored.contains(&sc.name) {
                min = min.min(sc.score);
                max = max.max(sc.score);
            }
        }
        for sc in scores.iter_mut() {
            sc.score = if s.ignored.contains(&sc.name) {
                0
            } else if max == 0 {
                MAX_NODE_SCORE
            } else {
                MAX_NODE_SCORE * (max + min - sc.score) / max
            };
        }
        Status::SUCCESS
    }

    /// Upstream `podtopologyspread/scoring.go` NormalizeScore reads only the PreScore state's ignored nodes:
    /// the feasible nodes lacking a constraint's topology label, fixed by the nodes' labels, so the same nodes
    /// with the same raw scores normalize alike.
    fn normalize_reuse(&self) -> crate::framework::NormalizeReuse {
        crate::framework::NormalizeReuse::Column
    }
}
