//! The Trimaran plugins' args as scheduler-plugins v1 spells them
//! (`apis/config/v1/types.go`), their defaults (`apis/config/v1/defaults.go`) and
//! the errors of building a plugin from them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::model::{ResourceList, native_names};

/// Metric provider `KubernetesMetricsServer` (the default).
pub const KUBERNETES_METRICS_SERVER: &str = "KubernetesMetricsServer";
/// Metric provider `Prometheus`.
pub const PROMETHEUS: &str = "Prometheus";
/// Metric provider `SignalFx`.
pub const SIGNAL_FX: &str = "SignalFx";

/// TargetLoadPacking's default predicted use of a container without cpu requests or
/// limits (upstream `DefaultRequestsMilliCores`).
pub const DEFAULT_REQUESTS_MILLI_CORES: i64 = 1000;
/// Predicted use of a container with requests but no limits, as a multiple of its
/// request (upstream `DefaultRequestsMultiplier`).
pub const DEFAULT_REQUESTS_MULTIPLIER: &str = "1.5";
/// TargetLoadPacking's target CPU utilisation, percent (upstream
/// `DefaultTargetUtilizationPercent`).
pub const DEFAULT_TARGET_UTILIZATION_PERCENT: i64 = 40;
/// LoadVariationRiskBalancing's multiplier of the deviation.
pub const DEFAULT_SAFE_VARIANCE_MARGIN: f64 = 1.0;
/// LoadVariationRiskBalancing's root power of the deviation.
pub const DEFAULT_SAFE_VARIANCE_SENSITIVITY: f64 = 1.0;
/// LowRiskOverCommitment's smoothing window of the metrics.
pub const DEFAULT_SMOOTHING_WINDOW_SIZE: i64 = 5;
/// LowRiskOverCommitment's weight of the limit risk per resource.
pub const DEFAULT_RISK_LIMIT_WEIGHT: f64 = 0.5;

/// Errors building a Trimaran plugin.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TrimaranError {
    /// The args don't decode.
    #[error("{plugin} args: {message}")]
    InvalidArgs {
        /// The plugin.
        plugin: &'static str,
        /// What serde said, or the unknown field.
        message: String,
    },
    /// Upstream `checkSpecs`: without a watcher address the provider type must be
    /// one of the three known ones.
    #[error("{plugin} args: metricProvider.type: invalid MetricProvider.Type, got {got}")]
    InvalidMetricProvider {
        /// The plugin.
        plugin: &'static str,
        /// The type given.
        got: String,
    },
    /// `defaultRequestsMultiplier` is not a number.
    #[error("{plugin} args: defaultRequestsMultiplier: unable to parse DefaultRequestsMultiplier: {value:?}")]
    BadMultiplier {
        /// The plugin.
        plugin: &'static str,
        /// The text given.
        value: String,
    },
    /// No `watcherAddress`, and no metrics source was shared on the handle: schedkit
    /// does not embed load-watcher's library mode (its metric providers).
    #[error(
        "{plugin}: metricProvider {provider} needs load-watcher as a library, which schedkit does not embed: \
         share a LoadMetricsSource on the Handle (SharedLoadMetrics) or set watcherAddress"
    )]
    NoMetricsSource {
        /// The plugin.
        plugin: &'static str,
        /// The provider type the args name.
        provider: String,
    },
    /// `watcherAddress` set without the `load-watcher` feature.
    #[error("{plugin} args: watcherAddress {address:?} needs schedkit's cargo feature `load-watcher`")]
    FeatureDisabled {
        /// The plugin.
        plugin: &'static str,
        /// The address.
        address: String,
    },
}

/// Where metrics come from when load-watcher runs as a library (upstream
/// `MetricProviderSpec`). schedkit reads only `type` (validated as upstream);
/// the library mode itself is replaced by a [`super::LoadMetricsSource`] on the handle.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MetricProviderSpec {
    /// `KubernetesMetricsServer`, `Prometheus` or `SignalFx`.
    #[serde(rename = "type", default, skip_serializing_if = "String::is_empty")]
    pub provider_type: String,
    /// The provider's address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    /// The provider's token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// Skip TLS verification (defaults to true for Prometheus).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub insecure_skip_verify: Option<bool>,
}

/// Parameters every Trimaran plugin has (upstream `TrimaranSpec`, inlined in each
/// args object).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TrimaranSpec {
    /// Library-mode provider.
    #[serde(default)]
    pub metric_provider: MetricProviderSpec,
    /// The load-watcher service, e.g. `http://load-watcher:2020`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watcher_address: Option<String>,
}

impl TrimaranSpec {
    /// Upstream `SetDefaultTrimaranSpec`: without a watcher address (absent, not
    /// empty) and a provider type, the type is `KubernetesMetricsServer`;
    /// Prometheus skips TLS verification unless told.
    pub fn set_defaults(&mut self) {
        if self.watcher_address.is_none() && self.metric_provider.provider_type.is_empty() {
            KUBERNETES_METRICS_SERVER.clone_into(&mut self.metric_provider.provider_type);
        }
        if self.metric_provider.provider_type == PROMETHEUS && self.metric_provider.insecure_skip_verify.is_none() {
            self.metric_provider.insecure_skip_verify = Some(true);
        }
    }

    /// The watcher address when one is set and non-empty.
    pub fn watcher(&self) -> Option<&str> {
        self.watcher_address.as_deref().filter(|a| !a.is_empty())
    }

    /// Upstream `checkSpecs`.
    pub fn check(&self, plugin: &'static str) -> Result<(), TrimaranError> {
        let t = self.metric_provider.provider_type.as_str();
        if self.watcher().is_none() && ![KUBERNETES_METRICS_SERVER, PROMETHEUS, SIGNAL_FX].contains(&t) {
            return Err(TrimaranError::InvalidMetricProvider { plugin, got: t.to_owned() });
        }
        Ok(())
    }
}

/// Upstream `TargetLoadPackingArgs`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TargetLoadPackingArgs {
    /// Metrics source.
    #[serde(flatten)]
    pub trimaran: TrimaranSpec,
    /// Predicted use of a container without cpu requests or limits (only `cpu` is
    /// read; default `1000m`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_requests: Option<ResourceList>,
    /// Multiple of the request a container without limits is predicted to use
    /// (default `"1.5"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_requests_multiplier: Option<String>,
    /// Target CPU utilisation, percent (default 40; `<= 0` means the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_utilization: Option<i64>,
}

impl TargetLoadPackingArgs {
    /// Upstream `SetDefaults_TargetLoadPackingArgs`.
    pub fn set_defaults(&mut self) {
        self.trimaran.set_defaults();
        if self.default_requests.is_none() {
            let mut l = ResourceList::new();
            l.set(native_names().cpu, crate::model::Quantity::from_milli(DEFAULT_REQUESTS_MILLI_CORES));
            self.default_requests = Some(l);
        }
        if self.default_requests_multiplier.is_none() {
            self.default_requests_multiplier = Some(DEFAULT_REQUESTS_MULTIPLIER.to_owned());
        }
        if self.target_utilization.is_none_or(|t| t <= 0) {
            self.target_utilization = Some(DEFAULT_TARGET_UTILIZATION_PERCENT);
        }
    }
}

/// Upstream `LoadVariationRiskBalancingArgs`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LoadVariationRiskBalancingArgs {
    /// Metrics source.
    #[serde(flatten)]
    pub trimaran: TrimaranSpec,
    /// Multiplier of the deviation (default 1; `< 0` means the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub safe_variance_margin: Option<f64>,
    /// Root power of the deviation (default 1; `< 0` means the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub safe_variance_sensitivity: Option<f64>,
}

impl LoadVariationRiskBalancingArgs {
    /// Upstream `SetDefaults_LoadVariationRiskBalancingArgs`.
    pub fn set_defaults(&mut self) {
        self.trimaran.set_defaults();
        if self.safe_variance_margin.is_none_or(|m| m < 0.0) {
            self.safe_variance_margin = Some(DEFAULT_SAFE_VARIANCE_MARGIN);
        }
        if self.safe_variance_sensitivity.is_none_or(|s| s < 0.0) {
            self.safe_variance_sensitivity = Some(DEFAULT_SAFE_VARIANCE_SENSITIVITY);
        }
    }
}

/// Upstream `LowRiskOverCommitmentArgs`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LowRiskOverCommitmentArgs {
    /// Metrics source.
    #[serde(flatten)]
    pub trimaran: TrimaranSpec,
    /// Windows over which the metrics are smoothed (default 5; `<= 0` means the
    /// default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub smoothing_window_size: Option<i64>,
    /// Weight of the limit risk per resource, in `[0, 1]` (default cpu and memory
    /// 0.5; an out-of-range weight becomes 0.5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub risk_limit_weights: Option<BTreeMap<String, f64>>,
}

impl LowRiskOverCommitmentArgs {
    /// Upstream `SetDefaults_LowRiskOverCommitmentArgs`.
    pub fn set_defaults(&mut self) {
        self.trimaran.set_defaults();
        if self.smoothing_window_size.is_none_or(|w| w <= 0) {
            self.smoothing_window_size = Some(DEFAULT_SMOOTHING_WINDOW_SIZE);
        }
        match &mut self.risk_limit_weights {
            Some(w) if !w.is_empty() => {
                for v in w.values_mut() {
                    if !(0.0..=1.0).contains(v) {
                        *v = DEFAULT_RISK_LIMIT_WEIGHT;
                    }
                }
            }
            _ => {
                self.risk_limit_weights = Some(
                    [("cpu".to_owned(), DEFAULT_RISK_LIMIT_WEIGHT), ("memory".to_owned(), DEFAULT_RISK_LIMIT_WEIGHT)]
                        .into(),
                );
            }
        }
    }
}

/// Decodes a plugin's args: absent means all defaults; `apiVersion` and `kind` are
/// ignored; any other key not in `fields` (or the [`TrimaranSpec`] keys) is an error,
/// as upstream's strict decoding.
pub(crate) fn decode<T: serde::de::DeserializeOwned + Default>(
    plugin: &'static str,
    args: Option<&serde_json::Value>,
    fields: &[&str],
) -> Result<T, TrimaranError> {
    let Some(v) = args else { return Ok(T::default()) };
    let invalid = |message: String| TrimaranError::InvalidArgs { plugin, message };
    let mut obj = match v {
        serde_json::Value::Object(o) => o.clone(),
        serde_json::Value::Null => return Ok(T::default()),
        other => return Err(invalid(format!("expected an object, got {other}"))),
    };
    obj.remove("apiVersion");
    obj.remove("kind");
    if let Some(k) =
        obj.keys().find(|k| !fields.contains(&k.as_str()) && !matches!(k.as_str(), "metricProvider" | "watcherAddress"))
    {
        return Err(invalid(format!("unknown field `{k}`")));
    }
    serde_json::from_value(serde_json::Value::Object(obj)).map_err(|e| invalid(e.to_string()))
}

#[cfg(test)]
#[allow(clippy::float_cmp, reason = "upstream's test tables compare exact values")]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_as_upstream() {
        let mut t = TargetLoadPackingArgs::default();
        t.set_defaults();
        assert_eq!(t.trimaran.metric_provider.provider_type, KUBERNETES_METRICS_SERVER);
        assert_eq!(t.default_requests.as_ref().unwrap().get_str("cpu").unwrap().milli_value(), 1000);
        assert_eq!(t.default_requests_multiplier.as_deref(), Some("1.5"));
        assert_eq!(t.target_utilization, Some(40));
        let mut t = TargetLoadPackingArgs { target_utilization: Some(-3), ..Default::default() };
        t.set_defaults();
        assert_eq!(t.target_utilization, Some(40));

        let mut l = LoadVariationRiskBalancingArgs { safe_variance_margin: Some(-5.0), ..Default::default() };
        l.set_defaults();
        assert_eq!((l.safe_variance_margin, l.safe_variance_sensitivity), (Some(1.0), Some(1.0)));
        let mut l = LoadVariationRiskBalancingArgs { safe_variance_sensitivity: Some(0.0), ..Default::default() };
        l.set_defaults();
        assert_eq!(l.safe_variance_sensitivity, Some(0.0));

        let mut r = LowRiskOverCommitmentArgs { smoothing_window_size: Some(-5), ..Default::default() };
        r.set_defaults();
        assert_eq!(r.smoothing_window_size, Some(5));
        assert_eq!(r.risk_limit_weights.as_ref().unwrap()["memory"], 0.5);
        let mut r = LowRiskOverCommitmentArgs {
            risk_limit_weights: Some([("cpu".to_owned(), 1.5), ("memory".to_owned(), 0.2)].into()),
            ..Default::default()
        };
        r.set_defaults();
        assert_eq!(r.risk_limit_weights.unwrap(), [("cpu".to_owned(), 0.5), ("memory".to_owned(), 0.2)].into());
    }

    #[test]
    fn spec_defaults_and_checks() {
        // An explicit empty watcher address gets no provider default: upstream's New
        // then fails checkSpecs (collector_test.go TestNewCollectorSpecs).
        let mut s = TrimaranSpec { watcher_address: Some(String::new()), ..Default::default() };
        s.set_defaults();
        assert_eq!(
            s.check("X").unwrap_err().to_string(),
            "X args: metricProvider.type: invalid MetricProvider.Type, got "
        );
        let mut p = TrimaranSpec::default();
        p.metric_provider.provider_type = PROMETHEUS.into();
        p.set_defaults();
        assert_eq!(p.metric_provider.insecure_skip_verify, Some(true));
        assert!(p.check("X").is_ok());
        let w = TrimaranSpec { watcher_address: Some("http://w:2020".into()), ..Default::default() };
        assert!(w.check("X").is_ok());
    }

    #[test]
    fn decodes_upstream_spelling() {
        let a: TargetLoadPackingArgs = decode(
            "TargetLoadPacking",
            Some(&json!({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "TargetLoadPackingArgs",
                "watcherAddress": "http://127.0.0.1:2020", "defaultRequests": {"cpu": "2"},
                "defaultRequestsMultiplier": "2", "targetUtilization": 70})),
            &["defaultRequests", "defaultRequestsMultiplier", "targetUtilization"],
        )
        .unwrap();
        assert_eq!(a.trimaran.watcher(), Some("http://127.0.0.1:2020"));
        assert_eq!(a.target_utilization, Some(70));
        let r: LowRiskOverCommitmentArgs = decode(
            "LowRiskOverCommitment",
            Some(&json!({"metricProvider": {"type": "Prometheus", "address": "http://p:9090"},
                "smoothingWindowSize": 3, "riskLimitWeights": {"cpu": 0.1}})),
            &["smoothingWindowSize", "riskLimitWeights"],
        )
        .unwrap();
        assert_eq!(r.trimaran.metric_provider.address.as_deref(), Some("http://p:9090"));
        let e = decode::<LoadVariationRiskBalancingArgs>(
            "LoadVariationRiskBalancing",
            Some(&json!({"safeVarianceMargin": 1, "safeVariance": 2})),
            &["safeVarianceMargin", "safeVarianceSensitivity"],
        )
        .unwrap_err();
        assert_eq!(e.to_string(), "LoadVariationRiskBalancing args: unknown field `safeVariance`");
        let e = decode::<LoadVariationRiskBalancingArgs>(
            "LoadVariationRiskBalancing",
            Some(&json!({"safeVarianceMargin": "x"})),
            &["safeVarianceMargin"],
        )
        .unwrap_err();
        assert!(e.to_string().contains("safeVarianceMargin") || e.to_string().contains("invalid type"), "{e}");
        let e = decode::<LowRiskOverCommitmentArgs>(
            "LowRiskOverCommitment",
            Some(&json!({"metricProvider": {"kind": 1}})),
            &[],
        )
        .unwrap_err();
        assert!(e.to_string().contains("kind"), "{e}");
    }
}
