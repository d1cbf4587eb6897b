//! The extender protocol's JSON (`k8s.io/kube-scheduler/extender/v1/types.go`): the
//! Go structs have no json tags, so their keys are the Go field names (`Pod`,
//! `NodeNames`, `FailedNodes`...), written that way and read as Go's `encoding/json`
//! reads them: an exact key first, else any key equal ignoring case.
//!
//! Pods and nodes inside are Kubernetes objects in the API's own JSON: read through
//! [`crate::manifest`] (the API server's defaulting, e.g. requests from limits), written
//! with schedkit's `Serialize`.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, DeserializeOwned, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use crate::manifest::{LoadOptions, Manifest};
use crate::model::{Node, Pod};

/// A Kubernetes object read with the API server's defaulting (through
/// [`crate::manifest::from_value`]); unknown fields are ignored.
#[derive(Debug, Clone, PartialEq)]
pub struct Object<T>(pub T);

impl<T: Serialize> Serialize for Object<T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl<'de, T: Manifest> Deserialize<'de> for Object<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        crate::manifest::from_value::<T>(v, LoadOptions::default()).map(|l| Object(l.object)).map_err(de::Error::custom)
    }
}

/// `v1.NodeList`: only `items` is read or written.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NodeList {
    /// The nodes.
    #[serde(default)]
    pub items: Vec<Object<Node>>,
}

/// Finds which of `fields` a JSON key names: exactly, else ignoring ASCII case (Go's
/// `encoding/json` folds case; the protocol's keys are ASCII).
pub(crate) fn field_index(fields: &[&str], key: &str) -> Option<usize> {
    fields.iter().position(|f| *f == key).or_else(|| fields.iter().position(|f| f.eq_ignore_ascii_case(key)))
}

/// Declares a protocol struct: Go-cased keys on output, Go's case-insensitive match
/// on input, unknown keys skipped, missing or `null` fields at their default.
macro_rules! go_struct {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $(#[$fmeta:meta])* $field:ident : $ty:ty = $key:literal, )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Default, PartialEq, Serialize)]
        pub struct $name {
            $( $(#[$fmeta])* #[serde(rename = $key)] pub $field: $ty, )*
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> Visitor<'de> for V {
                    type Value = $name;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str(concat!("a JSON object (", stringify!($name), ")"))
                    }
                    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<$name, A::Error> {
                        const FIELDS: &[&str] = &[$($key),*];
                        let mut out = $name::default();
                        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                            let mut i = 0usize;
                            let at = field_index(FIELDS, &key);
                            $(
                                if at == Some(i) {
                                    out.$field = map.next_value::<Option<$ty>>()?.unwrap_or_default();
                                    continue;
                                }
                                i += 1;
                            )*
                            let _ = i;
                            map.next_value::<de::IgnoredAny>()?;
                        }
                        Ok(out)
                    }
                }
                d.deserialize_map(V)
            }
        }
    };
}

go_struct! {
    /// `ExtenderArgs`: the pod and the candidate nodes of a Filter or Prioritize call.
    /// Exactly one of `nodes` (full objects) and `node_names` (node-cache-capable
    /// extenders) is set.
    pub struct ExtenderArgs {
        /// The pod being scheduled.
        pod: Option<Object<Pod>> = "Pod",
        /// The candidate nodes, when the extender does not cache nodes.
        nodes: Option<NodeList> = "Nodes",
        /// The candidate node names, when it does.
        node_names: Option<Vec<String>> = "NodeNames",
    }
}

/// `FailedNodesMap`: node name to failure reason.
pub type FailedNodesMap = BTreeMap<String, String>;

go_struct! {
    /// `ExtenderFilterResult`.
    pub struct ExtenderFilterResult {
        /// The passing nodes (extenders without a node cache).
        nodes: Option<NodeList> = "Nodes",
        /// The passing node names (node-cache-capable extenders).
        node_names: Option<Vec<String>> = "NodeNames",
        /// Failed nodes, resolvable.
        failed_nodes: FailedNodesMap = "FailedNodes",
        /// Failed nodes no event resolves.
        failed_and_unresolvable_nodes: FailedNodesMap = "FailedAndUnresolvableNodes",
        /// A non-empty error fails the call.
        error: String = "Error",
    }
}

go_struct! {
    /// `HostPriority`: one node's score.
    pub struct HostPriority {
        /// Node name.
        host: String = "Host",
        /// Score, 0..=10.
        score: i64 = "Score",
    }
}

/// `HostPriorityList`: the Prioritize result.
pub type HostPriorityList = Vec<HostPriority>;

go_struct! {
    /// `ExtenderBindingArgs`: the Bind call.
    pub struct ExtenderBindingArgs {
        /// Pod name.
        pod_name: String = "PodName",
        /// Pod namespace.
        pod_namespace: String = "PodNamespace",
        /// Pod uid.
        pod_uid: String = "PodUID",
        /// Target node.
        node: String = "Node",
    }
}

go_struct! {
    /// `ExtenderBindingResult`.
    pub struct ExtenderBindingResult {
        /// A non-empty error fails the bind.
        error: String = "Error",
    }
}

go_struct! {
    /// `MetaPod`: a pod by uid.
    pub struct MetaPod {
        /// The pod's uid.
        uid: String = "UID",
    }
}

go_struct! {
    /// `MetaVictims`: victims by uid.
    pub struct MetaVictims {
        /// The pods.
        pods: Vec<MetaPod> = "Pods",
        /// PodDisruptionBudgets violated.
        num_pdb_violations: i64 = "NumPDBViolations",
    }
}

go_struct! {
    /// `Victims`: victims as full pods.
    pub struct Victims {
        /// The pods.
        pods: Vec<Object<Pod>> = "Pods",
        /// PodDisruptionBudgets violated.
        num_pdb_violations: i64 = "NumPDBViolations",
    }
}

go_struct! {
    /// `ExtenderPreemptionArgs`: the preempt call. Node-cache-capable extenders get
    /// `node_name_to_meta_victims`, others `node_name_to_victims`.
    pub struct ExtenderPreemptionArgs {
        /// The preemptor.
        pod: Option<Object<Pod>> = "Pod",
        /// Victims per node, full pods.
        node_name_to_victims: Option<BTreeMap<String, Victims>> = "NodeNameToVictims",
        /// Victims per node, by uid.
        node_name_to_meta_victims: Option<BTreeMap<String, MetaVictims>> = "NodeNameToMetaVictims",
    }
}

go_struct! {
    /// `ExtenderPreemptionResult`: always by uid.
    pub struct ExtenderPreemptionResult {
        /// The nodes (and victims) the extender agrees with.
        node_name_to_meta_victims: BTreeMap<String, MetaVictims> = "NodeNameToMetaVictims",
    }
}

/// Decodes a protocol body, with the field path of the first error
/// (`Pod.spec.containers[0]...`).
///
/// A well-formed body decodes once, without path tracking (which costs several
/// hundred instructions per element of a 1,000-name list); only a body that fails
/// is decoded again with tracking, for the path in its message. Decoding is a pure
/// function of the bytes, so the second pass fails where the first did.
pub fn decode<T: DeserializeOwned>(body: &[u8]) -> Result<T, String> {
    if let Ok(v) = serde_json::from_slice(body) {
        return Ok(v);
    }
    let de = &mut serde_json::Deserializer::from_slice(body);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        if path.is_empty() || path == "." { e.into_inner().to_string() } else { format!("{path}: {}", e.into_inner()) }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_casing_on_output_and_any_casing_on_input() {
        let args = ExtenderBindingArgs {
            pod_name: "p".into(),
            pod_namespace: "ns".into(),
            pod_uid: "u".into(),
            node: "n".into(),
        };
        let text = serde_json::to_string(&args).unwrap();
        assert_eq!(text, r#"{"PodName":"p","PodNamespace":"ns","PodUID":"u","Node":"n"}"#);
        let lower: ExtenderBindingArgs =
            decode(br#"{"podName":"p","podnamespace":"ns","PODUID":"u","node":"n","Extra":1}"#).unwrap();
        assert_eq!(lower, args);
    }

    #[test]
    fn keys_naming_one_field_last_wins() {
        // Both keys name the same field; as in Go, the last one read wins.
        let r: ExtenderFilterResult = decode(br#"{"error":"a","Error":"b"}"#).unwrap();
        assert_eq!(r.error, "b");
    }

    #[test]
    fn null_fields_are_defaults() {
        let r: ExtenderFilterResult = decode(
            br#"{"Nodes":null,"NodeNames":["a"],"FailedNodes":null,"FailedAndUnresolvableNodes":null,"Error":""}"#,
        )
        .unwrap();
        assert_eq!(r.node_names.as_deref(), Some(&["a".to_owned()][..]));
        assert!(r.failed_nodes.is_empty() && r.nodes.is_none());
    }

    #[test]
    fn bad_bodies_say_where() {
        let e = decode::<ExtenderArgs>(br#"{"NodeNames": [1]}"#).unwrap_err();
        assert!(e.starts_with("NodeNames"), "{e}");
        let e = decode::<ExtenderArgs>(b"[]").unwrap_err();
        assert!(e.contains("ExtenderArgs"), "{e}");
        let e = decode::<ExtenderArgs>(
            br#"{"Pod": {"spec": {"containers": [{"resources": {"requests": {"cpu": "x"}}}]}}}"#,
        )
        .unwrap_err();
        assert!(e.contains("cpu"), "{e}");
    }

    #[test]
    fn pods_are_defaulted_like_the_api_server() {
        let a: ExtenderArgs = decode(
            br#"{"pod":{"metadata":{"name":"p","namespace":"d","uid":"u"},
                 "spec":{"containers":[{"name":"c","resources":{"limits":{"nvidia.com/gpu":"2"}}}]}},
                 "nodenames":["n1"]}"#,
        )
        .unwrap();
        let pod = a.pod.unwrap().0;
        assert_eq!(
            pod.spec.containers[0].resources.requests.get_str("nvidia.com/gpu").map(crate::model::Quantity::value),
            Some(2)
        );
    }
}
