//! TopologyPlacementGenerator (upstream
//! `pkg/scheduler/framework/plugins/topologyaware/topology_placement.go`, gate
//! `TopologyAwareWorkloadScheduling`): one placement per value of the PodGroup's
//! topology label, so the group lands in one domain (one rack, one block).

use std::sync::Arc;

use crate::framework::{
    ExtensionPoints, Handle, Placement, PlacementGeneratePlugin, Plugin, PodGroupCycleState, PodGroupInfo, Status,
};
use crate::model::Symbol;
use crate::plugins::names;
use crate::snapshot::Snapshot;

/// Proposes one placement per topology domain.
///
/// Upstream emits placements in Go map order (unspecified); schedkit emits them in the
/// order each domain's first node appears in the parent placement, so runs repeat.
#[derive(Debug, Clone)]
pub struct TopologyPlacementGenerator {
    handle: Handle,
}

impl TopologyPlacementGenerator {
    /// The plugin reading member states from `handle`.
    pub fn new(handle: Handle) -> TopologyPlacementGenerator {
        TopologyPlacementGenerator { handle }
    }

    /// The one domain the group's assumed and bound pods are in, if any
    /// (upstream `getScheduledPodsTopologyDomain`).
    fn scheduled_domain(
        &self,
        group: &PodGroupInfo,
        key: Option<Symbol>,
        key_text: &str,
        snapshot: &Snapshot,
    ) -> Result<Option<Symbol>, Status> {
        let scheduled: Vec<Arc<crate::snapshot::PodInfo>> =
            self.handle.pod_groups().states().with(group.namespace(), group.name(), |s| {
                s.map(|s| s.scheduled_pods().cloned().collect()).unwrap_or_default()
            });
        let mut domain: Option<Symbol> = None;
        for pod in &scheduled {
            let node = pod.node_name();
            let Some(info) = snapshot.get(node) else {
                return Err(Status::error(format!(
                    "cannot determine domain for already scheduled pods: getting node for pod {}: nodeinfo not found for node name {node:?}",
                    pod.pod.key()
                )));
            };
            let Some(d) = key.and_then(|k| info.node().metadata.labels.get(k)) else {
                return Err(Status::error(format!(
                    "cannot determine domain for already scheduled pods: no topology domain found for pod {} (label {key_text:?})",
                    pod.pod.key()
                )));
            };
            if let Some(prev) = domain
                && prev != d
            {
                return Err(Status::error(format!(
                    "cannot determine domain for already scheduled pods: more than 1 domain found for pod group: {}, {}",
                    prev.as_str(),
                    d.as_str()
                )));
            }
            domain = Some(d);
        }
        Ok(domain)
    }
}

impl Plugin for TopologyPlacementGenerator {
    fn name(&self) -> &str {
        names::TOPOLOGY_PLACEMENT_GENERATOR
    }
    fn register(self: Arc<Self>, points: &mut ExtensionPoints) {
        points.placement_generate(self);
    }
}

impl PlacementGeneratePlugin for TopologyPlacementGenerator {
    fn generate_placements(
        &self,
        _state: &mut PodGroupCycleState,
        group: &PodGroupInfo,
        snapshot: &Snapshot,
        parent: &Placement,
    ) -> Result<Vec<Placement>, Status> {
        let Some(key_text) = group.pod_group.topology_key() else { return Ok(vec![parent.clone()]) };
        let key = Symbol::lookup(key_text);
        let required = self.scheduled_domain(group, key, key_text, snapshot)?;
        let Some(key) = key else { return Ok(Vec::new()) }; // no node has ever had the label
        // One pass over the parent's nodes, indexing domains by value (in order of
        // first appearance), so the subsets cost one step per node however many
        // domains there are.
        let mut domains: Vec<(Symbol, Vec<usize>)> = Vec::new();
        let mut index: ahash::AHashMap<Symbol, usize> = ahash::AHashMap::new();
        for &pos in &parent.nodes {
            let Some(node) = snapshot.nodes().get(pos) else { continue };
            let Some(d) = node.node().metadata.labels.get(key) else { continue };
            if required.is_some_and(|r| r != d) {
                continue;
            }
            let i = *index.entry(d).or_insert_with(|| {
                domains.push((d, Vec::new()));
                domains.len() - 1
            });
            domains[i].1.push(pos);
        }
        Ok(domains.into_iter().map(|(d, nodes)| Placement { name: d.as_str().to_owned(), nodes }).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::Code;
    use crate::model::workload::PodGroup;
    use crate::snapshot::{MemberState, NodeInfo, PodInfo};
    use crate::testing::{NodeBuilder, PodBuilder};

    type Node<'a> = (&'a str, Option<(&'a str, &'a str)>);

    struct Case<'a> {
        name: &'a str,
        key: Option<&'a str>,
        scheduled: &'a [(&'a str, &'a str)],
        placement: &'a [Node<'a>],
        other: &'a [Node<'a>],
        want: Result<&'a [(&'a str, &'a [&'a str])], Code>,
    }

    /// Upstream `topology_placement_test.go` `TestGeneratePlacements`.
    #[test]
    fn generate_placements() {
        let cases = [
            Case {
                name: "without constraint returns placement matching all nodes",
                key: None,
                scheduled: &[],
                placement: &[("node1", None), ("node2", Some(("foo", "bar")))],
                other: &[("node3", None)],
                want: Ok(&[("test-placement", &["node1", "node2"])]),
            },
            Case {
                name: "with topology key constraint, returns placement for each topology domain",
                key: Some("topology1"),
                scheduled: &[],
                placement: &[
                    ("node0", Some(("topology2", "d1"))),
                    ("node1", Some(("topology2", "d4"))),
                    ("node2", Some(("topology1", "d1"))),
                    ("node3", Some(("topology1", "d2"))),
                    ("node4", Some(("topology1", "d1"))),
                    ("node5", Some(("topology1", "d3"))),
                ],
                other: &[],
                want: Ok(&[("d1", &["node2", "node4"]), ("d2", &["node3"]), ("d3", &["node5"])]),
            },
            Case {
                name: "without matching topology label, returns empty",
                key: Some("topology3"),
                scheduled: &[],
                placement: &[("node0", Some(("topology2", "d1"))), ("node2", Some(("topology1", "d1")))],
                other: &[],
                want: Ok(&[]),
            },
            Case {
                name: "with pods already scheduled in a single domain, returns that domain",
                key: Some("topology"),
                scheduled: &[("pod1", "node2"), ("pod2", "node3")],
                placement: &[("node0", Some(("topology", "d2"))), ("node1", Some(("topology", "d1")))],
                other: &[("node2", Some(("topology", "d1"))), ("node3", Some(("topology", "d1")))],
                want: Ok(&[("d1", &["node1"])]),
            },
            Case {
                name: "with pods already scheduled in a single domain not present in current placement, returns empty",
                key: Some("topology"),
                scheduled: &[("pod1", "node2"), ("pod2", "node3")],
                placement: &[("node0", Some(("topology", "d2")))],
                other: &[("node2", Some(("topology", "d1"))), ("node3", Some(("topology", "d1")))],
                want: Ok(&[]),
            },
            Case {
                name: "with pods already scheduled in conflicting domains, returns error",
                key: Some("topology"),
                scheduled: &[("pod1", "node2"), ("pod2", "node3")],
                placement: &[("node0", Some(("topology", "d2"))), ("node1", Some(("topology", "d1")))],
                other: &[("node2", Some(("topology", "d0"))), ("node3", Some(("topology", "d1")))],
                want: Err(Code::Error),
            },
            Case {
                name: "with already scheduled pod on node outside of snapshot, returns error",
                key: Some("topology"),
                scheduled: &[("pod1", "node2"), ("pod2", "node4")],
                placement: &[("node0", Some(("topology", "d2"))), ("node1", Some(("topology", "d1")))],
                other: &[("node2", Some(("topology", "d1"))), ("node3", Some(("topology", "d1")))],
                want: Err(Code::Error),
            },
            Case {
                name: "with already scheduled pod on node without topology label, returns error",
                key: Some("topology"),
                scheduled: &[("pod1", "node2")],
                placement: &[("node1", Some(("topology", "d2")))],
                other: &[("node2", Some(("foo", "bar")))],
                want: Err(Code::Error),
            },
        ];
        for c in cases {
            let handle = Handle::default();
            let node = |(name, label): &Node<'_>| {
                let mut b = NodeBuilder::new(name);
                if let Some((k, v)) = label {
                    b = b.label(k, v);
                }
                NodeInfo::new(Arc::new(b.build()))
            };
            let snapshot = Snapshot::from_nodes(c.placement.iter().chain(c.other).map(node));
            let mut pg = PodGroup::gang("default", "pg1", 1);
            if let Some(k) = c.key {
                pg = pg.with_topology(k);
            }
            for (p, n) in c.scheduled {
                let pod = PodInfo::new(PodBuilder::new(p).uid(p).pod_group_name("pg1").node_name(n).build()).unwrap();
                handle.pod_groups().states().set(&Arc::new(pod), MemberState::Assigned);
            }
            let info = PodGroupInfo { pod_group: Arc::new(pg), unscheduled_pods: vec![] };
            let parent = Placement { name: "test-placement".into(), nodes: (0..c.placement.len()).collect() };
            let got = TopologyPlacementGenerator::new(handle).generate_placements(
                &mut PodGroupCycleState::new(),
                &info,
                &snapshot,
                &parent,
            );
            match c.want {
                Ok(want) => {
                    let got: Vec<(String, Vec<String>)> = got
                        .unwrap_or_else(|s| panic!("{}: {s:?}", c.name))
                        .iter()
                        .map(|p| {
                            let nodes = p.nodes.iter().map(|&i| snapshot.nodes()[i].node().name().to_owned()).collect();
                            (p.name.clone(), nodes)
                        })
                        .collect();
                    let want: Vec<(String, Vec<String>)> = want
                        .iter()
                        .map(|(n, nodes)| ((*n).to_owned(), nodes.iter().map(|s| (*s).to_owned()).collect()))
                        .collect();
                    assert_eq!(got, want, "{}", c.name);
                }
                Err(code) => assert_eq!(got.unwrap_err().code(), code, "{}", c.name),
            }
        }
    }
}
