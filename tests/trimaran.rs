//! Trimaran load-aware scoring (scheduler-plugins `pkg/trimaran`, v0.34.7): the
//! plugins' upstream score tables through an in-memory metrics source, args and
//! registry wiring, in-flight pod accounting in a running scheduler, and scores in
//! `0..=100`.

use std::sync::Arc;

use proptest::prelude::*;
use schedkit::framework::{CycleState, Handle, PluginArgs, PluginRef, ProfileConfig, ScorePlugin};
use schedkit::model::{Container, Node, Pod, Quantity, ResourceList, Symbol};
use schedkit::plugins::default_registry;
use schedkit::plugins::trimaran::*;
use schedkit::scheduler::{Scheduler, TieBreak};
use schedkit::snapshot::{NodeInfo, PodInfo};
use schedkit::testing::{NodeBuilder, PodBuilder};
use serde_json::json;

const MEGA: i64 = 1024 * 1024;

/// `st.MakeNode().Name(name).Capacity({cpu: 1000m, memory: 1Gi})` (capacity and
/// allocatable).
fn node(name: &str) -> NodeInfo {
    node_of(NodeBuilder::new(name).cpu("1000m").memory("1Gi").build())
}

fn node_of(n: Node) -> NodeInfo {
    NodeInfo::new(Arc::new(n))
}

/// `st.MakePod().Name("p")`: no containers at all.
fn empty_pod() -> PodInfo {
    PodInfo::new(PodBuilder::new("p").with(|p| p.spec.containers.clear()).build()).unwrap()
}

fn list(pairs: &[(&str, Quantity)]) -> ResourceList {
    let mut l = ResourceList::new();
    for (n, q) in pairs {
        l.set(Symbol::intern(n), *q);
    }
    l
}

/// targetloadpacking_test.go `getPodWithContainersAndOverhead(overhead, requests...)`:
/// containers with cpu requests = limits.
fn tlp_pod(overhead: i64, requests: &[i64]) -> PodInfo {
    let mut pod = Pod::default();
    pod.metadata.name = "p".into();
    pod.spec.overhead = list(&[("cpu", Quantity::from_milli(overhead))]);
    for (i, &r) in requests.iter().enumerate() {
        let mut c = Container { name: format!("test-container-{i}"), ..Container::default() };
        c.resources.requests = list(&[("cpu", Quantity::from_milli(r))]);
        c.resources.limits = list(&[("cpu", Quantity::from_milli(r))]);
        pod.spec.containers.push(c);
    }
    PodInfo::new(pod).unwrap()
}

/// loadvariationriskbalancing_test.go `getPodWithContainersAndOverhead`: an init
/// container with requests, containers with requests = limits.
fn lvrb_pod(overhead: i64, init_cpu: i64, init_mem: i64, cpu: &[i64], mem: &[i64]) -> PodInfo {
    let mut pod = Pod::default();
    pod.metadata.name = "p".into();
    pod.spec.overhead = list(&[("cpu", Quantity::from_milli(overhead))]);
    let mut init = Container { name: "test-init".into(), ..Container::default() };
    init.resources.requests =
        list(&[("cpu", Quantity::from_milli(init_cpu)), ("memory", Quantity::from_int(init_mem))]);
    pod.spec.init_containers.push(init);
    for (i, (&c, &m)) in cpu.iter().zip(mem).enumerate() {
        let mut ct = Container { name: format!("test-container-{i}"), ..Container::default() };
        ct.resources.requests = list(&[("cpu", Quantity::from_milli(c)), ("memory", Quantity::from_int(m))]);
        ct.resources.limits = ct.resources.requests.clone();
        pod.spec.containers.push(ct);
    }
    PodInfo::new(pod).unwrap()
}

fn source(m: &WatcherMetrics) -> Arc<InMemoryLoadMetrics> {
    let s = InMemoryLoadMetrics::new();
    s.set(m.clone());
    Arc::new(s)
}

fn one_node(metrics: Vec<Metric>) -> WatcherMetrics {
    WatcherMetrics::with_nodes([("node-1", metrics)])
}

fn score(p: &dyn ScorePlugin, pod: &PodInfo, n: &NodeInfo) -> i64 {
    p.score(&CycleState::new(), pod, n).expect("Trimaran scores always succeed")
}

// targetloadpacking_test.go TestTargetLoadPackingScoring.
#[test]
fn target_load_packing_scoring() {
    let cases: Vec<(&str, PodInfo, WatcherMetrics, i64)> = vec![
        ("new node", empty_pod(), one_node(vec![Metric::new(CPU, LATEST, 0.0)]), 40),
        ("hot node", empty_pod(), one_node(vec![Metric::new(CPU, LATEST, 50.0)]), 33),
        (
            "excess utilization returns min score",
            tlp_pod(0, &[1000]),
            one_node(vec![Metric::new(CPU, LATEST, 30.0)]),
            0,
        ),
        ("404 resp from watcher", empty_pod(), WatcherMetrics::default(), 0),
    ];
    for (name, pod, metrics, want) in cases {
        let pl = TargetLoadPacking::new(TargetLoadPackingArgs::default(), source(&metrics), Handle::default()).unwrap();
        assert_eq!(score(&pl, &pod, &node("node-1")), want, "{name}");
    }
}

#[test]
fn target_load_packing_details() {
    let m = one_node(vec![Metric::new(CPU, AVERAGE, 10.0), Metric::new(MEMORY, AVERAGE, 90.0)]);
    let pl = TargetLoadPacking::new(TargetLoadPackingArgs::default(), source(&m), Handle::default()).unwrap();
    // PredictUtilisation: limit, else round(request·1.5), else 1000m.
    let limit = tlp_pod(0, &[300]);
    let request_only = PodInfo::new(PodBuilder::new("r").cpu("333m").build()).unwrap();
    let neither = PodInfo::new(PodBuilder::new("n").build()).unwrap();
    assert_eq!(pl.predicted_pod_milli_cpu(&limit.pod), 300);
    assert_eq!(pl.predicted_pod_milli_cpu(&request_only.pod), 500);
    assert_eq!(pl.predicted_pod_milli_cpu(&neither.pod), 1000);
    assert_eq!(pl.predicted_pod_milli_cpu(&tlp_pod(50, &[100, 200]).pod), 350);
    // 10 % of 1000m + 300m = 40 % = the target: 100.
    assert_eq!(score(&pl, &limit, &node("node-1")), 100);
    // No CPU metric with AVG/Latest (a STD only): 0.
    let std_only = TargetLoadPacking::new(
        TargetLoadPackingArgs::default(),
        source(&one_node(vec![Metric::new(CPU, STD, 10.0)])),
        Handle::default(),
    )
    .unwrap();
    assert_eq!(score(&std_only, &limit, &node("node-1")), 0);
    // A node absent from a populated payload: 0.
    assert_eq!(score(&pl, &limit, &node("node-2")), 0);
    // Custom args: 2 cores default, multiplier 2, target 70.
    let args: TargetLoadPackingArgs = serde_json::from_value(json!({
        "defaultRequests": {"cpu": "2"}, "defaultRequestsMultiplier": "2", "targetUtilization": 70
    }))
    .unwrap();
    let custom = TargetLoadPacking::new(args, source(&m), Handle::default()).unwrap();
    assert_eq!(custom.predicted_pod_milli_cpu(&neither.pod), 2000);
    assert_eq!(custom.predicted_pod_milli_cpu(&request_only.pod), 666);
    let big = NodeBuilder::new("node-1").cpu("10").memory("1Gi").build();
    // 10 % of 10 cores + 2 cores = 30 %: round(30·30/70 + 70) = 83.
    assert_eq!(score(&custom, &neither, &node_of(big)), 83);
    let bad = TargetLoadPackingArgs { default_requests_multiplier: Some("x1.5".into()), ..Default::default() };
    let err = TargetLoadPacking::new(bad, source(&m), Handle::default()).unwrap_err();
    assert!(err.to_string().contains("unable to parse DefaultRequestsMultiplier"), "{err}");
}

// loadvariationriskbalancing_test.go TestScore.
#[test]
fn load_variation_risk_balancing_score() {
    let cases: Vec<(&str, PodInfo, WatcherMetrics, i64)> = vec![
        ("new node", empty_pod(), one_node(vec![Metric::new(CPU, AVERAGE, 50.0)]), 75),
        ("hot node", empty_pod(), one_node(vec![Metric::new(CPU, AVERAGE, 100.0)]), 50),
        (
            "average and stDev metrics",
            lvrb_pod(0, 0, 0, &[200], &[256 * MEGA]),
            one_node(vec![Metric::new(CPU, AVERAGE, 30.0), Metric::new(CPU, STD, 16.0)]),
            67,
        ),
        (
            "CPU and Memory metrics",
            lvrb_pod(0, 0, 0, &[100], &[512 * MEGA]),
            one_node(vec![
                Metric::new(CPU, AVERAGE, 40.0),
                Metric::new(CPU, STD, 16.0),
                Metric::new(MEMORY, AVERAGE, 50.0),
                Metric::new(MEMORY, STD, 10.0),
            ]),
            45,
        ),
        (
            "pick worst case: CPU or Memory",
            lvrb_pod(0, 0, 0, &[100], &[512 * MEGA]),
            one_node(vec![
                Metric::new(CPU, AVERAGE, 80.0),
                Metric::new(CPU, STD, 20.0),
                Metric::new(MEMORY, AVERAGE, 25.0),
                Metric::new(MEMORY, STD, 15.0),
            ]),
            45,
        ),
        ("404 resp from watcher", empty_pod(), WatcherMetrics::default(), 0),
    ];
    for (name, pod, metrics, want) in cases {
        let pl = LoadVariationRiskBalancing::new(LoadVariationRiskBalancingArgs::default(), source(&metrics));
        assert_eq!(score(&pl, &pod, &node("node-1")), want, "{name}");
    }
}

// lowriskovercommitment_test.go TestLowRiskOverCommitment_Score, plus a burstable pod.
#[test]
fn low_risk_over_commitment_score() {
    let m = one_node(vec![Metric::new(CPU, AVERAGE, 20.0)]);
    let args = LowRiskOverCommitmentArgs {
        smoothing_window_size: Some(5),
        risk_limit_weights: Some([("cpu".to_owned(), 0.5), ("memory".to_owned(), 0.5)].into()),
        ..Default::default()
    };
    let pl = LowRiskOverCommitment::new(args, source(&m));
    assert_eq!(score(&pl, &empty_pod(), &node("node-1")), 0, "new node: a best-effort pod scores 0");

    // 500m requested, 1000m limit on an empty 1-core node at 20 % ± 0: no limit risk;
    // load risk: P(use <= 0 requested) for a certain 20 % load is 0, but the limits
    // (0) are under capacity and zero: p = 1, risk 0. Memory has no metrics: risk
    // from limits only, 0. Score 100.
    let burst = PodInfo::new(
        PodBuilder::new("b")
            .cpu("500m")
            .with(|p| p.spec.containers[0].resources.limits = list(&[("cpu", Quantity::from_milli(1000))]))
            .build(),
    )
    .unwrap();
    assert_eq!(score(&pl, &burst, &node("node-1")), 100);
    // On a node whose pods' limits exceed capacity: cpu limit 1000 + 1000 = 2000 over a
    // 1000 capacity with requests 500 + 500 capped at 1000: risk_limit = 1000/1000 = 1.
    let mut n = node("node-1");
    n.add_pod(Arc::new(
        PodInfo::new(
            PodBuilder::new("other")
                .cpu("500m")
                .with(|p| {
                    p.spec.containers[0].resources.limits = list(&[("cpu", Quantity::from_milli(1000))]);
                    p.spec.node_name = "node-1".into();
                })
                .build(),
        )
        .unwrap(),
    ));
    // cpu: 0.5·1 + 0.5·0 (20 % ± 0 is below the 500m already requested: no load
    // risk); memory: 0. round(100·(1 - 0.5)) = 50.
    assert_eq!(score(&pl, &burst, &n), 50);
    assert_eq!(score(&pl, &burst, &node("node-2")), 0, "no metrics for the node");
}

// TestNew in the three plugins' tests: args through the registry; bad values fall
// back to the defaults; upstream's New errors stay errors.
#[test]
fn registry_builds_the_plugins_from_upstream_args() {
    let metrics = InMemoryLoadMetrics::new();
    let handle = Handle::default();
    handle.set_shared(Arc::new(SharedLoadMetrics(Arc::new(metrics.clone()))));
    let mut cfg = ProfileConfig::default();
    for (name, weight) in [("TargetLoadPacking", 1), ("LoadVariationRiskBalancing", 1), ("LowRiskOverCommitment", 1)] {
        cfg.plugins.multi_point.enabled.push(PluginRef { name: name.into(), weight: Some(weight) });
    }
    cfg.plugin_config = vec![
        PluginArgs {
            name: "TargetLoadPacking".into(),
            args: json!({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "TargetLoadPackingArgs",
                "targetUtilization": -1, "metricProvider": {"type": "Prometheus", "address": "http://prom:9090"}}),
        },
        PluginArgs { name: "LoadVariationRiskBalancing".into(), args: json!({"safeVarianceMargin": -5}) },
        PluginArgs { name: "LowRiskOverCommitment".into(), args: json!({"smoothingWindowSize": -5}) },
    ];
    let profile = default_registry().build_profile(&cfg, &handle).unwrap();
    let scores = profile.score_plugins();
    for name in ["TargetLoadPacking", "LoadVariationRiskBalancing", "LowRiskOverCommitment"] {
        assert!(scores.contains(&(name, 1)), "{name} in {scores:?}");
        assert!(profile.pre_score_plugins().contains(&name));
    }
    assert!(profile.post_bind_plugins().contains(&"TargetLoadPacking"));

    let build = |args: serde_json::Value, h: &Handle| {
        let mut c = cfg.clone();
        c.plugin_config = vec![PluginArgs { name: "TargetLoadPacking".into(), args }];
        default_registry().build_profile(&c, h).map(|_| ()).map_err(|e| e.to_string())
    };
    let e = build(json!({"metricProvider": {"type": "Graphite"}}), &handle).unwrap_err();
    assert!(e.contains("invalid MetricProvider.Type, got Graphite"), "{e}");
    let e = build(json!({"watcherAddress": "", "metricProvider": {"type": ""}}), &handle).unwrap_err();
    assert!(e.contains("invalid MetricProvider.Type, got "), "{e}");
    let e = build(json!({"targetUtilisation": 3}), &handle).unwrap_err();
    assert!(e.contains("unknown field `targetUtilisation`"), "{e}");
    let e = build(json!({}), &Handle::default()).unwrap_err();
    assert!(e.contains("share a LoadMetricsSource"), "{e}");
    #[cfg(not(feature = "load-watcher"))]
    {
        let e = build(json!({"watcherAddress": "http://127.0.0.1:9"}), &handle).unwrap_err();
        assert!(e.contains("feature `load-watcher`"), "{e}");
    }
}

/// In-flight pods: a pod the scheduler bound (PostBind) or the caller reported bound
/// counts on its node until the metrics window passes it (upstream
/// `PodAssignEventHandler` + Score's missing utilisation).
#[test]
fn bound_pods_count_until_the_metrics_show_them() {
    let metrics = InMemoryLoadMetrics::new();
    metrics.set(WatcherMetrics::with_nodes([
        ("tlp-a", vec![Metric::new(CPU, AVERAGE, 0.0)]),
        ("tlp-b", vec![Metric::new(CPU, AVERAGE, 0.0)]),
    ]));
    let handle = Handle::default();
    handle.set_shared(Arc::new(SharedLoadMetrics(Arc::new(metrics.clone()))));
    let mut cfg = ProfileConfig::default();
    cfg.plugins.multi_point.enabled.push(PluginRef { name: "TargetLoadPacking".into(), weight: Some(1) });
    let profile = default_registry().build_profile(&cfg, &handle).unwrap();
    let mut sched =
        Scheduler::builder().profile(profile).handle(handle.clone()).parallelism(1).tie_break(TieBreak::First).build();
    for n in ["tlp-a", "tlp-b"] {
        sched.add_node(NodeBuilder::new(n).cpu("10").memory("8Gi").build()).unwrap();
    }
    let tlp =
        TargetLoadPacking::new(TargetLoadPackingArgs::default(), Arc::new(metrics.clone()), handle.clone()).unwrap();
    let pod = |name: &str| {
        PodBuilder::new(name)
            .uid(name)
            .cpu("1")
            .with(|p| p.spec.containers[0].resources.limits = list(&[("cpu", Quantity::from_int(1))]))
            .build()
    };

    // Both idle: a tie; the first node wins. Then the in-flight pod (1 core = 10 %)
    // makes the same node score higher (packing towards 40 %).
    let first = sched.schedule_pod(pod("p1")).unwrap();
    let first_node = first.node().to_owned();
    first.run().unwrap();
    let second = sched.schedule_pod(pod("p2")).unwrap();
    assert_eq!(second.node(), first_node, "packs onto the node with the in-flight pod");
    second.run().unwrap();

    // The same accounting through the plugin's own cache, fed as the scheduler feeds
    // observers: a pod reported bound elsewhere counts there.
    let other = PodInfo::new(pod("p3").tap_node("tlp-b")).unwrap();
    schedkit::framework::PodObserver::pod_added(&tlp, &other);
    assert_eq!(tlp.scheduled_pods().pods_on("tlp-b").len(), 1);
    let a = node_of(NodeBuilder::new("tlp-b").cpu("10").memory("8Gi").build());
    let probe = PodInfo::new(pod("probe")).unwrap();
    // 1 core in flight + 1 core pod = 20 %: round(60·20/40 + 40) = 70.
    assert_eq!(score(&tlp, &probe, &a), 70);
    // Metrics whose window ends 60 s or more after the binding show it: not missing.
    let bound_at = tlp.scheduled_pods().pods_on("tlp-b")[0].timestamp.as_secs() as i64;
    metrics.set_window(0, bound_at + 60);
    assert_eq!(score(&tlp, &probe, &a), 55, "only the probe: 10 % -> round(60·10/40 + 40)");
    metrics.set_window(0, bound_at + 59);
    assert_eq!(score(&tlp, &probe, &a), 70);
    schedkit::framework::PodObserver::pod_deleted(&tlp, &other);
    assert_eq!(score(&tlp, &probe, &a), 55);
}

trait TapNode {
    fn tap_node(self, node: &str) -> Self;
}

impl TapNode for Pod {
    fn tap_node(mut self, node: &str) -> Self {
        self.spec.node_name = node.to_owned();
        self
    }
}

fn metric_strategy() -> impl Strategy<Value = Vec<Metric>> {
    let kind = prop_oneof![Just(CPU), Just(MEMORY), Just(BANDWIDTH)];
    let op = prop_oneof![Just(AVERAGE), Just(STD), Just(LATEST), Just("")];
    prop::collection::vec((kind, op, 0.0..=100.0f64), 0..6)
        .prop_map(|v| v.into_iter().map(|(k, o, val)| Metric::new(k, o, val)).collect())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Every Trimaran score is in 0..=100 for utilisation metrics within 0..=100 %,
    /// a target utilisation in 1..=100, non-negative margin and sensitivity, and any
    /// pod and node sizes.
    #[test]
    fn scores_within_0_to_100(
        metrics in metric_strategy(),
        target in 1i64..=100,
        margin in 0.0..5.0f64,
        sensitivity in 0.0..5.0f64,
        window in 1i64..20,
        weight in 0.0..=1.0f64,
        cpu_req in 0i64..20_000,
        cpu_lim_extra in 0i64..20_000,
        mem_req_mi in 0i64..20_000,
        node_cpu in 0i64..64_000,
        node_mem_mi in 0i64..256_000,
        existing in 0usize..4,
    ) {
        let m = WatcherMetrics::with_nodes([("prop-node", metrics)]);
        let src = source(&m);
        let mut n = node_of(Node {
            status: schedkit::model::NodeStatus {
                capacity: list(&[("cpu", Quantity::from_milli(node_cpu)), ("memory", Quantity::from_int(node_mem_mi * MEGA))]),
                allocatable: list(&[("cpu", Quantity::from_milli(node_cpu)), ("memory", Quantity::from_int(node_mem_mi * MEGA))]),
                ..Default::default()
            },
            ..NodeBuilder::new("prop-node").build()
        });
        let mut pod = Pod::default();
        pod.metadata.name = "p".into();
        let mut c = Container { name: "c".into(), ..Container::default() };
        c.resources.requests = list(&[("cpu", Quantity::from_milli(cpu_req)), ("memory", Quantity::from_int(mem_req_mi * MEGA))]);
        c.resources.limits = list(&[("cpu", Quantity::from_milli(cpu_req + cpu_lim_extra))]);
        pod.spec.containers.push(c);
        for i in 0..existing {
            let mut e = pod.clone();
            e.metadata.name = format!("e{i}");
            e.spec.node_name = "prop-node".into();
            n.add_pod(Arc::new(PodInfo::new(e).unwrap()));
        }
        let pod = PodInfo::new(pod).unwrap();
        let tlp = TargetLoadPacking::new(
            TargetLoadPackingArgs { target_utilization: Some(target), ..Default::default() }, src.clone(), Handle::default()).unwrap();
        let lvrb = LoadVariationRiskBalancing::new(LoadVariationRiskBalancingArgs {
            safe_variance_margin: Some(margin), safe_variance_sensitivity: Some(sensitivity), ..Default::default() }, src.clone());
        let lroc = LowRiskOverCommitment::new(LowRiskOverCommitmentArgs {
            smoothing_window_size: Some(window),
            risk_limit_weights: Some([("cpu".to_owned(), weight), ("memory".to_owned(), weight)].into()),
            ..Default::default() }, src);
        for (name, s) in [("tlp", score(&tlp, &pod, &n)), ("lvrb", score(&lvrb, &pod, &n)), ("lroc", score(&lroc, &pod, &n))] {
            prop_assert!((0..=100).contains(&s), "{name}: {s}");
        }
    }
}
