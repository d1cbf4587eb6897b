//! [`PreFilterResult`], the node set a PreFilter plugin narrows a cycle to, by name or
//! by position in the cycle's snapshot ([`NodePositions`]).

use ahash::AHashSet;

use crate::model::Symbol;
use crate::snapshot::Snapshot;

/// Narrows the nodes a pod may go to, computed in PreFilter (upstream
/// `framework.PreFilterResult`, `pkg/scheduler/framework/types.go`).
///
/// A plugin gives its set in one of two forms: node names ([`PreFilterResult::nodes`],
/// [`PreFilterResult::from_names`]), or positions in the snapshot its PreFilter was
/// handed ([`PreFilterResult::at_positions`]), which the cycle turns into its candidate
/// nodes without a lookup per node. A result with neither means "all nodes"; a result
/// with both admits the nodes in both. Results of several plugins are intersected
/// ([`PreFilterResult::merge`], upstream's `Merge`).
///
/// ```
/// use schedkit::framework::{NodePositions, PreFilterResult};
/// let by_name = PreFilterResult::nodes(["a", "b"]);
/// assert!(!by_name.all_nodes());
/// let by_position = PreFilterResult::at_positions(NodePositions::from_positions(3, [0, 2]));
/// assert_eq!(by_position.node_positions.as_ref().map(NodePositions::len), Some(2));
/// assert!(PreFilterResult::default().all_nodes());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PreFilterResult {
    /// The only nodes worth filtering, by name (`None`: no narrowing by name).
    pub node_names: Option<AHashSet<Symbol>>,
    /// The only nodes worth filtering, by position in the cycle's snapshot
    /// (`None`: no narrowing by position).
    pub node_positions: Option<NodePositions>,
}

impl PreFilterResult {
    /// A result limited to the given nodes.
    pub fn nodes<'a>(names: impl IntoIterator<Item = &'a str>) -> PreFilterResult {
        PreFilterResult::from_names(names.into_iter().map(Symbol::intern).collect())
    }

    /// A result limited to the nodes named in `names`.
    pub fn from_names(names: AHashSet<Symbol>) -> PreFilterResult {
        PreFilterResult { node_names: Some(names), node_positions: None }
    }

    /// A result limited to the nodes at `positions` of the snapshot the plugin's
    /// PreFilter was given (valid for that cycle only).
    pub fn at_positions(positions: NodePositions) -> PreFilterResult {
        PreFilterResult { node_names: None, node_positions: Some(positions) }
    }

    /// Whether every node remains.
    pub fn all_nodes(&self) -> bool {
        self.node_names.is_none() && self.node_positions.is_none()
    }

    /// Intersection of two results, as upstream `PreFilterResult.Merge`: "all nodes"
    /// leaves the other as it is; two sets of the same form intersect; a set by name
    /// and one by position are both kept (a node must be in both).
    #[must_use]
    pub fn merge(self, other: PreFilterResult) -> PreFilterResult {
        let node_names = match (self.node_names, other.node_names) {
            (None, b) => b,
            (a, None) => a,
            (Some(a), Some(b)) => Some(a.intersection(&b).copied().collect()),
        };
        let node_positions = match (self.node_positions, other.node_positions) {
            (None, b) => b,
            (a, None) => a,
            (Some(mut a), Some(b)) => {
                a.intersect_with(&b);
                Some(a)
            }
        };
        PreFilterResult { node_names, node_positions }
    }

    /// Whether the node at `position` of `snap` (the cycle's snapshot) is in the set.
    pub fn admits(&self, snap: &Snapshot, position: usize) -> bool {
        self.node_positions.as_ref().is_none_or(|p| p.contains(position))
            && self
                .node_names
                .as_ref()
                .is_none_or(|n| snap.nodes().get(position).is_some_and(|i| n.contains(&i.name())))
    }

    /// Folds a set by name into the set by position when both are present, so the
    /// result has one form and its emptiness is known (PreFilter's "didn't satisfy
    /// plugin(s)" check).
    pub(crate) fn resolve(&mut self, snap: &Snapshot) {
        if let (Some(names), Some(positions)) = (&self.node_names, &mut self.node_positions) {
            let mut by_name = NodePositions::new(positions.capacity());
            for i in names.iter().filter_map(|&n| snap.index_of(n)) {
                by_name.insert(i);
            }
            positions.intersect_with(&by_name);
            self.node_names = None;
        }
    }

    /// Whether the set admits no node (after [`PreFilterResult::resolve`]).
    pub(crate) fn is_empty(&self) -> bool {
        self.node_names.as_ref().is_some_and(|n| n.is_empty())
            || self.node_positions.as_ref().is_some_and(NodePositions::is_empty)
    }
}

/// A set of node positions in one snapshot: one bit per position below
/// [`NodePositions::capacity`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodePositions {
    words: Vec<u64>,
    capacity: usize,
}

impl NodePositions {
    /// An empty set for positions below `capacity` (the snapshot's node count).
    pub fn new(capacity: usize) -> NodePositions {
        NodePositions { words: vec![0; capacity.div_ceil(64)], capacity }
    }

    /// The set of `positions` below `capacity` (others are left out).
    pub fn from_positions(capacity: usize, positions: impl IntoIterator<Item = usize>) -> NodePositions {
        let mut s = NodePositions::new(capacity);
        for i in positions {
            s.insert(i);
        }
        s
    }

    /// The bound positions stay below.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Adds `i` (ignored at or past the capacity).
    #[inline]
    pub fn insert(&mut self, i: usize) {
        if i < self.capacity {
            self.words[i / 64] |= 1 << (i % 64);
        }
    }

    /// Removes `i`.
    #[inline]
    pub fn remove(&mut self, i: usize) {
        if i < self.capacity {
            self.words[i / 64] &= !(1 << (i % 64));
        }
    }

    /// Whether `i` is in the set.
    #[inline]
    pub fn contains(&self, i: usize) -> bool {
        i < self.capacity && self.words[i / 64] & (1 << (i % 64)) != 0
    }

    /// Number of positions in the set.
    pub fn len(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|&w| w == 0)
    }

    /// Keeps only the positions also in `other`.
    pub fn intersect_with(&mut self, other: &NodePositions) {
        for (i, w) in self.words.iter_mut().enumerate() {
            *w &= other.words.get(i).copied().unwrap_or(0);
        }
    }

    /// Calls `f` with each position, ascending (a plain loop over the words: cheaper
    /// per position than [`NodePositions::iter`]).
    #[inline]
    pub fn for_each(&self, mut f: impl FnMut(usize)) {
        for (w, &word) in self.words.iter().enumerate() {
            let mut word = word;
            while word != 0 {
                f(w * 64 + word.trailing_zeros() as usize);
                word &= word - 1;
            }
        }
    }

    /// The positions, ascending.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.words.iter().enumerate().flat_map(|(w, &word)| {
            let mut word = word;
            std::iter::from_fn(move || {
                (word != 0).then(|| {
                    let i = w * 64 + word.trailing_zeros() as usize;
                    word &= word - 1;
                    i
                })
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{NodePositions, PreFilterResult};
    use crate::snapshot::Snapshot;
    use crate::testing::NodeBuilder;
    use proptest::prelude::*;

    fn snap(n: usize) -> Snapshot {
        Snapshot::from_nodes(
            (0..n).map(|i| {
                crate::snapshot::NodeInfo::new(std::sync::Arc::new(NodeBuilder::new(&format!("n{i}")).build()))
            }),
        )
    }

    /// Upstream `TestPreFilterResultMerge` (`pkg/scheduler/framework/types_test.go`):
    /// "all nodes" (nil) on either side leaves the other; sets intersect, an empty
    /// one on either side giving an empty result. Then the same cases by position.
    #[test]
    fn merge_like_upstream() {
        let all = PreFilterResult::default;
        let s = |n: &[&str]| PreFilterResult::nodes(n.iter().copied());
        let cases = [
            ("all nil", all(), all(), all()),
            ("nil receiver empty input", all(), s(&[]), s(&[])),
            ("empty receiver nil input", s(&[]), all(), s(&[])),
            ("empty receiver empty input", s(&[]), s(&[]), s(&[])),
            ("nil receiver populated input", all(), s(&["node1"]), s(&["node1"])),
            ("empty receiver populated input", s(&[]), s(&["node1"]), s(&[])),
            ("populated receiver nil input", s(&["node1"]), all(), s(&["node1"])),
            ("populated receiver empty input", s(&["node1"]), s(&[]), s(&[])),
            ("populated receiver and input", s(&["node1", "node2"]), s(&["node2", "node3"]), s(&["node2"])),
        ];
        let by_position = |r: &PreFilterResult| {
            r.node_names.as_ref().map_or_else(PreFilterResult::default, |n| {
                let at = n.iter().map(|s| s.as_str()[4..].parse::<usize>().unwrap());
                PreFilterResult::at_positions(NodePositions::from_positions(4, at))
            })
        };
        for (name, a, b, want) in cases {
            assert_eq!(by_position(&a).merge(by_position(&b)), by_position(&want), "{name}, by position");
            assert_eq!(a.merge(b), want, "{name}");
        }
    }

    proptest! {
        /// Every form and mix of forms admits exactly the intersection of the sets
        /// merged, before and after resolving to positions, and is empty exactly when
        /// that intersection is.
        #[test]
        fn merged_forms_admit_the_intersection(
            n in 1usize..150,
            sets in prop::collection::vec((any::<bool>(), prop::collection::vec(0usize..160, 0..40)), 1..4),
        ) {
            let snap = snap(n);
            let mut merged = PreFilterResult::default();
            let mut want: Vec<bool> = vec![true; n];
            for (by_name, members) in &sets {
                let r = if *by_name {
                    PreFilterResult::from_names(members.iter().map(|i| crate::model::Symbol::intern(&format!("n{i}"))).collect())
                } else {
                    PreFilterResult::at_positions(NodePositions::from_positions(n, members.iter().copied()))
                };
                for (i, w) in want.iter_mut().enumerate() {
                    *w &= members.contains(&i);
                }
                merged = merged.merge(r);
            }
            for (i, &w) in want.iter().enumerate() {
                prop_assert_eq!(merged.admits(&snap, i), w);
            }
            merged.resolve(&snap);
            for (i, &w) in want.iter().enumerate() {
                prop_assert_eq!(merged.admits(&snap, i), w);
            }
            if let Some(p) = &merged.node_positions {
                prop_assert_eq!(p.iter().collect::<Vec<_>>(), (0..n).filter(|&i| want[i]).collect::<Vec<_>>());
                let mut each = Vec::new();
                p.for_each(|i| each.push(i));
                prop_assert_eq!(each, p.iter().collect::<Vec<_>>());
                prop_assert!(merged.node_names.is_none());
                prop_assert_eq!(merged.is_empty(), !want.iter().any(|&w| w));
            }
        }
    }
}
