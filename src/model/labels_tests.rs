//! Unit tests of label sets and label and node selectors.

use super::*;

fn req(key: &str, op: NodeSelectorOperator, values: &[&str]) -> NodeSelectorRequirement {
    NodeSelectorRequirement::new(key, op, values)
}

fn term(reqs: Vec<NodeSelectorRequirement>) -> NodeSelectorTerm {
    NodeSelectorTerm { match_expressions: reqs, match_fields: vec![] }
}

#[test]
fn node_selector_operators() {
    use NodeSelectorOperator::*;
    let labels = Labels::from_pairs([("zone", "a"), ("gpus", "8"), ("weird", "8x")]);
    let name = Symbol::intern("n1");
    let cases: Vec<(NodeSelectorRequirement, bool)> = vec![
        (req("zone", In, &["a", "b"]), true),
        (req("zone", In, &["b"]), false),
        (req("zone", NotIn, &["b"]), true),
        (req("missing", NotIn, &["b"]), true),
        (req("zone", Exists, &[]), true),
        (req("missing", DoesNotExist, &[]), true),
        (req("gpus", Gt, &["4"]), true),
        (req("gpus", Gt, &["8"]), false),
        (req("gpus", Lt, &["9"]), true),
        // A non-integer label never satisfies Gt/Lt (upstream nodeaffinity tests).
        (req("weird", Gt, &["1"]), false),
        (req("missing", Lt, &["1"]), false),
    ];
    for (r, want) in cases {
        let sel = NodeSelector::new(vec![term(vec![r.clone()])]).unwrap();
        assert_eq!(sel.matches(&labels, name), want, "{r:?}");
    }
}

#[test]
fn match_fields_metadata_name() {
    let mut t = NodeSelectorTerm {
        match_expressions: vec![],
        match_fields: vec![req(FIELD_METADATA_NAME, NodeSelectorOperator::In, &["n1"])],
    };
    t.validate("t").unwrap();
    assert!(t.matches(&Labels::new(), Symbol::intern("n1")));
    assert!(!t.matches(&Labels::new(), Symbol::intern("n2")));
}

#[test]
fn invalid_selectors_are_rejected() {
    use NodeSelectorOperator::*;
    let bad = [req("k", In, &[]), req("k", Exists, &["v"]), req("k", Lt, &["1", "2"]), req("", Exists, &[])];
    for r in bad {
        assert!(NodeSelector::new(vec![term(vec![r.clone()])]).is_err(), "{r:?}");
    }
    let err = NodeSelector::new(vec![term(vec![req("k", Gt, &["1", "2"])])]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "nodeSelectorTerms[0].matchExpressions[0]: operator Gt needs exactly one integer value, got [\"1\", \"2\"]"
    );
    // Paths are written only for an error: each error still names its place.
    let ok = req("k", Exists, &[]);
    let err = NodeSelector::new(vec![term(vec![ok.clone()]), term(vec![ok.clone(), req("k", In, &[])])]).unwrap_err();
    assert_eq!(err.to_string(), "nodeSelectorTerms[1].matchExpressions[1]: operator In needs at least one value");
    let fields =
        NodeSelectorTerm { match_expressions: vec![ok], match_fields: vec![req("metadata.name", Exists, &[])] };
    let err = NodeSelector::new(vec![fields]).unwrap_err();
    assert!(err.to_string().starts_with("nodeSelectorTerms[0].matchFields[0]: "), "{err}");
    let empty_key =
        LabelSelectorRequirement { key: Symbol::intern(""), operator: LabelOperator::Exists, values: SmallVec::new() };
    let err = LabelSelector::new(Labels::new(), vec![empty_key]).unwrap_err();
    assert!(err.to_string().starts_with("matchExpressions[0]"), "{err}");
    let json = r#"{"nodeSelectorTerms":[{"matchExpressions":[{"key":"a","operator":"In","values":[]}]}]}"#;
    assert!(serde_json::from_str::<NodeSelector>(json).is_err());
    let json = r#"{"matchExpressions":[{"key":"a","operator":"Bogus"}]}"#;
    assert!(serde_json::from_str::<LabelSelector>(json).is_err());
}

/// Upstream `TestNodeSelectorMatch` / `TestLazyErrorNodeSelectorMatch`
/// (component-helpers/scheduling/corev1/nodeaffinity/nodeaffinity_test.go): a term
/// upstream cannot parse matches nothing, the other terms still match, and the
/// parse errors name the field.
#[test]
fn unparsable_terms_match_nothing() {
    use NodeSelectorOperator::*;
    let labels = Labels::from_pairs([("foo", "bar")]);
    let name = Symbol::intern("n1");
    let invalid = term(vec![req("foo", NotIn, &["invalid value: ___@#$%^"])]);
    let sel = NodeSelector::new(vec![invalid.clone()]).unwrap();
    assert!(!sel.matches(&labels, name), "NotIn with an invalid value matches nothing");
    let errs = sel.parse_errors("spec");
    assert_eq!(errs.len(), 1);
    assert_eq!(errs[0].0, "spec.nodeSelectorTerms[0].matchExpressions[0]");
    assert!(errs[0].1.starts_with("values[0]: \"invalid value: ___@#$%^\""), "{errs:?}");
    let sel = NodeSelector::new(vec![invalid, term(vec![req("foo", In, &["bar"])])]).unwrap();
    assert!(sel.matches(&labels, name), "a valid term still matches");
    assert_eq!(sel.parse_errors("spec").len(), 1);
    // Gt with a non-integer loads (the API checks only the count) and never matches.
    let gt = NodeSelector::new(vec![term(vec![req("foo", Gt, &["x"])])]).unwrap();
    assert!(!gt.matches(&Labels::from_pairs([("foo", "5")]), name));
    assert!(gt.parse_errors("")[0].1.contains("must be an integer"));
    // Values over 63 characters are not label values; matchFields values are not
    // checked as labels (node names).
    let long = "a".repeat(64);
    assert!(!NodeSelector::new(vec![term(vec![req("foo", In, &[&long])])]).unwrap().parse_errors("").is_empty());
    let mut fields =
        NodeSelectorTerm { match_expressions: vec![], match_fields: vec![req(FIELD_METADATA_NAME, In, &["node_1"])] };
    fields.validate("t").unwrap();
    assert!(fields.is_parsable());
    for (v, ok) in [("", true), ("a", true), ("a-b_c.d", true), ("-a", false), ("a-", false), ("a b", false)] {
        assert_eq!(is_valid_label_value(v), ok, "{v:?}");
    }
}

#[test]
fn empty_term_matches_nothing_empty_label_selector_everything() {
    let sel = NodeSelector::new(vec![NodeSelectorTerm::default()]).unwrap();
    assert!(!sel.matches(&Labels::from_pairs([("a", "b")]), Symbol::EMPTY));
    assert!(LabelSelector::default().matches(&Labels::new()));
}
