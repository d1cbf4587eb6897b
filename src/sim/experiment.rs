//! Policy runs over seeds: an [`Experiment`] replays a trace once per seed under one
//! policy and averages what the FGD paper reports into a [`PolicyResult`].

use std::sync::Arc;
use std::time::Duration;

use super::replay::{Replay, ReplayError, Step, TuneError, binned, prefixed_names, tuned_arrivals};
use crate::framework::{LatencyRecorder, LatencyReport};
use crate::model::PodError;
use crate::plugins::gpu_share::{Policy, TypicalPods};
use crate::snapshot::PodInfo;
use crate::trace::{TraceNode, TracePod, gpu_capacity_milli};

/// Bins of a run's curves: arrived GPU demand 0..=130% of capacity, one per percent.
pub const CURVE_BINS: usize = 131;

/// The settings of a run: which seeds, how much demand, how often to time plugins.
///
/// ```
/// use schedkit::plugins::gpu_share::{Policy, TypicalPods};
/// use schedkit::sim::Experiment;
/// use schedkit::trace::{parse_nodes, parse_pods};
/// let nodes = parse_nodes("n", "sn,cpu_milli,memory_mib,gpu,model\nn0,32000,65536,2,T4\n").unwrap();
/// let pods = parse_pods("p", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1000,1024,1,500\n").unwrap();
/// let typical = std::sync::Arc::new(TypicalPods::from_pods(&pods));
/// let exp = Experiment { seeds: vec![42, 43], ..Experiment::default() };
/// // Tuned to 130% of 2 GPUs: five half-GPU pods arrive, four fit.
/// let r = exp.run(&nodes, &pods, &typical, Policy::Fgd, |_, _| {}).unwrap();
/// assert_eq!((r.scheduled, r.failed), (4.0, 1.0));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Experiment {
    /// Seeds to average over (each shuffles the arrivals, renames the nodes and seeds
    /// the random policy).
    pub seeds: Vec<u64>,
    /// Target GPU demand as a multiple of the cluster's GPU capacity (the paper: 1.3).
    pub tune: f64,
    /// Time every plugin call in one cycle in this many (0: off; then the run measures
    /// pods per CPU second instead).
    pub profile_every: u64,
}

impl Default for Experiment {
    /// Seed 42, tuned to 130%, plugins timed in one cycle in 10.
    fn default() -> Experiment {
        Experiment { seeds: vec![42], tune: 1.3, profile_every: 10 }
    }
}

/// One seed's run of one policy: the figures of [`PolicyResult`] before averaging, and
/// the run's curves.
#[derive(Debug, Clone, PartialEq)]
pub struct SeedRun {
    /// The seed.
    pub seed: u64,
    /// Pods that arrived (the tuned workload).
    pub arrivals: usize,
    /// Pods placed.
    pub scheduled: usize,
    /// Pods that failed.
    pub failed: usize,
    /// Allocated GPU, % of capacity, when arrivals reach 100% of capacity.
    pub alloc_100: f64,
    /// Allocated GPU, % of capacity, when arrivals reach 130% of capacity.
    pub alloc_130: f64,
    /// Allocated GPU, % of capacity, after the last pod.
    pub alloc_end: f64,
    /// Fragmented share of the idle GPU, %, when arrivals reach 130% of capacity.
    pub frag_ratio_130: f64,
    /// Fragmented share of the idle GPU after the last pod, %.
    pub frag_ratio_end: f64,
    /// Scheduling and binding cycles per second of wall time (cycles not sampled by the
    /// latency recorder).
    pub pods_per_sec: f64,
    /// Allocated GPU, % of capacity, per bin of arrived demand ([`CURVE_BINS`] bins).
    pub curve: Vec<f64>,
    /// Fragmented share of the idle GPU, %, per bin of arrived demand.
    pub frag_ratio_curve: Vec<f64>,
}

/// One policy's results, averaged over the experiment's seeds.
#[derive(Debug, Clone)]
pub struct PolicyResult {
    /// The policy.
    pub policy: Policy,
    /// Pods placed per run.
    pub scheduled: f64,
    /// Pods that failed per run.
    pub failed: f64,
    /// Allocated GPU, % of capacity, when arrivals reach 100% of capacity.
    pub alloc_100: f64,
    /// Allocated GPU, % of capacity, when arrivals reach 130% of capacity.
    pub alloc_130: f64,
    /// Allocated GPU, % of capacity, after the last pod.
    pub alloc_end: f64,
    /// Fragmented share of the idle GPU after the last pod, %.
    pub frag_ratio_end: f64,
    /// Scheduling and binding cycles per second of wall time, over the cycles the
    /// latency recorder did not sample.
    pub pods_per_sec: f64,
    /// Pods per second of this thread's CPU time over the whole replay loop, when
    /// plugins were not timed and the platform reports thread CPU time (Linux).
    pub pods_per_cpu_sec: Option<f64>,
    /// Allocated GPU, % of capacity, per bin of arrived demand ([`CURVE_BINS`] bins).
    pub curve: Vec<f64>,
    /// Per-plugin latency of the sampled cycles.
    pub latency: LatencyReport,
    /// Wall time of the cycles the recorder sampled.
    pub sampled: Duration,
    /// Each seed's run, in the experiment's seed order.
    pub runs: Vec<SeedRun>,
}

/// Why a run stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// A trace pod is not a valid pod.
    #[error(transparent)]
    Pod(#[from] PodError),
    /// The replay could not start.
    #[error(transparent)]
    Replay(#[from] ReplayError),
    /// The workload could not be tuned (no pods, no GPU demand or capacity, a bad or
    /// unreachable ratio).
    #[error(transparent)]
    Tune(#[from] TuneError),
    /// The node list is empty.
    #[error("the node list has no nodes")]
    NoNodes,
    /// The tuned workload has no pods.
    #[error("empty workload")]
    EmptyWorkload,
    /// The experiment has no seeds.
    #[error("no seeds to run")]
    NoSeeds,
}

/// What one seed's run measured beside its [`SeedRun`]: the timing figures that
/// [`Experiment::aggregate`] sums over the seeds of a policy.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct SeedTiming {
    /// Pods replayed.
    pods: usize,
    /// Cycles the latency recorder did not sample, and their wall time.
    timed_pods: usize,
    timed: Duration,
    /// Wall time of the cycles the recorder sampled.
    sampled: Duration,
    /// This thread's CPU time over the replay loop, where the platform reports it.
    cpu: Option<Duration>,
}

impl Experiment {
    /// Replays `pods` on `nodes` under `policy` once per seed and averages the results.
    /// `progress(label, pods)` is told how many more pods are done, in steps of about
    /// 0.5% of a run.
    pub fn run(
        &self,
        nodes: &[TraceNode],
        pods: &[TracePod],
        typical: &Arc<TypicalPods>,
        policy: Policy,
        mut progress: impl FnMut(&str, usize),
    ) -> Result<PolicyResult, RunError> {
        self.check(nodes)?;
        let recorder = self.recorder();
        let runs = self
            .seeds
            .iter()
            .map(|&seed| self.run_seed(nodes, pods, typical, policy, seed, &recorder, &mut progress))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(self.aggregate(policy, runs, &recorder))
    }

    /// The checks every run makes before it starts.
    pub(crate) fn check(&self, nodes: &[TraceNode]) -> Result<(), RunError> {
        if self.seeds.is_empty() {
            return Err(RunError::NoSeeds);
        }
        if nodes.is_empty() {
            return Err(RunError::NoNodes);
        }
        Ok(())
    }

    /// The latency recorder the runs of one policy share.
    pub(crate) fn recorder(&self) -> Arc<LatencyRecorder> {
        Arc::new(LatencyRecorder::sampling(self.profile_every.max(1)))
    }

    /// One seed's replay of one policy. Its [`SeedRun`] depends only on the inputs and
    /// the seed, never on what else runs (the grid relies on that).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn run_seed(
        &self,
        nodes: &[TraceNode],
        pods: &[TracePod],
        typical: &Arc<TypicalPods>,
        policy: Policy,
        seed: u64,
        recorder: &Arc<LatencyRecorder>,
        mut progress: impl FnMut(&str, usize),
    ) -> Result<(SeedRun, SeedTiming), RunError> {
        let capacity = gpu_capacity_milli(nodes);
        let arrivals = tuned_arrivals(pods, capacity, self.tune, seed)?;
        let infos: Vec<(PodInfo, i64)> = arrivals
            .iter()
            .map(|a| {
                let p = &pods[a.pod];
                let mut pod = p.to_pod_named(&a.name);
                policy.prepare_pod(&mut pod);
                PodInfo::new(pod).map(|i| (i, p.gpu_demand()))
            })
            .collect::<Result<_, _>>()?;
        let rec = recorder.clone();
        let profiling = self.profile_every > 0;
        let names = prefixed_names(nodes, seed);
        let mut replay = Replay::with_builder(nodes, Some(&names), typical.clone(), policy, seed, |b| {
            if profiling { b.latency_recorder(rec) } else { b }
        })?;
        let mut steps: Vec<Step> = Vec::with_capacity(infos.len());
        let chunk = (infos.len() / 200).max(1);
        let label = format!("{} seed {seed}", policy.name());
        let mut timing = SeedTiming { pods: infos.len(), ..SeedTiming::default() };
        let cpu_start = thread_cpu_time();
        let mut scheduled = 0usize;
        for (k, (info, demand)) in infos.iter().enumerate() {
            let step = replay.step_info(info, *demand);
            if replay.scheduler().last_cycle_sampled() {
                timing.sampled += step.elapsed;
            } else {
                timing.timed_pods += 1;
                timing.timed += step.elapsed;
            }
            if step.node.is_some() {
                scheduled += 1;
            }
            steps.push(step);
            if (k + 1) % chunk == 0 {
                progress(&label, chunk);
            }
        }
        timing.cpu = match (cpu_start, thread_cpu_time()) {
            (Some(a), Some(b)) => Some(b.saturating_sub(a)),
            _ => None,
        };
        progress(&label, infos.len() % chunk);
        let cap = capacity as f64;
        let alloc = binned(&steps, capacity, CURVE_BINS, |s| s.used_milli as f64 * 100.0 / cap);
        let frag_ratio = |s: &Step| {
            let idle = (capacity - s.used_milli) as f64;
            if idle > 0.0 { s.frag_milli * 100.0 / idle } else { 0.0 }
        };
        let frag_curve = binned(&steps, capacity, CURVE_BINS, frag_ratio);
        let last = steps.last().ok_or(RunError::EmptyWorkload)?;
        let run = SeedRun {
            seed,
            arrivals: steps.len(),
            scheduled,
            failed: steps.len() - scheduled,
            alloc_100: alloc[100],
            alloc_130: alloc[130],
            alloc_end: last.used_milli as f64 * 100.0 / cap,
            frag_ratio_130: frag_curve[130],
            frag_ratio_end: frag_ratio(last),
            pods_per_sec: timing.timed_pods as f64 / timing.timed.as_secs_f64().max(1e-9),
            curve: alloc,
            frag_ratio_curve: frag_curve,
        };
        Ok((run, timing))
    }

    /// Averages one policy's seed runs (in the experiment's seed order) into its result.
    pub(crate) fn aggregate(
        &self,
        policy: Policy,
        seed_runs: Vec<(SeedRun, SeedTiming)>,
        recorder: &LatencyRecorder,
    ) -> PolicyResult {
        let (mut scheduled, mut failed, mut a100, mut a130, mut aend, mut fend) = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
        let (mut timed_pods, mut timed, mut sampled) = (0usize, Duration::ZERO, Duration::ZERO);
        let (mut all_pods, mut cpu) = (0usize, Some(Duration::ZERO));
        let mut curve = vec![0.0; CURVE_BINS];
        let mut runs = Vec::with_capacity(seed_runs.len());
        for (run, t) in seed_runs {
            for (c, v) in curve.iter_mut().zip(&run.curve) {
                *c += v;
            }
            scheduled += run.scheduled as f64;
            failed += run.failed as f64;
            a100 += run.alloc_100;
            a130 += run.alloc_130;
            aend += run.alloc_end;
            fend += run.frag_ratio_end;
            timed_pods += t.timed_pods;
            timed += t.timed;
            sampled += t.sampled;
            all_pods += t.pods;
            cpu = cpu.zip(t.cpu).map(|(a, b)| a + b);
            runs.push(run);
        }
        let n = runs.len().max(1) as f64;
        for c in &mut curve {
            *c /= n;
        }
        PolicyResult {
            policy,
            scheduled: scheduled / n,
            failed: failed / n,
            alloc_100: a100 / n,
            alloc_130: a130 / n,
            alloc_end: aend / n,
            frag_ratio_end: fend / n,
            pods_per_sec: timed_pods as f64 / timed.as_secs_f64().max(1e-9),
            pods_per_cpu_sec: cpu
                .filter(|c| !c.is_zero() && self.profile_every == 0)
                .map(|c| all_pods as f64 / c.as_secs_f64()),
            curve,
            latency: recorder.report(),
            sampled,
            runs,
        }
    }
}

/// CPU time of this thread so far (Linux `/proc/thread-self/schedstat`), which a busy
/// shared machine doesn't inflate the way it does wall-clock time.
fn thread_cpu_time() -> Option<Duration> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    s.split_whitespace().next()?.parse().ok().map(Duration::from_nanos)
}
