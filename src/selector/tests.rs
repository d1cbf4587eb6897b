//! Unit tests beside the code: upstream DRA CEL cases and CEL spec tables live in
//! `tests/selector_*.rs`; these cover internals.

use super::*;

#[test]
fn compiles_and_matches_simple() {
    let d = Device::new("d", "dra.example.com").with_attribute("name", AttributeValue::Bool(true));
    let s = Selector::compile(r#"device.attributes["dra.example.com"].name"#).unwrap();
    assert!(s.matches(&d).unwrap());
}

#[test]
fn deepest_accepted_nesting_fits_a_small_stack() {
    // At the nesting limit, compiling and evaluating must fit the 2 MiB default test
    // thread stack in a debug build; one level more is refused, not overflowed.
    let n = MAX_NESTING_DEPTH - 3;
    let run = move || {
        let parens = format!("{}true{}", "(".repeat(n), ")".repeat(n));
        let chain = vec!["1"; n - 2].join(" + ") + " > 0";
        let lists = format!("{}1{}.size() == 1", "[".repeat(n - 2), "]".repeat(n - 2));
        let neg = format!("{}1{} == 1", "-(".repeat(n / 2), ")".repeat(n / 2));
        let d = Device::new("d", "x");
        for src in [parens, chain, lists, neg] {
            let s = Selector::compile(&src).unwrap_or_else(|e| panic!("{e}"));
            let _ = s.matches(&d);
        }
        let deeper = format!("{}true{}", "(".repeat(n + 200), ")".repeat(n + 200));
        assert!(matches!(Selector::compile(&deeper), Err(SelectorError::TooDeep { .. })));
    };
    std::thread::Builder::new().stack_size(2 << 20).spawn(run).unwrap().join().unwrap();
}

#[test]
fn long_and_chains_are_balanced() {
    let src = vec!["device.driver == 'x'"; 400].join(" && ");
    let s = Selector::compile(&src).unwrap();
    assert_eq!(s.matches(&Device::new("d", "x")), Ok(true));
    assert!(parser::tree_depth(&parse(&src).unwrap()) < 20);
}

#[test]
fn selectors_and_devices_are_shareable_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Selector>();
    assert_send_sync::<Device>();
    assert_send_sync::<SelectorError>();
    assert_send_sync::<EvalError>();
}

#[test]
fn version_attributes_parse_strictly() {
    assert!(AttributeValue::version("1.2.3-rc.1").is_ok());
    assert!(AttributeValue::version("v1.2").is_err());
    let s = Selector::compile("device.driver == 'x'").unwrap();
    assert_eq!(s.to_string(), "device.driver == 'x'");
}

/// (estimated, actual) cost of any expression, bool or not, against an empty device.
fn costs(src: &str) -> (u64, u64) {
    let expr = parse(src).unwrap_or_else(|e| panic!("{src}: {e}"));
    let c =
        compile::compile(src, &expr, super::environment::Refusals::default()).unwrap_or_else(|e| panic!("{src}: {e}"));
    let d = Device::new("d", "x");
    let mut cx = eval::Ctx { fault: None, device: &d, locals: SmallVec::new(), cost: 0, limit: u64::MAX };
    if let Err(e) = cx.eval(&c.root) {
        panic!("{src}: {e}");
    }
    (c.max_cost, cx.cost)
}

#[test]
fn format_costs_match_upstream() {
    // cel-go ext/formatting_test.go TestStringFormat: expectedEstimatedCost and
    // expectedRuntimeCost (equal there) of the whole `"...".format([...])` call.
    for (src, want) in [
        (r#""no substitution".format([])"#, 12),
        (r#""str is %s and some more".format(["filler"])"#, 13),
        (r#""%% and also %%".format([])"#, 12),
        (r#""%%%s%%".format(["text"])"#, 11),
        (r#""%d %d %d, %s %s %s, %d %d %d, %s %s %s".format([1, 2, 3, "A", "B", "C", 4, 5, 6, "D", "E", "F"])"#, 14),
        (r#""%.3f".format([1.2345])"#, 11),
        (r#""this is 5 in binary: %b".format([5])"#, 13),
        (r#""unsigned 64 in binary: %b".format([uint(64)])"#, 14),
        (r#""%s".format([[2.71]])"#, 21),
        (r#""map with multiple key types: %s".format([{1: "value1", uint(2): "value2", true: double("NaN")}])"#, 46),
    ] {
        assert_eq!(costs(src), (want, want), "{src}");
    }
}

#[test]
fn list_extension_costs_follow_cel_go_estimators() {
    // ext/lists.go (version 3): size x factor + 1 (call) + 10 (new list), plus the
    // arguments. A 4-element literal costs 10.
    for (src, estimated, actual) in [
        ("[1, 2, 3, 4].reverse()", 10 + 4 + 11, 10 + 4 + 11),
        ("[1, 2, 3, 4].slice(1, 3)", 10 + 2 + 11, 10 + 2 + 11),
        ("lists.range(5)", 5 + 11, 5 + 11),
        ("[[1], [2, 3]].flatten()", 30 + 2 + 11, 30 + 2 + 11),
        ("[1, 2, 3, 4].distinct()", 10 + 2 * 16 + 11, 10 + 2 * 16 + 11),
        ("[4, 3, 2, 1].sort()", 10 + 2 * 16 + 11, 10 + 2 * 16 + 11),
        // Strings add the traversal factor 0.1 per comparison.
        ("['b', 'a'].sort()", 10 + 9 + 11, 10 + 8 + 11),
    ] {
        assert_eq!(costs(src), (estimated, actual), "{src}");
    }
}

#[test]
fn ip_and_cidr_costs_follow_kubernetes_cost_go() {
    // Estimates: the global parsers traverse their string, 0.1 per character (0.2 for
    // ip.isCanonical), as k8s cost_test.go TestIPCost / TestCIDRCost /
    // TestIPIsCanonicalCost expect since 1.32; containsIP 4 and containsCIDR 7 for the
    // comparison, plus 0.1 per character of a string argument. At run time parsing is
    // 0.1 per character and the comparison sees values of size 1.
    for (src, estimated, actual) in [
        (r#"cidr("192.168.0.0/24").containsIP(ip("192.168.0.1"))"#, 2 + 2 + 4, 2 + 2 + 1),
        (r#"cidr("192.168.0.0/24").containsCIDR("192.168.0.0/25")"#, 2 + 7 + 2, 2 + 3 + 2),
        (r#"ip.isCanonical("2001:db8::abcd")"#, 3, 3),
        (r#"ip("::1").family()"#, 1 + 1, 1 + 1),
    ] {
        assert_eq!(costs(src), (estimated, actual), "{src}");
    }
}

#[test]
fn url_costs_follow_kubernetes_cost_go() {
    // `url(s)` traverses the string (0.1 per character) in the estimate and at run
    // time; the getters and `isURL` cost 1.
    let src = r#"url("https://example.com/path").getHost()"#;
    assert_eq!(costs(src), (3 + 1, 3 + 1));
    assert_eq!(costs(r#"isURL("https://example.com/path")"#), (1, 1));
}

#[test]
fn timestamp_costs_are_cel_go_defaults() {
    // cel-go prices the conversions, getters and arithmetic at 1 each.
    assert_eq!(costs("timestamp('2023-02-03T23:31:20Z') + duration('1h')"), (3, 3));
    assert_eq!(costs("timestamp(0).getHours('+01:00')"), (2, 2));
}

#[test]
fn quantity_values_stay_small() {
    // The quantity's representation rides in the value's padding: evaluation moves
    // values by copy, so a larger `Value` would cost every expression.
    assert!(std::mem::size_of::<super::value::Value<'_>>() <= 48, "{}", std::mem::size_of::<super::value::Value<'_>>());
}

#[test]
fn two_variable_comprehension_costs_follow_upstream() {
    // k8s library/cost_test.go TestTwoVariableComprehensionCost: estimated (max) and
    // run-time costs.
    for (src, estimated, actual) in [
        ("{'a': 1, 'b': 2}.transformMap(k, v, v + 1)", 71, 71),
        ("{'a': 1, 'b': 2}.transformMap(k, v, v < 5, v + 1)", 75, 75),
        ("{'a': 1, 'b': 2}.transformMapEntry(k, v, {k: v + 1})", 131, 131),
        ("{'a': 1, 'b': 2}.transformMapEntry(k, v, v < 5, {k: v + 1})", 135, 135),
        ("[1, 2].transformList(i, v, v + 1)", 49, 49),
        ("[1, 2].transformList(i, v, v < 5, v + 1)", 53, 53),
    ] {
        assert_eq!(costs(src), (estimated, actual), "{src}");
    }
}

#[test]
fn comprehension_run_time_costs_count_the_steps_taken() {
    // cel-go charges a comprehension as its expansion runs: the accumulator's start,
    // each loop condition and the step branch actually taken, and the result. The
    // estimate prices every step at its dearest.
    for (src, estimated, actual) in [
        // [] 10 + 10, then `x > 1` 2 per element: false keeps `accu` (1), true appends
        // (`accu + [x]`, 13), then the result 1.
        ("[1, 2].filter(x, x > 1)", 51, 39),
        // `!accu` condition 3 + `accu ||` 1 + `x > 0` 2; the next condition (3) ends the
        // loop; result 1.
        ("[1, 2].exists(x, x > 0)", 23, 20),
        // Every element evaluated: 2 × (2 + 1 + 2) + 1.
        ("[1, 2].all(x, x > 0)", 21, 21),
        // `x > 1` 2, then `accu` 1 or `accu + 1` 2; result `accu == 1` 2.
        ("[1, 2].exists_one(x, x > 1)", 20, 19),
        ("[1, 2].map(x, x + 1)", 49, 49),
    ] {
        assert_eq!(costs(src), (estimated, actual), "{src}");
    }
}
