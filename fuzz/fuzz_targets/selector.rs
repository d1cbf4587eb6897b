//! Fuzz target for the DRA device selector language: arbitrary bytes are parsed,
//! printed and re-parsed, compiled and evaluated against a few devices. Nothing may
//! panic or hang. Seeds: `fuzz/corpus-seed/selector/`; the same logic runs on stable in
//! `tests/selector_fuzz_corpus.rs`.
//!
//! Slow-evaluation mode: with `SCHEDKIT_FUZZ_SLOW_MS=10` in the environment, any single
//! evaluation of a selector on one device taking more than 10 ms is a finding
//! (`cargo +nightly fuzz run selector` with the variable set). The stable tests check
//! the same thing by cost and allocated bytes instead of time
//! (`tests/selector_work.rs`).

#![no_main]

use std::sync::LazyLock;
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use schedkit::selector::Device;

#[path = "../../tests/support/selector_fuzz.rs"]
mod exercise;

static DEVICES: LazyLock<Vec<Device>> = LazyLock::new(exercise::devices);
static SLOW: LazyLock<Option<Duration>> = LazyLock::new(|| {
    std::env::var("SCHEDKIT_FUZZ_SLOW_MS").ok().and_then(|v| v.parse().ok()).map(Duration::from_millis)
});

fuzz_target!(|data: &[u8]| {
    match *SLOW {
        Some(limit) => exercise::exercise_timed(data, &DEVICES, limit),
        None => exercise::exercise(data, &DEVICES),
    }
});
