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
use crate::plugins::workload_memo::{NodeContributions, WorkloadMemo};
use crate::snapshot::{NodeInfo, PodInfo, Snapshot};

/// `(topology key, value)` -> count.
pub(crate) type PairCounts = AHashMap<(Symbol, Symbol), i64>;

/// One node's share: how many of its pods match all affinity terms, how many match
/// each anti-affinity term, and the node's value of each term's key.
#[derive(Debug, Clone, Default)]
struct Contribution {
    affinity_pods: i64,
    affinity_values: SmallVec<[Option<Symbol>; 2]>,
    anti_pods: SmallVec<[i64; 2]>,
    anti_values: SmallVec<[Option<Symbol>; 2]>,
}

fn matches_all(terms: &[ResolvedTerm], pod: &PodInfo) -> bool {
    !terms.is_empty() && terms.iter().all(|t| t.matches(pod))
}

fn contribution(affinity: &[ResolvedTerm], anti: &[ResolvedTerm], node: &NodeInfo) -> Contribution {
    let labels = &node.node().metadata.labels;
    let mut c = Contribution {
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

#[derive(Debug)]
struct Entry {
    affinity: Arc<[ResolvedTerm]>,
    anti: Arc<[ResolvedTerm]>,
    nodes: NodeContributions<Contribution>,
    affinity_counts: PairCounts,
    anti_counts: PairCounts,
}

/// Adds (`sign` 1) or takes away (-1) one node's contribution.
fn apply_counts(
    (affinity, anti): (&[ResolvedTerm], &[ResolvedTerm]),
    (affinity_counts, anti_counts): (&mut PairCounts, &mut PairCounts),
    c: &Contribution,
    sign: i64,
) {
    for (t, v) in affinity.iter().zip(&c.affinity_values) {
        if let Some(v) = *v {
            add(affinity_counts, (t.topology_key, v), sign * c.affinity_pods);
        }
    }
    for ((t, v), &n) in anti.iter().zip(&c.anti_values).zip(&c.anti_pods) {
        if let Some(v) = *v {
            add(anti_counts, (t.topology_key, v), sign * n);
        }
    }
}

/// A few workloads' required-term counts.
#[derive(Debug, Clone, Default)]
pub(crate) struct TermMemo(WorkloadMemo<Entry>);

impl TermMemo {
    /// Per topology pair: existing pods matching all of `affinity`, and existing pods
    /// matching each term of `anti`, over every node of `snapshot`.
    pub(crate) fn counts(
        &self,
        affinity: &Arc<[ResolvedTerm]>,
        anti: &Arc<[ResolvedTerm]>,
        snapshot: &Snapshot,
    ) -> (PairCounts, PairCounts) {
        self.0.with_entry(
            |e| *e.affinity == **affinity && *e.anti == **anti,
            || Entry {
                affinity: affinity.clone(),
                anti: anti.clone(),
                nodes: NodeContributions::with_capacity(snapshot.len()),
                affinity_counts: PairCounts::new(),
                anti_counts: PairCounts::new(),
            },
            |entry| {
                let terms = (&*entry.affinity, &*entry.anti);
                let (ac, nc) = (&mut entry.affinity_counts, &mut entry.anti_counts);
                entry.nodes.sync(
                    snapshot,
                    |node| contribution(terms.0, terms.1, node),
                    |c, sign| apply_counts(terms, (&mut *ac, &mut *nc), c, sign),
                );
                (entry.affinity_counts.clone(), entry.anti_counts.clone())
            },
        )
    }
}

/// One node's share of the PreScore sums: `(topology key, node's value, summed
/// weight, number of term matches)`.
type ScoreContribution = SmallVec<[(Symbol, Symbol, i64, u32); 2]>;

fn score_contribution(ctx: &ScoreContext, pod: &PodInfo, node: &NodeInfo) -> ScoreContribution {
    let labels = &node.node().metadata.labels;
    let mut out = ScoreContribution::new();
    if labels.is_empty() {
        return out;
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
    out
}

#[derive(Debug)]
struct ScoreEntry {
    ctx: ScoreContext,
    nodes: NodeContributions<ScoreContribution>,
    /// `(key, value)` -> (summed weight, matches); an entry lives while it has matches.
    sums: AHashMap<(Symbol, Symbol), (i64, u32)>,
}

fn apply_sums(sums: &mut AHashMap<(Symbol, Symbol), (i64, u32)>, c: &ScoreContribution, sign: i64) {
    for &(key, value, delta, matches) in c {
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

/// PreScore sums of a few workloads (pods with preferred terms), kept across cycles.
#[derive(Debug, Clone, Default)]
pub(crate) struct ScoreMemo(WorkloadMemo<ScoreEntry>);

impl ScoreMemo {
    /// Upstream PreScore's `topologyScore` over every pod of `snapshot` for a pod with
    /// preferred terms, recounting only nodes whose `NodeInfo` changed since the last
    /// pod with the same `ctx`.
    pub(crate) fn scores(&self, ctx: &ScoreContext, pod: &PodInfo, snapshot: &Snapshot) -> ScoreMap {
        self.0.with_entry(
            |e| e.ctx == *ctx,
            || ScoreEntry {
                ctx: ctx.clone(),
                nodes: NodeContributions::with_capacity(snapshot.len()),
                sums: AHashMap::new(),
            },
            |entry| {
                let (ctx, sums) = (&entry.ctx, &mut entry.sums);
                entry.nodes.sync(
                    snapshot,
                    |node| score_contribution(ctx, pod, node),
                    |c, sign| apply_sums(sums, c, sign),
                );
                score_map(&entry.sums)
            },
        )
    }
}

/// The sums by topology key, then value.
fn score_map(sums: &AHashMap<(Symbol, Symbol), (i64, u32)>) -> ScoreMap {
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
