//! Evaluating the comprehension macros: one loop over a list or map with the
//! predicate or transform of each macro.

use std::rc::Rc;

use super::access::display_key;
use super::{Ctx, Fault, R, overload};
use crate::selector::compile::{Loop, LoopKind};
use crate::selector::error::EvalErrorKind;
use crate::selector::value::{Value, equals};

impl<'a> Ctx<'a> {
    #[inline(never)]
    pub(super) fn eval_loop(&mut self, lp: &'a Loop) -> R<'a> {
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
        // (`accu` 1, `accu == 1` 2 for `exists_one`). The estimate in `compile/comprehension.rs` is
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
