//! The extender client's name resolver: ureq resolves the URL's host before every
//! request (even one that reuses a pooled connection), and its default resolver starts
//! a thread per lookup when a timeout is set. This one answers IP literals directly
//! and keeps a host name's addresses for a second, so a call on a kept-alive
//! connection costs no thread and no DNS query (Go's transport resolves only when it
//! dials a new connection).

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use ureq::config::Config;
use ureq::http::Uri;
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::NextTimeout;

/// How long a host name's addresses are reused for new connections.
const KEEP_NAME: Duration = Duration::from_secs(1);

/// IP literals as they are, host names through ureq's resolver, cached briefly.
#[derive(Debug, Default)]
pub(crate) struct ExtenderResolver {
    inner: DefaultResolver,
    /// The last host name resolved: `(uri's authority and scheme, addresses, when)`.
    last: Mutex<Option<(String, ResolvedSocketAddrs, Instant)>>,
}

fn port(uri: &Uri) -> Option<u16> {
    uri.port_u16().or_else(|| match uri.scheme_str() {
        Some(s) if s.eq_ignore_ascii_case("https") => Some(443),
        Some(s) if s.eq_ignore_ascii_case("http") => Some(80),
        _ => None,
    })
}

impl Resolver for ExtenderResolver {
    fn resolve(&self, uri: &Uri, config: &Config, timeout: NextTimeout) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let host = uri.host().unwrap_or_default();
        let bare = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
        if let (Ok(ip), Some(port)) = (bare.parse::<IpAddr>(), port(uri)) {
            let mut out = self.empty();
            out.push(SocketAddr::new(ip, port));
            return Ok(out);
        }
        // A proxy setting makes ureq resolve the proxy's URI here: the key covers it.
        let key = format!("{}://{}", uri.scheme_str().unwrap_or_default(), uri.authority().map_or("", |a| a.as_str()));
        if let Some((k, addrs, at)) = &*self.last.lock()
            && *k == key
            && at.elapsed() < KEEP_NAME
        {
            return Ok(addrs.clone());
        }
        let addrs = self.inner.resolve(uri, config, timeout)?;
        *self.last.lock() = Some((key, addrs.clone(), Instant::now()));
        Ok(addrs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_resolve_without_a_lookup() {
        let r = ExtenderResolver::default();
        let config = Config::default();
        for (url, want) in [
            ("http://127.0.0.1:8888/x", "127.0.0.1:8888"),
            ("https://127.0.0.1/x", "127.0.0.1:443"),
            ("http://[::1]/x", "[::1]:80"),
        ] {
            let got = r.resolve(&url.parse().unwrap(), &config, NextTimeout::default()).unwrap();
            assert_eq!(got.iter().map(ToString::to_string).collect::<Vec<_>>(), [want], "{url}");
        }
        assert!(r.last.lock().is_none(), "literals are not cached");
        let got = r.resolve(&"http://localhost:9/x".parse().unwrap(), &config, NextTimeout::default()).unwrap();
        assert!(got.iter().all(|a| a.ip().is_loopback() && a.port() == 9));
        assert!(r.last.lock().as_ref().is_some_and(|(k, _, _)| k == "http://localhost:9"));
    }
}
