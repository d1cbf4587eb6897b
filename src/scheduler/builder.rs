//! [`SchedulerBuilder`]: profiles, settings, clock, handle, queue timings and the
//! latency recorder, put together into a [`Scheduler`].

use std::sync::Arc;

use parking_lot::Mutex;

use super::batch::OpportunisticBatch;
use super::{Buffers, MetricsState, Scheduler, SchedulerConfig, TieBreak};
use crate::framework::scheduler_metrics::PendingPods;
use crate::framework::{Clock, Handle, LatencyRecorder, Profile, RealClock};
use crate::queue::{QueueConfig, QueueError, SchedulingQueue};
use crate::rng::SplitMix64;
use crate::snapshot::Cache;

/// Builds a [`Scheduler`].
pub struct SchedulerBuilder {
    profiles: Vec<Profile>,
    config: SchedulerConfig,
    clock: Option<Arc<dyn Clock>>,
    handle: Option<Handle>,
    queue: QueueConfig,
    metrics: Option<Arc<LatencyRecorder>>,
    extenders: Vec<Arc<dyn crate::framework::Extender>>,
}

impl std::fmt::Debug for SchedulerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SchedulerBuilder").field("config", &self.config).finish_non_exhaustive()
    }
}

impl SchedulerBuilder {
    /// Adds a scheduler extender, called after the profile's Filter and Score plugins
    /// and before its Bind plugins, as kube-scheduler calls `extenders[]` (it is
    /// shared on the handle as [`Extenders`](crate::framework::Extenders); ignorable
    /// extenders are called after the others).
    #[must_use]
    pub fn extender(mut self, e: Arc<dyn crate::framework::Extender>) -> Self {
        self.extenders.push(e);
        self
    }

    /// Adds a profile (pods choose one by `schedulerName`).
    #[must_use]
    pub fn profile(mut self, p: Profile) -> Self {
        self.profiles.push(p);
        self
    }
    /// Replaces the settings.
    #[must_use]
    pub fn config(mut self, c: SchedulerConfig) -> Self {
        self.config = c;
        self
    }
    /// Sets `percentageOfNodesToScore`.
    #[must_use]
    pub fn percentage_of_nodes_to_score(mut self, pct: u32) -> Self {
        self.config.percentage_of_nodes_to_score = pct.min(100);
        self
    }
    /// Sets the number of Filter/Score threads (1 = single-threaded).
    #[must_use]
    pub fn parallelism(mut self, threads: usize) -> Self {
        self.config.parallelism = threads.max(1);
        self
    }
    /// Sets the tie-break.
    #[must_use]
    pub fn tie_break(mut self, t: TieBreak) -> Self {
        self.config.tie_break = t;
        self
    }
    /// Sets the tie-break seed.
    #[must_use]
    pub fn seed(mut self, seed: u64) -> Self {
        self.config.seed = seed;
        self
    }
    /// Uses `clock` (ignored when [`SchedulerBuilder::handle`] is given).
    #[must_use]
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = Some(clock);
        self
    }
    /// Uses an existing handle (the one the profile's plugins were built with).
    #[must_use]
    pub fn handle(mut self, handle: Handle) -> Self {
        self.handle = Some(handle);
        self
    }

    /// Sets the queue's backoff and max-stay timings, checked here.
    pub fn queue_config(mut self, c: QueueConfig) -> Result<Self, QueueError> {
        c.validate()?;
        self.queue = c;
        Ok(self)
    }

    /// Records per-plugin latencies into `recorder` (see [`LatencyRecorder`]).
    #[must_use]
    pub fn latency_recorder(mut self, recorder: Arc<LatencyRecorder>) -> Self {
        self.metrics = Some(recorder);
        self
    }

    /// Builds the scheduler.
    pub fn build(self) -> Scheduler {
        let handle =
            self.handle.unwrap_or_else(|| Handle::new(self.clock.unwrap_or_else(|| Arc::new(RealClock::default()))));
        if !self.extenders.is_empty() {
            let mut set = handle.shared::<crate::framework::Extenders>().map(|e| (*e).clone()).unwrap_or_default();
            for e in self.extenders {
                set.push(e);
            }
            handle.set_shared(Arc::new(set));
        }
        #[cfg(feature = "parallel")]
        let pool = (self.config.parallelism > 1)
            .then(|| rayon::ThreadPoolBuilder::new().num_threads(self.config.parallelism).build().ok())
            .flatten();
        let profiles: Vec<Arc<Profile>> = self.profiles.into_iter().map(Arc::new).collect();
        let queue = SchedulingQueue::new(&profiles, handle.clock_arc(), self.queue)
            .or_else(|_| SchedulingQueue::new(&profiles, handle.clock_arc(), QueueConfig::default()))
            .expect("the default queue config is valid");
        let queue = Arc::new(Mutex::new(queue));
        let metrics = self.metrics.map(|recorder| {
            let timers = profiles.iter().map(|p| Arc::new(recorder.timers(p))).collect();
            let kube = recorder.scheduler_metrics();
            let profiles = profiles.iter().map(|p| kube.profile(p.name())).collect();
            // scheduler_pending_pods is read from the queue at scrape time; a weak
            // reference so the recorder doesn't keep a dropped scheduler's queue alive.
            let weak = Arc::downgrade(&queue);
            kube.set_pending_source(Arc::new(move || {
                weak.upgrade().map_or_else(PendingPods::default, |q| {
                    let c = q.lock().counts();
                    PendingPods {
                        active: c.active as u64,
                        backoff: c.backoff as u64,
                        unschedulable: c.unschedulable as u64,
                        gated: c.gated as u64,
                    }
                })
            }));
            MetricsState { recorder, timers, profiles }
        });
        let gates = handle.feature_gates();
        let batches = profiles
            .iter()
            .map(|p| {
                p.batching_enabled(gates).then(|| {
                    OpportunisticBatch::new(
                        gates.enabled(crate::framework::Feature::GenericWorkload),
                        self.config.tie_break == TieBreak::SmallestName,
                    )
                    .with_rescoring(p.batch_rescoring())
                })
            })
            .collect::<Vec<_>>();
        queue.lock().set_signing(&batches.iter().map(Option::is_some).collect::<Vec<_>>());
        Scheduler {
            batches,
            cycle_count: 0,
            cache: Arc::new(Mutex::new({
                let mut cache = Cache::new();
                cache.share_pod_group_states(handle.pod_groups().states().clone());
                cache
            })),
            handle,
            profiles,
            queue,
            parked: Vec::new(),
            parked_epoch: 0,
            parked_deadline: None,
            parked_dirty: false,
            metrics,
            timers: None,
            cycle_metrics: None,
            rng: SplitMix64(self.config.seed),
            pending_attempts: std::collections::VecDeque::new(),
            skip_post_filters: false,
            group_memo: None,
            group_memo_spare: super::group_memo::GroupMemo::default(),
            group_switches: super::GroupSwitches { memo: true, placement_early_stop: true },
            group_memo_stats: super::group_memo::MemoStats::default(),
            group_signs: Vec::new(),
            config: self.config,
            next_start: 0,
            bufs: Buffers::default(),
            #[cfg(feature = "parallel")]
            pool,
        }
    }
}

impl Scheduler {
    /// Starts building a scheduler.
    pub fn builder() -> SchedulerBuilder {
        SchedulerBuilder {
            profiles: Vec::new(),
            config: SchedulerConfig::default(),
            clock: None,
            handle: None,
            queue: QueueConfig::default(),
            metrics: None,
            extenders: Vec::new(),
        }
    }
}
