#![no_main]
//! Quantity parsing must never panic, and what parses must print and parse back.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    schedkit::testing::fuzz::quantity(data);
});
