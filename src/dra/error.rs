//! Typed errors for DRA objects (load time) and allocation (scheduling time).

use crate::model::FieldError;
use crate::selector::SelectorError;

/// What is wrong with a DRA object handed to a [`DraStore`](super::DraStore). Returned at
/// load time, so nothing malformed reaches a scheduling cycle.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum DraError {
    /// The API server would refuse the object (upstream
    /// `pkg/apis/resource/validation/validation.go`): a list over its limit (the
    /// [`FieldErrorKind::TooMany`](crate::model::FieldErrorKind::TooMany) names it), a
    /// name in the wrong format, a string too long. The error names the field path as
    /// upstream does, e.g. `ResourceSlice s: spec.devices: Too many: 129: must have at
    /// most 128 items`.
    #[error("{object}: {error}")]
    Invalid {
        /// `ResourceSlice name`, `ResourceClaim ns/name`, `ResourceClaimTemplate
        /// ns/name`, `DeviceClass name` or `DeviceTaintRule name`.
        object: String,
        /// The field and what is wrong with it.
        error: FieldError,
    },
    /// A request names a device class the store does not have.
    #[error("ResourceClaim {claim}: request {request}: DeviceClass {class:?} not found")]
    MissingDeviceClass {
        /// `namespace/name` of the claim.
        claim: String,
        /// The request (or `request/subrequest`).
        request: String,
        /// The class named.
        class: String,
    },
    /// A CEL selector does not compile.
    #[error("{object}: selector #{index} {expression:?}: {source}")]
    BadSelector {
        /// `DeviceClass name` or `ResourceClaim ns/name, request r`.
        object: String,
        /// Position of the selector in its list.
        index: usize,
        /// The expression.
        expression: String,
        /// The compiler's error, with its position.
        source: Box<SelectorError>,
    },
    /// ExactCount with a count below 1.
    #[error("ResourceClaim {claim}: request {request}: count must be at least 1, got {count}")]
    InvalidCount {
        /// `namespace/name`.
        claim: String,
        /// The request.
        request: String,
        /// The count given.
        count: i64,
    },
    /// Another structural problem in a claim (names, exactly-one-of fields, constraints).
    #[error("ResourceClaim {claim}: {reason}")]
    InvalidClaim {
        /// `namespace/name`.
        claim: String,
        /// What is wrong.
        reason: String,
    },
    /// Two devices of one slice share a name (across slices of a pool, the pool is
    /// invalid where both are seen instead).
    #[error("ResourceSlice {slice}: pool {pool}: duplicate device name {device:?}")]
    DuplicateDevice {
        /// The slice.
        slice: String,
        /// The pool.
        pool: String,
        /// The repeated name.
        device: String,
    },
    /// A device consumes more of a counter than its counter set holds. No longer returned:
    /// a slice can't hold both counter sets and devices
    /// ([`DraError::CountersWithDevices`]), and the API server checks no consumption
    /// across slices; such a device is simply never allocated.
    #[error(
        "ResourceSlice {}: device {} consumes {} of counter {} in set {}, more than its capacity {}",
        .0.slice, .0.device, .0.consumed, .0.counter, .0.set, .0.capacity
    )]
    CounterOverCapacity(Box<CounterOverCapacity>),
    /// A slice sets both `sharedCounters` and `devices`, which the API server rejects
    /// since v1.35: counter sets and the devices consuming them go in separate slices of
    /// one pool.
    #[error("ResourceSlice {slice}: only one of sharedCounters and devices may be set")]
    CountersWithDevices {
        /// The slice.
        slice: String,
    },
    /// Another structural problem in a slice (node selection, attributes, counter sets).
    #[error("ResourceSlice {slice}: {reason}")]
    InvalidSlice {
        /// The slice.
        slice: String,
        /// What is wrong.
        reason: String,
    },
    /// A device class with an invalid spec other than a selector.
    #[error("DeviceClass {class}: {reason}")]
    InvalidClass {
        /// The class.
        class: String,
        /// What is wrong.
        reason: String,
    },
    /// The named claim is not in the store.
    #[error("ResourceClaim {0} not found")]
    ClaimNotFound(String),
    /// A `DeviceTaintRule` with an invalid spec other than a selector. No longer
    /// returned: rules are validated as the API server does, into [`DraError::Invalid`]
    /// naming the field.
    #[error("DeviceTaintRule {rule}: {reason}")]
    InvalidTaintRule {
        /// The rule.
        rule: String,
        /// What is wrong.
        reason: String,
    },
    /// A claim (or template) asks for `adminAccess` in a namespace without the
    /// `resource.kubernetes.io/admin-access: "true"` label. Upstream rejects it when the
    /// object is created (`pkg/registry/resource/utils.go`, `AuthorizedForAdmin`, called
    /// from the ResourceClaim and ResourceClaimTemplate strategies' validation), with
    /// the same message.
    #[error(
        "{object}: spec.devices.requests[{index}].exactly.adminAccess: Forbidden: admin access to devices requires the `resource.kubernetes.io/admin-access: true` label on the containing namespace {namespace:?}"
    )]
    AdminAccessForbidden {
        /// `ResourceClaim ns/name` or `ResourceClaimTemplate ns/name`.
        object: String,
        /// The request's position.
        index: usize,
        /// The namespace.
        namespace: String,
    },
}

/// Why PreBind gave up waiting for a claim's device binding conditions (KEP-5007,
/// upstream `dynamicresources.go`, `isClaimReadyForBinding` and `PreBind`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BindingError {
    /// A binding failure condition of a device is `True`.
    #[error("claim {claim} binding failed: reason={reason}, message={message:?}")]
    Failed {
        /// `namespace/name`.
        claim: String,
        /// The failure condition's reason.
        reason: String,
        /// The failure condition's message.
        message: String,
    },
    /// The binding conditions did not all become `True` within the binding timeout.
    #[error("claim {claim} binding timeout: device binding conditions not met after {seconds}s")]
    Timeout {
        /// `namespace/name`.
        claim: String,
        /// The timeout.
        seconds: u64,
    },
    /// The claim disappeared while PreBind waited.
    #[error("ResourceClaim {0} was deleted while waiting for its binding conditions")]
    ClaimDeleted(String),
}

/// The details of [`DraError::CounterOverCapacity`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CounterOverCapacity {
    /// The slice.
    pub slice: String,
    /// The device.
    pub device: String,
    /// The counter set.
    pub set: String,
    /// The counter.
    pub counter: String,
    /// What the device consumes.
    pub consumed: String,
    /// What the set holds (`0` when the counter is not in the set).
    pub capacity: String,
}

/// Why allocation stopped with an error rather than a plain "does not fit" (upstream
/// returns these as errors from `Allocate`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AllocError {
    /// The backtracking search took more steps than its budget.
    #[error("allocation search exceeded its budget of {budget} steps")]
    BudgetExceeded {
        /// The budget.
        budget: u64,
    },
    /// An `All` request while a pool gathered for the node is incomplete, whether or not
    /// it has devices the request matches (upstream: "asks for all devices, but resource
    /// pool ... is currently being updated").
    #[error(
        "claim {claim}, request {request}: asks for all devices, but resource pool {pool} is currently being updated"
    )]
    PoolIncomplete {
        /// `namespace/name`.
        claim: String,
        /// The request.
        request: String,
        /// `driver/pool`.
        pool: String,
    },
    /// An `All` request while a pool gathered for the node is invalid (duplicate device
    /// names, duplicate counter sets, consumed counters that don't exist; upstream:
    /// "asks for all devices, but resource pool ... is currently invalid").
    #[error("claim {claim}, request {request}: asks for all devices, but resource pool {pool} is currently invalid")]
    PoolInvalid {
        /// `namespace/name`.
        claim: String,
        /// The request.
        request: String,
        /// `driver/pool`.
        pool: String,
        /// Why.
        reason: String,
    },
    /// A selector failed while evaluating a device on the node (upstream
    /// `allocator.go`: "selector #i: CEL runtime error"), e.g. it reads an attribute the
    /// device lacks without `has()`.
    #[error("claim {claim}, request {request}: {message}")]
    SelectorRuntime {
        /// `namespace/name`.
        claim: String,
        /// The request.
        request: String,
        /// Which selector and the evaluator's error.
        message: String,
    },
    /// The search ran longer than the DynamicResources `filterTimeout` (upstream Filter:
    /// Unschedulable, "timed out trying to allocate devices").
    #[error("timed out trying to allocate devices")]
    FilterTimeout,
    /// A claim requests admin access while `DRAAdminAccess` is off
    /// ([`Feature::DRAAdminAccess`](crate::framework::Feature::DRAAdminAccess); upstream
    /// `validateDeviceRequest`, an Error in Filter).
    #[error("claim {claim}, request {request}: admin access is requested, but the feature is disabled")]
    AdminAccessDisabled {
        /// `namespace/name`.
        claim: String,
        /// The request.
        request: String,
    },
    /// A request (or subrequest) asks for capacity while `DRAConsumableCapacity` is off
    /// ([`Feature::DRAConsumableCapacity`](crate::framework::Feature::DRAConsumableCapacity);
    /// upstream `Allocate`, an Error in Filter).
    #[error(
        "claim {claim}, {} {request}: has capacity requests, but the DRAConsumableCapacity feature is disabled",
        if *.subrequest { "subrequest" } else { "request" }
    )]
    ConsumableCapacityDisabled {
        /// `namespace/name`.
        claim: String,
        /// The request, or the subrequest's own name.
        request: String,
        /// Whether `request` names a subrequest.
        subrequest: bool,
    },
    /// In `All` mode a device the request matches would break one of the claim's
    /// constraints: upstream treats such a claim as an error rather than "does not fit"
    /// (`allocator.go`, `allocateDevice` with `must`).
    #[error(
        "claim {claim}, request {request}: cannot add device {device} because a claim constraint would not be satisfied"
    )]
    ConstraintViolated {
        /// `namespace/name`.
        claim: String,
        /// The request (or `request/subrequest`).
        request: String,
        /// `driver/pool/device`.
        device: String,
    },
    /// The claim asks for more devices in total than one allocation result may hold
    /// (upstream `allocator.go`, `Allocate`: the sum over requests of each request's
    /// count, its smallest subrequest's count, or for `All` the matching devices, against
    /// `AllocationResultsMaxSize`, 32).
    #[error("claim {claim}: number of requested devices {requested} exceeds the claim limit of {limit}")]
    TooManyDevices {
        /// `namespace/name`.
        claim: String,
        /// The devices the claim needs at least.
        requested: u64,
        /// The limit ([`ALLOCATION_RESULTS_MAX_SIZE`](super::ALLOCATION_RESULTS_MAX_SIZE)).
        limit: u32,
    },
    /// A device class a claim needs was removed after the claim was loaded.
    #[error("claim {claim}, request {request}: DeviceClass {class:?} not found")]
    MissingDeviceClass {
        /// `namespace/name`.
        claim: String,
        /// The request.
        request: String,
        /// The class.
        class: String,
    },
}
