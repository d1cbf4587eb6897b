//! A pod's node selection compiled once per cycle into flat matchers over a node's
//! interned labels: `nodeSelector`, the required terms and the weighted preferred
//! terms, each a run of `(key, operator, values)` entries in one array.
//!
//! Semantics are upstream's (`staging/src/k8s.io/component-helpers/scheduling/corev1/nodeaffinity/nodeaffinity.go`,
//! `apimachinery/pkg/labels/selector.go` `Requirement.Matches`):
//! - terms are ORed, the requirements of a term ANDed; a term with no requirement
//!   matches nothing, and so does a term with a requirement upstream's lazy parser
//!   rejects (the other terms still match);
//! - `In` needs the key with one of the values, `NotIn` the key absent or another
//!   value, `Exists` / `DoesNotExist` only the key;
//! - `Gt` / `Lt` parse the node's value as a base-10 `int64` each time (a value that
//!   is not an integer, or a missing key, fails);
//! - `matchFields` supports `metadata.name` with `In` / `NotIn` only (validation
//!   refuses the rest), compared with the node's name.

use smallvec::SmallVec;

use crate::model::{Labels, NodeSelector, NodeSelectorOperator, NodeSelectorTerm, PreferredSchedulingTerm, Symbol};

/// What one flat entry tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Test {
    /// The label is one of the values.
    In,
    /// The label is absent or none of the values.
    NotIn,
    /// The label is present.
    Exists,
    /// The label is absent.
    DoesNotExist,
    /// The label is an integer greater than the bound.
    Gt(i64),
    /// The label is an integer less than the bound.
    Lt(i64),
    /// The node's name is one of the values (`matchFields` `metadata.name In`).
    NameIn,
    /// The node's name is none of the values.
    NameNotIn,
}

/// One requirement: its key, its test and its values (`values[lo..hi]` of the
/// matcher).
#[derive(Debug, Clone, Copy)]
struct Entry {
    key: Symbol,
    test: Test,
    lo: u32,
    hi: u32,
}

/// A run of entries that must all hold (`entries[lo..hi]`), with the weight a
/// preferred term adds. A term that can match nothing has no run.
#[derive(Debug, Clone, Copy)]
struct Term {
    lo: u32,
    hi: u32,
    weight: i64,
    never: bool,
}

/// Flat matchers for one pod: evaluated per node without following the pod's
/// spec, with one label lookup per requirement and integer compares.
#[derive(Debug, Clone, Default)]
pub(crate) struct CompiledSelector {
    entries: Vec<Entry>,
    values: Vec<Symbol>,
    /// `nodeSelector` as `In` entries (`entries[..selector_end]`), all required.
    selector_end: u32,
    /// The required terms (ORed), `None` when the pod has no required affinity.
    required: Option<SmallVec<[Term; 2]>>,
    /// The preferred terms with their weights.
    preferred: SmallVec<[Term; 2]>,
}

impl CompiledSelector {
    /// Compiles `nodeSelector`, the required node selector and the preferred terms.
    pub(crate) fn new(
        node_selector: &Labels,
        required: Option<&NodeSelector>,
        preferred: &[PreferredSchedulingTerm],
    ) -> Self {
        let mut c = CompiledSelector::default();
        for (k, v) in node_selector.iter() {
            c.push_entry(k, Test::In, std::slice::from_ref(&v));
        }
        c.selector_end = c.entries.len() as u32;
        c.required = required.map(|r| r.node_selector_terms.iter().map(|t| c.push_term(t, 0)).collect());
        c.preferred = preferred.iter().map(|p| c.push_term(&p.preference, i64::from(p.weight))).collect();
        c
    }

    /// Compiles only preferred terms (the profile's `addedAffinity` preferences).
    pub(crate) fn preferred_only(preferred: &[PreferredSchedulingTerm]) -> Self {
        CompiledSelector::new(&Labels::new(), None, preferred)
    }

    fn push_entry(&mut self, key: Symbol, test: Test, values: &[Symbol]) {
        let lo = self.values.len() as u32;
        self.values.extend_from_slice(values);
        self.entries.push(Entry { key, test, lo, hi: self.values.len() as u32 });
    }

    fn push_term(&mut self, t: &NodeSelectorTerm, weight: i64) -> Term {
        let lo = self.entries.len() as u32;
        let never = !t.is_parsable() || (t.match_expressions.is_empty() && t.match_fields.is_empty());
        if !never {
            for r in &t.match_expressions {
                let test = match r.operator {
                    NodeSelectorOperator::In => Test::In,
                    NodeSelectorOperator::NotIn => Test::NotIn,
                    NodeSelectorOperator::Exists => Test::Exists,
                    NodeSelectorOperator::DoesNotExist => Test::DoesNotExist,
                    NodeSelectorOperator::Gt => Test::Gt(r.bound()),
                    NodeSelectorOperator::Lt => Test::Lt(r.bound()),
                };
                self.push_entry(r.key, test, &r.values);
            }
            for r in &t.match_fields {
                // Validation admits only `metadata.name` with In / NotIn.
                let test = if r.operator == NodeSelectorOperator::NotIn { Test::NameNotIn } else { Test::NameIn };
                self.push_entry(r.key, test, &r.values);
            }
        }
        Term { lo, hi: self.entries.len() as u32, weight, never }
    }

    /// Whether the node passes `nodeSelector` and the required terms (upstream
    /// `RequiredNodeAffinity.Match`).
    #[inline]
    pub(crate) fn required_matches(&self, labels: &Labels, node_name: Symbol) -> bool {
        let sel = &self.entries[..self.selector_end as usize];
        for e in sel {
            if labels.get(e.key) != Some(self.values[e.lo as usize]) {
                return false;
            }
        }
        match &self.required {
            None => true,
            Some(terms) => terms.iter().any(|t| self.term_matches(t, labels, node_name)),
        }
    }

    /// Whether the pod has preferred terms.
    pub(crate) fn has_preferred(&self) -> bool {
        !self.preferred.is_empty()
    }

    /// The sum of the weights of the preferred terms the node matches.
    #[inline]
    pub(crate) fn preferred_score(&self, labels: &Labels, node_name: Symbol) -> i64 {
        let mut sum = 0;
        for t in &self.preferred {
            if self.term_matches(t, labels, node_name) {
                sum += t.weight;
            }
        }
        sum
    }

    #[inline]
    fn term_matches(&self, t: &Term, labels: &Labels, node_name: Symbol) -> bool {
        if t.never {
            return false;
        }
        for e in &self.entries[t.lo as usize..t.hi as usize] {
            let values = &self.values[e.lo as usize..e.hi as usize];
            let ok = match e.test {
                Test::In => labels.get(e.key).is_some_and(|v| values.contains(&v)),
                Test::NotIn => labels.get(e.key).is_none_or(|v| !values.contains(&v)),
                Test::Exists => labels.get(e.key).is_some(),
                Test::DoesNotExist => labels.get(e.key).is_none(),
                Test::Gt(b) => integer_label(labels.get(e.key)).is_some_and(|v| v > b),
                Test::Lt(b) => integer_label(labels.get(e.key)).is_some_and(|v| v < b),
                Test::NameIn => values.contains(&node_name),
                Test::NameNotIn => !values.contains(&node_name),
            };
            if !ok {
                return false;
            }
        }
        true
    }
}

/// A label value as upstream's `strconv.ParseInt(v, 10, 64)` reads it for `Gt`/`Lt`
/// (an optional sign, decimal digits, no spaces); `None` when absent or not an
/// integer. Kept out of line: the set operators are the common case.
#[inline(never)]
fn integer_label(value: Option<Symbol>) -> Option<i64> {
    value?.with_str(|v| v.parse::<i64>().ok())
}

#[cfg(test)]
#[path = "node_affinity_compiled_tests.rs"]
mod tests;
