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
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ScoreMap(pub(crate) SmallVec<[(Symbol, AHashMap<Symbol, i64>); 2]>);

impl ScoreMap {
    /// Upstream `scoreMap.processTerm` once the term matched: add `delta` to the
    /// node's domain of `key`, if the node has the key.
    pub(crate) fn add(&mut self, labels: &Labels, key: Symbol, delta: i64) {
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

    /// Upstream `Score`: the sum of the node's domains' scores.
    #[inline]
    fn score(&self, node: &NodeInfo) -> i64 {
        let labels = &node.node().metadata.labels;
        let mut score = 0;
        for (key, values) in &self.0 {
            if let Some(v) = labels.get(*key) {
                score += values.get(&v).copied().unwrap_or(0);
            }
        }
        score
    }
}

/// What Score reads (upstream `preScoreState`).
#[derive(Debug, Clone)]
pub(crate) struct PreScoreState {
    pub(crate) topology_score: ScoreMap,
}

/// What scoring one existing pod needs about the incoming pod (upstream
/// `processExistingPod`'s inputs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ScoreContext {
    pub(crate) namespace: crate::model::Symbol,
    pub(crate) labels: Labels,
    pub(crate) ns_labels: Labels,
    pub(crate) pref: Vec<ResolvedTerm>,
    pub(crate) pref_anti: Vec<ResolvedTerm>,
    pub(crate) hard: i64,
}

impl ScoreContext {
    /// Upstream `processExistingPod`: calls `sink(topology key, delta)` for every term
    /// match between the incoming pod and `existing` (the caller drops keys the node
    /// lacks).
    pub(crate) fn process(&self, pod: &PodInfo, existing: &PodInfo, mut sink: impl FnMut(Symbol, i64)) {
        for t in &self.pref {
            if t.matches(existing) {
                sink(t.topology_key, i64::from(t.weight));
            }
        }
        for t in &self.pref_anti {
            if t.matches(existing) {
                sink(t.topology_key, -i64::from(t.weight));
            }
        }
        if !existing.has_affinity {
            return;
        }
        if self.hard > 0 {
            for t in required_affinity(existing) {
                if existing_term_matches(existing, t, pod, &self.ns_labels) {
                    sink(t.topology_key, self.hard);
                }
            }
        }
        for w in preferred_affinity(existing) {
            if existing_term_matches(existing, &w.pod_affinity_term, pod, &self.ns_labels) {
                sink(w.pod_affinity_term.topology_key, i64::from(w.weight));
            }
        }
        for w in preferred_anti_affinity(existing) {
            if existing_term_matches(existing, &w.pod_affinity_term, pod, &self.ns_labels) {
                sink(w.pod_affinity_term.topology_key, -i64::from(w.weight));
            }
        }
    }
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
        // Without preferred terms of its own, only existing pods with affinity can
        // score; with none in the cluster upstream's `topologyScore` stays empty and
        // PreScore skips, so skip before building the scoring context.
        if !has_constraints && nodes.snapshot().nodes_with_affinity().next().is_none() {
            return None;
        }
        let resolve = |terms: &[crate::model::WeightedPodAffinityTerm]| -> Vec<ResolvedTerm> {
            terms.iter().map(|w| ResolvedTerm::new(pod, &w.pod_affinity_term, w.weight, &self.namespaces)).collect()
        };
        let ctx = ScoreContext {
            namespace: pod.namespace,
            labels: pod.pod.metadata.labels.clone(),
            ns_labels: self.namespaces.labels_of(pod.namespace),
            pref: resolve(pref),
            pref_anti: resolve(pref_anti),
            hard: i64::from(self.args.hard_pod_affinity_weight),
        };
        let snapshot = nodes.snapshot();
        let scores = if has_constraints {
            // The pod's own preferences need every pod: the memo recounts only the
            // nodes that changed since this workload's last cycle.
            self.score_memo.scores(&ctx, pod, snapshot)
        } else {
            // Only existing pods' terms can score: only pods with affinity.
            let mut scores = ScoreMap::default();
            for node in snapshot.nodes_with_affinity() {
                let labels = &node.node().metadata.labels;
                if labels.is_empty() {
                    continue;
                }
                for existing in node.pods_with_affinity() {
                    ctx.process(pod, existing, |key, delta| scores.add(labels, key, delta));
                }
            }
            scores
        };
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
        Ok(s.topology_score.score(node))
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
            return Err(Status::error("reading \"PreScoreInterPodAffinity\" from cycleState: not found"));
        };
        for (slot, node) in scores.iter_mut().zip(nodes.iter()) {
            slot.score = s.topology_score.score(node);
        }
        Ok(())
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

    /// Upstream `interpodaffinity/scoring.go` NormalizeScore is min-max over the column, skipped when PreScore
    /// found no topology score; then every raw score is 0 and min-max leaves 0 too, so the output is a function
    /// of the column alone.
    fn normalize_reuse(&self) -> crate::framework::NormalizeReuse {
        crate::framework::NormalizeReuse::Column
    }
}
