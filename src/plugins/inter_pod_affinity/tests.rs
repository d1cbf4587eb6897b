//! The cross-cycle memos (PreFilter term counts, PreScore sums) against fresh counts.

use std::sync::Arc;

use super::{InterPodAffinity, InterPodAffinityArgs, NamespaceLabels};
use crate::framework::Handle;
use crate::model::{Affinity, LabelSelector, Labels, PodAffinity, PodAffinityTerm, Symbol, WeightedPodAffinityTerm};
use crate::snapshot::{Cache, PodInfo, Snapshot};
use crate::testing::{NodeBuilder, PodBuilder};

fn term(app: &str, key: &str) -> PodAffinityTerm {
    PodAffinityTerm {
        label_selector: Some(LabelSelector::from_labels(Labels::from_pairs([("app", app)]))),
        topology_key: Symbol::intern(key),
        ..Default::default()
    }
}

fn weighted(weight: i32, t: PodAffinityTerm) -> WeightedPodAffinityTerm {
    WeightedPodAffinityTerm { weight, pod_affinity_term: t }
}

fn with_terms(name: &str, app: &str, affinity: Vec<PodAffinityTerm>, anti: Vec<PodAffinityTerm>) -> PodBuilder {
    PodBuilder::new(name).label("app", app).with(move |p| {
        p.spec.affinity = Some(Affinity {
            pod_affinity: (!affinity.is_empty()).then_some(PodAffinity { required: affinity, preferred: vec![] }),
            pod_anti_affinity: (!anti.is_empty()).then_some(PodAffinity { required: anti, preferred: vec![] }),
            ..Default::default()
        });
    })
}

/// Incoming-term counts and PreScore sums from the memos equal a fresh plugin's
/// while pods come and go, nodes are relabelled, added and removed, and workloads take turns.
#[test]
#[expect(clippy::too_many_lines, reason = "one randomized scenario")]
fn memo_matches_a_fresh_count_after_changes() {
    let mut cache = Cache::new();
    let mk_node = |i: u64, zone: u64| {
        let name = format!("n{i}");
        let mut b = NodeBuilder::new(&name).label("host", &name);
        if zone < 3 {
            b = b.label("zone", &format!("z{zone}"));
        }
        b.build()
    };
    for i in 0..10 {
        cache.add_node(mk_node(i, i % 3)).unwrap();
    }
    let workloads: Vec<PodInfo> = vec![
        with_terms("w0", "web", vec![term("db", "zone")], vec![term("web", "host")]),
        with_terms("w1", "db", vec![], vec![term("db", "zone"), term("cache", "host")]),
        with_terms("w2", "cache", vec![term("db", "zone"), term("web", "zone")], vec![]),
        with_terms("w3", "web", vec![term("web", "host")], vec![]),
        with_terms("w4", "x", vec![], vec![term("x", "zone")]),
        with_terms("w5", "db", vec![term("db", "host")], vec![term("web", "zone")]),
    ]
    .into_iter()
    .enumerate()
    .map(|(i, b)| {
        // Preferred terms on some workloads, so PreScore scans (and memoizes) every pod.
        let b = b.with(move |p| {
            let a = p.spec.affinity.get_or_insert_with(Default::default);
            if i % 2 == 0 {
                a.pod_affinity.get_or_insert_with(Default::default).preferred.push(weighted(7, term("db", "zone")));
            }
            if i % 3 == 0 {
                a.pod_anti_affinity
                    .get_or_insert_with(Default::default)
                    .preferred
                    .push(weighted(3, term("web", "host")));
            }
        });
        PodInfo::new(b.build()).unwrap()
    })
    .collect();
    let new_plugin = || {
        InterPodAffinity::new(InterPodAffinityArgs::default(), &Handle::default())
            .unwrap()
            .with_namespaces(NamespaceLabels::default())
    };
    let pl = new_plugin();
    let mut snap = Snapshot::default();
    let mut seed: u64 = 7;
    let mut next = |m: u64| {
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (seed >> 33) % m
    };
    let apps = ["web", "db", "cache", "x"];
    let mut pods: Vec<String> = Vec::new();
    let mut nodes: Vec<u64> = (0..10).collect();
    let mut next_node = 10;
    for round in 0..300 {
        match next(6) {
            0..=2 => {
                let n = nodes[next(nodes.len() as u64) as usize];
                let name = format!("p{round}");
                let app = apps[next(4) as usize];
                let b = match next(6) {
                    0 => with_terms(&name, app, vec![], vec![term(apps[next(4) as usize], "host")]),
                    1 => with_terms(&name, app, vec![term(apps[next(4) as usize], "zone")], vec![]),
                    2 => PodBuilder::new(&name).label("app", app).with(|p| {
                        p.spec.affinity = Some(Affinity {
                            pod_anti_affinity: Some(PodAffinity {
                                required: vec![],
                                preferred: vec![weighted(4, term("cache", "zone"))],
                            }),
                            ..Default::default()
                        });
                    }),
                    _ => PodBuilder::new(&name).label("app", app),
                };
                cache.add_pod(Arc::new(PodInfo::new(b.node_name(&format!("n{n}")).build()).unwrap())).unwrap();
                pods.push(format!("default/{name}"));
            }
            3 if !pods.is_empty() => {
                let uid = pods.swap_remove(next(pods.len() as u64) as usize);
                let _ = cache.remove_pod(&uid);
            }
            4 => {
                let n = nodes[next(nodes.len() as u64) as usize];
                cache.update_node(mk_node(n, next(4))).unwrap();
            }
            _ => {
                if next(2) == 0 && nodes.len() > 3 {
                    let n = nodes.swap_remove(next(nodes.len() as u64) as usize);
                    cache.remove_node(&format!("n{n}")).unwrap();
                } else {
                    cache.add_node(mk_node(next_node, next(4))).unwrap();
                    nodes.push(next_node);
                    next_node += 1;
                }
            }
        }
        cache.update_snapshot(&mut snap);
        let w = if next(3) == 0 { next(6) } else { next(3) } as usize;
        let got = pl.pre_filter_state(&workloads[w], &snap);
        let want = new_plugin().pre_filter_state(&workloads[w], &snap);
        let key = |s: &super::filtering::PreFilterState| (s.affinity.clone(), s.anti.clone(), s.existing_anti.clone());
        assert_eq!(got.as_ref().map(key), want.as_ref().map(key), "round {round}, workload {w}");
        let idx: Vec<usize> = (0..snap.len()).collect();
        let got = pl.pre_score_state(&workloads[w], crate::snapshot::NodeList::new(&snap, &idx));
        let want = new_plugin().pre_score_state(&workloads[w], crate::snapshot::NodeList::new(&snap, &idx));
        let sorted = |s: &super::scoring::PreScoreState| {
            let mut v: Vec<(&str, Vec<(&str, i64)>)> = s
                .topology_score
                .0
                .iter()
                .map(|(k, m)| {
                    let mut e: Vec<_> = m.iter().map(|(v, &n)| (v.as_str(), n)).collect();
                    e.sort_unstable();
                    (k.as_str(), e)
                })
                .collect();
            v.sort_unstable();
            v
        };
        assert_eq!(got.as_ref().map(sorted), want.as_ref().map(sorted), "PreScore, round {round}, workload {w}");
    }
}
