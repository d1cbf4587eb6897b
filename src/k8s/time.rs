//! schedkit's timestamps (seconds since the Unix epoch) written back as the API
//! server's RFC 3339 text.

use serde_json::Value;

/// Replaces a number of seconds with RFC 3339 text in UTC (`2024-12-09T16:17:09Z`),
/// fractions kept to the microsecond (`metav1.MicroTime`'s precision; `metav1.Time`
/// values are whole seconds and stay so). Leaves anything else alone.
pub(super) fn seconds_to_rfc3339(value: Option<&mut Value>) {
    let Some(v) = value else { return };
    let Some(secs) = v.as_f64() else { return };
    if !secs.is_finite() {
        return;
    }
    let micros = (secs * 1e6).round() as i128;
    *v = Value::String(crate::selector::format_timestamp(micros * 1000));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_become_rfc3339_and_parse_back() {
        for (secs, text) in [
            (1_733_761_029.0, "2024-12-09T16:17:09Z"),
            (1_733_761_029.5, "2024-12-09T16:17:09.5Z"),
            (0.0, "1970-01-01T00:00:00Z"),
            (-1.0, "1969-12-31T23:59:59Z"),
        ] {
            let mut v = Value::from(secs);
            seconds_to_rfc3339(Some(&mut v));
            assert_eq!(v, Value::String(text.to_owned()));
            assert_eq!(crate::model::parse_rfc3339(text), Ok(secs));
        }
        let mut v = Value::String("2024-12-09T16:17:09Z".into());
        seconds_to_rfc3339(Some(&mut v));
        assert_eq!(v, "2024-12-09T16:17:09Z");
    }
}
