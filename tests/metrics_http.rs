//! kube-scheduler's metrics served over real HTTP on 127.0.0.1 and parsed back with
//! a Prometheus text-format parser: names, labels, bucket boundaries and counts
//! (`pkg/scheduler/metrics/metrics.go`). Needs `--features metrics`.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;

use prometheus_parse::{Sample, Scrape, Value};
use schedkit::framework::scheduler_metrics::{ATTEMPT_BUCKETS, EXTENSION_POINT_BUCKETS, PLUGIN_BUCKETS};
use schedkit::framework::{
    BindPlugin, CycleState, ExtensionPoints, FilterPlugin, LatencyRecorder, NodeToStatus, Plugin, PostBindPlugin,
    PostFilterPlugin, PostFilterResult, PreBindPlugin, Profile, ReservePlugin, ScorePlugin, Status,
};
use schedkit::metrics_server::MetricsServer;
use schedkit::scheduler::Scheduler;
use schedkit::snapshot::{NodeInfo, PodInfo, Snapshot};
use schedkit::testing::{NodeBuilder, PodBuilder};

/// Filter on free CPU, Score by free CPU.
struct Fits;
impl Plugin for Fits {
    fn name(&self) -> &str {
        "Fits"
    }
    fn register(self: Arc<Self>, points: &mut ExtensionPoints) {
        points.filter(self.clone()).score(self);
    }
}
impl FilterPlugin for Fits {
    fn filter(&self, _: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        if node.allocatable().milli_cpu - node.requested().milli_cpu < pod.requests.milli_cpu {
            return Status::unschedulable("Insufficient cpu");
        }
        Status::SUCCESS
    }
}
impl ScorePlugin for Fits {
    fn score(&self, _: &CycleState, _: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        Ok((node.allocatable().milli_cpu - node.requested().milli_cpu) / 1000)
    }
}

/// Every binding-cycle extension point, doing nothing; and a PostFilter that can't help.
struct Binder;
impl Plugin for Binder {
    fn name(&self) -> &str {
        "Binder"
    }
    fn register(self: Arc<Self>, points: &mut ExtensionPoints) {
        points
            .post_filter(self.clone())
            .reserve(self.clone())
            .pre_bind(self.clone())
            .bind(self.clone())
            .post_bind(self);
    }
}
impl PostFilterPlugin for Binder {
    fn post_filter(
        &self,
        _: &CycleState,
        _: &PodInfo,
        _: &Snapshot,
        _: &NodeToStatus,
    ) -> (Option<PostFilterResult>, Status) {
        (None, Status::unschedulable("Binder could not help"))
    }
}
impl ReservePlugin for Binder {
    fn reserve(&self, _: &mut CycleState, _: &PodInfo, _: &str) -> Status {
        Status::SUCCESS
    }
    fn unreserve(&self, _: &mut CycleState, _: &PodInfo, _: &str) {}
}
impl PreBindPlugin for Binder {
    fn pre_bind(&self, _: &mut CycleState, _: &PodInfo, _: &str) -> Status {
        Status::SUCCESS
    }
}
impl BindPlugin for Binder {
    fn bind(&self, _: &mut CycleState, _: &PodInfo, _: &str) -> Status {
        Status::SUCCESS
    }
}
impl PostBindPlugin for Binder {
    fn post_bind(&self, _: &CycleState, _: &PodInfo, _: &str) {}
}

/// 3 nodes of 4 CPUs; five 1-CPU pods bind, one 16-CPU pod fits nowhere.
fn run_workload(recorder: &Arc<LatencyRecorder>) -> Scheduler {
    let profile = Profile::builder("default-scheduler").plugin(Fits).plugin(Binder).build().unwrap();
    let mut s = Scheduler::builder().profile(profile).parallelism(1).latency_recorder(recorder.clone()).build();
    for i in 0..3 {
        s.add_node(NodeBuilder::new(&format!("n{i}")).cpu("4").build()).unwrap();
    }
    let events = s.events();
    for i in 0..5 {
        events.add_pod(PodBuilder::new(&format!("p{i}")).cpu("1").build()).unwrap();
    }
    events.add_pod(PodBuilder::new("huge").cpu("16").build()).unwrap();
    let summary = s.run_until_idle();
    assert_eq!((summary.bound, summary.failed), (5, 1));
    s
}

fn http_get(addr: std::net::SocketAddr, path: &str) -> (String, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").expect("an HTTP response");
    (head.to_owned(), body.to_owned())
}

/// Whether an HTTP server answers at `addr` (a listener socket tiny_http is still
/// closing may accept the connection, but no one answers it).
fn answers(addr: std::net::SocketAddr) -> bool {
    let Ok(mut stream) = TcpStream::connect(addr) else { return false };
    stream.set_read_timeout(Some(std::time::Duration::from_secs(2))).unwrap();
    if write!(stream, "GET /metrics HTTP/1.0\r\n\r\n").is_err() {
        return false;
    }
    let mut buf = [0u8; 16];
    matches!(stream.read(&mut buf), Ok(n) if n > 0)
}

fn labels(s: &Sample) -> HashMap<String, String> {
    s.labels.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

fn find<'a>(scrape: &'a Scrape, name: &str, want: &[(&str, &str)]) -> Option<&'a Sample> {
    scrape.samples.iter().find(|s| {
        let l = labels(s);
        s.metric == name && l.len() == want.len() && want.iter().all(|(k, v)| l.get(*k).map(String::as_str) == Some(*v))
    })
}

/// A sample value that counts something, as an integer.
fn int(x: f64) -> u64 {
    let n = x.round() as u64;
    assert!((x - n as f64).abs() < 1e-9, "not a count: {x}");
    n
}

fn scalar(v: &Value) -> u64 {
    match v {
        Value::Counter(x) | Value::Gauge(x) | Value::Untyped(x) => int(*x),
        other => panic!("not a scalar: {other:?}"),
    }
}

/// A histogram's `(le, cumulative count)` pairs, `+Inf` last.
fn buckets(s: &Sample) -> Vec<(f64, u64)> {
    match &s.value {
        Value::Histogram(h) => h.iter().map(|b| (b.less_than, int(b.count))).collect(),
        other => panic!("{} is not a histogram: {other:?}", s.metric),
    }
}

fn assert_bounds(s: &Sample, want: &[f64]) {
    let got: Vec<f64> = buckets(s).iter().map(|b| b.0).collect();
    assert_eq!(got.len(), want.len() + 1, "{}", s.metric);
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() <= w * 1e-12, "{}: le {g} vs {w}", s.metric);
    }
    assert!(got.last().unwrap().is_infinite());
}

fn hist_count(scrape: &Scrape, name: &str, want: &[(&str, &str)]) -> u64 {
    let h = find(scrape, name, want).unwrap_or_else(|| panic!("no {name} {want:?}"));
    let b = buckets(h);
    assert!(b.windows(2).all(|w| w[0].1 <= w[1].1), "cumulative: {name}");
    let count = scalar(&find(scrape, &format!("{name}_count"), want).expect("a _count").value);
    assert_eq!(b.last().unwrap().1, count, "+Inf bucket = _count for {name} {want:?}");
    count
}

#[test]
fn metrics_over_http_parse_back_with_upstream_names_labels_and_buckets() {
    let recorder = Arc::new(LatencyRecorder::every_cycle());
    let sched = run_workload(&recorder);

    let server = MetricsServer::start(0, recorder.clone()).unwrap();
    let addr = server.local_addr();
    assert!(addr.ip().is_loopback(), "{addr}");
    let (head, body) = http_get(addr, "/metrics");
    assert!(head.starts_with("HTTP/1.0 200") || head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(head.to_ascii_lowercase().contains("content-type: application/openmetrics-text"), "{head}");
    let (missing, _) = http_get(addr, "/");
    assert!(missing.contains(" 404"), "{missing}");
    server.stop();
    assert!(!answers(addr), "the server stopped");
    drop(sched);

    assert!(body.trim_end().ends_with("# EOF"), "OpenMetrics ends with # EOF");
    let scrape = Scrape::parse(body.lines().map(|l| Ok(l.to_owned()))).unwrap();

    // Help texts are upstream's.
    assert_eq!(
        scrape.docs["scheduler_plugin_execution_duration_seconds"],
        "Duration for running a plugin at a specific extension point."
    );
    assert_eq!(
        scrape.docs["scheduler_framework_extension_point_duration_seconds"],
        "Latency for running all plugins of a specific extension point."
    );
    assert!(scrape.docs["scheduler_pending_pods"].starts_with("Number of pending pods, by the queue type."));

    // scheduler_schedule_attempts_total{result, profile}
    let p = ("profile", "default-scheduler");
    let attempts = |r: &str| {
        scalar(&find(&scrape, "scheduler_schedule_attempts_total", &[("result", r), p]).expect("attempts").value)
    };
    assert_eq!(attempts("scheduled"), 5);
    assert_eq!(attempts("unschedulable"), 1);
    assert!(find(&scrape, "scheduler_schedule_attempts_total", &[("result", "error"), p]).is_none());

    // scheduler_scheduling_attempt_duration_seconds{result, profile}: 1ms x2, 15 buckets.
    let name = "scheduler_scheduling_attempt_duration_seconds";
    assert_bounds(find(&scrape, name, &[("result", "scheduled"), p]).unwrap(), &ATTEMPT_BUCKETS);
    assert_eq!(hist_count(&scrape, name, &[("result", "scheduled"), p]), 5);
    assert_eq!(hist_count(&scrape, name, &[("result", "unschedulable"), p]), 1);

    // scheduler_framework_extension_point_duration_seconds{extension_point, status, profile}
    let name = "scheduler_framework_extension_point_duration_seconds";
    let point = |ep: &str, st: &str| hist_count(&scrape, name, &[("extension_point", ep), ("status", st), p]);
    assert_bounds(
        find(&scrape, name, &[("extension_point", "PreFilter"), ("status", "Success"), p]).unwrap(),
        &EXTENSION_POINT_BUCKETS,
    );
    assert_eq!(point("PreFilter", "Success"), 6);
    assert_eq!(point("PostFilter", "Unschedulable"), 1, "the huge pod");
    for ep in ["Score", "Reserve", "Permit", "PreBind", "Bind", "PostBind"] {
        assert_eq!(point(ep, "Success"), 5, "{ep}");
    }

    // scheduler_plugin_execution_duration_seconds{plugin, extension_point, status}
    let name = "scheduler_plugin_execution_duration_seconds";
    let plugin = |pl: &str, ep: &str, st: &str| {
        hist_count(&scrape, name, &[("plugin", pl), ("extension_point", ep), ("status", st)])
    };
    assert_bounds(
        find(&scrape, name, &[("plugin", "Fits"), ("extension_point", "Filter"), ("status", "Success")]).unwrap(),
        &PLUGIN_BUCKETS,
    );
    assert_eq!(plugin("Fits", "Filter", "Success"), 15, "5 pods x 3 nodes");
    assert_eq!(plugin("Fits", "Filter", "Unschedulable"), 3, "the huge pod on 3 nodes");
    assert_eq!(plugin("Fits", "Score", "Success"), 5, "one batch per cycle");
    assert_eq!(plugin("Fits", "ScoreExtensionNormalize", "Success"), 5);
    for ep in ["Reserve", "PreBind", "Bind", "PostBind"] {
        assert_eq!(plugin("Binder", ep, "Success"), 5, "{ep}");
    }
    assert_eq!(plugin("Binder", "PostFilter", "Unschedulable"), 1);

    // scheduler_pending_pods{queue}: the huge pod waits in the unschedulable pool.
    let pending = |q: &str| scalar(&find(&scrape, "scheduler_pending_pods", &[("queue", q)]).expect("pending").value);
    assert_eq!(pending("unschedulable"), 1);
    assert_eq!(pending("active") + pending("backoff") + pending("gated"), 0);
}

/// Upstream samples plugin metrics (10% of cycles); extension-point and attempt
/// metrics are recorded every cycle regardless.
#[test]
fn plugin_metrics_are_sampled_extension_points_are_not() {
    let recorder = Arc::new(LatencyRecorder::sampling(10));
    let _s = run_workload(&recorder);
    let scrape = Scrape::parse(recorder.encode_openmetrics().lines().map(|l| Ok(l.to_owned()))).unwrap();
    let p = ("profile", "default-scheduler");
    let prefilter = find(
        &scrape,
        "scheduler_framework_extension_point_duration_seconds_count",
        &[("extension_point", "PreFilter"), ("status", "Success"), p],
    )
    .unwrap();
    assert_eq!(scalar(&prefilter.value), 6);
    let filter_calls: u64 = scrape
        .samples
        .iter()
        .filter(|s| {
            s.metric == "scheduler_plugin_execution_duration_seconds_count"
                && labels(s).get("extension_point").map(String::as_str) == Some("Filter")
        })
        .map(|s| scalar(&s.value))
        .sum();
    assert_eq!(filter_calls, 3, "only the first of 6 cycles is sampled: 3 nodes");
}
