//! DRA in the runtime: ResourceSlices, DeviceClasses and ResourceClaims
//! (resource.k8s.io/v1) watched into the scheduler's [`DraStore`] as cluster events,
//! and [`KubeClaimWriter`], the [`ClaimStatusWriter`] that writes a claim's status to
//! the API server as kube-scheduler's DynamicResources PreBind does.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::resource::v1 as resource;
use kube::api::{Api, DeleteParams, PostParams};
use parking_lot::Mutex;

use super::watch::Sink;
use crate::dra::{DELETE_PROTECTION_FINALIZER, DeviceClass, DraError, DraStore, ResourceClaim, ResourceSlice};
use crate::framework::{ActionType, ClusterEvent, EventObject, EventResource};
use crate::k8s;
use crate::manifest::LoadOptions;
use crate::plugins::dynamic_resources::ClaimStatusWriter;
use crate::scheduler::SchedulerEvents;

fn key(m: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> String {
    match &m.namespace {
        Some(ns) if !ns.is_empty() => format!("{ns}/{}", m.name.as_deref().unwrap_or("")),
        _ => m.name.clone().unwrap_or_default(),
    }
}

/// Tells the queue that a DRA object changed: the DynamicResources plugin's
/// registered events (claims hinted by `namespace/name`).
fn changed(events: &SchedulerEvents, resource: EventResource, action: ActionType, key: &str) {
    events.custom(ClusterEvent { resource, action }, &EventObject::Custom(key.to_owned()));
}

fn action(known: bool) -> ActionType {
    if known { ActionType::UPDATE } else { ActionType::ADD }
}

/// What the three DRA watches share: the store, the queue, and the claims waiting for
/// a DeviceClass they name (the watches run independently, so a claim can arrive
/// before its class; it is loaded when the class arrives).
#[derive(Clone)]
pub(super) struct Dra {
    pub(super) store: Arc<DraStore>,
    pub(super) events: SchedulerEvents,
    pub(super) load: LoadOptions,
    pub(super) waiting: Arc<Mutex<BTreeMap<String, ResourceClaim>>>,
}

impl Dra {
    /// Loads the claims that waited for a class; those still missing one keep waiting.
    fn retry_waiting(&self) {
        let waiting = std::mem::take(&mut *self.waiting.lock());
        for (key, claim) in waiting {
            self.add_claim(key, claim, false);
        }
    }

    fn add_claim(&self, key: String, claim: ResourceClaim, known: bool) -> bool {
        match self.store.add_claim(claim.clone()) {
            Ok(()) => {
                changed(&self.events, EventResource::ResourceClaim, action(known), &key);
                true
            }
            Err(DraError::MissingDeviceClass { class, .. }) => {
                log::debug!("ResourceClaim {key}: waits for DeviceClass {class}");
                self.waiting.lock().insert(key, claim);
                false
            }
            Err(e) => {
                log::warn!("ResourceClaim {key}: skipped: {e}");
                false
            }
        }
    }
}

/// ResourceSlices (cluster-scoped) into the store.
pub(super) struct Slices(pub(super) Dra);

impl Sink<resource::ResourceSlice> for Slices {
    fn key(obj: &resource::ResourceSlice) -> String {
        key(&obj.metadata)
    }
    fn upsert(&mut self, obj: resource::ResourceSlice, tracked: &str, known: bool) -> bool {
        let name = tracked.to_owned();
        let loaded = k8s::from_k8s::<ResourceSlice>(&obj, self.0.load).map_err(|e| e.to_string());
        match loaded.and_then(|l| self.0.store.add_slice(l.object).map_err(|e| e.to_string())) {
            Ok(()) => {
                changed(&self.0.events, EventResource::ResourceSlice, action(known), &name);
                true
            }
            Err(e) => {
                log::warn!("ResourceSlice {name}: skipped: {e}");
                false
            }
        }
    }
    fn remove(&mut self, key: &str) {
        if self.0.store.remove_slice(key) {
            changed(&self.0.events, EventResource::ResourceSlice, ActionType::DELETE, key);
        }
    }
}

/// DeviceClasses (cluster-scoped) into the store; a new class loads the claims that
/// waited for it.
pub(super) struct Classes(pub(super) Dra);

impl Sink<resource::DeviceClass> for Classes {
    fn key(obj: &resource::DeviceClass) -> String {
        key(&obj.metadata)
    }
    fn upsert(&mut self, obj: resource::DeviceClass, tracked: &str, known: bool) -> bool {
        let name = tracked.to_owned();
        let loaded = k8s::from_k8s::<DeviceClass>(&obj, self.0.load).map_err(|e| e.to_string());
        match loaded.and_then(|l| self.0.store.add_class(l.object).map_err(|e| e.to_string())) {
            Ok(()) => {
                changed(&self.0.events, EventResource::DeviceClass, action(known), &name);
                self.0.retry_waiting();
                true
            }
            Err(e) => {
                log::warn!("DeviceClass {name}: skipped: {e}");
                false
            }
        }
    }
    fn remove(&mut self, key: &str) {
        if self.0.store.remove_class(key) {
            changed(&self.0.events, EventResource::DeviceClass, ActionType::DELETE, key);
        }
    }
}

/// ResourceClaims (all namespaces) into the store.
pub(super) struct Claims(pub(super) Dra);

impl Sink<resource::ResourceClaim> for Claims {
    fn key(obj: &resource::ResourceClaim) -> String {
        key(&obj.metadata)
    }
    fn upsert(&mut self, obj: resource::ResourceClaim, tracked: &str, known: bool) -> bool {
        let name = tracked.to_owned();
        self.0.waiting.lock().remove(&name);
        match k8s::from_k8s::<ResourceClaim>(&obj, self.0.load) {
            // A claim waiting for its class is tracked, so its deletion reaches the
            // waiting list.
            Ok(l) => self.0.add_claim(name.clone(), l.object, known) || self.0.waiting.lock().contains_key(&name),
            Err(e) => {
                log::warn!("ResourceClaim {name}: skipped: {e}");
                false
            }
        }
    }
    fn remove(&mut self, key: &str) {
        self.0.waiting.lock().remove(key);
        let (ns, name) = key.split_once('/').unwrap_or(("", key));
        if self.0.store.remove_claim(ns, name) {
            changed(&self.0.events, EventResource::ResourceClaim, ActionType::DELETE, key);
        }
    }
}

/// Writes claim status through the API server, as upstream's DynamicResources PreBind
/// (`pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go`,
/// `bindClaim`) does: the claim's `status` — `allocation` and `reservedFor` with the
/// pod added — replaced through the resourceclaims/status subresource
/// (`UpdateStatus`), with the claim's `resourceVersion`, so a concurrent change is a
/// conflict and the binding is retried. Before a new allocation is written, the
/// `resource.kubernetes.io/delete-protection` finalizer is added with an Update of the
/// object when the claim lacks it ([`ClaimStatusWriter::allocate`]). PostFilter's deallocation goes the same way;
/// the claims PreBind makes for extended resources are created and deleted.
///
/// Runs on the scheduling or binding thread and blocks it until the API server
/// answers; call [`KubeClaimWriter::new`] with a handle of the runtime it may block on.
#[derive(Clone)]
pub struct KubeClaimWriter {
    client: kube::Client,
    rt: tokio::runtime::Handle,
}

impl std::fmt::Debug for KubeClaimWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubeClaimWriter").finish_non_exhaustive()
    }
}

impl KubeClaimWriter {
    /// Writes with `client` on the runtime `rt` (from a thread that is not one of `rt`'s
    /// async workers).
    pub fn new(client: kube::Client, rt: tokio::runtime::Handle) -> Self {
        KubeClaimWriter { client, rt }
    }

    fn api(&self, namespace: &str) -> Api<resource::ResourceClaim> {
        Api::namespaced(self.client.clone(), if namespace.is_empty() { "default" } else { namespace })
    }
}

impl ClaimStatusWriter for KubeClaimWriter {
    fn update_status(&self, claim: &ResourceClaim) -> Result<(), String> {
        let m = &claim.metadata;
        let k8s_claim = resource::ResourceClaim::try_from(claim).map_err(|e| e.to_string())?;
        self.rt
            .block_on(self.api(&m.namespace).replace_status(&m.name, &PostParams::default(), &k8s_claim))
            .map(drop)
            .map_err(|e| format!("updating the status of ResourceClaim {}/{}: {e}", m.namespace, m.name))
    }

    /// Upstream `bindClaim` for a claim the scheduler allocated: without the
    /// delete-protection finalizer, the object is first updated with it added (a
    /// normal Update: finalizers are metadata, which the status subresource ignores);
    /// the status is then written to the object that update returned, with its new
    /// `resourceVersion`.
    fn allocate(&self, claim: &ResourceClaim) -> Result<(), String> {
        let m = &claim.metadata;
        let mut k8s_claim = resource::ResourceClaim::try_from(claim).map_err(|e| e.to_string())?;
        let status = k8s_claim.status.take();
        let api = self.api(&m.namespace);
        let key = format!("{}/{}", if m.namespace.is_empty() { "default" } else { &m.namespace }, m.name);
        self.rt.block_on(async {
            let mut current = k8s_claim;
            let finalizers = current.metadata.finalizers.get_or_insert_with(Vec::new);
            if !finalizers.iter().any(|f| f == DELETE_PROTECTION_FINALIZER) {
                finalizers.push(DELETE_PROTECTION_FINALIZER.to_owned());
                current = api
                    .replace(&m.name, &PostParams::default(), &current)
                    .await
                    .map_err(|e| format!("add finalizer to claim {key}: {e}"))?;
            }
            current.status = status;
            api.replace_status(&m.name, &PostParams::default(), &current)
                .await
                .map(drop)
                .map_err(|e| format!("updating the status of ResourceClaim {key}: {e}"))
        })
    }

    fn create_claim(&self, claim: &ResourceClaim) -> Result<(), String> {
        let m = &claim.metadata;
        let k8s_claim = resource::ResourceClaim::try_from(claim).map_err(|e| e.to_string())?;
        let api = self.api(&m.namespace);
        self.rt
            .block_on(async {
                let created = api.create(&PostParams::default(), &k8s_claim).await?;
                // The status is not written by create: upstream creates, then updates
                // the status of the object it got back.
                let mut with_status = created;
                with_status.status = k8s_claim.status.clone();
                api.replace_status(&m.name, &PostParams::default(), &with_status).await
            })
            .map(drop)
            .map_err(|e| format!("creating ResourceClaim {}/{}: {e}", m.namespace, m.name))
    }

    fn delete_claim(&self, namespace: &str, name: &str) -> Result<(), String> {
        match self.rt.block_on(self.api(namespace).delete(name, &DeleteParams::default())) {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
            Err(e) => Err(format!("deleting ResourceClaim {namespace}/{name}: {e}")),
        }
    }
}
