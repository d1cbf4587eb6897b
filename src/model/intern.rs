//! Interned strings for hot keys: label keys and values, node names, resource names,
//! topology keys, with label and node-name text reclaimed once nothing holds it.
//!
//! A [`Symbol`] is a `u32` slot index, so label matching on the hot path compares
//! integers. Each distinct string is stored once. A string enters the table in one of
//! two ways:
//!
//! - **Pinned**: [`Symbol::intern`] (and [`Symbol::as_str`], which hands out a
//!   `&'static str`) keep the string for the life of the process, like `rustc`'s symbol
//!   table. Plugin names, resource names, taint and topology keys, selector values: a
//!   bounded vocabulary.
//! - **Held**: a [`crate::model::Labels`] set counts a reference on each key and value
//!   it holds (taken when built, inserted or cloned, given back when dropped or
//!   removed). When the last reference goes and nobody pinned the string, its text is
//!   freed and its slot goes on a free list for the next new string. Label values that
//!   never repeat (`pod-template-hash`, `controller-uid`, job names) thus cost memory
//!   only while a pod or node carrying them lives.
//! - **Held by one owner**: a [`HeldSymbol`] is one counted reference, taken when made
//!   or cloned and given back when dropped. A node's name is held by its `NodeInfo`
//!   (every copy a snapshot keeps), by pods assumed on it and by nominations to it, so
//!   node churn leaves no names behind.
//!
//! A `Symbol` itself is `Copy` and holds nothing: one copied out of a label set is
//! meaningful while that set (or any other holder) lives. Keep a symbol longer with
//! [`Symbol::intern`], which pins it. Formatting ([`fmt::Display`], [`fmt::Debug`],
//! serde) reads the text without pinning it.

use std::borrow::Borrow;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, LazyLock};

use ahash::AHashMap;
use parking_lot::RwLock;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The text of a slot, shared between the slot and the map key.
#[derive(Clone)]
struct Text(Arc<str>);

impl Borrow<str> for Text {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl PartialEq for Text {
    fn eq(&self, other: &Self) -> bool {
        *self.0 == *other.0
    }
}

impl Eq for Text {}

impl Hash for Text {
    fn hash<H: Hasher>(&self, state: &mut H) {
        // As `str` hashes, so `Borrow<str>` lookups find it.
        (*self.0).hash(state);
    }
}

struct Slot {
    /// `None` while the slot is on the free list.
    text: Option<Text>,
    /// A leaked copy once pinned; a pinned slot is never freed.
    pinned: Option<&'static str>,
    /// References held by label sets.
    refs: AtomicU32,
}

struct Interner {
    ids: AHashMap<Text, u32>,
    slots: Vec<Slot>,
    free: Vec<u32>,
}

static INTERNER: LazyLock<RwLock<Interner>> = LazyLock::new(|| {
    let empty = Text(Arc::from(""));
    let mut ids = AHashMap::new();
    ids.insert(empty.clone(), 0);
    let slot = Slot { text: Some(empty), pinned: Some(""), refs: AtomicU32::new(0) };
    RwLock::new(Interner { ids, slots: vec![slot], free: Vec::new() })
});

impl Interner {
    /// Adds `s` (absent) in a free slot or a new one, with `refs` references.
    fn insert(&mut self, s: &str, refs: u32) -> u32 {
        let text = Text(Arc::from(s));
        let slot = Slot { text: Some(text.clone()), pinned: None, refs: AtomicU32::new(refs) };
        let id = if let Some(id) = self.free.pop() {
            self.slots[id as usize] = slot;
            id
        } else {
            let id = u32::try_from(self.slots.len()).expect("more than 4 billion live interned strings");
            self.slots.push(slot);
            id
        };
        self.ids.insert(text, id);
        id
    }

    fn pin(&mut self, id: u32) -> &'static str {
        let slot = &mut self.slots[id as usize];
        if let Some(p) = slot.pinned {
            return p;
        }
        let text = slot.text.as_ref().map_or("", |t| &*t.0);
        let leaked: &'static str = Box::leak(text.to_owned().into_boxed_str());
        slot.pinned = Some(leaked);
        leaked
    }

    /// Drops one reference; frees the slot when it was the last and nobody pinned it.
    fn release(&mut self, id: u32) {
        let Some(slot) = self.slots.get_mut(id as usize) else { return };
        let refs = slot.refs.get_mut();
        if *refs == 0 {
            // A symbol that was never held (pinned, or a caller's stray release).
            return;
        }
        *refs -= 1;
        if *refs == 0
            && slot.pinned.is_none()
            && let Some(text) = slot.text.take()
        {
            self.ids.remove(&*text.0);
            self.free.push(id);
        }
    }
}

/// Drops one reference under the read lock when it is not the last one (no slot can be
/// freed then); `false` when the caller must take the write lock ([`Interner::release`]).
fn release_shared(r: &Interner, id: u32) -> bool {
    let Some(slot) = r.slots.get(id as usize) else { return true };
    // Readers only ever take a count from n > 1 to n - 1, so a reader never frees a
    // slot; the 1 -> 0 step (which may free) happens under the write lock.
    slot.refs.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| (n > 1).then(|| n - 1)).is_ok()
}

/// The interner's texts under one read lock (see [`Symbol::with_texts`]): for comparing
/// many symbols' text (a sort) without pinning them or locking per comparison.
pub(crate) struct Texts<'a>(&'a Interner);

impl Texts<'_> {
    /// The text of `s` (`""` for a symbol whose holders are all gone).
    pub(crate) fn get(&self, s: Symbol) -> &str {
        self.0.slots.get(s.0 as usize).and_then(|s| s.text.as_ref()).map_or("", |t| &*t.0)
    }
}

/// What the interner holds, for tests and memory accounting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct InternerStats {
    /// Strings in the table (pinned or held).
    pub live: usize,
    /// Of those, pinned for the life of the process.
    pub pinned: usize,
    /// Slots ever allocated (live plus free): the table's high-water mark.
    pub slots: usize,
    /// Bytes of text of the live strings (not counting the table's own overhead, nor
    /// the leaked copies pinned strings keep).
    pub bytes: usize,
}

/// An interned string. Equality and hashing are integer operations.
///
/// `Ord` orders by slot, not alphabetically; use [`Symbol::as_str`] when a
/// human-meaningful order matters.
///
/// ```
/// use schedkit::model::Symbol;
/// let a = Symbol::intern("topology.kubernetes.io/zone");
/// assert_eq!(a, Symbol::intern("topology.kubernetes.io/zone"));
/// assert_eq!(a.as_str(), "topology.kubernetes.io/zone");
/// assert!(Symbol::EMPTY.is_empty());
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Symbol(u32);

impl Symbol {
    /// The empty string.
    pub const EMPTY: Symbol = Symbol(0);

    /// Returns the symbol for `s`, adding it on first use, and pins it: the string
    /// stays interned for the life of the process. Use it for a bounded vocabulary
    /// (keys, names from configuration); label sets hold their text without pinning.
    pub fn intern(s: &str) -> Symbol {
        {
            let r = INTERNER.read();
            if let Some(&id) = r.ids.get(s)
                && r.slots[id as usize].pinned.is_some()
            {
                return Symbol(id);
            }
        }
        let mut w = INTERNER.write();
        let id = match w.ids.get(s) {
            Some(&id) => id,
            None => w.insert(s, 0),
        };
        w.pin(id);
        Symbol(id)
    }

    /// Takes one reference on the symbol for `s`, adding it unpinned if new. Give it
    /// back with [`Symbol::release_all`].
    pub(crate) fn acquire(s: &str) -> Symbol {
        {
            let r = INTERNER.read();
            if let Some(&id) = r.ids.get(s) {
                // Slots are freed only under the write lock, so this one is live.
                r.slots[id as usize].refs.fetch_add(1, Ordering::Relaxed);
                return Symbol(id);
            }
        }
        let mut w = INTERNER.write();
        if let Some(&id) = w.ids.get(s) {
            *w.slots[id as usize].refs.get_mut() += 1;
            return Symbol(id);
        }
        Symbol(w.insert(s, 1))
    }

    /// Takes one more reference on each live symbol of `syms` (a label set cloned,
    /// or given symbols it did not intern itself).
    pub(crate) fn retain_all(syms: impl IntoIterator<Item = Symbol>) {
        let r = INTERNER.read();
        for s in syms {
            if let Some(slot) = r.slots.get(s.0 as usize)
                && slot.text.is_some()
            {
                slot.refs.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Gives back one reference on each of `syms`, freeing the strings no holder
    /// and no pin keeps. References that are not the last go back under the read lock;
    /// the write lock is taken once, only when some may be the last.
    pub(crate) fn release_all(syms: impl IntoIterator<Item = Symbol>) {
        let mut syms = syms.into_iter().peekable();
        if syms.peek().is_none() {
            return;
        }
        let mut last: smallvec::SmallVec<[Symbol; 8]> = smallvec::SmallVec::new();
        {
            let r = INTERNER.read();
            for s in syms {
                if !release_shared(&r, s.0) {
                    last.push(s);
                }
            }
        }
        if last.is_empty() {
            return;
        }
        let mut w = INTERNER.write();
        for s in last {
            // Re-checked under the write lock: another holder may have come or gone.
            w.release(s.0);
        }
    }

    /// The symbol for `s` if it is interned now; never adds.
    pub fn lookup(s: &str) -> Option<Symbol> {
        INTERNER.read().ids.get(s).map(|&id| Symbol(id))
    }

    /// The interned text, for the life of the process: this pins the string (see
    /// [`Symbol::intern`]). To print or compare without pinning, use
    /// [`fmt::Display`] or [`Symbol::with_str`].
    pub fn as_str(self) -> &'static str {
        if let Some(p) = INTERNER.read().slots.get(self.0 as usize).and_then(|s| s.pinned) {
            return p;
        }
        let mut w = INTERNER.write();
        if self.0 as usize >= w.slots.len() {
            return "";
        }
        w.pin(self.0)
    }

    /// Runs `f` on the text without pinning it (`""` for a symbol whose holders are
    /// all gone). Holds the interner's read lock while `f` runs: don't intern in `f`.
    pub fn with_str<R>(self, f: impl FnOnce(&str) -> R) -> R {
        let r = INTERNER.read();
        let slot = r.slots.get(self.0 as usize);
        f(slot.and_then(|s| s.text.as_ref()).map_or("", |t| &*t.0))
    }

    /// Runs `f` with every symbol's text readable under one read lock, without pinning:
    /// don't intern in `f`.
    pub(crate) fn with_texts<R>(f: impl FnOnce(&Texts<'_>) -> R) -> R {
        let r = INTERNER.read();
        f(&Texts(&r))
    }

    /// The text, shared, so formatting runs without the interner's lock (`None` for a
    /// symbol whose holders are all gone).
    pub(crate) fn text(self) -> Option<Arc<str>> {
        INTERNER.read().slots.get(self.0 as usize).and_then(|s| s.text.as_ref()).map(|t| t.0.clone())
    }

    /// Whether this is the empty string.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The raw id: the slot index, stable while the string is interned.
    pub const fn id(self) -> u32 {
        self.0
    }

    /// The symbol whose [`Symbol::id`] is `id`. Only for ids taken from a live symbol
    /// of this process (the selector packs two of them into an `AttributeKey`).
    pub(crate) const fn from_id(id: u32) -> Symbol {
        Symbol(id)
    }

    /// Counts of the interner's table: how many strings are live, pinned, and how
    /// many slots were ever allocated. For memory accounting and leak tests.
    pub fn interner_stats() -> InternerStats {
        let r = INTERNER.read();
        InternerStats {
            live: r.ids.len(),
            pinned: r.slots.iter().filter(|s| s.pinned.is_some()).count(),
            slots: r.slots.len(),
            bytes: r.ids.keys().map(|t| t.0.len()).sum(),
        }
    }
}

/// A counted reference on an interned string: the string (and its slot id) stays
/// interned while any `HeldSymbol` for it lives, and is freed with the last one unless
/// something pinned it.
///
/// For names whose lifetime an object owns: a node's name is held by its
/// [`NodeInfo`](crate::snapshot::NodeInfo) (and every copy of it a snapshot keeps), and
/// by a pod assumed on it. Since a freed slot id is reused for another string, a plain
/// [`Symbol`] copied from a `HeldSymbol` names that string only while some holder lives.
///
/// Cloning takes one more reference (an atomic increment under the interner's read
/// lock); dropping gives it back (under the read lock too, unless it was the last).
///
/// ```
/// use schedkit::model::{HeldSymbol, Symbol};
/// let a = HeldSymbol::new("held-doc-node-a");
/// assert_eq!(a.as_str(), "held-doc-node-a");
/// assert_eq!(Symbol::lookup("held-doc-node-a"), Some(a.symbol()));
/// let b = a.clone();
/// drop(a);
/// assert_eq!(Symbol::lookup("held-doc-node-a"), Some(b.symbol()), "b still holds it");
/// drop(b);
/// assert_eq!(Symbol::lookup("held-doc-node-a"), None, "freed with the last holder");
/// ```
pub struct HeldSymbol {
    sym: Symbol,
    /// The slot's text, so [`HeldSymbol::as_str`] needs no lock.
    text: Arc<str>,
}

impl HeldSymbol {
    /// Takes a reference on the symbol for `s`, adding it (unpinned) if new.
    pub fn new(s: &str) -> HeldSymbol {
        {
            let r = INTERNER.read();
            if let Some(&id) = r.ids.get(s) {
                let slot = &r.slots[id as usize];
                if let Some(text) = &slot.text {
                    // Slots are freed only under the write lock, so this one is live.
                    slot.refs.fetch_add(1, Ordering::Relaxed);
                    return HeldSymbol { sym: Symbol(id), text: text.0.clone() };
                }
            }
        }
        let mut w = INTERNER.write();
        let id = match w.ids.get(s) {
            Some(&id) => {
                *w.slots[id as usize].refs.get_mut() += 1;
                id
            }
            None => w.insert(s, 1),
        };
        let text = w.slots[id as usize].text.as_ref().map_or_else(|| Arc::from(""), |t| t.0.clone());
        HeldSymbol { sym: Symbol(id), text }
    }

    /// Takes one more reference on `sym`, which some holder must keep alive now (a
    /// node's name read from its `NodeInfo`); `None` for a symbol whose holders are
    /// all gone.
    pub fn hold(sym: Symbol) -> Option<HeldSymbol> {
        let r = INTERNER.read();
        let slot = r.slots.get(sym.0 as usize)?;
        let text = slot.text.as_ref()?.0.clone();
        slot.refs.fetch_add(1, Ordering::Relaxed);
        Some(HeldSymbol { sym, text })
    }

    /// The symbol, for integer comparison and map keys. It names this string while
    /// this (or another) holder lives.
    #[inline]
    pub fn symbol(&self) -> Symbol {
        self.sym
    }

    /// The text, without the interner's lock and without pinning it.
    #[inline]
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

impl Clone for HeldSymbol {
    fn clone(&self) -> Self {
        Symbol::retain_all([self.sym]);
        HeldSymbol { sym: self.sym, text: self.text.clone() }
    }
}

impl Drop for HeldSymbol {
    fn drop(&mut self) {
        if !release_shared(&INTERNER.read(), self.sym.0) {
            INTERNER.write().release(self.sym.0);
        }
    }
}

/// A map keyed by `HeldSymbol` is searched with a plain [`Symbol`] (the two hash and
/// compare alike).
impl Borrow<Symbol> for HeldSymbol {
    fn borrow(&self) -> &Symbol {
        &self.sym
    }
}

impl PartialEq for HeldSymbol {
    fn eq(&self, other: &Self) -> bool {
        self.sym == other.sym
    }
}

impl Eq for HeldSymbol {}

impl Hash for HeldSymbol {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.sym.hash(state);
    }
}

impl fmt::Debug for HeldSymbol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", &*self.text)
    }
}

impl fmt::Display for HeldSymbol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Counted references on a few symbols, taken and given back together: how a node
/// selector requirement holds its values (node names in `matchFields`, as every
/// DaemonSet pod has) without pinning them.
#[derive(Default)]
pub(crate) struct Holds(smallvec::SmallVec<[Symbol; 2]>);

impl Holds {
    /// Takes a reference on each of `texts`, adding the new ones unpinned.
    pub(crate) fn acquire<'a>(texts: impl IntoIterator<Item = &'a str>) -> Holds {
        Holds(texts.into_iter().map(Symbol::acquire).collect())
    }

    /// The held symbols, in the order given.
    pub(crate) fn symbols(&self) -> &[Symbol] {
        &self.0
    }

    /// Takes one more reference, on the symbol for `text` (added unpinned if new).
    pub(crate) fn push(&mut self, text: &str) -> Symbol {
        let s = Symbol::acquire(text);
        self.0.push(s);
        s
    }
}

impl Clone for Holds {
    fn clone(&self) -> Self {
        Symbol::retain_all(self.0.iter().copied());
        Holds(self.0.clone())
    }
}

impl Drop for Holds {
    fn drop(&mut self) {
        Symbol::release_all(self.0.drain(..));
    }
}

/// What is held is the owner's business: two owners with equal values compare equal.
impl PartialEq for Holds {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for Holds {}

impl Hash for Holds {
    fn hash<H: Hasher>(&self, _: &mut H) {}
}

impl fmt::Debug for Holds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Holds")
    }
}

impl fmt::Debug for Symbol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = self.text();
        write!(f, "{:?}", text.as_deref().unwrap_or(""))
    }
}

impl fmt::Display for Symbol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = self.text();
        f.write_str(text.as_deref().unwrap_or(""))
    }
}

impl From<&str> for Symbol {
    fn from(s: &str) -> Self {
        Symbol::intern(s)
    }
}

impl From<&String> for Symbol {
    fn from(s: &String) -> Self {
        Symbol::intern(s)
    }
}

impl Serialize for Symbol {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let text = self.text();
        s.serialize_str(text.as_deref().unwrap_or(""))
    }
}

impl<'de> Deserialize<'de> for Symbol {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Ok(Symbol::intern(&s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interning_is_stable_across_threads() {
        let handles: Vec<_> = (0..4)
            .map(|t| {
                std::thread::spawn(move || {
                    (0..200).map(|i| Symbol::intern(&format!("k{}", (i + t) % 50))).collect::<Vec<_>>()
                })
            })
            .collect();
        let all: Vec<Vec<Symbol>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        for syms in &all {
            for s in syms {
                assert_eq!(Symbol::intern(s.as_str()), *s);
            }
        }
        assert_eq!(Symbol::lookup("never-interned-xyz"), None);
        assert_eq!(Symbol::intern(""), Symbol::EMPTY);
    }

    #[test]
    fn held_strings_are_freed_with_their_last_holder_and_slots_reused() {
        let a = Symbol::acquire("intern-test-held-a");
        assert_eq!(Symbol::acquire("intern-test-held-a"), a);
        assert_eq!(a.to_string(), "intern-test-held-a");
        Symbol::release_all([a]);
        assert_eq!(Symbol::lookup("intern-test-held-a"), Some(a), "one holder left");
        Symbol::release_all([a]);
        assert_eq!(Symbol::lookup("intern-test-held-a"), None, "freed with the last holder");
        // Freed slots are reused by later new strings. Other tests intern concurrently
        // and may take a freed slot first, so only the table's growth over many
        // acquire/release rounds is bounded (without reuse it would grow by 10,000).
        let before = Symbol::interner_stats().slots;
        for i in 0..10_000 {
            let b = Symbol::acquire(&format!("intern-test-held-b-{i}"));
            Symbol::release_all([b]);
        }
        let grown = Symbol::interner_stats().slots - before;
        assert!(grown < 5_000, "the table grew by {grown} slots over 10,000 freed strings");
    }

    #[test]
    fn pinning_keeps_a_held_string() {
        let a = Symbol::acquire("intern-test-pinned");
        assert_eq!(Symbol::intern("intern-test-pinned"), a);
        Symbol::release_all([a]);
        assert_eq!(Symbol::lookup("intern-test-pinned"), Some(a));
        let b = Symbol::acquire("intern-test-as-str");
        assert_eq!(b.as_str(), "intern-test-as-str");
        Symbol::release_all([b]);
        assert_eq!(Symbol::lookup("intern-test-as-str"), Some(b), "as_str pins");
        // Releasing a pinned symbol that nobody holds changes nothing.
        Symbol::release_all([Symbol::EMPTY, a]);
        assert_eq!(Symbol::intern(""), Symbol::EMPTY);
    }

    #[test]
    fn held_symbols_count_every_copy_and_free_with_the_last() {
        let a = HeldSymbol::new("intern-test-held-node");
        let copies: Vec<HeldSymbol> = (0..5).map(|_| a.clone()).collect();
        assert!(copies.iter().all(|c| *c == a && c.as_str() == "intern-test-held-node"));
        // A label set holding the same text shares the slot and the count.
        let label = Symbol::acquire("intern-test-held-node");
        assert_eq!(label, a.symbol());
        drop(a);
        drop(copies);
        assert_eq!(Symbol::lookup("intern-test-held-node"), Some(label), "the label still holds it");
        Symbol::release_all([label]);
        assert_eq!(Symbol::lookup("intern-test-held-node"), None);
        // Pinned afterwards: a holder going away never frees a pinned string.
        let b = HeldSymbol::new("intern-test-held-pinned");
        assert_eq!(Symbol::intern("intern-test-held-pinned"), b.symbol());
        drop(b);
        assert!(Symbol::lookup("intern-test-held-pinned").is_some());
    }

    #[test]
    fn release_all_frees_only_the_last_references() {
        let a = Symbol::acquire("intern-test-rel-a");
        let b = Symbol::acquire("intern-test-rel-b");
        let b2 = Symbol::acquire("intern-test-rel-b");
        assert_eq!(b, b2);
        // `a` goes with its only reference, `b` keeps one: one call, both kinds.
        Symbol::release_all([a, b]);
        assert_eq!(Symbol::lookup("intern-test-rel-a"), None);
        assert_eq!(Symbol::lookup("intern-test-rel-b"), Some(b));
        Symbol::release_all([b]);
        assert_eq!(Symbol::lookup("intern-test-rel-b"), None);
        // Holds: cloned with a reference each, given back on drop.
        let h = Holds::acquire(["intern-test-holds-x", "intern-test-holds-y"]);
        let h2 = h.clone();
        assert_eq!(h.symbols(), h2.symbols());
        drop(h);
        assert!(Symbol::lookup("intern-test-holds-x").is_some(), "the clone holds it");
        drop(h2);
        assert_eq!(Symbol::lookup("intern-test-holds-x"), None);
        assert_eq!(Symbol::lookup("intern-test-holds-y"), None);
    }

    #[test]
    fn concurrent_held_clones_and_drops_agree() {
        let root = HeldSymbol::new("intern-held-race");
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let mine = root.clone();
                std::thread::spawn(move || {
                    for _ in 0..1_000 {
                        let c = mine.clone();
                        assert_eq!(c.as_str(), "intern-held-race");
                        let fresh = HeldSymbol::new("intern-held-race");
                        assert_eq!(fresh.symbol(), c.symbol());
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(Symbol::lookup("intern-held-race"), Some(root.symbol()));
        drop(root);
        assert_eq!(Symbol::lookup("intern-held-race"), None, "every clone gave its reference back");
    }

    #[test]
    fn concurrent_acquire_and_release_agree() {
        let handles: Vec<_> = (0..4)
            .map(|t| {
                std::thread::spawn(move || {
                    for i in 0..500 {
                        let s = format!("intern-race-{}", (i + t) % 7);
                        let sym = Symbol::acquire(&s);
                        assert_eq!(sym.with_str(str::to_owned), s);
                        Symbol::release_all([sym]);
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        for i in 0..7 {
            assert_eq!(Symbol::lookup(&format!("intern-race-{i}")), None);
        }
    }
}
