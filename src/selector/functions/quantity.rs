//! The Kubernetes quantity and semver libraries (`library/quantity.go`,
//! `library/semverlib.go`).

use std::cmp::Ordering;
use std::rc::Rc;

use super::{Func, R, invalid, overload};
use crate::model::Quantity;
use crate::selector::bigqty::{self, AnyQuantity, Held};
use crate::selector::semver::Semver;
use crate::selector::value::{Value, Ver, any_quantity};

/// Applies a quantity or semver function (see [`super::call`]).
pub(super) fn call<'a>(f: Func, name: &'static str, args: &[Value<'a>]) -> R<'a> {
    use Value as V;
    let a0 = args.first();
    let a1 = args.get(1);
    let a2 = args.get(2);
    let no = || overload(name, args);
    Ok(match (f, a0, a1, a2) {
        (Func::Quantity, Some(V::Str(s)), None, None) => {
            match bigqty::parse_quantity(s).map_err(|e| invalid("quantity", e))? {
                Ok((q, held)) => V::Quantity(q, held),
                Err(big) => V::BigQuantity(Rc::new(big)),
            }
        }
        (Func::IsQuantity, Some(V::Str(s)), None, None) => V::Bool(is_quantity(s)),
        (Func::Sign, Some(V::Quantity(q, _)), None, None) => V::Int(i64::from(q.sign())),
        (Func::Sign, Some(V::BigQuantity(q)), None, None) => V::Int(q.sign()),
        (Func::IsGreaterThan | Func::IsLessThan | Func::CompareTo, Some(a), Some(b), None) => {
            let o = match (a, b) {
                (V::Quantity(x, _), V::Quantity(y, _)) => x.cmp(y),
                (V::Semver(x), V::Semver(y)) => (**x).cmp(&**y),
                _ => match (any_quantity(a), any_quantity(b)) {
                    (Some(x), Some(y)) => x.cmp(y),
                    _ => return Err(no()),
                },
            };
            match f {
                Func::IsGreaterThan => V::Bool(o == Ordering::Greater),
                Func::IsLessThan => V::Bool(o == Ordering::Less),
                _ => V::Int(o as i64),
            }
        }
        (Func::AsApproximateFloat, Some(V::Quantity(q, held)), None, None) => V::Double(held.to_f64(q)),
        (Func::AsApproximateFloat, Some(V::BigQuantity(q)), None, None) => V::Double(q.to_f64()),
        (Func::AsInteger, Some(V::Quantity(q, held)), None, None) => {
            V::Int(held.as_i64(q).ok_or_else(|| invalid("asInteger", "cannot convert value to integer"))?)
        }
        (Func::AsInteger, Some(V::BigQuantity(q)), None, None) => {
            V::Int(q.as_i64().ok_or_else(|| invalid("asInteger", "cannot convert value to integer"))?)
        }
        (Func::IsInteger, Some(V::Quantity(q, held)), None, None) => V::Bool(held.as_i64(q).is_some()),
        (Func::IsInteger, Some(V::BigQuantity(q)), None, None) => V::Bool(q.as_i64().is_some()),
        (Func::Add | Func::Sub, Some(V::Quantity(q, held)), Some(V::Quantity(..) | V::Int(_)), None) => {
            // `add(int)` adds `resource.NewQuantity(int)`: an `int64Amount` of scale 0.
            let other = match a1 {
                Some(V::Quantity(o, o_held)) => (*o, *o_held),
                Some(V::Int(i)) => (Quantity::from_int(*i), Held::Int(0)),
                _ => return Err(no()),
            };
            let subtract = f == Func::Sub;
            let r = if subtract { q.checked_sub(&other.0) } else { q.checked_add(&other.0) };
            match r {
                Some(r) => V::Quantity(r, Held::sum((q, *held), (&other.0, other.1), subtract)),
                // Upstream continues in arbitrary precision where int64 overflows.
                None => V::BigQuantity(Rc::new(
                    AnyQuantity::Small(q, *held).add(AnyQuantity::Small(&other.0, other.1), subtract),
                )),
            }
        }
        (Func::Add | Func::Sub, Some(a), Some(b), None) => {
            let small;
            let y = match b {
                V::Int(i) => {
                    small = Quantity::from_int(*i);
                    Some(AnyQuantity::Small(&small, Held::Int(0)))
                }
                other => any_quantity(other),
            };
            match (any_quantity(a), y) {
                (Some(x), Some(y)) => V::BigQuantity(Rc::new(x.add(y, f == Func::Sub))),
                _ => return Err(no()),
            }
        }
        (Func::Mul, Some(V::Quantity(q, held)), Some(V::Int(k)), None) => match q.checked_mul_int(*k) {
            Some(r) => V::Quantity(r, Held::product(q, *held, *k)),
            // Upstream continues in arbitrary precision where int64 overflows.
            None => V::BigQuantity(Rc::new(AnyQuantity::Small(q, *held).mul(*k))),
        },
        (Func::Mul, Some(V::BigQuantity(q)), Some(V::Int(k)), None) => V::BigQuantity(Rc::new(q.mul_int(*k))),
        (Func::Semver | Func::IsSemver, Some(V::Str(s)), norm, None) => {
            let normalize = match norm {
                None => false,
                Some(V::Bool(b)) => *b,
                Some(_) => return Err(no()),
            };
            let parsed = if normalize { Semver::parse_normalized(s) } else { Semver::parse(s) };
            if f == Func::IsSemver {
                V::Bool(parsed.is_ok())
            } else {
                V::Semver(Ver::Shared(Rc::new(parsed.map_err(|e| invalid("semver", e.to_string()))?)))
            }
        }
        (Func::Major, Some(V::Semver(v)), None, None) => V::Int(v.major as i64),
        (Func::Minor, Some(V::Semver(v)), None, None) => V::Int(v.minor as i64),
        (Func::Patch, Some(V::Semver(v)), None, None) => V::Int(v.patch as i64),
        _ => return Err(no()),
    })
}

/// `isQuantity(s)`: whether apimachinery's `resource.ParseQuantity` accepts `s`.
///
/// Upstream parses any syntactically valid quantity, falling back to arbitrary
/// precision (`k8s.io/apimachinery/pkg/api/resource/quantity.go`) where schedkit's
/// [`Quantity`] reports `OutOfRange` (`quantity()` then builds a `bigqty`); such text
/// is therefore a quantity here too, even one too large for `quantity()` to build. An
/// exponent (`1e<n>`) must still fit Go's `strconv.ParseInt(_, 10, 64)` (`suffix.go`
/// `interpret`), or upstream refuses the suffix.
fn is_quantity(s: &str) -> bool {
    match Quantity::parse(s) {
        Ok(_) => true,
        Err(crate::model::QuantityError::OutOfRange { .. }) => {
            let number = s.trim_start_matches(['+', '-']).trim_start_matches(|c: char| c.is_ascii_digit() || c == '.');
            match number.strip_prefix(['e', 'E']) {
                Some(exp) if !exp.is_empty() => exp.parse::<i64>().is_ok(),
                _ => true,
            }
        }
        Err(_) => false,
    }
}
