//! TLS termination with rustls: the certificate chain and private key from PEM files, HTTP/2
//! and HTTP/1.1 offered by ALPN. rustls rather than OpenSSL: memory-safe, no system library to
//! match in the container image, and already the outbound client's TLS.

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// The server side of TLS from `cert` (PEM, leaf first, then intermediates) and `key` (PEM,
/// PKCS#8, PKCS#1 or SEC1).
///
/// # Errors
/// A file that cannot be read, holds no certificate or key, or a key that does not match.
pub fn server_config(cert: &Path, key: &Path) -> Result<rustls::ServerConfig, String> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .and_then(Iterator::collect)
        .map_err(|e| format!("TOKENVAULT_TLS_CERT: {}: {e}", cert.display()))?;
    if certs.is_empty() {
        return Err(format!(
            "TOKENVAULT_TLS_CERT: {} holds no certificate",
            cert.display()
        ));
    }
    let key = PrivateKeyDer::from_pem_file(key)
        .map_err(|e| format!("TOKENVAULT_TLS_KEY: {}: {e}", key.display()))?;
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| format!("TOKENVAULT_TLS_KEY does not fit TOKENVAULT_TLS_CERT: {e}"))?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}
