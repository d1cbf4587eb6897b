//! What plugins may reach besides their arguments (upstream `framework.Handle`).
//!
//! Besides the clock, snapshot and waiting pods, the handle carries the
//! [`FeatureGates`], preemption's services (nominated pods, PodDisruptionBudgets, the
//! caller's evictor) and shared
//! services keyed by type (e.g. the [`DraStore`](crate::dra::DraStore), upstream's
//! `SharedDRAManager`).

use std::any::{Any, TypeId};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use super::preemption::PreemptionServices;
use super::{Clock, FeatureGates, RealClock, WaitingPods};
use crate::snapshot::Snapshot;

/// The pods plugins asked to activate since the scheduler last drained them, and the
/// pod groups whose unscheduled members were asked for (at which generation).
#[derive(Debug, Default)]
struct Activations {
    uids: Vec<Arc<str>>,
    /// Per pod group listed since the last drain: the generation it was listed at, and
    /// where its last list sits in `uids` (start, length).
    groups: ahash::AHashMap<String, (u64, usize, usize)>,
}

/// Shared services for plugins: the clock, the current snapshot and the pods waiting
/// at Permit. Cheap to clone; every clone sees the same state.
#[derive(Clone)]
pub struct Handle {
    inner: Arc<Inner>,
}

struct Inner {
    clock: Arc<dyn Clock>,
    snapshot: RwLock<Arc<Snapshot>>,
    waiting: WaitingPods,
    to_activate: Mutex<Activations>,
    preemption: PreemptionServices,
    /// v1.36 PodGroup objects and their members' states.
    pod_groups: super::PodGroupManager,
    /// `None` until [`Handle::set_feature_gates`]: the defaults, and a shared
    /// `DraStore` keeps its own switches.
    gates: RwLock<Option<FeatureGates>>,
    /// Shared services by type (a handful at most: a vector beats hashing).
    shared: RwLock<Vec<(TypeId, Arc<dyn Any + Send + Sync>)>>,
}

impl Default for Handle {
    fn default() -> Self {
        Handle::new(Arc::new(RealClock::default()))
    }
}

impl std::fmt::Debug for Handle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handle").field("waiting_pods", &self.inner.waiting.len()).finish_non_exhaustive()
    }
}

impl Handle {
    /// A handle on `clock`.
    pub fn new(clock: Arc<dyn Clock>) -> Handle {
        Handle {
            inner: Arc::new(Inner {
                clock,
                snapshot: RwLock::new(Arc::new(Snapshot::default())),
                waiting: WaitingPods::default(),
                to_activate: Mutex::new(Activations::default()),
                preemption: PreemptionServices::default(),
                pod_groups: super::PodGroupManager::default(),
                gates: RwLock::new(None),
                shared: RwLock::new(Vec::new()),
            }),
        }
    }

    /// The clock.
    pub fn clock(&self) -> &dyn Clock {
        &*self.inner.clock
    }

    /// The clock, shared.
    pub fn clock_arc(&self) -> Arc<dyn Clock> {
        self.inner.clock.clone()
    }

    /// The snapshot of the current (or last) scheduling cycle.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.inner.snapshot.read().clone()
    }

    /// Publishes `snapshot` as the current one, what the scheduler does at the start
    /// of each cycle: plugins that read the cluster through the handle (e.g.
    /// ImageLocality's spread, GpuShareFit's Reserve) then see it. For tests and
    /// what-if tools that run plugins without a scheduler ([`super::FrameworkRunner`]
    /// does it for you).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use schedkit::framework::Handle;
    /// use schedkit::testing::{ClusterBuilder, NodeBuilder};
    /// let handle = Handle::default();
    /// let snap = ClusterBuilder::new().node(NodeBuilder::new("n1").cpu("4")).build().unwrap();
    /// handle.set_snapshot(Arc::new(snap));
    /// assert!(handle.snapshot().get("n1").is_some());
    /// ```
    pub fn set_snapshot(&self, snapshot: Arc<Snapshot>) {
        *self.inner.snapshot.write() = snapshot;
    }

    /// Pods waiting at Permit.
    pub fn waiting_pods(&self) -> &WaitingPods {
        &self.inner.waiting
    }

    /// Asks the scheduler to move these pods (by uid) from the backoff queue or the
    /// unschedulable pool to the active queue (upstream `PodsToActivate`, which plugins
    /// write into the cycle state; here it is an inbox on the handle, so a plugin may
    /// ask from any extension point). The scheduler drains it after each scheduling
    /// attempt and each binding; uids it doesn't hold there are ignored.
    pub fn activate_pods(&self, uids: impl IntoIterator<Item = Arc<str>>) {
        self.inner.to_activate.lock().uids.extend(uids);
    }

    /// [`Handle::activate_pods`] for the unscheduled members of pod group `group`
    /// (`namespace/name`), whose [`PodGroupState::unscheduled_generation`] is
    /// `generation`: `members` lists them (with the generation read alongside) unless
    /// they were already asked for at that generation since the inbox was last
    /// drained. The set then can only have shrunk, and activating a pod twice does
    /// nothing more than once, so this only spares a pod-group cycle a list of every
    /// sibling per member. For the same reason a new list equal to the group's last one
    /// since the drain (members that went back to unscheduled, as every placement of a
    /// pod-group cycle puts them back) is not added again.
    ///
    /// [`PodGroupState::unscheduled_generation`]: crate::snapshot::PodGroupState::unscheduled_generation
    pub(crate) fn activate_pod_group_members(
        &self,
        group: &str,
        generation: u64,
        members: impl FnOnce() -> (Vec<Arc<str>>, u64),
    ) {
        if self.inner.to_activate.lock().groups.get(group).is_some_and(|g| g.0 == generation) {
            return;
        }
        let (uids, generation) = members();
        let mut guard = self.inner.to_activate.lock();
        let a = &mut *guard;
        let at = (generation, a.uids.len(), uids.len());
        match a.groups.get_mut(group) {
            Some(g) => {
                let (_, start, len) = *g;
                let last = a.uids.get(start..start + len).unwrap_or_default();
                if last.len() == uids.len() && last.iter().zip(&uids).all(|(x, y)| Arc::ptr_eq(x, y) || x == y) {
                    g.0 = generation;
                    return;
                }
                *g = at;
            }
            None => {
                a.groups.insert(group.to_owned(), at);
            }
        }
        a.uids.extend(uids);
    }

    /// Drains the pods plugins asked to activate.
    pub(crate) fn take_pods_to_activate(&self) -> Vec<Arc<str>> {
        let mut a = self.inner.to_activate.lock();
        a.groups.clear();
        std::mem::take(&mut a.uids)
    }

    /// The feature gates plugins read (upstream `feature.DefaultFeatureGate`, handed to
    /// plugins as `feature.Features`): v1.36's defaults until
    /// [`Handle::set_feature_gates`]. A `Copy` bitset: read it once per plugin or cycle.
    pub fn feature_gates(&self) -> FeatureGates {
        self.inner.gates.read().unwrap_or_default()
    }

    /// Sets the feature gates for every plugin built on this handle. Set them before
    /// building profiles: the registry's factories read them then, and DynamicResources
    /// built from the registry hands them to the shared
    /// [`DraStore`](crate::dra::DraStore) ([`DraStore::set_feature_gates`](crate::dra::DraStore::set_feature_gates)).
    /// Until they are set, a shared store keeps the switches it has.
    ///
    /// ```
    /// use schedkit::framework::{Feature, FeatureGates, Handle};
    /// let handle = Handle::default();
    /// assert_eq!(handle.feature_gates(), FeatureGates::default());
    /// handle.set_feature_gates("DRADeviceTaintRules=true".parse().unwrap());
    /// assert!(handle.feature_gates().enabled(Feature::DRADeviceTaintRules));
    /// ```
    pub fn set_feature_gates(&self, gates: FeatureGates) {
        *self.inner.gates.write() = Some(gates);
    }

    /// The feature gates if [`Handle::set_feature_gates`] set them.
    pub(crate) fn feature_gates_if_set(&self) -> Option<FeatureGates> {
        *self.inner.gates.read()
    }

    /// Shares a service of type `T` with every plugin built on this handle, replacing
    /// any earlier `T` (upstream hands plugins e.g. the `SharedDRAManager` this way). Set
    /// it before building profiles: the registry's factories read it then. With a
    /// [`DraStore`](crate::dra::DraStore) shared, the default registry builds
    /// DynamicResources over it and lets NodeResourcesFit resolve extended resources
    /// backed by device classes.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use schedkit::dra::DraStore;
    /// use schedkit::framework::Handle;
    /// let handle = Handle::default();
    /// let store = Arc::new(DraStore::new());
    /// handle.set_shared(store.clone());
    /// assert!(Arc::ptr_eq(&handle.shared::<DraStore>().unwrap(), &store));
    /// assert!(handle.shared::<String>().is_none());
    /// ```
    pub fn set_shared<T: Any + Send + Sync>(&self, service: Arc<T>) {
        let mut shared = self.inner.shared.write();
        let id = TypeId::of::<T>();
        shared.retain(|(t, _)| *t != id);
        shared.push((id, service));
    }

    /// The shared service of type `T`, if one was set ([`Handle::set_shared`]).
    pub fn shared<T: Any + Send + Sync>(&self) -> Option<Arc<T>> {
        let shared = self.inner.shared.read();
        let (_, any) = shared.iter().find(|(t, _)| *t == TypeId::of::<T>())?;
        any.clone().downcast::<T>().ok()
    }

    /// The v1.36 PodGroup objects and their members' states (upstream
    /// `Handle.PodGroupManager()`); the scheduler's cache records member states here.
    pub fn pod_groups(&self) -> &super::PodGroupManager {
        &self.inner.pod_groups
    }

    /// Preemption's shared services: nominated pods, PodDisruptionBudgets and the
    /// caller's [`super::Evictor`].
    pub fn preemption(&self) -> &PreemptionServices {
        &self.inner.preemption
    }

    /// Takes the snapshot out for an in-place update (leaving an empty one), so the
    /// scheduler's update doesn't copy it when nobody else holds it.
    pub(crate) fn take_snapshot(&self) -> Arc<Snapshot> {
        // The placeholder is one shared empty snapshot: building a fresh one (its
        // hash maps seed a hasher each) would cost more than the swap itself.
        static EMPTY: std::sync::LazyLock<Arc<Snapshot>> = std::sync::LazyLock::new(Arc::default);
        std::mem::replace(&mut *self.inner.snapshot.write(), EMPTY.clone())
    }

    pub(crate) fn put_snapshot(&self, s: Arc<Snapshot>) {
        *self.inner.snapshot.write() = s;
    }
}
