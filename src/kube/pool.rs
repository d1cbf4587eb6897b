//! The binding tasks: long-lived blocking tasks that run the binding cycles the
//! scheduling loop hands over in batches, and hand their reports back in batches, so
//! a pod costs a fraction of a thread wake-up on either side.
//!
//! A task takes every queued binding it has room for, runs their PreBind, then keeps
//! the pods/binding requests of [`KubeBinder`] bindings in flight together
//! (`FuturesUnordered`, one `block_on` per answer at most): the kube client's
//! request buffer then wakes once for the batch instead of twice per pod, and the
//! task sleeps once for a batch of answers. Each answer finishes its binding cycle
//! (PostBind, filing the pod) outside the `block_on`, so PostBind plugins run on a
//! plain blocking thread as before. Bindings that another Bind plugin (or an
//! extender) decides run whole, one after the other, as before.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use parking_lot::{Condvar, Mutex};
use tokio::sync::Notify;

use super::KubeBinder;
use super::writer::{Outgoing, Reporting};
use super::{Counters, report_binding};
use crate::framework::Status;
use crate::plugins::default_binder::DefaultBinder;
use crate::scheduler::{PendingBind, PendingBinding};

/// How long a queued binding may wait before another idle task is woken for it. One
/// task keeps up with a fast API server on its own; when bindings are slow (each
/// holds its task until the API server answers) the backlog ages and more tasks join,
/// up to the limit.
pub(super) const STALE: Duration = Duration::from_millis(1);

/// Reports a task keeps before handing them over even though its queue is not empty,
/// so Events and requeues are not held back by a steady stream of bindings.
const REPORT_BATCH: usize = 32;

/// `slots` blocking tasks of the runtime sharing one queue. At most `slots` bindings
/// run at once (counted over all tasks: one task may run them all); at most `slots`
/// more wait in the queue (the loop waits for room beyond that), each holding its
/// pod's reservation as upstream's binding goroutines do while they wait for the
/// API server.
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
    /// Bindings taken from the queue and not finished yet.
    running: usize,
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

    /// Whether an idle task should be woken for the queue: one is idle, another
    /// binding may start, and the queue has waited [`STALE`].
    fn wants_help(&self, slots: usize, now: Instant) -> bool {
        self.idle > 0 && self.running < slots && self.stale(now)
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
                let handle = rt.clone();
                rt.spawn_blocking(move || work(&alive.0, &handle, &reporting, &counters, &kick))
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
        let help = st.wants_help(s.slots, now);
        st.queue.extend(batch.drain(..).map(|b| (now, b)));
        if st.idle > 0 && (st.idle == st.alive || help) {
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
        if st.wants_help(s.slots, Instant::now()) {
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

/// One task: takes the queued bindings it has room for and runs them
/// ([`run_batch`]) until the queue is empty, then hands its reports over in one
/// batch and sleeps.
fn work(s: &Shared, rt: &tokio::runtime::Handle, reporting: &Reporting, counters: &Counters, kick: &Notify) {
    let mut out: Vec<Outgoing> = Vec::new();
    let mut taken: Vec<PendingBinding> = Vec::with_capacity(s.slots);
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
        let room = s.slots.saturating_sub(st.running).min(st.queue.len());
        if room > 0 {
            taken.extend(st.queue.drain(..room).map(|(_, b)| b));
            st.running += room;
            // A backlog that has waited: another task helps.
            if st.wants_help(s.slots, Instant::now()) {
                s.work.notify_one();
            }
            if st.full {
                s.room.notify_one();
            }
            drop(st);
            run_batch(s, rt, &mut taken, &mut out, counters);
            st = s.state.lock();
            continue;
        }
        if st.closed && st.queue.is_empty() {
            // Tasks waiting for room to take the last bindings may go too.
            s.work.notify_all();
            return;
        }
        st.idle += 1;
        s.work.wait(&mut st);
        st.idle -= 1;
    }
}

/// Runs the bindings in `taken` (emptying it): PreBind for each, then the
/// [`KubeBinder`] requests all in flight together, each answer finishing its
/// binding cycle as it comes; other binders' cycles run whole.
fn run_batch(
    s: &Shared,
    rt: &tokio::runtime::Handle,
    taken: &mut Vec<PendingBinding>,
    out: &mut Vec<Outgoing>,
    counters: &Counters,
) {
    let mut running = Running { s, n: taken.len() };
    let mut sending = FuturesUnordered::new();
    for b in taken.drain(..) {
        let a = match b.pre_bind() {
            Err(a) => *a,
            Ok(p) => match p.delegate().and_then(|d| d.downcast_ref::<KubeBinder>()).cloned() {
                // Pushed in order: the requests reach the client in the order the
                // loop scheduled the pods.
                Some(binder) => {
                    sending.push(send(binder, p));
                    continue;
                }
                None => p.bind(),
            },
        };
        report_binding(out, &a, counters);
        running.done(1);
    }
    while !sending.is_empty() {
        let Some((p, status)) = rt.block_on(sending.next()) else { break };
        let a = p.bound(status);
        report_binding(out, &a, counters);
        running.done(1);
    }
}

/// Sends `p`'s binding through `binder`; hands `p` back with the Bind status.
async fn send(binder: KubeBinder, p: PendingBind) -> (PendingBind, Status) {
    let result = binder.send(&p.pod().pod, p.node()).await;
    (p, DefaultBinder::outcome(result))
}

/// A task's share of [`State::running`]: given back as its bindings finish, and
/// all of it if a binding cycle panics.
struct Running<'a> {
    s: &'a Shared,
    n: usize,
}

impl Running<'_> {
    fn done(&mut self, n: usize) {
        let n = n.min(self.n);
        self.n -= n;
        let mut st = self.s.state.lock();
        st.running -= n;
        if st.closed {
            // Tasks waiting for room to take the last bindings.
            self.s.work.notify_all();
        }
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        if self.n > 0 {
            self.done(self.n);
        }
    }
}
