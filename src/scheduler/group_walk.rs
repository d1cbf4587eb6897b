//! The Filter walk of a pod-group member replayed from the previous identical
//! member's (schedkit's own): in a placement's view small enough that every member
//! filters every node, only the nodes whose `NodeInfo` changed since (a member was
//! assumed onto them, or undone) go through the Filter plugins again.
//!
//! Why this is exact: it rests on the group memo's premise (`group_memo.rs`): within
//! one snapshot view, members under one memo Filter key get the same Filter status on
//! the very same `NodeInfo`. When the candidates are all the view's nodes (PreFilter
//! narrowed nothing) and the walk wants at least as many feasible nodes as there are
//! candidates, the walk processes every node once, in snapshot order from the rotating
//! start, whatever the statuses; so the feasible nodes, the failed nodes with their
//! statuses (both in walk order) and the count processed are a function of the
//! per-node statuses and the start alone. The replay keeps the last statuses by
//! snapshot position with the `NodeInfo` each was computed on, refilters the positions
//! whose `NodeInfo` is another object now, and lists the outcomes from the start.
//! Members whose walk stops early (sampling) walk as before.
//!
//! The positions to refilter come from the snapshot's change log
//! ([`Snapshot::changed_since`] the generation the statuses were brought up to date at):
//! every in-place replacement bumps the generation and is logged, so a position not
//! logged since holds the very `NodeInfo` its status was computed on. When no
//! refiltered node was or becomes a failed one and the walk starts where it did, the
//! feasible and failed lists are the last ones, copied whole; otherwise they are
//! listed again from the statuses. Without a log reaching back (compacted), every
//! position's node is compared instead.

use std::sync::Arc;

use super::Scheduler;
use crate::framework::{Code, CycleState, Profile, Status, runtime};
use crate::snapshot::{NodeInfo, PodInfo, Snapshot};

/// The last full walk in the memo's view under its Filter key: every node's status, by
/// snapshot position, and the node it was computed on.
#[derive(Default)]
pub(super) struct LastWalk {
    valid: bool,
    /// The node each status is for (held, so its address is not reused).
    nodes: Vec<Arc<NodeInfo>>,
    status: Vec<Status>,
    /// The snapshot generation at which every status was last brought up to date.
    generation: u64,
    /// The walk's start and its feasible and failed lists then, in walk order.
    start: usize,
    feasible: Vec<usize>,
    failed: Vec<(usize, Status)>,
}

impl LastWalk {
    /// Forgets the walk (another view or Filter key, or the cycle ended).
    pub(super) fn invalidate(&mut self) {
        if self.valid {
            self.valid = false;
            self.nodes.clear();
            self.status.clear();
            self.feasible.clear();
            self.failed.clear();
        }
    }

    /// Records the walk's lists (in `feasible`/`failed`, walk order from `start`),
    /// with the statuses current at `generation`.
    fn keep_lists(&mut self, generation: u64, start: usize, feasible: &[usize], failed: &[(usize, Status)]) {
        self.generation = generation;
        self.start = start;
        self.feasible.clear();
        self.feasible.extend_from_slice(feasible);
        self.failed.clear();
        self.failed.extend(failed.iter().cloned());
    }

    /// Whether a walk is kept.
    pub(super) fn is_valid(&self) -> bool {
        self.valid
    }
}

impl Scheduler {
    /// [`Scheduler::find_feasible`], or for a pod-group member the replay of the last
    /// full walk in its view (see the module doc); a full walk is recorded for the
    /// members after it. Fills `bufs.feasible`/`bufs.failed`; returns how many nodes
    /// were processed.
    #[expect(clippy::too_many_arguments, reason = "internal; find_feasible's arguments")]
    pub(super) fn find_feasible_or_replay(
        &mut self,
        profile: &Profile,
        state: &CycleState,
        pod: &PodInfo,
        snap: &Snapshot,
        narrowed: bool,
        n_cand: usize,
        to_find: usize,
        start: usize,
    ) -> usize {
        // The walk covers every node in snapshot order from `start` (module doc).
        let whole = !narrowed && to_find >= n_cand && profile.has_filter_plugins();
        let Some(memo) = self.group_memo.as_mut().filter(|m| m.filter_on && whole) else {
            return self.find_feasible(profile, state, pod, snap, narrowed, n_cand, to_find, start);
        };
        let nodes = snap.nodes();
        let walk = &mut memo.walk;
        let n = nodes.len();
        if walk.valid && walk.nodes.len() == n && n > 0 {
            // The positions replaced since the statuses were last brought up to date
            // are refiltered (every position when the log does not reach back); the
            // lists are copied when no refiltered node was or becomes a failed one,
            // else listed again in walk order. The running Filters are listed only
            // when a node changed.
            let mut active = None;
            let guard = runtime::FilterGuard::new(profile);
            let generation = snap.generation();
            let changed = snap.changed_since(walk.generation);
            let LastWalk {
                nodes: held, status, start: kept_start, feasible: kept_feasible, failed: kept_failed, ..
            } = &mut *walk;
            let bufs = &mut self.bufs;
            let (mut refiltered, mut error, mut relist) = (0usize, false, *kept_start != start % n);
            let outcome = guard.run(|current| {
                let mut refilter = |i: usize| {
                    if i < n && !Arc::ptr_eq(&held[i], &nodes[i]) {
                        let active = active.get_or_insert_with(|| runtime::ActiveFilters::new(profile, state));
                        let was_feasible = status[i].is_success();
                        status[i] = runtime::run_active_filters(active, state, pod, &nodes[i], current);
                        held[i] = nodes[i].clone();
                        refiltered += 1;
                        error |= status[i].code() == Code::Error;
                        relist |= !(was_feasible && status[i].is_success());
                    }
                };
                match changed {
                    Some(positions) => positions.for_each(&mut refilter),
                    None => (0..n).for_each(&mut refilter),
                }
                if relist {
                    for i in (start % n..n).chain(0..start % n) {
                        let s = &status[i];
                        if s.is_success() {
                            bufs.feasible.push(i);
                        } else {
                            bufs.failed.push((i, s.clone()));
                        }
                    }
                } else {
                    bufs.feasible.extend_from_slice(kept_feasible);
                    bufs.failed.extend(kept_failed.iter().cloned());
                }
            });
            if outcome.is_ok() {
                memo.stats.walks_replayed += 1;
                memo.stats.filter_hits += (n - refiltered) as u64;
                if error {
                    walk.invalidate();
                } else if relist {
                    walk.keep_lists(generation, start % n, &bufs.feasible, &bufs.failed);
                } else {
                    walk.generation = generation;
                }
                return n;
            }
            // A plugin panicked: the walk below (from empty lists) finds and blames it.
            bufs.feasible.clear();
            bufs.failed.clear();
            walk.invalidate();
        }
        let processed = self.find_feasible(profile, state, pod, snap, narrowed, n_cand, to_find, start);
        let bufs = &self.bufs;
        if let Some(memo) = self.group_memo.as_mut()
            && processed == n_cand
            && n_cand == nodes.len()
            && bufs.feasible.len() + bufs.failed.len() == n_cand
            && bufs.failed.iter().all(|(_, s)| s.code() != Code::Error)
        {
            let walk = &mut memo.walk;
            walk.nodes.clear();
            walk.nodes.extend(nodes.iter().cloned());
            walk.status.clear();
            walk.status.resize(n_cand, Status::SUCCESS);
            for (i, s) in &bufs.failed {
                walk.status[*i] = s.clone();
            }
            walk.keep_lists(snap.generation(), start % n_cand, &bufs.feasible, &bufs.failed);
            walk.valid = true;
        }
        processed
    }
}
