//! A realistic mixed workload through the default profile, then every placement is
//! checked against every hard constraint (resources, ports, taints, node affinity,
//! zone spread, pod anti-affinity and affinity).

use std::collections::BTreeMap;

use schedkit::framework::{Handle, Profile};
use schedkit::model::{Pod, TaintEffect};
use schedkit::plugins::taint_toleration::find_untolerated_taint;
use schedkit::scheduler::Scheduler;
use schedkit::snapshot::{HostPort, Snapshot};
use schedkit::testing::{NodeBuilder, PodBuilder};

const ZONES: usize = 4;

fn nodes() -> Vec<schedkit::model::Node> {
    (0..300)
        .map(|i| {
            let mut b = NodeBuilder::new(&format!("node-{i:03}"))
                .cpu(if i % 3 == 0 { "32" } else { "16" })
                .memory("64Gi")
                .pods(40)
                .zone(&format!("zone-{}", i % ZONES))
                .label("kubernetes.io/hostname", &format!("node-{i:03}"))
                .label("disk", if i % 2 == 0 { "ssd" } else { "hdd" });
            if i % 10 == 0 {
                b = b.gpus(8).taint("nvidia.com/gpu", "present", TaintEffect::NoSchedule);
            }
            if i % 25 == 7 {
                b = b.taint("maintenance", "", TaintEffect::NoExecute);
            }
            b.build()
        })
        .collect()
}

fn with_json(mut base: Pod, spec_patch: &str) -> Pod {
    let patch: Pod = serde_json::from_str(&format!(r#"{{"spec":{spec_patch}}}"#)).unwrap();
    base.spec.affinity = patch.spec.affinity.or(base.spec.affinity);
    if !patch.spec.topology_spread_constraints.is_empty() {
        base.spec.topology_spread_constraints = patch.spec.topology_spread_constraints;
    }
    base
}

/// Several hundred pods of five kinds.
fn workload() -> Vec<Pod> {
    let mut pods = Vec::new();
    for i in 0..120 {
        // Web: spread across zones, DoNotSchedule.
        pods.push(with_json(
            PodBuilder::new(&format!("web-{i}")).label("app", "web").cpu("500m").memory("512Mi").build(),
            r#"{"topologySpreadConstraints":[{"maxSkew":1,"topologyKey":"topology.kubernetes.io/zone",
                "whenUnsatisfiable":"DoNotSchedule","labelSelector":{"matchLabels":{"app":"web"}}}]}"#,
        ));
    }
    for i in 0..60 {
        // Database: at most one per node, SSD only.
        pods.push(with_json(
            PodBuilder::new(&format!("db-{i}")).label("app", "db").cpu("2").memory("8Gi").host_port(5432).build(),
            r#"{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[
                  {"matchExpressions":[{"key":"disk","operator":"In","values":["ssd"]}]}]}},
                "podAntiAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[
                  {"labelSelector":{"matchLabels":{"app":"db"}},"topologyKey":"kubernetes.io/hostname"}]}}}"#,
        ));
    }
    for i in 0..20 {
        pods.push(PodBuilder::new(&format!("cache-{i}")).label("app", "cache").cpu("1").memory("2Gi").build());
    }
    for i in 0..60 {
        // API: must share a zone with a cache pod.
        pods.push(with_json(
            PodBuilder::new(&format!("api-{i}")).label("app", "api").cpu("1").memory("1Gi").build(),
            r#"{"affinity":{"podAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[
                  {"labelSelector":{"matchLabels":{"app":"cache"}},"topologyKey":"topology.kubernetes.io/zone"}]}}}"#,
        ));
    }
    for i in 0..80 {
        // Training: GPUs, tolerate the GPU taint.
        pods.push(
            PodBuilder::new(&format!("train-{i}"))
                .label("app", "train")
                .cpu("4")
                .memory("16Gi")
                .gpus([1, 2, 4][i % 3])
                .toleration("nvidia.com/gpu", Some("present"), Some(TaintEffect::NoSchedule))
                .build(),
        );
    }
    pods
}

#[test]
fn every_placement_respects_every_hard_constraint() {
    let handle = Handle::default();
    let mut s = Scheduler::builder().profile(Profile::kube_default(&handle)).handle(handle).seed(11).build();
    for n in nodes() {
        s.add_node(n).unwrap();
    }
    let mut placed: Vec<(Pod, String)> = Vec::new();
    let mut failed = Vec::new();
    for pod in workload() {
        match s.schedule_pod(pod.clone()) {
            Ok(b) => {
                let node = b.node().to_owned();
                b.run().unwrap();
                placed.push((pod, node));
            }
            Err(e) => failed.push((pod.key(), e.to_string())),
        }
    }
    assert!(placed.len() >= 300, "most pods fit: {} placed, failures {failed:?}", placed.len());

    let mut snap = Snapshot::default();
    s.cache().lock().update_snapshot(&mut snap);
    for n in snap.nodes() {
        let (a, r) = (n.allocatable(), n.requested());
        assert!(r.milli_cpu <= a.milli_cpu && r.memory <= a.memory, "{} over capacity", n.node().name());
        assert!(n.pods().len() as i64 <= a.allowed_pod_number);
        assert!(r.scalar_str("nvidia.com/gpu") <= a.scalar_str("nvidia.com/gpu"));
        let ports: Vec<&HostPort> = n.used_ports().iter().collect();
        for (i, p) in ports.iter().enumerate() {
            assert!(!ports[i + 1..].iter().any(|q| q.conflicts(p)), "port conflict on {}", n.node().name());
        }
        for p in n.pods() {
            assert!(
                find_untolerated_taint(&n.node().spec.taints, &p.pod.spec.tolerations).is_none(),
                "{} on tainted {}",
                p.pod.key(),
                n.node().name()
            );
            assert!(schedkit::plugins::node_affinity::required_affinity_matches(p, n), "{} affinity", p.pod.key());
        }
        let dbs = n.pods().iter().filter(|p| p.pod.metadata.labels.get_str("app") == Some("db")).count();
        assert!(dbs <= 1, "anti-affinity: {dbs} databases on {}", n.node().name());
    }
    let zone_of =
        |node: &str| snap.get(node).unwrap().node().metadata.labels.get_str("topology.kubernetes.io/zone").unwrap();
    let mut web_per_zone: BTreeMap<&str, i64> =
        (0..ZONES).map(|z| (["zone-0", "zone-1", "zone-2", "zone-3"][z], 0)).collect();
    let mut cache_zones = std::collections::BTreeSet::new();
    for (pod, node) in &placed {
        match pod.metadata.labels.get_str("app") {
            Some("web") => *web_per_zone.get_mut(zone_of(node)).unwrap() += 1,
            Some("cache") => {
                cache_zones.insert(zone_of(node));
            }
            _ => {}
        }
    }
    let (min, max) = (web_per_zone.values().min().unwrap(), web_per_zone.values().max().unwrap());
    assert!(max - min <= 1, "zone skew {web_per_zone:?}");
    for (pod, node) in &placed {
        if pod.metadata.labels.get_str("app") == Some("api") {
            // Required pod affinity: the first api pod may only land once a cache exists
            // in its zone (caches are scheduled before any api pod).
            assert!(cache_zones.contains(zone_of(node)), "{} in a zone without cache", pod.key());
        }
    }
}
