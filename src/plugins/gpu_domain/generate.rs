//! GpuDomainPlacement: the PlacementGenerate plugin proposing the smallest GPU
//! interconnect domains that can hold a pod group (see the [module docs](super)).

use std::sync::Arc;

use smallvec::SmallVec;

use super::{Facts, GpuDomainArgs, GpuDomainError, Keys, NvLinkDomains};
use crate::framework::{
    ExtensionPoints, Handle, Placement, PlacementGeneratePlugin, Plugin, PodGroupCycleState, PodGroupInfo, Status,
};
use crate::model::Symbol;
use crate::plugins::names;
use crate::snapshot::{NodeInfo, PodInfo, Snapshot};

/// Proposes, inside each domain of the group's required topology key, the domains of
/// the first level of the hierarchy that can hold the group, smallest free capacity
/// first. Beyond upstream (see the [module docs](super)).
#[derive(Debug, Clone)]
pub struct GpuDomainPlacement {
    handle: Handle,
    keys: Keys,
}

/// The group's GPU demand: per unscheduled pod, largest first; how many pods must fit.
struct Demand {
    gpus: Vec<i64>,
    all: usize,
    min: usize,
}

/// What one generate call reads.
#[derive(Clone, Copy)]
struct Inputs<'a> {
    facts: &'a Facts,
    snapshot: &'a Snapshot,
    scheduled: &'a [&'a NodeInfo],
    demand: &'a Demand,
}

/// Name of the placement for `value` at level key `key`: `key=value`.
fn domain_name(key: Symbol, value: Symbol) -> String {
    format!("{}={}", key.as_str(), value.as_str())
}

impl GpuDomainPlacement {
    /// The plugin with `args`, reading member states from `handle` and NVLink domains
    /// from `nvlink` (else node labels only).
    pub fn new(handle: Handle, args: &GpuDomainArgs, nvlink: Option<Arc<NvLinkDomains>>) -> GpuDomainPlacement {
        GpuDomainPlacement { handle, keys: Keys::new(args, nvlink) }
    }

    /// The registry's factory: args from the profile, the [`NvLinkDomains`] shared on
    /// the handle if any.
    pub fn from_config(args: Option<&serde_json::Value>, handle: &Handle) -> Result<Self, GpuDomainError> {
        let args = GpuDomainArgs::from_config(names::GPU_DOMAIN_PLACEMENT, args)?;
        Ok(GpuDomainPlacement::new(handle.clone(), &args, handle.shared::<NvLinkDomains>()))
    }

    fn demand(&self, group: &PodGroupInfo) -> Demand {
        let mut gpus: Vec<i64> =
            group.unscheduled_pods.iter().map(|p| p.requests.scalar(self.keys.resource).max(0)).collect();
        gpus.sort_unstable_by(|a, b| b.cmp(a));
        let scheduled = self.handle.pod_groups().states().with(group.namespace(), group.name(), |s| {
            s.map_or(0, crate::snapshot::PodGroupState::scheduled_pods_count)
        });
        let all = gpus.len();
        let min = match group.pod_group.min_count() {
            Some(m) => usize::try_from(m).unwrap_or(0).saturating_sub(scheduled).min(all),
            None => all.min(1),
        };
        Demand { gpus, all, min }
    }

    /// The nodes of the group's assumed and bound pods.
    fn scheduled_nodes<'s>(&self, group: &PodGroupInfo, snapshot: &'s Snapshot) -> Result<Vec<&'s NodeInfo>, Status> {
        let pods: Vec<Arc<PodInfo>> = self.handle.pod_groups().states().with(group.namespace(), group.name(), |s| {
            s.map(|s| s.scheduled_pods().cloned().collect()).unwrap_or_default()
        });
        pods.iter()
            .map(|p| {
                snapshot.get(&p.pod.spec.node_name).map(|n| &**n).ok_or_else(|| {
                    Status::error(format!(
                        "cannot determine domain for already scheduled pods: getting node for pod {}: nodeinfo not found for node name {:?}",
                        p.pod.key(),
                        p.pod.spec.node_name
                    ))
                })
            })
            .collect()
    }

    /// Whether the nodes at `positions` have room for `want` of the pods (GPU-only best
    /// fit, largest pods first); `scratch` is reused.
    fn holds(facts: &Facts, positions: &[usize], demand: &Demand, want: usize, scratch: &mut Vec<i64>) -> bool {
        if want == 0 {
            return true;
        }
        scratch.clear();
        scratch.extend(positions.iter().filter_map(|&p| facts.free.get(p).copied()));
        let mut placed = 0;
        for &g in &demand.gpus {
            if g == 0 {
                placed += 1;
            } else if let Some(slot) = scratch.iter_mut().filter(|f| **f >= g).min_by_key(|f| **f) {
                *slot -= g;
                placed += 1;
            }
            if placed >= want {
                return true;
            }
        }
        false
    }

    /// The domains of the first level inside `outer` that hold `want` pods and contain
    /// every scheduled member, smallest free capacity first, with that level; empty if
    /// none.
    fn refine(&self, cx: &Inputs<'_>, outer: &[usize], want: usize, scratch: &mut Vec<i64>) -> (usize, Vec<Placement>) {
        let Inputs { facts, snapshot, scheduled, demand } = *cx;
        for li in 0..self.keys.levels.len() {
            // The scheduled members pin one value at this level, or rule the level out.
            let mut pinned: Option<Symbol> = None;
            let mut usable = true;
            for n in scheduled {
                match (self.keys.value(li, n), pinned) {
                    (None, _) => usable = false,
                    (Some(v), Some(p)) if v != p => usable = false,
                    (Some(v), _) => pinned = Some(v),
                }
            }
            if !usable {
                continue;
            }
            let mut domains: Vec<(Symbol, Vec<usize>)> = Vec::new();
            for &pos in outer {
                let Some(node) = snapshot.nodes().get(pos) else { continue };
                let Some(v) = self.keys.value(li, node) else { continue };
                if pinned.is_some_and(|p| p != v) {
                    continue;
                }
                match domains.iter_mut().find(|(x, _)| *x == v) {
                    Some((_, nodes)) => nodes.push(pos),
                    None => domains.push((v, vec![pos])),
                }
            }
            let mut fit: Vec<(i64, Placement)> = domains
                .into_iter()
                .filter(|(_, nodes)| Self::holds(facts, nodes, demand, want, scratch))
                .map(|(v, nodes)| {
                    let free = nodes.iter().filter_map(|&p| facts.free.get(p)).sum();
                    (free, Placement { name: domain_name(self.keys.levels[li], v), nodes })
                })
                .collect();
            if !fit.is_empty() {
                fit.sort_by_key(|(free, _)| *free); // stable: first appearance breaks ties
                return (li, fit.into_iter().map(|(_, p)| p).collect());
            }
        }
        (self.keys.levels.len(), Vec::new())
    }
}

impl Plugin for GpuDomainPlacement {
    fn name(&self) -> &str {
        names::GPU_DOMAIN_PLACEMENT
    }
    fn register(self: Arc<Self>, points: &mut ExtensionPoints) {
        points.placement_generate(self);
    }
}

impl PlacementGeneratePlugin for GpuDomainPlacement {
    fn generate_placements(
        &self,
        state: &mut PodGroupCycleState,
        group: &PodGroupInfo,
        snapshot: &Snapshot,
        parent: &Placement,
    ) -> Result<Vec<Placement>, Status> {
        if state.data().read::<Facts>().is_none_or(|f| f.free.len() != snapshot.len()) {
            state.data_mut().write(Facts::of(&self.keys, snapshot));
        }
        let Some(facts) = state.data().read::<Facts>() else { return Err(Status::error("GPU domain facts missing")) };
        let scheduled = self.scheduled_nodes(group, snapshot)?;
        // The domains of the required topology key (upstream's one placement per value),
        // or the parent as a whole.
        let outer: Vec<Placement> = match group.pod_group.topology_key() {
            None => vec![parent.clone()],
            Some(key_text) => {
                let Some(key) = Symbol::lookup(key_text) else { return Ok(Vec::new()) };
                let mut pinned: SmallVec<[Symbol; 1]> = SmallVec::new();
                for n in &scheduled {
                    let Some(v) = n.node().metadata.labels.get(key) else {
                        return Err(Status::error(format!(
                            "cannot determine domain for already scheduled pods: no topology domain found on node {} (label {key_text:?})",
                            n.node().name()
                        )));
                    };
                    if !pinned.contains(&v) {
                        pinned.push(v);
                    }
                }
                if pinned.len() > 1 {
                    return Err(Status::error(format!(
                        "cannot determine domain for already scheduled pods: more than 1 domain found for pod group: {}, {}",
                        pinned[0].as_str(),
                        pinned[1].as_str()
                    )));
                }
                let mut domains: Vec<(Symbol, Vec<usize>)> = Vec::new();
                for &pos in &parent.nodes {
                    let Some(d) = snapshot.nodes().get(pos).and_then(|n| n.node().metadata.labels.get(key)) else {
                        continue;
                    };
                    if pinned.first().is_some_and(|p| *p != d) {
                        continue;
                    }
                    match domains.iter_mut().find(|(x, _)| *x == d) {
                        Some((_, v)) => v.push(pos),
                        None => domains.push((d, vec![pos])),
                    }
                }
                domains.into_iter().map(|(d, nodes)| Placement { name: d.as_str().to_owned(), nodes }).collect()
            }
        };
        let demand = self.demand(group);
        let mut scratch = Vec::new();
        let mut wants: SmallVec<[usize; 2]> = SmallVec::from_slice(&[demand.all]);
        if demand.min != demand.all {
            wants.push(demand.min);
        }
        let cx = Inputs { facts, snapshot, scheduled: &scheduled, demand: &demand };
        for want in wants {
            // Only the smallest level found in any outer domain: a rack holding the
            // group in one NVLink domain beats a rack that would need two.
            let mut out: Vec<(usize, Placement)> = Vec::new();
            for o in &outer {
                if Self::holds(facts, &o.nodes, &demand, want, &mut scratch) {
                    let (level, refined) = self.refine(&cx, &o.nodes, want, &mut scratch);
                    if refined.is_empty() {
                        out.push((self.keys.levels.len(), o.clone()));
                    } else {
                        out.extend(refined.into_iter().map(|p| (level, p)));
                    }
                }
            }
            if let Some(level) = out.iter().map(|(l, _)| *l).min() {
                return Ok(out.into_iter().filter(|(l, _)| *l == level).map(|(_, p)| p).collect());
            }
        }
        Ok(outer)
    }
}
