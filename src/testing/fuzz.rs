//! Entry points shared by the fuzz targets in `fuzz/` and the tests that replay their
//! seed corpora on stable Rust. Each takes arbitrary bytes and must never panic; an
//! assertion that fails is the bug a fuzzer reports.

use std::io::Cursor;
use std::sync::Arc;

use crate::framework::{FilterFn, Handle, PluginArgs, PluginRef, Profile, ProfileConfig, Status};
use crate::model::{Node, Pod, PodDisruptionBudget, Quantity};
use crate::plugins::capacity_scheduling::{CapacityScheduling, ElasticQuota};
use crate::plugins::{default_profile_config, default_registry};
use crate::scheduler::Scheduler;
use crate::selector::tz;
use crate::sim::{MAX_TUNED_ARRIVALS, tuned_arrivals};
use crate::snapshot::PodInfo;
use crate::trace::{gpu_capacity_milli, parse_nodes, parse_pods};

use super::{NodeBuilder, PodBuilder};

/// Parses bytes as a quantity; whatever parses must display and parse back to the
/// same value.
///
/// # Panics
/// When the round-trip property breaks.
pub fn quantity(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(q) = Quantity::parse(text) {
        let shown = q.to_string();
        let back = Quantity::parse(&shown).unwrap_or_else(|e| panic!("{text:?} displayed as {shown:?}: {e}"));
        assert_eq!(back, q, "{text:?} -> {shown:?}");
        let _ = (q.value(), q.milli_value(), q.as_f64());
    }
}

/// A scheduler whose one profile fits pods on free CPU, over three nodes.
fn cpu_scheduler() -> Option<Scheduler> {
    let profile = Profile::builder("default-scheduler")
        .plugin(FilterFn::new("CpuFits", |_, pod, node| {
            let free = node.allocatable().milli_cpu - node.requested().milli_cpu;
            if free >= pod.requests.milli_cpu { Status::SUCCESS } else { Status::unschedulable("Insufficient cpu") }
        }))
        .build()
        .ok()?;
    let s = Scheduler::builder().profile(profile).parallelism(1).build();
    for (i, cpu) in ["1", "8", "64"].iter().enumerate() {
        if let Ok(n) = NodeBuilder::new(&format!("n{i}")).cpu(cpu).zone("a").try_build() {
            let _ = s.add_node(n);
        }
    }
    Some(s)
}

/// Loads bytes as a pod manifest and, if it loads and validates, schedules it on
/// a three-node cluster and runs (or drops) its binding.
pub fn pod_json(data: &[u8]) {
    let Ok(pod) = serde_json::from_slice::<Pod>(data) else { return };
    let _ = pod.requests();
    let _ = pod.non_zero_requests();
    let Some(mut s) = cpu_scheduler() else { return };
    if let Ok(binding) = s.schedule_pod(pod) {
        let _ = binding.run();
    }
}

/// Loads bytes as a Node manifest, adds it to a cluster and schedules small pods
/// under the default profile (which reads its labels, taints, capacity and images),
/// then updates and removes it. The cache must refuse or accept the node, never panic.
pub fn node_json(data: &[u8]) {
    let Ok(node) = serde_json::from_slice::<Node>(data) else { return };
    let name = node.metadata.name.clone();
    let Ok(profile) = default_registry().build_profile(&default_profile_config(), &Handle::default()) else {
        panic!("the default profile builds");
    };
    let mut s = Scheduler::builder().profile(profile).parallelism(1).build();
    if let Ok(other) = NodeBuilder::new("other").cpu("4").memory("8Gi").zone("a").try_build() {
        let _ = s.add_node(other);
    }
    if s.add_node(node.clone()).is_err() {
        return;
    }
    for (i, cpu) in ["100m", "2"].iter().enumerate() {
        if let Ok(pod) = PodBuilder::new(&format!("p{i}")).cpu(cpu).try_build()
            && let Ok(binding) = s.schedule_pod(pod)
        {
            let _ = binding.run();
        }
    }
    let mut cache = s.cache().lock();
    let _ = cache.update_node(node);
    let _ = cache.remove_node(&name);
}

/// Bytes as a scheduler profile. Input starting with `{` is a whole
/// `KubeSchedulerConfiguration` profile (plugins per point, `pluginConfig`). Otherwise
/// the first line names a plugin of the default registry and the rest is its
/// `pluginConfig` args, with that plugin enabled in `multiPoint` beside the default
/// plugins. Whatever builds schedules two pods on a small cluster.
pub fn profile_config(data: &[u8]) {
    let registry = default_registry();
    let cfg = if data.first() == Some(&b'{') {
        let Ok(cfg) = serde_json::from_slice::<ProfileConfig>(data) else { return };
        cfg
    } else {
        let Ok(text) = std::str::from_utf8(data) else { return };
        let (name, args) = text.split_once('\n').unwrap_or((text, "null"));
        let Ok(args) = serde_json::from_str::<serde_json::Value>(args) else { return };
        let mut cfg = default_profile_config();
        if !cfg.plugins.multi_point.enabled.iter().any(|p| p.name == name) {
            cfg.plugins.multi_point.enabled.push(PluginRef { name: name.to_owned(), weight: None });
        }
        cfg.plugin_config.push(PluginArgs { name: name.to_owned(), args });
        cfg
    };
    // DynamicResources (and the resource plugins' DRA extended resources) read a
    // DraStore shared on the handle.
    let handle = Handle::default();
    handle.set_shared(Arc::new(crate::dra::DraStore::new()));
    let Ok(profile) = registry.build_profile(&cfg, &handle) else { return };
    let mut s = Scheduler::builder().profile(profile).handle(handle).parallelism(1).build();
    for i in 0..3 {
        if let Ok(n) = NodeBuilder::new(&format!("n{i}")).cpu("4").memory("8Gi").gpus(2).zone("z").try_build() {
            let _ = s.add_node(n);
        }
    }
    for i in 0..2 {
        let mut pod = PodBuilder::new(&format!("p{i}")).cpu("1").label("app", "x");
        if let Some(name) = &cfg.scheduler_name {
            pod = pod.scheduler_name(name);
        }
        if let Ok(pod) = pod.try_build()
            && let Ok(binding) = s.schedule_pod(pod)
        {
            let _ = binding.run();
        }
    }
}

/// Bytes as a JSON list of PodDisruptionBudgets (or one): validated and installed on
/// the handle, then a high-priority pod preempts among labelled low-priority pods, so
/// DefaultPreemption counts the budgets.
pub fn pdb_json(data: &[u8]) {
    let pdbs: Vec<PodDisruptionBudget> = match serde_json::from_slice(data) {
        Ok(v) => v,
        Err(_) => match serde_json::from_slice::<PodDisruptionBudget>(data) {
            Ok(one) => vec![one],
            Err(_) => return,
        },
    };
    let handle = Handle::default();
    if handle.preemption().set_pod_disruption_budgets(pdbs).is_err() {
        return;
    }
    let Ok(profile) = default_registry().build_profile(&default_profile_config(), &handle) else {
        panic!("the default profile builds");
    };
    let mut s = Scheduler::builder().profile(profile).handle(handle).parallelism(1).build();
    for i in 0..2 {
        if let Ok(n) = NodeBuilder::new(&format!("n{i}")).cpu("2").memory("4Gi").try_build() {
            let _ = s.add_node(n);
        }
    }
    for i in 0..4 {
        let app = if i % 2 == 0 { "foo" } else { "bar" };
        if let Ok(pod) = PodBuilder::new(&format!("low{i}")).cpu("1").label("app", app).priority(1).try_build()
            && let Ok(binding) = s.schedule_pod(pod)
        {
            let _ = binding.run();
        }
    }
    if let Ok(pod) = PodBuilder::new("high").cpu("2").priority(1000).try_build() {
        let _ = s.schedule_pod(pod);
    }
}

/// Bytes as a JSON list of ElasticQuotas (or one): a CapacityScheduling plugin over
/// them counts pods in and out of their namespaces; usage must return to what it was.
pub fn elastic_quota_json(data: &[u8]) {
    let quotas: Vec<ElasticQuota> = match serde_json::from_slice(data) {
        Ok(v) => v,
        Err(_) => match serde_json::from_slice::<ElasticQuota>(data) {
            Ok(one) => vec![one],
            Err(_) => return,
        },
    };
    let Ok(plugin) = CapacityScheduling::new(&quotas, Handle::default()) else { return };
    let before: Vec<_> = plugin.quotas().iter().map(|q| (q.namespace, q.used.clone())).collect();
    let mut pods = Vec::new();
    for (i, q) in quotas.iter().enumerate().take(8) {
        let ns = q.namespace().to_owned();
        if let Ok(pod) = PodBuilder::new(&format!("p{i}")).namespace(&ns).cpu("1").memory("1Gi").try_build()
            && let Ok(info) = PodInfo::new(pod)
        {
            let _ =
                plugin.quotas().get(info.namespace).map(|q| (q.used_over_max_with(&info.requests), q.used_over_min()));
            let _ = plugin.quotas().aggregated_used_over_min_with(&info.requests);
            plugin.add_pod(&info);
            pods.push(Arc::new(info));
        }
    }
    for p in &pods {
        plugin.remove_pod(p);
    }
    let after: Vec<_> = plugin.quotas().iter().map(|q| (q.namespace, q.used.clone())).collect();
    assert_eq!(before, after, "usage after adding and removing the same pods");
}

/// Bytes as openb CSV: before the first NUL byte the node table, after it the pod
/// table (the whole input for both when there is none); then the tuning step of the
/// replay on what loaded, with the ratio picked by the input's length. Errors must name a
/// line; tuned arrivals must point at loaded pods.
pub fn openb(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let (nodes_text, pods_text) = text.split_once('\0').unwrap_or((text, text));
    let nodes = parse_nodes("nodes.csv", nodes_text);
    if let Err(e) = &nodes {
        assert!(!e.to_string().is_empty());
    }
    let Ok(pods) = parse_pods("pods.csv", pods_text) else { return };
    let capacity = nodes.map_or(8000, |n| gpu_capacity_milli(&n));
    let ratio = [0.0, 0.5, 1.0, 1.3, 3.0, -1.0][data.len() % 6];
    // Tuning up appends copies until the target demand: keep each run short (the cap
    // itself is checked by a unit test of `tuned_arrivals`).
    let smallest = pods.iter().map(crate::trace::TracePod::gpu_demand).filter(|&d| d > 0).min().unwrap_or(1);
    if ratio * capacity as f64 / smallest as f64 > (MAX_TUNED_ARRIVALS / 64) as f64 {
        return;
    }
    if let Ok(arrivals) = tuned_arrivals(&pods, capacity, ratio, 7) {
        for a in &arrivals {
            assert!(a.pod < pods.len(), "arrival {a:?} of {} pods", pods.len());
            assert!(a.name.starts_with(pods[a.pod].name.as_str()));
        }
    }
}

/// Bytes as a TZif file, then as a zoneinfo zip holding zones: whatever parses
/// answers offsets at far and near instants.
pub fn tzif(data: &[u8]) {
    let instants = [i64::MIN, -(1 << 40), -1, 0, 1_700_000_000, 1 << 40, i64::MAX];
    if let Ok(zone) = tz::Zone::parse(data) {
        for t in instants {
            let _ = zone.offset_at(t);
        }
    }
    for name in ["UTC", "Europe/Berlin", "America/New_York"] {
        let len = data.len() as u64;
        if let Ok(Some(zone)) = tz::read_zone_zip_from(Cursor::new(data), len, &"fuzz.zip", name) {
            for t in instants {
                let _ = zone.offset_at(t);
            }
        }
    }
}
