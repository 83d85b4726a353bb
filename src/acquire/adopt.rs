//! Tokens another program obtained for the same login, taken into kubecred's cache: what
//! `convert-kubeconfig` carries over from a kubeconfig's `auth-provider: oidc` (its `id-token`
//! and `refresh-token`) and from int128/kubelogin's token cache, so that switching to kubecred
//! costs no login.
//!
//! They are held to the standard of tokens kubecred gets itself: the ID token is verified
//! (signature against the provider's keys, issuer, audience) before it is cached; an expired one
//! is dropped, its refresh token kept together with its verified identity, which the refreshed
//! token must then repeat. They are saved like any other tokens — under the entry's lock, with
//! the configured storage (`auto`: the refresh token in the OS keyring when one is reachable) —
//! and an entry that already holds a login kubecred can use is left alone.

use crate::clock::Clock;
use crate::config::{Config, TokenKind};
use crate::grants::ProviderClient;
use crate::oidc::CarriedIdToken;
use crate::secret::Secret;
use crate::tokens::Tokens;
use chrono::{DateTime, Utc};

/// Tokens found in another program's keeping.
#[derive(Debug, Clone, Default)]
pub struct Carried {
    pub id_token: Option<Secret>,
    pub refresh_token: Option<Secret>,
}

/// What became of carried tokens.
#[derive(Debug, Clone, PartialEq)]
pub enum Adopted {
    /// Saved as the entry. `id_token_until`: the ID token's expiry, when it was still valid;
    /// `id_token_expired_at`: when the dropped one expired.
    Saved {
        id_token_until: Option<DateTime<Utc>>,
        id_token_expired_at: Option<DateTime<Utc>>,
        refresh_token: bool,
    },
    /// The entry already holds a login kubecred can use (a valid token or a refresh token):
    /// left as it was.
    AlreadyCached,
    /// Nothing worth keeping, and why.
    Nothing(String),
}

/// Verifies `carried` against the provider `config` names and saves it as that configuration's
/// cache entry. An error is a verification that failed (the provider refused the token, or
/// could not be reached: [`crate::error::is_transient`] tells them apart) or a cache that
/// cannot be written; nothing is saved then.
pub fn adopt(config: &Config, carried: Carried, clock: &dyn Clock) -> anyhow::Result<Adopted> {
    take(config, carried, clock, Mode::Save)
}

/// What [`adopt`] would do with `carried`, asking no provider and writing nothing
/// (`convert-kubeconfig --dry-run`): the same decisions, the same reasons, the same store read,
/// with the ID token's claims read without its signature.
pub fn preview(config: &Config, carried: Carried, clock: &dyn Clock) -> anyhow::Result<Adopted> {
    take(config, carried, clock, Mode::Preview)
}

/// Whether tokens are taken, or only looked at.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Save,
    Preview,
}

fn take(
    config: &Config,
    carried: Carried,
    clock: &dyn Clock,
    mode: Mode,
) -> anyhow::Result<Adopted> {
    if config.cache.storage == crate::config::CacheStorage::None {
        return Ok(Adopted::Nothing(
            "its settings cache nothing (--cache-storage none)".into(),
        ));
    }
    let Kept { tokens, expired_at } = match worth_keeping(config, carried, clock, mode)? {
        Ok(kept) => kept,
        Err(nothing) => return Ok(nothing),
    };
    let cache = super::source::Source::of(config).cache;
    let lock = match mode {
        Mode::Save => Some(cache.lock(config.cache.lock_timeout)?),
        Mode::Preview => None,
    };
    if let Some(cached) = cache.load()? {
        let usable = cached
            .tokens
            .usable_credential(config.token_kind, clock.now())
            .is_some();
        if usable || cached.has_refresh_token() {
            return Ok(Adopted::AlreadyCached);
        }
    }
    if let Some(lock) = &lock {
        cache.save(&tokens, lock)?;
    }
    Ok(Adopted::Saved {
        id_token_until: tokens.id_token_expiry,
        id_token_expired_at: expired_at,
        refresh_token: tokens.refresh_token.is_some(),
    })
}

/// What of the carried tokens is worth keeping.
struct Kept {
    tokens: Tokens,
    /// When the carried ID token, dropped, expired.
    expired_at: Option<DateTime<Utc>>,
}

/// The tokens of `carried` worth keeping, its ID token verified (`Mode::Preview`: its claims
/// read without the signature), and when an expired one that was dropped expired; or
/// `Adopted::Nothing`, saying why nothing is.
fn worth_keeping(
    config: &Config,
    carried: Carried,
    clock: &dyn Clock,
    mode: Mode,
) -> anyhow::Result<Result<Kept, Adopted>> {
    // An ID token is the credential only when the settings print one; otherwise only its
    // refresh token is of use (a refresh brings the access token).
    let id_token = carried
        .id_token
        .filter(|_| config.token_kind == TokenKind::IdToken);
    let verified = match (&id_token, mode) {
        (Some(token), Mode::Save) => {
            Some(ProviderClient::new(config, clock)?.verify_carried_id_token(token)?)
        }
        (Some(token), Mode::Preview) => Some(crate::oidc::read_carried_id_token(
            token,
            &config.issuer_as_given,
            &config.client.id,
            clock.now(),
        )?),
        (None, _) => None,
    };
    let (valid, expired) = match verified {
        Some(CarriedIdToken::Valid(claims)) => (Some(claims), None),
        Some(CarriedIdToken::Expired(claims)) => (None, Some(claims)),
        None => (None, None),
    };
    if valid.is_none() && carried.refresh_token.is_none() {
        return Ok(Err(Adopted::Nothing(match &expired {
            Some(claims) => format!(
                "its ID token expired at {} and it has no refresh token",
                crate::duration::display_time(claims.exp)
            ),
            None => "it holds no token kubecred can use".into(),
        })));
    }
    let identity = valid
        .as_ref()
        .or(expired.as_ref())
        .map(|claims| claims.identity.clone());
    // When the provider issued the token (its verified `iat`), so that the refresh-ahead window
    // is a share of its real lifetime; a refresh token alone was obtained "now" as far as
    // kubecred knows.
    let obtained_at = match (&valid, &id_token) {
        (Some(_), Some(token)) => issued_at(token).unwrap_or(clock.now()),
        _ => clock.now(),
    };
    let tokens = Tokens {
        id_token: valid.as_ref().and(id_token.clone()),
        id_token_expiry: valid.as_ref().map(|claims| claims.exp),
        access_token: None,
        access_token_expiry: None,
        refresh_token: carried.refresh_token,
        obtained_at,
        identity,
        granted_scope: None,
    };
    Ok(Ok(Kept {
        tokens,
        expired_at: expired.map(|claims| claims.exp),
    }))
}

/// The `iat` of a token whose signature has been verified.
fn issued_at(token: &Secret) -> Option<DateTime<Utc>> {
    let claims = crate::tokens::unverified_jwt_segment(token.expose(), 1)?;
    DateTime::from_timestamp(claims.get("iat")?.as_i64()?, 0)
}
