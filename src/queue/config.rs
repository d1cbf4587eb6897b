//! Queue timings (per-pod backoff, the unschedulable pool's max stay) and the
//! errors the queue returns.

use std::time::Duration;

/// Upstream `DefaultPodInitialBackoffDuration`.
pub const DEFAULT_INITIAL_BACKOFF: Duration = Duration::from_secs(1);
/// Upstream `DefaultPodMaxBackoffDuration`.
pub const DEFAULT_MAX_BACKOFF: Duration = Duration::from_secs(10);
/// Upstream `DefaultPodMaxInUnschedulablePodsDuration`.
pub const DEFAULT_MAX_UNSCHEDULABLE_STAY: Duration = Duration::from_secs(5 * 60);

/// Queue timings (upstream `podInitialBackoffSeconds`, `podMaxBackoffSeconds` and
/// `podMaxInUnschedulablePodsDuration`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueConfig {
    /// Backoff after the first failed attempt; doubled per further attempt.
    pub initial_backoff: Duration,
    /// Backoff cap.
    pub max_backoff: Duration,
    /// Longest a pod stays in the unschedulable pool without a relevant event.
    pub max_unschedulable_stay: Duration,
}

impl Default for QueueConfig {
    fn default() -> Self {
        QueueConfig {
            initial_backoff: DEFAULT_INITIAL_BACKOFF,
            max_backoff: DEFAULT_MAX_BACKOFF,
            max_unschedulable_stay: DEFAULT_MAX_UNSCHEDULABLE_STAY,
        }
    }
}

impl QueueConfig {
    /// Checks that the initial backoff is positive and not above the maximum, and the
    /// max stay is positive (upstream's config validation).
    pub fn validate(&self) -> Result<(), QueueError> {
        if self.initial_backoff.is_zero() {
            return Err(QueueError::InvalidConfig("initial backoff must be positive".into()));
        }
        if self.max_backoff < self.initial_backoff {
            return Err(QueueError::InvalidConfig(format!(
                "max backoff {:?} is below the initial backoff {:?}",
                self.max_backoff, self.initial_backoff
            )));
        }
        if self.max_unschedulable_stay.is_zero() {
            return Err(QueueError::InvalidConfig("max unschedulable stay must be positive".into()));
        }
        Ok(())
    }

    /// Backoff after `attempts` attempts, as upstream `calculateBackoffDuration`: none
    /// before any attempt, then the initial backoff doubled per further attempt, capped.
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedkit::queue::QueueConfig;
    /// let c = QueueConfig::default();
    /// let secs: Vec<u64> = (0..7).map(|a| c.backoff(a).as_secs()).collect();
    /// assert_eq!(secs, [0, 1, 2, 4, 8, 10, 10]);
    /// ```
    pub fn backoff(&self, attempts: u32) -> Duration {
        if attempts == 0 {
            return Duration::ZERO;
        }
        let mut d = self.initial_backoff;
        for _ in 1..attempts {
            if d > self.max_backoff.saturating_sub(d) {
                return self.max_backoff;
            }
            d += d;
        }
        d.min(self.max_backoff)
    }
}

/// Why the queue refused an operation. The queue is unchanged when one is returned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum QueueError {
    /// A pod with this uid is already queued (use update).
    #[error("pod {0} is already in the scheduling queue")]
    AlreadyQueued(String),
    /// No queued pod with this uid.
    #[error("pod {0} is not in the scheduling queue")]
    NotFound(String),
    /// The pod was not handed out by `pop`.
    #[error("pod {0} is not being scheduled")]
    NotInFlight(String),
    /// No profile serves the pod's `schedulerName`.
    #[error("pod {pod}: no profile for scheduler name {scheduler_name:?}")]
    NoProfile {
        /// namespace/name.
        pod: String,
        /// The name asked for.
        scheduler_name: String,
    },
    /// The pod is already assigned to a node; it belongs in the cache, not the queue.
    #[error("pod {0} is assigned to a node and can't be queued")]
    Assigned(String),
    /// Bad timings.
    #[error("invalid queue config: {0}")]
    InvalidConfig(String),
}
