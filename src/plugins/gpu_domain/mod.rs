//! GPU-domain placements for pod groups (beyond upstream): [`GpuDomainPlacement`]
//! proposes the smallest interconnect domain that can hold a group (an NVLink domain,
//! then rack, block, zone), and [`GpuDomainFragmentation`] prefers the placement that
//! leaves the least fragmented free GPU capacity.
//!
//! # Beyond upstream
//!
//! Kubernetes v1.36 ships one placement generator, TopologyPlacementGenerator, which
//! proposes one placement per value of the PodGroup's single topology key, and one
//! placement scorer, PodGroupPodsCount. Neither knows about GPUs: a training gang with a
//! rack constraint is spread over whichever rack the RNG picks, across NVLink domains
//! inside it. These two plugins are schedkit's own; no upstream file defines them.
//!
//! # Domains
//!
//! The domains form a hierarchy of node label keys, smallest first ([`GpuDomainArgs::levels`],
//! default [`DEFAULT_LEVELS`]). The first level is the NVLink level: a node's domain
//! there is the one an [`NvLinkDomains`] table gives it (built from the
//! [`topology`](crate::topology) graphs, e.g. one
//! [`gb200_nvl72`](crate::topology::machines::gb200_nvl72) rack per domain), else its
//! `nvidia.com/gpu.clique` label (what NVIDIA's GPU Feature Discovery writes on
//! multi-node NVLink systems). `topology.kubernetes.io/zone` is the well-known zone
//! label; the rack and block keys are a convention (cloud providers use their own,
//! e.g. `cloud.google.com/gce-topology-block`): set `levels` to the cluster's labels.
//!
//! For a group, the generator looks inside each domain of the PodGroup's required
//! topology key (or inside the whole parent placement when there is none) for the first
//! level at which some domain can hold the group, and proposes the domains of the
//! smallest such level over all of them, smallest free capacity first. "Can hold" is a GPU-only bin-packing check (best fit,
//! largest pods first) on the free `nvidia.com/gpu` of each node; the group cycle's
//! Filter still decides. It first asks for room for every unscheduled pod, then for the
//! gang's `minCount` (one pod for a basic group). When no level qualifies, it proposes
//! the required-key domains (or the parent) unchanged, so it never offers less than the
//! label-only generator.
//!
//! # Fragmentation
//!
//! The scorer's cost for a placement is the change in fragmentation its assignments
//! cause, at two levels:
//!
//! - per node, the FGD measure ([`node_frag`](crate::plugins::gpu_share::frag::node_frag):
//!   idle GPU milli that a typical pod cannot use) with the group's own pod shapes as the
//!   typical workload, or the [`TypicalPods`](crate::plugins::gpu_share::TypicalPods) and device table ([`GpuState`](crate::plugins::gpu_share::GpuState)) of the
//!   GPU-sharing plugins when they are shared on the [`Handle`](crate::framework::Handle)
//!   (then shared GPUs count by their free milli);
//! - per smallest domain touched (the node's first labelled level), the free GPUs a
//!   second group of the same total size could not use: `free mod demand`.
//!
//! The lowest cost wins; equal costs go to the placement with the least free GPUs (the
//! smallest domain that holds the group), so large domains stay whole for large jobs.

mod generate;
mod score;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use ahash::AHashMap;
use parking_lot::RwLock;
use serde::{Deserialize, Serialize};

pub use generate::GpuDomainPlacement;
pub use score::GpuDomainFragmentation;

use crate::model::{HeldSymbol, Symbol};
use crate::snapshot::{NodeInfo, Snapshot};
use crate::topology::GpuMatrix;

/// The node label NVIDIA's GPU Feature Discovery sets to a node's NVLink clique
/// (`<cluster UUID>.<clique id>`) on multi-node NVLink systems such as GB200 NVL72.
pub const GPU_CLIQUE_LABEL: &str = "nvidia.com/gpu.clique";
/// Rack label (a convention; set [`GpuDomainArgs::levels`] to the cluster's own).
pub const RACK_LABEL: &str = "topology.kubernetes.io/rack";
/// Block label: a group of racks under one spine (a convention).
pub const BLOCK_LABEL: &str = "topology.kubernetes.io/block";
/// The well-known zone label.
pub const ZONE_LABEL: &str = "topology.kubernetes.io/zone";
/// The default hierarchy, smallest domain first.
pub const DEFAULT_LEVELS: [&str; 4] = [GPU_CLIQUE_LABEL, RACK_LABEL, BLOCK_LABEL, ZONE_LABEL];

/// What is wrong with GPU-domain args or an NVLink domain table entry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GpuDomainError {
    /// The args did not parse.
    #[error("{plugin} args: {why}")]
    Args {
        /// The plugin.
        plugin: &'static str,
        /// The parser's message.
        why: String,
    },
    /// `levels` is empty.
    #[error("{plugin} args: levels must name at least one node label key")]
    NoLevels {
        /// The plugin.
        plugin: &'static str,
    },
    /// A level key is empty or repeated.
    #[error("{plugin} args: levels[{index}] {key:?} is empty or repeated")]
    BadLevel {
        /// The plugin.
        plugin: &'static str,
        /// Position in `levels`.
        index: usize,
        /// The key.
        key: String,
    },
    /// `resourceName` is empty.
    #[error("{plugin} args: resourceName must not be empty")]
    NoResource {
        /// The plugin.
        plugin: &'static str,
    },
    /// [`NvLinkDomains::add_machine`] got a host list of the wrong length.
    #[error("NVLink domain {domain:?}: machine {machine:?} has {want} hosts, {got} node names given")]
    HostCount {
        /// The domain name given.
        domain: String,
        /// The machine's name.
        machine: String,
        /// Hosts in the machine.
        want: usize,
        /// Node names given.
        got: usize,
    },
    /// An empty node name in [`NvLinkDomains::add_machine`].
    #[error("NVLink domain {domain:?}: host {host} has an empty node name")]
    EmptyNode {
        /// The domain name given.
        domain: String,
        /// The host index.
        host: usize,
    },
}

/// Args of both GPU-domain plugins (`GpuDomainArgs`, camelCase in a profile's
/// `pluginConfig`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct GpuDomainArgs {
    /// Node label keys from the smallest domain to the largest; the first is the
    /// NVLink level (see the [module docs](self)). Default [`DEFAULT_LEVELS`].
    pub levels: Vec<String>,
    /// The extended resource counting whole GPUs (default `nvidia.com/gpu`).
    pub resource_name: String,
}

impl Default for GpuDomainArgs {
    fn default() -> Self {
        GpuDomainArgs {
            levels: DEFAULT_LEVELS.iter().map(|&s| s.to_owned()).collect(),
            resource_name: "nvidia.com/gpu".to_owned(),
        }
    }
}

impl GpuDomainArgs {
    /// Parses and validates `args` for `plugin` (absent or null: the defaults).
    ///
    /// ```
    /// use schedkit::plugins::gpu_domain::GpuDomainArgs;
    /// let a = GpuDomainArgs::from_config("GpuDomainPlacement", Some(&serde_json::json!({"levels": ["rack"]}))).unwrap();
    /// assert_eq!(a.levels, ["rack"]);
    /// assert!(GpuDomainArgs::from_config("GpuDomainPlacement", Some(&serde_json::json!({"levels": []}))).is_err());
    /// ```
    pub fn from_config(plugin: &'static str, args: Option<&serde_json::Value>) -> Result<Self, GpuDomainError> {
        let a: GpuDomainArgs = match args {
            Some(v) if !v.is_null() => {
                serde_json::from_value(v.clone()).map_err(|e| GpuDomainError::Args { plugin, why: e.to_string() })?
            }
            _ => GpuDomainArgs::default(),
        };
        a.validate(plugin)?;
        Ok(a)
    }

    /// Checks the args: at least one level, no empty or repeated key, a resource name.
    pub fn validate(&self, plugin: &'static str) -> Result<(), GpuDomainError> {
        if self.levels.is_empty() {
            return Err(GpuDomainError::NoLevels { plugin });
        }
        for (index, key) in self.levels.iter().enumerate() {
            if key.is_empty() || self.levels[..index].contains(key) {
                return Err(GpuDomainError::BadLevel { plugin, index, key: key.clone() });
            }
        }
        if self.resource_name.is_empty() {
            return Err(GpuDomainError::NoResource { plugin });
        }
        Ok(())
    }
}

/// Which node belongs to which NVLink domain, from the [`topology`](crate::topology)
/// graphs: share one on the [`Handle`](crate::framework::Handle) (`set_shared`) and the
/// registry's factories pick it up. Nodes not in the table fall back to their
/// `nvidia.com/gpu.clique` label.
///
/// ```
/// use schedkit::plugins::gpu_domain::NvLinkDomains;
/// use schedkit::topology::machines;
/// let nvl72 = machines::gb200_nvl72().matrix().unwrap();
/// let trays: Vec<String> = (0..18).map(|t| format!("rack7-tray{t}")).collect();
/// let domains = NvLinkDomains::default();
/// assert_eq!(domains.add_machine("rack7", &nvl72, &trays).unwrap(), 18);
/// assert_eq!(domains.domain_of("rack7-tray3"), domains.domain_of("rack7-tray17"));
/// assert!(domains.domain_of("elsewhere").is_none());
/// ```
#[derive(Debug, Default)]
pub struct NvLinkDomains {
    /// Node (its name held, not pinned, while registered) to its domain (pinned: a
    /// bounded vocabulary).
    nodes: RwLock<AHashMap<Symbol, (HeldSymbol, Symbol)>>,
}

impl NvLinkDomains {
    /// Registers a machine whose host `h` is node `hosts[h]` (a GB200 NVL72 rack: 18
    /// trays). Each host whose GPUs all share one NVLink domain of the matrix joins
    /// the domain `<domain>/nvlink-<id>`; a host whose GPUs have no NVLink, or span
    /// several domains, is left out. Returns how many nodes were placed in a domain.
    pub fn add_machine<S: AsRef<str>>(
        &self,
        domain: &str,
        matrix: &GpuMatrix,
        hosts: &[S],
    ) -> Result<usize, GpuDomainError> {
        let want = matrix.gpus().iter().map(|g| g.gpu.host as usize + 1).max().unwrap_or(0);
        if hosts.len() != want {
            return Err(GpuDomainError::HostCount {
                domain: domain.to_owned(),
                machine: matrix.name().to_owned(),
                want,
                got: hosts.len(),
            });
        }
        if let Some(host) = hosts.iter().position(|h| h.as_ref().is_empty()) {
            return Err(GpuDomainError::EmptyNode { domain: domain.to_owned(), host });
        }
        let mut placed = 0;
        let mut nodes = self.nodes.write();
        for (h, name) in hosts.iter().enumerate() {
            let mut ids = matrix.gpus().iter().filter(|g| g.gpu.host as usize == h).map(|g| g.nvlink_domain);
            let Some(Some(first)) = ids.next() else { continue };
            if ids.all(|d| d == Some(first)) {
                let node = HeldSymbol::new(name.as_ref());
                nodes.insert(node.symbol(), (node, Symbol::intern(&format!("{domain}/nvlink-{first}"))));
                placed += 1;
            }
        }
        Ok(placed)
    }

    /// Puts `node` in NVLink domain `domain` by hand.
    pub fn set_node(&self, node: &str, domain: &str) {
        let node = HeldSymbol::new(node);
        self.nodes.write().insert(node.symbol(), (node, Symbol::intern(domain)));
    }

    /// Forgets a node.
    pub fn remove_node(&self, node: &str) {
        if let Some(s) = Symbol::lookup(node) {
            self.nodes.write().remove(&s);
        }
    }

    /// The node's NVLink domain, if registered.
    pub fn domain_of(&self, node: &str) -> Option<&'static str> {
        self.lookup(Symbol::lookup(node)?).map(Symbol::as_str)
    }

    fn lookup(&self, node: Symbol) -> Option<Symbol> {
        self.nodes.read().get(&node).map(|(_, d)| *d)
    }
}

/// Switches a profile's placement plugins to the GPU-domain pair: drops
/// TopologyPlacementGenerator and adds [`GpuDomainPlacement`] (placementGenerate) and
/// [`GpuDomainFragmentation`] (placementScore, weight 1, beside PodGroupPodsCount).
/// Needs the `TopologyAwareWorkloadScheduling` gate, like every placement plugin.
///
/// ```
/// use schedkit::framework::{Feature, FeatureGates, Handle};
/// use schedkit::plugins::{apply_feature_gates, default_profile_config, default_registry, gpu_domain};
/// let gates = FeatureGates::default()
///     .with(Feature::GenericWorkload, true)
///     .with(Feature::TopologyAwareWorkloadScheduling, true);
/// let mut cfg = default_profile_config();
/// apply_feature_gates(&mut cfg.plugins, gates);
/// gpu_domain::enable_in(&mut cfg.plugins);
/// let profile = default_registry().build_profile(&cfg, &Handle::default()).unwrap();
/// assert_eq!(profile.placement_generate_plugins(), ["GpuDomainPlacement"]);
/// assert_eq!(profile.placement_score_plugins(), [("PodGroupPodsCount", 1), ("GpuDomainFragmentation", 1)]);
/// ```
pub fn enable_in(plugins: &mut crate::framework::PluginsConfig) {
    use crate::framework::PluginRef;
    use crate::plugins::names;
    plugins.multi_point.enabled.retain(|p| p.name != names::TOPOLOGY_PLACEMENT_GENERATOR);
    plugins.placement_generate.enabled.retain(|p| p.name != names::TOPOLOGY_PLACEMENT_GENERATOR);
    let set = |list: &mut Vec<PluginRef>, name: &str, weight: Option<i64>| {
        if !list.iter().any(|p| p.name == name) {
            list.push(PluginRef { name: name.to_owned(), weight });
        }
    };
    set(&mut plugins.placement_generate.enabled, names::GPU_DOMAIN_PLACEMENT, None);
    set(&mut plugins.placement_score.enabled, names::GPU_DOMAIN_FRAGMENTATION, Some(1));
}

/// Interned level keys and resource, shared by both plugins.
#[derive(Debug, Clone)]
struct Keys {
    levels: Vec<Symbol>,
    resource: Symbol,
    nvlink: Option<Arc<NvLinkDomains>>,
}

impl Keys {
    fn new(args: &GpuDomainArgs, nvlink: Option<Arc<NvLinkDomains>>) -> Keys {
        Keys {
            levels: args.levels.iter().map(|k| Symbol::intern(k)).collect(),
            resource: Symbol::intern(&args.resource_name),
            nvlink,
        }
    }

    /// The node's domain at level `li` (the NVLink table first at level 0).
    fn value(&self, li: usize, node: &NodeInfo) -> Option<Symbol> {
        if li == 0
            && let Some(t) = &self.nvlink
            && let Some(d) = t.lookup(node.name())
        {
            return Some(d);
        }
        node.node().metadata.labels.get(*self.levels.get(li)?)
    }

    /// The node's smallest labelled domain: `(level, value)`.
    fn cell(&self, node: &NodeInfo) -> Option<(usize, Symbol)> {
        (0..self.levels.len()).find_map(|li| self.value(li, node).map(|v| (li, v)))
    }

    /// Free whole GPUs of a node (allocatable minus requested, at least 0).
    fn free(&self, node: &NodeInfo) -> i64 {
        (node.allocatable().scalar(self.resource) - node.requested().scalar(self.resource)).max(0)
    }
}

/// What the generator saw, for the scorer (in the pod-group cycle state).
#[derive(Debug, Clone, Default)]
struct Facts {
    /// Free GPUs by snapshot position.
    free: Vec<i64>,
    /// Free milli-CPU by snapshot position.
    cpu_left: Vec<i64>,
    /// Smallest labelled domain by snapshot position.
    cell: Vec<Option<(usize, Symbol)>>,
    /// Free GPUs per smallest domain.
    cell_free: AHashMap<(usize, Symbol), i64>,
    /// Snapshot position by node name.
    pos: AHashMap<Symbol, usize>,
    /// Node name by snapshot position.
    name: Vec<Symbol>,
    /// GPU model label value by snapshot position (for the FGD measure).
    model: Vec<Symbol>,
}

impl Facts {
    fn of(keys: &Keys, snapshot: &Snapshot) -> Facts {
        let n = snapshot.len();
        let mut f = Facts {
            free: Vec::with_capacity(n),
            cpu_left: Vec::with_capacity(n),
            cell: Vec::with_capacity(n),
            cell_free: AHashMap::new(),
            pos: AHashMap::with_capacity(n),
            name: Vec::with_capacity(n),
            model: Vec::with_capacity(n),
        };
        let model_key = Symbol::intern(crate::plugins::gpu_share::GPU_MODEL_LABEL);
        for (i, node) in snapshot.nodes().iter().enumerate() {
            let free = keys.free(node);
            let cell = keys.cell(node);
            if let Some(c) = cell {
                *f.cell_free.entry(c).or_insert(0) += free;
            }
            f.free.push(free);
            f.cpu_left.push(node.allocatable().milli_cpu - node.requested().milli_cpu);
            f.cell.push(cell);
            f.pos.insert(node.name(), i);
            f.name.push(node.name());
            f.model.push(node.node().metadata.labels.get(model_key).unwrap_or_default());
        }
        f
    }
}
