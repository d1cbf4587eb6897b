//! Benchmarks of the DRA device selector language: compile time, evaluation of the
//! issue's H100 selector, and the `cel` crate (via kube-cel) evaluating the same
//! expression on the same device, for the speed ratio.

use std::collections::HashMap;
use std::hint::black_box;

use criterion::{Criterion, criterion_main};
use kube_cel::KubeCelExt;
use kube_cel::cel;
use schedkit::model::Quantity;
use schedkit::selector::{AttributeValue, Device, Selector};

const H100: &str = r#"device.attributes["gpu.nvidia.com"].productName == "NVIDIA H100 80GB HBM3" && device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("80Gi")) >= 0"#;

const TYPICAL: &str = r#"device.driver == "gpu.nvidia.com" && device.attributes["gpu.nvidia.com"].architecture == "Hopper" && device.attributes["gpu.nvidia.com"].driverVersion.isGreaterThan(semver("550.0.0")) && device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0"#;

/// Three nested `all` macros around one regex `find`: 1,000 evaluations of it.
const NESTED_FIND: &str = "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(x, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(y, \
    [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z, int('1'.find('[0-9]*')) < 100)))";

fn h100() -> Device {
    Device::new("node-1/gpu-0", "gpu.nvidia.com")
        .with_attribute("productName", AttributeValue::String("NVIDIA H100 80GB HBM3".into()))
        .with_attribute("architecture", AttributeValue::String("Hopper".into()))
        .with_attribute("index", AttributeValue::Int(0))
        .with_attribute("uuid", AttributeValue::String("GPU-4f4a7a39-1a2b-4c5d-8e9f-0a1b2c3d4e5f".into()))
        .with_capacity("memory", Quantity::parse("80Gi").expect("valid quantity"))
}

fn bench(c: &mut Criterion) {
    let device = h100();
    let sel = Selector::compile(H100).expect("compiles");
    assert!(sel.matches(&device).expect("evaluates"));

    let typical = Selector::compile(TYPICAL).expect("compiles");
    let device = device.with_attribute(
        "driverVersion",
        AttributeValue::Version(schedkit::selector::Semver::parse("550.54.15").expect("valid")),
    );
    assert!(typical.matches(&device).expect("evaluates"));

    let mut group = c.benchmark_group("selector");
    group.bench_function("eval/h100", |b| {
        b.iter(|| black_box(&sel).matches(black_box(&device)));
    });
    group.bench_function("eval/typical", |b| {
        b.iter(|| black_box(&typical).matches(black_box(&device)));
    });
    // Issue 22's slow case (the selector fuzz seed `seed-033.cel`): three nested `all`
    // over ten elements, so 1,000 calls of `find` with a constant pattern (compiled
    // once, with the selector). Priced within the cost budget; what it costs in time.
    let nested = Selector::compile(NESTED_FIND).expect("within the cost budget");
    assert!(nested.matches(&device).expect("evaluates"));
    group.bench_function("eval/nested_find_1000", |b| {
        b.iter(|| black_box(&nested).matches(black_box(&device)));
    });
    group.bench_function("compile/h100", |b| {
        b.iter(|| Selector::compile(black_box(H100)));
    });
    group.bench_function("compile/typical", |b| {
        b.iter(|| Selector::compile(black_box(TYPICAL)));
    });

    // The `cel` crate: the program is compiled once and the device variable is bound
    // once, so only evaluation is measured, as for schedkit above.
    let program = cel::Program::compile(H100).expect("cel compiles");
    let mut ctx = cel::Context::default().with_all();
    let memory = cel::Program::compile(r#"quantity("80Gi")"#).expect("compiles").execute(&ctx).expect("quantity");
    let attrs: HashMap<String, cel::Value> = HashMap::from([
        ("productName".to_owned(), cel::Value::from("NVIDIA H100 80GB HBM3")),
        ("architecture".to_owned(), cel::Value::from("Hopper")),
        ("index".to_owned(), cel::Value::Int(0)),
        ("uuid".to_owned(), cel::Value::from("GPU-4f4a7a39-1a2b-4c5d-8e9f-0a1b2c3d4e5f")),
    ]);
    let caps: HashMap<String, cel::Value> = HashMap::from([("memory".to_owned(), memory)]);
    let dev: HashMap<String, cel::Value> = HashMap::from([
        ("driver".to_owned(), cel::Value::from("gpu.nvidia.com")),
        ("attributes".to_owned(), HashMap::from([("gpu.nvidia.com".to_owned(), attrs)]).into()),
        ("capacity".to_owned(), HashMap::from([("gpu.nvidia.com".to_owned(), caps)]).into()),
    ]);
    ctx.add_variable_from_value("device", dev);
    assert_eq!(program.execute(&ctx), Ok(cel::Value::Bool(true)));
    group.bench_function("eval/h100_cel_crate", |b| {
        b.iter(|| black_box(&program).execute(black_box(&ctx)));
    });
    group.finish();
}

mod harness {
    criterion::criterion_group!(benches, super::bench);
}

criterion_main!(harness::benches);
