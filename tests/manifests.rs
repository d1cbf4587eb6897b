//! Real objects as `kubectl get -o yaml/json` prints them load: timestamps, unread
//! fields reported, apiVersion/kind checked, the API server's defaulting applied,
//! v1beta1 DRA objects converted as the API server converts them.

use schedkit::dra::{DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice};
use schedkit::framework::{Feature, FeatureGates, Handle, Profile};
use schedkit::manifest::{self, IgnoredField, LoadOptions, ManifestError};
use schedkit::model::{Namespace, Node, Pod, PodDisruptionBudget, PreemptionPolicy, PriorityClass, Quantity, Symbol};
use schedkit::scheduler::Scheduler;

fn fixture(name: &str) -> String {
    let path = format!("{}/../tests/fixtures/real/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn yaml<T: manifest::Manifest>(name: &str, opts: LoadOptions) -> Result<manifest::Loaded<T>, ManifestError> {
    manifest::from_yaml::<T>(&fixture(name), opts)
}

fn json<T: manifest::Manifest>(name: &str, opts: LoadOptions) -> Result<manifest::Loaded<T>, ManifestError> {
    manifest::from_json::<T>(&fixture(name), opts)
}

fn affecting(ignored: &[IgnoredField]) -> Vec<&str> {
    ignored.iter().filter(|f| f.affects_scheduling).map(|f| f.path.as_str()).collect()
}

fn q(s: &str) -> Quantity {
    Quantity::parse(s).unwrap()
}

#[test]
fn limits_only_gpu_pod_lands_on_the_gpu_node() {
    let pod = yaml::<Pod>("pod-gpu-limits-only.yaml", LoadOptions::strict()).unwrap();
    assert_eq!(pod.api_version, "v1");
    assert!(affecting(&pod.ignored).is_empty(), "{:?}", pod.ignored);
    let paths: Vec<&str> = pod.ignored.iter().map(|f| f.path.as_str()).collect();
    for p in
        ["metadata.managedFields", "metadata.ownerReferences", "spec.containers[0].volumeMounts", "status.qosClass"]
    {
        assert!(paths.contains(&p), "{p} not reported in {paths:?}");
    }
    let pod = pod.object;
    assert_eq!(pod.metadata.creation_timestamp, Some(1_733_761_029.0));
    assert_eq!(pod.spec.containers[0].resources.requests.get_str("nvidia.com/gpu"), Some(&q("1")));
    assert_eq!(pod.requests().scalar_str("nvidia.com/gpu"), 1);

    let gpu = yaml::<Node>("node-gpu.yaml", LoadOptions::strict()).unwrap().object;
    let mut cpu_only = manifest::from_json::<Node>(
        r#"{"apiVersion":"v1","kind":"Node","metadata":{"name":"cpu-node","creationTimestamp":"2024-11-30T09:12:44Z"},
            "status":{"capacity":{"cpu":"128","memory":"512Gi","pods":"110"}}}"#,
        LoadOptions::strict(),
    )
    .unwrap()
    .object;
    cpu_only.metadata.labels.insert(Symbol::intern("kubernetes.io/hostname"), Symbol::intern("cpu-node"));
    let handle = Handle::default();
    let mut s = Scheduler::builder().handle(handle.clone()).profile(Profile::kube_default(&handle)).build();
    s.add_node(cpu_only).unwrap();
    s.add_node(gpu).unwrap();
    s.add_pod(pod).unwrap();
    assert_eq!(s.run_until_idle().bound, 1);
    assert_eq!(s.cache().lock().pod_node("5d4c3b2a-1f0e-4d9c-8b7a-6f5e4d3c2b1a"), Some("gpu-node-1"));
}

#[test]
fn running_host_network_pod() {
    let loaded = json::<Pod>("pod-running-hostnetwork.json", LoadOptions::strict()).unwrap();
    let pod = loaded.object;
    // defaultHostNetworkPorts: the container port is a host port.
    assert_eq!(pod.spec.containers[0].ports[0].host_port, 9100);
    assert_eq!(pod.host_ports().map(|p| p.host_port).collect::<Vec<_>>(), [9100]);
    // Requests from limits where missing; the given cpu request stays.
    let req = &pod.spec.containers[0].resources.requests;
    assert_eq!((req.get_str("cpu"), req.get_str("memory")), (Some(&q("102m")), Some(&q("180Mi"))));
    assert_eq!(pod.status.start_time, Some(1_740_902_401.0));
    assert_eq!(pod.spec.node_name, "gpu-node-1");
    let paths: Vec<&str> = loaded.ignored.iter().map(|f| f.path.as_str()).collect();
    assert!(paths.contains(&"spec.hostNetwork") && paths.contains(&"spec.priorityClassName"), "{paths:?}");
    assert!(affecting(&loaded.ignored).is_empty());
}

/// Port of `TestSetDefaultRequestsPod` (`pkg/apis/core/v1/defaults_test.go`): requests
/// default from limits, an explicit request of 0 is kept, no limits means nothing.
#[test]
fn requests_default_from_limits_upstream() {
    let text = r#"{"metadata":{"name":"p"},"spec":{
        "containers":[{"name":"c","resources":{"requests":{"memory":"0"},"limits":{"cpu":"100m","memory":"1Gi"}}}],
        "initContainers":[{"name":"i","resources":{"requests":{"memory":"0"},"limits":{"cpu":"100m","memory":"1Gi"}}}]}}"#;
    let pod = manifest::from_json::<Pod>(text, LoadOptions::default()).unwrap().object;
    for c in pod.spec.containers.iter().chain(&pod.spec.init_containers) {
        assert_eq!(c.resources.requests.get_str("cpu").map(ToString::to_string).as_deref(), Some("100m"));
        assert_eq!(c.resources.requests.get_str("memory").map(ToString::to_string).as_deref(), Some("0"));
    }
    let text = r#"{"metadata":{"name":"p"},"spec":{"containers":[{"name":"c"}],"initContainers":[{"name":"i"}]}}"#;
    let pod = manifest::from_json::<Pod>(text, LoadOptions::default()).unwrap().object;
    assert!(pod.spec.containers[0].resources.requests.is_empty());
    assert!(pod.spec.init_containers[0].resources.requests.is_empty());
}

/// Pod-level defaulting (`defaultHugePagePodLimits`, `defaultPodRequests` in
/// `pkg/apis/core/v1/defaults.go`), case by case of the KEP-2837 rules.
#[test]
fn pod_level_requests_default() {
    let load = |resources: &str, containers: &str, gates: FeatureGates| {
        let text =
            format!(r#"{{"metadata":{{"name":"p"}},"spec":{{"resources":{resources},"containers":{containers}}}}}"#);
        let opts = LoadOptions { feature_gates: gates, ..LoadOptions::default() };
        manifest::from_json::<Pod>(&text, opts).unwrap().object
    };
    let on = FeatureGates::default();
    let pl =
        |pod: &Pod, name: &str| pod.spec.resources.as_ref().unwrap().requests.get_str(name).map(ToString::to_string);
    // Containers request cpu: the pod-level cpu request is their aggregate; memory has
    // no container request, so it comes from the pod-level limit.
    let pod = load(
        r#"{"limits":{"cpu":"4","memory":"8Gi"}}"#,
        r#"[{"name":"a","resources":{"requests":{"cpu":"1"}}},{"name":"b","resources":{"requests":{"cpu":"500m"}}}]"#,
        on,
    );
    assert_eq!((pl(&pod, "cpu").as_deref(), pl(&pod, "memory").as_deref()), (Some("1500m"), Some("8Gi")));
    assert_eq!(pod.requests().milli_cpu, 1500);
    // Container limits become container requests first (SetDefaults_Pod's order).
    let pod = load(r#"{"limits":{"cpu":"4"}}"#, r#"[{"name":"a","resources":{"limits":{"cpu":"2"}}}]"#, on);
    assert_eq!(pl(&pod, "cpu").as_deref(), Some("2"));
    // Pod-level requests set are kept.
    let pod = load(
        r#"{"requests":{"cpu":"3"},"limits":{"cpu":"4"}}"#,
        r#"[{"name":"a","resources":{"requests":{"cpu":"1"}}}]"#,
        on,
    );
    assert_eq!(pl(&pod, "cpu").as_deref(), Some("3"));
    // Hugepages: a container limit becomes the pod-level limit, then the pod request.
    let pod = load(
        r#"{"limits":{"memory":"1Gi"}}"#,
        r#"[{"name":"a","resources":{"limits":{"hugepages-2Mi":"10Mi","memory":"1Gi"}}}]"#,
        on,
    );
    let res = pod.spec.resources.as_ref().unwrap();
    assert_eq!(res.limits.get_str("hugepages-2Mi"), Some(&q("10Mi")));
    assert_eq!(pl(&pod, "hugepages-2Mi").as_deref(), Some("10Mi"));
    // Extended resources are not pod-level resources.
    let pod = load(r#"{"limits":{"cpu":"1","nvidia.com/gpu":"1"}}"#, r#"[{"name":"a"}]"#, on);
    assert_eq!(pl(&pod, "nvidia.com/gpu"), None);
    // Without pod-level limits nothing is defaulted; with the gate off neither.
    let pod = load(r#"{"requests":{"cpu":"1"}}"#, r#"[{"name":"a","resources":{"requests":{"memory":"1Gi"}}}]"#, on);
    assert_eq!(pl(&pod, "memory"), None);
    let pod = load(
        r#"{"limits":{"cpu":"4"}}"#,
        r#"[{"name":"a","resources":{"requests":{"cpu":"1"}}}]"#,
        on.with(Feature::PodLevelResources, false),
    );
    assert_eq!(pl(&pod, "cpu"), None);
}

#[test]
fn nodes_and_cluster_objects() {
    let node = yaml::<Node>("node-gpu.yaml", LoadOptions::strict()).unwrap();
    assert!(affecting(&node.ignored).is_empty(), "{:?}", affecting(&node.ignored));
    let n = node.object;
    assert_eq!(n.status.allocatable.get_str("cpu"), Some(&q("95690m")));
    assert_eq!(n.spec.taints[0].to_string(), "nvidia.com/gpu=present:NoSchedule");
    assert_eq!(n.status.images[0].size_bytes, 120_534_780);
    // SetDefaults_NodeStatus: allocatable from capacity.
    let bare = json::<Node>("node-no-allocatable.json", LoadOptions::default()).unwrap();
    assert_eq!(bare.object.status.allocatable.get_str("cpu"), Some(&q("4")));
    assert_eq!(affecting(&bare.ignored), ["status.declaredFeatures"]);
    let err = json::<Node>("node-no-allocatable.json", LoadOptions::strict()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Node bare: fields schedkit does not model can change how it schedules: status.declaredFeatures"
    );

    let pdb = yaml::<PodDisruptionBudget>("pdb.yaml", LoadOptions::strict()).unwrap().object;
    pdb.validate().unwrap();
    assert_eq!(pdb.status.disrupted_pods, ["web-7c9d8f6b5-abcde"]);
    assert_eq!(pdb.status.disruptions_allowed, Some(1));

    let pc = yaml::<PriorityClass>("priorityclass.yaml", LoadOptions::strict()).unwrap().object;
    assert_eq!((pc.value, pc.preemption_policy()), (2_000_001_000, PreemptionPolicy::PreemptLowerPriority));
    let pc = manifest::from_json::<PriorityClass>(
        r#"{"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass","metadata":{"name":"low"},"value":-5}"#,
        LoadOptions::default(),
    )
    .unwrap()
    .object;
    assert_eq!(pc.preemption_policy, Some(PreemptionPolicy::PreemptLowerPriority), "API default");

    let ns = yaml::<Namespace>("namespace.yaml", LoadOptions::strict()).unwrap().object;
    assert_eq!(ns.metadata.labels.get_str("team"), Some("research"));
    let ns = manifest::from_json::<Namespace>(
        r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"x"}}"#,
        LoadOptions::default(),
    )
    .unwrap()
    .object;
    assert_eq!(ns.metadata.labels.get_str("kubernetes.io/metadata.name"), Some("x"));
    assert_eq!(ns.status.phase, "Active");
}

#[test]
fn v1beta1_dra_objects_convert() {
    // NVIDIA's demo shape: deviceClassName right on the request.
    let t = yaml::<ResourceClaimTemplate>("gpu-claim-template-v1beta1.yaml", LoadOptions::strict()).unwrap();
    assert_eq!(t.api_version, "resource.k8s.io/v1beta1");
    assert_eq!(t.object.api_version, "resource.k8s.io/v1");
    let req = &t.object.spec.spec.devices.requests[0];
    assert_eq!(req.exactly.as_ref().map(|e| e.device_class_name.as_str()), Some("gpu.nvidia.com"));
    // Plain serde into the v1 type drops the class: that is what the loader prevents.
    let raw: ResourceClaimTemplate = serde_norway::from_str(&fixture("gpu-claim-template-v1beta1.yaml")).unwrap();
    assert!(raw.spec.spec.devices.requests[0].exactly.is_none());
    // The same text labelled v1 is not silently accepted either.
    let as_v1 = fixture("gpu-claim-template-v1beta1.yaml").replace("resource.k8s.io/v1beta1", "resource.k8s.io/v1");
    let err = manifest::from_yaml::<ResourceClaimTemplate>(&as_v1, LoadOptions::strict()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "ResourceClaimTemplate gpu-test1/single-gpu: fields schedkit does not model can change how it schedules: \
         spec.spec.devices.requests[0].deviceClassName"
    );
    let loaded = manifest::from_yaml::<ResourceClaimTemplate>(&as_v1, LoadOptions::default()).unwrap();
    assert_eq!(affecting(&loaded.ignored), ["spec.spec.devices.requests[0].deviceClassName"]);

    let c = json::<ResourceClaim>("gpu-claim-v1beta1-selectors.json", LoadOptions::strict()).unwrap().object;
    let r0 = c.spec.devices.requests[0].exactly.as_ref().unwrap();
    assert_eq!((r0.device_class_name.as_str(), r0.count, r0.selectors.len()), ("gpu.nvidia.com", Some(2), 1));
    assert!(c.spec.devices.requests[1].exactly.is_none());
    assert_eq!(c.spec.devices.requests[1].first_available[0].device_class_name, "gpu.nvidia.com");
    assert_eq!(c.spec.devices.constraints.len(), 1);

    let s = yaml::<ResourceSlice>("gpu-slice-v1beta1.yaml", LoadOptions::strict()).unwrap().object;
    assert_eq!(s.spec.node_name.as_deref(), Some("gpu-node-1"));
    assert_eq!(s.spec.devices.len(), 2);
    let d = &s.spec.devices[0];
    assert_eq!(d.attributes["productName"].string.as_deref(), Some("NVIDIA A100-SXM4-40GB"));
    assert_eq!(d.attributes["index"].int, Some(0));
    assert!(d.capacity.contains_key("memory"));
    assert!(d.other.is_empty(), "nothing left in `basic`: {:?}", d.other);

    let dc = yaml::<DeviceClass>("deviceclass.yaml", LoadOptions::strict()).unwrap().object;
    assert_eq!(dc.spec.selectors.len(), 1);
}

#[test]
fn lists_and_errors() {
    let pods = manifest::list_from_json::<Pod>(&fixture("pods-list.json"), LoadOptions::strict()).unwrap();
    assert_eq!(pods.len(), 2);
    assert_eq!(pods[0].object.requests().milli_cpu, 1000, "requests from limits");
    assert_eq!(pods[1].object.requests().milli_cpu, 500);
    let err = manifest::list_from_json::<Node>(&fixture("pods-list.json"), LoadOptions::default()).unwrap_err();
    assert_eq!(err.to_string(), "kind: expected \"Node\", got \"Pod\"");

    let err = json::<Pod>("node-no-allocatable.json", LoadOptions::default()).unwrap_err();
    assert_eq!(err, ManifestError::WrongKind { expected: "Pod", got: "Node".into() });
    let err = manifest::from_json::<ResourceClaim>(
        r#"{"apiVersion":"resource.k8s.io/v1alpha3","kind":"ResourceClaim","metadata":{"name":"c"}}"#,
        LoadOptions::default(),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "apiVersion: ResourceClaim \"resource.k8s.io/v1alpha3\" is not supported \
         (supported: resource.k8s.io/v1, resource.k8s.io/v1beta2, resource.k8s.io/v1beta1)"
    );
    let err = manifest::from_json::<Pod>(
        r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","resources":{"limits":{"cpu":"lots"}}}]}}"#,
        LoadOptions::default(),
    )
    .unwrap_err();
    let ManifestError::Decode { path, .. } = &err else { panic!("{err}") };
    assert_eq!(path, "spec.containers[0].resources.limits.cpu");
    let err = manifest::from_json::<Pod>("[1]", LoadOptions::default()).unwrap_err();
    assert_eq!(err.to_string(), "Pod: expected an object, got a list");
    let err = manifest::from_yaml::<Pod>("metadata: {name: p\n", LoadOptions::default()).unwrap_err();
    assert!(matches!(err, ManifestError::Decode { line: Some(_), .. }), "{err}");
}
