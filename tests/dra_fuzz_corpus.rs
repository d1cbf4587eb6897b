//! Replays the DRA fuzz target's seed corpus (`fuzz/corpus-seed/dra/`) on stable Rust,
//! plus structured mutations of each seed (every field removed, every value replaced by
//! edge values), so CI catches panics and double allocations the fuzzer would find
//! near the seeds. Byte-level mutations of JSON mostly stop at the parser, so these
//! mutations work on the parsed document instead.

#[path = "support/dra_fuzz.rs"]
mod exercise;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

fn seeds() -> Vec<(PathBuf, Value)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus-seed/dra");
    let mut paths: Vec<_> = std::fs::read_dir(&dir).expect("seed corpus exists").flatten().map(|e| e.path()).collect();
    paths.sort();
    paths
        .into_iter()
        .map(|p| {
            let v = serde_json::from_slice(&std::fs::read(&p).expect("readable seed")).expect("seeds are JSON");
            (p, v)
        })
        .collect()
}

#[test]
fn seeds_schedule_pods_without_double_allocation() {
    let seeds = seeds();
    assert!(seeds.len() >= 10, "only {} seeds", seeds.len());
    let mut reserved = 0;
    for (path, v) in &seeds {
        let n = exercise::exercise(v.to_string().as_bytes());
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        // The hand-written seeds are built so that some pods fit and some don't.
        match name.as_str() {
            "constraints" => assert!((3..5).contains(&n), "{name}: {n} pods reserved"),
            // p0 takes two MIG slices of the GPU; the whole GPU (p1) and another pair (p2)
            // then overdraw its counters; p3 shares p0's allocated claim.
            "partitionable" => assert_eq!(n, 2, "{name}: {n} pods reserved"),
            "shared_taints" => assert_eq!(n, 4, "{name}: shared capacity, tolerated taints: {n} pods reserved"),
            "incomplete_pools" => assert_eq!(n, 0, "{name}: incomplete and invalid pools serve nobody"),
            _ => {}
        }
        reserved += n;
    }
    assert!(reserved >= 8, "the seeds reserve only {reserved} pods in all");
}

/// Paths (as JSON pointers) to every value in `v`.
fn pointers(v: &Value, at: &str, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => m.iter().for_each(|(k, c)| {
            let p = format!("{at}/{}", k.replace('~', "~0").replace('/', "~1"));
            out.push(p.clone());
            pointers(c, &p, out);
        }),
        Value::Array(a) => a.iter().enumerate().for_each(|(i, c)| {
            let p = format!("{at}/{i}");
            out.push(p.clone());
            pointers(c, &p, out);
        }),
        _ => {}
    }
}

fn remove(v: &mut Value, pointer: &str) {
    let (parent, last) = pointer.rsplit_once('/').expect("non-root pointer");
    let last = last.replace("~1", "/").replace("~0", "~");
    match v.pointer_mut(parent) {
        Some(Value::Object(m)) => {
            m.remove(&last);
        }
        Some(Value::Array(a)) => {
            if let Ok(i) = last.parse::<usize>()
                && i < a.len()
            {
                a.remove(i);
            }
        }
        _ => {}
    }
}

#[test]
fn every_field_removed_or_replaced_never_panics() {
    let edge = [
        Value::Null,
        json!(0),
        json!(-1),
        json!(i64::MAX),
        json!(1e300),
        json!(""),
        json!("gpu-0"),
        json!("9999999999999999999999999999999Ei"),
        json!("device.attributes['gpu.example.com'].nope"),
        json!([]),
        json!({}),
        json!(true),
    ];
    let mut inputs = 0;
    for (_, seed) in seeds() {
        let mut paths = Vec::new();
        pointers(&seed, "", &mut paths);
        for p in &paths {
            let mut removed = seed.clone();
            remove(&mut removed, p);
            exercise::exercise(removed.to_string().as_bytes());
            inputs += 1;
            // Replacing every value with every edge value is quadratic in the seed; a
            // rotating choice of three per path keeps the test to seconds.
            for k in 0..3 {
                let mut replaced = seed.clone();
                *replaced.pointer_mut(p).expect("pointer from the same document") =
                    edge[(inputs + k * 5) % edge.len()].clone();
                exercise::exercise(replaced.to_string().as_bytes());
                inputs += 1;
            }
        }
    }
    assert!(inputs > 1000, "only {inputs} mutated inputs");
}
