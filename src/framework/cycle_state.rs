//! Per-cycle plugin data (upstream `framework.CycleState`).

use std::any::{Any, TypeId};
use std::sync::Arc;

use smallvec::SmallVec;

/// Data a plugin keeps in [`CycleState`]. Keys are types: a plugin defines a private
/// type, so no other plugin can read or clobber its entry, and a read is typed at
/// compile time.
pub trait StateData: Any + Send + Sync + Clone {}
impl<T: Any + Send + Sync + Clone> StateData for T {}

/// One value in a [`CycleState`], under its type.
pub(crate) type Entry = (TypeId, Arc<dyn Any + Send + Sync>);

/// The entries of a [`CycleState`] at one moment, by type and value address
/// ([`CycleState::mark`]).
pub(crate) type StateMark = SmallVec<[(TypeId, usize); 8]>;

/// A set of plugin positions in a profile (for "skip this plugin's Filter/Score").
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PluginSet(SmallVec<[u64; 1]>);

impl PluginSet {
    /// Adds plugin position `i`.
    #[inline]
    pub fn insert(&mut self, i: usize) {
        let (w, bit) = (i / 64, 1 << (i % 64));
        if let Some(word) = self.0.get_mut(w) {
            *word |= bit;
            return;
        }
        self.0.resize(w + 1, 0);
        self.0[w] |= bit;
    }

    /// Whether position `i` is in the set.
    #[inline]
    pub fn contains(&self, i: usize) -> bool {
        self.0.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) != 0)
    }

    /// Empties the set, keeping its storage.
    pub fn clear(&mut self) {
        self.0.iter_mut().for_each(|w| *w = 0);
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        self.0.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|&w| w == 0)
    }
}

/// A typed map that plugins use to pass data between extension points of one cycle.
///
/// Written in PreFilter/PreScore (which get `&mut CycleState`), read in Filter/Score
/// (which get `&CycleState`, possibly from many threads at once). Values are stored
/// behind `Arc`, so [`Clone`] (what preemption does for each dry run) only bumps
/// reference counts; [`CycleState::get_mut`] copies a value the first time a clone
/// mutates it. A handful of entries live inline; a read is a short linear scan of
/// type ids, faster than hashing.
///
/// ```
/// use schedkit::framework::CycleState;
/// #[derive(Clone, Debug, PartialEq)]
/// struct Requested(i64);
///
/// let mut state = CycleState::new();
/// assert!(state.read::<Requested>().is_none());
/// state.write(Requested(500));
/// let copy = state.clone();
/// state.get_mut::<Requested>().unwrap().0 += 1;
/// assert_eq!(state.read::<Requested>(), Some(&Requested(501)));
/// assert_eq!(copy.read::<Requested>(), Some(&Requested(500)));
/// ```
#[derive(Clone, Default)]
pub struct CycleState {
    entries: SmallVec<[Entry; 8]>,
    pub(crate) skip_filter: PluginSet,
    pub(crate) skip_score: PluginSet,
}

impl CycleState {
    /// An empty state.
    pub fn new() -> CycleState {
        CycleState::default()
    }

    /// Stores `value` under its type, replacing any previous value of that type.
    pub fn write<T: StateData>(&mut self, value: T) {
        let id = TypeId::of::<T>();
        let v: Arc<dyn Any + Send + Sync> = Arc::new(value);
        match self.entries.iter_mut().find(|(k, _)| *k == id) {
            Some(e) => e.1 = v,
            None => self.entries.push((id, v)),
        }
    }

    /// Reads the value of type `T`, if written this cycle.
    #[inline]
    pub fn read<T: StateData>(&self) -> Option<&T> {
        let id = TypeId::of::<T>();
        self.entries.iter().find(|(k, _)| *k == id).and_then(|(_, v)| v.downcast_ref::<T>())
    }

    /// Mutable access; copies the value first if a clone of this state shares it.
    pub fn get_mut<T: StateData>(&mut self) -> Option<&mut T> {
        let id = TypeId::of::<T>();
        let entry = self.entries.iter_mut().find(|(k, _)| *k == id)?;
        if Arc::get_mut(&mut entry.1).is_none() {
            let copy: T = entry.1.downcast_ref::<T>()?.clone();
            entry.1 = Arc::new(copy);
        }
        Arc::get_mut(&mut entry.1)?.downcast_mut::<T>()
    }

    /// Removes the value of type `T`.
    pub fn remove<T: StateData>(&mut self) -> Option<T> {
        let id = TypeId::of::<T>();
        let i = self.entries.iter().position(|(k, _)| *k == id)?;
        let (_, v) = self.entries.remove(i);
        v.downcast_ref::<T>().cloned()
    }

    /// The entries now, to tell later which were written ([`CycleState::written_since`]).
    pub(crate) fn mark(&self, mark: &mut StateMark) {
        mark.clear();
        mark.extend(self.entries.iter().map(|(id, v)| (*id, Arc::as_ptr(v).cast::<()>() as usize)));
    }

    /// The entries written since `mark` (added, or replaced by a new value), shared;
    /// `None` when one was removed. A replaced value has a new address: the new value
    /// is allocated while the old one is still held.
    pub(crate) fn written_since(&self, mark: &StateMark) -> Option<SmallVec<[Entry; 2]>> {
        if self.entries.len() < mark.len() {
            return None;
        }
        let mut written = SmallVec::new();
        for (i, (id, v)) in self.entries.iter().enumerate() {
            match mark.get(i) {
                Some(&(was, _)) if was != *id => return None,
                Some(&(_, addr)) if addr == Arc::as_ptr(v).cast::<()>() as usize => {}
                _ => written.push((*id, v.clone())),
            }
        }
        Some(written)
    }

    /// Writes `entries` (from [`CycleState::written_since`]) as their plugin wrote them.
    pub(crate) fn put_written(&mut self, entries: &[Entry]) {
        for (id, v) in entries {
            match self.entries.iter_mut().find(|(k, _)| k == id) {
                Some(e) => e.1 = v.clone(),
                None => self.entries.push((*id, v.clone())),
            }
        }
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no entries were written.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether the plugin at `position` in the profile's Filter list is skipped.
    pub fn skips_filter(&self, position: usize) -> bool {
        self.skip_filter.contains(position)
    }

    /// Whether the plugin at `position` in the profile's Score list is skipped.
    pub fn skips_score(&self, position: usize) -> bool {
        self.skip_score.contains(position)
    }
}

impl std::fmt::Debug for CycleState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CycleState")
            .field("entries", &self.entries.len())
            .field("skip_filter", &self.skip_filter)
            .field("skip_score", &self.skip_score)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Debug, PartialEq)]
    struct A(u32);
    #[derive(Clone, Debug, PartialEq)]
    struct B(String);

    const fn assert_send_sync<T: Send + Sync>() {}
    const _: () = assert_send_sync::<CycleState>();

    #[test]
    fn typed_reads_and_missing_keys() {
        let mut s = CycleState::new();
        assert_eq!(s.read::<A>(), None);
        s.write(A(1));
        s.write(B("x".into()));
        s.write(A(2));
        assert_eq!(s.len(), 2);
        assert_eq!(s.read::<A>(), Some(&A(2)));
        assert_eq!(s.remove::<B>(), Some(B("x".into())));
        assert_eq!(s.read::<B>(), None);
    }

    #[test]
    fn clone_isolation() {
        let mut s = CycleState::new();
        s.write(A(1));
        s.skip_filter.insert(3);
        let mut c = s.clone();
        c.get_mut::<A>().unwrap().0 = 9;
        c.write(B("only in clone".into()));
        c.skip_filter.insert(70);
        assert_eq!(s.read::<A>(), Some(&A(1)));
        assert_eq!(s.read::<B>(), None);
        assert!(!s.skips_filter(70));
        assert!(c.skips_filter(70) && c.skips_filter(3));
    }

    #[test]
    fn write_once_read_many_across_threads() {
        let mut s = CycleState::new();
        s.write(A(42));
        let s = &s;
        std::thread::scope(|scope| {
            let hs: Vec<_> =
                (0..4).map(|_| scope.spawn(move || (0..1000).all(|_| s.read::<A>() == Some(&A(42))))).collect();
            for h in hs {
                assert!(h.join().unwrap());
            }
        });
    }
}
