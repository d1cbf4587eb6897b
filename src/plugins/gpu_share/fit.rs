//! [`GpuShareFit`], the Filter + Reserve plugin of GPU sharing, and [`DeviceSelect`],
//! how its Reserve picks devices; [`ReservedDevices`] records what it took.

use std::sync::Arc;

use parking_lot::Mutex;
use smallvec::SmallVec;

use super::state::{FilterView, GpuState, NodeGpus};
use super::{GpuRequest, GpuRequestState, TypicalPods, fgd, request_of};
use crate::framework::{
    CycleState, ExtensionPoints, FilterPlugin, Handle, NodePositions, Plugin, PreFilterPlugin, PreFilterResult,
};
use crate::framework::{ReservePlugin, Status};
use crate::rng::SplitMix64;
use crate::snapshot::{NodeInfo, NodeList, PodInfo, Snapshot};

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
///
/// PreFilter returns Skip for a pod without GPU request, so the cycle doesn't call a
/// Filter that would pass every node. It may also narrow the nodes the cycle walks to
/// those with room for the request ([`GpuShareFit::narrow_nodes`]; off by default).
pub struct GpuShareFit {
    state: Arc<GpuState>,
    handle: Handle,
    select: DeviceSelect,
    narrow: bool,
    /// The last snapshot found to have every node in the table,
    /// `(snapshot id, structure generation, table membership)`, and each table
    /// entry's position in it ([`GpuView::entry_positions`](super::GpuView)).
    covered: Mutex<Option<(Covered, Arc<Vec<u32>>)>>,
    /// The narrowed sets of the last few request shapes, most recent last.
    kept: Mutex<Vec<KeptSet>>,
}

/// `(snapshot id, structure generation, table membership)`: while it stays the same,
/// the snapshot's positions and the table's entries keep their meaning.
type Covered = (u64, u64, u64);

/// A narrowed node set kept between cycles, as positions in a snapshot: exact for
/// `req` when the table's last stamp was `stamp` and the snapshot and membership
/// were `covered`.
struct KeptSet {
    req: GpuRequest,
    stamp: u64,
    covered: Covered,
    positions: NodePositions,
}

/// Request shapes whose narrowed sets GpuShareFit keeps.
const KEPT_SHAPES: usize = 32;

impl GpuShareFit {
    /// The plugin over `state`, reading nodes through `handle`.
    pub fn new(state: Arc<GpuState>, handle: Handle, select: DeviceSelect) -> GpuShareFit {
        GpuShareFit { state, handle, select, narrow: false, covered: Mutex::new(None), kept: Mutex::new(Vec::new()) }
    }

    /// With `on`, PreFilter narrows the nodes to exactly those this plugin's Filter will
    /// accept, through a [`PreFilterResult`] node set (upstream's
    /// `PreFilterResult.NodeNames`, here as positions in the cycle's snapshot:
    /// [`PreFilterResult::at_positions`]), found from an index of the device table by model
    /// and free capacity; the cycle then never walks the nodes without room. A trace
    /// replay's Filter phase walks a few hundred of its 1,213 nodes instead of all.
    ///
    /// Off by default, because it changes more than speed:
    ///
    /// - nodes left out get no Filter status of their own: the failure says
    ///   "node(s) didn't satisfy plugin(s) [GpuShareFit]" for them (an
    ///   UnschedulableAndUnresolvable status), instead of "Insufficient GPU" per node
    ///   (Unschedulable), and an empty set ends the cycle at PreFilter;
    /// - for that reason preemption (e.g. DefaultPreemption) no longer considers those
    ///   nodes, although evicting GPU pods there could make room.
    ///
    /// The feasible nodes don't change: the set is exact, and every node of it passes
    /// Filter. In such a cycle Filter checks nothing (one read of the cycle state): the
    /// cycle filters no node outside a PreFilter node set (those are rejected as
    /// UnschedulableAndUnresolvable without a Filter call, as upstream does). Their order may: the cycle walks a narrowed set from its rotating start
    /// within the set (as upstream `findNodesThatPassFilters` does), so a Score plugin
    /// that depends on the order, or sampling below 100% of nodes, can choose differently.
    /// With every node scored and a deterministic tie-break, placements are the same.
    /// It narrows only when every node of the cycle's snapshot is in the [`GpuState`]
    /// table (registered with [`GpuState::add_node`] or given an allocation), since
    /// Filter judges the others from the node itself; the check runs once per snapshot
    /// node list and table membership. [`Policy::profile`](super::Policy::profile) turns it on:
    /// the paper's runs have no preemption.
    #[must_use]
    pub fn narrow_nodes(mut self, on: bool) -> GpuShareFit {
        self.narrow = on;
        self
    }

    /// The positions in the cycle's snapshot of the table nodes whose summary fits
    /// `req` (the nodes of [`GpuView::fitting_names`](super::GpuView)): the set kept
    /// from the last cycle of the same request shape, brought up to date with the
    /// entries changed since (an allocation changes one), instead of listed afresh;
    /// listed afresh after a node was added or removed or the snapshot's node list
    /// was rebuilt.
    fn narrowed_positions(
        &self,
        view: &super::GpuView<'_>,
        req: &GpuRequest,
        covered: Covered,
        at: &[u32],
        len: usize,
    ) -> NodePositions {
        let stamp = view.last_stamp();
        let fresh = || {
            let mut p = NodePositions::new(len);
            view.for_each_fitting(req, |e| p.insert(at.get(e).map_or(usize::MAX, |&i| i as usize)));
            p
        };
        let mut kept = self.kept.lock();
        let mut k = if let Some(pos) = kept.iter().position(|k| k.req == *req) {
            let mut k = kept.remove(pos);
            let p = &mut k.positions;
            let updated = k.covered == covered
                && view.for_each_changed(req, k.stamp, |e, fits| {
                    let i = at.get(e).map_or(usize::MAX, |&i| i as usize);
                    if fits { p.insert(i) } else { p.remove(i) }
                });
            if !updated {
                k.positions = fresh();
            }
            k
        } else {
            if kept.len() >= KEPT_SHAPES {
                kept.remove(0);
            }
            KeptSet { req: req.clone(), stamp, covered, positions: fresh() }
        };
        (k.stamp, k.covered) = (stamp, covered);
        let positions = k.positions.clone();
        kept.push(k);
        positions
    }

    /// Whether every node of `snapshot` is in the table `view` shows, and if so each
    /// table entry's position in it (cached per snapshot node list and table
    /// membership).
    fn covers(&self, view: &super::GpuView<'_>, snapshot: &Snapshot) -> Option<(Covered, Arc<Vec<u32>>)> {
        let key = (snapshot.id(), snapshot.structure_generation(), view.membership());
        let mut covered = self.covered.lock();
        if let Some((k, at)) = &*covered
            && *k == key
        {
            return Some((key, at.clone()));
        }
        *covered = view.covers(snapshot).then(|| (key, Arc::new(view.entry_positions(snapshot))));
        covered.clone()
    }
}

impl Plugin for GpuShareFit {
    fn name(&self) -> &str {
        GPU_SHARE_FIT
    }
    fn register(self: Arc<Self>, points: &mut ExtensionPoints) {
        points.pre_filter(self.clone()).filter(self.clone()).reserve(self.clone()).node_observer(self);
    }
}

impl crate::framework::NodeObserver for GpuShareFit {
    /// Drops the node's device table entry ([`GpuState::remove_node`]).
    fn node_removed(&self, name: &str) {
        self.state.remove_node(name);
    }
}

impl PreFilterPlugin for GpuShareFit {
    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        match GpuRequest::from_pod(&pod.pod) {
            Ok(r) => {
                let mut narrowed = None;
                match &r {
                    None => state.write(FilterView::NoGpu),
                    Some(req) => {
                        // One read of the table for the Filter view and the node set, so
                        // the set is exactly what that view accepts.
                        let view = self.state.view();
                        match view.filter_view(req) {
                            Some(fv) => {
                                if self.narrow
                                    && let Some((covered, at)) = self.covers(&view, snapshot)
                                {
                                    let positions = self.narrowed_positions(&view, req, covered, &at, snapshot.len());
                                    narrowed = Some(PreFilterResult::at_positions(positions));
                                    // Every node of the set fits, and the cycle filters
                                    // no other: Filter has nothing left to check.
                                    state.write(FilterView::Narrowed);
                                } else {
                                    state.write(fv);
                                }
                            }
                            // Never from from_pod; Filter then reads the table itself.
                            None => {
                                state.remove::<FilterView>();
                            }
                        }
                    }
                }
                // No GPU asked: Filter would pass every node, so the cycle skips it
                // (as upstream NodeAffinity's PreFilter does for a pod without
                // required affinity, `pkg/scheduler/framework/plugins/nodeaffinity`).
                let status = if r.is_none() { Status::SKIP } else { Status::SUCCESS };
                state.write(GpuRequestState(r));
                (narrowed, status)
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

    /// [`FilterPlugin::filter`] over a chunk, reading the cycle state once: nothing to
    /// do in a cycle PreFilter narrowed exactly (or for a pod without GPU request), and
    /// one table summary per node otherwise; the same statuses node by node.
    fn filter_nodes(&self, state: &CycleState, pod: &PodInfo, nodes: NodeList<'_>, statuses: &mut [Status]) -> u64 {
        use crate::plugins::helper::filter_each;
        match state.read::<FilterView>() {
            Some(FilterView::NoGpu | FilterView::Narrowed) => 0,
            Some(view) => filter_each(nodes, statuses, |node| (!view.fits(node)).then_some(INSUFFICIENT_GPU)),
            None => filter_each(nodes, statuses, |node| {
                let s = self.filter(state, pod, node);
                (!s.is_success()).then_some(s)
            }),
        }
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
