//! The `resource.k8s.io/v1` objects the scheduler reads and writes, one file per kind;
//! here the shared `ObjectMeta`, label and annotation names, and pod status types.
//!
//! Each is in its exact serialized shape (camelCase, the same field names), so real
//! manifests load as they are (upstream `k8s.io/api/resource/v1/types.go`).
//!
//! These are plain data: validation and compilation happen when an object is added to a
//! [`DraStore`](super::DraStore), which returns a typed [`DraError`](super::DraError).

mod device_class;
mod device_taint_rule;
mod resource_claim;
mod resource_slice;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use device_class::*;
pub use device_taint_rule::*;
pub use resource_claim::*;
pub use resource_slice::*;

/// The API version these types serialize as.
pub const API_VERSION: &str = "resource.k8s.io/v1";

/// Object metadata as the API server returns it: the fields DRA reads are typed, every
/// other field (`resourceVersion`, `ownerReferences`, timestamps, ...) is kept as JSON so
/// a manifest round-trips unchanged.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectMeta {
    /// Name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Namespace (claims and templates; empty means `default`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Uid.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// Labels.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Annotations.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// Every other metadata field, carried as is.
    #[serde(flatten)]
    pub other: BTreeMap<String, serde_json::Value>,
}

/// The label a namespace needs before claims in it may ask for `adminAccess`
/// (upstream `pkg/registry/resource/utils.go`, `AuthorizedForAdmin`).
pub const ADMIN_ACCESS_NAMESPACE_LABEL: &str = "resource.kubernetes.io/admin-access";

/// The annotation marking the claim the scheduler makes for a pod's extended
/// resources backed by DRA (upstream `resourceapi.ExtendedResourceClaimAnnotation`).
pub const EXTENDED_RESOURCE_CLAIM_ANNOTATION: &str = "resource.kubernetes.io/extended-resource-claim";

/// The prefix of every class's implicit extended resource name (upstream
/// `resourceapi.ResourceDeviceClassPrefix`).
pub const IMPLICIT_EXTENDED_RESOURCE_PREFIX: &str = "deviceclass.resource.kubernetes.io/";

/// `ContainerExtendedResourceRequest`: which claim request serves a container's
/// extended resource.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerExtendedResourceRequest {
    /// The container.
    pub container_name: String,
    /// The extended resource.
    pub resource_name: String,
    /// The request of the claim.
    pub request_name: String,
}

/// `PodExtendedResourceClaimStatus`: what the scheduler records in the pod's status
/// after it made the claim for the pod's extended resources.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodExtendedResourceClaimStatus {
    /// One entry per container and resource.
    pub request_mappings: Vec<ContainerExtendedResourceRequest>,
    /// The claim's name.
    pub resource_claim_name: String,
}
