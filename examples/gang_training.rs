//! Training gangs on GB200 NVL72 racks: upstream's label-only TopologyPlacementGenerator
//! against schedkit's GPU-domain placement plugins (beyond upstream), same cluster,
//! same jobs, same seed.
//!
//! Eight NVL72 racks (18 trays of 4 GPUs, one NVLink domain each, registered from the
//! `topology` graph) in two blocks, partly busy. Six jobs arrive, each a gang of 4-GPU
//! pods that must stay in one block (`topology.kubernetes.io/block`). The label-only
//! generator proposes the blocks; inside one, the per-pod Score spreads the pods over
//! every rack with free trays. The GPU-domain generator proposes the NVLink domains
//! (racks) that can hold the job, smallest first, and its scorer picks the one that
//! strands the fewest GPUs. Printed: the NVLink domains each job spans, and how many
//! next jobs of 16 to 64 GPUs the leftovers can still take in one domain.
//!
//! `cargo run --example gang_training`

use std::collections::BTreeMap;
use std::sync::Arc;

use schedkit::framework::{Feature, FeatureGates, Handle};
use schedkit::model::workload::PodGroup;
use schedkit::plugins::gpu_domain::{self, BLOCK_LABEL, NvLinkDomains, RACK_LABEL};
use schedkit::plugins::{apply_feature_gates, default_profile_config, default_registry};
use schedkit::scheduler::Scheduler;
use schedkit::testing::{NodeBuilder, PodBuilder};
use schedkit::topology::machines;

/// Racks: (block, busy trays of 18).
const RACKS: [(&str, usize); 8] = [
    ("block-1", 6),
    ("block-1", 12),
    ("block-1", 0),
    ("block-1", 2),
    ("block-2", 14),
    ("block-2", 9),
    ("block-2", 0),
    ("block-2", 4),
];
/// Jobs: (name, pods of 4 GPUs).
const JOBS: [(&str, usize); 6] =
    [("pretrain-a", 16), ("finetune-b", 8), ("pretrain-c", 16), ("eval-d", 4), ("finetune-e", 12), ("pretrain-f", 16)];
/// The next job sizes the leftovers are judged against.
const NEXT_JOB_GPUS: [i64; 4] = [16, 32, 48, 64];

fn tray(rack: usize, t: usize) -> String {
    format!("r{rack}-tray{t:02}")
}

fn cluster(gpu_domains: bool) -> Result<Scheduler, Box<dyn std::error::Error>> {
    let handle = Handle::default();
    let gates = FeatureGates::default()
        .with(Feature::GenericWorkload, true)
        .with(Feature::GangScheduling, true)
        .with(Feature::TopologyAwareWorkloadScheduling, true);
    handle.set_feature_gates(gates);
    let nvl72 = machines::gb200_nvl72().matrix()?;
    let domains = Arc::new(NvLinkDomains::default());
    for r in 0..RACKS.len() {
        let trays: Vec<String> = (0..18).map(|t| tray(r, t)).collect();
        domains.add_machine(&format!("nvl72-r{r}"), &nvl72, &trays)?;
    }
    handle.set_shared(domains);
    let mut cfg = default_profile_config();
    apply_feature_gates(&mut cfg.plugins, gates);
    if gpu_domains {
        gpu_domain::enable_in(&mut cfg.plugins);
    }
    let profile = default_registry().build_profile(&cfg, &handle)?;
    let s = Scheduler::builder().handle(handle).profile(profile).build();
    for (r, &(block, busy)) in RACKS.iter().enumerate() {
        for t in 0..18 {
            let name = tray(r, t);
            let node = NodeBuilder::new(&name)
                .cpu("144")
                .memory("960Gi")
                .pods(110)
                .gpus(4)
                .label(RACK_LABEL, &format!("r{r}"))
                .label(BLOCK_LABEL, block);
            s.add_node(node.build())?;
            if t < busy {
                let uid = format!("{name}-running");
                s.add_pod(PodBuilder::new(&uid).uid(&uid).cpu("8").gpus(4).node_name(&name).build())?;
            }
        }
    }
    Ok(s)
}

struct Outcome {
    /// Per job: the NVLink domains (racks) its pods landed in.
    spans: Vec<(String, usize, Vec<String>)>,
    /// Free GPUs per rack at the end.
    free: Vec<i64>,
}

fn run(gpu_domains: bool) -> Result<Outcome, Box<dyn std::error::Error>> {
    let mut s = cluster(gpu_domains)?;
    let mut spans = Vec::new();
    for (job, pods) in JOBS {
        s.events().add_pod_group(PodGroup::gang("default", job, i32::try_from(pods)?).with_topology(BLOCK_LABEL));
        for i in 0..pods {
            let name = format!("{job}-{i}");
            s.add_pod(PodBuilder::new(&name).uid(&name).cpu("16").memory("64Gi").gpus(4).pod_group_name(job).build())?;
        }
        let summary = s.run_until_idle();
        if summary.bound != pods {
            return Err(format!("{job}: {summary:?}").into());
        }
        let cache = s.cache().lock();
        let mut racks: BTreeMap<String, usize> = BTreeMap::new();
        for i in 0..pods {
            let node = cache.pod_node(&format!("{job}-{i}")).ok_or("pod not bound")?;
            let rack = node.split('-').next().unwrap_or(node).to_owned();
            *racks.entry(rack).or_default() += 1;
        }
        let racks = racks.into_iter().map(|(r, n)| format!("{r}×{n}")).collect();
        spans.push((job.to_owned(), pods, racks));
    }
    let cache = s.cache().lock();
    let free = (0..RACKS.len())
        .map(|r| {
            (0..18)
                .filter_map(|t| cache.node_info(&tray(r, t)))
                .map(|n| n.allocatable().scalar_str("nvidia.com/gpu") - n.requested().scalar_str("nvidia.com/gpu"))
                .sum()
        })
        .collect();
    Ok(Outcome { spans, free })
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let t = std::time::Instant::now();
    let label_only = run(false)?;
    let gpu_domain = run(true)?;
    println!(
        "{:<12} {:>9}  {:<44} GPU-domain (GpuDomainPlacement)",
        "job", "GPUs", "label-only (TopologyPlacementGenerator)"
    );
    for (a, b) in label_only.spans.iter().zip(&gpu_domain.spans) {
        let cell = |x: &Vec<String>| format!("{} domain(s): {}", x.len(), x.join(" "));
        println!("{:<12} {:>9}  {:<44} {}", a.0, a.1 * 4, cell(&a.2), cell(&b.2));
    }
    println!();
    for (name, o) in [("label-only", &label_only), ("GPU-domain", &gpu_domain)] {
        let spanned: usize = o.spans.iter().map(|s| s.2.len()).sum();
        let largest = o.free.iter().max().copied().unwrap_or(0);
        println!(
            "{name:<11} NVLink domains spanned: {spanned:>2} for {} jobs; free GPUs per rack {:?}; largest free domain {largest}",
            o.spans.len(),
            o.free,
        );
        // A next job of `size` GPUs needs one domain: how many such jobs still fit, and
        // how many free GPUs no such job can use (the scorer's `free mod demand`).
        for size in NEXT_JOB_GPUS {
            let fit: i64 = o.free.iter().map(|f| f / size).sum();
            let stranded: i64 = o.free.iter().map(|f| f % size).sum();
            println!(
                "{:<11}   next {size:>2}-GPU jobs that fit in one domain: {fit}, GPUs stranded: {stranded:>3}",
                ""
            );
        }
    }
    println!("\n(both runs in {:.2?})", t.elapsed());
    Ok(())
}
