//! [`NetworkAwareStore`]: the AppGroups and NetworkTopologies the network-aware plugins
//! read, shared through the [`Handle`](crate::framework::Handle), kept in the form the
//! plugins look things up in.

use std::sync::Arc;

use ahash::AHashMap;
use parking_lot::RwLock;

use super::NetworkAwareError;
use super::appgroup::AppGroup;
use super::network_topology::{NetworkTopology, TOPOLOGY_KEY_REGION, TOPOLOGY_KEY_ZONE, TopologyInfo};
use crate::model::Symbol;

/// The AppGroup and NetworkTopology objects of a cluster, what upstream's plugins read
/// through informers and a controller-runtime client. The caller keeps it up to date
/// (add on create and update, remove on delete) and shares it with
/// [`Handle::set_shared`](crate::framework::Handle::set_shared) before building profiles.
///
/// Objects are validated on the way in; lookups take a read lock and clone an `Arc`.
///
/// ```
/// use std::sync::Arc;
/// use schedkit::framework::Handle;
/// use schedkit::plugins::network_aware::{AppGroup, NetworkAwareStore};
/// let store = Arc::new(NetworkAwareStore::new());
/// let ag: AppGroup = serde_json::from_value(serde_json::json!({
///     "metadata": {"name": "a1"},
///     "spec": {"numMembers": 1, "topologySortingAlgorithm": "KahnSort", "workloads": []}
/// })).unwrap();
/// store.add_app_group(ag).unwrap();
/// assert!(store.app_group("default", "a1").is_some());
/// let handle = Handle::default();
/// handle.set_shared(store);
/// assert!(handle.shared::<NetworkAwareStore>().is_some());
/// ```
#[derive(Debug, Default)]
pub struct NetworkAwareStore {
    inner: RwLock<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    app_groups: AHashMap<(Symbol, Symbol), Arc<CompiledAppGroup>>,
    topologies: AHashMap<(Symbol, Symbol), Arc<CompiledTopology>>,
}

/// An AppGroup with its lookups prepared.
#[derive(Debug)]
pub(crate) struct CompiledAppGroup {
    pub(crate) object: Arc<AppGroup>,
    /// `status.topologyOrder` as `(selector, index)`, stably sorted by selector: upstream
    /// binary-searches the list and relies on the controller having sorted it.
    order: Vec<(String, i32)>,
    /// Each workload's selector and dependencies `(selector, maxNetworkCost)`.
    workloads: Vec<(Symbol, Vec<(Symbol, i64)>)>,
}

impl CompiledAppGroup {
    fn new(object: AppGroup) -> Self {
        let mut order: Vec<(String, i32)> =
            object.status.topology_order.iter().map(|t| (t.workload.selector.clone(), t.index)).collect();
        order.sort_by(|a, b| a.0.cmp(&b.0));
        let workloads = object
            .spec
            .workloads
            .iter()
            .map(|w| {
                let deps =
                    w.dependencies.iter().map(|d| (Symbol::intern(&d.workload.selector), d.max_network_cost)).collect();
                (Symbol::intern(&w.workload.selector), deps)
            })
            .collect();
        CompiledAppGroup { object: Arc::new(object), order, workloads }
    }

    /// A workload's place in the deployment order, -1 when not listed: upstream
    /// `FindPodOrder`, the same binary search.
    pub(crate) fn pod_order(&self, selector: &str) -> i32 {
        let (mut low, mut high) = (0_isize, self.order.len() as isize - 1);
        while low <= high {
            let mid = isize::midpoint(low, high);
            let (sel, index) = &self.order[mid as usize];
            match sel.as_str().cmp(selector) {
                std::cmp::Ordering::Equal => return *index,
                std::cmp::Ordering::Less => low = mid + 1,
                std::cmp::Ordering::Greater => high = mid - 1,
            }
        }
        -1
    }

    /// The dependencies of the workload `selector`, as upstream `GetDependencyList`: those
    /// of every workload with that selector, in spec order.
    pub(crate) fn dependencies(&self, selector: Symbol, out: &mut Vec<(Symbol, i64)>) {
        out.clear();
        for (sel, deps) in &self.workloads {
            if *sel == selector {
                out.extend_from_slice(deps);
            }
        }
    }
}

/// Costs from one origin: `(destination, networkCost)` in list order.
#[derive(Debug)]
pub(crate) struct CompiledOrigin {
    origin: String,
    pub(crate) origin_symbol: Symbol,
    pub(crate) costs: Vec<(Symbol, i64)>,
}

/// The region and zone origin lists of one weight, as upstream's `FindTopologyKey` finds
/// them.
#[derive(Debug, Default)]
pub(crate) struct KeyLists {
    region: Vec<CompiledOrigin>,
    zone: Vec<CompiledOrigin>,
}

impl KeyLists {
    /// `sorted`: as NetworkOverhead prepares weights other than `NetperfCosts`, topology
    /// lists sorted by key and origin lists by origin (stably); otherwise as written.
    fn new(list: &[TopologyInfo], sorted: bool) -> Self {
        let mut topo: Vec<&TopologyInfo> = list.iter().collect();
        if sorted {
            topo.sort_by(|a, b| a.topology_key.cmp(&b.topology_key));
        }
        let origins = |key: &str| -> Vec<CompiledOrigin> {
            // Upstream FindTopologyKey: a binary search over the (maybe sorted) list.
            let (mut low, mut high) = (0_isize, topo.len() as isize - 1);
            let mut found: Option<&TopologyInfo> = None;
            while low <= high {
                let mid = isize::midpoint(low, high);
                match topo[mid as usize].topology_key.as_str().cmp(key) {
                    std::cmp::Ordering::Equal => {
                        found = Some(topo[mid as usize]);
                        break;
                    }
                    std::cmp::Ordering::Less => low = mid + 1,
                    std::cmp::Ordering::Greater => high = mid - 1,
                }
            }
            let mut out: Vec<CompiledOrigin> = found
                .map(|t| {
                    t.origin_list
                        .iter()
                        .map(|o| CompiledOrigin {
                            origin: o.origin.clone(),
                            origin_symbol: Symbol::intern(&o.origin),
                            costs: o
                                .cost_list
                                .iter()
                                .map(|c| (Symbol::intern(&c.destination), c.network_cost))
                                .collect(),
                        })
                        .collect()
                })
                .unwrap_or_default();
            if sorted {
                out.sort_by(|a, b| a.origin.cmp(&b.origin));
            }
            out
        };
        KeyLists { region: origins(TOPOLOGY_KEY_REGION), zone: origins(TOPOLOGY_KEY_ZONE) }
    }

    /// The costs from `origin`: upstream `FindOriginCosts`, the same binary search.
    fn find<'a>(list: &'a [CompiledOrigin], origin: &str) -> Option<&'a CompiledOrigin> {
        let (mut low, mut high) = (0_isize, list.len() as isize - 1);
        while low <= high {
            let mid = isize::midpoint(low, high);
            match list[mid as usize].origin.as_str().cmp(origin) {
                std::cmp::Ordering::Equal => return Some(&list[mid as usize]),
                std::cmp::Ordering::Less => low = mid + 1,
                std::cmp::Ordering::Greater => high = mid - 1,
            }
        }
        None
    }

    pub(crate) fn region_costs(&self, region: &str) -> Option<&CompiledOrigin> {
        KeyLists::find(&self.region, region)
    }

    pub(crate) fn zone_costs(&self, zone: &str) -> Option<&CompiledOrigin> {
        KeyLists::find(&self.zone, zone)
    }
}

/// A NetworkTopology with each weight's lists prepared both ways.
#[derive(Debug)]
pub(crate) struct CompiledTopology {
    pub(crate) object: Arc<NetworkTopology>,
    /// `(name, sorted, as written)` per weight, in spec order.
    weights: Vec<(String, KeyLists, KeyLists)>,
}

impl CompiledTopology {
    fn new(object: NetworkTopology) -> Self {
        let weights = object
            .spec
            .weights
            .iter()
            .map(|w| (w.name.clone(), KeyLists::new(&w.topology_list, true), KeyLists::new(&w.topology_list, false)))
            .collect();
        CompiledTopology { object: Arc::new(object), weights }
    }

    /// The weights named `name`, in spec order; `sorted` picks the prepared form.
    pub(crate) fn weights<'a>(&'a self, name: &'a str, sorted: bool) -> impl Iterator<Item = &'a KeyLists> + 'a {
        self.weights.iter().filter(move |(n, _, _)| n == name).map(move |(_, s, g)| if sorted { s } else { g })
    }
}

fn key(namespace: &str, name: &str) -> (Symbol, Symbol) {
    let ns = if namespace.is_empty() { "default" } else { namespace };
    (Symbol::intern(ns), Symbol::intern(name))
}

impl NetworkAwareStore {
    /// An empty store.
    pub fn new() -> NetworkAwareStore {
        NetworkAwareStore::default()
    }

    /// Adds or replaces an AppGroup (by namespace and name) after
    /// [validating](AppGroup::validate) it.
    pub fn add_app_group(&self, app_group: AppGroup) -> Result<(), NetworkAwareError> {
        app_group.validate()?;
        let k = key(app_group.namespace(), &app_group.metadata.name);
        self.inner.write().app_groups.insert(k, Arc::new(CompiledAppGroup::new(app_group)));
        Ok(())
    }

    /// Removes an AppGroup; returns it if it was there.
    pub fn remove_app_group(&self, namespace: &str, name: &str) -> Option<Arc<AppGroup>> {
        self.inner.write().app_groups.remove(&key(namespace, name)).map(|c| c.object.clone())
    }

    /// The AppGroup `namespace/name`.
    pub fn app_group(&self, namespace: &str, name: &str) -> Option<Arc<AppGroup>> {
        self.inner.read().app_groups.get(&key(namespace, name)).map(|c| c.object.clone())
    }

    /// Adds or replaces a NetworkTopology (by namespace and name) after
    /// [validating](NetworkTopology::validate) it.
    pub fn add_network_topology(&self, topology: NetworkTopology) -> Result<(), NetworkAwareError> {
        topology.validate()?;
        let k = key(topology.namespace(), &topology.metadata.name);
        self.inner.write().topologies.insert(k, Arc::new(CompiledTopology::new(topology)));
        Ok(())
    }

    /// Removes a NetworkTopology; returns it if it was there.
    pub fn remove_network_topology(&self, namespace: &str, name: &str) -> Option<Arc<NetworkTopology>> {
        self.inner.write().topologies.remove(&key(namespace, name)).map(|c| c.object.clone())
    }

    /// The NetworkTopology `namespace/name`.
    pub fn network_topology(&self, namespace: &str, name: &str) -> Option<Arc<NetworkTopology>> {
        self.inner.read().topologies.get(&key(namespace, name)).map(|c| c.object.clone())
    }

    /// The AppGroup `name` in the first of `namespaces` that has one (upstream
    /// `findAppGroup...`).
    pub(crate) fn find_app_group(&self, namespaces: &[Symbol], name: Symbol) -> Option<Arc<CompiledAppGroup>> {
        let g = self.inner.read();
        namespaces.iter().find_map(|ns| g.app_groups.get(&(*ns, name)).cloned())
    }

    /// The NetworkTopology `name` in the first of `namespaces` that has one.
    pub(crate) fn find_topology(&self, namespaces: &[Symbol], name: Symbol) -> Option<Arc<CompiledTopology>> {
        let g = self.inner.read();
        namespaces.iter().find_map(|ns| g.topologies.get(&(*ns, name)).cloned())
    }
}
