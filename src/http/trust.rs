//! Which TLS certificates kubecred trusts, loaded only as far as a handshake needs.
//!
//! reqwest's own native-roots support reads the whole system store (on Debian: the bundle file,
//! then every file of `/etc/ssl/certs`) each time a client is built: about half of a grant's
//! time (DECISIONS.md, "Why these dependencies"), paid even when the provider's CA is the one given
//! with `--certificate-authority`. We write our own verifier because no crate offers the lazy order
//! we want; the verification itself stays rustls' (`WebPkiServerVerifier`). Tiers, each built
//! only when the previous one does not know the certificate's issuer:
//!
//! 1. the CAs given with `--certificate-authority(-data)` or the cluster extension;
//! 2. those plus the system's CA bundle file (`SSL_CERT_FILE`, or the distribution's bundle);
//! 3. those plus the full native store (`SSL_CERT_DIR`, the certificate directories, or the
//!    platform store on macOS and Windows).
//!
//! Any other verdict (expired, wrong name, bad signature) ends the search: only "unknown issuer"
//! means a later tier could help. `--insecure-skip-tls-verify` swaps in a verifier that accepts
//! any certificate but still checks the handshake signatures against it.

use crate::config::TlsSettings;
use crate::error::{Exit, fail};
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use std::sync::{Arc, OnceLock};

/// The rustls configuration for every connection to the identity provider.
pub fn client_config(settings: &TlsSettings) -> anyhow::Result<ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let roots = if settings.insecure_skip_verify {
        None
    } else {
        let mut given = Vec::new();
        for (index, pem) in settings.extra_ca_pems.iter().enumerate() {
            given.extend(parse_ca_bundle(pem, index + 1)?);
        }
        Some(TieredRoots::new(given, provider.clone()))
    };
    let verifier = Arc::new(Verifier {
        roots,
        provider: provider.clone(),
    });
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|err| fail(Exit::Input, format!("cannot set up TLS: {err}")))?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    Ok(config)
}

/// Parses one `--certificate-authority(-data)` bundle, which may hold several certificates.
pub(super) fn parse_ca_bundle(
    pem: &[u8],
    position: usize,
) -> anyhow::Result<Vec<CertificateDer<'static>>> {
    let what = format!(
        "certificate authority bundle #{position} (from --certificate-authority, --certificate-authority-data or the cluster extension)"
    );
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|err| {
            fail(
                Exit::Input,
                format!("{what} is not valid PEM ({err}); pass PEM certificates (-----BEGIN CERTIFICATE-----)"),
            )
        })?;
    // A file with no BEGIN CERTIFICATE block parses as an empty bundle: that is a mistake
    // (a DER file, a key, the wrong path), not a request to trust nothing extra.
    if certs.is_empty() {
        return Err(fail(
            Exit::Input,
            format!(
                "{what} holds no PEM certificate; pass PEM certificates (-----BEGIN CERTIFICATE-----)"
            ),
        ));
    }
    // A block that is base64 but not a certificate fails here rather than at the handshake.
    let mut store = RootCertStore::empty();
    for cert in &certs {
        store.add(cert.clone()).map_err(|err| {
            fail(
                Exit::Input,
                format!("{what} is not valid PEM ({err}); pass PEM certificates (-----BEGIN CERTIFICATE-----)"),
            )
        })?;
    }
    Ok(certs)
}

/// Where a tier's certificates come from, in the order they are tried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tier {
    Given,
    SystemBundle,
    NativeStore,
}

const TIERS: [Tier; 3] = [Tier::Given, Tier::SystemBundle, Tier::NativeStore];

#[derive(Debug)]
struct TieredRoots {
    given: Vec<CertificateDer<'static>>,
    provider: Arc<CryptoProvider>,
    /// One verifier per tier, built on first use; `None` when the tier adds nothing (no CAs
    /// given, no bundle file found) or could not be built.
    built: [OnceLock<Option<Arc<WebPkiServerVerifier>>>; 3],
}

impl TieredRoots {
    fn new(given: Vec<CertificateDer<'static>>, provider: Arc<CryptoProvider>) -> Self {
        TieredRoots {
            given,
            provider,
            built: Default::default(),
        }
    }

    /// The first tier's verdict that is not "unknown issuer" (or the last tier's).
    fn verify(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let unknown = rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer);
        let mut verdict = Err(unknown.clone());
        for index in 0..TIERS.len() {
            let Some(verifier) = self.verifier(index) else {
                continue;
            };
            verdict = verifier.verify_server_cert(
                end_entity,
                intermediates,
                server_name,
                ocsp_response,
                now,
            );
            if verdict.as_ref().err() != Some(&unknown) {
                break;
            }
        }
        verdict
    }

    fn verifier(&self, index: usize) -> Option<Arc<WebPkiServerVerifier>> {
        self.built[index]
            .get_or_init(|| {
                let extra = match TIERS[index] {
                    Tier::Given if self.given.is_empty() => return None,
                    Tier::Given => Vec::new(),
                    Tier::SystemBundle => system_bundle()?,
                    Tier::NativeStore => rustls_native_certs::load_native_certs().certs,
                };
                let mut roots = RootCertStore::empty();
                roots.add_parsable_certificates(self.given.iter().cloned());
                // Certificates a store holds but webpki cannot use are skipped, as reqwest does.
                roots.add_parsable_certificates(extra);
                if roots.is_empty() {
                    return None;
                }
                WebPkiServerVerifier::builder_with_provider(Arc::new(roots), self.provider.clone())
                    .build()
                    .ok()
            })
            .clone()
    }
}

/// The distribution's CA bundle file alone: on Linux one file holds every root, so the
/// certificate directories (one file per CA) are read only when this does not do.
#[cfg(all(unix, not(target_os = "macos")))]
fn system_bundle() -> Option<Vec<CertificateDer<'static>>> {
    let file = openssl_probe::probe().cert_file?;
    let loaded = rustls_native_certs::load_certs_from_paths(Some(&file), None);
    (!loaded.certs.is_empty()).then_some(loaded.certs)
}

/// macOS and Windows keep their roots in a platform store: there is no bundle file to try first.
#[cfg(not(all(unix, not(target_os = "macos"))))]
fn system_bundle() -> Option<Vec<CertificateDer<'static>>> {
    None
}

/// Checks the provider's certificate against the tiers, or, with `--insecure-skip-tls-verify`
/// (`roots` is `None`), accepts any certificate for any name. The handshake signatures are
/// checked either way, so the peer at least holds the key of the certificate it shows.
#[derive(Debug)]
struct Verifier {
    roots: Option<TieredRoots>,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match &self.roots {
            Some(roots) => roots.verify(end_entity, intermediates, server_name, ocsp_response, now),
            None => Ok(ServerCertVerified::assertion()),
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests;
