//! The active queue: its heap order (cached QueueSort keys, or the plugin itself)
//! and moving pods into, within and out of it.

use super::heap::{Item, Order};
use super::{Entry, QueueLocation, SchedulingQueue, entry};
use crate::framework::QueueSortPlugin;
use crate::framework::runtime::guard;

/// The active heap's order over the queue's slots.
pub(super) struct Ord<'a> {
    pub(super) slots: &'a [Option<Entry>],
    pub(super) sort: Option<&'a dyn QueueSortPlugin>,
    pub(super) keyed: bool,
}

impl Order for Ord<'_> {
    #[inline]
    fn less(&self, a: &Item, b: &Item) -> bool {
        if self.keyed {
            // `seq` wraps after 2^32 pushes; only the FIFO tie-break could glitch then.
            return (a.key, a.ts, a.seq) < (b.key, b.ts, b.seq);
        }
        let (ia, ib) = (&entry(self.slots, a.slot).info, &entry(self.slots, b.slot).info);
        match self.sort {
            Some(sort) => guard("QueueSort", "QueueSort", || sort.less(ia, ib)).unwrap_or(false),
            None => (a.key, a.ts, a.seq) < (b.key, b.ts, b.seq),
        }
    }
}

impl SchedulingQueue {
    /// The heap item for a slot: its QueueSort key (PrioritySort's `-priority` when
    /// there is no QueueSort plugin) and timestamp.
    fn item(&mut self, slot: u32) -> Item {
        let e = entry(&self.slots, slot);
        let key = match &self.sort {
            None => Some(-i64::from(e.info.pod.priority())),
            Some(s) => guard("QueueSort", "QueueSort", || s.sort_key(&e.info.pod)).ok().flatten(),
        };
        let ts = u64::try_from(e.info.timestamp.as_nanos()).unwrap_or(u64::MAX);
        if key.is_none() {
            self.keyed = false;
        }
        self.push_seq = self.push_seq.wrapping_add(1);
        Item { key: key.unwrap_or(0), ts, slot, seq: self.push_seq }
    }

    pub(super) fn push_active(&mut self, slot: u32) {
        self.e_mut(slot).loc = QueueLocation::Active;
        let item = self.item(slot);
        let ord = Ord { slots: &self.slots, sort: self.sort.as_deref(), keyed: self.keyed };
        self.active.push(item, &ord, &mut self.positions);
    }

    /// Takes an active slot out of the heap.
    pub(super) fn remove_active(&mut self, slot: u32) {
        let at = self.positions[slot as usize] as usize;
        let ord = Ord { slots: &self.slots, sort: self.sort.as_deref(), keyed: self.keyed };
        self.active.remove_at(at, &ord, &mut self.positions);
    }

    /// Re-sorts an active slot whose pod changed.
    pub(super) fn rekey_active(&mut self, slot: u32) {
        let at = self.positions[slot as usize] as usize;
        let item = self.item(slot);
        let ord = Ord { slots: &self.slots, sort: self.sort.as_deref(), keyed: self.keyed };
        self.active.rekey(at, item.key, item.ts, &ord, &mut self.positions);
    }

    /// Takes the head of the active heap.
    pub(super) fn pop_active(&mut self) -> Option<u32> {
        let ord = Ord { slots: &self.slots, sort: self.sort.as_deref(), keyed: self.keyed };
        self.active.pop(&ord, &mut self.positions)
    }
}
