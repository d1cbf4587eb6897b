//! The selector fuzz target's slow-evaluation mode, on stable and without a clock: the
//! work one evaluation does is bounded by its cost. Every evaluation of every seed of
//! `fuzz/corpus-seed/selector/` (and every prefix of it), and of hostile expressions
//! that build large strings, may allocate at most [`BYTES_PER_COST`] bytes per unit of
//! actual cost plus [`BYTES_SLACK`]. A call whose charge does not follow what it builds
//! (the 16-million-character `replace` of issue 22, charged 820 upstream) breaks it.
//!
//! One test in this binary: the counting allocator (`stats_alloc`) is process-wide.

#[path = "support/selector_fuzz.rs"]
mod exercise;

use std::alloc::System;
use std::path::Path;

use schedkit::selector::{Device, Selector};
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Bytes one unit of cost may allocate: a string costs 0.1 per character, so 10 bytes
/// per unit for ASCII and 40 for four-byte characters, doubled for a growing buffer.
const BYTES_PER_COST: u64 = 128;
/// Fixed allocations of any evaluation (locals, a regex compiled at run time).
const BYTES_SLACK: u64 = 4 << 20;

/// Bytes allocated by one evaluation (the fewest of three runs: the test harness's
/// main thread may allocate once meanwhile) and its actual cost.
fn measure(sel: &Selector, device: &Device) -> (u64, u64) {
    let mut cost = 0;
    let bytes = (0..3)
        .map(|_| {
            let region = Region::new(GLOBAL);
            let (_result, c) = sel.matches_with_cost(device);
            let change = region.change();
            cost = c;
            change.bytes_allocated as u64 + change.bytes_reallocated.max(0) as u64
        })
        .min()
        .unwrap_or(0);
    (bytes, cost)
}

fn check(sel: &Selector, device: &Device) {
    let (bytes, cost) = measure(sel, device);
    assert!(
        bytes <= BYTES_PER_COST * cost + BYTES_SLACK,
        "{} on {}: {bytes} bytes for cost {cost}",
        sel.to_string().chars().take(120).collect::<String>(),
        device.name()
    );
}

#[test]
fn evaluation_work_is_bounded_by_its_cost() {
    let devices = exercise::devices();
    // Hostile strings: each is priced within the budget at compile time.
    let big = "x".repeat(4010);
    let hostile = [
        format!("'{big}'.replace('', '{big}').size() > 0"),
        format!("'{big}'.replace('x', '{big}').size() > 0"),
        format!("'{big}'.replace('x', '{big}', 4000).size() > 0"),
        format!("strings.quote('{big}').size() > 0"),
        format!("'{big}'.split('').size() > 0"),
        format!("('{big}' + '{big}').lowerAscii().size() > 0"),
        format!("'{big}'.replace('', device.driver).size() > 0"),
    ];
    for src in &hostile {
        let sel = Selector::compile(src).unwrap_or_else(|e| panic!("{src}: {e}"));
        for d in &devices {
            check(&sel, d);
        }
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus-seed/selector");
    let mut seeds = 0;
    for entry in std::fs::read_dir(&dir).expect("seed corpus exists").flatten() {
        let data = std::fs::read(entry.path()).expect("readable seed");
        exercise::exercise(&data, &devices);
        for cut in (1..=data.len()).rev() {
            exercise::exercise_with(&data[..cut], &devices, &mut check);
        }
        seeds += 1;
    }
    assert!(seeds >= 50);
}
