//! Labels on pods and nodes against the API server's rules (upstream
//! `k8s.io/apimachinery/pkg/apis/meta/v1/validation`, `ValidateLabels`). Every pod
//! (`PodInfo::new`) and node (`Cache::add_node`, `update_node`) is held to the length
//! limits; the full rules (characters too) are `validate_labels`, for callers that
//! load objects from outside a cluster. The FGD traces' `G2|V100M16` model alternatives
//! are label values the API server would refuse, so schedkit does not apply the
//! character rules by default.
//!
//! Cases: upstream `validation_test.go` `TestValidateLabels`.

use schedkit::model::validation::validate_labels;
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

const NAME_PART_ERRORS: &[&str] = &["nospecialchars^=@", "cantendwithadash-", "only/one/slash"];
const VALUE_ERRORS: &[&str] = &["some\\bad\\value", "bad,value", "?#$notsogood"];

#[test]
fn validate_labels_as_upstream() {
    for (k, v) in SUCCESS {
        assert_eq!(validate_labels("metadata.labels", [(*k, *v)]), Ok(()), "{k}={v}");
    }
    let long_key = "a".repeat(254);
    for k in NAME_PART_ERRORS.iter().copied().chain([long_key.as_str()]) {
        let err = validate_labels("metadata.labels", [(k, "bar")]).unwrap_err();
        assert_eq!(err.path, "metadata.labels", "{k}");
        assert!(matches!(err.kind, FieldErrorKind::Invalid { .. }), "{k}: {err}");
    }
    let long_value = "a".repeat(64);
    for v in VALUE_ERRORS.iter().copied().chain([long_value.as_str()]) {
        let err = validate_labels("metadata.labels", [("key", v)]).unwrap_err();
        assert_eq!(err.path, "metadata.labels[key]", "{v}");
    }
    assert_eq!(
        validate_labels("metadata.labels", [("key", "bad,value")]).unwrap_err().to_string(),
        "metadata.labels[key]: Invalid value: \"bad,value\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
    );
}

#[test]
fn pods_are_held_to_the_length_limits() {
    for (k, v) in SUCCESS {
        assert!(PodInfo::new(PodBuilder::new("p").label(k, v).build()).is_ok(), "{k}={v}");
    }
    // Characters the API server refuses load (the trace conventions need them).
    assert!(PodInfo::new(PodBuilder::new("p").label("alibabacloud.com/gpu-card-model", "G2|V100M16").build()).is_ok());
    let err = PodInfo::new(PodBuilder::new("p").label("key", &"a".repeat(64)).build()).unwrap_err();
    let PodError::InvalidField { error, .. } = &err else { panic!("{err}") };
    assert_eq!(error.path, "metadata.labels[key]");
    assert!(err.to_string().ends_with("must be no more than 63 characters"), "{err}");
    let err = PodInfo::new(PodBuilder::new("p").label(&"a".repeat(254), "bar").build()).unwrap_err();
    assert!(err.to_string().contains("name part must be no more than 63 characters"), "{err}");
    let err = PodInfo::new(PodBuilder::new("p").label(&format!("{}/a", "a".repeat(254)), "bar").build()).unwrap_err();
    assert!(err.to_string().contains("prefix part must be no more than 253 characters"), "{err}");
}

#[test]
fn nodes_are_held_to_the_length_limits() {
    let mut cache = Cache::new();
    for (i, (k, v)) in SUCCESS.iter().enumerate() {
        cache
            .add_node(NodeBuilder::new(&format!("n{i}")).label(k, v).build())
            .unwrap_or_else(|e| panic!("{k}={v}: {e}"));
    }
    let err = cache.add_node(NodeBuilder::new("bad").label("key", &"a".repeat(64)).build()).unwrap_err();
    let CacheError::InvalidNode { node, error } = &err else { panic!("{err}") };
    assert_eq!((node.as_str(), error.path.as_str()), ("bad", "metadata.labels[key]"));
    // An update is refused the same way, and the cache keeps the node as it was.
    let err = cache.update_node(NodeBuilder::new("n0").label(&"k".repeat(64), "v").build()).unwrap_err();
    assert!(matches!(err, CacheError::InvalidNode { .. }), "{err}");
    assert_eq!(cache.node_count(), SUCCESS.len());
}
