//! TaintToleration, NodeAffinity, NodePorts, NodeName, NodeUnschedulable and
//! ImageLocality against upstream's tables.
#![expect(clippy::type_complexity, reason = "table tests keep each case in a tuple, as upstream's tables do")]

mod support;

use schedkit::framework::{Code, Handle, PreFilterPlugin};
use schedkit::framework::{CycleState, FilterPlugin};
use schedkit::model::{Pod, TaintEffect};
use schedkit::plugins::image_locality::ImageLocality;
use schedkit::plugins::node_affinity::{NodeAffinity, NodeAffinityArgs};
use schedkit::plugins::node_name::NodeName;
use schedkit::plugins::node_ports::NodePorts;
use schedkit::plugins::node_unschedulable::NodeUnschedulable;
use schedkit::plugins::taint_toleration::TaintToleration;
use schedkit::snapshot::PodInfo;
use schedkit::testing::{NodeBuilder, PodBuilder};
use support::plugins::*;

fn filter_one<P: FilterPlugin>(p: &P, pod: &Pod, node: schedkit::model::Node) -> (Code, Vec<String>) {
    let snap = snapshot(vec![node], vec![]);
    let s = p.filter(&CycleState::new(), &PodInfo::new(pod.clone()).unwrap(), &snap.nodes()[0]);
    (s.code(), s.reasons().iter().map(ToString::to_string).collect())
}

/// Upstream `TestTaintTolerationFilter` (taint_toleration_test.go).
#[test]
fn taint_toleration_filter() {
    let t = TaintToleration;
    let tainted = || NodeBuilder::new("n").taint("dedicated", "user1", TaintEffect::NoSchedule).build();
    let cases = [
        (
            "a pod having no tolerations can't be scheduled onto a node with nonempty taints",
            PodBuilder::new("p").build(),
            false,
        ),
        (
            "a pod which can be scheduled on a dedicated node assigned to user1 with effect NoSchedule",
            PodBuilder::new("p").toleration("dedicated", Some("user1"), Some(TaintEffect::NoSchedule)).build(),
            true,
        ),
        (
            "a pod which can't be scheduled on a dedicated node assigned to user2 with effect NoSchedule",
            PodBuilder::new("p").toleration("dedicated", Some("user2"), Some(TaintEffect::NoSchedule)).build(),
            false,
        ),
        (
            "A pod can be scheduled onto the node, with a toleration uses operator Exists that tolerates the taints on the node",
            PodBuilder::new("p").toleration("dedicated", None, Some(TaintEffect::NoSchedule)).build(),
            true,
        ),
        (
            "a pod has a toleration that keys and values match the taint on the node, but (non-empty) effect doesn't match",
            PodBuilder::new("p").toleration("dedicated", Some("user1"), Some(TaintEffect::PreferNoSchedule)).build(),
            false,
        ),
        (
            "The pod has a toleration that keys and values match the taint on the node, the effect of toleration is empty",
            PodBuilder::new("p").toleration("dedicated", Some("user1"), None).build(),
            true,
        ),
    ];
    for (name, pod, ok) in cases {
        let (code, reasons) = filter_one(&t, &pod, tainted());
        if ok {
            assert_eq!(code, Code::Success, "{name}");
        } else {
            assert_eq!(code, Code::UnschedulableAndUnresolvable, "{name}");
            assert_eq!(reasons, ["node(s) had untolerated taint {dedicated: user1}"], "{name}");
        }
    }
    // "The pod has a toleration that keys and values does not match the taint on the
    // node, but the effect of taint on node is PreferNoSchedule": no filtering.
    let soft = NodeBuilder::new("n").taint("dedicated", "user1", TaintEffect::PreferNoSchedule).build();
    assert_eq!(filter_one(&t, &PodBuilder::new("p").build(), soft).0, Code::Success);
}

/// Upstream `TestTaintTolerationScore`: fewer intolerable PreferNoSchedule taints
/// score higher, reverse-normalized.
#[test]
fn taint_toleration_score() {
    let nodes = vec![
        NodeBuilder::new("nodeA").taint("cpu-type", "arm64", TaintEffect::PreferNoSchedule).build(),
        NodeBuilder::new("nodeB")
            .taint("cpu-type", "arm64", TaintEffect::PreferNoSchedule)
            .taint("disk-type", "ssd", TaintEffect::PreferNoSchedule)
            .build(),
        NodeBuilder::new("nodeC").build(),
    ];
    // "the nodes which have more toleratable taints should have higher score": the pod
    // tolerates cpu-type=arm64 only -> counts 0, 1, 0.
    let pod = PodBuilder::new("p").toleration("cpu-type", Some("arm64"), Some(TaintEffect::PreferNoSchedule)).build();
    let got = run_score(&TaintToleration, &pod, &snapshot(nodes.clone(), vec![])).unwrap();
    assert_eq!(got.iter().map(|s| s.1).collect::<Vec<_>>(), [100, 0, 100]);
    // "Default behaviour No taints and tolerations results in max score for all nodes".
    let plain = vec![NodeBuilder::new("a").build(), NodeBuilder::new("b").build()];
    let got = run_score(&TaintToleration, &PodBuilder::new("p").build(), &snapshot(plain, vec![])).unwrap();
    assert_eq!(got.iter().map(|s| s.1).collect::<Vec<_>>(), [100, 100]);
    // A NoSchedule toleration does not help against PreferNoSchedule taints:
    // counts 1, 2, 0 -> 100 - 100*1/2 = 50, 0, 100.
    let pod = PodBuilder::new("p").toleration("cpu-type", Some("arm64"), Some(TaintEffect::NoSchedule)).build();
    let got = run_score(&TaintToleration, &pod, &snapshot(nodes, vec![])).unwrap();
    assert_eq!(got.iter().map(|s| s.1).collect::<Vec<_>>(), [50, 0, 100]);
}

fn affinity_pod(json: &str) -> Pod {
    let mut p: Pod = serde_json::from_str(json).unwrap();
    p.metadata.name = "p".into();
    p
}

/// Upstream `TestNodeAffinity` (node_affinity_test.go).
#[test]
fn node_affinity_filter() {
    let na = NodeAffinity::default();
    let labeled = |pairs: &[(&str, &str)]| {
        let mut b = NodeBuilder::new("node1");
        for (k, v) in pairs {
            b = b.label(k, v);
        }
        b.build()
    };
    let req = |exprs: &str| {
        affinity_pod(&format!(
            r#"{{"spec":{{"affinity":{{"nodeAffinity":{{"requiredDuringSchedulingIgnoredDuringExecution":{{"nodeSelectorTerms":{exprs}}}}}}}}}}}"#
        ))
    };
    let pod_reason = "node(s) didn't match Pod's node affinity/selector";
    let cases: Vec<(&str, Pod, Vec<(&str, &str)>, bool)> = vec![
        ("no selector", PodBuilder::new("p").build(), vec![], true),
        ("missing labels", PodBuilder::new("p").node_selector("foo", "bar").build(), vec![], false),
        ("same labels", PodBuilder::new("p").node_selector("foo", "bar").build(), vec![("foo", "bar")], true),
        (
            "node labels are superset",
            PodBuilder::new("p").node_selector("foo", "bar").build(),
            vec![("foo", "bar"), ("baz", "blah")],
            true,
        ),
        (
            "node labels are subset",
            PodBuilder::new("p").node_selector("foo", "bar").node_selector("baz", "blah").build(),
            vec![("foo", "bar")],
            false,
        ),
        (
            "Pod with matchExpressions using In operator that matches the existing node",
            req(r#"[{"matchExpressions":[{"key":"foo","operator":"In","values":["bar","value2"]}]}]"#),
            vec![("foo", "bar")],
            true,
        ),
        (
            "Pod with matchExpressions using Gt operator that matches the existing node",
            req(r#"[{"matchExpressions":[{"key":"kernel-version","operator":"Gt","values":["0204"]}]}]"#),
            vec![("kernel-version", "0206")],
            true,
        ),
        (
            "Pod with matchExpressions using NotIn operator that matches the existing node",
            req(r#"[{"matchExpressions":[{"key":"mem-type","operator":"NotIn","values":["DDR","DDR2"]}]}]"#),
            vec![("mem-type", "DDR3")],
            true,
        ),
        (
            "Pod with matchExpressions using Exists operator that matches the existing node",
            req(r#"[{"matchExpressions":[{"key":"GPU","operator":"Exists"}]}]"#),
            vec![("GPU", "NVIDIA-GRID-K1")],
            true,
        ),
        (
            "Pod with affinity that don't match node's labels won't schedule onto the node",
            req(r#"[{"matchExpressions":[{"key":"foo","operator":"In","values":["value1","value2"]}]}]"#),
            vec![("foo", "bar")],
            false,
        ),
        (
            "Pod with an empty []NodeSelectorTerm in affinity, can't match the node's labels and will not be scheduled onto the node",
            req("[]"),
            vec![("foo", "bar")],
            false,
        ),
        (
            "Pod with empty MatchExpressions is not a valid value will match no objects and won't schedule onto the node",
            req(r#"[{"matchExpressions":[]}]"#),
            vec![("foo", "bar")],
            false,
        ),
        (
            "Pod with multiple NodeSelectorTerms ORed in affinity, matches the node's labels and will schedule onto the node",
            req(
                r#"[{"matchExpressions":[{"key":"foo","operator":"In","values":["bar"]}]},{"matchExpressions":[{"key":"diffkey","operator":"In","values":["wrong","value2"]}]}]"#,
            ),
            vec![("foo", "bar")],
            true,
        ),
        (
            "Pod with an Affinity both requiredDuringSchedulingIgnoredDuringExecution and nodeSelector, but doesn't match",
            {
                let mut p = req(r#"[{"matchExpressions":[{"key":"foo","operator":"Exists"}]}]"#);
                p.spec.node_selector = schedkit::model::Labels::from_pairs([("foo", "bar")]);
                p
            },
            vec![("foo", "barrrrrr")],
            false,
        ),
        (
            "Pod with matchFields using In operator that matches the existing node",
            req(r#"[{"matchFields":[{"key":"metadata.name","operator":"In","values":["node1"]}]}]"#),
            vec![],
            true,
        ),
        (
            "Pod with matchFields using In operator that does not match the existing node",
            req(r#"[{"matchFields":[{"key":"metadata.name","operator":"In","values":["node2"]}]}]"#),
            vec![],
            false,
        ),
        (
            "Pod with one term: matchFields does not match, but matchExpressions matches",
            req(
                r#"[{"matchFields":[{"key":"metadata.name","operator":"In","values":["node2"]}],"matchExpressions":[{"key":"foo","operator":"In","values":["bar"]}]}]"#,
            ),
            vec![("foo", "bar")],
            false,
        ),
        (
            "Pod with two terms: matchFields does not match, but matchExpressions matches",
            req(
                r#"[{"matchFields":[{"key":"metadata.name","operator":"In","values":["node2"]}]},{"matchExpressions":[{"key":"foo","operator":"In","values":["bar"]}]}]"#,
            ),
            vec![("foo", "bar")],
            true,
        ),
    ];
    for (name, pod, labels, ok) in cases {
        let (code, reasons) = filter_one(&na, &pod, labeled(&labels));
        if ok {
            assert_eq!(code, Code::Success, "{name}");
        } else {
            assert_eq!((code, reasons), (Code::UnschedulableAndUnresolvable, vec![pod_reason.to_owned()]), "{name}");
        }
    }
}

/// Upstream `TestNodeAffinity` PreFilter narrowing cases.
#[test]
fn node_affinity_pre_filter_narrows_by_name() {
    let na = NodeAffinity::default();
    let snap = snapshot(vec![NodeBuilder::new("node1").build(), NodeBuilder::new("node2").build()], vec![]);
    let run = |terms: &str| {
        let pod = affinity_pod(&format!(
            r#"{{"spec":{{"affinity":{{"nodeAffinity":{{"requiredDuringSchedulingIgnoredDuringExecution":{{"nodeSelectorTerms":{terms}}}}}}}}}}}"#
        ));
        let mut st = CycleState::new();
        na.pre_filter(&mut st, &PodInfo::new(pod).unwrap(), &snap)
    };
    let (r, s) = run(
        r#"[{"matchFields":[{"key":"metadata.name","operator":"In","values":["node1"]}]},{"matchFields":[{"key":"metadata.name","operator":"In","values":["node2"]}]}]"#,
    );
    assert!(s.is_success());
    assert_eq!(r.unwrap().node_names.unwrap().len(), 2);
    // "Pod with two terms: both matchFields match, but one has a non-name expression" keeps all nodes.
    let (r, _) = run(
        r#"[{"matchFields":[{"key":"metadata.name","operator":"In","values":["node1"]}]},{"matchExpressions":[{"key":"foo","operator":"Exists"}]}]"#,
    );
    assert!(r.is_none());
    // "Pod with one term: both matchFields ... conflict" -> unresolvable.
    let (_, s) = run(
        r#"[{"matchFields":[{"key":"metadata.name","operator":"In","values":["node1"]},{"key":"metadata.name","operator":"In","values":["node2"]}]}]"#,
    );
    assert_eq!(
        (s.code(), s.message()),
        (Code::UnschedulableAndUnresolvable, "pod affinity terms conflict".to_string())
    );
    // No affinity at all: Skip.
    let mut st = CycleState::new();
    let (_, s) = na.pre_filter(&mut st, &PodInfo::new(PodBuilder::new("p").build()).unwrap(), &snap);
    assert!(s.is_skip());
}

/// Upstream `TestNodeAffinity` "added affinity" cases.
#[test]
fn node_affinity_added_affinity() {
    let args: NodeAffinityArgs = serde_json::from_str(
        r#"{"addedAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"zone","operator":"In","values":["foo"]}]}]}}}"#,
    )
    .unwrap();
    let na = NodeAffinity::new(args).unwrap();
    let (code, reasons) =
        filter_one(&na, &PodBuilder::new("p").build(), NodeBuilder::new("n").label("zone", "bar").build());
    assert_eq!(
        (code, reasons),
        (Code::UnschedulableAndUnresolvable, vec!["node(s) didn't match scheduler-enforced node affinity".into()])
    );
    assert_eq!(
        filter_one(&na, &PodBuilder::new("p").build(), NodeBuilder::new("n").label("zone", "foo").build()).0,
        Code::Success
    );
    let bad: Result<NodeAffinityArgs, _> = serde_json::from_str(
        r#"{"addedAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"zone","operator":"Lt","values":["x"]}]}]}}}"#,
    );
    assert!(bad.is_err(), "Lt with a non-integer is rejected when args load");
}

/// Upstream `TestNodeAffinityPriority`.
#[test]
fn node_affinity_score() {
    let pod = affinity_pod(
        r#"{"spec":{"affinity":{"nodeAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[
            {"weight":2,"preference":{"matchExpressions":[{"key":"foo","operator":"In","values":["bar"]}]}},
            {"weight":4,"preference":{"matchExpressions":[{"key":"key","operator":"In","values":["value"]}]}},
            {"weight":5,"preference":{"matchExpressions":[{"key":"foo","operator":"In","values":["bar"]},{"key":"key","operator":"In","values":["value"]},{"key":"az","operator":"In","values":["az1"]}]}}]}}}}"#,
    );
    let nodes = vec![
        NodeBuilder::new("node1").label("foo", "bar").build(),
        NodeBuilder::new("node2").label("key", "value").build(),
        NodeBuilder::new("node3").label("foo", "bar").label("key", "value").label("az", "az1").build(),
    ];
    // "all machines matches the preferred scheduling requirements of pod but with different priorities":
    // raw 2, 4, 11 -> 18, 36, 100.
    let got = run_score(&NodeAffinity::default(), &pod, &snapshot(nodes, vec![])).unwrap();
    assert_eq!(got.iter().map(|s| s.1).collect::<Vec<_>>(), [18, 36, 100]);
    // No preferences: PreScore skips.
    assert!(
        run_score(
            &NodeAffinity::default(),
            &PodBuilder::new("p").build(),
            &snapshot(vec![NodeBuilder::new("a").build()], vec![])
        )
        .is_none()
    );
}

/// Upstream `TestNodePorts` (node_ports_test.go).
#[test]
fn node_ports() {
    let np = NodePorts;
    let n = || NodeBuilder::new("n").build();
    let with_port = |port: i32| {
        let mut p = PodBuilder::new("e").host_port(port).build();
        p.spec.node_name = "n".into();
        p
    };
    let reason = "node(s) didn't have free ports for the requested pod ports";
    let run = |pod: Pod, existing: Vec<Pod>| run_filter(&np, &pod, &snapshot(vec![n()], existing))[0].1.clone();
    assert!(run(PodBuilder::new("p").build(), vec![with_port(8080)]).is_success(), "nothing running");
    assert!(run(PodBuilder::new("p").host_port(8080).build(), vec![with_port(9090)]).is_success(), "other port");
    let s = run(PodBuilder::new("p").host_port(8080).build(), vec![with_port(8080)]);
    assert_eq!((s.code(), s.message()), (Code::Unschedulable, reason.to_string()), "same port");
    // UDP and TCP on one port don't conflict; a specific IP conflicts with 0.0.0.0.
    let udp = PodBuilder::new("p").with(|p| {
        p.spec.containers[0].ports.push(schedkit::model::ContainerPort {
            container_port: 8080,
            host_port: 8080,
            protocol: schedkit::model::Protocol::Udp,
            host_ip: String::new(),
        });
    });
    assert!(run(udp.build(), vec![with_port(8080)]).is_success(), "different protocol");
    let ip = PodBuilder::new("p").with(|p| {
        p.spec.containers[0].ports.push(schedkit::model::ContainerPort {
            container_port: 8080,
            host_port: 8080,
            protocol: schedkit::model::Protocol::Tcp,
            host_ip: "127.0.0.1".into(),
        });
    });
    assert!(!run(ip.build(), vec![with_port(8080)]).is_success(), "specific IP vs all addresses");
}

#[test]
fn node_name_and_unschedulable() {
    let (code, reasons) =
        filter_one(&NodeName, &PodBuilder::new("p").node_name("other").build(), NodeBuilder::new("n").build());
    assert_eq!(
        (code, reasons),
        (Code::UnschedulableAndUnresolvable, vec!["node(s) didn't match the requested node name".into()])
    );
    assert_eq!(
        filter_one(&NodeName, &PodBuilder::new("p").node_name("n").build(), NodeBuilder::new("n").build()).0,
        Code::Success
    );
    assert_eq!(filter_one(&NodeName, &PodBuilder::new("p").build(), NodeBuilder::new("n").build()).0, Code::Success);
    // Upstream TestNodeUnschedulable.
    let cordoned = || NodeBuilder::new("n").unschedulable().build();
    let (code, reasons) = filter_one(&NodeUnschedulable, &PodBuilder::new("p").build(), cordoned());
    assert_eq!((code, reasons), (Code::UnschedulableAndUnresolvable, vec!["node(s) were unschedulable".into()]));
    let tolerant = PodBuilder::new("p")
        .toleration("node.kubernetes.io/unschedulable", None, Some(TaintEffect::NoSchedule))
        .build();
    assert_eq!(filter_one(&NodeUnschedulable, &tolerant, cordoned()).0, Code::Success);
}

/// After upstream `TestImageLocalityPriority`: 40 MiB and 300 MiB images on node1,
/// 250 MiB and 10 MiB on node2.
#[test]
fn image_locality() {
    const MB: i64 = 1024 * 1024;
    let nodes = vec![
        NodeBuilder::new("node1").image("gcr.io/40:latest", 40 * MB).image("gcr.io/300:latest", 300 * MB).build(),
        NodeBuilder::new("node2").image("gcr.io/250:latest", 250 * MB).image("gcr.io/10:latest", 10 * MB).build(),
    ];
    let snap = snapshot(nodes, vec![]);
    let il = ImageLocality::new(handle_with(&snap));
    // "two images spread on two nodes, prefer the larger image one": pod uses 40 and 300.
    let pod = PodBuilder::new("p").image("gcr.io/40").container("b").image("gcr.io/300").build();
    let got = run_score(&il, &pod, &snap).unwrap();
    // node1: (40/2 + 300/2) MiB = 170 MiB over 2 containers -> 100*(170-23)/(2000-23) = 7.
    assert_eq!(got.iter().map(|s| s.1).collect::<Vec<_>>(), [7, 0]);
    // A pod with images nowhere scores 0.
    let none = PodBuilder::new("p").image("gcr.io/nowhere").build();
    assert_eq!(run_score(&il, &none, &snap).unwrap().iter().map(|s| s.1).collect::<Vec<_>>(), [0, 0]);
}

/// A handle whose snapshot is `snap` (what the scheduler publishes each cycle).
fn handle_with(snap: &schedkit::snapshot::Snapshot) -> Handle {
    let handle = Handle::default();
    handle.set_snapshot(std::sync::Arc::new(snap.clone()));
    handle
}
