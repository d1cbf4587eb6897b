//! Fit as HAMi v2.10.0: one container's request against a sorted device list
//! ([`fit`], upstream `pkg/device/nvidia/device.go` `Fit`), its skip reasons
//! ([`FitReason`], [`FitFailure`], upstream `pkg/device/common` `GenReason`), and a whole
//! pod on a node's devices ([`fit_pod`], upstream `pkg/scheduler/score.go`
//! `fitInDevices` / `scoreNode` with init-container peaks).
//!
//! Everything here works on stack buffers ([`SmallVec`]s sized for eight devices), so
//! Filter allocates nothing per node with up to eight devices; messages are built only
//! on failure.

use std::fmt;

use smallvec::SmallVec;

use super::device::{MIG_MODE, cordoned};
use super::policy::{ScoreInput, SortKey, device_score};
use super::steering::{Steering, contains_upper};
use super::{ContainerRequest, DeviceInfo, NVIDIA_GPU_DEVICE, PodRequests};
use crate::dra::mig::{HamiMigPlacement, placement_mask, select_mig_candidate_in};

/// What is used of a device: time slices, memory (MiB), cores (percent).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Usage {
    /// Time slices (tasks) on the device.
    pub used: i32,
    /// Memory, MiB.
    pub usedmem: i32,
    /// Cores, percent.
    pub usedcores: i32,
    /// Memory slices held by MIG instances on a `mig`-mode device (bit `i` is slice
    /// `i`, see [`placement_mask`]); HAMi's `MigAllocationsInUse`.
    pub mig: u64,
}

impl Usage {
    /// The use of `used` tasks, `usedmem` MiB and `usedcores` percent, no MIG slice.
    pub const fn new(used: i32, usedmem: i32, usedcores: i32) -> Usage {
        Usage { used, usedmem, usedcores, mig: 0 }
    }

    /// The larger of each count; MIG slices held by either.
    pub(super) fn max(self, o: Usage) -> Usage {
        Usage {
            used: self.used.max(o.used),
            usedmem: self.usedmem.max(o.usedmem),
            usedcores: self.usedcores.max(o.usedcores),
            mig: self.mig | o.mig,
        }
    }
}

/// A device as Fit sees it: its registration and what is used of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceUsage<'a> {
    /// The registered device.
    pub info: &'a DeviceInfo,
    /// Its use.
    pub usage: Usage,
}

impl DeviceUsage<'_> {
    pub(super) fn score_input(&self) -> ScoreInput<'_> {
        ScoreInput {
            kind: &self.info.kind,
            count: self.info.count,
            totalcore: self.info.devcore,
            totalmem: self.info.devmem,
            used: self.usage.used,
            usedcores: self.usage.usedcores,
            usedmem: self.usage.usedmem,
        }
    }
}

/// Why Fit skipped a device (upstream `pkg/device/common` reason names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
#[non_exhaustive]
pub enum FitReason {
    /// The device is unhealthy.
    CardNotHealth,
    /// The device is in the node's `hami.io/device-cordon` list.
    CardCordoned,
    /// Type, mode or request type don't match.
    CardTypeMismatch,
    /// A partial same-NUMA selection was discarded at a NUMA change.
    NumaNotFit,
    /// The UUID lists exclude the device.
    CardUuidMismatch,
    /// Every time slice is taken.
    CardTimeSlicingExhausted,
    /// mutex, or an exclusive (100-core) request, on a used device.
    ExclusiveDeviceAllocateConflict,
    /// Too little free memory.
    CardInsufficientMemory,
    /// Too few free cores.
    CardInsufficientCore,
    /// All cores taken and the request asks for none.
    CardComputeUnitsExhausted,
    /// A MIG device with no free placement of a profile holding the request (after the
    /// instances this container already takes on it).
    CardMigTopologyInfeasible,
    /// Fewer devices fit than requested (the count of those that did).
    AllocatedCardsInsufficientRequest,
}

const REASONS: usize = 12;

impl FitReason {
    const ALL: [FitReason; REASONS] = [
        FitReason::CardNotHealth,
        FitReason::CardCordoned,
        FitReason::CardTypeMismatch,
        FitReason::NumaNotFit,
        FitReason::CardUuidMismatch,
        FitReason::CardTimeSlicingExhausted,
        FitReason::ExclusiveDeviceAllocateConflict,
        FitReason::CardInsufficientMemory,
        FitReason::CardInsufficientCore,
        FitReason::CardComputeUnitsExhausted,
        FitReason::CardMigTopologyInfeasible,
        FitReason::AllocatedCardsInsufficientRequest,
    ];

    /// Upstream's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            FitReason::CardNotHealth => "CardNotHealth",
            FitReason::CardCordoned => "CardCordoned",
            FitReason::CardTypeMismatch => "CardTypeMismatch",
            FitReason::NumaNotFit => "NumaNotFit",
            FitReason::CardUuidMismatch => "CardUuidMismatch",
            FitReason::CardTimeSlicingExhausted => "CardTimeSlicingExhausted",
            FitReason::ExclusiveDeviceAllocateConflict => "ExclusiveDeviceAllocateConflict",
            FitReason::CardInsufficientMemory => "CardInsufficientMemory",
            FitReason::CardInsufficientCore => "CardInsufficientCore",
            FitReason::CardComputeUnitsExhausted => "CardComputeUnitsExhausted",
            FitReason::CardMigTopologyInfeasible => "CardMigTopologyInfeasible",
            FitReason::AllocatedCardsInsufficientRequest => "AllocatedCardsInsufficientRequest",
        }
    }
}

/// Skip counts per reason (a reason counts as present once touched, even at 0, as
/// upstream's map).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ReasonCounts {
    counts: [u32; REASONS],
    present: u16,
}

impl ReasonCounts {
    #[inline]
    fn add(&mut self, r: FitReason, n: u32) {
        self.counts[r as usize] += n;
        self.present |= 1 << r as u16;
    }

    #[inline]
    fn set(&mut self, r: FitReason, n: u32) {
        self.counts[r as usize] = n;
        self.present |= 1 << r as u16;
    }

    /// The count of `r`, `None` when never touched.
    pub fn get(&self, r: FitReason) -> Option<u32> {
        (self.present & (1 << r as u16) != 0).then_some(self.counts[r as usize])
    }
}

/// Why a pod's devices don't fit on a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FitFailure {
    /// The node registers no HAMi device (upstream `node unregistered`).
    Unregistered,
    /// The request asks for more devices than the node has of the type.
    NodeInsufficientDevice,
    /// Booking a MIG instance Fit accepted found no placement (upstream's
    /// `AddResourceUsage` failure; Fit and booking choose alike, so this is defensive).
    MigAllocation,
    /// Fit skipped devices: the counts and the number of devices looked at.
    Devices {
        /// Skips per reason.
        counts: ReasonCounts,
        /// Devices of the type.
        total: usize,
    },
}

impl fmt::Display for FitFailure {
    /// Upstream's reason text: `node unregistered`, `NodeInsufficientDevice`, or
    /// `GenReason`'s `"<n>/<total> <Reason>"` entries sorted as strings, joined by `, `.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FitFailure::Unregistered => f.write_str("node unregistered"),
            FitFailure::NodeInsufficientDevice => f.write_str("NodeInsufficientDevice"),
            FitFailure::MigAllocation => {
                f.write_str("AddResourceUsage failed: MIG profile and placement allocation failed")
            }
            FitFailure::Devices { counts, total } => {
                // Upstream sorts the "<n>/<total> <Reason>" strings. With one total, that
                // order is the count's decimal digits compared as text (a shorter prefix
                // first, as '/' sorts before digits), then the reason's name: sorted here
                // on the stack, written without an intermediate string.
                let mut parts: SmallVec<[(Digits, &'static str); REASONS]> =
                    FitReason::ALL.iter().filter_map(|&r| counts.get(r).map(|n| (Digits::of(n), r.as_str()))).collect();
                parts.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()).then(a.1.cmp(b.1)));
                for (i, (n, reason)) in parts.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{}/{total} {reason}", n.as_str())?;
                }
                Ok(())
            }
        }
    }
}

/// A `u32` in decimal on the stack.
#[derive(Clone, Copy)]
struct Digits {
    buf: [u8; 10],
    start: u8,
}

impl Digits {
    fn of(mut n: u32) -> Digits {
        let mut d = Digits { buf: [b'0'; 10], start: 10 };
        loop {
            d.start -= 1;
            d.buf[d.start as usize] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                return d;
            }
        }
    }

    fn as_bytes(&self) -> &[u8] {
        &self.buf[self.start as usize..]
    }

    fn as_str(&self) -> &str {
        // Only ASCII digits are written.
        std::str::from_utf8(self.as_bytes()).unwrap_or("0")
    }
}

/// A device Fit took: its position in the list given to [`fit`], and what it books.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chosen {
    /// Position in the device list.
    pub device: usize,
    /// Memory booked, MiB.
    pub usedmem: i32,
    /// Cores booked.
    pub usedcores: i32,
}

/// Fits one container's request on `devices`, already sorted by the GPU policy,
/// walking from the last to the first (upstream `Fit`), and leaves the devices taken in
/// `out`, in walk order. The checks, in upstream's order: health, cordon, type and mode
/// (and numa-bind's same-NUMA run), UUID lists, free slices, mutex, cores clamped to
/// 100, memory, cores, exclusive 100-core use, compute units exhausted, MIG. A device in
/// `mig` mode fits when a profile holding the memory request has a free placement after
/// the instances this container already queued on it (upstream `CustomFilterRule`), and
/// after taking it the walk looks at the same device again (upstream's `i++`), so one
/// container can take several instances of one GPU; upstream does so even when nothing
/// was taken, which loops forever for a zero-device request under `topology-aware`, and
/// here it does not. With
/// `topology-aware` every fitting device is collected and the first `nums` are taken
/// (upstream picks by the `hami.io/node-nvidia-score` pair scores, which are not read
/// here, so every pair counts 0, as upstream without that annotation). HAMi
/// ResourceQuota checks are not modelled.
pub fn fit(
    devices: &[DeviceUsage<'_>],
    req: &ContainerRequest,
    st: &Steering,
    cordon: Option<&str>,
    out: &mut SmallVec<[Chosen; 8]>,
) -> Result<(), FitFailure> {
    out.clear();
    let origin = req.nums;
    let mut nums = req.nums;
    let mut cores = req.coresreq;
    let mut prevnuma = -1;
    let topo = st.gpu_policy.topology_aware;
    let mut counts = ReasonCounts::default();
    let nvidia = req.kind == NVIDIA_GPU_DEVICE;
    let mut i = devices.len();
    while i > 0 {
        i -= 1;
        let d = &devices[i];
        let (info, u) = (d.info, d.usage);
        if !info.health {
            counts.add(FitReason::CardNotHealth, 1);
            continue;
        }
        if cordoned(cordon, &info.id) {
            counts.add(FitReason::CardCordoned, 1);
            continue;
        }
        if !(nvidia && st.type_allowed(&info.kind) && st.mode_allowed(&info.mode)) {
            counts.add(FitReason::CardTypeMismatch, 1);
            continue;
        }
        if st.numa_bind && prevnuma != info.numa {
            if nums != origin {
                counts.add(FitReason::NumaNotFit, out.len() as u32);
            }
            nums = origin;
            prevnuma = info.numa;
            out.clear();
        }
        if !st.uuid_allowed(&info.id) {
            counts.add(FitReason::CardUuidMismatch, 1);
            continue;
        }
        if info.count <= u.used {
            counts.add(FitReason::CardTimeSlicingExhausted, 1);
            continue;
        }
        if st.gpu_policy.mutex && u.used > 0 {
            counts.add(FitReason::ExclusiveDeviceAllocateConflict, 1);
            continue;
        }
        cores = cores.min(100);
        let memreq = req.memory_on(info.devmem);
        if info.devmem.wrapping_sub(u.usedmem) < memreq {
            counts.add(FitReason::CardInsufficientMemory, 1);
            continue;
        }
        if info.devcore.wrapping_sub(u.usedcores) < cores {
            counts.add(FitReason::CardInsufficientCore, 1);
            continue;
        }
        if info.devcore == 100 && cores == 100 && u.used > 0 {
            counts.add(FitReason::ExclusiveDeviceAllocateConflict, 1);
            continue;
        }
        if info.devcore != 0 && u.usedcores == info.devcore && cores == 0 {
            counts.add(FitReason::CardComputeUnitsExhausted, 1);
            continue;
        }
        let mig = info.mode == MIG_MODE;
        if mig && !mig_fits(info, u.mig, out, i, memreq) {
            counts.add(FitReason::CardMigTopologyInfeasible, 1);
            continue;
        }
        let took = nums > 0;
        if took {
            if !topo {
                nums -= 1;
            }
            out.push(Chosen { device: i, usedmem: memreq, usedcores: cores });
        }
        if nums == 0 && !topo {
            return Ok(());
        }
        if mig && took {
            i += 1;
        }
    }
    if topo && out.len() >= origin.max(0) as usize {
        out.truncate(origin.max(0) as usize);
        return Ok(());
    }
    if !out.is_empty() {
        counts.set(FitReason::AllocatedCardsInsufficientRequest, out.len() as u32);
    }
    Err(FitFailure::Devices { counts, total: devices.len() })
}

/// Upstream `CustomFilterRule` in MIG mode on the device at `i` with slices `in_use`:
/// the instances queued on it in `out` take their candidates first, then `memreq`
/// needs one.
fn mig_fits(info: &DeviceInfo, in_use: u64, out: &[Chosen], i: usize, memreq: i32) -> bool {
    let mut occupied = in_use;
    for c in out.iter().filter(|c| c.device == i) {
        let Some((_, pl)) = select_mig_candidate_in(&info.mig_profiles, occupied, c.usedmem) else { return false };
        occupied |= placement_mask(pl).unwrap_or(0);
    }
    select_mig_candidate_in(&info.mig_profiles, occupied, memreq).is_some()
}

/// The MIG instance a [`Pick`] on a `mig`-mode device books.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MigPick {
    /// Position of the profile in the device's [`DeviceInfo::mig_profiles`].
    pub profile: usize,
    /// Its placement.
    pub placement: HamiMigPlacement,
}

/// A device a pod's container took on a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pick {
    /// Container position in [`PodRequests::containers`] (init containers first).
    pub container: usize,
    /// Device position in the node's registration.
    pub device: usize,
    /// Memory booked, MiB.
    pub usedmem: i32,
    /// Cores booked.
    pub usedcores: i32,
    /// On a `mig`-mode device, the instance: `usedmem` and `usedcores` are then the
    /// profile's memory and core percentage (upstream `AddResourceUsage`).
    pub mig: Option<MigPick>,
}

/// The result of [`fit_pod`] and its reusable buffers.
#[derive(Debug, Clone, Default)]
pub struct PodFit {
    /// The devices each container took, init containers first, each container's in
    /// Fit's order.
    pub picks: SmallVec<[Pick; 8]>,
    /// Per device of the node: the use the pod adds (the peak of its init containers
    /// and its app containers, upstream `applyPeakUsage`).
    pub deltas: SmallVec<[Usage; 8]>,
    work: SmallVec<[Usage; 8]>,
    peak: SmallVec<[Usage; 8]>,
    order: SmallVec<[u16; 8]>,
}

/// Fits every container of a pod on a node's `devices` with use `base` (upstream
/// `scoreNode`): each init container on its own copy of `base` (the peak use is kept),
/// then the app containers one after another on one copy, each after scoring the
/// devices ([`device_score`]) and sorting them by the pod's GPU policy (a stable sort,
/// which Go's `sort.Sort` is for up to 12 devices). On success `out` holds the picks
/// and the use the pod adds per device.
pub fn fit_pod(
    devices: &[DeviceInfo],
    base: &[Usage],
    cordon: Option<&str>,
    reqs: &PodRequests,
    st: &Steering,
    out: &mut PodFit,
) -> Result<(), FitFailure> {
    if devices.is_empty() || devices.len() != base.len() {
        return Err(FitFailure::Unregistered);
    }
    out.picks.clear();
    out.peak.clear();
    out.peak.extend_from_slice(base);
    for (ci, r) in reqs.containers.iter().enumerate().take(reqs.init_containers) {
        let Some(r) = r else { continue };
        out.work.clear();
        out.work.extend_from_slice(base);
        reset_order(&mut out.order, devices.len());
        fit_container(devices, &mut out.work, &mut out.order, r, st, cordon, ci, &mut out.picks)?;
        for (p, w) in out.peak.iter_mut().zip(&out.work) {
            *p = p.max(*w);
        }
    }
    out.work.clear();
    out.work.extend_from_slice(base);
    reset_order(&mut out.order, devices.len());
    for (ci, r) in reqs.containers.iter().enumerate().skip(reqs.init_containers) {
        let Some(r) = r else { continue };
        fit_container(devices, &mut out.work, &mut out.order, r, st, cordon, ci, &mut out.picks)?;
    }
    out.deltas.clear();
    for ((w, p), b) in out.work.iter().zip(&out.peak).zip(base) {
        let f = w.max(*p);
        out.deltas.push(Usage {
            used: f.used - b.used,
            usedmem: f.usedmem - b.usedmem,
            usedcores: f.usedcores - b.usedcores,
            mig: f.mig & !b.mig,
        });
    }
    Ok(())
}

fn reset_order(order: &mut SmallVec<[u16; 8]>, n: usize) {
    order.clear();
    order.extend((0..n).map(|i| i as u16));
}

/// One container on the working copy (upstream `fitInDevices` for one request).
#[expect(clippy::too_many_arguments, reason = "the buffers of one pod's fit, passed apart to borrow them separately")]
fn fit_container(
    devices: &[DeviceInfo],
    usage: &mut [Usage],
    order: &mut SmallVec<[u16; 8]>,
    req: &ContainerRequest,
    st: &Steering,
    cordon: Option<&str>,
    container: usize,
    picks: &mut SmallVec<[Pick; 8]>,
) -> Result<(), FitFailure> {
    let view = |d: usize| DeviceUsage { info: &devices[d], usage: usage[d] };
    let mut keys: SmallVec<[SortKey; 8]> = SmallVec::with_capacity(devices.len());
    for d in 0..devices.len() {
        let v = view(d);
        let score = device_score(&v.score_input(), std::slice::from_ref(req), st.weights);
        keys.push(SortKey { score, numa: v.info.numa, used: v.usage.used, index: v.info.index });
    }
    // Stable insertion sort of the persistent order.
    for i in 1..order.len() {
        let mut j = i;
        while j > 0 && st.gpu_policy.less(st.numa_bind, &keys[order[j] as usize], &keys[order[j - 1] as usize]) {
            order.swap(j, j - 1);
            j -= 1;
        }
    }
    let mut typed: SmallVec<[DeviceUsage<'_>; 8]> = SmallVec::new();
    let mut typed_idx: SmallVec<[u16; 8]> = SmallVec::new();
    let want_upper = "NVIDIA";
    for &d in order.iter() {
        if contains_upper(&devices[d as usize].kind, want_upper) {
            typed.push(view(d as usize));
            typed_idx.push(d);
        }
    }
    let mig_request =
        st.mode.as_deref().is_none_or(|m| m.contains(MIG_MODE)) && typed.iter().any(|d| d.info.mode == MIG_MODE);
    if req.nums.max(0) as usize > typed.len() && !mig_request {
        return Err(FitFailure::NodeInsufficientDevice);
    }
    let mut chosen: SmallVec<[Chosen; 8]> = SmallVec::new();
    fit(&typed, req, st, cordon, &mut chosen)?;
    for c in &chosen {
        let d = typed_idx[c.device] as usize;
        let u = &mut usage[d];
        let (mut usedmem, mut usedcores, mut mig) = (c.usedmem, c.usedcores, None);
        let info = &devices[d];
        if info.mode == MIG_MODE {
            // Upstream AddResourceUsage: the candidate for the request on the slices
            // in use, whose profile's memory and cores are what the device books.
            let Some((pi, placement)) = select_mig_candidate_in(&info.mig_profiles, u.mig, c.usedmem) else {
                return Err(FitFailure::MigAllocation);
            };
            let p = &info.mig_profiles[pi];
            (usedmem, usedcores) = (p.memory_mb, p.core);
            u.mig |= placement_mask(placement).unwrap_or(0);
            mig = Some(MigPick { profile: pi, placement });
        }
        u.used = u.used.wrapping_add(1);
        u.usedcores = u.usedcores.wrapping_add(usedcores);
        u.usedmem = u.usedmem.wrapping_add(usedmem);
        picks.push(Pick { container, device: d, usedmem, usedcores, mig });
    }
    Ok(())
}

#[cfg(test)]
#[path = "fit_tests.rs"]
mod tests;
