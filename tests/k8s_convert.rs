//! k8s-openapi conversions on real objects (`kubectl get -o yaml` output with
//! managedFields, status, annotations): the k8s-openapi path loads exactly what a
//! manifest load gives (same defaulting, same fields reported), every modeled field
//! round-trips, unmodeled scheduling fields are refused or reported, errors name the
//! field.

use std::fmt::Debug;

use proptest::prelude::*;
use schedkit::dra::{DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice};
use schedkit::k8s::k8s_openapi::api::core::v1 as api;
use schedkit::k8s::{self, ConvertError, K8sConvert};
use schedkit::manifest::{self, LoadOptions, ManifestError};
use schedkit::model::{Namespace, Node, Pod, PodDisruptionBudget, PriorityClass, TaintEffect};
use schedkit::testing::PodBuilder;

fn fixture(path: &str) -> String {
    let path = format!("{}/../tests/fixtures/{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn affecting(ignored: &[manifest::IgnoredField]) -> Vec<&str> {
    ignored.iter().filter(|f| f.affects_scheduling).map(|f| f.path.as_str()).collect()
}

/// One object: k8s-openapi's decoding of the text, converted, equals the manifest
/// loader's result on the same text, reports the same scheduling fields, and survives
/// schedkit -> k8s-openapi -> schedkit unchanged. Returns the number of fields reported.
fn check<T>(name: &str, text: &str) -> usize
where
    T: K8sConvert + PartialEq + Debug,
    T::K8s: Debug,
{
    let value: serde_json::Value = serde_norway::from_str(text).unwrap();
    let k8s_obj: T::K8s = serde_json::from_value(value.clone()).unwrap_or_else(|e| panic!("{name}: k8s-openapi: {e}"));
    let direct = manifest::from_value::<T>(value, LoadOptions::default()).unwrap();
    let via = k8s::from_k8s::<T>(&k8s_obj, LoadOptions::default()).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(via.object, direct.object, "{name}: k8s-openapi path and manifest load differ");
    // k8s-openapi drops fields it does not know while decoding (as an API server would
    // have refused or pruned them): the reported fields are those of the object as
    // k8s-openapi holds it.
    let held = manifest::from_value::<T>(serde_json::to_value(&k8s_obj).unwrap(), LoadOptions::default()).unwrap();
    assert_eq!(affecting(&via.ignored), affecting(&held.ignored), "{name}: reported fields differ");
    if name != "dra/k8s-website-resourceclaim.yaml" {
        assert_eq!(affecting(&via.ignored), affecting(&direct.ignored), "{name}: reported fields differ");
    }
    // A strict conversion (what TryFrom does) succeeds exactly when a strict manifest
    // load does.
    let strict = k8s::from_k8s::<T>(&k8s_obj, LoadOptions::strict()).map(|l| l.object);
    match manifest::from_value::<T>(serde_json::to_value(&k8s_obj).unwrap(), LoadOptions::strict()) {
        Ok(l) => assert_eq!(strict.as_ref().ok(), Some(&l.object), "{name}"),
        Err(e) => assert_eq!(strict.unwrap_err(), ConvertError::FromK8s(e), "{name}"),
    }
    // schedkit -> k8s-openapi -> schedkit keeps every modeled field.
    let back: T::K8s = k8s::to_k8s(&via.object).unwrap_or_else(|e| panic!("{name}: {e}"));
    let again = k8s::from_k8s::<T>(&back, LoadOptions::default()).unwrap();
    assert_eq!(again.object, via.object, "{name}: round trip through k8s-openapi changed the object");
    assert!(affecting(&again.ignored).is_empty(), "{name}: written back with unmodeled fields: {:?}", again.ignored);
    affecting(&via.ignored).len()
}

/// Every document of a fixture, by kind.
fn check_file(path: &str) -> usize {
    let text = fixture(path);
    let mut reported = 0;
    for doc in text.split("\n---\n").filter(|d| d.contains("kind:") || d.contains("\"kind\"")) {
        let value: serde_json::Value = serde_norway::from_str(doc).unwrap();
        reported += match value["kind"].as_str().unwrap() {
            "Pod" => check::<Pod>(path, doc),
            "Node" => check::<Node>(path, doc),
            "Namespace" => check::<Namespace>(path, doc),
            "PodDisruptionBudget" => check::<PodDisruptionBudget>(path, doc),
            "PriorityClass" => check::<PriorityClass>(path, doc),
            "ResourceSlice" => check::<ResourceSlice>(path, doc),
            "DeviceClass" => check::<DeviceClass>(path, doc),
            "ResourceClaim" => check::<ResourceClaim>(path, doc),
            "ResourceClaimTemplate" => check::<ResourceClaimTemplate>(path, doc),
            other => panic!("{path}: unexpected kind {other}"),
        };
    }
    reported
}

#[test]
fn real_objects_convert_as_manifests_load_and_round_trip() {
    for path in [
        "real/pod-gpu-limits-only.yaml",
        "real/pod-running-hostnetwork.json",
        "real/node-gpu.yaml",
        "real/node-no-allocatable.json",
        "real/namespace.yaml",
        "real/pdb.yaml",
        "real/priorityclass.yaml",
        "real/deviceclass.yaml",
        "k8s/pod-web-pending.yaml",
        "k8s/resourceclaim-allocated.yaml",
        "dra/k8s-website-resourceclaimtemplate.yaml",
        "dra/k8s-website-resourceclaim.yaml",
        "dra/openshift-partitionable-slices.yaml",
    ] {
        check_file(path);
    }
    // The website's claim has `expression` misplaced beside `cel`: the manifest load
    // reports it, k8s-openapi's decoding (like the API server's pruning) drops it.
    let text = fixture("dra/k8s-website-resourceclaim.yaml");
    let direct = manifest::from_yaml::<ResourceClaim>(&text, LoadOptions::default()).unwrap();
    assert_eq!(affecting(&direct.ignored), ["spec.devices.requests[0].exactly.selectors[0].expression"]);
}

#[test]
fn typical_pending_pod_keeps_what_scheduling_reads() {
    let k8s_pod: api::Pod = serde_norway::from_str(&fixture("k8s/pod-web-pending.yaml")).unwrap();
    let pod = Pod::try_from(&k8s_pod).unwrap();
    assert_eq!(pod.metadata.namespace, "shop");
    assert_eq!(pod.spec.scheduler_name, "schedkit");
    assert_eq!(pod.spec.priority, Some(1000));
    assert_eq!(pod.spec.tolerations.len(), 2);
    assert_eq!(pod.spec.tolerations[0].toleration_seconds, Some(300));
    assert_eq!(pod.spec.topology_spread_constraints.len(), 1);
    assert!(pod.spec.affinity.as_ref().unwrap().pod_anti_affinity.is_some());
    assert_eq!(pod.requests().milli_cpu, 250);
    // Back to k8s-openapi: what schedkit models, nothing else.
    let back = api::Pod::try_from(&pod).unwrap();
    let spec = back.spec.as_ref().unwrap();
    assert_eq!(spec.scheduler_name.as_deref(), Some("schedkit"));
    assert_eq!(spec.volumes, None, "the projected token volume is not modeled");
    assert_eq!(back.metadata.creation_timestamp, k8s_pod.metadata.creation_timestamp);
    assert_eq!(back.metadata.managed_fields, None);
}

#[test]
fn unmodeled_scheduling_fields_are_refused_or_reported() {
    // A PVC volume: the volume plugins (which schedkit lacks) would read it.
    let mut k8s_pod: api::Pod = serde_norway::from_str(&fixture("k8s/pod-web-pending.yaml")).unwrap();
    let vol: api::Volume =
        serde_json::from_str(r#"{"name": "data", "persistentVolumeClaim": {"claimName": "data-0"}}"#).unwrap();
    k8s_pod.spec.as_mut().unwrap().volumes.as_mut().unwrap().push(vol);
    match Pod::try_from(&k8s_pod) {
        Err(ConvertError::FromK8s(ManifestError::Unmodeled { kind, name, paths })) => {
            assert_eq!((kind, name.as_str()), ("Pod", "shop/web-7d9c6b8f5d-x7k2p"));
            assert_eq!(paths, ["spec.volumes"]);
        }
        other => panic!("expected Unmodeled, got {other:?}"),
    }
    let loaded = k8s::from_k8s::<Pod>(&k8s_pod, LoadOptions::default()).unwrap();
    assert_eq!(affecting(&loaded.ignored), ["spec.volumes"]);
    // Fields no plugin reads are reported as harmless.
    let harmless: Vec<&str> =
        loaded.ignored.iter().filter(|f| !f.affects_scheduling).map(|f| f.path.as_str()).collect();
    assert!(harmless.contains(&"spec.containers[0].livenessProbe"), "{harmless:?}");
    assert!(harmless.contains(&"status.conditions"), "{harmless:?}");

    // Node: a status field a newer Kubernetes adds is reported, not dropped.
    let mut node: api::Node = serde_norway::from_str(&fixture("real/node-gpu.yaml")).unwrap();
    node.status.as_mut().unwrap().declared_features = Some(vec!["InPlacePodVerticalScaling".into()]);
    let err = Node::try_from(&node).unwrap_err();
    assert!(err.to_string().contains("status.declaredFeatures"), "{err}");
}

#[test]
fn bad_values_name_their_field() {
    let mut k8s_pod: api::Pod = serde_norway::from_str(&fixture("k8s/pod-web-pending.yaml")).unwrap();
    let requests = k8s_pod.spec.as_mut().unwrap().containers[0].resources.as_mut().unwrap().requests.as_mut().unwrap();
    requests
        .insert("cpu".into(), schedkit::k8s::k8s_openapi::apimachinery::pkg::api::resource::Quantity("lots".into()));
    match Pod::try_from(&k8s_pod).unwrap_err() {
        ConvertError::FromK8s(ManifestError::Decode { kind, path, .. }) => {
            assert_eq!(kind, "Pod");
            assert_eq!(path, "spec.containers[0].resources.requests.cpu");
        }
        other => panic!("expected Decode, got {other:?}"),
    }
    // An unknown toleration effect: refused with its path, as a manifest load does.
    let mut k8s_pod: api::Pod = serde_norway::from_str(&fixture("k8s/pod-web-pending.yaml")).unwrap();
    k8s_pod.spec.as_mut().unwrap().tolerations.as_mut().unwrap()[0].effect = Some("NoWay".into());
    let err = Pod::try_from(&k8s_pod).unwrap_err();
    assert!(err.to_string().contains("spec.tolerations[0].effect"), "{err}");
}

#[test]
fn limits_only_defaulting_matches_the_api_server() {
    // pkg/apis/core/v1/defaults_test.go TestSetDefaultRequestsPod: requests missing
    // from a container are copied from its limits; present requests are kept.
    let k8s_pod: api::Pod = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "p"},
        "spec": {"containers": [
            {"name": "a", "resources": {"limits": {"cpu": "100m", "memory": "1Gi"}, "requests": {"memory": "512Mi"}}},
            {"name": "b", "resources": {"limits": {"nvidia.com/gpu": "2"}}},
        ]}
    }))
    .unwrap();
    let pod = Pod::try_from(&k8s_pod).unwrap();
    let req = |c: usize, r: &str| pod.spec.containers[c].resources.requests.get_str(r).map(ToString::to_string);
    assert_eq!(req(0, "cpu").as_deref(), Some("100m"));
    assert_eq!(req(0, "memory").as_deref(), Some("512Mi"));
    assert_eq!(req(1, "nvidia.com/gpu").as_deref(), Some("2"));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Every field a built pod carries survives schedkit -> k8s-openapi -> schedkit.
    #[test]
    fn built_pods_round_trip(
        cpu in 1u32..64_000,
        mem_mi in 1u32..65_536,
        gpus in 0i64..8,
        priority in proptest::option::of(-1000i32..1_000_000),
        label in "[a-z]{1,8}",
        node in proptest::option::of("[a-z]{1,8}"),
        tolerate in any::<bool>(),
        created in 0u32..2_000_000_000,
    ) {
        let mut b = PodBuilder::new("p").namespace("ns").uid("u-1")
            .cpu(&format!("{cpu}m")).memory(&format!("{mem_mi}Mi")).label("app", &label)
            .node_selector("disk", "ssd");
        if gpus > 0 { b = b.gpus(gpus); }
        if let Some(p) = priority { b = b.priority(p); }
        if let Some(n) = &node { b = b.node_name(n); }
        if tolerate { b = b.toleration("gpu", Some("true"), Some(TaintEffect::NoSchedule)); }
        let mut pod = b.build();
        pod.metadata.creation_timestamp = Some(f64::from(created));
        let back = api::Pod::try_from(&pod).unwrap();
        prop_assert_eq!(Pod::try_from(&back).unwrap(), pod);
    }
}
