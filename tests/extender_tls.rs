//! The extender client over real HTTPS on 127.0.0.1 (feature `extender-tls`): a small
//! rustls server in the test, with the test-only CA and certificates of
//! `tests/fixtures/tls/` (see its README), answering Filter calls.
//!
//! Cases from upstream `makeTransport` (`pkg/scheduler/extender.go`) and client-go's
//! `TLSConfigFor` (`transport/transport.go`): CA-verified (file and base64 data), a
//! wrong CA refused, `insecure` and CA-less `enableHTTPS` accepting any certificate,
//! `serverName` overriding the URL's host, mutual TLS, the scheme taken from the URL
//! (not from `enableHTTPS`), and the configuration errors.
//!
//! Then schedkit's own extender server over HTTPS (`ExtenderServer::start_tls`), from
//! files and from PEM bytes, with and without client certificates, called by
//! schedkit's client.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use parking_lot::Mutex;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig, ServerConnection, StreamOwned};
use schedkit::config::{Extender as ExtenderConfig, ExtenderTlsConfig};
use schedkit::extender::{
    ExtenderConfigError, ExtenderServer, ExtenderService, HttpExtender, ServerOptions, ServerTls, ServerTlsConfig,
    ServerTlsError,
};
use schedkit::framework::extender::ExtenderError;
use schedkit::framework::{Extender, Handle, Profile};
use schedkit::snapshot::{Cache, NodeInfo, PodInfo, Snapshot};
use schedkit::testing::{NodeBuilder, PodBuilder};

fn fixture(name: &str) -> String {
    concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/tls/").to_owned() + name
}

fn read(name: &str) -> Vec<u8> {
    std::fs::read(fixture(name)).unwrap()
}

/// Base64 (standard alphabet, padded), as Go writes a `[]byte` in JSON.
fn base64(data: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in data.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

const ANSWER: &str = r#"{"NodeNames":["b"],"FailedNodes":{"a":"no GPU"},"Error":""}"#;

/// An HTTPS (or, without a certificate, plain HTTP) extender on 127.0.0.1 answering
/// every request with [`ANSWER`]; counts the requests it answered.
struct Server {
    addr: SocketAddr,
    answered: Arc<AtomicUsize>,
}

impl Server {
    /// `client_ca`: require a client certificate signed by it (mutual TLS).
    fn start(tls: bool, client_ca: Option<&str>) -> Server {
        let config = tls.then(|| {
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let chain = CertificateDer::pem_slice_iter(&read("server.pem")).collect::<Result<Vec<_>, _>>().unwrap();
            let key = PrivateKeyDer::from_pem_slice(&read("server.key")).unwrap();
            let builder = ServerConfig::builder_with_provider(provider.clone()).with_safe_default_protocol_versions();
            let builder = builder.unwrap();
            let builder = match client_ca {
                Some(ca) => {
                    let mut roots = RootCertStore::empty();
                    for c in CertificateDer::pem_slice_iter(&read(ca)) {
                        roots.add(c.unwrap()).unwrap();
                    }
                    let verifier =
                        WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider).build().unwrap();
                    builder.with_client_cert_verifier(verifier)
                }
                None => builder.with_no_client_auth(),
            };
            Arc::new(builder.with_single_cert(chain, key).unwrap())
        });
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let answered = Arc::new(AtomicUsize::new(0));
        let counter = answered.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { continue };
                let config = config.clone();
                let counter = counter.clone();
                std::thread::spawn(move || match config {
                    Some(config) => {
                        let Ok(session) = ServerConnection::new(config) else { return };
                        serve(StreamOwned::new(session, conn), &counter);
                    }
                    None => serve(conn, &counter),
                });
            }
        });
        Server { addr, answered }
    }

    fn answered(&self) -> usize {
        self.answered.load(Ordering::SeqCst)
    }
}

/// Answers requests on one keep-alive connection until it closes or fails (a refused
/// handshake fails the first read).
fn serve<S: Read + Write>(stream: S, answered: &AtomicUsize) {
    let mut stream = BufReader::new(stream);
    loop {
        let mut len = 0usize;
        let mut line = String::new();
        loop {
            line.clear();
            match stream.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) if line == "\r\n" => break,
                Ok(_) => {}
            }
            if let Some((k, v)) = line.split_once(':')
                && k.eq_ignore_ascii_case("content-length")
            {
                len = v.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; len];
        if stream.read_exact(&mut body).is_err() {
            return;
        }
        let response = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{ANSWER}",
            ANSWER.len()
        );
        let w = stream.get_mut();
        if w.write_all(response.as_bytes()).and_then(|()| w.flush()).is_err() {
            return;
        }
        answered.fetch_add(1, Ordering::SeqCst);
    }
}

fn snapshot() -> Snapshot {
    let mut cache = Cache::new();
    for n in ["a", "b"] {
        cache.add_node(NodeBuilder::new(n).cpu("4").build()).unwrap();
    }
    let mut snap = Snapshot::default();
    cache.update_snapshot(&mut snap);
    snap
}

fn config(url: String, enable_https: bool, tls: Option<ExtenderTlsConfig>) -> ExtenderConfig {
    ExtenderConfig {
        url_prefix: url,
        filter_verb: "filter".into(),
        node_cache_capable: true,
        enable_https,
        tls_config: tls,
        ..ExtenderConfig::default()
    }
}

/// One Filter call: the passing node names, or the error.
fn filter(client: &HttpExtender) -> Result<Vec<String>, ExtenderError> {
    let snap = snapshot();
    let nodes: Vec<&NodeInfo> = snap.nodes().iter().map(|n| &**n).collect();
    let pod = PodInfo::new(PodBuilder::new("p").cpu("1").build()).unwrap();
    let r = client.filter(&pod, &nodes)?;
    assert_eq!(r.failed["a"], "no GPU");
    Ok(r.passed.iter().map(|&k| nodes[k].node().name().to_owned()).collect())
}

fn ca_file(name: &str) -> ExtenderTlsConfig {
    ExtenderTlsConfig { ca_file: fixture(name), ..ExtenderTlsConfig::default() }
}

#[test]
fn ca_verified_https_calls_succeed() {
    let server = Server::start(true, None);
    // The CA as a file, by IP (SAN IP:127.0.0.1) and by name (SAN DNS:localhost).
    for host in ["127.0.0.1".to_owned(), "localhost".to_owned()] {
        let url = format!("https://{host}:{}/scheduler/", server.addr.port());
        let client = HttpExtender::new(&config(url, true, Some(ca_file("ca.pem")))).unwrap();
        assert_eq!(filter(&client).unwrap(), ["b"], "{host}");
        // A second call reuses the connection (and its TLS session).
        assert_eq!(filter(&client).unwrap(), ["b"], "{host}");
    }
    // The CA as base64 data (Go's []byte in JSON), which wins over a bad caFile.
    let tls = ExtenderTlsConfig {
        ca_data: base64(&read("ca.pem")),
        ca_file: "/nonexistent/ca.pem".into(),
        ..ExtenderTlsConfig::default()
    };
    let client = HttpExtender::new(&config(format!("https://{}", server.addr), false, Some(tls))).unwrap();
    assert_eq!(filter(&client).unwrap(), ["b"]);
    assert_eq!(server.answered(), 5);
}

#[test]
fn a_wrong_ca_is_refused_with_the_cause() {
    let server = Server::start(true, None);
    let client =
        HttpExtender::new(&config(format!("https://{}", server.addr), true, Some(ca_file("other-ca.pem")))).unwrap();
    let err = filter(&client).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, ExtenderError::Transport { .. }), "{err:?}");
    assert!(text.starts_with(&format!("Post \"https://{}/filter\": ", server.addr)), "{text}");
    assert!(text.contains("invalid peer certificate") && text.contains("UnknownIssuer"), "{text}");
    assert_eq!(server.answered(), 0);
}

#[test]
fn insecure_and_ca_less_enable_https_accept_any_certificate() {
    let server = Server::start(true, None);
    let url = format!("https://{}", server.addr);
    // tlsConfig.insecure.
    let insecure = ExtenderTlsConfig { insecure: true, ..ExtenderTlsConfig::default() };
    let client = HttpExtender::new(&config(url.clone(), false, Some(insecure))).unwrap();
    assert_eq!(filter(&client).unwrap(), ["b"]);
    // makeTransport: enableHTTPS without a CA sets Insecure, with or without tlsConfig.
    for tls in [None, Some(ExtenderTlsConfig { server_name: "not-on-the-cert.example".into(), ..Default::default() })] {
        let client = HttpExtender::new(&config(url.clone(), true, tls)).unwrap();
        assert_eq!(filter(&client).unwrap(), ["b"]);
    }
    assert_eq!(server.answered(), 3);
}

#[test]
fn server_name_overrides_the_url_host() {
    let server = Server::start(true, None);
    let url = format!("https://{}", server.addr);
    let named = |name: &str| ExtenderTlsConfig { server_name: name.into(), ..ca_file("ca.pem") };
    // A name only the certificate's SAN carries, reached through the IP.
    let client = HttpExtender::new(&config(url.clone(), true, Some(named("extender.schedkit.test")))).unwrap();
    assert_eq!(filter(&client).unwrap(), ["b"]);
    // A name the certificate does not carry: refused, although the IP would verify.
    let client = HttpExtender::new(&config(url, true, Some(named("elsewhere.schedkit.test")))).unwrap();
    let text = filter(&client).unwrap_err().to_string();
    assert!(text.contains("certificate not valid for name \"elsewhere.schedkit.test\""), "{text}");
    assert_eq!(server.answered(), 1);
}

#[test]
fn mutual_tls_sends_the_client_certificate() {
    let server = Server::start(true, Some("ca.pem"));
    let url = format!("https://{}", server.addr);
    // Without a client certificate the server ends the handshake.
    let client = HttpExtender::new(&config(url.clone(), true, Some(ca_file("ca.pem")))).unwrap();
    assert!(matches!(filter(&client), Err(ExtenderError::Transport { .. })));
    // Files.
    let files =
        ExtenderTlsConfig { cert_file: fixture("client.pem"), key_file: fixture("client.key"), ..ca_file("ca.pem") };
    let client = HttpExtender::new(&config(url.clone(), true, Some(files))).unwrap();
    assert_eq!(filter(&client).unwrap(), ["b"]);
    // Data, all three.
    let data = ExtenderTlsConfig {
        ca_data: base64(&read("ca.pem")),
        cert_data: base64(&read("client.pem")),
        key_data: base64(&read("client.key")),
        ..ExtenderTlsConfig::default()
    };
    let client = HttpExtender::new(&config(url.clone(), true, Some(data))).unwrap();
    assert_eq!(filter(&client).unwrap(), ["b"]);
    // A certificate without a key is no client certificate (client-go `HasCertAuth`).
    let half = ExtenderTlsConfig { cert_file: fixture("client.pem"), ..ca_file("ca.pem") };
    let client = HttpExtender::new(&config(url, true, Some(half))).unwrap();
    assert!(filter(&client).is_err());
    assert_eq!(server.answered(), 2);
}

#[test]
fn the_scheme_comes_from_the_url_not_from_enable_https() {
    // Upstream posts to urlPrefix as written: enableHTTPS with http:// is plain HTTP.
    let server = Server::start(false, None);
    let client = HttpExtender::new(&config(format!("http://{}", server.addr), true, None)).unwrap();
    assert_eq!(filter(&client).unwrap(), ["b"]);
    // ...and an https:// prefix without enableHTTPS is HTTPS, verified (system roots
    // by default; here the test CA).
    let tls_server = Server::start(true, None);
    let client =
        HttpExtender::new(&config(format!("HTTPS://{}", tls_server.addr), false, Some(ca_file("ca.pem")))).unwrap();
    assert_eq!(filter(&client).unwrap(), ["b"]);
    assert_eq!((server.answered(), tls_server.answered()), (1, 1));
}

#[test]
fn bad_tls_configurations_are_typed_errors() {
    let url = "https://127.0.0.1:1".to_owned();
    let build = |tls: ExtenderTlsConfig| HttpExtender::new(&config(url.clone(), true, Some(tls))).unwrap_err();
    let insecure_with_ca = build(ExtenderTlsConfig { insecure: true, ..ca_file("ca.pem") });
    assert!(matches!(insecure_with_ca, ExtenderConfigError::TlsInsecureWithCa { .. }));
    assert!(
        insecure_with_ca
            .to_string()
            .ends_with("specifying a root certificates file with the insecure flag is not allowed")
    );

    let missing = build(ca_file("no-such.pem"));
    assert!(
        matches!(&missing, ExtenderConfigError::TlsFile { path, .. } if path.ends_with("no-such.pem")),
        "{missing}"
    );

    let not_base64 = build(ExtenderTlsConfig { ca_data: "%%%".into(), ..ExtenderTlsConfig::default() });
    assert!(matches!(not_base64, ExtenderConfigError::TlsData { field: "caData", .. }), "{not_base64}");

    let not_pem = build(ExtenderTlsConfig { ca_data: base64(b"hello"), ..ExtenderTlsConfig::default() });
    assert!(matches!(not_pem, ExtenderConfigError::TlsData { field: "caData/caFile", .. }), "{not_pem}");
    assert!(not_pem.to_string().contains("unable to load root certificates"), "{not_pem}");

    // A key that is not the certificate's.
    let mismatch = build(ExtenderTlsConfig {
        cert_file: fixture("client.pem"),
        key_file: fixture("server.key"),
        ..ca_file("ca.pem")
    });
    assert!(matches!(mismatch, ExtenderConfigError::TlsSetup { .. }), "{mismatch}");
    assert!(mismatch.to_string().contains("client certificate"), "{mismatch}");

    let no_key = build(ExtenderTlsConfig {
        cert_file: fixture("client.pem"),
        key_data: base64(b"-----BEGIN NOTHING-----\n-----END NOTHING-----\n"),
        ..ca_file("ca.pem")
    });
    assert!(matches!(no_key, ExtenderConfigError::TlsData { field: "keyData/keyFile", .. }), "{no_key}");

    let bad_name = build(ExtenderTlsConfig { server_name: "not a name".into(), ..ca_file("ca.pem") });
    assert!(matches!(bad_name, ExtenderConfigError::TlsSetup { .. }), "{bad_name}");

    let ftp = HttpExtender::new(&config("ftp://x".into(), false, None)).unwrap_err();
    assert!(matches!(ftp, ExtenderConfigError::Url { .. }));
}

#[test]
fn the_config_file_carries_tls_as_kube_scheduler_reads_it() {
    // KubeSchedulerConfiguration's extenders[].tlsConfig: []byte fields are base64.
    let server = Server::start(true, None);
    let json = serde_json::json!({
        "urlPrefix": format!("https://{}/", server.addr),
        "filterVerb": "filter",
        "nodeCacheCapable": true,
        "enableHTTPS": true,
        "tlsConfig": {"serverName": "localhost", "caData": base64(&read("ca.pem"))},
    });
    let entry: ExtenderConfig = serde_json::from_value(json).unwrap();
    let client = HttpExtender::new(&entry).unwrap();
    assert_eq!(filter(&client).unwrap(), ["b"]);
}

// ---------------------------------------------------------------------------------
// schedkit's own extender server over HTTPS.

/// The default profile served over HTTPS for nodes `a` (1 CPU) and `b` (8 CPUs).
fn schedkit_server(tls: &ServerTlsConfig) -> ExtenderServer {
    let cache = Arc::new(Mutex::new(Cache::new()));
    for (n, cpu) in [("a", "1"), ("b", "8")] {
        cache.lock().add_node(NodeBuilder::new(n).cpu(cpu).build()).unwrap();
    }
    let profile = Arc::new(Profile::kube_default(&Handle::default()));
    let service = Arc::new(ExtenderService::new(profile, cache));
    let options = ServerOptions { workers: 1, ..ServerOptions::default() };
    ExtenderServer::start_tls(service, "127.0.0.1:0", options, &ServerTls::new(tls).unwrap()).unwrap()
}

/// A 4-CPU pod through the server: the passing nodes, or the error.
fn filter_4cpu(client: &HttpExtender) -> Result<Vec<String>, ExtenderError> {
    let snap = snapshot();
    let nodes: Vec<&NodeInfo> = snap.nodes().iter().map(|n| &**n).collect();
    let pod = PodInfo::new(PodBuilder::new("p").cpu("4").build()).unwrap();
    let r = client.filter(&pod, &nodes)?;
    // 4 CPUs on a 1-CPU node: unresolvable by preemption (NodeResourcesFit).
    assert!(r.failed_and_unresolvable.get("a").is_some_and(|m| m.contains("Insufficient cpu")), "{r:?}");
    Ok(r.passed.iter().map(|&k| nodes[k].node().name().to_owned()).collect())
}

#[test]
fn schedkit_server_serves_https_from_files_and_pem_bytes() {
    let files =
        ServerTlsConfig { cert_file: fixture("server.pem"), key_file: fixture("server.key"), ..Default::default() };
    let bytes = ServerTlsConfig {
        cert_data: read("server.pem"),
        key_data: read("server.key"),
        // Bytes win over a file, as `certData` over `certFile`.
        cert_file: "/nonexistent/server.pem".into(),
        ..Default::default()
    };
    for (label, tls) in [("files", files), ("bytes", bytes)] {
        let server = schedkit_server(&tls);
        let url = server.url();
        assert_eq!(url, format!("https://{}", server.local_addr()), "{label}");
        let client = HttpExtender::new(&config(format!("{url}/schedkit"), true, Some(ca_file("ca.pem")))).unwrap();
        assert_eq!(filter_4cpu(&client).unwrap(), ["b"], "{label}");
        assert_eq!(filter_4cpu(&client).unwrap(), ["b"], "{label}: a kept connection");
        // By name (SAN DNS:localhost).
        let by_name = format!("https://localhost:{}", server.local_addr().port());
        let client = HttpExtender::new(&config(by_name, false, Some(ca_file("ca.pem")))).unwrap();
        assert_eq!(filter_4cpu(&client).unwrap(), ["b"], "{label}");
        // A client trusting another CA refuses the server's certificate.
        let client = HttpExtender::new(&config(url.clone(), true, Some(ca_file("other-ca.pem")))).unwrap();
        let err = filter_4cpu(&client).unwrap_err().to_string();
        assert!(err.contains("UnknownIssuer"), "{label}: {err}");
        // Plain HTTP to the HTTPS port: the handshake fails and the call with it.
        let plain = format!("http://{}", server.local_addr());
        let client = HttpExtender::new(&config(plain, false, None)).unwrap();
        assert!(matches!(filter_4cpu(&client), Err(ExtenderError::Transport { .. })), "{label}");
        server.shutdown();
    }
}

#[test]
fn schedkit_server_with_a_client_ca_requires_client_certificates() {
    let server = schedkit_server(&ServerTlsConfig {
        cert_file: fixture("server.pem"),
        key_file: fixture("server.key"),
        client_ca_data: read("ca.pem"),
        ..Default::default()
    });
    let url = server.url();
    let client = HttpExtender::new(&config(url.clone(), true, Some(ca_file("ca.pem")))).unwrap();
    assert!(matches!(filter_4cpu(&client), Err(ExtenderError::Transport { .. })), "no client certificate");
    let with_cert =
        ExtenderTlsConfig { cert_file: fixture("client.pem"), key_file: fixture("client.key"), ..ca_file("ca.pem") };
    let client = HttpExtender::new(&config(url, true, Some(with_cert))).unwrap();
    assert_eq!(filter_4cpu(&client).unwrap(), ["b"]);
    server.shutdown();
}

#[test]
fn bad_server_tls_material_is_a_typed_error() {
    let new = |tls: ServerTlsConfig| ServerTls::new(&tls).unwrap_err();
    assert_eq!(new(ServerTlsConfig::default()), ServerTlsError::Missing { field: "cert" });
    assert_eq!(
        new(ServerTlsConfig { cert_file: fixture("server.pem"), ..Default::default() }),
        ServerTlsError::Missing { field: "key" }
    );
    let missing = new(ServerTlsConfig {
        cert_file: fixture("no-such.pem"),
        key_file: fixture("server.key"),
        ..Default::default()
    });
    assert!(matches!(&missing, ServerTlsError::File { path, .. } if path.ends_with("no-such.pem")), "{missing}");
    let not_pem =
        new(ServerTlsConfig { cert_data: b"hello".to_vec(), key_data: read("server.key"), ..Default::default() });
    assert!(matches!(not_pem, ServerTlsError::Pem { field: "cert", .. }), "{not_pem}");
    let no_key =
        new(ServerTlsConfig { cert_data: read("server.pem"), key_data: b"hello".to_vec(), ..Default::default() });
    assert!(matches!(no_key, ServerTlsError::Pem { field: "key", .. }), "{no_key}");
    let bad_ca = new(ServerTlsConfig {
        cert_data: read("server.pem"),
        key_data: read("server.key"),
        client_ca_data: b"hello".to_vec(),
        ..Default::default()
    });
    assert!(matches!(bad_ca, ServerTlsError::Pem { field: "client_ca", .. }), "{bad_ca}");
    // The client's key with the server's certificate.
    let mismatch =
        new(ServerTlsConfig { cert_data: read("server.pem"), key_data: read("client.key"), ..Default::default() });
    assert!(matches!(mismatch, ServerTlsError::Setup { .. }), "{mismatch}");
}
