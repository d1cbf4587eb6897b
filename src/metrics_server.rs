//! (feature `metrics`) A small blocking HTTP server that serves a
//! [`LatencyRecorder`]'s OpenMetrics text on `GET /metrics`, on the loopback
//! interface only, for a Prometheus on the same host (or a tunnel) to scrape.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::framework::LatencyRecorder;

/// OpenMetrics' content type.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
#[error("cannot serve metrics on 127.0.0.1:{port}: {reason}")]
pub struct ServeError {
    /// The port asked for.
    pub port: u16,
    /// What the socket layer said.
    pub reason: String,
}

/// A running metrics server; [`MetricsServer::stop`] (or dropping it) shuts it down
/// and joins its thread.
pub struct MetricsServer {
    server: Arc<tiny_http::Server>,
    addr: SocketAddr,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for MetricsServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetricsServer").field("addr", &self.addr).finish_non_exhaustive()
    }
}

impl MetricsServer {
    /// Serves `recorder` on `127.0.0.1:port` (0 picks a free port) from one thread:
    /// `GET /metrics` answers 200 with the text, anything else 404 (405 for another
    /// method on `/metrics`).
    pub fn start(port: u16, recorder: Arc<LatencyRecorder>) -> Result<MetricsServer, ServeError> {
        let server = tiny_http::Server::http((Ipv4Addr::LOCALHOST, port))
            .map_err(|e| ServeError { port, reason: e.to_string() })?;
        let addr =
            server.server_addr().to_ip().ok_or_else(|| ServeError { port, reason: "not an IP socket".to_owned() })?;
        let server = Arc::new(server);
        let s = server.clone();
        let thread = std::thread::Builder::new()
            .name("schedkit-metrics".to_owned())
            .spawn(move || {
                for request in s.incoming_requests() {
                    let response = respond(request.method(), request.url(), &recorder);
                    let _ = request.respond(response);
                }
            })
            .map_err(|e| ServeError { port, reason: e.to_string() })?;
        Ok(MetricsServer { server, addr, thread: Some(thread) })
    }

    /// The address served (with the port chosen when 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting requests and waits for the serving thread to end.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// The response to one request: a plain function, so it is tested without a socket.
fn respond(
    method: &tiny_http::Method,
    url: &str,
    recorder: &Arc<LatencyRecorder>,
) -> tiny_http::Response<std::io::Cursor<Vec<u8>>> {
    let path = url.split('?').next().unwrap_or(url);
    if path != "/metrics" {
        return tiny_http::Response::from_string("not found\n").with_status_code(404);
    }
    if *method != tiny_http::Method::Get && *method != tiny_http::Method::Head {
        return tiny_http::Response::from_string("method not allowed\n").with_status_code(405);
    }
    let header = tiny_http::Header::from_bytes("Content-Type", CONTENT_TYPE).expect("a valid header");
    tiny_http::Response::from_string(recorder.encode_openmetrics()).with_header(header)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_get_metrics_is_served() {
        let rec = Arc::new(LatencyRecorder::every_cycle());
        assert_eq!(respond(&tiny_http::Method::Get, "/metrics", &rec).status_code().0, 200);
        assert_eq!(respond(&tiny_http::Method::Get, "/metrics?x=1", &rec).status_code().0, 200);
        assert_eq!(respond(&tiny_http::Method::Get, "/", &rec).status_code().0, 404);
        assert_eq!(respond(&tiny_http::Method::Post, "/metrics", &rec).status_code().0, 405);
    }
}
