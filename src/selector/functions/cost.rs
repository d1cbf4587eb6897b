//! The cost model of function calls: compile-time estimates from argument sizes and
//! run-time costs from argument values, with upstream's formulas.

use super::Func;
use super::lists::MAX_ATTRIBUTE_VALUES;
use crate::selector::named_format;
use crate::selector::value::Value;

pub(crate) fn ceil_mul(size: u64, factor: f64) -> u64 {
    let v = (size as f64 * factor).ceil();
    if v >= u64::MAX as f64 { u64::MAX } else { v as u64 }
}

/// What the cost of a list function depends on besides sizes.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Shape {
    /// The receiver is a list (`indexOf` on a list rather than a string).
    pub(crate) list_receiver: bool,
    /// The receiver's elements are strings or bytes of at most this size.
    pub(crate) str_elem: Option<u64>,
}

/// Cost of one call given the sizes of its arguments (receiver first), excluding the
/// cost of evaluating the arguments. The formulas are upstream's: cel-go
/// `checker/cost.go` (`startsWith`, `endsWith`, `contains`, `matches`, `strings.quote`,
/// conversions between strings and bytes; 1 for everything else) and Kubernetes
/// `k8s.io/apiserver/pkg/cel/library/cost.go` (`lowerAscii`, `upperAscii`, `substring`,
/// `trim`, `replace`, `split`, `join`, `find`, `findAll`, the list functions, the
/// quantity functions). Strings cost 0.1 per character, regexes 0.25 per pattern
/// character times the traversal. `sets.*` (not priced by either) is charged the
/// product of the list sizes.
pub(crate) fn call_cost(f: Func, sizes: &[u64], shape: Shape) -> u64 {
    let s = |i: usize| sizes.get(i).copied().unwrap_or(0);
    let t = |n: u64| ceil_mul(n, 0.1);
    let per_element = 1u64.saturating_add(shape.str_elem.map_or(0, t));
    match f {
        Func::Matches | Func::Find | Func::FindAll => t(s(0).saturating_add(1)).saturating_mul(ceil_mul(s(1), 0.25)),
        Func::Split | Func::Replace => ceil_mul(s(0), 0.2),
        Func::Join => {
            let n = s(0);
            let chars =
                n.saturating_mul(shape.str_elem.unwrap_or(0)).saturating_add(s(1).saturating_mul(n.saturating_sub(1)));
            t(chars)
        }
        Func::Contains => t(s(0)).saturating_mul(t(s(1))),
        Func::StartsWith | Func::EndsWith => t(s(1)),
        Func::IndexOf | Func::LastIndexOf | Func::IsSorted | Func::Sum | Func::Min | Func::Max
            if shape.list_receiver =>
        {
            s(0).saturating_mul(per_element)
        }
        // k8s `library/cost.go`: a receiver without an element type (`dyn`) is priced as
        // a string, 0.1 per unit of its size.
        Func::LowerAscii
        | Func::UpperAscii
        | Func::Trim
        | Func::Substring
        | Func::Quote
        | Func::Format
        | Func::Url
        | Func::ToBytes
        | Func::ToString
        | Func::IndexOf
        | Func::LastIndexOf
        | Func::IsSorted
        | Func::Sum
        | Func::Min
        | Func::Max => t(s(0)),
        Func::SetsContains | Func::SetsEquivalent | Func::SetsIntersects => s(0).saturating_mul(s(1)).max(1),
        // DRA's `draCostEstimator`: one comparison per value an attribute may hold.
        Func::Includes => MAX_ATTRIBUTE_VALUES as u64,
        // k8s `library/cost.go`: comparing two addresses of at most 16 bytes (0.1 per
        // byte, both sides), containsCIDR also masks (another 16 bytes, plus 1), and a
        // string argument is parsed first (0.1 per character; 0 for a typed argument,
        // whose size is 0 here).
        Func::ContainsIp => 4u64.saturating_add(t(s(1))),
        Func::ContainsCidr => 7u64.saturating_add(t(s(1))),
        // k8s `library/cost.go` `EstimateCallCost`: the string's traversal times a regex
        // of `MaxNameFormatRegexSize` (128) at 0.25 per character.
        Func::Validate => ceil_mul(t(s(1)), named_format::MAX_NAME_FORMAT_REGEX_SIZE as f64 * 0.25),
        _ => 1,
    }
}

/// Maximum size (characters or elements) of the result, for nested estimates, where
/// upstream's estimator states one; `None` where it does not.
///
/// cel-go's `checker/cost.go` (`costCall`, `computeSize`) keeps a call's result size
/// only when the function's estimate provides one (its own `functionCost` cases and
/// the estimators of `k8s.io/apiserver/pkg/cel/library/cost.go`); otherwise the size
/// is that of the result type, 1 for a scalar (`computeTypeSize`), and unknown
/// (`UnknownSizeEstimate`, `0..=math.MaxUint64`) for anything else. The compiler turns
/// `None` into that type-based size. Sizes that depend on more than the argument
/// sizes (`join`, `replace`, `split` with a limit, `string`/`bytes` conversions, `dyn`)
/// are worked out in `compile/cost.rs`.
pub(crate) fn result_size(f: Func, sizes: &[u64]) -> Option<u64> {
    let s = |i: usize| sizes.get(i).copied().unwrap_or(0);
    match f {
        // k8s `library/cost.go`: `lowerAscii`, `upperAscii`, `substring`, `trim` keep
        // the receiver's size; `find` and `findAll` return at most one match (or
        // element) per character; `split` at most one element per character.
        Func::LowerAscii
        | Func::UpperAscii
        | Func::Trim
        | Func::Substring
        | Func::Find
        | Func::FindAll
        | Func::Split => Some(s(0)),
        // cel-go `ExtQuoteString`: every character escaped, plus the two quotes.
        Func::Quote => Some(s(0).saturating_mul(2).saturating_add(2)),
        _ => None,
    }
}

/// Kubernetes' run-time cost of a call that parses `s` (`quantity`, `isQuantity`,
/// `semver`, `isSemver`: `CallCost` in `k8s.io/apiserver/pkg/cel/library/cost.go`):
/// 0.1 per character, rounded up.
pub(crate) fn string_traversal_cost(s: &str) -> u64 {
    ceil_mul(s.chars().count() as u64, 0.1)
}

/// Runtime cost of `replace`, charged before the result is built.
///
/// Kubernetes (`CallCost` in `k8s.io/apiserver/pkg/cel/library/cost.go`) charges
/// `ceil(0.2 * size(receiver))`: one traversal of the receiver plus the construction
/// of a result it assumes to be the receiver's size. schedkit charges the same
/// traversal and the construction of the result at its actual size, in code points,
/// but never less than upstream: `ceil(0.1 * (size(receiver) + max(size(receiver),
/// size(result))))`. That equals upstream's charge whenever the result is no longer
/// than the receiver; where it is longer (`'<4 KiB>'.replace('', '<4 KiB>')` builds
/// 16 MiB for an upstream charge of 820) schedkit goes beyond upstream and the
/// selector's runtime budget stops the call with the usual "actual cost limit
/// exceeded" before anything is allocated. The result size is counted without
/// building it: the receiver, less each replaced match, plus one replacement per
/// match (an empty pattern matches before every code point and at the end, as Go's
/// `strings.Replace` and Rust's `str::replace` agree).
pub(crate) fn replace_runtime_cost(args: &[Value<'_>]) -> u64 {
    let (Some(Value::Str(s)), Some(Value::Str(from)), Some(Value::Str(to))) = (args.first(), args.get(1), args.get(2))
    else {
        return 1;
    };
    let limit = match args.get(3) {
        Some(Value::Int(n)) => u64::try_from(*n).ok(),
        _ => None,
    };
    let runes = |x: &str| x.chars().count() as u64;
    let (receiver, from_len, to_len) = (runes(s), runes(from), runes(to));
    let matches = if from.is_empty() {
        receiver + 1
    } else {
        let all = s.matches(&**from);
        match limit {
            Some(n) => all.take(usize::try_from(n).unwrap_or(usize::MAX)).count() as u64,
            None => all.count() as u64,
        }
    };
    let replaced = limit.map_or(matches, |n| n.min(matches));
    // The replaced matches are disjoint parts of the receiver: no underflow.
    let result = (receiver - replaced * from_len).saturating_add(replaced.saturating_mul(to_len));
    ceil_mul(receiver.saturating_add(result.max(receiver)), 0.1)
}

/// Runtime cost of the IP and CIDR functions (k8s `library/cost.go` `CallCost`):
/// parsing traverses the string (0.1 per character, 0.2 for `ip.isCanonical`, which
/// also prints it), `containsIP`/`containsCIDR` compare values whose size counts as 1,
/// accessors cost 1.
pub(crate) fn net_runtime_cost(f: Func, args: &[Value<'_>]) -> u64 {
    let len = |i: usize| match args.get(i) {
        Some(Value::Str(s)) => s.chars().count() as u64,
        _ => 0,
    };
    let t = |n: u64| ceil_mul(n, 0.1);
    match f {
        Func::Ip if matches!(args.first(), Some(Value::Str(_))) => t(len(0)),
        Func::IsIp | Func::Cidr | Func::IsCidr => t(len(0)),
        Func::IpIsCanonical => ceil_mul(len(0), 0.2),
        Func::ContainsIp => 1 + t(len(1)),
        Func::ContainsCidr => 3 + t(len(1)),
        _ => 1,
    }
}

/// Runtime cost of the `ext.Lists` functions, from their inputs (cel-go `ext/lists.go`
/// cost trackers: the result or input size times a factor, plus 1 for the call and 10
/// for the new list). Charged before the call, so an oversized `lists.range` or
/// `sort` stops at the budget instead of allocating.
pub(crate) fn list_ext_cost(f: Func, args: &[Value<'_>]) -> u64 {
    let len = |i: usize| match args.get(i) {
        Some(Value::List(l)) => l.len() as u64,
        _ => 0,
    };
    let int = |i: usize| match args.get(i) {
        Some(Value::Int(n)) => Some(*n),
        _ => None,
    };
    let self_compare = |i: usize| {
        let n = len(i);
        let strings =
            matches!(args.get(i), Some(Value::List(l)) if matches!(l.first(), Some(Value::Str(_) | Value::Bytes(_))));
        let factor = if strings { 2.1 } else { 2.0 };
        let v = n.saturating_mul(n) as f64 * factor;
        if v >= u64::MAX as f64 { u64::MAX } else { v as u64 }
    };
    let body = match f {
        Func::ListsRange => int(0).map_or(0, |n| u64::try_from(n).unwrap_or(0)),
        Func::Reverse => len(0),
        Func::Slice => match (int(1), int(2)) {
            (Some(a), Some(b)) if 0 <= a && a <= b && (b as u64) <= len(0) => (b - a) as u64,
            _ => 0,
        },
        Func::Flatten => {
            let depth = if args.len() > 1 { int(1).map_or(0, |d| u64::try_from(d).unwrap_or(0)) } else { 1 };
            depth.saturating_mul(len(0))
        }
        Func::Distinct | Func::Sort => self_compare(0),
        Func::SortByKeys => self_compare(1),
        _ => return 1,
    };
    body.saturating_add(11)
}
