//! The experiment grid on every core: [`Experiment::run_grid`] runs every trace × policy
//! × seed replay on a pool of scoped threads and returns what [`Experiment::run`] would,
//! in the same order, whatever the number of threads.

use std::num::NonZeroUsize;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use super::experiment::{Experiment, PolicyResult, RunError, SeedRun, SeedTiming};
use crate::framework::LatencyRecorder;
use crate::plugins::gpu_share::{Policy, TypicalPods};
use crate::trace::{TraceNode, TracePod};

/// One pod list of a grid, with the typical pods its FGD scoring weighs against
/// (`TypicalPods::from_pods(pods)` for the paper's method).
#[derive(Debug, Clone, Copy)]
pub struct GridTrace<'a> {
    /// The trace's pods.
    pub pods: &'a [TracePod],
    /// Its typical pods.
    pub typical: &'a Arc<TypicalPods>,
}

/// What a grid's progress callback is told, from whichever thread ran the pods.
#[derive(Debug, Clone, Copy)]
pub struct GridProgress<'a> {
    /// Index of the trace in the grid's list.
    pub trace: usize,
    /// The policy.
    pub policy: Policy,
    /// The seed.
    pub seed: u64,
    /// Pods done since the last call for this run.
    pub pods: usize,
    /// Whether this call ends the run (every run ends with exactly one such call).
    pub run_done: bool,
    /// The run's label (`policy seed N`).
    pub label: &'a str,
}

/// A grid run that failed: which one, and why. The grid stops handing out runs after
/// the first failure; the one reported is the first in grid order among those that ran.
#[derive(Debug, thiserror::Error)]
#[error("trace {trace}, policy {policy}, seed {seed}: {source}", policy = policy.name())]
pub struct GridError {
    /// Index of the trace in the grid's list.
    pub trace: usize,
    /// The policy.
    pub policy: Policy,
    /// The seed.
    pub seed: u64,
    /// Why it stopped (boxed: a run error is large).
    #[source]
    pub source: Box<RunError>,
}

/// The threads to use when asked for none: the machine's available parallelism.
#[must_use]
pub fn default_jobs() -> NonZeroUsize {
    std::thread::available_parallelism().unwrap_or(NonZeroUsize::MIN)
}

type Slot = Option<Result<(SeedRun, SeedTiming), RunError>>;

impl Experiment {
    /// Runs every trace × policy × seed replay on `jobs` threads and averages each
    /// trace's policies as [`Experiment::run`] does: `result[t][p]` is trace `t` under
    /// `policies[p]`, with its seed runs in the experiment's seed order. Every figure but
    /// the timings (`pods_per_sec`, `pods_per_cpu_sec`, latency, `sampled`) is identical
    /// for any `jobs`: each replay depends only on its trace, policy and seed.
    ///
    /// The runs are handed out longest first (by the trace's pod count, then grid order),
    /// so a long trace does not start last and leave the other threads idle. `progress`
    /// is called from the worker threads.
    ///
    /// ```
    /// use std::num::NonZeroUsize;
    /// use schedkit::plugins::gpu_share::{Policy, TypicalPods};
    /// use schedkit::sim::{Experiment, GridTrace};
    /// use schedkit::trace::{parse_nodes, parse_pods};
    /// let nodes = parse_nodes("n", "sn,cpu_milli,memory_mib,gpu,model\nn0,32000,65536,2,T4\n").unwrap();
    /// let pods = parse_pods("p", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1000,1024,1,500\n").unwrap();
    /// let typical = std::sync::Arc::new(TypicalPods::from_pods(&pods));
    /// let exp = Experiment { seeds: vec![42, 43], ..Experiment::default() };
    /// let traces = [GridTrace { pods: &pods, typical: &typical }];
    /// let jobs = NonZeroUsize::new(2).unwrap();
    /// let r = exp.run_grid(&nodes, &traces, &[Policy::Fgd, Policy::BestFit], jobs, |_| {}).unwrap();
    /// assert_eq!((r.len(), r[0].len(), r[0][1].runs.len()), (1, 2, 2));
    /// assert_eq!(r[0][0].scheduled, 4.0);
    /// ```
    ///
    /// # Errors
    /// [`GridError`] naming the first run (in grid order) that failed.
    pub fn run_grid(
        &self,
        nodes: &[TraceNode],
        traces: &[GridTrace<'_>],
        policies: &[Policy],
        jobs: NonZeroUsize,
        progress: impl Fn(GridProgress<'_>) + Sync,
    ) -> Result<Vec<Vec<PolicyResult>>, GridError> {
        let (np, ns) = (policies.len(), self.seeds.len());
        let first = |source| GridError {
            trace: 0,
            policy: policies.first().copied().unwrap_or(Policy::Fgd),
            seed: 0,
            source: Box::new(source),
        };
        self.check(nodes).map_err(first)?;
        let total = traces.len() * np * ns;
        // Grid order: trace, then policy, then seed.
        let at = |i: usize| (i / (np * ns), (i / ns) % np, i % ns);
        let mut order: Vec<usize> = (0..total).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(traces[at(i).0].pods.len()));
        let recorders: Vec<Arc<LatencyRecorder>> = (0..traces.len() * np).map(|_| self.recorder()).collect();
        let slots: Vec<Mutex<Slot>> = (0..total).map(|_| Mutex::new(None)).collect();
        let (next, failed) = (AtomicUsize::new(0), AtomicBool::new(false));
        let worker = || {
            while !failed.load(Ordering::Relaxed) {
                let Some(&i) = order.get(next.fetch_add(1, Ordering::Relaxed)) else { break };
                let (t, p, s) = at(i);
                let (policy, seed) = (policies[p], self.seeds[s]);
                let tell = |label: &str, pods: usize, run_done: bool| {
                    progress(GridProgress { trace: t, policy, seed, pods, run_done, label });
                };
                let out = self.run_seed(
                    nodes,
                    traces[t].pods,
                    traces[t].typical,
                    policy,
                    seed,
                    &recorders[t * np + p],
                    |label, pods| tell(label, pods, false),
                );
                if out.is_err() {
                    failed.store(true, Ordering::Relaxed);
                }
                tell(&format!("{} seed {seed}", policy.name()), 0, true);
                *slots[i].lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(out);
            }
        };
        let threads = jobs.get().min(total.max(1));
        std::thread::scope(|scope| {
            for _ in 1..threads {
                scope.spawn(worker);
            }
            worker();
        });
        let mut done = slots.into_iter().map(|m| m.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner));
        let mut out = Vec::with_capacity(traces.len());
        for t in 0..traces.len() {
            let mut per_policy = Vec::with_capacity(np);
            for (p, &policy) in policies.iter().enumerate() {
                let mut runs = Vec::with_capacity(ns);
                for &seed in &self.seeds {
                    match done.next().flatten() {
                        Some(Ok(r)) => runs.push(r),
                        Some(Err(e)) => return Err(GridError { trace: t, policy, seed, source: Box::new(e) }),
                        // Not run: an earlier-handed-out run failed; its error is later in
                        // grid order, so keep scanning for it.
                        None => runs.clear(),
                    }
                }
                per_policy.push(self.aggregate(policy, runs, &recorders[t * np + p]));
            }
            out.push(per_policy);
        }
        Ok(out)
    }
}
