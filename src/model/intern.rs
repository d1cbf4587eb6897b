//! Interned strings for hot keys: label keys and values, resource names, topology keys.
//!
//! The interner is process-wide and append-only (like `rustc`'s symbol table): a
//! [`Symbol`] is a `u32`, so label matching on the hot path compares integers. Each
//! distinct string is stored once and never freed; label keys and values of a cluster
//! are a bounded vocabulary, so this trades a little memory for no hashing per node.

use std::fmt;
use std::sync::LazyLock;

use ahash::AHashMap;
use parking_lot::RwLock;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

struct Interner {
    ids: AHashMap<&'static str, u32>,
    strings: Vec<&'static str>,
}

static INTERNER: LazyLock<RwLock<Interner>> = LazyLock::new(|| {
    let mut ids = AHashMap::new();
    ids.insert("", 0);
    RwLock::new(Interner { ids, strings: vec![""] })
});

/// An interned string. Equality and hashing are integer operations.
///
/// `Ord` orders by interning order, not alphabetically; use [`Symbol::as_str`] when
/// a human-meaningful order matters.
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

    /// Returns the symbol for `s`, adding it on first use.
    pub fn intern(s: &str) -> Symbol {
        if let Some(&id) = INTERNER.read().ids.get(s) {
            return Symbol(id);
        }
        let mut w = INTERNER.write();
        if let Some(&id) = w.ids.get(s) {
            return Symbol(id);
        }
        let id = u32::try_from(w.strings.len()).expect("more than 4 billion interned strings");
        let leaked: &'static str = Box::leak(s.to_owned().into_boxed_str());
        w.strings.push(leaked);
        w.ids.insert(leaked, id);
        Symbol(id)
    }

    /// The symbol for `s` if it was ever interned; never adds.
    pub fn lookup(s: &str) -> Option<Symbol> {
        INTERNER.read().ids.get(s).map(|&id| Symbol(id))
    }

    /// The interned text.
    pub fn as_str(self) -> &'static str {
        INTERNER.read().strings[self.0 as usize]
    }

    /// Whether this is the empty string.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The raw id, stable for the life of the process.
    pub const fn id(self) -> u32 {
        self.0
    }

    /// The symbol whose [`Symbol::id`] is `id`. Only for ids taken from a symbol of
    /// this process (the selector packs two of them into an `AttributeKey`);
    /// [`Symbol::as_str`] panics on an id that was never handed out.
    pub(crate) const fn from_id(id: u32) -> Symbol {
        Symbol(id)
    }
}

impl fmt::Debug for Symbol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.as_str())
    }
}

impl fmt::Display for Symbol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
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
        s.serialize_str(self.as_str())
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
}
