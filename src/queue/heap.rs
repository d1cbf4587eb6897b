//! The active queue's heap: slot ids ordered by a QueueSort `less`, with each
//! entry's position kept in the slab so updates and deletions are O(log n)
//! (upstream `pkg/scheduler/backend/heap/heap.go`, which keeps a key -> index map).

/// Where a slot sits in the heap is stored by the caller (`pos_of`/`set_pos`), so the
/// heap holds only `u32` slot ids and moving one is a plain store.
#[derive(Debug, Default)]
pub(crate) struct IndexedHeap {
    items: Vec<u32>,
}

/// What the heap needs from its owner: an order and a place to record positions.
pub(crate) trait HeapCtx {
    fn less(&self, a: u32, b: u32) -> bool;
    fn set_pos(&mut self, slot: u32, pos: usize);
}

impl IndexedHeap {
    pub(crate) fn len(&self) -> usize {
        self.items.len()
    }

    pub(crate) fn peek(&self) -> Option<u32> {
        self.items.first().copied()
    }

    pub(crate) fn push(&mut self, slot: u32, ctx: &mut impl HeapCtx) {
        self.items.push(slot);
        let i = self.items.len() - 1;
        ctx.set_pos(slot, i);
        self.up(i, ctx);
    }

    pub(crate) fn pop(&mut self, ctx: &mut impl HeapCtx) -> Option<u32> {
        let n = self.items.len();
        if n == 0 {
            return None;
        }
        self.items.swap(0, n - 1);
        let top = self.items.pop();
        if !self.items.is_empty() {
            ctx.set_pos(self.items[0], 0);
            self.down(0, ctx);
        }
        top
    }

    /// Removes the slot at `pos`.
    pub(crate) fn remove_at(&mut self, pos: usize, ctx: &mut impl HeapCtx) -> Option<u32> {
        let n = self.items.len();
        if pos >= n {
            return None;
        }
        self.items.swap(pos, n - 1);
        let out = self.items.pop();
        if pos < self.items.len() {
            ctx.set_pos(self.items[pos], pos);
            self.fix(pos, ctx);
        }
        out
    }

    /// Restores order after the slot at `pos` changed.
    pub(crate) fn fix(&mut self, pos: usize, ctx: &mut impl HeapCtx) {
        if pos < self.items.len() && !self.up(pos, ctx) {
            self.down(pos, ctx);
        }
    }

    fn up(&mut self, mut i: usize, ctx: &mut impl HeapCtx) -> bool {
        let start = i;
        let slot = self.items[i];
        while i > 0 {
            let parent = (i - 1) / 2;
            let p = self.items[parent];
            if !ctx.less(slot, p) {
                break;
            }
            self.items[i] = p;
            ctx.set_pos(p, i);
            i = parent;
        }
        self.items[i] = slot;
        ctx.set_pos(slot, i);
        i != start
    }

    fn down(&mut self, mut pos: usize, ctx: &mut impl HeapCtx) {
        let len = self.items.len();
        let slot = self.items[pos];
        loop {
            let left = 2 * pos + 1;
            if left >= len {
                break;
            }
            let right = left + 1;
            let child = if right < len && ctx.less(self.items[right], self.items[left]) { right } else { left };
            if !ctx.less(self.items[child], slot) {
                break;
            }
            self.items[pos] = self.items[child];
            ctx.set_pos(self.items[pos], pos);
            pos = child;
        }
        self.items[pos] = slot;
        ctx.set_pos(slot, pos);
    }
}
