//! IANA time zones for the timestamp getters, read as Go's `time.LoadLocation` reads
//! them (cel-go calls it for a zone argument without a `:`): TZif files (RFC 8536,
//! versions 1-3) from the host's zoneinfo directory, the 64-bit block when present,
//! and the footer's POSIX TZ rule (RFC 8536 §3.3) for instants after the last
//! transition.
//!
//! The parser is bounded (files over [`MAX_FILE_SIZE`] are refused, every count is
//! checked against the bytes present before anything is allocated) and never panics:
//! malformed data is a [`TzError`]. Loaded zones are cached process-wide, so
//! evaluation reads each file once and a cached lookup allocates nothing.
//!
//! `"Local"` is the process's own zone, as Go's `time.Local` (`initLocal` in
//! `time/zoneinfo_unix.go`), which kube-scheduler uses when it evaluates a selector:
//! `$TZ` unset reads `/etc/localtime`; `$TZ` empty or `UTC` is UTC; `$TZ` naming an
//! absolute path (after an optional `:`) reads that file; any other `$TZ` is a zone
//! name looked up in the platform sources (not `$ZONEINFO`). Whatever cannot be read
//! falls back to UTC, never an error. It is determined once per process.
//!
//! `$ZONEINFO` may name a directory or, as in Go, an uncompressed zip file (such as
//! Go's `lib/time/zoneinfo.zip`). Not read, unlike Go: Android's `tzdata` bundle,
//! `$GOROOT/lib/time/zoneinfo.zip` (a Go installation's, absent from scheduler
//! images) and Go's embedded `time/tzdata` (kube-scheduler does not import it).
//!
//! Here: the zoneinfo search, the cache and `"Local"`; `tzif.rs` parses a file and
//! finds the offset at an instant, `zip.rs` reads an entry of a zip file.

use std::collections::hash_map::Entry;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, OnceLock};

use ahash::AHashMap;
use parking_lot::RwLock;

mod tzif;
mod zip;

pub(crate) use tzif::Zone;
use zip::read_zone_zip;
pub(crate) use zip::read_zone_zip_from;

/// The largest TZif file read. The largest file in the IANA database is a few
/// kilobytes; Go's limit is 10 MiB.
pub(crate) const MAX_FILE_SIZE: u64 = 1 << 20;
/// Zones kept in the process-wide cache. The database has about 600 names, but one
/// file has many spellings (`America/./New_York`), so the cache is capped.
const MAX_CACHED: usize = 1024;
/// Go's `platformZoneSources` on Unix, searched after `$ZONEINFO` (current Go also
/// searches NixOS's `/etc/zoneinfo`).
const PLATFORM_ZONE_SOURCES: [&str; 4] =
    ["/usr/share/zoneinfo/", "/usr/share/lib/zoneinfo/", "/usr/lib/locale/TZ/", "/etc/zoneinfo/"];

/// Why a zone could not be loaded. The messages are Go's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum TzError {
    /// Not a TZif file, or inconsistent counts (Go's `errBadData`).
    #[error("malformed time zone information")]
    BadData,
    /// Over [`MAX_FILE_SIZE`] (Go's `fileSizeError`).
    #[error("time: file {0} is too large")]
    TooLarge(String),
    /// A name with `..`, a leading `/` or `\` (Go's `errLocation`).
    #[error("time: invalid location name")]
    InvalidName,
    /// No zoneinfo source has the name.
    #[error("unknown time zone {0}")]
    Unknown(String),
    /// Reading the file failed for another reason than its absence; the message is
    /// the OS error's, as Go returns its `syscall.Errno`.
    #[error("{0}")]
    Io(String),
}

/// Go's name check in `LoadLocation` (`..` anywhere, a leading `/` or `\`), then a
/// charset so no name can leave the zoneinfo directory or carry a NUL: letters,
/// digits, `/`, `_`, `-`, `+`, `.`. A name outside the charset cannot be an IANA
/// zone, so it is reported unknown, as Go would after failing to open it.
fn check_name(name: &str) -> Result<(), TzError> {
    if name.contains("..") || name.starts_with('/') || name.starts_with('\\') {
        return Err(TzError::InvalidName);
    }
    if name.is_empty()
        || !name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'/' | b'_' | b'-' | b'+' | b'.'))
    {
        return Err(TzError::Unknown(name.to_owned()));
    }
    Ok(())
}

/// Reads `dir/name`, bounded; `Ok(None)` when absent.
fn read_zone(dir: &Path, name: &str) -> Result<Option<Zone>, TzError> {
    use std::io::Read as _;
    // Go's `syscall.Errno` texts for the common cases, else Rust's.
    fn os_error(e: &std::io::Error) -> TzError {
        TzError::Io(match e.kind() {
            std::io::ErrorKind::IsADirectory => "is a directory".to_owned(),
            std::io::ErrorKind::PermissionDenied => "permission denied".to_owned(),
            _ => e.to_string(),
        })
    }
    let path: PathBuf = dir.join(name);
    let file = match std::fs::File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(os_error(&e)),
    };
    let mut data = Vec::new();
    file.take(MAX_FILE_SIZE + 1).read_to_end(&mut data).map_err(|e| os_error(&e))?;
    if data.len() as u64 > MAX_FILE_SIZE {
        return Err(TzError::TooLarge(path.display().to_string()));
    }
    Zone::parse(&data).map(Some)
}

/// Loads `name` from `$ZONEINFO` (a directory, or a zip file when its name ends in
/// `.zip`, as Go's `loadTzinfo`), then the platform sources, keeping the first error
/// other than absence (Go's `LoadLocation` and `loadLocation`).
fn load(name: &str, zoneinfo: Option<&Path>) -> Result<Zone, TzError> {
    check_name(name)?;
    let mut first_err = None;
    for dir in zoneinfo.into_iter().chain(PLATFORM_ZONE_SOURCES.iter().map(Path::new)) {
        let is_zip = dir.as_os_str().len() > 4 && dir.as_os_str().as_encoded_bytes().ends_with(b".zip");
        let found = if is_zip { read_zone_zip(dir, name) } else { read_zone(dir, name) };
        match found {
            Ok(Some(z)) => return Ok(z),
            Ok(None) => {}
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    Err(first_err.unwrap_or_else(|| TzError::Unknown(name.to_owned())))
}

static CACHE: LazyLock<RwLock<AHashMap<String, Arc<Zone>>>> = LazyLock::new(|| RwLock::new(AHashMap::new()));

/// The zone named `name` (an IANA name such as `America/New_York`), loaded once per
/// process. Failures are not cached: a zone installed later is found, as in Go.
pub(crate) fn zone(name: &str) -> Result<Arc<Zone>, TzError> {
    if let Some(z) = CACHE.read().get(name) {
        return Ok(Arc::clone(z));
    }
    let dir = std::env::var_os("ZONEINFO").filter(|d| !d.is_empty()).map(PathBuf::from);
    let zone = Arc::new(load(name, dir.as_deref())?);
    let mut cache = CACHE.write();
    let len = cache.len();
    match cache.entry(name.to_owned()) {
        Entry::Occupied(e) => Ok(Arc::clone(e.get())),
        Entry::Vacant(e) if len < MAX_CACHED => Ok(Arc::clone(e.insert(zone))),
        Entry::Vacant(_) => Ok(zone),
    }
}

/// Go's `time.Local`, determined once per process (see the module documentation).
pub(crate) fn local() -> Arc<Zone> {
    static LOCAL: OnceLock<Arc<Zone>> = OnceLock::new();
    Arc::clone(LOCAL.get_or_init(|| Arc::new(init_local())))
}

fn init_local() -> Zone {
    let found = match std::env::var_os("TZ") {
        None => read_zone(Path::new("/etc"), "localtime").ok().flatten(),
        Some(tz) => {
            let tz = tz.to_string_lossy();
            let tz = tz.strip_prefix(':').unwrap_or(&tz);
            if tz.starts_with('/') {
                read_zone(Path::new(""), tz).ok().flatten()
            } else if !tz.is_empty() && tz != "UTC" {
                load(tz, None).ok()
            } else {
                None
            }
        }
    };
    found.unwrap_or_else(|| Zone::fixed(0))
}

#[cfg(test)]
mod tests;
