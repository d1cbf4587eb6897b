//! The v1.36 pod-group cycle (gates `GenericWorkload` and `GangScheduling` on, the
//! default profile, one thread): per gang of 3 basic pods (1 cpu each, a gang of
//! `minCount` 3) on 5,000 nodes, the queue pop, the group cycle and the three
//! bindings; beside it the same 3 pods without a group (gates off). The cluster is
//! refilled (untimed) after 1,000 gangs, upstream scheduler_perf's gang shape.
//!
//! `cargo bench --bench workload -- --warm-up-time 1 --measurement-time 3`
#![expect(missing_docs, reason = "criterion_group! generates an undocumented pub fn")]

use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use schedkit::framework::{FeatureGates, Handle, Profile};
use schedkit::model::workload::PodGroup;
use schedkit::scheduler::{Scheduler, SchedulerConfig};
use schedkit::testing::{NodeBuilder, PodBuilder};

const NODES: usize = 5_000;
const GANGS: usize = 1_000;

fn cluster(groups: bool) -> Scheduler {
    let handle = Handle::default();
    let gates: FeatureGates =
        if groups { "GenericWorkload=true,GangScheduling=true".parse().unwrap() } else { FeatureGates::default() };
    handle.set_feature_gates(gates);
    let profile = Profile::kube_default(&handle);
    let cfg = SchedulerConfig { parallelism: 1, ..SchedulerConfig::default() };
    let s = Scheduler::builder().handle(handle).profile(profile).config(cfg).build();
    for i in 0..NODES {
        let zone = ["zone-a", "zone-b", "zone-c"][i % 3];
        s.add_node(NodeBuilder::new(&format!("node-{i:05}")).cpu("4").memory("16Gi").pods(110).zone(zone).build())
            .unwrap();
    }
    s
}

struct Gangs {
    groups: bool,
    s: Scheduler,
    next: usize,
}

impl Gangs {
    fn new(groups: bool) -> Gangs {
        Gangs { groups, s: cluster(groups), next: 0 }
    }

    /// Adds one gang's PodGroup and pods (untimed), then times scheduling them.
    fn one(&mut self) -> Duration {
        if self.next == GANGS {
            *self = Gangs::new(self.groups);
        }
        let g = self.next;
        self.next += 1;
        let name = format!("gang-{g:04}");
        let ev = self.s.events();
        ev.add_pod_group(PodGroup::gang("default", &name, 3));
        for i in 0..3 {
            let pod = PodBuilder::new(&format!("{name}-{i}")).cpu("1").memory("1Gi").pod_group_name(&name).build();
            ev.add_pod(pod).unwrap();
        }
        let t = Instant::now();
        let run = self.s.run_until_idle();
        let d = t.elapsed();
        assert_eq!(run.bound, 3, "{run:?}");
        d
    }
}

fn gangs(c: &mut Criterion) {
    let mut g = c.benchmark_group("workload/gang3_basic");
    g.sample_size(10);
    g.throughput(Throughput::Elements(3));
    for groups in [true, false] {
        let mut gangs = Gangs::new(groups);
        let id = if groups { "pod_group_cycle" } else { "pod_by_pod" };
        g.bench_function(BenchmarkId::new(id, NODES), |b| {
            b.iter_custom(|iters| (0..iters).map(|_| gangs.one()).sum());
        });
    }
    g.finish();
}

criterion_group!(benches, gangs);
criterion_main!(benches);
