//! PodDisruptionBudgets, as preemption reads them (`policy/v1.PodDisruptionBudget`).
//!
//! Upstream's disruption controller writes `status.disruptionsAllowed`; preemption
//! only reads it (`filterPodsWithPDBViolation` in
//! `pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go`).
//! schedkit has no controller, so [`PodDisruptionBudget::disruptions_allowed`]
//! computes it from the matching pods the caller counts, the way the controller
//! does for pods without a scaled owner (`pkg/controller/disruption`): the expected
//! count is the number of matching pods, percentages round up. A status value the
//! caller already has (from a real cluster) takes precedence.

use serde::{Deserialize, Serialize};

use super::{LabelSelector, Labels, ObjectMeta};

/// `IntOrString` as budgets use it: a count or a percentage like `"50%"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RawIntOrPercent", into = "RawIntOrPercent")]
pub enum IntOrPercent {
    /// An absolute number of pods.
    Int(i32),
    /// A percentage of the expected pods (0..=100).
    Percent(i32),
}

#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum RawIntOrPercent {
    Int(i64),
    Str(String),
}

impl TryFrom<RawIntOrPercent> for IntOrPercent {
    type Error = PdbError;
    fn try_from(raw: RawIntOrPercent) -> Result<Self, PdbError> {
        match raw {
            RawIntOrPercent::Int(v) => {
                i32::try_from(v).map(IntOrPercent::Int).map_err(|_| PdbError::OutOfRange { value: v.to_string() })
            }
            RawIntOrPercent::Str(s) => {
                let digits = s.strip_suffix('%').ok_or_else(|| PdbError::BadPercent { value: s.clone() })?;
                digits.parse::<i32>().map(IntOrPercent::Percent).map_err(|_| PdbError::BadPercent { value: s.clone() })
            }
        }
    }
}

impl From<IntOrPercent> for RawIntOrPercent {
    fn from(v: IntOrPercent) -> Self {
        match v {
            IntOrPercent::Int(i) => RawIntOrPercent::Int(i64::from(i)),
            IntOrPercent::Percent(p) => RawIntOrPercent::Str(format!("{p}%")),
        }
    }
}

impl IntOrPercent {
    /// The value scaled against `total`, rounding a percentage up (upstream
    /// `intstr.GetScaledValueFromIntOrPercent(.., roundUp=true)`).
    pub fn scaled(self, total: i32) -> i32 {
        match self {
            IntOrPercent::Int(v) => v,
            IntOrPercent::Percent(p) => {
                let v = (i64::from(p) * i64::from(total) + 99).div_euclid(100);
                i32::try_from(v).unwrap_or(i32::MAX)
            }
        }
    }
}

/// A budget that can't be used, saying which field is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PdbError {
    /// `minAvailable` and `maxUnavailable` are mutually exclusive (upstream API validation).
    #[error("PodDisruptionBudget {pdb}: minAvailable and maxUnavailable cannot both be set")]
    BothSet {
        /// `namespace/name`.
        pdb: String,
    },
    /// A negative count or a percentage outside 0..=100.
    #[error(
        "PodDisruptionBudget {pdb}: {field} must be a non-negative count or a percentage in 0%..=100%, got {value}"
    )]
    Invalid {
        /// `namespace/name`.
        pdb: String,
        /// `spec.minAvailable` or `spec.maxUnavailable`.
        field: &'static str,
        /// The value given.
        value: String,
    },
    /// A string that isn't `N%`.
    #[error("PodDisruptionBudget: {value:?} is neither an integer nor a percentage like \"50%\"")]
    BadPercent {
        /// The text.
        value: String,
    },
    /// An integer outside `i32`.
    #[error("PodDisruptionBudget: {value} is out of range")]
    OutOfRange {
        /// The text.
        value: String,
    },
}

/// Budget spec.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PdbSpec {
    /// Which pods (in the budget's namespace); `None` or empty selects none for
    /// preemption, as upstream.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
    /// Pods that must stay available.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_available: Option<IntOrPercent>,
    /// Pods that may be unavailable.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<IntOrPercent>,
}

/// Budget status, when the caller has one from a real disruption controller.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PdbStatus {
    /// Overrides the computed value when set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disruptions_allowed: Option<i32>,
    /// Names of pods already being disrupted (they don't use the budget again). Read
    /// from the API's map of pod name to eviction time, or from a list of names.
    #[serde(skip_serializing_if = "Vec::is_empty", deserialize_with = "disrupted_pod_names")]
    pub disrupted_pods: Vec<String>,
}

/// `status.disruptedPods` is `map[string]metav1.Time` in `policy/v1`; a list of names
/// is accepted too.
fn disrupted_pod_names<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Names(Vec<String>),
        Times(std::collections::BTreeMap<String, serde_json::Value>),
    }
    Ok(match Option::<Raw>::deserialize(d)? {
        None => Vec::new(),
        Some(Raw::Names(v)) => v,
        Some(Raw::Times(m)) => m.into_keys().collect(),
    })
}

/// A PodDisruptionBudget.
///
/// ```
/// use schedkit::model::{PodDisruptionBudget, Labels};
/// let pdb: PodDisruptionBudget = serde_json::from_str(r#"{
///   "metadata": {"name": "web", "namespace": "prod"},
///   "spec": {"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": "25%"}
/// }"#).unwrap();
/// pdb.validate().unwrap();
/// // 10 matching pods, all healthy: 25% of 10 rounds up to 3 disruptions.
/// assert_eq!(pdb.disruptions_allowed(10, 10), 3);
/// assert!(pdb.selects("prod", &Labels::from_pairs([("app", "web")])));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodDisruptionBudget {
    /// Name and namespace.
    pub metadata: ObjectMeta,
    /// Spec.
    pub spec: PdbSpec,
    /// Status.
    pub status: PdbStatus,
}

impl PodDisruptionBudget {
    /// A budget over pods matching `selector` in `namespace` with `minAvailable`.
    pub fn min_available(name: &str, namespace: &str, selector: LabelSelector, min: IntOrPercent) -> Self {
        let mut p = PodDisruptionBudget::default();
        p.metadata.name = name.to_owned();
        p.metadata.namespace = namespace.to_owned();
        p.spec.selector = Some(selector);
        p.spec.min_available = Some(min);
        p
    }

    /// A budget over pods matching `selector` in `namespace` with `maxUnavailable`.
    pub fn max_unavailable(name: &str, namespace: &str, selector: LabelSelector, max: IntOrPercent) -> Self {
        let mut p = PodDisruptionBudget::min_available(name, namespace, selector, IntOrPercent::Int(0));
        p.spec.min_available = None;
        p.spec.max_unavailable = Some(max);
        p
    }

    /// The namespace (`default` when empty).
    pub fn namespace(&self) -> &str {
        if self.metadata.namespace.is_empty() { "default" } else { &self.metadata.namespace }
    }

    fn key(&self) -> String {
        format!("{}/{}", self.namespace(), self.metadata.name)
    }

    /// Checks the spec: not both bounds, no negative counts, percentages in 0..=100.
    pub fn validate(&self) -> Result<(), PdbError> {
        if self.spec.min_available.is_some() && self.spec.max_unavailable.is_some() {
            return Err(PdbError::BothSet { pdb: self.key() });
        }
        let check = |field: &'static str, v: Option<IntOrPercent>| match v {
            Some(IntOrPercent::Int(i)) if i < 0 => {
                Err(PdbError::Invalid { pdb: self.key(), field, value: i.to_string() })
            }
            Some(IntOrPercent::Percent(p)) if !(0..=100).contains(&p) => {
                Err(PdbError::Invalid { pdb: self.key(), field, value: format!("{p}%") })
            }
            _ => Ok(()),
        };
        check("spec.minAvailable", self.spec.min_available)?;
        check("spec.maxUnavailable", self.spec.max_unavailable)
    }

    /// Whether the budget covers a pod with these labels in `namespace`. A missing
    /// or empty selector covers nothing, as upstream preemption treats it.
    pub fn selects(&self, namespace: &str, labels: &Labels) -> bool {
        self.namespace() == namespace && self.spec.selector.as_ref().is_some_and(|s| !s.is_empty() && s.matches(labels))
    }

    /// How many more pods may be disrupted, given how many matching pods exist
    /// (`expected`) and how many of them are healthy, never below 0. The status's
    /// `disruptionsAllowed` wins when set. With neither bound set, `maxUnavailable: 0`
    /// (nothing may be disrupted) is assumed; call [`PodDisruptionBudget::validate`]
    /// first to reject specs with both.
    pub fn disruptions_allowed(&self, healthy: i32, expected: i32) -> i32 {
        if let Some(v) = self.status.disruptions_allowed {
            return v.max(0);
        }
        let desired_healthy = match (self.spec.min_available, self.spec.max_unavailable) {
            (Some(min), _) => min.scaled(expected),
            (None, Some(max)) => expected - max.scaled(expected),
            (None, None) => expected,
        };
        (healthy - desired_healthy).max(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sel() -> LabelSelector {
        LabelSelector::from_labels(Labels::from_pairs([("app", "db")]))
    }

    #[test]
    fn both_bounds_is_a_typed_error() {
        let mut p = PodDisruptionBudget::min_available("a", "ns", sel(), IntOrPercent::Int(1));
        p.spec.max_unavailable = Some(IntOrPercent::Int(1));
        assert_eq!(p.validate(), Err(PdbError::BothSet { pdb: "ns/a".into() }));
    }

    #[test]
    fn negative_and_out_of_range_values_are_rejected() {
        let p = PodDisruptionBudget::min_available("a", "ns", sel(), IntOrPercent::Int(-1));
        assert!(matches!(p.validate(), Err(PdbError::Invalid { field: "spec.minAvailable", .. })));
        let p = PodDisruptionBudget::max_unavailable("a", "ns", sel(), IntOrPercent::Percent(101));
        assert!(matches!(p.validate(), Err(PdbError::Invalid { field: "spec.maxUnavailable", .. })));
        let bad: Result<PodDisruptionBudget, _> = serde_json::from_str(r#"{"spec":{"minAvailable":"half"}}"#);
        assert!(bad.unwrap_err().to_string().contains("percentage"));
    }

    #[test]
    fn disruptions_allowed_like_the_disruption_controller() {
        // minAvailable 2 of 3 healthy -> 1.
        let p = PodDisruptionBudget::min_available("a", "ns", sel(), IntOrPercent::Int(2));
        assert_eq!(p.disruptions_allowed(3, 3), 1);
        assert_eq!(p.disruptions_allowed(1, 3), 0);
        // minAvailable 50% of 5 rounds up to 3 -> 2 allowed.
        let p = PodDisruptionBudget::min_available("a", "ns", sel(), IntOrPercent::Percent(50));
        assert_eq!(p.disruptions_allowed(5, 5), 2);
        // maxUnavailable 1 of 4 with one already down -> 0.
        let p = PodDisruptionBudget::max_unavailable("a", "ns", sel(), IntOrPercent::Int(1));
        assert_eq!(p.disruptions_allowed(3, 4), 0);
        assert_eq!(p.disruptions_allowed(4, 4), 1);
        let mut p = p;
        p.status.disruptions_allowed = Some(7);
        assert_eq!(p.disruptions_allowed(0, 0), 7);
    }

    #[test]
    fn empty_selector_and_other_namespaces_select_nothing() {
        let l = Labels::from_pairs([("app", "db")]);
        let p = PodDisruptionBudget::min_available("a", "ns", sel(), IntOrPercent::Int(1));
        assert!(p.selects("ns", &l));
        assert!(!p.selects("other", &l));
        let p = PodDisruptionBudget::min_available("a", "ns", LabelSelector::default(), IntOrPercent::Int(1));
        assert!(!p.selects("ns", &l));
    }

    #[test]
    fn serde_round_trip() {
        let p = PodDisruptionBudget::max_unavailable("a", "ns", sel(), IntOrPercent::Percent(30));
        let s = serde_json::to_string(&p).unwrap();
        assert!(s.contains(r#""maxUnavailable":"30%""#), "{s}");
        assert_eq!(serde_json::from_str::<PodDisruptionBudget>(&s).unwrap(), p);
    }
}
