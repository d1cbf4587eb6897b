//! The cycle's opportunistic-batching steps (upstream `schedule_one.go` around
//! `GetNodeHint` and `StoreScheduleResults`): asking the profile's batch for a node
//! hint after PreFilter, trying the hinted node alone, and storing every successful
//! cycle's outcome. The state machine itself is in `batch.rs`.

use std::time::Instant;

use super::batch::{LastNode, Rescorer, Scored};
use super::{CycleBatch, Scheduler};
use crate::framework::preemption::run_filters_with_nominated;
use crate::framework::{BatchAttempt, CycleState, NodeScore, PluginSet, Profile, runtime};
use crate::model::Symbol;
use crate::snapshot::{NodeList, PodInfo, Snapshot};

/// Rescoring's view of the cycle: PreScore and Score on one node, NormalizeScore
/// over the batch (v1.37 KEP-5598 "Rescoring": PreScore for every plugin, Score on
/// the last chosen node only, NormalizeScore over the cached subset).
struct CycleRescorer<'a> {
    profile: &'a Profile,
    state: &'a mut CycleState,
    pod: &'a PodInfo,
    snap: &'a Snapshot,
}

/// The Filter plugins on the node chosen last.
fn filter_last(profile: &Profile, state: &CycleState, pod: &PodInfo, snap: &Snapshot, name: Symbol) -> LastNode {
    let Some(i) = snap.index_of(name) else { return LastNode::Missing };
    let guard = runtime::FilterGuard::new(profile);
    match guard.run(|current| runtime::run_filters(profile, state, pod, &snap.nodes()[i], current)) {
        Ok(s) if s.is_rejected() => LastNode::Rejected,
        Ok(s) if s.is_success() => LastNode::Fits,
        // An error (or a panic) is not a rejection: upstream flushes.
        _ => LastNode::Errored,
    }
}

impl Rescorer for CycleRescorer<'_> {
    fn last_node(&mut self, node: Symbol) -> LastNode {
        filter_last(self.profile, self.state, self.pod, self.snap, node)
    }

    fn score_node(&mut self, node: Symbol, raw: &mut [i64], skipped: &mut PluginSet) -> bool {
        let Some(i) = self.snap.index_of(node) else { return false };
        let idx = [i];
        let nodes = NodeList::new(self.snap, &idx);
        if !runtime::run_pre_score(self.profile, self.state, self.pod, nodes, None).is_success() {
            return false;
        }
        skipped.clone_from(&self.state.skip_score);
        let mut one = [NodeScore { name: node, score: 0 }];
        for (pi, (sp, cell)) in self.profile.score.iter().zip(raw.iter_mut()).enumerate() {
            *cell = 0;
            if self.state.skips_score(pi) {
                continue;
            }
            one[0].score = 0;
            if runtime::run_score_plugin(sp, self.state, self.pod, nodes, &mut one, None).is_err() {
                return false;
            }
            *cell = one[0].score;
        }
        true
    }

    fn normalize(&mut self, plugin: usize, scores: &mut [NodeScore]) -> Option<i64> {
        let sp = self.profile.score.get(plugin)?;
        runtime::run_normalize(sp, self.state, self.pod, scores, None).ok().map(|()| sp.weight)
    }
}

impl Scheduler {
    /// Asks the profile's batch for a hint (upstream `GetNodeHint`, after PreFilter):
    /// the Filter plugins run on the node chosen last to see that it is now full.
    pub(super) fn batch_hint(
        &mut self,
        profile: &Profile,
        state: &mut CycleState,
        pod: &PodInfo,
        snap: &Snapshot,
        cb: &mut CycleBatch,
    ) {
        let Some(batch) = self.batches.get_mut(cb.profile).and_then(Option::as_mut) else { return };
        let started = self.cycle_metrics.as_ref().map(|_| Instant::now());
        let nominated = !pod.pod.status.nominated_node_name.is_empty()
            || self.handle.preemption().nominator().nominated_node(&pod.uid).is_some();
        let now = self.handle.clock().now();
        cb.hint = if batch.rescoring() {
            let mut rescorer = CycleRescorer { profile, state, pod, snap };
            batch.node_hint_rescoring(cb.signature.as_ref(), nominated, self.cycle_count, now, &mut rescorer)
        } else {
            let state: &CycleState = state;
            let last_node = |name: Symbol| filter_last(profile, state, pod, snap, name);
            batch.node_hint(cb.signature.as_ref(), nominated, self.cycle_count, now, last_node)
        };
        if let (Some(m), Some(t)) = (&self.cycle_metrics, started) {
            let bm = m.batch();
            if let Some(r) = batch.flushed.take() {
                bm.flush(r);
            }
            if cb.hint.is_none() {
                bm.attempt(BatchAttempt::NoHint);
            }
            bm.observe_hint(cb.hint.is_some(), t.elapsed());
        }
    }

    /// Filters the hinted node alone, counting nominated pods (upstream
    /// `evaluateNominatedNode` with the hint): when it passes it is the only feasible
    /// node and scoring is skipped. A node PreFilter ruled out is never used.
    pub(super) fn batch_try_hint(
        &mut self,
        profile: &Profile,
        state: &CycleState,
        pod: &PodInfo,
        snap: &Snapshot,
        narrowed: &crate::framework::PreFilterResult,
        cb: &CycleBatch,
    ) -> Option<usize> {
        let hint = cb.hint?;
        let idx = snap.index_of(hint)?;
        if !narrowed.admits(snap, idx) {
            return None;
        }
        let nominated = self.handle.preemption().nominator().snapshot();
        let guard = runtime::FilterGuard::new(profile);
        let ok = guard
            .run(|current| {
                run_filters_with_nominated(profile, state, pod, &snap.nodes()[idx], nominated.as_deref(), current)
                    .is_success()
            })
            .unwrap_or(false);
        ok.then_some(idx)
    }

    /// Records a successful cycle that chose snapshot node `chosen` (upstream
    /// `StoreScheduleResults`); with `scored`, the other feasible nodes and their
    /// totals (in `bufs`) become the next batch.
    pub(super) fn batch_store(&mut self, cb: &CycleBatch, snap: &Snapshot, chosen: usize, scored: bool) {
        let Some(batch) = self.batches.get_mut(cb.profile).and_then(Option::as_mut) else { return };
        let started = self.cycle_metrics.as_ref().map(|_| Instant::now());
        let nodes = snap.nodes();
        let chosen_name = nodes[chosen].name();
        let now = self.handle.clock().now();
        let result = if scored {
            let bufs = &self.bufs;
            // The chosen node's row is read only by a later rescoring of this batch; an
            // unsigned pod's store flushes the batch, so it is not looked for then.
            let at = match cb.signature {
                Some(_) => bufs.feasible.iter().position(|&i| i == chosen).unwrap_or(0) as u32,
                None => 0,
            };
            let mut others = bufs
                .feasible
                .iter()
                .zip(&bufs.totals)
                .enumerate()
                .filter(|&(_, (&i, _))| i != chosen)
                .map(|(k, (&i, &total))| Scored { total, pos: k as u32, name: nodes[i].name(), row: k as u32 });
            let with_raw = batch.rescoring();
            batch.store_rescoring(
                cb.signature.as_ref(),
                cb.hint,
                chosen_name,
                Some(&mut others),
                self.cycle_count,
                now,
                (at, at),
                with_raw,
            )
        } else {
            batch.store(cb.signature.as_ref(), cb.hint, chosen_name, None, self.cycle_count, now)
        };
        if let (Some(m), Some(t)) = (&self.cycle_metrics, started) {
            let bm = m.batch();
            if let Some(r) = batch.flushed.take() {
                bm.flush(r);
            }
            if result != BatchAttempt::NoHint {
                bm.attempt(result);
            }
            bm.observe_store(t.elapsed());
        }
    }
}
