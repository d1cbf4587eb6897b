//! Replays the fuzz target's seed corpus (`fuzz/corpus-seed/selector/`) on stable Rust,
//! plus every prefix and every one-byte deletion of each seed, so that CI catches
//! panics the fuzzer would find near the seeds.

#[path = "support/selector_fuzz.rs"]
mod exercise;

use std::path::Path;

#[test]
fn seed_corpus_and_its_mutations_never_panic() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus-seed/selector");
    let devices = exercise::devices();
    let mut seeds = 0;
    let mut inputs = 0;
    let mut entries: Vec<_> = std::fs::read_dir(&dir).expect("seed corpus exists").flatten().collect();
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

#[test]
fn random_mutations_of_the_seeds_never_panic() {
    // A fixed-seed slice of what the fuzzer does: splice, insert, delete and replace
    // bytes of the seeds. (Run for minutes in release while developing: no findings
    // after the out-of-range double literal fix.)
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus-seed/selector");
    let mut paths: Vec<_> = std::fs::read_dir(&dir).expect("seed corpus exists").flatten().map(|e| e.path()).collect();
    paths.sort();
    let seeds: Vec<Vec<u8>> = paths.iter().map(|p| std::fs::read(p).expect("readable seed")).collect();
    let devices = exercise::devices();
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let pick = |r: u64, n: usize| (r % n as u64) as usize;
    let alphabet = b"()[]{}.,:?!&|=<>+-*/%\"'\\ 0123456789abcdefxyzu_eE\n";
    for _ in 0..20_000 {
        let mut s = seeds[pick(next(), seeds.len())].clone();
        for _ in 0..=next() % 5 {
            let pos = if s.is_empty() { 0 } else { pick(next(), s.len()) };
            let byte = alphabet[pick(next(), alphabet.len())];
            match next() % 4 {
                0 if !s.is_empty() => {
                    s.remove(pos);
                }
                1 => s.insert(pos, byte),
                2 if !s.is_empty() => s[pos] = byte,
                _ => {
                    let other = &seeds[pick(next(), seeds.len())];
                    let cut = pick(next(), other.len() + 1);
                    s.splice(pos..pos, other[cut..].iter().copied().take(40));
                }
            }
        }
        exercise::exercise(&s, &devices);
    }
}
