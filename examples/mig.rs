//! MIG instances as DRA partitionable devices: a node of eight H100s, a few claims for
//! MIG profiles and one for a whole GPU, and where each landed.
//!
//! Run with `cargo run --example mig`.

use schedkit::dra::mig::{
    GpuModel, MigDeviceRef, MigNodeBuilder, NVIDIA_GPU_DRIVER, gpu_device_class, mig_device_class,
};
use schedkit::dra::{DraStore, NodeResult, ResourceClaim};
use schedkit::model::{Labels, Pod, PodResourceClaim};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let store = DraStore::new();
    store.add_class(mig_device_class(NVIDIA_GPU_DRIVER))?;
    store.add_class(gpu_device_class(NVIDIA_GPU_DRIVER))?;
    // One counter set per GPU; every (profile, placement) and the whole GPU as devices.
    for slice in MigNodeBuilder::new("node-0").gpus(GpuModel::H100_80GB, 8).build()? {
        store.add_slice(slice)?;
    }

    let requests =
        [("a", Some("1g.10gb")), ("b", Some("1g.10gb")), ("c", Some("3g.40gb")), ("d", Some("4g.40gb")), ("e", None)];
    let table = GpuModel::H100_80GB.table();
    for (name, profile) in requests {
        // A claim selects a profile through the published `profile` attribute, or a whole
        // GPU through the `gpu.nvidia.com` class.
        let exactly = match profile {
            Some(p) => serde_json::json!({"deviceClassName": "mig.nvidia.com", "selectors": [{"cel": {"expression":
                format!("device.attributes[\"gpu.nvidia.com\"].profile == \"{p}\"")}}]}),
            None => serde_json::json!({"deviceClassName": "gpu.nvidia.com"}),
        };
        let claim: ResourceClaim = serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}}))?;
        store.add_claim(claim)?;

        let mut pod = Pod::default();
        pod.metadata.name = format!("pod-{name}");
        pod.metadata.namespace = "default".into();
        pod.spec.resource_claims.push(PodResourceClaim {
            name: "gpu".into(),
            resource_claim_name: Some(name.into()),
            resource_claim_template_name: None,
            pod_group_resource_claim: None,
        });
        let uid = format!("uid-{name}");
        match store.reserve(&pod, &uid, "node-0", &Labels::default())? {
            NodeResult::Fit(results) => {
                let device = &results[0].1.devices.results[0].device;
                store.commit(&pod, &uid);
                let at = match MigDeviceRef::parse(device) {
                    Some(MigDeviceRef::Instance { gpu, profile_id, start }) => {
                        let p = table.profile_by_id(profile_id).map_or("?", |p| p.name);
                        let size = table.profile_by_id(profile_id).map_or(0, |p| p.memory_slices);
                        format!("GPU {gpu}, {p} on memory slices {start}..{}", start + size)
                    }
                    Some(MigDeviceRef::Full { gpu }) => format!("GPU {gpu}, whole"),
                    None => "?".to_owned(),
                };
                println!("claim {name} ({}): {device} -> {at}", profile.unwrap_or("whole GPU"));
            }
            NodeResult::NoFit(why) => println!("claim {name}: no fit ({why:?})"),
        }
    }
    Ok(())
}
