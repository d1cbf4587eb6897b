//! The evaluator: walks the compiled [`Node`] tree against one device.
//!
//! Semantics follow cel-spec `doc/langdef.md`: `&&` and `||` are commutative with
//! respect to errors (`false && error` and `error && false` are both `false`; an error
//! survives only if the other side does not decide the result), `?:` evaluates one
//! branch, integer arithmetic is checked, and values of different types compare unequal
//! (numbers compare across int, uint and double).

use std::borrow::Cow;
use std::cmp::Ordering;
use std::rc::Rc;

use smallvec::SmallVec;

use super::ast::BinaryOp;
use super::bigqty::Held;
use super::compile::{Const, Loop, LoopKind, Node, Operand};
use super::device::{AttributeKey, AttributeValue, Device};
use super::error::EvalErrorKind;
use super::functions::{self, Func};
use super::value::{Value, Ver, any_quantity, compare, equals};
use crate::model::Symbol;

/// Errors travel boxed: a small `Result` keeps the hot path in registers.
pub(crate) type Fault = Box<EvalErrorKind>;

type R<'a> = Result<Value<'a>, Fault>;

/// Adds one entry of a map literal; a key already present is an error, as in cel-go.
fn push_map_entry<'a>(entries: &mut Vec<(Value<'a>, Value<'a>)>, k: Value<'a>, v: Value<'a>) -> Result<(), Fault> {
    if entries.iter().any(|(x, _)| equals(x, &k)) {
        return Err(EvalErrorKind::InvalidArgument {
            function: "{}",
            message: format!("duplicate map key {}", display_key(&k)),
        }
        .into());
    }
    entries.push((k, v));
    Ok(())
}

/// The operand of `?.` / `[?]`: the value inside an optional (`None` when it is
/// empty, which makes the whole selection empty), any other value as it is.
fn optional_operand(o: Value<'_>) -> Option<Value<'_>> {
    match o {
        Value::Optional(None) => None,
        Value::Optional(Some(v)) => Some((*v).clone()),
        other => Some(other),
    }
}

/// A bool, or an error parked in [`Ctx::fault`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tri {
    False,
    True,
    Err,
}

impl From<bool> for Tri {
    #[inline]
    fn from(b: bool) -> Tri {
        if b { Tri::True } else { Tri::False }
    }
}

/// Per-evaluation state: the device, loop/bind variables and the running cost.
pub(crate) struct Ctx<'a> {
    /// The error of the last [`Tri::Err`].
    pub(crate) fault: Option<EvalErrorKind>,
    pub(crate) device: &'a Device,
    pub(crate) locals: SmallVec<[Value<'a>; 2]>,
    pub(crate) cost: u64,
    pub(crate) limit: u64,
}

#[expect(clippy::unnecessary_box_returns, reason = "errors travel boxed to keep results small")]
fn overload(function: &'static str, args: &[&Value<'_>]) -> Fault {
    Box::new(EvalErrorKind::NoSuchOverload {
        function,
        args: args.iter().map(|v| v.type_name()).collect::<Vec<_>>().join(", "),
    })
}

fn attr_value(v: &AttributeValue) -> Value<'_> {
    Value::from_attribute(v)
}

#[expect(clippy::unnecessary_box_returns, reason = "errors travel boxed to keep results small")]
fn missing(key: AttributeKey, capacity: bool) -> Fault {
    Box::new(missing_kind(key, capacity))
}

/// The error of a missing compiled attribute; built without allocating, so a missing
/// attribute whose error is absorbed by `||`/`&&` costs no allocation either.
fn missing_kind(key: AttributeKey, capacity: bool) -> EvalErrorKind {
    EvalErrorKind::NoSuchKey { key: Cow::Borrowed(key.id().as_str()), domain: Some(key.domain().as_str()), capacity }
}

#[expect(clippy::unnecessary_box_returns, reason = "errors travel boxed to keep results small")]
fn missing_named(key: &str, domain: Option<Symbol>, capacity: bool) -> Fault {
    Box::new(EvalErrorKind::NoSuchKey {
        key: Cow::Owned(key.to_owned()),
        domain: Some(domain.map_or("", Symbol::as_str)),
        capacity,
    })
}

fn lookup_attr<'a>(d: &'a Device, dom: Option<Symbol>, id: &str, test: bool) -> R<'a> {
    let found = dom.zip(Symbol::lookup(id)).and_then(|(dom, id)| d.attribute(AttributeKey::new(dom, id)));
    match (found, test) {
        (f, true) => Ok(Value::Bool(f.is_some())),
        (Some(v), false) => Ok(attr_value(v)),
        (None, false) => Err(missing_named(id, dom, false)),
    }
}

fn lookup_cap<'a>(d: &'a Device, dom: Option<Symbol>, id: &str, test: bool) -> R<'a> {
    let found = dom.zip(Symbol::lookup(id)).and_then(|(dom, id)| d.capacity(AttributeKey::new(dom, id)));
    match (found, test) {
        (f, true) => Ok(Value::Bool(f.is_some())),
        (Some(q), false) => Ok(Value::Quantity(*q, Held::Canonical)),
        (None, false) => Err(missing_named(id, dom, true)),
    }
}

/// `container.field` / `container[key]` with a string key, or a `has()` test.
fn select_str<'a>(container: &Value<'a>, key: &str, test: bool) -> R<'a> {
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

fn index<'a>(container: &Value<'a>, key: &Value<'a>) -> R<'a> {
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

fn display_key(k: &Value<'_>) -> String {
    match k {
        Value::Str(s) => s.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Uint(u) => format!("{u}u"),
        Value::Bool(b) => b.to_string(),
        other => other.type_name().to_owned(),
    }
}

fn contains<'a>(container: &Value<'a>, needle: &Value<'a>) -> Result<bool, Fault> {
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

fn arith<'a>(op: BinaryOp, l: &Value<'a>, r: &Value<'a>) -> R<'a> {
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
            Value::Timestamp(super::time::check_timestamp(v).map_err(|_| ts_overflow())?)
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

fn const_value(c: &Const) -> Value<'_> {
    match c {
        Const::Null => Value::Null,
        Const::Type(t) => Value::Type(t),
        Const::Bool(b) => Value::Bool(*b),
        Const::Int(i) => Value::Int(*i),
        Const::Uint(u) => Value::Uint(*u),
        Const::Double(d) => Value::Double(*d),
        Const::Str(s) => Value::str(s),
        Const::Bytes(b) => Value::Bytes(Rc::from(&b[..])),
        Const::Quantity(q, held, _) => Value::Quantity(*q, *held),
        Const::Semver(v, _) => Value::Semver(Ver::Borrowed(v)),
    }
}

/// What evaluating a constant costs: nothing, except the folded parser calls.
fn const_cost(c: &Const) -> u64 {
    match c {
        Const::Quantity(_, _, cost) | Const::Semver(_, cost) => u64::from(*cost),
        _ => 0,
    }
}

/// Actual size of a value for the runtime cost of size-dependent functions.
fn actual_size(v: &Value<'_>) -> u64 {
    match v {
        Value::Str(s) => s.len() as u64,
        Value::Bytes(b) => b.len() as u64,
        Value::List(l) => l.len() as u64,
        Value::Map(m) => m.len() as u64,
        _ => 1,
    }
}

impl<'a> Ctx<'a> {
    fn charge(&mut self, c: u64) -> Result<(), Fault> {
        self.cost = self.cost.saturating_add(c);
        if self.cost > self.limit {
            return Err(EvalErrorKind::CostLimitExceeded { limit: self.limit }.into());
        }
        Ok(())
    }

    fn set_local(&mut self, slot: usize, v: Value<'a>) {
        while self.locals.len() <= slot {
            self.locals.push(Value::Null);
        }
        self.locals[slot] = v;
    }

    pub(crate) fn eval(&mut self, n: &'a Node) -> R<'a> {
        match n {
            Node::Const(c) => {
                self.cost += const_cost(c);
                Ok(const_value(c))
            }
            Node::Local(slot) => {
                self.cost += 1;
                Ok(self.locals.get(*slot).cloned().unwrap_or(Value::Null))
            }
            Node::Device => {
                self.cost += 1;
                Ok(Value::Device(self.device))
            }
            Node::Driver => {
                self.cost += 2;
                Ok(Value::str(self.device.driver()))
            }
            Node::Attributes => {
                self.cost += 2;
                Ok(Value::Attributes(self.device))
            }
            Node::Capacity => {
                self.cost += 2;
                Ok(Value::Capacity(self.device))
            }
            Node::AttrDomain(dom) => {
                self.cost += 3;
                Ok(Value::AttrDomain(self.device, Some(*dom)))
            }
            Node::CapDomain(dom) => {
                self.cost += 3;
                Ok(Value::CapDomain(self.device, Some(*dom)))
            }
            Node::Attr(key) => {
                self.cost += 4;
                self.device.attribute(*key).map(attr_value).ok_or_else(|| missing(*key, false))
            }
            Node::Cap(key) => {
                self.cost += 4;
                self.device
                    .capacity(*key)
                    .map(|q| Value::Quantity(*q, Held::Canonical))
                    .ok_or_else(|| missing(*key, true))
            }
            Node::HasAttr(key) => {
                self.cost += 3;
                Ok(Value::Bool(self.device.attribute(*key).is_some()))
            }
            Node::HasCap(key) => {
                self.cost += 3;
                Ok(Value::Bool(self.device.capacity(*key).is_some()))
            }
            Node::HasAttrDomain(dom) => {
                self.cost += 3;
                Ok(Value::Bool(self.device.has_attribute_domain(*dom)))
            }
            Node::HasCapDomain(dom) => {
                self.cost += 3;
                Ok(Value::Bool(self.device.has_capacity_domain(*dom)))
            }
            Node::Select { operand, field, test } => self.eval_select(operand, field, *test),
            Node::OptSelect { operand, field } => self.eval_opt_select(operand, field),
            Node::OptIndex { operand, index: key } => self.eval_opt_index(operand, key),
            Node::Index { operand, index: key } => self.eval_index(operand, key),
            Node::Call { f, args, regex } => self.eval_call(*f, args, regex.as_deref()),
            Node::Not(x) => self.eval_not(x),
            Node::Neg(x) => self.eval_neg(x),
            Node::And(..) | Node::Or(..) | Node::OrdTest { .. } => self.eval_bool(n).map(Value::Bool),
            Node::Cond(c, t, e) => self.eval_cond(c, t, e),
            Node::Binary(op, ops) => self.eval_binary(*op, ops),
            Node::List(items) => self.eval_list(items),
            Node::Map(entries) => self.eval_map(entries),
            Node::OptList(items) => self.eval_opt_list(items),
            Node::OptMap(entries) => self.eval_opt_map(entries),
            Node::Loop(l) => self.eval_loop(l),
            Node::Bind { slot, init, body } => self.eval_bind(*slot, init, body),
        }
    }

    // The arms of `eval`, each in its own function so that the frame of `eval`, which
    // every level of a deeply nested expression puts on the stack, stays small in an
    // unoptimised build. The hot ones may still be inlined by an optimised build.

    #[inline(never)]
    fn eval_select(&mut self, operand: &'a Node, field: &str, test: bool) -> R<'a> {
        let o = self.eval(operand)?;
        self.cost += 1;
        select_str(&o, field, test)
    }

    #[inline(never)]
    fn eval_opt_select(&mut self, operand: &'a Node, field: &str) -> R<'a> {
        let o = self.eval(operand)?;
        self.cost += 1;
        let Some(container) = optional_operand(o) else { return Ok(Value::Optional(None)) };
        match select_str(&container, field, true)? {
            Value::Bool(true) => Ok(Value::Optional(Some(Rc::new(select_str(&container, field, false)?)))),
            _ => Ok(Value::Optional(None)),
        }
    }

    #[inline(never)]
    fn eval_opt_index(&mut self, operand: &'a Node, key: &'a Node) -> R<'a> {
        let o = self.eval(operand)?;
        let k = self.eval(key)?;
        self.cost += 1;
        let Some(container) = optional_operand(o) else { return Ok(Value::Optional(None)) };
        let present = match &container {
            Value::List(_) => index(&container, &k).is_ok(),
            _ => contains(&container, &k)?,
        };
        if present { Ok(Value::Optional(Some(Rc::new(index(&container, &k)?)))) } else { Ok(Value::Optional(None)) }
    }

    #[inline(never)]
    fn eval_index(&mut self, operand: &'a Node, key: &'a Node) -> R<'a> {
        let o = self.eval(operand)?;
        let k = self.eval(key)?;
        self.cost += 1;
        index(&o, &k)
    }

    #[inline]
    fn eval_not(&mut self, x: &'a Node) -> R<'a> {
        let v = self.eval(x)?;
        self.cost += 1;
        match v {
            Value::Bool(b) => Ok(Value::Bool(!b)),
            other => Err(overload("!_", &[&other])),
        }
    }

    #[inline(never)]
    fn eval_neg(&mut self, x: &'a Node) -> R<'a> {
        let v = self.eval(x)?;
        self.cost += 1;
        match v {
            Value::Int(i) => i.checked_neg().map(Value::Int).ok_or(EvalErrorKind::Overflow("-_").into()),
            Value::Double(d) => Ok(Value::Double(-d)),
            other => Err(overload("-_", &[&other])),
        }
    }

    #[inline]
    fn eval_cond(&mut self, c: &'a Node, t: &'a Node, e: &'a Node) -> R<'a> {
        match self.eval(c)? {
            Value::Bool(true) => self.eval(t),
            Value::Bool(false) => self.eval(e),
            other => Err(overload("_?_:_", &[&other])),
        }
    }

    #[inline]
    fn eval_binary(&mut self, op: BinaryOp, ops: &'a (Operand, Operand)) -> R<'a> {
        let l = self.operand(&ops.0)?;
        let r = self.operand(&ops.1)?;
        self.binary(op, &l, &r)
    }

    #[inline(never)]
    fn eval_bind(&mut self, slot: usize, init: &'a Node, body: &'a Node) -> R<'a> {
        self.cost += 10;
        let v = self.eval(init)?;
        self.set_local(slot, v);
        self.eval(body)
    }

    #[inline]
    fn operand(&mut self, o: &'a Operand) -> R<'a> {
        match o {
            Operand::Const(c) => {
                self.cost += const_cost(c);
                Ok(const_value(c))
            }
            Operand::Attr(key) => {
                self.cost += 4;
                self.device.attribute(*key).map(attr_value).ok_or_else(|| missing(*key, false))
            }
            Operand::Cap(key) => {
                self.cost += 4;
                self.device
                    .capacity(*key)
                    .map(|q| Value::Quantity(*q, Held::Canonical))
                    .ok_or_else(|| missing(*key, true))
            }
            Operand::Node(n) => self.eval(n),
        }
    }

    /// CEL's commutative `&&`/`||`: `decides` (false for `&&`, true for `||`) on
    /// either side wins even over an error on the other; with `passes` on the left
    /// the right side is the answer; otherwise the left side's error stands.
    #[inline]
    fn logical(&mut self, a: &'a Node, b: &'a Node, op: &'static str, decides: Tri, passes: Tri) -> Tri {
        let l = self.test(a, op);
        if l == decides {
            return decides;
        }
        let saved = if l == Tri::Err { self.fault.take() } else { None };
        let r = self.test(b, op);
        if r == decides {
            return decides;
        }
        if l == passes {
            return r;
        }
        if saved.is_some() {
            self.fault = saved;
        }
        Tri::Err
    }

    /// Evaluates a node that must produce a bool. Returns a three-state answer in a
    /// register; on [`Tri::Err`] the error is in `self.fault`. `op` names the operator
    /// that needed the bool, for the "no such overload" error of a non-bool value.
    #[inline]
    fn test(&mut self, n: &'a Node, op: &'static str) -> Tri {
        match n {
            Node::And(a, b) => self.logical(a, b, "_&&_", Tri::False, Tri::True),
            Node::Or(a, b) => self.logical(a, b, "_||_", Tri::True, Tri::False),
            Node::OrdTest { f, operands, accept, extra_cost } => {
                self.cost += extra_cost;
                let o = match (&operands.0, &operands.1) {
                    (Operand::Cap(k), Operand::Const(Const::Quantity(q, _, parse))) => {
                        self.cost += 4 + u64::from(*parse);
                        match self.device.capacity(*k) {
                            Some(c) => c.cmp(q),
                            None => return self.fail(missing_kind(*k, true)),
                        }
                    }
                    (Operand::Attr(k), Operand::Const(Const::Semver(v, parse))) => {
                        self.cost += 4 + u64::from(*parse);
                        match self.device.attribute(*k) {
                            Some(AttributeValue::Version(a)) => a.cmp(v),
                            Some(other) => {
                                let l = attr_value(other);
                                let r = Value::Semver(Ver::Borrowed(v));
                                return self.fail(*overload(f.name(), &[&l, &r]));
                            }
                            None => return self.fail(missing_kind(*k, false)),
                        }
                    }
                    (a, b) => {
                        let l = match self.operand(a) {
                            Ok(v) => v,
                            Err(e) => return self.fail(*e),
                        };
                        let r = match self.operand(b) {
                            Ok(v) => v,
                            Err(e) => return self.fail(*e),
                        };
                        match (&l, &r) {
                            (Value::Quantity(x, _), Value::Quantity(y, _)) => x.cmp(y),
                            (Value::Semver(x), Value::Semver(y)) => (**x).cmp(&**y),
                            _ => match (any_quantity(&l), any_quantity(&r)) {
                                (Some(x), Some(y)) => x.cmp(y),
                                _ => return self.fail(*overload(f.name(), &[&l, &r])),
                            },
                        }
                    }
                };
                Tri::from(accept[(o as i8 + 1) as usize])
            }
            Node::Binary(cmp @ (BinaryOp::Eq | BinaryOp::Ne), ops) => {
                if let (Operand::Node(Node::Driver), Operand::Const(Const::Str(y))) = (&ops.0, &ops.1) {
                    let x = self.device.driver();
                    self.cost += 2 + (x.len().min(y.len()) as u64).div_ceil(10);
                    return Tri::from((x == &**y) == (*cmp == BinaryOp::Eq));
                }
                if let (Operand::Attr(k), Operand::Const(c)) = (&ops.0, &ops.1) {
                    self.cost += 4;
                    let Some(a) = self.device.attribute(*k) else {
                        return self.fail(missing_kind(*k, false));
                    };
                    let eq = if let (AttributeValue::String(x), Const::Str(y)) = (a, c) {
                        self.cost += (x.len().min(y.len()) as u64).div_ceil(10);
                        **x == **y
                    } else {
                        self.cost += 1;
                        equals(&attr_value(a), &const_value(c))
                    };
                    return Tri::from(eq == (*cmp == BinaryOp::Eq));
                }
                self.test_value(n, op)
            }
            Node::HasAttr(key) => {
                self.cost += 3;
                Tri::from(self.device.attribute(*key).is_some())
            }
            Node::HasCap(key) => {
                self.cost += 3;
                Tri::from(self.device.capacity(*key).is_some())
            }
            _ => self.test_value(n, op),
        }
    }

    #[cold]
    fn fail(&mut self, e: EvalErrorKind) -> Tri {
        self.fault = Some(e);
        Tri::Err
    }

    fn test_value(&mut self, n: &'a Node, op: &'static str) -> Tri {
        match self.eval(n) {
            Ok(Value::Bool(b)) => Tri::from(b),
            Ok(other) => self.fail(*overload(op, &[&other])),
            Err(e) => self.fail(*e),
        }
    }

    /// Evaluates a bool-valued node (`&&`, `||`, comparisons, ordering tests).
    pub(crate) fn eval_bool(&mut self, n: &'a Node) -> Result<bool, Fault> {
        match self.test(n, "_&&_") {
            Tri::True => Ok(true),
            Tri::False => Ok(false),
            Tri::Err => Err(Box::new(self.fault.take().unwrap_or_else(|| *overload("_&&_", &[])))),
        }
    }

    #[inline(never)]
    fn eval_call(&mut self, f: Func, args: &'a [Node], regex: Option<&regex::Regex>) -> R<'a> {
        let mut vals: SmallVec<[Value<'a>; 3]> = SmallVec::new();
        for a in args {
            vals.push(self.eval(a)?);
        }
        let cost = match f {
            // `validate`: upstream's `CallCost` looks for a `cel.Format` value where the
            // runtime holds a `*cel.Format`, so the call costs cel-go's default of 1.
            // k8s `CallCost`: the parsers traverse their string.
            Func::Quantity | Func::Semver | Func::IsQuantity | Func::IsSemver => match vals.first() {
                Some(Value::Str(s)) => functions::string_traversal_cost(s),
                _ => 1,
            },
            Func::IsGreaterThan
            | Func::IsLessThan
            | Func::CompareTo
            | Func::Validate
            // DRA's estimator prices `includes` at compile time only.
            | Func::Includes => 1,
            Func::Slice
            | Func::Flatten
            | Func::Sort
            | Func::SortByKeys
            | Func::ListsRange
            | Func::Reverse
            | Func::Distinct => functions::list_ext_cost(f, &vals),
            Func::Ip
            | Func::IsIp
            | Func::IpIsCanonical
            | Func::Cidr
            | Func::IsCidr
            | Func::ContainsIp
            | Func::ContainsCidr => functions::net_runtime_cost(f, &vals),
            // cel-go `interpreter/runtimecost.go`: only the conversions between strings
            // and bytes traverse their argument.
            Func::ToString if !matches!(vals.first(), Some(Value::Bytes(_))) => 1,
            Func::ToBytes if !matches!(vals.first(), Some(Value::Str(_))) => 1,
            _ => {
                let sizes: SmallVec<[u64; 3]> = vals.iter().map(actual_size).collect();
                let shape =
                    functions::Shape { list_receiver: matches!(vals.first(), Some(Value::List(_))), str_elem: None };
                functions::call_cost(f, &sizes, shape)
            }
        };
        self.charge(cost)?;
        functions::call(f, f.name(), &vals, regex).map_err(Box::new)
    }

    #[inline(never)]
    fn eval_list(&mut self, items: &'a [Node]) -> R<'a> {
        self.cost += 10;
        let mut v = Vec::with_capacity(items.len());
        for i in items {
            v.push(self.eval(i)?);
        }
        Ok(Value::List(Rc::new(v)))
    }

    #[inline(never)]
    fn eval_map(&mut self, entries: &'a [(Node, Node)]) -> R<'a> {
        self.cost += 30;
        let mut v: Vec<(Value<'a>, Value<'a>)> = Vec::with_capacity(entries.len());
        for (k, val) in entries {
            let k = self.eval(k)?;
            let val = self.eval(val)?;
            push_map_entry(&mut v, k, val)?;
        }
        Ok(Value::Map(Rc::new(v)))
    }

    /// `[a, ?b]`: an optional element contributes its value, or nothing when empty; a
    /// non-optional value there is an error (cel-go: "cannot initialize optional list
    /// element from non-optional value").
    #[inline(never)]
    fn eval_opt_list(&mut self, items: &'a [(Node, bool)]) -> R<'a> {
        self.cost += 10;
        let mut v = Vec::with_capacity(items.len());
        for (i, optional) in items {
            let x = self.eval(i)?;
            if !*optional {
                v.push(x);
                continue;
            }
            match x {
                Value::Optional(Some(inner)) => v.push((*inner).clone()),
                Value::Optional(None) => {}
                other => {
                    return Err(EvalErrorKind::InvalidArgument {
                        function: "[?_]",
                        message: format!(
                            "cannot initialize optional list element from non-optional value of type {}",
                            other.type_name()
                        ),
                    }
                    .into());
                }
            }
        }
        Ok(Value::List(Rc::new(v)))
    }

    /// `{?k: v}`: the entry exists only when the optional `v` holds a value.
    #[inline(never)]
    fn eval_opt_map(&mut self, entries: &'a [(Node, Node, bool)]) -> R<'a> {
        self.cost += 30;
        let mut v: Vec<(Value<'a>, Value<'a>)> = Vec::with_capacity(entries.len());
        for (k, val, optional) in entries {
            let k = self.eval(k)?;
            let val = match (self.eval(val)?, *optional) {
                (x, false) => x,
                (Value::Optional(Some(inner)), true) => (*inner).clone(),
                (Value::Optional(None), true) => continue,
                (other, true) => {
                    return Err(EvalErrorKind::InvalidArgument {
                        function: "{?_: _}",
                        message: format!(
                            "cannot initialize optional entry '{}' from non-optional value of type {}",
                            display_key(&k),
                            other.type_name()
                        ),
                    }
                    .into());
                }
            };
            push_map_entry(&mut v, k, val)?;
        }
        Ok(Value::Map(Rc::new(v)))
    }

    fn binary(&mut self, op: BinaryOp, l: &Value<'a>, r: &Value<'a>) -> R<'a> {
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

    #[inline(never)]
    fn eval_loop(&mut self, lp: &'a Loop) -> R<'a> {
        let range = self.eval(&lp.range)?;
        let items = if lp.var2.is_some() {
            range.iter_pairs()
        } else {
            range.iter_items().map(|v| v.into_iter().map(|x| (x, Value::Null)).collect())
        };
        let Some(items) = items else {
            return Err(EvalErrorKind::InvalidArgument {
                function: "comprehension",
                message: format!("got '{}', expected iterable type", range.type_name()),
            }
            .into());
        };
        // cel-go's run-time cost of the expanded macro (`parser/macro.go`,
        // `ext/comprehensions.go`): the accumulator's initial value (`[]` 10, `{}` 30,
        // a literal 0), per element the loop condition (`@not_strictly_false(accu)` 2 for
        // `all`, with a `!` 3 for `exists`, none for the others) and the step that was
        // taken (a conditional step costs only the branch it evaluates), and the result
        // (`accu` 1, `accu == 1` 2 for `exists_one`). The estimate in `compile.rs` is
        // the same with every step at its dearest.
        let (init, condition) = match lp.kind {
            LoopKind::All => (0, 2),
            LoopKind::Exists => (0, 3),
            LoopKind::ExistsOne => (0, 0),
            LoopKind::Map | LoopKind::MapFilter | LoopKind::Filter => (10, 0),
            LoopKind::TransformMap
            | LoopKind::TransformMapFilter
            | LoopKind::TransformMapEntry
            | LoopKind::TransformMapEntryFilter => (30, 0),
        };
        // What appending one result costs: `accu + [x]` (ident, list, `+`, plus the
        // element's own ident for `filter`) or `cel.@mapInsert(accu, k, v)`.
        let append = match lp.kind {
            LoopKind::Filter => 13,
            LoopKind::Map | LoopKind::MapFilter => 12,
            LoopKind::TransformMap | LoopKind::TransformMapFilter => 3,
            _ => 2,
        };
        self.charge(init)?;
        let mut first_err: Option<Fault> = None;
        let mut count = 0u64;
        let mut acc: Vec<Value<'a>> = Vec::new();
        let mut entries: Vec<(Value<'a>, Value<'a>)> = Vec::new();
        let len = items.len();
        for (index, (item, value)) in items.into_iter().enumerate() {
            self.set_local(lp.var, item.clone());
            if let Some(slot) = lp.var2 {
                self.set_local(slot, value);
            }
            self.charge(condition)?;
            if matches!(lp.kind, LoopKind::All | LoopKind::Exists) {
                // The step `accu && p` (`accu || p`) reads the accumulator.
                self.charge(1)?;
            }
            let pred = lp.pred.as_ref().map(|p| self.eval(p));
            match lp.kind {
                LoopKind::All | LoopKind::Exists => {
                    let decisive = lp.kind == LoopKind::Exists;
                    match pred {
                        Some(Ok(Value::Bool(b))) if b == decisive => {
                            // The next element's loop condition ends the loop.
                            if index + 1 < len {
                                self.charge(condition)?;
                            }
                            self.charge(1)?;
                            return Ok(Value::Bool(decisive));
                        }
                        Some(Ok(Value::Bool(_))) | None => {}
                        Some(Ok(other)) => {
                            first_err.get_or_insert_with(|| overload("_&&_", &[&other]));
                        }
                        Some(Err(e)) => {
                            first_err.get_or_insert(e);
                        }
                    }
                }
                LoopKind::ExistsOne => match pred {
                    Some(Ok(Value::Bool(true))) => {
                        self.charge(2)?;
                        count += 1;
                    }
                    Some(Ok(Value::Bool(false))) | None => self.charge(1)?,
                    Some(Ok(other)) => return Err(overload("_?_:_", &[&other])),
                    Some(Err(e)) => return Err(e),
                },
                LoopKind::Filter
                | LoopKind::MapFilter
                | LoopKind::Map
                | LoopKind::TransformMap
                | LoopKind::TransformMapFilter
                | LoopKind::TransformMapEntry
                | LoopKind::TransformMapEntryFilter => {
                    let keep = match pred {
                        None => true,
                        Some(Ok(Value::Bool(b))) => b,
                        Some(Ok(other)) => return Err(overload("_?_:_", &[&other])),
                        Some(Err(e)) => return Err(e),
                    };
                    // A filtered-out element evaluates only the `accu` branch.
                    self.charge(if keep { append } else { 1 })?;
                    if keep {
                        let v = match &lp.transform {
                            Some(t) => self.eval(t)?,
                            None => item.clone(),
                        };
                        if matches!(lp.kind, LoopKind::TransformMapEntry | LoopKind::TransformMapEntryFilter) {
                            // cel-go's `@mapInsert(map, map)`: every entry, no key twice.
                            let new = if matches!(v, Value::List(_)) { None } else { v.iter_pairs() };
                            let Some(new) = new else {
                                return Err(overload("cel.@mapInsert", &[&v]));
                            };
                            for (k, x) in new {
                                if entries.iter().any(|(e, _)| equals(e, &k)) {
                                    return Err(EvalErrorKind::InvalidArgument {
                                        function: "transformMapEntry",
                                        message: format!("insert failed: key {} already exists", display_key(&k)),
                                    }
                                    .into());
                                }
                                entries.push((k, x));
                            }
                        } else if matches!(lp.kind, LoopKind::TransformMap | LoopKind::TransformMapFilter) {
                            entries.push((item, v));
                        } else {
                            acc.push(v);
                        }
                    }
                }
            }
        }
        self.charge(if lp.kind == LoopKind::ExistsOne { 2 } else { 1 })?;
        match lp.kind {
            LoopKind::All | LoopKind::Exists => match first_err {
                Some(e) => Err(e),
                None => Ok(Value::Bool(lp.kind == LoopKind::All)),
            },
            LoopKind::ExistsOne => Ok(Value::Bool(count == 1)),
            LoopKind::TransformMap
            | LoopKind::TransformMapFilter
            | LoopKind::TransformMapEntry
            | LoopKind::TransformMapEntryFilter => Ok(Value::Map(Rc::new(entries))),
            _ => Ok(Value::List(Rc::new(acc))),
        }
    }
}
