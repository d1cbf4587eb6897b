//! Injectable time. Nothing in schedkit reads the system clock directly, so tests,
//! benches and trace replays run on virtual time.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A source of "now", as a duration since the clock's own epoch.
pub trait Clock: Send + Sync + 'static {
    /// The current time.
    fn now(&self) -> Duration;

    /// How long a blocked thread may sleep in real time before it should look at
    /// [`Clock::now`] again when waiting for `remaining` of this clock's time. A real
    /// clock sleeps the whole remainder; a virtual clock, whose time moves only when
    /// someone advances it, polls briefly.
    fn real_wait(&self, remaining: Duration) -> Duration {
        remaining
    }

    /// The wall-clock time at this clock's zero, in nanoseconds since the Unix epoch, if
    /// the clock has one: it places timestamps other components wrote (RFC 3339 in API
    /// objects) on this clock. Default: none, as virtual time has no wall-clock meaning.
    fn unix_epoch_nanos(&self) -> Option<i128> {
        None
    }
}

/// Wall-clock time, measured from when the clock was made.
#[derive(Debug, Clone, Copy)]
pub struct RealClock {
    start: Instant,
    /// The system time at `start`, in nanoseconds since the Unix epoch.
    start_unix: i128,
}

impl Default for RealClock {
    fn default() -> Self {
        let start_unix = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i128::try_from(d.as_nanos()).unwrap_or(0));
        RealClock { start: Instant::now(), start_unix }
    }
}

impl Clock for RealClock {
    fn now(&self) -> Duration {
        self.start.elapsed()
    }

    fn unix_epoch_nanos(&self) -> Option<i128> {
        Some(self.start_unix)
    }
}

/// Time that moves only when told to; clones share the same time.
///
/// ```
/// use std::time::Duration;
/// use schedkit::framework::{Clock, VirtualClock};
/// let clock = VirtualClock::new();
/// let view = clock.clone();
/// clock.advance(Duration::from_secs(5));
/// assert_eq!(view.now(), Duration::from_secs(5));
/// ```
#[derive(Debug, Clone, Default)]
pub struct VirtualClock {
    nanos: Arc<AtomicU64>,
}

impl VirtualClock {
    /// A clock at time zero.
    pub fn new() -> VirtualClock {
        VirtualClock::default()
    }

    /// Moves time forward.
    pub fn advance(&self, by: Duration) {
        self.nanos.fetch_add(u64::try_from(by.as_nanos()).unwrap_or(u64::MAX), Ordering::SeqCst);
    }

    /// Sets the time (never backwards: an earlier time is ignored).
    pub fn set(&self, to: Duration) {
        self.nanos.fetch_max(u64::try_from(to.as_nanos()).unwrap_or(u64::MAX), Ordering::SeqCst);
    }
}

impl Clock for VirtualClock {
    fn now(&self) -> Duration {
        Duration::from_nanos(self.nanos.load(Ordering::SeqCst))
    }

    fn real_wait(&self, remaining: Duration) -> Duration {
        remaining.min(Duration::from_millis(1))
    }
}
