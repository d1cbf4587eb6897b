//! Checking and compiling list and map literals (optional entries included).

use super::{Compiler, Node, Out, add};
use crate::selector::ast::Expr;
use crate::selector::error::SelectorError;
use crate::selector::types::Ty;

/// A list literal being compiled.
pub(super) struct ListAcc {
    nodes: Vec<(Node, bool)>,
    ty: Option<Ty>,
    cost: u64,
    elem_size: u64,
}

/// A map literal being compiled.
pub(super) struct MapAcc {
    nodes: Vec<(Node, Node, bool)>,
    kt: Option<Ty>,
    vt: Option<Ty>,
    cost: u64,
    elem_size: u64,
}

impl Compiler<'_> {
    #[inline(never)]
    pub(super) fn list_literal(&mut self, items: &[Expr], optional: &[usize]) -> Result<Out, SelectorError> {
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
    pub(super) fn join_literal_type(
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
    pub(super) fn list_item(&self, acc: &mut ListAcc, item: &Expr, o: Out, is_opt: bool) -> Result<(), SelectorError> {
        let item_ty = if is_opt { self.optional_content(item, &o.ty)? } else { o.ty.clone() };
        let mixed = self.mixed_literals > 0;
        acc.ty = Some(self.join_literal_type(acc.ty.take(), item_ty, mixed, item, "list elements")?);
        acc.cost = add(acc.cost, o.cost);
        acc.elem_size = acc.elem_size.max(o.size);
        acc.nodes.push((o.node, is_opt));
        Ok(())
    }

    pub(super) fn list_out(acc: ListAcc, plain: bool) -> Out {
        let n = acc.nodes.len() as u64;
        let node = if plain {
            Node::List(acc.nodes.into_iter().map(|(n, _)| n).collect())
        } else {
            Node::OptList(acc.nodes.into())
        };
        Out { node, ty: Ty::list(acc.ty.unwrap_or(Ty::Dyn)), cost: acc.cost, size: n, elem_size: acc.elem_size }
    }

    #[inline(never)]
    pub(super) fn map_literal(&mut self, entries: &[(Expr, Expr)], optional: &[usize]) -> Result<Out, SelectorError> {
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
    pub(super) fn check_map_key(&self, k: &Expr, ty: &Ty) -> Result<(), SelectorError> {
        if matches!(ty, Ty::Int | Ty::Uint | Ty::String | Ty::Bool | Ty::Dyn) {
            Ok(())
        } else {
            Err(self.type_err(k, format!("unsupported map key type {ty}")))
        }
    }

    #[inline(never)]
    pub(super) fn map_entry(
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

    pub(super) fn map_out(acc: MapAcc, plain: bool) -> Out {
        let n = acc.nodes.len() as u64;
        let node = if plain {
            Node::Map(acc.nodes.into_iter().map(|(k, v, _)| (k, v)).collect())
        } else {
            Node::OptMap(acc.nodes.into())
        };
        let ty = Ty::map(acc.kt.unwrap_or(Ty::Dyn), acc.vt.unwrap_or(Ty::Dyn));
        Out { node, ty, cost: acc.cost, size: n, elem_size: acc.elem_size }
    }
}
