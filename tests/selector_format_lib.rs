//! The Kubernetes format library (`k8s.io/apiserver/pkg/cel/library/format.go`, in the
//! base environment since 1.31), replayed from upstream's
//! `k8s.io/apiserver/pkg/cel/library/format_test.go` `TestFormat` (case names cited),
//! plus the boundary cases of the apimachinery validators it calls
//! (`k8s.io/apimachinery/pkg/util/validation/validation.go`,
//! `k8s.io/apimachinery/pkg/api/validate/content/kube.go`) and the cost of
//! `library/cost.go`.

#[path = "support/selector.rs"]
mod support;

use schedkit::selector::Selector;
use support::{assert_refused, eval0, eval0_unbudgeted};

const NAMES: [&str; 13] = [
    "dns1123Label",
    "dns1123Subdomain",
    "dns1035Label",
    "qualifiedName",
    "dns1123LabelPrefix",
    "dns1123SubdomainPrefix",
    "dns1035LabelPrefix",
    "labelValue",
    "uri",
    "uuid",
    "byte",
    "date",
    "datetime",
];

fn t(src: &str) {
    assert_eq!(eval0(src), Ok(true), "{src}");
}

/// `validate` of `arg` with format `name` returns exactly `errs`. Comparing the optional
/// results (of unknown size for cel-go's estimator) is refused by the DRA cost limit, so
/// these library checks run without it.
fn errs(name: &str, arg: &str, errs: &[&str]) {
    let list: Vec<String> = errs.iter().map(|e| format!("{e:?}")).collect();
    let src = format!("format.{name}().validate({arg:?}) == optional.of([{}])", list.join(", "));
    assert_refused(&src);
    assert_eq!(eval0_unbudgeted(&src), Ok(true), "{src}");
}

fn valid(name: &str, arg: &str) {
    let src = format!("format.{name}().validate({arg:?}) == optional.none()");
    assert_refused(&src);
    assert_eq!(eval0_unbudgeted(&src), Ok(true), "{src}");
}

#[test]
fn upstream_test_format_example_usage() {
    // example_usage_* and *_Success / *_success.
    for (name, arg) in [
        ("dns1123Label", "my-label-name"),
        ("dns1123Subdomain", "apiextensions.k8s.io"),
        ("qualifiedName", "apiextensions.k8s.io/v1beta1"),
        ("dns1123LabelPrefix", "my-label-prefix-"),
        ("dns1123SubdomainPrefix", "mysubdomain.prefix.-"),
        ("dns1035LabelPrefix", "my-label-prefix-"),
        ("uri", "http://example.com"),
        ("uuid", "123e4567-e89b-12d3-a456-426614174000"),
        ("byte", "aGVsbG8="),
        ("date", "2021-01-01"),
        ("datetime", "2021-01-01T00:00:00Z"),
        ("dns1123Label", "my-label-name"),
        ("dns1123Subdomain", "example.com"),
        ("dns1035Label", "my-label-name"),
        ("qualifiedName", "my.name"),
        ("date", "2020-01-01"),
        ("datetime", "2020-01-01T00:00:00Z"),
        ("labelValue", "my-cool-label-Value"),
    ] {
        valid(name, arg);
    }
}

const LABEL_1123: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const SUBDOMAIN_1123: &str = r"a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const LABEL_1035: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";
const NAME_PART: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

#[test]
fn upstream_test_format_failures() {
    // dns1123Label, dns1123Subdomain, dns1035Label, qualifiedName and their Prefix cases.
    errs("dns1123Label", "contains a space", &[LABEL_1123]);
    errs("dns1123Subdomain", "contains a space", &[SUBDOMAIN_1123]);
    errs("dns1035Label", "contains a space", &[LABEL_1035]);
    errs("qualifiedName", "contains a space", &[NAME_PART]);
    errs("dns1123LabelPrefix", "contains a space-", &[LABEL_1123]);
    errs("dns1123SubdomainPrefix", "contains a space-", &[SUBDOMAIN_1123]);
    errs("dns1035LabelPrefix", "contains a space-", &[LABEL_1035]);
    // byte_failure, date_failure, datetime_failure.
    errs("byte", "aGVsbG8", &["invalid base64"]);
    errs("date", "2020-01-32", &["invalid date"]);
    errs("datetime", "2020-01-32T00:00:00Z", &["invalid datetime"]);
    // labelValue_failure.
    errs(
        "labelValue",
        "my-cool-label-Value!!\n\n!!!",
        &[
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
        ],
    );
}

#[test]
fn upstream_test_format_lookup_and_comparison() {
    // unknown_format, "lookup and comparison", "comparison with lookup succeeds",
    // compare_<lhs>_<rhs>.
    t(r#"format.named("unknown").hasValue() == false"#);
    for l in NAMES {
        t(&format!(r#"format.named("{l}").hasValue()"#));
        t(&format!(r#"format.named("{l}").value() == format.{l}()"#));
        for r in NAMES {
            if l != r {
                t(&format!("(format.{l}() == format.{r}()) == false"));
            }
        }
    }
}

#[test]
fn upstream_test_size_limit() {
    // TestSizeLimit: every format name fits `MaxFormatSize` (64).
    assert!(NAMES.iter().all(|n| n.len() <= 64));
}

#[test]
fn validation_go_boundaries() {
    // Lengths: IsDNS1123Label 63, IsDNS1123Subdomain 253 (validation.go, "characters");
    // IsLabelKey name 63 and IsLabelValue 63 (content/kube.go, "bytes").
    valid("dns1123Label", &"a".repeat(63));
    errs("dns1123Label", &"a".repeat(64), &["must be no more than 63 characters"]);
    errs("dns1123Label", "a.b", &["must not contain dots"]);
    let sub = format!("{}.{}.{}.{}", "a".repeat(63), "b".repeat(63), "c".repeat(63), "d".repeat(61));
    valid("dns1123Subdomain", &sub);
    errs("dns1123Subdomain", &format!("{sub}d"), &["must be no more than 253 characters"]);
    errs("dns1035Label", "1abc", &[LABEL_1035]);
    valid("qualifiedName", &"a".repeat(63));
    errs("qualifiedName", &"a".repeat(64), &["name part must be no more than 63 bytes"]);
    errs("qualifiedName", "/a", &["prefix part must be non-empty"]);
    errs("qualifiedName", "a/", &["name part must be non-empty", NAME_PART]);
    errs("qualifiedName", "A_b/c", &[&format!("prefix part {SUBDOMAIN_1123}")]);
    errs(
        "qualifiedName",
        "a/b/c",
        &[
            "a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
        ],
    );
    valid("labelValue", "");
    errs("labelValue", &"a".repeat(64), &["must be no more than 63 bytes"]);
    // maskTrailingDash replaces the last two bytes with `a`: "ab-" checks "aa".
    valid("dns1123LabelPrefix", "a-");
    valid("dns1123LabelPrefix", "A-");
}

#[test]
fn strfmt_formats() {
    valid("uuid", "123E4567E89B12D3A456426614174000");
    errs("uuid", "123e4567-e89b-12d3-a456", &["does not match the UUID format"]);
    errs("byte", "", &["invalid base64"]);
    valid("byte", "aGk=");
    valid("date", "2024-02-29");
    errs("date", "2023-02-29", &["invalid date"]);
    valid("datetime", "2020-01-01t10:00:00.5+01:00");
    errs("datetime", "2020-01-01T24:00:00Z", &["invalid datetime"]);
    errs("uri", "foo", &[r#"parse "foo": invalid URI for request"#]);
    errs("uri", "", &[r#"parse "": empty url"#]);
}

#[test]
fn types_and_errors() {
    // Two `type` values have no size for cel-go's estimator: refused, but true.
    let types = "type(format.uri()) == type(format.dns1123Label())";
    assert_refused(types);
    assert_eq!(eval0_unbudgeted(types), Ok(true));
    t(r#"format.named("uri").orValue(format.byte()) == format.uri()"#);
    t(r#"format.named("nope").orValue(format.byte()) == format.byte()"#);
    t(r#"format.dns1123Label().validate("a b").value().size() == 1"#);
    for bad in ["format.nope()", "format.uri(1)", "format.named(1)", "format.uri().validate(1)"] {
        assert!(Selector::compile(bad).is_err(), "{bad}");
    }
}

#[test]
fn cost_as_library_cost_go() {
    // EstimateCallCost "validate": ceil(size * 0.1) * ceil(128 * 0.25) for the string;
    // "format.named" and the constants cost 1; `==` of two formats ceil(64 * 0.1).
    let sel = Selector::compile(r#"format.dns1123Label().validate("abcdefghij").hasValue()"#).unwrap();
    // constant 1 + validate 1 * 32 + hasValue 1.
    assert_eq!(sel.estimated_cost(), 34);
    let sel = Selector::compile("format.uri() == format.uuid()").unwrap();
    assert_eq!(sel.estimated_cost(), 1 + 1 + 7);
    let sel = Selector::compile(r#"format.named("uri").hasValue()"#).unwrap();
    assert_eq!(sel.estimated_cost(), 2);
}

/// Where kube-cel's port departs from upstream, schedkit follows upstream:
/// - a subdomain label may exceed 63 bytes (`IsDNS1123Subdomain` only limits the whole
///   name to 253 and has no per-label length);
/// - `dns1035LabelPrefix` refuses `""` (`maskTrailingDash` leaves it empty, and the
///   DNS-1035 regex needs a letter);
/// - `uri` accepts absolute paths and `*` (Go's `url.ParseRequestURI`);
/// - `uuid` accepts the undashed form (kube-openapi `UUIDPattern` has `-?`);
/// - `byte`: kube-cel accepts strings govalidator's `Base64` pattern refuses, such as
///   `"aGVsbG8"` (upstream `format_test.go` `byte_failure`), so it is not compared.
fn kube_cel_deviates(name: &str, s: &str) -> bool {
    match name {
        "dns1123Subdomain" | "dns1123SubdomainPrefix" => s.len() > 63,
        "dns1035LabelPrefix" => s.is_empty(),
        "uri" => s.starts_with('/') || s == "*",
        "uuid" => !s.contains('-') && s.len() == 32,
        "byte" => true,
        _ => false,
    }
}

#[test]
fn differential_validity_against_kube_cel() {
    // kube-cel's `named_format` (a Rust port of format.go) must agree on which strings
    // each format accepts, except where it departs from upstream (see above).
    use kube_cel::KubeCelExt;
    use kube_cel::cel;
    let ctx = cel::Context::default().with_all();
    let long = "a".repeat(64);
    let inputs = [
        "",
        "a",
        "my-name",
        "My-Name",
        "-a",
        "a-",
        "a.b",
        "a..b",
        "1abc",
        "abc-123",
        "a_b",
        "example.com/x",
        "a/b/c",
        "/a",
        "a/",
        "contains a space",
        "http://example.com",
        "foo",
        "/path?q=1",
        "*",
        "123e4567-e89b-12d3-a456-426614174000",
        "123e4567e89b12d3a456426614174000",
        "aGVsbG8=",
        "aGVsbG8",
        "aGk=",
        "2020-02-29",
        "2021-02-29",
        "2020-13-01",
        "2020-01-01T00:00:00Z",
        "2020-01-01T24:00:00Z",
        "2020-01-01t10:00:00.5+01:00",
        "2020-01-01T10:00:00",
        &long,
    ];
    let mut disagreements = Vec::new();
    let mut compared = 0;
    for name in NAMES {
        for s in inputs {
            if kube_cel_deviates(name, s) {
                continue;
            }
            compared += 1;
            let src = format!("format.{name}().validate({s:?}).hasValue()");
            let ours = eval0(&src);
            let theirs = cel::Program::compile(&src).ok().and_then(|p| p.execute(&ctx).ok());
            match (ours, theirs) {
                (Ok(a), Some(cel::Value::Bool(b))) if a == b => {}
                (a, b) => disagreements.push(format!("{src}: schedkit {a:?}, kube-cel {b:?}")),
            }
        }
    }
    assert!(compared > 350, "{compared}");
    assert!(disagreements.is_empty(), "{}", disagreements.join("\n"));
}
