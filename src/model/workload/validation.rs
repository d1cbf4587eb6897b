//! The API server's validation of Workload and PodGroup objects (upstream
//! `k8s.io/api/scheduling/v1alpha2/types.go` declarative tags and
//! `pkg/apis/scheduling/validation`): names, limits, one-of policies, gated fields,
//! and immutable fields on update, each problem a [`FieldError`] with its path.

use super::{
    MAX_POD_GROUP_RESOURCE_CLAIMS, MAX_TOPOLOGY_CONSTRAINTS, PodGroup, PodGroupResourceClaim,
    PodGroupSchedulingConstraints, PodGroupSchedulingPolicy, PodGroupTemplateReference, TypedLocalObjectReference,
    WORKLOAD_MAX_POD_GROUP_TEMPLATES, Workload,
};
use crate::framework::{Feature, FeatureGates};
use crate::model::validation::{FieldError, dns1123_label, dns1123_subdomain, qualified_name};

/// A Workload or PodGroup the API server would refuse, with every problem found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind} {name:?} is invalid: {}", errors.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
pub struct WorkloadError {
    /// `Workload` or `PodGroup`.
    pub kind: &'static str,
    /// `namespace/name`.
    pub name: String,
    /// The problems, in field order.
    pub errors: Vec<FieldError>,
}

impl WorkloadError {
    /// Whether a problem is reported at `path`.
    pub fn has(&self, path: &str) -> bool {
        self.errors.iter().any(|e| e.path == path)
    }
}

const IMMUTABLE: &str = "field is immutable";

fn check(errs: &mut Vec<FieldError>, path: &str, value: &str, f: fn(&str) -> Vec<String>) {
    if value.is_empty() {
        errs.push(FieldError::required(path, ""));
    } else if let Some(msg) = f(value).into_iter().next() {
        errs.push(FieldError::invalid(path, value, msg));
    }
}

/// A path segment name (`k8s-path-segment-name`): not `.` or `..`, no `/` or `%`.
fn path_segment_name(value: &str) -> Vec<String> {
    if value == "." || value == ".." {
        return vec![format!("may not be '{value}'")];
    }
    ["/", "%"].iter().filter(|c| value.contains(*c)).map(|c| format!("may not contain '{c}'")).collect()
}

fn meta(errs: &mut Vec<FieldError>, name: &str) {
    check(errs, "metadata.name", name, dns1123_subdomain);
}

/// Union of `basic` and `gang` (exactly one), and `gang.minCount >= 1`.
fn policy(errs: &mut Vec<FieldError>, path: &str, p: &PodGroupSchedulingPolicy) {
    match (&p.basic, &p.gang) {
        (None, None) => errs.push(FieldError::invalid(path, "", "must specify one of: `basic`, `gang`")),
        (Some(_), Some(_)) => errs.push(FieldError::invalid(path, "", "must specify exactly one of: `basic`, `gang`")),
        _ => {}
    }
    if let Some(g) = &p.gang
        && g.min_count < 1
    {
        errs.push(FieldError::invalid_number(
            format!("{path}.gang.minCount"),
            i64::from(g.min_count),
            "must be greater than or equal to 1",
        ));
    }
}

fn constraints(errs: &mut Vec<FieldError>, path: &str, c: Option<&PodGroupSchedulingConstraints>, gates: FeatureGates) {
    let Some(c) = c else { return };
    if !gates.enabled(Feature::TopologyAwareWorkloadScheduling) {
        errs.push(FieldError::forbidden(path, "disabled by feature-gate TopologyAwareWorkloadScheduling"));
        return;
    }
    if c.topology.len() > MAX_TOPOLOGY_CONSTRAINTS {
        errs.push(FieldError::too_many(format!("{path}.topology"), c.topology.len(), MAX_TOPOLOGY_CONSTRAINTS));
    }
    for (i, t) in c.topology.iter().enumerate() {
        check(errs, &format!("{path}.topology[{i}].key"), &t.key, qualified_name);
    }
}

fn claims(errs: &mut Vec<FieldError>, path: &str, claims: &[PodGroupResourceClaim], gates: FeatureGates) {
    if claims.is_empty() {
        return;
    }
    if !gates.enabled(Feature::DRAWorkloadResourceClaims) {
        errs.push(FieldError::forbidden(path, "disabled by feature-gate DRAWorkloadResourceClaims"));
        return;
    }
    if claims.len() > MAX_POD_GROUP_RESOURCE_CLAIMS {
        errs.push(FieldError::too_many(path, claims.len(), MAX_POD_GROUP_RESOURCE_CLAIMS));
    }
    for (i, c) in claims.iter().enumerate() {
        let p = format!("{path}[{i}]");
        check(errs, &format!("{p}.name"), &c.name, dns1123_label);
        if claims[..i].iter().any(|o| o.name == c.name) {
            errs.push(FieldError::duplicate(format!("{p}.name"), &c.name));
        }
        match (&c.resource_claim_name, &c.resource_claim_template_name) {
            (None, None) => errs.push(FieldError::invalid(
                &p,
                "",
                "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`",
            )),
            (Some(_), Some(_)) => errs.push(FieldError::invalid(
                &p,
                "",
                "must specify exactly one of: `resourceClaimName`, `resourceClaimTemplateName`",
            )),
            (Some(n), None) => check(errs, &format!("{p}.resourceClaimName"), n, dns1123_subdomain),
            (None, Some(n)) => check(errs, &format!("{p}.resourceClaimTemplateName"), n, dns1123_subdomain),
        }
    }
}

/// `disruptionMode`, `priorityClassName` and `priority` need `WorkloadAwarePreemption`.
fn preemption_fields(
    errs: &mut Vec<FieldError>,
    path: &str,
    set: (bool, bool, bool),
    priority_class_name: &str,
    gates: FeatureGates,
) {
    let on = gates.enabled(Feature::WorkloadAwarePreemption);
    for (is_set, field) in [(set.0, "disruptionMode"), (set.1, "priorityClassName"), (set.2, "priority")] {
        if is_set && !on {
            errs.push(FieldError::forbidden(
                format!("{path}.{field}"),
                "disabled by feature-gate WorkloadAwarePreemption",
            ));
        }
    }
    if on && set.1 {
        check(errs, &format!("{path}.priorityClassName"), priority_class_name, dns1123_subdomain);
    }
}

fn controller_ref(errs: &mut Vec<FieldError>, r: &TypedLocalObjectReference) {
    let path = "spec.controllerRef";
    if !r.api_group.is_empty()
        && let Some(msg) = dns1123_subdomain(&r.api_group).into_iter().next()
    {
        errs.push(FieldError::invalid(format!("{path}.apiGroup"), &r.api_group, msg));
    }
    check(errs, &format!("{path}.kind"), &r.kind, path_segment_name);
    check(errs, &format!("{path}.name"), &r.name, path_segment_name);
}

fn template_ref(errs: &mut Vec<FieldError>, r: &PodGroupTemplateReference) {
    let path = "spec.podGroupTemplateRef";
    let Some(w) = &r.workload else {
        errs.push(FieldError::invalid(path, "", "must specify one of: `workload`"));
        return;
    };
    check(errs, &format!("{path}.workload.workloadName"), &w.workload_name, dns1123_subdomain);
    check(errs, &format!("{path}.workload.podGroupTemplateName"), &w.pod_group_template_name, dns1123_label);
}

fn finish(kind: &'static str, ns: &str, name: &str, errors: Vec<FieldError>) -> Result<(), WorkloadError> {
    if errors.is_empty() {
        Ok(())
    } else {
        let ns = if ns.is_empty() { "default" } else { ns };
        Err(WorkloadError { kind, name: format!("{ns}/{name}"), errors })
    }
}

impl Workload {
    /// Validates as the API server does on create, under `gates` (fields of gates that
    /// are off are forbidden).
    ///
    /// # Errors
    ///
    /// [`WorkloadError`] listing every problem with its field path.
    pub fn validate(&self, gates: FeatureGates) -> Result<(), WorkloadError> {
        let mut errs = Vec::new();
        meta(&mut errs, &self.metadata.name);
        if let Some(r) = &self.spec.controller_ref {
            controller_ref(&mut errs, r);
        }
        let t = &self.spec.pod_group_templates;
        if t.is_empty() {
            errs.push(FieldError::required("spec.podGroupTemplates", ""));
        }
        if t.len() > WORKLOAD_MAX_POD_GROUP_TEMPLATES {
            errs.push(FieldError::too_many("spec.podGroupTemplates", t.len(), WORKLOAD_MAX_POD_GROUP_TEMPLATES));
        }
        for (i, tpl) in t.iter().enumerate() {
            let p = format!("spec.podGroupTemplates[{i}]");
            check(&mut errs, &format!("{p}.name"), &tpl.name, dns1123_label);
            if t[..i].iter().any(|o| o.name == tpl.name) {
                errs.push(FieldError::duplicate(format!("{p}.name"), &tpl.name));
            }
            policy(&mut errs, &format!("{p}.schedulingPolicy"), &tpl.scheduling_policy);
            constraints(&mut errs, &format!("{p}.schedulingConstraints"), tpl.scheduling_constraints.as_ref(), gates);
            claims(&mut errs, &format!("{p}.resourceClaims"), &tpl.resource_claims, gates);
            let set = (tpl.disruption_mode.is_some(), !tpl.priority_class_name.is_empty(), tpl.priority.is_some());
            preemption_fields(&mut errs, &p, set, &tpl.priority_class_name, gates);
        }
        finish("Workload", &self.metadata.namespace, &self.metadata.name, errs)
    }

    /// Validates an update from `old` to `self`: [`Workload::validate`], and
    /// `spec.controllerRef` (once set) and `spec.podGroupTemplates` unchanged.
    ///
    /// # Errors
    ///
    /// [`WorkloadError`]; an immutable field changed is `Forbidden: field is immutable`.
    pub fn validate_update(&self, old: &Workload, gates: FeatureGates) -> Result<(), WorkloadError> {
        let mut errs = match self.validate(gates) {
            Ok(()) => Vec::new(),
            Err(e) => e.errors,
        };
        if old.spec.controller_ref.is_some() && old.spec.controller_ref != self.spec.controller_ref {
            errs.push(FieldError::forbidden("spec.controllerRef", IMMUTABLE));
        }
        if old.spec.pod_group_templates != self.spec.pod_group_templates {
            errs.push(FieldError::forbidden("spec.podGroupTemplates", IMMUTABLE));
        }
        finish("Workload", &self.metadata.namespace, &self.metadata.name, errs)
    }
}

impl PodGroup {
    /// Validates as the API server does on create, under `gates`.
    ///
    /// ```
    /// use schedkit::framework::{Feature, FeatureGates};
    /// use schedkit::model::workload::PodGroup;
    /// let gates = FeatureGates::default().with(Feature::TopologyAwareWorkloadScheduling, true);
    /// let mut pg = PodGroup::gang("ml", "job", 0).with_topology("rack");
    /// pg.spec.scheduling_constraints.as_mut().unwrap().topology.push(Default::default());
    /// let err = pg.validate(gates).unwrap_err();
    /// let paths: Vec<&str> = err.errors.iter().map(|e| e.path.as_str()).collect();
    /// assert_eq!(paths, [
    ///     "spec.schedulingPolicy.gang.minCount",
    ///     "spec.schedulingConstraints.topology",
    ///     "spec.schedulingConstraints.topology[1].key",
    /// ]);
    /// ```
    ///
    /// # Errors
    ///
    /// [`WorkloadError`] listing every problem with its field path.
    pub fn validate(&self, gates: FeatureGates) -> Result<(), WorkloadError> {
        let mut errs = Vec::new();
        meta(&mut errs, &self.metadata.name);
        let s = &self.spec;
        if let Some(r) = &s.pod_group_template_ref {
            template_ref(&mut errs, r);
        }
        policy(&mut errs, "spec.schedulingPolicy", &s.scheduling_policy);
        constraints(&mut errs, "spec.schedulingConstraints", s.scheduling_constraints.as_ref(), gates);
        claims(&mut errs, "spec.resourceClaims", &s.resource_claims, gates);
        let set = (s.disruption_mode.is_some(), !s.priority_class_name.is_empty(), s.priority.is_some());
        preemption_fields(&mut errs, "spec", set, &s.priority_class_name, gates);
        if self.status.resource_claim_statuses.len() > MAX_POD_GROUP_RESOURCE_CLAIMS {
            errs.push(FieldError::too_many(
                "status.resourceClaimStatuses",
                self.status.resource_claim_statuses.len(),
                MAX_POD_GROUP_RESOURCE_CLAIMS,
            ));
        }
        finish("PodGroup", &self.metadata.namespace, &self.metadata.name, errs)
    }

    /// Validates an update from `old` to `self`: [`PodGroup::validate`], and
    /// `podGroupTemplateRef`, `schedulingPolicy`, `schedulingConstraints` and
    /// `resourceClaims` unchanged (immutable in v1alpha2; `minCount` becomes mutable only
    /// in v1.37).
    ///
    /// ```
    /// use schedkit::model::workload::PodGroup;
    /// let old = PodGroup::gang("ml", "job", 4);
    /// let new = PodGroup::gang("ml", "job", 3);
    /// let err = new.validate_update(&old, Default::default()).unwrap_err();
    /// assert_eq!(err.to_string(), "PodGroup \"ml/job\" is invalid: spec.schedulingPolicy: Forbidden: field is immutable");
    /// ```
    ///
    /// # Errors
    ///
    /// [`WorkloadError`]; an immutable field changed is `Forbidden: field is immutable`.
    pub fn validate_update(&self, old: &PodGroup, gates: FeatureGates) -> Result<(), WorkloadError> {
        let mut errs = match self.validate(gates) {
            Ok(()) => Vec::new(),
            Err(e) => e.errors,
        };
        let (o, n) = (&old.spec, &self.spec);
        if o.pod_group_template_ref != n.pod_group_template_ref {
            errs.push(FieldError::forbidden("spec.podGroupTemplateRef", IMMUTABLE));
        }
        if o.scheduling_policy != n.scheduling_policy {
            errs.push(FieldError::forbidden("spec.schedulingPolicy", IMMUTABLE));
        }
        if o.scheduling_constraints != n.scheduling_constraints {
            errs.push(FieldError::forbidden("spec.schedulingConstraints", IMMUTABLE));
        }
        if o.resource_claims != n.resource_claims {
            errs.push(FieldError::forbidden("spec.resourceClaims", IMMUTABLE));
        }
        finish("PodGroup", &self.metadata.namespace, &self.metadata.name, errs)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{PodGroupTemplate, WorkloadPodGroupTemplateReference, WorkloadSpec};
    use super::*;

    fn all_gates() -> FeatureGates {
        FeatureGates::default()
            .with(Feature::TopologyAwareWorkloadScheduling, true)
            .with(Feature::DRAWorkloadResourceClaims, true)
            .with(Feature::WorkloadAwarePreemption, true)
    }

    fn template(name: &str, policy: PodGroupSchedulingPolicy) -> PodGroupTemplate {
        PodGroupTemplate { name: name.into(), scheduling_policy: policy, ..PodGroupTemplate::default() }
    }

    fn workload(templates: Vec<PodGroupTemplate>) -> Workload {
        let mut w = Workload {
            spec: WorkloadSpec { controller_ref: None, pod_group_templates: templates },
            ..Workload::default()
        };
        w.metadata.name = "w".into();
        w
    }

    #[test]
    fn workload_limits_names_and_unions() {
        let ok = workload(vec![template("a", PodGroupSchedulingPolicy::basic())]);
        ok.validate(all_gates()).unwrap();
        let nine = workload((0..9).map(|i| template(&format!("t{i}"), PodGroupSchedulingPolicy::gang(1))).collect());
        let e = nine.validate(all_gates()).unwrap_err();
        assert_eq!(e.errors[0].to_string(), "spec.podGroupTemplates: Too many: 9: must have at most 8 items");
        let e = workload(vec![]).validate(all_gates()).unwrap_err();
        assert!(e.has("spec.podGroupTemplates"), "{e}");
        let both = PodGroupSchedulingPolicy {
            basic: Some(super::super::BasicSchedulingPolicy::default()),
            gang: Some(super::super::GangSchedulingPolicy::default()),
        };
        let e = workload(vec![template("A", both), template("A", PodGroupSchedulingPolicy::default())])
            .validate(all_gates())
            .unwrap_err();
        let got: Vec<String> = e.errors.iter().map(ToString::to_string).collect();
        assert_eq!(got.len(), 6, "{got:#?}");
        assert!(got[0].starts_with("spec.podGroupTemplates[0].name: Invalid value: \"A\": a lowercase RFC 1123 label"));
        assert_eq!(
            got[1],
            "spec.podGroupTemplates[0].schedulingPolicy: Invalid value: \"\": must specify exactly one of: `basic`, `gang`"
        );
        assert_eq!(
            got[2],
            "spec.podGroupTemplates[0].schedulingPolicy.gang.minCount: Invalid value: 0: must be greater than or equal to 1"
        );
        assert_eq!(got[4], "spec.podGroupTemplates[1].name: Duplicate value: \"A\"");
        assert_eq!(
            got[5],
            "spec.podGroupTemplates[1].schedulingPolicy: Invalid value: \"\": must specify one of: `basic`, `gang`"
        );
    }

    #[test]
    fn pod_group_claims_and_gates() {
        let mut pg = PodGroup::gang("ns", "pg", 2);
        pg.spec.resource_claims = (0..5)
            .map(|i| PodGroupResourceClaim {
                name: format!("c{}", i.min(3)),
                resource_claim_name: Some("claim".into()),
                resource_claim_template_name: (i == 0).then(|| "tpl".into()),
            })
            .collect();
        let e = pg.validate(FeatureGates::default()).unwrap_err();
        assert_eq!(
            e.errors[0].to_string(),
            "spec.resourceClaims: Forbidden: disabled by feature-gate DRAWorkloadResourceClaims"
        );
        let e = pg.validate(all_gates()).unwrap_err();
        let paths: Vec<&str> = e.errors.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(paths, ["spec.resourceClaims", "spec.resourceClaims[0]", "spec.resourceClaims[4].name"]);
        pg.spec.resource_claims.clear();
        pg.spec.priority = Some(10);
        assert!(pg.validate(FeatureGates::default()).unwrap_err().has("spec.priority"));
        pg.validate(all_gates()).unwrap();
        pg.spec.pod_group_template_ref = Some(PodGroupTemplateReference {
            workload: Some(WorkloadPodGroupTemplateReference {
                workload_name: "w".into(),
                pod_group_template_name: "Bad_Name".into(),
            }),
        });
        let e = pg.validate(all_gates()).unwrap_err();
        assert!(e.has("spec.podGroupTemplateRef.workload.podGroupTemplateName"), "{e}");
        pg.metadata.name = String::new();
        assert!(pg.validate(all_gates()).unwrap_err().errors[0].to_string() == "metadata.name: Required value");
    }

    #[test]
    fn immutable_fields_on_update() {
        let old = workload(vec![template("a", PodGroupSchedulingPolicy::gang(2))]);
        let mut new = old.clone();
        new.metadata.labels = crate::model::Labels::from_iter([("team", "ml")]);
        new.validate_update(&old, all_gates()).unwrap();
        new.spec.pod_group_templates[0].scheduling_policy = PodGroupSchedulingPolicy::gang(1);
        assert!(new.validate_update(&old, all_gates()).unwrap_err().has("spec.podGroupTemplates"));
        let mut new = old.clone();
        new.spec.controller_ref =
            Some(TypedLocalObjectReference { api_group: "batch".into(), kind: "Job".into(), name: "j".into() });
        new.validate_update(&old, all_gates()).unwrap(); // set once: allowed
        let mut newer = new.clone();
        newer.spec.controller_ref.as_mut().unwrap().name = "k".into();
        assert!(newer.validate_update(&new, all_gates()).unwrap_err().has("spec.controllerRef"));

        let old = PodGroup::gang("ns", "pg", 2).with_topology("rack");
        let new = PodGroup::gang("ns", "pg", 2).with_topology("zone");
        let e = new.validate_update(&old, all_gates()).unwrap_err();
        assert_eq!(e.errors.len(), 1);
        assert_eq!(e.errors[0].path, "spec.schedulingConstraints");
    }
}
