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

#[test]
fn format_results_have_no_size_in_cel_go_0_26() {
    // cel-go v0.25/v0.26 `checker/cost.go` `ExtFormatString`: the target's traversal and
    // no result size (a later change, cel-go PR 1322, would state target + arguments).
    // Kubernetes 1.36 pins v0.26.0, so the result is of unknown size.
    assert_eq!(cost("'%s'.format(['a']) == 'a'"), 10 + 1 + 1);
    refused("'%s'.format(['a']) == '%s'.format(['a'])");
}

/// The cost of a non-bool upstream expression `x`, compiled as `cel.bind(v, x, true)`:
/// cel-go's `costBind` adds the empty range (`ListCreateBaseCost`, 10) and the constant
/// result (0) to the cost of `x`.
fn bound(src: &str) -> u64 {
    cost(&format!("cel.bind(v, {src}, true)")) - 10
}

#[test]
fn upstream_library_cost_test_cases() {
    // k8s staging/src/k8s.io/apiserver/pkg/cel/library/cost_test.go, the expected
    // estimated cost (max) of each case whose expression the DRA environment accepts and
    // prices alike (literal strings only: that test's size estimator gives other strings
    // 12 characters, DRA's none). Non-bool expressions go through `bound`.
    let bool_cases: &[(&str, &str, u64)] = &[
        // TestURLsCost
        ("TestURLsCost ==", "url('https:://kubernetes.io/') == url('https:://kubernetes.io/')", 9),
        ("TestURLsCost == short", "url('https:://kubernetes.io/') == url('http://x.b')", 5),
        // TestIPCost
        ("TestIPCost v4 ==", "ip('192.168.0.1') == ip('192.168.0.1')", 2 + 2 + 1),
        ("TestIPCost v6 ==", "ip('2001:db8:3333:4444:5555:6666:7777:8888') == ip('192.168.0.1')", 4 + 2 + 1),
        ("TestIPCost isUnspecified", "ip('192.168.0.1').isUnspecified()", 3),
        ("TestIPCost isLoopback", "ip('2001:db8:3333:4444:5555:6666:7777:8888').isLoopback()", 5),
        ("TestIPCost isGlobalUnicast", "ip('192.168.0.1').isGlobalUnicast()", 3),
        // TestIPIsCanonicalCost
        ("TestIPIsCanonicalCost v4", "ip.isCanonical('192.168.0.1')", 3),
        ("TestIPIsCanonicalCost v6", "ip.isCanonical('2001:db8:3333:4444:5555:6666:7777:8888')", 8),
        ("TestIPIsCanonicalCost short", "ip.isCanonical('2001:db8::abcd')", 3),
        // TestCIDRCost
        ("TestCIDRCost ==", "cidr('192.168.0.0/16') == cidr('2001:db8::/32')", 2 + 2 + 1),
        ("TestCIDRCost containsCIDR", "cidr('192.168.0.0/16').containsCIDR(cidr('192.0.0.0/30'))", 2 + 9),
        ("TestCIDRCost containsCIDR str", "cidr('192.168.0.0/16').containsCIDR('192.168.0.0/16')", 2 + 9),
        ("TestCIDRCost containsIP", "cidr('192.168.0.0/16').containsIP(ip('192.0.0.1'))", 2 + 5),
        ("TestCIDRCost containsIP long", "cidr('192.168.0.0/16').containsIP(ip('192.169.169.250'))", 2 + 6),
        ("TestCIDRCost containsIP str", "cidr('192.168.0.0/16').containsIP('192.169.0.1')", 2 + 6),
        (
            "TestCIDRCost v6 containsIP",
            "cidr('2001:db8::/32').containsIP(ip('2001:db8:3333:4444:5555:6666:7777:8888'))",
            2 + 8,
        ),
        ("TestCIDRCost v6 containsIP str", "cidr('2001:db8::/32').containsIP('2001:db8::1')", 2 + 6),
        ("TestCIDRCost v6 containsCIDR", "cidr('2001:db8::/32').containsCIDR(cidr('2001:db8::/126'))", 2 + 9),
        // TestStringLibrary
        ("lowerAsciiEquals", "'ABCDEFGHIJ abcdefghij'.lowerAscii() == 'abcdefghij ABCDEFGHIJ'.lowerAscii()", 9),
        ("upperAsciiEquals", "'ABCDEFGHIJ abcdefghij'.upperAscii() == 'abcdefghij ABCDEFGHIJ'.upperAscii()", 9),
        ("quoteEquals", "strings.quote('ABCDEFGHIJ abcdefghij') == strings.quote('ABCDEFGHIJ abcdefghij')", 11),
        // TestQuantityCost
        ("isQuantity", r#"isQuantity("20")"#, 1),
        ("isQuantity_megabytes", r#"isQuantity("20M")"#, 1),
        ("equality_reflexivity", r#"quantity("200M") == quantity("200M")"#, 3),
        ("equality_symmetry", r#"quantity("200M") == quantity("0.2G") && quantity("0.2G") == quantity("200M")"#, 6),
        (
            "equality_transitivity",
            r#"quantity("2M") == quantity("0.002G") && quantity("2000k") == quantity("2M") && quantity("0.002G") == quantity("2000k")"#,
            9,
        ),
        ("quantity_less", r#"quantity("50M").isLessThan(quantity("50Mi"))"#, 3),
        ("quantity_greater", r#"quantity("50Mi").isGreaterThan(quantity("50M"))"#, 3),
        ("compare_equal", r#"quantity("200M").compareTo(quantity("0.2G")) > 0"#, 4),
        ("add_quantity", r#"quantity("50k").add(quantity("20")) == quantity("50.02k")"#, 5),
        ("sub_quantity", r#"quantity("50k").sub(quantity("20")) == quantity("49.98k")"#, 5),
        ("sub_int", r#"quantity("50k").sub(20) == quantity("49980")"#, 4),
        ("arith_chain_1", r#"quantity("50k").add(20).sub(quantity("100k")).asInteger() > 0"#, 6),
        ("arith_chain", r#"quantity("50k").add(20).sub(quantity("100k")).sub(-50000).asInteger() > 0"#, 7),
        ("as_integer", r#"quantity("50k").asInteger() > 0"#, 3),
        ("is_integer", r#"quantity("50").isInteger()"#, 2),
        ("as_float", r#"quantity("50.703k").asApproximateFloat() > 0.0"#, 3),
        // TestNameFormatCost
        (
            "format.dns1123Subdomain.validate",
            r#"format.named("dns1123Subdomain").value().validate("my-name").hasValue()"#,
            34 + 1,
        ),
        ("format ==", r#"format.named("dns1123Label").value() == format.named("dns1123Label").value()"#, 11),
        // TestSemverCost
        ("isSemver", r#"isSemver("1.0.0")"#, 1),
        ("isSemver long input", r#"isSemver("1234.56789012345.67890123456789")"#, 4),
        ("isLessThan", r#"semver("1.0.0").isLessThan(semver("1.1.0"))"#, 3),
        ("isGreaterThan", r#"semver("1.1.0").isGreaterThan(semver("1.0.0"))"#, 3),
        // TestTwoVariableComprehensionCost
        ("map all", "{'a': 1, 'b': 2}.all(k, v, v > 0)", 41),
        ("map exists", "{'a': 1, 'b': 2}.exists(k, v, v > 0)", 43),
        ("map existsOne", "{'a': 1, 'b': 2}.existsOne(k, v, v > 0)", 40),
        ("list all", "[1, 2].all(i, v, v > 0)", 21),
        ("list exists", "[1, 2].exists(i, v, v > 0)", 23),
        ("list existsOne", "[1, 2].existsOne(i, v, v > 0)", 20),
    ];
    for (name, src, want) in bool_cases {
        assert_eq!(cost(src), *want, "{name}: {src}");
    }
    let value_cases: &[(&str, &str, u64)] = &[
        // TestURLsCost accessors
        ("TestURLsCost getScheme", "url('https:://kubernetes.io/').getScheme()", 4),
        ("TestURLsCost getHostname", "url('https:://kubernetes.io/').getHostname()", 4),
        ("TestURLsCost getHost", "url('https:://kubernetes.io/').getHost()", 4),
        ("TestURLsCost getPort", "url('https:://kubernetes.io/').getPort()", 4),
        ("TestURLsCost getEscapedPath", "url('https:://kubernetes.io/').getEscapedPath()", 4),
        ("TestURLsCost getQuery", "url('https:://kubernetes.io/').getQuery()", 4),
        // TestIPCost / TestCIDRCost bases and accessors
        ("TestIPCost v4", "ip('192.168.0.1')", 2),
        ("TestIPCost v6", "ip('2001:db8:3333:4444:5555:6666:7777:8888')", 4),
        ("TestIPCost family", "ip('192.168.0.1').family()", 3),
        ("TestCIDRCost v4", "cidr('192.168.0.0/16')", 2),
        ("TestCIDRCost v6", "cidr('2001:db8::/32')", 2),
        ("TestCIDRCost ip", "cidr('192.168.0.0/16').ip()", 3),
        ("TestCIDRCost prefixLength", "cidr('2001:db8::/32').prefixLength()", 3),
        ("TestCIDRCost masked", "cidr('192.168.0.0/16').masked()", 3),
        // TestStringLibrary
        ("lowerAscii", "'ABCDEFGHIJ abcdefghij'.lowerAscii()", 3),
        ("upperAscii", "'ABCDEFGHIJ abcdefghij'.upperAscii()", 3),
        ("quote", "strings.quote('ABCDEFGHIJ abcdefghij')", 3),
        ("replace", "'abc 123 def 123'.replace('123', '456')", 3),
        ("replace between all chars", "'abc 123 def 123'.replace('', 'x')", 3),
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
        // TestQuantityCost, TestNameFormatCost, TestSemverCost
        ("quantity", r#"quantity("12Mi")"#, 1),
        ("format.named", r#"format.named("dns1123subdomain")"#, 1),
        ("semver", r#"semver("1.0.0")"#, 1),
        ("semver long input", r#"semver("1234.56789012345.67890123456789")"#, 4),
        ("major", r#"semver("1.2.3").major()"#, 2),
        ("minor", r#"semver("1.2.3").minor()"#, 2),
        ("patch", r#"semver("1.2.3").patch()"#, 2),
        ("compareTo", r#"semver("1.0.0").compareTo(semver("1.2.3"))"#, 3),
        // TestListsCost, TestIndexOfCost (numbers; strings take the estimator's 12)
        ("sum int", "[1, 2, 3, 4, 5].sum()", 15),
        ("sum double", "[1.0, 2.0, 3.0, 4.0, 5.0].sum()", 15),
        ("max bool", "[false, true, false, true, false].max()", 15),
        ("isSorted uint", "[uint(1), uint(2), uint(3), uint(4), uint(5)].isSorted()", 20),
        ("indexOf int", "[1, 2, 3, 4, 5].indexOf(3)", 15),
        ("lastIndexOf string", "'01234567890123456789012345678901234567890123456789'.lastIndexOf('123')", 5),
        // TestTwoVariableComprehensionCost
        ("map transformMap", "{'a': 1, 'b': 2}.transformMap(k, v, v + 1)", 71),
        ("map transformMap with filter", "{'a': 1, 'b': 2}.transformMap(k, v, v < 5, v + 1)", 75),
        ("map transformMapEntry", "{'a': 1, 'b': 2}.transformMapEntry(k, v, {k: v + 1})", 131),
        ("map transformMapEntry with filter", "{'a': 1, 'b': 2}.transformMapEntry(k, v, v < 5, {k: v + 1})", 135),
        // The same builder over a device-sized map (32 entries, reached for 3): each
        // iteration costs the accumulator, the key, the constant transform (0) and the
        // insertion, 3, where a list builder's 12 + t would give 12.
        ("transformMap over 32", "device.attributes['d'].transformMap(k, v, 1)", 3 + 30 + 1 + 32 * 3),
        ("list transformList", "[1, 2].transformList(i, v, v + 1)", 49),
        ("list transformList with filter", "[1, 2].transformList(i, v, v < 5, v + 1)", 53),
    ];
    for (name, src, want) in value_cases {
        assert_eq!(bound(src), *want, "{name}: {src}");
    }
    // TestStringLibrary "join" / "join with separator" (max 22 / 23 there, with 12-char
    // strings): in DRA the elements of a list literal have no size, so refused.
    refused("['aa', 'bb', 'cc', 'd', 'e', 'f', 'g', 'h', 'i', 'j'].join(' ') == ''");
}
