//! Differential test against the `cel` crate (as re-exported by `kube-cel`, which adds
//! the Kubernetes quantity, semver and string functions): a generated corpus of typed
//! selector expressions over a GPU device, in the subset both implementations support,
//! must give the same answers (both true, both false, or both an error).

use std::collections::HashMap;

use kube_cel::KubeCelExt;
use kube_cel::cel;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use schedkit::model::Quantity;
use schedkit::selector::{AttributeValue, Device, Limits, Selector, SelectorError, Semver};

const D: &str = r#"device.attributes["gpu.nvidia.com"]"#;
const C: &str = r#"device.capacity["gpu.nvidia.com"]"#;

fn ours() -> Device {
    Device::new("gpu-0", "gpu.nvidia.com")
        .with_attribute("productName", AttributeValue::String("NVIDIA H100 80GB HBM3".into()))
        .with_attribute("architecture", AttributeValue::String("Hopper".into()))
        .with_attribute("index", AttributeValue::Int(3))
        .with_attribute("mig", AttributeValue::Bool(false))
        .with_attribute("driverVersion", AttributeValue::Version(Semver::parse("550.54.15").unwrap()))
        .with_capacity("memory", Quantity::parse("80Gi").unwrap())
        .with_capacity("cores", Quantity::parse("132").unwrap())
}

fn theirs() -> cel::Context<'static> {
    let mut ctx = cel::Context::default().with_all();
    let eval = |ctx: &cel::Context<'_>, src: &str| cel::Program::compile(src).unwrap().execute(ctx).unwrap();
    let version = eval(&ctx, r#"semver("550.54.15")"#);
    let memory = eval(&ctx, r#"quantity("80Gi")"#);
    let cores = eval(&ctx, r#"quantity("132")"#);
    let attrs: HashMap<String, cel::Value> = HashMap::from([
        ("productName".to_owned(), cel::Value::from("NVIDIA H100 80GB HBM3")),
        ("architecture".to_owned(), cel::Value::from("Hopper")),
        ("index".to_owned(), cel::Value::Int(3)),
        ("mig".to_owned(), cel::Value::Bool(false)),
        ("driverVersion".to_owned(), version),
    ]);
    let caps: HashMap<String, cel::Value> = HashMap::from([("memory".to_owned(), memory), ("cores".to_owned(), cores)]);
    let dev: HashMap<String, cel::Value> = HashMap::from([
        ("driver".to_owned(), cel::Value::from("gpu.nvidia.com")),
        ("attributes".to_owned(), HashMap::from([("gpu.nvidia.com".to_owned(), attrs)]).into()),
        ("capacity".to_owned(), HashMap::from([("gpu.nvidia.com".to_owned(), caps)]).into()),
    ]);
    ctx.add_variable_from_value("device", dev);
    ctx
}

fn int_expr() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        (-5i64..20).prop_map(|v| v.to_string()),
        Just(format!("{D}.index")),
        Just("size(device.driver)".to_owned()),
        Just(format!("{D}.productName.size()")),
        Just(format!("{C}.cores.asInteger()")),
        Just(format!("{D}.driverVersion.major()")),
        Just(format!("{C}.memory.compareTo(quantity(\"64Gi\"))")),
    ];
    leaf.prop_recursive(2, 8, 2, |inner| {
        (inner.clone(), prop::sample::select(vec!["+", "-", "*"]), inner)
            .prop_map(|(a, op, b)| format!("({a} {op} {b})"))
    })
}

fn str_expr() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec!["'Hopper'", "'NVIDIA H100 80GB HBM3'", "'gpu.nvidia.com'", "''", "'h'"])
            .prop_map(str::to_owned),
        Just(format!("{D}.productName")),
        Just(format!("{D}.architecture")),
        Just("device.driver".to_owned()),
        Just(format!("{D}.architecture.lowerAscii()")),
        Just(format!("{D}.productName.upperAscii()")),
    ]
}

fn quantity_expr() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(format!("{C}.memory")),
        Just(format!("{C}.cores")),
        prop::sample::select(vec!["80Gi", "40Gi", "132", "100", "1.5", "500m", "85899345920"])
            .prop_map(|q| format!("quantity('{q}')")),
    ]
}

fn semver_expr() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(format!("{D}.driverVersion")),
        prop::sample::select(vec!["550.54.15", "550.0.0", "1.0.0", "1.0.0-rc.1", "600.1.2"])
            .prop_map(|v| format!("semver('{v}')")),
    ]
}

fn bool_expr() -> impl Strategy<Value = String> {
    let cmp = prop::sample::select(vec!["==", "!=", "<", "<=", ">", ">="]);
    let leaf = prop_oneof![
        prop::sample::select(vec!["true", "false"]).prop_map(str::to_owned),
        Just(format!("{D}.mig")),
        // Errors: a missing attribute, a division by zero, an unparsable quantity.
        Just(format!("{D}.missing == 'x'")),
        Just(format!("{D}.index / ({D}.index - 3) > 0")),
        Just(format!("quantity('1.2.3').isLessThan({C}.memory)")),
        (int_expr(), cmp.clone(), int_expr()).prop_map(|(a, op, b)| format!("{a} {op} {b}")),
        (str_expr(), prop::sample::select(vec!["==", "!="]), str_expr()).prop_map(|(a, op, b)| format!("{a} {op} {b}")),
        (str_expr(), prop::sample::select(vec!["startsWith", "endsWith", "contains"]), str_expr())
            .prop_map(|(a, f, b)| format!("{a}.{f}({b})")),
        (quantity_expr(), prop::sample::select(vec!["isLessThan", "isGreaterThan"]), quantity_expr())
            .prop_map(|(a, f, b)| format!("{a}.{f}({b})")),
        (quantity_expr(), quantity_expr(), cmp.clone(), -1i64..=1)
            .prop_map(|(a, b, op, k)| format!("{a}.compareTo({b}) {op} {k}")),
        (semver_expr(), prop::sample::select(vec!["isLessThan", "isGreaterThan"]), semver_expr())
            .prop_map(|(a, f, b)| format!("{a}.{f}({b})")),
        (semver_expr(), semver_expr(), cmp, -1i64..=1).prop_map(|(a, b, op, k)| format!("{a}.compareTo({b}) {op} {k}")),
        (int_expr(), prop::collection::vec(-2i64..6, 0..4)).prop_map(|(a, l)| format!(
            "{a} in [{}]",
            l.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
        )),
        prop::sample::select(vec!["productName", "missing", "index"]).prop_map(|k| format!("has({D}.{k})")),
        prop::sample::select(vec!["productName", "missing", "memory"]).prop_map(|k| format!("'{k}' in {D}")),
        prop::sample::select(vec!["gpu.nvidia.com", "other.example.com"])
            .prop_map(|k| format!("'{k}' in device.attributes")),
    ];
    leaf.prop_recursive(3, 16, 3, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a} && {b})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a} || {b})")),
            inner.clone().prop_map(|a| format!("!({a})")),
            (inner.clone(), inner.clone(), inner).prop_map(|(c, a, b)| format!("({c} ? {a} : {b})")),
        ]
    })
}

#[test]
fn agrees_with_the_cel_crate_on_a_generated_corpus() {
    let device = ours();
    let ctx = theirs();
    let mut runner = TestRunner::new(Config { cases: 3000, ..Config::default() });
    let checked = std::cell::Cell::new(0usize);
    let outcomes = std::cell::Cell::new([0usize; 3]);
    runner
        .run(&bool_expr(), |src| {
            // Arithmetic on two `dyn` attributes may be a string concatenation for
            // cel-go's estimator, which then prices what follows beyond the budget; the
            // meaning is compared all the same.
            let sel = match Selector::compile(&src) {
                Err(SelectorError::CostLimitExceeded { .. }) => {
                    Selector::compile_with(&src, Limits { max_cost: u64::MAX, ..Limits::default() })
                }
                other => other,
            }
            .map_err(|e| TestCaseError::fail(format!("{src}: {e}")))?;
            let mine = sel.matches(&device);
            let program = cel::Program::compile(&src).map_err(|e| TestCaseError::fail(format!("{src}: {e}")))?;
            let other = program.execute(&ctx);
            match (&mine, &other) {
                (Ok(a), Ok(cel::Value::Bool(b))) => prop_assert_eq!(a, b, "{}", src),
                (Err(_), Err(_)) => {}
                _ => prop_assert!(false, "{src}\n  schedkit: {mine:?}\n  cel:      {other:?}"),
            }
            checked.set(checked.get() + 1);
            let mut o = outcomes.get();
            o[match mine {
                Ok(false) => 0,
                Ok(true) => 1,
                Err(_) => 2,
            }] += 1;
            outcomes.set(o);
            Ok(())
        })
        .unwrap();
    assert!(checked.get() >= 3000);
    // The corpus is not vacuous: it has false, true and error outcomes.
    let [no, yes, errors] = outcomes.get();
    assert!(no > 300 && yes > 300 && errors > 30, "false {no}, true {yes}, errors {errors}");
}

/// The extension libraries added for issue #6 (cel-go `ext.Lists` version 3 and
/// `string.format`), on the cases where both implementations have the function: the
/// same answer, or an error from both.
#[test]
fn agrees_with_the_cel_crate_on_list_and_format_extensions() {
    let device = ours();
    let ctx = theirs();
    let cases = [
        "[5, 1, 2, 3].reverse() == [3, 2, 1, 5]",
        "[1, 2, 3, 4].slice(1, 3) == [2, 3]",
        "[1, 2, 3, 4].slice(dyn(0), dyn(10)) == []",
        "[[1, 2], [3, 4]].flatten() == [1, 2, 3, 4]",
        "[4, 3, 2, 1].sort() == [1, 2, 3, 4]",
        "['d', 'a', 'b', 'c'].sort() == ['a', 'b', 'c', 'd']",
        "[-2, 5, -2, 1, 1, 5, -2, 1].distinct() == [-2, 5, 1]",
        "lists.range(4) == [0, 1, 2, 3]",
        "lists.range(0).size() == 0",
        "lists.range(3).reverse() == [2, 1, 0]",
        &format!("[{D}.index, 1, 2].sort()[0] == 1"),
        &format!("[{D}.architecture, 'Ampere'].sort() == ['Ampere', 'Hopper']"),
        "'%s is %d'.format(['x', 7]) == 'x is 7'",
        &format!("'%s/%d'.format([{D}.architecture, {D}.index]) == 'Hopper/3'"),
        "'%x %X %o %b'.format([255, 255, 8, 5]) == 'ff FF 10 101'",
        "'%%%s%%'.format(['a']) == '%a%'",
        "'%d'.format([dyn('a')]) == ''",
        "timestamp('2023-02-03T23:31:20Z') + duration('1h') == timestamp('2023-02-04T00:31:20Z')",
        "timestamp('2023-02-03T23:31:20Z').getDayOfWeek() == 5 && timestamp('2023-02-03T23:31:20Z').getMonth() == 1",
        "duration('1h30m').getMinutes() == 90",
        "timestamp('2023-02-04T00:00:00Z') - timestamp('2023-02-03T00:00:00Z') == duration('24h')",
    ];
    for src in cases {
        let mine = Selector::compile(src).unwrap_or_else(|e| panic!("{src}: {e}")).matches(&device);
        let other = cel::Program::compile(src)
            .map_err(|e| e.to_string())
            .and_then(|p| p.execute(&ctx).map_err(|e| e.to_string()));
        match (&mine, &other) {
            (Ok(a), Ok(cel::Value::Bool(b))) => assert_eq!(a, b, "{src}"),
            (Err(_), Err(_)) => {}
            _ => panic!("{src}\n  schedkit: {mine:?}\n  cel:      {other:?}"),
        }
    }
}
