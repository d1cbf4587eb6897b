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
