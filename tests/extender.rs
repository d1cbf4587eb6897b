//! Scheduler extenders in the cycle, in process (no network): upstream's
//! `pkg/scheduler/extender_test.go` (`TestSchedulerWithExtenders` tests 1-11,
//! `TestIsInterested`) with its fake extenders (`pkg/scheduler/testing/framework`
//! `fake_extender.go`), plus extender binding (`extendersBinding` in
//! `schedule_one.go`) and the `ignoredByScheduler` resources `buildExtenders` hands
//! to NodeResourcesFit.

#![expect(
    clippy::unnecessary_wraps,
    reason = "the fake predicates and prioritizers share one fn-pointer type, as upstream's"
)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use schedkit::config::{Extender as ExtenderConfig, ExtenderManagedResource, KubeSchedulerConfiguration};
use schedkit::framework::extender::{
    EXTENDER_NAME, ExtenderBinding, ExtenderError, ExtenderFilterResult, HostPriority, Victims,
    pod_names_managed_resource,
};
use schedkit::framework::preemption::Candidate;
use schedkit::framework::{
    BindPlugin, CycleState, Extender, ExtensionPoints, FilterFn, Handle, Plugin, Profile, ScoreFn, Status,
};
use schedkit::model::Symbol;
use schedkit::plugins::default_registry;
use schedkit::scheduler::{ScheduleError, Scheduler, TieBreak};
use schedkit::snapshot::{NodeInfo, PodInfo};
use schedkit::testing::{NodeBuilder, PodBuilder};

/// A fake predicate: `Ok(true)` fits, `Ok(false)` does not, `Err` fails the call.
type Predicate = fn(&PodInfo, &NodeInfo) -> Result<bool, String>;
/// A fake prioritizer: a score per node, or an error.
type Prioritizer = fn(&PodInfo, &[&NodeInfo]) -> Result<Vec<i64>, String>;

fn true_predicate(_: &PodInfo, _: &NodeInfo) -> Result<bool, String> {
    Ok(true)
}
fn false_predicate(_: &PodInfo, _: &NodeInfo) -> Result<bool, String> {
    Ok(false)
}
fn error_predicate(_: &PodInfo, _: &NodeInfo) -> Result<bool, String> {
    Err("some error".into())
}
fn node1_predicate(_: &PodInfo, n: &NodeInfo) -> Result<bool, String> {
    Ok(n.node().name() == "node1")
}
fn node2_predicate(_: &PodInfo, n: &NodeInfo) -> Result<bool, String> {
    Ok(n.node().name() == "node2")
}
fn error_prioritizer(_: &PodInfo, _: &[&NodeInfo]) -> Result<Vec<i64>, String> {
    Err("some error".into())
}
/// 10 for node1, 1 for the others (upstream `Node1PrioritizerExtender`).
fn node1_prioritizer(_: &PodInfo, nodes: &[&NodeInfo]) -> Result<Vec<i64>, String> {
    Ok(nodes.iter().map(|n| if n.node().name() == "node1" { 10 } else { 1 }).collect())
}
fn node2_prioritizer(_: &PodInfo, nodes: &[&NodeInfo]) -> Result<Vec<i64>, String> {
    Ok(nodes.iter().map(|n| if n.node().name() == "node2" { 10 } else { 1 }).collect())
}

/// Upstream's `FakeExtender`: predicates and weighted prioritizers.
#[derive(Default)]
struct FakeExtender {
    name: &'static str,
    predicates: Vec<Predicate>,
    prioritizers: Vec<(Prioritizer, i64)>,
    weight: i64,
    uninterested: bool,
    ignorable: bool,
    binder: Option<fn() -> Result<(), String>>,
    binds: AtomicUsize,
    filter_calls: AtomicUsize,
}

impl Extender for FakeExtender {
    fn name(&self) -> &str {
        self.name
    }

    fn filter(&self, pod: &PodInfo, nodes: &[&NodeInfo]) -> Result<ExtenderFilterResult, ExtenderError> {
        self.filter_calls.fetch_add(1, Ordering::SeqCst);
        let mut r = ExtenderFilterResult::default();
        for (k, n) in nodes.iter().enumerate() {
            let mut fits = true;
            for p in &self.predicates {
                if !p(pod, n).map_err(ExtenderError::Reported)? {
                    fits = false;
                    break;
                }
            }
            if fits {
                r.passed.push(k);
            } else {
                r.failed
                    .insert(n.node().name().to_owned(), format!("{}: node {:?} failed", self.name, n.node().name()));
            }
        }
        Ok(r)
    }

    fn prioritize(&self, pod: &PodInfo, nodes: &[&NodeInfo]) -> Result<(Vec<HostPriority>, i64), ExtenderError> {
        let mut combined = vec![0i64; nodes.len()];
        for (f, w) in &self.prioritizers {
            let scores = f(pod, nodes).map_err(ExtenderError::Reported)?;
            for (c, s) in combined.iter_mut().zip(scores) {
                *c += s * w;
            }
        }
        let list = nodes.iter().zip(combined).map(|(n, score)| HostPriority { host: n.node().name().into(), score });
        Ok((list.collect(), self.weight))
    }

    fn bind(&self, _: &ExtenderBinding) -> Result<(), ExtenderError> {
        self.binds.fetch_add(1, Ordering::SeqCst);
        (self.binder.expect("a binder"))().map_err(ExtenderError::Reported)
    }

    fn is_binder(&self) -> bool {
        self.binder.is_some()
    }

    fn is_ignorable(&self) -> bool {
        self.ignorable
    }

    fn is_interested(&self, _: &PodInfo) -> bool {
        !self.uninterested
    }
}

/// Upstream `TrueFilter`.
fn true_filter() -> impl Plugin {
    FilterFn::new("TrueFilter", |_, _, _| Status::SUCCESS)
}

/// Upstream `Node2Prioritizer` plugin: 100 for node2, 10 for the others.
fn node2_prioritizer_plugin() -> impl Plugin {
    ScoreFn::new("Node2Prioritizer", |_, _, n| if n.node().name() == "node2" { 100 } else { 10 })
}

fn equal_prioritizer_plugin() -> impl Plugin {
    ScoreFn::new("EqualPrioritizerPlugin", |_, _, _| 1)
}

struct Case {
    name: &'static str,
    profile: Profile,
    extenders: Vec<FakeExtender>,
    nodes: &'static [&'static str],
    /// `None`: an error is expected.
    want: Option<&'static str>,
}

fn run(case: Case) -> (Result<String, ScheduleError>, Vec<Arc<FakeExtender>>) {
    let exts: Vec<Arc<FakeExtender>> = case.extenders.into_iter().map(Arc::new).collect();
    let mut b = Scheduler::builder().profile(case.profile).tie_break(TieBreak::First);
    for e in &exts {
        b = b.extender(e.clone());
    }
    let mut s = b.build();
    for n in case.nodes {
        s.add_node(NodeBuilder::new(n).build()).unwrap();
    }
    let r = s.schedule_pod(PodBuilder::new("p").build()).map(|b| {
        let node = b.node().to_owned();
        b.abort("test");
        node
    });
    (r, exts)
}

fn profile(
    plugins: impl FnOnce(schedkit::framework::ProfileBuilder) -> schedkit::framework::ProfileBuilder,
) -> Profile {
    plugins(Profile::builder("default-scheduler")).build().unwrap()
}

/// `TestSchedulerWithExtenders` (pkg/scheduler/extender_test.go).
#[test]
fn scheduler_with_extenders() {
    let fe = |name, predicates: Vec<Predicate>| FakeExtender { name, predicates, ..FakeExtender::default() };
    let cases = vec![
        Case {
            name: "test 1",
            profile: profile(|b| b.plugin(true_filter())),
            extenders: vec![fe("FakeExtender1", vec![true_predicate]), fe("FakeExtender2", vec![error_predicate])],
            nodes: &["node1", "node2"],
            want: None,
        },
        Case {
            name: "test 2",
            profile: profile(|b| b.plugin(true_filter())),
            extenders: vec![fe("FakeExtender1", vec![true_predicate]), fe("FakeExtender2", vec![false_predicate])],
            nodes: &["node1", "node2"],
            want: None,
        },
        Case {
            name: "test 3",
            profile: profile(|b| b.plugin(true_filter()).weighted(equal_prioritizer_plugin(), 1)),
            extenders: vec![fe("FakeExtender1", vec![true_predicate]), fe("FakeExtender2", vec![node1_predicate])],
            nodes: &["node1", "node2"],
            want: Some("node1"),
        },
        Case {
            name: "test 4",
            profile: profile(|b| b.plugin(true_filter())),
            extenders: vec![fe("FakeExtender1", vec![node2_predicate]), fe("FakeExtender2", vec![node1_predicate])],
            nodes: &["node1", "node2"],
            want: None,
        },
        Case {
            name: "test 5",
            profile: profile(|b| b.plugin(true_filter())),
            extenders: vec![FakeExtender {
                name: "FakeExtender1",
                predicates: vec![true_predicate],
                prioritizers: vec![(error_prioritizer, 10)],
                weight: 1,
                ..FakeExtender::default()
            }],
            nodes: &["node1"],
            want: Some("node1"),
        },
        Case {
            name: "test 6",
            profile: profile(|b| b.plugin(true_filter())),
            extenders: vec![
                FakeExtender {
                    name: "FakeExtender1",
                    predicates: vec![true_predicate],
                    prioritizers: vec![(node1_prioritizer, 10)],
                    weight: 1,
                    ..FakeExtender::default()
                },
                FakeExtender {
                    name: "FakeExtender2",
                    predicates: vec![true_predicate],
                    prioritizers: vec![(node2_prioritizer, 10)],
                    weight: 5,
                    ..FakeExtender::default()
                },
            ],
            nodes: &["node1", "node2"],
            want: Some("node2"),
        },
        Case {
            name: "test 7",
            profile: profile(|b| b.plugin(true_filter()).weighted(node2_prioritizer_plugin(), 20)),
            extenders: vec![FakeExtender {
                name: "FakeExtender1",
                predicates: vec![true_predicate],
                prioritizers: vec![(node1_prioritizer, 10)],
                weight: 1,
                ..FakeExtender::default()
            }],
            nodes: &["node1", "node2"],
            want: Some("node2"),
        },
        Case {
            name: "test 8",
            profile: profile(|b| b.plugin(true_filter()).weighted(node2_prioritizer_plugin(), 1)),
            extenders: vec![FakeExtender {
                name: "FakeExtender1",
                predicates: vec![error_predicate],
                prioritizers: vec![(error_prioritizer, 10)],
                uninterested: true,
                ..FakeExtender::default()
            }],
            nodes: &["node1", "node2"],
            want: Some("node2"),
        },
        Case {
            name: "test 9",
            profile: profile(|b| b.plugin(true_filter()).weighted(equal_prioritizer_plugin(), 1)),
            extenders: vec![
                FakeExtender { ignorable: true, ..fe("FakeExtender1", vec![error_predicate]) },
                fe("FakeExtender2", vec![node1_predicate]),
            ],
            nodes: &["node1", "node2"],
            want: Some("node1"),
        },
        Case {
            name: "test 10 - no scoring, extender filters configured, multiple feasible nodes are evaluated",
            profile: profile(|b| b.plugin(true_filter())),
            extenders: vec![fe("FakeExtender1", vec![true_predicate]), fe("FakeExtender2", vec![node1_predicate])],
            nodes: &["node1", "node2"],
            want: Some("node1"),
        },
        Case {
            name: "test 11 - no scoring, no prefilters or  extender filters configured, a single feasible node is evaluated",
            profile: profile(|b| b),
            extenders: vec![FakeExtender { name: "FakeExtender1", binder: Some(|| Ok(())), ..FakeExtender::default() }],
            nodes: &["node1", "node2"],
            want: Some("node1"),
        },
    ];
    for case in cases {
        let name = case.name;
        let want = case.want;
        let (got, _) = run(case);
        match (want, got) {
            (None, Err(_)) => {}
            (None, Ok(n)) => panic!("{name}: scheduled to {n}, want an error"),
            (Some(w), Ok(n)) => assert_eq!(n, w, "{name}"),
            (Some(w), Err(e)) => panic!("{name}: {e}, want {w}"),
        }
    }
}

/// Test 1's error is upstream's: the extender's own message fails the cycle (an Error,
/// not a FitError); test 2's rejection is a FitError naming `Extender` and each node's
/// reason.
#[test]
fn extender_errors_and_rejections_are_upstreams() {
    let fe = |name, predicates: Vec<Predicate>| FakeExtender { name, predicates, ..FakeExtender::default() };
    let (r, _) = run(Case {
        name: "error",
        profile: profile(|b| b.plugin(true_filter())),
        extenders: vec![fe("FakeExtender2", vec![error_predicate])],
        nodes: &["node1", "node2"],
        want: None,
    });
    match r.unwrap_err() {
        ScheduleError::Plugin { status, .. } => {
            assert_eq!(status.code(), schedkit::framework::Code::Error);
            assert_eq!(status.message(), "some error");
        }
        e => panic!("{e}"),
    }
    let (r, _) = run(Case {
        name: "rejection",
        profile: profile(|b| b.plugin(true_filter())),
        extenders: vec![fe("FakeExtender2", vec![false_predicate])],
        nodes: &["node1", "node2"],
        want: None,
    });
    let e = r.unwrap_err();
    let fit = e.fit_error().expect("a FitError");
    assert_eq!(fit.diagnosis.unschedulable_plugins, [EXTENDER_NAME]);
    let msg = e.to_string();
    assert!(msg.contains("0/2 nodes are available"), "{msg}");
    assert!(msg.contains("FakeExtender2: node \"node1\" failed"), "{msg}");
}

/// Sequential filtering on the shrinking list: an extender after one that left no
/// node is not called (upstream's loop breaks on an empty list).
#[test]
fn extenders_stop_when_no_node_is_left() {
    let (r, exts) = run(Case {
        name: "stop",
        profile: profile(|b| b.plugin(true_filter())),
        extenders: vec![
            FakeExtender { name: "first", predicates: vec![false_predicate], ..FakeExtender::default() },
            FakeExtender { name: "second", predicates: vec![true_predicate], ..FakeExtender::default() },
        ],
        nodes: &["node1", "node2"],
        want: None,
    });
    assert!(r.is_err());
    assert_eq!(exts[0].filter_calls.load(Ordering::SeqCst), 1);
    assert_eq!(exts[1].filter_calls.load(Ordering::SeqCst), 0);
}

/// Ignorable extenders are called after the others whatever the configured order
/// (upstream `buildExtenders`).
#[test]
fn ignorable_extenders_go_last() {
    let a: Arc<dyn Extender> = Arc::new(FakeExtender { name: "a", ignorable: true, ..FakeExtender::default() });
    let b: Arc<dyn Extender> = Arc::new(FakeExtender { name: "b", ..FakeExtender::default() });
    let c: Arc<dyn Extender> = Arc::new(FakeExtender { name: "c", ..FakeExtender::default() });
    let set = schedkit::framework::Extenders::new([a, b, c]);
    let names: Vec<&str> = set.list().iter().map(|e| e.name()).collect();
    assert_eq!(names, ["b", "c", "a"]);
}

struct CountingBinder(Arc<AtomicUsize>);

impl Plugin for CountingBinder {
    fn name(&self) -> &str {
        "CountingBinder"
    }
    fn register(self: Arc<Self>, points: &mut ExtensionPoints) {
        points.bind(self);
    }
}

impl BindPlugin for CountingBinder {
    fn bind(&self, _: &mut CycleState, _: &PodInfo, _: &str) -> Status {
        self.0.fetch_add(1, Ordering::SeqCst);
        Status::SUCCESS
    }
}

/// `extendersBinding`: the first interested binder binds and the Bind plugins are
/// skipped; an ignorable binder's error passes to the next; a plain error fails the
/// binding cycle with the extender's message; with no interested binder the Bind
/// plugins run.
#[test]
fn extenders_bind_before_the_bind_plugins() {
    let bind_case = |binders: Vec<FakeExtender>| {
        let plugin_binds = Arc::new(AtomicUsize::new(0));
        let p = Profile::builder("default-scheduler").plugin(CountingBinder(plugin_binds.clone())).build().unwrap();
        let exts: Vec<Arc<FakeExtender>> = binders.into_iter().map(Arc::new).collect();
        let mut b = Scheduler::builder().profile(p);
        for e in &exts {
            b = b.extender(e.clone());
        }
        let mut s = b.build();
        s.add_node(NodeBuilder::new("node1").build()).unwrap();
        let r = s.schedule_pod(PodBuilder::new("p").build()).unwrap().run();
        let ext_binds: Vec<usize> = exts.iter().map(|e| e.binds.load(Ordering::SeqCst)).collect();
        (r.map(|_| ()).map_err(|e| e.status.message()), ext_binds, plugin_binds.load(Ordering::SeqCst))
    };
    let ok = || FakeExtender { name: "ok", binder: Some(|| Ok(())), ..FakeExtender::default() };
    let failing = |ignorable| FakeExtender {
        name: "failing",
        binder: Some(|| Err("bind refused".to_owned())),
        ignorable,
        ..FakeExtender::default()
    };
    assert_eq!(bind_case(vec![ok()]), (Ok(()), vec![1], 0));
    // Ignorable ones go last, so the failing ignorable binder is tried second here.
    assert_eq!(bind_case(vec![failing(true), ok()]), (Ok(()), vec![0, 1], 0));
    assert_eq!(bind_case(vec![failing(true)]), (Ok(()), vec![1], 1));
    assert_eq!(bind_case(vec![failing(false), ok()]), (Err("bind refused".to_owned()), vec![1, 0], 0));
    let uninterested = FakeExtender { uninterested: true, ..ok() };
    assert_eq!(bind_case(vec![uninterested]), (Ok(()), vec![0], 1));
}

/// `TestIsInterested` (pkg/scheduler/extender_test.go).
#[test]
fn is_interested() {
    let memory = [Symbol::intern("memory")];
    let pod = |b: PodBuilder| PodInfo::new(b.build()).unwrap();
    let cases: Vec<(&str, &[Symbol], PodInfo, bool)> = vec![
        ("Empty managed resources", &[], pod(PodBuilder::new("p")), true),
        ("Managed memory, empty resources", &memory, pod(PodBuilder::new("p").container("app")), false),
        ("Managed memory, container memory with Requests", &memory, pod(PodBuilder::new("p").memory("0")), true),
        (
            "Managed memory, container memory with Limits",
            &memory,
            pod(PodBuilder::new("p").with(|p| {
                p.spec.containers[0].resources.limits =
                    schedkit::model::ResourceList::parse([("memory", "0")]).unwrap();
            })),
            true,
        ),
        (
            "Managed memory, init container memory",
            &memory,
            pod(PodBuilder::new("p").container("app").with(|p| {
                let mut init = schedkit::model::Container::default();
                init.resources.requests = schedkit::model::ResourceList::parse([("memory", "0")]).unwrap();
                p.spec.init_containers.push(init);
            })),
            true,
        ),
    ];
    for (label, managed, pod, want) in cases {
        assert_eq!(pod_names_managed_resource(&pod, managed), want, "{label}");
    }
}

/// Upstream `buildExtenders`: resources an extender manages with
/// `ignoredByScheduler` replace NodeResourcesFit's `ignoredResources` in every
/// profile, so a pod asking for them fits a node that has none.
#[test]
fn ignored_by_scheduler_resources_reach_node_resources_fit() {
    let mut config = KubeSchedulerConfiguration::from_json(
        r#"{"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
            "profiles": [{"schedulerName": "default-scheduler", "pluginConfig": [
              {"name": "NodeResourcesFit", "args": {"ignoredResources": ["example.com/other"]}}]}]}"#,
    )
    .unwrap();
    config.extenders.push(ExtenderConfig {
        url_prefix: "http://127.0.0.1:1/hami".into(),
        managed_resources: vec![
            ExtenderManagedResource { name: "nvidia.com/gpumem".into(), ignored_by_scheduler: true },
            ExtenderManagedResource { name: "nvidia.com/gpu".into(), ignored_by_scheduler: false },
        ],
        ..ExtenderConfig::default()
    });
    let handle = Handle::default();
    let built = config.build(&default_registry(), &handle).unwrap();
    let fit = built.defaulted.profiles[0].plugin_config.iter().find(|a| a.name == "NodeResourcesFit").unwrap();
    // `defaulted` is the file as defaulted; the profile was built with the replacement.
    assert_eq!(fit.args["ignoredResources"], serde_json::json!(["example.com/other"]));
    let mut s = built.scheduler_builder(handle).build();
    s.add_node(NodeBuilder::new("n").cpu("4").build()).unwrap();
    let fits = s.schedule_pod(PodBuilder::new("a").request("nvidia.com/gpumem", "1000").build());
    assert!(fits.is_ok(), "{fits:?}");
    fits.unwrap().abort("test");
    let other = s.schedule_pod(PodBuilder::new("b").request("example.com/other", "1").build()).unwrap_err();
    assert!(other.to_string().contains("Insufficient example.com/other"), "{other}");

    // A profile without NodeResourcesFit has no args to carry them: upstream fails.
    let mut no_fit = config.clone();
    no_fit.profiles[0].plugin_config.clear();
    no_fit.profiles[0]
        .plugins
        .multi_point
        .disabled
        .push(schedkit::framework::PluginRef { name: "NodeResourcesFit".into(), weight: None });
    let err = no_fit.build(&default_registry(), &Handle::default()).unwrap_err();
    assert_eq!(err.to_string(), "can't find NodeResourcesFitArgs in plugin config");
}

/// Prioritize: `score × weight × 10` per extender is added to the plugins' totals
/// (upstream `prioritizeNodes`), so an extender can outvote a plugin.
#[test]
fn extender_scores_are_scaled_and_added() {
    // node2 gets 100 × 1 from the plugin; node1 gets 10 × 3 × 10 = 300 from the extender.
    let (r, _) = run(Case {
        name: "scale",
        profile: profile(|b| b.weighted(node2_prioritizer_plugin(), 1)),
        extenders: vec![FakeExtender {
            name: "e",
            prioritizers: vec![(node1_prioritizer, 1)],
            weight: 3,
            ..FakeExtender::default()
        }],
        nodes: &["node1", "node2"],
        want: Some("node1"),
    });
    assert_eq!(r.unwrap(), "node1");
}

/// An extender's preemption verb as `Evaluator.callExtenders` uses it.
struct PreemptingExtender {
    name: &'static str,
    ignorable: bool,
    /// Node -> how many of the victims it keeps (`None`: error).
    keep: fn(&str) -> Option<usize>,
}

impl Extender for PreemptingExtender {
    fn name(&self) -> &str {
        self.name
    }
    fn filter(&self, _: &PodInfo, nodes: &[&NodeInfo]) -> Result<ExtenderFilterResult, ExtenderError> {
        Ok(ExtenderFilterResult { passed: (0..nodes.len()).collect(), ..ExtenderFilterResult::default() })
    }
    fn prioritize(&self, _: &PodInfo, _: &[&NodeInfo]) -> Result<(Vec<HostPriority>, i64), ExtenderError> {
        Ok((Vec::new(), 0))
    }
    fn process_preemption(
        &self,
        _: &PodInfo,
        victims: &std::collections::BTreeMap<String, Victims>,
        _: &schedkit::snapshot::Snapshot,
    ) -> Result<std::collections::BTreeMap<String, Victims>, ExtenderError> {
        let mut out = std::collections::BTreeMap::new();
        for (node, v) in victims {
            let n = (self.keep)(node).ok_or_else(|| ExtenderError::Reported("preempt failed".into()))?;
            out.insert(node.clone(), Victims { pods: v.pods[..n.min(v.pods.len())].to_vec(), ..v.clone() });
        }
        Ok(out)
    }
    fn supports_preemption(&self) -> bool {
        true
    }
    fn is_ignorable(&self) -> bool {
        self.ignorable
    }
}

/// Upstream `Evaluator.callExtenders` (pkg/scheduler/framework/preemption): victims
/// vetted in turn, empty answers fatal unless ignorable, errors skipped when ignorable.
#[test]
fn preemption_candidates_are_vetted_by_extenders() {
    use schedkit::framework::extender::preemption_candidates;
    let mut cache = schedkit::snapshot::Cache::new();
    for n in ["n1", "n2"] {
        cache.add_node(NodeBuilder::new(n).cpu("4").build()).unwrap();
    }
    let mut snap = schedkit::snapshot::Snapshot::default();
    cache.update_snapshot(&mut snap);
    let victim = |name: &str| Arc::new(PodInfo::new(PodBuilder::new(name).cpu("1").build()).unwrap());
    let candidates = || {
        ["n1", "n2"]
            .iter()
            .map(|n| Candidate {
                node: Symbol::intern(n),
                node_index: snap.index_of(Symbol::intern(n)).unwrap(),
                victims: Victims {
                    pods: vec![victim(&format!("{n}-a")), victim(&format!("{n}-b"))],
                    num_pdb_violations: 0,
                },
            })
            .collect::<Vec<_>>()
    };
    let pod = PodInfo::new(PodBuilder::new("p").cpu("4").build()).unwrap();
    let with = |exts: Vec<PreemptingExtender>| {
        let handle = Handle::default();
        handle.set_shared(Arc::new(schedkit::framework::Extenders::new(
            exts.into_iter().map(|e| Arc::new(e) as Arc<dyn Extender>),
        )));
        preemption_candidates(&handle, &pod, &snap, candidates())
    };
    // No extender: unchanged.
    assert_eq!(preemption_candidates(&Handle::default(), &pod, &snap, candidates()).unwrap().len(), 2);
    // One victim kept on each node.
    let out = with(vec![PreemptingExtender { name: "e", ignorable: false, keep: |_| Some(1) }]).unwrap();
    assert_eq!(out.iter().map(|c| c.victims.pods.len()).collect::<Vec<_>>(), [1, 1]);
    // No victim on n2: fatal, or (ignorable) n2 dropped.
    let none_on_n2 = |n: &str| Some(usize::from(n == "n1"));
    let err = with(vec![PreemptingExtender { name: "e", ignorable: false, keep: none_on_n2 }]).unwrap_err();
    assert_eq!(err.message(), "expected at least one victim pod on node \"n2\"");
    let out = with(vec![PreemptingExtender { name: "e", ignorable: true, keep: none_on_n2 }]).unwrap();
    assert_eq!(out.iter().map(|c| c.node.as_str()).collect::<Vec<_>>(), ["n1"]);
    // Errors: fatal, or skipped when ignorable.
    let err = with(vec![PreemptingExtender { name: "e", ignorable: false, keep: |_| None }]).unwrap_err();
    assert_eq!((err.code(), err.message()), (schedkit::framework::Code::Error, "preempt failed".to_owned()));
    let out = with(vec![PreemptingExtender { name: "e", ignorable: true, keep: |_| None }]).unwrap();
    assert_eq!(out.len(), 2);
}
