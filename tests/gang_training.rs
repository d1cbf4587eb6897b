//! End to end through the scheduler loop: three 8-pod × 8-GPU training gangs with a
//! rack constraint on a mixed cluster (DGX H100 nodes, plain 8-GPU nodes some of them
//! half busy, a GB200 NVL72 rack of 4-GPU trays, CPU-only nodes), placed by the
//! GPU-domain placement plugins and checked placement by placement; and the same jobs
//! with upstream's label-only TopologyPlacementGenerator, which keeps each gang in one
//! rack but not in the tightest one.

use std::collections::BTreeSet;
use std::sync::Arc;

use schedkit::framework::{Feature, FeatureGates, Handle, VirtualClock};
use schedkit::model::workload::PodGroup;
use schedkit::plugins::gpu_domain::{self, NvLinkDomains, RACK_LABEL};
use schedkit::plugins::{apply_feature_gates, default_profile_config, default_registry};
use schedkit::scheduler::Scheduler;
use schedkit::testing::{NodeBuilder, PodBuilder};
use schedkit::topology::machines;

const JOBS: [&str; 3] = ["llm-a", "llm-b", "llm-c"];

fn scheduler(gpu_domains: bool) -> Scheduler {
    let clock = VirtualClock::new();
    let handle = Handle::new(Arc::new(clock));
    let gates = FeatureGates::default()
        .with(Feature::GenericWorkload, true)
        .with(Feature::GangScheduling, true)
        .with(Feature::TopologyAwareWorkloadScheduling, true);
    handle.set_feature_gates(gates);
    // The NVLink domains from the topology graphs: each DGX H100 is its own domain,
    // the 18 trays of the GB200 rack one domain.
    let nvlink = Arc::new(NvLinkDomains::default());
    let dgx = machines::dgx_h100().matrix().unwrap();
    for i in 0..8 {
        nvlink.add_machine(&format!("dgx-{i}"), &dgx, &[format!("a-dgx-{i}")]).unwrap();
    }
    let trays: Vec<String> = (0..18).map(|t| format!("c-tray-{t:02}")).collect();
    assert_eq!(nvlink.add_machine("nvl72-c", &machines::gb200_nvl72().matrix().unwrap(), &trays), Ok(18));
    handle.set_shared(nvlink);
    let mut cfg = default_profile_config();
    apply_feature_gates(&mut cfg.plugins, gates);
    if gpu_domains {
        gpu_domain::enable_in(&mut cfg.plugins);
    }
    let profile = default_registry().build_profile(&cfg, &handle).unwrap();
    let s = Scheduler::builder().handle(handle).profile(profile).build();
    let gpu_node = |name: &str, rack: &str, gpus: i64| {
        NodeBuilder::new(name).cpu("128").memory("1Ti").pods(110).gpus(gpus).label(RACK_LABEL, rack).build()
    };
    // rack-a: 8 DGX H100 (64 GPUs, exactly one job).
    for i in 0..8 {
        s.add_node(gpu_node(&format!("a-dgx-{i}"), "rack-a", 8)).unwrap();
    }
    // rack-b: 12 eight-GPU nodes, the last two with 4 GPUs busy (88 free).
    for i in 0..12 {
        s.add_node(gpu_node(&format!("b-node-{i:02}"), "rack-b", 8)).unwrap();
    }
    for i in 10..12 {
        let busy = PodBuilder::new(&format!("busy-{i}"))
            .uid(&format!("busy-{i}"))
            .cpu("4")
            .gpus(4)
            .node_name(&format!("b-node-{i:02}"))
            .build();
        s.add_pod(busy).unwrap();
    }
    // rack-c: a GB200 NVL72, 18 trays of 4 GPUs: 72 GPUs, but no tray takes an 8-GPU pod.
    for t in &trays {
        s.add_node(gpu_node(t, "rack-c", 4)).unwrap();
    }
    // rack-d: CPU only.
    for i in 0..6 {
        s.add_node(
            NodeBuilder::new(&format!("d-cpu-{i}"))
                .cpu("64")
                .memory("256Gi")
                .pods(110)
                .label(RACK_LABEL, "rack-d")
                .build(),
        )
        .unwrap();
    }
    // rack-e: 16 eight-GPU nodes (two jobs' worth).
    for i in 0..16 {
        s.add_node(gpu_node(&format!("e-node-{i:02}"), "rack-e", 8)).unwrap();
    }
    s
}

/// Submits job `name` (8 pods × 8 GPUs, gang of 8, one rack), runs the scheduler, and
/// returns the nodes its pods were bound to.
fn train(s: &mut Scheduler, name: &str) -> Vec<String> {
    s.events().add_pod_group(PodGroup::gang("default", name, 8).with_topology(RACK_LABEL));
    for i in 0..8 {
        let pod = PodBuilder::new(&format!("{name}-{i}"))
            .uid(&format!("{name}-{i}"))
            .cpu("16")
            .memory("128Gi")
            .gpus(8)
            .pod_group_name(name)
            .build();
        s.add_pod(pod).unwrap();
    }
    let run = s.run_until_idle();
    assert_eq!((run.bound, run.failed, run.waiting), (8, 0, 0), "{name}: {run:?}");
    let cache = s.cache().lock();
    (0..8).map(|i| cache.pod_node(&format!("{name}-{i}")).unwrap().to_owned()).collect()
}

fn rack(node: &str) -> &str {
    &node[..1]
}

#[test]
fn gpu_domain_placements_fill_the_tightest_rack_first() {
    let mut s = scheduler(true);
    // Each job needs 64 GPUs in one rack, 8 per node. No single NVLink domain has 64
    // (a DGX has 8; the NVL72 has 72 but in 4-GPU trays), so the rack level decides;
    // every rack that holds a job adds no fragmentation, so the one with the fewest
    // free GPUs goes first.
    let want = [
        ("llm-a", "a", "rack-a has 64 free, rack-b 88, rack-e 128"),
        ("llm-b", "b", "rack-a is full; rack-b (88) before rack-e (128)"),
        ("llm-c", "e", "rack-b has 24 left, no 8-GPU node for the rest"),
    ];
    for (job, want_rack, why) in want {
        let nodes = train(&mut s, job);
        let distinct: BTreeSet<&String> = nodes.iter().collect();
        assert_eq!(distinct.len(), 8, "{job}: one pod per node: {nodes:?}");
        assert!(nodes.iter().all(|n| rack(n) == want_rack), "{job} ({why}): {nodes:?}");
        if job == "llm-b" {
            // The two half-busy nodes can't take an 8-GPU pod.
            assert!(!nodes.iter().any(|n| n == "b-node-10" || n == "b-node-11"), "{nodes:?}");
        }
    }
    // What is left: two whole nodes and two halves in rack-b, eight nodes in rack-e,
    // the NVL72 and the CPU nodes untouched.
    let cache = s.cache().lock();
    let free = |node: &str| {
        let n = cache.node_info(node).unwrap();
        n.allocatable().scalar_str("nvidia.com/gpu") - n.requested().scalar_str("nvidia.com/gpu")
    };
    let rack_free =
        |prefix: &str, names: &[String]| names.iter().filter(|n| n.starts_with(prefix)).map(|n| free(n)).sum::<i64>();
    let all: Vec<String> = (0..8)
        .map(|i| format!("a-dgx-{i}"))
        .chain((0..12).map(|i| format!("b-node-{i:02}")))
        .chain((0..18).map(|t| format!("c-tray-{t:02}")))
        .chain((0..16).map(|i| format!("e-node-{i:02}")))
        .collect();
    assert_eq!(rack_free("a-", &all), 0);
    assert_eq!(rack_free("b-", &all), 2 * 8 + 2 * 4);
    assert_eq!(rack_free("c-", &all), 72);
    assert_eq!(rack_free("e-", &all), 64);
}

#[test]
fn label_only_placements_keep_each_gang_in_one_rack() {
    let mut s = scheduler(false);
    let mut used = BTreeSet::new();
    for job in JOBS {
        let nodes = train(&mut s, job);
        let racks: BTreeSet<&str> = nodes.iter().map(|n| rack(n)).collect();
        assert_eq!(racks.len(), 1, "{job}: {nodes:?}");
        let r = racks.into_iter().next().unwrap();
        assert!(["a", "b", "e"].contains(&r), "{job} in a rack with 8 eight-GPU nodes free: {nodes:?}");
        for n in nodes {
            assert!(used.insert(n.clone()), "{n} given twice");
        }
    }
}
