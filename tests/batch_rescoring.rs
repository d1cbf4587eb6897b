//! Batch rescoring (schedkit's opt-in take on KEP-5598's v1.37 "Rescoring"): pods
//! that share nodes batch, land exactly where a full evaluation would put them when
//! scores are deterministic, and every hinted placement passes every Filter.

use std::sync::Arc;

use proptest::prelude::*;
use schedkit::framework::{CycleState, FrameworkRunner, Handle, Profile, ProfileConfig, VirtualClock};
use schedkit::model::{Affinity, NodeAffinity, NodeSelectorOperator, NodeSelectorRequirement, NodeSelectorTerm};
use schedkit::model::{PreferredSchedulingTerm, TaintEffect};
use schedkit::plugins::default_registry;
use schedkit::scheduler::{FlushReason, Scheduler, TieBreak};
use schedkit::snapshot::{PodInfo, Snapshot};
use schedkit::testing::{NodeBuilder, PodBuilder};

/// How a burst is scheduled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Off,
    /// v1.36 batching.
    On,
    /// Batching with rescoring.
    Rescoring,
}

/// A node: cpu cores, in zone `a`, holds the pods' image, has a PreferNoSchedule taint.
type NodeDef = (i64, bool, bool, bool);

fn profile(h: &Handle, mode: Mode) -> Profile {
    // Upstream's scheduler-perf advice: cluster-default spreading off.
    let mut cfg: ProfileConfig = serde_json::from_value(serde_json::json!({
        "pluginConfig": [{"name": "PodTopologySpread", "args": {"defaultingType": "List", "defaultConstraints": []}}],
    }))
    .unwrap();
    cfg.plugins = schedkit::plugins::default_profile_config().plugins;
    cfg.opportunistic_batching = Some(mode != Mode::Off);
    cfg.batch_rescoring = Some(mode == Mode::Rescoring);
    default_registry().build_profile(&cfg, h).unwrap()
}

/// A replica: 2 cpu, preferring zone `a`, with an image some nodes hold.
fn replica(i: usize) -> PodInfo {
    let preferred = vec![PreferredSchedulingTerm {
        weight: 5,
        preference: NodeSelectorTerm {
            match_expressions: vec![NodeSelectorRequirement::new("zone", NodeSelectorOperator::In, &["a"])],
            match_fields: vec![],
        },
    }];
    let pod = PodBuilder::new(&format!("p{i:04}"))
        .cpu("2")
        .memory("1Gi")
        .image("registry.example/app:1")
        .with(|p| {
            p.spec.affinity = Some(Affinity {
                node_affinity: Some(NodeAffinity { required: None, preferred }),
                ..Affinity::default()
            });
        })
        .build();
    PodInfo::new(pod).unwrap()
}

/// Schedules `pods` replicas one by one; returns the placements (`None`: unschedulable)
/// and the scheduler. Every pod placed through a hint is checked against an
/// independent Filter run on the snapshot taken just before its cycle.
fn burst(nodes: &[NodeDef], pods: usize, mode: Mode, tie: TieBreak) -> (Vec<Option<String>>, Scheduler) {
    let clock = VirtualClock::new();
    let h = Handle::new(Arc::new(clock));
    h.set_feature_gates("DRAExtendedResource=false".parse().unwrap());
    let profile = profile(&h, mode);
    let mut s = Scheduler::builder().handle(h.clone()).profile(profile.clone()).tie_break(tie).parallelism(1).build();
    for (i, &(cpu, zone_a, image, tainted)) in nodes.iter().enumerate() {
        let mut b = NodeBuilder::new(&format!("n{i:03}")).cpu(&cpu.to_string()).memory("64Gi").pods(110);
        b = b.label("zone", if zone_a { "a" } else { "b" });
        if image {
            b = b.image("registry.example/app:1", 300 * 1024 * 1024);
        }
        if tainted {
            b = b.taint("spot", "yes", TaintEffect::PreferNoSchedule);
        }
        s.add_node(b.build()).unwrap();
    }
    let mut placed = Vec::with_capacity(pods);
    for i in 0..pods {
        let info = replica(i);
        let mut before = Snapshot::default();
        s.cache().lock().update_snapshot(&mut before);
        let batched = s.batch_stats("default-scheduler").map_or(0, |b| b.batched_pods);
        let Ok(binding) = s.schedule_one(&info) else {
            placed.push(None);
            continue;
        };
        let node = binding.node().to_owned();
        if s.batch_stats("default-scheduler").map_or(0, |b| b.batched_pods) > batched {
            let runner = FrameworkRunner::with_handle(profile.clone(), h.clone()).with_snapshot(before);
            let mut state = CycleState::new();
            runner.run_pre_filter(&mut state, &info).unwrap();
            let st = runner.run_filter(&state, &info, &node);
            assert!(st.is_success(), "hinted {node} fails Filter for {}: {st:?}", info.pod.metadata.name);
        }
        binding.run().unwrap();
        placed.push(Some(node));
    }
    let cache = s.cache().lock();
    for i in 0..nodes.len() {
        let ni = cache.node_info(&format!("n{i:03}")).unwrap();
        assert!(ni.requested().milli_cpu <= ni.allocatable().milli_cpu, "n{i:03} over capacity");
    }
    drop(cache);
    (placed, s)
}

/// 40 nodes of 8, 12 or 16 cores, mixed zones, images and taints.
fn mixed_nodes() -> Vec<NodeDef> {
    (0..40).map(|i| ([8, 12, 16][i % 3], i % 4 == 0, i % 5 == 0, i % 7 == 0)).collect()
}

/// A burst of pods four to a node: v1.36 batching can't batch it (the last node
/// still fits, `node_not_full`); with rescoring most pods batch, and every pod lands
/// where batching off puts it, under both deterministic tie-breaks.
#[test]
fn sharing_burst_batches_and_places_as_off() {
    let nodes = mixed_nodes();
    let pods = 200;
    for tie in [TieBreak::First, TieBreak::SmallestName] {
        let (off, _) = burst(&nodes, pods, Mode::Off, tie);
        let (on, s_on) = burst(&nodes, pods, Mode::On, tie);
        let (re, s_re) = burst(&nodes, pods, Mode::Rescoring, tie);
        assert_eq!(re, off, "{tie:?}: rescoring places as batching off");
        assert_eq!(on.iter().filter(|p| p.is_some()).count(), off.iter().filter(|p| p.is_some()).count());
        // 40 nodes of 8, 12 or 16 cores take 4, 6 or 8 pods: 240 in all, so all 200 fit.
        assert!(off.iter().all(Option::is_some), "{tie:?}");
        let v136 = s_on.batch_stats("default-scheduler").unwrap();
        let st = s_re.batch_stats("default-scheduler").unwrap();
        // v1.36 batches only right after a node fills up (the last node must reject).
        assert!(v136.batched_pods <= 40, "{tie:?}: v1.36 batched {}", v136.batched_pods);
        assert!(v136.flushes(FlushReason::NodeNotFull) > 100, "{tie:?}: {v136:?}");
        assert!(st.batched_pods >= 190, "{tie:?}: rescoring batched {} of {pods}", st.batched_pods);
        assert!(st.rescores > 100, "{tie:?}: {st:?}");
        assert_eq!(st.flushes(FlushReason::NodeNotFull), 0, "{tie:?}");
    }
}

/// One pod per node (the v1.36 case): rescoring changes nothing about where pods
/// go, and batches as much as v1.36 does.
#[test]
fn one_per_node_burst_is_unchanged() {
    let nodes: Vec<NodeDef> = (0..30).map(|i| (3, i % 2 == 0, i % 3 == 0, false)).collect();
    let (off, _) = burst(&nodes, 35, Mode::Off, TieBreak::First);
    let (on, s_on) = burst(&nodes, 35, Mode::On, TieBreak::First);
    let (re, s_re) = burst(&nodes, 35, Mode::Rescoring, TieBreak::First);
    assert_eq!(re, off);
    assert_eq!(on, off);
    assert_eq!(off.iter().filter(|p| p.is_some()).count(), 30);
    let (a, b) = (s_on.batch_stats("default-scheduler").unwrap(), s_re.batch_stats("default-scheduler").unwrap());
    assert_eq!(a.batched_pods, b.batched_pods);
    assert_eq!(b.rescores, 0, "the last node never fits again");
}

/// The setting is off unless asked for, in code and in config.
#[test]
fn rescoring_is_off_by_default() {
    let p = Profile::builder("p").build().unwrap();
    assert!(!p.batch_rescoring());
    assert!(Profile::builder("p").batch_rescoring(true).build().unwrap().batch_rescoring());
    let cfg: ProfileConfig = serde_json::from_value(serde_json::json!({"batchRescoring": true})).unwrap();
    assert_eq!(cfg.batch_rescoring, Some(true));
    let h = Handle::new(Arc::new(VirtualClock::new()));
    assert!(
        !default_registry().build_profile(&schedkit::plugins::default_profile_config(), &h).unwrap().batch_rescoring()
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    /// Any cluster and burst: rescoring places every pod as batching off does (the
    /// tie-breaks are deterministic and every node is evaluated below 100 nodes),
    /// every hinted placement passes Filter, and no node ends over capacity.
    #[test]
    fn rescoring_places_as_off(
        nodes in proptest::collection::vec(
            (2i64..10, proptest::bool::ANY, proptest::bool::weighted(0.3), proptest::bool::weighted(0.2)),
            1..30,
        ),
        pods in 1usize..80,
        by_name in proptest::bool::ANY,
    ) {
        let tie = if by_name { TieBreak::SmallestName } else { TieBreak::First };
        let (off, _) = burst(&nodes, pods, Mode::Off, tie);
        let (re, _) = burst(&nodes, pods, Mode::Rescoring, tie);
        prop_assert_eq!(re, off);
    }
}
