//! Built-in plugins, one module each, named as upstream (see [`names`]), the
//! [`default_registry`] of their factories, and kube-scheduler's default profile.

pub mod capacity_scheduling;
pub mod coscheduling;
pub mod default_binder;
pub mod default_preemption;
pub mod dynamic_resources;
pub mod gang_scheduling;
pub mod gpu_domain;
pub mod gpu_share;
pub mod gpu_topology;
pub mod hami;
pub mod helper;
pub mod image_locality;
pub mod inter_pod_affinity;
pub mod names;
pub mod network_aware;
pub mod node_affinity;
pub mod node_name;
pub mod node_ports;
pub mod node_resource_topology;
pub mod node_resources;
pub mod node_unschedulable;
pub mod pod_group_pods_count;
pub mod pod_topology_spread;
pub mod priority_sort;
pub mod scheduling_gates;
pub mod taint_toleration;
pub mod topology_placement;
pub mod trimaran;
pub(crate) mod workload_memo;

use std::sync::Arc;

use crate::framework::{Handle, Plugin, PluginRef, PluginSetConfig, PluginsConfig, Profile, ProfileConfig, Registry};

/// Every built-in plugin's factory by its upstream name (upstream
/// `plugins/registry.go`). Plugins read their args as upstream's `...Args` types
/// (camelCase); absent args mean upstream's defaults.
///
/// ```
/// let r = schedkit::plugins::default_registry();
/// assert!(r.contains("NodeResourcesFit"));
/// ```
pub fn default_registry() -> Registry {
    type Factory = fn(Option<&serde_json::Value>, &Handle) -> Result<Arc<dyn Plugin>, String>;
    let mut r = Registry::new();
    let mut add = |name: &str, f: Factory| {
        r.register(name, f).expect("built-in plugin names are unique");
    };
    add(names::SCHEDULING_GATES, |_, _| Ok(Arc::new(scheduling_gates::SchedulingGates)));
    add(names::PRIORITY_SORT, |_, _| Ok(Arc::new(priority_sort::PrioritySort)));
    add(names::NODE_UNSCHEDULABLE, |_, _| Ok(Arc::new(node_unschedulable::NodeUnschedulable)));
    add(names::NODE_NAME, |_, _| Ok(Arc::new(node_name::NodeName)));
    add(names::NODE_PORTS, |_, _| Ok(Arc::new(node_ports::NodePorts)));
    add(names::TAINT_TOLERATION, |_, _| Ok(Arc::new(taint_toleration::TaintToleration)));
    add(names::NODE_AFFINITY, |a, _| {
        node_affinity::NodeAffinity::from_config(a).map(|p| Arc::new(p) as Arc<dyn Plugin>).map_err(|e| e.to_string())
    });
    add(names::NODE_RESOURCES_FIT, |a, h| {
        let fit = node_resources::Fit::from_config(a).map_err(|e| e.to_string())?.with_feature_gates(h.feature_gates());
        // Upstream NewFit takes the DeviceClassResolver from the handle's SharedDRAManager
        // (DRAExtendedResource); here: a DraStore shared on the handle.
        let fit = match h.shared::<crate::dra::DraStore>() {
            Some(store) => fit.with_device_classes(store),
            None => fit,
        };
        Ok(Arc::new(fit) as Arc<dyn Plugin>)
    });
    add(names::DYNAMIC_RESOURCES, |a, h| {
        dynamic_resources::DynamicResources::from_config(a, h)
            .map(|p| Arc::new(p) as Arc<dyn Plugin>)
            .map_err(|e| e.to_string())
    });
    add(names::NODE_RESOURCES_BALANCED_ALLOCATION, |a, h| {
        let ba = node_resources::BalancedAllocation::from_config(a)
            .map_err(|e| e.to_string())?
            .with_feature_gates(h.feature_gates());
        // As NodeResourcesFit: upstream takes the resolver from the SharedDRAManager.
        let ba = match h.shared::<crate::dra::DraStore>() {
            Some(store) => ba.with_device_classes(store),
            None => ba,
        };
        Ok(Arc::new(ba) as Arc<dyn Plugin>)
    });
    add(names::POD_TOPOLOGY_SPREAD, |a, h| {
        pod_topology_spread::PodTopologySpread::from_config(a, h)
            .map(|p| Arc::new(p) as Arc<dyn Plugin>)
            .map_err(|e| e.to_string())
    });
    add(names::INTER_POD_AFFINITY, |a, h| {
        inter_pod_affinity::InterPodAffinity::from_config(a, h)
            .map(|p| Arc::new(p) as Arc<dyn Plugin>)
            .map_err(|e| e.to_string())
    });
    add(names::IMAGE_LOCALITY, |_, h| Ok(Arc::new(image_locality::ImageLocality::new(h.clone()))));
    add(names::DEFAULT_PREEMPTION, |a, h| {
        default_preemption::DefaultPreemption::from_config(a, h).map(|p| Arc::new(p) as Arc<dyn Plugin>)
    });
    add(names::CAPACITY_SCHEDULING, |a, h| {
        capacity_scheduling::CapacityScheduling::from_config(a, h).map(|p| Arc::new(p) as Arc<dyn Plugin>)
    });
    add(names::TOPOLOGICAL_SORT, |a, h| {
        network_aware::TopologicalSort::from_config(a, h)
            .map(|p| Arc::new(p) as Arc<dyn Plugin>)
            .map_err(|e| e.to_string())
    });
    add(names::NETWORK_OVERHEAD, |a, h| {
        network_aware::NetworkOverhead::from_config(a, h)
            .map(|p| Arc::new(p) as Arc<dyn Plugin>)
            .map_err(|e| e.to_string())
    });
    add(names::NODE_RESOURCE_TOPOLOGY_MATCH, |a, h| {
        node_resource_topology::NodeResourceTopologyMatch::from_config(a, h)
            .map(|p| Arc::new(p) as Arc<dyn Plugin>)
            .map_err(|e| e.to_string())
    });
    add(names::TARGET_LOAD_PACKING, |a, h| {
        trimaran::TargetLoadPacking::from_config(a, h)
            .map(|p| Arc::new(p) as Arc<dyn Plugin>)
            .map_err(|e| e.to_string())
    });
    add(names::LOAD_VARIATION_RISK_BALANCING, |a, h| {
        trimaran::LoadVariationRiskBalancing::from_config(a, h)
            .map(|p| Arc::new(p) as Arc<dyn Plugin>)
            .map_err(|e| e.to_string())
    });
    add(names::LOW_RISK_OVER_COMMITMENT, |a, h| {
        trimaran::LowRiskOverCommitment::from_config(a, h)
            .map(|p| Arc::new(p) as Arc<dyn Plugin>)
            .map_err(|e| e.to_string())
    });
    add(names::DEFAULT_BINDER, |_, _| Ok(Arc::new(default_binder::DefaultBinder::default())));
    add(names::GANG_SCHEDULING, |_, h| Ok(Arc::new(gang_scheduling::GangScheduling::new(h.clone()))));
    add(names::TOPOLOGY_PLACEMENT_GENERATOR, |_, h| {
        Ok(Arc::new(topology_placement::TopologyPlacementGenerator::new(h.clone())))
    });
    add(names::POD_GROUP_PODS_COUNT, |_, h| Ok(Arc::new(pod_group_pods_count::PodGroupPodsCount::new(h.clone()))));
    add(names::GPU_DOMAIN_PLACEMENT, |a, h| {
        gpu_domain::GpuDomainPlacement::from_config(a, h)
            .map(|p| Arc::new(p) as Arc<dyn Plugin>)
            .map_err(|e| e.to_string())
    });
    add(names::GPU_DOMAIN_FRAGMENTATION, |a, h| {
        gpu_domain::GpuDomainFragmentation::from_config(a, h)
            .map(|p| Arc::new(p) as Arc<dyn Plugin>)
            .map_err(|e| e.to_string())
    });
    add(names::HAMI_VGPU, |a, h| hami::HamiVgpu::from_config(a, h).map(|p| Arc::new(p) as Arc<dyn Plugin>));
    r
}

/// Upstream `applyFeatureGates` (`pkg/scheduler/apis/config/v1/default_plugins.go`):
/// `DynamicResourceAllocation` (on by default) inserts DynamicResources right before
/// DefaultPreemption in `multiPoint` (so PostFilter first tries to deallocate an idle
/// claim before it evicts a pod; nothing happens when DefaultPreemption is absent or
/// DynamicResources already present), `GangScheduling` appends GangScheduling,
/// `TopologyAwareWorkloadScheduling` appends TopologyPlacementGenerator and
/// PodGroupPodsCount (weight 1).
///
/// ```
/// use schedkit::framework::{Feature, FeatureGates};
/// use schedkit::plugins::{apply_feature_gates, default_profile_config};
/// let mut cfg = default_profile_config();
/// apply_feature_gates(&mut cfg.plugins, FeatureGates::default().with(Feature::GangScheduling, true));
/// assert_eq!(cfg.plugins.multi_point.enabled.last().unwrap().name, "GangScheduling");
/// ```
pub fn apply_feature_gates(plugins: &mut PluginsConfig, gates: crate::framework::FeatureGates) {
    use crate::framework::Feature;
    let mp = &mut plugins.multi_point.enabled;
    if gates.enabled(Feature::DynamicResourceAllocation)
        && !mp.iter().any(|r| r.name == names::DYNAMIC_RESOURCES)
        && let Some(i) = mp.iter().position(|r| r.name == names::DEFAULT_PREEMPTION)
    {
        mp.insert(i, PluginRef { name: names::DYNAMIC_RESOURCES.to_owned(), weight: None });
    }
    if gates.enabled(Feature::GangScheduling) {
        mp.push(PluginRef { name: names::GANG_SCHEDULING.to_owned(), weight: None });
    }
    if gates.enabled(Feature::TopologyAwareWorkloadScheduling) {
        mp.push(PluginRef { name: names::TOPOLOGY_PLACEMENT_GENERATOR.to_owned(), weight: None });
        mp.push(PluginRef { name: names::POD_GROUP_PODS_COUNT.to_owned(), weight: Some(1) });
    }
}

/// kube-scheduler's default plugins with their weights, in upstream order
/// (`pkg/scheduler/apis/config/v1/default_plugins.go`, `getDefaultPlugins`), limited to
/// the plugins schedkit has: the volume plugins (VolumeRestrictions,
/// NodeVolumeLimits, VolumeBinding, VolumeZone) are left out because schedkit has
/// no volume model.
pub const DEFAULT_PLUGINS: &[(&str, Option<i64>)] = &[
    (names::SCHEDULING_GATES, None),
    (names::PRIORITY_SORT, None),
    (names::NODE_UNSCHEDULABLE, None),
    (names::NODE_NAME, None),
    (names::TAINT_TOLERATION, Some(3)),
    (names::NODE_AFFINITY, Some(2)),
    (names::NODE_PORTS, None),
    (names::NODE_RESOURCES_FIT, Some(1)),
    (names::POD_TOPOLOGY_SPREAD, Some(2)),
    (names::INTER_POD_AFFINITY, Some(2)),
    (names::DEFAULT_PREEMPTION, None),
    (names::NODE_RESOURCES_BALANCED_ALLOCATION, Some(1)),
    (names::IMAGE_LOCALITY, Some(1)),
    (names::DEFAULT_BINDER, None),
];

/// The [`DraStore`](crate::dra::DraStore) shared on `handle`, sharing a new one first
/// when there is none: upstream's framework always has a DRA manager, so a default
/// profile with DynamicResources builds on any handle. DynamicResources,
/// NodeResourcesFit and NodeResourcesBalancedAllocation then read the same store.
pub fn shared_dra_store(handle: &Handle) -> Arc<crate::dra::DraStore> {
    if let Some(store) = handle.shared::<crate::dra::DraStore>() {
        return store;
    }
    let store = Arc::new(crate::dra::DraStore::new());
    handle.set_shared(store.clone());
    store
}

/// The default profile as config: every [`DEFAULT_PLUGINS`] entry in `multiPoint`
/// (without the feature gates' additions: [`apply_feature_gates`] adds them).
/// Edit it (disable, add, set `pluginConfig`) and build it with
/// [`default_registry`] to customise the default like a `KubeSchedulerConfiguration`.
pub fn default_profile_config() -> ProfileConfig {
    ProfileConfig {
        plugins: PluginsConfig {
            multi_point: PluginSetConfig {
                enabled: DEFAULT_PLUGINS
                    .iter()
                    .map(|&(name, weight)| PluginRef { name: name.to_owned(), weight })
                    .collect(),
                disabled: Vec::new(),
            },
            ..PluginsConfig::default()
        },
        ..ProfileConfig::default()
    }
}

impl Profile {
    /// kube-scheduler's default profile (`default-scheduler`), with upstream's plugins,
    /// order and weights (see [`DEFAULT_PLUGINS`]).
    ///
    /// ```
    /// use schedkit::framework::{Handle, Profile};
    /// let p = Profile::kube_default(&Handle::default());
    /// assert_eq!(p.name(), "default-scheduler");
    /// assert!(p.score_plugins().contains(&("TaintToleration", 3)));
    /// ```
    ///
    /// The plugins of the handle's [`FeatureGates`](crate::framework::FeatureGates)
    /// join ([`apply_feature_gates`]): with v1.36's defaults, DynamicResources (over the
    /// handle's [`DraStore`](crate::dra::DraStore), shared first if missing:
    /// [`shared_dra_store`]).
    pub fn kube_default(handle: &Handle) -> Profile {
        let mut cfg = default_profile_config();
        let gates = handle.feature_gates();
        if gates.enabled(crate::framework::Feature::DynamicResourceAllocation) {
            shared_dra_store(handle);
        }
        apply_feature_gates(&mut cfg.plugins, gates);
        default_registry().build_profile(&cfg, handle).expect("the built-in default profile is valid (tested)")
    }
}
