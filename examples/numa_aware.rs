//! NUMA-aware GPU placement on DGX H100 nodes: NodeResourceTopologyMatch (with zones
//! derived from the machine graph) plus GpuTopology put each 4-GPU training pod on
//! one NUMA node with its NICs; the default profile only counts GPUs per node and
//! may split a pod across sockets, which a kubelet with the `single-numa-node`
//! Topology Manager policy would then reject at admission.
//!
//! `cargo run --example numa_aware`

use std::sync::Arc;

use schedkit::framework::{Handle, PluginArgs, PluginRef, Profile};
use schedkit::model::{Pod, Quantity, ResourceList};
use schedkit::plugins::gpu_topology::{GpuTopology, GpuTopologyRegistry};
use schedkit::plugins::node_resource_topology::derive::{DeriveOptions, nrt_from_graph};
use schedkit::plugins::node_resource_topology::{NodeResourceTopology, NrtStore};
use schedkit::plugins::{default_profile_config, default_registry};
use schedkit::scheduler::Scheduler;
use schedkit::snapshot::PodInfo;
use schedkit::testing::{NodeBuilder, PodBuilder};
use schedkit::topology::{GpuMatrix, GpuSet, machines};

const NODES: [&str; 3] = ["dgx-0", "dgx-1", "dgx-2"];

/// A Guaranteed pod: cpu, memory, GPUs and (for training pods) one RDMA NIC per GPU.
fn pod(name: &str, cpu: u32, gpus: u32, nics: u32, node: Option<&str>) -> Pod {
    let (cpu, mem, gpus, nics) = (cpu.to_string(), format!("{}Gi", cpu * 8), gpus.to_string(), nics.to_string());
    let rl = ResourceList::parse([
        ("cpu", cpu.as_str()),
        ("memory", mem.as_str()),
        ("nvidia.com/gpu", gpus.as_str()),
        ("rdma/hca", nics.as_str()),
    ])
    .expect("valid quantities");
    let mut b = PodBuilder::new(name).uid(name).with(move |p| {
        p.spec.containers[0].resources.requests = rl.clone();
        p.spec.containers[0].resources.limits = rl;
    });
    if let Some(n) = node {
        b = b.node_name(n);
    }
    b.build()
}

/// What runs already: dgx-0 has one 2-GPU job on each socket (4 GPUs free, split
/// 2 + 2); dgx-1 has a 4-GPU job on socket 0 and a busy CPU; dgx-2 is full.
fn existing() -> Vec<(Pod, GpuSet)> {
    vec![
        (pod("infer-a", 8, 2, 0, Some("dgx-0")), GpuSet::from_indices([0, 1])),
        (pod("infer-b", 8, 2, 0, Some("dgx-0")), GpuSet::from_indices([4, 5])),
        (pod("train-old", 96, 4, 4, Some("dgx-1")), GpuSet::from_indices([0, 1, 2, 3])),
        (pod("train-big", 200, 8, 8, Some("dgx-2")), GpuSet::from_indices(0..8)),
    ]
}

/// The exporter's job (resource-topology-exporter upstream): take a placed pod's
/// resources from the NUMA zones of its GPUs, split by how many GPUs sit in each.
fn account(
    store: &NrtStore,
    m: &GpuMatrix,
    node: &str,
    p: &Pod,
    gpus: GpuSet,
) -> Result<(), Box<dyn std::error::Error>> {
    let total = i64::from(gpus.0.count_ones());
    if total == 0 {
        return Ok(());
    }
    let mut nrt: NodeResourceTopology = (*store.get(node).ok_or("no object")?).clone();
    for zone in &mut nrt.zones {
        let here = i64::try_from(
            gpus.iter().filter(|&g| m.gpu(g).is_some_and(|f| format!("node-{}", f.gpu.numa_node) == zone.name)).count(),
        )?;
        if here == 0 {
            continue;
        }
        for (name, q) in p.spec.containers[0].resources.requests.iter() {
            if let Some(r) = zone.resources.iter_mut().find(|r| r.name == name.as_str()) {
                let share = Quantity::from_int(q.value() * here / total).with_format(r.available.format());
                r.available = r.available.checked_sub(&share).unwrap_or(r.available);
            }
        }
    }
    store.upsert(nrt)?;
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let matrix = Arc::new(machines::dgx_h100().matrix()?);
    let opts = DeriveOptions::default();
    let new_pods = || (0..2).map(|i| pod(&format!("train-{i}"), 32, 4, 4, None));

    // NUMA-aware profile: the default one plus NodeResourceTopologyMatch and GpuTopology.
    let handle = Handle::default();
    let store = Arc::new(NrtStore::new());
    handle.set_shared(store.clone());
    let gpus = Arc::new(GpuTopologyRegistry::default());
    let mut registry = default_registry();
    GpuTopology::register_factory(&mut registry, gpus.clone())?;
    let mut cfg = default_profile_config();
    for (name, weight) in [("NodeResourceTopologyMatch", 5), ("GpuTopology", 5)] {
        cfg.plugins.multi_point.enabled.push(PluginRef { name: name.into(), weight: Some(weight) });
    }
    cfg.plugin_config.push(PluginArgs {
        name: "GpuTopology".into(),
        args: serde_json::json!({"nicAligned": true, "numaAligned": true}),
    });
    let numa_profile = registry.build_profile(&cfg, &handle)?;
    let mut numa = Scheduler::builder().handle(handle.clone()).profile(numa_profile).seed(1).build();
    let mut default = Scheduler::builder().profile(Profile::kube_default(&Handle::default())).seed(1).build();

    for n in NODES {
        let node = || {
            NodeBuilder::new(n).allocatables(&[
                ("cpu", "224"),
                ("memory", "2Ti"),
                ("nvidia.com/gpu", "8"),
                ("rdma/hca", "12"),
            ])
        };
        numa.add_node(node().try_build()?)?;
        default.add_node(node().try_build()?)?;
        store.upsert(nrt_from_graph(n, &machines::dgx_h100(), &opts))?;
        gpus.set_node(n, matrix.clone());
    }
    for (p, set) in existing() {
        let node = p.spec.node_name.clone();
        account(&store, &matrix, &node, &p, set)?;
        gpus.mark_busy(&node, set, &p.metadata.uid);
        let info = Arc::new(PodInfo::new(p)?);
        numa.cache().lock().add_pod(info.clone())?;
        default.cache().lock().add_pod(info)?;
    }

    println!("{:<8} {:<26} NRT + GpuTopology", "pod", "default profile");
    for (a, b) in new_pods().zip(new_pods()) {
        let name = a.metadata.name.clone();
        let d = match default.schedule_pod(a) {
            Ok(binding) => {
                let n = binding.node().to_owned();
                binding.run()?;
                n
            }
            Err(_) => "unschedulable".to_owned(),
        };
        let r = match numa.schedule_pod(b.clone()) {
            Ok(binding) => {
                let n = binding.node().to_owned();
                binding.run()?;
                let (_, set) = gpus.assignment(&name).ok_or("GpuTopology reserved no GPUs")?;
                account(&store, &matrix, &n, &b, set)?;
                let numa_nodes: std::collections::BTreeSet<u32> =
                    set.iter().filter_map(|g| matrix.gpu(g).map(|f| f.gpu.numa_node)).collect();
                let nics: Vec<String> = set
                    .iter()
                    .filter_map(|g| matrix.nearest_nic(g))
                    .map(|(i, _)| matrix.nics()[i].name.clone())
                    .collect();
                format!("{n} GPUs {:?} NUMA {numa_nodes:?} NICs {}", set.iter().collect::<Vec<_>>(), nics.join(","))
            }
            Err(_) => "unschedulable (no node has 4 GPUs on one NUMA node)".to_owned(),
        };
        println!("{name:<8} {d:<26} {r}");
    }
    println!(
        "(the default profile counts 4 free GPUs on dgx-0, split over two sockets: a\n single-numa-node kubelet rejects that pod; the NRT profile never places it there)"
    );
    Ok(())
}
