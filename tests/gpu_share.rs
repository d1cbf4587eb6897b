//! GPU sharing: GpuShareFit never over-allocates a device or hands a whole GPU to two
//! pods, Unreserve restores exactly, each policy's score matches the simulator's
//! formula on hand-computed cases, and small replays place pods as worked out by hand.

use std::collections::BTreeMap;
use std::sync::Arc;

use proptest::prelude::*;
use schedkit::framework::{CycleState, FilterPlugin, Handle, PreFilterPlugin, ScorePlugin};
use schedkit::plugins::gpu_share::{
    BestFit, DeviceSelect, DotProduct, GPU_COUNT_LABEL, GPU_MILLI_LABEL, GPU_MODEL_LABEL, GpuClustering, GpuPacking,
    GpuRequest, GpuShareFit, GpuState, Policy, TypicalPods,
};
use schedkit::scheduler::{Scheduler, TieBreak};
use schedkit::sim::{Replay, node_resources_fit};
use schedkit::snapshot::{NodeInfo, PodInfo, Snapshot};
use schedkit::trace::{TraceNode, TracePod, parse_nodes, parse_pods};

fn node(name: &str, cpu: i64, gpus: u32, model: &str) -> TraceNode {
    TraceNode { name: name.into(), cpu_milli: cpu, memory_mib: 1 << 20, gpus, model: Some(model.into()) }
}

fn pod(name: &str, cpu: i64, num_gpu: u32, gpu_milli: u32, spec: &str) -> TracePod {
    let mut p = parse_pods(
        "t",
        &format!("name,cpu_milli,memory_mib,num_gpu,gpu_milli\n{name},{cpu},1024,{num_gpu},{gpu_milli}\n"),
    )
    .unwrap()
    .remove(0);
    if !spec.is_empty() {
        p.gpu_spec = spec.split('|').map(str::to_owned).collect();
    }
    p
}

/// A small cluster through a real scheduler with one policy's profile.
struct Rig {
    sched: Scheduler,
    state: Arc<GpuState>,
    nodes: Vec<String>,
}

fn rig(policy: Policy, seed: u64) -> Rig {
    let nodes = [node("a", 16_000, 2, "T4"), node("b", 64_000, 4, "V100M16"), node("c", 96_000, 8, "G2")];
    let typical = Arc::new(TypicalPods::from_shapes([(4000, 500, 1, ""), (8000, 1000, 1, ""), (2000, 0, 0, "")], 95.0));
    let state = GpuState::new();
    let handle = Handle::default();
    let profile =
        policy.profile("default-scheduler", &state, &handle, &typical, seed, vec![node_resources_fit()]).unwrap();
    let sched = Scheduler::builder()
        .profile(profile)
        .handle(handle)
        .parallelism(1)
        .percentage_of_nodes_to_score(100)
        .tie_break(TieBreak::SmallestName)
        .build();
    for n in &nodes {
        let node = n.to_node();
        state.add_node(&node);
        sched.add_node(node).unwrap();
    }
    Rig { sched, state, nodes: nodes.iter().map(|n| n.name.clone()).collect() }
}

fn table(r: &Rig) -> BTreeMap<String, Vec<u32>> {
    r.nodes.iter().filter_map(|n| r.state.node(n).map(|g| (n.clone(), g.free.to_vec()))).collect()
}

#[derive(Debug, Clone)]
enum Op {
    Schedule { count: u32, milli: u32, cpu: i64, model: Option<&'static str>, bind: bool },
    Release(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (
            prop_oneof![Just(1u32), Just(2), Just(4), Just(8)],
            prop_oneof![(1u32..1000), Just(1000u32)],
            1000i64..20_000,
            prop_oneof![Just(None), Just(Some("T4")), Just(Some("G2|V100M16"))],
            any::<bool>(),
        )
            .prop_map(|(count, milli, cpu, model, bind)| {
                let count = if milli < 1000 { 1 } else { count };
                Op::Schedule { count, milli, cpu, model, bind }
            }),
        1 => (0usize..64).prop_map(Op::Release),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn gpu_share_fit_never_over_allocates_and_unreserve_restores(
        policy in prop::sample::select(Policy::ALL.to_vec()),
        seed in any::<u64>(),
        ops in prop::collection::vec(op(), 1..60),
    ) {
        let mut r = rig(policy, seed);
        let mut live: Vec<(String, GpuRequest)> = Vec::new();
        for (i, op) in ops.into_iter().enumerate() {
            match op {
                Op::Schedule { count, milli, cpu, model, bind } => {
                    let mut p = pod(&format!("p{i}"), cpu, count, milli, model.unwrap_or("")).to_pod();
                    p.metadata.uid = format!("uid-{i}");
                    let req = GpuRequest::from_pod(&p).unwrap().unwrap();
                    let before = table(&r);
                    let Ok(binding) = r.sched.schedule_pod(p) else {
                        prop_assert_eq!(table(&r), before, "a failed cycle leaves the devices alone");
                        continue;
                    };
                    let alloc = r.state.allocation(&format!("uid-{i}")).expect("reserved");
                    prop_assert_eq!(alloc.devices.len(), count as usize);
                    let g = r.state.node(binding.node()).unwrap();
                    prop_assert!(req.accepts_model(g.model));
                    if bind {
                        binding.run().unwrap();
                        live.push((format!("uid-{i}"), req));
                    } else {
                        drop(binding.abort("test"));
                        prop_assert_eq!(table(&r), before, "Unreserve restores exactly");
                        let gone = r.state.allocation(&format!("uid-{i}")).is_none();
                        prop_assert!(gone);
                    }
                }
                Op::Release(k) => {
                    if !live.is_empty() {
                        let (uid, _) = live.remove(k % live.len());
                        prop_assert!(r.state.release(&uid).is_some());
                        r.sched.cache().lock().remove_pod(&uid).unwrap();
                    }
                }
            }
            // Every device: used (sum over live pods) + free == 1000, never negative, and
            // a device with a whole-GPU pod has no other pod.
            let mut used: BTreeMap<(String, u8), (u32, usize, bool)> = BTreeMap::new();
            for (uid, req) in &live {
                let a = r.state.allocation(uid).unwrap();
                for &d in &a.devices {
                    let e = used.entry((a.node.as_str().to_owned(), d)).or_default();
                    e.0 += req.milli;
                    e.1 += 1;
                    e.2 |= req.milli == 1000;
                }
            }
            for (name, free) in table(&r) {
                for (d, f) in free.iter().enumerate() {
                    let (u, pods, whole) = used.get(&(name.clone(), d as u8)).copied().unwrap_or_default();
                    prop_assert!(*f <= 1000);
                    prop_assert_eq!(u + f, 1000, "{} device {}", name, d);
                    prop_assert!(!whole || pods == 1, "{} device {} holds a whole-GPU pod and others", name, d);
                }
            }
            let total: i64 = live.iter().map(|(_, r)| r.total_milli()).sum();
            prop_assert_eq!(r.state.used_milli(), total);
        }
    }
}

/// One step of the proptests' random history: pod `u{i}` takes `count` devices
/// (one for a fraction) with `milli` free on node `n`, first fit, then (if `release`)
/// one held pod leaves.
fn random_step(
    state: &GpuState,
    infos: &[NodeInfo],
    held: &mut Vec<String>,
    i: usize,
    (n, milli, count, release): (usize, u32, u32, bool),
) {
    let count = if milli < 1000 { 1 } else { count };
    let req = GpuRequest::from_pod(&pod("x", 1, count, milli, "").to_pod()).unwrap().unwrap();
    let g = state.node(infos[n].node().name()).unwrap();
    let devices: Vec<u8> = (0..g.count() as u8).filter(|&d| g.free[d as usize] >= milli).take(count as usize).collect();
    let uid = format!("u{i}");
    if state.allocate(&uid, infos[n].node(), &req, &devices).is_ok() {
        held.push(uid);
    }
    if release && !held.is_empty() {
        state.release(&held.remove(i % held.len()));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Filter answers from the device summaries (through PreFilter's view, or from the
    /// table without PreFilter) exactly as a walk of the devices does, after any mix of
    /// allocations and releases, and Reserve works after Filter used the view.
    #[test]
    fn filter_agrees_with_a_walk_of_the_devices(
        allocs in prop::collection::vec((0usize..3, 1u32..=1000, 1u32..=4, any::<bool>()), 0..24),
        probes in prop::collection::vec(
            (prop_oneof![Just(1u32), Just(2), Just(3), Just(8)], prop_oneof![1u32..1000, Just(1000u32)],
             prop_oneof![Just(""), Just("T4"), Just("G2|V100M16")]),
            1..12,
        ),
    ) {
        let nodes = [node("a", 16_000, 2, "T4"), node("b", 64_000, 4, "V100M16"), node("c", 96_000, 8, "G2")];
        let infos: Vec<NodeInfo> = nodes.iter().map(|n| info(n, 0)).collect();
        let state = GpuState::new();
        for ni in &infos {
            state.add_node(ni.node());
        }
        let mut held = Vec::new();
        for (i, step) in allocs.into_iter().enumerate() {
            random_step(&state, &infos, &mut held, i, step);
        }
        let fit = GpuShareFit::new(state.clone(), Handle::default(), DeviceSelect::BestFit);
        for (count, milli, spec) in probes {
            let count = if milli < 1000 { 1 } else { count };
            let p = PodInfo::new(pod("probe", 1, count, milli, spec).to_pod()).unwrap();
            let req = GpuRequest::from_pod(&p.pod).unwrap().unwrap();
            let mut cs = CycleState::new();
            let (_, s) = fit.pre_filter(&mut cs, &p, &Snapshot::default());
            prop_assert!(s.is_success());
            for ni in &infos {
                let g = state.node(ni.node().name()).unwrap();
                let want = g.count() > 0 && req.accepts_model(g.model) && g.can_host(&req);
                prop_assert_eq!(fit.filter(&cs, &p, ni).is_success(), want, "view, {:?} on {:?}", req, g);
                prop_assert_eq!(fit.filter(&CycleState::new(), &p, ni).is_success(), want, "table, {:?}", req);
            }
            // The batched Filter the scheduler runs gives each node the same status,
            // through the view and without one.
            let snap = Snapshot::from_nodes(infos.iter().cloned());
            let all: Vec<usize> = (0..snap.len()).collect();
            for cs in [&cs, &CycleState::new()] {
                let mut statuses = vec![schedkit::framework::Status::SUCCESS; all.len()];
                fit.filter_nodes(cs, &p, schedkit::snapshot::NodeList::new(&snap, &all), &mut statuses);
                for (ni, got) in snap.nodes().iter().zip(&statuses) {
                    prop_assert_eq!(got, &fit.filter(cs, &p, ni), "filter_nodes on {}", ni.node().name());
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// With narrowing on, GpuShareFit's PreFilter node set (from the free-capacity
    /// index, or kept from an earlier probe of the same shape and brought up to date) is
    /// exactly the set of nodes its Filter accepts with narrowing off, after any mix of
    /// allocations and releases; CPU-only pods and the plugin with narrowing off get no
    /// set.
    #[test]
    fn narrowed_nodes_are_exactly_the_nodes_filter_accepts(
        allocs in prop::collection::vec((0usize..6, 1u32..=1000, 1u32..=8, any::<bool>()), 0..40),
        probes in prop::collection::vec(
            (prop_oneof![Just(1u32), Just(2), Just(3), Just(8)], prop_oneof![1u32..1000, Just(1000u32), 1u32..30],
             prop_oneof![Just(""), Just("T4"), Just("G2|V100M16"), Just("T4|T4"), Just("A100")]),
            1..12,
        ),
    ) {
        let nodes = [
            node("a", 16_000, 2, "T4"),
            node("b", 64_000, 4, "V100M16"),
            node("c", 96_000, 8, "G2"),
            node("d", 8_000, 1, "T4"),
            node("e", 8_000, 0, ""),
            node("f", 96_000, 8, "G2"),
        ];
        let infos: Vec<NodeInfo> = nodes.iter().map(|n| info(n, 0)).collect();
        let snap = Snapshot::from_nodes(infos.iter().cloned());
        let state = GpuState::new();
        for ni in &infos {
            state.add_node(ni.node());
        }
        let narrowing = GpuShareFit::new(state.clone(), Handle::default(), DeviceSelect::BestFit).narrow_nodes(true);
        let plain = GpuShareFit::new(state.clone(), Handle::default(), DeviceSelect::BestFit);
        let mut held = Vec::new();
        let mut allocs = allocs.into_iter().enumerate().peekable();
        let cpu_only = PodInfo::new(pod("cpu", 1, 0, 0, "").to_pod()).unwrap();
        // A pod without GPU request: no set, and Skip (Filter would pass every node,
        // and still does when called).
        let mut cs = CycleState::new();
        let (r, s) = narrowing.pre_filter(&mut cs, &cpu_only, &snap);
        prop_assert!(r.is_none() && s.is_skip());
        prop_assert!(infos.iter().all(|ni| narrowing.filter(&cs, &cpu_only, ni).is_success()));
        while allocs.peek().is_some() || !probes.is_empty() {
            // Interleave: a few allocations, then every probe against the table as it stands.
            for (i, step) in allocs.by_ref().take(5) {
                random_step(&state, &infos, &mut held, i, step);
            }
            for &(count, milli, spec) in &probes {
                let count = if milli < 1000 { 1 } else { count };
                let p = PodInfo::new(pod("probe", 1, count, milli, spec).to_pod()).unwrap();
                let mut cs = CycleState::new();
                let (r, s) = narrowing.pre_filter(&mut cs, &p, &snap);
                prop_assert!(s.is_success());
                let set: std::collections::BTreeSet<&str> =
                    r.and_then(|r| r.node_positions).expect("a set").iter().map(|i| snap.nodes()[i].node().name()).collect();
                // The cycle filters only nodes of the set, and Filter passes each of them
                // without a check of its own.
                prop_assert!(
                    infos.iter().filter(|ni| set.contains(ni.node().name())).all(|ni| narrowing.filter(&cs, &p, ni).is_success())
                );
                let in_set: Vec<usize> =
                    (0..snap.len()).filter(|&i| set.contains(snap.nodes()[i].node().name())).collect();
                let mut statuses = vec![schedkit::framework::Status::SUCCESS; in_set.len()];
                narrowing.filter_nodes(&cs, &p, schedkit::snapshot::NodeList::new(&snap, &in_set), &mut statuses);
                prop_assert!(statuses.iter().all(schedkit::framework::Status::is_success));
                let mut cs = CycleState::new();
                prop_assert!(plain.pre_filter(&mut cs, &p, &snap).0.is_none());
                let plain_accepted: std::collections::BTreeSet<&str> = infos
                    .iter()
                    .filter(|ni| plain.filter(&cs, &p, ni).is_success())
                    .map(|ni| ni.node().name())
                    .collect();
                prop_assert_eq!(&set, &plain_accepted, "{}x{} of {:?}", count, milli, spec);
            }
            if allocs.peek().is_none() {
                break;
            }
        }
    }
}

/// A node in the cycle's snapshot but not in the GPU table is judged by Filter from the
/// node itself, which the index can't see: PreFilter then doesn't narrow, until the node
/// is registered.
#[test]
fn no_narrowing_while_a_snapshot_node_is_missing_from_the_table() {
    let a = info(&node("a", 16_000, 2, "T4"), 0);
    let late = info(&node("late", 16_000, 4, "T4"), 0);
    let state = GpuState::new();
    state.add_node(a.node());
    let fit = GpuShareFit::new(state.clone(), Handle::default(), DeviceSelect::BestFit).narrow_nodes(true);
    let p = PodInfo::new(pod("p", 1, 3, 1000, "").to_pod()).unwrap();
    let names = |snap: &Snapshot| {
        let (r, s) = fit.pre_filter(&mut CycleState::new(), &p, snap);
        assert!(s.is_success());
        r.and_then(|r| r.node_positions)
            .map(|n| n.iter().map(|i| snap.nodes()[i].node().name().to_owned()).collect::<Vec<_>>())
    };
    let only_a = Snapshot::from_nodes([a.clone()]);
    assert_eq!(names(&only_a), Some(vec![]), "a has 2 GPUs, the pod wants 3: an empty set");
    let both = Snapshot::from_nodes([a.clone(), late.clone()]);
    assert_eq!(names(&both), None, "late is not in the table");
    let mut cs = CycleState::new();
    let _ = fit.pre_filter(&mut cs, &p, &both);
    assert!(fit.filter(&cs, &p, &late).is_success(), "Filter reads late's 4 GPUs from the node");
    state.add_node(late.node());
    assert_eq!(names(&both), Some(vec!["late".to_owned()]));
}

/// A cycle's Filter judges nodes by the table as of its PreFilter; allocations made
/// meanwhile (which copy the summaries the view holds) show in the next cycle's view.
#[test]
fn a_filter_view_is_the_table_as_of_its_pre_filter() {
    let ni = info(&node("a", 16_000, 1, "T4"), 0);
    let state = GpuState::new();
    state.add_node(ni.node());
    let fit = GpuShareFit::new(state.clone(), Handle::default(), DeviceSelect::BestFit);
    let p = PodInfo::new(pod("second", 1, 1, 1000, "").to_pod()).unwrap();
    let mut held = CycleState::new();
    let _ = fit.pre_filter(&mut held, &p, &Snapshot::default());
    let req = GpuRequest::from_pod(&p.pod).unwrap().unwrap();
    state.allocate("first", ni.node(), &req, &[0]).unwrap();
    assert!(fit.filter(&held, &p, &ni).is_success(), "the held view predates the allocation");
    let mut cs = CycleState::new();
    let _ = fit.pre_filter(&mut cs, &p, &Snapshot::default());
    assert!(!fit.filter(&cs, &p, &ni).is_success());
    assert!(!fit.filter(&CycleState::new(), &p, &ni).is_success());
    state.release("first").unwrap();
    assert!(!fit.filter(&cs, &p, &ni).is_success(), "and this one predates the release");
    let _ = fit.pre_filter(&mut cs, &p, &Snapshot::default());
    assert!(fit.filter(&cs, &p, &ni).is_success());
}

fn info(n: &TraceNode, requested_cpu: i64) -> NodeInfo {
    let mut ni = NodeInfo::new(Arc::new(n.to_node()));
    if requested_cpu > 0 {
        ni.add_pod(Arc::new(PodInfo::new(pod("x", requested_cpu, 0, 0, "").to_pod()).unwrap()));
    }
    ni
}

fn score(p: &dyn ScorePlugin, pod_: &TracePod, node: &NodeInfo) -> i64 {
    p.score(&CycleState::new(), &PodInfo::new(pod_.to_pod()).unwrap(), node).unwrap()
}

#[test]
fn policy_scores_follow_the_simulator_formulas() {
    let state = GpuState::new();
    let g2 = node("g2", 96_000, 8, "G2");
    let ni = info(&g2, 32_000); // 64 cores free, 8 GPUs free
    state.add_node(ni.node());
    let share = pod("s", 4000, 1, 500, "");
    // BestFit raw: (1 - ((64000-4000)/128000*0.5 + (8000-500)/8000*0.5)) * 100 = 29.68.. -> 29
    assert_eq!(score(&BestFit::new(state.clone()), &share, &ni), 29);
    // DotProduct: 100 * (1 - (64000/128000 * 4000/128000 + 8000/8000 * 500/8000) / 2) = 96.09 -> 96
    assert_eq!(score(&DotProduct::new(state.clone()), &share, &ni), 96);
    // GpuPacking on an idle 8-GPU node: max(33 - 8, 8) = 25.
    assert_eq!(score(&GpuPacking::new(state.clone()), &share, &ni), 25);
    // GpuClustering on an idle node: 25 * (8000 - 8000) / 8000 + 25 = 25.
    assert_eq!(score(&GpuClustering::new(state.clone()), &share, &ni), 25);

    // Put a 300-milli sharing pod on device 0: free [700, 1000 x7].
    let mut p = pod("first", 1000, 1, 300, "").to_pod();
    p.metadata.uid = "first".into();
    state.allocate("first", ni.node(), &GpuRequest::from_pod(&p).unwrap().unwrap(), &[0]).unwrap();
    // GpuPacking, share pod fits device 0 (700 free): 100 - (700*100/1000)/10 = 93.
    assert_eq!(score(&GpuPacking::new(state.clone()), &share, &ni), 93);
    // A whole-GPU pod must take a fully free device: max(50 - 1, 33) = 49.
    assert_eq!(score(&GpuPacking::new(state.clone()), &pod("w", 4000, 1, 1000, ""), &ni), 49);
    // GpuClustering: node holds only sharing pods; used = 25 * (8000 - 7700) / 8000 = 0 -> 75;
    // a 1-GPU pod sees another shape only -> 0.
    assert_eq!(score(&GpuClustering::new(state.clone()), &share, &ni), 75);
    assert_eq!(score(&GpuClustering::new(state.clone()), &pod("w", 4000, 1, 1000, ""), &ni), 0);
    // CPU-only pods score 0 under GPU-only policies.
    assert_eq!(score(&GpuPacking::new(state.clone()), &pod("c", 4000, 0, 0, ""), &ni), 0);
    // A model constraint the node doesn't meet is refused by GpuShareFit's own check.
    let t4_only = GpuRequest::from_pod(&pod("m", 1, 1, 500, "T4").to_pod()).unwrap().unwrap();
    assert!(!t4_only.accepts_model(
        ni.node().metadata.labels.get_str(GPU_MODEL_LABEL).map(schedkit::model::Symbol::intern).unwrap()
    ));
    let _ = (GPU_COUNT_LABEL, GPU_MILLI_LABEL);
}

/// Replays `pods` in order on `nodes` and returns "node:devices" per pod ("-" if failed).
fn replay(nodes: &[TraceNode], pods: &[TracePod], typical: &[TracePod], policy: Policy) -> Vec<String> {
    let typical = Arc::new(TypicalPods::from_pods(typical));
    let mut r = Replay::new(nodes, None, typical, policy, 1).unwrap();
    pods.iter()
        .map(|p| {
            let s = r.step(p, &p.name);
            match s.node {
                Some(i) => {
                    format!("{}:{}", nodes[i].name, s.devices.iter().map(u8::to_string).collect::<Vec<_>>().join("-"))
                }
                None => "-".into(),
            }
        })
        .collect()
}

/// Two 2-GPU nodes (a: 8 cores, b: 32 cores) and a target workload of half-GPU pods
/// (4 cores) only. Worked by hand:
///
/// FGD. frag(node) = idle milli of devices with < 500 free when the node has 4 free
/// cores and a device with >= 500 free, else all idle milli.
/// 1. `h1` (500m, 4c): on a (cpu 8->4) device 0 -> [500,1000], frag 0 -> 0: score 50; same
///    on b; tie -> a, device 0 (both devices score the same; the first wins).
/// 2. `h2` (500m, 4c): a has 4 cores left; after placing, cpu 0 < 4 so all idle (500 or
///    1000) is fragment: dev0 -> [0,1000] frag 1000, dev1 -> [500,500] frag 1000; before
///    0 -> sigmoid(-1)*100 = 26. b: [1000,1000] -> [500,1000], cpu 28 >= 4, frag 0 -> 50.
///    b wins, device 0: b = [500,1000].
/// 3. `w1` (1000m, 1 GPU, 4c): a: after [500,0] with cpu 0: frag 500 (before 0):
///    sigmoid(-0.5) = 37. b: [500,1000] -> [500,0], cpu 24: no device below 500 free,
///    frag 0 -> 50. b, device 1: b = [500,0].
/// 4. `h3` (500m, 4c): a: 26 on either device as in step 2. b: dev0 -> [0,0], frag 0
///    before and after -> 50. b, device 0: b = [0,0].
/// 5. `w2` (1000m, 4c): b has no GPU left; a has 4 cores and device 1 whole. a, device 1.
///
/// BestFit prefers the least free CPU + GPU after placement (then min-max normalised):
/// 1. `h1`: a scores (1 - (4000/128000*.5 + 1500/8000*.5))*100 = 89.06 -> 89, b:
///    (1 - (28000/128000*.5 + 1500/8000*.5))*100 = 79.69 -> 79. a; best-fit device =
///    least free that fits: both 1000, the first. a = [500,1000].
/// 2. `h2`: a: cpu 0, gpu 1000 left -> 93.75 -> 93; b: 79. a; best-fit device: device 0
///    (500 free) fits exactly. a: [0,1000].
/// 3. `w1`: a has 0 cores: filtered; b. b: device 0. [0,1000].
/// 4. `h3`: only b: device 1 (the only one that fits): [0,500].
/// 5. `w2`: a: 0 cores; b: no whole device. Fails.
#[test]
fn small_replay_places_pods_as_worked_out_by_hand() {
    let nodes = [node("a", 8000, 2, "T4"), node("b", 32_000, 2, "T4")];
    let pods = [
        pod("h1", 4000, 1, 500, ""),
        pod("h2", 4000, 1, 500, ""),
        pod("w1", 4000, 1, 1000, ""),
        pod("h3", 4000, 1, 500, ""),
        pod("w2", 4000, 1, 1000, ""),
    ];
    let typical = [pod("t", 4000, 1, 500, "")];
    assert_eq!(replay(&nodes, &pods, &typical, Policy::Fgd), ["a:0", "b:0", "b:1", "b:0", "a:1"]);
    assert_eq!(replay(&nodes, &pods, &typical, Policy::BestFit), ["a:0", "a:0", "b:0", "b:1", "-"]);
}

/// Thirty pods on three nodes, each worked out from the rules above: FGD keeps whole
/// devices for whole-GPU pods by stacking quarter-GPU pods, BestFit fills the node with
/// the least room first.
#[test]
fn a_few_dozen_pods_by_hand() {
    // Three identical 4-GPU nodes with plenty of CPU; the workload is quarter-GPU pods
    // (1 core) and whole-GPU pods (1 core), half each.
    let nodes = [node("n1", 64_000, 4, "T4"), node("n2", 64_000, 4, "T4"), node("n3", 64_000, 4, "T4")];
    let typical = [pod("q", 1000, 1, 250, ""), pod("w", 1000, 1, 1000, "")];
    // 24 quarter pods then 6 whole pods.
    let mut pods: Vec<TracePod> = (0..24).map(|i| pod(&format!("q{i}"), 1000, 1, 250, "")).collect();
    pods.extend((0..6).map(|i| pod(&format!("w{i}"), 1000, 1, 1000, "")));
    // FGD: for the whole-GPU typical pod (popularity 0.5) idle milli on partly used
    // devices is fragment; for the quarter pod only devices with < 250 free. A quarter pod
    // on an idle device adds 0.5 * 750 of fragment: sigmoid(-0.375) * 100 = 40; on a device
    // with 750 or 500 free it removes 0.5 * 250: sigmoid(0.125) -> 53; so quarters stack:
    // n1 device 0 takes q0..q3, then device 1 (score 40 on every node: tie -> n1, first
    // device), ... 16 quarters fill n1, 8 more fill n2 devices 0 and 1.
    let fgd = replay(&nodes, &pods, &typical, Policy::Fgd);
    for (i, p) in fgd.iter().take(24).enumerate() {
        let (node, dev) = if i < 16 { ("n1", i / 4) } else { ("n2", (i - 16) / 4) };
        assert_eq!(p, &format!("{node}:{dev}"), "q{i}");
    }
    // Whole pods then use n2's devices 2 and 3 (placing there removes no fragment but
    // adds none: before = after = 0 ... n3 idle scores the same 50 -> tie -> n2 first),
    // then n3.
    assert_eq!(&fgd[24..], ["n2:2", "n2:3", "n3:0", "n3:1", "n3:2", "n3:3"]);
    // BestFit fills the fullest node: same stacking (best-fit device) on n1 first.
    let bf = replay(&nodes, &pods, &typical, Policy::BestFit);
    assert_eq!(&bf[..4], ["n1:0", "n1:0", "n1:0", "n1:0"]);
    assert_eq!(bf.iter().filter(|p| p.starts_with("n1")).count(), 16);
    assert_eq!(&bf[24..], ["n2:2", "n2:3", "n3:0", "n3:1", "n3:2", "n3:3"]);
    let _ = parse_nodes;
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// FGD remembers each node's fragmentation and recent scores until the node's devices
    /// or free CPU change: after any mix of allocations, releases and CPU use, one
    /// long-lived plugin scores every node exactly as a fresh one (no memory) does.
    #[test]
    fn fgd_memory_never_changes_a_score(
        steps in prop::collection::vec(
            (0usize..5, 1u32..=1000, 1u32..=4, any::<bool>(), 0i64..4,
             prop_oneof![Just(1u32), Just(2), Just(8)], prop_oneof![Just(250u32), Just(500), 1u32..1000, Just(1000u32)],
             prop_oneof![Just(""), Just("T4"), Just("G2")], prop_oneof![Just(1_000i64), Just(4_000), Just(64_000)]),
            1..40,
        ),
    ) {
        let nodes = [
            node("a", 16_000, 2, "T4"),
            node("b", 64_000, 4, "V100M16"),
            node("c", 96_000, 8, "G2"),
            node("d", 8_000, 1, "T4"),
            node("e", 8_000, 0, ""),
        ];
        let typical = Arc::new(TypicalPods::from_shapes(
            [(4000, 500, 1, ""), (8000, 1000, 1, ""), (2000, 0, 0, ""), (1000, 250, 1, "T4"), (16000, 1000, 2, "")],
            95.0,
        ));
        let state = GpuState::new();
        for n in &nodes {
            state.add_node(&n.to_node());
        }
        let kept = schedkit::plugins::gpu_share::Fgd::new(state.clone(), typical.clone());
        let mut used_cpu = [0i64; 5];
        let mut held = Vec::new();
        for (i, (n, milli, count, release, cpu_step, p_count, p_milli, spec, p_cpu)) in steps.into_iter().enumerate() {
            // Change the table (or only a node's CPU), then score a probe on every node twice.
            let count = if milli < 1000 { 1 } else { count };
            let req = GpuRequest::from_pod(&pod("x", 1, count, milli, "").to_pod()).unwrap().unwrap();
            if let Some(g) = state.node(&nodes[n].name) {
                let devices: Vec<u8> =
                    (0..g.count() as u8).filter(|&d| g.free[d as usize] >= milli).take(count as usize).collect();
                let uid = format!("u{i}");
                if state.allocate(&uid, &nodes[n].to_node(), &req, &devices).is_ok() {
                    held.push(uid);
                }
            }
            if release && !held.is_empty() {
                state.release(&held.remove(i % held.len()));
            }
            used_cpu[n] = (used_cpu[n] + cpu_step * 1000).min(nodes[n].cpu_milli);
            let p_count = if p_milli < 1000 { 1 } else { p_count };
            let probe = pod("probe", p_cpu, p_count, p_milli, spec);
            for _ in 0..2 {
                for (k, tn) in nodes.iter().enumerate() {
                    let ni = info(tn, used_cpu[k]);
                    let p = PodInfo::new(probe.to_pod()).unwrap();
                    let fresh = schedkit::plugins::gpu_share::Fgd::new(state.clone(), typical.clone());
                    let want = fresh.score(&CycleState::new(), &p, &ni).ok();
                    let got = kept.score(&CycleState::new(), &p, &ni).ok();
                    prop_assert_eq!(got, want, "node {} probe {}x{} cpu {} of {:?}", tn.name, p_count, p_milli, p_cpu, spec);
                }
            }
        }
    }
}
