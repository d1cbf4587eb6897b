//! Replays the fuzz targets' seed corpus (and any crashes checked in beside it), so a
//! regression is caught on stable Rust without cargo-fuzz.

use std::path::Path;

fn replay(target: &str, run: fn(&[u8])) -> usize {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus-seed").join(target);
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        run(&std::fs::read(&path).unwrap());
        n += 1;
    }
    n
}

#[test]
fn quantity_corpus() {
    assert!(replay("quantity", schedkit::testing::fuzz::quantity) >= 5);
}

#[test]
fn pod_json_corpus() {
    assert!(replay("pod_json", schedkit::testing::fuzz::pod_json) >= 4);
}

#[test]
fn truncations_of_the_corpus_never_panic() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus-seed/pod_json");
    for entry in std::fs::read_dir(dir).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        for cut in (0..bytes.len()).step_by(7) {
            schedkit::testing::fuzz::pod_json(&bytes[..cut]);
        }
    }
}
