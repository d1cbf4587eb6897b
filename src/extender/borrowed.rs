//! The server's Filter request and reply without a copy per node name: node names
//! are read as slices of the request body and written from the snapshot's nodes.
//!
//! [`wire::ExtenderArgs`] and [`wire::ExtenderFilterResult`] own a `String` per name,
//! which for a 1,000-name call is 2,000 allocations and frees; these borrowing twins
//! decode and encode the same JSON (the same keys, read case-insensitively as Go's
//! `encoding/json` does, written in the same order), so the served bytes do not
//! change. The public [`ExtenderService::filter`](super::ExtenderService::filter)
//! still takes and returns the owned types.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::wire::{self, FailedNodesMap, NodeList, Object, field_index};
use crate::model::Pod;
use crate::snapshot::Snapshot;

/// A node name from the request: borrowed from the body unless it had escapes.
#[derive(Debug)]
pub(super) struct Name<'a>(pub Cow<'a, str>);

impl AsRef<str> for Name<'_> {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl<'de> Deserialize<'de> for Name<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Name<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Name<'de>, E> {
                Ok(Name(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Name<'de>, E> {
                Ok(Name(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Name<'de>, E> {
                Ok(Name(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

/// [`wire::ExtenderArgs`] with borrowed node names.
#[derive(Debug, Default)]
pub(super) struct ArgsIn<'a> {
    pub pod: Option<Object<Pod>>,
    pub nodes: Option<NodeList>,
    pub node_names: Option<Vec<Name<'a>>>,
}

impl<'de> Deserialize<'de> for ArgsIn<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ArgsIn<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object (ExtenderArgs)")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ArgsIn<'de>, A::Error> {
                // The keys of `wire::ExtenderArgs`, in its order.
                const FIELDS: &[&str] = &["Pod", "Nodes", "NodeNames"];
                let mut out = ArgsIn::default();
                while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                    match field_index(FIELDS, &key) {
                        Some(0) => out.pod = map.next_value()?,
                        Some(1) => out.nodes = map.next_value()?,
                        Some(2) => out.node_names = map.next_value::<Option<Names<'de>>>()?.map(|n| n.0),
                        _ => {
                            map.next_value::<de::IgnoredAny>()?;
                        }
                    }
                }
                Ok(out)
            }
        }
        d.deserialize_map(V)
    }
}

/// A JSON array of names, collected into one vector sized from the first read.
struct Names<'a>(Vec<Name<'a>>);

impl<'de> Deserialize<'de> for Names<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Names<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a sequence of node names")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Names<'de>, A::Error> {
                let mut v = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1 << 16));
                while let Some(n) = seq.next_element::<Name<'de>>()? {
                    v.push(n);
                }
                Ok(Names(v))
            }
        }
        d.deserialize_seq(V)
    }
}

/// Decodes a Filter or Prioritize body into [`ArgsIn`]; a body that fails is handed
/// to [`wire::decode`] for its message with the field path, so the error text is
/// the owned decoder's.
pub(super) fn decode_args(body: &[u8]) -> Result<ArgsIn<'_>, String> {
    serde_json::from_slice(body).or_else(|_| match wire::decode::<wire::ExtenderArgs>(body) {
        // The owned decoder accepts what serde_json's `from_slice` refuses only for
        // bytes after the object (it does not check the end); decode those the same way.
        Ok(_) => ArgsIn::deserialize(&mut serde_json::Deserializer::from_slice(body)).map_err(|e| e.to_string()),
        Err(m) => Err(m),
    })
}

/// The nodes at `idx` in `snap`: written as the names (`NodeNames`) or as a
/// `v1.NodeList` of the node objects (`Nodes`), as the owned result writes them.
pub(super) struct Passed<'a> {
    pub snap: &'a Snapshot,
    pub idx: &'a [usize],
}

struct PassedNodes<'a>(&'a Passed<'a>);

impl Serialize for PassedNodes<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        struct Items<'a>(&'a Passed<'a>);
        impl Serialize for Items<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let nodes = self.0.snap.nodes();
                let mut seq = s.serialize_seq(Some(self.0.idx.len()))?;
                for &i in self.0.idx {
                    seq.serialize_element(nodes[i].node())?;
                }
                seq.end()
            }
        }
        let mut m = s.serialize_map(Some(1))?;
        m.serialize_entry("items", &Items(self.0))?;
        m.end()
    }
}

/// [`wire::ExtenderFilterResult`] with the passing nodes borrowed from the snapshot.
pub(super) struct FilterReply<'a> {
    /// The passing nodes, and whether to write them by name (node-cache-capable).
    pub passed: Passed<'a>,
    pub by_name: bool,
    pub failed_nodes: &'a FailedNodesMap,
    pub failed_and_unresolvable_nodes: &'a FailedNodesMap,
    pub error: &'a str,
}

impl FilterReply<'_> {
    /// The reply's JSON: the bytes `serde_json` writes for the owned result (the
    /// same keys in the same order), with each passing name copied as it is unless
    /// JSON needs it escaped (node names are DNS subdomains, which never do).
    pub fn to_json(&self) -> serde_json::Result<Vec<u8>> {
        // A result with an error carries nothing else, as `ExtenderService::filter` returns it.
        const NONE: &FailedNodesMap = &FailedNodesMap::new();
        let ok = self.error.is_empty();
        let (failed, unresolvable) =
            if ok { (self.failed_nodes, self.failed_and_unresolvable_nodes) } else { (NONE, NONE) };
        let nodes = self.passed.snap.nodes();
        let mut out = Vec::with_capacity(64 + if ok && self.by_name { self.passed.idx.len() * 16 } else { 0 });
        if ok && !self.by_name {
            out.extend_from_slice(b"{\"Nodes\":");
            serde_json::to_writer(&mut out, &PassedNodes(&self.passed))?;
            out.extend_from_slice(b",\"NodeNames\":null");
        } else if ok {
            out.extend_from_slice(b"{\"Nodes\":null,\"NodeNames\":[");
            for (k, &i) in self.passed.idx.iter().enumerate() {
                if k > 0 {
                    out.push(b',');
                }
                let name = nodes[i].node().name();
                if name.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\') {
                    serde_json::to_writer(&mut out, name)?;
                } else {
                    out.push(b'"');
                    out.extend_from_slice(name.as_bytes());
                    out.push(b'"');
                }
            }
            out.push(b']');
        } else {
            out.extend_from_slice(b"{\"Nodes\":null,\"NodeNames\":null");
        }
        out.extend_from_slice(b",\"FailedNodes\":");
        serde_json::to_writer(&mut out, failed)?;
        out.extend_from_slice(b",\"FailedAndUnresolvableNodes\":");
        serde_json::to_writer(&mut out, unresolvable)?;
        out.extend_from_slice(b",\"Error\":");
        serde_json::to_writer(&mut out, self.error)?;
        out.push(b'}');
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use parking_lot::Mutex;
    use proptest::prelude::*;

    use super::super::{ExtenderService, Reply, wire};
    use crate::framework::{Handle, Profile};
    use crate::model::TaintEffect;
    use crate::snapshot::Cache;
    use crate::testing::NodeBuilder;

    const ODD: &str = "q\"x\\y\u{1}é";

    /// A cache of nodes that pass, lack CPU, or carry a taint.
    fn service() -> ExtenderService {
        let cache = Arc::new(Mutex::new(Cache::new()));
        for i in 0..12 {
            let b = NodeBuilder::new(&format!("n{i}")).cpu(if i % 3 == 1 { "1" } else { "8" }).memory("16Gi");
            let b = if i % 4 == 3 { b.taint("gpu", "yes", TaintEffect::NoSchedule) } else { b };
            cache.lock().add_node(b.build()).unwrap();
        }
        // A name JSON must escape (the API server would refuse it; the wire must not break).
        cache.lock().add_node(NodeBuilder::new(ODD).cpu("8").memory("16Gi").build()).unwrap();
        ExtenderService::new(Arc::new(Profile::kube_default(&Handle::default())), cache)
    }

    /// The reply of the owned types' path: `wire::decode`, `filter`, `serde_json`.
    fn owned_reply(s: &ExtenderService, body: &[u8]) -> Reply {
        match wire::decode::<wire::ExtenderArgs>(body) {
            Ok(a) => match s.filter(a) {
                Ok(r) => Reply { status: 200, body: serde_json::to_vec(&r).unwrap() },
                Err(m) => Reply { status: 400, body: m.into_bytes() },
            },
            Err(m) => Reply { status: 400, body: format!("malformed request body: {m}").into_bytes() },
        }
    }

    fn pod(cpu: &str, node_name: Option<&str>) -> serde_json::Value {
        let mut p = serde_json::json!({
            "metadata": {"name": "p", "namespace": "default", "uid": "p"},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
        });
        if let Some(n) = node_name {
            p["spec"]["nodeName"] = n.into();
        }
        p
    }

    fn assert_same(s: &ExtenderService, body: &[u8]) {
        let fast = s.handle("filter", body);
        let owned = owned_reply(s, body);
        assert_eq!(
            (fast.status, String::from_utf8_lossy(&fast.body)),
            (owned.status, String::from_utf8_lossy(&owned.body)),
            "body {}",
            String::from_utf8_lossy(body)
        );
    }

    #[test]
    fn filter_replies_are_the_owned_paths_bytes() {
        let s = service();
        let all: Vec<String> = (0..12).map(|i| format!("n{i}")).chain([ODD.to_owned()]).collect();
        let full: Vec<serde_json::Value> =
            (0..5).map(|i| serde_json::to_value(s.snapshot().get(&format!("n{i}")).unwrap().node()).unwrap()).collect();
        let bodies = [
            serde_json::json!({"Pod": pod("2", None), "NodeNames": all}),
            serde_json::json!({"pod": pod("2", None), "nodenames": ["n0", "missing", "quo\"te", "ünï", "n5"]}),
            serde_json::json!({"Pod": pod("2", Some("n4")), "NodeNames": all}),
            serde_json::json!({"Pod": pod("2", None), "Nodes": {"items": full}, "NodeNames": null}),
            serde_json::json!({"Pod": pod("64", None), "NodeNames": all, "Extra": [1, 2]}),
            serde_json::json!({"NodeNames": all}),
            serde_json::json!({"Pod": pod("1", None)}),
            serde_json::json!({"Pod": pod("x", None), "NodeNames": all}),
            serde_json::json!({"Pod": pod("1", None), "NodeNames": [1]}),
            serde_json::json!({"Pod": pod("1", None), "NodeNames": []}),
        ];
        for b in &bodies {
            assert_same(&s, &serde_json::to_vec(b).unwrap());
        }
        // Escaped names in the request itself, trailing bytes, and bodies that are not objects.
        for raw in [
            &br#"{"Pod": {"metadata": {"name": "p", "uid": "p"}}, "NodeNames": ["n\u0030", "a\\b", "n1"]}"#[..],
            br#"{"Pod": {"metadata": {"name": "p", "uid": "p"}}, "NodeNames": ["n0"]} trailing"#,
            b"[]",
            b"",
            b"{\"NodeNames\": [\"n0\"",
        ] {
            assert_same(&s, raw);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// Any mix of cached and unknown names (escapes, quotes, any characters), in
        /// any order, gets the owned path's reply.
        #[test]
        fn any_names_get_the_owned_paths_reply(
            known in proptest::collection::vec(0usize..12, 0..20),
            unknown in proptest::collection::vec("\\PC{0,8}", 0..6),
            cpu in 1u32..10,
        ) {
            let s = service();
            let mut names: Vec<String> =
                known.iter().map(|&i| if i == 11 { ODD.to_owned() } else { format!("n{i}") }).collect();
            names.extend(unknown);
            let third = names.len() / 3;
            names.rotate_left(third);
            let body = serde_json::json!({"Pod": pod(&cpu.to_string(), None), "NodeNames": names});
            let body = serde_json::to_vec(&body).unwrap();
            let fast = s.handle("filter", &body);
            let owned = owned_reply(&s, &body);
            prop_assert_eq!(fast, owned);
        }
    }
}
