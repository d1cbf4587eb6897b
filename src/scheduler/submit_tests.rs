//! Upstream's table for handing a pod-group algorithm result to binding or back to the
//! queue (`pkg/scheduler/schedule_one_podgroup_test.go`,
//! `TestSubmitPodGroupAlgorithmResult`): three pods on one node, the result given, each
//! pod checked bound, failed with its nomination kept ("preempting") or failed, and the
//! `PodGroupScheduled` condition.
//!
//! Where schedkit differs: a group waiting on preemption carries no status of its own,
//! so its condition message is always upstream's algorithm text "pod group is waiting
//! for preemption to complete" (the table's results say "waiting for preemption to
//! complete"); and schedkit's results always hold every pod (upstream completes a
//! result without pods, `completePodGroupAlgorithmResult`), so the "Unschedulable for
//! the entire pod group" row gives each pod the group's status.

use std::sync::Arc;

use super::pod_group::{GroupResult, GroupStatus, PodResult};
use super::run::AttemptOutcome;
use super::{ScheduleError, Scheduler};
use crate::framework::{Code, CycleState, Profile, Status};
use crate::model::workload::{PodGroup, REASON_SCHEDULER_ERROR, REASON_UNSCHEDULABLE};
use crate::snapshot::PodInfo;
use crate::testing::{NodeBuilder, PodBuilder};

/// One pod's result in a row.
#[derive(Clone, Copy)]
enum P {
    /// Fits on node1 with this Permit evaluation.
    Fit(Code),
    /// Fits on node1 only after preemption (PostFilter nominated it), Permit as given.
    Preempt(Code),
    /// Did not fit, with this code.
    No(Code),
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Want {
    Bound,
    Preempting,
    Failed,
}

enum G {
    Success,
    Waiting,
    Unschedulable(&'static str),
    Error(&'static str),
}

struct Row {
    name: &'static str,
    already_scheduled: bool,
    group: G,
    pods: &'static [P],
    want: [Want; 3],
    /// (status, reason, message) of the condition.
    condition: (&'static str, &'static str, &'static str),
}

use Code::{Error as E, Success as S, Unschedulable as U, Wait as W};
use Want::{Bound as B, Failed as F, Preempting as Pr};

const WAITING: &str = "pod group is waiting for preemption to complete";

const ROWS: &[Row] = &[
    Row {
        name: "All pods feasible",
        already_scheduled: false,
        group: G::Success,
        pods: &[P::Fit(S), P::Fit(S), P::Fit(S)],
        want: [B, B, B],
        condition: ("True", "Scheduled", ""),
    },
    Row {
        name: "All pods feasible, but all waiting",
        already_scheduled: false,
        group: G::Unschedulable("not enough capacity for the gang"),
        pods: &[P::Fit(W), P::Fit(W), P::Fit(W)],
        want: [F, F, F],
        condition: ("False", REASON_UNSCHEDULABLE, "not enough capacity for the gang"),
    },
    Row {
        name: "All pods feasible, but last waiting",
        already_scheduled: false,
        group: G::Success,
        pods: &[P::Fit(S), P::Fit(S), P::Fit(W)],
        want: [B, B, B],
        condition: ("True", "Scheduled", ""),
    },
    Row {
        name: "All pods feasible, one waiting, one unschedulable",
        already_scheduled: false,
        group: G::Success,
        pods: &[P::Fit(W), P::No(U), P::Fit(S)],
        want: [B, F, B],
        condition: ("True", "Scheduled", ""),
    },
    Row {
        name: "All pods require preemption",
        already_scheduled: false,
        group: G::Waiting,
        pods: &[P::Preempt(S), P::Preempt(S), P::Preempt(S)],
        want: [Pr, Pr, Pr],
        condition: ("False", REASON_UNSCHEDULABLE, WAITING),
    },
    Row {
        name: "All pods require preemption, but waiting",
        already_scheduled: false,
        group: G::Unschedulable("preemption required but not feasible"),
        pods: &[P::Preempt(W), P::Preempt(W), P::Preempt(W)],
        want: [F, F, F],
        condition: ("False", REASON_UNSCHEDULABLE, "preemption required but not feasible"),
    },
    Row {
        name: "One pod requires preemption, but waiting, two are feasible",
        already_scheduled: false,
        group: G::Waiting,
        pods: &[P::Preempt(W), P::Fit(W), P::Fit(S)],
        want: [Pr, Pr, Pr],
        condition: ("False", REASON_UNSCHEDULABLE, WAITING),
    },
    Row {
        name: "One pod unschedulable, one requires preemption, one feasible",
        already_scheduled: false,
        group: G::Waiting,
        pods: &[P::Preempt(S), P::No(U), P::Fit(S)],
        want: [Pr, F, Pr],
        condition: ("False", REASON_UNSCHEDULABLE, WAITING),
    },
    Row {
        name: "All pods unschedulable",
        already_scheduled: false,
        group: G::Unschedulable("0/3 nodes are available: insufficient cpu"),
        pods: &[P::No(U), P::No(U), P::No(U)],
        want: [F, F, F],
        condition: ("False", REASON_UNSCHEDULABLE, "0/3 nodes are available: insufficient cpu"),
    },
    Row {
        name: "Unschedulable for the entire pod group",
        already_scheduled: false,
        group: G::Unschedulable("node affinity mismatch"),
        pods: &[P::No(U), P::No(U), P::No(U)],
        want: [F, F, F],
        condition: ("False", REASON_UNSCHEDULABLE, "node affinity mismatch"),
    },
    Row {
        name: "Error for one pod",
        already_scheduled: false,
        group: G::Error("plugin returned error"),
        pods: &[P::Fit(S), P::No(E), P::No(U)],
        want: [F, F, F],
        condition: ("False", REASON_SCHEDULER_ERROR, "plugin returned error"),
    },
    Row {
        name: "Error for one pod while waiting on preemption",
        already_scheduled: false,
        group: G::Error("internal failure"),
        pods: &[P::Preempt(S), P::No(E), P::No(U)],
        want: [F, F, F],
        condition: ("False", REASON_SCHEDULER_ERROR, "internal failure"),
    },
    Row {
        name: "Already Scheduled, successful cycle keeps condition",
        already_scheduled: true,
        group: G::Success,
        pods: &[P::Fit(S), P::Fit(S), P::Fit(S)],
        want: [B, B, B],
        condition: ("True", "Scheduled", ""),
    },
    Row {
        name: "Already Scheduled, rejected cycle does not regress condition",
        already_scheduled: true,
        group: G::Unschedulable("not enough capacity for the gang"),
        pods: &[P::No(U), P::No(U), P::No(U)],
        want: [F, F, F],
        condition: ("True", "Scheduled", ""),
    },
];

fn result(row: &Row, pods: &[Arc<PodInfo>]) -> GroupResult {
    let status = match row.group {
        G::Success => GroupStatus::Feasible,
        G::Waiting => GroupStatus::WaitingOnPreemption,
        G::Unschedulable(m) => GroupStatus::Unschedulable(Status::unschedulable(m)),
        G::Error(m) => GroupStatus::Error(Status::error(m)),
    };
    let pods = pods
        .iter()
        .zip(row.pods)
        .map(|(pod, p)| {
            let err = |code: Code| Some(ScheduleError::Plugin { pod: pod.pod.key(), status: Status::new(code, "x") });
            let permit = |code: Code| Some(if code == S { Status::SUCCESS } else { Status::new(code, "waiting") });
            match *p {
                P::Fit(c) => PodResult {
                    pod: pod.clone(),
                    node: Some("node1".into()),
                    state: Some(CycleState::new()),
                    error: None,
                    permit: permit(c),
                    requires_preemption: false,
                },
                P::Preempt(c) => PodResult {
                    pod: pod.clone(),
                    node: Some("node1".into()),
                    state: Some(CycleState::new()),
                    error: err(U),
                    permit: permit(c),
                    requires_preemption: true,
                },
                P::No(c) => PodResult {
                    pod: pod.clone(),
                    node: None,
                    state: None,
                    error: err(c),
                    permit: None,
                    requires_preemption: false,
                },
            }
        })
        .collect();
    GroupResult { status, pods }
}

#[test]
fn submit_pod_group_algorithm_result() {
    for row in ROWS {
        let profile = Profile::builder("default-scheduler").build().unwrap();
        let mut sched = Scheduler::builder().profile(profile).build();
        sched.add_node(NodeBuilder::new("node1").cpu("8").build()).unwrap();
        let mut group = PodGroup::gang("default", "pg", 3);
        sched.handle().pod_groups().set_pod_group(group.clone());
        if row.already_scheduled {
            sched.handle().pod_groups().set_scheduled_condition("default", "pg", None, std::time::Duration::ZERO);
            group = (*sched.handle().pod_groups().pod_group("default", "pg").unwrap()).clone();
        }
        let names = ["p1", "p2", "p3"];
        for n in names {
            sched.add_pod(PodBuilder::new(n).uid(n).pod_group_name("pg").build()).unwrap();
        }
        // In flight, as the cycle leaves them.
        let pods: Vec<Arc<PodInfo>> =
            names.iter().map(|n| sched.queue().lock().pop_specific(n).expect("queued").pod).collect();
        let profile = sched.profiles()[0].clone();
        sched.submit(&profile, group.namespace(), group.name(), result(row, &pods));
        let nominator = sched.handle().preemption().nominator();
        for (i, n) in names.iter().enumerate() {
            let attempt = sched.pending_attempts.iter().find(|a| &*a.pod.uid == *n).expect("an attempt per pod");
            let got = match &attempt.outcome {
                AttemptOutcome::Bound(node) => {
                    assert_eq!(node, "node1", "{}: {n}", row.name);
                    Want::Bound
                }
                AttemptOutcome::Failed { .. } if nominator.nominated_node(n).is_some() => Want::Preempting,
                AttemptOutcome::Failed { .. } => Want::Failed,
                other => panic!("{}: {n}: {other:?}", row.name),
            };
            assert_eq!(got, row.want[i], "{}: {n}", row.name);
        }
        let pg = sched.handle().pod_groups().pod_group("default", "pg").unwrap();
        let c = pg.scheduled_condition().expect("condition");
        let (status, reason, message) = row.condition;
        assert_eq!((c.status.as_str(), c.reason.as_str()), (status, reason), "{}", row.name);
        if status == "False" {
            assert_eq!(c.message, message, "{}", row.name);
        }
    }
}
