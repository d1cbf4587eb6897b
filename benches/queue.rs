//! The scheduling queue and gang scheduling.
//!
//! - `queue/push_pop`: one pop + one push with PrioritySort while 100,000 pods are
//!   queued (the budget: >= 2 million pods/s).
//! - `queue/fill_drain_100k`: add 100,000 pods, then pop them all.
//! - `gang/*`: a 256-pod gang on a 1,000-node synthetic cluster, from enqueue to
//!   all bound on the virtual clock, next to the same pods without the gang
//!   (queue, no Permit wait) and the bare scheduling + binding cycles (no queue),
//!   so the differences show what queue and Permit bookkeeping cost. Before the
//!   criterion runs, one instrumented gang run prints the time spent inside Filter
//!   and Score plugins.
//!
//! `cargo bench --bench queue -- --warm-up-time 1 --measurement-time 3`
#![expect(missing_docs, reason = "criterion_group! generates an undocumented pub fn")]

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use schedkit::framework::{
    FilterFn, Handle, LatencyRecorder, Plugin, PluginRef, Profile, ScoreFn, Status, VirtualClock,
};
use schedkit::model::Pod;
use schedkit::plugins::coscheduling::{Coscheduling, CoschedulingArgs, PodGroup};
use schedkit::plugins::priority_sort::PrioritySort;
use schedkit::plugins::{default_profile_config, default_registry};
use schedkit::queue::{QueueConfig, SchedulingQueue};
use schedkit::scheduler::{Scheduler, TieBreak};
use schedkit::snapshot::PodInfo;
use schedkit::testing::PodBuilder;
use schedkit::trace::synthetic_nodes;

const QUEUED: usize = 100_000;

fn pods(n: usize) -> Vec<Arc<PodInfo>> {
    (0..n)
        .map(|i| {
            let p = PodBuilder::new(&format!("pod-{i:06}")).priority((i * 7919 % 13) as i32).cpu("1").build();
            Arc::new(PodInfo::new(p).unwrap())
        })
        .collect()
}

fn sort_queue() -> (SchedulingQueue, VirtualClock) {
    let profile = Arc::new(Profile::builder("default-scheduler").plugin(PrioritySort).build().unwrap());
    let clock = VirtualClock::new();
    let q = SchedulingQueue::new(&[profile], Arc::new(clock.clone()), QueueConfig::default()).unwrap();
    (q, clock)
}

fn queue_ops(c: &mut Criterion) {
    let mut g = c.benchmark_group("queue");
    let all = pods(QUEUED + 1);
    let (mut q, clock) = sort_queue();
    for p in &all[..QUEUED] {
        q.add(p.clone()).unwrap();
    }
    let mut spare = all[QUEUED].clone();
    g.throughput(Throughput::Elements(1));
    g.bench_function("push_pop_100k_queued", |b| {
        b.iter(|| {
            clock.advance(Duration::from_nanos(1));
            q.add(spare.clone()).unwrap();
            let top = q.pop().unwrap();
            q.done(&top.pod.uid).unwrap();
            spare = top.pod;
        });
    });
    g.throughput(Throughput::Elements(QUEUED as u64));
    g.sample_size(10);
    g.bench_function("fill_drain_100k", |b| {
        b.iter_batched(
            || sort_queue().0,
            |mut q| {
                for p in &all[..QUEUED] {
                    q.add(p.clone()).unwrap();
                }
                while let Some(p) = q.pop() {
                    q.done(&p.pod.uid).unwrap();
                }
                q
            },
            BatchSize::LargeInput,
        );
    });
    g.finish();
}

const GANG: usize = 256;
const NODES: usize = 1000;

#[derive(Default)]
struct Timers {
    filter_ns: AtomicU64,
    score_ns: AtomicU64,
}

/// Fits CPU, memory and GPUs; scores by free CPU. With `timers`, time each call.
fn fit_profile(b: schedkit::framework::ProfileBuilder, timers: Option<Arc<Timers>>) -> Profile {
    let t1 = timers.clone();
    let t2 = timers;
    b.plugin(FilterFn::new("NodeResourcesFit", move |_, pod, node| {
        let start = t1.as_ref().map(|_| Instant::now());
        let (a, r, q) = (node.allocatable(), node.requested(), &pod.requests);
        let gpu = "nvidia.com/gpu";
        let ok = q.milli_cpu <= a.milli_cpu - r.milli_cpu
            && q.memory <= a.memory - r.memory
            && q.scalar_str(gpu) <= a.scalar_str(gpu) - r.scalar_str(gpu);
        if let (Some(t), Some(s)) = (&t1, start) {
            t.filter_ns.fetch_add(s.elapsed().as_nanos() as u64, Ordering::Relaxed);
        }
        if ok { Status::SUCCESS } else { Status::unschedulable("Insufficient resources") }
    }))
    .plugin(ScoreFn::new("LeastAllocated", move |_, _, node| {
        let start = t2.as_ref().map(|_| Instant::now());
        let a = node.allocatable().milli_cpu.max(1);
        let s = ((a - node.requested().milli_cpu) * 100 / a).clamp(0, 100);
        if let (Some(t), Some(st)) = (&t2, start) {
            t.score_ns.fetch_add(st.elapsed().as_nanos() as u64, Ordering::Relaxed);
        }
        s
    }))
    .build()
    .unwrap()
}

fn gang_pods(group: Option<&str>) -> Vec<Pod> {
    (0..GANG)
        .map(|i| {
            let mut b = PodBuilder::new(&format!("worker-{i:03}")).cpu("4").memory("16Gi").gpus(1);
            if let Some(g) = group {
                b = b.label("scheduling.x-k8s.io/pod-group", g);
            }
            b.build()
        })
        .collect()
}

/// kube-scheduler's default plugins (NodeResourcesFit, TaintToleration, spread,
/// affinity, ...) with Coscheduling instead of PrioritySort, or with PrioritySort.
fn default_scheduler(gang: bool, recorder: Option<Arc<LatencyRecorder>>) -> Scheduler {
    let clock = VirtualClock::new();
    let handle = Handle::new(Arc::new(clock));
    let mut registry = default_registry();
    let mut cfg = default_profile_config();
    if gang {
        let cs = Arc::new(Coscheduling::new(&handle, CoschedulingArgs::default()).unwrap());
        cs.registry().upsert(PodGroup::new("default", "train", GANG as u32)).unwrap();
        registry.register("Coscheduling", move |_, _| Ok(cs.clone() as Arc<dyn Plugin>)).unwrap();
        cfg.plugins.multi_point.enabled.push(PluginRef { name: "Coscheduling".into(), weight: None });
        cfg.plugins.queue_sort.disabled.push(PluginRef { name: "PrioritySort".into(), weight: None });
    }
    let profile = registry.build_profile(&cfg, &handle).unwrap();
    let mut b = Scheduler::builder().profile(profile).handle(handle).parallelism(1).tie_break(TieBreak::First);
    if let Some(r) = recorder {
        b = b.latency_recorder(r);
    }
    let s = b.build();
    for n in synthetic_nodes(NODES) {
        s.add_node(n).unwrap();
    }
    s
}

fn scheduler(gang: bool, timers: Option<Arc<Timers>>) -> Scheduler {
    let clock = VirtualClock::new();
    let handle = Handle::new(Arc::new(clock));
    let mut b = Profile::builder("default-scheduler");
    if gang {
        let cs = Coscheduling::new(&handle, CoschedulingArgs::default()).unwrap();
        cs.registry().upsert(PodGroup::new("default", "train", GANG as u32)).unwrap();
        b = b.plugin(cs);
    } else {
        b = b.plugin(PrioritySort);
    }
    let s = Scheduler::builder()
        .profile(fit_profile(b, timers))
        .handle(handle)
        .parallelism(1)
        .tie_break(TieBreak::First)
        .build();
    for n in synthetic_nodes(NODES) {
        s.add_node(n).unwrap();
    }
    s
}

fn run_gang(s: &mut Scheduler, pods: &[Pod]) -> usize {
    for p in pods {
        s.add_pod(p.clone()).unwrap();
    }
    let run = s.run_until_idle();
    assert_eq!(run.bound, GANG, "{run:?}");
    run.bound
}

/// One instrumented run: wall time and the share spent inside Filter and Score
/// (closure timers on the simple profile), and the latency recorder's per-plugin
/// table for the default plugins with Coscheduling.
fn print_split() {
    let timers = Arc::new(Timers::default());
    let mut s = scheduler(true, Some(timers.clone()));
    let pods = gang_pods(Some("train"));
    let start = Instant::now();
    run_gang(&mut s, &pods);
    let wall = start.elapsed();
    let f = Duration::from_nanos(timers.filter_ns.load(Ordering::Relaxed));
    let sc = Duration::from_nanos(timers.score_ns.load(Ordering::Relaxed));
    eprintln!(
        "gang split, simple profile (timer overhead included): wall {wall:?}, Filter {f:?} ({:.0}%), Score {sc:?} ({:.0}%)",
        f.as_secs_f64() * 100.0 / wall.as_secs_f64(),
        sc.as_secs_f64() * 100.0 / wall.as_secs_f64()
    );
    let recorder = Arc::new(LatencyRecorder::every_cycle());
    let mut s = default_scheduler(true, Some(recorder.clone()));
    let start = Instant::now();
    run_gang(&mut s, &pods);
    let wall = start.elapsed();
    let report = recorder.report();
    let mut by_point: Vec<(&str, Duration)> = Vec::new();
    for e in &report.entries {
        let total = e.mean * u32::try_from(e.count).unwrap_or(u32::MAX);
        match by_point.iter_mut().find(|(p, _)| *p == e.point) {
            Some((_, t)) => *t += total,
            None => by_point.push((e.point, total)),
        }
    }
    eprintln!("gang split, default plugins + Coscheduling: wall {wall:?}; recorded plugin time by point:");
    for (point, t) in &by_point {
        eprintln!("  {point:<15} {t:>12.3?} ({:.0}% of wall)", t.as_secs_f64() * 100.0 / wall.as_secs_f64());
    }
    eprintln!("{report}");
}

fn gang(c: &mut Criterion) {
    print_split();
    let mut g = c.benchmark_group("gang");
    g.sample_size(10);
    g.throughput(Throughput::Elements(GANG as u64));
    let with = gang_pods(Some("train"));
    let without = gang_pods(None);
    g.bench_function("256_pods_1000_nodes/coscheduling", |b| {
        b.iter_batched(|| scheduler(true, None), |mut s| black_box(run_gang(&mut s, &with)), BatchSize::LargeInput);
    });
    g.bench_function("256_pods_1000_nodes/queue_no_gang", |b| {
        b.iter_batched(|| scheduler(false, None), |mut s| black_box(run_gang(&mut s, &without)), BatchSize::LargeInput);
    });
    let infos: Vec<PodInfo> = without.iter().map(|p| PodInfo::new(p.clone()).unwrap()).collect();
    g.bench_function("256_pods_1000_nodes/cycles_only", |b| {
        b.iter_batched(
            || scheduler(false, None),
            |mut s| {
                for p in &infos {
                    black_box(s.schedule_one(p).unwrap().run().unwrap());
                }
            },
            BatchSize::LargeInput,
        );
    });
    g.bench_function("256_pods_1000_nodes/default_plugins_coscheduling", |b| {
        b.iter_batched(
            || default_scheduler(true, None),
            |mut s| black_box(run_gang(&mut s, &with)),
            BatchSize::LargeInput,
        );
    });
    g.bench_function("256_pods_1000_nodes/default_plugins_queue_no_gang", |b| {
        b.iter_batched(
            || default_scheduler(false, None),
            |mut s| black_box(run_gang(&mut s, &without)),
            BatchSize::LargeInput,
        );
    });
    g.bench_function("256_pods_1000_nodes/default_plugins_cycles_only", |b| {
        b.iter_batched(
            || default_scheduler(false, None),
            |mut s| {
                for p in &infos {
                    black_box(s.schedule_one(p).unwrap().run().unwrap());
                }
            },
            BatchSize::LargeInput,
        );
    });
    g.finish();
}

criterion_group!(benches, queue_ops, gang);
criterion_main!(benches);
