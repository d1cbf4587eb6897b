//! The soak's own model of the cluster: what it asked for, kept apart from schedkit's
//! cache and queue so the checks compare two independent accounts.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::dra;
use super::gang::GROUP_LABEL;
use crate::model::{Node, Pod, PodResourceClaim, TaintEffect};
use crate::rng::SplitMix64;
use crate::testing::{NodeBuilder, PodBuilder};

/// Zones nodes are spread over.
pub(super) const ZONES: usize = 5;
const ZONE_KEY: &str = "topology.kubernetes.io/zone";
const TAINT_KEY: &str = "dedicated";
const TAINT_VALUE: &str = "infra";
const HOST_PORTS: [i32; 3] = [8080, 9090, 9100];
const MIB: i64 = 1 << 20;

/// A node as the soak made it.
#[derive(Debug, Clone)]
pub(super) struct NodeModel {
    pub(super) name: String,
    zone: usize,
    milli_cpu: i64,
    memory: i64,
    max_pods: i64,
    tainted: bool,
    cordoned: bool,
    present: bool,
    /// Pods placed here (assumed or bound).
    pods: HashSet<Arc<str>>,
    ports: HashSet<i32>,
    used: Totals,
    /// GPUs its ResourceSlice publishes (0 outside the DRA modes) and their product.
    pub(super) gpus: i64,
    pub(super) product: usize,
}

/// Requested totals on a node.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Totals {
    pub(super) milli_cpu: i64,
    pub(super) memory: i64,
    pub(super) pods: usize,
    pub(super) gpus: i64,
}

/// A pod as the soak made it.
#[derive(Debug, Clone)]
pub(super) struct PodSpec {
    pub(super) uid: Arc<str>,
    milli_cpu: i64,
    memory: i64,
    host_port: Option<i32>,
    zone: Option<usize>,
    tolerates: bool,
    priority: i32,
    /// The claim template it draws GPUs from (an index into [`dra::TEMPLATES`]).
    pub(super) gpu: Option<usize>,
    /// The gang it belongs to.
    pub(super) group: Option<Arc<str>>,
}

impl PodSpec {
    /// Pod number `n`: random requests, and now and then a host port, a zone
    /// selector, a toleration of the soak's taint, a high priority (a preemptor).
    /// With `gpus`, one pod in four also claims GPUs through a claim template.
    pub(super) fn random(n: u64, rng: &mut SplitMix64, zones: usize, gpus: bool) -> PodSpec {
        let pick = |rng: &mut SplitMix64, opts: &[i64]| opts[rng.below(opts.len() as u64) as usize];
        let gpu = (gpus && rng.below(4) == 0).then(|| rng.below(dra::TEMPLATES.len() as u64) as usize);
        PodSpec {
            uid: Arc::from(format!("soak-{n}")),
            milli_cpu: pick(rng, &[100, 250, 500, 1000, 2000]),
            memory: pick(rng, &[128, 512, 1024, 4096]) * MIB,
            host_port: (rng.below(10) == 0).then(|| HOST_PORTS[rng.below(HOST_PORTS.len() as u64) as usize]),
            zone: (rng.below(5) == 0).then(|| rng.below(zones as u64) as usize),
            tolerates: rng.below(5) == 0,
            priority: if rng.below(10) == 0 { 1000 } else { 0 },
            gpu,
            group: None,
        }
    }

    /// Pod number `n`, a member of gang `group`: one core, 1 GiB, and with `gpu` a
    /// claim from that template.
    pub(super) fn gang_member(n: u64, group: Arc<str>, gpu: Option<usize>) -> PodSpec {
        PodSpec {
            uid: Arc::from(format!("soak-{n}")),
            milli_cpu: 1000,
            memory: 1024 * MIB,
            host_port: None,
            zone: None,
            tolerates: false,
            priority: 0,
            gpu,
            group: Some(group),
        }
    }

    /// GPUs it claims.
    pub(super) fn gpus(&self) -> i64 {
        self.gpu.map_or(0, |t| dra::TEMPLATES[t].count)
    }

    /// The pod object, with label values that never repeat.
    pub(super) fn object(&self) -> Pod {
        let uid = &*self.uid;
        let mut b = PodBuilder::new(uid)
            .namespace(dra::NAMESPACE)
            .uid(uid)
            .cpu(&format!("{}m", self.milli_cpu))
            .memory(&format!("{}Mi", self.memory / MIB))
            .label("app", &format!("app-{}", uid.len() % 7))
            .label("pod-template-hash", &format!("{uid}-h"))
            .label("controller-uid", &format!("{uid}-c"))
            .priority(self.priority);
        if let Some(p) = self.host_port {
            b = b.host_port(p);
        }
        if let Some(z) = self.zone {
            b = b.node_selector(ZONE_KEY, &zone_name(z));
        }
        if self.tolerates {
            b = b.toleration(TAINT_KEY, Some(TAINT_VALUE), Some(TaintEffect::NoSchedule));
        }
        if let Some(g) = &self.group {
            b = b.label(GROUP_LABEL, g);
        }
        if let Some(t) = self.gpu {
            b = b.with(|p| {
                p.spec.resource_claims.push(PodResourceClaim {
                    name: dra::CLAIM.into(),
                    resource_claim_name: None,
                    resource_claim_template_name: Some(dra::TEMPLATES[t].name.into()),
                    pod_group_resource_claim: None,
                });
            });
        }
        b.build()
    }
}

fn zone_name(z: usize) -> String {
    format!("zone-{z}")
}

/// Where a pod is in the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PodWhere {
    /// Queued (active, backoff or unschedulable).
    Pending,
    /// Assumed or bound on the node with this index.
    Placed(usize),
}

/// The cluster as the soak built it.
#[derive(Debug, Default)]
pub(super) struct Model {
    pub(super) nodes: Vec<NodeModel>,
    by_name: HashMap<String, usize>,
    pub(super) pods: HashMap<Arc<str>, (PodSpec, PodWhere, usize)>,
    /// Placed pods whose binding cycle completed.
    pub(super) bound: HashSet<Arc<str>>,
    /// Whether nodes publish GPUs (the DRA modes).
    pub(super) gpus: bool,
    /// Uids, for picking one at random (`pods` holds each one's index here).
    order: Vec<Arc<str>>,
    pending: usize,
}

impl Model {
    /// Makes node `index` (its name is fixed by the index), returning the index.
    pub(super) fn new_node(&mut self, index: usize, rng: &mut SplitMix64) -> usize {
        let name = format!("soak-node-{index}");
        let node = NodeModel {
            name: name.clone(),
            zone: index % ZONES,
            milli_cpu: 0,
            memory: 0,
            max_pods: 110,
            tainted: false,
            cordoned: false,
            present: true,
            pods: HashSet::new(),
            ports: HashSet::new(),
            used: Totals::default(),
            gpus: if self.gpus { dra::gpus_on(index) } else { 0 },
            product: dra::product_of(index),
        };
        debug_assert_eq!(index, self.nodes.len());
        self.nodes.push(node);
        self.by_name.insert(name, index);
        self.node_reset(index, rng);
        index
    }

    /// Gives node `index` a fresh shape (after it was removed, or when made).
    pub(super) fn node_reset(&mut self, index: usize, rng: &mut SplitMix64) {
        let n = &mut self.nodes[index];
        n.milli_cpu = if rng.below(4) == 0 { 8000 } else { 4000 };
        n.memory = n.milli_cpu / 1000 * 4096 * MIB;
        n.tainted = rng.below(10) == 0;
        n.cordoned = false;
        n.present = true;
    }

    /// The node object for node `index`.
    pub(super) fn node_object(&self, index: usize) -> Node {
        let n = &self.nodes[index];
        let mut b = NodeBuilder::new(&n.name)
            .cpu(&format!("{}m", n.milli_cpu))
            .memory(&format!("{}Mi", n.memory / MIB))
            .pods(n.max_pods)
            .zone(&zone_name(n.zone))
            .label("kubernetes.io/hostname", &n.name);
        if n.tainted {
            b = b.taint(TAINT_KEY, TAINT_VALUE, TaintEffect::NoSchedule);
        }
        if n.cordoned {
            b = b.unschedulable();
        }
        b.build()
    }

    /// The name of node `index`.
    pub(super) fn node_name(&self, index: usize) -> String {
        self.nodes[index].name.clone()
    }

    pub(super) fn node_removed(&mut self, index: usize) {
        let n = &mut self.nodes[index];
        debug_assert!(n.pods.is_empty(), "a node is drained before it is removed");
        n.present = false;
    }

    pub(super) fn toggle_taint(&mut self, index: usize) {
        self.nodes[index].tainted ^= true;
    }

    pub(super) fn toggle_cordon(&mut self, index: usize) {
        self.nodes[index].cordoned ^= true;
    }

    /// Grows or shrinks node `index` between 4 and 8 cores (4 GiB per core), never
    /// below what its pods request.
    pub(super) fn resize(&mut self, index: usize, rng: &mut SplitMix64) {
        let n = &mut self.nodes[index];
        let cpu = if rng.below(2) == 0 { 4000 } else { 8000 };
        let memory = cpu / 1000 * 4096 * MIB;
        if n.used.milli_cpu <= cpu && n.used.memory <= memory {
            n.milli_cpu = cpu;
            n.memory = memory;
        }
    }

    /// Pods alive.
    pub(super) fn pod_count(&self) -> usize {
        self.pods.len()
    }

    /// Pods queued.
    pub(super) fn pending_count(&self) -> usize {
        self.pending
    }

    /// Pods assumed or bound.
    pub(super) fn placed_count(&self) -> usize {
        self.pods.len() - self.pending
    }

    pub(super) fn has_pod(&self, uid: &str) -> bool {
        self.pods.contains_key(uid)
    }

    /// What the soak asked for pod `uid`.
    pub(super) fn spec(&self, uid: &str) -> Option<&PodSpec> {
        self.pods.get(uid).map(|(s, _, _)| s)
    }

    /// Where pod `uid` is.
    pub(super) fn place(&self, uid: &str) -> Option<PodWhere> {
        self.pods.get(uid).map(|(_, w, _)| *w)
    }

    /// Pod `uid`'s binding cycle completed; false when it is no longer placed (it was
    /// deleted while its binding ran).
    pub(super) fn mark_bound(&mut self, uid: &str) -> bool {
        match self.pods.get(uid) {
            Some((spec, PodWhere::Placed(_), _)) => {
                self.bound.insert(spec.uid.clone());
                true
            }
            _ => false,
        }
    }

    /// Every pod and where it is.
    pub(super) fn pods(&self) -> impl Iterator<Item = (&str, PodWhere)> {
        self.pods.iter().map(|(uid, (_, w, _))| (&**uid, *w))
    }

    pub(super) fn add_pod(&mut self, spec: PodSpec) {
        let uid = spec.uid.clone();
        self.order.push(uid.clone());
        self.pods.insert(uid, (spec, PodWhere::Pending, self.order.len() - 1));
        self.pending += 1;
    }

    pub(super) fn random_pod(&self, rng: &mut SplitMix64) -> Option<Arc<str>> {
        if self.order.is_empty() {
            return None;
        }
        Some(self.order[rng.below(self.order.len() as u64) as usize].clone())
    }

    /// Uids of the pods placed on node `index`.
    pub(super) fn pods_on(&self, index: usize) -> Vec<Arc<str>> {
        self.nodes[index].pods.iter().cloned().collect()
    }

    pub(super) fn remove_pod(&mut self, uid: &str) {
        self.unassume(uid);
        let Some((_, _, pos)) = self.pods.remove(uid) else { return };
        self.pending -= 1;
        self.order.swap_remove(pos);
        if let Some(moved) = self.order.get(pos)
            && let Some(e) = self.pods.get_mut(moved)
        {
            e.2 = pos;
        }
    }

    /// Whether pod `uid` may go to `node` by its hard constraints and the node's
    /// room, as the model knows the node now; the reason when not.
    pub(super) fn check_fits(&self, uid: &str, node: &str) -> Result<(), String> {
        let Some((spec, place, _)) = self.pods.get(uid) else {
            return Err(format!("pod {uid} was scheduled but the soak never made it (or deleted it)"));
        };
        if *place != PodWhere::Pending {
            return Err(format!("pod {uid} was scheduled again while {place:?}"));
        }
        let Some(&index) = self.by_name.get(node) else { return Err(format!("pod {uid} went to unknown node {node}")) };
        let n = &self.nodes[index];
        let why = if !n.present {
            Some("the node was removed")
        } else if n.cordoned {
            Some("the node is cordoned")
        } else if n.tainted && !spec.tolerates {
            Some("an untolerated NoSchedule taint")
        } else if spec.zone.is_some_and(|z| z != n.zone) {
            Some("its nodeSelector names another zone")
        } else if spec.host_port.is_some_and(|p| n.ports.contains(&p)) {
            Some("its host port is taken")
        } else if n.used.milli_cpu + spec.milli_cpu > n.milli_cpu {
            Some("not enough cpu")
        } else if n.used.memory + spec.memory > n.memory {
            Some("not enough memory")
        } else if n.used.pods as i64 + 1 > n.max_pods {
            Some("too many pods")
        } else if n.used.gpus + spec.gpus() > n.gpus {
            Some("not enough GPUs")
        } else if spec.gpu.and_then(|t| dra::TEMPLATES[t].product).is_some_and(|p| p != n.product) {
            Some("its claim selects another GPU product")
        } else {
            None
        };
        match why {
            Some(why) => Err(format!("pod {uid} was placed on {node} despite {why}")),
            None => Ok(()),
        }
    }

    /// Pod `uid` is assumed on `node`.
    pub(super) fn assume(&mut self, uid: &str, node: &str) {
        let (Some(&index), Some((spec, place, _))) = (self.by_name.get(node), self.pods.get_mut(uid)) else { return };
        *place = PodWhere::Placed(index);
        self.pending -= 1;
        let n = &mut self.nodes[index];
        n.pods.insert(spec.uid.clone());
        if let Some(p) = spec.host_port {
            n.ports.insert(p);
        }
        n.used.milli_cpu += spec.milli_cpu;
        n.used.memory += spec.memory;
        n.used.pods += 1;
        n.used.gpus += spec.gpus();
    }

    /// Pod `uid` leaves its node and is pending again (binding failed, or on its way
    /// out).
    pub(super) fn unassume(&mut self, uid: &str) {
        let Some((spec, place, _)) = self.pods.get_mut(uid) else { return };
        let PodWhere::Placed(index) = *place else { return };
        *place = PodWhere::Pending;
        self.pending += 1;
        self.bound.remove(uid);
        let n = &mut self.nodes[index];
        n.pods.remove(&spec.uid);
        if let Some(p) = spec.host_port {
            n.ports.remove(&p);
        }
        n.used.milli_cpu -= spec.milli_cpu;
        n.used.memory -= spec.memory;
        n.used.pods -= 1;
        n.used.gpus -= spec.gpus();
    }

    /// What the model's pods on node `index` request.
    pub(super) fn node_totals(&self, index: usize) -> Totals {
        self.nodes[index].used
    }

    /// Node `index` is within its allocatable, recomputed from the pods placed
    /// there, and no host port is taken twice.
    pub(super) fn check_node(&self, index: usize) -> Result<(), String> {
        let n = &self.nodes[index];
        let mut sum = Totals::default();
        let mut ports = HashSet::new();
        for uid in &n.pods {
            let Some((spec, place, _)) = self.pods.get(uid) else {
                return Err(format!("node {} holds pod {uid}, which the model deleted", n.name));
            };
            if *place != PodWhere::Placed(index) {
                return Err(format!("node {} holds pod {uid}, which is {place:?}", n.name));
            }
            sum.milli_cpu += spec.milli_cpu;
            sum.memory += spec.memory;
            sum.pods += 1;
            sum.gpus += spec.gpus();
            if let Some(p) = spec.host_port
                && !ports.insert(p)
            {
                return Err(format!("host port {p} is taken twice on node {}", n.name));
            }
        }
        if sum != n.used {
            return Err(format!("node {}: running totals {:?}, recomputed {sum:?}", n.name, n.used));
        }
        if sum.milli_cpu > n.milli_cpu || sum.memory > n.memory || sum.pods as i64 > n.max_pods || sum.gpus > n.gpus {
            return Err(format!(
                "node {} is over allocatable: requests {sum:?}, allocatable ({} m cpu, {} B, {} pods, {} GPUs)",
                n.name, n.milli_cpu, n.memory, n.max_pods, n.gpus
            ));
        }
        Ok(())
    }
}
