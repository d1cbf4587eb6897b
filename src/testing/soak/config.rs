//! The soak's configuration, its summary line and its errors.

use std::time::Duration;

/// What the soak schedules.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum SoakMode {
    /// kube-scheduler's default profile on CPU/memory pods with host ports, node
    /// selectors, tolerations and priorities.
    #[default]
    Default,
    /// The default profile plus DynamicResources: GPU claims from claim templates on
    /// nodes that publish ResourceSlices.
    Dra,
    /// The default profile plus Coscheduling: gangs that bind all or nothing.
    Gangs,
    /// DRA and gangs together (gang members claim GPUs too).
    Full,
}

impl SoakMode {
    /// Whether pods claim GPUs.
    pub fn dra(self) -> bool {
        matches!(self, SoakMode::Dra | SoakMode::Full)
    }

    /// Whether gangs arrive.
    pub fn gangs(self) -> bool {
        matches!(self, SoakMode::Gangs | SoakMode::Full)
    }
}

impl std::str::FromStr for SoakMode {
    type Err = SoakError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "default" => Ok(SoakMode::Default),
            "dra" => Ok(SoakMode::Dra),
            "gangs" => Ok(SoakMode::Gangs),
            "full" => Ok(SoakMode::Full),
            _ => Err(SoakError::Config(format!("unknown mode {s:?} (expected: default, dra, gangs or full)"))),
        }
    }
}

impl std::fmt::Display for SoakMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SoakMode::Default => "default",
            SoakMode::Dra => "dra",
            SoakMode::Gangs => "gangs",
            SoakMode::Full => "full",
        })
    }
}

/// How long and how big a soak is.
#[derive(Debug, Clone)]
pub struct SoakConfig {
    /// Scheduling attempts to run.
    pub attempts: u64,
    /// Nodes in the cluster (node churn keeps the count within a few of this).
    pub nodes: usize,
    /// Pods alive at the steady size (queued or placed).
    pub steady_pods: usize,
    /// Worker threads running binding cycles.
    pub workers: usize,
    /// Attempts between invariant checks.
    pub check_every: u64,
    /// Seed of the soak's random choices.
    pub seed: u64,
    /// What is scheduled.
    pub mode: SoakMode,
    /// Fail when the resident set at the end exceeds the one at the steady size by
    /// more than this many bytes (`None`: report only; RSS is not read off Linux).
    pub rss_growth_limit: Option<u64>,
    /// Bytes of heap the process holds now, from a counting global allocator the
    /// caller installed (schedkit forbids unsafe code, so it installs none): with it
    /// the summary reports the live heap beside the resident set, which an allocator
    /// may keep high after a peak.
    pub live_heap: Option<fn() -> u64>,
    /// Fail when the live heap's floor over the second half of the settled run
    /// exceeds the one over the first half by more than this many bytes (needs
    /// [`SoakConfig::live_heap`]; see [`SoakSummary::heap_steady`]).
    pub heap_growth_limit: Option<u64>,
}

impl Default for SoakConfig {
    fn default() -> Self {
        SoakConfig {
            attempts: 100_000,
            nodes: 5000,
            steady_pods: 5000 * 5,
            workers: 2,
            check_every: 10_000,
            seed: 1,
            mode: SoakMode::Default,
            rss_growth_limit: None,
            live_heap: None,
            heap_growth_limit: None,
        }
    }
}

/// What a soak did.
#[derive(Debug, Clone, Default)]
pub struct SoakSummary {
    /// Scheduling attempts.
    pub attempts: u64,
    /// Bindings that completed.
    pub bound: u64,
    /// Attempts that found no node.
    pub unschedulable: u64,
    /// Pods evicted by preemption.
    pub preempted: u64,
    /// Pods deleted by the soak's churn.
    pub deleted: u64,
    /// Node additions, removals and updates.
    pub node_events: u64,
    /// Invariant checks passed.
    pub checks: u64,
    /// Wall time.
    pub elapsed: Duration,
    /// What was scheduled.
    pub mode: SoakMode,
    /// Gang members whose binding completed, checked against their whole gang.
    pub gang_binds: u64,
    /// GPUs held by claims at the last check.
    pub gpus_held: usize,
    /// Resident set once the cluster settled at its steady size (at the first check
    /// after as many further attempts as the steady size has pods), bytes.
    pub rss_steady: Option<u64>,
    /// Resident set at the end, bytes.
    pub rss_end: Option<u64>,
    /// Peak resident set (`VmHWM`), bytes.
    pub rss_peak: Option<u64>,
    /// The live heap's floor over the first half of the run once settled: its lowest
    /// value at the checks there (with [`SoakConfig::live_heap`]), bytes. Floors,
    /// because what a pod waiting at Permit keeps alive (the queue's log of events
    /// since it was popped, bounded) comes and goes; a leak raises the floor.
    pub heap_steady: Option<u64>,
    /// The live heap's floor over the second half (with [`SoakConfig::live_heap`]),
    /// bytes.
    pub heap_end: Option<u64>,
    /// Interned strings alive at the end.
    pub interned: usize,
}

impl std::fmt::Display for SoakSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mb = |b: Option<u64>| b.map_or_else(|| "n/a".to_owned(), |b| format!("{:.1} MB", b as f64 / 1e6));
        let secs = self.elapsed.as_secs_f64();
        write!(
            f,
            "soak ({}): {} attempts in {secs:.1} s ({:.0} attempts/s), {} bound, {} unschedulable, {} preempted, \
             {} deleted, {} node events",
            self.mode,
            self.attempts,
            self.attempts as f64 / secs.max(1e-9),
            self.bound,
            self.unschedulable,
            self.preempted,
            self.deleted,
            self.node_events,
        )?;
        if self.mode.gangs() {
            write!(f, ", {} gang binds", self.gang_binds)?;
        }
        if self.mode.dra() {
            write!(f, ", {} GPUs held", self.gpus_held)?;
        }
        write!(
            f,
            ", {} checks passed; RSS steady {} end {} peak {}",
            self.checks,
            mb(self.rss_steady),
            mb(self.rss_end),
            mb(self.rss_peak)
        )?;
        if self.heap_end.is_some() {
            write!(f, "; live heap steady {} end {}", mb(self.heap_steady), mb(self.heap_end))?;
        }
        write!(f, "; {} interned strings", self.interned)
    }
}

/// Why a soak stopped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SoakError {
    /// The configuration is unusable.
    #[error("soak configuration: {0}")]
    Config(String),
    /// An invariant broke.
    #[error("invariant broken after {attempts} attempts: {what}")]
    Invariant {
        /// Attempts run when it was found.
        attempts: u64,
        /// What broke, naming the pod or node.
        what: String,
    },
    /// The scheduler refused an event the soak considers valid.
    #[error("after {attempts} attempts the scheduler refused {what}")]
    Refused {
        /// Attempts run.
        attempts: u64,
        /// The event and the error.
        what: String,
    },
}
