//! The request side of [`super::client::HttpExtender`]: `ExtenderArgs` written from
//! borrowed data, with the node names put together by position (the hot part of a
//! 1,000-node call), kept apart from the client's connection handling.

use std::sync::{Arc, Weak};

use serde::Serialize;

use crate::model::Pod;
use crate::snapshot::NodeInfo;

/// What a request is put together with, kept between calls: the node names'
/// scratch space and the last pod's JSON.
#[derive(Default)]
pub(super) struct NameScratch {
    /// The names between quotes, joined by commas (and a comma after the last):
    /// kept at full length, so that filling it by position never zeroes it again.
    pub(super) text: Vec<u8>,
    /// Where each name's closing quote is in the last names written (see
    /// [`super::answer::SentNames`]); empty when some name needed an escape.
    pub(super) ends: Vec<u32>,
    /// The pod last written, as JSON.
    pub(super) pod: PodJson,
}

/// Writes every node's name between quotes, joined by commas, into `out`: filled by
/// position into `scratch.text` in one pass that also records where each closing
/// quote is in `scratch.ends` (relative to where the names start), then copied at
/// once. A name is copied with a few word-sized moves (see [`copy_name`]), not a
/// `memcpy` call per node. The names are read from the `NodeInfo`s' own copies (one
/// pointer less than the node objects'). True when no name needed an escape (see
/// [`all_plain`]), that is, the bytes are the JSON serde writes.
pub(super) fn write_names(out: &mut Vec<u8>, nodes: &[&NodeInfo], scratch: &mut NameScratch) -> bool {
    let NameScratch { text, ends, .. } = scratch;
    ends.clear();
    ends.resize(nodes.len(), 0);
    let mut at = 0usize;
    for (n, end) in nodes.iter().zip(ends.iter_mut()) {
        let name = n.held_name().as_str().as_bytes();
        let next = at + name.len() + 3;
        if next > text.len() {
            text.resize((2 * next).max(16 << 10), 0);
        }
        let Some([open, slot @ .., close, comma]) = text.get_mut(at..next) else { break };
        *open = b'"';
        copy_name(slot, name);
        *close = b'"';
        *comma = b',';
        // Truncated past 4 GiB of names; the ends are dropped below then.
        *end = (next - 2) as u32;
        at = next;
    }
    let written = &text[..at.saturating_sub(1)];
    let plain = all_plain(written, nodes.len());
    out.extend_from_slice(written);
    // Offsets fit in 32 bits for any request a server would take (4 GiB of names).
    if !plain || u32::try_from(at).is_err() {
        ends.clear();
    }
    plain
}

/// Copies `src` into `dst` (of the same length, as the caller cuts it) with
/// word-sized moves, the last one overlapping the one before: a name of 8 to 16
/// bytes takes two 8-byte moves, longer ones 16 bytes at a time.
#[inline]
pub(super) fn copy_name(dst: &mut [u8], src: &[u8]) {
    let n = src.len();
    if dst.len() != n {
        // Not reached (the caller cuts `dst` to fit); copies what fits.
        let k = n.min(dst.len());
        dst[..k].copy_from_slice(&src[..k]);
        return;
    }
    if n >= 16 {
        let mut i = 0;
        while i + 16 < n {
            dst[i..i + 16].copy_from_slice(&src[i..i + 16]);
            i += 16;
        }
        dst[n - 16..].copy_from_slice(&src[n - 16..]);
    } else if n >= 8 {
        dst[..8].copy_from_slice(&src[..8]);
        dst[n - 8..].copy_from_slice(&src[n - 8..]);
    } else if n >= 4 {
        dst[..4].copy_from_slice(&src[..4]);
        dst[n - 4..].copy_from_slice(&src[n - 4..]);
    } else {
        for (d, s) in dst.iter_mut().zip(src) {
            *d = *s;
        }
    }
}

/// The JSON of the last pod written, with the pod it was written for. The key is a
/// [`Weak`] to the pod's shared allocation: while it lives, that allocation cannot
/// hold another pod, and the pod in it cannot change (`Arc::get_mut` refuses a
/// shared pod, `Arc::make_mut` moves it out first), so the same address means the
/// same bytes. It keeps the allocation, not the pod's contents, once the pod is gone.
#[derive(Default)]
pub(super) struct PodJson {
    key: Weak<Pod>,
    json: Vec<u8>,
}

impl PodJson {
    /// Writes `pod` as JSON into `out`: the bytes kept from the last call for the
    /// same shared pod, else serde_json's (kept for the next call).
    pub(super) fn write(&mut self, out: &mut Vec<u8>, pod: &Arc<Pod>) -> serde_json::Result<()> {
        if !std::ptr::eq(self.key.as_ptr(), Arc::as_ptr(pod)) {
            self.key = Weak::new();
            self.json.clear();
            serde_json::to_writer(&mut self.json, &**pod)?;
            self.key = Arc::downgrade(pod);
        }
        out.extend_from_slice(&self.json);
        Ok(())
    }

    /// The JSON kept (its capacity, for the buffer limit).
    pub(super) fn capacity(&self) -> usize {
        self.json.capacity()
    }
}

/// Whether `names` (that many strings copied between quotes, joined by commas) holds
/// exactly the quotes it was given and no `\` or control character, that is, no
/// name needed an escape. One pass without an early exit, counting in bytes over
/// blocks of 128 (no overflow), which the compiler turns into vector code.
pub(super) fn all_plain(names: &[u8], count: usize) -> bool {
    let mut quotes = 0usize;
    let mut bad = 0u8;
    for block in names.chunks(128) {
        let mut q = 0u8;
        for &b in block {
            q += u8::from(b == b'"');
            bad |= u8::from(b < 0x20) | u8::from(b == b'\\');
        }
        quotes += usize::from(q);
    }
    quotes == 2 * count && bad == 0
}

/// A JSON string: copied as it is when nothing in it needs escaping (a Kubernetes
/// name never does), else through serde_json.
pub(super) fn write_json_str(out: &mut Vec<u8>, s: &str) -> serde_json::Result<()> {
    if s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.reserve(s.len() + 2);
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
        Ok(())
    } else {
        serde_json::to_writer(out, s)
    }
}

/// `ExtenderArgs` written from borrowed data (no copy of the pod or the nodes).
#[derive(Serialize)]
pub(super) struct ArgsOut<'a> {
    #[serde(rename = "Pod")]
    pub(super) pod: &'a Pod,
    #[serde(rename = "Nodes")]
    pub(super) nodes: Option<NodesOut<'a>>,
    #[serde(rename = "NodeNames")]
    pub(super) node_names: Option<Names<'a>>,
}

#[derive(Serialize)]
pub(super) struct NodesOut<'a> {
    pub(super) items: Items<'a>,
}

pub(super) struct Items<'a>(pub(super) &'a [&'a NodeInfo]);

impl Serialize for Items<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|n| n.node()))
    }
}

pub(super) struct Names<'a>(pub(super) &'a [&'a NodeInfo]);

impl Serialize for Names<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|n| n.node().name()))
    }
}
