//! The trace replay's scheduling cycle on the openb cluster (1,213 GPU nodes, bundled
//! in `examples/data/`), per policy, one thread; and the latency recorder's cost on the
//! framework's trivial-plugin cycle (off must match `framework/cycle_trivial_plugins`).
//!
//! `cargo bench --bench trace`
#![expect(missing_docs, reason = "criterion_group! generates an undocumented pub fn")]

use std::sync::Arc;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use schedkit::framework::{FilterFn, LatencyRecorder, Profile, ScoreFn, Status};
use schedkit::plugins::gpu_share::{Policy, TypicalPods};
use schedkit::scheduler::{Scheduler, SchedulerBuilder, TieBreak};
use schedkit::sim::{Replay, prefixed_names, tuned_arrivals};
use schedkit::snapshot::PodInfo;
use schedkit::testing::PodBuilder;
use schedkit::trace::{gpu_capacity_milli, load_nodes, load_pods, synthetic_nodes};

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/data");

/// One cycle (schedule + abort, so the cluster stays as it is) of a rotating mix of
/// trace pods, on the openb cluster filled to about 60% of its GPUs by the policy.
fn replay_cycle(c: &mut Criterion) {
    let nodes = load_nodes(format!("{DATA}/openb_node_list_gpu_node.csv")).unwrap();
    let pods = load_pods(format!("{DATA}/openb_pod_list_default.csv")).unwrap();
    let typical = Arc::new(TypicalPods::from_pods(&pods));
    let capacity = gpu_capacity_milli(&nodes);
    let arrivals = tuned_arrivals(&pods, capacity, 1.3, 42).unwrap();
    let mut g = c.benchmark_group("trace/openb_cycle");
    g.sample_size(20);
    g.throughput(Throughput::Elements(1));
    for policy in [Policy::BestFit, Policy::Fgd, Policy::Random] {
        let names = prefixed_names(&nodes, 42);
        let mut replay = Replay::new(&nodes, Some(&names), typical.clone(), policy, 42).unwrap();
        let mut k = 0;
        while replay.used_milli() < capacity * 6 / 10 {
            let a = &arrivals[k];
            replay.step(&pods[a.pod], &a.name);
            k += 1;
        }
        let probe: Vec<PodInfo> =
            arrivals[k..k + 64].iter().map(|a| PodInfo::new(pods[a.pod].to_pod_named(&a.name)).unwrap()).collect();
        let mut sched = replay.into_scheduler();
        let mut i = 0;
        g.bench_function(BenchmarkId::new(policy.name(), "1213_nodes_60pct"), |b| {
            b.iter(|| {
                i = (i + 1) % probe.len();
                if let Ok(binding) = sched.schedule_one(&probe[i]) {
                    drop(binding.abort("bench"));
                }
            });
        });
    }
    g.finish();
}

fn trivial(nodes: usize, recorder: Option<Arc<LatencyRecorder>>) -> Scheduler {
    let profile = Profile::builder("default-scheduler")
        .plugin(FilterFn::new("TrivialFilter", |_, _, node| {
            if node.allocatable().milli_cpu > 0 { Status::SUCCESS } else { Status::unschedulable("no cpu") }
        }))
        .plugin(ScoreFn::new("TrivialScore", |_, _, node| (node.allocatable().milli_cpu / 1000) % 101))
        .percentage_of_nodes_to_score(100)
        .build()
        .unwrap();
    let mut b: SchedulerBuilder = Scheduler::builder().profile(profile).parallelism(1).tie_break(TieBreak::First);
    if let Some(r) = recorder {
        b = b.latency_recorder(r);
    }
    let s = b.build();
    for n in synthetic_nodes(nodes) {
        s.add_node(n).unwrap();
    }
    s
}

fn recorder_overhead(c: &mut Criterion) {
    let mut g = c.benchmark_group("framework/latency_recorder");
    g.sample_size(30);
    let pod = PodInfo::new(PodBuilder::new("p").cpu("1").build()).unwrap();
    let nodes = 5000;
    g.throughput(Throughput::Elements(nodes as u64));
    for (name, rec) in [
        ("off", None),
        ("sampled_1_in_10", Some(Arc::new(LatencyRecorder::new()))),
        ("every_cycle", Some(Arc::new(LatencyRecorder::every_cycle()))),
    ] {
        let mut s = trivial(nodes, rec);
        g.bench_with_input(BenchmarkId::new(name, nodes), &nodes, |b, _| {
            b.iter(|| drop(s.schedule_one(&pod).unwrap().abort("bench")));
        });
    }
    g.finish();
}

criterion_group!(benches, replay_cycle, recorder_overhead);
criterion_main!(benches);
