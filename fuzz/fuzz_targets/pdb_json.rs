#![no_main]
//! Arbitrary bytes as PodDisruptionBudgets, installed and counted by DefaultPreemption.
//! Seeds: `fuzz/corpus-seed/pdb_json/`, replayed on stable by `tests/fuzz_corpus.rs`.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    schedkit::testing::fuzz::pdb_json(data);
});
