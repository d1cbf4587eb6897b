//! Plugin latency benches for plugin authors (feature `bench`): give a profile (or
//! one plugin) and a cluster shape, get one criterion bench per extension point the
//! profile runs, driven through [`FrameworkRunner`](crate::framework::FrameworkRunner) with the real runtime's rules.
//!
//! Bench ids are `<group>/<point>/<nodes>`: `pre_filter`, `filter` (every node,
//! after PreFilter), `pre_score`, `score` (Score and NormalizeScore over every
//! node, weighted), `reserve` (Reserve then Unreserve) and `permit`, each only when
//! the profile has a plugin there. Filter and Score are timed over the whole node
//! list, so divide by the node count for the per-node cost (the throughput is set
//! to the node count, so criterion reports nodes per second).
//!
//! ```no_run
//! use criterion::Criterion;
//! use schedkit::bench::{ClusterShape, bench_plugin};
//! use schedkit::framework::{FilterFn, Status};
//! use schedkit::testing::PodBuilder;
//!
//! let mut c = Criterion::default();
//! let plugin = FilterFn::new("EvenNodes", |_, _, n| {
//!     if n.allocatable().milli_cpu % 2 == 0 { Status::SUCCESS } else { Status::unschedulable("odd") }
//! });
//! let pod = PodBuilder::new("p").milli_cpu(500).build();
//! bench_plugin(&mut c, plugin, &[ClusterShape::new(100), ClusterShape::new(1000)], &pod).unwrap();
//! ```

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput};

use crate::framework::{CycleState, ExtensionPoint, FrameworkRunner, Plugin, Profile};
use crate::model::{Pod, PodError};
use crate::snapshot::{PodInfo, Snapshot};
use crate::testing::{ClusterBuilder, ClusterError, NodeBuilder, PodBuilder};

/// What a plugin bench could not set up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BenchError {
    /// The cluster shape could not be built.
    #[error("cluster shape: {0}")]
    Cluster(#[from] ClusterError),
    /// The pod failed validation.
    #[error("pod: {0}")]
    Pod(#[from] PodError),
    /// The one-plugin profile could not be built.
    #[error("profile: {0}")]
    Profile(#[from] crate::framework::ConfigError),
}

/// A synthetic cluster: `nodes` nodes spread round robin over `zones` zones, each
/// with the given allocatable CPU and memory and `pods_per_node` running pods of
/// `pod_milli_cpu` each (labelled `app=bench-<i % 10>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClusterShape {
    /// Node count.
    pub nodes: usize,
    /// Zones (`topology.kubernetes.io/zone` = `zone-<i>`), at least 1.
    pub zones: usize,
    /// Allocatable CPU per node, millicores.
    pub node_milli_cpu: i64,
    /// Allocatable memory per node, bytes.
    pub node_memory_bytes: i64,
    /// Pods already running on each node.
    pub pods_per_node: usize,
    /// CPU request of each running pod, millicores.
    pub pod_milli_cpu: i64,
}

impl ClusterShape {
    /// `nodes` nodes of 32 cores and 128 GiB in 3 zones, 10 pods of 500m on each.
    pub fn new(nodes: usize) -> Self {
        ClusterShape {
            nodes,
            zones: 3,
            node_milli_cpu: 32_000,
            node_memory_bytes: 128 << 30,
            pods_per_node: 10,
            pod_milli_cpu: 500,
        }
    }

    /// The cluster as a snapshot.
    pub fn snapshot(&self) -> Result<Snapshot, ClusterError> {
        let zones = self.zones.max(1);
        let mut b = ClusterBuilder::new().nodes(self.nodes, |i| {
            NodeBuilder::new(&format!("node-{i}"))
                .milli_cpu(self.node_milli_cpu)
                .memory(&self.node_memory_bytes.to_string())
                .pods(110)
                .zone(&format!("zone-{}", i % zones))
        });
        for i in 0..self.nodes {
            b = b.pods_on(&format!("node-{i}"), self.pods_per_node, |j| {
                PodBuilder::new(&format!("running-{i}-{j}"))
                    .milli_cpu(self.pod_milli_cpu)
                    .label("app", &format!("bench-{}", j % 10))
            });
        }
        b.build()
    }
}

/// Benches one plugin, alone in a profile, on each cluster shape (group: the
/// plugin's name).
pub fn bench_plugin(
    c: &mut Criterion,
    plugin: impl Plugin,
    shapes: &[ClusterShape],
    pod: &Pod,
) -> Result<(), BenchError> {
    let name = plugin.name().to_owned();
    let profile = Profile::builder("bench").plugin(plugin).build()?;
    bench_profile(c, &name, &profile, shapes, pod)
}

/// Benches every extension point `profile` runs, on each cluster shape, under
/// criterion group `group`.
pub fn bench_profile(
    c: &mut Criterion,
    group: &str,
    profile: &Profile,
    shapes: &[ClusterShape],
    pod: &Pod,
) -> Result<(), BenchError> {
    let pod = PodInfo::new(pod.clone())?;
    let mut grp = c.benchmark_group(group);
    let has = |p: ExtensionPoint| !profile.plugins_at(p).is_empty();
    for shape in shapes {
        let runner = FrameworkRunner::new(profile.clone()).with_snapshot(shape.snapshot()?);
        let nodes = shape.nodes;
        let all = runner.all_nodes();
        // The state Filter and Score see: what PreFilter and PreScore left.
        let mut filtered = CycleState::new();
        let pre = runner.run_pre_filter(&mut filtered, &pod);
        let mut scored = filtered.clone();
        let _ = runner.run_pre_score(&mut scored, &pod, &all);
        if has(ExtensionPoint::PreFilter) {
            grp.throughput(Throughput::Elements(1));
            grp.bench_function(BenchmarkId::new("pre_filter", nodes), |b| {
                b.iter(|| {
                    let mut s = CycleState::new();
                    black_box(runner.run_pre_filter(&mut s, &pod).is_ok())
                });
            });
        }
        if has(ExtensionPoint::Filter)
            && let Ok(pre) = &pre
        {
            grp.throughput(Throughput::Elements(nodes as u64));
            grp.bench_function(BenchmarkId::new("filter", nodes), |b| {
                b.iter(|| black_box(runner.find_feasible(&filtered, &pod, pre).nodes.len()));
            });
        }
        if has(ExtensionPoint::PreScore) {
            grp.throughput(Throughput::Elements(1));
            grp.bench_function(BenchmarkId::new("pre_score", nodes), |b| {
                b.iter(|| {
                    let mut s = filtered.clone();
                    black_box(runner.run_pre_score(&mut s, &pod, &all).is_success())
                });
            });
        }
        if has(ExtensionPoint::Score) {
            grp.throughput(Throughput::Elements(nodes as u64));
            grp.bench_function(BenchmarkId::new("score", nodes), |b| {
                b.iter(|| black_box(runner.run_score(&scored, &pod, &all).is_ok()));
            });
        }
        let target = runner.snapshot().nodes().first().map(|info| info.node().name().to_owned()).unwrap_or_default();
        if has(ExtensionPoint::Reserve) {
            grp.throughput(Throughput::Elements(1));
            grp.bench_function(BenchmarkId::new("reserve", nodes), |b| {
                b.iter(|| {
                    let mut s = scored.clone();
                    let r = runner.run_reserve(&mut s, &pod, &target);
                    runner.run_unreserve(&mut s, &pod, &target);
                    black_box(r.is_success())
                });
            });
        }
        if has(ExtensionPoint::Permit) {
            grp.throughput(Throughput::Elements(1));
            grp.bench_function(BenchmarkId::new("permit", nodes), |b| {
                b.iter(|| {
                    let mut s = scored.clone();
                    black_box(runner.run_permit(&mut s, &pod, &target))
                });
            });
        }
    }
    grp.finish();
    Ok(())
}
