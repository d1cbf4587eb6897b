//! Timestamps as the API server writes them (`metav1.Time`: an RFC 3339 string such
//! as `2024-12-09T16:17:09Z`), read into the seconds since the Unix epoch the model
//! keeps; a plain number of seconds is accepted too.

use serde::{Deserialize, Deserializer};

#[derive(Deserialize)]
#[serde(untagged)]
enum Raw {
    Seconds(f64),
    Text(String),
}

/// An RFC 3339 timestamp as seconds since the Unix epoch (fractions kept).
///
/// ```
/// use schedkit::model::parse_rfc3339;
/// assert_eq!(parse_rfc3339("1970-01-01T00:01:00Z"), Ok(60.0));
/// assert_eq!(parse_rfc3339("2024-12-09T16:17:09Z"), Ok(1_733_761_029.0));
/// assert_eq!(parse_rfc3339("2024-12-09T17:17:09.5+01:00"), Ok(1_733_761_029.5));
/// assert!(parse_rfc3339("yesterday").is_err());
/// ```
pub fn parse_rfc3339(text: &str) -> Result<f64, String> {
    let nanos = crate::selector::parse_timestamp(text)?;
    Ok((nanos / 1_000_000_000) as f64 + (nanos % 1_000_000_000) as f64 / 1e9)
}

/// `secs` since the Unix epoch as RFC 3339 UTC text (`2026-04-22T10:00:00Z`), as the
/// API server writes condition times.
pub(crate) fn format_rfc3339(secs: u64) -> String {
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    let rem = secs % 86_400;
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// The proleptic Gregorian (year, month, day) of `days` since 1970-01-01 (H. Hinnant's
/// `civil_from_days`).
pub(crate) fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// serde `deserialize_with` for an optional timestamp: RFC 3339 text, seconds, or null.
pub(crate) fn deserialize_opt<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    match Option::<Raw>::deserialize(d)? {
        None => Ok(None),
        Some(Raw::Seconds(s)) => Ok(Some(s)),
        Some(Raw::Text(t)) => parse_rfc3339(&t).map(Some).map_err(serde::de::Error::custom),
    }
}

#[cfg(test)]
mod tests {
    use super::{format_rfc3339, parse_rfc3339};

    #[test]
    fn formats_what_it_parses() {
        for text in ["1970-01-01T00:00:00Z", "2024-12-09T16:17:09Z", "2000-02-29T23:59:59Z", "2026-04-22T10:00:00Z"] {
            let secs = parse_rfc3339(text).unwrap() as u64;
            assert_eq!(format_rfc3339(secs), text);
        }
    }

    #[test]
    fn object_meta_reads_api_server_timestamps() {
        let m: crate::model::ObjectMeta =
            serde_json::from_str(r#"{"name":"n","creationTimestamp":"2024-12-09T16:17:09Z","deletionTimestamp":null}"#)
                .unwrap();
        assert_eq!(m.creation_timestamp, Some(1_733_761_029.0));
        assert_eq!(m.deletion_timestamp, None);
        let m: crate::model::ObjectMeta = serde_json::from_str(r#"{"creationTimestamp": 12.5}"#).unwrap();
        assert_eq!(m.creation_timestamp, Some(12.5));
        let err = serde_json::from_str::<crate::model::ObjectMeta>(r#"{"creationTimestamp":"Monday"}"#).unwrap_err();
        assert!(err.to_string().contains("RFC 3339"), "{err}");
    }
}
