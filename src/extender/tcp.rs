//! The extender client's TCP transport for ureq. Against ureq's own it saves system
//! calls on every call over a kept-alive connection: the request's head and body go
//! out in one write (ureq hands them over separately, which costs the server an extra
//! wake-up), and socket timeouts are set again only when the time left moves by more
//! than [`TIMEOUT_SLACK`] (ureq sets them before every read and write), and a kept
//! connection is probed for a hang-up once between calls, not twice, with one system
//! call on Unix, not three (see [`TcpTransport::is_open`]). A call on a kept
//! connection thus makes three system calls: the probe, one write, and one read for
//! an answer that has arrived whole.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Weak};
use std::time::Duration;

use ureq::Timeout;
use ureq::unversioned::transport::{
    Buffers, ConnectionDetails, Connector, Either, LazyBuffers, NextTimeout, ShutdownHandle, Transport,
};

/// How far a socket timeout may lag the time left before it is set again: a call may
/// overrun `httpTimeout` by this much at most.
pub(crate) const TIMEOUT_SLACK: Duration = Duration::from_millis(5);

/// Output kept back larger than this is written at once rather than joined to more.
const MAX_PENDING: usize = 256 << 10;

/// Opens the TCP connection, unless a connector before it (a proxy) already did.
#[derive(Debug, Default)]
pub(crate) struct TcpConnector;

impl<In: Transport> Connector<In> for TcpConnector {
    type Out = Either<In, TcpTransport>;

    fn connect(&self, details: &ConnectionDetails, chained: Option<In>) -> Result<Option<Self::Out>, ureq::Error> {
        if let Some(t) = chained {
            return Ok(Some(Either::A(t)));
        }
        let budget = details.timeout.not_zero().map(|d| *d);
        let mut last = None;
        for addr in &details.addrs {
            let attempt = match budget {
                Some(b) => TcpStream::connect_timeout(addr, b),
                None => TcpStream::connect(addr),
            };
            match attempt {
                Ok(stream) => {
                    stream.set_nodelay(true)?;
                    let stream = Arc::new(stream);
                    (details.register_shutdown)(Arc::downgrade(&stream) as Weak<dyn ShutdownHandle>)?;
                    let buffers =
                        LazyBuffers::new(details.config.input_buffer_size(), details.config.output_buffer_size());
                    let transport = TcpTransport {
                        stream,
                        buffers,
                        pending: Vec::new(),
                        read_timeout: None,
                        write_timeout: None,
                        used: false,
                    };
                    return Ok(Some(Either::B(transport)));
                }
                Err(e) if matches!(e.kind(), io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock) => {
                    last = Some(ureq::Error::Timeout(Timeout::Connect));
                }
                Err(e) => last = Some(e.into()),
            }
        }
        Err(last.unwrap_or(ureq::Error::HostNotFound))
    }
}

/// A TCP connection that joins a request's writes into one.
#[derive(Debug)]
pub(crate) struct TcpTransport {
    stream: Arc<TcpStream>,
    buffers: LazyBuffers,
    /// Output handed over and not yet written: sent when the answer is awaited.
    pending: Vec<u8>,
    read_timeout: Option<Duration>,
    write_timeout: Option<Duration>,
    /// Bytes went out or came in since the last [`Transport::is_open`].
    used: bool,
}

/// The socket timeout for `timeout` (`None`: none), or the timeout error when no time
/// is left.
fn socket_timeout(timeout: NextTimeout) -> Result<Option<Duration>, ureq::Error> {
    if timeout.after.is_zero() {
        return Err(ureq::Error::Timeout(timeout.reason));
    }
    Ok(timeout.not_zero().map(|d| *d))
}

/// Sets a socket timeout when it is off from `want` by more than the slack.
pub(crate) fn update(
    current: &mut Option<Duration>,
    want: Option<Duration>,
    set: impl FnOnce(Option<Duration>) -> io::Result<()>,
) -> io::Result<()> {
    let close = match (*current, want) {
        (None, None) => true,
        (Some(c), Some(w)) => c.abs_diff(w) <= TIMEOUT_SLACK,
        _ => false,
    };
    if !close {
        set(want)?;
        *current = want;
    }
    Ok(())
}

pub(crate) fn timed_out(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock)
}

impl TcpTransport {
    fn flush_pending(&mut self, timeout: NextTimeout) -> Result<(), ureq::Error> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let timeout = timeout.for_write();
        let want = socket_timeout(timeout)?;
        update(&mut self.write_timeout, want, |t| self.stream.set_write_timeout(t))?;
        let r = (&*self.stream).write_all(&self.pending);
        self.pending.clear();
        match r {
            Err(e) if timed_out(&e) => Err(ureq::Error::Timeout(timeout.reason)),
            r => Ok(r?),
        }
    }
}

impl Transport for TcpTransport {
    fn buffers(&mut self) -> &mut dyn Buffers {
        &mut self.buffers
    }

    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), ureq::Error> {
        self.used = true;
        self.pending.extend_from_slice(&self.buffers.output()[..amount]);
        if self.pending.len() >= MAX_PENDING {
            self.flush_pending(timeout)?;
        }
        Ok(())
    }

    fn maybe_await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        self.flush_pending(timeout)?;
        if self.buffers.can_use_input() {
            return Ok(true);
        }
        self.await_input(timeout)
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        self.used = true;
        self.flush_pending(timeout)?;
        let timeout = timeout.for_read();
        let want = socket_timeout(timeout)?;
        update(&mut self.read_timeout, want, |t| self.stream.set_read_timeout(t))?;
        let input = self.buffers.input_append_buf();
        let n = loop {
            match (&*self.stream).read(input) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if timed_out(&e) => return Err(ureq::Error::Timeout(timeout.reason)),
                r => break r?,
            }
        };
        self.buffers.input_appended(n);
        Ok(n > 0)
    }

    /// ureq asks twice per call on a kept connection: when the answer has been read
    /// (before pooling it) and when it takes it from the pool for the next call. The
    /// socket is probed (see [`idle`]) only on the second: whatever the first
    /// would catch (bytes after the answer, a hang-up) is still there to catch then,
    /// and the second is the one that guards the next request.
    fn is_open(&mut self) -> bool {
        if std::mem::take(&mut self.used) {
            return self.pending.is_empty();
        }
        // A kept connection the server closed (or wrote to unasked) is not reused.
        self.pending.is_empty() && idle(&self.stream).unwrap_or(false)
    }
}

/// Whether nothing can be read from `stream` now and it is not closed: a kept
/// connection the server hung up on, or wrote to unasked, is not reused. On Unix one
/// `recv(MSG_PEEK | MSG_DONTWAIT)`; elsewhere the socket is made non-blocking for a
/// one-byte read (three system calls).
#[cfg(unix)]
pub(crate) fn idle(stream: &TcpStream) -> io::Result<bool> {
    let mut byte = [std::mem::MaybeUninit::<u8>::uninit()];
    match socket2::SockRef::from(stream).recv_with_flags(&mut byte, libc::MSG_PEEK | libc::MSG_DONTWAIT) {
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::Interrupted => idle(stream),
        _ => Ok(false),
    }
}

#[cfg(not(unix))]
pub(crate) fn idle(stream: &TcpStream) -> io::Result<bool> {
    stream.set_nonblocking(true)?;
    let open = matches!((&*stream).read(&mut [0u8]), Err(e) if e.kind() == io::ErrorKind::WouldBlock);
    stream.set_nonblocking(false)?;
    Ok(open)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connection_is_idle_until_the_server_writes_or_hangs_up() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        assert!(idle(&client).unwrap(), "nothing sent yet");
        assert!(idle(&client).unwrap(), "probing twice reads nothing");
        server.write_all(b"x").unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while idle(&client).unwrap() && std::time::Instant::now() < deadline {}
        assert!(!idle(&client).unwrap(), "a byte sent unasked");
        let mut byte = [0u8];
        (&client).read_exact(&mut byte).unwrap();
        assert_eq!(byte, *b"x", "the probe only peeked");
        assert!(idle(&client).unwrap());
        drop(server);
        while idle(&client).unwrap() && std::time::Instant::now() < deadline {}
        assert!(!idle(&client).unwrap(), "hung up");
    }

    #[test]
    fn timeouts_are_set_again_only_past_the_slack() {
        let mut current = None;
        let mut sets = Vec::new();
        let mut go = |want: Option<Duration>| {
            update(&mut current, want, |t| {
                sets.push(t);
                Ok(())
            })
            .unwrap();
        };
        let ms = Duration::from_millis;
        go(Some(ms(5000)));
        go(Some(ms(4999)));
        go(Some(ms(5000)));
        go(Some(ms(4990)));
        go(None);
        go(None);
        go(Some(ms(1)));
        assert_eq!(sets, [Some(ms(5000)), Some(ms(4990)), None, Some(ms(1))]);
    }
}
