//! CEL timestamps and durations (the standard library; cel-go `common/types/timestamp.go`
//! and `duration.go`): `timestamp(s)` reads RFC 3339 as Go's `time.Parse(RFC3339)`,
//! `duration(s)` reads Go's `time.ParseDuration` syntax, and both print as cel-go does.
//!
//! A timestamp is held as nanoseconds since the Unix epoch, within CEL's range
//! 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999999Z; a duration as nanoseconds
//! in an `i64` (Go's `time.Duration`). Calendar getters take an optional time zone:
//! `"UTC"` (also `""`), a fixed offset `"+05:30"` as cel-go accepts it, or an IANA zone
//! name (`"America/New_York"`) read from the host's zoneinfo as Go's
//! `time.LoadLocation` reads it (see `tz/`).

use std::fmt::Write as _;

use super::civil::{civil_from_days, days_from_civil, days_in_month};

const NANOS: i128 = 1_000_000_000;
/// Seconds from the epoch to 0001-01-01T00:00:00Z and to 9999-12-31T23:59:59Z.
const MIN_SECS: i128 = -62_135_596_800;
const MAX_SECS: i128 = 253_402_300_799;

/// Checks a timestamp (nanoseconds since the epoch) against CEL's range.
pub(crate) fn check_timestamp(nanos: i128) -> Result<i128, String> {
    let secs = nanos.div_euclid(NANOS);
    if (MIN_SECS..=MAX_SECS).contains(&secs) { Ok(nanos) } else { Err("timestamp out of range".to_owned()) }
}

fn digits(s: &[u8], at: usize, n: usize) -> Option<u32> {
    let part = s.get(at..at + n)?;
    if !part.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(part.iter().fold(0u32, |acc, d| acc * 10 + u32::from(d - b'0')))
}

/// `timestamp(s)`: `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`.
pub(crate) fn parse_timestamp(s: &str) -> Result<i128, String> {
    let bad = || format!("parsing time {s:?} as RFC 3339 timestamp failed");
    let b = s.as_bytes();
    let field = |at: usize, n: usize| digits(b, at, n).ok_or_else(bad);
    let sep = |at: usize, c: u8| if b.get(at) == Some(&c) { Ok(()) } else { Err(bad()) };
    let year = i64::from(field(0, 4)?);
    sep(4, b'-')?;
    let month = field(5, 2)?;
    sep(7, b'-')?;
    let day = field(8, 2)?;
    sep(10, b'T')?;
    let hour = field(11, 2)?;
    sep(13, b':')?;
    let minute = field(14, 2)?;
    sep(16, b':')?;
    let second = field(17, 2)?;
    let mut i = 19;
    let mut frac: i128 = 0;
    if b.get(i) == Some(&b'.') {
        let start = i + 1;
        let mut end = start;
        while b.get(end).is_some_and(u8::is_ascii_digit) {
            end += 1;
        }
        if end == start || end - start > 9 {
            return Err(bad());
        }
        let v = digits(b, start, end - start).ok_or_else(bad)?;
        frac = i128::from(v) * 10i128.pow(9 - (end - start) as u32);
        i = end;
    }
    let offset_secs: i128 = match b.get(i) {
        Some(b'Z') if i + 1 == b.len() => 0,
        Some(&sign @ (b'+' | b'-')) if i + 6 == b.len() => {
            let h = field(i + 1, 2)?;
            sep(i + 3, b':')?;
            let m = field(i + 4, 2)?;
            if h > 23 || m > 59 {
                return Err(bad());
            }
            let o = i128::from(h * 3600 + m * 60);
            if sign == b'-' { -o } else { o }
        }
        _ => return Err(bad()),
    };
    if !(1..=12).contains(&month)
        || day == 0
        || day > days_in_month(year, month)
        || hour > 23
        || minute > 59
        || second > 59
    {
        return Err(bad());
    }
    let days = i128::from(days_from_civil(year, month, day));
    let secs = days * 86_400 + i128::from(hour * 3600 + minute * 60 + second) - offset_secs;
    check_timestamp(secs * NANOS + frac)
}

/// `string(timestamp)`: RFC 3339 in UTC with the fraction's trailing zeros removed
/// (Go's `RFC3339Nano`).
pub(crate) fn format_timestamp(nanos: i128) -> String {
    let secs = nanos.div_euclid(NANOS);
    let frac = nanos.rem_euclid(NANOS);
    let days = secs.div_euclid(86_400) as i64;
    let sod = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    let mut out = format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}", sod / 3600, sod % 3600 / 60, sod % 60);
    if frac != 0 {
        let f = format!("{frac:09}");
        let _ = write!(out, ".{}", f.trim_end_matches('0'));
    }
    out.push('Z');
    out
}

/// `duration(s)`, as Go's `time.ParseDuration`: an optional sign, then one or more
/// decimal numbers (with an optional fraction) each with a unit `ns`, `us` (`µs`,
/// `μs`), `ms`, `s`, `m` or `h`; `"0"` alone needs no unit.
pub(crate) fn parse_duration(s: &str) -> Result<i64, String> {
    let bad = || format!("time: invalid duration {s:?}");
    let (neg, mut rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if rest == "0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return Err(bad());
    }
    let mut total: i128 = 0;
    while !rest.is_empty() {
        let int_len = rest.bytes().take_while(u8::is_ascii_digit).count();
        let int_part = &rest[..int_len];
        rest = &rest[int_len..];
        let mut frac_part = "";
        if rest.starts_with('.') {
            let n = rest[1..].bytes().take_while(u8::is_ascii_digit).count();
            frac_part = &rest[1..=n];
            rest = &rest[1 + n..];
        }
        if int_part.is_empty() && frac_part.is_empty() {
            return Err(bad());
        }
        let unit_len = rest.find(|c: char| c == '.' || c.is_ascii_digit()).unwrap_or(rest.len());
        let unit: i128 = match &rest[..unit_len] {
            "ns" => 1,
            "us" | "\u{b5}s" | "\u{3bc}s" => 1_000,
            "ms" => 1_000_000,
            "s" => NANOS,
            "m" => 60 * NANOS,
            "h" => 3600 * NANOS,
            "" => return Err(format!("time: missing unit in duration {s:?}")),
            u => return Err(format!("time: unknown unit {u:?} in duration {s:?}")),
        };
        rest = &rest[unit_len..];
        let whole: i128 = if int_part.is_empty() { 0 } else { int_part.parse().map_err(|_| bad())? };
        let mut v = whole.checked_mul(unit).ok_or_else(bad)?;
        if !frac_part.is_empty() {
            // Go scales the fraction to the unit, truncating below a nanosecond.
            // 20 digits are far below a nanosecond of any unit, and keep the product
            // below i128's range.
            let digits = &frac_part[..frac_part.len().min(20)];
            let f: i128 = digits.parse().map_err(|_| bad())?;
            v += f * unit / 10i128.pow(digits.len() as u32);
        }
        total = total.checked_add(v).ok_or_else(bad)?;
        if total > i128::from(i64::MAX) + 1 {
            return Err(bad());
        }
    }
    let total = if neg { -total } else { total };
    i64::try_from(total).map_err(|_| bad())
}

/// `string(duration)`: seconds with the shortest decimal form, then `s` (cel-go
/// formats `Duration.Seconds()` with `'f', -1`).
pub(crate) fn format_duration(nanos: i64) -> String {
    let secs = nanos as f64 / 1e9;
    format!("{secs}s")
}

/// A time zone argument at the instant `nanos`, as seconds east of UTC: `"UTC"` or
/// `""`, a fixed offset `±H[H]:MM` (any argument with a `:`, as cel-go), `"Local"`
/// (the process's zone, Go's `time.Local`), or an IANA name read from the host's
/// zoneinfo (Go's `time.LoadLocation`; see [`super::tz`]).
pub(crate) fn zone_offset(tz: &str, nanos: i128) -> Result<i128, String> {
    match tz.split_once(':') {
        None if tz.is_empty() || tz == "UTC" => Ok(0),
        None => {
            let zone =
                if tz == "Local" { super::tz::local() } else { super::tz::zone(tz).map_err(|e| e.to_string())? };
            // CEL's range keeps the seconds well inside i64.
            let secs = nanos.div_euclid(NANOS).clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64;
            Ok(i128::from(zone.offset_at(secs)))
        }
        Some((h, m)) => {
            // Go's `strconv.Atoi`: 64-bit, so the arithmetic below cannot overflow.
            let atoi = |t: &str| {
                t.parse::<i64>().map(i128::from).map_err(|_| format!("strconv.Atoi: parsing {t:?}: invalid syntax"))
            };
            let (hours, minutes) = (atoi(h)?, atoi(m)?);
            let offset = if h.starts_with('-') { hours * 60 - minutes } else { hours * 60 + minutes };
            Ok(offset * 60)
        }
    }
}

/// A calendar field of a timestamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Field {
    FullYear,
    /// 0-11
    Month,
    /// 0-365
    DayOfYear,
    /// 0-30
    DayOfMonth,
    /// 1-31
    Date,
    /// 0 (Sunday) - 6
    DayOfWeek,
    Hours,
    Minutes,
    Seconds,
    Milliseconds,
}

/// The field of the timestamp in a zone `offset` seconds east of UTC.
pub(crate) fn timestamp_field(nanos: i128, offset: i128, field: Field) -> i64 {
    let local = nanos + offset * NANOS;
    let secs = local.div_euclid(NANOS);
    let days = secs.div_euclid(86_400) as i64;
    let sod = secs.rem_euclid(86_400) as i64;
    let (y, m, d) = civil_from_days(days);
    match field {
        Field::FullYear => y,
        Field::Month => i64::from(m) - 1,
        Field::DayOfYear => days - days_from_civil(y, 1, 1),
        Field::DayOfMonth => i64::from(d) - 1,
        Field::Date => i64::from(d),
        // 1970-01-01 was a Thursday.
        Field::DayOfWeek => (days + 4).rem_euclid(7),
        Field::Hours => sod / 3600,
        Field::Minutes => sod % 3600 / 60,
        Field::Seconds => sod % 60,
        Field::Milliseconds => (local.rem_euclid(NANOS) / 1_000_000) as i64,
    }
}

/// A duration's total hours, minutes, seconds or milliseconds (truncated).
pub(crate) fn duration_field(nanos: i64, field: Field) -> Option<i64> {
    Some(match field {
        Field::Hours => nanos / 3_600_000_000_000,
        Field::Minutes => nanos / 60_000_000_000,
        Field::Seconds => nanos / 1_000_000_000,
        Field::Milliseconds => nanos / 1_000_000,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_and_durations_round_trip() {
        let t = parse_timestamp("2023-02-03T23:31:20+00:00").unwrap();
        assert_eq!(format_timestamp(t), "2023-02-03T23:31:20Z");
        assert_eq!(format_timestamp(parse_timestamp("0001-01-01T00:00:00.5Z").unwrap()), "0001-01-01T00:00:00.5Z");
        assert!(parse_timestamp("2023-02-29T00:00:00Z").is_err());
        assert!(parse_timestamp("2023-02-03 23:31:20Z").is_err());
        assert_eq!(parse_duration("1h45m47s"), Ok(6347 * 1_000_000_000));
        assert_eq!(format_duration(parse_duration("1h45m47s").unwrap()), "6347s");
        assert_eq!(format_duration(parse_duration("2ns").unwrap()), "0.000000002s");
        assert_eq!(parse_duration("1.5h"), Ok(5400 * 1_000_000_000));
        assert_eq!(parse_duration("-1m"), Ok(-60_000_000_000));
        assert!(parse_duration("1").is_err());
        assert!(parse_duration("1d").is_err());
        assert!(parse_duration("3000000h").is_err());
        assert_eq!(parse_duration("1.000000000000000000000000000000000001h"), Ok(3600 * 1_000_000_000));
        assert!(zone_offset("99999999999999999999:00", 0).is_err());
        let far = zone_offset("9223372036854775807:9223372036854775807", 0).unwrap();
        let _ = timestamp_field(0, far, Field::DayOfYear);
    }
}
