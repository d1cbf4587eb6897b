//! Elastic-quota invariants under random workloads (1-CPU pods, two quotas sharing
//! two 4-CPU nodes): no quota ever exceeds its max, all quotas together never exceed
//! the sum of mins, reclaim never takes a quota below its min, a pod of the
//! preemptor's own quota is evicted only for a higher-priority pod, and after
//! eviction the preemptor is scheduled.

use std::sync::Arc;

use proptest::prelude::*;
use schedkit::framework::{Handle, Profile, RecordingEvictor};
use schedkit::model::Symbol;
use schedkit::plugins::capacity_scheduling::{CapacityScheduling, ElasticQuota};
use schedkit::plugins::node_resources::Fit;
use schedkit::scheduler::{Scheduler, TieBreak};
use schedkit::testing::{NodeBuilder, PodBuilder};

const QUOTAS: [(&str, i64, i64); 2] = [("a", 3, 8), ("b", 5, 8)];

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn quota_invariants(steps in prop::collection::vec((0usize..2, 0i32..3), 1..24)) {
        let handle = Handle::default();
        let evictor = Arc::new(RecordingEvictor::default());
        handle.preemption().set_evictor(evictor.clone());
        let qs: Vec<ElasticQuota> = QUOTAS
            .iter()
            .map(|&(ns, min, max)| {
                ElasticQuota::new(ns, &[("cpu", &min.to_string())], &[("cpu", &max.to_string())]).unwrap()
            })
            .collect();
        let plugin = Arc::new(CapacityScheduling::new(&qs, handle.clone()).unwrap());
        let profile = Profile::builder("default-scheduler")
            .plugin(Fit::from_config(None).unwrap())
            .plugin_arc(plugin.clone(), 1)
            .build()
            .unwrap();
        let mut s = Scheduler::builder().profile(profile).handle(handle).parallelism(1).tie_break(TieBreak::First).build();
        for n in ["node1", "node2"] {
            s.add_node(NodeBuilder::new(n).cpu("4").build()).unwrap();
        }
        let used = |ns: &str| plugin.quotas().get(Symbol::intern(ns)).unwrap().used.milli_cpu / 1000;
        for (i, &(q, prio)) in steps.iter().enumerate() {
            let ns = QUOTAS[q].0;
            let pod = || PodBuilder::new(&format!("p{i}")).namespace(ns).cpu("1").priority(prio)
                .with(|p| p.status.start_time = Some(i as f64)).build();
            match s.schedule_pod(pod()) {
                Ok(b) => { b.run().unwrap(); }
                Err(e) => {
                    let fit = e.fit_error().expect("only fit errors here");
                    if fit.nominated_node.is_some() {
                        for (_, uid) in evictor.take() {
                            let victim = s.cache().lock().remove_pod(&uid).unwrap();
                            let vns = victim.pod.namespace().to_owned();
                            if vns == ns {
                                prop_assert!(victim.priority() < prio, "own-quota victim must be lower priority");
                            } else {
                                let (_, min, _) = QUOTAS.iter().find(|q| q.0 == vns).unwrap();
                                prop_assert!(used(&vns) > *min, "reclaimed from {vns} at or below its min");
                            }
                            plugin.remove_pod(&victim);
                        }
                        let b = s.schedule_pod(pod());
                        prop_assert!(b.is_ok(), "after eviction the preemptor fits: {:?}", b.err());
                        b.unwrap().run().unwrap();
                    }
                }
            }
            for &(ns, _, max) in &QUOTAS {
                prop_assert!(used(ns) <= max, "{ns} over max");
            }
            prop_assert!(used("a") + used("b") <= QUOTAS[0].1 + QUOTAS[1].1, "over the sum of mins");
        }
    }
}
