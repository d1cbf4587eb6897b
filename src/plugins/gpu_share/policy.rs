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
}

impl Policy {
    /// All six, in the paper's order.
    pub const ALL: [Policy; 6] =
        [Policy::Random, Policy::DotProduct, Policy::GpuClustering, Policy::GpuPacking, Policy::BestFit, Policy::Fgd];

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
        }
    }

    /// Parses a policy name (case-insensitive; `dotproduct` and `dotprod` both work).
    pub fn parse(s: &str) -> Option<Policy> {
        let l = s.to_ascii_lowercase();
        Some(match l.as_str() {
            "random" | "randomfit" | "randomscore" => Policy::Random,
            "dotprod" | "dotproduct" => Policy::DotProduct,
            "gpuclustering" | "clustering" => Policy::GpuClustering,
            "gpupacking" | "packing" => Policy::GpuPacking,
            "bestfit" => Policy::BestFit,
            "fgd" => Policy::Fgd,
            _ => return None,
        })
    }

    /// The profile of the paper's runs for this policy: GpuShareFit (with the policy's
    /// device choice) and `filters` (e.g. NodeResourcesFit; their PreScore and Score are
    /// disabled), then the policy as the only Score plugin. `seed` drives the random
    /// policy.
    pub fn profile(
        self,
        name: &str,
        state: &Arc<GpuState>,
        handle: &Handle,
        typical: &Arc<TypicalPods>,
        seed: u64,
        filters: Vec<Arc<dyn Plugin>>,
    ) -> Result<crate::framework::Profile, crate::framework::ConfigError> {
        let select = match self {
            Policy::Random => DeviceSelect::random(seed ^ 0xd1ce),
            Policy::Fgd => DeviceSelect::Fgd(typical.clone()),
            _ => DeviceSelect::BestFit,
        };
        let mut b =
            crate::framework::Profile::builder(name).plugin(GpuShareFit::new(state.clone(), handle.clone(), select));
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
        };
        b.percentage_of_nodes_to_score(100).build()
    }
}
