//! What the selector fuzz target does with one input; shared by
//! `fuzz/fuzz_targets/selector.rs` (cargo-fuzz, nightly) and the stable replay test
//! `tests/selector_fuzz_corpus.rs`. Any panic is a bug.

use schedkit::model::Quantity;
use schedkit::selector::{AttributeValue, Device, Selector, SelectorError, Semver, parse};

/// Devices the compiled selector is evaluated against.
pub fn devices() -> Vec<Device> {
    let q = |s: &str| Quantity::parse(s).unwrap_or(Quantity::ZERO);
    let v = |s: &str| {
        AttributeValue::Version(Semver::parse(s).unwrap_or(Semver {
            major: 0,
            minor: 0,
            patch: 0,
            pre: Vec::new(),
            build: Vec::new(),
        }))
    };
    vec![
        Device::new("empty", ""),
        Device::new("gpu", "gpu.nvidia.com")
            .with_attribute("productName", AttributeValue::String("NVIDIA H100 80GB HBM3".into()))
            .with_attribute("index", AttributeValue::Int(3))
            .with_attribute("mig", AttributeValue::Bool(true))
            .with_attribute("driverVersion", v("550.54.15"))
            .with_attribute("dra.example.com/name", AttributeValue::String("fish".into()))
            .with_capacity("memory", q("80Gi"))
            .with_capacity("dra.example.com/name", q("1Mi")),
        Device::new("example", "dra.example.com")
            .with_attribute("name", AttributeValue::Int(-1))
            .with_attribute("services", AttributeValue::String("some_example_value".into()))
            .with_attribute("version", v("1.0.0-rc.1"))
            .with_capacity("quantity", q("500m")),
    ]
}

/// Parses, pretty-prints, re-parses, compiles and evaluates `data`.
pub fn exercise(data: &[u8], devices: &[Device]) {
    exercise_with(data, devices, &mut |sel, d| {
        let (result, _cost) = sel.matches_with_cost(d);
        if let Err(e) = result {
            // Errors must render.
            assert!(!e.to_string().is_empty());
        }
    });
}

/// [`exercise`], with each evaluation of the compiled selector on a device done by
/// `evaluate` (which may time or measure it).
pub fn exercise_with(data: &[u8], devices: &[Device], evaluate: &mut dyn FnMut(&Selector, &Device)) {
    let Ok(src) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(tree) = parse(src) {
        let text = tree.to_string();
        match parse(&text) {
            Ok(again) => assert_eq!(again, tree, "{src:?} printed as {text:?}"),
            // Printing may add parentheses and escapes beyond the limits.
            Err(SelectorError::TooLong { .. } | SelectorError::TooDeep { .. }) => {}
            Err(e) => panic!("{src:?} printed as {text:?} does not parse: {e}"),
        }
    }
    if let Ok(sel) = Selector::compile(src) {
        assert!(sel.estimated_cost() <= schedkit::selector::MAX_COST);
        for d in devices {
            evaluate(&sel, d);
        }
    }
}

/// The fuzz target's slow-evaluation mode: [`exercise`], failing when one evaluation
/// of a selector on one device takes longer than `limit` (wall clock; for fuzzing
/// only, never in tests, which check cost and allocation instead).
#[allow(dead_code, reason = "used by the fuzz target, not by every test that includes this file")]
pub fn exercise_timed(data: &[u8], devices: &[Device], limit: std::time::Duration) {
    exercise_with(data, devices, &mut |sel, d| {
        let start = std::time::Instant::now();
        let (result, cost) = sel.matches_with_cost(d);
        let took = start.elapsed();
        assert!(took <= limit, "{sel} on {}: {took:?} (cost {cost}, {result:?}), over {limit:?}", d.name());
    });
}
