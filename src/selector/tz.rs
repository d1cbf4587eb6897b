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

use std::collections::hash_map::Entry;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, OnceLock};

use ahash::AHashMap;
use parking_lot::RwLock;

use super::civil::{self, is_leap};

/// The largest TZif file read. The largest file in the IANA database is a few
/// kilobytes; Go's limit is 10 MiB.
pub(crate) const MAX_FILE_SIZE: u64 = 1 << 20;
/// The largest part of a zip file read at once (its central directory, or one
/// entry): Go's `zoneinfo.zip` directory is about 40 KiB.
const MAX_ZIP_READ: u64 = 1 << 24;
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

/// A POSIX TZ rule's date (RFC 8536 §3.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RuleDay {
    /// `Jn`: day 1-365, February 29th never counted.
    Julian(u16),
    /// `n`: zero-based day 0-365, February 29th counted.
    DayOfYear(u16),
    /// `Mm.w.d`: weekday `d` (0 = Sunday) of week `w` (5 = last) of month `m`.
    MonthWeekDay { month: u8, week: u8, weekday: u8 },
}

/// A transition rule: the date and the local time of day (seconds, may be negative
/// or past 24 hours in version 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Rule {
    day: RuleDay,
    time: i64,
}

/// A parsed footer TZ string. Offsets are seconds east of UTC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct PosixTz {
    std: i64,
    dst: Option<(i64, Rule, Rule)>,
}

/// A loaded zone: Go's `Location` without names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Zone {
    /// Transition instants (seconds since the epoch), ascending as the file has them.
    transitions: Vec<i64>,
    /// The local time type index of each transition.
    indices: Vec<u8>,
    /// Local time types: offset seconds east of UTC, and whether DST.
    types: Vec<(i64, bool)>,
    /// The footer rule, when present and well formed (Go ignores a bad one).
    footer: Option<PosixTz>,
}

/// A big-endian reader that fails instead of panicking.
struct Reader<'a> {
    data: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], TzError> {
        if n > self.data.len() {
            return Err(TzError::BadData);
        }
        let (head, rest) = self.data.split_at(n);
        self.data = rest;
        Ok(head)
    }

    fn u32(&mut self) -> Result<u32, TzError> {
        let b = self.take(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
}

/// The header's six counts, in file order.
struct Counts {
    isut: usize,
    isstd: usize,
    leap: usize,
    time: usize,
    types: usize,
    chars: usize,
}

impl Counts {
    fn read(r: &mut Reader<'_>) -> Result<Self, TzError> {
        let mut n = [0usize; 6];
        for c in &mut n {
            *c = usize::try_from(r.u32()?).map_err(|_| TzError::BadData)?;
        }
        Ok(Self { isut: n[0], isstd: n[1], leap: n[2], time: n[3], types: n[4], chars: n[5] })
    }

    /// Bytes of the data block after the header, with `width`-byte times.
    fn block_len(&self, width: usize) -> Option<usize> {
        let parts = [
            self.time.checked_mul(width)?,
            self.time,
            self.types.checked_mul(6)?,
            self.chars,
            self.leap.checked_mul(width + 4)?,
            self.isstd,
            self.isut,
        ];
        parts.iter().try_fold(0usize, |acc, p| acc.checked_add(*p))
    }
}

/// Reads the TZif header: magic, version (1-3) and the counts.
fn header(r: &mut Reader<'_>) -> Result<(u8, Counts), TzError> {
    if r.take(4)? != b"TZif" {
        return Err(TzError::BadData);
    }
    let version = match r.take(16)?[0] {
        0 => 1,
        b'2' => 2,
        b'3' => 3,
        _ => return Err(TzError::BadData),
    };
    Ok((version, Counts::read(r)?))
}

impl Zone {
    /// Parses a TZif file (Go's `LoadLocationFromTZData`).
    pub(crate) fn parse(data: &[u8]) -> Result<Self, TzError> {
        let mut r = Reader { data };
        let (version, mut counts) = header(&mut r)?;
        let mut width = 4;
        if version > 1 {
            // Skip the 32-bit block and the second header's magic and version, which
            // Go does not check; the counts follow and may differ.
            let skip = counts.block_len(4).ok_or(TzError::BadData)?;
            r.take(skip)?;
            r.take(20)?;
            counts = Counts::read(&mut r)?;
            width = 8;
        }
        if counts.types == 0 {
            return Err(TzError::BadData);
        }
        // Everything is checked to be present before any allocation sized by a count.
        let need = counts.block_len(width).ok_or(TzError::BadData)?;
        if need > r.data.len() {
            return Err(TzError::BadData);
        }
        let times = r.take(counts.time * width)?;
        let indices = r.take(counts.time)?.to_vec();
        let type_bytes = r.take(counts.types * 6)?;
        let chars = r.take(counts.chars)?;
        r.take(counts.leap * (width + 4) + counts.isstd + counts.isut)?;

        let mut types = Vec::with_capacity(counts.types);
        for t in type_bytes.chunks_exact(6) {
            let offset = i32::from_be_bytes([t[0], t[1], t[2], t[3]]);
            if usize::from(t[5]) >= chars.len() {
                return Err(TzError::BadData);
            }
            types.push((i64::from(offset), t[4] != 0));
        }
        if indices.iter().any(|&i| usize::from(i) >= types.len()) {
            return Err(TzError::BadData);
        }
        let mut transitions: Vec<i64> = times
            .chunks_exact(width)
            .map(|c| match *c {
                [a, b, c, d] => i64::from(i32::from_be_bytes([a, b, c, d])),
                [a, b, c, d, e, f, g, h] => i64::from_be_bytes([a, b, c, d, e, f, g, h]),
                _ => 0,
            })
            .collect();
        let mut indices = indices;
        if transitions.is_empty() {
            // Go adds a transition to type 0 at the start of time, so a footer rule of
            // a file without transitions covers all time.
            transitions.push(i64::MIN);
            indices.push(0);
        }
        let footer = if version > 1 {
            let rest = r.data;
            match rest {
                [b'\n', tz @ .., b'\n'] if rest.len() > 2 => std::str::from_utf8(tz).ok().and_then(parse_posix_tz),
                _ => None,
            }
        } else {
            None
        };
        Ok(Self { transitions, indices, types, footer })
    }

    /// A zone of one fixed offset (UTC for Go's fallback `Local`, and tests).
    fn fixed(offset: i64) -> Self {
        Self { transitions: vec![i64::MIN], indices: vec![0], types: vec![(offset, false)], footer: None }
    }

    /// Go's `lookupFirstZone`: the type for instants before the first transition.
    fn first_type(&self) -> usize {
        if !self.indices.contains(&0) {
            return 0;
        }
        let first = usize::from(self.indices[0]);
        if self.types[first].1 {
            if let Some(zi) = (0..first).rev().find(|&zi| !self.types[zi].1) {
                return zi;
            }
        }
        self.types.iter().position(|t| !t.1).unwrap_or(0)
    }

    /// The offset (seconds east of UTC) at `secs` since the epoch (Go's
    /// `Location.lookup`).
    pub(crate) fn offset_at(&self, secs: i64) -> i64 {
        let n = self.transitions.partition_point(|&t| t <= secs);
        if n == 0 {
            return self.types[self.first_type()].0;
        }
        if n == self.transitions.len() {
            if let Some(footer) = &self.footer {
                return footer.offset_at(secs);
            }
        }
        self.types[usize::from(self.indices[n - 1])].0
    }
}

/// Go's `tzsetNum`: decimal digits with a value in `min..=max`.
fn num(s: &[u8], min: i64, max: i64) -> Option<(i64, &[u8])> {
    let len = s.iter().take_while(|b| b.is_ascii_digit()).count();
    if len == 0 {
        return None;
    }
    let mut v: i64 = 0;
    for &d in &s[..len] {
        v = v * 10 + i64::from(d - b'0');
        if v > max {
            return None;
        }
    }
    (v >= min).then_some((v, &s[len..]))
}

/// Go's `tzsetName`: `<...>` or at least three characters up to a digit, `,`, `-`
/// or `+`.
fn name(s: &[u8]) -> Option<&[u8]> {
    if s.first() == Some(&b'<') {
        let end = s.iter().position(|&b| b == b'>')?;
        return Some(&s[end + 1..]);
    }
    let end = s.iter().position(|b| b.is_ascii_digit() || matches!(b, b',' | b'-' | b'+')).unwrap_or(s.len());
    (end >= 3).then_some(&s[end..])
}

/// Go's `tzsetOffset`: `[+-]hh[:mm[:ss]]`, hours up to 167, as seconds.
fn offset(s: &[u8]) -> Option<(i64, &[u8])> {
    let (neg, s) = match s.first()? {
        b'+' => (false, &s[1..]),
        b'-' => (true, &s[1..]),
        _ => (false, s),
    };
    let (h, mut s) = num(s, 0, 24 * 7)?;
    let mut off = h * 3600;
    for scale in [60, 1] {
        if s.first() != Some(&b':') {
            break;
        }
        let (v, rest) = num(&s[1..], 0, 59)?;
        off += v * scale;
        s = rest;
    }
    Some((if neg { -off } else { off }, s))
}

/// Go's `tzsetRule`: `Jn`, `n` or `Mm.w.d`, then an optional `/time` (default 02:00).
fn rule(s: &[u8]) -> Option<(Rule, &[u8])> {
    let (day, s) = match s.first()? {
        b'J' => {
            let (d, s) = num(&s[1..], 1, 365)?;
            (RuleDay::Julian(d as u16), s)
        }
        b'M' => {
            let (month, s) = num(&s[1..], 1, 12)?;
            let s = s.strip_prefix(b".")?;
            let (week, s) = num(s, 1, 5)?;
            let s = s.strip_prefix(b".")?;
            let (weekday, s) = num(s, 0, 6)?;
            (RuleDay::MonthWeekDay { month: month as u8, week: week as u8, weekday: weekday as u8 }, s)
        }
        _ => {
            let (d, s) = num(s, 0, 365)?;
            (RuleDay::DayOfYear(d as u16), s)
        }
    };
    match s.strip_prefix(b"/") {
        None => Some((Rule { day, time: 2 * 3600 }, s)),
        Some(s) => {
            let (time, s) = offset(s)?;
            Some((Rule { day, time }, s))
        }
    }
}

/// Parses a POSIX TZ string as Go's `tzset` does; `None` when malformed.
fn parse_posix_tz(s: &str) -> Option<PosixTz> {
    let s = name(s.as_bytes())?;
    let (std, s) = offset(s)?;
    // POSIX offsets are west of UTC.
    let std = -std;
    if s.is_empty() || s[0] == b',' {
        return Some(PosixTz { std, dst: None });
    }
    let s = name(s)?;
    let (dst, s) = if s.is_empty() || s[0] == b',' {
        (std + 3600, s)
    } else {
        let (d, s) = offset(s)?;
        (-d, s)
    };
    // Without a rule, tzcode's default (the US rules since 2007).
    let s: &[u8] = if s.is_empty() { b",M3.2.0,M11.1.0" } else { s };
    let s = s.strip_prefix(b",").or_else(|| s.strip_prefix(b";"))?;
    let (start, s) = rule(s)?;
    let s = s.strip_prefix(b",")?;
    let (end, s) = rule(s)?;
    s.is_empty().then_some(PosixTz { std, dst: Some((dst, start, end)) })
}

/// Seconds from the start of `year` (UTC) to the rule's transition, given the
/// offset in force before it (Go's `tzruleTime`).
fn rule_time(year: i64, rule: Rule, offset: i64) -> i64 {
    let day = match rule.day {
        RuleDay::Julian(d) => i64::from(d) - 1 + i64::from(is_leap(year) && d >= 60),
        RuleDay::DayOfYear(d) => i64::from(d),
        RuleDay::MonthWeekDay { month, week, weekday } => {
            let month = u32::from(month);
            let first = civil::days_from_civil(year, month, 1);
            // 1970-01-01 was a Thursday.
            let first_dow = (first + 4).rem_euclid(7);
            let mut d = (i64::from(weekday) - first_dow).rem_euclid(7);
            let len = i64::from(civil::days_in_month(year, month));
            for _ in 1..week {
                if d + 7 >= len {
                    break;
                }
                d += 7;
            }
            first - civil::days_from_civil(year, 1, 1) + d
        }
    };
    day * 86_400 + rule.time - offset
}

impl PosixTz {
    /// The offset at `secs` (Go's `tzset`, which places the instant in its UTC year).
    fn offset_at(&self, secs: i64) -> i64 {
        let Some((dst, start, end)) = self.dst else { return self.std };
        let days = secs.div_euclid(86_400);
        let (year, _, _) = civil::civil_from_days(days);
        let ysec = (days - civil::days_from_civil(year, 1, 1)) * 86_400 + secs.rem_euclid(86_400);
        let (mut lo, mut hi) = (rule_time(year, start, self.std), rule_time(year, end, dst));
        let (mut std_off, mut dst_off) = (self.std, dst);
        if hi < lo {
            // Southern hemisphere: DST spans the new year.
            std::mem::swap(&mut lo, &mut hi);
            std::mem::swap(&mut std_off, &mut dst_off);
        }
        if ysec < lo || ysec >= hi { std_off } else { dst_off }
    }
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

/// Reads `name` from the zip file `zip` as Go's `loadTzinfoFromZip` does (the form of
/// Go's own `lib/time/zoneinfo.zip`): the central directory from the end record, the
/// entry by exact name, stored (uncompressed) entries only, the data after the local
/// header. `Ok(None)` when the zip has no such entry; Go's messages otherwise. Every
/// offset and length is checked against the file, so a malformed zip is an error.
fn read_zone_zip(zip: &Path, name: &str) -> Result<Option<Zone>, TzError> {
    use std::io::{Read as _, Seek as _, SeekFrom};
    const END_RECORD: u32 = 0x0605_4b50;
    const CENTRAL_HEADER: u32 = 0x0201_4b50;
    const LOCAL_HEADER: u32 = 0x0403_4b50;
    let corrupt = || TzError::Io(format!("corrupt zip file {}", zip.display()));
    let mut file = match std::fs::File::open(zip) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(TzError::Io(e.to_string())),
    };
    let len = file.metadata().map_err(|e| TzError::Io(e.to_string()))?.len();
    let mut read_at = |offset: u64, n: u64| -> Result<Vec<u8>, TzError> {
        if offset.checked_add(n).is_none_or(|end| end > len) || n > MAX_ZIP_READ {
            return Err(corrupt());
        }
        let mut buf = vec![0; n as usize];
        file.seek(SeekFrom::Start(offset)).and_then(|_| file.read_exact(&mut buf)).map_err(|_| corrupt())?;
        Ok(buf)
    };
    let u16_at = |b: &[u8], at: usize| b.get(at..at + 2).map(|x| u16::from_le_bytes([x[0], x[1]]));
    let u32_at = |b: &[u8], at: usize| b.get(at..at + 4).map(|x| u32::from_le_bytes([x[0], x[1], x[2], x[3]]));
    let tail = read_at(len.checked_sub(22).ok_or_else(corrupt)?, 22)?;
    if u32_at(&tail, 0) != Some(END_RECORD) {
        return Err(corrupt());
    }
    let (Some(entries), Some(dir_size), Some(dir_off)) = (u16_at(&tail, 10), u32_at(&tail, 12), u32_at(&tail, 16))
    else {
        return Err(corrupt());
    };
    let dir = read_at(u64::from(dir_off), u64::from(dir_size))?;
    let mut at = 0usize;
    for _ in 0..entries {
        if u32_at(&dir, at) != Some(CENTRAL_HEADER) {
            break;
        }
        let field = |o: usize| u16_at(&dir, at + o).map(usize::from).ok_or_else(corrupt);
        let (method, name_len, extra_len, comment_len) = (field(10)?, field(28)?, field(30)?, field(32)?);
        let size = u32_at(&dir, at + 24).ok_or_else(corrupt)?;
        let offset = u32_at(&dir, at + 42).ok_or_else(corrupt)?;
        let entry_name = dir.get(at + 46..at + 46 + name_len).ok_or_else(corrupt)?;
        at += 46 + name_len + extra_len + comment_len;
        if entry_name != name.as_bytes() {
            continue;
        }
        if method != 0 {
            return Err(TzError::Io(format!("unsupported compression for {name} in {}", zip.display())));
        }
        let local = read_at(u64::from(offset), 30 + name_len as u64)?;
        let consistent = u32_at(&local, 0) == Some(LOCAL_HEADER)
            && u16_at(&local, 8).map(usize::from) == Some(method)
            && u16_at(&local, 26).map(usize::from) == Some(name_len)
            && local.get(30..) == Some(name.as_bytes());
        let local_extra = u16_at(&local, 28).ok_or_else(corrupt)?;
        if !consistent {
            return Err(corrupt());
        }
        if u64::from(size) > MAX_FILE_SIZE {
            return Err(TzError::TooLarge(format!("{}/{name}", zip.display())));
        }
        let data = read_at(u64::from(offset) + 30 + name_len as u64 + u64::from(local_extra), u64::from(size))?;
        return Zone::parse(&data).map(Some);
    }
    Ok(None)
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
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// Builds a version-2 TZif file with one local time type per offset, the given
    /// transitions (instant, type index) and footer.
    pub(crate) fn tzif(types: &[(i32, bool)], transitions: &[(i64, u8)], footer: &str) -> Vec<u8> {
        let mut out = Vec::new();
        // An empty version-2 32-bit block: one type, no transitions.
        out.extend_from_slice(b"TZif2");
        out.extend_from_slice(&[0; 15]);
        for c in [0u32, 0, 0, 0, 1, 1] {
            out.extend_from_slice(&c.to_be_bytes());
        }
        out.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0]);
        out.extend_from_slice(b"TZif2");
        out.extend_from_slice(&[0; 15]);
        for c in [0u32, 0, 0, transitions.len() as u32, types.len() as u32, 1] {
            out.extend_from_slice(&c.to_be_bytes());
        }
        for (t, _) in transitions {
            out.extend_from_slice(&t.to_be_bytes());
        }
        out.extend(transitions.iter().map(|(_, i)| *i));
        for (off, dst) in types {
            out.extend_from_slice(&off.to_be_bytes());
            out.extend_from_slice(&[u8::from(*dst), 0]);
        }
        out.push(0);
        out.push(b'\n');
        out.extend_from_slice(footer.as_bytes());
        out.push(b'\n');
        out
    }

    #[test]
    fn posix_rules() {
        let ny = parse_posix_tz("EST5EDT,M3.2.0,M11.1.0").unwrap();
        assert_eq!(ny.std, -5 * 3600);
        // 2024-03-10 06:59:59Z is 01:59:59 EST; a second later it is 03:00 EDT.
        assert_eq!(ny.offset_at(1_710_053_999), -5 * 3600);
        assert_eq!(ny.offset_at(1_710_054_000), -4 * 3600);
        // 2024-11-03 05:59:59Z is 01:59:59 EDT; then 01:00 EST.
        assert_eq!(ny.offset_at(1_730_613_599), -4 * 3600);
        assert_eq!(ny.offset_at(1_730_613_600), -5 * 3600);
        // Defaults: DST one hour ahead, the US rules.
        assert_eq!(parse_posix_tz("EST5EDT"), Some(ny));
        assert_eq!(parse_posix_tz("<+0530>-5:30"), Some(PosixTz { std: 19_800, dst: None }));
        // Southern hemisphere, half-hour DST (Lord Howe).
        let lh = parse_posix_tz("<+1030>-10:30<+11>-11,M10.1.0,M4.1.0").unwrap();
        assert_eq!(lh.offset_at(1_704_067_200), 11 * 3600); // 2024-01-01
        assert_eq!(lh.offset_at(1_719_792_000), 37_800); // 2024-07-01
        // Julian and zero-based days, times past 24h and negative (version 3).
        let j = parse_posix_tz("AAA0BBB,J60/0,300/-1").unwrap();
        let (_, start, end) = j.dst.unwrap();
        assert_eq!(rule_time(2024, start, 0), 60 * 86_400); // March 1st of a leap year
        assert_eq!(rule_time(2023, start, 0), 59 * 86_400);
        assert_eq!(rule_time(2024, end, 0), 300 * 86_400 - 3600);
        assert!(parse_posix_tz("EST5EDT,M3.2.0/167,M11.1.0/-167").is_some());
        for bad in
            ["", "AB5", "EST", "EST5EDT,M13.1.0,M11.1.0", "EST5EDT,M3.6.0,M11.1.0", "EST5EDT,M3.2.0", "<EST5", "EST169"]
        {
            assert_eq!(parse_posix_tz(bad), None, "{bad}");
        }
        // Last Sunday of October 2024 is the 27th; of February 2024 the 25th.
        let eu = Rule { day: RuleDay::MonthWeekDay { month: 10, week: 5, weekday: 0 }, time: 0 };
        assert_eq!(
            rule_time(2024, eu, 0) / 86_400,
            i64::from(super::civil::days_in_month(2024, 1)) + 29 + 31 + 30 + 31 + 30 + 31 + 31 + 30 + 26
        );
    }

    #[test]
    fn parses_built_files_and_rejects_bad_ones() {
        // Types 0 = LMT, 1 = standard, 2 = DST; transitions then a footer.
        let data = tzif(
            &[(-17_762, false), (-18_000, false), (-14_400, true)],
            &[(-2_717_650_800, 1), (1_000_000_000, 2)],
            "EST5EDT,M3.2.0,M11.1.0",
        );
        let z = Zone::parse(&data).unwrap();
        assert_eq!(z.offset_at(-3_000_000_000), -17_762);
        assert_eq!(z.offset_at(0), -18_000);
        assert_eq!(z.offset_at(1_000_000_000), -14_400);
        // Past the last transition the footer rules: 2024-01-01 is standard time.
        assert_eq!(z.offset_at(1_704_067_200), -18_000);
        // Before the first transition, when type 0 is unused and the first is DST.
        let z = Zone::parse(&tzif(&[(3600, true), (0, false), (7200, true)], &[(100, 2)], "")).unwrap();
        assert_eq!(z.offset_at(0), 3600); // type 0 unused: type 0
        let z = Zone::parse(&tzif(&[(0, false), (3600, true)], &[(100, 1), (200, 0)], "")).unwrap();
        assert_eq!(z.offset_at(0), 0); // first transition to DST: the standard type before it
        // No transitions: the footer covers all time.
        let z = Zone::parse(&tzif(&[(0, false)], &[], "EST5EDT")).unwrap();
        assert_eq!(z.offset_at(1_720_000_000), -14_400);
        // A malformed footer is ignored: the last type stays.
        let z = Zone::parse(&tzif(&[(0, false), (3600, false)], &[(10, 1)], "bogus!")).unwrap();
        assert_eq!(z.offset_at(1_720_000_000), 3600);
        assert_eq!(Zone::fixed(60).offset_at(0), 60);

        // Go reads the second header's counts without checking its magic or version.
        let mut second = tzif(&[(3600, false)], &[], "");
        assert_eq!(&second[51..55], b"TZif");
        second[51..56].copy_from_slice(b"xxxx9");
        assert_eq!(Zone::parse(&second).map(|z| z.offset_at(0)), Ok(3600));
        assert_eq!(Zone::parse(b""), Err(TzError::BadData));
        assert_eq!(Zone::parse(b"TZif4"), Err(TzError::BadData));
        let mut bad_index = tzif(&[(0, false)], &[(10, 0)], "");
        let at = bad_index.len() - 2 - 6 - 1 - 1; // the transition's type index
        bad_index[at] = 1;
        assert_eq!(Zone::parse(&bad_index), Err(TzError::BadData));
        let no_types = tzif(&[], &[], "");
        assert_eq!(Zone::parse(&no_types), Err(TzError::BadData));
        for cut in 0..data.len() - "\nEST5EDT,M3.2.0,M11.1.0\n".len() {
            assert!(Zone::parse(&data[..cut]).is_err(), "cut at {cut}");
        }
    }

    /// Seconds since the epoch of a UTC RFC 3339 instant.
    fn at(s: &str) -> i64 {
        let n = |r: std::ops::Range<usize>| s[r].parse::<i64>().unwrap();
        let days = super::civil::days_from_civil(n(0..4), n(5..7) as u32, n(8..10) as u32);
        days * 86_400 + n(11..13) * 3600 + n(14..16) * 60 + n(17..19)
    }

    #[test]
    fn real_files_from_the_iana_database() {
        let ny = Zone::parse(include_bytes!("../../tests/fixtures/tzif/America_New_York")).unwrap();
        let h = 3600;
        assert_eq!(ny.offset_at(at("1850-01-01T00:00:00Z")), -17_762); // LMT
        assert_eq!(ny.offset_at(at("2024-03-10T06:59:59Z")), -5 * h);
        assert_eq!(ny.offset_at(at("2024-03-10T07:00:00Z")), -4 * h);
        assert_eq!(ny.offset_at(at("2024-11-03T05:59:59Z")), -4 * h);
        assert_eq!(ny.offset_at(at("2024-11-03T06:00:00Z")), -5 * h);
        // Past the last transition (2037 in a fat file): the footer rule.
        assert!(ny.footer.is_some());
        assert!(*ny.transitions.last().unwrap() < at("2100-01-01T00:00:00Z"));
        assert_eq!(ny.offset_at(at("2100-03-14T06:59:59Z")), -5 * h);
        assert_eq!(ny.offset_at(at("2100-03-14T07:00:00Z")), -4 * h);
        assert_eq!(ny.offset_at(at("2100-11-07T05:59:59Z")), -4 * h);
        assert_eq!(ny.offset_at(at("2100-11-07T06:00:00Z")), -5 * h);
        assert_eq!(ny.offset_at(at("9999-12-31T23:59:59Z")), -5 * h);

        let lh = Zone::parse(include_bytes!("../../tests/fixtures/tzif/Australia_Lord_Howe")).unwrap();
        // DST (+11) ends 2024-04-07 02:00 local; starts 2024-10-06 02:00 (+10:30).
        assert_eq!(lh.offset_at(at("2024-04-06T14:59:59Z")), 11 * h);
        assert_eq!(lh.offset_at(at("2024-04-06T15:00:00Z")), 37_800);
        assert_eq!(lh.offset_at(at("2024-10-05T15:29:59Z")), 37_800);
        assert_eq!(lh.offset_at(at("2024-10-05T15:30:00Z")), 11 * h);
        assert_eq!(lh.offset_at(at("2200-01-01T00:00:00Z")), 11 * h);
        assert_eq!(lh.offset_at(at("2200-07-01T00:00:00Z")), 37_800);
    }

    #[test]
    fn names_are_checked_before_any_read() {
        for name in ["../etc/passwd", "America/../../etc/passwd", "/etc/localtime", "\\x", "a..b"] {
            assert_eq!(load(name, None), Err(TzError::InvalidName), "{name}");
        }
        for name in ["", "America/New York", "Europe/Paris\0"] {
            assert_eq!(load(name, None), Err(TzError::Unknown(name.to_owned())), "{name:?}");
        }
        assert_eq!(load("No/Such_Zone", None), Err(TzError::Unknown("No/Such_Zone".to_owned())));
        assert_eq!(TzError::Unknown("X/Y".into()).to_string(), "unknown time zone X/Y");
    }

    #[test]
    fn zoneinfo_dir_comes_first_and_files_are_bounded() {
        // `$ZONEINFO` is searched before the platform sources (the fixtures as one).
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tzif");
        let lh = load("Australia_Lord_Howe", Some(&fixtures)).unwrap();
        assert_eq!(lh.offset_at(at("2024-07-01T00:00:00Z")), 37_800);
        // A file that is not TZif is Go's errBadData, and the search goes on to the
        // platform sources (where this name is absent), keeping the first error.
        assert_eq!(load("README.md", Some(&fixtures)), Err(TzError::BadData));
        let dir = std::env::temp_dir().join(format!("schedkit-tz-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("Big"), vec![0u8; MAX_FILE_SIZE as usize + 1]).unwrap();
        let big = load("Big", Some(&dir));
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(matches!(big, Err(TzError::TooLarge(_))), "{big:?}");
    }

    /// A zip file of `(name, data, method)` entries, data stored as given (CRCs are
    /// left zero: Go does not check them).
    fn zip(entries: &[(&str, &[u8], u16)]) -> Vec<u8> {
        let (mut out, mut central) = (Vec::new(), Vec::new());
        for &(name, data, method) in entries {
            let offset = out.len() as u32;
            let (size, name_len) = (data.len() as u32, name.len() as u16);
            out.extend_from_slice(&0x0403_4b50u32.to_le_bytes());
            out.extend_from_slice(&[20, 0, 0, 0]);
            out.extend_from_slice(&method.to_le_bytes());
            out.extend_from_slice(&[0; 8]);
            out.extend_from_slice(&size.to_le_bytes());
            out.extend_from_slice(&size.to_le_bytes());
            out.extend_from_slice(&name_len.to_le_bytes());
            out.extend_from_slice(&0u16.to_le_bytes());
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(data);
            central.extend_from_slice(&0x0201_4b50u32.to_le_bytes());
            central.extend_from_slice(&[20, 3, 20, 0, 0, 0]);
            central.extend_from_slice(&method.to_le_bytes());
            central.extend_from_slice(&[0; 8]);
            central.extend_from_slice(&size.to_le_bytes());
            central.extend_from_slice(&size.to_le_bytes());
            central.extend_from_slice(&name_len.to_le_bytes());
            central.extend_from_slice(&[0; 12]);
            central.extend_from_slice(&offset.to_le_bytes());
            central.extend_from_slice(name.as_bytes());
        }
        let (dir_off, dir_size, n) = (out.len() as u32, central.len() as u32, entries.len() as u16);
        out.extend_from_slice(&central);
        out.extend_from_slice(&0x0605_4b50u32.to_le_bytes());
        out.extend_from_slice(&[0; 4]);
        out.extend_from_slice(&n.to_le_bytes());
        out.extend_from_slice(&n.to_le_bytes());
        out.extend_from_slice(&dir_size.to_le_bytes());
        out.extend_from_slice(&dir_off.to_le_bytes());
        out.extend_from_slice(&[0; 2]);
        out
    }

    #[test]
    fn zoneinfo_may_be_a_zip_file() {
        // Names no platform source has, so only the zip can answer.
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tzif");
        let lord_howe = std::fs::read(fixtures.join("Australia_Lord_Howe")).unwrap();
        let dir = std::env::temp_dir().join(format!("schedkit-tzzip-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("zoneinfo.zip");
        std::fs::write(
            &path,
            zip(&[("Etc/Other", b"TZif", 0), ("Zip_Test/Lord_Howe", &lord_howe, 0), ("Deflated", b"x", 8)]),
        )
        .unwrap();
        let lh = load("Zip_Test/Lord_Howe", Some(&path));
        let absent = load("No/Such_Zone", Some(&path));
        let deflated = load("Deflated", Some(&path));
        let not_tzif = load("Etc/Other", Some(&path));
        // A zip cut short, and one whose local header disagrees with its directory.
        let whole = zip(&[("Zip_Test/Lord_Howe", &lord_howe, 0)]);
        std::fs::write(&path, &whole[whole.len() / 2..]).unwrap();
        let truncated = load("Zip_Test/Lord_Howe", Some(&path));
        let mut bad_local = whole.clone();
        bad_local[8] = 8;
        std::fs::write(&path, &bad_local).unwrap();
        let inconsistent = load("Zip_Test/Lord_Howe", Some(&path));
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(lh.unwrap().offset_at(at("2024-07-01T00:00:00Z")), 37_800);
        assert_eq!(absent, Err(TzError::Unknown("No/Such_Zone".to_owned())));
        let shown = path.display();
        assert_eq!(deflated, Err(TzError::Io(format!("unsupported compression for Deflated in {shown}"))));
        assert_eq!(not_tzif, Err(TzError::BadData));
        assert_eq!(truncated, Err(TzError::Io(format!("corrupt zip file {shown}"))));
        assert_eq!(inconsistent, Err(TzError::Io(format!("corrupt zip file {shown}"))));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// Mutated zip files never panic.
        #[test]
        fn zip_mutations_never_panic(at in 0usize..400, byte in any::<u8>(), cut in 0usize..400) {
            let mut data = zip(&[("A", b"TZif2", 0), ("B/C", &[0u8; 40], 0)]);
            let at = at % data.len();
            data[at] = byte;
            data.truncate(data.len() - cut % data.len());
            let path = std::env::temp_dir().join(format!("schedkit-tzfuzz-{}-{at}-{cut}.zip", std::process::id()));
            std::fs::write(&path, &data).unwrap();
            let _ = load("A", Some(&path));
            let _ = load("B/C", Some(&path));
            std::fs::remove_file(&path).unwrap();
        }


        /// Random bytes, and random bytes after a valid header, never panic.
        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..512), prefix in any::<bool>()) {
            let mut input = if prefix { b"TZif2".to_vec() } else { Vec::new() };
            input.extend_from_slice(&data);
            if let Ok(z) = Zone::parse(&input) {
                for secs in [i64::MIN, -1, 0, 1_700_000_000, i64::MAX / 2] {
                    let _ = z.offset_at(secs);
                }
            }
        }

        /// Mutating a valid file never panics, and lookups of a parsed result work
        /// across CEL's whole range.
        #[test]
        fn mutations_never_panic(at in 0usize..200, byte in any::<u8>(), secs in -62_135_596_800i64..253_402_300_800) {
            let mut data = tzif(&[(-17_762, false), (-18_000, false), (-14_400, true)], &[(-2_717_650_800, 1), (1_000_000_000, 2)], "EST5EDT,M3.2.0,M11.1.0");
            let at = at % data.len();
            data[at] = byte;
            if let Ok(z) = Zone::parse(&data) {
                let _ = z.offset_at(secs);
            }
        }

        #[test]
        fn posix_parse_never_panics(s in "[A-Z<>+0-9,.:/JM-]{0,40}", secs in -62_135_596_800i64..253_402_300_800) {
            if let Some(tz) = parse_posix_tz(&s) {
                let _ = tz.offset_at(secs);
            }
        }
    }
}
