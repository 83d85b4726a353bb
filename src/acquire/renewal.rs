//! What renewing an entry's tokens may do, decided in one place for the foreground (a run
//! whose cached token ran out, `acquire::obtain_under_lock`) and the background (refresh-ahead,
//! `renew_ahead.rs`).
//!
//! Without a person, tokens are renewed by the entry's refresh token, or by a grant that needs
//! nobody (client credentials, token exchange, a password from the environment or a file):
//! [`unattended`]. Anything else is a login, which only the foreground may start. A refresh has
//! one handler for both paths, [`refresh`], so that its outcomes mean the same wherever they
//! happen: renewed (saved), refused (the refresh token is dropped from the entry, never sent
//! again, and the refusal noted; the entry's other tokens stay), answered without the token
//! kubectl needs or with an unusable answer (a rotated refresh token is kept either way: the old
//! one is spent), or an outage (an error that leaves the entry as it was).

use super::entry_state::{Note, StateFile};
use crate::cache::{Cached, EntryLock, TokenCache};
use crate::clock::Clock;
use crate::config::{Config, Grant};
use crate::grants::{ProviderClient, RefreshOutcome};
use crate::secret::Secret;
use crate::tokens::Tokens;

/// How an entry's tokens can be renewed.
pub(super) enum Means {
    /// Its refresh token.
    Refresh(Secret),
    /// The configured grant, which needs no person.
    Grant,
    /// A login: only a person renews these tokens. Why, for the background's note.
    Login(&'static str),
}

/// How `cached` (`None`: no entry, or a login was asked for) can be renewed: its refresh token
/// (fetched from the keyring if it is there), else the grant when it needs no person, else a
/// login.
pub(super) fn means(
    config: &Config,
    cache: &TokenCache,
    cached: Option<&Cached>,
    lock: &EntryLock,
) -> anyhow::Result<Means> {
    if let Some(cached) = cached
        && let Some(token) = cache.refresh_token(cached, lock)?
    {
        return Ok(Means::Refresh(token));
    }
    if grant_needs_no_person(config) {
        return Ok(Means::Grant);
    }
    Ok(Means::Login(match cached {
        Some(cached) if cached.has_refresh_token() => {
            "the entry's refresh token is not in the OS keyring reachable here (deleted, or kept by another session's keyring); a login is needed when the cached token runs out"
        }
        _ => {
            "the entry has no refresh token and its grant needs a person; a login is needed when the cached token runs out"
        }
    }))
}

/// Whether the configured grant yields a new token without a person.
pub(super) fn grant_needs_no_person(config: &Config) -> bool {
    match config.grant {
        Grant::ClientCredentials | Grant::TokenExchange => true,
        Grant::Password => config
            .password
            .as_ref()
            .is_some_and(|password| !password.needs_a_person()),
        // A login needs a person; a federated token is the subject token itself, renewed by
        // whoever rotates its file.
        Grant::Authcode | Grant::AuthcodeKeyboard | Grant::DeviceCode | Grant::FederatedToken => {
            false
        }
    }
}

/// What a refresh came to, once what must be kept of it has been (all but new tokens, which
/// the caller saves: the foreground hands them out even when the cache cannot keep them, the
/// background fails).
pub(super) enum Refreshed {
    /// New tokens with the credential kubectl needs, not saved yet.
    Renewed(Tokens),
    /// The provider refused the refresh token. The entry now holds `kept`: its tokens as they
    /// were, without the refresh token; the refusal is noted (`refresh_refused`).
    Refused { reason: String, kept: Tokens },
    /// The provider answered without the token kubectl needs (no ID token on a refresh, OpenID
    /// Connect Core §12.2 allows it). Its refresh token is kept with the cached tokens.
    WithoutCredential,
}

/// Refreshes `cached` with `refresh_token` and keeps the outcome (see [`Refreshed`]); an error
/// is an outage or an unusable answer, after which the entry is as it was but for a rotated
/// refresh token.
pub(super) fn refresh(
    config: &Config,
    cache: &TokenCache,
    provider: &ProviderClient,
    cached: &Tokens,
    refresh_token: &Secret,
    lock: &EntryLock,
    clock: &dyn Clock,
) -> anyhow::Result<Refreshed> {
    let original = cached.original_identity();
    match provider.refresh(refresh_token, original.as_ref())? {
        RefreshOutcome::Refreshed(tokens) => {
            if tokens.credential(config.token_kind).is_some() {
                return Ok(Refreshed::Renewed(tokens));
            }
            keep_refresh_token(cache, cached, refresh_token, tokens.refresh_token, lock)?;
            Ok(Refreshed::WithoutCredential)
        }
        RefreshOutcome::Unusable {
            refresh_token: rotated,
            error,
        } => {
            keep_refresh_token(cache, cached, refresh_token, Some(rotated), lock)?;
            Err(error)
        }
        RefreshOutcome::Rejected(reason) => {
            // Revoked, or expired at the provider: sending it again can only be refused again.
            let kept = Tokens {
                refresh_token: None,
                ..cached.clone()
            };
            save(cache, &kept, lock)?;
            StateFile::of(cache).update(lock, |state| {
                state.refresh_refused = Some(Note::new(&reason, clock.now()));
            });
            Ok(Refreshed::Refused { reason, kept })
        }
    }
}

/// Saves `tokens` as the entry, and forgets the notes about the tokens they replace.
pub(super) fn save(cache: &TokenCache, tokens: &Tokens, lock: &EntryLock) -> anyhow::Result<()> {
    cache.save(tokens, lock)?;
    StateFile::of(cache).clear();
    Ok(())
}

/// Saves tokens the foreground just obtained and is about to hand out. A login (or refresh)
/// that succeeded is never lost to the cache: when they cannot be kept, one warning says why,
/// and they are handed out all the same; only failing to obtain a token fails the run. The
/// entry's notes go either way: they were about tokens these replace, and a cool-down left
/// behind by a login that succeeded would hold off the next one for nothing.
pub(super) fn keep(cache: &TokenCache, tokens: &Tokens, lock: &EntryLock) {
    if let Err(err) = save(cache, tokens, lock) {
        StateFile::of(cache).clear();
        crate::log::notice(format!(
            "warning: the new token is handed out but not cached: {}",
            crate::error::one_line(&err)
        ));
    }
}

/// After a refresh whose answer could not be used: the provider may have rotated the refresh
/// token all the same, and the one `sent` is then spent (reusing it can revoke the whole grant),
/// so the `answered` one is kept with the cached tokens.
fn keep_refresh_token(
    cache: &TokenCache,
    cached: &Tokens,
    sent: &Secret,
    answered: Option<Secret>,
    lock: &EntryLock,
) -> anyhow::Result<()> {
    let Some(rotated) = answered.filter(|answered| answered != sent) else {
        return Ok(());
    };
    let kept = Tokens {
        refresh_token: Some(rotated),
        ..cached.clone()
    };
    cache.save(&kept, lock)
}
