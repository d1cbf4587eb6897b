//! Fuzz target for the DRA device selector language: arbitrary bytes are parsed,
//! printed and re-parsed, compiled and evaluated against a few devices. Nothing may
//! panic or hang. Seeds: `fuzz/corpus-seed/selector/`; the same logic runs on stable in
//! `tests/selector_fuzz_corpus.rs`.

#![no_main]

use std::sync::LazyLock;

use libfuzzer_sys::fuzz_target;
use schedkit::selector::Device;

#[path = "../../tests/support/selector_fuzz.rs"]
mod exercise;

static DEVICES: LazyLock<Vec<Device>> = LazyLock::new(exercise::devices);

fuzz_target!(|data: &[u8]| {
    exercise::exercise(data, &DEVICES);
});
