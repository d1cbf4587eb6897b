//! NVIDIA Multi-Instance GPU (MIG) as DRA partitionable devices: per-model profile
//! tables, builders that publish a node's GPUs as `ResourceSlice`s with shared counters,
//! and HAMi v2.10.0's MIG mode as pure functions over the same tables.
//!
//! A MIG-capable GPU is published the way NVIDIA's DRA driver publishes it with
//! partitionable devices (KEP-4815): one counter set per GPU, the whole GPU as a device
//! consuming all of it, and one device per (profile, placement) consuming its memory
//! slices and engines. The structured allocator then never hands out two instances on
//! overlapping memory slices, nor the whole GPU together with any instance, and freeing a
//! claim returns the counters:
//!
//! ```
//! use schedkit::dra::DraStore;
//! use schedkit::dra::mig::{GpuModel, MigNodeBuilder, mig_device_class, NVIDIA_GPU_DRIVER};
//!
//! let store = DraStore::new();
//! store.add_class(mig_device_class(NVIDIA_GPU_DRIVER)).unwrap();
//! for slice in MigNodeBuilder::new("node-0").gpus(GpuModel::H100_80GB, 8).build().unwrap() {
//!     store.add_slice(slice).unwrap();
//! }
//! ```
//!
//! A claim then selects a profile with
//! `device.attributes["gpu.nvidia.com"].profile == "1g.10gb"`; the allocated device's
//! name says where it sits ([`MigDeviceRef::parse`]).
//!
//! # Tables
//!
//! [`GpuModel::table`] holds, per model, every GPU-instance profile with its compute and
//! memory slices, memory, engines, instance count and valid placement starts on the
//! eight memory slices ([`MigTable`], [`MigProfile`]):
//!
//! | profile (A100-40GB / A100-80GB / H100-80GB / H200-141GB) | id | compute | memory slices | starts |
//! |---|---|---|---|---|
//! | 1g.5gb / 1g.10gb / 1g.10gb / 1g.18gb | 19 | 1 | 1 | 0-6 |
//! | the same with `+me` (media engines, one per GPU) | 20 | 1 | 1 | 0-6 |
//! | 1g.10gb / 1g.20gb / 1g.20gb / 1g.35gb | 15 | 1 | 2 | 0, 2, 4, 6 |
//! | 2g.10gb / 2g.20gb / 2g.20gb / 2g.35gb | 14 | 2 | 2 | 0, 2, 4 |
//! | 3g.20gb / 3g.40gb / 3g.40gb / 3g.71gb | 9 | 3 | 4 | 0, 4 |
//! | 4g.20gb / 4g.40gb / 4g.40gb / 4g.71gb | 5 | 4 | 4 | 0 |
//! | 7g.40gb / 7g.80gb / 7g.80gb / 7g.141gb | 0 | 7 | 8 | 0 |
//!
//! Sources: NVIDIA's MIG User Guide ("Supported MIG Profiles": names, fractions,
//! engines, instance counts; "Getting Started": the `nvidia-smi mig -lgipp` placements),
//! `nvidia-smi mig -lgip` listings per model (profile ids, MiB, SMs) and go-nvml's
//! A100 mock (`pkg/nvml/mock/shared/gpus/a100.go`). The H200's 1g.35gb and 3g/4g.71gb
//! memory and SM counts are derived (see the source of `table.rs`), not read.
//!
//! # Counters
//!
//! As NVIDIA's driver (`cmd/gpu-kubelet-plugin/partitions.go`): a counter per capacity
//! (`multiprocessors`, `copy-engines`, `decoders`, `encoders`, `jpeg-engines`,
//! `ofa-engines`, `memory`) sized by the full profile, and `memory-slice-0` ..
//! `memory-slice-7`; schedkit adds `compute-slices`. A test checks that every set of
//! non-overlapping placements the hardware allows fits these counters, so they refuse
//! exactly the overlaps (and a second `+me`).
//!
//! # Placement order
//!
//! The allocator takes the first device that fits, so the order of devices in the
//! slice decides the placement: [`PlacementOrder::Balanced`] (the default) is HAMi's
//! balanced packing, `1g` and `3g` from the top so a `4g` keeps its room at 0.
//!
//! # HAMi
//!
//! HAMi v2.10.0's MIG mode works on the profiles its device plugin registers
//! ([`hami_mig_profiles`] derives them from these tables and an allowlist): the smallest
//! profile by memory with a free placement wins ([`select_mig_candidate`],
//! [`mig_filter`], [`add_mig_usage`]; [`select_mig_candidate_in`] is the same choice
//! on a bit mask of occupied slices, which the `HamiVgpu` plugin's Filter uses), and the
//! reservation travels in [`MIG_ALLOCATIONS_ANNOTATION`] ([`encode_mig_allocations`]).

mod hami;
mod publish;
mod table;

pub use hami::{
    HamiMigAllocation, HamiMigAllowlist, HamiMigChoice, HamiMigPlacement, HamiMigProfile, MIG_ALLOCATIONS_ANNOTATION,
    add_mig_usage, can_place_mig_profiles, decode_mig_allocations, default_mig_allowlist, encode_mig_allocations,
    hami_default_profiles, hami_mig_profiles, mig_filter, ordered_mig_placements, placement_mask, select_mig_candidate,
    select_mig_candidate_in, select_mig_placement, validate_mig_profile_allowlist,
};
pub use publish::{
    MigDeviceRef, MigError, MigGpu, MigNodeBuilder, NVIDIA_GPU_DRIVER, PlacementOrder, counter_set_name,
    full_device_name, gpu_device_class, instance_device_name, mig_device_class,
};
pub use table::{COMPUTE_SLICES, GpuModel, MEMORY_SLICES, MigProfile, MigTable};
