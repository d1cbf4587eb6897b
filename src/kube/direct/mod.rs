//! Direct decoding of watched Pods and Nodes: the API server's JSON goes straight into
//! schedkit's model when every field of the object is one this file knows, and the
//! object's text goes the lean way ([`super::lean`], then [`crate::k8s`]) otherwise.
//!
//! Why: decoding into k8s-openapi's types and then converting was the largest part of
//! the watches' work per pod, and the first list of every pending pod is decoded
//! before the first scheduling cycle can start.
//!
//! Why this is exact: the direct path answers only when its answer is the lean path's
//! with [`crate::k8s::from_k8s_relevant`] — the same object and no ignored field that
//! can change a scheduling decision.
//! - Every key must be one this file names (a field of a newer API, `schedulingGroup`,
//!   pod-level `resources`: the lean path), and every value it reads must decode as
//!   k8s-openapi decodes it (a type error, a `null` where k8s-openapi wants a value, a
//!   duplicate key: the lean path, whose error it then is).
//! - A field it skips must be one the lean decoder prunes too (so, as there, the shape
//!   of its value is not checked), or `volumes`, whose sources are looked at by key; a
//!   skipped field that matters for scheduling (`status.resize`, a PVC volume) hands
//!   over, so the lean path reports or refuses it.
//! - The values it converts go through the same rules as [`crate::k8s`]'s direct
//!   conversion (`k8s/fast.rs`): requests defaulted from limits, host ports from
//!   `hostNetwork`, quantities in key order, and a value that path hands to the manifest
//!   loader (a bad quantity, an unknown enum spelling, a timestamp outside years
//!   1–9999) hands over here too.
//!
//! Kube's decoding only keeps each object's text (a [`RawValue`]); the watch decodes
//! it later ([`Watched::decode`]), a list's objects in parallel batches
//! ([`super::watch::Prepare`]). Keeping the text needs `serde_json`'s own
//! deserializer: lists have it, and a watch event has it when `type` comes before
//! `object`, as the API server writes it. A text that neither decoding takes is one
//! malformed object (logged and skipped by the watch), not a failed list.

use std::borrow::Cow;
use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta as K8sMeta, Time};
use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;
use smallvec::SmallVec;

use super::lean::Lean;
use crate::framework::Feature;
use crate::k8s::fast;
use crate::manifest::{LoadOptions, Loaded, defaults};
use crate::model::{Labels, Node, ObjectMeta, Pod, Quantity, ResourceList, Symbol};

/// A string of the text, borrowed when it has no escapes.
struct Text<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Cow<'de, str>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Self::Value, E> {
                Ok(Cow::Borrowed(s))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
                Ok(Cow::Owned(s.to_owned()))
            }
            fn visit_string<E: de::Error>(self, s: String) -> Result<Self::Value, E> {
                Ok(Cow::Owned(s))
            }
        }
        de.deserialize_str(V).map(Text)
    }
}

impl Text<'_> {
    fn as_str(&self) -> &str {
        &self.0
    }
}

fn text(t: Option<Text<'_>>) -> String {
    t.map(|t| t.0.into_owned()).unwrap_or_default()
}

/// A string map (labels, selectors, resource lists) in the text's order.
struct Pairs<'a>(Vec<(Text<'a>, Text<'a>)>);

impl<'de: 'a, 'a> Deserialize<'de> for Pairs<'a> {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Pairs<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a map of strings")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Pairs<'a>, A::Error> {
                let mut pairs = Vec::with_capacity(map.size_hint().unwrap_or(0).min(16));
                while let Some(pair) = map.next_entry()? {
                    pairs.push(pair);
                }
                Ok(Pairs(pairs))
            }
        }
        de.deserialize_map(V(std::marker::PhantomData))
    }
}

impl Pairs<'_> {
    fn labels(&self) -> Labels {
        // Labels keep the last value of a repeated key, as k8s-openapi's map does.
        Labels::from_pairs(self.0.iter().map(|(k, v)| (k.as_str(), v.as_str())))
    }

    /// The entries in key order, the last of a repeated key kept (k8s-openapi's map).
    fn sorted(&self) -> SmallVec<[(&str, &str); 4]> {
        let mut out: SmallVec<[(&str, &str); 4]> = self.0.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        out.sort_by(|a, b| a.0.cmp(b.0));
        out.dedup_by(|later, earlier| {
            let same = later.0 == earlier.0;
            if same {
                earlier.1 = later.1;
            }
            same
        });
        out
    }
}

/// A resource list as the conversion builds it: key order, every quantity parsed.
fn quantities(entries: &[(&str, &str)]) -> Option<ResourceList> {
    let mut list = ResourceList::new();
    for (name, q) in entries {
        list.set(Symbol::intern(name), Quantity::parse(q).ok()?);
    }
    Some(list)
}

fn pairs_quantities(p: Option<&Pairs<'_>>) -> Option<ResourceList> {
    match p {
        Some(p) => quantities(&p.sorted()),
        None => Some(ResourceList::new()),
    }
}

/// A field that must not be `null` when present (`apiVersion`, `kind`).
fn some<'de, D: Deserializer<'de>, T: Deserialize<'de>>(de: D) -> Result<Option<T>, D::Error> {
    T::deserialize(de).map(Some)
}

/// A field skipped: only whether it is present (not `null`) is kept.
type Skip = Option<IgnoredAny>;

/// Hands over (returns `None`) when a present skipped field at the fixed `$path` can
/// change a scheduling decision by `$rule` (computed once).
macro_rules! skip {
    ($rule:path, $present:expr, $path:expr) => {
        if $present {
            static AFFECTS: ::std::sync::OnceLock<bool> = ::std::sync::OnceLock::new();
            if *AFFECTS.get_or_init(|| $rule($path, &::serde_json::Value::Null)) {
                return None;
            }
        }
    };
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct MetaDoc<'a> {
    #[serde(borrow)]
    name: Option<Text<'a>>,
    #[serde(borrow)]
    namespace: Option<Text<'a>>,
    #[serde(borrow)]
    uid: Option<Text<'a>>,
    #[serde(borrow)]
    labels: Option<Pairs<'a>>,
    annotations: Option<BTreeMap<String, String>>,
    creation_timestamp: Option<Time>,
    deletion_timestamp: Option<Time>,
}

/// A whole object: the fields every kind has.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Doc<'a, Spec, Status> {
    #[serde(default, borrow, deserialize_with = "some")]
    api_version: Option<Text<'a>>,
    #[serde(default, borrow, deserialize_with = "some")]
    kind: Option<Text<'a>>,
    #[serde(borrow)]
    metadata: MetaDoc<'a>,
    spec: Option<Spec>,
    status: Option<Status>,
}

/// `text` as a core/v1 object of `kind`: its metadata, spec and status (their defaults
/// when absent); `None` hands over to the lean path.
fn object<'a, Spec, Status, S: Default, T: Default>(
    text: &'a str,
    kind: &str,
    spec: impl FnOnce(Spec) -> Option<S>,
    status: impl FnOnce(Status) -> Option<T>,
) -> Option<(ObjectMeta, S, T)>
where
    Spec: Deserialize<'a>,
    Status: Deserialize<'a>,
{
    k8s_openapi::k8s_if_ge_1_37! {
        return None;
    }
    let doc: Doc<'a, Spec, Status> = serde_json::from_str(text).ok()?;
    if doc.api_version.as_ref().is_some_and(|v| v.as_str() != "v1")
        || doc.kind.as_ref().is_some_and(|k| k.as_str() != kind)
    {
        return None;
    }
    let metadata = meta(doc.metadata)?;
    let spec = match doc.spec {
        Some(s) => spec(s)?,
        None => S::default(),
    };
    let status = match doc.status {
        Some(s) => status(s)?,
        None => T::default(),
    };
    Some((metadata, spec, status))
}

/// The model's metadata; `None` hands over.
fn meta(m: MetaDoc<'_>) -> Option<ObjectMeta> {
    let meta = ObjectMeta {
        labels: m.labels.as_ref().map(Pairs::labels).unwrap_or_default(),
        creation_timestamp: fast::opt_seconds(m.creation_timestamp.as_ref())?,
        deletion_timestamp: fast::opt_seconds(m.deletion_timestamp.as_ref())?,
        name: text(m.name),
        namespace: text(m.namespace),
        uid: text(m.uid),
        annotations: m.annotations.unwrap_or_default(),
    };
    Some(meta)
}

/// An enum in its Kubernetes spelling; `None` hands over.
#[expect(clippy::option_option, reason = "outer None hands over; inner None: no field")]
fn opt_spelled<T: serde::de::DeserializeOwned>(t: Option<&Text<'_>>) -> Option<Option<T>> {
    match t {
        None => Some(None),
        Some(t) => fast::spelled(t.as_str()).map(Some),
    }
}

mod node;
mod pod;

/// A model kind the watches decode directly.
pub(crate) trait Direct:
    crate::k8s::K8sConvert<
        K8s: Clone
                 + std::fmt::Debug
                 + Send
                 + k8s_openapi::Metadata<Ty = K8sMeta>
                 + serde::de::DeserializeOwned
                 + super::lean::Prune,
    > + Clone
    + std::fmt::Debug
    + Send
    + 'static
{
    /// The text straight into the model.
    fn decode(text: &str) -> Option<Self>;
    /// The model object's metadata.
    fn meta(&self) -> &ObjectMeta;
    /// What [`crate::k8s`] applies after converting (feature-gated defaulting).
    fn finish(self, opts: LoadOptions) -> Self;
}

impl Direct for Pod {
    fn decode(text: &str) -> Option<Pod> {
        pod::pod(text)
    }
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn finish(mut self, opts: LoadOptions) -> Pod {
        if opts.feature_gates.enabled(Feature::PodLevelResources) {
            defaults::default_pod_level_resources(&mut self);
        }
        self
    }
}

impl Direct for Node {
    fn decode(text: &str) -> Option<Node> {
        node::node(text)
    }
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn finish(self, _opts: LoadOptions) -> Node {
        self
    }
}

/// A watched object, decoded ([`Watched::decode`]).
#[derive(Debug, Clone)]
pub(crate) enum Decoded<T: Direct> {
    /// Straight into the model.
    Model(T),
    /// Leanly into k8s-openapi's type, to be converted by [`crate::k8s`].
    Lean(Box<T::K8s>),
    /// Neither way: the text is not a valid object of its kind. The metadata is what
    /// could be read of it (for the logs and the watch's key).
    Malformed { meta: Box<K8sMeta>, error: String },
}

impl<T: Direct> Decoded<T> {
    /// The object's uid, when it has one.
    pub(crate) fn uid(&self) -> Option<&str> {
        let uid = match self {
            Decoded::Model(m) => Some(m.meta().uid.as_str()),
            Decoded::Lean(k) => k8s_openapi::Metadata::metadata(&**k).uid.as_deref(),
            Decoded::Malformed { meta, .. } => meta.uid.as_deref(),
        };
        uid.filter(|u| !u.is_empty())
    }

    /// The object's namespace/name (its name alone when it has no namespace), for logs.
    pub(crate) fn name(&self) -> String {
        let m = match self {
            Decoded::Model(m) => m.meta(),
            Decoded::Lean(k) => return super::watch::meta_key(k8s_openapi::Metadata::metadata(&**k)),
            Decoded::Malformed { meta, .. } => return super::watch::meta_key(meta),
        };
        if m.namespace.is_empty() { m.name.clone() } else { format!("{}/{}", m.namespace, m.name) }
    }

    /// The model object, converted by [`crate::k8s`] when it was decoded leanly.
    pub(crate) fn convert(self, opts: LoadOptions) -> Result<Loaded<T>, String> {
        match self {
            Decoded::Model(obj) => {
                Ok(Loaded { object: obj.finish(opts), api_version: "v1".to_owned(), ignored: Vec::new() })
            }
            Decoded::Lean(k) => crate::k8s::from_k8s_relevant::<T>(&k, opts).map_err(|e| e.to_string()),
            Decoded::Malformed { error, .. } => Err(error),
        }
    }
}

/// A watched Pod or Node as kube's list or watch decoded it: its JSON text, kept
/// until [`Watched::decode`] (see the module docs). Decoding is left for later so that
/// the watch can decode a list's objects on every core
/// ([`super::watch::Prepare`]): kube decodes a list page on the watch's task.
///
/// Its k8s-openapi metadata, which kube's watcher reads for a watch event's resource
/// version, is read from the text when first asked for; a list's objects are never
/// asked.
#[derive(Debug, Clone)]
pub(crate) struct Watched<T: Direct> {
    text: Box<RawValue>,
    /// Boxed: kube moves a list's objects several times before the watch sees them,
    /// and the metadata is rarely read.
    meta: std::sync::OnceLock<Box<K8sMeta>>,
    kind: std::marker::PhantomData<fn() -> T>,
}

/// The metadata fields read from a watched object's text before it is decoded.
#[derive(Deserialize)]
struct Peek {
    #[serde(default)]
    metadata: Option<PeekMeta>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PeekMeta {
    name: Option<String>,
    namespace: Option<String>,
    uid: Option<String>,
    resource_version: Option<String>,
}

impl<T: Direct> Watched<T> {
    /// The object's text: straight into the model when the direct decoding decides
    /// it, else the lean way; a text neither takes is [`Decoded::Malformed`].
    pub(crate) fn decode(&self) -> Decoded<T> {
        if let Some(obj) = T::decode(self.text.get()) {
            return Decoded::Model(obj);
        }
        match serde_json::from_str::<Lean<T::K8s>>(self.text.get()) {
            Ok(Lean(obj)) => Decoded::Lean(Box::new(obj)),
            Err(e) => Decoded::Malformed { meta: Box::new(self.peek().clone()), error: e.to_string() },
        }
    }

    /// The metadata fields kube reads (name, namespace, uid, resource version), from
    /// the text; empty when the text has no readable metadata.
    fn peek(&self) -> &K8sMeta {
        self.meta.get_or_init(|| {
            let m = serde_json::from_str::<Peek>(self.text.get()).ok().and_then(|p| p.metadata);
            Box::new(m.map_or_else(K8sMeta::default, |m| K8sMeta {
                name: m.name,
                namespace: m.namespace,
                uid: m.uid,
                resource_version: m.resource_version,
                ..K8sMeta::default()
            }))
        })
    }
}

impl<'de, T: Direct> Deserialize<'de> for Watched<T> {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        let text = Box::<RawValue>::deserialize(de)?;
        Ok(Watched { text, meta: std::sync::OnceLock::new(), kind: std::marker::PhantomData })
    }
}

impl<T: Direct> k8s_openapi::Resource for Watched<T>
where
    T::K8s: k8s_openapi::Resource,
{
    const API_VERSION: &'static str = <T::K8s as k8s_openapi::Resource>::API_VERSION;
    const GROUP: &'static str = <T::K8s as k8s_openapi::Resource>::GROUP;
    const KIND: &'static str = <T::K8s as k8s_openapi::Resource>::KIND;
    const VERSION: &'static str = <T::K8s as k8s_openapi::Resource>::VERSION;
    const URL_PATH_SEGMENT: &'static str = <T::K8s as k8s_openapi::Resource>::URL_PATH_SEGMENT;
    type Scope = <T::K8s as k8s_openapi::Resource>::Scope;
}

impl<T: Direct> k8s_openapi::Metadata for Watched<T> {
    type Ty = K8sMeta;
    fn metadata(&self) -> &K8sMeta {
        self.peek()
    }
    fn metadata_mut(&mut self) -> &mut K8sMeta {
        self.peek();
        self.meta.get_mut().expect("peek initialised the metadata")
    }
}

/// The watches' decoding of one Pod's text (for tests): whether it was decoded
/// directly, and the converted object.
pub(crate) fn pod_from_json(text: &str, opts: LoadOptions) -> Result<(bool, Loaded<Pod>), String> {
    watched_from_json::<Pod>(text, opts)
}

/// [`pod_from_json`] for a Node.
pub(crate) fn node_from_json(text: &str, opts: LoadOptions) -> Result<(bool, Loaded<Node>), String> {
    watched_from_json::<Node>(text, opts)
}

/// One line of a pod watch, as kube decodes it and the watch then decodes its object:
/// whether the object was decoded directly, and the resource version kube's watcher
/// resumes from.
pub(crate) fn pod_event_from_json(text: &str) -> Result<(bool, Option<String>), String> {
    use kube::core::WatchEvent;
    match serde_json::from_str::<WatchEvent<Watched<Pod>>>(text).map_err(|e| e.to_string())? {
        WatchEvent::Added(w) | WatchEvent::Modified(w) | WatchEvent::Deleted(w) => {
            let version = kube::ResourceExt::resource_version(&w);
            match w.decode() {
                Decoded::Malformed { error, .. } => Err(error),
                d => Ok((matches!(d, Decoded::Model(_)), version)),
            }
        }
        WatchEvent::Bookmark(b) => Ok((false, Some(b.metadata.resource_version))),
        WatchEvent::Error(e) => Err(e.message),
    }
}

fn watched_from_json<T: Direct>(text: &str, opts: LoadOptions) -> Result<(bool, Loaded<T>), String> {
    let w: Watched<T> = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let d = w.decode();
    let direct = matches!(d, Decoded::Model(_));
    d.convert(opts).map(|l| (direct, l))
}
