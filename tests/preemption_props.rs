//! Properties of DefaultPreemption on random clusters (NodeResourcesFit only, CPU):
//! victims are always of lower priority; after eviction the preemptor is scheduled on
//! the nominated node; no victim could have been spared (with the rest evicted, adding
//! it back makes the pod not fit: minimality under the reprieve order, which for a
//! monotone Filter means no proper subset suffices); and when nothing is nominated, no
//! node could have been freed.

use std::sync::Arc;

use proptest::prelude::*;
use schedkit::framework::{Handle, Profile, RecordingEvictor};
use schedkit::plugins::default_preemption::{DefaultPreemption, DefaultPreemptionArgs, Offset};
use schedkit::plugins::node_resources::Fit;
use schedkit::scheduler::{Scheduler, TieBreak};
use schedkit::snapshot::PodInfo;
use schedkit::testing::{NodeBuilder, PodBuilder};

#[derive(Debug, Clone)]
struct Cluster {
    /// Per node: CPU capacity and pods as (priority, cpu).
    nodes: Vec<(i64, Vec<(i32, i64)>)>,
    preemptor: (i32, i64),
}

fn cluster() -> impl Strategy<Value = Cluster> {
    let node = (4i64..=8, prop::collection::vec((0i32..5, 1i64..=3), 0..6)).prop_map(|(cap, pods)| {
        // Keep only the pods that fit, as a real node would.
        let mut used = 0;
        let pods = pods
            .into_iter()
            .filter(|&(_, c)| {
                let ok = used + c <= cap;
                if ok {
                    used += c;
                }
                ok
            })
            .collect();
        (cap, pods)
    });
    (prop::collection::vec(node, 1..5), (0i32..6, 1i64..=8)).prop_map(|(nodes, preemptor)| Cluster { nodes, preemptor })
}

fn uid(n: usize, k: usize) -> String {
    format!("default/n{n}-p{k}")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn preemption_properties(c in cluster()) {
        let handle = Handle::default();
        let evictor = Arc::new(RecordingEvictor::default());
        handle.preemption().set_evictor(evictor.clone());
        let args = DefaultPreemptionArgs::default();
        let profile = Profile::builder("default-scheduler")
            .plugin(Fit::from_config(None).unwrap())
            .plugin(DefaultPreemption::new(args, handle.clone()).unwrap().with_offset(Offset::Zero))
            .build()
            .unwrap();
        let mut s = Scheduler::builder().profile(profile).handle(handle).parallelism(1).tie_break(TieBreak::First).build();
        for (n, (cap, pods)) in c.nodes.iter().enumerate() {
            s.add_node(NodeBuilder::new(&format!("n{n}")).cpu(&cap.to_string()).build()).unwrap();
            for (k, &(prio, cpu)) in pods.iter().enumerate() {
                let p = PodBuilder::new(&format!("n{n}-p{k}"))
                    .node_name(&format!("n{n}"))
                    .priority(prio)
                    .cpu(&cpu.to_string())
                    .with(|p| p.status.start_time = Some(k as f64))
                    .build();
                s.cache().lock().add_pod(Arc::new(PodInfo::new(p).unwrap())).unwrap();
            }
        }
        let (pprio, pcpu) = c.preemptor;
        let preemptor = || PodBuilder::new("preemptor").priority(pprio).cpu(&pcpu.to_string()).build();
        // A pod that fits without preemption proves nothing here.
        let Err(err) = s.schedule_pod(preemptor()) else { return Ok(()) };
        let fit = err.fit_error().expect("a fit error");
        let victims = evictor.take();
        let Some(node) = fit.nominated_node.clone() else {
            // Completeness: no node frees enough room by evicting all lower-priority pods.
            for (cap, pods) in &c.nodes {
                let kept: i64 = pods.iter().filter(|p| p.0 >= pprio).map(|p| p.1).sum();
                prop_assert!(kept + pcpu > *cap || pods.iter().all(|p| p.0 >= pprio));
            }
            prop_assert!(victims.is_empty());
            return Ok(());
        };
        let n: usize = node[1..].parse().unwrap();
        let (cap, pods) = &c.nodes[n];
        prop_assert!(!victims.is_empty());
        let victim_ks: Vec<usize> = victims
            .iter()
            .map(|(vn, u)| {
                assert_eq!(vn, &node);
                (0..pods.len()).find(|&k| &uid(n, k) == u).expect("victim is on the node")
            })
            .collect();
        // 1. Victims have lower priority.
        for &k in &victim_ks {
            prop_assert!(pods[k].0 < pprio, "victim priority {} >= preemptor {}", pods[k].0, pprio);
        }
        // 3. Minimality: sparing any one victim leaves too little room.
        let remaining: i64 = pods.iter().enumerate().filter(|(k, _)| !victim_ks.contains(k)).map(|(_, p)| p.1).sum();
        prop_assert!(remaining + pcpu <= *cap);
        for &k in &victim_ks {
            prop_assert!(remaining + pods[k].1 + pcpu > *cap, "victim {k} could have been spared");
        }
        // 2. After eviction the preemptor lands on the nominated node.
        for (_, u) in &victims {
            s.cache().lock().remove_pod(u).unwrap();
        }
        let b = s.schedule_pod(preemptor()).unwrap();
        prop_assert_eq!(b.node(), node.as_str());
    }
}
