//! The pure pieces a scheduler plugin or a DRA driver calls: a 0..=100 score
//! for the best set a machine can offer, and per-GPU topology facts as DRA-style
//! device attributes.

use super::error::TopologyError;
use super::matrix::GpuMatrix;
use super::search::{Placement, SearchOptions, best_subset};

/// Highest score, as upstream's `framework.MaxNodeScore`.
pub const MAX_SCORE: i64 = 100;

/// Scores a placement against the best placement the same machine could give
/// the same request with every GPU free (`ideal`), on `0..=MAX_SCORE`.
///
/// Normalization (integer arithmetic, each term floored, each ratio capped at 1):
///
/// ```text
/// score = 70 * min_bw(best) / min_bw(ideal)
///       + 20 * sum_bw(best) / sum_bw(ideal)
///       + 10 * closeness(best) / closeness(ideal)
/// ```
///
/// where `min_bw` is the slowest pair's bandwidth, `sum_bw` the sum over pairs and
/// `closeness` the sum of host-path closeness (5 = PIX … 1 = SYS). A term whose
/// ideal is 0 counts in full. A one-GPU request scores `MAX_SCORE`: there is no
/// pair to be slow. A machine therefore scores 100 when it can still give the
/// request the set it would give on an empty machine, which is the quality a
/// Score plugin wants to compare across nodes of one shape; across different
/// shapes, the plugin's `NormalizeScore` (upstream's default normalizer rescales
/// to the best node) is where absolute bandwidths can be brought in.
pub fn score_against(best: &Placement, ideal: &Placement) -> i64 {
    let (Some(b_min), Some(i_min)) = (best.objective.min_bandwidth_mbps(), ideal.objective.min_bandwidth_mbps()) else {
        return MAX_SCORE;
    };
    let part =
        |weight: u64, got: u64, want: u64| -> u64 { (weight * got.min(want)).checked_div(want).unwrap_or(weight) };
    let s = part(70, b_min, i_min)
        + part(20, best.objective.sum_bandwidth_mbps(), ideal.objective.sum_bandwidth_mbps())
        + part(10, best.objective.sum_closeness(), ideal.objective.sum_closeness());
    s.min(MAX_SCORE as u64) as i64
}

/// Scores the best `k`-GPU set among `free` on `m` (see [`score_against`]).
///
/// This runs the search twice (on `free` and on the empty machine); a plugin
/// should cache the ideal placement per machine shape and `k` and call
/// [`score_against`] instead. Errors are those of [`best_subset`]: a node that
/// cannot fit the request is a Filter failure, not a low score.
pub fn topology_score(m: &GpuMatrix, free: u128, k: usize, opts: &SearchOptions) -> Result<i64, TopologyError> {
    let best = best_subset(m, free, k, opts)?;
    let ideal = best_subset(m, m.all(), k, opts)?;
    Ok(score_against(&best, &ideal))
}

/// A DRA device attribute value (`resource.k8s.io/v1` `DeviceAttribute`: exactly
/// one of int, bool, string, version).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum AttributeValue {
    /// `int`.
    Int(i64),
    /// `bool`.
    Bool(bool),
    /// `string`.
    String(String),
    /// `version` (semantic version string).
    Version(String),
}

/// The standard attribute Kubernetes defines for a device's PCIe root complex
/// (`pci<domain>:<bus>`), so that `matchAttribute` can align GPUs and NICs of
/// different drivers (`k8s.io/dynamic-resource-allocation/deviceattribute`).
pub const PCIE_ROOT_ATTRIBUTE: &str = "resource.kubernetes.io/pcieRoot";

/// The standard attribute for a device's NUMA node (scalar form), from the
/// Kubernetes "Standard Device Attributes for Dynamic Resource Allocation" page.
pub const NUMA_NODE_ATTRIBUTE: &str = "resource.kubernetes.io/numaNode";

/// Whether `root` has the `pci<domain>:<bus>` form (hex digits) the standard
/// attribute requires; roots the parser or the C2C-attached shapes synthesize
/// do not, and are not published.
fn is_pcie_root(root: &str) -> bool {
    root.strip_prefix("pci").and_then(|r| r.split_once(':')).is_some_and(|(d, b)| {
        !d.is_empty() && !b.is_empty() && d.bytes().chain(b.bytes()).all(|c| c.is_ascii_hexdigit())
    })
}

/// Topology facts of GPU `gpu` as DRA device attributes, names qualified by the
/// driver's `domain` (e.g. `gpu.nvidia.com`), except the two standard
/// Kubernetes attributes:
///
/// | name | value |
/// |---|---|
/// | `<domain>/index` | int, the GPU index |
/// | `<domain>/uuid` | string, the GPU id |
/// | `<domain>/productName` | string |
/// | `resource.kubernetes.io/numaNode` | int |
/// | `resource.kubernetes.io/pcieRoot` | string, only when the root has the `pci<domain>:<bus>` form |
/// | `<domain>/host` | int, the host (tray) inside a multi-host NVLink domain |
/// | `<domain>/nvlinkDomain` | int, only for GPUs with NVLink |
/// | `<domain>/cliqueId` | int, only when the whole NVLink domain is all-to-all |
/// | `<domain>/nearestNic` | string, the closest NIC's name, if any |
/// | `<domain>/nearestNicLink` | string, its class (`PIX`, `PXB`, …) |
///
/// `None` if `gpu` is out of range.
pub fn gpu_attributes(m: &GpuMatrix, gpu: usize, domain: &str) -> Option<Vec<(String, AttributeValue)>> {
    let facts = m.gpu(gpu)?;
    let q = |name: &str| format!("{domain}/{name}");
    let mut out = vec![
        (q("index"), AttributeValue::Int(i64::from(facts.gpu.index))),
        (q("uuid"), AttributeValue::String(facts.gpu.id.clone())),
        (q("productName"), AttributeValue::String(facts.gpu.model.clone())),
        (NUMA_NODE_ATTRIBUTE.to_owned(), AttributeValue::Int(i64::from(facts.gpu.numa_node))),
        (q("host"), AttributeValue::Int(i64::from(facts.gpu.host))),
    ];
    if is_pcie_root(&facts.gpu.pcie_root) {
        out.push((PCIE_ROOT_ATTRIBUTE.to_owned(), AttributeValue::String(facts.gpu.pcie_root.clone())));
    }
    if let Some(d) = facts.nvlink_domain {
        out.push((q("nvlinkDomain"), AttributeValue::Int(i64::from(d))));
    }
    if let Some(c) = facts.nvlink_clique {
        out.push((q("cliqueId"), AttributeValue::Int(i64::from(c))));
    }
    if let Some((nic, class)) = m.nearest_nic(gpu) {
        out.push((q("nearestNic"), AttributeValue::String(m.nics()[nic].name.clone())));
        out.push((q("nearestNicLink"), AttributeValue::String(class.to_string())));
    }
    Some(out)
}
