//! Typed errors for topology graphs, matrices, the `nvidia-smi topo -m` parser
//! and the best-subset search.

use thiserror::Error;

/// What went wrong while building a topology or searching it.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum TopologyError {
    /// A builder method was given a node index the graph does not hold.
    #[error("node index {index} is not in this graph")]
    UnknownNode {
        /// The index.
        index: usize,
    },
    /// The graph holds no GPU at all.
    #[error("the topology has no GPU")]
    NoGpus,
    /// More GPUs than the search's 128-bit masks can hold.
    #[error("the topology has {count} GPUs; at most {max} are supported")]
    TooManyGpus {
        /// GPUs in the graph.
        count: usize,
        /// The supported maximum.
        max: usize,
    },
    /// Two GPUs carry the same index.
    #[error("GPU index {index} appears twice")]
    DuplicateGpuIndex {
        /// The repeated index.
        index: u32,
    },
    /// Two GPUs carry the same id (UUID-like string).
    #[error("GPU id {id:?} appears twice")]
    DuplicateGpuId {
        /// The repeated id.
        id: String,
    },
    /// GPU indices must be `0..n` so that bit `i` of a mask is GPU `i`.
    #[error("GPU indices must be 0..{count}; found index {index}")]
    GpuIndexGap {
        /// The offending index.
        index: u32,
        /// Number of GPUs.
        count: usize,
    },
    /// A GPU has neither an NVLink path nor a host (PCIe/CPU) path to another GPU.
    #[error("GPU {a} cannot reach GPU {b} over NVLink or the host fabric")]
    UnreachableGpu {
        /// One GPU index.
        a: u32,
        /// The other GPU index.
        b: u32,
    },
    /// A PCIe device has more than one upstream PCIe parent (the PCIe fabric must be a tree).
    #[error("PCIe device {node} has more than one upstream parent")]
    PcieNotATree {
        /// Debug name of the node.
        node: String,
    },
    /// A PCIe device's upstream chain does not end at a CPU / NUMA node.
    #[error("PCIe chain of {node} does not end at a CPU/NUMA node")]
    DanglingPcie {
        /// Debug name of the node.
        node: String,
    },
    /// More NICs than the 128-bit NIC masks can hold.
    #[error("the topology has {count} NICs; at most 128 are supported")]
    TooManyNics {
        /// NICs in the graph.
        count: usize,
    },
    /// A request for zero GPUs.
    #[error("a request for 0 GPUs has no placement")]
    ZeroRequest,
    /// A request for more GPUs than are free (after NIC filtering, if asked).
    #[error("requested {requested} GPUs but only {free} are eligible")]
    NotEnoughFree {
        /// GPUs asked for.
        requested: usize,
        /// GPUs free and eligible.
        free: usize,
    },
    /// The free mask names GPUs the matrix does not have.
    #[error("free mask names GPU {index} but the machine has {count} GPUs")]
    FreeMaskOutOfRange {
        /// The first out-of-range bit.
        index: u32,
        /// GPUs in the machine.
        count: usize,
    },
    /// NUMA alignment was required and no NUMA node holds enough eligible GPUs.
    #[error("no NUMA node has {requested} eligible free GPUs")]
    NoNumaAlignedSet {
        /// GPUs asked for.
        requested: usize,
    },
    /// An NVLink bridge of a machine builder names a GPU the machine does not have.
    #[error("NVLink bridge {a}-{b} names a GPU outside 0..{count}")]
    BridgeOutOfRange {
        /// One end.
        a: u32,
        /// The other end.
        b: u32,
        /// GPUs in the machine.
        count: u32,
    },
    /// More GPUs must be included than are requested (go-gpuallocator returns no
    /// allocation when `len(required) > size`).
    #[error("{required} GPUs must be included but only {requested} are requested")]
    MustIncludeExceedsRequest {
        /// GPUs in [`SearchOptions::must_include`](crate::topology::SearchOptions::must_include).
        required: usize,
        /// GPUs asked for.
        requested: usize,
    },
    /// A GPU that must be included is not free (or not in the machine):
    /// go-gpuallocator finds no partition holding every required device then.
    #[error("GPU {index} must be included but is not free")]
    MustIncludeNotFree {
        /// The first such GPU.
        index: u32,
    },
    /// NIC alignment was required and no assignment of distinct local NICs exists.
    #[error("no set of {requested} GPUs has one distinct local NIC each")]
    NoNicAlignedSet {
        /// GPUs asked for.
        requested: usize,
    },
}

/// A malformed `nvidia-smi topo -m` matrix, with its position (1-based line and column).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("topo matrix line {line}, column {column}: {kind}")]
pub struct ParseError {
    /// 1-based line number in the input.
    pub line: usize,
    /// 1-based column (in characters) of the offending cell, or 1 for whole-line problems.
    pub column: usize,
    /// What is wrong there.
    pub kind: ParseErrorKind,
}

/// The kinds of [`ParseError`].
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ParseErrorKind {
    /// No header line with `GPU0` was found.
    #[error("no header line naming GPU0")]
    MissingHeader,
    /// A header cell is not a GPU/NIC/mlx device name and not a known affinity column.
    #[error("unexpected header cell {0:?}")]
    BadHeader(String),
    /// A row has a different number of link cells than the header has devices.
    #[error("row {row:?} has {found} link cells, header names {expected} devices")]
    RowLength {
        /// Row label.
        row: String,
        /// Cells expected.
        expected: usize,
        /// Cells found.
        found: usize,
    },
    /// A row label differs from the header's device at that position.
    #[error("row label {found:?} where {expected:?} was expected")]
    RowLabel {
        /// The expected device name.
        expected: String,
        /// The label seen.
        found: String,
    },
    /// A cell is not one of X, SYS, NODE, PHB, PXB, PIX, NV#.
    #[error("unknown link cell {0:?}")]
    BadCell(String),
    /// The diagonal cell is not `X`, or an off-diagonal one is.
    #[error("self link misplaced: {0:?}")]
    Diagonal(String),
    /// The matrix is not symmetric.
    #[error("cell {cell:?} differs from its mirror {mirror:?}")]
    Asymmetric {
        /// This cell.
        cell: String,
        /// Its transpose.
        mirror: String,
    },
    /// The input ended before every device's row was read.
    #[error("input ended after {found} of {expected} GPU/NIC rows")]
    Truncated {
        /// Rows expected.
        expected: usize,
        /// Rows seen.
        found: usize,
    },
    /// A NUMA affinity or CPU list cell is not a number / range list.
    #[error("bad affinity value {0:?}")]
    BadAffinity(String),
    /// The matrix was read but describes an invalid machine.
    #[error("{0}")]
    Topology(TopologyError),
}
