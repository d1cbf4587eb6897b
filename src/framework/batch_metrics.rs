//! Opportunistic batching's metrics (upstream `pkg/scheduler/metrics/metrics.go`:
//! `scheduler_batch_attempts_total`, `scheduler_batch_cache_flushed_total`,
//! `scheduler_get_node_hint_duration_seconds`,
//! `scheduler_store_schedule_results_duration_seconds`) and their labels.

use std::sync::LazyLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::scheduler_metrics::{BucketHistogram, exponential_buckets};

/// The batching histograms' bounds: `ExponentialBuckets(0.00001, 2, 12)` (10µs to ~20ms).
pub static BATCH_BUCKETS: LazyLock<Vec<f64>> = LazyLock::new(|| exponential_buckets(0.000_01, 2.0, 12));

/// Why a batch state was dropped (upstream `BatchFlush*`, the `reason` label of
/// `scheduler_batch_cache_flushed_total`): v1.36's eight.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FlushReason {
    /// The last cycle failed.
    PodFailed,
    /// Another pod (or profile) was scheduled in between.
    PodSkipped,
    /// The node chosen last is gone.
    NodeMissing,
    /// The node chosen last still fits this pod: not one pod per node.
    NodeNotFull,
    /// The cycle left no other scored node.
    EmptyList,
    /// The state is older than 500 ms.
    Expired,
    /// The pod's signature differs (or it has none).
    PodIncompatible,
    /// The pod just scheduled has no signature.
    PodNotBatchable,
}

impl FlushReason {
    /// Every reason, in upstream's declaration order.
    pub const ALL: [FlushReason; 8] = [
        FlushReason::PodFailed,
        FlushReason::PodSkipped,
        FlushReason::NodeMissing,
        FlushReason::NodeNotFull,
        FlushReason::EmptyList,
        FlushReason::Expired,
        FlushReason::PodIncompatible,
        FlushReason::PodNotBatchable,
    ];

    /// Upstream's label value.
    pub fn as_str(self) -> &'static str {
        match self {
            FlushReason::PodFailed => "pod_failed",
            FlushReason::PodSkipped => "pod_skipped",
            FlushReason::NodeMissing => "node_missing",
            FlushReason::NodeNotFull => "node_not_full",
            FlushReason::EmptyList => "empty_list",
            FlushReason::Expired => "expired",
            FlushReason::PodIncompatible => "pod_incompatible",
            FlushReason::PodNotBatchable => "pod_not_batchable",
        }
    }
}

/// A batch attempt's outcome (upstream `BatchAttempt*`, the `result` label of
/// `scheduler_batch_attempts_total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BatchAttempt {
    /// No hint was given.
    NoHint,
    /// The hint was the chosen node.
    HintUsed,
    /// A hint was given but another node was chosen.
    HintNotUsed,
}

impl BatchAttempt {
    /// Every result.
    pub const ALL: [BatchAttempt; 3] = [BatchAttempt::NoHint, BatchAttempt::HintUsed, BatchAttempt::HintNotUsed];

    /// Upstream's label value.
    pub fn as_str(self) -> &'static str {
        match self {
            BatchAttempt::NoHint => "no_hint",
            BatchAttempt::HintUsed => "hint_used",
            BatchAttempt::HintNotUsed => "hint_not_used",
        }
    }
}

/// One profile's batching metrics, recorded with relaxed atomics.
#[derive(Debug)]
pub struct BatchMetrics {
    attempts: [AtomicU64; 3],
    flushed: [AtomicU64; 8],
    /// `hinted` = `hint`, `no_hint`.
    hint_duration: [BucketHistogram; 2],
    store_duration: BucketHistogram,
}

impl BatchMetrics {
    pub(crate) fn new() -> BatchMetrics {
        BatchMetrics {
            attempts: std::array::from_fn(|_| AtomicU64::new(0)),
            flushed: std::array::from_fn(|_| AtomicU64::new(0)),
            hint_duration: std::array::from_fn(|_| BucketHistogram::new(&BATCH_BUCKETS)),
            store_duration: BucketHistogram::new(&BATCH_BUCKETS),
        }
    }

    pub(crate) fn attempt(&self, result: BatchAttempt) {
        self.attempts[result as usize].fetch_add(1, Ordering::Relaxed);
    }
    pub(crate) fn flush(&self, reason: FlushReason) {
        self.flushed[reason as usize].fetch_add(1, Ordering::Relaxed);
    }
    pub(crate) fn observe_hint(&self, hinted: bool, d: Duration) {
        self.hint_duration[usize::from(!hinted)].observe(d);
    }
    pub(crate) fn observe_store(&self, d: Duration) {
        self.store_duration.observe(d);
    }

    /// `scheduler_batch_attempts_total{result}`.
    pub fn attempts(&self, result: BatchAttempt) -> u64 {
        self.attempts[result as usize].load(Ordering::Relaxed)
    }
    /// `scheduler_batch_cache_flushed_total{reason}`.
    pub fn flushed(&self, reason: FlushReason) -> u64 {
        self.flushed[reason as usize].load(Ordering::Relaxed)
    }
    /// `scheduler_get_node_hint_duration_seconds{hinted}` (`hint` when `true`).
    pub fn hint_duration(&self, hinted: bool) -> &BucketHistogram {
        &self.hint_duration[usize::from(!hinted)]
    }
    /// `scheduler_store_schedule_results_duration_seconds`.
    pub fn store_duration(&self) -> &BucketHistogram {
        &self.store_duration
    }

    pub(crate) fn reset(&self) {
        self.attempts.iter().chain(&self.flushed).for_each(|c| c.store(0, Ordering::Relaxed));
        self.hint_duration.iter().for_each(BucketHistogram::reset);
        self.store_duration.reset();
    }
}
