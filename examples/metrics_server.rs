//! Schedules a workload with kube-scheduler's default profile, then serves its
//! metrics, in kube-scheduler's names, on `http://127.0.0.1:PORT/metrics` for a
//! Prometheus to scrape (Ctrl-C to stop).
//!
//! `cargo run --release --features metrics --example metrics_server -- --port 10251`
//!
//! A Prometheus on the same host scrapes it with
//! `scrape_configs: [{job_name: schedkit, static_configs: [{targets: ["127.0.0.1:10251"]}]}]`;
//! `histogram_quantile(0.99, sum by (le, plugin) (rate(scheduler_plugin_execution_duration_seconds_bucket{extension_point="Filter"}[5m])))`
//! then reads as it does for a kube-scheduler.

use std::sync::Arc;

use schedkit::framework::{Handle, LatencyRecorder, Profile};
use schedkit::metrics_server::MetricsServer;
use schedkit::scheduler::Scheduler;
use schedkit::testing::{NodeBuilder, PodBuilder};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut port: u16 = 10251;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let value = match a.split_once('=') {
            Some(("--port", v)) => v.to_owned(),
            None if a == "--port" => args.next().ok_or("--port needs a value")?,
            _ => return Err(format!("unknown argument {a:?} (expected --port N)").into()),
        };
        port = value.parse().map_err(|e| format!("--port {value:?}: {e}"))?;
    }

    // Every cycle's plugins are timed here; `LatencyRecorder::new()` samples one
    // cycle in ten for the plugin histograms, as kube-scheduler does.
    let recorder = Arc::new(LatencyRecorder::every_cycle());
    let handle = Handle::default();
    let mut scheduler = Scheduler::builder()
        .handle(handle.clone())
        .profile(Profile::kube_default(&handle))
        .latency_recorder(recorder.clone())
        .build();
    for i in 0..50 {
        let cpu = if i % 5 == 0 { "32" } else { "8" };
        scheduler.add_node(NodeBuilder::new(&format!("node-{i:02}")).cpu(cpu).memory("64Gi").try_build()?)?;
    }
    // 400 pods; the 64-CPU ones fit nowhere and stay in the unschedulable pool.
    let events = scheduler.events();
    for i in 0..400 {
        let cpu = if i % 100 == 99 { "64" } else { ["250m", "500m", "1"][i % 3] };
        events.add_pod(PodBuilder::new(&format!("pod-{i:03}")).cpu(cpu).memory("512Mi").try_build()?)?;
    }
    let summary = scheduler.run_until_idle();
    println!("bound {} pods, {} attempts failed", summary.bound, summary.failed);

    let server = MetricsServer::start(port, recorder)?;
    println!("serving http://{}/metrics (Ctrl-C to stop)", server.local_addr());
    loop {
        std::thread::park();
    }
}
