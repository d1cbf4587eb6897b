//! The extender client's HTTP/1.1 response reader: the status line and headers
//! (through `httparse`), then the body framed by `Content-Length`, by the chunked
//! transfer coding (decoded in place) or by the server closing the connection, all in
//! one buffer the caller keeps between calls.
//!
//! Framing follows RFC 9112 §6.3 as Go's `net/http` client applies it
//! (`net/http/transfer.go`, `net/http/internal/chunked.go`): no body after 1xx, 204
//! and 304; a `Transfer-Encoding` whose last coding is `chunked` wins over any
//! `Content-Length`; another `Transfer-Encoding` or no length at all means "until
//! close"; differing `Content-Length` values are an error; chunk-size lines may carry
//! extensions and trailing white space, and end in LF or CRLF; chunk data must be
//! followed by CRLF; trailers are read and dropped.

use std::io::{self, Read};
use std::ops::Range;

/// Most header lines an answer may carry.
const MAX_HEADERS: usize = 64;
/// The largest status line and headers accepted.
pub(crate) const MAX_HEAD_BYTES: usize = 64 << 10;
/// The longest chunk-size or trailer line (Go's `maxLineLength` in
/// `net/http/internal/chunked.go`).
const MAX_LINE: usize = 4096;
/// The smallest buffer read into.
const MIN_BUFFER: usize = 16 << 10;

/// Why an answer could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReadError {
    /// The socket failed or the call's time ran out (the reader's own message).
    #[error("{0}")]
    Io(#[from] io::Error),
    /// The server hung up before sending a byte.
    #[error("EOF: the server closed the connection without answering")]
    NoAnswer,
    /// The server hung up in the middle of the answer.
    #[error("unexpected EOF: the server closed the connection in the middle of the answer")]
    Truncated,
    /// The bytes are not an HTTP/1.x response.
    #[error("malformed HTTP response: {0}")]
    Malformed(String),
    /// The body is larger than the client accepts.
    #[error("the answer's body is over the limit of {limit} bytes")]
    TooLarge {
        /// The limit.
        limit: u64,
    },
}

/// One answer read whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Answer {
    /// The status code.
    pub(crate) status: u16,
    /// Where the (decoded) body lies in the buffer.
    pub(crate) body: Range<usize>,
    /// Whether the connection may carry another request: the answer was framed,
    /// nothing followed it, and neither side asked to close.
    pub(crate) reusable: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    Length(usize),
    Chunked,
    UntilClose,
}

#[derive(Debug)]
struct Head {
    status: u16,
    len: usize,
    framing: Framing,
    keep_alive: bool,
}

fn malformed(message: impl Into<String>) -> ReadError {
    ReadError::Malformed(message.into())
}

/// Whether a comma-separated header value lists `token` (case-insensitively).
fn lists(value: &[u8], token: &str) -> bool {
    value.split(|&b| b == b',').any(|t| t.trim_ascii().eq_ignore_ascii_case(token.as_bytes()))
}

/// The head at the start of `bytes`, `None` while incomplete.
fn parse_head(bytes: &[u8], limit: u64) -> Result<Option<Head>, ReadError> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut r = httparse::Response::new(&mut headers);
    let len = match r.parse(bytes) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(malformed(e.to_string())),
    };
    let status = r.code.unwrap_or_default();
    if status == 101 {
        return Err(malformed("101 Switching Protocols to a POST"));
    }
    let http10 = r.version == Some(0);
    let mut length: Option<u64> = None;
    let (mut coded, mut chunked) = (false, false);
    let mut close = http10;
    for h in r.headers.iter() {
        if h.name.eq_ignore_ascii_case("content-length") {
            let v = h.value.trim_ascii();
            let n = std::str::from_utf8(v)
                .ok()
                .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|v| v.parse::<u64>().ok())
                .ok_or_else(|| malformed(format!("bad Content-Length {:?}", String::from_utf8_lossy(h.value))))?;
            if length.is_some_and(|l| l != n) {
                return Err(malformed("differing Content-Length values"));
            }
            length = Some(n);
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            coded = true;
            let last = h.value.rsplit(|&b| b == b',').next().unwrap_or_default();
            chunked = last.trim_ascii().eq_ignore_ascii_case(b"chunked");
        } else if h.name.eq_ignore_ascii_case("connection") {
            if lists(h.value, "close") {
                close = true;
            } else if http10 && lists(h.value, "keep-alive") {
                close = false;
            }
        }
    }
    let framing = if (100..200).contains(&status) || status == 204 || status == 304 {
        Framing::Length(0)
    } else if coded {
        if chunked { Framing::Chunked } else { Framing::UntilClose }
    } else if let Some(n) = length {
        if n > limit {
            return Err(ReadError::TooLarge { limit });
        }
        Framing::Length(usize::try_from(n).map_err(|_| ReadError::TooLarge { limit })?)
    } else {
        Framing::UntilClose
    };
    // A message carrying both framings may have been smuggled: never reused.
    let keep_alive = !close && framing != Framing::UntilClose && !(coded && length.is_some());
    Ok(Some(Head { status, len, framing, keep_alive }))
}

/// Reads more of the answer into `buf[*filled..]`, growing `buf` (never past `cap`
/// bytes) when full; the bytes read, 0 at the end of the stream.
fn fill(r: &mut impl Read, buf: &mut Vec<u8>, filled: &mut usize, cap: usize, limit: u64) -> Result<usize, ReadError> {
    if *filled == buf.len() {
        let grown = (2 * buf.len()).clamp(MIN_BUFFER, cap.max(MIN_BUFFER));
        if grown <= *filled {
            return Err(ReadError::TooLarge { limit });
        }
        buf.resize(grown, 0);
    }
    loop {
        match r.read(&mut buf[*filled..]) {
            Ok(n) => {
                *filled += n;
                return Ok(n);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
}

/// Reads one answer from `r` into `buf` (from its start; `buf` keeps its length
/// between calls and grows as needed). Bodies over `limit` bytes are an error.
pub(crate) fn read_answer(r: &mut impl Read, buf: &mut Vec<u8>, limit: u64) -> Result<Answer, ReadError> {
    let body_cap = usize::try_from(limit).unwrap_or(usize::MAX);
    let mut filled = 0;
    let mut any = false;
    let head = loop {
        if let Some(h) = parse_head(&buf[..filled], limit)? {
            if (100..200).contains(&h.status) {
                // Informational (100 Continue, 103 Early Hints): the answer follows.
                buf.copy_within(h.len..filled, 0);
                filled -= h.len;
                continue;
            }
            break h;
        }
        if filled >= MAX_HEAD_BYTES {
            return Err(malformed(format!("no end of the headers in the first {MAX_HEAD_BYTES} bytes")));
        }
        if fill(r, buf, &mut filled, MAX_HEAD_BYTES, limit)? == 0 {
            return Err(if any || filled > 0 { ReadError::Truncated } else { ReadError::NoAnswer });
        }
        any = true;
    };
    let start = head.len;
    let cap = start.saturating_add(body_cap).saturating_add(MAX_LINE);
    let (end, extra) = match head.framing {
        Framing::Length(n) => {
            let end = start + n;
            if buf.len() < end {
                buf.resize(end, 0);
            }
            while filled < end {
                if fill(r, buf, &mut filled, end, limit)? == 0 {
                    return Err(ReadError::Truncated);
                }
            }
            (end, filled > end)
        }
        Framing::UntilClose => {
            while fill(r, buf, &mut filled, cap, limit)? > 0 {}
            if filled - start > body_cap {
                return Err(ReadError::TooLarge { limit });
            }
            (filled, false)
        }
        Framing::Chunked => {
            let mut d = Dechunk { state: Chunk::Size, read: start, written: start };
            while !d.run(buf, filled, start, limit)? {
                // Undecoded bytes move down to the decoded ones, so the buffer holds
                // the body and at most one read's worth of framing.
                if d.read > d.written {
                    buf.copy_within(d.read..filled, d.written);
                    filled -= d.read - d.written;
                    d.read = d.written;
                }
                if fill(r, buf, &mut filled, cap, limit)? == 0 {
                    return Err(ReadError::Truncated);
                }
            }
            (d.written, filled > d.read)
        }
    };
    Ok(Answer { status: head.status, body: start..end, reusable: head.keep_alive && !extra })
}

#[derive(Debug, Clone, Copy)]
enum Chunk {
    Size,
    Data(u64),
    DataEnd,
    Trailer,
    Done,
}

/// The chunked decoder's place: raw bytes from `read` on are still to decode, the
/// decoded body ends at `written` (`written <= read`).
struct Dechunk {
    state: Chunk,
    read: usize,
    written: usize,
}

/// The length of the line at the start of `bytes` without its LF, `None` while no LF
/// has come; over [`MAX_LINE`] bytes is an error.
fn line(bytes: &[u8]) -> Result<Option<usize>, ReadError> {
    match bytes.iter().take(MAX_LINE).position(|&b| b == b'\n') {
        Some(n) => Ok(Some(n)),
        None if bytes.len() >= MAX_LINE => Err(malformed("chunked line too long")),
        None => Ok(None),
    }
}

/// A chunk-size line's size: hexadecimal digits, then optional white space and
/// `;extensions` (Go's `removeChunkExtension` and `parseHexUint`).
fn chunk_size(line: &[u8]) -> Result<u64, ReadError> {
    let line = line.trim_ascii_end();
    let digits = line.split(|&b| b == b';').next().unwrap_or_default().trim_ascii_end();
    if digits.is_empty() {
        return Err(malformed("empty hex number for chunk length"));
    }
    if digits.len() > 16 {
        return Err(malformed("http chunk length too large"));
    }
    let mut n = 0u64;
    for &b in digits {
        let d = match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' => b - b'a' + 10,
            b'A'..=b'F' => b - b'A' + 10,
            _ => return Err(malformed("invalid byte in chunk length")),
        };
        n = (n << 4) | u64::from(d);
    }
    Ok(n)
}

impl Dechunk {
    /// Decodes what `buf[self.read..filled]` holds; true once the last chunk and the
    /// trailers are read.
    fn run(&mut self, buf: &mut [u8], filled: usize, body_start: usize, limit: u64) -> Result<bool, ReadError> {
        loop {
            match self.state {
                Chunk::Size => {
                    let Some(n) = line(&buf[self.read..filled])? else { return Ok(false) };
                    let size = chunk_size(&buf[self.read..self.read + n])?;
                    self.read += n + 1;
                    if ((self.written - body_start) as u64).saturating_add(size) > limit {
                        return Err(ReadError::TooLarge { limit });
                    }
                    self.state = if size == 0 { Chunk::Trailer } else { Chunk::Data(size) };
                }
                Chunk::Data(left) => {
                    let available = filled - self.read;
                    if available == 0 {
                        return Ok(false);
                    }
                    let n = usize::try_from(left).map_or(available, |l| l.min(available));
                    buf.copy_within(self.read..self.read + n, self.written);
                    self.read += n;
                    self.written += n;
                    self.state = if left == n as u64 { Chunk::DataEnd } else { Chunk::Data(left - n as u64) };
                }
                Chunk::DataEnd => {
                    if filled - self.read < 2 {
                        return Ok(false);
                    }
                    if buf[self.read..self.read + 2] != *b"\r\n" {
                        return Err(malformed("malformed chunked encoding"));
                    }
                    self.read += 2;
                    self.state = Chunk::Size;
                }
                Chunk::Trailer => {
                    let Some(n) = line(&buf[self.read..filled])? else { return Ok(false) };
                    let blank = buf[self.read..self.read + n].trim_ascii().is_empty();
                    self.read += n + 1;
                    if blank {
                        self.state = Chunk::Done;
                    }
                }
                Chunk::Done => return Ok(true),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Hands out `data` in pieces of the given sizes (then the rest at once).
    struct Pieces<'a> {
        data: &'a [u8],
        sizes: Vec<usize>,
        at: usize,
        next: usize,
    }

    impl<'a> Pieces<'a> {
        fn new(data: &'a [u8], sizes: Vec<usize>) -> Self {
            Pieces { data, sizes, at: 0, next: 0 }
        }
    }

    impl Read for Pieces<'_> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let want = self.sizes.get(self.next).copied().unwrap_or(usize::MAX).max(1);
            self.next += 1;
            let n = want.min(out.len()).min(self.data.len() - self.at);
            out[..n].copy_from_slice(&self.data[self.at..self.at + n]);
            self.at += n;
            Ok(n)
        }
    }

    fn read(raw: &[u8]) -> Result<(Answer, Vec<u8>), ReadError> {
        let mut buf = Vec::new();
        let a = read_answer(&mut Pieces::new(raw, vec![]), &mut buf, 1 << 20)?;
        let body = buf[a.body.clone()].to_vec();
        Ok((a, body))
    }

    #[test]
    fn framings_and_reuse() {
        let cases: Vec<(&[u8], u16, &[u8], bool)> = vec![
            (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", 200, b"hello", true),
            (b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\nConnection: close\r\n\r\nhello", 200, b"hello", false),
            (b"HTTP/1.1 200 OK\r\nConnection: keep-alive, Close\r\nContent-Length: 0\r\n\r\n", 200, b"", false),
            (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloX", 200, b"hello", false),
            (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nhi", 200, b"hi", true),
            (b"HTTP/1.1 200 OK\r\n\r\nuntil close", 200, b"until close", false),
            (b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nhi", 200, b"hi", false),
            (b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nhi", 200, b"hi", true),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\n\r\n",
                200,
                b"hello world",
                true,
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n3  \nabc\r\n0\nX-Trailer: y\r\n\r\n",
                200,
                b"abc",
                true,
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 99\r\n\r\n2\r\nhi\r\n0\r\n\r\n",
                200,
                b"hi",
                false,
            ),
            (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: identity\r\n\r\nraw", 200, b"raw", false),
            (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", 200, b"ok", true),
            (b"HTTP/1.1 204 No Content\r\nContent-Length: 9\r\n\r\n", 204, b"", true),
            (b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\n\r\noops", 503, b"oops", true),
        ];
        for (raw, status, body, reusable) in cases {
            let label = String::from_utf8_lossy(raw);
            let (a, got) = read(raw).unwrap_or_else(|e| panic!("{label}: {e}"));
            assert_eq!((a.status, got.as_slice(), a.reusable), (status, body, reusable), "{label}");
        }
    }

    #[test]
    fn bad_answers_say_why() {
        let cases: Vec<(&[u8], &str)> = vec![
            (b"", "EOF: the server closed"),
            (b"HTTP/1.1 200 OK\r\nContent-Len", "unexpected EOF"),
            (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhel", "unexpected EOF"),
            (b"<html>", "malformed HTTP response"),
            (b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "bad Content-Length"),
            (b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", "differing Content-Length"),
            (b"HTTP/1.1 200 OK\r\nContent-Length: 2000000\r\n\r\n", "over the limit of 1048576 bytes"),
            (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "invalid byte in chunk length"),
            (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n;x\r\n", "empty hex number"),
            (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n11111111111111111\r\n", "too large"),
            (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhiXX0\r\n\r\n", "malformed chunked encoding"),
            (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n200000\r\n", "over the limit"),
            (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n", "unexpected EOF"),
            (b"HTTP/1.1 101 Switching Protocols\r\n\r\n", "101"),
        ];
        for (raw, want) in cases {
            let err = read(raw).unwrap_err().to_string();
            assert!(err.contains(want), "{:?}: {err}", String::from_utf8_lossy(raw));
        }
        let long_line = [&b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1"[..], &[b'0'; 5000]].concat();
        assert!(read(&long_line).unwrap_err().to_string().contains("too long"));
    }

    /// `body` chunked in pieces of `sizes` (the rest in one chunk), with a trailer.
    fn chunked(body: &[u8], sizes: &[usize]) -> Vec<u8> {
        let mut out = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
        let mut at = 0;
        for &s in sizes.iter().chain(std::iter::once(&usize::MAX)) {
            let n = s.clamp(1, usize::MAX).min(body.len() - at);
            if n == 0 {
                break;
            }
            out.extend_from_slice(format!("{n:x}\r\n").as_bytes());
            out.extend_from_slice(&body[at..at + n]);
            out.extend_from_slice(b"\r\n");
            at += n;
        }
        out.extend_from_slice(b"0\r\nX-Done: yes\r\n\r\n");
        out
    }

    proptest! {
        /// Garbage, read in any pieces, never panics, and what it yields lies in the buffer.
        #[test]
        fn garbage_never_panics(
            raw in prop::collection::vec(any::<u8>(), 0..600),
            prefix in prop::sample::select(vec![
                &b""[..],
                b"HTTP/1.1 200 OK\r\n",
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
                b"HTTP/1.1 200 OK\r\nContent-Length: 40\r\n\r\n",
            ]),
            pieces in prop::collection::vec(0usize..50, 0..20),
        ) {
            let data = [prefix, &raw[..]].concat();
            let mut buf = Vec::new();
            if let Ok(a) = read_answer(&mut Pieces::new(&data, pieces), &mut buf, 256) {
                prop_assert!(a.body.start <= a.body.end && a.body.end <= buf.len());
                prop_assert!(a.body.len() <= 256);
            }
        }

        /// Any body comes back whole, however it is chunked and however the bytes arrive,
        /// and so does a Content-Length answer; a second answer in a kept buffer too.
        #[test]
        fn bodies_come_back_whole(
            body in prop::collection::vec(any::<u8>(), 0..3000),
            sizes in prop::collection::vec(1usize..700, 0..8),
            pieces in prop::collection::vec(1usize..900, 0..12),
        ) {
            let mut buf = Vec::new();
            let raw = chunked(&body, &sizes);
            let a = read_answer(&mut Pieces::new(&raw, pieces.clone()), &mut buf, 1 << 20).unwrap();
            prop_assert_eq!(&buf[a.body.clone()], &body[..]);
            prop_assert!(a.reusable);
            let mut raw = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len()).into_bytes();
            raw.extend_from_slice(&body);
            let a = read_answer(&mut Pieces::new(&raw, pieces), &mut buf, 1 << 20).unwrap();
            prop_assert_eq!(&buf[a.body.clone()], &body[..]);
            prop_assert!(a.reusable);
        }
    }
}
