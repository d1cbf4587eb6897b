//! [`FreeIndex`]: the GPU table's nodes bucketed by model and free capacity, so
//! GpuShareFit's PreFilter can list exactly the nodes that can hold a request without
//! walking every node.

use smallvec::SmallVec;

use super::state::Summary;
use super::{GpuRequest, MILLI};
use crate::model::Symbol;

/// Width of a bucket of "most free milli-GPU on one device", in milli-GPU.
const MAX_STEP: u32 = 25;
/// Buckets of the largest free device: `max_free / MAX_STEP`, so 0..=40.
const MAX_BUCKETS: usize = (MILLI / MAX_STEP) as usize + 1;
/// Buckets of fully free devices: 0..=64 (a node has at most 64 devices).
const FULL_BUCKETS: usize = 65;

/// Where one table entry sits in the index.
#[derive(Debug, Clone, Copy)]
struct Place {
    /// Model slot; `u32::MAX`: not indexed (a node without devices, which fits nothing).
    model: u32,
    /// Most free milli-GPU on one device (the summary's), read at the boundary bucket.
    max_free: u32,
    /// Its bucket in `by_max` and position there.
    max_bucket: u8,
    max_pos: u32,
    /// Fully free devices (the `by_full` bucket) and position there.
    full: u8,
    full_pos: u32,
}

const UNINDEXED: Place = Place { model: u32::MAX, max_free: 0, max_bucket: 0, max_pos: 0, full: 0, full_pos: 0 };

/// One GPU model's nodes (entry indexes), bucketed twice: by the most free milli-GPU on
/// one device (what a one-device request needs) and by the number of fully free
/// devices (what a whole-GPU request for several devices needs).
#[derive(Debug, Clone)]
struct ModelBuckets {
    model: Symbol,
    by_max: Vec<Vec<u32>>,
    by_full: Vec<Vec<u32>>,
}

impl ModelBuckets {
    fn new(model: Symbol) -> ModelBuckets {
        ModelBuckets { model, by_max: vec![Vec::new(); MAX_BUCKETS], by_full: vec![Vec::new(); FULL_BUCKETS] }
    }
}

/// The entries of a GPU table by model and free capacity, kept in step with the
/// table's summaries (every summary refresh calls [`FreeIndex::set`]). A change moves
/// an entry between buckets in O(1) (swap-remove, with each entry's position
/// recorded), and [`FreeIndex::fitting`] visits only the buckets that can hold a
/// request, checking single entries only in the one bucket that straddles the
/// requested milli-GPU.
#[derive(Debug, Clone, Default)]
pub(super) struct FreeIndex {
    models: Vec<ModelBuckets>,
    places: Vec<Place>,
}

impl FreeIndex {
    fn slot(&mut self, model: Symbol) -> usize {
        if let Some(i) = self.models.iter().position(|m| m.model == model) {
            return i;
        }
        self.models.push(ModelBuckets::new(model));
        self.models.len() - 1
    }

    /// Removes entry `i` from its buckets (no-op when it isn't indexed).
    fn unlink(&mut self, i: usize) {
        let p = self.places[i];
        if p.model == u32::MAX {
            return;
        }
        let m = &mut self.models[p.model as usize];
        let bucket = &mut m.by_max[p.max_bucket as usize];
        bucket.swap_remove(p.max_pos as usize);
        if let Some(&moved) = bucket.get(p.max_pos as usize) {
            self.places[moved as usize].max_pos = p.max_pos;
        }
        let bucket = &mut m.by_full[p.full as usize];
        bucket.swap_remove(p.full_pos as usize);
        if let Some(&moved) = bucket.get(p.full_pos as usize) {
            self.places[moved as usize].full_pos = p.full_pos;
        }
        self.places[i] = UNINDEXED;
    }

    /// Records entry `i`'s summary (a new entry when `i` is the next index).
    pub(super) fn set(&mut self, i: usize, s: &Summary) {
        if i >= self.places.len() {
            self.places.resize(i + 1, UNINDEXED);
        }
        let (model, count, full, max_free) = s.parts();
        let old = self.places[i];
        if count == 0 {
            self.unlink(i);
            return;
        }
        let max_bucket = (max_free.min(MILLI) / MAX_STEP) as u8;
        let full = full.min(FULL_BUCKETS as u32 - 1) as u8;
        if old.model != u32::MAX
            && self.models[old.model as usize].model == model
            && old.max_bucket == max_bucket
            && old.full == full
        {
            self.places[i].max_free = max_free;
            return;
        }
        self.unlink(i);
        let slot = self.slot(model);
        let m = &mut self.models[slot];
        let max_pos = m.by_max[max_bucket as usize].len() as u32;
        m.by_max[max_bucket as usize].push(i as u32);
        let full_pos = m.by_full[full as usize].len() as u32;
        m.by_full[full as usize].push(i as u32);
        self.places[i] = Place { model: slot as u32, max_free, max_bucket, max_pos, full, full_pos };
    }

    /// At least as many entries as [`FreeIndex::fitting`] will report for `req` (the
    /// lengths of the buckets it visits), to size the set it fills once.
    #[cfg(test)]
    pub(super) fn fitting_bound(&self, req: &GpuRequest) -> usize {
        let mut n = 0;
        self.visit_models(req, |m| {
            n += if req.count <= 1 {
                m.by_max[(req.milli.min(MILLI) / MAX_STEP) as usize..].iter().map(Vec::len).sum::<usize>()
            } else {
                m.by_full.get((req.count as usize).min(FULL_BUCKETS)..).unwrap_or_default().iter().map(Vec::len).sum()
            };
        });
        n
    }

    /// Calls `visit` with the buckets of every model `req` accepts, each once.
    fn visit_models<'a>(&'a self, req: &GpuRequest, mut visit: impl FnMut(&'a ModelBuckets)) {
        if req.models.is_empty() {
            self.models.iter().for_each(&mut visit);
        } else {
            let mut seen: SmallVec<[usize; 4]> = SmallVec::new();
            for &model in &req.models {
                if model.is_empty() {
                    continue;
                }
                if let Some(slot) = self.models.iter().position(|m| m.model == model)
                    && !seen.contains(&slot)
                {
                    seen.push(slot);
                    visit(&self.models[slot]);
                }
            }
        }
    }

    /// Calls `f` with every entry whose summary fits `req` exactly as
    /// `Summary::fits_exactly` judges it (devices, an allowed model, room), for a request
    /// the summaries answer (one device, or whole devices). Each entry once, in no
    /// particular order.
    pub(super) fn fitting(&self, req: &GpuRequest, mut f: impl FnMut(usize)) {
        self.visit_models(req, |m| {
            if req.count <= 1 {
                // One device with `milli` free: buckets above the one holding `milli`
                // start at a larger value; that one is checked entry by entry.
                let b = (req.milli.min(MILLI) / MAX_STEP) as usize;
                for &i in &m.by_max[b] {
                    if self.places[i as usize].max_free >= req.milli {
                        f(i as usize);
                    }
                }
                for bucket in &m.by_max[b + 1..] {
                    for &i in bucket {
                        f(i as usize);
                    }
                }
            } else {
                let b = (req.count as usize).min(FULL_BUCKETS);
                for bucket in m.by_full.get(b..).unwrap_or_default() {
                    for &i in bucket {
                        f(i as usize);
                    }
                }
            }
        });
    }
}
