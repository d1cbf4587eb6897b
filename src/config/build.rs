//! Defaulting a decoded configuration (upstream `SetDefaults_KubeSchedulerConfiguration`)
//! and building its profiles, scheduler settings and queue timings.

use std::time::Duration;

use serde_json::Value;

use super::args::{fill_defaults, plugin_args_kind};
use super::merge::{default_plugins, merge_plugins};
use super::validate::FieldError;
use super::{Extender, KubeSchedulerConfiguration};
use crate::framework::{
    ConfigError, DEFAULT_SCHEDULER_NAME, ExtensionPoint, FeatureGates, Handle, PluginArgs, Profile, ProfileConfig,
    Registry,
};
use crate::queue::QueueConfig;
use crate::scheduler::{SchedulerBuilder, SchedulerConfig};

/// A configuration that could not be built into a scheduler.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// Upstream's validation failed; every error is listed.
    #[error("invalid configuration: {}", join(.0))]
    Invalid(Vec<FieldError>),
    /// A profile could not be built (unknown plugin, bad args, a plugin at a point it
    /// does not implement...).
    #[error("profiles[{index}]: {source}")]
    Profile {
        /// Index in `profiles`.
        index: usize,
        /// The registry's error.
        #[source]
        source: ConfigError,
    },
    /// Upstream's framework needs exactly one QueueSort plugin per profile.
    #[error("only one queue sort plugin required for profile with scheduler name {profile:?}, but got {count}")]
    QueueSort {
        /// Profile name.
        profile: String,
        /// QueueSort plugins enabled.
        count: usize,
    },
    /// An extender manages a resource with `ignoredByScheduler` but a profile has no
    /// NodeResourcesFit args to write it into (upstream `buildExtenders`).
    #[error("can't find NodeResourcesFitArgs in plugin config")]
    NoFitArgsForExtenders {
        /// Index in `profiles`.
        index: usize,
    },
    /// An `extenders[]` entry could not be made into a client (feature `extender`).
    #[error("extenders[{index}]: {message}")]
    Extender {
        /// Index in `extenders`.
        index: usize,
        /// Why.
        message: String,
    },
    /// Upstream's framework needs a Bind plugin per profile.
    #[error("at least one bind plugin is needed for profile with scheduler name {profile:?}")]
    NoBind {
        /// Profile name.
        profile: String,
    },
}

fn join(errs: &[FieldError]) -> String {
    let v: Vec<String> = errs.iter().map(ToString::to_string).collect();
    if v.len() == 1 { v[0].clone() } else { format!("[{}]", v.join(", ")) }
}

/// What a configuration builds: the profiles in file order, the scheduler-wide
/// settings, the queue timings, the validated extenders and the defaulted
/// configuration they came from.
#[derive(Debug, Clone)]
pub struct BuiltConfiguration {
    /// One profile per `profiles[]` entry, merged with the default plugins.
    pub profiles: Vec<Profile>,
    /// `percentageOfNodesToScore` and `parallelism`; the rest at schedkit's defaults.
    pub scheduler: SchedulerConfig,
    /// `podInitialBackoffSeconds` and `podMaxBackoffSeconds`.
    pub queue: QueueConfig,
    /// The extenders, validated.
    pub extenders: Vec<Extender>,
    /// The extenders as HTTP clients in call order (ignorable ones last), which
    /// [`BuiltConfiguration::scheduler_builder`] shares on the handle for the cycle to
    /// call; empty without the `extender` feature.
    pub http_extenders: crate::framework::Extenders,
    /// The defaulted configuration, as kube-scheduler would print it.
    pub defaulted: KubeSchedulerConfiguration,
}

impl BuiltConfiguration {
    /// A scheduler builder with these profiles, settings and queue timings, on
    /// `handle` (pass the handle the profiles were built with).
    pub fn scheduler_builder(self, handle: Handle) -> SchedulerBuilder {
        if !self.http_extenders.is_empty() {
            handle.set_shared(std::sync::Arc::new(self.http_extenders));
        }
        let mut b = crate::scheduler::Scheduler::builder().handle(handle).config(self.scheduler);
        for p in self.profiles {
            b = b.profile(p);
        }
        b.queue_config(self.queue).expect("validated: initial backoff positive and not above the maximum")
    }
}

/// The plugin names a profile enables anywhere, sorted (upstream `pluginsNames`).
fn plugin_names(p: &ProfileConfig) -> Vec<String> {
    let mut v: Vec<String> = std::iter::once(&p.plugins.multi_point)
        .chain(ExtensionPoint::ALL.iter().map(|&pt| p.plugins.point(pt)))
        .flat_map(|s| s.enabled.iter().map(|r| r.name.clone()))
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

impl KubeSchedulerConfiguration {
    /// Upstream's defaulting (`SetDefaults_KubeSchedulerConfiguration`,
    /// `pkg/scheduler/apis/config/v1/defaults.go`): parallelism 16; one profile when
    /// there is none; the name `default-scheduler` when there is exactly one profile
    /// without a name; each profile's plugins merged with the [`default_plugins`] of
    /// `gates` (DynamicResources among them while `DynamicResourceAllocation` is on) and
    /// its plugin args
    /// defaulted, with defaulted args appended for every enabled built-in plugin that
    /// has args and none configured; global `percentageOfNodesToScore` 0; leader
    /// election on with a `leases` lock `kube-system/kube-scheduler`, 15 s lease, 10 s
    /// renew deadline, 2 s retry; client QPS 50, burst 100, protobuf; backoff 1 s and
    /// 10 s; profiling on.
    #[must_use]
    pub fn defaulted(&self, gates: FeatureGates) -> KubeSchedulerConfiguration {
        let mut c = self.clone();
        c.parallelism.get_or_insert(16);
        if c.profiles.is_empty() {
            c.profiles.push(ProfileConfig::default());
        }
        if c.profiles.len() == 1 && c.profiles[0].scheduler_name.is_none() {
            c.profiles[0].scheduler_name = Some(DEFAULT_SCHEDULER_NAME.to_owned());
        }
        let defaults = default_plugins(gates);
        for p in &mut c.profiles {
            p.plugins = merge_plugins(&defaults, Some(&p.plugins));
            for a in &mut p.plugin_config {
                if plugin_args_kind(&a.name).is_some() {
                    if a.args.is_null() {
                        a.args = Value::Object(serde_json::Map::new());
                    }
                    fill_defaults(&a.name, &mut a.args, gates);
                }
            }
            for name in plugin_names(p) {
                if p.plugin_config.iter().any(|a| a.name == name) {
                    continue;
                }
                if let Some(args) = super::default_plugin_args(&name, gates) {
                    p.plugin_config.push(PluginArgs { name, args });
                }
            }
        }
        c.percentage_of_nodes_to_score.get_or_insert(0);
        let le = &mut c.leader_election;
        le.leader_elect.get_or_insert(true);
        for (field, default) in [
            (&mut le.lease_duration, "15s"),
            (&mut le.renew_deadline, "10s"),
            (&mut le.retry_period, "2s"),
            (&mut le.resource_lock, "leases"),
            (&mut le.resource_namespace, "kube-system"),
            (&mut le.resource_name, "kube-scheduler"),
        ] {
            if field.is_empty() {
                *field = default.to_owned();
            }
        }
        let cc = &mut c.client_connection;
        if cc.content_type.is_empty() {
            cc.content_type = "application/vnd.kubernetes.protobuf".to_owned();
        }
        if cc.qps == 0.0 {
            cc.qps = 50.0;
        }
        if cc.burst == 0 {
            cc.burst = 100;
        }
        c.pod_initial_backoff_seconds.get_or_insert(1);
        c.pod_max_backoff_seconds.get_or_insert(10);
        let profiling = *c.enable_profiling.get_or_insert(true);
        if profiling {
            c.enable_contention_profiling.get_or_insert(true);
        }
        c
    }

    /// Defaults, validates and builds the configuration: each profile through
    /// `registry` with `handle` (its feature gates choose the default plugins, default
    /// the args and reach the plugins; with `DynamicResourceAllocation` on, a
    /// [`DraStore`](crate::dra::DraStore) is shared on it first when none is:
    /// [`shared_dra_store`](crate::plugins::shared_dra_store)), then upstream's framework checks (one QueueSort, a
    /// Bind; a Score weight of 0 counts as 1, as upstream). Set `--feature-gates` on
    /// the handle first ([`Handle::set_feature_gates`]); a v1 file has no field for them.
    pub fn build(&self, registry: &Registry, handle: &Handle) -> Result<BuiltConfiguration, BuildError> {
        let gates = handle.feature_gates();
        if gates.enabled(crate::framework::Feature::DynamicResourceAllocation) {
            crate::plugins::shared_dra_store(handle);
        }
        let c = self.defaulted(gates);
        c.validate().map_err(BuildError::Invalid)?;
        let mut profiles = Vec::with_capacity(c.profiles.len());
        let ignored = extender_ignored_resources(&c.extenders);
        for (index, p) in c.profiles.iter().enumerate() {
            let mut p = p.clone();
            if !ignored.is_empty() {
                set_fit_ignored_resources(&mut p, &ignored).ok_or(BuildError::NoFitArgsForExtenders { index })?;
            }
            // Upstream's framework (`getScoreWeights`) reads a weight of 0 as 1.
            for set in [&mut p.plugins.score, &mut p.plugins.multi_point] {
                for r in &mut set.enabled {
                    if r.weight == Some(0) {
                        r.weight = None;
                    }
                }
            }
            for a in &mut p.plugin_config {
                if let Some(obj) = a.args.as_object_mut() {
                    obj.remove("apiVersion");
                    obj.remove("kind");
                }
            }
            let profile = registry.build_profile(&p, handle).map_err(|source| BuildError::Profile { index, source })?;
            let sorts = usize::from(profile.queue_sort_plugin().is_some());
            if sorts != 1 {
                return Err(BuildError::QueueSort { profile: profile.name().to_owned(), count: sorts });
            }
            if profile.bind_plugins().is_empty() {
                return Err(BuildError::NoBind { profile: profile.name().to_owned() });
            }
            profiles.push(profile);
        }
        let scheduler = SchedulerConfig {
            percentage_of_nodes_to_score: c.percentage_of_nodes_to_score.unwrap_or(0) as u32,
            parallelism: c.parallelism.unwrap_or(16) as usize,
            ..SchedulerConfig::default()
        };
        let queue = QueueConfig {
            initial_backoff: Duration::from_secs(c.pod_initial_backoff_seconds.unwrap_or(1) as u64),
            max_backoff: Duration::from_secs(c.pod_max_backoff_seconds.unwrap_or(10) as u64),
            ..QueueConfig::default()
        };
        #[cfg(feature = "extender")]
        let http_extenders = crate::extender::HttpExtender::from_configs(&c.extenders)
            .map_err(|(index, e)| BuildError::Extender { index, message: e.to_string() })?;
        #[cfg(not(feature = "extender"))]
        let http_extenders = crate::framework::Extenders::default();
        Ok(BuiltConfiguration {
            profiles,
            scheduler,
            queue,
            extenders: c.extenders.clone(),
            http_extenders,
            defaulted: c,
        })
    }
}

/// The resources extenders manage with `ignoredByScheduler`, in configuration order.
fn extender_ignored_resources(extenders: &[Extender]) -> Vec<Value> {
    extenders
        .iter()
        .flat_map(|e| &e.managed_resources)
        .filter(|r| r.ignored_by_scheduler)
        .map(|r| Value::String(r.name.clone()))
        .collect()
}

/// Upstream `buildExtenders`: the profile's NodeResourcesFit args get
/// `ignoredResources` **set to** the extenders' ignored resources (replacing what the
/// file had: the extenders take precedence). `None` when the profile has no
/// NodeResourcesFit args (upstream then fails the scheduler's construction).
fn set_fit_ignored_resources(p: &mut ProfileConfig, ignored: &[Value]) -> Option<()> {
    let args = p.plugin_config.iter_mut().find(|a| a.name == crate::plugins::names::NODE_RESOURCES_FIT)?;
    let obj = args.args.as_object_mut()?;
    obj.insert("ignoredResources".to_owned(), Value::Array(ignored.to_vec()));
    Some(())
}
