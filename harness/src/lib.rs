//! schedkit's integration tests and benches, built apart from the library.
//!
//! The test and bench files live at the top of the repository (`tests/`, `benches/`);
//! this package compiles them with their dev-dependencies (criterion, proptest, the
//! `cel` differential oracle, YAML), so building the library or running an example
//! compiles none of those. Its manifest lists every file; the test below keeps that
//! list complete, so a new test file can't be silently skipped.

#[cfg(test)]
mod tests {
    use std::path::Path;

    /// The `.rs` files directly inside `dir`, by stem.
    fn stems(dir: &Path) -> Vec<String> {
        let mut out: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .filter_map(|e| {
                let p = e.unwrap().path();
                (p.extension()? == "rs").then(|| p.file_stem().unwrap().to_string_lossy().into_owned())
            })
            .collect();
        out.sort();
        out
    }

    #[test]
    fn every_test_and_bench_file_is_a_target() {
        let here = Path::new(env!("CARGO_MANIFEST_DIR"));
        let manifest = std::fs::read_to_string(here.join("Cargo.toml")).unwrap();
        for (kind, dir) in [("test", "tests"), ("bench", "benches")] {
            for stem in stems(&here.join("..").join(dir)) {
                let entry = format!("name = \"{stem}\"\npath = \"../{dir}/{stem}.rs\"");
                assert!(manifest.contains(&entry), "{dir}/{stem}.rs is not a [[{kind}]] of harness/Cargo.toml");
            }
        }
    }
}
