//! Actual (run-time) cost of the string library, and `replace` charged for the result
//! it builds, so the selector budget stops a call that would build a huge string.
//!
//! Upstream: `k8s.io/apiserver/pkg/cel/library/cost_test.go` `TestStringLibrary`
//! (`expectRuntimeCost`), with the run-time costs of `CallCost` in `library/cost.go`.

use schedkit::selector::{Device, EvalErrorKind, MAX_COST, Selector};

/// Actual cost of evaluating `src` as a value: bound to a variable that the result
/// ignores, less what the binding costs around a constant.
fn runtime(src: &str) -> u64 {
    let device = Device::new("d", "example.com");
    let run = |e: &str| {
        let sel = Selector::compile(&format!("cel.bind(v, {e}, true)")).unwrap_or_else(|e| panic!("{src}: {e}"));
        let (r, cost) = sel.matches_with_cost(&device);
        assert!(r.unwrap_or_else(|e| panic!("{src}: {e}")), "{src}");
        cost
    };
    run(src) - run("''")
}

#[test]
fn upstream_string_library_runtime_costs() {
    // TestStringLibrary: (name, expression, expectRuntimeCost). `join` is left out: in
    // the DRA environment a list literal's strings have no size, so it does not compile.
    let cases: &[(&str, &str, u64)] = &[
        ("lowerAscii", "'ABCDEFGHIJ abcdefghij'.lowerAscii()", 3),
        ("upperAscii", "'ABCDEFGHIJ abcdefghij'.upperAscii()", 3),
        ("quote", "strings.quote('ABCDEFGHIJ abcdefghij')", 3),
        ("replace", "'abc 123 def 123'.replace('123', '456')", 3),
        ("replace with empty", "'abc 123 def 123'.replace('123', '')", 3),
        ("replace with limit", "'abc 123 def 123'.replace('123', '456', 1)", 3),
        ("split", "'abc 123 def 123'.split(' ')", 3),
        ("split with limit", "'abc 123 def 123'.split(' ', 1)", 3),
        ("substring", "'abc 123 def 123'.substring(5)", 2),
        ("substring with end", "'abc 123 def 123'.substring(5, 8)", 2),
        ("trim", "'  abc 123 def 123  '.trim()", 2),
        ("find", "'abc 123 def 123'.find('123')", 2),
        ("findAll", "'abc 123 def 123'.findAll('123')", 2),
        ("findAll with limit", "'abc 123 def 123'.findAll('123', 1)", 2),
    ];
    for (name, src, want) in cases {
        assert_eq!(runtime(src), *want, "{name}: {src}");
    }
    // "replace between all chars" expects 3 upstream, which charges the receiver twice
    // whatever the result; schedkit charges the result it builds (15 + 16 = 31 code
    // points) on top of one traversal of the receiver: ceil(0.1 * (15 + 31)) = 5.
    assert_eq!(runtime("'abc 123 def 123'.replace('', 'x')"), 5);
}

#[test]
fn string_sizes_are_counted_in_code_points() {
    // cel-go's `String.Size` counts code points: 15 two-byte characters cost as 15.
    assert_eq!(runtime("'ééééééééééééééé'.lowerAscii()"), 2);
    assert_eq!(runtime("'ééééééééééééééé'.replace('é', 'e')"), 3);
}

#[test]
fn replace_that_would_build_a_huge_string_is_stopped_by_the_budget() {
    // Issue 22: priced 802 by the estimator (ceil(0.2 * 4010)), the call inserts 4,010
    // characters before each of 4,010 characters and at the end: 16 million characters.
    // Charged at 0.1 per character of the result before it is built, it exceeds the
    // 1,000,000 budget and stops with the usual error, allocating nothing large.
    let long = "x".repeat(4010);
    let src = format!("'{long}'.replace('', '{long}').size() > 0");
    let sel = Selector::compile(&src).expect("within the estimated budget");
    assert!(sel.estimated_cost() < 1000, "estimate {}", sel.estimated_cost());
    let (result, cost) = sel.matches_with_cost(&Device::new("d", "example.com"));
    let err = result.expect_err("stopped by the runtime budget");
    assert_eq!(err.kind, EvalErrorKind::CostLimitExceeded { limit: MAX_COST });
    assert!(cost > MAX_COST);
    assert_eq!(err.kind.to_string(), format!("actual cost limit exceeded: more than {MAX_COST}"));

    // The same call with a result inside the budget runs and is charged for it: 100
    // characters with 100 inserted before each and at the end, 10,200 characters.
    let short = "y".repeat(100);
    let src = format!("'{short}'.replace('', '{short}').size() == 10200");
    let sel = Selector::compile(&src).expect("compiles");
    let (result, cost) = sel.matches_with_cost(&Device::new("d", "example.com"));
    assert!(result.expect("within budget"));
    // replace: ceil(0.1 * (100 + 10200)) = 1030; size() 1, == 1.
    assert_eq!(cost, 1030 + 2);
}

#[test]
fn regex_functions_are_charged_per_string_and_pattern_length() {
    // k8s `library/cost.go` `CallCost` for `find`/`findAll` and cel-go
    // `interpreter/runtimecost.go` for `matches`: ceil(0.1 * (1 + size(string))) times
    // ceil(0.25 * size(pattern)), whatever the regex does.
    let s99 = "x".repeat(99);
    let cases: &[(String, u64)] = &[
        // ceil(0.1 * 16) * ceil(0.25 * 6) = 2 * 2.
        ("'abc 123 def 123'.matches('[0-9]+')".into(), 4),
        ("matches('abc 123 def 123', '[0-9]+')".into(), 4),
        // ceil(0.1 * 100) * ceil(0.25 * 14) = 10 * 4.
        (format!("'{s99}'.find('[a-z]{{2,}}[0-9]')"), 40),
        (format!("'{s99}'.findAll('[a-z]{{2,}}[0-9]')"), 40),
        (format!("'{s99}'.findAll('[a-z]{{2,}}[0-9]', 3)"), 40),
        // ceil(0.1 * 1) * ceil(0.25 * 1) = 1.
        ("''.find('x')".into(), 1),
    ];
    for (src, want) in cases {
        assert_eq!(runtime(src), *want, "{src}");
    }
}

#[test]
fn nested_find_is_charged_every_call_within_its_estimate() {
    // Issue 22's case: 1,000 `find` calls, each charged ceil(0.1 * 2) * ceil(0.25 * 5)
    // = 2 as upstream, plus the comprehensions around them; the run stays within the
    // estimate (8,551, as Kubernetes' estimator prices it).
    let src = "[1,2,3,4,5,6,7,8,9,10].all(x, [1,2,3,4,5,6,7,8,9,10].all(y, \
               [1,2,3,4,5,6,7,8,9,10].all(z, int('2'.find('[1-9]*')) < 100)))";
    let sel = Selector::compile(src).unwrap();
    let (r, cost) = sel.matches_with_cost(&Device::new("d", "example.com"));
    assert!(r.unwrap());
    assert!(cost >= 1000 * (2 + 1 + 1), "every find (2), int (1) and < (1) charged: {cost}");
    assert!(cost <= sel.estimated_cost(), "actual {cost} within the estimate {}", sel.estimated_cost());
}
