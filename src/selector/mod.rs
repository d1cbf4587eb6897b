//! The CEL-compatible device selector language of Dynamic Resource Allocation.
//!
//! A DRA `ResourceClaim` or `DeviceClass` picks devices with CEL expressions such as
//!
//! ```text
//! device.attributes["gpu.nvidia.com"].productName == "NVIDIA H100 80GB HBM3" &&
//! device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("80Gi")) >= 0
//! ```
//!
//! This module accepts the same expressions as Kubernetes v1.36 (resource.k8s.io/v1),
//! gives the same answers, and evaluates them in nanoseconds:
//!
//! - [`Selector::compile`] parses (cel-spec grammar, precedence and associativity),
//!   type-checks against the DRA environment of
//!   `k8s.io/dynamic-resource-allocation/cel/compile.go`, estimates the worst-case cost
//!   with cel-go's cost model and the resource.k8s.io size bounds, refuses expressions
//!   over [`MAX_COST`], and resolves `device.attributes["domain"].name` to an interned
//!   [`AttributeKey`].
//! - [`Selector::matches`] evaluates against a [`Device`]. Comparisons, boolean logic,
//!   quantity and semver comparisons allocate nothing; attribute lookups compare
//!   integers.
//!
//! Semantics worth knowing (all as upstream):
//!
//! - An attribute name without a domain belongs to the device's driver:
//!   `device.attributes["gpu.nvidia.com"].model` finds the attribute `model` of a device
//!   of driver `gpu.nvidia.com`.
//! - A missing attribute is an error for that device ("no such key"), unless guarded with
//!   `has(device.attributes["d"].x)` or `"x" in device.attributes["d"]`; an unknown
//!   domain behaves as an empty map.
//! - `&&` and `||` absorb errors when the other side decides the result, in either
//!   order.
//! - Attribute values are dynamically typed: `device.attributes["d"].x == "a"` is simply
//!   `false` when `x` is an int, but `device.attributes["d"].x > "a"` is then an error.
//!
//! The environment is what `k8s.io/apiserver/pkg/cel/environment/base.go` (Kubernetes
//! v1.36) and `k8s.io/dynamic-resource-allocation/cel/compile.go` enable (see
//! `functions/mod.rs` for the full list, each with its upstream source): the CEL standard
//! library (timestamps and durations included, in UTC or a fixed offset) with macros
//! (`has`, `all`, `exists`, `exists_one`, `map`, `filter`), `cel.bind`, two-variable
//! comprehensions (`all`, `exists`, `existsOne`,
//! `transformList`, `transformMap`, `transformMapEntry`), `type()` and type values,
//! optional types (`a.?b`, `m[?k]`, `[?x]`, `{?k: v}`, `optional.of`/`none`/
//! `ofNonZeroValue`, `hasValue`, `value`, `orValue`, `or`), cel-go's string extensions
//! (version 2, with `format`), lists extensions (version 3: `slice`, `flatten`, `sort`,
//! `sortBy`, `lists.range`, `reverse`, `distinct`) and sets, and the Kubernetes list,
//! regex (`find`, `findAll`), quantity, semver, URL, IP, CIDR and format (`format.named`,
//! `format.dns1123Label()` and the other named formats, `validate`) libraries.
//!
//! Not implemented (an expression using them is refused at compile time, mostly with
//! "undeclared reference"): the authorizer
//! library (it needs an `authorizer` variable, which DRA selectors do not have). List-valued
//! attributes (alpha `DRAListTypeAttributes`, [`AttributeValue::List`]) are CEL lists:
//! `size()`, macros, `in` and `includes` work on them; the DRA store only loads them
//! while the gate is on. An IANA time zone name given to a timestamp getter
//! (`getHours("Europe/Paris")`) is read from the host's zoneinfo (`$ZONEINFO`, a
//! directory or an uncompressed zip file, then
//! `/usr/share/zoneinfo`, as Go's `time.LoadLocation`); on a host without it the
//! getter is a runtime error (`unknown time zone Europe/Paris`). `"Local"` is the
//! process's own zone, as Go's `time.Local` that kube-scheduler uses (`$TZ`, else
//! `/etc/localtime`, else UTC).
//!
//! [`Selector::compile`] uses the environment kube-scheduler compiles selectors in: the
//! stored-expressions environment (the default of
//! `k8s.io/dynamic-resource-allocation/cel/compile.go`), which ignores feature gates.
//! So `device.allowMultipleAllocations` (`DRAConsumableCapacity`) and DRA's
//! `<value>.includes(x)` (`DRAListTypeAttributes`, since 1.36: whether a list holds
//! `x`, or a single value equals it) are always available, as in a scheduler.
//! [`Selector::compile_opts`] selects the new-expressions environment instead, the one
//! the API server validates new objects in, which refuses them (and macros over
//! attribute values) while their gate is off, and can skip the worst-case estimate
//! ([`CostCheck::RuntimeOnly`]); see [`CompileOptions`].
//!
//! [`Selector::compile`]: crate::selector::Selector::compile
//! [`Selector::matches`]: crate::selector::Selector::matches
//! [`MAX_COST`]: crate::selector::MAX_COST
//! [`AttributeKey`]: crate::selector::AttributeKey
//! [`Device`]: crate::selector::Device
//! [`AttributeValue::List`]: crate::selector::AttributeValue::List
//! [`Selector::compile_opts`]: crate::selector::Selector::compile_opts
//! [`CostCheck::RuntimeOnly`]: crate::selector::CostCheck::RuntimeOnly
//! [`CompileOptions`]: crate::selector::CompileOptions
//!
//! ```
//! use schedkit::model::Quantity;
//! use schedkit::selector::{AttributeValue, Device, Selector};
//!
//! let sel = Selector::compile(
//!     r#"device.attributes["gpu.nvidia.com"].productName == "NVIDIA H100 80GB HBM3" &&
//!        device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("80Gi")) >= 0"#,
//! )?;
//! let h100 = Device::new("node-a/gpu-0", "gpu.nvidia.com")
//!     .with_attribute("productName", AttributeValue::String("NVIDIA H100 80GB HBM3".into()))
//!     .with_capacity("memory", Quantity::parse("80Gi")?);
//! assert!(sel.matches(&h100)?);
//!
//! let err = Selector::compile("device.driver == ").unwrap_err();
//! assert_eq!(err.position(), Some((1, 18)));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![expect(clippy::many_single_char_names, reason = "operator code reads best with l/r/a/b/e names as in the CEL spec")]

mod ast;
mod bigqty;
mod civil;
mod compile;
mod device;
mod environment;
mod error;
mod eval;
mod format;
mod functions;
mod lexer;
mod named_format;
mod net;
mod parser;
mod semver;
mod text;
mod time;
pub(crate) use time::{format_timestamp, parse_duration as parse_go_duration, parse_timestamp};
mod types;
pub(crate) mod tz;
mod url;
mod value;

/// The interned attribute domain or identifier: the crate's one interner.
///
/// Deprecated: moved to [`crate::model::Symbol`] (this is the same type, re-exported
/// for one release; `#[deprecated]` has no effect on a re-export).
#[deprecated(since = "0.2.0", note = "moved to schedkit::model::Symbol")]
pub use crate::model::Symbol;
pub use ast::{BinaryOp, Expr, ExprKind, UnaryOp};
pub use device::{AttributeKey, AttributeValue, Device};
pub use environment::{CompileOptions, CostCheck, Environment, SelectorFeatures};
pub use error::{EvalError, EvalErrorKind, SelectorError};
pub use semver::{PreRelease, Semver, SemverError};

use smallvec::SmallVec;

use compile::Node;
use types::Ty;
use value::Value;

/// Cost budget of one selector: resource.k8s.io/v1 `CELSelectorExpressionMaxCost`.
/// Compilation refuses expressions whose worst-case estimate exceeds it, and evaluation
/// stops with [`EvalErrorKind::CostLimitExceeded`] if the actual cost does.
pub const MAX_COST: u64 = 1_000_000;

/// Longest accepted expression, in bytes: resource.k8s.io/v1
/// `CELSelectorExpressionMaxLength` (10 KiB).
pub const MAX_EXPRESSION_LENGTH: usize = 10 * 1024;

/// Deepest accepted nesting, counted as cel-go's parser counts it.
///
/// Upstream: cel-go's parser (`parser/parser.go`) refuses an expression when, with
/// `maxRecursionDepth` = 250 (its default, `parser/options.go`; the Kubernetes CEL
/// environment, `k8s.io/apiserver/pkg/cel/environment/base.go`, and the DRA compiler,
/// `k8s.io/dynamic-resource-allocation/cel/compile.go`, do not set
/// `cel.ParserRecursionLimit`), either more than 250 contexts of any one rule of its
/// ANTLR grammar are open while parsing (its `recursionListener`, which counts each
/// rule separately and, through ANTLR's events for left-recursive rules, charges a
/// chain of operators or member suffixes once), or more than 250 conditionals,
/// relational or arithmetic operators, selections, receiver calls (macros included)
/// and indexes lie on one path of the parse tree (its visitor). schedkit replays both
/// counts exactly, so it accepts 249 nested parentheses, lists, maps, calls, macros or
/// `!(`, 250-term `+` chains, 249 chained method calls, and 83 levels of
/// `[x] == [(`…`)]`, like cel-go (the counting and a table per shape are at
/// `Rule` in `parser.rs`). Chains of `&&` and `||` count in neither and are balanced,
/// so they stay shallow however long they are.
///
/// In one respect schedkit is stricter, deliberately: it also refuses a tree more than
/// twice the limit deep (500 levels), which cel-go's counts allow only for expressions
/// that pack several uncounted nodes (`&&`, `!`, lists) into each of hundreds of
/// nesting levels. Parsing, checking and evaluating any accepted expression fits a 2 MiB
/// thread stack even in an unoptimised build, and a deeper one is refused with
/// [`SelectorError::TooDeep`] before any deep recursion. [`Limits::max_depth`] lowers the
/// limit, or raises it for callers whose threads have proportionally larger stacks.
pub const MAX_NESTING_DEPTH: usize = 250;

/// Limits applied by [`Selector::compile_with`]; [`Limits::default`] is upstream's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Cost budget, checked against the estimate at compile time and the actual cost at
    /// run time.
    pub max_cost: u64,
    /// Maximum expression length in bytes.
    pub max_length: usize,
    /// Maximum nesting depth, as cel-go's parser counts it (see [`MAX_NESTING_DEPTH`]);
    /// the tree may be at most twice as deep.
    pub max_depth: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_cost: MAX_COST, max_length: MAX_EXPRESSION_LENGTH, max_depth: MAX_NESTING_DEPTH }
    }
}

/// A compiled device selector. Cheap to share across threads (`Send + Sync`); evaluate it
/// against any number of devices.
#[derive(Debug)]
pub struct Selector {
    source: Box<str>,
    root: Node,
    slots: usize,
    /// The root is `&&`, `||` or an ordering test: evaluate it on the bool fast path.
    bool_root: bool,
    estimated_cost: u64,
    cost_limit: u64,
}

/// Parses an expression without checking it, e.g. to pretty-print it.
pub fn parse(src: &str) -> Result<Expr, SelectorError> {
    if src.len() > MAX_EXPRESSION_LENGTH {
        return Err(SelectorError::TooLong { length: src.len(), limit: MAX_EXPRESSION_LENGTH });
    }
    parser::parse(src, MAX_NESTING_DEPTH)
}

impl Selector {
    /// Compiles `src` with upstream's limits.
    pub fn compile(src: &str) -> Result<Selector, SelectorError> {
        Selector::compile_with(src, Limits::default())
    }

    /// Compiles `src` with explicit limits.
    pub fn compile_with(src: &str, limits: Limits) -> Result<Selector, SelectorError> {
        Selector::compile_opts(src, &CompileOptions { limits, ..CompileOptions::default() })
    }

    /// Compiles `src` in a chosen [`Environment`], with explicit limits and cost check
    /// (upstream `CompileCELExpression` with `Options`).
    pub fn compile_opts(src: &str, options: &CompileOptions) -> Result<Selector, SelectorError> {
        let limits = options.limits;
        if src.len() > limits.max_length {
            return Err(SelectorError::TooLong { length: src.len(), limit: limits.max_length });
        }
        let expr = parser::parse(src, limits.max_depth)?;
        let c = compile::compile(src, &expr, options.refusals())?;
        if !matches!(c.ty, Ty::Bool | Ty::Dyn) {
            return Err(SelectorError::type_error(
                src,
                expr.pos,
                format!("must evaluate to bool or the unknown type, not {}", c.ty),
            ));
        }
        let estimated_cost = match options.cost_check {
            CostCheck::WorstCase => c.max_cost,
            CostCheck::RuntimeOnly => u64::MAX,
        };
        if estimated_cost > limits.max_cost && options.cost_check == CostCheck::WorstCase {
            return Err(SelectorError::CostLimitExceeded { estimated: c.max_cost, limit: limits.max_cost });
        }
        let bool_root = matches!(c.root, Node::And(..) | Node::Or(..) | Node::OrdTest { .. });
        Ok(Selector {
            source: src.into(),
            bool_root,
            root: c.root,
            slots: c.slots,
            estimated_cost,
            cost_limit: limits.max_cost,
        })
    }

    /// The expression text.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The worst-case cost estimate (cel-go units), as upstream's `MaxCost`; `u64::MAX`
    /// when compiled with [`CostCheck::RuntimeOnly`].
    pub fn estimated_cost(&self) -> u64 {
        self.estimated_cost
    }

    /// Whether `device` satisfies the selector. An error means the expression could not
    /// be decided for this device (a missing attribute, a type mismatch of a dynamic
    /// attribute, ...); Kubernetes then treats the device as unusable for the request.
    pub fn matches(&self, device: &Device) -> Result<bool, EvalError> {
        self.matches_with_cost(device).0
    }

    /// Like [`Selector::matches`], also returning the actual cost (cel-go units).
    pub fn matches_with_cost(&self, device: &Device) -> (Result<bool, EvalError>, u64) {
        let mut cx = eval::Ctx { fault: None, device, locals: SmallVec::new(), cost: 0, limit: self.cost_limit };
        if self.slots > cx.locals.inline_size() {
            cx.locals.reserve(self.slots);
        }
        let r = if self.bool_root {
            cx.eval_bool(&self.root)
        } else {
            match cx.eval(&self.root) {
                Ok(Value::Bool(b)) => Ok(b),
                Ok(other) => Err(Box::new(EvalErrorKind::NotBool(other.type_name()))),
                Err(e) => Err(e),
            }
        };
        let r = match r {
            Ok(_) if cx.cost > self.cost_limit => {
                Err(Box::new(EvalErrorKind::CostLimitExceeded { limit: self.cost_limit }))
            }
            r => r,
        };
        (r.map_err(|kind| EvalError { kind: *kind, device: device.name().to_owned() }), cx.cost)
    }
}

impl std::fmt::Display for Selector {
    /// The expression text, as compiled.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.source)
    }
}

#[cfg(test)]
mod tests;
