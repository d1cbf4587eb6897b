//! Filter's quick "fits" for the common claim shape: exact-count requests over devices
//! published for one node by name, without shared counters, shared devices, capacity
//! requests or admin access. A lean copy of the search that answers only "fits";
//! anything else (no fit, an unusual device, a long search) goes to the full search,
//! which then gives the same answer, diagnosis or error as without this path.
//!
//! Same semantics as [`super::run`]: candidates in upstream device order, combinations
//! in lexicographic order, alternatives in order, the claim's constraints checked per
//! device (upstream `structured/internal/stable/allocator_stable.go`, `allocateOne` and
//! `allocateDevice`). It stops before the step count where the full search would read
//! the clock or exceed its budget, so a timeout or budget error is never skipped.

use smallvec::SmallVec;

use super::{ALLOCATION_RESULTS_MAX_SIZE, ClaimPlan, InUse, TIMEOUT_CHECK_EVERY, bit, constraint};
use crate::dra::compiled::ConstraintKind;
use crate::dra::world::{World, taint_blocks};
use crate::model::Symbol;

/// The most node-local devices a node may have for the quick search (its candidates
/// live in a stack array).
const MAX_LOCAL: usize = 64;

/// The most devices the quick search picks for a pod (its picks live inline).
const MAX_PICKS: u64 = 16;

/// One alternative's `(ok, odd)` device bitsets (see [`QuickSets`]).
type OkOdd = (Vec<u64>, Vec<u64>);

/// Per slot and alternative, the devices the quick search takes on sight and those it
/// must look at one by one; built once per cycle by [`prepare`].
#[derive(Debug)]
pub(crate) struct QuickSets {
    /// `[slot][alternative]` -> `(ok, odd)`: `ok` are plain devices ([`World::plain`])
    /// the selectors match and nobody uses; `odd` the other devices the selectors match.
    sets: Vec<SmallVec<[OkOdd; 1]>>,
}

/// The quick search's sets when the pod's claims have the shape it handles on this
/// world (decided once per cycle), else `None`: no chooser; only node-local devices of
/// the newest generation; no pool that is bad anywhere; every alternative an exact
/// count without admin access or capacity requests, with no selector failing at run
/// time; each claim within upstream's result limit (so the full search's per-node
/// limit check cannot fail); at most [`MAX_PICKS`] devices in all.
pub(crate) fn prepare(
    world: &World,
    in_use: &InUse,
    plans: &[ClaimPlan],
    slots: &[(u16, u16)],
    has_chooser: bool,
) -> Option<QuickSets> {
    if has_chooser
        || !world.shared.is_empty()
        || world.stale
        || !world.per_node_pools.is_empty()
        || !world.bad_everywhere.is_empty()
        || !world.bad_on_node.is_empty()
    {
        return None;
    }
    let mut picks = 0u64;
    for plan in plans {
        let mut total = 0u64;
        for (r, request) in plan.claim.requests.iter().enumerate() {
            let (mut least, mut most): (Option<u32>, u32) = (None, 0);
            for (a, alt) in request.alternatives.iter().enumerate() {
                let n = alt.count?;
                if alt.admin || !alt.capacity.is_empty() || !plan.matches[r][a].errors.is_empty() {
                    return None;
                }
                least = Some(least.map_or(n, |l| l.min(n)));
                most = most.max(n);
            }
            total += u64::from(least.unwrap_or(0));
            picks += u64::from(most);
        }
        if total > u64::from(ALLOCATION_RESULTS_MAX_SIZE) {
            return None;
        }
    }
    if picks > MAX_PICKS {
        return None;
    }
    let plain = world.plain_devices();
    let bits_at = |set: &[u64], w: usize| set.get(w).copied().unwrap_or(0);
    let sets = slots
        .iter()
        .map(|&(c, r)| {
            plans[c as usize].matches[r as usize]
                .iter()
                .map(|m| {
                    let ok = (0..plain.len())
                        .map(|w| bits_at(&m.bits, w) & plain[w] & !bits_at(&in_use.devices, w))
                        .collect();
                    let odd = (0..plain.len()).map(|w| bits_at(&m.bits, w) & !plain[w]).collect();
                    (ok, odd)
                })
                .collect()
        })
        .collect();
    Some(QuickSets { sets })
}

#[derive(Debug, Clone, Copy)]
struct QuickPick {
    claim: u16,
    request: u16,
    alt: u16,
    dev: u32,
}

struct Quick<'a> {
    sets: &'a QuickSets,
    world: &'a World,
    in_use: &'a InUse,
    plans: &'a [ClaimPlan],
    slots: &'a [(u16, u16)],
    local: &'a [u32],
    picks: SmallVec<[QuickPick; MAX_PICKS as usize]>,
    steps: u64,
    limit: u64,
    list_attributes: bool,
}

/// Whether the claims (with their [`prepare`]d sets) fit on `node`: `true` only when the full
/// search would find an allocation there too; `false` means "ask the full search".
/// Allocates nothing on the heap.
#[allow(clippy::too_many_arguments)]
pub(crate) fn fits(
    sets: &QuickSets,
    world: &World,
    in_use: &InUse,
    plans: &[ClaimPlan],
    slots: &[(u16, u16)],
    node: Symbol,
    budget: u64,
    list_attributes: bool,
) -> bool {
    let local: &[u32] = world.node_local.get(&node).map_or(&[], |v| v.as_slice());
    if local.len() > MAX_LOCAL {
        return false;
    }
    let mut q = Quick {
        sets,
        world,
        in_use,
        plans,
        slots,
        local,
        picks: SmallVec::new(),
        steps: 0,
        // The full search reads the clock at step TIMEOUT_CHECK_EVERY and fails past
        // its budget: stop before either.
        limit: budget.min(TIMEOUT_CHECK_EVERY - 1),
        list_attributes,
    };
    q.slot(0) == Some(true)
}

#[expect(
    clippy::many_single_char_names,
    reason = "search indices as in the full search: slot i, claim c, request r, alternative a, device d"
)]
impl Quick<'_> {
    /// `Some(found)`, or `None` to hand the node to the full search.
    fn slot(&mut self, i: usize) -> Option<bool> {
        let Some(&(c, r)) = self.slots.get(i) else { return Some(true) };
        let plans = self.plans;
        let plan = &plans[c as usize];
        for (a, alt) in plan.claim.requests[r as usize].alternatives.iter().enumerate() {
            let (ok, odd) = &self.sets.sets[i][a];
            let mut cands = [0u32; MAX_LOCAL];
            let mut n = 0;
            for &d in self.local {
                if !bit(ok, d) {
                    if !bit(odd, d) {
                        continue;
                    }
                    // Not plain: the full search's checks, in its order.
                    let e = &self.world.devices[d as usize];
                    if e.taints.iter().any(|t| taint_blocks(t, &alt.tolerations)) {
                        continue;
                    }
                    if e.counters_missing || self.in_use.contains(d) {
                        continue;
                    }
                    if e.multi || !e.consumes.is_empty() {
                        // Shared devices and shared counters: the full search's bookkeeping.
                        return None;
                    }
                }
                cands[n] = d;
                n += 1;
            }
            let want = alt.count?;
            if (n as u64) < u64::from(want) {
                continue;
            }
            if self.pick(i, c, r, a as u16, &cands[..n], 0, want)? {
                return Some(true);
            }
        }
        Some(false)
    }

    #[allow(clippy::too_many_arguments)]
    fn pick(&mut self, i: usize, c: u16, r: u16, a: u16, cands: &[u32], from: usize, left: u32) -> Option<bool> {
        if left == 0 {
            return self.slot(i + 1);
        }
        let mut k = from;
        while k + left as usize <= cands.len() {
            self.steps += 1;
            if self.steps > self.limit {
                return None;
            }
            let d = cands[k];
            if self.admits(c, r, a, d) {
                self.picks.push(QuickPick { claim: c, request: r, alt: a, dev: d });
                if self.pick(i, c, r, a, cands, k + 1, left - 1)? {
                    return Some(true);
                }
                self.picks.pop();
            }
            k += 1;
        }
        Some(false)
    }

    /// The full search's `try_add` for an exclusive device without counters, requested
    /// without admin access: not picked yet, and every constraint covering the request
    /// admits it.
    fn admits(&self, c: u16, r: u16, a: u16, d: u32) -> bool {
        if self.picks.iter().any(|p| p.dev == d) {
            return false;
        }
        let world = self.world;
        let claim = &self.plans[c as usize].claim;
        if claim.constraints.is_empty() {
            return true;
        }
        let req = &claim.requests[r as usize];
        let alt_name = &req.alternatives[a as usize].result_name;
        let device = &world.devices[d as usize].device;
        claim.constraints.iter().all(|k| {
            if !k.covers(&req.name, alt_name) {
                return true;
            }
            let Some(v) = device.attribute(k.attribute) else { return false };
            let covered = |p: &&QuickPick| {
                let preq = &claim.requests[p.request as usize];
                p.claim == c && k.covers(&preq.name, &preq.alternatives[p.alt as usize].result_name)
            };
            if k.kind == ConstraintKind::Match && !self.list_attributes {
                // Each earlier device was admitted against those before it, so the first
                // one's value is every one's (`constraint::admits_next`).
                return self.picks.iter().find(covered).is_none_or(|p| {
                    world.devices[p.dev as usize]
                        .device
                        .attribute(k.attribute)
                        .is_some_and(|o| constraint::same_scalar(o, v))
                });
            }
            let earlier =
                self.picks.iter().filter(covered).map(|p| world.devices[p.dev as usize].device.attribute(k.attribute));
            constraint::admits(k.kind, v, earlier, self.list_attributes)
        })
    }
}
