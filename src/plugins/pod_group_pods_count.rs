//! PodGroupPodsCount (upstream
//! `pkg/scheduler/framework/plugins/podgrouppodscount/podgroup_pods_count.go`, gate
//! `TopologyAwareWorkloadScheduling`, default weight 1): prefers the placement where
//! most of the group's pods would be scheduled.

use std::sync::Arc;

use crate::framework::{
    ExtensionPoints, Handle, MAX_PLACEMENT_SCORE, MIN_PLACEMENT_SCORE, PlacementScore, PlacementScorePlugin, Plugin,
    PodGroupAssignments, PodGroupCycleState, PodGroupInfo, Status,
};
use crate::plugins::names;
use crate::snapshot::PodGroupState;

/// Scores a placement by the group's assumed and bound pods plus the pods it fits.
#[derive(Debug, Clone)]
pub struct PodGroupPodsCount {
    handle: Handle,
}

impl PodGroupPodsCount {
    /// The plugin reading member states from `handle`.
    pub fn new(handle: Handle) -> PodGroupPodsCount {
        PodGroupPodsCount { handle }
    }
}

impl PodGroupPodsCount {
    /// The group's assumed and bound pods.
    fn scheduled(&self, group: &PodGroupInfo) -> usize {
        self.handle
            .pod_groups()
            .states()
            .with(group.namespace(), group.name(), |s| s.map_or(0, PodGroupState::scheduled_pods_count))
    }
}

/// Upstream's `ScheduledPodsCount() + len(ProposedAssignments)`.
fn count_score(scheduled: usize, placed: usize) -> i64 {
    i64::try_from(scheduled + placed).unwrap_or(i64::MAX)
}

impl Plugin for PodGroupPodsCount {
    fn name(&self) -> &str {
        names::POD_GROUP_PODS_COUNT
    }
    fn register(self: Arc<Self>, points: &mut ExtensionPoints) {
        points.placement_score(self);
    }
}

impl PlacementScorePlugin for PodGroupPodsCount {
    fn score_placement(
        &self,
        _state: &PodGroupCycleState,
        group: &PodGroupInfo,
        assignments: &PodGroupAssignments,
    ) -> Result<i64, Status> {
        Ok(count_score(self.scheduled(group), assignments.proposed.len()))
    }

    /// Every member of the cycle placed. Only a placement that places them all gets
    /// `MaxScore` from the normalization below: `(U - 1) * 100 / U < 100`.
    fn max_placement_score(&self, _state: &PodGroupCycleState, group: &PodGroupInfo) -> Option<i64> {
        // A bound of 0 would make normalizing fail; no bound then.
        let bound = count_score(self.scheduled(group), group.unscheduled_pods.len());
        (bound > 0).then_some(bound)
    }

    /// `score * (MaxScore - MinScore) / max + MinScore` in integers; `minCount` is not
    /// used, as upstream.
    fn normalize_placement_score(
        &self,
        _state: &PodGroupCycleState,
        _group: &PodGroupInfo,
        scores: &mut [PlacementScore],
    ) -> Status {
        let max = scores.iter().map(|s| s.score).max().unwrap_or(0);
        if max == 0 {
            return Status::error("no pods from pod group are assigned to any of the candidate placements");
        }
        for s in scores {
            s.score = MIN_PLACEMENT_SCORE + s.score * (MAX_PLACEMENT_SCORE - MIN_PLACEMENT_SCORE) / max;
        }
        Status::SUCCESS
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::{Code, Placement, ProposedAssignment};
    use crate::model::workload::PodGroup;
    use crate::snapshot::{MemberState, PodInfo};
    use crate::testing::PodBuilder;

    fn pod(name: &str, node: &str) -> Arc<PodInfo> {
        Arc::new(PodInfo::new(PodBuilder::new(name).uid(name).pod_group_name("pg1").node_name(node).build()).unwrap())
    }

    type Pods<'a> = &'a [(&'a str, &'a str)];

    /// Upstream `podgroup_pods_count_test.go` `TestScorePlacement`.
    #[test]
    fn score_placement() {
        let proposed = vec![
            ProposedAssignment { pod: pod("proposed-pod-1", ""), node: "node1".into() },
            ProposedAssignment { pod: pod("proposed-pod-2", ""), node: "node2".into() },
        ];
        let cases: [(&str, Pods<'_>, Pods<'_>, i64); 4] = [
            ("existing assigned and assumed pods", &[("p2", "node2"), ("p3", "node3")], &[("p1", "node1")], 5),
            ("no assumed pods", &[("p1", "node1")], &[], 3),
            ("no assigned pods", &[], &[("p1", "node1")], 3),
            ("no assigned pods, no assumed pods", &[], &[], 2),
        ];
        for (name, assigned, assumed, want) in cases {
            let handle = Handle::default();
            let states = handle.pod_groups().states();
            for (p, n) in assigned {
                states.set(&pod(p, n), MemberState::Assigned);
            }
            for (p, n) in assumed {
                states.set(&pod(p, n), MemberState::Assumed);
            }
            for a in &proposed {
                states.set(&a.pod, MemberState::Unscheduled);
            }
            let info =
                PodGroupInfo { pod_group: Arc::new(PodGroup::gang("default", "pg1", 1)), unscheduled_pods: vec![] };
            let a = PodGroupAssignments {
                placement: Arc::new(Placement { name: "p".into(), nodes: vec![] }),
                proposed: proposed.clone(),
            };
            let got = PodGroupPodsCount::new(handle).score_placement(&PodGroupCycleState::new(), &info, &a).unwrap();
            assert_eq!(got, want, "{name}");
        }
    }

    /// The bound is the score of a placement that places every member of the cycle,
    /// and the normalization gives the maximum to exactly the placements reaching it.
    #[test]
    fn max_placement_score_is_every_member_placed() {
        let handle = Handle::default();
        let states = handle.pod_groups().states();
        states.set(&pod("bound", "node1"), MemberState::Assigned);
        let members: Vec<_> = (0..3).map(|i| pod(&format!("m{i}"), "")).collect();
        for m in &members {
            states.set(m, MemberState::Unscheduled);
        }
        let plugin = PodGroupPodsCount::new(handle);
        let state = PodGroupCycleState::new();
        let group = |pods: Vec<Arc<PodInfo>>| PodGroupInfo {
            pod_group: Arc::new(PodGroup::gang("default", "pg1", 1)),
            unscheduled_pods: pods,
        };
        let bound = plugin.max_placement_score(&state, &group(members.clone()));
        assert_eq!(bound, Some(4));
        let placed = |n: usize| PodGroupAssignments {
            placement: Arc::new(Placement { name: format!("p{n}"), nodes: vec![] }),
            proposed: members[..n]
                .iter()
                .map(|p| ProposedAssignment { pod: p.clone(), node: "node1".into() })
                .collect(),
        };
        let raw: Vec<i64> =
            (0..=3).map(|n| plugin.score_placement(&state, &group(members.clone()), &placed(n)).unwrap()).collect();
        assert_eq!(raw, [1, 2, 3, 4]);
        let mut scores: Vec<PlacementScore> =
            raw.iter().map(|&score| PlacementScore { placement: String::new(), score }).collect();
        assert!(plugin.normalize_placement_score(&state, &group(vec![]), &mut scores).is_success());
        let top: Vec<bool> = scores.iter().map(|s| s.score == MAX_PLACEMENT_SCORE).collect();
        assert_eq!(top, [false, false, false, true]);
        // No member and nothing scheduled: a bound of 0 would fail normalization.
        let empty = PodGroupPodsCount::new(Handle::default());
        assert_eq!(empty.max_placement_score(&state, &group(vec![])), None);
    }

    /// Upstream `podgroup_pods_count_test.go` `TestNormalizePlacementScore`.
    #[test]
    fn normalize_placement_score() {
        type Want<'a> = Result<&'a [i64], &'a str>;
        let cases: [(&str, &[i64], Want<'_>); 5] = [
            ("distinct scores", &[10, 50, 110], Ok(&[9, 45, 100])),
            ("equal scores", &[50, 50], Ok(&[100, 100])),
            ("single score", &[50], Ok(&[100])),
            (
                "some minimal score that is far from a group of scores located closely",
                &[11, 100, 101, 102],
                Ok(&[10, 98, 99, 100]),
            ),
            ("zero scores", &[0, 0], Err("no pods from pod group are assigned to any of the candidate placements")),
        ];
        let info = PodGroupInfo { pod_group: Arc::new(PodGroup::gang("default", "pg1", 1)), unscheduled_pods: vec![] };
        for (name, input, want) in cases {
            let mut scores: Vec<PlacementScore> =
                input.iter().map(|&score| PlacementScore { placement: String::new(), score }).collect();
            let s = PodGroupPodsCount::new(Handle::default()).normalize_placement_score(
                &PodGroupCycleState::new(),
                &info,
                &mut scores,
            );
            match want {
                Ok(w) => {
                    assert!(s.is_success(), "{name}: {s:?}");
                    assert_eq!(scores.iter().map(|s| s.score).collect::<Vec<_>>(), w, "{name}");
                }
                Err(msg) => assert_eq!((s.code(), s.message()), (Code::Error, msg.to_owned()), "{name}"),
            }
        }
    }
}
