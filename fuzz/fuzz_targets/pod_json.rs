#![no_main]
//! Arbitrary bytes as a pod manifest: load, validate and schedule on a small cluster
//! without panicking.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    schedkit::testing::fuzz::pod_json(data);
});
