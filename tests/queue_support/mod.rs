//! Helpers for the queue and gang tests: a small resource-fit plugin registered
//! under upstream's NodeResourcesFit name with upstream's events and hints, so the
//! queueing-hint tests exercise the same wiring the real plugin will use.
#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use schedkit::framework::*;
use schedkit::model::{Node, Resources};
use schedkit::plugins::coscheduling::{Coscheduling, CoschedulingArgs, PodGroupRegistry};
use schedkit::plugins::priority_sort::PrioritySort;
use schedkit::scheduler::{Scheduler, TieBreak};
use schedkit::snapshot::{NodeInfo, PodInfo, Snapshot};

/// CPU, memory, GPU and pod-count fit, with a least-allocated score.
pub struct Fit {
    pub unreserved: Arc<Mutex<Vec<String>>>,
}

impl Fit {
    pub fn new() -> Fit {
        Fit { unreserved: Arc::new(Mutex::new(Vec::new())) }
    }
}

pub fn fits(req: &Resources, alloc: &Resources, used: &Resources) -> Option<&'static str> {
    if req.milli_cpu > alloc.milli_cpu - used.milli_cpu {
        return Some("Insufficient cpu");
    }
    if req.memory > alloc.memory - used.memory {
        return Some("Insufficient memory");
    }
    let gpu = "nvidia.com/gpu";
    if req.scalar_str(gpu) > alloc.scalar_str(gpu) - used.scalar_str(gpu) {
        return Some("Insufficient nvidia.com/gpu");
    }
    None
}

impl Plugin for Fit {
    fn name(&self) -> &str {
        "NodeResourcesFit"
    }
    fn register(self: Arc<Self>, p: &mut ExtensionPoints) {
        p.filter(self.clone()).score(self.clone()).reserve(self.clone()).enqueue(self);
    }
}

impl FilterPlugin for Fit {
    fn filter(&self, _: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        if node.pods().len() as i64 >= node.allocatable().allowed_pod_number {
            return Status::unschedulable("Too many pods");
        }
        match fits(&pod.requests, node.allocatable(), node.requested()) {
            None => Status::SUCCESS,
            Some(r) => Status::unschedulable(r),
        }
    }
}

impl ScorePlugin for Fit {
    fn score(&self, _: &CycleState, _: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        let a = node.allocatable().milli_cpu.max(1);
        Ok(((a - node.requested().milli_cpu) * 100 / a).clamp(0, 100))
    }
}

impl ReservePlugin for Fit {
    fn reserve(&self, _: &mut CycleState, _: &PodInfo, _: &str) -> Status {
        Status::SUCCESS
    }
    fn unreserve(&self, _: &mut CycleState, pod: &PodInfo, _: &str) {
        self.unreserved.lock().push(pod.pod.name().to_owned());
    }
}

impl EnqueueExtensions for Fit {
    /// As upstream NodeResourcesFit: node added or allocatable grown (hint: the new
    /// node could hold the pod), assigned pod deleted.
    fn events_to_register(&self) -> Vec<ClusterEventWithHint> {
        vec![
            ClusterEventWithHint {
                event: ClusterEvent {
                    resource: EventResource::Node,
                    action: ActionType::ADD | ActionType::UPDATE_NODE_ALLOCATABLE,
                },
                hint: Some(Arc::new(|pod: &PodInfo, obj: &EventObject| match obj {
                    EventObject::Node { new: Some(n), .. } => {
                        let alloc = n.status.allocatable.to_resources();
                        if fits(&pod.requests, &alloc, &Resources::default()).is_none() {
                            QueueingHint::Queue
                        } else {
                            QueueingHint::Skip
                        }
                    }
                    _ => QueueingHint::Skip,
                })),
            },
            ClusterEventWithHint {
                event: ClusterEvent { resource: EventResource::AssignedPod, action: ActionType::DELETE },
                hint: None,
            },
        ]
    }
}

/// Per-node (name, cpu, memory, gpu, pods) requested, sorted.
pub fn cache_state(s: &Scheduler) -> Vec<(String, i64, i64, i64, usize)> {
    let mut snap = Snapshot::default();
    s.cache().lock().update_snapshot(&mut snap);
    let mut v: Vec<_> = snap
        .nodes()
        .iter()
        .map(|n| {
            let r = n.requested();
            (n.node().name().to_owned(), r.milli_cpu, r.memory, r.scalar_str("nvidia.com/gpu"), n.pods().len())
        })
        .collect();
    v.sort();
    v
}

/// A virtual-clock scheduler with Fit + Coscheduling (+ any extra plugin).
pub fn gang_scheduler(
    args: CoschedulingArgs,
    nodes: impl IntoIterator<Item = Node>,
) -> (Scheduler, Arc<PodGroupRegistry>, VirtualClock) {
    let clock = VirtualClock::new();
    let handle = Handle::new(Arc::new(clock.clone()));
    let gang = Coscheduling::new(&handle, args).unwrap();
    let registry = gang.registry();
    let profile = Profile::builder("default-scheduler").plugin(gang).plugin(Fit::new()).build().unwrap();
    let s = Scheduler::builder().profile(profile).handle(handle).parallelism(1).tie_break(TieBreak::First).build();
    for n in nodes {
        s.add_node(n).unwrap();
    }
    (s, registry, clock)
}

/// A virtual-clock scheduler with PrioritySort and the given plugins.
pub fn plain_scheduler(plugins: Vec<Arc<dyn Plugin>>) -> (Scheduler, VirtualClock) {
    let clock = VirtualClock::new();
    let mut b = Profile::builder("default-scheduler").plugin(PrioritySort);
    for p in plugins {
        b = b.plugin_arc(p, 1);
    }
    let s = Scheduler::builder()
        .profile(b.build().unwrap())
        .clock(Arc::new(clock.clone()))
        .parallelism(1)
        .tie_break(TieBreak::First)
        .build();
    (s, clock)
}

pub const SEC: Duration = Duration::from_secs(1);
