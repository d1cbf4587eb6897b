//! Facts about resource names that hold for every consumer (upstream
//! `pkg/apis/core/v1/helper`): which names are extended resources.

/// Whether a resource name is an extended resource (upstream
/// `v1helper.IsExtendedResourceName`): not native (it has a `/` outside the
/// `kubernetes.io/` domain) and not a quota `requests.` name.
///
/// ```
/// use schedkit::model::is_extended_resource_name;
/// assert!(is_extended_resource_name("nvidia.com/gpu"));
/// assert!(!is_extended_resource_name("cpu"));
/// assert!(!is_extended_resource_name("kubernetes.io/something"));
/// assert!(!is_extended_resource_name("requests.example.com/foo"));
/// ```
pub fn is_extended_resource_name(name: &str) -> bool {
    let native = !name.contains('/') || name.contains("kubernetes.io/");
    !native && !name.starts_with("requests.")
}

/// Whether pod-level resources (`spec.resources`) may set this resource (upstream
/// `IsSupportedPodLevelResource`, `k8s.io/component-helpers/resource/helpers.go`):
/// `cpu`, `memory` and huge pages (`hugepages-<size>`).
///
/// ```
/// use schedkit::model::is_supported_pod_level_resource;
/// assert!(is_supported_pod_level_resource("cpu"));
/// assert!(is_supported_pod_level_resource("hugepages-2Mi"));
/// assert!(!is_supported_pod_level_resource("ephemeral-storage"));
/// assert!(!is_supported_pod_level_resource("nvidia.com/gpu"));
/// ```
pub fn is_supported_pod_level_resource(name: &str) -> bool {
    name == "cpu" || name == "memory" || name.starts_with("hugepages-")
}
