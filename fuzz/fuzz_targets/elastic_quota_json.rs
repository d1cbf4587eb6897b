#![no_main]
//! Arbitrary bytes as ElasticQuotas for CapacityScheduling: usage returns to where it was.
//! Seeds: `fuzz/corpus-seed/elastic_quota_json/`, replayed on stable by `tests/fuzz_corpus.rs`.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    schedkit::testing::fuzz::elastic_quota_json(data);
});
