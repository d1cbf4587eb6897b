//! Static types for the checker.

use std::fmt;

/// A CEL type as the checker sees it. `Dyn` is assignable to and from everything; the
/// values of `device.attributes[d][id]` are `Dyn` because an attribute may hold any of
/// int, bool, string or version (upstream declares them as `AnyType`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Ty {
    Dyn,
    Null,
    /// The type of type values (`int`, `type(x)`).
    Type,
    Bool,
    Int,
    Uint,
    Double,
    String,
    Bytes,
    List(Box<Ty>),
    Map(Box<Ty>, Box<Ty>),
    Quantity,
    Semver,
    Device,
    /// `net.IP` (Kubernetes IP library).
    Ip,
    /// `net.CIDR` (Kubernetes CIDR library).
    Cidr,
    /// `kubernetes.URL` (Kubernetes URL library).
    Url,
    /// `kubernetes.NamedFormat` (Kubernetes format library).
    Format,
    /// `google.protobuf.Timestamp`
    Timestamp,
    /// `google.protobuf.Duration`
    Duration,
    /// `optional_type(T)` (cel-go optional types, enabled in Kubernetes since 1.28).
    Optional(Box<Ty>),
}

impl Ty {
    pub(crate) fn list(t: Ty) -> Ty {
        Ty::List(Box::new(t))
    }

    pub(crate) fn map(k: Ty, v: Ty) -> Ty {
        Ty::Map(Box::new(k), Box::new(v))
    }

    /// `device.attributes`.
    pub(crate) fn attributes() -> Ty {
        Ty::map(Ty::String, Ty::map(Ty::String, Ty::Dyn))
    }

    /// `device.capacity`.
    pub(crate) fn capacity() -> Ty {
        Ty::map(Ty::String, Ty::map(Ty::String, Ty::Quantity))
    }

    /// Whether a value of type `arg` may be passed where `self` is expected.
    pub(crate) fn accepts(&self, arg: &Ty) -> bool {
        match (self, arg) {
            (Ty::Dyn, _) | (_, Ty::Dyn) => true,
            (Ty::List(a), Ty::List(b)) | (Ty::Optional(a), Ty::Optional(b)) => a.accepts(b),
            (Ty::Map(ka, va), Ty::Map(kb, vb)) => ka.accepts(kb) && va.accepts(vb),
            (a, b) => a == b,
        }
    }

    /// The common type of two branches or elements: equal types stay, anything else is
    /// `Dyn` when `Dyn` is involved, `None` when the two are incompatible.
    pub(crate) fn join(&self, other: &Ty) -> Option<Ty> {
        match (self, other) {
            (Ty::Dyn, _) | (_, Ty::Dyn) => Some(Ty::Dyn),
            (Ty::List(a), Ty::List(b)) => Some(Ty::list(a.join(b)?)),
            (Ty::Optional(a), Ty::Optional(b)) => Some(Ty::Optional(Box::new(a.join(b)?))),
            (Ty::Map(ka, va), Ty::Map(kb, vb)) => Some(Ty::map(ka.join(kb)?, va.join(vb)?)),
            (a, b) if a == b => Some(a.clone()),
            _ => None,
        }
    }
}

impl fmt::Display for Ty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ty::Dyn => f.write_str("dyn"),
            Ty::Null => f.write_str("null_type"),
            Ty::Type => f.write_str("type"),
            Ty::Bool => f.write_str("bool"),
            Ty::Int => f.write_str("int"),
            Ty::Uint => f.write_str("uint"),
            Ty::Double => f.write_str("double"),
            Ty::String => f.write_str("string"),
            Ty::Bytes => f.write_str("bytes"),
            Ty::List(e) => write!(f, "list({e})"),
            Ty::Map(k, v) => write!(f, "map({k}, {v})"),
            Ty::Quantity => f.write_str("kubernetes.Quantity"),
            Ty::Semver => f.write_str("kubernetes.Semver"),
            Ty::Device => f.write_str("kubernetes.DRADevice"),
            Ty::Ip => f.write_str("net.IP"),
            Ty::Cidr => f.write_str("net.CIDR"),
            Ty::Url => f.write_str("kubernetes.URL"),
            Ty::Format => f.write_str("kubernetes.NamedFormat"),
            Ty::Timestamp => f.write_str("google.protobuf.Timestamp"),
            Ty::Duration => f.write_str("google.protobuf.Duration"),
            Ty::Optional(t) => write!(f, "optional_type({t})"),
        }
    }
}
