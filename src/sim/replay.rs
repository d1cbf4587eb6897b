//! The trace replay driver: one policy's scheduler over a trace's nodes, fed pods one at
//! a time, with the cluster's GPU allocation and fragmentation after each.
//!
//! This is the experiment of the FGD paper: pods are shuffled with a seed, the workload
//! is tuned to a multiple of the cluster's GPU capacity, and pods arrive one at a time
//! and are scheduled at once or fail (no retries, departures or preemption), every node
//! scored, ties to the smallest node name, GpuShareFit and a cpu/memory fit filter beside
//! exactly one policy.
//!
//! ```
//! use schedkit::plugins::gpu_share::{Policy, TypicalPods};
//! use schedkit::sim::{Replay, tuned_arrivals};
//! use schedkit::trace::{parse_nodes, parse_pods};
//! let nodes = parse_nodes("n", "sn,cpu_milli,memory_mib,gpu,model\nn0,32000,65536,2,T4\n").unwrap();
//! let pods = parse_pods("p", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1000,1024,1,500\np1,1000,1024,1,1000\n").unwrap();
//! let typical = std::sync::Arc::new(TypicalPods::from_pods(&pods));
//! let mut replay = Replay::new(&nodes, None, typical, Policy::Fgd, 42).unwrap();
//! for a in tuned_arrivals(&pods, 2000, 0.75, 42).unwrap() { // exactly the trace's own demand: as it is
//!     let step = replay.step(&pods[a.pod], &a.name);
//!     assert!(step.node.is_some());
//! }
//! assert_eq!(replay.used_milli(), 1500);
//! ```

use std::sync::Arc;
use std::time::{Duration, Instant};

use ahash::AHashMap;
use smallvec::SmallVec;

use crate::framework::{Handle, Plugin};
use crate::model::Symbol;
use crate::plugins::gpu_share::frag::gpus_frag;
use crate::plugins::gpu_share::{GpuState, NodeGpus, Policy, ReservedDevices, TypicalPods};
use crate::plugins::node_resources::{Fit, FitArgs};
use crate::rng::SplitMix64;
use crate::scheduler::{Scheduler, TieBreak};
use crate::snapshot::PodInfo;
use crate::trace::{TraceNode, TracePod};

/// One pod arrival: which trace row, under which name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arrival {
    /// Pod name (`<row name>-tuned-<i>` for tuned copies).
    pub name: String,
    /// Index of the trace row.
    pub pod: usize,
}

/// Most arrivals [`tuned_arrivals`] builds (4,194,304): tuning past it is refused with
/// [`TuneError::Unreachable`] rather than filling memory.
pub const MAX_TUNED_ARRIVALS: usize = 1 << 22;

/// Why a trace's workload can't be tuned to a share of the cluster's GPU capacity.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum TuneError {
    /// The pod list is empty.
    #[error("the pod list has no pods to tune")]
    NoPods,
    /// No pod requests a GPU, so no number of copies reaches a share of GPU capacity
    /// (the authors' simulator stops with `podTotalMilliGpuReq <= 0`).
    #[error("no pod in the pod list requests a GPU (every row has num_gpu 0), so its GPU demand can't be tuned")]
    NoGpuDemand,
    /// The cluster has no GPU (the authors' simulator stops with `nodeTotalMilliGpu <= 0`).
    #[error("the cluster has no GPU capacity (no node with gpu > 0)")]
    NoGpuCapacity,
    /// The ratio is NaN or infinite.
    #[error("tune ratio {0} is not a finite number")]
    BadRatio(f64),
    /// Reaching the target would take more than [`MAX_TUNED_ARRIVALS`] arrivals.
    #[error(
        "tuning to {ratio} x {capacity_milli} milli-GPU would need more than {limit} arrivals (the pods request too little GPU for that target)"
    )]
    Unreachable {
        /// The ratio asked for.
        ratio: f64,
        /// The cluster's GPU capacity, milli.
        capacity_milli: i64,
        /// [`MAX_TUNED_ARRIVALS`].
        limit: usize,
    },
}

/// The arrival order of the paper's method, as the authors' simulator builds it
/// (`SortClusterPods` then `TunePodsByNodeTotalResource` in
/// hkust-adsl/kubernetes-scheduler-simulator, `pkg/simulator/{core,simulator}.go`):
///
/// 1. the trace's pods sorted by name, then shuffled with `seed` (Fisher-Yates);
/// 2. if their GPU demand is *above* `ratio * capacity_milli` (`tuneDownPods`): one
///    uniformly drawn arrival at a time is removed (the others keep their order) until
///    the demand is at most the target — a removed CPU-only pod lowers nothing, as
///    upstream;
/// 3. if it is *below* (`tuneUpPods`): a pod is drawn uniformly with replacement from
///    the name-sorted trace; if the demand plus the drawn pod's *per-GPU* milli
///    (`gpu_milli`, upstream's `MilliGpu`) exceeds the target, tuning stops; otherwise
///    the copy is appended as `<name>-tuned-<k>` and its whole demand
///    (`num_gpu * gpu_milli`) counted. (Upstream's test uses the per-GPU figure while it
///    counts the total, so a multi-GPU copy can carry the demand up to
///    `(num_gpu - 1) * 1000` milli past the target; schedkit keeps that, to draw the
///    same pods.)
/// 4. equal, or `ratio <= 0`: the shuffled trace as it is.
///
/// Differences from upstream: the draws come from SplitMix64, not Go's `math/rand`, so
/// the orders differ from the authors' for the same seed (not in distribution), and
/// upstream's one discarded `rand.Int()` after seeding has no counterpart.
///
/// Refuses (instead of looping or panicking as upstream does) an empty pod list, pods
/// without GPU demand, a cluster without GPU, a NaN or infinite ratio, and a target
/// that needs more than [`MAX_TUNED_ARRIVALS`] arrivals.
///
/// ```
/// use schedkit::sim::{TuneError, tuned_arrivals};
/// use schedkit::trace::parse_pods;
/// let pods = parse_pods("p", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\na,1000,1024,1,500\nb,1000,1024,1,1000\n").unwrap();
/// // 1,500 milli of demand on a 1,000-milli cluster tuned to 100%: one pod is removed.
/// let down = tuned_arrivals(&pods, 1000, 1.0, 42).unwrap();
/// assert_eq!(down.len(), 1);
/// // Tuned to 300%: copies are appended up to 3,000 milli.
/// let up = tuned_arrivals(&pods, 1000, 3.0, 42).unwrap();
/// assert!(up.len() > 2 && up[2].name.contains("-tuned-0"));
/// let cpu_only = parse_pods("p", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\nc,1000,1024,0,0\n").unwrap();
/// assert_eq!(tuned_arrivals(&cpu_only, 1000, 1.3, 42), Err(TuneError::NoGpuDemand));
/// ```
#[expect(clippy::float_cmp, reason = "upstream compares the float64 demand and target for equality")]
pub fn tuned_arrivals(
    pods: &[TracePod],
    capacity_milli: i64,
    ratio: f64,
    seed: u64,
) -> Result<Vec<Arrival>, TuneError> {
    if pods.is_empty() {
        return Err(TuneError::NoPods);
    }
    if !ratio.is_finite() {
        return Err(TuneError::BadRatio(ratio));
    }
    if capacity_milli <= 0 {
        return Err(TuneError::NoGpuCapacity);
    }
    let mut arrived: i64 = pods.iter().map(TracePod::gpu_demand).sum();
    if arrived <= 0 {
        return Err(TuneError::NoGpuDemand);
    }
    let mut rng = SplitMix64(seed ^ 0x005e_ed0f_a7c2);
    // Upstream sorts by name before shuffling; a stable sort keeps rows of one name in
    // file order.
    let mut by_name: Vec<usize> = (0..pods.len()).collect();
    by_name.sort_by(|&a, &b| pods[a].name.cmp(&pods[b].name));
    let mut order = by_name.clone();
    for i in (1..order.len()).rev() {
        let j = (rng.next_u64() % (i as u64 + 1)) as usize;
        order.swap(i, j);
    }
    let mut out: Vec<Arrival> = order.into_iter().map(|i| Arrival { name: pods[i].name.clone(), pod: i }).collect();
    if ratio <= 0.0 {
        return Ok(out);
    }
    let target = ratio * capacity_milli as f64;
    if arrived as f64 > target {
        while arrived as f64 > target && !out.is_empty() {
            let k = (rng.next_u64() % out.len() as u64) as usize;
            let gone = out.remove(k);
            arrived -= pods[gone.pod].gpu_demand();
        }
        return Ok(out);
    }
    if arrived as f64 == target {
        return Ok(out);
    }
    let mut k = 0;
    loop {
        let j = by_name[(rng.next_u64() % pods.len() as u64) as usize];
        if (arrived + i64::from(pods[j].gpu_milli)) as f64 > target {
            break;
        }
        if out.len() >= MAX_TUNED_ARRIVALS {
            return Err(TuneError::Unreachable { ratio, capacity_milli, limit: MAX_TUNED_ARRIVALS });
        }
        arrived += pods[j].gpu_demand();
        out.push(Arrival { name: format!("{}-tuned-{k}", pods[j].name), pod: j });
        k += 1;
    }
    Ok(out)
}

/// Node names as the authors' simulator renames them before a run: a seeded random
/// 4-digit prefix, `<prefix>-<name>`. Since score ties go to the smallest name, this makes
/// the tie-break a seeded random (but fixed) node order rather than the trace's order,
/// which groups nodes by GPU model. (Their prefixes come from Go's `math/rand`; these
/// from SplitMix64.)
pub fn prefixed_names(nodes: &[TraceNode], seed: u64) -> Vec<String> {
    let mut rng = SplitMix64(seed ^ 0x0a4e_5eed);
    nodes.iter().map(|n| format!("{:04}-{}", rng.next_u64() % 10_000, n.name)).collect()
}

/// What happened to one arriving pod, and the cluster after it.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// Index of the node it went to (in the replay's node list), `None` if it failed.
    pub node: Option<usize>,
    /// GPU devices it took.
    pub devices: SmallVec<[u8; 8]>,
    /// GPU demand of all pods so far (failed ones included), milli.
    pub arrived_milli: i64,
    /// Allocated GPU over the cluster, milli.
    pub used_milli: i64,
    /// Cluster fragmentation (sum of node fragmentation), milli.
    pub frag_milli: f64,
    /// Time spent in the scheduling and binding cycle.
    pub elapsed: Duration,
}

/// Why a replay could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayError {
    /// The profile failed to build.
    #[error(transparent)]
    Config(#[from] crate::framework::ConfigError),
    /// A node was refused by the cache.
    #[error(transparent)]
    Cache(#[from] crate::snapshot::CacheError),
    /// `names` doesn't match `nodes`.
    #[error("{names} node names given for {nodes} nodes")]
    Names {
        /// Names given.
        names: usize,
        /// Nodes.
        nodes: usize,
    },
}

/// The default filter the paper's runs use beside GpuShareFit: upstream
/// NodeResourcesFit (cpu, memory, pod count) with default args; [`Policy::profile`]
/// disables its Score.
pub fn node_resources_fit() -> Arc<dyn Plugin> {
    Arc::new(Fit::new(&FitArgs::default()).expect("default NodeResourcesFit args are valid"))
}

/// A trace replay in progress: a scheduler with one policy's profile over the trace's
/// nodes, and the cluster's GPU allocation and fragmentation after each pod.
pub struct Replay {
    scheduler: Scheduler,
    state: Arc<GpuState>,
    typical: Arc<TypicalPods>,
    names: Vec<Symbol>,
    index: AHashMap<Symbol, usize>,
    frag: Vec<f64>,
    arrived_milli: i64,
    policy: Policy,
}

impl std::fmt::Debug for Replay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Replay")
            .field("nodes", &self.names.len())
            .field("arrived_milli", &self.arrived_milli)
            .finish_non_exhaustive()
    }
}

impl Replay {
    /// A replay of `policy` over `nodes`; `names` renames them (the names ties are
    /// broken by), `seed` drives the random policy.
    pub fn new(
        nodes: &[TraceNode],
        names: Option<&[String]>,
        typical: Arc<TypicalPods>,
        policy: Policy,
        seed: u64,
    ) -> Result<Replay, ReplayError> {
        Replay::with_builder(nodes, names, typical, policy, seed, |b| b)
    }

    /// Like [`Replay::new`], letting the caller adjust the scheduler (e.g. turn on the
    /// latency recorder).
    pub fn with_builder(
        nodes: &[TraceNode],
        names: Option<&[String]>,
        typical: Arc<TypicalPods>,
        policy: Policy,
        seed: u64,
        adjust: impl FnOnce(crate::scheduler::SchedulerBuilder) -> crate::scheduler::SchedulerBuilder,
    ) -> Result<Replay, ReplayError> {
        if let Some(n) = names
            && n.len() != nodes.len()
        {
            return Err(ReplayError::Names { names: n.len(), nodes: nodes.len() });
        }
        let state = GpuState::new();
        let handle = Handle::default();
        let profile = policy.profile(
            crate::framework::DEFAULT_SCHEDULER_NAME,
            &state,
            &handle,
            &typical,
            seed,
            vec![node_resources_fit()],
        )?;
        let builder = Scheduler::builder()
            .profile(profile)
            .handle(handle)
            .percentage_of_nodes_to_score(100)
            .parallelism(1)
            .tie_break(TieBreak::SmallestName)
            .seed(seed);
        let scheduler = adjust(builder).build();
        let mut names_out = Vec::with_capacity(nodes.len());
        let mut index = AHashMap::new();
        let mut frag = Vec::with_capacity(nodes.len());
        for (i, n) in nodes.iter().enumerate() {
            let mut node = n.to_node();
            if let Some(names) = names {
                node.metadata.name.clone_from(&names[i]);
            }
            policy.prepare_node(&mut node);
            let sym = Symbol::intern(node.name());
            frag.push(gpus_frag(&typical, &NodeGpus::from_node(&node), n.cpu_milli));
            state.add_node(&node);
            scheduler.add_node(node)?;
            names_out.push(sym);
            index.insert(sym, i);
        }
        Ok(Replay { scheduler, state, typical, names: names_out, index, frag, arrived_milli: 0, policy })
    }

    /// The scheduler.
    pub fn scheduler(&self) -> &Scheduler {
        &self.scheduler
    }

    /// The scheduler, keeping the cluster as the replay left it (e.g. to bench cycles
    /// on a partly filled cluster).
    pub fn into_scheduler(self) -> Scheduler {
        self.scheduler
    }

    /// The GPU device table.
    pub fn gpu_state(&self) -> &Arc<GpuState> {
        &self.state
    }

    /// Allocated GPU over the cluster, milli.
    pub fn used_milli(&self) -> i64 {
        self.state.used_milli()
    }

    /// Cluster fragmentation, milli (sum over nodes, in node order).
    pub fn frag_milli(&self) -> f64 {
        self.frag.iter().sum()
    }

    /// The scheduler's name of node `i`.
    pub fn node_name(&self, i: usize) -> &'static str {
        self.names[i].as_str()
    }

    /// Schedules one arriving pod (built from `pod` under `name`).
    pub fn step(&mut self, pod: &TracePod, name: &str) -> Step {
        let mut p = pod.to_pod_named(name);
        self.policy.prepare_pod(&mut p);
        match PodInfo::new(p) {
            Ok(info) => self.step_info(&info, pod.gpu_demand()),
            Err(_) => self.record(None, SmallVec::new(), pod.gpu_demand(), Duration::ZERO),
        }
    }

    /// Schedules one pod already converted (so callers can time only the cycle).
    pub fn step_info(&mut self, info: &PodInfo, gpu_demand: i64) -> Step {
        let start = Instant::now();
        let result = self.scheduler.schedule_one(info);
        let (node, devices) = match result {
            Ok(binding) => {
                let devices =
                    binding.cycle_state().read::<ReservedDevices>().map(|r| r.devices.clone()).unwrap_or_default();
                let node = binding.node().to_owned();
                match binding.run() {
                    Ok(_) => (Some(node), devices),
                    Err(_) => (None, SmallVec::new()),
                }
            }
            Err(_) => (None, SmallVec::new()),
        };
        let elapsed = start.elapsed();
        let idx = node.and_then(|n| self.index.get(&Symbol::intern(&n)).copied());
        self.record(idx, devices, gpu_demand, elapsed)
    }

    fn record(&mut self, idx: Option<usize>, devices: SmallVec<[u8; 8]>, demand: i64, elapsed: Duration) -> Step {
        self.arrived_milli += demand;
        if let Some(i) = idx {
            let name = self.names[i];
            let cache = self.scheduler.cache().lock();
            if let Some(info) = cache.node_info(name.as_str()) {
                let cpu = info.allocatable().milli_cpu - info.requested().milli_cpu;
                let gpus = self.state.node(name.as_str()).unwrap_or_else(|| NodeGpus::from_node(info.node()));
                self.frag[i] = gpus_frag(&self.typical, &gpus, cpu);
            }
        }
        Step {
            node: idx,
            devices,
            arrived_milli: self.arrived_milli,
            used_milli: self.state.used_milli(),
            frag_milli: self.frag_milli(),
            elapsed,
        }
    }
}

/// Per-bin means of a replay's curve: bin `b` holds the steps whose arrived GPU demand
/// rounds to `b`% of capacity; value is the mean of `f(step)` over them; empty bins take
/// the previous bin's value (the first non-empty one at the start), as the authors'
/// analysis fills missing bins from a neighbour.
pub fn binned(steps: &[Step], capacity_milli: i64, bins: usize, f: impl Fn(&Step) -> f64) -> Vec<f64> {
    let mut sum = vec![0.0; bins];
    let mut n = vec![0u32; bins];
    for s in steps {
        let b = (s.arrived_milli as f64 * 100.0 / capacity_milli as f64).round();
        if b >= 0.0 && (b as usize) < bins {
            sum[b as usize] += f(s);
            n[b as usize] += 1;
        }
    }
    let mut out = vec![f64::NAN; bins];
    for b in 0..bins {
        if n[b] > 0 {
            out[b] = sum[b] / f64::from(n[b]);
        }
    }
    let first = out.iter().copied().find(|v| !v.is_nan()).unwrap_or(0.0);
    let mut last = first;
    for v in &mut out {
        if v.is_nan() {
            *v = last;
        } else {
            last = *v;
        }
    }
    out
}
