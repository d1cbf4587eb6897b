//! The plugin kit's latency helper on two built-in plugins, as a plugin author would
//! bench their own: `schedkit::bench::bench_plugin` over 100 and 1,000 nodes.
//!
//! `cargo bench --bench plugin_kit` (ids: `<plugin>/<point>/<nodes>`)
#![expect(missing_docs, reason = "criterion_group! generates an undocumented pub fn")]

use criterion::{Criterion, criterion_group, criterion_main};
use schedkit::bench::{ClusterShape, bench_plugin};
use schedkit::plugins::node_resources::{Fit, FitArgs};
use schedkit::plugins::taint_toleration::TaintToleration;
use schedkit::testing::PodBuilder;

fn kit(c: &mut Criterion) {
    let shapes = [ClusterShape::new(100), ClusterShape::new(1000)];
    let pod = PodBuilder::new("incoming").milli_cpu(1000).memory("2Gi").build();
    let fit = Fit::new(&FitArgs::default()).expect("default args");
    bench_plugin(c, fit, &shapes, &pod).expect("bench set up");
    bench_plugin(c, TaintToleration, &shapes, &pod).expect("bench set up");
}

criterion_group!(benches, kit);
criterion_main!(benches);
