//! Per-plugin Filter and Score cost over the 5,000-node synthetic cluster, and the
//! whole default profile per pod.
//!
//! `cargo bench --bench plugins` (ids: `plugins/<plugin>/<point>`, `profile/default/...`)
#![expect(missing_docs, reason = "criterion_group! generates an undocumented pub fn")]

mod support;
use support::{bench_score, cluster, daemonset_pod, typical_pod};

use std::sync::Arc;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use schedkit::framework::{CycleState, FilterPlugin, Handle, PreFilterPlugin};
use schedkit::plugins::image_locality::ImageLocality;
use schedkit::plugins::node_affinity::NodeAffinity;
use schedkit::plugins::node_resources::{BalancedAllocation, BalancedAllocationArgs, Fit, FitArgs};
use schedkit::plugins::taint_toleration::TaintToleration;
use schedkit::scheduler::Scheduler;
use schedkit::snapshot::{PodInfo, Snapshot};
use schedkit::trace::synthetic_nodes;

fn bench_filter<P: FilterPlugin + PreFilterPlugin>(
    c: &mut Criterion,
    name: &str,
    p: &P,
    snap: &Snapshot,
    pod: &PodInfo,
) {
    let mut state = CycleState::new();
    let _ = p.pre_filter(&mut state, pod, snap);
    let mut g = c.benchmark_group(format!("plugins/{name}"));
    g.throughput(Throughput::Elements(snap.len() as u64));
    g.bench_function("filter_5000_nodes", |b| {
        b.iter(|| snap.nodes().iter().filter(|n| p.filter(&state, pod, n).is_success()).count());
    });
    g.finish();
}

fn per_plugin(c: &mut Criterion) {
    let snap = cluster(5000);
    let pod = PodInfo::new(typical_pod("p")).unwrap();
    let fit = Fit::new(&FitArgs::default()).unwrap();
    bench_filter(c, "node_resources_fit", &fit, &snap, &pod);
    bench_score(c, "plugins/node_resources_fit", &fit, &snap, &pod);
    let na = NodeAffinity::default();
    bench_filter(c, "node_affinity", &na, &snap, &pod);
    bench_score(c, "plugins/node_affinity", &na, &snap, &pod);
    let ba = BalancedAllocation::new(&BalancedAllocationArgs::default()).unwrap();
    bench_score(c, "plugins/node_resources_balanced_allocation", &ba, &snap, &pod);
    let tt = TaintToleration;
    {
        let state = CycleState::new();
        let mut g = c.benchmark_group("plugins/taint_toleration");
        g.throughput(Throughput::Elements(snap.len() as u64));
        g.bench_function("filter_5000_nodes", |b| {
            b.iter(|| snap.nodes().iter().filter(|n| tt.filter(&state, &pod, n).is_success()).count());
        });
        g.finish();
    }
    bench_score(c, "plugins/taint_toleration", &tt, &snap, &pod);
    let il = ImageLocality::new(Handle::default());
    bench_score(c, "plugins/image_locality", &il, &snap, &pod);
}

fn default_scheduler(nodes: usize, pct: u32, threads: usize) -> Scheduler {
    support::default_scheduler(Handle::default(), nodes, pct, threads)
}

fn default_profile(c: &mut Criterion) {
    let pod = Arc::new(PodInfo::new(typical_pod("p")).unwrap());
    let mut g = c.benchmark_group("profile/default");
    g.sample_size(20);
    for &(nodes, pct, threads) in
        &[(5000, 0, 1), (1000, 100, 1), (5000, 100, 1), (15000, 100, 1), (5000, 100, 2), (15000, 100, 2)]
    {
        let mut s = default_scheduler(nodes, pct, threads);
        let id = format!("{}pct_{threads}thread", if pct == 0 { "adaptive_".to_string() } else { pct.to_string() });
        g.bench_with_input(BenchmarkId::new(id, nodes), &nodes, |b, _| {
            b.iter(|| drop(s.schedule_one(&pod).unwrap().abort("bench")));
        });
    }
    g.finish();
}

fn daemonset(c: &mut Criterion) {
    let mut g = c.benchmark_group("profile/default/daemonset_pod");
    for nodes in [1000, 5000, 15000] {
        let mut s = default_scheduler(nodes, 100, 1);
        // A node in the middle of the list without taints, which the pod fits.
        let target = synthetic_nodes(nodes)
            .into_iter()
            .skip(nodes / 2)
            .find(|n| n.spec.taints.is_empty())
            .map(|n| n.metadata.name)
            .expect("an untainted node");
        let pod = Arc::new(PodInfo::new(daemonset_pod(&target)).unwrap());
        g.bench_with_input(BenchmarkId::from_parameter(nodes), &nodes, |b, _| {
            b.iter(|| drop(s.schedule_one(&pod).unwrap().abort("bench")));
        });
    }
    g.finish();
}

criterion_group!(benches, per_plugin, default_profile, daemonset);
criterion_main!(benches);
