//! Node selectors matched over a block of up to 64 nodes at once, one bit per node:
//! each requirement's operator and values are looked at once per block instead of
//! once per node (NodeAffinity's batched Filter and Score).

use super::{Labels, NodeSelector, NodeSelectorOperator, NodeSelectorRequirement, NodeSelectorTerm, Symbol};

/// Most nodes a mask covers.
pub(crate) const MASK_NODES: usize = 64;

/// The labels and names of a block of nodes, for the `*_mask` matchers: node `i`
/// of the block is bit `i` of a mask.
#[derive(Debug)]
pub(crate) struct NodeBlock<'a> {
    labels: [&'a Labels; MASK_NODES],
    names: [Symbol; MASK_NODES],
    len: usize,
}

/// The labels of the unused places of a block.
static NO_LABELS: Labels = Labels::new();

impl<'a> NodeBlock<'a> {
    /// The block of `nodes` (`(labels, name)` per node; only the first
    /// [`MASK_NODES`] are taken).
    pub(crate) fn new(nodes: impl IntoIterator<Item = (&'a Labels, Symbol)>) -> Self {
        let mut b = NodeBlock { labels: [&NO_LABELS; MASK_NODES], names: [Symbol::EMPTY; MASK_NODES], len: 0 };
        for (i, (l, n)) in nodes.into_iter().take(MASK_NODES).enumerate() {
            b.labels[i] = l;
            b.names[i] = n;
            b.len = i + 1;
        }
        b
    }

    /// The mask with a bit for every node of the block.
    pub(crate) fn all(&self) -> u64 {
        if self.len == MASK_NODES { u64::MAX } else { (1u64 << self.len) - 1 }
    }

    /// The nodes whose labels have `key` set to `value` (a `nodeSelector` entry).
    pub(crate) fn label_equals_mask(&self, key: Symbol, value: Symbol) -> u64 {
        mask_where(&self.labels[..self.len], |l| l.get(key) == Some(value))
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

impl NodeSelectorRequirement {
    /// [`NodeSelectorRequirement::matches_value`] of each node's value of the key
    /// (`field`: the node's name, for `matchFields`), as a mask.
    fn mask(&self, block: &NodeBlock<'_>, field: bool) -> u64 {
        let values = self.values.as_slice();
        let key = self.key;
        let labels = &block.labels[..block.len];
        if field {
            return mask_where(&block.names[..block.len], |n| self.matches_value(Some(n)));
        }
        match self.operator {
            NodeSelectorOperator::In => mask_where(labels, |l| l.get(key).is_some_and(|v| values.contains(&v))),
            NodeSelectorOperator::NotIn => mask_where(labels, |l| l.get(key).is_none_or(|v| !values.contains(&v))),
            NodeSelectorOperator::Exists => mask_where(labels, |l| l.get(key).is_some()),
            NodeSelectorOperator::DoesNotExist => mask_where(labels, |l| l.get(key).is_none()),
            NodeSelectorOperator::Gt | NodeSelectorOperator::Lt => {
                mask_where(labels, |l| self.matches_value(l.get(key)))
            }
        }
    }
}

impl NodeSelectorTerm {
    /// [`NodeSelectorTerm::matches`] for each node of the block, as a mask.
    pub(crate) fn match_mask(&self, block: &NodeBlock<'_>) -> u64 {
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
    pub(crate) fn match_mask(&self, block: &NodeBlock<'_>) -> u64 {
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
            let block = NodeBlock::new(nodes.iter().zip(syms.iter().copied()));
            let mask = sel.match_mask(&block);
            for (i, l) in nodes.iter().take(MASK_NODES).enumerate() {
                prop_assert_eq!(mask >> i & 1 == 1, sel.matches(l, syms[i]), "node {}", i);
            }
            prop_assert_eq!(mask & !block.all(), 0);
        }
    }
}
