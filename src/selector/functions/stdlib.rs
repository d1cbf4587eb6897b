//! The CEL standard library's functions (strings' `contains`/`startsWith`/`endsWith`/
//! `matches`, `size`, the conversions, `type`, timestamps and durations) and cel-go's
//! optional types.

use std::rc::Rc;

use regex::Regex;

use super::{Func, R, compile_regex, invalid, overload};
use crate::selector::net;
use crate::selector::text::format_double;
use crate::selector::time;
use crate::selector::value::Value;

/// Applies a standard-library or optional-types function (see [`super::call`]).
pub(super) fn call<'a>(f: Func, name: &'static str, args: &[Value<'a>], regex: Option<&Regex>) -> R<'a> {
    use Value as V;
    let a0 = args.first();
    let a1 = args.get(1);
    let a2 = args.get(2);
    let no = || overload(name, args);
    Ok(match (f, a0, a1, a2) {
        (Func::Size, Some(v), None, None) => V::Int(v.size().ok_or_else(no)? as i64),
        (Func::Contains, Some(V::Str(s)), Some(V::Str(t)), None) => V::Bool(s.contains(&**t)),
        (Func::StartsWith, Some(V::Str(s)), Some(V::Str(t)), None) => V::Bool(s.starts_with(&**t)),
        (Func::EndsWith, Some(V::Str(s)), Some(V::Str(t)), None) => V::Bool(s.ends_with(&**t)),
        (Func::Matches, Some(V::Str(s)), Some(V::Str(p)), None) => match regex {
            Some(re) => V::Bool(re.is_match(s)),
            None => V::Bool(compile_regex(p).map_err(|e| invalid("matches", e))?.is_match(s)),
        },
        (Func::ToInt, Some(v), None, None) => V::Int(to_int(v).ok_or_else(|| match v {
            V::Int(_) | V::Uint(_) | V::Double(_) | V::Str(_) => invalid("int", "value out of range or not a number"),
            _ => no(),
        })?),
        (Func::ToUint, Some(v), None, None) => V::Uint(to_uint(v).ok_or_else(|| match v {
            V::Int(_) | V::Uint(_) | V::Double(_) | V::Str(_) => invalid("uint", "value out of range or not a number"),
            _ => no(),
        })?),
        (Func::ToDouble, Some(v), None, None) => V::Double(match v {
            V::Double(d) => *d,
            V::Int(i) => *i as f64,
            V::Uint(u) => *u as f64,
            V::Str(s) => parse_double(s).ok_or_else(|| invalid("double", format!("cannot parse {:?}", &**s)))?,
            _ => return Err(no()),
        }),
        (Func::ToString, Some(v), None, None) => match v {
            V::Str(_) => v.clone(),
            V::Int(i) => V::string(i.to_string()),
            V::Uint(u) => V::string(u.to_string()),
            V::Double(d) => V::string(format_double(*d)),
            V::Bool(b) => V::str(if *b { "true" } else { "false" }),
            V::Ip(ip) => V::string(net::ip_string(*ip)),
            V::Timestamp(t) => V::string(time::format_timestamp(*t)),
            V::Duration(d) => V::string(time::format_duration(*d)),
            V::Cidr(ip, bits) => V::string(net::cidr_string((*ip, *bits))),
            V::Bytes(b) => {
                V::string(String::from_utf8(b.to_vec()).map_err(|_| invalid("string", "bytes are not valid UTF-8"))?)
            }
            _ => return Err(no()),
        },
        (Func::ToBool, Some(v), None, None) => match v {
            V::Bool(_) => v.clone(),
            V::Str(s) => V::Bool(match &**s {
                "1" | "t" | "T" | "TRUE" | "true" | "True" => true,
                "0" | "f" | "F" | "FALSE" | "false" | "False" => false,
                other => return Err(invalid("bool", format!("cannot parse {other:?}"))),
            }),
            _ => return Err(no()),
        },
        (Func::ToBytes, Some(v), None, None) => match v {
            V::Bytes(_) => v.clone(),
            V::Str(s) => V::Bytes(Rc::from(s.as_bytes())),
            _ => return Err(no()),
        },
        (Func::Dyn, Some(v), None, None) => v.clone(),
        (Func::TypeOf, Some(v), None, None) => V::Type(v.type_name()),
        (Func::HasValue, Some(V::Optional(o)), None, None) => V::Bool(o.is_some()),
        (Func::OptValue, Some(V::Optional(o)), None, None) => match o {
            Some(v) => (**v).clone(),
            None => return Err(invalid("value", "optional.none() dereference")),
        },
        (Func::OrValue, Some(V::Optional(o)), Some(d), None) => match o {
            Some(v) => (**v).clone(),
            None => d.clone(),
        },
        (Func::Or, Some(V::Optional(o)), Some(other @ V::Optional(_)), None) => {
            if o.is_some() {
                V::Optional(o.clone())
            } else {
                other.clone()
            }
        }
        (Func::OptionalOf, Some(v), None, None) => V::Optional(Some(Rc::new(v.clone()))),
        (Func::OptionalNone, None, None, None) => V::Optional(None),
        (Func::OptionalOfNonZero, Some(v), None, None) => {
            let zero = match v {
                V::Null => true,
                V::Bool(b) => !b,
                V::Int(i) => *i == 0,
                V::Uint(u) => *u == 0,
                V::Double(d) => *d == 0.0,
                V::Str(s) => s.is_empty(),
                V::Bytes(b) => b.is_empty(),
                V::List(l) => l.is_empty(),
                V::Map(m) => m.is_empty(),
                _ => false,
            };
            V::Optional(if zero { None } else { Some(Rc::new(v.clone())) })
        }
        (Func::ToTimestamp, Some(v), None, None) => V::Timestamp(match v {
            V::Timestamp(t) => *t,
            V::Str(s) => time::parse_timestamp(s).map_err(|m| invalid("timestamp", m))?,
            V::Int(secs) => {
                time::check_timestamp(i128::from(*secs) * 1_000_000_000).map_err(|m| invalid("timestamp", m))?
            }
            _ => return Err(no()),
        }),
        (Func::ToDuration, Some(v), None, None) => V::Duration(match v {
            V::Duration(d) => *d,
            V::Str(s) => time::parse_duration(s).map_err(|m| invalid("duration", m))?,
            _ => return Err(no()),
        }),
        (Func::TimeField(field), Some(V::Timestamp(t)), tz, None) => {
            let offset = match tz {
                None => 0,
                Some(V::Str(z)) => time::zone_offset(z, *t).map_err(|m| invalid(name, m))?,
                Some(_) => return Err(no()),
            };
            V::Int(time::timestamp_field(*t, offset, field))
        }
        (Func::TimeField(field), Some(V::Duration(d)), None, None) => {
            V::Int(time::duration_field(*d, field).ok_or_else(no)?)
        }
        _ => return Err(no()),
    })
}

fn to_int(v: &Value<'_>) -> Option<i64> {
    match v {
        Value::Int(i) => Some(*i),
        Value::Uint(u) => i64::try_from(*u).ok(),
        Value::Double(d) => {
            // cel-go rejects values that do not fit strictly inside the int64 range.
            (d.is_finite() && *d > -9_223_372_036_854_775_808.0 && *d < 9_223_372_036_854_775_807.0)
                .then(|| d.trunc() as i64)
        }
        Value::Str(s) => s.parse().ok(),
        // Unix seconds, rounded towards negative infinity as Go's `Time.Unix`.
        Value::Timestamp(t) => i64::try_from(t.div_euclid(1_000_000_000)).ok(),
        _ => None,
    }
}

fn to_uint(v: &Value<'_>) -> Option<u64> {
    match v {
        Value::Uint(u) => Some(*u),
        Value::Int(i) => u64::try_from(*i).ok(),
        Value::Double(d) => (d.is_finite() && *d > -1.0 && *d < 18_446_744_073_709_551_615.0).then(|| d.trunc() as u64),
        Value::Str(s) => s.parse().ok(),
        _ => None,
    }
}

fn parse_double(s: &str) -> Option<f64> {
    match s {
        "NaN" => Some(f64::NAN),
        "Infinity" | "+Infinity" | "inf" | "+inf" => Some(f64::INFINITY),
        "-Infinity" | "-inf" => Some(f64::NEG_INFINITY),
        _ => s.parse().ok(),
    }
}
