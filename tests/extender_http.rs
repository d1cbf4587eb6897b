//! The extender protocol over real HTTP on 127.0.0.1 (feature `extender`), every
//! server started and stopped by its test:
//! - schedkit's client -> schedkit's server -> a profile places pods exactly as the
//!   profile does in process (Filter-only, then with a score that the protocol's
//!   0..=10 range carries without loss);
//! - a test server answering as HAMi's extender does (Go-cased keys, `null` maps),
//!   configured as HAMi's Helm chart configures kube-scheduler;
//! - the client against timeouts, 5xx, garbage and a closed port (ignorable or not);
//! - the client's own HTTP/1.1 path against the framings servers use: chunked
//!   answers, `Connection: close`, bodies ended by the close, `100 Continue`, and a
//!   server that hangs up on a kept connection (how many connections each takes);
//! - the server against bad, oversized and unknown requests, concurrent clients, a
//!   client that hangs up, and a failing bind (no reservation left behind).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::Mutex;
use schedkit::config::{Extender as ExtenderConfig, KubeSchedulerConfiguration};
use schedkit::extender::{ExtenderServer, ExtenderService, HttpExtender, ServerOptions};
use schedkit::framework::{
    BindPlugin, CycleState, Extender, ExtensionPoints, FilterFn, Handle, Plugin, Profile, ScoreFn, Status,
};
use schedkit::plugins::default_registry;
use schedkit::scheduler::{Scheduler, TieBreak};
use schedkit::snapshot::{Cache, PodInfo};
use schedkit::testing::{NodeBuilder, PodBuilder};
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------
// A scripted HTTP server (stands in for HAMi and for broken extenders).

#[derive(Clone)]
enum Answer {
    /// 200 with this JSON.
    Json(String),
    /// This status.
    Status(u16),
    /// Waits, then 200 with this JSON.
    Slow(Duration, String),
}

struct Scripted {
    addr: String,
    answers: Arc<Mutex<Vec<(String, Answer)>>>,
    /// (path, body) of every request.
    seen: Arc<Mutex<Vec<(String, Value)>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Scripted {
    /// Answers a request whose path ends with a verb with that verb's answer.
    fn start(answers: Vec<(&str, Answer)>) -> Scripted {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = format!("http://{}", listener.local_addr().unwrap());
        let answers = Arc::new(Mutex::new(answers.into_iter().map(|(v, a)| (v.to_owned(), a)).collect::<Vec<_>>()));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (a, s, st) = (answers.clone(), seen.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            for conn in listener.incoming() {
                if st.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let (a, s) = (a.clone(), s.clone());
                std::thread::spawn(move || scripted_serve(conn, &a, &s));
            }
        });
        Scripted { addr, answers, seen, stop, thread: Some(thread) }
    }

    fn set(&self, verb: &str, answer: Answer) {
        let mut a = self.answers.lock();
        a.retain(|(v, _)| v != verb);
        a.push((verb.to_owned(), answer));
    }

    fn hits(&self, verb: &str) -> usize {
        self.seen.lock().iter().filter(|(p, _)| p.ends_with(verb)).count()
    }
}

impl Drop for Scripted {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr.trim_start_matches("http://"));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Reads one request (line, headers, Content-Length body).
fn read_request(conn: &TcpStream) -> Option<(String, String, Vec<u8>)> {
    let mut reader = BufReader::new(conn.try_clone().ok()?);
    let mut line = String::new();
    if reader.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_owned();
    let path = parts.next()?.to_owned();
    let mut len = 0usize;
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).ok()? == 0 || h == "\r\n" {
            break;
        }
        if let Some((k, v)) = h.split_once(':')
            && k.eq_ignore_ascii_case("content-length")
        {
            len = v.trim().parse().ok()?;
        }
    }
    let mut body = vec![0; len];
    reader.read_exact(&mut body).ok()?;
    Some((method, path, body))
}

fn scripted_serve(mut conn: TcpStream, answers: &Mutex<Vec<(String, Answer)>>, seen: &Mutex<Vec<(String, Value)>>) {
    let Some((_, path, body)) = read_request(&conn) else { return };
    seen.lock().push((path.clone(), serde_json::from_slice(&body).unwrap_or(Value::Null)));
    let answer = answers.lock().iter().find(|(v, _)| path.ends_with(v.as_str())).map(|(_, a)| a.clone());
    let (code, body) = match answer {
        Some(Answer::Json(b)) => (200, b),
        Some(Answer::Status(c)) => (c, "oops".to_owned()),
        Some(Answer::Slow(d, b)) => {
            std::thread::sleep(d);
            (200, b)
        }
        None => (404, "no such verb".to_owned()),
    };
    let _ = write!(
        conn,
        "HTTP/1.1 {code} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}

/// One raw request to a server; (status, body).
fn raw(addr: std::net::SocketAddr, method: &str, path: &str, body: &[u8]) -> (u16, String) {
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        c,
        "{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .unwrap();
    c.write_all(body).unwrap();
    let mut out = String::new();
    let _ = c.read_to_string(&mut out);
    let status = out.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let body = out.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default();
    (status, body)
}

// ---------------------------------------------------------------------------------
// schedkit client -> schedkit server -> profile, against the profile in process.

fn cluster() -> Vec<schedkit::model::Node> {
    (0..12)
        .map(|i| {
            let b = NodeBuilder::new(&format!("node-{i:02}")).cpu(if i % 3 == 0 { "8" } else { "4" }).memory("16Gi");
            let b = if i % 4 == 1 { b.label("disk", "ssd") } else { b };
            b.gpus(if i % 2 == 0 { 4 } else { 0 }).build()
        })
        .collect()
}

fn workload() -> Vec<schedkit::model::Pod> {
    (0..30)
        .map(|i| {
            let b = PodBuilder::new(&format!("pod-{i:02}")).cpu(if i % 5 == 0 { "3" } else { "1" }).memory("1Gi");
            let b = if i % 7 == 0 { b.node_selector("disk", "ssd") } else { b };
            if i % 3 == 0 { b.gpus(1).build() } else { b.build() }
        })
        .collect()
}

/// Places the workload with `profile` in process, and through an extender serving
/// `server_profile` from a scheduler whose own profile has no Filter or Score plugin.
fn both_ways(profile: impl Fn() -> Profile, prioritize: bool) -> (Vec<Option<String>>, Vec<Option<String>>) {
    let place = |s: &mut Scheduler| -> Vec<Option<String>> {
        workload()
            .into_iter()
            .map(|p| match s.schedule_pod(p) {
                Ok(b) => b.run().map_err(|e| eprintln!("{e}")).ok().map(|p| p.node_name().to_owned()),
                Err(e) => {
                    eprintln!("{e}");
                    None
                }
            })
            .collect()
    };
    let mut local = Scheduler::builder().profile(profile()).tie_break(TieBreak::First).build();
    for n in cluster() {
        local.add_node(n).unwrap();
    }
    let in_process = place(&mut local);

    let cache = Arc::new(Mutex::new(Cache::new()));
    for n in cluster() {
        cache.lock().add_node(n).unwrap();
    }
    let service = Arc::new(ExtenderService::new(Arc::new(profile()), cache.clone()));
    let server =
        ExtenderServer::start(service, "127.0.0.1:0", ServerOptions { workers: 2, ..ServerOptions::default() })
            .unwrap();
    let client = HttpExtender::new(&ExtenderConfig {
        url_prefix: format!("{}/schedkit/", server.url()),
        filter_verb: "filter".into(),
        prioritize_verb: if prioritize { "prioritize".into() } else { String::new() },
        bind_verb: "bind".into(),
        weight: 1,
        node_cache_capable: true,
        http_timeout: "10s".into(),
        ..ExtenderConfig::default()
    })
    .unwrap();
    let bare = Profile::builder("default-scheduler").build().unwrap();
    let mut remote = Scheduler::builder().profile(bare).tie_break(TieBreak::First).extender(Arc::new(client)).build();
    for n in cluster() {
        remote.add_node(n).unwrap();
    }
    let via_http = place(&mut remote);
    // The server's cache holds what its bind verb bound.
    let bound = via_http.iter().flatten().count();
    let snap = {
        let mut s = schedkit::snapshot::Snapshot::default();
        cache.lock().update_snapshot(&mut s);
        s
    };
    assert_eq!(snap.nodes().iter().map(|n| n.pods().len()).sum::<usize>(), bound);
    server.shutdown();
    (in_process, via_http)
}

#[test]
fn round_trip_filter_only_places_as_in_process() {
    let profile = || {
        let handle = Handle::default();
        let mut config = schedkit::plugins::default_profile_config();
        config.plugins.score.disabled.push(schedkit::framework::PluginRef { name: "*".into(), weight: None });
        config
            .plugins
            .multi_point
            .disabled
            .push(schedkit::framework::PluginRef { name: "NodeResourcesBalancedAllocation".into(), weight: None });
        let p = default_registry().build_profile(&config, &handle).unwrap();
        assert!(!p.filter_plugins().is_empty());
        p
    };
    let (local, remote) = both_ways(profile, false);
    assert!(local.iter().flatten().count() > 10 && local.iter().any(Option::is_none), "{local:?}");
    assert_eq!(local, remote);
}

#[test]
fn round_trip_with_scores_places_as_in_process() {
    // A score in steps of 10 with weight 1 crosses the protocol's 0..=10 range exactly:
    // the server sends total / 10, kube-scheduler's side multiplies by weight × 10.
    let profile = || {
        let fits = FilterFn::new("CpuFits", |_, pod, node| {
            let free = node.allocatable().milli_cpu - node.requested().milli_cpu;
            if pod.requests.milli_cpu <= free { Status::SUCCESS } else { Status::unschedulable("Insufficient cpu") }
        });
        let free = ScoreFn::new("FreeCpuTenths", |_, _, n| {
            let a = n.allocatable().milli_cpu.max(1);
            (a - n.requested().milli_cpu) * 10 / a * 10
        });
        Profile::builder("default-scheduler").plugin(fits).weighted(free, 1).build().unwrap()
    };
    let (local, remote) = both_ways(profile, true);
    assert!(local.iter().flatten().count() > 10, "{local:?}");
    assert_eq!(local, remote);
}

// ---------------------------------------------------------------------------------
// HAMi-shaped answers.

/// HAMi's Helm chart's extender entry (scheduler-extender `filter` and `bind`, node
/// cache, its resources ignored by NodeResourcesFit).
fn hami_config(url: &str, ignorable: bool) -> KubeSchedulerConfiguration {
    let text = json!({
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "extenders": [{
            "urlPrefix": url,
            "filterVerb": "filter",
            "bindVerb": "bind",
            "enableHTTPS": false,
            "nodeCacheCapable": true,
            "weight": 1,
            "httpTimeout": "2s",
            "ignorable": ignorable,
            "managedResources": [
                {"name": "nvidia.com/gpu", "ignoredByScheduler": true},
                {"name": "nvidia.com/gpumem", "ignoredByScheduler": true},
                {"name": "nvidia.com/gpucores", "ignoredByScheduler": true}
            ]
        }]
    });
    KubeSchedulerConfiguration::from_json(&text.to_string()).unwrap()
}

fn hami_scheduler(url: &str, ignorable: bool) -> Scheduler {
    let handle = Handle::default();
    let built = hami_config(url, ignorable).build(&default_registry(), &handle).unwrap();
    let s = built.scheduler_builder(handle).tie_break(TieBreak::First).build();
    for n in ["node-a", "node-b", "node-c"] {
        s.add_node(NodeBuilder::new(n).cpu("8").memory("32Gi").build()).unwrap();
    }
    s
}

fn vgpu_pod(name: &str) -> schedkit::model::Pod {
    PodBuilder::new(name)
        .uid(&format!("uid-{name}"))
        .request("nvidia.com/gpu", "1")
        .request("nvidia.com/gpumem", "4000")
        .build()
}

#[test]
fn hami_shaped_extender_filters_and_binds() {
    let hami = Scripted::start(vec![
        (
            "filter",
            Answer::Json(
                r#"{"Nodes":null,"NodeNames":["node-b"],"FailedNodes":{"node-a":"1/1 CardInsufficientMemory",
                    "node-c":"0/0 NodeUnfitPod"},"FailedAndUnresolvableNodes":null,"Error":""}"#
                    .into(),
            ),
        ),
        ("bind", Answer::Json(r#"{"Error":""}"#.into())),
    ]);
    let mut s = hami_scheduler(&format!("{}/", hami.addr), false);
    let binding = s.schedule_pod(vgpu_pod("trainer")).unwrap();
    assert_eq!(binding.node(), "node-b");
    binding.run().unwrap();

    let seen = hami.seen.lock().clone();
    let (path, filter) = &seen[0];
    assert_eq!(path, "/filter");
    // Go's field names, a null NodeList, the names of every node the plugins passed.
    assert!(filter["Nodes"].is_null());
    let mut names: Vec<&str> = filter["NodeNames"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    names.sort_unstable();
    assert_eq!(names, ["node-a", "node-b", "node-c"]);
    assert_eq!(filter["Pod"]["metadata"]["name"], "trainer");
    assert!(filter["Pod"]["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpumem"].is_string());
    let (path, bind) = &seen[1];
    assert_eq!(path, "/bind");
    assert_eq!(
        bind,
        &json!({"PodName": "trainer", "PodNamespace": "default", "PodUID": "uid-trainer", "Node": "node-b"})
    );

    // A pod with no HAMi resource does not interest it: no call, the plugins decide.
    let plain = s.schedule_pod(PodBuilder::new("web").cpu("1").build()).unwrap();
    plain.run().unwrap();
    assert_eq!(hami.hits("filter"), 1);
    assert_eq!(hami.hits("bind"), 1);

    // HAMi answering every node unfit: a FitError with its reasons.
    hami.set(
        "filter",
        Answer::Json(
            r#"{"nodenames":[],"failednodes":{"node-a":"no device","node-b":"no device","node-c":"no device"}}"#.into(),
        ),
    );
    let err = s.schedule_pod(vgpu_pod("big")).unwrap_err();
    assert!(err.to_string().contains("3 no device"), "{err}");
    // HAMi's own error (Error set, nil Go error) fails the cycle with its text.
    hami.set("filter", Answer::Json(r#"{"Error":"failed to get pod annotations"}"#.into()));
    let err = s.schedule_pod(vgpu_pod("again")).unwrap_err();
    assert!(err.to_string().ends_with("failed to get pod annotations"), "{err}");
    // A name HAMi was not sent.
    hami.set("filter", Answer::Json(r#"{"NodeNames":["node-z"]}"#.into()));
    let err = s.schedule_pod(vgpu_pod("ghost")).unwrap_err();
    assert!(
        err.to_string().contains("claims a filtered node \"node-z\" which is not found in the input node list"),
        "{err}"
    );
}

// ---------------------------------------------------------------------------------
// The client against broken extenders.

#[test]
fn client_survives_timeouts_5xx_garbage_and_closed_ports() {
    let bad = Scripted::start(vec![("bind", Answer::Json(r#"{"Error":""}"#.into()))]);
    let closed = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    let cases: Vec<(&str, Option<Answer>, &str)> = vec![
        ("5xx", Some(Answer::Status(503)), "failed filter with extender at URL"),
        ("garbage", Some(Answer::Json("<html>not json".into())), "decoding the filter result"),
        ("wrong shape", Some(Answer::Json(r#"{"NodeNames": "node-a"}"#.into())), "NodeNames"),
        ("timeout", Some(Answer::Slow(Duration::from_secs(3), "{}".into())), "Post \""),
        ("closed port", None, "Post \""),
    ];
    for (label, answer, want) in cases {
        let url = match &answer {
            Some(a) => {
                bad.set("filter", a.clone());
                bad.addr.clone()
            }
            None => closed.clone(),
        };
        // Not ignorable: the cycle fails with the client's message.
        let mut s = hami_scheduler(&url, false);
        let err = s.schedule_pod(vgpu_pod(label)).unwrap_err().to_string();
        assert!(err.contains(want), "{label}: {err}");
        if label == "5xx" {
            assert!(err.contains(&format!("{url}/filter, code 503")), "{err}");
        }
        // Ignorable: the extender is skipped, the plugins place the pod. (Binding
        // through it on the closed port fails, ignorable too: DefaultBinder binds.)
        let mut s = hami_scheduler(&url, true);
        let b = s.schedule_pod(vgpu_pod(label)).unwrap_or_else(|e| panic!("{label}: {e}"));
        assert_eq!(b.node(), "node-a", "{label}");
        b.run().unwrap_or_else(|e| panic!("{label}: {e}"));
    }
}

#[test]
fn prioritize_errors_only_drop_that_extenders_scores() {
    let bad = Scripted::start(vec![("prioritize", Answer::Status(500))]);
    let client = HttpExtender::new(&ExtenderConfig {
        url_prefix: bad.addr.clone(),
        prioritize_verb: "prioritize".into(),
        weight: 2,
        ..ExtenderConfig::default()
    })
    .unwrap();
    let handle = Handle::default();
    let mut s = Scheduler::builder()
        .handle(handle.clone())
        .profile(Profile::kube_default(&handle))
        .extender(Arc::new(client))
        .build();
    for n in ["n1", "n2"] {
        s.add_node(NodeBuilder::new(n).cpu("4").build()).unwrap();
    }
    s.schedule_pod(PodBuilder::new("p").cpu("1").build()).unwrap().run().unwrap();
    assert_eq!(bad.hits("prioritize"), 1);
}

// ---------------------------------------------------------------------------------
// The server against bad requests and hard clients.

struct FailingBinder;

impl Plugin for FailingBinder {
    fn name(&self) -> &str {
        "FailingBinder"
    }
    fn register(self: Arc<Self>, points: &mut ExtensionPoints) {
        points.bind(self);
    }
}

impl BindPlugin for FailingBinder {
    fn bind(&self, _: &mut CycleState, pod: &PodInfo, _: &str) -> Status {
        if pod.pod.metadata.name.starts_with("doomed") {
            Status::error("the API server said no")
        } else {
            Status::SUCCESS
        }
    }
}

fn served(options: ServerOptions) -> (ExtenderServer, Arc<Mutex<Cache>>) {
    let cache = Arc::new(Mutex::new(Cache::new()));
    for n in ["n1", "n2"] {
        cache.lock().add_node(NodeBuilder::new(n).cpu("4").build()).unwrap();
    }
    let fits = FilterFn::new("CpuFits", |_, pod, node| {
        let free = node.allocatable().milli_cpu - node.requested().milli_cpu;
        if pod.requests.milli_cpu <= free { Status::SUCCESS } else { Status::unschedulable("Insufficient cpu") }
    });
    let profile = Profile::builder("default-scheduler").plugin(fits).plugin(FailingBinder).build().unwrap();
    let service = Arc::new(ExtenderService::new(Arc::new(profile), cache.clone()));
    (ExtenderServer::start(service, "127.0.0.1:0", options).unwrap(), cache)
}

fn filter_body(pod: &str, cpu: &str, names: &[&str]) -> Vec<u8> {
    json!({
        "Pod": {"metadata": {"name": pod, "namespace": "default", "uid": format!("uid-{pod}")},
                "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}},
        "Nodes": null,
        "NodeNames": names,
    })
    .to_string()
    .into_bytes()
}

#[test]
fn server_refuses_bad_requests_with_a_message() {
    let (server, _) = served(ServerOptions { max_body_bytes: 4096, workers: 1, ..ServerOptions::default() });
    let a = server.local_addr();
    assert_eq!(raw(a, "GET", "/healthz", b""), (200, "ok".into()));
    let (code, body) = raw(a, "POST", "/filter", b"{not json");
    assert_eq!(code, 400);
    assert!(body.starts_with("malformed request body"), "{body}");
    let (code, body) = raw(a, "POST", "/filter", br#"{"NodeNames": ["n1"]}"#);
    assert_eq!((code, body.as_str()), (400, "ExtenderArgs.Pod is required"));
    let (code, body) = raw(
        a,
        "POST",
        "/filter",
        br#"{"Pod": {"spec": {"containers": [{"resources": {"requests": {"cpu": "lots"}}}]}}}"#,
    );
    assert_eq!(code, 400);
    assert!(body.contains("cpu"), "{body}");
    let (code, body) = raw(a, "POST", "/filter", &vec![b' '; 5000]);
    assert_eq!(code, 400);
    assert!(body.contains("over the limit of 4096"), "{body}");
    assert_eq!(raw(a, "POST", "/frobnicate", b"{}").0, 404);
    assert_eq!(raw(a, "GET", "/filter", b"").0, 405);
    // Still serving.
    let (code, body) = raw(a, "POST", "/scheduler/filter", &filter_body("p", "1", &["n1", "n9"]));
    assert_eq!(code, 200, "{body}");
    let r: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(r["NodeNames"], json!(["n1"]));
    assert_eq!(r["FailedAndUnresolvableNodes"]["n9"], "node not found in the extender's cache");
    server.shutdown();
}

#[test]
fn server_serves_concurrent_clients_and_survives_hangups() {
    let (server, _) = served(ServerOptions { workers: 2, ..ServerOptions::default() });
    let a = server.local_addr();
    // Clients that send half a request, or headers and no body, then hang up.
    for partial in
        [&b"POST /filter HTTP/1.1\r\nContent-Le"[..], b"POST /filter HTTP/1.1\r\nContent-Length: 100\r\n\r\n{"]
    {
        let mut c = TcpStream::connect(a).unwrap();
        c.write_all(partial).unwrap();
        drop(c);
    }
    let ok = Arc::new(AtomicUsize::new(0));
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let ok = ok.clone();
            std::thread::spawn(move || {
                for i in 0..10 {
                    let (code, body) =
                        raw(a, "POST", "/filter", &filter_body(&format!("p{t}-{i}"), "3", &["n1", "n2"]));
                    let r: Value = serde_json::from_str(&body).unwrap();
                    if code == 200 && r["NodeNames"] == json!(["n1", "n2"]) {
                        ok.fetch_add(1, Ordering::SeqCst);
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(ok.load(Ordering::SeqCst), 80);
    server.shutdown();
}

#[test]
fn a_failed_bind_leaves_nothing_reserved() {
    let (server, cache) = served(ServerOptions { workers: 1, ..ServerOptions::default() });
    let a = server.local_addr();
    let bind = |pod: &str, node: &str| {
        let body = json!({"PodName": pod, "PodNamespace": "default", "PodUID": format!("uid-{pod}"), "Node": node});
        let (code, body) = raw(a, "POST", "/bind", body.to_string().as_bytes());
        assert_eq!(code, 200, "{body}");
        serde_json::from_str::<Value>(&body).unwrap()["Error"].as_str().unwrap_or_default().to_owned()
    };
    // Never filtered: unknown.
    assert!(bind("stranger", "n1").contains("was not seen by filter or prioritize"));
    // The bind plugin fails: the assumed pod is forgotten.
    assert_eq!(raw(a, "POST", "/filter", &filter_body("doomed", "3", &["n1"])).0, 200);
    assert_eq!(bind("doomed", "n1"), "the API server said no");
    assert!(cache.lock().pod_node("uid-doomed").is_none());
    // An unknown node: nothing assumed either.
    assert!(bind("doomed", "n7").contains("not found"));
    assert!(cache.lock().pod_node("uid-doomed").is_none());
    // A good bind holds the room: the next 3-cpu pod no longer fits n1.
    assert_eq!(raw(a, "POST", "/filter", &filter_body("good", "3", &["n1"])).0, 200);
    assert_eq!(bind("good", "n1"), "");
    assert_eq!(cache.lock().pod_node("uid-good"), Some("n1"));
    let (_, body) = raw(a, "POST", "/filter", &filter_body("late", "3", &["n1", "n2"]));
    let r: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(r["NodeNames"], json!(["n2"]));
    assert_eq!(r["FailedNodes"]["n1"], "Insufficient cpu");
    server.shutdown();
}

#[test]
fn server_prioritizes_and_vets_preemption() {
    let cache = Arc::new(Mutex::new(Cache::new()));
    for n in ["n1", "n2"] {
        cache.lock().add_node(NodeBuilder::new(n).cpu("4").build()).unwrap();
    }
    let victim = PodBuilder::new("victim").uid("uid-victim").cpu("4").node_name("n1").build();
    cache.lock().add_pod(Arc::new(PodInfo::new(victim).unwrap())).unwrap();
    let handle = Handle::default();
    let service = Arc::new(ExtenderService::new(Arc::new(Profile::kube_default(&handle)), cache));
    let server =
        ExtenderServer::start(service, "127.0.0.1:0", ServerOptions { workers: 1, ..ServerOptions::default() })
            .unwrap();
    let a = server.local_addr();
    // Prioritize: n2 (empty) scores above n1 (full) in 0..=10.
    let (code, body) = raw(a, "POST", "/prioritize", &filter_body("p", "1", &["n1", "n2"]));
    assert_eq!(code, 200, "{body}");
    let list: Vec<Value> = serde_json::from_str(&body).unwrap();
    let score = |h: &str| list.iter().find(|x| x["Host"] == h).unwrap()["Score"].as_i64().unwrap();
    assert!((0..=10).contains(&score("n1")) && (0..=10).contains(&score("n2")));
    assert!(score("n2") > score("n1"), "{body}");
    // Preempt: evicting the victim makes room on n1; n2 has nothing to evict and the
    // pod fits it as it is: both are kept.
    let preempt = json!({
        "Pod": {"metadata": {"name": "big", "uid": "uid-big"},
                "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "4"}}}]}},
        "NodeNameToMetaVictims": {"n1": {"Pods": [{"UID": "uid-victim"}], "NumPDBViolations": 0},
                                  "n2": {"Pods": [], "NumPDBViolations": 0}}
    });
    let (code, body) = raw(a, "POST", "/preempt", preempt.to_string().as_bytes());
    assert_eq!(code, 200, "{body}");
    let r: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(r["NodeNameToMetaVictims"]["n1"]["Pods"], json!([{"UID": "uid-victim"}]));
    assert!(r["NodeNameToMetaVictims"]["n2"].is_object());
    // Without evicting it, n1 stays full.
    let keep = json!({
        "Pod": preempt["Pod"],
        "NodeNameToMetaVictims": {"n1": {"Pods": [], "NumPDBViolations": 0}}
    });
    let (_, body) = raw(a, "POST", "/preempt", keep.to_string().as_bytes());
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap()["NodeNameToMetaVictims"], json!({}));
    server.shutdown();
}

/// The client's preemption verb: meta victims for a node-cache-capable extender, and
/// the answer's uids resolved back to the snapshot's pods (upstream
/// `TestConvertToVictims`: an unknown uid is an error).
#[test]
fn client_preemption_round_trip() {
    let answer = Scripted::start(vec![(
        "preempt",
        Answer::Json(r#"{"NodeNameToMetaVictims":{"n1":{"Pods":[{"UID":"uid-v1"}],"NumPDBViolations":1}}}"#.into()),
    )]);
    let client = HttpExtender::new(&ExtenderConfig {
        url_prefix: answer.addr.clone(),
        preempt_verb: "preempt".into(),
        node_cache_capable: true,
        ..ExtenderConfig::default()
    })
    .unwrap();
    let mut cache = Cache::new();
    cache.add_node(NodeBuilder::new("n1").cpu("4").build()).unwrap();
    for v in ["v1", "v2"] {
        let p = PodBuilder::new(v).uid(&format!("uid-{v}")).cpu("1").node_name("n1").build();
        cache.add_pod(Arc::new(PodInfo::new(p).unwrap())).unwrap();
    }
    let mut snap = schedkit::snapshot::Snapshot::default();
    cache.update_snapshot(&mut snap);
    let pods = snap.get("n1").unwrap().pods().to_vec();
    let victims = [("n1".to_owned(), schedkit::framework::extender::Victims { pods, num_pdb_violations: 2 })].into();
    let pod = PodInfo::new(PodBuilder::new("p").cpu("4").build()).unwrap();
    assert!(client.supports_preemption());
    let out = client.process_preemption(&pod, &victims, &snap).unwrap();
    assert_eq!(out["n1"].pods.len(), 1);
    assert_eq!(&*out["n1"].pods[0].uid, "uid-v1");
    assert_eq!(out["n1"].num_pdb_violations, 1);
    let sent = answer.seen.lock()[0].1.clone();
    assert_eq!(
        sent["NodeNameToMetaVictims"]["n1"],
        json!({"Pods": [{"UID": "uid-v1"}, {"UID": "uid-v2"}], "NumPDBViolations": 2})
    );
    assert!(sent["NodeNameToVictims"].is_null());
    answer.set(
        "preempt",
        Answer::Json(r#"{"NodeNameToMetaVictims":{"n1":{"Pods":[{"UID":"uid-nope"}],"NumPDBViolations":0}}}"#.into()),
    );
    let err = client.process_preemption(&pod, &victims, &snap).unwrap_err().to_string();
    assert!(
        err.contains("claims to preempt pod (UID: uid-nope) on node: n1, but the pod is not found on that node"),
        "{err}"
    );
}

// ---------------------------------------------------------------------------------
// The client's own HTTP/1.1 path against the ways servers frame an answer.

#[derive(Clone, Copy, Debug)]
enum Framing {
    /// Chunks of 7 bytes with an extension, and a trailer; kept alive.
    Chunked,
    /// Content-Length and `Connection: close`, then the server closes.
    Close,
    /// No length: the body ends when the server closes.
    UntilClose,
    /// `100 Continue`, then a kept-alive Content-Length answer.
    Continue,
    /// A kept-alive Content-Length answer, then the server hangs up anyway.
    HangUp,
}

/// Serves every request on a connection with `body` framed as `framing`; counts the
/// connections it accepted.
fn framed_server(framing: Framing, body: &'static str) -> (String, Arc<AtomicUsize>) {
    use std::fmt::Write as _;
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = format!("http://{}", listener.local_addr().unwrap());
    let conns = Arc::new(AtomicUsize::new(0));
    let count = conns.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            count.fetch_add(1, Ordering::SeqCst);
            std::thread::spawn(move || {
                while read_request(&conn).is_some() {
                    let head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n";
                    let answer = match framing {
                        Framing::Chunked => {
                            let mut a = format!("{head}Transfer-Encoding: chunked\r\n\r\n");
                            for piece in body.as_bytes().chunks(7) {
                                let text = std::str::from_utf8(piece).unwrap();
                                write!(a, "{:X};piece=1\r\n{text}\r\n", piece.len()).unwrap();
                            }
                            a + "0\r\nX-Checksum: none\r\n\r\n"
                        }
                        Framing::Close => {
                            format!("{head}Connection: close\r\nContent-Length: {}\r\n\r\n{body}", body.len())
                        }
                        Framing::UntilClose => format!("{head}\r\n{body}"),
                        Framing::Continue | Framing::HangUp => {
                            let informational =
                                if matches!(framing, Framing::Continue) { "HTTP/1.1 100 Continue\r\n\r\n" } else { "" };
                            format!("{informational}{head}Content-Length: {}\r\n\r\n{body}", body.len())
                        }
                    };
                    if conn.write_all(answer.as_bytes()).is_err() {
                        return;
                    }
                    if matches!(framing, Framing::Close | Framing::UntilClose | Framing::HangUp) {
                        return;
                    }
                }
            });
        }
    });
    (addr, conns)
}

#[test]
fn own_http_path_reads_every_framing_and_reuses_only_kept_connections() {
    let mut cache = Cache::new();
    for n in ["n1", "n2", "n3"] {
        cache.add_node(NodeBuilder::new(n).cpu("4").build()).unwrap();
    }
    let mut snap = schedkit::snapshot::Snapshot::default();
    cache.update_snapshot(&mut snap);
    let nodes: Vec<_> = snap.nodes().iter().map(|n| &**n).collect();
    let pod = PodInfo::new(PodBuilder::new("p").cpu("1").build()).unwrap();
    let body =
        r#"{"NodeNames":["n1","n3"],"FailedNodes":{"n2":"too hot"},"FailedAndUnresolvableNodes":null,"Error":""}"#;
    // (framing, connections for three calls)
    for (framing, want_conns) in [
        (Framing::Chunked, 1),
        (Framing::Continue, 1),
        (Framing::Close, 3),
        (Framing::UntilClose, 3),
        (Framing::HangUp, 3),
    ] {
        let (url, conns) = framed_server(framing, body);
        let client = HttpExtender::new(&ExtenderConfig {
            url_prefix: url,
            filter_verb: "filter".into(),
            node_cache_capable: true,
            http_timeout: "5s".into(),
            ..ExtenderConfig::default()
        })
        .unwrap();
        for call in 0..3 {
            let r = client.filter(&pod, &nodes).unwrap_or_else(|e| panic!("{framing:?} call {call}: {e}"));
            let passed: Vec<&str> = r.passed.iter().map(|&k| nodes[k].node().name()).collect();
            assert_eq!(passed, ["n1", "n3"], "{framing:?} call {call}");
            assert_eq!(r.failed["n2"], "too hot", "{framing:?}");
            if matches!(framing, Framing::HangUp) {
                // Let the server's FIN arrive: the kept connection is probed, found
                // closed, and not reused.
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        assert_eq!(conns.load(Ordering::SeqCst), want_conns, "{framing:?}");
    }
}
