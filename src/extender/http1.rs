//! The extender client's own HTTP/1.1 exchange for a plain `http://` extender reached
//! without a proxy: kept-alive `TcpStream`s, the request's head and body in one
//! vectored write, the answer read with blocking reads into the caller's buffer
//! ([`super::response`]), `httpTimeout` as a deadline enforced through the socket's
//! read and write timeouts.
//!
//! Why not ureq here: on an idle machine a call through ureq cost about 110 µs of wall
//! time more than the same bytes sent by hand, though both made the same system calls
//! (issue 21's notes); this path has no transport layer between the call and the
//! socket. ureq stays for what it does that this does not: CONNECT proxies from the
//! environment, and TLS (`https://`), whose rustls session ureq's transport already
//! drives ([`super::tls`]).

use std::io::{self, IoSlice, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use ureq::Timeout;
use ureq::http::Uri;
use ureq::unversioned::resolver::Resolver;
use ureq::unversioned::transport::NextTimeout;

use super::resolve::ExtenderResolver;
use super::response::{Answer, ReadError, read_answer};
use super::tcp::{idle, timed_out, update};

/// Kept-alive connections kept per extender (ureq's `max_idle_connections_per_host`
/// before; Go's `DefaultMaxIdleConnsPerHost` is 2, kube-scheduler's extender
/// transport keeps Go's default).
const MAX_IDLE: usize = 8;

/// Why an exchange failed (the text follows `Post "<url>": ` in the cycle's error).
#[derive(Debug, thiserror::Error)]
pub(crate) enum ExchangeError {
    /// No connection could be opened.
    #[error("dial tcp {host}: {source}")]
    Connect {
        /// `host:port` from the URL.
        host: String,
        /// The last attempt's error.
        source: io::Error,
    },
    /// The request could not be sent.
    #[error("writing the request: {0}")]
    Write(io::Error),
    /// The answer could not be read.
    #[error("{0}")]
    Read(#[from] ReadError),
}

/// One idle or busy connection and the socket timeouts last set on it.
struct Conn {
    stream: TcpStream,
    read_timeout: Option<Duration>,
    write_timeout: Option<Duration>,
}

/// The plain-HTTP client of one extender.
pub(crate) struct Direct {
    /// `host[:port]` as the URL gives it: the `Host` header and the dial target's name.
    authority: String,
    /// The URL prefix, for the resolver.
    uri: Uri,
    resolver: ExtenderResolver,
    resolve_config: ureq::config::Config,
    timeout: Duration,
    idle: Mutex<Vec<Conn>>,
}

impl std::fmt::Debug for Direct {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Direct").field("authority", &self.authority).finish_non_exhaustive()
    }
}

/// The `Client.Timeout` error of a call that ran out of time (Go's client says
/// `context deadline exceeded (Client.Timeout exceeded while awaiting headers)`).
fn timeout_error(timeout: Duration) -> io::Error {
    io::Error::new(io::ErrorKind::TimedOut, format!("timeout: no answer within httpTimeout {timeout:?}"))
}

/// The time left before `deadline`, or the timeout error.
fn left(deadline: Instant, timeout: Duration) -> io::Result<Duration> {
    let d = deadline.saturating_duration_since(Instant::now());
    if d.is_zero() { Err(timeout_error(timeout)) } else { Ok(d) }
}

/// A connection read within the call's deadline.
struct Timed<'a> {
    conn: &'a mut Conn,
    deadline: Instant,
    timeout: Duration,
}

impl Read for Timed<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let d = left(self.deadline, self.timeout)?;
        let Conn { stream, read_timeout, .. } = &mut *self.conn;
        update(read_timeout, Some(d), |t| stream.set_read_timeout(t))?;
        match (&*stream).read(buf) {
            Err(e) if timed_out(&e) => Err(timeout_error(self.timeout)),
            r => r,
        }
    }
}

impl Direct {
    /// The client for `url` (`http://authority/...`), or `None` when this path does
    /// not serve it: another scheme, user information in the URL, a URL ureq cannot
    /// parse, or a proxy that applies (see [`proxied`]).
    pub(crate) fn new(url: &str, timeout: Duration, config: &ureq::config::Config) -> Option<Direct> {
        let rest = url.strip_prefix("http://")?;
        let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
        if authority.is_empty() || authority.contains('@') {
            return None;
        }
        let uri: Uri = url.parse().ok()?;
        if proxied(config, &uri) {
            return None;
        }
        Some(Direct {
            authority: authority.to_owned(),
            uri,
            resolver: ExtenderResolver::default(),
            resolve_config: config.clone(),
            timeout,
            idle: Mutex::new(Vec::new()),
        })
    }

    /// The path (and query) of a verb's URL `url` as the request line carries it.
    pub(crate) fn path<'u>(&self, url: &'u str) -> &'u str {
        let p = &url[("http://".len() + self.authority.len()).min(url.len())..];
        if p.is_empty() { "/" } else { p }
    }

    /// The head of a request to `path` (and query) up to its body's length: the
    /// request line, `Host`, `User-Agent`, `Content-Type` and `Content-Length: `
    /// without its value, which [`Self::post`] appends per call.
    pub(crate) fn head_prefix(&self, path: &str) -> Vec<u8> {
        format!(
            "POST {path} HTTP/1.1\r\nHost: {}\r\nUser-Agent: schedkit/{}\r\nContent-Type: application/json\r\nContent-Length: ",
            self.authority,
            env!("CARGO_PKG_VERSION"),
        )
        .into_bytes()
    }

    /// Posts `body` (JSON) with the head `prefix` (from [`Self::head_prefix`], the
    /// body's length appended here) and reads the answer into `response` (see
    /// [`read_answer`]); `head` is scratch space for the request's head.
    ///
    /// A kept connection is reused when the probe finds it idle; if writing to it
    /// fails before a byte went out, the request goes once more on a new connection
    /// (Go's `shouldRetryRequest` for a `nothingWrittenError` with a replayable body,
    /// `net/http/transport.go`); any later failure is the call's error, as Go does
    /// not replay a POST.
    pub(crate) fn post(
        &self,
        prefix: &[u8],
        body: &[u8],
        head: &mut Vec<u8>,
        response: &mut Vec<u8>,
        limit: u64,
    ) -> Result<Answer, ExchangeError> {
        let deadline = Instant::now() + self.timeout;
        head.clear();
        head.extend_from_slice(prefix);
        push_decimal(head, body.len());
        head.extend_from_slice(b"\r\n\r\n");
        let (mut conn, mut reused) = match self.take_idle() {
            Some(c) => (c, true),
            None => (self.connect(deadline)?, false),
        };
        loop {
            match write_all(&mut conn, head, body, deadline, self.timeout) {
                Ok(()) => break,
                Err((e, 0)) if reused && !timed_out(&e) => {
                    conn = self.connect(deadline)?;
                    reused = false;
                }
                Err((e, _)) => return Err(ExchangeError::Write(e)),
            }
        }
        let answer = read_answer(&mut Timed { conn: &mut conn, deadline, timeout: self.timeout }, response, limit)?;
        if answer.reusable {
            let mut idle = self.idle.lock();
            if idle.len() < MAX_IDLE {
                idle.push(conn);
            }
        }
        Ok(answer)
    }

    /// The most recently used idle connection the server has not closed.
    fn take_idle(&self) -> Option<Conn> {
        let mut idle = self.idle.lock();
        while let Some(c) = idle.pop() {
            if idle_now(&c.stream) {
                return Some(c);
            }
        }
        None
    }

    /// A new connection, resolving the host (IP literals as they are, names through
    /// the extender resolver's short cache) within the call's time.
    fn connect(&self, deadline: Instant) -> Result<Conn, ExchangeError> {
        let err = |source: io::Error| ExchangeError::Connect { host: self.authority.clone(), source };
        let budget = left(deadline, self.timeout).map_err(err)?;
        let next = NextTimeout { after: budget.into(), reason: Timeout::Resolve, per_read: None, per_write: None };
        let addrs =
            self.resolver.resolve(&self.uri, &self.resolve_config, next).map_err(|e| err(io::Error::other(e)))?;
        let mut last = io::Error::new(io::ErrorKind::NotFound, "no address for the host");
        for addr in &addrs {
            let budget = left(deadline, self.timeout).map_err(err)?;
            match TcpStream::connect_timeout(addr, budget) {
                Ok(stream) => {
                    stream.set_nodelay(true).map_err(err)?;
                    return Ok(Conn { stream, read_timeout: None, write_timeout: None });
                }
                Err(e) if timed_out(&e) => last = timeout_error(self.timeout),
                Err(e) => last = e,
            }
        }
        Err(err(last))
    }
}

/// Appends `n` in decimal (a `Content-Length` value), without the formatting machinery.
fn push_decimal(out: &mut Vec<u8>, mut n: usize) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

fn idle_now(stream: &TcpStream) -> bool {
    idle(stream).unwrap_or(false)
}

/// Whether a CONNECT proxy from the environment applies to `uri`: one is configured,
/// the host is not in `NO_PROXY`, and it is not `localhost` or a loopback address,
/// which Go's `ProxyFromEnvironment` never proxies (`useProxy` in
/// `golang.org/x/net/http/httpproxy`).
fn proxied(config: &ureq::config::Config, uri: &Uri) -> bool {
    let Some(proxy) = config.proxy() else { return false };
    let host = uri.host().unwrap_or_default();
    let bare = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
    let loopback =
        bare.eq_ignore_ascii_case("localhost") || bare.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback());
    !loopback && !proxy.is_no_proxy(uri)
}

/// Writes `head` then `body` with as few writes as the socket takes (one, normally);
/// on failure, the error and how many bytes went out.
fn write_all(
    conn: &mut Conn,
    head: &[u8],
    body: &[u8],
    deadline: Instant,
    timeout: Duration,
) -> Result<(), (io::Error, usize)> {
    let mut slices = [IoSlice::new(head), IoSlice::new(body)];
    let mut rest = &mut slices[..];
    let mut written = 0;
    while !rest.is_empty() {
        let d = left(deadline, timeout).map_err(|e| (e, written))?;
        let Conn { stream, write_timeout, .. } = &mut *conn;
        update(write_timeout, Some(d), |t| stream.set_write_timeout(t)).map_err(|e| (e, written))?;
        match (&*stream).write_vectored(rest) {
            Ok(0) => return Err((io::ErrorKind::WriteZero.into(), written)),
            Ok(n) => {
                written += n;
                IoSlice::advance_slices(&mut rest, n);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if timed_out(&e) => return Err((timeout_error(timeout), written)),
            Err(e) => return Err((e, written)),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> ureq::config::Config {
        ureq::Agent::config_builder().build()
    }

    #[test]
    fn decimal_lengths() {
        for n in [0, 7, 10, 99, 100, 12_345, usize::MAX] {
            let mut out = b"x".to_vec();
            push_decimal(&mut out, n);
            assert_eq!(out, format!("x{n}").into_bytes());
        }
    }

    #[test]
    fn head_prefix_ends_before_the_length() {
        let d = Direct::new("http://127.0.0.1:8888/scheduler", Duration::from_secs(1), &config()).unwrap();
        let head = String::from_utf8(d.head_prefix("/scheduler/filter")).unwrap();
        assert!(head.starts_with("POST /scheduler/filter HTTP/1.1\r\nHost: 127.0.0.1:8888\r\n"), "{head}");
        assert!(head.ends_with("\r\nContent-Type: application/json\r\nContent-Length: "), "{head}");
    }

    #[test]
    fn serves_plain_http_urls_only() {
        let c = config();
        let d = Direct::new("http://127.0.0.1:8888/scheduler", Duration::from_secs(1), &c).unwrap();
        assert_eq!(d.authority, "127.0.0.1:8888");
        assert_eq!(d.path("http://127.0.0.1:8888/scheduler/filter"), "/scheduler/filter");
        assert_eq!(d.path("http://127.0.0.1:8888"), "/");
        let d = Direct::new("http://[::1]:80", Duration::from_secs(1), &c).unwrap();
        assert_eq!(d.path("http://[::1]:80/filter"), "/filter");
        for url in ["https://127.0.0.1/x", "http://user:pw@127.0.0.1/x", "http://", "ftp://x"] {
            assert!(Direct::new(url, Duration::from_secs(1), &c).is_none(), "{url}");
        }
    }

    #[test]
    fn proxies_skip_loopback_and_no_proxy_hosts() {
        let proxy = ureq::Proxy::builder(ureq::ProxyProtocol::Http)
            .host("proxy.example")
            .port(3128)
            .no_proxy("internal.example")
            .build()
            .unwrap();
        let c = ureq::Agent::config_builder().proxy(Some(proxy)).build();
        for (url, via_proxy) in [
            ("http://127.0.0.1:1/x", false),
            ("http://localhost:1/x", false),
            ("http://[::1]:1/x", false),
            ("http://internal.example/x", false),
            ("http://extender.example/x", true),
        ] {
            assert_eq!(proxied(&c, &url.parse().unwrap()), via_proxy, "{url}");
        }
        assert!(!proxied(&config(), &"http://extender.example/x".parse().unwrap()));
    }
}
