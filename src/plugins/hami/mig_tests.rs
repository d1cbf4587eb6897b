//! HAMi's MIG mode inside [`HamiVgpu`](super::HamiVgpu): Fit, booking, the
//! `hami.io/vgpu-mig-allocations` annotation, and restoring bound pods.

use std::collections::BTreeMap;
use std::sync::Arc;

use proptest::prelude::*;
use smallvec::{SmallVec, smallvec};

use super::*;
use crate::dra::mig::{GpuModel, HamiMigPlacement, HamiMigProfile, decode_mig_allocations, hami_default_profiles};
use crate::framework::{Handle, Profile};
use crate::model::ResourceList;
use crate::scheduler::{Scheduler, TieBreak};
use crate::snapshot::PodInfo;
use crate::testing::{NodeBuilder, PodBuilder};

fn pl(start: u32, size: u32) -> HamiMigPlacement {
    HamiMigPlacement { start, size }
}

fn one_g(placements: &[(u32, u32)]) -> Vec<HamiMigProfile> {
    vec![HamiMigProfile {
        name: "1g.5gb".into(),
        memory_mb: 5120,
        core: 14,
        slice_count: 1,
        placements: placements.iter().map(|&(s, z)| pl(s, z)).collect(),
    }]
}

/// `a100MigProfiles` of upstream `mig_capability_test.go`.
fn a100() -> Vec<HamiMigProfile> {
    let p = |name: &str, memory_mb, core, slice_count, places: &[(u32, u32)]| HamiMigProfile {
        name: name.into(),
        memory_mb,
        core,
        slice_count,
        placements: places.iter().map(|&(s, z)| pl(s, z)).collect(),
    };
    vec![
        p("1g.5gb", 5120, 14, 1, &[(0, 1), (1, 1), (2, 1), (3, 1), (4, 1), (5, 1), (6, 1)]),
        p("2g.10gb", 10240, 28, 2, &[(0, 2), (2, 2), (4, 2)]),
        p("3g.20gb", 20480, 42, 3, &[(0, 4), (4, 4)]),
    ]
}

/// Upstream `singleNvidiaGPUNode`: GPU-a, 7 slices, 40960 MiB, in `mode`.
fn single_gpu(mode: &str, placements: &[(u32, u32)]) -> DeviceInfo {
    let d = DeviceInfo::gpu("GPU-a", "NVIDIA", 40960).with_count(7);
    if mode == MIG_MODE { d.with_mig_profiles(one_g(placements), 7) } else { d.with_mode(mode) }
}

fn steer(mode: &str) -> Steering {
    let mut a = BTreeMap::new();
    if !mode.is_empty() {
        a.insert(VGPU_MODE.to_owned(), mode.to_owned());
    }
    Steering::from_annotations(&a, &HamiConfig::default()).unwrap()
}

/// Upstream `twoNvidiaDeviceRequest`: two devices of 4000 MiB.
fn two() -> PodRequests {
    PodRequests {
        containers: smallvec![Some(ContainerRequest::nvidia(2, 4000, MEM_PERCENTAGE_UNSET, 0))],
        init_containers: 0,
    }
}

const ALL_ONE_G: &[(u32, u32)] = &[(0, 1), (1, 1), (2, 1), (3, 1), (4, 1), (5, 1), (6, 1)];

/// Upstream `pkg/scheduler/mig_allocation_test.go`,
/// `TestFitInDevicesAllowsMultipleMigPlacementsOnSingleGPU`.
#[test]
fn multiple_mig_placements_on_a_single_gpu() {
    let devs = [single_gpu(MIG_MODE, ALL_ONE_G)];
    let mut out = PodFit::default();
    fit_pod(&devs, &[Usage::default()], None, &two(), &steer(MIG_MODE), &mut out).unwrap();
    let got: Vec<_> =
        out.picks.iter().map(|p| (p.device, p.usedmem, p.usedcores, p.mig.map(|m| m.placement))).collect();
    // Two distinct 1g placements from the top, each booking the profile's memory and cores.
    assert_eq!(got, [(0, 5120, 14, Some(pl(6, 1))), (0, 5120, 14, Some(pl(5, 1)))]);
    assert_eq!(out.deltas[0], Usage { mig: 0b110_0000, ..Usage::new(2, 10240, 28) });
}

/// Upstream `TestFitInDevicesRejectsInsufficientMigPlacementsOnSingleGPU`: the walk
/// takes the one placement, looks at the device again and finds none.
#[test]
fn insufficient_mig_placements_on_a_single_gpu() {
    let devs = [single_gpu(MIG_MODE, &[(6, 1)])];
    let mut out = PodFit::default();
    let e = fit_pod(&devs, &[Usage::default()], None, &two(), &steer(MIG_MODE), &mut out).unwrap_err();
    assert_eq!(e.to_string(), "1/1 AllocatedCardsInsufficientRequest, 1/1 CardMigTopologyInfeasible");
}

/// Upstream `TestFitInDevicesRetainsPhysicalCountCheckForNonMigGPU`, and
/// `TestIsMIGRequest`'s "explicit HAMi-core mode" and "no MIG device" cases (the
/// device count check applies), against "MIG mode without Pod" (no mode annotation: it
/// does not).
#[test]
fn physical_count_check_outside_mig() {
    let mut out = PodFit::default();
    let core = [single_gpu(HAMI_CORE_MODE, &[])];
    let e = fit_pod(&core, &[Usage::default()], None, &two(), &steer(HAMI_CORE_MODE), &mut out).unwrap_err();
    assert_eq!(e, FitFailure::NodeInsufficientDevice);
    let mig = [single_gpu(MIG_MODE, ALL_ONE_G)];
    let e = fit_pod(&mig, &[Usage::default()], None, &two(), &steer(HAMI_CORE_MODE), &mut out).unwrap_err();
    assert_eq!(e, FitFailure::NodeInsufficientDevice);
    fit_pod(&mig, &[Usage::default()], None, &two(), &steer(""), &mut out).unwrap();
    assert_eq!(out.picks.len(), 2);
}

/// Upstream `pkg/device/nvidia/mig_capability_test.go`,
/// `TestFitUsesEffectivePercentageMemoryForMigPlacement`: 25% of 40960 MiB needs a
/// 2g, and the three 2g placements are taken; `device_test.go`
/// `TestFit_MigPercentageRequestRejectsUndersizedTemplate`: a MIG device without
/// profiles fits nothing.
#[test]
fn percentage_memory_on_mig() {
    let info = DeviceInfo::gpu("GPU-a", "NVIDIA", 40960).with_mig_profiles(a100(), 7);
    let taken = Usage { mig: 0b11_1111, ..Usage::new(3, 30720, 0) };
    let req = ContainerRequest::nvidia(1, 0, 25, 0);
    let mut out = SmallVec::new();
    let e = fit(&[DeviceUsage { info: &info, usage: taken }], &req, &Steering::default(), None, &mut out).unwrap_err();
    assert_eq!(e.to_string(), "1/1 CardMigTopologyInfeasible");
    // With a 1g-sized request the remaining placement fits.
    let small = ContainerRequest::nvidia(1, 5000, MEM_PERCENTAGE_UNSET, 0);
    fit(&[DeviceUsage { info: &info, usage: taken }], &small, &Steering::default(), None, &mut out).unwrap();
    let bare = DeviceInfo::gpu("dev-0", "NVIDIA", 8192).with_count(1).with_mode(MIG_MODE);
    let req = ContainerRequest::nvidia(1, 0, 50, 10);
    let e = fit(&[DeviceUsage { info: &bare, usage: Usage::default() }], &req, &Steering::default(), None, &mut out);
    assert_eq!(e.unwrap_err().to_string(), "1/1 CardMigTopologyInfeasible");
}

fn mig_node(name: &str, gpus: u32) -> crate::model::Node {
    let mut n = NodeBuilder::new(name).cpu("32").memory("64Gi").build();
    let d: Vec<DeviceInfo> = (0..gpus)
        .map(|i| {
            DeviceInfo::gpu(&format!("{name}-GPU-{i}"), "NVIDIA-A100-SXM4-40GB", 40960)
                .with_index(i)
                .with_mig_profiles(hami_default_profiles(GpuModel::A100_40GB), 7)
        })
        .collect();
    register(&mut n, &d);
    n
}

fn gpu_pod(name: &str, mem: &str) -> PodInfo {
    let limits = ResourceList::parse([("nvidia.com/gpu", "1"), ("nvidia.com/gpumem", mem)]).unwrap();
    let p = PodBuilder::new(name)
        .uid(name)
        .scheduler_name("hami")
        .with(move |p| {
            p.spec.containers[0].resources.limits = limits;
            p.metadata.annotations.insert(VGPU_MODE.to_owned(), MIG_MODE.to_owned());
        })
        .build();
    PodInfo::new(p).unwrap()
}

/// Through the scheduler: MIG instances on an A100-40GB with the chart's profiles,
/// the annotations HAMi's device plugin reads, the device full after seven `1g`, and
/// a deleted pod's slices given back.
#[test]
fn scheduler_books_mig_instances_and_writes_the_annotation() {
    let handle = Handle::default();
    let state = HamiState::new();
    let written = Arc::new(RecordingAnnotator::default());
    let plugin = HamiVgpu::new(HamiConfig::default(), state.clone(), handle.clone()).with_annotator(written.clone());
    let profile = Profile::builder("hami").plugin(plugin).build().unwrap();
    let mut sched = Scheduler::builder().profile(profile).handle(handle).tie_break(TieBreak::SmallestName).build();
    sched.add_node(mig_node("m", 1)).unwrap();
    let place = |sched: &mut Scheduler, p: &PodInfo| -> Result<(), String> {
        let b = sched.schedule_one(p).map_err(|e| e.to_string())?;
        b.run().map(|_| ()).map_err(|e| e.to_string())
    };
    // 4000 MiB takes the smallest profile that holds it, 1g.5gb (4864 MiB), from the top.
    place(&mut sched, &gpu_pod("small", "4000")).unwrap();
    let w = written.get("default/small").unwrap();
    assert_eq!(w[VGPU_DEVICES_ALLOCATED], "m-GPU-0,NVIDIA,4864,15:;");
    let mig = decode_mig_allocations(&w[crate::dra::mig::MIG_ALLOCATIONS_ANNOTATION]).unwrap();
    assert_eq!((mig[0].gpu_uuid.as_str(), mig[0].profile.as_str(), mig[0].placement), ("m-GPU-0", "1g.5gb", pl(6, 1)));
    // A 2g.10gb request takes placement 0 (ascending), a 3g nothing left that fits
    // (0-3 overlaps the 2g, 4-7 the 1g).
    place(&mut sched, &gpu_pod("two", "9000")).unwrap();
    let w = written.get("default/two").unwrap();
    assert!(w[crate::dra::mig::MIG_ALLOCATIONS_ANNOTATION].contains(r#""placement":{"start":0,"size":2}"#));
    let e = place(&mut sched, &gpu_pod("three", "19000")).unwrap_err();
    assert!(e.contains("CardMigTopologyInfeasible"), "{e}");
    for i in 0..4 {
        place(&mut sched, &gpu_pod(&format!("s{i}"), "4000")).unwrap();
    }
    assert_eq!(state.usage("m").unwrap()[0].1.mig, 0b111_1111);
    // Full: upstream's core check fires first, as the profiles' rounded-up cores
    // (5 × 15 + 29) already pass 100.
    let e = place(&mut sched, &gpu_pod("s4", "4000")).unwrap_err();
    assert!(e.ends_with("1/1 CardInsufficientCore."), "{e}");
    assert_eq!(state.usage("m").unwrap()[0].1.usedcores, 104);
    sched.events().delete_pod("two").unwrap();
    assert_eq!(state.usage("m").unwrap()[0].1.mig, 0b111_1100);
    place(&mut sched, &gpu_pod("s5", "4000")).unwrap();
    assert_eq!(state.allocation("s5").unwrap().mig[0].placement, pl(1, 1));
}

/// Upstream `pkg/scheduler/mig_allocation_test.go`,
/// `TestGetNodesUsageRestoresMigAllocationByProfileAndPlacement` and
/// `TestGetNodesUsageRestoresUnconsumedMigReservations`: a bound pod's reservations
/// hold their placements, including those no device entry consumes.
#[test]
fn bound_pods_restore_their_mig_placements() {
    let s = HamiState::new();
    let gpu = DeviceInfo::gpu("GPU-a", "NVIDIA", 40960).with_count(7).with_mig_profiles(one_g(&[(5, 1), (6, 1)]), 7);
    s.set_devices("node1", vec![gpu]).unwrap();
    let mut pod = crate::model::Pod::default();
    pod.spec.containers.push(crate::model::Container::default());
    pod.metadata.annotations.insert(VGPU_DEVICES_ALLOCATED.into(), "GPU-a,NVIDIA,5120,14:;".into());
    pod.metadata.annotations.insert(
        crate::dra::mig::MIG_ALLOCATIONS_ANNOTATION.into(),
        r#"[{"containerIndex":0,"deviceIndex":0,"gpuUUID":"GPU-a","profile":"1g.5gb","placement":{"start":6,"size":1}},
            {"containerIndex":0,"deviceIndex":1,"gpuUUID":"GPU-a","profile":"1g.5gb","placement":{"start":5,"size":1}}]"#
            .into(),
    );
    s.record_bound("pod-1", &pod, "node1").unwrap();
    assert_eq!(s.usage("node1").unwrap()[0].1, Usage { mig: 0b110_0000, ..Usage::new(1, 5120, 14) });
    assert_eq!(s.allocation("pod-1").unwrap().mig.len(), 2);
    // Nothing is left for a third instance.
    let reqs = PodRequests {
        containers: smallvec![Some(ContainerRequest::nvidia(1, 4000, MEM_PERCENTAGE_UNSET, 0))],
        init_containers: 0,
    };
    let e = s.reserve("pod-2", "node1", None, &reqs, &Steering::default()).unwrap_err();
    assert_eq!(e.to_string(), "1/1 CardMigTopologyInfeasible");
    s.release("pod-1");
    assert_eq!(s.usage("node1").unwrap()[0].1, Usage::default());
    // A reservation on a device not in MIG mode is refused.
    s.set_devices("node2", vec![DeviceInfo::gpu("GPU-a", "NVIDIA", 40960)]).unwrap();
    assert!(matches!(s.record_bound("pod-3", &pod, "node2"), Err(HamiError::OverCommit { .. })));
}

proptest! {
    /// MIG instances never overlap: after any sequence of reservations and releases on
    /// two A100-40GB MIG GPUs, the live pods' placements on each device are disjoint and
    /// their union is the device's slices in use.
    #[test]
    fn mig_placements_never_overlap(ops in proptest::collection::vec((0u8..4, 1i32..41_000, 1i32..3), 1..40)) {
        let s = HamiState::new();
        s.add_node(&mig_node("m", 2)).unwrap();
        let mut live: Vec<String> = Vec::new();
        for (k, (op, mem, n)) in ops.into_iter().enumerate() {
            if op == 0 && !live.is_empty() {
                let uid = live.remove(mem as usize % live.len());
                s.release(&uid);
            } else {
                let reqs = PodRequests {
                    containers: smallvec![Some(ContainerRequest::nvidia(n, mem, MEM_PERCENTAGE_UNSET, 0))],
                    init_containers: 0,
                };
                let uid = format!("p{k}");
                if s.reserve(&uid, "m", None, &reqs, &Steering::default()).is_ok() {
                    live.push(uid);
                }
            }
            for (d, (info, u)) in s.usage("m").unwrap().into_iter().enumerate() {
                let mut union = 0u64;
                for uid in &live {
                    for a in s.allocation(uid).unwrap().mig.iter().filter(|a| a.gpu_uuid == info.id) {
                        let m = crate::dra::mig::placement_mask(a.placement).unwrap();
                        prop_assert_eq!(union & m, 0, "device {} overlap", d);
                        union |= m;
                    }
                }
                prop_assert_eq!(union, u.mig);
                prop_assert!(u.usedmem <= info.devmem && u.used <= info.count);
            }
        }
    }
}
