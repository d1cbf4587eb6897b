//! OpenMetrics text of the [`LatencyRecorder`] in kube-scheduler's names, labels,
//! help texts and buckets (`pkg/scheduler/metrics/metrics.go`), encoded by the
//! Prometheus org's `prometheus-client` crate (feature `metrics`).
//!
//! The recorder keeps its own lock-free histograms and hands them to
//! `prometheus-client` as a [`Collector`] at scrape time: that crate's `Histogram`
//! takes a mutex per observation, which parallel Filter threads would contend on,
//! while its encoder gives correct OpenMetrics (escaping, `_total`, `# EOF`).

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, MetricEncoder};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

use super::LatencyRecorder;
use super::scheduler_metrics::{AttemptResult, BucketHistogram, MetricPoint, SchedulerMetrics};

const PLUGIN_HELP: &str = "Duration for running a plugin at a specific extension point.";
const POINT_HELP: &str = "Latency for running all plugins of a specific extension point.";
const ATTEMPT_DURATION_HELP: &str = "Scheduling attempt latency in seconds (scheduling algorithm + binding)";
const ATTEMPTS_HELP: &str = "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be scheduled, while 'error' means an internal scheduler problem.";
const PENDING_HELP: &str = "Number of pending pods, by the queue type. 'active' means number of pods in activeQ; 'backoff' means number of pods in backoffQ; 'unschedulable' means number of pods in unschedulablePods that the scheduler attempted to schedule and failed; 'gated' is the number of unschedulable pods that the scheduler never attempted to schedule because they are gated.";

/// The `extension_point` label of a plugin timer: upstream spells NormalizeScore
/// `ScoreExtensionNormalize`.
fn plugin_point_label(point: &str) -> &str {
    if point == "NormalizeScore" { "ScoreExtensionNormalize" } else { point }
}

/// One histogram series. `prometheus-client` takes per-bucket counts and writes them
/// cumulatively; the count is the sum of the same loads, so `+Inf` equals `_count`
/// even while other threads record.
fn histogram(enc: MetricEncoder<'_>, h: &BucketHistogram) -> Result<(), std::fmt::Error> {
    let mut enc = enc;
    let buckets = h.per_bucket();
    let count = buckets.iter().map(|b| b.1).sum();
    enc.encode_histogram::<prometheus_client::encoding::NoLabelSet>(h.sum_seconds(), count, &buckets, None)
}

/// Scrape-time view of a recorder's [`SchedulerMetrics`].
#[derive(Debug)]
struct SchedulerCollector(std::sync::Arc<LatencyRecorder>);

impl Collector for SchedulerCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        encode_into(self.0.scheduler_metrics(), &mut encoder)
    }
}

fn encode_into(m: &SchedulerMetrics, encoder: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
    let profiles = m.profiles();
    {
        let mut d =
            encoder.encode_descriptor("scheduler_schedule_attempts", ATTEMPTS_HELP, None, MetricType::Counter)?;
        for p in &profiles {
            for r in AttemptResult::ALL {
                let h = p.attempts(r);
                if h.count() > 0 {
                    let labels = [("result", r.as_str()), ("profile", p.profile.as_str())];
                    d.encode_family(&labels)?
                        .encode_counter::<prometheus_client::encoding::NoLabelSet, _, f64>(&h.count(), None)?;
                }
            }
        }
    }
    {
        let mut d = encoder.encode_descriptor(
            "scheduler_scheduling_attempt_duration_seconds",
            ATTEMPT_DURATION_HELP,
            None,
            MetricType::Histogram,
        )?;
        for p in &profiles {
            for r in AttemptResult::ALL {
                let h = p.attempts(r);
                if h.count() > 0 {
                    let labels = [("result", r.as_str()), ("profile", p.profile.as_str())];
                    histogram(d.encode_family(&labels)?, h)?;
                }
            }
        }
    }
    {
        let mut d = encoder.encode_descriptor(
            "scheduler_framework_extension_point_duration_seconds",
            POINT_HELP,
            None,
            MetricType::Histogram,
        )?;
        for p in &profiles {
            for point in MetricPoint::ALL {
                for (status, h) in p.point(point).recorded() {
                    let labels =
                        [("extension_point", point.as_str()), ("status", status), ("profile", p.profile.as_str())];
                    histogram(d.encode_family(&labels)?, h)?;
                }
            }
        }
    }
    {
        let mut d = encoder.encode_descriptor(
            "scheduler_plugin_execution_duration_seconds",
            PLUGIN_HELP,
            None,
            MetricType::Histogram,
        )?;
        for t in m.plugins() {
            for (status, h) in t.by_code().recorded() {
                let labels =
                    [("plugin", t.plugin), ("extension_point", plugin_point_label(t.point)), ("status", status)];
                histogram(d.encode_family(&labels)?, h)?;
            }
        }
    }
    encode_batch(&profiles, encoder)?;
    if let Some(p) = m.pending() {
        let mut d = encoder.encode_descriptor("scheduler_pending_pods", PENDING_HELP, None, MetricType::Gauge)?;
        for (queue, n) in
            [("active", p.active), ("backoff", p.backoff), ("unschedulable", p.unschedulable), ("gated", p.gated)]
        {
            d.encode_family(&[("queue", queue)])?.encode_gauge(&(n as i64))?;
        }
    }
    Ok(())
}

/// Opportunistic batching's series (upstream's names, labels and help texts); a
/// profile that never batched writes none.
fn encode_batch(
    profiles: &[std::sync::Arc<super::scheduler_metrics::ProfileMetrics>],
    encoder: &mut DescriptorEncoder,
) -> Result<(), std::fmt::Error> {
    use super::{BatchAttempt, FlushReason};
    type NoLabels = prometheus_client::encoding::NoLabelSet;
    let active: Vec<_> = profiles
        .iter()
        .filter(|p| {
            let b = p.batch();
            b.hint_duration(true).count() + b.hint_duration(false).count() + b.store_duration().count() > 0
        })
        .collect();
    if active.is_empty() {
        return Ok(());
    }
    {
        let mut d = encoder.encode_descriptor(
            "scheduler_batch_attempts",
            "Counts of results when we attempt to use batching.",
            None,
            MetricType::Counter,
        )?;
        for p in &active {
            for r in BatchAttempt::ALL {
                let labels = [("profile", p.profile.as_str()), ("result", r.as_str())];
                d.encode_family(&labels)?.encode_counter::<NoLabels, _, f64>(&p.batch().attempts(r), None)?;
            }
        }
    }
    {
        let mut d = encoder.encode_descriptor(
            "scheduler_batch_cache_flushed",
            "Counts of cache flushes by reason.",
            None,
            MetricType::Counter,
        )?;
        for p in &active {
            for r in FlushReason::ALL {
                let labels = [("profile", p.profile.as_str()), ("reason", r.as_str())];
                d.encode_family(&labels)?.encode_counter::<NoLabels, _, f64>(&p.batch().flushed(r), None)?;
            }
        }
    }
    {
        let mut d = encoder.encode_descriptor(
            "scheduler_get_node_hint_duration_seconds",
            "Latency for getting a node hint.",
            None,
            MetricType::Histogram,
        )?;
        for p in &active {
            for (hinted, label) in [(true, "hint"), (false, "no_hint")] {
                let labels = [("hinted", label), ("profile", p.profile.as_str())];
                histogram(d.encode_family(&labels)?, p.batch().hint_duration(hinted))?;
            }
        }
    }
    {
        let mut d = encoder.encode_descriptor(
            "scheduler_store_schedule_results_duration_seconds",
            "Latency for storing scheduling results.",
            None,
            MetricType::Histogram,
        )?;
        for p in &active {
            histogram(d.encode_family(&[("profile", p.profile.as_str())])?, p.batch().store_duration())?;
        }
    }
    Ok(())
}

impl LatencyRecorder {
    /// Registers this recorder's metrics in a `prometheus-client` [`Registry`], to
    /// serve them beside an application's own (they are read at each scrape).
    pub fn register(self: &std::sync::Arc<Self>, registry: &mut Registry) {
        registry.register_collector(Box::new(SchedulerCollector(self.clone())));
    }

    /// The OpenMetrics text (`application/openmetrics-text; version=1.0.0`) of
    /// kube-scheduler's metrics as this recorder has them:
    /// `scheduler_schedule_attempts_total{result,profile}`,
    /// `scheduler_scheduling_attempt_duration_seconds{result,profile}`,
    /// `scheduler_framework_extension_point_duration_seconds{extension_point,status,profile}`,
    /// `scheduler_plugin_execution_duration_seconds{plugin,extension_point,status}`
    /// and, once a scheduler uses the recorder, `scheduler_pending_pods{queue}`.
    /// Series appear once they have a value, as upstream's vectors do.
    pub fn encode_openmetrics(self: &std::sync::Arc<Self>) -> String {
        let mut registry = Registry::default();
        self.register(&mut registry);
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &registry);
        out
    }
}
