//! Kubernetes objects exactly as the API server and `kubectl get -o yaml/json` print
//! them: `apiVersion`/`kind` checked, older DRA versions converted as the API server
//! converts them, the API server's defaulting applied ([`defaults`](crate::manifest::defaults)), and every field
//! schedkit does not read reported, with a strict mode that refuses those that can
//! change a scheduling decision.
//!
//! ```
//! use schedkit::manifest::{self, LoadOptions};
//! use schedkit::model::Pod;
//! let text = r#"{
//!   "apiVersion": "v1", "kind": "Pod",
//!   "metadata": {"name": "gpu-job", "namespace": "ml", "uid": "0b5c",
//!                "creationTimestamp": "2024-12-09T16:17:09Z", "resourceVersion": "1234",
//!                "managedFields": [{"manager": "kubectl", "operation": "Update"}]},
//!   "spec": {"containers": [{"name": "c", "image": "cuda", "command": ["train"],
//!            "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
//!            "workloadRef": {"name": "w"}},
//!   "status": {"phase": "Pending", "qosClass": "BestEffort"}
//! }"#;
//! let loaded = manifest::from_json::<Pod>(text, LoadOptions::default()).unwrap();
//! // Requests defaulted from limits, as the API server does.
//! assert_eq!(loaded.object.requests().scalar_str("nvidia.com/gpu"), 1);
//! assert_eq!(loaded.object.metadata.creation_timestamp, Some(1_733_761_029.0));
//! // What was not read, and whether it can change scheduling.
//! let matters: Vec<&str> = loaded.ignored.iter().filter(|f| f.affects_scheduling).map(|f| f.path.as_str()).collect();
//! assert_eq!(matters, ["spec.workloadRef"]);
//! // A strict load refuses it.
//! let err = manifest::from_json::<Pod>(text, LoadOptions::strict()).unwrap_err();
//! assert!(err.to_string().contains("spec.workloadRef"), "{err}");
//! ```

pub mod defaults;
mod dra_versions;
pub(crate) mod relevance;
mod workload;

use serde::de::DeserializeOwned;
use serde_json::Value;

pub use defaults::default_pod_level_resources;

use crate::dra::{DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice};
use crate::framework::{Feature, FeatureGates};
use crate::model::{Namespace, Node, Pod, PodDisruptionBudget, PriorityClass};

/// How to load.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LoadOptions {
    /// Refuse an object carrying a field schedkit does not model that can change a
    /// scheduling decision ([`ManifestError::Unmodeled`]); by default such fields are
    /// returned in [`Loaded::ignored`].
    pub strict: bool,
    /// Gates of the API server's defaulting (`PodLevelResources`).
    pub feature_gates: FeatureGates,
}

impl LoadOptions {
    /// Strict loading with the default gates.
    pub fn strict() -> LoadOptions {
        LoadOptions { strict: true, ..LoadOptions::default() }
    }
}

/// A field present in the object that schedkit did not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IgnoredField {
    /// Field path, `spec.containers[0].command`.
    pub path: String,
    /// Whether the field can change a scheduling decision (a strict load refuses it).
    pub affects_scheduling: bool,
}

/// A loaded object with what the load did.
#[derive(Debug, Clone, PartialEq)]
pub struct Loaded<T> {
    /// The object, converted to the current version and defaulted.
    pub object: T,
    /// The `apiVersion` the text had (empty when it had none).
    pub api_version: String,
    /// Fields present but not read, in document order.
    pub ignored: Vec<IgnoredField>,
}

/// An object that could not be loaded, saying where.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ManifestError {
    /// The text does not decode: syntax, a wrong type, an invalid value.
    #[error("{kind}: {path}: {message}{}", location(*line, *column))]
    Decode {
        /// The kind being loaded.
        kind: &'static str,
        /// Field path (`spec.containers[0].resources.limits.cpu`), `.` for the top.
        path: String,
        /// 1-based line, when known.
        line: Option<usize>,
        /// 1-based column, when known.
        column: Option<usize>,
        /// The decoder's message.
        message: String,
    },
    /// `kind` names another kind.
    #[error("kind: expected {expected:?}, got {got:?}")]
    WrongKind {
        /// The kind being loaded.
        expected: &'static str,
        /// The text's kind.
        got: String,
    },
    /// `apiVersion` is not one schedkit reads for this kind.
    #[error("apiVersion: {kind} {got:?} is not supported (supported: {})", supported.join(", "))]
    UnsupportedVersion {
        /// The kind.
        kind: &'static str,
        /// The text's apiVersion.
        got: String,
        /// What schedkit reads, newest first.
        supported: &'static [&'static str],
    },
    /// An older version's object that has no equivalent in the current version.
    #[error("{kind} {api_version}: {path}: {message}")]
    Conversion {
        /// The kind.
        kind: &'static str,
        /// The version converted from.
        api_version: String,
        /// Field path.
        path: String,
        /// Why.
        message: String,
    },
    /// Strict mode: fields schedkit does not model that can change scheduling.
    #[error("{kind} {name}: fields schedkit does not model can change how it schedules: {}", paths.join(", "))]
    Unmodeled {
        /// The kind.
        kind: &'static str,
        /// namespace/name or name.
        name: String,
        /// The fields.
        paths: Vec<String>,
    },
    /// The text is not one object (a list, a scalar).
    #[error("{kind}: expected an object, got {got}")]
    NotAnObject {
        /// The kind.
        kind: &'static str,
        /// What it was.
        got: &'static str,
    },
}

fn location(line: Option<usize>, column: Option<usize>) -> String {
    match (line, column) {
        (Some(l), Some(c)) => format!(" (line {l}, column {c})"),
        _ => String::new(),
    }
}

/// A kind schedkit loads from manifests.
pub trait Manifest: DeserializeOwned {
    /// The kind (`Pod`).
    const KIND: &'static str;
    /// The `apiVersion`s read, the current one first.
    const API_VERSIONS: &'static [&'static str];

    /// Converts an older version's object to the current version's shape, as the API
    /// server's conversion functions do.
    fn convert(_from: &str, _obj: &mut Value) -> Result<(), ManifestError> {
        Ok(())
    }

    /// API-server defaulting that depends on which fields are present, before decoding.
    fn default_before_decode(_obj: &mut Value) {}

    /// Field conversions that depend on the feature gates, before decoding (a v1.35
    /// pod's `spec.workloadRef` with `GenericWorkload` on).
    fn convert_gated(_obj: &mut Value, _gates: FeatureGates) {}

    /// API-server defaulting on the decoded object.
    fn default_after_decode(&mut self, _gates: FeatureGates) {}

    /// Whether a field schedkit ignored (its path and value) can change a scheduling
    /// decision.
    fn affects_scheduling(path: &str, value: &Value) -> bool;

    /// `namespace/name` or `name`, for messages.
    fn display_name(obj: &Value) -> String {
        let meta = &obj["metadata"];
        let name = meta["name"].as_str().unwrap_or("");
        match meta["namespace"].as_str() {
            Some(ns) if !ns.is_empty() => format!("{ns}/{name}"),
            _ => name.to_owned(),
        }
    }
}

impl Manifest for Pod {
    const KIND: &'static str = "Pod";
    const API_VERSIONS: &'static [&'static str] = &["v1"];
    fn default_before_decode(obj: &mut Value) {
        defaults::pod_before_decode(obj);
    }
    fn convert_gated(obj: &mut Value, gates: FeatureGates) {
        workload::convert_pod_workload_ref(obj, gates);
    }
    fn default_after_decode(&mut self, gates: FeatureGates) {
        if gates.enabled(Feature::PodLevelResources) {
            defaults::default_pod_level_resources(self);
        }
    }
    fn affects_scheduling(path: &str, value: &Value) -> bool {
        relevance::pod(path, value)
    }
}

impl Manifest for Node {
    const KIND: &'static str = "Node";
    const API_VERSIONS: &'static [&'static str] = &["v1"];
    fn default_before_decode(obj: &mut Value) {
        defaults::node_before_decode(obj);
    }
    fn affects_scheduling(path: &str, value: &Value) -> bool {
        relevance::node(path, value)
    }
}

impl Manifest for PodDisruptionBudget {
    const KIND: &'static str = "PodDisruptionBudget";
    const API_VERSIONS: &'static [&'static str] = &["policy/v1"];
    fn affects_scheduling(path: &str, value: &Value) -> bool {
        relevance::pdb(path, value)
    }
}

impl Manifest for PriorityClass {
    const KIND: &'static str = "PriorityClass";
    const API_VERSIONS: &'static [&'static str] = &["scheduling.k8s.io/v1"];
    fn default_after_decode(&mut self, _gates: FeatureGates) {
        defaults::priority_class(self);
    }
    fn affects_scheduling(path: &str, value: &Value) -> bool {
        relevance::nothing(path, value)
    }
}

impl Manifest for Namespace {
    const KIND: &'static str = "Namespace";
    const API_VERSIONS: &'static [&'static str] = &["v1"];
    fn default_after_decode(&mut self, _gates: FeatureGates) {
        defaults::namespace(self);
    }
    fn affects_scheduling(path: &str, value: &Value) -> bool {
        relevance::nothing(path, value)
    }
}

/// The DRA versions read: v1, and the betas the API server still converts.
const DRA_VERSIONS: &[&str] = &["resource.k8s.io/v1", "resource.k8s.io/v1beta2", "resource.k8s.io/v1beta1"];

macro_rules! dra_manifest {
    ($t:ty, $kind:literal, $convert:path) => {
        impl Manifest for $t {
            const KIND: &'static str = $kind;
            const API_VERSIONS: &'static [&'static str] = DRA_VERSIONS;
            fn convert(from: &str, obj: &mut Value) -> Result<(), ManifestError> {
                $convert(from, obj)
            }
            fn affects_scheduling(path: &str, value: &Value) -> bool {
                relevance::spec_matters(path, value)
            }
        }
    };
}

dra_manifest!(ResourceClaim, "ResourceClaim", dra_versions::resource_claim);
dra_manifest!(ResourceClaimTemplate, "ResourceClaimTemplate", dra_versions::resource_claim_template);
dra_manifest!(ResourceSlice, "ResourceSlice", dra_versions::resource_slice);
dra_manifest!(DeviceClass, "DeviceClass", dra_versions::device_class);

/// Formats a `serde_ignored` path as `spec.containers[0].command` and finds the
/// ignored value in the object.
fn ignored_path<'v>(path: &serde_ignored::Path<'_>, root: &'v Value) -> (String, Option<&'v Value>) {
    use serde_ignored::Path;
    match path {
        Path::Root => (String::new(), Some(root)),
        Path::Seq { parent, index } => {
            let (p, v) = ignored_path(parent, root);
            (format!("{p}[{index}]"), v.and_then(|v| v.get(*index)))
        }
        Path::Map { parent, key } => {
            let (p, v) = ignored_path(parent, root);
            let v = v.and_then(|v| v.get(key.as_str()));
            (if p.is_empty() { key.clone() } else { format!("{p}.{key}") }, v)
        }
        Path::Some { parent } | Path::NewtypeStruct { parent } | Path::NewtypeVariant { parent } => {
            ignored_path(parent, root)
        }
    }
}

/// Loads an object from a JSON value: checks `kind` and `apiVersion` (when present),
/// converts an older version, applies the API server's defaulting, decodes with
/// field paths in errors and collects the fields not read.
pub fn from_value<T: Manifest>(mut obj: Value, opts: LoadOptions) -> Result<Loaded<T>, ManifestError> {
    let Some(map) = obj.as_object_mut() else {
        let got = match obj {
            Value::Array(_) => "a list",
            Value::Null => "null",
            _ => "a scalar",
        };
        return Err(ManifestError::NotAnObject { kind: T::KIND, got });
    };
    if let Some(kind) = map.get("kind").and_then(Value::as_str)
        && kind != T::KIND
    {
        return Err(ManifestError::WrongKind { expected: T::KIND, got: kind.to_owned() });
    }
    let api_version = map.get("apiVersion").and_then(Value::as_str).unwrap_or_default().to_owned();
    if !api_version.is_empty() && !T::API_VERSIONS.contains(&api_version.as_str()) {
        return Err(ManifestError::UnsupportedVersion { kind: T::KIND, got: api_version, supported: T::API_VERSIONS });
    }
    if !api_version.is_empty() && api_version != T::API_VERSIONS[0] {
        T::convert(&api_version, &mut obj)?;
    }
    T::convert_gated(&mut obj, opts.feature_gates);
    T::default_before_decode(&mut obj);
    let name = T::display_name(&obj);
    let mut ignored = Vec::new();
    let object: T = {
        let root = &obj;
        let mut on_ignored = |p: serde_ignored::Path<'_>| {
            let (path, value) = ignored_path(&p, root);
            if path != "apiVersion" && path != "kind" {
                let affects_scheduling = T::affects_scheduling(&path, value.unwrap_or(&Value::Null));
                ignored.push(IgnoredField { path, affects_scheduling });
            }
        };
        let de = serde_ignored::Deserializer::new(&obj, &mut on_ignored);
        serde_path_to_error::deserialize(de).map_err(|e| {
            let path = e.path().to_string();
            ManifestError::Decode {
                kind: T::KIND,
                path: if path.is_empty() { ".".to_owned() } else { path },
                line: None,
                column: None,
                message: e.into_inner().to_string(),
            }
        })?
    };
    if opts.strict {
        let paths: Vec<String> = ignored.iter().filter(|f| f.affects_scheduling).map(|f| f.path.clone()).collect();
        if !paths.is_empty() {
            return Err(ManifestError::Unmodeled { kind: T::KIND, name, paths });
        }
    }
    let mut object = object;
    object.default_after_decode(opts.feature_gates);
    Ok(Loaded { object, api_version, ignored })
}

/// Loads one object from JSON text.
pub fn from_json<T: Manifest>(text: &str, opts: LoadOptions) -> Result<Loaded<T>, ManifestError> {
    let value: Value = serde_json::from_str(text).map_err(|e| ManifestError::Decode {
        kind: T::KIND,
        path: ".".to_owned(),
        line: Some(e.line()),
        column: Some(e.column()),
        message: bare(e.to_string()),
    })?;
    from_value(value, opts)
}

/// Loads one object from YAML text (one document). Needs the `yaml` feature.
#[cfg(feature = "yaml")]
pub fn from_yaml<T: Manifest>(text: &str, opts: LoadOptions) -> Result<Loaded<T>, ManifestError> {
    from_value(yaml_value::<T>(text)?, opts)
}

#[cfg(feature = "yaml")]
fn yaml_value<T: Manifest>(text: &str) -> Result<Value, ManifestError> {
    serde_norway::from_str(text).map_err(|e: serde_norway::Error| {
        let loc = e.location();
        ManifestError::Decode {
            kind: T::KIND,
            path: ".".to_owned(),
            line: loc.as_ref().map(serde_norway::Location::line),
            column: loc.as_ref().map(serde_norway::Location::column),
            message: bare(e.to_string()),
        }
    })
}

/// Loads every item of a list as `kubectl get -o json` prints it (`kind: List` or
/// `<Kind>List`, objects under `items`); an error names the item.
pub fn list_from_value<T: Manifest>(obj: &Value, opts: LoadOptions) -> Result<Vec<Loaded<T>>, ManifestError> {
    let list_kind = obj.get("kind").and_then(Value::as_str).unwrap_or("List");
    if list_kind != "List" && list_kind.strip_suffix("List") != Some(T::KIND) {
        return Err(ManifestError::WrongKind { expected: T::KIND, got: list_kind.to_owned() });
    }
    let Some(items) = obj.get("items").and_then(Value::as_array) else {
        return Err(ManifestError::NotAnObject { kind: T::KIND, got: "a list without items" });
    };
    let list_version = obj.get("apiVersion").and_then(Value::as_str).map(str::to_owned);
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let mut item = item.clone();
            // `<Kind>List` items often omit their own apiVersion and kind.
            if let (Some(map), Some(v)) = (item.as_object_mut(), &list_version)
                && list_kind != "List"
            {
                map.entry("apiVersion").or_insert_with(|| Value::String(v.clone()));
            }
            from_value::<T>(item, opts).map_err(|e| match e {
                ManifestError::Decode { kind, path, line, column, message } => {
                    ManifestError::Decode { kind, path: format!("items[{i}].{path}"), line, column, message }
                }
                other => other,
            })
        })
        .collect()
}

/// Loads a list from JSON text ([`list_from_value`]).
pub fn list_from_json<T: Manifest>(text: &str, opts: LoadOptions) -> Result<Vec<Loaded<T>>, ManifestError> {
    let value: Value = serde_json::from_str(text).map_err(|e| ManifestError::Decode {
        kind: T::KIND,
        path: ".".to_owned(),
        line: Some(e.line()),
        column: Some(e.column()),
        message: bare(e.to_string()),
    })?;
    list_from_value(&value, opts)
}

/// Loads a list from YAML text ([`list_from_value`]). Needs the `yaml` feature.
#[cfg(feature = "yaml")]
pub fn list_from_yaml<T: Manifest>(text: &str, opts: LoadOptions) -> Result<Vec<Loaded<T>>, ManifestError> {
    list_from_value(&yaml_value::<T>(text)?, opts)
}

fn bare(text: String) -> String {
    match text.rfind(" at line ") {
        Some(i) => text[..i].to_owned(),
        None => text,
    }
}
