//! The compiled matchers against upstream's tables and, by property, against the
//! matching on the pod's spec they replace.

use super::*;
use crate::model::{NodeSelectorRequirement as Req, NodeSelectorTerm};

fn term(exprs: Vec<Req>, fields: Vec<Req>) -> NodeSelectorTerm {
    let mut t = NodeSelectorTerm { match_expressions: exprs, match_fields: fields };
    t.validate("t").unwrap();
    t
}

fn name_in(values: &[&str]) -> Req {
    Req::new("metadata.name", NodeSelectorOperator::In, values)
}

fn required(terms: Vec<NodeSelectorTerm>) -> CompiledSelector {
    let sel = NodeSelector::new(terms).unwrap();
    CompiledSelector::new(&Labels::new(), Some(&sel), &[])
}

/// Upstream `TestNodeSelectorMatch`
/// (component-helpers/scheduling/corev1/nodeaffinity/nodeaffinity_test.go), the
/// cases that parse.
#[test]
fn node_selector_match_upstream() {
    let label_1 = || Req::new("label_1", NodeSelectorOperator::In, &["label_1_val"]);
    let host = Symbol::intern("host_1");
    let labelled = Labels::from_pairs([("label_1", "label_1_val")]);
    // "node matches field selector, but not labels"
    let c = required(vec![term(vec![label_1()], vec![name_in(&["host_1"])])]);
    assert!(!c.required_matches(&Labels::new(), host));
    // "node matches field selector and label selector"
    assert!(c.required_matches(&labelled, host));
    // "second term matches"
    let c = required(vec![term(vec![label_1()], vec![]), term(vec![], vec![name_in(&["host_1"])])]);
    assert!(c.required_matches(&Labels::new(), host));
}

/// Upstream `TestPreferredSchedulingTermsScore` ("first and third term match": 5 + 11).
#[test]
fn preferred_terms_score_upstream() {
    let terms = [
        (5, term(vec![], vec![name_in(&["host_1"])])),
        (7, term(vec![Req::new("unknown_label", NodeSelectorOperator::In, &["unknown_label_val"])], vec![])),
        (11, term(vec![Req::new("label_1", NodeSelectorOperator::In, &["label_1_val"])], vec![])),
    ]
    .map(|(weight, preference)| PreferredSchedulingTerm { weight, preference });
    let c = CompiledSelector::preferred_only(&terms);
    let labels = Labels::from_pairs([("label_1", "label_1_val")]);
    assert_eq!(c.preferred_score(&labels, Symbol::intern("host_1")), 16);
    assert_eq!(c.preferred_score(&labels, Symbol::intern("host_2")), 11);
}

/// Upstream `labels.Requirement.Matches` (apimachinery/pkg/labels/selector_test.go
/// `TestRequirementMatches`-style cases): `Gt`/`Lt` parse the node's value as an
/// integer, a missing or non-integer value fails; `DoesNotExist` and `NotIn` hold
/// for a missing key.
#[test]
fn operators_like_upstream() {
    let one = |r: Req| required(vec![term(vec![r], vec![])]);
    let n = Symbol::intern("n");
    let l = |v: &str| Labels::from_pairs([("k", v)]);
    let gt = one(Req::new("k", NodeSelectorOperator::Gt, &["4"]));
    assert!(gt.required_matches(&l("5"), n));
    assert!(!gt.required_matches(&l("4"), n));
    assert!(!gt.required_matches(&l("x"), n));
    assert!(!gt.required_matches(&Labels::new(), n));
    let lt = one(Req::new("k", NodeSelectorOperator::Lt, &["2"]));
    assert!(lt.required_matches(&l("1"), n));
    assert!(lt.required_matches(&l("0001"), n), "leading zeros parse");
    assert!(!lt.required_matches(&l("2"), n));
    assert!(!lt.required_matches(&l("9223372036854775808"), n), "out of int64 range is not an integer");
    // `-2` is not a label value (it must start with an alphanumeric), so upstream's
    // parser rejects the requirement and the term matches nothing.
    let bad = one(Req::new("k", NodeSelectorOperator::Lt, &["-2"]));
    assert!(!bad.required_matches(&l("1"), n));
    let dne = one(Req::new("k", NodeSelectorOperator::DoesNotExist, &[]));
    assert!(dne.required_matches(&Labels::new(), n));
    assert!(!dne.required_matches(&l(""), n));
    let not_in = one(Req::new("k", NodeSelectorOperator::NotIn, &["a"]));
    assert!(not_in.required_matches(&Labels::new(), n));
    assert!(!not_in.required_matches(&l("a"), n));
    let name_not_in =
        required(vec![term(vec![], vec![Req::new("metadata.name", NodeSelectorOperator::NotIn, &["n"])])]);
    assert!(!name_not_in.required_matches(&Labels::new(), n));
    assert!(name_not_in.required_matches(&Labels::new(), Symbol::intern("m")));
}

/// `nodeSelector` is ANDed with the required terms; no required affinity matches
/// every node that passes the selector; an empty list of terms matches none.
#[test]
fn node_selector_and_terms() {
    let n = Symbol::intern("n");
    let sel = Labels::from_pairs([("a", "1")]);
    let none = CompiledSelector::new(&sel, None, &[]);
    assert!(none.required_matches(&Labels::from_pairs([("a", "1"), ("b", "2")]), n));
    assert!(!none.required_matches(&Labels::from_pairs([("a", "2")]), n));
    let empty = NodeSelector::new(vec![]).unwrap();
    assert!(!CompiledSelector::new(&Labels::new(), Some(&empty), &[]).required_matches(&Labels::new(), n));
    assert!(CompiledSelector::new(&Labels::new(), None, &[]).required_matches(&Labels::new(), n));
}

/// A term upstream's lazy parser rejects matches nothing; the other terms still do.
#[test]
fn unparsable_term_matches_nothing() {
    let n = Symbol::intern("n");
    let bad = term(vec![Req::new("k", NodeSelectorOperator::NotIn, &["not a label value"])], vec![]);
    let good = term(vec![Req::new("k", NodeSelectorOperator::Exists, &[])], vec![]);
    let c = required(vec![bad.clone()]);
    assert!(!c.required_matches(&Labels::from_pairs([("k", "v")]), n));
    let c = required(vec![bad, good]);
    assert!(c.required_matches(&Labels::from_pairs([("k", "v")]), n));
}

mod props {
    use super::*;
    use proptest::prelude::*;

    const KEYS: [&str; 3] = ["a", "b", "c"];
    const VALUES: [&str; 5] = ["1", "2", "10", "x", "-3"];
    const NAMES: [&str; 2] = ["n1", "n2"];

    fn requirement() -> impl Strategy<Value = Req> {
        (0usize..3, 0u8..6, proptest::collection::vec(0usize..5, 1..3)).prop_map(|(k, op, vs)| {
            let values: Vec<&str> = vs.iter().map(|&i| VALUES[i]).collect();
            let key = KEYS[k];
            match op {
                0 => Req::new(key, NodeSelectorOperator::In, &values),
                1 => Req::new(key, NodeSelectorOperator::NotIn, &values),
                2 => Req::new(key, NodeSelectorOperator::Exists, &[]),
                3 => Req::new(key, NodeSelectorOperator::DoesNotExist, &[]),
                4 => Req::new(key, NodeSelectorOperator::Gt, &values[..1]),
                _ => Req::new(key, NodeSelectorOperator::Lt, &values[..1]),
            }
        })
    }

    fn node_term() -> impl Strategy<Value = NodeSelectorTerm> {
        (
            proptest::collection::vec(requirement(), 0..3),
            proptest::option::of((any::<bool>(), proptest::collection::vec(0usize..2, 1..3))),
        )
            .prop_map(|(exprs, field)| {
                let fields = field
                    .map(|(not, ns)| {
                        let names: Vec<&str> = ns.iter().map(|&i| NAMES[i]).collect();
                        let op = if not { NodeSelectorOperator::NotIn } else { NodeSelectorOperator::In };
                        vec![Req::new("metadata.name", op, &names)]
                    })
                    .unwrap_or_default();
                term(exprs, fields)
            })
    }

    fn labels() -> impl Strategy<Value = Labels> {
        proptest::collection::vec((0usize..3, 0usize..5), 0..4)
            .prop_map(|pairs| Labels::from_pairs(pairs.into_iter().map(|(k, v)| (KEYS[k], VALUES[v]))))
    }

    proptest! {
        /// The compiled matchers agree with matching on the spec: `nodeSelector`
        /// plus [`NodeSelector::matches`] for the required terms, and the weights of
        /// the preferred terms [`NodeSelectorTerm::matches`] accepts.
        #[test]
        fn compiled_agrees_with_spec(
            selector in labels(),
            req in proptest::option::of(proptest::collection::vec(node_term(), 0..3)),
            pref in proptest::collection::vec((1i32..=100, node_term()), 0..3),
            node in labels(),
            name in 0usize..2,
        ) {
            let name = Symbol::intern(NAMES[name]);
            let req = req.map(|t| NodeSelector::new(t).unwrap());
            let pref: Vec<PreferredSchedulingTerm> =
                pref.into_iter().map(|(weight, preference)| PreferredSchedulingTerm { weight, preference }).collect();
            let c = CompiledSelector::new(&selector, req.as_ref(), &pref);
            let want = selector.iter().all(|(k, v)| node.get(k) == Some(v))
                && req.as_ref().is_none_or(|r| r.matches(&node, name));
            prop_assert_eq!(c.required_matches(&node, name), want);
            let want_score: i64 = pref
                .iter()
                .filter(|p| p.preference.matches(&node, name))
                .map(|p| i64::from(p.weight))
                .sum();
            prop_assert_eq!(c.preferred_score(&node, name), want_score);
        }
    }
}
