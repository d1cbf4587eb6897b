//! Kubernetes' own DRA CEL tests, replayed: every case of `TestCEL` in
//! `staging/src/k8s.io/dynamic-resource-allocation/cel/compile_test.go` that applies to
//! resource.k8s.io/v1 without alpha feature gates, with the same expected result,
//! error text and worst-case cost estimate. Each case is named as upstream.
//!
//! The list-type attribute cases (`includes`, `list-of-*`, `macro-on-list-*`,
//! `in-operator-on-list`; feature gate `DRAListTypeAttributes`, alpha) and the
//! environment cases (`*-new-expressions`, `allow_multiple_allocations_disabled`) are
//! replayed in `tests/selector_environments.rs`.

#[path = "support/selector.rs"]
mod support;

use schedkit::selector::{EvalErrorKind, MAX_COST, Selector, SelectorError};
use support::{A, device};

struct Case {
    name: &'static str,
    expr: &'static str,
    driver: &'static str,
    attrs: Vec<(&'static str, A)>,
    caps: Vec<(&'static str, &'static str)>,
    /// Ok(match) or Err(substring of the evaluation error).
    expect: Result<bool, &'static str>,
    cost: u64,
}

fn case(
    name: &'static str,
    expr: &'static str,
    driver: &'static str,
    expect: Result<bool, &'static str>,
    cost: u64,
) -> Case {
    Case { name, expr, driver, attrs: Vec::new(), caps: Vec::new(), expect, cost }
}

impl Case {
    fn attrs(mut self, a: Vec<(&'static str, A)>) -> Case {
        self.attrs = a;
        self
    }
    fn caps(mut self, c: Vec<(&'static str, &'static str)>) -> Case {
        self.caps = c;
        self
    }
}

const ALL: &str = r#"
device.capacity["dra.example.com"].quantity.isGreaterThan(quantity("1Ki")) &&
device.attributes["dra.example.com"].bool &&
device.attributes["dra.example.com"].int > 0 &&
device.attributes["dra.example.com"].string == "fish" &&
device.attributes["dra.example.com"].version.isGreaterThan(semver("0.0.1")) &&
device.capacity["dra.example.com"]["quantity"].isGreaterThan(quantity("1Ki")) &&
device.attributes["dra.example.com"]["bool"] &&
device.attributes["dra.example.com"]["int"] > 0 &&
device.attributes["dra.example.com"]["string"] == "fish" &&
device.attributes["dra.example.com"]["version"].isGreaterThan(semver("0.0.1"))
"#;

const EXPENSIVE: &str = "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(x, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(y, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z2, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z3, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z4, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z5, int('1'.find('[0-9]*')) < 100)))))))";

#[expect(clippy::too_many_lines, reason = "one row per upstream case")]
fn cases() -> Vec<Case> {
    let ex = "dra.example.com";
    vec![
        case("true", "true", "", Ok(true), 0),
        case("false", "false", "", Ok(false), 0),
        case(
            "runtime-error-lookup-identifier",
            r#"device.attributes["no-such-domain"].noSuchAttr.isGreaterThan(quantity("0"))"#,
            "",
            Err("no such key: noSuchAttr"),
            6,
        ),
        case(
            "runtime-error-lookup-map",
            r#"device.attributes["no-such-domain"]["noSuchAttr"].isGreaterThan(quantity("0"))"#,
            "",
            Err("no such key: noSuchAttr"),
            6,
        ),
        case("domain-check-negative", r#""no-such-domain" in device.attributes"#, "", Ok(false), 3),
        case("domain-check-positive", r#""dra.example.com" in device.attributes"#, "", Ok(true), 3)
            .attrs(vec![("dra.example.com/something", A::B(true))]),
        case("empty-driver-name", r#"device.driver == """#, "", Ok(true), 2),
        case("real-driver-name", r#"device.driver == "dra.example.com""#, ex, Ok(true), 4),
        case("driver-name-qualifier", r#"device.attributes["dra.example.com"].name"#, ex, Ok(true), 4)
            .attrs(vec![("name", A::B(true))]),
        case(
            "driver-name-qualifier-map-lookup",
            r#"device.attributes["dra.example.com"]["name"]"#,
            ex,
            Ok(true),
            4,
        )
        .attrs(vec![("name", A::B(true))]),
        case("bind", r#"cel.bind(dra, device.attributes["dra.example.com"], dra.name)"#, ex, Ok(true), 15)
            .attrs(vec![("name", A::B(true))]),
        case("qualified-attribute-name", r#"device.attributes["other.example.com"].name"#, ex, Ok(true), 4)
            .attrs(vec![("other.example.com/name", A::B(true))]),
        case("bool", r#"device.attributes["dra.example.com"].name"#, ex, Ok(true), 4)
            .attrs(vec![("name", A::B(true))]),
        case("int", r#"device.attributes["dra.example.com"].name > 0"#, ex, Ok(true), 5)
            .attrs(vec![("name", A::I(1))]),
        case("string", r#"device.attributes["dra.example.com"].name == "fish""#, ex, Ok(true), 5)
            .attrs(vec![("name", A::S("fish"))]),
        case(
            "version",
            r#"device.attributes["dra.example.com"].name.isGreaterThan(semver("0.0.1"))"#,
            ex,
            Ok(true),
            6,
        )
        .attrs(vec![("name", A::V("1.0.0"))]),
        case(
            "version_v",
            r#"device.attributes["dra.example.com"].name.isGreaterThan(semver("v0.0.1", true)) && isSemver("v1.0.0", true)"#,
            ex,
            Ok(true),
            7,
        )
        .attrs(vec![("name", A::V("1.0.0"))]),
        case(
            "quantity",
            r#"device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))"#,
            ex,
            Ok(true),
            6,
        )
        .caps(vec![("name", "1Mi")]),
        case(
            "check-positive",
            r#""name" in device.capacity["dra.example.com"] && device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))"#,
            ex,
            Ok(true),
            10,
        )
        .caps(vec![("name", "1Mi")]),
        case(
            "check-negative",
            r#"!("name" in device.capacity["dra.example.com"]) || device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))"#,
            "",
            Ok(true),
            11,
        ),
        case("all", ALL, ex, Ok(true), 52)
            .attrs(vec![
                ("bool", A::B(true)),
                ("int", A::I(1)),
                ("string", A::S("fish")),
                ("version", A::V("1.0.0")),
            ])
            .caps(vec![("quantity", "1Mi")]),
        case(
            "many",
            r#"device.attributes["dra.example.com"].a && device.attributes["dra.example.com"].b && device.attributes["dra.example.com"].c"#,
            ex,
            Ok(true),
            12,
        )
        .attrs(vec![("a", A::B(true)), ("b", A::B(true)), ("c", A::B(true))]),
        case("check_attribute_domains", r#"device.attributes.exists_one(x, x == "dra.example.com")"#, ex, Ok(true), 164)
            .attrs(vec![("services", A::S("some_example_value"))]),
        case(
            "check_attribute_ids",
            r#"device.attributes["dra.example.com"].exists_one(x, x == "services")"#,
            ex,
            Ok(true),
            133,
        )
        .attrs(vec![("services", A::S("some_example_value"))]),
        case(
            "split_attribute",
            r#"device.attributes["dra.example.com"].services.split("example").size() >= 2"#,
            ex,
            Ok(true),
            19,
        )
        .attrs(vec![("services", A::S("some_example_value"))]),
        case(
            "regexp_attribute",
            r#"device.attributes["dra.example.com"].services.matches("[^a]?sym")"#,
            ex,
            Ok(true),
            18,
        )
        .attrs(vec![("services", A::S("asymetric"))]),
        case("check_capacity_domains", r#"device.capacity.exists_one(x, x == "dra.example.com")"#, ex, Ok(true), 164)
            .caps(vec![("memory", "1Mi")]),
        case(
            "check_capacity_ids",
            r#"device.capacity["dra.example.com"].exists_one(x, x == "memory")"#,
            ex,
            Ok(true),
            133,
        )
        .caps(vec![("memory", "1Mi")]),
        // Upstream: with list-type attributes disabled an attribute is a scalar and a
        // macro over it fails at run time; the estimate bounds the dyn value by 64.
        case(
            "macro-exists-on-int",
            r#"device.attributes["dra.example.com"].name.exists(x, x > 0)"#,
            ex,
            Err("expected iterable type"),
            5 + (3 + 3) * 64,
        )
        .attrs(vec![("name", A::I(1))]),
        case(
            "macro-exists-on-bool",
            r#"device.attributes["dra.example.com"].name.exists(x, x == true)"#,
            ex,
            Err("expected iterable type"),
            5 + (3 + 3) * 64,
        )
        .attrs(vec![("name", A::B(true))]),
        case(
            "macro-exists-on-string",
            r#"device.attributes["dra.example.com"].name.exists(x, x == "fish")"#,
            ex,
            Err("expected iterable type"),
            5 + (3 + 3) * 64,
        )
        .attrs(vec![("name", A::S("fish"))]),
        // `includes` on scalar attributes (the list cases need list-type attributes,
        // alpha and not built). Upstream runs these with the gate on in the
        // new-expressions environment; a scheduler compiles stored expressions, which
        // declare `includes` whatever the gate.
        case("includes-function-on-bool-scalar-positive", r#"device.attributes["dra.example.com"].name.includes(true)"#, ex, Ok(true), 4 + 48)
            .attrs(vec![("name", A::B(true))]),
        case("includes-function-on-bool-scalar-negative", r#"device.attributes["dra.example.com"].name.includes(true)"#, ex, Ok(false), 4 + 48)
            .attrs(vec![("name", A::B(false))]),
        case("includes-function-on-int-scalar-positive", r#"device.attributes["dra.example.com"].name.includes(1)"#, ex, Ok(true), 4 + 48)
            .attrs(vec![("name", A::I(1))]),
        case("includes-function-on-int-scalar-negative", r#"device.attributes["dra.example.com"].name.includes(1)"#, ex, Ok(false), 4 + 48)
            .attrs(vec![("name", A::I(2))]),
        case("includes-function-on-string-scalar-positive", r#"device.attributes["dra.example.com"].name.includes("fish")"#, ex, Ok(true), 4 + 48)
            .attrs(vec![("name", A::S("fish"))]),
        case("includes-function-on-string-scalar-negative", r#"device.attributes["dra.example.com"].name.includes("bird")"#, ex, Ok(false), 4 + 48)
            .attrs(vec![("name", A::S("fish"))]),
        case("includes-function-on-semver-scalar-positive", r#"device.attributes["dra.example.com"].name.includes(semver("1.0.0"))"#, ex, Ok(true), 4 + 48 + 1)
            .attrs(vec![("name", A::V("1.0.0"))]),
        case("includes-function-on-semver-scalar-negative", r#"device.attributes["dra.example.com"].name.includes(semver("2.0.0"))"#, ex, Ok(false), 4 + 48 + 1)
            .attrs(vec![("name", A::V("1.0.0"))]),
        case(
            "macro-exists-on-version",
            r#"device.attributes["dra.example.com"].name.exists(x, x.isGreaterThan(semver("0.0.1")))"#,
            ex,
            Err("expected iterable type"),
            5 + (3 + 4) * 64,
        )
        .attrs(vec![("name", A::V("1.0.0"))]),
    ]
}

#[test]
fn upstream_test_cel_cases() {
    for c in cases() {
        let sel = Selector::compile(c.expr).unwrap_or_else(|e| panic!("{}: unexpected compile error: {e}", c.name));
        assert_eq!(sel.estimated_cost(), c.cost, "{}: cost estimate", c.name);
        let d = device(c.driver, &c.attrs, &c.caps);
        let (got, actual) = sel.matches_with_cost(&d);
        assert!(actual <= sel.estimated_cost(), "{}: actual cost {actual} above estimate", c.name);
        match (got, c.expect) {
            (Ok(m), Ok(want)) => assert_eq!(m, want, "{}", c.name),
            (Err(e), Err(want)) => assert!(e.to_string().contains(want), "{}: error {e} lacks {want:?}", c.name),
            (got, want) => panic!("{}: got {got:?}, want {want:?}", c.name),
        }
    }
}

#[test]
fn upstream_allow_multiple_allocations_cases() {
    // TestCEL "allow_multiple_allocations", "allow_multiple_allocations_default",
    // "allow_multiple_allocations_false": cost 3 each.
    let d = device("dra.example.com", &[], &[]);
    for (src, allow, want) in [
        ("device.allowMultipleAllocations == true", true, true),
        ("device.allowMultipleAllocations == false", false, true),
        ("device.allowMultipleAllocations == false", true, false),
    ] {
        let sel = Selector::compile(src).unwrap();
        assert_eq!(sel.estimated_cost(), 3, "{src}");
        let dev = d.clone().with_allow_multiple_allocations(allow);
        assert_eq!(sel.matches(&dev), Ok(want), "{src} with {allow}");
    }
}

#[test]
fn includes_on_lists_looks_at_no_more_than_48_values() {
    // As "includes-function-on-very-long-list-*", with list literals for list-type
    // attributes: 48 values are searched; a 49th is an error, unless a match came first.
    let d = device("dra.example.com", &[], &[]);
    let list = |n: usize| (0..n).map(|i| format!("'value-{i}'")).collect::<Vec<_>>().join(", ");
    let eval = |src: String| Selector::compile(&src).unwrap().matches(&d).map_err(|e| e.to_string());
    assert_eq!(eval(format!("[{}].includes('value-48')", list(48))), Ok(false));
    assert_eq!(eval(format!("[{}].includes('value-47')", list(48))), Ok(true));
    assert_eq!(eval(format!("[{}].includes('value-3')", list(60))), Ok(true));
    let e = eval(format!("[{}].includes('value-49')", list(49))).unwrap_err();
    assert!(e.contains("'includes' function cannot be applied to lists longer than 48 values"), "{e}");
    // Equality is CEL's: numbers compare across types, other types are not equal, and
    // a map is compared as one value.
    assert_eq!(eval("1.includes(1u) && [1.0, 2.0].includes(2) && ![1, 2].includes('1')".into()), Ok(true));
    assert_eq!(eval("{'a': 1}.includes('a')".into()), Ok(false));
}

#[test]
fn upstream_syntax_error() {
    // TestCEL "syntax-error".
    let err = Selector::compile("?!").unwrap_err();
    assert!(matches!(err, SelectorError::Syntax { line: 1, column: 1, .. }), "{err}");
}

#[test]
fn upstream_type_error() {
    // TestCEL "type-error".
    let err = Selector::compile("1").unwrap_err();
    assert!(err.to_string().contains("must evaluate to bool or the unknown type, not int"), "{err}");
}

#[test]
fn upstream_expensive_is_refused_at_compile_time() {
    // TestCEL "expensive": upstream estimates 85555551 and fails at run time with
    // "actual cost limit exceeded"; validation of resource.k8s.io objects refuses such
    // an expression up front, which is what compile does here.
    let err = Selector::compile(EXPENSIVE).unwrap_err();
    assert_eq!(err, SelectorError::CostLimitExceeded { estimated: 85_555_551, limit: MAX_COST });
}

#[test]
fn runtime_cost_limit_stops_devices_beyond_the_api_bounds() {
    // The estimate assumes at most 32 attributes per device (the resource.k8s.io/v1
    // bound). A device built outside those bounds can cost more than estimated; the
    // runtime limit still stops it, as cel-go's CostLimit does upstream.
    let src = r#"device.attributes["dra.example.com"].all(x, x != "")"#;
    let est = Selector::compile(src).unwrap().estimated_cost();
    let limits = schedkit::selector::Limits { max_cost: est, ..Default::default() };
    let sel = Selector::compile_with(src, limits).unwrap();
    let names: Vec<String> = (0..1000).map(|i| format!("a{i}")).collect();
    let attrs: Vec<(&str, A)> = names.iter().map(|n| (n.as_str(), A::B(true))).collect();
    let err = sel.matches(&device("dra.example.com", &attrs, &[])).unwrap_err();
    assert_eq!(err.kind, EvalErrorKind::CostLimitExceeded { limit: est });
    assert!(err.to_string().contains("actual cost limit exceeded"));
}

#[test]
fn missing_attribute_error_names_attribute_and_device() {
    let d = device("dra.example.com", &[], &[]);
    let err = support::eval(r#"device.attributes["dra.example.com"].model == "x""#, &d).unwrap_err();
    assert_eq!(err.device, "test-device");
    assert!(
        matches!(&err.kind, EvalErrorKind::NoSuchKey { key, domain: Some("dra.example.com"), capacity: false } if key == "model")
    );
    assert_eq!(err.to_string(), r#"device "test-device": no such key: model in device.attributes["dra.example.com"]"#);
}
