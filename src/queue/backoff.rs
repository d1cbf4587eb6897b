//! The backoff queue: pods waiting out their per-pod exponential backoff, in a
//! min-heap by expiry whose stale entries are skipped lazily.

use std::cmp::Reverse;
use std::time::Duration;

use super::{QueueLocation, STALE_SLACK, SchedulingQueue};

impl SchedulingQueue {
    pub(super) fn push_backoff(&mut self, slot: u32) {
        self.seq += 1;
        let seq = self.seq;
        let expiry = self.backoff_expiry(slot);
        let e = self.e_mut(slot);
        e.loc = QueueLocation::Backoff;
        e.seq = seq;
        self.backoff.push(Reverse((expiry, seq, slot)));
        self.backoff_len += 1;
        // As the pool's heap: stale entries are dropped once they outnumber the live.
        if self.backoff.len() > 2 * self.backoff_len + STALE_SLACK {
            let mut v = std::mem::take(&mut self.backoff).into_vec();
            v.retain(|&Reverse((_, seq, slot))| self.live(slot, seq, QueueLocation::Backoff));
            self.backoff = v.into();
        }
    }

    /// Takes a backing-off slot out: its heap entry goes stale (its seq no longer
    /// matches).
    pub(super) fn remove_backoff(&mut self, slot: u32) {
        self.backoff_len -= 1;
        self.e_mut(slot).seq = 0;
    }

    pub(super) fn backoff_expiry(&self, slot: u32) -> Duration {
        let i = &self.e(slot).info;
        i.timestamp + self.config.backoff(i.attempts)
    }

    /// Moves pods whose backoff ended by `now` to the active queue (upstream
    /// `flushBackoffQCompleted`).
    pub(super) fn flush_backoff(&mut self, now: Duration) {
        while let Some(&Reverse((expiry, seq, slot))) = self.backoff.peek() {
            if !self.live(slot, seq, QueueLocation::Backoff) {
                self.backoff.pop();
                continue;
            }
            if expiry > now {
                break;
            }
            self.backoff.pop();
            self.detach(slot);
            self.push_active(slot);
        }
    }

    /// When the next backoff ends (dropping stale heap entries on the way).
    pub(super) fn backoff_wakeup(&mut self) -> Option<Duration> {
        while let Some(&Reverse((_, seq, slot))) = self.backoff.peek() {
            if self.live(slot, seq, QueueLocation::Backoff) {
                break;
            }
            self.backoff.pop();
        }
        self.backoff.peek().map(|r| r.0.0)
    }
}
