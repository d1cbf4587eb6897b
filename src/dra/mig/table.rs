//! MIG profile tables per GPU model: each GPU-instance profile's memory and compute
//! slices, engines and valid placements, as NVML and `nvidia-smi mig -lgip/-lgipp` report them.
//!
//! Sources (facts only, restated):
//! - profile names, fractions, engine counts and instance counts: NVIDIA's *MIG User
//!   Guide* (docs.nvidia.com/datacenter/tesla/mig-user-guide, "Supported MIG Profiles",
//!   tables "GPU Instance Profiles on A100 / H100 / H200");
//! - placements: the guide's `nvidia-smi mig -lgipp` listing (`{starts}:size` on the
//!   8-slot memory axis), the same on A100, H100 and H200;
//! - GI profile ids (19, 20, 15, 14, 9, 5, 0), memory in MiB and SM counts: `nvidia-smi
//!   mig -lgip` listings of each model, and go-nvml's `pkg/nvml/mock/shared/gpus/a100.go`
//!   for A100-40GB. Where a figure is derived rather than read, the row says so.

/// Memory slices of every model here (the guide's "GPU memory slice": one eighth of
/// the memory); placements index this axis.
pub const MEMORY_SLICES: u32 = 8;
/// Compute (SM) slices of every model here (one seventh of the SMs in MIG mode).
pub const COMPUTE_SLICES: u32 = 7;

/// One GPU-instance profile of one GPU model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MigProfile {
    /// The profile as `nvidia-smi` names it, e.g. `1g.10gb` or `1g.10gb+me`.
    pub name: &'static str,
    /// The GPU-instance profile id `nvidia-smi mig -lgip` shows (NVML
    /// `GpuInstanceProfileInfo.Id`): 19 for the 1-slice profile, 0 for the full one.
    pub profile_id: u32,
    /// Compute slices (the `Ng` of the name).
    pub compute_slices: u32,
    /// Memory slices a placement covers (the `size` of `{start}:size`).
    pub memory_slices: u32,
    /// Memory in MiB (NVML `MemorySizeMB`, which is MiB).
    pub memory_mib: u64,
    /// Streaming multiprocessors.
    pub multiprocessors: u32,
    /// Copy engines.
    pub copy_engines: u32,
    /// Video decoders (NVDEC).
    pub decoders: u32,
    /// Video encoders (NVENC); zero on every model here.
    pub encoders: u32,
    /// JPEG decoders (NVJPG).
    pub jpeg_engines: u32,
    /// Optical-flow accelerators (OFA).
    pub ofa_engines: u32,
    /// How many instances of this profile one GPU holds at most.
    pub instances: u32,
    /// Valid placement starts on the memory-slice axis, ascending.
    pub starts: &'static [u32],
}

impl MigProfile {
    /// Whether this profile carries media extensions (`+me`): at most one per GPU.
    pub fn has_media_extensions(&self) -> bool {
        self.name.ends_with("+me")
    }

    /// The memory slices `[start, start + memory_slices)` a placement at `start` covers,
    /// as a bit mask (bit `i` = memory slice `i`).
    pub fn mask(&self, start: u32) -> u32 {
        ((1u32 << self.memory_slices) - 1) << start
    }

    /// Whether `start` is one of the profile's valid placements.
    pub fn is_valid_start(&self, start: u32) -> bool {
        self.starts.contains(&start)
    }
}

/// A GPU model with a MIG profile table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum GpuModel {
    /// A100 40GB (SXM4 or PCIe).
    A100_40GB,
    /// A100 80GB (SXM4 or PCIe).
    A100_80GB,
    /// H100 80GB (SXM5 or PCIe).
    H100_80GB,
    /// H200 141GB (SXM5 or NVL).
    H200_141GB,
}

impl GpuModel {
    /// Every model with a table.
    pub const ALL: [GpuModel; 4] =
        [GpuModel::A100_40GB, GpuModel::A100_80GB, GpuModel::H100_80GB, GpuModel::H200_141GB];

    /// The model's MIG table.
    pub fn table(self) -> &'static MigTable {
        match self {
            GpuModel::A100_40GB => &A100_40GB,
            GpuModel::A100_80GB => &A100_80GB,
            GpuModel::H100_80GB => &H100_80GB,
            GpuModel::H200_141GB => &H200_141GB,
        }
    }

    /// The model whose table fits an NVML product name (`NVIDIA A100-SXM4-40GB`,
    /// `NVIDIA H100 80GB HBM3`, `NVIDIA H200 141GB HBM3e`, HAMi's `NVIDIA-A100-PCIE-80GB`, ...).
    pub fn from_product_name(product: &str) -> Option<GpuModel> {
        let p = product.to_ascii_uppercase();
        if p.contains("A100") {
            return Some(if p.contains("80G") { GpuModel::A100_80GB } else { GpuModel::A100_40GB });
        }
        if p.contains("H100") && p.contains("80G") {
            return Some(GpuModel::H100_80GB);
        }
        if p.contains("H200") {
            return Some(GpuModel::H200_141GB);
        }
        None
    }
}

/// The MIG table of one GPU model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MigTable {
    /// The model.
    pub model: GpuModel,
    /// The NVML product name published as `productName`.
    pub product_name: &'static str,
    /// The architecture published as `architecture`.
    pub architecture: &'static str,
    /// The CUDA compute capability published as `cudaComputeCapability`.
    pub cuda_compute_capability: &'static str,
    /// The profiles, smallest first, as `nvidia-smi mig -lgip` lists them.
    pub profiles: &'static [MigProfile],
}

impl MigTable {
    /// The profile named `name`.
    pub fn profile(&self, name: &str) -> Option<&'static MigProfile> {
        self.profiles.iter().find(|p| p.name == name)
    }

    /// The profile with GPU-instance profile id `id`.
    pub fn profile_by_id(&self, id: u32) -> Option<&'static MigProfile> {
        self.profiles.iter().find(|p| p.profile_id == id)
    }

    /// The full-GPU profile (`7g.*`, all eight memory slices).
    pub fn full(&self) -> &'static MigProfile {
        // Every table ends with its 7-slice profile.
        &self.profiles[self.profiles.len() - 1]
    }
}

const ALL_1: &[u32] = &[0, 1, 2, 3, 4, 5, 6];
const EVEN_4: &[u32] = &[0, 2, 4, 6];
const EVEN_3: &[u32] = &[0, 2, 4];
const HALVES: &[u32] = &[0, 4];
const ZERO: &[u32] = &[0];

#[expect(clippy::too_many_arguments, reason = "one table row")]
const fn row(
    name: &'static str,
    profile_id: u32,
    compute_slices: u32,
    memory_slices: u32,
    memory_mib: u64,
    multiprocessors: u32,
    engines: [u32; 5],
    instances: u32,
    starts: &'static [u32],
) -> MigProfile {
    let [copy_engines, decoders, encoders, jpeg_engines, ofa_engines] = engines;
    MigProfile {
        name,
        profile_id,
        compute_slices,
        memory_slices,
        memory_mib,
        multiprocessors,
        copy_engines,
        decoders,
        encoders,
        jpeg_engines,
        ofa_engines,
        instances,
        starts,
    }
}

// Engines are [copy, NVDEC, NVENC, JPEG, OFA].

/// A100 40GB: the guide's A100 table (engines) with the A100-40GB profile names; MiB
/// and SMs as go-nvml's A100-40GB mock (4.75 / 9.62 / 19.50 / 39.25 GiB).
static A100_40GB: MigTable = MigTable {
    model: GpuModel::A100_40GB,
    product_name: "NVIDIA A100-SXM4-40GB",
    architecture: "Ampere",
    cuda_compute_capability: "8.0",
    profiles: &[
        row("1g.5gb", 19, 1, 1, 4864, 14, [1, 0, 0, 0, 0], 7, ALL_1),
        row("1g.5gb+me", 20, 1, 1, 4864, 14, [1, 1, 0, 1, 1], 1, ALL_1),
        row("1g.10gb", 15, 1, 2, 9856, 14, [1, 1, 0, 0, 0], 4, EVEN_4),
        row("2g.10gb", 14, 2, 2, 9856, 28, [2, 1, 0, 0, 0], 3, EVEN_3),
        row("3g.20gb", 9, 3, 4, 19968, 42, [3, 2, 0, 0, 0], 2, HALVES),
        row("4g.20gb", 5, 4, 4, 19968, 56, [4, 2, 0, 0, 0], 1, ZERO),
        row("7g.40gb", 0, 7, 8, 40192, 98, [7, 5, 0, 1, 1], 1, ZERO),
    ],
};

/// A100 80GB: the guide's A100 table (engines); MiB and SMs from `nvidia-smi mig -lgip`
/// on an A100-80GB (9.50 / 19.50 / 39.25 / 79.00 GiB).
static A100_80GB: MigTable = MigTable {
    model: GpuModel::A100_80GB,
    product_name: "NVIDIA A100-SXM4-80GB",
    architecture: "Ampere",
    cuda_compute_capability: "8.0",
    profiles: &[
        row("1g.10gb", 19, 1, 1, 9728, 14, [1, 0, 0, 0, 0], 7, ALL_1),
        row("1g.10gb+me", 20, 1, 1, 9728, 14, [1, 1, 0, 1, 1], 1, ALL_1),
        row("1g.20gb", 15, 1, 2, 19968, 14, [1, 1, 0, 0, 0], 4, EVEN_4),
        row("2g.20gb", 14, 2, 2, 19968, 28, [2, 1, 0, 0, 0], 3, EVEN_3),
        row("3g.40gb", 9, 3, 4, 40192, 42, [3, 2, 0, 0, 0], 2, HALVES),
        row("4g.40gb", 5, 4, 4, 40192, 56, [4, 2, 0, 0, 0], 1, ZERO),
        row("7g.80gb", 0, 7, 8, 80896, 98, [7, 5, 0, 1, 1], 1, ZERO),
    ],
};

/// H100 80GB (SXM5): the guide's H100 table (engines); MiB and SMs from `nvidia-smi mig
/// -lgip` on an H100 SXM5 (9.75 / 19.62 / 39.50 / 79.25 GiB).
static H100_80GB: MigTable = MigTable {
    model: GpuModel::H100_80GB,
    product_name: "NVIDIA H100 80GB HBM3",
    architecture: "Hopper",
    cuda_compute_capability: "9.0",
    profiles: &[
        row("1g.10gb", 19, 1, 1, 9984, 16, [1, 1, 0, 1, 0], 7, ALL_1),
        row("1g.10gb+me", 20, 1, 1, 9984, 16, [1, 1, 0, 1, 1], 1, ALL_1),
        row("1g.20gb", 15, 1, 2, 20096, 26, [1, 1, 0, 1, 0], 4, EVEN_4),
        row("2g.20gb", 14, 2, 2, 20096, 32, [2, 2, 0, 2, 0], 3, EVEN_3),
        row("3g.40gb", 9, 3, 4, 40448, 60, [3, 3, 0, 3, 0], 2, HALVES),
        row("4g.40gb", 5, 4, 4, 40448, 64, [4, 4, 0, 4, 0], 1, ZERO),
        row("7g.80gb", 0, 7, 8, 81152, 132, [8, 7, 0, 7, 1], 1, ZERO),
    ],
};

/// H200 141GB: the guide's H200 table (engines); MiB and SMs of 1g.18gb, 2g.35gb and
/// 7g.141gb from `nvidia-smi mig -lgip` on an H200 (16.00 / 32.50 / 140.00 GiB). Derived,
/// not read: 1g.35gb's memory (as 2g.35gb's, like every model's two-slot 1g profile),
/// 3g/4g.71gb's (2 x 2g + 256 MiB, the step every other model shows), and 1g.35gb, 3g and
/// 4g SM counts (H100's, the same GH100 die).
static H200_141GB: MigTable = MigTable {
    model: GpuModel::H200_141GB,
    product_name: "NVIDIA H200 141GB HBM3e",
    architecture: "Hopper",
    cuda_compute_capability: "9.0",
    profiles: &[
        row("1g.18gb", 19, 1, 1, 16384, 16, [1, 1, 0, 1, 0], 7, ALL_1),
        row("1g.18gb+me", 20, 1, 1, 16384, 16, [1, 1, 0, 1, 1], 1, ALL_1),
        row("1g.35gb", 15, 1, 2, 33280, 26, [1, 1, 0, 1, 0], 4, EVEN_4),
        row("2g.35gb", 14, 2, 2, 33280, 32, [2, 2, 0, 2, 0], 3, EVEN_3),
        row("3g.71gb", 9, 3, 4, 66816, 60, [3, 3, 0, 3, 0], 2, HALVES),
        row("4g.71gb", 5, 4, 4, 66816, 64, [4, 4, 0, 4, 0], 1, ZERO),
        row("7g.141gb", 0, 7, 8, 143_360, 132, [8, 7, 0, 7, 1], 1, ZERO),
    ],
};

#[cfg(test)]
mod tests {
    use super::*;

    /// Every set of profile placements whose memory slices don't overlap, with at most
    /// `instances` of each profile (the `+me` profile: one).
    fn packings(t: &MigTable) -> Vec<Vec<(&'static MigProfile, u32)>> {
        fn go(
            all: &[(&'static MigProfile, u32)],
            from: usize,
            used: u32,
            cur: &mut Vec<(&'static MigProfile, u32)>,
            out: &mut Vec<Vec<(&'static MigProfile, u32)>>,
        ) {
            out.push(cur.clone());
            for i in from..all.len() {
                let (p, s) = all[i];
                let count = cur.iter().filter(|(q, _)| q.name == p.name).count();
                if used & p.mask(s) != 0 || count as u32 >= p.instances {
                    continue;
                }
                cur.push((p, s));
                go(all, i + 1, used | p.mask(s), cur, out);
                cur.pop();
            }
        }
        let all: Vec<(&'static MigProfile, u32)> =
            t.profiles.iter().flat_map(|p| p.starts.iter().map(move |&s| (p, s))).collect();
        let mut out = Vec::new();
        let mut cur = Vec::new();
        go(&all, 0, 0, &mut cur, &mut out);
        out
    }

    #[test]
    fn tables_are_consistent() {
        for m in GpuModel::ALL {
            let t = m.table();
            assert_eq!(t.model, m);
            let full = t.full();
            assert_eq!((full.compute_slices, full.memory_slices), (COMPUTE_SLICES, MEMORY_SLICES), "{m:?}");
            for p in t.profiles {
                assert!(p.starts.iter().all(|&s| s + p.memory_slices <= MEMORY_SLICES), "{m:?} {}", p.name);
                assert!(p.starts.len() as u32 >= p.instances, "{m:?} {}", p.name);
                assert!(p.name.starts_with(&format!("{}g.", p.compute_slices)), "{m:?} {}", p.name);
            }
        }
    }

    #[test]
    fn every_valid_packing_fits_the_full_gpu() {
        // Each of the full GPU's engines and SMs is at least what any valid combination
        // of instances takes together, so counters sized by the full profile (as the
        // NVIDIA driver sizes them) never refuse a combination the hardware allows.
        for m in GpuModel::ALL {
            let t = m.table();
            let full = t.full();
            let all = packings(t);
            assert!(all.len() > 100, "{m:?}: {} packings", all.len());
            for pack in all {
                let sum = |f: fn(&MigProfile) -> u64| pack.iter().map(|(p, _)| f(p)).sum::<u64>();
                let names: Vec<_> = pack.iter().map(|(p, s)| format!("{}@{s}", p.name)).collect();
                assert!(sum(|p| u64::from(p.compute_slices)) <= 7, "{m:?} {names:?}");
                assert!(sum(|p| p.memory_mib) <= full.memory_mib, "{m:?} {names:?}");
                assert!(sum(|p| u64::from(p.multiprocessors)) <= u64::from(full.multiprocessors), "{m:?} {names:?}");
                assert!(sum(|p| u64::from(p.copy_engines)) <= u64::from(full.copy_engines), "{m:?} {names:?}");
                assert!(sum(|p| u64::from(p.decoders)) <= u64::from(full.decoders), "{m:?} {names:?}");
                assert!(sum(|p| u64::from(p.jpeg_engines)) <= u64::from(full.jpeg_engines), "{m:?} {names:?}");
                assert!(sum(|p| u64::from(p.ofa_engines)) <= u64::from(full.ofa_engines), "{m:?} {names:?}");
            }
        }
    }

    #[test]
    fn product_names_resolve() {
        assert_eq!(GpuModel::from_product_name("NVIDIA A100-SXM4-40GB"), Some(GpuModel::A100_40GB));
        assert_eq!(GpuModel::from_product_name("NVIDIA-A100-PCIE-80GB"), Some(GpuModel::A100_80GB));
        assert_eq!(GpuModel::from_product_name("NVIDIA H100 80GB HBM3"), Some(GpuModel::H100_80GB));
        assert_eq!(GpuModel::from_product_name("NVIDIA H200 141GB HBM3e"), Some(GpuModel::H200_141GB));
        assert_eq!(GpuModel::from_product_name("NVIDIA H100 NVL"), None);
        for m in GpuModel::ALL {
            assert_eq!(GpuModel::from_product_name(m.table().product_name), Some(m));
        }
    }
}
