//! ElasticQuota and its accounting (scheduler-plugins `apis/scheduling/v1alpha1`
//! `ElasticQuota` and `pkg/capacityscheduling/elasticquota.go`).

use std::sync::Arc;

use ahash::{AHashMap, AHashSet};
use serde::{Deserialize, Serialize};

use crate::model::{ObjectMeta, ResourceList, Resources, Symbol, native_names};
use crate::snapshot::PodInfo;

/// An ElasticQuota: per namespace, the guaranteed `min` and the ceiling `max`.
///
/// ```
/// use schedkit::plugins::capacity_scheduling::ElasticQuota;
/// let q: ElasticQuota = serde_json::from_str(r#"{
///   "metadata": {"name": "team-a", "namespace": "team-a"},
///   "spec": {"min": {"nvidia.com/gpu": 8}, "max": {"nvidia.com/gpu": 16}}
/// }"#).unwrap();
/// q.validate().unwrap();
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ElasticQuota {
    /// Name and namespace (the quota covers its namespace's pods).
    pub metadata: ObjectMeta,
    /// Bounds.
    pub spec: ElasticQuotaSpec,
}

/// ElasticQuota bounds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ElasticQuotaSpec {
    /// Guaranteed resources. CPU and memory absent mean 0; another resource absent
    /// from `min` is not checked against it.
    #[serde(skip_serializing_if = "ResourceList::is_empty")]
    pub min: ResourceList,
    /// Ceiling. A resource absent from `max` is unbounded.
    #[serde(skip_serializing_if = "ResourceList::is_empty")]
    pub max: ResourceList,
}

/// A quota that can't be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum QuotaError {
    /// `min` above `max` for a resource.
    #[error("ElasticQuota {namespace}: min {resource} ({min}) is greater than max ({max})")]
    MinOverMax {
        /// Namespace.
        namespace: String,
        /// Resource.
        resource: String,
        /// Its min.
        min: String,
        /// Its max.
        max: String,
    },
    /// A negative quantity.
    #[error("ElasticQuota {namespace}: {field}.{resource} must not be negative, got {value}")]
    Negative {
        /// Namespace.
        namespace: String,
        /// `spec.min` or `spec.max`.
        field: &'static str,
        /// Resource.
        resource: String,
        /// The quantity.
        value: String,
    },
    /// Two quotas for one namespace.
    #[error("ElasticQuota: namespace {0} has more than one quota")]
    Duplicate(String),
}

impl ElasticQuota {
    /// A quota for `namespace` with `min` and `max` given as `(resource, quantity)` text.
    pub fn new(
        namespace: &str,
        min: &[(&str, &str)],
        max: &[(&str, &str)],
    ) -> Result<Self, crate::model::QuantityError> {
        let mut q = ElasticQuota::default();
        q.metadata.name = namespace.to_owned();
        q.metadata.namespace = namespace.to_owned();
        q.spec.min = ResourceList::parse(min.iter().copied())?;
        q.spec.max = ResourceList::parse(max.iter().copied())?;
        Ok(q)
    }

    /// The namespace (`default` when empty).
    pub fn namespace(&self) -> &str {
        if self.metadata.namespace.is_empty() { "default" } else { &self.metadata.namespace }
    }

    /// No negative quantities; `min <= max` for every resource in both.
    pub fn validate(&self) -> Result<(), QuotaError> {
        let ns = self.namespace().to_owned();
        for (field, list) in [("spec.min", &self.spec.min), ("spec.max", &self.spec.max)] {
            for (r, q) in list.iter() {
                if q.sign() < 0 {
                    return Err(QuotaError::Negative {
                        namespace: ns,
                        field,
                        resource: r.as_str().to_owned(),
                        value: q.to_string(),
                    });
                }
            }
        }
        for (r, min) in self.spec.min.iter() {
            if let Some(max) = self.spec.max.get(r)
                && min.nanos() > max.nanos()
            {
                return Err(QuotaError::MinOverMax {
                    namespace: ns,
                    resource: r.as_str().to_owned(),
                    min: min.to_string(),
                    max: max.to_string(),
                });
            }
        }
        Ok(())
    }
}

/// A bound on resources: CPU and memory always, other resources only when listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bound(pub Resources);

/// Upstream `cmp2`: whether `x1 + x2` exceeds `y` in CPU, memory, or any of `x1`'s
/// other resources that `y` lists.
fn over(x1: &Resources, x2: &Resources, y: &Bound) -> bool {
    let y = &y.0;
    let gt = |a: i64, b: i64, c: i64| i128::from(a) + i128::from(b) > i128::from(c);
    if gt(x1.milli_cpu, x2.milli_cpu, y.milli_cpu) || gt(x1.memory, x2.memory, y.memory) {
        return true;
    }
    x1.scalar.iter().any(|&(n, v)| y.scalar.iter().any(|&(m, lim)| m == n && gt(v, x2.scalar(n), lim)))
}

/// One quota's bounds and usage (upstream `ElasticQuotaInfo`).
#[derive(Debug, Clone)]
pub struct QuotaInfo {
    /// Namespace.
    pub namespace: Symbol,
    /// Guaranteed.
    pub min: Bound,
    /// Ceiling.
    pub max: Bound,
    /// Requests of the pods counted.
    pub used: Resources,
    pods: AHashSet<Arc<str>>,
}

impl QuotaInfo {
    fn new(q: &ElasticQuota) -> QuotaInfo {
        let min = q.spec.min.to_resources();
        let mut max = q.spec.max.to_resources();
        let n = native_names();
        if q.spec.max.get(n.cpu).is_none() {
            max.milli_cpu = i64::MAX;
        }
        if q.spec.max.get(n.memory).is_none() {
            max.memory = i64::MAX;
        }
        QuotaInfo {
            namespace: Symbol::intern(q.namespace()),
            min: Bound(min),
            max: Bound(max),
            used: Resources::default(),
            pods: AHashSet::new(),
        }
    }

    /// `used + req > max` (upstream `usedOverMaxWith`).
    pub fn used_over_max_with(&self, req: &Resources) -> bool {
        over(req, &self.used, &self.max)
    }

    /// `used + req > min` (upstream `usedOverMinWith`).
    pub fn used_over_min_with(&self, req: &Resources) -> bool {
        over(req, &self.used, &self.min)
    }

    /// `used > min`: the quota is borrowing (upstream `usedOverMin`).
    pub fn used_over_min(&self) -> bool {
        over(&self.used, &Resources::default(), &self.min)
    }

    /// Counts a pod (once).
    pub fn add_pod(&mut self, pod: &PodInfo) {
        if self.pods.insert(pod.uid.clone()) {
            self.used.add(&pod.requests);
        }
    }

    /// Stops counting a pod.
    pub fn remove_pod(&mut self, pod: &PodInfo) {
        if self.pods.remove(&*pod.uid) {
            self.used.sub(&pod.requests);
        }
    }
}

/// Every quota by namespace (upstream `ElasticQuotaInfos`). Cloned per cycle by
/// reference count; copied only when a dry run changes usage.
#[derive(Debug, Clone, Default)]
pub struct QuotaSet {
    by_ns: AHashMap<Symbol, QuotaInfo>,
}

impl QuotaSet {
    /// Validated quotas, with no usage yet.
    pub fn new(quotas: &[ElasticQuota]) -> Result<QuotaSet, QuotaError> {
        let mut by_ns = AHashMap::new();
        for q in quotas {
            q.validate()?;
            let info = QuotaInfo::new(q);
            if by_ns.insert(info.namespace, info).is_some() {
                return Err(QuotaError::Duplicate(q.namespace().to_owned()));
            }
        }
        Ok(QuotaSet { by_ns })
    }

    /// The quota of a namespace.
    pub fn get(&self, ns: Symbol) -> Option<&QuotaInfo> {
        self.by_ns.get(&ns)
    }

    /// The quota of a namespace, mutably.
    pub fn get_mut(&mut self, ns: Symbol) -> Option<&mut QuotaInfo> {
        self.by_ns.get_mut(&ns)
    }

    /// Every quota.
    pub fn iter(&self) -> impl Iterator<Item = &QuotaInfo> {
        self.by_ns.values()
    }

    /// Upstream `aggregatedUsedOverMinWith`: whether all quotas' usage plus `req`
    /// exceeds the sum of their mins (the cluster's guaranteed capacity).
    pub fn aggregated_used_over_min_with(&self, req: &Resources) -> bool {
        let mut used = Resources::default();
        let mut min = Resources::default();
        for q in self.by_ns.values() {
            used.add(&q.used);
            min.add(&q.min.0);
        }
        over(req, &used, &Bound(min))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::PodBuilder;

    #[test]
    fn bad_quotas_are_typed_errors() {
        let q = ElasticQuota::new("a", &[("cpu", "4")], &[("cpu", "2")]).unwrap();
        assert!(matches!(q.validate(), Err(QuotaError::MinOverMax { .. })));
        let q = ElasticQuota::new("a", &[("cpu", "-1")], &[]).unwrap();
        assert!(matches!(q.validate(), Err(QuotaError::Negative { field: "spec.min", .. })));
        let ok = ElasticQuota::new("a", &[("cpu", "1")], &[]).unwrap();
        assert!(matches!(QuotaSet::new(&[ok.clone(), ok]), Err(QuotaError::Duplicate(_))));
    }

    #[test]
    fn bounds_follow_cmp2() {
        let q = ElasticQuota::new("a", &[("cpu", "2")], &[("cpu", "4"), ("nvidia.com/gpu", "2")]).unwrap();
        let mut set = QuotaSet::new(&[q]).unwrap();
        let a = Symbol::intern("a");
        let pod =
            |cpu: &str, gpu: i64| PodInfo::new(PodBuilder::new(cpu).namespace("a").cpu(cpu).gpus(gpu).build()).unwrap();
        let info = set.get_mut(a).unwrap();
        assert!(!info.used_over_max_with(&pod("4", 2).requests));
        assert!(info.used_over_max_with(&pod("5", 0).requests));
        assert!(info.used_over_max_with(&pod("1", 3).requests));
        // min has no GPU entry: GPUs never push a quota over min.
        assert!(!info.used_over_min_with(&pod("2", 8).requests));
        info.add_pod(&pod("3", 0));
        info.add_pod(&pod("3", 0)); // counted once
        assert_eq!(info.used.milli_cpu, 3000);
        assert!(info.used_over_min());
        assert!(set.aggregated_used_over_min_with(&Resources::default()));
    }
}
