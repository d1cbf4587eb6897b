//! HTTPS for [`ExtenderServer`](super::ExtenderServer) (feature `extender-tls`): the
//! server's certificate chain and key, and optionally a CA that client certificates
//! must chain to (mutual TLS), given as PEM files or PEM bytes the way an
//! `extenders[].tlsConfig` gives the client's: bytes win over a file, and every file
//! is read once, when the [`ServerTls`] is built. rustls with ring, TLS 1.2 and 1.3
//! (Go's `MinVersion: tls.VersionTLS12`, as on the client side).

use std::fmt;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};

/// Where the server's TLS material comes from. For each of the certificate chain,
/// the key and the client CA, PEM bytes (`*_data`) win over a file (`*_file`), as
/// `tlsConfig`'s `certData` wins over `certFile`; a chain and a key are required, a
/// client CA is optional and, when given, makes a client certificate signed by it
/// mandatory.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct ServerTlsConfig {
    /// The server's certificate chain (PEM, leaf first) as a file.
    pub cert_file: String,
    /// The server's private key (PEM: PKCS#8, PKCS#1 or SEC1) as a file.
    pub key_file: String,
    /// The CA (PEM) client certificates must chain to, as a file.
    pub client_ca_file: String,
    /// The certificate chain as PEM bytes.
    pub cert_data: Vec<u8>,
    /// The private key as PEM bytes.
    pub key_data: Vec<u8>,
    /// The client CA as PEM bytes.
    pub client_ca_data: Vec<u8>,
}

impl fmt::Debug for ServerTlsConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerTlsConfig")
            .field("cert_file", &self.cert_file)
            .field("key_file", &self.key_file)
            .field("client_ca_file", &self.client_ca_file)
            .field("cert_data", &format_args!("{} bytes", self.cert_data.len()))
            .field("key_data", &"<redacted>")
            .field("client_ca_data", &format_args!("{} bytes", self.client_ca_data.len()))
            .finish()
    }
}

/// A [`ServerTlsConfig`] that cannot be turned into a TLS server.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ServerTlsError {
    /// Neither bytes nor a file were given for a required part.
    #[error("extender server TLS: {field} is required")]
    Missing {
        /// `cert` or `key`.
        field: &'static str,
    },
    /// A file could not be read.
    #[error("extender server TLS: reading {path:?}: {message}")]
    File {
        /// The file.
        path: String,
        /// The operating system's message.
        message: String,
    },
    /// The bytes are not PEM of the right kind.
    #[error("extender server TLS: {field}: {message}")]
    Pem {
        /// `cert`, `key` or `client_ca`.
        field: &'static str,
        /// What is wrong.
        message: String,
    },
    /// rustls refused the material (a key that does not match the certificate, say).
    #[error("extender server TLS: {message}")]
    Setup {
        /// rustls's message.
        message: String,
    },
}

/// The TLS side of an [`ExtenderServer`](super::ExtenderServer), built once from a
/// [`ServerTlsConfig`] and shared by every connection.
#[derive(Clone)]
pub struct ServerTls {
    pub(crate) config: Arc<ServerConfig>,
}

impl fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerTls").finish_non_exhaustive()
    }
}

fn data_or_file(data: &[u8], file: &str) -> Result<Option<Vec<u8>>, ServerTlsError> {
    if !data.is_empty() {
        return Ok(Some(data.to_vec()));
    }
    if file.is_empty() {
        return Ok(None);
    }
    std::fs::read(file).map(Some).map_err(|e| ServerTlsError::File { path: file.to_owned(), message: e.to_string() })
}

fn certs(field: &'static str, pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, ServerTlsError> {
    let pem_err = |message: String| ServerTlsError::Pem { field, message };
    let chain =
        CertificateDer::pem_slice_iter(pem).collect::<Result<Vec<_>, _>>().map_err(|e| pem_err(e.to_string()))?;
    if chain.is_empty() {
        return Err(pem_err("no certificate in PEM data".into()));
    }
    Ok(chain)
}

impl ServerTls {
    /// Reads and checks the material (see [`ServerTlsConfig`]).
    ///
    /// ```
    /// use schedkit::extender::{ServerTls, ServerTlsConfig, ServerTlsError};
    ///
    /// let err = ServerTls::new(&ServerTlsConfig { cert_data: b"not PEM".to_vec(), ..Default::default() });
    /// assert_eq!(err.unwrap_err(), ServerTlsError::Missing { field: "key" });
    /// ```
    pub fn new(config: &ServerTlsConfig) -> Result<ServerTls, ServerTlsError> {
        let cert = data_or_file(&config.cert_data, &config.cert_file)?;
        let key = data_or_file(&config.key_data, &config.key_file)?;
        let ca = data_or_file(&config.client_ca_data, &config.client_ca_file)?;
        let (Some(cert), Some(key)) = (cert, key) else {
            let field = if config.cert_data.is_empty() && config.cert_file.is_empty() { "cert" } else { "key" };
            return Err(ServerTlsError::Missing { field });
        };
        let chain = certs("cert", &cert)?;
        let key = PrivateKeyDer::from_pem_slice(&key)
            .map_err(|e| ServerTlsError::Pem { field: "key", message: e.to_string() })?;
        let setup = |e: rustls::Error| ServerTlsError::Setup { message: e.to_string() };
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ServerConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(rustls::ALL_VERSIONS)
            .map_err(setup)?;
        let builder = match ca {
            Some(ca) => {
                let mut roots = RootCertStore::empty();
                for c in certs("client_ca", &ca)? {
                    roots.add(c).map_err(|e| ServerTlsError::Pem { field: "client_ca", message: e.to_string() })?;
                }
                let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                    .build()
                    .map_err(|e| ServerTlsError::Setup { message: e.to_string() })?;
                builder.with_client_cert_verifier(verifier)
            }
            None => builder.with_no_client_auth(),
        };
        // No ALPN: a Go client offering `h2` then falls back to HTTP/1.1.
        let server = builder.with_single_cert(chain, key).map_err(setup)?;
        Ok(ServerTls { config: Arc::new(server) })
    }
}
