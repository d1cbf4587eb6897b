//! CapacityScheduling elastic-quota scenarios (scheduler-plugins
//! `pkg/capacityscheduling`): borrow when idle, never exceed max, reclaim on demand
//! through preemption, and the guaranteed min honoured after reclaim.

use std::sync::Arc;

use schedkit::framework::{Handle, Profile, RecordingEvictor};
use schedkit::plugins::capacity_scheduling::{CapacityScheduling, ElasticQuota, QuotaError};
use schedkit::plugins::node_resources::Fit;
use schedkit::scheduler::{ScheduleError, Scheduler, TieBreak};
use schedkit::testing::{NodeBuilder, PodBuilder};

struct Env {
    sched: Scheduler,
    plugin: Arc<CapacityScheduling>,
    evictor: Arc<RecordingEvictor>,
    seq: usize,
}

/// Two 4-CPU nodes; quotas `(namespace, min cpu, max cpu)`.
fn env(quotas: &[(&str, &str, &str)]) -> Env {
    let handle = Handle::default();
    let evictor = Arc::new(RecordingEvictor::default());
    handle.preemption().set_evictor(evictor.clone());
    let qs: Vec<ElasticQuota> =
        quotas.iter().map(|&(ns, min, max)| ElasticQuota::new(ns, &[("cpu", min)], &[("cpu", max)]).unwrap()).collect();
    let plugin = Arc::new(CapacityScheduling::new(&qs, handle.clone()).unwrap());
    let profile = Profile::builder("default-scheduler")
        .plugin(Fit::from_config(None).unwrap())
        .plugin_arc(plugin.clone(), 1)
        .build()
        .unwrap();
    let sched = Scheduler::builder().profile(profile).handle(handle).parallelism(1).tie_break(TieBreak::First).build();
    for n in ["node1", "node2"] {
        sched.add_node(NodeBuilder::new(n).cpu("4").build()).unwrap();
    }
    Env { sched, plugin, evictor, seq: 0 }
}

impl Env {
    /// Schedules and binds a pod; returns the error if it fits nowhere.
    fn submit(&mut self, ns: &str, cpu: &str, prio: i32) -> Result<String, ScheduleError> {
        self.seq += 1;
        self.resubmit(ns, cpu, prio)
    }

    /// Submits the last pod again (same name: a retry after preemption).
    fn resubmit(&mut self, ns: &str, cpu: &str, prio: i32) -> Result<String, ScheduleError> {
        let pod = PodBuilder::new(&format!("{ns}-{}", self.seq))
            .namespace(ns)
            .cpu(cpu)
            .priority(prio)
            .with(|p| p.status.start_time = Some(self.seq as f64))
            .build();
        let b = self.sched.schedule_pod(pod)?;
        let node = b.node().to_owned();
        b.run().unwrap();
        Ok(node)
    }

    /// Evicts what the evictor got (from the cache and the quota usage, as the caller's informers would).
    fn evict_recorded(&mut self) -> usize {
        let victims = self.evictor.take();
        for (_, uid) in &victims {
            let p = self.sched.cache().lock().remove_pod(uid).unwrap();
            self.plugin.remove_pod(&p);
        }
        victims.len()
    }

    fn used_cpu(&self, ns: &str) -> i64 {
        let q = self.plugin.quotas();
        q.get(schedkit::model::Symbol::intern(ns)).unwrap().used.milli_cpu
    }
}

#[test]
fn borrow_when_idle_but_never_beyond_max() {
    let mut e = env(&[("team-a", "2", "6"), ("team-b", "6", "8")]);
    // team-b is idle: team-a borrows up to its max of 6.
    for _ in 0..6 {
        e.submit("team-a", "1", 0).unwrap();
    }
    assert_eq!(e.used_cpu("team-a"), 6000);
    // The cluster still has 2 CPUs free, but team-a is at max.
    let err = e.submit("team-a", "1", 0).unwrap_err();
    assert!(err.to_string().contains("ElasticQuota team-a is more than Max"), "{err}");
    assert!(err.fit_error().unwrap().nominated_node.is_none());
    // A higher-priority pod of team-a can't exceed max either: preemption within the
    // quota frees lower-priority pods only to the extent max allows.
    let err = e.submit("team-a", "1", 10).unwrap_err();
    assert!(err.fit_error().is_some(), "{err}");
    assert_eq!(e.used_cpu("team-a"), 6000);
    // Pods outside any quota are not limited by quotas.
    e.submit("free", "1", 0).unwrap();
}

#[test]
fn reclaim_on_demand_and_min_is_honoured() {
    let mut e = env(&[("team-a", "2", "8"), ("team-b", "6", "8")]);
    for _ in 0..8 {
        e.submit("team-a", "1", 0).unwrap();
    }
    assert_eq!(e.used_cpu("team-a"), 8000, "team-a borrowed the whole idle cluster");

    // team-b claims its guaranteed share, 2 CPUs at a time, at the lowest priority:
    // each request reclaims borrowed CPUs from team-a.
    let mut preemptions = 0;
    for _ in 0..3 {
        let err = e.submit("team-b", "2", 0).unwrap_err();
        let fit = err.fit_error().unwrap_or_else(|| panic!("{err}"));
        assert!(fit.nominated_node.is_some(), "reclaim must nominate: {err}");
        let evicted = e.evict_recorded();
        assert_eq!(evicted, 2, "exactly enough victims");
        preemptions += 1;
        assert!(e.used_cpu("team-a") >= 2000, "team-a is never reclaimed below its min");
        e.resubmit("team-b", "2", 0).unwrap();
    }
    assert_eq!(preemptions, 3);
    assert_eq!(e.used_cpu("team-b"), 6000);
    assert_eq!(e.used_cpu("team-a"), 2000);

    // team-b at its min can't reclaim more: beyond min it may only preempt its own
    // lower-priority pods (none at equal priority), and team-a at its min is off limits.
    let err = e.submit("team-b", "1", 0).unwrap_err();
    assert!(err.fit_error().is_some_and(|f| f.nominated_node.is_none()), "{err}");
    assert!(e.evictor.take().is_empty());
    // A higher-priority team-b pod preempts team-b's own lower-priority pods only.
    let err = e.submit("team-b", "1", 100).unwrap_err();
    assert!(err.fit_error().is_some_and(|f| f.nominated_node.is_some()), "{err}");
    let victims = e.evictor.take();
    assert!(!victims.is_empty() && victims.iter().all(|(_, uid)| uid.starts_with("team-b/")), "{victims:?}");
    // team-a at its min can't take anything back at equal priority.
    let err = e.submit("team-a", "1", 0).unwrap_err();
    assert!(err.fit_error().is_some_and(|f| f.nominated_node.is_none()), "{err}");
    assert_eq!(e.used_cpu("team-a"), 2000);
}

#[test]
fn within_own_quota_only_lower_priority_pods_are_preempted() {
    let mut e = env(&[("team-a", "8", "8")]);
    for _ in 0..8 {
        e.submit("team-a", "1", 0).unwrap();
    }
    // Cluster full with team-a's own low-priority pods; team-a is at min, so a new
    // high-priority pod preempts its own quota's lower-priority pods.
    let err = e.submit("team-a", "1", 10).unwrap_err();
    assert!(err.fit_error().and_then(|f| f.nominated_node.as_deref()).is_some(), "{err}");
    assert_eq!(e.evict_recorded(), 1);
    e.resubmit("team-a", "1", 10).unwrap();
}

#[test]
fn pods_without_quota_never_preempt_quota_pods() {
    let mut e = env(&[("team-a", "8", "8")]);
    for _ in 0..8 {
        e.submit("team-a", "1", 0).unwrap();
    }
    let err = e.submit("free", "1", 1000).unwrap_err();
    assert!(err.fit_error().is_some_and(|f| f.nominated_node.is_none()), "{err}");
    assert!(e.evictor.take().is_empty());
}

#[test]
fn unreserve_returns_usage() {
    let mut e = env(&[("team-a", "2", "4")]);
    e.seq += 1;
    let b = e.sched.schedule_pod(PodBuilder::new("x").namespace("team-a").cpu("1").build()).unwrap();
    assert_eq!(e.used_cpu("team-a"), 1000);
    let _ = b.abort("test");
    assert_eq!(e.used_cpu("team-a"), 0);
}

#[test]
fn bad_quotas_are_typed_errors() {
    let h = Handle::default();
    let over = ElasticQuota::new("a", &[("cpu", "4")], &[("cpu", "2")]).unwrap();
    assert!(matches!(CapacityScheduling::new(&[over], h.clone()), Err(QuotaError::MinOverMax { .. })));
    let neg = ElasticQuota::new("a", &[], &[("nvidia.com/gpu", "-2")]).unwrap();
    let err = CapacityScheduling::new(&[neg], h.clone()).unwrap_err();
    assert!(err.to_string().contains("must not be negative"), "{err}");
    let cfg: schedkit::framework::ProfileConfig = serde_json::from_str(
        r#"{"plugins":{"multiPoint":{"enabled":[{"name":"CapacityScheduling"}]}},
            "pluginConfig":[{"name":"CapacityScheduling","args":{"elasticQuotas":[
              {"metadata":{"namespace":"a"},"spec":{"min":{"cpu":"3"},"max":{"cpu":"1"}}}]}}]}"#,
    )
    .unwrap();
    let err = schedkit::plugins::default_registry().build_profile(&cfg, &h).unwrap_err();
    assert!(err.to_string().contains("greater than max"), "{err}");
}

/// Upstream `EventsToRegister`: pod deletions and quota changes requeue rejected pods.
#[test]
fn registers_quota_events() {
    use schedkit::framework::{ActionType, EventResource};
    let p = Profile::builder("x").plugin(CapacityScheduling::new(&[], Handle::default()).unwrap()).build().unwrap();
    let events: Vec<_> = p.enqueue_extensions().iter().flat_map(|e| e.plugin.events_to_register()).collect();
    assert!(
        events.iter().any(|e| e.event.resource == EventResource::ElasticQuota && e.event.action == ActionType::ALL)
    );
    assert!(
        events.iter().any(|e| e.event.resource == EventResource::AssignedPod && e.event.action == ActionType::DELETE)
    );
}

mod upstream_tables {
    use std::sync::Arc;

    use schedkit::framework::preemption::{PreemptionContext, filter_statuses, find_candidates, pre_filter_state};
    use schedkit::framework::{Code, Handle, Profile};
    use schedkit::model::Pod;
    use schedkit::plugins::capacity_scheduling::{CapacityScheduling, ElasticQuota};
    use schedkit::plugins::node_resources::Fit;
    use schedkit::snapshot::{Cache, PodInfo, Snapshot};
    use schedkit::testing::{NodeBuilder, PodBuilder};

    const MID: i32 = 100;
    const HIGH: i32 = 1000;

    fn mem_pod(name: &str, ns: &str, mem: &str, prio: i32, node: &str, start: f64) -> Pod {
        let mut b = PodBuilder::new(name).namespace(ns).memory(mem).priority(prio);
        if !node.is_empty() {
            b = b.node_name(node);
        }
        b.with(|p| p.status.start_time = Some(start)).build()
    }

    struct Setup {
        profile: Arc<Profile>,
        handle: Handle,
        snap: Snapshot,
    }

    /// Node `node-a` with 150 bytes of memory (upstream's `res`), the pods bound to it,
    /// and quotas `(ns, min, max)` in bytes of memory; usage synced from the pods.
    fn setup(pods: Vec<Pod>, quotas: &[(&str, &str, &str)]) -> Setup {
        let handle = Handle::default();
        let qs: Vec<ElasticQuota> = quotas
            .iter()
            .map(|&(ns, min, max)| ElasticQuota::new(ns, &[("memory", min)], &[("memory", max)]).unwrap())
            .collect();
        let plugin = Arc::new(CapacityScheduling::new(&qs, handle.clone()).unwrap());
        let mut c = Cache::new();
        c.add_node(NodeBuilder::new("node-a").memory("150").build()).unwrap();
        for p in pods {
            c.add_pod(Arc::new(PodInfo::new(p).unwrap())).unwrap();
        }
        let mut snap = Snapshot::default();
        c.update_snapshot(&mut snap);
        plugin.sync_usage(&snap);
        let profile = Arc::new(
            Profile::builder("default-scheduler")
                .plugin(Fit::from_config(None).unwrap())
                .plugin_arc(plugin, 1)
                .build()
                .unwrap(),
        );
        Setup { profile, handle, snap }
    }

    fn victims(s: &Setup, preemptor: Pod) -> Vec<(String, Vec<String>)> {
        let pod = PodInfo::new(preemptor).unwrap();
        let (state, st) = pre_filter_state(&s.profile, &pod, &s.snap);
        assert!(st.is_success(), "{st:?}");
        let statuses = filter_statuses(&s.profile, &state, &pod, &s.snap);
        let cx = PreemptionContext {
            profile: &s.profile,
            state: &state,
            pod: &pod,
            snapshot: &s.snap,
            statuses: &statuses,
            handle: &s.handle,
            nominated: None,
        };
        let plugin = CapacityScheduling::new(&[], s.handle.clone()).unwrap();
        // The strategy reads quotas from the cycle state, so any instance works.
        find_candidates(&plugin, &cx)
            .candidates
            .iter()
            .map(|c| (c.node.as_str().to_owned(), c.victims.pods.iter().map(|p| p.pod.name().to_owned()).collect()))
            .collect()
    }

    fn existing() -> Vec<Pod> {
        vec![
            mem_pod("t1-p1", "ns1", "50", MID, "node-a", 1.0),
            mem_pod("t1-p2", "ns2", "50", MID, "node-a", 1.0),
            mem_pod("t1-p3", "ns2", "50", MID, "node-a", 2.0),
        ]
    }

    /// scheduler-plugins `TestDryRunPreemption`, "in-namespace preemption": ns1 would
    /// exceed its min, so only its own lower-priority pod is a victim.
    #[test]
    fn in_namespace_preemption() {
        let s = setup(existing(), &[("ns1", "50", "200"), ("ns2", "200", "200")]);
        let got = victims(&s, mem_pod("t1-p", "ns1", "50", HIGH, "", 0.0));
        assert_eq!(got, [("node-a".to_owned(), vec!["t1-p1".to_owned()])]);
    }

    /// scheduler-plugins `TestDryRunPreemption`, "cross-namespace preemption" (after:
    /// start times make the least important ns2 pod unambiguous): ns1 stays within
    /// its min, so it reclaims from ns2, which borrows beyond its min — one pod, after
    /// which ns2 is back at its min.
    #[test]
    fn cross_namespace_preemption() {
        let s = setup(existing(), &[("ns1", "150", "200"), ("ns2", "50", "200")]);
        let got = victims(&s, mem_pod("t1-p", "ns1", "50", HIGH, "", 0.0));
        assert_eq!(got, [("node-a".to_owned(), vec!["t1-p3".to_owned()])]);
    }

    /// scheduler-plugins `TestPreFilter`, "the sum of used is bigger than the sum of
    /// min" and "without elasticQuotaInfo".
    #[test]
    fn pre_filter_table() {
        let s = setup(
            vec![
                mem_pod("used1", "ns1", "1800", MID, "node-a", 1.0),
                mem_pod("used2", "ns2", "200", MID, "node-a", 1.0),
            ],
            &[("ns1", "1000", "2000"), ("ns2", "1000", "2000")],
        );
        let pod = PodInfo::new(mem_pod("ns2-p1", "ns2", "500", MID, "", 0.0)).unwrap();
        let (_, st) = pre_filter_state(&s.profile, &pod, &s.snap);
        assert_eq!(st.code(), Code::Unschedulable);
        assert!(st.message().contains("total ElasticQuota used is more than min"), "{}", st.message());
        let none = setup(vec![], &[]);
        let (_, st) = pre_filter_state(&none.profile, &pod, &none.snap);
        assert!(st.is_success());
    }
}
