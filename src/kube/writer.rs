//! What the runtime writes to the API server: bindings (pods/binding), evictions
//! (pods/eviction), the PodScheduled condition and `status.nominatedNodeName`, and
//! Events, as kube-scheduler writes them.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod as K8sPod;
use kube::api::{Api, EvictParams, Patch, PatchParams};

use super::events::{Pending, Recorder};

use crate::framework::Evictor;
use crate::model::Pod;
use crate::plugins::default_binder::Binder;
use crate::snapshot::PodInfo;

/// Binds through the pods/binding subresource (upstream `DefaultBinder.Bind`,
/// `pkg/scheduler/framework/plugins/defaultbinder/default_binder.go`). Under
/// [`run`](super::run) the binding tasks send its bindings themselves, many in
/// flight at once (it is the DefaultBinder's [`Binder::delegate`]); called as a
/// plain [`Binder`] it blocks its thread until the API server answers. A conflict or
/// a missing pod is an `Err`, so the binding cycle unreserves the pod, the cache
/// forgets it and the queue retries it (a deleted pod then leaves with its watch
/// event).
#[derive(Clone)]
pub struct KubeBinder {
    client: kube::Client,
    rt: tokio::runtime::Handle,
}

impl std::fmt::Debug for KubeBinder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubeBinder").finish_non_exhaustive()
    }
}

impl KubeBinder {
    /// Binds with `client` on the runtime `rt` (call from a thread that is not one of
    /// `rt`'s async workers, as the runtime's scheduling thread is not).
    pub fn new(client: kube::Client, rt: tokio::runtime::Handle) -> Self {
        KubeBinder { client, rt }
    }
}

/// The pods API of a pod's namespace (`default` when empty).
fn pods(client: &kube::Client, namespace: &str) -> Api<K8sPod> {
    Api::namespaced(client.clone(), if namespace.is_empty() { "default" } else { namespace })
}

/// Appends `s` as a JSON string, byte for byte as `serde_json` writes it: quoted as is
/// when nothing needs escaping (checked without an early exit, so it vectorizes),
/// through `serde_json` otherwise. The requests write their fixed keys as literal
/// text and only their fields through here: about half of what serializing a typed
/// struct cost, most of it spent escaping the fixed keys.
pub(super) fn json_str(buf: &mut Vec<u8>, s: &str) {
    let escapes = s.bytes().fold(0u8, |esc, b| esc | u8::from(b < 0x20) | u8::from(b == b'"') | u8::from(b == b'\\'));
    if escapes == 0 {
        buf.reserve(s.len() + 2);
        buf.push(b'"');
        buf.extend_from_slice(s.as_bytes());
        buf.push(b'"');
    } else if let Err(e) = serde_json::to_writer(&mut *buf, s) {
        // Writing to a Vec cannot fail.
        log::error!("writing a JSON string: {e}");
    }
}

/// Sends `req` and reads the answer to its end, keeping only whether it succeeded:
/// kube's `request_text` with the same errors (a 4xx or 5xx is `Error::Api` with the
/// API server's Status, or one made from the text; a body that is not UTF-8 is
/// `Error::FromUtf8`), without copying a successful answer into a `String` that
/// nobody reads (the binding's Status, the created Event's echo).
pub(super) async fn send_for_status(client: &kube::Client, req: http::Request<Vec<u8>>) -> Result<(), kube::Error> {
    let res = client.send(req.map(kube::client::Body::from)).await?;
    let status = res.status();
    let body = res.into_body().collect_bytes().await?;
    let failed = status.is_client_error() || status.is_server_error();
    if !failed && std::str::from_utf8(&body).is_ok() {
        return Ok(());
    }
    let text = String::from_utf8(body.to_vec()).map_err(kube::Error::FromUtf8)?;
    let status = serde_json::from_str::<kube::core::Status>(&text).unwrap_or_else(|_| {
        kube::core::Status::failure(text.trim(), "Failed to parse error data").with_code(status.as_u16())
    });
    Err(kube::Error::Api(status.boxed()))
}

impl KubeBinder {
    /// The pods/binding POST for `pod` onto `node`. Written directly: the body (a `v1`
    /// Binding with the pod's name, namespace and uid, target the Node) from the
    /// pod's borrowed fields, the path in one string (an `Api` would erase its
    /// resource type into five strings on every bind, and a typed Binding would copy
    /// each field).
    fn request(pod: &Pod, node: &str) -> Result<http::Request<Vec<u8>>, String> {
        let m = &pod.metadata;
        if m.name.is_empty() || m.name.contains('/') {
            return Err(format!("binding {} to {node}: invalid pod name {:?}", pod.key(), m.name));
        }
        let ns = if m.namespace.is_empty() { "default" } else { m.namespace.as_str() };
        // Room for the whole body up front (the fixed part is under 140 bytes).
        let mut body = Vec::with_capacity(140 + m.name.len() + m.namespace.len() + m.uid.len() + node.len());
        body.extend_from_slice(br#"{"apiVersion":"v1","kind":"Binding","metadata":{"name":"#);
        json_str(&mut body, &m.name);
        body.extend_from_slice(br#","namespace":"#);
        json_str(&mut body, &m.namespace);
        body.extend_from_slice(br#","uid":"#);
        json_str(&mut body, &m.uid);
        body.extend_from_slice(br#"},"target":{"apiVersion":"v1","kind":"Node","name":"#);
        json_str(&mut body, node);
        body.extend_from_slice(b"}}");
        // The path pushed piece by piece: `format!` cost as much again.
        let mut path = String::with_capacity(40 + ns.len() + m.name.len());
        for part in ["/api/v1/namespaces/", ns, "/pods/", &m.name, "/binding"] {
            path.push_str(part);
        }
        http::Request::post(path)
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(body)
            .map_err(|e| format!("binding {} to {node}: {}", pod.key(), kube::Error::HttpError(e)))
    }

    /// Posts the Binding and waits for the answer (on any task): the API server
    /// answers with a Status, of which only the HTTP code matters (the body is not
    /// parsed). The binding tasks
    /// of [`run`](super::run) call this for many pods at once (the binder is their
    /// [`Binder::delegate`]), so one wake-up carries a batch of bindings to the
    /// client and back.
    pub(super) async fn send(&self, pod: &Pod, node: &str) -> Result<(), String> {
        let req = Self::request(pod, node)?;
        send_for_status(&self.client, req).await.map_err(|e| format!("binding {} to {node}: {e}", pod.key()))
    }
}

impl Binder for KubeBinder {
    fn bind(&self, pod: &Pod, node: &str) -> Result<(), String> {
        self.rt.block_on(self.send(pod, node))
    }
    fn delegate(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
}

/// Evicts preemption victims through the Eviction API (pods/eviction), which honours
/// PodDisruptionBudgets on the API server's side. (Upstream kube-scheduler deletes
/// victims after adding a DisruptionTarget condition instead, so it may exceed a
/// budget as a last resort; with this evictor the API server refuses such an eviction
/// with 429 and preemption is retried.)
#[derive(Clone)]
pub struct KubeEvictor {
    client: kube::Client,
    rt: tokio::runtime::Handle,
}

impl std::fmt::Debug for KubeEvictor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubeEvictor").finish_non_exhaustive()
    }
}

impl KubeEvictor {
    /// Evicts with `client` on the runtime `rt`.
    pub fn new(client: kube::Client, rt: tokio::runtime::Handle) -> Self {
        KubeEvictor { client, rt }
    }
}

impl Evictor for KubeEvictor {
    fn evict(&self, preemptor: &PodInfo, node: &str, victim: &PodInfo) -> Result<(), String> {
        let m = &victim.pod.metadata;
        let api = pods(&self.client, &m.namespace);
        self.rt
            .block_on(api.evict(&m.name, &EvictParams::default()))
            .map(drop)
            .map_err(|e| format!("evicting {} from {node} for {}: {e}", victim.pod.key(), preemptor.pod.key()))
    }
}

/// Reports outcomes: the condition, the nomination and Events. The reporting threads
/// collect them ([`Reporting::bound`], [`Reporting::failed`]) and hand them over in
/// batches ([`Reporting::send`]) to one publishing task ([`super::events::publish`]),
/// which sends them; a batch wakes that task once. The reporting threads never wait
/// for the API server.
#[derive(Clone)]
pub(super) struct Reporting {
    out: tokio::sync::mpsc::UnboundedSender<Vec<Outgoing>>,
}

/// What the publishing task sends for the reporting threads.
pub(super) enum Outgoing {
    /// An Event.
    Event(Pending),
    /// A status patch of the pod `name` in `namespace`.
    Status { namespace: String, name: String, status: StatusPatch },
}

/// The `status` of a failed attempt's patch: PodScheduled=False, and the nomination
/// when there is one. Typed, its fields in the order a `serde_json::Value` (sorted
/// keys) wrote them, so the body is the same JSON text as before.
#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct StatusPatch {
    conditions: [Condition; 1],
    #[serde(skip_serializing_if = "Option::is_none")]
    nominated_node_name: Option<String>,
}

#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct Condition {
    /// Always `null`.
    last_probe_time: (),
    last_transition_time: String,
    message: String,
    reason: &'static str,
    status: &'static str,
    #[serde(rename = "type")]
    type_: &'static str,
}

/// The whole patch body: `{"status": ...}`.
#[derive(Debug, serde::Serialize)]
struct PodStatusPatch {
    status: StatusPatch,
}

impl Reporting {
    /// Starts the publishing task on `rt`; it ends when the last clone is dropped and
    /// the batches handed over are sent.
    pub(super) fn new(client: kube::Client, scheduler_name: &str, rt: &tokio::runtime::Handle) -> Self {
        let (out, rx) = tokio::sync::mpsc::unbounded_channel();
        rt.spawn(super::events::publish(client, Arc::new(Recorder::new(scheduler_name)), rx));
        Reporting { out }
    }

    /// Hands a batch over to the publishing task (nothing when it is empty).
    pub(super) fn send(&self, batch: Vec<Outgoing>) {
        if !batch.is_empty() && self.out.send(batch).is_err() {
            log::warn!("the event publishing task has stopped; events and status updates are lost");
        }
    }

    fn event(
        out: &mut Vec<Outgoing>,
        pod: &Pod,
        warning: bool,
        reason: &'static str,
        action: &'static str,
        note: String,
    ) {
        let m = &pod.metadata;
        let namespace = if m.namespace.is_empty() { "default".to_owned() } else { m.namespace.clone() };
        out.push(Outgoing::Event(Pending {
            warning,
            reason,
            action,
            note,
            namespace,
            name: m.name.clone(),
            uid: m.uid.clone(),
        }));
    }

    /// `Successfully assigned <namespace>/<name> to <node>` (upstream
    /// `schedule_one.go`, `finishSchedulingCycle`'s Scheduled event), into `out`.
    pub(super) fn bound(out: &mut Vec<Outgoing>, pod: &Pod, node: &str) {
        let ns = if pod.metadata.namespace.is_empty() { "default" } else { &pod.metadata.namespace };
        let mut text = String::with_capacity(30 + ns.len() + pod.metadata.name.len() + node.len());
        for part in ["Successfully assigned ", ns, "/", &pod.metadata.name, " to ", node] {
            text.push_str(part);
        }
        Self::event(out, pod, false, "Scheduled", "Binding", text);
    }

    /// A failed attempt (upstream `handleSchedulingFailure`), into `out`: a
    /// FailedScheduling warning with the message, and a status patch setting
    /// PodScheduled=False with reason `Unschedulable` (no node fits) or
    /// `SchedulerError`, plus `nominatedNodeName` when preemption nominated a node.
    pub(super) fn failed(
        out: &mut Vec<Outgoing>,
        pod: &Pod,
        unschedulable: bool,
        message: &str,
        nominated: Option<String>,
    ) {
        Self::event(out, pod, true, "FailedScheduling", "Scheduling", message.to_owned());
        let reason = if unschedulable { "Unschedulable" } else { "SchedulerError" };
        let status = StatusPatch {
            conditions: [Condition {
                last_probe_time: (),
                last_transition_time: k8s_openapi::jiff::Timestamp::now().to_string(),
                message: message.to_owned(),
                reason,
                status: "False",
                type_: "PodScheduled",
            }],
            nominated_node_name: nominated,
        };
        let namespace = if pod.metadata.namespace.is_empty() { "default" } else { &pod.metadata.namespace };
        out.push(Outgoing::Status { namespace: namespace.to_owned(), name: pod.metadata.name.clone(), status });
    }
}

/// Sends a status patch (on the publishing task).
pub(super) async fn patch_status(client: &kube::Client, namespace: &str, name: &str, status: StatusPatch) {
    let patch = Patch::Strategic(PodStatusPatch { status });
    if let Err(e) = pods(client, namespace).patch_status(name, &PatchParams::default(), &patch).await {
        log::warn!("status of pod {namespace}/{name}: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The Binding as the typed body wrote it before it was written by hand.
    #[derive(serde::Serialize)]
    #[serde(rename_all = "camelCase")]
    struct BindingBody<'a> {
        api_version: &'static str,
        kind: &'static str,
        metadata: BindingMeta<'a>,
        target: BindingTarget<'a>,
    }

    #[derive(serde::Serialize)]
    struct BindingMeta<'a> {
        name: &'a str,
        namespace: &'a str,
        uid: &'a str,
    }

    #[derive(serde::Serialize)]
    #[serde(rename_all = "camelCase")]
    struct BindingTarget<'a> {
        api_version: &'static str,
        kind: &'static str,
        name: &'a str,
    }

    #[test]
    fn json_str_writes_as_serde_json() {
        for s in ["", "plain", "a\"b", "back\\slash", "tab\tnew\nline", "\u{1}\u{1f}\u{7f}", "ünï/cødé ✓"] {
            let mut ours = b"x".to_vec();
            json_str(&mut ours, s);
            assert_eq!(String::from_utf8(ours).unwrap(), format!("x{}", serde_json::to_string(s).unwrap()));
        }
    }

    /// The hand-written body is the typed one's bytes, escapes and empty fields included.
    #[test]
    fn binding_body_is_the_typed_binding() {
        for (ns, name, uid, node) in [("team-a", "p", "uid-p", "n1"), ("", "q", "u\"1", "node\\1")] {
            let mut pod = Pod::default();
            (pod.metadata.namespace, pod.metadata.name, pod.metadata.uid) = (ns.into(), name.into(), uid.into());
            let req = KubeBinder::request(&pod, node).unwrap();
            let typed = BindingBody {
                api_version: "v1",
                kind: "Binding",
                metadata: BindingMeta { name, namespace: ns, uid },
                target: BindingTarget { api_version: "v1", kind: "Node", name: node },
            };
            assert_eq!(String::from_utf8(req.body().clone()).unwrap(), serde_json::to_string(&typed).unwrap());
            let ns = if ns.is_empty() { "default" } else { ns };
            assert_eq!(req.uri().to_string(), format!("/api/v1/namespaces/{ns}/pods/{name}/binding"));
        }
    }

    /// The typed patch is the JSON text the `serde_json::Value` patch was.
    #[test]
    fn status_patch_is_the_json_object_it_was() {
        for nominated in [None, Some("n1".to_owned())] {
            let at = k8s_openapi::jiff::Timestamp::now().to_string();
            let mut old = json!({
                "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                "message": "0/2 nodes are available: \"x\"", "lastProbeTime": null,
                                "lastTransitionTime": at}],
            });
            if let Some(node) = &nominated {
                old["nominatedNodeName"] = json!(node);
            }
            let typed = StatusPatch {
                conditions: [Condition {
                    last_probe_time: (),
                    last_transition_time: at,
                    message: "0/2 nodes are available: \"x\"".into(),
                    reason: "Unschedulable",
                    status: "False",
                    type_: "PodScheduled",
                }],
                nominated_node_name: nominated,
            };
            assert_eq!(
                serde_json::to_string(&PodStatusPatch { status: typed }).unwrap(),
                serde_json::to_string(&json!({ "status": old })).unwrap()
            );
        }
    }
}
