//! The compile-time cost model: worst-case sizes and costs of operators and calls,
//! as cel-go's estimator and the Kubernetes cost estimators compute them.

use super::{Const, Node, Out, add, ceil_tenth};
use crate::selector::ast::BinaryOp;
use crate::selector::functions::{self, Func};
use crate::selector::types::Ty;

/// A non-negative integer constant, as cel-go's `nodeAsUintValue` reads a literal
/// argument for a cost estimate.
pub(super) fn const_uint(o: &Out) -> Option<u64> {
    match &o.node {
        Node::Const(Const::Int(k)) => Some(u64::try_from(*k).unwrap_or(0)),
        Node::Const(Const::Uint(u)) => Some(*u),
        _ => None,
    }
}

/// The size cel-go's estimator uses for an operand: `computeTypeSize` gives every value of
/// a scalar type (and a `null` literal, `computeExprSize`) size 1, whatever else is known.
pub(super) fn operand_size(o: &Out) -> u64 {
    if matches!(o.ty, Ty::Null) || type_size(&o.ty) == 1 { 1 } else { o.size }
}

/// Estimated cost of `==` and `!=` without the operands.
///
/// Kubernetes first (`k8s.io/apiserver/pkg/cel/library/cost.go`, `EstimateCallCost`,
/// case `_==_`, since 1.31): only for `==`, and only when both operands have the same
/// type, `net.IP`, `net.CIDR`, `kubernetes.Quantity` and `kubernetes.Semver` cost 1,
/// `kubernetes.NamedFormat` `MaxFormatSize` (64) characters at 0.1, and `kubernetes.URL`
/// 0.1 per character of the right operand's computed size (upstream takes that size
/// for both sides), 1 when it has none. Everything else, `!=` always, falls through to
/// cel-go (`checker/cost.go`, `functionCost`, overloads `equals`/`not_equals`): 0.1 per
/// unit of the smaller operand size, whatever the types, so two operands of unknown size
/// (a `type`, an `optional` of a non-scalar, an opaque value built by a call) are priced
/// beyond any budget.
pub(super) fn equality_cost(op: BinaryOp, l: &Out, r: &Out) -> u64 {
    if op == BinaryOp::Eq && l.ty == r.ty {
        match l.ty {
            Ty::Ip | Ty::Cidr | Ty::Quantity | Ty::Semver => return 1,
            Ty::Format => return ceil_tenth(crate::selector::named_format::MAX_FORMAT_SIZE),
            Ty::Url => return if r.size == UNKNOWN_SIZE { 1 } else { ceil_tenth(r.size) },
            _ => {}
        }
    }
    ceil_tenth(operand_size(l).min(operand_size(r)))
}

/// The operand kinds of the overloads cel-go's checker keeps for a binary operator
/// (`GetOverloadIDs`): with a `dyn` operand every overload the other operand fits stays a
/// candidate, and `costCall` (`checker/cost.go`) charges the dearest of them.
pub(super) struct Candidates {
    /// A string or bytes overload, priced by size.
    text: bool,
    list: bool,
    /// Any overload on other types (numbers, bools, timestamps, ...), all O(1).
    other: bool,
}

pub(super) fn candidates(l: &Ty, r: &Ty) -> Candidates {
    let both = |f: fn(&Ty) -> bool| (f(l) || *l == Ty::Dyn) && (f(r) || *r == Ty::Dyn);
    let sized = |t: &Ty| matches!(t, Ty::String | Ty::Bytes | Ty::List(_));
    Candidates {
        text: both(|t| *t == Ty::String) || both(|t| *t == Ty::Bytes),
        list: both(|t| matches!(t, Ty::List(_))),
        other: !sized(l) && !sized(r),
    }
}

/// Estimated cost of `<`, `<=`, `>`, `>=` without the operands: cel-go prices the string
/// and bytes overloads at 0.1 per character of the shorter operand, every other overload
/// at 1 (`checker/cost.go`, `functionCost`, `LessString` ... `GreaterEqualsBytes`), and
/// takes the dearest candidate.
pub(super) fn ordering_cost(l: &Out, r: &Out) -> u64 {
    let c = candidates(&l.ty, &r.ty);
    let traversal = if c.text { ceil_tenth(operand_size(l).min(operand_size(r))) } else { 0 };
    traversal.max(u64::from(c.other || c.list))
}

/// Estimated cost (without the operands) and result size of `+`, over the candidate
/// overloads (`checker/cost.go`, `functionCost`, `AddString`, `AddBytes`, `AddList`):
/// concatenating strings or bytes traverses both (0.1 per character), concatenating
/// lists costs 1, and all three state the sum of the operand sizes as the result size;
/// the numeric and time overloads cost 1 and leave the size to the result type. With
/// `dyn` operands (`dyn(x) + dyn(y)`) the dearest candidate counts and the stated size
/// is kept.
pub(super) fn addition_estimate(l: &Out, r: &Out, ty: &Ty) -> (u64, u64) {
    let c = candidates(&l.ty, &r.ty);
    let sum = add(operand_size(l), operand_size(r));
    let cost = if c.text { ceil_tenth(sum) } else { 0 };
    let cost = cost.max(u64::from(c.list || c.other));
    let size = if c.text || c.list { sum } else { arithmetic_size(&l.ty, &r.ty, ty) };
    (cost, size)
}

/// The size of a numeric or time result, that of its type (`computeTypeSize`): 1, except
/// with two `dyn` operands, where the candidates' result types differ and the checker
/// types the call `dyn`, of unknown size. One concrete operand selects overloads of one
/// scalar result type.
pub(super) fn arithmetic_size(l: &Ty, r: &Ty, ty: &Ty) -> u64 {
    if matches!(ty, Ty::Dyn) && !matches!((l, r), (Ty::Dyn, Ty::Dyn)) { 1 } else { type_size(ty) }
}

/// The size cel-go assigns a value it knows nothing about (`UnknownSizeEstimate` in
/// `checker/cost.go`): anything up to `math.MaxUint64` characters or elements.
pub(crate) const UNKNOWN_SIZE: u64 = u64::MAX;

/// The size of a value known only by its type: cel-go's `computeTypeSize`
/// (`checker/cost.go`) gives scalars (bool, int, uint, double, timestamp, duration, and
/// optionals of those) size 1, and leaves every other type unknown.
pub(super) fn type_size(ty: &Ty) -> u64 {
    match ty {
        Ty::Bool | Ty::Int | Ty::Uint | Ty::Double | Ty::Timestamp | Ty::Duration => 1,
        Ty::Optional(t) => type_size(t),
        _ => UNKNOWN_SIZE,
    }
}

/// A string constant's length in characters, the lower bound of its size.
pub(super) fn const_len(o: &Out) -> u64 {
    match &o.node {
        Node::Const(Const::Str(s)) => s.chars().count() as u64,
        Node::Const(Const::Bytes(b)) => b.len() as u64,
        _ => 0,
    }
}

/// The argument sizes a call's cost depends on. Upstream prices the parsing of a string
/// argument of `containsIP`/`containsCIDR` (k8s `library/cost.go`) only in the string
/// overloads; a typed argument costs nothing, whatever its (unknown) size.
pub(super) fn priced_sizes(f: Func, outs: &[Out]) -> Vec<u64> {
    let arg_is = |i: usize, t: Ty| outs.get(i).is_some_and(|o| o.ty == t || o.ty == Ty::Dyn);
    outs.iter()
        .enumerate()
        .map(|(i, o)| match f {
            Func::ContainsIp | Func::ContainsCidr if i == 1 && !arg_is(1, Ty::String) => 0,
            _ => o.size,
        })
        .collect()
}

/// The estimated cost of a call without its arguments ([`functions::call_cost`]), except
/// that cel-go prices only the conversions between strings and bytes (`StringToBytes`,
/// `BytesToString`) as traversals; the other `string()` and `bytes()` overloads cost 1,
/// and with a `dyn` argument the dearer candidate counts.
///
/// The global parsers of the Kubernetes libraries (`ip`, `cidr`, `isIP`, `isCIDR`,
/// `ip.isCanonical`, `quantity`, `isQuantity`, `semver`, `isSemver`) traverse their
/// string argument, 0.1 per character (0.2 for `ip.isCanonical`, which also prints it):
/// k8s `library/cost.go` prices them without a receiver since Kubernetes 1.32, as the
/// `TestIPCost`, `TestCIDRCost`, `TestIPIsCanonicalCost` and `TestSemverCost` cases of
/// `library/cost_test.go` expect. `cidr.ip()` (overload `cidr_ip`) stays at 1.
pub(super) fn call_estimate(f: Func, outs: &[Out], shape: functions::Shape) -> u64 {
    let traversal = || functions::call_cost(f, &priced_sizes(f, outs), shape);
    let arg = outs.first().map_or(0, |o| o.size);
    match (f, outs.first().map(|o| &o.ty)) {
        (Func::Ip, Some(Ty::Cidr)) => 1,
        (
            Func::Ip
            | Func::Cidr
            | Func::IsIp
            | Func::IsCidr
            | Func::Quantity
            | Func::IsQuantity
            | Func::Semver
            | Func::IsSemver,
            _,
        ) => ceil_tenth(arg),
        (Func::IpIsCanonical, _) => functions::ceil_mul(arg, 0.2),
        (Func::ToString, Some(Ty::Bytes)) | (Func::ToBytes, Some(Ty::String)) => traversal(),
        (Func::ToString | Func::ToBytes, Some(Ty::Dyn)) => traversal().max(1),
        (Func::ToString | Func::ToBytes, _) => 1,
        _ => traversal(),
    }
}

/// The worst-case size of a call's result, as upstream's estimators state it, else the
/// size of its type ([`type_size`]).
pub(super) fn call_result_size(f: Func, outs: &[Out], result: &Ty) -> u64 {
    let size = |i: usize| outs.get(i).map_or(0, |o| o.size);
    let ty = |i: usize| outs.get(i).map(|o| &o.ty);
    match f {
        // cel-go `maybeUnwrapDynCall`: `dyn(x)` has the size of `x`; k8s
        // `library/cost.go` `url`: the URL has the size of its string.
        Func::Dyn | Func::Url => size(0),
        // k8s `library/cost.go` `join`: every element at its largest, with a separator
        // between each two.
        // The elements' size is unknown for any list receiver (see `finish_call`); a `dyn`
        // receiver has no element type, and upstream then counts the separators only.
        Func::Join => {
            let n = size(0);
            let elem = match ty(0) {
                Some(Ty::List(_)) => UNKNOWN_SIZE,
                _ => 0,
            };
            n.saturating_mul(elem).saturating_add(size(1).saturating_mul(n.saturating_sub(1)))
        }
        // k8s `library/cost.go` `replace`: the shortest possible match (a constant's
        // length, else 0) replaced by the longest replacement as often as it fits.
        Func::Replace => {
            let (sz, from_min, to_max) = (size(0), const_len(&outs[1]), size(2));
            let (count, retained) = if from_min == 0 {
                (if sz < UNKNOWN_SIZE { sz + 1 } else { sz }, sz)
            } else if to_max <= from_min {
                (0, sz)
            } else {
                (sz.div_ceil(from_min), 0)
            };
            count.saturating_mul(to_max).saturating_add(retained)
        }
        // k8s `library/cost.go` `split`: a constant limit bounds the element count.
        Func::Split => match outs.get(2).map(|o| &o.node) {
            Some(Node::Const(Const::Int(k))) if *k >= 0 => k.unsigned_abs(),
            _ => size(0),
        },
        // cel-go `BytesToString` keeps the size, `StringToBytes` may take 4 bytes per
        // character; the other conversions to string or bytes are not sized.
        // With a `dyn` argument every overload is a candidate, and cel-go's `costCall`
        // keeps the sizes the sized candidates state.
        Func::ToString if matches!(ty(0), Some(Ty::Bytes | Ty::Dyn)) => size(0),
        Func::ToBytes if matches!(ty(0), Some(Ty::String | Ty::Dyn)) => size(0).saturating_mul(4),
        _ => {
            let sizes: Vec<u64> = outs.iter().map(|o| o.size).collect();
            functions::result_size(f, &sizes).unwrap_or_else(|| type_size(result))
        }
    }
}

/// `1 + 10`: cel-go's call cost plus `ListCreateBaseCost`, added to every `ext.Lists`
/// function that builds a list.
pub(super) const LIST_CALL: u64 = 11;

/// Estimated cost and result size of the `ext.Lists` functions (cel-go `ext/lists.go`,
/// version 3 estimators): the result size times a factor plus [`LIST_CALL`]. As
/// upstream, `sort` and `distinct` report the square of the input size as their result
/// size, and `slice` with a constant start after its constant end wraps around (and so
/// exceeds any budget).
pub(super) fn list_ext_estimate(f: Func, outs: &[Out]) -> Option<(u64, u64)> {
    let sz = outs.first().map_or(0, |o| o.size);
    let (factor, size) = match f {
        Func::Slice => {
            let start = outs.get(1).and_then(const_uint).unwrap_or(0);
            let end = outs.get(2).and_then(const_uint).unwrap_or(sz);
            (1.0, end.wrapping_sub(start))
        }
        Func::ListsRange => (1.0, outs.first().and_then(const_uint).unwrap_or(u64::MAX)),
        Func::Reverse => (1.0, sz),
        Func::Flatten => {
            let depth = match outs.get(1) {
                None => 1,
                Some(o) => const_uint(o).unwrap_or(u64::MAX),
            };
            return Some((add(functions::ceil_mul(sz, depth as f64), LIST_CALL), sz));
        }
        Func::Distinct => (2.0, sz.saturating_mul(sz)),
        Func::Sort => {
            let strings = matches!(outs.first().map(|o| &o.ty), Some(Ty::List(el)) if matches!(**el, Ty::String | Ty::Bytes | Ty::Dyn));
            (if strings { 2.1 } else { 2.0 }, sz.saturating_mul(sz))
        }
        _ => return None,
    };
    Some((add(functions::ceil_mul(size, factor), LIST_CALL), size))
}
