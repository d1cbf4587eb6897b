//! Fit's tests: upstream's tables and a property that a pod never over-commits a device.

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::*;
use crate::plugins::hami::{HamiConfig, steering};

/// (id, index, used, count, usedmem, totalmem, totalcore, usedcores, numa, health)
type Row = (&'static str, u32, i32, i32, i32, i32, i32, i32, i32, bool);

fn infos(rows: &[Row]) -> Vec<DeviceInfo> {
    rows.iter()
        .map(|r| DeviceInfo {
            id: r.0.into(),
            index: r.1,
            count: r.3,
            devmem: r.5,
            devcore: r.6,
            kind: "NVIDIA".into(),
            numa: r.8,
            mode: String::new(),
            mig_profiles: Vec::new(),
            health: r.9,
        })
        .collect()
}

fn usages<'a>(infos: &'a [DeviceInfo], rows: &[Row]) -> Vec<DeviceUsage<'a>> {
    infos.iter().zip(rows).map(|(i, r)| DeviceUsage { info: i, usage: Usage::new(r.2, r.4, r.7) }).collect()
}

fn steer(pairs: &[(&str, &str)]) -> Steering {
    let a: BTreeMap<String, String> = pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    Steering::from_annotations(&a, &HamiConfig::default()).unwrap()
}

fn run(rows: &[Row], req: ContainerRequest, st: &Steering, cordon: Option<&str>) -> Result<Vec<&'static str>, String> {
    let i = infos(rows);
    let u = usages(&i, rows);
    let mut out = SmallVec::new();
    match fit(&u, &req, st, cordon, &mut out) {
        Ok(()) => Ok(out.iter().map(|c| rows[c.device].0).collect()),
        Err(e) => Err(e.to_string()),
    }
}

fn dev(id: &'static str, index: u32, used: i32, usedmem: i32, totalmem: i32, usedcores: i32, health: bool) -> Row {
    (id, index, used, 100, usedmem, totalmem, 100, usedcores, 0, health)
}

/// Upstream `pkg/device/nvidia/device_test.go`, `TestDevices_Fit`.
#[test]
#[expect(clippy::type_complexity, reason = "upstream's table as tuples")]
fn devices_fit_table() {
    let nv = |nums, mem, pct, cores| ContainerRequest::nvidia(nums, mem, pct, cores);
    let other = ContainerRequest { kind: "OtherType", ..nv(1, 512, 0, 50) };
    let none = steer(&[]);
    let cases: Vec<(&str, Vec<Row>, ContainerRequest, Steering, Result<Vec<&str>, &str>)> = vec![
        (
            "fit success",
            vec![dev("dev-0", 0, 0, 0, 128, 0, true), dev("dev-1", 0, 0, 0, 128, 0, true)],
            nv(1, 64, 0, 50),
            none.clone(),
            Ok(vec!["dev-1"]),
        ),
        (
            "memory",
            vec![dev("dev-0", 0, 0, 0, 128, 0, true)],
            nv(1, 512, 0, 50),
            none.clone(),
            Err("1/1 CardInsufficientMemory"),
        ),
        (
            "core",
            vec![dev("dev-0", 0, 0, 0, 1024, 100, true)],
            nv(1, 512, 0, 50),
            none.clone(),
            Err("1/1 CardInsufficientCore"),
        ),
        ("type", vec![dev("dev-0", 0, 0, 0, 128, 0, true)], other, none.clone(), Err("1/1 CardTypeMismatch")),
        (
            "use uuid",
            vec![dev("dev-1", 0, 0, 0, 1280, 0, true)],
            nv(2, 512, 0, 50),
            steer(&[(steering::USE_GPU_UUID, "dev-0")]),
            Err("1/1 CardUuidMismatch"),
        ),
        (
            "nouse uuid",
            vec![dev("dev-0", 0, 0, 0, 1280, 0, true)],
            nv(2, 512, 0, 50),
            steer(&[(steering::NOUSE_GPU_UUID, "dev-0")]),
            Err("1/1 CardUuidMismatch"),
        ),
        (
            "overused",
            vec![dev("dev-0", 0, 100, 0, 1280, 0, true)],
            nv(1, 512, 0, 50),
            none.clone(),
            Err("1/1 CardTimeSlicingExhausted"),
        ),
        (
            "cores clamped",
            vec![dev("dev-0", 0, 0, 0, 1280, 0, true)],
            nv(1, 512, 0, 120),
            none.clone(),
            Ok(vec!["dev-0"]),
        ),
        (
            "exclusive",
            vec![dev("dev-0", 0, 20, 0, 1280, 0, true)],
            nv(1, 512, 0, 100),
            none.clone(),
            Err("1/1 ExclusiveDeviceAllocateConflict"),
        ),
        (
            "compute units exhausted",
            vec![dev("dev-0", 0, 20, 0, 1280, 100, true)],
            nv(1, 512, 0, 0),
            none.clone(),
            Err("1/1 CardComputeUnitsExhausted"),
        ),
        (
            "allocated insufficient",
            vec![dev("dev-0", 0, 20, 0, 1280, 10, true)],
            nv(2, 512, 0, 20),
            none.clone(),
            Err("1/1 AllocatedCardsInsufficientRequest"),
        ),
        (
            "partial of many",
            vec![dev("dev-0", 0, 0, 0, 1280, 0, true), dev("dev-1", 1, 0, 0, 1280, 0, true)],
            nv(3, 512, 0, 20),
            none.clone(),
            Err("2/2 AllocatedCardsInsufficientRequest"),
        ),
        ("percentage", vec![dev("dev-0", 0, 20, 0, 1280, 10, true)], nv(1, 0, 10, 20), none.clone(), Ok(vec!["dev-0"])),
        (
            "not healthy",
            vec![dev("dev-0", 0, 20, 0, 1280, 10, false)],
            nv(1, 0, 10, 20),
            none.clone(),
            Err("1/1 CardNotHealth"),
        ),
    ];
    for (name, rows, req, st, want) in cases {
        let got = run(&rows, req, &st, None);
        assert_eq!(got, want.map_err(str::to_owned), "{name}");
    }
}

/// Upstream `TestFit_DeviceCordon`.
#[test]
fn fit_device_cordon() {
    let rows = [dev("dev-0", 0, 0, 0, 128, 0, true), dev("dev-1", 0, 0, 0, 128, 0, true)];
    let req = ContainerRequest::nvidia(1, 64, 0, 50);
    let st = steer(&[]);
    assert_eq!(run(&rows, req, &st, Some("dev-1, ")), Ok(vec!["dev-0"]));
    assert_eq!(run(&rows, req, &st, Some("dev-0,dev-1")), Err("2/2 CardCordoned".into()));
    let busy = [rows[0], ("dev-1", 0, 1, 100, 64, 128, 100, 50, 0, true)];
    assert_eq!(run(&busy, req, &st, Some("dev-1")), Ok(vec!["dev-0"]));
    assert!(run(&rows, req, &st, None).is_ok());
}

/// Upstream `TestFit_NumaSwitching`: walking dev-2 (NUMA 0), dev-1, dev-0 (NUMA 1),
/// the switch at dev-1 drops dev-2.
#[test]
fn fit_numa_switching() {
    let row = |id, index, numa| (id, index, 0, 10, 0, 8192, 100, 0, numa, true);
    let rows = [row("dev-0", 0, 1), row("dev-1", 1, 1), row("dev-2", 2, 0)];
    let st = steer(&[(steering::NUMA_BIND, "true")]);
    assert_eq!(run(&rows, ContainerRequest::nvidia(2, 100, 0, 10), &st, None), Ok(vec!["dev-1", "dev-0"]));
}

/// Upstream `TestFit_MutexPolicy`.
#[test]
fn fit_mutex_policy() {
    let rows = [("used", 0, 1, 10, 0, 8192, 100, 0, 0, true), ("idle", 1, 0, 10, 0, 8192, 100, 0, 0, true)];
    let st = steer(&[(steering::GPU_SCHEDULER_POLICY, "mutex")]);
    assert_eq!(run(&rows, ContainerRequest::nvidia(1, 100, 0, 10), &st, None), Ok(vec!["idle"]));
    assert!(run(&rows, ContainerRequest::nvidia(2, 100, 0, 10), &st, None).is_err());
}

/// Upstream `TestFit_TopologyExactMatch` (and, without pair scores, every combination
/// scores 0 so the first devices are taken).
#[test]
fn fit_topology_exact_match() {
    let row = |id, index| (id, index, 0, 10, 0, 8192, 100, 0, 0, true);
    let st = steer(&[(steering::GPU_SCHEDULER_POLICY, "topology-aware")]);
    let two = [row("dev-0", 0), row("dev-1", 1)];
    assert_eq!(run(&two, ContainerRequest::nvidia(2, 100, 0, 10), &st, None), Ok(vec!["dev-1", "dev-0"]));
    let three = [row("dev-0", 0), row("dev-1", 1), row("dev-2", 2)];
    assert_eq!(run(&three, ContainerRequest::nvidia(1, 100, 0, 10), &st, None), Ok(vec!["dev-2"]));
}

/// Upstream `TestZeroMemoryPercentageIsAccountedAsWholeCard`.
#[test]
fn zero_memory_percentage_books_whole_card() {
    let mut c = crate::model::Container::default();
    c.resources.limits =
        crate::model::ResourceList::parse([("nvidia.com/gpu", "1"), ("nvidia.com/gpumem-percentage", "0")]).unwrap();
    let req = ContainerRequest::of(&c, &HamiConfig::default()).unwrap();
    let card = |usedmem| [("dev-0", 0, 0, 10, usedmem, 11264, 100, 0, 0, true)];
    let i = infos(&card(0));
    let u = usages(&i, &card(0));
    let mut out = SmallVec::new();
    fit(&u, &req, &steer(&[]), None, &mut out).unwrap();
    assert_eq!(out[0].usedmem, 11264);
    let e = run(&card(11260), req, &steer(&[]), None).unwrap_err();
    assert!(e.contains("CardInsufficientMemory"), "{e}");
}

fn numa_devices(scores_numa: &[(&str, i32)]) -> Vec<DeviceInfo> {
    scores_numa
        .iter()
        .enumerate()
        .map(|(i, (id, numa))| DeviceInfo {
            id: (*id).into(),
            index: i as u32,
            count: 10,
            devmem: 8192,
            devcore: 100,
            kind: "NVIDIA".into(),
            numa: *numa,
            mode: String::new(),
            mig_profiles: Vec::new(),
            health: true,
        })
        .collect()
}

fn sorted<'a>(devs: &'a [DeviceInfo], scores: &[f32], policy: &str, numa_bind: bool) -> Vec<DeviceUsage<'a>> {
    let p = super::super::GpuPolicy::parse(policy);
    let key = |i: usize| SortKey { score: scores[i], numa: devs[i].numa, used: 0, index: devs[i].index };
    let mut order: Vec<usize> = (0..devs.len()).collect();
    order.sort_by(|&a, &b| {
        if p.less(numa_bind, &key(a), &key(b)) {
            std::cmp::Ordering::Less
        } else if p.less(numa_bind, &key(b), &key(a)) {
            std::cmp::Ordering::Greater
        } else {
            std::cmp::Ordering::Equal
        }
    });
    order.into_iter().map(|i| DeviceUsage { info: &devs[i], usage: Usage::default() }).collect()
}

/// Upstream `pkg/scheduler/numa_sort_test.go`, `TestNumaBindSortPreservesAffinity` and
/// `TestScorePrimarySelectsAcrossNuma`.
#[test]
fn numa_sort_tests() {
    let devs = numa_devices(&[("A_n0", 0), ("B_n0", 0), ("C_n1", 1)]);
    let scores = [5.0, 1.0, 3.0];
    let req = ContainerRequest::nvidia(2, 100, 0, 10);
    let st = steer(&[(steering::NUMA_BIND, "true")]);
    let mut out = SmallVec::new();
    assert!(fit(&sorted(&devs, &scores, "spread", false), &req, &st, None, &mut out).is_err());
    let s = sorted(&devs, &scores, "spread", true);
    fit(&s, &req, &st, None, &mut out).unwrap();
    assert_eq!(out.len(), 2);
    assert!(out.iter().all(|c| s[c.device].info.id.ends_with("_n0")));

    let devs = numa_devices(&[("P_n0", 0), ("Q_n1", 1), ("R_n1", 1)]);
    let s = sorted(&devs, &[1.0, 8.0, 5.0], "spread", false);
    fit(&s, &ContainerRequest::nvidia(1, 100, 0, 10), &steer(&[]), None, &mut out).unwrap();
    assert_eq!(s[out[0].device].info.id, "P_n0");
}

fn gpu(id: &str, numa: i32) -> DeviceInfo {
    DeviceInfo::gpu(id, "NVIDIA-A100", 1000).with_numa(numa)
}

/// Upstream `pkg/scheduler/score_test.go` (`Test_calcScore` shapes): init containers
/// are fitted on their own copies and only their peak counts; the app containers
/// accumulate; a request for more devices than the node has is
/// `NodeInsufficientDevice`.
#[test]
fn fit_pod_init_peaks_and_insufficient_devices() {
    let devs = [gpu("g0", 0), gpu("g1", 0)];
    let base = [Usage::default(); 2];
    let reqs = PodRequests {
        containers: smallvec::smallvec![
            Some(ContainerRequest::nvidia(1, 800, 101, 80)),
            Some(ContainerRequest::nvidia(1, 300, 101, 30)),
            Some(ContainerRequest::nvidia(1, 300, 101, 30)),
        ],
        init_containers: 1,
    };
    let mut out = PodFit::default();
    fit_pod(&devs, &base, None, &reqs, &steer(&[]), &mut out).unwrap();
    assert_eq!(out.picks.len(), 3);
    let total: i32 = out.deltas.iter().map(|d| d.usedmem).sum();
    // Spread puts the two app containers on different devices; the init peak (800) is
    // kept on the one device it used.
    assert_eq!(total, 800 + 300);
    assert!(out.deltas.iter().all(|d| d.usedmem <= 1000 && d.usedcores <= 100));
    let three = PodRequests {
        containers: smallvec::smallvec![Some(ContainerRequest::nvidia(3, 1, 101, 0))],
        init_containers: 0,
    };
    assert_eq!(fit_pod(&devs, &base, None, &three, &steer(&[]), &mut out), Err(FitFailure::NodeInsufficientDevice));
    assert_eq!(fit_pod(&[], &[], None, &three, &steer(&[]), &mut out), Err(FitFailure::Unregistered));
}

/// Binpack and spread on a node: binpack stacks on the fuller device, spread on the
/// emptier (upstream's "take the last after sorting"; the device score only counts
/// the device's own use, see `device_score`).
#[test]
fn fit_pod_binpack_vs_spread() {
    let devs = [gpu("g0", 0), gpu("g1", 0)];
    let base = [Usage::new(1, 500, 50), Usage::default()];
    let reqs = PodRequests {
        containers: smallvec::smallvec![Some(ContainerRequest::nvidia(1, 100, 101, 10))],
        init_containers: 0,
    };
    let mut out = PodFit::default();
    fit_pod(&devs, &base, None, &reqs, &steer(&[(steering::GPU_SCHEDULER_POLICY, "binpack")]), &mut out).unwrap();
    assert_eq!(out.picks[0].device, 0);
    fit_pod(&devs, &base, None, &reqs, &steer(&[(steering::GPU_SCHEDULER_POLICY, "spread")]), &mut out).unwrap();
    assert_eq!(out.picks[0].device, 1);
}

proptest! {
    /// Whatever the requests and the use already there, what fit_pod adds never takes
    /// a device past its slices, memory or cores.
    #[test]
    fn fit_pod_never_overcommits(
        devices in prop::collection::vec((1i32..4, 100i32..2000, prop::sample::select(vec![50i32, 100]), 0i32..2), 1..6),
        used in prop::collection::vec((0i32..4, 0i32..2000, 0i32..100), 6),
        reqs in prop::collection::vec((0i32..4, 0i32..1500, prop::sample::select(vec![0i32, 10, 50, 100, 101]), 0i32..130), 1..4),
        init in 0usize..2,
        policy in prop::sample::select(vec!["binpack", "spread", "mutex", "numa", "binpack,numa", "topology-aware"]),
        numa_bind in any::<bool>(),
    ) {
        let devs: Vec<DeviceInfo> = devices.iter().enumerate().map(|(i, &(count, mem, cores, numa))| {
            DeviceInfo::gpu(&format!("g{i}"), "NVIDIA-T4", mem).with_count(count).with_cores(cores).with_numa(numa).with_index(i as u32)
        }).collect();
        let base: Vec<Usage> = devs.iter().zip(&used).map(|(d, &(u, m, c))| Usage::new(u.min(d.count), m.min(d.devmem), c.min(d.devcore))).collect();
        let reqs = PodRequests {
            containers: reqs.iter().map(|&(n, m, p, c)| (n > 0).then_some(ContainerRequest::nvidia(n, m, p, c))).collect(),
            init_containers: init.min(reqs.len()),
        };
        let bind = if numa_bind { "true" } else { "false" };
        let st = steer(&[(steering::GPU_SCHEDULER_POLICY, policy), (steering::NUMA_BIND, bind)]);
        let mut out = PodFit::default();
        if fit_pod(&devs, &base, None, &reqs, &st, &mut out).is_ok() {
            for ((d, b), delta) in devs.iter().zip(&base).zip(&out.deltas) {
                prop_assert!(b.used + delta.used <= d.count);
                prop_assert!(b.usedmem + delta.usedmem <= d.devmem);
                prop_assert!(b.usedcores + delta.usedcores <= d.devcore);
                prop_assert!(delta.used >= 0 && delta.usedmem >= 0 && delta.usedcores >= 0);
            }
        }
    }
}

proptest! {
    /// The reason text is upstream's `GenReason`: every "<n>/<total> <Reason>" string,
    /// sorted as strings, joined by ", ".
    #[test]
    fn reason_text_sorts_as_strings(counts in proptest::collection::vec(proptest::option::of(0u32..2000), REASONS), total in 0usize..5000) {
        let mut c = ReasonCounts::default();
        let mut want: Vec<String> = Vec::new();
        for (r, n) in FitReason::ALL.iter().zip(&counts) {
            if let Some(n) = *n {
                c.set(*r, n);
                want.push(format!("{n}/{total} {}", r.as_str()));
            }
        }
        want.sort();
        prop_assert_eq!(FitFailure::Devices { counts: c, total }.to_string(), want.join(", "));
    }
}
