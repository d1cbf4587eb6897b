//! Checking and compiling the comprehension macros (`all`, `exists`, `map`, `filter`,
//! the two-variable forms) and their loop variables.

use super::{Compiler, Loop, LoopKind, Node, Out, Scope, add, bounds, out};
use crate::selector::ast::{Expr, ExprKind};
use crate::selector::error::SelectorError;
use crate::selector::types::Ty;

/// The comprehension macro a member call names, and whether it takes two variables.
pub(super) fn comprehension_kind(function: &str, args: usize) -> Option<(LoopKind, bool)> {
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

pub(super) fn macro_name(kind: LoopKind) -> &'static str {
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

impl Compiler<'_> {
    pub(super) fn bind_var(&mut self, name: &str, ty: Ty, size: u64) -> usize {
        let slot = self.scopes.len();
        self.slots = self.slots.max(slot + 1);
        self.scopes.push(Scope { name: name.to_owned(), slot, ty, size });
        slot
    }

    pub(super) fn var_name<'e>(&self, e: &'e Expr, call: &Expr) -> Result<&'e str, SelectorError> {
        match &e.kind {
            ExprKind::Ident(n) => Ok(n),
            _ => Err(self.type_err(call, "the first argument of a macro must be a simple identifier")),
        }
    }

    pub(super) fn comprehension(
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
    pub(super) fn loop_vars(
        &mut self,
        e: &Expr,
        range: &Expr,
        r: &Out,
        two: bool,
        args: &[Expr],
    ) -> Result<(usize, Option<usize>, Ty), SelectorError> {
        // Without `DRAListTypeAttributes` the new-expressions environment types an
        // attribute value as `google.protobuf.Any`, which no comprehension ranges over
        // (upstream `newCompiler`: AnyType, not DynType, for the attribute values).
        if self.refuse.lists && matches!(r.node, Node::Attr(_)) {
            return Err(self.type_err(
                range,
                "expression of type 'google.protobuf.Any' cannot be the range of a comprehension (must be list, map, or dynamic)",
            ));
        }
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
    pub(super) fn loop_body(
        &mut self,
        kind: LoopKind,
        body: &[Expr],
    ) -> Result<(Option<Out>, Option<Out>), SelectorError> {
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
    pub(super) fn finish_comprehension(
        &self,
        e: &Expr,
        kind: LoopKind,
        body: &[Expr],
        r: Out,
        (var, var2, var_ty): (usize, Option<usize>, Ty),
        (pred, transform): (Option<Out>, Option<Out>),
    ) -> Result<Out, SelectorError> {
        if let Some(p) = &pred
            && !Ty::Bool.accepts(&p.ty)
        {
            let at = &body[1];
            return Err(
                self.type_err(at, format!("the predicate of '{}' must be bool, not {}", macro_name(kind), p.ty))
            );
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
