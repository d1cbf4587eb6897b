//! Runtime values. Strings, versions and device data are borrowed from the compiled
//! selector or the device wherever possible, so comparisons allocate nothing.

use std::cmp::Ordering;
use std::net::IpAddr;
use std::ops::Deref;
use std::rc::Rc;

use super::bigqty::{AnyQuantity, Held};
use super::device::{AttributeValue, Device};
use super::semver::Semver;
use crate::model::{Quantity, Symbol};

/// A string that is either borrowed (constants, attributes) or computed.
#[derive(Debug, Clone)]
pub(crate) enum Str<'a> {
    Borrowed(&'a str),
    Shared(Rc<str>),
}

impl Deref for Str<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        match self {
            Str::Borrowed(s) => s,
            Str::Shared(s) => s,
        }
    }
}

/// A version that is either borrowed or computed.
#[derive(Debug, Clone)]
pub(crate) enum Ver<'a> {
    Borrowed(&'a Semver),
    Shared(Rc<Semver>),
}

impl Deref for Ver<'_> {
    type Target = Semver;
    fn deref(&self) -> &Semver {
        match self {
            Ver::Borrowed(s) => s,
            Ver::Shared(s) => s,
        }
    }
}

/// A CEL value during evaluation.
#[derive(Debug, Clone)]
pub(crate) enum Value<'a> {
    Null,
    /// A type value (`int`, `type(x)`), by its CEL name.
    Type(&'static str),
    Bool(bool),
    Int(i64),
    Uint(u64),
    Double(f64),
    Str(Str<'a>),
    Bytes(Rc<[u8]>),
    /// A quantity and how upstream would hold it (which `isInteger()` and
    /// `asApproximateFloat()` answer by).
    Quantity(Quantity, Held),
    /// A quantity beyond the range of [`Quantity`], as upstream's decimal fallback.
    BigQuantity(Rc<super::bigqty::BigQuantity>),
    Semver(Ver<'a>),
    List(Rc<Vec<Value<'a>>>),
    Map(Rc<Vec<(Value<'a>, Value<'a>)>>),
    /// A `net.IP` (`ip("10.0.0.1")`).
    Ip(IpAddr),
    /// A `net.CIDR`: the address as written (host bits may be set) and the prefix length.
    Cidr(IpAddr, u8),
    /// A timestamp: nanoseconds since the Unix epoch, within CEL's range.
    Timestamp(i128),
    /// A duration: nanoseconds (Go's `time.Duration`).
    Duration(i64),
    /// A `kubernetes.URL` (`url("https://example.com")`).
    Url(Rc<super::url::Url>),
    /// A `kubernetes.NamedFormat` (`format.dns1123Label()`).
    Format(super::named_format::NamedFormat),
    /// An optional value (`optional.of(x)`, `optional.none()`).
    Optional(Option<Rc<Value<'a>>>),
    /// The `device` variable.
    Device(&'a Device),
    /// `device.attributes`: domain -> (id -> value).
    Attributes(&'a Device),
    /// `device.attributes[domain]`; `None` is a domain no device has (an empty map).
    AttrDomain(&'a Device, Option<Symbol>),
    /// `device.capacity`.
    Capacity(&'a Device),
    /// `device.capacity[domain]`.
    CapDomain(&'a Device, Option<Symbol>),
}

impl<'a> Value<'a> {
    pub(crate) fn str(s: &'a str) -> Value<'a> {
        Value::Str(Str::Borrowed(s))
    }

    pub(crate) fn string(s: String) -> Value<'a> {
        Value::Str(Str::Shared(Rc::from(s)))
    }

    /// The CEL type name, for messages.
    pub(crate) fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "null_type",
            Value::Type(_) => "type",
            Value::Optional(_) => "optional_type",
            Value::Bool(_) => "bool",
            Value::Int(_) => "int",
            Value::Uint(_) => "uint",
            Value::Double(_) => "double",
            Value::Str(_) => "string",
            Value::Bytes(_) => "bytes",
            Value::Quantity(..) | Value::BigQuantity(_) => "kubernetes.Quantity",
            Value::Semver(_) => "kubernetes.Semver",
            Value::Ip(_) => "net.IP",
            Value::Cidr(..) => "net.CIDR",
            Value::Url(_) => "kubernetes.URL",
            Value::Format(_) => "kubernetes.NamedFormat",
            Value::Timestamp(_) => "google.protobuf.Timestamp",
            Value::Duration(_) => "google.protobuf.Duration",
            Value::List(_) => "list",
            Value::Map(_)
            | Value::Attributes(_)
            | Value::AttrDomain(..)
            | Value::Capacity(_)
            | Value::CapDomain(..) => "map",
            Value::Device(_) => "kubernetes.DRADevice",
        }
    }

    /// Elements of a list, or keys of a map, for iteration and `size()`.
    pub(crate) fn iter_items(&self) -> Option<Vec<Value<'a>>> {
        Some(match self {
            Value::List(l) => l.as_ref().clone(),
            Value::Map(m) => m.iter().map(|(k, _)| k.clone()).collect(),
            Value::Attributes(d) => {
                let mut v: Vec<Value<'a>> = Vec::new();
                let mut last = None;
                for (k, _) in d.attributes() {
                    if last != Some(k.domain()) {
                        last = Some(k.domain());
                        v.push(Value::str(k.domain().as_str()));
                    }
                }
                v
            }
            Value::Capacity(d) => {
                let mut v: Vec<Value<'a>> = Vec::new();
                let mut last = None;
                for (k, _) in d.capacities() {
                    if last != Some(k.domain()) {
                        last = Some(k.domain());
                        v.push(Value::str(k.domain().as_str()));
                    }
                }
                v
            }
            Value::AttrDomain(d, Some(dom)) => d
                .attributes()
                .iter()
                .filter(|(k, _)| k.domain() == *dom)
                .map(|(k, _)| Value::str(k.id().as_str()))
                .collect(),
            Value::CapDomain(d, Some(dom)) => d
                .capacities()
                .iter()
                .filter(|(k, _)| k.domain() == *dom)
                .map(|(k, _)| Value::str(k.id().as_str()))
                .collect(),
            Value::AttrDomain(_, None) | Value::CapDomain(_, None) => Vec::new(),
            _ => return None,
        })
    }

    /// (index, element) of a list or (key, value) of a map, for two-variable
    /// comprehensions.
    pub(crate) fn iter_pairs(&self) -> Option<Vec<(Value<'a>, Value<'a>)>> {
        Some(match self {
            Value::List(l) => l.iter().enumerate().map(|(i, v)| (Value::Int(i as i64), v.clone())).collect(),
            Value::Map(m) => m.as_ref().clone(),
            Value::Attributes(d) => self
                .iter_items()?
                .into_iter()
                .map(|k| {
                    let dom = if let Value::Str(s) = &k { Symbol::lookup(s) } else { None };
                    (k, Value::AttrDomain(d, dom))
                })
                .collect(),
            Value::Capacity(d) => self
                .iter_items()?
                .into_iter()
                .map(|k| {
                    let dom = if let Value::Str(s) = &k { Symbol::lookup(s) } else { None };
                    (k, Value::CapDomain(d, dom))
                })
                .collect(),
            Value::AttrDomain(d, Some(dom)) => d
                .attributes()
                .iter()
                .filter(|(k, _)| k.domain() == *dom)
                .map(|(k, v)| (Value::str(k.id().as_str()), Value::from_attribute(v)))
                .collect(),
            Value::CapDomain(d, Some(dom)) => d
                .capacities()
                .iter()
                .filter(|(k, _)| k.domain() == *dom)
                .map(|(k, q)| (Value::str(k.id().as_str()), Value::Quantity(*q, Held::Canonical)))
                .collect(),
            Value::AttrDomain(_, None) | Value::CapDomain(_, None) => Vec::new(),
            _ => return None,
        })
    }

    /// The value of a device attribute, borrowed.
    pub(crate) fn from_attribute(v: &'a AttributeValue) -> Value<'a> {
        match v {
            AttributeValue::Int(i) => Value::Int(*i),
            AttributeValue::Bool(b) => Value::Bool(*b),
            AttributeValue::String(s) => Value::str(s),
            AttributeValue::Version(v) => Value::Semver(Ver::Borrowed(v)),
            AttributeValue::List(items) => {
                Value::List(std::rc::Rc::new(items.iter().map(Value::from_attribute).collect()))
            }
        }
    }

    /// Number of elements, keys or characters (`size()`), if the value has a size.
    pub(crate) fn size(&self) -> Option<usize> {
        Some(match self {
            Value::Str(s) => s.chars().count(),
            Value::Bytes(b) => b.len(),
            Value::List(l) => l.len(),
            Value::Map(m) => m.len(),
            Value::AttrDomain(d, Some(dom)) => d.attributes().iter().filter(|(k, _)| k.domain() == *dom).count(),
            Value::CapDomain(d, Some(dom)) => d.capacities().iter().filter(|(k, _)| k.domain() == *dom).count(),
            Value::AttrDomain(_, None) | Value::CapDomain(_, None) => 0,
            Value::Attributes(_) | Value::Capacity(_) => self.iter_items().map_or(0, |v| v.len()),
            _ => return None,
        })
    }
}

/// CEL equality (cel-spec "Equality"): values of different kinds are unequal, numbers
/// compare by value across int, uint and double, lists and maps element-wise.
/// Returns `None` where a comparison has no answer (NaN never equals anything, which is
/// `Some(false)`; `None` is only for device map views compared structurally).
pub(crate) fn equals(a: &Value<'_>, b: &Value<'_>) -> bool {
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Type(x), Value::Type(y)) => x == y,
        (Value::Optional(x), Value::Optional(y)) => match (x, y) {
            (None, None) => true,
            (Some(a), Some(b)) => equals(a, b),
            _ => false,
        },
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Str(x), Value::Str(y)) => **x == **y,
        (Value::Bytes(x), Value::Bytes(y)) => x == y,
        (Value::Quantity(x, _), Value::Quantity(y, _)) => x == y,
        (Value::BigQuantity(_), Value::Quantity(..) | Value::BigQuantity(_))
        | (Value::Quantity(..), Value::BigQuantity(_)) => {
            matches!(
                (any_quantity(a), any_quantity(b)),
                (Some(x), Some(y)) if x.cmp(y).is_eq()
            )
        }
        (Value::Semver(x), Value::Semver(y)) => **x == **y,
        (Value::Ip(x), Value::Ip(y)) => x == y,
        (Value::Cidr(x, a), Value::Cidr(y, b)) => x == y && a == b,
        (Value::Url(x), Value::Url(y)) => x == y,
        (Value::Format(x), Value::Format(y)) => x == y,
        (Value::Timestamp(x), Value::Timestamp(y)) => x == y,
        (Value::Duration(x), Value::Duration(y)) => x == y,
        (Value::List(x), Value::List(y)) => x.len() == y.len() && x.iter().zip(y.iter()).all(|(p, q)| equals(p, q)),
        (Value::Map(x), Value::Map(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.iter().any(|(k2, v2)| equals(k, k2) && equals(v, v2)))
        }
        (Value::Device(x), Value::Device(y))
        | (Value::Attributes(x), Value::Attributes(y))
        | (Value::Capacity(x), Value::Capacity(y)) => std::ptr::eq(*x, *y),
        (Value::AttrDomain(x, dx), Value::AttrDomain(y, dy)) | (Value::CapDomain(x, dx), Value::CapDomain(y, dy)) => {
            std::ptr::eq(*x, *y) && dx == dy
        }
        _ => numeric_cmp(a, b) == Some(Ordering::Equal),
    }
}

/// Ordering of numbers across int, uint and double (cel-go's cross-type numeric
/// comparison, which Kubernetes enables); `None` for non-numbers and NaN.
pub(crate) fn numeric_cmp(a: &Value<'_>, b: &Value<'_>) -> Option<Ordering> {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => Some(x.cmp(y)),
        (Value::Uint(x), Value::Uint(y)) => Some(x.cmp(y)),
        (Value::Double(x), Value::Double(y)) => x.partial_cmp(y),
        (Value::Int(x), Value::Uint(y)) => Some(if *x < 0 { Ordering::Less } else { (*x as u64).cmp(y) }),
        (Value::Uint(x), Value::Int(y)) => Some(if *y < 0 { Ordering::Greater } else { x.cmp(&(*y as u64)) }),
        (Value::Int(x), Value::Double(y)) => cmp_i_d(*x, *y),
        (Value::Double(x), Value::Int(y)) => cmp_i_d(*y, *x).map(Ordering::reverse),
        (Value::Uint(x), Value::Double(y)) => cmp_u_d(*x, *y),
        (Value::Double(x), Value::Uint(y)) => cmp_u_d(*y, *x).map(Ordering::reverse),
        _ => None,
    }
}

fn cmp_i_d(i: i64, d: f64) -> Option<Ordering> {
    if d.is_nan() {
        return None;
    }
    // -2^63 and 2^63 are exact doubles; beyond them the int is on one side.
    if d < -9_223_372_036_854_775_808.0 {
        return Some(Ordering::Greater);
    }
    if d >= 9_223_372_036_854_775_808.0 {
        return Some(Ordering::Less);
    }
    let t = d.trunc();
    let ti = t as i64;
    Some(i.cmp(&ti).then_with(|| 0.0f64.partial_cmp(&(d - t)).unwrap_or(Ordering::Equal)))
}

fn cmp_u_d(u: u64, d: f64) -> Option<Ordering> {
    if d.is_nan() {
        return None;
    }
    if d < 0.0 {
        return Some(Ordering::Greater);
    }
    if d >= 18_446_744_073_709_551_616.0 {
        return Some(Ordering::Less);
    }
    let t = d.trunc();
    let tu = t as u64;
    Some(u.cmp(&tu).then_with(|| 0.0f64.partial_cmp(&(d - t)).unwrap_or(Ordering::Equal)))
}

/// Ordering for `<`, `<=`, `>`, `>=`: numbers (cross-type), strings, bytes, bools.
/// `None` means no overload (an error), except for NaN where every comparison is false;
/// that case returns `Some(None)`.
#[expect(clippy::option_option, reason = "outer None: no overload; inner None: unordered (NaN)")]
pub(crate) fn compare(a: &Value<'_>, b: &Value<'_>) -> Option<Option<Ordering>> {
    Some(match (a, b) {
        (Value::Str(x), Value::Str(y)) => Some((**x).cmp(&**y)),
        (Value::Bytes(x), Value::Bytes(y)) => Some(x.cmp(y)),
        (Value::Bool(x), Value::Bool(y)) => Some(x.cmp(y)),
        (Value::Timestamp(x), Value::Timestamp(y)) => Some(x.cmp(y)),
        (Value::Duration(x), Value::Duration(y)) => Some(x.cmp(y)),
        (Value::Int(_) | Value::Uint(_) | Value::Double(_), Value::Int(_) | Value::Uint(_) | Value::Double(_)) => {
            numeric_cmp(a, b)
        }
        _ => return None,
    })
}

/// A quantity value of either representation.
pub(crate) fn any_quantity<'v>(v: &'v Value<'_>) -> Option<AnyQuantity<'v>> {
    match v {
        Value::Quantity(q, held) => Some(AnyQuantity::Small(q, *held)),
        Value::BigQuantity(q) => Some(AnyQuantity::Big(q)),
        _ => None,
    }
}
