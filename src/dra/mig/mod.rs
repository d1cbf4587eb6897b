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

mod hami;
mod publish;
mod table;

pub use hami::{
    HamiMigAllocation, HamiMigAllowlist, HamiMigChoice, HamiMigPlacement, HamiMigProfile, MIG_ALLOCATIONS_ANNOTATION,
    add_mig_usage, can_place_mig_profiles, decode_mig_allocations, default_mig_allowlist, encode_mig_allocations,
    hami_default_profiles, hami_mig_profiles, mig_filter, ordered_mig_placements, select_mig_candidate,
    select_mig_placement, validate_mig_profile_allowlist,
};
pub use publish::{
    MigDeviceRef, MigError, MigGpu, MigNodeBuilder, NVIDIA_GPU_DRIVER, PlacementOrder, counter_set_name,
    full_device_name, gpu_device_class, instance_device_name, mig_device_class,
};
pub use table::{COMPUTE_SLICES, GpuModel, MEMORY_SLICES, MigProfile, MigTable};
