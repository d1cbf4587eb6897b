//! The text of upstream's `FitError.Error()` (`pkg/scheduler/framework/types.go`),
//! shared by the scheduler's [`FitError`](crate::scheduler::FitError) and the
//! preemption evaluator, which builds its own over the nodes it dry-ran.

use std::collections::BTreeMap;
use std::fmt;

use super::{NodeToStatus, Status};

/// Reason -> number of nodes that gave it: every explicit status once per node, and
/// the absent-nodes status once for each of the `num_all_nodes` not listed.
pub(crate) fn reason_histogram(statuses: &NodeToStatus, num_all_nodes: usize) -> BTreeMap<String, usize> {
    let mut h: BTreeMap<String, usize> = BTreeMap::new();
    let mut add = |s: &Status, n: usize| {
        for r in s.reasons() {
            *h.entry(r.to_string()).or_default() += n;
        }
    };
    for (_, s) in &statuses.statuses {
        add(s, 1);
    }
    if let Some(absent) = &statuses.absent {
        let n = num_all_nodes.saturating_sub(statuses.statuses.len());
        if n > 0 {
            add(absent, n);
        }
    }
    h
}

/// Writes `0/N nodes are available:` then, as upstream:
/// - a PreFilter rejection's message and a period, *instead of* the per-node
///   histogram (PreFilter marked every node with the same status);
/// - otherwise the histogram `"<count> <reason>"`, sorted as strings (so `10 x`
///   sorts before `2 y`, as Go's `sort.Strings`), joined with `", "`, and a period;
/// - then the PostFilter message after one space, verbatim, with no period added.
///
/// That last rule is why a preemption message reads `... preemption: 0/1 nodes are
/// available: 1 Preemption is not helpful for scheduling.` with a single period:
/// the evaluator's own FitError text already ends in one. Older Kubernetes releases
/// formatted the PostFilter message with the same `" %v."` as the others and so
/// printed `scheduling..` (still seen in many clusters' events); the current
/// `types.go` appends it with `" %v"`, which schedkit follows.
pub(crate) fn write_fit_message(
    f: &mut impl fmt::Write,
    num_all_nodes: usize,
    statuses: &NodeToStatus,
    pre_filter_msg: Option<&str>,
    post_filter_msg: Option<&str>,
) -> fmt::Result {
    write!(f, "0/{num_all_nodes} nodes are available:")?;
    if let Some(msg) = pre_filter_msg.filter(|m| !m.is_empty()) {
        write!(f, " {msg}.")?;
    } else {
        let mut parts: Vec<String> =
            reason_histogram(statuses, num_all_nodes).into_iter().map(|(r, n)| format!("{n} {r}")).collect();
        parts.sort();
        if !parts.is_empty() {
            write!(f, " {}.", parts.join(", "))?;
        }
    }
    if let Some(msg) = post_filter_msg.filter(|m| !m.is_empty()) {
        write!(f, " {msg}")?;
    }
    Ok(())
}
