//! `schedkit::kube::run` against a fake API server on a mock transport (no cluster):
//! the kube client talks to a tower service that answers with the API server's JSON
//! for list, watch (ADDED events, an `ERROR` 410 Expired event), pods/binding (a 409
//! Conflict, then 201), status patches and events.k8s.io Events, and records every
//! request. Checked: the loop binds, retries a conflicted binding, reports a pod that
//! fits nowhere (PodScheduled=False with the FitError message, a FailedScheduling
//! Event), re-lists after 410 and schedules onto a node only the new list has, skips
//! a malformed pod, and stops on shutdown; with a DraStore, the DRA objects are
//! listed into it and the claim's status (allocation, reservedFor) is written before
//! the binding; bindings run on their own tasks, no more at once than the limit, and
//! a batch of bindings in flight together reaches the API server in scheduling order.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use http_body_util::{BodyExt, StreamBody, combinators::UnsyncBoxBody};
use parking_lot::Mutex;
use schedkit::framework::{Handle, ProfileConfig};
use schedkit::kube::{RunOptions, Shutdown};
use schedkit::plugins::default_profile_config;
use schedkit::plugins::inter_pod_affinity::NamespaceLabels;
use schedkit::scheduler::Scheduler;
use serde_json::{Value, json};

type Body = UnsyncBoxBody<Bytes, Infallible>;

/// What the fake API server saw and how it answers.
#[derive(Default)]
#[allow(clippy::struct_excessive_bools)]
struct ApiServer {
    /// `METHOD path?query` of every request.
    requests: Vec<String>,
    /// `(pod, node)` of each binding accepted.
    bindings: Vec<(String, String)>,
    /// Binding attempts refused with 409.
    conflicts: usize,
    /// Status patches: `(pod, patch body)`.
    status_patches: Vec<(String, Value)>,
    /// events.k8s.io Events: `(reason, note)`.
    events: Vec<(String, String)>,
    /// Node lists served.
    node_lists: usize,
    /// Serve the DRA scene instead: one pod with a claim, a GPU on n2 only.
    dra: bool,
    /// ResourceClaim status updates: `(claim, body)`.
    claim_status: Vec<(String, Value)>,
    /// ResourceClaim object updates (not status): `(claim, body)`.
    claim_updates: Vec<(String, Value)>,
    /// In the DRA scene, the claim is being deleted (deletionTimestamp and a
    /// finalizer of another controller).
    claim_deleting: bool,
    /// Serve four small pods whose bindings each take 600 ms.
    slow_bind: bool,
    /// Serve a gang: two pods of PodGroup `workers` (minCount 2) and the group.
    gang: bool,
    /// Bindings being answered now, and the most at once.
    in_flight: usize,
    max_in_flight: usize,
    /// Serve this many small pods `o00`, `o01`, … listed newest first (0: the
    /// default scene).
    ordered: usize,
}

/// A resource.k8s.io/v1 DeviceClass, ResourceSlice and ResourceClaim as the API
/// server lists them (shapes of the DRA example driver's objects).
fn device_class() -> Value {
    json!({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
           "metadata": {"name": "gpu.example.com", "uid": "c1", "resourceVersion": "10", "generation": 1,
                        "creationTimestamp": "2025-03-01T09:00:00Z"},
           "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.example.com'"}}]}})
}

fn slice() -> Value {
    json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
           "metadata": {"name": "n2-gpu.example.com-x7k2p", "uid": "s1", "resourceVersion": "11",
                        "generateName": "n2-gpu.example.com-", "creationTimestamp": "2025-03-01T09:00:00Z",
                        "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": "n2", "uid": "uid-n2"}]},
           "spec": {"driver": "gpu.example.com", "nodeName": "n2",
                    "pool": {"name": "n2", "generation": 1, "resourceSliceCount": 1},
                    "devices": [{"name": "gpu-0", "attributes": {"index": {"int": 0},
                                 "uuid": {"string": "gpu-18db0e85-99e9-c746-8531-ffeb86328b39"}},
                                 "capacity": {"memory": {"value": "80Gi"}}}]}})
}

fn claim() -> Value {
    json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
           "metadata": {"name": "gpu-claim", "namespace": "default", "uid": "rc1", "resourceVersion": "12",
                        "creationTimestamp": "2025-03-01T09:00:00Z"},
           "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}},
           "status": {}})
}

fn node(name: &str, cpu: &str) -> Value {
    json!({
        "metadata": {"name": name, "uid": format!("uid-{name}"), "resourceVersion": "90",
                     "creationTimestamp": "2025-03-01T09:00:00Z",
                     "labels": {"kubernetes.io/hostname": name},
                     "managedFields": [{"manager": "kubelet", "operation": "Update", "apiVersion": "v1"}]},
        "spec": {"podCIDR": "10.244.1.0/24"},
        "status": {"capacity": {"cpu": cpu, "memory": "16Gi", "pods": "110"},
                   "allocatable": {"cpu": cpu, "memory": "16Gi", "pods": "110"},
                   "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                   "lastHeartbeatTime": "2025-03-01T09:00:00Z",
                                   "lastTransitionTime": "2025-03-01T09:00:00Z"}],
                   "nodeInfo": {"kubeletVersion": "v1.36.0", "architecture": "amd64"}}
    })
}

fn pod(name: &str, cpu: &str, node: &str, created: &str) -> Value {
    let mut spec = json!({
        "containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": cpu}}}],
        "schedulerName": "schedkit", "priority": 0,
        "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}]
    });
    if !node.is_empty() {
        spec["nodeName"] = json!(node);
    }
    json!({
        "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}"), "resourceVersion": "95",
                     "creationTimestamp": created},
        "spec": spec,
        "status": {"phase": if node.is_empty() { "Pending" } else { "Running" }, "qosClass": "Burstable"}
    })
}

/// A pod whose JSON no decoding takes (`containers` is not a list): logged and
/// skipped, while the rest of its list is scheduled.
fn mangled() -> Value {
    let mut p = pod("mangled", "100m", "", "2025-03-01T10:00:03Z");
    p["spec"]["containers"] = json!("not a list");
    p
}

fn list(kind: &str, api_version: &str, rv: &str, items: &[Value]) -> Value {
    json!({"kind": format!("{kind}List"), "apiVersion": api_version, "metadata": {"resourceVersion": rv}, "items": items})
}

fn full(status: u16, body: &Value) -> http::Response<Body> {
    let bytes = Bytes::from(serde_json::to_vec(body).unwrap());
    http::Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(http_body_util::Full::new(bytes).map_err(|e| match e {}).boxed_unsync())
        .unwrap()
}

/// A watch: these events (one JSON object a line), after `delay`, then nothing more
/// (the connection stays open, as an idle watch does).
fn watch(events: &[Value], delay: Duration) -> http::Response<Body> {
    let frames: Vec<Result<http_body::Frame<Bytes>, Infallible>> = events
        .iter()
        .map(|e| {
            let mut line = serde_json::to_vec(e).unwrap();
            line.push(b'\n');
            Ok(http_body::Frame::data(Bytes::from(line)))
        })
        .collect();
    let mut frames = Some(frames);
    let stream = futures::stream::once(tokio::time::sleep(delay))
        .flat_map(move |()| futures::stream::iter(frames.take().unwrap_or_default()))
        .chain(futures::stream::pending());
    http::Response::builder().status(200).body(StreamBody::new(stream.boxed()).boxed_unsync()).unwrap()
}

fn status_failure(code: u16, reason: &str, message: &str) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
           "message": message, "reason": reason, "code": code})
}

/// A kube client whose every request the fake API server `state` answers (call it
/// inside the runtime: the client spawns its request buffer there).
fn mock_client(state: &Arc<Mutex<ApiServer>>) -> kube::Client {
    let state = state.clone();
    let service = tower::service_fn(move |req: http::Request<kube::client::Body>| {
        let st = state.clone();
        // Recorded as the client's buffer hands the request over, in the order the
        // client was given them: the response future's first poll (where `serve`
        // starts) follows the order its task is woken in, which no client promises.
        let (uri, method) = (req.uri(), req.method());
        st.lock().requests.push(format!("{method} {}?{}", uri.path(), uri.query().unwrap_or("")));
        async move { Ok::<_, Infallible>(serve(st, req).await) }
    });
    kube::Client::new(service, "default")
}

async fn serve(state: Arc<Mutex<ApiServer>>, req: http::Request<kube::client::Body>) -> http::Response<Body> {
    let method = req.method().clone();
    let path = req.uri().path().to_owned();
    let query = req.uri().query().unwrap_or("").to_owned();
    let is_watch = query.contains("watch=true");
    let body: Value = {
        let bytes = req.into_body().collect().await.unwrap().to_bytes();
        if bytes.is_empty() { Value::Null } else { serde_json::from_slice(&bytes).unwrap() }
    };
    match (method.as_str(), path.as_str()) {
        ("GET", "/api/v1/nodes") if !is_watch && state.lock().dra => {
            full(200, &list("Node", "v1", "100", &[node("n1", "4"), node("n2", "4")]))
        }
        ("GET", "/api/v1/nodes") if !is_watch => {
            let n = {
                let mut s = state.lock();
                s.node_lists += 1;
                s.node_lists
            };
            if n == 1 {
                full(200, &list("Node", "v1", "100", &[node("n1", "4"), node("n2", "1")]))
            } else {
                full(200, &list("Node", "v1", "200", &[node("n1", "4"), node("n2", "1"), node("n3", "8")]))
            }
        }
        // The first watch expires: the API server's 410 as a watch ERROR event.
        ("GET", "/api/v1/nodes") => {
            if state.lock().node_lists == 1 {
                let gone = status_failure(410, "Expired", "too old resource version: 100 (150)");
                watch(&[json!({"type": "ERROR", "object": gone})], Duration::from_millis(1500))
            } else {
                watch(&[], Duration::ZERO)
            }
        }
        ("GET", "/api/v1/pods") if !is_watch && state.lock().gang => {
            let pods: Vec<Value> = (0..2)
                .map(|i| {
                    let mut p = pod(&format!("w{i}"), "100m", "", &format!("2025-03-01T10:00:0{i}Z"));
                    p["spec"]["schedulingGroup"] = json!({"podGroupName": "workers"});
                    p
                })
                .collect();
            full(200, &list("Pod", "v1", "100", &pods))
        }
        ("GET", "/apis/scheduling.k8s.io/v1alpha2/podgroups") if !is_watch => {
            // After the pods: they wait at PreEnqueue until the group arrives.
            tokio::time::sleep(Duration::from_millis(300)).await;
            let group = json!({"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
                "metadata": {"name": "workers", "namespace": "default", "uid": "pg1", "resourceVersion": "5",
                             "creationTimestamp": "2025-03-01T09:59:00Z"},
                "spec": {"podGroupTemplateRef": {"workload": {"workloadName": "training",
                                                              "podGroupTemplateName": "workers"}},
                         "schedulingPolicy": {"gang": {"minCount": 2}}}});
            full(200, &list("PodGroup", "scheduling.k8s.io/v1alpha2", "100", &[group]))
        }
        ("GET", "/api/v1/pods") if !is_watch && state.lock().ordered > 0 => {
            let n = state.lock().ordered;
            // At equal priority the queue keeps the order it got them in (upstream
            // PrioritySort compares queue timestamps): the list's, newest first.
            let pods: Vec<Value> = (0..n)
                .rev()
                .map(|i| pod(&format!("o{i:02}"), "10m", "", &format!("2025-03-01T10:{:02}:{:02}Z", i / 60, i % 60)))
                .collect();
            full(200, &list("Pod", "v1", "100", &pods))
        }
        ("GET", "/api/v1/pods") if !is_watch && state.lock().slow_bind => {
            let pods: Vec<Value> =
                (0..4).map(|i| pod(&format!("p{i}"), "100m", "", &format!("2025-03-01T10:00:0{i}Z"))).collect();
            full(200, &list("Pod", "v1", "100", &pods))
        }
        ("POST", p) if p.ends_with("/binding") && state.lock().slow_bind => {
            {
                let mut s = state.lock();
                s.in_flight += 1;
                s.max_in_flight = s.max_in_flight.max(s.in_flight);
            }
            tokio::time::sleep(Duration::from_millis(600)).await;
            let mut s = state.lock();
            s.in_flight -= 1;
            let pod = body["metadata"]["name"].as_str().unwrap().to_owned();
            s.bindings.push((pod, body["target"]["name"].as_str().unwrap().to_owned()));
            full(201, &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}))
        }
        ("GET", "/api/v1/pods") if !is_watch && state.lock().dra => {
            let mut p = pod("trainer", "100m", "", "2025-03-01T10:00:00Z");
            p["spec"]["resourceClaims"] = json!([{"name": "gpu", "resourceClaimName": "gpu-claim"}]);
            full(200, &list("Pod", "v1", "100", &[p]))
        }
        ("GET", "/apis/resource.k8s.io/v1/deviceclasses") if !is_watch => {
            // Later than the claims: the claim waits for its class.
            tokio::time::sleep(Duration::from_millis(300)).await;
            full(200, &list("DeviceClass", "resource.k8s.io/v1", "100", &[device_class()]))
        }
        ("GET", "/apis/resource.k8s.io/v1/resourceslices") if !is_watch => {
            full(200, &list("ResourceSlice", "resource.k8s.io/v1", "100", &[slice()]))
        }
        ("GET", "/apis/resource.k8s.io/v1/resourceclaims") if !is_watch => {
            let mut c = claim();
            if state.lock().claim_deleting {
                c["metadata"]["deletionTimestamp"] = json!("2025-03-01T10:00:05Z");
                c["metadata"]["finalizers"] = json!(["example.com/keep"]);
            }
            full(200, &list("ResourceClaim", "resource.k8s.io/v1", "100", &[c]))
        }
        // The finalizer update: the API server bumps the resourceVersion.
        ("PUT", "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/gpu-claim") => {
            state.lock().claim_updates.push(("gpu-claim".to_owned(), body.clone()));
            let mut updated = body;
            updated["metadata"]["resourceVersion"] = json!("13");
            full(200, &updated)
        }
        ("PUT", "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/gpu-claim/status") => {
            state.lock().claim_status.push(("gpu-claim".to_owned(), body.clone()));
            full(200, &body)
        }
        ("GET", "/api/v1/pods") if !is_watch => {
            assert!(query.contains("fieldSelector=status.phase%21%3DSucceeded%2Cstatus.phase%21%3DFailed"), "{query}");
            full(
                200,
                &list(
                    "Pod",
                    "v1",
                    "100",
                    &[
                        pod("running", "1", "n1", "2025-03-01T09:00:00Z"),
                        pod("small", "2", "", "2025-03-01T10:00:00Z"),
                        pod("big", "6", "", "2025-03-01T10:00:01Z"),
                        pod("broken", "lots", "", "2025-03-01T10:00:02Z"),
                        mangled(),
                    ],
                ),
            )
        }
        ("GET", "/apis/policy/v1/poddisruptionbudgets") if !is_watch => {
            full(200, &list("PodDisruptionBudget", "policy/v1", "100", &[]))
        }
        ("GET", _) => watch(&[], Duration::ZERO),
        ("POST", p) if p.ends_with("/binding") => {
            let pod = body["metadata"]["name"].as_str().unwrap().to_owned();
            let node = body["target"]["name"].as_str().unwrap().to_owned();
            let mut s = state.lock();
            if pod == "small" && s.conflicts == 0 {
                s.conflicts += 1;
                return full(
                    409,
                    &status_failure(
                        409,
                        "Conflict",
                        "Operation cannot be fulfilled on pods/binding \"small\": pod small is already assigned to node \"n9\"",
                    ),
                );
            }
            s.bindings.push((pod, node));
            full(201, &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}))
        }
        ("PATCH", p) if p.ends_with("/status") => {
            let name = p.trim_end_matches("/status").rsplit('/').next().unwrap().to_owned();
            state.lock().status_patches.push((name.clone(), body));
            full(200, &pod(&name, "6", "", "2025-03-01T10:00:01Z"))
        }
        ("POST", "/apis/events.k8s.io/v1/namespaces/default/events") => {
            let reason = body["reason"].as_str().unwrap_or("").to_owned();
            let note = body["note"].as_str().unwrap_or("").to_owned();
            state.lock().events.push((reason, note));
            full(201, &body)
        }
        _ => full(404, &status_failure(404, "NotFound", "not found")),
    }
}

#[test]
fn schedules_binds_reports_and_relists_on_a_mock_api_server() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let state = Arc::new(Mutex::new(ApiServer::default()));
    let run_state = state.clone();
    let run = rt.block_on(async move {
        let state = run_state;
        let client = mock_client(&state);
        let namespaces = NamespaceLabels::default();
        let registry = schedkit::kube::registry(&client, &namespaces).unwrap();
        let mut cfg: ProfileConfig = default_profile_config();
        cfg.scheduler_name = Some("schedkit".into());
        let handle = Handle::default();
        let profile = registry.build_profile(&cfg, &handle).unwrap();
        let scheduler = Scheduler::builder().handle(handle).profile(profile).parallelism(1).build();
        let shutdown = Shutdown::new();
        let opts = RunOptions { shutdown: shutdown.clone(), ..RunOptions::default() };
        let running = tokio::spawn(schedkit::kube::run(client, scheduler, opts));
        // Wait (up to 20 s) until both pods are bound, then stop.
        for _ in 0..200 {
            if state.lock().bindings.len() >= 2 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        shutdown.trigger();
        tokio::time::timeout(Duration::from_secs(10), running).await.expect("run stops on shutdown").unwrap().unwrap()
    });
    let s = state.lock();
    // `small` bound to n1 (the only node with 2 free cpu) after one 409; `big` waits
    // for n3, which only the list after the 410 has.
    assert_eq!(s.conflicts, 1);
    assert_eq!(s.bindings, [("small".to_owned(), "n1".to_owned()), ("big".to_owned(), "n3".to_owned())]);
    assert!(s.node_lists >= 2, "410 Expired did not re-list: {:?}", s.requests);
    assert_eq!((run.bound, run.bind_failed), (2, 1), "{run:?}");
    assert!(run.failed >= 1, "{run:?}");
    // `big` was reported as kube-scheduler reports it before n3 came.
    let (name, patch) = s.status_patches.iter().find(|(n, _)| n == "big").expect("status patch for big");
    assert_eq!(name, "big");
    let cond = &patch["status"]["conditions"][0];
    assert_eq!((cond["type"].as_str(), cond["status"].as_str()), (Some("PodScheduled"), Some("False")));
    assert_eq!(cond["reason"], "Unschedulable");
    let message = cond["message"].as_str().unwrap();
    assert!(message.starts_with("0/2 nodes are available:"), "{message}");
    assert!(message.contains("Insufficient cpu"), "{message}");
    assert!(s.events.iter().any(|(r, n)| r == "FailedScheduling" && n == message), "{:?}", s.events);
    assert!(
        s.events.iter().any(|(r, n)| r == "Scheduled" && n == "Successfully assigned default/big to n3"),
        "{:?}",
        s.events
    );
    // The malformed pods were skipped, never bound or reported; the one no decoding
    // takes did not fail its list (whose other pods were scheduled above).
    for bad in ["broken", "mangled"] {
        assert!(s.bindings.iter().all(|(p, _)| p != bad));
        assert!(s.status_patches.iter().all(|(p, _)| p != bad));
    }
}

/// Runs `scheduler` against the mock API server until `bindings` pods are bound
/// (at most 10 s), then shuts it down and returns its counters.
/// `max_concurrent_bindings` 0 keeps the runtime's default.
async fn run_until_bound(
    state: &Arc<Mutex<ApiServer>>,
    client: kube::Client,
    scheduler: Scheduler,
    max_concurrent_bindings: usize,
    bindings: usize,
) -> schedkit::kube::RunStats {
    let shutdown = Shutdown::new();
    let opts = RunOptions { shutdown: shutdown.clone(), max_concurrent_bindings, ..RunOptions::default() };
    let running = tokio::spawn(schedkit::kube::run(client, scheduler, opts));
    for _ in 0..200 {
        if state.lock().bindings.len() >= bindings {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    shutdown.trigger();
    tokio::time::timeout(Duration::from_secs(10), running).await.expect("run stops on shutdown").unwrap().unwrap()
}

/// Runs the DRA scene until a pod is bound or `wait` passes.
fn run_dra_scene(server: ApiServer, wait: Duration) -> (Arc<Mutex<ApiServer>>, schedkit::kube::RunStats) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let state = Arc::new(Mutex::new(ApiServer { dra: true, ..server }));
    let run_state = state.clone();
    let run = rt.block_on(async move {
        let state = run_state;
        let client = mock_client(&state);
        let registry = schedkit::kube::registry(&client, &NamespaceLabels::default()).unwrap();
        let mut cfg: ProfileConfig = default_profile_config();
        cfg.scheduler_name = Some("schedkit".into());
        // kube-scheduler enables DynamicResources by default since v1.34 (DRA GA).
        cfg.plugins
            .multi_point
            .enabled
            .push(schedkit::framework::PluginRef { name: "DynamicResources".into(), weight: None });
        let handle = Handle::default();
        handle.set_shared(Arc::new(schedkit::dra::DraStore::new()));
        let profile = registry.build_profile(&cfg, &handle).unwrap();
        let scheduler = Scheduler::builder().handle(handle).profile(profile).parallelism(1).build();
        let shutdown = Shutdown::new();
        let opts = RunOptions { shutdown: shutdown.clone(), ..RunOptions::default() };
        let running = tokio::spawn(schedkit::kube::run(client, scheduler, opts));
        let start = tokio::time::Instant::now();
        while state.lock().bindings.is_empty() && start.elapsed() < wait {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        shutdown.trigger();
        tokio::time::timeout(Duration::from_secs(10), running).await.expect("run stops on shutdown").unwrap().unwrap()
    });
    (state, run)
}

#[test]
fn dra_objects_are_watched_and_claim_status_is_written() {
    let (state, run) = run_dra_scene(ApiServer::default(), Duration::from_secs(20));
    let s = state.lock();
    // The GPU is on n2 only: the pod goes there, its claim allocated and reserved first.
    assert_eq!(s.bindings, [("trainer".to_owned(), "n2".to_owned())], "{:?}", s.requests);
    assert_eq!(run.bound, 1, "{run:?}");
    for kind in ["deviceclasses", "resourceslices", "resourceclaims"] {
        let listed = format!("GET /apis/resource.k8s.io/v1/{kind}?");
        assert!(s.requests.iter().any(|r| r.starts_with(&listed)), "{kind} not listed: {:?}", s.requests);
    }
    // PreBind (dynamicresources.go bindClaim): first an Update adding the
    // delete-protection finalizer, on the claim as listed (its resourceVersion, so a
    // concurrent write conflicts), without the allocation ...
    let [(name, update)] = s.claim_updates.as_slice() else { panic!("{:?}", s.requests) };
    assert_eq!(name, "gpu-claim");
    assert_eq!(update["metadata"]["resourceVersion"], "12");
    assert_eq!(update["metadata"]["finalizers"], json!(["resource.kubernetes.io/delete-protection"]));
    assert!(update["status"].get("allocation").is_none(), "{update}");
    // ... then UpdateStatus with allocation and reservedFor on the object that Update
    // returned (resourceVersion 13).
    let [(name, body)] = s.claim_status.as_slice() else { panic!("{:?}", s.requests) };
    assert_eq!(name, "gpu-claim");
    assert_eq!(body["metadata"]["resourceVersion"], "13");
    assert_eq!(body["metadata"]["finalizers"], json!(["resource.kubernetes.io/delete-protection"]));
    let results = &body["status"]["allocation"]["devices"]["results"];
    assert_eq!(results[0]["device"], "gpu-0");
    assert_eq!(results[0]["pool"], "n2");
    assert_eq!(results[0]["driver"], "gpu.example.com");
    assert_eq!(results[0]["request"], "gpu");
    let reserved = &body["status"]["reservedFor"];
    assert_eq!(reserved, &json!([{"resource": "pods", "name": "trainer", "uid": "uid-trainer"}]));
    // The request sequence: Update, UpdateStatus, then the binding (PreBind precedes Bind).
    let writes: Vec<&str> = s
        .requests
        .iter()
        .filter(|r| r.starts_with("PUT ") || r.contains("/binding"))
        .map(|r| r.split('?').next().unwrap())
        .collect();
    assert_eq!(
        writes,
        [
            "PUT /apis/resource.k8s.io/v1/namespaces/default/resourceclaims/gpu-claim",
            "PUT /apis/resource.k8s.io/v1/namespaces/default/resourceclaims/gpu-claim/status",
            "POST /api/v1/namespaces/default/pods/trainer/binding",
        ],
        "{:?}",
        s.requests
    );
}

/// A claim being deleted is refused (upstream `foreachPodResourceClaim`: `resourceclaim
/// "gpu-claim" is being deleted`): nothing is written to it and the pod stays pending.
#[test]
fn a_claim_being_deleted_is_neither_allocated_nor_bound() {
    let (state, run) =
        run_dra_scene(ApiServer { claim_deleting: true, ..ApiServer::default() }, Duration::from_millis(2500));
    let s = state.lock();
    assert!(s.requests.iter().any(|r| r.starts_with("GET /apis/resource.k8s.io/v1/resourceclaims?")));
    assert!(s.bindings.is_empty(), "{:?}", s.requests);
    assert_eq!(run.bound, 0, "{run:?}");
    assert!(s.claim_updates.is_empty() && s.claim_status.is_empty(), "{:?}", s.requests);
}

#[test]
fn bindings_run_on_their_own_tasks_within_the_limit() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let state = Arc::new(Mutex::new(ApiServer { slow_bind: true, ..ApiServer::default() }));
    let run_state = state.clone();
    let run = rt.block_on(async move {
        let state = run_state;
        let client = mock_client(&state);
        let registry = schedkit::kube::registry(&client, &NamespaceLabels::default()).unwrap();
        let mut cfg: ProfileConfig = default_profile_config();
        cfg.scheduler_name = Some("schedkit".into());
        let handle = Handle::default();
        let profile = registry.build_profile(&cfg, &handle).unwrap();
        let scheduler = Scheduler::builder().handle(handle).profile(profile).parallelism(1).build();
        run_until_bound(&state, client, scheduler, 2, 4).await
    });
    let s = state.lock();
    // Four 600 ms bindings, two at a time: the loop went on scheduling while the API
    // server answered, and never had more than the limit in flight.
    assert_eq!(s.bindings.len(), 4, "{:?}", s.requests);
    assert_eq!(s.max_in_flight, 2);
    assert_eq!(run.bound, 4, "{run:?}");
}

/// The pods whose pods/binding requests reached the API server, in arrival order.
fn binding_arrivals(s: &ApiServer) -> Vec<String> {
    s.requests
        .iter()
        .filter_map(|r| r.strip_prefix("POST /api/v1/namespaces/default/pods/"))
        .filter_map(|r| r.split_once("/binding").map(|(pod, _)| pod.to_owned()))
        .collect()
}

/// `o11`, `o10`, …: the twelve pods of the ordered scene in scheduling order,
/// `range` of them.
fn ordered_names(range: std::ops::Range<usize>) -> Vec<String> {
    listed_order(12, range)
}

/// The `n` pods of an ordered scene in the list's order, `range` of them.
fn listed_order(n: usize, range: std::ops::Range<usize>) -> Vec<String> {
    range.map(|i| format!("o{:02}", n - 1 - i)).collect()
}

/// Runs the `ordered` scene with `limit` binding cycles at once until `n` pods are
/// bound.
fn run_ordered(server: ApiServer, limit: usize) -> (Arc<Mutex<ApiServer>>, schedkit::kube::RunStats) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let n = server.ordered;
    let state = Arc::new(Mutex::new(server));
    let run_state = state.clone();
    let run = rt.block_on(async move {
        let state = run_state;
        let client = mock_client(&state);
        let registry = schedkit::kube::registry(&client, &NamespaceLabels::default()).unwrap();
        let mut cfg: ProfileConfig = default_profile_config();
        cfg.scheduler_name = Some("schedkit".into());
        let handle = Handle::default();
        let profile = registry.build_profile(&cfg, &handle).unwrap();
        let scheduler = Scheduler::builder().handle(handle).profile(profile).parallelism(1).build();
        run_until_bound(&state, client, scheduler, limit, n).await
    });
    (state, run)
}

/// Twelve pods, all queued before the first cycle, fewer than the limit: the loop
/// hands them to the binding tasks in one batch, whose requests are all in flight
/// together. They must reach the API server in the order the pods were scheduled
/// (the list's, `o11` first), not in any order the batch happened to be sent in.
#[test]
fn a_batch_of_bindings_reaches_the_api_server_in_scheduling_order() {
    let (state, run) = run_ordered(ApiServer { ordered: 12, ..ApiServer::default() }, 0);
    let s = state.lock();
    assert_eq!(binding_arrivals(&s), ordered_names(0..12), "{:?}", s.requests);
    assert_eq!(run.bound, 12, "{run:?}");
}

/// A list of 200 pods is decoded in batches, several at once on the blocking pool
/// (`kube/watch.rs`); the batches must still reach the queue in the list's order, so
/// the pods are scheduled, and bound one at a time, in that order.
#[test]
fn a_long_list_is_queued_in_its_order_though_decoded_in_parallel() {
    let (state, run) = run_ordered(ApiServer { ordered: 200, ..ApiServer::default() }, 1);
    let s = state.lock();
    assert_eq!(binding_arrivals(&s), listed_order(200, 0..200));
    assert_eq!(run.bound, 200, "{run:?}");
}

/// Twelve 600 ms bindings with a limit of four: one binding task may keep a whole
/// batch in flight, but never more bindings than the limit over all tasks. The
/// first two batches are the first eight pods scheduled, in order (the third may
/// be split between tasks once room frees up).
#[test]
fn batched_bindings_keep_the_limit_and_the_order() {
    let (state, run) = run_ordered(ApiServer { ordered: 12, slow_bind: true, ..ApiServer::default() }, 4);
    let s = state.lock();
    let arrivals = binding_arrivals(&s);
    assert_eq!(s.max_in_flight, 4, "{:?}", s.requests);
    assert_eq!(arrivals[..8], ordered_names(0..8), "{arrivals:?}");
    let (mut all, mut want) = (arrivals.clone(), ordered_names(0..12));
    all.sort();
    want.sort();
    assert_eq!(all, want);
    assert_eq!(run.bound, 12, "{run:?}");
}

#[test]
fn pod_groups_are_watched_and_a_gang_binds() {
    use schedkit::framework::{Feature, FeatureGates};
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let state = Arc::new(Mutex::new(ApiServer { gang: true, ..ApiServer::default() }));
    let run_state = state.clone();
    rt.block_on(async move {
        let state = run_state;
        let client = mock_client(&state);
        let registry = schedkit::kube::registry(&client, &NamespaceLabels::default()).unwrap();
        let gates = FeatureGates::default().with(Feature::GenericWorkload, true).with(Feature::GangScheduling, true);
        let mut cfg: ProfileConfig = default_profile_config();
        cfg.scheduler_name = Some("schedkit".into());
        schedkit::plugins::apply_feature_gates(&mut cfg.plugins, gates);
        let handle = Handle::default();
        handle.set_feature_gates(gates);
        let profile = registry.build_profile(&cfg, &handle).unwrap();
        let scheduler = Scheduler::builder().handle(handle).profile(profile).parallelism(1).build();
        run_until_bound(&state, client, scheduler, 0, 2).await
    });
    let s = state.lock();
    assert!(s.requests.iter().any(|r| r.starts_with("GET /apis/scheduling.k8s.io/v1alpha2/podgroups?")));
    let mut bound: Vec<&str> = s.bindings.iter().map(|(p, _)| p.as_str()).collect();
    bound.sort_unstable();
    assert_eq!(bound, ["w0", "w1"], "{:?}", s.requests);
}

/// A gang's pods wait at Permit; the one that completes the gang binds from the loop's
/// hand-over, the other is resumed after Permit. Both go through the binding tasks:
/// with one task and 600 ms bindings, never two bindings at once (a resumed binding
/// run on the scheduling thread would have overlapped the other).
#[test]
fn bindings_resumed_after_permit_use_the_binding_tasks() {
    use schedkit::framework::{Feature, FeatureGates};
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let state = Arc::new(Mutex::new(ApiServer { gang: true, slow_bind: true, ..ApiServer::default() }));
    let run_state = state.clone();
    let run = rt.block_on(async move {
        let state = run_state;
        let client = mock_client(&state);
        let registry = schedkit::kube::registry(&client, &NamespaceLabels::default()).unwrap();
        let gates = FeatureGates::default().with(Feature::GenericWorkload, true).with(Feature::GangScheduling, true);
        let mut cfg: ProfileConfig = default_profile_config();
        cfg.scheduler_name = Some("schedkit".into());
        schedkit::plugins::apply_feature_gates(&mut cfg.plugins, gates);
        let handle = Handle::default();
        handle.set_feature_gates(gates);
        let profile = registry.build_profile(&cfg, &handle).unwrap();
        let scheduler = Scheduler::builder().handle(handle).profile(profile).parallelism(1).build();
        run_until_bound(&state, client, scheduler, 1, 2).await
    });
    let s = state.lock();
    let mut bound: Vec<&str> = s.bindings.iter().map(|(p, _)| p.as_str()).collect();
    bound.sort_unstable();
    assert_eq!(bound, ["w0", "w1"], "{:?}", s.requests);
    assert_eq!(s.max_in_flight, 1, "a binding ran outside the binding tasks");
    assert_eq!(run.bound, 2, "{run:?}");
}

#[test]
fn deploy_configmap_config_builds_with_the_kube_registry() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/deploy/configmap.yaml");
    let cm: Value = serde_norway::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let text = cm["data"]["scheduler-config.yaml"].as_str().unwrap();
    let file = schedkit::config::KubeSchedulerConfiguration::from_yaml(text).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let _guard = rt.enter();
    let service = tower::service_fn(|_req: http::Request<kube::client::Body>| async {
        Ok::<_, Infallible>(full(404, &status_failure(404, "NotFound", "not found")))
    });
    let client = kube::Client::new(service, "default");
    let registry = schedkit::kube::registry(&client, &NamespaceLabels::default()).unwrap();
    let built = file.build(&registry, &Handle::default()).unwrap();
    assert_eq!(built.profiles[0].name(), "schedkit");
    assert_eq!(built.profiles[0].bind_plugins(), ["DefaultBinder"]);
    let le = schedkit::kube::LeaderElection::from_config(&built.defaulted.leader_election, "me").unwrap().unwrap();
    assert_eq!((le.namespace.as_str(), le.name.as_str()), ("kube-system", "schedkit"));
}

/// A fixture as the API server's JSON text.
fn fixture_json(path: &str) -> String {
    let full = format!("{}/../tests/fixtures/{path}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&full).unwrap();
    if std::path::Path::new(path).extension().is_some_and(|e| e.eq_ignore_ascii_case("json")) {
        return text;
    }
    let value: Value = serde_norway::from_str(&text).unwrap();
    serde_json::to_string(&value).unwrap()
}

/// Converts a Pod or Node decoded fully and leanly, every way the conversions run, and
/// asserts equal objects, equal ignored fields (all of them) and equal strict refusals.
fn assert_lean_converts_as_full<T>(what: &str, full: &T::K8s, lean: &T::K8s)
where
    T: schedkit::k8s::K8sConvert + PartialEq + std::fmt::Debug,
{
    use schedkit::manifest::LoadOptions;
    for opts in [LoadOptions::default(), LoadOptions::strict()] {
        let a = schedkit::k8s::from_k8s::<T>(full, opts);
        let b = schedkit::k8s::from_k8s::<T>(lean, opts);
        assert_eq!(a, b, "{what}, strict {}", opts.strict);
        let a = schedkit::k8s::from_k8s_via_manifest::<T>(full, opts);
        let b = schedkit::k8s::from_k8s_via_manifest::<T>(lean, opts);
        assert_eq!(a, b, "{what} through the manifest loader, strict {}", opts.strict);
    }
}

fn lean_pod_matches(what: &str, text: &str) {
    use schedkit::k8s::k8s_openapi::api::core::v1 as api;
    let full: api::Pod = serde_json::from_str(text).unwrap();
    let lean = schedkit::kube::lean_pod_from_json(text).unwrap();
    assert_eq!(full.metadata.resource_version, lean.metadata.resource_version, "{what}");
    assert_lean_converts_as_full::<schedkit::model::Pod>(what, &full, &lean);
}

fn lean_node_matches(what: &str, text: &str) {
    use schedkit::k8s::k8s_openapi::api::core::v1 as api;
    let full: api::Node = serde_json::from_str(text).unwrap();
    let lean = schedkit::kube::lean_node_from_json(text).unwrap();
    assert_eq!(full.metadata.resource_version, lean.metadata.resource_version, "{what}");
    assert_lean_converts_as_full::<schedkit::model::Node>(what, &full, &lean);
}

/// The watches decode Pods and Nodes leanly (fields the conversion only tests for
/// presence are skipped): on real manifests (managedFields, status, probes,
/// hostNetwork, limits only) the converted objects and every ignored field are those
/// of k8s-openapi's full decode.
#[test]
fn lean_decode_converts_as_the_full_decode() {
    for pod in ["real/pod-gpu-limits-only.yaml", "real/pod-running-hostnetwork.json", "k8s/pod-web-pending.yaml"] {
        lean_pod_matches(pod, &fixture_json(pod));
    }
    let list: Value = serde_json::from_str(&fixture_json("real/pods-list.json")).unwrap();
    for (i, item) in list["items"].as_array().unwrap().iter().enumerate() {
        lean_pod_matches(&format!("pods-list.json item {i}"), &item.to_string());
    }
    for node in ["real/node-gpu.yaml", "real/node-no-allocatable.json"] {
        lean_node_matches(node, &fixture_json(node));
    }
    lean_pod_matches("a pending pod", &pod("p", "500m", "", "2025-03-01T10:00:00Z").to_string());
    lean_pod_matches("an assigned pod", &pod("q", "1", "n1", "2025-03-01T10:00:00Z").to_string());
    lean_node_matches("a kubelet's node", &node("n1", "4").to_string());
}

/// Every pruned field, with a value (reported, as the full decode reports it) and as
/// `null` (absent, as the full decode has it); fields pruned next to fields that
/// matter (`hostNetwork` defaulting host ports, a PVC volume, `status.resize`).
#[test]
fn lean_decode_keeps_presence_and_nulls_of_pruned_fields() {
    let container = json!({
        "name": "c", "image": "img", "args": ["a"], "command": ["b"], "env": [{"name": "X", "value": "1"}],
        "envFrom": [{"configMapRef": {"name": "cm"}}], "imagePullPolicy": "Always",
        "lifecycle": {"preStop": {"exec": {"command": ["x"]}}}, "livenessProbe": {"tcpSocket": {"port": 80}},
        "readinessProbe": {"httpGet": {"port": 8080, "path": "/"}}, "resizePolicy": [{"resourceName": "cpu", "restartPolicy": "NotRequired"}],
        "securityContext": {"runAsUser": 1000, "privileged": false}, "startupProbe": {"exec": {"command": ["y"]}},
        "stdin": true, "stdinOnce": false, "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File", "tty": false, "volumeDevices": [{"name": "d", "devicePath": "/dev/x"}],
        "volumeMounts": [{"name": "data", "mountPath": "/data"}], "workingDir": "/",
        "ports": [{"containerPort": 80, "name": "http"}],
        "resources": {"limits": {"cpu": "2"}, "claims": [{"name": "gpu"}]}
    });
    let mut nulls = container.clone();
    for (k, v) in nulls.as_object_mut().unwrap() {
        if !["name", "image", "ports", "resources"].contains(&k.as_str()) {
            *v = Value::Null;
        }
    }
    let pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns", "uid": "u", "resourceVersion": "7", "generation": 3,
                     "labels": {"app": "a"}, "annotations": {"k": "v"}, "finalizers": ["f"],
                     "creationTimestamp": "2025-01-01T00:00:00Z",
                     "managedFields": [{"manager": "kubectl", "operation": "Update", "fieldsV1": {"f:spec": {}}}],
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "r", "uid": "o"}]},
        "spec": {
            "containers": [container, nulls.clone()], "initContainers": [nulls],
            "activeDeadlineSeconds": 5, "automountServiceAccountToken": false, "dnsConfig": {"nameservers": ["1.1.1.1"]},
            "dnsPolicy": "ClusterFirst", "enableServiceLinks": true, "ephemeralContainers": [{"name": "e"}],
            "hostAliases": [{"ip": "1.2.3.4", "hostnames": ["h"]}], "hostIPC": false, "hostNetwork": true,
            "hostPID": null, "hostUsers": true, "hostname": "h", "imagePullSecrets": [{"name": "s"}],
            "os": {"name": "linux"}, "priorityClassName": "high", "readinessGates": [{"conditionType": "x"}],
            "restartPolicy": "Always", "runtimeClassName": null, "securityContext": {"fsGroup": 2000},
            "serviceAccount": "sa", "serviceAccountName": "sa", "setHostnameAsFQDN": false,
            "shareProcessNamespace": false, "subdomain": "s", "terminationGracePeriodSeconds": 30,
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}],
            "schedulerName": "schedkit", "priority": 1000
        },
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
                   "containerStatuses": [{"name": "c", "ready": true, "restartCount": 0, "image": "img", "imageID": "",
                                          "allocatedResources": {"cpu": "2"}}],
                   "hostIP": "10.0.0.1", "podIP": null, "qosClass": "Burstable", "resize": "InProgress",
                   "startTime": "2025-01-01T00:00:05Z", "observedGeneration": 3}
    });
    lean_pod_matches("every pruned pod field", &pod.to_string());
    // The pruning happened: contents skipped, presence and nulls kept, metadata dropped.
    let lean = schedkit::kube::lean_pod_from_json(&pod.to_string()).unwrap();
    let (spec, status) = (lean.spec.as_ref().unwrap(), lean.status.as_ref().unwrap());
    assert_eq!(spec.containers[0].command, Some(vec![]));
    assert_eq!(spec.containers[1].command, None);
    assert_eq!(spec.containers[0].ports.as_ref().unwrap()[0].name.as_deref(), Some("http"));
    assert_eq!(spec.dns_policy.as_deref(), Some(""));
    assert_eq!((spec.host_network, spec.host_pid, spec.runtime_class_name.as_ref()), (Some(true), None, None));
    assert_eq!(spec.volumes.as_ref().unwrap().len(), 1);
    assert_eq!(status.conditions, Some(vec![]));
    assert_eq!(status.resize.as_deref(), Some(""));
    assert_eq!((lean.metadata.managed_fields.as_ref(), lean.metadata.generation), (None, None));
    assert_eq!(lean.metadata.resource_version.as_deref(), Some("7"));
    let node = json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "n", "uid": "nu", "resourceVersion": "9", "labels": {"zone": "a"}},
        "spec": {"podCIDR": "10.0.0.0/24", "podCIDRs": ["10.0.0.0/24"], "providerID": "aws:///x", "externalID": null,
                 "taints": [{"key": "k", "effect": "NoSchedule", "timeAdded": "2025-01-01T00:00:00Z"}],
                 "unschedulable": false},
        "status": {"capacity": {"cpu": "4"}, "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}],
                   "conditions": [{"type": "Ready", "status": "True"}], "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
                   "nodeInfo": {"kubeletVersion": "v1.34.0", "machineID": "", "systemUUID": "", "bootID": "",
                                "kernelVersion": "", "osImage": "", "containerRuntimeVersion": "", "kubeProxyVersion": "",
                                "operatingSystem": "linux", "architecture": "amd64"},
                   "images": [{"names": ["img"], "sizeBytes": 1000}], "phase": null,
                   "volumesInUse": ["v"], "features": {"supplementalGroupsPolicy": true}}
    });
    lean_node_matches("every pruned node field", &node.to_string());
}

/// `schedkit::kube::watched_pod_from_json` and its Node twin.
type WatchedFromJson<T> =
    fn(&str, schedkit::manifest::LoadOptions) -> Result<(bool, schedkit::manifest::Loaded<T>), String>;

/// The watches' decoding of an object's text (straight into the model, or the lean
/// way) against k8s-openapi's full decode and `from_k8s`, for every load mode: the same
/// object, the same fields that matter for scheduling, the same refusals. Returns
/// whether the text was decoded straight into the model (false when refused).
fn watched_matches<T>(what: &str, text: &str, watched: WatchedFromJson<T>) -> bool
where
    T: schedkit::k8s::K8sConvert + PartialEq + std::fmt::Debug,
    T::K8s: serde::de::DeserializeOwned,
{
    let full: T::K8s = serde_json::from_str(text).unwrap();
    let mut direct = Vec::new();
    for opts in load_modes() {
        let want = schedkit::k8s::from_k8s::<T>(&full, opts).map_err(|e| e.to_string());
        let got = watched(text, opts).map(|(d, l)| {
            direct.push(d);
            l
        });
        assert_eq!(got, want.map(relevant), "{what}, {opts:?}");
    }
    !direct.is_empty() && direct.iter().all(|d| *d)
}

fn watched_pod_matches(what: &str, text: &str) -> bool {
    watched_matches::<schedkit::model::Pod>(what, text, schedkit::kube::watched_pod_from_json)
}

fn watched_node_matches(what: &str, text: &str) -> bool {
    watched_matches::<schedkit::model::Node>(what, text, schedkit::kube::watched_node_from_json)
}

/// Default, strict, and with PodLevelResources on (its defaulting runs after decoding).
fn load_modes() -> Vec<schedkit::manifest::LoadOptions> {
    use schedkit::framework::{Feature, FeatureGates};
    use schedkit::manifest::LoadOptions;
    let mut gates = FeatureGates::default();
    gates.set_enabled(Feature::PodLevelResources, true);
    vec![LoadOptions::default(), LoadOptions::strict(), LoadOptions { strict: false, feature_gates: gates }]
}

/// What the watches keep of a conversion: the fields that matter for scheduling.
fn relevant<T>(mut l: schedkit::manifest::Loaded<T>) -> schedkit::manifest::Loaded<T> {
    l.ignored.retain(|f| f.affects_scheduling);
    l
}

/// Real manifests and the fixtures of these tests: the watches' direct decoding gives
/// what k8s-openapi's decoding and conversion give, and takes the ordinary objects
/// (pending and running pods with probes, mounts and a service account volume; a
/// kubelet's node with conditions, images and addresses) itself.
#[test]
fn watched_objects_convert_as_the_full_decode() {
    let mut direct = 0;
    for pod in ["real/pod-gpu-limits-only.yaml", "real/pod-running-hostnetwork.json", "k8s/pod-web-pending.yaml"] {
        direct += usize::from(watched_pod_matches(pod, &fixture_json(pod)));
    }
    let list: Value = serde_json::from_str(&fixture_json("real/pods-list.json")).unwrap();
    for (i, item) in list["items"].as_array().unwrap().iter().enumerate() {
        direct += usize::from(watched_pod_matches(&format!("pods-list.json item {i}"), &item.to_string()));
    }
    for node in ["real/node-gpu.yaml", "real/node-no-allocatable.json"] {
        direct += usize::from(watched_node_matches(node, &fixture_json(node)));
    }
    assert!(watched_pod_matches("a pending pod", &pod("p", "500m", "", "2025-03-01T10:00:00Z").to_string()));
    assert!(watched_pod_matches("an assigned pod", &pod("q", "1", "n1", "2025-03-01T10:00:00Z").to_string()));
    assert!(watched_node_matches("a kubelet's node", &node("n1", "4").to_string()));
    assert!(direct >= 4, "only {direct} of the real manifests were decoded directly");
}

/// Variations of one pod, each either decoded directly or handed to the lean path, and
/// equal to the full decode either way; the ones that must hand over do.
#[test]
fn watched_pods_hand_over_what_the_direct_decoding_does_not_decide() {
    let base = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns", "uid": "u", "resourceVersion": "7",
                     "labels": {"app": "a", "tier": "web"}, "annotations": {"note": "say \"hi\"\n"},
                     "creationTimestamp": "2025-01-01T00:00:00Z", "generateName": "p-",
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "r", "uid": "o"}]},
        "spec": {
            "containers": [{"name": "c", "image": "img",
                            "resources": {"requests": {"memory": "1Gi", "cpu": "250m"},
                                          "limits": {"nvidia.com/gpu": "1", "cpu": "1", "ephemeral-storage": "1Gi"}},
                            "ports": [{"containerPort": 8080, "protocol": "TCP", "name": "http"}],
                            "volumeMounts": [{"name": "token", "mountPath": "/var/run/secrets"}]}],
            "initContainers": [{"name": "init", "image": "busybox", "restartPolicy": "Always",
                                "resources": {"limits": {"cpu": "100m"}}}],
            "nodeSelector": {"kubernetes.io/os": "linux"},
            "tolerations": [{"operator": "Exists", "effect": "NoSchedule"},
                            {"key": "k", "operator": "Equal", "value": "v", "effect": "NoExecute", "tolerationSeconds": 60}],
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]}]}}},
            "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
                                           "labelSelector": {"matchLabels": {"app": "a"}}}],
            "schedulingGates": [{"name": "wait"}], "overhead": {"cpu": "10m"},
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpu-template"}],
            "volumes": [{"name": "token", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}},
                        {"name": "cache", "emptyDir": {}, "persistentVolumeClaim": null}],
            "schedulerName": "schedkit", "priority": 100, "preemptionPolicy": "Never",
            "dnsPolicy": "ClusterFirst", "restartPolicy": "Always", "serviceAccountName": "default",
            "terminationGracePeriodSeconds": 30, "enableServiceLinks": true
        },
        "status": {"phase": "Pending", "qosClass": "Burstable", "nominatedNodeName": "n2",
                   "conditions": [{"type": "PodScheduled", "status": "False"}]}
    });
    assert!(watched_pod_matches("the base pod", &base.to_string()));

    let with = |path: &[&str], value: Value| {
        let mut v = base.clone();
        let (last, parents) = path.split_last().unwrap();
        let mut at = &mut v;
        for p in parents {
            at = match p.parse::<usize>() {
                Ok(i) => &mut at[i],
                Err(_) => &mut at[*p],
            };
        }
        at[*last] = value;
        v.to_string()
    };
    // Decoded directly: nulls of optional fields, escapes, a repeated key.
    for (what, text) in [
        ("null labels", with(&["metadata", "labels"], Value::Null)),
        ("null status", with(&["status"], Value::Null)),
        ("null tolerations", with(&["spec", "tolerations"], Value::Null)),
        ("an escaped name", with(&["metadata", "name"], json!("p\u{e9}\t"))),
        ("host network", with(&["spec", "hostNetwork"], json!(true))),
        ("a claim on a container", with(&["spec", "containers", "0", "resources", "claims"], json!([{"name": "gpu"}]))),
    ] {
        assert!(watched_pod_matches(what, &text), "{what} should be decoded directly");
    }
    let repeated = base.to_string().replacen(r#""app":"a""#, r#""app":"x","app":"a""#, 1);
    assert!(watched_pod_matches("a repeated label", &repeated));
    // Handed over: what matters and is not modeled, what the conversion refuses, what
    // this decoding does not know; equal to the full decode all the same.
    for (what, text) in [
        ("a PVC volume", with(&["spec", "volumes", "1", "persistentVolumeClaim"], json!({"claimName": "data"}))),
        ("status.resize", with(&["status", "resize"], json!("InProgress"))),
        ("pod-level resources", with(&["spec", "resources"], json!({"requests": {"cpu": "1"}}))),
        ("an unknown spec field", with(&["spec", "futureField"], json!(1))),
        ("an unknown container field", with(&["spec", "containers", "0", "futureField"], json!(1))),
        ("a bad quantity", with(&["spec", "containers", "0", "resources", "requests", "cpu"], json!("lots"))),
        ("an unknown toleration operator", with(&["spec", "tolerations", "0", "operator"], json!("Sometimes"))),
        ("a timestamp in year 0", with(&["metadata", "creationTimestamp"], json!("0000-06-01T00:00:00Z"))),
    ] {
        assert!(!watched_pod_matches(what, &text), "{what} should go the lean way");
    }
    // Errors are the lean path's: a pod k8s-openapi cannot decode is refused whole.
    let bad = with(&["spec", "priority"], json!("high"));
    assert!(schedkit::kube::watched_pod_from_json(&bad, schedkit::manifest::LoadOptions::default()).is_err());
    let wrong_kind = with(&["kind"], json!("Node"));
    assert!(schedkit::kube::watched_pod_from_json(&wrong_kind, schedkit::manifest::LoadOptions::default()).is_err());
}

/// A node with taints and without allocatable (defaulted from capacity) is decoded
/// directly; a taint with a bad effect hands over.
#[test]
fn watched_nodes_default_and_hand_over_as_the_full_decode() {
    let n = json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "n", "uid": "nu", "resourceVersion": "9", "labels": {"zone": "a"}},
        "spec": {"taints": [{"key": "gpu", "value": "true", "effect": "NoSchedule", "timeAdded": "2025-01-01T00:00:00Z"}],
                 "unschedulable": true, "providerID": "aws:///x"},
        "status": {"capacity": {"memory": "8Gi", "cpu": "4"}, "images": [{"names": ["a", "b"], "sizeBytes": 5}, {}],
                   "conditions": [{"type": "Ready", "status": "True"}]}
    });
    assert!(watched_node_matches("a tainted node", &n.to_string()));
    let mut bad = n.clone();
    bad["spec"]["taints"][0]["effect"] = json!("Sometimes");
    assert!(!watched_node_matches("a bad taint effect", &bad.to_string()));
    let mut newer = n;
    newer["status"]["futureField"] = json!({});
    assert!(!watched_node_matches("an unknown status field", &newer.to_string()));
}

/// A watch event as the API server writes it (`type` before `object`): the object is
/// decoded directly or the lean way, and kube's watcher gets its resource version from
/// either. (With `object` first, serde buffers the object and the text is not kept: the
/// event fails to decode. The API server encodes `metav1.WatchEvent` in field order,
/// `type` first.)
#[test]
fn watch_events_keep_the_resource_version_either_way() {
    let p = pod("w", "100m", "", "2025-03-01T10:00:00Z");
    let line = |ty: &str, obj: &Value| format!(r#"{{"type":"{ty}","object":{obj}}}"#);
    assert_eq!(schedkit::kube::watched_pod_event_from_json(&line("ADDED", &p)), Ok((true, Some("95".to_owned()))));
    let mut pvc = p.clone();
    pvc["spec"]["volumes"] = json!([{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]);
    pvc["metadata"]["resourceVersion"] = json!("96");
    assert_eq!(
        schedkit::kube::watched_pod_event_from_json(&line("MODIFIED", &pvc)),
        Ok((false, Some("96".to_owned())))
    );
    let object_first = format!(r#"{{"object":{p},"type":"ADDED"}}"#);
    assert!(schedkit::kube::watched_pod_event_from_json(&object_first).is_err());
}

/// A decoded pod's or node's lists hold no spare room: they live as long as the pod is
/// queued or the node cached, and collecting a one-container pod's containers through
/// an `Option` kept room for four (2 KB of a queued pod's 3.9 KB). Both decodings: the
/// watches' direct one and k8s-openapi's conversion.
#[test]
fn decoded_lists_are_as_long_as_they_hold() {
    use schedkit::manifest::LoadOptions;
    use schedkit::model::{Node, Pod};
    let text = pod("p", "500m", "", "2025-03-01T10:00:00Z").to_string();
    let (direct, watched) = schedkit::kube::watched_pod_from_json(&text, LoadOptions::default()).unwrap();
    assert!(direct, "an ordinary pending pod is decoded directly");
    let full: schedkit::k8s::k8s_openapi::api::core::v1::Pod = serde_json::from_str(&text).unwrap();
    let converted = Pod::try_from(&full).unwrap();
    for (how, p) in [("watched", &watched.object), ("converted", &converted)] {
        let spec = &p.spec;
        assert_eq!((spec.containers.len(), spec.containers.capacity()), (1, 1), "{how}: containers");
        assert_eq!(spec.tolerations.capacity(), spec.tolerations.len(), "{how}: tolerations");
        assert!(!spec.tolerations.is_empty(), "{how}: the fixture pod tolerates not-ready nodes");
    }
    let mut tainted = node("n1", "4");
    tainted["spec"] = json!({"taints": [{"key": "gpu", "effect": "NoSchedule"}]});
    let text = tainted.to_string();
    let (_, watched) = schedkit::kube::watched_node_from_json(&text, LoadOptions::default()).unwrap();
    let full: schedkit::k8s::k8s_openapi::api::core::v1::Node = serde_json::from_str(&text).unwrap();
    let converted = Node::try_from(&full).unwrap();
    for (how, n) in [("watched", &watched.object), ("converted", &converted)] {
        assert_eq!((n.spec.taints.len(), n.spec.taints.capacity()), (1, 1), "{how}: taints");
    }
}
