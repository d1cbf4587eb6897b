//! A custom Filter + Score plugin scheduling 1,000 pods on 100 nodes.
//!
//! `cargo run --release --example quickstart`

use std::collections::BTreeMap;
use std::sync::Arc;

use schedkit::prelude::*;
use schedkit::testing::{NodeBuilder, PodBuilder};

/// Filter: the node has enough free CPU and memory. Score: prefer the node whose
/// free CPU best matches the request (bin packing), on upstream's 0..=100 scale.
struct FitAndPack;

impl Plugin for FitAndPack {
    fn name(&self) -> &str {
        "FitAndPack"
    }
    fn register(self: Arc<Self>, points: &mut ExtensionPoints) {
        points.filter(self.clone()).score(self);
    }
}

impl FilterPlugin for FitAndPack {
    fn filter(&self, _: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        let (alloc, used) = (node.allocatable(), node.requested());
        if alloc.milli_cpu - used.milli_cpu < pod.requests.milli_cpu {
            return Status::unschedulable("Insufficient cpu");
        }
        if alloc.memory - used.memory < pod.requests.memory {
            return Status::unschedulable("Insufficient memory");
        }
        Status::SUCCESS
    }
}

impl ScorePlugin for FitAndPack {
    fn score(&self, _: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        let alloc = node.allocatable().milli_cpu.max(1);
        let used_after = node.requested().milli_cpu + pod.requests.milli_cpu;
        Ok(used_after * 100 / alloc)
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let profile = Profile::builder("default-scheduler").plugin(FitAndPack).build()?;
    let mut scheduler = Scheduler::builder().profile(profile).seed(7).build();
    for i in 0..100 {
        let cpu = if i % 4 == 0 { "64" } else { "16" };
        scheduler.add_node(NodeBuilder::new(&format!("node-{i:03}")).cpu(cpu).memory("128Gi").try_build()?)?;
    }

    let mut placed: BTreeMap<String, usize> = BTreeMap::new();
    let mut failed = Vec::new();
    let start = std::time::Instant::now();
    for i in 0..1000 {
        let cpu = ["250m", "500m", "1", "2"][i % 4];
        let pod = PodBuilder::new(&format!("pod-{i:04}")).cpu(cpu).memory("1Gi").try_build()?;
        match scheduler.schedule_pod(pod) {
            Ok(binding) => {
                let node = binding.node().to_owned();
                binding.run()?;
                *placed.entry(node).or_default() += 1;
            }
            Err(e) => failed.push(e.to_string()),
        }
    }
    let elapsed = start.elapsed();

    println!("scheduled {} pods, {} unschedulable, in {elapsed:.2?}", 1000 - failed.len(), failed.len());
    for (node, n) in &placed {
        let info = scheduler.cache().lock().node_info(node).map(|n| n.requested().milli_cpu).unwrap_or_default();
        println!("{node}: {n:3} pods, {info:6}m CPU requested");
    }
    if let Some(first) = failed.first() {
        println!("first failure: {first}");
    }
    Ok(())
}
