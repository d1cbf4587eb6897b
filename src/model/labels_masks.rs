//! Node selectors matched over a block of up to 64 nodes at once, one bit per node:
//! each requirement's operator and values are looked at once per block instead of
//! once per node (NodeAffinity's batched Filter and Score).

use super::{Labels, NodeSelector, NodeSelectorOperator, NodeSelectorRequirement, NodeSelectorTerm, Symbol};

/// Most nodes a mask covers.
pub(crate) const MASK_NODES: usize = 64;

/// The value id of a node without the label in [`BlockSource::values`] (never a
/// [`Symbol::id`]).
pub(crate) const NO_VALUE: u32 = u32::MAX;

/// Where a [`NodeBlock`] reads its nodes' label values and names.
pub(crate) trait BlockSource {
    /// How many nodes (at most [`MASK_NODES`]).
    fn len(&self) -> usize;
    /// Writes the [`Symbol::id`] of each node's value of `key` (or [`NO_VALUE`])
    /// into `out[..self.len()]`.
    fn values(&self, key: Symbol, out: &mut [u32; MASK_NODES]);
    /// Node `i`'s name.
    fn name(&self, i: usize) -> Symbol;
}

/// A block of nodes as `(labels, name)` pairs (tests, callers without a snapshot).
impl BlockSource for [(&Labels, Symbol)] {
    fn len(&self) -> usize {
        <[_]>::len(self).min(MASK_NODES)
    }
    fn values(&self, key: Symbol, out: &mut [u32; MASK_NODES]) {
        for (o, (l, _)) in out.iter_mut().zip(self) {
            *o = l.get(key).map_or(NO_VALUE, Symbol::id);
        }
    }
    fn name(&self, i: usize) -> Symbol {
        self[i].1
    }
}

/// A block of up to [`MASK_NODES`] nodes for the `*_mask` matchers: node `i` of the
/// block is bit `i` of a mask. Building one costs nothing per node: the label
/// values are read per requirement, from the source's columns.
pub(crate) struct NodeBlock<'a, S: BlockSource + ?Sized> {
    src: &'a S,
    len: usize,
}

impl<S: BlockSource + ?Sized> std::fmt::Debug for NodeBlock<'_, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeBlock").field("len", &self.len).finish_non_exhaustive()
    }
}

impl<'a, S: BlockSource + ?Sized> NodeBlock<'a, S> {
    /// The block of `src`'s nodes.
    pub(crate) fn new(src: &'a S) -> Self {
        NodeBlock { src, len: src.len().min(MASK_NODES) }
    }

    /// The mask with a bit for every node of the block.
    pub(crate) fn all(&self) -> u64 {
        if self.len == MASK_NODES { u64::MAX } else { (1u64 << self.len) - 1 }
    }

    /// The nodes' value ids of `key`.
    #[inline]
    fn values(&self, key: Symbol) -> [u32; MASK_NODES] {
        let mut out = [NO_VALUE; MASK_NODES];
        self.src.values(key, &mut out);
        out
    }

    /// The nodes whose labels have `key` set to `value` (a `nodeSelector` entry).
    pub(crate) fn label_equals_mask(&self, key: Symbol, value: Symbol) -> u64 {
        let want = value.id();
        mask_where(&self.values(key)[..self.len], |v| v == want)
    }
}

/// Bit `i` set where `f(items[i])` holds.
#[inline]
fn mask_where<T: Copy>(items: &[T], mut f: impl FnMut(T) -> bool) -> u64 {
    let mut m = 0;
    for (i, &x) in items.iter().enumerate() {
        m |= u64::from(f(x)) << i;
    }
    m
}

/// The symbol of a value id ([`NO_VALUE`]: none).
#[inline]
fn symbol_of(v: u32) -> Option<Symbol> {
    (v != NO_VALUE).then(|| Symbol::from_id(v))
}

impl NodeSelectorRequirement {
    /// [`NodeSelectorRequirement::matches_value`] of each node's value of the key
    /// (`field`: the node's name, for `matchFields`), as a mask.
    #[expect(clippy::needless_bitwise_bool, reason = "both compares are cheap: no branch per node")]
    fn mask<S: BlockSource + ?Sized>(&self, block: &NodeBlock<'_, S>, field: bool) -> u64 {
        let n = block.len;
        if field {
            let mut m = 0;
            for i in 0..n {
                m |= u64::from(self.matches_value(Some(block.src.name(i)))) << i;
            }
            return m;
        }
        let vals = block.values(self.key);
        let vals = &vals[..n];
        // `NO_VALUE` is no symbol's id, so `In` needs no separate presence test.
        let ids = self.values.as_slice();
        let has = |v: u32| ids.iter().any(|s| s.id() == v);
        // One or two values (the common shapes) are compared inline, not looped over.
        match (self.operator, ids) {
            (NodeSelectorOperator::In, [a]) => {
                let a = a.id();
                mask_where(vals, |v| v == a)
            }
            (NodeSelectorOperator::In, [a, b]) => {
                let (a, b) = (a.id(), b.id());
                mask_where(vals, |v| (v == a) | (v == b))
            }
            (NodeSelectorOperator::In, _) => mask_where(vals, has),
            (NodeSelectorOperator::NotIn, [a]) => {
                let a = a.id();
                mask_where(vals, |v| v != a)
            }
            (NodeSelectorOperator::NotIn, [a, b]) => {
                let (a, b) = (a.id(), b.id());
                mask_where(vals, |v| (v != a) & (v != b))
            }
            (NodeSelectorOperator::NotIn, _) => mask_where(vals, |v| !has(v)),
            (NodeSelectorOperator::Exists, _) => mask_where(vals, |v| v != NO_VALUE),
            (NodeSelectorOperator::DoesNotExist, _) => mask_where(vals, |v| v == NO_VALUE),
            (NodeSelectorOperator::Gt | NodeSelectorOperator::Lt, _) => {
                mask_where(vals, |v| self.matches_value(symbol_of(v)))
            }
        }
    }
}

impl NodeSelectorTerm {
    /// [`NodeSelectorTerm::matches`] for each node of the block, as a mask.
    pub(crate) fn match_mask<S: BlockSource + ?Sized>(&self, block: &NodeBlock<'_, S>) -> u64 {
        if (self.match_expressions.is_empty() && self.match_fields.is_empty()) || !self.is_parsable() {
            return 0;
        }
        let mut m = block.all();
        for r in &self.match_expressions {
            m &= r.mask(block, false);
            if m == 0 {
                return 0;
            }
        }
        for r in &self.match_fields {
            m &= r.mask(block, true);
            if m == 0 {
                return 0;
            }
        }
        m
    }
}

impl NodeSelector {
    /// [`NodeSelector::matches`] for each node of the block, as a mask.
    pub(crate) fn match_mask<S: BlockSource + ?Sized>(&self, block: &NodeBlock<'_, S>) -> u64 {
        let all = block.all();
        let mut m = 0;
        for t in &self.node_selector_terms {
            m |= t.match_mask(block);
            if m == all {
                break;
            }
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// A requirement over keys `k0`..`k2` and values `v0`..`v3` (and integers for
    /// `Gt`/`Lt`).
    fn requirement() -> impl Strategy<Value = NodeSelectorRequirement> {
        (0u8..3, 0u8..6, proptest::collection::vec(0u8..4, 1..3)).prop_map(|(k, op, vals)| {
            let key = format!("k{k}");
            let vals: Vec<String> = vals.iter().map(|v| format!("v{v}")).collect();
            let vals: Vec<&str> = vals.iter().map(String::as_str).collect();
            match op {
                0 => NodeSelectorRequirement::new(&key, NodeSelectorOperator::In, &vals),
                1 => NodeSelectorRequirement::new(&key, NodeSelectorOperator::NotIn, &vals),
                2 => NodeSelectorRequirement::new(&key, NodeSelectorOperator::Exists, &[]),
                3 => NodeSelectorRequirement::new(&key, NodeSelectorOperator::DoesNotExist, &[]),
                4 => NodeSelectorRequirement::new(&key, NodeSelectorOperator::Gt, &["1"]),
                _ => NodeSelectorRequirement::new(&key, NodeSelectorOperator::Lt, &["2"]),
            }
        })
    }

    fn labels() -> impl Strategy<Value = Labels> {
        proptest::collection::vec((0u8..3, 0u8..6), 0..4).prop_map(|pairs| {
            // Values v0..v3 and the integers 0 and 3 (for Gt/Lt).
            Labels::from_pairs(pairs.iter().map(|&(k, v)| {
                let v = if v < 4 { format!("v{v}") } else { ((v - 4) * 3).to_string() };
                (format!("k{k}"), v)
            }))
        })
    }

    proptest! {
        /// The mask of a selector over a block is the per-node `matches`, bit by bit.
        #[test]
        fn masks_agree_with_matches(
            terms in proptest::collection::vec(
                (proptest::collection::vec(requirement(), 0..3), proptest::option::of(0usize..70)),
                0..3,
            ),
            nodes in proptest::collection::vec(labels(), 0..70),
        ) {
            let names: Vec<String> = (0..nodes.len()).map(|i| format!("node-{i}")).collect();
            let terms = terms
                .into_iter()
                .map(|(exprs, field)| NodeSelectorTerm {
                    match_expressions: exprs,
                    match_fields: field
                        .map(|i| NodeSelectorRequirement::new("metadata.name", NodeSelectorOperator::In, &[&format!("node-{i}")]))
                        .into_iter()
                        .collect(),
                })
                .collect();
            let sel = NodeSelector::new(terms).unwrap();
            let syms: Vec<Symbol> = names.iter().map(|n| Symbol::intern(n)).collect();
            let pairs: Vec<(&Labels, Symbol)> = nodes.iter().zip(syms.iter().copied()).collect();
            let block = NodeBlock::new(pairs.as_slice());
            let mask = sel.match_mask(&block);
            for (i, l) in nodes.iter().take(MASK_NODES).enumerate() {
                prop_assert_eq!(mask >> i & 1 == 1, sel.matches(l, syms[i]), "node {}", i);
            }
            prop_assert_eq!(mask & !block.all(), 0);
        }
    }
}
