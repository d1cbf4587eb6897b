//! List functions: the Kubernetes lists library, cel-go's `ext.Lists` (version 3) and
//! `ext.Sets`, and DRA's `includes`.

use std::cmp::Ordering;
use std::rc::Rc;

use super::{Func, R, invalid, overload};
use crate::selector::error::EvalErrorKind;
use crate::selector::value::{Value, compare, equals};

/// Applies a list or set function (see [`super::call`]).
pub(super) fn call<'a>(f: Func, name: &'static str, args: &[Value<'a>]) -> R<'a> {
    use Value as V;
    let a0 = args.first();
    let a1 = args.get(1);
    let a2 = args.get(2);
    let no = || overload(name, args);
    Ok(match (f, a0, a1, a2) {
        (Func::IndexOf | Func::LastIndexOf, Some(V::List(l)), Some(x), None) => {
            let pos = if f == Func::IndexOf {
                l.iter().position(|e| equals(e, x))
            } else {
                l.iter().rposition(|e| equals(e, x))
            };
            V::Int(pos.map_or(-1, |p| p as i64))
        }
        (Func::IsSorted, Some(V::List(l)), None, None) => {
            let mut sorted = true;
            for w in l.windows(2) {
                match compare(&w[0], &w[1]) {
                    Some(Some(Ordering::Greater)) => sorted = false,
                    Some(_) => {}
                    None => return Err(no()),
                }
            }
            V::Bool(sorted)
        }
        (Func::Sum, Some(V::List(l)), None, None) => sum(l).ok_or_else(no)??,
        (Func::Min | Func::Max, Some(V::List(l)), None, None) => {
            let want = if f == Func::Min { Ordering::Less } else { Ordering::Greater };
            let Some(first) = l.first() else {
                return Err(invalid(name, "list is empty"));
            };
            let mut best = first.clone();
            for e in &l[1..] {
                match compare(e, &best) {
                    Some(Some(o)) if o == want => best = e.clone(),
                    Some(_) => {}
                    None => return Err(no()),
                }
            }
            best
        }
        (Func::Includes, Some(target), Some(value), None) => V::Bool(includes(target, value)?),
        (Func::SetsContains, Some(V::List(a)), Some(V::List(b)), None) => {
            V::Bool(b.iter().all(|x| a.iter().any(|y| equals(x, y))))
        }
        (Func::SetsEquivalent, Some(V::List(a)), Some(V::List(b)), None) => V::Bool(
            b.iter().all(|x| a.iter().any(|y| equals(x, y))) && a.iter().all(|x| b.iter().any(|y| equals(x, y))),
        ),
        (Func::SetsIntersects, Some(V::List(a)), Some(V::List(b)), None) => {
            V::Bool(b.iter().any(|x| a.iter().any(|y| equals(x, y))))
        }
        (Func::Slice, Some(V::List(l)), Some(V::Int(start)), Some(V::Int(end))) => {
            let (start, end) = (*start, *end);
            if start < 0 || end < 0 {
                return Err(invalid("slice", format!("cannot slice({start}, {end}), negative indexes not supported")));
            }
            if start > end {
                return Err(invalid(
                    "slice",
                    format!("cannot slice({start}, {end}), start index must be less than or equal to end index"),
                ));
            }
            if end as u64 > l.len() as u64 {
                return Err(invalid("slice", format!("cannot slice({start}, {end}), list is length {}", l.len())));
            }
            V::List(Rc::new(l[start as usize..end as usize].to_vec()))
        }
        (Func::Flatten, Some(V::List(l)), depth, None) => {
            let depth = match depth {
                None => 1,
                Some(V::Int(d)) if *d >= 0 => *d,
                Some(V::Int(_)) => return Err(invalid("flatten", "level must be non-negative")),
                Some(_) => return Err(no()),
            };
            let mut out = Vec::with_capacity(l.len());
            flatten_into(l, depth, &mut out);
            V::List(Rc::new(out))
        }
        (Func::Sort, Some(V::List(l)), None, None) => {
            let order = sort_order(l)?;
            V::List(Rc::new(order.into_iter().map(|i| l[i].clone()).collect()))
        }
        (Func::SortByKeys, Some(V::List(l)), Some(V::List(keys)), None) => {
            if l.len() != keys.len() {
                return Err(invalid(
                    "sortBy",
                    format!(
                        "expected a list of the same size as the associated keys list, but got {} and {} elements respectively",
                        l.len(),
                        keys.len()
                    ),
                ));
            }
            let order = sort_order(keys)?;
            V::List(Rc::new(order.into_iter().map(|i| l[i].clone()).collect()))
        }
        (Func::ListsRange, Some(V::Int(n)), None, None) => {
            if *n < 0 {
                return Err(invalid("lists.range", format!("size must be non-negative, got {n}")));
            }
            if *n > MAX_RANGE {
                return Err(invalid("lists.range", format!("size {n} exceeds maximum allowed ({MAX_RANGE})")));
            }
            V::List(Rc::new((0..*n).map(V::Int).collect()))
        }
        (Func::Reverse, Some(V::List(l)), None, None) => V::List(Rc::new(l.iter().rev().cloned().collect())),
        (Func::Distinct, Some(V::List(l)), None, None) => {
            let mut out: Vec<Value<'a>> = Vec::with_capacity(l.len());
            for x in l.iter() {
                if !out.iter().any(|y| equals(x, y)) {
                    out.push(x.clone());
                }
            }
            V::List(Rc::new(out))
        }
        _ => return Err(no()),
    })
}

/// Most values of a list-type device attribute (`ResourceSliceMaxAttributeValuesPerDevice`,
/// `k8s.io/api/resource/v1`).
pub(super) const MAX_ATTRIBUTE_VALUES: usize = 48;

/// DRA's `includes`: whether a list holds the value (looking at no more than
/// [`MAX_ATTRIBUTE_VALUES`] elements before failing), or whether a single value equals
/// it.
fn includes(target: &Value<'_>, value: &Value<'_>) -> Result<bool, EvalErrorKind> {
    let Value::List(items) = target else { return Ok(equals(target, value)) };
    for (i, item) in items.iter().enumerate() {
        if i >= MAX_ATTRIBUTE_VALUES {
            return Err(invalid(
                "includes",
                format!("'includes' function cannot be applied to lists longer than {MAX_ATTRIBUTE_VALUES} values"),
            ));
        }
        if equals(item, value) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Largest `lists.range` (cel-go `maxRangeSize`).
const MAX_RANGE: i64 = 10_000_000;

/// Appends the elements of `l` to `out`, descending `depth` levels into nested lists.
fn flatten_into<'a>(l: &[Value<'a>], depth: i64, out: &mut Vec<Value<'a>>) {
    for x in l {
        match x {
            Value::List(inner) if depth > 0 => flatten_into(inner, depth - 1, out),
            other => out.push(other.clone()),
        }
    }
}

/// The permutation that sorts `keys` (stable), for `sort` and `sortBy`. As cel-go's
/// `sortListByAssociatedKeys`: the keys must be of one comparable type (int, uint,
/// double, bool, string or bytes here).
fn sort_order(keys: &[Value<'_>]) -> Result<Vec<usize>, EvalErrorKind> {
    let Some(first) = keys.first() else {
        return Ok(Vec::new());
    };
    if !matches!(
        first,
        Value::Int(_)
            | Value::Uint(_)
            | Value::Double(_)
            | Value::Bool(_)
            | Value::Str(_)
            | Value::Bytes(_)
            | Value::Timestamp(_)
            | Value::Duration(_)
    ) {
        return Err(invalid("sort", "list elements must be comparable"));
    }
    if keys.iter().any(|k| std::mem::discriminant(k) != std::mem::discriminant(first)) {
        return Err(invalid("sort", "list elements must have the same type"));
    }
    let mut order: Vec<usize> = (0..keys.len()).collect();
    order.sort_by(|&i, &j| compare(&keys[i], &keys[j]).flatten().unwrap_or(Ordering::Equal));
    Ok(order)
}

fn sum<'a>(l: &[Value<'a>]) -> Option<R<'a>> {
    match l.first() {
        None => Some(Ok(Value::Int(0))),
        Some(Value::Int(_)) => {
            let mut acc: i64 = 0;
            for e in l {
                let Value::Int(x) = e else { return None };
                match acc.checked_add(*x) {
                    Some(v) => acc = v,
                    None => return Some(Err(EvalErrorKind::Overflow("sum"))),
                }
            }
            Some(Ok(Value::Int(acc)))
        }
        Some(Value::Uint(_)) => {
            let mut acc: u64 = 0;
            for e in l {
                let Value::Uint(x) = e else { return None };
                match acc.checked_add(*x) {
                    Some(v) => acc = v,
                    None => return Some(Err(EvalErrorKind::Overflow("sum"))),
                }
            }
            Some(Ok(Value::Uint(acc)))
        }
        Some(Value::Double(_)) => {
            let mut acc = 0.0;
            for e in l {
                let Value::Double(x) = e else { return None };
                acc += x;
            }
            Some(Ok(Value::Double(acc)))
        }
        _ => None,
    }
}
