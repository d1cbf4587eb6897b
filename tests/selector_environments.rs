//! Selector environments and list-valued attributes: the `DRAListTypeAttributes` and
//! environment cases of `TestCEL` in
//! `staging/src/k8s.io/dynamic-resource-allocation/cel/compile_test.go` (Kubernetes
//! v1.36), each named as upstream, with the same result, error text and worst-case
//! cost. Upstream runs a case in both environments and with every gate combination
//! unless it pins them; so do these.

use schedkit::selector::{
    AttributeValue, CompileOptions, CostCheck, Device, Environment, Limits, Selector, SelectorError, SelectorFeatures,
    Semver,
};

/// `max(DeviceAttributeMaxValueLength, ResourceSliceMaxAttributeValuesPerDevice)`.
const MAX_ELEMENTS: u64 = 64;

fn opts(environment: Environment, lists: bool, consumable: bool) -> CompileOptions {
    CompileOptions {
        environment,
        features: SelectorFeatures { list_type_attributes: lists, consumable_capacity: consumable },
        ..CompileOptions::default()
    }
}

/// Every (environment, lists, consumable) combination a case runs in: `lists` pins
/// the list gate, `env` the environment.
fn combos(env: Option<Environment>, lists: Option<bool>) -> Vec<CompileOptions> {
    let envs = env.map_or(vec![Environment::NewExpressions, Environment::StoredExpressions], |e| vec![e]);
    let lists = lists.map_or(vec![true, false], |l| vec![l]);
    let mut out = Vec::new();
    for e in &envs {
        for l in &lists {
            for c in [true, false] {
                out.push(opts(*e, *l, c));
            }
        }
    }
    out
}

fn dev(attrs: Vec<(&str, AttributeValue)>) -> Device {
    let mut d = Device::new("test-device", "dra.example.com");
    for (n, v) in attrs {
        d.set_attribute(n, v);
    }
    d
}

fn list(items: Vec<AttributeValue>) -> AttributeValue {
    AttributeValue::List(items.into_boxed_slice())
}

fn strs(v: &[&str]) -> AttributeValue {
    list(v.iter().map(|s| AttributeValue::String((*s).into())).collect())
}

fn ints(v: &[i64]) -> AttributeValue {
    list(v.iter().map(|i| AttributeValue::Int(*i)).collect())
}

fn ver(s: &str) -> AttributeValue {
    AttributeValue::Version(Semver::parse(s).unwrap())
}

/// Compiles in every combination, checks the estimate and the result (`Err`: a
/// substring of the evaluation error).
fn check(
    name: &str,
    env: Option<Environment>,
    lists: Option<bool>,
    expr: &str,
    d: &Device,
    expect: Result<bool, &str>,
    cost: u64,
) {
    for o in combos(env, lists) {
        let s = Selector::compile_opts(expr, &o).unwrap_or_else(|e| panic!("{name} {o:?}: {e}"));
        assert_eq!(s.estimated_cost(), cost, "{name} {o:?}");
        let (r, actual) = s.matches_with_cost(d);
        assert!(actual <= cost, "{name}: actual cost {actual} over the estimate {cost}");
        match (r, expect) {
            (Ok(got), Ok(want)) => assert_eq!(got, want, "{name} {o:?}"),
            (Err(e), Err(want)) => assert!(e.to_string().contains(want), "{name}: {e}"),
            (got, want) => panic!("{name} {o:?}: got {got:?}, want {want:?}"),
        }
    }
}

fn refused(name: &str, env: Environment, lists: bool, consumable: bool, expr: &str, want: &str) {
    match Selector::compile_opts(expr, &opts(env, lists, consumable)) {
        Err(e @ SelectorError::Type { .. }) => assert!(e.to_string().contains(want), "{name}: {e}"),
        other => panic!("{name}: expected a compile error containing {want:?}, got {other:?}"),
    }
}

#[test]
fn compile_errors_in_new_expressions() {
    refused(
        "macro-compilation-error-new-expressions",
        Environment::NewExpressions,
        false,
        true,
        r#"device.attributes["dra.example.com"].ids.exists(id, id == 1)"#,
        "cannot be the range of a comprehension",
    );
    refused(
        "includes-function-compilation-error",
        Environment::NewExpressions,
        false,
        true,
        r#"device.attributes["dra.example.com"].attr.includes("fish")"#,
        "undeclared reference to 'includes'",
    );
    refused(
        "allow_multiple_allocations_disabled",
        Environment::NewExpressions,
        true,
        false,
        "device.allowMultipleAllocations == false",
        "undefined field 'allowMultipleAllocations'",
    );
    // The stored environment accepts all three whatever the gates.
    for expr in [
        r#"device.attributes["dra.example.com"].ids.exists(id, id == 1)"#,
        r#"device.attributes["dra.example.com"].attr.includes("fish")"#,
        "device.allowMultipleAllocations == false",
    ] {
        assert!(Selector::compile_opts(expr, &opts(Environment::StoredExpressions, false, false)).is_ok(), "{expr}");
    }
}

#[test]
fn list_values() {
    let names = |v| dev(vec![("names", v)]);
    check(
        "list-result-type-causes-match-error",
        None,
        None,
        r#"device.attributes["dra.example.com"].names"#,
        &names(strs(&["fish", "bird"])),
        Err("list"),
        4,
    );
    check(
        "list-of-bool",
        None,
        None,
        r#"device.attributes["dra.example.com"].names.size() == 2"#,
        &names(list(vec![AttributeValue::Bool(true), AttributeValue::Bool(false)])),
        Ok(true),
        6,
    );
    check(
        "list-of-int",
        None,
        None,
        r#"device.attributes["dra.example.com"].names.size() == 2"#,
        &names(ints(&[1, 2])),
        Ok(true),
        6,
    );
    check(
        "list-of-string",
        None,
        None,
        r#"device.attributes["dra.example.com"].names.size() == 2"#,
        &names(strs(&["fish", "bird"])),
        Ok(true),
        6,
    );
    check(
        "list-of-semver",
        None,
        None,
        r#"device.attributes["dra.example.com"].names.size() == 2"#,
        &names(list(vec![ver("1.0.0"), ver("2.0.0")])),
        Ok(true),
        6,
    );
    check(
        "in-operator-on-list",
        None,
        None,
        r#"1 in device.attributes["dra.example.com"].names"#,
        &names(ints(&[1, 2, 3])),
        Ok(true),
        4 + MAX_ELEMENTS,
    );
}

#[test]
fn macros_on_lists() {
    let names = |v| dev(vec![("names", v)]);
    check(
        "macro-on-list-of-int",
        None,
        Some(true),
        r#"device.attributes["dra.example.com"].names.exists(x, x > 0)"#,
        &names(ints(&[1, 2])),
        Ok(true),
        5 + 6 * MAX_ELEMENTS,
    );
    check(
        "macro-on-list-of-string",
        None,
        Some(true),
        r#"device.attributes["dra.example.com"].names.all(x, x != "")"#,
        &names(strs(&["fish", "bird"])),
        Ok(true),
        5 + 4 * MAX_ELEMENTS,
    );
    check(
        "macro-on-list-of-semver",
        None,
        Some(true),
        r#"device.attributes["dra.example.com"].names.all(x, x.isGreaterThan(semver("0.0.1")))"#,
        &names(list(vec![ver("1.0.0"), ver("2.0.0")])),
        Ok(true),
        5 + 6 * MAX_ELEMENTS,
    );
    let name = |v| dev(vec![("name", v)]);
    // Upstream's message names cel-go's Go types ("got 'types.Int', expected iterable
    // type"); schedkit says the same in its own words.
    for (case, v, expr) in [
        ("macro-exists-on-int", AttributeValue::Int(1), "x > 0"),
        ("macro-exists-on-bool", AttributeValue::Bool(true), "x == true"),
        ("macro-exists-on-string", AttributeValue::String("fish".into()), r#"x == "fish""#),
    ] {
        let expr = format!(r#"device.attributes["dra.example.com"].name.exists(x, {expr})"#);
        check(case, None, Some(true), &expr, &name(v), Err(""), 5 + 6 * MAX_ELEMENTS);
    }
    check(
        "macro-exists-on-version",
        None,
        Some(true),
        r#"device.attributes["dra.example.com"].name.exists(x, x.isGreaterThan(semver("0.0.1")))"#,
        &name(ver("1.0.0")),
        Err(""),
        5 + 7 * MAX_ELEMENTS,
    );
}

#[test]
fn includes() {
    let name = |v| dev(vec![("name", v)]);
    let cases: Vec<(&str, &str, AttributeValue, bool, u64)> = vec![
        ("includes-function-can-evaluate", r#""fish""#, strs(&["fish", "bird"]), true, 52),
        (
            "includes-function-compilation-and-eval-success",
            r#""fish""#,
            AttributeValue::String("fish".into()),
            true,
            52,
        ),
        ("includes-function-on-bool-scalar-positive", "true", AttributeValue::Bool(true), true, 52),
        ("includes-function-on-bool-scalar-negative", "true", AttributeValue::Bool(false), false, 52),
        (
            "includes-function-on-bool-list-positive",
            "true",
            list(vec![AttributeValue::Bool(true), AttributeValue::Bool(false)]),
            true,
            52,
        ),
        (
            "includes-function-on-bool-list-negative",
            "false",
            list(vec![AttributeValue::Bool(true), AttributeValue::Bool(true)]),
            false,
            52,
        ),
        ("includes-function-on-int-scalar-positive", "1", AttributeValue::Int(1), true, 52),
        ("includes-function-on-int-scalar-negative", "1", AttributeValue::Int(2), false, 52),
        ("includes-function-on-int-list-positive", "1", ints(&[1, 2]), true, 52),
        ("includes-function-on-int-list-negative", "3", ints(&[1, 2]), false, 52),
        ("includes-function-on-string-scalar-positive", r#""fish""#, AttributeValue::String("fish".into()), true, 52),
        ("includes-function-on-string-scalar-negative", r#""bird""#, AttributeValue::String("fish".into()), false, 52),
        ("includes-function-on-string-list-positive", r#""fish""#, strs(&["fish", "bird"]), true, 52),
        ("includes-function-on-string-list-negative", r#""cat""#, strs(&["fish", "bird"]), false, 52),
        ("includes-function-on-semver-scalar-positive", r#"semver("1.0.0")"#, ver("1.0.0"), true, 53),
        ("includes-function-on-semver-scalar-negative", r#"semver("2.0.0")"#, ver("1.0.0"), false, 53),
        (
            "includes-function-on-semver-list-positive",
            r#"semver("1.0.0")"#,
            list(vec![ver("1.0.0"), ver("2.0.0")]),
            true,
            53,
        ),
        (
            "includes-function-on-semver-list-negative",
            r#"semver("3.0.0")"#,
            list(vec![ver("1.0.0"), ver("2.0.0")]),
            false,
            53,
        ),
    ];
    for (case, arg, v, want, cost) in cases {
        let expr = format!(r#"device.attributes["dra.example.com"].name.includes({arg})"#);
        check(case, None, Some(true), &expr, &name(v), Ok(want), cost);
    }
    let values = |n: usize| {
        strs(&(0..n).map(|i| format!("value-{i}")).collect::<Vec<_>>().iter().map(String::as_str).collect::<Vec<_>>())
    };
    check(
        "includes-function-on-very-long-list-positive",
        None,
        Some(true),
        r#"device.attributes["dra.example.com"].name.includes("value-48")"#,
        &name(values(48)),
        Ok(false),
        52,
    );
    check(
        "includes-function-on-very-long-list-runtime-error",
        None,
        Some(true),
        r#"device.attributes["dra.example.com"].name.includes("value-49")"#,
        &name(values(49)),
        Err("'includes' function cannot be applied to lists longer than 48 values"),
        52,
    );
}

#[test]
fn runtime_only_cost_check() {
    // upstream `Options.DisableCostEstimation`: the worst case is not estimated, the
    // expression compiles, and the actual cost is still held to the limit ("expensive").
    let expr = "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(x, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(y, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z2, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z3, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z4, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z5, int('1'.find('[0-9]*')) < 100)))))))";
    assert!(matches!(Selector::compile(expr), Err(SelectorError::CostLimitExceeded { estimated: 85_555_551, .. })));
    let o = CompileOptions { cost_check: CostCheck::RuntimeOnly, ..CompileOptions::default() };
    let s = Selector::compile_opts(expr, &o).unwrap();
    assert_eq!(s.estimated_cost(), u64::MAX);
    let err = s.matches(&dev(vec![])).unwrap_err();
    assert!(err.to_string().contains("cost limit exceeded"), "{err}");
    // A cheap expression evaluates as usual, and limits still apply.
    let small = CompileOptions { limits: Limits { max_length: 4, ..Limits::default() }, ..o };
    assert!(matches!(Selector::compile_opts("true || false", &small), Err(SelectorError::TooLong { .. })));
    assert!(Selector::compile_opts("true", &o).unwrap().matches(&dev(vec![])).unwrap());
}
