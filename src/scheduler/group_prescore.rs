//! PreFilter and PreScore of a pod-group member kept across the group's placements
//! (schedkit's own; upstream runs both for every member in every placement).
//!
//! With `TopologyAwareWorkloadScheduling` the default algorithm runs once per placement,
//! so each member's PreFilter and PreScore run once per placement (50 times for a gang
//! over 50 racks). A plugin that promises [`PreReuse::Pod`] for the member (its outcome
//! and what it writes are a function of the pod alone) runs once per member per
//! pod-group cycle: its status, its node narrowing (PreFilter) and the values it wrote
//! (the very `Arc`s, which [`CycleState::get_mut`] copies before any change) are kept
//! by member and handed to the member's later cycles, in the plugins' order, through
//! the same handling of Skip, rejections and narrowing as [`runtime::run_pre_filter`]
//! and [`runtime::run_pre_score`]. Every other plugin runs as before. A status other
//! than Success or Skip, a narrowing by snapshot position, a plugin that removed a
//! value, or a panic is not kept. Nothing is kept in a cycle where every member runs
//! once (one placement, no workload-aware preemption): both run as for any pod.

use std::sync::Arc;

use smallvec::SmallVec;

use super::group_memo::GroupMemo;
use crate::framework::runtime::{self, PreFilterOutcome, guard};
use crate::framework::{Code, CycleState, PreFilterResult, PreReuse, Profile, StateEntry, StateMark, Status};
use crate::snapshot::{NodeList, PodInfo, Snapshot};

/// One plugin's PreFilter or PreScore for one member.
enum Slot {
    /// Not asked yet.
    Unknown,
    /// Runs every time (no promise, or nothing keepable).
    Run,
    /// Its outcome and the values it wrote.
    Kept(Box<Kept>),
}

/// A kept PreFilter or PreScore: its narrowing (PreFilter), status and the values it
/// wrote.
struct Kept {
    result: Option<PreFilterResult>,
    status: Status,
    written: SmallVec<[StateEntry; 2]>,
}

/// One member's slots, by position in the profile's PreFilter and PreScore lists.
struct Member {
    /// The member (held, so its address stays its own while the slots live).
    pod: Arc<PodInfo>,
    pre_filter: Vec<Slot>,
    pre_score: Vec<Slot>,
}

/// The kept PreFilters and PreScores of the pod-group cycle in progress, by member index.
#[derive(Default)]
pub(super) struct KeptPre {
    members: Vec<Option<Member>>,
    mark: StateMark,
    /// Whether members' PreFilters and PreScores are kept at all: only when a member
    /// may run more than once in the cycle (several placements, or workload-aware
    /// preemption trying the group again). Otherwise keeping would only cost.
    keep: bool,
}

impl KeptPre {
    /// Forgets every member (the pod-group cycle ended) and stops keeping.
    pub(super) fn clear(&mut self) {
        self.members.clear();
        self.keep = false;
    }

    /// From now on in this pod-group cycle, members' PreFilters and PreScores are
    /// kept (a member may run again).
    pub(super) fn keep(&mut self) {
        self.keep = true;
    }
}

/// The current member's slots and the state mark, when `pod` is the member the group
/// algorithm is running.
fn member_slots<'m>(
    memo: &'m mut GroupMemo,
    profile: &Profile,
    pod: &PodInfo,
) -> Option<(&'m mut Member, &'m mut StateMark, &'m mut u64)> {
    if !memo.pre.keep {
        return None;
    }
    let (index, member) = memo.member().filter(|(_, m)| std::ptr::eq(Arc::as_ptr(m), pod))?;
    let member = member.clone();
    let kept = &mut memo.pre;
    if kept.members.len() <= index {
        kept.members.resize_with(index + 1, || None);
    }
    let entry = &mut kept.members[index];
    let (nf, ns) = (profile.pre_filter.len(), profile.pre_score.len());
    if entry
        .as_ref()
        .is_none_or(|m| !Arc::ptr_eq(&m.pod, &member) || m.pre_filter.len() != nf || m.pre_score.len() != ns)
    {
        let slots = |n: usize| (0..n).map(|_| Slot::Unknown).collect();
        *entry = Some(Member { pod: member, pre_filter: slots(nf), pre_score: slots(ns) });
    }
    Some((entry.as_mut()?, &mut kept.mark, &mut memo.stats.pre_reused))
}

/// Runs `plugin_call` unless `slot` kept its outcome; keeps the outcome when `promised`
/// says the plugin may promise and it is keepable.
fn run_or_replay(
    slot: &mut Slot,
    state: &mut CycleState,
    mark: &mut StateMark,
    reused: &mut u64,
    promised: impl FnOnce() -> bool,
    plugin_call: impl FnOnce(&mut CycleState) -> (Option<PreFilterResult>, Status),
) -> (Option<PreFilterResult>, Status) {
    if let Slot::Kept(k) = slot {
        state.put_written(&k.written);
        *reused += 1;
        return (k.result.clone(), k.status.clone());
    }
    let promised = matches!(slot, Slot::Unknown) && promised();
    if promised {
        state.mark(mark);
    }
    let (r, s) = plugin_call(state);
    let keepable = promised
        && matches!(s.code(), Code::Success | Code::Skip)
        && r.as_ref().is_none_or(|r| r.node_positions.is_none());
    *slot = match keepable.then(|| state.written_since(mark)).flatten() {
        Some(written) => Slot::Kept(Box::new(Kept { result: r.clone(), status: s.clone(), written })),
        None => Slot::Run,
    };
    (r, s)
}

/// PreFilter for a pod-group member ([`runtime::run_pre_filter`] for any other pod):
/// the plugins that promised [`PreReuse::Pod`] for the member run in its first
/// cycle only (module doc).
pub(super) fn run_pre_filter(
    memo: &mut GroupMemo,
    profile: &Profile,
    state: &mut CycleState,
    pod: &PodInfo,
    snapshot: &Snapshot,
) -> Result<PreFilterOutcome, Status> {
    let Some((m, mark, reused)) = member_slots(memo, profile, pod) else {
        return runtime::run_pre_filter(profile, state, pod, snapshot);
    };
    let mut result = PreFilterResult::default();
    let mut narrowing_plugins = Vec::new();
    let mut rejected: Option<Status> = None;
    for (i, p) in profile.pre_filter.iter().enumerate() {
        let (r, s) = run_or_replay(
            &mut m.pre_filter[i],
            state,
            mark,
            reused,
            || matches!(guard(p.name, "PreFilter", || p.plugin.pre_filter_reuse(pod)), Ok(PreReuse::Pod)),
            |state| {
                guard(p.name, "PreFilter", || p.plugin.pre_filter(state, pod, snapshot)).unwrap_or_else(|s| (None, s))
            },
        );
        // From here as `runtime::run_pre_filter_timed`.
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
                    format!(
                        "node(s) didn't satisfy plugin(s) {} simultaneously",
                        runtime::go_string_list(&narrowing_plugins)
                    )
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

/// PreScore for a pod-group member ([`runtime::run_pre_score`] for any other pod): the
/// plugins that promised [`PreReuse::Pod`] for the member run in its first cycle
/// only (module doc).
pub(super) fn run_pre_score(
    memo: &mut GroupMemo,
    profile: &Profile,
    state: &mut CycleState,
    pod: &PodInfo,
    nodes: NodeList<'_>,
) -> Status {
    let Some((m, mark, reused)) = member_slots(memo, profile, pod) else {
        return runtime::run_pre_score(profile, state, pod, nodes, None);
    };
    for (i, p) in profile.pre_score.iter().enumerate() {
        let (_, s) = run_or_replay(
            &mut m.pre_score[i],
            state,
            mark,
            reused,
            || matches!(guard(p.name, "PreScore", || p.plugin.pre_score_reuse(pod)), Ok(PreReuse::Pod)),
            |state| (None, guard(p.name, "PreScore", || p.plugin.pre_score(state, pod, nodes)).unwrap_or_else(|s| s)),
        );
        // From here as `runtime::run_pre_score`.
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
