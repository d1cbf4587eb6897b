//! k8s-openapi -> schedkit conversion of a typical pod: a Deployment's pending pod as
//! the API server sends it (managedFields, ownerReferences, probes, env, the projected
//! service-account volume, default tolerations, affinity, spread, a status condition),
//! converted with defaulting and the unread-field report (`from_k8s`, the direct
//! typed path), the strict `TryFrom`, and the reference path through the manifest
//! loader (`from_k8s_via_manifest`); and the way back.
//!
//! `cargo bench --bench k8s_convert --features k8s-openapi -- --warm-up-time 1 --measurement-time 3`
#![expect(missing_docs, reason = "criterion_group! generates an undocumented pub fn")]

use criterion::{Criterion, criterion_group, criterion_main};
use schedkit::k8s::{self, k8s_openapi::api::core::v1 as api};
use schedkit::manifest::LoadOptions;
use schedkit::model::Pod;

fn typical_pod() -> api::Pod {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/k8s/pod-web-pending.yaml");
    serde_norway::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn convert(c: &mut Criterion) {
    let k8s_pod = typical_pod();
    let pod = Pod::try_from(&k8s_pod).unwrap();
    let mut g = c.benchmark_group("k8s_convert");
    g.bench_function("pod_from_k8s_reported", |b| {
        b.iter(|| k8s::from_k8s::<Pod>(std::hint::black_box(&k8s_pod), LoadOptions::default()).unwrap());
    });
    g.bench_function("pod_try_from_strict", |b| b.iter(|| Pod::try_from(std::hint::black_box(&k8s_pod)).unwrap()));
    g.bench_function("pod_via_manifest_reported", |b| {
        b.iter(|| k8s::from_k8s_via_manifest::<Pod>(std::hint::black_box(&k8s_pod), LoadOptions::default()).unwrap());
    });
    g.bench_function("pod_to_k8s", |b| b.iter(|| api::Pod::try_from(std::hint::black_box(&pod)).unwrap()));
    g.finish();
}

criterion_group!(benches, convert);
criterion_main!(benches);
