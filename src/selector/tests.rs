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
