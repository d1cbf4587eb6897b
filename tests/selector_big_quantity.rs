//! Quantities beyond `model::Quantity`'s range, as upstream's decimal fallback
//! (`k8s.io/apimachinery/pkg/api/resource/quantity.go`, `ParseQuantity`; the CEL
//! functions of `k8s.io/apiserver/pkg/cel/library/quantity.go`): exact comparison and
//! arithmetic, `asApproximateFloat`, and never an integer.

use schedkit::model::Quantity;
use schedkit::selector::{Device, Selector};

fn device() -> Device {
    Device::new("d", "dra.example.com").with_capacity("mem", Quantity::parse("80Gi").unwrap())
}

fn eval(src: &str) -> Result<bool, String> {
    let sel = Selector::compile(src).unwrap_or_else(|e| panic!("{src}: {e}"));
    sel.matches(&device()).map_err(|e| e.to_string())
}

#[test]
fn large_quantities_compare_and_add_exactly() {
    for src in [
        r#"quantity("1e30").isGreaterThan(quantity("1e29"))"#,
        r#"quantity("1e30").compareTo(quantity("1000000000000000000000000000000")) == 0"#,
        // `!=` is priced by operand size (k8s `cost.go` prices only `==` of quantities),
        // and two parsed quantities have none: Kubernetes refuses `q1 != q2`.
        r#"quantity("1e30") == quantity("1000e27") && !(quantity("1e30") == quantity("1e31"))"#,
        r#"quantity("-1e30").sign() == -1 && quantity("1e30").sign() == 1"#,
        r#"quantity("-1e30").isLessThan(quantity("-1e29")) && quantity("-1e29").isGreaterThan(quantity("-1e30"))"#,
        r#"quantity("1e30").add(quantity("1")).compareTo(quantity("1000000000000000000000000000001")) == 0"#,
        r#"quantity("1e30").add(1).sub(quantity("1e30")) == quantity("1")"#,
        r#"quantity("1e30").sub(quantity("1e30")).sign() == 0"#,
        r#"quantity("1e30").mul(-2).compareTo(quantity("-2e30")) == 0"#,
        r#"quantity("1Gi").isLessThan(quantity("1e30")) && quantity("1e30").isGreaterThan(quantity("1Gi"))"#,
        // Past model::Quantity's range in the middle of a computation: upstream carries
        // on in arbitrary precision.
        r#"quantity("9e28").add(quantity("9e28")).compareTo(quantity("18e28")) == 0"#,
        // Fractions beyond a nano-unit round up, away from zero.
        r#"quantity("1e-100").compareTo(quantity("1n")) == 0 && quantity("-1e-100") == quantity("-1n")"#,
        r#"quantity("1.0000000000000000000000000000000000000000001e30").isGreaterThan(quantity("1e30"))"#,
        // A binary suffix caps the magnitude at 2^63-1.
        r#"quantity("99999999999999999999999Ki").compareTo(quantity("9223372036854775807")) == 0"#,
        r#"quantity("-99999999999999999999999Ki") == quantity("-9223372036854775807")"#,
        // suffix.go keeps the low 32 bits of the exponent: 2^32 becomes 0.
        r#"quantity("1e4294967296") == quantity("1")"#,
        // Against device capacity, in both evaluation paths.
        r#"device.capacity["dra.example.com"].mem.compareTo(quantity("1e40")) < 0"#,
        r#"device.capacity["dra.example.com"].mem.isLessThan(quantity("1e40"))"#,
        r#"!device.capacity["dra.example.com"].mem.isGreaterThan(quantity("1e40"))"#,
    ] {
        assert_eq!(eval(src), Ok(true), "{src}");
    }
}

#[test]
fn large_quantities_are_never_integers() {
    // Upstream's AsInt64 refuses every arbitrary-precision quantity, whatever its
    // value, and an int64Amount that does not fit.
    for src in [
        r#"!quantity("1e30").isInteger()"#,
        r#"!quantity("1e30").add(1).sub(quantity("1e30")).isInteger()"#,
        r#"!quantity("9999999999999999999999999999999").sub(quantity("9999999999999999999999999999998")).isInteger()"#,
        r#"!quantity("99999999999999999999999Ki").isInteger()"#,
        // Nineteen digits miss ParseQuantity's int64 fast path (at most 18), so even
        // 2^63-1 is a decimal there; eighteen digits are an int64Amount.
        r#"!quantity("9223372036854775807").isInteger()"#,
        r#"quantity("922337203685477580").isInteger()"#,
        r#"quantity("-000000000000000000000000922337203685477580").isInteger()"#,
        // An int64Amount (at most 18 digits) stays one while the sum fits: 1e30 - 1e30
        // is 0 * 10^30, an integer; 1e30 + 1e30 is 2 * 10^30, too large for an int64.
        r#"quantity("1e30").sub(quantity("1e30")).isInteger()"#,
        r#"quantity("1e30").sub(quantity("1e30")).asInteger() == 0"#,
        r#"!quantity("1e30").add(quantity("1e30")).isInteger()"#,
    ] {
        assert_eq!(eval(src), Ok(true), "{src}");
    }
    let e = eval(r#"quantity("1e30").asInteger() == 0"#).unwrap_err();
    assert!(e.contains("cannot convert value to integer"), "{e}");
}

#[test]
fn large_quantities_convert_to_floats_as_upstream() {
    let float = |text: &str, want: f64| {
        let src = format!(r#"quantity("{text}").asApproximateFloat() == {want:e}"#);
        assert_eq!(eval(&src), Ok(true), "{src}");
    };
    // AsApproximateFloat64 of an int64Amount: the value times math.Pow10(scale).
    float("1e30", 1e30);
    float("-2.5e40", -25.0 * (1e32 * 1e7));
    // Of an arbitrary-precision quantity: the unscaled integer (nano-units after
    // rounding) as a float, times 10^-9.
    let nanos = "-123456789012345678901234567890500000000";
    float("-123456789012345678901234567890.5", nanos.parse::<f64>().unwrap() * (1.0 / 1e9));
    // The binary cap is a decimal of scale 0.
    float("99999999999999999999999999999999Ki", i64::MAX as f64);
    assert_eq!(eval(r#"quantity("1e400").asApproximateFloat() == 1.0 / 0.0"#), Ok(true));
}

#[test]
fn unparsable_quantities_keep_upstreams_errors() {
    let e = eval(r#"quantity("1e99999999999999999999") == quantity("1")"#).unwrap_err();
    assert!(e.contains("unable to parse quantity's suffix"), "{e}");
    let e = eval(r#"quantity("1x") == quantity("1")"#).unwrap_err();
    assert!(e.contains("invalid quantity"), "{e}");
    // Beyond what schedkit builds (upstream would try to materialise the digits).
    let e = eval(r#"quantity("1e200000") == quantity("1")"#).unwrap_err();
    assert!(e.contains("too large"), "{e}");
}

#[test]
fn small_quantities_upstream_holds_as_decimals() {
    // ParseQuantity's fast path takes a binary suffix only without a fraction and with
    // `15 - digits - exponent*3/10 - 1 >= 0`; a decimal needs at most 18 digits and a
    // scale of at least 10^-9. Outside it the value is an inf.Dec: never an integer,
    // but compared and added exactly.
    for src in [
        r#"!quantity("1.5Ki").isInteger()"#,
        r#"quantity("1.5Ki").compareTo(quantity("1536")) == 0 && quantity("1.5Ki") == quantity("1536")"#,
        r#"!quantity("1Pi").isInteger() && !quantity("1Ei").isInteger()"#,
        r#"quantity("1Pi").compareTo(quantity("1125899906842624")) == 0"#,
        r#"quantity("1Ti").isInteger() && quantity("99Ti").isInteger() && !quantity("100Ti").isInteger()"#,
        r#"quantity("99999999999Ki").isInteger() && !quantity("999999999999Ki").isInteger()"#,
        r#"!quantity("0.1234567890123456789").isInteger()"#,
        r#"!quantity("1.5Ki").add(quantity("512")).isInteger()"#,
        r#"quantity("1.5Ki").add(quantity("512")) == quantity("2Ki")"#,
        r#"quantity("1.5Ki").sign() == 1 && quantity("-1.5Ki").sign() == -1"#,
        // The fast path's own cases stay integers.
        r#"quantity("80Gi").isInteger() && quantity("1.5k").isInteger() && quantity("0.5").isInteger() == false"#,
    ] {
        assert_eq!(eval(src), Ok(true), "{src}");
    }
    let e = eval(r#"quantity("1.5Ki").asInteger() == 1536"#).unwrap_err();
    assert!(e.contains("cannot convert value to integer"), "{e}");
    // AsApproximateFloat64 of the decimal: nano-units as a float, times 10^-9.
    let want = 1_536_000_000_000f64 * 1e-9;
    assert_eq!(eval(&format!(r#"quantity("1.5Ki").asApproximateFloat() == {want:e}"#)), Ok(true));
}
