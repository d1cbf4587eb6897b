//! The HTTP scheduler-extender protocol both ways (feature `extender`): schedkit as
//! kube-scheduler's client of extenders ([`HttpExtender`], called from the cycle
//! through [`framework::Extender`](crate::framework::Extender)), and schedkit serving
//! a profile as an extender a stock kube-scheduler calls ([`ExtenderService`] behind
//! an [`ExtenderServer`]), over the wire types of `k8s.io/kube-scheduler/extender/v1`
//! ([`wire`]).
//!
//! The client speaks HTTP/1.1 itself on kept-alive connections to a plain `http://`
//! extender reached directly, and goes through a blocking `ureq` agent for HTTPS and
//! CONNECT proxies from the environment. HTTPS (`enableHTTPS`, `tlsConfig`, an
//! `https://` prefix) needs feature `extender-tls` (rustls), which follows upstream
//! `makeTransport` (see [`HttpExtender::new`]); without it they are refused with
//! [`ExtenderConfigError::Tls`]. The server is hyper on a tokio runtime of its own
//! thread, plain HTTP, or HTTPS with feature `extender-tls`
//! (`ExtenderServer::start_tls` with a `ServerTls`); the cycle and the service
//! stay synchronous.
//!
//! ```
//! use std::sync::Arc;
//! use parking_lot::Mutex;
//! use schedkit::config::Extender as Config;
//! use schedkit::extender::{ExtenderServer, ExtenderService, HttpExtender, ServerOptions};
//! use schedkit::framework::{Extender, Handle};
//! use schedkit::plugins::{default_profile_config, default_registry};
//! use schedkit::snapshot::{Cache, PodInfo};
//! use schedkit::testing::{NodeBuilder, PodBuilder};
//!
//! // Serve the default profile over a cache the embedder keeps.
//! let cache = Arc::new(Mutex::new(Cache::new()));
//! cache.lock().add_node(NodeBuilder::new("small").cpu("2").build()).unwrap();
//! cache.lock().add_node(NodeBuilder::new("big").cpu("32").build()).unwrap();
//! let profile = Arc::new(default_registry().build_profile(&default_profile_config(), &Handle::default()).unwrap());
//! let server = ExtenderServer::start(
//!     Arc::new(ExtenderService::new(profile, cache.clone())),
//!     "127.0.0.1:0",
//!     ServerOptions { workers: 1, ..ServerOptions::default() },
//! )
//! .unwrap();
//!
//! // Call it as kube-scheduler would.
//! let client = HttpExtender::new(&Config {
//!     url_prefix: server.url(),
//!     filter_verb: "filter".into(),
//!     node_cache_capable: true,
//!     ..Config::default()
//! })
//! .unwrap();
//! let pod = PodInfo::new(PodBuilder::new("p").cpu("4").build()).unwrap();
//! let snap = { let mut s = Default::default(); cache.lock().update_snapshot(&mut s); s };
//! let nodes: Vec<_> = snap.nodes().iter().map(|n| &**n).collect();
//! let result = client.filter(&pod, &nodes).unwrap();
//! let passed: Vec<&str> = result.passed.iter().map(|&k| nodes[k].node().name()).collect();
//! assert_eq!(passed, ["big"]);
//! // More cpu than the node has at all: no preemption would help, so unresolvable
//! // (upstream `noderesources/fit.go`).
//! assert!(result.failed_and_unresolvable["small"].contains("Insufficient cpu"));
//! server.shutdown();
//! ```

mod answer;
mod borrowed;
mod client;
mod http1;
mod request;
mod resolve;
mod response;
mod server;
#[cfg(feature = "extender-tls")]
mod server_tls;
mod service;
mod tcp;
#[cfg(feature = "extender-tls")]
mod tls;
pub mod wire;

pub use client::{
    DEFAULT_EXTENDER_TIMEOUT, ExtenderConfigError, HttpExtender, MAX_RESPONSE_BYTES, from_meta_victims, to_meta_victims,
};
pub use server::{ExtenderServer, ServerOptions};
#[cfg(feature = "extender-tls")]
pub use server_tls::{ServerTls, ServerTlsConfig, ServerTlsError};
pub use service::{ExtenderService, Reply, SEEN_PODS};
