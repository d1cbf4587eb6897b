//! MIG as DRA partitionable devices (`schedkit::dra::mig`): allocation tables per GPU
//! model through the structured allocator, a property test against a first-fit oracle
//! over the published order, and an end-to-end run through the DynamicResources plugin
//! on the default profile.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use proptest::prelude::*;
use serde_json::json;

use schedkit::dra::mig::{
    COMPUTE_SLICES, GpuModel, MigDeviceRef, MigNodeBuilder, MigProfile, NVIDIA_GPU_DRIVER, PlacementOrder,
    gpu_device_class, mig_device_class,
};
use schedkit::dra::{Audit, DraStore, NodeResult, ResourceClaim};
use schedkit::framework::{Handle, PluginRef};
use schedkit::model::{Labels, Pod, PodResourceClaim};
use schedkit::plugins::{default_profile_config, default_registry};
use schedkit::scheduler::Scheduler;
use schedkit::testing::{NodeBuilder, PodBuilder};

const NODE: &str = "node-1";

fn store(model: GpuModel, gpus: u32) -> DraStore {
    let s = DraStore::new();
    s.add_class(mig_device_class(NVIDIA_GPU_DRIVER)).unwrap();
    s.add_class(gpu_device_class(NVIDIA_GPU_DRIVER)).unwrap();
    for slice in MigNodeBuilder::new(NODE).gpus(model, gpus).build().unwrap() {
        s.add_slice(slice).unwrap();
    }
    s
}

/// A claim for one instance of `profile`, or a whole GPU when `profile` is `None`.
fn claim(name: &str, profile: Option<&str>) -> ResourceClaim {
    let exactly = match profile {
        Some(p) => json!({"deviceClassName": "mig.nvidia.com", "selectors": [{"cel": {"expression":
            format!("device.attributes[\"gpu.nvidia.com\"].profile == \"{p}\"")}}]}),
        None => json!({"deviceClassName": "gpu.nvidia.com"}),
    };
    serde_json::from_value(json!({"metadata": {"name": name, "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "r", "exactly": exactly}]}}}))
    .unwrap()
}

fn pod(claim: &str) -> Pod {
    let mut p = Pod::default();
    p.metadata.name = format!("pod-{claim}");
    p.metadata.namespace = "default".into();
    p.spec.resource_claims.push(PodResourceClaim {
        name: "c".into(),
        resource_claim_name: Some(claim.into()),
        resource_claim_template_name: None,
        pod_group_resource_claim: None,
    });
    p
}

/// Allocates and commits `name` (a new claim for `profile`): the device, or None.
fn take(s: &DraStore, name: &str, profile: Option<&str>) -> Option<String> {
    s.add_claim(claim(name, profile)).unwrap();
    match s.reserve(&pod(name), &format!("uid-{name}"), NODE, &Labels::default()).unwrap() {
        NodeResult::Fit(list) => {
            let device = list[0].1.devices.results[0].device.clone();
            s.commit(&pod(name), &format!("uid-{name}"));
            Some(device)
        }
        NodeResult::NoFit(_) => {
            s.remove_claim("default", name);
            None
        }
    }
}

fn free(s: &DraStore, name: &str) {
    s.deallocate("default", name).unwrap();
    s.remove_claim("default", name);
}

/// `(gpu, profile name, start)` of a device name on `model`.
fn placed(model: GpuModel, device: &str) -> (u32, &'static str, u32) {
    let t = model.table();
    match MigDeviceRef::parse(device).unwrap() {
        MigDeviceRef::Full { gpu } => (gpu, t.full().name, 0),
        MigDeviceRef::Instance { gpu, profile_id, start } => (gpu, t.profile_by_id(profile_id).unwrap().name, start),
    }
}

#[test]
fn allocation_tables_per_model() {
    // Profiles by position in each table: 0 the 1-slot 1g, 1 its +me variant, 2 the
    // 2-slot 1g, 3 2g, 4 3g, 5 4g; None the whole GPU. Expected: the start, or no fit.
    // Instances fill in HAMi's balanced order (1g and 3g from the top).
    enum Step {
        Take(&'static str, Option<usize>, Option<u32>),
        Free(&'static str),
    }
    use Step::{Free, Take};
    let steps = [
        Take("a", Some(4), Some(4)),
        Take("b", Some(4), Some(0)),
        Take("c", Some(0), None), // every memory slice is taken
        Take("d", None, None),    // the whole GPU overlaps both
        Free("a"),
        Take("e", Some(3), Some(4)),
        Take("f", Some(2), Some(6)),
        Take("g", Some(1), None), // slices 4..8 and 0..4 are taken
        Free("b"),
        Take("h", Some(1), Some(3)),
        Take("i", Some(1), None), // one +me per GPU: the OFA counter
        Take("j", Some(0), Some(2)),
        Take("k", Some(5), None), // 4g needs slices 0..4
        Take("l", Some(0), Some(1)),
        Free("e"),
        Free("f"),
        Free("h"),
        Free("j"),
        Free("l"),
        Take("m", None, Some(0)), // all free again: the whole GPU
        Take("n", Some(0), None), // and nothing beside it
        Free("m"),
        Take("o", Some(5), Some(0)),
        Take("p", Some(4), Some(4)),
    ];
    for model in GpuModel::ALL {
        let t = model.table();
        let s = store(model, 1);
        for step in &steps {
            match *step {
                Take(name, profile, want) => {
                    let p = profile.map(|i| t.profiles[i].name);
                    let got = take(&s, name, p).map(|d| {
                        let (gpu, pname, start) = placed(model, &d);
                        assert_eq!((gpu, pname), (0, p.unwrap_or(t.full().name)), "{model:?} {name}");
                        start
                    });
                    assert_eq!(got, want, "{model:?} step {name} ({p:?})");
                }
                Free(name) => free(&s, name),
            }
        }
        assert_eq!(s.audit(), Audit::default(), "{model:?}");
    }
}

#[test]
fn seven_small_instances_then_nothing() {
    for model in GpuModel::ALL {
        let t = model.table();
        let s = store(model, 1);
        let starts: Vec<u32> = (0..8)
            .filter_map(|i| take(&s, &format!("c{i}"), Some(t.profiles[0].name)))
            .map(|d| placed(model, &d).2)
            .collect();
        assert_eq!(starts, [6, 5, 4, 3, 2, 1, 0], "{model:?}");
        assert_eq!(take(&s, "full", None), None);
    }
}

#[test]
fn a_whole_gpu_goes_where_no_instance_is() {
    let s = store(GpuModel::H100_80GB, 2);
    assert_eq!(take(&s, "small", Some("1g.10gb")).as_deref(), Some("gpu-0-mig-1g10gb-19-6"));
    assert_eq!(take(&s, "whole", None).as_deref(), Some("gpu-1"));
    assert_eq!(take(&s, "whole-2", None), None);
    free(&s, "small");
    assert_eq!(take(&s, "whole-2", None).as_deref(), Some("gpu-0"));
    // A selector on the published attributes pins a GPU and a placement.
    free(&s, "whole");
    let mut c = claim("pinned", Some("2g.20gb"));
    let sel = serde_json::from_value(json!({"cel": {"expression":
        "device.attributes[\"gpu.nvidia.com\"].index == 1 && device.attributes[\"gpu.nvidia.com\"].placementStart == 2"}}))
    .unwrap();
    c.spec.devices.requests[0].exactly.as_mut().unwrap().selectors.push(sel);
    s.add_claim(c).unwrap();
    let NodeResult::Fit(list) = s.reserve(&pod("pinned"), "uid-pinned", NODE, &Labels::default()).unwrap() else {
        panic!("pinned claim did not fit")
    };
    assert_eq!(list[0].1.devices.results[0].device, "gpu-1-mig-2g20gb-14-2");
}

/// The oracle: the first (GPU, start) in published order whose memory slices are free
/// (and, for `+me`, with no other `+me` on the GPU; for the whole GPU, an empty GPU).
fn first_fit(
    model: GpuModel,
    gpus: u32,
    held: &[(u32, &'static MigProfile, u32)],
    want: Option<&MigProfile>,
) -> Option<(u32, u32)> {
    let t = model.table();
    for gpu in 0..gpus {
        let mine: Vec<_> = held.iter().filter(|h| h.0 == gpu).collect();
        let used = mine.iter().fold(0u32, |m, (_, p, s)| m | p.mask(*s));
        match want {
            None => {
                if used == 0 {
                    return Some((gpu, 0));
                }
            }
            Some(p) => {
                if p.has_media_extensions() && mine.iter().any(|h| h.1.has_media_extensions()) {
                    continue;
                }
                if let Some(s) = PlacementOrder::Balanced.starts(p).find(|&s| used & p.mask(s) == 0) {
                    return Some((gpu, s));
                }
            }
        }
    }
    let _ = t;
    None
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn random_claims_never_overlap(model in 0usize..4, ops in prop::collection::vec((0usize..8, any::<bool>(), 0usize..16), 1..40)) {
        let model = GpuModel::ALL[model];
        let t = model.table();
        let s = store(model, 2);
        // claim name -> (gpu, profile, start)
        let mut held: BTreeMap<String, (u32, &'static MigProfile, u32)> = BTreeMap::new();
        for (i, (which, release, victim)) in ops.into_iter().enumerate() {
            if release && !held.is_empty() {
                let name = held.keys().nth(victim % held.len()).unwrap().clone();
                held.remove(&name);
                free(&s, &name);
                continue;
            }
            let profile = t.profiles.get(which);
            let name = format!("c{i}");
            let list: Vec<_> = held.values().copied().collect();
            let want = first_fit(model, 2, &list, profile);
            let got = take(&s, &name, profile.map(|p| p.name)).map(|d| {
                let (gpu, _, start) = placed(model, &d);
                (gpu, start)
            });
            prop_assert_eq!(got, want, "{:?} {:?} with {:?}", model, profile.map(|p| p.name), list);
            if let Some((gpu, start)) = got {
                held.insert(name, (gpu, profile.unwrap_or(t.full()), start));
            }
            // Invariants over what is held: disjoint memory slices, at most seven compute
            // slices and one +me per GPU.
            for gpu in 0..2 {
                let mine: Vec<_> = held.values().filter(|h| h.0 == gpu).collect();
                let mut used = 0u32;
                for (_, p, start) in &mine {
                    prop_assert!(p.is_valid_start(*start));
                    prop_assert_eq!(used & p.mask(*start), 0, "overlap on gpu {}", gpu);
                    used |= p.mask(*start);
                }
                prop_assert!(mine.iter().map(|h| h.1.compute_slices).sum::<u32>() <= COMPUTE_SLICES);
                prop_assert!(mine.iter().filter(|h| h.1.has_media_extensions()).count() <= 1);
            }
        }
        prop_assert_eq!(s.audit(), Audit::default());
    }
}

#[test]
fn end_to_end_through_dynamic_resources() {
    // The default profile plus DynamicResources, two nodes of eight H100s published as
    // MIG partitionable devices; 3g.40gb claims fill two per GPU, then whole-GPU claims
    // find nothing, and freeing one GPU's instances lets a whole-GPU claim in.
    let store = Arc::new(DraStore::new());
    store.add_class(mig_device_class(NVIDIA_GPU_DRIVER)).unwrap();
    store.add_class(gpu_device_class(NVIDIA_GPU_DRIVER)).unwrap();
    let handle = Handle::default();
    handle.set_shared(store.clone());
    let mut cfg = default_profile_config();
    cfg.plugins.multi_point.enabled.push(PluginRef { name: "DynamicResources".into(), weight: None });
    let profile = default_registry().build_profile(&cfg, &handle).unwrap();
    let mut sched = Scheduler::builder().profile(profile).build();
    for n in 0..2 {
        let node = format!("node-{n}");
        sched.add_node(NodeBuilder::new(&node).cpu("64").memory("512Gi").pods(110).build()).unwrap();
        for slice in MigNodeBuilder::new(&node).gpus(GpuModel::H100_80GB, 8).build().unwrap() {
            store.add_slice(slice).unwrap();
        }
    }
    let pod_for = |name: &str, claim: &str| {
        PodBuilder::new(name)
            .cpu("100m")
            .with(|p| {
                p.spec.resource_claims.push(PodResourceClaim {
                    name: "gpu".into(),
                    resource_claim_name: Some(claim.into()),
                    resource_claim_template_name: None,
                    pod_group_resource_claim: None,
                });
            })
            .build()
    };
    let mut placed_on: HashMap<(String, u32), u32> = HashMap::new();
    for i in 0..32 {
        let name = format!("half-{i}");
        store.add_claim(claim(&name, Some("3g.40gb"))).unwrap();
        let b = sched.schedule_pod(pod_for(&name, &name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        b.run().unwrap();
        let c = store.claim("default", &name).unwrap();
        let r = &c.status.as_ref().unwrap().allocation.as_ref().unwrap().devices.results[0];
        let (gpu, profile, start) = placed(GpuModel::H100_80GB, &r.device);
        assert_eq!(profile, "3g.40gb");
        let mask = GpuModel::H100_80GB.table().profile(profile).unwrap().mask(start);
        let used = placed_on.entry((r.pool.clone(), gpu)).or_default();
        assert_eq!(*used & mask, 0, "{name}: {} overlaps on {}", r.device, r.pool);
        *used |= mask;
    }
    assert!(placed_on.values().all(|&m| m == 0xff), "two 3g.40gb on each of the 16 GPUs");
    store.add_claim(claim("whole", None)).unwrap();
    let err = sched.schedule_pod(pod_for("whole", "whole")).unwrap_err();
    assert!(err.to_string().contains("cannot allocate all claims"), "{err}");
    // Free both instances of one GPU: the whole-GPU claim now fits there.
    let mut freed = None;
    for i in 0..32 {
        let name = format!("half-{i}");
        let c = store.claim("default", &name).unwrap();
        let r = c.status.as_ref().unwrap().allocation.as_ref().unwrap().devices.results[0].clone();
        let gpu = placed(GpuModel::H100_80GB, &r.device).0;
        if freed.is_none() {
            freed = Some((r.pool.clone(), gpu));
        }
        if freed == Some((r.pool.clone(), gpu)) {
            store.deallocate("default", &name).unwrap();
        }
    }
    let (pool, gpu) = freed.unwrap();
    let b = sched.schedule_pod(pod_for("whole", "whole")).unwrap();
    assert_eq!(b.node(), pool);
    b.run().unwrap();
    let c = store.claim("default", "whole").unwrap();
    assert_eq!(c.status.as_ref().unwrap().allocation.as_ref().unwrap().devices.results[0].device, format!("gpu-{gpu}"));
}
