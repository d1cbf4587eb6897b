//! The incoming pod's required-term counts and PreScore sums carried across cycles
//! (see [`crate::plugins::workload_memo`]), so PreFilter and PreScore recount only
//! nodes that changed since the last pod with the same terms; the results are
//! exactly upstream `getIncomingAffinityAntiAffinityCounts`' and PreScore's.

use std::sync::Arc;

use ahash::AHashMap;
use smallvec::SmallVec;

use super::scoring::{ScoreContext, ScoreMap};
use super::terms::ResolvedTerm;
use crate::model::Symbol;
use crate::plugins::workload_memo::{Contribution, WorkloadMemo};
use crate::snapshot::{NodeInfo, PodInfo, Snapshot};

/// `(topology key, value)` -> count.
pub(crate) type PairCounts = AHashMap<(Symbol, Symbol), i64>;

/// The incoming pod's required terms: pods with equal terms share the counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Terms {
    affinity: Arc<[ResolvedTerm]>,
    anti: Arc<[ResolvedTerm]>,
}

/// One node's share: how many of its pods match all affinity terms, how many match
/// each anti-affinity term, and the node's value of each term's key.
#[derive(Debug, Clone, Default)]
pub(crate) struct TermShare {
    affinity_pods: i64,
    affinity_values: SmallVec<[Option<Symbol>; 2]>,
    anti_pods: SmallVec<[i64; 2]>,
    anti_values: SmallVec<[Option<Symbol>; 2]>,
}

fn matches_all(terms: &[ResolvedTerm], pod: &PodInfo) -> bool {
    !terms.is_empty() && terms.iter().all(|t| t.matches(pod))
}

impl TermShare {
    fn new(affinity: &[ResolvedTerm], anti: &[ResolvedTerm], node: &NodeInfo) -> Self {
        let labels = &node.node().metadata.labels;
        let mut c = TermShare {
            affinity_pods: 0,
            affinity_values: affinity.iter().map(|t| labels.get(t.topology_key)).collect(),
            anti_pods: anti.iter().map(|_| 0).collect(),
            anti_values: anti.iter().map(|t| labels.get(t.topology_key)).collect(),
        };
        for p in node.pods() {
            if matches_all(affinity, p) {
                c.affinity_pods += 1;
            }
            for (j, t) in anti.iter().enumerate() {
                if t.matches(p) {
                    c.anti_pods[j] += 1;
                }
            }
        }
        c
    }

    /// Adds (`sign` 1) or takes away (-1) this share.
    fn apply(&self, terms: &Terms, (affinity_counts, anti_counts): &mut (PairCounts, PairCounts), sign: i64) {
        for (t, v) in terms.affinity.iter().zip(&self.affinity_values) {
            if let Some(v) = *v {
                add(affinity_counts, (t.topology_key, v), sign * self.affinity_pods);
            }
        }
        for ((t, v), &n) in terms.anti.iter().zip(&self.anti_values).zip(&self.anti_pods) {
            if let Some(v) = *v {
                add(anti_counts, (t.topology_key, v), sign * n);
            }
        }
    }
}

fn add(map: &mut PairCounts, key: (Symbol, Symbol), delta: i64) {
    if delta == 0 {
        return;
    }
    let n = map.entry(key).or_insert(0);
    *n += delta;
    if *n == 0 {
        map.remove(&key);
    }
}

impl Contribution for TermShare {
    type Key = Terms;
    /// Affinity counts, anti-affinity counts.
    type Totals = (PairCounts, PairCounts);

    fn empty_totals(_key: &Terms) -> Self::Totals {
        (PairCounts::new(), PairCounts::new())
    }

    fn add_to(&self, key: &Terms, totals: &mut Self::Totals) {
        self.apply(key, totals, 1);
    }

    fn sub_from(&self, key: &Terms, totals: &mut Self::Totals) {
        self.apply(key, totals, -1);
    }
}

/// A few workloads' required-term counts.
pub(crate) type TermMemo = WorkloadMemo<TermShare>;

impl TermMemo {
    /// Per topology pair: existing pods matching all of `affinity`, and existing pods
    /// matching each term of `anti`, over every node of `snapshot`.
    pub(crate) fn counts(
        &self,
        affinity: &Arc<[ResolvedTerm]>,
        anti: &Arc<[ResolvedTerm]>,
        snapshot: &Snapshot,
    ) -> (PairCounts, PairCounts) {
        let key = Terms { affinity: affinity.clone(), anti: anti.clone() };
        self.with_totals(&key, snapshot, |node| TermShare::new(affinity, anti, node), Clone::clone)
    }
}

/// `(key, value)` -> (summed weight, matches); an entry lives while it has matches.
type Sums = AHashMap<(Symbol, Symbol), (i64, u32)>;

/// One node's share of the PreScore sums: `(topology key, node's value, summed
/// weight, number of term matches)`.
#[derive(Debug, Default)]
pub(crate) struct ScoreShare(SmallVec<[(Symbol, Symbol, i64, u32); 2]>);

impl ScoreShare {
    fn new(ctx: &ScoreContext, pod: &PodInfo, node: &NodeInfo) -> Self {
        let labels = &node.node().metadata.labels;
        let mut out: SmallVec<[(Symbol, Symbol, i64, u32); 2]> = SmallVec::new();
        if labels.is_empty() {
            return ScoreShare(out);
        }
        for existing in node.pods() {
            ctx.process(pod, existing, |key, delta| {
                let Some(value) = labels.get(key) else { return };
                match out.iter_mut().find(|e| e.0 == key) {
                    Some(e) => {
                        e.2 += delta;
                        e.3 += 1;
                    }
                    None => out.push((key, value, delta, 1)),
                }
            });
        }
        ScoreShare(out)
    }

    fn apply(&self, sums: &mut Sums, sign: i64) {
        for &(key, value, delta, matches) in &self.0 {
            let e = sums.entry((key, value)).or_insert((0, 0));
            e.0 += sign * delta;
            if sign > 0 {
                e.1 += matches;
            } else {
                e.1 = e.1.saturating_sub(matches);
                if e.1 == 0 {
                    sums.remove(&(key, value));
                }
            }
        }
    }
}

impl Contribution for ScoreShare {
    type Key = ScoreContext;
    type Totals = Sums;

    fn empty_totals(_key: &ScoreContext) -> Sums {
        Sums::new()
    }

    fn add_to(&self, _key: &ScoreContext, sums: &mut Sums) {
        self.apply(sums, 1);
    }

    fn sub_from(&self, _key: &ScoreContext, sums: &mut Sums) {
        self.apply(sums, -1);
    }
}

/// PreScore sums of a few workloads (pods with preferred terms), kept across cycles.
pub(crate) type ScoreMemo = WorkloadMemo<ScoreShare>;

impl ScoreMemo {
    /// Upstream PreScore's `topologyScore` over every pod of `snapshot` for a pod with
    /// preferred terms, recounting only nodes whose `NodeInfo` changed since the last
    /// pod with the same `ctx`.
    pub(crate) fn scores(&self, ctx: &ScoreContext, pod: &PodInfo, snapshot: &Snapshot) -> ScoreMap {
        self.with_totals(ctx, snapshot, |node| ScoreShare::new(ctx, pod, node), score_map)
    }
}

/// The sums by topology key, then value.
fn score_map(sums: &Sums) -> ScoreMap {
    let mut out = ScoreMap::default();
    for (&(key, value), &(sum, _)) in sums {
        let i = if let Some(i) = out.0.iter().position(|(k, _)| *k == key) {
            i
        } else {
            out.0.push((key, AHashMap::new()));
            out.0.len() - 1
        };
        out.0[i].1.insert(value, sum);
    }
    out
}
