//! Per-node Filter and Score results shared by the identical members of one
//! pod-group cycle (schedkit's own; the results are exactly what the plugins return).
//!
//! A pod-group cycle runs every member through the whole cycle against one snapshot,
//! and a member's assumption changes only the node it lands on. When two members sign
//! alike ([`crate::framework::SignPlugin`]: "every Filter and Score plugin would treat
//! these pods the same on every node", the contract opportunistic batching rests on)
//! for every Filter and Score plugin that runs for them, a node whose `NodeInfo` is the
//! very one seen before gives the same Filter status and the same raw scores: the
//! memo hands those back instead of running the plugins again, across the members
//! tried in one snapshot object (the group's, or one placement's view: PreFilter and
//! PreScore may count over the view's nodes, so a new view starts afresh). PreFilter, PreScore,
//! sampling, the rotating start and host selection all run as before, so placements,
//! statuses and messages are unchanged. NormalizeScore is
//! reused between identical members only as `group_score.rs` says.
//!
//! Unlike batching, a plugin that is skipped for the pod (its PreFilter or PreScore
//! said Skip) need not sign: it does not run. A member whose running plugins do not
//! all sign it, a member whose Filter walk samples (see [`GroupMemo::plan`]), a cycle
//! with nominated pods, extenders or sampled plugin timers use no memo.

use std::sync::Arc;

use crate::framework::{CycleState, PluginSet, PodSignature, Profile, SignFragments, Status};
use crate::snapshot::{NodeInfo, PodInfo};

/// One node's results for the current keys, at its position in the view.
struct Entry {
    /// The node the results are for (kept, so its address is not reused).
    node: Arc<NodeInfo>,
    /// Filter status, when computed under the current filter key.
    filter: Option<Status>,
    /// Whether the node's row of raw scores holds results under the current score key.
    scored: bool,
}

/// Which pods share results: the signature over the plugins that run, and which
/// plugins are skipped.
#[derive(Clone, PartialEq, Eq)]
struct Key {
    signature: PodSignature,
    skipped: PluginSet,
}

/// One member's key for Filter or Score under one set of skipped plugins, kept across
/// the placements of a pod-group cycle (a member signs the same in every view).
struct CachedKey {
    /// The member (held, so its address stays its own while the entry lives).
    pod: Arc<PodInfo>,
    skipped: PluginSet,
    key: Option<Key>,
}

/// How often the memo answered (for tests).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MemoStats {
    /// Nodes whose Filter status came from the memo.
    pub filter_hits: u64,
    /// Nodes whose raw scores came from the memo.
    pub score_hits: u64,
    /// Filter or Score keys computed (a member's are computed once per cycle, not
    /// once per placement).
    pub keys_signed: u64,
    /// Plugins' normalized columns carried over from the previous identical member
    /// without running NormalizeScore (see `group_score.rs`).
    pub columns_reused: u64,
    /// Members that ran without the memo because it could not answer them (see
    /// [`GroupMemo::plan`]).
    pub members_plain: u64,
    /// Members whose Filter walk was replayed from the previous identical member's
    /// (see `group_walk.rs`; their unchanged nodes count as filter hits).
    pub walks_replayed: u64,
    /// PreFilter and PreScore calls answered by the member's first placement (see
    /// `group_prescore.rs`).
    pub pre_reused: u64,
}

/// The memo of the pod-group cycle in progress; kept by the scheduler between
/// cycles so its buffers are reused (emptied at the end of each cycle).
#[derive(Default)]
#[expect(
    clippy::struct_excessive_bools,
    reason = "per-member flags set in different phases (PreFilter, plan, PreScore), read independently"
)]
pub(crate) struct GroupMemo {
    /// Position in `profile.sign` of the signer covering each Filter / Score plugin.
    filter_signer: Vec<Option<usize>>,
    score_signer: Vec<Option<usize>>,
    filter_key: Option<Key>,
    score_key: Option<Key>,
    /// The member in its cycle now may use the memo for Filter: [`GroupMemo::plan`]
    /// decides (and signs it only when the memo can answer).
    eligible: bool,
    /// Whether the member in its cycle now uses the memo for Filter / Score.
    pub(super) filter_on: bool,
    pub(super) score_on: bool,
    /// Whether the member in its cycle stores what the memo lacked: only when it
    /// filters every candidate and members follow it.
    pub(super) store: bool,
    /// Members left in the group algorithm, this one included.
    pub(super) members_left: usize,
    /// By node position in the view.
    entries: Vec<Option<Entry>>,
    /// Positions with an entry, to empty them cheaply.
    used: Vec<usize>,
    /// Raw scores, one row of `profile.score.len()` per node position.
    rows: Vec<i64>,
    plugins: usize,
    /// The snapshot object (`Snapshot::id`) the entries were computed in.
    view: Option<u64>,
    fragments: SignFragments,
    /// The member in its cycle now, by its index in the group's pods.
    member: Option<(usize, Arc<PodInfo>)>,
    /// By member index: its Filter and Score keys (kept for the whole pod-group cycle).
    keys: Vec<[Option<CachedKey>; 2]>,
    /// The previous member's normalized columns and totals (see `group_score.rs`).
    pub(super) columns: super::group_score::LastColumns,
    /// The last full Filter walk in the view under the Filter key (see `group_walk.rs`).
    pub(super) walk: super::group_walk::LastWalk,
    /// Members' PreFilters and PreScores kept across placements (see `group_prescore.rs`).
    pub(super) pre: super::group_prescore::KeptPre,
    pub(crate) stats: MemoStats,
}

impl GroupMemo {
    /// Prepares the memo for a pod-group cycle of `profile`.
    pub(crate) fn start(&mut self, profile: &Profile) {
        let signer = |name: &str| profile.sign.iter().position(|s| s.name == name);
        self.filter_signer.clear();
        self.filter_signer.extend(profile.filter.iter().map(|p| signer(p.name)));
        self.score_signer.clear();
        self.score_signer.extend(profile.score.iter().map(|p| signer(p.name)));
        self.plugins = profile.score.len();
        self.stats = MemoStats::default();
        self.clear();
        self.keys.clear();
        self.pre.clear();
        self.member = None;
    }

    /// Ends the pod-group cycle: forgets every result and every member.
    pub(crate) fn end_cycle(&mut self) {
        self.clear();
        self.keys.clear();
        self.pre.clear();
        self.member = None;
    }

    /// The group algorithm is about to run member `index` (`pod`) through its cycle.
    pub(super) fn set_member(&mut self, index: usize, pod: &Arc<PodInfo>) {
        self.member = Some((index, pod.clone()));
    }

    /// The member in its cycle now: its index in the group's pods, and the pod.
    pub(super) fn member(&self) -> Option<(usize, &Arc<PodInfo>)> {
        self.member.as_ref().map(|(i, p)| (*i, p))
    }

    /// `pod`'s key for Filter (`which` 0) or Score (1) with `skipped` plugins: the
    /// member's cached key when `pod` is the current member and it was computed under
    /// the same skipped set (in an earlier placement), else computed (and cached).
    fn member_key(&mut self, which: usize, profile: &Profile, pod: &PodInfo, skipped: &PluginSet) -> Option<Key> {
        let signers = if which == 0 { &self.filter_signer } else { &self.score_signer };
        let Some((index, member)) = self.member.as_ref().filter(|(_, m)| std::ptr::eq(Arc::as_ptr(m), pod)) else {
            return key(profile, signers, skipped, pod, &mut self.fragments);
        };
        let index = *index;
        if let Some(c) = self.keys.get(index).and_then(|k| k[which].as_ref())
            && Arc::ptr_eq(&c.pod, member)
            && c.skipped == *skipped
        {
            return c.key.clone();
        }
        let computed = key(profile, signers, skipped, pod, &mut self.fragments);
        self.stats.keys_signed += 1;
        let member = member.clone();
        if self.keys.len() <= index {
            self.keys.resize_with(index + 1, || [None, None]);
        }
        self.keys[index][which] = Some(CachedKey { pod: member, skipped: skipped.clone(), key: computed.clone() });
        computed
    }

    /// Forgets every result (and the nodes it holds).
    pub(crate) fn clear(&mut self) {
        for &p in &self.used {
            self.entries[p] = None;
        }
        self.used.clear();
        self.filter_key = None;
        self.score_key = None;
        self.columns.invalidate();
        self.walk.invalidate();
        self.view = None;
        self.eligible = false;
        self.filter_on = false;
        self.score_on = false;
        self.store = false;
    }

    /// After PreFilter: this member may reuse Filter statuses (the memo is emptied
    /// when `view` is another snapshot object). Whether it does is decided by
    /// [`GroupMemo::plan`].
    pub(super) fn begin_filter(&mut self, view: u64) {
        self.filter_on = false;
        self.score_on = false;
        // Another snapshot object (a placement's view, preemption's trial): PreFilter
        // and PreScore state may count over a different set of nodes, and positions
        // differ, so nothing is carried over. Assumptions in place keep the object.
        if self.view != Some(view) {
            self.clear();
            self.view = Some(view);
        }
        self.eligible = true;
    }

    /// This member does not use the memo for Filter (nominated pods count).
    pub(super) fn decline(&mut self) {
        self.eligible = false;
        self.filter_on = false;
    }

    /// Before the Filter walk, which looks for `to_find` feasible nodes among `n_cand`
    /// candidates: whether this member uses the memo at all, and whether it stores what
    /// the memo lacks. A member whose walk samples (`to_find < n_cand`) runs the plain
    /// Filter walk and Score loop and is not signed: the batched Filter and Score paths
    /// give the same results for less than the memo's per-node lookups and the
    /// normalization of a fresh column each member (one 5,000-pod group on 5,000 nodes
    /// with upstream's sampling: 1.46G instructions with the memo, 0.75G without). So
    /// does a member the memo cannot answer: no entries, no walk, and no member after
    /// it. Otherwise the member's Filter key is computed: entries of another key are
    /// dropped, and an unsignable member runs plain.
    pub(super) fn plan(&mut self, profile: &Profile, pod: &PodInfo, state: &CycleState, to_find: usize, n_cand: usize) {
        let sampled = to_find < n_cand;
        self.store = !sampled && self.members_left > 1;
        if !std::mem::take(&mut self.eligible) {
            return;
        }
        if sampled || (!self.store && self.used.is_empty() && !self.walk.is_valid()) {
            self.run_plain();
            return;
        }
        let Some(key) = self.member_key(0, profile, pod, &state.skip_filter) else {
            return;
        };
        if self.filter_key.as_ref() != Some(&key) {
            for &p in &self.used {
                if let Some(e) = self.entries[p].as_mut() {
                    e.filter = None;
                }
            }
            self.walk.invalidate();
            self.filter_key = Some(key);
        }
        if !self.store && self.used.is_empty() && !self.walk.is_valid() {
            self.run_plain();
            return;
        }
        self.filter_on = true;
    }

    /// The member runs the plain Filter walk and Score loop (see [`GroupMemo::plan`]).
    fn run_plain(&mut self) {
        self.filter_on = false;
        self.score_on = false;
        // This member's Score runs outside the memo: the next member must not take
        // the previous memo member's columns for current.
        self.columns.invalidate();
        self.stats.members_plain += 1;
    }

    /// After PreScore: whether this member may reuse raw scores.
    pub(super) fn begin_score(&mut self, profile: &Profile, pod: &PodInfo, state: &CycleState) -> bool {
        self.score_on = false;
        let Some(key) = self.member_key(1, profile, pod, &state.skip_score) else {
            return false;
        };
        if self.score_key.as_ref() != Some(&key) {
            for &p in &self.used {
                if let Some(e) = self.entries[p].as_mut() {
                    e.scored = false;
                }
            }
            self.columns.invalidate();
            self.score_key = Some(key);
        }
        self.score_on = true;
        true
    }

    /// The Filter status remembered for `node` at `pos`, if it is the same node.
    #[inline]
    pub(super) fn filter(&mut self, pos: usize, node: &Arc<NodeInfo>) -> Option<Status> {
        let e = self.entries.get(pos)?.as_ref()?;
        let s = e.filter.as_ref().filter(|_| Arc::ptr_eq(&e.node, node))?.clone();
        self.stats.filter_hits += 1;
        Some(s)
    }

    /// Remembers `node`'s Filter status (when this member stores).
    #[inline]
    pub(super) fn store_filter(&mut self, pos: usize, node: &Arc<NodeInfo>, status: &Status) {
        if self.store {
            self.entry(pos, node).filter = Some(status.clone());
        }
    }

    /// The raw scores remembered for `node` at `pos`, if it is the same node.
    #[inline]
    pub(super) fn scores(&mut self, pos: usize, node: &Arc<NodeInfo>) -> Option<&[i64]> {
        let e = self.entries.get(pos)?.as_ref()?;
        if !e.scored || !Arc::ptr_eq(&e.node, node) {
            return None;
        }
        self.stats.score_hits += 1;
        Some(&self.rows[pos * self.plugins..(pos + 1) * self.plugins])
    }

    /// Whether the memo holds raw scores for `node` at `pos` (counted as a hit).
    #[inline]
    pub(super) fn knows_scores(&mut self, pos: usize, node: &Arc<NodeInfo>) -> bool {
        let known =
            self.entries.get(pos).and_then(Option::as_ref).is_some_and(|e| e.scored && Arc::ptr_eq(&e.node, node));
        self.stats.score_hits += u64::from(known);
        known
    }

    /// Remembers `node`'s raw scores (when this member stores).
    pub(super) fn store_scores(&mut self, pos: usize, node: &Arc<NodeInfo>, scores: &[i64]) {
        if !self.store {
            return;
        }
        let p = self.plugins;
        if self.rows.len() < (pos + 1) * p {
            self.rows.resize((pos + 1) * p, 0);
        }
        self.rows[pos * p..(pos + 1) * p].copy_from_slice(scores);
        self.entry(pos, node).scored = true;
    }

    /// `node`'s entry at `pos`, emptied first when it held another node.
    fn entry(&mut self, pos: usize, node: &Arc<NodeInfo>) -> &mut Entry {
        if self.entries.len() <= pos {
            self.entries.resize_with(pos + 1, || None);
        }
        let slot = &mut self.entries[pos];
        match slot {
            Some(e) if Arc::ptr_eq(&e.node, node) => {}
            Some(e) => *e = Entry { node: node.clone(), filter: None, scored: false },
            None => {
                self.used.push(pos);
                *slot = Some(Entry { node: node.clone(), filter: None, scored: false });
            }
        }
        slot.as_mut().expect("just filled")
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
