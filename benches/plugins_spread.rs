//! PodTopologySpread and InterPodAffinity: Filter and Score cost per node on the
//! 5,000-node synthetic cluster (one iteration = every node once; criterion's
//! throughput line gives nodes per second), plus the once-per-cycle PreFilter and
//! PreScore.
//!
//! `cargo bench --bench plugins_spread -- --warm-up-time 1 --measurement-time 3`
#![expect(missing_docs, reason = "criterion_group! generates an undocumented pub fn")]

use std::hint::black_box;
use std::sync::Arc;

use criterion::measurement::WallTime;
use criterion::{BatchSize, BenchmarkGroup, Criterion, Throughput, criterion_group, criterion_main};
use schedkit::framework::{CycleState, FilterPlugin, Handle, NodeScore, PreFilterPlugin, PreScorePlugin, ScorePlugin};
use schedkit::model::{
    Affinity, LabelSelector, Labels, PodAffinity, PodAffinityTerm, Symbol, TopologySpreadConstraint,
    UnsatisfiableConstraintAction, WeightedPodAffinityTerm,
};
use schedkit::plugins::inter_pod_affinity::{InterPodAffinity, InterPodAffinityArgs};
use schedkit::plugins::pod_topology_spread::{PodTopologySpread, PodTopologySpreadArgs};
use schedkit::snapshot::{NodeInfo, NodeList, PodInfo, Snapshot};
use schedkit::testing::PodBuilder;
use schedkit::trace::synthetic_nodes;

const NODES: usize = 5000;

fn app(name: &str) -> LabelSelector {
    LabelSelector::from_labels(Labels::from_pairs([("app", name)]))
}

fn anti_term(name: &str, key: &str) -> PodAffinityTerm {
    PodAffinityTerm { label_selector: Some(app(name)), topology_key: Symbol::intern(key), ..Default::default() }
}

/// 5,000 synthetic nodes with three pods each from ten apps; one pod in fifty has a
/// required anti-affinity of its own (against `app=web-9`, per host).
fn cluster() -> Snapshot {
    let mut k = 0;
    Snapshot::from_nodes(synthetic_nodes(NODES).into_iter().map(|n| {
        let name = n.name().to_owned();
        let mut info = NodeInfo::new(Arc::new(n));
        for _ in 0..3 {
            let mut b = PodBuilder::new(&format!("p{k}")).node_name(&name).label("app", &format!("web-{}", k % 10));
            if k % 50 == 0 {
                b = b.with(|p| {
                    p.spec.affinity = Some(Affinity {
                        pod_anti_affinity: Some(PodAffinity {
                            required: vec![anti_term("web-9", "kubernetes.io/hostname")],
                            preferred: vec![],
                        }),
                        ..Default::default()
                    });
                });
            }
            info.add_pod(Arc::new(PodInfo::new(b.build()).unwrap()));
            k += 1;
        }
        info
    }))
}

fn spread(max_skew: i32, key: &str, action: UnsatisfiableConstraintAction) -> TopologySpreadConstraint {
    TopologySpreadConstraint {
        max_skew,
        topology_key: Symbol::intern(key),
        when_unsatisfiable: action,
        label_selector: Some(app("web-1")),
        min_domains: None,
        node_affinity_policy: None,
        node_taints_policy: None,
        match_label_keys: vec![],
    }
}

/// `filter`: the nodes the plugin admits (the allocation-free success path), per
/// node; `filter_all_nodes`: every node, including rejections, whose statuses carry
/// an allocated reason as upstream's do.
fn bench_filter<P: FilterPlugin>(
    g: &mut BenchmarkGroup<'_, WallTime>,
    snap: &Snapshot,
    state: &CycleState,
    pod: &PodInfo,
    pl: &P,
) {
    let passing: Vec<&NodeInfo> =
        snap.nodes().iter().map(|n| &**n).filter(|n| pl.filter(state, pod, n).is_success()).collect();
    println!("{} of {NODES} nodes pass", passing.len());
    g.throughput(Throughput::Elements(passing.len() as u64));
    g.bench_function("filter", |b| {
        b.iter(|| passing.iter().filter(|n| pl.filter(black_box(state), pod, n).is_success()).count());
    });
    g.throughput(Throughput::Elements(NODES as u64));
    g.bench_function("filter_all_nodes", |b| {
        b.iter(|| snap.nodes().iter().filter(|n| pl.filter(black_box(state), pod, n).is_success()).count());
    });
}

fn bench_spread(c: &mut Criterion) {
    let snap = cluster();
    let all: Vec<usize> = (0..snap.len()).collect();
    let pl = PodTopologySpread::new(PodTopologySpreadArgs::default(), &Handle::default()).unwrap();
    // A zone spread (DoNotSchedule) and a hostname spread (ScheduleAnyway).
    let pod = PodInfo::new(
        PodBuilder::new("in")
            .label("app", "web-1")
            .with(|p| {
                p.spec.topology_spread_constraints = vec![
                    spread(1, "topology.kubernetes.io/zone", UnsatisfiableConstraintAction::DoNotSchedule),
                    spread(1, "kubernetes.io/hostname", UnsatisfiableConstraintAction::ScheduleAnyway),
                ];
            })
            .build(),
    )
    .unwrap();
    let mut state = CycleState::new();
    assert!(pl.pre_filter(&mut state, &pod, &snap).1.is_success());
    assert!(pl.pre_score(&mut state, &pod, NodeList::new(&snap, &all)).is_success());

    let mut g = c.benchmark_group("plugins/pod_topology_spread");
    bench_filter(&mut g, &snap, &state, &pod, &pl);
    g.bench_function("score", |b| {
        b.iter(|| snap.nodes().iter().map(|n| pl.score(black_box(&state), &pod, n).unwrap_or(0)).sum::<i64>());
    });
    let mut out: Vec<NodeScore> = snap.nodes().iter().map(|n| NodeScore { name: n.name(), score: 0 }).collect();
    g.bench_function("score_nodes", |b| {
        b.iter(|| pl.score_nodes(black_box(&state), &pod, NodeList::new(&snap, &all), &mut out).is_ok());
    });
    g.throughput(Throughput::Elements(1));
    // Later pods of the workload on an unchanged cluster: the memo's steady state.
    g.bench_function("pre_filter_5000_nodes", |b| {
        b.iter(|| {
            let mut s = CycleState::new();
            pl.pre_filter(&mut s, &pod, black_box(&snap)).1.is_success()
        });
    });
    // The first pod of a workload: nothing memoized, every node's pods counted.
    g.bench_function("pre_filter_5000_nodes_cold", |b| {
        b.iter_batched_ref(
            || PodTopologySpread::new(PodTopologySpreadArgs::default(), &Handle::default()).unwrap(),
            |fresh| fresh.pre_filter(&mut CycleState::new(), &pod, black_box(&snap)).1.is_success(),
            BatchSize::SmallInput,
        );
    });
    g.bench_function("pre_score_5000_nodes", |b| {
        b.iter(|| {
            let mut s = CycleState::new();
            pl.pre_score(&mut s, &pod, NodeList::new(black_box(&snap), &all)).is_success()
        });
    });
    let bare = PodInfo::new(PodBuilder::new("bare").label("app", "web-1").build()).unwrap();
    g.bench_function("pre_filter_skip_no_constraints", |b| {
        b.iter(|| pl.pre_filter(&mut CycleState::new(), &bare, black_box(&snap)).1.is_skip());
    });
    g.finish();
}

fn bench_interpod(c: &mut Criterion) {
    let snap = cluster();
    let all: Vec<usize> = (0..snap.len()).collect();
    let pl = InterPodAffinity::new(InterPodAffinityArgs::default(), &Handle::default()).unwrap();
    // Required anti-affinity per host against web-3, preferred affinity per zone to web-2.
    let pod = PodInfo::new(
        PodBuilder::new("in")
            .label("app", "web-1")
            .with(|p| {
                p.spec.affinity = Some(Affinity {
                    pod_affinity: Some(PodAffinity {
                        required: vec![],
                        preferred: vec![WeightedPodAffinityTerm {
                            weight: 10,
                            pod_affinity_term: anti_term("web-2", "topology.kubernetes.io/zone"),
                        }],
                    }),
                    pod_anti_affinity: Some(PodAffinity {
                        required: vec![anti_term("web-3", "kubernetes.io/hostname")],
                        preferred: vec![],
                    }),
                    ..Default::default()
                });
            })
            .build(),
    )
    .unwrap();
    let mut state = CycleState::new();
    assert!(pl.pre_filter(&mut state, &pod, &snap).1.is_success());
    assert!(pl.pre_score(&mut state, &pod, NodeList::new(&snap, &all)).is_success());

    let mut g = c.benchmark_group("plugins/inter_pod_affinity");
    bench_filter(&mut g, &snap, &state, &pod, &pl);
    g.bench_function("score", |b| {
        b.iter(|| snap.nodes().iter().map(|n| pl.score(black_box(&state), &pod, n).unwrap_or(0)).sum::<i64>());
    });
    let mut out: Vec<NodeScore> = snap.nodes().iter().map(|n| NodeScore { name: n.name(), score: 0 }).collect();
    g.bench_function("score_nodes", |b| {
        b.iter(|| pl.score_nodes(black_box(&state), &pod, NodeList::new(&snap, &all), &mut out).is_ok());
    });
    g.throughput(Throughput::Elements(1));
    g.bench_function("pre_filter_5000_nodes", |b| {
        b.iter(|| {
            let mut s = CycleState::new();
            pl.pre_filter(&mut s, &pod, black_box(&snap)).1.is_success()
        });
    });
    g.bench_function("pre_score_5000_nodes", |b| {
        b.iter(|| {
            let mut s = CycleState::new();
            pl.pre_score(&mut s, &pod, NodeList::new(black_box(&snap), &all)).is_success()
        });
    });
    // The first pod of a workload: nothing memoized, every pod visited.
    let fresh = || InterPodAffinity::new(InterPodAffinityArgs::default(), &Handle::default()).unwrap();
    g.bench_function("pre_filter_5000_nodes_cold", |b| {
        b.iter_batched_ref(
            fresh,
            |pl| pl.pre_filter(&mut CycleState::new(), &pod, black_box(&snap)).1.is_success(),
            BatchSize::SmallInput,
        );
    });
    g.bench_function("pre_score_5000_nodes_cold", |b| {
        b.iter_batched_ref(
            fresh,
            |pl| pl.pre_score(&mut CycleState::new(), &pod, NodeList::new(black_box(&snap), &all)).is_success(),
            BatchSize::SmallInput,
        );
    });
    // A pod with no terms: PreFilter only visits pods with required anti-affinity.
    let bare = PodInfo::new(PodBuilder::new("bare").label("app", "web-1").build()).unwrap();
    g.bench_function("pre_filter_no_terms", |b| {
        b.iter(|| {
            let mut s = CycleState::new();
            pl.pre_filter(&mut s, &bare, black_box(&snap)).1.code()
        });
    });
    g.finish();
}

criterion_group!(benches, bench_spread, bench_interpod);
criterion_main!(benches);
