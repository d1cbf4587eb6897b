//! DefaultPreemption and the shared evaluator against upstream's tables
//! (`pkg/scheduler/framework/plugins/defaultpreemption/default_preemption_test.go`:
//! `TestCalculateNumCandidates`, `TestDryRunPreemption`, `TestSelectBestCandidate`,
//! `TestPodEligibleToPreemptOthers`, `TestPostFilter`, `TestPreempt`). Cases are
//! rebuilt with schedkit's builders; where upstream's exact quantities were not
//! reproduced the case says "after".

use std::sync::Arc;

use schedkit::framework::preemption::{
    Candidate, CandidateSearch, PreemptionContext, Victims, filter_statuses, find_candidates,
    pick_one_node_for_preemption, pre_filter_state, preempt,
};
use schedkit::framework::{Code, Evictor, Handle, Profile, RecordingEvictor};
use schedkit::model::{IntOrPercent, LabelSelector, Labels, Node, Pod, PodDisruptionBudget, PreemptionPolicy, Symbol};
use schedkit::plugins::default_preemption::{DefaultPreemption, DefaultPreemptionArgs, Offset, num_candidates};
use schedkit::plugins::node_affinity::NodeAffinity;
use schedkit::plugins::node_resources::Fit;
use schedkit::scheduler::{ScheduleError, Scheduler, TieBreak};
use schedkit::snapshot::{Cache, PodInfo, Snapshot};
use schedkit::testing::{NodeBuilder, PodBuilder};

const LOW: i32 = 0;
const MID: i32 = 100;
const HIGH: i32 = 1000;

fn node(name: &str, cpu: &str) -> Node {
    NodeBuilder::new(name).cpu(cpu).memory("100Gi").build()
}

fn running(name: &str, node: &str, prio: i32, cpu: &str) -> Pod {
    PodBuilder::new(name).node_name(node).priority(prio).cpu(cpu).with(|p| p.status.start_time = Some(1.0)).build()
}

fn started(mut p: Pod, t: f64) -> Pod {
    p.status.start_time = Some(t);
    p
}

fn profile(handle: &Handle, args: DefaultPreemptionArgs, offset: Offset) -> Arc<Profile> {
    Arc::new(
        Profile::builder("default-scheduler")
            .plugin(NodeAffinity::from_config(None).unwrap())
            .plugin(Fit::from_config(None).unwrap())
            .plugin(DefaultPreemption::new(args, handle.clone()).unwrap().with_offset(offset))
            .build()
            .unwrap(),
    )
}

fn snapshot(nodes: Vec<Node>, pods: Vec<Pod>) -> Snapshot {
    let mut c = Cache::new();
    for n in nodes {
        c.add_node(n).unwrap();
    }
    for p in pods {
        c.add_pod(Arc::new(PodInfo::new(p).unwrap())).unwrap();
    }
    let mut s = Snapshot::default();
    c.update_snapshot(&mut s);
    s
}

/// `(node, victim names, PDB violations)` of each candidate, in search order.
type Found = Vec<(String, Vec<String>, usize)>;

fn summarize(s: &CandidateSearch) -> Found {
    s.candidates
        .iter()
        .map(|c| {
            (
                c.node.as_str().to_owned(),
                c.victims.pods.iter().map(|p| p.pod.name().to_owned()).collect(),
                c.victims.num_pdb_violations,
            )
        })
        .collect()
}

fn dry_run(
    nodes: Vec<Node>,
    pods: Vec<Pod>,
    pdbs: Vec<PodDisruptionBudget>,
    preemptor: Pod,
    args: DefaultPreemptionArgs,
    offset: Offset,
) -> CandidateSearch {
    let handle = Handle::default();
    handle.preemption().set_pod_disruption_budgets(pdbs).unwrap();
    let prof = profile(&handle, args, offset);
    let plugin = DefaultPreemption::new(args, handle.clone()).unwrap().with_offset(offset);
    // The candidates name nodes by symbol and are read after the snapshot is gone:
    // pin the names (a node's name is otherwise freed with its last NodeInfo).
    for n in &nodes {
        schedkit::model::Symbol::intern(n.name());
    }
    let snap = snapshot(nodes, pods);
    let pod = PodInfo::new(preemptor).unwrap();
    let (state, _) = pre_filter_state(&prof, &pod, &snap);
    let statuses = filter_statuses(&prof, &state, &pod, &snap);
    let cx = PreemptionContext {
        profile: &prof,
        state: &state,
        pod: &pod,
        snapshot: &snap,
        statuses: &statuses,
        handle: &handle,
        nominated: None,
    };
    find_candidates(&plugin, &cx)
}

fn all() -> DefaultPreemptionArgs {
    DefaultPreemptionArgs { min_candidate_nodes_percentage: 100, min_candidate_nodes_absolute: 0 }
}

fn v(items: &[(&str, &[&str], usize)]) -> Found {
    items.iter().map(|(n, ps, k)| ((*n).to_owned(), ps.iter().map(|s| (*s).to_owned()).collect(), *k)).collect()
}

fn app_pdb(allowed: i32, disrupted: &[&str]) -> PodDisruptionBudget {
    let mut p = PodDisruptionBudget::min_available(
        "pdb",
        "default",
        LabelSelector::from_labels(Labels::from_pairs([("app", "foo")])),
        IntOrPercent::Int(1),
    );
    p.status.disruptions_allowed = Some(allowed);
    p.status.disrupted_pods = disrupted.iter().map(|s| (*s).to_owned()).collect();
    p
}

/// Upstream `TestCalculateNumCandidates`.
#[test]
fn calculate_num_candidates() {
    let cases = [
        ("no nodes", 0, 50, 10, 0),
        ("nodes*minCandidateNodesPercentage > minCandidateNodesAbsolute", 100, 50, 10, 50),
        ("nodes*minCandidateNodesPercentage < minCandidateNodesAbsolute", 100, 5, 10, 10),
        (
            "nodes*minCandidateNodesPercentage < minCandidateNodesAbsolute and nodes < minCandidateNodesAbsolute",
            5,
            20,
            10,
            5,
        ),
        ("defaults on 5000 nodes", 5000, 10, 100, 500),
    ];
    for (name, nodes, pct, abs, want) in cases {
        let args = DefaultPreemptionArgs { min_candidate_nodes_percentage: pct, min_candidate_nodes_absolute: abs };
        assert_eq!(num_candidates(&args, nodes), want, "{name}");
    }
}

/// Upstream `TestValidateDefaultPreemptionArgs` (apis/config/validation): bad args are
/// typed errors at construction.
#[test]
fn invalid_args_are_rejected() {
    for (pct, abs) in [(-1, 10), (101, 10), (10, -1), (0, 0)] {
        let a = DefaultPreemptionArgs { min_candidate_nodes_percentage: pct, min_candidate_nodes_absolute: abs };
        assert!(DefaultPreemption::new(a, Handle::default()).is_err(), "{pct} {abs}");
    }
    let r = schedkit::plugins::default_registry();
    let cfg: schedkit::framework::ProfileConfig = serde_json::from_str(
        r#"{"plugins":{"postFilter":{"enabled":[{"name":"DefaultPreemption"}]}},
            "pluginConfig":[{"name":"DefaultPreemption","args":{"minCandidateNodesPercentage":200}}]}"#,
    )
    .unwrap();
    assert!(r.build_profile(&cfg, &Handle::default()).unwrap_err().to_string().contains("minCandidateNodesPercentage"));
}

/// Upstream `TestDryRunPreemption`, "a pod that does not fit on any node": even with
/// every lower-priority pod gone, the higher-priority ones leave too little room.
#[test]
fn dry_run_pod_fits_nowhere() {
    let s = dry_run(
        vec![node("node1", "4"), node("node2", "4")],
        vec![
            running("p1", "node1", LOW, "2"),
            running("h1", "node1", HIGH + 1, "1"),
            running("p2", "node2", LOW, "2"),
            running("h2", "node2", HIGH + 1, "1"),
        ],
        vec![],
        PodBuilder::new("p").priority(HIGH).cpu("4").build(),
        all(),
        Offset::Zero,
    );
    assert!(s.candidates.is_empty());
    assert_eq!(s.potential_nodes, 2);
    assert_eq!(s.failed.len(), 2);
    assert!(s.failed.iter().all(|(_, st)| st.reasons().iter().any(|r| r == "Insufficient cpu")), "{:?}", s.failed);
}

/// Upstream `TestDryRunPreemption`, "a pod that fits on both nodes when lower
/// priority pods are preempted".
#[test]
fn dry_run_both_nodes() {
    let s = dry_run(
        vec![node("node1", "4"), node("node2", "4")],
        vec![running("p1", "node1", MID, "4"), running("p2", "node2", MID, "4")],
        vec![],
        PodBuilder::new("p").priority(HIGH).cpu("4").build(),
        all(),
        Offset::Zero,
    );
    assert_eq!(summarize(&s), v(&[("node1", &["p1"], 0), ("node2", &["p2"], 0)]));
}

/// Upstream `TestDryRunPreemption`, "a pod that would fit on the nodes, but other pods
/// running are higher priority, no preemption would happen".
#[test]
fn dry_run_only_higher_priority_pods() {
    let s = dry_run(
        vec![node("node1", "4"), node("node2", "4")],
        vec![running("p1", "node1", HIGH, "4"), running("p2", "node2", HIGH, "4")],
        vec![],
        PodBuilder::new("p").priority(MID).cpu("4").build(),
        all(),
        Offset::Zero,
    );
    assert!(s.candidates.is_empty());
    assert!(s.failed.iter().all(|(_, st)| st.code() == Code::UnschedulableAndUnresolvable
        && st.reasons() == ["No preemption victims found for incoming pod"]));
}

/// Upstream `TestDryRunPreemption`, "medium priority pod is preempted, but lower
/// priority one stays as it is small": the reprieve goes from the highest priority
/// down, so the small low-priority pod is reprieved after the medium one is not.
#[test]
fn dry_run_reprieve_keeps_the_small_low_priority_pod() {
    let s = dry_run(
        vec![node("node1", "4"), node("node2", "4")],
        vec![running("p1.1", "node1", LOW, "1"), running("p1.2", "node1", MID, "3"), running("p2", "node2", MID, "4")],
        vec![],
        PodBuilder::new("p").priority(HIGH).cpu("3").build(),
        all(),
        Offset::Zero,
    );
    assert_eq!(summarize(&s), v(&[("node1", &["p1.2"], 0), ("node2", &["p2"], 0)]));
}

/// Upstream `TestDryRunPreemption`, "mixed priority pods are preempted, pick later
/// StartTime one when priorities are equal": the earlier-started pod is more
/// important, so it is reprieved first.
#[test]
fn dry_run_equal_priority_prefers_evicting_the_later_start() {
    let s = dry_run(
        vec![node("node1", "4")],
        vec![
            started(running("p1.1", "node1", MID, "2"), 10.0),
            started(running("p1.2", "node1", MID, "2"), 5.0),
            started(running("p1.3", "node1", LOW, "0"), 1.0),
        ],
        vec![],
        PodBuilder::new("p").priority(HIGH).cpu("2").build(),
        all(),
        Offset::Zero,
    );
    assert_eq!(summarize(&s), v(&[("node1", &["p1.1"], 0)]));
}

/// Upstream `TestDryRunPreemption`, "mixed priority pods are preempted": victims
/// come out most important first.
#[test]
fn dry_run_victims_are_ordered_most_important_first() {
    let s = dry_run(
        vec![node("node1", "5")],
        vec![
            running("p1.1", "node1", LOW, "2"),
            running("p1.2", "node1", MID, "2"),
            running("p1.3", "node1", HIGH + 1, "1"),
        ],
        vec![],
        PodBuilder::new("p").priority(HIGH).cpu("4").build(),
        all(),
        Offset::Zero,
    );
    assert_eq!(summarize(&s), v(&[("node1", &["p1.2", "p1.1"], 0)]));
}

/// Upstream `TestDryRunPreemption`, "preemption with violation of same pdb".
#[test]
fn dry_run_pdb_violation_is_counted() {
    let foo = |p: Pod| PodBuilder::new(p.name()).with(|q| *q = p).label("app", "foo").build();
    let s = dry_run(
        vec![node("node1", "4")],
        vec![foo(running("p1.1", "node1", LOW, "2")), foo(started(running("p1.2", "node1", LOW, "2"), 2.0))],
        vec![app_pdb(1, &[])],
        PodBuilder::new("p").priority(HIGH).cpu("4").build(),
        all(),
        Offset::Zero,
    );
    assert_eq!(summarize(&s), v(&[("node1", &["p1.1", "p1.2"], 1)]));
}

/// Upstream `TestDryRunPreemption`, "preemption with violation of the pdb with pod
/// whose eviction was processed, the victim belongs to DisruptedPods": a pod already
/// in `disruptedPods` doesn't use the budget.
#[test]
fn dry_run_disrupted_pods_do_not_use_the_budget() {
    let foo = |p: Pod| PodBuilder::new(p.name()).with(|q| *q = p).label("app", "foo").build();
    let s = dry_run(
        vec![node("node1", "4")],
        vec![foo(running("p1.1", "node1", LOW, "2")), foo(running("p1.2", "node1", LOW, "2"))],
        vec![app_pdb(1, &["p1.2"])],
        PodBuilder::new("p").priority(HIGH).cpu("4").build(),
        all(),
        Offset::Zero,
    );
    assert_eq!(summarize(&s), v(&[("node1", &["p1.1", "p1.2"], 0)]));
}

/// PDB-violating pods are reprieved first: with room for one of two equal pods, the
/// PDB-protected one stays even though it is the less important.
#[test]
fn dry_run_reprieves_pdb_protected_pods_first() {
    let protected = PodBuilder::new("protected").node_name("node1").priority(LOW).cpu("2").label("app", "foo").build();
    let s = dry_run(
        vec![node("node1", "4")],
        vec![started(running("other", "node1", LOW, "2"), 0.5), started(protected, 2.0)],
        vec![app_pdb(0, &[])],
        PodBuilder::new("p").priority(HIGH).cpu("2").build(),
        all(),
        Offset::Zero,
    );
    assert_eq!(summarize(&s), v(&[("node1", &["other"], 0)]));
}

/// Upstream `TestDryRunPreemption`, "all nodes are possible candidates, but
/// DefaultPreemptionArgs limits to 2".
#[test]
fn dry_run_stops_at_num_candidates() {
    let nodes = (1..=5).map(|i| node(&format!("node{i}"), "4")).collect();
    let pods = (1..=5).map(|i| running(&format!("p{i}"), &format!("node{i}"), MID, "4")).collect();
    let args = DefaultPreemptionArgs { min_candidate_nodes_percentage: 40, min_candidate_nodes_absolute: 1 };
    let s = dry_run(nodes, pods, vec![], PodBuilder::new("p").priority(HIGH).cpu("4").build(), args, Offset::Zero);
    assert_eq!(summarize(&s), v(&[("node1", &["p1"], 0), ("node2", &["p2"], 0)]));
}

/// Upstream `TestDryRunPreemption`, "preemption offset across multiple scheduling
/// cycles and wrap around": the search starts at the offset and wraps.
#[test]
fn dry_run_offset_wraps_around() {
    let nodes = (1..=5).map(|i| node(&format!("node{i}"), "4")).collect();
    let pods = (1..=5).map(|i| running(&format!("p{i}"), &format!("node{i}"), MID, "4")).collect();
    let args = DefaultPreemptionArgs { min_candidate_nodes_percentage: 40, min_candidate_nodes_absolute: 1 };
    let s = dry_run(nodes, pods, vec![], PodBuilder::new("p").priority(HIGH).cpu("4").build(), args, Offset::Fixed(4));
    assert_eq!(summarize(&s), v(&[("node5", &["p5"], 0), ("node1", &["p1"], 0)]));
}

/// Upstream `TestDryRunPreemption`, "preemption looks past numCandidates until a
/// non-PDB violating node is found".
#[test]
fn dry_run_looks_past_num_candidates_for_a_non_violating_node() {
    let nodes = (1..=5).map(|i| node(&format!("node{i}"), "4")).collect();
    let pods = (1..=5)
        .map(|i| {
            let p = running(&format!("p{i}"), &format!("node{i}"), MID, "4");
            if i <= 2 { PodBuilder::new(p.name()).with(|q| *q = p).label("app", "foo").build() } else { p }
        })
        .collect();
    let args = DefaultPreemptionArgs { min_candidate_nodes_percentage: 20, min_candidate_nodes_absolute: 1 };
    let s = dry_run(
        nodes,
        pods,
        vec![app_pdb(0, &[])],
        PodBuilder::new("p").priority(HIGH).cpu("4").build(),
        args,
        Offset::Zero,
    );
    assert_eq!(summarize(&s), v(&[("node3", &["p3"], 0), ("node1", &["p1"], 1), ("node2", &["p2"], 1)]));
}

/// Upstream `TestPostFilter`, "preemption should respect filteredNodesStatuses": a node
/// rejected as UnschedulableAndUnresolvable (here by nodeSelector) is never dry-run.
#[test]
fn unresolvable_nodes_are_not_candidates() {
    let s = dry_run(
        vec![
            NodeBuilder::new("node1").cpu("4").label("pool", "a").build(),
            NodeBuilder::new("node2").cpu("4").label("pool", "b").build(),
        ],
        vec![running("p1", "node1", LOW, "4"), running("p2", "node2", LOW, "4")],
        vec![],
        PodBuilder::new("p").priority(HIGH).cpu("4").node_selector("pool", "b").build(),
        all(),
        Offset::Zero,
    );
    assert_eq!(s.potential_nodes, 1);
    assert_eq!(summarize(&s), v(&[("node2", &["p2"], 0)]));
}

fn cand(node: &str, victims: &[(i32, f64)], pdb_violations: usize) -> Candidate {
    let pods = victims
        .iter()
        .enumerate()
        .map(|(i, &(prio, start))| {
            Arc::new(
                PodInfo::new(
                    PodBuilder::new(&format!("{node}-v{i}"))
                        .priority(prio)
                        .with(|p| p.status.start_time = Some(start))
                        .build(),
                )
                .unwrap(),
            )
        })
        .collect();
    Candidate {
        node: Symbol::intern(node),
        node_index: 0,
        victims: Victims { pods, num_pdb_violations: pdb_violations },
    }
}

/// Upstream `TestSelectBestCandidate` / `pickOneNodeForPreemption`: each criterion in
/// order, every case built so that only that criterion separates the winner.
#[test]
fn pick_one_node_criteria_in_order() {
    let cases: Vec<(&str, Vec<Candidate>, &str)> = vec![
        (
            "fewest PDB violations wins over everything else",
            vec![cand("node1", &[(LOW, 1.0)], 1), cand("node2", &[(HIGH, 1.0), (HIGH, 1.0)], 0)],
            "node2",
        ),
        (
            "node with min highest priority pod is picked",
            vec![cand("node1", &[(HIGH, 1.0)], 0), cand("node2", &[(MID, 1.0), (LOW, 1.0), (LOW, 1.0)], 0)],
            "node2",
        ),
        (
            "when highest priorities are the same, minimum sum of lower priority pods is used",
            vec![cand("node1", &[(MID, 1.0), (MID, 1.0)], 0), cand("node2", &[(MID, 1.0), (LOW, 1.0)], 0)],
            "node2",
        ),
        (
            "sum of adjusted priorities is considered (negative priorities)",
            vec![cand("node1", &[(-10, 1.0), (-10, 1.0)], 0), cand("node2", &[(-10, 1.0)], 0)],
            "node2",
        ),
        (
            "when highest priority and sum are the same, minimum number of pods is used",
            // A victim at i32::MIN adds 0 to the adjusted sum, so the sums tie.
            vec![cand("node1", &[(MID, 1.0), (i32::MIN, 1.0)], 0), cand("node2", &[(MID, 1.0)], 0)],
            "node2",
        ),
        (
            "same priority, same number of victims, different start time for each node's pod",
            vec![cand("node1", &[(MID, 5.0)], 0), cand("node2", &[(MID, 7.0)], 0), cand("node3", &[(MID, 6.0)], 0)],
            "node2",
        ),
        (
            "different priority, same number of victims, earliest start among the highest priority decides",
            vec![cand("node1", &[(MID, 3.0), (LOW, 9.0)], 0), cand("node2", &[(MID, 4.0), (LOW, 1.0)], 0)],
            "node2",
        ),
        ("all equal: the first", vec![cand("node1", &[(MID, 1.0)], 0), cand("node2", &[(MID, 1.0)], 0)], "node1"),
    ];
    for (name, cands, want) in cases {
        let i = pick_one_node_for_preemption(&cands).unwrap();
        assert_eq!(cands[i].node.as_str(), want, "{name}");
    }
    assert_eq!(pick_one_node_for_preemption(&[]), None);
}

struct Sched {
    sched: Scheduler,
    evictor: Arc<RecordingEvictor>,
}

fn scheduler(nodes: Vec<Node>, pods: Vec<Pod>) -> Sched {
    let handle = Handle::default();
    let evictor = Arc::new(RecordingEvictor::default());
    handle.preemption().set_evictor(evictor.clone());
    let prof = profile(&handle, DefaultPreemptionArgs::default(), Offset::Zero);
    let sched =
        Scheduler::builder().profile((*prof).clone()).handle(handle).parallelism(1).tie_break(TieBreak::First).build();
    for n in nodes {
        sched.add_node(n).unwrap();
    }
    for p in pods {
        sched.cache().lock().add_pod(Arc::new(PodInfo::new(p).unwrap())).unwrap();
    }
    Sched { sched, evictor }
}

fn nominated(e: &ScheduleError) -> Option<&str> {
    e.fit_error().and_then(|f| f.nominated_node.as_deref())
}

/// Upstream `TestPostFilter`, "pod with higher priority can be made schedulable", then
/// `TestPreempt`'s follow-through: victims go to the evictor, the pod is nominated,
/// and once the victims are gone it is scheduled on the nominated node.
#[test]
fn end_to_end_preempt_evict_then_schedule() {
    let mut s = scheduler(
        vec![node("node1", "4"), node("node2", "4")],
        vec![running("low", "node1", LOW, "4"), running("mid", "node2", MID, "4")],
    );
    let err = s.sched.schedule_pod(PodBuilder::new("p").priority(HIGH).cpu("4").build()).unwrap_err();
    assert_eq!(nominated(&err), Some("node1"), "{err}");
    assert_eq!(s.evictor.take(), [("node1".to_owned(), "default/low".to_owned())]);
    assert_eq!(
        s.sched.handle().preemption().nominator().nominated_node("default/p").map(Symbol::as_str),
        Some("node1")
    );
    // The caller evicts: the victim leaves the cache.
    s.sched.cache().lock().remove_pod("default/low").unwrap();
    let b = s.sched.schedule_pod(PodBuilder::new("p").priority(HIGH).cpu("4").build()).unwrap();
    assert_eq!(b.node(), "node1");
    assert!(s.sched.handle().preemption().nominator().is_empty(), "assumed pods lose their nomination");
}

/// The nominated room is held: a lower-priority pod arriving before the preemptor is
/// retried cannot take it (upstream `addNominatedPods`), a higher-priority one can.
#[test]
fn nominated_room_is_not_taken_by_lower_priority_pods() {
    let mut s = scheduler(vec![node("node1", "4")], vec![running("low", "node1", LOW, "4")]);
    let err = s.sched.schedule_pod(PodBuilder::new("p").priority(MID).cpu("4").build()).unwrap_err();
    assert_eq!(nominated(&err), Some("node1"));
    s.sched.cache().lock().remove_pod("default/low").unwrap();
    let sneaky = s.sched.schedule_pod(PodBuilder::new("sneaky").priority(LOW).cpu("1").build()).unwrap_err();
    assert!(sneaky.fit_error().is_some(), "{sneaky}");
    let urgent = s.sched.schedule_pod(PodBuilder::new("urgent").priority(HIGH).cpu("1").build()).unwrap();
    assert_eq!(urgent.node(), "node1");
}

/// Upstream `TestPodEligibleToPreemptOthers`, "Pod with Never preemption policy".
#[test]
fn preemption_policy_never() {
    let mut s = scheduler(vec![node("node1", "4")], vec![running("low", "node1", LOW, "4")]);
    let pod = PodBuilder::new("p")
        .priority(HIGH)
        .cpu("4")
        .with(|p| p.spec.preemption_policy = Some(PreemptionPolicy::Never))
        .build();
    let err = s.sched.schedule_pod(pod).unwrap_err();
    assert_eq!(nominated(&err), None);
    assert!(err.to_string().contains("not eligible due to preemptionPolicy=Never"), "{err}");
    assert!(s.evictor.take().is_empty());
}

/// Upstream `TestPodEligibleToPreemptOthers`, "Pod with terminating pod in the same
/// node" (not eligible: room is on the way) and "Pod with nominated node whose status
/// is UnschedulableAndUnresolvable" (eligible again).
#[test]
fn terminating_victims_on_the_nominated_node_make_the_pod_wait() {
    let terminating = PodBuilder::new("victim")
        .node_name("node1")
        .priority(LOW)
        .cpu("4")
        .with(|p| p.metadata.deletion_timestamp = Some(5.0))
        .build();
    let nominated_pod = |sel: Option<&str>| {
        let mut b =
            PodBuilder::new("p").priority(HIGH).cpu("4").with(|p| p.status.nominated_node_name = "node1".into());
        if let Some(v) = sel {
            b = b.node_selector("pool", v);
        }
        b.build()
    };
    let mut s =
        scheduler(vec![NodeBuilder::new("node1").cpu("4").label("pool", "a").build()], vec![terminating.clone()]);
    let err = s.sched.schedule_pod(nominated_pod(None)).unwrap_err();
    assert!(err.to_string().contains("not eligible due to a terminating pod on the nominated node"), "{err}");

    // Higher-priority terminating pods don't count.
    let mut higher = terminating;
    higher.spec.priority = Some(HIGH + 1);
    let mut s2 = scheduler(vec![node("node1", "4"), node("node2", "4")], vec![higher, running("x", "node2", LOW, "4")]);
    let err = s2.sched.schedule_pod(nominated_pod(None)).unwrap_err();
    assert_eq!(nominated(&err), Some("node2"), "{err}");

    // The nominated node became unresolvable: eligible, and nothing else helps.
    let err = s.sched.schedule_pod(nominated_pod(Some("b"))).unwrap_err();
    assert!(!err.to_string().contains("not eligible"), "{err}");
}

/// Upstream `TestPostFilter`, "no candidate nodes found": the message lists why.
#[test]
fn no_candidates_message() {
    let mut s = scheduler(vec![node("node1", "4")], vec![running("hi", "node1", HIGH, "4")]);
    let err = s.sched.schedule_pod(PodBuilder::new("p").priority(MID).cpu("4").build()).unwrap_err();
    assert_eq!(nominated(&err), None);
    // Upstream's text (types.go `FitError.Error()`, with DefaultPreemption's
    // "preemption: " prefix and one period, as default_preemption_test.go expects).
    assert_eq!(
        err.to_string(),
        "0/1 nodes are available: 1 Insufficient cpu. \
         preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    );
}

/// Upstream `TestPostFilter` (default_preemption_test.go), "no candidate nodes found
/// with no available nodes" and its two-node variant: nodes preemption can't help
/// (here: a node selector) read "Preemption is not helpful for scheduling".
#[test]
fn preemption_not_helpful_message() {
    for n in [1usize, 2] {
        let nodes = (1..=n).map(|i| node(&format!("node{i}"), "4")).collect();
        let mut s = scheduler(nodes, vec![]);
        let pod = PodBuilder::new("p").priority(HIGH).cpu("1").node_selector("pool", "b").build();
        let err = s.sched.schedule_pod(pod).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "0/{n} nodes are available: {n} node(s) didn't match Pod's node affinity/selector. \
                 preemption: 0/{n} nodes are available: {n} Preemption is not helpful for scheduling."
            )
        );
    }
}

struct FailingEvictor;
impl Evictor for FailingEvictor {
    fn evict(&self, _: &PodInfo, _: &str, victim: &PodInfo) -> Result<(), String> {
        Err(format!("API server refused to delete {}", victim.pod.name()))
    }
}

/// A failing Evictor: an error for the caller to requeue on, the pod stays
/// nominated, and nothing in the cache changed.
#[test]
fn failed_eviction_keeps_the_nomination_and_the_cache() {
    let mut s = scheduler(vec![node("node1", "4")], vec![running("low", "node1", LOW, "4")]);
    s.sched.handle().preemption().set_evictor(Arc::new(FailingEvictor));
    let err = s.sched.schedule_pod(PodBuilder::new("p").priority(HIGH).cpu("4").build()).unwrap_err();
    assert!(matches!(err, ScheduleError::Plugin { .. }), "{err}");
    assert!(err.to_string().contains("API server refused to delete low"), "{err}");
    assert_eq!(
        s.sched.handle().preemption().nominator().nominated_node("default/p").map(Symbol::as_str),
        Some("node1")
    );
    assert_eq!(s.sched.cache().lock().pod_count(), 1);
}

/// Without an evictor the plugin says so and nominates nothing (a default profile
/// with DefaultPreemption but no evictor behaves like one without preemption).
#[test]
fn no_evictor_means_no_nomination() {
    let handle = Handle::default();
    let prof = profile(&handle, DefaultPreemptionArgs::default(), Offset::Zero);
    let plugin = DefaultPreemption::new(DefaultPreemptionArgs::default(), handle.clone()).unwrap();
    let snap = snapshot(vec![node("node1", "4")], vec![running("low", "node1", LOW, "4")]);
    let pod = PodInfo::new(PodBuilder::new("p").priority(HIGH).cpu("4").build()).unwrap();
    let (state, _) = pre_filter_state(&prof, &pod, &snap);
    let statuses = filter_statuses(&prof, &state, &pod, &snap);
    let cx = PreemptionContext {
        profile: &prof,
        state: &state,
        pod: &pod,
        snapshot: &snap,
        statuses: &statuses,
        handle: &handle,
        nominated: None,
    };
    let (r, st) = preempt(&plugin, &cx);
    assert_eq!(st.code(), Code::Unschedulable);
    assert!(st.message().contains("no Evictor is configured"), "{}", st.message());
    assert!(r.is_none());
    // Through the scheduler: a fit error that says why, nothing nominated.
    let mut s = Scheduler::builder().profile((*prof).clone()).handle(handle.clone()).parallelism(1).build();
    s.add_node(node("node1", "4")).unwrap();
    s.cache().lock().add_pod(Arc::new(PodInfo::new(running("low", "node1", LOW, "4")).unwrap())).unwrap();
    let err = s.schedule_pod(PodBuilder::new("p").priority(HIGH).cpu("4").build()).unwrap_err();
    assert_eq!(nominated(&err), None);
    assert!(err.to_string().contains("no Evictor is configured"), "{err}");
    assert!(handle.preemption().nominator().is_empty());
}

/// Bad PDBs are typed errors when handed to the handle.
#[test]
fn bad_pdbs_are_rejected() {
    let mut p = app_pdb(1, &[]);
    p.spec.max_unavailable = Some(IntOrPercent::Int(1));
    let err = Handle::default().preemption().set_pod_disruption_budgets(vec![p]).unwrap_err();
    assert!(err.to_string().contains("cannot both be set"), "{err}");
}

/// The plugin is in the default registry under its upstream name.
#[test]
fn registered() {
    assert!(schedkit::plugins::default_registry().contains("DefaultPreemption"));
}

fn spread_profile(handle: &Handle) -> Arc<Profile> {
    Arc::new(
        Profile::builder("default-scheduler")
            .plugin(Fit::from_config(None).unwrap())
            .plugin(schedkit::plugins::pod_topology_spread::PodTopologySpread::from_config(None, handle).unwrap())
            .plugin(schedkit::plugins::inter_pod_affinity::InterPodAffinity::from_config(None, handle).unwrap())
            .plugin(DefaultPreemption::new(all(), handle.clone()).unwrap().with_offset(Offset::Zero))
            .build()
            .unwrap(),
    )
}

fn search_with(prof: &Arc<Profile>, handle: &Handle, snap: &Snapshot, preemptor: Pod) -> CandidateSearch {
    let plugin = DefaultPreemption::new(all(), handle.clone()).unwrap().with_offset(Offset::Zero);
    let pod = PodInfo::new(preemptor).unwrap();
    let (state, _) = pre_filter_state(prof, &pod, snap);
    let statuses = filter_statuses(prof, &state, &pod, snap);
    let cx = PreemptionContext {
        profile: prof,
        state: &state,
        pod: &pod,
        snapshot: snap,
        statuses: &statuses,
        handle,
        nominated: None,
    };
    find_candidates(&plugin, &cx)
}

fn foo(name: &str, node: &str, prio: i32, cpu: &str, start: f64) -> Pod {
    started(PodBuilder::new(name).node_name(node).priority(prio).cpu(cpu).label("app", "foo").build(), start)
}

/// Upstream `TestDryRunPreemption`, "preemption to resolve pod topology spread filter
/// failure" (after): the dry run's RemovePod/AddPod extensions keep PodTopologySpread's
/// zone counts right, so removing pods from the crowded zone makes the skew fit, and
/// the reprieve keeps as many as the skew allows.
#[test]
fn dry_run_resolves_topology_spread_through_extensions() {
    let handle = Handle::default();
    let prof = spread_profile(&handle);
    let snap = snapshot(
        vec![
            NodeBuilder::new("node-a").cpu("8").zone("zone1").build(),
            NodeBuilder::new("node-x").cpu("1").zone("zone2").build(),
        ],
        vec![
            foo("a1", "node-a", LOW, "1", 1.0),
            foo("a2", "node-a", LOW, "1", 2.0),
            foo("x1", "node-x", HIGH + 1, "1", 1.0),
        ],
    );
    let preemptor = PodBuilder::new("p").priority(HIGH).cpu("1").label("app", "foo").with(|p| {
        p.spec.topology_spread_constraints = vec![
            serde_json::from_str(
                r#"{"maxSkew":1,"topologyKey":"topology.kubernetes.io/zone","whenUnsatisfiable":"DoNotSchedule",
                "labelSelector":{"matchLabels":{"app":"foo"}}}"#,
            )
            .unwrap(),
        ];
    });
    let s = search_with(&prof, &handle, &snap, preemptor.build());
    assert_eq!(summarize(&s), v(&[("node-a", &["a2"], 0)]), "{:?}", s.failed);
}

/// Upstream `TestDryRunPreemption`, "pod with anti-affinity is preempted" (after): a
/// lower-priority pod whose required anti-affinity rejects the preemptor is the
/// victim; InterPodAffinity's RemovePod extension forgets its term in the dry run.
#[test]
fn dry_run_evicts_the_pod_whose_anti_affinity_blocks() {
    let handle = Handle::default();
    let prof = spread_profile(&handle);
    let blocker = PodBuilder::new("blocker").node_name("node1").priority(LOW).cpu("1").with(|p| {
        p.spec.affinity = Some(
            serde_json::from_str(
                r#"{"podAntiAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[
                    {"labelSelector":{"matchLabels":{"app":"foo"}},"topologyKey":"kubernetes.io/hostname"}]}}"#,
            )
            .unwrap(),
        );
    });
    let snap = snapshot(
        vec![NodeBuilder::new("node1").cpu("8").label("kubernetes.io/hostname", "node1").build()],
        vec![blocker.build(), foo("bystander", "node1", LOW, "1", 1.0)],
    );
    let s =
        search_with(&prof, &handle, &snap, PodBuilder::new("p").priority(HIGH).cpu("1").label("app", "foo").build());
    assert_eq!(summarize(&s), v(&[("node1", &["blocker"], 0)]), "{:?}", s.failed);
}

/// Upstream `evaluateNominatedNode` (schedule_one.go): a nominated pod goes to its
/// nominated node when it fits there, even if another node now scores higher.
#[test]
fn nominated_node_is_tried_first() {
    let handle = Handle::default();
    let evictor = Arc::new(RecordingEvictor::default());
    handle.preemption().set_evictor(evictor.clone());
    let prof = Profile::builder("default-scheduler")
        .plugin(Fit::from_config(None).unwrap())
        .plugin(schedkit::framework::ScoreFn::new(
            "PreferNode2",
            |_, _, n| if n.node().name() == "node2" { 100 } else { 0 },
        ))
        .plugin(
            DefaultPreemption::new(DefaultPreemptionArgs::default(), handle.clone()).unwrap().with_offset(Offset::Zero),
        )
        .build()
        .unwrap();
    let mut s = Scheduler::builder().profile(prof).handle(handle).parallelism(1).tie_break(TieBreak::First).build();
    s.add_node(node("node1", "4")).unwrap();
    s.add_node(node("node2", "4")).unwrap();
    for p in [running("low", "node1", LOW, "4"), running("mid", "node2", MID, "4")] {
        s.cache().lock().add_pod(Arc::new(PodInfo::new(p).unwrap())).unwrap();
    }
    let err = s.schedule_pod(PodBuilder::new("p").priority(HIGH).cpu("4").build()).unwrap_err();
    assert_eq!(nominated(&err), Some("node1"));
    for (_, uid) in evictor.take() {
        s.cache().lock().remove_pod(&uid).unwrap();
    }
    // node2 frees up too and scores higher, but the pod keeps its nominated room.
    s.cache().lock().remove_pod("default/mid").unwrap();
    assert_eq!(s.schedule_pod(PodBuilder::new("p").priority(HIGH).cpu("4").build()).unwrap().node(), "node1");
    // A pod without a nomination follows the scores.
    assert_eq!(s.schedule_pod(PodBuilder::new("q").priority(HIGH).cpu("1").build()).unwrap().node(), "node2");
}
