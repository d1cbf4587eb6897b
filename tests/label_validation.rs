//! Labels on pods and nodes are validated as the API server validates them (upstream
//! `k8s.io/apimachinery/pkg/apis/meta/v1/validation`, `ValidateLabels`): a key that is
//! not a qualified name or a value that is not a label value is refused when the pod is
//! validated (`PodInfo::new`) or the node is added or updated, with the field path.
//!
//! Cases: upstream `validation_test.go` `TestValidateLabels`.

use schedkit::model::{FieldErrorKind, PodError};
use schedkit::snapshot::{Cache, CacheError, PodInfo};
use schedkit::testing::{NodeBuilder, PodBuilder};

const SUCCESS: &[(&str, &str)] = &[
    ("simple", "bar"),
    ("now-with-dashes", "bar"),
    ("1-starts-with-num", "bar"),
    ("1234", "bar"),
    ("simple/simple", "bar"),
    ("now-with-dashes/simple", "bar"),
    ("now-with-dashes/now-with-dashes", "bar"),
    ("now.with.dots/simple", "bar"),
    ("now-with.dashes-and.dots/simple", "bar"),
    ("1-num.2-num/3-num", "bar"),
    ("1234/5678", "bar"),
    ("1.2.3.4/5678", "bar"),
    ("UpperCaseAreOK123", "bar"),
    ("goodvalue", "123_-.BaR"),
];

fn bad_keys() -> Vec<String> {
    vec!["nospecialchars^=@".into(), "cantendwithadash-".into(), "only/one/slash".into(), "a".repeat(254)]
}

fn bad_values() -> Vec<String> {
    vec!["a".repeat(64), "some\\bad\\value".into(), "bad,value".into(), "?#$notsogood".into()]
}

#[test]
fn pod_labels_as_the_api_server() {
    for (k, v) in SUCCESS {
        let pod = PodBuilder::new("p").label(k, v).build();
        assert!(PodInfo::new(pod).is_ok(), "{k}={v}");
    }
    for k in bad_keys() {
        let err = PodInfo::new(PodBuilder::new("p").label(&k, "bar").build()).unwrap_err();
        let PodError::InvalidField { error, .. } = &err else { panic!("{err}") };
        assert_eq!(error.path, "metadata.labels", "{k}");
        assert!(matches!(error.kind, FieldErrorKind::Invalid { .. }), "{k}: {err}");
    }
    for v in bad_values() {
        let err = PodInfo::new(PodBuilder::new("p").label("key", &v).build()).unwrap_err();
        let PodError::InvalidField { error, .. } = &err else { panic!("{err}") };
        assert_eq!(error.path, "metadata.labels[key]", "{v}");
    }
    let err = PodInfo::new(PodBuilder::new("p").label("key", "bad,value").build()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "pod default/p: metadata.labels[key]: Invalid value: \"bad,value\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
    );
}

#[test]
fn node_labels_as_the_api_server() {
    let mut cache = Cache::new();
    for (i, (k, v)) in SUCCESS.iter().enumerate() {
        cache.add_node(NodeBuilder::new(&format!("n{i}")).label(k, v).build()).unwrap_or_else(|e| panic!("{k}={v}: {e}"));
    }
    for k in bad_keys() {
        let err = cache.add_node(NodeBuilder::new("bad").label(&k, "bar").build()).unwrap_err();
        assert!(matches!(err, CacheError::InvalidNode { .. }), "{k}: {err}");
    }
    for v in bad_values() {
        let err = cache.add_node(NodeBuilder::new("bad").label("key", &v).build()).unwrap_err();
        let CacheError::InvalidNode { node, error } = &err else { panic!("{err}") };
        assert_eq!((node.as_str(), error.path.as_str()), ("bad", "metadata.labels[key]"));
    }
    // An update is refused the same way, and the cache keeps the node as it was.
    let err = cache.update_node(NodeBuilder::new("n0").label("key", "bad,value").build()).unwrap_err();
    assert!(matches!(err, CacheError::InvalidNode { .. }), "{err}");
    assert_eq!(cache.node_count(), SUCCESS.len());
}
