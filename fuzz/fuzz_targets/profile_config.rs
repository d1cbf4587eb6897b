#![no_main]
//! Arbitrary bytes as a scheduler profile or one plugin's pluginConfig args, built with `default_registry().build_profile` and run.
//! Seeds: `fuzz/corpus-seed/profile_config/`, replayed on stable by `tests/fuzz_corpus.rs`.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    schedkit::testing::fuzz::profile_config(data);
});
