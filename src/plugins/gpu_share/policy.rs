//! [`Policy`]: the six scheduling policies of the paper's experiments and the profile
//! each one runs with (GpuShareFit with the policy's device choice, filters, the policy).

use std::sync::Arc;

use super::TypicalPods;
use super::{BestFit, DeviceSelect, DotProduct, Fgd, GpuClustering, GpuPacking, GpuShareFit, GpuState, RandomScore};
use crate::framework::{Handle, Plugin};

/// The scheduling policies of the paper's experiments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Policy {
    /// RandomScore + random device.
    Random,
    /// DotProduct (Tetris) on [cpu, gpu] normalised by the max spec, best-fit device.
    DotProduct,
    /// GpuClustering, best-fit device.
    GpuClustering,
    /// GpuPacking, best-fit device.
    GpuPacking,
    /// BestFit, best-fit device.
    BestFit,
    /// Fragmentation gradient descent, FGD's own device choice.
    Fgd,
    /// HAMi with node policy binpack and GPU policy binpack
    /// ([`crate::plugins::hami::replay`] maps the trace's requests).
    HamiBinpack,
    /// HAMi with node policy spread and GPU policy spread.
    HamiSpread,
    /// HAMi with its chart's defaults: node policy binpack, GPU policy spread.
    Hami,
}

impl Policy {
    /// All six, in the paper's order.
    pub const ALL: [Policy; 6] =
        [Policy::Random, Policy::DotProduct, Policy::GpuClustering, Policy::GpuPacking, Policy::BestFit, Policy::Fgd];

    /// HAMi's policies: binpack (node and GPU), spread (node and GPU), and the chart's
    /// default (node binpack, GPU spread).
    pub const HAMI: [Policy; 3] = [Policy::HamiBinpack, Policy::HamiSpread, Policy::Hami];

    /// HAMi's GPU and node policy, `None` for the paper's policies.
    pub fn hami_policies(self) -> Option<(&'static str, &'static str)> {
        match self {
            Policy::HamiBinpack => Some(("binpack", "binpack")),
            Policy::HamiSpread => Some(("spread", "spread")),
            Policy::Hami => Some(("spread", "binpack")),
            _ => None,
        }
    }

    /// Adds what the policy's plugins read to a replay pod built from a trace row: the
    /// HAMi request for HAMi's policies ([`crate::plugins::hami::replay::add_gpu_share_request`]),
    /// nothing for the others.
    pub fn prepare_pod(self, pod: &mut crate::model::Pod) {
        if let Some(p) = self.hami_policies() {
            crate::plugins::hami::replay::add_gpu_share_request(pod, p);
        }
    }

    /// Adds what the policy's plugins read to a replay node: HAMi's device registration
    /// for HAMi's policies ([`crate::plugins::hami::replay::register_gpu_share_node`]).
    pub fn prepare_node(self, node: &mut crate::model::Node) {
        if self.hami_policies().is_some() {
            crate::plugins::hami::replay::register_gpu_share_node(node);
        }
    }

    /// Short name (`FGD`, `BestFit`, `DotProduct`...), as in the paper's figures (which
    /// label DotProduct `DotProd`) and the README.
    pub fn name(self) -> &'static str {
        match self {
            Policy::Random => "Random",
            Policy::DotProduct => "DotProduct",
            Policy::GpuClustering => "GpuClustering",
            Policy::GpuPacking => "GpuPacking",
            Policy::BestFit => "BestFit",
            Policy::Fgd => "FGD",
            Policy::HamiBinpack => "HAMi-binpack",
            Policy::HamiSpread => "HAMi-spread",
            Policy::Hami => "HAMi",
        }
    }

    /// Parses a policy name (case-insensitive; `dotproduct` and `dotprod` both work;
    /// `hami-binpack`, `hami-spread`, `hami`).
    pub fn parse(s: &str) -> Option<Policy> {
        let l = s.to_ascii_lowercase();
        Some(match l.as_str() {
            "random" | "randomfit" | "randomscore" => Policy::Random,
            "dotprod" | "dotproduct" => Policy::DotProduct,
            "gpuclustering" | "clustering" => Policy::GpuClustering,
            "gpupacking" | "packing" => Policy::GpuPacking,
            "bestfit" => Policy::BestFit,
            "fgd" => Policy::Fgd,
            "hami-binpack" | "hamibinpack" => Policy::HamiBinpack,
            "hami-spread" | "hamispread" => Policy::HamiSpread,
            "hami" => Policy::Hami,
            _ => return None,
        })
    }

    /// The profile of the paper's runs for this policy: GpuShareFit (with the policy's
    /// device choice) and `filters` (e.g. NodeResourcesFit; their PreScore and Score are
    /// disabled), then the policy as the only Score plugin. `seed` drives the random
    /// policy. GpuShareFit [narrows the nodes](GpuShareFit::narrow_nodes) at PreFilter
    /// for every policy but Random (the profile has no preemption, and with every node
    /// scored and ties to the smallest name their placements are the same either way;
    /// Random's pick depends on the order of the feasible nodes, which narrowing changes).
    pub fn profile(
        self,
        name: &str,
        state: &Arc<GpuState>,
        handle: &Handle,
        typical: &Arc<TypicalPods>,
        seed: u64,
        filters: Vec<Arc<dyn Plugin>>,
    ) -> Result<crate::framework::Profile, crate::framework::ConfigError> {
        if self.hami_policies().is_some() {
            return crate::plugins::hami::replay::profile(name, state, handle, filters);
        }
        let select = match self {
            Policy::Random => DeviceSelect::random(seed ^ 0xd1ce),
            Policy::Fgd => DeviceSelect::Fgd(typical.clone()),
            _ => DeviceSelect::BestFit,
        };
        // RandomScore picks by position in the feasible list, whose order narrowing
        // changes (the walk starts within the narrowed set, as upstream's does).
        let fit = GpuShareFit::new(state.clone(), handle.clone(), select).narrow_nodes(self != Policy::Random);
        let mut b = crate::framework::Profile::builder(name).plugin(fit);
        for f in filters {
            let name = f.name().to_owned();
            b = b
                .plugin_arc(f, 1)
                .disable(&name, crate::framework::ExtensionPoint::PreScore)
                .disable(&name, crate::framework::ExtensionPoint::Score);
        }
        b = match self {
            Policy::Random => b.plugin(RandomScore::new(seed)),
            Policy::DotProduct => b.plugin(DotProduct::new(state.clone())),
            Policy::GpuClustering => b.plugin(GpuClustering::new(state.clone())),
            Policy::GpuPacking => b.plugin(GpuPacking::new(state.clone())),
            Policy::BestFit => b.plugin(BestFit::new(state.clone())),
            Policy::Fgd => b.plugin(Fgd::new(state.clone(), typical.clone())),
            // Built by the HAMi profile above.
            Policy::HamiBinpack | Policy::HamiSpread | Policy::Hami => b,
        };
        b.percentage_of_nodes_to_score(100).build()
    }
}
