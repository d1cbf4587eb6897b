//! The Kubernetes format library (`k8s.io/apiserver/pkg/cel/library/format.go`, in the
//! base environment since 1.31): `format.named(name)`, one constant function per named
//! format (`format.dns1123Label()`, ...), and `<Format>.validate(string)`, which returns
//! `optional.none()` for a valid string and otherwise the list of upstream's error
//! messages.
//!
//! The checks and their messages are upstream's:
//!
//! - `dns1123Label`, `dns1123Subdomain`, `dns1035Label` and their `...Prefix` forms:
//!   `IsDNS1123Label`, `IsDNS1123Subdomain`, `IsDNS1035Label` of
//!   `k8s.io/apimachinery/pkg/util/validation/validation.go` (maximum lengths 63, 253
//!   and 63, "must be no more than N characters"), called through
//!   `k8s.io/apimachinery/pkg/api/validation/generic.go` `NameIsDNSLabel` & co., whose
//!   prefix mode masks a trailing dash as `maskTrailingDash` does (the last **two**
//!   bytes become `a`, as upstream);
//! - `qualifiedName` and `labelValue`: `IsLabelKey` and `IsLabelValue` of
//!   `k8s.io/apimachinery/pkg/api/validate/content/kube.go` (which `validation.go` now
//!   forwards to), whose length messages say "bytes";
//! - `uri`: Go's `url.ParseRequestURI`, the error text being Go's `*url.Error`
//!   (`parse "<input>": <reason>`);
//! - `uuid`, `byte`, `date`, `datetime`: kube-openapi `pkg/validation/strfmt`
//!   (`UUIDPattern`, govalidator's `Base64` pattern, `time.Parse("2006-01-02")`, and
//!   `IsDateTime`), with the fixed messages of `format.go`.
//!
//! Every check is written by hand over bytes (no regex engine, no allocation on
//! success) and cannot panic on any input.

use super::text::go_quote;

/// A named format (`kubernetes.NamedFormat`): a constant of `format.go`'s
/// `ConstantFormats`, compared by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NamedFormat {
    Dns1123Label,
    Dns1123Subdomain,
    Dns1035Label,
    QualifiedName,
    Dns1123LabelPrefix,
    Dns1123SubdomainPrefix,
    Dns1035LabelPrefix,
    LabelValue,
    Uri,
    Uuid,
    Byte,
    Date,
    Datetime,
}

/// The formats with their CEL names and the names of their constant functions.
const ALL: [(NamedFormat, &str, &str); 13] = [
    (NamedFormat::Dns1123Label, "dns1123Label", "format.dns1123Label"),
    (NamedFormat::Dns1123Subdomain, "dns1123Subdomain", "format.dns1123Subdomain"),
    (NamedFormat::Dns1035Label, "dns1035Label", "format.dns1035Label"),
    (NamedFormat::QualifiedName, "qualifiedName", "format.qualifiedName"),
    (NamedFormat::Dns1123LabelPrefix, "dns1123LabelPrefix", "format.dns1123LabelPrefix"),
    (NamedFormat::Dns1123SubdomainPrefix, "dns1123SubdomainPrefix", "format.dns1123SubdomainPrefix"),
    (NamedFormat::Dns1035LabelPrefix, "dns1035LabelPrefix", "format.dns1035LabelPrefix"),
    (NamedFormat::LabelValue, "labelValue", "format.labelValue"),
    (NamedFormat::Uri, "uri", "format.uri"),
    (NamedFormat::Uuid, "uuid", "format.uuid"),
    (NamedFormat::Byte, "byte", "format.byte"),
    (NamedFormat::Date, "date", "format.date"),
    (NamedFormat::Datetime, "datetime", "format.datetime"),
];

/// `cel.MaxNameFormatRegexSize` (`k8s.io/apiserver/pkg/cel/limits.go`): the regex size
/// the cost estimator assumes for every format.
pub(crate) const MAX_NAME_FORMAT_REGEX_SIZE: u64 = 128;

/// `cel.MaxFormatSize` (`limits.go`): the longest format name, which prices `==` between
/// two formats.
pub(crate) const MAX_FORMAT_SIZE: u64 = 64;

impl NamedFormat {
    /// `format.named(name)`: the format of that name, if any.
    pub(crate) fn named(name: &str) -> Option<NamedFormat> {
        ALL.iter().find(|(_, n, _)| *n == name).map(|(f, _, _)| *f)
    }

    /// The format whose constant function is `function` (`format.dns1123Label`).
    pub(crate) fn by_function(function: &str) -> Option<NamedFormat> {
        ALL.iter().find(|(_, _, n)| *n == function).map(|(f, _, _)| *f)
    }

    /// The name of the constant function (`format.dns1123Label`).
    pub(crate) fn function_name(self) -> &'static str {
        ALL.iter().find(|(f, _, _)| *f == self).map_or("format.named", |(_, _, n)| n)
    }

    /// `<Format>.validate(s)`: the error messages, empty when `s` is valid.
    pub(crate) fn validate(self, s: &str) -> Vec<String> {
        let b = s.as_bytes();
        match self {
            NamedFormat::Dns1123Label => dns1123_label(b),
            NamedFormat::Dns1123Subdomain => dns1123_subdomain(b, "characters"),
            NamedFormat::Dns1035Label => dns1035_label(b),
            NamedFormat::QualifiedName => label_key(b),
            NamedFormat::Dns1123LabelPrefix => dns1123_label(&mask_trailing_dash(b)),
            NamedFormat::Dns1123SubdomainPrefix => dns1123_subdomain(&mask_trailing_dash(b), "characters"),
            NamedFormat::Dns1035LabelPrefix => dns1035_label(&mask_trailing_dash(b)),
            NamedFormat::LabelValue => label_value(b),
            NamedFormat::Uri => super::url::request_uri_error(s)
                .map(|e| vec![format!("parse {}: {e}", go_quote(s))])
                .unwrap_or_default(),
            NamedFormat::Uuid => fixed(is_uuid(b), "does not match the UUID format"),
            NamedFormat::Byte => fixed(is_base64(b), "invalid base64"),
            NamedFormat::Date => fixed(is_date(b), "invalid date"),
            NamedFormat::Datetime => fixed(is_datetime(s), "invalid datetime"),
        }
    }
}

fn fixed(ok: bool, message: &str) -> Vec<String> {
    if ok { Vec::new() } else { vec![message.to_owned()] }
}

// Regexes of validation.go and content/kube.go, quoted in the messages.
const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const DNS1035_LABEL_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
const LABEL_KEY_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_KEY_MSG: &str =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

/// `RegexError(msg, fmt, examples...)` of validation.go / content/errors.go (the double
/// space before `or` is upstream's).
fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    let mut out = String::from(msg);
    out.push_str(" (e.g. ");
    for (i, e) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push('\'');
        out.push_str(e);
        out.push_str("', ");
    }
    out.push_str("regex used for validation is '");
    out.push_str(fmt);
    out.push_str("')");
    out
}

/// `maskTrailingDash` (`k8s.io/apimachinery/pkg/api/validation/generic.go`): a name of
/// two or more bytes ending in `-` loses its last two bytes and gains an `a`.
fn mask_trailing_dash(b: &[u8]) -> Vec<u8> {
    if b.len() > 1 && b.ends_with(b"-") {
        let mut v = b[..b.len() - 2].to_vec();
        v.push(b'a');
        v
    } else {
        b.to_vec()
    }
}

fn lower_alnum(c: u8) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

/// `^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`, or with a leading `[a-z]` for DNS-1035.
fn is_label(b: &[u8], first: fn(u8) -> bool) -> bool {
    match (b.first(), b.last()) {
        (Some(&f), Some(&l)) => first(f) && lower_alnum(l) && b.iter().all(|&c| lower_alnum(c) || c == b'-'),
        _ => false,
    }
}

fn is_subdomain(b: &[u8]) -> bool {
    b.split(|&c| c == b'.').all(|l| is_label(l, lower_alnum))
}

fn dns1123_label(b: &[u8]) -> Vec<String> {
    let mut errs = Vec::new();
    if b.len() > 63 {
        errs.push("must be no more than 63 characters".to_owned());
    }
    if !is_label(b, lower_alnum) {
        if is_subdomain(b) {
            errs.push("must not contain dots".to_owned());
        } else {
            errs.push(regex_error(DNS1123_LABEL_MSG, DNS1123_LABEL_FMT, &["my-name", "123-abc"]));
        }
    }
    errs
}

/// `IsDNS1123Subdomain`; `unit` is "characters" (validation.go) or "bytes"
/// (content/dns.go, used by the qualified-name prefix).
fn dns1123_subdomain(b: &[u8], unit: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if b.len() > 253 {
        errs.push(format!("must be no more than 253 {unit}"));
    }
    if !is_subdomain(b) {
        errs.push(regex_error(DNS1123_SUBDOMAIN_MSG, DNS1123_SUBDOMAIN_FMT, &["example.com"]));
    }
    errs
}

fn dns1035_label(b: &[u8]) -> Vec<String> {
    let mut errs = Vec::new();
    if b.len() > 63 {
        errs.push("must be no more than 63 characters".to_owned());
    }
    if !is_label(b, |c| c.is_ascii_lowercase()) {
        errs.push(regex_error(DNS1035_LABEL_MSG, DNS1035_LABEL_FMT, &["my-name", "abc-123"]));
    }
    errs
}

/// `^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`
fn is_label_key_name(b: &[u8]) -> bool {
    match (b.first(), b.last()) {
        (Some(f), Some(l)) => {
            f.is_ascii_alphanumeric()
                && l.is_ascii_alphanumeric()
                && b.iter().all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// `content.IsLabelKey` (what `validation.IsQualifiedName` is).
fn label_key(b: &[u8]) -> Vec<String> {
    let examples = ["MyName", "my.name", "123-abc"];
    let mut errs = Vec::new();
    let parts: Vec<&[u8]> = b.split(|&c| c == b'/').collect();
    let name = match parts[..] {
        [name] => name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_owned());
            } else {
                errs.extend(dns1123_subdomain(prefix, "bytes").into_iter().map(|m| format!("prefix part {m}")));
            }
            name
        }
        _ => {
            errs.push(format!(
                "a valid label key {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(LABEL_KEY_MSG, LABEL_KEY_FMT, &examples)
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_owned());
    } else if name.len() > 63 {
        errs.push("name part must be no more than 63 bytes".to_owned());
    }
    if !is_label_key_name(name) {
        errs.push(format!("name part {}", regex_error(LABEL_KEY_MSG, LABEL_KEY_FMT, &examples)));
    }
    errs
}

/// `content.IsLabelValue`.
fn label_value(b: &[u8]) -> Vec<String> {
    let mut errs = Vec::new();
    if b.len() > 63 {
        errs.push("must be no more than 63 bytes".to_owned());
    }
    if !b.is_empty() && !is_label_key_name(b) {
        errs.push(regex_error(LABEL_VALUE_MSG, LABEL_VALUE_FMT, &["MyValue", "my_value", "12345"]));
    }
    errs
}

/// strfmt `UUIDPattern`: `(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$`.
fn is_uuid(b: &[u8]) -> bool {
    let mut i = 0;
    for (k, n) in [8usize, 4, 4, 4, 12].into_iter().enumerate() {
        if k > 0 && b.get(i) == Some(&b'-') {
            i += 1;
        }
        let Some(group) = b.get(i..i + n) else { return false };
        if !group.iter().all(u8::is_ascii_hexdigit) {
            return false;
        }
        i += n;
    }
    i == b.len()
}

/// govalidator `Base64`:
/// `^(?:[A-Za-z0-9+\/]{4})*(?:[A-Za-z0-9+\/]{2}==|[A-Za-z0-9+\/]{3}=|[A-Za-z0-9+\/]{4})$`
/// (so the empty string is not base64).
fn is_base64(b: &[u8]) -> bool {
    let alpha = |c: &u8| c.is_ascii_alphanumeric() || *c == b'+' || *c == b'/';
    if b.is_empty() || !b.len().is_multiple_of(4) {
        return false;
    }
    let (body, last) = b.split_at(b.len() - 4);
    body.iter().all(alpha)
        && match last {
            [x, y, b'=', b'='] => alpha(x) && alpha(y),
            [x, y, z, b'='] => alpha(x) && alpha(y) && alpha(z),
            _ => last.iter().all(alpha),
        }
}

/// strfmt `IsDate`: Go's `time.Parse("2006-01-02", s)`: four-digit year, two-digit
/// month 01-12 and a day within the month, nothing after.
fn is_date(b: &[u8]) -> bool {
    let [y0, y1, y2, y3, b'-', m0, m1, b'-', d0, d1] = *b else { return false };
    let digits = |s: &[u8]| s.iter().all(u8::is_ascii_digit);
    let year_bytes = [y0, y1, y2, y3];
    if !digits(&year_bytes) {
        return false;
    }
    let year = year_bytes.iter().fold(0u32, |a, &c| a * 10 + u32::from(c - b'0'));
    if !digits(&[m0, m1, d0, d1]) {
        return false;
    }
    let month = (m0 - b'0') * 10 + (m1 - b'0');
    let day = (d0 - b'0') * 10 + (d1 - b'0');
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

/// strfmt `IsDateTime`: at least four bytes; split at every `t` (after lowercasing);
/// the first piece a date, the second matching
/// `^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$` with hours
/// at most 23 and minutes and seconds at most 59. Pieces after the second are ignored,
/// as upstream.
fn is_datetime(s: &str) -> bool {
    if s.len() < 4 {
        return false;
    }
    let lower = s.to_ascii_lowercase();
    let mut parts = lower.split('t');
    let (Some(date), Some(time)) = (parts.next(), parts.next()) else { return false };
    is_date(date.as_bytes()) && is_time_of_day(time)
}

fn is_time_of_day(t: &str) -> bool {
    let b = t.as_bytes();
    let two = |i: usize| match b.get(i..i + 2) {
        Some([a, c]) if a.is_ascii_digit() && c.is_ascii_digit() => Some((a - b'0') * 10 + (c - b'0')),
        _ => None,
    };
    let (Some(h), Some(m), Some(sec)) = (two(0), two(3), two(6)) else { return false };
    if b.get(2) != Some(&b':') || b.get(5) != Some(&b':') || h > 23 || m > 59 || sec > 59 {
        return false;
    }
    let rest = &t[8..];
    let zone_ok = |z: &str| {
        let zb = z.as_bytes();
        z == "z"
            || (zb.len() == 6
                && matches!(zb[0], b'+' | b'-')
                && zb[1].is_ascii_digit()
                && zb[2].is_ascii_digit()
                && zb[3] == b':'
                && zb[4].is_ascii_digit()
                && zb[5].is_ascii_digit())
    };
    if zone_ok(rest) {
        return true;
    }
    // `(.[0-9]+)?`: any one character but a newline, then digits, then the zone.
    let mut chars = rest.chars();
    match chars.next() {
        Some(c) if c != '\n' => {}
        _ => return false,
    }
    let after = chars.as_str();
    let digits = after.bytes().take_while(u8::is_ascii_digit).count();
    // The zone cannot start with a digit, so the digit run is the whole fraction.
    digits > 0 && zone_ok(&after[digits..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_and_times() {
        assert!(is_date(b"2020-02-29"));
        assert!(!is_date(b"2021-02-29"));
        assert!(!is_date(b"2020-01-32"));
        assert!(!is_date(b"2020-13-01"));
        assert!(!is_date(b"2020-1-01"));
        assert!(!is_date(b"+999-01-01"));
        assert!(is_datetime("2020-01-01T00:00:00Z"));
        assert!(is_datetime("2020-01-01t23:59:59.123+05:30"));
        assert!(!is_datetime("2020-01-01T00:00:00xx9Z"));
        assert!(is_datetime("2020-01-01T00:00:00é9z"));
        assert!(!is_datetime("2020-01-01T24:00:00Z"));
        assert!(!is_datetime("2020-01-01"));
        assert!(!is_datetime("2020-01-32T00:00:00Z"));
    }

    #[test]
    fn uuid_and_base64() {
        assert!(is_uuid(b"123e4567-e89b-12d3-a456-426614174000"));
        assert!(is_uuid(b"123E4567E89B12D3A456426614174000"));
        assert!(!is_uuid(b"123e4567-e89b-12d3-a456-42661417400"));
        assert!(!is_uuid(b"123e4567--e89b-12d3-a456-426614174000"));
        assert!(is_base64(b"aGVsbG8="));
        assert!(is_base64(b"aGk="));
        assert!(!is_base64(b"aGVsbG8"));
        assert!(!is_base64(b""));
        assert!(!is_base64(b"a=b="));
    }

    #[test]
    fn prefix_masking_never_splits_a_char_into_a_panic() {
        for s in ["é-", "-", "a-", "ab-", "\u{10000}-"] {
            let _ = NamedFormat::Dns1123LabelPrefix.validate(s);
        }
        assert!(NamedFormat::Dns1123LabelPrefix.validate("my-label-prefix-").is_empty());
    }
}
