//! The active queue's heap (upstream `pkg/scheduler/backend/heap/heap.go`, which
//! keeps a key -> index map so updates and deletions are O(log n)).
//!
//! Items carry the sort key and timestamp inline, so with a keyed QueueSort
//! (PrioritySort) comparisons touch only this array; positions live in a compact
//! `Vec<u32>` indexed by slot, so moving an item is a store into a small array
//! rather than into the pod's (large, cold) queue entry.

/// One heap item: cached key and timestamp (nanoseconds), the pod's slot, and an
/// insertion sequence that breaks ties first-in first-out (a virtual clock gives
/// many pods the same timestamp).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Item {
    pub(crate) key: i64,
    pub(crate) ts: u64,
    pub(crate) slot: u32,
    pub(crate) seq: u32,
}

/// Children per node: a 4-ary heap is half as deep as a binary one, and a node's
/// children (4 x 24 bytes) share one or two cache lines, so popping from 100,000
/// pods touches fewer lines.
const ARITY: usize = 4;

#[derive(Debug, Default)]
pub(crate) struct IndexedHeap {
    items: Vec<Item>,
}

/// The order: by cached key, or by calling the QueueSort plugin on the slots.
pub(crate) trait Order {
    fn less(&self, a: &Item, b: &Item) -> bool;
}

impl IndexedHeap {
    pub(crate) fn len(&self) -> usize {
        self.items.len()
    }

    pub(crate) fn peek(&self) -> Option<u32> {
        self.items.first().map(|i| i.slot)
    }

    pub(crate) fn push(&mut self, item: Item, ord: &impl Order, pos: &mut [u32]) {
        self.items.push(item);
        self.up(self.items.len() - 1, ord, pos);
    }

    pub(crate) fn pop(&mut self, ord: &impl Order, pos: &mut [u32]) -> Option<u32> {
        let n = self.items.len();
        if n == 0 {
            return None;
        }
        self.items.swap(0, n - 1);
        let top = self.items.pop().map(|i| i.slot);
        if !self.items.is_empty() {
            self.down(0, ord, pos);
        }
        top
    }

    /// Removes the item at `at`.
    pub(crate) fn remove_at(&mut self, at: usize, ord: &impl Order, pos: &mut [u32]) {
        let n = self.items.len();
        if at >= n {
            return;
        }
        self.items.swap(at, n - 1);
        self.items.pop();
        if at < self.items.len() {
            self.fix(at, ord, pos);
        }
    }

    /// Replaces the key and timestamp of the item at `at` and restores order.
    pub(crate) fn rekey(&mut self, at: usize, key: i64, ts: u64, ord: &impl Order, pos: &mut [u32]) {
        if let Some(i) = self.items.get_mut(at) {
            i.key = key;
            i.ts = ts;
            self.fix(at, ord, pos);
        }
    }

    fn fix(&mut self, at: usize, ord: &impl Order, pos: &mut [u32]) {
        if !self.up(at, ord, pos) {
            self.down(at, ord, pos);
        }
    }

    fn up(&mut self, mut at: usize, ord: &impl Order, pos: &mut [u32]) -> bool {
        let start = at;
        let item = self.items[at];
        while at > 0 {
            let parent = (at - 1) / ARITY;
            let p = self.items[parent];
            if !ord.less(&item, &p) {
                break;
            }
            self.items[at] = p;
            pos[p.slot as usize] = at as u32;
            at = parent;
        }
        self.items[at] = item;
        pos[item.slot as usize] = at as u32;
        at != start
    }

    fn down(&mut self, mut at: usize, ord: &impl Order, pos: &mut [u32]) {
        let len = self.items.len();
        let item = self.items[at];
        loop {
            let first = ARITY * at + 1;
            if first >= len {
                break;
            }
            let mut best = first;
            for c in first + 1..(first + ARITY).min(len) {
                if ord.less(&self.items[c], &self.items[best]) {
                    best = c;
                }
            }
            if !ord.less(&self.items[best], &item) {
                break;
            }
            self.items[at] = self.items[best];
            pos[self.items[at].slot as usize] = at as u32;
            at = best;
        }
        self.items[at] = item;
        pos[item.slot as usize] = at as u32;
    }
}
