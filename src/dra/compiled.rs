//! Claims and classes compiled once when they are loaded: selectors parsed and
//! type-checked, counts and names validated, constraints resolved to request indices.

use std::sync::Arc;

use smallvec::SmallVec;

use super::error::DraError;
use super::types::{
    AllocationMode, DeviceClass, DeviceSelector, DeviceTaintRule, OpaqueDeviceConfiguration, ResourceClaim,
};
use crate::model::{Quantity, Toleration};
use crate::selector::{AttributeKey, Selector};

/// A device class with its selectors compiled.
#[derive(Debug, Clone)]
pub struct CompiledClass {
    /// The class as loaded.
    pub class: Arc<DeviceClass>,
    pub(crate) selectors: Vec<Arc<Selector>>,
    /// A stable text of the selectors, used as a cache key.
    pub(crate) key: Arc<str>,
}

pub(crate) fn compile_selectors(object: &str, list: &[DeviceSelector]) -> Result<Vec<Arc<Selector>>, DraError> {
    list.iter()
        .enumerate()
        .map(|(index, s)| {
            let expr = s.cel.as_ref().map(|c| c.expression.as_str()).unwrap_or_default();
            Selector::compile(expr).map(Arc::new).map_err(|source| DraError::BadSelector {
                object: object.to_owned(),
                index,
                expression: expr.to_owned(),
                source: Box::new(source),
            })
        })
        .collect()
}

impl CompiledClass {
    /// Compiles a class's selectors.
    pub fn new(class: DeviceClass) -> Result<CompiledClass, DraError> {
        let name = &class.metadata.name;
        if name.is_empty() {
            return Err(DraError::InvalidClass { class: String::new(), reason: "metadata.name is empty".into() });
        }
        for s in &class.spec.selectors {
            if s.cel.is_none() {
                return Err(DraError::InvalidClass {
                    class: name.clone(),
                    reason: "a selector has no cel expression".into(),
                });
            }
        }
        super::validation::validate_class(&class)?;
        let selectors = compile_selectors(&format!("DeviceClass {name}"), &class.spec.selectors)?;
        let key: String = selectors.iter().map(|s| s.source()).collect::<Vec<_>>().join("\u{0}");
        Ok(CompiledClass { class: Arc::new(class), selectors, key: key.into() })
    }
}

/// A [`DeviceTaintRule`] with its selectors compiled.
#[derive(Debug, Clone)]
pub struct CompiledTaintRule {
    /// The rule as loaded.
    pub rule: Arc<DeviceTaintRule>,
    pub(crate) selectors: Vec<Arc<Selector>>,
    /// The taint as the allocator checks it (`None` for the informational effect `None`).
    pub(crate) taint: Option<crate::model::Taint>,
}

impl CompiledTaintRule {
    /// Validates a rule as the API server does ([`DraError::Invalid`] naming the field)
    /// and compiles its selectors.
    pub fn new(rule: DeviceTaintRule) -> Result<CompiledTaintRule, DraError> {
        super::validation::validate_taint_rule(&rule)?;
        let name = &rule.metadata.name;
        let mut selectors = Vec::new();
        if let Some(sel) = &rule.spec.device_selector {
            selectors = compile_selectors(&format!("DeviceTaintRule {name}"), &sel.selectors)?;
        }
        let t = &rule.spec.taint;
        let effect = match t.effect {
            super::types::DeviceTaintEffect::NoSchedule => Some(crate::model::TaintEffect::NoSchedule),
            super::types::DeviceTaintEffect::NoExecute => Some(crate::model::TaintEffect::NoExecute),
            super::types::DeviceTaintEffect::None => None,
        };
        let taint = effect.map(|effect| crate::model::Taint {
            key: crate::model::Symbol::intern(&t.key),
            value: crate::model::Symbol::intern(&t.value),
            effect,
        });
        Ok(CompiledTaintRule { rule: Arc::new(rule), selectors, taint })
    }
}

/// One way to satisfy a request: the request itself (`exactly`) or one of its
/// `firstAvailable` subrequests.
#[derive(Debug, Clone)]
pub(crate) struct Alternative {
    /// `request` or `request/subrequest`, as results name it.
    pub result_name: String,
    pub class: String,
    pub selectors: Vec<Arc<Selector>>,
    /// `None` is All.
    pub count: Option<u32>,
    pub admin: bool,
    pub tolerations: Vec<Toleration>,
    /// Capacity requests by name as written (qualified per device's driver when used).
    pub capacity: Vec<(String, Quantity)>,
    /// Class key + request selectors: the selector-match cache key.
    pub cache_suffix: String,
}

#[derive(Debug, Clone)]
pub(crate) struct Request {
    pub name: String,
    pub alternatives: Vec<Alternative>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ConstraintKind {
    Match,
    Distinct,
}

#[derive(Debug, Clone)]
pub(crate) struct Constraint {
    pub kind: ConstraintKind,
    pub attribute: AttributeKey,
    pub attribute_name: String,
    /// Names it covers (`request` or `request/sub`); empty = every request.
    pub requests: SmallVec<[String; 2]>,
}

impl Constraint {
    /// Whether a device picked for `request` (result name `result_name`) is covered.
    pub fn covers(&self, request: &str, result_name: &str) -> bool {
        self.requests.is_empty() || self.requests.iter().any(|r| r == request || r == result_name)
    }

    pub fn describe(&self) -> String {
        let k = match self.kind {
            ConstraintKind::Match => "matchAttribute",
            ConstraintKind::Distinct => "distinctAttribute",
        };
        format!("constraint {k} {}", self.attribute_name)
    }
}

/// A claim compiled for allocation.
#[derive(Debug, Clone)]
pub struct CompiledClaim {
    /// The claim as loaded.
    pub claim: Arc<ResourceClaim>,
    /// `namespace/name`.
    pub key: String,
    pub(crate) requests: Vec<Request>,
    pub(crate) constraints: Vec<Constraint>,
    pub(crate) config: Vec<(Vec<String>, Option<OpaqueDeviceConfiguration>)>,
}

struct Raw<'a> {
    name: &'a str,
    class: &'a str,
    selectors: &'a [DeviceSelector],
    mode: Option<AllocationMode>,
    count: Option<i64>,
    admin: bool,
    tolerations: &'a [Toleration],
    capacity: Option<&'a super::types::CapacityRequirements>,
}

impl CompiledClaim {
    /// Validates and compiles a claim. `class` resolves device class names.
    pub fn new(
        claim: ResourceClaim,
        class: impl Fn(&str) -> Option<Arc<CompiledClass>>,
    ) -> Result<CompiledClaim, DraError> {
        let key = format!("{}/{}", ns_or_default(&claim.metadata.namespace), claim.metadata.name);
        let invalid = |reason: String| DraError::InvalidClaim { claim: key.clone(), reason };
        if claim.metadata.name.is_empty() {
            return Err(invalid("metadata.name is empty".into()));
        }
        let devices = &claim.spec.devices;
        // The API server's limits and formats, before anything is compiled.
        super::validation::validate_claim(
            &format!("ResourceClaim {key}"),
            "spec.devices",
            devices,
            claim.status.as_ref(),
        )?;
        let mut requests = Vec::with_capacity(devices.requests.len());
        let mut names = ahash::AHashSet::new();
        for r in &devices.requests {
            if r.name.is_empty() || !names.insert(r.name.as_str()) {
                return Err(invalid(format!("request name {:?} is empty or repeated", r.name)));
            }
            let raws: Vec<Raw<'_>> = match (&r.exactly, r.first_available.is_empty()) {
                (Some(e), true) => vec![Raw {
                    name: &r.name,
                    class: &e.device_class_name,
                    selectors: &e.selectors,
                    mode: e.allocation_mode,
                    count: e.count,
                    admin: e.admin_access == Some(true),
                    tolerations: &e.tolerations,
                    capacity: e.capacity.as_ref(),
                }],
                (None, false) => {
                    let mut sub_names = ahash::AHashSet::new();
                    let mut v = Vec::new();
                    for s in &r.first_available {
                        if s.name.is_empty() || !sub_names.insert(s.name.as_str()) {
                            return Err(invalid(format!(
                                "request {}: subrequest name {:?} is empty or repeated",
                                r.name, s.name
                            )));
                        }
                        v.push(Raw {
                            name: &s.name,
                            class: &s.device_class_name,
                            selectors: &s.selectors,
                            mode: s.allocation_mode,
                            count: s.count,
                            admin: false,
                            tolerations: &s.tolerations,
                            capacity: s.capacity.as_ref(),
                        });
                    }
                    v
                }
                _ => {
                    return Err(invalid(format!(
                        "request {}: exactly one of exactly and firstAvailable must be set",
                        r.name
                    )));
                }
            };
            let sub = !r.first_available.is_empty();
            let mut alternatives = Vec::with_capacity(raws.len());
            for raw in raws {
                let result_name = if sub { format!("{}/{}", r.name, raw.name) } else { r.name.clone() };
                let Some(cls) = class(raw.class) else {
                    return Err(DraError::MissingDeviceClass {
                        claim: key.clone(),
                        request: result_name,
                        class: raw.class.to_owned(),
                    });
                };
                let count = match raw.mode.unwrap_or_default() {
                    AllocationMode::All => None,
                    AllocationMode::ExactCount => {
                        let c = raw.count.unwrap_or(1);
                        if c < 1 || c > i64::from(u32::MAX) {
                            return Err(DraError::InvalidCount { claim: key.clone(), request: result_name, count: c });
                        }
                        Some(c as u32)
                    }
                };
                let selectors =
                    compile_selectors(&format!("ResourceClaim {key}, request {result_name}"), raw.selectors)?;
                let mut cache_suffix = cls.key.to_string();
                for s in &selectors {
                    cache_suffix.push('\u{1}');
                    cache_suffix.push_str(s.source());
                }
                let capacity =
                    raw.capacity.map(|c| c.requests.iter().map(|(k, v)| (k.clone(), *v)).collect()).unwrap_or_default();
                alternatives.push(Alternative {
                    result_name,
                    class: raw.class.to_owned(),
                    selectors,
                    count,
                    admin: raw.admin,
                    tolerations: raw.tolerations.to_vec(),
                    capacity,
                    cache_suffix,
                });
            }
            requests.push(Request { name: r.name.clone(), alternatives });
        }
        let mut constraints = Vec::new();
        for c in &devices.constraints {
            let (kind, attr) = match (&c.match_attribute, &c.distinct_attribute) {
                (Some(a), None) => (ConstraintKind::Match, a),
                (None, Some(a)) => (ConstraintKind::Distinct, a),
                _ => {
                    return Err(invalid(
                        "a constraint needs exactly one of matchAttribute and distinctAttribute".into(),
                    ));
                }
            };
            if !attr.contains('/') {
                return Err(invalid(format!("constraint attribute {attr:?} must be fully qualified (domain/name)")));
            }
            for name in &c.requests {
                let base = name.split_once('/').map_or(name.as_str(), |(b, _)| b);
                if !devices.requests.iter().any(|r| r.name == base) {
                    return Err(invalid(format!("constraint names unknown request {name:?}")));
                }
            }
            constraints.push(Constraint {
                kind,
                attribute: constraint_key(attr),
                attribute_name: attr.clone(),
                requests: c.requests.iter().cloned().collect(),
            });
        }
        let config = devices.config.iter().map(|c| (c.requests.clone(), c.opaque.clone())).collect();
        Ok(CompiledClaim { claim: Arc::new(claim), key, requests, constraints, config })
    }
}

pub(crate) fn ns_or_default(ns: &str) -> &str {
    if ns.is_empty() { "default" } else { ns }
}

/// An attribute key for a constraint's fully qualified name.
fn constraint_key(name: &str) -> AttributeKey {
    AttributeKey::qualified(name, "")
}
