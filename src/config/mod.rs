//! `KubeSchedulerConfiguration` files (`kubescheduler.config.k8s.io/v1`): the whole
//! file as a type, decoded strictly from JSON or YAML, defaulted and validated as
//! kube-scheduler does, and built into profiles and scheduler settings.
//!
//! The steps are upstream's, in upstream's order:
//!
//! 1. **decode** ([`KubeSchedulerConfiguration::from_json`](crate::config::KubeSchedulerConfiguration::from_json), `from_yaml` with the `yaml`
//!    feature): unknown fields are errors naming their path (and line and column), as
//!    kube-scheduler's strict decoder; `apiVersion` and `kind` must be
//!    `kubescheduler.config.k8s.io/v1` and `KubeSchedulerConfiguration`;
//! 2. **default** ([`KubeSchedulerConfiguration::defaulted`](crate::config::KubeSchedulerConfiguration::defaulted)): upstream
//!    `SetDefaults_KubeSchedulerConfiguration` (`pkg/scheduler/apis/config/v1/defaults.go`):
//!    one profile named `default-scheduler` when none is given, every profile's plugins
//!    merged with the default plugins ([`merge_plugins`](crate::config::merge_plugins)), default args for every
//!    built-in plugin with args, parallelism 16, backoff 1 s and 10 s;
//! 3. **validate** ([`KubeSchedulerConfiguration::validate`](crate::config::KubeSchedulerConfiguration::validate)): upstream
//!    `ValidateKubeSchedulerConfiguration` (`pkg/scheduler/apis/config/validation`);
//! 4. **build** ([`KubeSchedulerConfiguration::build`](crate::config::KubeSchedulerConfiguration::build)): each profile through a
//!    [`Registry`](crate::framework::Registry), with upstream's framework checks (one
//!    QueueSort, at least one Bind), plus the [`SchedulerConfig`](crate::scheduler::SchedulerConfig)
//!    and [`QueueConfig`](crate::queue::QueueConfig) the file sets.
//!
//! ```
//! use schedkit::config::KubeSchedulerConfiguration;
//! use schedkit::framework::Handle;
//! use schedkit::plugins::default_registry;
//!
//! let file = r#"{
//!   "apiVersion": "kubescheduler.config.k8s.io/v1",
//!   "kind": "KubeSchedulerConfiguration",
//!   "podMaxBackoffSeconds": 30,
//!   "profiles": [{
//!     "schedulerName": "gpu-scheduler",
//!     "plugins": {"score": {"disabled": [{"name": "ImageLocality"}]}},
//!     "pluginConfig": [{"name": "NodeResourcesFit",
//!                       "args": {"scoringStrategy": {"type": "MostAllocated"}}}]
//!   }]
//! }"#;
//! let config = KubeSchedulerConfiguration::from_json(file).unwrap();
//! let built = config.build(&default_registry(), &Handle::default()).unwrap();
//! let profile = &built.profiles[0];
//! assert_eq!(profile.name(), "gpu-scheduler");
//! // Merged with the defaults: Filter and Bind are still there, ImageLocality is not scored.
//! assert!(profile.filter_plugins().contains(&"NodeResourcesFit"));
//! assert_eq!(profile.bind_plugins(), ["DefaultBinder"]);
//! assert!(!profile.score_plugins().iter().any(|(n, _)| *n == "ImageLocality"));
//! assert_eq!(built.queue.max_backoff.as_secs(), 30);
//!
//! let typo = file.replace("\"score\"", "\"scores\"");
//! let err = KubeSchedulerConfiguration::from_json(&typo).unwrap_err();
//! assert!(err.to_string().starts_with("profiles[0].plugins.scores: unknown field `scores`"), "{err}");
//! ```

mod args;
mod build;
mod decode;
mod merge;
mod validate;

use serde::{Deserialize, Serialize};

use crate::framework::ProfileConfig;

pub use args::{default_plugin_args, plugin_args_kind};
pub use build::{BuildError, BuiltConfiguration};
pub use decode::ConfigFileError;
pub use merge::{default_plugins, merge_plugin_set, merge_plugins};
pub use validate::{FieldError, FieldErrorKind};

/// The only `apiVersion` schedkit reads (v1beta2 and v1beta3 were removed upstream in
/// v1.28 and v1.29).
pub const API_VERSION: &str = "kubescheduler.config.k8s.io/v1";
/// The file's `kind`.
pub const KIND: &str = "KubeSchedulerConfiguration";

/// A whole `KubeSchedulerConfiguration` file, shaped as `k8s.io/kube-scheduler/config/v1`.
/// Optional fields stay `None` until [`KubeSchedulerConfiguration::defaulted`](crate::config::KubeSchedulerConfiguration::defaulted).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct KubeSchedulerConfiguration {
    /// `kubescheduler.config.k8s.io/v1`.
    pub api_version: String,
    /// `KubeSchedulerConfiguration`.
    pub kind: String,
    /// Goroutines upstream uses for the scheduling algorithm (default 16): here the
    /// threads for Filter and Score.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parallelism: Option<i32>,
    /// Leader election (parsed and defaulted; the kube runtime uses it).
    pub leader_election: LeaderElectionConfiguration,
    /// API client settings (parsed and defaulted; the kube runtime uses them).
    pub client_connection: ClientConnectionConfiguration,
    /// Profiling switches (parsed only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enable_profiling: Option<bool>,
    /// Contention profiling (parsed only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enable_contention_profiling: Option<bool>,
    /// Global `percentageOfNodesToScore` (0 = adaptive); a profile's own wins.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub percentage_of_nodes_to_score: Option<i32>,
    /// First backoff of an unschedulable pod, seconds (default 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_initial_backoff_seconds: Option<i64>,
    /// Backoff cap, seconds (default 10).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_max_backoff_seconds: Option<i64>,
    /// Profiles, one per scheduler name.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub profiles: Vec<ProfileConfig>,
    /// HTTP scheduler extenders (validated; with the `extender` feature the built
    /// scheduler calls them).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub extenders: Vec<Extender>,
    /// Wait for leadership before filling the informer caches (parsed only).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub delay_cache_until_active: bool,
}

/// `componentbaseconfig.LeaderElectionConfiguration`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct LeaderElectionConfiguration {
    /// Whether to elect a leader (default true).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub leader_elect: Option<bool>,
    /// Lease duration, a Go duration such as `15s` (default `15s`).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub lease_duration: String,
    /// Renew deadline (default `10s`).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub renew_deadline: String,
    /// Retry period (default `2s`).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub retry_period: String,
    /// Lock kind; only `leases` is valid (default).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub resource_lock: String,
    /// Lock object name (default `kube-scheduler`).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub resource_name: String,
    /// Lock object namespace (default `kube-system`).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub resource_namespace: String,
}

/// `componentbaseconfig.ClientConnectionConfiguration`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct ClientConnectionConfiguration {
    /// Path of a kubeconfig file.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub kubeconfig: String,
    /// Accept header.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub accept_content_types: String,
    /// Content type (default `application/vnd.kubernetes.protobuf`).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub content_type: String,
    /// Queries per second (default 50).
    pub qps: f32,
    /// Burst (default 100).
    pub burst: i32,
}

/// One HTTP scheduler extender (`v1.Extender`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct Extender {
    /// URL prefix, e.g. `http://127.0.0.1:8888/scheduler`.
    pub url_prefix: String,
    /// Filter verb; empty means the extender does not filter.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub filter_verb: String,
    /// Preempt verb.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub preempt_verb: String,
    /// Prioritize verb.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub prioritize_verb: String,
    /// Multiplier of the prioritize scores; must be positive with a prioritize verb.
    pub weight: i64,
    /// Bind verb: at most one extender may bind.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub bind_verb: String,
    /// Use HTTPS.
    #[serde(rename = "enableHTTPS")]
    pub enable_https: bool,
    /// TLS settings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_config: Option<ExtenderTlsConfig>,
    /// Call timeout, a Go duration; empty or 0 means 5 s (upstream
    /// `DefaultExtenderTimeout` in `NewHTTPExtender`).
    #[serde(rename = "httpTimeout", skip_serializing_if = "String::is_empty")]
    pub http_timeout: String,
    /// The extender caches node information: send node names only.
    pub node_cache_capable: bool,
    /// Extended resources the extender manages.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub managed_resources: Vec<ExtenderManagedResource>,
    /// Errors from this extender do not fail scheduling.
    pub ignorable: bool,
}

/// `v1.ExtenderTLSConfig`: file paths or inline base64 PEM data.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
#[expect(missing_docs, reason = "fields named as upstream's ExtenderTLSConfig")]
pub struct ExtenderTlsConfig {
    pub insecure: bool,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub server_name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub cert_file: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub key_file: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub ca_file: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub cert_data: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub key_data: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub ca_data: String,
}

/// `v1.ExtenderManagedResource`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct ExtenderManagedResource {
    /// Extended resource name.
    pub name: String,
    /// The scheduler's NodeResourcesFit leaves this resource to the extender.
    pub ignored_by_scheduler: bool,
}
