//! The cycle's Filter phase: the nominated-node fast path, the (sampled, rotating)
//! search for feasible nodes, and PostFilter when none fits.

use std::sync::Arc;

use super::filter_chunk;
use super::node_filter::filter_node;
#[cfg(feature = "parallel")]
use super::parallel;
use super::{FitError, ScheduleError, Scheduler};
use crate::framework::metrics::ProfileTimers;
use crate::framework::preemption::run_filters_with_nominated;
use crate::framework::runtime;
use crate::framework::scheduler_metrics::{MetricPoint, ProfileMetrics, time_point};
use crate::framework::{Code, CycleState, Handle, Profile, RunningProfile, Status};
use crate::snapshot::{PodInfo, Snapshot};

impl Scheduler {
    /// The pod's nominated node (the nominator's record, else
    /// `status.nominatedNodeName`) if it is in the snapshot, allowed by PreFilter, and
    /// passes Filter counting other nominated pods.
    pub(super) fn nominated_node_fits(
        &mut self,
        profile: &Profile,
        state: &CycleState,
        pod: &PodInfo,
        snap: &Snapshot,
        narrowed: &crate::framework::PreFilterResult,
    ) -> Option<usize> {
        let nominator = self.handle.preemption().nominator();
        let name = nominator.nominated_node(&pod.uid).or_else(|| {
            let n = &pod.pod.status.nominated_node_name;
            if n.is_empty() { None } else { crate::model::Symbol::lookup(n) }
        })?;
        let idx = snap.index_of(name)?;
        if !narrowed.admits(snap, idx) {
            return None;
        }
        let nominated = nominator.snapshot();
        let guard = runtime::FilterGuard::new(profile);
        let ok = guard
            .run(|current| {
                run_filters_with_nominated(profile, state, pod, &snap.nodes()[idx], nominated.as_deref(), current)
                    .is_success()
            })
            .unwrap_or(false);
        ok.then_some(idx)
    }

    /// Fills `bufs.feasible`/`bufs.failed`; returns how many nodes were processed.
    #[expect(clippy::too_many_arguments, reason = "internal; the cycle's pieces")]
    pub(super) fn find_feasible(
        &mut self,
        profile: &Profile,
        state: &CycleState,
        pod: &PodInfo,
        snap: &Snapshot,
        narrowed: bool,
        n_cand: usize,
        to_find: usize,
        start: usize,
    ) -> usize {
        let bufs = &mut self.bufs;
        let cand = |i: usize, candidates: &[usize]| {
            let k = (start + i) % n_cand;
            if narrowed { candidates[k] } else { k }
        };
        if !profile.has_filter_plugins() {
            for i in 0..to_find.min(n_cand) {
                bufs.feasible.push(cand(i, &bufs.candidates));
            }
            return bufs.feasible.len();
        }
        let mut memo = self.group_memo.as_mut().filter(|m| m.filter_on);
        #[cfg(feature = "parallel")]
        if let Some(pool) = &self.pool
            && n_cand >= self.config.parallel_min_nodes
            && memo.is_none()
            && parallel::filter_pays(n_cand.min(to_find), profile, state, self.config.parallel_min_work)
        {
            let timers = self.timers.as_deref().map(|t| &t.filter);
            return parallel::find_feasible(
                pool, profile, state, pod, snap, bufs, narrowed, n_cand, to_find, start, timers,
            );
        }
        let nodes = snap.nodes();
        let timers = self.timers.as_deref().map(|t| &t.filter);
        let nominated = bufs.nominated.as_deref();
        let guard = runtime::FilterGuard::new(profile);
        let candidates = &bufs.candidates;
        let active = runtime::ActiveFilters::new(profile, state);
        let mut processed = 0;
        // Plugin-major over chunks of nodes, unless a node needs its own pass: nominated
        // pods are added per node, and the latency recorder times each plugin call.
        if timers.is_none() && nominated.is_none() {
            let walk = filter_chunk::Walk {
                active: &active,
                state,
                pod,
                snap,
                candidates: narrowed.then_some(candidates.as_slice()),
                n_cand,
            };
            let (feasible, failed) = (&mut bufs.feasible, &mut bufs.failed);
            let room = |found| to_find - found;
            match walk.run(&guard, start % n_cand, n_cand, room, &mut bufs.chunk, feasible, failed, memo.as_deref_mut())
            {
                Ok(p) => return p,
                // A plugin panicked: walk on node by node from that chunk to blame it.
                Err(p) => processed = p,
            }
        }
        let mut at = 0;
        let outcome = guard.run(|current| {
            // Walk the candidates from `start`, wrapping once, without a division per node.
            let mut k = (start + processed) % n_cand;
            let left = n_cand - processed;
            for _ in 0..left {
                if bufs.feasible.len() >= to_find {
                    break;
                }
                let idx = if narrowed { candidates[k] } else { k };
                k += 1;
                if k == n_cand {
                    k = 0;
                }
                at = idx;
                processed += 1;
                let s = match memo.as_deref_mut() {
                    None => filter_node(&active, profile, state, pod, &nodes[idx], current, timers, nominated),
                    Some(m) => m.filter(idx, &nodes[idx]).unwrap_or_else(|| {
                        let s = filter_node(&active, profile, state, pod, &nodes[idx], current, timers, nominated);
                        m.store_filter(idx, &nodes[idx], &s);
                        s
                    }),
                };
                if s.is_success() {
                    bufs.feasible.push(idx);
                } else {
                    bufs.failed.push((idx, s));
                }
            }
        });
        if let Err(s) = outcome {
            bufs.failed.push((at, s));
        }
        processed
    }
}

/// The plugins named by `statuses`, sorted and deduplicated. A few plugins reject
/// thousands of nodes, so this collects the distinct names first (by address, then by
/// text) instead of sorting one name per node.
pub(super) fn rejecting_plugins(statuses: &[(usize, Status)]) -> Vec<&'static str> {
    let mut plugins: Vec<&'static str> = Vec::new();
    let mut last: Option<&'static str> = None;
    for p in statuses.iter().filter_map(|(_, s)| s.plugin()) {
        if last.is_some_and(|l| std::ptr::eq(l, p)) {
            continue;
        }
        last = Some(p);
        if !plugins.iter().any(|&q| std::ptr::eq(q, p) || q == p) {
            plugins.push(p);
        }
    }
    plugins.sort_unstable();
    plugins
}

/// Runs PostFilter (e.g. preemption) for a pod that fits nowhere. The running
/// profile is written into the state first ([`RunningProfile`]) so preemption can
/// run dry-run Filters. A nominated node in the result is recorded in the handle's
/// nominator — also when PostFilter then failed (e.g. an eviction error), so the pod
/// keeps its claim on the room while it is retried.
#[expect(clippy::too_many_arguments, reason = "internal; the cycle's context and its two metric sinks")]
pub(super) fn post_filter(
    profile: &Arc<Profile>,
    state: &mut CycleState,
    pod: &PodInfo,
    snap: &Snapshot,
    handle: &Handle,
    mut err: FitError,
    metrics: Option<&ProfileMetrics>,
    timers: Option<&ProfileTimers>,
) -> ScheduleError {
    if !profile.post_filter.is_empty() {
        RunningProfile::write(state, profile.clone());
        let (r, s) = time_point(
            metrics,
            MetricPoint::PostFilter,
            || {
                let t = timers.map(|t| &t.post_filter);
                runtime::run_post_filter(profile, state, pod, snap, &err.diagnosis.node_to_status, t)
            },
            |(_, s)| s.code(),
        );
        state.remove::<RunningProfile>();
        let nominated = r.and_then(|r| r.nominated_node_name);
        if let Some(node) = &nominated {
            handle.preemption().nominator().add(Arc::new(pod.clone()), node);
        }
        if s.code() == Code::Error {
            return ScheduleError::Plugin { pod: pod.pod.key(), status: s };
        }
        if !s.is_success() && !s.reasons().is_empty() {
            err.diagnosis.post_filter_msg = Some(s.message());
        }
        err.nominated_node = nominated;
    }
    ScheduleError::Unschedulable(Box::new(err))
}
