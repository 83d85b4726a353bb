//! OpenID Connect: the provider's discovery document, its signing keys (JWKS), and ID-token
//! verification — one module each, tied together by [`Provider`].
//!
//! The discovery document and the JWKS are cached on disk under `<cache dir>/oidc/`, named by
//! the SHA-256 of the issuer URL, for [`DISCOVERY_TTL`] and [`JWKS_TTL`]: with a warm cache a
//! token refresh costs exactly one round trip (the token endpoint). None of this runs on the
//! cache-hit path. Beside them, `device_flow_memory.rs` keeps what a provider said of the device
//! flow for one client, when it refused it.

pub mod device_flow_memory;
mod discovery;
mod id_token;
mod jwks;
#[cfg(test)]
mod tests;

pub use discovery::{ProviderMetadata, well_known_url};
pub use id_token::IdTokenClaims;

use crate::fs::private_file;
use crate::http::Client;
use crate::secret::Secret;
use crate::tokens::Identity;
use chrono::{DateTime, Duration, Utc};
use serde::Serialize;
use std::path::{Path, PathBuf};
use url::Url;

/// Clock skew tolerated on `exp`, `nbf` and on the age of cached documents.
pub const CLOCK_LEEWAY: Duration = Duration::seconds(60);

/// A cached discovery document or JWKS larger than this is not one we wrote (the HTTP client
/// refuses bodies over 4 MiB).
const MAX_CACHE_FILE: u64 = 8 * 1024 * 1024;

/// A discovered provider: its metadata, and its signing keys once they are needed.
#[derive(Debug)]
pub struct Provider {
    pub metadata: ProviderMetadata,
    /// `None` for a bare token endpoint (`--token-endpoint`): no JWKS, so no ID token can be
    /// verified, and none is accepted.
    keys: Option<jwks::KeySource>,
}

impl Provider {
    /// Discovers `issuer`, from the disk cache under `cache_dir` when it is younger than
    /// [`DISCOVERY_TTL`], otherwise from `<issuer>/.well-known/openid-configuration`. Messages
    /// name it as `shown`, the way the user wrote it (`Config::issuer_as_given`).
    pub fn discover(
        http: &Client,
        issuer: &Url,
        shown: &str,
        cache_dir: &Path,
        now: DateTime<Utc>,
    ) -> anyhow::Result<Provider> {
        let files = CacheFiles::of(cache_dir, issuer);
        let metadata = discovery::discover(http, issuer, shown, &files.discovery, now)?;
        let keys = jwks::KeySource::new(metadata.jwks_uri.clone(), files.jwks);
        Ok(Provider {
            metadata,
            keys: Some(keys),
        })
    }

    /// A token endpoint that is not an OpenID Provider (Google's STS): no discovery, no keys.
    /// Only grants without a user (token exchange, client credentials) use it.
    pub fn token_endpoint_only(issuer: &Url, token_endpoint: Url) -> Provider {
        Provider {
            metadata: ProviderMetadata {
                issuer: issuer.to_string(),
                authorization_endpoint: None,
                jwks_uri: token_endpoint.clone(),
                token_endpoint,
                device_authorization_endpoint: None,
                code_challenge_methods_supported: None,
                token_endpoint_auth_methods_supported: None,
                revocation_endpoint: None,
                revocation_endpoint_auth_methods_supported: None,
                authorization_response_iss_parameter_supported: false,
            },
            keys: None,
        }
    }

    /// Verifies an ID token from this provider and returns its claims. `expected_nonce` is the
    /// nonce sent with the login request; `None` for refreshed tokens, which need not carry one.
    /// `original` is, for a refreshed token, the identity of the original login's ID token,
    /// which the new one must repeat.
    pub fn verify_id_token(
        &self,
        http: &Client,
        token: &Secret,
        client_id: &str,
        expected_nonce: Option<&str>,
        original: Option<&Identity>,
        now: DateTime<Utc>,
    ) -> anyhow::Result<IdTokenClaims> {
        let expected = id_token::Expected {
            issuer: &self.metadata.issuer,
            client_id,
            nonce: expected_nonce,
            original,
        };
        self.verify_as_of(http, token, &expected, now, now)
    }

    /// Verifies an ID token another program obtained from this provider (a kubeconfig's
    /// `auth-provider: oidc`, int128/kubelogin's token cache) before kubecred caches it: the
    /// signature, issuer, audience and issue time, as for a token of its own; it carries no nonce
    /// of ours. An expired token is checked as of the second before its expiry — its identity
    /// then binds the refresh that replaces it (OpenID Connect Core §12.2) — and reported as
    /// expired, for the caller to drop. Its `exp`, read before the signature is checked, only
    /// chooses that moment: a forged one fails the signature.
    pub fn verify_carried_id_token(
        &self,
        http: &Client,
        token: &Secret,
        client_id: &str,
        now: DateTime<Utc>,
    ) -> anyhow::Result<CarriedIdToken> {
        let expected = id_token::Expected {
            issuer: &self.metadata.issuer,
            client_id,
            nonce: None,
            original: None,
        };
        let expired_at =
            crate::tokens::unverified_jwt_expiry(token.expose()).filter(|exp| *exp <= now);
        let checked_at = expired_at.map_or(now, |exp| exp - Duration::seconds(1));
        let claims = self.verify_as_of(http, token, &expected, checked_at, now)?;
        Ok(match expired_at {
            Some(_) => CarriedIdToken::Expired(claims),
            None => CarriedIdToken::Valid(claims),
        })
    }

    /// The verification, with the claims checked as of `claims_at` and the keys fetched (or
    /// read from their cache) as of `now`.
    fn verify_as_of(
        &self,
        http: &Client,
        token: &Secret,
        expected: &id_token::Expected<'_>,
        claims_at: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> anyhow::Result<IdTokenClaims> {
        let Some(keys) = &self.keys else {
            return Err(crate::error::fail(
                crate::error::Exit::Provider,
                format!(
                    "{} returned an ID token, which kubecred cannot verify without discovery; drop --token-endpoint and let discovery find the keys",
                    self.metadata.issuer
                ),
            ));
        };
        id_token::verify(
            token,
            expected,
            |alg, kid| keys.key_for(http, alg, kid, now),
            claims_at,
        )
    }
}

/// The claims of an ID token another program obtained, read without its signature: what
/// [`Provider::verify_carried_id_token`] would say of it short of the signature and the
/// provider's keys, with `issuer` as configured. For `convert-kubeconfig --dry-run`, which asks
/// no provider; never a reason to trust the token.
pub fn read_carried_id_token(
    token: &Secret,
    issuer: &str,
    client_id: &str,
    now: DateTime<Utc>,
) -> anyhow::Result<CarriedIdToken> {
    let expected = id_token::Expected {
        issuer,
        client_id,
        nonce: None,
        original: None,
    };
    let refused = |reason: &str| {
        crate::error::fail(
            crate::error::Exit::Provider,
            format!("the ID token from {issuer} failed verification: {reason}"),
        )
    };
    let claims = crate::tokens::unverified_jwt_segment(token.expose(), 1)
        .and_then(|claims| claims.as_object().cloned())
        .ok_or_else(|| refused("it is not a JWT"))?;
    let expired_at = crate::tokens::unverified_jwt_expiry(token.expose()).filter(|exp| *exp <= now);
    let checked_at = expired_at.map_or(now, |exp| exp - Duration::seconds(1));
    let checked = id_token::checked_claims(&claims, &expected, checked_at)
        .map_err(|refusal| refusal.into_error(issuer))?;
    Ok(match expired_at {
        Some(_) => CarriedIdToken::Expired(checked),
        None => CarriedIdToken::Valid(checked),
    })
}

/// What a verified ID token from another program is good for ([`Provider::verify_carried_id_token`]).
#[derive(Debug, Clone, PartialEq)]
pub enum CarriedIdToken {
    /// Valid now: cache it.
    Valid(IdTokenClaims),
    /// Verified as of just before it expired: drop it, keep its identity.
    Expired(IdTokenClaims),
}

/// What an ID token from `issuer` for `client_id` must say: the checks of
/// [`Provider::verify_id_token`], for callers that have the key set at hand.
#[cfg(any(test, fuzzing))]
pub(crate) struct Expectation<'a> {
    pub issuer: &'a str,
    pub client_id: &'a str,
    pub nonce: Option<&'a str>,
    pub original: Option<&'a Identity>,
}

#[cfg(any(test, fuzzing))]
impl<'a> Expectation<'a> {
    fn expected(&self) -> id_token::Expected<'a> {
        id_token::Expected {
            issuer: self.issuer,
            client_id: self.client_id,
            nonce: self.nonce,
            original: self.original,
        }
    }
}

/// Verifies `token` against the key set `jwks` (a JWKS document) without any fetch: the way
/// into the verification code for the fuzz targets (`crate::fuzzing`).
#[cfg(any(test, fuzzing))]
pub(crate) fn verify_with_jwks(
    jwks: &serde_json::Value,
    token: &Secret,
    expectation: &Expectation<'_>,
    now: DateTime<Utc>,
) -> anyhow::Result<IdTokenClaims> {
    let keys = jwks::parse_jwks(jwks).unwrap_or_default();
    id_token::verify(
        token,
        &expectation.expected(),
        |alg, kid| {
            let jwk = jwks::select_key(&keys, alg, kid).map_err(jwks::KeyError::Missing)?;
            jwks::decoding_key(jwk).map_err(jwks::KeyError::Missing)
        },
        now,
    )
}

/// The claim checks alone, on claims taken as signed (for the fuzz targets).
#[cfg(any(test, fuzzing))]
pub(crate) fn check_claims(
    claims: &serde_json::Map<String, serde_json::Value>,
    expectation: &Expectation<'_>,
    now: DateTime<Utc>,
) -> anyhow::Result<IdTokenClaims> {
    id_token::checked_claims(claims, &expectation.expected(), now)
        .map_err(|refusal| refusal.into_error(expectation.issuer))
}

/// The cache files of one issuer (`<cache dir>/oidc/<sha256(issuer)>.json` and `.jwks.json`).
#[derive(Debug, Clone)]
struct CacheFiles {
    discovery: PathBuf,
    jwks: PathBuf,
}

impl CacheFiles {
    fn of(cache_dir: &Path, issuer: &Url) -> CacheFiles {
        let dir = cache_dir.join("oidc");
        let stem = crate::digest::sha256_hex(issuer.as_str().as_bytes());
        CacheFiles {
            discovery: dir.join(format!("{stem}.json")),
            jwks: dir.join(format!("{stem}.jwks.json")),
        }
    }
}

/// Fetched at most `ttl` ago, and not in the future (a clock that jumped back refetches).
fn fresh(fetched_at: DateTime<Utc>, now: DateTime<Utc>, ttl: Duration) -> bool {
    let age = now - fetched_at;
    age >= -CLOCK_LEEWAY && age < ttl
}

/// A cache file, or `None` when it is missing, unreadable or corrupt: either way the caller
/// fetches the document again.
fn read_cache<T: serde::de::DeserializeOwned>(path: &Path) -> Option<T> {
    match private_file::read_json(path, MAX_CACHE_FILE) {
        Ok(value) => Some(value),
        Err(private_file::ReadError::NotFound) => None,
        Err(private_file::ReadError::Corrupt(reason)) => {
            crate::debug!(
                1,
                "ignoring the corrupt cache file {}: {reason}",
                path.display()
            );
            None
        }
        // Another user's document could name their own token endpoint, which would then get the
        // client secret and the refresh token: never use it, and say so whatever the verbosity.
        Err(private_file::ReadError::Foreign(reason)) => {
            crate::log::notice(format_args!(
                "ignoring the cached provider document {}: {reason}; delete it, and use a --cache-dir only you can write to",
                path.display()
            ));
            None
        }
        Err(private_file::ReadError::Io(err)) => {
            crate::debug!(
                1,
                "ignoring the unreadable cache file {}: {err}",
                path.display()
            );
            None
        }
    }
}

/// Writes a cache file atomically and privately ([`private_file::write_private`]). Failing to
/// cache costs a round trip next time, not this run: it is logged, not returned. Parallel
/// writers race harmlessly: the last rename wins and every version is complete.
fn write_cache<T: Serialize>(path: &Path, value: &T) {
    let written = serde_json::to_vec(value)
        .map_err(std::io::Error::other)
        .and_then(|bytes| private_file::write_private(private_file::root_of(path)?, path, &bytes));
    if let Err(err) = written {
        crate::debug!(
            1,
            "could not write the cache file {}: {err}",
            path.display()
        );
    }
}

fn rfc3339(time: DateTime<Utc>) -> String {
    time.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}
