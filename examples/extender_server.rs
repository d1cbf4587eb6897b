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
//!
//! HTTPS (feature `extender-tls`): `--tls-cert-file server.pem --tls-key-file
//! server.key` serve `https://`, and `--client-ca-file ca.pem` also requires client
//! certificates signed by that CA; kube-scheduler's entry then takes
//! `urlPrefix: "https://..."` and a `tlsConfig` with `caFile` (and `certFile`,
//! `keyFile` for its client certificate):
//!
//! `cargo run --release --features extender-tls --example extender_server -- --tls-cert-file tests/fixtures/tls/server.pem --tls-key-file tests/fixtures/tls/server.key`

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
    let (mut cert_file, mut key_file, mut client_ca_file) = (String::new(), String::new(), String::new());
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let (flag, value) = match a.split_once('=') {
            Some((f, v)) => (f.to_owned(), v.to_owned()),
            None => (a.clone(), args.next().ok_or(format!("{a} needs a value"))?),
        };
        match flag.as_str() {
            "--addr" => addr = value,
            "--seconds" => seconds = Some(value.parse().map_err(|e| format!("--seconds {value:?}: {e}"))?),
            "--tls-cert-file" => cert_file = value,
            "--tls-key-file" => key_file = value,
            "--client-ca-file" => client_ca_file = value,
            _ => {
                return Err(format!(
                    "unknown argument {flag:?} (expected --addr HOST:PORT, --seconds N, --tls-cert-file PEM, --tls-key-file PEM, --client-ca-file PEM)"
                )
                .into());
            }
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
    let tls = !(cert_file.is_empty() && key_file.is_empty() && client_ca_file.is_empty());
    let server = if tls {
        start_tls(service, &addr, cert_file, key_file, client_ca_file)?
    } else {
        ExtenderServer::start(service, addr.as_str(), ServerOptions::default())?
    };
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

#[cfg(feature = "extender-tls")]
fn start_tls(
    service: Arc<ExtenderService>,
    addr: &str,
    cert_file: String,
    key_file: String,
    client_ca_file: String,
) -> Result<ExtenderServer, Box<dyn std::error::Error>> {
    use schedkit::extender::{ServerTls, ServerTlsConfig};
    let tls = ServerTls::new(&ServerTlsConfig { cert_file, key_file, client_ca_file, ..ServerTlsConfig::default() })?;
    Ok(ExtenderServer::start_tls(service, addr, ServerOptions::default(), &tls)?)
}

#[cfg(not(feature = "extender-tls"))]
fn start_tls(
    _: Arc<ExtenderService>,
    _: &str,
    _: String,
    _: String,
    _: String,
) -> Result<ExtenderServer, Box<dyn std::error::Error>> {
    Err("--tls-cert-file, --tls-key-file and --client-ca-file need feature extender-tls".into())
}
