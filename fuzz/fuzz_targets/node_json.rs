#![no_main]
//! Arbitrary bytes as a Node manifest: added to a cluster under the default profile, pods scheduled, updated and removed without panicking.
//! Seeds: `fuzz/corpus-seed/node_json/`, replayed on stable by `tests/fuzz_corpus.rs`.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    schedkit::testing::fuzz::node_json(data);
});
