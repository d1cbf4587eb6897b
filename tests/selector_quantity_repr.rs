//! How upstream holds a quantity decides `isInteger()`, `asInteger()` and
//! `asApproximateFloat()` (`k8s.io/apiserver/pkg/cel/library/quantity.go` calls
//! `Quantity.AsInt64` and `AsApproximateFloat64`, `k8s.io/apimachinery/pkg/api/resource`):
//! an `int64Amount{value, scale}` is an integer only at a scale of zero or more, and
//! its float is `value * math.Pow10(scale)`. So equal values written differently
//! answer differently: `1` is an integer, `1.0` and `1000m` are not.
//!
//! Device capacities are held as their canonical text re-parsed: a scheduler reads
//! them after a round trip through the API server, which re-emits every quantity in
//! canonical form (`Quantity.MarshalJSON` / `String`).

use schedkit::model::Quantity;
use schedkit::selector::{Device, Selector};

const DOMAIN: &str = "dra.example.com";

fn device(capacity: &str) -> Device {
    Device::new("d", DOMAIN).with_capacity("mem", Quantity::parse(capacity).unwrap())
}

fn eval_on(src: &str, d: &Device) -> Result<bool, String> {
    let sel = Selector::compile(src).unwrap_or_else(|e| panic!("{src}: {e}"));
    sel.matches(d).map_err(|e| e.to_string())
}

fn eval(src: &str) -> Result<bool, String> {
    eval_on(src, &device("1"))
}

#[test]
fn literals_are_integers_only_at_a_non_negative_scale() {
    for (text, integer) in [
        ("1", true),
        ("0", true),
        ("1k", true),
        ("1.5k", true),                 // int64Amount{15, 2}
        ("12e6", true),                 // int64Amount{12, 6}
        ("80Gi", true),                 // binary: scale 0
        ("1.0", false),                 // int64Amount{10, -1}
        ("1000m", false),               // int64Amount{1000, -3}
        ("0m", false),                  // int64Amount{0, -3}
        ("0.000", false),               // int64Amount{0, -3}
        ("1.5Ki", false),               // inf.Dec (a fraction with a binary suffix)
        ("1Pi", false),                 // inf.Dec (the binary precision rule)
        ("9223372036854775807", false), // inf.Dec (19 digits)
    ] {
        let want = if integer { "true" } else { "false" };
        assert_eq!(eval(&format!("quantity('{text}').isInteger() == {want}")), Ok(true), "{text}");
    }
    assert_eq!(eval("quantity('1.5k').asInteger() == 1500 && quantity('12e6').asInteger() == 12000000"), Ok(true));
    let e = eval("quantity('1000m').asInteger() == 1").unwrap_err();
    assert!(e.contains("cannot convert value to integer"), "{e}");
}

#[test]
fn approximate_floats_multiply_the_written_digits() {
    // "0.3" is int64Amount{3, -1}: 3 * 0.1, one unit in the last place above 0.3.
    let upstream = 3f64 * 0.1;
    assert_ne!(upstream.to_bits(), 0.3f64.to_bits());
    assert_eq!(eval(&format!("quantity('0.3').asApproximateFloat() == {upstream:e}")), Ok(true));
    assert_eq!(eval("quantity('0.3').asApproximateFloat() != 0.3"), Ok(true));
    // "300m" is 300 * 0.001, which rounds to 0.3 itself.
    assert_eq!(eval("quantity('300m').asApproximateFloat() == 0.3"), Ok(true));
    // A decimal: the nano-units times 10^-9.
    let want = 1_536_000_000_000f64 * 1e-9;
    assert_eq!(eval(&format!("quantity('1.5Ki').asApproximateFloat() == {want:e}")), Ok(true));
    assert_eq!(eval("quantity('50.703k').asApproximateFloat() == 50703.0"), Ok(true));
}

#[test]
fn arithmetic_keeps_upstreams_representation() {
    for src in [
        // int64Amount.Add aligns to the smaller scale.
        "!quantity('1.5').add(quantity('0.5')).isInteger()",
        "quantity('1.5').add(quantity('0.5')) == quantity('2')",
        "quantity('1').add(1).isInteger() && quantity('1k').sub(1).asInteger() == 999",
        "!quantity('2').add(quantity('-1000m')).isInteger()",
        // Adding a zero leaves the other operand as it was.
        "quantity('1').add(quantity('0m')).isInteger() && quantity('0m').add(quantity('1')).isInteger()",
        // A decimal operand makes a decimal.
        "!quantity('1Pi').sub(quantity('1Pi')).isInteger()",
        // int64Amount.Mul: a zero factor gives a plain zero; otherwise the scale stays.
        "quantity('1.5').mul(0).isInteger()",
        "!quantity('1.5').mul(2).isInteger() && quantity('1.5').mul(2) == quantity('3')",
        "quantity('1k').mul(3).asInteger() == 3000",
        // Past model::Quantity's range, multiplication carries on as upstream's decimal.
        "quantity('1e28').mul(100) == quantity('1e30') && !quantity('1e28').mul(100).isInteger()",
    ] {
        assert_eq!(eval(src), Ok(true), "{src}");
    }
}

#[test]
fn capacities_are_held_as_their_canonical_text() {
    let cap = format!("device.capacity['{DOMAIN}'].mem");
    for (written, canonical_is_integer) in [
        ("1.5Ki", true), // canonical "1536"
        ("1000m", true), // canonical "1"
        ("1.5", false),  // canonical "1500m"
        ("80Gi", true),  // canonical "80Gi"
        ("1Pi", false),  // canonical "1Pi": a decimal when parsed
        ("2e3", true),   // canonical "2e3"
    ] {
        let d = device(written);
        let want = if canonical_is_integer { "true" } else { "false" };
        assert_eq!(eval_on(&format!("{cap}.isInteger() == {want}"), &d), Ok(true), "{written}");
        // Whatever the representation, comparisons go by value.
        assert_eq!(eval_on(&format!("{cap}.compareTo(quantity('{written}')) == 0"), &d), Ok(true), "{written}");
    }
    assert_eq!(eval_on(&format!("{cap}.asApproximateFloat() == 1.5"), &device("1.5")), Ok(true));
    assert_eq!(eval_on(&format!("{cap}.asInteger() == 1536"), &device("1.5Ki")), Ok(true));
    // The map form of the capacity domain holds them the same way.
    let via_map = format!("device.capacity['{DOMAIN}'].all(k, !device.capacity['{DOMAIN}'][k].isInteger())");
    assert_eq!(eval_on(&via_map, &device("1.5")), Ok(true));
}
