//! Shared helpers for the selector integration tests.

#![allow(dead_code, reason = "each test binary uses a different subset")]

use schedkit::model::Quantity;
use schedkit::selector::{AttributeValue, Device, EvalError, Selector};

/// An attribute value, written compactly.
pub enum A {
    I(i64),
    B(bool),
    S(&'static str),
    V(&'static str),
}

/// Builds a device of `driver` with the given attributes and capacities.
pub fn device(driver: &str, attrs: &[(&str, A)], caps: &[(&str, &str)]) -> Device {
    let mut d = Device::new("test-device", driver);
    for (name, v) in attrs {
        let v = match v {
            A::I(i) => AttributeValue::Int(*i),
            A::B(b) => AttributeValue::Bool(*b),
            A::S(s) => AttributeValue::String((*s).into()),
            A::V(s) => AttributeValue::Version(schedkit::selector::Semver::parse(s).expect("valid version")),
        };
        d.set_attribute(name, v);
    }
    for (name, q) in caps {
        d.set_capacity(name, Quantity::parse(q).expect("valid quantity"));
    }
    d
}

/// Compiles and evaluates `src` against `d`, panicking on compile errors.
pub fn eval(src: &str, d: &Device) -> Result<bool, EvalError> {
    Selector::compile(src).unwrap_or_else(|e| panic!("{src}: {e}")).matches(d)
}

/// Evaluates `src` against an empty device.
pub fn eval0(src: &str) -> Result<bool, EvalError> {
    eval(src, &device("", &[], &[]))
}
