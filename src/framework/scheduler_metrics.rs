//! kube-scheduler's metrics (`pkg/scheduler/metrics/metrics.go`) as lock-free
//! fixed-bucket histograms: per-plugin durations, per-extension-point durations,
//! scheduling attempts and the pending-pods gauges, with upstream's buckets.
//!
//! Everything here is recorded with relaxed atomics, so parallel Filter and Score
//! threads never take a lock. The text exposition lives in `openmetrics.rs`
//! (feature `metrics`); without that feature these counters are still readable
//! through [`LatencyRecorder::scheduler_metrics`](super::LatencyRecorder::scheduler_metrics).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use parking_lot::RwLock;

use super::Code;

/// Go's `prometheus.ExponentialBuckets(start, factor, count)`: each bound is the
/// previous one times `factor` (computed by repeated multiplication, as Go does, so
/// the `le` labels are the same floating-point values).
pub fn exponential_buckets(start: f64, factor: f64, count: usize) -> Vec<f64> {
    let mut out = Vec::with_capacity(count);
    let mut b = start;
    for _ in 0..count {
        out.push(b);
        b *= factor;
    }
    out
}

/// `scheduler_plugin_execution_duration_seconds`: `ExponentialBuckets(0.00001, 1.5, 20)`
/// (10µs to ~22ms).
pub static PLUGIN_BUCKETS: LazyLock<Vec<f64>> = LazyLock::new(|| exponential_buckets(0.000_01, 1.5, 20));
/// `scheduler_framework_extension_point_duration_seconds`:
/// `ExponentialBuckets(0.0001, 2, 12)` (0.1ms to ~200ms).
pub static EXTENSION_POINT_BUCKETS: LazyLock<Vec<f64>> = LazyLock::new(|| exponential_buckets(0.000_1, 2.0, 12));
/// `scheduler_scheduling_attempt_duration_seconds`: `ExponentialBuckets(0.001, 2, 15)`
/// (1ms to ~16s).
pub static ATTEMPT_BUCKETS: LazyLock<Vec<f64>> = LazyLock::new(|| exponential_buckets(0.001, 2.0, 15));

/// The `status` label values, in [`Code`] order (upstream `Code.String()`).
pub const CODES: [Code; 7] = [
    Code::Success,
    Code::Error,
    Code::Unschedulable,
    Code::UnschedulableAndUnresolvable,
    Code::Wait,
    Code::Skip,
    Code::Pending,
];

#[inline]
fn code_index(c: Code) -> usize {
    match c {
        Code::Success => 0,
        Code::Error => 1,
        Code::Unschedulable => 2,
        Code::UnschedulableAndUnresolvable => 3,
        Code::Wait => 4,
        Code::Skip => 5,
        Code::Pending => 6,
    }
}

/// A Prometheus histogram with fixed upper bounds (`le`, inclusive) and a `+Inf`
/// bucket; recording is two relaxed atomic adds and a binary search.
pub struct BucketHistogram {
    bounds: &'static [f64],
    /// Non-cumulative counts; the last is `+Inf`.
    counts: Box<[AtomicU64]>,
    sum_ns: AtomicU64,
}

impl std::fmt::Debug for BucketHistogram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BucketHistogram").field("count", &self.count()).finish_non_exhaustive()
    }
}

impl BucketHistogram {
    /// An empty histogram over `bounds` (ascending).
    pub fn new(bounds: &'static [f64]) -> BucketHistogram {
        BucketHistogram {
            bounds,
            counts: (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect(),
            sum_ns: AtomicU64::new(0),
        }
    }

    /// Records one duration.
    #[inline]
    pub fn observe(&self, d: Duration) {
        let secs = d.as_secs_f64();
        let i = self.bounds.partition_point(|b| *b < secs);
        self.counts[i].fetch_add(1, Ordering::Relaxed);
        self.sum_ns.fetch_add(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX), Ordering::Relaxed);
    }

    /// The upper bounds (without `+Inf`).
    pub fn bounds(&self) -> &'static [f64] {
        self.bounds
    }

    /// Values recorded.
    pub fn count(&self) -> u64 {
        self.counts.iter().map(|c| c.load(Ordering::Relaxed)).sum()
    }

    /// Sum of the values, in seconds.
    pub fn sum_seconds(&self) -> f64 {
        self.sum_ns.load(Ordering::Relaxed) as f64 / 1e9
    }

    /// Counts per bucket (not cumulative): `(upper bound, values in it)`, ending
    /// with `(+Inf, values above the last bound)`.
    pub fn per_bucket(&self) -> Vec<(f64, u64)> {
        self.counts
            .iter()
            .enumerate()
            .map(|(i, c)| (self.bounds.get(i).copied().unwrap_or(f64::INFINITY), c.load(Ordering::Relaxed)))
            .collect()
    }

    /// Cumulative counts per upper bound, ending with `(+Inf, count)`.
    pub fn cumulative(&self) -> Vec<(f64, u64)> {
        let mut acc = 0;
        let mut out = Vec::with_capacity(self.counts.len());
        for (i, c) in self.counts.iter().enumerate() {
            acc += c.load(Ordering::Relaxed);
            out.push((self.bounds.get(i).copied().unwrap_or(f64::INFINITY), acc));
        }
        out
    }

    pub(crate) fn reset(&self) {
        for c in &*self.counts {
            c.store(0, Ordering::Relaxed);
        }
        self.sum_ns.store(0, Ordering::Relaxed);
    }
}

/// One histogram per `status` label value.
#[derive(Debug)]
pub struct ByCode([BucketHistogram; 7]);

impl ByCode {
    fn new(bounds: &'static [f64]) -> ByCode {
        ByCode(std::array::from_fn(|_| BucketHistogram::new(bounds)))
    }

    /// Records `d` under `code`.
    #[inline]
    pub fn observe(&self, code: Code, d: Duration) {
        self.0[code_index(code)].observe(d);
    }

    /// `(status, histogram)` for every code with at least one value.
    pub fn recorded(&self) -> impl Iterator<Item = (&'static str, &BucketHistogram)> {
        CODES.iter().zip(&self.0).filter(|(_, h)| h.count() > 0).map(|(c, h)| (c.as_str(), h))
    }

    /// The histogram of `code`.
    pub fn get(&self, code: Code) -> &BucketHistogram {
        &self.0[code_index(code)]
    }

    fn reset(&self) {
        self.0.iter().for_each(BucketHistogram::reset);
    }
}

/// The `extension_point` label values upstream's framework times as a whole
/// (`RunPreFilterPlugins`, `RunPostFilterPlugins`, ...). Filter is timed per plugin
/// only, as upstream (it runs per node).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MetricPoint {
    /// `PreFilter`.
    PreFilter,
    /// `PostFilter`.
    PostFilter,
    /// `PreScore`.
    PreScore,
    /// `Score` (Score, NormalizeScore and the weights, as upstream `RunScorePlugins`).
    Score,
    /// `Reserve`.
    Reserve,
    /// `Unreserve` (always `Success`, as upstream).
    Unreserve,
    /// `Permit`.
    Permit,
    /// `PreBind`.
    PreBind,
    /// `Bind`.
    Bind,
    /// `PostBind` (always `Success`, as upstream).
    PostBind,
}

impl MetricPoint {
    /// Every point, in cycle order.
    pub const ALL: [MetricPoint; 10] = [
        MetricPoint::PreFilter,
        MetricPoint::PostFilter,
        MetricPoint::PreScore,
        MetricPoint::Score,
        MetricPoint::Reserve,
        MetricPoint::Unreserve,
        MetricPoint::Permit,
        MetricPoint::PreBind,
        MetricPoint::Bind,
        MetricPoint::PostBind,
    ];

    /// Upstream's label value (`metrics.go` constants).
    pub fn as_str(self) -> &'static str {
        match self {
            MetricPoint::PreFilter => "PreFilter",
            MetricPoint::PostFilter => "PostFilter",
            MetricPoint::PreScore => "PreScore",
            MetricPoint::Score => "Score",
            MetricPoint::Reserve => "Reserve",
            MetricPoint::Unreserve => "Unreserve",
            MetricPoint::Permit => "Permit",
            MetricPoint::PreBind => "PreBind",
            MetricPoint::Bind => "Bind",
            MetricPoint::PostBind => "PostBind",
        }
    }
}

/// The `result` label of attempts: `scheduled`, `unschedulable`, `error`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AttemptResult {
    /// Bound.
    Scheduled,
    /// Rejected (a FitError, or a rejecting status anywhere in the attempt).
    Unschedulable,
    /// An internal problem (an `Error` status, a failed bind).
    Error,
}

impl AttemptResult {
    /// Every result.
    pub const ALL: [AttemptResult; 3] = [AttemptResult::Scheduled, AttemptResult::Unschedulable, AttemptResult::Error];

    /// Upstream's label value.
    pub fn as_str(self) -> &'static str {
        match self {
            AttemptResult::Scheduled => "scheduled",
            AttemptResult::Unschedulable => "unschedulable",
            AttemptResult::Error => "error",
        }
    }

    /// As upstream `handleSchedulingFailure`: a rejecting status is unschedulable,
    /// anything else an error.
    pub fn of_failure(status_rejected: bool) -> AttemptResult {
        if status_rejected { AttemptResult::Unschedulable } else { AttemptResult::Error }
    }
}

/// One profile's always-on metrics: extension-point durations and attempts.
#[derive(Debug)]
pub struct ProfileMetrics {
    /// The `profile` label.
    pub profile: String,
    points: [ByCode; 10],
    attempts: [BucketHistogram; 3],
    batch: super::BatchMetrics,
}

impl ProfileMetrics {
    pub(crate) fn new(profile: &str) -> ProfileMetrics {
        ProfileMetrics {
            profile: profile.to_owned(),
            points: std::array::from_fn(|_| ByCode::new(&EXTENSION_POINT_BUCKETS)),
            attempts: std::array::from_fn(|_| BucketHistogram::new(&ATTEMPT_BUCKETS)),
            batch: super::BatchMetrics::new(),
        }
    }

    /// Records one run of every plugin at `point`.
    #[inline]
    pub fn observe_point(&self, point: MetricPoint, code: Code, d: Duration) {
        self.points[point as usize].observe(code, d);
    }

    /// The durations of `point`, by status.
    pub fn point(&self, point: MetricPoint) -> &ByCode {
        &self.points[point as usize]
    }

    /// Records one scheduling attempt (its count is `scheduler_schedule_attempts_total`).
    pub fn observe_attempt(&self, result: AttemptResult, d: Duration) {
        self.attempts[result as usize].observe(d);
    }

    /// The attempt durations of `result`.
    pub fn attempts(&self, result: AttemptResult) -> &BucketHistogram {
        &self.attempts[result as usize]
    }

    /// Opportunistic batching's metrics of this profile.
    pub fn batch(&self) -> &super::BatchMetrics {
        &self.batch
    }

    fn reset(&self) {
        self.points.iter().for_each(ByCode::reset);
        self.attempts.iter().for_each(BucketHistogram::reset);
        self.batch.reset();
    }
}

/// `scheduler_pending_pods` by `queue`, read from the scheduler's queue at scrape time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PendingPods {
    /// `active`.
    pub active: u64,
    /// `backoff`.
    pub backoff: u64,
    /// `unschedulable` (attempted and failed, not gated).
    pub unschedulable: u64,
    /// `gated` (held by PreEnqueue, never attempted).
    pub gated: u64,
}

/// Reads the pending pods of a scheduler's queue.
pub type PendingSource = Arc<dyn Fn() -> PendingPods + Send + Sync>;

/// One plugin at one extension point: the summary histogram of
/// [`LatencyReport`](super::LatencyReport) and upstream's buckets by status.
#[derive(Debug)]
pub struct PluginTimer {
    /// The plugin.
    pub plugin: &'static str,
    /// The `extension_point` label (`NormalizeScore` is upstream's `ScoreExtensionNormalize`).
    pub point: &'static str,
    pub(crate) summary: Arc<super::Histogram>,
    by_code: ByCode,
}

impl PluginTimer {
    pub(crate) fn new(plugin: &'static str, point: &'static str, summary: Arc<super::Histogram>) -> PluginTimer {
        PluginTimer { plugin, point, summary, by_code: ByCode::new(&PLUGIN_BUCKETS) }
    }

    /// Records one call.
    #[inline]
    pub fn observe(&self, code: Code, d: Duration) {
        self.summary.record(d);
        self.by_code.observe(code, d);
    }

    /// The durations by status.
    pub fn by_code(&self) -> &ByCode {
        &self.by_code
    }

    pub(crate) fn reset(&self) {
        self.by_code.reset();
    }
}

/// Everything the recorder holds in kube-scheduler's terms.
#[derive(Default)]
pub struct SchedulerMetrics {
    pub(crate) plugins: RwLock<Vec<Arc<PluginTimer>>>,
    pub(crate) profiles: RwLock<Vec<Arc<ProfileMetrics>>>,
    pub(crate) pending: RwLock<Option<PendingSource>>,
}

impl std::fmt::Debug for SchedulerMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SchedulerMetrics").finish_non_exhaustive()
    }
}

impl SchedulerMetrics {
    /// The metrics of profile `name` (created on first use).
    pub fn profile(&self, name: &str) -> Arc<ProfileMetrics> {
        if let Some(p) = self.profiles.read().iter().find(|p| p.profile == name) {
            return p.clone();
        }
        let mut w = self.profiles.write();
        if let Some(p) = w.iter().find(|p| p.profile == name) {
            return p.clone();
        }
        let p = Arc::new(ProfileMetrics::new(name));
        w.push(p.clone());
        p
    }

    /// Every profile's metrics.
    pub fn profiles(&self) -> Vec<Arc<ProfileMetrics>> {
        self.profiles.read().clone()
    }

    /// Every plugin timer.
    pub fn plugins(&self) -> Vec<Arc<PluginTimer>> {
        self.plugins.read().clone()
    }

    /// Sets where `scheduler_pending_pods` is read from (the scheduler does this).
    pub fn set_pending_source(&self, source: PendingSource) {
        *self.pending.write() = Some(source);
    }

    /// The pending pods now, if a scheduler is attached.
    pub fn pending(&self) -> Option<PendingPods> {
        self.pending.read().as_ref().map(|f| f())
    }

    pub(crate) fn reset(&self) {
        self.plugins.read().iter().for_each(|p| p.reset());
        self.profiles.read().iter().for_each(|p| p.reset());
    }
}

/// Times `f` as one run of `point` into `m` when given (upstream records every
/// cycle's extension points, unsampled); just runs it otherwise.
#[inline]
pub(crate) fn time_point<R>(
    m: Option<&ProfileMetrics>,
    point: MetricPoint,
    f: impl FnOnce() -> R,
    code_of: impl FnOnce(&R) -> Code,
) -> R {
    match m {
        None => f(),
        Some(m) => {
            let start = std::time::Instant::now();
            let r = f();
            m.observe_point(point, code_of(&r), start.elapsed());
            r
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bounds upstream's `ExponentialBuckets` gives (metrics.go).
    #[test]
    fn upstream_bucket_bounds() {
        let close = |a: f64, b: f64| (a - b).abs() <= b * 1e-12;
        assert_eq!(PLUGIN_BUCKETS.len(), 20);
        assert!(close(PLUGIN_BUCKETS[0], 0.000_01));
        assert!((PLUGIN_BUCKETS[19] - 0.000_01 * 1.5f64.powi(19)).abs() < 1e-12);
        assert!((PLUGIN_BUCKETS[19] - 0.022_168).abs() < 1e-5, "~22ms");
        assert_eq!(EXTENSION_POINT_BUCKETS.len(), 12);
        assert!(close(EXTENSION_POINT_BUCKETS[11], 0.2048));
        assert_eq!(ATTEMPT_BUCKETS.len(), 15);
        assert!(close(ATTEMPT_BUCKETS[14], 16.384));
    }

    /// `le` is inclusive; values above the last bound land in `+Inf`.
    #[test]
    fn observations_land_in_their_bucket() {
        let close = |a: f64, b: f64| (a - b).abs() <= b * 1e-12;
        let h = BucketHistogram::new(&EXTENSION_POINT_BUCKETS);
        h.observe(Duration::from_micros(100)); // exactly the first bound
        h.observe(Duration::from_micros(150));
        h.observe(Duration::from_secs(1));
        let c = h.cumulative();
        assert_eq!(c.len(), 13);
        assert!(close(c[0].0, 0.0001) && c[0].1 == 1);
        assert!(close(c[1].0, 0.0002) && c[1].1 == 2);
        assert!(close(c[11].0, 0.2048) && c[11].1 == 2);
        assert_eq!(c[12], (f64::INFINITY, 3));
        assert_eq!(h.count(), 3);
        assert!((h.sum_seconds() - 1.000_25).abs() < 1e-9);
    }

    proptest::proptest! {
        /// Cumulative counts never decrease and end at the count.
        #[test]
        fn cumulative_is_monotonic(ns in proptest::collection::vec(0u64..50_000_000_000, 0..64)) {
            let h = BucketHistogram::new(&PLUGIN_BUCKETS);
            for n in &ns {
                h.observe(Duration::from_nanos(*n));
            }
            let c = h.cumulative();
            proptest::prop_assert!(c.windows(2).all(|w| w[0].1 <= w[1].1 && w[0].0 < w[1].0));
            proptest::prop_assert_eq!(c.last().unwrap().1, ns.len() as u64);
        }
    }
}
