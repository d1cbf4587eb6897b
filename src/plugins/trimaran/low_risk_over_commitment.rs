//! LowRiskOverCommitment (PreScore, Score): prefers nodes where over-committing
//! limits is least risky, from the requests and limits on the node and a beta
//! distribution fitted to its measured load (upstream
//! `pkg/trimaran/lowriskovercommitment/lowriskovercommitment.go`).

use std::sync::Arc;

use crate::framework::{CycleState, ExtensionPoints, Handle, Plugin, PreScorePlugin, ScorePlugin, Status};
use crate::plugins::names;
use crate::snapshot::{NodeInfo, NodeList, PodInfo};

use super::args::{DEFAULT_RISK_LIMIT_WEIGHT, LowRiskOverCommitmentArgs, TrimaranError, decode};
use super::beta::{compute_probability, max_variance};
use super::metrics::{LoadMetricsSource, LoadSnapshot, ResourceData};
use super::resource_stats::{CpuMem, NodeRequestsAndLimits, Resource, ResourceStats, clamp01, pod_requests_and_limits};

/// Headroom below the largest variance a beta distribution allows (upstream
/// `MaxVarianceAllowance`).
pub const MAX_VARIANCE_ALLOWANCE: f64 = 0.99;

/// PreScore's state (upstream `PodResourcesStateData`), plus the cycle's payload.
#[derive(Clone)]
struct LrocCycle {
    snapshot: Option<Arc<LoadSnapshot>>,
    requests: CpuMem,
    limits: CpuMem,
}

/// The LowRiskOverCommitment plugin.
///
/// Score: 0 for a best-effort pod (no cpu or memory requests or limits) and for a
/// node without metrics; otherwise `round(100 · (1 - max(risk_cpu, risk_memory)))`
/// with each risk from [`LowRiskOverCommitment::compute_risk`]. NormalizeScore does
/// nothing (as upstream).
pub struct LowRiskOverCommitment {
    source: Arc<dyn LoadMetricsSource>,
    smoothing_window_size: i64,
    cpu_weight: f64,
    memory_weight: f64,
}

impl std::fmt::Debug for LowRiskOverCommitment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LowRiskOverCommitment")
            .field("smoothing_window_size", &self.smoothing_window_size)
            .field("cpu_weight", &self.cpu_weight)
            .field("memory_weight", &self.memory_weight)
            .finish_non_exhaustive()
    }
}

impl LowRiskOverCommitment {
    /// A plugin over `source` with `args` (defaulted here).
    pub fn new(mut args: LowRiskOverCommitmentArgs, source: Arc<dyn LoadMetricsSource>) -> Self {
        args.set_defaults();
        let weights = args.risk_limit_weights.unwrap_or_default();
        LowRiskOverCommitment {
            source,
            smoothing_window_size: args.smoothing_window_size.unwrap_or(super::args::DEFAULT_SMOOTHING_WINDOW_SIZE),
            cpu_weight: weights.get("cpu").copied().unwrap_or(DEFAULT_RISK_LIMIT_WEIGHT),
            memory_weight: weights.get("memory").copied().unwrap_or(DEFAULT_RISK_LIMIT_WEIGHT),
        }
    }

    /// From `pluginConfig` args (upstream `New`).
    pub fn from_config(args: Option<&serde_json::Value>, handle: &Handle) -> Result<Self, TrimaranError> {
        let name = names::LOW_RISK_OVER_COMMITMENT;
        let mut a: LowRiskOverCommitmentArgs = decode(name, args, &["smoothingWindowSize", "riskLimitWeights"])?;
        a.set_defaults();
        let source = super::resolve_source(name, &a.trimaran, handle)?;
        Ok(LowRiskOverCommitment::new(a, source))
    }

    fn score_with(&self, snapshot: Option<&LoadSnapshot>, requests: CpuMem, limits: CpuMem, node: &NodeInfo) -> i64 {
        if requests == CpuMem::default() && limits == CpuMem::default() {
            return 0;
        }
        let Some(load) = snapshot.and_then(|s| s.node(node.name())) else { return 0 };
        if !load.has_metrics {
            return 0;
        }
        let alloc = node.allocatable();
        let capacity = CpuMem { milli_cpu: alloc.milli_cpu, memory: alloc.memory };
        let nrl = NodeRequestsAndLimits::new(node.pods(), capacity, requests, limits);
        let risk_cpu = self.compute_risk(load.cpu, Resource::Cpu, node, &nrl);
        let risk_mem = self.compute_risk(load.memory, Resource::Memory, node, &nrl);
        let worst = if risk_cpu.is_nan() || risk_mem.is_nan() { f64::NAN } else { risk_cpu.max(risk_mem) };
        ((1.0 - worst) * 100.0).round() as i64
    }

    /// Upstream `computeRisk` for one resource: `clamp01(w·risk_limit + (1-w)·risk_load)`
    /// where `risk_limit = (limit - capacity)/(limit - request)` when the node's limits
    /// exceed its capacity, and `risk_load` is the probability that the measured use
    /// (a beta distribution with the metrics' mean and deviation, the deviation
    /// scaled by `sqrt(smoothingWindowSize)` and kept below the beta bound) exceeds the
    /// requests already on the node, conditioned on staying below their limits when
    /// those are under capacity.
    pub fn compute_risk(
        &self,
        data: ResourceData,
        resource: Resource,
        node: &NodeInfo,
        nrl: &NodeRequestsAndLimits,
    ) -> f64 {
        let pick = |c: CpuMem| match resource {
            Resource::Cpu => c.milli_cpu,
            Resource::Memory => c.memory,
        };
        let (request, limit) = (pick(nrl.request), pick(nrl.limit));
        let (request_minus_pod, limit_minus_pod) = (pick(nrl.request_minus_pod), pick(nrl.limit_minus_pod));
        let capacity = pick(nrl.capacity);

        let risk_limit = if limit > capacity {
            limit.saturating_sub(capacity) as f64 / limit.saturating_sub(request) as f64
        } else {
            0.0
        };

        let mut risk_load = 0.0;
        if let Some(stats) = ResourceStats::new(data, node, CpuMem::default(), resource) {
            let (mu, mut sigma) = stats.mu_sigma();
            sigma *= (self.smoothing_window_size as f64).sqrt();
            let bound = (max_variance(mu) * MAX_VARIANCE_ALLOWANCE).sqrt();
            sigma = if sigma.is_nan() || bound.is_nan() { f64::NAN } else { sigma.min(bound) };
            let threshold = clamp01(request_minus_pod as f64 / capacity as f64);
            let (mut prob, dist) = compute_probability(mu, sigma, threshold);
            if limit_minus_pod < capacity && request_minus_pod <= limit_minus_pod {
                let limit_threshold = limit_minus_pod as f64 / capacity as f64;
                if limit_threshold == 0.0 {
                    prob = 1.0;
                } else if let Some(d) = dist {
                    let limit_prob = d.distribution_function(limit_threshold);
                    if limit_prob > 0.0 {
                        prob = clamp01(prob / limit_prob);
                    }
                }
            }
            risk_load = 1.0 - prob;
        }
        let w = match resource {
            Resource::Cpu => self.cpu_weight,
            Resource::Memory => self.memory_weight,
        };
        clamp01(w * risk_limit + (1.0 - w) * risk_load)
    }
}

impl Plugin for LowRiskOverCommitment {
    fn name(&self) -> &str {
        names::LOW_RISK_OVER_COMMITMENT
    }
    fn register(self: Arc<Self>, points: &mut ExtensionPoints) {
        points.pre_score(self.clone()).score(self);
    }
}

impl PreScorePlugin for LowRiskOverCommitment {
    fn pre_score(&self, state: &mut CycleState, pod: &PodInfo, _nodes: NodeList<'_>) -> Status {
        let (requests, limits) = pod_requests_and_limits(&pod.pod);
        state.write(LrocCycle { snapshot: self.source.latest(), requests, limits });
        Status::SUCCESS
    }
}

impl ScorePlugin for LowRiskOverCommitment {
    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        if let Some(c) = state.read::<LrocCycle>() {
            return Ok(self.score_with(c.snapshot.as_deref(), c.requests, c.limits, node));
        }
        // Upstream recalculates the pod's resources when PreScore's state is missing.
        let (requests, limits) = pod_requests_and_limits(&pod.pod);
        let snap = self.source.latest();
        Ok(self.score_with(snap.as_deref(), requests, limits, node))
    }
}

#[cfg(test)]
#[allow(clippy::float_cmp, reason = "upstream's test tables compare exact values")]
mod tests {
    use super::*;
    use crate::plugins::trimaran::metrics::{AVERAGE, CPU, InMemoryLoadMetrics, MEMORY, Metric, STD};
    use crate::testing::NodeBuilder;

    fn cm(milli_cpu: i64, memory: i64) -> CpuMem {
        CpuMem { milli_cpu, memory }
    }

    // lowriskovercommitment_test.go TestLowRiskOverCommitment_computeRisk (plugin_A,
    // node_A, watcherData_A, nrla_A1, nrla_A2).
    #[test]
    fn compute_risk_table() {
        let pl = LowRiskOverCommitment::new(
            LowRiskOverCommitmentArgs {
                smoothing_window_size: Some(5),
                risk_limit_weights: Some([("cpu".to_owned(), 0.5), ("memory".to_owned(), 0.5)].into()),
                ..Default::default()
            },
            Arc::new(InMemoryLoadMetrics::new()),
        );
        let node = NodeInfo::new(Arc::new(NodeBuilder::new("node-A").cpu("4000m").memory("4Ki").build()));
        let metrics = [
            Metric::new(CPU, AVERAGE, 80.0),
            Metric::new(CPU, STD, 0.0),
            Metric::new(MEMORY, AVERAGE, 25.0),
            Metric::new(MEMORY, STD, 0.0),
        ];
        let a1 = NodeRequestsAndLimits {
            request: cm(2000, 2048),
            limit: cm(3000, 6144),
            request_minus_pod: cm(1000, 0),
            limit_minus_pod: cm(2000, 0),
            capacity: cm(4000, 4096),
        };
        let a2 = NodeRequestsAndLimits {
            request: cm(4000, 1024),
            limit: cm(5000, 7168),
            request_minus_pod: cm(3000, 512),
            limit_minus_pod: cm(4000, 6144),
            capacity: cm(4000, 4096),
        };
        let cpu = ResourceData::from_metrics(&metrics, CPU);
        let mem = ResourceData::from_metrics(&metrics, MEMORY);
        let cases = [
            ("test-cpu-1", cpu, Resource::Cpu, &a1, 0.5),
            ("test-mem-1", mem, Resource::Memory, &a1, 0.25),
            ("test-cpu-2", cpu, Resource::Cpu, &a2, 1.0),
            ("test-mem-2", mem, Resource::Memory, &a2, 0.75),
        ];
        for (name, data, res, nrl, want) in cases {
            assert_eq!(pl.compute_risk(data, res, &node, nrl), want, "{name}");
        }
    }
}
