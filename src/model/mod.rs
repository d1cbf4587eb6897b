//! Plain data: quantities, resources, pods, nodes and the selectors they carry.
//!
//! Types derive serde in the Kubernetes JSON/YAML shape (camelCase field names,
//! `metadata`/`spec`/`status`), so real manifests load directly. What the API server
//! would reject (a selector with a bad operator, `In` without values, a spread
//! constraint with `maxSkew: 0`) is rejected when the object is loaded or validated.
//! What the API server accepts but upstream's scheduler parses lazily (a node selector
//! value that is not a label value, `Gt` with a non-integer) loads, is reported by
//! [`Pod::warnings`], and makes its node selector term match nothing, as upstream.

pub mod cluster;
pub mod intern;
pub mod labels;
pub mod node;
pub mod pdb;
pub mod pod;
pub mod pod_resources;
pub mod quantity;
pub mod resource_names;
pub mod resources;
pub mod timestamp;
pub mod validation;
pub mod workload;

pub use cluster::{Namespace, NamespaceStatus, PriorityClass};
pub use intern::{HeldSymbol, InternerStats, Symbol};
pub use labels::{
    FIELD_METADATA_NAME, LabelOperator, LabelSelector, LabelSelectorRequirement, Labels, NodeSelector,
    NodeSelectorOperator, NodeSelectorRequirement, NodeSelectorTerm, SelectorError, is_valid_label_value,
};
pub use node::{ContainerImage, Node, NodeSpec, NodeStatus, ObjectMeta, Taint, TaintEffect};
pub use pdb::{IntOrPercent, PdbError, PdbSpec, PdbStatus, PodDisruptionBudget};
pub use pod::{
    Affinity, Container, ContainerPort, NodeAffinity, NodeInclusionPolicy, POD_GROUP_LABEL, Pod, PodAffinity,
    PodAffinityTerm, PodError, PodResourceClaim, PodSchedulingGroup, PodSpec, PodStatus, PodWarning, PreemptionPolicy,
    PreferredSchedulingTerm, Protocol, ResourceRequirements, SchedulingGate, Toleration, TolerationOperator,
    TopologySpreadConstraint, UnsatisfiableConstraintAction, WeightedPodAffinityTerm,
};
pub use pod_resources::PodRequestOptions;
pub use quantity::{Quantity, QuantityError, QuantityFormat};
pub use resource_names::{is_extended_resource_name, is_supported_pod_level_resource};
pub use resources::{
    DEFAULT_MEMORY_REQUEST, DEFAULT_MILLI_CPU_REQUEST, RESOURCE_CPU, RESOURCE_EPHEMERAL_STORAGE, RESOURCE_MEMORY,
    RESOURCE_NVIDIA_GPU, RESOURCE_PODS, ResourceList, Resources, native_names,
};
pub use timestamp::parse_rfc3339;
pub use validation::{FieldError, FieldErrorKind};
