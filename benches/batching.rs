//! Opportunistic batching (KEP-5598): per-pod cost of a burst of identical
//! one-per-node replicas with batching on and off, on 20,000 and 5,000 nodes with
//! upstream's adaptive sampling, one thread; the cost of a hint hit alone (called
//! directly, and through the queue); and the cost of signing a typical pod. A burst
//! of pods four to a node (which v1.36 batching cannot batch) with rescoring on, off,
//! and batching off.
//!
//! The default profile with cluster-default spreading off (`defaultingType: List`,
//! no constraints) as upstream's docs advise, and `DRAExtendedResource` off (while it
//! is on, v1.36's NodeResourcesFit and BalancedAllocation sign no pod).
//!
//! `cargo bench --bench batching -- --warm-up-time 1 --measurement-time 3`
#![expect(missing_docs, reason = "criterion_group! generates an undocumented pub fn")]

use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use schedkit::framework::{Handle, Profile, ProfileConfig, SignFragments};
use schedkit::model::{Pod, TaintEffect};
use schedkit::plugins::{default_profile_config, default_registry};
use schedkit::scheduler::{AttemptOutcome, Scheduler, SchedulerConfig, TieBreak};
use schedkit::snapshot::PodInfo;
use schedkit::testing::{NodeBuilder, PodBuilder};

fn profile(handle: &Handle, batching: bool, rescoring: bool) -> Profile {
    let mut cfg: ProfileConfig = serde_json::from_value(serde_json::json!({
        "pluginConfig": [{"name": "PodTopologySpread", "args": {"defaultingType": "List", "defaultConstraints": []}}],
    }))
    .unwrap();
    cfg.plugins = default_profile_config().plugins;
    cfg.opportunistic_batching = Some(batching);
    cfg.batch_rescoring = Some(rescoring);
    default_registry().build_profile(&cfg, handle).unwrap()
}

/// A Deployment's replica: requests that fill a 4-cpu node, labels, a toleration,
/// a required and a preferred node affinity term, one image.
fn replica(i: usize, cpu: &str) -> Pod {
    let mut pod: Pod = serde_json::from_str(
        r#"{"spec":{"affinity":{"nodeAffinity":{
            "requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[
              {"key":"node.kubernetes.io/instance-type","operator":"In","values":["medium","large"]}]}]},
            "preferredDuringSchedulingIgnoredDuringExecution":[{"weight":10,"preference":{"matchExpressions":[
              {"key":"topology.kubernetes.io/zone","operator":"In","values":["zone-a"]}]}}]}}}}"#,
    )
    .expect("valid pod");
    let built = PodBuilder::new(&format!("web-{i:06}"))
        .label("app", "web")
        .label("pod-template-hash", "5d8f7c9b6")
        .cpu(cpu)
        .memory("1Gi")
        .image("registry.example.com/web:1.4.2")
        .toleration("dedicated", Some("web"), Some(TaintEffect::NoSchedule))
        .build();
    pod.metadata = built.metadata;
    pod.spec.containers = built.spec.containers;
    pod.spec.tolerations = built.spec.tolerations;
    pod
}

fn cluster(nodes: usize, batching: bool, rescoring: bool) -> Scheduler {
    let handle = Handle::default();
    handle.set_feature_gates("DRAExtendedResource=false".parse().unwrap());
    let cfg = SchedulerConfig { parallelism: 1, tie_break: TieBreak::Random, ..SchedulerConfig::default() };
    let s = Scheduler::builder().profile(profile(&handle, batching, rescoring)).handle(handle).config(cfg).build();
    for i in 0..nodes {
        let zone = ["zone-a", "zone-b", "zone-c"][i % 3];
        let kind = if i % 2 == 0 { "medium" } else { "large" };
        s.add_node(
            NodeBuilder::new(&format!("node-{i:05}"))
                .cpu("4")
                .memory("16Gi")
                .pods(110)
                .zone(zone)
                .label("node.kubernetes.io/instance-type", kind)
                .build(),
        )
        .unwrap();
    }
    s
}

/// A cluster being filled by a burst: schedules the next replica, starting over
/// with an empty cluster (untimed) when it is full.
struct Burst {
    nodes: usize,
    batching: bool,
    rescoring: bool,
    cpu: &'static str,
    s: Scheduler,
    pods: Vec<PodInfo>,
    next: usize,
}

impl Burst {
    fn new(nodes: usize, batching: bool, cpu: &'static str) -> Burst {
        Burst::with_rescoring(nodes, batching, false, cpu)
    }

    fn with_rescoring(nodes: usize, batching: bool, rescoring: bool, cpu: &'static str) -> Burst {
        let per_node = match cpu {
            "3" => 1,
            "1" => 4,
            _ => 2,
        };
        let pods = (0..nodes * per_node).map(|i| PodInfo::new(replica(i, cpu)).unwrap()).collect();
        Burst { nodes, batching, rescoring, cpu, s: cluster(nodes, batching, rescoring), pods, next: 0 }
    }

    /// Schedules and binds one pod; returns its time and whether a hint placed it.
    fn one(&mut self) -> (Duration, bool) {
        let (_, total, hit) = self.timed();
        (total, hit)
    }

    /// [`Burst::one`] with the scheduling cycle's own time (without the binding cycle,
    /// which an embedding runs on another thread) first.
    fn timed(&mut self) -> (Duration, Duration, bool) {
        if self.next == self.pods.len() {
            *self = Burst::with_rescoring(self.nodes, self.batching, self.rescoring, self.cpu);
        }
        let before = self.s.batch_stats("default-scheduler").map_or(0, |b| b.batched_pods);
        let t = Instant::now();
        let b = self.s.schedule_one(&self.pods[self.next]).expect("a node is free");
        let cycle = t.elapsed();
        b.run().expect("binds");
        let d = t.elapsed();
        self.next += 1;
        let hit = self.s.batch_stats("default-scheduler").map_or(0, |b| b.batched_pods) > before;
        (cycle, d, hit)
    }

    /// The way a running scheduler places a pod: every replica is added to the queue
    /// first (signed there, untimed), then one [`Scheduler::schedule_next`] (pop, cycle
    /// and binding) is timed. Returns its time and whether a hint placed it.
    fn queued(&mut self) -> (Duration, bool) {
        if self.next == 0 || self.next == self.pods.len() {
            *self = Burst::with_rescoring(self.nodes, self.batching, self.rescoring, self.cpu);
            for p in &self.pods {
                self.s.add_pod((*p.pod).clone()).expect("a valid replica");
            }
        }
        let before = self.s.batch_stats("default-scheduler").map_or(0, |b| b.batched_pods);
        let t = Instant::now();
        let attempt = self.s.schedule_next().expect("a queued replica");
        let d = t.elapsed();
        assert!(matches!(attempt.outcome, AttemptOutcome::Bound(_)), "the replica binds");
        self.next += 1;
        (d, self.s.batch_stats("default-scheduler").map_or(0, |b| b.batched_pods) > before)
    }
}

fn bursts(c: &mut Criterion) {
    let mut g = c.benchmark_group("batching/burst");
    g.sample_size(10);
    for nodes in [20_000, 5_000] {
        for batching in [false, true] {
            let mut burst = Burst::new(nodes, batching, "3");
            let id = if batching { "on" } else { "off" };
            g.bench_function(BenchmarkId::new(id, nodes), |b| {
                b.iter_custom(|iters| (0..iters).map(|_| burst.one().0).sum());
            });
        }
        // Only the pods a hint placed: the cost of a hint hit.
        let mut burst = Burst::new(nodes, true, "3");
        g.bench_function(BenchmarkId::new("on_hint_hit", nodes), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                let mut hits = 0;
                while hits < iters {
                    let (d, hit) = burst.one();
                    if hit {
                        total += d;
                        hits += 1;
                    }
                }
                total
            });
        });
        // Through the queue, as a running scheduler does: the pod was signed when it
        // was queued; pop, cycle and binding are timed.
        let mut burst = Burst::new(nodes, true, "3");
        g.bench_function(BenchmarkId::new("on_hint_hit_queued", nodes), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                let mut hits = 0;
                while hits < iters {
                    let (d, hit) = burst.queued();
                    if hit {
                        total += d;
                        hits += 1;
                    }
                }
                total
            });
        });
        // The same, the scheduling cycle alone.
        let mut burst = Burst::new(nodes, true, "3");
        g.bench_function(BenchmarkId::new("on_hint_hit_cycle", nodes), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                let mut hits = 0;
                while hits < iters {
                    let (cycle, _, hit) = burst.timed();
                    if hit {
                        total += cycle;
                        hits += 1;
                    }
                }
                total
            });
        });
    }
    g.finish();
}

/// Pods four to a 4-cpu node on 5,000 nodes: batching off, v1.36 batching (flushed
/// as `node_not_full` while the last node still fits) and batching with rescoring.
fn sharing(c: &mut Criterion) {
    let mut g = c.benchmark_group("batching/share");
    g.sample_size(10);
    let nodes = 5_000;
    for (id, batching, rescoring) in [("off", false, false), ("on", true, false), ("rescoring", true, true)] {
        let mut burst = Burst::with_rescoring(nodes, batching, rescoring, "1");
        g.bench_function(BenchmarkId::new(id, nodes), |b| {
            b.iter_custom(|iters| (0..iters).map(|_| burst.one().0).sum());
        });
    }
    g.finish();
}

fn signing(c: &mut Criterion) {
    let handle = Handle::default();
    handle.set_feature_gates("DRAExtendedResource=false".parse().unwrap());
    let p = profile(&handle, true, false);
    let pod = PodInfo::new(replica(0, "3")).unwrap();
    let mut fragments = SignFragments::new();
    assert!(p.sign_pod_with(&pod, &mut fragments).is_some(), "the replica is signable");
    c.bench_function("batching/sign/typical_pod", |b| {
        b.iter(|| std::hint::black_box(p.sign_pod_with(std::hint::black_box(&pod), &mut fragments)));
    });
}

criterion_group!(benches, signing, bursts, sharing);
criterion_main!(benches);
