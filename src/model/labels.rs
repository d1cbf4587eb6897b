//! Labels and the selectors that match them (`metav1.LabelSelector`, `v1.NodeSelector`).
//!
//! Semantics follow `k8s.io/apimachinery/pkg/labels/selector.go` and
//! `k8s.io/component-helpers/scheduling/corev1/nodeaffinity/nodeaffinity.go`.
//! Selectors are validated when built or deserialized, so matching never fails.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use smallvec::SmallVec;

use super::Symbol;

#[path = "labels_masks.rs"]
mod masks;
pub(crate) use masks::{BlockSource, MASK_NODES, NO_VALUE, NodeBlock};

/// A set of `key=value` labels, interned and sorted by key symbol for fast lookup.
///
/// The set holds a reference on each key and value symbol (see [`crate::model::intern`]
/// for the rules): when the last set holding a string drops and nothing pinned it,
/// the interner frees it, so label values that never repeat don't accumulate.
///
/// ```
/// use schedkit::model::{Labels, Symbol};
/// let l = Labels::from_pairs([("app", "web"), ("tier", "front")]);
/// assert_eq!(l.get_str("app"), Some("web"));
/// assert_eq!(l.get(Symbol::intern("missing")), None);
/// ```
#[derive(Default, PartialEq, Eq, Hash)]
pub struct Labels(SmallVec<[(Symbol, Symbol); 8]>);

impl Clone for Labels {
    fn clone(&self) -> Self {
        Symbol::retain_all(self.0.iter().flat_map(|&(k, v)| [k, v]));
        Labels(self.0.clone())
    }
}

impl Drop for Labels {
    fn drop(&mut self) {
        Symbol::release_all(self.0.iter().flat_map(|&(k, v)| [k, v]));
    }
}

impl Labels {
    /// An empty label set.
    pub const fn new() -> Labels {
        Labels(SmallVec::new_const())
    }

    /// Builds labels from string pairs; a repeated key keeps the last value.
    pub fn from_pairs<K: AsRef<str>, V: AsRef<str>>(pairs: impl IntoIterator<Item = (K, V)>) -> Labels {
        let mut l = Labels::new();
        for (k, v) in pairs {
            l.insert_str(k.as_ref(), v.as_ref());
        }
        l
    }

    /// Sets `key` to `value` by text, interning both without pinning them.
    pub fn insert_str(&mut self, key: &str, value: &str) {
        let (k, v) = (Symbol::acquire(key), Symbol::acquire(value));
        self.put(k, v);
    }

    /// Sets `key` to `value`. The set takes its own reference on both, so the
    /// symbols stay interned while it holds them.
    pub fn insert(&mut self, key: Symbol, value: Symbol) {
        Symbol::retain_all([key, value]);
        self.put(key, value);
    }

    /// Stores a pair whose references the caller took for this set.
    fn put(&mut self, key: Symbol, value: Symbol) {
        match self.0.binary_search_by_key(&key, |&(k, _)| k) {
            Ok(i) => {
                let old = std::mem::replace(&mut self.0[i].1, value);
                // The key was held already; the replaced value is given back.
                Symbol::release_all([key, old]);
            }
            Err(i) => self.0.insert(i, (key, value)),
        }
    }

    /// Removes `key`, returning whether it was present. The set's references on the
    /// key and value are given back.
    pub fn remove(&mut self, key: Symbol) -> bool {
        let Ok(i) = self.0.binary_search_by_key(&key, |&(k, _)| k) else { return false };
        let (k, v) = self.0.remove(i);
        Symbol::release_all([k, v]);
        true
    }

    /// The value of `key`.
    #[inline]
    pub fn get(&self, key: Symbol) -> Option<Symbol> {
        let pairs = self.0.as_slice();
        if pairs.len() <= 8 {
            pairs.iter().find(|&&(k, _)| k == key).map(|&(_, v)| v)
        } else {
            pairs.binary_search_by_key(&key, |&(k, _)| k).ok().map(|i| pairs[i].1)
        }
    }

    /// The value of `key` by text. Interns nothing, but pins the value's text as
    /// [`Symbol::as_str`] does; read it with [`Labels::get`] and
    /// [`Symbol::with_str`] to leave it reclaimable.
    pub fn get_str(&self, key: &str) -> Option<&'static str> {
        self.get(Symbol::lookup(key)?).map(Symbol::as_str)
    }

    /// Whether `key` is present.
    #[inline]
    pub fn contains_key(&self, key: Symbol) -> bool {
        self.get(key).is_some()
    }

    /// Iterates over `(key, value)` pairs.
    pub fn iter(&self) -> impl Iterator<Item = (Symbol, Symbol)> + '_ {
        self.0.iter().copied()
    }

    /// The `(key, value)` pairs as shared text, read without pinning: checks that run
    /// once per object (validation) must not keep a unique label value alive for the
    /// life of the process, as [`Symbol::as_str`] would.
    pub fn texts(&self) -> Vec<(std::sync::Arc<str>, std::sync::Arc<str>)> {
        self.0.iter().map(|&(k, v)| (k.text().unwrap_or_default(), v.text().unwrap_or_default())).collect()
    }

    /// Number of labels.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are no labels.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for Labels {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Display, not `as_str`: printing must not pin the text.
        f.debug_map().entries(self.0.iter().map(|(k, v)| (k.to_string(), v.to_string()))).finish()
    }
}

impl Serialize for Labels {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let m: BTreeMap<String, String> = self.0.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        m.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Labels {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let m = BTreeMap::<String, String>::deserialize(d)?;
        Ok(Labels::from_pairs(m))
    }
}

impl<K: AsRef<str>, V: AsRef<str>> FromIterator<(K, V)> for Labels {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        Labels::from_pairs(iter)
    }
}

/// A selector that was rejected, with where in the object it sits.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectorError {
    /// `In`/`NotIn` need at least one value.
    #[error("{path}: operator {operator} needs at least one value")]
    EmptyValues {
        /// Field path of the requirement, e.g. `matchExpressions[1]`.
        path: String,
        /// The operator.
        operator: &'static str,
    },
    /// `Exists`/`DoesNotExist` take no values.
    #[error("{path}: operator {operator} takes no values")]
    UnexpectedValues {
        /// Field path of the requirement.
        path: String,
        /// The operator.
        operator: &'static str,
    },
    /// `Gt`/`Lt` take exactly one integer value.
    #[error("{path}: operator {operator} needs exactly one integer value, got {values:?}")]
    NotAnInteger {
        /// Field path of the requirement.
        path: String,
        /// The operator.
        operator: &'static str,
        /// The values given.
        values: Vec<String>,
    },
    /// `matchFields` supports only `metadata.name` with `In`/`NotIn`.
    #[error("{path}: matchFields supports only key metadata.name with In or NotIn, got {key} {operator}")]
    UnsupportedField {
        /// Field path of the requirement.
        path: String,
        /// The key given.
        key: String,
        /// The operator given.
        operator: &'static str,
    },
    /// An empty label key.
    #[error("{path}: label key must not be empty")]
    EmptyKey {
        /// Field path of the requirement.
        path: String,
    },
}

/// Operators of a label selector requirement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum LabelOperator {
    /// The label's value is one of the values.
    In,
    /// The label is absent or its value is none of the values.
    NotIn,
    /// The label is present.
    Exists,
    /// The label is absent.
    DoesNotExist,
}

impl LabelOperator {
    fn as_str(self) -> &'static str {
        match self {
            LabelOperator::In => "In",
            LabelOperator::NotIn => "NotIn",
            LabelOperator::Exists => "Exists",
            LabelOperator::DoesNotExist => "DoesNotExist",
        }
    }
}

/// One `matchExpressions` entry of a label selector.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct LabelSelectorRequirement {
    /// The label key.
    pub key: Symbol,
    /// The operator.
    pub operator: LabelOperator,
    /// Values for `In`/`NotIn`.
    #[serde(default, skip_serializing_if = "SmallVec::is_empty")]
    pub values: SmallVec<[Symbol; 2]>,
}

impl LabelSelectorRequirement {
    #[inline]
    fn matches(&self, labels: &Labels) -> bool {
        let v = labels.get(self.key);
        match self.operator {
            LabelOperator::In => v.is_some_and(|v| self.values.contains(&v)),
            LabelOperator::NotIn => v.is_none_or(|v| !self.values.contains(&v)),
            LabelOperator::Exists => v.is_some(),
            LabelOperator::DoesNotExist => v.is_none(),
        }
    }

    /// `path` is written only for an error.
    fn validate(&self, path: &dyn Fn() -> String) -> Result<(), SelectorError> {
        if self.key.is_empty() {
            return Err(SelectorError::EmptyKey { path: path() });
        }
        let operator = self.operator.as_str();
        match self.operator {
            LabelOperator::In | LabelOperator::NotIn if self.values.is_empty() => {
                Err(SelectorError::EmptyValues { path: path(), operator })
            }
            LabelOperator::Exists | LabelOperator::DoesNotExist if !self.values.is_empty() => {
                Err(SelectorError::UnexpectedValues { path: path(), operator })
            }
            _ => Ok(()),
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawLabelSelector {
    #[serde(default)]
    match_labels: Labels,
    #[serde(default)]
    match_expressions: Vec<LabelSelectorRequirement>,
}

/// `metav1.LabelSelector`: all `matchLabels` and all `matchExpressions` must hold.
/// An empty selector matches everything (a missing one, `Option::None`, nothing),
/// as in upstream `LabelSelectorAsSelector`.
///
/// ```
/// use schedkit::model::{LabelSelector, Labels};
/// let sel: LabelSelector = serde_json::from_str(
///     r#"{"matchLabels":{"app":"web"},"matchExpressions":[{"key":"tier","operator":"NotIn","values":["db"]}]}"#,
/// ).unwrap();
/// assert!(sel.matches(&Labels::from_pairs([("app", "web")])));
/// assert!(!sel.matches(&Labels::from_pairs([("app", "web"), ("tier", "db")])));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", try_from = "RawLabelSelector")]
pub struct LabelSelector {
    /// Exact `key=value` requirements.
    #[serde(default, skip_serializing_if = "Labels::is_empty")]
    pub match_labels: Labels,
    /// Set-based requirements.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub match_expressions: Vec<LabelSelectorRequirement>,
}

impl TryFrom<RawLabelSelector> for LabelSelector {
    type Error = SelectorError;
    fn try_from(raw: RawLabelSelector) -> Result<Self, Self::Error> {
        LabelSelector::new(raw.match_labels, raw.match_expressions)
    }
}

impl LabelSelector {
    /// Builds a validated selector.
    pub fn new(match_labels: Labels, match_expressions: Vec<LabelSelectorRequirement>) -> Result<Self, SelectorError> {
        for (i, r) in match_expressions.iter().enumerate() {
            r.validate(&|| format!("matchExpressions[{i}]"))?;
        }
        Ok(LabelSelector { match_labels, match_expressions })
    }

    /// A selector of exact labels.
    pub fn from_labels(labels: Labels) -> Self {
        LabelSelector { match_labels: labels, match_expressions: Vec::new() }
    }

    /// Whether the selector matches everything.
    pub fn is_empty(&self) -> bool {
        self.match_labels.is_empty() && self.match_expressions.is_empty()
    }

    /// Whether `labels` satisfy every requirement.
    #[inline]
    pub fn matches(&self, labels: &Labels) -> bool {
        self.match_labels.iter().all(|(k, v)| labels.get(k) == Some(v))
            && self.match_expressions.iter().all(|r| r.matches(labels))
    }
}

/// Operators of a node selector requirement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum NodeSelectorOperator {
    /// Value is one of the values.
    In,
    /// Absent, or value is none of the values.
    NotIn,
    /// Present.
    Exists,
    /// Absent.
    DoesNotExist,
    /// Value parses as an integer greater than the single value.
    Gt,
    /// Value parses as an integer less than the single value.
    Lt,
}

impl NodeSelectorOperator {
    fn as_str(self) -> &'static str {
        match self {
            NodeSelectorOperator::In => "In",
            NodeSelectorOperator::NotIn => "NotIn",
            NodeSelectorOperator::Exists => "Exists",
            NodeSelectorOperator::DoesNotExist => "DoesNotExist",
            NodeSelectorOperator::Gt => "Gt",
            NodeSelectorOperator::Lt => "Lt",
        }
    }
}

/// One requirement of a node selector term.
///
/// A requirement that the API server accepts but upstream's scheduler cannot parse (a
/// value that is not a valid label value, `Gt`/`Lt` with a non-integer) loads, and
/// makes its term match nothing, as upstream's lazy-error node selector
/// (`k8s.io/component-helpers/scheduling/corev1/nodeaffinity`, `NewLazyErrorNodeSelector`)
/// does: see [`NodeSelectorRequirement::parse_error`] and [`NodeSelectorTerm::parse_errors`].
///
/// The values are held, not pinned, while the requirement lives (as a label set holds
/// its strings): a DaemonSet pod's `matchFields` names its node, and node names are
/// freed when the node goes.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "RawRequirement")]
pub struct NodeSelectorRequirement {
    /// Label key (or `metadata.name` in `matchFields`).
    pub key: Symbol,
    /// The operator.
    pub operator: NodeSelectorOperator,
    /// Values; one integer for `Gt`/`Lt`. Those made by [`NodeSelectorRequirement::new`]
    /// or parsed are held by the requirement; one pushed here must be kept interned by
    /// its giver (pinned with [`Symbol::intern`]).
    #[serde(default, skip_serializing_if = "SmallVec::is_empty")]
    pub values: SmallVec<[Symbol; 2]>,
    /// The references on `values` this requirement holds.
    #[serde(skip)]
    holds: super::intern::Holds,
    /// The parsed integer of `Gt`/`Lt`, filled by validation.
    #[serde(skip)]
    bound: i64,
    /// Set by validation when [`NodeSelectorRequirement::parse_error`] has something to
    /// say: the term then matches nothing.
    #[serde(skip)]
    unparsable: bool,
}

/// Upstream's rule for a label value (`validation.IsValidLabelValue`): at most 63
/// characters, empty or alphanumeric at both ends with `-`, `_` or `.` between.
pub fn is_valid_label_value(v: &str) -> bool {
    let b = v.as_bytes();
    let inner = |c: &u8| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.');
    b.len() <= 63
        && (b.is_empty()
            || (b[0].is_ascii_alphanumeric() && b[b.len() - 1].is_ascii_alphanumeric() && b.iter().all(inner)))
}

/// A requirement as written, before its values are held.
#[derive(Deserialize)]
struct RawRequirement {
    key: Symbol,
    operator: NodeSelectorOperator,
    #[serde(default)]
    values: SmallVec<[String; 2]>,
}

impl From<RawRequirement> for NodeSelectorRequirement {
    fn from(r: RawRequirement) -> Self {
        NodeSelectorRequirement::held(r.key, r.operator, r.values.iter().map(String::as_str))
    }
}

impl NodeSelectorRequirement {
    /// A requirement; validated when its term is.
    pub fn new(key: &str, operator: NodeSelectorOperator, values: &[&str]) -> Self {
        NodeSelectorRequirement::held(Symbol::intern(key), operator, values.iter().copied())
    }

    fn held<'a>(key: Symbol, operator: NodeSelectorOperator, values: impl IntoIterator<Item = &'a str>) -> Self {
        let holds = super::intern::Holds::acquire(values);
        NodeSelectorRequirement {
            key,
            operator,
            values: SmallVec::from_slice(holds.symbols()),
            holds,
            bound: 0,
            unparsable: false,
        }
    }

    /// Rejects what the API server rejects (upstream `ValidateNodeSelectorRequirement`:
    /// value counts by operator, an empty key); marks what only the scheduler's parser
    /// refuses (`label`: a `matchExpressions` entry, whose values are label values).
    /// `path` is written only for an error.
    fn validate(&mut self, path: &dyn Fn() -> String, label: bool) -> Result<(), SelectorError> {
        if self.key.is_empty() {
            return Err(SelectorError::EmptyKey { path: path() });
        }
        let operator = self.operator.as_str();
        match self.operator {
            NodeSelectorOperator::In | NodeSelectorOperator::NotIn if self.values.is_empty() => {
                return Err(SelectorError::EmptyValues { path: path(), operator });
            }
            NodeSelectorOperator::Exists | NodeSelectorOperator::DoesNotExist if !self.values.is_empty() => {
                return Err(SelectorError::UnexpectedValues { path: path(), operator });
            }
            NodeSelectorOperator::Gt | NodeSelectorOperator::Lt => match self.values.as_slice() {
                [v] => self.bound = v.with_str(|v| v.parse::<i64>().unwrap_or(0)),
                _ => {
                    return Err(SelectorError::NotAnInteger {
                        path: path(),
                        operator,
                        values: self.values.iter().map(ToString::to_string).collect(),
                    });
                }
            },
            _ => {}
        }
        self.unparsable = label && self.parse_error().is_some();
        Ok(())
    }

    /// Why upstream's scheduler could not parse this label requirement (upstream
    /// `labels.NewRequirement`), naming the value: `Gt`/`Lt` with a value that is not an
    /// integer, or a value that is not a valid label value. `None` when it parses.
    /// Such a requirement loads (the API server accepts it) and its term matches
    /// nothing.
    ///
    /// ```
    /// use schedkit::model::{NodeSelectorOperator, NodeSelectorRequirement};
    /// let r = NodeSelectorRequirement::new("zone", NodeSelectorOperator::NotIn, &["a b"]);
    /// assert!(r.parse_error().unwrap().starts_with("values[0]: \"a b\""));
    /// let r = NodeSelectorRequirement::new("gpus", NodeSelectorOperator::Gt, &["x"]);
    /// assert!(r.parse_error().unwrap().contains("must be an integer"));
    /// assert_eq!(NodeSelectorRequirement::new("zone", NodeSelectorOperator::In, &["a"]).parse_error(), None);
    /// ```
    pub fn parse_error(&self) -> Option<String> {
        if matches!(self.operator, NodeSelectorOperator::Gt | NodeSelectorOperator::Lt)
            && let [v] = self.values.as_slice()
            && v.with_str(|v| v.parse::<i64>().is_err())
        {
            return Some(format!(
                "values[0]: {:?}: for the {} operator, the value must be an integer",
                v.to_string(),
                self.operator.as_str()
            ));
        }
        self.values.iter().enumerate().find(|(_, v)| !v.with_str(is_valid_label_value)).map(|(i, v)| {
            format!(
                "values[{i}]: {:?}: not a valid label value (at most 63 characters, empty or starting and ending \
                 with an alphanumeric character with '-', '_', '.' or alphanumerics between)",
                v.to_string()
            )
        })
    }

    /// Whether a label value (or its absence) satisfies the requirement. A label that
    /// is not an integer fails `Gt`/`Lt`, as upstream. A requirement upstream cannot
    /// parse ([`NodeSelectorRequirement::parse_error`]) is handled by its term, which
    /// then matches nothing; on its own it compares as written.
    #[inline]
    pub fn matches_value(&self, value: Option<Symbol>) -> bool {
        match self.operator {
            NodeSelectorOperator::In => value.is_some_and(|v| self.values.contains(&v)),
            NodeSelectorOperator::NotIn => value.is_none_or(|v| !self.values.contains(&v)),
            NodeSelectorOperator::Exists => value.is_some(),
            NodeSelectorOperator::DoesNotExist => value.is_none(),
            NodeSelectorOperator::Gt | NodeSelectorOperator::Lt => self.compare_integer(value),
        }
    }

    /// `Gt`/`Lt`: kept out of line so the set operators stay small enough to inline.
    #[inline(never)]
    fn compare_integer(&self, value: Option<Symbol>) -> bool {
        // `with_str`, not `as_str`: a node's label value is not pinned for a comparison.
        let Some(v) = value.and_then(|v| v.with_str(|v| v.parse::<i64>().ok())) else { return false };
        if self.operator == NodeSelectorOperator::Gt { v > self.bound } else { v < self.bound }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawNodeSelectorTerm {
    #[serde(default)]
    match_expressions: Vec<NodeSelectorRequirement>,
    #[serde(default)]
    match_fields: Vec<NodeSelectorRequirement>,
}

impl TryFrom<RawNodeSelectorTerm> for NodeSelectorTerm {
    type Error = SelectorError;
    fn try_from(raw: RawNodeSelectorTerm) -> Result<Self, Self::Error> {
        let mut t = NodeSelectorTerm { match_expressions: raw.match_expressions, match_fields: raw.match_fields };
        t.validate_lazily(&|| "term".to_owned())?;
        Ok(t)
    }
}

/// One term of a node selector: all expressions and all fields must hold.
/// Validated on deserialization; built in code, call [`NodeSelectorTerm::validate`]
/// (done for you by [`NodeSelector::new`] and pod validation).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", try_from = "RawNodeSelectorTerm")]
pub struct NodeSelectorTerm {
    /// Requirements on node labels.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub match_expressions: Vec<NodeSelectorRequirement>,
    /// Requirements on node fields (`metadata.name` only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub match_fields: Vec<NodeSelectorRequirement>,
}

/// The field key `matchFields` supports.
pub const FIELD_METADATA_NAME: &str = "metadata.name";

impl NodeSelectorTerm {
    /// Validates and prepares the term; `path` names it in errors.
    pub fn validate(&mut self, path: &str) -> Result<(), SelectorError> {
        self.validate_lazily(&|| path.to_owned())
    }

    /// [`NodeSelectorTerm::validate`] with the path written only for an error: every
    /// pod with a required node affinity is validated as it is taken, and formatting
    /// the paths of valid terms was a tenth of a converted pod's time.
    pub(crate) fn validate_lazily(&mut self, path: &dyn Fn() -> String) -> Result<(), SelectorError> {
        for (i, r) in self.match_expressions.iter_mut().enumerate() {
            r.validate(&|| format!("{}.matchExpressions[{i}]", path()), true)?;
        }
        for (i, r) in self.match_fields.iter_mut().enumerate() {
            let p = || format!("{}.matchFields[{i}]", path());
            if r.key.as_str() != FIELD_METADATA_NAME
                || !matches!(r.operator, NodeSelectorOperator::In | NodeSelectorOperator::NotIn)
            {
                return Err(SelectorError::UnsupportedField {
                    path: p(),
                    key: r.key.as_str().to_owned(),
                    operator: r.operator.as_str(),
                });
            }
            r.validate(&p, false)?;
        }
        Ok(())
    }

    /// What upstream's scheduler could not parse in this term, as `(field path, why)`
    /// under `path` ([`NodeSelectorRequirement::parse_error`]): when any, the term
    /// matches nothing. Valid after [`NodeSelectorTerm::validate`] (done on load).
    pub fn parse_errors(&self, path: &str) -> Vec<(String, String)> {
        self.match_expressions
            .iter()
            .enumerate()
            .filter(|(_, r)| r.unparsable)
            .filter_map(|(i, r)| r.parse_error().map(|e| (format!("{path}.matchExpressions[{i}]"), e)))
            .collect()
    }

    /// Whether upstream's scheduler could parse every requirement (else the term
    /// matches nothing).
    #[inline]
    pub fn is_parsable(&self) -> bool {
        !self.match_expressions.iter().any(|r| r.unparsable)
    }

    /// Whether the term matches a node. An empty term matches nothing, as upstream, and
    /// so does a term with a requirement upstream cannot parse (its lazy-error node
    /// selector skips such a term; the other terms of a selector still match).
    #[inline]
    pub fn matches(&self, labels: &Labels, node_name: Symbol) -> bool {
        let (exprs, fields) = (self.match_expressions.as_slice(), self.match_fields.as_slice());
        if exprs.is_empty() && fields.is_empty() {
            return false;
        }
        for r in exprs {
            if r.unparsable || !r.matches_value(labels.get(r.key)) {
                return false;
            }
        }
        for r in fields {
            if !r.matches_value(Some(node_name)) {
                return false;
            }
        }
        true
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawNodeSelector {
    #[serde(default)]
    node_selector_terms: Vec<NodeSelectorTerm>,
}

/// `v1.NodeSelector`: the terms are ORed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", try_from = "RawNodeSelector")]
pub struct NodeSelector {
    /// Alternatives; a node matching any term matches.
    pub node_selector_terms: Vec<NodeSelectorTerm>,
}

impl TryFrom<RawNodeSelector> for NodeSelector {
    type Error = SelectorError;
    fn try_from(raw: RawNodeSelector) -> Result<Self, Self::Error> {
        NodeSelector::new(raw.node_selector_terms)
    }
}

impl NodeSelector {
    /// Builds a validated node selector.
    pub fn new(mut terms: Vec<NodeSelectorTerm>) -> Result<Self, SelectorError> {
        for (i, t) in terms.iter_mut().enumerate() {
            t.validate_lazily(&|| format!("nodeSelectorTerms[{i}]"))?;
        }
        Ok(NodeSelector { node_selector_terms: terms })
    }

    /// What upstream's scheduler could not parse, per term, as `(field path, why)`
    /// under `path` ([`NodeSelectorTerm::parse_errors`]). Upstream's strict
    /// `NewNodeSelector` refuses such a selector; its lazy one (a pod's required node
    /// affinity) skips the terms concerned.
    pub fn parse_errors(&self, path: &str) -> Vec<(String, String)> {
        self.node_selector_terms
            .iter()
            .enumerate()
            .flat_map(|(i, t)| t.parse_errors(&format!("{path}.nodeSelectorTerms[{i}]")))
            .collect()
    }

    /// Whether any term matches the node.
    #[inline]
    pub fn matches(&self, labels: &Labels, node_name: Symbol) -> bool {
        for t in &self.node_selector_terms {
            if t.matches(labels, node_name) {
                return true;
            }
        }
        false
    }
}

#[cfg(test)]
#[path = "labels_tests.rs"]
mod tests;
