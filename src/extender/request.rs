//! The request side of [`super::client::HttpExtender`]: `ExtenderArgs` written from
//! borrowed data, with the node names put together by position (the hot part of a
//! 1,000-node call), kept apart from the client's connection handling.

use serde::Serialize;

use crate::model::Pod;
use crate::snapshot::NodeInfo;

/// Where a request's node names are put together before they are copied into it.
#[derive(Default)]
pub(super) struct NameScratch {
    /// The names between quotes, joined by commas: kept at full length, so that
    /// filling it by position never zeroes it again.
    pub(super) text: Vec<u8>,
    /// Where each name's closing quote is in the last names written (see
    /// [`super::answer::SentNames`]); empty when some name needed an escape.
    pub(super) ends: Vec<u32>,
}

/// Writes every node's name between quotes, joined by commas, into `out`: filled by
/// position into `scratch.text` (no capacity check per byte, no zeroing once it has
/// grown), then copied at once; `scratch.ends` gets where each closing quote is
/// (relative to where the names start). The names are read from the `NodeInfo`s'
/// own copies (one pointer less than the node objects'). True when no name needed
/// an escape (see [`all_plain`]), that is, the bytes are the JSON serde writes.
pub(super) fn write_names(out: &mut Vec<u8>, nodes: &[&NodeInfo], scratch: &mut NameScratch) -> bool {
    // Each name, two quotes and a comma; the last comma is not copied.
    let total: usize = nodes.iter().map(|n| n.held_name().as_str().len() + 3).sum();
    if scratch.text.len() < total {
        scratch.text.resize(total, 0);
    }
    let buf = &mut scratch.text[..total];
    scratch.ends.clear();
    let mut at = 0;
    for n in nodes {
        let name = n.held_name().as_str().as_bytes();
        let end = at + 1 + name.len();
        let Some([open, slot @ .., close, comma]) = buf.get_mut(at..end + 2) else { break };
        *open = b'"';
        slot.copy_from_slice(name);
        *close = b'"';
        *comma = b',';
        at = end + 2;
    }
    let text = &buf[..total.saturating_sub(1)];
    let plain = all_plain(text, nodes.len());
    out.extend_from_slice(text);
    // Offsets fit in 32 bits for any request a server would take (4 GiB of names).
    if plain && u32::try_from(total).is_ok() {
        let mut end = 0usize;
        scratch.ends.extend(nodes.iter().map(|n| {
            end += n.held_name().as_str().len() + 1;
            let e = end as u32;
            end += 2;
            e
        }));
    }
    plain
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
