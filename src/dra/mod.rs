//! Dynamic Resource Allocation: the `resource.k8s.io/v1` objects, the shared
//! [`DraStore`](crate::dra::DraStore), and the structured allocator.
//!
//! Upstream: `staging/src/k8s.io/dynamic-resource-allocation/structured/allocator.go`.
//!
//! Load slices, classes and claims into a [`DraStore`](crate::dra::DraStore) (each is validated and compiled
//! once, with typed [`DraError`](crate::dra::DraError)s), then either call the allocator directly
//! ([`DraStore::allocate_claims`](crate::dra::DraStore::allocate_claims)) or register the
//! `DynamicResources` plugin (`schedkit::plugins::dynamic_resources`), which sits above this module.
//!
//! Beyond the core allocator the store models:
//!
//! - device binding conditions and `bindsToNode` (KEP-5007): results carry the
//!   conditions, devices needing them are tried last, and the plugin's PreBind waits for
//!   them ([`DraStore::update_device_status`](crate::dra::DraStore::update_device_status),
//!   [`binding_state`](crate::dra::binding_state));
//! - [`DeviceTaintRule`](crate::dra::DeviceTaintRule)s, whose taints the allocator honours
//!   like slice taints ([`DraStore::add_taint_rule`](crate::dra::DraStore::add_taint_rule)),
//!   once switched on with
//!   [`DraStore::set_device_taint_rules`](crate::dra::DraStore::set_device_taint_rules)
//!   (off by default, as upstream's `DRADeviceTaintRules` gate in v1.36);
//! - the admin-access namespace label
//!   ([`DraStore::set_namespace_labels`](crate::dra::DraStore::set_namespace_labels),
//!   [`DraError::AdminAccessForbidden`](crate::dra::DraError::AdminAccessForbidden));
//! - extended resources backed by device classes (KEP-5004,
//!   [`DraStore::device_class_for_resource`](crate::dra::DraStore::device_class_for_resource));
//! - consumable capacity of devices with `allowMultipleAllocations` (KEP-5075), whose
//!   shared counters are charged once per device, by its first share;
//! - `allocationTimestamp` in allocation results written at PreBind with binding
//!   conditions on, and the DynamicResources Score for `firstAvailable` choices;
//! - upstream's DRA feature gates with v1.36's defaults
//!   ([`FeatureGates`](crate::framework::FeatureGates),
//!   [`DraStore::set_feature_gates`](crate::dra::DraStore::set_feature_gates)).

mod allocator;
mod chooser;
mod compiled;
mod error;
mod extended;
mod features;
pub mod mig;
mod slice;
mod store;
mod types;
pub mod validation;
mod world;

pub(crate) use allocator::Timeout;
pub use allocator::{
    ALLOCATION_RESULTS_MAX_SIZE, CandidateView, DEFAULT_STEP_BUDGET, DeviceChooser, Diagnosis, Problem,
};
pub use chooser::TopologyChooser;
pub use compiled::{CompiledClaim, CompiledClass, CompiledTaintRule};
pub use error::{AllocError, BindingError, CounterOverCapacity, DraError};
pub use extended::{MAX_EXTENDED_RESOURCES, is_dra_extended_resource_name};
#[expect(deprecated, reason = "DraFeatures stays for one release")]
pub use features::DraFeatures;
pub use store::{
    Audit, BindingState, DraStore, ExtendedDeviceCounts, GatherError, NodeResult, POD_GROUP_CONSUMER_API_GROUP,
    POD_GROUP_CONSUMER_RESOURCE, PodClaims, PodGroupSource, ResolvedClaim, binding_state, claim_name_for,
    extended_claim_name, is_reserved_for_pod, pod_group_claim_name, pod_group_consumer,
};
pub use types::*;
pub use world::DeviceId;
