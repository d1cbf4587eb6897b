//! Checking and compiling calls: function overloads, `has`, `cel.bind`, `sortBy` and
//! the argument shapes `format` validates.

use std::sync::Arc;

use super::comprehension::comprehension_kind;
use super::cost::{LIST_CALL, UNKNOWN_SIZE, call_estimate, call_result_size, list_ext_estimate};
use super::node::{fold, operands};
use super::{Compiler, Const, Loop, LoopKind, Node, Out, add, out};
use crate::selector::ast::{Expr, ExprKind};
use crate::selector::error::SelectorError;
use crate::selector::functions::{self, Func, compile_regex};
use crate::selector::types::Ty;

impl Compiler<'_> {
    /// A call: a macro (`has`, `cel.bind`, the comprehensions, `sortBy`) or a function.
    pub(super) fn call(
        &mut self,
        e: &Expr,
        target: Option<&Expr>,
        function: &str,
        args: &[Expr],
    ) -> Result<Out, SelectorError> {
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
    pub(super) fn has_macro(&mut self, e: &Expr, args: &[Expr]) -> Result<Out, SelectorError> {
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
    pub(super) fn bind_macro(&mut self, e: &Expr, args: &[Expr]) -> Result<Out, SelectorError> {
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
    pub(super) fn function_call(
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
        // `includes` is declared only with `DRAListTypeAttributes` in the new-expressions
        // environment (upstream `newCompiler`, the v1.36 option's `FeatureEnabled`).
        if f == Func::Includes && self.refuse.lists {
            return Err(self.type_err(e, format!("undeclared reference to '{name}'")));
        }
        let exempt = usize::from(f == Func::Format);
        self.mixed_literals += exempt;
        let outs = self.call_operands(target, args);
        self.mixed_literals -= exempt;
        self.finish_call(e, target.is_some(), args, &name, f, &sigs, outs?)
    }

    /// Type-checks, prices and emits a function call whose operands are compiled.
    #[expect(clippy::too_many_arguments, reason = "the parts of the call, as function_call resolved them")]
    #[inline(never)]
    pub(super) fn finish_call(
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
                (Func::ToTimestamp, Const::Str(text)) => crate::selector::time::parse_timestamp(text).map(|_| ()),
                (Func::ToTimestamp, Const::Int(secs)) => {
                    crate::selector::time::check_timestamp(i128::from(*secs) * 1_000_000_000).map(|_| ())
                }
                (_, Const::Str(text)) => crate::selector::time::parse_duration(text).map(|_| ()),
                _ => Ok(()),
            };
            if let Err(m) = checked {
                let what = if f == Func::ToTimestamp { "timestamp" } else { "duration" };
                return Err(self.type_err(e, format!("{what} validation failed. Reason: {m}")));
            }
        }
        // cel-go validates a constant format string against a list literal of
        // arguments when the expression is checked.
        if f == Func::Format
            && let (Some(Node::Const(Const::Str(pattern))), [list @ Expr { kind: ExprKind::List { items, .. }, .. }]) =
                (outs.first().map(|o| &o.node), args)
        {
            self.mixed_literals += 1;
            let shapes = items.iter().map(|a| self.arg_shape(a)).collect::<Result<Vec<_>, _>>();
            self.mixed_literals -= 1;
            let shapes = shapes?;
            if let Some(m) = crate::selector::format::check(pattern, &shapes) {
                return Err(self.type_err(list, m));
            }
        }
        // Constant patterns are compiled once, here.
        let mut regex = None;
        if matches!(f, Func::Matches | Func::Find | Func::FindAll)
            && let Some(Node::Const(Const::Str(p))) = outs.get(1).map(|o| &o.node)
        {
            let at = if member { &args[0] } else { &args[1] };
            let re = compile_regex(p).map_err(|m| SelectorError::regex(self.src, at.pos, m))?;
            regex = Some(Arc::new(re));
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

    pub(super) fn call_operands(&mut self, target: Option<&Expr>, args: &[Expr]) -> Result<Vec<Out>, SelectorError> {
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
    pub(super) fn arg_shape(&mut self, e: &Expr) -> Result<crate::selector::format::ArgShape, SelectorError> {
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
        Ok(crate::selector::format::ArgShape { ty, members })
    }

    /// `target.sortBy(var, key)` (cel-go `ext.Lists` version 2+), compiled as upstream
    /// expands the macro: the list is bound once to a hidden variable, mapped to its
    /// keys, and reordered by them (`@sortByAssociatedKeys`). Estimated cost: the bind
    /// (10), the map comprehension, and the sort (2 per pair of keys, 2.1 for string
    /// or bytes keys, plus 11).
    pub(super) fn sort_by(&mut self, e: &Expr, target: &Expr, args: &[Expr]) -> Result<Out, SelectorError> {
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
}
