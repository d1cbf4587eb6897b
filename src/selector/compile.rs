//! Checker and compiler: one pass over the tree that type-checks against the DRA
//! environment, estimates the worst-case cost, resolves attribute names to interned keys
//! and emits the evaluation tree ([`Node`]).

use std::sync::Arc;

use regex::Regex;

use super::ast::{BinaryOp, Expr, ExprKind, UnaryOp};
use super::bigqty::Held;
use super::device::AttributeKey;
use super::error::SelectorError;
use super::functions::{self, Func, compile_regex};
use super::semver::Semver;
use super::types::Ty;
use crate::model::{Quantity, Symbol};

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

/// A constant in the evaluation tree.
#[derive(Debug, Clone)]
pub(crate) enum Const {
    Null,
    Type(&'static str),
    Bool(bool),
    Int(i64),
    Uint(u64),
    Double(f64),
    Str(Box<str>),
    Bytes(Box<[u8]>),
    /// A folded `quantity()` call: the value and what evaluating the call costs
    /// (upstream evaluates it for every device).
    Quantity(Quantity, Held, u32),
    /// A folded `semver()` call and what evaluating it costs.
    Semver(Box<Semver>, u32),
}

/// What a comprehension macro computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LoopKind {
    All,
    Exists,
    ExistsOne,
    Map,
    Filter,
    MapFilter,
    /// `transformMap(k, v, t)`
    TransformMap,
    /// `transformMap(k, v, filter, t)`
    TransformMapFilter,
    /// `transformMapEntry(k, v, {key: value})`: the transform yields map entries.
    TransformMapEntry,
    /// `transformMapEntry(k, v, filter, {key: value})`
    TransformMapEntryFilter,
}

/// A comprehension macro, evaluated natively.
#[derive(Debug)]
pub(crate) struct Loop {
    pub(crate) kind: LoopKind,
    pub(crate) range: Node,
    pub(crate) var: usize,
    /// The second variable of a two-variable comprehension (cel-go
    /// `ext.TwoVarComprehensions`): the value, with `var` the index or key.
    pub(crate) var2: Option<usize>,
    /// The predicate (`all`, `exists`, `exists_one`, `filter`, the filter of a 3-argument `map`).
    pub(crate) pred: Option<Node>,
    /// The transform (map).
    pub(crate) transform: Option<Node>,
}

/// The evaluation tree.
#[derive(Debug)]
pub(crate) enum Node {
    Const(Const),
    Local(usize),
    Device,
    /// `device.driver`
    Driver,
    /// `device.attributes`
    Attributes,
    /// `device.capacity`
    Capacity,
    /// `device.attributes["domain"]`
    AttrDomain(Symbol),
    /// `device.capacity["domain"]`
    CapDomain(Symbol),
    /// `device.attributes["domain"].id` (or `["id"]`): one integer-keyed lookup.
    Attr(AttributeKey),
    /// `device.capacity["domain"].id`
    Cap(AttributeKey),
    /// `has(device.attributes["d"].id)` or `"id" in device.attributes["d"]`
    HasAttr(AttributeKey),
    /// Same for capacity.
    HasCap(AttributeKey),
    /// `"d" in device.attributes`
    HasAttrDomain(Symbol),
    /// `"d" in device.capacity`
    HasCapDomain(Symbol),
    Select {
        operand: Box<Node>,
        field: Box<str>,
        test: bool,
    },
    /// `operand.?field`, or a selection on an optional value: `optional.none()` when
    /// the operand is none or lacks the field.
    OptSelect {
        operand: Box<Node>,
        field: Box<str>,
    },
    /// `operand[?index]`, or an index into an optional value.
    OptIndex {
        operand: Box<Node>,
        index: Box<Node>,
    },
    Index {
        operand: Box<Node>,
        index: Box<Node>,
    },
    Call {
        f: Func,
        args: Box<[Node]>,
        regex: Option<Arc<Regex>>,
    },
    Not(Box<Node>),
    Neg(Box<Node>),
    And(Box<Node>, Box<Node>),
    Or(Box<Node>, Box<Node>),
    Cond(Box<Node>, Box<Node>, Box<Node>),
    Binary(BinaryOp, Box<(Operand, Operand)>),
    /// `a.compareTo(b) OP k`, `a.isGreaterThan(b)`, `a.isLessThan(b)` on quantities or
    /// versions: true when the ordering of `a` against `b` is accepted
    /// (`accept[0]` for less, `[1]` equal, `[2]` greater).
    OrdTest {
        f: Func,
        operands: Box<(Operand, Operand)>,
        accept: [bool; 3],
        extra_cost: u64,
    },
    List(Box<[Node]>),
    Map(Box<[(Node, Node)]>),
    /// A list literal with optional elements (`[a, ?b]`): the flag marks an optional
    /// element, included only when it holds a value.
    OptList(Box<[(Node, bool)]>),
    /// A map literal with optional entries (`{?k: v}`).
    OptMap(Box<[(Node, Node, bool)]>),
    Loop(Box<Loop>),
    Bind {
        slot: usize,
        init: Box<Node>,
        body: Box<Node>,
    },
}

/// An operand of a binary node: the common leaves are evaluated in place, without a
/// recursive call.
#[derive(Debug)]
pub(crate) enum Operand {
    Const(Const),
    Attr(AttributeKey),
    Cap(AttributeKey),
    Node(Node),
}

#[expect(clippy::unnecessary_box_returns, reason = "every caller stores the pair boxed in a node")]
fn operands(l: Node, r: Node) -> Box<(Operand, Operand)> {
    Box::new((operand(l), operand(r)))
}

fn operand(n: Node) -> Operand {
    match n {
        Node::Const(c) => Operand::Const(c),
        Node::Attr(k) => Operand::Attr(k),
        Node::Cap(k) => Operand::Cap(k),
        other => Operand::Node(other),
    }
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

/// A list literal being compiled.
struct ListAcc {
    nodes: Vec<(Node, bool)>,
    ty: Option<Ty>,
    cost: u64,
    elem_size: u64,
}

/// A map literal being compiled.
struct MapAcc {
    nodes: Vec<(Node, Node, bool)>,
    kt: Option<Ty>,
    vt: Option<Ty>,
    cost: u64,
    elem_size: u64,
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
}

/// Type-checks and compiles a parsed expression.
pub(crate) fn compile(src: &str, expr: &Expr) -> Result<Compiled, SelectorError> {
    let mut c = Compiler { src, scopes: Vec::new(), slots: 0, mixed_literals: 0 };
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

    #[inline(never)]
    fn list_literal(&mut self, items: &[Expr], optional: &[usize]) -> Result<Out, SelectorError> {
        let mut acc = ListAcc { nodes: Vec::with_capacity(items.len()), ty: None, cost: 10, elem_size: 0 };
        for (i, item) in items.iter().enumerate() {
            let o = self.expr(item)?;
            self.list_item(&mut acc, item, o, optional.contains(&i))?;
        }
        Ok(Self::list_out(acc, optional.is_empty()))
    }

    /// The common type of a literal's elements so far (`None` before the first) and
    /// the next one's: their join; with mixed literals allowed, `dyn` when they don't
    /// join, else a type error naming `what` ("list elements", "map keys", ...).
    fn join_literal_type(
        &self,
        so_far: Option<Ty>,
        next: Ty,
        mixed: bool,
        at: &Expr,
        what: &str,
    ) -> Result<Ty, SelectorError> {
        match so_far {
            None => Ok(next),
            Some(t) if mixed => Ok(t.join(&next).unwrap_or(Ty::Dyn)),
            Some(t) => t
                .join(&next)
                .ok_or_else(|| self.type_err(at, format!("{what} must have one type: expected {t}, found {next}"))),
        }
    }

    #[inline(never)]
    fn list_item(&self, acc: &mut ListAcc, item: &Expr, o: Out, is_opt: bool) -> Result<(), SelectorError> {
        let item_ty = if is_opt { self.optional_content(item, &o.ty)? } else { o.ty.clone() };
        let mixed = self.mixed_literals > 0;
        acc.ty = Some(self.join_literal_type(acc.ty.take(), item_ty, mixed, item, "list elements")?);
        acc.cost = add(acc.cost, o.cost);
        acc.elem_size = acc.elem_size.max(o.size);
        acc.nodes.push((o.node, is_opt));
        Ok(())
    }

    fn list_out(acc: ListAcc, plain: bool) -> Out {
        let n = acc.nodes.len() as u64;
        let node = if plain {
            Node::List(acc.nodes.into_iter().map(|(n, _)| n).collect())
        } else {
            Node::OptList(acc.nodes.into())
        };
        Out { node, ty: Ty::list(acc.ty.unwrap_or(Ty::Dyn)), cost: acc.cost, size: n, elem_size: acc.elem_size }
    }

    #[inline(never)]
    fn map_literal(&mut self, entries: &[(Expr, Expr)], optional: &[usize]) -> Result<Out, SelectorError> {
        let mut acc = MapAcc { nodes: Vec::with_capacity(entries.len()), kt: None, vt: None, cost: 30, elem_size: 0 };
        for (i, (k, v)) in entries.iter().enumerate() {
            let ko = self.expr(k)?;
            self.check_map_key(k, &ko.ty)?;
            let vo = self.expr(v)?;
            self.map_entry(&mut acc, (k, ko), (v, vo), optional.contains(&i))?;
        }
        Ok(Self::map_out(acc, optional.is_empty()))
    }

    #[inline(never)]
    fn check_map_key(&self, k: &Expr, ty: &Ty) -> Result<(), SelectorError> {
        if matches!(ty, Ty::Int | Ty::Uint | Ty::String | Ty::Bool | Ty::Dyn) {
            Ok(())
        } else {
            Err(self.type_err(k, format!("unsupported map key type {ty}")))
        }
    }

    #[inline(never)]
    fn map_entry(
        &self,
        acc: &mut MapAcc,
        key: (&Expr, Out),
        value: (&Expr, Out),
        is_opt: bool,
    ) -> Result<(), SelectorError> {
        let ((k, ko), (v, vo)) = (key, value);
        let v_ty = if is_opt { self.optional_content(v, &vo.ty)? } else { vo.ty.clone() };
        let mixed = self.mixed_literals > 0;
        acc.kt = Some(self.join_literal_type(acc.kt.take(), ko.ty.clone(), mixed, k, "map keys")?);
        acc.vt = Some(self.join_literal_type(acc.vt.take(), v_ty, mixed, v, "map values")?);
        acc.cost = add(add(acc.cost, ko.cost), vo.cost);
        acc.elem_size = acc.elem_size.max(ko.size);
        acc.nodes.push((ko.node, vo.node, is_opt));
        Ok(())
    }

    fn map_out(acc: MapAcc, plain: bool) -> Out {
        let n = acc.nodes.len() as u64;
        let node = if plain {
            Node::Map(acc.nodes.into_iter().map(|(k, v, _)| (k, v)).collect())
        } else {
            Node::OptMap(acc.nodes.into())
        };
        let ty = Ty::map(acc.kt.unwrap_or(Ty::Dyn), acc.vt.unwrap_or(Ty::Dyn));
        Out { node, ty, cost: acc.cost, size: n, elem_size: acc.elem_size }
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

    fn bind_var(&mut self, name: &str, ty: Ty, size: u64) -> usize {
        let slot = self.scopes.len();
        self.slots = self.slots.max(slot + 1);
        self.scopes.push(Scope { name: name.to_owned(), slot, ty, size });
        slot
    }

    fn var_name<'e>(&self, e: &'e Expr, call: &Expr) -> Result<&'e str, SelectorError> {
        match &e.kind {
            ExprKind::Ident(n) => Ok(n),
            _ => Err(self.type_err(call, "the first argument of a macro must be a simple identifier")),
        }
    }

    /// A call: a macro (`has`, `cel.bind`, the comprehensions, `sortBy`) or a function.
    fn call(&mut self, e: &Expr, target: Option<&Expr>, function: &str, args: &[Expr]) -> Result<Out, SelectorError> {
        if target.is_none() && function == "has" {
            return self.has_macro(e, args);
        }
        if let Some(t) = target {
            if matches!(&t.kind, ExprKind::Ident(ns) if ns == "cel")
                && function == "bind"
                && self.lookup("cel").is_none()
            {
                return self.bind_macro(e, args);
            }
            if let Some((kind, two)) = comprehension_kind(function, args.len()) {
                return self.comprehension(e, t, kind, two, args);
            }
            // list.sortBy(e, key) (cel-go ext.Lists version 2+).
            if function == "sortBy" && args.len() == 2 {
                return self.sort_by(e, t, args);
            }
        }
        self.function_call(e, target, function, args)
    }

    /// `has(x.f)`.
    #[inline(never)]
    fn has_macro(&mut self, e: &Expr, args: &[Expr]) -> Result<Out, SelectorError> {
        let [arg] = args else {
            return Err(self.type_err(e, "has() takes exactly one argument"));
        };
        let ExprKind::Select { operand, field, .. } = &arg.kind else {
            return Err(self.type_err(arg, "invalid argument to has() macro: expected a field selection"));
        };
        let o = self.expr(operand)?;
        let operand_cost = o.cost;
        let mut r = self.select(arg, o, field, true)?;
        r.ty = Ty::Bool;
        // Kubernetes prices a presence test at 0 (`PresenceTestHasCost(false)` in
        // `k8s.io/apiserver/pkg/cel/environment/base.go`).
        r.cost = operand_cost;
        Ok(r)
    }

    /// `cel.bind(var, init, body)`.
    #[inline(never)]
    fn bind_macro(&mut self, e: &Expr, args: &[Expr]) -> Result<Out, SelectorError> {
        let [v, init, body] = args else {
            return Err(self.type_err(e, "cel.bind() takes three arguments"));
        };
        let name = self.var_name(v, e)?;
        let i = self.expr(init)?;
        let slot = self.bind_var(name, i.ty.clone(), i.size);
        let b = self.expr(body);
        self.scopes.pop();
        let b = b?;
        let cost = add(add(10, i.cost), b.cost);
        Ok(out(Node::Bind { slot, init: Box::new(i.node), body: Box::new(b.node) }, b.ty, cost, b.size))
    }

    /// A function call: resolves the name, compiles the operands, then
    /// [`Compiler::finish_call`] picks the overload.
    #[inline(never)]
    fn function_call(
        &mut self,
        e: &Expr,
        target: Option<&Expr>,
        function: &str,
        args: &[Expr],
    ) -> Result<Out, SelectorError> {
        // Namespaced global functions: sets.contains(...), strings.quote(...).
        let (target, name) = match target.map(|t| &t.kind) {
            Some(ExprKind::Ident(ns))
                if matches!(ns.as_str(), "sets" | "strings" | "optional" | "lists" | "ip" | "format")
                    && self.lookup(ns).is_none() =>
            {
                (None, format!("{ns}.{function}"))
            }
            _ => (target, function.to_owned()),
        };
        let Some((f, sigs)) = functions::signatures(&name) else {
            return Err(self.type_err(e, format!("undeclared reference to '{name}'")));
        };
        let exempt = usize::from(f == Func::Format);
        self.mixed_literals += exempt;
        let outs = self.call_operands(target, args);
        self.mixed_literals -= exempt;
        self.finish_call(e, target.is_some(), args, &name, f, &sigs, outs?)
    }

    /// Type-checks, prices and emits a function call whose operands are compiled.
    #[expect(clippy::too_many_arguments, reason = "the parts of the call, as function_call resolved them")]
    #[inline(never)]
    fn finish_call(
        &mut self,
        e: &Expr,
        member: bool,
        args: &[Expr],
        name: &str,
        f: Func,
        sigs: &[functions::Sig],
        outs: Vec<Out>,
    ) -> Result<Out, SelectorError> {
        let tys: Vec<Ty> = outs.iter().map(|o| o.ty.clone()).collect();
        let mut result: Option<Ty> = None;
        for sig in sigs {
            if sig.member == member
                && sig.params.len() == tys.len()
                && sig.params.iter().zip(&tys).all(|(p, a)| p.accepts(a))
            {
                result = Some(match result {
                    None => sig.result.clone(),
                    Some(r) => r.join(&sig.result).unwrap_or(Ty::Dyn),
                });
            }
        }
        let Some(result) = result else {
            let refs: Vec<&Ty> = tys.iter().collect();
            return Err(if member {
                self.no_overload(e, name, Some(refs[0]), &refs[1..])
            } else {
                self.no_overload(e, name, None, &refs)
            });
        };
        let result = functions::refine_result(f, &tys, result);
        let sizes: Vec<u64> = outs.iter().map(|o| o.size).collect();
        // k8s `library/cost.go` (`join`, `isSorted`, `sum`, `min`, `max`, `indexOf`,
        // `lastIndexOf`) sizes a list's elements with `listElementNode`, a node without an
        // expression that only the environment's size estimator can size. DRA's
        // `sizeEstimator` (dynamic-resource-allocation `cel/compile.go`) sizes paths from
        // `device` only, and no list-typed value has one: the elements' size is unknown,
        // even for a list literal. `join` uses it for any element type, the others add
        // its traversal for string and bytes elements only.
        let shape = match outs.first().map(|o| &o.ty) {
            Some(Ty::List(el)) if member => functions::Shape {
                list_receiver: true,
                str_elem: (f == Func::Join || matches!(**el, Ty::String | Ty::Bytes)).then_some(UNKNOWN_SIZE),
            },
            _ => functions::Shape::default(),
        };
        let (mut cost, size) = match list_ext_estimate(f, &outs) {
            Some(est) => est,
            None => (call_estimate(f, &outs, shape), call_result_size(f, &outs, &result)),
        };
        for o in &outs {
            cost = add(cost, o.cost);
        }
        let receiver_elem = outs.first().map_or(64, |o| o.elem_size);
        // Kubernetes validates constant timestamp and duration literals when it compiles
        // (cel.ValidateTimestampLiterals, cel.ValidateDurationLiterals, base.go 1.29).
        if let (Func::ToTimestamp | Func::ToDuration, Some(Node::Const(c))) = (f, outs.first().map(|o| &o.node)) {
            let checked = match (f, c) {
                (Func::ToTimestamp, Const::Str(text)) => super::time::parse_timestamp(text).map(|_| ()),
                (Func::ToTimestamp, Const::Int(secs)) => {
                    super::time::check_timestamp(i128::from(*secs) * 1_000_000_000).map(|_| ())
                }
                (_, Const::Str(text)) => super::time::parse_duration(text).map(|_| ()),
                _ => Ok(()),
            };
            if let Err(m) = checked {
                let what = if f == Func::ToTimestamp { "timestamp" } else { "duration" };
                return Err(self.type_err(e, format!("{what} validation failed. Reason: {m}")));
            }
        }
        // cel-go validates a constant format string against a list literal of
        // arguments when the expression is checked.
        if f == Func::Format {
            if let (Some(Node::Const(Const::Str(pattern))), [list @ Expr { kind: ExprKind::List { items, .. }, .. }]) =
                (outs.first().map(|o| &o.node), args)
            {
                self.mixed_literals += 1;
                let shapes = items.iter().map(|a| self.arg_shape(a)).collect::<Result<Vec<_>, _>>();
                self.mixed_literals -= 1;
                let shapes = shapes?;
                if let Some(m) = super::format::check(pattern, &shapes) {
                    return Err(self.type_err(list, m));
                }
            }
        }
        // Constant patterns are compiled once, here.
        let mut regex = None;
        if matches!(f, Func::Matches | Func::Find | Func::FindAll) {
            if let Some(Node::Const(Const::Str(p))) = outs.get(1).map(|o| &o.node) {
                let at = if member { &args[0] } else { &args[1] };
                let re = compile_regex(p).map_err(|m| SelectorError::regex(self.src, at.pos, m))?;
                regex = Some(Arc::new(re));
            }
        }
        let nodes: Vec<Node> = outs.into_iter().map(|o| o.node).collect();
        let node = match (f, <[Node; 2]>::try_from(nodes)) {
            (Func::IsGreaterThan | Func::IsLessThan, Ok([a, b])) => {
                let accept = if f == Func::IsGreaterThan { [false, false, true] } else { [true, false, false] };
                Node::OrdTest { f, operands: operands(a, b), accept, extra_cost: 1 }
            }
            (_, Ok(two)) => {
                let nodes = Vec::from(two);
                fold(f, &nodes).unwrap_or(Node::Call { f, args: nodes.into(), regex })
            }
            (_, Err(nodes)) => fold(f, &nodes).unwrap_or(Node::Call { f, args: nodes.into(), regex }),
        };
        let elem = match f {
            Func::Split | Func::FindAll => sizes.first().copied().unwrap_or(0),
            Func::Slice | Func::Sort | Func::Reverse | Func::Distinct => receiver_elem,
            Func::ListsRange => 0,
            _ => 64,
        };
        Ok(Out { elem_size: elem, ..out(node, result, cost, size) })
    }

    fn call_operands(&mut self, target: Option<&Expr>, args: &[Expr]) -> Result<Vec<Out>, SelectorError> {
        let mut outs = Vec::with_capacity(args.len() + 1);
        if let Some(t) = target {
            outs.push(self.expr(t)?);
        }
        for a in args {
            outs.push(self.expr(a)?);
        }
        Ok(outs)
    }

    /// The static type of a `format` argument and, for list and map literals, of their
    /// members (for the compile-time `format` check).
    fn arg_shape(&mut self, e: &Expr) -> Result<super::format::ArgShape, SelectorError> {
        let ty = self.expr(e)?.ty;
        let members = match &e.kind {
            ExprKind::List { items, .. } => items.iter().map(|x| self.arg_shape(x)).collect::<Result<_, _>>()?,
            ExprKind::Map { entries, .. } => {
                let mut v = Vec::with_capacity(entries.len() * 2);
                for (k, x) in entries {
                    v.push(self.arg_shape(k)?);
                    v.push(self.arg_shape(x)?);
                }
                v
            }
            _ => Vec::new(),
        };
        Ok(super::format::ArgShape { ty, members })
    }

    /// `target.sortBy(var, key)` (cel-go `ext.Lists` version 2+), compiled as upstream
    /// expands the macro: the list is bound once to a hidden variable, mapped to its
    /// keys, and reordered by them (`@sortByAssociatedKeys`). Estimated cost: the bind
    /// (10), the map comprehension, and the sort (2 per pair of keys, 2.1 for string
    /// or bytes keys, plus 11).
    fn sort_by(&mut self, e: &Expr, target: &Expr, args: &[Expr]) -> Result<Out, SelectorError> {
        if matches!(
            target.kind,
            ExprKind::Null
                | ExprKind::Bool(_)
                | ExprKind::Int(_)
                | ExprKind::Uint(_)
                | ExprKind::Double(_)
                | ExprKind::String(_)
                | ExprKind::Bytes(_)
                | ExprKind::Map { .. }
        ) {
            return Err(self.type_err(
                target,
                "sortBy can only be applied to a list, identifier, comprehension, call or select expression",
            ));
        }
        let name = self.var_name(&args[0], e)?;
        let r = self.expr(target)?;
        let elem_ty = match &r.ty {
            Ty::List(el) => (**el).clone(),
            Ty::Dyn => Ty::Dyn,
            t => return Err(self.no_overload(e, "sortBy", Some(t), &[])),
        };
        let input = self.bind_var("@__sortBy_input__", r.ty.clone(), r.size);
        let var = self.bind_var(name, elem_ty, r.elem_size);
        let key = self.expr(&args[1]);
        self.scopes.pop();
        self.scopes.pop();
        let key = key?;
        if !(matches!(key.ty, Ty::Dyn) || functions::COMPARABLE.contains(&key.ty)) {
            return Err(self.type_err(
                &args[1],
                format!("the key of 'sortBy' must be int, uint, double, bool, string or bytes, not {}", key.ty),
            ));
        }
        let n = r.size;
        let map_cost = add(add(1, n.saturating_mul(add(12, key.cost))), 11);
        let factor = if matches!(key.ty, Ty::String | Ty::Bytes | Ty::Dyn) { 2.1 } else { 2.0 };
        let sort_cost = add(add(1, map_cost), add(functions::ceil_mul(n.saturating_mul(n), factor), LIST_CALL));
        let keys = Node::Loop(Box::new(Loop {
            kind: LoopKind::Map,
            range: Node::Local(input),
            var,
            var2: None,
            pred: None,
            transform: Some(key.node),
        }));
        let call = Node::Call { f: Func::SortByKeys, args: Box::new([Node::Local(input), keys]), regex: None };
        let node = Node::Bind { slot: input, init: Box::new(r.node), body: Box::new(call) };
        let ty = if matches!(r.ty, Ty::Dyn) { Ty::list(Ty::Dyn) } else { r.ty };
        Ok(Out { elem_size: r.elem_size, ..out(node, ty, add(add(10, r.cost), sort_cost), n.saturating_mul(n)) })
    }

    fn comprehension(
        &mut self,
        e: &Expr,
        range: &Expr,
        kind: LoopKind,
        two: bool,
        args: &[Expr],
    ) -> Result<Out, SelectorError> {
        let r = self.expr(range)?;
        let vars = self.loop_vars(e, range, &r, two, args)?;
        let body = &args[usize::from(two)..];
        let compiled = self.loop_body(kind, body);
        if two {
            self.scopes.pop();
        }
        self.scopes.pop();
        self.finish_comprehension(e, kind, body, r, vars, compiled?)
    }

    /// Declares the iteration variables of a comprehension over `r` (the caller pops
    /// their scopes): the slots of the variables and the type of the first.
    #[inline(never)]
    fn loop_vars(
        &mut self,
        e: &Expr,
        range: &Expr,
        r: &Out,
        two: bool,
        args: &[Expr],
    ) -> Result<(usize, Option<usize>, Ty), SelectorError> {
        let (var_ty, value_ty) = match &r.ty {
            Ty::List(el) if two => (Ty::Int, (**el).clone()),
            Ty::List(el) => ((**el).clone(), Ty::Dyn),
            Ty::Map(k, v) => ((**k).clone(), (**v).clone()),
            Ty::Dyn => (Ty::Dyn, Ty::Dyn),
            t => {
                return Err(self.type_err(range, format!("expression of type '{t}' cannot be the range of a comprehension (must be list, map, or dynamic)")));
            }
        };
        let name = self.var_name(&args[0], e)?;
        if name == "__result__" {
            return Err(self.type_err(&args[0], "iteration variable overwrites accumulator variable"));
        }
        let var = self.bind_var(name, var_ty.clone(), r.elem_size);
        let mut var2 = None;
        if two {
            let name2 = match self.var_name(&args[1], e) {
                Ok(n) => n,
                Err(err) => {
                    self.scopes.pop();
                    return Err(err);
                }
            };
            if name2 == name {
                self.scopes.pop();
                return Err(self.type_err(&args[1], "the two iteration variables must differ"));
            }
            var2 = Some(self.bind_var(name2, value_ty, bounds::MAX_VALUE_LEN));
        }
        Ok((var, var2, var_ty))
    }

    /// The predicate and the transform of a comprehension, as its kind has them.
    #[inline(never)]
    fn loop_body(&mut self, kind: LoopKind, body: &[Expr]) -> Result<(Option<Out>, Option<Out>), SelectorError> {
        Ok(match kind {
            LoopKind::Map | LoopKind::TransformMap | LoopKind::TransformMapEntry => (None, Some(self.expr(&body[1])?)),
            LoopKind::MapFilter | LoopKind::TransformMapFilter | LoopKind::TransformMapEntryFilter => {
                let p = self.expr(&body[1])?;
                (Some(p), Some(self.expr(&body[2])?))
            }
            _ => (Some(self.expr(&body[1])?), None),
        })
    }

    #[inline(never)]
    fn finish_comprehension(
        &self,
        e: &Expr,
        kind: LoopKind,
        body: &[Expr],
        r: Out,
        (var, var2, var_ty): (usize, Option<usize>, Ty),
        (pred, transform): (Option<Out>, Option<Out>),
    ) -> Result<Out, SelectorError> {
        if let Some(p) = &pred {
            if !Ty::Bool.accepts(&p.ty) {
                let at = &body[1];
                return Err(
                    self.type_err(at, format!("the predicate of '{}' must be bool, not {}", macro_name(kind), p.ty))
                );
            }
        }
        let n = r.size;
        let p = pred.as_ref().map_or(0, |o| o.cost);
        let t = transform.as_ref().map_or(0, |o| o.cost);
        // The list builders append `[t]` to the accumulator (ident 1, list 10, `+` 1); the
        // map builders (cel-go `ext/comprehensions.go`) call `cel.@mapInsert` (1) on the
        // accumulator (1) with the key variable (1, `transformMap` only) and the
        // transform, and start from `{}` (`MapCreateBaseCost`, 30) instead of `[]` (10).
        // k8s library/cost_test.go `TestTwoVariableComprehensionCost` pins both.
        let per_iter = match kind {
            LoopKind::All => add(3, p),
            LoopKind::Exists => add(4, p),
            LoopKind::ExistsOne => add(2, p),
            LoopKind::Map => add(12, t),
            LoopKind::TransformMap => add(3, t),
            LoopKind::TransformMapEntry => add(2, t),
            LoopKind::Filter => add(13, p),
            LoopKind::MapFilter => add(add(12, p), t),
            LoopKind::TransformMapFilter => add(add(3, p), t),
            LoopKind::TransformMapEntryFilter => add(add(2, p), t),
        };
        let tail = match kind {
            LoopKind::All | LoopKind::Exists => 1,
            LoopKind::ExistsOne => 2,
            LoopKind::TransformMap
            | LoopKind::TransformMapFilter
            | LoopKind::TransformMapEntry
            | LoopKind::TransformMapEntryFilter => 31,
            _ => 11,
        };
        let cost = add(add(r.cost, n.saturating_mul(per_iter)), tail);
        let (ty, elem_size) = match kind {
            LoopKind::Map | LoopKind::MapFilter => {
                let tr = transform.as_ref().map_or(Ty::Dyn, |o| o.ty.clone());
                (Ty::list(tr), transform.as_ref().map_or(64, |o| o.size))
            }
            LoopKind::TransformMap | LoopKind::TransformMapFilter => {
                let tr = transform.as_ref().map_or(Ty::Dyn, |o| o.ty.clone());
                (Ty::map(var_ty, tr), r.elem_size)
            }
            LoopKind::TransformMapEntry | LoopKind::TransformMapEntryFilter => {
                let tr = transform.as_ref().map_or(Ty::Dyn, |o| o.ty.clone());
                if !matches!(tr, Ty::Map(..) | Ty::Dyn) {
                    let at = body.last().unwrap_or(e);
                    return Err(
                        self.type_err(at, format!("the transform of 'transformMapEntry' must be a map, not {tr}"))
                    );
                }
                let tr = if matches!(tr, Ty::Dyn) { Ty::map(Ty::Dyn, Ty::Dyn) } else { tr };
                (tr, r.elem_size)
            }
            LoopKind::Filter => (r.ty.clone(), r.elem_size),
            _ => (Ty::Bool, 0),
        };
        // cel-go sizes a comprehension by its accumulator: a literal (the bool and count
        // macros) has size 1, a list or map the size of the range.
        let size = if matches!(ty, Ty::Bool) { 1 } else { n };
        let node = Node::Loop(Box::new(Loop {
            kind,
            range: r.node,
            var,
            var2,
            pred: pred.map(|o| o.node),
            transform: transform.map(|o| o.node),
        }));
        Ok(Out { elem_size, ..out(node, ty, cost, size) })
    }
}

/// The comprehension macro a member call names, and whether it takes two variables.
fn comprehension_kind(function: &str, args: usize) -> Option<(LoopKind, bool)> {
    Some(match (function, args) {
        ("all", 2) => (LoopKind::All, false),
        ("exists", 2) => (LoopKind::Exists, false),
        ("exists_one", 2) => (LoopKind::ExistsOne, false),
        ("map", 2) => (LoopKind::Map, false),
        ("map", 3) => (LoopKind::MapFilter, false),
        ("filter", 2) => (LoopKind::Filter, false),
        // Two-variable comprehensions (cel-go ext.TwoVarComprehensions, in the
        // Kubernetes environment since 1.32).
        ("all", 3) => (LoopKind::All, true),
        ("exists", 3) => (LoopKind::Exists, true),
        ("existsOne", 3) => (LoopKind::ExistsOne, true),
        ("transformList", 3) => (LoopKind::Map, true),
        ("transformList", 4) => (LoopKind::MapFilter, true),
        ("transformMap", 3) => (LoopKind::TransformMap, true),
        ("transformMap", 4) => (LoopKind::TransformMapFilter, true),
        ("transformMapEntry", 3) => (LoopKind::TransformMapEntry, true),
        ("transformMapEntry", 4) => (LoopKind::TransformMapEntryFilter, true),
        _ => return None,
    })
}

/// A non-negative integer constant, as cel-go's `nodeAsUintValue` reads a literal
/// argument for a cost estimate.
fn const_uint(o: &Out) -> Option<u64> {
    match &o.node {
        Node::Const(Const::Int(k)) => Some(u64::try_from(*k).unwrap_or(0)),
        Node::Const(Const::Uint(u)) => Some(*u),
        _ => None,
    }
}

/// The size cel-go's estimator uses for an operand: `computeTypeSize` gives every value of
/// a scalar type (and a `null` literal, `computeExprSize`) size 1, whatever else is known.
fn operand_size(o: &Out) -> u64 {
    if matches!(o.ty, Ty::Null) || type_size(&o.ty) == 1 { 1 } else { o.size }
}

/// Estimated cost of `==` and `!=` without the operands.
///
/// Kubernetes first (`k8s.io/apiserver/pkg/cel/library/cost.go`, `EstimateCallCost`,
/// case `_==_`, since 1.31): only for `==`, and only when both operands have the same
/// type, `net.IP`, `net.CIDR`, `kubernetes.Quantity` and `kubernetes.Semver` cost 1,
/// `kubernetes.NamedFormat` `MaxFormatSize` (64) characters at 0.1, and `kubernetes.URL`
/// 0.1 per character of the right operand's computed size (upstream takes that size
/// for both sides), 1 when it has none. Everything else, `!=` always, falls through to
/// cel-go (`checker/cost.go`, `functionCost`, overloads `equals`/`not_equals`): 0.1 per
/// unit of the smaller operand size, whatever the types, so two operands of unknown size
/// (a `type`, an `optional` of a non-scalar, an opaque value built by a call) are priced
/// beyond any budget.
fn equality_cost(op: BinaryOp, l: &Out, r: &Out) -> u64 {
    if op == BinaryOp::Eq && l.ty == r.ty {
        match l.ty {
            Ty::Ip | Ty::Cidr | Ty::Quantity | Ty::Semver => return 1,
            Ty::Format => return ceil_tenth(super::named_format::MAX_FORMAT_SIZE),
            Ty::Url => return if r.size == UNKNOWN_SIZE { 1 } else { ceil_tenth(r.size) },
            _ => {}
        }
    }
    ceil_tenth(operand_size(l).min(operand_size(r)))
}

/// The operand kinds of the overloads cel-go's checker keeps for a binary operator
/// (`GetOverloadIDs`): with a `dyn` operand every overload the other operand fits stays a
/// candidate, and `costCall` (`checker/cost.go`) charges the dearest of them.
struct Candidates {
    /// A string or bytes overload, priced by size.
    text: bool,
    list: bool,
    /// Any overload on other types (numbers, bools, timestamps, ...), all O(1).
    other: bool,
}

fn candidates(l: &Ty, r: &Ty) -> Candidates {
    let both = |f: fn(&Ty) -> bool| (f(l) || *l == Ty::Dyn) && (f(r) || *r == Ty::Dyn);
    let sized = |t: &Ty| matches!(t, Ty::String | Ty::Bytes | Ty::List(_));
    Candidates {
        text: both(|t| *t == Ty::String) || both(|t| *t == Ty::Bytes),
        list: both(|t| matches!(t, Ty::List(_))),
        other: !sized(l) && !sized(r),
    }
}

/// Estimated cost of `<`, `<=`, `>`, `>=` without the operands: cel-go prices the string
/// and bytes overloads at 0.1 per character of the shorter operand, every other overload
/// at 1 (`checker/cost.go`, `functionCost`, `LessString` ... `GreaterEqualsBytes`), and
/// takes the dearest candidate.
fn ordering_cost(l: &Out, r: &Out) -> u64 {
    let c = candidates(&l.ty, &r.ty);
    let traversal = if c.text { ceil_tenth(operand_size(l).min(operand_size(r))) } else { 0 };
    traversal.max(u64::from(c.other || c.list))
}

/// Estimated cost (without the operands) and result size of `+`, over the candidate
/// overloads (`checker/cost.go`, `functionCost`, `AddString`, `AddBytes`, `AddList`):
/// concatenating strings or bytes traverses both (0.1 per character), concatenating
/// lists costs 1, and all three state the sum of the operand sizes as the result size;
/// the numeric and time overloads cost 1 and leave the size to the result type. With
/// `dyn` operands (`dyn(x) + dyn(y)`) the dearest candidate counts and the stated size
/// is kept.
fn addition_estimate(l: &Out, r: &Out, ty: &Ty) -> (u64, u64) {
    let c = candidates(&l.ty, &r.ty);
    let sum = add(operand_size(l), operand_size(r));
    let cost = if c.text { ceil_tenth(sum) } else { 0 };
    let cost = cost.max(u64::from(c.list || c.other));
    let size = if c.text || c.list { sum } else { arithmetic_size(&l.ty, &r.ty, ty) };
    (cost, size)
}

/// The size of a numeric or time result, that of its type (`computeTypeSize`): 1, except
/// with two `dyn` operands, where the candidates' result types differ and the checker
/// types the call `dyn`, of unknown size. One concrete operand selects overloads of one
/// scalar result type.
fn arithmetic_size(l: &Ty, r: &Ty, ty: &Ty) -> u64 {
    if matches!(ty, Ty::Dyn) && !matches!((l, r), (Ty::Dyn, Ty::Dyn)) { 1 } else { type_size(ty) }
}

/// The size cel-go assigns a value it knows nothing about (`UnknownSizeEstimate` in
/// `checker/cost.go`): anything up to `math.MaxUint64` characters or elements.
pub(crate) const UNKNOWN_SIZE: u64 = u64::MAX;

/// The size of a value known only by its type: cel-go's `computeTypeSize`
/// (`checker/cost.go`) gives scalars (bool, int, uint, double, timestamp, duration, and
/// optionals of those) size 1, and leaves every other type unknown.
fn type_size(ty: &Ty) -> u64 {
    match ty {
        Ty::Bool | Ty::Int | Ty::Uint | Ty::Double | Ty::Timestamp | Ty::Duration => 1,
        Ty::Optional(t) => type_size(t),
        _ => UNKNOWN_SIZE,
    }
}

/// A string constant's length in characters, the lower bound of its size.
fn const_len(o: &Out) -> u64 {
    match &o.node {
        Node::Const(Const::Str(s)) => s.chars().count() as u64,
        Node::Const(Const::Bytes(b)) => b.len() as u64,
        _ => 0,
    }
}

/// The argument sizes a call's cost depends on. Upstream prices the parsing of a string
/// argument of `containsIP`/`containsCIDR` (k8s `library/cost.go`) only in the string
/// overloads; a typed argument costs nothing, whatever its (unknown) size.
fn priced_sizes(f: Func, outs: &[Out]) -> Vec<u64> {
    let arg_is = |i: usize, t: Ty| outs.get(i).is_some_and(|o| o.ty == t || o.ty == Ty::Dyn);
    outs.iter()
        .enumerate()
        .map(|(i, o)| match f {
            Func::ContainsIp | Func::ContainsCidr if i == 1 && !arg_is(1, Ty::String) => 0,
            _ => o.size,
        })
        .collect()
}

/// The estimated cost of a call without its arguments ([`functions::call_cost`]), except
/// that cel-go prices only the conversions between strings and bytes (`StringToBytes`,
/// `BytesToString`) as traversals; the other `string()` and `bytes()` overloads cost 1,
/// and with a `dyn` argument the dearer candidate counts.
///
/// The global parsers of the Kubernetes libraries (`ip`, `cidr`, `isIP`, `isCIDR`,
/// `ip.isCanonical`, `quantity`, `isQuantity`, `semver`, `isSemver`) traverse their
/// string argument, 0.1 per character (0.2 for `ip.isCanonical`, which also prints it):
/// k8s `library/cost.go` prices them without a receiver since Kubernetes 1.32, as the
/// `TestIPCost`, `TestCIDRCost`, `TestIPIsCanonicalCost` and `TestSemverCost` cases of
/// `library/cost_test.go` expect. `cidr.ip()` (overload `cidr_ip`) stays at 1.
fn call_estimate(f: Func, outs: &[Out], shape: functions::Shape) -> u64 {
    let traversal = || functions::call_cost(f, &priced_sizes(f, outs), shape);
    let arg = outs.first().map_or(0, |o| o.size);
    match (f, outs.first().map(|o| &o.ty)) {
        (Func::Ip, Some(Ty::Cidr)) => 1,
        (
            Func::Ip
            | Func::Cidr
            | Func::IsIp
            | Func::IsCidr
            | Func::Quantity
            | Func::IsQuantity
            | Func::Semver
            | Func::IsSemver,
            _,
        ) => ceil_tenth(arg),
        (Func::IpIsCanonical, _) => functions::ceil_mul(arg, 0.2),
        (Func::ToString, Some(Ty::Bytes)) | (Func::ToBytes, Some(Ty::String)) => traversal(),
        (Func::ToString | Func::ToBytes, Some(Ty::Dyn)) => traversal().max(1),
        (Func::ToString | Func::ToBytes, _) => 1,
        _ => traversal(),
    }
}

/// The worst-case size of a call's result, as upstream's estimators state it, else the
/// size of its type ([`type_size`]).
fn call_result_size(f: Func, outs: &[Out], result: &Ty) -> u64 {
    let size = |i: usize| outs.get(i).map_or(0, |o| o.size);
    let ty = |i: usize| outs.get(i).map(|o| &o.ty);
    match f {
        // cel-go `maybeUnwrapDynCall`: `dyn(x)` has the size of `x`; k8s
        // `library/cost.go` `url`: the URL has the size of its string.
        Func::Dyn | Func::Url => size(0),
        // k8s `library/cost.go` `join`: every element at its largest, with a separator
        // between each two.
        // The elements' size is unknown for any list receiver (see `finish_call`); a `dyn`
        // receiver has no element type, and upstream then counts the separators only.
        Func::Join => {
            let n = size(0);
            let elem = match ty(0) {
                Some(Ty::List(_)) => UNKNOWN_SIZE,
                _ => 0,
            };
            n.saturating_mul(elem).saturating_add(size(1).saturating_mul(n.saturating_sub(1)))
        }
        // k8s `library/cost.go` `replace`: the shortest possible match (a constant's
        // length, else 0) replaced by the longest replacement as often as it fits.
        Func::Replace => {
            let (sz, from_min, to_max) = (size(0), const_len(&outs[1]), size(2));
            let (count, retained) = if from_min == 0 {
                (if sz < UNKNOWN_SIZE { sz + 1 } else { sz }, sz)
            } else if to_max <= from_min {
                (0, sz)
            } else {
                (sz.div_ceil(from_min), 0)
            };
            count.saturating_mul(to_max).saturating_add(retained)
        }
        // k8s `library/cost.go` `split`: a constant limit bounds the element count.
        Func::Split => match outs.get(2).map(|o| &o.node) {
            Some(Node::Const(Const::Int(k))) if *k >= 0 => k.unsigned_abs(),
            _ => size(0),
        },
        // cel-go `BytesToString` keeps the size, `StringToBytes` may take 4 bytes per
        // character; the other conversions to string or bytes are not sized.
        // With a `dyn` argument every overload is a candidate, and cel-go's `costCall`
        // keeps the sizes the sized candidates state.
        Func::ToString if matches!(ty(0), Some(Ty::Bytes | Ty::Dyn)) => size(0),
        Func::ToBytes if matches!(ty(0), Some(Ty::String | Ty::Dyn)) => size(0).saturating_mul(4),
        _ => {
            let sizes: Vec<u64> = outs.iter().map(|o| o.size).collect();
            functions::result_size(f, &sizes).unwrap_or_else(|| type_size(result))
        }
    }
}

/// `1 + 10`: cel-go's call cost plus `ListCreateBaseCost`, added to every `ext.Lists`
/// function that builds a list.
const LIST_CALL: u64 = 11;

/// Estimated cost and result size of the `ext.Lists` functions (cel-go `ext/lists.go`,
/// version 3 estimators): the result size times a factor plus [`LIST_CALL`]. As
/// upstream, `sort` and `distinct` report the square of the input size as their result
/// size, and `slice` with a constant start after its constant end wraps around (and so
/// exceeds any budget).
fn list_ext_estimate(f: Func, outs: &[Out]) -> Option<(u64, u64)> {
    let sz = outs.first().map_or(0, |o| o.size);
    let (factor, size) = match f {
        Func::Slice => {
            let start = outs.get(1).and_then(const_uint).unwrap_or(0);
            let end = outs.get(2).and_then(const_uint).unwrap_or(sz);
            (1.0, end.wrapping_sub(start))
        }
        Func::ListsRange => (1.0, outs.first().and_then(const_uint).unwrap_or(u64::MAX)),
        Func::Reverse => (1.0, sz),
        Func::Flatten => {
            let depth = match outs.get(1) {
                None => 1,
                Some(o) => const_uint(o).unwrap_or(u64::MAX),
            };
            return Some((add(functions::ceil_mul(sz, depth as f64), LIST_CALL), sz));
        }
        Func::Distinct => (2.0, sz.saturating_mul(sz)),
        Func::Sort => {
            let strings = matches!(outs.first().map(|o| &o.ty), Some(Ty::List(el)) if matches!(**el, Ty::String | Ty::Bytes | Ty::Dyn));
            (if strings { 2.1 } else { 2.0 }, sz.saturating_mul(sz))
        }
        _ => return None,
    };
    Some((add(functions::ceil_mul(size, factor), LIST_CALL), size))
}

/// `a.compareTo(b) OP k` with a constant `k` becomes one ordering test.
fn compare_to_test(op: BinaryOp, l: &Node, r: &Node) -> Option<Node> {
    let (Node::Call { f: Func::CompareTo, args, .. }, Node::Const(Const::Int(k))) = (l, r) else {
        return None;
    };
    if args.len() != 2 {
        return None;
    }
    let k = *k;
    let accept = [-1i64, 0, 1].map(|o| match op {
        BinaryOp::Lt => o < k,
        BinaryOp::Le => o <= k,
        BinaryOp::Gt => o > k,
        _ => o >= k,
    });
    let a = clone_leaf(&args[0])?;
    let b = clone_leaf(&args[1])?;
    Some(Node::OrdTest { f: Func::CompareTo, operands: Box::new((a, b)), accept, extra_cost: 2 })
}

/// Leaves that can move into an [`Operand`] (the rest keeps the general path).
fn clone_leaf(n: &Node) -> Option<Operand> {
    match n {
        Node::Const(c) => Some(Operand::Const(c.clone())),
        Node::Attr(k) => Some(Operand::Attr(*k)),
        Node::Cap(k) => Some(Operand::Cap(*k)),
        _ => None,
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

fn macro_name(kind: LoopKind) -> &'static str {
    match kind {
        LoopKind::All => "all",
        LoopKind::Exists => "exists",
        LoopKind::ExistsOne => "exists_one",
        LoopKind::Map | LoopKind::MapFilter => "map",
        LoopKind::TransformMap | LoopKind::TransformMapFilter => "transformMap",
        LoopKind::TransformMapEntry | LoopKind::TransformMapEntryFilter => "transformMapEntry",
        LoopKind::Filter => "filter",
    }
}

/// Folds `quantity("...")` and `semver("..."[, bool])` with constant arguments into
/// constants; a constant that does not parse is left to fail at evaluation time, where
/// The run-time cost of a folded `quantity(s)` or `semver(s)` call.
fn parse_cost(s: &str) -> u32 {
    u32::try_from(functions::string_traversal_cost(s)).unwrap_or(u32::MAX)
}

/// upstream reports it.
fn fold(f: Func, args: &[Node]) -> Option<Node> {
    match (f, args) {
        (Func::Quantity, [Node::Const(Const::Str(s))]) => match super::bigqty::parse_quantity(s) {
            Ok(Ok((q, held))) => Some(Node::Const(Const::Quantity(q, held, parse_cost(s)))),
            // Beyond `Quantity`'s range: built at evaluation time.
            _ => None,
        },
        (Func::Semver, [Node::Const(Const::Str(s))]) => {
            Semver::parse(s).ok().map(|v| Node::Const(Const::Semver(Box::new(v), parse_cost(s))))
        }
        (Func::Semver, [Node::Const(Const::Str(s)), Node::Const(Const::Bool(norm))]) => {
            let v = if *norm { Semver::parse_normalized(s) } else { Semver::parse(s) };
            v.ok().map(|v| Node::Const(Const::Semver(Box::new(v), parse_cost(s))))
        }
        _ => None,
    }
}
