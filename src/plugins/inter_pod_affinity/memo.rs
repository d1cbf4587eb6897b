//! The incoming pod's required-term counts carried across cycles, so PreFilter
//! recounts only nodes that changed since the last pod with the same terms. This
//! is schedkit's own addition; the counts are exactly upstream
//! `getIncomingAffinityAntiAffinityCounts`'s.
//!
//! As in PodTopologySpread's memo, a node's `Arc<NodeInfo>` identity says whether
//! its pods or labels may have changed; the memo keeps a clone of each `Arc` it
//! counted.

use std::sync::Arc;

use ahash::AHashMap;
use parking_lot::Mutex;
use smallvec::SmallVec;

use super::scoring::{ScoreContext, ScoreMap};
use super::terms::ResolvedTerm;
use crate::model::Symbol;
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
    nodes: Vec<(Arc<NodeInfo>, Contribution)>,
    affinity_counts: PairCounts,
    anti_counts: PairCounts,
    last_used: u64,
}

impl Entry {
    fn apply(&mut self, c: &Contribution, sign: i64) {
        for (t, v) in self.affinity.iter().zip(&c.affinity_values) {
            if let Some(v) = *v {
                add(&mut self.affinity_counts, (t.topology_key, v), sign * c.affinity_pods);
            }
        }
        for ((t, v), &n) in self.anti.iter().zip(&c.anti_values).zip(&c.anti_pods) {
            if let Some(v) = *v {
                add(&mut self.anti_counts, (t.topology_key, v), sign * n);
            }
        }
    }
}

/// A few workloads' counts (least recently used evicted first).
#[derive(Default)]
pub(crate) struct TermMemo {
    entries: Mutex<(u64, Vec<Entry>)>,
}

impl std::fmt::Debug for TermMemo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TermMemo").field("workloads", &self.entries.lock().1.len()).finish()
    }
}

const CAPACITY: usize = 4;

impl Clone for TermMemo {
    /// A clone starts empty (the counts are a cache, not state).
    fn clone(&self) -> Self {
        TermMemo::default()
    }
}

impl TermMemo {
    /// Per topology pair: existing pods matching all of `affinity`, and existing pods
    /// matching each term of `anti`, over every node of `snapshot`.
    pub(crate) fn counts(
        &self,
        affinity: &Arc<[ResolvedTerm]>,
        anti: &Arc<[ResolvedTerm]>,
        snapshot: &Snapshot,
    ) -> (PairCounts, PairCounts) {
        let mut guard = self.entries.lock();
        let (clock, entries) = &mut *guard;
        *clock += 1;
        let idx = if let Some(i) = entries.iter().position(|e| *e.affinity == **affinity && *e.anti == **anti) {
            i
        } else {
            if entries.len() >= CAPACITY
                && let Some(lru) = entries.iter().enumerate().min_by_key(|(_, e)| e.last_used).map(|(i, _)| i)
            {
                entries.swap_remove(lru);
            }
            entries.push(Entry {
                affinity: affinity.clone(),
                anti: anti.clone(),
                nodes: Vec::with_capacity(snapshot.len()),
                affinity_counts: PairCounts::new(),
                anti_counts: PairCounts::new(),
                last_used: 0,
            });
            entries.len() - 1
        };
        let entry = &mut entries[idx];
        entry.last_used = *clock;
        let nodes = snapshot.nodes();
        while entry.nodes.len() > nodes.len() {
            if let Some((_, old)) = entry.nodes.pop() {
                entry.apply(&old, -1);
            }
        }
        for (i, node) in nodes.iter().enumerate() {
            if let Some((cached, old)) = entry.nodes.get_mut(i) {
                if Arc::ptr_eq(cached, node) {
                    continue;
                }
                let old = std::mem::take(old);
                entry.apply(&old, -1);
            }
            let new = contribution(&entry.affinity, &entry.anti, node);
            entry.apply(&new, 1);
            if i < entry.nodes.len() {
                entry.nodes[i] = (node.clone(), new);
            } else {
                entry.nodes.push((node.clone(), new));
            }
        }
        (entry.affinity_counts.clone(), entry.anti_counts.clone())
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
    nodes: Vec<(Arc<NodeInfo>, ScoreContribution)>,
    /// `(key, value)` -> (summed weight, matches); an entry lives while it has matches.
    sums: AHashMap<(Symbol, Symbol), (i64, u32)>,
    last_used: u64,
}

impl ScoreEntry {
    fn apply(&mut self, c: &ScoreContribution, sign: i64) {
        for &(key, value, delta, matches) in c {
            let e = self.sums.entry((key, value)).or_insert((0, 0));
            e.0 += sign * delta;
            if sign > 0 {
                e.1 += matches;
            } else {
                e.1 = e.1.saturating_sub(matches);
                if e.1 == 0 {
                    self.sums.remove(&(key, value));
                }
            }
        }
    }
}

/// PreScore sums of a few workloads (pods with preferred terms), kept across cycles.
#[derive(Default)]
pub(crate) struct ScoreMemo {
    entries: Mutex<(u64, Vec<ScoreEntry>)>,
}

impl std::fmt::Debug for ScoreMemo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScoreMemo").field("workloads", &self.entries.lock().1.len()).finish()
    }
}

impl Clone for ScoreMemo {
    /// A clone starts empty (the sums are a cache, not state).
    fn clone(&self) -> Self {
        ScoreMemo::default()
    }
}

impl ScoreMemo {
    /// Upstream PreScore's `topologyScore` over every pod of `snapshot` for a pod with
    /// preferred terms, recounting only nodes whose `NodeInfo` changed since the last
    /// pod with the same `ctx`.
    pub(crate) fn scores(&self, ctx: &ScoreContext, pod: &PodInfo, snapshot: &Snapshot) -> ScoreMap {
        let mut guard = self.entries.lock();
        let (clock, entries) = &mut *guard;
        *clock += 1;
        let idx = if let Some(i) = entries.iter().position(|e| e.ctx == *ctx) {
            i
        } else {
            if entries.len() >= CAPACITY
                && let Some(lru) = entries.iter().enumerate().min_by_key(|(_, e)| e.last_used).map(|(i, _)| i)
            {
                entries.swap_remove(lru);
            }
            entries.push(ScoreEntry {
                ctx: ctx.clone(),
                nodes: Vec::with_capacity(snapshot.len()),
                sums: AHashMap::new(),
                last_used: 0,
            });
            entries.len() - 1
        };
        let entry = &mut entries[idx];
        entry.last_used = *clock;
        let nodes = snapshot.nodes();
        while entry.nodes.len() > nodes.len() {
            if let Some((_, old)) = entry.nodes.pop() {
                entry.apply(&old, -1);
            }
        }
        for (i, node) in nodes.iter().enumerate() {
            if let Some((cached, old)) = entry.nodes.get_mut(i) {
                if Arc::ptr_eq(cached, node) {
                    continue;
                }
                let old = std::mem::take(old);
                entry.apply(&old, -1);
            }
            let new = score_contribution(&entry.ctx, pod, node);
            entry.apply(&new, 1);
            if i < entry.nodes.len() {
                entry.nodes[i] = (node.clone(), new);
            } else {
                entry.nodes.push((node.clone(), new));
            }
        }
        let mut out = ScoreMap::default();
        for (&(key, value), &(sum, _)) in &entry.sums {
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
}
