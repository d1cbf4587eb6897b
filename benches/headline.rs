//! The headline workloads of issue 23 in one table: schedkit's median per pod on this
//! machine beside the published upstream figure for the same shape, so the ratio is
//! visible on any machine. A few minutes in all, one thread throughout.
//!
//! `cargo bench --bench headline` (an argument filters the rows by substring).
//!
//! Upstream references (pods/s thresholds are minimum throughputs that
//! kube-scheduler's `scheduler_perf` CI job must reach; per pod = 1 / threshold):
//! - kubernetes/kubernetes `test/integration/scheduler_perf/misc/performance-config.yaml`:
//!   `SchedulingBasic/5000Nodes_10000Pods` threshold 680 pods/s (default profile,
//!   5,000 nodes, adaptive sampling); `SchedulingDaemonset/15000Nodes` threshold 1100
//!   pods/s (pods pinned by a `metadata.name` matchFields term among 15,000 nodes).
//! - kubernetes/kubernetes `test/integration/scheduler_perf/dra/performance-config.yaml`:
//!   `SchedulingWithResourceClaimTemplate/5000pods_500nodes_QueueingHintsEnabled`
//!   threshold 56 pods/s (one claim per pod, 500 nodes with DRA devices).
//! - Shapes without a published upstream gate (100% scored, 65,000 nodes, the
//!   snapshot update, the trace replay: the FGD paper's simulator publishes no
//!   throughput) print `-`.
//!
//! Opportunistic batching is off: every row schedules the same pod again, which would
//! otherwise measure the hint path instead of the search the row names.

mod support;

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

use schedkit::dra::{DraStore, ResourceClaim, ResourceSlice};
use schedkit::framework::{Handle, PluginRef, Profile};
use schedkit::model::PodResourceClaim;
use schedkit::plugins::gpu_share::{Policy, TypicalPods};
use schedkit::plugins::{default_profile_config, default_registry};
use schedkit::scheduler::{Scheduler, TieBreak};
use schedkit::sim::{Replay, prefixed_names, tuned_arrivals};
use schedkit::snapshot::{Cache, PodInfo, Snapshot};
use schedkit::testing::{NodeBuilder, PodBuilder};
use schedkit::trace::{gpu_capacity_milli, load_nodes, load_pods, synthetic_nodes};
use support::{daemonset_pod, typical_pod};

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/data");

/// Samples per row; each sample runs the workload for at least [`SAMPLE_TIME`].
const SAMPLES: usize = 15;
const SAMPLE_TIME: Duration = Duration::from_millis(40);

/// The median over [`SAMPLES`] samples of the time per call of `f`.
fn median_per_call(mut f: impl FnMut()) -> Duration {
    // Calibrate: how many calls fill a sample (after one warm-up call).
    f();
    let mut calls = 1u32;
    loop {
        let t = Instant::now();
        for _ in 0..calls {
            f();
        }
        if t.elapsed() >= SAMPLE_TIME || calls >= 1 << 20 {
            break;
        }
        calls *= 2;
    }
    let mut samples: Vec<Duration> = (0..SAMPLES)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..calls {
                f();
            }
            t.elapsed() / calls
        })
        .collect();
    samples.sort_unstable();
    samples[SAMPLES / 2]
}

/// A row: the workload, schedkit's median per pod, the upstream figure per pod.
struct Row {
    workload: &'static str,
    median: Duration,
    upstream: Option<(f64, &'static str)>,
}

fn print_table(rows: &[Row]) {
    println!();
    println!("| workload | schedkit median | schedkit pods/s | upstream reference | ratio |");
    println!("| --- | ---: | ---: | --- | ---: |");
    for r in rows {
        let us = r.median.as_secs_f64() * 1e6;
        let (reference, ratio) = match r.upstream {
            Some((pods_per_s, gate)) => {
                let up_us = 1e6 / pods_per_s;
                (format!("{up_us:.0} µs ({pods_per_s} pods/s, {gate})"), format!("{:.1}×", up_us / us))
            }
            None => ("-".to_owned(), "-".to_owned()),
        };
        println!("| {} | {us:.2} µs | {:.0} | {reference} | {ratio} |", r.workload, 1e6 / us);
    }
}

fn handle() -> Handle {
    let handle = Handle::default();
    handle.set_feature_gates("OpportunisticBatching=false".parse().expect("a known gate"));
    handle
}

fn default_scheduler(nodes: usize, pct: u32) -> Scheduler {
    let handle = handle();
    let s = Scheduler::builder()
        .profile(Profile::kube_default(&handle))
        .handle(handle)
        .percentage_of_nodes_to_score(pct)
        .parallelism(1)
        .tie_break(TieBreak::Random)
        .build();
    for n in synthetic_nodes(nodes) {
        s.add_node(n).expect("node added");
    }
    s
}

/// Items 1, 2 and 4: the typical pod's scheduling cycle (binding aborted).
fn typical(nodes: usize, pct: u32) -> Duration {
    let mut s = default_scheduler(nodes, pct);
    let pod = PodInfo::new(typical_pod("p")).expect("valid pod");
    median_per_call(|| drop(s.schedule_one(&pod).expect("fits").abort("bench")))
}

/// Item 3: the DaemonSet pod from queue pop to bind (`run_until_idle`); adding it to
/// the queue and deleting it again are inside the timing too.
fn daemonset(nodes: usize) -> Duration {
    let mut s = default_scheduler(nodes, 0);
    let target = synthetic_nodes(nodes)
        .into_iter()
        .skip(nodes / 2)
        .find(|n| n.spec.taints.is_empty())
        .map(|n| n.metadata.name)
        .expect("an untainted node");
    let pod = daemonset_pod(&target);
    median_per_call(|| {
        s.add_pod(pod.clone()).expect("pod added");
        assert_eq!(s.run_until_idle().bound, 1);
        s.events().delete_pod("default/ds-pod").expect("pod deleted");
    })
}

/// Item 4: the snapshot update after one node changed (a pod assumed on it, then
/// forgotten: two updates per call).
fn snapshot_update(nodes: usize) -> Duration {
    let mut cache = Cache::new();
    for n in synthetic_nodes(nodes) {
        cache.add_node(n).expect("node added");
    }
    let mut snap = Snapshot::default();
    cache.update_snapshot(&mut snap);
    let pod = Arc::new(PodInfo::new(PodBuilder::new("p").cpu("1").build()).expect("valid pod"));
    median_per_call(|| {
        cache.assume_pod(pod.clone(), "node-00042").expect("assumed");
        cache.update_snapshot(&mut snap);
        cache.forget_pod("default/p").expect("forgotten");
        black_box(cache.update_snapshot(&mut snap));
    })
}

const H100: &str = "NVIDIA H100 80GB HBM3";

fn dra_store(nodes: usize) -> Arc<DraStore> {
    let store = Arc::new(DraStore::new());
    store
        .add_class(
            serde_json::from_value(json!({"metadata": {"name": "gpu.nvidia.com"},
                "spec": {"selectors": [{"cel": {"expression": "device.driver == \"gpu.nvidia.com\""}}]}}))
            .expect("valid class"),
        )
        .expect("class compiles");
    for i in 0..nodes {
        let devices: Vec<_> = (0..8)
            .map(|g| {
                json!({"name": format!("gpu-{g}"), "attributes": {
                    "productName": {"string": H100}, "nvlinkDomain": {"int": 0}, "index": {"int": g}},
                    "capacity": {"memory": {"value": "80Gi"}}})
            })
            .collect();
        let slice: ResourceSlice = serde_json::from_value(json!({"metadata": {"name": format!("node-{i}-gpu")},
            "spec": {"driver": "gpu.nvidia.com", "nodeName": format!("node-{i}"),
                "pool": {"name": format!("node-{i}"), "generation": 1, "resourceSliceCount": 1}, "devices": devices}}))
        .expect("valid slice");
        store.add_slice(slice).expect("slice loads");
    }
    for (name, count) in [("c8", 8), ("c1", 1)] {
        let claim: ResourceClaim = serde_json::from_value(json!({"metadata": {"name": name, "namespace": "default"},
            "spec": {"devices": {"requests": [{"name": "gpus", "exactly": {"deviceClassName": "gpu.nvidia.com",
                "count": count, "selectors": [{"cel": {"expression":
                    format!("device.attributes[\"gpu.nvidia.com\"].productName == \"{H100}\"")}}]}}],
                "constraints": [{"matchAttribute": "gpu.nvidia.com/nvlinkDomain"}]}}}))
        .expect("valid claim");
        store.add_claim(claim).expect("claim loads");
    }
    store
}

/// Item 5: a pod with one GPU claim (`c8`: 8 GPUs, `c1`: 1), default profile +
/// DynamicResources, `nodes` nodes of 8 GPUs each; the binding is aborted.
fn dra(nodes: usize, claims: &[&str]) -> Vec<Duration> {
    let store = dra_store(nodes);
    let handle = handle();
    handle.set_shared(store);
    let mut cfg = default_profile_config();
    cfg.plugins.multi_point.enabled.push(PluginRef { name: "DynamicResources".into(), weight: None });
    let profile = default_registry().build_profile(&cfg, &handle).expect("valid profile");
    let mut s = Scheduler::builder().profile(profile).handle(handle).parallelism(1).build();
    for i in 0..nodes {
        s.add_node(NodeBuilder::new(&format!("node-{i}")).cpu("64").memory("512Gi").pods(110).build())
            .expect("node added");
    }
    claims
        .iter()
        .map(|claim| {
            let pod = PodBuilder::new("p")
                .cpu("1")
                .with(|p| {
                    p.spec.resource_claims.push(PodResourceClaim {
                        name: "gpus".into(),
                        resource_claim_name: Some((*claim).into()),
                        resource_claim_template_name: None,
                        pod_group_resource_claim: None,
                    });
                })
                .build();
            let pod = PodInfo::new(pod).expect("valid pod");
            median_per_call(|| drop(s.schedule_one(&pod).expect("fits").abort("bench")))
        })
        .collect()
}

/// Item 6's shape: one cycle of the trace replay (every node scored, as the FGD paper's
/// simulator does) on the openb cluster filled to 60% of its GPUs, a rotating mix of
/// the trace's pods, the binding aborted.
fn replay(policy: Policy) -> Duration {
    let nodes = load_nodes(format!("{DATA}/openb_node_list_gpu_node.csv")).expect("bundled trace");
    let pods = load_pods(format!("{DATA}/openb_pod_list_default.csv")).expect("bundled trace");
    let typical = Arc::new(TypicalPods::from_pods(&pods));
    let capacity = gpu_capacity_milli(&nodes);
    let arrivals = tuned_arrivals(&pods, capacity, 1.3, 42).expect("tuned");
    let names = prefixed_names(&nodes, 42);
    let mut replay = Replay::new(&nodes, Some(&names), typical, policy, 42).expect("replay");
    let mut k = 0;
    while replay.used_milli() < capacity * 6 / 10 {
        let a = &arrivals[k];
        replay.step(&pods[a.pod], &a.name);
        k += 1;
    }
    let probe: Vec<PodInfo> = arrivals[k..k + 64]
        .iter()
        .map(|a| PodInfo::new(pods[a.pod].to_pod_named(&a.name)).expect("valid pod"))
        .collect();
    let mut s = replay.into_scheduler();
    let mut i = 0;
    median_per_call(|| {
        i = (i + 1) % probe.len();
        if let Ok(binding) = s.schedule_one(&probe[i]) {
            drop(binding.abort("bench"));
        }
    })
}

/// The upstream gates quoted (pods/s, workload); sources in the file's doc.
const BASIC: Option<(f64, &str)> = Some((680.0, "SchedulingBasic/5000Nodes_10000Pods"));
const DAEMONSET: Option<(f64, &str)> = Some((1100.0, "SchedulingDaemonset/15000Nodes"));
const DRA: Option<(f64, &str)> =
    Some((56.0, "SchedulingWithResourceClaimTemplate/5000pods_500nodes_QueueingHintsEnabled"));

fn main() {
    // `cargo bench` passes `--bench`; any other argument filters the rows.
    let filter: Option<String> = std::env::args().skip(1).find(|a| !a.starts_with("--"));
    let wanted = |name: &str| filter.as_deref().is_none_or(|f| name.contains(f));
    let mut rows = Vec::new();
    let mut row = |workload: &'static str, upstream, run: &mut dyn FnMut() -> Duration| {
        if wanted(workload) {
            eprintln!("running: {workload}");
            rows.push(Row { workload, median: run(), upstream });
        }
    };
    row("default profile, 5,000 nodes, adaptive sampling", BASIC, &mut || typical(5000, 0));
    row("default profile, 5,000 nodes, 100% scored", None, &mut || typical(5000, 100));
    row("DaemonSet pod, 15,000 nodes, queue to bind", DAEMONSET, &mut || daemonset(15000));
    row("default profile, 65,000 nodes, adaptive sampling", None, &mut || typical(65000, 0));
    row("snapshot update after one node change, 5,000 nodes", None, &mut || snapshot_update(5000));
    row("snapshot update after one node change, 65,000 nodes", None, &mut || snapshot_update(65000));
    let mut dra_rows = Vec::new();
    row("DRA 8-GPU claim, 500 nodes x 8 GPUs", DRA, &mut || {
        dra_rows = dra(500, &["c8", "c1"]);
        dra_rows[0]
    });
    if let Some(&one) = dra_rows.get(1) {
        rows.push(Row { workload: "DRA 1-GPU claim, 500 nodes x 8 GPUs", median: one, upstream: DRA });
    }
    let mut row = |workload: &'static str, run: &mut dyn FnMut() -> Duration| {
        if wanted(workload) {
            eprintln!("running: {workload}");
            rows.push(Row { workload, median: run(), upstream: None });
        }
    };
    row("trace replay cycle, openb 1,213 nodes at 60%, BestFit", &mut || replay(Policy::BestFit));
    row("trace replay cycle, openb 1,213 nodes at 60%, FGD", &mut || replay(Policy::Fgd));
    print_table(&rows);
}
