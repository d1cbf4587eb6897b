//! Preemption for one high-priority pod on 5,000 full nodes with 20 lower-priority
//! pods each (issue 5's budget: <= 5 ms on one thread), with the kube-scheduler
//! default Filters plus DefaultPreemption. Two breakdowns show where the time goes:
//! `clone_only` does just the cloning the dry runs do (a CycleState clone and a
//! NodeInfo copy per sampled node), `filter_only` just the dry-run Filter passes.
//!
//! `cargo bench --bench preemption -- --warm-up-time 1 --measurement-time 3`
#![expect(missing_docs, reason = "criterion_group! generates an undocumented pub fn")]

use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use schedkit::framework::preemption::{
    DryRun, PreemptionContext, filter_statuses, find_candidates, potential_nodes, pre_filter_state, preempt,
};
use schedkit::framework::{Evictor, Handle, PluginRef, Profile};
use schedkit::plugins::default_preemption::{DefaultPreemption, DefaultPreemptionArgs, Offset};
use schedkit::plugins::{default_profile_config, default_registry};
use schedkit::snapshot::{Cache, PodInfo, Snapshot};
use schedkit::testing::{NodeBuilder, PodBuilder};

const NODES: usize = 5000;
const PODS_PER_NODE: usize = 20;

struct NoopEvictor;
impl Evictor for NoopEvictor {
    fn evict(&self, _: &PodInfo, _: &str, _: &PodInfo) -> Result<(), String> {
        Ok(())
    }
}

fn cluster() -> Snapshot {
    let mut cache = Cache::new();
    for i in 0..NODES {
        let name = format!("node-{i:05}");
        cache
            .add_node(
                NodeBuilder::new(&name)
                    .cpu("20")
                    .memory("80Gi")
                    .zone(&format!("zone-{}", i % 3))
                    .label("kubernetes.io/hostname", &name)
                    .build(),
            )
            .unwrap();
        for k in 0..PODS_PER_NODE {
            let p = PodBuilder::new(&format!("{name}-p{k}"))
                .node_name(&name)
                .priority((k % 10) as i32)
                .cpu("1")
                .memory("2Gi")
                .label("app", &format!("app-{}", k % 5))
                .with(|p| p.status.start_time = Some(k as f64))
                .build();
            cache.add_pod(Arc::new(PodInfo::new(p).unwrap())).unwrap();
        }
    }
    let mut snap = Snapshot::default();
    cache.update_snapshot(&mut snap);
    snap
}

fn preemption(c: &mut Criterion) {
    let handle = Handle::default();
    handle.preemption().set_evictor(Arc::new(NoopEvictor));
    let mut cfg = default_profile_config();
    cfg.plugins.multi_point.enabled.push(PluginRef { name: "DefaultPreemption".into(), weight: None });
    let profile: Arc<Profile> = Arc::new(default_registry().build_profile(&cfg, &handle).unwrap());
    let plugin =
        DefaultPreemption::new(DefaultPreemptionArgs::default(), handle.clone()).unwrap().with_offset(Offset::Zero);
    let snap = cluster();
    let pod = PodInfo::new(PodBuilder::new("trainer").priority(1000).cpu("2").memory("4Gi").build()).unwrap();
    let (state, _) = pre_filter_state(&profile, &pod, &snap);
    let statuses = filter_statuses(&profile, &state, &pod, &snap);
    assert_eq!(statuses.statuses.len(), NODES, "every node is full");
    let cx = PreemptionContext {
        profile: &profile,
        state: &state,
        pod: &pod,
        snapshot: &snap,
        statuses: &statuses,
        handle: &handle,
        nominated: None,
    };
    let search = find_candidates(&plugin, &cx);
    eprintln!(
        "preemption: {} potential nodes, {} candidates, {} dry-run Filter passes, {} victims on the first",
        search.potential_nodes,
        search.candidates.len(),
        search.filter_runs,
        search.candidates[0].victims.pods.len()
    );

    let mut g = c.benchmark_group("preemption/default_preemption");
    g.sample_size(20);
    g.bench_function("5000_nodes_x_20_pods/preempt", |b| {
        b.iter(|| {
            let (r, s) = preempt(&plugin, black_box(&cx));
            assert!(s.is_success());
            r
        });
    });
    // The cloning alone: what the sampled dry runs copy.
    let potential = potential_nodes(&snap, &statuses);
    let sampled: Vec<usize> = search.candidates.iter().map(|c| c.node_index).collect();
    assert!(sampled.len() <= potential.len());
    g.bench_function("5000_nodes_x_20_pods/clone_only", |b| {
        b.iter(|| {
            for &i in &sampled {
                black_box(DryRun::new(&profile, &state, &pod, &snap.nodes()[i], None));
            }
        });
    });
    // The Filter passes alone: as many as the search ran, on the sampled nodes as-is.
    let passes_per_node = search.filter_runs / sampled.len().max(1);
    g.bench_function("5000_nodes_x_20_pods/filter_only", |b| {
        let mut dry: Vec<DryRun<'_>> =
            sampled.iter().map(|&i| DryRun::new(&profile, &state, &pod, &snap.nodes()[i], None)).collect();
        b.iter(|| {
            for d in &mut dry {
                for _ in 0..passes_per_node {
                    black_box(d.fits());
                }
            }
        });
    });
    // The pod moves alone: every dry run's removes and re-adds (with extensions), no Filter.
    g.bench_function("5000_nodes_x_20_pods/moves_only", |b| {
        b.iter(|| {
            for &i in &sampled {
                let mut d = DryRun::new(&profile, &state, &pod, &snap.nodes()[i], None);
                let pods: Vec<Arc<PodInfo>> = d.node.pods().to_vec();
                for p in &pods {
                    d.remove_pod(p).unwrap();
                }
                for p in &pods {
                    d.add_pod(p).unwrap();
                }
                black_box(&d);
            }
        });
    });
    g.finish();
}

criterion_group!(benches, preemption);
criterion_main!(benches);
