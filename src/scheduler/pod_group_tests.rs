//! Upstream's truth table for the pod-group cycle's default algorithm
//! (`pkg/scheduler/schedule_one_podgroup_test.go`, `TestPodGroupSchedulingDefaultAlgorithm`):
//! three pods on one node, each pod's Filter, PostFilter and Permit outcome set by a
//! fake plugin, the group's status and each pod's result checked.

use std::sync::Arc;
use std::time::Duration;

use ahash::AHashMap;

use super::Scheduler;
use super::pod_group::GroupStatus;
use crate::framework::{
    Code, CycleState, ExtensionPoints, FilterPlugin, NodeToStatus, PermitDecision, PermitPlugin, Plugin, PodGroupInfo,
    PostFilterPlugin, PostFilterResult, Profile, Status,
};
use crate::model::workload::PodGroup;
use crate::snapshot::{NodeInfo, PodInfo, Snapshot};
use crate::testing::{NodeBuilder, PodBuilder};

#[derive(Default)]
struct Fake {
    filter: AHashMap<&'static str, Code>,
    /// Pods PostFilter nominates node1 for (others: Unschedulable).
    nominate: Vec<&'static str>,
    permit: AHashMap<&'static str, Code>,
}

impl Plugin for Fake {
    fn name(&self) -> &str {
        "FakePodGroupPlugin"
    }
    fn register(self: Arc<Self>, points: &mut ExtensionPoints) {
        points.filter(self.clone()).post_filter(self.clone()).permit(self);
    }
}

fn short(pod: &PodInfo) -> &'static str {
    match pod.pod.metadata.name.as_str() {
        "p1" => "p1",
        "p2" => "p2",
        _ => "p3",
    }
}

impl FilterPlugin for Fake {
    fn filter(&self, _: &CycleState, pod: &PodInfo, _: &NodeInfo) -> Status {
        match self.filter.get(short(pod)).copied().unwrap_or(Code::Success) {
            Code::Success => Status::SUCCESS,
            code => Status::new(code, "fake filter"),
        }
    }
}

impl PostFilterPlugin for Fake {
    fn post_filter(
        &self,
        _: &CycleState,
        pod: &PodInfo,
        _: &Snapshot,
        _: &NodeToStatus,
    ) -> (Option<PostFilterResult>, Status) {
        if self.nominate.contains(&short(pod)) {
            (Some(PostFilterResult { nominated_node_name: Some("node1".into()) }), Status::SUCCESS)
        } else {
            (None, Status::unschedulable("fake post filter"))
        }
    }
}

impl PermitPlugin for Fake {
    fn permit(&self, _: &mut CycleState, pod: &PodInfo, _: &str) -> PermitDecision {
        match self.permit.get(short(pod)).copied().unwrap_or(Code::Success) {
            Code::Success => PermitDecision::Allow,
            Code::Wait => PermitDecision::Wait(Duration::from_secs(300)),
            code => PermitDecision::Reject(Status::new(code, "fake permit")),
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Want {
    Feasible,
    Unschedulable,
    RequiresPreemption,
}

struct Case {
    name: &'static str,
    filter: [Code; 3],
    nominate: &'static [&'static str],
    permit: [Code; 3],
    group: Want,
    pod_codes: [Code; 3],
    preemption: [bool; 3],
}

use Code::{Success as S, Unschedulable as U, UnschedulableAndUnresolvable as UU, Wait as W};

const CASES: &[Case] = &[
    Case {
        name: "All pods feasible",
        filter: [S, S, S],
        nominate: &[],
        permit: [S, S, S],
        group: Want::Feasible,
        pod_codes: [S, S, S],
        preemption: [false; 3],
    },
    Case {
        name: "All pods feasible, two waiting",
        filter: [S, S, S],
        nominate: &[],
        permit: [W, W, S],
        group: Want::Feasible,
        pod_codes: [S, S, S],
        preemption: [false; 3],
    },
    Case {
        name: "All pods feasible, but all waiting",
        filter: [S, S, S],
        nominate: &[],
        permit: [W, W, W],
        group: Want::Unschedulable,
        pod_codes: [S, S, S],
        preemption: [false; 3],
    },
    Case {
        name: "All pods feasible, but last waiting",
        filter: [S, S, S],
        nominate: &[],
        permit: [S, S, W],
        group: Want::Feasible,
        pod_codes: [S, S, S],
        preemption: [false; 3],
    },
    Case {
        name: "All pods feasible, one waiting, one unschedulable",
        filter: [S, S, S],
        nominate: &[],
        permit: [W, U, S],
        group: Want::Feasible,
        pod_codes: [S, U, S],
        preemption: [false; 3],
    },
    Case {
        name: "All pods require preemption",
        filter: [U, U, U],
        nominate: &["p1", "p2", "p3"],
        permit: [S, S, S],
        group: Want::RequiresPreemption,
        pod_codes: [U, U, U],
        preemption: [true; 3],
    },
    Case {
        name: "All pods require preemption, but waiting",
        filter: [U, U, U],
        nominate: &["p1", "p2", "p3"],
        permit: [W, W, W],
        group: Want::Unschedulable,
        pod_codes: [U, U, U],
        preemption: [true; 3],
    },
    Case {
        name: "One pod requires preemption, but waiting, two are feasible",
        filter: [U, S, S],
        nominate: &["p1"],
        permit: [W, W, S],
        group: Want::RequiresPreemption,
        pod_codes: [U, S, S],
        preemption: [true, false, false],
    },
    Case {
        name: "One pod unschedulable, one requires preemption, one feasible",
        filter: [U, U, S],
        nominate: &["p1"],
        permit: [S, S, S],
        group: Want::RequiresPreemption,
        pod_codes: [U, U, S],
        preemption: [true, false, false],
    },
    Case {
        name: "All pods unschedulable",
        filter: [UU, U, U],
        nominate: &[],
        permit: [S, S, S],
        group: Want::Unschedulable,
        pod_codes: [U, U, U],
        preemption: [false; 3],
    },
];

#[test]
fn pod_group_scheduling_default_algorithm() {
    for c in CASES {
        let names = ["p1", "p2", "p3"];
        let fake = Fake {
            filter: names.iter().copied().zip(c.filter).collect(),
            nominate: c.nominate.to_vec(),
            permit: names.iter().copied().zip(c.permit).collect(),
        };
        let profile = Arc::new(Profile::builder("default-scheduler").plugin(fake).build().unwrap());
        let mut sched = Scheduler::builder().profile((*profile).clone()).build();
        sched.add_node(NodeBuilder::new("node1").cpu("8").build()).unwrap();
        let group = Arc::new(PodGroup::gang("default", "pg", 3));
        sched.handle().pod_groups().set_pod_group((*group).clone());
        let pods: Vec<Arc<PodInfo>> = names
            .iter()
            .map(|n| Arc::new(PodInfo::new(PodBuilder::new(n).uid(n).pod_group_name("pg").build()).unwrap()))
            .collect();
        let mut snap = Snapshot::default();
        sched.cache().lock().update_snapshot(&mut snap);
        sched.handle().put_snapshot(Arc::new(snap));
        let info = PodGroupInfo { pod_group: group, unscheduled_pods: pods };
        let profile = sched.profiles()[0].clone();
        let r = sched.group_algorithm(&profile, &info, None);
        let got = match r.status {
            GroupStatus::Feasible => Want::Feasible,
            GroupStatus::WaitingOnPreemption => Want::RequiresPreemption,
            GroupStatus::Unschedulable(_) => Want::Unschedulable,
            GroupStatus::Error(s) => panic!("{}: {s:?}", c.name),
        };
        assert_eq!(got, c.group, "{}", c.name);
        for (i, p) in r.pods.iter().enumerate() {
            let code = match &p.error {
                None => Code::Success,
                Some(super::ScheduleError::Unschedulable(_)) => Code::Unschedulable,
                Some(super::ScheduleError::Plugin { status, .. }) => status.code(),
                Some(e) => panic!("{}: {e}", c.name),
            };
            assert_eq!(code, c.pod_codes[i], "{}: pod {} status", c.name, names[i]);
            assert_eq!(p.requires_preemption, c.preemption[i], "{}: pod {} preemption", c.name, names[i]);
            if code == Code::Success || p.requires_preemption {
                assert_eq!(p.node.as_deref(), Some("node1"), "{}: {}", c.name, names[i]);
                assert_eq!(p.permit.as_ref().map(Status::code), Some(c.permit[i]), "{}: {} permit", c.name, names[i]);
            } else {
                assert_eq!(p.node, None, "{}: {}", c.name, names[i]);
                assert!(p.permit.is_none(), "{}: {} permit", c.name, names[i]);
            }
        }
        // Every assumption reverted: the node as the cache has it, the members unscheduled.
        let node = sched.handle().snapshot();
        assert!(node.get("node1").is_none_or(|n| n.pods().is_empty()), "{}", c.name);
        let state = sched.handle().pod_groups().state("default", "pg");
        assert_eq!(state.map_or(0, |s| s.scheduled_pods_count()), 0, "{}", c.name);
    }
}
