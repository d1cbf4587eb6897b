//! `matchAttribute` and `distinctAttribute` over scalar and list-valued attributes
//! (KEP-5491, `DRAListTypeAttributes`).
//!
//! Upstream (kubernetes#137190, `structured` allocator constraints): with the gate on, an
//! attribute is a set of values (a scalar is a set of one); `matchAttribute` holds while
//! the values of all covered devices have a non-empty intersection, `distinctAttribute`
//! while they are pairwise disjoint. A value of another type never equals. With the gate
//! off the v1.35 rules apply: scalars compare by equality, and a list value (which the
//! API server only keeps from a time the gate was on) equals nothing.

use crate::dra::compiled::ConstraintKind;
use crate::selector::AttributeValue;

/// The scalar elements of a value: itself, or a list's items.
fn elements(v: &AttributeValue) -> &[AttributeValue] {
    match v {
        AttributeValue::List(items) => items,
        one => std::slice::from_ref(one),
    }
}

/// Whether a device whose attribute is `v` may join the devices already covered by the
/// constraint, whose attributes are `earlier` (`None`, a device lacking it, never occurs:
/// such a device was not admitted). Allocates nothing.
pub(super) fn admits<'a>(
    kind: ConstraintKind,
    v: &AttributeValue,
    earlier: impl Iterator<Item = Option<&'a AttributeValue>> + Clone,
    lists: bool,
) -> bool {
    let mut earlier = earlier.flatten();
    if lists {
        return match kind {
            // Some element of `v` lies in every earlier set: the running intersection
            // stays non-empty.
            ConstraintKind::Match => elements(v).iter().any(|x| earlier.clone().all(|o| elements(o).contains(x))),
            ConstraintKind::Distinct => earlier.all(|o| !elements(o).iter().any(|x| elements(v).contains(x))),
        };
    }
    let is_list = |a: &AttributeValue| matches!(a, AttributeValue::List(_));
    match kind {
        // Upstream v1.35 `matchAttributeConstraint.add`: the first device sets the value;
        // later ones must be the same scalar (a list matches no type case).
        ConstraintKind::Match => earlier.all(|o| same_scalar(o, v)),
        // `distinctAttributeConstraint.matchesAttribute`: a list device fails against
        // any earlier one; a scalar only against an equal earlier scalar.
        ConstraintKind::Distinct => {
            let mut earlier = earlier.peekable();
            if is_list(v) {
                return earlier.peek().is_none();
            }
            earlier.all(|o| o != v)
        }
    }
}

/// Without list semantics, whether `v` matches an earlier device's `o`: the same
/// scalar (a list equals nothing).
pub(super) fn same_scalar(o: &AttributeValue, v: &AttributeValue) -> bool {
    !matches!(o, AttributeValue::List(_)) && !matches!(v, AttributeValue::List(_)) && o == v
}

/// [`admits`] for the search, where `earlier` are the devices already picked under the
/// constraint, each admitted against those before it. Then, without list semantics, a
/// `matchAttribute` is decided by the first of them alone: every later one equals it
/// (upstream v1.35 `matchAttributeConstraint.add` keeps only the first device's value
/// and compares each new one with it), so this reads one earlier value, not all.
pub(super) fn admits_next<'a>(
    kind: ConstraintKind,
    v: &AttributeValue,
    earlier: impl Iterator<Item = Option<&'a AttributeValue>> + Clone,
    lists: bool,
) -> bool {
    if !lists && kind == ConstraintKind::Match {
        return admits(kind, v, earlier.flatten().take(1).map(Some), lists);
    }
    admits(kind, v, earlier, lists)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use proptest::prelude::*;

    use super::{AttributeValue, ConstraintKind, admits, admits_next};

    fn value(items: &[i64]) -> AttributeValue {
        match items {
            [one] => AttributeValue::Int(*one),
            many => AttributeValue::List(many.iter().map(|&i| AttributeValue::Int(i)).collect()),
        }
    }

    fn sets() -> impl Strategy<Value = Vec<Vec<i64>>> {
        prop::collection::vec(prop::collection::vec(0i64..6, 1..4), 1..5)
    }

    proptest! {
        /// Scalars: the list semantics reduce to the v1.35 ones (equal / all different).
        #[test]
        fn scalars_keep_their_meaning(v in 0i64..4, earlier in prop::collection::vec(0i64..4, 0..4)) {
            let e: Vec<AttributeValue> = earlier.iter().map(|&i| AttributeValue::Int(i)).collect();
            for kind in [ConstraintKind::Match, ConstraintKind::Distinct] {
                let on = admits(kind, &AttributeValue::Int(v), e.iter().map(Some), true);
                let off = admits(kind, &AttributeValue::Int(v), e.iter().map(Some), false);
                prop_assert_eq!(on, off);
            }
        }

        /// Along a chain of devices each admitted against those before it, the
        /// search's shortcut answers as the full check does, for both kinds, with and
        /// without list semantics.
        #[test]
        fn admits_next_agrees_along_admitted_chains(sets in sets(), lists: bool) {
            let values: Vec<AttributeValue> = sets.iter().map(|s| value(s)).collect();
            for kind in [ConstraintKind::Match, ConstraintKind::Distinct] {
                let mut chain: Vec<&AttributeValue> = Vec::new();
                for v in &values {
                    let full = admits(kind, v, chain.iter().copied().map(Some), lists);
                    let quick = admits_next(kind, v, chain.iter().copied().map(Some), lists);
                    prop_assert_eq!(full, quick);
                    if full {
                        chain.push(v);
                    }
                }
            }
        }

        /// matchAttribute admits a device iff the intersection of all the sets, its own
        /// included, is not empty.
        #[test]
        fn match_is_a_non_empty_intersection(sets in sets()) {
            let values: Vec<AttributeValue> = sets.iter().map(|s| value(s)).collect();
            let (last, earlier) = values.split_last().unwrap();
            let mut common: BTreeSet<i64> = sets[0].iter().copied().collect();
            for s in &sets[1..] {
                common = common.intersection(&s.iter().copied().collect()).copied().collect();
            }
            prop_assert_eq!(admits(ConstraintKind::Match, last, earlier.iter().map(Some), true), !common.is_empty());
        }

        /// distinctAttribute admits a device iff its set shares no value with any earlier
        /// one; for two devices it does not matter which came first.
        #[test]
        fn distinct_is_disjoint_and_symmetric(a in prop::collection::vec(0i64..6, 1..4), b in prop::collection::vec(0i64..6, 1..4)) {
            let (va, vb) = (value(&a), value(&b));
            let disjoint = a.iter().all(|x| !b.contains(x));
            prop_assert_eq!(admits(ConstraintKind::Distinct, &va, std::iter::once(Some(&vb)), true), disjoint);
            prop_assert_eq!(admits(ConstraintKind::Distinct, &vb, std::iter::once(Some(&va)), true), disjoint);
        }
    }
}
