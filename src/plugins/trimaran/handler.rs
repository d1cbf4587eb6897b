//! The recently bound pods per node (upstream `pkg/trimaran/handler.go`,
//! `PodAssignEventHandler` and its `ScheduledPodsCache`): pods whose load the
//! metrics may not show yet.

use std::time::Duration;

use ahash::AHashMap;
use parking_lot::{Mutex, RwLock};
use std::sync::Arc;

use crate::model::{HeldSymbol, Symbol};

/// How often old entries are dropped (upstream `cacheCleanupIntervalMinutes`, 5 min).
pub const CACHE_CLEANUP_INTERVAL: Duration = Duration::from_secs(5 * 60);
/// How long a metrics agent takes to report a pod's load (upstream
/// `metricsAgentReportingIntervalSeconds`, 60 s).
pub const METRICS_AGENT_REPORTING_INTERVAL: Duration = Duration::from_secs(60);

/// A pod bound to a node, with when it was seen bound (upstream `podInfo`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduledPod {
    /// When the binding was seen, since the Unix epoch (see [`ScheduledPods`]).
    pub timestamp: Duration,
    /// The pod's uid.
    pub uid: Arc<str>,
    /// The pod's predicted CPU use in millicores, as the owning plugin predicts it
    /// (TargetLoadPacking: the containers' predicted use plus the cpu overhead).
    pub predicted_milli_cpu: i64,
}

/// The scheduled-pods cache: node to the pods seen bound there, oldest first.
///
/// Fed by the owning plugin's PostBind (the scheduler's own bindings, which upstream
/// learns from its pod informer) and by pod events the caller feeds the scheduler
/// (a pod added or updated onto a node, a pod deleted). Times are the handle's clock
/// placed on the Unix epoch ([`crate::framework::Clock::unix_epoch_nanos`]; a virtual
/// clock's zero counts as the epoch), so replays compare them with the payload's
/// window in their own time.
///
/// Beyond upstream: a pod already listed on the node is not listed again (upstream's
/// informer reports a binding once; here both PostBind and the caller's confirmation
/// would). A node is listed while it has pods here, holding its name (not pinning
/// it): a node whose last pod goes is dropped (upstream keeps its empty list), and
/// [`ScheduledPods::remove_node`] drops a node that left the cluster.
#[derive(Debug, Default)]
pub struct ScheduledPods {
    pods: RwLock<AHashMap<HeldSymbol, Vec<ScheduledPod>>>,
    last_cleanup: Mutex<Option<Duration>>,
}

impl ScheduledPods {
    /// An empty cache.
    pub fn new() -> ScheduledPods {
        ScheduledPods::default()
    }

    /// Records a pod bound to `node` at `now` (upstream `updateCache`); drops old
    /// entries first when the last clean-up is [`CACHE_CLEANUP_INTERVAL`] ago (upstream
    /// runs that on a ticker).
    pub fn record(&self, node: &str, uid: Arc<str>, predicted_milli_cpu: i64, now: Duration) {
        if node.is_empty() {
            return;
        }
        {
            let mut last = self.last_cleanup.lock();
            match *last {
                None => *last = Some(now),
                Some(t) if now.saturating_sub(t) >= CACHE_CLEANUP_INTERVAL => {
                    *last = Some(now);
                    drop(last);
                    self.cleanup(now);
                }
                Some(_) => {}
            }
        }
        let mut g = self.pods.write();
        let pod = ScheduledPod { timestamp: now, uid, predicted_milli_cpu };
        match Symbol::lookup(node).and_then(|s| g.get_mut(&s)) {
            Some(list) => {
                if !list.iter().any(|p| p.uid == pod.uid) {
                    list.push(pod);
                }
            }
            None => {
                g.insert(HeldSymbol::new(node), vec![pod]);
            }
        }
    }

    /// Forgets a deleted pod (upstream `OnDelete`).
    pub fn remove(&self, node: &str, uid: &str) {
        let Some(sym) = Symbol::lookup(node) else { return };
        let mut g = self.pods.write();
        if let Some(list) = g.get_mut(&sym)
            && let Some(i) = list.iter().position(|p| &*p.uid == uid)
        {
            list.remove(i);
            if list.is_empty() {
                g.remove(&sym);
            }
        }
    }

    /// Forgets a node that left the cluster, with the pods listed on it (the owning
    /// plugin calls it as a [`NodeObserver`](crate::framework::NodeObserver)).
    pub fn remove_node(&self, node: &str) {
        if let Some(sym) = Symbol::lookup(node) {
            self.pods.write().remove(&sym);
        }
    }

    /// Upstream `cleanupCache`: per node, drops the entries older than
    /// [`METRICS_AGENT_REPORTING_INTERVAL`] before the first recent one, and the node
    /// when nothing is left. As upstream, a node whose entries are *all* old keeps
    /// them (its binary search finds no recent entry and skips the node); they no
    /// longer count once the metrics window has passed them.
    pub fn cleanup(&self, now: Duration) {
        let mut g = self.pods.write();
        g.retain(|_, list| {
            let idx = list.partition_point(|p| p.timestamp + METRICS_AGENT_REPORTING_INTERVAL <= now);
            if idx == list.len() {
                return true;
            }
            list.drain(..idx);
            !list.is_empty()
        });
    }

    /// The pods listed on `node`, oldest first (a copy, for inspection).
    pub fn pods_on(&self, node: &str) -> Vec<ScheduledPod> {
        Symbol::lookup(node).and_then(|s| self.pods.read().get(&s).cloned()).unwrap_or_default()
    }

    /// TargetLoadPacking's missing utilisation: the predicted millicores of the pods
    /// on `node` bound after `window_end` (Unix seconds) or less than
    /// [`METRICS_AGENT_REPORTING_INTERVAL`] before it, comparing whole seconds as
    /// upstream does (`Timestamp.Unix()`).
    #[inline]
    pub fn missing_milli_cpu(&self, node: Symbol, window_end: i64) -> i64 {
        Self::missing_in(&self.pods.read(), node, window_end)
    }

    fn missing_in(pods: &AHashMap<HeldSymbol, Vec<ScheduledPod>>, node: Symbol, window_end: i64) -> i64 {
        let Some(list) = pods.get(&node) else { return 0 };
        let reporting = METRICS_AGENT_REPORTING_INTERVAL.as_secs() as i64;
        list.iter()
            .filter(|p| {
                let ts = p.timestamp.as_secs() as i64;
                ts > window_end || window_end.saturating_sub(ts) < reporting
            })
            .fold(0_i64, |sum, p| sum.saturating_add(p.predicted_milli_cpu))
    }

    /// [`Self::missing_milli_cpu`] for every node with listed pods, in one pass (what a
    /// cycle's PreScore pins so Score takes no lock); `None` when nothing is listed.
    pub fn missing_by_node(&self, window_end: i64) -> Option<AHashMap<Symbol, i64>> {
        let g = self.pods.read();
        if g.values().all(Vec::is_empty) {
            return None;
        }
        let mut out = AHashMap::with_capacity(g.len());
        for node in g.keys().map(HeldSymbol::symbol) {
            let m = Self::missing_in(&g, node, window_end);
            if m != 0 {
                out.insert(node, m);
            }
        }
        Some(out)
    }

    /// Whether any pod is listed.
    pub fn is_empty(&self) -> bool {
        self.pods.read().values().all(Vec::is_empty)
    }
}

/// Now on `clock`, since the Unix epoch (a clock without an epoch counts from 0).
pub(crate) fn unix_now(clock: &dyn crate::framework::Clock) -> Duration {
    let now = clock.now();
    match clock.unix_epoch_nanos() {
        Some(epoch) if epoch > 0 => now + Duration::from_nanos(u64::try_from(epoch).unwrap_or(0)),
        _ => now,
    }
}

#[cfg(test)]
#[allow(clippy::float_cmp, reason = "upstream's test tables compare exact values")]
mod tests {
    use super::*;

    // Upstream handler_test.go TestUpdateCache. Upstream's entries without a
    // timestamp are Go's zero time (year 1): long before any `now`.
    #[test]
    fn update_cache_table() {
        struct Case {
            name: &'static str,
            pods: Vec<(&'static str, Duration)>,
            update: Option<&'static str>,
            want: Vec<&'static str>,
        }
        let now = Duration::from_secs(1_700_000_000);
        let zero = Duration::ZERO;
        let node = "trimaran-handler-test-node";
        let cases = [
            Case {
                name: "OnUpdate doesn't add unassigned pods",
                pods: vec![("Pod-1", zero), ("Pod-2", zero), ("Pod-3", zero)],
                update: Some("Pod-4"),
                want: vec!["Pod-4"],
            },
            Case {
                name: "cleanupCache doesn't delete newly added pods",
                pods: vec![("Pod-1", zero), ("Pod-2", zero), ("Pod-3", zero), ("Pod-4", now)],
                update: Some("Pod-5"),
                want: vec!["Pod-4", "Pod-5"],
            },
            Case {
                name: "cleanupCache deletes old pods",
                pods: vec![
                    ("Pod-1", now.saturating_sub(Duration::from_secs(5 * 60))),
                    ("Pod-2", now.saturating_sub(Duration::from_secs(10))),
                    ("Pod-3", now.saturating_sub(Duration::from_secs(5))),
                ],
                update: None,
                want: vec!["Pod-2", "Pod-3"],
            },
        ];
        for c in cases {
            let cache = ScheduledPods::new();
            *cache.last_cleanup.lock() = Some(now);
            {
                let mut g = cache.pods.write();
                let list = g.entry(HeldSymbol::new(node)).or_default();
                for (uid, ts) in &c.pods {
                    list.push(ScheduledPod { timestamp: *ts, uid: (*uid).into(), predicted_milli_cpu: 0 });
                }
            }
            if let Some(uid) = c.update {
                cache.record(node, uid.into(), 0, now);
            }
            cache.cleanup(now);
            let got: Vec<String> = cache.pods_on(node).iter().map(|p| p.uid.to_string()).collect();
            assert_eq!(got, c.want, "{}", c.name);
        }
    }

    #[test]
    fn all_old_entries_stay_as_upstream() {
        let cache = ScheduledPods::new();
        cache.record("trimaran-handler-old", "a".into(), 1, Duration::from_secs(100));
        cache.cleanup(Duration::from_secs(10_000));
        assert_eq!(cache.pods_on("trimaran-handler-old").len(), 1);
    }

    #[test]
    fn record_dedupes_removes_and_cleans_periodically() {
        let cache = ScheduledPods::new();
        let n = "trimaran-handler-periodic";
        cache.record(n, "a".into(), 100, Duration::from_secs(1000));
        cache.record(n, "a".into(), 100, Duration::from_secs(1001));
        cache.record(n, "b".into(), 200, Duration::from_secs(1100));
        assert_eq!(cache.pods_on(n).len(), 2);
        // Window end 1050: "a" (1000) is 50 s before it, "b" after it: both missing.
        let sym = Symbol::intern(n);
        assert_eq!(cache.missing_milli_cpu(sym, 1050), 300);
        // Window end 1060: "a" is exactly 60 s before: reported.
        assert_eq!(cache.missing_milli_cpu(sym, 1060), 200);
        cache.remove(n, "b");
        assert_eq!(cache.missing_milli_cpu(sym, 0), 100);
        // Five minutes after the first record, the next record cleans up first; "a"
        // is then old and "c" new.
        cache.record(n, "c".into(), 1, Duration::from_secs(1000 + 300));
        let left: Vec<String> = cache.pods_on(n).iter().map(|p| p.uid.to_string()).collect();
        assert_eq!(left, ["a", "c"], "all-old lists stay until a recent entry exists");
        cache.cleanup(Duration::from_secs(1340));
        let left: Vec<String> = cache.pods_on(n).iter().map(|p| p.uid.to_string()).collect();
        assert_eq!(left, ["c"]);
        cache.record("", "e".into(), 1, Duration::ZERO);
        assert!(!cache.is_empty());
    }

    #[test]
    fn nodes_are_held_while_listed_and_dropped_with_their_last_pod() {
        let cache = ScheduledPods::new();
        let (a, b) = ("trimaran-handler-held-a", "trimaran-handler-held-b");
        cache.record(a, "p1".into(), 10, Duration::from_secs(5));
        cache.record(a, "p2".into(), 20, Duration::from_secs(6));
        cache.record(b, "p3".into(), 30, Duration::from_secs(7));
        let sym = Symbol::lookup(a).expect("the cache holds a's name");
        assert_eq!(cache.missing_milli_cpu(sym, 0), 30);
        cache.remove(a, "p1");
        cache.remove(a, "p2");
        assert_eq!(Symbol::lookup(a), None, "a's last pod went: its entry and name with it");
        assert!(cache.pods_on(a).is_empty());
        cache.remove_node(b);
        assert_eq!(Symbol::lookup(b), None, "a removed node's entry goes with its pods");
        assert!(cache.is_empty() && cache.missing_by_node(0).is_none());
        cache.remove_node("trimaran-handler-never");
    }
}
