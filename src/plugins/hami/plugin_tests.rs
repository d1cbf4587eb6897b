//! HamiVgpu through the scheduler: node choice by policy, annotations, Reserve and
//! Unreserve, bad input.

use std::sync::Arc;

use super::*;
use crate::framework::Profile;
use crate::model::ResourceList;
use crate::plugins::hami::{DeviceInfo, RecordingAnnotator, Usage, register};
use crate::scheduler::{Scheduler, TieBreak};
use crate::testing::{NodeBuilder, PodBuilder};

fn node(name: &str, gpus: u32) -> crate::model::Node {
    let mut n = NodeBuilder::new(name).cpu("32").memory("64Gi").build();
    let d: Vec<DeviceInfo> =
        (0..gpus).map(|i| DeviceInfo::gpu(&format!("{name}-GPU-{i}"), "NVIDIA-A100", 1000).with_index(i)).collect();
    if gpus > 0 {
        register(&mut n, &d);
    }
    n
}

fn pod(name: &str, limits: &[(&str, &str)], annos: &[(&str, &str)]) -> PodInfo {
    let limits = ResourceList::parse(limits.iter().copied()).unwrap();
    let annos: Vec<(String, String)> = annos.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    let p = PodBuilder::new(name)
        .uid(name)
        .scheduler_name("hami")
        .with(move |p| {
            p.spec.containers[0].resources.limits = limits;
            p.metadata.annotations.extend(annos);
        })
        .build();
    PodInfo::new(p).unwrap()
}

struct Fixture {
    sched: Scheduler,
    state: Arc<HamiState>,
    written: Arc<RecordingAnnotator>,
}

fn fixture(nodes: &[(&str, u32)]) -> Fixture {
    let handle = Handle::default();
    let state = HamiState::new();
    let written = Arc::new(RecordingAnnotator::default());
    let plugin = HamiVgpu::new(HamiConfig::default(), state.clone(), handle.clone()).with_annotator(written.clone());
    let profile = Profile::builder("hami").plugin(plugin).build().unwrap();
    let sched = Scheduler::builder().profile(profile).handle(handle).tie_break(TieBreak::SmallestName).build();
    for &(n, g) in nodes {
        sched.add_node(node(n, g)).unwrap();
    }
    Fixture { sched, state, written }
}

fn place(f: &mut Fixture, p: &PodInfo) -> Result<String, String> {
    match f.sched.schedule_one(p) {
        Ok(b) => {
            let n = b.node().to_owned();
            b.run().map(|_| n).map_err(|e| e.to_string())
        }
        Err(e) => Err(e.to_string()),
    }
}

const HALF: &[(&str, &str)] = &[("nvidia.com/gpu", "1"), ("nvidia.com/gpumem", "500"), ("nvidia.com/gpucores", "50")];

#[test]
fn node_binpack_and_spread() {
    let mut f = fixture(&[("a", 1), ("b", 1)]);
    assert_eq!(place(&mut f, &pod("p1", HALF, &[])).unwrap(), "a");
    // Binpack (the default) goes to the used node, spread to the empty one.
    assert_eq!(place(&mut f, &pod("p2", HALF, &[])).unwrap(), "a");
    let spread = [(NODE_SCHEDULER_POLICY_KEY, "spread")];
    assert_eq!(place(&mut f, &pod("p3", HALF, &spread)).unwrap(), "b");
    // a is full: 1000 of 1000 MiB.
    assert!(place(&mut f, &pod("p4", &[("nvidia.com/gpu", "1"), ("nvidia.com/gpumem", "600")], &[])).is_err());
    let w = f.written.get("default/p1").unwrap();
    assert_eq!(w["hami.io/vgpu-node"], "a");
    assert_eq!(w["hami.io/vgpu-devices-allocated"], "a-GPU-0,NVIDIA,500,50:;");
    assert_eq!(w["hami.io/vgpu-devices-to-allocate"], w["hami.io/vgpu-devices-allocated"]);
    assert_eq!(w["hami.io/bind-phase"], "allocating");
    assert!(w.contains_key("hami.io/vgpu-time") && w.contains_key("hami.io/bind-time"));
    assert_eq!(f.state.usage("a").unwrap()[0].1, Usage::new(2, 1000, 100));
}

const NODE_SCHEDULER_POLICY_KEY: &str = crate::plugins::hami::NODE_SCHEDULER_POLICY;

#[test]
fn filter_reasons_and_unregistered_nodes() {
    let mut f = fixture(&[("cpu-only", 0), ("g", 1)]);
    // Pods without a vGPU request skip the plugin and go anywhere.
    assert!(place(&mut f, &pod("cpu", &[], &[])).is_ok());
    let e = place(&mut f, &pod("two", &[("nvidia.com/gpu", "2")], &[])).unwrap_err();
    assert!(e.contains("node unregistered") && e.contains("NodeInsufficientDevice"), "{e}");
    let e = place(&mut f, &pod("v100", HALF, &[(crate::plugins::hami::USE_GPU_TYPE, "V100")])).unwrap_err();
    assert!(e.contains("1/1 CardTypeMismatch"), "{e}");
    let e = place(&mut f, &pod("w", HALF, &[(crate::plugins::hami::DEVICE_SCORING_WEIGHTS, "slot=1")])).unwrap_err();
    assert!(e.contains("invalid hami.io/device-scoring-weights annotation"), "{e}");
}

#[test]
fn cordon_annotation_is_read_live() {
    let mut f = fixture(&[]);
    let mut n = node("c", 2);
    n.metadata.annotations.insert(crate::plugins::hami::DEVICE_CORDON.into(), "c-GPU-0,c-GPU-1".into());
    f.sched.add_node(n).unwrap();
    let e = place(&mut f, &pod("p", HALF, &[])).unwrap_err();
    assert!(e.contains("2/2 CardCordoned"), "{e}");
}

/// A failing PreBind (the annotator refuses) gives the devices back.
#[test]
fn failed_annotation_unreserves() {
    struct Refuse;
    impl PodAnnotator for Refuse {
        fn annotate(&self, _: &crate::model::Pod, _: &BTreeMap<String, String>) -> Result<(), String> {
            Err("conflict".into())
        }
    }
    let handle = Handle::default();
    let state = HamiState::new();
    let plugin = HamiVgpu::new(HamiConfig::default(), state.clone(), handle.clone()).with_annotator(Refuse);
    let mut sched =
        Scheduler::builder().profile(Profile::builder("hami").plugin(plugin).build().unwrap()).handle(handle).build();
    sched.add_node(node("a", 1)).unwrap();
    let p = pod("p", HALF, &[]);
    let b = sched.schedule_one(&p).unwrap();
    let e = b.run().unwrap_err().to_string();
    assert!(e.contains("conflict"), "{e}");
    assert_eq!(state.allocation("p"), None);
    assert_eq!(state.usage("a").unwrap()[0].1, Usage::default());
}

#[test]
fn normalize_keeps_the_best_alone_at_100() {
    let f = HamiVgpu::new(HamiConfig::default(), HamiState::new(), Handle::default());
    let mut scores: Vec<NodeScore> = [5i64, -3, 9, 9]
        .iter()
        .enumerate()
        .map(|(i, &s)| NodeScore { name: crate::model::Symbol::intern(&format!("n{i}")), score: s })
        .collect();
    let st = CycleState::default();
    let p = pod("x", &[], &[]);
    assert!(f.normalize(&st, &p, &mut scores).is_success());
    let got: Vec<i64> = scores.iter().map(|s| s.score).collect();
    assert_eq!(got, [66, 0, 100, 100]);
    assert!(ordered(1.5) > ordered(1.25) && ordered(0.0) > ordered(-1.0) && ordered(-1.0) > ordered(-2.0));
}

#[test]
fn registry_builds_from_config() {
    let r = crate::plugins::default_registry();
    assert!(r.contains(HAMI_VGPU));
    let h = Handle::default();
    let p =
        HamiVgpu::from_config(Some(&serde_json::json!({"defaultMemory": 1024, "nodeSchedulerPolicy": "spread"})), &h)
            .unwrap();
    assert_eq!(p.config().default_memory, 1024);
    assert!(Arc::ptr_eq(p.state(), &h.shared::<HamiState>().unwrap()));
    assert!(HamiVgpu::from_config(Some(&serde_json::json!({"bogus": 1})), &h).is_err());
}

#[test]
fn pods_bound_elsewhere_are_booked_and_released() {
    let f = HamiVgpu::new(HamiConfig::default(), HamiState::new(), Handle::default());
    f.state().add_node(&node("a", 1)).unwrap();
    let mut p = PodBuilder::new("b").uid("b").node_name("a").build();
    p.metadata.annotations.insert(VGPU_DEVICES_ALLOCATED.into(), "a-GPU-0,NVIDIA,300,20:;".into());
    let info = PodInfo::new(p).unwrap();
    f.pod_added(&info);
    assert_eq!(f.state().usage("a").unwrap()[0].1, Usage::new(1, 300, 20));
    f.pod_deleted(&info);
    assert_eq!(f.state().usage("a").unwrap()[0].1, Usage::default());
}
