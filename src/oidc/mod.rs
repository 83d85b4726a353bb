//! OpenID Connect: the provider's discovery document, its signing keys (JWKS), and ID-token
//! verification — one module each, tied together by [`Provider`].
//!
//! The discovery document and the JWKS are cached on disk under `<cache dir>/oidc/`, named by
//! the SHA-256 of the issuer URL, for [`DISCOVERY_TTL`] and [`JWKS_TTL`]: with a warm cache a
//! token refresh costs exactly one round trip (the token endpoint). None of this runs on the
//! cache-hit path.

mod discovery;
mod id_token;
mod jwks;
#[cfg(test)]
mod tests;

pub use discovery::{well_known_url, ProviderMetadata, DISCOVERY_TTL};
pub use id_token::IdTokenClaims;
pub use jwks::JWKS_TTL;

use crate::private_file;
use crate::secret::Secret;
use chrono::{DateTime, Duration, Utc};
use reqwest::blocking::Client;
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
    keys: jwks::KeySource,
}

impl Provider {
    /// Discovers `issuer`, from the disk cache under `cache_dir` when it is younger than
    /// [`DISCOVERY_TTL`], otherwise from `<issuer>/.well-known/openid-configuration`.
    pub fn discover(
        http: &Client,
        issuer: &Url,
        cache_dir: &Path,
        now: DateTime<Utc>,
    ) -> anyhow::Result<Provider> {
        let files = CacheFiles::of(cache_dir, issuer);
        let metadata = discovery::discover(http, issuer, &files.discovery, now)?;
        let keys = jwks::KeySource::new(metadata.jwks_uri.clone(), files.jwks);
        Ok(Provider { metadata, keys })
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
        let expected = id_token::Expected {
            issuer: &self.metadata.issuer,
            client_id,
            nonce: expected_nonce,
        };
        id_token::verify(
            token,
            &expected,
            |alg, kid| self.keys.key_for(http, alg, kid, now),
            now,
        )
    }
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
        .and_then(|bytes| private_file::write_private(path, &bytes));
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
