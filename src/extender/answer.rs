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
/// `sent`, the names as the request carried them, lets runs of names sent in order
/// be matched by comparing bytes.
///
/// # Errors
/// serde_json's message; the caller re-reads a malformed body with the path-reporting
/// decoder for the message it reports.
pub(crate) fn decode_filter_answer(
    body: &[u8],
    names: bool,
    sent: Option<SentNames<'_>>,
    finder: &mut NameFinder<'_>,
    passed: &mut Vec<usize>,
) -> Result<FilterAnswer, serde_json::Error> {
    if let Some(answer) = fast_answer(body, names, sent, finder, passed) {
        return Ok(answer);
    }
    serde_answer(body, names, finder, passed)
}

/// [`decode_filter_answer`] through serde_json alone.
fn serde_answer(
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

/// A cursor over a JSON body for [`fast_answer`].
struct Scan<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Scan<'a> {
    fn ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.b.get(self.i) {
            self.i += 1;
        }
    }

    /// Skips white space, then `c` if it is next.
    fn eat(&mut self, c: u8) -> bool {
        self.ws();
        let hit = self.b.get(self.i) == Some(&c);
        self.i += usize::from(hit);
        hit
    }

    /// A string with no escape and no control character, as its bytes (white space
    /// first is skipped); `None` for anything else.
    fn plain_str(&mut self) -> Option<&'a [u8]> {
        if !self.eat(b'"') {
            return None;
        }
        let start = self.i;
        let len = self.b[start..].iter().position(|&c| c == b'"' || c == b'\\' || c < 0x20)?;
        self.i = start + len + 1;
        (self.b[start + len] == b'"').then(|| &self.b[start..start + len])
    }

    /// One JSON value of type `T` through serde_json, from here.
    fn value<T: de::Deserialize<'a>>(&mut self) -> Option<T> {
        let mut stream = serde_json::Deserializer::from_slice(&self.b[self.i..]).into_iter::<T>();
        let v = stream.next()?.ok()?;
        self.i += stream.byte_offset();
        Some(v)
    }
}

/// The node names as the client wrote them into the request, every one without
/// escapes: `"n0","n1",...` and where each closing quote is. An answer that passes
/// nodes in the order sent repeats runs of these very bytes, so a run is matched by
/// comparing the answer's bytes with the request's, 16 at a time, without looking
/// at a node.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SentNames<'a> {
    text: &'a [u8],
    ends: &'a [u32],
}

impl<'a> SentNames<'a> {
    /// `text` as written (names between quotes, joined by commas, none needing an
    /// escape); `ends[k]`, the position of name `k`'s closing quote in `text`.
    pub(crate) fn new(text: &'a [u8], ends: &'a [u32]) -> Self {
        SentNames { text, ends }
    }

    /// How many names from the `k`th on `rest` (the answer from a string's opening
    /// quote) repeats exactly as sent, and how many bytes of `rest` they take up to
    /// the last one's closing quote; `(0, 0)` when not even the `k`th does. Every
    /// byte up to that quote being equal, the answer's strings there are the sent
    /// names, one each, joined by single commas.
    fn run(&self, k: usize, rest: &[u8]) -> (usize, usize) {
        let Some(&first) = self.ends.get(k) else { return (0, 0) };
        let from = if k == 0 { 0 } else { self.ends[k - 1] as usize + 2 };
        let Some(sent) = self.text.get(from..) else { return (0, 0) };
        let limit = from + common_prefix(rest, sent);
        if first as usize >= limit {
            return (0, 0);
        }
        // The names whose closing quote is inside the common bytes (`ends` ascend).
        let j = k + 1 + self.ends[k + 1..].partition_point(|&e| (e as usize) < limit);
        (j - k, self.ends[j - 1] as usize + 1 - from)
    }
}

/// How many bytes `a` and `b` share from the start: blocks of 256 compared whole
/// (`memcmp`), then 16 at a time within the first block that differs.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut i = 0;
    while i + 256 <= n && a[i..i + 256] == b[i..i + 256] {
        i += 256;
    }
    while let (Some(x), Some(y)) = (a[i..].first_chunk::<16>(), b[i..].first_chunk::<16>()) {
        let diff = u128::from_le_bytes(*x) ^ u128::from_le_bytes(*y);
        if diff != 0 {
            return i + (diff.trailing_zeros() / 8) as usize;
        }
        i += 16;
    }
    i + a[i..].iter().zip(&b[i..]).take_while(|(x, y)| x == y).count()
}

/// The usual answer read without serde for `NodeNames` (the bulk of it): keys and
/// names without escapes, names matched by their bytes (runs of them against
/// `sent`). Anything else (an escape, a malformed body) gives `None`, and the caller
/// reads the body with serde; a proptest checks both give the same answer.
fn fast_answer(
    body: &[u8],
    names: bool,
    sent: Option<SentNames<'_>>,
    finder: &mut NameFinder<'_>,
    passed: &mut Vec<usize>,
) -> Option<FilterAnswer> {
    passed.clear();
    let mut s = Scan { b: body, i: 0 };
    let mut out = FilterAnswer::default();
    if !s.eat(b'{') {
        return None;
    }
    if !s.eat(b'}') {
        loop {
            let key = std::str::from_utf8(s.plain_str()?).ok()?;
            if !s.eat(b':') {
                return None;
            }
            match wire::field_index(FIELDS, key) {
                Some(0) => out.nodes = s.value::<Option<NodeList>>()?,
                Some(1) if names => {
                    passed.clear();
                    out.unknown = None;
                    out.names = fast_names(&mut s, sent, finder, passed, &mut out.unknown)?;
                }
                Some(2) => out.failed = s.value::<Option<FailedNodesMap>>()?.unwrap_or_default(),
                Some(3) => out.unresolvable = s.value::<Option<FailedNodesMap>>()?.unwrap_or_default(),
                Some(4) => out.error = s.value::<Option<String>>()?.unwrap_or_default(),
                _ => {
                    s.value::<IgnoredAny>()?;
                }
            }
            if s.eat(b',') {
                continue;
            }
            if s.eat(b'}') {
                break;
            }
            return None;
        }
    }
    s.ws();
    (s.i == body.len()).then_some(out)
}

/// `NodeNames`' value: `null` (false) or a list of plain names (true).
fn fast_names(
    s: &mut Scan<'_>,
    sent: Option<SentNames<'_>>,
    finder: &mut NameFinder<'_>,
    passed: &mut Vec<usize>,
    unknown: &mut Option<String>,
) -> Option<bool> {
    s.ws();
    if s.b[s.i..].starts_with(b"null") {
        s.i += 4;
        return Some(false);
    }
    if !s.eat(b'[') {
        return None;
    }
    if s.eat(b']') {
        return Some(true);
    }
    loop {
        // The usual next entries are the next names sent: a run matched in place.
        s.ws();
        if let Some(sent) = sent
            && s.b.get(s.i) == Some(&b'"')
            && let Some(k) = finder.cursor()
        {
            let (count, len) = sent.run(k, &s.b[s.i..]);
            if count > 0 {
                passed.extend(k..k + count);
                finder.skip_to(k + count);
                s.i += len;
                if s.eat(b',') {
                    continue;
                }
                return s.eat(b']').then_some(true);
            }
        }
        let name = s.plain_str()?;
        if let Some(k) = finder.find_bytes(name) {
            passed.push(k);
        } else {
            let name = std::str::from_utf8(name).ok()?;
            if unknown.is_none() {
                *unknown = Some(name.to_owned());
            }
        }
        if s.eat(b',') {
            continue;
        }
        return s.eat(b']').then_some(true);
    }
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
    use proptest::prelude::*;

    fn snap(names: &[&str]) -> Snapshot {
        let mut c = Cache::new();
        for n in names {
            c.add_node(NodeBuilder::new(n).build()).unwrap();
        }
        let mut s = Snapshot::default();
        c.update_snapshot(&mut s);
        s
    }

    /// The names of `nodes` as the client writes them, and where each closing quote is.
    fn sent_of(nodes: &[&NodeInfo]) -> (Vec<u8>, Vec<u32>) {
        let mut text = Vec::new();
        let mut ends = Vec::new();
        for (i, n) in nodes.iter().enumerate() {
            if i > 0 {
                text.push(b',');
            }
            text.extend_from_slice(format!("\"{}\"", n.node().name()).as_bytes());
            ends.push(u32::try_from(text.len() - 1).unwrap());
        }
        (text, ends)
    }

    #[test]
    fn common_prefix_counts_equal_leading_bytes() {
        // Past two blocks of 256 and a tail shorter than 16.
        let a: Vec<u8> = (0..600u32).map(|i| (i * 7 % 251) as u8).collect();
        for n in 0..=a.len() {
            let mut b = a.clone();
            if n < b.len() {
                b[n] ^= 1;
            }
            assert_eq!(common_prefix(&a, &b), n);
            assert_eq!(common_prefix(&a[..n], &a), n);
            assert_eq!(common_prefix(&a, &a[..n]), n);
        }
    }

    /// A JSON text for `ExtenderFilterResult`: keys in any case, repeated or unknown,
    /// names with and without escapes, known and unknown, optional white space, and
    /// sometimes cut short.
    fn answer_text() -> impl Strategy<Value = String> {
        let key = prop::sample::select(vec![
            "NodeNames",
            "nodenames",
            "NODENAMES",
            "FailedNodes",
            "failednodes",
            "FailedAndUnresolvableNodes",
            "Error",
            "error",
            "Nodes",
            "Extra",
            "Node\\u004eames",
        ]);
        let name = prop::sample::select(vec![r#""a""#, r#""b""#, r#""c""#, r#""zz""#, r#""\u0061""#, r#""a\"b""#, "1"]);
        let names = prop_oneof![
            Just("null".to_owned()),
            prop::collection::vec(name, 0..6).prop_map(|v| format!("[{}]", v.join(" , "))),
        ];
        let other = prop::sample::select(vec![
            "null",
            "{}",
            r#"{"b":"no"}"#,
            r#"{ "a" : "x\ny" , "c":"" }"#,
            r#""""#,
            r#""boom""#,
            r#""\u00e9""#,
            "[1,{\"x\":[2,null]}]",
            "3",
            r#"{"items":[]}"#,
        ]);
        let ws = prop::sample::select(vec!["", " ", "\n\t"]);
        let entry = (key, prop_oneof![names, other.prop_map(str::to_owned)], ws.clone())
            .prop_map(|(k, v, w)| format!("{w}\"{k}\"{w}:{w}{v}{w}"));
        (prop::collection::vec(entry, 0..6), ws, any::<bool>(), any::<prop::sample::Index>()).prop_map(
            |(entries, w, cut, at)| {
                let text = format!("{w}{{{}}}{w}", entries.join(","));
                if cut { text[..at.index(text.len() + 1)].to_owned() } else { text }
            },
        )
    }

    proptest::proptest! {
        /// The byte-level reader gives serde's answer, or hands over to it.
        #[test]
        fn fast_reader_equals_serde(text in answer_text(), names in any::<bool>()) {
            let s = snap(&["a", "b", "c"]);
            let nodes: Vec<&NodeInfo> = s.nodes().iter().map(|n| &**n).collect();
            let (mut p1, mut p2) = (Vec::new(), Vec::new());
            // The names sent are plain, so runs of them are matched in place.
            let (sent, ends) = sent_of(&nodes);
            let sent = SentNames::new(&sent, &ends);
            let fast = decode_filter_answer(text.as_bytes(), names, Some(sent), &mut NameFinder::new(&nodes), &mut p1);
            let slow = serde_answer(text.as_bytes(), names, &mut NameFinder::new(&nodes), &mut p2);
            match (fast, slow) {
                (Ok(f), Ok(s)) => {
                    prop_assert_eq!(&p1, &p2);
                    prop_assert_eq!(
                        (f.names, f.unknown, f.nodes, f.failed, f.unresolvable, f.error),
                        (s.names, s.unknown, s.nodes, s.failed, s.unresolvable, s.error)
                    );
                }
                (Err(f), Err(s)) => prop_assert_eq!(f.to_string(), s.to_string()),
                (f, s) => prop_assert!(false, "fast {:?} vs serde {:?}", f.map(|_| ()), s.map(|_| ())),
            }
        }

        /// Runs of names matched against the request's bytes give the positions serde
        /// finds, whatever the answer keeps, drops, repeats, reorders or adds, for
        /// names sharing prefixes across the 16-byte blocks compared.
        #[test]
        fn runs_equal_serde(
            picks in prop::collection::vec(0usize..14, 0..40),
            spaced in any::<bool>(),
        ) {
            let all = [
                "n1", "n10", "n100", "n2", "node-0000000001", "node-00000000010", "node-0000000002",
                "x", "a-very-long-node-name-of-forty-bytes-000", "a-very-long-node-name-of-forty-bytes-001",
            ];
            let s = snap(&all);
            let nodes: Vec<&NodeInfo> = s.nodes().iter().map(|n| &**n).collect();
            let named = |i: usize| if i < all.len() { nodes[i].node().name().to_owned() } else { format!("unknown-{i}") };
            let sep = if spaced { " , " } else { "," };
            let list = picks.iter().map(|&i| format!("\"{}\"", named(i))).collect::<Vec<_>>().join(sep);
            let text = format!(r#"{{"NodeNames":[{list}],"Error":""}}"#);
            let (sent, ends) = sent_of(&nodes);
            let (mut p1, mut p2) = (Vec::new(), Vec::new());
            let f = fast_answer(
                text.as_bytes(), true, Some(SentNames::new(&sent, &ends)), &mut NameFinder::new(&nodes), &mut p1,
            );
            let f = f.expect("plain names are read at byte level");
            let sr = serde_answer(text.as_bytes(), true, &mut NameFinder::new(&nodes), &mut p2).unwrap();
            prop_assert_eq!(&p1, &p2);
            prop_assert_eq!(f.unknown, sr.unknown);
            // Every name sent, in order, is one run.
            let whole = format!(r#"{{"NodeNames":[{}]}}"#, String::from_utf8(sent.clone()).unwrap());
            fast_answer(whole.as_bytes(), true, Some(SentNames::new(&sent, &ends)), &mut NameFinder::new(&nodes), &mut p1)
                .unwrap();
            prop_assert_eq!(p1, (0..nodes.len()).collect::<Vec<_>>());
        }
    }

    #[test]
    fn names_become_positions_with_go_key_matching() {
        let s = snap(&["a", "b", "c"]);
        let nodes: Vec<&NodeInfo> = s.nodes().iter().map(|n| &**n).collect();
        let pos = |name: &str| nodes.iter().position(|n| n.node().name() == name).unwrap();
        let mut passed = Vec::new();
        let body =
            br#"{"nodenames":["c","\u0061"],"FailedNodes":{"b":"no"},"Error":"","Extra":[1,{"x":2}],"Nodes":null}"#;
        let a = decode_filter_answer(body, true, None, &mut NameFinder::new(&nodes), &mut passed).unwrap();
        assert_eq!(passed, [pos("c"), pos("a")]);
        assert!(a.names && a.unknown.is_none() && a.nodes.is_none());
        assert_eq!(a.failed["b"], "no");
        // The exact key wins over a case-folded one only by order, as Go: the last wins.
        let body = br#"{"NodeNames":["a"],"NODENAMES":["b","zz","yy"]}"#;
        let a = decode_filter_answer(body, true, None, &mut NameFinder::new(&nodes), &mut passed).unwrap();
        assert_eq!((passed.as_slice(), a.unknown.as_deref()), ([pos("b")].as_slice(), Some("zz")));
        // The usual answer takes the byte-level path.
        let usual = br#"{"Nodes":null,"NodeNames":["a","c"],"FailedNodes":{"b":"no"},"FailedAndUnresolvableNodes":null,"Error":""}"#;
        let a = fast_answer(usual, true, None, &mut NameFinder::new(&nodes), &mut passed).unwrap();
        assert_eq!((passed.as_slice(), a.failed.len()), ([pos("a"), pos("c")].as_slice(), 1));
        // With plain names sent, matched in place; out of order and unknown ones too.
        let (text, ends) = sent_of(&nodes);
        let sent = Some(SentNames::new(&text, &ends));
        fast_answer(usual, true, sent, &mut NameFinder::new(&nodes), &mut passed).unwrap();
        assert_eq!(passed, [pos("a"), pos("c")]);
        let mixed = br#"{"NodeNames":["a","ab","c","b","zz","a"]}"#;
        let a = fast_answer(mixed, true, sent, &mut NameFinder::new(&nodes), &mut passed).unwrap();
        assert_eq!(
            (passed.as_slice(), a.unknown.as_deref()),
            ([0, 2, 1, 0].map(|i| pos(["a", "b", "c"][i])).as_slice(), Some("ab"))
        );
        // null names, and names not asked for.
        let a = decode_filter_answer(
            br#"{"NodeNames":null,"Error":"boom"}"#,
            true,
            None,
            &mut NameFinder::new(&nodes),
            &mut passed,
        )
        .unwrap();
        assert!(!a.names && passed.is_empty() && a.error == "boom");
        let a = decode_filter_answer(br#"{"NodeNames":["a"]}"#, false, None, &mut NameFinder::new(&nodes), &mut passed)
            .unwrap();
        assert!(!a.names && passed.is_empty());
        // Malformed bodies are errors.
        for bad in [&b"{"[..], b"[]", br#"{"NodeNames":[1]}"#, br#"{"Error":3}"#, b"{} x"] {
            assert!(decode_filter_answer(bad, true, None, &mut NameFinder::new(&nodes), &mut passed).is_err());
        }
    }
}
