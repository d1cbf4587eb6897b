//! The placement algorithm of the pod-group cycle (upstream
//! `podGroupSchedulingPlacementAlgorithm`, gate `TopologyAwareWorkloadScheduling`):
//! PlacementGenerate plugins propose node sets, the default algorithm runs once per
//! placement, a single feasible placement wins without scoring, otherwise the highest
//! weighted PlacementScore total wins, ties broken by the scheduler's seeded RNG.
//!
//! Beyond upstream: when every PlacementScore plugin bounds its score
//! ([`PlacementScorePlugin::max_placement_score`](crate::framework::PlacementScorePlugin::max_placement_score);
//! `PodGroupPodsCount` does: every member placed), placements run in a random order
//! and the first feasible one reaching every bound wins at once. The first of a
//! random order among the tied best is a uniform draw among them, as upstream's
//! random tie-break is; a rack-constrained gang on a cluster of empty racks then
//! runs one placement instead of one per rack.

use std::sync::Arc;

use super::Scheduler;
use super::pod_group::{GroupResult, GroupStatus};
use crate::framework::runtime::guard;
use crate::framework::{
    MAX_PLACEMENT_SCORE, MIN_PLACEMENT_SCORE, Placement, PlacementScore, PodGroupAssignments, PodGroupCycleState,
    PodGroupInfo, Profile, ProposedAssignment, Status,
};
use crate::snapshot::Snapshot;

impl Scheduler {
    /// Generates placements, runs the group algorithm in each, and picks one.
    pub(crate) fn placement_algorithm(&mut self, profile: &Arc<Profile>, info: &PodGroupInfo) -> GroupResult {
        let mut state = PodGroupCycleState::new();
        state.set_record_plugin_metrics(true);
        // No reference to the snapshot outlives generation: members are assumed into
        // it in place.
        let generated = generate(profile, &mut state, info, &self.handle.snapshot());
        let placements = match generated {
            Ok(p) => p,
            Err(s) => return all_failed(info, GroupStatus::Error(s)),
        };
        if placements.len() > 1
            && let Some(memo) = self.group_memo.as_mut()
        {
            // Every member runs once per placement: its pod-only PreFilters and
            // PreScores are kept from the first (see `group_prescore.rs`).
            memo.pre.keep();
        }
        // Upstream evaluates every placement. When every scorer bounds its score,
        // a random order stopped at the first placement reaching all bounds picks
        // uniformly among the placements upstream would tie-break between.
        let bounds = placement_bounds(profile, &state, info)
            .filter(|_| placements.len() > 1 && self.group_switches.placement_early_stop);
        let mut order: Vec<usize> = (0..placements.len()).collect();
        if bounds.is_some() {
            for i in (1..order.len()).rev() {
                #[expect(clippy::cast_possible_truncation, reason = "below i + 1, a usize")]
                order.swap(i, self.rng.below(i as u64 + 1) as usize);
            }
        }
        // The failure of the earliest placement in the generators' order (upstream's
        // `anyResult`: the first one it evaluates).
        let mut first: Option<(usize, GroupResult)> = None;
        let mut feasible: Vec<(Arc<Placement>, GroupResult)> = Vec::new();
        for &i in &order {
            let p = &placements[i];
            let r = self.group_algorithm(profile, info, Some(&p.nodes));
            if matches!(r.status, GroupStatus::Error(_)) {
                return r;
            }
            if matches!(r.status, GroupStatus::Feasible | GroupStatus::WaitingOnPreemption) {
                let p = Arc::new(p.clone());
                if let Some(b) = &bounds
                    && reaches_bounds(profile, &state, info, &assignments(&p, &r), b)
                {
                    return r;
                }
                feasible.push((p, r));
            } else if first.as_ref().is_none_or(|(j, _)| i < *j) {
                first = Some((i, r));
            }
        }
        let first = first.map(|(_, r)| r);
        match feasible.len() {
            0 => {
                let reason = match &first {
                    Some(GroupResult { status: GroupStatus::Unschedulable(s), .. }) => s.message(),
                    _ => no_placement_diagnosis(info, &self.handle.snapshot()),
                };
                let plugin = profile.placement_generate.first().map(|n| n.name);
                let mut s = Status::unschedulable(format!(
                    "0/{} placements are available, first placement status: {reason}",
                    placements.len()
                ));
                if let Some(p) = plugin {
                    s = s.with_plugin(p);
                }
                let mut r = first.unwrap_or_else(|| all_failed(info, GroupStatus::Unschedulable(s.clone())));
                r.status = GroupStatus::Unschedulable(s);
                r
            }
            1 => feasible.pop().map_or_else(|| all_failed(info, GroupStatus::Feasible), |(_, r)| r),
            _ => match self.best_placement(profile, &state, info, &feasible) {
                Ok(i) => feasible.swap_remove(i).1,
                Err(s) => all_failed(info, GroupStatus::Error(s)),
            },
        }
    }

    /// Upstream `findBestPlacement`: weighted, normalized PlacementScore totals; the
    /// highest wins, ties by a random draw from the scheduler's seeded RNG.
    fn best_placement(
        &mut self,
        profile: &Profile,
        state: &PodGroupCycleState,
        info: &PodGroupInfo,
        feasible: &[(Arc<Placement>, GroupResult)],
    ) -> Result<usize, Status> {
        let assignments: Vec<PodGroupAssignments> = feasible.iter().map(|(p, r)| assignments(p, r)).collect();
        let mut totals = vec![0i64; feasible.len()];
        for (named, weight) in &profile.placement_score {
            let mut scores = Vec::with_capacity(assignments.len());
            for a in &assignments {
                let s = guard(named.name, "ScorePlacement", || named.plugin.score_placement(state, info, a))
                    .and_then(|r| r)
                    .map_err(|s| s.with_plugin(named.name))?;
                scores.push(PlacementScore { placement: a.placement.name.clone(), score: s });
            }
            let s = guard(named.name, "NormalizePlacementScore", || {
                named.plugin.normalize_placement_score(state, info, &mut scores)
            })
            .unwrap_or_else(|e| e);
            if !s.is_success() {
                return Err(s.with_plugin(named.name));
            }
            for (t, s) in totals.iter_mut().zip(&scores) {
                if !(MIN_PLACEMENT_SCORE..=MAX_PLACEMENT_SCORE).contains(&s.score) {
                    return Err(Status::error(format!(
                        "plugin {:?} returns an invalid score {}, it should in the range of [{MIN_PLACEMENT_SCORE}, {MAX_PLACEMENT_SCORE}] after normalizing",
                        named.name, s.score
                    ))
                    .with_plugin(named.name));
                }
                *t += s.score * weight;
            }
        }
        let mut best = 0;
        let mut best_draw = self.rng.next_u64();
        for i in 1..totals.len() {
            let draw = self.rng.next_u64();
            if (totals[i], draw) > (totals[best], best_draw) {
                best = i;
                best_draw = draw;
            }
        }
        Ok(best)
    }
}

/// Upstream's `PodGroupAssignments` of a feasible placement: its pods with a node.
fn assignments(placement: &Arc<Placement>, r: &GroupResult) -> PodGroupAssignments {
    PodGroupAssignments {
        placement: placement.clone(),
        proposed: r
            .pods
            .iter()
            .filter_map(|pr| Some(ProposedAssignment { pod: pr.pod.clone(), node: pr.node.clone()? }))
            .collect(),
    }
}

/// Each weighted PlacementScore plugin's bound
/// ([`PlacementScorePlugin::max_placement_score`](crate::framework::PlacementScorePlugin::max_placement_score)),
/// or `None` when one has none or a weight that is not positive (a negative weight
/// makes its best the worst; a zero weight leaves its bound out of the totals).
fn placement_bounds(profile: &Profile, state: &PodGroupCycleState, info: &PodGroupInfo) -> Option<Vec<i64>> {
    profile
        .placement_score
        .iter()
        .map(|(named, weight)| {
            if *weight <= 0 {
                return None;
            }
            guard(named.name, "MaxPlacementScore", || named.plugin.max_placement_score(state, info)).ok().flatten()
        })
        .collect()
}

/// Whether `a` reaches every bound. A plugin that fails to score it answers no: the
/// full evaluation then meets the failure where upstream does.
fn reaches_bounds(
    profile: &Profile,
    state: &PodGroupCycleState,
    info: &PodGroupInfo,
    a: &PodGroupAssignments,
    bounds: &[i64],
) -> bool {
    profile.placement_score.iter().zip(bounds).all(|((named, _), &bound)| {
        guard(named.name, "ScorePlacement", || named.plugin.score_placement(state, info, a))
            .is_ok_and(|r| r.is_ok_and(|s| s >= bound))
    })
}

/// Every PlacementGenerate plugin in turn, each refining the placements of the one
/// before (the first refines all nodes); no plugin leaves the one all-nodes placement.
fn generate(
    profile: &Profile,
    state: &mut PodGroupCycleState,
    info: &PodGroupInfo,
    base: &Snapshot,
) -> Result<Vec<Placement>, Status> {
    let mut placements = vec![Placement::all(base)];
    for named in &profile.placement_generate {
        let mut next = Vec::new();
        for parent in &placements {
            let got =
                guard(named.name, "GeneratePlacements", || named.plugin.generate_placements(state, info, base, parent))
                    .and_then(|r| r)
                    .map_err(|s| s.with_plugin(named.name))?;
            next.extend(got);
        }
        placements = next;
    }
    Ok(placements)
}

/// Why no placement was generated, when a topology key explains it.
fn no_placement_diagnosis(info: &PodGroupInfo, base: &Snapshot) -> String {
    match info.pod_group.topology_key() {
        // `contains_key`, not `get_str`: that would pin every node's value (node names
        // for a hostname key).
        Some(key)
            if !crate::model::Symbol::lookup(key)
                .is_some_and(|k| base.nodes().iter().any(|n| n.node().metadata.labels.contains_key(k))) =>
        {
            format!(
                "no placement: no node has the topology label {key:?} of pod group {}/{}",
                info.namespace(),
                info.name()
            )
        }
        Some(key) => format!(
            "no placement: no topology domain of {key:?} is left for pod group {}/{}",
            info.namespace(),
            info.name()
        ),
        None => "no placement".to_owned(),
    }
}

fn all_failed(info: &PodGroupInfo, status: GroupStatus) -> GroupResult {
    let s = match &status {
        GroupStatus::Unschedulable(s) | GroupStatus::Error(s) => s.clone(),
        _ => Status::unschedulable("pod group is unschedulable"),
    };
    let pods = info
        .unscheduled_pods
        .iter()
        .map(|p| super::pod_group::PodResult {
            pod: p.clone(),
            node: None,
            state: None,
            error: Some(super::ScheduleError::Plugin { pod: p.pod.key(), status: s.clone() }),
            permit: None,
            requires_preemption: false,
        })
        .collect();
    GroupResult { status, pods }
}
