//! Profiles as configuration: the `KubeSchedulerProfile`-shaped [`ProfileConfig`],
//! plugin factories by name ([`Registry`]) and how a config becomes a [`Profile`]
//! (upstream `frameworkruntime.NewFramework`'s plugin expansion).

use std::sync::Arc;

use ahash::AHashMap;
use serde::{Deserialize, Serialize};

use super::Handle;
use super::interface::{ExtensionPoint, ExtensionPoints, Plugin};
use super::profile::{ConfigError, MAX_WEIGHT, Named, Profile};
use crate::model::Symbol;

/// One plugin reference in a config's enabled/disabled list.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PluginRef {
    /// Plugin name; `*` in a disabled list means all.
    pub name: String,
    /// Score weight (Score and multiPoint lists only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<i64>,
}

/// Enabled and disabled plugins of one extension point.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct PluginSetConfig {
    /// Enabled, in order.
    pub enabled: Vec<PluginRef>,
    /// Disabled (removes multiPoint-enabled plugins from this point).
    pub disabled: Vec<PluginRef>,
}

/// Plugins per extension point, as in `KubeSchedulerConfiguration.profiles[].plugins`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
#[expect(missing_docs, reason = "one field per extension point, named as upstream")]
pub struct PluginsConfig {
    /// Plugins enabled at every point they implement.
    pub multi_point: PluginSetConfig,
    pub pre_enqueue: PluginSetConfig,
    pub queue_sort: PluginSetConfig,
    pub pre_filter: PluginSetConfig,
    pub filter: PluginSetConfig,
    pub post_filter: PluginSetConfig,
    pub pre_score: PluginSetConfig,
    pub score: PluginSetConfig,
    pub reserve: PluginSetConfig,
    pub permit: PluginSetConfig,
    pub pre_bind: PluginSetConfig,
    pub bind: PluginSetConfig,
    pub post_bind: PluginSetConfig,
    /// v1.36 pod-group placement generators.
    #[serde(skip_serializing_if = "PluginSetConfig::is_empty")]
    pub placement_generate: PluginSetConfig,
    /// v1.36 pod-group placement scorers (weights as for `score`).
    #[serde(skip_serializing_if = "PluginSetConfig::is_empty")]
    pub placement_score: PluginSetConfig,
}

impl PluginsConfig {
    /// The set of one extension point.
    pub fn point(&self, p: ExtensionPoint) -> &PluginSetConfig {
        match p {
            ExtensionPoint::PreEnqueue => &self.pre_enqueue,
            ExtensionPoint::QueueSort => &self.queue_sort,
            ExtensionPoint::PreFilter => &self.pre_filter,
            ExtensionPoint::Filter => &self.filter,
            ExtensionPoint::PostFilter => &self.post_filter,
            ExtensionPoint::PreScore => &self.pre_score,
            ExtensionPoint::Score => &self.score,
            ExtensionPoint::Reserve => &self.reserve,
            ExtensionPoint::Permit => &self.permit,
            ExtensionPoint::PreBind => &self.pre_bind,
            ExtensionPoint::Bind => &self.bind,
            ExtensionPoint::PostBind => &self.post_bind,
            ExtensionPoint::PlacementGenerate => &self.placement_generate,
            ExtensionPoint::PlacementScore => &self.placement_score,
        }
    }
}

impl PluginSetConfig {
    /// Whether nothing is enabled or disabled.
    pub fn is_empty(&self) -> bool {
        self.enabled.is_empty() && self.disabled.is_empty()
    }
}

/// Arguments for one plugin (`pluginConfig[]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginArgs {
    /// Plugin name.
    pub name: String,
    /// Its arguments, as the plugin's factory reads them (absent: `null`).
    #[serde(default)]
    pub args: serde_json::Value,
}

/// A profile in config form, shaped like `KubeSchedulerConfiguration.profiles[]`.
///
/// ```
/// use schedkit::framework::{ProfileConfig, Registry, FilterFn, Handle, Status};
/// let mut registry = Registry::new();
/// registry.register("AlwaysFits", |_args, _handle| {
///     Ok(std::sync::Arc::new(FilterFn::new("AlwaysFits", |_, _, _| Status::SUCCESS)))
/// }).unwrap();
/// let cfg: ProfileConfig = serde_json::from_str(r#"{
///     "schedulerName": "my-scheduler",
///     "plugins": {"multiPoint": {"enabled": [{"name": "AlwaysFits"}]}}
/// }"#).unwrap();
/// let profile = registry.build_profile(&cfg, &Handle::default()).unwrap();
/// assert_eq!(profile.filter_plugins(), ["AlwaysFits"]);
///
/// let bad: ProfileConfig = serde_json::from_str(
///     r#"{"plugins": {"filter": {"enabled": [{"name": "Nope"}]}}}"#).unwrap();
/// assert!(registry.build_profile(&bad, &Handle::default()).unwrap_err().to_string().contains("unknown plugin \"Nope\""));
/// ```
///
/// Unknown fields are errors (`filters:` for `filter:` is caught), as upstream's strict
/// decoding of a `KubeSchedulerProfile`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct ProfileConfig {
    /// Scheduler name (default `default-scheduler`).
    pub scheduler_name: Option<String>,
    /// Per-profile `percentageOfNodesToScore`.
    pub percentage_of_nodes_to_score: Option<i64>,
    /// Per-profile opportunistic batching (schedkit); absent follows the gate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub opportunistic_batching: Option<bool>,
    /// Batch rescoring (schedkit, beyond v1.36; see [`ProfileBuilder::batch_rescoring`](crate::framework::ProfileBuilder::batch_rescoring)).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batch_rescoring: Option<bool>,
    /// Plugins per point.
    pub plugins: PluginsConfig,
    /// Plugin arguments.
    pub plugin_config: Vec<PluginArgs>,
}

/// A plugin factory: builds a plugin from its args (absent when not configured) and
/// the framework handle. Return [`ConfigError::InvalidArgs`]-style messages as `Err`.
pub type PluginFactory =
    Arc<dyn Fn(Option<&serde_json::Value>, &Handle) -> Result<Arc<dyn Plugin>, String> + Send + Sync>;

/// Plugin factories by name (upstream `frameworkruntime.Registry`).
#[derive(Clone, Default)]
pub struct Registry {
    factories: AHashMap<String, PluginFactory>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.names()).finish()
    }
}

/// The scheduler name pods get when they set none.
pub const DEFAULT_SCHEDULER_NAME: &str = "default-scheduler";

impl Registry {
    /// An empty registry.
    pub fn new() -> Registry {
        Registry::default()
    }

    /// Adds a factory; a name may be registered once.
    pub fn register<F>(&mut self, name: &str, factory: F) -> Result<(), ConfigError>
    where
        F: Fn(Option<&serde_json::Value>, &Handle) -> Result<Arc<dyn Plugin>, String> + Send + Sync + 'static,
    {
        if self.factories.contains_key(name) {
            return Err(ConfigError::DuplicateFactory(name.to_owned()));
        }
        self.factories.insert(name.to_owned(), Arc::new(factory));
        Ok(())
    }

    /// Adds a factory or replaces the one registered under `name` (e.g. DefaultBinder
    /// with one that binds through an API server).
    pub fn replace<F>(&mut self, name: &str, factory: F)
    where
        F: Fn(Option<&serde_json::Value>, &Handle) -> Result<Arc<dyn Plugin>, String> + Send + Sync + 'static,
    {
        self.factories.insert(name.to_owned(), Arc::new(factory));
    }

    /// Registered names, sorted.
    pub fn names(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self.factories.keys().map(String::as_str).collect();
        v.sort_unstable();
        v
    }

    /// Whether `name` is registered.
    pub fn contains(&self, name: &str) -> bool {
        self.factories.contains_key(name)
    }

    /// Builds a profile from config with upstream's rules (`frameworkImpl`'s
    /// `updatePluginList` and `expandMultiPointPlugins`, `pkg/scheduler/framework/runtime/framework.go`):
    ///
    /// - each extension point's `enabled` list places a plugin there (it must implement
    ///   the point and appear once in that list);
    /// - unless that point's `disabled` list holds `*`, every `multiPoint` plugin that
    ///   implements the point and is not in the point's `disabled` list is added too;
    /// - a plugin both in `multiPoint` and in a point's `enabled` list is an explicit
    ///   override at that point, not a duplicate: the point's order is the overridden
    ///   plugins (in the point's order), then the other `multiPoint` plugins, then the
    ///   point's remaining `enabled` plugins;
    /// - a plugin twice in `multiPoint` is [`ConfigError::DuplicatePlugin`];
    /// - Score weights come from the `score` list first, then `multiPoint`; no weight
    ///   means 1.
    ///
    /// As upstream's framework, `multiPoint.disabled` is not read here: it takes effect
    /// when a profile is merged with the defaults ([`crate::config::merge_plugins`]). To
    /// drop a plugin from [`default_profile_config`](crate::plugins::default_profile_config),
    /// remove it from `multiPoint.enabled`. Each plugin is built once.
    pub fn build_profile(&self, cfg: &ProfileConfig, handle: &Handle) -> Result<Profile, ConfigError> {
        let profile = cfg.scheduler_name.clone().unwrap_or_else(|| DEFAULT_SCHEDULER_NAME.to_owned());
        let mut built: Vec<Built> = Vec::new();
        let instance = |built: &mut Vec<Built>, name: &str| -> Result<usize, ConfigError> {
            if let Some(i) = built.iter().position(|b| b.name == name) {
                return Ok(i);
            }
            let f = self.factories.get(name).ok_or_else(|| ConfigError::UnknownPlugin {
                profile: profile.clone(),
                name: name.to_owned(),
                known: self.names().join(", "),
            })?;
            let args = cfg.plugin_config.iter().find(|a| a.name == name).map(|a| &a.args).filter(|a| !a.is_null());
            let plugin = f(args, handle).map_err(|message| ConfigError::InvalidArgs {
                profile: profile.clone(),
                name: name.to_owned(),
                message,
            })?;
            let mut points = ExtensionPoints::default();
            plugin.register(&mut points);
            built.push(Built { name: Symbol::intern(name).as_str(), points });
            Ok(built.len() - 1)
        };
        let mp = &cfg.plugins.multi_point;
        let mut per_point: Vec<(ExtensionPoint, Vec<usize>)> = Vec::with_capacity(ExtensionPoint::ALL.len());
        for &pt in &ExtensionPoint::ALL {
            let set = cfg.plugins.point(pt);
            let mut enabled: Vec<usize> = Vec::new();
            for r in &set.enabled {
                let i = instance(&mut built, &r.name)?;
                if enabled.contains(&i) {
                    return Err(ConfigError::DuplicatePlugin { profile, name: r.name.clone() });
                }
                enabled.push(i);
            }
            let mut order = Vec::new();
            if set.disabled.iter().any(|d| d.name == "*") {
                order = enabled;
            } else {
                let mut overrides: Vec<usize> = Vec::new();
                let mut expanded: Vec<usize> = Vec::new();
                for r in &mp.enabled {
                    let i = instance(&mut built, &r.name)?;
                    if set.disabled.iter().any(|d| d.name == r.name) {
                        continue;
                    }
                    if enabled.contains(&i) {
                        if !overrides.contains(&i) {
                            overrides.push(i);
                        }
                        continue;
                    }
                    if expanded.contains(&i) {
                        return Err(ConfigError::DuplicatePlugin { profile, name: r.name.clone() });
                    }
                    if built[i].points.serves(pt) {
                        expanded.push(i);
                    }
                }
                order.extend(enabled.iter().copied().filter(|i| overrides.contains(i)));
                order.extend_from_slice(&expanded);
                order.extend(enabled.iter().copied().filter(|i| !overrides.contains(i)));
            }
            if pt == ExtensionPoint::QueueSort && order.len() > 1 {
                return Err(ConfigError::MultipleQueueSort {
                    profile,
                    names: order.iter().map(|&i| built[i].name.to_owned()).collect(),
                });
            }
            for &i in &order {
                if !built[i].points.serves(pt) {
                    return Err(ConfigError::PointNotImplemented {
                        profile,
                        name: built[i].name.to_owned(),
                        point: pt.config_name(),
                    });
                }
            }
            per_point.push((pt, order));
        }
        // Upstream `getScoreWeights`: the score list's weight wins over multiPoint's.
        let weight_of = |name: &str, pt: ExtensionPoint| {
            let list =
                if pt == ExtensionPoint::PlacementScore { &cfg.plugins.placement_score } else { &cfg.plugins.score };
            list.enabled.iter().chain(&mp.enabled).find(|r| r.name == name).and_then(|r| r.weight)
        };
        let pct = match cfg.percentage_of_nodes_to_score {
            None => None,
            Some(v @ 0..=100) => Some(v as u32),
            Some(value) => return Err(ConfigError::InvalidPercentage { profile, value }),
        };
        let mut p = Profile::empty(profile, pct);
        let mut seen: Vec<usize> = Vec::new();
        // Plugins placed where batching needs a signature (PreFilter, Filter, PreScore, Score).
        let mut in_cycle: Vec<usize> = Vec::new();
        for (pt, order) in per_point {
            let cycle_point = matches!(
                pt,
                ExtensionPoint::PreFilter | ExtensionPoint::Filter | ExtensionPoint::PreScore | ExtensionPoint::Score
            );
            for i in order {
                if cycle_point && !in_cycle.contains(&i) {
                    in_cycle.push(i);
                }
                let b = &built[i];
                let weight = weight_of(b.name, pt).unwrap_or(1);
                if matches!(pt, ExtensionPoint::Score | ExtensionPoint::PlacementScore)
                    && !(1..=MAX_WEIGHT).contains(&weight)
                {
                    return Err(ConfigError::InvalidWeight { profile: p.name, name: b.name.to_owned(), weight });
                }
                p.push_point(b.name, &b.points, pt, weight);
                if !seen.contains(&i) {
                    seen.push(i);
                }
            }
        }
        for i in seen {
            let b = &built[i];
            if let Some(plugin) = &b.points.enqueue {
                p.enqueue.push(Named { name: b.name, plugin: plugin.clone() });
            }
            if let Some(plugin) = &b.points.pod_observer {
                p.pod_observer.push(Named { name: b.name, plugin: plugin.clone() });
            }
            if let Some(plugin) = &b.points.node_observer {
                p.node_observer.push(Named { name: b.name, plugin: plugin.clone() });
            }
            match &b.points.sign {
                Some(plugin) => p.sign.push(Named { name: b.name, plugin: plugin.clone() }),
                None if in_cycle.contains(&i) => p.batching_blockers.push(b.name),
                None => {}
            }
        }
        p.opportunistic_batching = cfg.opportunistic_batching;
        p.batch_rescoring = cfg.batch_rescoring.unwrap_or(false);
        Ok(p.finish())
    }
}

/// A plugin built for a profile: its interned name and every point it implements.
struct Built {
    name: &'static str,
    points: ExtensionPoints,
}
