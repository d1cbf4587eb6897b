//! Upstream's validation of a defaulted configuration
//! (`pkg/scheduler/apis/config/validation/validation.go`,
//! `ValidateKubeSchedulerConfiguration`, and component-base's leader election and
//! client connection checks): every error is collected, each naming its field path.

use std::fmt;

use super::KubeSchedulerConfiguration;
use crate::framework::{PluginSetConfig, ProfileConfig};
use crate::model::is_extended_resource_name;

/// What is wrong with a field, as upstream's `field.Error` types.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FieldErrorKind {
    /// `Invalid value: <value>: <detail>`.
    Invalid {
        /// The value, formatted as upstream prints it (strings quoted).
        value: String,
        /// Why.
        detail: String,
    },
    /// `Required value`.
    Required,
    /// `Duplicate value: <value>`.
    Duplicate {
        /// The repeated value.
        value: String,
    },
}

/// One validation error: a field path and what is wrong there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// Field path (`profiles[1].schedulerName`).
    pub path: String,
    /// What is wrong.
    pub kind: FieldErrorKind,
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            FieldErrorKind::Invalid { value, detail } => write!(f, "{}: Invalid value: {value}: {detail}", self.path),
            FieldErrorKind::Required => write!(f, "{}: Required value", self.path),
            FieldErrorKind::Duplicate { value } => write!(f, "{}: Duplicate value: {value}", self.path),
        }
    }
}

fn invalid(path: impl Into<String>, value: impl fmt::Display, detail: impl Into<String>) -> FieldError {
    FieldError { path: path.into(), kind: FieldErrorKind::Invalid { value: value.to_string(), detail: detail.into() } }
}

/// Plugins removed from kube-scheduler that a v1 file may not name (upstream
/// `invalidPluginsByVersion`).
const REMOVED_PLUGINS: [&str; 4] = ["AzureDiskLimits", "CinderLimits", "EBSLimits", "GCEPDLimits"];

/// Nanoseconds of a Go duration string; an empty string is zero.
fn duration_ns(s: &str) -> Result<i64, String> {
    if s.is_empty() { Ok(0) } else { crate::selector::parse_go_duration(s) }
}

impl KubeSchedulerConfiguration {
    /// Upstream's validation of a defaulted configuration; every error found, in
    /// upstream's order. Validate [`KubeSchedulerConfiguration::defaulted`]'s result:
    /// unset fields are errors here (`parallelism` missing reads as 0).
    pub fn validate(&self) -> Result<(), Vec<FieldError>> {
        let mut errs = Vec::new();
        if self.client_connection.burst < 0 {
            errs.push(invalid("clientConnection.burst", self.client_connection.burst, "must be non-negative"));
        }
        self.validate_leader_election(&mut errs);
        if self.parallelism.unwrap_or(0) <= 0 {
            errs.push(invalid(
                "parallelism",
                self.parallelism.unwrap_or(0),
                "should be an integer value greater than zero",
            ));
        }
        if self.profiles.is_empty() {
            errs.push(FieldError { path: "profiles".into(), kind: FieldErrorKind::Required });
        } else {
            for (i, p) in self.profiles.iter().enumerate() {
                validate_profile(&format!("profiles[{i}]"), p, &mut errs);
                let name = p.scheduler_name.as_deref().unwrap_or_default();
                if self.profiles[..i].iter().any(|q| q.scheduler_name.as_deref().unwrap_or_default() == name) {
                    errs.push(FieldError {
                        path: format!("profiles[{i}].schedulerName"),
                        kind: FieldErrorKind::Duplicate { value: format!("{name:?}") },
                    });
                }
            }
            validate_common_queue_sort(&self.profiles, &mut errs);
        }
        if let Some(p) = self.percentage_of_nodes_to_score
            && !(0..=100).contains(&p)
        {
            errs.push(invalid("percentageOfNodesToScore", p, "not in valid range [0-100]"));
        }
        let initial = self.pod_initial_backoff_seconds.unwrap_or(0);
        if initial <= 0 {
            errs.push(invalid("podInitialBackoffSeconds", initial, "must be greater than 0"));
        }
        let max = self.pod_max_backoff_seconds.unwrap_or(0);
        if max < initial {
            errs.push(invalid(
                "podMaxBackoffSeconds",
                max,
                "must be greater than or equal to PodInitialBackoffSeconds",
            ));
        }
        self.validate_extenders(&mut errs);
        if errs.is_empty() { Ok(()) } else { Err(errs) }
    }

    fn validate_leader_election(&self, errs: &mut Vec<FieldError>) {
        let le = &self.leader_election;
        if !le.leader_elect.unwrap_or(true) {
            return;
        }
        let mut ns = |field: &str, s: &str| match duration_ns(s) {
            Ok(v) => v,
            Err(e) => {
                errs.push(invalid(format!("leaderElection.{field}"), format!("{s:?}"), e));
                0
            }
        };
        let lease = ns("leaseDuration", &le.lease_duration);
        let renew = ns("renewDeadline", &le.renew_deadline);
        let retry = ns("retryPeriod", &le.retry_period);
        for (field, v, s) in [
            ("leaseDuration", lease, &le.lease_duration),
            ("renewDeadline", renew, &le.renew_deadline),
            ("retryPeriod", retry, &le.retry_period),
        ] {
            if v <= 0 {
                errs.push(invalid(format!("leaderElection.{field}"), format!("{s:?}"), "must be greater than zero"));
            }
        }
        if lease <= renew {
            errs.push(invalid(
                "leaderElection.leaseDuration",
                format!("{:?}", le.renew_deadline),
                "LeaseDuration must be greater than RenewDeadline",
            ));
        }
        for (field, v) in [
            ("resourceLock", &le.resource_lock),
            ("resourceNamespace", &le.resource_namespace),
            ("resourceName", &le.resource_name),
        ] {
            if v.is_empty() {
                errs.push(invalid(format!("leaderElection.{field}"), "\"\"", format!("{field} is required")));
            }
        }
        if !le.resource_lock.is_empty() && le.resource_lock != "leases" {
            errs.push(invalid(
                "leaderElection.resourceLock",
                format!("{:?}", le.resource_lock),
                "resourceLock value must be \"leases\"",
            ));
        }
    }

    fn validate_extenders(&self, errs: &mut Vec<FieldError>) {
        let mut binders = 0;
        let mut managed: Vec<&str> = Vec::new();
        for (i, e) in self.extenders.iter().enumerate() {
            let path = format!("extenders[{i}]");
            if !e.prioritize_verb.is_empty() && e.weight <= 0 {
                errs.push(invalid(format!("{path}.weight"), e.weight, "must have a positive weight applied to it"));
            }
            if !e.bind_verb.is_empty() {
                binders += 1;
            }
            if let Err(msg) = duration_ns(&e.http_timeout) {
                errs.push(invalid(format!("{path}.httpTimeout"), format!("{:?}", e.http_timeout), msg));
            }
            for (j, r) in e.managed_resources.iter().enumerate() {
                let rpath = format!("{path}.managedResources[{j}].name");
                if let Some(msg) = qualified_name_error(&r.name) {
                    errs.push(invalid(&rpath, format!("{:?}", r.name), msg));
                } else if !is_extended_resource_name(&r.name) {
                    errs.push(invalid(&rpath, format!("{:?}", r.name), "is an invalid extended resource name"));
                }
                if managed.contains(&r.name.as_str()) {
                    errs.push(invalid(&rpath, format!("{:?}", r.name), "duplicate extender managed resource name"));
                }
                managed.push(&r.name);
            }
        }
        if binders > 1 {
            errs.push(invalid(
                "extenders",
                format!("\"found {binders} extenders implementing bind\""),
                "only one extender can implement bind",
            ));
        }
    }
}

fn validate_profile(path: &str, p: &ProfileConfig, errs: &mut Vec<FieldError>) {
    if p.scheduler_name.as_deref().is_none_or(str::is_empty) {
        errs.push(FieldError { path: format!("{path}.schedulerName"), kind: FieldErrorKind::Required });
    }
    if let Some(v) = p.percentage_of_nodes_to_score
        && !(0..=100).contains(&v)
    {
        errs.push(invalid(format!("{path}.percentageOfNodesToScore"), v, "not in valid range [0-100]"));
    }
    let removed = |name: &str| REMOVED_PLUGINS.contains(&name);
    let detail = "was invalid in version \"kubescheduler.config.k8s.io/v1\" (KubeSchedulerConfiguration is version \"kubescheduler.config.k8s.io/v1\")";
    for &pt in &crate::framework::ExtensionPoint::ALL {
        let set: &PluginSetConfig = p.plugins.point(pt);
        for (i, r) in set.enabled.iter().enumerate() {
            if removed(&r.name) {
                errs.push(invalid(
                    format!("{path}.plugins.{}.enabled[{i}]", pt.config_name()),
                    format!("{:?}", r.name),
                    detail,
                ));
            }
        }
    }
    for (i, a) in p.plugin_config.iter().enumerate() {
        let apath = format!("{path}.pluginConfig[{i}]");
        if p.plugin_config[..i].iter().any(|b| b.name == a.name) {
            errs.push(FieldError {
                path: apath.clone(),
                kind: FieldErrorKind::Duplicate { value: format!("{:?}", a.name) },
            });
        }
        if removed(&a.name) {
            errs.push(invalid(&apath, format!("{:?}", a.name), detail));
        }
    }
}

/// Upstream `validateCommonQueueSort`: every profile has the first profile's queueSort
/// set and the same args for that plugin.
fn validate_common_queue_sort(profiles: &[ProfileConfig], errs: &mut Vec<FieldError>) {
    fn args_of<'a>(p: &'a ProfileConfig, sort_name: Option<&str>) -> Option<&'a serde_json::Value> {
        p.plugin_config.iter().find(|a| Some(a.name.as_str()) == sort_name).map(|a| &a.args)
    }
    let canon = &profiles[0].plugins.queue_sort;
    if canon.enabled.len() > 1 {
        errs.push(invalid(
            "profiles[0].plugins.queueSort.Enabled",
            canon.enabled.len(),
            "only one queue sort plugin can be enabled",
        ));
    }
    let sort_name = canon.enabled.first().map(|r| r.name.as_str());
    let canon_args = args_of(&profiles[0], sort_name);
    for (i, p) in profiles.iter().enumerate().skip(1) {
        if &p.plugins.queue_sort != canon {
            errs.push(invalid(
                format!("profiles[{i}].plugins.queueSort"),
                format!("{:?}", p.plugins.queue_sort.enabled.iter().map(|r| r.name.as_str()).collect::<Vec<_>>()),
                "must be the same for all profiles",
            ));
        }
        if sort_name.is_some()
            && let Some(a) = args_of(p, sort_name)
            && Some(a) != canon_args
        {
            errs.push(invalid(
                format!("profiles[{i}].pluginConfig.args"),
                a,
                "queueSort must be the same for all profiles",
            ));
        }
    }
}

/// Upstream `validation.IsQualifiedName`'s first complaint, if any: an optional DNS
/// subdomain prefix and `/`, then a name of at most 63 characters of alphanumerics,
/// `-`, `_` and `.`, starting and ending with an alphanumeric.
fn qualified_name_error(name: &str) -> Option<String> {
    const NAME_MSG: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
    let parts: Vec<&str> = name.split('/').collect();
    let local = match parts.as_slice() {
        [n] => *n,
        [prefix, n] => {
            if prefix.is_empty() {
                return Some("prefix part must be non-empty".into());
            }
            if prefix.len() > 253
                || !prefix.split('.').all(|l| {
                    !l.is_empty()
                        && l.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                        && !l.starts_with('-')
                        && !l.ends_with('-')
                })
            {
                return Some("prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')".into());
            }
            *n
        }
        _ => {
            return Some(format!(
                "a qualified name {NAME_MSG} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            ));
        }
    };
    if local.is_empty() {
        return Some("name part must be non-empty".into());
    }
    if local.len() > 63 {
        return Some("name part must be no more than 63 bytes".into());
    }
    let ok_char = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.');
    let b = local.as_bytes();
    if !b.iter().all(|&c| ok_char(c)) || !b[0].is_ascii_alphanumeric() || !b[b.len() - 1].is_ascii_alphanumeric() {
        return Some(NAME_MSG.into());
    }
    None
}
