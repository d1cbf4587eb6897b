//! PodGroups and what the plugin knows about their members
//! (scheduler-plugins `pkg/coscheduling/core/core.go`, `PodGroupManager`).

use std::sync::Arc;
use std::time::Duration;

use ahash::{AHashMap, AHashSet};
use parking_lot::Mutex;

use crate::framework::{Clock, MAX_PERMIT_TIMEOUT};
use crate::model::{POD_GROUP_LABEL, ResourceList, Resources, Symbol};
use crate::snapshot::PodInfo;

/// A gang: pods labelled `scheduling.x-k8s.io/pod-group: <name>` in `namespace`
/// (scheduler-plugins `PodGroup`, `v1alpha1`).
#[derive(Debug, Clone, PartialEq)]
pub struct PodGroup {
    /// Namespace (empty means `default`).
    pub namespace: String,
    /// Name (the label's value).
    pub name: String,
    /// Pods that must be placed together (`spec.minMember`), at least 1.
    pub min_member: u32,
    /// How long members wait at Permit for their siblings
    /// (`spec.scheduleTimeoutSeconds`); `None` uses the plugin's default.
    pub schedule_timeout: Option<Duration>,
    /// Resources the whole gang needs (`spec.minResources`); checked against the
    /// cluster's free resources in PreFilter.
    pub min_resources: Option<ResourceList>,
    /// Creation time on the scheduler's clock, for queue ordering; `None` is stamped
    /// with the clock when first registered.
    pub creation: Option<Duration>,
}

impl PodGroup {
    /// A group of at least `min_member` pods.
    pub fn new(namespace: &str, name: &str, min_member: u32) -> PodGroup {
        PodGroup {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            min_member,
            schedule_timeout: None,
            min_resources: None,
            creation: None,
        }
    }

    /// Sets `scheduleTimeoutSeconds`.
    #[must_use]
    pub fn schedule_timeout(mut self, t: Duration) -> PodGroup {
        self.schedule_timeout = Some(t);
        self
    }

    /// Sets `minResources`.
    #[must_use]
    pub fn min_resources(mut self, r: ResourceList) -> PodGroup {
        self.min_resources = Some(r);
        self
    }

    /// Sets the creation time.
    #[must_use]
    pub fn created_at(mut self, t: Duration) -> PodGroup {
        self.creation = Some(t);
        self
    }

    /// The group's namespace, `default` when empty.
    fn namespace_or_default(namespace: &str) -> &str {
        if namespace.is_empty() { "default" } else { namespace }
    }
}

/// A PodGroup the registry refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PodGroupError {
    /// The group has no name.
    #[error("pod group has no name")]
    MissingName,
    /// `minMember` is 0.
    #[error("pod group {0}: minMember must be at least 1")]
    MinMemberZero(String),
    /// A schedule timeout of zero or beyond the 15-minute Permit cap.
    #[error("pod group {group}: scheduleTimeout {timeout:?} must be in (0, 15m]")]
    InvalidTimeout {
        /// namespace/name.
        group: String,
        /// The value given.
        timeout: Duration,
    },
    /// No such group.
    #[error("pod group {0} not found")]
    NotFound(String),
}

/// A group's identity: namespace and name, interned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GroupKey {
    /// Namespace.
    pub namespace: Symbol,
    /// Name.
    pub name: Symbol,
}

impl GroupKey {
    /// The group a pod names, if any.
    pub fn of(pod: &PodInfo) -> Option<GroupKey> {
        static LABEL: std::sync::OnceLock<Symbol> = std::sync::OnceLock::new();
        let label = *LABEL.get_or_init(|| Symbol::intern(POD_GROUP_LABEL));
        let name = pod.pod.metadata.labels.get(label)?;
        (!name.is_empty()).then_some(GroupKey { namespace: pod.namespace, name })
    }
}

impl std::fmt::Display for GroupKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// Lifecycle of a group, as scheduler-plugins' `PodGroupPhase` (the phases a
/// scheduler can tell; Running/Finished belong to a controller).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PodGroupPhase {
    /// Fewer than `minMember` pods exist.
    Pending,
    /// Enough pods; some being placed.
    Scheduling,
    /// At least `minMember` pods are bound.
    Scheduled,
    /// The last attempt was rejected and nothing is placed.
    Failed,
}

/// What the plugin reports about a group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PodGroupStatus {
    /// Phase.
    pub phase: PodGroupPhase,
    /// Pods of the group the scheduler knows.
    pub members: u32,
    /// Pods assumed or bound (reserved).
    pub assigned: u32,
    /// Pods bound (`status.scheduled`).
    pub scheduled: u32,
    /// Times the gang was rejected as a whole.
    pub failures: u32,
}

#[derive(Debug, Default)]
pub(crate) struct GroupState {
    pub(crate) spec: Option<PodGroup>,
    pub(crate) min_resources: Option<Resources>,
    pub(crate) members: AHashSet<Arc<str>>,
    pub(crate) assigned: AHashSet<Arc<str>>,
    pub(crate) bound: AHashSet<Arc<str>>,
    pub(crate) backoff_until: Option<Duration>,
    pub(crate) permitted_until: Option<Duration>,
    pub(crate) failures: u32,
}

impl GroupState {
    pub(crate) fn min_member(&self) -> u32 {
        self.spec.as_ref().map_or(0, |s| s.min_member)
    }

    fn status(&self) -> PodGroupStatus {
        let min = self.min_member() as usize;
        let phase = if self.bound.len() >= min {
            PodGroupPhase::Scheduled
        } else if self.members.len() < min {
            PodGroupPhase::Pending
        } else if self.failures > 0 && self.assigned.is_empty() {
            PodGroupPhase::Failed
        } else {
            PodGroupPhase::Scheduling
        };
        PodGroupStatus {
            phase,
            members: self.members.len() as u32,
            assigned: self.assigned.len() as u32,
            scheduled: self.bound.len() as u32,
            failures: self.failures,
        }
    }
}

/// The groups the caller declares, and the members the plugin has seen. Shared
/// between the caller and the [`super::Coscheduling`] plugin.
///
/// After registering or changing a group, send the scheduler a PodGroup event
/// (`queue::events::POD_GROUP_ADD` / `POD_GROUP_UPDATE` through
/// `SchedulerEvents::custom`) so pods waiting for it are retried.
pub struct PodGroupRegistry {
    clock: Arc<dyn Clock>,
    pub(crate) inner: Mutex<AHashMap<GroupKey, GroupState>>,
}

impl std::fmt::Debug for PodGroupRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PodGroupRegistry").field("groups", &self.inner.lock().len()).finish_non_exhaustive()
    }
}

impl PodGroupRegistry {
    /// An empty registry on `clock` (the scheduler's).
    pub fn new(clock: Arc<dyn Clock>) -> PodGroupRegistry {
        PodGroupRegistry { clock, inner: Mutex::new(AHashMap::new()) }
    }

    pub(crate) fn now(&self) -> Duration {
        self.clock.now()
    }

    /// Adds or replaces a group, after checking it.
    pub fn upsert(&self, mut group: PodGroup) -> Result<(), PodGroupError> {
        if group.name.is_empty() {
            return Err(PodGroupError::MissingName);
        }
        let ns = PodGroup::namespace_or_default(&group.namespace);
        let shown = || format!("{ns}/{}", group.name);
        if group.min_member == 0 {
            return Err(PodGroupError::MinMemberZero(shown()));
        }
        if let Some(t) = group.schedule_timeout
            && (t.is_zero() || t > MAX_PERMIT_TIMEOUT)
        {
            return Err(PodGroupError::InvalidTimeout { group: shown(), timeout: t });
        }
        // Namespaces are a bounded vocabulary (pinned); the name is held by the entry
        // for as long as it lives, so group names that never repeat are reclaimed.
        let name = Symbol::acquire(&group.name);
        let key = GroupKey { namespace: Symbol::intern(ns), name };
        let mut map = self.inner.lock();
        let st = Self::entry(&mut map, key);
        group.creation = group.creation.or(st.spec.as_ref().and_then(|s| s.creation)).or(Some(self.clock.now()));
        st.min_resources = group.min_resources.as_ref().map(|r| {
            let mut res = r.to_resources();
            res.allowed_pod_number = i64::from(group.min_member);
            res
        });
        st.permitted_until = None;
        st.spec = Some(group);
        drop(map);
        Symbol::release_all([name]);
        Ok(())
    }

    /// Removes a group (its members stay known, as pods of an unknown group, until
    /// they are deleted; then the group's state is dropped).
    pub fn remove(&self, namespace: &str, name: &str) -> Result<PodGroup, PodGroupError> {
        let not_found = || PodGroupError::NotFound(format!("{}/{name}", PodGroup::namespace_or_default(namespace)));
        let mut map = self.inner.lock();
        let key = Self::existing_key(namespace, name).ok_or_else(not_found)?;
        let group = map.get_mut(&key).and_then(|s| s.spec.take()).ok_or_else(not_found)?;
        let pruned = Self::prune(&mut map, key);
        drop(map);
        Symbol::release_all(pruned);
        Ok(group)
    }

    /// A registered group.
    pub fn get(&self, namespace: &str, name: &str) -> Option<PodGroup> {
        let map = self.inner.lock();
        map.get(&Self::existing_key(namespace, name)?).and_then(|s| s.spec.clone())
    }

    /// A registered group's status.
    pub fn status(&self, namespace: &str, name: &str) -> Option<PodGroupStatus> {
        let map = self.inner.lock();
        map.get(&Self::existing_key(namespace, name)?).filter(|s| s.spec.is_some()).map(GroupState::status)
    }

    /// Groups the registry holds state for: registered, or named by a pod it knows.
    /// Bounded by the groups and pods alive (for memory tests).
    pub fn len(&self) -> usize {
        self.inner.lock().len()
    }

    /// Whether the registry holds no group state.
    pub fn is_empty(&self) -> bool {
        self.inner.lock().is_empty()
    }

    /// The key of `namespace/name` if its strings are interned. Call it with the lock
    /// held: an entry holds its name, so a key found in the map names that group.
    fn existing_key(namespace: &str, name: &str) -> Option<GroupKey> {
        let namespace = Symbol::lookup(PodGroup::namespace_or_default(namespace))?;
        Some(GroupKey { namespace, name: Symbol::lookup(name)? })
    }

    /// The entry of `key`, made (taking a reference on its name) if absent.
    fn entry(map: &mut AHashMap<GroupKey, GroupState>, key: GroupKey) -> &mut GroupState {
        map.entry(key).or_insert_with(|| {
            Symbol::retain_all([key.name]);
            GroupState::default()
        })
    }

    /// Drops `key`'s entry once no spec and no member keep it; returns the name to
    /// release (after the lock is given up).
    fn prune(map: &mut AHashMap<GroupKey, GroupState>, key: GroupKey) -> Option<Symbol> {
        let idle = map.get(&key).is_some_and(|s| s.spec.is_none() && s.members.is_empty());
        (idle && map.remove(&key).is_some()).then_some(key.name)
    }

    /// Statuses of every registered group, by `namespace/name`, sorted.
    pub fn statuses(&self) -> Vec<(String, PodGroupStatus)> {
        let mut v: Vec<_> = self
            .inner
            .lock()
            .iter()
            .filter(|(_, s)| s.spec.is_some())
            .map(|(k, s)| (k.to_string(), s.status()))
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }

    /// Runs `f` on `key`'s state (made if absent, dropped after if nothing keeps it).
    pub(crate) fn with<R>(&self, key: GroupKey, f: impl FnOnce(&mut GroupState) -> R) -> R {
        let mut map = self.inner.lock();
        let r = f(Self::entry(&mut map, key));
        let pruned = Self::prune(&mut map, key);
        drop(map);
        Symbol::release_all(pruned);
        r
    }

    pub(crate) fn creation(&self, key: GroupKey) -> Option<Duration> {
        self.inner.lock().get(&key).and_then(|s| s.spec.as_ref()).and_then(|s| s.creation)
    }
}
