//! The cycle's Score phase: weighted Score + NormalizeScore totals and host
//! selection among the top scores (with the seeded tie-break generator).

use super::batch::RawScores;
#[cfg(feature = "parallel")]
use super::parallel;
use super::{Scheduler, TieBreak};
use crate::framework::runtime;
use crate::framework::{CycleState, MAX_NODE_SCORE, MIN_NODE_SCORE, NodeScore, Profile, Status};
use crate::snapshot::{NodeList, PodInfo, Snapshot};

impl Scheduler {
    /// Runs Score + NormalizeScore for every plugin, accumulating weighted totals.
    /// With `raw` (batch rescoring) the raw scores are kept too, one row per
    /// feasible node.
    pub(super) fn score(
        &mut self,
        profile: &Profile,
        state: &CycleState,
        pod: &PodInfo,
        snap: &Snapshot,
        mut raw: Option<&mut RawScores>,
    ) -> Result<(), Status> {
        let bufs = &mut self.bufs;
        let n = bufs.feasible.len();
        bufs.totals.clear();
        if let Some(raw) = raw.as_deref_mut() {
            raw.plugins = profile.score.len();
            raw.values.clear();
            raw.values.resize(n * raw.plugins, 0);
            raw.skipped.clone_from(&state.skip_score);
        }
        if !profile.has_score_plugins() {
            bufs.totals.resize(n, 1);
            return Ok(());
        }
        bufs.totals.resize(n, 0);
        let nodes = snap.nodes();
        if raw.is_none()
            && let Some(memo) = self.group_memo.as_mut().filter(|m| m.score_on)
        {
            bufs.names.clear();
            bufs.names.extend(bufs.feasible.iter().map(|&i| nodes[i].name()));
            return super::group_score::memo_score(memo, bufs, profile, state, pod, snap);
        }
        let timers = self.timers.as_deref();
        // Plugins that give every node the same score this cycle add it to every
        // total up front (the totals start from their sum) and drop out of the
        // per-node loops; not while raw scores are kept or plugin calls timed.
        let uniform_ok = raw.is_none() && timers.is_none();
        let (base, uniform_err) = active_score_plugins(profile, state, pod, snap, bufs, uniform_ok)?;
        if base != 0 {
            bufs.totals.fill(base);
        }
        #[cfg(feature = "parallel")]
        if let Some(pool) = &self.pool
            && parallel::score_pays(n, bufs.active_score.len(), self.config.parallel_min_work)
        {
            // The rows' names are written by the workers, each into its own piece.
            let rows = parallel::ScoreRows { active: &bufs.active_score, out: &mut bufs.plugin_scores };
            parallel::score_all(pool, profile, state, pod, snap, &bufs.feasible, rows, timers)?;
            for (r, &pi) in bufs.active_score.iter().enumerate() {
                let row = &mut bufs.plugin_scores[r * n..(r + 1) * n];
                finish_plugin(profile, pi, state, pod, row, &mut bufs.totals, raw.as_deref_mut(), timers)?;
            }
            return uniform_err.map_or(Ok(()), Err);
        }
        // One score buffer for every plugin: the names are written once per cycle
        // (straight from the nodes, with no gathered name list between), and each
        // plugin starts from zeros.
        bufs.scores.clear();
        if bufs.active_score.is_empty() {
            return uniform_err.map_or(Ok(()), Err);
        }
        bufs.scores.extend(bufs.feasible.iter().map(|&i| NodeScore { name: nodes[i].name(), score: 0 }));
        for (r, &pi) in bufs.active_score.iter().enumerate() {
            let sp = &profile.score[pi];
            if r > 0 {
                for ns in &mut bufs.scores {
                    ns.score = 0;
                }
            }
            let score_timer = timers.and_then(|t| t.score.get(pi)).map(|h| &**h);
            let nodes = NodeList::new(snap, &bufs.feasible);
            runtime::run_score_plugin(sp, state, pod, nodes, &mut bufs.scores, score_timer)?;
            finish_plugin(profile, pi, state, pod, &mut bufs.scores, &mut bufs.totals, raw.as_deref_mut(), timers)?;
        }
        uniform_err.map_or(Ok(()), Err)
    }

    /// Index (in the snapshot) of the chosen node among the top scores.
    pub(super) fn select_host(&mut self, snap: &Snapshot) -> usize {
        let bufs = &self.bufs;
        let nodes = snap.nodes();
        let Some(&first) = bufs.totals.first() else { return bufs.feasible[0] };
        // Reservoir sampling over the running maximum, as upstream `selectHost`: the
        // generator is drawn on every tie with the running top, so the stream (and
        // the seeded choice) stays upstream's; the top is kept in a local.
        let (mut best, mut top, mut count) = (0, first, 1u64);
        for (k, &t) in bufs.totals.iter().enumerate().skip(1) {
            if t > top {
                best = k;
                top = t;
                count = 1;
            } else if t == top {
                count += 1;
                match self.config.tie_break {
                    TieBreak::Random => {
                        if self.rng.below(count) == 0 {
                            best = k;
                        }
                    }
                    TieBreak::First => {}
                    TieBreak::SmallestName => {
                        if nodes[bufs.feasible[k]].node().name() < nodes[bufs.feasible[best]].node().name() {
                            best = k;
                        }
                    }
                }
            }
        }
        bufs.feasible[best]
    }
}

/// Fills `bufs.active_score` with the Score plugins (by position) this cycle runs
/// node by node: those PreScore did not skip and, when `uniform_ok`, that have no
/// [`ScorePlugin::uniform_score`](crate::framework::ScorePlugin::uniform_score).
/// Returns the weighted sum of the uniform scores (every node's total starts from
/// it; wrapping, as the totals add) and the range error of the first uniform score
/// out of range, which the caller returns after the other plugins ran (upstream
/// checks ranges after every plugin's Score). A panic in `uniform_score` is the
/// plugin's Score error.
fn active_score_plugins(
    profile: &Profile,
    state: &CycleState,
    pod: &PodInfo,
    snap: &Snapshot,
    bufs: &mut super::Buffers,
    uniform_ok: bool,
) -> Result<(i64, Option<Status>), Status> {
    bufs.active_score.clear();
    let mut base = 0i64;
    let mut err = None;
    let nodes = NodeList::new(snap, &bufs.feasible);
    for (pi, sp) in profile.score.iter().enumerate() {
        if state.skips_score(pi) {
            continue;
        }
        if uniform_ok {
            let v = runtime::guard(sp.name, "Score", || sp.plugin.uniform_score(state, pod, nodes))
                .map_err(|s| s.with_plugin(sp.name))?;
            if let Some(v) = v {
                if (MIN_NODE_SCORE..=MAX_NODE_SCORE).contains(&v) {
                    base = base.wrapping_add(v.wrapping_mul(sp.weight));
                } else if err.is_none() {
                    err = Some(runtime::invalid_score(sp, v));
                }
                continue;
            }
        }
        bufs.active_score.push(pi);
    }
    Ok((base, err))
}

/// After plugin `pi`'s Score over every feasible node: keeps its raw scores (batch
/// rescoring), runs its NormalizeScore and adds its weighted scores to `totals`
/// (upstream `RunScorePlugins`, `pkg/scheduler/framework/runtime/framework.go`).
#[expect(clippy::too_many_arguments, reason = "internal; the phase's buffers")]
fn finish_plugin(
    profile: &Profile,
    pi: usize,
    state: &CycleState,
    pod: &PodInfo,
    scores: &mut [NodeScore],
    totals: &mut [i64],
    raw: Option<&mut RawScores>,
    timers: Option<&crate::framework::metrics::ProfileTimers>,
) -> Result<(), Status> {
    let sp = &profile.score[pi];
    if let Some(raw) = raw {
        let p = raw.plugins;
        for (k, ns) in scores.iter().enumerate() {
            raw.values[k * p + pi] = ns.score;
        }
    }
    let norm_timer = timers.and_then(|t| t.normalize.get(pi)).map(|h| &**h);
    runtime::run_normalize_unchecked(sp, state, pod, scores, norm_timer)?;
    runtime::add_weighted_scores(sp, scores, totals)
}
