//! The GpuTopology plugin: best interconnected set per node, reserved exactly.

use std::sync::Arc;

use schedkit::framework::{
    CycleState, ExtensionPoints, Handle, PermitDecision, PermitPlugin, Plugin, Profile, Registry, Status,
};
use schedkit::plugins::gpu_topology::{GpuTopology, GpuTopologyArgs, GpuTopologyRegistry};
use schedkit::plugins::node_resources::{Fit, FitArgs};
use schedkit::scheduler::{ScheduleError, Scheduler, TieBreak};
use schedkit::snapshot::PodInfo;
use schedkit::testing::{NodeBuilder, PodBuilder};
use schedkit::topology::{GpuSet, SearchOptions, best_subset, machines};

fn cluster(extra: Option<Profile>) -> (Scheduler, Arc<GpuTopologyRegistry>) {
    let reg = Arc::new(GpuTopologyRegistry::default());
    let v100 = Arc::new(machines::dgx1_v100().matrix().unwrap());
    let profile = extra.unwrap_or_else(|| {
        Profile::builder("default-scheduler")
            .plugin(Fit::new(&FitArgs::default()).unwrap())
            .plugin(GpuTopology::new(reg.clone(), &GpuTopologyArgs::default()))
            .build()
            .unwrap()
    });
    let s = Scheduler::builder().profile(profile).parallelism(1).tie_break(TieBreak::First).build();
    for name in ["fragmented", "empty"] {
        s.add_node(NodeBuilder::new(name).cpu("64").memory("512Gi").gpus(8).build()).unwrap();
        reg.set_node(name, v100.clone());
    }
    (s, reg)
}

/// Marks `busy` GPUs of `node` taken by a placeholder pod.
fn occupy(reg: &GpuTopologyRegistry, node: &str, busy: &[usize]) {
    assert!(reg.mark_busy(node, GpuSet::from_indices(busy.iter().copied()), &format!("placeholder-{node}")));
}

#[test]
fn picks_the_node_with_the_better_set_and_reserves_it() {
    let (mut s, reg) = cluster(None);
    let m = machines::dgx1_v100().matrix().unwrap();
    // On "fragmented", leave free only GPUs whose best pair is worse than an empty DGX-1's.
    let busy = [0, 1, 2, 3, 6, 7];
    occupy(&reg, "fragmented", &busy);
    let free = reg.free("fragmented").unwrap();
    let opts = SearchOptions::default();
    let on_fragmented = best_subset(&m, free, 2, &opts).unwrap();
    let on_empty = best_subset(&m, m.all(), 2, &opts).unwrap();
    assert!(on_fragmented.objective < on_empty.objective, "the test needs a worse set on the fragmented node");

    let binding = s.schedule_pod(PodBuilder::new("train").gpus(2).build()).unwrap();
    assert_eq!(binding.node(), "empty");
    let uid = binding.pod().uid.clone();
    binding.run().unwrap();
    let (node, set) = reg.assignment(&uid).unwrap();
    assert_eq!(node, "empty");
    assert_eq!(set, on_empty.gpus);
    assert_eq!(reg.free("empty").unwrap(), m.all() & !set.0);
}

#[test]
fn unreserve_restores_the_free_gpus_exactly() {
    struct Reject;
    impl Plugin for Reject {
        fn name(&self) -> &str {
            "Reject"
        }
        fn register(self: Arc<Self>, p: &mut ExtensionPoints) {
            p.permit(self);
        }
    }
    impl PermitPlugin for Reject {
        fn permit(&self, _: &mut CycleState, _: &PodInfo, _: &str) -> PermitDecision {
            PermitDecision::Reject(Status::unschedulable("no"))
        }
    }
    let reg = Arc::new(GpuTopologyRegistry::default());
    let profile = Profile::builder("default-scheduler")
        .plugin(GpuTopology::new(reg.clone(), &GpuTopologyArgs::default()))
        .plugin(Reject)
        .build()
        .unwrap();
    let (mut s, _) = cluster(Some(profile));
    let m = Arc::new(machines::dgx1_v100().matrix().unwrap());
    reg.set_node("fragmented", m.clone());
    reg.set_node("empty", m);
    let before = (reg.free("fragmented"), reg.free("empty"));
    let err = s.schedule_pod(PodBuilder::new("p").gpus(4).build()).unwrap_err();
    assert!(matches!(err, ScheduleError::Plugin { .. }));
    assert_eq!((reg.free("fragmented"), reg.free("empty")), before);
    assert!(reg.assignment("default/p").is_none());
}

#[test]
fn nodes_without_enough_free_gpus_are_filtered() {
    let (mut s, reg) = cluster(None);
    occupy(&reg, "fragmented", &[0, 1, 2, 3, 4, 5]);
    let b = s.schedule_pod(PodBuilder::new("p").gpus(4).build()).unwrap();
    assert_eq!(b.node(), "empty");
    b.run().unwrap();
    // Leave three GPUs free on "empty" too.
    let free: Vec<usize> = GpuSet(reg.free("empty").unwrap()).iter().collect();
    occupy(&reg, "empty", &free[..free.len() - 3]);
    let err = s.schedule_pod(PodBuilder::new("q").gpus(4).build()).unwrap_err();
    assert!(err.to_string().contains("Insufficient free GPUs in the node's topology"), "{err}");
    // Released GPUs are free again, and the pod fits.
    assert!(reg.release("default/p"));
    assert!(!reg.release("default/p"), "a second release is a no-op");
    let b = s.schedule_pod(PodBuilder::new("r").gpus(4).build()).unwrap();
    assert_eq!(b.node(), "empty");
}

#[test]
fn config_builds_the_plugin_with_args() {
    let shared = Arc::new(GpuTopologyRegistry::default());
    let mut r = Registry::new();
    GpuTopology::register_factory(&mut r, shared).unwrap();
    let cfg = serde_json::from_str(
        r#"{"plugins":{"multiPoint":{"enabled":[{"name":"GpuTopology","weight":5}]}},
            "pluginConfig":[{"name":"GpuTopology","args":{"numaAligned":true}}]}"#,
    )
    .unwrap();
    let p = r.build_profile(&cfg, &Handle::default()).unwrap();
    assert_eq!(p.score_plugins(), [("GpuTopology", 5)]);
    let bad = serde_json::from_str(
        r#"{"plugins":{"multiPoint":{"enabled":[{"name":"GpuTopology"}]}},
            "pluginConfig":[{"name":"GpuTopology","args":{"numaAligned":"yes"}}]}"#,
    )
    .unwrap();
    assert!(r.build_profile(&bad, &Handle::default()).is_err());
}
