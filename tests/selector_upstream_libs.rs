//! The Kubernetes CEL library tests for the two libraries the DRA environment relies on,
//! replayed: `TestQuantity` (`k8s.io/apiserver/pkg/cel/library/quantity_test.go`) and
//! `TestSemver` (`.../library/semver_test.go`). Upstream checks a value; here each case
//! compares that value in a boolean expression. Case names are upstream's.

use schedkit::selector::{Device, Selector};

enum Want {
    True,
    RuntimeError,
    CompileError(&'static str),
}

fn run(table: &[(&str, &str, Want)]) {
    let d = Device::new("d", "x");
    for (name, src, want) in table {
        match want {
            Want::True => {
                let sel = Selector::compile(src).unwrap_or_else(|e| panic!("{name}: {e}"));
                assert_eq!(sel.matches(&d), Ok(true), "{name}: {src}");
            }
            Want::RuntimeError => {
                let sel = Selector::compile(src).unwrap_or_else(|e| panic!("{name}: {e}"));
                assert!(sel.matches(&d).is_err(), "{name}: {src}");
            }
            Want::CompileError(text) => {
                let e = Selector::compile(src).expect_err(name);
                assert!(e.to_string().contains(text), "{name}: {e}");
            }
        }
    }
}

#[test]
fn upstream_test_quantity() {
    use Want::{CompileError, RuntimeError, True};
    run(&[
        ("parse", r#"quantity("12Mi") == quantity("12582912")"#, True),
        ("parseInvalidSuffix", r#"quantity("10Mo") == quantity("1")"#, RuntimeError),
        ("parseInvalidSuffixPassesRegex", r#"quantity("10Mm") == quantity("1")"#, RuntimeError),
        ("isQuantity", r#"isQuantity("20")"#, True),
        ("isQuantity_megabytes", r#"isQuantity("20M")"#, True),
        ("isQuantity_mebibytes", r#"isQuantity("20Mi")"#, True),
        ("isQuantity_invalidSuffix", r#"!isQuantity("20Mo")"#, True),
        ("isQuantity_passingRegex", r#"!isQuantity("10Mm")"#, True),
        (
            "isQuantity_noOverload",
            "isQuantity([1, 2, 3])",
            CompileError("found no matching overload for 'isQuantity' applied to"),
        ),
        ("equality_reflexivity", r#"quantity("200M") == quantity("200M")"#, True),
        ("equality_symmetry", r#"quantity("200M") == quantity("0.2G") && quantity("0.2G") == quantity("200M")"#, True),
        (
            "equality_transitivity",
            r#"quantity("2M") == quantity("0.002G") && quantity("2000k") == quantity("2M") && quantity("0.002G") == quantity("2000k")"#,
            True,
        ),
        ("inequality", r#"!(quantity("200M") == quantity("0.3G"))"#, True),
        ("quantity_less", r#"quantity("50M").isLessThan(quantity("50Mi"))"#, True),
        ("quantity_less_obvious", r#"quantity("50M").isLessThan(quantity("100M"))"#, True),
        ("quantity_less_false", r#"!quantity("100M").isLessThan(quantity("50M"))"#, True),
        ("quantity_greater", r#"quantity("50Mi").isGreaterThan(quantity("50M"))"#, True),
        ("quantity_greater_obvious", r#"quantity("150Mi").isGreaterThan(quantity("100Mi"))"#, True),
        ("quantity_greater_false", r#"!quantity("50M").isGreaterThan(quantity("100M"))"#, True),
        ("compare_equal", r#"quantity("200M").compareTo(quantity("0.2G")) == 0"#, True),
        ("compare_less", r#"quantity("50M").compareTo(quantity("50Mi")) == -1"#, True),
        ("compare_greater", r#"quantity("50Mi").compareTo(quantity("50M")) == 1"#, True),
        ("add_quantity", r#"quantity("50k").add(quantity("20")) == quantity("50.02k")"#, True),
        ("add_int", r#"!quantity("50k").add(20).isLessThan(quantity("50020"))"#, True),
        ("sub_quantity", r#"quantity("50k").sub(quantity("20")) == quantity("49.98k")"#, True),
        ("sub_int", r#"quantity("50k").sub(20) == quantity("49980")"#, True),
        ("multiply", r#"quantity("50k").mul(2) == quantity("100000")"#, True),
        ("arith_chain_1", r#"quantity("50k").add(20).sub(quantity("100k")).asInteger() == -49980"#, True),
        ("arith_chain", r#"quantity("50k").add(20).sub(quantity("100k")).sub(-50000).asInteger() == 20"#, True),
        ("as_integer", r#"quantity("50k").asInteger() == 50000"#, True),
        ("is_integer", r#"quantity("50").isInteger()"#, True),
        ("as_float", r#"quantity("50.703k").asApproximateFloat() == 50703.0"#, True),
        // Beyond the range of `model::Quantity` (about 1e29) upstream's
        // `resource.Quantity` falls back to arbitrary precision; such a quantity is
        // never an `int64`, so "as_integer_error" fails with upstream's message and
        // "is_integer" is false.
        ("isQuantity (beyond 1e29)", r#"isQuantity("9999999999999999999999999999999999999G")"#, True),
        ("isQuantity (beyond 1e29, exponent)", r#"isQuantity("-1e40") && isQuantity("1.5e300")"#, True),
        ("isQuantity (exponent beyond int64)", r#"!isQuantity("1e99999999999999999999")"#, True),
        ("as_integer_error", r#"quantity("9999999999999999999999999999999999999G").asInteger() == 0"#, RuntimeError),
        ("is_integer", r#"!quantity("9999999999999999999999999999999999999G").isInteger()"#, True),
        // Not replayed: "divide_float_result", "divide_scaled", "integer_division". `div`
        // and `divInt` (and `mul`) appear only in a quantity.go whose
        // library_compatibility_test.go files them under "Kubernetes <1.??>", and the
        // apimachinery `Quantity.QuoRound`/`QuoIntegerDivision` they call are not in any
        // release, so their rounding cannot be checked; they are not implemented.
    ]);
}

#[test]
fn upstream_test_semver() {
    use Want::{CompileError, RuntimeError, True};
    run(&[
        ("parse", r#"semver("1.2.3") == semver("1.2.3")"#, True),
        ("parseInvalidVersion", r#"semver("v1.0").major() == 1"#, RuntimeError),
        ("isSemver", r#"isSemver("1.2.3-beta.1+build.1")"#, True),
        ("isSemver_empty_false", r#"!isSemver("")"#, True),
        ("isSemver_v_prefix_false", r#"!isSemver("v1.0.0")"#, True),
        ("isSemver_v_leading_whitespace_false", r#"!isSemver(" 1.0.0")"#, True),
        ("isSemver_v_contains_whitespace_false", r#"!isSemver("1. 0.0")"#, True),
        ("isSemver_v_trailing_whitespace_false", r#"!isSemver("1.0.0 ")"#, True),
        ("isSemver_leading_zeros_false", r#"!isSemver("01.01.01")"#, True),
        ("isSemver_major_only_false", r#"!isSemver("1")"#, True),
        ("isSemver_major_minor_only_false", r#"!isSemver("1.1")"#, True),
        ("isSemver_empty_normalize_false", r#"!isSemver("", true)"#, True),
        ("isSemver_v_leading_whitespace_normalize_false", r#"!isSemver(" 1.0.0", true)"#, True),
        ("isSemver_v_contains_whitespace_normalize_false", r#"!isSemver("1. 0.0", true)"#, True),
        ("isSemver_v_trailing_whitespace_normalize_false", r#"!isSemver("1.0.0 ", true)"#, True),
        ("isSemver_v_prefix_normalize_true", r#"isSemver("v1.0.0", true)"#, True),
        ("isSemver_leading_zeros_normalize_true", r#"isSemver("01.01.01", true)"#, True),
        ("isSemver_major_only_normalize_true", r#"isSemver("1", true)"#, True),
        ("isSemver_major_minor_only_normalize_true", r#"isSemver("1.1", true)"#, True),
        (
            "isSemver_noOverload",
            "isSemver([1, 2, 3])",
            CompileError("found no matching overload for 'isSemver' applied to"),
        ),
        ("equality_normalize", r#"semver("v01.01", true) == semver("1.1.0")"#, True),
        ("equality_reflexivity", r#"semver("1.2.3") == semver("1.2.3")"#, True),
        ("inequality", r#"!(semver("1.2.3") == semver("1.0.0"))"#, True),
        ("semver_less", r#"semver("1.0.0").isLessThan(semver("1.2.3"))"#, True),
        ("semver_less_false", r#"!semver("1.0.0").isLessThan(semver("1.0.0"))"#, True),
        ("semver_greater", r#"semver("1.2.3").isGreaterThan(semver("1.0.0"))"#, True),
        ("semver_greater_false", r#"!semver("1.0.0").isGreaterThan(semver("1.0.0"))"#, True),
        ("compare_equal", r#"semver("1.2.3").compareTo(semver("1.2.3")) == 0"#, True),
        ("compare_less", r#"semver("1.0.0").compareTo(semver("1.2.3")) == -1"#, True),
        ("compare_greater", r#"semver("1.2.3").compareTo(semver("1.0.0")) == 1"#, True),
        ("major", r#"semver("1.2.3").major() == 1"#, True),
        ("minor", r#"semver("1.2.3").minor() == 2"#, True),
        ("patch", r#"semver("1.2.3").patch() == 3"#, True),
    ]);
}
