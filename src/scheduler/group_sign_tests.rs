//! Signing in the pod-group cycle: a member's batching signature is the one the queue
//! computed as it entered (upstream v1.36 `QueuedPodInfo.PodSignature`), and the group
//! memo signs a member only when it can answer it.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::{Scheduler, SchedulerConfig};
use crate::framework::{
    CycleState, ExtensionPoints, FeatureGates, FilterPlugin, Handle, Plugin, Profile, SignFragments, SignPlugin, Status,
};
use crate::model::workload::PodGroup;
use crate::snapshot::{NodeInfo, PodInfo};
use crate::testing::{NodeBuilder, PodBuilder};

/// Lets every pod through and counts the pods it signs.
struct CountingSigner(Arc<AtomicUsize>);

impl Plugin for CountingSigner {
    fn name(&self) -> &str {
        "CountingSigner"
    }
    fn register(self: Arc<Self>, points: &mut ExtensionPoints) {
        points.filter(self.clone()).sign(self);
    }
}

impl FilterPlugin for CountingSigner {
    fn filter(&self, _: &CycleState, _: &PodInfo, _: &NodeInfo) -> Status {
        Status::SUCCESS
    }
}

impl SignPlugin for CountingSigner {
    fn sign_pod(&self, _: &PodInfo, fragments: &mut SignFragments) -> Status {
        self.0.fetch_add(1, Ordering::Relaxed);
        fragments.add("example.com/nothing", |w| {
            w.str("");
        });
        Status::SUCCESS
    }
}

/// A scheduler whose one profile batches (every plugin signs) with the pod-group gates
/// on, `nodes` nodes, `pct` percent of them to score, and the count of pods signed so
/// far.
fn scheduler(nodes: usize, pct: u32, memo: bool) -> (Scheduler, Arc<AtomicUsize>) {
    let handle = Handle::default();
    handle.set_feature_gates("GenericWorkload=true,GangScheduling=true".parse::<FeatureGates>().unwrap());
    let signed = Arc::new(AtomicUsize::new(0));
    let profile = Profile::builder("default-scheduler").plugin(CountingSigner(signed.clone())).build().unwrap();
    let cfg = SchedulerConfig { parallelism: 1, percentage_of_nodes_to_score: pct, ..SchedulerConfig::default() };
    let mut s = Scheduler::builder().handle(handle).profile(profile).config(cfg).build();
    s.group_switches.memo = memo;
    for i in 0..nodes {
        s.add_node(NodeBuilder::new(&format!("n{i:03}")).cpu("4").pods(110).build()).unwrap();
    }
    (s, signed)
}

fn add_gang(s: &Scheduler, name: &str, members: usize) {
    let ev = s.events();
    ev.add_pod_group(PodGroup::gang("default", name, i32::try_from(members).unwrap()));
    for m in 0..members {
        ev.add_pod(PodBuilder::new(&format!("{name}-{m}")).cpu("1").pod_group_name(name).build()).unwrap();
    }
}

#[test]
fn members_are_signed_once_by_the_queue() {
    let (mut s, signed) = scheduler(8, 0, false);
    assert!(s.batch_stats("default-scheduler").is_some(), "the profile batches");
    add_gang(&s, "g", 3);
    let queued = signed.load(Ordering::Relaxed);
    assert_eq!(queued, 3, "the queue signs each member as it enters");
    let run = s.run_until_idle();
    assert_eq!(run.bound, 3, "{run:?}");
    assert_eq!(signed.load(Ordering::Relaxed), queued, "no member is signed again in the group cycle");
}

/// 300 nodes, 34% of them (102) looked for: the members' walks sample, so the memo
/// is not used and they are not signed for it, whether a 3-pod gang's members see
/// disjoint stretches or a 4-pod gang's come round; with every node looked at, a
/// 4-pod gang's members are signed.
#[test]
fn the_memo_signs_only_members_it_can_answer() {
    let (mut s, signed) = scheduler(300, 34, true);
    for (name, members) in [("three", 3), ("four", 4)] {
        add_gang(&s, name, members);
        let queued = signed.load(Ordering::Relaxed);
        assert_eq!(s.run_until_idle().bound, members);
        assert_eq!(signed.load(Ordering::Relaxed), queued, "no memo key for sampled members");
    }
    assert_eq!(s.group_memo_stats.keys_signed, 0, "{:?}", s.group_memo_stats);
    assert_eq!(s.group_memo_stats.members_plain, 7, "{:?}", s.group_memo_stats);

    let (mut s, signed) = scheduler(300, 100, true);
    add_gang(&s, "four", 4);
    let queued = signed.load(Ordering::Relaxed);
    assert_eq!(s.run_until_idle().bound, 4);
    assert!(s.group_memo_stats.keys_signed > 0, "{:?}", s.group_memo_stats);
    assert!(signed.load(Ordering::Relaxed) > queued);
}
