//! Per-node Filter and Score results shared by the identical members of one
//! pod-group cycle (schedkit's own; the results are exactly what the plugins return).
//!
//! A pod-group cycle runs every member through the whole cycle against one snapshot,
//! and a member's assumption changes only the node it lands on. When two members sign
//! alike ([`crate::framework::SignPlugin`]: "every Filter and Score plugin would treat
//! these pods the same on every node", the contract opportunistic batching rests on)
//! for every Filter and Score plugin that runs for them, a node whose `NodeInfo` is the
//! very one seen before gives the same Filter status and the same raw scores: the
//! memo hands those back instead of running the plugins again, across members and
//! across placements (which share node infos). PreFilter, PreScore, NormalizeScore,
//! sampling, the rotating start and host selection all run as before, so placements,
//! statuses and messages are unchanged.
//!
//! Unlike batching, a plugin that is skipped for the pod (its PreFilter or PreScore
//! said Skip) need not sign: it does not run. A member whose running plugins do not
//! all sign it, a cycle with nominated pods, extenders or sampled plugin timers use
//! no memo.

use std::sync::Arc;

use ahash::AHashMap;

use crate::framework::{CycleState, PluginSet, PodSignature, Profile, SignFragments, Status};
use crate::model::Symbol;
use crate::snapshot::{NodeInfo, PodInfo};

/// One node's results for the current key.
struct Entry {
    /// The node the results are for (kept, so its address is not reused).
    node: Arc<NodeInfo>,
    /// Filter status, when computed under the current filter key.
    filter: Option<Status>,
    /// Raw score per Score plugin (skipped ones 0), under the current score key.
    scores: Option<Box<[i64]>>,
}

/// Which pods share results: the signature over the plugins that run, and which
/// plugins are skipped.
#[derive(PartialEq, Eq)]
struct Key {
    signature: PodSignature,
    skipped: PluginSet,
}

/// How often the memo answered (for tests).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MemoStats {
    /// Nodes whose Filter status came from the memo.
    pub filter_hits: u64,
    /// Nodes whose raw scores came from the memo.
    pub score_hits: u64,
}

/// The memo of one pod-group cycle.
pub(crate) struct GroupMemo {
    /// Position in `profile.sign` of the signer covering each Filter / Score plugin.
    filter_signer: Vec<Option<usize>>,
    score_signer: Vec<Option<usize>>,
    filter_key: Option<Key>,
    score_key: Option<Key>,
    /// Whether the member in its cycle now uses the memo for Filter / Score.
    pub(super) filter_on: bool,
    pub(super) score_on: bool,
    entries: AHashMap<Symbol, Entry>,
    fragments: SignFragments,
    pub(crate) stats: MemoStats,
}

impl GroupMemo {
    /// An empty memo for `profile`'s plugins.
    pub(crate) fn new(profile: &Profile) -> GroupMemo {
        let signer = |name: &str| profile.sign.iter().position(|s| s.name == name);
        GroupMemo {
            filter_signer: profile.filter.iter().map(|p| signer(p.name)).collect(),
            score_signer: profile.score.iter().map(|p| signer(p.name)).collect(),
            filter_key: None,
            score_key: None,
            filter_on: false,
            score_on: false,
            entries: AHashMap::new(),
            fragments: SignFragments::new(),
            stats: MemoStats::default(),
        }
    }

    /// After PreFilter: whether this member may reuse Filter statuses (entries of
    /// another key are dropped).
    pub(super) fn begin_filter(&mut self, profile: &Profile, pod: &PodInfo, state: &CycleState) -> bool {
        self.filter_on = false;
        self.score_on = false;
        let Some(key) = key(profile, &self.filter_signer, &state.skip_filter, pod, &mut self.fragments) else {
            return false;
        };
        if self.filter_key.as_ref() != Some(&key) {
            for e in self.entries.values_mut() {
                e.filter = None;
            }
            self.filter_key = Some(key);
        }
        self.filter_on = true;
        true
    }

    /// After PreScore: whether this member may reuse raw scores.
    pub(super) fn begin_score(&mut self, profile: &Profile, pod: &PodInfo, state: &CycleState) -> bool {
        self.score_on = false;
        let Some(key) = key(profile, &self.score_signer, &state.skip_score, pod, &mut self.fragments) else {
            return false;
        };
        if self.score_key.as_ref() != Some(&key) {
            for e in self.entries.values_mut() {
                e.scores = None;
            }
            self.score_key = Some(key);
        }
        self.score_on = true;
        true
    }

    /// The Filter status remembered for `node`, if it is the same node.
    #[inline]
    pub(super) fn filter(&mut self, node: &Arc<NodeInfo>) -> Option<Status> {
        let e = self.entries.get(&node.name())?;
        let s = e.filter.as_ref().filter(|_| Arc::ptr_eq(&e.node, node))?.clone();
        self.stats.filter_hits += 1;
        Some(s)
    }

    /// Remembers `node`'s Filter status.
    #[inline]
    pub(super) fn store_filter(&mut self, node: &Arc<NodeInfo>, status: &Status) {
        let e = self.entry(node);
        e.filter = Some(status.clone());
    }

    /// The raw scores remembered for `node`, if it is the same node.
    #[inline]
    pub(super) fn scores(&mut self, node: &Arc<NodeInfo>) -> Option<&[i64]> {
        let e = self.entries.get(&node.name())?;
        if !Arc::ptr_eq(&e.node, node) {
            return None;
        }
        let s = e.scores.as_deref()?;
        self.stats.score_hits += 1;
        Some(s)
    }

    /// Remembers `node`'s raw scores.
    pub(super) fn store_scores(&mut self, node: &Arc<NodeInfo>, scores: &[i64]) {
        let e = self.entry(node);
        e.scores = Some(scores.into());
    }

    /// `node`'s entry, emptied first when it held another node.
    fn entry(&mut self, node: &Arc<NodeInfo>) -> &mut Entry {
        let e =
            self.entries.entry(node.name()).or_insert_with(|| Entry { node: node.clone(), filter: None, scores: None });
        if !Arc::ptr_eq(&e.node, node) {
            *e = Entry { node: node.clone(), filter: None, scores: None };
        }
        e
    }
}

/// The pod's key over the plugins not in `skipped`: `None` when one of them has no
/// signer or its signer declines the pod.
fn key(
    profile: &Profile,
    signers: &[Option<usize>],
    skipped: &PluginSet,
    pod: &PodInfo,
    fragments: &mut SignFragments,
) -> Option<Key> {
    let mut needed: smallvec::SmallVec<[usize; 16]> = smallvec::SmallVec::new();
    for (i, s) in signers.iter().enumerate() {
        if skipped.contains(i) {
            continue;
        }
        let s = (*s)?;
        if !needed.contains(&s) {
            needed.push(s);
        }
    }
    needed.sort_unstable();
    fragments.clear();
    for s in needed {
        let p = &profile.sign[s];
        let ok = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| p.plugin.sign_pod_in_group(pod, fragments)));
        if !ok.is_ok_and(|s| s.is_success()) {
            return None;
        }
    }
    Some(Key { signature: fragments.finish(), skipped: skipped.clone() })
}
