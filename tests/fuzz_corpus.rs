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

/// Replays a corpus, then every prefix (in steps) and every single-byte deletion (in
/// steps) of each seed: the fuzzer's first mutations, on stable.
fn replay_with_cuts(target: &str, run: fn(&[u8]), at_least: usize) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus-seed").join(target);
    let mut seeds = 0;
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        run(&bytes);
        let step = (bytes.len() / 40).max(1);
        for cut in (0..bytes.len()).step_by(step) {
            run(&bytes[..cut]);
            let mut deleted = bytes.clone();
            deleted.remove(cut);
            run(&deleted);
        }
        seeds += 1;
    }
    assert!(seeds >= at_least, "{seeds} seeds for {target}");
}

#[test]
fn openb_corpus() {
    replay_with_cuts("openb", schedkit::testing::fuzz::openb, 6);
}

#[test]
fn node_json_corpus() {
    replay_with_cuts("node_json", schedkit::testing::fuzz::node_json, 5);
}

#[test]
fn profile_config_corpus() {
    replay_with_cuts("profile_config", schedkit::testing::fuzz::profile_config, 12);
}

#[test]
fn pdb_json_corpus() {
    replay_with_cuts("pdb_json", schedkit::testing::fuzz::pdb_json, 4);
}

#[test]
fn elastic_quota_json_corpus() {
    replay_with_cuts("elastic_quota_json", schedkit::testing::fuzz::elastic_quota_json, 4);
}

#[test]
fn tzif_corpus() {
    replay_with_cuts("tzif", schedkit::testing::fuzz::tzif, 3);
}
