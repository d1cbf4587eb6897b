//! GpuTopology: place multi-GPU pods on the node that can offer the best
//! interconnected set of free GPUs, and reserve exactly that set.
//!
//! Beyond upstream: kube-scheduler counts GPUs as an integer resource. This plugin
//! uses the [`crate::topology`] search per node: PreScore finds each feasible
//! node's best free set for the pod's GPU count, Score rates it against what the
//! same machine would give when empty ([`crate::topology::score_against`], 0..=100),
//! and Reserve marks the chosen GPUs busy in a [`GpuTopologyRegistry`] the caller
//! shares (Unreserve frees them exactly). Nodes without registered topology pass
//! Filter (NodeResourcesFit still counts their GPUs) and score 0.

use std::sync::Arc;

use ahash::AHashMap;
use parking_lot::{Mutex, RwLock};
use serde::{Deserialize, Serialize};

use crate::framework::{
    CycleState, ExtensionPoints, FilterPlugin, Plugin, PreFilterPlugin, PreFilterResult, PreScorePlugin, ReservePlugin,
    ScorePlugin, Status,
};
use crate::model::{HeldSymbol, Symbol};
use crate::plugins::names;
use crate::snapshot::{NodeInfo, NodeList, PodInfo, Snapshot};
use crate::topology::{GpuMatrix, GpuSet, Placement, SearchOptions, best_subset, score_against};

/// `GpuTopologyArgs`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct GpuTopologyArgs {
    /// The extended resource that counts GPUs (default `nvidia.com/gpu`).
    pub resource_name: String,
    /// Require one local NIC per GPU (GPUDirect RDMA).
    pub nic_aligned: bool,
    /// Require all GPUs on one NUMA node.
    pub numa_aligned: bool,
    /// Prefer sets that keep the remaining free GPUs well connected (default on).
    pub fragmentation_aware: bool,
}

impl Default for GpuTopologyArgs {
    fn default() -> Self {
        GpuTopologyArgs {
            resource_name: "nvidia.com/gpu".into(),
            nic_aligned: false,
            numa_aligned: false,
            fragmentation_aware: true,
        }
    }
}

#[derive(Debug, Clone)]
struct NodeGpus {
    /// The node's name, held (not pinned) while the registry knows the node.
    name: HeldSymbol,
    matrix: Arc<GpuMatrix>,
    busy: u128,
}

/// Which node has which GPU topology and which of its GPUs are taken; shared
/// between the caller (who registers machines and releases finished pods) and the
/// plugin (which reserves sets).
///
/// ```
/// use std::sync::Arc;
/// use schedkit::plugins::gpu_topology::GpuTopologyRegistry;
/// use schedkit::topology::machines;
/// let reg = GpuTopologyRegistry::default();
/// reg.set_node("dgx-0", Arc::new(machines::dgx_h100().matrix().unwrap()));
/// assert_eq!(reg.free("dgx-0").map(|f| f.count_ones()), Some(8));
/// ```
#[derive(Debug, Default)]
pub struct GpuTopologyRegistry {
    nodes: RwLock<AHashMap<Symbol, NodeGpus>>,
    /// Each pod's node is held, so it names that node even after the node is removed.
    pods: Mutex<AHashMap<Arc<str>, (HeldSymbol, GpuSet)>>,
}

impl GpuTopologyRegistry {
    /// Registers (or replaces) a node's machine; all its GPUs start free.
    pub fn set_node(&self, node: &str, matrix: Arc<GpuMatrix>) {
        let name = HeldSymbol::new(node);
        self.nodes.write().insert(name.symbol(), NodeGpus { name, matrix, busy: 0 });
    }

    /// Forgets a node.
    pub fn remove_node(&self, node: &str) {
        if let Some(s) = Symbol::lookup(node) {
            self.nodes.write().remove(&s);
        }
    }

    /// Free GPUs of a node as a bitmask.
    pub fn free(&self, node: &str) -> Option<u128> {
        let nodes = self.nodes.read();
        nodes.get(&Symbol::lookup(node)?).map(|n| n.matrix.all() & !n.busy)
    }

    /// The node and GPUs reserved for a pod (by uid).
    pub fn assignment(&self, uid: &str) -> Option<(String, GpuSet)> {
        self.pods.lock().get(uid).map(|(n, s)| (n.as_str().to_owned(), *s))
    }

    /// Frees the GPUs of a pod that finished (or was deleted); false if unknown.
    pub fn release(&self, uid: &str) -> bool {
        let Some((node, set)) = self.pods.lock().remove(uid) else { return false };
        if let Some(n) = self.nodes.write().get_mut(&node.symbol()) {
            n.busy &= !set.0;
        }
        true
    }

    /// Records that pod `uid` already holds `set` on `node` (pods bound before the
    /// scheduler started, or placed by someone else). False if the node is unknown
    /// or any of the GPUs is taken.
    pub fn mark_busy(&self, node: &str, set: GpuSet, uid: &str) -> bool {
        // A lookup: a node the registry knows is interned (and `intern` would pin it).
        Symbol::lookup(node).is_some_and(|s| self.take(&Arc::from(uid), s, set))
    }

    fn take(&self, uid: &Arc<str>, node: Symbol, set: GpuSet) -> bool {
        let mut nodes = self.nodes.write();
        let Some(n) = nodes.get_mut(&node) else { return false };
        if n.busy & set.0 != 0 {
            return false;
        }
        n.busy |= set.0;
        self.pods.lock().insert(uid.clone(), (n.name.clone(), set));
        true
    }
}

/// The GpuTopology plugin.
#[derive(Debug)]
pub struct GpuTopology {
    registry: Arc<GpuTopologyRegistry>,
    resource: Symbol,
    opts: SearchOptions,
    /// Best placement on an empty machine per (machine, k): the score's reference.
    ideal: Mutex<AHashMap<(usize, usize), Placement>>,
}

/// The pod's GPU count (PreFilter).
#[derive(Debug, Clone, Copy)]
struct Wanted(usize);

/// Best set and score per feasible node with topology, sorted by node symbol (PreScore).
#[derive(Debug, Clone, Default)]
struct Choices(Vec<(Symbol, GpuSet, i64)>);

impl Choices {
    fn get(&self, node: Symbol) -> Option<(GpuSet, i64)> {
        self.0.binary_search_by_key(&node, |c| c.0).ok().map(|i| (self.0[i].1, self.0[i].2))
    }
}

impl GpuTopology {
    /// The plugin over a shared registry.
    pub fn new(registry: Arc<GpuTopologyRegistry>, args: &GpuTopologyArgs) -> Self {
        GpuTopology {
            registry,
            resource: Symbol::intern(&args.resource_name),
            opts: SearchOptions {
                nic_aligned: args.nic_aligned,
                numa_aligned: args.numa_aligned,
                fragmentation_aware: args.fragmentation_aware,
                ..SearchOptions::default()
            },
            ideal: Mutex::new(AHashMap::new()),
        }
    }

    /// Registers a `GpuTopology` factory in `registry` over `shared`: config can
    /// then enable the plugin by name, with `GpuTopologyArgs` as its args.
    pub fn register_factory(
        registry: &mut crate::framework::Registry,
        shared: Arc<GpuTopologyRegistry>,
    ) -> Result<(), crate::framework::ConfigError> {
        registry.register(names::GPU_TOPOLOGY, move |args, _| {
            let a = match args {
                Some(v) => GpuTopologyArgs::deserialize(v).map_err(|e| e.to_string())?,
                None => GpuTopologyArgs::default(),
            };
            Ok(Arc::new(GpuTopology::new(shared.clone(), &a)) as Arc<dyn Plugin>)
        })
    }

    fn wanted(&self, pod: &PodInfo) -> usize {
        usize::try_from(pod.requests.scalar(self.resource)).unwrap_or(0)
    }

    /// Best set among `free` and its score against the empty machine.
    fn choose(&self, m: &Arc<GpuMatrix>, free: u128, k: usize) -> Option<(GpuSet, i64)> {
        let best = best_subset(m, free, k, &self.opts).ok()?;
        let key = (Arc::as_ptr(m) as usize, k);
        let mut cache = self.ideal.lock();
        let ideal = if let Some(p) = cache.get(&key) {
            p
        } else {
            let p = best_subset(m, m.all(), k, &self.opts).ok()?;
            cache.entry(key).or_insert(p)
        };
        Some((best.gpus, score_against(&best, ideal)))
    }
}

impl Plugin for GpuTopology {
    fn name(&self) -> &str {
        names::GPU_TOPOLOGY
    }
    fn register(self: Arc<Self>, p: &mut ExtensionPoints) {
        p.pre_filter(self.clone()).filter(self.clone()).pre_score(self.clone()).score(self.clone()).reserve(self);
    }
}

impl PreFilterPlugin for GpuTopology {
    fn pre_filter(&self, state: &mut CycleState, pod: &PodInfo, _: &Snapshot) -> (Option<PreFilterResult>, Status) {
        let k = self.wanted(pod);
        if k == 0 {
            return (None, Status::SKIP);
        }
        state.write(Wanted(k));
        (None, Status::SUCCESS)
    }
}

impl FilterPlugin for GpuTopology {
    /// Enough free GPUs on a node with known topology (the set itself is chosen in
    /// PreScore, once per feasible node, not here).
    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        let k = state.read::<Wanted>().map_or_else(|| self.wanted(pod), |w| w.0);
        let nodes = self.registry.nodes.read();
        match nodes.get(&node.name()) {
            Some(n) if ((n.matrix.all() & !n.busy).count_ones() as usize) < k => {
                Status::unschedulable("Insufficient free GPUs in the node's topology")
            }
            _ => Status::SUCCESS,
        }
    }
}

impl PreScorePlugin for GpuTopology {
    fn pre_score(&self, state: &mut CycleState, pod: &PodInfo, nodes: NodeList<'_>) -> Status {
        let k = state.read::<Wanted>().map_or_else(|| self.wanted(pod), |w| w.0);
        if k == 0 {
            return Status::SKIP;
        }
        let reg = self.registry.nodes.read();
        let mut choices = Vec::with_capacity(nodes.len());
        for node in nodes.iter() {
            if let Some(n) = reg.get(&node.name())
                && let Some((set, score)) = self.choose(&n.matrix, n.matrix.all() & !n.busy, k)
            {
                choices.push((node.name(), set, score));
            }
        }
        choices.sort_unstable_by_key(|c| c.0);
        state.write(Choices(choices));
        Status::SUCCESS
    }
}

impl ScorePlugin for GpuTopology {
    fn score(&self, state: &CycleState, _: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        Ok(state.read::<Choices>().and_then(|c| c.get(node.name())).map_or(0, |(_, s)| s))
    }
}

impl ReservePlugin for GpuTopology {
    /// Takes the set PreScore chose for `node` (or, if it was taken meanwhile or
    /// the node wasn't scored, the best set free now).
    fn reserve(&self, state: &mut CycleState, pod: &PodInfo, node: &str) -> Status {
        let k = state.read::<Wanted>().map_or_else(|| self.wanted(pod), |w| w.0);
        let Some(name) = Symbol::lookup(node) else { return Status::SUCCESS };
        if k == 0 || !self.registry.nodes.read().contains_key(&name) {
            return Status::SUCCESS;
        }
        if let Some((set, _)) = state.read::<Choices>().and_then(|c| c.get(name))
            && self.registry.take(&pod.uid, name, set)
        {
            return Status::SUCCESS;
        }
        let current = self.registry.nodes.read().get(&name).map(|n| (n.matrix.clone(), n.matrix.all() & !n.busy));
        match current.and_then(|(m, free)| self.choose(&m, free, k)) {
            Some((set, _)) if self.registry.take(&pod.uid, name, set) => Status::SUCCESS,
            _ => Status::unschedulable("the node's free GPUs changed and no longer fit the pod"),
        }
    }

    fn unreserve(&self, _: &mut CycleState, pod: &PodInfo, _: &str) {
        self.registry.release(&pod.uid);
    }
}
