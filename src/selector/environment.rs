//! Which CEL environment a selector compiles in, and whether its worst-case cost is
//! estimated: upstream `k8s.io/dynamic-resource-allocation/cel/compile.go`, `Options`
//! (`EnvType`, `DisableCostEstimation`) and `Features`.

use super::Limits;
use crate::framework::{Feature, FeatureGates};

/// The environment of `k8s.io/apiserver/pkg/cel/environment`: what an expression may use.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Environment {
    /// `environment.StoredExpressions`, the default: every function and field of the
    /// version, whatever the feature gates, so expressions already stored keep working.
    /// kube-scheduler compiles selectors in it; so does the DRA store.
    #[default]
    StoredExpressions,
    /// `environment.NewExpressions`, what API validation applies to a new or changed
    /// object: feature-gated functions and fields are refused while their gate is off
    /// (`includes` and macros over attribute values need `DRAListTypeAttributes`,
    /// `device.allowMultipleAllocations` needs `DRAConsumableCapacity`).
    NewExpressions,
}

/// The feature gates the DRA CEL environment reads (upstream `cel.Features`); only
/// [`Environment::NewExpressions`] looks at them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SelectorFeatures {
    /// `DRAConsumableCapacity`: `device.allowMultipleAllocations`.
    pub consumable_capacity: bool,
    /// `DRAListTypeAttributes`: `includes`, and macros whose range is an attribute value.
    pub list_type_attributes: bool,
}

impl Default for SelectorFeatures {
    /// Kubernetes v1.36's defaults (consumable capacity beta and on, list-type
    /// attributes alpha and off).
    fn default() -> Self {
        SelectorFeatures::from(FeatureGates::default())
    }
}

impl From<FeatureGates> for SelectorFeatures {
    fn from(g: FeatureGates) -> Self {
        SelectorFeatures {
            consumable_capacity: g.enabled(Feature::DRAConsumableCapacity),
            list_type_attributes: g.enabled(Feature::DRAListTypeAttributes),
        }
    }
}

/// Whether compilation estimates the worst-case cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CostCheck {
    /// Estimate the worst case and refuse an expression over the budget (upstream's
    /// default).
    #[default]
    WorstCase,
    /// Skip the estimate (upstream `DisableCostEstimation`): the expression compiles
    /// whatever its worst case, [`Selector::estimated_cost`](super::Selector::estimated_cost)
    /// is `u64::MAX`, and only the actual cost of each evaluation is held to the budget.
    RuntimeOnly,
}

/// Everything [`Selector::compile_opts`](super::Selector::compile_opts) takes.
///
/// ```
/// use schedkit::selector::{CompileOptions, Environment, Selector, SelectorFeatures};
///
/// let expr = r#"device.attributes["dra.example.com"].roots.includes("pci-0")"#;
/// // The scheduler's environment accepts it whatever the gates ...
/// assert!(Selector::compile(expr).is_ok());
/// // ... API validation of a new object only with DRAListTypeAttributes on.
/// let new = CompileOptions { environment: Environment::NewExpressions, ..CompileOptions::default() };
/// let err = Selector::compile_opts(expr, &new).unwrap_err();
/// assert!(err.to_string().contains("undeclared reference to 'includes'"));
/// let lists = SelectorFeatures { list_type_attributes: true, ..SelectorFeatures::default() };
/// assert!(Selector::compile_opts(expr, &CompileOptions { features: lists, ..new }).is_ok());
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CompileOptions {
    /// The environment.
    pub environment: Environment,
    /// The gates [`Environment::NewExpressions`] reads.
    pub features: SelectorFeatures,
    /// Cost, length and depth limits.
    pub limits: Limits,
    /// Whether to estimate the worst-case cost.
    pub cost_check: CostCheck,
}

/// What the compiler refuses in the chosen environment.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Refusals {
    /// `includes` and macros over attribute values.
    pub lists: bool,
    /// `device.allowMultipleAllocations`.
    pub multi_alloc: bool,
}

impl CompileOptions {
    pub(crate) fn refusals(&self) -> Refusals {
        match self.environment {
            Environment::StoredExpressions => Refusals::default(),
            Environment::NewExpressions => {
                Refusals { lists: !self.features.list_type_attributes, multi_alloc: !self.features.consumable_capacity }
            }
        }
    }
}
