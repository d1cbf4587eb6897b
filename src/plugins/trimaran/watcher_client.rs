//! A client of a load-watcher service (feature `load-watcher`): fetches
//! `GET <address>/watcher` on a background thread every 30 s, keeping the last good
//! payload (upstream `trimaran.Collector` over load-watcher's `serviceClient`,
//! paypal/load-watcher v0.2.4 `pkg/watcher/api/client.go`).

use std::sync::Arc;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

use parking_lot::{Condvar, Mutex, RwLock};

use super::metrics::{BASE_URL, LoadMetricsSource, LoadSnapshot, MetricsError, WatcherMetrics};

/// How often the payload is refreshed (upstream `metricsUpdateIntervalSeconds`).
pub const DEFAULT_REFRESH_INTERVAL: Duration = Duration::from_secs(30);
/// The whole-request timeout (load-watcher `httpClientTimeoutSeconds`, 55 s).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(55);
/// The largest payload read (a 5,000-node payload is about 2 MiB).
pub const DEFAULT_MAX_BODY_BYTES: u64 = 64 << 20;

/// How the client fetches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadWatcherOptions {
    /// Time between fetches (default 30 s).
    pub refresh_interval: Duration,
    /// Time a fetch may take, connecting and reading included (default 55 s).
    pub timeout: Duration,
    /// The largest body accepted (default 64 MiB).
    pub max_body_bytes: u64,
}

impl Default for LoadWatcherOptions {
    fn default() -> Self {
        LoadWatcherOptions {
            refresh_interval: DEFAULT_REFRESH_INTERVAL,
            timeout: DEFAULT_TIMEOUT,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
        }
    }
}

/// Why a fetch failed; the client then keeps the last good payload.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WatcherError {
    /// Connecting, sending or reading failed (refused, timed out, reset, bad URL).
    #[error("load-watcher {url}: {message}")]
    Transport {
        /// The URL fetched.
        url: String,
        /// What failed.
        message: String,
    },
    /// A status other than 200 (upstream: "received status code N from watcher").
    #[error("load-watcher {url}: received status code {code} from watcher")]
    Status {
        /// The URL fetched.
        url: String,
        /// The HTTP status.
        code: u16,
    },
    /// The body is not a `WatcherMetrics` payload.
    #[error("load-watcher {url}: {source}")]
    Malformed {
        /// The URL fetched.
        url: String,
        /// Which field is wrong.
        #[source]
        source: MetricsError,
    },
}

/// What the client has seen so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WatcherStatus {
    /// Fetches that returned a payload.
    pub successes: u64,
    /// Fetches that failed.
    pub failures: u64,
    /// The last failure, cleared by a success.
    pub last_error: Option<WatcherError>,
}

struct Shared {
    url: String,
    agent: ureq::Agent,
    max_body_bytes: u64,
    latest: RwLock<Option<Arc<LoadSnapshot>>>,
    status: Mutex<WatcherStatus>,
    attempts: Mutex<u64>,
    attempted: Condvar,
}

impl Shared {
    fn get(&self) -> Result<WatcherMetrics, WatcherError> {
        let transport = |e: ureq::Error| WatcherError::Transport { url: self.url.clone(), message: e.to_string() };
        let mut resp =
            self.agent.get(&self.url).header("Content-Type", "application/json").call().map_err(transport)?;
        let code = resp.status().as_u16();
        if code != 200 {
            return Err(WatcherError::Status { url: self.url.clone(), code });
        }
        let body = resp.body_mut().with_config().limit(self.max_body_bytes).read_to_vec().map_err(transport)?;
        let mut m = WatcherMetrics::from_json(&body)
            .map_err(|source| WatcherError::Malformed { url: self.url.clone(), source })?;
        // load-watcher's service client decodes into a payload whose map is already
        // made, so a 200 always yields a populated (maybe empty) map.
        m.data.node_metrics_map.get_or_insert_with(Default::default);
        Ok(m)
    }

    fn fetch(&self) -> Result<(), WatcherError> {
        let result = self.get();
        {
            let mut st = self.status.lock();
            match &result {
                Ok(m) => {
                    *self.latest.write() = Some(Arc::new(LoadSnapshot::new(m.clone())));
                    st.successes += 1;
                    st.last_error = None;
                }
                Err(e) => {
                    log::warn!("{e}; keeping the last good metrics");
                    st.failures += 1;
                    st.last_error = Some(e.clone());
                }
            }
        }
        *self.attempts.lock() += 1;
        self.attempted.notify_all();
        result.map(|_| ())
    }
}

/// A [`LoadMetricsSource`] fed by a load-watcher service.
///
/// A background thread fetches at once and then every
/// [`LoadWatcherOptions::refresh_interval`]; [`LoadMetricsSource::latest`] only reads
/// the last good payload, so a slow or failing watcher never blocks a scheduling
/// cycle. Until the first success every node scores 0; failures are logged
/// (`log::warn!`) and kept in [`LoadWatcherClient::status`]. Dropping the client stops
/// the thread after its current fetch. Plain `http://` only (no TLS backend is built
/// in).
pub struct LoadWatcherClient {
    shared: Arc<Shared>,
    _stop: mpsc::Sender<()>,
}

impl std::fmt::Debug for LoadWatcherClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadWatcherClient").field("url", &self.shared.url).finish_non_exhaustive()
    }
}

impl LoadWatcherClient {
    /// Starts fetching `<address>/watcher`.
    pub fn start(address: &str, options: LoadWatcherOptions) -> LoadWatcherClient {
        let config =
            ureq::Agent::config_builder().timeout_global(Some(options.timeout)).http_status_as_error(false).build();
        let shared = Arc::new(Shared {
            url: format!("{address}{BASE_URL}"),
            agent: config.into(),
            max_body_bytes: options.max_body_bytes,
            latest: RwLock::new(None),
            status: Mutex::new(WatcherStatus::default()),
            attempts: Mutex::new(0),
            attempted: Condvar::new(),
        });
        let (stop, stopped) = mpsc::channel::<()>();
        let worker = shared.clone();
        let interval = options.refresh_interval;
        std::thread::Builder::new()
            .name("schedkit-load-watcher".into())
            .spawn(move || {
                loop {
                    let _ = worker.fetch();
                    match stopped.recv_timeout(interval) {
                        Err(RecvTimeoutError::Timeout) => {}
                        Ok(()) | Err(RecvTimeoutError::Disconnected) => break,
                    }
                }
            })
            .map_err(|e| log::warn!("load-watcher: cannot start the refresh thread: {e}"))
            .ok();
        LoadWatcherClient { shared, _stop: stop }
    }

    /// The URL fetched.
    pub fn url(&self) -> &str {
        &self.shared.url
    }

    /// Fetches now, on this thread (the background refresh goes on as well).
    pub fn refresh(&self) -> Result<(), WatcherError> {
        self.shared.fetch()
    }

    /// Waits until at least `n` fetches (background or [`Self::refresh`]) have finished,
    /// or `timeout` passed; returns whether they have.
    pub fn wait_for_fetches(&self, n: u64, timeout: Duration) -> bool {
        let deadline = std::time::Instant::now() + timeout;
        let mut done = self.shared.attempts.lock();
        while *done < n {
            if self.shared.attempted.wait_until(&mut done, deadline).timed_out() {
                return *done >= n;
            }
        }
        true
    }

    /// Successes, failures and the last error.
    pub fn status(&self) -> WatcherStatus {
        self.shared.status.lock().clone()
    }
}

impl LoadMetricsSource for LoadWatcherClient {
    fn latest(&self) -> Option<Arc<LoadSnapshot>> {
        self.shared.latest.read().clone()
    }
}
