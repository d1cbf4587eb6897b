//! Shared helpers for integration tests: a recording plugin that can be told how to
//! answer at every extension point.
#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use schedkit::framework::*;
use schedkit::model::Symbol;
use schedkit::snapshot::{NodeInfo, NodeList, PodInfo, Snapshot};

/// A shared, ordered log of plugin calls like `"Filter:A:node-1"`.
pub type Log = Arc<Mutex<Vec<String>>>;

pub fn new_log() -> Log {
    Arc::new(Mutex::new(Vec::new()))
}

/// A plugin at every extension point that records each call and answers as told.
pub struct Recorder {
    pub name: &'static str,
    pub log: Log,
    pub pre_filter: Status,
    pub pre_filter_nodes: Option<Vec<&'static str>>,
    /// Nodes this plugin's Filter rejects, with the reason.
    pub reject_nodes: Vec<(&'static str, Status)>,
    pub panic_in_filter: bool,
    pub pre_score: Status,
    /// Score = this value for every node, except `prefer` which gets 100.
    pub prefer: Option<&'static str>,
    pub reserve: Status,
    pub permit: PermitDecision,
    pub pre_bind: Status,
    pub bind: Status,
}

impl Recorder {
    pub fn new(name: &'static str, log: &Log) -> Recorder {
        Recorder {
            name,
            log: log.clone(),
            pre_filter: Status::SUCCESS,
            pre_filter_nodes: None,
            reject_nodes: Vec::new(),
            panic_in_filter: false,
            pre_score: Status::SUCCESS,
            prefer: None,
            reserve: Status::SUCCESS,
            permit: PermitDecision::Allow,
            pre_bind: Status::SUCCESS,
            bind: Status::SKIP,
        }
    }

    fn rec(&self, point: &str, extra: &str) {
        let entry =
            if extra.is_empty() { format!("{point}:{}", self.name) } else { format!("{point}:{}:{extra}", self.name) };
        self.log.lock().push(entry);
    }
}

impl Plugin for Recorder {
    fn name(&self) -> &str {
        self.name
    }
    fn register(self: Arc<Self>, p: &mut ExtensionPoints) {
        p.pre_filter(self.clone())
            .filter(self.clone())
            .post_filter(self.clone())
            .pre_score(self.clone())
            .score(self.clone())
            .reserve(self.clone())
            .permit(self.clone())
            .pre_bind(self.clone())
            .bind(self.clone())
            .post_bind(self);
    }
}

impl PreFilterPlugin for Recorder {
    fn pre_filter(&self, _: &mut CycleState, _: &PodInfo, _: &Snapshot) -> (Option<PreFilterResult>, Status) {
        self.rec("PreFilter", "");
        let r = self.pre_filter_nodes.as_ref().map(|n| PreFilterResult::nodes(n.iter().copied()));
        (r, self.pre_filter.clone())
    }
}

impl FilterPlugin for Recorder {
    fn filter(&self, _: &CycleState, _: &PodInfo, node: &NodeInfo) -> Status {
        self.rec("Filter", node.node().name());
        assert!(!self.panic_in_filter, "filter exploded on {}", node.node().name());
        for (n, s) in &self.reject_nodes {
            if *n == node.node().name() {
                return s.clone();
            }
        }
        Status::SUCCESS
    }
}

impl PostFilterPlugin for Recorder {
    fn post_filter(
        &self,
        _: &CycleState,
        _: &PodInfo,
        _: &Snapshot,
        _: &NodeToStatus,
    ) -> (Option<PostFilterResult>, Status) {
        self.rec("PostFilter", "");
        (None, Status::unschedulable(format!("{} could not help", self.name)))
    }
}

impl PreScorePlugin for Recorder {
    fn pre_score(&self, _: &mut CycleState, _: &PodInfo, nodes: NodeList<'_>) -> Status {
        self.rec("PreScore", &nodes.len().to_string());
        self.pre_score.clone()
    }
}

impl ScorePlugin for Recorder {
    fn score(&self, _: &CycleState, _: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        self.rec("Score", node.node().name());
        Ok(if self.prefer == Some(node.node().name()) { 100 } else { 10 })
    }
    fn normalize(&self, _: &CycleState, _: &PodInfo, scores: &mut [NodeScore]) -> Status {
        self.rec("NormalizeScore", &scores.len().to_string());
        Status::SUCCESS
    }
}

impl ReservePlugin for Recorder {
    fn reserve(&self, _: &mut CycleState, _: &PodInfo, node: &str) -> Status {
        self.rec("Reserve", node);
        self.reserve.clone()
    }
    fn unreserve(&self, _: &mut CycleState, _: &PodInfo, node: &str) {
        self.rec("Unreserve", node);
    }
}

impl PermitPlugin for Recorder {
    fn permit(&self, _: &mut CycleState, _: &PodInfo, node: &str) -> PermitDecision {
        self.rec("Permit", node);
        self.permit.clone()
    }
}

impl PreBindPlugin for Recorder {
    fn pre_bind(&self, _: &mut CycleState, _: &PodInfo, node: &str) -> Status {
        self.rec("PreBind", node);
        self.pre_bind.clone()
    }
}

impl BindPlugin for Recorder {
    fn bind(&self, _: &mut CycleState, _: &PodInfo, node: &str) -> Status {
        self.rec("Bind", node);
        self.bind.clone()
    }
}

impl PostBindPlugin for Recorder {
    fn post_bind(&self, _: &CycleState, _: &PodInfo, node: &str) {
        self.rec("PostBind", node);
    }
}

/// Entries of `log` for one extension point, in order.
pub fn calls(log: &Log, point: &str) -> Vec<String> {
    log.lock().iter().filter(|e| e.split(':').next() == Some(point)).cloned().collect()
}

/// The extension point sequence, with consecutive duplicates merged, e.g.
/// `["PreFilter:A", "PreFilter:B", "Filter", ...]`.
pub fn phases(log: &Log) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for e in log.lock().iter() {
        let mut parts = e.split(':');
        let point = parts.next().unwrap_or_default();
        let plugin = parts.next().unwrap_or_default();
        let key = format!("{point}:{plugin}");
        if out.last() != Some(&key) {
            out.push(key);
        }
    }
    out
}

pub fn sym(s: &str) -> Symbol {
    Symbol::intern(s)
}

pub mod plugins;

pub const LONG: Duration = Duration::from_mins(1);
