//! The public plugin kit: `FrameworkRunner` built from config through a registry
//! with user factories, each extension point run on its own. The tables are
//! upstream's `pkg/scheduler/framework/runtime/framework_test.go`
//! (`TestRunScorePlugins`, `TestRunPreFilterPlugins`, `TestFilterPlugins`,
//! `TestPostFilterPlugins`, `TestReservePlugins`, `TestPermitPlugins`), whose fake plugins take their
//! answers from their args; the injected plugin here does the same.

use std::sync::Arc;
use std::time::Duration;

use schedkit::framework::*;
use schedkit::snapshot::{NodeInfo, NodeList, PodInfo, Snapshot};
use schedkit::testing::{ClusterBuilder, NodeBuilder, PodBuilder};
use serde::Deserialize;

/// Upstream's `injectedResult`: codes are upstream's numbers (0 Success, 1 Error,
/// 2 Unschedulable, 3 UnschedulableAndUnresolvable, 4 Wait, 5 Skip).
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct Injected {
    score_res: i64,
    normalize_res: Option<i64>,
    score_status: i32,
    normalize_status: i32,
    pre_filter_status: i32,
    pre_filter_nodes: Option<Vec<String>>,
    filter_status: i32,
    pre_score_status: i32,
    reserve_status: i32,
    permit_status: i32,
    post_filter_status: i32,
}

fn status(code: i32, plugin: &str, point: &str) -> Status {
    let reason = format!("injected {point} status of {plugin}");
    match code {
        0 => Status::SUCCESS,
        1 => Status::error(reason),
        2 => Status::unschedulable(reason),
        3 => Status::unresolvable(reason),
        4 => Status::new(Code::Wait, reason),
        5 => Status::SKIP,
        _ => Status::new(Code::Pending, reason),
    }
}

struct TestPlugin {
    name: &'static str,
    inj: Injected,
}

impl Plugin for TestPlugin {
    fn name(&self) -> &str {
        self.name
    }
    fn register(self: Arc<Self>, p: &mut ExtensionPoints) {
        p.pre_filter(self.clone())
            .filter(self.clone())
            .pre_score(self.clone())
            .score(self.clone())
            .post_filter(self.clone())
            .reserve(self.clone())
            .permit(self);
    }
}

impl PreFilterPlugin for TestPlugin {
    fn pre_filter(&self, _: &mut CycleState, _: &PodInfo, _: &Snapshot) -> (Option<PreFilterResult>, Status) {
        let r = self.inj.pre_filter_nodes.as_ref().map(|n| PreFilterResult::nodes(n.iter().map(String::as_str)));
        (r, status(self.inj.pre_filter_status, self.name, "PreFilter"))
    }
}

impl FilterPlugin for TestPlugin {
    fn filter(&self, _: &CycleState, _: &PodInfo, _: &NodeInfo) -> Status {
        status(self.inj.filter_status, self.name, "Filter")
    }
}

impl PreScorePlugin for TestPlugin {
    fn pre_score(&self, _: &mut CycleState, _: &PodInfo, _: NodeList<'_>) -> Status {
        status(self.inj.pre_score_status, self.name, "PreScore")
    }
}

impl ScorePlugin for TestPlugin {
    fn score(&self, _: &CycleState, _: &PodInfo, _: &NodeInfo) -> Result<i64, Status> {
        let s = status(self.inj.score_status, self.name, "Score");
        if s.is_success() { Ok(self.inj.score_res) } else { Err(s) }
    }
    fn normalize(&self, _: &CycleState, _: &PodInfo, scores: &mut [NodeScore]) -> Status {
        let s = status(self.inj.normalize_status, self.name, "NormalizeScore");
        if let Some(v) = self.inj.normalize_res {
            for n in scores.iter_mut() {
                n.score = v;
            }
        }
        s
    }
}

impl PostFilterPlugin for TestPlugin {
    fn post_filter(
        &self,
        _: &CycleState,
        _: &PodInfo,
        _: &Snapshot,
        _: &NodeToStatus,
    ) -> (Option<PostFilterResult>, Status) {
        (None, status(self.inj.post_filter_status, self.name, "PostFilter"))
    }
}

impl ReservePlugin for TestPlugin {
    fn reserve(&self, _: &mut CycleState, _: &PodInfo, _: &str) -> Status {
        status(self.inj.reserve_status, self.name, "Reserve")
    }
    fn unreserve(&self, _: &mut CycleState, _: &PodInfo, _: &str) {}
}

impl PermitPlugin for TestPlugin {
    fn permit(&self, _: &mut CycleState, _: &PodInfo, _: &str) -> PermitDecision {
        match self.inj.permit_status {
            0 => PermitDecision::Allow,
            4 => PermitDecision::Wait(Duration::from_secs(10)),
            c => PermitDecision::Reject(status(c, self.name, "Permit")),
        }
    }
}

/// A registry whose every name builds a `TestPlugin` from its args.
fn registry(names: &[&'static str]) -> Registry {
    let mut r = Registry::new();
    for &name in names {
        r.register(name, move |args, _| {
            let inj: Injected = match args {
                Some(a) => serde_json::from_value(a.clone()).map_err(|e| e.to_string())?,
                None => Injected::default(),
            };
            Ok(Arc::new(TestPlugin { name, inj }) as Arc<dyn Plugin>)
        })
        .unwrap();
    }
    r
}

const SCORE1: &str = "score-plugin-1";
const NORM1: &str = "score-with-normalize-plugin-1";
const NORM2: &str = "score-with-normalize-plugin-2";

/// `plugins` enabled at one point with weights (upstream `buildScoreConfigDefaultWeights`
/// gives score-with-normalize-plugin-2 weight 2, the others 1), args as JSON.
fn runner(point: &str, plugins: &[&str], args: &serde_json::Value) -> Result<FrameworkRunner, ConfigError> {
    let weight = |n: &str| if n == NORM2 { 2 } else { 1 };
    let enabled: Vec<serde_json::Value> =
        plugins.iter().map(|n| serde_json::json!({"name": n, "weight": weight(n)})).collect();
    let cfg: ProfileConfig = serde_json::from_value(serde_json::json!({
        "plugins": { point: { "enabled": enabled } },
        "pluginConfig": args.as_object().map(|o| o.iter().map(|(k, v)| serde_json::json!({"name": k, "args": v})).collect::<Vec<_>>()).unwrap_or_default(),
    }))
    .unwrap();
    let cluster =
        ClusterBuilder::new().node(NodeBuilder::new("node1")).node(NodeBuilder::new("node2")).build().unwrap();
    Ok(FrameworkRunner::from_config(&registry(&[SCORE1, NORM1, NORM2, "a", "b", "c"]), &cfg, Handle::default())?
        .with_snapshot(cluster))
}

fn pod() -> PodInfo {
    PodInfo::new(PodBuilder::new("p").build()).unwrap()
}

/// Score then the weighted totals per node, or `None` when the run failed.
/// Per plugin `(name, normalized × weight)` on the first node, and every node's total.
type Scored = (Vec<(&'static str, i64)>, Vec<i64>);

fn scores(r: &FrameworkRunner, pre_score_first: bool) -> Option<Scored> {
    let mut state = CycleState::new();
    let p = pod();
    let nodes = r.all_nodes();
    if pre_score_first {
        assert!(r.run_pre_score(&mut state, &p, &nodes).is_success());
    }
    let rep = r.run_score(&state, &p, &nodes).ok()?;
    let per_plugin = rep.plugins.iter().map(|ps| (ps.name, ps.normalized[0].score * ps.weight)).collect();
    Some((per_plugin, rep.totals.iter().map(|t| t.score).collect()))
}

#[test]
fn run_score_plugins_table() {
    use serde_json::json;
    // "no Score plugins": nothing scored (the scheduler then ranks every node 1).
    let r = runner("score", &[], &json!({})).unwrap();
    assert_eq!(scores(&r, false), Some((vec![], vec![1, 1])));
    // "single Score plugin": 1 × weight 1.
    let r = runner("score", &[SCORE1], &json!({SCORE1: {"scoreRes": 1}})).unwrap();
    assert_eq!(scores(&r, false), Some((vec![(SCORE1, 1)], vec![1, 1])));
    // "single ScoreWithNormalize plugin": 10 normalized to 5.
    let r = runner("score", &[NORM1], &json!({NORM1: {"scoreRes": 10, "normalizeRes": 5}})).unwrap();
    assert_eq!(scores(&r, false), Some((vec![(NORM1, 5)], vec![5, 5])));
    // "3 Score plugins, 2 NormalizeScore plugins": 1 + 4 + 5 × 2 = 15.
    let r = runner("score", &[SCORE1, NORM1, NORM2], &json!({SCORE1: {"scoreRes": 1}, NORM1: {"scoreRes": 3, "normalizeRes": 4}, NORM2: {"scoreRes": 4, "normalizeRes": 5}}),
    )
    .unwrap();
    assert_eq!(scores(&r, false), Some((vec![(SCORE1, 1), (NORM1, 4), (NORM2, 10)], vec![15, 15])));
    // "score fails" / "normalize fails".
    let r = runner("score", &[SCORE1, NORM1], &json!({NORM1: {"scoreStatus": 1}})).unwrap();
    assert_eq!(scores(&r, false), None);
    let r = runner("score", &[SCORE1, NORM1], &json!({NORM1: {"normalizeStatus": 1}})).unwrap();
    assert_eq!(scores(&r, false), None);
    // Scores outside [MinNodeScore, MaxNodeScore], from Score or from NormalizeScore.
    for args in [
        json!({SCORE1: {"scoreRes": MAX_NODE_SCORE + 1}}),
        json!({SCORE1: {"scoreRes": MIN_NODE_SCORE - 1}}),
        json!({SCORE1: {"normalizeRes": MAX_NODE_SCORE + 1}}),
        json!({SCORE1: {"normalizeRes": MIN_NODE_SCORE - 1}}),
    ] {
        let r = runner("score", &[SCORE1], &args).unwrap();
        let err = r.run_score(&CycleState::new(), &pod(), &r.all_nodes()).unwrap_err();
        assert_eq!(err.code(), Code::Error);
        assert!(err.message().contains("after normalizing"), "{err:?}");
        assert_eq!(err.plugin(), Some(SCORE1));
    }
    // "one success plugin, one skip plugin": the skipped one would fail if it ran.
    let r = runner(
        "multiPoint",
        &[SCORE1, NORM1],
        &json!({SCORE1: {"scoreRes": 1}, NORM1: {"scoreStatus": 1, "preScoreStatus": 5}}),
    )
    .unwrap();
    assert_eq!(scores(&r, true), Some((vec![(SCORE1, 1)], vec![1, 1])));
    // "all plugins are skipped in prescore".
    let r = runner("multiPoint", &[SCORE1], &json!({SCORE1: {"scoreStatus": 1, "preScoreStatus": 5}})).unwrap();
    assert_eq!(scores(&r, true), Some((vec![], vec![0, 0])));
}

/// "single Score plugin with MultiPointExpansion", with the weight on the
/// multiPoint entry: 1 × weight 3.
#[test]
fn multi_point_weight() {
    let cfg: ProfileConfig = serde_json::from_value(serde_json::json!({
        "plugins": {"multiPoint": {"enabled": [{"name": SCORE1, "weight": 3}]}},
        "pluginConfig": [{"name": SCORE1, "args": {"scoreRes": 1}}],
    }))
    .unwrap();
    let cluster =
        ClusterBuilder::new().node(NodeBuilder::new("node1")).node(NodeBuilder::new("node2")).build().unwrap();
    let r = FrameworkRunner::from_config(&registry(&[SCORE1]), &cfg, Handle::default()).unwrap().with_snapshot(cluster);
    assert_eq!(scores(&r, true), Some((vec![(SCORE1, 3)], vec![3, 3])));
}

/// `TestRunPreFilterPlugins`: codes, skipped plugins, and the narrowing result.
#[test]
fn run_pre_filter_plugins_table() {
    use serde_json::json;
    let run = |args: serde_json::Value, names: &[&str]| {
        let r = runner("multiPoint", names, &args).unwrap();
        let mut state = CycleState::new();
        let out = r.run_pre_filter(&mut state, &pod());
        (out.map_err(|s| s.code()), r.skipped_filter_plugins(&state))
    };
    // all success
    let (out, skipped) = run(json!({}), &["a", "b"]);
    assert!(out.unwrap().result.all_nodes());
    assert!(skipped.is_empty());
    // success then error
    let (out, _) = run(json!({"b": {"preFilterStatus": 1}}), &["a", "b"]);
    assert_eq!(out.unwrap_err(), Code::Error);
    // skip then error: the skip is recorded
    let (out, skipped) = run(json!({"a": {"preFilterStatus": 5}, "b": {"preFilterStatus": 1}}), &["a", "b"]);
    assert_eq!((out.unwrap_err(), skipped), (Code::Error, vec!["a"]));
    // all skip
    let (out, skipped) = run(
        json!({"a": {"preFilterStatus": 5}, "b": {"preFilterStatus": 5}, "c": {"preFilterStatus": 5}}),
        &["a", "b", "c"],
    );
    assert!(out.is_ok());
    assert_eq!(skipped, ["a", "b", "c"]);
    // Unschedulable lets the next plugin run (its Skip is recorded)
    let (out, skipped) = run(json!({"a": {"preFilterStatus": 2}, "b": {"preFilterStatus": 5}}), &["a", "b"]);
    assert_eq!((out.unwrap_err(), skipped), (Code::Unschedulable, vec!["b"]));
    // UnschedulableAndUnresolvable stops at once
    let (out, skipped) = run(json!({"a": {"preFilterStatus": 3}, "b": {"preFilterStatus": 5}}), &["a", "b"]);
    assert_eq!(out.unwrap_err(), Code::UnschedulableAndUnresolvable);
    assert!(skipped.is_empty());
    // an empty narrowing rejects every node and stops
    let (out, skipped) = run(json!({"a": {"preFilterNodes": []}, "b": {"preFilterStatus": 5}}), &["a", "b"]);
    assert_eq!(out.unwrap_err(), Code::UnschedulableAndUnresolvable);
    assert!(skipped.is_empty());
}

/// `TestFilterPlugins` (the first failing plugin decides, attributed to it), a
/// Skip from PreFilter skipping that plugin's Filter, and PreFilter narrowing.
#[test]
fn filter_and_feasible_nodes() {
    use serde_json::json;
    let r = runner("multiPoint", &["a", "b"], &json!({"a": {"filterStatus": 2}, "b": {"filterStatus": 1}})).unwrap();
    let state = CycleState::new();
    let s = r.run_filter(&state, &pod(), "node1");
    assert_eq!((s.code(), s.plugin()), (Code::Unschedulable, Some("a")));
    assert_eq!(r.run_filter(&state, &pod(), "nowhere").code(), Code::Error);
    // PreFilter Skip of "a": its failing Filter doesn't run, "b" decides.
    let r = runner(
        "multiPoint",
        &["a", "b"],
        &json!({"a": {"filterStatus": 2, "preFilterStatus": 5}, "b": {"filterStatus": 3}}),
    )
    .unwrap();
    let mut state = CycleState::new();
    let pre = r.run_pre_filter(&mut state, &pod()).unwrap();
    let s = r.run_filter(&state, &pod(), "node1");
    assert_eq!((s.code(), s.plugin()), (Code::UnschedulableAndUnresolvable, Some("b")));
    let f = r.find_feasible(&state, &pod(), &pre);
    assert!(f.nodes.is_empty());
    assert_eq!(f.statuses.statuses.len(), 2);
    // A narrowing PreFilter: only node2 is filtered; node1 gets the absent status.
    let r = runner("multiPoint", &["a"], &json!({"a": {"preFilterNodes": ["node2"]}})).unwrap();
    let mut state = CycleState::new();
    let pre = r.run_pre_filter(&mut state, &pod()).unwrap();
    assert_eq!(pre.narrowing_plugins, ["a"]);
    let f = r.find_feasible(&state, &pod(), &pre);
    assert_eq!(f.nodes, r.node_positions(["node2"]));
    let absent = f.statuses.get(r.node_positions(["node1"])[0]).unwrap();
    assert_eq!(absent.code(), Code::UnschedulableAndUnresolvable);
    assert_eq!(absent.message(), "node(s) didn't satisfy plugin(s) [\"a\"]");
}

/// `TestReservePlugins` / `TestPermitPlugins`: the first failure decides; Permit
/// waits collect every waiting plugin; a non-rejection code from Permit becomes
/// Unschedulable.
#[test]
fn reserve_and_permit() {
    use serde_json::json;
    let r = runner("multiPoint", &["a", "b"], &json!({"b": {"reserveStatus": 2}})).unwrap();
    let mut state = CycleState::new();
    let s = r.run_reserve(&mut state, &pod(), "node1");
    assert_eq!((s.code(), s.plugin()), (Code::Unschedulable, Some("b")));
    r.run_unreserve(&mut state, &pod(), "node1");

    let r = runner("multiPoint", &["a", "b"], &json!({})).unwrap();
    assert_eq!(r.run_permit(&mut CycleState::new(), &pod(), "node1"), PermitOutcome::Allow);
    let r = runner("multiPoint", &["a", "b"], &json!({"a": {"permitStatus": 4}, "b": {"permitStatus": 4}})).unwrap();
    assert_eq!(
        r.run_permit(&mut CycleState::new(), &pod(), "node1"),
        PermitOutcome::Wait(vec![("a", Duration::from_secs(10)), ("b", Duration::from_secs(10))])
    );
    let r = runner("multiPoint", &["a", "b"], &json!({"a": {"permitStatus": 4}, "b": {"permitStatus": 3}})).unwrap();
    let PermitOutcome::Reject(s) = r.run_permit(&mut CycleState::new(), &pod(), "node1") else { panic!("rejects") };
    assert_eq!((s.code(), s.plugin()), (Code::UnschedulableAndUnresolvable, Some("b")));
    let r = runner("multiPoint", &["a"], &json!({"a": {"permitStatus": 5}})).unwrap();
    let PermitOutcome::Reject(s) = r.run_permit(&mut CycleState::new(), &pod(), "node1") else { panic!("rejects") };
    assert_eq!(s.code(), Code::Unschedulable);
}

/// A `TestPostFilterPlugins` case: name, plugins, their args, then the code, plugin
/// and reasons expected.
type PostFilterCase =
    (&'static str, &'static [&'static str], serde_json::Value, Code, Option<&'static str>, Vec<String>);

/// Port of `TestPostFilterPlugins` (upstream `framework_test.go`; its case with
/// `SkipAllPostFilterPlugins` set in the cycle state is left out: schedkit's cycle
/// state has no such switch). Plugins run until one succeeds, errors or says
/// UnschedulableAndUnresolvable; when all say Unschedulable, the answer carries every
/// reason in order and names the first plugin.
#[test]
fn run_post_filter_plugins_table() {
    use serde_json::json;
    let reason = |p: &str| format!("injected PostFilter status of {p}");
    let cases: [PostFilterCase; 6] = [
        ("a single plugin makes a Pod schedulable", &["a"], json!({}), Code::Success, Some("a"), vec![]),
        (
            "plugin1 failed to make a Pod schedulable, followed by plugin2 which makes the Pod schedulable",
            &["a", "b"],
            json!({"a": {"postFilterStatus": 2}}),
            Code::Success,
            Some("b"),
            vec![],
        ),
        (
            "plugin1 makes a Pod schedulable, followed by plugin2 which cannot make the Pod schedulable",
            &["a", "b"],
            json!({"b": {"postFilterStatus": 2}}),
            Code::Success,
            Some("a"),
            vec![],
        ),
        (
            "plugin1 errors, followed by plugin2 which makes the Pod schedulable",
            &["a", "b"],
            json!({"a": {"postFilterStatus": 1}}),
            Code::Error,
            Some("a"),
            vec![reason("a")],
        ),
        (
            "plugin1 failed to make a Pod schedulable, followed by plugin2 which makes the Pod unresolvable",
            &["a", "b"],
            json!({"a": {"postFilterStatus": 2}, "b": {"postFilterStatus": 3}}),
            Code::UnschedulableAndUnresolvable,
            Some("b"),
            vec![reason("b")],
        ),
        (
            "both plugins failed to make a Pod schedulable",
            &["a", "b"],
            json!({"a": {"postFilterStatus": 2}, "b": {"postFilterStatus": 2}}),
            Code::Unschedulable,
            Some("a"),
            vec![reason("a"), reason("b")],
        ),
    ];
    for (name, plugins, args, code, plugin, reasons) in cases {
        let r = runner("postFilter", plugins, &args).unwrap();
        let (_, s) = r.run_post_filter(&mut CycleState::new(), &pod(), &NodeToStatus::default());
        assert_eq!((s.code(), s.plugin()), (code, plugin), "{name}");
        assert_eq!(s.reasons(), reasons.as_slice(), "{name}");
    }
    // An UnschedulableAndUnresolvable stops the phase: a later plugin that would
    // succeed does not run.
    let r = runner("postFilter", &["a", "b"], &json!({"a": {"postFilterStatus": 3}})).unwrap();
    let (_, s) = r.run_post_filter(&mut CycleState::new(), &pod(), &NodeToStatus::default());
    assert_eq!((s.code(), s.plugin()), (Code::UnschedulableAndUnresolvable, Some("a")));
}

/// The typed listing agrees with what the runner runs, per point, with weights.
#[test]
fn plugins_at_lists_each_point() {
    let r = runner("score", &[SCORE1, NORM2], &serde_json::json!({})).unwrap();
    let p = r.profile();
    assert_eq!(
        p.plugins_at(ExtensionPoint::Score),
        [PluginAt { name: SCORE1, weight: Some(1) }, PluginAt { name: NORM2, weight: Some(2) }]
    );
    assert!(p.plugins_at(ExtensionPoint::Filter).is_empty());
    let r = runner("multiPoint", &["a"], &serde_json::json!({})).unwrap();
    let points: Vec<ExtensionPoint> = r.profile().summary().into_iter().map(|(pt, _)| pt).collect();
    assert_eq!(
        points,
        [
            ExtensionPoint::PreFilter,
            ExtensionPoint::Filter,
            ExtensionPoint::PostFilter,
            ExtensionPoint::PreScore,
            ExtensionPoint::Score,
            ExtensionPoint::Reserve,
            ExtensionPoint::Permit
        ]
    );
}

/// A plugin reading the cluster through its handle sees the runner's snapshot,
/// with no scheduler cycle run.
#[test]
fn the_handle_carries_the_runners_snapshot() {
    let handle = Handle::default();
    let profile = Profile::builder("p").build().unwrap();
    let cluster = ClusterBuilder::new()
        .node(NodeBuilder::new("n1").milli_cpu(4000))
        .pod_on("n1", PodBuilder::new("running").milli_cpu(1000))
        .build()
        .unwrap();
    let r = FrameworkRunner::with_handle(profile, handle.clone()).with_snapshot(cluster);
    assert_eq!(handle.snapshot().get("n1").unwrap().requested().milli_cpu, 1000);
    assert_eq!(r.snapshot().len(), 1);
}
