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
}

impl LastWalk {
    /// Forgets the walk (another view or Filter key, or the cycle ended).
    pub(super) fn invalidate(&mut self) {
        if self.valid {
            self.valid = false;
            self.nodes.clear();
            self.status.clear();
        }
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
            // One pass in walk order: a node whose `NodeInfo` changed is refiltered,
            // then every node's status goes to the feasible or the failed list.
            // The running Filters are listed only when a node changed.
            let mut active = None;
            let guard = runtime::FilterGuard::new(profile);
            let (status, held) = (&mut walk.status, &mut walk.nodes);
            let bufs = &mut self.bufs;
            let (mut refiltered, mut error) = (0usize, false);
            let outcome = guard.run(|current| {
                for range in [start % n..n, 0..start % n] {
                    for i in range {
                        if !Arc::ptr_eq(&held[i], &nodes[i]) {
                            let active = active.get_or_insert_with(|| runtime::ActiveFilters::new(profile, state));
                            status[i] = runtime::run_active_filters(active, state, pod, &nodes[i], current);
                            held[i] = nodes[i].clone();
                            refiltered += 1;
                            error |= status[i].code() == Code::Error;
                        }
                        let s = &status[i];
                        if s.is_success() {
                            bufs.feasible.push(i);
                        } else {
                            bufs.failed.push((i, s.clone()));
                        }
                    }
                }
            });
            if outcome.is_ok() {
                memo.stats.walks_replayed += 1;
                memo.stats.filter_hits += (n - refiltered) as u64;
                if error {
                    walk.invalidate();
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
            walk.valid = true;
        }
        processed
    }
}
