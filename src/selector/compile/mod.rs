//! Checker and compiler: one pass over the tree that type-checks against the DRA
//! environment, estimates the worst-case cost, resolves attribute names to interned keys
//! and emits the evaluation tree ([`Node`]).
//!
//! Here: the pass itself over leaves, selections, indexes and operators. `node.rs`
//! holds the tree it emits, `literals.rs`, `calls.rs` and `comprehension.rs` the
//! larger constructs, and `cost.rs` the cost model.

use super::ast::{BinaryOp, Expr, ExprKind, UnaryOp};
use super::device::AttributeKey;
use super::error::SelectorError;
use super::types::Ty;
use crate::model::Symbol;
use cost::{UNKNOWN_SIZE, addition_estimate, arithmetic_size, equality_cost, ordering_cost, type_size};
use node::{compare_to_test, operands};

mod calls;
mod comprehension;
mod cost;
mod literals;
mod node;

pub(crate) use node::{Const, Loop, LoopKind, Node, Operand};

/// Upper bounds on device data, from resource.k8s.io/v1 validation (`types.go`): they
/// bound the cost estimate exactly as upstream's `sizeEstimator` does.
pub(crate) mod bounds {
    /// `ResourceSliceMaxAttributesAndCapacitiesPerDevice`.
    pub(crate) const MAX_ATTRIBUTES: u64 = 32;
    /// `DeviceMaxDomainLength`.
    pub(crate) const MAX_DOMAIN_LEN: u64 = 63;
    /// `DeviceMaxIDLength`.
    pub(crate) const MAX_ID_LEN: u64 = 32;
    /// `DeviceAttributeMaxValueLength`, also the element bound of an attribute value.
    pub(crate) const MAX_VALUE_LEN: u64 = 64;
    /// `DriverNameMaxLength`.
    pub(crate) const MAX_DRIVER_LEN: u64 = 63;
}

/// The compiled program.
pub(crate) struct Compiled {
    pub(crate) root: Node,
    pub(crate) ty: Ty,
    pub(crate) max_cost: u64,
    pub(crate) slots: usize,
}

struct Out {
    node: Node,
    ty: Ty,
    /// Worst-case cost.
    cost: u64,
    /// Worst-case size: characters of a string, elements of a list or map.
    size: u64,
    /// Worst-case size of one element, for loop variables.
    elem_size: u64,
}

fn out(node: Node, ty: Ty, cost: u64, size: u64) -> Out {
    Out { node, ty, cost, size, elem_size: bounds::MAX_VALUE_LEN }
}

struct Scope {
    name: String,
    slot: usize,
    ty: Ty,
    size: u64,
}

struct Compiler<'s> {
    src: &'s str,
    scopes: Vec<Scope>,
    slots: usize,
    /// Inside the arguments of a `format` call, where list and map literals may mix
    /// element types (cel-go's string format validator exempts `format` from the
    /// homogeneous-literal check that Kubernetes enables).
    mixed_literals: usize,
    /// What the environment refuses ([`super::Environment::NewExpressions`] with gates
    /// off).
    refuse: super::environment::Refusals,
}

/// Type-checks and compiles a parsed expression.
pub(crate) fn compile(src: &str, expr: &Expr, refuse: super::environment::Refusals) -> Result<Compiled, SelectorError> {
    let mut c = Compiler { src, scopes: Vec::new(), slots: 0, mixed_literals: 0, refuse };
    let o = c.expr(expr)?;
    Ok(Compiled { root: o.node, ty: o.ty, max_cost: o.cost, slots: c.slots })
}

fn add(a: u64, b: u64) -> u64 {
    a.saturating_add(b)
}

fn ceil_tenth(n: u64) -> u64 {
    n.div_ceil(10)
}

impl Compiler<'_> {
    /// A type error at `e`, naming the sub-expression (printed, shortened if long).
    fn type_err(&self, e: &Expr, message: impl Into<String>) -> SelectorError {
        let mut message = message.into();
        if !matches!(e.kind, ExprKind::Ident(_)) {
            let text = e.to_string();
            let short: String = text.chars().take(80).collect();
            let ellipsis = if short.len() < text.len() { "..." } else { "" };
            message = format!("{message} in `{short}{ellipsis}`");
        }
        SelectorError::type_error(self.src, e.pos, message)
    }

    fn lookup(&self, name: &str) -> Option<&Scope> {
        self.scopes.iter().rev().find(|s| s.name == name)
    }

    /// Compiles one node. The recursion of the checker runs through here and the
    /// per-kind helpers, so each keeps its stack frame small: a helper recurses into
    /// its children and hands the results to a separate, non-recursive function (an
    /// unoptimised build does not share stack slots between the arms of a match, and
    /// the tree of an accepted expression may be twice [`super::MAX_NESTING_DEPTH`]
    /// levels deep).
    fn expr(&mut self, e: &Expr) -> Result<Out, SelectorError> {
        match &e.kind {
            ExprKind::Select { operand, field, optional } => self.select_expr(e, operand, field, *optional),
            ExprKind::Index { operand, index, optional } => self.index_expr(e, operand, index, *optional),
            ExprKind::Call { target, function, args } => self.call(e, target.as_deref(), function, args),
            ExprKind::Unary { op, operand } => self.unary_expr(e, *op, operand),
            ExprKind::Binary { op, lhs, rhs } => self.binary_expr(e, *op, lhs, rhs),
            ExprKind::Conditional { cond, then, otherwise } => self.conditional(e, cond, then, otherwise),
            ExprKind::List { items, optional } => self.list_literal(items, optional),
            ExprKind::Map { entries, optional } => self.map_literal(entries, optional),
            _ => self.leaf(e),
        }
    }

    /// Literals and identifiers.
    #[inline(never)]
    fn leaf(&self, e: &Expr) -> Result<Out, SelectorError> {
        Ok(match &e.kind {
            // cel-go `computeExprSize`: a scalar literal has size 1.
            ExprKind::Null => out(Node::Const(Const::Null), Ty::Null, 0, 1),
            ExprKind::Bool(b) => out(Node::Const(Const::Bool(*b)), Ty::Bool, 0, 1),
            ExprKind::Int(v) => out(Node::Const(Const::Int(*v)), Ty::Int, 0, 1),
            ExprKind::Uint(v) => out(Node::Const(Const::Uint(*v)), Ty::Uint, 0, 1),
            ExprKind::Double(v) => out(Node::Const(Const::Double(*v)), Ty::Double, 0, 1),
            ExprKind::String(s) => {
                let n = s.chars().count() as u64;
                out(Node::Const(Const::Str(s.as_str().into())), Ty::String, 0, n)
            }
            ExprKind::Bytes(b) => out(Node::Const(Const::Bytes(b.as_slice().into())), Ty::Bytes, 0, b.len() as u64),
            ExprKind::Ident(name) => {
                if let Some(s) = self.lookup(name) {
                    out(Node::Local(s.slot), s.ty.clone(), 1, s.size)
                } else if name == "device" {
                    out(Node::Device, Ty::Device, 1, 0)
                } else if let Some(t) = type_name(name) {
                    out(Node::Const(Const::Type(t)), Ty::Type, 0, UNKNOWN_SIZE)
                } else {
                    return Err(self.type_err(e, format!("undeclared reference to '{name}'")));
                }
            }
            _ => unreachable!("leaf() is called on literals and identifiers only"),
        })
    }

    #[inline(never)]
    fn select_expr(&mut self, e: &Expr, operand: &Expr, field: &str, optional: bool) -> Result<Out, SelectorError> {
        if let Some(t) = self.qualified_type_name(operand, field, optional) {
            return Ok(out(Node::Const(Const::Type(t)), Ty::Type, 0, UNKNOWN_SIZE));
        }
        let o = self.expr(operand)?;
        if optional || matches!(o.ty, Ty::Optional(_)) {
            self.optional_select(e, o, field)
        } else {
            self.select(e, o, field, false)
        }
    }

    /// `net.IP`, `net.CIDR`, `google.protobuf.Timestamp` and `google.protobuf.Duration`
    /// as type values (for `type(x) == net.IP`), unless `net` or `google` is a variable.
    fn qualified_type_name(&self, operand: &Expr, field: &str, optional: bool) -> Option<&'static str> {
        if optional {
            return None;
        }
        match &operand.kind {
            ExprKind::Ident(ns) if ns == "net" && self.lookup(ns).is_none() => match field {
                "IP" => Some("net.IP"),
                "CIDR" => Some("net.CIDR"),
                _ => None,
            },
            ExprKind::Select { operand: inner, field: pkg, optional: false }
                if pkg == "protobuf"
                    && matches!(&inner.kind, ExprKind::Ident(g) if g == "google" && self.lookup(g).is_none()) =>
            {
                match field {
                    "Timestamp" => Some("google.protobuf.Timestamp"),
                    "Duration" => Some("google.protobuf.Duration"),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    #[inline(never)]
    fn index_expr(&mut self, e: &Expr, operand: &Expr, index: &Expr, optional: bool) -> Result<Out, SelectorError> {
        let o = self.expr(operand)?;
        let i = self.expr(index)?;
        if optional || matches!(o.ty, Ty::Optional(_)) { self.optional_index(e, o, i) } else { self.index(e, o, i) }
    }

    #[inline(never)]
    fn unary_expr(&mut self, e: &Expr, op: UnaryOp, operand: &Expr) -> Result<Out, SelectorError> {
        let o = self.expr(operand)?;
        self.unary(e, op, o)
    }

    #[inline(never)]
    fn unary(&self, e: &Expr, op: UnaryOp, o: Out) -> Result<Out, SelectorError> {
        match op {
            UnaryOp::Not => {
                if !Ty::Bool.accepts(&o.ty) {
                    return Err(self.no_overload(e, "!_", None, &[&o.ty]));
                }
                Ok(out(Node::Not(Box::new(o.node)), Ty::Bool, add(o.cost, 1), 1))
            }
            UnaryOp::Neg => {
                if !matches!(o.ty, Ty::Int | Ty::Double | Ty::Dyn) {
                    return Err(self.no_overload(e, "-_", None, &[&o.ty]));
                }
                let size = type_size(&o.ty);
                Ok(out(Node::Neg(Box::new(o.node)), o.ty, add(o.cost, 1), size))
            }
        }
    }

    #[inline(never)]
    fn binary_expr(&mut self, e: &Expr, op: BinaryOp, lhs: &Expr, rhs: &Expr) -> Result<Out, SelectorError> {
        let l = self.expr(lhs)?;
        let r = self.expr(rhs)?;
        self.binary(e, op, l, r)
    }

    #[inline(never)]
    fn conditional(&mut self, e: &Expr, cond: &Expr, then: &Expr, otherwise: &Expr) -> Result<Out, SelectorError> {
        let c = self.expr(cond)?;
        if !Ty::Bool.accepts(&c.ty) {
            return Err(self.cond_not_bool(cond, &c.ty));
        }
        let t = self.expr(then)?;
        let o = self.expr(otherwise)?;
        self.join_branches(e, c, t, o)
    }

    #[inline(never)]
    fn cond_not_bool(&self, cond: &Expr, ty: &Ty) -> SelectorError {
        self.type_err(cond, format!("the condition of '?:' must be bool, not {ty}"))
    }

    #[inline(never)]
    fn join_branches(&self, e: &Expr, c: Out, t: Out, o: Out) -> Result<Out, SelectorError> {
        let Some(ty) = t.ty.join(&o.ty) else {
            return Err(self.type_err(e, format!("the branches of '?:' have different types: {} and {}", t.ty, o.ty)));
        };
        let size = t.size.max(o.size);
        Ok(out(
            Node::Cond(Box::new(c.node), Box::new(t.node), Box::new(o.node)),
            ty,
            add(c.cost, t.cost.max(o.cost)),
            size,
        ))
    }

    /// The content type of an optional list element or map value (`[?x]`, `{?k: x}`):
    /// `x` must be an optional (or dyn), as cel-go's checker requires.
    fn optional_content(&self, e: &Expr, ty: &Ty) -> Result<Ty, SelectorError> {
        match ty {
            Ty::Optional(t) => Ok((**t).clone()),
            Ty::Dyn => Ok(Ty::Dyn),
            other => Err(self.type_err(e, format!("expected type 'optional_type' but found '{other}'"))),
        }
    }

    fn no_overload(&self, e: &Expr, function: &str, target: Option<&Ty>, args: &[&Ty]) -> SelectorError {
        let args = args.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ");
        let applied = match target {
            Some(t) => format!("{t}.({args})"),
            None => format!("({args})"),
        };
        self.type_err(e, format!("found no matching overload for '{function}' applied to '{applied}'"))
    }

    fn select(&mut self, e: &Expr, o: Out, field: &str, test: bool) -> Result<Out, SelectorError> {
        let cost = add(o.cost, 1);
        // `DRAConsumableCapacity` off in the new-expressions environment: the device type
        // of v1.31 has no such field (upstream `newCompiler`, `deviceTypeV131`).
        if self.refuse.multi_alloc && field == "allowMultipleAllocations" && matches!(o.ty, Ty::Device) {
            return Err(self.type_err(e, format!("undefined field '{field}'")));
        }
        match (&o.ty, &o.node) {
            (Ty::Device, Node::Device) if !test => Ok(match field {
                "driver" => out(Node::Driver, Ty::String, cost, bounds::MAX_DRIVER_LEN),
                "attributes" => Out {
                    elem_size: bounds::MAX_DOMAIN_LEN,
                    ..out(Node::Attributes, Ty::attributes(), cost, bounds::MAX_ATTRIBUTES)
                },
                "capacity" => Out {
                    elem_size: bounds::MAX_DOMAIN_LEN,
                    ..out(Node::Capacity, Ty::capacity(), cost, bounds::MAX_ATTRIBUTES)
                },
                // resource.k8s.io/v1 `Device.AllowMultipleAllocations` (consumable
                // capacity); false when the driver does not set it.
                "allowMultipleAllocations" => out(
                    Node::Select { operand: Box::new(Node::Device), field: field.into(), test: false },
                    Ty::Bool,
                    cost,
                    1,
                ),
                _ => return Err(self.type_err(e, format!("undefined field '{field}'"))),
            }),
            (Ty::Device, _) => {
                if !matches!(field, "driver" | "attributes" | "capacity" | "allowMultipleAllocations") {
                    return Err(self.type_err(e, format!("undefined field '{field}'")));
                }
                let ty = match field {
                    "driver" => Ty::String,
                    "attributes" => Ty::attributes(),
                    "allowMultipleAllocations" => Ty::Bool,
                    _ => Ty::capacity(),
                };
                let ty = if test { Ty::Bool } else { ty };
                Ok(out(Node::Select { operand: Box::new(o.node), field: field.into(), test }, ty, cost, 64))
            }
            (Ty::Map(k, v), _) => {
                if !k.accepts(&Ty::String) {
                    return Err(self.type_err(e, format!("field selection on a map with {k} keys")));
                }
                let v = (**v).clone();
                Ok(Self::map_lookup(o, Node::Const(Const::Str(field.into())), Some(field), v, cost, test))
            }
            (Ty::Dyn, _) => Ok(out(
                Node::Select { operand: Box::new(o.node), field: field.into(), test },
                if test { Ty::Bool } else { Ty::Dyn },
                cost,
                bounds::MAX_VALUE_LEN,
            )),
            (t, _) => Err(self.type_err(e, format!("type '{t}' does not support field selection"))),
        }
    }

    /// A string-keyed lookup (`.field` or `[key]`) on a map-typed value, with the device
    /// fast paths when the key is a constant.
    fn map_lookup(o: Out, key: Node, const_key: Option<&str>, v: Ty, cost: u64, test: bool) -> Out {
        let elem_size = bounds::MAX_ID_LEN;
        match (&o.node, const_key) {
            (Node::Attributes, Some(d)) if !test => {
                let sym = Symbol::intern(d);
                Out { elem_size, ..out(Node::AttrDomain(sym), v, cost, bounds::MAX_ATTRIBUTES) }
            }
            (Node::Capacity, Some(d)) if !test => {
                let sym = Symbol::intern(d);
                Out { elem_size, ..out(Node::CapDomain(sym), v, cost, bounds::MAX_ATTRIBUTES) }
            }
            (Node::Attributes, Some(d)) => out(Node::HasAttrDomain(Symbol::intern(d)), Ty::Bool, cost, 1),
            (Node::Capacity, Some(d)) => out(Node::HasCapDomain(Symbol::intern(d)), Ty::Bool, cost, 1),
            (Node::AttrDomain(dom), Some(id)) => {
                let key = AttributeKey::new(*dom, Symbol::intern(id));
                if test {
                    out(Node::HasAttr(key), Ty::Bool, cost, 1)
                } else {
                    out(Node::Attr(key), v, cost, bounds::MAX_VALUE_LEN)
                }
            }
            (Node::CapDomain(dom), Some(id)) => {
                let key = AttributeKey::new(*dom, Symbol::intern(id));
                if test { out(Node::HasCap(key), Ty::Bool, cost, 1) } else { out(Node::Cap(key), v, cost, 0) }
            }
            _ => {
                let size = match &v {
                    Ty::Map(..) => bounds::MAX_ATTRIBUTES,
                    _ => bounds::MAX_VALUE_LEN,
                };
                let ty = if test { Ty::Bool } else { v };
                let node = match const_key {
                    Some(field) => Node::Select { operand: Box::new(o.node), field: field.into(), test },
                    None => Node::Index { operand: Box::new(o.node), index: Box::new(key) },
                };
                out(node, ty, cost, size)
            }
        }
    }

    /// `o.?field` (cel-go optional types): the field's type wrapped in `optional_type`.
    fn optional_select(&mut self, e: &Expr, o: Out, field: &str) -> Result<Out, SelectorError> {
        let inner = match &o.ty {
            Ty::Optional(t) => (**t).clone(),
            t => t.clone(),
        };
        let ty = match inner {
            Ty::Map(k, v) if k.accepts(&Ty::String) => *v,
            Ty::Dyn => Ty::Dyn,
            Ty::Device => match field {
                "driver" => Ty::String,
                "attributes" => Ty::attributes(),
                "capacity" => Ty::capacity(),
                "allowMultipleAllocations" => Ty::Bool,
                _ => return Err(self.type_err(e, format!("undefined field '{field}'"))),
            },
            t => {
                return Err(self.type_err(e, format!("type '{t}' does not support field selection")));
            }
        };
        let size = match &ty {
            Ty::Map(..) => bounds::MAX_ATTRIBUTES,
            _ => bounds::MAX_VALUE_LEN,
        };
        let node = Node::OptSelect { operand: Box::new(o.node), field: field.into() };
        Ok(out(node, Ty::Optional(Box::new(ty)), add(o.cost, 1), size))
    }

    /// `o[?i]`: the element's type wrapped in `optional_type`.
    fn optional_index(&mut self, e: &Expr, o: Out, i: Out) -> Result<Out, SelectorError> {
        let inner = match &o.ty {
            Ty::Optional(t) => (**t).clone(),
            t => t.clone(),
        };
        let ty = match inner {
            Ty::List(el) if matches!(i.ty, Ty::Int | Ty::Uint | Ty::Dyn) => *el,
            Ty::Map(k, v) if k.accepts(&i.ty) => *v,
            Ty::Dyn => Ty::Dyn,
            t => return Err(self.no_overload(e, "_[?_]", None, &[&t, &i.ty])),
        };
        let size = match &ty {
            Ty::Map(..) => bounds::MAX_ATTRIBUTES,
            _ => bounds::MAX_VALUE_LEN,
        };
        let node = Node::OptIndex { operand: Box::new(o.node), index: Box::new(i.node) };
        Ok(out(node, Ty::Optional(Box::new(ty)), add(add(o.cost, i.cost), 1), size))
    }

    fn index(&mut self, e: &Expr, o: Out, i: Out) -> Result<Out, SelectorError> {
        let cost = add(add(o.cost, i.cost), 1);
        match o.ty.clone() {
            Ty::List(el) => {
                if !matches!(i.ty, Ty::Int | Ty::Uint | Ty::Dyn) {
                    return Err(self.no_overload(e, "_[_]", None, &[&o.ty, &i.ty]));
                }
                let size = o.elem_size;
                Ok(out(Node::Index { operand: Box::new(o.node), index: Box::new(i.node) }, *el, cost, size))
            }
            Ty::Map(k, v) => {
                if !k.accepts(&i.ty) {
                    return Err(self.no_overload(e, "_[_]", None, &[&o.ty, &i.ty]));
                }
                let const_key = match &i.node {
                    Node::Const(Const::Str(s)) => Some(s.to_string()),
                    _ => None,
                };
                Ok(Self::map_lookup(o, i.node, const_key.as_deref(), *v, cost, false))
            }
            Ty::Dyn => Ok(out(
                Node::Index { operand: Box::new(o.node), index: Box::new(i.node) },
                Ty::Dyn,
                cost,
                bounds::MAX_VALUE_LEN,
            )),
            t => Err(self.no_overload(e, "_[_]", None, &[&t, &i.ty])),
        }
    }

    fn binary(&mut self, e: &Expr, op: BinaryOp, l: Out, r: Out) -> Result<Out, SelectorError> {
        let base = add(l.cost, r.cost);
        let fname = op.function_name();
        let bad = |c: &Self| c.no_overload(e, fname, None, &[&l.ty, &r.ty]);
        let numeric = |t: &Ty| matches!(t, Ty::Int | Ty::Uint | Ty::Double | Ty::Dyn);
        match op {
            BinaryOp::And | BinaryOp::Or => {
                if !Ty::Bool.accepts(&l.ty) || !Ty::Bool.accepts(&r.ty) {
                    return Err(bad(self));
                }
                let node = if op == BinaryOp::And {
                    Node::And(Box::new(l.node), Box::new(r.node))
                } else {
                    Node::Or(Box::new(l.node), Box::new(r.node))
                };
                Ok(out(node, Ty::Bool, base, 1))
            }
            BinaryOp::Eq | BinaryOp::Ne => {
                if l.ty.join(&r.ty).is_none() {
                    return Err(bad(self));
                }
                let c = equality_cost(op, &l, &r);
                Ok(out(Node::Binary(op, operands(l.node, r.node)), Ty::Bool, add(base, c), 1))
            }
            BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge => {
                let ok = (numeric(&l.ty) && numeric(&r.ty))
                    || l.ty.join(&r.ty).is_some_and(|t| {
                        matches!(t, Ty::String | Ty::Bytes | Ty::Bool | Ty::Timestamp | Ty::Duration | Ty::Dyn)
                    });
                if !ok {
                    return Err(bad(self));
                }
                let c = ordering_cost(&l, &r);
                if let Some(node) = compare_to_test(op, &l.node, &r.node) {
                    return Ok(out(node, Ty::Bool, add(base, c), 1));
                }
                Ok(out(Node::Binary(op, operands(l.node, r.node)), Ty::Bool, add(base, c), 1))
            }
            BinaryOp::In => {
                let c = match &r.ty {
                    Ty::List(el) if el.accepts(&l.ty) => r.size,
                    Ty::Map(k, _) if k.accepts(&l.ty) => 1,
                    Ty::Dyn => r.size.max(1),
                    _ => return Err(bad(self)),
                };
                let cost = add(base, c);
                if let Node::Const(Const::Str(key)) = &l.node {
                    let fast = match &r.node {
                        Node::Attributes => Some(Node::HasAttrDomain(Symbol::intern(key))),
                        Node::Capacity => Some(Node::HasCapDomain(Symbol::intern(key))),
                        Node::AttrDomain(d) => Some(Node::HasAttr(AttributeKey::new(*d, Symbol::intern(key)))),
                        Node::CapDomain(d) => Some(Node::HasCap(AttributeKey::new(*d, Symbol::intern(key)))),
                        _ => None,
                    };
                    if let Some(node) = fast {
                        return Ok(out(node, Ty::Bool, cost, 1));
                    }
                }
                Ok(out(Node::Binary(op, operands(l.node, r.node)), Ty::Bool, cost, 1))
            }
            BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div | BinaryOp::Rem => {
                // Timestamps and durations: timestamp ± duration, duration + timestamp,
                // timestamp - timestamp, duration ± duration.
                let time = match (op, &l.ty, &r.ty) {
                    (BinaryOp::Add | BinaryOp::Sub, Ty::Timestamp, Ty::Duration)
                    | (BinaryOp::Add, Ty::Duration, Ty::Timestamp) => Some(Ty::Timestamp),
                    (BinaryOp::Sub, Ty::Timestamp, Ty::Timestamp)
                    | (BinaryOp::Add | BinaryOp::Sub, Ty::Duration, Ty::Duration) => Some(Ty::Duration),
                    _ => None,
                };
                if let Some(ty) = time {
                    return Ok(out(Node::Binary(op, operands(l.node, r.node)), ty, add(base, 1), 1));
                }
                let Some(ty) = l.ty.join(&r.ty) else {
                    return Err(bad(self));
                };
                // cel-go's checker: a `dyn` operand beside a number (or, for `+`, a string,
                // bytes or a list) leaves one overload, whose result type is the other
                // operand's; the cost estimate then sees that type, not `dyn`.
                let ty = match (&l.ty, &r.ty) {
                    (Ty::Dyn, t) | (t, Ty::Dyn)
                        if matches!(t, Ty::Int | Ty::Uint | Ty::Double)
                            || (op == BinaryOp::Add && matches!(t, Ty::String | Ty::Bytes | Ty::List(_))) =>
                    {
                        t.clone()
                    }
                    _ => ty,
                };
                let ok = match op {
                    BinaryOp::Add => {
                        matches!(ty, Ty::Int | Ty::Uint | Ty::Double | Ty::String | Ty::Bytes | Ty::List(_) | Ty::Dyn)
                    }
                    BinaryOp::Rem => matches!(ty, Ty::Int | Ty::Uint | Ty::Dyn),
                    _ => matches!(ty, Ty::Int | Ty::Uint | Ty::Double | Ty::Dyn),
                };
                if !ok {
                    return Err(bad(self));
                }
                let (c, size) = if op == BinaryOp::Add {
                    addition_estimate(&l, &r, &ty)
                } else {
                    (1, arithmetic_size(&l.ty, &r.ty, &ty))
                };
                let elem_size = l.elem_size.max(r.elem_size);
                Ok(Out { elem_size, ..out(Node::Binary(op, operands(l.node, r.node)), ty, add(base, c), size) })
            }
        }
    }
}

/// The type denoted by an identifier (`int`, `string`, ...), for `type(x) == int`.
fn type_name(name: &str) -> Option<&'static str> {
    Some(match name {
        "int" => "int",
        "uint" => "uint",
        "double" => "double",
        "bool" => "bool",
        "string" => "string",
        "bytes" => "bytes",
        "list" => "list",
        "map" => "map",
        "null_type" => "null_type",
        "type" => "type",
        "dyn" => "dyn",
        _ => return None,
    })
}
