//! PreScore, Score and NormalizeScore (upstream
//! `pkg/scheduler/framework/plugins/interpodaffinity/scoring.go`).

use ahash::AHashMap;
use smallvec::SmallVec;

use super::InterPodAffinity;
use super::terms::{
    ResolvedTerm, existing_term_matches, preferred_affinity, preferred_anti_affinity, required_affinity,
};
use crate::framework::{CycleState, MAX_NODE_SCORE, NodeScore, PreScorePlugin, ScorePlugin, Status};
use crate::model::{Labels, Symbol};
use crate::snapshot::{NodeInfo, NodeList, PodInfo};

/// Topology key -> (value -> score) (upstream `scoreMap`). Few keys, so a vector.
#[derive(Debug, Clone, Default)]
pub(crate) struct ScoreMap(SmallVec<[(Symbol, AHashMap<Symbol, i64>); 2]>);

impl ScoreMap {
    /// Upstream `scoreMap.processTerm` once the term matched: add `delta` to the
    /// node's domain of `key`, if the node has the key.
    fn add(&mut self, labels: &Labels, key: Symbol, delta: i64) {
        let Some(value) = labels.get(key) else { return };
        let i = if let Some(i) = self.0.iter().position(|(k, _)| *k == key) {
            i
        } else {
            self.0.push((key, AHashMap::new()));
            self.0.len() - 1
        };
        *self.0[i].1.entry(value).or_insert(0) += delta;
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// What Score reads (upstream `preScoreState`).
#[derive(Debug, Clone)]
pub(crate) struct PreScoreState {
    pub(crate) topology_score: ScoreMap,
}

impl InterPodAffinity {
    /// Upstream PreScore; `None` means Skip.
    pub(crate) fn pre_score_state(&self, pod: &PodInfo, nodes: NodeList<'_>) -> Option<PreScoreState> {
        if nodes.is_empty() {
            return None;
        }
        let pref = preferred_affinity(pod);
        let pref_anti = preferred_anti_affinity(pod);
        let has_constraints = !pref.is_empty() || !pref_anti.is_empty();
        if self.args.ignore_preferred_terms_of_existing_pods && !has_constraints {
            return None;
        }
        let resolve = |terms: &[crate::model::WeightedPodAffinityTerm]| -> Vec<ResolvedTerm> {
            terms.iter().map(|w| ResolvedTerm::new(pod, &w.pod_affinity_term, w.weight, &self.namespaces)).collect()
        };
        let (pref, pref_anti) = (resolve(pref), resolve(pref_anti));
        let ns_labels = self.namespaces.labels_of(pod.namespace);
        let hard = i64::from(self.args.hard_pod_affinity_weight);

        let mut scores = ScoreMap::default();
        let mut process = |node: &NodeInfo, existing: &PodInfo| {
            let labels = &node.node().metadata.labels;
            if labels.is_empty() {
                return;
            }
            for t in &pref {
                if t.matches(existing) {
                    scores.add(labels, t.topology_key, i64::from(t.weight));
                }
            }
            for t in &pref_anti {
                if t.matches(existing) {
                    scores.add(labels, t.topology_key, -i64::from(t.weight));
                }
            }
            if !existing.has_affinity {
                return;
            }
            if hard > 0 {
                for t in required_affinity(existing) {
                    if existing_term_matches(existing, t, pod, &ns_labels) {
                        scores.add(labels, t.topology_key, hard);
                    }
                }
            }
            for w in preferred_affinity(existing) {
                if existing_term_matches(existing, &w.pod_affinity_term, pod, &ns_labels) {
                    scores.add(labels, w.pod_affinity_term.topology_key, i64::from(w.weight));
                }
            }
            for w in preferred_anti_affinity(existing) {
                if existing_term_matches(existing, &w.pod_affinity_term, pod, &ns_labels) {
                    scores.add(labels, w.pod_affinity_term.topology_key, -i64::from(w.weight));
                }
            }
        };
        let snapshot = nodes.snapshot();
        if has_constraints {
            // The pod's own preferences need every pod.
            for node in snapshot.nodes() {
                for existing in node.pods() {
                    process(node, existing);
                }
            }
        } else {
            // Only existing pods' terms can score: only pods with affinity.
            for node in snapshot.nodes_with_affinity() {
                for existing in node.pods_with_affinity() {
                    process(node, existing);
                }
            }
        }
        if scores.is_empty() {
            return None;
        }
        Some(PreScoreState { topology_score: scores })
    }
}

impl PreScorePlugin for InterPodAffinity {
    /// Sums term weights per topology domain once per cycle; Skip when nothing scores.
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

impl ScorePlugin for InterPodAffinity {
    /// The summed scores of the node's domains (may be negative until normalized).
    /// Allocation-free.
    fn score(&self, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        let Some(s) = state.read::<PreScoreState>() else {
            return Err(Status::error("reading \"PreScoreInterPodAffinity\" from cycleState: not found"));
        };
        let labels = &node.node().metadata.labels;
        let mut score = 0;
        for (key, values) in &s.topology_score.0 {
            if let Some(v) = labels.get(*key) {
                score += values.get(&v).copied().unwrap_or(0);
            }
        }
        Ok(score)
    }

    /// Upstream `NormalizeScore`: `int64(100 * (score - min) / (max - min))` in
    /// floating point, all 0 when every score is equal.
    fn normalize(&self, state: &CycleState, _pod: &PodInfo, scores: &mut [NodeScore]) -> Status {
        let Some(s) = state.read::<PreScoreState>() else {
            return Status::error("reading \"PreScoreInterPodAffinity\" from cycleState: not found");
        };
        if s.topology_score.is_empty() {
            return Status::SUCCESS;
        }
        let min = scores.iter().map(|s| s.score).min().unwrap_or(0);
        let max = scores.iter().map(|s| s.score).max().unwrap_or(0);
        let diff = max - min;
        for sc in scores.iter_mut() {
            let f = if diff > 0 { MAX_NODE_SCORE as f64 * ((sc.score - min) as f64 / diff as f64) } else { 0.0 };
            sc.score = f as i64;
        }
        Status::SUCCESS
    }
}
