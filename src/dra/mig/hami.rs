//! HAMi v2.10.0's MIG mode as pure functions over the same profile tables: the
//! `migProfiles` a HAMi device plugin registers, the profile and placement the scheduler
//! picks for a memory request, and the `hami.io/vgpu-mig-allocations` annotation.
//!
//! Upstream (`Project-HAMi/HAMi` v2.10.0): `pkg/device/nvidia/device.go`
//! (`selectMigCandidate`, `CustomFilterRule`, `AddResourceUsage`),
//! `pkg/device/nvidia/mig_topology.go` (`orderedMigPlacements`, `selectMigPlacement`,
//! `canPlaceMigProfiles`), `mig_profiles.go` (`ValidateMigProfileAllowlist`),
//! `mig_allocations.go`, and the device plugin's `discoverMigProfiles`
//! (`pkg/device-plugin/nvidiadevice/nvinternal/plugin/register.go`).

use serde::{Deserialize, Serialize};

use super::publish::{MigError, prefers_high};
use super::table::{GpuModel, MigTable};

/// HAMi's `MigPlacement`: `start` and `size` on the memory-slice axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct HamiMigPlacement {
    /// First memory slice.
    pub start: u32,
    /// Memory slices covered.
    pub size: u32,
}

impl HamiMigPlacement {
    /// HAMi's `migPlacementsOverlap`.
    pub fn overlaps(self, other: HamiMigPlacement) -> bool {
        self.start < other.start + other.size && other.start < self.start + self.size
    }
}

/// HAMi's `MigProfile` as registered in `hami.io/node-nvidia-register` (`migProfiles`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct HamiMigProfile {
    /// The profile name from the allowlist, e.g. `1g.10gb`.
    pub name: String,
    /// Memory in MiB (NVML `MemorySizeMB`).
    #[serde(rename = "memoryMB")]
    pub memory_mb: i32,
    /// Percent of the GPU's SMs, rounded up.
    pub core: i32,
    /// NVML `SliceCount` (compute slices).
    #[serde(rename = "sliceCount")]
    pub slice_count: u32,
    /// The possible placements NVML reports.
    #[serde(default)]
    pub placements: Vec<HamiMigPlacement>,
}

/// One entry of HAMi's `migProfileAllowlist` (device config).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct HamiMigAllowlist {
    /// Substrings of the device model this entry applies to.
    #[serde(default)]
    pub models: Vec<String>,
    /// Profile names to register, e.g. `1g.10gb`.
    #[serde(default)]
    pub profiles: Vec<String>,
}

/// HAMi's `ValidateMigProfileAllowlist`: every entry names models and profiles, and each
/// profile looks like `<N>g.<rest>`.
///
/// # Errors
/// [`MigError::InvalidAllowlist`] with HAMi's message.
pub fn validate_mig_profile_allowlist(list: &[HamiMigAllowlist]) -> Result<(), MigError> {
    for entry in list {
        if entry.models.is_empty() || entry.profiles.is_empty() {
            return Err(MigError::InvalidAllowlist("MIG profile allowlist must define models and profiles".to_owned()));
        }
        for profile in &entry.profiles {
            let valid = profile.split_once('.').is_some_and(|(head, _)| head.len() >= 2 && head.ends_with('g'));
            if !valid {
                return Err(MigError::InvalidAllowlist(format!("invalid MIG profile {profile:?}")));
            }
        }
    }
    Ok(())
}

/// The allowlist entries of HAMi v2.10.0's chart (`charts/hami/templates/scheduler/
/// device-configmap.yaml`) for the models tabled here.
pub fn default_mig_allowlist() -> Vec<HamiMigAllowlist> {
    let entry = |models: &[&str], profiles: &[&str]| HamiMigAllowlist {
        models: models.iter().map(|&m| m.to_owned()).collect(),
        profiles: profiles.iter().map(|&p| p.to_owned()).collect(),
    };
    vec![
        entry(&["A100-SXM4-40GB", "A100-40GB-PCIe", "A100-PCIE-40GB"], &["1g.5gb", "2g.10gb", "3g.20gb", "7g.40gb"]),
        entry(&["A100-SXM4-80GB", "A100-80GB-PCIe", "A100-PCIE-80GB"], &["1g.10gb", "2g.20gb", "3g.40gb", "7g.79gb"]),
        entry(&["H100-PCIE-80GB", "H100-SXM5-80GB"], &["1g.10gb", "2g.20gb", "3g.40gb", "7g.80gb"]),
        entry(&["H200 NVL", "H200-SXM5"], &["1g.18gb", "2g.35gb", "3g.71gb", "7g.141gb"]),
    ]
}

/// The `migProfiles` a HAMi device plugin registers for a GPU named `model_name` (the
/// NVML name, `NVIDIA-` prefixed when it lacks `NVIDIA`) whose hardware is `table`, as
/// `discoverMigProfiles`: the first allowlist entry with a model that is a substring of
/// the name applies; each of its profiles is looked up by its slice key (`1g`, `2g`, ...)
/// alone, so it gets the plain `N`-slice profile's memory and placements (never the
/// `+me` or two-slot `1g` variants) under the allowlist's name; `core` is the profile's
/// SMs in percent of the largest profile's, rounded up. Returns the profiles and the
/// device's `count` (the largest instance count).
pub fn hami_mig_profiles(
    model_name: &str,
    table: &MigTable,
    allowlist: &[HamiMigAllowlist],
) -> (Vec<HamiMigProfile>, u32) {
    let plain = |slices: u32| {
        table.profiles.iter().find(|p| p.compute_slices == slices && p.profile_id != 15 && !p.has_media_extensions())
    };
    let full_sms = table.profiles.iter().map(|p| p.multiprocessors).max().unwrap_or(0);
    let mut out = Vec::new();
    let mut count = 0;
    if let Some(entry) = allowlist.iter().find(|e| e.models.iter().any(|m| model_name.contains(m.as_str()))) {
        for name in &entry.profiles {
            let key = name.split_once('.').map_or(name.as_str(), |(k, _)| k);
            let Some(slices) = key.strip_suffix('g').and_then(|n| n.parse::<u32>().ok()) else { continue };
            // HAMi's map knows 1g, 2g, 3g, 4g, 6g, 7g and 8g; NVML fails for the ones a
            // model lacks, and HAMi skips them.
            let Some(p) = plain(slices) else { continue };
            let core = if full_sms > 0 { (p.multiprocessors * 100).div_ceil(full_sms) } else { 0 };
            count = count.max(p.instances);
            out.push(HamiMigProfile {
                name: name.clone(),
                memory_mb: i32::try_from(p.memory_mib).unwrap_or(i32::MAX),
                core: i32::try_from(core).unwrap_or(i32::MAX),
                slice_count: p.compute_slices,
                placements: p.starts.iter().map(|&start| HamiMigPlacement { start, size: p.memory_slices }).collect(),
            });
        }
    }
    (out, count)
}

/// [`hami_mig_profiles`] for a model's NVML product name and [`default_mig_allowlist`].
///
/// HAMi matches the allowlist's models as substrings of the NVML name unchanged, so
/// with the chart's list only the A100 names match (`NVIDIA A100-SXM4-40GB` contains
/// `A100-SXM4-40GB`); `NVIDIA H100 80GB HBM3` and `NVIDIA H200 141GB HBM3e` contain none
/// of `H100-SXM5-80GB`, `H200-SXM5`, ..., and get no profile, as in HAMi. Pass your own
/// allowlist to [`hami_mig_profiles`] for those.
pub fn hami_default_profiles(model: GpuModel) -> Vec<HamiMigProfile> {
    let t = model.table();
    hami_mig_profiles(t.product_name, t, &default_mig_allowlist()).0
}

/// HAMi's `orderedMigPlacements`: `1g.*`/`3g.*` from the highest start, others ascending
/// (a stable sort of the reported order).
pub fn ordered_mig_placements(profile: &str, placements: &[HamiMigPlacement]) -> Vec<HamiMigPlacement> {
    let mut v = placements.to_vec();
    if prefers_high(profile) {
        v.sort_by_key(|p| std::cmp::Reverse(p.start));
    } else {
        v.sort_by_key(|p| p.start);
    }
    v
}

fn free(candidate: HamiMigPlacement, occupied: &[HamiMigPlacement]) -> bool {
    occupied.iter().all(|o| !candidate.overlaps(*o))
}

/// HAMi's `selectMigPlacement`: the first placement of the profile named `profile` (the
/// first profile with that name), in [`ordered_mig_placements`] order, overlapping no
/// `occupied` one.
pub fn select_mig_placement(
    profiles: &[HamiMigProfile],
    occupied: &[HamiMigPlacement],
    profile: &str,
) -> Option<HamiMigPlacement> {
    let p = profiles.iter().find(|p| p.name == profile)?;
    ordered_mig_placements(profile, &p.placements).into_iter().find(|c| free(*c, occupied))
}

/// HAMi's `selectMigCandidate`: profiles by memory, then slice count (stable), and the
/// first with at least `memory_mb` and a free placement.
pub fn select_mig_candidate<'p>(
    profiles: &'p [HamiMigProfile],
    occupied: &[HamiMigPlacement],
    memory_mb: i32,
) -> Option<(&'p HamiMigProfile, HamiMigPlacement)> {
    let mut order: Vec<&HamiMigProfile> = profiles.iter().collect();
    order.sort_by_key(|p| (p.memory_mb, p.slice_count));
    order
        .into_iter()
        .filter(|p| p.memory_mb >= memory_mb)
        .find_map(|p| select_mig_placement(profiles, occupied, &p.name).map(|pl| (p, pl)))
}

/// The memory slices `p` covers as a bit mask (bit `i` is slice `i`): `None` for an
/// empty placement or one reaching past slice 63. The mask-based selection
/// ([`select_mig_candidate_in`]) never chooses those; real GPUs have eight slices.
pub fn placement_mask(p: HamiMigPlacement) -> Option<u64> {
    if p.size == 0 || p.start.checked_add(p.size)? > 64 {
        return None;
    }
    let width = if p.size == 64 { u64::MAX } else { (1u64 << p.size) - 1 };
    Some(width << p.start)
}

/// The placement of `placements` that [`select_mig_placement`] takes for a profile
/// named `name`, against a mask of occupied slices, without allocating: the free one
/// with the highest start for `1g.*`/`3g.*` (the first listed among equal starts, as
/// the stable sort), else the lowest start.
fn first_free(name: &str, placements: &[HamiMigPlacement], occupied: u64) -> Option<HamiMigPlacement> {
    let high = prefers_high(name);
    let mut best: Option<HamiMigPlacement> = None;
    for &p in placements {
        let Some(m) = placement_mask(p) else { continue };
        if m & occupied != 0 {
            continue;
        }
        let better = best.is_none_or(|b| if high { p.start > b.start } else { p.start < b.start });
        if better {
            best = Some(p);
        }
    }
    best
}

/// [`select_mig_candidate`] on a bit mask of occupied memory slices
/// ([`placement_mask`]), allocating nothing (the vGPU plugin's Filter path): the
/// position in `profiles` of the chosen profile and its placement. The stable sort by
/// (memory, slice count) followed by a first match is the minimum of (memory, slice
/// count, position) over the profiles that hold `memory_mb` and have a free placement;
/// each profile's placements are those of the first profile of its name, as upstream
/// looks them up by name.
pub fn select_mig_candidate_in(
    profiles: &[HamiMigProfile],
    occupied: u64,
    memory_mb: i32,
) -> Option<(usize, HamiMigPlacement)> {
    let mut best: Option<(i32, u32, usize, HamiMigPlacement)> = None;
    for (i, p) in profiles.iter().enumerate() {
        if p.memory_mb < memory_mb {
            continue;
        }
        if best.is_some_and(|(m, s, _, _)| (m, s) <= (p.memory_mb, p.slice_count)) {
            continue;
        }
        let Some(named) = profiles.iter().find(|q| q.name == p.name) else { continue };
        if let Some(pl) = first_free(&p.name, &named.placements, occupied) {
            best = Some((p.memory_mb, p.slice_count, i, pl));
        }
    }
    best.map(|(_, _, i, pl)| (i, pl))
}

/// HAMi's `canPlaceMigProfiles`: whether every requested profile gets a placement
/// overlapping neither `occupied` nor another request's, by backtracking over the
/// requests ordered by fewest placements, then largest size.
pub fn can_place_mig_profiles(profiles: &[HamiMigProfile], occupied: &[HamiMigPlacement], requested: &[&str]) -> bool {
    let placements = |name: &str| -> &[HamiMigPlacement] {
        // HAMi builds a map by name: the last profile with a name wins.
        profiles.iter().rev().find(|p| p.name == name).map_or(&[], |p| p.placements.as_slice())
    };
    let mut ordered: Vec<&str> = requested.to_vec();
    ordered.sort_by(|a, b| {
        let (l, r) = (placements(a), placements(b));
        if l.len() != r.len() {
            return l.len().cmp(&r.len());
        }
        match (l.first(), r.first()) {
            (Some(x), Some(y)) => y.size.cmp(&x.size),
            _ => std::cmp::Ordering::Equal,
        }
    });
    let mut used = occupied.to_vec();
    place(&ordered, &placements, &mut used)
}

fn place<'a>(
    left: &[&'a str],
    placements: &dyn Fn(&str) -> &'a [HamiMigPlacement],
    used: &mut Vec<HamiMigPlacement>,
) -> bool {
    let Some((first, rest)) = left.split_first() else { return true };
    for c in ordered_mig_placements(first, placements(first)) {
        if !free(c, used) {
            continue;
        }
        used.push(c);
        if place(rest, placements, used) {
            return true;
        }
        used.pop();
    }
    false
}

/// HAMi's `CustomFilterRule` in MIG mode for the device `device_id`: the devices already
/// chosen for this pod (`queued`, `(uuid, usedmem)`) that are on this device take their
/// candidates first, then the request (`memory_mb`, already resolved from a percentage)
/// needs one too.
pub fn mig_filter<'q>(
    profiles: &[HamiMigProfile],
    in_use: &[HamiMigPlacement],
    device_id: &str,
    queued: impl IntoIterator<Item = (&'q str, i32)>,
    memory_mb: i32,
) -> bool {
    let mut occupied = in_use.to_vec();
    for (uuid, mem) in queued {
        if uuid != device_id {
            continue;
        }
        let Some((_, placement)) = select_mig_candidate(profiles, &occupied, mem) else { return false };
        occupied.push(placement);
    }
    select_mig_candidate(profiles, &occupied, memory_mb).is_some()
}

/// What HAMi's `AddResourceUsage` records for a MIG device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HamiMigChoice {
    /// The profile's name.
    pub profile: String,
    /// The placement.
    pub placement: HamiMigPlacement,
    /// The container device's `usedmem` becomes the profile's memory.
    pub usedmem: i32,
    /// Its `usedcores` becomes the profile's core percentage.
    pub usedcores: i32,
}

/// HAMi's `AddResourceUsage` for a MIG device: the candidate for `usedmem` given the
/// device's allocations in use.
///
/// # Errors
/// `None` is HAMi's "MIG profile and placement allocation failed".
pub fn add_mig_usage(profiles: &[HamiMigProfile], in_use: &[HamiMigPlacement], usedmem: i32) -> Option<HamiMigChoice> {
    select_mig_candidate(profiles, in_use, usedmem).map(|(p, placement)| HamiMigChoice {
        profile: p.name.clone(),
        placement,
        usedmem: p.memory_mb,
        usedcores: p.core,
    })
}

/// HAMi's annotation carrying the scheduler's MIG reservations.
pub const MIG_ALLOCATIONS_ANNOTATION: &str = "hami.io/vgpu-mig-allocations";

/// One entry of `hami.io/vgpu-mig-allocations` (HAMi's `MigAllocation`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct HamiMigAllocation {
    /// Index of the container (HAMi's container order).
    #[serde(rename = "containerIndex")]
    pub container_index: i64,
    /// Index of the device within the container's devices.
    #[serde(rename = "deviceIndex")]
    pub device_index: i64,
    /// The physical GPU.
    #[serde(rename = "gpuUUID")]
    pub gpu_uuid: String,
    /// The profile.
    pub profile: String,
    /// The placement.
    pub placement: HamiMigPlacement,
    /// Filled in by the device plugin.
    #[serde(rename = "migUUID", default, skip_serializing_if = "String::is_empty")]
    pub mig_uuid: String,
    /// Filled in by the device plugin.
    #[serde(rename = "gpuInstanceID", default, skip_serializing_if = "Option::is_none")]
    pub gpu_instance_id: Option<u32>,
    /// Filled in by the device plugin.
    #[serde(rename = "computeInstanceID", default, skip_serializing_if = "Option::is_none")]
    pub compute_instance_id: Option<u32>,
}

/// HAMi's `EncodeMigAllocations` for entries already built: JSON, or `None` when there
/// is none (HAMi then writes no annotation).
pub fn encode_mig_allocations(list: &[HamiMigAllocation]) -> Option<String> {
    let kept: Vec<&HamiMigAllocation> =
        list.iter().filter(|a| !a.profile.is_empty() && a.placement.size != 0).collect();
    if kept.is_empty() {
        return None;
    }
    serde_json::to_string(&kept).ok()
}

/// HAMi's `DecodeMigAllocations`: an empty string is no allocation; every entry must be
/// complete, carry all three runtime fields or none, and name a distinct (container,
/// device) pair.
///
/// # Errors
/// [`MigError::InvalidAllocations`] with HAMi's reason.
pub fn decode_mig_allocations(raw: &str) -> Result<Vec<HamiMigAllocation>, MigError> {
    if raw.is_empty() {
        return Ok(Vec::new());
    }
    let out: Vec<HamiMigAllocation> =
        serde_json::from_str(raw).map_err(|e| MigError::InvalidAllocations(e.to_string()))?;
    let mut seen = std::collections::BTreeSet::new();
    for (i, a) in out.iter().enumerate() {
        if a.container_index < 0
            || a.device_index < 0
            || a.gpu_uuid.is_empty()
            || a.profile.is_empty()
            || a.placement.size == 0
        {
            return Err(MigError::InvalidAllocations(format!("MIG allocation {i} is incomplete")));
        }
        let runtime = usize::from(!a.mig_uuid.is_empty())
            + usize::from(a.gpu_instance_id.is_some())
            + usize::from(a.compute_instance_id.is_some());
        if runtime != 0 && runtime != 3 {
            return Err(MigError::InvalidAllocations(format!("MIG allocation {i} has partial runtime identity")));
        }
        if !seen.insert((a.container_index, a.device_index)) {
            return Err(MigError::InvalidAllocations(format!(
                "duplicate MIG allocation for container {} device {}",
                a.container_index, a.device_index
            )));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn pl(start: u32, size: u32) -> HamiMigPlacement {
        HamiMigPlacement { start, size }
    }

    fn profile(name: &str, memory_mb: i32, core: i32, slice_count: u32, places: &[(u32, u32)]) -> HamiMigProfile {
        HamiMigProfile {
            name: name.into(),
            memory_mb,
            core,
            slice_count,
            placements: places.iter().map(|&(s, z)| pl(s, z)).collect(),
        }
    }

    /// `a100MigProfiles` of HAMi's `mig_capability_test.go`.
    fn a100() -> Vec<HamiMigProfile> {
        vec![
            profile("1g.5gb", 5120, 14, 1, &[(0, 1), (1, 1), (2, 1), (3, 1), (4, 1), (5, 1), (6, 1)]),
            profile("2g.10gb", 10240, 28, 2, &[(0, 2), (2, 2), (4, 2)]),
            profile("3g.20gb", 20480, 42, 3, &[(0, 4), (4, 4)]),
        ]
    }

    #[test]
    fn can_place_mig_profiles_a100() {
        // HAMi mig_topology_test.go, TestCanPlaceMigProfilesA100.
        let p = a100();
        assert!(can_place_mig_profiles(&p, &[], &["3g.20gb", "2g.10gb", "1g.5gb", "1g.5gb"]));
        assert!(can_place_mig_profiles(&p, &[pl(4, 4)], &["2g.10gb", "1g.5gb", "1g.5gb"]));
        assert!(!can_place_mig_profiles(&p, &[pl(0, 4), pl(4, 4)], &["1g.5gb"]));
        assert!(!can_place_mig_profiles(&p, &[pl(0, 2), pl(2, 2), pl(4, 2)], &["2g.10gb"]));
        assert!(can_place_mig_profiles(&p, &[pl(0, 4)], &[]));
    }

    #[test]
    fn select_mig_placement_uses_balanced_packing() {
        // HAMi mig_topology_test.go, TestSelectMigPlacementUsesBalancedPacking.
        let p = a100();
        let mut occupied = Vec::new();
        for (name, start) in [("3g.20gb", 4), ("2g.10gb", 0), ("1g.5gb", 3), ("1g.5gb", 2)] {
            let got = select_mig_placement(&p, &occupied, name).unwrap();
            assert_eq!(got.start, start, "{name}");
            occupied.push(got);
        }
        assert_eq!(select_mig_placement(&p, &occupied, "7g.40gb"), None);
    }

    #[test]
    fn add_resource_usage_uses_reported_profile_and_placement() {
        // HAMi mig_capability_test.go, TestAddResourceUsageUsesReportedProfileAndPlacement.
        let c = add_mig_usage(&a100(), &[], 10000).unwrap();
        assert_eq!((c.usedmem, c.usedcores), (10240, 28));
        assert_eq!((c.profile.as_str(), c.placement), ("2g.10gb", pl(0, 2)));
        assert_eq!(add_mig_usage(&a100(), &[], 30000), None);
    }

    #[test]
    fn custom_filter_uses_reported_placement_capacity() {
        // HAMi mig_capability_test.go, TestCustomFilterUsesReportedPlacementCapacity and
        // TestCustomFilterIgnoresQueuedAllocationsForOtherGPUs.
        let p = a100();
        let used = [pl(0, 2), pl(2, 2), pl(4, 2)];
        assert!(!mig_filter(&p, &used, "GPU-a", [], 10000), "fourth 2g");
        assert!(mig_filter(&p, &used, "GPU-a", [], 5000), "1g fits the remaining placement");
        assert!(mig_filter(&p, &used, "GPU-a", [("GPU-b", 5000)], 5000), "queued on another GPU");
        assert!(!mig_filter(&p, &used, "GPU-a", [("GPU-a", 5000)], 5000), "two on the last placement");
    }

    #[test]
    fn percentage_memory_needs_a_large_enough_profile() {
        // HAMi mig_capability_test.go, TestFitUsesEffectivePercentageMemoryForMigPlacement:
        // 25% of 40960 MiB is 10240, which only 2g (all placed) or 3g (overlapping) hold.
        let mem = 40960 * 25 / 100;
        assert!(!mig_filter(&a100(), &[pl(0, 2), pl(2, 2), pl(4, 2)], "GPU-a", [], mem));
        // device_test.go, TestFit_MigPercentageRequestRejectsUndersizedTemplate: a device
        // without migProfiles fits nothing.
        assert!(!mig_filter(&[], &[], "dev-0", [], 8192 * 50 / 100));
    }

    #[test]
    fn validate_allowlist() {
        // HAMi mig_profiles_test.go, TestValidateMigProfileAllowlist.
        let ok = HamiMigAllowlist { models: vec!["A100".into()], profiles: vec!["1g.5gb".into(), "2g.10gb".into()] };
        assert_eq!(validate_mig_profile_allowlist(&[ok]), Ok(()));
        let none = HamiMigAllowlist { models: vec!["A100".into()], profiles: vec![] };
        assert!(validate_mig_profile_allowlist(&[none]).is_err());
        for bad in ["1g", "g.5gb", "1x.5gb", ".5gb"] {
            let e = HamiMigAllowlist { models: vec!["A100".into()], profiles: vec![bad.into()] };
            assert!(validate_mig_profile_allowlist(&[e]).is_err(), "{bad}");
        }
        assert_eq!(validate_mig_profile_allowlist(&default_mig_allowlist()), Ok(()));
    }

    #[test]
    fn encode_decode_allocations() {
        // HAMi mig_profiles_test.go: TestEncodeDecodeMigAllocations,
        // TestDecodeMigAllocationsRejectsDuplicateDeviceIndex,
        // TestDecodeMigAllocationsPreservesZeroRuntimeInstanceIDs,
        // TestDecodeMigAllocationsRejectsPartialRuntimeIdentity.
        let a = HamiMigAllocation {
            gpu_uuid: "GPU-a".into(),
            profile: "1g.5gb".into(),
            placement: pl(6, 1),
            ..HamiMigAllocation::default()
        };
        let raw = encode_mig_allocations(std::slice::from_ref(&a)).unwrap();
        assert_eq!(
            raw,
            r#"[{"containerIndex":0,"deviceIndex":0,"gpuUUID":"GPU-a","profile":"1g.5gb","placement":{"start":6,"size":1}}]"#
        );
        assert_eq!(decode_mig_allocations(&raw).unwrap(), vec![a]);
        assert_eq!(encode_mig_allocations(&[]), None);
        assert_eq!(decode_mig_allocations("").unwrap(), vec![]);
        let dup = r#"[{"containerIndex":0,"deviceIndex":0,"gpuUUID":"GPU-a","profile":"1g.5gb","placement":{"start":6,"size":1}},{"containerIndex":0,"deviceIndex":0,"gpuUUID":"GPU-a","profile":"1g.5gb","placement":{"start":5,"size":1}}]"#;
        assert_eq!(
            decode_mig_allocations(dup),
            Err(MigError::InvalidAllocations("duplicate MIG allocation for container 0 device 0".into()))
        );
        let zero = r#"[{"containerIndex":0,"deviceIndex":0,"gpuUUID":"GPU-a","profile":"2g.10gb","placement":{"start":0,"size":2},"migUUID":"MIG-a","gpuInstanceID":4,"computeInstanceID":0}]"#;
        let got = decode_mig_allocations(zero).unwrap();
        assert_eq!((got[0].gpu_instance_id, got[0].compute_instance_id), (Some(4), Some(0)));
        let partial = r#"[{"containerIndex":0,"deviceIndex":0,"gpuUUID":"GPU-a","profile":"2g.10gb","placement":{"start":0,"size":2},"migUUID":"MIG-a"}]"#;
        assert!(decode_mig_allocations(partial).is_err());
        assert!(decode_mig_allocations("{").is_err());
        let incomplete = r#"[{"containerIndex":0,"deviceIndex":0,"gpuUUID":"","profile":"2g.10gb","placement":{"start":0,"size":2}}]"#;
        assert_eq!(
            decode_mig_allocations(incomplete),
            Err(MigError::InvalidAllocations("MIG allocation 0 is incomplete".into()))
        );
    }

    #[test]
    fn registered_profiles_come_from_the_tables() {
        // The migProfiles a HAMi device plugin registers on an A100-40GB with the chart's
        // allowlist, as discoverMigProfiles derives them (TestGetNodeDevices_MigProfilesFromNode
        // reads the same shape back).
        let p = hami_default_profiles(GpuModel::A100_40GB);
        let got: Vec<_> =
            p.iter().map(|p| (p.name.as_str(), p.memory_mb, p.core, p.slice_count, p.placements.len())).collect();
        assert_eq!(
            got,
            [
                ("1g.5gb", 4864, 15, 1, 7),
                ("2g.10gb", 9856, 29, 2, 3),
                ("3g.20gb", 19968, 43, 3, 2),
                ("7g.40gb", 40192, 100, 7, 1)
            ]
        );
        let json = serde_json::to_value(&p[0]).unwrap();
        assert_eq!(json["memoryMB"], 4864);
        assert_eq!(json["placements"][0], serde_json::json!({"start": 0, "size": 1}));
        assert_eq!(hami_default_profiles(GpuModel::A100_80GB).len(), 4);
        // The chart's H100/H200 model strings are not substrings of NVML's names.
        assert_eq!(hami_default_profiles(GpuModel::H100_80GB), vec![]);
        assert_eq!(hami_default_profiles(GpuModel::H200_141GB), vec![]);
        // A 1g.20gb request resolves to the plain 1-slice profile (HAMi keys by "1g").
        let custom =
            HamiMigAllowlist { models: vec!["H100".into()], profiles: vec!["1g.20gb".into(), "5g.50gb".into()] };
        let (h, count) = hami_mig_profiles("NVIDIA H100 80GB HBM3", GpuModel::H100_80GB.table(), &[custom]);
        assert_eq!((h.len(), h[0].memory_mb, h[0].placements.len(), count), (1, 9984, 7, 7));
        assert_eq!(hami_mig_profiles("NVIDIA V100", GpuModel::H100_80GB.table(), &default_mig_allowlist()).0, vec![]);
        // The HAMi choice for 1g-sized requests on the registered A100 table, in order.
        let mut used = Vec::new();
        let starts: Vec<u32> = (0..8)
            .map_while(|_| {
                let c = add_mig_usage(&p, &used, 4000)?;
                used.push(c.placement);
                Some(c.placement.start)
            })
            .collect();
        assert_eq!(starts, [6, 5, 4, 3, 2, 1, 0]);
    }

    #[test]
    fn placement_masks() {
        assert_eq!(placement_mask(pl(0, 1)), Some(1));
        assert_eq!(placement_mask(pl(4, 4)), Some(0xf0));
        assert_eq!(placement_mask(pl(0, 64)), Some(u64::MAX));
        assert_eq!(placement_mask(pl(0, 0)), None);
        assert_eq!(placement_mask(pl(60, 5)), None);
        assert_eq!(placement_mask(pl(u32::MAX, 2)), None);
    }

    fn mask_of(occupied: &[HamiMigPlacement]) -> u64 {
        occupied.iter().filter_map(|p| placement_mask(*p)).fold(0, |a, m| a | m)
    }

    proptest! {
        /// The mask-based choice is HAMi's sort-and-scan choice on the A100 table and
        /// on the tables derived for every model.
        #[test]
        fn mask_selection_matches_upstream(
            model in 0usize..4,
            occupied in proptest::collection::vec((0u32..8, 1u32..5), 0..4),
            memory in 0i32..50_000,
        ) {
            let models = [GpuModel::A100_40GB, GpuModel::A100_80GB, GpuModel::H100_80GB, GpuModel::H200_141GB];
            let all: Vec<String> = ["1g.a", "2g.b", "3g.c", "4g.d", "7g.e"].map(String::from).to_vec();
            let allow = [HamiMigAllowlist { models: vec![String::new()], profiles: all }];
            let t = models[model].table();
            let (derived, _) = hami_mig_profiles(t.product_name, t, &allow);
            let occupied: Vec<HamiMigPlacement> = occupied.into_iter().map(|(s, z)| pl(s, z.min(8 - s).max(1))).collect();
            for profiles in [a100(), derived] {
                let want = select_mig_candidate(&profiles, &occupied, memory).map(|(p, pl)| (p.name.clone(), pl));
                let got = select_mig_candidate_in(&profiles, mask_of(&occupied), memory)
                    .map(|(i, pl)| (profiles[i].name.clone(), pl));
                prop_assert_eq!(got, want);
            }
        }
    }
}
