//! Opportunistic batching (KEP-5598) end to end: upstream's integration scenarios,
//! the signers' upstream tests, and properties (hint placements pass every Filter,
//! on and off place the same burst, changed nodes flush or are filtered).

use std::sync::Arc;

use proptest::prelude::*;
use schedkit::framework::{
    CycleState, ExtensionPoints, FilterFn, FilterPlugin, FrameworkRunner, Handle, LABELS_SIGNER, Plugin, Profile,
    ProfileConfig, RESOURCES_SIGNER, Registry, SignFragments, SignPlugin, Status, TOLERATIONS_SIGNER, VirtualClock,
};
use schedkit::model::{
    Affinity, NodeAffinity, NodeSelectorOperator, NodeSelectorRequirement, NodeSelectorTerm, Pod, PodAffinity,
    PodAffinityTerm, PreferredSchedulingTerm, TaintEffect,
};
use schedkit::plugins::default_registry;
use schedkit::plugins::inter_pod_affinity::{InterPodAffinity, InterPodAffinityArgs};
use schedkit::plugins::node_resources::{BalancedAllocation, BalancedAllocationArgs, Fit};
use schedkit::plugins::pod_topology_spread::{DefaultingType, PodTopologySpread, PodTopologySpreadArgs};
use schedkit::scheduler::{AttemptOutcome, FlushReason, Scheduler, TieBreak};
use schedkit::snapshot::{PodInfo, Snapshot};
use schedkit::testing::{NodeBuilder, PodBuilder};

/// `DRAExtendedResource` off: while it is on (v1.36's default) NodeResourcesFit and
/// BalancedAllocation refuse to sign, as upstream, and nothing batches.
const GATES: &str = "DRAExtendedResource=false";

fn handle() -> (Handle, VirtualClock) {
    let clock = VirtualClock::new();
    let h = Handle::new(Arc::new(clock.clone()));
    h.set_feature_gates(GATES.parse().unwrap());
    (h, clock)
}

/// Upstream's scheduler-perf advice: cluster-default spreading off.
fn default_config(name: &str, extra_filter: Option<&str>) -> ProfileConfig {
    let mut cfg: ProfileConfig = serde_json::from_value(serde_json::json!({
        "schedulerName": name,
        "pluginConfig": [{"name": "PodTopologySpread", "args": {"defaultingType": "List", "defaultConstraints": []}}],
    }))
    .unwrap();
    cfg.plugins = schedkit::plugins::default_profile_config().plugins;
    if let Some(f) = extra_filter {
        cfg.plugins.filter.enabled.push(schedkit::framework::PluginRef { name: f.into(), weight: None });
    }
    cfg
}

/// Upstream's `testPluginEmptySign`: signs nothing and declines every pod.
struct EmptySign;
impl Plugin for EmptySign {
    fn name(&self) -> &str {
        "emptysign"
    }
    fn register(self: Arc<Self>, points: &mut ExtensionPoints) {
        points.filter(self.clone()).sign(self);
    }
}
impl FilterPlugin for EmptySign {
    fn filter(&self, _: &CycleState, _: &PodInfo, _: &schedkit::snapshot::NodeInfo) -> Status {
        Status::SUCCESS
    }
}
impl SignPlugin for EmptySign {
    fn sign_pod(&self, _: &PodInfo, _: &mut SignFragments) -> Status {
        Status::unschedulable("")
    }
}

fn registry() -> Registry {
    let mut r = default_registry();
    r.register("nosign", |_, _| Ok(Arc::new(FilterFn::new("nosign", |_, _, _| Status::SUCCESS)))).unwrap();
    r.register("emptysign", |_, _| Ok(Arc::new(EmptySign))).unwrap();
    r
}

fn scheduler(profiles: &[(&str, Option<&str>)]) -> (Scheduler, VirtualClock) {
    let (h, clock) = handle();
    let r = registry();
    let mut b = Scheduler::builder().handle(h.clone()).tie_break(TieBreak::First).parallelism(1);
    for &(name, extra) in profiles {
        b = b.profile(r.build_profile(&default_config(name, extra), &h).unwrap());
    }
    (b.build(), clock)
}

/// Upstream test/integration/scheduler/batch/batch_test.go `newPod`: 10 cpu, 4Mi,
/// preferred affinity to the listed nodes with falling weights.
fn scenario_pod(name: &str, affinity: &[&str], selector: Option<(&str, &str)>, scheduler: &str) -> Pod {
    let n = affinity.len() as i32;
    let preferred = affinity
        .iter()
        .enumerate()
        .map(|(i, node)| PreferredSchedulingTerm {
            weight: n - i as i32,
            preference: NodeSelectorTerm {
                match_expressions: vec![],
                match_fields: vec![NodeSelectorRequirement::new("metadata.name", NodeSelectorOperator::In, &[node])],
            },
        })
        .collect();
    let mut b = PodBuilder::new(name).cpu("10").memory("4Mi").with(|p| {
        p.spec.affinity =
            Some(Affinity { node_affinity: Some(NodeAffinity { required: None, preferred }), ..Affinity::default() });
    });
    if let Some((k, v)) = selector {
        b = b.node_selector(k, v);
    }
    if !scheduler.is_empty() {
        b = b.scheduler_name(scheduler);
    }
    b.build()
}

struct Step {
    pod: Pod,
    node: &'static str,
    batched: bool,
}

/// A scenario node: name, max pods, one label.
type NodeDef = (&'static str, i64, Option<(&'static str, &'static str)>);
/// A signer under test, built with `DRAExtendedResource` on or off.
type MakeSigner = Box<dyn Fn(bool) -> Box<dyn SignPlugin>>;

fn run_scenario(name: &str, nodes: &[NodeDef], steps: Vec<Step>) {
    let (mut s, _clock) = scheduler(&[
        ("default-scheduler", None),
        ("mysched", None),
        ("nosign", Some("nosign")),
        ("emptysign", Some("emptysign")),
    ]);
    for &(n, max_pods, label) in nodes {
        let mut b = NodeBuilder::new(n).cpu("100").memory("4Gi").pods(max_pods);
        if let Some((k, v)) = label {
            b = b.label(k, v);
        }
        s.add_node(b.build()).unwrap();
    }
    for step in steps {
        let before = s.batch_stats("default-scheduler").unwrap().batched_pods;
        let pod_name = step.pod.metadata.name.clone();
        s.add_pod(step.pod).unwrap();
        let a = s.schedule_next().unwrap();
        match a.outcome {
            AttemptOutcome::Bound(n) => assert_eq!(n, step.node, "{name}: pod {pod_name}"),
            other => panic!("{name}: pod {pod_name}: {other:?}"),
        }
        let after = s.batch_stats("default-scheduler").unwrap().batched_pods;
        assert_eq!(after > before, step.batched, "{name}: pod {pod_name} batched");
    }
}

/// Upstream test/integration/scheduler/batch/batch_test.go, `TestBatchScenarios`:
/// every enabled scenario, with its names, nodes and expectations.
#[test]
fn batch_scenarios() {
    let st = |pod: Pod, node: &'static str, batched: bool| Step { pod, node, batched };
    let aff3 = |p: &str, pre: &str, sched: &str| {
        scenario_pod(p, &[&format!("{pre}n1"), &format!("{pre}n2"), &format!("{pre}n3")], None, sched)
    };
    run_scenario(
        "one pod one node",
        &[("1ppn-batchn1", 1, None)],
        vec![st(scenario_pod("1ppn-batchp1", &[], None, ""), "1ppn-batchn1", false)],
    );
    run_scenario(
        "distinct pods on distinct nodes",
        &[
            ("dpdn-batchn3", 10, Some(("forpod", "3"))),
            ("dpdn-batchn2", 10, Some(("forpod", "2"))),
            ("dpdn-batchn1", 10, Some(("forpod", "1"))),
        ],
        (1..=3)
            .map(|i| {
                let v = i.to_string();
                let node: &'static str = Box::leak(format!("dpdn-batchn{i}").into_boxed_str());
                st(scenario_pod(&format!("dpdn-batchp{i}"), &[], Some(("forpod", &v)), ""), node, false)
            })
            .collect(),
    );
    let three = [("tpb-batchn3", 1, None), ("tpb-batchn2", 1, None), ("tpb-batchn1", 1, None)];
    run_scenario(
        "three pod batch",
        &three,
        vec![
            st(aff3("tpb-batchp1", "tpb-batch", ""), "tpb-batchn1", false),
            st(aff3("tpb-batchp2", "tpb-batch", ""), "tpb-batchn2", true),
            st(aff3("tpb-batchp3", "tpb-batch", ""), "tpb-batchn3", true),
        ],
    );
    let four = |pre: &'static str, max: i64| -> Vec<NodeDef> {
        ["n4", "n3", "n2", "n1"]
            .iter()
            .map(|n| (&*Box::leak(format!("{pre}{n}").into_boxed_str()), max, None))
            .collect()
    };
    let pair = |p: &str, a: &str, b: &str| scenario_pod(p, &[a, b], None, "");
    run_scenario(
        "two consecutive batches",
        &four("tcb-batch", 1),
        vec![
            st(pair("tcb-batchp1", "tcb-batchn1", "tcb-batchn2"), "tcb-batchn1", false),
            st(pair("tcb-batchp2", "tcb-batchn1", "tcb-batchn2"), "tcb-batchn2", true),
            st(pair("tcb-batchp3", "tcb-batchn4", "tcb-batchn3"), "tcb-batchn4", false),
            st(pair("tcb-batchp4", "tcb-batchn4", "tcb-batchn3"), "tcb-batchn3", true),
        ],
    );
    run_scenario(
        "multiple pods per node means no batching",
        &four("mppn-batch", 2),
        vec![
            st(pair("mppn-batchp1", "mppn-batchn1", "mppn-batchn2"), "mppn-batchn1", false),
            st(pair("mppn-batchp2", "mppn-batchn1", "mppn-batchn2"), "mppn-batchn1", false),
            st(pair("mppn-batchp3", "mppn-batchn4", "mppn-batchn3"), "mppn-batchn4", false),
            st(pair("mppn-batchp4", "mppn-batchn4", "mppn-batchn3"), "mppn-batchn4", false),
        ],
    );
    let three = |pre: &'static str| -> Vec<NodeDef> {
        ["n3", "n2", "n1"].iter().map(|n| (&*Box::leak(format!("{pre}{n}").into_boxed_str()), 1, None)).collect()
    };
    run_scenario(
        "no batching between schedulers",
        &three("bts--batch"),
        vec![
            st(aff3("bts--batchp1", "bts--batch", ""), "bts--batchn1", false),
            st(aff3("bts--batchp2", "bts--batch", "mysched"), "bts--batchn2", false),
        ],
    );
    run_scenario(
        "no batching missing sign",
        &three("nsg-batch"),
        vec![
            st(aff3("nsg-batchp1", "nsg-batch", "nosign"), "nsg-batchn1", false),
            st(aff3("nsg-batchp2", "nsg-batch", "nosign"), "nsg-batchn2", false),
        ],
    );
    run_scenario(
        "no batching empty sign",
        &three("esg-batch"),
        vec![
            st(aff3("esg-batchp1", "esg-batch", "emptysign"), "esg-batchn1", false),
            st(aff3("esg-batchp2", "esg-batch", "emptysign"), "esg-batchn2", false),
        ],
    );
}

/// A profile with a plugin that does not sign never batches, and says which plugin.
#[test]
fn unsigned_plugin_turns_batching_off() {
    let (s, _) = scheduler(&[("default-scheduler", None), ("nosign", Some("nosign"))]);
    assert!(s.batch_stats("default-scheduler").is_some());
    assert!(s.batch_stats("nosign").is_none());
    assert_eq!(s.profiles()[1].batching_blockers(), ["nosign"]);
    assert!(s.profiles()[0].batching_blockers().is_empty());
    // v1.36's defaults: system default spreading and DRAExtendedResource on; every
    // pod is unsignable, so the gate is on but nothing batches.
    let h = Handle::default();
    let p = Profile::kube_default(&h);
    assert!(p.batching_enabled(h.feature_gates()));
    assert_eq!(p.sign_pod(&PodInfo::new(PodBuilder::new("p").cpu("1").build()).unwrap()), None);
}

/// The gate and the per-profile setting.
#[test]
fn gate_and_profile_setting() {
    let (h, _) = handle();
    h.set_feature_gates(format!("{GATES},OpportunisticBatching=false").parse().unwrap());
    let r = registry();
    let on = r.build_profile(&default_config("default-scheduler", None), &h).unwrap();
    assert!(!on.batching_enabled(h.feature_gates()));
    let mut cfg = default_config("default-scheduler", None);
    cfg.opportunistic_batching = Some(true);
    let forced = r.build_profile(&cfg, &h).unwrap();
    assert_eq!(forced.opportunistic_batching(), Some(true));
    assert!(forced.batching_enabled(h.feature_gates()));
    let s = Scheduler::builder().handle(h).profile(forced).build();
    assert!(s.batch_stats("default-scheduler").is_some());
}

fn fit(dra_extended: bool) -> Fit {
    Fit::from_config(None).unwrap().with_feature_gates(format!("DRAExtendedResource={dra_extended}").parse().unwrap())
}

fn fragments_of(p: &dyn SignPlugin, pod: Pod) -> (Status, SignFragments) {
    let mut f = SignFragments::new();
    let s = p.sign_pod(&PodInfo::new(pod).unwrap(), &mut f);
    (s, f)
}

/// Upstream noderesources/fit_test.go `TestFitSignPod` and
/// balanced_allocation_test.go `TestBalancedAllocationSignPod`: the requests fragment,
/// and Unschedulable while `DRAExtendedResource` is on.
#[test]
#[expect(clippy::many_single_char_names, reason = "upstream's test, case after case")]
fn fit_and_balanced_allocation_sign_pod() {
    let ba = |dra: bool| {
        BalancedAllocation::new(&BalancedAllocationArgs::default())
            .unwrap()
            .with_feature_gates(format!("DRAExtendedResource={dra}").parse().unwrap())
    };
    let plugins: [(&str, MakeSigner); 2] =
        [("Fit", Box::new(|d| Box::new(fit(d)))), ("BalancedAllocation", Box::new(move |d| Box::new(ba(d))))];
    for (name, make) in plugins {
        let p = make(false);
        // "pod with CPU and memory requests"
        let (s, f) = fragments_of(&*p, PodBuilder::new("p").cpu("1000m").memory("2000").build());
        assert!(s.is_success(), "{name}");
        assert_eq!(f.keys().collect::<Vec<_>>(), [RESOURCES_SIGNER], "{name}");
        let one = f.value(RESOURCES_SIGNER).unwrap().to_vec();
        // "best-effort pod with no requests": signable, a different value.
        let (s, f) = fragments_of(&*p, PodBuilder::new("p").build());
        assert!(s.is_success(), "{name}");
        assert_ne!(f.value(RESOURCES_SIGNER).unwrap(), one, "{name}");
        // "pod with multiple containers": the computed sum, whatever the order.
        let two = |first: (&str, &str), second: (&str, &str)| {
            PodBuilder::new("p")
                .container("c1")
                .cpu(first.0)
                .memory(first.1)
                .container("c2")
                .cpu(second.0)
                .memory(second.1)
                .build()
        };
        let (s, f) = fragments_of(&*p, two(("500m", "1000"), ("1500m", "3000")));
        assert!(s.is_success(), "{name}");
        let (_, g) = fragments_of(&*p, two(("1500m", "3000"), ("500m", "1000")));
        assert_eq!(f.value(RESOURCES_SIGNER), g.value(RESOURCES_SIGNER), "{name}");
        let (_, h) = fragments_of(&*p, two(("1500m", "3000"), ("500m", "1001")));
        assert_ne!(f.value(RESOURCES_SIGNER), h.value(RESOURCES_SIGNER), "{name}");
        // "DRA extended resource enabled - returns unschedulable"
        let (s, f) = fragments_of(&*make(true), PodBuilder::new("p").cpu("1000m").memory("2000").build());
        assert_eq!(s.code(), schedkit::framework::Code::Unschedulable, "{name}");
        assert_eq!(s.message(), "signature disabled when dra extended resources enabled");
        assert_eq!(f.keys().count(), 0);
    }
}

/// Upstream interpodaffinity/plugin_test.go `TestPodAffinitySignature`.
#[test]
fn pod_affinity_signature() {
    let (h, _) = handle();
    let labelled = || PodBuilder::new("p").label("foo", "bar");
    let plain = InterPodAffinity::new(InterPodAffinityArgs::default(), &h).unwrap();
    let ignore = InterPodAffinity::new(
        InterPodAffinityArgs { ignore_preferred_terms_of_existing_pods: true, ..InterPodAffinityArgs::default() },
        &h,
    )
    .unwrap();
    // "no affinity, default settings": the labels.
    let (s, f) = fragments_of(&plain, labelled().build());
    assert!(s.is_success());
    assert_eq!(f.keys().collect::<Vec<_>>(), [LABELS_SIGNER]);
    let (_, other) = fragments_of(&plain, PodBuilder::new("p").label("foo", "baz").build());
    assert_ne!(f.value(LABELS_SIGNER), other.value(LABELS_SIGNER));
    // "no affinity, ignore setting set": nothing.
    let (s, f) = fragments_of(&ignore, labelled().build());
    assert!(s.is_success());
    assert_eq!(f.keys().count(), 0);
    // "affinity set": not signable.
    let with_affinity = labelled()
        .with(|p| {
            p.spec.affinity = Some(Affinity {
                pod_affinity: Some(PodAffinity {
                    required: vec![PodAffinityTerm { topology_key: "zone".into(), ..PodAffinityTerm::default() }],
                    preferred: vec![],
                }),
                ..Affinity::default()
            });
        })
        .build();
    let (s, _) = fragments_of(&plain, with_affinity);
    assert!(!s.is_success());
}

/// Upstream podtopologyspread `SignPod`: constraints, or any default constraints
/// (the system defaults included), make a pod unsignable.
#[test]
fn pod_topology_spread_sign_pod() {
    let (h, _) = handle();
    let system = PodTopologySpread::new(PodTopologySpreadArgs::default(), &h).unwrap();
    let none = PodTopologySpread::new(
        PodTopologySpreadArgs { defaulting_type: DefaultingType::List, default_constraints: vec![] },
        &h,
    )
    .unwrap();
    let pod = || PodBuilder::new("p").label("app", "web").build();
    let (s, _) = fragments_of(&system, pod());
    assert_eq!(s.message(), "pods with default topology constraints are not signable");
    let (s, f) = fragments_of(&none, pod());
    assert!(s.is_success());
    assert_eq!(f.keys().count(), 0);
    let constrained = PodBuilder::new("p")
        .with(|p| {
            p.spec.topology_spread_constraints =
                vec![serde_json::from_value(serde_json::json!({"maxSkew": 1, "topologyKey": "zone"})).unwrap()];
        })
        .build();
    let (s, _) = fragments_of(&none, constrained);
    assert_eq!(s.message(), "pods with topology constraints are not signable");
}

/// Tolerations sign in any order; a different toleration signs differently.
#[test]
fn taint_toleration_signs_sorted_tolerations() {
    let tt = schedkit::plugins::taint_toleration::TaintToleration;
    let a = PodBuilder::new("p")
        .toleration("a", Some("1"), Some(TaintEffect::NoSchedule))
        .toleration("b", None, None)
        .build();
    let b = PodBuilder::new("p")
        .toleration("b", None, None)
        .toleration("a", Some("1"), Some(TaintEffect::NoSchedule))
        .build();
    let c = PodBuilder::new("p").toleration("b", None, None).toleration("a", Some("1"), None).build();
    let v = |p: Pod| fragments_of(&tt, p).1.value(TOLERATIONS_SIGNER).unwrap().to_vec();
    assert_eq!(v(a.clone()), v(b));
    assert_ne!(v(a), v(c));
}

/// Signing is once per pod, at enqueue, and never shared across profiles: the same
/// pod signs differently under two profiles.
#[test]
fn signature_includes_the_scheduler_name() {
    let (h, _) = handle();
    let r = registry();
    let a = r.build_profile(&default_config("a", None), &h).unwrap();
    let b = r.build_profile(&default_config("b", None), &h).unwrap();
    let pod = PodInfo::new(PodBuilder::new("p").cpu("1").build()).unwrap();
    let (sa, sb) = (a.sign_pod(&pod).unwrap(), b.sign_pod(&pod).unwrap());
    assert_ne!(sa, sb);
    let again = PodInfo::new(PodBuilder::new("q").cpu("1").build()).unwrap();
    assert_eq!(a.sign_pod(&again).unwrap(), sa, "name and uid are not signed");
}

fn one_per_node(s: &mut Scheduler, n: usize) {
    for i in 0..n {
        s.add_node(NodeBuilder::new(&format!("n{i:03}")).cpu("4").memory("8Gi").pods(110).build()).unwrap();
    }
}

fn replica(i: usize) -> Pod {
    PodBuilder::new(&format!("r{i:04}")).cpu("3").memory("1Gi").label("app", "web").build()
}

/// A node changed between two pods of a batch (tainted, cordoned, shrunk) is
/// filtered out of the hint: the pod goes elsewhere, never to the changed node.
#[test]
fn changed_node_between_pods_is_filtered() {
    for change in ["taint", "cordon", "shrink", "delete"] {
        let (mut s, _) = scheduler(&[("default-scheduler", None)]);
        one_per_node(&mut s, 5);
        s.add_pod(replica(0)).unwrap();
        let used = match s.schedule_next().unwrap().outcome {
            AttemptOutcome::Bound(n) => n,
            other => panic!("{change}: {other:?}"),
        };
        // Change every node the pod didn't use but one: the best remaining (the
        // hint) is changed, and the pod must go to the one clean node.
        let hint_candidates: Vec<String> = (0..5).map(|i| format!("n{i:03}")).filter(|n| *n != used).collect();
        for name in &hint_candidates[..hint_candidates.len() - 1] {
            let mut b = NodeBuilder::new(name).cpu("4").memory("8Gi").pods(110);
            match change {
                "taint" => b = b.taint("dedicated", "x", TaintEffect::NoSchedule),
                "cordon" => b = b.unschedulable(),
                "shrink" => b = NodeBuilder::new(name).cpu("2").memory("8Gi").pods(110),
                _ => {}
            }
            if change == "delete" {
                s.events().remove_node(name).unwrap();
            } else {
                s.events().update_node(b.build()).unwrap();
            }
        }
        s.add_pod(replica(1)).unwrap();
        let second = s.schedule_next().unwrap();
        let clean = hint_candidates.last().unwrap();
        match second.outcome {
            AttemptOutcome::Bound(n) => assert_eq!(&n, clean, "{change}"),
            other => panic!("{change}: {other:?}"),
        }
        let st = s.batch_stats("default-scheduler").unwrap();
        if change == "delete" {
            // The hinted node is gone: the hint fails to resolve, a full scan runs.
            assert_eq!(st.batched_pods + st.attempts(schedkit::scheduler::BatchAttempt::HintNotUsed), 1, "{change}");
        } else {
            assert_eq!(st.batched_pods, 0, "{change}: the changed hint is not used");
        }
    }
}

/// A changed node the last pod used (now able to host one more) flushes the batch
/// as `node_not_full`; a deleted one as `node_missing`.
#[test]
fn changed_last_node_flushes() {
    for (change, reason) in [("grow", FlushReason::NodeNotFull), ("delete", FlushReason::NodeMissing)] {
        let (mut s, _) = scheduler(&[("default-scheduler", None)]);
        one_per_node(&mut s, 4);
        s.add_pod(replica(0)).unwrap();
        let used = match s.schedule_next().unwrap().outcome {
            AttemptOutcome::Bound(n) => n,
            other => panic!("{other:?}"),
        };
        if change == "grow" {
            s.events().update_node(NodeBuilder::new(&used).cpu("8").memory("8Gi").pods(110).build()).unwrap();
        } else {
            // Delete the pod's node: the pod goes with it.
            s.events().remove_node(&used).unwrap();
        }
        s.add_pod(replica(1)).unwrap();
        assert!(matches!(s.schedule_next().unwrap().outcome, AttemptOutcome::Bound(_)));
        assert_eq!(s.batch_stats("default-scheduler").unwrap().flushes(reason), 1, "{change}");
    }
}

/// Runs a burst; returns (bound, batched) and checks every placement through a
/// hint against an independent Filter run on the snapshot taken just before it.
fn burst(nodes: &[(i64, bool, bool)], pods: usize, batching: bool, kinds: usize) -> (usize, u64) {
    let (h, _) = handle();
    let r = registry();
    let mut cfg = default_config("default-scheduler", None);
    cfg.opportunistic_batching = Some(batching);
    let profile = r.build_profile(&cfg, &h).unwrap();
    let mut s = Scheduler::builder().handle(h.clone()).profile(profile.clone()).parallelism(1).build();
    for (i, &(cpu, tainted, cordoned)) in nodes.iter().enumerate() {
        let mut b = NodeBuilder::new(&format!("n{i:03}")).cpu(&cpu.to_string()).memory("16Gi").pods(110);
        if tainted {
            b = b.taint("gpu", "yes", TaintEffect::NoSchedule);
        }
        if cordoned {
            b = b.unschedulable();
        }
        s.add_node(b.build()).unwrap();
    }
    let mut bound = 0;
    for i in 0..pods {
        let mut p = PodBuilder::new(&format!("p{i:04}")).cpu("3").memory("1Gi");
        if kinds > 1 && i % kinds == 1 {
            p = p.toleration("gpu", Some("yes"), Some(TaintEffect::NoSchedule));
        }
        let info = PodInfo::new(p.build()).unwrap();
        let mut before = Snapshot::default();
        s.cache().lock().update_snapshot(&mut before);
        let batched_before = s.batch_stats("default-scheduler").map_or(0, |b| b.batched_pods);
        let Ok(binding) = s.schedule_one(&info) else { continue };
        let node = binding.node().to_owned();
        if s.batch_stats("default-scheduler").map_or(0, |b| b.batched_pods) > batched_before {
            let runner = FrameworkRunner::with_handle(profile.clone(), h.clone()).with_snapshot(before);
            let mut state = CycleState::new();
            runner.run_pre_filter(&mut state, &info).unwrap();
            let st = runner.run_filter(&state, &info, &node);
            assert!(st.is_success(), "hinted {node} fails Filter for {}: {st:?}", info.pod.metadata.name);
        }
        binding.run().unwrap();
        bound += 1;
    }
    // No node over capacity.
    let cache = s.cache().lock();
    for i in 0..nodes.len() {
        let ni = cache.node_info(&format!("n{i:03}")).unwrap();
        assert!(ni.requested().milli_cpu <= ni.allocatable().milli_cpu);
    }
    (bound, s.batch_stats("default-scheduler").map_or(0, |b| b.batched_pods))
}

/// A burst of identical one-per-node replicas places the same number of pods with
/// batching on and off, and batching does batch.
#[test]
fn burst_on_and_off_place_the_same() {
    let nodes = vec![(4, false, false); 40];
    let (on, batched) = burst(&nodes, 50, true, 1);
    let (off, none) = burst(&nodes, 50, false, 1);
    assert_eq!((on, off), (40, 40));
    assert_eq!(none, 0);
    assert!(batched >= 38, "batched {batched}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Every pod placed through a hint passes every Filter on that node at that
    /// moment; on and off place the same number of a one-per-node burst; no node
    /// ends over capacity.
    #[test]
    fn hinted_placements_pass_filter(
        nodes in proptest::collection::vec((3i64..8, proptest::bool::weighted(0.2), proptest::bool::weighted(0.1)), 1..30),
        pods in 1usize..40,
        kinds in 1usize..3,
    ) {
        let (on, _) = burst(&nodes, pods, true, kinds);
        let (off, _) = burst(&nodes, pods, false, kinds);
        if kinds == 1 && nodes.iter().all(|n| n.0 < 6) {
            prop_assert_eq!(on, off);
        }
    }
}

/// Upstream's batch metrics, read through the latency recorder (and, with the
/// `metrics` feature, its OpenMetrics text).
#[test]
#[expect(clippy::many_single_char_names, reason = "short-lived handles")]
fn batch_metrics_are_recorded() {
    use schedkit::framework::{BatchAttempt, LatencyRecorder};
    let (h, _) = handle();
    let r = registry();
    let recorder = Arc::new(LatencyRecorder::new());
    let profile = r.build_profile(&default_config("default-scheduler", None), &h).unwrap();
    let mut s = Scheduler::builder().handle(h).profile(profile).latency_recorder(recorder.clone()).build();
    one_per_node(&mut s, 6);
    for i in 0..4 {
        s.add_pod(replica(i)).unwrap();
    }
    // A pod of another shape breaks the batch: `pod_incompatible`.
    s.add_pod(PodBuilder::new("other").cpu("3").memory("2Gi").build()).unwrap();
    let run = s.run_until_idle();
    assert_eq!(run.bound, 5);
    let m = recorder.scheduler_metrics().profile("default-scheduler");
    let b = m.batch();
    assert_eq!(b.attempts(BatchAttempt::HintUsed), 3);
    assert_eq!(b.attempts(BatchAttempt::NoHint), 2);
    assert_eq!(b.flushed(FlushReason::PodIncompatible), 1);
    assert_eq!(b.hint_duration(true).count(), 3);
    assert_eq!(b.hint_duration(false).count(), 2);
    assert_eq!(b.store_duration().count(), 5);
    let st = s.batch_stats("default-scheduler").unwrap();
    assert_eq!(st.attempts(BatchAttempt::HintUsed), 3);
    assert_eq!(st.batched_pods, 3);
    #[cfg(feature = "metrics")]
    {
        let text = recorder.encode_openmetrics();
        assert!(
            text.contains(r#"scheduler_batch_attempts_total{profile="default-scheduler",result="hint_used"} 3"#),
            "{text}"
        );
        assert!(text.contains(
            r#"scheduler_batch_cache_flushed_total{profile="default-scheduler",reason="pod_incompatible"} 1"#
        ));
        assert!(text.contains(
            r#"scheduler_get_node_hint_duration_seconds_count{hinted="hint",profile="default-scheduler"} 3"#
        ));
        assert!(
            text.contains(r#"scheduler_store_schedule_results_duration_seconds_count{profile="default-scheduler"} 5"#)
        );
    }
}
