#![no_main]
//! openb CSV (node table, NUL, pod table) and the replay's tuning step: errors, never panics; tuned arrivals point at loaded pods.
//! Seeds: `fuzz/corpus-seed/openb/`, replayed on stable by `tests/fuzz_corpus.rs`.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    schedkit::testing::fuzz::openb(data);
});
