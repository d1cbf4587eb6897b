//! Affinity terms and how they match pods (upstream `framework.AffinityTerm` in
//! `pkg/scheduler/framework/types.go`, `mergeAffinityTermNamespacesIfNotEmpty` in
//! `interpodaffinity/plugin.go`), plus the registry of namespace labels that
//! namespace selectors read.

use std::sync::Arc;

use ahash::AHashMap;
use parking_lot::RwLock;
use smallvec::SmallVec;

use crate::model::{LabelOperator, LabelSelector, LabelSelectorRequirement, Labels, PodAffinityTerm, Symbol};
use crate::snapshot::PodInfo;

/// Labels of namespaces, for `namespaceSelector` in pod affinity terms (upstream
/// reads Namespace objects through an informer). The embedding program keeps it
/// current; the InterPodAffinity plugin reads it once per cycle. A namespace not
/// registered has no labels. Cheap to clone; clones share the registry.
///
/// ```
/// use schedkit::model::Labels;
/// use schedkit::plugins::inter_pod_affinity::NamespaceLabels;
/// let ns = NamespaceLabels::default();
/// ns.set("team-a", Labels::from_pairs([("team", "a")]));
/// assert_eq!(ns.get("team-a").get_str("team"), Some("a"));
/// assert!(ns.get("unknown").is_empty());
/// ```
#[derive(Debug, Clone, Default)]
pub struct NamespaceLabels {
    inner: Arc<RwLock<AHashMap<Symbol, Labels>>>,
}

impl NamespaceLabels {
    /// Adds or replaces a namespace's labels.
    pub fn set(&self, namespace: &str, labels: Labels) {
        self.inner.write().insert(Symbol::intern(namespace), labels);
    }

    /// Forgets a namespace; returns whether it was present.
    pub fn remove(&self, namespace: &str) -> bool {
        Symbol::lookup(namespace).is_some_and(|ns| self.inner.write().remove(&ns).is_some())
    }

    /// A copy of a namespace's labels (empty when unknown).
    pub fn get(&self, namespace: &str) -> Labels {
        Symbol::lookup(namespace).map(|ns| self.labels_of(ns)).unwrap_or_default()
    }

    pub(crate) fn labels_of(&self, namespace: Symbol) -> Labels {
        self.inner.read().get(&namespace).cloned().unwrap_or_default()
    }

    /// Registered namespaces whose labels `selector` matches.
    pub(crate) fn matching(&self, selector: &LabelSelector) -> SmallVec<[Symbol; 4]> {
        self.inner.read().iter().filter(|(_, l)| selector.matches(l)).map(|(&ns, _)| ns).collect()
    }
}

/// A term of the incoming pod, resolved once per cycle: `matchLabelKeys` and
/// `mismatchLabelKeys` merged into the selector with the pod's own values (what the
/// API server does on pod creation since v1.31), and `namespaceSelector` unrolled
/// into the namespace list (upstream `mergeAffinityTermNamespacesIfNotEmpty`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ResolvedTerm {
    pub(crate) selector: Option<LabelSelector>,
    pub(crate) namespaces: SmallVec<[Symbol; 4]>,
    /// An empty `namespaceSelector`: every namespace.
    pub(crate) all_namespaces: bool,
    pub(crate) topology_key: Symbol,
    pub(crate) weight: i32,
}

impl ResolvedTerm {
    pub(crate) fn new(owner: &PodInfo, term: &PodAffinityTerm, weight: i32, namespaces: &NamespaceLabels) -> Self {
        let mut selector = term.label_selector.clone();
        if let Some(sel) = &mut selector {
            let labels = &owner.pod.metadata.labels;
            for (keys, operator) in
                [(&term.match_label_keys, LabelOperator::In), (&term.mismatch_label_keys, LabelOperator::NotIn)]
            {
                for &key in keys {
                    if let Some(value) = labels.get(key) {
                        sel.match_expressions.push(LabelSelectorRequirement {
                            key,
                            operator,
                            values: SmallVec::from_slice(&[value]),
                        });
                    }
                }
            }
        }
        let mut ns: SmallVec<[Symbol; 4]> = SmallVec::new();
        let mut all_namespaces = false;
        if term.namespaces.is_empty() && term.namespace_selector.is_none() {
            ns.push(owner.namespace);
        } else {
            ns.extend(term.namespaces.iter().copied());
        }
        match &term.namespace_selector {
            Some(sel) if sel.is_empty() => all_namespaces = true,
            Some(sel) => ns.extend(namespaces.matching(sel)),
            None => {}
        }
        ResolvedTerm { selector, namespaces: ns, all_namespaces, topology_key: term.topology_key, weight }
    }

    /// Upstream `AffinityTerm.Matches` for a term whose namespace selector was unrolled.
    #[inline]
    pub(crate) fn matches(&self, pod: &PodInfo) -> bool {
        (self.all_namespaces || self.namespaces.contains(&pod.namespace))
            && self.selector.as_ref().is_some_and(|s| s.matches(&pod.pod.metadata.labels))
    }
}

/// Upstream `AffinityTerm.Matches` for a term of an existing pod (`owner`) against
/// `target`, without building the term: namespaces (the owner's own when none are
/// given), `namespaceSelector` against the target namespace's labels, the label
/// selector, and the owner's `matchLabelKeys`/`mismatchLabelKeys` values.
#[inline]
pub(crate) fn existing_term_matches(
    owner: &PodInfo,
    term: &PodAffinityTerm,
    target: &PodInfo,
    target_ns_labels: &Labels,
) -> bool {
    let ns_ok = if term.namespaces.is_empty() && term.namespace_selector.is_none() {
        owner.namespace == target.namespace
    } else {
        term.namespaces.contains(&target.namespace)
            || term.namespace_selector.as_ref().is_some_and(|s| s.matches(target_ns_labels))
    };
    if !ns_ok {
        return false;
    }
    let Some(sel) = &term.label_selector else { return false };
    let labels = &target.pod.metadata.labels;
    if !sel.matches(labels) {
        return false;
    }
    let own = &owner.pod.metadata.labels;
    term.match_label_keys.iter().all(|&k| own.get(k).is_none_or(|v| labels.get(k) == Some(v)))
        && term.mismatch_label_keys.iter().all(|&k| own.get(k).is_none_or(|v| labels.get(k) != Some(v)))
}

/// The pod's required and preferred (anti-)affinity terms, by kind.
pub(crate) fn required_affinity(pod: &PodInfo) -> &[PodAffinityTerm] {
    pod.pod.spec.affinity.as_ref().and_then(|a| a.pod_affinity.as_ref()).map_or(&[], |p| &p.required)
}

pub(crate) fn required_anti_affinity(pod: &PodInfo) -> &[PodAffinityTerm] {
    pod.pod.spec.affinity.as_ref().and_then(|a| a.pod_anti_affinity.as_ref()).map_or(&[], |p| &p.required)
}

pub(crate) fn preferred_affinity(pod: &PodInfo) -> &[crate::model::WeightedPodAffinityTerm] {
    pod.pod.spec.affinity.as_ref().and_then(|a| a.pod_affinity.as_ref()).map_or(&[], |p| &p.preferred)
}

pub(crate) fn preferred_anti_affinity(pod: &PodInfo) -> &[crate::model::WeightedPodAffinityTerm] {
    pod.pod.spec.affinity.as_ref().and_then(|a| a.pod_anti_affinity.as_ref()).map_or(&[], |p| &p.preferred)
}
