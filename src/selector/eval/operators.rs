//! Arithmetic and the binary operators on values (equality, ordering, `+` and the
//! other arithmetic, `in`).

use std::cmp::Ordering;
use std::rc::Rc;

use super::access::contains;
use super::{Ctx, R, actual_size, overload};
use crate::selector::ast::BinaryOp;
use crate::selector::error::EvalErrorKind;
use crate::selector::value::{Value, compare, equals};

pub(super) fn arith<'a>(op: BinaryOp, l: &Value<'a>, r: &Value<'a>) -> R<'a> {
    use BinaryOp as B;
    let name = op.function_name();
    let of = EvalErrorKind::Overflow(name);
    let ts_overflow = || Box::new(EvalErrorKind::Overflow(name));
    Ok(match (l, r) {
        (Value::Timestamp(t), Value::Duration(d)) | (Value::Duration(d), Value::Timestamp(t))
            if op == B::Add || (op == B::Sub && matches!(l, Value::Timestamp(_))) =>
        {
            let d = i128::from(*d);
            let v = if op == B::Add { t + d } else { t - d };
            Value::Timestamp(crate::selector::time::check_timestamp(v).map_err(|_| ts_overflow())?)
        }
        (Value::Timestamp(a), Value::Timestamp(b)) if op == B::Sub => {
            Value::Duration(i64::try_from(a - b).map_err(|_| ts_overflow())?)
        }
        (Value::Duration(a), Value::Duration(b)) if matches!(op, B::Add | B::Sub) => {
            Value::Duration(if op == B::Add { a.checked_add(*b) } else { a.checked_sub(*b) }.ok_or_else(ts_overflow)?)
        }
        (Value::Int(a), Value::Int(b)) => Value::Int(match op {
            B::Add => a.checked_add(*b).ok_or(of)?,
            B::Sub => a.checked_sub(*b).ok_or(of)?,
            B::Mul => a.checked_mul(*b).ok_or(of)?,
            B::Div | B::Rem if *b == 0 => return Err(EvalErrorKind::DivisionByZero.into()),
            B::Div => a.checked_div(*b).ok_or(of)?,
            _ => a.checked_rem(*b).ok_or(of)?,
        }),
        (Value::Uint(a), Value::Uint(b)) => Value::Uint(match op {
            B::Add => a.checked_add(*b).ok_or(of)?,
            B::Sub => a.checked_sub(*b).ok_or(of)?,
            B::Mul => a.checked_mul(*b).ok_or(of)?,
            B::Div | B::Rem if *b == 0 => return Err(EvalErrorKind::DivisionByZero.into()),
            B::Div => a / b,
            _ => a % b,
        }),
        (Value::Double(a), Value::Double(b)) => Value::Double(match op {
            B::Add => a + b,
            B::Sub => a - b,
            B::Mul => a * b,
            B::Div => a / b,
            _ => return Err(overload(name, &[l, r])),
        }),
        (Value::Str(a), Value::Str(b)) if op == B::Add => {
            let mut s = String::with_capacity(a.len() + b.len());
            s.push_str(a);
            s.push_str(b);
            Value::string(s)
        }
        (Value::Bytes(a), Value::Bytes(b)) if op == B::Add => {
            let mut v = a.to_vec();
            v.extend_from_slice(b);
            Value::Bytes(Rc::from(v))
        }
        (Value::List(a), Value::List(b)) if op == B::Add => {
            let mut v = a.as_ref().clone();
            v.extend(b.iter().cloned());
            Value::List(Rc::new(v))
        }
        _ => return Err(overload(name, &[l, r])),
    })
}

impl<'a> Ctx<'a> {
    pub(super) fn binary(&mut self, op: BinaryOp, l: &Value<'a>, r: &Value<'a>) -> R<'a> {
        match op {
            BinaryOp::Eq | BinaryOp::Ne => {
                if let (Value::Str(a), Value::Str(b)) = (l, r) {
                    self.cost += (a.len().min(b.len()) as u64).div_ceil(10);
                } else {
                    self.cost += 1;
                }
                Ok(Value::Bool(equals(l, r) == (op == BinaryOp::Eq)))
            }
            BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge => {
                self.cost += 1;
                let Some(o) = compare(l, r) else {
                    return Err(overload(op.function_name(), &[l, r]));
                };
                Ok(Value::Bool(o.is_some_and(|o| match op {
                    BinaryOp::Lt => o == Ordering::Less,
                    BinaryOp::Le => o != Ordering::Greater,
                    BinaryOp::Gt => o == Ordering::Greater,
                    _ => o != Ordering::Less,
                })))
            }
            BinaryOp::In => {
                self.charge(actual_size(r))?;
                contains(r, l).map(Value::Bool)
            }
            _ => {
                self.charge(1)?;
                arith(op, l, r)
            }
        }
    }
}
