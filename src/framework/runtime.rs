//! Running the plugins of one extension point, with panic isolation
//! (upstream `pkg/scheduler/framework/runtime/framework.go`).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Duration;

use super::metrics::{PointTimers, timed};
use super::scheduler_metrics::PluginTimer;
use super::waiting_pods::check_timeout;
use smallvec::SmallVec;

use super::{
    Code, CycleState, FilterPlugin, MAX_NODE_SCORE, MIN_NODE_SCORE, NodeScore, NodeToStatus, PermitDecision,
    PostFilterResult, PreFilterResult, Profile, Status, WeightedScore,
};
use crate::snapshot::{NodeInfo, NodeList, PodInfo, Snapshot};

/// Runs one plugin call; a panic becomes an `Error` status naming the plugin.
#[inline]
pub(crate) fn guard<R>(plugin: &'static str, point: &'static str, f: impl FnOnce() -> R) -> Result<R, Status> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|payload| panic_status(plugin, point, payload.as_ref()))
}

/// The `Error` status for a plugin that panicked with `payload`.
pub(crate) fn panic_status(plugin: &'static str, point: &'static str, payload: &(dyn std::any::Any + Send)) -> Status {
    let msg = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "non-string panic payload".to_owned());
    Status::error(format!("plugin {plugin} panicked in {point}: {msg}")).with_plugin(plugin)
}

fn flatten(plugin: &'static str, point: &'static str, f: impl FnOnce() -> Status) -> Status {
    guard(plugin, point, f).unwrap_or_else(|s| s)
}

/// Plugin names as upstream prints `sets.List(names)` with `%v`: sorted, space
/// separated, in brackets (`[NodeAffinity NodeName]`).
pub(crate) fn go_string_list(names: &[&'static str]) -> String {
    let mut sorted = names.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    format!("[{}]", sorted.join(" "))
}

/// What PreFilter decided when it let the pod go on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PreFilterOutcome {
    /// The intersection of the plugins' node narrowings.
    pub result: PreFilterResult,
    /// The plugins that narrowed the node set (upstream names them in the status
    /// of the nodes left out).
    pub narrowing_plugins: Vec<&'static str>,
}

/// PreFilter, as upstream `RunPreFilterPlugins`: Skip marks the plugin's Filter
/// skipped; `UnschedulableAndUnresolvable` stops at once; `Unschedulable` lets the
/// remaining plugins run (so their state exists for preemption) and is returned at
/// the end; an empty intersection of narrowings is `UnschedulableAndUnresolvable`.
pub(crate) fn run_pre_filter(
    profile: &Profile,
    state: &mut CycleState,
    pod: &PodInfo,
    snapshot: &Snapshot,
) -> Result<PreFilterOutcome, Status> {
    run_pre_filter_timed(profile, state, pod, snapshot, None)
}

/// The timer of plugin `i`, when timing.
#[inline]
fn timer(t: Option<&PointTimers>, i: usize) -> Option<&PluginTimer> {
    t.and_then(|t| t.get(i)).map(|h| &**h)
}

/// [`run_pre_filter`], timing each plugin into `t` (by position) when given.
pub(crate) fn run_pre_filter_timed(
    profile: &Profile,
    state: &mut CycleState,
    pod: &PodInfo,
    snapshot: &Snapshot,
    t: Option<&PointTimers>,
) -> Result<PreFilterOutcome, Status> {
    let mut result = PreFilterResult::default();
    let mut narrowing_plugins = Vec::new();
    let mut rejected: Option<Status> = None;
    for (i, p) in profile.pre_filter.iter().enumerate() {
        let (r, s) = timed(
            timer(t, i),
            || guard(p.name, "PreFilter", || p.plugin.pre_filter(state, pod, snapshot)),
            |r| r.as_ref().map_or_else(Status::code, |(_, s)| s.code()),
        )
        .unwrap_or_else(|s| (None, s));
        if s.is_skip() {
            if let Some(f) = profile.pre_filter_to_filter[i] {
                state.skip_filter.insert(f);
            }
            continue;
        }
        match s.code() {
            Code::Success => {}
            Code::UnschedulableAndUnresolvable => return Err(s.with_plugin(p.name)),
            Code::Unschedulable | Code::Pending => {
                rejected.get_or_insert(s.with_plugin(p.name));
                continue;
            }
            _ => {
                return Err(Status::error(format!("running PreFilter plugin {:?}: {}", p.name, s.message()))
                    .with_plugin(p.name));
            }
        }
        if let Some(r) = r {
            if !r.all_nodes() {
                narrowing_plugins.push(p.name);
            }
            result = result.merge(r);
            result.resolve(snapshot);
            if result.is_empty() {
                let msg = if let [one] = narrowing_plugins.as_slice() {
                    format!("node(s) didn't satisfy plugin {one}")
                } else {
                    format!("node(s) didn't satisfy plugin(s) {} simultaneously", go_string_list(&narrowing_plugins))
                };
                return Err(Status::unresolvable(msg));
            }
        }
    }
    match rejected {
        Some(s) => Err(s),
        None => Ok(PreFilterOutcome { result, narrowing_plugins }),
    }
}

/// Filter on one node: the first failing plugin's status, or success. Not panic
/// isolated per call (that costs more than the trivial filters it wraps): the
/// caller runs a whole batch of nodes under one [`FilterGuard`], and `current`
/// records which plugin is running so a panic can be blamed on it. Always inlined:
/// it runs once per node, and its call overhead was a tenth of a trivial Filter pass.
#[expect(clippy::inline_always, reason = "measured: plain #[inline] left it an out-of-line call per node")]
#[inline(always)]
pub(crate) fn run_filters(
    profile: &Profile,
    state: &CycleState,
    pod: &PodInfo,
    node: &NodeInfo,
    current: &std::cell::Cell<usize>,
) -> Status {
    let skips = !state.skip_filter.is_empty();
    for (i, p) in profile.filter.iter().enumerate() {
        if skips && state.skips_filter(i) {
            continue;
        }
        current.set(i);
        let s = p.plugin.filter(state, pod, node);
        if !s.is_success() {
            return filter_failure(s, p.name);
        }
    }
    Status::SUCCESS
}

/// The Filter plugins one cycle runs, with PreFilter's Skips already removed and
/// the `Arc`s resolved: built once per cycle so the per-node loop tests no skip set.
pub(crate) struct ActiveFilters<'a>(SmallVec<[(usize, &'a dyn FilterPlugin, &'static str); 12]>);

impl<'a> ActiveFilters<'a> {
    pub(crate) fn new(profile: &'a Profile, state: &CycleState) -> Self {
        ActiveFilters(
            profile
                .filter
                .iter()
                .enumerate()
                .filter(|&(i, _)| !state.skips_filter(i))
                .map(|(i, p)| (i, &*p.plugin, p.name))
                .collect(),
        )
    }

    /// The active plugins in profile order: `(position in the profile's Filter
    /// list, plugin, name)`.
    #[inline]
    pub(crate) fn plugins(&self) -> &[(usize, &'a dyn FilterPlugin, &'static str)] {
        &self.0
    }
}

/// [`run_filters`] over a cycle's [`ActiveFilters`]: the serial and parallel
/// Filter loops' path, inlined into them like [`run_filters`].
#[expect(clippy::inline_always, reason = "measured: runs once per node, like run_filters")]
#[inline(always)]
pub(crate) fn run_active_filters(
    active: &ActiveFilters<'_>,
    state: &CycleState,
    pod: &PodInfo,
    node: &NodeInfo,
    current: &std::cell::Cell<usize>,
) -> Status {
    for &(i, plugin, name) in &active.0 {
        current.set(i);
        let s = plugin.filter(state, pod, node);
        if !s.is_success() {
            return filter_failure(s, name);
        }
    }
    Status::SUCCESS
}

/// A Filter plugin's non-success answer, attributed to it; codes Filter may not
/// return become errors. Not cold: rejections are common (most nodes of a full
/// cluster).
#[inline]
pub(crate) fn filter_failure(s: Status, name: &'static str) -> Status {
    let s = if s.is_rejected() || s.code() == Code::Error { s } else { bad_filter_code(name, &s) };
    s.with_plugin(name)
}

/// The `Error` for a Filter that returned a code Filter may not return (kept out of
/// line so [`run_filters`] stays small).
#[cold]
#[inline(never)]
fn bad_filter_code(plugin: &str, s: &Status) -> Status {
    Status::error(format!("plugin {plugin} returned {} from Filter", s.code().as_str()))
}

/// [`run_filters`], timing each plugin call into `t` (by position): the latency
/// recorder's path, taken only in sampled cycles.
#[inline]
pub(crate) fn run_filters_timed(
    profile: &Profile,
    state: &CycleState,
    pod: &PodInfo,
    node: &NodeInfo,
    current: &std::cell::Cell<usize>,
    t: &PointTimers,
) -> Status {
    for (i, p) in profile.filter.iter().enumerate() {
        if state.skips_filter(i) {
            continue;
        }
        current.set(i);
        let s = timed(timer(Some(t), i), || p.plugin.filter(state, pod, node), Status::code);
        if !s.is_success() {
            return filter_failure(s, p.name);
        }
    }
    Status::SUCCESS
}

/// Runs a batch of Filter calls under one panic guard. On a panic, returns the
/// `Error` status naming the plugin that was running.
pub(crate) struct FilterGuard<'a> {
    profile: &'a Profile,
    /// Index of the Filter plugin running now.
    pub current: std::cell::Cell<usize>,
}

impl<'a> FilterGuard<'a> {
    pub(crate) fn new(profile: &'a Profile) -> Self {
        FilterGuard { profile, current: std::cell::Cell::new(0) }
    }

    // `inline`: the Filter loop runs inside `f`; kept in its caller's body (as LLVM
    // chose on its own until the caller grew) it runs ~11 fewer instructions per node.
    #[inline]
    pub(crate) fn run<R>(&self, f: impl FnOnce(&std::cell::Cell<usize>) -> R) -> Result<R, Status> {
        catch_unwind(AssertUnwindSafe(|| f(&self.current))).map_err(|payload| {
            let name = self.profile.filter.get(self.current.get()).map_or("unknown", |p| p.name);
            panic_status(name, "Filter", payload.as_ref())
        })
    }
}

/// PostFilter, as upstream `RunPostFilterPlugins`
/// (`pkg/scheduler/framework/runtime/framework.go`): a Success ends the phase with its
/// result; an UnschedulableAndUnresolvable ends it too, with that plugin named; any
/// other code that is not a rejection is an Error naming the plugin. Unschedulable (or
/// Pending) lets the next plugin try: the answer is then Unschedulable with every
/// plugin's reasons in order (so a default profile says "no new claims to deallocate,
/// preemption: ..."), the first rejecting plugin named, and the last result a
/// rejecting plugin returned.
pub(crate) fn run_post_filter(
    profile: &Profile,
    state: &CycleState,
    pod: &PodInfo,
    snapshot: &Snapshot,
    statuses: &NodeToStatus,
    t: Option<&PointTimers>,
) -> (Option<PostFilterResult>, Status) {
    let mut result = None;
    let mut reasons: Vec<crate::framework::Reason> = Vec::new();
    let mut rejector: Option<&'static str> = None;
    for (i, p) in profile.post_filter.iter().enumerate() {
        let (r, s) = timed(
            timer(t, i),
            || guard(p.name, "PostFilter", || p.plugin.post_filter(state, pod, snapshot, statuses)),
            |r| r.as_ref().map_or_else(Status::code, |(_, s)| s.code()),
        )
        .unwrap_or_else(|s| (None, s));
        if s.is_success() || s.code() == Code::UnschedulableAndUnresolvable {
            return (r, s.with_plugin(p.name));
        }
        if !s.is_rejected() {
            // An Error keeps the plugin's result (a failed eviction keeps the pod's
            // nomination, which schedkit's preemption relies on; upstream drops it).
            if s.code() == Code::Error {
                return (r, s.with_plugin(p.name));
            }
            return (None, Status::error(s.message()).with_plugin(p.name));
        }
        if r.is_some() {
            result = r;
        }
        reasons.extend(s.reasons().iter().cloned());
        rejector.get_or_insert(p.name);
    }
    let s = Status::with_reason_list(Code::Unschedulable, reasons);
    let s = match rejector {
        Some(name) => s.with_plugin(name),
        None => s,
    };
    (result, s)
}

/// PreScore; Skip marks the plugin's Score skipped.
pub(crate) fn run_pre_score(
    profile: &Profile,
    state: &mut CycleState,
    pod: &PodInfo,
    nodes: NodeList<'_>,
    t: Option<&PointTimers>,
) -> Status {
    for (i, p) in profile.pre_score.iter().enumerate() {
        let s =
            timed(timer(t, i), || flatten(p.name, "PreScore", || p.plugin.pre_score(state, pod, nodes)), Status::code);
        if s.is_skip() {
            if let Some(sc) = profile.pre_score_to_score[i] {
                state.skip_score.insert(sc);
            }
            continue;
        }
        if !s.is_success() {
            return s.with_plugin(p.name);
        }
    }
    Status::SUCCESS
}

/// Score of one plugin over `nodes` into `scores` (same order), on this thread,
/// panic isolated: the serial half of upstream `RunScorePlugins`.
pub(crate) fn run_score_plugin(
    sp: &WeightedScore,
    state: &CycleState,
    pod: &PodInfo,
    nodes: NodeList<'_>,
    scores: &mut [NodeScore],
    t: Option<&PluginTimer>,
) -> Result<(), Status> {
    timed(t, || guard(sp.name, "Score", || sp.plugin.score_nodes(state, pod, nodes, scores)), score_code)
        .and_then(|r| r)
        .map_err(|s| s.with_plugin(sp.name))
}

/// The `status` label of a batched Score call: `Success`, or the failing code.
pub(crate) fn score_code(r: &Result<Result<(), Status>, Status>) -> Code {
    match r {
        Ok(Ok(())) => Code::Success,
        Ok(Err(s)) | Err(s) => s.code(),
    }
}

/// NormalizeScore of one plugin, then upstream's range check: every score must
/// be in `MIN_NODE_SCORE..=MAX_NODE_SCORE` afterwards, or the cycle errors with
/// upstream's message (`RunScorePlugins`).
pub(crate) fn run_normalize(
    sp: &WeightedScore,
    state: &CycleState,
    pod: &PodInfo,
    scores: &mut [NodeScore],
    t: Option<&PluginTimer>,
) -> Result<(), Status> {
    run_normalize_unchecked(sp, state, pod, scores, t)?;
    match scores.iter().find(|ns| !(MIN_NODE_SCORE..=MAX_NODE_SCORE).contains(&ns.score)) {
        Some(ns) => Err(invalid_score(sp, ns.score)),
        None => Ok(()),
    }
}

/// NormalizeScore of one plugin without the range check: the cycle's Score phase
/// checks the range while it adds the weighted scores ([`add_weighted_scores`]).
pub(crate) fn run_normalize_unchecked(
    sp: &WeightedScore,
    state: &CycleState,
    pod: &PodInfo,
    scores: &mut [NodeScore],
    t: Option<&PluginTimer>,
) -> Result<(), Status> {
    let s = timed(
        t,
        || guard(sp.name, "NormalizeScore", || sp.plugin.normalize(state, pod, scores)),
        |r| r.as_ref().map_or_else(Status::code, Status::code),
    )
    .unwrap_or_else(|s| s);
    if s.is_success() { Ok(()) } else { Err(s.with_plugin(sp.name)) }
}

/// Adds each normalized score times the plugin's weight to `totals` (same order),
/// checking upstream's range in the same pass: the error is [`run_normalize`]'s,
/// for the first score out of range (then `totals` is garbage, and the caller
/// drops it with the cycle).
pub(crate) fn add_weighted_scores(sp: &WeightedScore, scores: &[NodeScore], totals: &mut [i64]) -> Result<(), Status> {
    /// Adds `weighted(score)` to each total and returns the largest score read as
    /// unsigned: one compare-and-select per score instead of a range test, and four
    /// scores per loop step (the loop was ~10 instructions per score).
    #[expect(clippy::inline_always, reason = "the weighting closure must inline into the loop")]
    #[inline(always)]
    fn add(scores: &[NodeScore], totals: &mut [i64], weighted: impl Fn(i64) -> i64) -> u64 {
        let len = scores.len().min(totals.len());
        let (scores, totals) = (&scores[..len], &mut totals[..len]);
        let mut hi = 0u64;
        let mut ts = totals.chunks_exact_mut(4);
        let mut ss = scores.chunks_exact(4);
        for (t, s) in (&mut ts).zip(&mut ss) {
            let (s0, s1, s2, s3) = (s[0].score, s[1].score, s[2].score, s[3].score);
            // MIN_NODE_SCORE is 0: a negative score reads as a huge unsigned one.
            hi = hi.max(s0 as u64).max(s1 as u64).max(s2 as u64).max(s3 as u64);
            t[0] = t[0].wrapping_add(weighted(s0));
            t[1] = t[1].wrapping_add(weighted(s1));
            t[2] = t[2].wrapping_add(weighted(s2));
            t[3] = t[3].wrapping_add(weighted(s3));
        }
        for (t, s) in ts.into_remainder().iter_mut().zip(ss.remainder()) {
            hi = hi.max(s.score as u64);
            *t = t.wrapping_add(weighted(s.score));
        }
        hi
    }
    const _: () = assert!(MIN_NODE_SCORE == 0, "the unsigned range test assumes a lower bound of 0");
    let w = sp.weight;
    // Weight 1 (most built-ins' default) adds without a 64-bit multiply.
    let hi = if w == 1 { add(scores, totals, |s| s) } else { add(scores, totals, |s| s.wrapping_mul(w)) };
    if hi > MAX_NODE_SCORE as u64
        && let Some(ns) = scores.iter().find(|ns| !(MIN_NODE_SCORE..=MAX_NODE_SCORE).contains(&ns.score))
    {
        return Err(invalid_score(sp, ns.score));
    }
    Ok(())
}

/// Upstream's error for a score out of range after NormalizeScore.
pub(crate) fn invalid_score(sp: &WeightedScore, score: i64) -> Status {
    Status::error(format!(
        "plugin {:?} returns an invalid score {score}, it should in the range of [{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing",
        sp.name
    ))
    .with_plugin(sp.name)
}

/// Reserve: stops at the first failure (the caller then unreserves everything).
pub(crate) fn run_reserve(
    profile: &Profile,
    state: &mut CycleState,
    pod: &PodInfo,
    node: &str,
    t: Option<&PointTimers>,
) -> Status {
    for (i, p) in profile.reserve.iter().enumerate() {
        let s = timed(timer(t, i), || flatten(p.name, "Reserve", || p.plugin.reserve(state, pod, node)), Status::code);
        if !s.is_success() {
            return s.with_plugin(p.name);
        }
    }
    Status::SUCCESS
}

/// Unreserve: every Reserve plugin, in reverse order; panics are swallowed (there is
/// nothing left to report them to but the log of the caller's status).
/// Each plugin is timed into `t` (status `Success`, as upstream) when given.
pub(crate) fn run_unreserve_timed(
    profile: &Profile,
    state: &mut CycleState,
    pod: &PodInfo,
    node: &str,
    t: Option<&PointTimers>,
) {
    for (i, p) in profile.reserve.iter().enumerate().rev() {
        let _ = timed(
            timer(t, i),
            || guard(p.name, "Unreserve", || p.plugin.unreserve(state, pod, node)),
            |_| Code::Success,
        );
    }
}

/// What the Permit phase decided for a pod (upstream `RunPermitPlugins`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PermitOutcome {
    /// Every Permit plugin allowed the pod.
    Allow,
    /// Some plugins asked the pod to wait: `(plugin, timeout)` for each, in order,
    /// timeouts already checked against [`super::MAX_PERMIT_TIMEOUT`].
    Wait(Vec<(&'static str, Duration)>),
    /// A plugin rejected the pod (or returned a bad timeout); the status names it.
    Reject(Status),
}

pub(crate) fn run_permit(
    profile: &Profile,
    state: &mut CycleState,
    pod: &PodInfo,
    node: &str,
    t: Option<&PointTimers>,
) -> PermitOutcome {
    let mut waits = Vec::new();
    for (i, p) in profile.permit.iter().enumerate() {
        let d = timed(
            timer(t, i),
            || guard(p.name, "Permit", || p.plugin.permit(state, pod, node)),
            |r| match r {
                Ok(PermitDecision::Allow) => Code::Success,
                Ok(PermitDecision::Wait(_)) => Code::Wait,
                Ok(PermitDecision::Reject(s)) | Err(s) => s.code(),
            },
        )
        .unwrap_or_else(PermitDecision::Reject);
        match d {
            PermitDecision::Allow => {}
            PermitDecision::Wait(t) => match check_timeout(p.name, t) {
                Ok(t) => waits.push((p.name, t)),
                Err(s) => return PermitOutcome::Reject(s),
            },
            PermitDecision::Reject(s) => {
                let s = if s.is_rejected() || s.code() == Code::Error { s } else { Status::unschedulable(s.message()) };
                return PermitOutcome::Reject(s.with_plugin(p.name));
            }
        }
    }
    if waits.is_empty() { PermitOutcome::Allow } else { PermitOutcome::Wait(waits) }
}

pub(crate) fn run_pre_bind(
    profile: &Profile,
    state: &mut CycleState,
    pod: &PodInfo,
    node: &str,
    t: Option<&PointTimers>,
) -> Status {
    for (i, p) in profile.pre_bind.iter().enumerate() {
        let s = timed(timer(t, i), || flatten(p.name, "PreBind", || p.plugin.pre_bind(state, pod, node)), Status::code);
        if !s.is_success() && !s.is_skip() {
            return s.with_plugin(p.name);
        }
    }
    Status::SUCCESS
}

/// Bind: the first plugin that doesn't Skip decides.
pub(crate) fn run_bind(
    profile: &Profile,
    state: &mut CycleState,
    pod: &PodInfo,
    node: &str,
    t: Option<&PointTimers>,
) -> Status {
    for (i, p) in profile.bind.iter().enumerate() {
        let s = timed(timer(t, i), || flatten(p.name, "Bind", || p.plugin.bind(state, pod, node)), Status::code);
        if s.is_skip() {
            continue;
        }
        return if s.is_success() { s } else { s.with_plugin(p.name) };
    }
    if profile.bind.is_empty() {
        // No binder configured: binding is the caller's business (simulations).
        Status::SUCCESS
    } else {
        Status::error("every Bind plugin skipped the pod")
    }
}

pub(crate) fn run_post_bind(profile: &Profile, state: &CycleState, pod: &PodInfo, node: &str, t: Option<&PointTimers>) {
    for (i, p) in profile.post_bind.iter().enumerate() {
        let _ = timed(
            timer(t, i),
            || guard(p.name, "PostBind", || p.plugin.post_bind(state, pod, node)),
            |_| Code::Success,
        );
    }
}
