//! [`HamiVgpu`], the plugin: HAMi's extender Filter split over the framework's
//! PreFilter, Filter, Score (the node policy), Reserve / Unreserve (booking device
//! memory and cores) and PreBind (writing HAMi's pod annotations).

use std::collections::BTreeMap;
use std::sync::Arc;

use super::allocation::{
    BIND_PHASE, BIND_TIME, NoopAnnotator, PodAnnotator, VGPU_DEVICES_ALLOCATED, VGPU_DEVICES_TO_ALLOCATE, VGPU_NODE,
    VGPU_TIME, encode_pod_devices,
};
use super::device::NODE_NVIDIA_REGISTER;
use super::fit::{PodFit, fit_pod};
use super::policy::{NodePolicy, ScoreInput, node_score};
use super::request::ResourceKeys;
use super::state::{PodAllocation, cordon_of};
use super::{HamiConfig, HamiState, PodRequests, Steering};
use crate::dra::mig::{MIG_ALLOCATIONS_ANNOTATION, encode_mig_allocations};
use crate::framework::{
    Code, CycleState, ExtensionPoints, FilterPlugin, Handle, NodeScore, Plugin, PodObserver, PreBindPlugin,
    PreFilterPlugin, PreFilterResult, PreScorePlugin, ReservePlugin, ScorePlugin, Status,
};
use crate::snapshot::{NodeInfo, NodeList, PodInfo, Snapshot};

/// Name of [`HamiVgpu`].
pub const HAMI_VGPU: &str = crate::plugins::names::HAMI_VGPU;

/// The pod's requests and steering, read at PreFilter.
#[derive(Debug, Clone)]
struct HamiCycle {
    reqs: PodRequests,
    steering: Steering,
}

/// What Reserve booked for the pod in this cycle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HamiReserved(pub PodAllocation);

/// The annotations PreBind wrote for the pod (also handed to the [`PodAnnotator`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HamiAnnotations(pub BTreeMap<String, String>);

/// HAMi-compatible vGPU sharing (NVIDIA): pods ask for devices, memory and core
/// percentages through container resources (`nvidia.com/gpu`, `gpumem`,
/// `gpumem-percentage`, `gpucores`) and steer the choice with annotations; nodes
/// register their devices in `hami.io/node-nvidia-register`.
///
/// - PreFilter reads the requests ([`PodRequests`]) and the pod's [`Steering`]; a pod
///   without a request skips the plugin, malformed scoring weights make it
///   unschedulable and unresolvable with upstream's message.
/// - Filter runs HAMi's whole-pod Fit on the node's devices ([`fit_pod`]), failing with
///   upstream's reason text; an unregistered node fails with `node unregistered`
///   (nodes are registered on first sight from their annotation; call
///   [`HamiState::add_node`] when it changes).
/// - Score ranks nodes as HAMi's node policy: the node's use score
///   ([`node_score`]) for binpack, its negation for spread; NormalizeScore gives the
///   best node(s) 100 and the others `0..=99` linearly, so that a profile with this
///   Score alone picks the node HAMi takes "last after sorting".
/// - Reserve fits again on the live table and books the devices; Unreserve gives them
///   back. PreBind writes `hami.io/vgpu-node`, `vgpu-time`,
///   `vgpu-devices-to-allocate`, `vgpu-devices-allocated`, `bind-phase=allocating`,
///   `bind-time` and, when MIG instances were taken, `hami.io/vgpu-mig-allocations`
///   through the [`PodAnnotator`] and into the cycle state
///   ([`HamiAnnotations`]).
///
/// As in HAMi's extender setup, the `nvidia.com/*` resources are HAMi's to judge: give
/// NodeResourcesFit `ignoredResourceGroups: ["nvidia.com"]` beside it.
pub struct HamiVgpu {
    cfg: HamiConfig,
    keys: ResourceKeys,
    state: Arc<HamiState>,
    handle: Handle,
    annotator: Box<dyn PodAnnotator>,
}

impl std::fmt::Debug for HamiVgpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HamiVgpu").field("cfg", &self.cfg).field("state", &self.state).finish_non_exhaustive()
    }
}

impl HamiVgpu {
    /// The plugin over `state`, reading nodes and time through `handle`.
    pub fn new(cfg: HamiConfig, state: Arc<HamiState>, handle: Handle) -> HamiVgpu {
        HamiVgpu { keys: cfg.keys(), cfg, state, handle, annotator: Box::new(NoopAnnotator) }
    }

    /// Writes PreBind's annotations through `annotator`.
    #[must_use]
    pub fn with_annotator(mut self, annotator: impl PodAnnotator) -> HamiVgpu {
        self.annotator = Box::new(annotator);
        self
    }

    /// The plugin from registry args ([`HamiConfig`] in camelCase; none: defaults),
    /// sharing the handle's [`HamiState`] (created and shared if absent).
    pub fn from_config(args: Option<&serde_json::Value>, handle: &Handle) -> Result<HamiVgpu, String> {
        let cfg: HamiConfig = match args {
            Some(v) if !v.is_null() => {
                serde_json::from_value(v.clone()).map_err(|e| format!("{HAMI_VGPU} args: {e}"))?
            }
            _ => HamiConfig::default(),
        };
        let state = handle.shared::<HamiState>().unwrap_or_else(|| {
            let s = HamiState::new();
            handle.set_shared(s.clone());
            s
        });
        Ok(HamiVgpu::new(cfg, state, handle.clone()))
    }

    /// The device table.
    pub fn state(&self) -> &Arc<HamiState> {
        &self.state
    }

    /// The configuration.
    pub fn config(&self) -> &HamiConfig {
        &self.cfg
    }

    fn unix_seconds(&self) -> i64 {
        let clock = self.handle.clock();
        let now = clock.now().as_nanos() as i128;
        let at = clock.unix_epoch_nanos().map_or(now, |zero| zero + now);
        (at / 1_000_000_000) as i64
    }

    /// Registers the node from its annotation if the table hasn't seen it.
    fn ensure_registered(&self, node: &NodeInfo) -> bool {
        if self.state.has_node(node.name()) {
            return true;
        }
        node.node().metadata.annotations.contains_key(NODE_NVIDIA_REGISTER) && self.state.add_node(node.node()).is_ok()
    }
}

impl Plugin for HamiVgpu {
    fn name(&self) -> &str {
        HAMI_VGPU
    }
    fn register(self: Arc<Self>, points: &mut ExtensionPoints) {
        points
            .pre_filter(self.clone())
            .filter(self.clone())
            .pre_score(self.clone())
            .score(self.clone())
            .reserve(self.clone())
            .pre_bind(self.clone())
            .pod_observer(self);
    }
}

const UNREGISTERED: Status = Status::from_static(Code::Unschedulable, "node unregistered");

impl PreFilterPlugin for HamiVgpu {
    fn pre_filter(&self, state: &mut CycleState, pod: &PodInfo, _: &Snapshot) -> (Option<PreFilterResult>, Status) {
        let reqs = PodRequests::with_keys(&pod.pod, &self.cfg, self.keys);
        if reqs.is_empty() {
            state.remove::<HamiCycle>();
            return (None, Status::SKIP);
        }
        match Steering::from_annotations(&pod.pod.metadata.annotations, &self.cfg) {
            Ok(steering) => {
                state.write(HamiCycle { reqs, steering });
                (None, Status::SUCCESS)
            }
            Err(e) => (None, Status::unresolvable(format!("calcScore failed {e} for pod {}", pod.pod.metadata.name))),
        }
    }
}

impl FilterPlugin for HamiVgpu {
    fn filter(&self, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> Status {
        let Some(c) = state.read::<HamiCycle>() else { return Status::SUCCESS };
        if !self.ensure_registered(node) {
            return UNREGISTERED;
        }
        let cordon = cordon_of(node.node());
        let mut out = PodFit::default();
        let r = self
            .state
            .with_node(node.name(), |devices, usage| fit_pod(devices, usage, cordon, &c.reqs, &c.steering, &mut out));
        match r {
            Some(Ok(())) => Status::SUCCESS,
            Some(Err(e)) => Status::unschedulable(e.to_string()),
            None => UNREGISTERED,
        }
    }
}

/// An `f32` as an `i64` in the same order (IEEE-754 total order).
#[inline]
fn ordered(f: f32) -> i64 {
    let i = f.to_bits() as i32;
    i64::from(i ^ (((i >> 31) as u32) >> 1) as i32)
}

impl HamiVgpu {
    /// The node's raw score key (higher is better for the pod's node policy).
    #[inline]
    fn node_key(&self, policy: NodePolicy, node: &NodeInfo) -> i64 {
        let s = self
            .state
            .with_node(node.name(), |devices, usage| {
                node_score(devices.iter().zip(usage).map(|(d, u)| ScoreInput {
                    kind: &d.kind,
                    count: d.count,
                    totalcore: d.devcore,
                    totalmem: d.devmem,
                    used: u.used,
                    usedcores: u.usedcores,
                    usedmem: u.usedmem,
                }))
            })
            .unwrap_or(0.0);
        match policy {
            NodePolicy::Binpack => ordered(s),
            NodePolicy::Spread => -ordered(s),
        }
    }
}

impl PreScorePlugin for HamiVgpu {
    fn pre_score(&self, state: &mut CycleState, _: &PodInfo, _: NodeList<'_>) -> Status {
        if state.read::<HamiCycle>().is_some() { Status::SUCCESS } else { Status::SKIP }
    }
}

impl ScorePlugin for HamiVgpu {
    fn score(&self, state: &CycleState, _: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        let policy = state.read::<HamiCycle>().map_or(NodePolicy::Binpack, |c| c.steering.node_policy);
        Ok(self.node_key(policy, node))
    }

    fn normalize(&self, _: &CycleState, _: &PodInfo, scores: &mut [NodeScore]) -> Status {
        let (Some(min), Some(max)) = (scores.iter().map(|s| s.score).min(), scores.iter().map(|s| s.score).max())
        else {
            return Status::SUCCESS;
        };
        for s in scores.iter_mut() {
            s.score =
                if s.score == max { 100 } else { (i128::from(s.score - min) * 99 / i128::from(max - min)) as i64 };
        }
        Status::SUCCESS
    }
}

impl ReservePlugin for HamiVgpu {
    fn reserve(&self, state: &mut CycleState, pod: &PodInfo, node: &str) -> Status {
        let Some(c) = state.read::<HamiCycle>() else { return Status::SUCCESS };
        let snap = self.handle.snapshot();
        let cordon = snap.get(node).and_then(|n| cordon_of(n.node()));
        match self.state.reserve(&pod.uid, node, cordon, &c.reqs, &c.steering) {
            Ok(a) => {
                state.write(HamiReserved(a));
                Status::SUCCESS
            }
            Err(e) => Status::unschedulable(e.to_string()),
        }
    }

    fn unreserve(&self, state: &mut CycleState, pod: &PodInfo, _node: &str) {
        if state.remove::<HamiReserved>().is_some() {
            self.state.release(&pod.uid);
        }
    }
}

impl PreBindPlugin for HamiVgpu {
    fn pre_bind(&self, state: &mut CycleState, pod: &PodInfo, node: &str) -> Status {
        let Some(HamiReserved(a)) = state.read::<HamiReserved>() else { return Status::SUCCESS };
        let now = self.unix_seconds().to_string();
        let devices = encode_pod_devices(&a.containers);
        let mut m = BTreeMap::new();
        m.insert(VGPU_NODE.to_owned(), node.to_owned());
        m.insert(VGPU_TIME.to_owned(), now.clone());
        m.insert(VGPU_DEVICES_TO_ALLOCATE.to_owned(), devices.clone());
        m.insert(VGPU_DEVICES_ALLOCATED.to_owned(), devices);
        m.insert(BIND_PHASE.to_owned(), "allocating".to_owned());
        m.insert(BIND_TIME.to_owned(), now);
        if let Some(mig) = encode_mig_allocations(&a.mig) {
            m.insert(MIG_ALLOCATIONS_ANNOTATION.to_owned(), mig);
        }
        if let Err(e) = self.annotator.annotate(&pod.pod, &m) {
            return Status::error(format!("patching pod {} annotations: {e}", pod.pod.key()));
        }
        state.write(HamiAnnotations(m));
        Status::SUCCESS
    }
}

impl PodObserver for HamiVgpu {
    /// A pod already on a node with HAMi's allocation annotation is booked (a pod the
    /// scheduler itself placed is booked already and left as is).
    fn pod_added(&self, pod: &PodInfo) {
        let node = pod.node_name();
        if !node.is_empty() && self.state.allocation(&pod.uid).is_none() {
            // A pod whose annotation doesn't fit the table is left out, as upstream
            // logs and skips pods it can't decode.
            let _ = self.state.record_bound(&pod.uid, &pod.pod, node);
        }
    }

    /// A deleted pod's devices are given back.
    fn pod_deleted(&self, pod: &PodInfo) {
        self.state.release(&pod.uid);
    }
}

#[cfg(test)]
#[path = "plugin_tests.rs"]
mod tests;
