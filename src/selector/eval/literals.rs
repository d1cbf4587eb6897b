//! Evaluating list and map literals, optional entries included.

use std::rc::Rc;

use super::access::display_key;
use super::{Ctx, Fault, R};
use crate::selector::compile::Node;
use crate::selector::error::EvalErrorKind;
use crate::selector::value::{Value, equals};

/// Adds one entry of a map literal; a key already present is an error, as in cel-go.
pub(super) fn push_map_entry<'a>(
    entries: &mut Vec<(Value<'a>, Value<'a>)>,
    k: Value<'a>,
    v: Value<'a>,
) -> Result<(), Fault> {
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

impl<'a> Ctx<'a> {
    #[inline(never)]
    pub(super) fn eval_list(&mut self, items: &'a [Node]) -> R<'a> {
        self.cost += 10;
        let mut v = Vec::with_capacity(items.len());
        for i in items {
            v.push(self.eval(i)?);
        }
        Ok(Value::List(Rc::new(v)))
    }

    #[inline(never)]
    pub(super) fn eval_map(&mut self, entries: &'a [(Node, Node)]) -> R<'a> {
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
    pub(super) fn eval_opt_list(&mut self, items: &'a [(Node, bool)]) -> R<'a> {
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
    pub(super) fn eval_opt_map(&mut self, entries: &'a [(Node, Node, bool)]) -> R<'a> {
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
}
