//! Which pods belong to which v1.36 PodGroup and where each stands (unscheduled,
//! assumed, assigned): upstream's `PodGroupState`s, kept by the [`Cache`](super::Cache)
//! as pods are added, assumed, forgotten and removed, and read by pod-group plugins
//! through the framework's `PodGroupManager`.

use std::sync::Arc;

use ahash::AHashMap;
use parking_lot::RwLock;

use super::PodInfo;

/// Where one member of a pod group stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MemberState {
    /// Known, not on a node.
    Unscheduled,
    /// Placed by the scheduler (in the cache, or in a pod-group cycle's snapshot),
    /// binding not confirmed.
    Assumed,
    /// Bound (`spec.nodeName` set and confirmed).
    Assigned,
}

/// One pod group's members (upstream `fwk.PodGroupState`).
#[derive(Debug, Clone, Default)]
pub struct PodGroupState {
    /// Members in the order they became known.
    members: Vec<(Arc<PodInfo>, MemberState)>,
    /// Position of each member in `members` by uid, so a member's state is set in
    /// constant time (a pod-group cycle sets every member's state several times).
    index: AHashMap<Arc<str>, usize>,
    assumed: usize,
    assigned: usize,
    /// Bumped whenever a member becomes unscheduled (added, or put back).
    unscheduled_generation: u64,
}

impl PodGroupState {
    /// Every member's uid (upstream `AllPods`).
    pub fn all_pods(&self) -> impl Iterator<Item = &Arc<str>> {
        self.members.iter().map(|(p, _)| &p.uid)
    }
    /// How many members there are (upstream `AllPodsCount`).
    pub fn all_pods_count(&self) -> usize {
        self.members.len()
    }
    /// Members not on a node (upstream `UnscheduledPods`).
    pub fn unscheduled_pods(&self) -> impl Iterator<Item = &Arc<PodInfo>> {
        self.with(MemberState::Unscheduled)
    }
    /// Members assumed, binding not confirmed (upstream `AssumedPods`).
    pub fn assumed_pods(&self) -> impl Iterator<Item = &Arc<PodInfo>> {
        self.with(MemberState::Assumed)
    }
    /// Members bound (upstream `AssignedPods`).
    pub fn assigned_pods(&self) -> impl Iterator<Item = &Arc<PodInfo>> {
        self.with(MemberState::Assigned)
    }
    /// Assumed and assigned members (upstream `ScheduledPods`).
    pub fn scheduled_pods(&self) -> impl Iterator<Item = &Arc<PodInfo>> {
        self.members.iter().filter(|(_, s)| *s != MemberState::Unscheduled).map(|(p, _)| p)
    }
    /// How many members are assumed or assigned (upstream `ScheduledPodsCount`).
    pub fn scheduled_pods_count(&self) -> usize {
        self.assumed + self.assigned
    }
    /// Bumped whenever a member becomes unscheduled (is added as such, or goes back
    /// to unscheduled): while it stays the same, the unscheduled members are a subset
    /// of what they were.
    pub fn unscheduled_generation(&self) -> u64 {
        self.unscheduled_generation
    }
    /// How many are unscheduled.
    pub fn unscheduled_pods_count(&self) -> usize {
        self.members.len() - self.scheduled_pods_count()
    }
    /// Where the member `uid` stands.
    pub fn member_state(&self, uid: &str) -> Option<MemberState> {
        self.index.get(uid).map(|&i| self.members[i].1)
    }

    fn with(&self, state: MemberState) -> impl Iterator<Item = &Arc<PodInfo>> {
        self.members.iter().filter(move |(_, s)| *s == state).map(|(p, _)| p)
    }

    fn count(&mut self, state: MemberState, delta: isize) {
        let c = match state {
            MemberState::Unscheduled => return,
            MemberState::Assumed => &mut self.assumed,
            MemberState::Assigned => &mut self.assigned,
        };
        *c = c.saturating_add_signed(delta);
    }

    fn set(&mut self, pod: &Arc<PodInfo>, state: MemberState) -> Option<MemberState> {
        if let Some(&i) = self.index.get(&pod.uid) {
            let slot = &mut self.members[i];
            let old = slot.1;
            slot.0 = pod.clone();
            slot.1 = state;
            if state == MemberState::Unscheduled && old != MemberState::Unscheduled {
                self.unscheduled_generation += 1;
            }
            self.count(old, -1);
            self.count(state, 1);
            Some(old)
        } else {
            self.index.insert(pod.uid.clone(), self.members.len());
            self.members.push((pod.clone(), state));
            if state == MemberState::Unscheduled {
                self.unscheduled_generation += 1;
            }
            self.count(state, 1);
            None
        }
    }

    fn remove(&mut self, uid: &str) -> bool {
        let Some(i) = self.index.remove(uid) else { return false };
        let (_, s) = self.members.remove(i);
        for (p, _) in &self.members[i..] {
            if let Some(j) = self.index.get_mut(&p.uid) {
                *j -= 1;
            }
        }
        self.count(s, -1);
        true
    }
}

/// `namespace/name` of a pod's group, when it names one.
pub(crate) fn group_key(pod: &PodInfo) -> Option<String> {
    let name = pod.pod.scheduling_group_name()?;
    Some(with_group_key(&pod.pod.metadata.namespace, name, str::to_owned))
}

/// Runs `f` on the map key `namespace/name` (an empty namespace is `default`), built
/// in a buffer of the thread's that is reused: the group cycle looks groups up several
/// times per member, and a `format!` per lookup was a tenth of its bookkeeping (then
/// building it on the stack still checked it as UTF-8 every time). A lookup inside `f`
/// (the buffer in use) builds its key on the stack.
pub(crate) fn with_group_key<R>(namespace: &str, name: &str, f: impl FnOnce(&str) -> R) -> R {
    thread_local! {
        static KEY: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
    }
    let ns = if namespace.is_empty() { "default" } else { namespace };
    let mut f = Some(f);
    let done = KEY.try_with(|key| {
        let mut buf = key.try_borrow_mut().ok()?;
        buf.clear();
        buf.push_str(ns);
        buf.push('/');
        buf.push_str(name);
        f.take().map(|f| f(&buf))
    });
    if let Ok(Some(r)) = done {
        return r;
    }
    let mut buf: smallvec::SmallVec<[u8; 128]> = smallvec::SmallVec::new();
    buf.extend_from_slice(ns.as_bytes());
    buf.push(b'/');
    buf.extend_from_slice(name.as_bytes());
    // Two strings joined by an ASCII byte are UTF-8.
    // `f` ran above only when it returned there.
    let f = f.take().expect("f ran only on the buffer path, which returned");
    f(std::str::from_utf8(&buf).unwrap_or_default())
}

/// Every pod group's [`PodGroupState`], shared between the cache that updates it and
/// the plugins that read it. Thread-safe; reads take a shared lock.
#[derive(Debug, Default)]
pub struct PodGroupStates {
    groups: RwLock<AHashMap<String, PodGroupState>>,
}

impl PodGroupStates {
    /// Calls `f` with the state of group `namespace/name` (`None` when no member is known).
    pub fn with<R>(&self, namespace: &str, name: &str, f: impl FnOnce(Option<&PodGroupState>) -> R) -> R {
        with_group_key(namespace, name, |k| self.with_key(k, f))
    }

    /// [`PodGroupStates::with`] by the key `namespace/name` already built.
    pub(crate) fn with_key<R>(&self, key: &str, f: impl FnOnce(Option<&PodGroupState>) -> R) -> R {
        f(self.groups.read().get(key))
    }

    /// A copy of the state of group `namespace/name`.
    pub fn get(&self, namespace: &str, name: &str) -> Option<PodGroupState> {
        with_group_key(namespace, name, |k| self.groups.read().get(k).cloned())
    }

    /// Records `pod` (which names a group) as a member in `state`; returns its previous
    /// state. Pods naming no group are ignored.
    pub fn set(&self, pod: &Arc<PodInfo>, state: MemberState) -> Option<MemberState> {
        let name = pod.pod.scheduling_group_name()?;
        with_group_key(&pod.pod.metadata.namespace, name, |k| {
            let mut groups = self.groups.write();
            match groups.get_mut(k) {
                Some(g) => g.set(pod, state),
                None => groups.entry(k.to_owned()).or_default().set(pod, state),
            }
        })
    }

    /// Forgets the member `pod` (deleted); returns whether it was one.
    pub fn remove(&self, pod: &PodInfo) -> bool {
        let Some(key) = group_key(pod) else { return false };
        let mut g = self.groups.write();
        let Some(state) = g.get_mut(&key) else { return false };
        let removed = state.remove(&pod.uid);
        if state.all_pods_count() == 0 {
            g.remove(&key);
        }
        removed
    }

    /// Number of groups with known members.
    pub fn len(&self) -> usize {
        self.groups.read().len()
    }

    /// Whether no group has members.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::with_group_key;

    #[test]
    fn group_keys_match_the_formatted_key() {
        let long = "n".repeat(200);
        for (ns, name) in [("", "g"), ("team-a", "job"), ("default", long.as_str()), (long.as_str(), "x")] {
            let expected = format!("{}/{name}", if ns.is_empty() { "default" } else { ns });
            assert_eq!(with_group_key(ns, name, str::to_owned), expected);
        }
    }

    /// A key built while another is in use (Permit lists a group's members inside
    /// its own lookup) is built on the stack and leaves the outer key alone; the
    /// thread's buffer serves the next lookup again.
    #[test]
    fn nested_group_keys_are_both_right() {
        let (outer, inner) = with_group_key("a", "g1", |outer| {
            let inner = with_group_key("", "g2", |inner| {
                assert_eq!(with_group_key("c", "g3", str::to_owned), "c/g3");
                inner.to_owned()
            });
            (outer.to_owned(), inner)
        });
        assert_eq!((outer.as_str(), inner.as_str()), ("a/g1", "default/g2"));
        assert_eq!(with_group_key("b", "g4", str::to_owned), "b/g4");
    }
}
