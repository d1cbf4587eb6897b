//! GpuDomainFragmentation: the PlacementScore plugin preferring the placement that
//! leaves the least fragmented free GPU capacity (see the [module docs](super)).

use std::sync::Arc;

use smallvec::SmallVec;

use super::{Facts, GpuDomainArgs, GpuDomainError, Keys};
use crate::framework::{
    ExtensionPoints, Handle, MAX_PLACEMENT_SCORE, MIN_PLACEMENT_SCORE, PlacementScore, PlacementScorePlugin, Plugin,
    PodGroupAssignments, PodGroupCycleState, PodGroupInfo, Status,
};
use crate::model::Symbol;
use crate::plugins::gpu_share::frag::{free_after, node_frag};
use crate::plugins::gpu_share::{GpuRequest, GpuState, MILLI, TypicalPods};
use crate::plugins::names;
use crate::snapshot::PodInfo;

/// The tie-break's share of a raw score: costs are multiplied by this, and the
/// placement's free GPUs (capped below it) are added.
const TIE_SPAN: i64 = 1 << 20;

/// Scores a feasible placement by minus the fragmentation its assignments add; ties go
/// to the placement with the least free GPUs. Needs [`super::GpuDomainPlacement`] in
/// the same profile (it records what the scorer reads). Beyond upstream.
#[derive(Debug, Clone)]
pub struct GpuDomainFragmentation {
    keys: Keys,
    gpu_state: Option<Arc<GpuState>>,
    typical: Option<Arc<TypicalPods>>,
}

impl GpuDomainFragmentation {
    /// The plugin with `args`; whole GPUs counted by `args.resource_name` and the
    /// group's own pod shapes as the typical workload.
    pub fn new(args: &GpuDomainArgs) -> GpuDomainFragmentation {
        GpuDomainFragmentation { keys: Keys::new(args, None), gpu_state: None, typical: None }
    }

    /// Measures node fragmentation on shared GPUs: free milli per device from `state`
    /// (the GPU-sharing plugins' table), pods' requests from their GPU-share labels.
    #[must_use]
    pub fn with_gpu_state(mut self, state: Arc<GpuState>) -> Self {
        self.gpu_state = Some(state);
        self
    }

    /// Measures node fragmentation against `typical` (FGD's target workload) instead
    /// of the group's own pod shapes.
    #[must_use]
    pub fn with_typical_pods(mut self, typical: Arc<TypicalPods>) -> Self {
        self.typical = Some(typical);
        self
    }

    /// The registry's factory: args from the profile; a [`GpuState`] and
    /// [`TypicalPods`] shared on the handle are used if present.
    pub fn from_config(args: Option<&serde_json::Value>, handle: &Handle) -> Result<Self, GpuDomainError> {
        let args = GpuDomainArgs::from_config(names::GPU_DOMAIN_FRAGMENTATION, args)?;
        let mut p = GpuDomainFragmentation::new(&args);
        if let Some(s) = handle.shared::<GpuState>() {
            p = p.with_gpu_state(s);
        }
        if let Some(t) = handle.shared::<TypicalPods>() {
            p = p.with_typical_pods(t);
        }
        Ok(p)
    }

    /// The pod's GPU request as the node measure counts it.
    fn request(&self, pod: &PodInfo) -> GpuRequest {
        if self.gpu_state.is_some()
            && let Ok(Some(r)) = GpuRequest::from_pod(&pod.pod)
        {
            return r;
        }
        let count = u32::try_from(pod.requests.scalar(self.keys.resource).clamp(0, 64)).unwrap_or(0);
        GpuRequest { count, milli: if count == 0 { 0 } else { MILLI }, models: SmallVec::new() }
    }

    /// The group's pod shapes as FGD typical pods (each pod equally popular).
    fn group_typical(&self, group: &PodGroupInfo) -> TypicalPods {
        let shapes: Vec<(i64, u32, u32)> = group
            .unscheduled_pods
            .iter()
            .map(|p| {
                let r = self.request(p);
                (p.requests.milli_cpu, r.milli, r.count)
            })
            .collect();
        TypicalPods::from_shapes(shapes.iter().map(|&(c, m, n)| (c, m, n, "")), 100.0)
    }

    /// Fragmentation (milli-GPU) the assignments add: per node (FGD), plus per
    /// smallest domain (`free mod demand`).
    fn added_fragmentation(&self, facts: &Facts, group: &PodGroupInfo, a: &PodGroupAssignments) -> f64 {
        let owned;
        let typical = if let Some(t) = &self.typical {
            &**t
        } else {
            owned = self.group_typical(group);
            &owned
        };
        // Pods per touched node, by snapshot position.
        let mut touched: Vec<(usize, SmallVec<[&PodInfo; 2]>)> = Vec::new();
        for p in &a.proposed {
            let Some(&pos) = Symbol::lookup(&p.node).and_then(|n| facts.pos.get(&n)) else { continue };
            match touched.iter_mut().find(|(x, _)| *x == pos) {
                Some((_, v)) => v.push(&p.pod),
                None => touched.push((pos, SmallVec::from_elem(&*p.pod, 1))),
            }
        }
        let mut added = 0.0;
        let mut used_in_cell: Vec<((usize, Symbol), i64)> = Vec::new();
        for (pos, pods) in &touched {
            let mut free: SmallVec<[u32; 8]> = match &self.gpu_state {
                Some(s) => s.node(facts.name[*pos].as_str()).map(|g| g.free).unwrap_or_default(),
                None => SmallVec::new(),
            };
            if free.is_empty() {
                let n = usize::try_from(facts.free[*pos].clamp(0, 64)).unwrap_or(0);
                free = std::iter::repeat_n(MILLI, n).collect();
            }
            let mut cpu = facts.cpu_left[*pos];
            let before = node_frag(typical, facts.model[*pos], cpu, &free);
            let mut gpus = 0;
            for pod in pods {
                let r = self.request(pod);
                if let Some(after) = free_after(&free, &r) {
                    free = after;
                }
                cpu -= pod.requests.milli_cpu;
                gpus += pod.requests.scalar(self.keys.resource).max(0);
            }
            added += node_frag(typical, facts.model[*pos], cpu, &free) - before;
            if let Some(c) = facts.cell[*pos] {
                match used_in_cell.iter_mut().find(|(x, _)| *x == c) {
                    Some((_, u)) => *u += gpus,
                    None => used_in_cell.push((c, gpus)),
                }
            }
        }
        let demand: i64 = group.unscheduled_pods.iter().map(|p| p.requests.scalar(self.keys.resource).max(0)).sum();
        if demand > 0 {
            for (c, used) in used_in_cell {
                let free = facts.cell_free.get(&c).copied().unwrap_or(0);
                let stranded = (free - used).max(0) % demand - free % demand;
                added += (stranded * i64::from(MILLI)) as f64;
            }
        }
        added
    }
}

impl Plugin for GpuDomainFragmentation {
    fn name(&self) -> &str {
        names::GPU_DOMAIN_FRAGMENTATION
    }
    fn register(self: Arc<Self>, points: &mut ExtensionPoints) {
        points.placement_score(self);
    }
}

impl PlacementScorePlugin for GpuDomainFragmentation {
    /// `-(added fragmentation in milli-GPU × 2^20 + the placement's free GPUs)`: a
    /// higher score is less fragmentation, then a smaller domain.
    fn score_placement(
        &self,
        state: &PodGroupCycleState,
        group: &PodGroupInfo,
        assignments: &PodGroupAssignments,
    ) -> Result<i64, Status> {
        let Some(facts) = state.data().read::<Facts>() else {
            return Err(Status::error(format!(
                "{} needs {} in the profile's placementGenerate plugins",
                names::GPU_DOMAIN_FRAGMENTATION,
                names::GPU_DOMAIN_PLACEMENT
            )));
        };
        let added = self.added_fragmentation(facts, group, assignments).round();
        #[expect(clippy::cast_possible_truncation, reason = "clamped to the i64 range first")]
        let cost = added.clamp(-(i64::MAX / TIE_SPAN) as f64, (i64::MAX / TIE_SPAN - 1) as f64) as i64;
        let size: i64 = assignments.placement.nodes.iter().filter_map(|&p| facts.free.get(p)).sum();
        Ok(-(cost * TIE_SPAN + size.clamp(0, TIE_SPAN - 1)))
    }

    /// Min-max over this plugin's scores: the best gets [`MAX_PLACEMENT_SCORE`], the
    /// worst [`MIN_PLACEMENT_SCORE`]; all equal get the maximum.
    fn normalize_placement_score(
        &self,
        _state: &PodGroupCycleState,
        _group: &PodGroupInfo,
        scores: &mut [PlacementScore],
    ) -> Status {
        let (Some(lo), Some(hi)) = (scores.iter().map(|s| s.score).min(), scores.iter().map(|s| s.score).max()) else {
            return Status::SUCCESS;
        };
        let span = i128::from(hi) - i128::from(lo);
        for s in scores {
            s.score = if span == 0 {
                MAX_PLACEMENT_SCORE
            } else {
                let x = (i128::from(s.score) - i128::from(lo)) * i128::from(MAX_PLACEMENT_SCORE - MIN_PLACEMENT_SCORE)
                    / span;
                MIN_PLACEMENT_SCORE + i64::try_from(x).unwrap_or(MAX_PLACEMENT_SCORE)
            };
        }
        Status::SUCCESS
    }
}
