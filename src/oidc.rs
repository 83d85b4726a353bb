//! OpenID Connect discovery, the provider's signing keys (JWKS), and ID token verification.
//!
//! The discovery document and the JWKS are cached on disk under `<cache dir>/oidc/`, keyed by the
//! SHA-256 of the issuer URL, for [`DISCOVERY_TTL`] and [`JWKS_TTL`]: with a warm cache a token
//! refresh costs exactly one round trip (the token endpoint). An ID token is accepted only when
//! it is signed with an asymmetric algorithm by a key in the provider's JWKS, names the
//! provider's issuer, is meant for our client ID, has not expired and carries our nonce.
//! Errors never include the token.
//!
//! jsonwebtoken picks its RustCrypto backend from its crate features by itself: nothing needs
//! installing at startup.

use crate::cache::disk;
use crate::config::{is_loopback_host, Config};
use crate::error::{fail, Exit};
use crate::http;
use crate::secret::Secret;
use chrono::{DateTime, Duration, Utc};
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use reqwest::blocking::Client;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use url::Url;

/// How long a fetched discovery document is used without asking the provider again.
pub const DISCOVERY_TTL: Duration = Duration::hours(24);
/// How long a fetched JWKS is used; an unknown key ID refetches it earlier (key rotation).
pub const JWKS_TTL: Duration = Duration::hours(24);
/// Clock skew tolerated on `exp` and `nbf`.
const CLOCK_LEEWAY: Duration = Duration::seconds(60);

/// The parts of the provider's discovery document kubecred uses, validated: `issuer` is the
/// provider's own spelling (tokens must carry exactly it), endpoints are https unless on loopback.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderMetadata {
    pub issuer: String,
    pub authorization_endpoint: Option<Url>,
    pub token_endpoint: Url,
    pub device_authorization_endpoint: Option<Url>,
    pub jwks_uri: Url,
    pub code_challenge_methods_supported: Option<Vec<String>>,
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
}

impl ProviderMetadata {
    /// Whether PKCE with S256 should work: `code_challenge_methods_supported` is absent (or not a
    /// list of strings, which counts as absent), or it contains exactly `"S256"`. Providers that
    /// do not publish the list often support PKCE anyway, so an absent list counts as yes; a list
    /// without S256 (an empty one included) counts as no.
    pub fn supports_pkce_s256(&self) -> bool {
        self.code_challenge_methods_supported
            .as_ref()
            .is_none_or(|methods| methods.iter().any(|m| m == "S256"))
    }
}

/// The discovery document as sent: unknown fields ignored, optional lists of the wrong type
/// treated as absent (some providers publish odd values there, and they are only hints).
#[derive(Deserialize)]
struct RawMetadata {
    issuer: Option<String>,
    authorization_endpoint: Option<String>,
    token_endpoint: Option<String>,
    device_authorization_endpoint: Option<String>,
    jwks_uri: Option<String>,
    #[serde(default, deserialize_with = "lenient_list")]
    code_challenge_methods_supported: Option<Vec<String>>,
    #[serde(default, deserialize_with = "lenient_list")]
    token_endpoint_auth_methods_supported: Option<Vec<String>>,
}

fn lenient_list<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    Ok(serde_json::from_value(Value::deserialize(d)?).ok())
}

impl ProviderMetadata {
    /// Checks a discovery document against the configured issuer.
    fn validate(document: &Value, configured: &Url) -> anyhow::Result<ProviderMetadata> {
        let problem = |reason: String| {
            fail(
                Exit::Provider,
                format!("the OpenID discovery document of {configured} {reason}"),
            )
        };
        let raw: RawMetadata = serde_json::from_value(document.clone())
            .map_err(|err| problem(format!("is malformed ({err}); check --issuer-url")))?;

        let issuer = raw
            .issuer
            .ok_or_else(|| problem("has no issuer; check --issuer-url".into()))?;
        if !same_issuer(&issuer, configured) {
            return Err(problem(format!(
                "names the issuer {issuer}; set --issuer-url to exactly that (tokens carry it in iss)"
            )));
        }

        let endpoint = |name: &str, value: Option<String>| -> anyhow::Result<Option<Url>> {
            let Some(value) = value else { return Ok(None) };
            let url = Url::parse(&value)
                .map_err(|err| problem(format!("has an invalid {name} {value:?} ({err})")))?;
            match url.scheme() {
                "https" => Ok(Some(url)),
                "http" if is_loopback_host(&url) => Ok(Some(url)),
                _ => Err(problem(format!(
                    "has {name} {}, which is not https; kubecred sends credentials only over https (plain http only on loopback)",
                    http::display_url(&url)
                ))),
            }
        };
        let required = |name: &str, value: Option<String>| -> anyhow::Result<Url> {
            endpoint(name, value)?.ok_or_else(|| {
                problem(format!(
                    "has no {name}; is {configured} an OpenID Connect provider?"
                ))
            })
        };

        Ok(ProviderMetadata {
            authorization_endpoint: endpoint("authorization_endpoint", raw.authorization_endpoint)?,
            token_endpoint: required("token_endpoint", raw.token_endpoint)?,
            device_authorization_endpoint: endpoint(
                "device_authorization_endpoint",
                raw.device_authorization_endpoint,
            )?,
            jwks_uri: required("jwks_uri", raw.jwks_uri)?,
            code_challenge_methods_supported: raw.code_challenge_methods_supported,
            token_endpoint_auth_methods_supported: raw.token_endpoint_auth_methods_supported,
            issuer,
        })
    }
}

/// The OpenID spec wants the issuer to match exactly, but `https://x` against `https://x/` is a
/// common configuration slip (and `Url` adds the slash to a bare host): accept exactly that one.
fn same_issuer(document_issuer: &str, configured: &Url) -> bool {
    let configured = configured.as_str();
    document_issuer == configured
        || document_issuer.strip_suffix('/') == Some(configured)
        || configured.strip_suffix('/') == Some(document_issuer)
}

/// The claims of a verified ID token that kubecred uses.
#[derive(Debug, Clone, PartialEq)]
pub struct IdTokenClaims {
    pub sub: String,
    /// The token's real expiry (no leeway applied).
    pub exp: DateTime<Utc>,
    /// `email` and `preferred_username` are for display only ("logged in as …"), never for a
    /// decision.
    pub email: Option<String>,
    pub preferred_username: Option<String>,
}

/// A discovered provider: its metadata, and its keys once they are needed.
#[derive(Debug)]
pub struct Provider {
    pub metadata: ProviderMetadata,
    cache: CachePaths,
    /// Loaded on the first verification; replaced when refetched.
    keys: Mutex<Option<KeySet>>,
}

#[derive(Debug, Clone)]
struct KeySet {
    keys: Vec<Jwk>,
    fetched_at: DateTime<Utc>,
}

#[derive(Debug, Clone)]
struct CachePaths {
    discovery: PathBuf,
    jwks: PathBuf,
}

impl CachePaths {
    fn new(config: &Config) -> CachePaths {
        let dir = config.cache_dir.join("oidc");
        let digest = Sha256::digest(config.issuer.as_str().as_bytes());
        let stem: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        CachePaths {
            discovery: dir.join(format!("{stem}.json")),
            jwks: dir.join(format!("{stem}.jwks.json")),
        }
    }
}

/// What the discovery cache file holds. The document is kept as sent, so that a newer kubecred
/// that reads more fields finds them.
#[derive(Serialize, Deserialize)]
struct CachedDiscovery {
    issuer: String,
    fetched_at: DateTime<Utc>,
    document: Value,
}

#[derive(Serialize, Deserialize)]
struct CachedJwks {
    jwks_uri: String,
    fetched_at: DateTime<Utc>,
    jwks: Value,
}

impl Provider {
    /// Discovers the configured issuer, from the disk cache when it is younger than
    /// [`DISCOVERY_TTL`], otherwise from `<issuer>/.well-known/openid-configuration`.
    pub fn discover(http: &Client, config: &Config) -> anyhow::Result<Provider> {
        Provider::discover_at(http, config, Utc::now())
    }

    /// [`Provider::discover`] at a given time (tests).
    pub fn discover_at(
        http: &Client,
        config: &Config,
        now: DateTime<Utc>,
    ) -> anyhow::Result<Provider> {
        let cache = CachePaths::new(config);
        let cached = read_cache::<CachedDiscovery>(&cache.discovery)
            .filter(|c| {
                c.issuer == config.issuer.as_str() && fresh(c.fetched_at, now, DISCOVERY_TTL)
            })
            .and_then(|c| ProviderMetadata::validate(&c.document, &config.issuer).ok());
        let metadata = match cached {
            Some(metadata) => {
                crate::debug!(
                    1,
                    "using the cached discovery document of {}",
                    config.issuer
                );
                metadata
            }
            None => {
                let url = well_known_url(&config.issuer);
                crate::debug!(1, "fetching {url}");
                let document: Value = http::get_json(http, &url, "the OpenID discovery document")?;
                let metadata = ProviderMetadata::validate(&document, &config.issuer)?;
                write_cache(
                    &cache.discovery,
                    &CachedDiscovery {
                        issuer: config.issuer.to_string(),
                        fetched_at: now,
                        document,
                    },
                );
                metadata
            }
        };
        Ok(Provider {
            metadata,
            cache,
            keys: Mutex::new(None),
        })
    }

    /// Verifies an ID token from this provider and returns its claims. `expected_nonce` is the
    /// nonce sent with the login request; `None` for refreshed tokens, which need not carry one.
    pub fn verify_id_token(
        &self,
        http: &Client,
        token: &Secret,
        client_id: &str,
        expected_nonce: Option<&str>,
        now: DateTime<Utc>,
    ) -> anyhow::Result<IdTokenClaims> {
        let token = token.expose();
        let issuer = &self.metadata.issuer;
        let rejected = |reason: String, next: &str| {
            fail(
                Exit::Provider,
                format!("the ID token from {issuer} failed verification: {reason}; {next}"),
            )
        };

        let header = parse_header(token).ok_or_else(|| {
            rejected(
                "it is not a JWT".into(),
                "check that --issuer-url points at an OpenID Connect provider",
            )
        })?;
        // Decide on the algorithm before touching any key: `none` and the HMAC family would let
        // whoever knows the client secret (or nobody) mint tokens.
        let alg = match header.alg.as_str() {
            "RS256" => Algorithm::RS256,
            "RS384" => Algorithm::RS384,
            "RS512" => Algorithm::RS512,
            "PS256" => Algorithm::PS256,
            "PS384" => Algorithm::PS384,
            "PS512" => Algorithm::PS512,
            "ES256" => Algorithm::ES256,
            "ES384" => Algorithm::ES384,
            "EdDSA" => Algorithm::EdDSA,
            other => {
                let reason = match other {
                    "none" | "" => "it is unsigned (alg none)".to_string(),
                    hs if hs.starts_with("HS") => format!(
                        "it is signed with {hs}, a shared-secret algorithm kubecred does not accept"
                    ),
                    _ => format!(
                        "its algorithm {:?} is not supported",
                        other.chars().take(16).collect::<String>()
                    ),
                };
                return Err(rejected(
                    reason,
                    "configure the client at the provider to sign ID tokens with RS256, PS256, ES256 or EdDSA",
                ));
            }
        };

        let key = match self.key_for(http, alg, header.kid.as_deref(), now) {
            Ok(key) => key,
            Err(KeyError::Fetch(err)) => {
                return Err(fail(
                    Exit::Provider,
                    format!(
                        "cannot verify the ID token from {issuer}: {}",
                        crate::error::one_line(&err)
                    ),
                ))
            }
            Err(KeyError::Missing(reason)) => {
                return Err(rejected(
                    reason,
                    "if the provider has just rotated its keys, run the command again; otherwise check --issuer-url",
                ))
            }
        };

        // jsonwebtoken checks only the signature here; the claims are checked below, against
        // the injected clock and with messages that say which claim failed.
        let mut validation = Validation::new(alg);
        validation.required_spec_claims.clear();
        validation.validate_exp = false;
        validation.validate_aud = false;
        let claims = match jsonwebtoken::decode::<serde_json::Map<String, Value>>(
            token,
            &key,
            &validation,
        ) {
            Ok(data) => data.claims,
            Err(err) => {
                use jsonwebtoken::errors::ErrorKind;
                let reason = match err.kind() {
                    ErrorKind::InvalidSignature => {
                        "its signature does not match the provider's key".to_string()
                    }
                    ErrorKind::InvalidEcdsaKey
                    | ErrorKind::InvalidRsaKey(_)
                    | ErrorKind::InvalidEddsaKey
                    | ErrorKind::InvalidKeyFormat => {
                        format!("the provider's key for it is unusable ({err})")
                    }
                    // Not `{err}`: a JSON error can quote parts of the token.
                    ErrorKind::Base64(_) => "it is not valid base64url".to_string(),
                    ErrorKind::Json(_) | ErrorKind::Utf8(_) => {
                        "its header or claims are not a JSON object".to_string()
                    }
                    _ => "it is malformed".to_string(),
                };
                return Err(rejected(
                    reason,
                    "it was altered, or issued by another provider; check --issuer-url",
                ));
            }
        };

        let string = |name: &str| claims.get(name).and_then(Value::as_str);
        let time = |name: &str| {
            claims
                .get(name)
                .and_then(|v| v.as_i64().or_else(|| v.as_f64().map(|f| f as i64)))
                .and_then(|secs| DateTime::from_timestamp(secs, 0))
        };

        let iss = string("iss").unwrap_or("");
        if iss != issuer {
            return Err(rejected(
                format!("its issuer (iss) is {iss:?}, not {issuer:?}"),
                "the provider's tokens and its discovery document disagree; check the provider's issuer setting",
            ));
        }

        let audiences: Vec<&str> = match claims.get("aud") {
            Some(Value::String(one)) => vec![one.as_str()],
            Some(Value::Array(many)) => many.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if !audiences.contains(&client_id) {
            return Err(rejected(
                format!("its audience {audiences:?} does not include the client ID {client_id:?}"),
                "check --client-id",
            ));
        }
        // OpenID Connect Core 3.1.3.7: when `azp` is present it must be our client ID, whatever
        // the number of audiences.
        match claims.get("azp") {
            None => {}
            Some(Value::String(azp)) if azp == client_id => {}
            Some(Value::String(azp)) => {
                return Err(rejected(
                    format!("it was issued to the client {azp:?} (azp), not {client_id:?}"),
                    "check --client-id",
                ))
            }
            Some(_) => {
                return Err(rejected(
                    "its authorized party (azp) is not a string".into(),
                    "the provider's ID tokens must carry azp as a string",
                ))
            }
        }

        let exp = time("exp").ok_or_else(|| {
            rejected(
                "it has no valid exp claim".into(),
                "the provider's ID tokens must carry an expiry",
            )
        })?;
        if exp + CLOCK_LEEWAY <= now {
            return Err(rejected(
                format!(
                    "it expired at {} (this machine's time is {})",
                    rfc3339(exp),
                    rfc3339(now)
                ),
                "check this machine's clock, then log in again",
            ));
        }
        if let Some(nbf) = time("nbf").filter(|nbf| *nbf > now + CLOCK_LEEWAY) {
            return Err(rejected(
                format!(
                    "it is not valid before {} (this machine's time is {})",
                    rfc3339(nbf),
                    rfc3339(now)
                ),
                "check this machine's clock",
            ));
        }

        if let Some(expected) = expected_nonce {
            // The nonce value itself stays out of the message: it ties a login to this run.
            match string("nonce") {
                Some(nonce) if nonce == expected => {}
                Some(_) => {
                    return Err(rejected(
                        "its nonce does not match the one kubecred sent".into(),
                        "the login answer may be stale or replayed; log in again",
                    ))
                }
                None => {
                    return Err(rejected(
                        "it carries no nonce although kubecred sent one".into(),
                        "log in again; if it persists, the provider does not support nonces",
                    ))
                }
            }
        }

        let sub = string("sub").filter(|s| !s.is_empty()).ok_or_else(|| {
            rejected(
                "it has no subject (sub)".into(),
                "the provider's ID tokens must name the user",
            )
        })?;

        Ok(IdTokenClaims {
            sub: sub.to_string(),
            exp,
            email: string("email").map(str::to_string),
            preferred_username: string("preferred_username").map(str::to_string),
        })
    }

    /// Finds the key that signed a token: from the loaded/cached JWKS first, then, if it is not
    /// there, from a fresh fetch (once: keys rotate, but a second miss is a real failure).
    fn key_for(
        &self,
        http: &Client,
        alg: Algorithm,
        kid: Option<&str>,
        now: DateTime<Utc>,
    ) -> Result<DecodingKey, KeyError> {
        let mut keys = self
            .keys
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut fetched = false;
        if keys
            .as_ref()
            .is_none_or(|set| !fresh(set.fetched_at, now, JWKS_TTL))
        {
            *keys = self.cached_jwks(now);
        }
        if keys.is_none() {
            *keys = Some(self.fetch_jwks(http, now).map_err(KeyError::Fetch)?);
            fetched = true;
        }
        loop {
            let set = keys.as_ref().expect("loaded above");
            match select_key(&set.keys, alg, kid) {
                Ok(jwk) => {
                    return DecodingKey::from_jwk(jwk).map_err(|err| {
                        KeyError::Missing(format!("the provider's key for it is unusable ({err})"))
                    })
                }
                Err(_) if !fetched => {
                    crate::debug!(1, "no matching key in the cached JWKS; fetching it again");
                    *keys = Some(self.fetch_jwks(http, now).map_err(KeyError::Fetch)?);
                    fetched = true;
                }
                Err(reason) => {
                    return Err(KeyError::Missing(format!(
                        "{reason} (JWKS at {})",
                        http::display_url(&self.metadata.jwks_uri)
                    )))
                }
            }
        }
    }

    fn cached_jwks(&self, now: DateTime<Utc>) -> Option<KeySet> {
        let cached = read_cache::<CachedJwks>(&self.cache.jwks)?;
        if cached.jwks_uri != self.metadata.jwks_uri.as_str()
            || !fresh(cached.fetched_at, now, JWKS_TTL)
        {
            return None;
        }
        Some(KeySet {
            keys: parse_jwks(&cached.jwks)?,
            fetched_at: cached.fetched_at,
        })
    }

    fn fetch_jwks(&self, http: &Client, now: DateTime<Utc>) -> anyhow::Result<KeySet> {
        crate::debug!(1, "fetching {}", self.metadata.jwks_uri);
        let jwks: Value = http::get_json(
            http,
            &self.metadata.jwks_uri,
            "the provider's signing keys (JWKS)",
        )?;
        let keys = parse_jwks(&jwks).ok_or_else(|| {
            fail(
                Exit::Provider,
                format!(
                    "the provider's JWKS at {} has no \"keys\" list; the provider is misconfigured",
                    http::display_url(&self.metadata.jwks_uri)
                ),
            )
        })?;
        write_cache(
            &self.cache.jwks,
            &CachedJwks {
                jwks_uri: self.metadata.jwks_uri.to_string(),
                fetched_at: now,
                jwks,
            },
        );
        Ok(KeySet {
            keys,
            fetched_at: now,
        })
    }
}

enum KeyError {
    /// The JWKS could not be fetched; the error is a complete message.
    Fetch(anyhow::Error),
    /// No usable key for the token, even after a refetch; the reason for the caller's message.
    Missing(String),
}

/// Picks the JWK for a token's algorithm and key ID. A key ID must match, except that a JWKS
/// with a single suitable key that has no `kid` serves every token (some providers omit kids).
fn select_key<'a>(keys: &'a [Jwk], alg: Algorithm, kid: Option<&str>) -> Result<&'a Jwk, String> {
    let suitable: Vec<&Jwk> = keys.iter().filter(|jwk| key_suits(jwk, alg)).collect();
    let single_unnamed = match suitable.as_slice() {
        [only] if kid.is_none() || only.common.key_id.is_none() => Some(*only),
        _ => None,
    };
    if let Some(kid) = kid {
        if let Some(jwk) = suitable
            .iter()
            .find(|jwk| jwk.common.key_id.as_deref() == Some(kid))
        {
            return Ok(jwk);
        }
        if let Some(jwk) = single_unnamed {
            return Ok(jwk);
        }
        if keys
            .iter()
            .any(|jwk| jwk.common.key_id.as_deref() == Some(kid))
        {
            return Err(format!(
                "the provider's key {kid:?} is not a signing key for {alg:?}"
            ));
        }
        return Err(format!("the provider publishes no key {kid:?}"));
    }
    single_unnamed.ok_or_else(|| {
        format!(
            "it names no key (no kid) and the provider publishes {} {alg:?} keys",
            suitable.len()
        )
    })
}

/// Whether a JWK can verify `alg`: right key type and curve, not marked for encryption, and no
/// conflicting `alg` of its own.
fn key_suits(jwk: &Jwk, alg: Algorithm) -> bool {
    if matches!(&jwk.common.public_key_use, Some(usage) if *usage != PublicKeyUse::Signature) {
        return false;
    }
    if let Some(key_alg) = jwk.common.key_algorithm {
        if Algorithm::try_from(key_alg).ok() != Some(alg) {
            return false;
        }
    }
    match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => matches!(
            alg,
            Algorithm::RS256
                | Algorithm::RS384
                | Algorithm::RS512
                | Algorithm::PS256
                | Algorithm::PS384
                | Algorithm::PS512
        ),
        AlgorithmParameters::EllipticCurve(ec) => matches!(
            (alg, &ec.curve),
            (Algorithm::ES256, EllipticCurve::P256) | (Algorithm::ES384, EllipticCurve::P384)
        ),
        AlgorithmParameters::OctetKeyPair(okp) => {
            alg == Algorithm::EdDSA && okp.curve == EllipticCurve::Ed25519
        }
        _ => false,
    }
}

/// The keys of a JWKS document; keys kubecred cannot parse are skipped rather than failing the
/// whole set (providers publish encryption keys and newer key types alongside signing keys).
fn parse_jwks(jwks: &Value) -> Option<Vec<Jwk>> {
    let keys = jwks.get("keys")?.as_array()?;
    Some(
        keys.iter()
            .filter_map(|key| serde_json::from_value(key.clone()).ok())
            .collect(),
    )
}

struct JwtHeader {
    alg: String,
    kid: Option<String>,
}

/// Reads a JWT's header without trusting it, so that the algorithm can be vetted before any key
/// is looked up. jsonwebtoken's own header parser rejects `none` with a vague error.
fn parse_header(token: &str) -> Option<JwtHeader> {
    let json = crate::tokens::unverified_jwt_segment(token, 0)?;
    Some(JwtHeader {
        alg: json.get("alg")?.as_str()?.to_string(),
        kid: json.get("kid").and_then(Value::as_str).map(str::to_string),
    })
}

fn well_known_url(issuer: &Url) -> Url {
    let mut url = issuer.clone();
    let path = format!(
        "{}/.well-known/openid-configuration",
        issuer.path().trim_end_matches('/')
    );
    url.set_path(&path);
    url.set_query(None);
    url.set_fragment(None);
    url
}

/// Fetched at most `ttl` ago, and not in the future (a clock that jumped back refetches).
fn fresh(fetched_at: DateTime<Utc>, now: DateTime<Utc>, ttl: Duration) -> bool {
    let age = now - fetched_at;
    age >= -CLOCK_LEEWAY && age < ttl
}

fn rfc3339(time: DateTime<Utc>) -> String {
    time.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// A cache file, or `None` when it is missing or unreadable: either way the caller refetches.
fn read_cache<T: serde::de::DeserializeOwned>(path: &Path) -> Option<T> {
    let bytes = std::fs::read(path).ok()?;
    match serde_json::from_slice(&bytes) {
        Ok(value) => Some(value),
        Err(err) => {
            crate::debug!(
                1,
                "ignoring the corrupt cache file {}: {err}",
                path.display()
            );
            None
        }
    }
}

/// Writes a cache file atomically and privately ([`disk::write_private`]). Failing to cache
/// costs a round trip next time, not this run: it is logged, not returned. Parallel writers race
/// harmlessly: the last rename wins and every version is complete.
fn write_cache<T: Serialize>(path: &Path, value: &T) {
    let written = serde_json::to_vec(value)
        .map_err(std::io::Error::other)
        .and_then(|bytes| disk::write_private(path, &bytes));
    if let Err(err) = written {
        crate::debug!(
            1,
            "could not write the cache file {}: {err}",
            path.display()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{exit_code_of, one_line};
    use crate::http::test_server::{Answer, TestServer};
    use crate::http::tests::test_config;
    use base64::Engine;
    use chrono::TimeZone;
    use jsonwebtoken::{EncodingKey, Header};
    use serde_json::json;

    // Test-only private keys (generated once with openssl, DER as base64): RSA 2048 (PKCS#1),
    // two P-256 keys and an Ed25519 key (PKCS#8).
    const RSA_KEY: &str = "MIIEowIBAAKCAQEA4Hvht+QE8y/OUw1pdjslyuhRiKFB+bfV9CKA9pM91aJg6jU+MgQ0SwrBgaocfa+OlQvPMpNCDrVyfX+nZnQtr2ihgjiD6suXktraaqFiAOjQbUOicsEpyawgldOEbMgknGQQMx2XrE4k1l2usI1NGM4LeekrFWd69nBHN7pRBK5S4hQIkNjXQMuFqraFcXO9vJf44A6GjSQPT9LZpLS/r70qZCt3U7qzdD5j2pow7p8+cKVBI4DBWKLjeV5o5leYOejiZJW4lytSF+SZQ/EQ8jKM86HU0MoYH0FiFgf+v4M9IY1D38vytVwpiHxO7NS0G3TcsCrKLkpk2PuNdX05zQIDAQABAoIBADKQBLfgTrMd9fmkADimuuz4pgDB3bPrEfBy4xxm7tsTP4QRaQhoBQVQD2Tu1YsDw3hT2CAaphrdCMQ2wBRmH7IuPY6wvxngMKxdyiuRXRs6VVP/E3SIiKqJsC8/HMlJzWFCcpmo1TR0x3xXTpUqxo5LPq9/cvpXvA0NHiVxvHTyiOmYCFE4lot9coA1WmvV546r8u2be1nO/vh6xbssgaW4y6sP5Ec+roIDw4f2EqfTOBs0oJWrC6vuXoqmFNyie/CdQpGJW1FRLIAxmixJz9r8BnYxnWnoGpe7mxo6pl0bl+/eQUeyDclK+GA2wRCxU805FBy2E0tjHwJ6vO0zfnECgYEA9MlEZrvresGsId4eZzd2yrw/x3PnwWt3+DekJksrSSdEdMaESvcEvCd8R+hmo5mdA8sDcGWlSPRHYdiHnxz7o+Mt5/TJ22hABLipsqJwqmogs4lgRk+z+2DEsp43FFhH1zWerA7HMwYPGZL8wEeabEnfRYOGrQbgTsrZRasU2WkCgYEA6sSE7C7U9vAkq7cpWY9v6fbx3wBuPSUH2BTL43eaxhrTOuUM+dvSnH3XWlKmPnyPbGvITUW5YvULYoh0FW4vI+7uvgB+edw7DfHFjA/gqm47SjcIsGQUtSJ63gkHQ+B/5CYlq4J4DwvaX8HDe4suZHV0cYBrQ+6ndnW96bEZDMUCgYEAnnu8xIMAd87yok7MAmm/iI0PAhSBxRHOb6+eoIhkcw1wXea1ek+qCiPKbEgERAHNzcnf5SJ6O9ykZq4pSJQcPER20UoEcwBxCl2AyT4wkbT6jSLxaTRrQ+KoFzkmUg7CHI0DuUQsJlXS6uzmpZr2WQwO+VOpm1brXTgqKdgVPJkCgYAgPIHgCII3sjvm1Ey6Pobogn8t1tpMTRRpqFliz56SC0br9F22xWeDE4iJn4WyWNo80gP8EFHnc6xviDsgYjPY5EsmDd1QEFyPip5MoDWCUYaUpz/rMKLjSGvEp0q3GFGXW2Gazlx7/G2s7mdQRIlHRBWMLE0OU+vsyTgdqbK93QKBgBpsGtI2RVwmyjlVvjMwlMv71r7/7/c5iV5bfLgbnWgyQ7nlKXKZ4dcwblgWCl1AM1X7vqpKr9Vya4NA9W4ygk21x1FAOTc3xUpK7hmZN+NzOQpyFesjLpkdGF1wKduyPTjBjLUmthGax1KoA104DCOTa6hhhy3MZSaIaVQMES16";
    const EC_KEY: &str = "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgoiZr4z4clnY2Y1zbl3hVtOC3/bzeBaaZvUUkvsT+C46hRANCAASZKTy9DaTZNisC4TqyYQ7CQoA9jCQ5XOP2hPySpuJRvAxRh8+OWvkccTKted405/20BWlTf+m12sMQAyiBRbjK";
    const EC_KEY_2: &str = "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgcWphy7FsfZVwIFlgxrkDvHZDPmkvFofiJgKSWxmT0+ahRANCAAQpbCfka7SUfQ0+/JrAd4HnM9U6wr/S42BMoT2qqQnFFpOauFmmDFGyV66zpUP5znDO0Vls6wSgyepUf2+AicVr";
    const ED_KEY: &str = "MC4CAQAwBQYDK2VwBCIEIGDgVtgMZ+kbVKMaER5JOaEV2nSnW5n5O3x7a/itHeg6";

    const CLIENT_ID: &str = "kubectl";
    const NONCE: &str = "n-0S6_WzA2Mj";

    fn der(b64: &str) -> Vec<u8> {
        base64::engine::general_purpose::STANDARD
            .decode(b64)
            .unwrap()
    }

    struct TestKey {
        alg: Algorithm,
        kid: Option<&'static str>,
        key: EncodingKey,
    }

    impl TestKey {
        fn rsa() -> TestKey {
            TestKey {
                alg: Algorithm::RS256,
                kid: Some("rsa-1"),
                key: EncodingKey::from_rsa_der(&der(RSA_KEY)),
            }
        }
        fn ec() -> TestKey {
            TestKey {
                alg: Algorithm::ES256,
                kid: Some("ec-1"),
                key: EncodingKey::from_ec_der(&der(EC_KEY)),
            }
        }
        fn ec2() -> TestKey {
            TestKey {
                alg: Algorithm::ES256,
                kid: Some("ec-2"),
                key: EncodingKey::from_ec_der(&der(EC_KEY_2)),
            }
        }
        fn ed() -> TestKey {
            TestKey {
                alg: Algorithm::EdDSA,
                kid: Some("ed-1"),
                key: EncodingKey::from_ed_der(&der(ED_KEY)),
            }
        }

        /// The public half, as the provider would publish it.
        fn jwk(&self) -> Value {
            let mut jwk = Jwk::from_encoding_key(&self.key, self.alg).unwrap();
            jwk.common.key_id = self.kid.map(str::to_string);
            jwk.common.public_key_use = Some(PublicKeyUse::Signature);
            serde_json::to_value(jwk).unwrap()
        }

        fn sign(&self, claims: &Value) -> Secret {
            let mut header = Header::new(self.alg);
            header.kid = self.kid.map(str::to_string);
            Secret::new(jsonwebtoken::encode(&header, claims, &self.key).unwrap())
        }
    }

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 21, 12, 0, 0).unwrap()
    }

    /// A loopback provider: discovery (issuer without a trailing slash, as most providers spell
    /// it) and a JWKS with the given keys.
    fn provider_server(keys: &[&TestKey]) -> TestServer {
        let server = TestServer::start();
        server.answer(
            "/.well-known/openid-configuration",
            Answer::json(discovery_doc(&server.base)),
        );
        set_jwks(&server, keys);
        server
    }

    fn discovery_doc(base: &str) -> String {
        json!({
            "issuer": base,
            "authorization_endpoint": format!("{base}/auth"),
            "token_endpoint": format!("{base}/token"),
            "jwks_uri": format!("{base}/jwks"),
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": "client_secret_basic", // wrong type: ignored
            "some_future_field": {"x": 1},
        })
        .to_string()
    }

    fn set_jwks(server: &TestServer, keys: &[&TestKey]) {
        let keys: Vec<Value> = keys.iter().map(|k| k.jwk()).collect();
        server.answer("/jwks", Answer::json(json!({ "keys": keys }).to_string()));
    }

    fn claims(server: &TestServer) -> Value {
        json!({
            "iss": server.base,
            "sub": "user-42",
            "aud": CLIENT_ID,
            "exp": (now() + Duration::minutes(10)).timestamp(),
            "iat": now().timestamp(),
            "nonce": NONCE,
            "email": "ada@example.com",
            "email_verified": true,
            "name": "Ada",
            "preferred_username": "ada",
        })
    }

    struct Setup {
        server: TestServer,
        _dir: tempfile::TempDir,
        config: Config,
        http: Client,
    }

    fn setup(keys: &[&TestKey]) -> Setup {
        let server = provider_server(keys);
        let dir = tempfile::tempdir().unwrap();
        let config = test_config(&server.base, dir.path());
        let http = http::client(&config).unwrap();
        Setup {
            server,
            _dir: dir,
            config,
            http,
        }
    }

    impl Setup {
        fn provider(&self) -> Provider {
            Provider::discover_at(&self.http, &self.config, now()).unwrap()
        }

        fn verify(&self, token: &Secret) -> anyhow::Result<IdTokenClaims> {
            self.provider()
                .verify_id_token(&self.http, token, CLIENT_ID, Some(NONCE), now())
        }

        /// Verifies a token that must fail; returns the message after checking the exit code
        /// and that the token is not in it.
        fn rejection(&self, token: &Secret) -> String {
            let err = self.verify(token).unwrap_err();
            let text = one_line(&err);
            assert_eq!(exit_code_of(&err), Exit::Provider, "{text}");
            assert!(
                text.starts_with("the ID token from http://127.0.0.1:"),
                "{text}"
            );
            for part in token.expose().split('.').filter(|p| p.len() > 8) {
                assert!(!text.contains(part), "the message leaks the token: {text}");
            }
            text
        }
    }

    #[test]
    fn discovery_is_cached_on_disk_until_its_ttl() {
        let s = setup(&[&TestKey::ec()]);
        let path = "/.well-known/openid-configuration";
        let provider = s.provider();
        assert_eq!(s.server.hits(path), 1);
        assert_eq!(provider.metadata.issuer, s.server.base);
        assert_eq!(
            provider.metadata.token_endpoint.as_str(),
            format!("{}/token", s.server.base)
        );
        assert_eq!(
            provider.metadata.token_endpoint_auth_methods_supported,
            None
        );
        assert!(provider.metadata.supports_pkce_s256());

        // Another process, an hour later: served from disk, no request.
        let again = Provider::discover_at(&s.http, &s.config, now() + Duration::hours(1)).unwrap();
        assert_eq!(s.server.hits(path), 1);
        assert_eq!(again.metadata, provider.metadata);

        // After the TTL: fetched again.
        Provider::discover_at(
            &s.http,
            &s.config,
            now() + DISCOVERY_TTL + Duration::seconds(1),
        )
        .unwrap();
        assert_eq!(s.server.hits(path), 2);

        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let paths = CachePaths::new(&s.config);
            let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&paths.discovery), 0o600);
            assert_eq!(mode(paths.discovery.parent().unwrap()), 0o700);
            let dir = paths.discovery.parent().unwrap();
            assert_eq!(crate::cache::disk::temp_files_left_in(dir), 0);
        }
    }

    #[test]
    fn a_corrupt_cache_file_is_refetched() {
        let s = setup(&[&TestKey::ec()]);
        s.provider();
        std::fs::write(CachePaths::new(&s.config).discovery, b"{\"issuer\": trunc").unwrap();
        s.provider();
        assert_eq!(s.server.hits("/.well-known/openid-configuration"), 2);
        s.provider();
        assert_eq!(s.server.hits("/.well-known/openid-configuration"), 2);
    }

    #[test]
    fn the_issuer_must_match_give_or_take_a_trailing_slash() {
        let s = setup(&[]);
        let with_slash = format!("{}/", s.server.base);
        s.server.answer(
            "/.well-known/openid-configuration",
            Answer::json(
                discovery_doc(&with_slash)
                    .replace(&format!("\"{with_slash}/"), &format!("\"{with_slash}")),
            ),
        );
        assert_eq!(s.provider().metadata.issuer, with_slash);

        let s = setup(&[]);
        let other = discovery_doc(&s.server.base).replacen(
            &format!("\"issuer\":\"{}\"", s.server.base),
            "\"issuer\":\"https://evil.example\"",
            1,
        );
        s.server
            .answer("/.well-known/openid-configuration", Answer::json(other));
        let err = Provider::discover_at(&s.http, &s.config, now()).unwrap_err();
        assert_eq!(exit_code_of(&err), Exit::Provider);
        let text = one_line(&err);
        assert!(
            text.contains(
                "names the issuer https://evil.example; set --issuer-url to exactly that"
            ),
            "{text}"
        );
        // A rejected document is not cached.
        assert!(!CachePaths::new(&s.config).discovery.exists());
    }

    #[test]
    fn plain_http_endpoints_are_refused_off_loopback() {
        let s = setup(&[]);
        let doc = discovery_doc(&s.server.base).replace(
            &format!("{}/token", s.server.base),
            "http://idp.example/token",
        );
        s.server
            .answer("/.well-known/openid-configuration", Answer::json(doc));
        let text = one_line(&Provider::discover_at(&s.http, &s.config, now()).unwrap_err());
        assert!(
            text.contains("has token_endpoint http://idp.example/token, which is not https"),
            "{text}"
        );
    }

    #[test]
    fn the_well_known_url_keeps_the_issuer_path() {
        let url = |s: &str| well_known_url(&Url::parse(s).unwrap()).to_string();
        assert_eq!(
            url("https://idp.example"),
            "https://idp.example/.well-known/openid-configuration"
        );
        assert_eq!(
            url("https://idp.example/realms/k8s/"),
            "https://idp.example/realms/k8s/.well-known/openid-configuration"
        );
    }

    #[test]
    fn valid_tokens_pass_with_rs256_es256_and_eddsa() {
        let (rsa, ec, ed) = (TestKey::rsa(), TestKey::ec(), TestKey::ed());
        let s = setup(&[&rsa, &ec, &ed]);
        for key in [&rsa, &ec, &ed] {
            let claims = s.verify(&key.sign(&claims(&s.server))).unwrap();
            assert_eq!(claims.sub, "user-42");
            assert_eq!(claims.exp, now() + Duration::minutes(10));
            assert_eq!(claims.email.as_deref(), Some("ada@example.com"));
            assert_eq!(claims.preferred_username.as_deref(), Some("ada"));
        }
        // One JWKS fetch served all three (the later providers read it from disk).
        assert_eq!(s.server.hits("/jwks"), 1);
    }

    #[test]
    fn multiple_audiences_need_a_matching_azp_when_present() {
        let ec = TestKey::ec();
        let s = setup(&[&ec]);
        let mut c = claims(&s.server);
        c["aud"] = json!([CLIENT_ID, "other"]);
        s.verify(&ec.sign(&c)).unwrap();
        c["azp"] = json!(CLIENT_ID);
        s.verify(&ec.sign(&c)).unwrap();
        c["azp"] = json!("other");
        let text = s.rejection(&ec.sign(&c));
        assert!(
            text.contains("issued to the client \"other\" (azp)"),
            "{text}"
        );
    }

    /// OpenID Connect Core 3.1.3.7: a present `azp` must be the client ID even with a single
    /// audience (and the audience check alone would pass here).
    #[test]
    fn a_present_azp_must_be_the_client_id_even_with_one_audience() {
        let ec = TestKey::ec();
        let s = setup(&[&ec]);
        let mut c = claims(&s.server);
        c["azp"] = json!(CLIENT_ID);
        s.verify(&ec.sign(&c)).unwrap();
        c["aud"] = json!([CLIENT_ID]);
        s.verify(&ec.sign(&c)).unwrap();

        for aud in [json!(CLIENT_ID), json!([CLIENT_ID])] {
            c["aud"] = aud;
            c["azp"] = json!("other");
            let text = s.rejection(&ec.sign(&c));
            assert!(
                text.contains(
                    "issued to the client \"other\" (azp), not \"kubectl\"; check --client-id"
                ),
                "{text}"
            );
            c["azp"] = json!(["kubectl"]);
            let text = s.rejection(&ec.sign(&c));
            assert!(text.contains("(azp) is not a string"), "{text}");
        }
    }

    #[test]
    fn bad_claims_are_rejected_with_a_reason_and_a_next_step() {
        let ec = TestKey::ec();
        let s = setup(&[&ec]);
        let base = claims(&s.server);
        let with = |key: &str, value: Value| {
            let mut c = base.clone();
            c[key] = value;
            ec.sign(&c)
        };

        let text = s.rejection(&with("iss", json!("https://other.example")));
        assert!(
            text.contains("its issuer (iss) is \"https://other.example\""),
            "{text}"
        );

        let text = s.rejection(&with("aud", json!("someone-else")));
        assert!(
            text.contains("does not include the client ID \"kubectl\"; check --client-id"),
            "{text}"
        );

        let expired = now() - Duration::minutes(5);
        let text = s.rejection(&with("exp", json!(expired.timestamp())));
        assert!(
            text.contains("it expired at 2026-11-21T11:55:00Z"),
            "{text}"
        );
        assert!(text.contains("check this machine's clock"), "{text}");
        // Within the leeway: accepted, but the real expiry is reported.
        let just_expired = now() - Duration::seconds(30);
        let claims = s
            .verify(&with("exp", json!(just_expired.timestamp())))
            .unwrap();
        assert_eq!(claims.exp, just_expired);

        let text = s.rejection(&with("nonce", json!("nonce-of-another-login")));
        assert!(
            text.contains("nonce does not match")
                && !text.contains(NONCE)
                && !text.contains("nonce-of-another-login"),
            "{text}"
        );

        let mut no_nonce = base.clone();
        no_nonce.as_object_mut().unwrap().remove("nonce");
        let text = s.rejection(&ec.sign(&no_nonce));
        assert!(text.contains("carries no nonce"), "{text}");
        // A refreshed token need not carry one.
        s.provider()
            .verify_id_token(&s.http, &ec.sign(&no_nonce), CLIENT_ID, None, now())
            .unwrap();

        let text = s.rejection(&with("sub", json!("")));
        assert!(text.contains("no subject"), "{text}");
    }

    #[test]
    fn unsigned_shared_secret_and_tampered_tokens_are_rejected() {
        let ec = TestKey::ec();
        let s = setup(&[&ec]);
        let enc =
            |v: &Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
        let payload = enc(&claims(&s.server));

        let unsigned = Secret::new(format!("{}.{payload}.", enc(&json!({"alg": "none"}))));
        let text = s.rejection(&unsigned);
        assert!(text.contains("it is unsigned (alg none)"), "{text}");

        let hs = jsonwebtoken::encode(
            &Header::new(Algorithm::HS256),
            &claims(&s.server),
            &EncodingKey::from_secret(b"client-secret"),
        )
        .unwrap();
        let text = s.rejection(&Secret::new(hs));
        assert!(
            text.contains("signed with HS256, a shared-secret algorithm"),
            "{text}"
        );
        // Both were refused before any key was fetched.
        assert_eq!(s.server.hits("/jwks"), 0);

        let good = ec.sign(&claims(&s.server)).expose().to_string();
        let parts: Vec<&str> = good.split('.').collect();
        let mut forged = claims(&s.server);
        forged["sub"] = json!("admin");
        let tampered = Secret::new(format!("{}.{}.{}", parts[0], enc(&forged), parts[2]));
        let text = s.rejection(&tampered);
        assert!(text.contains("signature does not match"), "{text}");

        let text = s.rejection(&Secret::new("not-a-jwt"));
        assert!(text.contains("it is not a JWT"), "{text}");
    }

    #[test]
    fn an_unknown_kid_refetches_the_jwks_exactly_once() {
        let (old, new) = (TestKey::ec(), TestKey::ec2());
        let s = setup(&[&old]);
        s.verify(&old.sign(&claims(&s.server))).unwrap();
        assert_eq!(s.server.hits("/jwks"), 1);

        // The provider rotates; the cached JWKS lacks the new key: one refetch, then success.
        set_jwks(&s.server, &[&old, &new]);
        s.verify(&new.sign(&claims(&s.server))).unwrap();
        assert_eq!(s.server.hits("/jwks"), 2);
        // The refetched set was cached: no request now.
        s.verify(&new.sign(&claims(&s.server))).unwrap();
        assert_eq!(s.server.hits("/jwks"), 2);

        // A key the provider does not have: one refetch, then a clear failure.
        let stranger = TestKey {
            kid: Some("nobody"),
            ..TestKey::ec2()
        };
        let text = s.rejection(&stranger.sign(&claims(&s.server)));
        assert_eq!(s.server.hits("/jwks"), 3);
        assert!(
            text.contains("the provider publishes no key \"nobody\""),
            "{text}"
        );
        assert!(
            text.contains("/jwks") && text.contains("run the command again"),
            "{text}"
        );
    }

    #[test]
    fn a_jwks_that_cannot_be_fetched_is_a_clear_error() {
        let ec = TestKey::ec();
        let s = setup(&[&ec]);
        s.server.answer(
            "/jwks",
            Answer {
                status: 503,
                headers: vec![],
                body: "down".into(),
            },
        );
        let err = s.verify(&ec.sign(&claims(&s.server))).unwrap_err();
        assert_eq!(exit_code_of(&err), Exit::Provider);
        let text = one_line(&err);
        assert!(
            text.starts_with("cannot verify the ID token from http://127.0.0.1:"),
            "{text}"
        );
        assert!(
            text.contains("/jwks answered HTTP 503 Service Unavailable"),
            "{text}"
        );
    }

    #[test]
    fn the_jwks_is_refetched_after_its_ttl() {
        let ec = TestKey::ec();
        let s = setup(&[&ec]);
        s.verify(&ec.sign(&claims(&s.server))).unwrap();
        let later = now() + JWKS_TTL + Duration::minutes(1);
        let mut c = claims(&s.server);
        c["exp"] = json!((later + Duration::minutes(10)).timestamp());
        Provider::discover_at(&s.http, &s.config, later)
            .unwrap()
            .verify_id_token(&s.http, &ec.sign(&c), CLIENT_ID, Some(NONCE), later)
            .unwrap();
        assert_eq!(s.server.hits("/jwks"), 2);
    }

    #[test]
    fn key_selection() {
        let (ec, ec2, rsa) = (TestKey::ec(), TestKey::ec2(), TestKey::rsa());
        let parse = |keys: Vec<Value>| parse_jwks(&json!({ "keys": keys })).unwrap();
        let mut unnamed = ec.jwk();
        unnamed.as_object_mut().unwrap().remove("kid");
        let mut for_encryption = ec2.jwk();
        for_encryption["use"] = json!("enc");

        // A single key without a kid serves tokens with or without one.
        let keys = parse(vec![unnamed.clone(), rsa.jwk()]);
        assert!(select_key(&keys, Algorithm::ES256, None).is_ok());
        assert!(select_key(&keys, Algorithm::ES256, Some("whatever")).is_ok());
        // The RSA key is not a candidate for ES256, nor an EC key for RS256 with another kid.
        assert!(select_key(&keys, Algorithm::RS256, Some("ec-1")).is_err());

        // Without a kid, two candidates are ambiguous.
        let keys = parse(vec![ec.jwk(), ec2.jwk()]);
        let err = select_key(&keys, Algorithm::ES256, None).unwrap_err();
        assert!(err.contains("names no key (no kid)"), "{err}");

        // Encryption keys and junk entries are skipped, not fatal.
        let keys = parse(vec![
            for_encryption,
            json!({"kty": "weird"}),
            json!(42),
            ec.jwk(),
        ]);
        assert_eq!(keys.len(), 3);
        assert!(select_key(&keys, Algorithm::ES256, Some("ec-2"))
            .unwrap_err()
            .contains("not a signing key"));
        assert!(select_key(&keys, Algorithm::ES256, Some("ec-1")).is_ok());
    }
}
