#![no_main]
//! Arbitrary bytes as a TZif file and as a zoneinfo zip: errors, never panics.
//! Seeds: `fuzz/corpus-seed/tzif/`, replayed on stable by `tests/fuzz_corpus.rs`.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    schedkit::testing::fuzz::tzif(data);
});
