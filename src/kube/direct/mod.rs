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
//! The text is kept from kube's decoding as a [`RawValue`], so it needs `serde_json`'s
//! own deserializer: lists are, and a watch event is when `type` comes before `object`,
//! as the API server writes it.

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
    #[serde(borrow)]
    resource_version: Option<Text<'a>>,
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
/// when absent) and its resource version; `None` hands over to the lean path.
fn object<'a, Spec, Status, S: Default, T: Default>(
    text: &'a str,
    kind: &str,
    spec: impl FnOnce(Spec) -> Option<S>,
    status: impl FnOnce(Status) -> Option<T>,
) -> Option<(ObjectMeta, S, T, Option<String>)>
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
    let (metadata, version) = meta(doc.metadata)?;
    let spec = match doc.spec {
        Some(s) => spec(s)?,
        None => S::default(),
    };
    let status = match doc.status {
        Some(s) => status(s)?,
        None => T::default(),
    };
    Some((metadata, spec, status, version))
}

/// The model's metadata and the resource version (for kube's watcher).
fn meta(m: MetaDoc<'_>) -> Option<(ObjectMeta, Option<String>)> {
    let meta = ObjectMeta {
        labels: m.labels.as_ref().map(Pairs::labels).unwrap_or_default(),
        creation_timestamp: fast::opt_seconds(m.creation_timestamp.as_ref())?,
        deletion_timestamp: fast::opt_seconds(m.deletion_timestamp.as_ref())?,
        name: text(m.name),
        namespace: text(m.namespace),
        uid: text(m.uid),
        annotations: m.annotations.unwrap_or_default(),
    };
    Some((meta, m.resource_version.map(|v| v.0.into_owned())))
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
    crate::k8s::K8sConvert<K8s: Clone + std::fmt::Debug + k8s_openapi::Metadata<Ty = K8sMeta>> + Clone + std::fmt::Debug
{
    /// The text straight into the model, with the resource version.
    fn decode(text: &str) -> Option<(Self, Option<String>)>;
    /// The model object's metadata.
    fn meta(&self) -> &ObjectMeta;
    /// What [`crate::k8s`] applies after converting (feature-gated defaulting).
    fn finish(self, opts: LoadOptions) -> Self;
}

impl Direct for Pod {
    fn decode(text: &str) -> Option<(Pod, Option<String>)> {
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
    fn decode(text: &str) -> Option<(Node, Option<String>)> {
        node::node(text)
    }
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn finish(self, _opts: LoadOptions) -> Node {
        self
    }
}

/// How a watched object was decoded.
#[derive(Debug, Clone)]
pub(crate) enum Decoded<T: Direct> {
    /// Straight into the model.
    Model(T),
    /// Leanly into k8s-openapi's type, to be converted by [`crate::k8s`].
    Lean(T::K8s),
}

/// A watched Pod or Node (see the module docs). Its metadata, for kube's watcher, is
/// the k8s-openapi object's, or just the resource version when decoded directly.
#[derive(Debug, Clone)]
pub(crate) struct Watched<T: Direct> {
    meta: K8sMeta,
    pub(crate) object: Decoded<T>,
}

impl<T: Direct> Watched<T> {
    /// The object's namespace/name (its name alone when it has no namespace), for logs.
    pub(crate) fn name(&self) -> String {
        let m = match &self.object {
            Decoded::Model(m) => m.meta(),
            Decoded::Lean(k) => return super::watch::meta_key(k8s_openapi::Metadata::metadata(k)),
        };
        if m.namespace.is_empty() { m.name.clone() } else { format!("{}/{}", m.namespace, m.name) }
    }

    /// The model object, converted by [`crate::k8s`] when it was decoded leanly.
    pub(crate) fn convert(self, opts: LoadOptions) -> Result<Loaded<T>, crate::k8s::ConvertError> {
        match self.object {
            Decoded::Model(obj) => {
                Ok(Loaded { object: obj.finish(opts), api_version: "v1".to_owned(), ignored: Vec::new() })
            }
            Decoded::Lean(k) => crate::k8s::from_k8s_relevant::<T>(&k, opts),
        }
    }
}

impl<'de, T: Direct> Deserialize<'de> for Watched<T>
where
    T::K8s: for<'a> Deserialize<'a> + super::lean::Prune,
{
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        let raw = Box::<RawValue>::deserialize(de)?;
        if let Some((obj, version)) = T::decode(raw.get()) {
            let meta = K8sMeta { resource_version: version, ..K8sMeta::default() };
            return Ok(Watched { meta, object: Decoded::Model(obj) });
        }
        let Lean(obj) = serde_json::from_str::<Lean<T::K8s>>(raw.get()).map_err(de::Error::custom)?;
        Ok(Watched { meta: K8sMeta::default(), object: Decoded::Lean(obj) })
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
        match &self.object {
            Decoded::Model(_) => &self.meta,
            Decoded::Lean(k) => k.metadata(),
        }
    }
    fn metadata_mut(&mut self) -> &mut K8sMeta {
        match &mut self.object {
            Decoded::Model(_) => &mut self.meta,
            Decoded::Lean(k) => k.metadata_mut(),
        }
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

/// One line of a pod watch, as kube decodes it: whether its object was decoded directly,
/// and the resource version kube's watcher resumes from.
pub(crate) fn pod_event_from_json(text: &str) -> Result<(bool, Option<String>), String> {
    use kube::core::WatchEvent;
    match serde_json::from_str::<WatchEvent<Watched<Pod>>>(text).map_err(|e| e.to_string())? {
        WatchEvent::Added(w) | WatchEvent::Modified(w) | WatchEvent::Deleted(w) => {
            let direct = matches!(w.object, Decoded::Model(_));
            Ok((direct, kube::ResourceExt::resource_version(&w)))
        }
        WatchEvent::Bookmark(b) => Ok((false, Some(b.metadata.resource_version))),
        WatchEvent::Error(e) => Err(e.message),
    }
}

fn watched_from_json<T: Direct>(text: &str, opts: LoadOptions) -> Result<(bool, Loaded<T>), String>
where
    T::K8s: for<'a> Deserialize<'a> + super::lean::Prune,
{
    let w: Watched<T> = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let direct = matches!(w.object, Decoded::Model(_));
    w.convert(opts).map(|l| (direct, l)).map_err(|e| e.to_string())
}
