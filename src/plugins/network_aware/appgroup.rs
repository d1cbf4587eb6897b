//! The `appgroup.diktyo.x-k8s.io/v1alpha1` AppGroup object in its exact serialized
//! shape, its validation, and the AppGroup controller's topology sorting algorithms.
//!
//! Types follow diktyo-io/appgroup-api v1.0.1-alpha (`pkg/apis/appgroup/v1alpha1/types.go`,
//! the version scheduler-plugins v0.34.7 pins) and its CRD (`manifests/crd.yaml`): json
//! names, which fields are required and which are omitted when empty, and the CRD's
//! bounds (`numMembers >= 1`, `maxNetworkCost` in `0..=10000`, `runningWorkloads >= 0`).

use serde::{Deserialize, Serialize};

use super::{NetworkAwareError, object_id};
use crate::dra::ObjectMeta;
use crate::model::Quantity;

/// The API version AppGroups serialize as.
pub const APP_GROUP_API_VERSION: &str = "appgroup.diktyo.x-k8s.io/v1alpha1";
/// The pod label naming the pod's AppGroup (upstream `AppGroupLabel`).
pub const APP_GROUP_LABEL: &str = "appgroup.diktyo.x-k8s.io";
/// The pod label naming the pod's workload selector in its AppGroup (upstream
/// `AppGroupSelectorLabel`).
pub const APP_GROUP_SELECTOR_LABEL: &str = "appgroup.diktyo.x-k8s.io.workload";

/// Largest `maxNetworkCost` the CRD accepts.
pub const MAX_NETWORK_COST_LIMIT: i64 = 10_000;

#[expect(clippy::trivially_copy_pass_by_ref, reason = "serde's skip_serializing_if passes a reference")]
fn is_zero_i32(v: &i32) -> bool {
    *v == 0
}
#[expect(clippy::trivially_copy_pass_by_ref, reason = "serde's skip_serializing_if passes a reference")]
fn is_zero_i64(v: &i64) -> bool {
    *v == 0
}

/// An application: workloads and the network requirements between them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AppGroup {
    /// `appgroup.diktyo.x-k8s.io/v1alpha1` (empty when built in code).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// `AppGroup` (empty when built in code).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Metadata; the AppGroup is namespaced (an empty namespace means `default`).
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// What the application is made of.
    #[serde(default)]
    pub spec: AppGroupSpec,
    /// What the AppGroup controller computed.
    #[serde(default, skip_serializing_if = "AppGroupStatus::is_empty")]
    pub status: AppGroupStatus,
}

/// `AppGroupSpec`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AppGroupSpec {
    /// Number of pods in the group (CRD: at least 1).
    pub num_members: i32,
    /// The sorting algorithm's name as written (see [`AppGroupSpec::algorithm`]).
    pub topology_sorting_algorithm: String,
    /// The workloads.
    pub workloads: Vec<AppGroupWorkload>,
}

/// `AppGroupWorkload`: one workload and what it talks to.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AppGroupWorkload {
    /// The workload.
    pub workload: AppGroupWorkloadInfo,
    /// Its dependencies.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dependencies: Vec<DependenciesInfo>,
}

/// `AppGroupWorkloadInfo`: a reference to a workload; its pods carry
/// [`APP_GROUP_SELECTOR_LABEL`] = `selector`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AppGroupWorkloadInfo {
    /// Kind (e.g. `Deployment`).
    pub kind: String,
    /// Name.
    pub name: String,
    /// The value of the pods' workload label.
    pub selector: String,
    /// API version of the workload.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// Namespace of the workload.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
}

/// `DependenciesInfo`: a workload this one talks to, and the requirement on the link.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DependenciesInfo {
    /// The workload depended on.
    pub workload: AppGroupWorkloadInfo,
    /// Bandwidth the link needs (not read by the scheduler plugins).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_bandwidth: Option<Quantity>,
    /// Highest network cost allowed between the two (CRD: `0..=10000`, default 0).
    #[serde(default, skip_serializing_if = "is_zero_i64")]
    pub max_network_cost: i64,
}

/// `AppGroupStatus`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AppGroupStatus {
    /// Running workloads (pods).
    #[serde(default, skip_serializing_if = "is_zero_i32")]
    pub running_workloads: i32,
    /// When scheduling of the group started (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule_start_time: Option<String>,
    /// When the topology order was computed (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology_calculation_time: Option<String>,
    /// The order to deploy workloads in, sorted by `workload.selector` (the
    /// TopologicalSort plugin binary-searches it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub topology_order: Vec<AppGroupTopologyInfo>,
}

impl AppGroupStatus {
    fn is_empty(&self) -> bool {
        *self == AppGroupStatus::default()
    }
}

/// `AppGroupTopologyInfo`: a workload's place in the deployment order (1 first).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AppGroupTopologyInfo {
    /// The workload.
    #[serde(default)]
    pub workload: AppGroupWorkloadInfo,
    /// Its position.
    #[serde(default, skip_serializing_if = "is_zero_i32")]
    pub index: i32,
}

/// The AppGroup controller's sorting algorithms (upstream constants `AppGroupKahnSort`...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum TopologySortingAlgorithm {
    /// Kahn's algorithm with a stack of zero in-degree workloads.
    #[default]
    KahnSort,
    /// Depth-first (Tarjan) sort.
    TarjanSort,
    /// KahnSort reversed.
    ReverseKahn,
    /// TarjanSort reversed.
    ReverseTarjan,
    /// KahnSort taken alternately from the front and the back.
    AlternateKahn,
    /// TarjanSort taken alternately from the front and the back.
    AlternateTarjan,
}

impl TopologySortingAlgorithm {
    /// Every algorithm.
    pub const ALL: [TopologySortingAlgorithm; 6] = [
        TopologySortingAlgorithm::KahnSort,
        TopologySortingAlgorithm::TarjanSort,
        TopologySortingAlgorithm::ReverseKahn,
        TopologySortingAlgorithm::ReverseTarjan,
        TopologySortingAlgorithm::AlternateKahn,
        TopologySortingAlgorithm::AlternateTarjan,
    ];

    /// The spelling in `spec.topologySortingAlgorithm`.
    pub fn as_str(self) -> &'static str {
        match self {
            TopologySortingAlgorithm::KahnSort => "KahnSort",
            TopologySortingAlgorithm::TarjanSort => "TarjanSort",
            TopologySortingAlgorithm::ReverseKahn => "ReverseKahn",
            TopologySortingAlgorithm::ReverseTarjan => "ReverseTarjan",
            TopologySortingAlgorithm::AlternateKahn => "AlternateKahn",
            TopologySortingAlgorithm::AlternateTarjan => "AlternateTarjan",
        }
    }

    /// The algorithm named `name`, if it is one.
    pub fn parse(name: &str) -> Option<TopologySortingAlgorithm> {
        TopologySortingAlgorithm::ALL.into_iter().find(|a| a.as_str() == name)
    }
}

impl AppGroupSpec {
    /// The sorting algorithm; an unknown name means KahnSort, as the AppGroup
    /// controller defaults it.
    pub fn algorithm(&self) -> TopologySortingAlgorithm {
        TopologySortingAlgorithm::parse(&self.topology_sorting_algorithm).unwrap_or_default()
    }
}

impl AppGroup {
    /// Decodes an AppGroup from JSON (a manifest converted from YAML, or API output),
    /// then [validates](AppGroup::validate) it. Errors name the object and the field.
    ///
    /// ```
    /// use schedkit::plugins::network_aware::AppGroup;
    /// let ag = AppGroup::from_json(&serde_json::json!({
    ///     "apiVersion": "appgroup.diktyo.x-k8s.io/v1alpha1", "kind": "AppGroup",
    ///     "metadata": {"name": "a1"},
    ///     "spec": {"numMembers": 1, "topologySortingAlgorithm": "KahnSort",
    ///              "workloads": [{"workload": {"kind": "Deployment", "name": "p1", "selector": "p1"}}]}
    /// })).unwrap();
    /// assert_eq!(ag.spec.workloads[0].workload.selector, "p1");
    /// let err = AppGroup::from_json(&serde_json::json!({"metadata": {"name": "a2"}, "spec": {"numMembers": 0}}));
    /// assert!(err.unwrap_err().to_string().contains("AppGroup default/a2"));
    /// ```
    pub fn from_json(value: &serde_json::Value) -> Result<AppGroup, NetworkAwareError> {
        let ag: AppGroup = serde_json::from_value(value.clone()).map_err(|e| NetworkAwareError::Decode {
            kind: "AppGroup",
            object: object_id(value),
            message: e.to_string(),
        })?;
        ag.validate()?;
        Ok(ag)
    }

    /// `namespace/name`, the namespace defaulted.
    pub fn id(&self) -> String {
        format!("{}/{}", self.namespace(), self.metadata.name)
    }

    /// The namespace (`default` when empty).
    pub fn namespace(&self) -> &str {
        if self.metadata.namespace.is_empty() { "default" } else { &self.metadata.namespace }
    }

    /// Checks what the CRD's schema checks (required name, `numMembers >= 1`,
    /// `maxNetworkCost` in `0..=10000`, `runningWorkloads >= 0`), the apiVersion and kind
    /// when given, and that topology indices are not negative.
    pub fn validate(&self) -> Result<(), NetworkAwareError> {
        let bad = |field: String, reason: String| {
            Err(NetworkAwareError::Invalid { kind: "AppGroup", object: self.id(), field, reason })
        };
        if !self.api_version.is_empty() && self.api_version != APP_GROUP_API_VERSION {
            return bad("apiVersion".into(), format!("must be {APP_GROUP_API_VERSION}, got {:?}", self.api_version));
        }
        if !self.kind.is_empty() && self.kind != "AppGroup" {
            return bad("kind".into(), format!("must be AppGroup, got {:?}", self.kind));
        }
        if self.metadata.name.is_empty() {
            return bad("metadata.name".into(), "must not be empty".into());
        }
        if self.spec.num_members < 1 {
            return bad("spec.numMembers".into(), format!("must be at least 1, got {}", self.spec.num_members));
        }
        for (i, w) in self.spec.workloads.iter().enumerate() {
            for (j, d) in w.dependencies.iter().enumerate() {
                if !(0..=MAX_NETWORK_COST_LIMIT).contains(&d.max_network_cost) {
                    return bad(
                        format!("spec.workloads[{i}].dependencies[{j}].maxNetworkCost"),
                        format!("must be in 0..={MAX_NETWORK_COST_LIMIT}, got {}", d.max_network_cost),
                    );
                }
            }
        }
        if self.status.running_workloads < 0 {
            return bad(
                "status.runningWorkloads".into(),
                format!("must not be negative, got {}", self.status.running_workloads),
            );
        }
        if let Some((i, t)) = self.status.topology_order.iter().enumerate().find(|(_, t)| t.index < 0) {
            return bad(format!("status.topologyOrder[{i}].index"), format!("must not be negative, got {}", t.index));
        }
        Ok(())
    }

    /// The workloads' selectors in deployment order by [`AppGroupSpec::algorithm`], as
    /// the AppGroup controller sorts them (diktyo-io/appgroup-controller `util/appgroup.go`,
    /// after otaviokr/topological-sort). Only workloads that have or are dependencies take
    /// part, as upstream. Fails on a cycle.
    ///
    /// Differences from upstream, on purpose: the graph is keyed by `selector` (upstream
    /// keys it by workload `name` and then looks workloads up by selector, so it falls back
    /// to the spec order whenever the two differ), and workloads are visited in spec order
    /// (upstream walks Go maps, whose order is random), so the result is deterministic.
    pub fn sorted_workloads(&self) -> Result<Vec<String>, NetworkAwareError> {
        let graph = DependencyGraph::new(&self.spec.workloads);
        let sorted = match self.spec.algorithm() {
            TopologySortingAlgorithm::KahnSort
            | TopologySortingAlgorithm::ReverseKahn
            | TopologySortingAlgorithm::AlternateKahn => graph.kahn(),
            TopologySortingAlgorithm::TarjanSort
            | TopologySortingAlgorithm::ReverseTarjan
            | TopologySortingAlgorithm::AlternateTarjan => graph.tarjan(),
        }
        .map_err(|involving| NetworkAwareError::Cycle { object: self.id(), involving })?;
        let mut names: Vec<String> = sorted.into_iter().map(|i| graph.nodes[i].to_owned()).collect();
        match self.spec.algorithm() {
            TopologySortingAlgorithm::ReverseKahn | TopologySortingAlgorithm::ReverseTarjan => names.reverse(),
            TopologySortingAlgorithm::AlternateKahn | TopologySortingAlgorithm::AlternateTarjan => {
                names = alternate(&names);
            }
            _ => {}
        }
        Ok(names)
    }

    /// The `status.topologyOrder` the AppGroup controller writes
    /// (`calculateTopologyOrder`): [`AppGroup::sorted_workloads`] numbered from 1, or, when
    /// that fails (a cycle, or a dependency on a workload the spec doesn't list), every
    /// workload numbered in spec order (`defaultTopologyOrder`); either way sorted by
    /// selector.
    pub fn calculate_topology_order(&self) -> Vec<AppGroupTopologyInfo> {
        let by_selector = |sel: &str| self.spec.workloads.iter().find(|w| w.workload.selector == sel);
        let computed = self.sorted_workloads().ok().and_then(|order| {
            order
                .iter()
                .enumerate()
                .map(|(i, sel)| {
                    by_selector(sel).map(|w| AppGroupTopologyInfo { workload: w.workload.clone(), index: i as i32 + 1 })
                })
                .collect::<Option<Vec<_>>>()
        });
        let mut list = computed.unwrap_or_else(|| {
            self.spec
                .workloads
                .iter()
                .enumerate()
                .map(|(i, w)| AppGroupTopologyInfo { workload: w.workload.clone(), index: i as i32 + 1 })
                .collect()
        });
        list.sort_by(|a, b| a.workload.selector.cmp(&b.workload.selector));
        list
    }

    /// Does the AppGroup controller's job: fills `status.topologyOrder` with
    /// [`AppGroup::calculate_topology_order`].
    #[must_use]
    pub fn with_topology_order(mut self) -> AppGroup {
        self.status.topology_order = self.calculate_topology_order();
        self
    }
}

/// `[s0, s(n-1), s1, s(n-2), ...]`: upstream `Alternate`.
fn alternate(sorted: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(sorted.len());
    let mut j = 0;
    for i in 0..sorted.len() {
        if i.is_multiple_of(2) {
            out.push(sorted[j].clone());
            j += 1;
        } else {
            out.push(sorted[sorted.len() - j].clone());
        }
    }
    out
}

/// Workload selectors as graph nodes in first-seen order, edges workload -> dependency
/// (upstream's `tree` after `NormalizeTree`).
struct DependencyGraph<'a> {
    nodes: Vec<&'a str>,
    children: Vec<Vec<usize>>,
}

impl<'a> DependencyGraph<'a> {
    fn new(workloads: &'a [AppGroupWorkload]) -> Self {
        let mut g = DependencyGraph { nodes: Vec::new(), children: Vec::new() };
        // Keys first (workloads with dependencies, in spec order), then leaves as met.
        for w in workloads.iter().filter(|w| !w.dependencies.is_empty()) {
            g.node(&w.workload.selector);
        }
        for w in workloads.iter().filter(|w| !w.dependencies.is_empty()) {
            let from = g.node(&w.workload.selector);
            for d in &w.dependencies {
                let to = g.node(&d.workload.selector);
                g.children[from].push(to);
            }
        }
        g
    }

    fn node(&mut self, name: &'a str) -> usize {
        if let Some(i) = self.nodes.iter().position(|n| *n == name) {
            return i;
        }
        self.nodes.push(name);
        self.children.push(Vec::new());
        self.nodes.len() - 1
    }

    /// Kahn with a LIFO stack, as upstream. On a cycle: the nodes left with in-degree > 0,
    /// in string order.
    fn kahn(&self) -> Result<Vec<usize>, Vec<String>> {
        let mut in_degree = vec![0_i64; self.nodes.len()];
        for c in self.children.iter().flatten() {
            in_degree[*c] += 1;
        }
        let mut stack: Vec<usize> = Vec::new();
        for (i, d) in in_degree.iter_mut().enumerate() {
            if *d == 0 {
                stack.push(i);
                *d = -1;
            }
        }
        let mut sorted = Vec::with_capacity(self.nodes.len());
        while let Some(n) = stack.pop() {
            for &c in &self.children[n] {
                in_degree[c] -= 1;
                if in_degree[c] == 0 {
                    stack.push(c);
                    in_degree[c] = -1;
                }
            }
            sorted.push(n);
        }
        if sorted.len() == self.nodes.len() {
            return Ok(sorted);
        }
        let mut cycle: Vec<String> =
            (0..self.nodes.len()).filter(|&i| in_degree[i] > 0).map(|i| self.nodes[i].to_owned()).collect();
        cycle.sort();
        Err(cycle)
    }

    /// Depth-first: reverse post-order; on a cycle, the node where it was found.
    fn tarjan(&self) -> Result<Vec<usize>, Vec<String>> {
        #[derive(Clone, Copy, PartialEq)]
        enum Mark {
            None,
            Temporary,
            Done,
        }
        let mut marks = vec![Mark::None; self.nodes.len()];
        let mut post = Vec::with_capacity(self.nodes.len());
        for root in 0..self.nodes.len() {
            if marks[root] != Mark::None {
                continue;
            }
            // Iterative DFS: (node, next child position).
            let mut stack = vec![(root, 0_usize)];
            marks[root] = Mark::Temporary;
            while let Some(top) = stack.last_mut() {
                let (n, pos) = *top;
                if let Some(&c) = self.children[n].get(pos) {
                    top.1 += 1;
                    match marks[c] {
                        Mark::Temporary => return Err(vec![self.nodes[c].to_owned()]),
                        Mark::Done => {}
                        Mark::None => {
                            marks[c] = Mark::Temporary;
                            stack.push((c, 0));
                        }
                    }
                } else {
                    marks[n] = Mark::Done;
                    post.push(n);
                    stack.pop();
                }
            }
        }
        post.reverse();
        Ok(post)
    }
}
