//! Opportunistic batching's per-profile state (KEP-5598; upstream
//! `pkg/scheduler/framework/runtime/batch.go`): the previous cycle's scored nodes,
//! handed out one by one as node hints to the next pods with the same signature.
//!
//! The rules, as upstream's v1.36: a pod gets a hint only when the state holds nodes,
//! its cycle directly follows the last one (or, with `GenericWorkload`, shares it as
//! pods of one pod-group cycle do), the last cycle succeeded, the pod has no
//! nominated node, its signature equals the state's, the state is at most 500 ms old
//! on the scheduler's clock, and the node chosen last is still there and now rejects
//! this pod (one pod per node: otherwise the last node might still be the best, and
//! its score is stale). The hint is the best remaining node. After every successful
//! cycle [`OpportunisticBatch::store`] keeps the state if the hint was used, or
//! rebuilds it from the cycle's scored nodes without the chosen one.
//!
//! With rescoring (schedkit's opt-in take on v1.37, KEP-5598 "Rescoring") the state
//! also keeps every node's raw per-plugin scores: when the last chosen node still
//! fits, it is scored again alone and every plugin normalizes again over the cached
//! raw scores, so pods that share a node batch too (see [`Rescorer`]).

use std::time::Duration;

pub use crate::framework::{BatchAttempt, FlushReason};
use crate::framework::{NodeScore, PluginSet, PodSignature};

mod rescore;
use crate::model::Symbol;
pub(crate) use rescore::{RawScores, Rescorer};

/// How long a batch may be reused (upstream `maxBatchAge`).
pub const MAX_BATCH_AGE: Duration = Duration::from_millis(500);

/// Counts of one profile's batching, always kept (the metrics, when a recorder is
/// set, carry the same counts plus durations).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BatchStats {
    /// Attempts by [`BatchAttempt`] (index = variant order).
    pub attempts: [u64; 3],
    /// Flushes by [`FlushReason`] (index = variant order).
    pub flushes: [u64; 8],
    /// Pods placed on their hint (upstream `batchedPods`).
    pub batched_pods: u64,
    /// Hints given after re-scoring the node chosen last (rescoring only; v1.37's
    /// `scheduler_batch_rescore_attempts_total` counts the same events).
    pub rescores: u64,
}

impl BatchStats {
    /// Attempts with `result`.
    pub fn attempts(&self, result: BatchAttempt) -> u64 {
        self.attempts[result as usize]
    }
    /// Flushes for `reason`.
    pub fn flushes(&self, reason: FlushReason) -> u64 {
        self.flushes[reason as usize]
    }
}

/// What the last chosen node says about this pod (upstream runs the Filter plugins
/// on it inside `GetNodeHint`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LastNode {
    /// Not in the snapshot.
    Missing,
    /// Filter rejects the pod there: the node is full for it.
    Rejected,
    /// The pod would still fit there.
    Fits,
    /// A Filter plugin failed there: upstream flushes (`node_not_full`), and there
    /// is nothing to rescore.
    Errored,
}

/// A scored node kept for later hints: its weighted total, its position among the
/// cycle's feasible nodes (the tie-break), its name.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Scored {
    pub(crate) total: i64,
    pub(crate) pos: u32,
    pub(crate) name: Symbol,
    /// Row of this node's raw scores (rescoring only).
    pub(crate) row: u32,
}

/// How [`OpportunisticBatch::compatible`] looks at the node chosen last.
enum Check<'a, F> {
    /// Filter only (v1.36).
    Filter(F),
    /// Filter, and re-score when it still fits.
    Rescore(&'a mut dyn Rescorer),
}

/// The reusable result of one full evaluation (upstream `batchState`).
#[derive(Debug)]
struct BatchState {
    signature: PodSignature,
    /// Remaining scored nodes; once `sorted`, best last (so a hint is a `pop`).
    nodes: Vec<Scored>,
    /// Sorting waits for the first hint: a cycle whose pod gets none pays only
    /// the copy (upstream heapifies, also O(n)).
    sorted: bool,
    created: Duration,
    /// Raw scores (rescoring only).
    raw: Option<RawScores>,
}

#[derive(Debug, Clone, Copy, Default)]
struct LastCycle {
    count: u64,
    /// Node names here and in [`BatchState`] are bare symbols (no reference per node
    /// per cycle). That is sound: they are used only in the cycle right after the one
    /// that stored them, whose snapshot held every named node until this cycle's
    /// snapshot update. A node removed meanwhile is freed by that update at the
    /// earliest, after every node of the new snapshot was interned, so its id names
    /// no node of this cycle (the hint finds no node: `NodeMissing` or no hint).
    chosen: Symbol,
    succeeded: bool,
    /// The chosen node's position and raw-score row in the state (rescoring).
    pos: u32,
    row: u32,
}

/// One profile's batch (upstream `OpportunisticBatch`).
#[derive(Debug, Default)]
pub(crate) struct OpportunisticBatch {
    state: Option<BatchState>,
    last: LastCycle,
    /// With `GenericWorkload`, pods of one pod-group cycle share a cycle count.
    generic_workload: bool,
    /// Equal totals rank by node name (the `SmallestName` tie-break) rather than by
    /// feasible order.
    ties_by_name: bool,
    /// Re-score the last chosen node when it still fits (schedkit, off by default).
    rescoring: bool,
    /// Normalization buffer (rescoring), kept between cycles.
    scratch: Vec<NodeScore>,
    /// A spare raw-score buffer handed to the cycle to fill (rescoring).
    spare: RawScores,
    pub(crate) stats: BatchStats,
    /// Position and raw-score row of the last hint popped.
    hinted: (u32, u32),
    /// Flushes of the current call, for the metrics (taken by the caller).
    pub(crate) flushed: Option<FlushReason>,
}

impl OpportunisticBatch {
    pub(crate) fn new(generic_workload: bool, ties_by_name: bool) -> Self {
        OpportunisticBatch { generic_workload, ties_by_name, ..OpportunisticBatch::default() }
    }

    /// Turns rescoring on (schedkit's opt-in v1.37 behaviour).
    pub(crate) fn with_rescoring(mut self, on: bool) -> Self {
        self.rescoring = on;
        self
    }

    /// Whether this batch re-scores.
    pub(crate) fn rescoring(&self) -> bool {
        self.rescoring
    }

    /// The buffer a full evaluation fills with raw scores (rescoring), cleared; its
    /// memory is reused from a dropped state. Hand it back with
    /// [`Self::put_raw_buffer`] before [`Self::store_rescoring`].
    pub(crate) fn take_raw_buffer(&mut self) -> RawScores {
        let mut raw = std::mem::take(&mut self.spare);
        raw.values.clear();
        raw.skipped = PluginSet::default();
        raw
    }

    /// Returns the buffer from [`Self::take_raw_buffer`].
    pub(crate) fn put_raw_buffer(&mut self, raw: RawScores) {
        self.spare = raw;
    }

    fn flush(&mut self, reason: FlushReason) {
        self.stats.flushes[reason as usize] += 1;
        self.flushed = Some(reason);
    }

    fn state_empty(&self) -> bool {
        self.state.as_ref().is_none_or(|s| s.nodes.is_empty())
    }

    /// The node hint for `signature`'s pod in cycle `cycle` (upstream `GetNodeHint`).
    /// `last_node` runs the Filter plugins on the node chosen last.
    pub(crate) fn node_hint(
        &mut self,
        signature: Option<&PodSignature>,
        nominated: bool,
        cycle: u64,
        now: Duration,
        last_node: impl FnOnce(Symbol) -> LastNode,
    ) -> Option<Symbol> {
        self.flushed = None;
        let hint =
            self.compatible(signature, nominated, cycle, now, Check::Filter(last_node)).then(|| self.pop()).flatten();
        if hint.is_none() {
            self.stats.attempts[BatchAttempt::NoHint as usize] += 1;
        }
        hint
    }

    /// [`Self::node_hint`] with rescoring (when the batch re-scores): a last node
    /// that still fits is scored again and put back, and the list is normalized
    /// again and re-sorted before the best node is popped.
    pub(crate) fn node_hint_rescoring(
        &mut self,
        signature: Option<&PodSignature>,
        nominated: bool,
        cycle: u64,
        now: Duration,
        rescorer: &mut dyn Rescorer,
    ) -> Option<Symbol> {
        self.flushed = None;
        let check: Check<fn(Symbol) -> LastNode> = Check::Rescore(rescorer);
        let hint = self.compatible(signature, nominated, cycle, now, check).then(|| self.pop()).flatten();
        if hint.is_none() {
            self.stats.attempts[BatchAttempt::NoHint as usize] += 1;
        }
        hint
    }

    fn pop(&mut self) -> Option<Symbol> {
        let by_name = self.ties_by_name;
        let s = self.state.as_mut()?;
        if !s.sorted {
            // Best last: higher total, then earlier position (or smaller name).
            if by_name {
                // Compare the names' text under one read lock, without pinning them.
                Symbol::with_texts(|t| {
                    s.nodes
                        .sort_unstable_by(|a, b| a.total.cmp(&b.total).then_with(|| t.get(b.name).cmp(t.get(a.name))));
                });
            } else {
                s.nodes.sort_unstable_by(|a, b| a.total.cmp(&b.total).then(b.pos.cmp(&a.pos)));
            }
            s.sorted = true;
        }
        let n = s.nodes.pop()?;
        self.hinted = (n.pos, n.row);
        Some(n.name)
    }

    fn compatible(
        &mut self,
        signature: Option<&PodSignature>,
        nominated: bool,
        cycle: u64,
        now: Duration,
        check: Check<'_, impl FnOnce(Symbol) -> LastNode>,
    ) -> bool {
        if self.state_empty() {
            return false;
        }
        if cycle != self.last.count + 1 && !(self.generic_workload && cycle == self.last.count) {
            self.flush(FlushReason::PodSkipped);
            return false;
        }
        if !self.last.succeeded {
            self.flush(FlushReason::PodFailed);
            return false;
        }
        // A nominated node takes precedence: such a pod gets no hint (upstream's
        // batch_test "a second pod with a nominated node does not get a hint"; v1.37
        // counts it under a ninth reason, `pod_nominated`, which v1.36 lacks).
        if nominated {
            return false;
        }
        let state = self.state.as_ref().expect("checked non-empty");
        if !signature.is_some_and(|s| s.same(&state.signature)) {
            self.flush(FlushReason::PodIncompatible);
            return false;
        }
        if now > state.created + MAX_BATCH_AGE {
            self.flush(FlushReason::Expired);
            return false;
        }
        let (verdict, rescorer) = match check {
            Check::Filter(f) => (f(self.last.chosen), None),
            Check::Rescore(r) => (r.last_node(self.last.chosen), Some(r)),
        };
        if verdict == LastNode::Missing {
            self.flush(FlushReason::NodeMissing);
            return false;
        }
        // Rescoring: the last node goes back in when it still fits, and the list
        // is normalized again over the nodes it now holds.
        if let Some(r) = rescorer
            && self.rescoring
            && self.state.as_ref().is_some_and(|s| s.raw.is_some())
        {
            let fits = verdict == LastNode::Fits;
            if verdict != LastNode::Errored && self.rescore(r, fits) {
                self.stats.rescores += u64::from(fits);
                return true;
            }
            self.flush(FlushReason::NodeNotFull);
            self.state = None;
            return false;
        }
        if verdict == LastNode::Rejected {
            return true;
        }
        self.flush(FlushReason::NodeNotFull);
        false
    }

    /// Records a successful cycle (upstream `StoreScheduleResults`): `others` are the
    /// other scored nodes, best first (`None` when scoring was skipped).
    pub(crate) fn store(
        &mut self,
        signature: Option<&PodSignature>,
        hinted: Option<Symbol>,
        chosen: Symbol,
        others: Option<&mut dyn Iterator<Item = Scored>>,
        cycle: u64,
        now: Duration,
    ) -> BatchAttempt {
        self.store_rescoring(signature, hinted, chosen, others, cycle, now, (0, 0), false)
    }

    /// [`Self::store`]; `chosen_at` is the chosen node's (position, raw row) in a
    /// full evaluation, and `with_raw` moves the raw scores the cycle wrote into
    /// [`Self::raw_buffer`] into the new state (rescoring).
    #[expect(clippy::too_many_arguments, reason = "upstream's StoreScheduleResults plus the rescoring rows")]
    pub(crate) fn store_rescoring(
        &mut self,
        signature: Option<&PodSignature>,
        hinted: Option<Symbol>,
        chosen: Symbol,
        others: Option<&mut dyn Iterator<Item = Scored>>,
        cycle: u64,
        now: Duration,
        chosen_at: (u32, u32),
        with_raw: bool,
    ) -> BatchAttempt {
        self.flushed = None;
        let (pos, row) = if hinted == Some(chosen) { self.hinted } else { chosen_at };
        self.last = LastCycle { count: cycle, chosen, succeeded: true, pos, row };
        if hinted == Some(chosen) {
            self.stats.attempts[BatchAttempt::HintUsed as usize] += 1;
            self.stats.batched_pods += 1;
            return BatchAttempt::HintUsed;
        }
        let result = if hinted.is_some() {
            self.stats.attempts[BatchAttempt::HintNotUsed as usize] += 1;
            BatchAttempt::HintNotUsed
        } else {
            BatchAttempt::NoHint
        };
        let mut old = self.state.take();
        let old_raw = old.as_mut().and_then(|s| s.raw.take());
        match (signature, others) {
            (Some(sig), Some(others)) => {
                // Reuse the old list's memory for the new one.
                let mut nodes = old.map(|s| s.nodes).unwrap_or_default();
                nodes.clear();
                nodes.extend(others);
                if nodes.is_empty() {
                    self.flush(FlushReason::EmptyList);
                } else {
                    let raw = with_raw.then(|| std::mem::take(&mut self.spare));
                    self.state = Some(BatchState { signature: sig.clone(), nodes, sorted: false, created: now, raw });
                }
            }
            // An empty list is the reason even for an unsigned pod (upstream checks it last).
            (None, Some(others)) => {
                let reason =
                    if others.next().is_some() { FlushReason::PodNotBatchable } else { FlushReason::EmptyList };
                self.flush(reason);
            }
            (_, None) => self.flush(FlushReason::EmptyList),
        }
        // Keep the dropped state's raw-score memory for the next evaluation.
        if let Some(raw) = old_raw
            && raw.values.capacity() > self.spare.values.capacity()
        {
            self.spare = raw;
        }
        result
    }

    /// The remaining hints, best first (tests).
    #[cfg(test)]
    fn remaining(&mut self) -> Vec<&'static str> {
        let Some(top) = self.pop() else { return Vec::new() };
        let s = self.state.as_mut().expect("popped from it");
        s.nodes.push(Scored { total: i64::MAX, pos: 0, name: top, row: 0 });
        s.nodes.iter().rev().map(|n| n.name.as_str()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn sig(s: &str) -> PodSignature {
        let mut f = crate::framework::SignFragments::new();
        let owned: &'static str = Symbol::intern(s).as_str();
        f.add("sig", |w| {
            w.str(owned);
        });
        f.finish()
    }

    /// Nodes in best-first order, as upstream's test lists give them.
    fn scored(names: &[&str]) -> std::vec::IntoIter<Scored> {
        let n = names.len() as i64;
        let v: Vec<Scored> = names
            .iter()
            .enumerate()
            .map(|(i, x)| Scored { total: n - i as i64, pos: i as u32, name: Symbol::intern(x), row: i as u32 })
            .collect();
        v.into_iter()
    }

    /// Upstream batch_test.go's `BatchTestPlugin`: a node holds one pod whose id
    /// starts with `b` ("blocking"); `a` pods never block.
    fn last_node(blocking_first: bool, blocking_second: bool) -> impl FnOnce(Symbol) -> LastNode {
        move |_| if blocking_first && blocking_second { LastNode::Rejected } else { LastNode::Fits }
    }

    #[expect(clippy::struct_excessive_bools, reason = "upstream's test table, field for field")]
    struct Case {
        name: &'static str,
        first_blocking: bool,
        first_sig: &'static str,
        first_ok: bool,
        first_others: Option<Vec<&'static str>>,
        same_cycle: bool,
        skip_pod: bool,
        second_blocking: bool,
        second_nominated: bool,
        second_sig: &'static str,
        second_chosen: &'static str,
        generic_workload: bool,
        hint: Option<&'static str>,
        state: Option<Vec<&'static str>>,
    }

    fn base(name: &'static str) -> Case {
        Case {
            name,
            first_blocking: true,
            first_sig: "sig",
            first_ok: true,
            first_others: Some(vec!["n1"]),
            same_cycle: false,
            skip_pod: false,
            second_blocking: true,
            second_nominated: false,
            second_sig: "sig",
            second_chosen: "n1",
            generic_workload: false,
            hint: Some("n1"),
            state: None,
        }
    }

    /// Upstream pkg/scheduler/framework/runtime/batch_test.go, `TestBatchBasic`: every
    /// case, with its names. The first pod (cycle 1) chose `n3`; the second pod's
    /// cycle is 2, 3 when another pod ran between, or 1 in the same pod-group cycle.
    #[test]
    fn batch_basic() {
        let cases = vec![
            base("a second pod with the same signature gets a hint"),
            Case {
                first_blocking: false,
                second_blocking: false,
                second_sig: "sig2",
                hint: None,
                ..base("a second pod with a different signature doesn't get a hint")
            },
            Case {
                first_blocking: false,
                second_blocking: false,
                hint: None,
                ..base("a second pod doesn't get a hint if it's not 1-pod-per-node")
            },
            Case { first_ok: false, hint: None, ..base("pod doesn't get hint if previous pod didn't scheduled") },
            Case { first_others: Some(vec![]), second_chosen: "n4", hint: None, ..base("empty list") },
            Case { first_others: None, second_chosen: "n4", hint: None, ..base("nil list") },
            Case {
                skip_pod: true,
                hint: None,
                ..base("pod doesn't get hint because the previous pod is to a different profile")
            },
            Case {
                same_cycle: true,
                generic_workload: false,
                hint: None,
                ..base(
                    "pod doesn't use batch from preceding pod when they are from the same cycle state, but GenericWorkload is disabled",
                )
            },
            Case {
                same_cycle: true,
                generic_workload: true,
                ..base(
                    "pod uses batch from preceding pod when they are from the same cycle state and GenericWorkload is enabled",
                )
            },
            Case {
                first_others: Some(vec!["n1", "n2"]),
                state: Some(vec!["n2"]),
                ..base("pod uses batch from preceding pod and leaves remaining batch to next pod")
            },
            Case {
                second_nominated: true,
                hint: None,
                ..base("a second pod with a nominated node does not get a hint")
            },
        ];
        for c in cases {
            let mut b = OpportunisticBatch::new(c.generic_workload, false);
            let now = Duration::ZERO;
            let first = sig(c.first_sig);
            assert_eq!(b.node_hint(Some(&first), false, 1, now, |_| LastNode::Missing), None, "{}", c.name);
            if c.first_ok {
                let mut it = scored(c.first_others.as_deref().unwrap_or_default());
                let it: Option<&mut dyn Iterator<Item = Scored>> =
                    if c.first_others.is_some() { Some(&mut it) } else { None };
                b.store(Some(&first), None, Symbol::intern("n3"), it, 1, now);
            }
            let cycle = if c.skip_pod {
                3
            } else if c.same_cycle {
                1
            } else {
                2
            };
            let second = sig(c.second_sig);
            let hint = b.node_hint(
                Some(&second),
                c.second_nominated,
                cycle,
                now,
                last_node(c.first_blocking, c.second_blocking),
            );
            assert_eq!(hint.map(Symbol::as_str), c.hint, "{}", c.name);
            b.store(Some(&second), hint, Symbol::intern(c.second_chosen), None, cycle, now);
            match &c.state {
                None => assert!(b.remaining().is_empty(), "{}: state {:?}", c.name, b.remaining()),
                Some(want) => {
                    assert!(b.state.as_ref().unwrap().signature.same(&second), "{}", c.name);
                    assert_eq!(&b.remaining(), want, "{}", c.name);
                }
            }
        }
    }

    /// The 500 ms limit on the scheduler's clock: at the limit the batch is reused,
    /// one nanosecond later it is flushed as `expired`.
    #[test]
    fn expires_after_max_age() {
        for (age, want) in [(MAX_BATCH_AGE, true), (MAX_BATCH_AGE + Duration::from_nanos(1), false)] {
            let mut b = OpportunisticBatch::new(false, false);
            let s = sig("x");
            let mut it = scored(&["n1"]);
            b.store(Some(&s), None, Symbol::intern("n0"), Some(&mut it), 1, Duration::from_secs(1));
            let hint = b.node_hint(Some(&s), false, 2, Duration::from_secs(1) + age, |_| LastNode::Rejected);
            assert_eq!(hint.is_some(), want);
            assert_eq!(b.stats.flushes(FlushReason::Expired), u64::from(!want));
        }
    }

    type Act<'a> = Box<dyn Fn(&mut OpportunisticBatch) + 'a>;

    /// Every flush reason is reachable and counted under upstream's label.
    #[test]
    fn flush_reasons() {
        let s = sig("x");
        let n = |x: &str| Symbol::intern(x);
        let stored = |b: &mut OpportunisticBatch| {
            let mut it = scored(&["n1", "n2"]);
            b.store(Some(&s), None, n("n0"), Some(&mut it), 1, Duration::ZERO);
        };
        let cases: [(FlushReason, Act<'_>); 7] = [
            (
                FlushReason::PodSkipped,
                Box::new(|b| {
                    let _ = b.node_hint(Some(&s), false, 5, Duration::ZERO, |_| LastNode::Rejected);
                }),
            ),
            (
                FlushReason::PodIncompatible,
                Box::new(|b| {
                    let _ = b.node_hint(None, false, 2, Duration::ZERO, |_| LastNode::Rejected);
                }),
            ),
            (
                FlushReason::NodeMissing,
                Box::new(|b| {
                    let _ = b.node_hint(Some(&s), false, 2, Duration::ZERO, |_| LastNode::Missing);
                }),
            ),
            (
                FlushReason::NodeNotFull,
                Box::new(|b| {
                    let _ = b.node_hint(Some(&s), false, 2, Duration::ZERO, |_| LastNode::Fits);
                }),
            ),
            (
                FlushReason::Expired,
                Box::new(|b| {
                    let _ = b.node_hint(Some(&s), false, 2, Duration::from_secs(1), |_| LastNode::Rejected);
                }),
            ),
            (
                FlushReason::EmptyList,
                Box::new(|b| {
                    let _ = b.store(Some(&s), None, n("n9"), None, 2, Duration::ZERO);
                }),
            ),
            (
                FlushReason::PodNotBatchable,
                Box::new(|b| {
                    let mut it = scored(&["n1"]);
                    b.store(None, None, n("n9"), Some(&mut it), 2, Duration::ZERO);
                }),
            ),
        ];
        for (reason, act) in cases {
            let mut b = OpportunisticBatch::new(false, false);
            stored(&mut b);
            act(&mut b);
            assert_eq!(b.stats.flushes(reason), 1, "{}", reason.as_str());
            assert_eq!(b.stats.flushes.iter().sum::<u64>(), 1, "{}", reason.as_str());
        }
        // pod_failed: a state whose last cycle is not marked succeeded.
        let mut b = OpportunisticBatch::new(false, false);
        stored(&mut b);
        b.last.succeeded = false;
        assert_eq!(b.node_hint(Some(&s), false, 2, Duration::ZERO, |_| LastNode::Rejected), None);
        assert_eq!(b.stats.flushes(FlushReason::PodFailed), 1);
        let mut labels: Vec<&str> = FlushReason::ALL.iter().map(|r| r.as_str()).collect();
        labels.sort_unstable();
        labels.dedup();
        assert_eq!(labels.len(), 8, "eight distinct upstream reasons");
    }

    /// A used hint keeps the state and counts `hint_used`; an unused one rebuilds it.
    #[test]
    fn hint_used_and_not_used() {
        let s = sig("x");
        let n = |x: &str| Symbol::intern(x);
        let mut b = OpportunisticBatch::new(false, false);
        let mut it = scored(&["n1", "n2", "n3"]);
        b.store(Some(&s), None, n("n0"), Some(&mut it), 1, Duration::ZERO);
        let h = b.node_hint(Some(&s), false, 2, Duration::ZERO, |_| LastNode::Rejected);
        assert_eq!(h, Some(n("n1")));
        assert_eq!(b.store(Some(&s), h, n("n1"), None, 2, Duration::ZERO), BatchAttempt::HintUsed);
        assert_eq!(b.remaining(), ["n2", "n3"]);
        let h = b.node_hint(Some(&s), false, 3, Duration::ZERO, |_| LastNode::Rejected);
        assert_eq!(h, Some(n("n2")));
        let mut it = scored(&["n7"]);
        assert_eq!(b.store(Some(&s), h, n("n5"), Some(&mut it), 3, Duration::ZERO), BatchAttempt::HintNotUsed);
        assert_eq!(b.remaining(), ["n7"]);
        assert_eq!(b.stats.attempts(BatchAttempt::HintUsed), 1);
        assert_eq!(b.stats.attempts(BatchAttempt::HintNotUsed), 1);
        assert_eq!(b.stats.attempts(BatchAttempt::NoHint), 0);
        assert_eq!(b.stats.batched_pods, 1);
    }
}
