//! The extender protocol on loopback (feature `extender`):
//! - `extender/server/filter_names/1000`: one request to a schedkit extender server
//!   (one worker thread, node-cache-capable: 1,000 node names against the default
//!   profile's Filter plugins) from a keep-alive client that only writes and reads
//!   bytes; requests/s = 1 / time. A p50/p99 line over 5,000 requests is printed too.
//! - `extender/client/filter_1000` against `extender/client/raw_round_trip_1000`: the
//!   client's Filter call (encoding the pod and 1,000 names, decoding 1,000 names back
//!   and mapping them to the nodes sent) and a bare round trip of the same request body
//!   (the one the client sent, read back from the server) to the same server, which
//!   answers both from the same bytes in memory; their difference is the client's
//!   overhead (its encoding, decoding, HTTP framing and name resolution). A line
//!   `extender/client/overhead_1000` gives the median of 3,000 alternating pairs
//!   (every other pair raw call first) and each call's median by its place in a pair.
//!
//! `cargo bench --features extender --bench extender`; `EXTENDER_BENCH_CALLS=N` sets
//! how many requests the p50/p99 and overhead lines take (default 5,000 and 3,000;
//! a small N for runs under strace or callgrind).
#![expect(missing_docs, reason = "criterion_group! generates an undocumented pub fn")]

use std::hint::black_box;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use parking_lot::Mutex;
use schedkit::config::Extender as ExtenderConfig;
use schedkit::extender::{ExtenderServer, ExtenderService, HttpExtender, ServerOptions};
use schedkit::framework::{Extender, Handle, Profile};
use schedkit::snapshot::{Cache, NodeInfo, PodInfo, Snapshot};
use schedkit::testing::{NodeBuilder, PodBuilder};

const NODES: usize = 1000;

/// `EXTENDER_BENCH_CALLS`, else `default`.
fn calls(default: usize) -> usize {
    std::env::var("EXTENDER_BENCH_CALLS").ok().and_then(|v| v.parse().ok()).filter(|&n| n > 0).unwrap_or(default)
}

fn node_name(i: usize) -> String {
    format!("node-{i:04}")
}

/// A keep-alive HTTP/1.1 connection that sends prepared bytes and reads one response.
struct RawClient {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
    buf: Vec<u8>,
}

impl RawClient {
    fn connect(addr: SocketAddr) -> RawClient {
        let s = TcpStream::connect(addr).unwrap();
        s.set_nodelay(true).unwrap();
        RawClient { reader: BufReader::new(s.try_clone().unwrap()), writer: s, buf: Vec::new() }
    }

    fn request(path: &str, body: &[u8]) -> Vec<u8> {
        let mut r = format!(
            "POST {path} HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
        .into_bytes();
        r.extend_from_slice(body);
        r
    }

    /// Sends `req`, returns the response body's length.
    fn round_trip(&mut self, req: &[u8]) -> usize {
        self.writer.write_all(req).unwrap();
        let mut len = 0usize;
        let mut line = String::new();
        loop {
            line.clear();
            self.reader.read_line(&mut line).unwrap();
            if line == "\r\n" || line.is_empty() {
                break;
            }
            if let Some((k, v)) = line.split_once(':')
                && k.eq_ignore_ascii_case("content-length")
            {
                len = v.trim().parse().unwrap();
            }
        }
        self.buf.resize(len, 0);
        self.reader.read_exact(&mut self.buf).unwrap();
        len
    }
}

/// A server answering every request on a connection with the same bytes, whoever
/// sends it (so the client's call and the raw round trip cost the server the same);
/// it keeps the last request body it read in `last_body`.
fn canned_server(response_body: &[u8], last_body: Arc<Mutex<Vec<u8>>>) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let head =
        format!("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n", response_body.len());
    let response: Arc<Vec<u8>> = Arc::new([head.as_bytes(), response_body].concat());
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(conn) = conn else { continue };
            let response = response.clone();
            let last_body = last_body.clone();
            std::thread::spawn(move || {
                let _ = conn.set_nodelay(true);
                let mut reader = BufReader::new(conn.try_clone().unwrap());
                let mut writer = conn;
                let mut body = Vec::new();
                loop {
                    let mut len = 0usize;
                    let mut line = String::new();
                    loop {
                        line.clear();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        if line == "\r\n" {
                            break;
                        }
                        if let Some((k, v)) = line.split_once(':')
                            && k.eq_ignore_ascii_case("content-length")
                        {
                            len = v.trim().parse().unwrap_or(0);
                        }
                    }
                    body.resize(len, 0);
                    if reader.read_exact(&mut body).is_err() {
                        return;
                    }
                    last_body.lock().clone_from(&body);
                    if writer.write_all(&response).is_err() {
                        return;
                    }
                }
            });
        }
    });
    addr
}

fn cluster() -> Vec<schedkit::model::Node> {
    (0..NODES).map(|i| NodeBuilder::new(&node_name(i)).cpu("32").memory("128Gi").pods(110).build()).collect()
}

fn filter_body(pod: &schedkit::model::Pod, names: &[String]) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({"Pod": pod, "Nodes": null, "NodeNames": names})).unwrap()
}

fn bench_server(c: &mut Criterion) {
    let cache = Arc::new(Mutex::new(Cache::new()));
    for n in cluster() {
        cache.lock().add_node(n).unwrap();
    }
    let handle = Handle::default();
    let service = Arc::new(ExtenderService::new(Arc::new(Profile::kube_default(&handle)), cache));
    let server =
        ExtenderServer::start(service, "127.0.0.1:0", ServerOptions { workers: 1, ..ServerOptions::default() })
            .unwrap();
    let names: Vec<String> = (0..NODES).map(node_name).collect();
    let pod = PodBuilder::new("bench").uid("uid-bench").cpu("500m").memory("1Gi").build();
    let req = RawClient::request("/filter", &filter_body(&pod, &names));
    let mut client = RawClient::connect(server.local_addr());
    assert!(client.round_trip(&req) > NODES * 10, "the answer lists the nodes");

    // Latency percentiles over many requests (criterion reports the median).
    let mut times: Vec<Duration> = (0..calls(5000))
        .map(|_| {
            let t = Instant::now();
            black_box(client.round_trip(&req));
            t.elapsed()
        })
        .collect();
    times.sort_unstable();
    let pct = |p: usize| times[times.len() * p / 100 - usize::from(p == 100)];
    println!(
        "extender/server/filter_names/1000: p50 {:?}, p99 {:?}, max {:?} over {} requests; {:.0} requests/s at p50",
        pct(50),
        pct(99),
        pct(100),
        times.len(),
        1.0 / pct(50).as_secs_f64()
    );

    let mut g = c.benchmark_group("extender/server");
    g.bench_function("filter_names/1000", |b| b.iter(|| black_box(client.round_trip(&req))));
    g.finish();
    drop(client);
    server.shutdown();
}

fn bench_client(c: &mut Criterion) {
    let mut cache = Cache::new();
    for n in cluster() {
        cache.add_node(n).unwrap();
    }
    let mut snap = Snapshot::default();
    cache.update_snapshot(&mut snap);
    let nodes: Vec<&NodeInfo> = snap.nodes().iter().map(|n| &**n).collect();
    let names: Vec<String> = nodes.iter().map(|n| n.node().name().to_owned()).collect();
    // The answer a node-cache-capable extender gives when every node passes.
    let answer = serde_json::to_vec(&serde_json::json!({
        "Nodes": null, "NodeNames": names, "FailedNodes": {}, "FailedAndUnresolvableNodes": null, "Error": ""
    }))
    .unwrap();
    let last_body = Arc::new(Mutex::new(Vec::new()));
    let addr = canned_server(&answer, last_body.clone());
    let pod = PodInfo::new(PodBuilder::new("bench").uid("uid-bench").cpu("500m").memory("1Gi").build()).unwrap();
    let client = HttpExtender::new(&ExtenderConfig {
        url_prefix: format!("http://{addr}"),
        filter_verb: "filter".into(),
        node_cache_capable: true,
        ..ExtenderConfig::default()
    })
    .unwrap();
    assert_eq!(client.filter(&pod, &nodes).unwrap().passed.len(), NODES);
    // The raw round trip sends the very body the client sent (read back from the
    // server), to the same server, and reads the same answer.
    let sent = last_body.lock().clone();
    let expected: serde_json::Value = serde_json::from_slice(&filter_body(&pod.pod, &names)).unwrap();
    assert_eq!(serde_json::from_slice::<serde_json::Value>(&sent).unwrap(), expected);
    let req = RawClient::request("/filter", &sent);
    let mut raw = RawClient::connect(addr);

    // The overhead in one run: client calls and raw round trips alternate, so both see
    // the same machine; the median of the per-pair differences is the overhead. Every
    // other pair runs the raw call first: on a machine whose idle CPUs halt, the
    // second call of a pair can pay for a wake-up the first did not (or the other way
    // round), so the medians by position are printed too.
    let pairs = calls(3000);
    let mut client_t = [Vec::with_capacity(pairs), Vec::with_capacity(pairs)];
    let mut raw_t = [Vec::with_capacity(pairs), Vec::with_capacity(pairs)];
    let mut diff = Vec::with_capacity(pairs);
    let time_client = || {
        let t = Instant::now();
        black_box(client.filter(&pod, &nodes).unwrap());
        t.elapsed()
    };
    let mut time_raw = || {
        let t = Instant::now();
        black_box(raw.round_trip(&req));
        t.elapsed()
    };
    for i in 0..pairs {
        let raw_first = i % 2 == 1;
        let (a, r) = if raw_first {
            let r = time_raw();
            (time_client(), r)
        } else {
            (time_client(), time_raw())
        };
        client_t[usize::from(raw_first)].push(a);
        raw_t[usize::from(!raw_first)].push(r);
        diff.push(a.as_nanos() as i128 - r.as_nanos() as i128);
    }
    let p50 = |v: &mut Vec<Duration>| {
        v.sort_unstable();
        v.get(v.len() / 2).copied().unwrap_or_default()
    };
    diff.sort_unstable();
    let [c1, c2] = &mut client_t;
    let [r1, r2] = &mut raw_t;
    println!(
        "extender/client/overhead_1000: per-pair difference p50 {:.1} µs over {} pairs; p50 first/second in a pair: client {:?} / {:?}, raw {:?} / {:?}",
        diff[pairs / 2] as f64 / 1000.0,
        diff.len(),
        p50(c1),
        p50(c2),
        p50(r1),
        p50(r2),
    );

    let mut g = c.benchmark_group("extender/client");
    g.bench_function("filter_1000", |b| b.iter(|| black_box(client.filter(&pod, &nodes).unwrap())));
    g.bench_function("raw_round_trip_1000", |b| b.iter(|| black_box(raw.round_trip(&req))));
    g.finish();
}

criterion_group!(benches, bench_server, bench_client);
criterion_main!(benches);
