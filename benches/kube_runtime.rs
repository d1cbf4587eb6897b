//! What the kube runtime adds per pod on top of the scheduling cycle: 10,000 pending
//! pods on 5,000 nodes, served as the API server's JSON by a mock transport (lists,
//! idle watches, pods/binding answered at once, Events), run through
//! `schedkit::kube::run` until every pod is bound; and the same pods and nodes
//! through a plain `Scheduler` (`run_until_idle`, binding in memory). The difference
//! per pod is the runtime's overhead: decoding and converting the objects, the
//! queue feed, the binding task and request, the Scheduled Event.
//!
//! Counted: everything from `run` to the last binding, on the runtime's threads —
//! including the kube client (request building, tower buffer, response decoding)
//! and the mock's routing of each request, which is a path match, a `Bytes` clone
//! and a response head (an Event's body is echoed back). Not counted: building the
//! fixtures (`serde_json::Value`s serialized once into the list bodies before the
//! clock starts) and, on the plain side, decoding and converting the objects.
//!
//! It also prints when the first binding went out: the first lists (every node and
//! pending pod decoded, converted and added) end there, since the loop waits for them,
//! as upstream waits for its informers' handlers to deliver the initial lists
//! (`cmd/kube-scheduler/app/server.go`: `WaitForHandlersSync` before `sched.Run`).
//! The overhead is split there: the first lists (less the plain side's adding of the
//! pods), and what the runtime adds after them (less the plain side's cycles).
//!
//! `cargo bench --features kube --bench kube_runtime` (prints one table; run
//! `cargo bench --bench plugins -- profile/default/adaptive_pct_1thread/5000` in the
//! same session to scale the figures to the 46 µs reference machine).
//!
//! For instruction counts, run one side under callgrind with fewer objects and count
//! only the runtime's threads (the fixtures are built on the main thread):
//! `KUBE_RUNTIME_NODES=500 KUBE_RUNTIME_PODS=1000 valgrind --tool=callgrind
//! --collect-atstart=no --toggle-collect='tokio::runtime::blocking::pool::Inner::run'
//! <bench binary> --only runtime`; the plain side's timed part is `add_pod` and
//! `run_until_idle` under `--only cycles`. `--decode` decodes the bench's pods alone,
//! as the pod watch does and the lean way plus the conversion.
//!
//! `KUBE_RUNTIME_BINDINGS=N` sets `RunOptions::max_concurrent_bindings` (default 0:
//! the runtime's default). The process's allocator is part of what is measured: with
//! glibc, the threads that decode the first lists each grow their own arena a page at
//! a time (an `mprotect` per page); `GLIBC_TUNABLES=glibc.malloc.arena_max=1` or a
//! different global allocator in the binary changes the start-up markedly.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::StreamExt;
use http_body_util::{BodyExt, StreamBody, combinators::UnsyncBoxBody};
use schedkit::framework::{Handle, ProfileConfig};
use schedkit::k8s::k8s_openapi::api::core::v1 as api;
use schedkit::kube::{RunOptions, Shutdown};
use schedkit::model::{Node, Pod};
use schedkit::plugins::default_profile_config;
use schedkit::plugins::inter_pod_affinity::NamespaceLabels;
use schedkit::scheduler::Scheduler;
use serde_json::{Value, json};

type Body = UnsyncBoxBody<Bytes, Infallible>;

const NODES: usize = 5_000;
const PODS: usize = 10_000;

/// `KUBE_RUNTIME_NODES` / `KUBE_RUNTIME_PODS` shrink the run (for callgrind).
fn size(var: &str, default: usize) -> usize {
    std::env::var(var).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn node(i: usize) -> Value {
    json!({
        "metadata": {"name": format!("node-{i}"), "uid": format!("uid-node-{i}"), "resourceVersion": "90",
                     "creationTimestamp": "2025-03-01T09:00:00Z",
                     "labels": {"kubernetes.io/hostname": format!("node-{i}"),
                                "topology.kubernetes.io/zone": format!("zone-{}", i % 3)}},
        "status": {"capacity": {"cpu": "32", "memory": "128Gi", "pods": "110"},
                   "allocatable": {"cpu": "32", "memory": "128Gi", "pods": "110"},
                   "conditions": [{"type": "Ready", "status": "True"}]}
    })
}

fn pod(i: usize) -> Value {
    json!({
        "metadata": {"name": format!("pod-{i}"), "namespace": "default", "uid": format!("uid-pod-{i}"),
                     "resourceVersion": "100", "creationTimestamp": "2025-03-01T10:00:00Z",
                     "labels": {"app": format!("app-{}", i % 50)}},
        "spec": {"schedulerName": "schedkit",
                 "containers": [{"name": "c", "image": "registry.example.com/app:1",
                                 "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                                 "command": ["serve"], "imagePullPolicy": "IfNotPresent"}],
                 "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                                  "effect": "NoExecute", "tolerationSeconds": 300}],
                 "restartPolicy": "Always", "dnsPolicy": "ClusterFirst"},
        "status": {"phase": "Pending", "qosClass": "Burstable"}
    })
}

fn list(kind: &str, api_version: &str, items: &[Value]) -> Bytes {
    let v = json!({"kind": format!("{kind}List"), "apiVersion": api_version, "metadata": {"resourceVersion": "100"},
                   "items": items});
    Bytes::from(serde_json::to_vec(&v).unwrap())
}

fn full(status: u16, bytes: Bytes) -> http::Response<Body> {
    http::Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(http_body_util::Full::new(bytes).map_err(|e| match e {}).boxed_unsync())
        .unwrap()
}

fn idle_watch() -> http::Response<Body> {
    let stream = futures::stream::pending::<Result<http_body::Frame<Bytes>, Infallible>>();
    http::Response::builder().status(200).body(StreamBody::new(stream.boxed()).boxed_unsync()).unwrap()
}

struct Fake {
    nodes: Bytes,
    pods: Bytes,
    empty_pdbs: Bytes,
    empty: Bytes,
    ok: Bytes,
    bound: AtomicUsize,
}

/// The mock API server. It answers from bodies serialized before the timing starts
/// and reads a request's body only to echo an Event: what it costs per request
/// (routing on the path, a `Bytes` clone, the response head) is all it adds to the
/// timed part.
async fn serve(fake: Arc<Fake>, req: http::Request<kube::client::Body>) -> http::Response<Body> {
    let (parts, body) = req.into_parts();
    let watch = parts.uri.query().is_some_and(|q| q.contains("watch=true"));
    match (parts.method.as_str(), parts.uri.path()) {
        ("GET", _) if watch => idle_watch(),
        ("GET", "/api/v1/nodes") => full(200, fake.nodes.clone()),
        ("GET", "/api/v1/pods") => full(200, fake.pods.clone()),
        ("GET", "/apis/policy/v1/poddisruptionbudgets") => full(200, fake.empty_pdbs.clone()),
        // Every other watched kind (DRA objects, PodGroups) lists empty: the runtime
        // starts scheduling only when every watch has listed once.
        ("GET", _) => full(200, fake.empty.clone()),
        ("POST", p) if p.ends_with("/binding") => {
            fake.bound.fetch_add(1, Ordering::SeqCst);
            full(201, fake.ok.clone())
        }
        // An Event: the API server answers with the object as stored.
        ("POST", _) => full(201, body.collect().await.unwrap().to_bytes()),
        _ => full(404, fake.ok.clone()),
    }
}

fn profile_config() -> ProfileConfig {
    let mut cfg = default_profile_config();
    cfg.scheduler_name = Some("schedkit".into());
    cfg
}

/// The runtime: from `run` to the last binding, and to the first.
fn through_runtime(nodes: usize, pods: usize) -> (Duration, Duration) {
    let fake = Arc::new(Fake {
        nodes: list("Node", "v1", &(0..nodes).map(node).collect::<Vec<_>>()),
        pods: list("Pod", "v1", &(0..pods).map(pod).collect::<Vec<_>>()),
        empty_pdbs: list("PodDisruptionBudget", "policy/v1", &[]),
        empty: list("List", "v1", &[]),
        ok: Bytes::from_static(br#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","code":201}"#),
        bound: AtomicUsize::new(0),
    });
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let svc_fake = fake.clone();
    let service = tower::service_fn(move |req| {
        let f = svc_fake.clone();
        async move { Ok::<_, Infallible>(serve(f, req).await) }
    });
    rt.block_on(async move {
        let client = kube::Client::new(service, "default");
        let registry = schedkit::kube::registry(&client, &NamespaceLabels::default()).unwrap();
        let handle = Handle::default();
        let profile = registry.build_profile(&profile_config(), &handle).unwrap();
        let scheduler = Scheduler::builder().handle(handle).profile(profile).parallelism(1).build();
        let shutdown = Shutdown::new();
        let opts = RunOptions {
            shutdown: shutdown.clone(),
            max_concurrent_bindings: size("KUBE_RUNTIME_BINDINGS", 0),
            ..RunOptions::default()
        };
        let start = Instant::now();
        let running = tokio::spawn(schedkit::kube::run(client, scheduler, opts));
        let mut first = None;
        while fake.bound.load(Ordering::SeqCst) < pods {
            if first.is_none() && fake.bound.load(Ordering::SeqCst) > 0 {
                first = Some(start.elapsed());
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let took = start.elapsed();
        let first = first.unwrap_or(took);
        eprintln!("first binding after {:.1} ms", first.as_secs_f64() * 1e3);
        shutdown.trigger();
        let stats = running.await.unwrap().unwrap();
        assert_eq!(stats.bound, pods);
        (took, first)
    })
}

/// The scheduling cycles alone: the same objects, already converted, in a `Scheduler`;
/// the whole timed part, and the part that adds the pods.
fn cycles_only(nodes: usize, pods: usize) -> (Duration, Duration) {
    let handle = Handle::default();
    let profile = schedkit::plugins::default_registry().build_profile(&profile_config(), &handle).unwrap();
    let mut scheduler = Scheduler::builder().handle(handle).profile(profile).parallelism(1).build();
    for i in 0..nodes {
        let n: api::Node = serde_json::from_value(node(i)).unwrap();
        scheduler.add_node(Node::try_from(&n).unwrap()).unwrap();
    }
    let queued: Vec<Pod> =
        (0..pods).map(|i| Pod::try_from(&serde_json::from_value::<api::Pod>(pod(i)).unwrap()).unwrap()).collect();
    let start = Instant::now();
    for p in queued {
        scheduler.add_pod(p).unwrap();
    }
    let added = start.elapsed();
    let summary = scheduler.run_until_idle();
    let took = start.elapsed();
    assert_eq!(summary.bound, pods, "{summary:?}");
    (took, added)
}

/// `--decode`: the bench's pods decoded as the pod watch decodes them (straight into
/// the model), and the lean way plus the conversion, one after the other (for a
/// profiler; the times are indicative).
fn decode_only(pods: usize) {
    use schedkit::manifest::LoadOptions;
    let texts: Vec<String> = (0..pods).map(|i| pod(i).to_string()).collect();
    let start = Instant::now();
    for t in &texts {
        let (direct, _) = schedkit::kube::watched_pod_from_json(t, LoadOptions::default()).unwrap();
        assert!(direct);
    }
    let watched = start.elapsed();
    let start = Instant::now();
    for t in &texts {
        let lean = schedkit::kube::lean_pod_from_json(t).unwrap();
        std::hint::black_box(schedkit::k8s::from_k8s::<Pod>(&lean, LoadOptions::default()).unwrap());
    }
    let lean = start.elapsed();
    let per = |d: Duration| d.as_secs_f64() * 1e9 / pods as f64;
    println!("decode: watched {:.0} ns/pod, lean + conversion {:.0} ns/pod", per(watched), per(lean));
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        println!("kube_runtime/overhead_10000_pods_5000_nodes: bench");
        return;
    }
    let (nodes, pods) = (size("KUBE_RUNTIME_NODES", NODES), size("KUBE_RUNTIME_PODS", PODS));
    if std::env::args().any(|a| a == "--decode") {
        decode_only(pods);
        return;
    }
    // `--only runtime` / `--only cycles`: one side alone (for a profiler).
    let only = std::env::args().skip_while(|a| a != "--only").nth(1);
    if let Some(side) = only {
        let took = if side == "cycles" { cycles_only(nodes, pods).0 } else { through_runtime(nodes, pods).0 };
        println!("kube_runtime {side}: {pods} pods on {nodes} nodes: {:.1} ms", took.as_secs_f64() * 1e3);
        return;
    }
    let (runtime, first) = through_runtime(nodes, pods);
    let (cycles, added) = cycles_only(nodes, pods);
    let per = |d: Duration| d.as_secs_f64() * 1e6 / pods as f64;
    println!("kube_runtime: {pods} pods on {nodes} nodes (one scheduling thread)");
    println!(
        "  through schedkit::kube::run : {:>9.1} ms, {:>7.1} µs/pod, {:>8.0} pods/s",
        runtime.as_secs_f64() * 1e3,
        per(runtime),
        pods as f64 / runtime.as_secs_f64()
    );
    println!("  scheduling cycles only      : {:>9.1} ms, {:>7.1} µs/pod", cycles.as_secs_f64() * 1e3, per(cycles));
    println!("  runtime overhead            : {:>17.1} µs/pod", per(runtime) - per(cycles));
    // The split: until the first binding the loop waits for the first lists (as
    // upstream waits for its informers' handlers); after it, the runtime works beside
    // the cycles. The plain side's share of the first part is adding the pods.
    println!(
        "    of which the first lists  : {:>17.1} µs/pod ({:.1} ms to the first binding; adding the pods: {:.1} µs/pod)",
        per(first) - per(added),
        first.as_secs_f64() * 1e3,
        per(added)
    );
    println!(
        "    of which after them       : {:>17.1} µs/pod",
        per(runtime.saturating_sub(first)) - per(cycles.saturating_sub(added))
    );
}
