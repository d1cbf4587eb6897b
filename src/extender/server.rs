//! [`ExtenderServer`]: an [`ExtenderService`] on HTTP/1.1 (hyper on a tokio runtime
//! of its own; the only async code in schedkit, and it only moves bytes: each
//! request's work runs on tokio's blocking pool), over plain TCP or, with feature
//! `extender-tls`, over TLS (tokio-rustls; see `ExtenderServer::start_tls`).

use std::convert::Infallible;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};

use super::service::{ExtenderService, Reply};

/// Limits and threads of an [`ExtenderServer`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerOptions {
    /// The largest request body accepted (default 32 MiB: a full NodeList of a few
    /// thousand nodes); larger ones get 400.
    pub max_body_bytes: usize,
    /// Time to receive a request's headers (default 10 s); the connection is closed after.
    pub header_timeout: Duration,
    /// Time to receive the body and compute the answer (default 30 s, kube-scheduler's
    /// usual `httpTimeout` for extenders); 408 or 503 after.
    pub request_timeout: Duration,
    /// Threads answering requests (default: the machine's cores).
    pub workers: usize,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            max_body_bytes: 32 << 20,
            header_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(30),
            workers: std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get),
        }
    }
}

/// A running extender server; stopped by [`ExtenderServer::shutdown`] or on drop.
///
/// Routes: `POST <any prefix>/filter`, `/prioritize`, `/bind`, `/preempt` (the last
/// path segment is the verb, so a `urlPrefix` with a path works), and `/healthz`.
/// Bodies over [`ServerOptions::max_body_bytes`] or not the verb's JSON get 400 with a
/// message; unknown verbs 404; other methods 405.
pub struct ExtenderServer {
    addr: SocketAddr,
    /// `http` or `https`.
    scheme: &'static str,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for ExtenderServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExtenderServer").field("addr", &self.addr).finish_non_exhaustive()
    }
}

impl ExtenderServer {
    /// Binds `addr` (port 0 picks a free port) and serves `service` on a thread of
    /// its own.
    pub fn start(
        service: Arc<ExtenderService>,
        addr: impl ToSocketAddrs,
        options: ServerOptions,
    ) -> std::io::Result<ExtenderServer> {
        Self::start_with(service, addr, options, None)
    }

    /// [`ExtenderServer::start`] over HTTPS (feature `extender-tls`): every
    /// connection's TLS handshake must finish within
    /// [`ServerOptions::header_timeout`]; with a client CA in `tls`, a client without a
    /// certificate signed by it is refused in the handshake. Point kube-scheduler at
    /// [`ExtenderServer::url`] (`https://...`) with a `tlsConfig` whose `caFile` or
    /// `caData` trusts the server's certificate (and `certFile`/`keyFile` for the
    /// client certificate).
    #[cfg(feature = "extender-tls")]
    pub fn start_tls(
        service: Arc<ExtenderService>,
        addr: impl ToSocketAddrs,
        options: ServerOptions,
        tls: &super::ServerTls,
    ) -> std::io::Result<ExtenderServer> {
        Self::start_with(service, addr, options, Some(tokio_rustls::TlsAcceptor::from(tls.config.clone())))
    }

    fn start_with(
        service: Arc<ExtenderService>,
        addr: impl ToSocketAddrs,
        options: ServerOptions,
        tls: Option<Acceptor>,
    ) -> std::io::Result<ExtenderServer> {
        let scheme = if tls.is_some() { "https" } else { "http" };
        let listener = std::net::TcpListener::bind(addr)?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(options.workers.max(1))
            .max_blocking_threads(options.workers.max(1) * 4)
            .enable_io()
            .enable_time()
            .thread_name("schedkit-extender")
            .build()?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new().name("schedkit-extender-accept".into()).spawn(move || {
            runtime.block_on(accept_loop(listener, service, options, tls, stopped));
            runtime.shutdown_timeout(Duration::from_secs(1));
        })?;
        Ok(ExtenderServer { addr, scheme, stop: Some(stop), thread: Some(thread) })
    }

    /// The address bound.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://<address>` (`https://` when started with TLS): a `urlPrefix` for
    /// kube-scheduler.
    pub fn url(&self) -> String {
        format!("{}://{}", self.scheme, self.addr)
    }

    /// Stops accepting, lets requests in flight finish for up to a second, and joins
    /// the server's thread.
    pub fn shutdown(mut self) {
        self.stop_now();
    }

    fn stop_now(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for ExtenderServer {
    fn drop(&mut self) {
        self.stop_now();
    }
}

/// What wraps an accepted connection in TLS.
#[cfg(feature = "extender-tls")]
type Acceptor = tokio_rustls::TlsAcceptor;
/// No TLS in this build: never constructed.
#[cfg(not(feature = "extender-tls"))]
type Acceptor = Infallible;

async fn accept_loop(
    listener: std::net::TcpListener,
    service: Arc<ExtenderService>,
    options: ServerOptions,
    tls: Option<Acceptor>,
    mut stopped: tokio::sync::oneshot::Receiver<()>,
) {
    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else { return };
    loop {
        let accepted = tokio::select! {
            _ = &mut stopped => return,
            a = listener.accept() => a,
        };
        let Ok((stream, _)) = accepted else { continue };
        let _ = stream.set_nodelay(true);
        let service = service.clone();
        match &tls {
            None => {
                tokio::spawn(serve(stream, service, options));
            }
            #[cfg(feature = "extender-tls")]
            Some(acceptor) => {
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    // A client that connects and never finishes the handshake is dropped.
                    if let Ok(Ok(stream)) = tokio::time::timeout(options.header_timeout, acceptor.accept(stream)).await
                    {
                        serve(stream, service, options).await;
                    }
                });
            }
            #[cfg(not(feature = "extender-tls"))]
            Some(never) => match *never {},
        }
    }
}

/// Serves one connection's requests, plain or TLS.
async fn serve<I>(io: I, service: Arc<ExtenderService>, options: ServerOptions)
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let svc = service_fn(move |req| respond(req, service.clone(), options));
    let _ = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(options.header_timeout)
        .serve_connection(TokioIo::new(io), svc)
        .await;
}

fn text(status: StatusCode, message: impl Into<String>) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(message.into())));
    *r.status_mut() = status;
    r.headers_mut().insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static("text/plain"));
    r
}

async fn respond(
    req: Request<Incoming>,
    service: Arc<ExtenderService>,
    options: ServerOptions,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let verb = req.uri().path().trim_end_matches('/').rsplit('/').next().unwrap_or_default().to_owned();
    if verb == "healthz" {
        return Ok(text(StatusCode::OK, "ok"));
    }
    if req.method() != Method::POST {
        return Ok(text(StatusCode::METHOD_NOT_ALLOWED, format!("{} is not POST", req.method())));
    }
    let limit = options.max_body_bytes;
    if let Some(len) =
        req.headers().get(hyper::header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok())
        && len > limit as u64
    {
        return Ok(text(StatusCode::BAD_REQUEST, format!("request body of {len} bytes is over the limit of {limit}")));
    }
    let body = Limited::new(req.into_body(), limit).collect();
    let bytes = match tokio::time::timeout(options.request_timeout, body).await {
        Err(_) => return Ok(text(StatusCode::REQUEST_TIMEOUT, "request body not received in time")),
        Ok(Err(e)) => {
            return Ok(text(StatusCode::BAD_REQUEST, format!("reading the request body: {e} (limit {limit} bytes)")));
        }
        Ok(Ok(c)) => c.to_bytes(),
    };
    let work = tokio::task::spawn_blocking(move || service.handle(&verb, &bytes));
    let reply = match tokio::time::timeout(options.request_timeout, work).await {
        Err(_) => return Ok(text(StatusCode::SERVICE_UNAVAILABLE, "the extender did not answer in time")),
        Ok(Err(e)) => return Ok(text(StatusCode::INTERNAL_SERVER_ERROR, format!("the extender failed: {e}"))),
        Ok(Ok(r)) => r,
    };
    let Reply { status, body } = reply;
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    if status != StatusCode::OK {
        return Ok(text(status, String::from_utf8_lossy(&body).into_owned()));
    }
    let mut r = Response::new(Full::new(Bytes::from(body)));
    r.headers_mut().insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static("application/json"));
    Ok(r)
}
