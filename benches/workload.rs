//! The v1.36 pod-group cycle (gates `GenericWorkload` and `GangScheduling` on, the
//! default profile, one thread), in the four shapes after upstream
//! scheduler_perf's gang workloads:
//!
//! - `workload/gang3_basic`: per gang of 3 basic pods (1 cpu each, a gang of
//!   `minCount` 3) on 5,000 nodes, the queue pop, the group cycle and the three
//!   bindings; beside it the same 3 pods without a group (gates off). The cluster is
//!   refilled (untimed) after 1,000 gangs.
//! - `workload/one_group_5000`: one gang of 5,000 pods on 5,000 nodes, the whole group
//!   cycle and the 5,000 bindings.
//! - `workload/gang64_rack`: a 64-pod gang with a rack constraint
//!   (`TopologyAwareWorkloadScheduling` on) on 5,000 nodes in 50 racks.
//! - `workload/gpu_domain`: GpuDomainPlacement and GpuDomainFragmentation alone on 18
//!   GB200 NVL72 racks (324 trays, 1,296 GPUs, some busy): propose the placements for a
//!   16-pod × 4-GPU gang and score and normalize them.
//!
//! `cargo bench --bench workload -- --warm-up-time 1 --measurement-time 3`
#![expect(missing_docs, reason = "criterion_group! generates an undocumented pub fn")]

use std::time::{Duration, Instant};

use std::sync::Arc;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use schedkit::framework::{
    FeatureGates, Handle, Placement, PlacementGeneratePlugin, PlacementScore, PlacementScorePlugin,
    PodGroupAssignments, PodGroupCycleState, PodGroupInfo, Profile, ProposedAssignment,
};
use schedkit::model::workload::PodGroup;
use schedkit::plugins::gpu_domain::{
    BLOCK_LABEL, GpuDomainArgs, GpuDomainFragmentation, GpuDomainPlacement, NvLinkDomains, RACK_LABEL,
};
use schedkit::scheduler::{Scheduler, SchedulerConfig};
use schedkit::snapshot::{NodeInfo, PodInfo, Snapshot};
use schedkit::testing::{NodeBuilder, PodBuilder};
use schedkit::topology::machines;

const NODES: usize = 5_000;
const GANGS: usize = 1_000;

fn cluster(groups: bool) -> Scheduler {
    let gates = if groups { "GenericWorkload=true,GangScheduling=true" } else { "" };
    cluster_with(gates)
}

/// 5,000 nodes of 4 cpu in three zones and 50 racks of 100, with `gates` on.
fn cluster_with(gates: &str) -> Scheduler {
    let handle = Handle::default();
    let gates: FeatureGates = if gates.is_empty() { FeatureGates::default() } else { gates.parse().unwrap() };
    handle.set_feature_gates(gates);
    let profile = Profile::kube_default(&handle);
    let cfg = SchedulerConfig { parallelism: 1, ..SchedulerConfig::default() };
    let s = Scheduler::builder().handle(handle).profile(profile).config(cfg).build();
    for i in 0..NODES {
        let zone = ["zone-a", "zone-b", "zone-c"][i % 3];
        let node = NodeBuilder::new(&format!("node-{i:05}"))
            .cpu("4")
            .memory("16Gi")
            .pods(110)
            .zone(zone)
            .label(RACK_LABEL, &format!("rack-{:02}", i / 100));
        s.add_node(node.build()).unwrap();
    }
    s
}

/// Adds gang `name` of `pods` 1-cpu pods (untimed), optionally constrained to one rack,
/// then times scheduling it.
fn time_gang(s: &mut Scheduler, name: &str, pods: usize, rack: bool) -> Duration {
    let mut pg = PodGroup::gang("default", name, i32::try_from(pods).unwrap());
    if rack {
        pg = pg.with_topology(RACK_LABEL);
    }
    let ev = s.events();
    ev.add_pod_group(pg);
    for i in 0..pods {
        let pod = PodBuilder::new(&format!("{name}-{i}")).cpu("1").memory("1Gi").pod_group_name(name).build();
        ev.add_pod(pod).unwrap();
    }
    let t = Instant::now();
    let run = s.run_until_idle();
    let d = t.elapsed();
    assert_eq!(run.bound, pods, "{run:?}");
    d
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
        time_gang(&mut self.s, &format!("gang-{g:04}"), 3, false)
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

fn one_group(c: &mut Criterion) {
    let mut g = c.benchmark_group("workload/one_group_5000");
    g.sample_size(10);
    g.throughput(Throughput::Elements(5_000));
    let gates = "GenericWorkload=true,GangScheduling=true";
    let (mut s, mut n) = (cluster_with(gates), 0);
    g.bench_function(BenchmarkId::new("pod_group_cycle", NODES), |b| {
        b.iter_custom(|iters| {
            (0..iters)
                .map(|_| {
                    // Three 5,000-pod groups fill 3 of each node's 4 cpu: refill then.
                    if n == 3 {
                        (s, n) = (cluster_with(gates), 0);
                    }
                    n += 1;
                    time_gang(&mut s, &format!("big-{n}"), 5_000, false)
                })
                .sum()
        });
    });
    g.finish();
}

fn gang64_rack(c: &mut Criterion) {
    let mut g = c.benchmark_group("workload/gang64_rack");
    g.sample_size(10);
    g.throughput(Throughput::Elements(64));
    let gates = "GenericWorkload=true,GangScheduling=true,TopologyAwareWorkloadScheduling=true";
    let (mut s, mut n) = (cluster_with(gates), 0);
    g.bench_function(BenchmarkId::new("pod_group_cycle", NODES), |b| {
        b.iter_custom(|iters| {
            (0..iters)
                .map(|_| {
                    // 50 racks of 400 cpu: refill well before a rack-sized gang stops fitting.
                    if n == 200 {
                        (s, n) = (cluster_with(gates), 0);
                    }
                    n += 1;
                    time_gang(&mut s, &format!("gang-{n}"), 64, true)
                })
                .sum()
        });
    });
    g.finish();
}

/// 18 GB200 NVL72 racks (NVLink domains from the topology graph) in three blocks,
/// rack `r` with `r % 7` trays busy, and a 16-pod × 4-GPU gang.
fn nvl72_cluster() -> (Snapshot, PodGroupInfo, Arc<NvLinkDomains>) {
    let nvl72 = machines::gb200_nvl72().matrix().unwrap();
    let domains = Arc::new(NvLinkDomains::default());
    let mut nodes = Vec::new();
    for r in 0..18 {
        let trays: Vec<String> = (0..18).map(|t| format!("r{r:02}-tray{t:02}")).collect();
        domains.add_machine(&format!("nvl72-{r}"), &nvl72, &trays).unwrap();
        for (t, name) in trays.iter().enumerate() {
            let node = NodeBuilder::new(name)
                .cpu("144")
                .memory("960Gi")
                .pods(110)
                .gpus(4)
                .label(RACK_LABEL, &format!("r{r:02}"))
                .label(BLOCK_LABEL, &format!("block-{}", r / 6));
            let mut info = NodeInfo::new(Arc::new(node.build()));
            if t < r % 7 {
                let busy = PodBuilder::new(&format!("{name}-busy")).cpu("8").gpus(4).node_name(name).build();
                info.add_pod(Arc::new(PodInfo::new(busy).unwrap()));
            }
            nodes.push(info);
        }
    }
    let pods = (0..16)
        .map(|i| {
            let p = PodBuilder::new(&format!("w{i}")).uid(&format!("w{i}")).cpu("16").gpus(4).pod_group_name("job");
            Arc::new(PodInfo::new(p.build()).unwrap())
        })
        .collect();
    let group = PodGroupInfo { pod_group: Arc::new(PodGroup::gang("default", "job", 16)), unscheduled_pods: pods };
    (Snapshot::from_nodes(nodes), group, domains)
}

/// Each placement's pods on its first trays with 4 GPUs free (what the group cycle
/// would find for pods that only need GPUs).
fn assign(snapshot: &Snapshot, group: &PodGroupInfo, placements: &[Placement]) -> Vec<PodGroupAssignments> {
    placements
        .iter()
        .map(|p| {
            let free = p.nodes.iter().filter(|&&i| {
                let n = &snapshot.nodes()[i];
                n.allocatable().scalar_str("nvidia.com/gpu") - n.requested().scalar_str("nvidia.com/gpu") >= 4
            });
            let proposed = group
                .unscheduled_pods
                .iter()
                .zip(free)
                .map(|(pod, &i)| ProposedAssignment {
                    pod: pod.clone(),
                    node: snapshot.nodes()[i].node().name().to_owned(),
                })
                .collect();
            PodGroupAssignments { placement: Arc::new(p.clone()), proposed }
        })
        .collect()
}

fn gpu_domain(c: &mut Criterion) {
    let mut g = c.benchmark_group("workload/gpu_domain");
    let (snapshot, group, domains) = nvl72_cluster();
    let args = GpuDomainArgs::default();
    let generator = GpuDomainPlacement::new(Handle::default(), &args, Some(domains));
    let fragmentation = GpuDomainFragmentation::new(&args);
    let all = Placement::all(&snapshot);
    let placements = generator.generate_placements(&mut PodGroupCycleState::new(), &group, &snapshot, &all).unwrap();
    assert!(placements.len() > 1, "{placements:?}");
    let assignments = assign(&snapshot, &group, &placements);
    g.bench_function(BenchmarkId::new("propose_and_score", "18xNVL72"), |b| {
        b.iter(|| {
            let mut state = PodGroupCycleState::new();
            let p = generator.generate_placements(&mut state, &group, &snapshot, &all).unwrap();
            let mut scores: Vec<PlacementScore> = assignments
                .iter()
                .map(|a| PlacementScore {
                    placement: a.placement.name.clone(),
                    score: fragmentation.score_placement(&state, &group, a).unwrap(),
                })
                .collect();
            assert!(fragmentation.normalize_placement_score(&state, &group, &mut scores).is_success());
            (p.len(), scores)
        });
    });
    g.finish();
}

criterion_group!(benches, gangs, one_group, gang64_rack, gpu_domain);
criterion_main!(benches);
