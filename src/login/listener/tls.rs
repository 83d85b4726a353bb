//! The https callback's TLS configuration: the user's certificate and key (`--local-server-cert`,
//! `--local-server-key`), read when a login starts, for providers that accept only https
//! redirect URIs.

use crate::config::CallbackTls;
use crate::error::{Exit, fail};
use std::sync::Arc;

/// The TLS configuration of an https callback, from `--local-server-cert` (a PEM certificate,
/// with its chain) and `--local-server-key` (its PEM private key). Read when a login starts.
pub fn tls_config(files: &CallbackTls) -> anyhow::Result<Arc<rustls::ServerConfig>> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let read = |flag: &str, path: &std::path::Path| {
        std::fs::read(path).map_err(|err| {
            fail(
                Exit::Input,
                format!("reading {flag} {}: {err}", path.display()),
            )
        })
    };
    let cert_pem = read("--local-server-cert", &files.cert)?;
    let key_pem = read("--local-server-key", &files.key)?;
    let chain = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .ok()
        .filter(|chain| !chain.is_empty())
        .ok_or_else(|| {
            fail(
                Exit::Input,
                format!(
                    "--local-server-cert {} holds no PEM certificate (-----BEGIN CERTIFICATE-----)",
                    files.cert.display()
                ),
            )
        })?;
    let key = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|_| {
        fail(
            Exit::Input,
            format!(
                "--local-server-key {} holds no PEM private key (PKCS#8, PKCS#1 or SEC1: -----BEGIN PRIVATE KEY-----)",
                files.key.display()
            ),
        )
    })?;
    let mut config =
        rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .and_then(|builder| builder.with_no_client_auth().with_single_cert(chain, key))
            .map_err(|err| {
                fail(
                    Exit::Input,
                    format!(
                        "--local-server-cert {} and --local-server-key {} cannot serve TLS ({err}); give a certificate and the private key that belongs to it",
                        files.cert.display(),
                        files.key.display()
                    ),
                )
            })?;
    // The listener speaks HTTP/1.1 only.
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}
