//! Reading device data, maps and lists: field selection, indexing, `in`, and the
//! errors for missing attributes and keys.

use std::borrow::Cow;

use super::{Fault, R, attr_value, overload};
use crate::model::Symbol;
use crate::selector::bigqty::Held;
use crate::selector::device::{AttributeKey, Device};
use crate::selector::error::EvalErrorKind;
use crate::selector::value::{Value, equals};

#[expect(clippy::unnecessary_box_returns, reason = "errors travel boxed to keep results small")]
pub(super) fn missing(key: AttributeKey, capacity: bool) -> Fault {
    Box::new(missing_kind(key, capacity))
}

/// The error of a missing compiled attribute; built without allocating, so a missing
/// attribute whose error is absorbed by `||`/`&&` costs no allocation either.
pub(super) fn missing_kind(key: AttributeKey, capacity: bool) -> EvalErrorKind {
    EvalErrorKind::NoSuchKey { key: Cow::Borrowed(key.id().as_str()), domain: Some(key.domain().as_str()), capacity }
}

#[expect(clippy::unnecessary_box_returns, reason = "errors travel boxed to keep results small")]
pub(super) fn missing_named(key: &str, domain: Option<Symbol>, capacity: bool) -> Fault {
    Box::new(EvalErrorKind::NoSuchKey {
        key: Cow::Owned(key.to_owned()),
        domain: Some(domain.map_or("", Symbol::as_str)),
        capacity,
    })
}

pub(super) fn lookup_attr<'a>(d: &'a Device, dom: Option<Symbol>, id: &str, test: bool) -> R<'a> {
    let found = dom.zip(Symbol::lookup(id)).and_then(|(dom, id)| d.attribute(AttributeKey::new(dom, id)));
    match (found, test) {
        (f, true) => Ok(Value::Bool(f.is_some())),
        (Some(v), false) => Ok(attr_value(v)),
        (None, false) => Err(missing_named(id, dom, false)),
    }
}

pub(super) fn lookup_cap<'a>(d: &'a Device, dom: Option<Symbol>, id: &str, test: bool) -> R<'a> {
    let found = dom.zip(Symbol::lookup(id)).and_then(|(dom, id)| d.capacity(AttributeKey::new(dom, id)));
    match (found, test) {
        (f, true) => Ok(Value::Bool(f.is_some())),
        (Some(q), false) => Ok(Value::Quantity(*q, Held::Canonical)),
        (None, false) => Err(missing_named(id, dom, true)),
    }
}

/// `container.field` / `container[key]` with a string key, or a `has()` test.
pub(super) fn select_str<'a>(container: &Value<'a>, key: &str, test: bool) -> R<'a> {
    match container {
        Value::Device(d) => Ok(match (key, test) {
            ("driver" | "attributes" | "capacity" | "allowMultipleAllocations", true) => Value::Bool(true),
            ("allowMultipleAllocations", false) => Value::Bool(d.allow_multiple_allocations()),
            ("driver", false) => Value::str(d.driver()),
            ("attributes", false) => Value::Attributes(d),
            ("capacity", false) => Value::Capacity(d),
            _ => {
                return Err(EvalErrorKind::NoSuchKey {
                    key: Cow::Owned(key.to_owned()),
                    domain: None,
                    capacity: false,
                }
                .into());
            }
        }),
        Value::Attributes(d) => {
            let dom = Symbol::lookup(key);
            if test {
                Ok(Value::Bool(dom.is_some_and(|s| d.has_attribute_domain(s))))
            } else {
                // Upstream answers an unknown domain with an empty map.
                Ok(Value::AttrDomain(d, dom))
            }
        }
        Value::Capacity(d) => {
            let dom = Symbol::lookup(key);
            if test {
                Ok(Value::Bool(dom.is_some_and(|s| d.has_capacity_domain(s))))
            } else {
                Ok(Value::CapDomain(d, dom))
            }
        }
        Value::AttrDomain(d, dom) => lookup_attr(d, *dom, key, test),
        Value::CapDomain(d, dom) => lookup_cap(d, *dom, key, test),
        Value::Map(m) => {
            let found = m.iter().find(|(k, _)| matches!(k, Value::Str(s) if &**s == key));
            match (found, test) {
                (f, true) => Ok(Value::Bool(f.is_some())),
                (Some((_, v)), false) => Ok(v.clone()),
                (None, false) => {
                    Err(EvalErrorKind::NoSuchKey { key: Cow::Owned(key.to_owned()), domain: None, capacity: false }
                        .into())
                }
            }
        }
        other => Err(overload(if test { "has" } else { "_._" }, &[other])),
    }
}

pub(super) fn index<'a>(container: &Value<'a>, key: &Value<'a>) -> R<'a> {
    match (container, key) {
        (Value::List(l), Value::Int(_) | Value::Uint(_) | Value::Double(_)) => {
            let i = match key {
                Value::Int(i) => Some(*i),
                Value::Uint(u) => i64::try_from(*u).ok(),
                Value::Double(d) if d.fract() == 0.0 && d.is_finite() => Some(*d as i64),
                _ => None,
            };
            let Some(i) = i else {
                return Err(overload("_[_]", &[container, key]));
            };
            usize::try_from(i)
                .ok()
                .and_then(|u| l.get(u))
                .cloned()
                .ok_or(EvalErrorKind::IndexOutOfRange { index: i, size: l.len() }.into())
        }
        (Value::Map(m), k) => m.iter().find(|(mk, _)| equals(mk, k)).map(|(_, v)| v.clone()).ok_or_else(|| {
            Box::new(EvalErrorKind::NoSuchKey { key: Cow::Owned(display_key(k)), domain: None, capacity: false })
        }),
        (
            Value::Device(_) | Value::Attributes(_) | Value::Capacity(_) | Value::AttrDomain(..) | Value::CapDomain(..),
            Value::Str(s),
        ) => select_str(container, s, false),
        _ => Err(overload("_[_]", &[container, key])),
    }
}

pub(super) fn display_key(k: &Value<'_>) -> String {
    match k {
        Value::Str(s) => s.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Uint(u) => format!("{u}u"),
        Value::Bool(b) => b.to_string(),
        other => other.type_name().to_owned(),
    }
}

pub(super) fn contains<'a>(container: &Value<'a>, needle: &Value<'a>) -> Result<bool, Fault> {
    Ok(match (container, needle) {
        (Value::List(l), n) => l.iter().any(|e| equals(e, n)),
        (Value::Map(m), n) => m.iter().any(|(k, _)| equals(k, n)),
        (Value::Attributes(d), Value::Str(s)) => Symbol::lookup(s).is_some_and(|x| d.has_attribute_domain(x)),
        (Value::Capacity(d), Value::Str(s)) => Symbol::lookup(s).is_some_and(|x| d.has_capacity_domain(x)),
        (Value::AttrDomain(d, dom), Value::Str(s)) => {
            matches!(lookup_attr(d, *dom, s, true), Ok(Value::Bool(true)))
        }
        (Value::CapDomain(d, dom), Value::Str(s)) => {
            matches!(lookup_cap(d, *dom, s, true), Ok(Value::Bool(true)))
        }
        (Value::Attributes(_) | Value::Capacity(_) | Value::AttrDomain(..) | Value::CapDomain(..), _) => false,
        _ => return Err(overload("@in", &[needle, container])),
    })
}
