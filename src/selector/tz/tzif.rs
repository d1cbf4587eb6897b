//! TZif files (RFC 8536, versions 1-3) and their footer's POSIX TZ rule: parsing,
//! bounded and panic-free, and the offset in force at an instant.

use super::TzError;
use crate::selector::civil::{self, is_leap};

/// A POSIX TZ rule's date (RFC 8536 §3.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum RuleDay {
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
pub(super) struct Rule {
    pub(super) day: RuleDay,
    pub(super) time: i64,
}

/// A parsed footer TZ string. Offsets are seconds east of UTC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct PosixTz {
    pub(super) std: i64,
    pub(super) dst: Option<(i64, Rule, Rule)>,
}

/// A loaded zone: Go's `Location` without names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Zone {
    /// Transition instants (seconds since the epoch), ascending as the file has them.
    pub(super) transitions: Vec<i64>,
    /// The local time type index of each transition.
    indices: Vec<u8>,
    /// Local time types: offset seconds east of UTC, and whether DST.
    types: Vec<(i64, bool)>,
    /// The footer rule, when present and well formed (Go ignores a bad one).
    pub(super) footer: Option<PosixTz>,
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
    pub(super) fn fixed(offset: i64) -> Self {
        Self { transitions: vec![i64::MIN], indices: vec![0], types: vec![(offset, false)], footer: None }
    }

    /// Go's `lookupFirstZone`: the type for instants before the first transition.
    fn first_type(&self) -> usize {
        if !self.indices.contains(&0) {
            return 0;
        }
        let first = usize::from(self.indices[0]);
        if self.types[first].1
            && let Some(zi) = (0..first).rev().find(|&zi| !self.types[zi].1)
        {
            return zi;
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
        if n == self.transitions.len()
            && let Some(footer) = &self.footer
        {
            return footer.offset_at(secs);
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
pub(super) fn parse_posix_tz(s: &str) -> Option<PosixTz> {
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
pub(super) fn rule_time(year: i64, rule: Rule, offset: i64) -> i64 {
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
    pub(super) fn offset_at(&self, secs: i64) -> i64 {
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
