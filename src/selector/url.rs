//! The Kubernetes URL library (`k8s.io/apiserver/pkg/cel/library/urls.go`, in the base
//! environment since 1.24): `url(s)` accepts what Go's `url.ParseRequestURI` accepts
//! (an absolute URI or an absolute path) and keeps the parts `url.Parse` finds; the
//! getters return them as Go's `net/url` does. This module follows `net/url`'s
//! parsing rules (scheme, authority with optional userinfo, host and numeric port,
//! percent-escapes, path escaping, query splitting) without its URL type.

use std::fmt::Write as _;

/// A parsed URL, as `url.Parse` leaves it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Url {
    scheme: String,
    opaque: String,
    /// The userinfo as written (validated), empty when absent.
    user: Option<String>,
    /// The host (with port), unescaped.
    host: String,
    /// The unescaped path.
    path: String,
    /// The path as written, when it differs from the default escaping of `path`.
    raw_path: String,
    raw_query: String,
    fragment: String,
}

/// How a component is escaped (Go `net/url` `encoding`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Path,
    Host,
    UserPassword,
    QueryComponent,
    Fragment,
}

fn should_escape(c: u8, mode: Mode) -> bool {
    if c.is_ascii_alphanumeric() {
        return false;
    }
    if mode == Mode::Host && (is_sub_delim(c) || matches!(c, b':' | b'[' | b']' | b'<' | b'>' | b'"')) {
        return false;
    }
    match c {
        b'-' | b'_' | b'.' | b'~' => false,
        b'$' | b'&' | b'+' | b',' | b'/' | b':' | b';' | b'=' | b'?' | b'@' => match mode {
            Mode::Path => c == b'?',
            Mode::UserPassword => matches!(c, b'@' | b'/' | b'?' | b':'),
            Mode::QueryComponent | Mode::Host => true,
            Mode::Fragment => false,
        },
        b'!' | b'(' | b')' | b'*' if mode == Mode::Fragment => false,
        _ => true,
    }
}

fn unhex(c: u8) -> Option<u8> {
    char::from(c).to_digit(16).map(|d| d as u8)
}

/// Go's `unescape`: percent-decoding with `net/url`'s validation per mode.
fn unescape(s: &str, mode: Mode) -> Result<String, String> {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                if i + 2 >= b.len() || unhex(b[i + 1]).is_none() || unhex(b[i + 2]).is_none() {
                    let end = (i + 3).min(b.len());
                    return Err(format!("invalid URL escape {:?}", String::from_utf8_lossy(&b[i..end])));
                }
                if mode == Mode::Host && unhex(b[i + 1]).unwrap_or(0) < 8 && &b[i..i + 3] != b"%25" {
                    return Err(format!("invalid URL escape {:?}", String::from_utf8_lossy(&b[i..i + 3])));
                }
                i += 3;
            }
            c => {
                if mode == Mode::Host && c < 0x80 && should_escape(c, mode) {
                    return Err(format!("invalid character {:?} in host name", char::from(c).to_string()));
                }
                i += 1;
            }
        }
    }
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                out.push(unhex(b[i + 1]).unwrap_or(0) << 4 | unhex(b[i + 2]).unwrap_or(0));
                i += 3;
            }
            b'+' if mode == Mode::QueryComponent => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    // Go strings may hold any bytes; a decoded escape that is not UTF-8 is kept as
    // U+FFFD here (CEL strings are UTF-8).
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// Go's `escape` for paths: uppercase `%XX` for every byte that must be escaped.
fn escape_path(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for &c in s.as_bytes() {
        if should_escape(c, Mode::Path) {
            let _ = write!(out, "%{c:02X}");
        } else {
            out.push(char::from(c));
        }
    }
    out
}

/// RFC 3986 `sub-delims`: the characters Go's `net/url` lets through unescaped in
/// hosts and encoded paths alike.
fn is_sub_delim(c: u8) -> bool {
    matches!(c, b'!' | b'$' | b'&' | b'\'' | b'(' | b')' | b'*' | b'+' | b',' | b';' | b'=')
}

fn valid_encoded_path(s: &str) -> bool {
    s.bytes().all(|c| is_sub_delim(c) || matches!(c, b':' | b'@' | b'[' | b']' | b'%') || !should_escape(c, Mode::Path))
}

fn valid_optional_port(port: &str) -> bool {
    port.is_empty() || (port.starts_with(':') && port[1..].bytes().all(|b| b.is_ascii_digit()))
}

/// `scheme:` at the start, as Go's `getScheme`.
fn split_scheme(raw: &str) -> Result<(&str, &str), String> {
    for (i, c) in raw.bytes().enumerate() {
        match c {
            b'a'..=b'z' | b'A'..=b'Z' => {}
            b'0'..=b'9' | b'+' | b'-' | b'.' if i > 0 => {}
            b':' if i == 0 => return Err("missing protocol scheme".to_owned()),
            b':' => return Ok((&raw[..i], &raw[i + 1..])),
            _ => return Ok(("", raw)),
        }
    }
    Ok(("", raw))
}

fn parse_host(host: &str) -> Result<String, String> {
    if host.starts_with('[') {
        let Some(i) = host.rfind(']') else {
            return Err("missing ']' in host".to_owned());
        };
        let port = &host[i + 1..];
        if !valid_optional_port(port) {
            return Err(format!("invalid port {port:?} after host"));
        }
    } else if let Some(i) = host.rfind(':') {
        let port = &host[i..];
        if !valid_optional_port(port) {
            return Err(format!("invalid port {port:?} after host"));
        }
    }
    unescape(host, Mode::Host)
}

fn valid_userinfo(s: &str) -> bool {
    s.bytes().all(|c| {
        c.is_ascii_alphanumeric()
            || matches!(
                c,
                b'-' | b'.'
                    | b'_'
                    | b':'
                    | b'~'
                    | b'!'
                    | b'$'
                    | b'&'
                    | b'\''
                    | b'('
                    | b')'
                    | b'*'
                    | b'+'
                    | b','
                    | b';'
                    | b'='
                    | b'%'
                    | b'@'
            )
    })
}

/// Go's `parse(rawURL, viaRequest)`.
fn parse(raw: &str, via_request: bool) -> Result<Url, String> {
    if raw.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return Err("net/url: invalid control character in URL".to_owned());
    }
    if raw.is_empty() && via_request {
        return Err("empty url".to_owned());
    }
    let mut u = Url {
        scheme: String::new(),
        opaque: String::new(),
        user: None,
        host: String::new(),
        path: String::new(),
        raw_path: String::new(),
        raw_query: String::new(),
        fragment: String::new(),
    };
    if raw == "*" {
        u.path = "*".to_owned();
        return Ok(u);
    }
    let (scheme, mut rest) = split_scheme(raw)?;
    u.scheme = scheme.to_ascii_lowercase();
    if rest.ends_with('?') && rest.matches('?').count() == 1 {
        rest = &rest[..rest.len() - 1];
    } else if let Some((r, q)) = rest.split_once('?') {
        u.raw_query = q.to_owned();
        rest = r;
    }
    if !rest.starts_with('/') {
        if !u.scheme.is_empty() {
            u.opaque = rest.to_owned();
            return Ok(u);
        }
        if via_request {
            return Err("invalid URI for request".to_owned());
        }
        if rest.split('/').next().unwrap_or("").contains(':') {
            return Err("first path segment in URL cannot contain colon".to_owned());
        }
    }
    if (!u.scheme.is_empty() || !via_request && !rest.starts_with("///")) && rest.starts_with("//") {
        let authority_and_path = &rest[2..];
        let (authority, path) = match authority_and_path.find('/') {
            Some(i) => (&authority_and_path[..i], &authority_and_path[i..]),
            None => (authority_and_path, ""),
        };
        match authority.rfind('@') {
            None => u.host = parse_host(authority)?,
            Some(i) => {
                u.host = parse_host(&authority[i + 1..])?;
                let userinfo = &authority[..i];
                if !valid_userinfo(userinfo) {
                    return Err("net/url: invalid userinfo".to_owned());
                }
                match userinfo.split_once(':') {
                    None => {
                        unescape(userinfo, Mode::UserPassword)?;
                    }
                    Some((user, pass)) => {
                        unescape(user, Mode::UserPassword)?;
                        unescape(pass, Mode::UserPassword)?;
                    }
                }
                u.user = Some(userinfo.to_owned());
            }
        }
        rest = path;
    }
    u.path = unescape(rest, Mode::Path)?;
    if escape_path(&u.path) != rest {
        u.raw_path = rest.to_owned();
    }
    Ok(u)
}

/// `url(s)`: validated with `ParseRequestURI`, parsed with `Parse` (which splits off
/// the fragment first). The error is upstream's message.
pub(crate) fn parse_url(s: &str) -> Result<Url, String> {
    let err = |e: String, at: &str| format!("URL parse error during conversion from string: parse {at:?}: {e}");
    parse(s, true).map_err(|e| err(e, s))?;
    let (base, frag) = s.split_once('#').unwrap_or((s, ""));
    let mut u = parse(base, false).map_err(|e| err(e, base))?;
    if !frag.is_empty() {
        u.fragment = unescape(frag, Mode::Fragment).map_err(|e| err(e, s))?;
    }
    Ok(u)
}

/// Why Go's `url.ParseRequestURI` refuses `s` (the reason only, without the
/// `parse "<s>": ` prefix), or `None` if it accepts it.
pub(crate) fn request_uri_error(s: &str) -> Option<String> {
    parse(s, true).err()
}

/// `isURL(s)`: whether `ParseRequestURI` accepts `s`.
pub(crate) fn is_url(s: &str) -> bool {
    parse(s, true).is_ok()
}

fn split_host_port(host_port: &str) -> (&str, &str) {
    let (mut host, mut port) = (host_port, "");
    if let Some(i) = host.rfind(':')
        && valid_optional_port(&host[i..])
    {
        (host, port) = (&host_port[..i], &host_port[i + 1..]);
    }
    if host.len() >= 2 && host.starts_with('[') && host.ends_with(']') {
        host = &host[1..host.len() - 1];
    }
    (host, port)
}

impl Url {
    pub(crate) fn scheme(&self) -> &str {
        &self.scheme
    }

    pub(crate) fn host(&self) -> &str {
        &self.host
    }

    pub(crate) fn hostname(&self) -> &str {
        split_host_port(&self.host).0
    }

    pub(crate) fn port(&self) -> &str {
        split_host_port(&self.host).1
    }

    /// Go's `URL.EscapedPath`: the path as written when that is a valid encoding of it,
    /// otherwise the default escaping.
    pub(crate) fn escaped_path(&self) -> String {
        if !self.raw_path.is_empty()
            && valid_encoded_path(&self.raw_path)
            && unescape(&self.raw_path, Mode::Path).is_ok_and(|p| p == self.path)
        {
            return self.raw_path.clone();
        }
        if self.path == "*" {
            return "*".to_owned();
        }
        escape_path(&self.path)
    }

    /// Go's `URL.Query()`: `&`-separated `key=value` pairs, unescaped (`+` is a space),
    /// repeated keys collecting their values in order; pairs with a `;` or a bad escape
    /// are skipped. Keys are in order of first appearance.
    pub(crate) fn query(&self) -> Vec<(String, Vec<String>)> {
        let mut out: Vec<(String, Vec<String>)> = Vec::new();
        for pair in self.raw_query.split('&') {
            if pair.is_empty() || pair.contains(';') {
                continue;
            }
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let (Ok(k), Ok(v)) = (unescape(k, Mode::QueryComponent), unescape(v, Mode::QueryComponent)) else {
                continue;
            };
            match out.iter_mut().find(|(key, _)| *key == k) {
                Some((_, vs)) => vs.push(v),
                None => out.push((k, vec![v])),
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_as_net_url() {
        let u = parse_url("https://user:pass@example.com:80/path?query=val#fragment").unwrap();
        assert_eq!((u.scheme(), u.host(), u.hostname(), u.port()), ("https", "example.com:80", "example.com", "80"));
        assert_eq!(u.escaped_path(), "/path");
        assert!(parse_url("/absolute-path").is_ok());
        assert!(parse_url("https://a:b:c/").unwrap_err().contains(r#"invalid port ":c" after host"#));
        assert!(parse_url("../relative-path").is_err());
        assert_eq!(parse_url("https://[::1]:80/").unwrap().hostname(), "::1");
        assert_eq!(
            parse_url("https://example.com/path with spaces/").unwrap().escaped_path(),
            "/path%20with%20spaces/"
        );
        assert_eq!(parse_url("https://example.com/a%2Fb").unwrap().escaped_path(), "/a%2Fb");
        assert!(parse_url("https://ex ample.com/").is_err());
        assert!(parse_url("https://example.com/%zz").is_err());
        assert!(is_url("mailto:someone@example.com"));
        let q = parse_url("https://example.com/path?k1=a&k2=b&k2=c").unwrap().query();
        assert_eq!(
            q,
            vec![("k1".to_owned(), vec!["a".to_owned()]), ("k2".to_owned(), vec!["b".to_owned(), "c".to_owned()])]
        );
    }
}
