//! Tables for GpuDomainPlacement and GpuDomainFragmentation, and a property over
//! random clusters (schedkit's own plugins: no upstream table exists).

use std::sync::Arc;

use proptest::prelude::*;

use super::*;
use crate::framework::{
    Code, Placement, PlacementGeneratePlugin, PlacementScore, PlacementScorePlugin, PodGroupAssignments,
    PodGroupCycleState, PodGroupInfo, ProposedAssignment,
};
use crate::framework::{Handle, MAX_PLACEMENT_SCORE, MIN_PLACEMENT_SCORE};
use crate::model::workload::PodGroup;
use crate::plugins::names;
use crate::snapshot::{MemberState, NodeInfo, PodInfo, Snapshot};
use crate::testing::{NodeBuilder, PodBuilder};

/// A node: name, (clique, rack) labels, GPUs, GPUs already used.
type N<'a> = (&'a str, Option<&'a str>, Option<&'a str>, i64, i64);

fn node((name, clique, rack, gpus, used): N<'_>) -> NodeInfo {
    let mut b = NodeBuilder::new(name).cpu("64").memory("512Gi").pods(110).gpus(gpus);
    if let Some(c) = clique {
        b = b.label(GPU_CLIQUE_LABEL, c);
    }
    if let Some(r) = rack {
        b = b.label(RACK_LABEL, r);
    }
    let mut info = NodeInfo::new(Arc::new(b.build()));
    if used > 0 {
        let p =
            PodBuilder::new(&format!("{name}-busy")).uid(&format!("{name}-busy")).gpus(used).node_name(name).build();
        info.add_pod(Arc::new(PodInfo::new(p).unwrap()));
    }
    info
}

fn member(name: &str, group: &str, gpus: i64) -> Arc<PodInfo> {
    let p = PodBuilder::new(name).uid(name).cpu("1").gpus(gpus).pod_group_name(group).build();
    Arc::new(PodInfo::new(p).unwrap())
}

fn group(pods: &[i64], min: Option<i32>, key: Option<&str>) -> PodGroupInfo {
    let mut pg = match min {
        Some(m) => PodGroup::gang("default", "job", m),
        None => PodGroup::basic("default", "job"),
    };
    if let Some(k) = key {
        pg = pg.with_topology(k);
    }
    let unscheduled_pods = pods.iter().enumerate().map(|(i, &g)| member(&format!("w{i}"), "job", g)).collect();
    PodGroupInfo { pod_group: Arc::new(pg), unscheduled_pods }
}

fn names_of(snapshot: &Snapshot, p: &Placement) -> Vec<String> {
    p.nodes.iter().map(|&i| snapshot.nodes()[i].node().name().to_owned()).collect()
}

struct Case<'a> {
    name: &'a str,
    nodes: &'a [N<'a>],
    pods: &'a [i64],
    min: Option<i32>,
    key: Option<&'a str>,
    /// Already scheduled members: (pod, node).
    scheduled: &'a [(&'a str, &'a str)],
    want: &'a [&'a str],
}

#[test]
fn generate_placements() {
    let cases = [
        Case {
            name: "no constraint: the cliques that hold the group, smallest first",
            nodes: &[
                ("a0", Some("a"), Some("r1"), 4, 0),
                ("a1", Some("a"), Some("r1"), 4, 0),
                ("a2", Some("a"), Some("r1"), 4, 0),
                ("b0", Some("b"), Some("r1"), 4, 0),
                ("b1", Some("b"), Some("r1"), 4, 0),
                ("c0", Some("c"), Some("r2"), 4, 0),
            ],
            pods: &[4, 4],
            min: Some(2),
            key: None,
            scheduled: &[],
            want: &["nvidia.com/gpu.clique=b", "nvidia.com/gpu.clique=a"],
        },
        Case {
            name: "no clique holds the group: the rack does",
            nodes: &[("a0", Some("a"), Some("r1"), 4, 0), ("b0", Some("b"), Some("r1"), 4, 0)],
            pods: &[4, 4],
            min: Some(2),
            key: None,
            scheduled: &[],
            want: &["topology.kubernetes.io/rack=r1"],
        },
        Case {
            name: "a rack constraint: cliques inside each rack",
            nodes: &[
                ("a0", Some("a"), Some("r1"), 8, 0),
                ("b0", Some("b"), Some("r1"), 8, 0),
                ("c0", Some("c"), Some("r2"), 8, 0),
                ("c1", Some("c"), Some("r2"), 8, 0),
            ],
            pods: &[4, 4],
            min: Some(2),
            key: Some(RACK_LABEL),
            scheduled: &[],
            want: &["nvidia.com/gpu.clique=a", "nvidia.com/gpu.clique=b", "nvidia.com/gpu.clique=c"],
        },
        Case {
            name: "a rack constraint with no clique big enough: the rack level",
            nodes: &[("a0", Some("a"), Some("r1"), 4, 0), ("b0", Some("b"), Some("r1"), 4, 0)],
            pods: &[4, 4],
            min: Some(2),
            key: Some(RACK_LABEL),
            scheduled: &[],
            want: &["topology.kubernetes.io/rack=r1"],
        },
        Case {
            name: "a rack constraint: a rack holding the group in one clique beats one that needs two",
            nodes: &[
                ("b0", Some("b"), Some("r2"), 4, 0),
                ("c0", Some("c"), Some("r2"), 4, 0),
                ("a0", Some("a"), Some("r1"), 8, 0),
            ],
            pods: &[4, 4],
            min: Some(2),
            key: Some(RACK_LABEL),
            scheduled: &[],
            want: &["nvidia.com/gpu.clique=a"],
        },
        Case {
            name: "busy GPUs don't count: the clique with room wins although it is listed later",
            nodes: &[("a0", Some("a"), None, 8, 6), ("a1", Some("a"), None, 8, 6), ("b0", Some("b"), None, 8, 0)],
            pods: &[4, 4],
            min: Some(2),
            key: None,
            scheduled: &[],
            want: &["nvidia.com/gpu.clique=b"],
        },
        Case {
            name: "nothing holds every pod: a clique holding the gang's minCount",
            nodes: &[("a0", Some("a"), None, 8, 0), ("b0", Some("b"), None, 8, 8)],
            pods: &[4, 4, 4],
            min: Some(2),
            key: None,
            scheduled: &[],
            want: &["nvidia.com/gpu.clique=a"],
        },
        Case {
            name: "no node has a level label: the parent unchanged",
            nodes: &[("n0", None, None, 8, 0), ("n1", None, None, 8, 0)],
            pods: &[4, 4],
            min: Some(2),
            key: None,
            scheduled: &[],
            want: &["parent"],
        },
        Case {
            name: "a scheduled member pins its clique",
            nodes: &[
                ("a0", Some("a"), Some("r1"), 8, 0),
                ("b0", Some("b"), Some("r1"), 8, 0),
                ("b1", Some("b"), Some("r1"), 8, 0),
            ],
            pods: &[4],
            min: Some(2),
            key: None,
            scheduled: &[("s0", "b1")],
            want: &["nvidia.com/gpu.clique=b"],
        },
        Case {
            name: "the required key on no node: no placement",
            nodes: &[("a0", Some("a"), None, 8, 0)],
            pods: &[4],
            min: Some(1),
            key: Some("example.com/never-set"),
            scheduled: &[],
            want: &[],
        },
        Case {
            name: "CPU-only pods fit every domain: all cliques, smallest free first",
            nodes: &[("a0", Some("a"), None, 8, 0), ("b0", Some("b"), None, 4, 0), ("c0", Some("c"), None, 0, 0)],
            pods: &[0, 0],
            min: None,
            key: None,
            scheduled: &[],
            want: &["nvidia.com/gpu.clique=c", "nvidia.com/gpu.clique=b", "nvidia.com/gpu.clique=a"],
        },
    ];
    for c in cases {
        let handle = Handle::default();
        let snapshot = Snapshot::from_nodes(c.nodes.iter().copied().map(node));
        for (p, n) in c.scheduled {
            let pod = PodBuilder::new(p).uid(p).gpus(4).pod_group_name("job").node_name(n).build();
            handle.pod_groups().states().set(&Arc::new(PodInfo::new(pod).unwrap()), MemberState::Assigned);
        }
        let info = group(c.pods, c.min, c.key);
        let plugin = GpuDomainPlacement::new(handle, &GpuDomainArgs::default(), None);
        let parent = Placement { name: "parent".into(), nodes: (0..snapshot.len()).collect() };
        let got = plugin
            .generate_placements(&mut PodGroupCycleState::new(), &info, &snapshot, &parent)
            .unwrap_or_else(|s| panic!("{}: {s:?}", c.name));
        let got: Vec<&str> = got.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(got, c.want, "{}", c.name);
    }
}

#[test]
fn scheduled_members_in_two_racks_are_an_error() {
    let handle = Handle::default();
    let snapshot = Snapshot::from_nodes(
        [("a0", Some("a"), Some("r1"), 8, 0), ("b0", Some("b"), Some("r2"), 8, 0)].into_iter().map(node),
    );
    for (p, n) in [("s0", "a0"), ("s1", "b0")] {
        let pod = PodBuilder::new(p).uid(p).pod_group_name("job").node_name(n).build();
        handle.pod_groups().states().set(&Arc::new(PodInfo::new(pod).unwrap()), MemberState::Assigned);
    }
    let info = group(&[4], Some(3), Some(RACK_LABEL));
    let plugin = GpuDomainPlacement::new(handle, &GpuDomainArgs::default(), None);
    let got = plugin.generate_placements(&mut PodGroupCycleState::new(), &info, &snapshot, &Placement::all(&snapshot));
    let s = got.unwrap_err();
    assert_eq!(s.code(), Code::Error);
    assert!(s.message().contains("more than 1 domain found for pod group: r1, r2"), "{}", s.message());
}

#[test]
fn the_nvlink_table_comes_before_the_clique_label() {
    let snapshot = Snapshot::from_nodes(
        [("t0", Some("x"), None, 4, 0), ("t1", Some("y"), None, 4, 0), ("t2", Some("z"), None, 4, 0)]
            .into_iter()
            .map(node),
    );
    let table = Arc::new(NvLinkDomains::default());
    table.set_node("t0", "nvl72-a");
    table.set_node("t1", "nvl72-a");
    let plugin = GpuDomainPlacement::new(Handle::default(), &GpuDomainArgs::default(), Some(table));
    let got = plugin
        .generate_placements(
            &mut PodGroupCycleState::new(),
            &group(&[4, 4], Some(2), None),
            &snapshot,
            &Placement::all(&snapshot),
        )
        .unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].name, "nvidia.com/gpu.clique=nvl72-a");
    assert_eq!(names_of(&snapshot, &got[0]), ["t0", "t1"]);
}

#[test]
fn nvlink_domains_from_topology_graphs() {
    use crate::topology::machines;
    let t = NvLinkDomains::default();
    let nvl72 = machines::gb200_nvl72().matrix().unwrap();
    let trays: Vec<String> = (0..18).map(|i| format!("r0-t{i}")).collect();
    assert_eq!(t.add_machine("r0", &nvl72, &trays), Ok(18));
    assert_eq!(t.domain_of("r0-t0"), Some("r0/nvlink-0"));
    // A DGX H100 is one host: its node is its own NVLink domain.
    let dgx = machines::dgx_h100().matrix().unwrap();
    assert_eq!(t.add_machine("dgx", &dgx, &["dgx-0"]), Ok(1));
    assert_ne!(t.domain_of("dgx-0"), t.domain_of("r0-t0"));
    // A PCIe box has no NVLink: no domain.
    let pcie = machines::pcie_l40s_8().matrix().unwrap();
    assert_eq!(t.add_machine("l40s", &pcie, &["l40s-0"]), Ok(0));
    assert_eq!(t.domain_of("l40s-0"), None);
    assert!(matches!(t.add_machine("bad", &nvl72, &["one"]), Err(GpuDomainError::HostCount { want: 18, got: 1, .. })));
    let mut empty = trays.clone();
    empty[3].clear();
    assert_eq!(t.add_machine("bad", &nvl72, &empty), Err(GpuDomainError::EmptyNode { domain: "bad".into(), host: 3 }));
}

#[test]
fn args_are_validated() {
    use serde_json::json;
    let p = names::GPU_DOMAIN_PLACEMENT;
    assert_eq!(GpuDomainArgs::from_config(p, None), Ok(GpuDomainArgs::default()));
    let cases = [
        (json!({"levels": []}), GpuDomainError::NoLevels { plugin: p }),
        (json!({"levels": ["a", ""]}), GpuDomainError::BadLevel { plugin: p, index: 1, key: String::new() }),
        (json!({"levels": ["a", "a"]}), GpuDomainError::BadLevel { plugin: p, index: 1, key: "a".into() }),
        (json!({"resourceName": ""}), GpuDomainError::NoResource { plugin: p }),
    ];
    for (v, want) in cases {
        assert_eq!(GpuDomainArgs::from_config(p, Some(&v)), Err(want), "{v}");
    }
    let e = GpuDomainArgs::from_config(p, Some(&json!({"level": ["a"]}))).unwrap_err();
    assert!(matches!(e, GpuDomainError::Args { .. }), "{e}");
}

/// Runs the generator on `snapshot`, then places the group in each placement (first
/// node with room, in placement order) and scores: what the group cycle would do with
/// pods that only need GPUs.
fn run(snapshot: &Snapshot, info: &PodGroupInfo) -> Vec<(Placement, Vec<ProposedAssignment>, i64)> {
    let args = GpuDomainArgs::default();
    let generator = GpuDomainPlacement::new(Handle::default(), &args, None);
    let score = GpuDomainFragmentation::new(&args);
    let mut state = PodGroupCycleState::new();
    let placements = generator.generate_placements(&mut state, info, snapshot, &Placement::all(snapshot)).unwrap();
    let mut out = Vec::new();
    for p in placements {
        let mut free: Vec<i64> =
            p.nodes.iter().map(|&i| snapshot.nodes()[i].allocatable().scalar_str("nvidia.com/gpu")).collect();
        for (k, &i) in p.nodes.iter().enumerate() {
            free[k] -= snapshot.nodes()[i].requested().scalar_str("nvidia.com/gpu");
        }
        let mut proposed = Vec::new();
        for pod in &info.unscheduled_pods {
            let g = pod.requests.scalar_str("nvidia.com/gpu");
            if let Some(k) = free.iter().position(|&f| f >= g) {
                free[k] -= g;
                let node = snapshot.nodes()[p.nodes[k]].node().name().to_owned();
                proposed.push(ProposedAssignment { pod: pod.clone(), node });
            }
        }
        let a = PodGroupAssignments { placement: Arc::new(p.clone()), proposed: proposed.clone() };
        let s = score.score_placement(&state, info, &a).unwrap();
        out.push((p, proposed, s));
    }
    let mut scores: Vec<PlacementScore> =
        out.iter().map(|(p, _, s)| PlacementScore { placement: p.name.clone(), score: *s }).collect();
    assert!(score.normalize_placement_score(&state, info, &mut scores).is_success());
    for ((_, _, s), n) in out.iter_mut().zip(&scores) {
        assert!((MIN_PLACEMENT_SCORE..=MAX_PLACEMENT_SCORE).contains(&n.score));
        *s = n.score;
    }
    out
}

fn best(out: &[(Placement, Vec<ProposedAssignment>, i64)]) -> &Placement {
    let mut i = 0;
    for (k, o) in out.iter().enumerate() {
        if o.2 > out[i].2 {
            i = k;
        }
    }
    &out[i].0
}

#[test]
fn score_placements() {
    struct S<'a> {
        name: &'a str,
        nodes: &'a [N<'a>],
        pods: &'a [i64],
        /// Placement name -> normalized score.
        want: &'a [(&'a str, i64)],
    }
    let cases = [
        S {
            name: "equal fragmentation: the smaller clique wins",
            nodes: &[
                ("a0", Some("a"), None, 4, 0),
                ("a1", Some("a"), None, 4, 0),
                ("a2", Some("a"), None, 4, 0),
                ("b0", Some("b"), None, 4, 0),
                ("b1", Some("b"), None, 4, 0),
            ],
            pods: &[4, 4],
            want: &[("nvidia.com/gpu.clique=b", 100), ("nvidia.com/gpu.clique=a", 0)],
        },
        S {
            name: "a clique where the pod strands GPUs on its node loses, though it is smaller",
            nodes: &[("a0", Some("a"), None, 8, 0), ("b0", Some("b"), None, 8, 2)],
            pods: &[4],
            want: &[("nvidia.com/gpu.clique=b", 0), ("nvidia.com/gpu.clique=a", 100)],
        },
    ];
    for c in cases {
        let snapshot = Snapshot::from_nodes(c.nodes.iter().copied().map(node));
        let out = run(&snapshot, &group(c.pods, Some(1), None));
        let got: Vec<(&str, i64)> = out.iter().map(|(p, _, s)| (p.name.as_str(), *s)).collect();
        assert_eq!(got, c.want, "{}", c.name);
    }
}

#[test]
fn using_stranded_gpus_lowers_the_cost() {
    let snapshot =
        Snapshot::from_nodes([("a0", Some("a"), None, 4, 0), ("b0", Some("b"), None, 4, 0)].into_iter().map(node));
    let info = group(&[4, 4], Some(2), None);
    let args = GpuDomainArgs::default();
    let mut state = PodGroupCycleState::new();
    let generator = GpuDomainPlacement::new(Handle::default(), &args, None);
    let p = generator.generate_placements(&mut state, &info, &snapshot, &Placement::all(&snapshot)).unwrap();
    assert_eq!(p.len(), 1, "no clique holds 8 GPUs: the parent");
    let proposed = vec![
        ProposedAssignment { pod: info.unscheduled_pods[0].clone(), node: "a0".into() },
        ProposedAssignment { pod: info.unscheduled_pods[1].clone(), node: "b0".into() },
    ];
    let a = PodGroupAssignments { placement: Arc::new(p[0].clone()), proposed };
    let s = GpuDomainFragmentation::new(&args).score_placement(&state, &info, &a).unwrap();
    // Each clique goes from 4 free GPUs (4 mod 8 = 4 stranded for a group of 8) to 0:
    // 8000 milli fewer stranded; the tie-break adds the 8 free GPUs.
    assert_eq!(s, -(-8000 * (1 << 20) + 8));
}

#[test]
fn the_scorer_needs_the_generator() {
    let info = group(&[4], Some(1), None);
    let a =
        PodGroupAssignments { placement: Arc::new(Placement { name: "p".into(), nodes: vec![] }), proposed: vec![] };
    let s = GpuDomainFragmentation::new(&GpuDomainArgs::default())
        .score_placement(&PodGroupCycleState::new(), &info, &a)
        .unwrap_err();
    assert_eq!(s.code(), Code::Error);
    assert!(s.message().contains("needs GpuDomainPlacement"), "{}", s.message());
}

#[test]
fn normalize_placement_score() {
    let cases: [(&[i64], &[i64]); 4] = [
        (&[-10, -20, -30], &[100, 50, 0]),
        (&[-5, -5], &[100, 100]),
        (&[7], &[100]),
        (&[i64::MIN, i64::MAX], &[0, 100]),
    ];
    let p = GpuDomainFragmentation::new(&GpuDomainArgs::default());
    let info = group(&[1], Some(1), None);
    for (input, want) in cases {
        let mut s: Vec<PlacementScore> =
            input.iter().map(|&score| PlacementScore { placement: String::new(), score }).collect();
        assert!(p.normalize_placement_score(&PodGroupCycleState::new(), &info, &mut s).is_success());
        assert_eq!(s.iter().map(|s| s.score).collect::<Vec<_>>(), want, "{input:?}");
    }
}

proptest! {
    /// Random cliques of 4-GPU trays (some busy) in random racks, a group of 4-GPU pods,
    /// with or without a rack constraint: whenever a clique can hold the group, the chosen
    /// placement is one clique, every member lands in it, and (scores tie: whole trays
    /// strand nothing) it is the feasible clique with the least free GPUs.
    #[test]
    fn smallest_holding_clique_wins(
        cliques in prop::collection::vec((0usize..3, 0usize..7, 0usize..4), 1..6),
        pods in 1usize..6,
        constrained in any::<bool>(),
    ) {
        let mut nodes = Vec::new();
        for (c, &(rack, free, busy)) in cliques.iter().enumerate() {
            for t in 0..free + busy {
                let used = if t < busy { 4 } else { 0 };
                let n = (format!("c{c}-t{t}"), format!("c{c}"), format!("r{rack}"), used);
                nodes.push(n);
            }
        }
        let snapshot = Snapshot::from_nodes(
            nodes.iter().map(|(n, c, r, u)| node((n, Some(c), Some(r), 4, *u))),
        );
        let info = group(&vec![4; pods], Some(i32::try_from(pods).unwrap()), constrained.then_some(RACK_LABEL));
        let feasible: Vec<usize> = cliques.iter().map(|&(_, f, _)| f).filter(|&f| f >= pods).collect();
        prop_assume!(!feasible.is_empty());
        let out = run(&snapshot, &info);
        let chosen = best(&out);
        let (_, proposed, _) = out.iter().find(|(p, _, _)| p == chosen).unwrap();
        prop_assert_eq!(proposed.len(), pods);
        let clique_of = |n: &str| n.split('-').next().unwrap().to_owned();
        let first = clique_of(&proposed[0].node);
        prop_assert!(proposed.iter().all(|a| clique_of(&a.node) == first), "{:?}", proposed);
        prop_assert!(names_of(&snapshot, chosen).iter().all(|n| clique_of(n) == first));
        let idx: usize = first[1..].parse().unwrap();
        prop_assert_eq!(cliques[idx].1, *feasible.iter().min().unwrap());
    }
}
