//! The vGPU device table [`HamiState`]: every registered node's devices and their use,
//! and each pod's [`PodAllocation`], behind one lock; allocating refuses anything that
//! would take a device past its slices, memory or cores.

use std::sync::Arc;

use ahash::AHashMap;
use parking_lot::RwLock;
use smallvec::SmallVec;

use super::allocation::{ContainerDevice, VGPU_DEVICES_ALLOCATED, decode_pod_devices};
use super::device::MIG_MODE;
use super::device::{DEVICE_CORDON, node_devices};
use super::fit::{FitFailure, PodFit, Usage, fit_pod};
use super::{DeviceInfo, HamiError, PodRequests, Steering};
use crate::dra::mig::{HamiMigAllocation, MIG_ALLOCATIONS_ANNOTATION, decode_mig_allocations, placement_mask};
use crate::model::{HeldSymbol, Node, Pod, Symbol};

/// What one device of a pod's allocation adds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceDelta {
    /// Device UUID.
    pub uuid: String,
    /// Use added.
    pub usage: Usage,
}

/// A pod's devices on a node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodAllocation {
    /// Node name.
    pub node: String,
    /// Use added per device (init-container peaks folded in).
    pub deltas: Vec<DeviceDelta>,
    /// Each container's devices, init containers first (the annotation's content).
    pub containers: Vec<Vec<ContainerDevice>>,
    /// The MIG instances among them (`hami.io/vgpu-mig-allocations`, upstream
    /// `EncodeMigAllocations`: container and device positions as in `containers`).
    pub mig: Vec<HamiMigAllocation>,
}

struct NodeEntry {
    /// The node's name, held (not pinned) while the table knows the node.
    _name: HeldSymbol,
    devices: Vec<DeviceInfo>,
    usage: Vec<Usage>,
}

#[derive(Default)]
struct Inner {
    nodes: AHashMap<Symbol, NodeEntry>,
    pods: AHashMap<Arc<str>, PodAllocation>,
}

/// The device table shared by the [`HamiVgpu`](super::HamiVgpu) plugin's extension
/// points (and by whoever records pods bound elsewhere).
#[derive(Default)]
pub struct HamiState {
    inner: RwLock<Inner>,
}

impl std::fmt::Debug for HamiState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let i = self.inner.read();
        f.debug_struct("HamiState").field("nodes", &i.nodes.len()).field("pods", &i.pods.len()).finish()
    }
}

impl HamiState {
    /// An empty table.
    pub fn new() -> Arc<HamiState> {
        Arc::new(HamiState::default())
    }

    /// Registers `node`'s devices from its `hami.io/node-nvidia-register` annotation, or
    /// refreshes them; returns how many it has. Use already booked stays on devices
    /// whose UUID is still registered. Call it again when the annotation changes.
    pub fn add_node(&self, node: &Node) -> Result<usize, HamiError> {
        let devices = node_devices(node)?;
        self.set_devices(node.name(), devices)
    }

    /// Registers `devices` for node `name` (the builder way, without an annotation).
    pub fn set_devices(&self, name: &str, devices: Vec<DeviceInfo>) -> Result<usize, HamiError> {
        let n = devices.len();
        let mut inner = self.inner.write();
        let held = HeldSymbol::new(name);
        let mut usage = vec![Usage::default(); n];
        for a in inner.pods.values().filter(|a| a.node == name) {
            for d in &a.deltas {
                if let Some(i) = devices.iter().position(|x| x.id == d.uuid) {
                    add(&mut usage[i], d.usage);
                }
            }
        }
        inner.nodes.insert(held.symbol(), NodeEntry { _name: held, devices, usage });
        Ok(n)
    }

    /// Forgets a node (its pods' allocations stay until released).
    pub fn remove_node(&self, name: &str) {
        if let Some(s) = Symbol::lookup(name) {
            self.inner.write().nodes.remove(&s);
        }
    }

    /// Whether `name` is registered.
    pub fn has_node(&self, name: Symbol) -> bool {
        self.inner.read().nodes.contains_key(&name)
    }

    /// Runs `f` on the node's devices and their use; `None` if unregistered.
    #[inline]
    pub fn with_node<R>(&self, name: Symbol, f: impl FnOnce(&[DeviceInfo], &[Usage]) -> R) -> Option<R> {
        let inner = self.inner.read();
        inner.nodes.get(&name).map(|e| f(&e.devices, &e.usage))
    }

    /// The node's devices with their use.
    pub fn usage(&self, name: &str) -> Option<Vec<(DeviceInfo, Usage)>> {
        let inner = self.inner.read();
        let e = inner.nodes.get(&Symbol::lookup(name)?)?;
        Some(e.devices.iter().cloned().zip(e.usage.iter().copied()).collect())
    }

    /// The pod's allocation.
    pub fn allocation(&self, uid: &str) -> Option<PodAllocation> {
        self.inner.read().pods.get(uid).cloned()
    }

    /// Fits the pod on the node's devices as they stand and books the result, under
    /// one lock (the plugin's Reserve). `cordon` is the node's `hami.io/device-cordon`.
    pub fn reserve(
        &self,
        uid: &str,
        node: &str,
        cordon: Option<&str>,
        reqs: &PodRequests,
        st: &Steering,
    ) -> Result<PodAllocation, ReserveError> {
        let mut inner = self.inner.write();
        if inner.pods.contains_key(uid) {
            return Err(ReserveError::State(HamiError::AlreadyAllocated(uid.to_owned())));
        }
        let Some(entry) = Symbol::lookup(node).and_then(|s| inner.nodes.get_mut(&s)) else {
            return Err(ReserveError::Fit(FitFailure::Unregistered));
        };
        let mut fit = PodFit::default();
        fit_pod(&entry.devices, &entry.usage, cordon, reqs, st, &mut fit).map_err(ReserveError::Fit)?;
        let mut containers = vec![Vec::new(); reqs.containers.len()];
        let mut mig = Vec::new();
        for p in &fit.picks {
            let info = &entry.devices[p.device];
            let c: &mut Vec<ContainerDevice> = &mut containers[p.container];
            if let Some(m) = p.mig {
                mig.push(HamiMigAllocation {
                    container_index: p.container as i64,
                    device_index: c.len() as i64,
                    gpu_uuid: info.id.clone(),
                    profile: info.mig_profiles[m.profile].name.clone(),
                    placement: m.placement,
                    ..HamiMigAllocation::default()
                });
            }
            c.push(ContainerDevice {
                uuid: info.id.clone(),
                kind: super::NVIDIA_GPU_DEVICE.to_owned(),
                usedmem: p.usedmem,
                usedcores: p.usedcores,
            });
        }
        let deltas: Vec<DeviceDelta> = fit
            .deltas
            .iter()
            .zip(&entry.devices)
            .filter(|(d, _)| **d != Usage::default())
            .map(|(d, info)| DeviceDelta { uuid: info.id.clone(), usage: *d })
            .collect();
        let alloc = PodAllocation { node: node.to_owned(), deltas, containers, mig };
        apply(entry, &alloc).map_err(ReserveError::State)?;
        inner.pods.insert(uid.into(), alloc.clone());
        Ok(alloc)
    }

    /// Books `alloc` for pod `uid`, refusing (changing nothing) a pod that already holds
    /// devices, an unknown node or device, or a device it would take past its slices,
    /// memory or cores.
    pub fn allocate(&self, uid: &str, alloc: PodAllocation) -> Result<(), HamiError> {
        let mut inner = self.inner.write();
        if inner.pods.contains_key(uid) {
            return Err(HamiError::AlreadyAllocated(uid.to_owned()));
        }
        let Some(entry) = Symbol::lookup(&alloc.node).and_then(|s| inner.nodes.get_mut(&s)) else {
            return Err(HamiError::UnknownNode(alloc.node.clone()));
        };
        apply(entry, &alloc)?;
        inner.pods.insert(uid.into(), alloc);
        Ok(())
    }

    /// Books a pod bound elsewhere from its `hami.io/vgpu-devices-allocated`
    /// annotation: per device, the larger of its init containers' largest use and its
    /// app containers' summed use (one slice per container entry). The
    /// `hami.io/vgpu-mig-allocations` reservations (upstream `getNodesUsage`) mark
    /// their placements in use on the device they name: taken in order by the device
    /// entries of that GPU, the ones left over added to it as well; a malformed MIG
    /// annotation is ignored, as upstream.
    pub fn record_bound(&self, uid: &str, pod: &Pod, node: &str) -> Result<(), HamiError> {
        let Some(text) = pod.metadata.annotations.get(VGPU_DEVICES_ALLOCATED) else {
            return Ok(());
        };
        let containers = decode_pod_devices(text)?;
        let mig = pod
            .metadata
            .annotations
            .get(MIG_ALLOCATIONS_ANNOTATION)
            .and_then(|raw| decode_mig_allocations(raw).ok())
            .unwrap_or_default();
        let mut left: Vec<&HamiMigAllocation> = mig.iter().collect();
        let mut take = |uuid: &str| -> u64 {
            match left.iter().position(|a| a.gpu_uuid == uuid) {
                Some(i) => placement_mask(left.remove(i).placement).unwrap_or(0),
                None => 0,
            }
        };
        let inits = pod.spec.init_containers.len();
        let mut app: Vec<DeviceDelta> = Vec::new();
        let mut init: Vec<DeviceDelta> = Vec::new();
        for (i, c) in containers.iter().enumerate() {
            for d in c {
                let u = Usage { mig: take(&d.uuid), ..Usage::new(1, d.usedmem, d.usedcores) };
                if i < inits {
                    match init.iter_mut().find(|x| x.uuid == d.uuid) {
                        Some(x) => x.usage = max(x.usage, u),
                        None => init.push(DeviceDelta { uuid: d.uuid.clone(), usage: u }),
                    }
                } else {
                    match app.iter_mut().find(|x| x.uuid == d.uuid) {
                        Some(x) => add(&mut x.usage, u),
                        None => app.push(DeviceDelta { uuid: d.uuid.clone(), usage: u }),
                    }
                }
            }
        }
        for i in init {
            match app.iter_mut().find(|x| x.uuid == i.uuid) {
                Some(x) => x.usage = max(x.usage, i.usage),
                None => app.push(i),
            }
        }
        for a in left {
            let m = placement_mask(a.placement).unwrap_or(0);
            match app.iter_mut().find(|x| x.uuid == a.gpu_uuid) {
                Some(x) => x.usage.mig |= m,
                None => app.push(DeviceDelta { uuid: a.gpu_uuid.clone(), usage: Usage { mig: m, ..Usage::default() } }),
            }
        }
        self.allocate(uid, PodAllocation { node: node.to_owned(), deltas: app, containers, mig })
    }

    /// Gives back what pod `uid` holds.
    pub fn release(&self, uid: &str) -> Option<PodAllocation> {
        let mut inner = self.inner.write();
        let a = inner.pods.remove(uid)?;
        if let Some(e) = Symbol::lookup(&a.node).and_then(|s| inner.nodes.get_mut(&s)) {
            for d in &a.deltas {
                if let Some(i) = e.devices.iter().position(|x| x.id == d.uuid) {
                    let u = &mut e.usage[i];
                    u.used -= d.usage.used;
                    u.usedmem -= d.usage.usedmem;
                    u.usedcores -= d.usage.usedcores;
                    u.mig &= !d.usage.mig;
                }
            }
        }
        Some(a)
    }
}

/// Why Reserve could not book a pod.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReserveError {
    /// The pod no longer fits.
    #[error("{0}")]
    Fit(FitFailure),
    /// The table refused it.
    #[error(transparent)]
    State(HamiError),
}

/// The node's cordon list as upstream reads it.
pub(super) fn cordon_of(node: &Node) -> Option<&str> {
    node.metadata.annotations.get(DEVICE_CORDON).map(String::as_str)
}

fn add(u: &mut Usage, d: Usage) {
    u.used += d.used;
    u.usedmem += d.usedmem;
    u.usedcores += d.usedcores;
    u.mig |= d.mig;
}

fn max(a: Usage, b: Usage) -> Usage {
    a.max(b)
}

/// Adds `alloc` to the node's use after checking every device (all or nothing): MIG
/// slices must be free on a `mig`-mode device, and a non-MIG device takes none. A MIG
/// device's cores are not capped: upstream books each instance's core percentage
/// rounded up (seven `1g` on an A100 make 105), so its placements are its capacity.
fn apply(e: &mut NodeEntry, alloc: &PodAllocation) -> Result<(), HamiError> {
    let mut idx: SmallVec<[usize; 8]> = SmallVec::new();
    for d in &alloc.deltas {
        let Some(i) = e.devices.iter().position(|x| x.id == d.uuid) else {
            return Err(HamiError::UnknownDevice { node: alloc.node.clone(), uuid: d.uuid.clone() });
        };
        let (info, u) = (&e.devices[i], e.usage[i]);
        let over = |have: i32, add: i32, cap: i32| add < 0 || i64::from(have) + i64::from(add) > i64::from(cap);
        if idx.contains(&i)
            || over(u.used, d.usage.used, info.count)
            || over(u.usedmem, d.usage.usedmem, info.devmem)
            || (info.mode != MIG_MODE && over(u.usedcores, d.usage.usedcores, info.devcore))
            || d.usage.mig & u.mig != 0
            || (d.usage.mig != 0 && info.mode != MIG_MODE)
        {
            return Err(HamiError::OverCommit { node: alloc.node.clone(), uuid: d.uuid.clone() });
        }
        idx.push(i);
    }
    for (d, &i) in alloc.deltas.iter().zip(&idx) {
        add(&mut e.usage[i], d.usage);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::hami::{ContainerRequest, device};
    use crate::testing::NodeBuilder;

    fn node(n: usize) -> Node {
        let mut node = NodeBuilder::new("n1").build();
        let devs: Vec<DeviceInfo> =
            (0..n).map(|i| DeviceInfo::gpu(&format!("GPU-{i}"), "NVIDIA-A100", 1000).with_index(i as u32)).collect();
        device::register(&mut node, &devs);
        node
    }

    #[test]
    fn reserve_release_and_refusals() {
        let s = HamiState::new();
        assert_eq!(s.add_node(&node(2)).unwrap(), 2);
        let reqs = PodRequests {
            containers: smallvec::smallvec![Some(ContainerRequest::nvidia(1, 600, 101, 60))],
            init_containers: 0,
        };
        let st = Steering::default();
        let a = s.reserve("p1", "n1", None, &reqs, &st).unwrap();
        assert_eq!(a.containers[0].len(), 1);
        assert!(matches!(
            s.reserve("p1", "n1", None, &reqs, &st),
            Err(ReserveError::State(HamiError::AlreadyAllocated(_)))
        ));
        s.reserve("p2", "n1", None, &reqs, &st).unwrap();
        // Both devices hold 600 of 1000 MiB now.
        assert!(matches!(s.reserve("p3", "n1", None, &reqs, &st), Err(ReserveError::Fit(_))));
        let over = PodAllocation {
            deltas: vec![DeviceDelta { uuid: "GPU-0".into(), usage: Usage::new(1, 500, 0) }],
            ..a.clone()
        };
        assert!(matches!(s.allocate("p4", over), Err(HamiError::OverCommit { .. })));
        let unknown =
            PodAllocation { deltas: vec![DeviceDelta { uuid: "GPU-9".into(), usage: Usage::default() }], ..a.clone() };
        assert!(matches!(s.allocate("p5", unknown), Err(HamiError::UnknownDevice { .. })));
        assert_eq!(s.release("p1"), Some(a));
        s.reserve("p3", "n1", None, &reqs, &st).unwrap();
        // Re-registering keeps the use on devices still there.
        s.add_node(&node(2)).unwrap();
        let used: i32 = s.usage("n1").unwrap().iter().map(|(_, u)| u.usedmem).sum();
        assert_eq!(used, 1200);
    }

    #[test]
    fn record_bound_from_annotation() {
        let s = HamiState::new();
        s.add_node(&node(1)).unwrap();
        let mut pod = Pod::default();
        pod.spec.init_containers.push(crate::model::Container::default());
        pod.spec.containers.push(crate::model::Container::default());
        pod.metadata
            .annotations
            .insert(VGPU_DEVICES_ALLOCATED.into(), "GPU-0,NVIDIA,800,80:;GPU-0,NVIDIA,300,30:;".into());
        s.record_bound("b", &pod, "n1").unwrap();
        assert_eq!(s.usage("n1").unwrap()[0].1, Usage::new(1, 800, 80));
        pod.metadata.annotations.insert(VGPU_DEVICES_ALLOCATED.into(), "GPU-0,NVIDIA,x,1:;".into());
        assert!(s.record_bound("c", &pod, "n1").is_err());
    }
}
