//! The structured allocator's search: devices on one node for every request of every
//! claim of a pod, together or not at all.
//!
//! Upstream: `staging/src/k8s.io/dynamic-resource-allocation/structured/allocator.go`
//! and its `internal/stable` variant.
//!
//! # Search
//!
//! Requests are flattened into slots (claim order, then request order). For each slot the
//! alternatives (`exactly`, or the `firstAvailable` subrequests in order) are tried in
//! turn; an ExactCount alternative picks `count` devices among the node's candidates in
//! upstream device order, an `All` alternative takes every matching device and fails if
//! any is in use. After each pick the claim's constraints (`matchAttribute`,
//! `distinctAttribute`) and the pool's shared counters are checked; a failure backtracks
//! to the most recent choice. Upstream enumerates permutations of devices; this search
//! enumerates combinations in the same lexicographic order, so its first solution is the
//! one upstream finds, with fewer steps.
//!
//! # Shared devices
//!
//! A device with `allowMultipleAllocations` is never held exclusively: each allocation
//! consumes part of its capacities under the capacity's `requestPolicy` (KEP-5075) and
//! the result records `consumedCapacity` and a `shareID`. Its shared counters
//! (`consumesCounters`, partitionable devices) are charged once per device, by its first
//! share, whether committed, in flight or picked earlier in the same search; later shares
//! only consume capacity (upstream `allocator_experimental.go`, `allocateDevice`, with
//! the fixes of kubernetes#134103, #139040, #140431 and #140437).
//!
//! # Worst case and budget
//!
//! With `n` candidates and `k` devices wanted per slot, a slot explores at most
//! `C(n, k)` combinations per alternative, and slots multiply: an unsatisfiable
//! `matchAttribute` over 8-of-64 devices is 4.4 billion steps. Every device tried counts as
//! one step; past [`DEFAULT_STEP_BUDGET`] (or the store's configured budget) the search stops
//! with [`AllocError::BudgetExceeded`] — an error, never a hang. In Filter the
//! DynamicResources `filterTimeout` also bounds it: the clock is read every 1024 steps and
//! past the timeout the search stops with [`AllocError::FilterTimeout`], which leaves the
//! node Unschedulable as upstream. Candidates are pruned
//! before the search (selectors, taints, capacity, in-use), so realistic claims take a
//! few dozen steps.

mod constraint;
mod diagnosis;
pub(crate) mod quick;
mod results;

use std::fmt;
use std::sync::Arc;

use smallvec::SmallVec;

use super::compiled::CompiledClaim;
use super::error::AllocError;
use super::world::{DeviceId, PoolProblem, World, taint_blocks};
use crate::model::{Labels, Symbol};
use crate::selector::{AttributeKey, Device};

pub use diagnosis::{Diagnosis, Problem};
pub(crate) use results::results;

/// Upstream's message when allocation fails on a node with invalid pools.
pub(crate) const INVALID_POOLS: &str = "invalid resource pools were encountered";

/// The most devices one claim's allocation result may hold (upstream
/// `resourceapi.AllocationResultsMaxSize`); a claim needing more fails before the search
/// with [`AllocError::TooManyDevices`].
pub const ALLOCATION_RESULTS_MAX_SIZE: u32 = 32;

/// Steps the search may take per node before giving up with an error.
pub const DEFAULT_STEP_BUDGET: u64 = 1_000_000;

/// How many search steps pass between two looks at the clock when Filter runs under a
/// timeout: the clock is never read per device, and searches shorter than this (every
/// realistic claim) never read it at all.
pub(crate) const TIMEOUT_CHECK_EVERY: u64 = 1024;

/// A limit on how long one search may run (upstream `DynamicResourcesArgs.filterTimeout`,
/// applied in `dynamicresources.go` Filter with `context.WithTimeout`). The search reads
/// `clock` every [`TIMEOUT_CHECK_EVERY`] steps; time is measured from the first such
/// reading, so the first steps go untimed (microseconds, against a limit of seconds).
#[derive(Clone, Copy)]
pub(crate) struct Timeout<'a> {
    pub clock: &'a dyn crate::framework::Clock,
    pub limit: std::time::Duration,
}

impl fmt::Debug for Timeout<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Timeout").field("limit", &self.limit).finish_non_exhaustive()
    }
}

/// Orders the candidates of one request before the search takes the first that fits.
///
/// The default (no chooser) keeps upstream's order. A chooser sees each request's
/// candidate devices on a node (already filtered by selectors, taints and availability)
/// and may reorder them, e.g. to put the best-connected GPUs first; the search then
/// takes the first combination, in the new order, that satisfies every constraint.
/// Called once per request alternative per node in Filter: it must not block and should
/// not allocate.
pub trait DeviceChooser: Send + Sync + fmt::Debug {
    /// Reorders `candidates` for a request wanting `count` devices (`None`: All).
    fn reorder(&self, request: &str, count: Option<u32>, candidates: &mut [u32], view: CandidateView<'_>);
}

/// What a [`DeviceChooser`] may read about candidates.
#[derive(Debug, Clone, Copy)]
pub struct CandidateView<'a> {
    world: &'a World,
}

impl<'a> CandidateView<'a> {
    /// The device as selectors see it (attributes, capacity).
    pub fn device(&self, candidate: u32) -> &'a Device {
        &self.world.devices[candidate as usize].device
    }

    /// The device's identity.
    pub fn id(&self, candidate: u32) -> DeviceId {
        self.world.devices[candidate as usize].id
    }
}

/// Devices in use across the cluster: allocated claims and in-flight reservations.
#[derive(Debug, Clone, Default)]
pub(crate) struct InUse {
    pub devices: Vec<u64>,
    /// Consumed per counter (milli-units).
    pub counters: Vec<i128>,
    /// Consumed capacity of multi-allocatable devices: `(device, share index)` -> milli.
    pub shared: ahash::AHashMap<(u32, usize), i128>,
    /// Bit per multi-allocatable device holding at least one share (its shared counters
    /// are already charged, once, in `counters`).
    pub shared_devices: Vec<u64>,
}

impl InUse {
    #[inline]
    pub fn contains(&self, d: u32) -> bool {
        bit(&self.devices, d)
    }

    /// Whether a multi-allocatable device already holds a share.
    #[inline]
    pub fn shared_in_use(&self, d: u32) -> bool {
        bit(&self.shared_devices, d)
    }

    /// Records one share of multi-allocatable device `d`; returns whether it is the
    /// device's first (the one that charges its counters).
    pub fn mark_shared(&mut self, d: u32) -> bool {
        let word = (d / 64) as usize;
        if self.shared_devices.len() <= word {
            self.shared_devices.resize(word + 1, 0);
        }
        let first = self.shared_devices[word] & (1 << (d % 64)) == 0;
        self.shared_devices[word] |= 1 << (d % 64);
        first
    }
}

/// A claim ready for this cycle: compiled requests plus, per alternative, the devices
/// whose class and request selectors match (cached across cycles by the store).
#[derive(Debug, Clone)]
pub(crate) struct ClaimPlan {
    pub claim: Arc<CompiledClaim>,
    /// `[request][alternative]` -> which of the world's devices the selectors match.
    pub matches: Vec<Vec<Arc<SelectorMatches>>>,
    /// Class configs per `[request][alternative]` (driver config from the class).
    pub class_config: Vec<Vec<Vec<super::types::DeviceClassConfiguration>>>,
}

/// The devices a class's and a request's selectors match, evaluated once per world
/// generation and shared by every claim with the same class and selectors.
#[derive(Debug, Clone, Default)]
pub(crate) struct SelectorMatches {
    /// Bit per world device.
    pub bits: Vec<u64>,
    /// Devices on which a selector failed at run time, with upstream's error text.
    pub errors: Vec<(u32, String)>,
}

#[inline]
pub(crate) fn bit(set: &[u64], d: u32) -> bool {
    set.get((d / 64) as usize).is_some_and(|w| w & (1 << (d % 64)) != 0)
}

/// One picked device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Pick {
    pub claim: u16,
    pub request: u16,
    pub alt: u16,
    pub dev: u32,
    pub admin: bool,
    /// Consumable-capacity entries this pick pushed (multi-allocatable devices).
    pub shares: u8,
}

pub(crate) type Picks = SmallVec<[Pick; 16]>;

/// What one node run found.
#[derive(Debug)]
pub(crate) enum Outcome {
    Fit(Picks),
    NoFit(Diagnosis),
}

#[derive(Debug, Clone, Copy, Default)]
struct SlotStats {
    best_matching: u32,
    best_available: u32,
    wanted: Option<u32>,
    enough: bool,
    best_alt: u16,
}

struct Search<'a> {
    world: &'a World,
    in_use: &'a InUse,
    plans: &'a [ClaimPlan],
    slots: &'a [(u16, u16)],
    node: Symbol,
    labels: &'a Labels,
    chooser: Option<&'a dyn DeviceChooser>,
    picks: Picks,
    deltas: SmallVec<[(u32, i128); 8]>,
    share_deltas: SmallVec<[(u32, usize, i128); 4]>,
    steps: u64,
    budget: u64,
    timeout: Option<Timeout<'a>>,
    /// Pools gathered for the node that give it no devices.
    problems: SmallVec<[(u32, PoolProblem); 2]>,
    /// The clock's time at the first timeout check.
    timed_from: Option<std::time::Duration>,
    stats: SmallVec<[SlotStats; 8]>,
    /// Bit per (claim, constraint index < 62); [`CAPACITY_BIT`], [`COUNTERS_BIT`].
    rejected: SmallVec<[u64; 4]>,
    /// `DRAListTypeAttributes`: list-valued attributes in constraints.
    list_attributes: bool,
}

/// Runs the search for `plans` on one node.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run(
    world: &World,
    in_use: &InUse,
    plans: &[ClaimPlan],
    slots: &[(u16, u16)],
    node: Symbol,
    labels: &Labels,
    chooser: Option<&dyn DeviceChooser>,
    budget: u64,
    timeout: Option<Timeout<'_>>,
    list_attributes: bool,
) -> Result<Outcome, AllocError> {
    let problems = world.node_problems(node, labels);
    // Upstream `Allocate` checks claim by claim: each request (`validateDeviceRequest`),
    // then the claim's total against the claim limit.
    for plan in plans {
        if let Some((pool, problem)) = problems.first() {
            all_mode_check(world, std::slice::from_ref(plan), *pool, problem)?;
        }
        claim_limit_check(world, plan, node, labels, &problems)?;
    }
    let mut s = Search {
        world,
        in_use,
        plans,
        slots,
        node,
        labels,
        chooser,
        picks: SmallVec::new(),
        deltas: SmallVec::new(),
        share_deltas: SmallVec::new(),
        steps: 0,
        budget,
        timeout,
        problems,
        timed_from: None,
        stats: smallvec::smallvec![SlotStats::default(); slots.len()],
        rejected: smallvec::smallvec![0; plans.len()],
        list_attributes,
    };
    if s.slot(0)? {
        return Ok(Outcome::Fit(s.picks));
    }
    let mut diagnosis = s.diagnose();
    // Upstream `Allocate`: when no solution exists and an invalid pool was gathered for
    // the node, the result is "invalid resource pools were encountered" (Unschedulable
    // in Filter) rather than a plain failure.
    let invalid: Vec<(String, String)> = s
        .problems
        .iter()
        .filter_map(|(p, problem)| match problem {
            PoolProblem::Invalid(why) => Some((world.pools[*p as usize].label(), why.to_string())),
            PoolProblem::Incomplete => None,
        })
        .collect();
    if !invalid.is_empty() {
        diagnosis.problems.insert(0, Problem::InvalidPools { pools: invalid });
    }
    Ok(Outcome::NoFit(diagnosis))
}

/// Upstream `validateDeviceRequest`: before searching, every `All` request (or
/// subrequest), in claim and request order, fails when any pool gathered for the node is
/// incomplete or invalid, whether or not that pool has devices the request would match;
/// `pool` is the first such pool.
fn all_mode_check(world: &World, plans: &[ClaimPlan], pool: u32, problem: &PoolProblem) -> Result<(), AllocError> {
    for plan in plans {
        for alt in plan.claim.requests.iter().flat_map(|r| r.alternatives.iter()) {
            if alt.count.is_some() {
                continue;
            }
            // Upstream names a subrequest by its own name here.
            let request = alt.result_name.rsplit_once('/').map_or(alt.result_name.as_str(), |(_, sub)| sub).to_owned();
            let claim = plan.claim.key.clone();
            let pool = world.pools[pool as usize].label();
            return Err(match problem {
                PoolProblem::Incomplete => AllocError::PoolIncomplete { claim, request, pool },
                PoolProblem::Invalid(why) => AllocError::PoolInvalid { claim, request, pool, reason: why.to_string() },
            });
        }
    }
    Ok(())
}

/// Upstream `Allocate`: the fewest devices the claim can end up with (per request its
/// count, the smallest of its subrequests' counts, or for `All` the devices on the node
/// its selectors match in usable pools) must not exceed
/// [`ALLOCATION_RESULTS_MAX_SIZE`].
fn claim_limit_check(
    world: &World,
    plan: &ClaimPlan,
    node: Symbol,
    labels: &Labels,
    problems: &[(u32, PoolProblem)],
) -> Result<(), AllocError> {
    let mut total: u64 = 0;
    for (r, request) in plan.claim.requests.iter().enumerate() {
        let mut least: Option<u64> = None;
        for (a, alt) in request.alternatives.iter().enumerate() {
            let n = if let Some(n) = alt.count {
                u64::from(n)
            } else {
                let matches = &plan.matches[r][a];
                let mut n = 0u64;
                world.for_each_on_node(node, labels, |d| {
                    let pool = world.devices[d as usize].pool;
                    if bit(&matches.bits, d) && !problems.iter().any(|(p, _)| *p == pool) {
                        n += 1;
                    }
                });
                n
            };
            least = Some(least.map_or(n, |l| l.min(n)));
        }
        total += least.unwrap_or(0);
    }
    if total > u64::from(ALLOCATION_RESULTS_MAX_SIZE) {
        return Err(AllocError::TooManyDevices {
            claim: plan.claim.key.clone(),
            requested: total,
            limit: ALLOCATION_RESULTS_MAX_SIZE,
        });
    }
    Ok(())
}

type Cands = SmallVec<[u32; 16]>;

/// A claim's rejected-combination bit: consumable capacity of a shared device exhausted.
const CAPACITY_BIT: u64 = 1 << 62;
/// A claim's rejected-combination bit: a pool's shared counters exhausted.
const COUNTERS_BIT: u64 = 1 << 63;

#[expect(
    clippy::many_single_char_names,
    reason = "search indices read as in the module docs: slot i, claim c, request r, alternative a, device d"
)]
impl Search<'_> {
    fn slot(&mut self, i: usize) -> Result<bool, AllocError> {
        let Some(&(c, r)) = self.slots.get(i) else { return Ok(true) };
        let plan = &self.plans[c as usize];
        let request = &plan.claim.requests[r as usize];
        for (a, alt) in request.alternatives.iter().enumerate() {
            let matches = &plan.matches[r as usize][a];
            let mut cands = Cands::new();
            let (mut matching, mut busy) = (0u32, 0u32);
            let world = self.world;
            let problems = &self.problems;
            let mut runtime_error = None;
            world.for_each_on_node(self.node, self.labels, |d| {
                if !bit(&matches.bits, d) {
                    if !matches.errors.is_empty()
                        && runtime_error.is_none()
                        && let Some((_, e)) = matches.errors.iter().find(|(x, _)| *x == d)
                    {
                        runtime_error = Some(e.clone());
                    }
                    return;
                }
                let e = &world.devices[d as usize];
                if !alt.capacity.iter().all(|(k, q)| {
                    e.device.capacity(AttributeKey::qualified(k, e.device.driver())).is_some_and(|have| have >= q)
                }) {
                    return;
                }
                // A tainted device still matches the selectors: the diagnosis counts it
                // as matching and not available.
                matching += 1;
                if e.taints.iter().any(|t| taint_blocks(t, &alt.tolerations)) {
                    return;
                }
                // Devices of a pool that is incomplete or invalid for this node are never
                // candidates (upstream `allocateOne` skips such pools; an "All" request
                // already failed in `all_mode_check`).
                if !problems.is_empty() && problems.iter().any(|(p, _)| *p == e.pool) {
                    return;
                }
                if e.counters_missing || (!alt.admin && self.in_use.contains(d)) {
                    busy += 1;
                    return;
                }
                cands.push(d);
            });
            if let Some(message) = runtime_error {
                return Err(AllocError::SelectorRuntime {
                    claim: plan.claim.key.clone(),
                    request: alt.result_name.clone(),
                    message,
                });
            }
            let available = cands.len() as u32;
            let st = &mut self.stats[i];
            let enough = match alt.count {
                Some(n) => available >= n,
                None => busy == 0 && available > 0,
            };
            if available >= st.best_available || enough {
                if !st.enough || enough {
                    st.best_available = available;
                    st.best_matching = matching;
                    st.wanted = alt.count;
                    st.best_alt = a as u16;
                }
                st.enough |= enough;
            }
            if !enough {
                continue;
            }
            if let Some(ch) = self.chooser {
                ch.reorder(&alt.result_name, alt.count, &mut cands, CandidateView { world: self.world });
            }
            let ok = match alt.count {
                Some(n) => self.pick(i, c, r, a as u16, alt.admin, &cands, 0, n)?,
                None => self.take_all(i, c, r, a as u16, alt.admin, &cands)?,
            };
            if ok {
                return Ok(true);
            }
        }
        Ok(false)
    }

    #[allow(clippy::too_many_arguments)]
    fn pick(
        &mut self,
        i: usize,
        c: u16,
        r: u16,
        a: u16,
        admin: bool,
        cands: &[u32],
        from: usize,
        left: u32,
    ) -> Result<bool, AllocError> {
        if left == 0 {
            return self.slot(i + 1);
        }
        let mut k = from;
        while k + left as usize <= cands.len() {
            self.step()?;
            let d = cands[k];
            if self.try_add(c, r, a, admin, d, false)? {
                if self.pick(i, c, r, a, admin, cands, k + 1, left - 1)? {
                    return Ok(true);
                }
                self.undo();
            }
            k += 1;
        }
        Ok(false)
    }

    fn take_all(&mut self, i: usize, c: u16, r: u16, a: u16, admin: bool, cands: &[u32]) -> Result<bool, AllocError> {
        let mut added = 0;
        let mut ok = true;
        for &d in cands {
            self.step()?;
            // `All` takes every matching device: one that breaks a constraint is an
            // error, not a reason to backtrack (upstream `allocateDevice` with `must`).
            if self.try_add(c, r, a, admin, d, true)? {
                added += 1;
            } else {
                ok = false;
                break;
            }
        }
        if ok && self.slot(i + 1)? {
            return Ok(true);
        }
        for _ in 0..added {
            self.undo();
        }
        Ok(false)
    }

    /// Counts one device tried against the step budget and, every
    /// [`TIMEOUT_CHECK_EVERY`] steps, the timeout.
    #[inline]
    fn step(&mut self) -> Result<(), AllocError> {
        self.steps += 1;
        if self.steps > self.budget {
            return Err(AllocError::BudgetExceeded { budget: self.budget });
        }
        if self.steps.is_multiple_of(TIMEOUT_CHECK_EVERY)
            && let Some(t) = self.timeout
        {
            self.check_timeout(t)?;
        }
        Ok(())
    }

    #[cold]
    fn check_timeout(&mut self, t: Timeout<'_>) -> Result<(), AllocError> {
        let now = t.clock.now();
        let from = *self.timed_from.get_or_insert(now);
        if now.saturating_sub(from) > t.limit {
            return Err(AllocError::FilterTimeout);
        }
        Ok(())
    }

    fn try_add(&mut self, c: u16, r: u16, a: u16, admin: bool, d: u32, must: bool) -> Result<bool, AllocError> {
        // One device serves one claim of the pod; separate claims may share it when either
        // asks for admin access, which never marks a device in use (upstream
        // "separate-claims-share-device-admin-access",
        // "admin-access-claims-device-allocating-for-non-admin-access" and
        // "all-devices-some-allocating-admin-access").
        let e = &self.world.devices[d as usize];
        if !e.multi && self.picks.iter().any(|p| p.dev == d && (p.claim == c || (!admin && !p.admin))) {
            return Ok(false);
        }
        // Constraints first, as upstream `allocateDevice` checks them before capacity.
        let plan = &self.plans[c as usize];
        let claim = &plan.claim;
        let req = &claim.requests[r as usize];
        let alt_name = &req.alternatives[a as usize].result_name;
        for (ci, k) in claim.constraints.iter().enumerate() {
            if !k.covers(&req.name, alt_name) {
                continue;
            }
            let ok = e.device.attribute(k.attribute).is_some_and(|v| {
                let earlier = self.picks.iter().filter(|p| p.claim == c).filter_map(|p| {
                    let preq = &claim.requests[p.request as usize];
                    k.covers(&preq.name, &preq.alternatives[p.alt as usize].result_name)
                        .then(|| self.world.devices[p.dev as usize].device.attribute(k.attribute))
                });
                constraint::admits_next(k.kind, v, earlier, self.list_attributes)
            });
            if !ok {
                if must {
                    return Err(AllocError::ConstraintViolated {
                        claim: claim.key.clone(),
                        request: alt_name.clone(),
                        device: e.id.to_string(),
                    });
                }
                self.rejected[c as usize] |= 1 << ci.min(61);
                return Ok(false);
            }
        }
        let mut share_amounts: SmallVec<[(usize, i128); 2]> = SmallVec::new();
        if e.multi && !admin {
            let alt = &self.plans[c as usize].claim.requests[r as usize].alternatives[a as usize];
            let Some(amounts) = e.consumption(&alt.capacity) else { return Ok(false) };
            for &(si, amount) in &amounts {
                let pending: i128 =
                    self.share_deltas.iter().filter(|(x, y, _)| *x == d && *y == si).map(|(_, _, v)| *v).sum();
                let used = self.in_use.shared.get(&(d, si)).copied().unwrap_or(0) + pending + amount;
                if used > e.shares[si].value {
                    self.rejected[c as usize] |= CAPACITY_BIT;
                    return Ok(false);
                }
            }
            share_amounts = amounts;
        }
        // Shared counters: an exclusive device charges them on every allocation; a
        // multi-allocatable device charges them once, with its first share, and later
        // shares (committed, in flight or picked earlier in this search) skip the check
        // (upstream `allocator_experimental.go`, `allocateDevice`: `skipCounterCheck` via
        // `deviceCapacityInUse`, kubernetes#134103, #140437; committed shares count when
        // the available counters are rebuilt, #139040; undo releases them, #140431).
        let charge = self.charges_counters(d, admin);
        if charge {
            for &(ci, amount) in &e.consumes {
                let pending: i128 = self.deltas.iter().filter(|(x, _)| *x == ci).map(|(_, v)| *v).sum();
                let used = self.in_use.counters.get(ci as usize).copied().unwrap_or(0) + pending + amount;
                if used > self.world.counter_capacity[ci as usize] {
                    self.rejected[c as usize] |= COUNTERS_BIT;
                    return Ok(false);
                }
            }
        }
        if charge {
            for &(ci, amount) in &e.consumes {
                self.deltas.push((ci, amount));
            }
        }
        for &(si, amount) in &share_amounts {
            self.share_deltas.push((d, si, amount));
        }
        self.picks.push(Pick { claim: c, request: r, alt: a, dev: d, admin, shares: share_amounts.len() as u8 });
        Ok(true)
    }

    /// Whether picking device `d` now charges its shared counters: never with admin
    /// access; always for an exclusive device; for a multi-allocatable one only when it
    /// holds no share yet (committed, in flight, or among the current picks).
    fn charges_counters(&self, d: u32, admin: bool) -> bool {
        !admin
            && (!self.world.devices[d as usize].multi
                || !(self.in_use.shared_in_use(d) || self.picks.iter().any(|p| p.dev == d && !p.admin)))
    }

    fn undo(&mut self) {
        if let Some(p) = self.picks.pop() {
            self.share_deltas.truncate(self.share_deltas.len().saturating_sub(p.shares as usize));
            // The picks left are those before `p`: the same answer try_add got.
            if self.charges_counters(p.dev, p.admin) {
                let n = self.world.devices[p.dev as usize].consumes.len();
                self.deltas.truncate(self.deltas.len().saturating_sub(n));
            }
        }
    }

    fn diagnose(&self) -> Diagnosis {
        let mut problems = Vec::new();
        for (i, &(c, r)) in self.slots.iter().enumerate() {
            let st = self.stats[i];
            if st.enough {
                continue;
            }
            let claim = &self.plans[c as usize].claim;
            let req = &claim.requests[r as usize];
            problems.push(Problem::TooFewDevices {
                claim: claim.key.clone(),
                request: req
                    .alternatives
                    .get(st.best_alt as usize)
                    .map_or_else(|| req.name.clone(), |a| a.result_name.clone()),
                matching: st.best_matching,
                available: st.best_available,
                wanted: st.wanted,
            });
        }
        if problems.is_empty() {
            for (c, plan) in self.plans.iter().enumerate() {
                let bits = self.rejected[c];
                if bits == 0 {
                    continue;
                }
                let mut causes: Vec<String> = plan
                    .claim
                    .constraints
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| bits & (1 << (*i).min(61)) != 0)
                    .map(|(_, k)| k.describe())
                    .collect();
                if bits & CAPACITY_BIT != 0 {
                    causes.push("capacity".to_owned());
                }
                if bits & COUNTERS_BIT != 0 {
                    causes.push("shared counters".to_owned());
                }
                problems.push(Problem::Unsatisfiable { claim: plan.claim.key.clone(), causes });
            }
        }
        if problems.is_empty()
            && let Some(plan) = self.plans.first()
        {
            problems.push(Problem::Unsatisfiable { claim: plan.claim.key.clone(), causes: Vec::new() });
        }
        Diagnosis { node: self.node.to_string(), problems }
    }
}
