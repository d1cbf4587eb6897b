//! Candidates (nodes where preemption would make the pod fit) and upstream's choice
//! among them.

use std::sync::Arc;

use super::{Victims, pod_start_time};
use crate::model::Symbol;
use crate::snapshot::PodInfo;

/// A node where preemption would make the pod fit.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// Node name.
    pub node: Symbol,
    /// Position in the snapshot.
    pub node_index: usize,
    /// What would be evicted.
    pub victims: Victims,
}

/// Upstream `pickOneNodeForPreemption`: the candidate (by position) with, in order,
/// the fewest PDB violations, the lowest highest-victim priority, the smallest sum
/// of victim priorities (each shifted by 2^31 so negative priorities count), the
/// fewest victims, the latest earliest-start among the highest-priority victims;
/// then the first. Upstream's last tie-break is Go map order (random); schedkit's is
/// the candidates' order, so results are reproducible.
pub fn pick_one_node_for_preemption(candidates: &[Candidate]) -> Option<usize> {
    if candidates.is_empty() {
        return None;
    }
    let score_fns: [&dyn Fn(&Candidate) -> i128; 5] = [
        &|c| -(c.victims.num_pdb_violations as i128),
        &|c| -i128::from(c.victims.pods.first().map_or(i32::MIN, |p| p.priority())),
        &|c| -c.victims.pods.iter().map(|p| i128::from(p.priority()) + (i128::from(i32::MAX) + 1)).sum::<i128>(),
        &|c| -(c.victims.pods.len() as i128),
        // Nanoseconds, as upstream's UnixNano; `as` saturates (no start = latest).
        &|c| (earliest_start_of_highest_priority(&c.victims.pods) * 1e9) as i128,
    ];
    let mut pool: Vec<usize> = (0..candidates.len()).collect();
    for f in score_fns {
        let mut best = i128::MIN;
        let mut selected = Vec::new();
        for &i in &pool {
            let s = f(&candidates[i]);
            if s > best {
                best = s;
                selected.clear();
            }
            if s == best {
                selected.push(i);
            }
        }
        if selected.len() == 1 {
            return Some(selected[0]);
        }
        if !selected.is_empty() {
            pool = selected;
        }
    }
    pool.first().copied()
}

/// Upstream `util.GetEarliestPodStartTime`: the earliest start among the victims of
/// the highest priority (`-inf` with no victims, so such a node never wins on it).
fn earliest_start_of_highest_priority(pods: &[Arc<PodInfo>]) -> f64 {
    let Some(first) = pods.first() else { return f64::NEG_INFINITY };
    let mut max_p = first.priority();
    let mut earliest = pod_start_time(first);
    for p in pods {
        let pr = p.priority();
        if pr == max_p {
            earliest = earliest.min(pod_start_time(p));
        } else if pr > max_p {
            max_p = pr;
            earliest = pod_start_time(p);
        }
    }
    earliest
}
