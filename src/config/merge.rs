//! The default plugins and upstream's merge of a profile's plugins with them
//! (`pkg/scheduler/apis/config/v1/default_plugins.go`: `getDefaultPlugins`,
//! `mergePlugins`, `mergePluginSet`).

use crate::framework::{FeatureGates, PluginRef, PluginSetConfig, PluginsConfig};
use crate::plugins::DEFAULT_PLUGINS;

/// The default plugins as upstream's `getDefaultPlugins` lists them for `gates`, all
/// in `multiPoint`, limited to the plugins schedkit has ([`DEFAULT_PLUGINS`]: no volume
/// plugins), with [`apply_feature_gates`](crate::plugins::apply_feature_gates)'
/// additions: with `DynamicResourceAllocation` on (v1.36's default), DynamicResources
/// right before DefaultPreemption, so an idle claim is deallocated before a pod is
/// evicted.
///
/// ```
/// use schedkit::config::default_plugins;
/// use schedkit::framework::{Feature, FeatureGates};
/// let p = default_plugins(FeatureGates::default());
/// let names: Vec<&str> = p.multi_point.enabled.iter().map(|r| r.name.as_str()).collect();
/// let dra = names.iter().position(|n| *n == "DynamicResources").unwrap();
/// assert_eq!(names[dra + 1], "DefaultPreemption");
/// let off = FeatureGates::default().with(Feature::DynamicResourceAllocation, false);
/// assert!(!default_plugins(off).multi_point.enabled.iter().any(|r| r.name == "DynamicResources"));
/// ```
pub fn default_plugins(gates: FeatureGates) -> PluginsConfig {
    let enabled: Vec<PluginRef> =
        DEFAULT_PLUGINS.iter().map(|&(name, weight)| PluginRef { name: name.to_owned(), weight }).collect();
    let mut plugins =
        PluginsConfig { multi_point: PluginSetConfig { enabled, disabled: Vec::new() }, ..PluginsConfig::default() };
    crate::plugins::apply_feature_gates(&mut plugins, gates);
    plugins
}

/// Merges a profile's plugins into the defaults, point by point with
/// [`merge_plugin_set`] (upstream `mergePlugins`). `custom` is `None` when the profile
/// has no `plugins` field: the defaults are used as they are.
pub fn merge_plugins(defaults: &PluginsConfig, custom: Option<&PluginsConfig>) -> PluginsConfig {
    let Some(c) = custom else { return defaults.clone() };
    let d = defaults;
    PluginsConfig {
        multi_point: merge_plugin_set(&d.multi_point, &c.multi_point),
        pre_enqueue: merge_plugin_set(&d.pre_enqueue, &c.pre_enqueue),
        queue_sort: merge_plugin_set(&d.queue_sort, &c.queue_sort),
        pre_filter: merge_plugin_set(&d.pre_filter, &c.pre_filter),
        filter: merge_plugin_set(&d.filter, &c.filter),
        post_filter: merge_plugin_set(&d.post_filter, &c.post_filter),
        pre_score: merge_plugin_set(&d.pre_score, &c.pre_score),
        score: merge_plugin_set(&d.score, &c.score),
        reserve: merge_plugin_set(&d.reserve, &c.reserve),
        permit: merge_plugin_set(&d.permit, &c.permit),
        pre_bind: merge_plugin_set(&d.pre_bind, &c.pre_bind),
        bind: merge_plugin_set(&d.bind, &c.bind),
        post_bind: merge_plugin_set(&d.post_bind, &c.post_bind),
        placement_generate: merge_plugin_set(&d.placement_generate, &c.placement_generate),
        placement_score: merge_plugin_set(&d.placement_score, &c.placement_score),
    }
}

/// Upstream `mergePluginSet`:
///
/// - `disabled` is the custom set's disabled names, then the default set's (names only,
///   weights dropped);
/// - unless `*` is disabled, the default plugins that are not disabled stay in their
///   order, each replaced in place by a custom entry of the same name (the last such
///   entry when the custom list repeats a name);
/// - then every custom entry that did not replace a default is appended, in order
///   (a repeated name is kept and fails later, when the profile is built).
///
/// ```
/// use schedkit::config::merge_plugin_set;
/// use schedkit::framework::{PluginRef, PluginSetConfig};
/// let r = |n: &str, w: Option<i64>| PluginRef { name: n.into(), weight: w };
/// let defaults = PluginSetConfig { enabled: vec![r("Plugin1", None), r("Plugin2", None), r("Plugin3", None)], disabled: vec![] };
/// let custom = PluginSetConfig { enabled: vec![r("Plugin2", Some(2)), r("Plugin1", Some(1))], disabled: vec![] };
/// // upstream's "OrderPreserveAfterOverride"
/// assert_eq!(merge_plugin_set(&defaults, &custom).enabled,
///            [r("Plugin1", Some(1)), r("Plugin2", Some(2)), r("Plugin3", None)]);
/// ```
pub fn merge_plugin_set(defaults: &PluginSetConfig, custom: &PluginSetConfig) -> PluginSetConfig {
    let disabled: Vec<PluginRef> = custom
        .disabled
        .iter()
        .chain(&defaults.disabled)
        .map(|p| PluginRef { name: p.name.clone(), weight: None })
        .collect();
    let is_disabled = |name: &str| disabled.iter().any(|d| d.name == name);
    // The last custom entry of each name replaces the default (upstream fills a map).
    let replacing = |name: &str| custom.enabled.iter().rposition(|p| p.name == name);
    let mut replaced: Vec<usize> = Vec::new();
    let mut enabled = Vec::new();
    if !is_disabled("*") {
        for d in &defaults.enabled {
            if is_disabled(&d.name) {
                continue;
            }
            match replacing(&d.name) {
                Some(i) => {
                    replaced.push(i);
                    enabled.push(custom.enabled[i].clone());
                }
                None => enabled.push(d.clone()),
            }
        }
    }
    enabled.extend(custom.enabled.iter().enumerate().filter(|(i, _)| !replaced.contains(i)).map(|(_, p)| p.clone()));
    PluginSetConfig { enabled, disabled }
}
