//! Fuzzes the `nvidia-smi topo -m` parser: any input parses or fails with a
//! positioned error, never panics; a parsed matrix can be searched and renders
//! to text that parses back to the same classes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use schedkit::topology::{ParseOptions, SearchOptions, best_subset, parse_topo};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let opts = ParseOptions::default();
    match parse_topo(text, &opts) {
        Err(e) => assert!(e.line >= 1 && e.column >= 1),
        Ok(parsed) => {
            let m = &parsed.matrix;
            for k in 1..=m.len().min(4) {
                let placed = best_subset(m, m.all(), k, &SearchOptions::default())
                    .expect("k <= GPUs always fits without NIC alignment");
                assert_eq!(placed.gpus.len(), k);
            }
            let again = parse_topo(&m.to_topo_string(), &opts).expect("rendered text parses");
            for a in 0..m.len() {
                for b in 0..m.len() {
                    assert_eq!(again.matrix.class(a, b).expect("in range"), m.class(a, b).expect("in range"));
                }
            }
        }
    }
});
