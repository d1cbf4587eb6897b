//! [`HttpExtender`]: kube-scheduler's HTTP extender client (upstream `HTTPExtender`,
//! `pkg/scheduler/extender.go`): its own HTTP/1.1 exchange on kept connections for a
//! plain `http://` extender reached directly ([`super::http1`]), a blocking `ureq`
//! agent for HTTPS and proxies; one of each per extender.

use std::collections::BTreeMap;
use std::io::Read;
use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use serde::Serialize;
use serde::de::DeserializeOwned;

use ureq::unversioned::transport::{ConnectProxyConnector, Connector};

use super::answer::{SentNames, decode_filter_answer};
use super::http1::Direct;
use super::request::{ArgsOut, Items, NameScratch, Names, NodesOut, write_json_str, write_names};
use super::resolve::ExtenderResolver;
use super::tcp::TcpConnector;
use super::wire;
use crate::config::Extender as ExtenderConfig;
use crate::framework::extender::{
    ExtenderBinding, ExtenderError, ExtenderFilterResult, HostPriority, NameFinder, Victims, pod_names_managed_resource,
};
use crate::framework::{Extender, Extenders};
use crate::model::{Pod, Symbol};
use crate::snapshot::{NodeInfo, PodInfo, Snapshot};

/// Upstream `DefaultExtenderTimeout`: the call timeout when `httpTimeout` is 0 or unset.
pub const DEFAULT_EXTENDER_TIMEOUT: Duration = Duration::from_secs(5);
/// The largest response body read (larger ones are a decode error): 64 MiB, room for
/// a NodeList of thousands of nodes.
pub const MAX_RESPONSE_BYTES: u64 = 64 << 20;

/// An `extenders[]` entry that cannot be turned into a client.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ExtenderConfigError {
    /// `httpTimeout` is not a Go duration.
    #[error("extender {url:?}: httpTimeout {value:?}: {message}")]
    Timeout {
        /// The URL prefix.
        url: String,
        /// The value.
        value: String,
        /// The parser's message.
        message: String,
    },
    /// `urlPrefix` is not an `http://` URL (or `https://` with feature `extender-tls`).
    #[error("extender {url:?}: urlPrefix must be an http:// or https:// URL")]
    Url {
        /// The URL prefix.
        url: String,
    },
    /// HTTPS was asked for; this build has no TLS backend (feature `extender-tls`).
    #[error(
        "extender {url:?}: enableHTTPS, tlsConfig or an https:// urlPrefix needs a TLS backend, which this build does not have (feature extender-tls)"
    )]
    Tls {
        /// The URL prefix.
        url: String,
    },
    /// `tlsConfig.insecure` with a CA (client-go `TLSConfigFor`'s refusal).
    #[error("extender {url:?}: specifying a root certificates file with the insecure flag is not allowed")]
    TlsInsecureWithCa {
        /// The URL prefix.
        url: String,
    },
    /// A `tlsConfig` file could not be read.
    #[error("extender {url:?}: tlsConfig: reading {path:?}: {message}")]
    TlsFile {
        /// The URL prefix.
        url: String,
        /// The file.
        path: String,
        /// The operating system's message.
        message: String,
    },
    /// A `tlsConfig` value is not base64 or not PEM of the right kind.
    #[error("extender {url:?}: tlsConfig.{field}: {message}")]
    TlsData {
        /// The URL prefix.
        url: String,
        /// The field(s): `caData`, or `caData/caFile` when the PEM is wrong.
        field: &'static str,
        /// What is wrong.
        message: String,
    },
    /// The TLS client could not be set up from valid data: a key that does not
    /// match its certificate, a `serverName` that is not a DNS name or IP address,
    /// no system roots to verify with.
    #[error("extender {url:?}: tlsConfig: {message}")]
    TlsSetup {
        /// The URL prefix.
        url: String,
        /// What is wrong.
        message: String,
    },
}

/// One HTTP extender, built from a KubeSchedulerConfiguration `extenders[]` entry.
///
/// Calls `POST <urlPrefix without trailing '/'>/<verb>` with a JSON body; any status
/// but 200, a transport error (refused, reset, the `httpTimeout` passed) or a body
/// that is not the verb's result is an [`ExtenderError`], which fails the cycle
/// unless the extender is `ignorable` (Filter, Bind) and never does for Prioritize.
/// Node-cache-capable extenders get node names, others whole nodes.
///
/// ```
/// use schedkit::config::Extender as Config;
/// use schedkit::extender::HttpExtender;
/// use schedkit::framework::Extender;
///
/// let e = HttpExtender::new(&Config {
///     url_prefix: "http://127.0.0.1:8888/scheduler/".into(),
///     filter_verb: "filter".into(),
///     node_cache_capable: true,
///     ..Config::default()
/// })
/// .unwrap();
/// assert_eq!(e.name(), "http://127.0.0.1:8888/scheduler/");
/// assert_eq!(e.verb_url("filter"), "http://127.0.0.1:8888/scheduler/filter");
/// assert!(e.is_filter() && !e.is_prioritizer() && !e.is_binder());
/// ```
pub struct HttpExtender {
    url_prefix: String,
    filter_verb: String,
    prioritize_verb: String,
    preempt_verb: String,
    bind_verb: String,
    weight: i64,
    node_cache_capable: bool,
    managed: Vec<Symbol>,
    ignorable: bool,
    agent: ureq::Agent,
    /// The own HTTP/1.1 path, when the extender is plain HTTP without a proxy.
    direct: Option<Direct>,
    /// The verbs' URLs, built once: filter, prioritize, preempt, bind.
    urls: [String; 4],
    /// The verbs' request heads up to the body's length, for the own HTTP/1.1 path
    /// (see [`Direct::head_prefix`]); empty without it.
    heads: [Vec<u8>; 4],
    /// Request and response buffers kept between calls (one pair per concurrent call).
    buffers: Mutex<Vec<Buffers>>,
}

/// One call's request body, response body and passing positions, reused.
#[derive(Default)]
struct Buffers {
    /// The request's head (own HTTP/1.1 path only).
    head: Vec<u8>,
    request: Vec<u8>,
    /// The answer's bytes, then bytes of earlier answers: kept at full length so
    /// that reading into it never zeroes it again (`read_to_end` would, per call).
    response: Vec<u8>,
    /// Where the last answer's body starts in `response` (after its head on the own
    /// HTTP/1.1 path).
    body_start: usize,
    /// Where the last answer's body ends in `response`.
    response_len: usize,
    passed: Vec<usize>,
    names: NameScratch,
}

impl Buffers {
    /// The last answer's body.
    fn body(&self) -> &[u8] {
        &self.response[self.body_start..self.response_len]
    }
}

/// Reads `r` to its end into `buf` from its start and says how much it read; `buf`
/// grows (zero-filled once) when full and is never shortened.
fn read_body(r: &mut impl Read, buf: &mut Vec<u8>) -> std::io::Result<usize> {
    let mut n = 0;
    loop {
        if n == buf.len() {
            buf.resize((2 * n).max(16 << 10), 0);
        }
        match r.read(&mut buf[n..]) {
            Ok(0) => return Ok(n),
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// Buffers larger than this after a call are dropped rather than kept.
const KEEP_BUFFER_BYTES: usize = 4 << 20;

const FILTER: usize = 0;
const PRIORITIZE: usize = 1;
const PREEMPT: usize = 2;
const BIND: usize = 3;

impl std::fmt::Debug for HttpExtender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpExtender").field("url_prefix", &self.url_prefix).finish_non_exhaustive()
    }
}

impl HttpExtender {
    /// A client for one `extenders[]` entry (upstream `NewHTTPExtender`).
    ///
    /// With feature `extender-tls`, TLS follows upstream `makeTransport`: the scheme
    /// comes from `urlPrefix` only (`enableHTTPS` with an `http://` prefix still
    /// talks plain HTTP, as kube-scheduler does); `enableHTTPS` without a CA skips
    /// certificate verification; a CA (`caData` over `caFile`) is the only root
    /// trusted, else the system's roots; `certData`/`keyData` (or the files) give a
    /// client certificate; `serverName` replaces the URL's host for verification and
    /// SNI. Files are read here, once. Without the feature, `enableHTTPS`,
    /// `tlsConfig` or an `https://` prefix is [`ExtenderConfigError::Tls`].
    pub fn new(config: &ExtenderConfig) -> Result<HttpExtender, ExtenderConfigError> {
        let url = config.url_prefix.clone();
        let timeout = if config.http_timeout.is_empty() {
            0
        } else {
            crate::selector::parse_go_duration(&config.http_timeout).map_err(|message| {
                ExtenderConfigError::Timeout { url: url.clone(), value: config.http_timeout.clone(), message }
            })?
        };
        let timeout = if timeout <= 0 { DEFAULT_EXTENDER_TIMEOUT } else { Duration::from_nanos(timeout as u64) };
        let agent_config = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            .http_status_as_error(false)
            .max_idle_connections_per_host(8)
            .build();
        // ureq's default chain minus SOCKS and its own TLS: a CONNECT proxy from the
        // environment (Go's `ProxyFromEnvironment`), TCP (one write per request), then
        // this client's TLS.
        let tcp = ().chain(ConnectProxyConnector::default()).chain(TcpConnector);
        let resolver = ExtenderResolver::default();
        #[cfg(feature = "extender-tls")]
        let agent = match super::tls::client_tls(config)? {
            Some(tls) => ureq::Agent::with_parts(agent_config, tcp.chain(super::tls::TlsConnector(tls)), resolver),
            None => ureq::Agent::with_parts(agent_config, tcp, resolver),
        };
        #[cfg(feature = "extender-tls")]
        let scheme_ok = url.starts_with("http://") || super::tls::is_https(&url);
        #[cfg(not(feature = "extender-tls"))]
        let agent = {
            if config.enable_https || config.tls_config.is_some() || url.starts_with("https://") {
                return Err(ExtenderConfigError::Tls { url });
            }
            ureq::Agent::with_parts(agent_config, tcp, resolver)
        };
        #[cfg(not(feature = "extender-tls"))]
        let scheme_ok = url.starts_with("http://");
        if !scheme_ok {
            return Err(ExtenderConfigError::Url { url });
        }
        let direct = Direct::new(&url, timeout, agent.config());
        let verb_url = |verb: &str| format!("{}/{verb}", url.trim_end_matches('/'));
        let urls = [
            verb_url(&config.filter_verb),
            verb_url(&config.prioritize_verb),
            verb_url(&config.preempt_verb),
            verb_url(&config.bind_verb),
        ];
        let heads =
            std::array::from_fn(|k| direct.as_ref().map(|d| d.head_prefix(d.path(&urls[k]))).unwrap_or_default());
        Ok(HttpExtender {
            direct,
            urls,
            heads,
            buffers: Mutex::new(Vec::new()),
            url_prefix: url,
            filter_verb: config.filter_verb.clone(),
            prioritize_verb: config.prioritize_verb.clone(),
            preempt_verb: config.preempt_verb.clone(),
            bind_verb: config.bind_verb.clone(),
            weight: config.weight,
            node_cache_capable: config.node_cache_capable,
            managed: config.managed_resources.iter().map(|r| Symbol::intern(&r.name)).collect(),
            ignorable: config.ignorable,
            agent,
        })
    }

    /// Clients for every entry, as a set in call order (ignorable ones last); the
    /// error names the entry's index.
    pub fn from_configs(configs: &[ExtenderConfig]) -> Result<Extenders, (usize, ExtenderConfigError)> {
        let mut set = Extenders::default();
        for (i, c) in configs.iter().enumerate() {
            set.push(Arc::new(HttpExtender::new(c).map_err(|e| (i, e))?));
        }
        Ok(set)
    }

    /// The URL a verb is posted to: the prefix without trailing `/`, then `/verb`.
    pub fn verb_url(&self, verb: &str) -> String {
        format!("{}/{verb}", self.url_prefix.trim_end_matches('/'))
    }

    fn take_buffers(&self) -> Buffers {
        self.buffers.lock().pop().unwrap_or_default()
    }

    fn give_back(&self, mut b: Buffers) {
        if b.request.capacity() <= KEEP_BUFFER_BYTES
            && b.response.capacity() <= KEEP_BUFFER_BYTES
            && b.names.text.capacity() <= KEEP_BUFFER_BYTES
            && b.names.pod.capacity() <= KEEP_BUFFER_BYTES
        {
            b.passed.clear();
            self.buffers.lock().push(b);
        }
    }

    /// Posts the body `write` writes to verb `which` and leaves the answer's bytes in
    /// `b.response` (see [`Buffers::body`]).
    fn post(
        &self,
        which: usize,
        write: impl FnOnce(&mut Vec<u8>, &mut NameScratch) -> serde_json::Result<()>,
        b: &mut Buffers,
    ) -> Result<(), ExtenderError> {
        let url = &self.urls[which];
        let transport = |message: String| ExtenderError::Transport { url: url.clone(), message };
        b.request.clear();
        write(&mut b.request, &mut b.names).map_err(|e| transport(e.to_string()))?;
        if let Some(direct) = &self.direct {
            let answer = direct
                .post(&self.heads[which], &b.request, &mut b.head, &mut b.response, MAX_RESPONSE_BYTES)
                .map_err(|e| transport(e.to_string()))?;
            if answer.status != 200 {
                return Err(ExtenderError::Status {
                    verb: self.verb(which).to_owned(),
                    url: url.clone(),
                    code: answer.status,
                });
            }
            b.body_start = answer.body.start;
            b.response_len = answer.body.end;
            return Ok(());
        }
        let mut resp = self
            .agent
            .post(url.as_str())
            .header("Content-Type", "application/json")
            .send(&b.request[..])
            .map_err(|e| transport(e.to_string()))?;
        let code = resp.status().as_u16();
        if code != 200 {
            return Err(ExtenderError::Status { verb: self.verb(which).to_owned(), url: url.clone(), code });
        }
        b.body_start = 0;
        b.response_len = 0;
        let mut reader = resp.body_mut().with_config().limit(MAX_RESPONSE_BYTES).reader();
        b.response_len = read_body(&mut reader, &mut b.response).map_err(|e| transport(e.to_string()))?;
        Ok(())
    }

    fn verb(&self, which: usize) -> &str {
        match which {
            FILTER => &self.filter_verb,
            PRIORITIZE => &self.prioritize_verb,
            PREEMPT => &self.preempt_verb,
            _ => &self.bind_verb,
        }
    }

    fn decode_error(&self, which: usize, message: String) -> ExtenderError {
        ExtenderError::Decode { verb: self.verb(which).to_owned(), url: self.urls[which].clone(), message }
    }

    /// Posts `args` to verb `which` and decodes the answer.
    fn send<T: DeserializeOwned>(&self, which: usize, args: &impl Serialize) -> Result<T, ExtenderError> {
        self.send_with(which, |out, _| serde_json::to_writer(out, args))
    }

    /// Posts the body `write` writes to verb `which` and decodes the answer.
    fn send_with<T: DeserializeOwned>(
        &self,
        which: usize,
        write: impl FnOnce(&mut Vec<u8>, &mut NameScratch) -> serde_json::Result<()>,
    ) -> Result<T, ExtenderError> {
        let mut b = self.take_buffers();
        let r = self
            .post(which, write, &mut b)
            .and_then(|()| wire::decode(b.body()).map_err(|message| self.decode_error(which, message)));
        self.give_back(b);
        r
    }

    /// The Filter call's answer as positions among `nodes` (see [`decode_filter_answer`]).
    fn filter_call(
        &self,
        pod: &Arc<Pod>,
        nodes: &[&NodeInfo],
        b: &mut Buffers,
    ) -> Result<ExtenderFilterResult, ExtenderError> {
        let mut names = None;
        self.post(
            FILTER,
            |out, scratch| {
                names = self.write_args(pod, nodes, out, scratch)?;
                Ok(())
            },
            b,
        )?;
        let mut finder = NameFinder::new(nodes);
        let sent = names.map(|r| SentNames::new(&b.request[r], &b.names.ends));
        let answer = match decode_filter_answer(
            &b.response[b.body_start..b.response_len],
            self.node_cache_capable,
            sent,
            &mut finder,
            &mut b.passed,
        ) {
            Ok(a) => a,
            // The path-reporting decoder says where a malformed answer is wrong.
            Err(e) => {
                let message = wire::decode::<wire::ExtenderFilterResult>(b.body()).err().unwrap_or(e.to_string());
                return Err(self.decode_error(FILTER, message));
            }
        };
        if !answer.error.is_empty() {
            return Err(ExtenderError::Reported(answer.error));
        }
        let unknown =
            |node: &str| ExtenderError::UnknownNode { extender: self.url_prefix.clone(), node: node.to_owned() };
        let passed = if answer.names {
            if let Some(name) = &answer.unknown {
                return Err(unknown(name));
            }
            std::mem::take(&mut b.passed)
        } else if let Some(list) = &answer.nodes {
            // Upstream keeps the returned node objects; schedkit keeps its own copy of
            // each by name, so a node it did not send is an error here too.
            let mut passed = Vec::with_capacity(list.items.len());
            for n in &list.items {
                let name = n.0.name();
                passed.push(finder.find(name).ok_or_else(|| unknown(name))?);
            }
            passed
        } else {
            Vec::new()
        };
        Ok(ExtenderFilterResult { passed, failed: answer.failed, failed_and_unresolvable: answer.unresolvable })
    }

    /// `ExtenderArgs` written into `out`. Node-cache-capable: the pod's JSON (kept
    /// from the last call for the same shared pod, see
    /// [`PodJson`](super::request::PodJson)),
    /// the names straight into the buffer (the same bytes as [`Self::args`] through
    /// serde_json, checked by a proptest); else the whole nodes through serde. When
    /// names were sent and none needed an escape, where they are in `out`
    /// (`"a","b"`), with `scratch.ends` saying where each one's closing quote is in
    /// that range (see [`SentNames`]).
    fn write_args(
        &self,
        pod: &Arc<Pod>,
        nodes: &[&NodeInfo],
        out: &mut Vec<u8>,
        scratch: &mut NameScratch,
    ) -> serde_json::Result<Option<Range<usize>>> {
        if !self.node_cache_capable {
            serde_json::to_writer(out, &self.args(pod, nodes))?;
            return Ok(None);
        }
        out.extend_from_slice(br#"{"Pod":"#);
        scratch.pod.write(out, pod)?;
        out.extend_from_slice(br#","Nodes":null,"NodeNames":["#);
        let start = out.len();
        let plain = write_names(out, nodes, scratch);
        if !plain {
            // Some name needs an escape: written again, one by one.
            out.truncate(start);
            for (i, n) in nodes.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_json_str(out, n.node().name())?;
            }
        }
        let end = out.len();
        out.extend_from_slice(b"]}");
        Ok(plain.then_some(start..end))
    }

    fn args<'a>(&self, pod: &'a Pod, nodes: &'a [&'a NodeInfo]) -> ArgsOut<'a> {
        if self.node_cache_capable {
            ArgsOut { pod, nodes: None, node_names: Some(Names(nodes)) }
        } else {
            ArgsOut { pod, nodes: Some(NodesOut { items: Items(nodes) }), node_names: None }
        }
    }
}

impl Extender for HttpExtender {
    fn name(&self) -> &str {
        &self.url_prefix
    }

    fn filter(&self, pod: &PodInfo, nodes: &[&NodeInfo]) -> Result<ExtenderFilterResult, ExtenderError> {
        if self.filter_verb.is_empty() {
            return Ok(ExtenderFilterResult { passed: (0..nodes.len()).collect(), ..ExtenderFilterResult::default() });
        }
        let mut b = self.take_buffers();
        let r = self.filter_call(&pod.pod, nodes, &mut b);
        self.give_back(b);
        r
    }

    fn prioritize(&self, pod: &PodInfo, nodes: &[&NodeInfo]) -> Result<(Vec<HostPriority>, i64), ExtenderError> {
        if self.prioritize_verb.is_empty() {
            let zeros = nodes.iter().map(|n| HostPriority { host: n.node().name().to_owned(), score: 0 }).collect();
            return Ok((zeros, 0));
        }
        let list: wire::HostPriorityList =
            self.send_with(PRIORITIZE, |out, scratch| self.write_args(&pod.pod, nodes, out, scratch).map(drop))?;
        Ok((list.into_iter().map(|h| HostPriority { host: h.host, score: h.score }).collect(), self.weight))
    }

    fn bind(&self, binding: &ExtenderBinding) -> Result<(), ExtenderError> {
        if !self.is_binder() {
            return Err(ExtenderError::NotSupported("unexpected empty bindVerb in extender".to_owned()));
        }
        let args = wire::ExtenderBindingArgs {
            pod_name: binding.name.clone(),
            pod_namespace: binding.namespace.clone(),
            pod_uid: binding.uid.clone(),
            node: binding.node.clone(),
        };
        let result: wire::ExtenderBindingResult = self.send(BIND, &args)?;
        if result.error.is_empty() { Ok(()) } else { Err(ExtenderError::Reported(result.error)) }
    }

    fn process_preemption(
        &self,
        pod: &PodInfo,
        victims: &BTreeMap<String, Victims>,
        snapshot: &Snapshot,
    ) -> Result<BTreeMap<String, Victims>, ExtenderError> {
        if !self.supports_preemption() {
            return Err(ExtenderError::NotSupported(format!(
                "preempt verb is not defined for extender {} but run into ProcessPreemption",
                self.url_prefix
            )));
        }
        let mut args = wire::ExtenderPreemptionArgs {
            pod: Some(wire::Object((*pod.pod).clone())),
            ..wire::ExtenderPreemptionArgs::default()
        };
        if self.node_cache_capable {
            args.node_name_to_meta_victims = Some(to_meta_victims(victims));
        } else {
            let full = victims
                .iter()
                .map(|(node, v)| {
                    let pods = v.pods.iter().map(|p| wire::Object((*p.pod).clone())).collect();
                    (node.clone(), wire::Victims { pods, num_pdb_violations: v.num_pdb_violations as i64 })
                })
                .collect();
            args.node_name_to_victims = Some(full);
        }
        let result: wire::ExtenderPreemptionResult = self.send(PREEMPT, &args)?;
        from_meta_victims(&self.url_prefix, &result.node_name_to_meta_victims, snapshot)
    }

    fn is_binder(&self) -> bool {
        !self.bind_verb.is_empty()
    }

    fn is_filter(&self) -> bool {
        !self.filter_verb.is_empty()
    }

    fn is_prioritizer(&self) -> bool {
        !self.prioritize_verb.is_empty()
    }

    fn supports_preemption(&self) -> bool {
        !self.preempt_verb.is_empty()
    }

    fn is_ignorable(&self) -> bool {
        self.ignorable
    }

    fn is_interested(&self, pod: &PodInfo) -> bool {
        pod_names_managed_resource(pod, &self.managed)
    }
}

/// Victims by uid (upstream `convertToMetaVictims`).
pub fn to_meta_victims(victims: &BTreeMap<String, Victims>) -> BTreeMap<String, wire::MetaVictims> {
    victims
        .iter()
        .map(|(node, v)| {
            let pods = v.pods.iter().map(|p| wire::MetaPod { uid: p.uid.to_string() }).collect();
            (node.clone(), wire::MetaVictims { pods, num_pdb_violations: v.num_pdb_violations as i64 })
        })
        .collect()
}

/// Victims by uid back to the snapshot's pods (upstream `convertToVictims`): an
/// unknown node or a uid not on its node is an error.
pub fn from_meta_victims(
    extender: &str,
    meta: &BTreeMap<String, wire::MetaVictims>,
    snapshot: &Snapshot,
) -> Result<BTreeMap<String, Victims>, ExtenderError> {
    let mut out = BTreeMap::new();
    for (node, mv) in meta {
        let info = snapshot
            .get(node)
            .ok_or_else(|| ExtenderError::Reported(format!("nodeinfo not found for node name {node:?}")))?;
        let mut pods = Vec::with_capacity(mv.pods.len());
        for mp in &mv.pods {
            let pod = info.pods().iter().find(|p| *p.uid == *mp.uid).ok_or_else(|| ExtenderError::UnknownVictim {
                extender: extender.to_owned(),
                uid: mp.uid.clone(),
                node: node.clone(),
            })?;
            pods.push(pod.clone());
        }
        out.insert(node.clone(), Victims { pods, num_pdb_violations: mv.num_pdb_violations.max(0) as usize });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extender::request::all_plain;
    use crate::snapshot::Cache;
    use crate::testing::{NodeBuilder, PodBuilder};
    use proptest::prelude::*;

    #[test]
    fn all_plain_counts_every_quote_of_many_names() {
        let join = |names: &[String]| names.iter().map(|n| format!("\"{n}\"")).collect::<Vec<_>>().join(",");
        let mut names: Vec<String> = (0..1000).map(|i| format!("node-{i:04}")).collect();
        assert!(all_plain(join(&names).as_bytes(), names.len()));
        for bad in ["a\"b", "a\\b", "a\nb", "\u{1f}"] {
            names[777] = bad.to_owned();
            assert!(!all_plain(join(&names).as_bytes(), names.len()), "{bad:?}");
        }
        assert!(all_plain(b"", 0));
    }

    /// A client of a made-up address (nothing is sent).
    fn client(cache_capable: bool) -> HttpExtender {
        HttpExtender::new(&ExtenderConfig {
            url_prefix: "http://127.0.0.1:1".into(),
            filter_verb: "filter".into(),
            node_cache_capable: cache_capable,
            ..ExtenderConfig::default()
        })
        .unwrap()
    }

    #[test]
    fn pod_json_is_kept_per_shared_pod_only() {
        let serde = |p: &Pod| serde_json::to_vec(p).unwrap();
        let mut kept = crate::extender::request::PodJson::default();
        let mut out = Vec::new();
        let mut pod = Arc::new(PodBuilder::new("a").uid("u-a").cpu("1").build());
        for _ in 0..2 {
            out.clear();
            kept.write(&mut out, &pod).unwrap();
            assert_eq!(out, serde(&pod));
        }
        // Changed in place while only the kept key shares it: moved to a new
        // allocation by make_mut, so the next write sees another pod.
        Arc::make_mut(&mut pod).metadata.name = "b".into();
        out.clear();
        kept.write(&mut out, &pod).unwrap();
        assert_eq!(out, serde(&pod));
        assert!(String::from_utf8(out.clone()).unwrap().contains(r#""name":"b""#));
        // Pods made and dropped one after another (an allocator may hand out the same
        // address again once the kept key lets go of it).
        for i in 0..50 {
            let p = Arc::new(PodBuilder::new(&format!("p-{i}")).uid(&format!("u-{i}")).build());
            out.clear();
            kept.write(&mut out, &p).unwrap();
            assert_eq!(out, serde(&p), "pod {i}");
        }
    }

    #[test]
    fn names_of_every_length_are_copied_exactly() {
        let src: Vec<u8> = (0..80u8).map(|i| b'a' + i % 26).collect();
        for n in 0..=src.len() {
            let mut dst = vec![b'#'; n + 2];
            crate::extender::request::copy_name(&mut dst[1..=n], &src[..n]);
            assert_eq!(&dst[1..=n], &src[..n], "length {n}");
            assert_eq!((dst[0], dst[n + 1]), (b'#', b'#'), "length {n}: neighbours untouched");
        }
    }

    proptest! {
        /// The request written by hand is byte for byte what serde_json writes for
        /// `ExtenderArgs`, names needing escapes included, and reads back as the same
        /// `ExtenderArgs`; the pod's JSON comes from the kept copy on the second call.
        #[test]
        fn hand_written_args_equal_serde(
            names in prop::collection::btree_set("[a-z0-9.\"\\\\\x00-\x1f\u{e9}\u{2028}\u{1f600}-]{1,40}", 0..20),
            cache_capable in any::<bool>(),
        ) {
            let mut cache = Cache::new();
            for n in &names {
                cache.add_node(NodeBuilder::new(n).cpu("1").build()).unwrap();
            }
            let mut snap = Snapshot::default();
            cache.update_snapshot(&mut snap);
            let nodes: Vec<&NodeInfo> = snap.nodes().iter().map(|n| &**n).collect();
            let pod = Arc::new(PodBuilder::new("p\"q").uid("u").cpu("1").build());
            let client = client(cache_capable);
            let mut scratch = NameScratch { text: vec![b'x'; 3], ends: vec![7], ..NameScratch::default() };
            let expected = serde_json::to_vec(&client.args(&pod, &nodes)).unwrap();
            for _ in 0..2 {
                let mut out = Vec::new();
                let sent = client.write_args(&pod, &nodes, &mut out, &mut scratch).unwrap();
                let ends = &scratch.ends;
                let plain = cache_capable && names.iter().all(|n| !n.contains(['"', '\\']) && !n.contains(|c: char| c < ' '));
                prop_assert_eq!(sent.is_some(), plain);
                if let Some(range) = sent {
                    // Each name sits between the previous closing quote (and a comma) and its own.
                    let text = &out[range];
                    prop_assert_eq!(ends.len(), nodes.len());
                    let mut at = 0;
                    for (n, &e) in nodes.iter().zip(ends) {
                        let quoted = format!("\"{}\"", n.node().name());
                        prop_assert_eq!(&text[at..=e as usize], quoted.as_bytes());
                        at = e as usize + 2;
                    }
                    prop_assert_eq!(at, if nodes.is_empty() { 0 } else { text.len() + 1 });
                } else if cache_capable {
                    prop_assert!(ends.is_empty());
                }
                prop_assert_eq!(String::from_utf8(out.clone()).unwrap(), String::from_utf8(expected.clone()).unwrap());
                // What an extender reads: the same ExtenderArgs from both.
                let ours: wire::ExtenderArgs = wire::decode(&out).unwrap();
                let theirs: wire::ExtenderArgs = wire::decode(&expected).unwrap();
                prop_assert_eq!(&ours, &theirs);
                if cache_capable {
                    let read: Vec<&str> = ours.node_names.iter().flatten().map(String::as_str).collect();
                    let want: Vec<&str> = nodes.iter().map(|n| n.node().name()).collect();
                    prop_assert_eq!(read, want);
                }
            }
        }
    }
}
