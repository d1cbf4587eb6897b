//! LoadVariationRiskBalancing (Score): balances the risk of load variation, the
//! mean plus a deviation term of measured use, across nodes (upstream
//! `pkg/trimaran/loadvariationriskbalancing/{loadvariationriskbalancing,analysis}.go`).

use std::sync::Arc;

use crate::framework::{CycleState, ExtensionPoints, Handle, Plugin, PreScorePlugin, ScorePlugin, Status};
use crate::plugins::names;
use crate::snapshot::{NodeInfo, NodeList, PodInfo};

use super::args::{LoadVariationRiskBalancingArgs, TrimaranError, decode};
use super::metrics::{LoadMetricsSource, LoadSnapshot};
use super::resource_stats::{CpuMem, Resource, ResourceStats, clamp01, pod_requests};

/// What PreScore pins for the cycle.
#[derive(Clone)]
struct LvrbCycle {
    snapshot: Option<Arc<LoadSnapshot>>,
    request: CpuMem,
}

/// The LoadVariationRiskBalancing plugin.
///
/// Per resource (cpu in millicores, memory in MiB, capacity the node's allocatable):
/// `mu = (avg + request)/capacity`, `sigma = (stdev/capacity)^(1/sensitivity) · margin`
/// (each clamped to `[0, 1]`), and the score is `(1 - (mu + sigma)/2) · 100`
/// ([`risk_score`]). The node takes the worse of cpu and memory when both have
/// metrics, else the one that has (0 for none), rounded. A node without metrics scores
/// 0 with success. NormalizeScore does nothing (as upstream).
///
/// Upstream also starts a pod-assignment handler for this plugin but never reads it;
/// schedkit keeps none. A PreScore pins one payload and the pod's requests per cycle.
pub struct LoadVariationRiskBalancing {
    source: Arc<dyn LoadMetricsSource>,
    margin: f64,
    sensitivity: f64,
    root: Root,
}

/// The root taken of the deviation: `sigma^(1/sensitivity)`, precomputed.
#[derive(Debug, Clone, Copy)]
enum Root {
    /// A negative sensitivity: no root.
    None,
    /// Sensitivity 1: `sigma^1 = sigma`.
    Identity,
    /// Sensitivity 2: `sigma^0.5`, which Go's `math.Pow` computes as `Sqrt`.
    Sqrt,
    /// Any other exponent.
    Pow(f64),
}

impl Root {
    #[expect(clippy::float_cmp, reason = "only the exact exponents Go's math.Pow special-cases")]
    fn of(sensitivity: f64) -> Root {
        if sensitivity >= 0.0 {
            let e = 1.0 / sensitivity;
            if e == 1.0 {
                Root::Identity
            } else if e == 0.5 {
                Root::Sqrt
            } else {
                Root::Pow(e)
            }
        } else {
            Root::None
        }
    }

    #[inline]
    fn apply(self, sigma: f64) -> f64 {
        match self {
            Root::None | Root::Identity => sigma,
            Root::Sqrt => sigma.sqrt(),
            Root::Pow(e) => sigma.powf(e),
        }
    }
}

impl std::fmt::Debug for LoadVariationRiskBalancing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadVariationRiskBalancing")
            .field("margin", &self.margin)
            .field("sensitivity", &self.sensitivity)
            .finish_non_exhaustive()
    }
}

impl LoadVariationRiskBalancing {
    /// A plugin over `source` with `args` (defaulted here).
    pub fn new(mut args: LoadVariationRiskBalancingArgs, source: Arc<dyn LoadMetricsSource>) -> Self {
        args.set_defaults();
        let sensitivity = args.safe_variance_sensitivity.unwrap_or(super::args::DEFAULT_SAFE_VARIANCE_SENSITIVITY);
        LoadVariationRiskBalancing {
            source,
            margin: args.safe_variance_margin.unwrap_or(super::args::DEFAULT_SAFE_VARIANCE_MARGIN),
            sensitivity,
            root: Root::of(sensitivity),
        }
    }

    /// From `pluginConfig` args (upstream `New`).
    pub fn from_config(args: Option<&serde_json::Value>, handle: &Handle) -> Result<Self, TrimaranError> {
        let name = names::LOAD_VARIATION_RISK_BALANCING;
        let mut a: LoadVariationRiskBalancingArgs =
            decode(name, args, &["safeVarianceMargin", "safeVarianceSensitivity"])?;
        a.set_defaults();
        let source = super::resolve_source(name, &a.trimaran, handle)?;
        Ok(LoadVariationRiskBalancing::new(a, source))
    }

    #[inline]
    fn score_with(&self, snapshot: Option<&LoadSnapshot>, request: CpuMem, node: &NodeInfo) -> i64 {
        let Some(load) = snapshot.and_then(|s| s.node(node.name())) else { return 0 };
        if !load.has_metrics {
            return 0;
        }
        let cpu = ResourceStats::new(load.cpu, node, request, Resource::Cpu);
        let mem = ResourceStats::new(load.memory, node, request, Resource::Memory);
        let cpu_score = cpu.map_or(0.0, |rs| risk_score_with(rs, self.margin, self.root));
        let mem_score = mem.map_or(0.0, |rs| risk_score_with(rs, self.margin, self.root));
        let total =
            if cpu.is_some() && mem.is_some() { go_min(mem_score, cpu_score) } else { go_max(mem_score, cpu_score) };
        total.round() as i64
    }
}

/// Go's `min` for floats: NaN wins.
fn go_min(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() { f64::NAN } else { a.min(b) }
}

/// Go's `max` for floats: NaN wins.
fn go_max(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() { f64::NAN } else { a.max(b) }
}

/// Upstream `computeScore`: `(1 - risk) · 100` with
/// `risk = (mu + clamp01(margin · sigma^(1/sensitivity)))/2` (the root only for
/// sensitivity `>= 0`; 0 makes any deviation below 1 vanish), after clamping the use
/// to `[0, capacity]` and the request to `>= 0`; 0 for a capacity `<= 0`.
///
/// ```
/// use schedkit::plugins::trimaran::{risk_score, ResourceStats};
/// let rs = ResourceStats { capacity: 100.0, req: 10.0, used_avg: 40.0, used_stdev: 36.0 };
/// assert_eq!(risk_score(rs, 1.0, 1.0).round(), 57.0);
/// ```
#[inline]
pub fn risk_score(rs: ResourceStats, margin: f64, sensitivity: f64) -> f64 {
    risk_score_with(rs, margin, Root::of(sensitivity))
}

#[inline]
fn risk_score_with(mut rs: ResourceStats, margin: f64, root: Root) -> f64 {
    if rs.capacity <= 0.0 {
        return 0.0;
    }
    let clamp_cap = |v: f64| if v.is_nan() { v } else { v.min(rs.capacity).max(0.0) };
    rs.req = go_max(rs.req, 0.0);
    rs.used_avg = clamp_cap(rs.used_avg);
    rs.used_stdev = clamp_cap(rs.used_stdev);
    let (mu, sigma) = rs.mu_sigma();
    let sigma = clamp01(root.apply(sigma) * margin);
    let risk = f64::midpoint(mu, sigma);
    (1.0 - risk) * 100.0
}

impl Plugin for LoadVariationRiskBalancing {
    fn name(&self) -> &str {
        names::LOAD_VARIATION_RISK_BALANCING
    }
    fn register(self: Arc<Self>, points: &mut ExtensionPoints) {
        points.pre_score(self.clone()).score(self);
    }
}

impl PreScorePlugin for LoadVariationRiskBalancing {
    fn pre_score(&self, state: &mut CycleState, pod: &PodInfo, _nodes: NodeList<'_>) -> Status {
        state.write(LvrbCycle { snapshot: self.source.latest(), request: pod_requests(&pod.pod) });
        Status::SUCCESS
    }
}

impl ScorePlugin for LoadVariationRiskBalancing {
    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        if let Some(c) = state.read::<LvrbCycle>() {
            return Ok(self.score_with(c.snapshot.as_deref(), c.request, node));
        }
        let snap = self.source.latest();
        Ok(self.score_with(snap.as_deref(), pod_requests(&pod.pod), node))
    }
}

#[cfg(test)]
#[allow(clippy::float_cmp, reason = "upstream's test tables compare exact values")]
mod tests {
    use super::*;

    // analysis_test.go TestComputeScore.
    #[test]
    fn compute_score_table() {
        let rs = |capacity, req, used_avg, used_stdev| ResourceStats { used_avg, used_stdev, req, capacity };
        let cases = [
            ("valid data", 1.0, 1.0, rs(100.0, 10.0, 40.0, 36.0), 57),
            ("zero capacity", 1.0, 2.0, rs(0.0, 10.0, 40.0, 36.0), 0),
            ("negative usedAvg", 1.0, 2.0, rs(100.0, 10.0, -40.0, 36.0), 65),
            ("large usedAvg", 1.0, 2.0, rs(100.0, 10.0, 200.0, 36.0), 20),
            ("negative usedStdev", 1.0, 2.0, rs(100.0, 10.0, 40.0, -36.0), 75),
            ("large usedStdev", 1.0, 2.0, rs(100.0, 10.0, 40.0, 120.0), 25),
            ("negative margin", -1.0, 1.0, rs(100.0, 10.0, 40.0, 36.0), 75),
            ("negative sensitivity", 1.0, -1.0, rs(100.0, 10.0, 40.0, 36.0), 57),
            ("zero sensitivity", 1.0, 0.0, rs(100.0, 10.0, 40.0, 36.0), 75),
        ];
        for (name, margin, sensitivity, r, want) in cases {
            assert_eq!(risk_score(r, margin, sensitivity).round() as i64, want, "{name}");
        }
    }
}
