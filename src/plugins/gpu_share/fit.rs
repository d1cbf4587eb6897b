//! [`GpuShareFit`], the Filter + Reserve plugin of GPU sharing, and [`DeviceSelect`],
//! how its Reserve picks devices; [`ReservedDevices`] records what it took.

use std::sync::Arc;

use parking_lot::Mutex;
use smallvec::SmallVec;

use super::state::{FilterView, GpuState, NodeGpus};
use super::{GpuRequest, GpuRequestState, TypicalPods, fgd, request_of};
use crate::framework::{CycleState, ExtensionPoints, FilterPlugin, Handle, Plugin, PreFilterPlugin, PreFilterResult};
use crate::framework::{ReservePlugin, Status};
use crate::rng::SplitMix64;
use crate::snapshot::{NodeInfo, PodInfo, Snapshot};

/// Name of [`GpuShareFit`] (the authors' `Open-Gpu-Share`).
pub const GPU_SHARE_FIT: &str = "GpuShareFit";

/// Devices GpuShareFit's Reserve took for the pod in this cycle.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReservedDevices {
    /// Node.
    pub node: String,
    /// Device indexes.
    pub devices: SmallVec<[u8; 8]>,
}

/// How GpuShareFit's Reserve picks devices for a sharing pod (whole-GPU pods always
/// take the first fully free devices, as the simulator's `AllocateExclusiveGpuId`).
#[derive(Debug)]
#[non_exhaustive]
pub enum DeviceSelect {
    /// The device with the least free milli that fits (first on ties): `best`.
    BestFit,
    /// The device with the most free milli (first on ties): `worst`.
    WorstFit,
    /// A uniformly random fitting device, seeded: `random`.
    Random(Mutex<u64>),
    /// The device whose use lowers the node's fragmentation most (FGD's own rule).
    Fgd(Arc<TypicalPods>),
}

impl DeviceSelect {
    /// Random device choice from `seed`.
    pub fn random(seed: u64) -> DeviceSelect {
        DeviceSelect::Random(Mutex::new(seed))
    }

    /// Devices for `req` on a node with `gpus` and `cpu_left` free millicores.
    pub fn choose(&self, gpus: &NodeGpus, cpu_left: i64, pod_cpu: i64, req: &GpuRequest) -> Option<SmallVec<[u8; 8]>> {
        if !req.is_share() {
            return gpus.exclusive_devices(req.count);
        }
        let fits = gpus.free.iter().enumerate().filter(|&(_, &f)| f >= req.milli);
        let pick = match self {
            DeviceSelect::BestFit => fits.min_by_key(|&(i, &f)| (f, i)).map(|(i, _)| i),
            DeviceSelect::WorstFit => fits.max_by_key(|&(i, &f)| (f, std::cmp::Reverse(i))).map(|(i, _)| i),
            DeviceSelect::Random(seed) => {
                let mut s = seed.lock();
                let mut rng = SplitMix64(*s);
                let mut chosen = None;
                for (n, (i, _)) in fits.enumerate() {
                    if rng.below(n as u64 + 1) == 0 {
                        chosen = Some(i);
                    }
                }
                *s = rng.0;
                chosen
            }
            DeviceSelect::Fgd(typical) => fgd::best_share_device(typical, gpus, cpu_left, pod_cpu, req).map(|(i, _)| i),
        };
        pick.map(|i| SmallVec::from_slice(&[i as u8]))
    }
}

/// Filter + Reserve for GPU sharing (the simulator's `Open-Gpu-Share`).
///
/// Filter: a pod without GPU request passes; otherwise the node must have GPUs of an
/// allowed model and `count` devices with `milli` free each. Reserve: picks devices by
/// its [`DeviceSelect`] on the node as the cycle's snapshot saw it (through the
/// [`Handle`]: build the scheduler with the same handle), records them in the
/// [`GpuState`] and in [`ReservedDevices`]. Unreserve releases exactly those.
pub struct GpuShareFit {
    state: Arc<GpuState>,
    handle: Handle,
    select: DeviceSelect,
}

impl GpuShareFit {
    /// The plugin over `state`, reading nodes through `handle`.
    pub fn new(state: Arc<GpuState>, handle: Handle, select: DeviceSelect) -> GpuShareFit {
        GpuShareFit { state, handle, select }
    }
}

impl Plugin for GpuShareFit {
    fn name(&self) -> &str {
        GPU_SHARE_FIT
    }
    fn register(self: Arc<Self>, points: &mut ExtensionPoints) {
        points.pre_filter(self.clone()).filter(self.clone()).reserve(self);
    }
}

impl PreFilterPlugin for GpuShareFit {
    fn pre_filter(&self, state: &mut CycleState, pod: &PodInfo, _: &Snapshot) -> (Option<PreFilterResult>, Status) {
        match GpuRequest::from_pod(&pod.pod) {
            Ok(r) => {
                match &r {
                    None => state.write(FilterView::NoGpu),
                    Some(req) => match self.state.view().filter_view(req) {
                        Some(view) => state.write(view),
                        // Never from from_pod; Filter then reads the table itself.
                        None => {
                            state.remove::<FilterView>();
                        }
                    },
                }
                state.write(GpuRequestState(r));
                (None, Status::SUCCESS)
            }
            Err(e) => (None, Status::unresolvable(e)),
        }
    }
}

/// GpuShareFit's Filter rejection.
const INSUFFICIENT_GPU: Status = Status::from_static(crate::framework::Code::Unschedulable, "Insufficient GPU");

impl FilterPlugin for GpuShareFit {
    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        if let Some(view) = state.read::<FilterView>() {
            return if view.fits(node) { Status::SUCCESS } else { INSUFFICIENT_GPU };
        }
        let req = match state.read::<GpuRequestState>() {
            Some(GpuRequestState(None)) => return Status::SUCCESS,
            Some(GpuRequestState(Some(r))) => std::borrow::Cow::Borrowed(r),
            None => match GpuRequest::from_pod(&pod.pod) {
                Ok(None) => return Status::SUCCESS,
                Ok(Some(r)) => std::borrow::Cow::Owned(r),
                Err(e) => return Status::unresolvable(e),
            },
        };
        let ok = self.state.view().fits(node, &req);
        if ok { Status::SUCCESS } else { INSUFFICIENT_GPU }
    }
}

impl ReservePlugin for GpuShareFit {
    fn reserve(&self, state: &mut CycleState, pod: &PodInfo, node: &str) -> Status {
        // Filter is over: let go of the table's summaries so allocating doesn't copy them.
        state.remove::<FilterView>();
        let Some(req) = request_of(state, pod) else { return Status::SUCCESS };
        let snap = self.handle.snapshot();
        let Some(info) = snap.get(node) else {
            return Status::error(format!(
                "node {node} is not in the handle's snapshot: build the scheduler with the handle GpuShareFit was given"
            ));
        };
        let cpu_left = info.allocatable().milli_cpu - info.requested().milli_cpu;
        let pod_cpu = pod.non_zero_requests.milli_cpu;
        let Some(devices) = self.state.with_node(info, |g| self.select.choose(g, cpu_left, pod_cpu, &req)) else {
            return Status::unschedulable(format!("no GPU device on {node} fits the pod"));
        };
        if let Err(e) = self.state.allocate(&pod.uid, info.node(), &req, &devices) {
            return Status::unschedulable(e.to_string());
        }
        state.write(ReservedDevices { node: node.to_owned(), devices });
        Status::SUCCESS
    }

    fn unreserve(&self, state: &mut CycleState, pod: &PodInfo, _node: &str) {
        if state.remove::<ReservedDevices>().is_some() {
            self.state.release(&pod.uid);
        }
    }
}
