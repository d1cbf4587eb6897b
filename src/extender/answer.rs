//! The client's Filter answer decoded in one pass over the response bytes: node names
//! are matched to the nodes sent as they are read (borrowed from the body unless they
//! carry escapes), so a 1,000-node answer costs no `String` per node.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::wire::{self, FailedNodesMap, NodeList};
use crate::framework::extender::NameFinder;

/// An `ExtenderFilterResult` with the passing node names already turned into
/// positions among the nodes sent.
#[derive(Debug, Default)]
pub(crate) struct FilterAnswer {
    /// `NodeNames` was present and not `null` (read only when `names` was asked for).
    pub names: bool,
    /// The first name that is not among the nodes sent.
    pub unknown: Option<String>,
    /// `Nodes` (full objects).
    pub nodes: Option<NodeList>,
    /// `FailedNodes`.
    pub failed: FailedNodesMap,
    /// `FailedAndUnresolvableNodes`.
    pub unresolvable: FailedNodesMap,
    /// `Error`.
    pub error: String,
}

const FIELDS: &[&str] = &["Nodes", "NodeNames", "FailedNodes", "FailedAndUnresolvableNodes", "Error"];

/// Decodes `body` as `ExtenderFilterResult` with Go's key matching (exact, else
/// ignoring case; the last of repeated keys wins): with `names`, `NodeNames` goes into
/// `passed` through `finder`; without, it is skipped. `passed` is cleared first.
///
/// # Errors
/// serde_json's message; the caller re-reads a malformed body with the path-reporting
/// decoder for the message it reports.
pub(crate) fn decode_filter_answer(
    body: &[u8],
    names: bool,
    finder: &mut NameFinder<'_>,
    passed: &mut Vec<usize>,
) -> Result<FilterAnswer, serde_json::Error> {
    passed.clear();
    let mut de = serde_json::Deserializer::from_slice(body);
    let answer = de.deserialize_map(AnswerVisitor { names, finder, passed })?;
    de.end()?;
    Ok(answer)
}

struct AnswerVisitor<'f, 'n> {
    names: bool,
    finder: &'f mut NameFinder<'n>,
    passed: &'f mut Vec<usize>,
}

/// A JSON string, borrowed when it has no escapes.
struct Str<'de>(Cow<'de, str>);

impl<'de> de::Deserialize<'de> for Str<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Str<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Owned(v.to_owned())))
            }
        }
        d.deserialize_str(V)
    }
}

impl<'de> Visitor<'de> for AnswerVisitor<'_, '_> {
    type Value = FilterAnswer;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object (ExtenderFilterResult)")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<FilterAnswer, A::Error> {
        let mut out = FilterAnswer::default();
        while let Some(key) = map.next_key::<Str<'de>>()? {
            match wire::field_index(FIELDS, &key.0) {
                Some(0) => out.nodes = map.next_value::<Option<NodeList>>()?,
                Some(1) if self.names => {
                    self.passed.clear();
                    out.unknown = None;
                    let seed = NamesSeed { finder: self.finder, passed: self.passed, unknown: &mut out.unknown };
                    out.names = map.next_value_seed(seed)?;
                }
                Some(2) => out.failed = map.next_value::<Option<FailedNodesMap>>()?.unwrap_or_default(),
                Some(3) => out.unresolvable = map.next_value::<Option<FailedNodesMap>>()?.unwrap_or_default(),
                Some(4) => out.error = map.next_value::<Option<String>>()?.unwrap_or_default(),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(out)
    }
}

/// `NodeNames`: `null` (false) or a list of names, each matched as it is read.
struct NamesSeed<'f, 'n> {
    finder: &'f mut NameFinder<'n>,
    passed: &'f mut Vec<usize>,
    unknown: &'f mut Option<String>,
}

impl<'de> DeserializeSeed<'de> for NamesSeed<'_, '_> {
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_option(self)
    }
}

impl<'de> Visitor<'de> for NamesSeed<'_, '_> {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of node names or null")
    }

    fn visit_none<E: de::Error>(self) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_unit<E: de::Error>(self) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_seq(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
        if let Some(n) = seq.size_hint() {
            self.passed.reserve(n);
        }
        while let Some(Str(name)) = seq.next_element::<Str<'de>>()? {
            match self.finder.find(&name) {
                Some(k) => self.passed.push(k),
                None => {
                    if self.unknown.is_none() {
                        *self.unknown = Some(name.into_owned());
                    }
                }
            }
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::{Cache, NodeInfo, Snapshot};
    use crate::testing::NodeBuilder;

    fn snap(names: &[&str]) -> Snapshot {
        let mut c = Cache::new();
        for n in names {
            c.add_node(NodeBuilder::new(n).build()).unwrap();
        }
        let mut s = Snapshot::default();
        c.update_snapshot(&mut s);
        s
    }

    #[test]
    fn names_become_positions_with_go_key_matching() {
        let s = snap(&["a", "b", "c"]);
        let nodes: Vec<&NodeInfo> = s.nodes().iter().map(|n| &**n).collect();
        let pos = |name: &str| nodes.iter().position(|n| n.node().name() == name).unwrap();
        let mut passed = Vec::new();
        let body =
            br#"{"nodenames":["c","\u0061"],"FailedNodes":{"b":"no"},"Error":"","Extra":[1,{"x":2}],"Nodes":null}"#;
        let a = decode_filter_answer(body, true, &mut NameFinder::new(&nodes), &mut passed).unwrap();
        assert_eq!(passed, [pos("c"), pos("a")]);
        assert!(a.names && a.unknown.is_none() && a.nodes.is_none());
        assert_eq!(a.failed["b"], "no");
        // The exact key wins over a case-folded one only by order, as Go: the last wins.
        let body = br#"{"NodeNames":["a"],"NODENAMES":["b","zz","yy"]}"#;
        let a = decode_filter_answer(body, true, &mut NameFinder::new(&nodes), &mut passed).unwrap();
        assert_eq!((passed.as_slice(), a.unknown.as_deref()), ([pos("b")].as_slice(), Some("zz")));
        // null names, and names not asked for.
        let a = decode_filter_answer(
            br#"{"NodeNames":null,"Error":"boom"}"#,
            true,
            &mut NameFinder::new(&nodes),
            &mut passed,
        )
        .unwrap();
        assert!(!a.names && passed.is_empty() && a.error == "boom");
        let a =
            decode_filter_answer(br#"{"NodeNames":["a"]}"#, false, &mut NameFinder::new(&nodes), &mut passed).unwrap();
        assert!(!a.names && passed.is_empty());
        // Malformed bodies are errors.
        for bad in [&b"{"[..], b"[]", br#"{"NodeNames":[1]}"#, br#"{"Error":3}"#, b"{} x"] {
            assert!(decode_filter_answer(bad, true, &mut NameFinder::new(&nodes), &mut passed).is_err());
        }
    }
}
