//! Conversions between k8s-openapi's API types and schedkit's model (feature
//! `k8s-openapi`): Pod, Node, PodDisruptionBudget, PriorityClass, Namespace and the
//! resource.k8s.io/v1 objects, both ways, through the same loader as [`crate::manifest`].
//!
//! From k8s-openapi, an object goes through [`manifest::from_value`]: the API server's
//! defaulting, the `apiVersion`/`kind` checks and the rules of which unread fields can
//! change a scheduling decision are exactly those of a manifest load. [`from_k8s`]
//! returns those fields ([`Loaded::ignored`]); `TryFrom` is strict and refuses an object
//! carrying one ([`ManifestError::Unmodeled`], naming the field paths), since it has no
//! way to return warnings. Metadata schedkit never reads (`managedFields`,
//! `ownerReferences`, `resourceVersion`...) is not converted for the core kinds; the DRA
//! kinds keep all of it, as their model does.
//!
//! To k8s-openapi, every field schedkit models is written back (timestamps as RFC 3339);
//! what schedkit does not model is absent. A `status.disruptedPods` entry of a budget is
//! written with the Unix epoch as its time, since schedkit keeps only the names.
//!
//! With k8s-openapi's v1_36 or newer, the workload API's `scheduling.k8s.io/v1alpha2`
//! Workload and PodGroup convert too (through the manifest loader, as the DRA kinds).
//!
//! k8s-openapi needs exactly one Kubernetes version chosen by the final binary;
//! schedkit enables none and needs v1_34 or newer (resource.k8s.io/v1).
//!
//! ```
//! use k8s_openapi::api::core::v1 as api;
//! use schedkit::model::Pod;
//! let mut k8s_pod: api::Pod = serde_json::from_str(r#"{
//!   "metadata": {"name": "gpu-job", "namespace": "ml", "creationTimestamp": "2024-12-09T16:17:09Z",
//!                "managedFields": [{"manager": "kubectl", "operation": "Update"}]},
//!   "spec": {"containers": [{"name": "c", "image": "cuda",
//!            "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}
//! }"#).unwrap();
//! let pod = Pod::try_from(&k8s_pod).unwrap();
//! // Requests defaulted from limits, as the API server does.
//! assert_eq!(pod.requests().scalar_str("nvidia.com/gpu"), 1);
//! assert_eq!(pod.metadata.creation_timestamp, Some(1_733_761_029.0));
//! let back = api::Pod::try_from(&pod).unwrap();
//! assert_eq!(back.metadata.creation_timestamp, k8s_pod.metadata.creation_timestamp);
//!
//! // A field schedkit does not model that changes scheduling: refused by TryFrom...
//! k8s_pod.spec.as_mut().unwrap().volumes = Some(vec![serde_json::from_str(
//!     r#"{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}"#).unwrap()]);
//! let err = Pod::try_from(&k8s_pod).unwrap_err();
//! assert!(err.to_string().contains("spec.volumes"), "{err}");
//! // ...and reported by from_k8s.
//! let loaded = schedkit::k8s::from_k8s::<Pod>(&k8s_pod, Default::default()).unwrap();
//! assert!(loaded.ignored.iter().any(|f| f.path == "spec.volumes" && f.affects_scheduling));
//! ```

pub(crate) mod fast;
mod time;

/// The k8s-openapi crate these conversions are for.
pub use k8s_openapi;

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::policy::v1 as policy;
use k8s_openapi::api::resource::v1 as resource;
use k8s_openapi::api::scheduling::v1 as scheduling;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta as K8sMeta, Time};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::dra::{DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice};
use crate::manifest::{self, LoadOptions, Loaded, Manifest, ManifestError};
use crate::model::{Namespace, Node, Pod, PodDisruptionBudget, PriorityClass};

k8s_openapi::k8s_if_le_1_33! {
    compile_error!("schedkit's k8s-openapi conversions need resource.k8s.io/v1: enable k8s-openapi's v1_34 feature or newer");
}

/// A conversion that failed, saying where.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ConvertError {
    /// From k8s-openapi: the object does not load as a manifest would (a bad value with
    /// its field path, a wrong kind, or, for `TryFrom`, fields schedkit does not model
    /// that can change scheduling).
    #[error("from k8s-openapi: {0}")]
    FromK8s(#[from] ManifestError),
    /// To k8s-openapi: schedkit's object does not decode as the k8s-openapi type.
    #[error("{kind} to k8s-openapi: {path}: {message}")]
    ToK8s {
        /// The kind.
        kind: &'static str,
        /// Field path, `.` for the top.
        path: String,
        /// The decoder's message.
        message: String,
    },
    /// An object that does not serialize to JSON.
    #[error("{kind}: does not serialize: {message}")]
    Encode {
        /// The kind.
        kind: &'static str,
        /// The serializer's message.
        message: String,
    },
}

/// A schedkit kind with its k8s-openapi counterpart.
pub trait K8sConvert: Manifest + Serialize {
    /// The k8s-openapi type.
    type K8s: k8s_openapi::Resource + Serialize + DeserializeOwned;

    /// The object as the API server's JSON, limited to what schedkit may read.
    fn k8s_json(obj: &Self::K8s) -> Result<Value, serde_json::Error>;

    /// A direct, typed conversion giving exactly what [`from_k8s_via_manifest`] gives
    /// (Pod and Node have one); `None` when the manifest path must answer. With
    /// `report_all` false, only the ignored fields that affect scheduling need be
    /// returned.
    #[doc(hidden)]
    fn direct(_obj: &Self::K8s, _opts: LoadOptions, _report_all: bool) -> Option<Result<Loaded<Self>, ManifestError>> {
        None
    }
}

/// Converts a k8s-openapi object as [`manifest::from_value`] loads a manifest: defaulted,
/// checked, with the fields schedkit did not read (a strict `opts` refuses those that
/// can change a scheduling decision).
///
/// Pods and Nodes are converted field by field (no JSON detour), with the manifest
/// loader's defaulting and rules; the result is always equal to
/// [`from_k8s_via_manifest`]'s, errors included (anything the direct conversion would
/// refuse is handed to that path).
pub fn from_k8s<T: K8sConvert>(obj: &T::K8s, opts: LoadOptions) -> Result<Loaded<T>, ConvertError> {
    match T::direct(obj, opts, true) {
        Some(result) => Ok(result?),
        None => from_k8s_via_manifest(obj, opts),
    }
}

/// [`from_k8s`] for a caller that only needs the ignored fields that can change a
/// scheduling decision (the kube runtime's watches): the same object and errors, without
/// collecting every other ignored path.
#[cfg_attr(not(feature = "kube"), allow(dead_code))]
pub(crate) fn from_k8s_relevant<T: K8sConvert>(obj: &T::K8s, opts: LoadOptions) -> Result<Loaded<T>, ConvertError> {
    match T::direct(obj, opts, false) {
        Some(result) => Ok(result?),
        None => from_k8s_via_manifest(obj, opts),
    }
}

/// The reference conversion: the object written as the API server's JSON (the
/// metadata schedkit reads, `spec`, `status`) and loaded by [`manifest::from_value`].
/// [`from_k8s`] gives the same result, faster for Pods and Nodes.
pub fn from_k8s_via_manifest<T: K8sConvert>(obj: &T::K8s, opts: LoadOptions) -> Result<Loaded<T>, ConvertError> {
    let value = T::k8s_json(obj).map_err(|e| ConvertError::Encode { kind: T::KIND, message: e.to_string() })?;
    Ok(manifest::from_value(value, opts)?)
}

/// Converts a schedkit object to its k8s-openapi type: every modeled field, timestamps
/// as RFC 3339.
pub fn to_k8s<T: K8sConvert>(obj: &T) -> Result<T::K8s, ConvertError> {
    let mut value =
        serde_json::to_value(obj).map_err(|e| ConvertError::Encode { kind: T::KIND, message: e.to_string() })?;
    if let Some(map) = value.as_object_mut() {
        map.insert("apiVersion".into(), Value::String(<T::K8s as k8s_openapi::Resource>::API_VERSION.to_owned()));
        map.insert("kind".into(), Value::String(<T::K8s as k8s_openapi::Resource>::KIND.to_owned()));
        for field in ["creationTimestamp", "deletionTimestamp"] {
            time::seconds_to_rfc3339(map.get_mut("metadata").and_then(|m| m.get_mut(field)));
        }
        time::seconds_to_rfc3339(map.get_mut("status").and_then(|m| m.get_mut("startTime")));
        if let Some(disrupted) = map.get_mut("status").and_then(|s| s.get_mut("disruptedPods"))
            && let Some(names) = disrupted.as_array()
        {
            let epoch = Value::String("1970-01-01T00:00:00Z".to_owned());
            let by_name: Map<String, Value> =
                names.iter().filter_map(Value::as_str).map(|n| (n.to_owned(), epoch.clone())).collect();
            *disrupted = Value::Object(by_name);
        }
    }
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        ConvertError::ToK8s {
            kind: T::KIND,
            path: if path.is_empty() { ".".to_owned() } else { path },
            message: e.into_inner().to_string(),
        }
    })
}

/// The metadata the core kinds' model reads: name, namespace, uid, labels,
/// annotations, creation and deletion timestamps.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct MetaView<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    namespace: Option<&'a String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    uid: Option<&'a String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    labels: Option<&'a BTreeMap<String, String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    annotations: Option<&'a BTreeMap<String, String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    creation_timestamp: Option<&'a Time>,
    #[serde(skip_serializing_if = "Option::is_none")]
    deletion_timestamp: Option<&'a Time>,
}

impl<'a> MetaView<'a> {
    fn new(m: &'a K8sMeta) -> Self {
        MetaView {
            name: m.name.as_ref(),
            namespace: m.namespace.as_ref(),
            uid: m.uid.as_ref(),
            labels: m.labels.as_ref(),
            annotations: m.annotations.as_ref(),
            creation_timestamp: m.creation_timestamp.as_ref(),
            deletion_timestamp: m.deletion_timestamp.as_ref(),
        }
    }
}

/// `apiVersion`, `kind`, the read metadata, `spec` and `status` of a core kind.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct View<'a, S, St> {
    api_version: &'static str,
    kind: &'static str,
    metadata: MetaView<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    spec: Option<&'a S>,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<&'a St>,
}

fn view<'a, R: k8s_openapi::Resource, S: Serialize, St: Serialize>(
    meta: &'a K8sMeta,
    spec: Option<&'a S>,
    status: Option<&'a St>,
) -> Result<Value, serde_json::Error> {
    serde_json::to_value(View {
        api_version: R::API_VERSION,
        kind: R::KIND,
        metadata: MetaView::new(meta),
        spec,
        status,
    })
}

impl K8sConvert for Pod {
    type K8s = core::Pod;
    fn k8s_json(obj: &core::Pod) -> Result<Value, serde_json::Error> {
        view::<core::Pod, _, _>(&obj.metadata, obj.spec.as_ref(), obj.status.as_ref())
    }
    fn direct(obj: &core::Pod, opts: LoadOptions, report_all: bool) -> Option<Result<Loaded<Pod>, ManifestError>> {
        fast::pod(obj, opts, report_all)
    }
}

impl K8sConvert for Node {
    type K8s = core::Node;
    fn k8s_json(obj: &core::Node) -> Result<Value, serde_json::Error> {
        view::<core::Node, _, _>(&obj.metadata, obj.spec.as_ref(), obj.status.as_ref())
    }
    fn direct(obj: &core::Node, opts: LoadOptions, report_all: bool) -> Option<Result<Loaded<Node>, ManifestError>> {
        fast::node(obj, opts, report_all)
    }
}

impl K8sConvert for Namespace {
    type K8s = core::Namespace;
    fn k8s_json(obj: &core::Namespace) -> Result<Value, serde_json::Error> {
        view::<core::Namespace, _, _>(&obj.metadata, obj.spec.as_ref(), obj.status.as_ref())
    }
}

impl K8sConvert for PodDisruptionBudget {
    type K8s = policy::PodDisruptionBudget;
    fn k8s_json(obj: &policy::PodDisruptionBudget) -> Result<Value, serde_json::Error> {
        view::<policy::PodDisruptionBudget, _, _>(&obj.metadata, obj.spec.as_ref(), obj.status.as_ref())
    }
}

impl K8sConvert for PriorityClass {
    type K8s = scheduling::PriorityClass;
    fn k8s_json(obj: &scheduling::PriorityClass) -> Result<Value, serde_json::Error> {
        let mut value = serde_json::to_value(obj)?;
        if let Some(map) = value.as_object_mut() {
            map.insert("metadata".into(), serde_json::to_value(MetaView::new(&obj.metadata))?);
        }
        Ok(value)
    }
}

macro_rules! dra_convert {
    ($($t:ident),*) => {$(
        impl K8sConvert for $t {
            type K8s = resource::$t;
            fn k8s_json(obj: &resource::$t) -> Result<Value, serde_json::Error> {
                serde_json::to_value(obj)
            }
        }
    )*};
}

dra_convert!(ResourceSlice, DeviceClass, ResourceClaim, ResourceClaimTemplate);

macro_rules! try_from_both_ways {
    ($($t:ty => $k:ty),* $(,)?) => {$(
        /// Strict: an object carrying a field schedkit does not model that can change a
        /// scheduling decision is refused; [`from_k8s`] returns such fields instead.
        impl TryFrom<&$k> for $t {
            type Error = ConvertError;
            fn try_from(obj: &$k) -> Result<Self, ConvertError> {
                let opts = LoadOptions::strict();
                match <$t as K8sConvert>::direct(obj, opts, false) {
                    Some(result) => Ok(result?.object),
                    None => Ok(from_k8s_via_manifest::<$t>(obj, opts)?.object),
                }
            }
        }
        /// Strict, as the conversion from a reference.
        impl TryFrom<$k> for $t {
            type Error = ConvertError;
            fn try_from(obj: $k) -> Result<Self, ConvertError> {
                <$t>::try_from(&obj)
            }
        }
        /// Every field schedkit models.
        impl TryFrom<&$t> for $k {
            type Error = ConvertError;
            fn try_from(obj: &$t) -> Result<Self, ConvertError> {
                to_k8s(obj)
            }
        }
        /// Every field schedkit models.
        impl TryFrom<$t> for $k {
            type Error = ConvertError;
            fn try_from(obj: $t) -> Result<Self, ConvertError> {
                to_k8s(&obj)
            }
        }
    )*};
}

try_from_both_ways!(
    Pod => core::Pod,
    Node => core::Node,
    Namespace => core::Namespace,
    PodDisruptionBudget => policy::PodDisruptionBudget,
    PriorityClass => scheduling::PriorityClass,
    ResourceSlice => resource::ResourceSlice,
    DeviceClass => resource::DeviceClass,
    ResourceClaim => resource::ResourceClaim,
    ResourceClaimTemplate => resource::ResourceClaimTemplate,
);

k8s_openapi::k8s_if_ge_1_36! {
    /// scheduling.k8s.io/v1alpha2 (v1.36): the workload API.
    mod workload_api {
        use k8s_openapi::api::scheduling::v1alpha2 as k8s;
        use serde_json::Value;

        use super::{ConvertError, K8sConvert, LoadOptions, from_k8s_via_manifest, to_k8s};
        use crate::model::workload::{PodGroup, Workload};

        impl K8sConvert for Workload {
            type K8s = k8s::Workload;
            fn k8s_json(obj: &k8s::Workload) -> Result<Value, serde_json::Error> {
                serde_json::to_value(obj)
            }
        }

        impl K8sConvert for PodGroup {
            type K8s = k8s::PodGroup;
            fn k8s_json(obj: &k8s::PodGroup) -> Result<Value, serde_json::Error> {
                serde_json::to_value(obj)
            }
        }

        macro_rules! both_ways {
            ($($t:ty => $k:ty),*) => {$(
                /// Strict: a field schedkit does not model under `spec` is refused.
                impl TryFrom<&$k> for $t {
                    type Error = ConvertError;
                    fn try_from(obj: &$k) -> Result<Self, ConvertError> {
                        Ok(from_k8s_via_manifest::<$t>(obj, LoadOptions::strict())?.object)
                    }
                }
                /// Every field schedkit models.
                impl TryFrom<&$t> for $k {
                    type Error = ConvertError;
                    fn try_from(obj: &$t) -> Result<Self, ConvertError> {
                        to_k8s(obj)
                    }
                }
            )*};
        }

        both_ways!(Workload => k8s::Workload, PodGroup => k8s::PodGroup);
    }
}
