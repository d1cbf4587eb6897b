//! HTTPS for the extender client (feature `extender-tls`): an `extenders[]` entry's
//! `enableHTTPS` and `tlsConfig` turned into a rustls client configuration, as
//! upstream `makeTransport` (`pkg/scheduler/extender.go`) and client-go's
//! `transport.TLSConfigFor` (`transport/transport.go`) turn them into a Go `tls.Config`,
//! and the ureq connector that wraps a TCP connection in it.
//!
//! Upstream's rules, kept here:
//! - the scheme comes from `urlPrefix` alone: `enableHTTPS` does not turn an
//!   `http://` prefix into HTTPS; it only makes a CA-less configuration skip
//!   verification (`Insecure`), as `makeTransport` does;
//! - `insecure` together with a CA (file or data) is an error;
//! - each `*Data` field wins over its `*File` (`dataFromSliceOrFile`); every named
//!   file is read when the client is built, and a client certificate is used only
//!   when both a certificate and a key are given (`HasCertAuth`);
//! - with a CA only it is trusted; without one, the system's roots;
//! - `serverName` replaces the URL's host for verification and SNI;
//! - TLS 1.2 is the lowest version (Go's `MinVersion: tls.VersionTLS12`).
//!
//! client-go reloads a client certificate given only as files when it changes on disk;
//! schedkit reads it once, when the client is built.

use std::fmt;
use std::io::{Read, Write};
use std::sync::Arc;

use base64::Engine;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, ClientConnection, DigitallySignedStruct, RootCertStore, SignatureScheme, StreamOwned};
use ureq::unversioned::transport::{
    Buffers, ConnectionDetails, Connector, Either, LazyBuffers, NextTimeout, Transport, TransportAdapter,
};

use super::client::ExtenderConfigError;
use crate::config::Extender as ExtenderConfig;

/// The TLS side of one extender client: the rustls configuration and the name the
/// server's certificate must carry when `serverName` overrides the URL's host.
#[derive(Clone)]
pub(crate) struct ClientTls {
    config: Arc<ClientConfig>,
    server_name: Option<ServerName<'static>>,
}

impl fmt::Debug for ClientTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientTls").field("server_name", &self.server_name).finish_non_exhaustive()
    }
}

/// Whether a `urlPrefix` asks for HTTPS (Go's URL parser folds the scheme's case).
pub(crate) fn is_https(url: &str) -> bool {
    url.get(..8).is_some_and(|s| s.eq_ignore_ascii_case("https://"))
}

const CA: &str = "caData/caFile";
const CERT: &str = "certData/certFile";
const KEY: &str = "keyData/keyFile";

/// A `tlsConfig` field's bytes: the base64 `*Data` (Go's `[]byte` in JSON) if set,
/// else the `*File`'s contents if named, else nothing.
fn data_or_file(
    url: &str,
    data_field: &'static str,
    data: &str,
    file: &str,
) -> Result<Option<Vec<u8>>, ExtenderConfigError> {
    if !data.is_empty() {
        // Go's base64 decoder skips line breaks (YAML block scalars carry them).
        let compact: String = data.chars().filter(|c| *c != '\n' && *c != '\r').collect();
        let bytes = base64::engine::general_purpose::STANDARD.decode(compact.as_bytes()).map_err(|e| {
            ExtenderConfigError::TlsData { url: url.to_owned(), field: data_field, message: e.to_string() }
        })?;
        if !bytes.is_empty() {
            return Ok(Some(bytes));
        }
    }
    if file.is_empty() {
        return Ok(None);
    }
    std::fs::read(file).map(Some).map_err(|e| ExtenderConfigError::TlsFile {
        url: url.to_owned(),
        path: file.to_owned(),
        message: e.to_string(),
    })
}

/// Builds the client's TLS from `enableHTTPS` and `tlsConfig` (upstream `makeTransport`
/// then `TLSConfigFor`). `None` when the URL is plain HTTP and the configuration asks
/// for nothing TLS-specific, as upstream then builds no TLS config either.
pub(crate) fn client_tls(config: &ExtenderConfig) -> Result<Option<ClientTls>, ExtenderConfigError> {
    let url = config.url_prefix.as_str();
    let tls = config.tls_config.clone().unwrap_or_default();
    let data_err =
        |field: &'static str, message: String| ExtenderConfigError::TlsData { url: url.to_owned(), field, message };
    let setup_err = |message: String| ExtenderConfigError::TlsSetup { url: url.to_owned(), message };

    let has_ca = !tls.ca_file.is_empty() || !tls.ca_data.is_empty();
    let has_cert_auth = (!tls.cert_file.is_empty() || !tls.cert_data.is_empty())
        && (!tls.key_file.is_empty() || !tls.key_data.is_empty());
    // makeTransport: HTTPS without a CA skips verification.
    let insecure = tls.insecure || (config.enable_https && !has_ca);
    let asks = has_ca || has_cert_auth || insecure || !tls.server_name.is_empty();
    if !asks && !is_https(url) {
        return Ok(None);
    }
    if has_ca && insecure {
        return Err(ExtenderConfigError::TlsInsecureWithCa { url: url.to_owned() });
    }
    let ca = data_or_file(url, "caData", &tls.ca_data, &tls.ca_file)?;
    let cert = data_or_file(url, "certData", &tls.cert_data, &tls.cert_file)?;
    let key = data_or_file(url, "keyData", &tls.key_data, &tls.key_file)?;

    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(rustls::ALL_VERSIONS)
        .map_err(|e| setup_err(e.to_string()))?;
    let builder = if insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(SkipVerify(provider.signature_verification_algorithms)))
    } else {
        let mut roots = RootCertStore::empty();
        if let Some(pem) = &ca {
            for c in CertificateDer::pem_slice_iter(pem) {
                let c = c.map_err(|e| data_err(CA, format!("unable to load root certificates: {e}")))?;
                roots.add(c).map_err(|e| data_err(CA, format!("unable to load root certificates: {e}")))?;
            }
            if roots.is_empty() {
                return Err(data_err(CA, "unable to load root certificates: no certificate in PEM data".into()));
            }
        } else if is_https(url) {
            let found = rustls_native_certs::load_native_certs();
            roots.add_parsable_certificates(found.certs);
            if roots.is_empty() {
                let why = found.errors.first().map_or_else(|| "none found".into(), ToString::to_string);
                return Err(setup_err(format!("no system root certificates to verify the extender with: {why}")));
            }
        }
        builder.with_root_certificates(roots)
    };
    let client = match (has_cert_auth, cert, key) {
        (true, Some(cert), Some(key)) => {
            let chain = CertificateDer::pem_slice_iter(&cert)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| data_err(CERT, e.to_string()))?;
            if chain.is_empty() {
                return Err(data_err(CERT, "no certificate in PEM data".into()));
            }
            let key = PrivateKeyDer::from_pem_slice(&key).map_err(|e| data_err(KEY, e.to_string()))?;
            builder.with_client_auth_cert(chain, key).map_err(|e| setup_err(format!("client certificate: {e}")))?
        }
        _ => builder.with_no_client_auth(),
    };
    let server_name = if tls.server_name.is_empty() {
        None
    } else {
        Some(ServerName::try_from(tls.server_name.clone()).map_err(|e| setup_err(format!("serverName: {e}")))?)
    };
    Ok(Some(ClientTls { config: Arc::new(client), server_name }))
}

/// `Insecure`: any server certificate is accepted, but the handshake's signatures are
/// still checked against the key the certificate carries (as Go does with
/// `InsecureSkipVerify`).
#[derive(Debug)]
struct SkipVerify(WebPkiSupportedAlgorithms);

impl ServerCertVerifier for SkipVerify {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_schemes()
    }
}

/// The connector after TCP: wraps `https` connections in this client's TLS.
#[derive(Debug)]
pub(crate) struct TlsConnector(pub(crate) ClientTls);

impl<In: Transport> Connector<In> for TlsConnector {
    type Out = Either<In, TlsTransport>;

    fn connect(&self, details: &ConnectionDetails, chained: Option<In>) -> Result<Option<Self::Out>, ureq::Error> {
        let Some(transport) = chained else { return Ok(None) };
        if !details.needs_tls() || transport.is_tls() {
            return Ok(Some(Either::A(transport)));
        }
        let name = if let Some(n) = &self.0.server_name {
            n.clone()
        } else {
            let host = details.uri.host().unwrap_or_default();
            let bare = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
            ServerName::try_from(bare.to_owned())
                .map_err(|e| ureq::Error::BadUri(format!("host {host:?} as a TLS server name: {e}")))?
        };
        let conn = ClientConnection::new(self.0.config.clone(), name).map_err(std::io::Error::other)?;
        let mut sock = TransportAdapter::new(transport.boxed(), details.current_time.clone());
        sock.set_timeout(details.timeout);
        let mut stream = StreamOwned { conn, sock };
        // The handshake, so that a refused certificate fails here, naming the cause.
        stream.conn.complete_io(&mut stream.sock)?;
        let buffers = LazyBuffers::new(details.config.input_buffer_size(), details.config.output_buffer_size());
        Ok(Some(Either::B(TlsTransport { buffers, stream })))
    }
}

/// A rustls session over the connection the connectors before it opened.
pub(crate) struct TlsTransport {
    buffers: LazyBuffers,
    stream: StreamOwned<ClientConnection, TransportAdapter>,
}

impl fmt::Debug for TlsTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsTransport").field("inner", &self.stream.sock.inner()).finish_non_exhaustive()
    }
}

impl Transport for TlsTransport {
    fn buffers(&mut self) -> &mut dyn Buffers {
        &mut self.buffers
    }

    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), ureq::Error> {
        self.stream.sock.set_timeout(timeout);
        let output = &self.buffers.output()[..amount];
        self.stream.write_all(output)?;
        Ok(())
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        self.stream.sock.set_timeout(timeout);
        let input = self.buffers.input_append_buf();
        let n = self.stream.read(input)?;
        self.buffers.input_appended(n);
        Ok(n > 0)
    }

    fn is_open(&mut self) -> bool {
        self.stream.sock.get_mut().is_open()
    }

    fn is_tls(&self) -> bool {
        true
    }
}
