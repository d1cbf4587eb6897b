//! The v1.36 workload API objects through `schedkit::manifest`: exact round trips of
//! Workload and PodGroup manifests (YAML and JSON, written from upstream's
//! `scheduling/v1alpha2/types.go` and the v1.35 gang-scheduling blog's example), the
//! v1alpha1 Workload and a v1.35 pod's `spec.workloadRef` converted, kind and version
//! checks, and validation errors with field paths.

use schedkit::framework::{Feature, FeatureGates};
use schedkit::manifest::{self, LoadOptions, ManifestError};
use schedkit::model::Pod;
use schedkit::model::workload::{PodGroup, Workload, v1alpha1};

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!("{}/../tests/fixtures/workload/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

fn gates() -> FeatureGates {
    FeatureGates::default()
        .with(Feature::GenericWorkload, true)
        .with(Feature::TopologyAwareWorkloadScheduling, true)
        .with(Feature::DRAWorkloadResourceClaims, true)
}

/// The text as a JSON value without `apiVersion` and `kind` (which the objects don't carry).
fn body(text: &str) -> serde_json::Value {
    let mut v: serde_json::Value = serde_norway::from_str(text).unwrap();
    let m = v.as_object_mut().unwrap();
    m.remove("apiVersion");
    m.remove("kind");
    v
}

#[test]
fn v1alpha2_manifests_round_trip_exactly() {
    for (file, kind) in [("workload-v1alpha2.yaml", "Workload"), ("podgroup-v1alpha2.yaml", "PodGroup")] {
        let text = fixture(file);
        let value = if kind == "Workload" {
            let w = manifest::from_yaml::<Workload>(&text, LoadOptions::strict()).unwrap();
            assert!(w.ignored.is_empty(), "{:?}", w.ignored);
            w.object.validate(gates()).unwrap();
            let json = serde_json::to_string(&w.object).unwrap();
            assert_eq!(manifest::from_json::<Workload>(&json, LoadOptions::strict()).unwrap().object, w.object);
            serde_json::to_value(&w.object).unwrap()
        } else {
            let pg = manifest::from_yaml::<PodGroup>(&text, LoadOptions::strict()).unwrap();
            assert!(pg.ignored.is_empty(), "{:?}", pg.ignored);
            pg.object.validate(gates()).unwrap();
            assert_eq!(pg.object.scheduled_condition().unwrap().reason, "Scheduled");
            serde_json::to_value(&pg.object).unwrap()
        };
        assert_eq!(value, body(&text), "{file}");
        // YAML out and back in.
        let yaml = serde_norway::to_string(&value).unwrap();
        assert_eq!(body(&yaml), value);
    }
}

#[test]
fn v1alpha1_workload_and_pod_reference_convert() {
    let text = fixture("workload-v1alpha1.json");
    // As v1alpha2: the groups become templates.
    let w = manifest::from_json::<Workload>(&text, LoadOptions::strict()).unwrap();
    assert_eq!(w.api_version, "scheduling.k8s.io/v1alpha1");
    assert_eq!(w.object.spec.pod_group_templates[0].name, "workers");
    assert_eq!(w.object.spec.pod_group_templates[0].scheduling_policy.min_count(), Some(4));
    // As itself, converted with the pods' replica keys.
    let old = manifest::from_json::<v1alpha1::Workload>(&text, LoadOptions::strict()).unwrap().object;
    let pod_text = fixture("pod-v1alpha1-ref.json");
    let opts = LoadOptions { feature_gates: gates(), ..LoadOptions::default() };
    let pod = manifest::from_json::<Pod>(&pod_text, opts).unwrap();
    assert!(pod.ignored.iter().all(|f| f.path != "spec.workloadRef"), "converted, not ignored");
    assert_eq!(pod.object.scheduling_group_name(), Some("training-job-workload-workers-0"));
    let r = v1alpha1::WorkloadReference {
        name: "training-job-workload".into(),
        pod_group: "workers".into(),
        pod_group_replica_key: "0".into(),
    };
    let c = old.convert(&[r]).unwrap();
    assert_eq!(c.workload, w.object);
    assert_eq!(c.pod_groups.len(), 1);
    assert_eq!(c.pod_groups[0].name(), pod.object.scheduling_group_name().unwrap());
    assert_eq!(c.pod_groups[0].namespace(), "some-ns");
    c.pod_groups[0].validate(gates()).unwrap();
    // Gate off: reported, never dropped; strict refuses it.
    let pod = manifest::from_json::<Pod>(&pod_text, LoadOptions::default()).unwrap();
    assert!(pod.ignored.iter().any(|f| f.path == "spec.workloadRef" && f.affects_scheduling));
    assert_eq!(pod.object.scheduling_group_name(), None);
    assert!(manifest::from_json::<Pod>(&pod_text, LoadOptions::strict()).is_err());
}

#[test]
fn kinds_and_versions_are_checked() {
    let text = fixture("podgroup-v1alpha2.yaml");
    let err = manifest::from_yaml::<Workload>(&text, LoadOptions::default()).unwrap_err();
    assert_eq!(err.to_string(), "kind: expected \"Workload\", got \"PodGroup\"");
    let v3 = text.replace("v1alpha2", "v1alpha3");
    let err = manifest::from_yaml::<PodGroup>(&v3, LoadOptions::default()).unwrap_err();
    assert!(matches!(err, ManifestError::UnsupportedVersion { kind: "PodGroup", .. }), "{err}");
    let err = manifest::from_json::<v1alpha1::Workload>(
        &fixture("workload-v1alpha1.json").replace("v1alpha1", "v1alpha2"),
        LoadOptions::default(),
    )
    .unwrap_err();
    assert!(matches!(err, ManifestError::UnsupportedVersion { .. }), "{err}");
    // An unknown spec field matters to scheduling: strict refuses it.
    let extra = text.replace("  schedulingPolicy:\n", "  minMember: 3\n  schedulingPolicy:\n");
    let err = manifest::from_yaml::<PodGroup>(&extra, LoadOptions::strict()).unwrap_err();
    assert!(err.to_string().contains("spec.minMember"), "{err}");
}

#[test]
fn validation_reports_field_paths() {
    let text = fixture("podgroup-v1alpha2.yaml");
    let pg = manifest::from_yaml::<PodGroup>(&text, LoadOptions::default()).unwrap().object;
    // The gates that guard constraints and claims are off by default.
    let err = pg.validate(FeatureGates::default()).unwrap_err();
    let paths: Vec<&str> = err.errors.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(paths, ["spec.schedulingConstraints", "spec.resourceClaims"]);
    let two_keys = text.replace(
        "    - key: topology.kubernetes.io/rack\n",
        "    - key: topology.kubernetes.io/rack\n    - key: topology.kubernetes.io/zone\n",
    );
    let pg2 = manifest::from_yaml::<PodGroup>(&two_keys, LoadOptions::default()).unwrap().object;
    let err = pg2.validate(gates()).unwrap_err();
    assert_eq!(
        err.errors[0].to_string(),
        "spec.schedulingConstraints.topology: Too many: 2: must have at most 1 items"
    );
    let err = pg2.validate_update(&pg, gates()).unwrap_err();
    assert!(err.has("spec.schedulingConstraints"));
}
