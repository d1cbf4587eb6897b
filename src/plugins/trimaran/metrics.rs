//! Load metrics in load-watcher's `WatcherMetrics` shape (paypal/load-watcher v0.2.4,
//! `pkg/watcher/watcher.go`), the [`LoadMetricsSource`] trait the Trimaran plugins read
//! them through, and the in-memory source a simulator updates.

use std::collections::BTreeMap;
use std::sync::Arc;

use ahash::AHashMap;
use parking_lot::RwLock;
use serde::{Deserialize, Deserializer, Serialize};

use crate::model::{HeldSymbol, Symbol};

/// Metric type of CPU utilisation (load-watcher `watcher.CPU`).
pub const CPU: &str = "CPU";
/// Metric type of memory utilisation (`watcher.Memory`).
pub const MEMORY: &str = "Memory";
/// Metric type of bandwidth (`watcher.Bandwidth`); read by no Trimaran plugin.
pub const BANDWIDTH: &str = "Bandwidth";
/// Metric type of storage (`watcher.Storage`); read by no Trimaran plugin.
pub const STORAGE: &str = "Storage";
/// Metric type of energy (`watcher.Energy`); read by no Trimaran plugin.
pub const ENERGY: &str = "Energy";
/// Operator of an average over the window (`watcher.Average`).
pub const AVERAGE: &str = "AVG";
/// Operator of a standard deviation over the window (`watcher.Std`).
pub const STD: &str = "STD";
/// Operator of the latest sample (`watcher.Latest`).
pub const LATEST: &str = "Latest";
/// The path the load-watcher service serves its metrics at (`watcher.BaseUrl`).
pub const BASE_URL: &str = "/watcher";

/// Decodes `null` as the type's default, as Go's decoders leave a non-pointer field
/// untouched on `null`.
fn null_default<'de, D: Deserializer<'de>, T: Deserialize<'de> + Default>(d: D) -> Result<T, D::Error> {
    Option::<T>::deserialize(d).map(Option::unwrap_or_default)
}

/// Writes a float as Go's `encoding/json` does for the common cases: integral values
/// without a fraction (`80`, not `80.0`).
#[expect(clippy::trivially_copy_pass_by_ref, reason = "serde's serialize_with signature")]
fn go_float<S: serde::Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    if v.is_finite() && v.fract() == 0.0 && v.abs() < 1e15 { s.serialize_i64(*v as i64) } else { s.serialize_f64(*v) }
}

/// One measurement (load-watcher `Metric`). `value` is a percentage of the node's
/// capacity.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Metric {
    /// Name of the metric at the provider.
    #[serde(default, deserialize_with = "null_default")]
    pub name: String,
    /// [`CPU`], [`MEMORY`], ... (compared case-sensitively, as upstream).
    #[serde(rename = "type", default, deserialize_with = "null_default")]
    pub metric_type: String,
    /// [`AVERAGE`], [`STD`], [`LATEST`] or empty.
    #[serde(default, deserialize_with = "null_default")]
    pub operator: String,
    /// Rollup used at the provider (omitted when empty).
    #[serde(default, deserialize_with = "null_default", skip_serializing_if = "String::is_empty")]
    pub rollup: String,
    /// The value, in percent of capacity.
    #[serde(default, deserialize_with = "null_default", serialize_with = "go_float")]
    pub value: f64,
}

impl Metric {
    /// A metric of `metric_type` with `operator` and `value` (no name, no rollup).
    pub fn new(metric_type: &str, operator: &str, value: f64) -> Metric {
        Metric { metric_type: metric_type.to_owned(), operator: operator.to_owned(), value, ..Metric::default() }
    }
}

/// Node tags (load-watcher `Tags`, an empty object).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tags {}

/// Node metadata (load-watcher `Metadata`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Metadata {
    /// Data centre of the node (omitted when empty).
    #[serde(
        rename = "dataCenter",
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub data_center: String,
}

/// One node's metrics (load-watcher `NodeMetrics`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NodeMetrics {
    /// The measurements (omitted when empty).
    #[serde(default, deserialize_with = "null_default", skip_serializing_if = "Vec::is_empty")]
    pub metrics: Vec<Metric>,
    /// Tags.
    #[serde(default, deserialize_with = "null_default")]
    pub tags: Tags,
    /// Metadata.
    #[serde(default, deserialize_with = "null_default")]
    pub metadata: Metadata,
}

/// The aggregation window (load-watcher `Window`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Window {
    /// `15m`, `10m` or `5m`.
    #[serde(default, deserialize_with = "null_default")]
    pub duration: String,
    /// Start, Unix seconds.
    #[serde(default, deserialize_with = "null_default")]
    pub start: i64,
    /// End, Unix seconds.
    #[serde(default, deserialize_with = "null_default")]
    pub end: i64,
}

/// The payload's data (load-watcher `Data`): the capitalised `NodeMetricsMap` key,
/// `null` when never populated.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Data {
    /// Node name to metrics; `None` (`null`) when the watcher has none yet.
    #[serde(rename = "NodeMetricsMap", default)]
    pub node_metrics_map: Option<BTreeMap<String, NodeMetrics>>,
}

/// A load-watcher payload (`WatcherMetrics`), as `GET <address>/watcher` returns it.
///
/// Serialises like Go's `encoding/json` of the upstream struct (map keys sorted, the
/// `omitempty` fields left out); decodes leniently like load-watcher's own decoder
/// (unknown keys ignored, missing or `null` fields zero).
///
/// ```
/// use schedkit::plugins::trimaran::WatcherMetrics;
/// let m = WatcherMetrics::from_json(br#"{"window":{"end":60},"data":{"NodeMetricsMap":
///     {"n1":{"metrics":[{"type":"CPU","operator":"AVG","value":42}]}}}}"#).unwrap();
/// assert_eq!(m.node("n1").unwrap().metrics[0].value, 42.0);
/// let err = WatcherMetrics::from_json(br#"{"data":{"NodeMetricsMap":{"n1":{"metrics":[{"value":"x"}]}}}}"#);
/// assert!(err.unwrap_err().to_string().contains("data.NodeMetricsMap.n1.metrics[0].value"));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WatcherMetrics {
    /// When the payload was made, Unix seconds.
    #[serde(default, deserialize_with = "null_default")]
    pub timestamp: i64,
    /// The window the values aggregate.
    #[serde(default, deserialize_with = "null_default")]
    pub window: Window,
    /// The metrics provider (e.g. `Prometheus`).
    #[serde(default, deserialize_with = "null_default")]
    pub source: String,
    /// Per-node metrics.
    #[serde(default, deserialize_with = "null_default")]
    pub data: Data,
}

/// A malformed load-watcher payload.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MetricsError {
    /// The JSON does not have the `WatcherMetrics` shape.
    #[error("load-watcher payload: field `{path}`: {message}")]
    Malformed {
        /// Where in the payload (`data.NodeMetricsMap.<node>.metrics[0].value`).
        path: String,
        /// What is wrong there.
        message: String,
    },
}

impl WatcherMetrics {
    /// Decodes a payload; the error names the offending field.
    pub fn from_json(bytes: &[u8]) -> Result<WatcherMetrics, MetricsError> {
        let mut de = serde_json::Deserializer::from_slice(bytes);
        let parsed: Result<WatcherMetrics, _> = serde_path_to_error::deserialize(&mut de);
        let m = parsed.map_err(|e| {
            let path = e.path().to_string();
            MetricsError::Malformed { path, message: e.into_inner().to_string() }
        })?;
        de.end().map_err(|e| MetricsError::Malformed { path: ".".to_owned(), message: e.to_string() })?;
        Ok(m)
    }

    /// A payload with the given nodes (window and timestamp zero).
    pub fn with_nodes<'a>(nodes: impl IntoIterator<Item = (&'a str, Vec<Metric>)>) -> WatcherMetrics {
        let map = nodes
            .into_iter()
            .map(|(n, metrics)| (n.to_owned(), NodeMetrics { metrics, ..NodeMetrics::default() }))
            .collect();
        WatcherMetrics { data: Data { node_metrics_map: Some(map) }, ..WatcherMetrics::default() }
    }

    /// The metrics of `node`, if the payload has the node.
    pub fn node(&self, node: &str) -> Option<&NodeMetrics> {
        self.data.node_metrics_map.as_ref()?.get(node)
    }
}

/// A resource's usage in one node's metrics (upstream `trimaran.GetResourceData`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ResourceData {
    /// Average utilisation, percent.
    pub avg: f64,
    /// Standard deviation, percent.
    pub std: f64,
    /// Whether any metric of the type exists.
    pub valid: bool,
}

impl ResourceData {
    /// Upstream `GetResourceData`: the last `AVG` metric of the type is the average;
    /// before any `AVG`, a `Latest` or operator-less one stands in; `STD` is the
    /// deviation; valid when any metric of the type exists.
    pub fn from_metrics(metrics: &[Metric], metric_type: &str) -> ResourceData {
        let mut d = ResourceData::default();
        let mut avg_found = false;
        for m in metrics.iter().filter(|m| m.metric_type == metric_type) {
            if m.operator == AVERAGE {
                d.avg = m.value;
                avg_found = true;
            } else if m.operator == STD {
                d.std = m.value;
            } else if (m.operator.is_empty() || m.operator == LATEST) && !avg_found {
                d.avg = m.value;
            }
            d.valid = true;
        }
        d
    }
}

/// What the Trimaran plugins read of one node's metrics, extracted once per payload.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct NodeLoad {
    /// The node's metric list is non-empty (upstream scores 0 for an empty one).
    pub has_metrics: bool,
    /// CPU usage ([`ResourceData::from_metrics`]).
    pub cpu: ResourceData,
    /// Memory usage.
    pub memory: ResourceData,
    /// TargetLoadPacking's CPU utilisation: the last CPU metric whose operator is
    /// `AVG` or `Latest`.
    pub cpu_utilization: Option<f64>,
}

impl NodeLoad {
    /// Extracts the figures from one node's metrics.
    pub fn from_metrics(metrics: &[Metric]) -> NodeLoad {
        let cpu_utilization = metrics
            .iter()
            .rev()
            .find(|m| m.metric_type == CPU && (m.operator == AVERAGE || m.operator == LATEST))
            .map(|m| m.value);
        NodeLoad {
            has_metrics: !metrics.is_empty(),
            cpu: ResourceData::from_metrics(metrics, CPU),
            memory: ResourceData::from_metrics(metrics, MEMORY),
            cpu_utilization,
        }
    }
}

/// One payload, ready for scoring: the raw [`WatcherMetrics`] and a per-node index by
/// interned node name so Score neither hashes strings nor allocates.
#[derive(Debug, Clone, Default)]
pub struct LoadSnapshot {
    metrics: WatcherMetrics,
    /// Each entry holds its node's name: node names are freed when the node goes, and
    /// a bare symbol kept past that could name a node that joined later in a reused
    /// slot. (Held here, the figures of a removed node can't be read for another.)
    by_symbol: AHashMap<Symbol, (HeldSymbol, NodeLoad)>,
}

impl LoadSnapshot {
    /// Indexes a payload.
    pub fn new(metrics: WatcherMetrics) -> LoadSnapshot {
        let mut by_symbol = AHashMap::new();
        if let Some(map) = &metrics.data.node_metrics_map {
            by_symbol.reserve(map.len());
            for (name, nm) in map {
                // Only names already interned (every node the scheduler knows is): a
                // payload full of strangers must not grow the interner.
                if Symbol::lookup(name).is_some() {
                    let held = HeldSymbol::new(name);
                    by_symbol.insert(held.symbol(), (held, NodeLoad::from_metrics(&nm.metrics)));
                }
            }
        }
        LoadSnapshot { metrics, by_symbol }
    }

    /// The payload.
    pub fn metrics(&self) -> &WatcherMetrics {
        &self.metrics
    }

    /// Whether `NodeMetricsMap` was populated (upstream: "metrics not available from
    /// watcher" when it is nil).
    pub fn is_populated(&self) -> bool {
        self.metrics.data.node_metrics_map.is_some()
    }

    /// The end of the payload's window, Unix seconds.
    pub fn window_end(&self) -> i64 {
        self.metrics.window.end
    }

    /// The node's figures, `None` when the payload lacks the node (or lacks every node).
    #[inline]
    pub fn node(&self, node: Symbol) -> Option<NodeLoad> {
        if let Some((_, l)) = self.by_symbol.get(&node) {
            return Some(*l);
        }
        // A node interned after this payload was indexed.
        if self.by_symbol.len() == self.metrics.data.node_metrics_map.as_ref().map_or(0, BTreeMap::len) {
            return None;
        }
        // The text without pinning it (the payload lookup interns nothing).
        node.with_str(|name| self.metrics.node(name).map(|nm| NodeLoad::from_metrics(&nm.metrics)))
    }
}

impl From<WatcherMetrics> for LoadSnapshot {
    fn from(m: WatcherMetrics) -> Self {
        LoadSnapshot::new(m)
    }
}

/// Where the Trimaran plugins get node load from (upstream `trimaran.Collector`).
///
/// Implementations must answer at once (a scheduling cycle calls this once per
/// plugin and cycle): fetching belongs on a background thread, as in
/// `LoadWatcherClient` (feature `load-watcher`).
pub trait LoadMetricsSource: Send + Sync + 'static {
    /// The last good payload; `None` until one was ever had (every node then scores 0).
    fn latest(&self) -> Option<Arc<LoadSnapshot>>;
}

/// A [`LoadMetricsSource`] shared on the [`crate::framework::Handle`]
/// (`handle.set_shared(Arc::new(SharedLoadMetrics(...)))`): the Trimaran plugins read
/// it when their args name no `watcherAddress`.
#[derive(Clone)]
pub struct SharedLoadMetrics(pub Arc<dyn LoadMetricsSource>);

impl std::fmt::Debug for SharedLoadMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedLoadMetrics").finish_non_exhaustive()
    }
}

/// Metrics held in memory, set by the caller (a simulator, a test, an adapter for
/// another metrics system). Clones share the same metrics.
///
/// ```
/// use std::sync::Arc;
/// use schedkit::plugins::trimaran::{InMemoryLoadMetrics, LoadMetricsSource, Metric, WatcherMetrics, CPU, AVERAGE};
/// let src = InMemoryLoadMetrics::new();
/// assert!(src.latest().is_none());
/// src.set(WatcherMetrics::with_nodes([("n1", vec![Metric::new(CPU, AVERAGE, 30.0)])]));
/// assert!(src.latest().unwrap().metrics().node("n1").is_some());
/// ```
#[derive(Debug, Clone, Default)]
pub struct InMemoryLoadMetrics {
    current: Arc<RwLock<Option<Arc<LoadSnapshot>>>>,
}

impl InMemoryLoadMetrics {
    /// No metrics yet.
    pub fn new() -> InMemoryLoadMetrics {
        InMemoryLoadMetrics::default()
    }

    /// Replaces the whole payload.
    pub fn set(&self, metrics: WatcherMetrics) {
        let snap = Arc::new(LoadSnapshot::new(metrics));
        *self.current.write() = Some(snap);
    }

    /// Replaces one node's metrics, keeping the rest of the payload (a populated but
    /// empty payload if there was none).
    pub fn set_node(&self, node: &str, metrics: Vec<Metric>) {
        let mut g = self.current.write();
        let mut m = g.as_ref().map(|s| s.metrics().clone()).unwrap_or_default();
        m.data
            .node_metrics_map
            .get_or_insert_with(BTreeMap::new)
            .insert(node.to_owned(), NodeMetrics { metrics, ..NodeMetrics::default() });
        *g = Some(Arc::new(LoadSnapshot::new(m)));
    }

    /// Sets the payload's window (Unix seconds); TargetLoadPacking counts pods bound
    /// after `end - 60 s` as not yet in the metrics.
    pub fn set_window(&self, start: i64, end: i64) {
        let mut g = self.current.write();
        let mut m = g.as_ref().map(|s| s.metrics().clone()).unwrap_or_default();
        m.window.start = start;
        m.window.end = end;
        *g = Some(Arc::new(LoadSnapshot::new(m)));
    }

    /// Forgets every metric (as before the first payload).
    pub fn clear(&self) {
        *self.current.write() = None;
    }
}

impl LoadMetricsSource for InMemoryLoadMetrics {
    fn latest(&self) -> Option<Arc<LoadSnapshot>> {
        self.current.read().clone()
    }
}

#[cfg(test)]
#[allow(clippy::float_cmp, reason = "upstream's test tables compare exact values")]
mod tests {
    use super::*;

    // The values of upstream collector_test.go's `watcherResponse`.
    fn upstream_response() -> WatcherMetrics {
        WatcherMetrics::with_nodes([(
            "node-1",
            vec![
                Metric::new(CPU, AVERAGE, 80.0),
                Metric::new(CPU, STD, 16.0),
                Metric::new(MEMORY, AVERAGE, 25.0),
                Metric::new(MEMORY, STD, 6.25),
            ],
        )])
    }

    #[test]
    fn serialises_like_go_encoding_json() {
        let json = serde_json::to_string(&upstream_response()).unwrap();
        assert_eq!(
            json,
            concat!(
                r#"{"timestamp":0,"window":{"duration":"","start":0,"end":0},"source":"","data":{"NodeMetricsMap":"#,
                r#"{"node-1":{"metrics":[{"name":"","type":"CPU","operator":"AVG","value":80},"#,
                r#"{"name":"","type":"CPU","operator":"STD","value":16},"#,
                r#"{"name":"","type":"Memory","operator":"AVG","value":25},"#,
                r#"{"name":"","type":"Memory","operator":"STD","value":6.25}],"tags":{},"metadata":{}}}}}"#
            )
        );
        // An empty WatcherMetrics{} (upstream's "404 resp" case) has a null map.
        let empty = serde_json::to_string(&WatcherMetrics::default()).unwrap();
        assert!(empty.ends_with(r#""data":{"NodeMetricsMap":null}}"#), "{empty}");
        assert_eq!(WatcherMetrics::from_json(empty.as_bytes()).unwrap(), WatcherMetrics::default());
    }

    #[test]
    fn round_trips_and_ignores_unknown_keys() {
        let m = upstream_response();
        let back = WatcherMetrics::from_json(serde_json::to_string(&m).unwrap().as_bytes()).unwrap();
        assert_eq!(back, m);
        let lenient = WatcherMetrics::from_json(
            br#"{"extra":1,"window":null,"data":{"NodeMetricsMap":{"a":{"metrics":null,"tags":{"x":1},
                "metadata":{"dataCenter":"dc","pool":"p"}}}}}"#,
        )
        .unwrap();
        assert_eq!(lenient.node("a").unwrap().metadata.data_center, "dc");
        assert!(lenient.node("a").unwrap().metrics.is_empty());
    }

    #[test]
    fn malformed_payloads_name_the_field() {
        let cases: &[(&[u8], &str)] = &[
            (br#"{"timestamp":"now"}"#, "timestamp"),
            (br#"{"window":{"end":1.5}}"#, "window.end"),
            (br#"{"data":{"NodeMetricsMap":[]}}"#, "data.NodeMetricsMap"),
            (br#"{"data":{"NodeMetricsMap":{"n":{"metrics":[{"type":3}]}}}}"#, "data.NodeMetricsMap.n.metrics[0].type"),
            (br#"{"data":"#, "data"),
        ];
        for (json, field) in cases {
            let e = WatcherMetrics::from_json(json).unwrap_err();
            let MetricsError::Malformed { path, .. } = &e;
            assert_eq!(path, field, "{e}");
        }
        let trailing = WatcherMetrics::from_json(b"{} x").unwrap_err();
        assert!(trailing.to_string().contains("trailing"), "{trailing}");
    }

    // Upstream resourcestats_test.go TestCreateResourceStats's metric list, through
    // GetResourceData: the AVG wins over the earlier operator-less metric.
    #[test]
    fn resource_data_as_upstream() {
        let metrics = vec![
            Metric { name: "no_name".into(), ..Metric::new(CPU, "", 40.0) },
            Metric::new(CPU, AVERAGE, 40.0),
            Metric::new(CPU, STD, 36.0),
            Metric::new(MEMORY, AVERAGE, 20.0),
            Metric::new(MEMORY, STD, 10.0),
        ];
        assert_eq!(ResourceData::from_metrics(&metrics, CPU), ResourceData { avg: 40.0, std: 36.0, valid: true });
        assert_eq!(ResourceData::from_metrics(&metrics, MEMORY), ResourceData { avg: 20.0, std: 10.0, valid: true });
        assert!(!ResourceData::from_metrics(&metrics[3..], CPU).valid);
        // An AVG seen first is not overwritten by a later Latest; a later AVG is.
        let order = [Metric::new(CPU, AVERAGE, 10.0), Metric::new(CPU, LATEST, 20.0), Metric::new(CPU, AVERAGE, 30.0)];
        assert_eq!(ResourceData::from_metrics(&order[..2], CPU).avg, 10.0);
        assert_eq!(ResourceData::from_metrics(&order, CPU).avg, 30.0);
        assert_eq!(NodeLoad::from_metrics(&order[..2]).cpu_utilization, Some(20.0));
    }

    #[test]
    fn snapshot_finds_nodes_interned_later() {
        let name = "trimaran-metrics-test-node-interned-later";
        let snap = LoadSnapshot::new(WatcherMetrics::with_nodes([(name, vec![Metric::new(CPU, AVERAGE, 5.0)])]));
        let sym = Symbol::intern(name);
        assert_eq!(snap.node(sym).unwrap().cpu.avg, 5.0);
        assert!(snap.node(Symbol::intern("trimaran-metrics-test-absent")).is_none());
    }

    #[test]
    fn in_memory_source_updates() {
        let src = InMemoryLoadMetrics::new();
        src.set_node("n1", vec![Metric::new(CPU, LATEST, 7.0)]);
        src.set_window(0, 120);
        let s = src.latest().unwrap();
        assert_eq!(s.window_end(), 120);
        assert_eq!(s.node(Symbol::intern("n1")).unwrap().cpu_utilization, Some(7.0));
        src.clear();
        assert!(src.latest().is_none());
    }
}
