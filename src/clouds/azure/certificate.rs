//! A service principal's certificate as a client assertion (Azure kubelogin's `-l spn
//! --client-certificate`): the client-credentials grant at Entra's token endpoint with a JWT
//! signed by the certificate's private key, whose header names the certificate as Entra finds it
//! among the application's credentials — `x5t#S256`, the SHA-256 thumbprint (MSAL's choice for
//! Entra, signed PS256), and `x5c`, the certificate chain, which Entra needs for subject name and
//! issuer authentication and which Azure's kubelogin always sends. The claims are those of any
//! RFC 7523 client assertion: `aud` the token endpoint, `iss` = `sub` the client ID, a unique
//! `jti`, `iat`, `nbf` and a short `exp`; a new one for every request.
//!
//! The file is PEM (a `CERTIFICATE` and a `PRIVATE KEY`, `RSA PRIVATE KEY` or `ENCRYPTED PRIVATE
//! KEY`) or PKCS#12 (`.pfx`), told apart by its content as azure-identity does; the password
//! (Azure's `AZURE_CLIENT_CERTIFICATE_PASSWORD`) opens a PKCS#12 file or an encrypted key. The
//! key is RSA (Entra's certificate credentials are RSA), and the certificate sent is the one
//! whose public key is the key's (Azure's kubelogin picks it the same way).

use crate::error::{Exit, fail};
use crate::secret::Secret;
use base64::Engine;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use rsa::pkcs1::EncodeRsaPrivateKey;
use rsa::pkcs8::{DecodePrivateKey, DecodePublicKey};
use rsa::{RsaPrivateKey, RsaPublicKey};
use serde::Serialize;
use sha2::Digest;
use std::path::Path;

/// A certificate file larger than this is the wrong file.
const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// An assertion lives this long: one request, with room for clock skew (as `private_key_jwt`'s).
const ASSERTION_LIFETIME_SECS: i64 = 120;

/// A loaded certificate credential: the signing key and the certificates to name.
pub struct ClientCertificate {
    key: EncodingKey,
    /// DER, the key's certificate first, then the rest of the file's in its order.
    chain: Vec<Vec<u8>>,
}

impl std::fmt::Debug for ClientCertificate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientCertificate")
            .field("thumbprint_sha256", &self.thumbprint_sha256())
            .finish_non_exhaustive()
    }
}

#[derive(Serialize)]
struct Claims<'a> {
    aud: &'a str,
    iss: &'a str,
    sub: &'a str,
    jti: String,
    iat: i64,
    nbf: i64,
    exp: i64,
}

impl ClientCertificate {
    /// Reads `path` (PEM or PKCS#12) with `password` (a PKCS#12 file's, or an encrypted key's).
    pub fn from_file(path: &Path, password: Option<&Secret>) -> anyhow::Result<ClientCertificate> {
        use std::io::Read;
        let shown = path.display().to_string();
        let mut bytes = Vec::new();
        std::fs::File::open(path)
            .and_then(|file| file.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes))
            .map_err(|err| {
                fail(
                    Exit::Input,
                    format!("cannot read the client certificate {shown}: {err}; check the path"),
                )
            })?;
        if bytes.len() as u64 > MAX_FILE_BYTES {
            return Err(fail(
                Exit::Input,
                format!(
                    "the client certificate {shown} is larger than {MAX_FILE_BYTES} bytes: it is not a certificate file"
                ),
            ));
        }
        Self::from_bytes(&bytes, &shown, password)
    }

    /// Reads a certificate file's content; `shown` names it in messages.
    pub fn from_bytes(
        bytes: &[u8],
        shown: &str,
        password: Option<&Secret>,
    ) -> anyhow::Result<ClientCertificate> {
        let bad = |detail: String| {
            fail(
                Exit::Input,
                format!("the client certificate {shown} {detail}"),
            )
        };
        // azure-identity's rule: PEM if it says so, else PKCS#12.
        let is_pem = bytes.windows(10).any(|w| w == b"-----BEGIN");
        let (key, certificates) = if is_pem {
            read_pem(bytes, password).map_err(bad)?
        } else {
            read_pkcs12(bytes, password).map_err(bad)?
        };
        let public = key.to_public_key();
        let leaf = certificates
            .iter()
            .position(|der| public_key_of(der).as_ref() == Some(&public))
            .ok_or_else(|| {
                bad(
                    "holds no certificate of its private key; put the key's certificate beside it"
                        .into(),
                )
            })?;
        let mut chain = certificates;
        let leaf = chain.remove(leaf);
        chain.insert(0, leaf);
        let pkcs1 = key
            .to_pkcs1_der()
            .map_err(|_| bad("has a private key kubecred cannot use".into()))?;
        Ok(ClientCertificate {
            key: EncodingKey::from_rsa_der(pkcs1.as_bytes()),
            chain,
        })
    }

    /// The certificate's SHA-256 thumbprint, base64url (the `x5t#S256` header).
    pub fn thumbprint_sha256(&self) -> String {
        base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(sha2::Sha256::digest(&self.chain[0]))
    }

    /// The certificate's SHA-1 thumbprint in hex, as the Azure portal lists it (for messages).
    pub fn thumbprint_hex(&self) -> String {
        sha1::Sha1::digest(&self.chain[0])
            .iter()
            .map(|byte| format!("{byte:02X}"))
            .collect()
    }

    /// One assertion for one token request to `token_endpoint` as `client_id`.
    pub fn assertion(
        &self,
        client_id: &str,
        token_endpoint: &str,
        now: chrono::DateTime<chrono::Utc>,
    ) -> anyhow::Result<Secret> {
        let mut header = Header::new(Algorithm::PS256);
        header.x5t_s256 = Some(self.thumbprint_sha256());
        header.x5c = Some(
            self.chain
                .iter()
                .map(|der| base64::engine::general_purpose::STANDARD.encode(der))
                .collect(),
        );
        let iat = now.timestamp();
        let claims = Claims {
            aud: token_endpoint,
            iss: client_id,
            sub: client_id,
            // 128 random bits: Entra refuses a replayed jti.
            jti: oauth2::CsrfToken::new_random().secret().to_string(),
            iat,
            nbf: iat,
            exp: iat + ASSERTION_LIFETIME_SECS,
        };
        jsonwebtoken::encode(&header, &claims, &self.key)
            .map(Secret::new)
            .map_err(|err| {
                fail(
                    Exit::Input,
                    format!(
                        "signing the client assertion with the certificate's key failed ({err}); check the certificate file"
                    ),
                )
            })
    }
}

/// The RSA public key a DER certificate carries, if it is one.
fn public_key_of(der: &[u8]) -> Option<RsaPublicKey> {
    let (_, certificate) = x509_parser::parse_x509_certificate(der).ok()?;
    RsaPublicKey::from_public_key_der(certificate.public_key().raw).ok()
}

fn not_rsa() -> String {
    "has a private key that is not RSA; Entra's certificate credentials are RSA keys".into()
}

/// The key and the certificates of a PEM file.
fn read_pem(
    bytes: &[u8],
    password: Option<&Secret>,
) -> Result<(RsaPrivateKey, Vec<Vec<u8>>), String> {
    let blocks = pem::parse_many(bytes).map_err(|_| "is not valid PEM".to_string())?;
    let mut key = None;
    let mut certificates = Vec::new();
    for block in &blocks {
        let parsed = match block.tag() {
            "CERTIFICATE" => {
                certificates.push(block.contents().to_vec());
                continue;
            }
            "PRIVATE KEY" => RsaPrivateKey::from_pkcs8_der(block.contents()).map_err(|_| not_rsa()),
            "RSA PRIVATE KEY" => {
                use rsa::pkcs1::DecodeRsaPrivateKey;
                RsaPrivateKey::from_pkcs1_der(block.contents())
                    .map_err(|_| "has an RSA PRIVATE KEY block that does not parse".to_string())
            }
            "ENCRYPTED PRIVATE KEY" => {
                let password = password.ok_or_else(|| {
                    "has an encrypted private key and no password was given; set AZURE_CLIENT_CERTIFICATE_PASSWORD".to_string()
                })?;
                RsaPrivateKey::from_pkcs8_encrypted_der(block.contents(), password.expose())
                    .map_err(|_| {
                        "has an encrypted private key that its password does not open (or that is not RSA); check the password".to_string()
                    })
            }
            _ => continue,
        }?;
        if key.replace(parsed).is_some() {
            return Err("holds more than one private key; keep the one of the certificate".into());
        }
    }
    let key = key.ok_or_else(|| {
        "holds no private key; put the certificate's PRIVATE KEY in the same file".to_string()
    })?;
    Ok((key, certificates))
}

/// The key and its certificate chain of a PKCS#12 file.
fn read_pkcs12(
    bytes: &[u8],
    password: Option<&Secret>,
) -> Result<(RsaPrivateKey, Vec<Vec<u8>>), String> {
    let password = password.map(Secret::expose).unwrap_or("");
    let store = p12_keystore::KeyStore::from_pkcs12(bytes, password).map_err(|err| match err {
        p12_keystore::error::Error::MacError(_) => {
            "is a PKCS#12 file its password does not open; check the password (AZURE_CLIENT_CERTIFICATE_PASSWORD)".to_string()
        }
        _ => "is neither PEM nor a PKCS#12 file kubecred can read (PBES2/AES or 3DES/RC2, with a MAC)".to_string(),
    })?;
    let (_, entry) = store
        .private_key_chain()
        .ok_or_else(|| "is a PKCS#12 file without a private key and its certificate".to_string())?;
    let key = RsaPrivateKey::from_pkcs8_der(entry.key()).map_err(|_| not_rsa())?;
    let chain = entry.chain().iter().map(|c| c.as_der().to_vec()).collect();
    Ok((key, chain))
}

#[cfg(test)]
#[path = "certificate_tests.rs"]
mod tests;
