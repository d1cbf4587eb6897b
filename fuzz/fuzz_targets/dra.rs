//! Fuzz target for DRA objects: arbitrary bytes as JSON Kubernetes objects (slices,
//! classes, claims, templates, taint rules, namespaces, pods) are loaded into a
//! `DraStore` and every pod is filtered, allocated, reserved, bound and released.
//! Nothing may panic, and no device may end up held twice. Seeds:
//! `fuzz/corpus-seed/dra/`; the same logic runs on stable in `tests/dra_fuzz_corpus.rs`.

#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/support/dra_fuzz.rs"]
mod exercise;

fuzz_target!(|data: &[u8]| {
    exercise::exercise(data);
});
