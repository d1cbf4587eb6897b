//! Serves kube-scheduler's default profile (or any schedkit profile) as an HTTP
//! scheduler extender that a stock kube-scheduler can call, over a small synthetic
//! cluster (a real deployment feeds the cache from an informer instead).
//!
//! `cargo run --release --features extender --example extender_server -- --addr 127.0.0.1:8888`
//!
//! Point kube-scheduler at it with (the README has the whole file):
//!
//! ```yaml
//! extenders:
//! - urlPrefix: "http://127.0.0.1:8888/schedkit"
//!   filterVerb: filter
//!   prioritizeVerb: prioritize
//!   weight: 1
//!   nodeCacheCapable: true
//!   httpTimeout: 5s
//! ```
//!
//! `--seconds N` stops after N seconds (default: run until killed).

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use schedkit::extender::{ExtenderServer, ExtenderService, ServerOptions};
use schedkit::framework::{Handle, Profile};
use schedkit::snapshot::Cache;
use schedkit::testing::NodeBuilder;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut addr = "127.0.0.1:8888".to_owned();
    let mut seconds: Option<u64> = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let (flag, value) = match a.split_once('=') {
            Some((f, v)) => (f.to_owned(), v.to_owned()),
            None => (a.clone(), args.next().ok_or(format!("{a} needs a value"))?),
        };
        match flag.as_str() {
            "--addr" => addr = value,
            "--seconds" => seconds = Some(value.parse().map_err(|e| format!("--seconds {value:?}: {e}"))?),
            _ => return Err(format!("unknown argument {flag:?} (expected --addr HOST:PORT, --seconds N)").into()),
        }
    }

    // The cluster the extender knows. With `nodeCacheCapable: true` kube-scheduler
    // sends node names only, so the names here must be the cluster's.
    let cache = Arc::new(Mutex::new(Cache::new()));
    for i in 0..16 {
        let node =
            NodeBuilder::new(&format!("node-{i}")).cpu("32").memory("128Gi").gpus(if i % 2 == 0 { 8 } else { 0 });
        cache.lock().add_node(node.build())?;
    }

    let handle = Handle::default();
    let profile = Arc::new(Profile::kube_default(&handle));
    let service = Arc::new(ExtenderService::new(profile, cache));
    let server = ExtenderServer::start(service, addr.as_str(), ServerOptions::default())?;
    println!("schedkit extender on {} (verbs: filter, prioritize, bind, preempt; /healthz)", server.url());
    match seconds {
        Some(s) => std::thread::sleep(Duration::from_secs(s)),
        None => loop {
            std::thread::park();
        },
    }
    server.shutdown();
    Ok(())
}
