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
        ConstraintKind::Match => earlier.all(|o| !is_list(o) && !is_list(v) && o == v),
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

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use proptest::prelude::*;

    use super::{AttributeValue, ConstraintKind, admits};

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
