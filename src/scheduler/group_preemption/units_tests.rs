//! Table tests of preemption units: grouping by disruption mode, the importance
//! order of upstream `moreImportantVictim` and the unit-level PDB split.

use super::*;
use crate::model::{IntOrPercent, LabelSelector, Labels, Pod, PodDisruptionBudget};
use crate::snapshot::NodeInfo;
use crate::testing::{NodeBuilder, PodBuilder};

fn pod(name: &str, prio: i32, start: Option<f64>) -> PodBuilder {
    PodBuilder::new(name).uid(name).cpu("1").priority(prio).with(move |p: &mut Pod| p.status.start_time = start)
}

fn snapshot(nodes: &[(&str, Vec<Pod>)]) -> Snapshot {
    Snapshot::from_nodes(nodes.iter().map(|(n, pods)| {
        let mut info = NodeInfo::new(Arc::new(NodeBuilder::new(n).cpu("16").memory("64Gi").pods(110).build()));
        for p in pods {
            let mut p = p.clone();
            p.spec.node_name = (*n).to_owned();
            info.add_pod(Arc::new(PodInfo::new(p).expect("valid pod")));
        }
        info
    }))
}

fn group(name: &str, mode: Option<DisruptionMode>, priority: Option<i32>) -> Arc<PodGroup> {
    let mut g = PodGroup::gang("default", name, 1);
    g.spec.disruption_mode = mode;
    g.spec.priority = priority;
    Arc::new(g)
}

/// Units as `(sorted pod names, priority, in_group)`, in unit order.
fn describe(units: &[Unit]) -> Vec<(Vec<String>, i32, bool)> {
    units
        .iter()
        .map(|u| {
            let mut names: Vec<String> = u.pods.iter().map(|(_, p)| p.pod.name().to_owned()).collect();
            names.sort();
            (names, u.priority, u.in_group)
        })
        .collect()
}

fn groups() -> Vec<Arc<PodGroup>> {
    vec![
        group("whole", Some(DisruptionMode::PodGroup), Some(7)),
        group("each", Some(DisruptionMode::Pod), Some(7)),
        group("default-mode", None, Some(7)),
        group("unprioritized", Some(DisruptionMode::PodGroup), None),
    ]
}

fn lookup(groups: &[Arc<PodGroup>]) -> impl Fn(&PodInfo) -> Option<Arc<PodGroup>> + '_ {
    move |p: &PodInfo| groups.iter().find(|g| Some(g.name()) == p.pod.scheduling_group_name()).cloned()
}

#[test]
fn units_follow_the_disruption_mode() {
    let snap = snapshot(&[
        (
            "n0",
            vec![
                pod("w0", 1, None).pod_group_name("whole").build(),
                pod("e0", 2, None).pod_group_name("each").build(),
                pod("solo", 3, None).build(),
            ],
        ),
        (
            "n1",
            vec![
                pod("w1", 1, None).pod_group_name("whole").build(),
                pod("e1", 4, None).pod_group_name("each").build(),
                pod("d0", 5, None).pod_group_name("default-mode").build(),
                pod("u0", 6, None).pod_group_name("unprioritized").build(),
                pod("u1", 2, None).pod_group_name("unprioritized").build(),
                pod("lost", 8, None).pod_group_name("missing").build(),
            ],
        ),
    ]);
    let gs = groups();
    let units = build_units(&snap, lookup(&gs), |_| false);
    let s = |v: &[&str]| v.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>();
    assert_eq!(
        describe(&units),
        vec![
            // One unit across nodes, at the group's priority (not its pods').
            (s(&["w0", "w1"]), 7, true),
            // Pod mode (set or defaulted): one unit per pod, at the pod's priority.
            (s(&["e0"]), 2, true),
            (s(&["solo"]), 3, false),
            (s(&["e1"]), 4, true),
            (s(&["d0"]), 5, true),
            // No spec.priority: the lowest priority among its pods.
            (s(&["u0", "u1"]), 2, true),
            // A group object that does not exist: the pod alone.
            (s(&["lost"]), 8, true),
        ]
    );
    // The unit remembers each pod's node.
    assert_eq!(units[0].pods.iter().map(|(pos, _)| *pos).collect::<Vec<_>>(), [0, 1]);
}

#[test]
fn skipped_pods_are_not_units() {
    let snap = snapshot(&[("n0", vec![pod("a", 1, None).build(), pod("b", 1, None).build()])]);
    let units = build_units(&snap, |_| None, |p| p.pod.name() == "a");
    assert_eq!(describe(&units), vec![(vec!["b".to_owned()], 1, false)]);
}

#[test]
fn importance_order_as_upstream_more_important_victim() {
    // (name, priority, in_group, pods, earliest start)
    type Row = (&'static str, i32, bool, usize, f64);
    let unit = |(_, priority, in_group, n, start): Row| Unit {
        pods: Vec::with_capacity(n),
        priority,
        in_group,
        earliest_start: start,
    };
    let sized = |r: Row| {
        let mut u = unit(r);
        for i in 0..r.3 {
            u.pods.push((0, Arc::new(PodInfo::new(pod(&format!("{}-{i}", r.0), r.1, None).build()).unwrap())));
        }
        u
    };
    let cases: &[(&str, Row, Row)] = &[
        ("higher priority wins over everything", ("a", 2, false, 1, 9.0), ("b", 1, true, 5, 1.0)),
        ("a group before a pod at equal priority", ("a", 1, true, 1, 9.0), ("b", 1, false, 1, 1.0)),
        ("between pods the earlier start", ("a", 1, false, 1, 1.0), ("b", 1, false, 1, 2.0)),
        ("a started pod before one not started", ("a", 1, false, 1, 5.0), ("b", 1, false, 1, f64::INFINITY)),
        ("between groups the larger", ("a", 1, true, 3, 9.0), ("b", 1, true, 2, 1.0)),
        ("between equal groups the earlier start", ("a", 1, true, 2, 1.0), ("b", 1, true, 2, 2.0)),
    ];
    for (name, more, less) in cases {
        let (a, b) = (sized(*more), sized(*less));
        assert_eq!(importance(&a, &b), Ordering::Less, "{name}");
        assert_eq!(importance(&b, &a), Ordering::Greater, "{name}");
    }
    let same = sized(("a", 1, false, 1, 3.0));
    assert_eq!(importance(&same, &sized(("b", 1, false, 1, 3.0))), Ordering::Equal);
}

#[test]
fn a_unit_violates_a_budget_when_any_of_its_pods_does() {
    let db = |name: &str| pod(name, 1, None).label("app", "db");
    let snap = snapshot(&[
        ("n0", vec![db("g0").pod_group_name("whole").build(), db("s0").build(), pod("free", 1, None).build()]),
        ("n1", vec![db("g1").pod_group_name("whole").build(), db("s1").build()]),
    ]);
    let gs = groups();
    let units = build_units(&snap, lookup(&gs), |_| false);
    // Units in build order: [g0 g1], s0, free, s1.
    let pdb = PodDisruptionBudget::max_unavailable(
        "db",
        "default",
        LabelSelector::from_labels(Labels::from_pairs([("app", "db")])),
        IntOrPercent::Int(1),
    );
    let names = |us: &[Unit]| describe(us).into_iter().map(|(n, _, _)| n.join("+")).collect::<Vec<_>>();

    // One disruption allowed: the group's second pod already exceeds it, and so does
    // every db pod after it; the unlabelled pod never violates.
    let (violating, non) = split_by_pdb(units.clone(), &PdbBudgets::with_allowed(vec![pdb.clone()], vec![1]));
    assert_eq!(names(&violating), ["g0+g1", "s0", "s1"]);
    assert_eq!(names(&non), ["free"]);

    // Three allowed: the group (2) and s0 fit the budget, s1 does not.
    let (violating, non) = split_by_pdb(units.clone(), &PdbBudgets::with_allowed(vec![pdb.clone()], vec![3]));
    assert_eq!(names(&violating), ["s1"]);
    assert_eq!(names(&non), ["g0+g1", "s0", "free"]);

    // A pod the budget already counts as disrupted uses none of it.
    let mut counted = pdb;
    counted.status.disrupted_pods = vec!["g0".to_owned()];
    let (violating, non) = split_by_pdb(units.clone(), &PdbBudgets::with_allowed(vec![counted], vec![1]));
    assert_eq!(names(&violating), ["s0", "s1"]);
    assert_eq!(names(&non), ["g0+g1", "free"]);

    // No budgets: nothing violates, order kept.
    let (violating, non) = split_by_pdb(units, &PdbBudgets::default());
    assert!(violating.is_empty());
    assert_eq!(names(&non), ["g0+g1", "s0", "free", "s1"]);
}
