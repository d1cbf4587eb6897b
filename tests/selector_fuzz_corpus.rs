//! Replays the fuzz target's seed corpus (`fuzz/corpus-seed/selector/`) on stable Rust,
//! plus every prefix and every one-byte deletion of each seed, so that CI catches
//! panics the fuzzer would find near the seeds.

#[path = "support/selector_fuzz.rs"]
mod exercise;

use std::path::Path;

#[test]
fn seed_corpus_and_its_mutations_never_panic() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus-seed/selector");
    let devices = exercise::devices();
    let mut seeds = 0;
    let mut inputs = 0;
    let mut entries: Vec<_> = std::fs::read_dir(&dir)
        .expect("seed corpus exists")
        .flatten()
        .collect();
    entries.sort_by_key(std::fs::DirEntry::path);
    for entry in entries {
        let data = std::fs::read(entry.path()).expect("readable seed");
        seeds += 1;
        exercise::exercise(&data, &devices);
        for cut in 0..data.len() {
            exercise::exercise(&data[..cut], &devices);
            let mut deleted = data.clone();
            deleted.remove(cut);
            exercise::exercise(&deleted, &devices);
            inputs += 2;
        }
    }
    assert!(seeds >= 50, "only {seeds} seeds in {}", dir.display());
    assert!(inputs > seeds);
}
