//! The unschedulable pool (gated pods included): rejected pods waiting for a
//! relevant event or the max stay, and activation by plugins.

use std::cmp::Reverse;
use std::time::Duration;

use super::{QueueLocation, STALE_SLACK, SchedulingQueue};

impl SchedulingQueue {
    pub(super) fn push_pool(&mut self, slot: u32, loc: QueueLocation) {
        self.seq += 1;
        let seq = self.seq;
        let since = self.e(slot).info.timestamp;
        let pos = self.pool.len();
        let e = self.e_mut(slot);
        e.loc = loc;
        e.seq = seq;
        e.pool_pos = pos;
        self.pool.push(slot);
        self.pool_since.push(Reverse((since, seq, slot)));
        if loc == QueueLocation::Gated {
            self.gated_len += 1;
        }
        // Pods that go round the pool (a gang's gated members re-run PreEnqueue on
        // every sibling added) leave a stale heap entry each time: drop them all once
        // they outnumber the live ones three to one, so later flushes don't sift
        // through millions (a lower ratio compacts more often: each compaction walks
        // the whole heap and rebuilds it). The live entries keep their keys, so the pop
        // order is unchanged.
        if self.pool_since.len() > 4 * self.pool.len() + STALE_SLACK {
            let mut v = std::mem::take(&mut self.pool_since).into_vec();
            v.retain(|&Reverse((_, seq, slot))| self.pooled(slot, seq));
            self.pool_since = v.into();
        }
    }

    /// Whether the pool-heap entry `(slot, seq)` is live: the slot is still in the
    /// pool (unschedulable or gated) since the move that pushed it.
    fn pooled(&self, slot: u32, seq: u64) -> bool {
        matches!(self.loc_since(slot, seq), Some(QueueLocation::Unschedulable | QueueLocation::Gated))
    }

    /// Takes a pooled (unschedulable or gated) slot out of the pool.
    pub(super) fn remove_pool(&mut self, slot: u32, loc: QueueLocation, pos: usize) {
        if loc == QueueLocation::Gated {
            self.gated_len -= 1;
        }
        self.pool.swap_remove(pos);
        if let Some(&moved) = self.pool.get(pos) {
            self.e_mut(moved).pool_pos = pos;
        }
        self.e_mut(slot).seq = 0;
    }

    /// Moves pods that stayed in the pool longer than the max stay to backoff or
    /// active (upstream `flushUnschedulablePodsLeftover`).
    pub(super) fn flush_leftovers(&mut self, now: Duration) {
        let stay = self.config.max_unschedulable_stay;
        while let Some(&Reverse((since, seq, slot))) = self.pool_since.peek() {
            let loc = self.slots[slot as usize].as_ref().map(|e| e.loc);
            let live =
                matches!(loc, Some(QueueLocation::Unschedulable | QueueLocation::Gated)) && self.e(slot).seq == seq;
            if !live {
                self.pool_since.pop();
                continue;
            }
            // Upstream moves pods that stayed strictly longer than the max stay.
            if now.saturating_sub(since) <= stay {
                break;
            }
            self.pool_since.pop();
            self.detach(slot);
            self.requeue(slot);
        }
    }

    /// When the longest-staying pooled pod overstays (dropping stale heap entries on
    /// the way).
    pub(super) fn pool_wakeup(&mut self) -> Option<Duration> {
        while let Some(&Reverse((_, seq, slot))) = self.pool_since.peek() {
            if self.pooled(slot, seq) {
                break;
            }
            self.pool_since.pop();
        }
        self.pool_since.peek().map(|r| r.0.0 + self.config.max_unschedulable_stay + Duration::from_nanos(1))
    }

    /// Moves pods (by uid) out of the unschedulable pool, as upstream `Activate`
    /// (used by plugins through `Handle::activate_pods`): to the active queue, or to
    /// the backoff queue if their backoff hasn't ended; gated pods re-run PreEnqueue.
    /// Unlike upstream, activation never cuts a backoff short, so a single-threaded
    /// loop can't churn forever without the clock moving. Unknown uids and pods
    /// elsewhere are ignored. Returns how many moved.
    pub fn activate<'a>(&mut self, uids: impl IntoIterator<Item = &'a str>) -> usize {
        let mut moved = 0;
        for uid in uids {
            let Some(slot) = self.slot_of(uid) else { continue };
            let loc = self.e(slot).loc;
            if matches!(loc, QueueLocation::Unschedulable | QueueLocation::Gated) {
                self.detach(slot);
                if self.requeue(slot) != loc {
                    moved += 1;
                }
            }
        }
        moved
    }
}
