//! The evaluator: walks the compiled [`Node`] tree against one device.
//!
//! Semantics follow cel-spec `doc/langdef.md`: `&&` and `||` are commutative with
//! respect to errors (`false && error` and `error && false` are both `false`; an error
//! survives only if the other side does not decide the result), `?:` evaluates one
//! branch, integer arithmetic is checked, and values of different types compare unequal
//! (numbers compare across int, uint and double).
//!
//! Here: the walk and the bool fast path. `access.rs` reads device data, maps and
//! lists, `operators.rs` applies binary operators, `literals.rs` builds lists and
//! maps, and `comprehension.rs` runs the loop macros.

use std::rc::Rc;

use smallvec::SmallVec;

use super::ast::BinaryOp;
use super::bigqty::Held;
use super::compile::{Const, Node, Operand};
use super::device::{AttributeValue, Device};
use super::error::EvalErrorKind;
use super::functions::{self, Func};
use super::value::{Value, Ver, any_quantity, equals};

mod access;
mod comprehension;
mod literals;
mod operators;

use access::{contains, index, missing, missing_kind, select_str};

/// Errors travel boxed: a small `Result` keeps the hot path in registers.
pub(crate) type Fault = Box<EvalErrorKind>;

type R<'a> = Result<Value<'a>, Fault>;

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

/// Actual size of a value for the runtime cost of size-dependent functions: cel-go's
/// `traits.Sizer` (`common/types`), which counts a string in code points, bytes in
/// bytes, lists and maps in elements; 1 for anything else (k8s `library/cost.go`
/// `actualSize`).
fn actual_size(v: &Value<'_>) -> u64 {
    match v {
        Value::Str(s) => s.chars().count() as u64,
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
            Func::Replace => functions::replace_runtime_cost(&vals),
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
}
