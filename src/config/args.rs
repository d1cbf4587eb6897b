//! Plugin args in a configuration file: upstream's defaults for every built-in plugin
//! that has args (`SetDefaults_*Args`, `pkg/scheduler/apis/config/v1/defaults.go`), and
//! the strict check that an args object names only fields its plugin knows.

use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::framework::{Feature, FeatureGates};
use crate::plugins::names;

/// The upstream `kind` of a built-in plugin's args (`NodeResourcesFitArgs`), or `None`
/// for a plugin without args (upstream's scheme has no `<Name>Args` type for it).
///
/// ```
/// use schedkit::config::plugin_args_kind;
/// assert_eq!(plugin_args_kind("NodeResourcesFit"), Some("NodeResourcesFitArgs"));
/// assert_eq!(plugin_args_kind("PrioritySort"), None);
/// ```
pub fn plugin_args_kind(plugin: &str) -> Option<&'static str> {
    Some(match plugin {
        names::DEFAULT_PREEMPTION => "DefaultPreemptionArgs",
        names::INTER_POD_AFFINITY => "InterPodAffinityArgs",
        names::NODE_AFFINITY => "NodeAffinityArgs",
        names::NODE_RESOURCES_BALANCED_ALLOCATION => "NodeResourcesBalancedAllocationArgs",
        names::NODE_RESOURCES_FIT => "NodeResourcesFitArgs",
        names::POD_TOPOLOGY_SPREAD => "PodTopologySpreadArgs",
        names::DYNAMIC_RESOURCES => "DynamicResourcesArgs",
        _ => return None,
    })
}

/// `cpu` and `memory` with weight 1: upstream's `defaultResourceSpec`.
fn default_resource_spec() -> Value {
    json!([{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}])
}

/// Upstream's defaulted args for a built-in plugin with none configured, as
/// kube-scheduler appends them to a profile's `pluginConfig`; `None` for plugins
/// without args. DynamicResources' timeouts follow their feature gates, as upstream.
///
/// ```
/// use schedkit::config::default_plugin_args;
/// use schedkit::framework::FeatureGates;
/// let fit = default_plugin_args("NodeResourcesFit", FeatureGates::default()).unwrap();
/// assert_eq!(fit["scoringStrategy"]["type"], "LeastAllocated");
/// assert_eq!(fit["scoringStrategy"]["resources"][1]["name"], "memory");
/// ```
pub fn default_plugin_args(plugin: &str, gates: FeatureGates) -> Option<Value> {
    let mut v = json!({});
    fill_defaults(plugin, &mut v, gates);
    plugin_args_kind(plugin).map(|_| v)
}

/// Fills upstream's defaults into a configured args object, leaving what is set.
pub(crate) fn fill_defaults(plugin: &str, args: &mut Value, gates: FeatureGates) {
    fn set_if_absent(obj: &mut serde_json::Map<String, Value>, key: &str, v: Value) {
        if obj.get(key).is_none_or(Value::is_null) {
            obj.insert(key.to_owned(), v);
        }
    }
    let Some(obj) = args.as_object_mut() else { return };
    match plugin {
        names::DEFAULT_PREEMPTION => {
            set_if_absent(obj, "minCandidateNodesPercentage", json!(10));
            set_if_absent(obj, "minCandidateNodesAbsolute", json!(100));
        }
        names::INTER_POD_AFFINITY => set_if_absent(obj, "hardPodAffinityWeight", json!(1)),
        names::POD_TOPOLOGY_SPREAD if obj.get("defaultingType").and_then(Value::as_str).is_none_or(str::is_empty) => {
            obj.insert("defaultingType".into(), json!("System"));
        }
        names::NODE_RESOURCES_BALANCED_ALLOCATION => default_resources(obj, "resources"),
        names::NODE_RESOURCES_FIT => {
            set_if_absent(
                obj,
                "scoringStrategy",
                json!({"type": "LeastAllocated", "resources": default_resource_spec()}),
            );
            if let Some(s) = obj.get_mut("scoringStrategy").and_then(Value::as_object_mut) {
                default_resources(s, "resources");
            }
        }
        names::DYNAMIC_RESOURCES => {
            if gates.enabled(Feature::DRASchedulerFilterTimeout) {
                set_if_absent(obj, "filterTimeout", json!("10s"));
            }
            if gates.enabled(Feature::DRADeviceBindingConditions) {
                set_if_absent(obj, "bindingTimeout", json!("10m0s"));
            }
        }
        _ => {}
    }
}

/// An empty or absent resources list becomes `cpu` and `memory` with weight 1; a
/// weight of 0 (or none) becomes 1 (upstream `SetDefaults_NodeResourcesFitArgs` and
/// `SetDefaults_NodeResourcesBalancedAllocationArgs`).
fn default_resources(obj: &mut serde_json::Map<String, Value>, key: &str) {
    match obj.get_mut(key) {
        Some(Value::Array(list)) if !list.is_empty() => {
            for r in list.iter_mut().filter_map(Value::as_object_mut) {
                if r.get("weight").is_none_or(|w| w.is_null() || w.as_i64() == Some(0)) {
                    r.insert("weight".into(), json!(1));
                }
            }
        }
        _ => {
            obj.insert(key.to_owned(), default_resource_spec());
        }
    }
}

/// Fields of a built-in plugin's args that the plugin does not know (paths below
/// `args`), as upstream's strict decoding of `<Name>Args` reports them; `apiVersion`
/// and `kind` are allowed. An args object of the wrong shape is reported by the
/// plugin's factory when the profile is built.
pub(crate) fn unknown_arg_fields(plugin: &str, args: &Value) -> Vec<String> {
    use crate::plugins::{default_preemption, inter_pod_affinity, node_affinity, node_resources, pod_topology_spread};
    fn ignored<T: DeserializeOwned>(args: &Value) -> Vec<String> {
        let mut out = Vec::new();
        let Some(obj) = args.as_object() else { return out };
        let mut stripped = obj.clone();
        stripped.remove("apiVersion");
        stripped.remove("kind");
        let v = Value::Object(stripped);
        let _ = serde_ignored::deserialize(&v, |path| out.push(path.to_string())).map(|_: T| ());
        out
    }
    match plugin {
        names::NODE_RESOURCES_FIT => ignored::<node_resources::FitArgs>(args),
        names::NODE_RESOURCES_BALANCED_ALLOCATION => ignored::<node_resources::BalancedAllocationArgs>(args),
        names::INTER_POD_AFFINITY => ignored::<inter_pod_affinity::InterPodAffinityArgs>(args),
        names::POD_TOPOLOGY_SPREAD => ignored::<pod_topology_spread::PodTopologySpreadArgs>(args),
        names::NODE_AFFINITY => ignored::<node_affinity::NodeAffinityArgs>(args),
        names::DEFAULT_PREEMPTION => ignored::<default_preemption::DefaultPreemptionArgs>(args),
        _ => Vec::new(),
    }
}
