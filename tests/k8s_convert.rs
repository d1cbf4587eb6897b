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

/// The direct Pod/Node conversion of `from_k8s` and `TryFrom` against the manifest
/// path (`from_k8s_via_manifest`): the same object, the same ignored fields in the
/// same order, the same errors, in default and strict mode and with the
/// PodLevelResources gate.
fn same_as_manifest_path<T>(what: &str, obj: &T::K8s)
where
    T: K8sConvert + PartialEq + Debug + for<'a> TryFrom<&'a T::K8s, Error = ConvertError>,
{
    let mut gated = LoadOptions::default();
    gated.feature_gates.set_enabled(schedkit::framework::Feature::PodLevelResources, true);
    for opts in [LoadOptions::default(), LoadOptions::strict(), gated] {
        let fast = k8s::from_k8s::<T>(obj, opts);
        let reference = k8s::from_k8s_via_manifest::<T>(obj, opts);
        assert_eq!(fast, reference, "{what} ({opts:?})");
    }
    let strict = k8s::from_k8s_via_manifest::<T>(obj, LoadOptions::strict()).map(|l| l.object);
    assert_eq!(T::try_from(obj), strict, "{what}: TryFrom");
}

#[test]
fn direct_conversion_equals_the_manifest_path_on_real_objects() {
    let mut seen = (0, 0);
    for path in [
        "real/pod-gpu-limits-only.yaml",
        "real/pod-running-hostnetwork.json",
        "real/node-gpu.yaml",
        "real/node-no-allocatable.json",
        "k8s/pod-web-pending.yaml",
        "workload/pod-v1alpha1-ref.json",
    ] {
        let value: serde_json::Value = serde_norway::from_str(&fixture(path)).unwrap();
        if value["kind"] == "Node" {
            same_as_manifest_path::<Node>(path, &serde_json::from_value(value).unwrap());
            seen.1 += 1;
        } else {
            same_as_manifest_path::<Pod>(path, &serde_json::from_value(value).unwrap());
            seen.0 += 1;
        }
    }
    let list: serde_json::Value = serde_json::from_str(&fixture("real/pods-list.json")).unwrap();
    for (i, item) in list["items"].as_array().unwrap().iter().enumerate() {
        same_as_manifest_path::<Pod>(
            &format!("pods-list.json items[{i}]"),
            &serde_json::from_value(item.clone()).unwrap(),
        );
        seen.0 += 1;
    }
    assert_eq!(seen, (6, 2));
    // The cases the direct path hands over: a bad quantity, an unknown spelling.
    let mut k8s_pod: api::Pod = serde_norway::from_str(&fixture("k8s/pod-web-pending.yaml")).unwrap();
    let spec = k8s_pod.spec.as_mut().unwrap();
    spec.containers[0].ports.as_mut().unwrap()[0].protocol = Some("QUIC".into());
    same_as_manifest_path::<Pod>("bad protocol", &k8s_pod);
    assert!(Pod::try_from(&k8s_pod).unwrap_err().to_string().contains("spec.containers[0].ports[0].protocol"));
}

mod objects {
    //! Pods and nodes as the API server could send them, some with values a load
    //! refuses, as JSON for k8s-openapi to decode.
    use proptest::prelude::*;
    use serde_json::{Value, json};

    fn quantity() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(json!("100m")),
            Just(json!("2")),
            Just(json!("1Gi")),
            Just(json!("1.5")),
            Just(json!("0")),
            Just(json!("lots")),
        ]
    }

    fn resource_map() -> impl Strategy<Value = Option<Value>> {
        proptest::option::of(
            proptest::collection::btree_map(
                prop_oneof![Just("cpu"), Just("memory"), Just("nvidia.com/gpu"), Just("hugepages-2Mi")],
                quantity(),
                0..3,
            )
            .prop_map(|m| Value::Object(m.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())),
        )
    }

    fn container() -> impl Strategy<Value = Value> {
        (
            resource_map(),
            resource_map(),
            proptest::option::of((1i32..70_000, 0i32..3, prop_oneof![Just("TCP"), Just("UDP"), Just("XDP")])),
            any::<bool>(),
            any::<bool>(),
            any::<bool>(),
        )
            .prop_map(|(req, lim, port, command, sidecar, claims)| {
                let mut c = json!({"name": "c", "image": "i"});
                let mut res = serde_json::Map::new();
                if let Some(r) = req {
                    res.insert("requests".into(), r);
                }
                if let Some(l) = lim {
                    res.insert("limits".into(), l);
                }
                if claims {
                    res.insert("claims".into(), json!([{"name": "gpu"}]));
                }
                c["resources"] = Value::Object(res);
                if let Some((p, hp, proto)) = port {
                    c["ports"] = json!([{"containerPort": p, "hostPort": hp * 1000, "protocol": proto, "name": "p"}]);
                }
                if command {
                    c["command"] = json!(["run"]);
                    c["volumeMounts"] = json!([{"name": "v", "mountPath": "/v"}]);
                }
                if sidecar {
                    c["restartPolicy"] = json!("Always");
                }
                c
            })
    }

    fn toleration() -> impl Strategy<Value = Value> {
        (
            prop_oneof![Just(json!("Exists")), Just(json!("Equal")), Just(json!("Maybe"))],
            proptest::option::of(prop_oneof![Just("NoSchedule"), Just("NoExecute"), Just("Sometimes")]),
            proptest::option::of(0i64..600),
        )
            .prop_map(|(op, effect, secs)| {
                let mut t = json!({"key": "k", "operator": op});
                if let Some(e) = effect {
                    t["effect"] = json!(e);
                }
                if let Some(s) = secs {
                    t["tolerationSeconds"] = json!(s);
                }
                t
            })
    }

    fn affinity() -> impl Strategy<Value = Value> {
        (
            prop_oneof![Just("In"), Just("NotIn"), Just("Gt"), Just("Exists"), Just("Near")],
            proptest::collection::vec(prop_oneof![Just("a"), Just("3"), Just("not valid")], 0..3),
            any::<bool>(),
        )
            .prop_map(|(op, values, anti)| {
                let node = json!({"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "zone", "operator": op, "values": values}]}]},
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 5, "preference": {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n"]}]}}]});
                let term = json!({"labelSelector": {"matchExpressions": [{"key": "app", "operator": op, "values": values}]},
                    "topologyKey": "kubernetes.io/hostname", "namespaces": ["a"], "matchLabelKeys": ["v"]});
                let pods = if anti {
                    json!({"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "podAffinityTerm": term}]})
                } else {
                    json!({"requiredDuringSchedulingIgnoredDuringExecution": [term]})
                };
                if anti {
                    json!({"nodeAffinity": node, "podAntiAffinity": pods})
                } else {
                    json!({"nodeAffinity": node, "podAffinity": pods})
                }
            })
    }

    fn volume() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(json!({"name": "v", "emptyDir": {}})),
            Just(json!({"name": "v", "configMap": {"name": "cm"}})),
            Just(json!({"name": "v", "persistentVolumeClaim": {"claimName": "data"}})),
            Just(json!({"name": "v", "csi": {"driver": "d"}})),
            Just(json!({"name": "v", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]}})),
        ]
    }

    prop_compose! {
        pub fn pod()(
            containers in proptest::collection::vec(container(), 1..3),
            init in proptest::option::of(proptest::collection::vec(container(), 0..2)),
            host_network in proptest::option::of(any::<bool>()),
            tolerations in proptest::option::of(proptest::collection::vec(toleration(), 0..3)),
            affinity in proptest::option::of(affinity()),
            volumes in proptest::option::of(proptest::collection::vec(volume(), 0..3)),
            pod_resources in proptest::option::of((resource_map(), resource_map())),
            extras in proptest::collection::vec(prop_oneof![
                Just(("dnsPolicy", json!("ClusterFirst"))),
                Just(("priorityClassName", json!("high"))),
                Just(("priority", json!(100))),
                Just(("preemptionPolicy", json!("Never"))),
                Just(("preemptionPolicy", json!("Sometimes"))),
                Just(("nodeName", json!("n1"))),
                Just(("nodeSelector", json!({"disk": "ssd"}))),
                Just(("schedulingGates", json!([{"name": "g"}]))),
                Just(("resourceClaims", json!([{"name": "gpu", "resourceClaimTemplateName": "t"}]))),
                Just(("overhead", json!({"cpu": "10m"}))),
                Just(("runtimeClassName", json!("kata"))),
                Just(("ephemeralContainers", json!([{"name": "dbg"}]))),
                Just(("schedulingGroup", json!({"podGroupName": "g"}))),
                Just(("topologySpreadConstraints", json!([{"maxSkew": 1, "topologyKey": "zone",
                    "whenUnsatisfiable": "DoNotSchedule", "nodeTaintsPolicy": "Honor",
                    "labelSelector": {"matchLabels": {"app": "a"}}}]))),
                Just(("topologySpreadConstraints", json!([{"maxSkew": 1, "topologyKey": "zone",
                    "whenUnsatisfiable": "Whenever"}]))),
                Just(("os", json!({"name": "linux"}))),
                Just(("hostUsers", json!(false))),
            ], 0..6),
            status in proptest::option::of(proptest::collection::vec(prop_oneof![
                Just(("phase", json!("Running"))),
                Just(("nominatedNodeName", json!("n2"))),
                Just(("startTime", json!("2025-01-01T00:00:00Z"))),
                Just(("qosClass", json!("Burstable"))),
                Just(("resize", json!("InProgress"))),
                Just(("conditions", json!([{"type": "Ready", "status": "True"}]))),
                Just(("containerStatuses", json!([{"name": "c", "image": "i", "imageID": "", "ready": true,
                    "restartCount": 0, "resources": {"requests": {"cpu": "1"}}}]))),
                Just(("allocatedResources", json!({"cpu": "1"}))),
            ], 0..4)),
            namespace in proptest::option::of(prop_oneof![Just(""), Just("ns")]),
            created in proptest::option::of(prop_oneof![Just("2024-12-09T16:17:09Z"), Just("1969-12-31T23:59:59.5Z")]),
        ) -> Value {
            let mut spec = json!({"containers": containers});
            if let Some(i) = init { spec["initContainers"] = json!(i); }
            if let Some(h) = host_network { spec["hostNetwork"] = json!(h); }
            if let Some(t) = tolerations { spec["tolerations"] = json!(t); }
            if let Some(a) = affinity { spec["affinity"] = a; }
            if let Some(v) = volumes { spec["volumes"] = json!(v); }
            if let Some((req, lim)) = pod_resources {
                let mut r = serde_json::Map::new();
                if let Some(req) = req { r.insert("requests".into(), req); }
                if let Some(lim) = lim { r.insert("limits".into(), lim); }
                spec["resources"] = Value::Object(r);
            }
            for (k, v) in extras { spec[k] = v; }
            let mut meta = json!({"name": "p", "labels": {"app": "a"}, "annotations": {"x": "y"}});
            if let Some(ns) = namespace { meta["namespace"] = json!(ns); }
            if let Some(c) = created { meta["creationTimestamp"] = json!(c); }
            let mut pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec});
            if let Some(fields) = status {
                pod["status"] = Value::Object(fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect());
            }
            pod
        }
    }

    prop_compose! {
        pub fn node()(
            capacity in resource_map(),
            allocatable in resource_map(),
            taint_effect in proptest::option::of(prop_oneof![Just("NoSchedule"), Just("Always")]),
            time_added in any::<bool>(),
            unschedulable in proptest::option::of(any::<bool>()),
            extras in proptest::collection::vec(prop_oneof![
                Just(("spec", "podCIDR", json!("10.0.0.0/24"))),
                Just(("spec", "providerID", json!("aws://i-1"))),
                Just(("status", "conditions", json!([{"type": "Ready", "status": "True"}]))),
                Just(("status", "declaredFeatures", json!(["X"]))),
                Just(("status", "images", json!([{"names": ["a:1"], "sizeBytes": 10}, {"names": ["b"]}]))),
                Just(("status", "nodeInfo", json!({"architecture": "amd64", "bootID": "", "containerRuntimeVersion": "",
                    "kernelVersion": "", "kubeProxyVersion": "", "kubeletVersion": "", "machineID": "",
                    "operatingSystem": "linux", "osImage": "", "systemUUID": ""}))),
            ], 0..4),
        ) -> Value {
            let mut spec = json!({});
            if let Some(e) = taint_effect {
                spec["taints"] = json!([{"key": "gpu", "effect": e}]);
                if time_added { spec["taints"][0]["timeAdded"] = json!("2025-01-01T00:00:00Z"); }
            }
            if let Some(u) = unschedulable { spec["unschedulable"] = json!(u); }
            let mut status = json!({});
            if let Some(c) = capacity { status["capacity"] = c; }
            if let Some(a) = allocatable { status["allocatable"] = a; }
            let mut node = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}, "spec": spec, "status": status});
            for (part, k, v) in extras { node[part][k] = v; }
            node
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// The direct conversion equals the manifest path on arbitrary pods, bad values
    /// included.
    #[test]
    fn direct_pod_conversion_equals_the_manifest_path(pod in objects::pod()) {
        let k8s_pod: api::Pod = serde_json::from_value(pod).unwrap();
        same_as_manifest_path::<Pod>("generated pod", &k8s_pod);
    }

    /// The same for nodes.
    #[test]
    fn direct_node_conversion_equals_the_manifest_path(node in objects::node()) {
        let k8s_node: api::Node = serde_json::from_value(node).unwrap();
        same_as_manifest_path::<Node>("generated node", &k8s_node);
    }
}

#[test]
fn workload_api_objects_convert_and_round_trip() {
    use schedkit::k8s::k8s_openapi::api::scheduling::v1alpha2 as alpha2;
    use schedkit::model::workload::{PodGroup, Workload};
    // The v1alpha2 objects (k8s-openapi's v1_36 has them), as the manifest loader reads
    // them, through k8s-openapi and back.
    let workloads = check::<Workload>("workload-v1alpha2.yaml", &fixture("workload/workload-v1alpha2.yaml"));
    let groups = check::<PodGroup>("podgroup-v1alpha2.yaml", &fixture("workload/podgroup-v1alpha2.yaml"));
    assert_eq!((workloads, groups), (0, 0), "nothing under spec is left unread");
    let k8s_group: alpha2::PodGroup = serde_norway::from_str(&fixture("workload/podgroup-v1alpha2.yaml")).unwrap();
    let group = PodGroup::try_from(&k8s_group).unwrap();
    assert_eq!(Some(group.metadata.name.as_str()), k8s_group.metadata.name.as_deref());
    let back = alpha2::PodGroup::try_from(&group).unwrap();
    assert_eq!(back.spec, k8s_group.spec);
}
