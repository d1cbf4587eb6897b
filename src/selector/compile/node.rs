//! The evaluation tree the compiler emits ([`Node`]) and the rewrites that build it:
//! operand leaves, fused ordering tests and constant folding.

use std::sync::Arc;

use regex::Regex;

use crate::model::{Quantity, Symbol};
use crate::selector::ast::BinaryOp;
use crate::selector::bigqty::Held;
use crate::selector::device::AttributeKey;
use crate::selector::functions::{self, Func};
use crate::selector::semver::Semver;

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
pub(super) fn operands(l: Node, r: Node) -> Box<(Operand, Operand)> {
    Box::new((operand(l), operand(r)))
}

pub(super) fn operand(n: Node) -> Operand {
    match n {
        Node::Const(c) => Operand::Const(c),
        Node::Attr(k) => Operand::Attr(k),
        Node::Cap(k) => Operand::Cap(k),
        other => Operand::Node(other),
    }
}

/// `a.compareTo(b) OP k` with a constant `k` becomes one ordering test.
pub(super) fn compare_to_test(op: BinaryOp, l: &Node, r: &Node) -> Option<Node> {
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
pub(super) fn clone_leaf(n: &Node) -> Option<Operand> {
    match n {
        Node::Const(c) => Some(Operand::Const(c.clone())),
        Node::Attr(k) => Some(Operand::Attr(*k)),
        Node::Cap(k) => Some(Operand::Cap(*k)),
        _ => None,
    }
}

/// Folds `quantity("...")` and `semver("..."[, bool])` with constant arguments into
/// constants; a constant that does not parse is left to fail at evaluation time, where
/// The run-time cost of a folded `quantity(s)` or `semver(s)` call.
pub(super) fn parse_cost(s: &str) -> u32 {
    u32::try_from(functions::string_traversal_cost(s)).unwrap_or(u32::MAX)
}

/// upstream reports it.
pub(super) fn fold(f: Func, args: &[Node]) -> Option<Node> {
    match (f, args) {
        (Func::Quantity, [Node::Const(Const::Str(s))]) => match crate::selector::bigqty::parse_quantity(s) {
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
