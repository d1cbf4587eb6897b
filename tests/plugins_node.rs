//! TaintToleration, NodeAffinity, NodePorts, NodeName, NodeUnschedulable and
//! ImageLocality against upstream's tables.
#![expect(clippy::type_complexity, reason = "table tests keep each case in a tuple, as upstream's tables do")]

mod support;

use schedkit::framework::{Code, Handle, NodeScore, PreFilterPlugin, PreScorePlugin, ScorePlugin};
use schedkit::framework::{CycleState, FilterPlugin, Status};
use schedkit::model::{Pod, TaintEffect};
use schedkit::plugins::image_locality::ImageLocality;
use schedkit::plugins::node_affinity::{NodeAffinity, NodeAffinityArgs};
use schedkit::plugins::node_name::NodeName;
use schedkit::plugins::node_ports::NodePorts;
use schedkit::plugins::node_unschedulable::NodeUnschedulable;
use schedkit::plugins::taint_toleration::TaintToleration;
use schedkit::snapshot::{NodeList, PodInfo};
use schedkit::testing::{NodeBuilder, PodBuilder};
use support::plugins::*;

fn filter_one<P: FilterPlugin>(p: &P, pod: &Pod, node: schedkit::model::Node) -> (Code, Vec<String>) {
    let snap = snapshot(vec![node], vec![]);
    let pod = PodInfo::new(pod.clone()).unwrap();
    let s = p.filter(&CycleState::new(), &pod, &snap.nodes()[0]);
    assert_eq!(batched(p, &CycleState::new(), &pod, &snap), s, "filter_nodes agrees with filter");
    (s.code(), s.reasons().iter().map(ToString::to_string).collect())
}

/// The plugin's batched Filter (`filter_nodes`) on the snapshot's one node.
fn batched<P: FilterPlugin>(p: &P, state: &CycleState, pod: &PodInfo, snap: &schedkit::snapshot::Snapshot) -> Status {
    let mut out = [Status::SUCCESS];
    let failed = p.filter_nodes(state, pod, NodeList::new(snap, &[0]), &mut out);
    let [s] = out;
    assert_eq!(failed, u64::from(!s.is_success()), "filter_nodes' failure mask agrees with its status");
    s
}

/// [`filter_one`] after the plugin's PreFilter (which may compile what Filter reads):
/// a Skip stands for a passing Filter, as the framework runs it.
fn pre_filter_then_filter<P: FilterPlugin + PreFilterPlugin>(
    p: &P,
    pod: &Pod,
    node: schedkit::model::Node,
) -> (Code, Vec<String>) {
    let snap = snapshot(vec![node], vec![]);
    let pod = PodInfo::new(pod.clone()).unwrap();
    let mut state = CycleState::new();
    let (_, pre) = p.pre_filter(&mut state, &pod, &snap);
    if pre.is_skip() {
        return (Code::Success, vec![]);
    }
    let s = p.filter(&state, &pod, &snap.nodes()[0]);
    assert_eq!(batched(p, &state, &pod, &snap), s, "filter_nodes agrees with filter");
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

/// A requirement the API server accepts but upstream's scheduler cannot parse: the pod
/// loads with a warning naming the field, its required term matches nothing, a bad
/// preferred term fails PreScore with an error (upstream `NewPreferredSchedulingTerms`),
/// and `addedAffinity` refuses it (upstream `ValidateNodeAffinityArgs`, strict).
#[test]
fn node_affinity_unparsable_values() {
    use schedkit::framework::PreScorePlugin;
    use schedkit::snapshot::NodeList;
    let pod = affinity_pod(
        r#"{"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[
            {"matchExpressions":[{"key":"foo","operator":"NotIn","values":["ok","invalid value: ___@#$%^"]}]}]}}}}}"#,
    );
    let info = PodInfo::new(pod.clone()).unwrap();
    let warnings = info.pod.warnings();
    assert_eq!(warnings.len(), 1);
    assert_eq!(
        warnings[0].path,
        "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0]"
    );
    assert!(warnings[0].message.starts_with("values[1]: \"invalid value: ___@#$%^\""), "{warnings:?}");
    let (code, _) = filter_one(&NodeAffinity::default(), &pod, NodeBuilder::new("n").label("foo", "bar").build());
    assert_eq!(code, Code::UnschedulableAndUnresolvable);

    let preferred = affinity_pod(
        r#"{"spec":{"affinity":{"nodeAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[
            {"weight":5,"preference":{"matchExpressions":[{"key":"foo","operator":"Gt","values":["ten"]}]}}]}}}}"#,
    );
    let info = PodInfo::new(preferred).unwrap();
    assert_eq!(info.pod.warnings().len(), 1);
    let snap = snapshot(vec![NodeBuilder::new("n").build()], vec![]);
    let idx = [0usize];
    let s = NodeAffinity::default().pre_score(&mut CycleState::new(), &info, NodeList::new(&snap, &idx));
    assert_eq!(s.code(), Code::Error);
    assert!(s.message().contains("must be an integer"), "{s:?}");

    let args: NodeAffinityArgs = serde_json::from_str(
        r#"{"addedAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[
            {"matchExpressions":[{"key":"foo","operator":"In","values":["not valid!"]}]}]}}}"#,
    )
    .unwrap();
    let err = NodeAffinity::new(args).unwrap_err().to_string();
    assert!(
        err.starts_with(
            "addedAffinity: requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0]: values[0]"
        ),
        "{err}"
    );
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
            "Pod with an invalid value in Affinity term won't be scheduled onto the node",
            req(r#"[{"matchExpressions":[{"key":"foo","operator":"NotIn","values":["invalid value: ___@#$%^"]}]}]"#),
            vec![("foo", "bar")],
            false,
        ),
        (
            // Not upstream's table: its lazy-error selector skips only the bad term.
            "Pod with an invalid term and a matching term schedules onto the node",
            req(
                r#"[{"matchExpressions":[{"key":"foo","operator":"NotIn","values":["invalid value: ___@#$%^"]}]},{"matchExpressions":[{"key":"foo","operator":"In","values":["bar"]}]}]"#,
            ),
            vec![("foo", "bar")],
            true,
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
        // The same answer from the matchers PreFilter compiles (a PreFilter rejection
        // by `matchFields` names is upstream's too: the node is not in its set).
        let compiled = pre_filter_then_filter(&na, &pod, labeled(&labels));
        assert_eq!(compiled, (code, reasons.clone()), "{name}: after PreFilter");
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
    let bad: serde_json::Value = serde_json::from_str(
        r#"{"addedAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"zone","operator":"Lt","values":["x"]}]}]}}}"#,
    )
    .unwrap();
    assert!(
        NodeAffinity::from_config(Some(&bad)).is_err(),
        "Lt with a non-integer is rejected when the plugin is built"
    );
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
    let snap = snapshot(nodes, vec![]);
    let got = run_score(&NodeAffinity::default(), &pod, &snap).unwrap();
    assert_eq!(got.iter().map(|s| s.1).collect::<Vec<_>>(), [18, 36, 100]);
    // The batched Score, from the terms PreScore compiled: the same raw 2, 4, 11.
    let na = NodeAffinity::default();
    let info = PodInfo::new(pod.clone()).unwrap();
    let idx: Vec<usize> = (0..snap.len()).collect();
    let mut state = CycleState::new();
    assert!(na.pre_score(&mut state, &info, NodeList::new(&snap, &idx)).is_success());
    let mut raw: Vec<NodeScore> = snap.nodes().iter().map(|n| NodeScore { name: n.name(), score: 0 }).collect();
    na.score_nodes(&state, &info, NodeList::new(&snap, &idx), &mut raw).unwrap();
    assert_eq!(raw.iter().map(|s| s.score).collect::<Vec<_>>(), [2, 4, 11]);
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

/// A pod with one container holding a host port per `PROTOCOL/IP/PORT` (upstream
/// node_ports_test.go `newPod`), bound to node `n` when `bound`.
fn ports_pod(bound: bool, specs: &[&str]) -> Pod {
    let ports = specs.iter().map(|s| parse_port(s)).collect();
    PodBuilder::new("p")
        .with(|p| {
            p.spec.containers[0].ports = ports;
            if bound {
                p.spec.node_name = "n".into();
            }
        })
        .build()
}

fn parse_port(spec: &str) -> schedkit::model::ContainerPort {
    let mut it = spec.split('/');
    let protocol = match it.next() {
        Some("UDP") => schedkit::model::Protocol::Udp,
        Some("SCTP") => schedkit::model::Protocol::Sctp,
        _ => schedkit::model::Protocol::Tcp,
    };
    let host_ip = it.next().unwrap_or_default().to_owned();
    let host_port = it.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    schedkit::model::ContainerPort { container_port: host_port, host_port, protocol, host_ip }
}

/// A pod whose only host port (TCP 8001) sits on an init container, a sidecar
/// (`restartPolicy: Always`) or not (upstream `st.MakePod().InitContainerPort`).
fn init_port_pod(sidecar: bool) -> Pod {
    PodBuilder::new("p")
        .with(|p| {
            p.spec.init_containers.push(schedkit::model::Container {
                name: "init".into(),
                ports: vec![parse_port("TCP//8001")],
                restart_policy: sidecar.then(|| "Always".to_owned()),
                ..Default::default()
            });
        })
        .build()
}

/// Upstream `TestNodePorts` (node_ports_test.go), every case: `None` wanted means
/// PreFilter skips, else whether Filter passes.
#[test]
fn node_ports() {
    let np = NodePorts;
    let reason = "node(s) didn't have free ports for the requested pod ports";
    let cases: Vec<(&str, Pod, Vec<&str>, Option<bool>)> = vec![
        ("skip filter", PodBuilder::new("p").build(), vec![], None),
        ("other port", ports_pod(false, &["UDP/127.0.0.1/8080"]), vec!["UDP/127.0.0.1/9090"], Some(true)),
        ("same udp port", ports_pod(false, &["UDP/127.0.0.1/8080"]), vec!["UDP/127.0.0.1/8080"], Some(false)),
        ("same tcp port", ports_pod(false, &["TCP/127.0.0.1/8080"]), vec!["TCP/127.0.0.1/8080"], Some(false)),
        ("different host ip", ports_pod(false, &["TCP/127.0.0.1/8080"]), vec!["TCP/127.0.0.2/8080"], Some(true)),
        ("different protocol", ports_pod(false, &["UDP/127.0.0.1/8080"]), vec!["TCP/127.0.0.1/8080"], Some(true)),
        (
            "second udp port conflict",
            ports_pod(false, &["UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080"]),
            vec!["UDP/127.0.0.1/8080"],
            Some(false),
        ),
        (
            "first tcp port conflict",
            ports_pod(false, &["TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080"]),
            vec!["TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081"],
            Some(false),
        ),
        (
            "first tcp port conflict due to 0.0.0.0 hostIP",
            ports_pod(false, &["TCP/0.0.0.0/8001"]),
            vec!["TCP/127.0.0.1/8001"],
            Some(false),
        ),
        (
            "TCP hostPort conflict due to 0.0.0.0 hostIP",
            ports_pod(false, &["TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001"]),
            vec!["TCP/127.0.0.1/8001"],
            Some(false),
        ),
        (
            "second tcp port conflict to 0.0.0.0 hostIP",
            ports_pod(false, &["TCP/127.0.0.1/8001"]),
            vec!["TCP/0.0.0.0/8001"],
            Some(false),
        ),
        ("second different protocol", ports_pod(false, &["UDP/127.0.0.1/8001"]), vec!["TCP/0.0.0.0/8001"], Some(true)),
        (
            "UDP hostPort conflict due to 0.0.0.0 hostIP",
            ports_pod(false, &["UDP/127.0.0.1/8001"]),
            vec!["TCP/0.0.0.0/8001", "UDP/0.0.0.0/8001"],
            Some(false),
        ),
        ("non-sidecar initContainer using hostPort", init_port_pod(false), vec!["TCP/0.0.0.0/8001"], None),
        (
            "TCP hostPort conflict from sidecar initContainer",
            init_port_pod(true),
            vec!["TCP/0.0.0.0/8001"],
            Some(false),
        ),
    ];
    for (name, pod, existing, want) in cases {
        let existing = if existing.is_empty() { vec![] } else { vec![ports_pod(true, &existing)] };
        let snap = snapshot(vec![NodeBuilder::new("n").build()], existing);
        let info = PodInfo::new(pod).unwrap();
        let mut state = CycleState::new();
        let (_, pre) = np.pre_filter(&mut state, &info, &snap);
        let Some(fits) = want else {
            assert!(pre.is_skip(), "{name}: PreFilter {pre:?}");
            continue;
        };
        assert!(pre.is_success(), "{name}: PreFilter {pre:?}");
        let s = np.filter(&state, &info, &snap.nodes()[0]);
        if fits {
            assert!(s.is_success(), "{name}: {s:?}");
        } else {
            assert_eq!((s.code(), s.message()), (Code::Unschedulable, reason.to_owned()), "{name}");
        }
    }
}

/// Upstream `TestFits` (node_ports_test.go).
#[test]
fn node_ports_fits() {
    let cases: [(&str, &[&str], &[&str], bool); 5] = [
        ("non-conflicting ports", &["TCP/127.0.0.1/80"], &["TCP/127.0.0.1/9090"], true),
        (
            "multiple non-conflicting ports",
            &["TCP/127.0.0.1/80", "TCP/127.0.1.1/80", "TCP/127.0.1.1/90", "TCP/127.0.1.1/100"],
            &["TCP/127.0.0.1/9090", "TCP/127.0.0.1/9191", "TCP/127.0.1.1/8080"],
            true,
        ),
        ("same ports on different protocols", &["TCP/127.0.0.1/80"], &["UDP/127.0.0.1/80"], true),
        ("conflicting ports", &["TCP/127.0.0.1/80"], &["TCP/127.0.0.1/80"], false),
        (
            "multiple ports, some conflicting",
            &["TCP/127.0.0.1/80", "TCP/127.0.1.1/80", "TCP/127.0.1.1/90", "TCP/127.0.1.1/100"],
            &["TCP/127.0.0.1/9090", "TCP/127.0.1.1/90", "TCP/127.0.1.1/8080"],
            false,
        ),
    ];
    for (name, wanted, existing, want) in cases {
        let snap = snapshot(vec![NodeBuilder::new("n").build()], vec![ports_pod(true, existing)]);
        let info = PodInfo::new(ports_pod(false, wanted)).unwrap();
        assert_eq!(schedkit::plugins::node_ports::fits_ports(&info.host_ports, &snap.nodes()[0]), want, "{name}");
    }
}

/// A pod already on the node records the host ports of its app and sidecar
/// containers, not of regular init containers (upstream `NodeInfo.updateUsedPorts`
/// over `util.GetHostPorts`).
#[test]
fn node_records_only_running_containers_ports() {
    for (sidecar, want) in [(false, 0), (true, 1)] {
        let mut existing = init_port_pod(sidecar);
        existing.spec.node_name = "n".into();
        let snap = snapshot(vec![NodeBuilder::new("n").build()], vec![existing]);
        assert_eq!(snap.nodes()[0].used_ports().len(), want, "sidecar: {sidecar}");
        let run = run_filter(&NodePorts, &ports_pod(false, &["TCP/0.0.0.0/8001"]), &snap);
        assert_eq!(run[0].1.is_success(), !sidecar, "sidecar: {sidecar}");
    }
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
