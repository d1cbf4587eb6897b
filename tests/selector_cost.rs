//! Worst-case cost estimates of results whose size upstream does or does not know.
//!
//! cel-go's `checker/cost.go` keeps a call's result size only when an estimator states
//! one (its own `functionCost` cases, and `k8s.io/apiserver/pkg/cel/library/cost.go`
//! for the Kubernetes libraries); any other non-scalar result has an unknown size, up
//! to `math.MaxUint64`, and a size-dependent operation on it (concatenation, `matches`,
//! a comprehension, a comparison of two such values) is then estimated beyond any
//! budget. Every expected value below is worked out by hand from those two files, with
//! the DRA bounds (`device.driver` is at most 63 characters) and the DRA budget,
//! `resourceapi.CELSelectorExpressionMaxCost` (1,000,000).

use schedkit::selector::{MAX_COST, Selector, SelectorError};

fn cost(src: &str) -> u64 {
    Selector::compile(src).unwrap_or_else(|e| panic!("{src}: {e}")).estimated_cost()
}

fn refused(src: &str) -> u64 {
    match Selector::compile(src) {
        Err(SelectorError::CostLimitExceeded { estimated, limit }) => {
            assert_eq!(limit, MAX_COST, "{src}");
            estimated
        }
        other => panic!("{src}: expected the cost limit to refuse it, got {other:?}"),
    }
}

#[test]
fn results_of_unknown_size_are_unbounded() {
    // cel-go prices none of these calls' result sizes (optional functions, `string` of
    // an int, the URL accessors, `format`), so the size-dependent operation on top of
    // them is estimated at about 0.1 * 2^64.
    for src in [
        "optional.of('abc').value() + 'd' == 'abcd'",
        "optional.of('abc').orValue('x').matches('^a')",
        "optional.of('abc').value() == optional.of('abc').value()",
        "optional.of([1, 2]).value().all(x, x > 0)",
        "optional.of(['a']).value().exists(x, x == 'a')",
        "string(1) + 'a' == '1a'",
        "url('https://example.com/a').getHost() + 'x' == 'example.comx'",
        "'%s'.format(['a']) + 'b' == 'ab'",
    ] {
        assert!(refused(src) > 1_000_000_000_000_000, "{src}");
    }
    // The same operations on results of known size stay cheap.
    assert_eq!(cost("optional.of(1).value() == 1"), 1 + 1 + 1);
    assert_eq!(cost("'abc' + 'd' == 'abcd'"), 1 + 1);
}

#[test]
fn results_sized_by_upstream_estimators() {
    // `replace` (k8s library/cost.go): 63 characters, each constant two-character match
    // replaced by up to 63 characters: ceil(63 / 2) * 63 = 2016. The call costs
    // 0.2 * 63 -> 13 plus two selections of 2; appending the driver traverses
    // 2016 + 63 characters (208); comparing with '' costs 0.
    assert_eq!(cost("device.driver.replace('ab', device.driver) + device.driver == ''"), 13 + 2 + 2 + 2 + 208);
    // An empty pattern matches around every character: 64 * 63 + 63 = 4095, plus 63
    // appended: ceil(415.8) = 416.
    assert_eq!(cost("device.driver.replace('', device.driver) + device.driver == ''"), 13 + 2 + 2 + 2 + 416);
    // `string(bytes)` keeps the size (cel-go BytesToString): 25 bytes cost 3, and
    // appending one character traverses 26 (3).
    assert_eq!(cost("string(b'0123456789012345678901234') + 'x' == ''"), 3 + 3);
    // `bytes(string)` may take 4 bytes per character (cel-go StringToBytes): the call
    // costs ceil(6.3) = 7 plus 2, and appending one byte traverses 253 (26).
    assert_eq!(cost("bytes(device.driver) + b'x' == b''"), 7 + 2 + 26);
    // `string(int)` is not a traversal, whatever the size of its result.
    assert_eq!(cost("string(1) == '1'"), 1 + 1);
}

#[test]
fn a_constant_split_limit_bounds_the_loop() {
    // k8s library/cost.go `split`: a constant limit is the element count. The call costs
    // 0.2 * 63 -> 13 plus the selection (2); `all` costs 5 per element (3 for the loop,
    // 2 for `s == 'a'`) and 1 for the result: 16 + 5 * k.
    let src = |k: u64| format!("device.driver.split('', {k}).all(s, s == 'a')");
    assert_eq!(cost(&src(10)), 16 + 50);
    assert_eq!(cost(&src(199_996)), 999_996);
    assert_eq!(refused(&src(199_997)), 1_000_001);
    // Without a limit, at most one element per character of the driver.
    assert_eq!(cost("device.driver.split('').all(s, s == 'a')"), 16 + 5 * 63);
}

#[test]
fn equality_is_priced_by_operand_size_except_kubernetes_types() {
    // cel-go checker/cost.go `functionCost` (`equals`, `not_equals`): 0.1 per unit of
    // the smaller operand size, for every type. k8s library/cost.go `EstimateCallCost`
    // case `_==_` overrides it for `==` only, and only between two values of the same
    // Kubernetes type. A device attribute is `dyn` (64 at most), so comparing two costs
    // ceil(6.4) = 7; each access costs 4.
    assert_eq!(cost("device.attributes['d'].a == device.attributes['d'].b"), 4 + 4 + 7);
    assert_eq!(cost("device.attributes['d'].a != device.attributes['d'].b"), 4 + 4 + 7);
    assert_eq!(cost("device.attributes['d'].a == 'x'"), 4 + 1);
    // `dyn` against a semver built by a call: not the same type, so cel-go's rule, with
    // the call's size unknown: min(64, unknown) = 64.
    assert_eq!(cost("device.attributes['d'].v == semver('1.0.0')"), 4 + 1 + 7);
    // Same type: semver and quantity equality cost 1, `!=` falls back to the sizes, and
    // two parsed values have none.
    assert_eq!(cost("semver('1.0.0') == semver('1.0.0')"), 1 + 1 + 1);
    refused("semver('1.0.0') != semver('1.0.1')");
    refused("quantity('1') != quantity('2')");
    refused("ip('::1') != ip('::2')");
    refused("cidr('::/0') != cidr('::/1')");
    // A capacity value's declared size is 0 (`QuantityDeclType` has no MaxElements).
    assert_eq!(cost("device.capacity['d'].mem == quantity('1Gi')"), 4 + 1 + 1);
    assert_eq!(cost("device.capacity['d'].mem != quantity('1Gi')"), 4 + 1);
    // Lists and maps: by element count.
    assert_eq!(cost("[1, 2] == [1, 2]"), 10 + 10 + 1);
    let eleven: Vec<String> = (0..11).map(|i| i.to_string()).collect();
    let l = format!("[{}]", eleven.join(", "));
    assert_eq!(cost(&format!("{l} == {l}")), 10 + 10 + 2);
    assert_eq!(cost("{'a': 1} != {'b': 2}"), 30 + 30 + 1);
    // URLs (k8s `_==_`): 0.1 per character of the right operand, whose size is that of
    // its string (`url` states it): ceil(0.3) = 1.
    assert_eq!(cost("url('https://example.com') == url('abc')"), 2 + 1 + 1);
    // `type` values and optionals of non-scalars have no size: refused. Optionals of
    // scalars have size 1.
    refused("type(device.attributes['d'].a) == int");
    refused("optional.none() == optional.none()");
    assert_eq!(cost("optional.of(1) == optional.of(2)"), 1 + 1 + 1);
}

#[test]
fn dyn_operands_are_priced_at_the_dearest_candidate() {
    // cel-go `costCall` unions the estimates of every overload the checker kept; with two
    // `dyn` operands `+` may be a string concatenation: ceil(0.1 * (64 + 64)) = 13, and
    // the sum of the sizes (128) stays the result size.
    assert_eq!(cost("device.attributes['d'].a + device.attributes['d'].b == 'x'"), 4 + 4 + 13 + 1);
    // `dyn(x)` costs 1 and keeps the size of `x` (`maybeUnwrapDynCall`).
    assert_eq!(cost("dyn('abc') + dyn('de') == 'abcde'"), 1 + 1 + 1 + 1);
    assert_eq!(cost("dyn([1]) + dyn([2]) == [1, 2]"), 11 + 11 + 1 + 10 + 1);
    // One concrete operand leaves one overload: `dyn(1) + 2` is an int addition.
    assert_eq!(cost("dyn(1) + 2 == 3"), 1 + 1 + 1);
    // Two unknown sizes: the string candidate is priced beyond any budget.
    refused("dyn(semver('1.0.0').major()) + dyn(optional.none().value()) == 1");
    // Ordering: string and bytes candidates by the shorter operand.
    assert_eq!(cost("device.attributes['d'].a < device.attributes['d'].b"), 4 + 4 + 7);
    assert_eq!(cost("device.attributes['d'].a < 'abc'"), 4 + 1);
    assert_eq!(cost("device.attributes['d'].a < 5"), 4 + 1);
}

#[test]
fn list_elements_have_no_size_in_the_dra_environment() {
    // k8s library/cost.go `join` and `isSorted`/`sum`/`min`/`max`/`indexOf` size a
    // list's elements through the environment's size estimator, which in DRA sizes only
    // values reached from `device`: a list literal's elements have no size there.
    refused("['a', 'b'].join(',') == 'a,b'");
    refused("['a', 'b'].join() == 'ab'");
    refused("['b', 'a'].isSorted()");
    refused("['b', 'a'].indexOf('a') == 1");
    // An empty list has no elements to size; numbers add no traversal.
    assert_eq!(cost("[].join() == ''"), 10);
    assert_eq!(cost("[2, 1].isSorted()"), 10 + 2);
    // A `dyn` receiver has no element type: `join` counts only the separators (63 of
    // one character, ceil(6.3) = 7), `isSorted` is priced as a string (ceil(6.4)).
    assert_eq!(cost("device.attributes['d'].l.join(',') == ''"), 4 + 7);
    assert_eq!(cost("device.attributes['d'].l.isSorted()"), 4 + 7);
}
