//! The per-plugin latency recorder: one histogram per plugin per extension point
//! (upstream's `plugin_execution_duration_seconds`), opt-in, and the home of the
//! metrics in kube-scheduler's terms ([`SchedulerMetrics`]).
//!
//! Give a [`LatencyRecorder`] to `SchedulerBuilder::latency_recorder`; the scheduler then
//! times every plugin call of a sampled cycle and records it in the plugin's histogram:
//! PreFilter, Filter (per node), PostFilter, PreScore, Score (per batched `score_nodes` call, i.e.
//! all feasible nodes of the cycle, or one chunk of them when Score runs in parallel),
//! NormalizeScore, Reserve, Unreserve, Permit, and the binding cycle's PreBind, Bind
//! and PostBind. Like upstream (`pluginMetricsSamplePercent = 10`) it samples cycles,
//! by default one in ten (upstream draws 10% at random; schedkit takes every tenth, so
//! runs are reproducible), since reading the clock around every Filter call costs more
//! than many Filter plugins do; [`LatencyRecorder::every_cycle`] records all.
//!
//! Every cycle, sampled or not, also records what upstream records unsampled: each
//! extension point as a whole (`scheduler_framework_extension_point_duration_seconds`),
//! and each attempt's result and duration from the start of the scheduling cycle to
//! the end of binding (`scheduler_scheduling_attempt_duration_seconds`,
//! `scheduler_schedule_attempts_total`); `scheduler_pending_pods` is read from the
//! queue when asked. With the `metrics` feature, `LatencyRecorder::encode_openmetrics`
//! renders all of it with upstream's names, labels, help texts and buckets, and
//! `schedkit::metrics_server` serves it over HTTP.
//!
//! Without a recorder the cycle only tests an `Option` once per cycle and per plugin
//! or extension-point call. Histograms are lock-free (atomic buckets), so parallel
//! Filter and Score threads record without contention.
//!
//! ```
//! use std::sync::Arc;
//! use schedkit::framework::{FilterFn, LatencyRecorder, Profile, Status};
//! use schedkit::scheduler::Scheduler;
//! use schedkit::testing::{NodeBuilder, PodBuilder};
//!
//! let profile = Profile::builder("default-scheduler")
//!     .plugin(FilterFn::new("Anything", |_, _, _| Status::SUCCESS))
//!     .build()
//!     .unwrap();
//! let recorder = Arc::new(LatencyRecorder::every_cycle());
//! let mut sched = Scheduler::builder().profile(profile).latency_recorder(recorder.clone()).build();
//! sched.add_node(NodeBuilder::new("n1").cpu("4").build()).unwrap();
//! sched.add_node(NodeBuilder::new("n2").cpu("4").build()).unwrap();
//! sched.schedule_pod(PodBuilder::new("p").build()).unwrap().run().unwrap();
//! let report = recorder.report();
//! let filter = report.get("Anything", "Filter").unwrap();
//! assert_eq!(filter.count, 2); // one call per node
//! println!("{report}");
//! ```

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::RwLock;

use super::Code;
use super::scheduler_metrics::PluginTimer;
pub use super::scheduler_metrics::SchedulerMetrics;

/// Values below this many nanoseconds get a bucket each.
const LINEAR: u64 = 64;
/// Sub-buckets per power of two above that (5 bits: ~3% precision).
const SUB_BITS: u32 = 5;
const SUB: usize = 1 << SUB_BITS;
const BUCKETS: usize = LINEAR as usize + (64 - 6) * SUB;

fn bucket_of(ns: u64) -> usize {
    if ns < LINEAR {
        return ns as usize;
    }
    let e = ns.ilog2(); // >= 6
    let sub = ((ns >> (e - SUB_BITS)) as usize) & (SUB - 1);
    LINEAR as usize + (e as usize - 6) * SUB + sub
}

/// Lower bound (ns) of a bucket.
fn bucket_low(b: usize) -> u64 {
    if b < LINEAR as usize {
        return b as u64;
    }
    let k = b - LINEAR as usize;
    let e = (k / SUB) as u32 + 6;
    let sub = (k % SUB) as u64;
    (1u64 << e) | (sub << (e - SUB_BITS))
}

/// A latency histogram in nanoseconds.
pub struct Histogram {
    buckets: Box<[AtomicU64]>,
    count: AtomicU64,
    sum: AtomicU64,
    max: AtomicU64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            buckets: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect(),
            count: AtomicU64::new(0),
            sum: AtomicU64::new(0),
            max: AtomicU64::new(0),
        }
    }
}

impl fmt::Debug for Histogram {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Histogram").field("count", &self.count()).finish_non_exhaustive()
    }
}

impl Histogram {
    /// Records one duration.
    #[inline]
    pub fn record(&self, d: Duration) {
        let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        self.buckets[bucket_of(ns)].fetch_add(1, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
        self.sum.fetch_add(ns, Ordering::Relaxed);
        self.max.fetch_max(ns, Ordering::Relaxed);
    }

    /// Number of recorded values.
    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    /// The `q` quantile (0..=1), as the lower bound of its bucket.
    pub fn quantile(&self, q: f64) -> Duration {
        let n = self.count();
        if n == 0 {
            return Duration::ZERO;
        }
        let rank = ((q.clamp(0.0, 1.0) * n as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (b, c) in self.buckets.iter().enumerate() {
            seen += c.load(Ordering::Relaxed);
            if seen >= rank {
                return Duration::from_nanos(bucket_low(b));
            }
        }
        Duration::from_nanos(self.max.load(Ordering::Relaxed))
    }

    /// Summary statistics.
    pub fn summary(&self) -> (u64, Duration, Duration, Duration, Duration, Duration) {
        let n = self.count();
        let mean = self.sum.load(Ordering::Relaxed).checked_div(n).unwrap_or(0);
        (
            n,
            Duration::from_nanos(mean),
            self.quantile(0.5),
            self.quantile(0.9),
            self.quantile(0.99),
            Duration::from_nanos(self.max.load(Ordering::Relaxed)),
        )
    }

    fn reset(&self) {
        for b in &*self.buckets {
            b.store(0, Ordering::Relaxed);
        }
        self.count.store(0, Ordering::Relaxed);
        self.sum.store(0, Ordering::Relaxed);
        self.max.store(0, Ordering::Relaxed);
    }
}

/// Times `f` into `t` when given, with the status `code_of` reads from its result
/// (upstream's `status` label); just runs it otherwise.
#[inline]
pub(crate) fn timed<R>(t: Option<&PluginTimer>, f: impl FnOnce() -> R, code_of: impl FnOnce(&R) -> Code) -> R {
    match t {
        None => f(),
        Some(t) => {
            let start = Instant::now();
            let r = f();
            t.observe(code_of(&r), start.elapsed());
            r
        }
    }
}

/// Timers of every plugin of one extension point of a profile, by position.
pub(crate) type PointTimers = Vec<Arc<PluginTimer>>;

/// A profile's plugin timers, resolved once so the cycle indexes instead of looking up.
#[derive(Debug, Default)]
pub(crate) struct ProfileTimers {
    pub pre_filter: PointTimers,
    pub filter: PointTimers,
    pub post_filter: PointTimers,
    pub pre_score: PointTimers,
    pub score: PointTimers,
    pub normalize: PointTimers,
    pub reserve: PointTimers,
    pub unreserve: PointTimers,
    pub permit: PointTimers,
    pub pre_bind: PointTimers,
    pub bind: PointTimers,
    pub post_bind: PointTimers,
}

/// Opt-in per-plugin, per-extension-point latency histograms.
pub struct LatencyRecorder {
    sample_every: u64,
    cycles: AtomicU64,
    entries: RwLock<Vec<(&'static str, &'static str, Arc<Histogram>)>>,
    kube: SchedulerMetrics,
}

impl fmt::Debug for LatencyRecorder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LatencyRecorder").field("sample_every", &self.sample_every).finish_non_exhaustive()
    }
}

impl Default for LatencyRecorder {
    fn default() -> Self {
        LatencyRecorder::sampling(10)
    }
}

impl LatencyRecorder {
    /// Records one cycle in ten (upstream's default sampling).
    pub fn new() -> LatencyRecorder {
        LatencyRecorder::default()
    }

    /// Records every cycle.
    pub fn every_cycle() -> LatencyRecorder {
        LatencyRecorder::sampling(1)
    }

    /// Records one cycle in `n` (0 is taken as 1).
    pub fn sampling(n: u64) -> LatencyRecorder {
        LatencyRecorder {
            sample_every: n.max(1),
            cycles: AtomicU64::new(0),
            entries: RwLock::new(Vec::new()),
            kube: SchedulerMetrics::default(),
        }
    }

    /// Whether the next cycle is recorded (advances the sampling counter).
    #[inline]
    pub(crate) fn sample(&self) -> bool {
        self.cycles.fetch_add(1, Ordering::Relaxed).is_multiple_of(self.sample_every)
    }

    /// The histogram of `plugin` at `point` (created on first use).
    pub fn histogram(&self, plugin: &'static str, point: &'static str) -> Arc<Histogram> {
        if let Some(h) = self.entries.read().iter().find(|e| e.0 == plugin && e.1 == point) {
            return h.2.clone();
        }
        let mut w = self.entries.write();
        if let Some(h) = w.iter().find(|e| e.0 == plugin && e.1 == point) {
            return h.2.clone();
        }
        let h = Arc::new(Histogram::default());
        w.push((plugin, point, h.clone()));
        h
    }

    /// The timer of `plugin` at `point` (created on first use), feeding both the
    /// summary histogram and upstream's buckets.
    pub fn plugin_timer(&self, plugin: &'static str, point: &'static str) -> Arc<PluginTimer> {
        let find = |v: &[Arc<PluginTimer>]| v.iter().find(|t| t.plugin == plugin && t.point == point).cloned();
        if let Some(t) = find(&self.kube.plugins.read()) {
            return t;
        }
        let summary = self.histogram(plugin, point);
        let mut w = self.kube.plugins.write();
        if let Some(t) = find(&w) {
            return t;
        }
        let t = Arc::new(PluginTimer::new(plugin, point, summary));
        w.push(t.clone());
        t
    }

    pub(crate) fn timers(&self, profile: &super::Profile) -> ProfileTimers {
        let get = |point: &'static str, names: Vec<&'static str>| -> PointTimers {
            names.into_iter().map(|n| self.plugin_timer(n, point)).collect()
        };
        let score: Vec<&'static str> = profile.score.iter().map(|s| s.name).collect();
        ProfileTimers {
            pre_filter: get("PreFilter", profile.pre_filter_plugins()),
            filter: get("Filter", profile.filter_plugins()),
            post_filter: get("PostFilter", profile.post_filter_plugins()),
            pre_score: get("PreScore", profile.pre_score_plugins()),
            score: get("Score", score.clone()),
            normalize: get("NormalizeScore", score),
            reserve: get("Reserve", profile.reserve_plugins()),
            unreserve: get("Unreserve", profile.reserve_plugins()),
            permit: get("Permit", profile.permit_plugins()),
            pre_bind: get("PreBind", profile.pre_bind.iter().map(|p| p.name).collect()),
            bind: get("Bind", profile.bind.iter().map(|p| p.name).collect()),
            post_bind: get("PostBind", profile.post_bind.iter().map(|p| p.name).collect()),
        }
    }

    /// The metrics in kube-scheduler's terms (extension points, attempts, pending
    /// pods, plugins by status); render them with `LatencyRecorder::encode_openmetrics`
    /// (feature `metrics`).
    pub fn scheduler_metrics(&self) -> &SchedulerMetrics {
        &self.kube
    }

    /// Clears every histogram.
    pub fn reset(&self) {
        for e in self.entries.read().iter() {
            e.2.reset();
        }
        self.kube.reset();
    }

    /// A snapshot of every histogram with at least one value.
    pub fn report(&self) -> LatencyReport {
        let entries = self
            .entries
            .read()
            .iter()
            .filter(|e| e.2.count() > 0)
            .map(|(plugin, point, h)| {
                let (count, mean, p50, p90, p99, max) = h.summary();
                LatencyEntry { plugin, point, count, mean, p50, p90, p99, max }
            })
            .collect();
        LatencyReport { entries }
    }
}

/// One plugin at one extension point.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LatencyEntry {
    /// Plugin name.
    pub plugin: &'static str,
    /// Extension point (`Filter`, `Score`, `NormalizeScore`...).
    pub point: &'static str,
    /// Calls recorded.
    pub count: u64,
    /// Mean.
    pub mean: Duration,
    /// Median.
    pub p50: Duration,
    /// 90th percentile.
    pub p90: Duration,
    /// 99th percentile.
    pub p99: Duration,
    /// Slowest.
    pub max: Duration,
}

/// Every recorded histogram; `Display` prints a table.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LatencyReport {
    /// Entries in first-recorded order.
    pub entries: Vec<LatencyEntry>,
}

impl LatencyReport {
    /// The entry of `plugin` at `point`.
    pub fn get(&self, plugin: &str, point: &str) -> Option<&LatencyEntry> {
        self.entries.iter().find(|e| e.plugin == plugin && e.point == point)
    }
}

fn fmt_dur(d: Duration) -> String {
    let ns = d.as_nanos();
    if ns < 10_000 {
        format!("{ns}ns")
    } else if ns < 10_000_000 {
        format!("{:.1}µs", ns as f64 / 1e3)
    } else {
        format!("{:.1}ms", ns as f64 / 1e6)
    }
}

impl fmt::Display for LatencyReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{:<28} {:<15} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9}",
            "plugin", "point", "calls", "mean", "p50", "p90", "p99", "max"
        )?;
        for e in &self.entries {
            writeln!(
                f,
                "{:<28} {:<15} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9}",
                e.plugin,
                e.point,
                e.count,
                fmt_dur(e.mean),
                fmt_dur(e.p50),
                fmt_dur(e.p90),
                fmt_dur(e.p99),
                fmt_dur(e.max)
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_monotonic_and_tight() {
        let mut last = 0;
        for ns in [0u64, 1, 63, 64, 65, 100, 1000, 12_345, 1 << 20, 1 << 40, u64::MAX] {
            let b = bucket_of(ns);
            assert!(b >= last && b < BUCKETS);
            last = b;
            let lo = bucket_low(b);
            assert!(lo <= ns && (ns - lo) as f64 <= ns as f64 / 30.0 + 1.0, "{ns} -> {lo}");
        }
    }

    #[test]
    fn the_scheduler_samples_one_cycle_in_n_and_times_every_plugin_of_it() {
        use crate::framework::{FilterFn, Profile, ScoreFn, Status};
        use crate::scheduler::Scheduler;
        use crate::testing::{NodeBuilder, PodBuilder};
        let profile = Profile::builder("default-scheduler")
            .plugin(FilterFn::new("F", |_, _, _| Status::SUCCESS))
            .plugin(ScoreFn::new("S", |_, _, _| 1))
            .build()
            .unwrap();
        let rec = Arc::new(LatencyRecorder::sampling(5));
        let mut s = Scheduler::builder().profile(profile).parallelism(1).latency_recorder(rec.clone()).build();
        for i in 0..3 {
            s.add_node(NodeBuilder::new(&format!("n{i}")).cpu("8").build()).unwrap();
        }
        let mut sampled = 0;
        for i in 0..10 {
            let b = s.schedule_pod(PodBuilder::new(&format!("p{i}")).build()).unwrap();
            sampled += usize::from(s.last_cycle_sampled());
            b.run().unwrap();
        }
        assert_eq!(sampled, 2);
        let r = rec.report();
        assert_eq!(r.get("F", "Filter").unwrap().count, 6, "3 nodes x 2 sampled cycles");
        assert_eq!(r.get("S", "Score").unwrap().count, 2, "one batch per sampled cycle");
        assert!(r.to_string().lines().count() >= 3);
        rec.reset();
        assert!(rec.report().entries.is_empty());
        // No recorder: nothing sampled.
        let profile = Profile::builder("default-scheduler").build().unwrap();
        let mut s = Scheduler::builder().profile(profile).build();
        s.add_node(NodeBuilder::new("n").cpu("8").build()).unwrap();
        s.schedule_pod(PodBuilder::new("p").build()).unwrap().run().unwrap();
        assert!(!s.last_cycle_sampled() && s.latency_recorder().is_none());
    }

    #[test]
    fn quantiles_follow_the_data() {
        let h = Histogram::default();
        for i in 1..=1000u64 {
            h.record(Duration::from_nanos(i * 1000));
        }
        let p50 = h.quantile(0.5).as_nanos() as f64;
        let p99 = h.quantile(0.99).as_nanos() as f64;
        assert!((p50 - 500_000.0).abs() / 500_000.0 < 0.04, "{p50}");
        assert!((p99 - 990_000.0).abs() / 990_000.0 < 0.04, "{p99}");
        assert_eq!(h.count(), 1000);
    }
}
