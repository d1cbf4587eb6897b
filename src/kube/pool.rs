//! The binding tasks: long-lived blocking tasks that run the binding cycles the
//! scheduling loop hands over in batches, and hand their reports back in batches, so
//! a pod costs a fraction of a thread wake-up on either side.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use tokio::sync::Notify;

use super::writer::{Outgoing, Reporting};
use super::{Counters, report_binding};
use crate::scheduler::PendingBinding;

/// How long a queued binding may wait before another idle task is woken for it. One
/// task keeps up with a fast API server on its own; when bindings are slow (each
/// holds its task until the API server answers) the backlog ages and more tasks join,
/// up to the limit.
pub(super) const STALE: Duration = Duration::from_millis(1);

/// Reports a task keeps before handing them over even though its queue is not empty,
/// so Events and requeues are not held back by a steady stream of bindings.
const REPORT_BATCH: usize = 32;

/// `slots` blocking tasks of the runtime sharing one queue. At most `slots` bindings
/// run at once; at most `slots` more wait in the queue (the loop waits for room
/// beyond that), each holding its pod's reservation as upstream's binding goroutines
/// do while they wait for the API server.
pub(super) struct BindingPool {
    shared: Arc<Shared>,
    workers: Vec<tokio::task::JoinHandle<()>>,
}

struct Shared {
    state: Mutex<State>,
    /// Idle tasks wait here for work.
    work: Condvar,
    /// The loop waits here for room in the queue.
    room: Condvar,
    slots: usize,
}

#[derive(Default)]
struct State {
    /// Bindings not yet taken, with the time their batch was handed over.
    queue: VecDeque<(Instant, PendingBinding)>,
    /// Tasks waiting on `work`.
    idle: usize,
    /// Tasks still running (a panicking binding cycle ends its task).
    alive: usize,
    /// The loop waits on `room`.
    full: bool,
    /// No more bindings: the tasks drain the queue and end.
    closed: bool,
}

impl State {
    /// Whether the oldest queued binding has waited [`STALE`] or longer at `now`.
    fn stale(&self, now: Instant) -> bool {
        self.queue.front().is_some_and(|(at, _)| now.saturating_duration_since(*at) >= STALE)
    }
}

/// Ends a task's share of [`State::alive`], also when a binding cycle panics.
struct Alive(Arc<Shared>);

impl Drop for Alive {
    fn drop(&mut self) {
        let mut st = self.0.state.lock();
        st.alive -= 1;
        if st.full {
            self.0.room.notify_all();
        }
    }
}

impl BindingPool {
    /// Starts `slots` tasks on `rt`; their reports go to `reporting` and `counters`,
    /// and `kick` wakes the loop when a batch of them is in (requeued pods, freed
    /// capacity).
    pub(super) fn start(
        rt: &tokio::runtime::Handle,
        slots: usize,
        reporting: &Reporting,
        counters: &Arc<Counters>,
        kick: &Arc<Notify>,
    ) -> BindingPool {
        let shared = Arc::new(Shared {
            state: Mutex::new(State { alive: slots, ..State::default() }),
            work: Condvar::new(),
            room: Condvar::new(),
            slots,
        });
        let workers = (0..slots)
            .map(|_| {
                let alive = Alive(shared.clone());
                let (reporting, counters, kick) = (reporting.clone(), counters.clone(), kick.clone());
                rt.spawn_blocking(move || work(&alive.0, &reporting, &counters, &kick))
            })
            .collect();
        BindingPool { shared, workers }
    }

    /// Queues `batch` (emptying it) with one wake-up at most: a task is woken when
    /// none is awake to find the batch, or when the queue's oldest binding has gone
    /// [`STALE`]. Waits while the queue is full. False when every task has stopped
    /// (only if binding cycles panicked); the batch is then dropped, which aborts its
    /// bindings.
    pub(super) fn submit(&self, batch: &mut Vec<PendingBinding>) -> bool {
        if batch.is_empty() {
            return true;
        }
        let s = &*self.shared;
        let mut st = s.state.lock();
        while st.queue.len() >= s.slots && st.alive > 0 {
            st.full = true;
            s.room.wait(&mut st);
        }
        st.full = false;
        if st.alive == 0 {
            batch.clear();
            return false;
        }
        let now = Instant::now();
        let stale = st.stale(now);
        st.queue.extend(batch.drain(..).map(|b| (now, b)));
        if st.idle > 0 && (st.idle == st.alive || stale) {
            s.work.notify_one();
        }
        true
    }

    /// Wakes an idle task when the oldest queued binding has gone stale (the awake
    /// tasks are held by slow bindings); returns whether bindings are queued, so the
    /// loop comes back within [`STALE`].
    pub(super) fn nudge(&self) -> bool {
        let s = &*self.shared;
        let st = s.state.lock();
        if st.idle > 0 && st.stale(Instant::now()) {
            s.work.notify_one();
        }
        !st.queue.is_empty()
    }

    /// Waits for the queued bindings and those in flight; the tasks then end.
    pub(super) fn finish(self, rt: &tokio::runtime::Handle) {
        self.shared.state.lock().closed = true;
        self.shared.work.notify_all();
        for w in self.workers {
            if let Err(e) = rt.block_on(w) {
                log::warn!("a binding task stopped: {e}");
            }
        }
    }
}

/// One task: takes bindings until the queue is empty, then hands its reports over
/// in one batch and sleeps.
fn work(s: &Shared, reporting: &Reporting, counters: &Counters, kick: &Notify) {
    let mut out: Vec<Outgoing> = Vec::new();
    let mut st = s.state.lock();
    loop {
        if out.len() >= REPORT_BATCH || (st.queue.is_empty() && !out.is_empty()) {
            drop(st);
            reporting.send(std::mem::take(&mut out));
            // Requeued pods and freed capacity: the loop may have work.
            kick.notify_one();
            st = s.state.lock();
            continue;
        }
        if let Some((_, b)) = st.queue.pop_front() {
            // A backlog that has waited: another task helps.
            if st.idle > 0 && st.stale(Instant::now()) {
                s.work.notify_one();
            }
            if st.full {
                s.room.notify_one();
            }
            drop(st);
            let a = b.run();
            report_binding(&mut out, &a, counters);
            st = s.state.lock();
            continue;
        }
        if st.closed {
            return;
        }
        st.idle += 1;
        s.work.wait(&mut st);
        st.idle -= 1;
    }
}
