//! Workload-aware preemption (gate `WorkloadAwarePreemption`) through the scheduler
//! loop: victims chosen for the whole gang on a copy of the snapshot, every member
//! nominated, the group waiting on preemption; groups with topology constraints and
//! profiles without DefaultPreemption refused with upstream's messages; a failed
//! attempt leaves the cache, the snapshot and the cluster untouched.
//!
//! Upstream: `pkg/scheduler/schedule_one_podgroup.go` (`podGroupCycle`,
//! `runWorkloadAwarePreemption`); the victim search follows upstream's
//! `pkg/scheduler/framework/preemption/podgrouppreemption.go` and `candidate.go`
//! (preemption units by `disruptionMode`, PDB-violating units reprieved first; see
//! `scheduler::group_preemption`). Upstream has no unit-test table for these at v1.36
//! that this file could port; the tables below are schedkit's own.

use std::sync::Arc;

use schedkit::framework::{Feature, FeatureGates, Handle, PluginRef, Profile, RecordingEvictor, VirtualClock};
use schedkit::model::Pod;
use schedkit::model::workload::PodGroup;
use schedkit::plugins::{default_profile_config, default_registry};
use schedkit::scheduler::{PodState, Scheduler};
use schedkit::testing::{NodeBuilder, PodBuilder};

fn gates() -> FeatureGates {
    FeatureGates::default()
        .with(Feature::GenericWorkload, true)
        .with(Feature::GangScheduling, true)
        .with(Feature::WorkloadAwarePreemption, true)
}

fn handle() -> (Handle, Arc<RecordingEvictor>) {
    let handle = Handle::new(Arc::new(VirtualClock::new()));
    handle.set_feature_gates(gates());
    let evictor = Arc::new(RecordingEvictor::default());
    handle.preemption().set_evictor(evictor.clone());
    (handle, evictor)
}

/// Two 4-CPU nodes; on each a 3-CPU pod of priority 0; on n1 also a 1-CPU pod of
/// priority 50.
fn scheduler(profile: impl FnOnce(&Handle) -> Profile) -> (Scheduler, Arc<RecordingEvictor>) {
    let (handle, evictor) = handle();
    let p = profile(&handle);
    let s = Scheduler::builder().handle(handle).profile(p).build();
    for n in ["n0", "n1"] {
        s.add_node(NodeBuilder::new(n).cpu("4").memory("64Gi").pods(110).build()).unwrap();
    }
    s.add_pod(PodBuilder::new("low-0").uid("low-0").cpu("3").priority(0).node_name("n0").build()).unwrap();
    s.add_pod(PodBuilder::new("low-1").uid("low-1").cpu("3").priority(0).node_name("n1").build()).unwrap();
    s.add_pod(PodBuilder::new("mid").uid("mid").cpu("1").priority(50).node_name("n1").build()).unwrap();
    (s, evictor)
}

fn member(name: &str, cpu: &str) -> Pod {
    PodBuilder::new(name).uid(name).cpu(cpu).priority(100).pod_group_name("job").build()
}

/// (node, requested milli-CPU, pods) per node.
type NodeUse = Vec<(String, i64, usize)>;

/// [`NodeUse`] from the cache, and from the handle's snapshot when a cycle has made one.
fn cluster_state(s: &Scheduler) -> (NodeUse, Option<NodeUse>) {
    let cache = s.cache().lock();
    let from_cache = ["n0", "n1"]
        .iter()
        .filter_map(|n| cache.node_info(n))
        .map(|n| (n.node().name().to_owned(), n.requested().milli_cpu, n.pods().len()))
        .collect();
    let snap = s.handle().snapshot();
    let mut from_snap: NodeUse =
        snap.nodes().iter().map(|n| (n.node().name().to_owned(), n.requested().milli_cpu, n.pods().len())).collect();
    from_snap.sort();
    (from_cache, (!from_snap.is_empty()).then_some(from_snap))
}

/// The cache as before, and the snapshot the same as the cache.
fn unchanged(s: &Scheduler, before: &(NodeUse, Option<NodeUse>)) {
    let (cache, snap) = cluster_state(s);
    assert_eq!(cache, before.0, "cache");
    assert_eq!(snap.as_ref(), Some(&before.0), "snapshot");
}

fn condition_message(s: &Scheduler) -> String {
    let pg = s.handle().pod_groups().pod_group("default", "job").unwrap();
    let c = pg.scheduled_condition().unwrap();
    assert_eq!((c.status.as_str(), c.reason.as_str()), ("False", "Unschedulable"), "{c:?}");
    c.message.clone()
}

#[test]
fn victims_are_chosen_for_the_whole_gang() {
    let (mut s, evictor) = scheduler(Profile::kube_default);
    s.events().add_pod_group(PodGroup::gang("default", "job", 2));
    s.add_pod(member("w0", "3")).unwrap();
    s.add_pod(member("w1", "3")).unwrap();
    let before = cluster_state(&s);
    let run = s.run_until_idle();
    assert_eq!(run.bound, 0, "{run:?}");
    // The lowest priority level suffices (the priority-50 pod stays), and neither
    // priority-0 pod can be reprieved: the gang needs both nodes.
    let mut evicted: Vec<String> = evictor.take().into_iter().map(|(_, victim)| victim).collect();
    evicted.sort();
    assert_eq!(evicted, ["low-0", "low-1"]);
    let nominator = s.handle().preemption().nominator();
    let mut nodes: Vec<String> =
        ["w0", "w1"].iter().map(|w| nominator.nominated_node(w).expect("nominated").as_str().to_owned()).collect();
    nodes.sort();
    assert_eq!(nodes, ["n0", "n1"], "one member per node");
    assert_eq!(condition_message(&s), "pod group is waiting for preemption to complete");
    // Eviction is the caller's: the cache (and the snapshot) are unchanged.
    unchanged(&s, &before);
    assert!(matches!(s.pod_state("w0"), Some(PodState::Unschedulable | PodState::Backoff | PodState::Active)));
}

#[test]
fn a_failed_attempt_changes_nothing() {
    let (mut s, evictor) = scheduler(Profile::kube_default);
    s.events().add_pod_group(PodGroup::gang("default", "job", 2));
    // 5 CPUs never fit a 4-CPU node, whatever is preempted.
    s.add_pod(member("w0", "5")).unwrap();
    s.add_pod(member("w1", "5")).unwrap();
    let before = cluster_state(&s);
    let run = s.run_until_idle();
    assert_eq!(run.bound, 0, "{run:?}");
    assert!(evictor.take().is_empty());
    assert!(s.handle().preemption().nominator().nominated_node("w0").is_none());
    unchanged(&s, &before);
    let msg = condition_message(&s);
    assert!(msg.contains(schedkit::scheduler::MSG_NO_VICTIMS), "{msg}");
}

#[test]
fn groups_with_topology_constraints_are_refused() {
    let (mut s, evictor) = scheduler(Profile::kube_default);
    s.events().add_pod_group(PodGroup::gang("default", "job", 2).with_topology("topology.kubernetes.io/rack"));
    s.add_pod(member("w0", "3")).unwrap();
    s.add_pod(member("w1", "3")).unwrap();
    let before = cluster_state(&s);
    assert_eq!(s.run_until_idle().bound, 0);
    assert!(evictor.take().is_empty());
    unchanged(&s, &before);
    let msg = condition_message(&s);
    assert!(
        msg.contains("workload aware preemption is not supported for pod groups with scheduling constraints"),
        "{msg}"
    );
}

#[test]
fn without_default_preemption_it_is_disabled() {
    let (mut s, evictor) = scheduler(|h| {
        let mut cfg = default_profile_config();
        cfg.plugins.post_filter.disabled.push(PluginRef { name: "DefaultPreemption".into(), weight: None });
        let p = default_registry().build_profile(&cfg, h).unwrap();
        assert!(!p.post_filter_plugins().contains(&"DefaultPreemption"), "{:?}", p.post_filter_plugins());
        p
    });
    s.events().add_pod_group(PodGroup::gang("default", "job", 2));
    s.add_pod(member("w0", "3")).unwrap();
    s.add_pod(member("w1", "3")).unwrap();
    assert_eq!(s.run_until_idle().bound, 0);
    assert!(evictor.take().is_empty());
    let msg = condition_message(&s);
    assert!(
        msg.contains("default preemption plugin is not registered, workload aware preemption is disabled"),
        "{msg}"
    );
}

#[test]
fn with_the_gate_off_members_preempt_one_by_one() {
    // The legacy path: each member's own PostFilter nominates and evicts; the group then
    // waits on preemption as well.
    let (handle, evictor) = handle();
    handle.set_feature_gates(gates().with(Feature::WorkloadAwarePreemption, false));
    let p = Profile::kube_default(&handle);
    let mut s = Scheduler::builder().handle(handle).profile(p).build();
    for n in ["n0", "n1"] {
        s.add_node(NodeBuilder::new(n).cpu("4").memory("64Gi").pods(110).build()).unwrap();
    }
    s.add_pod(PodBuilder::new("low-0").uid("low-0").cpu("3").priority(0).node_name("n0").build()).unwrap();
    s.add_pod(PodBuilder::new("low-1").uid("low-1").cpu("3").priority(0).node_name("n1").build()).unwrap();
    s.events().add_pod_group(PodGroup::gang("default", "job", 2));
    s.add_pod(member("w0", "3")).unwrap();
    s.add_pod(member("w1", "3")).unwrap();
    assert_eq!(s.run_until_idle().bound, 0);
    assert!(!evictor.take().is_empty());
    assert_eq!(condition_message(&s), "pod group is waiting for preemption to complete");
}

// ---------------------------------------------------------------------------------
// Preemption units (disruptionMode), PodDisruptionBudgets, importance order.
// ---------------------------------------------------------------------------------

use schedkit::model::workload::DisruptionMode;
use schedkit::model::{IntOrPercent, LabelSelector, Labels, PodDisruptionBudget};

/// A scheduler with `nodes` empty 4-CPU nodes, the evictor recording.
fn empty_cluster(nodes: &[&str]) -> (Scheduler, Arc<RecordingEvictor>) {
    let (handle, evictor) = handle();
    let p = Profile::kube_default(&handle);
    let s = Scheduler::builder().handle(handle).profile(p).build();
    for n in nodes {
        s.add_node(NodeBuilder::new(n).cpu("4").memory("64Gi").pods(110).build()).unwrap();
    }
    (s, evictor)
}

/// A running victim group of the given mode and priority.
fn victim_group(s: &Scheduler, name: &str, mode: DisruptionMode, priority: i32) {
    let mut pg = PodGroup::gang("default", name, 1);
    pg.spec.disruption_mode = Some(mode);
    pg.spec.priority = Some(priority);
    s.events().add_pod_group(pg);
}

/// A running pod: `(name, node, cpu, priority, group)`.
fn running(s: &Scheduler, name: &str, node: &str, cpu: &str, priority: i32, group: Option<&str>) {
    let mut b = PodBuilder::new(name).uid(name).cpu(cpu).priority(priority).node_name(node);
    if let Some(g) = group {
        b = b.pod_group_name(g);
    }
    s.add_pod(b.build()).unwrap();
}

/// A one-member gang at priority 100 asking `cpu`, then the run; the evicted uids, sorted.
fn preempt_for_one(mut s: Scheduler, evictor: &RecordingEvictor, cpu: &str) -> Vec<String> {
    let mut pg = PodGroup::gang("default", "job", 1);
    pg.spec.priority = Some(100);
    s.events().add_pod_group(pg);
    s.add_pod(member("w0", cpu)).unwrap();
    assert_eq!(s.run_until_idle().bound, 0);
    let mut evicted: Vec<String> = evictor.take().into_iter().map(|(_, v)| v).collect();
    evicted.sort();
    evicted.dedup();
    evicted
}

#[test]
fn disruption_mode_decides_whole_or_pod_by_pod() {
    // Two 3-CPU pods of one group on two nodes; the preemptor needs one node.
    // (mode, expected victims)
    let cases: &[(DisruptionMode, &[&str])] = &[
        // The group is one unit: it cannot be reprieved, so both pods go.
        (DisruptionMode::PodGroup, &["b0", "b1"]),
        // Pod by pod: b0 (first in order) is reprieved, b1 alone is evicted.
        (DisruptionMode::Pod, &["b1"]),
    ];
    for (mode, want) in cases {
        let (s, evictor) = empty_cluster(&["n0", "n1"]);
        victim_group(&s, "batch", *mode, 10);
        running(&s, "b0", "n0", "3", 10, Some("batch"));
        running(&s, "b1", "n1", "3", 10, Some("batch"));
        assert_eq!(preempt_for_one(s, &evictor, "3"), *want, "{mode:?}");
    }
}

#[test]
fn pdb_violating_victims_are_reprieved_first() {
    // n0 holds a plain pod, n1 one a PodDisruptionBudget protects (0 disruptions
    // allowed). Both are equally important and one must go. Without the budget the
    // first in order (on n0) is reprieved; with it the protected pod is reprieved first.
    // (budget, expected victims)
    let cases: &[(bool, &[&str])] = &[(false, &["on-n1"]), (true, &["on-n0"])];
    for (budget, want) in cases {
        let (s, evictor) = empty_cluster(&["n0", "n1"]);
        running(&s, "on-n0", "n0", "3", 0, None);
        s.add_pod(
            PodBuilder::new("on-n1").uid("on-n1").cpu("3").priority(0).node_name("n1").label("app", "db").build(),
        )
        .unwrap();
        if *budget {
            let mut pdb = PodDisruptionBudget::max_unavailable(
                "db",
                "default",
                LabelSelector::from_labels(Labels::from_pairs([("app", "db")])),
                IntOrPercent::Int(0),
            );
            pdb.status.disruptions_allowed = Some(0);
            s.handle().preemption().set_pod_disruption_budgets(vec![pdb]).unwrap();
        }
        assert_eq!(preempt_for_one(s, &evictor, "3"), *want, "budget {budget}");
    }
}

#[test]
fn a_pdb_protected_victim_the_group_needs_is_still_evicted() {
    // Best effort: the only pod that can make room is protected.
    let (s, evictor) = empty_cluster(&["n0"]);
    s.add_pod(PodBuilder::new("db").uid("db").cpu("3").priority(0).node_name("n0").label("app", "db").build()).unwrap();
    let mut pdb = PodDisruptionBudget::min_available(
        "db",
        "default",
        LabelSelector::from_labels(Labels::from_pairs([("app", "db")])),
        IntOrPercent::Int(1),
    );
    pdb.status.disruptions_allowed = Some(0);
    s.handle().preemption().set_pod_disruption_budgets(vec![pdb]).unwrap();
    assert_eq!(preempt_for_one(s, &evictor, "3"), ["db"]);
}

#[test]
fn at_equal_priority_groups_are_kept_before_pods() {
    // (what runs on n0, what runs on n1, expected victims): one of the two 3-CPU
    // priority-10 units must go; the group is more important than the pod whichever
    // node it is on, and a larger group more important than a smaller one.
    struct Case {
        name: &'static str,
        setup: fn(&Scheduler),
        want: &'static [&'static str],
    }
    let cases = [
        Case {
            name: "group on n1, pod on n0",
            setup: |s| {
                victim_group(s, "g", DisruptionMode::PodGroup, 10);
                running(s, "pod", "n0", "3", 10, None);
                running(s, "g0", "n1", "3", 10, Some("g"));
            },
            want: &["pod"],
        },
        Case {
            name: "group on n0, pod on n1",
            setup: |s| {
                victim_group(s, "g", DisruptionMode::PodGroup, 10);
                running(s, "g0", "n0", "3", 10, Some("g"));
                running(s, "pod", "n1", "3", 10, None);
            },
            want: &["pod"],
        },
        Case {
            name: "the larger group is kept",
            setup: |s| {
                victim_group(s, "small", DisruptionMode::PodGroup, 10);
                victim_group(s, "large", DisruptionMode::PodGroup, 10);
                running(s, "s0", "n0", "3", 10, Some("small"));
                running(s, "l0", "n1", "2", 10, Some("large"));
                running(s, "l1", "n1", "1", 10, Some("large"));
            },
            want: &["s0"],
        },
        Case {
            name: "lower priority goes first, group or not",
            setup: |s| {
                victim_group(s, "g", DisruptionMode::PodGroup, 5);
                running(s, "g0", "n0", "3", 5, Some("g"));
                running(s, "pod", "n1", "3", 10, None);
            },
            want: &["g0"],
        },
    ];
    for c in cases {
        let (s, evictor) = empty_cluster(&["n0", "n1"]);
        (c.setup)(&s);
        assert_eq!(preempt_for_one(s, &evictor, "3"), c.want, "{}", c.name);
    }
}

#[test]
fn no_lower_priority_unit_is_upstreams_unresolvable_message() {
    // The group's priority (spec.priority 100) is not above the group-mode unit's (100),
    // though the unit's pods have priority 0.
    let (mut s, evictor) = empty_cluster(&["n0"]);
    victim_group(&s, "peer", DisruptionMode::PodGroup, 100);
    running(&s, "p0", "n0", "3", 0, Some("peer"));
    let mut pg = PodGroup::gang("default", "job", 1);
    pg.spec.priority = Some(100);
    s.events().add_pod_group(pg);
    s.add_pod(member("w0", "3")).unwrap();
    assert_eq!(s.run_until_idle().bound, 0);
    assert!(evictor.take().is_empty());
    let msg = condition_message(&s);
    assert!(msg.contains(schedkit::scheduler::MSG_NO_CANDIDATES), "{msg}");
}

#[test]
fn preemption_policy_never_makes_the_group_ineligible() {
    let (mut s, evictor) = scheduler(Profile::kube_default);
    s.events().add_pod_group(PodGroup::gang("default", "job", 2));
    let never = |name: &str| {
        let mut p = member(name, "3");
        p.spec.preemption_policy = Some(schedkit::model::PreemptionPolicy::Never);
        p
    };
    s.add_pod(never("w0")).unwrap();
    s.add_pod(member("w1", "3")).unwrap();
    assert_eq!(s.run_until_idle().bound, 0);
    assert!(evictor.take().is_empty());
    let msg = condition_message(&s);
    assert!(msg.contains("not eligible due to preemptionPolicy=Never."), "{msg}");
}

mod partial_eviction {
    //! Property: after workload-aware preemption no `PodGroup`-mode group is left
    //! partially evicted, and only pods of lower-priority units are evicted.

    use super::*;
    use proptest::prelude::*;

    /// One running victim group: (PodGroup mode?, priority, pods as (node, cpu)).
    type Group = (bool, i32, Vec<(usize, i64)>);

    fn groups() -> impl Strategy<Value = Vec<Group>> {
        prop::collection::vec((any::<bool>(), 0..4i32, prop::collection::vec((0..3usize, 1..3i64), 1..4)), 1..5)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

        #[test]
        fn pod_group_mode_groups_are_evicted_whole_or_not_at_all(
            victims in groups(),
            singles in prop::collection::vec((0..3usize, 1..3i64, 0..4i32), 0..4),
            members in prop::collection::vec(1..4i64, 1..4),
        ) {
            let (mut s, evictor) = empty_cluster(&["n0", "n1", "n2"]);
            let mut free = [4i64; 3];
            let mut whole: Vec<Vec<String>> = Vec::new();
            for (g, (mode, prio, pods)) in victims.iter().enumerate() {
                let name = format!("g{g}");
                let mode = if *mode { DisruptionMode::PodGroup } else { DisruptionMode::Pod };
                victim_group(&s, &name, mode, *prio);
                let mut placed = Vec::new();
                for (i, (node, cpu)) in pods.iter().enumerate() {
                    if free[*node] < *cpu { continue; }
                    free[*node] -= cpu;
                    let pod = format!("{name}-{i}");
                    running(&s, &pod, &format!("n{node}"), &cpu.to_string(), *prio, Some(&name));
                    placed.push(pod);
                }
                if mode == DisruptionMode::PodGroup { whole.push(placed); }
            }
            for (i, (node, cpu, prio)) in singles.iter().enumerate() {
                if free[*node] < *cpu { continue; }
                free[*node] -= cpu;
                running(&s, &format!("s{i}"), &format!("n{node}"), &cpu.to_string(), *prio, None);
            }
            let mut pg = PodGroup::gang("default", "job", members.len() as i32);
            pg.spec.priority = Some(100);
            s.events().add_pod_group(pg);
            for (i, cpu) in members.iter().enumerate() {
                s.add_pod(member(&format!("w{i}"), &cpu.to_string())).unwrap();
            }
            s.run_until_idle();
            let evicted: std::collections::BTreeSet<String> =
                evictor.take().into_iter().map(|(_, v)| v).collect();
            for group in &whole {
                let gone = group.iter().filter(|p| evicted.contains(*p)).count();
                prop_assert!(gone == 0 || gone == group.len(), "group {group:?} partly evicted: {evicted:?}");
            }
            prop_assert!(evicted.iter().all(|v| !v.starts_with('w')), "a member was evicted: {evicted:?}");
        }
    }
}

// ---------------------------------------------------------------------------------
// Ported: upstream `pkg/scheduler/framework/preemption/podgrouppreemption_test.go`,
// `TestPodGroupEvaluator_Preempt_Victims` (the stored version is post-v1.36, with
// `DisruptionModeSingle` / `DisruptionModeAll`; v1.36's `Pod` / `PodGroup` here). Its
// mock Filter gives each node a capacity in pod "sizes"; here a node has that many
// CPUs and a pod asks its size in CPUs. Cases that need post-v1.36 API (PodGroup
// `preemptionPolicy` overriding members) or that are schedulable without preemption
// in a real cycle (the mock-driven "Complex Mixed") are left out; the "Failure" cases
// get full nodes so the group really needs preemption.
// ---------------------------------------------------------------------------------

const LOW: i32 = 1;
const MID: i32 = 100;
const HIGH: i32 = 1000;

/// A running pod of a ported case (size 1: one CPU).
struct Victim {
    name: &'static str,
    node: &'static str,
    priority: i32,
    group: Option<&'static str>,
    start: Option<f64>,
    label: bool,
    terminating: bool,
}

const fn v(name: &'static str, node: &'static str, priority: i32) -> Victim {
    Victim { name, node, priority, group: None, start: None, label: false, terminating: false }
}

impl Victim {
    const fn in_group(mut self, g: &'static str) -> Self {
        self.group = Some(g);
        self
    }
    const fn started(mut self, t: f64) -> Self {
        self.start = Some(t);
        self
    }
    /// Label `app=foo`, which the case's PodDisruptionBudget (if any) selects.
    const fn foo(mut self) -> Self {
        self.label = true;
        self
    }
    const fn terminating(mut self) -> Self {
        self.terminating = true;
        self
    }
}

struct Ported {
    name: &'static str,
    /// (node, capacity)
    nodes: &'static [(&'static str, i64)],
    victims: Vec<Victim>,
    /// (group, mode, priority)
    groups: &'static [(&'static str, DisruptionMode, i32)],
    /// A budget on `app=foo` allowing no disruption.
    pdb: bool,
    preemptor_priority: i32,
    /// Members as (name, nominated node).
    members: &'static [(&'static str, Option<&'static str>)],
    /// Upstream's expected victims, minus those already terminating (upstream's
    /// executor skips their API call; schedkit does not hand them to the evictor).
    evicted: &'static [&'static str],
}

fn run_ported(c: &Ported) {
    let (handle, evictor) = handle();
    let p = Profile::kube_default(&handle);
    let mut s = Scheduler::builder().handle(handle).profile(p).build();
    for (n, cap) in c.nodes {
        s.add_node(NodeBuilder::new(n).cpu(&cap.to_string()).memory("64Gi").pods(110).build()).unwrap();
    }
    for (g, mode, prio) in c.groups {
        victim_group(&s, g, *mode, *prio);
    }
    for x in &c.victims {
        let mut b = PodBuilder::new(x.name).uid(x.name).cpu("1").priority(x.priority).node_name(x.node);
        if let Some(g) = x.group {
            b = b.pod_group_name(g);
        }
        if x.label {
            b = b.label("app", "foo");
        }
        let (start, terminating) = (x.start, x.terminating);
        b = b.with(move |p| {
            p.status.start_time = start;
            if terminating {
                p.metadata.deletion_timestamp = Some(1.0);
            }
        });
        s.add_pod(b.build()).unwrap();
    }
    if c.pdb {
        let mut pdb = PodDisruptionBudget::max_unavailable(
            "foo",
            "default",
            LabelSelector::from_labels(Labels::from_pairs([("app", "foo")])),
            IntOrPercent::Int(0),
        );
        pdb.status.disruptions_allowed = Some(0);
        s.handle().preemption().set_pod_disruption_budgets(vec![pdb]).unwrap();
    }
    let mut pg = PodGroup::gang("default", "preemptor-pg", c.members.len() as i32);
    pg.spec.priority = Some(c.preemptor_priority);
    s.events().add_pod_group(pg);
    for (m, nominated) in c.members {
        let mut pod =
            PodBuilder::new(m).uid(m).cpu("1").priority(c.preemptor_priority).pod_group_name("preemptor-pg").build();
        if let Some(n) = nominated {
            pod.status.nominated_node_name = (*n).to_owned();
        }
        s.add_pod(pod).unwrap();
    }
    assert_eq!(s.run_until_idle().bound, 0, "{}", c.name);
    let mut evicted: Vec<String> = evictor.take().into_iter().map(|(_, v)| v).collect();
    evicted.sort();
    evicted.dedup();
    assert_eq!(evicted, c.evicted, "{}", c.name);
}

#[test]
fn ported_pod_group_evaluator_preempt_victims() {
    use DisruptionMode::{Pod as Single, PodGroup as All};
    let one = &[("p", None)][..];
    let cases = vec![
        Ported {
            name: "Priority: mix of no groups and pod groups",
            nodes: &[("node1", 2)],
            victims: vec![v("p1", "node1", LOW), v("p2", "node1", LOW).in_group("pg1")],
            groups: &[("pg1", Single, LOW)],
            pdb: false,
            preemptor_priority: HIGH,
            members: one,
            evicted: &["p1"],
        },
        Ported {
            name: "Priority: StartTime of pods from same group with disruption mode single",
            nodes: &[("node1", 2)],
            victims: vec![
                v("p1", "node1", LOW).in_group("pg1").started(1.0),
                v("p2", "node1", LOW).in_group("pg1").started(0.0),
            ],
            groups: &[("pg1", Single, LOW)],
            pdb: false,
            preemptor_priority: HIGH,
            members: one,
            evicted: &["p1"],
        },
        Ported {
            name: "Pod group with disruption mode group not reprieved",
            nodes: &[("node1", 1), ("node2", 1)],
            victims: vec![v("p1", "node1", LOW).in_group("pg1"), v("p2", "node2", LOW).in_group("pg1")],
            groups: &[("pg1", All, LOW)],
            pdb: false,
            preemptor_priority: HIGH,
            members: one,
            evicted: &["p1", "p2"],
        },
        Ported {
            name: "PDB: Mixed groups",
            nodes: &[("node1", 2)],
            victims: vec![
                v("victim-pdb", "node1", LOW).in_group("pg1").foo(),
                v("victim-no-pdb", "node1", LOW).in_group("pg1"),
            ],
            groups: &[],
            pdb: true,
            preemptor_priority: HIGH,
            members: one,
            evicted: &["victim-no-pdb"],
        },
        Ported {
            name: "Preemptor group is eligible if terminating pods are on non-nominated nodes",
            nodes: &[("node1", 1), ("node2", 1)],
            victims: vec![v("victim", "node2", LOW).terminating(), v("other-victim", "node1", LOW)],
            groups: &[],
            pdb: false,
            preemptor_priority: HIGH,
            members: &[("p1", None), ("p2", Some("node1"))],
            // Upstream's victims are both; "victim" is already terminating.
            evicted: &["other-victim"],
        },
        Ported {
            name: "Preemptor group is eligible if nominated node has terminating pod belonging to a pod group of higher priority",
            nodes: &[("node1", 2), ("node2", 1)],
            victims: vec![
                v("victim", "node1", LOW).in_group("victim-pg").terminating(),
                v("other-victim", "node1", LOW),
            ],
            groups: &[("victim-pg", All, HIGH)],
            pdb: false,
            preemptor_priority: MID,
            members: &[("p1", None), ("p2", Some("node1"))],
            evicted: &["other-victim"],
        },
        Ported {
            name: "Preempt single lower priority pod",
            nodes: &[("node1", 1)],
            victims: vec![v("p1", "node1", LOW)],
            groups: &[],
            pdb: false,
            preemptor_priority: HIGH,
            members: one,
            evicted: &["p1"],
        },
        Ported {
            name: "Priority: Prefer lower priority victim",
            nodes: &[("node1", 2)],
            victims: vec![v("p1", "node1", LOW), v("p2", "node1", MID), v("p3", "node1", HIGH)],
            groups: &[],
            pdb: false,
            preemptor_priority: HIGH,
            members: one,
            evicted: &["p1", "p2"],
        },
        Ported {
            name: "Efficiency: Preempt minimum number of victims",
            // Four running pods on a node of capacity 3 (overcommitted, as upstream's).
            nodes: &[("node1", 3)],
            victims: vec![v("p1", "node1", LOW), v("p2", "node1", LOW), v("p3", "node1", LOW), v("p4", "node1", LOW)],
            groups: &[],
            pdb: false,
            preemptor_priority: HIGH,
            members: one,
            evicted: &["p3", "p4"],
        },
        Ported {
            name: "PDB: Prefer non-violating victim",
            nodes: &[("node1", 2)],
            victims: vec![v("victim-pdb", "node1", LOW).foo(), v("victim-no-pdb", "node1", LOW)],
            groups: &[],
            pdb: true,
            preemptor_priority: HIGH,
            members: one,
            evicted: &["victim-no-pdb"],
        },
        Ported {
            name: "PDB: Prefer removing non-violating victim over lower priority violating victim",
            nodes: &[("node1", 2)],
            victims: vec![v("victim-pdb", "node1", LOW).foo(), v("victim-no-pdb", "node1", MID)],
            groups: &[],
            pdb: true,
            preemptor_priority: HIGH,
            members: one,
            evicted: &["victim-no-pdb"],
        },
        Ported {
            name: "PodGroup preemptor with PreemptLowerPriority preemption policy performs preemption with PodGroup victims",
            nodes: &[("node1", 1), ("node2", 1), ("node3", 1)],
            victims: vec![
                v("p1", "node1", LOW),
                v("p2", "node2", LOW).in_group("pg1"),
                v("p3", "node3", LOW).in_group("pg2"),
            ],
            groups: &[("pg1", Single, LOW), ("pg2", Single, LOW)],
            pdb: false,
            preemptor_priority: HIGH,
            members: one,
            evicted: &["p1"],
        },
        Ported {
            name: "PDB: Prefer lower priority pod for preemption, when preemption without pdb violation is not possible",
            nodes: &[("node1", 2)],
            victims: vec![v("p1", "node1", LOW).foo(), v("p2", "node1", MID).foo()],
            groups: &[],
            pdb: true,
            preemptor_priority: HIGH,
            members: one,
            evicted: &["p1"],
        },
        Ported {
            name: "PodGroup: Prefer single pod over podGroup for preemption candidate",
            nodes: &[("node1", 3)],
            victims: vec![
                v("p1", "node1", LOW),
                v("g1-1", "node1", LOW).in_group("pg1"),
                v("g1-2", "node1", LOW).in_group("pg1"),
            ],
            groups: &[("pg1", All, LOW)],
            pdb: false,
            preemptor_priority: HIGH,
            members: one,
            evicted: &["p1"],
        },
        Ported {
            name: "PodGroup: Preempt group as a whole on single node",
            nodes: &[("node1", 3)],
            victims: vec![
                v("g1-1", "node1", LOW).in_group("pg1"),
                v("g1-2", "node1", LOW).in_group("pg1"),
                v("p1", "node1", MID),
            ],
            groups: &[("pg1", All, LOW)],
            pdb: false,
            preemptor_priority: HIGH,
            members: one,
            evicted: &["g1-1", "g1-2"],
        },
        Ported {
            name: "PDB: Unit violation if any member violates",
            nodes: &[("node1", 3)],
            victims: vec![
                v("g1-1", "node1", LOW).in_group("pg1").foo(),
                v("g1-2", "node1", LOW).in_group("pg1"),
                v("p1", "node1", LOW),
            ],
            groups: &[("pg1", All, LOW)],
            pdb: true,
            preemptor_priority: HIGH,
            members: one,
            evicted: &["p1"],
        },
        Ported {
            name: "Failure: Cannot preempt the victim with higher priority",
            nodes: &[("node1", 1)],
            victims: vec![v("p1", "node1", HIGH)],
            groups: &[],
            pdb: false,
            preemptor_priority: MID,
            members: one,
            evicted: &[],
        },
        Ported {
            name: "Failure: Cannot preempt the victim with equal priority",
            nodes: &[("node1", 1)],
            victims: vec![v("p1", "node1", MID)],
            groups: &[],
            pdb: false,
            preemptor_priority: MID,
            members: one,
            evicted: &[],
        },
    ];
    for c in cases {
        run_ported(&c);
    }
}
