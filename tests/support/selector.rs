//! Shared helpers for the selector integration tests.

#![allow(dead_code, reason = "each test binary uses a different subset")]

use schedkit::model::Quantity;
use schedkit::selector::{AttributeValue, Device, EvalError, Limits, Selector, SelectorError};

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

/// Compiles and evaluates `src` against `d` without the cost budget. For upstream
/// library examples whose meaning is tested here but whose estimate Kubernetes' DRA
/// compiler refuses (an `==` between two values of unknown size: `type`s, optionals of
/// non-scalars, opaque values built by calls); [`assert_refused`] records the refusal.
pub fn eval_unbudgeted(src: &str, d: &Device) -> Result<bool, EvalError> {
    let limits = Limits { max_cost: u64::MAX, ..Limits::default() };
    Selector::compile_with(src, limits).unwrap_or_else(|e| panic!("{src}: {e}")).matches(d)
}

/// [`eval_unbudgeted`] against an empty device.
pub fn eval0_unbudgeted(src: &str) -> Result<bool, EvalError> {
    eval_unbudgeted(src, &device("", &[], &[]))
}

/// Asserts that the cost estimate refuses `src`, as Kubernetes does.
pub fn assert_refused(src: &str) {
    match Selector::compile(src) {
        Err(SelectorError::CostLimitExceeded { .. }) => {}
        other => panic!("{src}: expected the cost estimate to refuse it, got {other:?}"),
    }
}

/// Evaluates a replayed library example against `d`: with the budget where the estimate
/// accepts it, else (Kubernetes refuses it in a DRA selector, see
/// `tests/selector_cost.rs`) without, so that its meaning is still checked.
pub fn eval_example(src: &str, d: &Device) -> Result<bool, EvalError> {
    match Selector::compile(src) {
        Err(SelectorError::CostLimitExceeded { .. }) => eval_unbudgeted(src, d),
        _ => eval(src, d),
    }
}
