//! The API server's field errors and name formats, for validating loaded objects as
//! `k8s.io/apimachinery` does: [`FieldError`] (a field path and what is wrong with it,
//! worded as `field.Error`), the RFC 1123 label and subdomain formats, C identifiers and
//! label keys and values (`pkg/util/validation`, `pkg/apis/meta/v1/validation`).

use std::fmt;

/// One problem with one field, as upstream's `field.Error`: the path of the field
/// (`spec.devices[3].name`) and what is wrong. Displays as upstream's `Error()`, e.g.
/// `spec.devices: Too many: 129: must have at most 128 items`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// The field path, as upstream writes it.
    pub path: String,
    /// What is wrong.
    pub kind: FieldErrorKind,
}

/// What is wrong with a field: upstream's `field.ErrorType`, with the limit where one
/// applies.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FieldErrorKind {
    /// A list or map has more entries than its limit (`field.TooMany`).
    TooMany {
        /// Entries present.
        found: usize,
        /// The limit.
        limit: usize,
    },
    /// A string is longer than its limit in bytes (`field.TooLong`).
    TooLong {
        /// The limit.
        limit: usize,
    },
    /// A required value is missing (`field.Required`), with upstream's detail if any.
    Required {
        /// Upstream's detail (may be empty).
        detail: String,
    },
    /// A value is malformed (`field.Invalid`).
    Invalid {
        /// The value, formatted as upstream prints it (strings quoted).
        value: String,
        /// Why.
        detail: String,
    },
    /// A value appears twice in a set (`field.Duplicate`).
    Duplicate {
        /// The value, formatted as upstream prints it.
        value: String,
    },
    /// A value is not allowed here (`field.Forbidden`).
    Forbidden {
        /// Why.
        detail: String,
    },
}

impl FieldError {
    /// A list at `path` with `found` entries where `limit` are allowed.
    pub fn too_many(path: impl Into<String>, found: usize, limit: usize) -> FieldError {
        FieldError { path: path.into(), kind: FieldErrorKind::TooMany { found, limit } }
    }

    /// A string at `path` longer than `limit` bytes.
    pub fn too_long(path: impl Into<String>, limit: usize) -> FieldError {
        FieldError { path: path.into(), kind: FieldErrorKind::TooLong { limit } }
    }

    /// A missing value at `path`.
    pub fn required(path: impl Into<String>, detail: &str) -> FieldError {
        FieldError { path: path.into(), kind: FieldErrorKind::Required { detail: detail.to_owned() } }
    }

    /// A malformed string value at `path` (printed quoted, as upstream does).
    pub fn invalid(path: impl Into<String>, value: &str, detail: impl Into<String>) -> FieldError {
        FieldError {
            path: path.into(),
            kind: FieldErrorKind::Invalid { value: format!("{value:?}"), detail: detail.into() },
        }
    }

    /// A malformed number at `path`.
    pub fn invalid_number(path: impl Into<String>, value: i64, detail: impl Into<String>) -> FieldError {
        FieldError {
            path: path.into(),
            kind: FieldErrorKind::Invalid { value: value.to_string(), detail: detail.into() },
        }
    }

    /// A repeated string in a set at `path`.
    pub fn duplicate(path: impl Into<String>, value: &str) -> FieldError {
        FieldError { path: path.into(), kind: FieldErrorKind::Duplicate { value: format!("{value:?}") } }
    }

    /// A value not allowed at `path`.
    pub fn forbidden(path: impl Into<String>, detail: impl Into<String>) -> FieldError {
        FieldError { path: path.into(), kind: FieldErrorKind::Forbidden { detail: detail.into() } }
    }
}

impl fmt::Display for FieldErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FieldErrorKind::TooMany { found, limit } => write!(f, "Too many: {found}: must have at most {limit} items"),
            FieldErrorKind::TooLong { limit } => write!(f, "Too long: may not be more than {limit} bytes"),
            FieldErrorKind::Required { detail } if detail.is_empty() => f.write_str("Required value"),
            FieldErrorKind::Required { detail } => write!(f, "Required value: {detail}"),
            FieldErrorKind::Invalid { value, detail } => write!(f, "Invalid value: {value}: {detail}"),
            FieldErrorKind::Duplicate { value } => write!(f, "Duplicate value: {value}"),
            FieldErrorKind::Forbidden { detail } => write!(f, "Forbidden: {detail}"),
        }
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.kind)
    }
}

impl std::error::Error for FieldError {}

/// Longest RFC 1123 label (`validation.DNS1123LabelMaxLength`).
pub const DNS1123_LABEL_MAX_LENGTH: usize = 63;
/// Longest RFC 1123 subdomain (`validation.DNS1123SubdomainMaxLength`).
pub const DNS1123_SUBDOMAIN_MAX_LENGTH: usize = 253;
/// Longest label value and label key name part (`validation.LabelValueMaxLength`,
/// `qualifiedNameMaxLength`).
pub const LABEL_VALUE_MAX_LENGTH: usize = 63;

const DNS1123_LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const C_IDENTIFIER_MSG: &str = "a valid C identifier must start with alphabetic character or '_', followed by a string of alphanumeric characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName', regex used for validation is '[A-Za-z_][A-Za-z0-9_]*')";
const QUALIFIED_NAME_MSG: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

fn max_len_msg(limit: usize) -> String {
    format!("must be no more than {limit} characters")
}

fn is_label_body(b: &[u8]) -> bool {
    let lower_alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    !b.is_empty()
        && lower_alnum(&b[0])
        && lower_alnum(&b[b.len() - 1])
        && b.iter().all(|c| lower_alnum(c) || *c == b'-')
}

/// The problems upstream's `IsDNS1123Label` reports, in its order (empty when valid).
pub fn dns1123_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_LABEL_MAX_LENGTH {
        errs.push(max_len_msg(DNS1123_LABEL_MAX_LENGTH));
    }
    if !is_label_body(value.as_bytes()) {
        errs.push(DNS1123_LABEL_MSG.to_owned());
    }
    errs
}

/// The problems upstream's `IsDNS1123Subdomain` reports (empty when valid).
pub fn dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(max_len_msg(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    if !value.split('.').all(|part| is_label_body(part.as_bytes())) {
        errs.push(DNS1123_SUBDOMAIN_MSG.to_owned());
    }
    errs
}

/// Whether `value` is a C identifier (`[A-Za-z_][A-Za-z0-9_]*`).
pub fn is_c_identifier(value: &str) -> bool {
    let b = value.as_bytes();
    !b.is_empty()
        && (b[0].is_ascii_alphabetic() || b[0] == b'_')
        && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_')
}

/// The problem upstream's `IsCIdentifier` reports, if any.
pub fn c_identifier(value: &str) -> Vec<String> {
    if is_c_identifier(value) { Vec::new() } else { vec![C_IDENTIFIER_MSG.to_owned()] }
}

/// The problems upstream's `IsQualifiedName` reports for a label key (`prefix/name`,
/// the prefix an RFC 1123 subdomain, the name at most 63 characters of alphanumerics,
/// `-`, `_`, `.`, alphanumeric at both ends).
pub fn qualified_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_owned());
            } else {
                errs.extend(dns1123_subdomain(prefix).into_iter().map(|m| format!("prefix part {m}")));
            }
            *name
        }
        _ => {
            errs.push(format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                QUALIFIED_NAME_MSG.replacen("name part ", "", 1)
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_owned());
    } else if name.len() > LABEL_VALUE_MAX_LENGTH {
        errs.push(format!("name part {}", max_len_msg(LABEL_VALUE_MAX_LENGTH)));
    }
    if !name.is_empty() && !is_label_value_body(name) {
        errs.push(QUALIFIED_NAME_MSG.to_owned());
    }
    errs
}

fn is_label_value_body(v: &str) -> bool {
    let b = v.as_bytes();
    let inner = |c: &u8| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.');
    !b.is_empty() && b[0].is_ascii_alphanumeric() && b[b.len() - 1].is_ascii_alphanumeric() && b.iter().all(inner)
}

/// The problems upstream's `IsValidLabelValue` reports (empty when valid).
pub fn label_value(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > LABEL_VALUE_MAX_LENGTH {
        errs.push(max_len_msg(LABEL_VALUE_MAX_LENGTH));
    }
    if !value.is_empty() && !is_label_value_body(value) {
        errs.push(LABEL_VALUE_MSG.to_owned());
    }
    errs
}

/// The first problem `check` finds in `value` as a [`FieldError`] at `path`
/// (`field.Invalid` with upstream's message), if any.
pub fn check_format(path: &str, value: &str, check: fn(&str) -> Vec<String>) -> Result<(), FieldError> {
    match check(value).into_iter().next() {
        None => Ok(()),
        Some(msg) => Err(FieldError::invalid(path, value, msg)),
    }
}

/// Upstream's `ValidateLabels` (`pkg/apis/meta/v1/validation`): every key a qualified
/// name, every value a label value. The first problem, at `path[key]`.
pub fn validate_labels<'a>(path: &str, labels: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<(), FieldError> {
    for (k, v) in labels {
        check_format(path, k, qualified_name)?;
        check_format(&format!("{path}[{k}]"), v, label_value)?;
    }
    Ok(())
}

/// The length limits of upstream's `ValidateLabels`, without its character rules: a key's
/// name part at most 63 characters and its prefix at most 253, a value at most 63. What
/// schedkit applies to every pod and node it loads, so an unbounded label vocabulary
/// cannot grow without bound per entry; the character rules are left to callers
/// ([`validate_labels`]) because trace conventions schedkit replays put characters the
/// API server refuses into label values (the FGD traces' `G2|V100M16` GPU model
/// alternatives).
pub fn validate_label_lengths<'a>(
    path: &str,
    labels: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Result<(), FieldError> {
    for (k, v) in labels {
        let (prefix, name) = k.rsplit_once('/').unwrap_or(("", k));
        if prefix.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
            return Err(FieldError::invalid(
                path,
                k,
                format!("prefix part {}", max_len_msg(DNS1123_SUBDOMAIN_MAX_LENGTH)),
            ));
        }
        if name.len() > LABEL_VALUE_MAX_LENGTH {
            return Err(FieldError::invalid(path, k, format!("name part {}", max_len_msg(LABEL_VALUE_MAX_LENGTH))));
        }
        if v.len() > LABEL_VALUE_MAX_LENGTH {
            return Err(FieldError::invalid(format!("{path}[{k}]"), v, max_len_msg(LABEL_VALUE_MAX_LENGTH)));
        }
    }
    Ok(())
}

/// [`validate_label_lengths`] of a model label set at `metadata.labels`, its texts
/// read under one interner lock (cloning each label's shared text would touch counts
/// that every object with the label also touches): the check every pod and node
/// taken by the scheduler goes through.
pub(crate) fn validate_metadata_label_lengths(labels: &crate::model::Labels) -> Result<(), FieldError> {
    crate::model::Symbol::with_texts(|t| {
        validate_label_lengths("metadata.labels", labels.iter().map(|(k, v)| (t.get(k), t.get(v))))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns1123_labels_as_upstream() {
        // k8s.io/apimachinery/pkg/util/validation/validation_test.go TestIsDNS1123Label.
        for good in
            ["a", "ab", "abc", "a1", "a-1", "a--1--2--b", "0", "01", "012", "1a", "1-a", "1--a--b--2", &"a".repeat(63)]
        {
            assert!(dns1123_label(good).is_empty(), "{good}");
        }
        for bad in [
            "",
            "A",
            "ABC",
            "aBc",
            "A1",
            "A-1",
            "1-A",
            "-",
            "a-",
            "-a",
            "1-",
            "-1",
            "_",
            "a_",
            "_a",
            "a_b",
            "1_",
            "_1",
            "1_2",
            ".",
            "a.",
            ".a",
            "a.b",
            "1.",
            ".1",
            "1.2",
            " ",
            "a ",
            " a",
            "a b",
            "1 ",
            " 1",
            "1 2",
            &"a".repeat(64),
        ] {
            assert!(!dns1123_label(bad).is_empty(), "{bad}");
        }
    }

    #[test]
    fn dns1123_subdomains_as_upstream() {
        // validation_test.go TestIsDNS1123Subdomain.
        for good in [
            "a",
            "ab",
            "abc",
            "a1",
            "a-1",
            "a--1--2--b",
            "0",
            "01",
            "012",
            "1a",
            "1-a",
            "1--a--b--2",
            "a.a",
            "ab.a",
            "abc.a",
            "a1.a",
            "a-1.a",
            "a--1--2--b.a",
            "a.1",
            "ab.1",
            "abc.1",
            "a1.1",
            "a-1.1",
            "a--1--2--b.1",
            "0.a",
            "01.a",
            "012.a",
            "1a.a",
            "1-a.a",
            "1--a--b--2",
            "0.1",
            "01.1",
            "012.1",
            "1a.1",
            "1-a.1",
            "1--a--b--2.1",
            "a.b.c.d.e",
            "aa.bb.cc.dd.ee",
            "1.2.3.4.5",
            "11.22.33.44.55",
            &"a".repeat(253),
        ] {
            assert!(dns1123_subdomain(good).is_empty(), "{good}");
        }
        for bad in [
            "",
            "A",
            "ABC",
            "aBc",
            "A1",
            "A-1",
            "1-A",
            "-",
            "a-",
            "-a",
            "1-",
            "-1",
            "_",
            "a_",
            "_a",
            "a_b",
            "1_",
            "_1",
            "1_2",
            ".",
            "a.",
            ".a",
            "a..b",
            "1.",
            ".1",
            "1..2",
            " ",
            "a ",
            " a",
            "a b",
            "1 ",
            " 1",
            "1 2",
            "A.a",
            "aB.a",
            "ab.A",
            "A1.a",
            "a1.A",
            "A.1",
            "aB.1",
            "A1.1",
            "1A.1",
            "0.A",
            "01.A",
            "012.A",
            "1A.a",
            "1a.A",
            "A.B.C.D.E",
            "AA.BB.CC.DD.EE",
            "a.B.c.d.e",
            "aa.bB.cc.dd.ee",
            "a@b",
            "a,b",
            "a_b",
            "a;b",
            "a:b",
            "a%b",
            "a?b",
            "a$b",
            &"a".repeat(254),
        ] {
            assert!(!dns1123_subdomain(bad).is_empty(), "{bad}");
        }
    }

    #[test]
    fn c_identifiers_as_upstream() {
        // validation_test.go TestIsCIdentifier.
        for good in [
            "a",
            "ab",
            "abc",
            "a1",
            "_a",
            "a_",
            "a_b",
            "a_1",
            "a__1__2__b",
            "__abc_123",
            "A",
            "AB",
            "AbC",
            "A1",
            "_A",
            "A_",
            "A_B",
            "A_1",
            "A__1__2__B",
            "__123_ABC",
        ] {
            assert!(is_c_identifier(good), "{good}");
        }
        for bad in [
            "", "1", "123", "1a", "-", "a-", "-a", "1-", "-1", "1_", "1_2", ".", "a.", ".a", "a.b", "1.", ".1", "1.2",
            " ", "a ", " a", "a b", "1 ", " 1", "1 2", "#a#",
        ] {
            assert!(!is_c_identifier(bad), "{bad}");
        }
    }

    #[test]
    fn qualified_names_and_label_values_as_upstream() {
        // validation_test.go TestIsQualifiedName and TestIsValidLabelValue.
        for good in [
            "simple",
            "now-with-dashes",
            "1-starts-with-num",
            "1234",
            "simple/simple",
            "now-with-dashes/simple",
            "now-with-dashes/now-with-dashes",
            "now.with.dots/simple",
            "now-with.dashes-and.dots/simple",
            "1-num.2-num/3-num",
            "1234/5678",
            "1.2.3.4/5678",
            "Uppercase_Is_OK_123",
            "example.com/Uppercase_Is_OK_123",
            "requests.storage-foo",
            &"a".repeat(63),
            &format!("{}/{}", "a".repeat(253), "b".repeat(63)),
        ] {
            assert!(qualified_name(good).is_empty(), "{good}");
        }
        for bad in [
            "nospecialchars%^=@",
            "cantendwithadash-",
            "-cantstartwithadash-",
            "only/one/slash",
            "Example.com/abc",
            "example_com/abc",
            "example.com/",
            "/simple",
            &"a".repeat(64),
            &format!("{}/b", "a".repeat(254)),
        ] {
            assert!(!qualified_name(bad).is_empty(), "{bad}");
        }
        for good in [
            "simple",
            "now-with-dashes",
            "1-starts-with-num",
            "end-with-num-1",
            "1234",
            "",
            &"a".repeat(63),
            "1.2.3.4",
            "a-.-b",
        ] {
            assert!(label_value(good).is_empty(), "{good}");
        }
        for bad in [
            "nospecialchars%^=@",
            "Tama-nui-te-rā.is.Māori.sun",
            "\\backslashes\\are\\bad",
            "-starts-with-dash",
            "ends-with-dash-",
            ".starts.with.dot",
            "ends.with.dot.",
            &"a".repeat(64),
        ] {
            assert!(!label_value(bad).is_empty(), "{bad}");
        }
    }

    #[test]
    fn field_errors_print_as_upstream() {
        assert_eq!(
            FieldError::too_many("spec.devices", 129, 128).to_string(),
            "spec.devices: Too many: 129: must have at most 128 items"
        );
        assert_eq!(FieldError::too_long("spec.x", 64).to_string(), "spec.x: Too long: may not be more than 64 bytes");
        assert_eq!(FieldError::required("spec.driver", "").to_string(), "spec.driver: Required value");
        assert_eq!(
            FieldError::duplicate("spec.devices[1].name", "a").to_string(),
            "spec.devices[1].name: Duplicate value: \"a\""
        );
        assert_eq!(
            FieldError::invalid_number("spec.pool.generation", -1, "must be greater than or equal to zero").to_string(),
            "spec.pool.generation: Invalid value: -1: must be greater than or equal to zero"
        );
    }
}
