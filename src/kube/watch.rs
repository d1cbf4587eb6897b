//! Watches feeding the scheduler: every object converted with [`crate::k8s`] and handed
//! to [`SchedulerEvents`] as an add, update or delete. A watch that fails or expires
//! (410 Gone) re-lists; objects missing from the new list are deleted, as an informer
//! does. A malformed object is logged with its name and skipped.
//!
//! Pods and Nodes arrive as text and are decoded here ([`Prepare`]); the first list's
//! objects are decoded in batches on the blocking pool, on every core, and handed to
//! the scheduler in the list's order. The first lists are decoded before the first
//! scheduling cycle (upstream's `WaitForCacheSync`), with the scheduling thread idle,
//! so this is where a start-up of many pending pods spends its time.

use std::collections::{BTreeMap, VecDeque};

use ahash::AHashSet as HashSet;
use std::sync::Arc;

use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::policy::v1 as policy;
use kube::Api;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use tokio::sync::Notify;

use super::direct::{Decoded, Direct, Watched};
use crate::k8s;
use crate::manifest::LoadOptions;
use crate::model::{Node, Pod, PodDisruptionBudget};
use crate::plugins::inter_pod_affinity::NamespaceLabels;
use crate::scheduler::SchedulerEvents;

/// A watched object as kube's watcher yields it, made ready for its [`Sink`]. For
/// Pods and Nodes, that is their decoding ([`Watched::decode`]), the bulk of a
/// watch's work: the objects of a list are made ready in batches on the blocking
/// pool, so a first list of many pods is decoded on every core.
pub(super) trait Prepare: Send + 'static {
    /// What the sink gets.
    type Ready: Send + 'static;
    /// What is left of the object once it is ready: dropped on the watch's task (see
    /// [`Prepared`]).
    type Rest: Send + 'static;
    /// Whether a list's objects are worth preparing off the watch's task.
    const HEAVY: bool = false;
    /// The object made ready, and what is left of it.
    fn ready(self) -> (Self::Ready, Self::Rest);
}

impl<T: Direct> Prepare for Watched<T> {
    type Ready = Decoded<T>;
    /// The watched object itself: its JSON text.
    type Rest = Self;
    const HEAVY: bool = true;
    fn ready(self) -> (Decoded<T>, Self) {
        (self.decode(), self)
    }
}

/// Kinds whose sink takes kube's object as it is.
macro_rules! ready_as_decoded {
    ($($t:ty),* $(,)?) => {$(
        impl Prepare for $t {
            type Ready = $t;
            type Rest = ();
            fn ready(self) -> ($t, ()) {
                (self, ())
            }
        }
    )*};
}

ready_as_decoded!(
    core::Namespace,
    policy::PodDisruptionBudget,
    k8s_openapi::api::resource::v1::DeviceClass,
    k8s_openapi::api::resource::v1::ResourceSlice,
    k8s_openapi::api::resource::v1::ResourceClaim,
);
k8s_openapi::k8s_if_ge_1_36! {
    ready_as_decoded!(k8s_openapi::api::scheduling::v1alpha2::PodGroup);
}

/// What a watch does with its objects.
pub(super) trait Sink<K: Prepare>: Send {
    /// The key an object is tracked by (pods: uid; others: namespace/name).
    fn key(obj: &K::Ready) -> String;
    /// Adds (`known` false) or updates the object tracked as `key`; returns whether it
    /// is now tracked.
    fn upsert(&mut self, obj: K::Ready, key: &str, known: bool) -> bool;
    /// Deletes a tracked object.
    fn remove(&mut self, key: &str);
}

pub(super) fn meta_key(m: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> String {
    match &m.namespace {
        Some(ns) if !ns.is_empty() => format!("{ns}/{}", m.name.as_deref().unwrap_or("")),
        _ => m.name.clone().unwrap_or_default(),
    }
}

/// The converted object; the scheduling fields it carried but schedkit does not model
/// are logged at debug level ([`RunOptions::load`](super::RunOptions::load)).
fn used<T: crate::manifest::Manifest>(l: crate::manifest::Loaded<T>, name: impl FnOnce() -> String) -> T {
    if !l.ignored.is_empty() && log::log_enabled!(log::Level::Debug) {
        let paths: Vec<&str> = l.ignored.iter().filter(|f| f.affects_scheduling).map(|f| f.path.as_str()).collect();
        log::debug!("{} {}: not modeled: {}", T::KIND, name(), paths.join(", "));
    }
    l.object
}

/// How many watches have not finished their first list yet: the scheduling loop
/// starts only when every one has (upstream `WaitForCacheSync` before
/// `sched.Run`), so no pod is tried against a half-listed cluster.
#[derive(Debug, Default)]
pub(super) struct Synced {
    pending: std::sync::atomic::AtomicUsize,
    notify: Notify,
}

impl Synced {
    /// One more watch to wait for; the returned token is spent on its first list.
    pub(super) fn register(self: &Arc<Self>) -> SyncToken {
        self.pending.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        SyncToken(Some(self.clone()))
    }

    /// Returns once every registered watch has listed.
    pub(super) async fn wait(&self) {
        // `notify_one` keeps a permit when nobody waits, so no wake-up is lost
        // between the check and the wait.
        while self.pending.load(std::sync::atomic::Ordering::SeqCst) > 0 {
            self.notify.notified().await;
        }
    }
}

/// A watch's share of [`Synced`], spent when its first list is in.
pub(super) struct SyncToken(Option<Arc<Synced>>);

impl SyncToken {
    fn listed(&mut self) {
        if let Some(s) = self.0.take() {
            s.pending.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
            s.notify.notify_one();
        }
    }

    /// Whether the watch's first list is in.
    fn is_spent(&self) -> bool {
        self.0.is_none()
    }
}

/// How many events a watch takes from its stream at a time.
const BATCH: usize = 64;
/// From how many events on a batch of a [`Prepare::HEAVY`] kind is prepared on the
/// blocking pool (a watch event or two is prepared on the watch's task).
const PARALLEL_FROM: usize = 16;

/// How many batches a watch has being prepared at once: one per core, so a first list
/// is decoded on every core while the watch's task hands the earlier batches over.
fn batches_in_flight() -> usize {
    static N: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *N.get_or_init(|| std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get).clamp(1, 8))
}

type Ready<K> = Vec<Result<Event<<K as Prepare>::Ready>, watcher::Error>>;
type Batch<K> = Vec<Result<Event<K>, watcher::Error>>;

/// A batch of events, its objects made ready in `ready` (in order) and what they
/// leave in `rests` (a Pod's or Node's JSON text).
///
/// Why the vectors are allocated, and the rests and the emptied batch dropped, on the
/// watch's task though the objects are made ready on the blocking pool: with glibc,
/// memory freed by a thread other than the one that allocated it goes back to the
/// allocating thread's arena under that arena's lock, which the watch's thread keeps
/// taking as it hands objects over. In the bench's first lists, 154 of ~980 context
/// switches were decoding batches waiting for that lock to free the objects' texts.
struct Prepared<K: Prepare> {
    batch: Batch<K>,
    ready: Ready<K>,
    rests: Vec<K::Rest>,
}

impl<K: Prepare> Prepared<K> {
    fn new(batch: Batch<K>) -> Self {
        // A vector of `()` rests allocates nothing.
        Prepared { ready: Vec::with_capacity(batch.len()), rests: Vec::with_capacity(batch.len()), batch }
    }

    /// Each event's objects made ready.
    fn prepare(mut self) -> Self {
        let rests = &mut self.rests;
        let mut take = |o: K| {
            let (ready, rest) = o.ready();
            rests.push(rest);
            ready
        };
        for ev in self.batch.drain(..) {
            self.ready.push(ev.map(|ev| match ev {
                Event::Init => Event::Init,
                Event::InitApply(o) => Event::InitApply(take(o)),
                Event::Apply(o) => Event::Apply(take(o)),
                Event::Delete(o) => Event::Delete(take(o)),
                Event::InitDone => Event::InitDone,
            }));
        }
        self
    }
}

/// Drives one watch until its stream ends (never, unless the task is aborted).
///
/// Events are taken in batches of what the stream has ready. Until the first list is
/// in, a large batch of a heavy kind (a list page of Pods or Nodes) is prepared on the
/// blocking pool, with up to [`batches_in_flight`] batches at once; the batches are
/// handed to the sink strictly in stream order, so the sink sees exactly the sequence
/// of events kube yielded. Later events (and re-lists, which run while the scheduling
/// loop does) are prepared on the watch's task.
pub(super) async fn drive<K, S>(api: Api<K>, cfg: watcher::Config, mut sink: S, kick: Arc<Notify>, synced: SyncToken)
where
    K: kube::Resource<DynamicType = ()> + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Prepare,
    S: Sink<K>,
{
    let mut tracked = Tracked { known: HashSet::new(), seen: None, synced };
    let stream = watcher::watcher(api, cfg).default_backoff();
    let mut stream = std::pin::pin!(stream);
    let mut in_flight: VecDeque<tokio::task::JoinHandle<Prepared<K>>> = VecDeque::new();
    let mut ended = false;
    while !ended || !in_flight.is_empty() {
        let mut batch = Vec::new();
        // Wait for the stream only when nothing is being prepared.
        if !ended && in_flight.is_empty() {
            match stream.next().await {
                Some(ev) => batch.push(ev),
                None => ended = true,
            }
        }
        while !ended && batch.len() < BATCH {
            match stream.next().now_or_never() {
                Some(Some(ev)) => batch.push(ev),
                Some(None) => ended = true,
                None => break,
            }
        }
        let more = batch.len() == BATCH;
        // Only the first list is decoded on the blocking pool: it is what the scheduling
        // loop waits for, and until it is in no long-lived blocking task (the loop, the
        // binding tasks) holds a thread of that pool, so a runtime with few blocking
        // threads cannot leave a batch waiting behind them. A batch behind others in
        // flight follows them there, to keep the order.
        let parallel = K::HEAVY && !tracked.synced.is_spent() && batch.len() >= PARALLEL_FROM;
        if !batch.is_empty() && (parallel || !in_flight.is_empty()) {
            let batch = Prepared::new(batch);
            in_flight.push_back(tokio::task::spawn_blocking(move || batch.prepare()));
        } else if !batch.is_empty() {
            tracked.hand_over(Prepared::new(batch).prepare(), &mut sink, &kick);
        }
        // The oldest batch is handed over once enough are being prepared, or when the
        // stream has nothing more right now.
        if (in_flight.len() >= batches_in_flight() || !more)
            && let Some(oldest) = in_flight.pop_front()
        {
            match oldest.await {
                Ok(prepared) => tracked.hand_over(prepared, &mut sink, &kick),
                Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                // The runtime is shutting down.
                Err(_) => return,
            }
        }
    }
}

/// What a watch tracks between events: the keys it has handed to its sink (`known`),
/// those listed so far by a re-list in progress (`seen`), and its share of [`Synced`].
struct Tracked {
    known: HashSet<String>,
    seen: Option<HashSet<String>>,
    synced: SyncToken,
}

impl Tracked {
    /// Every event of a prepared batch into `sink`, then one wake-up of the loop: a
    /// list page or a burst of changes goes in whole before the loop looks. What the
    /// batch leaves is dropped here (see [`Prepared`]).
    fn hand_over<K, S>(&mut self, prepared: Prepared<K>, sink: &mut S, kick: &Notify)
    where
        K: kube::Resource<DynamicType = ()> + Prepare,
        S: Sink<K>,
    {
        for ev in prepared.ready {
            self.handle(ev, sink);
        }
        kick.notify_one();
    }

    /// One watch event into `sink`.
    fn handle<K, S>(&mut self, ev: Result<Event<K::Ready>, watcher::Error>, sink: &mut S)
    where
        K: kube::Resource<DynamicType = ()> + Prepare,
        S: Sink<K>,
    {
        let Tracked { known, seen, synced } = self;
        match ev {
            Err(e) => log::warn!("watch {}: {e}; re-listing", K::kind(&())),
            // A first list (nothing tracked yet) has nothing to delete: no need to
            // remember what it listed.
            Ok(Event::Init) => *seen = (!known.is_empty()).then(HashSet::new),
            Ok(Event::InitApply(obj) | Event::Apply(obj)) => {
                let key = S::key(&obj);
                if let Some(s) = seen {
                    s.insert(key.clone());
                }
                let was = known.contains(&key);
                if sink.upsert(obj, &key, was) {
                    known.insert(key);
                } else if was {
                    sink.remove(&key);
                    known.remove(&key);
                }
            }
            Ok(Event::Delete(obj)) => {
                let key = S::key(&obj);
                if known.remove(&key) {
                    sink.remove(&key);
                }
            }
            Ok(Event::InitDone) => {
                synced.listed();
                if let Some(s) = seen.take() {
                    let gone: Vec<String> = known.difference(&s).cloned().collect();
                    for key in gone {
                        sink.remove(&key);
                        known.remove(&key);
                    }
                }
            }
        }
    }
}

/// Nodes into the cache, decoded directly ([`Watched`]).
pub(super) struct Nodes {
    pub(super) events: SchedulerEvents,
    pub(super) load: LoadOptions,
}

/// The converted object, or `None` (logged) when it is malformed or the conversion
/// refused it.
fn converted<T: Direct>(obj: Decoded<T>, load: LoadOptions) -> Option<T> {
    // Only a lean conversion reports or refuses anything; name the object for it.
    let name = (!matches!(obj, Decoded::Model(_))).then(|| obj.name());
    match obj.convert(load) {
        Ok(l) => Some(used(l, || name.clone().unwrap_or_default())),
        Err(e) => {
            log::warn!("{} {}: skipped: {e}", T::KIND, name.unwrap_or_default());
            None
        }
    }
}

impl Sink<Watched<Node>> for Nodes {
    fn key(obj: &Decoded<Node>) -> String {
        obj.name()
    }
    fn upsert(&mut self, obj: Decoded<Node>, key: &str, known: bool) -> bool {
        let Some(node) = converted(obj, self.load) else { return false };
        let res = if known { self.events.update_node(node) } else { self.events.add_node(node) };
        res.map_err(|e| log::warn!("node {key}: {e}")).is_ok()
    }
    fn remove(&mut self, key: &str) {
        if let Err(e) = self.events.remove_node(key) {
            log::warn!("node {key}: {e}");
        }
    }
}

/// Pods: every assigned pod into the cache; unassigned pods that a profile of this
/// scheduler serves into the queue (upstream's two pod informer handlers in
/// `eventhandlers.go`, over one watch). Decoded directly ([`Watched`]).
pub(super) struct Pods {
    pub(super) events: SchedulerEvents,
    pub(super) load: LoadOptions,
    pub(super) scheduler_names: Vec<String>,
}

impl Sink<Watched<Pod>> for Pods {
    fn key(obj: &Decoded<Pod>) -> String {
        obj.uid().map_or_else(|| obj.name(), str::to_owned)
    }
    fn upsert(&mut self, obj: Decoded<Pod>, key: &str, known: bool) -> bool {
        let Some(pod) = converted(obj, self.load) else { return false };
        if pod.spec.node_name.is_empty() {
            let name = if pod.spec.scheduler_name.is_empty() {
                crate::framework::DEFAULT_SCHEDULER_NAME
            } else {
                pod.spec.scheduler_name.as_str()
            };
            if !self.scheduler_names.iter().any(|n| n == name) {
                return false;
            }
        }
        let res = if known { self.events.update_pod(pod) } else { self.events.add_pod(pod) };
        res.map_err(|e| log::warn!("pod {key}: {e}")).is_ok()
    }
    fn remove(&mut self, key: &str) {
        if let Err(e) = self.events.delete_pod(key) {
            log::debug!("pod {key}: {e}");
        }
    }
}

/// Namespace labels for `namespaceSelector` (InterPodAffinity).
pub(super) struct Namespaces {
    pub(super) labels: NamespaceLabels,
}

impl Sink<core::Namespace> for Namespaces {
    fn key(obj: &core::Namespace) -> String {
        meta_key(&obj.metadata)
    }
    fn upsert(&mut self, obj: core::Namespace, _key: &str, _known: bool) -> bool {
        match k8s::from_k8s::<crate::model::Namespace>(&obj, LoadOptions::default()) {
            Ok(l) => {
                self.labels.set(&l.object.metadata.name, l.object.metadata.labels);
                true
            }
            Err(e) => {
                log::warn!("namespace {}: skipped: {e}", meta_key(&obj.metadata));
                false
            }
        }
    }
    fn remove(&mut self, key: &str) {
        self.labels.remove(key);
    }
}

/// PodDisruptionBudgets for preemption: the whole set is handed over on each change.
pub(super) struct Budgets {
    pub(super) handle: crate::framework::Handle,
    pub(super) all: BTreeMap<String, PodDisruptionBudget>,
}

impl Budgets {
    fn publish(&self) {
        if let Err(e) = self.handle.preemption().set_pod_disruption_budgets(self.all.values().cloned().collect()) {
            log::warn!("PodDisruptionBudgets: {e}");
        }
    }
}

impl Sink<policy::PodDisruptionBudget> for Budgets {
    fn key(obj: &policy::PodDisruptionBudget) -> String {
        meta_key(&obj.metadata)
    }
    fn upsert(&mut self, obj: policy::PodDisruptionBudget, tracked: &str, _known: bool) -> bool {
        let key = tracked.to_owned();
        let pdb = match k8s::from_k8s::<PodDisruptionBudget>(&obj, LoadOptions::default()) {
            Ok(l) if l.object.validate().is_ok() => l.object,
            Ok(l) => {
                log::warn!("PodDisruptionBudget {key}: skipped: {}", l.object.validate().unwrap_err());
                return false;
            }
            Err(e) => {
                log::warn!("PodDisruptionBudget {key}: skipped: {e}");
                return false;
            }
        };
        self.all.insert(key, pdb);
        self.publish();
        true
    }
    fn remove(&mut self, key: &str) {
        self.all.remove(key);
        self.publish();
    }
}

k8s_openapi::k8s_if_ge_1_36! {
    /// v1.36 PodGroups (`scheduling.k8s.io/v1alpha2`) into the framework's pod-group
    /// manager, validated as the API server would have.
    pub(super) struct PodGroups {
        pub(super) events: SchedulerEvents,
        pub(super) load: LoadOptions,
        pub(super) gates: crate::framework::FeatureGates,
    }

    impl Sink<k8s_openapi::api::scheduling::v1alpha2::PodGroup> for PodGroups {
        fn key(obj: &k8s_openapi::api::scheduling::v1alpha2::PodGroup) -> String {
            meta_key(&obj.metadata)
        }
        fn upsert(&mut self, obj: k8s_openapi::api::scheduling::v1alpha2::PodGroup, key: &str, _known: bool) -> bool {
            match k8s::from_k8s::<crate::model::workload::PodGroup>(&obj, self.load) {
                Ok(l) => match l.object.validate(self.gates) {
                    Ok(()) => {
                        self.events.add_pod_group(l.object);
                        true
                    }
                    Err(e) => {
                        log::warn!("PodGroup {key}: skipped: {e}");
                        false
                    }
                },
                Err(e) => {
                    log::warn!("PodGroup {key}: skipped: {e}");
                    false
                }
            }
        }
        fn remove(&mut self, key: &str) {
            let (ns, name) = key.split_once('/').unwrap_or(("", key));
            self.events.delete_pod_group(ns, name);
        }
    }
}
