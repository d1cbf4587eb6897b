//! Proof of the issue's allocation budget: evaluating selectors built from comparisons,
//! boolean logic, quantity and semver comparisons, `has()` and `in` on device maps
//! allocates nothing.
//!
//! One test in this binary: the counting allocator (`stats_alloc`) is process-wide.

use std::alloc::System;

use schedkit::model::Quantity;
use schedkit::selector::{AttributeValue, Device, Selector, Semver};
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// The fewest allocations `f` made in three runs. The count is process-wide, and the
/// test harness's main thread allocates once when it first blocks waiting for this
/// test, at a moment that depends on scheduling: that can spoil one run, never three.
fn allocations_during(f: impl Fn()) -> usize {
    (0..3)
        .map(|_| {
            let region = Region::new(GLOBAL);
            f();
            let change = region.change();
            change.allocations + change.reallocations
        })
        .min()
        .unwrap_or(0)
}

#[test]
fn evaluation_allocates_nothing_on_common_paths() {
    let gpu = Device::new("node-1/gpu-0", "gpu.nvidia.com")
        .with_attribute("productName", AttributeValue::String("NVIDIA H100 80GB HBM3".into()))
        .with_attribute("index", AttributeValue::Int(2))
        .with_attribute("mig", AttributeValue::Bool(false))
        .with_attribute("driverVersion", AttributeValue::Version(Semver::parse("550.54.15").unwrap()))
        .with_capacity("memory", Quantity::parse("80Gi").unwrap());
    let exprs = [
        r#"device.attributes["gpu.nvidia.com"].productName == "NVIDIA H100 80GB HBM3" && device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("80Gi")) >= 0"#,
        r#"device.driver == "gpu.nvidia.com" && device.attributes["gpu.nvidia.com"].index < 4"#,
        r#"device.attributes["gpu.nvidia.com"].driverVersion.isGreaterThan(semver("550.0.0"))"#,
        r#"device.attributes["gpu.nvidia.com"].driverVersion.compareTo(semver("v550", true)) >= 0"#,
        r#"device.capacity["gpu.nvidia.com"].memory.isLessThan(quantity("40Gi")) || !device.attributes["gpu.nvidia.com"].mig"#,
        r#"has(device.attributes["gpu.nvidia.com"].index) && "memory" in device.capacity["gpu.nvidia.com"]"#,
        r#""gpu.nvidia.com" in device.attributes && !("x" in device.capacity)"#,
        r#"device.capacity["gpu.nvidia.com"].memory.add(quantity("1Gi")).compareTo(quantity("81Gi")) == 0"#,
        r#"device.attributes["gpu.nvidia.com"].index + 1 > 2 ? device.attributes["gpu.nvidia.com"].index != 7 : false"#,
        r#"device.attributes["gpu.nvidia.com"]["productName"].startsWith("NVIDIA") && device.attributes["gpu.nvidia.com"].productName.contains("H100")"#,
        r#"device.attributes["gpu.nvidia.com"].productName.matches("^NVIDIA H1[0-9]0")"#,
        r#"cel.bind(gpu, device.attributes["gpu.nvidia.com"], gpu.index >= 0 && gpu.mig == false)"#,
        r#"device.attributes["gpu.nvidia.com"].missing == 1 || true"#,
        r#"device.capacity["gpu.nvidia.com"].memory.asInteger() > 1000 && device.capacity["gpu.nvidia.com"].memory.isInteger()"#,
        r#"device.attributes["gpu.nvidia.com"].driverVersion.major() == 550"#,
    ];
    for src in exprs {
        let sel = Selector::compile(src).unwrap_or_else(|e| panic!("{src}: {e}"));
        // Warm up once: the regex engine fills its per-thread cache on first use.
        let want = sel.matches(&gpu);
        let n = allocations_during(|| {
            for _ in 0..100 {
                assert_eq!(sel.matches(&gpu), want);
            }
        });
        assert_eq!(n, 0, "{src} allocated {n} times in 100 evaluations");
        assert_eq!(want, Ok(true), "{src}");
    }
    // A timestamp getter with an IANA zone reads the zone once (the process-wide
    // cache), then answers without allocating. Only where the host has zoneinfo.
    let src = "timestamp('2024-03-10T12:00:00Z').getHours('America/New_York') == 8";
    let sel = Selector::compile(src).unwrap();
    match sel.matches(&gpu) {
        Ok(true) => {
            let n = allocations_during(|| {
                for _ in 0..100 {
                    assert_eq!(sel.matches(&gpu), Ok(true));
                }
            });
            assert_eq!(n, 0, "{src} allocated {n} times in 100 evaluations");
        }
        other => eprintln!("note: no zoneinfo on this host ({other:?}); skipping the IANA zone allocation check"),
    }
    // The counter itself works: building a list literal allocates.
    let sel = Selector::compile("[1, 2].size() == 2").unwrap();
    assert!(allocations_during(|| assert_eq!(sel.matches(&gpu), Ok(true))) > 0);
}
