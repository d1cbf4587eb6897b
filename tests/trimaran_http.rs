//! Trimaran's load-watcher client (feature `load-watcher`) against a real HTTP
//! server on 127.0.0.1 that the test starts and stops: good, failing (5xx, 404),
//! malformed, slow and unreachable watchers. Upstream's collector_test.go and the
//! plugins' HTTP-backed score tests, plus the degraded cases the issue asks for.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::Mutex;
use schedkit::framework::{CycleState, Handle, PluginArgs, PluginRef, ProfileConfig, ScorePlugin};
use schedkit::plugins::default_registry;
use schedkit::plugins::trimaran::*;
use schedkit::snapshot::{NodeInfo, PodInfo};
use schedkit::testing::{NodeBuilder, PodBuilder};
use serde_json::json;

/// How the test server answers the next requests.
#[derive(Clone)]
enum Reply {
    Json(String),
    Status(u16),
    /// Holds the request until the test sends on the channel, then answers with JSON.
    Gate(Arc<Mutex<mpsc::Receiver<()>>>, String),
    /// Answers after this long.
    Slow(Duration, String),
}

struct Server {
    addr: String,
    reply: Arc<Mutex<Reply>>,
    hits: Arc<AtomicUsize>,
    paths: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    fn start(reply: Reply) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = format!("http://{}", listener.local_addr().unwrap());
        let reply = Arc::new(Mutex::new(reply));
        let hits = Arc::new(AtomicUsize::new(0));
        let paths = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (r, h, p, s) = (reply.clone(), hits.clone(), paths.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            for conn in listener.incoming() {
                if s.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let (r, h, p) = (r.clone(), h.clone(), p.clone());
                // One thread per connection so a held request doesn't block others.
                std::thread::spawn(move || serve(conn, &r, &h, &p));
            }
        });
        Server { addr, reply, hits, paths, stop, thread: Some(thread) }
    }

    fn set(&self, reply: Reply) {
        *self.reply.lock() = reply;
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop.
        let _ = TcpStream::connect(self.addr.trim_start_matches("http://"));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve(mut conn: TcpStream, reply: &Mutex<Reply>, hits: &AtomicUsize, paths: &Mutex<Vec<String>>) {
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    paths.lock().push(line.split_whitespace().nth(1).unwrap_or("").to_owned());
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
            break;
        }
    }
    hits.fetch_add(1, Ordering::SeqCst);
    let current = reply.lock().clone();
    let (code, body) = match current {
        Reply::Json(b) => (200, b),
        Reply::Status(c) => (c, "oops".to_owned()),
        Reply::Gate(rx, b) => {
            let _ = rx.lock().recv_timeout(Duration::from_secs(10));
            (200, b)
        }
        Reply::Slow(d, b) => {
            std::thread::sleep(d);
            (200, b)
        }
    };
    let _ = write!(
        conn,
        "HTTP/1.1 {code} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}

/// collector_test.go's `watcherResponse`.
fn watcher_response() -> WatcherMetrics {
    WatcherMetrics::with_nodes([(
        "node-1",
        vec![
            Metric::new(CPU, AVERAGE, 80.0),
            Metric::new(CPU, STD, 16.0),
            Metric::new(MEMORY, AVERAGE, 25.0),
            Metric::new(MEMORY, STD, 6.25),
        ],
    )])
}

fn json_of(m: &WatcherMetrics) -> String {
    serde_json::to_string(m).unwrap()
}

fn quick() -> LoadWatcherOptions {
    LoadWatcherOptions {
        refresh_interval: Duration::from_secs(1000),
        timeout: Duration::from_secs(5),
        ..Default::default()
    }
}

fn node1() -> NodeInfo {
    NodeInfo::new(Arc::new(NodeBuilder::new("node-1").cpu("1000m").memory("1Gi").build()))
}

fn empty_pod() -> PodInfo {
    PodInfo::new(PodBuilder::new("p").with(|p| p.spec.containers.clear()).build()).unwrap()
}

// collector_test.go TestGetAllMetrics, TestUpdateMetrics, TestGetNodeMetrics.
#[test]
fn fetches_the_payload_from_the_watcher_path() {
    let server = Server::start(Reply::Json(json_of(&watcher_response())));
    let client = LoadWatcherClient::start(&server.addr, quick());
    assert!(client.wait_for_fetches(1, Duration::from_secs(10)));
    let snap = client.latest().expect("a payload");
    assert_eq!(snap.metrics().data.node_metrics_map, watcher_response().data.node_metrics_map);
    assert_eq!(snap.metrics(), &watcher_response());
    client.refresh().unwrap();
    assert_eq!(client.status().successes, 2);
    assert_eq!(server.paths.lock()[0], "/watcher");
    assert_eq!(client.url(), format!("{}/watcher", server.addr));
}

// collector_test.go TestGetNodeMetricsNilForNode: a payload without the node.
#[test]
fn node_missing_from_a_populated_payload_scores_zero() {
    let empty_map = WatcherMetrics {
        data: Data { node_metrics_map: Some(std::collections::BTreeMap::new()) },
        ..Default::default()
    };
    let server = Server::start(Reply::Json(json_of(&empty_map)));
    let client = Arc::new(LoadWatcherClient::start(&server.addr, quick()));
    assert!(client.wait_for_fetches(1, Duration::from_secs(10)));
    let snap = client.latest().unwrap();
    assert!(snap.is_populated() && snap.metrics().node("node-1").is_none());
    let pl = LoadVariationRiskBalancing::new(LoadVariationRiskBalancingArgs::default(), client);
    assert_eq!(pl.score(&CycleState::new(), &empty_pod(), &node1()).unwrap(), 0);
}

// targetloadpacking_test.go TestTargetLoadPackingScoring ("hot node", "404 resp from
// watcher") with the plugin built from `watcherAddress` as upstream's New does.
#[test]
fn plugins_built_from_watcher_address() {
    let hot = WatcherMetrics::with_nodes([("node-1", vec![Metric::new(CPU, LATEST, 50.0)])]);
    let server = Server::start(Reply::Json(json_of(&hot)));
    let handle = Handle::default();
    let tlp = TargetLoadPacking::from_config(Some(&json!({"watcherAddress": server.addr})), &handle).unwrap();
    // New waits for the first fetch, as upstream populates before returning.
    assert_eq!(tlp.score(&CycleState::new(), &empty_pod(), &node1()).unwrap(), 33);

    let not_found = Server::start(Reply::Status(404));
    let tlp = TargetLoadPacking::from_config(Some(&json!({"watcherAddress": not_found.addr})), &handle).unwrap();
    assert_eq!(tlp.score(&CycleState::new(), &empty_pod(), &node1()).unwrap(), 0);

    // Through a KubeSchedulerConfiguration-style profile.
    let mut cfg = ProfileConfig::default();
    cfg.plugins.multi_point.enabled.push(PluginRef { name: "LowRiskOverCommitment".into(), weight: Some(1) });
    cfg.plugin_config.push(PluginArgs {
        name: "LowRiskOverCommitment".into(),
        args: json!({"watcherAddress": server.addr, "smoothingWindowSize": 5, "riskLimitWeights": {"cpu": 0.5, "memory": 0.5}}),
    });
    let profile = default_registry().build_profile(&cfg, &handle).unwrap();
    assert_eq!(profile.score_plugins(), [("LowRiskOverCommitment", 1)]);
}

#[test]
fn failing_watcher_keeps_the_last_good_payload() {
    let server = Server::start(Reply::Status(500));
    let client = LoadWatcherClient::start(&server.addr, quick());
    assert!(client.wait_for_fetches(1, Duration::from_secs(10)));
    assert!(client.latest().is_none(), "never populated");
    let err = client.status().last_error.unwrap();
    assert_eq!(err, WatcherError::Status { url: format!("{}/watcher", server.addr), code: 500 });
    assert!(err.to_string().ends_with("received status code 500 from watcher"), "{err}");

    server.set(Reply::Json(json_of(&watcher_response())));
    client.refresh().unwrap();
    assert!(client.latest().is_some());

    server.set(Reply::Status(503));
    assert!(matches!(client.refresh(), Err(WatcherError::Status { code: 503, .. })));
    assert_eq!(client.latest().unwrap().metrics(), &watcher_response(), "the last good payload stays");
    let st = client.status();
    assert_eq!((st.successes, st.failures), (1, 2));
}

#[test]
fn malformed_payload_names_the_field_and_changes_nothing() {
    let server = Server::start(Reply::Json(json_of(&watcher_response())));
    let client = LoadWatcherClient::start(&server.addr, quick());
    assert!(client.wait_for_fetches(1, Duration::from_secs(10)));
    for (body, field) in [
        (
            r#"{"data":{"NodeMetricsMap":{"node-1":{"metrics":[{"type":"CPU","value":"high"}]}}}}"#,
            "data.NodeMetricsMap.node-1.metrics[0].value",
        ),
        (r#"{"window":{"end":"soon"}}"#, "window.end"),
        ("<html>busy</html>", "."),
    ] {
        server.set(Reply::Json(body.to_owned()));
        let err = client.refresh().unwrap_err();
        match &err {
            WatcherError::Malformed { source: MetricsError::Malformed { path, .. }, .. } => {
                assert_eq!(path, field, "{err}");
            }
            other => panic!("{other}"),
        }
        assert_eq!(client.latest().unwrap().metrics(), &watcher_response());
    }
    // A 200 with `null` data is a populated, empty map (load-watcher's decoder).
    server.set(Reply::Json(r#"{"data":{"NodeMetricsMap":null}}"#.into()));
    client.refresh().unwrap();
    assert!(client.latest().unwrap().is_populated());
}

#[test]
fn a_fetch_in_flight_never_blocks_scoring() {
    let (release, gate) = mpsc::channel();
    let body = json_of(&WatcherMetrics::with_nodes([("node-1", vec![Metric::new(CPU, AVERAGE, 50.0)])]));
    let server = Server::start(Reply::Gate(Arc::new(Mutex::new(gate)), body));
    let client = Arc::new(LoadWatcherClient::start(&server.addr, quick()));
    // Wait until the server holds the background fetch.
    while server.hits.load(Ordering::SeqCst) == 0 {
        std::thread::sleep(Duration::from_millis(5));
    }
    let pl = LoadVariationRiskBalancing::new(LoadVariationRiskBalancingArgs::default(), client.clone());
    // Scoring answers while the fetch is held: no metrics yet, score 0.
    assert_eq!(pl.score(&CycleState::new(), &empty_pod(), &node1()).unwrap(), 0);
    release.send(()).unwrap();
    assert!(client.wait_for_fetches(1, Duration::from_secs(10)));
    assert_eq!(pl.score(&CycleState::new(), &empty_pod(), &node1()).unwrap(), 75);
}

#[test]
fn slow_watcher_times_out() {
    let server = Server::start(Reply::Slow(Duration::from_secs(3), json_of(&watcher_response())));
    let options = LoadWatcherOptions { timeout: Duration::from_millis(200), ..quick() };
    let client = LoadWatcherClient::start(&server.addr, options);
    assert!(client.wait_for_fetches(1, Duration::from_secs(10)));
    assert!(matches!(client.status().last_error, Some(WatcherError::Transport { .. })), "{:?}", client.status());
    assert!(client.latest().is_none());
}

#[test]
fn unreachable_watcher_degrades_to_no_metrics() {
    // A port nobody listens on: bind, note it, close.
    let addr = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    let handle = Handle::default();
    let tlp = TargetLoadPacking::from_config(Some(&json!({"watcherAddress": addr})), &handle).unwrap();
    assert_eq!(tlp.score(&CycleState::new(), &empty_pod(), &node1()).unwrap(), 0);
    let client = LoadWatcherClient::start(&addr, quick());
    assert!(client.wait_for_fetches(1, Duration::from_secs(10)));
    let err = client.status().last_error.unwrap();
    assert!(matches!(err, WatcherError::Transport { .. }), "{err}");
    assert!(err.to_string().starts_with(&format!("load-watcher {addr}/watcher: ")), "{err}");
    // Not even a URL.
    let bad = LoadWatcherClient::start("not a url", quick());
    assert!(bad.wait_for_fetches(1, Duration::from_secs(10)));
    assert!(bad.latest().is_none());
}

#[test]
fn refreshes_in_the_background() {
    let server = Server::start(Reply::Json(json_of(&watcher_response())));
    let options = LoadWatcherOptions { refresh_interval: Duration::from_millis(20), ..quick() };
    let client = LoadWatcherClient::start(&server.addr, options);
    assert!(client.wait_for_fetches(3, Duration::from_secs(20)));
    assert!(server.hits.load(Ordering::SeqCst) >= 3);
    drop(client);
}
