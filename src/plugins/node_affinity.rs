//! NodeAffinity: `nodeSelector`, required and preferred node affinity, and the
//! scheduler-enforced `addedAffinity` (upstream `plugins/nodeaffinity/node_affinity.go`).

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::framework::{
    CycleState, ExtensionPoints, FilterPlugin, MAX_NODE_SCORE, NodeScore, Plugin, PreFilterPlugin, PreFilterResult,
    PreScorePlugin, ScorePlugin, Status,
};
use crate::model::labels::{MASK_NODES, NodeBlock};
use crate::model::{
    FIELD_METADATA_NAME, NodeAffinity as NodeAffinitySpec, NodeSelectorOperator, PreferredSchedulingTerm,
};
use crate::plugins::helper::default_normalize_score;
use crate::plugins::names;
use crate::snapshot::{NodeInfo, NodeList, PodInfo, Snapshot, SnapshotBlock};

/// Upstream `ErrReasonPod`.
pub const ERR_REASON_POD: &str = "node(s) didn't match Pod's node affinity/selector";
/// Upstream `errReasonEnforced`.
pub const ERR_REASON_ENFORCED: &str = "node(s) didn't match scheduler-enforced node affinity";
/// Upstream `errReasonConflict`.
pub const ERR_REASON_CONFLICT: &str = "pod affinity terms conflict";

/// `NodeAffinityArgs`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NodeAffinityArgs {
    /// Affinity added to every pod this profile schedules.
    pub added_affinity: Option<NodeAffinitySpec>,
}

/// The NodeAffinity plugin.
#[derive(Debug, Clone, Default)]
pub struct NodeAffinity {
    added: Option<NodeAffinitySpec>,
}

/// Invalid NodeAffinity args.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("addedAffinity: {0}")]
pub struct NodeAffinityArgsError(String);

impl NodeAffinity {
    /// Builds the plugin, validating `addedAffinity` as upstream
    /// `ValidateNodeAffinityArgs` does: strictly, so a requirement a pod's lazy node
    /// selector would skip ([`NodeSelectorTerm::parse_errors`](crate::model::NodeSelectorTerm::parse_errors))
    /// is an error here.
    pub fn new(args: NodeAffinityArgs) -> Result<Self, NodeAffinityArgsError> {
        let mut added = args.added_affinity;
        if let Some(a) = &mut added {
            if let Some(req) = &mut a.required {
                for (i, t) in req.node_selector_terms.iter_mut().enumerate() {
                    let path = format!("requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[{i}]");
                    t.validate(&path).map_err(|e| NodeAffinityArgsError(e.to_string()))?;
                    if let Some((p, why)) = t.parse_errors(&path).into_iter().next() {
                        return Err(NodeAffinityArgsError(format!("{p}: {why}")));
                    }
                }
            }
            for (i, p) in a.preferred.iter_mut().enumerate() {
                if !(1..=100).contains(&p.weight) {
                    return Err(NodeAffinityArgsError(format!(
                        "preferredDuringSchedulingIgnoredDuringExecution[{i}].weight must be in 1..=100, got {}",
                        p.weight
                    )));
                }
                let path = format!("preferredDuringSchedulingIgnoredDuringExecution[{i}].preference");
                p.preference.validate(&path).map_err(|e| NodeAffinityArgsError(e.to_string()))?;
                if let Some((p, why)) = p.preference.parse_errors(&path).into_iter().next() {
                    return Err(NodeAffinityArgsError(format!("{p}: {why}")));
                }
            }
        }
        Ok(NodeAffinity { added })
    }

    /// From config args.
    pub fn from_config(args: Option<&serde_json::Value>) -> Result<Self, NodeAffinityArgsError> {
        let a = match args {
            Some(v) => NodeAffinityArgs::deserialize(v).map_err(|e| NodeAffinityArgsError(e.to_string()))?,
            None => NodeAffinityArgs::default(),
        };
        NodeAffinity::new(a)
    }

    fn added_matches(&self, node: &NodeInfo) -> bool {
        self.added
            .as_ref()
            .and_then(|a| a.required.as_ref())
            .is_none_or(|r| r.matches(&node.node().metadata.labels, node.name()))
    }

    fn added_preferred(&self) -> &[PreferredSchedulingTerm] {
        self.added.as_ref().map_or(&[], |a| a.preferred.as_slice())
    }
}

/// Whether the pod's `nodeSelector` and required node affinity match the node
/// (upstream `RequiredNodeAffinity.Match`). A required term upstream cannot parse
/// matches no node; the other terms still match (its lazy-error node selector).
#[inline]
pub fn required_affinity_matches(pod: &PodInfo, node: &NodeInfo) -> bool {
    let labels = &node.node().metadata.labels;
    for (k, v) in pod.pod.spec.node_selector.iter() {
        if labels.get(k) != Some(v) {
            return false;
        }
    }
    match pod.pod.node_affinity().and_then(|a| a.required.as_ref()) {
        Some(r) => r.matches(labels, node.name()),
        None => true,
    }
}

/// Sum of the weights of the preferred terms the node matches.
#[inline]
fn preferred_score(terms: &[PreferredSchedulingTerm], node: &NodeInfo) -> i64 {
    let labels = &node.node().metadata.labels;
    let mut sum = 0;
    for t in terms {
        if t.preference.matches(labels, node.name()) {
            sum += i64::from(t.weight);
        }
    }
    sum
}

impl Plugin for NodeAffinity {
    fn name(&self) -> &str {
        names::NODE_AFFINITY
    }
    fn register(self: Arc<Self>, p: &mut ExtensionPoints) {
        p.pre_filter(self.clone()).filter(self.clone()).pre_score(self.clone()).score(self.clone()).sign(self);
    }
}

impl PreFilterPlugin for NodeAffinity {
    /// Skips pods with nothing to match; narrows the nodes when every required term
    /// names nodes through `matchFields` on `metadata.name`.
    fn pre_filter(&self, _: &mut CycleState, pod: &PodInfo, _: &Snapshot) -> (Option<PreFilterResult>, Status) {
        let required = pod.pod.node_affinity().and_then(|a| a.required.as_ref());
        let added_required = self.added.as_ref().is_some_and(|a| a.required.is_some());
        if required.is_none() && !added_required && pod.pod.spec.node_selector.is_empty() {
            return (None, Status::SKIP);
        }
        let Some(req) = required else { return (None, Status::SUCCESS) };
        if req.node_selector_terms.is_empty() {
            return (None, Status::SUCCESS);
        }
        let mut union: Option<ahash::AHashSet<crate::model::Symbol>> = None;
        for t in &req.node_selector_terms {
            let mut term_nodes: Option<ahash::AHashSet<crate::model::Symbol>> = None;
            for r in &t.match_fields {
                if r.key.as_str() == FIELD_METADATA_NAME && r.operator == NodeSelectorOperator::In {
                    let s: ahash::AHashSet<_> = r.values.iter().copied().collect();
                    term_nodes = Some(match term_nodes {
                        None => s,
                        Some(prev) => prev.intersection(&s).copied().collect(),
                    });
                }
            }
            // A term without a name constraint allows every node: terms are ORed.
            let Some(tn) = term_nodes else { return (None, Status::SUCCESS) };
            union.get_or_insert_with(Default::default).extend(tn);
        }
        match union {
            Some(u) if u.is_empty() => (None, Status::unresolvable(ERR_REASON_CONFLICT)),
            Some(u) => (Some(PreFilterResult::from_names(u)), Status::SUCCESS),
            None => (None, Status::SUCCESS),
        }
    }

    /// PreFilter reads the pod's required affinity and node selector and the plugin's
    /// `addedAffinity`; its narrowing is by node name.
    fn pre_filter_reuse(&self, _: &PodInfo) -> crate::framework::PreReuse {
        crate::framework::PreReuse::Pod
    }
}

impl FilterPlugin for NodeAffinity {
    fn filter(&self, _: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        if !self.added_matches(node) {
            return Status::unresolvable(ERR_REASON_ENFORCED);
        }
        if required_affinity_matches(pod, node) { Status::SUCCESS } else { Status::unresolvable(ERR_REASON_POD) }
    }

    /// [`FilterPlugin::filter`] over a chunk: each requirement of the profile's and
    /// the pod's selectors is matched against the chunk's nodes at once (a bit per
    /// node), so its operator and values are read once per chunk, not per node.
    fn filter_nodes(&self, _: &CycleState, pod: &PodInfo, nodes: NodeList<'_>, statuses: &mut [Status]) -> u64 {
        let added = self.added.as_ref().and_then(|a| a.required.as_ref());
        let selector = &pod.pod.spec.node_selector;
        let required = pod.pod.node_affinity().and_then(|a| a.required.as_ref());
        let n = nodes.len().min(statuses.len()).min(MASK_NODES);
        let src = SnapshotBlock { snap: nodes.snapshot(), positions: &nodes.indices()[..n] };
        let block = NodeBlock::new(&src);
        let all = block.all();
        let enforced = added.map_or(all, |r| r.match_mask(&block));
        let mut ok = enforced;
        for (k, v) in selector.iter() {
            if ok == 0 {
                break;
            }
            ok &= block.label_equals_mask(k, v);
        }
        if let Some(r) = required
            && ok != 0
        {
            ok &= r.match_mask(&block);
        }
        let failed = all & !ok;
        let mut bad = failed;
        while bad != 0 {
            let i = bad.trailing_zeros() as usize;
            bad &= bad - 1;
            let reason = if enforced >> i & 1 == 0 { ERR_REASON_ENFORCED } else { ERR_REASON_POD };
            statuses[i] = Status::unresolvable(reason);
        }
        failed
    }
}

impl PreScorePlugin for NodeAffinity {
    /// Skips pods with no preferred terms (here or in `addedAffinity`); fails with an
    /// error for a pod whose preferred term upstream cannot parse, as upstream's
    /// `NewPreferredSchedulingTerms` does.
    fn pre_score(&self, _: &mut CycleState, pod: &PodInfo, _: NodeList<'_>) -> Status {
        let preferred = pod.pod.node_affinity().map_or(&[][..], |a| a.preferred.as_slice());
        if let Some(i) = preferred.iter().position(|t| !t.preference.is_parsable()) {
            let path = format!("[{i}]");
            let why = preferred[i].preference.parse_errors(&path).into_iter().next().map(|(p, w)| format!("{p}: {w}"));
            return Status::error(why.unwrap_or(path));
        }
        let pod_pref = !preferred.is_empty();
        if !pod_pref && self.added_preferred().is_empty() { Status::SKIP } else { Status::SUCCESS }
    }

    /// PreScore reads the pod's preferred terms and the plugin's `addedAffinity`, and
    /// writes nothing.
    fn pre_score_reuse(&self, _: &PodInfo) -> crate::framework::PreReuse {
        crate::framework::PreReuse::Pod
    }
}

impl ScorePlugin for NodeAffinity {
    fn score(&self, _: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        let pod_terms = pod.pod.node_affinity().map_or(&[][..], |a| a.preferred.as_slice());
        Ok(preferred_score(self.added_preferred(), node) + preferred_score(pod_terms, node))
    }

    fn score_nodes(
        &self,
        _: &CycleState,
        pod: &PodInfo,
        nodes: NodeList<'_>,
        scores: &mut [NodeScore],
    ) -> Result<(), Status> {
        let pod_terms = pod.pod.node_affinity().map_or(&[][..], |a| a.preferred.as_slice());
        let added = self.added_preferred();
        // A block of nodes at a time: each term is matched against the block at once
        // (a bit per node) and its weight added where it matched.
        for (idx, out) in nodes.indices().chunks(MASK_NODES).zip(scores.chunks_mut(MASK_NODES)) {
            let src = SnapshotBlock { snap: nodes.snapshot(), positions: idx };
            let block = NodeBlock::new(&src);
            for slot in out.iter_mut() {
                slot.score = 0;
            }
            for t in added.iter().chain(pod_terms) {
                let mut m = t.preference.match_mask(&block);
                while m != 0 {
                    let i = m.trailing_zeros() as usize;
                    m &= m - 1;
                    out[i].score += i64::from(t.weight);
                }
            }
        }
        Ok(())
    }

    fn normalize(&self, _: &CycleState, _: &PodInfo, scores: &mut [NodeScore]) -> Status {
        default_normalize_score(MAX_NODE_SCORE, false, scores);
        Status::SUCCESS
    }

    /// Upstream `nodeaffinity/node_affinity.go` NormalizeScore is `DefaultNormalizeScore(MaxNodeScore, false)`:
    /// a function of the column alone.
    fn normalize_reuse(&self) -> crate::framework::NormalizeReuse {
        crate::framework::NormalizeReuse::Column
    }
}

/// Upstream `NodeAffinity.SignPod`: the pod's node affinity (canonicalised by
/// `NodeAffinitySigner`) and its `nodeSelector`. The profile's `addedAffinity` is the
/// same for every pod of the profile, and signatures are never compared across
/// profiles, so it needs no fragment.
impl crate::framework::SignPlugin for NodeAffinity {
    fn sign_pod(&self, pod: &PodInfo, fragments: &mut crate::framework::SignFragments) -> Status {
        let spec = &pod.pod.spec;
        fragments.add(crate::framework::NODE_AFFINITY_SIGNER, |w| {
            match spec.affinity.as_ref().and_then(|a| a.node_affinity.as_ref()) {
                None => {
                    w.u8(0);
                }
                Some(a) => {
                    w.u8(1).node_affinity(a);
                }
            }
        });
        fragments.add(crate::framework::NODE_SELECTOR_SIGNER, |w| {
            // Labels are kept sorted by key: already canonical.
            w.u32(spec.node_selector.len() as u32);
            for (k, v) in spec.node_selector.iter() {
                w.symbol(k).symbol(v);
            }
        });
        Status::SUCCESS
    }
}
