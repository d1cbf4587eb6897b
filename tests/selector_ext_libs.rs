//! The cel-go extension libraries of the Kubernetes environment that the DRA selector
//! language gained for issue #6, replayed from upstream's tests:
//!
//! - `ext.Lists` version 3 (`k8s.io/apiserver/pkg/cel/environment/base.go` enables it
//!   from Kubernetes 1.34): cel-go `ext/lists_test.go` `TestLists`,
//!   `TestListsRuntimeErrors`, `TestListsVersion`;
//! - `string.format` of `ext.Strings` version 2: cel-go `ext/formatting_test.go`
//!   `TestStringFormat` (the formatter versions 0 to 3 use);
//! - optional list elements and map entries of `cel.OptionalTypes`.
//!
//! Upstream's tests run without `cel.HomogeneousAggregateLiterals`, which Kubernetes
//! enables; cases with mixed literals wrap elements in `dyn(...)` here, which is what
//! a Kubernetes user has to write as well.

#[path = "support/selector.rs"]
mod support;

use schedkit::selector::{Selector, SelectorError};
use support::{A, device, eval, eval0};

/// A replayed example holds (checked without the budget where the DRA estimate refuses
/// it, see [`support::eval_example`]).
fn t(src: &str) {
    assert_eq!(support::eval_example(src, &device("", &[], &[])), Ok(true), "{src}");
}

fn runtime_err(src: &str, want: &str) {
    match eval0(src) {
        Err(e) => assert!(e.to_string().contains(want), "{src}: {e}"),
        other => panic!("{src}: expected an error containing {want:?}, got {other:?}"),
    }
}

fn compile_err(src: &str, want: &str) {
    let e = Selector::compile(src).expect_err(src);
    assert!(e.to_string().contains(want), "{src}: {e}");
}

#[test]
fn upstream_test_lists() {
    for src in [
        "lists.range(4) == [0,1,2,3]",
        "lists.range(0) == []",
        "[5,1,2,3].reverse() == [3,2,1,5]",
        "[].reverse() == []",
        "[1].reverse() == [1]",
        "['are', 'you', 'as', 'bored', 'as', 'I', 'am'].reverse() == ['am', 'I', 'as', 'bored', 'as', 'you', 'are']",
        "[false, true, true].reverse().reverse() == [false, true, true]",
        "[1,2,3,4].slice(0, 4) == [1,2,3,4]",
        "[1,2,3,4].slice(0, 0) == []",
        "[1,2,3,4].slice(1, 1) == []",
        "[1,2,3,4].slice(4, 4) == []",
        "[1,2,3,4].slice(1, 3) == [2, 3]",
        "dyn([]).flatten() == []",
        "dyn([1,2,3,4]).flatten() == [1,2,3,4]",
        "[dyn(1),[dyn(2),[3,4]]].flatten() == [dyn(1),2,[3,4]]",
        "[dyn(1),2,[],[],[3,4]].flatten() == [1,2,3,4]",
        "[dyn(1),[dyn(2),[3,4]]].flatten(2) == [1,2,3,4]",
        "[].sort() == []",
        "[1].sort() == [1]",
        "[4, 3, 2, 1].sort() == [1, 2, 3, 4]",
        r#"["d", "a", "b", "c"].sort() == ["a", "b", "c", "d"]"#,
        "[].sortBy(e, e) == []",
        r#"["a"].sortBy(e, e) == ["a"]"#,
        "[-3, 1, -5, -2, 4].sortBy(e, -(e * e)) == [-5, 4, -3, -2, 1]",
        "[-3, 1, -5, -2, 4].map(e, e * 2).sortBy(e, -(e * e)) == [-10, 8, -6, -4, 2]",
        "lists.range(3).sortBy(e, -e) == [2, 1, 0]",
        r#"["a", "c", "b", "first"].sortBy(e, e == "first" ? "" : e) == ["first", "a", "b", "c"]"#,
        "[].distinct() == []",
        "[1].distinct() == [1]",
        "[-2, 5, -2, 1, 1, 5, -2, 1].distinct() == [-2, 5, 1]",
        "['c', 'a', 'a', 'b', 'a', 'b', 'c', 'c'].distinct() == ['c', 'a', 'b']",
        r#"[dyn(1), 2.0, "c", 3, "c", 1].distinct() == [dyn(1), 2.0, "c", 3]"#,
        "[1, dyn(1.0), 2].distinct() == [1, 2]",
        "[[1], [1], [2]].distinct() == [[1], [2]]",
        // TestListsVersion, version 2.
        "[{'field': 'lo'}, {'field': 'hi'}].sortBy(m, m.field) == [{'field': 'hi'}, {'field': 'lo'}]",
        "[[1, 2], [3, 4]].flatten() == [1, 2, 3, 4]",
    ] {
        t(src);
    }
    // Constant bounds the wrong way round make upstream's size estimate wrap around, so
    // Kubernetes refuses the expression for its cost; dynamic bounds reach the check.
    let e = Selector::compile("[1,2,3,4].slice(3, 0) == []").unwrap_err();
    assert!(matches!(e, SelectorError::CostLimitExceeded { .. }), "{e}");
    runtime_err(
        "[1,2,3,4].slice(dyn(3), dyn(0)) == []",
        "cannot slice(3, 0), start index must be less than or equal to end index",
    );
    runtime_err("[1,2,3,4].slice(0, 10) == []", "cannot slice(0, 10), list is length 4");
    runtime_err("[1,2,3,4].slice(-5, 10) == []", "cannot slice(-5, 10), negative indexes not supported");
    runtime_err("[1,2,3,4].slice(-5, -3) == []", "cannot slice(-5, -3), negative indexes not supported");
    runtime_err("[dyn(1),[dyn(2),[dyn(3),[4]]]].flatten(-1) == [1,2,3,4]", "level must be non-negative");
    runtime_err(r#"[dyn("d"), 3, 2, "c"].sort() == []"#, "list elements must have the same type");
}

#[test]
fn upstream_test_lists_runtime_errors() {
    runtime_err("dyn({}).flatten() == []", "no such overload");
    runtime_err("dyn({}).flatten(0) == []", "no such overload");
    runtime_err("[].flatten(-1) == []", "level must be non-negative");
    runtime_err("[].flatten(dyn('1')) == []", "no such overload");
    // Beyond upstream's table: the other error paths.
    runtime_err("lists.range(-1) == []", "size must be non-negative, got -1");
    runtime_err("[1].sortBy(x, dyn([x])) == []", "list elements must be comparable");
    compile_err("[1].sortBy(x, [x]) == []", "the key of 'sortBy' must be");
    runtime_err("dyn([quantity('1'), quantity('2')]).sort() == []", "list elements must be comparable");
    compile_err("[quantity('1'), quantity('2')].sort() == []", "found no matching overload for 'sort'");
}

#[test]
fn lists_are_type_checked() {
    // `sort` takes lists of int, uint, double, bool, string or bytes.
    compile_err("[[1]].sort() == []", "found no matching overload for 'sort'");
    compile_err("[{'a': 1}].sortBy(x, x) == []", "the key of 'sortBy' must be");
    compile_err("'abc'.slice(0, 1) == 'a'", "found no matching overload for 'slice'");
    compile_err("1.sortBy(x, x) == []", "sortBy can only be applied to a list");
    compile_err("[1].sortBy(1, 1) == []", "simple identifier");
    compile_err("lists.range('a') == []", "found no matching overload for 'lists.range'");
    // A non-constant range has no bound: its estimate exceeds any budget, as upstream.
    let d = device("d", &[("n", A::I(3))], &[]);
    let e = Selector::compile(r#"lists.range(device.attributes["d"].n).size() == 3"#).unwrap_err();
    assert!(matches!(e, SelectorError::CostLimitExceeded { .. }), "{e}");
    // Result types flow on: the sorted list of strings is a list of strings.
    assert_eq!(eval(r#"["b", "a"].sort()[0].startsWith("a")"#, &d), Ok(true));
    assert_eq!(eval("[[1, 2], [3]].flatten().sum() == 6", &d), Ok(true));
}

#[test]
fn upstream_test_string_format() {
    // (format, arguments, expected output), cel-go TestStringFormat names in comments.
    for (fmt, args, want) in [
        ("no substitution", "", "no substitution"), // no-op
        ("str is %s and some more", r#""filler""#, "str is filler and some more"), // mid-string substitution
        ("%% and also %%", "", "% and also %"),     // percent escaping
        ("%%%s%%", r#""text""#, "%text%"),          // substution inside escaped percent signs
        ("%s%%", r#""percent on the right""#, "percent on the right%"),
        ("%%%s", r#""percent on the left""#, "%percent on the left"),
        (
            "%d %d %d, %s %s %s, %d %d %d, %s %s %s",
            r#"1, 2, 3, "A", "B", "C", 4, 5, 6, "D", "E", "F""#,
            "1 2 3, A B C, 4 5 6, D E F",
        ),
        ("\\u0025\\u0025escaped \\u0025s\\u0025\\u0025", r#""percent""#, "%escaped percent%"),
        ("%.3f", "1.2345", "1.234"), // fixed point formatting clause
        ("this is 5 in binary: %b", "5", "this is 5 in binary: 101"), // binary formatting clause
        ("this is -5 in binary: %b", "-5", "this is -5 in binary: -101"), // negative binary
        ("unsigned 64 in binary: %b", "uint(64)", "unsigned 64 in binary: 1000000"),
        ("bit set from bool: %b", "true", "bit set from bool: 1"),
        ("%o", "11", "13"), // octal formatting clause
        ("%o", "-11", "-13"),
        ("this is an unsigned octal: %o", "uint(65535)", "this is an unsigned octal: 177777"),
        ("%x is 30 in hexadecimal", "30", "1e is 30 in hexadecimal"),
        ("%X is 20 in hexadecimal", "30", "1E is 20 in hexadecimal"),
        ("%x is -30 in hexadecimal", "-30", "-1e is -30 in hexadecimal"),
        ("%X is 6000 in hexadecimal", "uint(6000)", "1770 is 6000 in hexadecimal"),
        ("%x", r#""Hello world!""#, "48656c6c6f20776f726c6421"),
        ("%X", r#""Hello world!""#, "48656C6C6F20776F726C6421"),
        ("%x", r#"b"byte string""#, "6279746520737472696e67"),
        ("%x", r#"b"\x00\x00byte string\x00""#, "00006279746520737472696e6700"),
        ("%X", r#"b"byte string""#, "6279746520737472696E67"),
        ("%.6e", "1052.032911275", "1.052033\u{202f}\u{d7}\u{202f}10\u{2070}\u{b3}"),
        ("%f", "2.71828", "2.718280"), // default precision for fixed-point clause
        ("%e", "2.71828", "2.718280\u{202f}\u{d7}\u{202f}10\u{2070}\u{2070}"),
        ("%s", "2.71", "2.71"),         // default precision for string
        ("%s", "[2.71]", "[2.710000]"), // default list precision for string
        ("%s", "0.000000002", "2e-09"), // default scientific notation for string
        ("%s", "[0.000000002]", "[0.000000]"),
        ("%f", r#""NaN""#, "NaN"), // NaN support for fixed-point
        ("%f", r#""Infinity""#, "∞"),
        ("%f", r#""-Infinity""#, "-∞"),
        ("%s", r#"double("NaN")"#, "NaN"),
        ("%s", r#"double("Inf")"#, "+Inf"),
        ("%s", r#"double("-Inf")"#, "-Inf"),
        ("%s", r#"[double("NaN"),double("+Inf"), double("-Inf")]"#, r#"["NaN", "+Inf", "-Inf"]"#),
        ("%d", "uint(64)", "64"), // uint support for decimal clause
        ("null: %s", "null", "null: null"),
        ("%s", "999999999999", "999999999999"),
        ("some bytes: %s", r#"b"xyz""#, "some bytes: xyz"),
        ("type is %s", r#"type("test string")"#, "type is string"),
        ("true bool: %s, false bool: %s", "true, false", "true bool: true, false bool: false"),
        // map support (all key types), with dyn keys for the homogeneous-literal rule.
        (
            "map with multiple key types: %s",
            r#"{dyn(1): "value1", uint(2): "value2", true: dyn(double("NaN"))}"#,
            r#"map with multiple key types: {1:"value1", 2:"value2", true:"NaN"}"#,
        ),
        ("dynamic double: %.3f", "dyn(4.5)", "dynamic double: 4.500"),
    ] {
        let src = format!("\"{fmt}\".format([{args}]) == \"{}\"", want.replace('"', "\\\""));
        t(&src);
    }
    // Upstream's runtime errors (compile-time checks skipped via dyn()).
    for (fmt, args, want) in [
        ("%a", "1", "could not parse formatting clause: unrecognized formatting clause \"a\""),
        ("%d %d %d", "0, 1", "index 2 out of range"),
        (
            "string is %b",
            r#""abc""#,
            "error during formatting: only integers and bools can be formatted as binary, was given string",
        ),
        (
            "octal: %o",
            r#""a string""#,
            "error during formatting: octal clause can only be used on integers, was given string",
        ),
        (
            "double is %x",
            "0.5",
            "error during formatting: only integers, byte buffers, and strings can be formatted as hex, was given double",
        ),
        ("double is %E", "0.5", "could not parse formatting clause: unrecognized formatting clause \"E\""),
        (
            "null: %d",
            "null",
            "error during formatting: decimal clause can only be used on integers, was given null_type",
        ),
        (
            "null: %e",
            "null",
            "error during formatting: scientific clause can only be used on doubles, was given null_type",
        ),
        (
            "null: %f",
            "null",
            "error during formatting: fixed-point clause can only be used on doubles, was given null_type",
        ),
        (
            "null: %x",
            "null",
            "error during formatting: only integers, byte buffers, and strings can be formatted as hex, was given null_type",
        ),
        (
            "null: %b",
            "null",
            "error during formatting: only integers and bools can be formatted as binary, was given null_type",
        ),
        ("null: %o", "null", "error during formatting: octal clause can only be used on integers, was given null_type"),
    ] {
        runtime_err(&format!("\"{fmt}\".format(dyn([{args}])) == ''"), want);
    }
    // Upstream's compile-time checks of a constant format with a list literal.
    for (fmt, args, want) in [
        ("%s %s", r#""abc""#, "index 1 out of range"),
        ("%s %s", r#""abc", "def", "ghi""#, "too many arguments supplied to string.format (expected 2, got 3)"),
        ("filler %", "", "unexpected end of string"),
        ("%j", "123", "could not parse formatting clause: unrecognized formatting clause \"j\""),
        ("int is %d", "5.2", "error during formatting: decimal clause can only be used on integers"),
        ("double is %f", "true", "error during formatting: fixed-point clause can only be used on doubles"),
        (
            "double is %.34",
            "5.0",
            "could not parse formatting clause: error while parsing precision: could not find end of precision specifier",
        ),
        ("double is %e", "true", "error during formatting: scientific clause can only be used on doubles"),
        (
            "string is %b",
            r#""a string""#,
            "error during formatting: only integers and bools can be formatted as binary",
        ),
        (
            "%x is a double",
            "2.5",
            "error during formatting: only integers, byte buffers, and strings can be formatted as hex",
        ),
        (
            "%X is a double",
            "2.5",
            "error during formatting: only integers, byte buffers, and strings can be formatted as hex",
        ),
        ("an octal: %o", "3.14", "error during formatting: octal clause can only be used on integers"),
        // Beyond upstream's table: a Kubernetes type inside `%s`.
        ("q is %s", "quantity('1')", "string clause can only be used on strings"),
        ("list is %s", "[quantity('1')]", "string clause can only be used on strings"),
    ] {
        compile_err(&format!("\"{fmt}\".format([{args}]) == ''"), want);
    }
}

#[test]
fn format_reads_device_attributes() {
    let d = device("gpu.example.com", &[("model", A::S("a100")), ("index", A::I(3))], &[("memory", "40Gi")]);
    let ex = r#"device.attributes["gpu.example.com"]"#;
    assert_eq!(eval(&format!("'%s-%d'.format([{ex}.model, {ex}.index]) == 'a100-3'"), &d), Ok(true));
    assert_eq!(eval(&format!("'%s'.format([{ex}]) == '{{\"index\":3, \"model\":\"a100\"}}'"), &d), Ok(true));
    // A capacity is a quantity, which `%s` refuses (as upstream) once the type is known
    // only at run time.
    let r = eval(r#"'%s'.format([dyn(device.capacity["gpu.example.com"].memory)]) == ''"#, &d);
    assert!(r.is_err(), "{r:?}");
    assert_eq!(eval("'%.2f|%f'.format([1234567.891, -0.5]) == '1,234,567.89|-0.500000'", &d), Ok(true));
}

#[test]
fn optional_list_elements_and_map_entries() {
    let d = device("dra.example.com", &[("model", A::S("a100"))], &[]);
    let ex = r#"device.attributes["dra.example.com"]"#;
    for src in [
        format!("[?{ex}.?model, ?{ex}.?missing] == ['a100']"),
        "[1, ?optional.none(), ?optional.of(2)] == [1, 2]".to_owned(),
        format!("{{?'m': {ex}.?model, ?'x': {ex}.?missing}} == {{'m': 'a100'}}"),
        "{?'k': optional.none()}.size() == 0 && [?optional.none()].size() == 0".to_owned(),
        "[ ?optional.of(1)] == [1]".to_owned(),
        "[?dyn(optional.of(1))] == [1]".to_owned(),
    ] {
        assert_eq!(eval(&src, &d), Ok(true), "{src}");
    }
    compile_err("[?1] == [1]", "expected type 'optional_type' but found 'int'");
    compile_err("{?'a': 1} == {}", "expected type 'optional_type' but found 'int'");
    compile_err("[?optional.of(1), 'a'] == []", "list elements must have one type");
    runtime_err("[?dyn(1)] == [1]", "cannot initialize optional list element from non-optional value");
    runtime_err("{?'a': dyn(1)} == {}", "cannot initialize optional entry 'a' from non-optional value");
    // The printer writes them back.
    let e = schedkit::selector::parse("[?a, b, ?c]").unwrap();
    assert_eq!(e.to_string(), "[?a, b, ?c]");
}

#[test]
fn upstream_test_cidr() {
    // k8s library/cidr_test.go TestCIDR (the parse cases compare values, here with ==).
    for src in [
        r#"cidr(dyn("192.168.0.0/24")) == cidr("192.168.0.0/24")"#,
        r#"cidr("192.168.0.0/24").containsIP(ip("192.168.0.1"))"#,
        r#"!cidr("192.168.0.0/24").containsIP(ip("192.168.1.1"))"#,
        r#"cidr("192.168.0.0/24").containsIP("192.168.0.1")"#,
        r#"!cidr("192.168.0.0/24").containsIP("192.168.1.1")"#,
        r#"cidr("192.168.0.0/24").containsCIDR(cidr("192.168.0.0/25"))"#,
        r#"!cidr("192.168.0.0/24").containsCIDR(cidr("192.168.0.0/23"))"#,
        r#"cidr("192.168.0.0/24").containsCIDR("192.168.0.0/25")"#,
        r#"!cidr("192.168.0.0/24").containsCIDR("192.168.0.0/23")"#,
        r#"cidr("192.168.0.0/24").ip() == ip("192.168.0.0")"#,
        r#"cidr("192.168.0.0/24").masked() == cidr("192.168.0.0/24")"#,
        r#"cidr("192.168.0.1/24").masked() == cidr("192.168.0.0/24")"#,
        r#"cidr("192.168.0.0/24").prefixLength() == 24"#,
        r#"cidr("2001:db8::/32") == cidr("2001:db8::/32")"#,
        r#"cidr("2001:db8::/32").containsIP(ip("2001:db8::1"))"#,
        r#"!cidr("2001:db8::/32").containsIP(ip("2001:dc8::1"))"#,
        r#"cidr("2001:db8::/32").containsIP("2001:db8::1")"#,
        r#"!cidr("2001:db8::/32").containsIP("2001:dc8::1")"#,
        r#"cidr("2001:db8::/32").containsCIDR(cidr("2001:db8::/33"))"#,
        r#"!cidr("2001:db8::/32").containsCIDR(cidr("2001:db8::/31"))"#,
        r#"cidr("2001:db8::/32").containsCIDR("2001:db8::/33")"#,
        r#"!cidr("2001:db8::/32").containsCIDR("2001:db8::/31")"#,
        r#"cidr("2001:db8::/32").ip() == ip("2001:db8::")"#,
        r#"cidr("2001:db8::/32").masked() == cidr("2001:db8::/32")"#,
        r#"cidr("2001:db8:1::/32").masked() == cidr("2001:db8::/32")"#,
        r#"cidr("2001:db8::/32").prefixLength() == 32"#,
        r#"string(cidr("192.168.0.0/24")) == "192.168.0.0/24""#,
        r#"type(cidr("192.168.0.0/24")) == net.CIDR"#,
        // cidr.go doc comment examples.
        "cidr('192.168.0.1/24').ip().family() == 4 && cidr('::1/128').ip().family() == 6",
        "cidr('192.168.0.1/24') != cidr('192.168.0.1/24').masked()",
        "isCIDR('10.0.0.0/8') && !isCIDR('10.0.0.0') && !isCIDR('::ffff:1.2.3.4/120')",
        // containsCIDR compares the other network's address as written (see net.rs).
        "!cidr('192.168.0.0/16').containsCIDR(cidr('192.168.10.0/24'))",
    ] {
        t(src);
    }
    compile_err("cidr(192168) == cidr('1.0.0.0/8')", "found no matching overload for 'cidr' applied to '(int)'");
    runtime_err(
        r#"cidr("192.168.0.0/") == cidr("1.0.0.0/8")"#,
        r#"network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix("192.168.0.0/"): bad bits after slash: """#,
    );
    runtime_err(
        r#"cidr("2001:db8::/") == cidr("1.0.0.0/8")"#,
        r#"netip.ParsePrefix("2001:db8::/"): bad bits after slash: """#,
    );
}

#[test]
fn upstream_ip_library_examples() {
    // k8s library/ip.go doc comment examples.
    for src in [
        "isIP('127.0.0.1') && isIP('::1') && !isIP('127.0.0.256') && !isIP(':::1')",
        "ip.isCanonical('127.0.0.1') && ip.isCanonical('2001:db8::abcd')",
        "!ip.isCanonical('2001:DB8::ABCD') && !ip.isCanonical('2001:db8::0:0:0:abcd')",
        "ip('127.0.0.1').family() == 4 && ip('::1').family() == 6",
        "ip('0.0.0.0').isUnspecified() && !ip('127.0.0.1').isUnspecified()",
        "ip('::').isUnspecified() && !ip('::1').isUnspecified()",
        "ip('127.0.0.1').isLoopback() && !ip('192.168.0.1').isLoopback()",
        "ip('::1').isLoopback() && !ip('2001:db8::abcd').isLoopback()",
        "ip('224.0.0.1').isLinkLocalMulticast() && !ip('224.0.1.1').isLinkLocalMulticast()",
        "ip('ff02::1').isLinkLocalMulticast() && !ip('fd00::1').isLinkLocalMulticast()",
        "ip('169.254.169.254').isLinkLocalUnicast() && !ip('192.168.0.1').isLinkLocalUnicast()",
        "ip('fe80::1').isLinkLocalUnicast() && !ip('fd80::1').isLinkLocalUnicast()",
        "ip('192.168.0.1').isGlobalUnicast() && !ip('255.255.255.255').isGlobalUnicast()",
        "ip('2001:db8::abcd').isGlobalUnicast() && !ip('ff00::1').isGlobalUnicast()",
        "string(ip('2001:db8::0:0:0:abcd')) == '2001:db8::abcd' && type(ip('::1')) == net.IP",
        // Parsing as netip does, minus zones and IPv4-mapped addresses.
        "!isIP('01.2.3.4') && !isIP('fe80::1%eth0') && !isIP('::ffff:1.2.3.4') && isIP('::1.2.3.4')",
    ] {
        t(src);
    }
    runtime_err("ip('::ffff:1.2.3.4').family() == 6", "IPv4-mapped IPv6 address \"::ffff:1.2.3.4\" is not allowed");
    runtime_err("ip('fe80::1%eth0').family() == 6", "IP address \"fe80::1%eth0\" with zone value is not allowed");
    runtime_err(
        "ip('127.0.0.256').family() == 4",
        "IP Address \"127.0.0.256\" parse error during conversion from string",
    );
    compile_err("ip(1) == ip('::1')", "found no matching overload for 'ip' applied to '(int)'");
    compile_err("ip('::1').prefixLength() == 1", "found no matching overload for 'prefixLength'");
    // A device attribute holding an address, as a network driver would publish it.
    let d = device("net.example.com", &[("ip", A::S("10.1.2.3"))], &[]);
    let src = r#"cidr("10.0.0.0/8").containsIP(device.attributes["net.example.com"].ip)"#;
    assert_eq!(eval(src, &d), Ok(true));
}

#[test]
fn transform_map_entry() {
    // cel-go ext.TwoVarComprehensions (unversioned, so Kubernetes has the current set,
    // transformMapEntry included); cases after cel-go ext/comprehensions_test.go.
    for src in [
        "{'hello': 'world', 'greetings': 'tacocat'}.transformMapEntry(k, v, {v: k}) == {'world': 'hello', 'tacocat': 'greetings'}",
        "['a', 'b'].transformMapEntry(i, v, {v: i}) == {'a': 0, 'b': 1}",
        "{'a': 1, 'b': 2}.transformMapEntry(k, v, v > 1, {k + k: v * 10}) == {'bb': 20}",
        "{'a': 1}.transformMapEntry(k, v, {}) == {}",
    ] {
        t(src);
    }
    runtime_err(
        "{'hello': 'world', 'hi': 'world'}.transformMapEntry(k, v, {v: k}).size() == 1",
        "insert failed: key world already exists",
    );
    runtime_err("{'a': 1}.transformMapEntry(k, v, dyn([v])).size() == 1", "no such overload");
    compile_err("{'a': 1}.transformMapEntry(k, v, [v]).size() == 1", "must be a map");
    let d = device("dra.example.com", &[("model", A::S("a100")), ("n", A::I(2))], &[]);
    let src =
        r#"device.attributes["dra.example.com"].transformMapEntry(k, v, k == "model", {v: k}) == {"a100": "model"}"#;
    assert_eq!(eval(src, &d), Ok(true));
}

#[test]
fn upstream_url_library_examples() {
    // k8s library/urls.go doc comment examples.
    for src in [
        "isURL('https://user:pass@example.com:80/path?query=val#fragment') && isURL('/absolute-path')",
        "!isURL('https://a:b:c/') && !isURL('../relative-path')",
        "url('/path').getScheme() == '' && url('https://example.com/').getScheme() == 'https'",
        "url('https://example.com:80/').getHost() == 'example.com:80' && url('https://example.com/').getHost() == 'example.com'",
        "url('https://[::1]:80/').getHost() == '[::1]:80' && url('https://[::1]/').getHost() == '[::1]' && url('/path').getHost() == ''",
        "url('https://example.com:80/').getHostname() == 'example.com' && url('https://127.0.0.1:80/').getHostname() == '127.0.0.1'",
        "url('https://[::1]:80/').getHostname() == '::1' && url('/path').getHostname() == ''",
        "url('https://example.com:80/').getPort() == '80' && url('https://example.com/').getPort() == '' && url('/path').getPort() == ''",
        "url('https://example.com/path').getEscapedPath() == '/path'",
        "url('https://example.com/path with spaces/').getEscapedPath() == '/path%20with%20spaces/'",
        "url('https://example.com').getEscapedPath() == ''",
        "url('https://example.com/path?k1=a&k2=b&k2=c').getQuery() == {'k1': ['a'], 'k2': ['b', 'c']}",
        "url('https://example.com/path?key with spaces=value with spaces').getQuery() == {'key with spaces': ['value with spaces']}",
        "url('https://example.com/path?').getQuery() == {} && url('https://example.com/path').getQuery() == {}",
        // net/url details: the fragment is not part of the query; schemes are lower-cased.
        "url('HTTPS://example.com/p?a=1#b=2').getQuery() == {'a': ['1']} && url('HTTPS://x/').getScheme() == 'https'",
        "url('https://example.com/a%2Fb').getEscapedPath() == '/a%2Fb' && url('https://x/p') == url('https://x/p')",
    ] {
        t(src);
    }
    runtime_err(
        "url('https://a:b:c/').getHost() == ''",
        r#"URL parse error during conversion from string: parse "https://a:b:c/": invalid port ":c" after host"#,
    );
    runtime_err("url('../relative-path').getHost() == ''", "invalid URI for request");
    compile_err("url(1).getHost() == ''", "found no matching overload for 'url' applied to '(int)'");
    compile_err("'https://x'.getHost() == ''", "found no matching overload for 'getHost'");
}

#[test]
fn timestamps_and_durations() {
    // The CEL standard library (cel-spec langdef "Timestamps and durations"; cel-go
    // common/types/timestamp.go, duration.go), with Kubernetes' default UTC time zone.
    for src in [
        "timestamp('2023-02-03T23:31:20+00:00') == timestamp('2023-02-03T23:31:20Z')",
        "string(timestamp('2023-02-03T23:31:20.120+01:00')) == '2023-02-03T22:31:20.12Z'",
        "timestamp(0) == timestamp('1970-01-01T00:00:00Z') && int(timestamp('1970-01-02T00:00:00Z')) == 86400",
        "duration('1h45m47s') == duration('6347s') && string(duration('1h45m47s')) == '6347s'",
        "string(duration('2ns')) == '0.000000002s' && string(duration('-1.5s')) == '-1.5s'",
        "duration('1h').getMinutes() == 60 && duration('90s').getMinutes() == 1 && duration('1.5s').getMilliseconds() == 1500",
        "timestamp('2023-02-03T23:31:20Z') + duration('1h') == timestamp('2023-02-04T00:31:20Z')",
        "duration('1h') + timestamp('2023-02-03T23:31:20Z') == timestamp('2023-02-04T00:31:20Z')",
        "timestamp('2023-02-04T00:00:00Z') - timestamp('2023-02-03T00:00:00Z') == duration('24h')",
        "timestamp('2023-02-04T00:00:00Z') - duration('24h') == timestamp('2023-02-03T00:00:00Z')",
        "duration('1m') - duration('30s') == duration('30s') && duration('1m') > duration('59s')",
        "timestamp('2023-02-03T23:31:20Z') < timestamp('2023-02-04T00:00:00Z')",
        // Getters (0-based month, day of year and day of month; Sunday is 0).
        "timestamp('2023-02-03T23:31:20.5Z').getFullYear() == 2023 && timestamp('2023-02-03T23:31:20Z').getMonth() == 1",
        "timestamp('2023-02-03T23:31:20Z').getDayOfYear() == 33 && timestamp('2023-02-03T23:31:20Z').getDayOfMonth() == 2",
        "timestamp('2023-02-03T23:31:20Z').getDate() == 3 && timestamp('2023-02-03T23:31:20Z').getDayOfWeek() == 5",
        "timestamp('2023-02-03T23:31:20.5Z').getHours() == 23 && timestamp('2023-02-03T23:31:20.5Z').getMilliseconds() == 500",
        "timestamp('2023-02-03T23:31:20Z').getHours('+02:00') == 1 && timestamp('2023-02-03T23:31:20Z').getDate('+02:00') == 4",
        "timestamp('2023-02-03T23:31:20Z').getMinutes('-05:30') == 1 && timestamp('2023-02-03T23:31:20Z').getHours('UTC') == 23",
        "type(timestamp('2023-02-03T23:31:20Z')) == google.protobuf.Timestamp && type(duration('1s')) == google.protobuf.Duration",
        "[timestamp(2), timestamp(1)].sort() == [timestamp(1), timestamp(2)] && [duration('2s'), duration('1s')].sort()[0] == duration('1s')",
        "'%s and %s'.format([timestamp(0), [duration('1m')]]) == '1970-01-01T00:00:00Z and [duration(\"60s\")]'",
    ] {
        t(src);
    }
    // Out of range and overflow are errors, as upstream.
    runtime_err("timestamp('9999-12-31T23:59:59Z') + duration('1s') == timestamp(0)", "integer overflow");
    runtime_err("timestamp(dyn(253402300800)) == timestamp(0)", "timestamp out of range");
    compile_err("timestamp(253402300800) == timestamp(0)", "timestamp validation failed");
    runtime_err("timestamp(dyn('2023-13-01T00:00:00Z')) == timestamp(0)", "RFC 3339");
    // Go's `time.LoadLocation` errors, whether or not the host has zoneinfo.
    runtime_err("timestamp(0).getHours('No/Such_Zone') == 0", "unknown time zone No/Such_Zone");
    runtime_err("timestamp(0).getHours('../../etc/passwd') == 0", "time: invalid location name");
    runtime_err("timestamp(0).getHours('America/../Europe/London') == 0", "time: invalid location name");
    runtime_err("timestamp(0).getHours('/etc/localtime') == 0", "time: invalid location name");
    // Constant literals are validated when compiling (cel.ValidateTimestampLiterals,
    // cel.ValidateDurationLiterals).
    compile_err("timestamp('2023-02-30T00:00:00Z') == timestamp(0)", "timestamp validation failed");
    compile_err("duration('1d') == duration('1h')", "duration validation failed");
    compile_err("timestamp(0) + timestamp(0) == timestamp(0)", "found no matching overload for '_+_'");
    compile_err("duration('1s').getDate() == 1", "found no matching overload for 'getDate'");
}

/// Whether the host has the IANA zoneinfo Go's `time.LoadLocation` reads; the tests
/// of named zones print a note and pass without it (the TZif parser is also tested on
/// embedded fixtures in `src/selector/tz.rs`).
fn host_has_zoneinfo() -> bool {
    let dirs = std::env::var_os("ZONEINFO").into_iter().map(std::path::PathBuf::from);
    let found = dirs
        .chain(["/usr/share/zoneinfo", "/usr/share/lib/zoneinfo", "/usr/lib/locale/TZ"].map(std::path::PathBuf::from))
        .any(|d| d.join("America/New_York").is_file());
    if !found {
        eprintln!("note: no zoneinfo on this host (tzdata not installed); skipping IANA time zone checks");
    }
    found
}

/// cel-go's `getHours('America/New_York')` and the other getters with an IANA name,
/// answered from the host's zoneinfo as Go answers them.
#[test]
fn timestamp_getters_with_iana_zones() {
    if !host_has_zoneinfo() {
        return;
    }
    for src in [
        // The example of cel-go's docs: 12:00 UTC on the day DST starts is 08:00 EDT.
        "timestamp('2024-03-10T12:00:00Z').getHours('America/New_York') == 8",
        // 2024's DST start: 01:59:59 EST, then 03:00:00 EDT.
        "timestamp('2024-03-10T06:59:59Z').getHours('America/New_York') == 1",
        "timestamp('2024-03-10T07:00:00Z').getHours('America/New_York') == 3",
        // 2024's DST end: 01:59:59 EDT, then 01:00:00 EST again.
        "timestamp('2024-11-03T05:59:59Z').getHours('America/New_York') == 1 && timestamp('2024-11-03T05:59:59Z').getMinutes('America/New_York') == 59",
        "timestamp('2024-11-03T06:00:00Z').getHours('America/New_York') == 1 && timestamp('2024-11-03T06:00:00Z').getMinutes('America/New_York') == 0",
        // The local date moves too.
        "timestamp('2024-01-01T03:00:00Z').getFullYear('America/New_York') == 2023 && timestamp('2024-01-01T03:00:00Z').getDayOfYear('America/New_York') == 364",
        "timestamp('2024-01-01T03:00:00Z').getMonth('America/New_York') == 11 && timestamp('2024-01-01T03:00:00Z').getDate('America/New_York') == 31",
        "timestamp('2024-01-01T03:00:00Z').getDayOfWeek('America/New_York') == 0 && timestamp('2024-01-01T03:00:00Z').getDayOfMonth('America/New_York') == 30",
        // Europe/London: GMT in winter, BST (+1) from 2024-03-31 01:00Z.
        "timestamp('2024-01-15T12:00:00Z').getHours('Europe/London') == 12",
        "timestamp('2024-03-31T00:59:59Z').getHours('Europe/London') == 0 && timestamp('2024-03-31T01:00:00Z').getHours('Europe/London') == 2",
        "timestamp('2024-10-27T00:59:59Z').getHours('Europe/London') == 1 && timestamp('2024-10-27T01:00:00Z').getHours('Europe/London') == 1",
        // Asia/Kolkata: +05:30 all year, the same as the fixed offset.
        "timestamp('2024-06-01T00:00:00Z').getHours('Asia/Kolkata') == 5 && timestamp('2024-06-01T00:00:00Z').getMinutes('Asia/Kolkata') == 30",
        "timestamp('2024-12-01T20:45:00Z').getDate('Asia/Kolkata') == 2 && timestamp('2024-12-01T20:45:00Z').getHours('Asia/Kolkata') == timestamp('2024-12-01T20:45:00Z').getHours('+05:30')",
        // Australia/Lord_Howe: +10:30, with a 30-minute DST (+11) over the new year.
        "timestamp('2024-07-01T00:00:00Z').getHours('Australia/Lord_Howe') == 10 && timestamp('2024-07-01T00:00:00Z').getMinutes('Australia/Lord_Howe') == 30",
        "timestamp('2024-01-01T00:00:00Z').getHours('Australia/Lord_Howe') == 11 && timestamp('2024-01-01T00:00:00Z').getMinutes('Australia/Lord_Howe') == 0",
        "timestamp('2024-10-05T15:29:59Z').getHours('Australia/Lord_Howe') == 1 && timestamp('2024-10-05T15:30:00Z').getHours('Australia/Lord_Howe') == 2 && timestamp('2024-10-05T15:30:00Z').getMinutes('Australia/Lord_Howe') == 30",
        // Past any file's last transition the footer's POSIX rule decides: 2150 in
        // New York is EDT from the second Sunday of March (the 8th) at 02:00 EST.
        "timestamp('2150-03-08T06:59:59Z').getHours('America/New_York') == 1 && timestamp('2150-03-08T07:00:00Z').getHours('America/New_York') == 3",
        "timestamp('2150-07-04T16:00:00Z').getHours('America/New_York') == 12 && timestamp('2150-12-25T17:00:00Z').getHours('America/New_York') == 12",
        "timestamp('9999-12-31T23:59:59Z').getFullYear('Australia/Lord_Howe') == 10000",
        // Milliseconds do not depend on the zone; Etc names are zones too.
        "timestamp('2024-03-10T12:00:00.123Z').getMilliseconds('America/New_York') == 123 && timestamp('2024-03-10T12:00:00Z').getHours('Etc/GMT+5') == 7",
        // Dynamic zone names (from a variable, not a literal) work the same way.
        "['America/New_York', 'Europe/London'].all(z, timestamp('2024-06-01T12:00:00Z').getHours(z) > 7)",
    ] {
        t(src);
    }
    // A directory is not a zone: Go reports the read's errno.
    runtime_err("timestamp(0).getHours('America') == 0", "is a directory");
}
