//! Threaded stress: binding cycles run on two worker threads while a deleter thread
//! removes and re-creates pods and an updater thread rewrites nodes, all against one
//! scheduler. At the end (and at checkpoints, with the threads paused) the cluster is
//! checked against the test's own table of what it created: no node over its pod
//! count or CPU, no host port taken twice on a node, the cache's totals equal the
//! sum of the requests the test gave its pods, and every live pod in exactly one
//! place (queued or on one node) while deleted pods are nowhere.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier, mpsc};

use parking_lot::{Mutex, RwLock};
use schedkit::framework::{Handle, Profile};
use schedkit::scheduler::{BindingCycle, ScheduleError, Scheduler, SchedulerEvents, TieBreak};
use schedkit::testing::{NodeBuilder, PodBuilder};

const NODES: usize = 8;
const ZONES: usize = 2;
const PORTS: [i32; 2] = [8080, 9090];

/// What the test made: uid -> (milli CPU, host port, zone selector).
type Made = HashMap<String, (i64, Option<i32>, Option<usize>)>;

fn node(i: usize, big: bool, generation: u64) -> schedkit::model::Node {
    NodeBuilder::new(&format!("node-{i}"))
        .cpu(if big { "64" } else { "32" })
        .memory("256Gi")
        .pods(30)
        .zone(&format!("z{}", i % ZONES))
        .label("churn", &format!("g{generation}"))
        .build()
}

fn make_pod(n: u64, made: &RwLock<Made>, events: &SchedulerEvents) {
    let uid = format!("p{n}");
    let cpu = [100, 200, 500][(n % 3) as usize];
    let port = n.is_multiple_of(5).then(|| PORTS[(n / 5 % 2) as usize]);
    let zone = n.is_multiple_of(7).then(|| (n / 7 % ZONES as u64) as usize);
    let mut b = PodBuilder::new(&uid)
        .uid(&uid)
        .cpu(&format!("{cpu}m"))
        .memory("64Mi")
        .label("pod-template-hash", &format!("h{n}"))
        .label("app", "stress");
    if let Some(p) = port {
        b = b.host_port(p);
    }
    if let Some(z) = zone {
        b = b.node_selector("topology.kubernetes.io/zone", &format!("z{z}"));
    }
    // Added before it is recorded: the deleter picks its victims from `made`.
    events.add_pod(b.build()).unwrap();
    made.write().insert(uid.clone(), (cpu, port, zone));
}

/// The invariants of the module docs; call with every thread paused.
fn check(s: &Scheduler, made: &Made, deleted: &HashSet<String>) {
    let cache = s.cache().lock();
    let mut placed = 0;
    for i in 0..NODES {
        let name = format!("node-{i}");
        let info = cache.node_info(&name).expect("nodes are never removed here");
        let mut cpu = 0;
        let mut ports = HashSet::new();
        for p in info.pods() {
            let (c, port, zone) = made.get(&*p.uid).unwrap_or_else(|| panic!("{name} holds unknown pod {}", p.uid));
            assert!(!deleted.contains(&*p.uid), "{name} holds deleted pod {}", p.uid);
            cpu += c;
            if let Some(port) = port {
                assert!(ports.insert(*port), "host port {port} twice on {name}");
            }
            if let Some(z) = zone {
                assert_eq!(i % ZONES, *z, "pod {} on {name} outside its zone", p.uid);
            }
        }
        assert_eq!(info.requested().milli_cpu, cpu, "{name}: cache CPU total vs the pods' requests");
        assert!(info.pods().len() <= 30, "{name} holds {} pods, allocatable 30", info.pods().len());
        assert!(cpu <= 32_000, "{name} over its CPU");
        placed += info.pods().len();
    }
    assert_eq!(cache.pod_count(), placed);
    drop(cache);
    let queue = s.queue().lock();
    let cache = s.cache().lock();
    for uid in made.keys() {
        let queued = queue.location(uid).is_some();
        let on_node = cache.pod_node(uid).is_some();
        if deleted.contains(uid) {
            assert!(!queued && !on_node, "deleted pod {uid} is still queued ({queued}) or placed ({on_node})");
        } else {
            assert!(queued ^ on_node, "pod {uid}: queued {queued}, placed {on_node}: want exactly one");
        }
    }
    assert_eq!(queue.len() + cache.pod_count(), made.len() - deleted.len(), "queue and cache hold unknown pods");
}

#[test]
fn concurrent_bindings_deletes_and_node_updates_keep_the_invariants() {
    let rounds: u64 = if cfg!(debug_assertions) { 6 } else { 40 };
    let per_round: u64 = 400;
    let handle = Handle::default();
    let mut s = Scheduler::builder()
        .profile(Profile::kube_default(&handle))
        .handle(handle)
        .parallelism(1)
        .tie_break(TieBreak::Random)
        .build();
    let events = s.events();
    for i in 0..NODES {
        events.add_node(node(i, false, 0)).unwrap();
    }
    let made = Arc::new(RwLock::new(Made::new()));
    let deleted = Arc::new(Mutex::new(HashSet::<String>::new()));
    let next = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    // Worker, deleter, updater, and the driver meet at each checkpoint twice: once to
    // pause, once to resume.
    let barrier = Arc::new(Barrier::new(4));
    let (tx, rx) = mpsc::sync_channel::<Option<BindingCycle>>(8);
    let queue = s.queue().clone();
    let binder = std::thread::spawn({
        let barrier = barrier.clone();
        move || {
            let mut bound = 0u64;
            for b in rx {
                let Some(b) = b else {
                    // Checkpoint: every binding sent before it has run.
                    barrier.wait();
                    barrier.wait();
                    continue;
                };
                let uid = b.pod().uid.clone();
                match b.run() {
                    Ok(_) => {
                        bound += 1;
                        let _ = queue.lock().done(&uid);
                    }
                    Err(e) => {
                        let rejectors: Vec<&'static str> = e.status.plugin().into_iter().collect();
                        let _ = queue.lock().requeue_failed(&uid, &rejectors);
                    }
                }
            }
            bound
        }
    });
    let failure: Arc<std::sync::Mutex<Option<String>>> = Arc::default();
    let pausable = |f: Box<dyn Fn(u64) + Send>| {
        let (stop, barrier, failure) = (stop.clone(), barrier.clone(), failure.clone());
        let pause = Arc::new(AtomicBool::new(false));
        let handle = std::thread::spawn({
            let pause = pause.clone();
            move || {
                let mut i = 0u64;
                while !stop.load(Ordering::Acquire) {
                    if pause.load(Ordering::Acquire) {
                        barrier.wait();
                        barrier.wait();
                        continue;
                    }
                    // A panic in `f` is reported at the next checkpoint instead of
                    // leaving the others waiting at the barrier forever.
                    if failure.lock().unwrap().is_none()
                        && let Err(p) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(i)))
                    {
                        let msg = p
                            .downcast_ref::<String>()
                            .cloned()
                            .or_else(|| p.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                            .unwrap_or_default();
                        *failure.lock().unwrap() = Some(msg);
                    }
                    i += 1;
                    std::thread::yield_now();
                }
            }
        });
        (handle, pause)
    };
    let (remover, pause_remover) = pausable(Box::new({
        let (events, made, deleted, next) = (events.clone(), made.clone(), deleted.clone(), next.clone());
        move |i| {
            // Delete a pod wherever it is (queued, in flight, assumed or bound),
            // then make a new one.
            let n = next.load(Ordering::Acquire);
            if n < 10 {
                return;
            }
            let uid = format!("p{}", (i * 7919) % n);
            if made.read().contains_key(&uid) && deleted.lock().insert(uid.clone()) {
                events.delete_pod(&uid).unwrap();
            }
            make_pod(next.fetch_add(1, Ordering::AcqRel), &made, &events);
        }
    }));
    let (updater, pause_updater) = pausable(Box::new({
        let events = events.clone();
        move |i| {
            let idx = (i as usize) % NODES;
            events.update_node(node(idx, i % 2 == 0, i)).unwrap();
        }
    }));
    let mut attempts = 0u64;
    for _round in 0..rounds {
        for _ in 0..per_round {
            make_pod(next.fetch_add(1, Ordering::AcqRel), &made, &events);
            // Keep the cluster near full: delete from the driver too once it's large.
            let Some(queued) = s.queue().lock().pop() else { continue };
            attempts += 1;
            match s.schedule_one(&queued.pod) {
                Ok(b) => tx.send(Some(b)).unwrap(),
                Err(e) => {
                    let rejectors: Vec<&'static str> = match &e {
                        ScheduleError::Unschedulable(fit) => fit.diagnosis.unschedulable_plugins.clone(),
                        _ => Vec::new(),
                    };
                    let _ = s.queue().lock().requeue_failed(&queued.pod.uid, &rejectors);
                }
            }
        }
        // Pause everyone, check, resume.
        pause_remover.store(true, Ordering::Release);
        pause_updater.store(true, Ordering::Release);
        tx.send(None).unwrap();
        barrier.wait();
        if let Some(msg) = failure.lock().unwrap().clone() {
            panic!("a churn thread failed: {msg}");
        }
        check(&s, &made.read(), &deleted.lock());
        pause_remover.store(false, Ordering::Release);
        pause_updater.store(false, Ordering::Release);
        barrier.wait();
    }
    stop.store(true, Ordering::Release);
    // A paused thread may be waiting at the barrier for one more checkpoint.
    drop(tx);
    remover.join().unwrap();
    updater.join().unwrap();
    let bound = binder.join().unwrap();
    check(&s, &made.read(), &deleted.lock());
    assert!(attempts >= rounds * per_round / 2, "the driver ran {attempts} attempts");
    assert!(bound > 0 && !deleted.lock().is_empty(), "bound {bound}, deleted some");
    println!("{attempts} attempts, {bound} bound, {} deleted, {} pods made", deleted.lock().len(), made.read().len());
}
