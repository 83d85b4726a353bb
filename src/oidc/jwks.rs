//! The provider's signing keys (JWKS): loaded from the disk cache or fetched, cached for
//! [`JWKS_TTL`], refetched once when a token names a key the cached set lacks (key rotation), and
//! the one key that fits a token's algorithm and key ID picked out.

use super::{fresh, read_cache, write_cache};
use crate::error::{Exit, fail};
use crate::http;
use crate::http::Client;
use chrono::{DateTime, Duration, Utc};
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Mutex;
use url::Url;

/// How long a fetched JWKS is used; an unknown key ID refetches it earlier (key rotation).
pub const JWKS_TTL: Duration = Duration::hours(24);

#[derive(Serialize, Deserialize)]
struct CachedJwks {
    jwks_uri: String,
    fetched_at: DateTime<Utc>,
    jwks: Value,
}

#[derive(Debug, Clone)]
struct KeySet {
    keys: Vec<Jwk>,
    fetched_at: DateTime<Utc>,
}

/// The keys of one provider: none loaded until a token needs one.
#[derive(Debug)]
pub(super) struct KeySource {
    jwks_uri: Url,
    cache_path: PathBuf,
    /// Loaded on the first verification; replaced when refetched.
    keys: Mutex<Option<KeySet>>,
}

impl KeySource {
    pub(super) fn new(jwks_uri: Url, cache_path: PathBuf) -> KeySource {
        KeySource {
            jwks_uri,
            cache_path,
            keys: Mutex::new(None),
        }
    }

    /// Finds the key that signed a token: from the loaded/cached JWKS first, then, if it is not
    /// there, from a fresh fetch (once: keys rotate, but a second miss is a real failure).
    pub(super) fn key_for(
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
            *keys = self.cached(now);
        }
        if keys.is_none() {
            *keys = Some(self.fetch(http, now).map_err(KeyError::Fetch)?);
            fetched = true;
        }
        loop {
            let set = keys.as_ref().expect("loaded above");
            match select_key(&set.keys, alg, kid) {
                Ok(jwk) => return decoding_key(jwk).map_err(KeyError::Missing),
                Err(_) if !fetched => {
                    crate::debug!(1, "no matching key in the cached JWKS; fetching it again");
                    *keys = Some(self.fetch(http, now).map_err(KeyError::Fetch)?);
                    fetched = true;
                }
                Err(reason) => {
                    return Err(KeyError::Missing(format!(
                        "{reason} (JWKS at {})",
                        crate::text::display_url(&self.jwks_uri)
                    )));
                }
            }
        }
    }

    fn cached(&self, now: DateTime<Utc>) -> Option<KeySet> {
        let cached = read_cache::<CachedJwks>(&self.cache_path)?;
        if cached.jwks_uri != self.jwks_uri.as_str() || !fresh(cached.fetched_at, now, JWKS_TTL) {
            return None;
        }
        Some(KeySet {
            keys: parse_jwks(&cached.jwks)?,
            fetched_at: cached.fetched_at,
        })
    }

    fn fetch(&self, http: &Client, now: DateTime<Utc>) -> anyhow::Result<KeySet> {
        crate::debug!(1, "fetching {}", self.jwks_uri);
        let jwks: Value =
            http::get_json(http, &self.jwks_uri, "the provider's signing keys (JWKS)")?;
        let keys = parse_jwks(&jwks).ok_or_else(|| {
            fail(
                Exit::Provider,
                format!(
                    "the provider's JWKS at {} has no \"keys\" list; the provider is misconfigured",
                    crate::text::display_url(&self.jwks_uri)
                ),
            )
        })?;
        write_cache(
            &self.cache_path,
            &CachedJwks {
                jwks_uri: self.jwks_uri.to_string(),
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

pub(super) enum KeyError {
    /// The JWKS could not be fetched; the error is a complete message.
    Fetch(anyhow::Error),
    /// No usable key for the token, even after a refetch; the reason for the caller's message.
    Missing(String),
}

/// Picks the JWK for a token's algorithm and key ID. A key ID must match, except that a JWKS
/// with a single suitable key that has no `kid` serves every token (some providers omit kids).
pub(super) fn select_key<'a>(
    keys: &'a [Jwk],
    alg: Algorithm,
    kid: Option<&str>,
) -> Result<&'a Jwk, String> {
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

/// The verification key of a selected JWK; the error is the reason for the caller's message.
pub(super) fn decoding_key(jwk: &Jwk) -> Result<DecodingKey, String> {
    DecodingKey::from_jwk(jwk)
        .map_err(|err| format!("the provider's key for it is unusable ({err})"))
}

/// Whether a JWK can verify `alg`: right key type and curve, not marked for encryption, and no
/// conflicting `alg` of its own.
fn key_suits(jwk: &Jwk, alg: Algorithm) -> bool {
    if matches!(&jwk.common.public_key_use, Some(usage) if *usage != PublicKeyUse::Signature) {
        return false;
    }
    if let Some(key_alg) = jwk.common.key_algorithm
        && Algorithm::try_from(key_alg).ok() != Some(alg)
    {
        return false;
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
pub(super) fn parse_jwks(jwks: &Value) -> Option<Vec<Jwk>> {
    let keys = jwks.get("keys")?.as_array()?;
    Some(
        keys.iter()
            .filter_map(|key| serde_json::from_value(key.clone()).ok())
            .collect(),
    )
}
