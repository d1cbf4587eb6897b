//! Selectors published by DRA drivers in their `DeviceClass` manifests, evaluated on
//! devices shaped like the ones those drivers publish in their `ResourceSlice`s, with the
//! answers Kubernetes gives.
//!
//! Sources: NVIDIA `k8s-dra-driver-gpu` device classes `gpu.nvidia.com`,
//! `mig.nvidia.com` and the compute-domain channel class; `dra-example-driver`'s
//! `gpu.example.com` class; the selector of issue 6.

#[path = "support/selector.rs"]
mod support;

use schedkit::selector::Selector;
use support::{A, device};

#[test]
fn nvidia_device_classes() {
    let gpu = device(
        "gpu.nvidia.com",
        &[
            ("type", A::S("gpu")),
            ("uuid", A::S("GPU-4f4a7a39-1a2b-4c5d-8e9f-0a1b2c3d4e5f")),
            ("productName", A::S("NVIDIA H100 80GB HBM3")),
            ("brand", A::S("Nvidia")),
            ("architecture", A::S("Hopper")),
            ("cudaComputeCapability", A::V("9.0.0")),
            ("driverVersion", A::V("550.54.15")),
            ("cudaDriverVersion", A::V("12.4.0")),
            ("index", A::I(0)),
            ("minor", A::I(0)),
        ],
        &[("memory", "80Gi")],
    );
    let mig = device(
        "gpu.nvidia.com",
        &[
            ("type", A::S("mig")),
            ("parentUUID", A::S("GPU-4f4a7a39-1a2b-4c5d-8e9f-0a1b2c3d4e5f")),
            ("profile", A::S("1g.10gb")),
            ("productName", A::S("NVIDIA H100 80GB HBM3")),
            ("index", A::I(0)),
        ],
        &[("memory", "9856Mi"), ("multiprocessors", "16")],
    );
    let channel = device("compute-domain.nvidia.com", &[("type", A::S("channel")), ("id", A::I(0))], &[]);
    let example =
        device("gpu.example.com", &[("model", A::S("LATEST-GPU-MODEL")), ("index", A::I(0))], &[("memory", "80Gi")]);

    let gpu_class = "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'";
    let mig_class = "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'";
    let imex_class = "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'imex-channel'";
    let example_class = "device.driver == 'gpu.example.com'";
    let issue = r#"device.attributes["gpu.nvidia.com"].productName == "NVIDIA H100 80GB HBM3" && device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("80Gi")) >= 0"#;
    let product_class = "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu' && device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H100 80GB HBM3'";
    let arch = "device.attributes['gpu.nvidia.com'].architecture == 'Hopper' && device.attributes['gpu.nvidia.com'].cudaComputeCapability.compareTo(semver('9.0.0')) >= 0";

    // (selector, device, Kubernetes' answer: Some(match) or None for an evaluation error)
    let table: Vec<(&str, &schedkit::selector::Device, Option<bool>)> = vec![
        (gpu_class, &gpu, Some(true)),
        (gpu_class, &mig, Some(false)),
        // The driver check comes first, so a device of another driver never reaches the
        // missing attribute: `false && error` is false.
        (gpu_class, &channel, Some(false)),
        (gpu_class, &example, Some(false)),
        (mig_class, &mig, Some(true)),
        (mig_class, &gpu, Some(false)),
        (imex_class, &gpu, Some(false)),
        (example_class, &example, Some(true)),
        (example_class, &gpu, Some(false)),
        (issue, &gpu, Some(true)),
        // A MIG slice has less memory than the selector asks for.
        (issue, &mig, Some(false)),
        // A device of another driver has no gpu.nvidia.com attributes: an error, which
        // Kubernetes reports and treats as "this device does not match".
        (issue, &example, None),
        (product_class, &gpu, Some(true)),
        (arch, &gpu, Some(true)),
        (arch, &mig, None),
    ];
    for (src, dev, want) in table {
        let sel = Selector::compile(src).unwrap_or_else(|e| panic!("{src}: {e}"));
        let got = sel.matches(dev);
        match want {
            Some(b) => assert_eq!(got, Ok(b), "{src} on {:?}", dev.driver()),
            None => assert!(got.is_err(), "{src} on {:?}: {got:?}", dev.driver()),
        }
    }
}

#[test]
fn guarded_selectors_never_error() {
    // The defensive style seen in DeviceClass examples: check the domain and the
    // attribute before reading it.
    let src = r#"device.driver == "gpu.example.com" && "gpu.example.com" in device.attributes && "model" in device.attributes["gpu.example.com"] && device.attributes["gpu.example.com"].model == "A100""#;
    let sel = Selector::compile(src).unwrap();
    let a100 = device("gpu.example.com", &[("model", A::S("A100"))], &[]);
    let bare = device("gpu.example.com", &[], &[]);
    let other = device("other.example.com", &[], &[]);
    assert_eq!(sel.matches(&a100), Ok(true));
    assert_eq!(sel.matches(&bare), Ok(false));
    assert_eq!(sel.matches(&other), Ok(false));
}
