//! TaintToleration: untolerated NoSchedule/NoExecute taints filter a node out;
//! untolerated PreferNoSchedule taints lower its score
//! (upstream `plugins/tainttoleration/taint_toleration.go`).

use std::sync::Arc;

use smallvec::SmallVec;

use crate::framework::{
    CycleState, ExtensionPoints, FilterPlugin, MAX_NODE_SCORE, NodeScore, Plugin, PreScorePlugin, ScorePlugin, Status,
};
use crate::model::{Symbol, Taint, TaintEffect, Toleration};
use crate::plugins::helper::default_normalize_score;
use crate::plugins::helper::with_state;
use crate::plugins::names;
use crate::snapshot::{NodeInfo, NodeList, PodInfo, node_flags};

/// The TaintToleration plugin.
#[derive(Debug, Clone, Default)]
pub struct TaintToleration;

/// The pod's tolerations that can tolerate PreferNoSchedule (no effect, or that effect).
#[derive(Debug, Clone)]
struct PreferTolerations(SmallVec<[Toleration; 2]>);

/// The first NoSchedule/NoExecute taint of `taints` no toleration tolerates
/// (upstream `FindMatchingUntoleratedTaint` with `DoNotScheduleTaintsFilterFunc`).
pub fn find_untolerated_taint<'a>(taints: &'a [Taint], tolerations: &[Toleration]) -> Option<&'a Taint> {
    taints
        .iter()
        .filter(|t| matches!(t.effect, TaintEffect::NoSchedule | TaintEffect::NoExecute))
        .find(|t| !tolerations.iter().any(|tol| tol.tolerates(t)))
}

impl Plugin for TaintToleration {
    fn name(&self) -> &str {
        names::TAINT_TOLERATION
    }
    fn register(self: Arc<Self>, p: &mut ExtensionPoints) {
        p.filter(self.clone()).pre_score(self.clone()).score(self.clone()).sign(self);
    }
}

impl FilterPlugin for TaintToleration {
    fn filter(&self, _: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        match find_untolerated_taint(&node.node().spec.taints, &pod.pod.spec.tolerations) {
            None => Status::SUCCESS,
            Some(t) => Status::unresolvable(untolerated_reason(t)),
        }
    }

    /// [`FilterPlugin::filter`] over a chunk: only the nodes the snapshot's flags
    /// mark with a `NoSchedule` or `NoExecute` taint (few) are looked at.
    fn filter_nodes(&self, _: &CycleState, pod: &PodInfo, nodes: NodeList<'_>, statuses: &mut [Status]) -> u64 {
        let tolerations = pod.pod.spec.tolerations.as_slice();
        crate::plugins::helper::filter_flagged(nodes, statuses, node_flags::HARD_TAINTS, |node| {
            find_untolerated_taint(&node.node().spec.taints, tolerations)
                .map(|t| Status::unresolvable(untolerated_reason(t)))
        })
    }
}

/// Upstream's reason, `node(s) had untolerated taint {key: value}`, interned per
/// taint so a rejection allocates nothing after the first.
fn untolerated_reason(t: &Taint) -> &'static str {
    static CACHE: std::sync::LazyLock<parking_lot::RwLock<ahash::AHashMap<(Symbol, Symbol), &'static str>>> =
        std::sync::LazyLock::new(Default::default);
    if let Some(r) = CACHE.read().get(&(t.key, t.value)) {
        return r;
    }
    let r = Symbol::intern(&format!("node(s) had untolerated taint {{{}: {}}}", t.key, t.value)).as_str();
    CACHE.write().insert((t.key, t.value), r);
    r
}

fn prefer_tolerations(pod: &PodInfo) -> SmallVec<[Toleration; 2]> {
    pod.pod
        .spec
        .tolerations
        .iter()
        .filter(|t| t.effect.is_none_or(|e| e == TaintEffect::PreferNoSchedule))
        .cloned()
        .collect()
}

fn count_intolerable(node: &NodeInfo, tolerations: &[Toleration]) -> i64 {
    node.node()
        .spec
        .taints
        .iter()
        .filter(|t| t.effect == TaintEffect::PreferNoSchedule && !tolerations.iter().any(|tol| tol.tolerates(t)))
        .count() as i64
}

impl PreScorePlugin for TaintToleration {
    fn pre_score(&self, state: &mut CycleState, pod: &PodInfo, _: NodeList<'_>) -> Status {
        state.write(PreferTolerations(prefer_tolerations(pod)));
        Status::SUCCESS
    }

    /// PreScore keeps the pod's PreferNoSchedule tolerations: a function of the pod.
    fn pre_score_reuse(&self, _: &PodInfo) -> crate::framework::PreReuse {
        crate::framework::PreReuse::Pod
    }
}

impl ScorePlugin for TaintToleration {
    /// The number of PreferNoSchedule taints the pod doesn't tolerate.
    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        Ok(match state.read::<PreferTolerations>() {
            Some(t) => count_intolerable(node, &t.0),
            None => count_intolerable(node, &prefer_tolerations(pod)),
        })
    }

    fn score_nodes(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: NodeList<'_>,
        scores: &mut [NodeScore],
    ) -> Result<(), Status> {
        // Only nodes the snapshot's flags mark with a PreferNoSchedule taint can count
        // one; the rest score 0 without a look at their taints.
        let flags = nodes.snapshot().node_flags();
        with_state(
            state,
            || PreferTolerations(prefer_tolerations(pod)),
            |t: &PreferTolerations| {
                let all = nodes.snapshot().nodes();
                for (slot, &p) in scores.iter_mut().zip(nodes.indices()) {
                    slot.score =
                        if flags[p] & node_flags::PREFER_TAINTS == 0 { 0 } else { count_intolerable(&all[p], &t.0) };
                }
            },
        );
        Ok(())
    }

    /// With no `PreferNoSchedule` taint on any node of the snapshot every node
    /// counts 0, which the reversed normalization turns into `MAX_NODE_SCORE` for all.
    fn uniform_score(&self, _: &CycleState, _: &PodInfo, nodes: NodeList<'_>) -> Option<i64> {
        (nodes.snapshot().prefer_taint_nodes() == 0).then_some(MAX_NODE_SCORE)
    }

    /// Fewer intolerable taints is better: reversed default normalization.
    fn normalize(&self, _: &CycleState, _: &PodInfo, scores: &mut [NodeScore]) -> Status {
        default_normalize_score(MAX_NODE_SCORE, true, scores);
        Status::SUCCESS
    }

    /// Upstream `tainttoleration/taint_toleration.go` NormalizeScore is `DefaultNormalizeScore(MaxNodeScore,
    /// true)`: a function of the column alone.
    fn normalize_reuse(&self) -> crate::framework::NormalizeReuse {
        crate::framework::NormalizeReuse::Column
    }
}

/// Upstream `TaintToleration.SignPod`: the tolerations, sorted (`TolerationsSigner`).
impl crate::framework::SignPlugin for TaintToleration {
    fn sign_pod(&self, pod: &PodInfo, fragments: &mut crate::framework::SignFragments) -> Status {
        fragments.add(crate::framework::TOLERATIONS_SIGNER, |w| {
            w.tolerations(&pod.pod.spec.tolerations);
        });
        Status::SUCCESS
    }
}
