//! KubeSchedulerConfiguration files: upstream's merge, multiPoint expansion, defaulting
//! and validation tables, and real configuration files from the Kubernetes docs and
//! scheduler-plugins.

use std::sync::Arc;

use schedkit::config::{
    BuildError, ConfigFileError, FieldErrorKind, KubeSchedulerConfiguration, default_plugins, merge_plugin_set,
    merge_plugins,
};
use schedkit::framework::*;
use schedkit::plugins::default_registry;
use schedkit::snapshot::{NodeInfo, NodeList, PodInfo, Snapshot};
use serde_json::json;

fn r(name: &str) -> PluginRef {
    PluginRef { name: name.into(), weight: None }
}

fn rw(name: &str, w: i64) -> PluginRef {
    PluginRef { name: name.into(), weight: Some(w) }
}

fn set(enabled: &[PluginRef], disabled: &[&str]) -> PluginSetConfig {
    PluginSetConfig { enabled: enabled.to_vec(), disabled: disabled.iter().map(|n| r(n)).collect() }
}

fn filter_only(s: PluginSetConfig) -> PluginsConfig {
    PluginsConfig { filter: s, ..PluginsConfig::default() }
}

fn mp_only(s: PluginSetConfig) -> PluginsConfig {
    PluginsConfig { multi_point: s, ..PluginsConfig::default() }
}

/// Port of `TestMergePlugins` (`pkg/scheduler/apis/config/v1/default_plugins_test.go`).
#[test]
fn merge_plugins_upstream_table() {
    let d12 = || set(&[r("DefaultPlugin1"), r("DefaultPlugin2")], &[]);
    let p123 = || set(&[r("Plugin1"), r("Plugin2"), r("Plugin3")], &[]);
    let cases: Vec<(&str, PluginsConfig, Option<PluginsConfig>, PluginsConfig)> = vec![
        (
            "AppendCustomPlugin",
            filter_only(d12()),
            Some(filter_only(set(&[r("CustomPlugin")], &[]))),
            filter_only(set(&[r("DefaultPlugin1"), r("DefaultPlugin2"), r("CustomPlugin")], &[])),
        ),
        (
            "InsertAfterDefaultPlugins2",
            filter_only(d12()),
            Some(filter_only(set(&[r("CustomPlugin"), r("DefaultPlugin2")], &["DefaultPlugin2"]))),
            filter_only(set(&[r("DefaultPlugin1"), r("CustomPlugin"), r("DefaultPlugin2")], &["DefaultPlugin2"])),
        ),
        (
            "InsertBeforeAllPlugins",
            filter_only(d12()),
            Some(filter_only(set(&[r("CustomPlugin"), r("DefaultPlugin1"), r("DefaultPlugin2")], &["*"]))),
            filter_only(set(&[r("CustomPlugin"), r("DefaultPlugin1"), r("DefaultPlugin2")], &["*"])),
        ),
        (
            "ReorderDefaultPlugins",
            filter_only(d12()),
            Some(filter_only(set(&[r("DefaultPlugin2"), r("DefaultPlugin1")], &["*"]))),
            filter_only(set(&[r("DefaultPlugin2"), r("DefaultPlugin1")], &["*"])),
        ),
        ("ApplyNilCustomPlugin", filter_only(d12()), None, filter_only(d12())),
        (
            "CustomPluginOverrideDefaultPlugin",
            filter_only(p123()),
            Some(filter_only(set(&[rw("Plugin1", 2), rw("Plugin3", 3)], &[]))),
            filter_only(set(&[rw("Plugin1", 2), r("Plugin2"), rw("Plugin3", 3)], &[])),
        ),
        (
            "OrderPreserveAfterOverride",
            filter_only(p123()),
            Some(filter_only(set(&[rw("Plugin2", 2), rw("Plugin1", 1)], &[]))),
            filter_only(set(&[rw("Plugin1", 1), rw("Plugin2", 2), r("Plugin3")], &[])),
        ),
        (
            "RepeatedCustomPlugin",
            filter_only(p123()),
            Some(filter_only(set(&[r("Plugin1"), rw("Plugin2", 2), r("Plugin3"), rw("Plugin2", 4)], &[]))),
            filter_only(set(&[r("Plugin1"), rw("Plugin2", 4), r("Plugin3"), rw("Plugin2", 2)], &[])),
        ),
        (
            "Append custom MultiPoint plugin",
            mp_only(d12()),
            Some(mp_only(set(&[r("CustomPlugin")], &[]))),
            mp_only(set(&[r("DefaultPlugin1"), r("DefaultPlugin2"), r("CustomPlugin")], &[])),
        ),
        (
            "Append disabled Multipoint plugins",
            mp_only(d12()),
            Some(PluginsConfig {
                multi_point: set(&[r("CustomPlugin"), r("CustomPlugin2")], &["DefaultPlugin2"]),
                score: set(&[], &["CustomPlugin2"]),
                ..PluginsConfig::default()
            }),
            PluginsConfig {
                multi_point: set(&[r("DefaultPlugin1"), r("CustomPlugin"), r("CustomPlugin2")], &["DefaultPlugin2"]),
                score: set(&[], &["CustomPlugin2"]),
                ..PluginsConfig::default()
            },
        ),
        (
            "override default MultiPoint plugins with custom value",
            mp_only(set(&[r("DefaultPlugin")], &[])),
            Some(mp_only(set(&[rw("DefaultPlugin", 5)], &[]))),
            mp_only(set(&[rw("DefaultPlugin", 5)], &[])),
        ),
        (
            "disabled MultiPoint plugin in default set",
            mp_only(set(&[r("DefaultPlugin")], &["DefaultPlugin2"])),
            Some(mp_only(set(&[r("CustomPlugin")], &[]))),
            mp_only(set(&[r("DefaultPlugin"), r("CustomPlugin")], &["DefaultPlugin2"])),
        ),
        (
            "disabled MultiPoint plugin in default set for specific extension point",
            PluginsConfig {
                multi_point: set(&[r("DefaultPlugin")], &[]),
                score: set(&[], &["DefaultPlugin2"]),
                ..PluginsConfig::default()
            },
            Some(mp_only(set(&[r("CustomPlugin")], &[]))),
            PluginsConfig {
                multi_point: set(&[r("DefaultPlugin"), r("CustomPlugin")], &[]),
                score: set(&[], &["DefaultPlugin2"]),
                ..PluginsConfig::default()
            },
        ),
        (
            "multipoint with only disabled gets merged",
            mp_only(set(&[r("DefaultPlugin")], &[])),
            Some(mp_only(set(&[], &["DefaultPlugin"]))),
            mp_only(set(&[], &["DefaultPlugin"])),
        ),
    ];
    for (name, defaults, custom, want) in cases {
        assert_eq!(merge_plugins(&defaults, custom.as_ref()), want, "{name}");
    }
    // The set-level function is the same merge.
    let merged = merge_plugin_set(&d12(), &set(&[r("X")], &["DefaultPlugin1"]));
    assert_eq!(merged, set(&[r("DefaultPlugin2"), r("X")], &["DefaultPlugin1"]));
}

/// A test plugin serving the points its flags name (upstream's `testPlugin`,
/// `scorePlugin1`, `bindPlugin`... in `framework_test.go`).
#[expect(clippy::struct_excessive_bools, reason = "one switch per extension point, as upstream's test plugins")]
struct TestPlugin {
    name: &'static str,
    sort: bool,
    pre_score: bool,
    score: bool,
    bind: bool,
    rest: bool,
}

impl Plugin for TestPlugin {
    fn name(&self) -> &str {
        self.name
    }
    fn register(self: Arc<Self>, p: &mut ExtensionPoints) {
        if self.sort {
            p.queue_sort(self.clone());
        }
        if self.pre_score {
            p.pre_score(self.clone());
        }
        if self.score {
            p.score(self.clone());
        }
        if self.bind {
            p.bind(self.clone());
        }
        if self.rest {
            p.pre_filter(self.clone())
                .filter(self.clone())
                .post_filter(self.clone())
                .reserve(self.clone())
                .permit(self.clone())
                .pre_bind(self.clone())
                .post_bind(self);
        }
    }
}

impl QueueSortPlugin for TestPlugin {
    fn less(&self, a: &QueuedPodInfo, b: &QueuedPodInfo) -> bool {
        a.timestamp < b.timestamp
    }
}
impl PreFilterPlugin for TestPlugin {
    fn pre_filter(&self, _: &mut CycleState, _: &PodInfo, _: &Snapshot) -> (Option<PreFilterResult>, Status) {
        (None, Status::SUCCESS)
    }
}
impl FilterPlugin for TestPlugin {
    fn filter(&self, _: &CycleState, _: &PodInfo, _: &NodeInfo) -> Status {
        Status::SUCCESS
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
        (None, Status::unschedulable("no"))
    }
}
impl PreScorePlugin for TestPlugin {
    fn pre_score(&self, _: &mut CycleState, _: &PodInfo, _: NodeList<'_>) -> Status {
        Status::SUCCESS
    }
}
impl ScorePlugin for TestPlugin {
    fn score(&self, _: &CycleState, _: &PodInfo, _: &NodeInfo) -> Result<i64, Status> {
        Ok(1)
    }
}
impl ReservePlugin for TestPlugin {
    fn reserve(&self, _: &mut CycleState, _: &PodInfo, _: &str) -> Status {
        Status::SUCCESS
    }
    fn unreserve(&self, _: &mut CycleState, _: &PodInfo, _: &str) {}
}
impl PermitPlugin for TestPlugin {
    fn permit(&self, _: &mut CycleState, _: &PodInfo, _: &str) -> PermitDecision {
        PermitDecision::Allow
    }
}
impl PreBindPlugin for TestPlugin {
    fn pre_bind(&self, _: &mut CycleState, _: &PodInfo, _: &str) -> Status {
        Status::SUCCESS
    }
}
impl BindPlugin for TestPlugin {
    fn bind(&self, _: &mut CycleState, _: &PodInfo, _: &str) -> Status {
        Status::SUCCESS
    }
}
impl PostBindPlugin for TestPlugin {
    fn post_bind(&self, _: &CycleState, _: &PodInfo, _: &str) {}
}

fn test_registry() -> Registry {
    let mut reg = Registry::new();
    let all = |name| TestPlugin { name, sort: true, pre_score: true, score: true, bind: true, rest: true };
    let none = |name| TestPlugin { name, sort: false, pre_score: false, score: false, bind: false, rest: false };
    let plugins = [
        all("TestPlugin"),
        TestPlugin { pre_score: true, score: true, ..none("ScorePlugin1") },
        TestPlugin { pre_score: true, score: true, ..none("ScorePlugin2") },
        TestPlugin { score: true, ..none("ScoreWithNormalizePlugin1") },
        TestPlugin { sort: true, ..none("QueueSortPlugin") },
        TestPlugin { bind: true, ..none("BindPlugin") },
    ];
    for p in plugins {
        let p = Arc::new(p);
        reg.register(p.name, move |_, _| Ok(p.clone() as Arc<dyn Plugin>)).unwrap();
    }
    reg
}

/// Every point's plugins of a built profile, for comparing with upstream's `ListPlugins`.
fn listing(p: &Profile) -> Vec<(&'static str, Vec<String>)> {
    let s = |v: Vec<&'static str>| v.into_iter().map(str::to_owned).collect::<Vec<_>>();
    vec![
        ("queueSort", s(p.queue_sort_plugin().into_iter().collect())),
        ("preFilter", s(p.pre_filter_plugins())),
        ("filter", s(p.filter_plugins())),
        ("postFilter", s(p.post_filter_plugins())),
        ("preScore", s(p.pre_score_plugins())),
        ("score", p.score_plugins().into_iter().map(|(n, w)| format!("{n}:{w}")).collect()),
        ("reserve", s(p.reserve_plugins())),
        ("permit", s(p.permit_plugins())),
        ("preBind", s(p.pre_bind_plugins())),
        ("bind", s(p.bind_plugins())),
        ("postBind", s(p.post_bind_plugins())),
    ]
}

/// `TestPlugin` alone at every point but Score, which gets `score`.
fn test_plugin_everywhere(pre_score: &[&str], score: &[&str]) -> Vec<(&'static str, Vec<String>)> {
    let t = || vec!["TestPlugin".to_owned()];
    let v = |x: &[&str]| x.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    vec![
        ("queueSort", t()),
        ("preFilter", t()),
        ("filter", t()),
        ("postFilter", t()),
        ("preScore", v(pre_score)),
        ("score", v(score)),
        ("reserve", t()),
        ("permit", t()),
        ("preBind", t()),
        ("bind", t()),
        ("postBind", t()),
    ]
}

/// Port of `TestNewFrameworkMultiPointExpansion`
/// (`pkg/scheduler/framework/runtime/framework_test.go`; the PlacementGenerate and
/// PlacementScore points of the v1.36 table are left out: schedkit configures
/// placement plugins apart).
#[test]
fn multi_point_expansion_upstream_table() {
    let reg = test_registry();
    let h = Handle::default();
    let build = |plugins: serde_json::Value| {
        let cfg: ProfileConfig = serde_json::from_value(json!({"schedulerName": "s", "plugins": plugins})).unwrap();
        reg.build_profile(&cfg, &h)
    };
    let cases = [
        (
            "plugin expansion",
            json!({"multiPoint": {"enabled": [{"name": "TestPlugin", "weight": 5}]}}),
            test_plugin_everywhere(&["TestPlugin"], &["TestPlugin:5"]),
        ),
        (
            "disable MultiPoint plugin at some extension points",
            json!({"multiPoint": {"enabled": [{"name": "TestPlugin"}]},
                   "preScore": {"disabled": [{"name": "TestPlugin"}]},
                   "score": {"disabled": [{"name": "TestPlugin"}]}}),
            test_plugin_everywhere(&[], &[]),
        ),
        (
            "Multiple MultiPoint plugins",
            json!({"multiPoint": {"enabled": [{"name": "TestPlugin"}, {"name": "ScorePlugin1"}]}}),
            test_plugin_everywhere(&["TestPlugin", "ScorePlugin1"], &["TestPlugin:1", "ScorePlugin1:1"]),
        ),
        (
            "disable MultiPoint extension",
            json!({"multiPoint": {"enabled": [{"name": "TestPlugin"}, {"name": "ScorePlugin1"}]},
                   "preScore": {"disabled": [{"name": "*"}]}}),
            test_plugin_everywhere(&[], &["TestPlugin:1", "ScorePlugin1:1"]),
        ),
        (
            "Reorder MultiPoint plugins (specified extension takes precedence)",
            json!({"multiPoint": {"enabled": [{"name": "ScoreWithNormalizePlugin1"}, {"name": "TestPlugin"}, {"name": "ScorePlugin1"}]},
                   "score": {"enabled": [{"name": "ScorePlugin1"}, {"name": "TestPlugin"}]}}),
            test_plugin_everywhere(
                &["TestPlugin", "ScorePlugin1"],
                &["ScorePlugin1:1", "TestPlugin:1", "ScoreWithNormalizePlugin1:1"],
            ),
        ),
        (
            "Reorder MultiPoint plugins (specified extension only takes precedence when it exists in MultiPoint)",
            json!({"multiPoint": {"enabled": [{"name": "TestPlugin"}, {"name": "ScorePlugin1"}]},
                   "score": {"enabled": [{"name": "ScoreWithNormalizePlugin1"}, {"name": "ScorePlugin1"}, {"name": "TestPlugin"}]}}),
            test_plugin_everywhere(
                &["TestPlugin", "ScorePlugin1"],
                &["ScorePlugin1:1", "TestPlugin:1", "ScoreWithNormalizePlugin1:1"],
            ),
        ),
        (
            "Override MultiPoint plugins weights",
            json!({"multiPoint": {"enabled": [{"name": "TestPlugin"}, {"name": "ScorePlugin1"}]},
                   "score": {"enabled": [{"name": "ScorePlugin1", "weight": 5}, {"name": "TestPlugin", "weight": 3}]}}),
            test_plugin_everywhere(&["TestPlugin", "ScorePlugin1"], &["ScorePlugin1:5", "TestPlugin:3"]),
        ),
        (
            "Override MultiPoint plugins weights and avoid a plugin being loaded multiple times",
            json!({"multiPoint": {"enabled": [{"name": "TestPlugin"}, {"name": "ScorePlugin1"}]},
                   "score": {"enabled": [{"name": "ScorePlugin1", "weight": 5}, {"name": "ScorePlugin2", "weight": 5},
                                         {"name": "TestPlugin", "weight": 3}]}}),
            test_plugin_everywhere(
                &["TestPlugin", "ScorePlugin1"],
                &["ScorePlugin1:5", "TestPlugin:3", "ScorePlugin2:5"],
            ),
        ),
    ];
    for (name, plugins, want) in cases {
        let p = build(plugins).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(listing(&p), want, "{name}");
    }
    // "disable and enable MultiPoint plugins with '*'" and "... by name": the framework
    // does not read multiPoint.disabled (the merge with the defaults does).
    for disabled in ["*", "ScorePlugin1"] {
        let p = build(json!({"multiPoint": {
            "enabled": [{"name": "QueueSortPlugin"}, {"name": "BindPlugin"}, {"name": "ScorePlugin1"}],
            "disabled": [{"name": disabled}]}}))
        .unwrap();
        assert_eq!(p.queue_sort_plugin(), Some("QueueSortPlugin"), "{disabled}");
        assert_eq!(p.pre_score_plugins(), ["ScorePlugin1"], "{disabled}");
        assert_eq!(p.score_plugins(), [("ScorePlugin1", 1)], "{disabled}");
        assert_eq!(p.bind_plugins(), ["BindPlugin"], "{disabled}");
    }
    // "Expect 'already registered' error".
    let err = build(json!({"multiPoint": {"enabled": [{"name": "TestPlugin"}, {"name": "TestPlugin"}]}})).unwrap_err();
    assert_eq!(err, ConfigError::DuplicatePlugin { profile: "s".into(), name: "TestPlugin".into() });
    // A plugin in multiPoint and in a point's enabled list is an override, not a
    // duplicate (schedkit used to refuse it).
    let p = build(json!({"multiPoint": {"enabled": [{"name": "TestPlugin"}]},
                         "filter": {"enabled": [{"name": "TestPlugin"}]}}))
    .unwrap();
    assert_eq!(p.filter_plugins(), ["TestPlugin"]);
    // Twice in one point's list is still an error.
    let err = build(json!({"filter": {"enabled": [{"name": "TestPlugin"}, {"name": "TestPlugin"}]}})).unwrap_err();
    assert!(matches!(err, ConfigError::DuplicatePlugin { .. }), "{err}");
}

const V1: &str = r#""apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration""#;

fn load(body: &str) -> KubeSchedulerConfiguration {
    let text = if body.trim().is_empty() { format!("{{{V1}}}") } else { format!("{{{V1}, {body}}}") };
    KubeSchedulerConfiguration::from_json(&text).unwrap_or_else(|e| panic!("{body}: {e}"))
}

fn names(set: &PluginSetConfig) -> Vec<&str> {
    set.enabled.iter().map(|r| r.name.as_str()).collect()
}

/// Port of `TestSchedulerDefaults` (`pkg/scheduler/apis/config/v1/defaults_test.go`),
/// with schedkit's default plugins (no volume plugins, no VolumeBindingArgs).
#[test]
fn scheduler_defaults_upstream_table() {
    let gates = FeatureGates::default();
    // The cases after the first leave DynamicResources out (its gate off), so their
    // argument lists stay as upstream's table has them without DRA.
    let no_dra = gates.with(Feature::DynamicResourceAllocation, false);
    // "empty config", with v1.36's gates (DynamicResourceAllocation on).
    let d = load("").defaulted(gates);
    assert_eq!(d.parallelism, Some(16));
    assert_eq!((d.enable_profiling, d.enable_contention_profiling), (Some(true), Some(true)));
    let le = &d.leader_election;
    assert_eq!(le.leader_elect, Some(true));
    assert_eq!(
        (le.lease_duration.as_str(), le.renew_deadline.as_str(), le.retry_period.as_str()),
        ("15s", "10s", "2s")
    );
    assert_eq!(
        (le.resource_lock.as_str(), le.resource_namespace.as_str(), le.resource_name.as_str()),
        ("leases", "kube-system", "kube-scheduler")
    );
    let cc = &d.client_connection;
    assert_eq!((cc.qps, cc.burst, cc.content_type.as_str()), (50.0, 100, "application/vnd.kubernetes.protobuf"));
    assert_eq!(d.percentage_of_nodes_to_score, Some(0));
    assert_eq!((d.pod_initial_backoff_seconds, d.pod_max_backoff_seconds), (Some(1), Some(10)));
    assert_eq!(d.profiles.len(), 1);
    let p = &d.profiles[0];
    assert_eq!(p.scheduler_name.as_deref(), Some("default-scheduler"));
    assert_eq!(
        names(&p.plugins.multi_point),
        [
            "SchedulingGates",
            "PrioritySort",
            "NodeUnschedulable",
            "NodeName",
            "TaintToleration",
            "NodeAffinity",
            "NodePorts",
            "NodeResourcesFit",
            "PodTopologySpread",
            "InterPodAffinity",
            "DynamicResources",
            "DefaultPreemption",
            "NodeResourcesBalancedAllocation",
            "ImageLocality",
            "DefaultBinder",
        ]
    );
    // upstream's `pluginConfigs`: defaulted args, sorted by plugin name.
    let args: Vec<(&str, serde_json::Value)> =
        p.plugin_config.iter().map(|a| (a.name.as_str(), a.args.clone())).collect();
    let resources = json!([{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]);
    assert_eq!(
        args,
        [
            ("DefaultPreemption", json!({"minCandidateNodesPercentage": 10, "minCandidateNodesAbsolute": 100})),
            ("DynamicResources", json!({"filterTimeout": "10s", "bindingTimeout": "10m0s"})),
            ("InterPodAffinity", json!({"hardPodAffinityWeight": 1})),
            ("NodeAffinity", json!({})),
            ("NodeResourcesBalancedAllocation", json!({"resources": resources})),
            ("NodeResourcesFit", json!({"scoringStrategy": {"type": "LeastAllocated", "resources": resources}})),
            ("PodTopologySpread", json!({"defaultingType": "System"})),
        ]
    );
    // "no scheduler name": one unnamed profile is named default-scheduler.
    let d = load(r#""profiles": [{}]"#).defaulted(no_dra);
    assert_eq!(d.profiles[0].scheduler_name.as_deref(), Some("default-scheduler"));
    // "two profiles": no default name with two; the second's Bind set is merged.
    let d = load(
        r#""parallelism": 16, "profiles": [
            {"pluginConfig": [{"name": "FooPlugin"}]},
            {"schedulerName": "custom-scheduler", "plugins": {"bind": {"enabled": [{"name": "BarPlugin"}], "disabled": [{"name": "DefaultBinder"}]}}}]"#,
    )
    .defaulted(no_dra);
    assert_eq!(d.profiles[0].scheduler_name, None);
    assert_eq!(d.profiles[0].plugin_config[0].name, "FooPlugin");
    assert!(d.profiles[0].plugin_config[0].args.is_null(), "an out-of-tree plugin's args are left alone");
    assert_eq!(d.profiles[0].plugin_config.len(), 7);
    let second = &d.profiles[1];
    // upstream's expected list for this case is the default multiPoint set without
    // DynamicResources (as the gate-off cases here).
    assert_eq!(second.plugins.multi_point, default_plugins(no_dra).multi_point);
    assert_eq!(second.plugins.bind, set(&[r("BarPlugin")], &["DefaultBinder"]));
    // "set non default parallelism", "set non default delayCacheUntilActive",
    // "set non default global percentageOfNodesToScore", "set non default profile
    // percentageOfNodesToScore", "set non default backoff values".
    let d = load(
        r#""parallelism": 8, "delayCacheUntilActive": true, "percentageOfNodesToScore": 50,
        "podInitialBackoffSeconds": 2, "podMaxBackoffSeconds": 20,
        "profiles": [{"percentageOfNodesToScore": 50}]"#,
    )
    .defaulted(no_dra);
    assert_eq!(d.parallelism, Some(8));
    assert!(d.delay_cache_until_active);
    assert_eq!(d.percentage_of_nodes_to_score, Some(50));
    assert_eq!(d.profiles[0].percentage_of_nodes_to_score, Some(50));
    assert_eq!((d.pod_initial_backoff_seconds, d.pod_max_backoff_seconds), (Some(2), Some(20)));
    // "set non default enableProfiling": contention profiling stays unset.
    let d = load(r#""enableProfiling": false"#).defaulted(no_dra);
    assert_eq!((d.enable_profiling, d.enable_contention_profiling), (Some(false), None));
    // Args given are defaulted in place (upstream `TestPluginArgsDefaults`, "NodeResourcesFitArgs
    // resources empty" and "NodeResourcesBalancedAllocationArgs resources with zero weight").
    let d = load(
        r#""profiles": [{"pluginConfig": [
            {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated", "resources": []}}},
            {"name": "NodeResourcesBalancedAllocation", "args": {"resources": [{"name": "cpu", "weight": 0}, {"name": "memory"}]}},
            {"name": "DefaultPreemption", "args": {"minCandidateNodesAbsolute": 50}}]}]"#,
    )
    .defaulted(no_dra);
    let cfg = &d.profiles[0].plugin_config;
    assert_eq!(cfg[0].args, json!({"scoringStrategy": {"type": "MostAllocated", "resources": resources}}));
    assert_eq!(cfg[1].args, json!({"resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]}));
    assert_eq!(cfg[2].args, json!({"minCandidateNodesPercentage": 10, "minCandidateNodesAbsolute": 50}));
    // With DRA (a DraStore on the handle): DynamicResources before DefaultPreemption,
    // with its timeouts defaulted per gate.
    let d = load("").defaulted(gates);
    let mp = names(&d.profiles[0].plugins.multi_point);
    let i = mp.iter().position(|n| *n == "DynamicResources").unwrap();
    assert_eq!(mp[i + 1], "DefaultPreemption");
    let dra = d.profiles[0].plugin_config.iter().find(|a| a.name == "DynamicResources").unwrap();
    assert_eq!(dra.args, json!({"filterTimeout": "10s", "bindingTimeout": "10m0s"}));
    let off = gates.with(Feature::DRASchedulerFilterTimeout, false).with(Feature::DRADeviceBindingConditions, false);
    let d = load("").defaulted(off);
    let dra = d.profiles[0].plugin_config.iter().find(|a| a.name == "DynamicResources").unwrap();
    assert_eq!(dra.args, json!({}));
}

/// The valid configuration of upstream's `TestValidateKubeSchedulerConfigurationV1`.
fn valid_config() -> serde_json::Value {
    json!({
        "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
        "parallelism": 8,
        "clientConnection": {"acceptContentTypes": "application/json", "contentType": "application/json", "qps": 10, "burst": 10},
        "leaderElection": {"resourceLock": "leases", "leaderElect": true, "leaseDuration": "30s", "renewDeadline": "15s",
                           "retryPeriod": "5s", "resourceNamespace": "name", "resourceName": "name"},
        "podInitialBackoffSeconds": 1, "podMaxBackoffSeconds": 1,
        "profiles": [
            {"schedulerName": "me", "percentageOfNodesToScore": 35,
             "plugins": {"queueSort": {"enabled": [{"name": "CustomSort"}]}, "score": {"disabled": [{"name": "*"}]}},
             "pluginConfig": [{"name": "DefaultPreemption", "args": {"minCandidateNodesPercentage": 10, "minCandidateNodesAbsolute": 100}}]},
            {"schedulerName": "other", "percentageOfNodesToScore": 35,
             "plugins": {"queueSort": {"enabled": [{"name": "CustomSort"}]}, "bind": {"enabled": [{"name": "CustomBind"}]}}}
        ],
        "extenders": [{"prioritizeVerb": "prioritize", "weight": 1}],
        "percentageOfNodesToScore": 0
    })
}

/// Port of `TestValidateKubeSchedulerConfigurationV1`
/// (`pkg/scheduler/apis/config/validation/validation_test.go`): each case's error
/// type and field path. "invalid-node-percentage" and "invalid-plugin-args" are
/// checked when the profile is built (the plugin's factory validates its args).
#[test]
fn validation_upstream_table() {
    type Edit = fn(&mut serde_json::Value);
    type Case = (&'static str, Edit, Vec<(&'static str, &'static str)>);
    let cases: Vec<Case> = vec![
        ("good", |_| {}, vec![]),
        ("bad-parallelism-invalid-value", |c| c["parallelism"] = json!(0), vec![("Invalid", "parallelism")]),
        (
            "bad-resource-name-not-set",
            |c| c["leaderElection"]["resourceName"] = json!(""),
            vec![("Invalid", "leaderElection.resourceName")],
        ),
        (
            "bad-resource-namespace-not-set",
            |c| c["leaderElection"]["resourceNamespace"] = json!(""),
            vec![("Invalid", "leaderElection.resourceNamespace")],
        ),
        (
            "bad-resource-lock-not-leases",
            |c| c["leaderElection"]["resourceLock"] = json!("configmap"),
            vec![("Invalid", "leaderElection.resourceLock")],
        ),
        (
            "bad-percentage-of-nodes-to-score",
            |c| c["percentageOfNodesToScore"] = json!(101),
            vec![("Invalid", "percentageOfNodesToScore")],
        ),
        (
            "negative-percentage-of-nodes-to-score",
            |c| c["percentageOfNodesToScore"] = json!(-1),
            vec![("Invalid", "percentageOfNodesToScore")],
        ),
        (
            "scheduler-name-not-set",
            |c| c["profiles"][1]["schedulerName"] = json!(""),
            vec![("Required", "profiles[1].schedulerName")],
        ),
        (
            "repeated-scheduler-name",
            |c| c["profiles"][0]["schedulerName"] = json!("other"),
            vec![("Duplicate", "profiles[1].schedulerName")],
        ),
        (
            "greater-than-100-profile-percentage-of-nodes-to-score",
            |c| c["profiles"][1]["percentageOfNodesToScore"] = json!(101),
            vec![("Invalid", "profiles[1].percentageOfNodesToScore")],
        ),
        (
            "negative-profile-percentage-of-nodes-to-score",
            |c| c["profiles"][1]["percentageOfNodesToScore"] = json!(-1),
            vec![("Invalid", "profiles[1].percentageOfNodesToScore")],
        ),
        (
            "different-queue-sort",
            |c| c["profiles"][1]["plugins"]["queueSort"]["enabled"][0]["name"] = json!("AnotherSort"),
            vec![("Invalid", "profiles[1].plugins.queueSort")],
        ),
        (
            "one-empty-queue-sort",
            |c| {
                c["profiles"][0].as_object_mut().unwrap().remove("plugins");
            },
            vec![("Invalid", "profiles[1].plugins.queueSort")],
        ),
        (
            "extender-negative-weight",
            |c| c["extenders"][0]["weight"] = json!(-1),
            vec![("Invalid", "extenders[0].weight")],
        ),
        (
            "extender-duplicate-managed-resources",
            |c| {
                c["extenders"][0]["managedResources"] =
                    json!([{"name": "example.com/foo", "ignoredByScheduler": false}, {"name": "example.com/foo"}]);
            },
            vec![("Invalid", "extenders[0].managedResources[1].name")],
        ),
        (
            "extender-duplicate-bind",
            |c| {
                c["extenders"][0]["bindVerb"] = json!("foo");
                c["extenders"]
                    .as_array_mut()
                    .unwrap()
                    .push(json!({"prioritizeVerb": "prioritize", "bindVerb": "bar", "weight": 1}));
            },
            vec![("Invalid", "extenders")],
        ),
        (
            "duplicated-plugin-config",
            |c| c["profiles"][0]["pluginConfig"] = json!([{"name": "config"}, {"name": "config"}]),
            vec![("Duplicate", "profiles[0].pluginConfig[1]")],
        ),
        (
            "mismatch-queue-sort",
            |c| {
                c["profiles"] = json!([
                    {"schedulerName": "me", "plugins": {"queueSort": {"enabled": [{"name": "PrioritySort"}]}},
                     "pluginConfig": [{"name": "PrioritySort"}]},
                    {"schedulerName": "other", "plugins": {"queueSort": {"enabled": [{"name": "CustomSort"}]}},
                     "pluginConfig": [{"name": "CustomSort"}]}]);
            },
            vec![("Invalid", "profiles[1].plugins.queueSort")],
        ),
        (
            "valid-plugins",
            |c| {
                c["profiles"][0]["plugins"]["score"]["enabled"] = json!([{"name": "PodTopologySpread", "weight": 2}]);
            },
            vec![],
        ),
        // Not in upstream's table; upstream's rules all the same.
        (
            "removed-plugin",
            |c| c["profiles"][1]["plugins"]["filter"] = json!({"enabled": [{"name": "EBSLimits"}]}),
            vec![("Invalid", "profiles[1].plugins.filter.enabled[0]")],
        ),
        (
            "bad-backoff",
            |c| {
                c["podInitialBackoffSeconds"] = json!(0);
                c["podMaxBackoffSeconds"] = json!(-1);
            },
            vec![("Invalid", "podInitialBackoffSeconds"), ("Invalid", "podMaxBackoffSeconds")],
        ),
        (
            "bad-extender-resource-name",
            |c| c["extenders"][0]["managedResources"] = json!([{"name": "cpu"}, {"name": "a/b/c"}]),
            vec![
                ("Invalid", "extenders[0].managedResources[0].name"),
                ("Invalid", "extenders[0].managedResources[1].name"),
            ],
        ),
        (
            "lease-not-above-renew-deadline",
            |c| c["leaderElection"]["leaseDuration"] = json!("15s"),
            vec![("Invalid", "leaderElection.leaseDuration")],
        ),
    ];
    for (name, edit, want) in cases {
        let mut v = valid_config();
        edit(&mut v);
        let cfg = KubeSchedulerConfiguration::from_json(&v.to_string()).unwrap_or_else(|e| panic!("{name}: {e}"));
        let got: Vec<(&str, String)> = match cfg.validate() {
            Ok(()) => vec![],
            Err(errs) => errs
                .iter()
                .map(|e| {
                    let kind = match e.kind {
                        FieldErrorKind::Invalid { .. } => "Invalid",
                        FieldErrorKind::Required => "Required",
                        FieldErrorKind::Duplicate { .. } => "Duplicate",
                        _ => "other",
                    };
                    (kind, e.path.clone())
                })
                .collect(),
        };
        let want: Vec<(&str, String)> = want.into_iter().map(|(k, p)| (k, p.to_owned())).collect();
        assert_eq!(got, want, "{name}");
    }
    // The messages read as upstream's field errors.
    let mut v = valid_config();
    v["parallelism"] = json!(0);
    v["profiles"][0]["schedulerName"] = json!("other");
    let errs = KubeSchedulerConfiguration::from_json(&v.to_string()).unwrap().validate().unwrap_err();
    let text: Vec<String> = errs.iter().map(ToString::to_string).collect();
    assert_eq!(
        text,
        [
            "parallelism: Invalid value: 0: should be an integer value greater than zero",
            "profiles[1].schedulerName: Duplicate value: \"other\"",
        ]
    );
}

#[test]
fn plugin_args_are_checked_when_built() {
    // upstream "invalid-node-percentage" and "invalid-plugin-args".
    let reg = default_registry();
    let h = Handle::default();
    let cfg = load(
        r#""profiles": [{"pluginConfig": [{"name": "DefaultPreemption", "args": {"minCandidateNodesPercentage": 200}}]}]"#,
    );
    let err = cfg.build(&reg, &h).unwrap_err();
    assert_eq!(
        err.to_string(),
        "profiles[0]: profile \"default-scheduler\": plugin \"DefaultPreemption\" has invalid args: \
         minCandidateNodesPercentage: must be in the range [0, 100], got 200"
    );
    let err = KubeSchedulerConfiguration::from_json(&format!(
        r#"{{{V1}, "profiles": [{{"pluginConfig": [{{"name": "DefaultPreemption", "args": {{"kind": "InterPodAffinityArgs"}}}}]}}]}}"#
    ))
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "profiles[0].pluginConfig[0].args.kind: args of plugin \"DefaultPreemption\" must be of kind \
         \"DefaultPreemptionArgs\", got \"InterPodAffinityArgs\""
    );
    // A typo inside a built-in plugin's args is an unknown field, with its path.
    let err = KubeSchedulerConfiguration::from_json(&format!(
        r#"{{{V1}, "profiles": [{{"pluginConfig": [{{"name": "NodeResourcesFit", "args": {{"scoringStrategy": {{"typ": "MostAllocated"}}}}}}]}}]}}"#
    ))
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "profiles[0].pluginConfig[0].args.scoringStrategy.typ: unknown field in the args of plugin \"NodeResourcesFit\""
    );
    // apiVersion and kind inside args are accepted and do not reach the plugin.
    let cfg = load(
        r#""profiles": [{"pluginConfig": [{"name": "DefaultPreemption", "args":
            {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "DefaultPreemptionArgs", "minCandidateNodesAbsolute": 5}}]}]"#,
    );
    assert!(cfg.build(&reg, &h).is_ok());
}

#[test]
fn strict_decoding_names_the_path_and_line() {
    let err = KubeSchedulerConfiguration::from_json(&format!(
        "{{{V1},\n \"profiles\": [{{\"plugins\": {{\"filters\": {{}}}}}}]}}"
    ))
    .unwrap_err();
    let ConfigFileError::Decode { path, line, .. } = &err else { panic!("{err}") };
    assert_eq!(path, "profiles[0].plugins.filters");
    assert_eq!(*line, Some(2));
    assert!(err.to_string().contains("unknown field `filters`"), "{err}");
    let err = KubeSchedulerConfiguration::from_json(&format!(r#"{{{V1}, "parallelism": "many"}}"#)).unwrap_err();
    assert!(err.to_string().starts_with("parallelism: invalid type: string \"many\", expected i32"), "{err}");
    let err = KubeSchedulerConfiguration::from_json(r#"{"kind": "KubeSchedulerConfiguration"}"#).unwrap_err();
    assert_eq!(err.to_string(), "apiVersion: Required value: must be \"kubescheduler.config.k8s.io/v1\"");
    let err = KubeSchedulerConfiguration::from_json(
        r#"{"apiVersion": "kubescheduler.config.k8s.io/v1beta3", "kind": "KubeSchedulerConfiguration"}"#,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "apiVersion: Unsupported value: \"kubescheduler.config.k8s.io/v1beta3\": supported values: \"kubescheduler.config.k8s.io/v1\""
    );
    let err =
        KubeSchedulerConfiguration::from_json(r#"{"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "Pod"}"#)
            .unwrap_err();
    assert!(matches!(err, ConfigFileError::WrongType { field: "kind", .. }), "{err}");
}

#[test]
fn merged_profile_keeps_filter_and_bind() {
    // The issue's report: disabling one score plugin and enabling another used to give
    // a profile with only that plugin; merged with the defaults it keeps everything.
    let cfg = load(
        r#""profiles": [{"schedulerName": "s", "plugins": {"score": {
            "disabled": [{"name": "ImageLocality"}], "enabled": [{"name": "NodeResourcesBalancedAllocation", "weight": 5}]}}}]"#,
    );
    let built = cfg.build(&default_registry(), &Handle::default()).unwrap();
    let p = &built.profiles[0];
    assert!(p.filter_plugins().contains(&"NodeResourcesFit"));
    assert_eq!(p.bind_plugins(), ["DefaultBinder"]);
    assert_eq!(p.queue_sort_plugin(), Some("PrioritySort"));
    assert_eq!(
        p.score_plugins(),
        [
            ("NodeResourcesBalancedAllocation", 5),
            ("TaintToleration", 3),
            ("NodeAffinity", 2),
            ("NodeResourcesFit", 1),
            ("PodTopologySpread", 2),
            ("InterPodAffinity", 2),
            // v1.36's DynamicResourceAllocation gate puts it in multiPoint without a
            // weight (upstream TestApplyFeatureGates), so it scores with weight 1.
            ("DynamicResources", 1),
        ]
    );
    // Same profile as the built-in default when the file says nothing.
    let built = load("").build(&default_registry(), &Handle::default()).unwrap();
    let default = Profile::kube_default(&Handle::default());
    assert_eq!(format!("{:?}", built.profiles[0]), format!("{default:?}"));
    assert_eq!(built.profiles[0].score_plugins(), default.score_plugins());
    assert_eq!(built.scheduler.parallelism, 16);
    assert_eq!(built.queue.initial_backoff.as_secs(), 1);
    // A weight of 0 is read as 1 (upstream `getScoreWeights`).
    let cfg = load(r#""profiles": [{"plugins": {"score": {"enabled": [{"name": "ImageLocality", "weight": 0}]}}}]"#);
    let built = cfg.build(&default_registry(), &Handle::default()).unwrap();
    assert!(built.profiles[0].score_plugins().contains(&("ImageLocality", 1)));
    // Upstream's framework checks: no QueueSort, no Bind.
    let cfg = load(r#""profiles": [{"plugins": {"multiPoint": {"disabled": [{"name": "*"}]}}}]"#);
    assert_eq!(
        cfg.build(&default_registry(), &Handle::default()).unwrap_err().to_string(),
        "only one queue sort plugin required for profile with scheduler name \"default-scheduler\", but got 0"
    );
    let cfg = load(r#""profiles": [{"plugins": {"bind": {"disabled": [{"name": "*"}]}}}]"#);
    assert_eq!(
        cfg.build(&default_registry(), &Handle::default()).unwrap_err(),
        BuildError::NoBind { profile: "default-scheduler".into() }
    );
}

#[test]
fn built_configuration_drives_a_scheduler() {
    use schedkit::testing::{NodeBuilder, PodBuilder};
    let cfg = load(
        r#""podInitialBackoffSeconds": 3, "podMaxBackoffSeconds": 30, "parallelism": 2,
        "profiles": [{"schedulerName": "a"}, {"schedulerName": "b", "plugins": {"score": {"disabled": [{"name": "*"}]}}}]"#,
    );
    let handle = Handle::default();
    let built = cfg.build(&default_registry(), &handle).unwrap();
    assert_eq!(built.queue.initial_backoff.as_secs(), 3);
    assert_eq!(built.queue.max_backoff.as_secs(), 30);
    assert!(built.profiles[1].score_plugins().is_empty());
    let mut s = built.scheduler_builder(handle).build();
    s.add_node(NodeBuilder::new("small").cpu("1").pods(10).build()).unwrap();
    s.add_node(NodeBuilder::new("big").cpu("64").pods(10).build()).unwrap();
    // The issue's report: a 64-CPU-class pod on a 1-CPU node. Profile "b" has no
    // Score plugins but keeps every default Filter.
    s.add_pod(PodBuilder::new("p").uid("p").cpu("8").scheduler_name("b").build()).unwrap();
    let summary = s.run_until_idle();
    assert_eq!(summary.bound, 1, "{summary:?}");
    let bound = s.cache().lock().pod_node("p").map(str::to_owned);
    assert_eq!(bound.as_deref(), Some("big"));
}

#[cfg(feature = "yaml")]
mod yaml {
    use super::*;

    fn fixture(path: &str) -> String {
        let full = format!("{}/../tests/fixtures/config/{path}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{full}: {e}"))
    }

    fn yaml(path: &str) -> Result<KubeSchedulerConfiguration, ConfigFileError> {
        KubeSchedulerConfiguration::from_yaml(&fixture(path))
    }

    fn as_v1(path: &str) -> KubeSchedulerConfiguration {
        let text = fixture(path);
        let line = text.lines().next().unwrap();
        assert!(line.starts_with("apiVersion: kubescheduler.config.k8s.io/v1beta"), "{path}: {line}");
        let text = text.replacen(line, "apiVersion: kubescheduler.config.k8s.io/v1", 1);
        KubeSchedulerConfiguration::from_yaml(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    fn build(cfg: &KubeSchedulerConfiguration) -> Result<BuiltConfiguration, BuildError> {
        cfg.build(&default_registry(), &Handle::default())
    }

    use schedkit::config::BuiltConfiguration;

    #[test]
    fn scheduler_plugins_manifests() {
        // As stored they use removed versions, which kube-scheduler refuses too.
        for f in ["coscheduling", "capacityscheduling", "noderesourcetopology", "trimaran", "networktopology"] {
            let err = yaml(&format!("scheduler-plugins/{f}.yaml")).unwrap_err();
            assert!(matches!(err, ConfigFileError::WrongType { field: "apiVersion", .. }), "{f}: {err}");
        }
        // As v1: CapacityScheduling is built in; the others are not (yet).
        let built = build(&as_v1("scheduler-plugins/capacityscheduling.yaml")).unwrap();
        let p = &built.profiles[0];
        assert_eq!(p.post_filter_plugins(), ["CapacityScheduling"], "postFilter `*` drops DefaultPreemption");
        assert_eq!(p.pre_filter_plugins().last(), Some(&"CapacityScheduling"));
        // Reserve has no `*`: upstream `expandMultiPointPlugins` puts the multiPoint
        // plugins serving Reserve (DynamicResources, with v1.36's gates; upstream also
        // VolumeBinding, which schedkit lacks) before the point's own enabled plugins.
        assert_eq!(p.reserve_plugins(), ["DynamicResources", "CapacityScheduling"]);
        assert_eq!(built.defaulted.leader_election.leader_elect, Some(false));
        assert_eq!(built.defaulted.client_connection.kubeconfig, "REPLACE_ME_WITH_KUBE_CONFIG_PATH");
        // Coscheduling is not registered; TargetLoadPacking and TopologicalSort are,
        // and refuse to build without their data source (these manifests name none
        // that schedkit can use: KubernetesMetricsServer, no NetworkAwareStore).
        for (f, want) in [
            ("coscheduling", "unknown plugin \"Coscheduling\" (known: "),
            ("trimaran", "plugin \"TargetLoadPacking\" has invalid args: "),
            ("networktopology", "plugin \"TopologicalSort\" has invalid args: "),
        ] {
            let err = build(&as_v1(&format!("scheduler-plugins/{f}.yaml"))).unwrap_err();
            let msg = err.to_string();
            assert!(msg.starts_with("profiles[0]: profile "), "{f}: {msg}");
            assert!(msg.contains(want), "{f}: {msg}");
        }
    }

    /// A Guaranteed pod on two nodes alike but for their NUMA zones' availability;
    /// `node` is where the profile built from `text` (as v1) binds it.
    fn nrt_placement(text: &str) -> Option<String> {
        use schedkit::plugins::node_resource_topology::{
            AttributeInfo, NodeResourceTopology, NrtStore, ResourceInfo, Zone,
        };
        use schedkit::testing::{NodeBuilder, PodBuilder};
        let cfg = KubeSchedulerConfiguration::from_yaml(text).unwrap();
        let handle = Handle::default();
        let store = Arc::new(NrtStore::new());
        // Zones of 4 cpus and 8Gi each: all free on "roomy", half used on "packed".
        for (node, cpu, mem) in [("roomy", "4", "8Gi"), ("packed", "2", "4Gi")] {
            let mut nrt = NodeResourceTopology::new(node);
            nrt.attributes = vec![
                AttributeInfo { name: "topologyManagerPolicy".into(), value: "single-numa-node".into() },
                AttributeInfo { name: "topologyManagerScope".into(), value: "container".into() },
            ];
            let r = |name: &str, cap: &str, avail: &str| ResourceInfo {
                name: name.into(),
                capacity: cap.parse().unwrap(),
                allocatable: cap.parse().unwrap(),
                available: avail.parse().unwrap(),
            };
            nrt.zones = (0..2)
                .map(|i| Zone {
                    name: format!("node-{i}"),
                    zone_type: "Node".into(),
                    parent: String::new(),
                    costs: vec![],
                    attributes: vec![],
                    resources: vec![r("cpu", "4", cpu), r("memory", "8Gi", mem)],
                })
                .collect();
            store.upsert(nrt).unwrap();
        }
        handle.set_shared(store);
        let built = cfg.build(&default_registry(), &handle).unwrap();
        let p = &built.profiles[0];
        assert_eq!(p.name(), "topo-aware-scheduler");
        assert!(p.filter_plugins().contains(&"NodeResourceTopologyMatch"), "{:?}", p.filter_plugins());
        assert!(p.score_plugins().contains(&("NodeResourceTopologyMatch", 1)), "{:?}", p.score_plugins());
        let mut s = built.scheduler_builder(handle).build();
        for n in ["roomy", "packed"] {
            s.add_node(NodeBuilder::new(n).cpu("8").memory("16Gi").pods(110).build()).unwrap();
        }
        let pod = PodBuilder::new("p")
            .uid("p")
            .cpu("1")
            .memory("1Gi")
            .scheduler_name("topo-aware-scheduler")
            .with(|p| p.spec.containers[0].resources.limits = p.spec.containers[0].resources.requests.clone())
            .build();
        s.add_pod(pod).unwrap();
        assert_eq!(s.run_until_idle().bound, 1);
        s.cache().lock().pod_node("p").map(str::to_owned)
    }

    /// scheduler-plugins `manifests/noderesourcetopology/scheduler-config.yaml` as v1:
    /// NodeResourceTopologyMatch is registered and gets its `pluginConfig` args.
    #[test]
    fn scheduler_plugins_noderesourcetopology() {
        // v0.34.7's manifest: Filter + Score, LeastAllocated prefers the emptier zones.
        let v1 = |path: &str| {
            let text = fixture(path);
            text.replacen(
                "apiVersion: kubescheduler.config.k8s.io/v1beta3",
                "apiVersion: kubescheduler.config.k8s.io/v1",
                1,
            )
        };
        let text = v1("scheduler-plugins/noderesourcetopology-v0.34.7.yaml");
        assert_eq!(nrt_placement(&text).as_deref(), Some("roomy"));
        // The args reach the plugin: MostAllocated packs instead (NUMA zone scores
        // 18 on "roomy" and 37 on "packed"; every other score is equal).
        let most = text.replace("type: \"LeastAllocated\"", "type: \"MostAllocated\"");
        assert_ne!(most, text);
        assert_eq!(nrt_placement(&most).as_deref(), Some("packed"));
        // Validation of the args, with upstream's message.
        let bad = text.replace("type: \"LeastAllocated\"", "type: \"Nope\"");
        let err = build(&KubeSchedulerConfiguration::from_yaml(&bad).unwrap()).unwrap_err().to_string();
        assert!(err.contains("scoringStrategy.type: Invalid value: \"Nope\""), "{err}");
        // The newer manifest also enables preFilter, which upstream added after v0.34.7
        // (NUMA-aware preemption) and schedkit's plugin, like v0.34.7's, does not
        // implement: refused, as kube-scheduler refuses a plugin at a point it lacks.
        let err = build(&as_v1("scheduler-plugins/noderesourcetopology.yaml")).unwrap_err().to_string();
        assert!(
            err.contains("plugin \"NodeResourceTopologyMatch\" does not implement extension point preFilter"),
            "{err}"
        );
    }

    #[test]
    fn kubernetes_docs_examples() {
        let built = build(&yaml("docs/multiple-profiles.yaml").unwrap()).unwrap();
        assert_eq!(built.profiles.len(), 2);
        assert_eq!(built.profiles[1].name(), "no-scoring-scheduler");
        assert!(built.profiles[1].score_plugins().is_empty() && built.profiles[1].pre_score_plugins().is_empty());
        assert!(!built.profiles[0].score_plugins().is_empty());

        let err = build(&yaml("docs/custom-score-plugins.yaml").unwrap()).unwrap_err();
        assert!(err.to_string().contains("unknown plugin \"MyCustomPluginA\""), "{err}");

        let built = build(&yaml("docs/multipoint-disable-all.yaml").unwrap()).unwrap();
        let p = &built.profiles[0];
        assert_eq!(p.filter_plugins(), ["NodeResourcesFit"]);
        assert_eq!(p.score_plugins(), [("NodeResourcesFit", 1)]);
        assert_eq!((p.queue_sort_plugin(), p.bind_plugins()), (Some("PrioritySort"), vec!["DefaultBinder"]));

        for f in ["docs/bin-packing-most-allocated.yaml", "docs/bin-packing-requested-to-capacity-ratio.yaml"] {
            let cfg = yaml(f).unwrap();
            let built = build(&cfg).unwrap_or_else(|e| panic!("{f}: {e}"));
            assert!(built.profiles[0].filter_plugins().contains(&"NodeResourcesFit"), "{f}");
        }
        let built = build(&yaml("docs/spread-default-constraints.yaml").unwrap()).unwrap();
        assert!(built.profiles[0].filter_plugins().contains(&"PodTopologySpread"));
        let built = build(&yaml("docs/node-affinity-per-profile.yaml").unwrap()).unwrap();
        assert_eq!(built.profiles[1].name(), "foo-scheduler");

        let built = build(&yaml("docs/percentage.yaml").unwrap()).unwrap();
        assert_eq!(built.scheduler.percentage_of_nodes_to_score, 50);
        // The performance-tuning page still shows a v1alpha1-era field; v1 refuses it.
        let err = yaml("docs/percentage-with-algorithm-source.yaml").unwrap_err();
        let ConfigFileError::Decode { path, line, column, .. } = &err else { panic!("{err}") };
        assert_eq!((path.as_str(), *line, *column), ("algorithmSource", Some(3), Some(1)));
        assert!(err.to_string().contains("unknown field `algorithmSource`"), "{err}");
    }

    #[test]
    fn yaml_errors_carry_the_line() {
        let text = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- schedulerName: a\n  plugins:\n    filters:\n      enabled: []\n";
        let err = KubeSchedulerConfiguration::from_yaml(text).unwrap_err();
        let ConfigFileError::Decode { path, line, .. } = &err else { panic!("{err}") };
        assert_eq!((path.as_str(), *line), ("profiles[0].plugins.filters", Some(6)));
        // Two profiles with the same name are refused when built.
        let text = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- schedulerName: a\n- schedulerName: a\n";
        let err = build(&KubeSchedulerConfiguration::from_yaml(text).unwrap()).unwrap_err();
        assert_eq!(err.to_string(), "invalid configuration: profiles[1].schedulerName: Duplicate value: \"a\"");
    }
}

/// Port of `TestApplyFeatureGates` (`pkg/scheduler/apis/config/v1/default_plugins_test.go`):
/// `getDefaultPlugins` with DynamicResourceAllocation off and on (v1.36's default), the
/// other gates at their v1.36 defaults. Upstream's volume plugins (VolumeRestrictions,
/// EBSLimits, GCEPDLimits, NodeVolumeLimits, AzureDiskLimits, VolumeBinding, VolumeZone)
/// are left out: schedkit has no volume model. The default profile built on a handle
/// with those gates has the same plugins, DynamicResources' PostFilter before
/// DefaultPreemption's.
#[test]
fn apply_feature_gates_upstream_table() {
    let upstream_without_dra: Vec<(&str, Option<i64>)> = vec![
        ("SchedulingGates", None),
        ("PrioritySort", None),
        ("NodeUnschedulable", None),
        ("NodeName", None),
        ("TaintToleration", Some(3)),
        ("NodeAffinity", Some(2)),
        ("NodePorts", None),
        ("NodeResourcesFit", Some(1)),
        ("PodTopologySpread", Some(2)),
        ("InterPodAffinity", Some(2)),
        ("DefaultPreemption", None),
        ("NodeResourcesBalancedAllocation", Some(1)),
        ("ImageLocality", Some(1)),
        ("DefaultBinder", None),
    ];
    let mut upstream_with_dra = upstream_without_dra.clone();
    upstream_with_dra.insert(10, ("DynamicResources", None));
    for (case, on, want) in [
        ("Feature gate DynamicResourceAllocation disabled", false, upstream_without_dra),
        ("Feature gate DynamicResourceAllocation enabled", true, upstream_with_dra),
    ] {
        let gates = FeatureGates::default().with(Feature::DynamicResourceAllocation, on);
        let got = default_plugins(gates);
        let got: Vec<(&str, Option<i64>)> =
            got.multi_point.enabled.iter().map(|r| (r.name.as_str(), r.weight)).collect();
        assert_eq!(got, want, "{case}");

        let handle = Handle::default();
        handle.set_feature_gates(gates);
        let profile = Profile::kube_default(&handle);
        let has = |names: Vec<&str>| names.contains(&"DynamicResources");
        assert_eq!(has(profile.filter_plugins()), on, "{case}");
        assert_eq!(has(profile.pre_bind_plugins()), on, "{case}");
        assert_eq!(handle.shared::<schedkit::dra::DraStore>().is_some(), on, "{case}: a store is shared for it");
        let post_filter = profile.post_filter_plugins();
        let want_post_filter: &[&str] =
            if on { &["DynamicResources", "DefaultPreemption"] } else { &["DefaultPreemption"] };
        assert_eq!(post_filter, want_post_filter, "{case}");
    }
    // Already listed, it is not added twice.
    let mut plugins = default_plugins(FeatureGates::default());
    schedkit::plugins::apply_feature_gates(&mut plugins, FeatureGates::default());
    assert_eq!(plugins.multi_point.enabled.iter().filter(|r| r.name == "DynamicResources").count(), 1);
}

/// `disabled: "*"` at one point and the gate-added DynamicResources: upstream merges a
/// profile into `getDefaultPlugins()`, which already carries the gate's plugin, and
/// `expandMultiPointPlugins` then skips every multiPoint plugin at a point whose
/// disabled list holds `*`. So `*` drops DynamicResources there like any default plugin,
/// and only there; disabling it by name at one point works the same way.
#[test]
fn star_at_one_point_drops_the_gate_added_plugin_there_only() {
    let build = |body: &str| {
        let handle = Handle::default();
        let built = load(body).build(&default_registry(), &handle).unwrap();
        built.profiles.into_iter().next().unwrap()
    };
    let p = build(
        r#""profiles": [{"plugins": {"postFilter": {"enabled": [{"name": "CapacityScheduling"}], "disabled": [{"name": "*"}]}}}]"#,
    );
    assert_eq!(p.post_filter_plugins(), ["CapacityScheduling"]);
    assert!(p.filter_plugins().contains(&"DynamicResources"));
    assert_eq!(p.reserve_plugins(), ["DynamicResources"]);
    let p = build(r#""profiles": [{"plugins": {"postFilter": {"disabled": [{"name": "DynamicResources"}]}}}]"#);
    assert_eq!(p.post_filter_plugins(), ["DefaultPreemption"]);
    assert!(p.pre_bind_plugins().contains(&"DynamicResources"));
    // Disabled in multiPoint, it is gone from every point.
    let p = build(r#""profiles": [{"plugins": {"multiPoint": {"disabled": [{"name": "DynamicResources"}]}}}]"#);
    assert!(!format!("{p:?}").contains("DynamicResources"), "{p:?}");
    assert_eq!(p.post_filter_plugins(), ["DefaultPreemption"]);
}
