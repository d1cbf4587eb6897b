//! Dynamic Resource Allocation: the `resource.k8s.io/v1` objects, the shared
//! [`DraStore`](crate::dra::DraStore), and the structured allocator (upstream
//! `staging/src/k8s.io/dynamic-resource-allocation/structured/allocator.go`).
//!
//! Load slices, classes and claims into a [`DraStore`](crate::dra::DraStore) (each is validated and compiled
//! once, with typed [`DraError`](crate::dra::DraError)s), then either call the allocator directly
//! ([`DraStore::allocate_claims`](crate::dra::DraStore::allocate_claims)) or register the
//! [`DynamicResources`](crate::plugins::dynamic_resources::DynamicResources) plugin.

mod allocator;
mod chooser;
mod compiled;
mod error;
mod extended;
mod store;
mod types;
mod world;

pub use allocator::{CandidateView, DEFAULT_STEP_BUDGET, DeviceChooser, Diagnosis, Problem};
pub use chooser::TopologyChooser;
pub use compiled::{CompiledClaim, CompiledClass, CompiledTaintRule};
pub use error::{AllocError, BindingError, CounterOverCapacity, DraError};
pub use extended::{MAX_EXTENDED_RESOURCES, is_dra_extended_resource_name};
pub use store::{
    Audit, BindingState, DraStore, GatherError, NodeResult, PodClaims, binding_state, claim_name_for,
    extended_claim_name,
};
pub use types::*;
pub use world::DeviceId;
